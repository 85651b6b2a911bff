"""``directcoll compare``: which collective algorithm wins on a network at each vector size, and by how much.

Every algorithm that serves the topology is routed once (step model, closed-form size sweep) or simulated per
size (flow and packet models). As in the Swing paper's Sec. 5 figures, each algorithm family is shown by its best
variant per size (Swing: latency- or bandwidth-optimal; recursive doubling: latency-optimal or Rabenseifner;
double binary tree: its best chunk count), the winner per size is named with the families that tie with it
(within the tie tolerance), and the gain of a reference family is goodput_ref / goodput_rival - 1, the rival being
the best family outside the reference's tie (:class:`~directcoll.reports.comparison.Comparison`). A contender that
does not run is listed with its kind and reason, never dropped (:mod:`directcoll.reports.contenders`).

Which algorithms compete depends on the network (:func:`directcoll.reports.contenders.default_policy`):

* grids (torus, mesh, HyperX, HammingMesh, and the 1D / 2^k tori ``ring`` and ``hypercube``): the Swing paper's
  families (Swing, recursive doubling, ring, bucket), plus BFB (Zhao et al. Sec. 6.1) on switchless grids (a
  stated cutoff on grids without translation symmetry, :data:`~directcoll.reports.contenders.BFB_GRID_MAX_RANKS`);
  the reference family is Swing.
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

import dataclasses
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from directcoll.errors import DeadlockError, DirectcollError, ResourceError, UnsupportedShapeError
from directcoll.registry import build_pattern
from directcoll.reports.comparison import ALLTOALL_GOODPUT, WHY_CSV, Comparison, Entry
from directcoll.reports.contenders import (
    DEFAULT_CONTENDERS,
    TIE_TOLERANCE,
    Contender,
    Skipped,
    default_policy,
    generalized_contenders,
    is_direct_connect,
)
from directcoll.reports.why import explain
from directcoll.schedule.ir import Collective
from directcoll.simulate.params import NetworkParams, default_params
from directcoll.simulate.step import simulate
from directcoll.topology.model import Topology

__all__ = ["ALLTOALL_GOODPUT", "DEFAULT_CONTENDERS", "MODELS", "WHY_CSV", "Comparison", "Entry", "alltoall_bound",
           "compare"]

MODELS = ("step", "flow", "packet")


def _progress_noop(done: int, total: int, label: str = "") -> None:
    return None


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
          why: bool, flow=None, orderings: int = 1):
    """(the step model's simulation or None, times per size, the (S, 2) fastest and slowest time over
    ``orderings`` orders of the transfers or None) of one contender's pattern under ``model``."""
    sim = simulate(pattern, topology, params, routing) if model == "step" or why else None
    if model == "step":
        return sim, sim.time(sizes), None
    if model == "flow":
        from directcoll.simulate.flow import flow_times

        return sim, flow_times(pattern, topology, sizes, params, routing), None
    from directcoll.simulate.packet import order_range, packet_times

    times = packet_times(pattern, topology, sizes, params, routing, flow=flow)
    spread = order_range(pattern, topology, sizes, times, orderings, params, routing, flow) if orderings > 1 else None
    return sim, times, spread


def compare(topology: Topology, collective="allreduce", sizes=None, params: NetworkParams | None = None,
            routing: str = "adaptive", model: str = "step", contenders=None,
            progress: Callable[..., None] = _progress_noop, bound: bool = True, why: bool = False,
            ports: int | None = None, cutoffs: bool = True, tie_tolerance: float = TIE_TOLERANCE,
            flow=None, orderings: int = 1) -> Comparison:
    """Time every contender that serves ``topology`` at every size.

    Args:
        topology: the network.
        collective: allreduce (default), reduce_scatter, allgather, alltoall, broadcast or reduce.
        sizes: vector sizes in bytes (default: 32 B .. 512 MiB, powers of two: the paper's sweep; to 4 MiB for
            the packet model).
        params: network parameters (default: :func:`~directcoll.simulate.params.default_params`, the Swing paper's
            SST setup, as ``directcoll compare`` uses; a network file's own per-link values are kept).
        routing: "adaptive", "dor" or "single".
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
        flow: the packet model's flow control (:class:`~directcoll.simulate.packet.FlowControl`); a contender
            that deadlocks under it is skipped as kind ``deadlock``, naming the cycle.
        orderings: the packet model: time every contender in this many orders of each step's transfers (the
            order as built, then seeded shuffles, :meth:`StepPattern.reordered
            <directcoll.schedule.pattern.StepPattern.reordered>`); its times stay those of the order as built,
            its ``spread`` holds the fastest and slowest, and :meth:`Comparison.ties` counts two families whose
            ranges meet within the tolerance as a tie (docs/fidelity.md, "Ties"). 1 (default): the order as built.

    Returns:
        A :class:`Comparison`. Every contender that does not run is in ``skipped`` with its kind and reason: a
        shape it does not serve, a schedule over the memory budget (the others still run), a cutoff, a port
        count. Its reference family (for :meth:`Comparison.gain`) is BFB on direct-connect topologies
        (:func:`is_direct_connect`), else Swing; for all-to-all the MCF schedules if timed, else EwSP; for
        broadcast and reduce bfb-tree or swing-tree (peak goodput: the node bandwidth).

    Raises:
        DirectcollError: unknown model, a negative ``tie_tolerance``, ``ports`` < 1, ``orderings`` < 1 or above 1
            with another model than packet, or no contender runs (the message lists every skip).
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
    if not (isinstance(orderings, int) and orderings >= 1) or (orderings > 1 and model != "packet"):
        raise DirectcollError(f"orderings {orderings!r}: accepted: a whole number >= 1, above 1 only with the packet "
                              "model (the step and flow models do not depend on the order of a step's transfers)")
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
            sim, times, spread = _time(pattern, topology, sizes, params, routing, model, why, flow, orderings)
        except DeadlockError as exc:  # its traffic locks the buffers: the others may not
            skipped.append(Skipped(c, "deadlock", str(exc)))
            continue
        except ResourceError as exc:  # its schedule or its routes: the others may still fit
            skipped.append(Skipped(c, "memory", str(exc)))
            continue
        except UnsupportedShapeError as exc:
            skipped.append(Skipped(c, "shape", str(exc)))
            continue
        entries.append(Entry(c.family, c.algorithm, c.label or pattern.meta.get("variant") or "",
                             np.asarray(times), explain(pattern, sim, topology) if why else None,
                             None if built_ports is None else int(built_ports), spread))
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
                      reference=reference, bound=mcf, bound_times=mcf_times, tie_tolerance=float(tie_tolerance),
                      flow=None if flow is None else dataclasses.asdict(flow), orderings=orderings)
