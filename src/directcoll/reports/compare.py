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

from directcoll.errors import DirectcollError, UnsupportedShapeError
from directcoll.registry import build_pattern
from directcoll.reports.contenders import (
    DEFAULT_CONTENDERS,
    default_contenders,
    generalized_contenders,
    is_direct_connect,
)
from directcoll.reports.why import Why, explain
from directcoll.schedule.ir import Collective
from directcoll.simulate.params import NetworkParams
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

    Raises:
        Nothing: a record built by :func:`compare`.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (one line per algorithm and variant).
    """
    family: str
    algorithm: str
    variant: str
    times: np.ndarray  # seconds per size
    why: Why | None = None


@dataclass
class Comparison:
    """The outcome of :func:`compare`: times per (algorithm, variant) and size, and what wins.

    Attributes:
        topology, collective, routing, model: what was compared, as names.
        params: the :class:`~directcoll.simulate.params.NetworkParams` used.
        sizes: float64 (S,), vector sizes in bytes; entries: the timed :class:`Entry` objects.
        skipped: contenders that refused the topology, with their reason.
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
    skipped: list[dict] = field(default_factory=list)
    peak_goodput: float = 0.0  # bytes/s: half the injection bandwidth for allreduce
    #: the family whose gain is reported when present: "swing" on grids, "bfb" on direct-connect topologies,
    #: "mcf" (else "ewsp") for all-to-all
    reference: str = "swing"
    #: all-to-all: the MCF bound (:func:`alltoall_bound`): F, method, reference bandwidth ...; None otherwise
    bound: dict | None = None
    #: all-to-all: the bound's time per size, s (an ideal schedule's bandwidth time; no latency)
    bound_times: np.ndarray | None = None

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

    def gain(self, family: str | None = None) -> np.ndarray | None:
        """goodput(family) / goodput(best other family) - 1 per size (default family: :attr:`gain_family`);
        None when absent or alone.

        Returns:
            float64 (S,), dimensionless (1.0 = twice as fast), or None.

        Raises:
            Nothing: reduces the entries.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 5.1.1 (a 100% gain denotes Swing is 2x faster than the best
        state-of-the-art algorithm).

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6])),
        ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6])),
        ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]))])
        >>> c.gain("ring").tolist()
        [-0.75, 1.0]
        """
        family = family or self.gain_family
        fams = self.families()
        if family not in fams or len(fams) < 2:
            return None
        others = np.array([t for f, (t, _) in fams.items() if f != family]).min(axis=0)
        return others / fams[family][0] - 1.0

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

    def best_other(self, family: str | None = None) -> list[str]:
        """Per size, the fastest family other than ``family`` (default: :attr:`gain_family`).

        Returns:
            A list of S family names.

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
        family = family or self.gain_family
        fams = self.families()
        names = [f for f in fams if f != family]
        stack = np.array([fams[f][0] for f in names])
        return [names[i] for i in stack.argmin(axis=0)]

    def to_dict(self) -> dict:
        """Plain JSON: per size, ``best`` has the winner and, when a reference family was timed, ``gain`` and
        ``gain_family`` (and ``swing_gain``, the same number, when that family is Swing).

        Returns:
            A JSON-serializable dict (times in s, goodputs in bytes/s, sizes in bytes).

        Raises:
            Nothing: converts the arrays.

        Source: DESIGN.md, "Engines, runtimes and scale" (machine-readable output is a contract tested in
        subprocesses).

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6])),
        ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6])),
        ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]))])
        >>> c.to_dict()["best"][0]["swing_gain"]
        3.0
        """
        winners = self.winners()
        family = self.gain_family
        gain = self.gain(family) if family else None

        def why(family: str, variant: str, j: int) -> dict:
            entry = self.entry(family, variant)
            return entry.why.at(self.sizes[j]) if entry is not None and entry.why is not None else {}

        def gains(j: int) -> dict:
            if gain is None:
                return {}
            extra = {"swing_gain": float(gain[j])} if family == "swing" else {}
            return {"gain": float(gain[j]), "gain_family": family, **extra}

        return {
            "topology": self.topology, "collective": self.collective, "model": self.model, "routing": self.routing,
            "params": self.params.to_dict(), "sizes": [int(s) for s in self.sizes],
            "peak_goodput_Bps": self.peak_goodput, "gain_family": family if gain is not None else None,
            "results": [{"algorithm": e.algorithm, "variant": e.variant, "family": e.family, "size": int(s),
                         "time_s": float(t), "goodput_Bps": float(s / t), **(e.why.at(s) if e.why else {})}
                        for e in self.entries for s, t in zip(self.sizes, e.times, strict=True)],
            "best": [{"size": int(s), "algorithm": w[0], "variant": w[1], "time_s": w[2],
                      "goodput_Bps": float(s / w[2]), **gains(j), **why(w[0], w[1], j)}
                     for j, (s, w) in enumerate(zip(self.sizes, winners, strict=True))],
            "skipped": self.skipped,
            **({"bound": {**self.bound, "times_s": [float(t) for t in self.bound_times],
                          "goodput_Bps": [float(g) for g in self.sizes / self.bound_times]},
                "goodput_definition": ALLTOALL_GOODPUT} if self.bound is not None else {}),
        }

    def to_csv(self) -> str:
        """One CSV row per (entry, size): algorithm, variant, family, size_bytes, time_s, goodput_Bps, with a header;
        when the entries carry their :class:`~directcoll.reports.why.Why` (``compare(..., why=True)``), also steps,
        congestion_deficiency, max_link_name, bytes_max_link and max_link_step.

        Returns:
            The CSV text.

        Raises:
            Nothing: formats the arrays.

        Source: DESIGN.md, "Engines, runtimes and scale" (``--csv`` is a contract).

        >>> import numpy as np
        >>> c = Comparison("torus:4x4", "allreduce", NetworkParams(), "adaptive", "step", np.array([8.0, 1024.0]),
        ...                [Entry("swing", "swing", "latency", np.array([1e-6, 4e-6])),
        ...                 Entry("swing", "swing", "bandwidth", np.array([2e-6, 2e-6])),
        ...                 Entry("ring", "ring", "bidirectional", np.array([4e-6, 1e-6]))])
        >>> c.to_csv().splitlines()[1]
        'swing,latency,swing,8,1e-06,8000000'
        """
        buf = io.StringIO()
        w = csv.writer(buf)
        why = all(e.why is not None for e in self.entries)
        extra = list(WHY_CSV) if why else []
        w.writerow(["algorithm", "variant", "family", "size_bytes", "time_s", "goodput_Bps", *extra])
        for e in self.entries:
            for s, t in zip(self.sizes, e.times, strict=True):
                more = [e.why.at(s)[k] for k in WHY_CSV] if why else []
                w.writerow([e.algorithm, e.variant, e.family, int(s), f"{t:.9g}", f"{s / t:.9g}",
                            *(f"{v:.9g}" if isinstance(v, float) else v for v in more)])
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


def _check_memory_up_front(topology: Topology, coll: Collective, contenders) -> None:
    """Refuse the comparison before timing anything when one contender's schedule would not fit the memory budget
    (:func:`directcoll.registry.check_build_memory`; they are built one at a time)."""
    from directcoll.registry import check_build_memory

    for _family, name, variant, *_extra in contenders:
        try:
            check_build_memory(name, topology, coll, variant, pattern=True)  # compare builds step patterns
        except UnsupportedShapeError:
            continue  # an unknown name: skipped with its reason below


def compare(topology: Topology, collective="allreduce", sizes=None, params: NetworkParams | None = None,
            routing: str = "adaptive", model: str = "step", contenders=None,
            progress: Callable[..., None] = _progress_noop, bound: bool = True, why: bool = False) -> Comparison:
    """Time every contender that serves ``topology`` at every size.

    Args:
        topology: the network.
        collective: allreduce (default), reduce_scatter, allgather, alltoall, broadcast or reduce.
        sizes: vector sizes in bytes (default: 32 B .. 512 MiB, powers of two: the paper's sweep; to 4 MiB for
            the packet model).
        params: network parameters (default: zero overheads and the topology's links).
        routing: "adaptive" or "dor".
        model: "step" (closed-form sweep), "flow" (max-min fair, per size; slower) or "packet" (ns-3, per size;
            slowest, refused over :data:`~directcoll.simulate.packet.MAX_PACKET_HOPS` per size).
        contenders: (family, registry name, variant[, build options]) tuples; default (None or empty)
            :func:`default_contenders` of the topology. Exactly :data:`DEFAULT_CONTENDERS` gives the Swing
            paper's comparison: those plus the generalized allreduce at every r for a non-power-of-two N.
        progress: callable(done, total, label) for progress bars.
        bound: all-to-all only: also solve the MCF bound (:func:`alltoall_bound`) into ``Comparison.bound`` and
            ``bound_times``.
        why: also record every entry's steps, congestion deficiency Ξ and busiest link
            (:func:`directcoll.reports.why.explain`, from the step model's routing whatever ``model`` is).

    Returns:
        A :class:`Comparison`; contenders that refuse the topology are listed in ``skipped`` with the reason.
        Its reference family (for :meth:`Comparison.gain`) is BFB on direct-connect topologies
        (:func:`is_direct_connect`), else Swing; for all-to-all the MCF schedules if timed, else EwSP; for
        broadcast and reduce bfb-tree or swing-tree (peak goodput: the node bandwidth).
        Variants built with options are labelled ``r=k`` (generalized) or ``P=k`` (double binary tree and chain
        chunks).

    Raises:
        DirectcollError: unknown model, or no contender serves the topology.
        ResourceError: a contender's schedule would not fit the memory budget (checked before any is built).
        ScheduleError: an unknown collective name.
        TopologyError, SolverError: from building a contender (UnsupportedShapeError only skips it).

    Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (the size sweep 32 B .. 512 MiB, goodput, gain);
    DESIGN.md, "Cost and simulation" (step model; flow model for validation).

    >>> from directcoll.topology import parse
    >>> c = compare(parse("torus:4x4"), sizes=[32, 2**20], contenders=DEFAULT_CONTENDERS)
    >>> len(c.entries), c.skipped
    (6, [])
    """
    if model not in MODELS:
        raise DirectcollError(f"unknown model {model!r}; accepted: {', '.join(MODELS)}")
    coll = Collective.parse(collective)
    if sizes is None:  # the packet engine simulates every packet: its default sweep stops at 4 MiB
        sizes = 2 ** np.arange(5, 23 if model == "packet" else 30)
    sizes = np.asarray(sizes, dtype=float)
    params = params if params is not None else NetworkParams()
    if not contenders:
        contenders = default_contenders(topology, coll)
    else:
        contenders = list(contenders)
        if contenders == DEFAULT_CONTENDERS:
            contenders += generalized_contenders(topology.num_compute, coll)
    _check_memory_up_front(topology, coll, contenders)
    entries, skipped = [], []
    for i, (family, name, variant, *extra) in enumerate(contenders):
        options = extra[0] if extra else {}
        label = f"{name} {variant or ''}".strip()
        progress(i, len(contenders), label)
        try:
            pattern = build_pattern(name, topology, coll, variant=variant, **options)
        except UnsupportedShapeError as exc:
            skipped.append({"algorithm": name, "variant": variant, "reason": str(exc)})
            continue
        label_variant = (f"r={options['r']}" if "r" in options else
                         f"P={options['chunks']}" if "chunks" in options else None)
        sim = simulate(pattern, topology, params, routing) if model == "step" or why else None
        if model == "step":
            times = sim.time(sizes)
        elif model == "flow":
            from directcoll.simulate.flow import flow_times

            times = flow_times(pattern, topology, sizes, params, routing)
        else:
            from directcoll.simulate.packet import packet_times

            times = packet_times(pattern, topology, sizes, params, routing)
        entries.append(Entry(family, name, label_variant or pattern.meta.get("variant") or variant or "",
                             np.asarray(times), explain(pattern, sim, topology) if why else None))
    progress(len(contenders), len(contenders), "done")
    if not entries:
        raise DirectcollError(f"no algorithm serves {coll.value} on {topology.spec}: "
                              + "; ".join(f"{s['algorithm']}: {s['reason']}" for s in skipped))
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
                skipped.append({"algorithm": "mcf bound", "variant": None, "reason": str(exc)})
            else:
                mcf_times = sizes / p / mcf["pair_rate_Bps"]
    return Comparison(topology.spec, coll.value, params, routing, model, sizes, entries, skipped, float(peak),
                      reference=reference, bound=mcf, bound_times=mcf_times)
