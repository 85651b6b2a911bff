"""Breadth-first-broadcast (BFB) schedules (Zhao et al., Sec. 6.1, LP (1) and eq. (2); App. E.2, E.3).

Allgather is a simultaneous broadcast from every node. BFB makes it breadth-first: in step t (1..D, D the
diameter) every node u receives the shard of every v at distance d(v, u) = t, through in-links (w -> u) whose
tail w already holds it (d(v, w) = t - 1). How much of v's shard each such link carries is one small LP per
(u, t), LP (1) of the paper.

The plan (:mod:`~directcoll.synthesis.bfb.plan`: who feeds whom at which step, node 0's alone on a Cayley
topology, translated to every node) and its LPs (:mod:`~directcoll.synthesis.bfb.lp`: the aggregated LP (1) / (14),
the slow-link rule, exact loads and chunks) are the description both this module's schedules and
:mod:`~directcoll.synthesis.bfb.pattern`'s step patterns are made from.

**From loads to pieces.** Every feeding link holds all of v's shard, so only amounts matter (Sec. 6.1). The
c_p shards of a pattern are laid end to end and cut at the cumulative loads of its links, so each source gets
consecutive pieces summing to one whole shard and each link exactly its load z[p, l]. The loads are
exact rationals over one common denominator (:meth:`~directcoll.synthesis.bfb.lp.LoadLPs.denominator`).

Consequences (Sec. 6.1): T_L = D steps, the lowest possible (Theorem 15); data follows shortest paths only;
T_B is eq. (2), sum_t max_u (time of u's most loaded in-link in step t), optimal among BFB schedules (Theorem
16): BW-optimal on tori (Theorem 13), bidirectional rings (F.1), distance-regular graphs (F.3) and circulants
(F.4: degree 4, Conjecture 1 beyond), not on every topology (Sec. 6.2).

Source: Zhao et al. (NSDI'25) Sec. 6.1, App. E; docs/algorithms.md, "BFB schedules".
"""

from __future__ import annotations

import numpy as np

from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import COPY, Collective, Schedule
from directcoll.schedule.ops import relabel, reverse
from directcoll.schedule.phases import Phase, Phases, Pieces, concat
from directcoll.synthesis.bfb.lp import LoadLPs
from directcoll.synthesis.bfb.pieces import merge_adjacent, node_pieces
from directcoll.synthesis.bfb.plan import (
    LinkGraph,
    NodePlan,
    link_graph,
    plan_nodes,
    step_max,
    t_b,
    translation_invariant,
)
from directcoll.topology.model import Topology

VARIANTS = ("bandwidth",)


def _node_transfers(plan: NodePlan, lps: LoadLPs, den: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What node ``plan.u`` receives per step and in-link, from its LP loads: (step 0-based, in-link index into
    ``plan.in_links``, numerator over ``den``) int64 arrays, one row per transfer, sorted by (step, in-link)."""
    z = np.stack([lps.solutions[lp][row] for lp, row in zip(plan.group_lp, plan.group_row, strict=True)])
    total = np.zeros((int(plan.group_step.max()), len(plan.in_links)), dtype=np.int64)
    np.add.at(total, plan.group_step - 1, (z * den).astype(np.int64))
    step, k = np.nonzero(total)
    return step, k, total[step, k]


def _cut(plan: NodePlan, lps: LoadLPs, den: int):
    """Node ``plan.u``'s pieces (:func:`~directcoll.synthesis.bfb.pieces.node_pieces`) grouped into its transfers:
    (step 0-based, in-link index, transfer id, start, stop) with the transfer ids 0.. in (step, in-link) order."""
    step, lk, start, stop = node_pieces(plan, lps.solutions, den)
    new = np.r_[True, (step[1:] != step[:-1]) | (lk[1:] != lk[:-1])]
    return step[new] - 1, lk[new], np.cumsum(new) - 1, start, stop


def _describe(g: LinkGraph, plans: list[NodePlan], lps: LoadLPs, translate_to_all: bool, meta: dict) -> Phases:
    """The BFB allgather, one phase per step: every node's transfers of that step (node 0's moved to every node on a
    translation-invariant topology), their widths from the LP loads, their pieces cut from the same loads."""
    n = g.n
    den = lps.denominator()
    meta = {**meta, "t_b_m_over_b_lp": t_b(g, plans, lps), "bfb_lps": len(lps.solutions),
            **_extra_meta(g, plans, lps, translate_to_all, meta)}
    nsteps = max(int(p.group_step.max()) for p in plans)
    own = [_node_transfers(plan, lps, den) for plan in plans]
    cuts: dict[int, tuple] = {}

    def cut(k: int):  # node k's pieces, cut once for all the steps that read them
        if k not in cuts:
            cuts[k] = _cut(plans[k], lps, den)
        return cuts[k]

    phases = [_translated_phase(g, plans[0], own[0], cut, den, t) if translate_to_all else
              _nodes_phase(g, plans, own, cut, t) for t in range(nsteps)]
    return Phases(Collective.ALLGATHER, n, n, tuple(phases), den, meta=meta)


def _translated_phase(g: LinkGraph, plan: NodePlan, own, cut, den: int, t: int) -> Phase:
    """Step t on a Cayley topology: node u receives what node 0 does, moved by u (sources, links and all). The
    pattern lists the step as one block of N transfers per in-link of node 0 (every node sending once, with one
    offset: the step model's translation layout); the schedule node by node (``Pieces.order``)."""
    n, topo = g.n, g.topology
    step, lk, width = own
    rows = np.flatnonzero(step == t)
    tails = g.src[plan.in_links[lk[rows]]]              # node 0's in-links used at step t: their tails w_l
    nodes = np.arange(n)

    def ends():  # block l: every node u receives over the in-link from u + w_l (node 0's in-link moved by u)
        coords = topo.coords(nodes)
        src = np.concatenate([topo.node_at(coords + c) for c in topo.coords(tails)]) if len(rows) else nodes[:0]
        return src, np.tile(nodes, len(rows)), np.repeat(width[rows], n)

    def pieces(i: int) -> Pieces:
        t_step, _, transfer, start, stop = cut(0)
        keep = t_step[transfer] == t
        transfer, start, stop = transfer[keep] - np.flatnonzero(t_step == t)[0], start[keep], stop[keep]
        v, off, w = start // den, start % den, stop - start
        r = len(rows)
        counts, starts, stops = [], [], []
        for us in np.array_split(nodes, max(1, (n * len(start)) // 2_000_000 + 1)):
            st = (topo.translate(v[None, :], us[:, None]) * den + off).ravel()
            tr = (np.arange(len(us))[:, None] * r + transfer[None, :]).ravel()
            tr, st, sp = merge_adjacent(tr, st, st + np.tile(w, len(us)))
            counts.append(np.bincount(tr, minlength=len(us) * r))
            starts.append(st)
            stops.append(sp)
        order = (np.arange(r)[None, :] * n + nodes[:, None]).ravel()  # schedule transfer u*r + k is ends' k*n + u
        return Pieces(np.concatenate(counts), np.concatenate(starts), np.concatenate(stops), order)

    return Phase(len(rows) * n, COPY, ends, pieces)


def _nodes_phase(g: LinkGraph, plans: list[NodePlan], own, cut, t: int) -> Phase:
    """Step t elsewhere: every node's own transfers of the step, node by node."""
    at = [np.flatnonzero(step == t) for step, _, _ in own]

    def ends():
        links = np.concatenate([plan.in_links[lk[a]] for plan, (_, lk, _), a in zip(plans, own, at, strict=True)])
        return g.src[links], g.dst[links], np.concatenate([w[a] for (_, _, w), a in zip(own, at, strict=True)])

    def pieces(i: int) -> Pieces:
        counts, starts, stops = [], [], []
        for k in range(len(plans)):
            t_step, _, transfer, start, stop = cut(k)
            keep = t_step[transfer] == t
            if not keep.any():
                continue
            transfer, start, stop = merge_adjacent(transfer[keep], start[keep], stop[keep])
            first = np.flatnonzero(t_step == t)
            counts.append(np.bincount(transfer - first[0], minlength=len(first)))
            starts.append(start)
            stops.append(stop)
        return Pieces(np.concatenate(counts), np.concatenate(starts), np.concatenate(stops))

    return Phase(sum(len(a) for a in at), COPY, ends, pieces)


def _extra_meta(g: LinkGraph, plans: list[NodePlan], lps: LoadLPs, translated: bool, meta: dict) -> dict:
    """With ``chunks``: the LP relaxation's T_B (App. E.2); with ``size``: LP (14)'s time and the dropped links."""
    extra = {}
    if "chunks" in meta:
        extra["t_b_m_over_b_relaxed"] = t_b(g, plans, lps, lps.relaxed)
    if "size_bytes" in meta:
        step_time = step_max(plans, lps.full_times)
        extra["bfb_time_s"] = float(step_time.sum()) * g.tau
        per_node = sum(int(np.asarray(lps.dropped)[np.unique(p.group_lp)].sum()) for p in plans)
        extra["bfb_dropped_links"] = per_node * (g.n if translated else 1)
    return extra


def _allgather_steps(g: LinkGraph, chunks: int | None, meta: dict, drop_slow_links: bool = True) -> Phases:
    """The BFB allgather over g's links, described step by step (one LP per (node, step) and orbit)."""
    if g.n == 1:
        return Phases(Collective.ALLGATHER, 1, 1, (), meta=meta)
    plans, lps, translate = plan_nodes(g, chunks, drop_slow_links)
    return _describe(g, plans, lps, translate, meta)


def _allgather_on(g: LinkGraph, chunks: int | None, meta: dict, drop_slow_links: bool = True) -> Schedule:
    return _allgather_steps(g, chunks, meta, drop_slow_links).schedule()


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
    g = link_graph(topology, coll is Collective.REDUCE_SCATTER)
    if g.n == 1:
        return 0, 0.0
    plans, lps, _ = plan_nodes(g, None)
    return max(int(p.group_step.max()) for p in plans), t_b(g, plans, lps)


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
    return _allgather_on(link_graph(topology, False, _size(size)), _chunks(chunks), _meta(chunks, size),
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
    if allgather is not None and translation_invariant(topology) and topology.num_compute > 1:
        negate = topology.node_at(-topology.coords(np.arange(topology.num_compute)))
        keep = {k: v for k, v in allgather.meta.items() if k not in ("algorithm", "variant")}
        return reverse(relabel(allgather, negate), meta={**_meta(chunks, size), **keep})
    return _reduce_scatter_steps(topology, chunks, size, drop_slow_links).schedule()


def _reduce_scatter_steps(topology: Topology, chunks, size, drop_slow_links: bool = True,
                          allgather: Phases | None = None) -> Phases:
    """:func:`bfb_reduce_scatter` described step by step (``allgather``: the allgather's description, reused on a
    translation-invariant Cayley topology)."""
    meta = _meta(chunks, size)
    if translation_invariant(topology) and topology.num_compute > 1:
        ag = allgather if allgather is not None else _allgather_steps(
            link_graph(topology, False, _size(size)), _chunks(chunks), meta, drop_slow_links)
        negate = topology.node_at(-topology.coords(np.arange(topology.num_compute)))
        keep = {k: v for k, v in ag.meta.items() if k not in ("algorithm", "variant")}
        return ag.relabel(negate).reversed({**meta, **keep})
    ag = _allgather_steps(link_graph(topology, True, _size(size)), _chunks(chunks), meta, drop_slow_links)
    extra = {k: v for k, v in ag.meta.items() if k not in meta} if chunks or size else {}  # plain: as recorded
    return ag.reversed({**meta, **extra})


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
    return bfb_steps(topology, collective, chunks=chunks, size=size, **options).schedule()


def bfb_steps(topology: Topology, collective, *, chunks: int | None = None, size: float | None = None,
              **options) -> Phases:
    """BFB's allgather, reduce-scatter or allreduce described step by step: the one description
    :func:`build_bfb` builds its schedule from and :func:`~directcoll.synthesis.bfb.pattern.bfb_pattern` its step
    pattern. The allgather is one phase per step (every node's in-link loads; on a translation-invariant Cayley
    topology node 0's, moved to every node); the reduce-scatter is the allgather relabelled by x -> -x and
    reversed there (Theorem 2), else the transposed graph's allgather reversed (Corollary 1.1); the allreduce is the
    two in sequence.

    Args:
        topology, collective, chunks, size, options: as :func:`build_bfb`.

    Returns:
        A :class:`~directcoll.schedule.phases.Phases` with :func:`build_bfb`'s meta.

    Raises:
        UnsupportedShapeError, ScheduleError, SolverError, ResourceError: as :func:`build_bfb`.

    Source: Zhao et al. (NSDI'25) Sec. 6.1, App. B (Theorem 1, Corollary 1.1, Theorem 2).

    >>> from directcoll.topology import parse
    >>> steps = bfb_steps(parse("torus:8x7x8"), "allgather")  # node 0's LPs; no piece is cut until a schedule
    >>> steps.num_steps, steps.num_pattern_transfers // 448  # diameter 4 + 3 + 4; six in-links every step
    (11, 66)
    """
    if options:
        raise UnsupportedShapeError(f"bfb takes only the options 'chunks' and 'size'; got "
                                    f"{', '.join(sorted(options))}")
    coll = Collective.parse(collective)
    if coll is Collective.ALLGATHER:
        return _allgather_steps(link_graph(topology, False, _size(size)), _chunks(chunks), _meta(chunks, size))
    if coll is Collective.REDUCE_SCATTER:
        return _reduce_scatter_steps(topology, chunks, size)
    ag = _allgather_steps(link_graph(topology, False, _size(size)), _chunks(chunks), _meta(chunks, size))
    rs = _reduce_scatter_steps(topology, chunks, size, allgather=ag)
    meta = dict(rs.meta)
    for key in ("bfb_time_s", "bfb_dropped_links"):
        if key in meta:
            meta[key] = rs.meta[key] + ag.meta[key]
    return concat(rs, ag, meta)


def translation_loads(topology: Topology, *, chunks: int | None = None, size: float | None = None):
    """What node 0 receives in :func:`bfb_allgather` on a translation-invariant Cayley topology, per step and
    in-link (every node u receives the same, moved by u): what :func:`bfb_steps` moves to every node.

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
    g = link_graph(topology, False, _size(size))
    (plan,), lps, _ = plan_nodes(g, _chunks(chunks))
    den = lps.denominator()
    step, k, num = _node_transfers(plan, lps, den)
    return step, g.link[plan.in_links[k]], num, den
