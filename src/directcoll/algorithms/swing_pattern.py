"""The step pattern of Swing (:func:`directcoll.algorithms.swing.swing`) without its schedule.

Timing a step needs only who sends how many bytes to whom (:class:`~directcoll.schedule.pattern.StepPattern`).
Swing's bandwidth-optimal construction for shapes that are not powers of two tracks a block set per rank and
step, N^2 pieces in all (2.94 TiB at Fugaku's 158,976 ranks); its pattern needs far less, because a block set
is a product over the dimensions (:func:`directcoll.algorithms.swing.product_allgather`). At an allgather step
in dimension w, the 1D transfer x -> y with block set M moves, from every rank a with a_w = x,

    |M| * prod_{i != w} |K_i(a_i)|   blocks   (K_i(c): the blocks coordinate c knows in dimension i so far)

to a + (y - x) e_w. So the pattern needs only the D small 1D plans (d_i x d_i masks) and, per step, one
N-element product of per-dimension counts: O(N) per step instead of O(N^2) pieces. The reduce-scatter is the
allgather reversed (src and dst swapped, receivers reduce), the allreduce the two in sequence, exactly as
:func:`~directcoll.schedule.ops.from_reduce_scatter` builds them. The power-of-two butterfly (a rank sends
2^(L-1-s) of its part's N blocks at step s) and the latency-optimal variant (whole part every step, with the
fold pre/post steps) are written the same way from :func:`~directcoll.algorithms.butterfly.peer_table`.

Columns are allocated once and filled step by step (no list of per-step arrays to concatenate), so the peak is
the pattern itself: 25 B per transfer (src, dst int64, size float64, reduce bool).

Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1.1, 3.1.2, 3.2 (Fig. 3), 4.1-4.2 and App. A.2; docs/architecture.md,
"Cost and simulation" (step patterns); docs/simulation.md, "Symmetry".

>>> from directcoll.topology import parse
>>> from directcoll.schedule.pattern import pattern_of
>>> from directcoll.algorithms.swing import swing
>>> t = parse("torus:6x3")
>>> swing_pattern(t).equivalent(pattern_of(swing(t)))
True
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from directcoll.algorithms import butterfly as bf
from directcoll.algorithms.swing import (
    VARIANTS,
    collectives_for_ports,
    libswing_1d_allgather,
    logical_shape,
    swing,
    swing_1d_allgather,
)
from directcoll.errors import ScheduleError, UnsupportedShapeError
from directcoll.schedule.ir import Collective
from directcoll.schedule.pattern import StepPattern, from_steps, pattern_of
from directcoll.topology.model import Topology

#: Bytes per transfer of a pattern built here: src and dst int64, size float64, reduce bool.
PATTERN_BYTES_PER_TRANSFER = 25


def reduce_scatter_pattern(nranks: int, collective, counts, fill: Callable[[int, np.ndarray, np.ndarray,
                           np.ndarray], None], meta: dict) -> StepPattern:
    """The pattern of a reduce-scatter given step by step, of the allgather that reverses it, or of both in
    sequence (allreduce), written into columns allocated once.

    Args:
        nranks: N.
        collective: ``reduce_scatter``, ``allgather`` or ``allreduce`` (anything :meth:`Collective.parse` takes).
        counts: int (K,), transfers of every reduce-scatter step, in order.
        fill: ``fill(k, src, dst, size)`` writes reduce-scatter step k's transfers into the views it gets (length
            ``counts[k]``; sizes as fractions of the vector); the allgather step reversing it is the same with src
            and dst swapped and no reduction.
        meta: the pattern's metadata.

    Returns:
        A :class:`~directcoll.schedule.pattern.StepPattern`: K distinct steps (reduce-scatter, allgather) or 2K
        (allreduce: the reduce-scatter's steps, then the allgather's, which runs them in reverse order), equal to
        :func:`~directcoll.schedule.pattern.pattern_from_reduce_scatter` of the same steps.

    Raises:
        ScheduleError: an unknown collective name, or a collective other than these three.

    Source: Zhao et al. (NSDI'25) App. B, Theorem 1 (time reversal); docs/architecture.md, "Cost and simulation".

    >>> def ring4(k, src, dst, size):
    ...     src[:] = np.arange(4); dst[:] = (src + 1) % 4; size[:] = 0.25
    >>> reduce_scatter_pattern(4, "allreduce", [4, 4, 4], ring4, {}).sequence.tolist()
    [0, 1, 2, 5, 4, 3]
    """
    coll = Collective.parse(collective)
    if coll not in (Collective.REDUCE_SCATTER, Collective.ALLGATHER, Collective.ALLREDUCE):
        raise ScheduleError(f"reduce_scatter_pattern: {coll.value} is not built from a reduce-scatter")
    counts = np.asarray(counts, dtype=np.int64)
    k = len(counts)
    with_rs, with_ag = coll is not Collective.ALLGATHER, coll is not Collective.REDUCE_SCATTER
    per = np.r_[counts if with_rs else [], counts if with_ag else []].astype(np.int64)
    offsets = np.r_[0, np.cumsum(per)].astype(np.int64)
    total = int(offsets[-1])
    src, dst = np.empty(total, np.int64), np.empty(total, np.int64)
    size, reduce = np.empty(total, float), np.zeros(total, bool)
    base = k if with_rs else 0
    for j in range(k):
        a, b = offsets[j], offsets[j + 1]
        if with_rs:
            fill(j, src[a:b], dst[a:b], size[a:b])
            reduce[a:b] = True
            if with_ag:
                c, e = offsets[base + j], offsets[base + j + 1]
                src[c:e], dst[c:e], size[c:e] = dst[a:b], src[a:b], size[a:b]
        else:
            fill(j, dst[a:b], src[a:b], size[a:b])
    rs_seq, ag_seq = list(range(k)), [base + j for j in reversed(range(k))]
    sequence = (rs_seq if with_rs else []) + (ag_seq if with_ag else [])
    return StepPattern(nranks, coll.value, offsets, src, dst, size, reduce, np.asarray(sequence, np.int64),
                       meta=dict(meta))


def _mirror(plan: dict, d: int) -> dict:
    """A 1D plan conjugated by a -> -a mod d (ranks and blocks): the mirrored collective of Sec. 4.1."""
    neg = (-np.arange(d)) % d
    return {s: [(int(neg[a]), int(neg[q]), mask[neg]) for a, q, mask in sends] for s, sends in plan.items()}


def _product_steps(shape: tuple[int, ...], parts: list[tuple[int, bool]], plan_1d=swing_1d_allgather):
    """The allgather steps of the concurrent block-set products, as per-part lists of per-step closures.

    Returns (counts, writers): counts int (L,) transfers per allgather step over all parts; writers[t] a list of
    (n, write) with write(src, dst, size) filling n transfers of part-step t."""
    p = int(np.prod(shape))
    base = [plan_1d(d) for d in shape]
    strides = [int(np.prod(shape[i + 1:])) for i in range(len(shape))]
    grid = np.arange(p).reshape(shape)
    scale = 1.0 / (p * len(parts))
    per_part = []
    for first_dim, mirrored in parts:
        plans = [_mirror(pl, d) if mirrored else pl for pl, d in zip(base, shape, strict=True)]
        known = [np.eye(d, dtype=bool) for d in shape]
        seq = bf.dimension_sequence([len(pl) for pl in plans], first_dim)
        steps = []
        for dim, sigma in reversed(seq):
            counts = [k.sum(axis=1).astype(float) for k in known]   # |K_i(c)| for every coordinate c
            sends = [(x, y, float(mask.sum())) for x, y, mask in plans[dim][sigma]]
            steps.append((dim, sends, counts))
            for _x, y, mask in plans[dim][sigma]:
                known[dim][y] |= mask
        per_part.append(steps)
    nsteps = len(per_part[0])
    counts = np.array([sum(len(sends) * (p // shape[dim]) for dim, sends, _ in (pp[t] for pp in per_part))
                       for t in range(nsteps)], dtype=np.int64)

    def writer(t: int, src: np.ndarray, dst: np.ndarray, size: np.ndarray) -> None:
        at = 0
        for pp in per_part:
            dim, sends, cnt = pp[t]
            weight = np.ones((1,) * len(shape))
            for i, c in enumerate(cnt):
                if i != dim:
                    weight = weight * c.reshape([-1 if j == i else 1 for j in range(len(shape))])
            weight = np.broadcast_to(weight, shape)
            for x, y, nmask in sends:
                senders = np.take(grid, x, axis=dim).ravel()
                n = len(senders)
                src[at:at + n] = senders
                dst[at:at + n] = senders + (y - x) * strides[dim]
                size[at:at + n] = np.take(weight, x, axis=dim).ravel() * (nmask * scale)
                at += n

    return counts, writer


def _butterfly_steps(shape: tuple[int, ...], parts: list[tuple[int, bool]]):
    """Power-of-two shapes: reduce-scatter step s sends 2^(L-1-s) of a part's N blocks to the Swing peer."""
    p = int(np.prod(shape))
    peers = [bf.peer_table("swing", shape, dim, mirrored) for dim, mirrored in parts]
    steps = len(peers[0])
    counts = np.full(steps, p * len(parts), dtype=np.int64)
    ranks = np.arange(p)

    def writer(s: int, src: np.ndarray, dst: np.ndarray, size: np.ndarray) -> None:
        for i, pt in enumerate(peers):
            src[i * p:(i + 1) * p] = ranks
            dst[i * p:(i + 1) * p] = pt[s]
        size[:] = (1 << (steps - 1 - s)) / (p * len(parts))

    return counts, writer


def _latency_pattern(topology: Topology, shape, parts, meta: dict) -> StepPattern:
    """Swing's latency-optimal allreduce (Sec. 3.1.2) with the fold of :class:`~directcoll.algorithms.butterfly.Fold`:
    the folded ranks' whole vector first, then every part's whole slice to the Swing peer, then the copy back."""
    fold = bf.Fold(shape)
    k = len(parts)
    peers = [bf.peer_table("swing", fold.sub_shape, dim, mirrored) for dim, mirrored in parts]
    ranks = fold.sub_ranks
    steps = [(fold.extras, fold.targets, 1.0, True)] if fold.needed else []
    for s in range(len(peers[0])):
        steps.append((np.tile(ranks, k), np.concatenate([ranks[pt[s]] for pt in peers]), 1.0 / k, True))
    if fold.needed:
        steps.append((fold.targets, fold.extras, 1.0, False))
    return from_steps(topology.num_compute, Collective.ALLREDUCE.value, steps, list(range(len(steps))),
                      {**meta, "construction": "fold" if fold.needed else "butterfly"})


def swing_pattern(topology: Topology, collective=Collective.ALLREDUCE, *, variant: str | None = None,
                  ports: int | None = None) -> StepPattern:
    """The step pattern of :func:`~directcoll.algorithms.swing.swing` (equal to ``pattern_of(swing(...))``,
    up to the order of transfers within a step), built per step and per dimension.

    Args:
        topology, collective, variant, ports: as :func:`~directcoll.algorithms.swing.swing`.

    Returns:
        A :class:`~directcoll.schedule.pattern.StepPattern` with one distinct step per step of the schedule
        (2 sum_i ceil(log2 d_i) for the bandwidth-optimal allreduce on a torus of sides d_i), about N x ports
        transfers each; meta as :func:`~directcoll.algorithms.swing.swing`'s. Shapes with a side of 1 (which
        the block-set product does not take) get ``pattern_of(swing(...))``.

    Raises:
        UnsupportedShapeError: as :func:`~directcoll.algorithms.swing.swing` (latency variant with a collective
            other than allreduce, an unknown variant, ports out of range).
        ScheduleError: an unknown collective name.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1-3.2, 4.1-4.2 and App. A.2 (the constructions of
    :mod:`directcoll.algorithms.swing`); docs/architecture.md, "Cost and simulation".

    >>> from directcoll.topology import parse
    >>> p = swing_pattern(parse("torus:24x23x2"), "allreduce")  # 1,104 ranks, 6 ports
    >>> p.num_steps, len(p.src) // p.num_steps >= 6 * 1_104
    (22, True)
    """
    collective = Collective.parse(collective)
    variant = variant or "bandwidth"
    shape = logical_shape(topology)
    parts = collectives_for_ports(shape, ports, "swing")
    meta = {"algorithm": "swing", "variant": variant, "ports": len(parts)}
    if variant == "latency":
        if collective is not Collective.ALLREDUCE:
            raise UnsupportedShapeError("swing: the latency-optimal variant is an allreduce; use "
                                        "--variant bandwidth for reduce_scatter and allgather")
        return _latency_pattern(topology, shape, parts, meta)
    if variant not in VARIANTS:
        raise UnsupportedShapeError(f"swing: unknown variant {variant!r}; accepted: {', '.join(VARIANTS)}")
    if variant == "libswing":   # the authors' library's block sets, lifted by the same product on every shape
        counts, writer = _product_steps(shape, parts, libswing_1d_allgather)
        construction = "libswing bitmaps"
    elif all(bf.is_power_of_two(d) for d in shape):
        counts, writer = _butterfly_steps(shape, parts)
        return reduce_scatter_pattern(topology.num_compute, collective, counts, writer,
                                      {**meta, "construction": "butterfly"})
    elif min(shape) < 2:
        return pattern_of(swing(topology, collective, variant=variant, ports=ports))
    else:
        counts, writer = _product_steps(shape, parts)
        construction = "block-set product"
    last = len(counts) - 1      # the reduce-scatter is the allgather reversed: its step k is allgather step L-1-k
    return reduce_scatter_pattern(topology.num_compute, collective, counts[::-1],
                                  lambda k, src, dst, size: writer(last - k, dst, src, size),
                                  {**meta, "construction": construction})


def swing_pattern_bytes(topology: Topology, collective=Collective.ALLREDUCE, variant: str | None = None,
                        ports: int | None = None) -> float | None:
    """The memory :func:`swing_pattern` needs: its transfers (counted from the 1D plans, without building them)
    times :data:`PATTERN_BYTES_PER_TRANSFER`; 0 where the builder refuses the arguments before building anything
    (ports out of range, libswing on an odd side: it then says why); None where it builds the full schedule (a
    side of 1).

    Returns:
        Bytes, a float, or None.

    Raises:
        ScheduleError: an unknown collective name.

    Source: this module's docstring (O(N) transfers per step).

    >>> from directcoll.topology import parse
    >>> swing_pattern_bytes(parse("torus:4x4"))  # 16 ranks x 4 ports x 4 steps x 2 (allreduce) x 25 B
    12800.0
    """
    coll = Collective.parse(collective)
    shape = logical_shape(topology)
    try:
        parts = collectives_for_ports(shape, ports, "swing")
    except UnsupportedShapeError:
        return 0.0
    twice = 2.0 if coll is Collective.ALLREDUCE else 1.0
    if (variant or "bandwidth") == "latency":
        fold = bf.Fold(shape)
        steps = sum(bf.steps_per_dim(fold.sub_shape))
        return float(len(fold.sub_ranks) * len(parts) * steps + 2 * len(fold.extras)) * PATTERN_BYTES_PER_TRANSFER
    if variant == "libswing":
        if any(d % 2 or d < 2 for d in shape):
            return 0.0    # refused by the builder (odd dimension) before it builds anything
        return twice * float(_product_steps(shape, parts, libswing_1d_allgather)[0].sum()) * PATTERN_BYTES_PER_TRANSFER
    if all(bf.is_power_of_two(d) for d in shape):
        return twice * topology.num_compute * len(parts) * sum(bf.steps_per_dim(shape)) * PATTERN_BYTES_PER_TRANSFER
    if min(shape) < 2:
        return None
    return twice * float(_product_steps(shape, parts)[0].sum()) * PATTERN_BYTES_PER_TRANSFER
