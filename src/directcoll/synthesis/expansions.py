"""Schedule expansions of Zhao et al. (NSDI'25, Sec. 5, App. A.6, B and D).

Given an allgather A_G of a base topology G whose transfers go between neighbours (a BFB schedule from
:func:`~directcoll.synthesis.bfb.bfb_allgather`, or any such allgather), build the allgather of: the line graph
L(G) (Def. 12; schedule Def. 1, one extra first step; Theorems 7, 10: :func:`line_graph_allgather`); the degree
expansion G * n (Def. 13; schedule Def. 2, one extra last step on n*d equal chunks; Theorem 11:
:func:`degree_expansion_allgather`); the Cartesian power G^(box n) (App. D.3, Def. 14: n rotated dimension orders
run concurrently on 1/n of every shard; Theorem 12: :func:`cartesian_power_allgather`); the Cartesian product of
distinct graphs (BFB on the product, Theorem 13: :func:`cartesian_product_allgather`); G united with its
transpose (App. A.6: half of every shard follows A_G, the other half an allgather of G^T on the reversed links:
:func:`bidirectional_allgather`).

Topologies and node numbering come from :mod:`directcoll.topology.operators`. Reduce-scatter and allreduce
follow from Theorem 1 / Corollary 1.2: the reduce-scatter of an expanded topology T is the time reversal of
the allgather of T^T, and T^T is the same expansion of the transposed base (node ids kept), so
:func:`expanded_schedule` builds any collective for a spec of operators over base topologies by recursion.
Predicted T_L and T_B: :mod:`directcoll.cost.expansions`, with BFB bases :mod:`.expansion_predictions`.
Schedules are exact: every shard is [0, D) over one integer denominator D, which the constructions scale (by the
multiplicity of parallel links, n*d, or n) so that every chunk stays an integer interval.

Source: Zhao et al. (NSDI'25) Sec. 5 and App. D (Defs. 1, 2, 14; Theorems 7-13), App. A.6, App. B;
docs/expansions.md, "Schedules" and "Choices and deviations".
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from math import gcd, lcm

import numpy as np

from directcoll.cost.expansions import LEAVES
from directcoll.errors import ScheduleError, TopologyError, UnsupportedShapeError
from directcoll.schedule.ir import COPY, Collective, Schedule, ScheduleBuilder
from directcoll.schedule.ops import concat, reverse
from directcoll.synthesis import bfb as _bfb
from directcoll.topology import operators
from directcoll.topology.grammar import SpecNode, parse_tree
from directcoll.topology.model import Topology
from directcoll.topology.spec import build_tree


# -- a shard-level view of an allgather ---------------------------------------------------------------------
@dataclass(frozen=True)
class _View:
    """An allgather in shard coordinates: transfer i (step, src -> dst) carries ``counts[i]`` consecutive
    pieces; piece p is [lo, hi) of the shard of rank ``origin[p]``, numerators over ``den`` (a shard is
    [0, den)). ``nsteps`` is t_max (steps 0..nsteps-1)."""

    n: int
    den: int
    nsteps: int
    step: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    counts: np.ndarray
    origin: np.ndarray
    lo: np.ndarray
    hi: np.ndarray

    @property
    def piece_transfer(self) -> np.ndarray:
        return np.repeat(np.arange(len(self.step)), self.counts)

    @property
    def offsets(self) -> np.ndarray:
        return np.r_[0, np.cumsum(self.counts)].astype(np.int64)


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate the integer ranges [starts[i], starts[i] + lengths[i]): returns (i of every entry, entry)."""
    starts = np.asarray(starts, np.int64)
    lengths = np.asarray(lengths, np.int64)
    owner = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    before = np.r_[0, np.cumsum(lengths)[:-1]].astype(np.int64)
    return owner, np.repeat(starts - before, lengths) + np.arange(int(lengths.sum()), dtype=np.int64)


def _view_of(schedule: Schedule, topology: Topology, what: str) -> _View:
    """Check that ``schedule`` is a neighbour-to-neighbour allgather on ``topology`` with equal shards and
    return it in shard coordinates (pieces cut at block boundaries; pieces a rank receives of its own shard
    dropped, since it holds them from the start)."""
    s, n = schedule, topology.num_compute
    if not isinstance(s, Schedule) or s.collective is not Collective.ALLGATHER:
        got = s.collective.value if isinstance(s, Schedule) else type(s).__name__
        raise ScheduleError(f"{what}: needs an allgather schedule of {topology.spec}, got {got}")
    if s.nranks != n:
        raise ScheduleError(f"{what}: the schedule has {s.nranks} ranks but {topology.spec} has {n} nodes")
    if s.nscratch or (s.piece_shift is not None and np.any(s.piece_shift)) or s.route_offsets is not None:
        raise ScheduleError(f"{what}: the base schedule ({s.algorithm}) uses scratch space, displaced pieces or "
                            "explicit routes; expansions take plain neighbour-to-neighbour copies")
    if np.any(s.op != COPY):
        raise ScheduleError(f"{what}: an allgather of copies is needed, {s.algorithm} has reductions")
    per_rank = np.bincount(s.owner, minlength=n)
    if np.any(per_rank != per_rank[0]):
        raise ScheduleError(f"{what}: ranks own different numbers of blocks ({per_rank.min()}..{per_rank.max()}); "
                            "expansions need equal shards")
    key = topology.link_src * n + topology.link_dst
    bad = ~np.isin(s.src * n + s.dst, key)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ScheduleError(f"{what}: transfer {i} (step {s.step[i]}) goes {s.src[i]} -> {s.dst[i]}, which is not "
                            f"a link of {topology.spec}; expansions need neighbour-to-neighbour transfers")
    k, den = s.nblocks // n, s.denominator
    pos = np.empty(s.nblocks, np.int64)  # place of every block inside its owner's shard
    order = np.argsort(s.owner, kind="stable")
    pos[order] = np.arange(s.nblocks) % k
    a, b = s.piece_start, s.piece_stop
    first, last = a // den, (b - 1) // den
    part, blk = _ranges(first, last - first + 1)  # cut pieces at block boundaries
    lo = np.maximum(a[part], blk * den) - blk * den + pos[blk] * den
    hi = np.minimum(b[part], (blk + 1) * den) - blk * den + pos[blk] * den
    origin = s.owner[blk]
    tr = s.piece_transfer[part]
    keep = origin != s.dst[tr]
    tr, origin, lo, hi = tr[keep], origin[keep], lo[keep], hi[keep]
    counts = np.bincount(tr, minlength=s.num_transfers)
    live = counts > 0
    return _View(n, k * den, s.num_steps, s.step[live], s.src[live], s.dst[live], counts[live], origin, lo, hi)


def _schedule_of(view: _View, meta: dict) -> Schedule:
    """The Schedule of a view: nblocks = N, rank r owns block r, exact denominator (reduced by the gcd)."""
    g = reduce(gcd, (int(np.gcd.reduce(a)) for a in (view.lo, view.hi) if len(a)), view.den)
    den = view.den // g
    b = ScheduleBuilder(Collective.ALLGATHER, view.n, view.n, denominator=den)
    b.add_pieces(view.step, view.src, view.dst, COPY, view.counts, view.origin * den + view.lo // g,
                 view.origin * den + view.hi // g)
    return b.build(meta=meta)


# -- constructions -------------------------------------------------------------------------------------------
def _csr(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(order, start): the items with key x are order[start[x]:start[x+1]], in their original order."""
    order = np.argsort(keys, kind="stable").astype(np.int64)
    return order, np.r_[0, np.cumsum(np.bincount(keys, minlength=n))].astype(np.int64)


def _line(view: _View, h: Topology) -> _View:
    """Def. 1 on topology h (node e of L(h) = link e of h).

    Step 1: every node e sends its whole shard to every out-neighbour f. Step t+1: for every base transfer
    (u -> w, step t) carrying chunk C of v, every link g = (u -> w) sends C of every node e = (v' -> v) to
    every out-neighbour f = (w -> w') of g, except to f = e. Parallel links u -> w share the base transfer:
    each carries an equal part of every chunk (so link loads match the base's even split).
    """
    n = h.num_compute
    key = h.link_src * n + h.link_dst
    by_key = np.argsort(key, kind="stable")
    tkey = view.src * n + view.dst
    first = np.searchsorted(key[by_key], tkey, "left")
    mult = np.searchsorted(key[by_key], tkey, "right") - first
    m_all = lcm(*np.unique(mult).tolist()) if len(mult) else 1
    den = view.den * m_all
    in_order, in_start = _csr(h.link_dst, n)
    out_order, out_start = _csr(h.link_src, n)
    # step 0: e -> f, the whole shard of e
    e0, f0 = operators.line_edges(h)
    # origin pieces: every base piece p, once per in-link e of its origin v
    ptr = view.piece_transfer
    v = view.origin
    op_piece, idx = _ranges(in_start[v], in_start[v + 1] - in_start[v])
    op_e = in_order[idx]
    op_count = np.bincount(ptr[op_piece], minlength=len(view.step))
    op_off = np.r_[0, np.cumsum(op_count)[:-1]]
    # expanded transfers: (base transfer, parallel link g, out-link f of the head)
    tau, kk = _ranges(np.zeros(len(mult), np.int64), mult)
    g = by_key[first[tau] + kk]
    w = view.dst[tau]
    x_of, idx = _ranges(out_start[w], out_start[w + 1] - out_start[w])
    x_tau, x_k, x_g, x_f = tau[x_of], kk[x_of], g[x_of], out_order[idx]
    # their pieces: the origin pieces of the base transfer, without the piece of f itself
    xp, op = _ranges(op_off[x_tau], op_count[x_tau])
    keep = op_e[op] != x_f[xp]
    xp, op = xp[keep], op[keep]
    p = op_piece[op]
    m = mult[x_tau[xp]]
    width = (view.hi[p] - view.lo[p]) * (m_all // m)
    lo = view.lo[p] * m_all + width * x_k[xp]
    counts = np.bincount(xp, minlength=len(x_tau))
    live = counts > 0
    return _View(
        h.num_links, den, view.nsteps + 1,
        np.r_[np.zeros(len(e0), np.int64), view.step[x_tau[live]] + 1],
        np.r_[e0, x_g[live]], np.r_[f0, x_f[live]], np.r_[np.ones(len(e0), np.int64), counts[live]],
        np.r_[e0, op_e[op]], np.r_[np.zeros(len(e0), np.int64), lo], np.r_[np.full(len(e0), den), lo + width])


def _degree(view: _View, h: Topology, n: int) -> _View:
    """Def. 2 on topology h (node v of copy i = i*N + v).

    Steps 1..t_max: every base transfer (v's chunk C, u -> w, step t) becomes (v_j's C, u_j -> w_i) for all
    i, j. Step t_max + 1: the shard is cut into n*d equal chunks; in-link alpha (v_k -> u_j) of u_j sends
    chunk alpha of u_i's shard for every i != j.
    """
    big_n = h.num_compute
    d = operators.regular_degree(h)
    if d is None:
        raise TopologyError(f"degree expansion: {h.spec} is not regular; Def. 2 cuts shards into n*d chunks")
    scale = n * d if n > 1 else 1
    den = view.den * scale
    t = len(view.step)
    # steps 1..t_max: transfers (tau, j, i)
    tau = np.repeat(np.arange(t), n * n)
    j = np.tile(np.repeat(np.arange(n), n), t)
    i = np.tile(np.arange(n), t * n)
    xp, p = _ranges(view.offsets[:-1][tau], view.counts[tau])
    step = [view.step[tau]]
    src, dst, counts = [j * big_n + view.src[tau]], [i * big_n + view.dst[tau]], [view.counts[tau]]
    origin, lo, hi = [j[xp] * big_n + view.origin[p]], [view.lo[p] * scale], [view.hi[p] * scale]
    if n > 1:
        in_order, in_start = _csr(h.link_dst, big_n)
        u = np.repeat(np.arange(big_n), n * d)          # receiving base node, n*d in-links each
        alpha = np.tile(np.arange(n * d), big_n)
        link = in_order[in_start[u] + alpha // n]        # base in-link (v -> u), then copy k = alpha % n
        k = alpha % n
        jj = np.repeat(np.arange(n), big_n * n * d)      # copy of the receiver
        u, alpha, link, k = (np.tile(a, n) for a in (u, alpha, link, k))
        others = np.array([[c for c in range(n) if c != r] for r in range(n)], dtype=np.int64)  # (n, n-1)
        ii = others[jj].ravel()
        rep = np.repeat(np.arange(len(jj)), n - 1)
        step.append(np.full(len(jj), view.nsteps))
        src.append(k * big_n + h.link_src[link])
        dst.append(jj * big_n + u)
        counts.append(np.full(len(jj), n - 1))
        origin.append(ii * big_n + u[rep])
        lo.append(alpha[rep] * view.den)
        hi.append((alpha[rep] + 1) * view.den)
    return _View(n * big_n, den, view.nsteps + (n > 1), *(np.concatenate(a) for a in (step, src, dst, counts)),
                 *(np.concatenate(a) for a in (origin, lo, hi)))


def _all_coords(size: int, k: int) -> np.ndarray:
    """All points of {0..size-1}^k in row-major order, int64 (size^k, k) (one empty row for k = 0)."""
    if k == 0:
        return np.zeros((1, 0), np.int64)
    return np.stack(np.unravel_index(np.arange(size ** k), (size,) * k), axis=-1).astype(np.int64)


def _power(view: _View, n: int) -> _View:
    """App. D.3 (Def. 14) for G^(box n) with N = view.n (node = ravel of its n coordinates).

    Sub-schedule s (on sub-shard s of every shard) runs phase j = 0..n-1 on dimension a = (s + j) mod n in
    steps j*t_max + t: every base transfer (w's chunk C, u -> v) moves, along every line of dimension a, the
    chunk C of every node whose coordinate a is w, whose coordinates in the dimensions not yet gathered equal
    the sender's, and whose coordinates in the gathered dimensions are anything. The n sub-schedules use
    different dimensions in every step, so their links are disjoint.
    """
    big_n, tmax, npieces = view.n, view.nsteps, len(view.origin)
    stride = big_n ** np.arange(n - 1, -1, -1, dtype=np.int64)  # row-major node ids
    rest = _all_coords(big_n, n - 1)  # coordinates of the n-1 dimensions other than the active one
    parts = []
    for s in range(n):
        for j in range(n):
            a = (s + j) % n
            others = np.array([x for x in range(n) if x != a], dtype=np.int64)
            gathered = np.array([(s + jj) % n for jj in range(j)], dtype=np.int64)
            line = rest @ stride[others]  # (R,): the line of dimension a a transfer runs on
            todo = ~np.isin(others, gathered)  # dimensions not gathered yet keep the sender's coordinate
            pending = rest[:, todo] @ stride[others[todo]]
            xs = _all_coords(big_n, len(gathered)) @ stride[gathered]  # (X,): any gathered coordinates
            x_count = len(xs)
            # transfers (rest r, base transfer tau); their pieces (r, base piece p, x) are then contiguous
            src = line[:, None] + view.src[None, :] * stride[a]
            dst = line[:, None] + view.dst[None, :] * stride[a]
            origin = pending[:, None, None] + view.origin[None, :, None] * stride[a] + xs[None, None, :]
            shape3 = (len(rest), npieces, x_count)
            parts.append((np.broadcast_to(view.step + j * tmax, src.shape).ravel(), src.ravel(), dst.ravel(),
                          np.broadcast_to(view.counts * x_count, src.shape).ravel(), origin.ravel(),
                          np.broadcast_to((view.lo + s * view.den)[None, :, None], shape3).ravel(),
                          np.broadcast_to((view.hi + s * view.den)[None, :, None], shape3).ravel()))
    cols = [np.concatenate(c) for c in zip(*parts, strict=True)]
    return _View(big_n ** n, n * view.den, n * tmax, *cols)


def _side_by_side(views: list[_View]) -> _View:
    """Run allgathers of the same ranks at once, view s on sub-shard s of every shard (App. A.6)."""
    big = lcm(*(v.den for v in views))
    k = len(views)
    cols = [[] for _ in range(7)]
    for s, v in enumerate(views):
        f = big // v.den
        for c, a in zip(cols, (v.step, v.src, v.dst, v.counts, v.origin, v.lo * f + s * big, v.hi * f + s * big),
                        strict=True):
            c.append(a)
    return _View(views[0].n, k * big, max(v.nsteps for v in views), *(np.concatenate(c) for c in cols))


# -- public schedule expansions --------------------------------------------------------------------------------
def _meta(construction: str, topology: str, base: Schedule, **extra) -> dict:
    return {"algorithm": "expansion", "construction": construction, "topology": topology,
            "base_algorithm": base.algorithm, **extra}


def line_graph_allgather(base: Topology, schedule: Schedule) -> Schedule:
    """The allgather of the line graph L(G) from an allgather A_G of G (Zhao et al. Def. 1, Sec. 5.1).

    Args:
        base: G, a direct topology without self-loops.
        schedule: an allgather of G whose transfers go along links of G (copies only, equal shards).

    Returns:
        An allgather on ``line_graph(base)`` (node e = link e of G): N' = |E_G| ranks, one block each,
        T_L(A_G) + 1 steps (Theorem 7, eq. (4)). T_B in units of M/B: Theorem 7, eq. (5): T_B <= T_B(A_G) + 1/N
        for d-regular G; Theorem 10, eq. (8): equality when A_G is an optimal BFB schedule and every node has
        more than one out-neighbour. Parallel links u -> w of G split each base transfer evenly
        (docs/expansions.md, "Choices and deviations").

    Raises:
        ScheduleError: ``schedule`` is not such an allgather of ``base`` (another collective or rank count,
            reductions, scratch space or routes, unequal shards, a transfer off the links of ``base``).
        TopologyError: ``base`` is not a Topology, or has switch nodes or self-loops.

    >>> from directcoll.topology import parse
    >>> from directcoll.synthesis.bfb import bfb_allgather
    >>> from directcoll.verify import verify
    >>> g = parse("complete:4")
    >>> s = line_graph_allgather(g, bfb_allgather(g))
    >>> s.nranks, s.num_steps, s.meta["topology"], verify(s).ok
    (12, 2, 'line(complete:4)', True)
    """
    topo = operators.line_graph(base)  # checks the input
    view = _line(_view_of(schedule, base, f"line graph of {base.spec}"), base)
    return _schedule_of(view, _meta("line", topo.spec, schedule))


def degree_expansion_allgather(base: Topology, schedule: Schedule, n: int) -> Schedule:
    """The allgather of the degree expansion G * n from an allgather A_G of G (Zhao et al. Def. 2, Sec. 5.2).

    Args:
        base: G, d-regular, without self-loops.
        schedule: an allgather of G along its links.
        n: number of copies, >= 1.

    Returns:
        An allgather on ``degree_expansion(base, n)`` (Def. 13; v_i = node i*N + v), nN ranks with one block
        each: T_L(A_G) + 1 steps for n > 1 (the extra last step moves n*d equal chunks of every shard into the
        other copies), and Theorem 11, eqs. (9)-(10): T_B = T_B(A_G) + (M/B) (n-1)/(nN). For n = 1 it is A_G
        (no extra step; docs/expansions.md, "Choices and deviations").

    Raises:
        ScheduleError: ``schedule`` is not a neighbour-to-neighbour allgather of copies of ``base`` with equal
            shards.
        TopologyError: ``base`` is not d-regular, or has switch nodes or self-loops.
        SpecError: n is not an integer >= 1.

    >>> from directcoll.topology import parse
    >>> from directcoll.synthesis.bfb import bfb_allgather
    >>> g = parse("ring:4:uni")
    >>> s = degree_expansion_allgather(g, bfb_allgather(g), 2)  # Fig. 4: 3 + 1 steps
    >>> s.nranks, s.num_steps, s.meta["topology"]
    (8, 4, 'degree(ring:4:uni,2)')
    """
    topo = operators.degree_expansion(base, n)  # checks the input
    view = _degree(_view_of(schedule, base, f"degree expansion of {base.spec}"), base, n)
    return _schedule_of(view, _meta("degree", topo.spec, schedule, n=n))


def cartesian_power_allgather(base: Topology, schedule: Schedule, n: int) -> Schedule:
    """The allgather of the Cartesian power G^(box n) from an allgather A_G of G (Zhao et al. Def. 14,
    App. D.3, Sec. 5.3).

    Args:
        base: G, without self-loops.
        schedule: an allgather of G along its links.
        n: the power, >= 1.

    Returns:
        An allgather on ``cartesian_power(base, n)`` (N^n ranks, one block each): n sub-schedules, each on 1/n
        of every shard, gather the dimensions in the n rotated orders, concurrently. Theorem 12, eqs.
        (11)-(12): T_L = n T_L(A_G) steps, T_B = T_B(A_G) N/(N-1) (N^n - 1)/N^n in units of M/B; BW-optimal
        when A_G is (Corollary 12.1).

    Readings: Def. 14 step 3 ("each vertex v in A^(1) is shifted by i-1 to (v[n-i+2:n], v[1:n-i+1])") is a
    cyclic rotation of the coordinates, so sub-schedule s gathers dimension (s + j) mod n in phase j (any
    rotation direction makes the n sub-schedules use different dimensions in every step); eq. (11)'s
    "T_L(A_G □ n)" is T_L of the schedule A_{G^□n}.

    Raises:
        ScheduleError: ``schedule`` is not a neighbour-to-neighbour allgather of copies of ``base`` with equal
            shards.
        TopologyError: ``base`` is not a Topology, or has switch nodes or self-loops.
        SpecError: n is not an integer >= 1.

    >>> from directcoll.topology import parse
    >>> from directcoll.synthesis.bfb import bfb_allgather
    >>> g = parse("ring:3:uni")
    >>> s = cartesian_power_allgather(g, bfb_allgather(g), 2)
    >>> s.nranks, s.num_steps, s.meta["topology"]
    (9, 4, 'power(ring:3:uni,2)')
    """
    topo = operators.cartesian_power(base, n)  # checks the input
    view = _power(_view_of(schedule, base, f"cartesian power of {base.spec}"), n)
    return _schedule_of(view, _meta("power", topo.spec, schedule, n=n))


def cartesian_product_allgather(*topologies: Topology) -> Schedule:
    """The allgather of a Cartesian product of distinct graphs: BFB on the product (Zhao et al. Theorem 13,
    Sec. 5.3: the product of distinct graphs has no construction; BFB's LP (1) gives a BW-optimal schedule
    when every factor has one, with T_L = sum of the factors' diameters).

    Returns:
        The :func:`~directcoll.synthesis.bfb.bfb_allgather` of ``cartesian_product(*topologies)`` (prod N_i
        ranks, sum D(G_i) steps; ``meta["t_b_m_over_b_lp"]`` its T_B in units of M/B), with
        ``meta["topology"]`` the product's spec.

    Raises:
        TopologyError: fewer than two factors, a factor that is not a Topology, switch nodes or self-loops.
        SolverError, ScheduleError, ResourceError: as :func:`~directcoll.synthesis.bfb.bfb_allgather`.

    >>> from directcoll.topology import parse
    >>> s = cartesian_product_allgather(parse("ring:3"), parse("ring:4"))
    >>> s.nranks, s.num_steps, round(float(s.meta["t_b_m_over_b_lp"]), 4)  # 1 + 2 steps, (N-1)/N = 11/12
    (12, 3, 0.9167)
    """
    topo = operators.cartesian_product(*topologies)
    return _bfb.bfb_allgather(topo).with_meta(topology=topo.spec)


def bidirectional_allgather(base: Topology, schedule: Schedule, transposed_schedule: Schedule) -> Schedule:
    """The allgather of G u G^T (Zhao et al. App. A.6): half of every shard follows ``schedule`` (an allgather
    of G) and the other half ``transposed_schedule`` (an allgather of G^T, on the reversed links), at once.

    App. A.6 takes g(A) for an isomorphism g: G -> G^T; any allgather of G^T serves, e.g.
    ``reverse(bfb_reduce_scatter(G))``, the BFB allgather of G^T (Theorem 1). With G reverse-symmetric and
    both halves of equal per-step cost, T_L and T_B equal those of ``schedule`` (with B doubled with the
    degree).

    Returns:
        An allgather on ``bidirectional(base)`` (N ranks, one block each, degree 2d): max(T_L(A), T_L(A^T))
        steps; T_B (units of M/B, B of the 2d-regular topology) equal to that of ``schedule`` when G is
        reverse-symmetric and the halves cost alike (App. A.6; not checked).

    Raises:
        ScheduleError: a schedule that is not an allgather along the links of G (resp. G^T).
        TopologyError: ``base`` is not a Topology, or has switch nodes or self-loops.

    >>> from directcoll.topology import parse
    >>> from directcoll.schedule.ops import reverse
    >>> from directcoll.synthesis.bfb import bfb_allgather, bfb_reduce_scatter
    >>> g = parse("ring:4:uni")
    >>> s = bidirectional_allgather(g, bfb_allgather(g), reverse(bfb_reduce_scatter(g)))
    >>> s.nranks, s.num_steps, s.meta["topology"]
    (4, 3, 'bidir(ring:4:uni)')
    """
    topo = operators.bidirectional(base)
    view = _side_by_side([_view_of(schedule, base, f"bidirectional {base.spec}"),
                          _view_of(transposed_schedule, operators.transpose(base), f"bidirectional {base.spec} (G^T)")])
    return _schedule_of(view, _meta("bidir", topo.spec, schedule))


# -- schedules for specs ---------------------------------------------------------------------------------------
class _Builder:
    """Recursion over a spec tree, caching topologies and allgathers (``flip``: of the transposed topology)."""

    def __init__(self) -> None:
        self.topos: dict[SpecNode, Topology] = {}
        self.ags: dict[tuple[SpecNode, bool], Schedule] = {}

    def topo(self, node: SpecNode) -> Topology:
        if node not in self.topos:
            if node.op in (*LEAVES, "product"):
                self.topos[node] = build_tree(node)
            else:
                g = self.topo(node.children[0])
                make = {"line": operators.line_graph, "degree": operators.degree_expansion,
                        "power": operators.cartesian_power}
                self.topos[node] = operators.bidirectional(g) if node.op == "bidir" else make[node.op](g, node.n)
        return self.topos[node]

    def ag(self, node: SpecNode, flip: bool) -> Schedule:
        """An allgather of topo(node) (flip: of its transpose, same node ids)."""
        key = (node, flip)
        if key in self.ags:
            return self.ags[key]
        topo = self.topo(node)
        spec = topo.spec
        if node.op in (*LEAVES, "product"):
            out = reverse(_bfb.bfb_reduce_scatter(topo)) if flip else _bfb.bfb_allgather(topo)
        elif node.op == "bidir":
            child = node.children[0]
            g = self.topo(child)
            inner = [self.ag(child, False), self.ag(child, True)]
            view = _side_by_side([_view_of(inner[0], g, spec), _view_of(inner[1], operators.transpose(g), spec)])
            out = _schedule_of(view, _meta("bidir", spec, inner[0]))
        else:
            child = node.children[0]
            g = self.topo(child)
            inner = self.ag(child, flip)
            on = operators.transpose(g) if flip else g
            if node.op == "line":
                view = _view_of(inner, on, spec)
                for level in range(node.n):  # L^K: K times Def. 1 (node ids: links of the previous level)
                    if level:
                        g = operators.line_graph(g)
                        on = operators.transpose(g) if flip else g
                    view = _line(view, on)
            elif node.op == "degree":
                view = _degree(_view_of(inner, on, spec), on, node.n)
            else:
                view = _power(_view_of(inner, on, spec), node.n)
            out = _schedule_of(view, _meta(node.op, spec, inner, **({"n": node.n} if node.n else {})))
        self.ags[key] = out
        return out


def _tree_of(spec_or_topology) -> tuple[SpecNode, Topology | None]:
    if isinstance(spec_or_topology, Topology):
        return parse_tree(spec_or_topology.spec), spec_or_topology
    return parse_tree(spec_or_topology), None


def expanded_schedule(spec_or_topology, collective="allgather") -> Schedule:
    """A schedule of ``collective`` for a topology spec made of expansion operators over base topologies,
    built by recursion over the spec (docs/expansions.md):

    - a base (generative) topology, and a Cartesian product: BFB (LP (1); Theorem 13 for products);
    - ``line^K``, ``degree``, ``power``, ``bidir``: the constructions of Def. 1, Def. 2, Def. 14 and App. A.6
      from the schedule of their argument.

    Reduce-scatter is the time reversal of the allgather of the transposed topology (Theorem 1, Corollary
    1.2), which is the same expansion of the transposed base; allreduce is reduce-scatter then allgather.

    Args:
        spec_or_topology: a spec string (``line^2(complete:4)``, ``power(ring:4:uni,2)``, ...) or a Topology
            built from one (its ``spec`` is parsed; its links must be those the spec builds).
        collective: ``allgather``, ``reduce_scatter`` or ``allreduce``.

    Returns:
        A Schedule with N = the topology's nodes, nblocks = N (rank r owns block r), exact denominator;
        ``meta["algorithm"] == "expansion"`` (``"bfb"`` for a spec without expansion operators) and
        ``meta["topology"]`` the spec.

    Raises:
        SpecError: an unparseable spec.
        TopologyError: an operator refuses its input, or a Topology whose links differ from those of its spec.
        UnsupportedShapeError: a collective other than the three, or as BFB.
        ScheduleError: an unknown collective name, or as the constructions and BFB.
        SolverError, ResourceError: as :func:`~directcoll.synthesis.bfb.bfb_allgather` on the bases.

    Source: Zhao et al. (NSDI'25) Sec. 5, App. D.1-D.3, App. A.6; App. B, Theorem 1 and Corollary 1.2;
    docs/expansions.md, "Schedules".

    >>> from directcoll.verify import verify
    >>> s = expanded_schedule("line(complete:4)", "allreduce")
    >>> s.collective.value, s.nranks, s.num_steps, verify(s).ok
    ('allreduce', 12, 4, True)
    """
    coll = Collective.parse(collective)
    if coll not in (Collective.ALLGATHER, Collective.REDUCE_SCATTER, Collective.ALLREDUCE):
        raise UnsupportedShapeError(f"expanded_schedule: {coll.value} is not built by expansions; accepted: "
                                    "allgather, reduce_scatter, allreduce")
    tree, given = _tree_of(spec_or_topology)
    if tree.op in LEAVES and given is not None:
        return _bfb.build_bfb(given, coll).with_meta(topology=given.spec)
    b = _Builder()
    topo = b.topo(tree)
    if given is not None and not (np.array_equal(given.link_src, topo.link_src)
                                  and np.array_equal(given.link_dst, topo.link_dst)):
        raise TopologyError(f"expanded_schedule: the topology's links differ from those its spec {given.spec!r} "
                            "builds; pass the spec string or the topology parse() returns")
    if tree.op in LEAVES:
        return _bfb.build_bfb(topo, coll).with_meta(topology=topo.spec)
    extra = {"topology": topo.spec, "expansion": str(tree)}
    if coll is Collective.ALLGATHER:
        return b.ag(tree, False).with_meta(**extra)
    rs = reverse(b.ag(tree, True))  # Theorem 1: the allgather of T^T, reversed, is a reduce-scatter of T
    meta = {**rs.meta, **extra}
    if coll is Collective.REDUCE_SCATTER:
        return rs.with_meta(**extra)
    return concat(rs, b.ag(tree, False), meta=meta)


def build_expansion(topology: Topology, collective, *, variant=None, ports=None, **options) -> Schedule:
    """Registry builder: :func:`expanded_schedule` of a topology built by expansion operators (its spec).

    ``variant`` and ``ports`` are ignored (one variant, ``bandwidth``).

    Returns:
        The Schedule of ``collective`` that :func:`expanded_schedule` builds for ``topology`` (N ranks, one block
        each).

    Raises:
        UnsupportedShapeError: options given, or a topology whose spec has no expansion operator (use ``bfb``).
        SpecError, TopologyError, ScheduleError, SolverError, ResourceError: as :func:`expanded_schedule`.

    Source: Zhao et al. (NSDI'25) Sec. 5 (expansion techniques); docs/expansions.md, "Schedules".

    >>> from directcoll.topology import parse
    >>> s = build_expansion(parse("line(complete:4)"), "allgather")
    >>> s.nranks, s.num_steps, s.meta["algorithm"]
    (12, 2, 'expansion')
    """
    if options:
        raise UnsupportedShapeError(f"expansion takes no options; got {', '.join(sorted(options))}")
    if _tree_of(topology)[0].op in LEAVES:
        raise UnsupportedShapeError(f"expansion: {topology.spec} is not built by line/degree/product/power/bidir "
                                    "operators; its schedule is plain BFB (algorithm 'bfb')")
    return expanded_schedule(topology, collective)
