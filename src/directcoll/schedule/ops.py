"""Passes over the schedule IR: sequence, reverse, run side by side, shift steps, summarize.

Source: docs/architecture.md, "Schedule IR"; the reversal is Zhao et al. (NSDI'25) App. B, Theorem 1, the relabelling
their Def. 7, running parts side by side Swing (NSDI'24) Sec. 4.1's multiport technique.

>>> from directcoll.algorithms.ring import ring_allgather, ring_reduce_scatter
>>> concat(ring_reduce_scatter(range(4)), ring_allgather(range(4)))
Schedule(allreduce, unknown, N=4, nblocks=4, steps=6, transfers=24)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from math import lcm

import numpy as np

from directcoll.errors import ScheduleError
from directcoll.schedule.ir import COPY, REDUCE, Collective, Schedule, reorder_csr

_SEQUENCES = {(Collective.REDUCE_SCATTER, Collective.ALLGATHER): Collective.ALLREDUCE}


def offset_steps(schedule: Schedule, by: int) -> Schedule:
    """The same schedule with every step index increased by ``by`` (>= -first step).

    Returns:
        A :class:`~directcoll.schedule.ir.Schedule` sharing every other array; ``num_steps`` grows by ``by``.

    Raises:
        ScheduleError: a shift that would make a step negative.

    Source: docs/architecture.md, "Schedule IR" (bulk-synchronous steps).

    >>> from directcoll.algorithms.ring import ring_reduce_scatter
    >>> offset_steps(ring_reduce_scatter(range(4)), 2).num_steps
    5
    """
    if schedule.num_transfers and schedule.step[0] + by < 0:
        raise ScheduleError(f"offset_steps: shifting by {by} would make step {schedule.step[0] + by} negative")
    return replace(schedule, step=schedule.step + by)


def concat(first: Schedule, second: Schedule, *, meta: dict | None = None) -> Schedule:
    """Run ``second`` after ``first``: reduce-scatter followed by allgather gives allreduce.

    Both must have the same N, nblocks and ownership. Denominators are brought to their lcm.

    Args:
        first: a reduce-scatter; second: an allgather starting where ``first`` leaves its blocks.
        meta: the result's metadata (default: a copy of ``first.meta``).

    Returns:
        An allreduce :class:`~directcoll.schedule.ir.Schedule` with ``first.num_steps + second.num_steps`` steps.

    Raises:
        ScheduleError: a pair other than (reduce_scatter, allgather), or mismatched N / nblocks / owner / scratch.

    Source: Swing (NSDI'24) Sec. 2.1 (allreduce as reduce-scatter then allgather); Zhao et al. (NSDI'25) App. B
    (Theorem 2: allreduce from reduce-scatter plus allgather).

    >>> from directcoll.algorithms.ring import ring_allgather, ring_reduce_scatter
    >>> concat(ring_reduce_scatter(range(4)), ring_allgather(range(4))).num_steps
    6
    """
    kind = _SEQUENCES.get((first.collective, second.collective))
    if kind is None:
        raise ScheduleError(f"concat: cannot sequence {first.collective.value} then "
                            f"{second.collective.value}; accepted: reduce_scatter then allgather")
    if (first.nranks, first.nblocks) != (second.nranks, second.nblocks):
        raise ScheduleError(f"concat: N/nblocks differ: {first.nranks}/{first.nblocks} vs "
                            f"{second.nranks}/{second.nblocks}")
    if not np.array_equal(first.owner, second.owner):
        raise ScheduleError("concat: the reduce-scatter leaves blocks where the allgather does not start")
    if first.nscratch != second.nscratch:
        raise ScheduleError("concat: both schedules must declare the same scratch space")
    a, b = _common_denominator(first, second)
    b = offset_steps(b, a.num_steps)
    offsets = np.concatenate([a.piece_offsets, b.piece_offsets[1:] + a.piece_offsets[-1]])
    routes = _concat_routes([a, b])
    return Schedule(kind, a.nranks, a.nblocks, np.concatenate([a.step, b.step]),
                    np.concatenate([a.src, b.src]), np.concatenate([a.dst, b.dst]),
                    np.concatenate([a.op, b.op]), offsets, np.concatenate([a.piece_start, b.piece_start]),
                    np.concatenate([a.piece_stop, b.piece_stop]), a.denominator, None, a.nscratch,
                    _concat_shifts([a, b]), *routes, meta=meta if meta is not None else dict(first.meta))


def reverse(schedule: Schedule, *, meta: dict | None = None) -> Schedule:
    """Time-reverse a schedule on the transposed graph: allgather <-> reduce-scatter, broadcast <-> reduce (the
    root, in meta, is kept; valid when every rank receives every cell once, see :mod:`directcoll.algorithms.rooted`).

    Step t becomes step T-1-t, src and dst swap, copy becomes reduce and vice versa (Zhao et al. Theorem 1,
    Corollary 1.1). Ownership is kept: the reduce-scatter that reverses an allgather leaves block b at the
    rank the allgather started it from.

    Returns:
        A :class:`~directcoll.schedule.ir.Schedule` of the other collective with the same N, nblocks and steps.

    Raises:
        ScheduleError: an allreduce (it is its own kind of collective, not a reversal pair) or a schedule
            with explicit routes (their links would need the topology to be reversed).

    Source: Zhao et al. (NSDI'25) App. B, Def. 5 (reverse schedule), Theorem 1 and Corollary 1.1.

    >>> from directcoll.algorithms.ring import ring_allgather
    >>> reverse(ring_allgather(range(4))).collective.value
    'reduce_scatter'
    """
    flip = {Collective.ALLGATHER: Collective.REDUCE_SCATTER, Collective.REDUCE_SCATTER: Collective.ALLGATHER,
            Collective.BROADCAST: Collective.REDUCE, Collective.REDUCE: Collective.BROADCAST}
    if schedule.collective not in flip:
        raise ScheduleError(f"reverse: only allgather, reduce_scatter, broadcast and reduce reverse; got "
                            f"{schedule.collective}")
    if schedule.route_offsets is not None:
        raise ScheduleError("reverse: schedules with explicit routes cannot be reversed without the topology")
    t = schedule.num_steps
    order = np.arange(schedule.num_transfers)[::-1]
    order = order[np.argsort(t - 1 - schedule.step[order], kind="stable")]
    offsets, idx = reorder_csr(schedule.piece_offsets, order)
    op = np.where(schedule.op[order] == REDUCE, COPY, REDUCE)
    shift = schedule.shift[idx]  # the reversed piece is read where the original landed, and lands back
    return Schedule(flip[schedule.collective], schedule.nranks, schedule.nblocks, t - 1 - schedule.step[order],
                    schedule.dst[order], schedule.src[order], op, offsets,
                    schedule.piece_start[idx] + shift, schedule.piece_stop[idx] + shift, schedule.denominator,
                    schedule.owner, schedule.nscratch, None if schedule.piece_shift is None else -shift,
                    meta=meta if meta is not None else dict(schedule.meta))


def relabel(schedule: Schedule, rank_map, block_map=None, *, meta: dict | None = None) -> Schedule:
    """The schedule g(A) of Zhao et al. Def. 7: rank r becomes ``rank_map[r]`` and block b becomes
    ``block_map[b]`` (default: the rank map, for schedules with one block per rank). If g is an isomorphism
    from G to H, g(A) runs on H exactly as A runs on G; with H = G^T and a reversal, this is Theorem 2's
    reduce-scatter of a reverse-symmetric topology.

    Pieces are cut at block boundaries and moved block by block (offsets within a block are kept); ownership
    follows: block ``block_map[b]`` belongs to ``rank_map[owner[b]]``.

    Args:
        rank_map: int (N,), a permutation; block_map: int (nblocks,), a permutation, or None.

    Returns:
        A :class:`~directcoll.schedule.ir.Schedule` with the same collective, N, nblocks and steps.

    Raises:
        ScheduleError: a map that is not a permutation of the right length, or a schedule with scratch blocks,
            displaced pieces or explicit routes (their meaning depends on the original labels).

    Source: Zhao et al. (NSDI'25) App. B, Def. 7 (schedule isomorphism) and Theorem 2.

    >>> from directcoll.algorithms.ring import ring_reduce_scatter
    >>> relabel(ring_reduce_scatter(range(4)), [1, 0, 2, 3], [0, 1, 2, 3]).owner
    array([1, 0, 2, 3])
    """
    n, nb, den = schedule.nranks, schedule.nblocks, schedule.denominator
    rank_map = np.asarray(rank_map, dtype=np.int64)
    block_map = rank_map if block_map is None else np.asarray(block_map, dtype=np.int64)
    for name, m, size in (("rank_map", rank_map, n), ("block_map", block_map, nb)):
        if len(m) != size or not np.array_equal(np.sort(m), np.arange(size)):
            raise ScheduleError(f"relabel: {name} must be a permutation of 0..{size - 1}")
    if schedule.nscratch or schedule.piece_shift is not None or schedule.route_offsets is not None:
        raise ScheduleError("relabel: schedules with scratch blocks, displaced pieces or routes are not supported")
    per_transfer, new_start, new_stop = move_blocks(schedule.piece_transfer, schedule.piece_start,
                                                    schedule.piece_stop, den, block_map, schedule.num_transfers)
    offsets = np.concatenate([[0], np.cumsum(per_transfer)]).astype(np.int64)
    owner = None
    if schedule.owner is not None:
        owner = np.empty(nb, np.int64)
        owner[block_map] = rank_map[schedule.owner]
    if meta is None and schedule.collective.rooted:
        meta = {**schedule.meta, "root": int(rank_map[schedule.root])}
    return Schedule(schedule.collective, n, nb, schedule.step, rank_map[schedule.src], rank_map[schedule.dst],
                    schedule.op, offsets, new_start, new_stop, den, owner=owner,
                    meta=meta if meta is not None else dict(schedule.meta))


def move_blocks(transfer, start, stop, den: int, block_map, num_transfers: int):
    """Pieces cut at block boundaries and moved block by block: block b's part of a piece goes to block
    ``block_map[b]``, its offset within the block kept (the pieces of :func:`relabel`).

    Args:
        transfer: int (P,), the transfer of every piece, ascending; start, stop: int (P,), numerators over ``den``.
        den: the denominator; block_map: int (nblocks,), a permutation; num_transfers: T.

    Returns:
        (pieces per transfer int64 (T,), start, stop int64 (P',)): every piece split into the blocks it touches,
        in the order of the pieces and then of the blocks.

    Raises:
        Nothing of ours: numpy on arrays the caller checked.

    Source: Zhao et al. (NSDI'25) App. B, Def. 7 (schedule isomorphism).

    >>> move_blocks(np.array([0]), np.array([1]), np.array([5]), 2, np.array([2, 0, 1]), 1)[1:]
    (array([5, 0, 2]), array([6, 2, 3]))
    """
    start, stop = np.asarray(start, np.int64), np.asarray(stop, np.int64)
    first, last = start // den, (stop - 1) // den
    count = last - first + 1  # blocks each piece touches
    piece = np.repeat(np.arange(len(start)), count)
    block = np.repeat(first, count) + np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    lo = np.maximum(start[piece], block * den) - block * den
    hi = np.minimum(stop[piece], (block + 1) * den) - block * den
    new_start = np.asarray(block_map)[block] * den + lo
    per_transfer = np.bincount(np.asarray(transfer)[piece], minlength=num_transfers)
    return per_transfer, new_start, new_start + (hi - lo)


def from_reduce_scatter(rs: Schedule, collective, *, meta: dict | None = None) -> Schedule:
    """The ``collective`` a reduce-scatter yields: itself, its reversal (allgather), or itself followed by its
    reversal (allreduce). ``meta`` (default: rs.meta) is attached to the result.

    Returns:
        A :class:`~directcoll.schedule.ir.Schedule` with ``rs``'s N and nblocks; twice its steps for allreduce.

    Raises:
        ScheduleError: ``rs`` is not a reduce-scatter, ``collective`` is not a collective name, or ``rs`` has
            explicit routes (see :func:`reverse`).

    Source: Zhao et al. (NSDI'25) App. B, Theorem 1 and Corollary 1.1; Swing (NSDI'24) Sec. 2.1.

    >>> from directcoll.algorithms.ring import ring_reduce_scatter
    >>> from_reduce_scatter(ring_reduce_scatter(range(4)), "allreduce")
    Schedule(allreduce, unknown, N=4, nblocks=4, steps=6, transfers=24)
    """
    if rs.collective is not Collective.REDUCE_SCATTER:
        raise ScheduleError(f"from_reduce_scatter: expected a reduce_scatter, got {rs.collective.value}")
    coll = Collective.parse(collective)
    meta = dict(rs.meta if meta is None else meta)
    if coll is Collective.REDUCE_SCATTER:
        return replace(rs, meta=meta)
    if coll is Collective.ALLGATHER:
        return reverse(rs, meta=meta)
    return concat(rs, reverse(rs), meta=meta)


def concurrent(parts: list[Schedule], *, meta: dict | None = None) -> Schedule:
    """Run several schedules of one collective at the same time on consecutive parts of the buffer.

    Part i's blocks become blocks ``[sum of earlier nblocks, ...)`` of the result; every part must have the
    same nblocks, so the parts are equal slices of the vector (the multiport technique of Swing Sec. 4.1:
    2D collectives on n/(2D) bytes each). Steps are kept: step t of every part runs in step t.

    Returns:
        A :class:`~directcoll.schedule.ir.Schedule` with nblocks = k * part nblocks (k parts) and the parts'
        scratch blocks after all data blocks.

    Raises:
        ScheduleError: no parts, parts of different collectives, N, nblocks or scratch, or a piece that straddles
            the data and scratch regions.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 4.1 (plain and mirrored collectives on 1/(2D) of the data).

    >>> from directcoll.algorithms.ring import ring_reduce_scatter
    >>> concurrent([ring_reduce_scatter(range(4)), ring_reduce_scatter(range(4)[::-1])]).nblocks
    8
    """
    if not parts:
        raise ScheduleError("concurrent: need at least one schedule")
    c, n, nb = parts[0].collective, parts[0].nranks, parts[0].nblocks
    if any((p.collective, p.nranks, p.nblocks) != (c, n, nb) for p in parts):
        raise ScheduleError("concurrent: every part must have the same collective, N and nblocks")
    if any(p.nscratch != parts[0].nscratch for p in parts):
        raise ScheduleError("concurrent: every part must declare the same scratch space")
    parts = list(_common_denominator(*parts))
    den, ns, k = parts[0].denominator, parts[0].nscratch, len(parts)

    def place(x, i):  # part i's coordinate x (numerators) in the combined buffer: data, then scratch, by part
        data = x < nb * den
        return np.where(data, x + i * nb * den, x + (k - 1) * nb * den + i * ns * den)

    step = np.concatenate([p.step for p in parts])
    order = np.argsort(step, kind="stable")
    for p in parts:
        if ns and np.any((p.piece_start < nb * den) & (p.piece_stop > nb * den)):
            raise ScheduleError("concurrent: a piece straddles the data and scratch regions")
    starts = np.concatenate([place(p.piece_start, i) for i, p in enumerate(parts)])
    stops = np.concatenate([place(p.piece_stop - 1, i) + 1 for i, p in enumerate(parts)])
    lands = np.concatenate([place(p.piece_start + p.shift, i) for i, p in enumerate(parts)])
    base = np.cumsum([0] + [p.num_pieces for p in parts])
    all_offsets = np.concatenate([[0]] + [p.piece_offsets[1:] + b for p, b in zip(parts, base, strict=False)])
    offsets, idx = reorder_csr(all_offsets, order)
    owner = None if parts[0].owner is None else np.concatenate([p.owner for p in parts])
    routes = _concat_routes(parts)
    if routes[0] is not None:
        route_offsets, ridx = reorder_csr(routes[0], order)
        routes = (route_offsets, routes[1][ridx])
    shifted = any(p.piece_shift is not None for p in parts)
    return Schedule(c, n, nb * k, step[order], np.concatenate([p.src for p in parts])[order],
                    np.concatenate([p.dst for p in parts])[order], np.concatenate([p.op for p in parts])[order],
                    offsets, starts[idx], stops[idx], den, owner, ns * k, (lands - starts)[idx] if shifted else None,
                    *routes, meta=meta if meta is not None else dict(parts[0].meta))


def _common_denominator(*schedules: Schedule) -> tuple[Schedule, ...]:
    den = lcm(*(s.denominator for s in schedules))
    return tuple(s if s.denominator == den else replace(
        s, denominator=den, piece_start=s.piece_start * (den // s.denominator),
        piece_stop=s.piece_stop * (den // s.denominator),
        piece_shift=None if s.piece_shift is None else s.piece_shift * (den // s.denominator)) for s in schedules)


def _concat_shifts(parts) -> np.ndarray | None:
    if all(p.piece_shift is None for p in parts):
        return None
    return np.concatenate([p.shift for p in parts])


def _concat_routes(parts) -> tuple[np.ndarray | None, np.ndarray | None]:
    if all(p.route_offsets is None for p in parts):
        return None, None
    offs, links, base = [np.zeros(1, np.int64)], [], 0
    for p in parts:
        o = p.route_offsets if p.route_offsets is not None else np.zeros(p.num_transfers + 1, np.int64)
        offs.append(o[1:] + base)
        links.append(p.route_links if p.route_links is not None else np.zeros(0, np.int64))
        base += o[-1]
    return np.concatenate(offs), np.concatenate(links)


@dataclass(frozen=True)
class StepSummary:
    """Per-step figures, each an array of shape (num_steps,); sizes are fractions of the vector.

    Attributes:
        transfers: int (S,), transfers in the step.
        bytes_per_rank: float (S,), mean over ranks of the data a rank sends in the step.
        max_bytes_per_rank: float (S,), the most any rank sends in the step.
        max_transfer: float (S,), the largest single transfer in the step.

    Raises:
        Nothing: a record built by :func:`step_summary`.

    Source: docs/architecture.md, "Cost and simulation" (bytes sent per rank per step).
    """

    transfers: np.ndarray
    bytes_per_rank: np.ndarray      # mean over ranks of the data a rank sends in the step
    max_bytes_per_rank: np.ndarray  # the most any rank sends in the step
    max_transfer: np.ndarray        # the largest single transfer in the step

    def rows(self) -> list[dict]:
        """One dict per step (``step``, ``transfers``, and the three sizes as floats), for tables and JSON.

        Raises:
            Nothing: converts arrays to Python numbers.

        Source: docs/architecture.md, "Engines, runtimes and scale" (machine-readable output).

        >>> from directcoll.algorithms.ring import ring_allgather
        >>> step_summary(ring_allgather(range(4))).rows()[0]["bytes_per_rank"]
        0.25
        """
        return [{"step": i, "transfers": int(self.transfers[i]), "bytes_per_rank": float(self.bytes_per_rank[i]),
                 "max_bytes_per_rank": float(self.max_bytes_per_rank[i]),
                 "max_transfer": float(self.max_transfer[i])} for i in range(len(self.transfers))]


def step_summary(schedule: Schedule) -> StepSummary:
    """Transfers, mean and max data sent per rank, and largest transfer, for every step.

    Sizes are fractions of the vector (multiply by the vector's bytes to get bytes); local copies and
    reductions (src == dst) count as transfers but send nothing.

    Returns:
        A :class:`StepSummary` whose arrays have shape (num_steps,).

    Raises:
        Nothing: the schedule was validated when built.

    Source: docs/architecture.md, "Cost and simulation" (steps and bytes sent per rank, the inputs of T_L / T_B).

    >>> from directcoll.algorithms.ring import ring_allgather
    >>> s = step_summary(ring_allgather(range(4)))
    >>> s.transfers.tolist(), s.max_transfer.tolist()
    ([4, 4, 4], [0.25, 0.25, 0.25])
    """
    s, size = schedule.step, np.where(schedule.is_local, 0.0, schedule.transfer_size)
    nsteps = schedule.num_steps
    transfers = np.bincount(s, minlength=nsteps)
    per_rank = np.zeros((nsteps, schedule.nranks))
    np.add.at(per_rank, (s, schedule.src), size)
    biggest = np.zeros(nsteps)
    np.maximum.at(biggest, s, size)
    return StepSummary(transfers, per_rank.mean(axis=1), per_rank.max(axis=1), biggest)
