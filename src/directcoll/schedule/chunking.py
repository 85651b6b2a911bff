"""Chunking: the one rational-rounding policy, and the pass that re-expresses a schedule in whole chunks.

LP-based schedules (BFB, Zhao et al. Sec. 6.1, App. E.2; MCF, Basu et al. Sec. 4) turn the LP's floating-point
weights into exact rationals or whole chunks, and an executor that addresses whole chunks (MSCCL) needs every
piece end on a chunk boundary. The rules, each in one place:

- :func:`nearest_fractions`: every value as the nearest fraction whose denominator is at most a cap
  (:meth:`fractions.Fraction.limit_denominator`).
- :func:`rational_row`: a row of weights as such fractions that still sums to its exact total: the largest
  entry absorbs the rounding (Zhao et al. Sec. 6.1: the loads of a pattern add up to its sources).
- :func:`largest_remainder`: wanted amounts (in chunks) as whole chunks, each group summing to its exact total:
  round down, then give one more chunk to the largest remainders (Zhao et al. App. E.2; Basu et al. Sec. 4).
- :func:`common_denominator`: the least common denominator of a set of rationals, refused over a cap.
- :func:`reduced_denominator`: the least denominator that expresses numerators over a denominator exactly.
- :func:`in_whole_chunks`: the IR-to-IR pass: a schedule of fractional pieces in q chunks per block, exact when
  q allows, else every piece end rounded to the nearest chunk (halves up) and the deviation reported.

The caps are the callers' (BFB: 10,000 per load, 10^6 per schedule; MCF: ``max_chunks`` per shard; MSCCL:
``max_chunks`` per loop).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from directcoll.errors import ScheduleError
from directcoll.schedule.ir import Schedule, reorder_csr


def nearest_fractions(values, max_denominator: int) -> list[Fraction]:
    """The fraction nearest to every value among those with denominator <= ``max_denominator``.

    Args:
        values: float (K,), any finite values.
        max_denominator: the cap on each denominator, >= 1.

    Returns:
        K :class:`~fractions.Fraction`, in order (``Fraction(float(v)).limit_denominator(max_denominator)``).

    Raises:
        ValueError: a value that is not finite, or ``max_denominator`` < 1 (from :mod:`fractions`).

    Source: Zhao et al. (NSDI'25) Sec. 6.1 and App. E.2 (LP loads turned into exact rationals / chunks); Python's
    :meth:`fractions.Fraction.limit_denominator`.

    >>> nearest_fractions([0.3333333, 0.5, 0.142857], 10)
    [Fraction(1, 3), Fraction(1, 2), Fraction(1, 7)]
    """
    return [Fraction(v).limit_denominator(max_denominator) for v in np.asarray(values, dtype=float).tolist()]


def rational_row(values, total, max_denominator: int) -> list[Fraction]:
    """A row of LP weights as exact rationals that sum to ``total`` exactly (Zhao et al. Sec. 6.1, "From loads to
    pieces"): each value becomes its :func:`nearest_fractions` fraction, then the largest (the first of equals)
    absorbs the difference between ``total`` and their sum, so its denominator may exceed the cap.

    Args:
        values: float (K,), K >= 1, the LP's weights (e.g. shards per link), adding up to about ``total``.
        total: int or Fraction, the row's exact sum.
        max_denominator: the cap on the denominators before the adjustment.

    Returns:
        K Fractions summing to ``total``.

    Raises:
        ValueError: an empty row, or as :func:`nearest_fractions`.

    >>> rational_row([0.3333333, 0.3333333, 0.3333334], 1, 100)
    [Fraction(1, 3), Fraction(1, 3), Fraction(1, 3)]
    >>> rational_row([0.5, 0.3, 0.2], 1, 4)  # 1/2 + 1/3 + 1/4 = 13/12: the largest absorbs -1/12
    [Fraction(5, 12), Fraction(1, 3), Fraction(1, 4)]
    """
    row = nearest_fractions(values, max_denominator)
    big = max(range(len(row)), key=row.__getitem__)
    row[big] += total - sum(row)
    return row


def largest_remainder(scaled, totals, groups=None, *, tolerance: float = 0.0) -> np.ndarray:
    """Whole chunk counts for wanted amounts, every group summing to its exact total (largest remainder; Zhao et
    al. App. E.2, Basu et al. Sec. 4): counts start at ``floor(scaled + tolerance)``, then, in each group, the
    entries with the largest remainders ``scaled - count`` (the first of equals) get one chunk more until the
    group reaches its total. Every count then moves by less than one chunk from its wanted amount (with
    ``tolerance`` 0.5, the counts start at the nearest whole numbers).

    Args:
        scaled: float (K,), wanted amounts in chunks.
        totals: int (G,), every group's exact total in chunks.
        groups: int (K,), the group 0..G-1 of every entry (default: one group).
        tolerance: added before rounding down, so that an amount a hair below a whole number counts as it.

    Returns:
        int64 (K,) counts.

    Raises:
        ScheduleError: a group whose counts cannot reach its total (its rounded-down amounts exceed it, or it has
            too few entries); the message names the group.

    >>> largest_remainder([0.4, 1.3, 1.3], [3]).tolist()
    [1, 1, 1]
    >>> largest_remainder([0.5, 1.5, 0.25, 0.75], [2, 1], [0, 0, 1, 1]).tolist()
    [1, 1, 0, 1]
    """
    scaled = np.asarray(scaled, dtype=float)
    totals = np.asarray(totals, dtype=np.int64)
    groups = np.zeros(len(scaled), np.int64) if groups is None else np.asarray(groups, dtype=np.int64)
    counts = np.floor(scaled + tolerance).astype(np.int64)
    deficit = totals - np.bincount(groups, weights=counts, minlength=len(totals)).astype(np.int64)
    order = np.lexsort((-(scaled - counts), groups))
    group_start = np.searchsorted(groups[order], groups[order])
    rank = np.arange(len(order)) - group_start
    counts[order] += (rank < deficit[groups[order]]).astype(np.int64)
    sums = np.bincount(groups, weights=counts, minlength=len(totals))
    if (sums != totals).any():
        g = int(np.flatnonzero(sums != totals)[0])
        raise ScheduleError(f"chunking failed: group {g}'s whole chunk counts add up to {int(sums[g])}, not its "
                            f"total {int(totals[g])}")
    return counts


def common_denominator(rationals: Iterable, cap: int | None = None, *, what: str = "the rationals",
                       hint: str = "") -> int:
    """The least common denominator of ``rationals`` (Fractions or ints; 1 for none).

    Args:
        rationals: any iterable of numbers with a ``denominator`` (Fraction, int).
        cap: the largest denominator accepted (None: no cap).
        what, hint: name the rationals and say what to do instead, in the error.

    Raises:
        ScheduleError: the common denominator exceeds ``cap``: ``"<what> need a common denominator of D (> cap);
            <hint>"``.

    Source: Zhao et al. (NSDI'25) App. E.2 (a schedule in whole chunks needs a common denominator); docs/schedule.md
    (the schedule-wide ``denominator``).

    >>> from fractions import Fraction
    >>> common_denominator([Fraction(1, 4), Fraction(5, 6), 2])
    12
    >>> common_denominator([Fraction(1, 4), Fraction(5, 6)], 10, what="the loads", hint="round them")
    Traceback (most recent call last):
    ...
    directcoll.errors.ScheduleError: the loads need a common denominator of 12 (> 10); round them
    """
    den = math.lcm(1, *(r.denominator for r in rationals))
    if cap is not None and den > cap:
        raise ScheduleError(f"{what} need a common denominator of {den} (> {cap})" + (f"; {hint}" if hint else ""))
    return den


def reduced_denominator(denominator: int, *numerators) -> int:
    """The least q such that every ``numerator / denominator`` is a multiple of 1/q: ``denominator`` divided by
    the gcd of it and every numerator.

    Args:
        denominator: positive int.
        numerators: int arrays (any shape) or None (skipped).

    Raises:
        Nothing: integer arithmetic (a zero ``denominator`` would raise ZeroDivisionError, a caller's bug).

    Source: docs/schedule.md (piece ends as integer numerators over the schedule-wide denominator).

    >>> reduced_denominator(12, np.array([0, 4, 8]), np.array([6]))
    6
    >>> reduced_denominator(12, np.array([0, 12]), None)
    1
    """
    g = denominator
    for arr in numerators:
        if arr is not None and len(arr):
            g = math.gcd(g, int(np.gcd.reduce(np.abs(arr))))
    return denominator // g


def exact_chunks_per_block(schedule: Schedule) -> int:
    """Chunks per block that express every piece end and shift of ``schedule`` exactly: the reduced denominator
    of its piece coordinates (1 for block algorithms).

    Raises:
        Nothing: the schedule was validated when built.

    Source: docs/schedule.md (denominator); Zhao et al. (NSDI'25) App. E.2 (discrete chunked schedules).

    >>> from directcoll.schedule.ir import ScheduleBuilder
    >>> b = ScheduleBuilder("allgather", 2, 2, denominator=6)
    >>> b.add(0, [0, 1], [1, 0], 0, [0, 6], [3, 12])
    >>> exact_chunks_per_block(b.build())
    2
    """
    return reduced_denominator(schedule.denominator, schedule.piece_start, schedule.piece_stop,
                               schedule.piece_shift)


@dataclass(frozen=True, eq=False)
class WholeChunks:
    """What :func:`in_whole_chunks` made: the schedule in whole chunks (``denominator`` = ``chunks_per_block``),
    the chunks per block it needs to be exact, and the largest distance, in blocks, by which a piece end (or a
    piece's landing end) moved (0 when exact).

    Raises:
        Nothing: a frozen record.

    Source: docs/export.md (MSCCL addresses whole chunks); Zhao et al. (NSDI'25) App. E.2.
    """

    schedule: Schedule
    chunks_per_block: int
    exact_chunks_per_block: int
    max_deviation_blocks: float

    @property
    def rounded(self) -> bool:
        """Whether piece ends were rounded (fewer chunks per block than exactness needs).

        Raises:
            Nothing.

        Source: docs/export.md (rounded exports report their deviation).
        """
        return self.chunks_per_block != self.exact_chunks_per_block


def in_whole_chunks(schedule: Schedule, max_chunks_per_block: int) -> WholeChunks:
    """Re-express ``schedule`` in whole chunks: its denominator becomes q chunks per block, q = the exact
    :func:`exact_chunks_per_block` when it is at most ``max_chunks_per_block``, else ``max_chunks_per_block``
    with every piece end and landing end rounded to the nearest chunk (halves up). Pieces that round to nothing
    are dropped, and so are transfers left without pieces (with their routes); a rounded schedule no longer
    carries exactly the data it did, so it may not verify. A schedule of denominator 1 is returned as it is.

    Args:
        schedule: any schedule.
        max_chunks_per_block: the most chunks per block, >= 1 (MSCCL: ``max_chunks // vector_blocks``).

    Returns:
        :class:`WholeChunks`.

    Raises:
        ScheduleError: ``max_chunks_per_block`` < 1; or the rounded schedule is invalid (e.g. a local transfer
            whose displacement rounds to 0, a landing end outside the buffer): the IR's own message
            (:meth:`Schedule.validate`).

    Source: Zhao et al. (NSDI'25) App. E.2 (discrete chunked BFB schedule); docs/export.md (MSCCL's whole chunks,
    ``max_chunks``).

    >>> from directcoll.schedule.ir import ScheduleBuilder
    >>> b = ScheduleBuilder("allgather", 2, 2, denominator=3)
    >>> b.add(0, [0, 1], [1, 0], 0, [0, 3], [1, 6])
    >>> exact = in_whole_chunks(b.build(), 4)
    >>> exact.chunks_per_block, exact.schedule.piece_stop.tolist(), exact.rounded
    (3, [1, 6], False)
    >>> rounded = in_whole_chunks(b.build(), 2)
    >>> rounded.chunks_per_block, rounded.schedule.piece_stop.tolist(), round(rounded.max_deviation_blocks, 3)
    (2, [1, 4], 0.167)
    """
    if max_chunks_per_block < 1:
        raise ScheduleError(f"whole chunks: max_chunks_per_block must be >= 1, got {max_chunks_per_block}")
    s, den = schedule, schedule.denominator
    exact = exact_chunks_per_block(s)
    q = exact if exact <= max_chunks_per_block else max_chunks_per_block
    if den == 1:
        return WholeChunks(s, q, exact, 0.0)
    start, stop, shift = s.piece_start, s.piece_stop, s.shift
    if q == exact:
        f = den // q
        a, b, sh, dev = start // f, stop // f, shift // f, 0.0
    else:
        a, b, land = (_nearest_chunk(x, den, q) for x in (start, stop, start + shift))
        dev = max(float(np.max(np.abs(a / q - start / den), initial=0)),
                  float(np.max(np.abs(b / q - stop / den), initial=0)),
                  float(np.max(np.abs(land / q - (start + shift) / den), initial=0)))
        sh = land - a
    return WholeChunks(_with_pieces(s, q, a, b, sh), q, exact, dev)


def _nearest_chunk(numerators: np.ndarray, den: int, q: int) -> np.ndarray:
    """Coordinates ``numerators / den`` rounded to the nearest multiple of 1/q (halves up), as numerators over q."""
    return (2 * numerators * q + den) // (2 * den)


def _with_pieces(s: Schedule, q: int, a: np.ndarray, b: np.ndarray, shift: np.ndarray) -> Schedule:
    """``s`` with piece ends [a, b) and shifts over denominator q; empty pieces and transfers left without pieces
    dropped."""
    keep = b > a
    counts = np.bincount(s.piece_transfer[keep], minlength=s.num_transfers)
    alive = counts > 0
    offsets = np.concatenate([[0], np.cumsum(counts[alive])])
    routes = {}
    if s.route_offsets is not None:
        route_offsets, idx = reorder_csr(s.route_offsets, np.flatnonzero(alive))
        routes = {"route_offsets": route_offsets, "route_links": s.route_links[idx]}
    return Schedule(s.collective, s.nranks, s.nblocks, s.step[alive], s.src[alive], s.dst[alive], s.op[alive],
                    offsets, a[keep], b[keep], q, s.owner, s.nscratch,
                    shift[keep] if s.piece_shift is not None else None, meta=dict(s.meta), **routes)
