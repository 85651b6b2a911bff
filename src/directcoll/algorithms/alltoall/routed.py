"""The path-based all-to-all schedule every routed baseline builds (Basu et al., HPDC'24, Sec. 2.2 "Path-based
Schedules", Sec. 3.2.1 and Sec. 4 "Path-based Schedules"), and what they share.

A **path-based schedule** is one step in which every ordered pair (i, j) sends block i N + j as one or more
transfers i -> j, each carrying a fraction of the block along an explicit route (``Schedule.route_offsets`` /
``route_links``: the link ids of one path of the topology the schedule was built for). The simulators and the
cost model follow those routes instead of routing the transfers themselves. :func:`path_alltoall` builds one
from paths and weights; ``dor``, ``sssp``, ``ewsp`` and ``ilp-disjoint`` (the sibling modules) choose the
paths, and ``mcf`` (:mod:`directcoll.synthesis.mcf.schedules`) lowers pMCF / MCF-extP paths to one.

Every schedule's meta has ``max_link_load``: the largest link load in blocks of one pair per unit of relative
bandwidth (:func:`alltoall_link_loads`), so ``size / N * max_link_load / b_max`` is its bandwidth time.
"""

from __future__ import annotations

import numpy as np

from directcoll.errors import ScheduleError, UnsupportedShapeError
from directcoll.schedule.ir import COPY, Collective, Schedule, ScheduleBuilder
from directcoll.topology.model import Topology
from directcoll.topology.routing import link_loads


def path_alltoall(topology: Topology, src, dst, weight, route_offsets, route_links, *, denominator: int = 1,
                  meta: dict | None = None) -> Schedule:
    """A one-step all-to-all in which path p carries ``weight[p] / denominator`` of pair (src[p], dst[p])'s block
    along the links ``route_links[route_offsets[p]:route_offsets[p+1]]`` (Basu Sec. 3.2.1's path-based schedule).

    Args:
        topology: the network the routes are link ids of; its compute nodes are the ranks.
        src, dst: int (P,), the pair of every path; paths of one pair must be consecutive.
        weight: int (P,), positive numerators; every ordered pair i != j must have paths whose weights add up to
            ``denominator``.
        route_offsets, route_links: CSR (P + 1,) and (R,) link ids: path p's links in order.
        denominator: the common denominator of the weights.
        meta: schedule metadata (algorithm, variant, ...); ``max_link_load`` is added.

    Returns:
        A Schedule (ALLTOALL, N ranks, nblocks = N^2, exact ``denominator``) whose transfer p copies the piece
        [b + w_<p, b + w_<p + w_p) / denominator of block b = src N + dst (w_<p: the weights of the pair's
        earlier paths) with route p.

    Raises:
        ScheduleError: arrays of inconsistent lengths, a rank out of range, src == dst, a weight <= 0, a pair's
            paths not consecutive, a pair missing or over- / under-covered, or a route that is empty, names a link
            outside the topology or is not a path from its source to its destination in ``topology``.

    Source: Basu et al. (HPDC'24) Sec. 2.2 ("Path-based Schedules": chunks flow on end-to-end paths) and Sec. 4
    ("Path-based Schedules": routes per commodity and the share of the shard on each); the IR's explicit routes
    are docs/architecture.md, "Schedule IR" (a transfer's optional explicit route).

    >>> from directcoll.topology import parse
    >>> from directcoll.topology.routing import link_between
    >>> topo = parse("complete:3")
    >>> src, dst = ordered_pairs(3)
    >>> ones = np.ones(len(src), np.int64)
    >>> s = path_alltoall(topo, src, dst, ones, csr_offsets(ones), link_between(topo, src, dst))
    >>> s.nblocks, s.denominator, s.meta["max_link_load"]
    (9, 1, 1.0)
    """
    n = topology.num_compute
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    weight = np.asarray(weight, np.int64)
    ro, rl = np.asarray(route_offsets, np.int64), np.asarray(route_links, np.int64)
    p = len(src)
    if len(dst) != p or len(weight) != p or len(ro) != p + 1 or ro[0] != 0 or ro[-1] != len(rl):
        raise ScheduleError("path_alltoall: src, dst, weight need one entry per path and route_offsets P + 1 "
                            "entries from 0 to len(route_links)")
    if p and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n or (weight <= 0).any()
              or (src == dst).any()):
        raise ScheduleError(f"path_alltoall: pairs must be ranks 0..{n - 1} with src != dst and weights > 0")
    _check_routes(topology, src, dst, ro, rl)
    pair = src * n + dst
    if p and (np.diff(pair) != 0).sum() + 1 != len(np.unique(pair)):
        raise ScheduleError("path_alltoall: the paths of a pair must be consecutive")
    total = np.zeros(n * n, np.int64)
    np.add.at(total, pair, weight)  # exact: denominators may exceed 2^53
    total = total.reshape(n, n)
    want = np.full((n, n), int(denominator), np.int64)
    np.fill_diagonal(want, 0)
    if not np.array_equal(total, want):
        i, j = np.argwhere(total != want)[0]
        raise ScheduleError(f"path_alltoall: the paths of pair ({i}, {j}) carry {total[i, j]}/{denominator} of "
                            "its block; every pair i != j must send exactly its whole block")
    first = np.r_[True, pair[1:] != pair[:-1]]
    cum = np.cumsum(weight)
    before = cum - weight - np.maximum.accumulate(np.where(first, cum - weight, 0))
    start = pair * denominator + before
    b = ScheduleBuilder(Collective.ALLTOALL, n, n * n, denominator=denominator)
    b.add(0, src, dst, COPY, start, start + weight)
    s = b.build(meta=dict(meta or {}))
    s = Schedule(s.collective, s.nranks, s.nblocks, s.step, s.src, s.dst, s.op, s.piece_offsets, s.piece_start,
                 s.piece_stop, s.denominator, route_offsets=ro, route_links=rl, meta=s.meta)
    load = alltoall_link_loads(s, topology)
    return s.with_meta(max_link_load=round(float(load.max()), 12) if len(load) else 0.0)


def _check_routes(topology: Topology, src, dst, ro, rl) -> None:
    counts = np.diff(ro)
    if (counts < 1).any():
        raise ScheduleError(f"path_alltoall: path {int(np.flatnonzero(counts < 1)[0])} has an empty route")
    if len(rl) and (rl.min() < 0 or rl.max() >= topology.num_links):
        raise ScheduleError(f"path_alltoall: a route names a link outside 0..{topology.num_links - 1} of "
                            f"{topology.spec}")
    us, vs = topology.link_src[rl], topology.link_dst[rl]
    bad = us[ro[:-1]] != src
    bad |= vs[ro[1:] - 1] != dst
    chained = np.ones(len(rl), dtype=bool)
    chained[1:] = us[1:] == vs[:-1]
    chained[ro[:-1]] = True
    bad |= ~np.logical_and.reduceat(chained, ro[:-1])
    if bad.any():
        q = int(np.flatnonzero(bad)[0])
        raise ScheduleError(f"path_alltoall: route {q} ({src[q]} -> {dst[q]}: links "
                            f"{rl[ro[q]:ro[q + 1]].tolist()}) is not a path from {src[q]} to {dst[q]} in "
                            f"{topology.spec}")


def alltoall_link_loads(schedule: Schedule, topology: Topology) -> np.ndarray:
    """Load of every link of a routed all-to-all, in blocks of one pair (m = vector / N bytes) per unit of
    relative bandwidth (link bandwidth / the fastest link's).

    Args:
        schedule: an all-to-all Schedule with explicit routes (from :func:`path_alltoall`).
        topology: the topology whose link ids the routes use.

    Returns:
        float64 (L,), one entry per link of ``topology``, in blocks (m bytes each) per relative bandwidth. Its
        maximum times m / b_max (s) is the schedule's bandwidth time in the step model, and is at least 1 / F
        (Basu et al. Sec. 5.3: all-to-all time = 1 / MCF = the maximum link load).

    Raises:
        ScheduleError: the schedule is not an all-to-all with explicit routes.
        TopologyError: a route names a link outside ``topology`` (a schedule built for another topology).

    Source: Basu et al. (HPDC'24) Sec. 5.3 (Fig. 8: "all-to-all time ... equal to 1/MCF and the maximum link
    load") and docs/alltoall.md, "Baselines and compare" (``max_link_load``).

    >>> from directcoll.topology import parse
    >>> from directcoll.algorithms.alltoall.ewsp import ewsp_alltoall
    >>> topo = parse("ring:4")
    >>> alltoall_link_loads(ewsp_alltoall(topo), topo).tolist()
    [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]
    """
    if schedule.collective is not Collective.ALLTOALL or schedule.route_offsets is None:
        raise ScheduleError("alltoall_link_loads needs an all-to-all schedule with explicit routes")
    per_transfer = schedule.transfer_size * schedule.nranks  # fraction of one pair's block
    load = link_loads(topology, schedule.src, schedule.dst, per_transfer,
                      routes=(schedule.route_offsets, schedule.route_links))
    return load / (topology.link_bandwidth / topology.link_bandwidth.max())


def ordered_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst): int64 (N (N - 1),), every ordered pair of distinct ranks in rank order.

    Raises:
        Nothing: numpy index arithmetic (n < 2 gives empty arrays).

    Source: Basu et al. (HPDC'24) Sec. 3.1.1 (the N(N-1) commodities (s, d) of the all-to-all).

    >>> [a.tolist() for a in ordered_pairs(3)]
    [[0, 0, 1, 1, 2, 2], [1, 2, 0, 2, 0, 1]]
    """
    i, j = np.divmod(np.arange(n * n, dtype=np.int64), n)
    return i[i != j], j[i != j]


def csr_offsets(lengths) -> np.ndarray:
    """int64 (R + 1,) CSR offsets of R rows with these lengths (0 first, then the running sums).

    Raises:
        Nothing: a cumulative sum.

    Source: docs/architecture.md, "Schedule IR" (pieces and routes stored CSR-style).

    >>> csr_offsets([2, 1, 3]).tolist()
    [0, 2, 3, 6]
    """
    return np.r_[0, np.cumsum(lengths)].astype(np.int64)


def require_alltoall(topology: Topology, collective, name: str, options: dict, accepted=()) -> int:
    """What every routed baseline's registry builder checks first.

    Args:
        topology: the topology asked for.
        collective: the collective asked for (a name or a :class:`Collective`).
        name: the algorithm's name, for the messages.
        options: the builder's keyword options; accepted: the names it may contain.

    Returns:
        N, the number of compute nodes (ranks), >= 2.

    Raises:
        UnsupportedShapeError: another collective than alltoall, an option not in ``accepted``, or fewer than
            2 ranks.
        ScheduleError: a collective name that is no collective (:meth:`Collective.parse`).

    Source: docs/architecture.md, "Quality bar" (bad input names the input and what would be accepted).

    >>> from directcoll.topology import parse
    >>> require_alltoall(parse("ring:4"), "alltoall", "dor", {})
    4
    """
    if Collective.parse(collective) is not Collective.ALLTOALL:
        raise UnsupportedShapeError(f"{name} serves only alltoall, not {collective}")
    unknown = sorted(set(options) - set(accepted))
    if unknown:
        raise UnsupportedShapeError(f"{name}: unknown option(s) {', '.join(unknown)}; accepted: "
                                    f"{', '.join(accepted) or 'none'}")
    if topology.num_compute < 2:
        raise UnsupportedShapeError(f"{name}: an all-to-all needs at least 2 ranks, {topology.spec} has "
                                    f"{topology.num_compute}")
    return topology.num_compute
