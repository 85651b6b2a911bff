"""One description of a collective's steps, read two ways: as its schedule and as its step pattern.

A family describes its collective once, as :class:`Phases`: a sequence of :class:`Phase` objects, each ``repeat``
consecutive steps that move the same amounts between the same ranks; only which blocks move differs from one of
its steps to the next (a ring's N - 1 reduce-scatter steps are one phase). A phase gives

- ``ends()``: its transfers' sources, destinations and widths (the amount each carries, in numerators of blocks
  over the denominator), computed once for all its steps, and
- ``pieces(i)``: the pieces of its i-th step (which blocks), per transfer.

:meth:`Phases.schedule` reads both and builds the IR (:class:`~directcoll.schedule.ir.Schedule`, pieces and
all); :meth:`Phases.pattern` reads the ends alone, once per phase, and builds the
:class:`~directcoll.schedule.pattern.StepPattern` the step model times: O(transfers) per distinct step where a
schedule can hold O(N^2) pieces (Swing's block sets on non-power-of-two tori) or O(N^2) steps' worth of transfers
(rings at 16,384 ranks). Both come from the one description, so they cannot drift: a family has no second, hand-
written pattern builder, and the schedule checks at every step that its pieces carry exactly the widths the
pattern reads (a :class:`~directcoll.errors.ScheduleError` otherwise), so a description whose widths or
repetitions are wrong fails every schedule it builds.

The operations families compose collectives with are here too, on descriptions, each realizing to exactly what
its namesake in :mod:`directcoll.schedule.ops` gives on the realized schedules (same transfers, in the same
order, with the same pieces): :func:`concurrent` (parts side by side on equal slices, Swing Sec. 4.1),
:meth:`Phases.reversed` (time reversal, Zhao et al. Theorem 1), :func:`concat` (reduce-scatter then allgather),
:meth:`Phases.relabel` (Def. 7) and :func:`from_reduce_scatter`.

Source: docs/architecture.md, "Modules by concept" (one description per algorithm) and "Cost and simulation" (step
patterns); Zhao et al. (NSDI'25) App. B, Def. 5, 7 and Theorem 1; Swing (De Sensi et al., NSDI'24) Sec. 4.1.

>>> import numpy as np
>>> r = np.arange(4)
>>> ring = Phases("reduce_scatter", 4, 4, (Phase(4, REDUCE, lambda: (r, (r + 1) % 4, np.ones(4, np.int64)),
...                                              lambda t: Pieces.single((r - t - 1) % 4, (r - t - 1) % 4 + 1), 3),))
>>> ring.schedule(), ring.pattern().num_distinct
(Schedule(reduce_scatter, unknown, N=4, nblocks=4, steps=3, transfers=12), 1)
>>> from directcoll.schedule.pattern import pattern_of
>>> pattern_of(from_reduce_scatter(ring, "allreduce").schedule()).equivalent(
...     from_reduce_scatter(ring, "allreduce").pattern())
True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from math import lcm
from typing import NamedTuple

import numpy as np

from directcoll.errors import ScheduleError
from directcoll.schedule.ir import COPY, REDUCE, Collective, Schedule, ScheduleBuilder, default_owner, reorder_csr
from directcoll.schedule.ops import move_blocks
from directcoll.schedule.pattern import StepPattern

_EMPTY = np.zeros(0, np.int64)
_FLIP = {Collective.ALLGATHER: Collective.REDUCE_SCATTER, Collective.REDUCE_SCATTER: Collective.ALLGATHER,
         Collective.BROADCAST: Collective.REDUCE, Collective.REDUCE: Collective.BROADCAST}


class Pieces(NamedTuple):
    """The pieces of one step of a :class:`Phase`, CSR by transfer.

    Attributes:
        counts: int64 (T,), pieces per transfer; start, stop: int64 (P,), numerators over the denominator.
        order: int64 (T,) or None: the schedule's transfer j is the phase's ``ends()`` transfer ``order[j]`` (the
            pattern may list a step's transfers in another order than the schedule, e.g. BFB's blocks of one offset
            for the step model's translation layout); None: the same order.

    Raises:
        Nothing: a record.

    Source: docs/architecture.md, "Schedule IR" (pieces stored CSR-style).

    >>> Pieces.single([0, 2], [1, 4]).counts.tolist()
    [1, 1]
    """

    counts: np.ndarray
    start: np.ndarray
    stop: np.ndarray
    order: np.ndarray | None = None

    @staticmethod
    def single(start, stop, order=None) -> Pieces:
        """One piece [start, stop) per transfer.

        Returns:
            A :class:`Pieces` with counts all 1.

        Raises:
            Nothing: wraps the arrays.

        Source: docs/architecture.md, "Schedule IR".
        """
        start = np.asarray(start, np.int64).ravel()
        return Pieces(np.ones(len(start), np.int64), start, np.asarray(stop, np.int64).ravel(), order)


@dataclass(frozen=True)
class Phase:
    """``repeat`` consecutive steps whose transfers move the same amounts between the same ranks.

    Attributes:
        count: T, transfers per step (0: idle steps).
        op: :data:`~directcoll.schedule.ir.COPY` or :data:`~directcoll.schedule.ir.REDUCE`, for every transfer.
        ends: ``ends() -> (src, dst, width)``, int64 (T,) each: ranks, and the numerators (over the denominator, in
            blocks) each transfer carries; called once per realization.
        pieces: ``pieces(i) -> Pieces`` of step i (0 <= i < repeat); a schedule's only.
        repeat: the number of steps (>= 0).

    Raises:
        Nothing: a record; :meth:`Phases.schedule` checks the pieces against the widths.

    Source: docs/architecture.md, "Cost and simulation" (a step's load pattern does not depend on which blocks move).

    >>> idle(2).count, idle(2).repeat
    (0, 2)
    """

    count: int
    op: int
    ends: Callable[[], tuple[np.ndarray, np.ndarray, np.ndarray]]
    pieces: Callable[[int], Pieces]
    repeat: int = 1


def idle(repeat: int) -> Phase:
    """``repeat`` steps in which nothing moves (a part waiting for the others, Swing Sec. 5.2's synchronous dimension
    switching).

    Returns:
        A :class:`Phase` of 0 transfers.

    Raises:
        Nothing: a record.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 5.2 (rings of shorter dimensions idle for the rest of the phase).
    """
    return Phase(0, COPY, lambda: (_EMPTY, _EMPTY, _EMPTY), lambda i: Pieces(_EMPTY, _EMPTY, _EMPTY), repeat)


def _trim(phases) -> list[Phase]:
    """The phases without empty repetitions and without trailing idle steps (a schedule's steps end with its last
    transfer: :attr:`~directcoll.schedule.ir.Schedule.num_steps`)."""
    out = [ph for ph in phases if ph.repeat > 0]
    while out and out[-1].count == 0:
        out.pop()
    return out


@dataclass(frozen=True)
class Phases:
    """A collective described step by step (this module's docstring): its schedule and its pattern in one.

    Attributes:
        collective: what it implements (a :class:`~directcoll.schedule.ir.Collective` or its name).
        nranks: N; nblocks: blocks per rank's buffer; denominator: of every piece end (1 for block algorithms).
        phases: the :class:`Phase` objects in step order.
        owner: int (nblocks,) block owners (reduce-scatter, allgather), None for MPI's default.
        meta: the schedule's and the pattern's metadata.

    Raises:
        ScheduleError: on construction, an unknown collective name.

    Source: docs/architecture.md, "Modules by concept" (one description per algorithm).
    """

    collective: Collective
    nranks: int
    nblocks: int
    phases: tuple[Phase, ...]
    denominator: int = 1
    owner: np.ndarray | None = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "collective", Collective.parse(self.collective))
        object.__setattr__(self, "phases", tuple(self.phases))

    @property
    def num_steps(self) -> int:
        """Steps of the schedule (its idle steps at the end left out). Raises: Nothing.
        Source: docs/architecture.md, "Schedule IR".
        """
        return sum(ph.repeat for ph in _trim(self.phases))

    @property
    def num_pattern_transfers(self) -> int:
        """Transfers of the step pattern: each phase's once. Raises: Nothing.
        Source: docs/architecture.md, "Cost and simulation" (identical steps are timed once).
        """
        return sum(ph.count for ph in _trim(self.phases))

    def effective_owner(self) -> np.ndarray | None:
        """The block owners a schedule of this description has: ``owner``, MPI's default where it is None, None for
        collectives without owners.

        Returns:
            int64 (nblocks,) or None.

        Raises:
            ScheduleError: the default ownership needs N to divide nblocks.

        Source: docs/architecture.md, "Schedule IR" (ownership).
        """
        if not self.collective.has_owner:
            return None
        if self.owner is None:
            return default_owner(self.nranks, self.nblocks)
        return np.asarray(self.owner, dtype=np.int64)

    def with_meta(self, meta: dict) -> Phases:
        """The same description with ``meta`` as its metadata. Returns: a :class:`Phases`. Raises: Nothing.
        Source: docs/architecture.md, "Schedule IR" (metadata).
        """
        return replace(self, meta=dict(meta))

    def with_denominator(self, denominator: int) -> Phases:
        """The same description over a multiple of its denominator (every width and piece end scaled).

        Returns:
            A :class:`Phases` whose schedule is its own with the denominator raised, as
            :func:`directcoll.schedule.ops.concat` brings schedules to a common one.

        Raises:
            ScheduleError: ``denominator`` is not a multiple of the current one.

        Source: docs/architecture.md, "Schedule IR" (pieces as integer numerators over the schedule's denominator).
        """
        if denominator == self.denominator:
            return self
        if denominator % self.denominator:
            raise ScheduleError(f"phases: denominator {denominator} is not a multiple of {self.denominator}")
        f = denominator // self.denominator
        return replace(self, denominator=denominator, phases=tuple(_scaled_phase(ph, f) for ph in self.phases))

    def schedule(self) -> Schedule:
        """The schedule: every step's pieces, each step checked against its phase's widths.

        Returns:
            A validated :class:`~directcoll.schedule.ir.Schedule`.

        Raises:
            ScheduleError: a step whose pieces do not carry its phase's widths (the description contradicts
                itself), or the transfers are inconsistent (:meth:`~directcoll.schedule.ir.Schedule.validate`).
            ResourceError: the schedule outgrows the memory budget while it is built.

        Source: docs/architecture.md, "Schedule IR"; this module's docstring.
        """
        b = ScheduleBuilder(self.collective, self.nranks, self.nblocks, denominator=self.denominator)
        step = 0
        for k, ph in enumerate(_trim(self.phases)):
            if ph.count == 0:
                step += ph.repeat
                continue
            src, dst, width = ph.ends()
            for i in range(ph.repeat):
                pc = ph.pieces(i)
                s, d, w = (src, dst, width) if pc.order is None else (src[pc.order], dst[pc.order], width[pc.order])
                ends = np.concatenate([[0], np.cumsum(pc.stop - pc.start)])
                at = np.concatenate([[0], np.cumsum(pc.counts)])
                if len(pc.counts) != ph.count or not np.array_equal(ends[at[1:]] - ends[at[:-1]], w):
                    raise ScheduleError(f"phases: step {step} (phase {k}, repetition {i}) carries pieces that differ "
                                        f"from its phase's {ph.count} transfer widths: the description contradicts "
                                        "itself")
                b.add_pieces(step, s, d, ph.op, pc.counts, pc.start, pc.stop)
                step += 1
        return b.build(owner=self.owner, meta=dict(self.meta))

    def pattern(self) -> StepPattern:
        """The step pattern: every phase's ends once, repeated as the phase repeats; no pieces are made.

        Returns:
            A :class:`~directcoll.schedule.pattern.StepPattern` equal to ``pattern_of(self.schedule())`` up to the
            order of transfers within a step (sizes: widths / (nblocks x denominator), fractions of the vector),
            written into columns allocated once.

        Raises:
            Nothing of ours: the phases' ``ends`` raise what they raise.

        Source: docs/architecture.md, "Cost and simulation" (step patterns); this module's docstring.
        """
        phases = _trim(self.phases)
        offsets = np.concatenate([[0], np.cumsum([ph.count for ph in phases], dtype=np.int64)]).astype(np.int64)
        total = int(offsets[-1])
        src, dst = np.empty(total, np.int64), np.empty(total, np.int64)
        size, reduce = np.empty(total, float), np.empty(total, bool)
        unit = self.nblocks * self.denominator
        for k, ph in enumerate(phases):
            if ph.count:
                a, b = offsets[k], offsets[k + 1]
                src[a:b], dst[a:b], width = ph.ends()
                size[a:b] = np.asarray(width, dtype=float) / unit
                reduce[a:b] = ph.op == REDUCE
        sequence = np.repeat(np.arange(len(phases), dtype=np.int64), [ph.repeat for ph in phases])
        return StepPattern(self.nranks, self.collective.value, offsets, src, dst, size, reduce, sequence,
                           meta=dict(self.meta))

    def reversed(self, meta: dict | None = None) -> Phases:
        """The time reversal (:func:`directcoll.schedule.ops.reverse`): step t becomes T-1-t, src and dst swap, copy
        and reduce swap, ownership kept; allgather <-> reduce-scatter, broadcast <-> reduce.

        Returns:
            A :class:`Phases` whose schedule is ``reverse(self.schedule())``, transfer for transfer.

        Raises:
            ScheduleError: a collective that does not reverse (allreduce, all-to-all).

        Source: Zhao et al. (NSDI'25) App. B, Def. 5 and Theorem 1.
        """
        if self.collective not in _FLIP:
            raise ScheduleError(f"reverse: only allgather, reduce_scatter, broadcast and reduce reverse; got "
                                f"{self.collective}")
        return Phases(_FLIP[self.collective], self.nranks, self.nblocks,
                      tuple(_reversed_phase(ph) for ph in reversed(_trim(self.phases))), self.denominator, self.owner,
                      dict(self.meta) if meta is None else meta)

    def relabel(self, rank_map, meta: dict | None = None) -> Phases:
        """The description relabelled by an isomorphism (:func:`directcoll.schedule.ops.relabel` with the rank map
        as block map): rank r becomes ``rank_map[r]``, block b becomes ``rank_map[b]``.

        Returns:
            A :class:`Phases` whose schedule is ``relabel(self.schedule(), rank_map)``, transfer for transfer.

        Raises:
            ScheduleError: a map that is not a permutation of 0..N-1, or nblocks != N.

        Source: Zhao et al. (NSDI'25) App. B, Def. 7.
        """
        rank_map = np.asarray(rank_map, dtype=np.int64)
        if self.nblocks != self.nranks or len(rank_map) != self.nranks or \
                not np.array_equal(np.sort(rank_map), np.arange(self.nranks)):
            raise ScheduleError(f"relabel: rank_map must be a permutation of 0..{self.nranks - 1} (and nblocks = N)")
        owner = self.effective_owner()
        if owner is not None:
            moved = np.empty(self.nblocks, np.int64)
            moved[rank_map] = rank_map[owner]
            owner = moved
        if meta is None:
            meta = dict(self.meta)
            if self.collective.rooted:
                meta["root"] = int(rank_map[int(self.meta.get("root", 0))])
        den = self.denominator
        return Phases(self.collective, self.nranks, self.nblocks,
                      tuple(_relabelled_phase(ph, rank_map, den) for ph in self.phases), den, owner, meta)


def _reversed_phase(ph: Phase) -> Phase:
    def ends():
        src, dst, width = ph.ends()
        return dst[::-1], src[::-1], width[::-1]

    def pieces(i: int) -> Pieces:
        pc = ph.pieces(ph.repeat - 1 - i)
        offsets = np.concatenate([[0], np.cumsum(pc.counts)]).astype(np.int64)
        _, idx = reorder_csr(offsets, np.arange(ph.count)[::-1])
        order = None if pc.order is None else ph.count - 1 - np.asarray(pc.order)[::-1]
        return Pieces(pc.counts[::-1], pc.start[idx], pc.stop[idx], order)

    return Phase(ph.count, REDUCE if ph.op == COPY else COPY, ends, pieces, ph.repeat)


def _scaled_phase(ph: Phase, f: int) -> Phase:
    def ends():
        src, dst, width = ph.ends()
        return src, dst, width * f

    def pieces(i: int) -> Pieces:
        pc = ph.pieces(i)
        return Pieces(pc.counts, pc.start * f, pc.stop * f, pc.order)

    return Phase(ph.count, ph.op, ends, pieces, ph.repeat)


def _relabelled_phase(ph: Phase, rank_map: np.ndarray, den: int) -> Phase:
    def ends():
        src, dst, width = ph.ends()
        return rank_map[src], rank_map[dst], width

    def pieces(i: int) -> Pieces:
        pc = ph.pieces(i)
        transfer = np.repeat(np.arange(ph.count), pc.counts)
        counts, start, stop = move_blocks(transfer, pc.start, pc.stop, den, rank_map, ph.count)
        return Pieces(counts, start, stop, pc.order)

    return Phase(ph.count, ph.op, ends, pieces, ph.repeat)


def concurrent(parts: list[Phases], meta: dict | None = None) -> Phases:
    """Parts side by side on consecutive slices of the buffer (:func:`directcoll.schedule.ops.concurrent`): step t of
    every part runs in step t, part i's blocks become blocks ``i * nblocks + b``.

    Returns:
        A :class:`Phases` with nblocks = k x the parts' (k parts); its schedule is ``concurrent`` of the parts'
        schedules, transfer for transfer. A step every part spends in one phase each is one phase.

    Raises:
        ScheduleError: no parts, or parts of different collectives, N or nblocks.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 4.1 (plain and mirrored collectives on 1/(2D) of the data).
    """
    if not parts:
        raise ScheduleError("concurrent: need at least one part")
    first = parts[0]
    if any((p.collective, p.nranks, p.nblocks) != (first.collective, first.nranks, first.nblocks) for p in parts):
        raise ScheduleError("concurrent: every part must have the same collective, N and nblocks")
    den = lcm(*(p.denominator for p in parts))  # as ops.concurrent: every part over the lcm of the denominators
    parts = [p.with_denominator(den) for p in parts]
    first = parts[0]
    trimmed = [_trim(p.phases) for p in parts]
    starts = [np.concatenate([[0], np.cumsum([ph.repeat for ph in t], dtype=np.int64)]) for t in trimmed]
    cuts = sorted({int(c) for s in starts for c in s})
    phases = []
    shift = first.nblocks * first.denominator
    for a, b in zip(cuts[:-1], cuts[1:], strict=False):
        members = []
        for i, (t, s) in enumerate(zip(trimmed, starts, strict=True)):
            j = int(np.searchsorted(s, a, side="right")) - 1
            if j < len(t):
                members.append((i * shift, t[j], a - int(s[j])))
        phases.append(_side_by_side(members, b - a))
    owners = [p.effective_owner() for p in parts]
    owner = None if owners[0] is None else np.concatenate(owners)
    return Phases(first.collective, first.nranks, first.nblocks * len(parts), tuple(phases), first.denominator, owner,
                  dict(first.meta) if meta is None else meta)


def _side_by_side(members: list[tuple[int, Phase, int]], repeat: int) -> Phase:
    """One phase of the parts' phases (block shift, phase, first repetition), for ``repeat`` steps."""
    busy = [(shift, ph, i0) for shift, ph, i0 in members if ph.count]
    if not busy:
        return idle(repeat)
    ops = {ph.op for _, ph, _ in busy}
    if len(ops) > 1:
        raise ScheduleError("concurrent: parts that copy and reduce in one step are not one phase")

    def ends():
        cols = [ph.ends() for _, ph, _ in busy]
        return tuple(np.concatenate([c[k] for c in cols]) for k in range(3))

    def pieces(i: int) -> Pieces:
        pcs = [(shift, ph, ph.pieces(i0 + i)) for shift, ph, i0 in busy]
        base = np.concatenate([[0], np.cumsum([ph.count for _, ph, _ in pcs])])
        order = None
        if any(pc.order is not None for _, _, pc in pcs):
            order = np.concatenate([(np.arange(ph.count) if pc.order is None else pc.order) + base[k]
                                    for k, (_, ph, pc) in enumerate(pcs)])
        return Pieces(np.concatenate([pc.counts for _, _, pc in pcs]),
                      np.concatenate([pc.start + shift for shift, _, pc in pcs]),
                      np.concatenate([pc.stop + shift for shift, _, pc in pcs]), order)

    return Phase(sum(ph.count for _, ph, _ in busy), ops.pop(), ends, pieces, repeat)


def concat(first: Phases, second: Phases, meta: dict | None = None) -> Phases:
    """``second`` after ``first`` (:func:`directcoll.schedule.ops.concat`): a reduce-scatter then an allgather is an
    allreduce.

    Returns:
        A :class:`Phases` (owner None) whose schedule is ``concat`` of the two schedules, transfer for transfer.

    Raises:
        ScheduleError: a pair other than (reduce_scatter, allgather), or different N, nblocks, denominators or owners.

    Source: Swing (NSDI'24) Sec. 2.1 (allreduce as reduce-scatter then allgather); Zhao et al. (NSDI'25) App. B.
    """
    if (first.collective, second.collective) != (Collective.REDUCE_SCATTER, Collective.ALLGATHER):
        raise ScheduleError(f"concat: cannot sequence {first.collective.value} then {second.collective.value}; "
                            "accepted: reduce_scatter then allgather")
    if (first.nranks, first.nblocks) != (second.nranks, second.nblocks):
        raise ScheduleError("concat: N and nblocks must match")
    if not np.array_equal(first.effective_owner(), second.effective_owner()):
        raise ScheduleError("concat: the reduce-scatter leaves blocks where the allgather does not start")
    den = lcm(first.denominator, second.denominator)  # as ops.concat: both brought to the lcm of the denominators
    first, second = first.with_denominator(den), second.with_denominator(den)
    return Phases(Collective.ALLREDUCE, first.nranks, first.nblocks, (*_trim(first.phases), *second.phases),
                  den, None, dict(first.meta) if meta is None else meta)


def from_reduce_scatter(rs: Phases, collective, meta: dict | None = None) -> Phases:
    """The ``collective`` a reduce-scatter yields (:func:`directcoll.schedule.ops.from_reduce_scatter`): itself, its
    reversal (allgather), or itself then its reversal (allreduce).

    Returns:
        A :class:`Phases` with ``meta`` (default: the reduce-scatter's).

    Raises:
        ScheduleError: ``rs`` is not a reduce-scatter, or an unknown collective name.

    Source: Zhao et al. (NSDI'25) App. B, Theorem 1 and Corollary 1.1; Swing (NSDI'24) Sec. 2.1.
    """
    if rs.collective is not Collective.REDUCE_SCATTER:
        raise ScheduleError(f"from_reduce_scatter: expected a reduce_scatter, got {rs.collective.value}")
    coll = Collective.parse(collective)
    meta = dict(rs.meta if meta is None else meta)
    if coll is Collective.REDUCE_SCATTER:
        return rs.with_meta(meta)
    if coll is Collective.ALLGATHER:
        return rs.reversed(meta)
    return concat(rs, rs.reversed(), meta)
