"""Breadth-first-broadcast (BFB) schedules (Zhao et al., Sec. 6.1, LP (1) and eq. (2); App. E.2, E.3).

Allgather is a simultaneous broadcast from every node. BFB makes it breadth-first: in step t (1..D, D the
diameter) every node u receives the shard of every v at distance d(v, u) = t, through in-links (w -> u) whose
tail w already holds it (d(v, w) = t - 1). How much of v's shard each such link carries is one small LP per
(u, t), LP (1) of the paper.

**Aggregated LP.** Sources whose sets of feasible in-links are equal (the same *pattern*) are interchangeable:
averaging any solution over them keeps every link load, so LP (1) has an optimum where they split alike. We
therefore solve, per (u, t), the LP over patterns p with multiplicity c_p, in link loads z[p, l] (shards)::

    minimise U  subject to
        sum_{l in p} z[p, l] = c_p                                 for every pattern p
        a_l + sum_p z[p, l] * max bw / bw(l) <= U                   for every in-link l of u   (App. E.3, LP (14))
        z >= 0

Its optimum is that of LP (1) / (14). The LP depends only on the patterns, counts, bandwidths and latencies,
so identical LPs are solved once: on a Cayley topology (``Topology.port_offsets``: tori, rings, hypercubes,
circulants, Hamming graphs, ...) whose links' values depend on the port only, node 0's schedule is computed and
translated to every node, i.e. one LP per step and vertex orbit (Sec. 6.1 "vertex-transitive"); elsewhere LPs
are cached by their exact content, and solved one after the other (cheaper than a process pool's start-up).

**LP (14), as we read it.** The text reads ``α_{w,u} + (M/N)/B_{w,u} Σ_v x_{v,(w,u),t} <= U_{u,t}`` for every
w in N^-(u): a link's time in a step is its latency plus its bytes over its bandwidth (Sec. 3's α-β model per
link). Time is measured in tau = (M/N) / max bw (one shard on the fastest link), a_l = α_l / tau with α_l the
link's latency (``Topology.link_latency``). A latency shared by all in-links (the simulator's α and per-hop
latency, uniform links) only shifts U, so a_l is taken relative to the smallest among the step's usable
in-links: uniform latencies give exactly LP (1) and the same schedule. Without a size (``size=None``) a_l = 0,
LP (14)'s limit for large M.

**The slow-link rule (App. E.3):** "α_{w,u} alone dominates U_{u,t} even though Σ_v x_{v,(w,u),t} = 0 ...
[remove] link (w, u) and [solve] the LP again." Exactly: after a solve, every in-link with a_l >= U (its
latency alone reaches the optimum, so it carries nothing) and above the smallest latency is removed and the LP
solved again, until none is left (removed links carried nothing, so every pattern stays feasible and U never
grows). An in-link that can carry none of step t's sources is left out of the latency rows from the start.

**From loads to pieces.** Every feeding link holds all of v's shard, so only amounts matter (Sec. 6.1). The
c_p shards of a pattern are laid end to end and cut at the cumulative loads of its links, so each source gets
consecutive pieces summing to one whole shard and each link exactly its load z[p, l]. Loads are made exact
rationals (:func:`~directcoll.schedule.chunking.rational_row`: ``Fraction.limit_denominator``, the largest of
each pattern absorbing the rounding so rows sum to c_p exactly) over one common denominator; on uniform links
their denominators divide small integers (the optimum is a ratio |J| / |links feeding J|, Theorem 19), so the
common denominator stays small.

**Discrete chunks (App. E.2).** With ``chunks=P`` every shard is cut into P equal chunks and the loads of each
pattern are rounded to whole chunks by largest remainder
(:func:`~directcoll.schedule.chunking.largest_remainder`, row sums kept): the rounding of IP (13)'s LP
relaxation (LP (1) scaled by P). A link then carries at most one chunk more per pattern than the LP asks,
within Theorem 20's bound of one chunk per source; ``meta["t_b_m_over_b_relaxed"]`` keeps the relaxation's
T_B^LP beside the rounded schedule's ``t_b_m_over_b_lp``.

Consequences (Sec. 6.1): T_L = D steps, the lowest possible (Theorem 15); data follows shortest paths only;
T_B is eq. (2), sum_t max_u (time of u's most loaded in-link in step t), optimal among BFB schedules (Theorem
16): BW-optimal on tori (Theorem 13), bidirectional rings (F.1), distance-regular graphs (F.3) and circulants
(F.4: degree 4, Conjecture 1 beyond), not on every topology (Sec. 6.2).

Source: Zhao et al. (NSDI'25) Sec. 6.1, App. E; docs/algorithms.md, "BFB schedules".
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from directcoll.errors import ScheduleError, UnsupportedShapeError
from directcoll.lp import LinearProgram, Solver
from directcoll.schedule.chunking import common_denominator, largest_remainder, rational_row
from directcoll.schedule.ir import COPY, Collective, Schedule, ScheduleBuilder
from directcoll.schedule.ops import concat, relabel, reverse
from directcoll.synthesis.bfb_pieces import merge_adjacent, node_pieces
from directcoll.topology.model import Topology
from directcoll.topology.paths import LinkSet, bfs_distances

#: Largest denominator accepted when turning an LP load into a rational.
MAX_PIECE_DENOMINATOR = 10_000
#: Largest common denominator of a whole schedule (numerators are int64 and the verifier cuts segments).
MAX_SCHEDULE_DENOMINATOR = 10**6
#: With ``chunks``: an LP load this close below a whole number of chunks counts as it.
WHOLE_CHUNK_TOLERANCE = 1e-9

VARIANTS = ("bandwidth",)


@dataclass
class _Graph:
    """The links BFB broadcasts over: the topology's, or their transpose (for reduce-scatter)."""

    topology: Topology
    src: np.ndarray  # (L,) tails, self-loops removed
    dst: np.ndarray  # (L,) heads
    link: np.ndarray  # (L,) link ids in the topology
    rel_bw: np.ndarray  # (L,) bandwidth / max bandwidth
    rel_lat: np.ndarray  # (L,) latency / tau (one shard's time on the fastest link, (M/N) / max bandwidth); 0 without M
    tau: float  # seconds per unit of the LPs' time (0 without a size)

    @property
    def n(self) -> int:
        return self.topology.num_compute


def _graph(topology: Topology, transpose: bool, size: float | None = None) -> _Graph:
    if topology.num_nodes != topology.num_compute:
        raise UnsupportedShapeError(f"bfb: {topology.spec} has switch nodes; BFB schedules direct topologies "
                                    "(every node a rank, Zhao et al. Sec. 6.1)")
    keep = np.flatnonzero(topology.link_src != topology.link_dst)
    src, dst = topology.link_src[keep], topology.link_dst[keep]
    bw = topology.link_bandwidth[keep].astype(float)
    if transpose:
        src, dst = dst, src
    if size is None:
        return _Graph(topology, src, dst, keep, bw / bw.max(), np.zeros(len(keep)), 0.0)
    tau = float(size / topology.num_compute / bw.max())
    return _Graph(topology, src, dst, keep, bw / bw.max(), topology.link_latency[keep].astype(float) / tau, tau)


def _distances(g: _Graph) -> np.ndarray:
    """(N, N) int64, dist[v, x] = hops from v to x along g's links (all pairs:
    :func:`directcoll.topology.paths.bfs_distances`).

    Raises:
        ResourceError: the dense matrix would exceed the memory budget (checked first).
    """
    return bfs_distances(LinkSet(g.n, g.src, g.dst, spec=g.topology.spec))


def _distances_to(g: _Graph, node: int) -> np.ndarray:
    """(N,) int64 hops from every node to ``node`` along g's links (one BFS on the reversed links)."""
    return bfs_distances(LinkSet(g.n, g.src, g.dst, spec=g.topology.spec), [node], reverse=True)[0]


class _LoadLPs:
    """The aggregated LPs of all (u, t), solved once per distinct content; loads kept as exact Fractions."""

    def __init__(self, chunks: int | None, options: dict | None = None, drop_slow_links: bool = True) -> None:
        self._solver: Solver | None = None  # one HiGHS instance for all LPs, made at the first real LP
        self._options, self.chunks, self.drop_slow_links = options, chunks, drop_slow_links
        self.solutions: list[np.ndarray] = []  # per LP: (P, K) object array of Fractions
        self.times: list[float] = []  # per LP: most loaded link's time, shards / relative bandwidth
        self.full_times: list[float] = []  # per LP: LP (14)'s U, max over used links of latency + data, in tau
        self.relaxed: list[float] = []  # per LP: the data time of the LP's own (unrounded) loads
        self.dropped: list[int] = []  # per LP: in-links removed by the slow-link rule (App. E.3)
        self._index: dict[tuple, int] = {}

    def solve(self, patterns: np.ndarray, counts: np.ndarray, rel_bw: np.ndarray, rel_lat: np.ndarray) -> int:
        """patterns: (P, K) bool feasible links, counts: (P,) sources per pattern, rel_bw / rel_lat: (K,) the
        links' relative bandwidths and latencies (in tau); returns the LP's id."""
        key = (patterns.tobytes(), patterns.shape, counts.tobytes(), rel_bw.tobytes(), rel_lat.tobytes())
        found = self._index.get(key)
        if found is None:
            found = self._index[key] = len(self.solutions)
            loads, relaxed, dropped = self._solve(patterns, counts, rel_bw, rel_lat)
            self.solutions.append(loads)
            data = loads.sum(axis=0).astype(float) / rel_bw
            self.times.append(float(data.max()))
            self.full_times.append(float((rel_lat + data)[data > 0].max()))
            self.relaxed.append(relaxed)
            self.dropped.append(dropped)
        return found

    def _solve(self, patterns, counts, rel_bw, rel_lat) -> tuple[np.ndarray, float, int]:
        """LP (14) over the patterns with the slow-link rule: (loads (P, K) Fractions, the unrounded loads'
        data time, links dropped)."""
        usable = patterns.any(axis=0)
        # App. E.3: only latency differences matter (U - min alpha is the same LP); uniform latencies give LP (1)
        alpha = np.where(usable, rel_lat - rel_lat[usable].min(), 0.0)
        active = usable.copy()
        while True:
            pi, li = np.nonzero(patterns & active)
            x = self._lp(pi, li, patterns.shape, counts, rel_bw, np.where(active, alpha, 0.0))  # removed: no row
            link_load = np.bincount(li, weights=x, minlength=patterns.shape[1])
            u = float((alpha + link_load / rel_bw)[active].max())
            # the rule: a link whose latency alone reaches U (so it carries nothing) is removed, the LP solved again
            slow = active & (alpha > 0) & (alpha >= u - 1e-9 * max(1.0, u))
            if not self.drop_slow_links or not slow.any():
                break
            active &= ~slow
        loads = np.zeros(patterns.shape, dtype=object)
        loads[:] = Fraction(0)
        for p in range(len(counts)):
            sel = np.flatnonzero(pi == p)
            if self.chunks is None:
                row = rational_row(x[sel], int(counts[p]), MAX_PIECE_DENOMINATOR)
            else:  # App. E.2: whole chunks, largest remainder, row sum c_p * P kept
                whole = largest_remainder(x[sel] * self.chunks, [int(counts[p]) * self.chunks],
                                          tolerance=WHOLE_CHUNK_TOLERANCE)
                row = [Fraction(int(w), self.chunks) for w in whole]
            if min(row) < 0:
                raise ScheduleError("bfb: rounding an LP solution to exact loads failed")
            loads[p, li[sel]] = row
        return loads, float((link_load / rel_bw).max()), int((usable & ~active).sum())

    def _lp(self, pi, li, shape, counts, rel_bw, alpha) -> np.ndarray:
        """x (nx,): the loads of entries (pi, li) minimising U subject to LP (14)'s rows (module docstring)."""
        nx, npat, nl = len(pi), len(counts), shape[1]
        if np.all(np.bincount(pi, minlength=npat) == 1):  # every pattern has a single feeding link: nothing to choose
            return counts[pi].astype(float)
        # column j < nx: pattern row pi[j] and link row npat + li[j]; column nx (U): -rel_bw on link rows
        start = np.r_[np.arange(0, 2 * nx + 1, 2), 2 * nx + nl]
        index = np.r_[np.c_[pi, npat + li].ravel(), npat + np.arange(nl)]
        a = sp.csc_matrix((np.r_[np.ones(2 * nx), -rel_bw], index, start), shape=(npat + nl, nx + 1))
        link_upper = np.zeros(nl) if not alpha.any() else -alpha * rel_bw
        lp = LinearProgram(a, np.r_[np.zeros(nx), 1.0], np.zeros(nx + 1), np.full(nx + 1, np.inf),
                           np.r_[counts.astype(float), np.full(nl, -np.inf)],
                           np.r_[counts.astype(float), link_upper],
                           name=f"BFB load-balancing LP ({npat} source groups, {nl} in-links)")
        if self._solver is None:
            self._solver = Solver(self._options)
        return np.maximum(self._solver.solve(lp).x[:nx], 0.0)


@dataclass
class _NodePlan:
    """Node u's side of the allgather: its in-links and, per group of sources, the step and LP row."""

    u: int
    in_links: np.ndarray  # (K,) indices into the _Graph's links
    sources: np.ndarray  # (S,) sources of u, sorted by group
    group_size: np.ndarray  # (G,) sources per group
    group_step: np.ndarray  # (G,) step t (1-based) of the group
    group_lp: np.ndarray  # (G,) LP id
    group_row: np.ndarray  # (G,) pattern row in that LP


def _plan_node(g: _Graph, u: int, dist_to_u: np.ndarray, dist_to_tails: np.ndarray, in_links: np.ndarray,
               lps: _LoadLPs) -> _NodePlan:
    """dist_to_u: (N,) d(v, u); dist_to_tails: (N, K) d(v, tail of in-link k)."""
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
    return _NodePlan(u, in_links, sources, size, g_step, g_lp, g_row)


def _common_denominator(lps: _LoadLPs) -> int:
    if lps.chunks is not None:
        return lps.chunks
    return common_denominator((f for sol in lps.solutions for f in sol.ravel()), MAX_SCHEDULE_DENOMINATOR,
                              what="bfb: the exact LP loads",
                              hint="pass chunks=P to round them to P chunks per shard (Zhao et al. App. E.2)")


def _assemble(g: _Graph, plans: list[_NodePlan], lps: _LoadLPs, translate_to_all: bool, meta) -> Schedule:
    n, topo = g.n, g.topology
    den = _common_denominator(lps)
    builder = ScheduleBuilder(Collective.ALLGATHER, n, n, denominator=den)
    for plan in plans:
        step, lk, start, stop = node_pieces(plan, lps.solutions, den)
        new = np.r_[True, (step[1:] != step[:-1]) | (lk[1:] != lk[:-1])]
        transfer = np.cumsum(new) - 1
        t_step, t_link = step[new] - 1, plan.in_links[lk[new]]
        if not translate_to_all:
            transfer, start, stop = merge_adjacent(transfer, start, stop)
            builder.add_pieces(t_step, g.src[t_link], g.dst[t_link], COPY, np.bincount(transfer), start, stop)
            continue
        # Cayley topology: node u's schedule is node 0's moved by u (sources, links and all)
        back = np.full(topo.num_links, -1, np.int64)
        back[g.link] = np.arange(len(g.link))
        v, off, width = start // den, start % den, stop - start
        ntr = len(t_step)
        for us in np.array_split(np.arange(n), max(1, (n * len(start)) // 2_000_000 + 1)):
            moved = back[topo.translate_links(g.link[t_link][None, :], us[:, None])].ravel()
            st = (topo.translate(v[None, :], us[:, None]) * den + off).ravel()
            tr = (np.arange(len(us))[:, None] * ntr + transfer[None, :]).ravel()
            tr, st, sp_ = merge_adjacent(tr, st, st + np.tile(width, len(us)))
            builder.add_pieces(np.tile(t_step, len(us)), g.src[moved], g.dst[moved], COPY,
                               np.bincount(tr, minlength=len(us) * ntr), st, sp_)
    return builder.build(meta={**meta, "t_b_m_over_b_lp": _t_b(g, plans, lps), "bfb_lps": len(lps.solutions),
                               **_extra_meta(g, plans, lps, translate_to_all, meta)})


def _extra_meta(g: _Graph, plans: list[_NodePlan], lps: _LoadLPs, translated: bool, meta: dict) -> dict:
    """With ``chunks``: the LP relaxation's T_B (App. E.2); with ``size``: LP (14)'s time and the dropped links."""
    extra = {}
    if "chunks" in meta:
        extra["t_b_m_over_b_relaxed"] = _t_b(g, plans, lps, lps.relaxed)
    if "size_bytes" in meta:
        step_time = _step_max(plans, lps.full_times)
        extra["bfb_time_s"] = float(step_time.sum()) * g.tau
        per_node = sum(int(np.asarray(lps.dropped)[np.unique(p.group_lp)].sum()) for p in plans)
        extra["bfb_dropped_links"] = per_node * (g.n if translated else 1)
    return extra


def _step_max(plans: list[_NodePlan], per_lp) -> np.ndarray:
    """(D + 1,) per step t (index t; 0 unused) the largest value of ``per_lp`` over all nodes' LPs of step t."""
    values = np.asarray(per_lp)
    step_time = np.zeros(max(int(p.group_step.max()) for p in plans) + 1)
    for plan in plans:
        np.maximum.at(step_time, plan.group_step, values[plan.group_lp])
    return step_time


def _t_b(g: _Graph, plans: list[_NodePlan], lps: _LoadLPs, per_lp=None) -> float:
    """Eq. (2) in units of M/B: per step the most loaded link over all nodes, summed over the steps."""
    step_time = _step_max(plans, lps.times if per_lp is None else per_lp)
    return float(step_time.sum()) * g.topology.node_bandwidth / g.n / g.topology.link_bandwidth.max()


def translation_invariant(topo: Topology) -> bool:
    """BFB plans by translation: a Cayley topology, link values depending only on the port (node 0's LPs serve
    every node). Raises: Nothing. Source: Zhao et al. (NSDI'25) Sec. 6.1 ("vertex-transitive" topologies).
    >>> from directcoll.topology import parse
    >>> translation_invariant(parse("torus:4x4")), translation_invariant(parse("mesh:4x4"))
    (True, False)
    """
    if not topo.is_cayley:
        return False
    bw = topo.link_bandwidth.reshape(topo.num_compute, -1)
    lat = topo.link_latency.reshape(topo.num_compute, -1)
    return bool(np.all(bw == bw[0]) and np.all(lat == lat[0]))


def _plan(g: _Graph, chunks: int | None, drop_slow_links: bool = True) -> tuple[list[_NodePlan], _LoadLPs, bool]:
    """Every node's plan and the LPs; on translation-invariant topologies only node 0's (third value True)."""
    n, topo = g.n, g.topology
    lps = _LoadLPs(chunks, drop_slow_links=drop_slow_links)
    order = np.argsort(g.dst, kind="stable")
    in_start = np.searchsorted(g.dst[order], np.arange(n + 1))
    if translation_invariant(topo):  # one BFS (to node 0), one node's LPs, then translation
        to0 = _distances_to(g, 0)
        in_links = order[in_start[0]:in_start[1]]
        tails = g.src[in_links]
        dist_to_tails = to0[topo.offset(tails[None, :], np.arange(n)[:, None])]  # d(v, w) = d(v - w, 0)
        return [_plan_node(g, 0, to0, dist_to_tails, in_links, lps)], lps, True
    dist = _distances(g)
    plans = []
    for u in range(n):
        in_links = order[in_start[u]:in_start[u + 1]]
        plans.append(_plan_node(g, u, dist[:, u], dist[:, g.src[in_links]], in_links, lps))
    return plans, lps, False


def _allgather_on(g: _Graph, chunks: int | None, meta: dict, drop_slow_links: bool = True) -> Schedule:
    if g.n == 1:
        return ScheduleBuilder(Collective.ALLGATHER, 1, 1).build(meta=meta)
    plans, lps, translate = _plan(g, chunks, drop_slow_links)
    return _assemble(g, plans, lps, translate, meta)


def bfb_cost(topology: Topology, collective="allgather") -> tuple[int, float]:
    """(T_L, T_B) of the BFB schedule of ``topology``, from the LP loads alone, without building the schedule.

    T_L is the diameter D(G) (App. E.1, Theorem 15); T_B is eq. (2) of the optimal loads of LP (1) (LP (14)
    with α = 0 on links of unequal bandwidth, App. E.3), exactly what :func:`bfb_allgather` puts in
    ``meta["t_b_m_over_b_lp"]``.

    Args:
        topology: a direct topology (no switch nodes).
        collective: ``allgather``; ``reduce_scatter`` (the allgather of the transposed graph, Corollary 1.1);
            or ``allreduce`` (the two added). Any other name :meth:`Collective.parse` accepts is costed as
            allgather.

    Returns:
        (T_L in steps, an int; T_B in units of M/B with B the node bandwidth, a float (numpy float64)).
        (0, 0.0) for a single node.

    Raises:
        UnsupportedShapeError: the topology has switch nodes.
        ScheduleError: an unknown collective name, or an LP solution that cannot be made exact loads.
        SolverError: HiGHS fails on a load-balancing LP.
        ResourceError: the hop-distance matrix (all pairs, on a non-Cayley topology) would exceed the memory
            budget.

    Source: Zhao et al. (NSDI'25) Sec. 6.1, LP (1) and eq. (2); App. E.3, LP (14); App. B, Corollary 1.1.

    >>> from directcoll.topology import parse
    >>> t_l, t_b = bfb_cost(parse("ring:4"))
    >>> t_l, round(float(t_b), 4)  # floor(N/2) steps, BW-optimal (N-1)/N (App. F.1)
    (2, 0.75)
    >>> t_l, t_b = bfb_cost(parse("ring:4"), "allreduce")
    >>> t_l, round(float(t_b), 4)
    (4, 1.5)
    """
    coll = Collective.parse(collective)
    if coll is Collective.ALLREDUCE:
        rs, ag = bfb_cost(topology, "reduce_scatter"), bfb_cost(topology, "allgather")
        return rs[0] + ag[0], rs[1] + ag[1]
    g = _graph(topology, coll is Collective.REDUCE_SCATTER)
    if g.n == 1:
        return 0, 0.0
    plans, lps, _ = _plan(g, None)
    return max(int(p.group_step.max()) for p in plans), _t_b(g, plans, lps)


def bfb_allgather(topology: Topology, *, chunks: int | None = None, size: float | None = None,
                  drop_slow_links: bool = True) -> Schedule:
    """The BFB allgather of ``topology`` (Zhao et al. Sec. 6.1, LP (1); cost eq. (2); App. E.2, E.3).

    Args:
        topology: a direct topology (no switch nodes), strongly connected (Topology refuses the rest). Links
            of different bandwidths are balanced by LP (14).
        chunks: None for exact rational loads; P to cut every shard into P equal chunks (App. E.2).
        size: None to balance bandwidth only (LP (14) without α: its limit for large M); M, the allgather's
            output in bytes, to solve LP (14) with every link's latency α_{w,u} (``topology.link_latency``)
            at that size, with the slow-link rule (module docstring). Uniform latencies give the same schedule
            as None.
        drop_slow_links: apply App. E.3's slow-link rule (only with ``size``; False keeps LP (14)'s first
            solution, for comparison).

    Returns:
        An allgather Schedule with N = topology.num_compute, nblocks = N (block v owned by rank v), one step per
        hop of the diameter D (step t-1 delivers the shards of the nodes at distance t), one COPY transfer per
        used link (w -> u) per step carrying pieces of every shard it serves, and an exact common
        ``denominator``. ``meta["t_b_m_over_b_lp"]`` is eq. (2) of these loads in units of M/B (B the node
        bandwidth); ``meta["bfb_lps"]`` the number of distinct LPs solved. With ``chunks``, also
        ``meta["t_b_m_over_b_relaxed"]``, eq. (2) of the LP's own loads (T_B^LP of App. E.2). With ``size``,
        also ``meta["size_bytes"]``, ``meta["bfb_time_s"]`` (seconds: sum over steps of the largest U_{u,t} of
        LP (14) over the links that carry data, latency included) and ``meta["bfb_dropped_links"]`` (in-links
        removed by the rule, summed over all (u, t)).

    Raises:
        UnsupportedShapeError: the topology has switch nodes, ``chunks`` is not a positive integer or ``size``
            not a positive number.
        SolverError: HiGHS fails on a load-balancing LP (:class:`directcoll.lp.highs.Solver`).
        ScheduleError: the exact loads need a common denominator above ``MAX_SCHEDULE_DENOMINATOR`` (pass
            ``chunks``), or rounding an LP solution to exact loads or whole chunks fails.
        ResourceError: the hop-distance matrix (all pairs, on a non-Cayley topology) would exceed the memory
            budget.

    >>> from directcoll.topology import parse
    >>> from directcoll.verify import verify
    >>> s = bfb_allgather(parse("torus:3x3"))
    >>> s.num_steps, s.nranks, s.denominator, round(float(s.meta["t_b_m_over_b_lp"]), 4)  # (N-1)/N = 8/9
    (2, 9, 1, 0.8889)
    >>> verify(s).ok
    True
    >>> bfb_allgather(parse("ring:5"), chunks=4).denominator
    4
    >>> slow = parse("links(ring:4,offset=1,latency=2us)")  # clockwise links 2 us, counter-clockwise 100 ns
    >>> s = bfb_allgather(slow, size=4 * 50_000)  # one 50 kB shard takes 1 us on a 400 Gb/s link: drop at step 2
    >>> s.meta["bfb_dropped_links"], round(s.meta["bfb_time_s"] * 1e6, 3)  # step 1: 2 + 1 us; step 2: 1.1 us
    (4, 4.1)
    """
    return _allgather_on(_graph(topology, False, _size(size)), _chunks(chunks), _meta(chunks, size),
                         drop_slow_links)


def bfb_reduce_scatter(topology: Topology, *, chunks: int | None = None,
                       allgather: Schedule | None = None, size: float | None = None,
                       drop_slow_links: bool = True) -> Schedule:
    """The BFB reduce-scatter: the BFB allgather of the *transposed* graph, reversed in time (Zhao et al.
    Theorem 1 / Corollary 1.1, :func:`directcoll.schedule.ops.reverse`). Reversal flips every transfer, so
    the result uses exactly the links of ``topology``, also on unidirectional topologies (there its cost is
    that of the transposed graph's allgather).

    On a translation-invariant Cayley topology (an abelian group, so x -> -x is an isomorphism from G to its
    transpose: G is reverse-symmetric, Def. 6), it is Theorem 2's construction instead: the allgather of G
    (``allgather`` if given, else built) relabelled by x -> -x (Def. 7) and reversed (Def. 5), with no second
    set of LPs.

    Args:
        topology: a direct topology (no switch nodes); unidirectional ones included.
        chunks, size, drop_slow_links: as :func:`bfb_allgather` (``size``: the reduce-scatter's input M).
        allgather: the :func:`bfb_allgather` of ``topology`` with the same ``chunks`` and ``size``, reused on a
            translation-invariant Cayley topology (ignored elsewhere; not checked).

    Returns:
        A reduce-scatter Schedule with N = topology.num_compute, nblocks = N (block v reduced onto rank v),
        D steps (D the diameter; G and G^T have the same one), reductions along links of ``topology``, an exact
        common ``denominator``; ``meta["t_b_m_over_b_lp"]`` (T_B in units of M/B), ``meta["bfb_lps"]`` and the
        keys of ``chunks`` and ``size`` as in :func:`bfb_allgather`.

    Raises:
        UnsupportedShapeError, SolverError, ScheduleError, ResourceError: as :func:`bfb_allgather`.
        KeyError: an ``allgather`` given that is not a BFB schedule (no ``t_b_m_over_b_lp`` in its meta), a
            caller's bug.

    Source: Zhao et al. (NSDI'25) App. B, Theorem 1, Corollary 1.1 and Theorem 2.

    >>> from directcoll.topology import parse
    >>> s = bfb_reduce_scatter(parse("ring:4:uni"))
    >>> s.collective.value, s.num_steps, round(float(s.meta["t_b_m_over_b_lp"]), 4)
    ('reduce_scatter', 3, 0.75)
    """
    meta = _meta(chunks, size)
    if translation_invariant(topology) and topology.num_compute > 1:
        ag = allgather if allgather is not None else bfb_allgather(topology, chunks=chunks, size=size,
                                                                   drop_slow_links=drop_slow_links)
        negate = topology.node_at(-topology.coords(np.arange(topology.num_compute)))
        keep = {k: v for k, v in ag.meta.items() if k not in ("algorithm", "variant")}
        return reverse(relabel(ag, negate), meta={**meta, **keep})
    ag = _allgather_on(_graph(topology, True, _size(size)), _chunks(chunks), meta, drop_slow_links)
    extra = {k: v for k, v in ag.meta.items() if k not in meta} if chunks or size else {}  # plain: as recorded
    return reverse(ag, meta={**meta, **extra})


def _chunks(chunks) -> int | None:
    if chunks is not None and (int(chunks) != chunks or int(chunks) < 1):
        raise UnsupportedShapeError(f"bfb: chunks must be a positive integer (chunks per shard), got {chunks!r}")
    return None if chunks is None else int(chunks)


def _size(size) -> float | None:
    if size is not None and not (isinstance(size, int | float | np.integer | np.floating) and 0 < size < np.inf):
        raise UnsupportedShapeError(f"bfb: size must be a positive number of bytes (the collective's M), got "
                                    f"{size!r}")
    return None if size is None else float(size)


def _meta(chunks, size=None) -> dict:
    meta = {"algorithm": "bfb", "variant": "bandwidth"}
    meta = meta if chunks is None else {**meta, "chunks": int(chunks)}
    return meta if size is None else {**meta, "size_bytes": _size(size)}


def build_bfb(topology: Topology, collective, *, variant=None, ports=None, chunks: int | None = None,
              size: float | None = None, **options) -> Schedule:
    """Registry builder: BFB allgather, reduce-scatter (see :func:`bfb_reduce_scatter`) or allreduce =
    reduce-scatter then allgather (2D steps). ``variant`` and ``ports`` are ignored (one variant,
    ``bandwidth``; BFB uses every link); ``chunks`` and ``size`` as in :func:`bfb_allgather` (``size``: the
    vector's M, each phase's too).

    Returns:
        A Schedule of ``collective`` on N = topology.num_compute ranks (nblocks = N): D steps for allgather and
        reduce-scatter, 2D for allreduce, with ``meta["t_b_m_over_b_lp"]`` (T_B in units of M/B; for allreduce
        the reduce-scatter's) and the keys of ``chunks`` and ``size`` (for allreduce ``bfb_time_s`` and
        ``bfb_dropped_links`` of both phases added). Any collective other than allgather and reduce-scatter
        gets the allreduce (the registry passes only these three).

    Raises:
        UnsupportedShapeError: options other than ``chunks`` and ``size``, or as :func:`bfb_allgather`.
        ScheduleError: an unknown collective name, or as :func:`bfb_allgather`.
        SolverError, ResourceError: as :func:`bfb_allgather`.

    Source: Zhao et al. (NSDI'25) Sec. 6.1 (allgather), App. B Corollary 1.1 (reduce-scatter), Sec. 3
    (allreduce = reduce-scatter then allgather).

    >>> from directcoll.topology import parse
    >>> s = build_bfb(parse("ring:4"), "allreduce")
    >>> s.collective.value, s.num_steps
    ('allreduce', 4)
    """
    if options:
        raise UnsupportedShapeError(f"bfb takes only the options 'chunks' and 'size'; got "
                                    f"{', '.join(sorted(options))}")
    coll = Collective.parse(collective)
    if coll is Collective.ALLGATHER:
        return bfb_allgather(topology, chunks=chunks, size=size)
    if coll is Collective.REDUCE_SCATTER:
        return bfb_reduce_scatter(topology, chunks=chunks, size=size)
    ag = bfb_allgather(topology, chunks=chunks, size=size)
    rs = bfb_reduce_scatter(topology, chunks=chunks, allgather=ag, size=size)
    meta = dict(rs.meta)
    for key in ("bfb_time_s", "bfb_dropped_links"):
        if key in meta:
            meta[key] = rs.meta[key] + ag.meta[key]
    return concat(rs, ag, meta=meta)


def translation_loads(topology: Topology, *, chunks: int | None = None, size: float | None = None):
    """What node 0 receives in :func:`bfb_allgather` on a translation-invariant Cayley topology, per step and
    in-link (every node u receives the same, moved by u): the hook of :mod:`directcoll.synthesis.bfb_pattern`.

    Returns:
        None if the topology is not translation-invariant or has one node; else (step (R,) 0-based, link (R,)
        topology link ids into node 0, numerator (R,) shards x ``den`` over that link in that step, den), int64.

    Raises:
        UnsupportedShapeError, SolverError, ScheduleError: as :func:`bfb_allgather` (``chunks`` and ``size`` too).

    Source: Zhao et al. (NSDI'25) Sec. 6.1 ("vertex-transitive": one node's LPs serve all).

    >>> from directcoll.topology import parse
    >>> step, link, num, den = translation_loads(parse("ring:4"))
    >>> step.tolist(), num.tolist(), den  # step 1: both neighbours' shards; step 2: half of the far one each way
    ([0, 0, 1, 1], [2, 2, 1, 1], 2)
    """
    if not translation_invariant(topology) or topology.num_compute < 2:
        return None
    g = _graph(topology, False, _size(size))
    (plan,), lps, _ = _plan(g, _chunks(chunks))
    den = _common_denominator(lps)
    z = np.stack([lps.solutions[lp][row] for lp, row in zip(plan.group_lp, plan.group_row, strict=True)])
    total = np.zeros((int(plan.group_step.max()), len(plan.in_links)), dtype=np.int64)
    np.add.at(total, plan.group_step - 1, (z * den).astype(np.int64))
    step, k = np.nonzero(total)
    return step, g.link[plan.in_links[k]], total[step, k], den
