"""Reduction order: does a schedule reduce in rank order, so that it is correct for non-commutative operators?

MPI 4.1 Sec. 6.9.1 defines a non-commutative reduction as the product in rank order, x_0 o x_1 o ... o x_{N-1}
(o associative, not commutative). The IR's ``reduce`` says only that a received piece is combined into the
receiver's cell; the verifier here fixes the operand order as **lower ranks first**: of the two operands (the
received value and the receiver's own), the one holding the lower ranks' contributions goes on the left. An
executor can follow this rule because it is a property of the schedule alone (:func:`operand_order` says, per
reduced piece, whether the received operand goes first).

The check executes the schedule on the monoid of contiguous rank intervals: rank i starts with [i, i] in every
data cell, and [a, b] o [c, d] = [a, d] when c = b + 1 (the product is undefined otherwise: the order broke).
This is exact (no probability), associative and non-commutative, and it is two int32 words per cell, executed with
the same vectorised gathers as the sum check (:mod:`directcoll.verify.exact`). A schedule is **order-preserving**
when every cell the collective defines ends as [0, N-1] (allreduce: every rank; reduce-scatter: each block's
owner; reduce: the root). Allgather, all-to-all and broadcast do not reduce and preserve order trivially.

Source: MPI 4.1 standard, Sec. 6.9.1 (non-commutative operations, "in the order of the ranks"); Swing (De Sensi et
al., NSDI'24) Sec. 3.1.1 (contiguous block remapping "guarantee[s] that the algorithm works with non-commutative
reduction operators"); Rabenseifner & Traeff (EuroPVM/MPI'04) for order in recursive halving.

>>> from directcoll.algorithms.ring import ring_reduce_scatter
>>> check_order(ring_reduce_scatter(range(4))).preserving
False
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from directcoll.schedule.ir import COPY, REDUCE, Collective, Schedule
from directcoll.verify.state import Segments, check_state, chunks, flat_indices

_GARBAGE = -1   # a cell that holds no rank's contribution (scratch, or a broken product)


@dataclass(frozen=True)
class OrderResult:
    """The outcome of :func:`check_order`.

    Attributes:
        preserving: every defined cell ends as the product in rank order 0..N-1.
        received_first, local_first: reduced cells whose received operand went left / right; when one is 0 a
            fixed operand convention suffices (``received_first`` only: MPI_Reduce_local(inbuf=received, inoutbuf)).
        step, rank, interval: where the order first broke (the step and rank of the first reduce whose operands were
            not adjacent, the cell's [start, stop) in blocks as fractions; step -1 when no reduce broke but a defined
            cell ends without every rank), or -1 / None when preserving.
        reason: the broken product in words ("" when preserving).

    Raises:
        Nothing: a record built by :func:`check_order`.

    Source: MPI 4.1 standard, Sec. 6.9.1 (rank order of non-commutative reductions).

    >>> from directcoll.algorithms.ring import ring_allgather
    >>> check_order(ring_allgather(range(3))).summary()
    'order-preserving (no reductions)'
    """

    preserving: bool
    received_first: int = 0
    local_first: int = 0
    step: int = -1
    rank: int = -1
    interval: tuple[str, str] | None = None
    reason: str = ""

    def summary(self) -> str:
        """One phrase: ``order-preserving (...)`` or ``not order-preserving: step S, rank R, interval [a, b): why``.

        Raises:
            Nothing: formats the fields.

        Source: MPI 4.1 standard, Sec. 6.9.1.

        >>> OrderResult(True, 3, 0).summary()
        'order-preserving (received operand first)'
        """
        if self.preserving:
            if not self.received_first + self.local_first:
                return "order-preserving (no reductions)"
            if not self.local_first:
                return "order-preserving (received operand first)"
            if not self.received_first:
                return "order-preserving (local operand first)"
            return "order-preserving (lower ranks' operand first)"
        where = "" if self.interval is None else f", interval [{self.interval[0]}, {self.interval[1]})"
        return f"not order-preserving: step {self.step}, rank {self.rank}{where}: {self.reason}"


def _combine(rlo, rhi, llo, lhi):
    """Products of received [rlo, rhi] and local [llo, lhi], lower ranks first: (lo, hi, received went first)."""
    valid = (rlo >= 0) & (llo >= 0)
    rfirst = valid & (rhi + 1 == llo)
    lfirst = valid & (lhi + 1 == rlo)
    lo = np.where(rfirst, rlo, np.where(lfirst, llo, _GARBAGE))
    hi = np.where(rfirst, lhi, np.where(lfirst, rhi, _GARBAGE))
    return lo.astype(np.int32), hi.astype(np.int32), rfirst, lfirst, valid & ~rfirst & ~lfirst


def check_order(schedule: Schedule, *, chunk_elements: int = 1 << 22) -> OrderResult:
    """Execute ``schedule`` on contiguous rank intervals and report whether it reduces in rank order.

    Reductions land after the step's copies, as in the sum check; several reductions into one cell in one step
    are applied one after the other as the executors do (received pieces in transfer order, then local ones). Run
    :func:`directcoll.verify.verify` first: a schedule that misses a contribution is reported here as not
    order-preserving too, without the sum check's diagnosis.

    Args:
        schedule: any schedule of the IR.
        chunk_elements: bound on the index arrays built at once (memory, not semantics).

    Returns:
        An :class:`OrderResult`. Memory: N x segments x 8 bytes, as the sum check.

    Raises:
        ScheduleError, ResourceError: the state would exceed the verifier's limits (as :func:`verify`).

    Source: MPI 4.1 standard, Sec. 6.9.1; Swing (De Sensi et al., NSDI'24) Sec. 3.1.1.

    >>> from directcoll.registry import build
    >>> check_order(build("rabenseifner", "ring:8", "reduce_scatter")).summary()
    "order-preserving (lower ranks' operand first)"
    """
    return _run(schedule, chunk_elements)[0]


def _run(s: Schedule, chunk_elements: int) -> tuple[OrderResult, np.ndarray]:
    """:func:`check_order` and, per piece, whether its received operand went first."""
    n = s.nranks
    received_first = np.zeros(s.num_pieces, dtype=bool)
    local_first = np.zeros(s.num_pieces, dtype=bool)
    if s.collective in (Collective.ALLGATHER, Collective.ALLTOALL, Collective.BROADCAST) or not (s.op == REDUCE).any():
        return OrderResult(True), received_first
    seg = Segments(s)
    nseg = seg.count
    check_state(f"order check {s.algorithm} {s.collective.value} on {n} ranks ({nseg:,} segments)", n, nseg)
    lo = np.full((n, nseg), _GARBAGE, dtype=np.int32)
    lo[:, : seg.data] = np.arange(n, dtype=np.int32)[:, None]
    hi = lo.copy()
    flo, fhi = lo.reshape(-1), hi.reshape(-1)
    pt = s.piece_transfer
    steps = np.unique(s.step)
    first_of, end_of = np.searchsorted(s.step, steps), np.searchsorted(s.step, steps, side="right")
    nrecv = nlocal = 0
    broken: tuple[int, int, int, str] | None = None
    for t, first, end in zip(steps.tolist(), first_of.tolist(), end_of.tolist(), strict=True):
        p0, p1 = s.piece_offsets[first], s.piece_offsets[end]
        if p0 == p1:
            continue
        tr = pt[p0:p1]
        src, dst, op = s.src[tr], s.dst[tr], s.op[tr]
        a_lo, a_hi, d_lo, d_hi = seg.lo[p0:p1], seg.hi[p0:p1], seg.dst_lo[p0:p1], seg.dst_hi[p0:p1]
        reads = []
        for a, b in chunks(a_hi - a_lo, chunk_elements):
            sidx = flat_indices(src[a:b], a_lo[a:b], a_hi[a:b], nseg)
            lengths = a_hi[a:b] - a_lo[a:b]
            reads.append((flo[sidx], fhi[sidx], flat_indices(dst[a:b], d_lo[a:b], d_hi[a:b], nseg),
                          np.repeat(op[a:b], lengths), np.repeat(np.arange(p0 + a, p0 + b), lengths)))
        for rlo, rhi, idx, cop, _ in reads:  # copies first
            m = cop == COPY
            flo[idx[m]], fhi[idx[m]] = rlo[m], rhi[m]
        red = [(rlo[m], rhi[m], idx[m], piece[m]) for rlo, rhi, idx, cop, piece in reads
               if (m := cop == REDUCE).any()]
        if not red:
            continue
        rlo, rhi, cells, piece = (np.concatenate(parts) for parts in zip(*red, strict=True))
        tr_of = pt[piece]
        order = np.lexsort((piece, s.src[tr_of] == s.dst[tr_of]))  # as the executor: received, then local pieces
        rlo, rhi, cells, piece = rlo[order], rhi[order], cells[order], piece[order]
        rest = np.arange(len(cells))
        while len(rest):  # a cell reduced several times in this step: one pass per reduction, in that order
            _, once = np.unique(cells[rest], return_index=True)
            now = rest[np.sort(once)]
            c_now = cells[now]
            nlo, nhi, rf, lf, bad = _combine(rlo[now], rhi[now], flo[c_now], fhi[c_now])
            nrecv, nlocal = nrecv + int(rf.sum()), nlocal + int(lf.sum())
            received_first[piece[now][rf]] = True
            local_first[piece[now][lf]] = True
            if broken is None and bad.any():
                i = int(np.flatnonzero(bad)[0])
                c = int(c_now[i])
                broken = (t, c // nseg, c % nseg, f"rank {c // nseg} combines ranks {_span(rlo[now][i], rhi[now][i])}"
                          f" (received) with ranks {_span(flo[c], fhi[c])} (its own): not adjacent")
            flo[c_now], fhi[c_now] = nlo, nhi
            rest = np.setdiff1d(rest, now, assume_unique=True)
        mixed = np.unique(piece[received_first[piece] & local_first[piece]])
        if len(mixed):  # an executor applies one operand order per piece: its cells are wrong there
            c = int(cells[np.isin(piece, mixed)][0])
            flo[cells[np.isin(piece, mixed)]] = fhi[cells[np.isin(piece, mixed)]] = _GARBAGE
            if broken is None:
                broken = (t, c // nseg, c % nseg, f"piece {int(mixed[0])} into rank {c // nseg} needs the received "
                          "operand first in some cells and last in others")
    data = np.arange(seg.data)
    if s.collective in (Collective.REDUCE_SCATTER, Collective.REDUCE):
        ranks = s.owner[seg.block[: seg.data]] if s.owner is not None else np.full(seg.data, s.root, np.int64)
        wrong = np.flatnonzero((lo[ranks, data] != 0) | (hi[ranks, data] != n - 1))
        bad_cells = [(int(ranks[w]), int(w)) for w in wrong[:1]]
    else:
        w = np.argwhere((lo[:, : seg.data] != 0) | (hi[:, : seg.data] != n - 1))
        bad_cells = [(int(w[0, 0]), int(w[0, 1]))] if len(w) else []
    if not bad_cells:
        return OrderResult(True, nrecv, nlocal), received_first
    if broken is not None:
        t, r, c, why = broken
        return OrderResult(False, nrecv, nlocal, t, r, seg.interval(c), why), received_first
    r, c = bad_cells[0]
    return OrderResult(False, nrecv, nlocal, -1, r, seg.interval(c),
                       f"rank {r} ends with ranks {_span(lo[r, c], hi[r, c])}, not 0..{n - 1}"), received_first


def _span(a, b) -> str:
    return "(none: garbage)" if a < 0 else f"{int(a)}..{int(b)}"


def operand_order(schedule: Schedule) -> np.ndarray:
    """Per piece of ``schedule``: True where a reduce's received operand goes first (its ranks are lower), False
    elsewhere (copies, and reduces whose receiver's own value goes first); what an executor of a non-commutative
    operator follows. Only meaningful on an order-preserving schedule (where every cell of a piece agrees).

    Raises:
        ScheduleError, ResourceError: as :func:`check_order`.

    Source: MPI 4.1 standard, Sec. 6.9.1 (rank order); this module's operand convention.

    >>> from directcoll.registry import build
    >>> operand_order(build("rabenseifner", "ring:2", "reduce_scatter")).tolist()
    [True, False]
    """
    return _run(schedule, 1 << 22)[1]
