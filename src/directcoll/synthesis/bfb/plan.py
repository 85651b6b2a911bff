"""BFB's plan: which in-links of every node can bring every source's shard in which step, and the LP each
(node, step) solves (Zhao et al. Sec. 6.1).

Allgather is a simultaneous broadcast from every node. BFB makes it breadth-first: in step t (1..D, D the
diameter) every node u receives the shard of every v at distance d(v, u) = t, through in-links (w -> u) whose
tail w already holds it (d(v, w) = t - 1). :func:`plan_node` groups u's sources by step and by their set of
feasible in-links and asks :class:`~directcoll.synthesis.bfb.lp.LoadLPs` for the loads. On a Cayley topology
(``Topology.port_offsets``: tori, rings, hypercubes, circulants, Hamming graphs, ...) whose links' values depend on
the port only (:func:`translation_invariant`), node 0's plan is computed and translated to every node, i.e. one LP
per step and vertex orbit (Sec. 6.1 "vertex-transitive"). :func:`t_b` is eq. (2) of the loads.

Source: Zhao et al. (NSDI'25) Sec. 6.1 (BFB, LP (1), eq. (2), "vertex-transitive"), App. E.1 (T_L = D, Theorem 15).

>>> from directcoll.topology import parse
>>> g = link_graph(parse("ring:4"), False)
>>> plans, lps, translated = plan_nodes(g, None)
>>> translated, plans[0].group_step.tolist(), round(float(t_b(g, plans, lps)), 4)  # 2 groups at distance 1
(True, [1, 1, 2], 0.75)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from directcoll.errors import ScheduleError, UnsupportedShapeError
from directcoll.synthesis.bfb.lp import LoadLPs
from directcoll.topology.model import Topology
from directcoll.topology.paths import LinkSet, bfs_distances


@dataclass
class LinkGraph:
    """The links BFB broadcasts over: the topology's, or their transpose (for reduce-scatter).

    Attributes (L links, self-loops removed):
        topology: the topology; src, dst: int64 (L,) tails and heads (transposed for a reduce-scatter);
        link: int64 (L,) their link ids in the topology; rel_bw: float (L,) bandwidth / the largest bandwidth;
        rel_lat: float (L,) latency / tau (0 without a size); tau: seconds per unit of the LPs' time, one shard
        ((M/N) bytes) on the fastest link (0 without a size).

    Raises:
        Nothing: a record; :func:`link_graph` checks the topology.

    Source: Zhao et al. (NSDI'25) Sec. 6.1; App. E.3 (LP (14)'s time unit); App. B, Corollary 1.1 (the transpose).
    """

    topology: Topology
    src: np.ndarray  # (L,) tails, self-loops removed
    dst: np.ndarray  # (L,) heads
    link: np.ndarray  # (L,) link ids in the topology
    rel_bw: np.ndarray  # (L,) bandwidth / max bandwidth
    rel_lat: np.ndarray  # (L,) latency / tau (one shard's time on the fastest link, (M/N) / max bandwidth); 0 without M
    tau: float  # seconds per unit of the LPs' time (0 without a size)

    @property
    def n(self) -> int:
        """N, the number of nodes (all compute). Raises: Nothing. Source: Zhao et al. (NSDI'25) Sec. 6.1."""
        return self.topology.num_compute


def link_graph(topology: Topology, transpose: bool, size: float | None = None) -> LinkGraph:
    """The :class:`LinkGraph` of ``topology`` (``transpose``: every link reversed), at vector size ``size`` bytes.

    Returns:
        A :class:`LinkGraph`; without ``size`` its latencies are 0 (LP (14)'s limit for large M).

    Raises:
        UnsupportedShapeError: the topology has switch nodes.

    Source: Zhao et al. (NSDI'25) Sec. 6.1 (direct topologies), App. E.3 (latencies in units of one shard's time).

    >>> from directcoll.topology import parse
    >>> link_graph(parse("ring:4"), True).src[:2].tolist()
    [1, 3]
    """
    if topology.num_nodes != topology.num_compute:
        raise UnsupportedShapeError(f"bfb: {topology.spec} has switch nodes; BFB schedules direct topologies "
                                    "(every node a rank, Zhao et al. Sec. 6.1)")
    keep = np.flatnonzero(topology.link_src != topology.link_dst)
    src, dst = topology.link_src[keep], topology.link_dst[keep]
    bw = topology.link_bandwidth[keep].astype(float)
    if transpose:
        src, dst = dst, src
    if size is None:
        return LinkGraph(topology, src, dst, keep, bw / bw.max(), np.zeros(len(keep)), 0.0)
    tau = float(size / topology.num_compute / bw.max())
    return LinkGraph(topology, src, dst, keep, bw / bw.max(), topology.link_latency[keep].astype(float) / tau, tau)


def distances(g: LinkGraph) -> np.ndarray:
    """Hop distances between all nodes along g's links (:func:`directcoll.topology.paths.bfs_distances`).

    Returns:
        int64 (N, N), dist[v, x] = hops from v to x.

    Raises:
        ResourceError: the dense matrix would exceed the memory budget (checked first).

    Source: Zhao et al. (NSDI'25) Sec. 6.1 (step t delivers the shards of the nodes at distance t).
    """
    return bfs_distances(LinkSet(g.n, g.src, g.dst, spec=g.topology.spec))


def distances_to(g: LinkGraph, node: int) -> np.ndarray:
    """Hop distances to ``node`` along g's links (one BFS on the reversed links).

    Returns:
        int64 (N,), hops from every node to ``node``.

    Raises:
        Nothing of ours: one BFS of N entries.

    Source: Zhao et al. (NSDI'25) Sec. 6.1 ("vertex-transitive": node 0's distances serve every node).
    """
    return bfs_distances(LinkSet(g.n, g.src, g.dst, spec=g.topology.spec), [node], reverse=True)[0]


@dataclass
class NodePlan:
    """Node u's side of the allgather: its in-links and, per group of sources, the step and LP row.

    Attributes (K in-links, S sources, G groups):
        u: the node; in_links: int64 (K,) indices into the :class:`LinkGraph`'s links; sources: int64 (S,) u's
        sources sorted by group; group_size, group_step (1-based), group_lp, group_row: int64 (G,) sources per
        group, its step, its LP's id in :class:`~directcoll.synthesis.bfb.lp.LoadLPs` and its pattern row there.

    Raises:
        Nothing: a record made by :func:`plan_node`.

    Source: Zhao et al. (NSDI'25) Sec. 6.1 (LP (1) per (u, t)).
    """

    u: int
    in_links: np.ndarray  # (K,) indices into the LinkGraph's links
    sources: np.ndarray  # (S,) sources of u, sorted by group
    group_size: np.ndarray  # (G,) sources per group
    group_step: np.ndarray  # (G,) step t (1-based) of the group
    group_lp: np.ndarray  # (G,) LP id
    group_row: np.ndarray  # (G,) pattern row in that LP


def plan_node(g: LinkGraph, u: int, dist_to_u: np.ndarray, dist_to_tails: np.ndarray, in_links: np.ndarray,
               lps: LoadLPs) -> NodePlan:
    """Node u's plan: its sources grouped by step and feasible in-links, each step's LP solved by ``lps``.

    Args:
        g: the links; u: the node; dist_to_u: int (N,) d(v, u); dist_to_tails: int (N, K) d(v, tail of in-link k);
        in_links: int (K,) u's in-links (indices into g's links); lps: the LPs, shared by every node.

    Returns:
        A :class:`NodePlan`.

    Raises:
        ScheduleError: some source has no in-neighbour of u one hop closer (impossible by BFS; a guard).
        SolverError: HiGHS fails on a load-balancing LP.

    Source: Zhao et al. (NSDI'25) Sec. 6.1 (in-links (w, u) with d(v, w) = t - 1 feed v's shard at step t).
    """
    feasible = dist_to_tails == (dist_to_u - 1)[:, None]  # (N, K): link k can bring v's shard to u
    sources = np.flatnonzero(dist_to_u > 0)
    if np.any(~feasible[sources].any(axis=1)):  # impossible by BFS, kept as a guard
        raise ScheduleError(f"bfb: node {u} has no in-neighbour one hop closer to some source")
    rows = feasible[sources]
    if rows.shape[1] <= 62:
        pattern = rows @ (np.int64(1) << np.arange(rows.shape[1], dtype=np.int64))
    else:
        _, pattern = np.unique(np.packbits(rows, axis=1), axis=0, return_inverse=True)
        pattern = pattern.ravel()
    step = dist_to_u[sources]
    order = np.lexsort((sources, pattern, step))
    sources, pattern, step, rows = sources[order], pattern[order], step[order], rows[order]
    new = np.r_[True, (pattern[1:] != pattern[:-1]) | (step[1:] != step[:-1])]
    first = np.flatnonzero(new)
    size = np.diff(np.r_[first, len(sources)])
    g_step = step[first]
    g_lp = np.empty(len(first), np.int64)
    g_row = np.empty(len(first), np.int64)
    bounds = np.flatnonzero(np.r_[True, g_step[1:] != g_step[:-1], True])
    rel_bw, rel_lat = g.rel_bw[in_links], g.rel_lat[in_links]
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):  # one LP per step t
        g_lp[a:b] = lps.solve(np.ascontiguousarray(rows[first[a:b]]), size[a:b], rel_bw, rel_lat)
        g_row[a:b] = np.arange(b - a)
    return NodePlan(u, in_links, sources, size, g_step, g_lp, g_row)


def step_max(plans: list[NodePlan], per_lp) -> np.ndarray:
    """The largest value of ``per_lp`` over all nodes' LPs of every step.

    Returns:
        float (D + 1,): index t is step t (1-based; index 0 unused).

    Raises:
        Nothing: numpy on the plans given.

    Source: Zhao et al. (NSDI'25) Sec. 6.1, eq. (2) (a step lasts as long as its most loaded link).
    """
    values = np.asarray(per_lp)
    step_time = np.zeros(max(int(p.group_step.max()) for p in plans) + 1)
    for plan in plans:
        np.maximum.at(step_time, plan.group_step, values[plan.group_lp])
    return step_time


def t_b(g: LinkGraph, plans: list[NodePlan], lps: LoadLPs, per_lp=None) -> float:
    """Eq. (2): per step the most loaded link over all nodes, summed over the steps.

    Returns:
        T_B in units of M/B (B the node bandwidth), a float; ``per_lp`` replaces the LPs' times (e.g. the relaxed
        ones of App. E.2).

    Raises:
        Nothing: arithmetic on the plans given.

    Source: Zhao et al. (NSDI'25) Sec. 6.1, eq. (2).
    """
    step_time = step_max(plans, lps.times if per_lp is None else per_lp)
    return float(step_time.sum()) * g.topology.node_bandwidth / g.n / g.topology.link_bandwidth.max()


def translation_invariant(topo: Topology) -> bool:
    """BFB plans by translation: a Cayley topology, link values depending only on the port (node 0's LPs serve
    every node). Returns: a bool. Raises: Nothing. Source: Zhao et al. (NSDI'25) Sec. 6.1 ("vertex-transitive").

    >>> from directcoll.topology import parse
    >>> translation_invariant(parse("torus:4x4")), translation_invariant(parse("mesh:4x4"))
    (True, False)
    """
    if not topo.is_cayley:
        return False
    bw = topo.link_bandwidth.reshape(topo.num_compute, -1)
    lat = topo.link_latency.reshape(topo.num_compute, -1)
    return bool(np.all(bw == bw[0]) and np.all(lat == lat[0]))


def plan_nodes(g: LinkGraph, chunks: int | None, drop_slow_links: bool = True) -> tuple[list[NodePlan], LoadLPs, bool]:
    """Every node's plan and the LPs; on translation-invariant topologies only node 0's.

    Returns:
        (plans, lps, translated): a list of :class:`NodePlan` (node 0's alone when ``translated``), the
        :class:`~directcoll.synthesis.bfb.lp.LoadLPs` and whether node 0's plan stands for every node's.

    Raises:
        SolverError, ScheduleError: as :func:`plan_node`.
        ResourceError: the all-pairs distances (a non-Cayley topology) would exceed the memory budget.

    Source: Zhao et al. (NSDI'25) Sec. 6.1 (one LP per step and vertex orbit on vertex-transitive topologies).
    """
    n, topo = g.n, g.topology
    lps = LoadLPs(chunks, drop_slow_links=drop_slow_links)
    order = np.argsort(g.dst, kind="stable")
    in_start = np.searchsorted(g.dst[order], np.arange(n + 1))
    if translation_invariant(topo):  # one BFS (to node 0), one node's LPs, then translation
        to0 = distances_to(g, 0)
        in_links = order[in_start[0]:in_start[1]]
        tails = g.src[in_links]
        dist_to_tails = to0[topo.offset(tails[None, :], np.arange(n)[:, None])]  # d(v, w) = d(v - w, 0)
        return [plan_node(g, 0, to0, dist_to_tails, in_links, lps)], lps, True
    dist = distances(g)
    plans = []
    for u in range(n):
        in_links = order[in_start[u]:in_start[u + 1]]
        plans.append(plan_node(g, u, dist[:, u], dist[:, g.src[in_links]], in_links, lps))
    return plans, lps, False
