"""All-to-all schedules: the direct all-to-all and the path-based baselines of Basu et al. (Sec. 4-5).

* ``direct`` (Sec. 4 baseline): every rank sends each other rank its block in one step, as NCCL and Open MPI
  do, and the network routes the N(N-1) messages (minimal paths, or DOR when simulated with
  ``--routing dor``).

The other algorithms are **path-based schedules** (Basu Sec. 3.2.1): one step in which every ordered pair
(i, j) sends block i N + j as one or more transfers i -> j, each carrying a fraction of the block along an
explicit route (``Schedule.route_offsets`` / ``route_links``: the link ids of one path of the topology the
schedule was built for). The step simulator follows those routes instead of routing the transfer itself.

* ``dor``: dimension-order routing (Basu Sec. 5.2, ref. [17]) on grids: one path per pair from
  :func:`directcoll.topology.routing.dor_route` (dimension 0 first; on wrapping dimensions the shorter way,
  ties "+").
* ``sssp``: Domke, Hoefler and Nagel's SSSP routing (IPDPS'11, Basu ref. [19]; Basu Sec. 5.2: "iteratively
  computes shortest paths through a graph whose link weights reflect the additional congestion caused due to
  each iteration"). Destinations are taken one at a time (0, 1, ..., N-1); for destination d, Dijkstra on the
  link-weight graph gives a shortest-path in-tree towards d and every source follows it (destination-based
  routing, as a forwarding table needs); then every link's weight grows by the load just routed over it (one
  block per route, divided by the link's bandwidth relative to the fastest). Variants: ``minimal`` (default)
  starts every link at a weight larger than all the load that can ever be added, so every route is a
  minimal-hop path and the weights only choose, among minimal paths, the least loaded one; ``nonminimal``
  starts at weight 1 (one block's load), so a route detours round loaded links when that costs less than its
  extra hops.
* ``ewsp``: equal weight over all shortest paths (Basu Sec. 5.2 and Fig. 8): pair (i, j) with sigma shortest
  paths sends 1/sigma of its block on each of them (exact fractions; the denominator is the lcm of the path
  counts). The link loads are exactly those of :func:`directcoll.topology.routing.link_loads` (even split over
  all minimal paths). The paths are enumerated, so a pair with more than ``max_paths`` (default
  :data:`MAX_PATHS_PER_PAIR`) shortest paths is refused (torus:16x16 has 51,480 between antipodes).
* ``ilp-disjoint``: Basu's ILP baseline (Sec. 5.2): one path per pair chosen from a small candidate set so
  that the largest link load (over bandwidth) is least, solved as a mixed-integer program with HiGHS (binary
  x_p per candidate path, sum of a pair's x_p = 1, load_e(x) <= z cap_e for every link, minimize z). Variant
  ``disjoint`` (default): up to ``candidates`` (default :data:`ILP_CANDIDATES`) link-disjoint paths per pair,
  found as successive shortest paths each avoiding the links of the ones before (a maximal, not necessarily
  maximum, disjoint set; Basu's ILP-disjoint); ``shortest``: up to ``candidates`` of the pair's shortest
  paths, spread over their enumeration order (Basu's ILP-shortest). NP-hard: refused above
  :data:`ILP_MAX_RANKS` ranks; HiGHS stops at ``time_limit`` seconds (default :data:`ILP_TIME_LIMIT`) with its
  best solution and the schedule's meta records the status, the objective and the MIP's lower bound.

Every schedule's meta has ``max_link_load``: the largest link load in blocks of one pair per unit of relative
bandwidth (:func:`alltoall_link_loads`), so ``size / N * max_link_load / b_max`` is its bandwidth time.
"""

from __future__ import annotations

from math import lcm

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra, shortest_path

from directcoll.algorithms.registry import Algorithm, register
from directcoll.errors import ScheduleError, TopologyError, UnsupportedShapeError
from directcoll.lp import LinearProgram
from directcoll.lp import solve as lp_solve
from directcoll.schedule.ir import COPY, Collective, Schedule, ScheduleBuilder, reorder_csr
from directcoll.topology.model import Topology
from directcoll.topology.paths import bfs_distances, path_counts
from directcoll.topology.routing import dor_route

#: ``ewsp`` / ``ilp-disjoint:shortest`` refuse a pair with more shortest paths than this (they are enumerated)
MAX_PATHS_PER_PAIR = 1024
#: ``ilp-disjoint`` refuses more ranks than this (the MIP is NP-hard; Basu Sec. 5.3 solves it up to N = 44)
ILP_MAX_RANKS = 16
#: candidate paths per pair of ``ilp-disjoint``
ILP_CANDIDATES = 4
#: seconds HiGHS may spend on the ``ilp-disjoint`` MIP before it returns its best solution
ILP_TIME_LIMIT = 30.0
#: topology kinds dimension-order routing serves (:func:`directcoll.topology.routing.dor_route`)
DOR_KINDS = ("torus", "mesh", "ring", "hypercube", "hyperx")


# -- direct --------------------------------------------------------------------------------------------------------
def direct_alltoall(nranks: int) -> Schedule:
    """N(N-1) point-to-point copies in one step: block i N + j from rank i to rank j (k = 1 block per pair).

    Raises:
        UnsupportedShapeError: nranks < 2.
    """
    if nranks < 2:
        raise UnsupportedShapeError(f"direct all-to-all needs at least 2 ranks, got {nranks}")
    i, j = np.divmod(np.arange(nranks * nranks), nranks)
    off = i != j
    b = ScheduleBuilder(Collective.ALLTOALL, nranks, nranks * nranks)
    block = (i * nranks + j)[off]
    b.add(0, i[off], j[off], COPY, block, block + 1)
    return b.build(meta={"algorithm": "direct", "variant": "direct"})


def build_direct(topology: Topology, collective, *, variant=None, ports=None, **options) -> Schedule:
    """Registry builder: the direct all-to-all on the topology's compute nodes. Raises UnsupportedShapeError for
    another collective or options."""
    if options:
        raise UnsupportedShapeError(f"direct takes no options; got {', '.join(sorted(options))}")
    if Collective.parse(collective) is not Collective.ALLTOALL:
        raise UnsupportedShapeError(f"direct serves only alltoall, not {collective}")
    return direct_alltoall(topology.num_compute)


register(Algorithm(
    name="direct",
    build=build_direct,
    collectives=("alltoall",),
    variants=("direct",),
    topologies="any (the network routes every pair's message)",
    summary="all-to-all as N-1 point-to-point sends per rank in one step (NCCL / Open MPI; Basu et al. baseline)",
))


# -- path-based schedules ------------------------------------------------------------------------------------------
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
        ScheduleError: a pair missing or over- / under-covered, or a route that is not a path from its source to
            its destination in ``topology``.
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
    relative bandwidth (link bandwidth / the fastest link's): float64 (L,). Its maximum times m / b_max is the
    schedule's bandwidth time in the step model.

    Raises:
        ScheduleError: the schedule is not an all-to-all with explicit routes.
    """
    if schedule.collective is not Collective.ALLTOALL or schedule.route_offsets is None:
        raise ScheduleError("alltoall_link_loads needs an all-to-all schedule with explicit routes")
    counts = np.diff(schedule.route_offsets)
    per_transfer = schedule.transfer_size * schedule.nranks  # fraction of one pair's block
    load = np.bincount(schedule.route_links, weights=np.repeat(per_transfer, counts), minlength=topology.num_links)
    return load / (topology.link_bandwidth / topology.link_bandwidth.max())


def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    i, j = np.divmod(np.arange(n * n, dtype=np.int64), n)
    return i[i != j], j[i != j]


def _csr(lengths) -> np.ndarray:
    """CSR offsets of rows with these lengths."""
    return np.r_[0, np.cumsum(lengths)].astype(np.int64)


def _require(topology: Topology, collective, name: str, options: dict, accepted=()) -> int:
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


# -- DOR -----------------------------------------------------------------------------------------------------------
def dor_alltoall(topology: Topology) -> Schedule:
    """All-to-all with every pair's block on its dimension-order route (one path per pair; Basu Sec. 5.2,
    Dally & Towles' DOR [17]): correct dimension 0, then 1, ...; wrapping dimensions the shorter way (ties "+"),
    HyperX and hypercube dimensions in one hop.

    Raises:
        UnsupportedShapeError: a topology outside :data:`DOR_KINDS` (no grid, HammingMesh, punctured, ...) or
            one missing a link its routes need.
    """
    n = topology.num_compute
    if topology.kind not in DOR_KINDS or topology.shape is None or n < 2:
        raise UnsupportedShapeError(f"dor: dimension-order routing needs a grid topology ({', '.join(DOR_KINDS)}); "
                                    f"{topology.spec} is a {topology.kind} topology")
    src, dst = _pairs(n)
    try:
        if topology.is_cayley:  # one route per offset from node 0, translated to every source
            off = topology.offset(src, dst)
            lengths = np.zeros(len(src), np.int64)
            rows = [None] * len(src)
            for o in range(1, n):
                route = dor_route(topology, 0, o)[0]
                sel = np.flatnonzero(off == o)
                lengths[sel] = len(route)
                for i, r in zip(sel, topology.translate_links(route[None, :], src[sel][:, None]), strict=True):
                    rows[i] = r
            links = np.concatenate(rows)
        else:
            per = [dor_route(topology, int(s), int(d))[0] for s, d in zip(src, dst, strict=True)]
            lengths, links = np.array([len(r) for r in per]), np.concatenate(per)
    except TopologyError as exc:
        raise UnsupportedShapeError(f"dor: {exc}") from None
    return path_alltoall(topology, src, dst, np.ones(len(src), np.int64), _csr(lengths), links,
                         meta={"algorithm": "dor", "variant": "dor"})


def build_dor(topology: Topology, collective, *, variant=None, ports=None, **options) -> Schedule:
    """Registry builder of :func:`dor_alltoall`."""
    _require(topology, collective, "dor", options)
    return dor_alltoall(topology)


# -- SSSP ----------------------------------------------------------------------------------------------------------
SSSP_VARIANTS = ("minimal", "nonminimal")


def sssp_alltoall(topology: Topology, variant: str = "minimal") -> Schedule:
    """All-to-all on Domke et al.'s SSSP routes (the module docstring; Basu Sec. 5.2 baseline [19]).

    For d = 0, ..., N-1: Dijkstra towards d on the current link weights gives every node one next link towards
    d (parallel links: the lightest), every compute source follows them, and every link's weight grows by the
    routes to d it carries divided by its relative bandwidth. ``minimal`` starts every weight at
    W0 = V N^2 / min relative bandwidth + 1, more than any path's added load, so routes are minimal-hop paths;
    ``nonminimal`` starts at 1.

    Raises:
        UnsupportedShapeError: an unknown variant or fewer than 2 ranks.
    """
    if variant not in SSSP_VARIANTS:
        raise UnsupportedShapeError(f"sssp: unknown variant {variant!r}; accepted: {', '.join(SSSP_VARIANTS)}")
    n, v = topology.num_compute, topology.num_nodes
    if n < 2:
        raise UnsupportedShapeError(f"sssp: an all-to-all needs at least 2 ranks, {topology.spec} has {n}")
    cap = topology.link_bandwidth / topology.link_bandwidth.max()
    w0 = v * n * n / cap.min() + 1.0 if variant == "minimal" else 1.0
    weight = np.full(topology.num_links, w0)
    u_of, v_of = topology.link_src, topology.link_dst
    key = u_of * v + v_of
    out_src, out_dst, out_len, out_links = [], [], [], []
    for d in range(n):
        # lightest link of every (u, v) node pair, and the reversed graph for distances towards d
        order = np.lexsort((weight, key))
        first = order[np.r_[True, key[order][1:] != key[order][:-1]]]
        graph = sp.csr_matrix((weight[first], (v_of[first], u_of[first])), shape=(v, v))
        dist, pred = dijkstra(graph, directed=True, indices=d, return_predecessors=True)
        sources = np.delete(np.arange(n), d)
        if np.isinf(dist[sources]).any():
            raise TopologyError(f"sssp: {topology.spec}: some rank cannot reach rank {d}")
        pair_keys = key[first]
        cur, hops, links = sources.copy(), np.zeros(len(sources), np.int64), []
        active = np.arange(len(sources))
        while len(active):
            u = cur[active]
            nxt = pred[u]
            link = first[np.searchsorted(pair_keys, u * v + nxt)]
            links.append((active, hops[active], link))
            hops[active] += 1
            cur[active] = nxt
            active = active[nxt != d]
        who = np.concatenate([a for a, _, _ in links])
        at = np.concatenate([h for _, h, _ in links])
        lk = np.concatenate([k for _, _, k in links])
        seq = lk[np.lexsort((at, who))]
        weight += np.bincount(lk, minlength=topology.num_links) / cap
        out_src.append(sources)
        out_dst.append(np.full(len(sources), d))
        out_len.append(hops)
        out_links.append(seq)
    src, dst, lengths = (np.concatenate(a) for a in (out_src, out_dst, out_len))
    ro = _csr(lengths)
    order = np.lexsort((dst, src))  # pairs in rank order
    ro, idx = reorder_csr(ro, order)
    links = np.concatenate(out_links)[idx]
    return path_alltoall(topology, src[order], dst[order], np.ones(len(src), np.int64), ro, links,
                         meta={"algorithm": "sssp", "variant": variant})


def build_sssp(topology: Topology, collective, *, variant=None, ports=None, **options) -> Schedule:
    """Registry builder of :func:`sssp_alltoall`."""
    _require(topology, collective, "sssp", options)
    return sssp_alltoall(topology, variant or "minimal")


# -- all shortest paths and EwSP -----------------------------------------------------------------------------------
def shortest_paths(topology: Topology, max_paths: int = MAX_PATHS_PER_PAIR):
    """Every shortest path between every ordered pair of compute nodes, enumerated over each source's BFS DAG
    (Cayley topologies: from node 0, translated to every source).

    Returns:
        (src, dst, route_offsets, route_links, count): int64 (P,), (P,), (P + 1,), (R,) with the paths of a pair
        consecutive and pairs in rank order, and count (P,), the number of shortest paths of each path's pair.

    Raises:
        UnsupportedShapeError: a pair with more than ``max_paths`` shortest paths (the message names it).
    """
    n = topology.num_compute
    sources = [0] if topology.is_cayley else range(n)
    parts = []
    for s in sources:
        dist = bfs_distances(topology, [s])[0]
        sigma = path_counts(topology, dist)
        if sigma[:n].max() > max_paths:
            t = int(np.argmax(sigma[:n]))
            raise UnsupportedShapeError(f"{topology.spec}: ranks {s} and {t} have {sigma[t]:.0f} shortest paths, "
                                        f"more than max_paths = {max_paths} that are enumerated")
        for dst, routes in _paths_from(topology, s, dist):
            if topology.is_cayley:
                every = np.arange(n)
                moved = topology.translate_links(routes[None, :, :], every[:, None, None])
                parts.append((np.repeat(every, len(dst)), topology.translate(dst[None, :], every[:, None]).ravel(),
                              moved.reshape(-1, routes.shape[1])))
            else:
                parts.append((np.full(len(dst), s), dst, routes))
    src = np.concatenate([p[0] for p in parts])
    dst = np.concatenate([p[1] for p in parts])
    lengths = np.concatenate([np.full(len(p[0]), p[2].shape[1]) for p in parts])
    flat = [p[2] for p in parts]
    ro = _csr(lengths)
    links = np.concatenate([f.ravel() for f in flat])
    order = np.lexsort((dst, src))
    ro2, idx = reorder_csr(ro, order)
    src, dst = src[order], dst[order]
    pair = src * n + dst
    count = np.bincount(pair, minlength=n * n)[pair]
    return src, dst, ro2, links[idx], count


def _paths_from(topology: Topology, s: int, dist: np.ndarray):
    """Yield (destinations, routes (P, k)) of the shortest paths from s of every length k >= 1 that end at a
    compute node, by extending layer by layer along the BFS DAG of s."""
    n = topology.num_compute
    u, w = topology.link_src, topology.link_dst
    dag = np.flatnonzero((dist[u] >= 0) & (dist[w] == dist[u] + 1))
    dag = dag[np.argsort(u[dag], kind="stable")]
    start = np.searchsorted(u[dag], np.arange(topology.num_nodes + 1))
    routes = np.zeros((1, 0), np.int64)
    ends = np.array([s])
    while len(ends):
        deg = start[ends + 1] - start[ends]
        parent = np.repeat(np.arange(len(ends)), deg)
        first = np.repeat(start[ends] - np.r_[0, np.cumsum(deg)[:-1]], deg)
        link = dag[first + np.arange(len(parent))]
        routes = np.concatenate([routes[parent], link[:, None]], axis=1)
        ends = w[link]
        mine = ends < n
        if mine.any():
            yield ends[mine], routes[mine]


def ewsp_alltoall(topology: Topology, max_paths: int = MAX_PATHS_PER_PAIR) -> Schedule:
    """All-to-all that splits every pair's block equally over all its shortest paths (Basu's EwSP baseline,
    Sec. 5.2): 1/sigma of the block on each of the sigma paths, exactly (denominator lcm of the sigmas).

    Raises:
        UnsupportedShapeError: a pair with more than ``max_paths`` shortest paths, or a denominator beyond
            2^62 / N^2 (exact pieces would overflow int64).
    """
    n = topology.num_compute
    if n < 2:
        raise UnsupportedShapeError(f"ewsp: an all-to-all needs at least 2 ranks, {topology.spec} has {n}")
    src, dst, ro, links, count = shortest_paths(topology, max_paths)
    den = lcm(*np.unique(count).tolist())
    if den > 2**62 // (n * n):
        raise UnsupportedShapeError(f"ewsp: {topology.spec}: the lcm of the path counts ({den}) is too large for "
                                    "exact pieces")
    return path_alltoall(topology, src, dst, den // count, ro, links, denominator=den,
                         meta={"algorithm": "ewsp", "variant": "ewsp", "max_paths_per_pair": int(count.max())})


def build_ewsp(topology: Topology, collective, *, variant=None, ports=None, **options) -> Schedule:
    """Registry builder of :func:`ewsp_alltoall` (option ``max_paths``)."""
    _require(topology, collective, "ewsp", options, ("max_paths",))
    return ewsp_alltoall(topology, int(options.get("max_paths", MAX_PATHS_PER_PAIR)))


# -- ILP -----------------------------------------------------------------------------------------------------------
ILP_VARIANTS = ("disjoint", "shortest")


def disjoint_paths(topology: Topology, s: int, t: int, k: int) -> list[np.ndarray]:
    """Up to k link-disjoint paths s -> t (link ids): successive shortest paths, each avoiding the links of the
    ones before (a maximal set of disjoint paths, shortest first)."""
    v = topology.num_nodes
    free = np.ones(topology.num_links, dtype=bool)
    out = []
    for _ in range(k):
        idx = np.flatnonzero(free)
        graph = sp.csr_matrix((np.ones(len(idx)), (topology.link_src[idx], topology.link_dst[idx])), shape=(v, v))
        dist, pred = shortest_path(graph, unweighted=True, directed=True, indices=s, return_predecessors=True)
        if np.isinf(dist[t]):
            break
        nodes = [t]
        while nodes[-1] != s:
            nodes.append(int(pred[nodes[-1]]))
        nodes = nodes[::-1]
        path = []
        for a, b in zip(nodes[:-1], nodes[1:], strict=True):
            e = int(np.flatnonzero(free & (topology.link_src == a) & (topology.link_dst == b))[0])
            free[e] = False
            path.append(e)
        out.append(np.array(path, np.int64))
    return out


def ilp_alltoall(topology: Topology, variant: str = "disjoint", *, candidates: int = ILP_CANDIDATES,
                 time_limit: float = ILP_TIME_LIMIT) -> Schedule:
    """All-to-all on one path per pair chosen by a MIP that minimizes the largest link load (Basu Sec. 5.2's
    ILP baseline): binary x_p for every candidate path p, sum_{p of (i, j)} x_p = 1 for every pair, and
    sum_{p through e} x_p <= z cap_e for every link e (cap_e: bandwidth relative to the fastest link);
    minimize z. Candidates: ``disjoint`` (Basu's ILP-disjoint) up to ``candidates`` link-disjoint paths per
    pair (:func:`disjoint_paths`); ``shortest`` (ILP-shortest) up to ``candidates`` shortest paths. HiGHS
    starts from the first candidate of every pair (a shortest path) and returns its best solution within
    ``time_limit`` s; meta records ``ilp_status``, ``ilp_objective`` (= max_link_load), ``ilp_bound`` and
    ``ilp_seconds``.

    Raises:
        UnsupportedShapeError: more than :data:`ILP_MAX_RANKS` ranks, an unknown variant, candidates < 1,
            or (``shortest``) a pair with more than :data:`MAX_PATHS_PER_PAIR` shortest paths.
        SolverError: HiGHS fails or the MIP is infeasible; SolverLimitError: the time limit stopped it with no
            feasible point (never, as it starts from a feasible one).
    """
    n = topology.num_compute
    if variant not in ILP_VARIANTS:
        raise UnsupportedShapeError(f"ilp-disjoint: unknown variant {variant!r}; accepted: {', '.join(ILP_VARIANTS)}")
    if not 2 <= n <= ILP_MAX_RANKS:
        raise UnsupportedShapeError(f"ilp-disjoint: the MIP is solved for 2..{ILP_MAX_RANKS} ranks only (NP-hard); "
                                    f"{topology.spec} has {n}")
    if candidates < 1:
        raise UnsupportedShapeError(f"ilp-disjoint: candidates must be >= 1, got {candidates}")
    src, dst, paths = [], [], []
    if variant == "disjoint":
        for s, t in zip(*_pairs(n), strict=True):
            for path in disjoint_paths(topology, int(s), int(t), candidates):
                src.append(s)
                dst.append(t)
                paths.append(path)
        src, dst = np.array(src, np.int64), np.array(dst, np.int64)
        lengths = np.array([len(p) for p in paths])
        ro, links = _csr(lengths), np.concatenate(paths)
    else:
        s_all, d_all, ro_all, l_all, count = shortest_paths(topology)
        first = np.r_[True, (s_all[1:] != s_all[:-1]) | (d_all[1:] != d_all[:-1])]
        rank = np.arange(len(s_all)) - np.maximum.accumulate(np.where(first, np.arange(len(s_all)), 0))
        take = np.minimum(count, candidates)
        # spread the chosen paths over the enumeration: path floor(c * count / take) for c < take
        chosen = (np.floor(np.arange(candidates)[None, :] * count[:, None] / take[:, None]) == rank[:, None])
        chosen &= np.arange(candidates)[None, :] < take[:, None]
        keep = np.flatnonzero(chosen.any(axis=1))
        ro, idx = reorder_csr(ro_all, keep)
        src, dst, links = s_all[keep], d_all[keep], l_all[idx]
    num_paths, num_links = len(src), topology.num_links
    cap = topology.link_bandwidth / topology.link_bandwidth.max()
    pair = src * n + dst
    pair_row = np.unique(pair, return_inverse=True)[1].ravel()
    num_pairs = int(pair_row.max()) + 1
    path_of = np.repeat(np.arange(num_paths), np.diff(ro))
    rows = np.r_[pair_row, num_pairs + links, num_pairs + np.arange(num_links)]
    cols = np.r_[np.arange(num_paths), path_of, np.full(num_links, num_paths)]
    vals = np.r_[np.ones(num_paths), np.ones(len(links)), -cap]
    a = sp.csc_matrix((vals, (rows, cols)), shape=(num_pairs + num_links, num_paths + 1))
    a.sum_duplicates()
    integer = np.r_[np.ones(num_paths, dtype=bool), False]
    lp = LinearProgram(a, np.r_[np.zeros(num_paths), 1.0], np.zeros(num_paths + 1),
                       np.r_[np.ones(num_paths), np.inf], np.r_[np.ones(num_pairs), np.full(num_links, -np.inf)],
                       np.r_[np.ones(num_pairs), np.zeros(num_links)], integer=integer,
                       name=f"ilp-disjoint MIP ({variant}, {num_paths} paths) on {topology.spec}")
    start_x = np.zeros(num_paths + 1)
    start_x[np.flatnonzero(np.r_[True, pair[1:] != pair[:-1]])] = 1.0  # every pair's first candidate
    start_x[-1] = float((np.bincount(links, weights=start_x[path_of], minlength=num_links) / cap).max())
    # a time limit is part of the method: the best solution found by then is the baseline, its status says so
    sol = lp_solve(lp, options={"time_limit": float(time_limit), "random_seed": 0, "threads": 1},
                   accept_limit=True, start=start_x)
    x, status = sol.x, sol.status
    # the largest x_p of every pair (they are 0 or 1 up to HiGHS's integrality tolerance)
    order = np.lexsort((-x[:num_paths], pair_row))
    keep = np.sort(order[np.r_[True, pair_row[order][1:] != pair_row[order][:-1]]])
    ro2, idx = reorder_csr(ro, keep)
    meta = {"algorithm": "ilp-disjoint", "variant": variant, "candidates": int(candidates),
            "candidate_paths": int(num_paths), "ilp_status": status, "ilp_bound": sol.dual_bound,
            "ilp_objective": sol.objective, "ilp_seconds": round(sol.seconds, 3)}
    return path_alltoall(topology, src[keep], dst[keep], np.ones(len(keep), np.int64), ro2, links[idx], meta=meta)


def build_ilp(topology: Topology, collective, *, variant=None, ports=None, **options) -> Schedule:
    """Registry builder of :func:`ilp_alltoall` (options ``candidates``, ``time_limit``)."""
    _require(topology, collective, "ilp-disjoint", options, ("candidates", "time_limit"))
    return ilp_alltoall(topology, variant or "disjoint", candidates=int(options.get("candidates", ILP_CANDIDATES)),
                        time_limit=float(options.get("time_limit", ILP_TIME_LIMIT)))


register(Algorithm(
    name="dor",
    build=build_dor,
    collectives=("alltoall",),
    variants=("dor",),
    topologies="grids: torus, mesh, ring, hypercube, HyperX",
    summary="all-to-all on dimension-order routes, one path per pair (Basu et al. Sec. 5.2 baseline)",
))
register(Algorithm(
    name="sssp",
    build=build_sssp,
    collectives=("alltoall",),
    variants=SSSP_VARIANTS,
    topologies="any",
    summary="all-to-all on Domke et al.'s SSSP routes: per destination, shortest paths on congestion-weighted "
            "links (Basu et al. Sec. 5.2 baseline)",
))
register(Algorithm(
    name="ewsp",
    build=build_ewsp,
    collectives=("alltoall",),
    variants=("ewsp",),
    topologies=f"any with at most {MAX_PATHS_PER_PAIR} shortest paths per pair",
    summary="all-to-all split equally over every pair's shortest paths (Basu et al. EwSP baseline)",
))
register(Algorithm(
    name="ilp-disjoint",
    build=build_ilp,
    collectives=("alltoall",),
    variants=ILP_VARIANTS,
    topologies=f"any with at most {ILP_MAX_RANKS} ranks",
    summary="all-to-all on one path per pair chosen by a HiGHS MIP minimizing the largest link load (Basu et al. "
            "ILP-disjoint / ILP-shortest baseline)",
    aliases=("ilp",),
))
