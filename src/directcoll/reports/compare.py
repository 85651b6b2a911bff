"""``directcoll compare``: which collective algorithm wins on a network at each vector size, and by how much.

Every algorithm that serves the topology is routed once (step model, closed-form size sweep) or simulated per
size (flow model). As in the Swing paper's Sec. 5 figures, each algorithm family is shown by its best variant
per size (Swing: latency- or bandwidth-optimal; recursive doubling: latency-optimal or Rabenseifner; double
binary tree: its best chunk count), the winner per size is named, and the gain of a reference family over the
best other family is goodput_ref / goodput_best_other - 1.

Which algorithms compete depends on the network (:func:`directcoll.reports.contenders.default_contenders`):

* grids (torus, mesh, HyperX, HammingMesh, and the 1D / 2^k tori ``ring`` and ``hypercube``): the Swing paper's
  families (Swing, recursive doubling, ring, bucket), plus BFB (Zhao et al. Sec. 6.1) on switchless grids of at
  most :data:`BFB_TORUS_MAX_RANKS` ranks; the reference family is Swing.
* direct-connect topologies (no switches, any other family: circulants, Kautz graphs, expansions, ...): Zhao et
  al.'s comparison (Sec. 8.2-8.3) -- BFB, ring, shifted ring, double binary tree at several chunk counts,
  recursive doubling -- plus Swing and bucket where the torus of the topology's shape is a subgraph
  (:func:`grid_embeds`); the reference family is BFB.
* both: Kolmakov & Zhang's generalized allreduce when N is not a power of two.
* all-to-all (any topology): Basu et al.'s baselines (Sec. 5.2) -- direct (the network routes every pair),
  EwSP, SSSP, DOR on the grids it serves -- and the ``mcf`` schedules when that algorithm is registered; the
  reference family is the best MCF schedule, else EwSP. The comparison also carries the MCF bound: an ideal
  schedule moves every pair's m = size / N bytes in m / (F b) seconds (:func:`alltoall_bound`, Basu Sec. 3.1).
  Sizes are each rank's send buffer (N blocks of size / N, its own included, MPI_Alltoall's sendcount x N), so
  goodput = size / time is the bytes each rank sends per second.

Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (goodput per size, best variant per family, gain over the
best other algorithm: Fig. 6); Zhao et al. (NSDI'25) Sec. 8.2-8.3; Basu et al. (HPDC'24) Sec. 3.1, 5.2;
Kolmakov & Zhang Sec. 10.

>>> from directcoll.topology import parse
>>> c = compare(parse("torus:4x4"), sizes=[32, 2**20], contenders=DEFAULT_CONTENDERS)
>>> [w[0] for w in c.winners()]
['swing', 'swing']
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from directcoll.errors import DirectcollError, ResourceError, UnsupportedShapeError
from directcoll.registry import build_pattern
from directcoll.reports.contenders import (
    DEFAULT_CONTENDERS,
    Contender,
    TIE_TOLERANCE,
    Skipped,
    default_policy,
    generalized_contenders,
    is_direct_connect,
)
from directcoll.reports.why import Why, explain
from directcoll.schedule.ir import Collective
from directcoll.simulate.params import NetworkParams, default_params
from directcoll.simulate.step import simulate
from directcoll.topology.model import Topology

MODELS = ("step", "flow", "packet")


@dataclass
class Entry:
    """One timed contender: its family, registry name, variant label and time per size.

    Attributes:
        family, algorithm, variant: names (variant ``r=k`` / ``P=k`` for built options).
        times: float64 (S,), seconds per size of :attr:`Comparison.sizes`.
        why: its steps, Ξ and busiest link (:class:`~directcoll.reports.why.Why`) when :func:`compare` was asked
            for them, else None.
        ports: the port count its schedule records (concurrent collectives per rank, Swing Sec. 4.1), None for
            an algorithm that uses the links its construction chooses (BFB, double binary tree, MCF).

    Raises:
        Nothing: a record built by :func:`compare`.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (one line per algorithm and variant).
    """
    family: str
    algorithm: str
    variant: str
    times: np.ndarray  # seconds per size
    why: Why | None = None
    ports: int | None = None


@dataclass
class Comparison:
    """The outcome of :func:`compare`: times per (algorithm, variant) and size, and what wins.

    Attributes:
        topology, collective, routing, model: what was compared, as names.
        params: the :class:`~directcoll.simulate.params.NetworkParams` used.
        sizes: float64 (S,), vector sizes in bytes; entries: the timed :class:`Entry` objects.
        skipped: the :class:`~directcoll.reports.contenders.Skipped` contenders (shape not served, over the
            memory budget, a cutoff, a port count), each with its reason.
        tie_tolerance: fraction within which two times are a tie (:data:`TIE_TOLERANCE`).
        peak_goodput: bytes/s (half the injection bandwidth for allreduce).
        reference: the family whose gain is reported; bound, bound_times: all-to-all's MCF bound (s per size).

    Raises:
        Nothing: a record built by :func:`compare`.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (goodput, peak goodput = half the injection bandwidth,
    gain over the best-known algorithm, Fig. 6).

    >>> import numpy as np
    >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
    ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6])),
    ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6])),
    ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]))])
    >>> c.gain_family, c.gain().tolist()
    ('swing', [3.0, -0.5])
    """

    topology: str
    collective: str
    params: NetworkParams
    routing: str
    model: str
    sizes: np.ndarray
    entries: list[Entry]
    skipped: list[Skipped] = field(default_factory=list)
    peak_goodput: float = 0.0  # bytes/s: half the injection bandwidth for allreduce
    #: the family whose gain is reported when present: "swing" on grids, "bfb" on direct-connect topologies,
    #: "mcf" (else "ewsp") for all-to-all
    reference: str = "swing"
    #: all-to-all: the MCF bound (:func:`alltoall_bound`): F, method, reference bandwidth ...; None otherwise
    bound: dict | None = None
    #: all-to-all: the bound's time per size, s (an ideal schedule's bandwidth time; no latency)
    bound_times: np.ndarray | None = None
    tie_tolerance: float = TIE_TOLERANCE

    def goodput(self, times: np.ndarray) -> np.ndarray:
        """Bytes per second: size / time (all-to-all: size is each rank's send buffer).

        Args:
            times: float (S,), seconds per size.

        Returns:
            float64 (S,), bytes/s.

        Raises:
            Nothing: arithmetic.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (goodput: bytes reduced per time unit).

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6])),
        ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6])),
        ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]))])
        >>> c.goodput(np.array([1e-6, 1e-6])).tolist()
        [8000000.0, 1024000000.0]
        """
        return self.sizes / times

    def families(self) -> dict[str, tuple[np.ndarray, list[str]]]:
        """family -> (best time per size, the variant that achieves it per size).

        Returns:
            A dict of family -> (float64 (S,) seconds, list of S variant names), in entry order.

        Raises:
            Nothing: reduces the entries.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 5.1.1 (for each size, the best of the latency- and
        bandwidth-optimal versions).

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6])),
        ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6])),
        ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]))])
        >>> c.families()["swing"][1]
        ['latency', 'bandwidth']
        """
        out: dict[str, tuple[np.ndarray, list[str]]] = {}
        for fam in dict.fromkeys(e.family for e in self.entries):
            mine = [e for e in self.entries if e.family == fam]
            stack = np.array([e.times for e in mine])
            best = stack.argmin(axis=0)
            out[fam] = (stack.min(axis=0), [mine[i].variant for i in best])
        return out

    def winners(self) -> list[tuple[str, str, float]]:
        """Per size: (family, variant, time) of the fastest algorithm.

        Returns:
            A list of S tuples (family, variant, seconds).

        Raises:
            Nothing: reduces the entries.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (the best-known algorithm per size).

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6])),
        ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6])),
        ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]))])
        >>> [w[0] for w in c.winners()]
        ['swing', 'ring']
        """
        fams = self.families()
        names = list(fams)
        stack = np.array([fams[f][0] for f in names])
        idx = stack.argmin(axis=0)
        return [(names[i], fams[names[i]][1][j], float(stack[i, j])) for j, i in enumerate(idx)]

    @property
    def gain_family(self) -> str | None:
        """The family :meth:`gain` reports by default: ``reference`` if it was timed, else Swing, else BFB;
        None when fewer than two families were timed or none of these is among them.

        Raises:
            Nothing: reads the entries.

        Source: Swing (NSDI'24) Sec. 5 (Swing's gain); Zhao et al. (NSDI'25) Sec. 8 (BFB against the baselines).
        """
        fams = self.families()
        if len(fams) < 2:
            return None
        return next((f for f in (self.reference, "swing", "bfb") if f in fams), None)

    def ties(self) -> list[list[str]]:
        """Per size, the families within :attr:`tie_tolerance` of the fastest (the winner first, then by time): a
        set of more than one is a tie the model cannot resolve.

        Returns:
            A list of S lists of family names.

        Raises:
            Nothing: reduces the entries.

        Source: docs/compare.md, "Ties" (the tolerance from the fidelity study, docs/fidelity.md).

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1.000e-6])),
        ...                 Entry("ring", "ring", "bidirectional", np.array([1.004e-6])),
        ...                 Entry("bucket", "bucket", "bandwidth", np.array([2e-6]))])
        >>> c.ties()
        [['swing', 'ring']]
        """
        fams = self.families()
        names = list(fams)
        stack = np.array([fams[f][0] for f in names])
        out = []
        for j in range(stack.shape[1]):
            col = stack[:, j]
            order = np.argsort(col, kind="stable")
            limit = col[order[0]] * (1.0 + self.tie_tolerance)
            out.append([names[i] for i in order if col[i] <= limit])
        return out

    def gain(self, family: str | None = None) -> np.ndarray | None:
        """goodput(family) / goodput(best rival) - 1 per size (default family: :attr:`gain_family`); None when
        absent or alone. The rival is the fastest other family outside the family's tie (:meth:`ties`) when the
        family ties for first, else the winner; NaN where every family ties.

        Returns:
            float64 (S,), dimensionless (1.0 = twice as fast), or None.

        Raises:
            Nothing: reduces the entries.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 5.1.1 (a 100% gain denotes Swing is 2x faster than the best
        state-of-the-art algorithm); docs/compare.md, "Ties".

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6])),
        ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6])),
        ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]))])
        >>> c.gain("ring").tolist()
        [-0.75, 1.0]
        """
        return self._rivals(family)[0]

    def _rivals(self, family: str | None) -> tuple[np.ndarray | None, list[str | None]]:
        """(gain per size, the rival family per size) of :meth:`gain` and :meth:`best_other`."""
        family = family or self.gain_family
        fams = self.families()
        if family not in fams or len(fams) < 2:
            return None, []
        gains, rivals = [], []
        for j, tie in enumerate(self.ties()):
            outside = [f for f in fams if f != family and (family not in tie or f not in tie)]
            if not outside:
                gains.append(np.nan)
                rivals.append(None)
                continue
            best = min(outside, key=lambda f: fams[f][0][j])
            gains.append(fams[best][0][j] / fams[family][0][j] - 1.0)
            rivals.append(best)
        return np.array(gains), rivals

    def entry(self, family: str, variant: str) -> Entry | None:
        """The timed entry of ``family`` labelled ``variant`` (as :meth:`winners` names them), or None.

        Raises:
            Nothing: a lookup.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (one line per algorithm and variant).

        >>> import numpy as np
        >>> c = Comparison("ring:4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0]),
        ...                [Entry("ring", "ring", "bidirectional", np.array([1e-6]))])
        >>> c.entry("ring", "bidirectional").algorithm, c.entry("ring", "unidirectional")
        ('ring', None)
        """
        return next((e for e in self.entries if e.family == family and e.variant == variant), None)

    def best_other(self, family: str | None = None) -> list[str | None]:
        """Per size, the rival :meth:`gain` compares ``family`` with (default: :attr:`gain_family`): the fastest
        family outside its tie, or the winner when it is not in the winning tie; None where every family ties.

        Returns:
            A list of S family names (or None).

        Raises:
            Nothing: reduces the entries (at least two families were timed when a gain exists).

        Source: Swing (De Sensi et al., NSDI'24) Fig. 6 (the letter of the best-known algorithm per size).

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6])),
        ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6])),
        ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]))])
        >>> c.best_other()
        ['ring', 'ring']
        """
        return self._rivals(family)[1]

    def to_dict(self) -> dict:
        """Plain JSON: ``params`` names the parameter set (name, source and every value); every row of ``results``
        carries its variant and ports; per size, ``best`` has the winner, ``ties`` (the families within
        ``tie_tolerance`` of it, winner first) and, when a reference family was timed, ``gain`` against its rival
        (``gain_rival``), ``gain_family`` (and ``swing_gain``, the same number, when that family is Swing);
        ``skipped`` lists every contender that did not run (algorithm, family, variant, ports, kind, reason).

        Returns:
            A JSON-serializable dict (times in s, goodputs in bytes/s, sizes in bytes; a gain where every family
            ties is null).

        Raises:
            Nothing: converts the arrays.

        Source: docs/compare.md, "Output" (machine-readable output is a contract tested in subprocesses).

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6])),
        ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6])),
        ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]))])
        >>> c.to_dict()["best"][0]["swing_gain"], c.to_dict()["best"][0]["ties"]
        (3.0, ['swing'])
        """
        winners = self.winners()
        family = self.gain_family
        gain, rivals = self._rivals(family) if family else (None, [])
        ties = self.ties()

        def why(family: str, variant: str, j: int) -> dict:
            entry = self.entry(family, variant)
            return entry.why.at(self.sizes[j]) if entry is not None and entry.why is not None else {}

        def gains(j: int) -> dict:
            if gain is None:
                return {}
            value = None if np.isnan(gain[j]) else float(gain[j])
            extra = {"swing_gain": value} if family == "swing" else {}
            return {"gain": value, "gain_family": family, "gain_rival": rivals[j], **extra}

        def ports(family: str, variant: str):
            entry = self.entry(family, variant)
            return entry.ports if entry is not None else None

        return {
            "topology": self.topology, "collective": self.collective, "model": self.model, "routing": self.routing,
            "params": self.params.to_dict(), "sizes": [int(s) for s in self.sizes],
            "peak_goodput_Bps": self.peak_goodput, "gain_family": family if gain is not None else None,
            "tie_tolerance": self.tie_tolerance,
            "results": [{"algorithm": e.algorithm, "variant": e.variant, "ports": e.ports, "family": e.family,
                         "size": int(s), "time_s": float(t), "goodput_Bps": float(s / t),
                         **(e.why.at(s) if e.why else {})}
                        for e in self.entries for s, t in zip(self.sizes, e.times, strict=True)],
            "best": [{"size": int(s), "algorithm": w[0], "variant": w[1], "ports": ports(w[0], w[1]),
                      "time_s": w[2], "goodput_Bps": float(s / w[2]), "ties": ties[j], **gains(j),
                      **why(w[0], w[1], j)}
                     for j, (s, w) in enumerate(zip(self.sizes, winners, strict=True))],
            "skipped": [k.to_dict() for k in self.skipped],
            **({"bound": {**self.bound, "times_s": [float(t) for t in self.bound_times],
                          "goodput_Bps": [float(g) for g in self.sizes / self.bound_times]},
                "goodput_definition": ALLTOALL_GOODPUT} if self.bound is not None else {}),
        }

    def to_csv(self) -> str:
        """One CSV row per (entry, size): algorithm, variant, ports, family, size_bytes, time_s, goodput_Bps and an
        empty ``skipped`` column, with a header; then one row per skipped contender, its size, time and goodput
        empty and ``skipped`` = kind: reason. When the entries carry their :class:`~directcoll.reports.why.Why`
        (``compare(..., why=True)``), also steps, congestion_deficiency, max_link_name, bytes_max_link and
        max_link_step.

        Returns:
            The CSV text.

        Raises:
            Nothing: formats the arrays.

        Source: docs/compare.md, "Output" (``--csv`` is a contract).

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6]), ports=4),
        ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6]), ports=4),
        ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]), ports=2)])
        >>> c.to_csv().splitlines()[1]
        'swing,latency,4,swing,8,1e-06,8000000,'
        """
        buf = io.StringIO()
        w = csv.writer(buf)
        why = all(e.why is not None for e in self.entries)
        extra = list(WHY_CSV) if why else []
        w.writerow(["algorithm", "variant", "ports", "family", "size_bytes", "time_s", "goodput_Bps", "skipped",
                    *extra])
        for e in self.entries:
            for s, t in zip(self.sizes, e.times, strict=True):
                more = [e.why.at(s)[k] for k in WHY_CSV] if why else []
                w.writerow([e.algorithm, e.variant, "" if e.ports is None else e.ports, e.family, int(s),
                            f"{t:.9g}", f"{s / t:.9g}", "",
                            *(f"{v:.9g}" if isinstance(v, float) else v for v in more)])
        for k in self.skipped:
            d = k.to_dict()
            w.writerow([d["algorithm"], d["variant"] or "", "" if d["ports"] is None else d["ports"], d["family"],
                        "", "", "", f"{d['kind']}: {d['reason']}", *([""] * len(extra))])
        return buf.getvalue()


#: the columns ``--why`` adds to the CSV rows (:meth:`Why.at <directcoll.reports.why.Why.at>`'s fields)
WHY_CSV = ("steps", "congestion_deficiency", "max_link_name", "bytes_max_link", "max_link_step")


def _progress_noop(done: int, total: int, label: str = "") -> None:
    return None


ALLTOALL_GOODPUT = ("size / time, size = bytes in each rank's send buffer (N blocks of size / N, its own included: "
                    "MPI_Alltoall's sendcount x N); Basu et al.'s per-node throughput (N - 1) m / time is "
                    "(N - 1) / N of it")


def alltoall_bound(topology: Topology, params: NetworkParams | None = None) -> dict:
    """The MCF bound of an all-to-all (Basu et al. Sec. 3.1, eq. 1-14;
    :func:`directcoll.synthesis.mcf.link.alltoall_mcf`): no schedule moves every pair's m bytes faster than
    m / (F b), F the maximum concurrent flow in units of the reference bandwidth b. With ``params.link_bandwidth``
    every link gets that bandwidth (as the simulator does); with ``params.host_injection`` the hosts inject and
    eject at most that (NIC forwarding, as the step model's host limit).

    Returns:
        {"name": "mcf", "F": F, "method", "solver", "reference_bandwidth_Bps": b, "pair_rate_Bps": F b,
        "host_bandwidth_Bps"}; time(size) = size / N / pair_rate_Bps seconds.

    Raises:
        TopologyError, DirectcollError: as :func:`directcoll.synthesis.mcf.link.alltoall_mcf` (e.g. a disconnected
            topology).
        SolverError: the MCF LP could not be solved.
        ResourceError: the LP is over the memory budget.

    Source: Basu et al. (HPDC'24) Sec. 3.1 (max concurrent multi-commodity flow, eq. 1-14) and Theorem 1 (lower
    bound on all-to-all time); Zhao et al. (NSDI'25) App. A.5.

    >>> from directcoll.topology import parse
    >>> alltoall_bound(parse("ring:4"))["F"]
    0.5
    """
    from directcoll.synthesis.mcf.link import alltoall_mcf

    params = params if params is not None else NetworkParams()
    topo, ref = topology, None
    if params.link_bandwidth is not None:
        ref = float(params.link_bandwidth)
        topo = replace(topology, link_bandwidth=np.full(topology.num_links, ref))
    host = params.host_injection or None
    res = alltoall_mcf(topo, host_bandwidth=host, nic_forwarding=host is not None, reference_bandwidth=ref)
    return {"name": "mcf", "F": float(res.value), "method": res.method, "solver": res.solver,
            "reference_bandwidth_Bps": float(res.reference_bandwidth),
            "pair_rate_Bps": float(res.pair_rate_bytes_per_s), "host_bandwidth_Bps": host}


def _time(pattern, topology: Topology, sizes: np.ndarray, params: NetworkParams, routing: str, model: str,
          why: bool):
    """(the step model's simulation or None, times per size) of one contender's pattern under ``model``."""
    sim = simulate(pattern, topology, params, routing) if model == "step" or why else None
    if model == "step":
        return sim, sim.time(sizes)
    if model == "flow":
        from directcoll.simulate.flow import flow_times

        return sim, flow_times(pattern, topology, sizes, params, routing)
    from directcoll.simulate.packet import packet_times

    return sim, packet_times(pattern, topology, sizes, params, routing)


def compare(topology: Topology, collective="allreduce", sizes=None, params: NetworkParams | None = None,
            routing: str = "adaptive", model: str = "step", contenders=None,
            progress: Callable[..., None] = _progress_noop, bound: bool = True, why: bool = False,
            ports: int | None = None, cutoffs: bool = True, tie_tolerance: float = TIE_TOLERANCE) -> Comparison:
    """Time every contender that serves ``topology`` at every size.

    Args:
        topology: the network.
        collective: allreduce (default), reduce_scatter, allgather, alltoall, broadcast or reduce.
        sizes: vector sizes in bytes (default: 32 B .. 512 MiB, powers of two: the paper's sweep; to 4 MiB for
            the packet model).
        params: network parameters (default: :func:`~directcoll.simulate.params.default_params`, the Swing paper's
            SST setup, as ``directcoll compare`` uses; a network file's own per-link values are kept).
        routing: "adaptive" or "dor".
        model: "step" (closed-form sweep), "flow" (max-min fair, per size; slower) or "packet" (ns-3, per size;
            slowest, refused over :data:`~directcoll.simulate.packet.MAX_PACKET_HOPS` per size).
        contenders: :class:`~directcoll.reports.contenders.Contender` records (or registry names, or tuples
            (family, algorithm, variant[, options])); default (None or empty): :func:`default_policy` of the
            topology, whose cutoffs are listed as skipped. Exactly :data:`DEFAULT_CONTENDERS` gives the Swing
            paper's comparison: those plus the generalized allreduce for a non-power-of-two N.
        progress: callable(done, total, label) for progress bars.
        bound: all-to-all only: also solve the MCF bound (:func:`alltoall_bound`) into ``Comparison.bound`` and
            ``bound_times``.
        why: also record every entry's steps, congestion deficiency Ξ and busiest link
            (:func:`directcoll.reports.why.explain`, from the step model's routing whatever ``model`` is).
        ports: build every contender with this many ports (concurrent collectives per rank); one that refuses it
            is skipped with its builder's reason, one whose schedule takes no port count (BFB, trees) is skipped
            as kind ``ports``. None: each algorithm's default.
        cutoffs: apply the default policy's size cutoffs (listed as skipped); False runs those contenders too.
        tie_tolerance: fraction within which contenders tie (:data:`TIE_TOLERANCE`), >= 0.

    Returns:
        A :class:`Comparison`. Every contender that does not run is in ``skipped`` with its kind and reason: a
        shape it does not serve, a schedule over the memory budget (the others still run), a cutoff, a port
        count. Its reference family (for :meth:`Comparison.gain`) is BFB on direct-connect topologies
        (:func:`is_direct_connect`), else Swing; for all-to-all the MCF schedules if timed, else EwSP; for
        broadcast and reduce bfb-tree or swing-tree (peak goodput: the node bandwidth).

    Raises:
        DirectcollError: unknown model, a negative ``tie_tolerance``, ``ports`` < 1, or no contender runs (the
            message lists every skip).
        ScheduleError: an unknown collective name.
        TopologyError, SolverError: from building a contender (UnsupportedShapeError and ResourceError only skip
            it).

    Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (the size sweep 32 B .. 512 MiB, goodput, gain);
    docs/simulation.md (step model; flow and packet models for validation); docs/compare.md (policy and ties).

    >>> from directcoll.topology import parse
    >>> c = compare(parse("torus:4x4"), sizes=[32, 2**20], contenders=DEFAULT_CONTENDERS)
    >>> len(c.entries), c.skipped, c.params.name
    (6, [], 'swing-sst')
    """
    if model not in MODELS:
        raise DirectcollError(f"unknown model {model!r}; accepted: {', '.join(MODELS)}")
    if not tie_tolerance >= 0:
        raise DirectcollError(f"tie tolerance must be a fraction >= 0 (0.005 = 0.5 %), got {tie_tolerance!r}")
    if ports is not None and ports < 1:
        raise DirectcollError(f"ports must be >= 1, got {ports}")
    coll = Collective.parse(collective)
    if sizes is None:  # the packet engine simulates every packet: its default sweep stops at 4 MiB
        sizes = 2 ** np.arange(5, 23 if model == "packet" else 30)
    sizes = np.asarray(sizes, dtype=float)
    params = params if params is not None else default_params(topology)
    if not contenders:
        run, skipped = default_policy(topology, coll, cutoffs)
    else:
        run, skipped = [Contender.of(c) for c in contenders], []
        if run == DEFAULT_CONTENDERS:
            general, cut = generalized_contenders(topology.num_compute, coll, cutoffs)
            run, skipped = run + general, cut
    if ports is not None:
        run = [c.with_(ports=ports) for c in run]
    entries = []
    for i, c in enumerate(run):
        progress(i, len(run), f"{c.algorithm} {c.label}".strip())
        try:
            pattern = build_pattern(c.algorithm, topology, coll, variant=c.variant, ports=c.ports, **c.options)
            built_ports = pattern.meta.get("ports")
            if ports is not None and built_ports != ports:
                skipped.append(Skipped(c, "ports", f"{c.algorithm} takes no port count (it uses the links its "
                                                   f"construction chooses), so it cannot be restricted to {ports}"))
                continue
            sim, times = _time(pattern, topology, sizes, params, routing, model, why)
        except ResourceError as exc:  # its schedule or its routes: the others may still fit
            skipped.append(Skipped(c, "memory", str(exc)))
            continue
        except UnsupportedShapeError as exc:
            skipped.append(Skipped(c, "shape", str(exc)))
            continue
        entries.append(Entry(c.family, c.algorithm, c.label or pattern.meta.get("variant") or "",
                             np.asarray(times), explain(pattern, sim, topology) if why else None,
                             None if built_ports is None else int(built_ports)))
        del pattern, sim  # the next contender's schedule may need the memory
    progress(len(run), len(run), "done")
    if not entries:
        raise DirectcollError(f"no algorithm runs {coll.value} on {topology.spec}: "
                              + "; ".join(f"{k.contender.algorithm} {k.contender.label}: {k.reason}".replace(" :", ":")
                                          for k in skipped))
    bw = params.link_bandwidth
    node_bw = topology.node_bandwidth if bw is None else bw * topology.out_degree[: topology.num_compute].max()
    if params.host_injection:
        node_bw = min(node_bw, params.host_injection)
    p = topology.num_compute
    peak = node_bw / 2 * p / (p - 1) if coll is Collective.ALLREDUCE else node_bw * p / (p - 1)
    reference = "bfb" if is_direct_connect(topology) else "swing"
    if coll.rooted:  # every non-root rank receives (reduce: sends) the whole vector once at least
        peak, reference = node_bw, f"{reference}-tree"
    mcf, mcf_times = None, None
    if coll is Collective.ALLTOALL:
        reference = "mcf" if any(e.family == "mcf" for e in entries) else "ewsp"
        if bound:
            try:
                mcf = alltoall_bound(topology, params)
            except DirectcollError as exc:
                kind = "memory" if isinstance(exc, ResourceError) else "shape"
                skipped.append(Skipped(Contender("mcf bound", "mcf", "bound"), kind, str(exc)))
            else:
                mcf_times = sizes / p / mcf["pair_rate_Bps"]
    return Comparison(topology.spec, coll.value, params, routing, model, sizes, entries, skipped, float(peak),
                      reference=reference, bound=mcf, bound_times=mcf_times, tie_tolerance=float(tie_tolerance))
