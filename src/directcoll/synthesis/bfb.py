"""Breadth-first-broadcast (BFB) schedules (Zhao et al., Sec. 6.1, LP (1) and eq. (2)).

Allgather is a simultaneous broadcast from every node. BFB makes it breadth-first: in step t (1..D, D the
diameter) every node u receives the shard of every v at distance d(v, u) = t, through in-links (w -> u) whose
tail w already holds it (d(v, w) = t - 1). How much of v's shard each such link carries is one small LP per
(u, t), LP (1) of the paper, here with per-link bandwidths (Appendix E.3)::

    minimise U  subject to
        sum_{l = (w -> u)} x[v, l] = 1                 for every v with d(v, u) = t
        sum_v x[v, l] <= U * bw(l) / max bw             for every in-link l of u
        x[v, l] >= 0,  x[v, l] defined only where d(v, tail(l)) = t - 1

Parallel links are separate variables, each with its own bandwidth. The LPs are independent (Sec. 6.1), so
each is solved alone with HiGHS (one reused ``highspy.Highs``). Because every feeding w holds all of v's
shard, only the amounts matter: v's shard [0, 1) is cut into consecutive pieces in link order. The LP values
are made exact rationals (``Fraction.limit_denominator``, then the largest part of each v absorbs the
rounding so the parts sum to exactly 1) over one denominator for the whole schedule.

Consequences (Sec. 6.1): T_L = D steps, the lowest possible; data follows shortest paths only; the BW time
is eq. (2), T_B = sum_t max_{u} (time of the most loaded in-link of u in step t), which is BW-optimal on
tori (any dimensions >= 3), bidirectional rings, circulant and other symmetric graphs (Sec. 6.2) but not
on every topology.
"""

from __future__ import annotations

from fractions import Fraction
from math import lcm

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from directcoll.algorithms.registry import Algorithm, register
from directcoll.errors import ScheduleError, UnsupportedShapeError
from directcoll.schedule.ir import COPY, Collective, Schedule, ScheduleBuilder
from directcoll.schedule.ops import concat, reverse
from directcoll.topology.model import Topology

#: Largest denominator accepted when turning an LP value into a rational.
MAX_PIECE_DENOMINATOR = 1000
#: Largest common denominator of a whole schedule (numerators are int64 and the verifier cuts segments).
MAX_SCHEDULE_DENOMINATOR = 10**6

VARIANTS = ("bandwidth",)


def _direct_links(topology: Topology) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    if topology.num_nodes != topology.num_compute:
        raise UnsupportedShapeError(f"bfb: {topology.spec} has switch nodes; BFB schedules direct topologies "
                                    "(every node a rank, Zhao et al. Sec. 6.1)")
    keep = topology.link_src != topology.link_dst
    return (topology.num_compute, topology.link_src[keep], topology.link_dst[keep],
            topology.link_bandwidth[keep].astype(float))


def _solve_step_lps(n, src, dst, bw, dist):
    """Solve LP (1) for every (u, t). Returns a list (per step t-1) of dicts {(v, link): Fraction} and the
    list of LP optima per step (max over u of U_{u,t}, in shards per unit of the max bandwidth)."""
    import highspy

    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    rel_bw = bw / bw.max()
    diameter = int(dist.max())
    in_links = [np.flatnonzero(dst == u) for u in range(n)]
    parts: list[dict[tuple[int, int], Fraction]] = [dict() for _ in range(diameter)]
    for u in range(n):
        links = in_links[u]
        tails = src[links]
        for t in range(1, diameter + 1):
            sources = np.flatnonzero(dist[:, u] == t)
            if not len(sources):
                continue
            # feasible pairs (v, link): tail of the link at distance t-1 from v
            ok = dist[np.ix_(sources, tails)] == t - 1  # (V, K)
            vi, ki = np.nonzero(ok)
            if np.any(ok.sum(axis=1) == 0):  # impossible by BFS, kept as a guard
                raise ScheduleError(f"bfb: node {u} has no in-neighbour one hop closer to some source")
            used_links, li = np.unique(ki, return_inverse=True)
            nv, nl, nx = len(sources), len(used_links), len(vi)
            if nl == 1:  # a single feeding link: everything goes through it
                sol = np.ones(nx)
            else:
                lp = highspy.HighsLp()
                lp.num_col_ = nx + 1
                lp.num_row_ = nv + nl
                lp.col_cost_ = np.r_[np.zeros(nx), 1.0]
                lp.col_lower_ = np.zeros(nx + 1)
                lp.col_upper_ = np.r_[np.ones(nx), highspy.kHighsInf]
                lp.row_lower_ = np.r_[np.ones(nv), np.full(nl, -highspy.kHighsInf)]
                lp.row_upper_ = np.r_[np.ones(nv), np.zeros(nl)]
                # column j < nx: rows vi[j] and nv + li[j]; column nx (U): -rel_bw on every link row
                start = np.r_[np.arange(0, 2 * nx + 1, 2), 2 * nx + nl]
                index = np.c_[vi, nv + li].ravel()
                value = np.ones(2 * nx)
                index = np.r_[index, nv + np.arange(nl)]
                value = np.r_[value, -rel_bw[links[used_links]]]
                lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
                lp.a_matrix_.start_ = start.astype(np.int32)
                lp.a_matrix_.index_ = index.astype(np.int32)
                lp.a_matrix_.value_ = value
                highs.passModel(lp)
                highs.run()
                status = highs.getModelStatus()
                if status != highspy.HighsModelStatus.kOptimal:
                    raise ScheduleError(f"bfb: HiGHS did not solve the LP of node {u}, step {t}: "
                                        f"{highs.modelStatusToString(status)}")
                sol = np.asarray(highs.getSolution().col_value[:nx])
            for a in range(nv):
                sel = np.flatnonzero(vi == a)
                fr = [Fraction(float(max(x, 0.0))).limit_denominator(MAX_PIECE_DENOMINATOR) for x in sol[sel]]
                big = int(np.argmax(fr))
                fr[big] += 1 - sum(fr)
                if fr[big] < 0:
                    raise ScheduleError(f"bfb: rounding the LP of node {u}, step {t} failed")
                v = int(sources[a])
                for j, f in zip(sel, fr, strict=True):
                    if f > 0:
                        parts[t - 1][(v, int(links[ki[j]]))] = f
    return parts


def _allgather_on(n, src, dst, bw, node_bandwidth, meta) -> Schedule:
    graph = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    dist = shortest_path(graph, unweighted=True, directed=True).astype(np.int64)  # dist[v, x] = d(v -> x)
    if n == 1:
        return ScheduleBuilder(Collective.ALLGATHER, 1, 1).build(meta=meta)
    parts = _solve_step_lps(n, src, dst, bw, dist)
    den = lcm(*(f.denominator for step in parts for f in step.values()))
    if den > MAX_SCHEDULE_DENOMINATOR:
        raise ScheduleError(f"bfb: the exact LP shares need a common denominator of {den} "
                            f"(> {MAX_SCHEDULE_DENOMINATOR}); try a topology with fewer nodes")
    b = ScheduleBuilder(Collective.ALLGATHER, n, n, denominator=den)
    t_b = 0.0
    for t, step in enumerate(parts):
        # cut every v's shard in link order: consecutive pieces [c_k, c_{k+1})
        cursor: dict[tuple[int, int], Fraction] = {}  # (v, u) -> how much of v's shard u got so far
        per_link: dict[int, list[tuple[int, int]]] = {}
        for (v, link) in sorted(step, key=lambda key: (key[0], key[1])):
            key = (v, int(dst[link]))
            lo = cursor.get(key, Fraction(0))
            hi = lo + step[(v, link)]
            cursor[key] = hi
            per_link.setdefault(link, []).append((v * den + int(lo * den), v * den + int(hi * den)))
        if any(c != 1 for c in cursor.values()):  # guard: the rounding makes every sum exactly 1
            raise ScheduleError(f"bfb: step {t + 1}: some shard is not delivered whole")
        links = sorted(per_link)
        counts = [len(per_link[lk]) for lk in links]
        start = [p[0] for lk in links for p in per_link[lk]]
        stop = [p[1] for lk in links for p in per_link[lk]]
        b.add_pieces(t, src[links], dst[links], COPY, counts, start, stop)
        load = np.array([sum(step[(v, lk)] for v, lk in step if lk == link) for link in links], dtype=float)
        t_b += float((load / n / bw[links]).max() * node_bandwidth)
    return b.build(meta={**meta, "t_b_m_over_b_lp": t_b})


def bfb_allgather(topology: Topology) -> Schedule:
    """The BFB allgather of ``topology`` (Zhao et al. Sec. 6.1, LP (1); cost eq. (2)).

    Args:
        topology: a direct topology (no switch nodes), strongly connected (Topology refuses the rest).

    Returns:
        An allgather Schedule with N = topology.num_compute, nblocks = N (block v owned by rank v), one step per
        hop of the diameter D (step t-1 delivers the shards of the nodes at distance t), one COPY transfer per
        used link (w -> u) per step carrying pieces of every shard it serves, and an exact common
        ``denominator``. ``meta["t_b_m_over_b_lp"]`` is eq. (2) in units of M/B.

    Raises:
        UnsupportedShapeError: the topology has switch nodes.
        ScheduleError: HiGHS fails on an LP, or the exact shares need a common denominator above
            ``MAX_SCHEDULE_DENOMINATOR`` (use fewer nodes).
    """
    n, src, dst, bw = _direct_links(topology)
    return _allgather_on(n, src, dst, bw, topology.node_bandwidth, {"algorithm": "bfb", "variant": "bandwidth"})


def bfb_reduce_scatter(topology: Topology) -> Schedule:
    """The BFB reduce-scatter: the BFB allgather of the *transposed* graph, reversed in time (Zhao et al.
    Theorem 1 / Corollary 1.1, :func:`directcoll.schedule.ops.reverse`). Reversal flips every transfer, so
    the result uses exactly the links of ``topology``, also on unidirectional topologies (there its cost is
    that of the transposed graph's allgather). Shapes and errors as :func:`bfb_allgather`.
    """
    n, src, dst, bw = _direct_links(topology)
    meta = {"algorithm": "bfb", "variant": "bandwidth"}
    return reverse(_allgather_on(n, dst, src, bw, topology.node_bandwidth, meta), meta=meta)


def build_bfb(topology: Topology, collective, *, variant=None, ports=None, **options) -> Schedule:
    """Registry builder: BFB allgather, reduce-scatter (see :func:`bfb_reduce_scatter`) or allreduce =
    reduce-scatter then allgather (2D steps). ``ports`` is ignored (BFB uses every link).

    Raises:
        UnsupportedShapeError: unknown options, or as :func:`bfb_allgather`.
    """
    if options:
        raise UnsupportedShapeError(f"bfb takes no options; got {', '.join(sorted(options))}")
    coll = Collective.parse(collective)
    if coll is Collective.ALLGATHER:
        return bfb_allgather(topology)
    rs = bfb_reduce_scatter(topology)
    if coll is Collective.REDUCE_SCATTER:
        return rs
    return concat(rs, bfb_allgather(topology), meta=dict(rs.meta))


register(Algorithm(
    name="bfb",
    build=build_bfb,
    collectives=("allgather", "reduce_scatter", "allreduce"),
    variants=VARIANTS,
    topologies="any direct topology (no switches); BW-optimal on tori, bidirectional rings, circulant and other "
               "symmetric graphs",
    summary="breadth-first-broadcast LP schedules, T_L = diameter (Zhao et al. Sec. 6.1, LP (1))",
))
