"""Exact verification of a schedule's data semantics (docs/verification.md).

Every rank gets random 64-bit words, one per elementary segment (the refinement of every piece end and block
boundary). The schedule is executed bulk-synchronously on those words (reduce = wrapping addition, copy by
value) and every rank's final buffer is compared with the collective's definition. A missing or doubled
contribution changes a word with probability 1 - 2^-64, so a pass is a proof up to that probability.

On failure, the failing segment is replayed symbolically (a count of every rank's contribution held by every
rank) to name the step where the fault was introduced and what went wrong.

Broadcast checks that every rank ends with the root's words; reduce that the root ends with every rank's sum
(other ranks' buffers are undefined, as MPI_Reduce leaves them).

Source: docs/verification.md; the collectives' definitions of the MPI 4.1 standard, Ch. 6.

>>> from directcoll.algorithms.ring import ring_reduce_scatter
>>> verify(ring_reduce_scatter(range(5))).summary()
'OK: unknown reduce_scatter on 5 ranks, 4 steps, 20 transfers'
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from directcoll.resources import check_memory, memory_budget
from directcoll.schedule.ir import COPY, REDUCE, Collective, Schedule, alltoall_endpoints
from directcoll.units import plural
from directcoll.verify.state import MAX_STATE_BYTES, check_state
from directcoll.verify.state import Segments as _Segments
from directcoll.verify.state import chunks as _chunks
from directcoll.verify.state import flat_indices as _flat_indices

if TYPE_CHECKING:
    from directcoll.verify.order import OrderResult

__all__ = ["MAX_STATE_BYTES", "Failure", "VerifyResult", "verify"]


@dataclass(frozen=True)
class Failure:
    """The first fault found: where, what was expected and found, and why.

    Attributes:
        step: the step that introduced the fault (-1: the cell was never written).
        rank: the rank whose buffer is wrong.
        interval: [start, stop) in block coordinates, as exact fractions (strings).
        expected, found: the 64-bit words, in hex (``"-"`` for a write clash).
        reason: what went wrong, in words.

    Raises:
        Nothing: a record built by :func:`verify`.

    Source: docs/verification.md (report the first failure as (step, rank, interval, expected, found)).

    >>> from directcoll.schedule.ir import ScheduleBuilder
    >>> b = ScheduleBuilder("allgather", 2, 2)
    >>> b.add(0, 0, 1, 0, 0, 1)  # rank 1's block never reaches rank 0
    >>> f = verify(b.build()).failure
    >>> f.step, f.rank, f.interval
    (-1, 0, ('1', '2'))
    """

    step: int            # step that introduced the fault (-1: the cell was never written)
    rank: int
    interval: tuple[str, str]  # [start, stop) in block coordinates, as exact fractions
    expected: str        # 64-bit words in hex
    found: str
    reason: str

    def __str__(self) -> str:
        return (f"step {self.step}, rank {self.rank}, interval [{self.interval[0]}, {self.interval[1]}): "
                f"{self.reason} (expected {self.expected}, found {self.found})")


@dataclass(frozen=True)
class VerifyResult:
    """The outcome of :func:`verify`: whether the schedule implements its collective, and the first failure if not.

    Attributes:
        ok: True when every checked cell holds its expected word.
        collective, algorithm: the schedule's collective and ``meta["algorithm"]``.
        ranks, steps, transfers: N, the number of steps and of transfers.
        segments: the elementary segments per rank the verifier executed on.
        failure: the first :class:`Failure`, or None when ``ok``.
        order: with ``verify(..., order=True)``, the :class:`~directcoll.verify.order.OrderResult` (rank order of
            the reductions, for non-commutative operators); else None.

    Raises:
        Nothing: a record built by :func:`verify`.

    Source: docs/verification.md.

    >>> from directcoll.algorithms.ring import ring_allgather
    >>> r = verify(ring_allgather(range(4)))
    >>> r.ok, r.steps, r.segments
    (True, 3, 4)
    """
    ok: bool
    collective: str
    algorithm: str
    ranks: int
    steps: int
    transfers: int
    segments: int
    failure: Failure | None
    order: OrderResult | None = None  # with verify(..., order=True)

    def to_dict(self) -> dict:
        """The result as a JSON-serializable dict (the failure's interval as a list). Raises: Nothing.
        Source: docs/architecture.md, "Engines, runtimes and scale" (machine-readable output is a contract).
        """
        d = asdict(self)
        if self.failure is not None:
            d["failure"]["interval"] = list(self.failure.interval)
        return d

    def summary(self) -> str:
        """One line: ``OK: <algorithm> <collective> on N ranks, S steps, T transfers`` or ``FAILED: ...: <failure>``.

        Raises:
            Nothing: formats the fields.

        Source: docs/verification.md.

        >>> from directcoll.algorithms.ring import ring_allgather
        >>> verify(ring_allgather(range(4))).summary()
        'OK: unknown allgather on 4 ranks, 3 steps, 12 transfers'
        """
        head = (f"{self.algorithm} {self.collective} on {self.ranks} ranks, {plural(self.steps, 'step')}, "
                f"{plural(self.transfers, 'transfer')}")
        tail = "" if self.order is None or not self.ok else f"; {self.order.summary()}"
        return f"OK: {head}{tail}" if self.ok else f"FAILED: {head}: {self.failure}"


def _overlaps(rank: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Indices (into the inputs) of every piece that overlaps another piece written to the same rank,
    in (rank, lo) order: both sides of each overlap, so a clash is seen whichever piece sorts first."""
    if len(rank) < 2:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((lo, rank))
    big = int(hi.max()) + 1
    r, a, b = rank[order], lo[order], hi[order]
    reach = np.maximum.accumulate(r * big + b)  # running max of hi within each rank (ranks ascend)
    same = r[1:] == r[:-1]
    overlaps_earlier = np.r_[False, same & (r[1:] * big + a[1:] < reach[:-1])]
    overlaps_next = np.r_[same & (a[1:] < b[:-1]), False]  # sorted by lo: the next piece is the first to hit
    return order[overlaps_earlier | overlaps_next]


def verify(schedule: Schedule, *, seed: int = 0, chunk_elements: int = 1 << 22,
           on_step: Callable[[int, int], None] | None = None, order: bool = False) -> VerifyResult:
    """Execute ``schedule`` exactly and check it implements its collective (and, with ``order``, in rank order).

    Args:
        schedule: any schedule of the IR.
        seed: seed of the random words (results do not depend on it except with probability 2^-64).
        chunk_elements: bound on the index arrays built at once (memory, not semantics).
        on_step: called as on_step(steps done, total steps) after every step (progress bars).
        order: when the sums are right, also execute it on rank intervals
            (:func:`directcoll.verify.order.check_order`) and record whether it reduces in rank order.

    Returns:
        VerifyResult with ``ok`` and, when not ok, the first failure: the step that introduced it, the
        rank, the interval in block coordinates, the expected and found words and the reason. Memory is
        N x segments x 8 bytes.

    Raises:
        ScheduleError: the state would exceed MAX_STATE_BYTES (N x segments x 8 bytes).
        ResourceError: the state (estimated before it is allocated) would exceed the memory budget.

    Source: docs/verification.md (random 64-bit words per elementary segment, wrapping addition).

    >>> from directcoll.schedule.ir import ScheduleBuilder
    >>> b = ScheduleBuilder("allgather", 2, 2)
    >>> b.add(0, 0, 1, 0, 0, 1)
    >>> print(verify(b.build()).summary())  # doctest: +ELLIPSIS
    FAILED: unknown allgather on 2 ranks, 1 step, 1 transfer: step -1, rank 0, interval [1, 2): rank 0 never ...
    """
    s = schedule
    n, total = s.nranks, s.nblocks + s.nscratch
    # segment bounds before they exist: every unit of the coordinate with displaced pieces, else block
    # boundaries and piece ends (an upper bound); the state is N x segments words (plus the expected words)
    max_seg = total * s.denominator if s.piece_shift is not None else total + 2 * s.num_pieces
    what = f"verify {s.algorithm} {s.collective.value} on {n} ranks ({max_seg:,} segments)"
    check_memory(what, 8.0 * (max_seg + 1) * 4)  # bounds, block of each bound, searchsorted results
    # every block of the work buffer is at least one segment: refuse before building them
    _check_state(what, n, max_seg if s.piece_shift is not None else total)
    seg = _Segments(s)
    nseg = seg.count
    _check_state(f"verify {s.algorithm} {s.collective.value} on {n} ranks ({nseg:,} segments)", n, nseg)
    rng = np.random.default_rng(seed)
    state = rng.integers(0, np.iinfo(np.uint64).max, size=(n, nseg), dtype=np.uint64, endpoint=True)
    seg_owner = None if s.owner is None else s.owner[seg.block[: seg.data]]
    if s.collective.rooted:  # broadcast: every cell comes from the root; reduce: checked at the root only
        seg_owner = np.full(seg.data, s.root, dtype=np.int64)
    if s.collective is Collective.ALLTOALL:  # the source's word must reach the destination; relays are free
        seg_owner, seg_dest = alltoall_endpoints(n, s.nblocks, seg.block[: seg.data])
        expected = state[seg_owner, np.arange(seg.data)].copy()
    elif s.collective in (Collective.ALLGATHER, Collective.BROADCAST):
        expected = state[seg_owner, np.arange(seg.data)].copy()  # everything else is garbage to be overwritten
    else:
        expected = state[:, : seg.data].sum(axis=0, dtype=np.uint64)  # scratch holds no data
    flat = state.reshape(-1)
    pt = s.piece_transfer
    steps = np.unique(s.step)  # only the steps that have transfers: step numbers may be sparse
    bounds = np.searchsorted(s.step, steps)
    ends = np.searchsorted(s.step, steps, side="right")
    result = dict(collective=s.collective.value, algorithm=s.algorithm, ranks=n, steps=s.num_steps,
                  transfers=s.num_transfers, segments=nseg)

    for t, first, end in zip(steps.tolist(), bounds.tolist(), ends.tolist(), strict=True):
        if on_step is not None:
            on_step(t, s.num_steps)
        p0, p1 = s.piece_offsets[first], s.piece_offsets[end]
        if p0 == p1:
            continue
        tr = pt[p0:p1]
        src, dst, op = s.src[tr], s.dst[tr], s.op[tr]
        lo, hi = seg.lo[p0:p1], seg.hi[p0:p1]
        dlo, dhi = seg.dst_lo[p0:p1], seg.dst_hi[p0:p1]
        copies = op == COPY
        copy_idx = np.flatnonzero(copies)
        clash = copy_idx[_overlaps(dst[copies], dlo[copies], dhi[copies])]
        if len(clash):
            i = int(clash[0])
            other = copy_idx[(dst[copies] == dst[i]) & (dlo[copies] < dhi[i]) & (dhi[copies] > dlo[i])]
            cell = max(int(dlo[i]), int(dlo[other[other != i]].min()))  # first segment both write
            return VerifyResult(False, **result, failure=Failure(
                t, int(dst[i]), seg.interval(cell), "-", "-",
                "two copies write the same segment of this rank in one step"))
        red_idx = np.flatnonzero(~copies)
        summed = len(_overlaps(dst[red_idx], dlo[red_idx], dhi[red_idx])) > 0  # reductions that add up
        chunks = _chunks(hi - lo, chunk_elements)
        values = [flat[_flat_indices(src[a:b], lo[a:b], hi[a:b], nseg)] for a, b in chunks]
        for reducing in (False, True):  # copies first, then reductions
            for (a, b), val in zip(chunks, values, strict=True):
                sel = op[a:b] == (REDUCE if reducing else COPY)
                if not sel.any():
                    continue
                idx = _flat_indices(dst[a:b], dlo[a:b], dhi[a:b], nseg)
                mask = np.repeat(sel, hi[a:b] - lo[a:b])
                if not reducing:
                    flat[idx[mask]] = val[mask]
                elif summed:
                    np.add.at(flat, idx[mask], val[mask])
                else:
                    flat[idx[mask]] += val[mask]
        del values

    checked = seg_dest if s.collective is Collective.ALLTOALL else seg_owner
    failure = _first_mismatch(s, state[:, : seg.data], expected, checked)
    if failure is None:
        if order:
            from directcoll.verify.order import check_order  # a second pass, on rank intervals

            del state, flat, expected
            return VerifyResult(True, **result, failure=None, order=check_order(s, chunk_elements=chunk_elements))
        return VerifyResult(True, **result, failure=None)
    rank, cell = failure
    # the replay keeps an N x (N + 1) table of contributions: beyond the budget, the last write is what we can name
    replay = s.piece_shift is None and 8.0 * s.nranks * (s.nranks + 1) <= memory_budget()
    step, reason = _diagnose(s, seg, rank, cell) if replay else _last_write(s, seg, rank, cell)
    return VerifyResult(False, **result, failure=Failure(
        step, rank, seg.interval(cell), f"{int(expected[cell]):#018x}", f"{int(state[rank, cell]):#018x}", reason))


def _check_state(what: str, n: int, nseg: int) -> None:
    """:func:`~directcoll.verify.state.check_state` against this module's :data:`MAX_STATE_BYTES`."""
    check_state(what, n, nseg, MAX_STATE_BYTES)


def _first_mismatch(s: Schedule, state, expected, seg_owner) -> tuple[int, int] | None:
    """(rank, segment) of the first wrong cell that the collective defines, scanning ranks in order.
    ``seg_owner``: the rank that must hold each segment (reduce-scatter: its owner; all-to-all: its destination;
    reduce: the root)."""
    if s.collective in (Collective.REDUCE_SCATTER, Collective.ALLTOALL, Collective.REDUCE):
        cells = np.arange(state.shape[1])
        bad = np.flatnonzero(state[seg_owner, cells] != expected)
        if not len(bad):
            return None
        ranks = seg_owner[bad]
        i = int(np.lexsort((bad, ranks))[0])
        return int(ranks[i]), int(bad[i])
    for r0 in range(0, state.shape[0], 256):
        bad = np.argwhere(state[r0: r0 + 256] != expected[None, :])
        if len(bad):
            return int(bad[0, 0]) + r0, int(bad[0, 1])
    return None


def _last_write(s: Schedule, seg: _Segments, rank: int, cell: int) -> tuple[int, str]:
    """For schedules with displaced pieces (data moves between coordinates, so one column cannot be replayed), or
    too many ranks to replay within the memory budget: the last step that wrote the failing cell."""
    hit = np.flatnonzero((seg.dst_lo <= cell) & (seg.dst_hi > cell) & (s.dst[s.piece_transfer] == rank))
    step = int(s.step[s.piece_transfer[hit]].max()) if len(hit) else -1
    what = "was never written" if step < 0 else f"was last written in step {step}"
    why = "displaced pieces are not replayed" if s.piece_shift is not None else "too many ranks to replay"
    return step, f"rank {rank} holds a wrong value (the cell {what}; {why})"


def _diagnose(s: Schedule, seg: _Segments, rank: int, cell: int) -> tuple[int, str]:
    """Replay one segment symbolically: which contributions each rank holds after every step."""
    n = s.nranks
    touching = np.flatnonzero((seg.lo <= cell) & (seg.hi > cell))
    tr = np.unique(s.piece_transfer[touching])
    step, src, dst, op = s.step[tr], s.src[tr], s.dst[tr], s.op[tr]
    gather = s.collective in (Collective.ALLGATHER, Collective.ALLTOALL, Collective.BROADCAST)
    if s.collective is Collective.ALLTOALL:
        owner = int(alltoall_endpoints(n, s.nblocks, seg.block[cell])[0])
    elif s.collective.rooted:
        owner = s.root
    else:
        owner = None if s.owner is None else int(s.owner[seg.block[cell]])
    # held[r, x]: how many times rank r holds rank x's contribution; column n counts garbage
    held = np.zeros((n, n + 1), dtype=np.int64)
    if gather:
        held[:, n] = 1
        held[owner] = 0
        held[owner, owner] = 1
    else:
        held[np.arange(n), np.arange(n)] = 1
    last_write = -1
    for t in np.unique(step):
        sel = step == t
        incoming = held[src[sel]].copy()
        for is_reduce in (False, True):
            m = (op[sel] == REDUCE) == is_reduce
            if not m.any():
                continue
            if is_reduce:
                np.add.at(held, dst[sel][m], incoming[m])
            else:
                held[dst[sel][m]] = incoming[m]
        if rank in dst[sel]:
            last_write = int(t)
        if gather and (op[sel] == REDUCE).any():
            r = int(dst[sel][op[sel] == REDUCE][0])
            return int(t), f"rank {r} reduces in an {s.collective.value}, mixing data"
        if not gather and (held[:, :n] > 1).any():
            r, x = np.argwhere(held[:, :n] > 1)[0]
            return int(t), f"rank {r} holds rank {x}'s contribution {held[r, x]} times (doubled contribution)"
    row = held[rank]
    what = {Collective.ALLTOALL: "source", Collective.BROADCAST: "root"}.get(s.collective, "owner")
    if gather:
        if last_write < 0:
            return last_write, f"rank {rank} never received this block from its {what} (rank {owner})"
        return last_write, f"rank {rank} was sent data that never came from the {what} (rank {owner})"
    missing = np.flatnonzero(row[:n] == 0)
    shown = ", ".join(str(x) for x in missing[:8]) + (" ..." if len(missing) > 8 else "")
    return last_write, f"rank {rank} is missing the contributions of {len(missing)} rank(s): {shown}"
