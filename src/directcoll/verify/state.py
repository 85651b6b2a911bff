"""The verifiers' shared state layout: elementary segments, flat cell indices and the memory limit.

A schedule's buffer is cut into elementary segments (the refinement of every piece end and block boundary, or every
unit of the coordinate when pieces are displaced); a verifier holds one value per rank and segment, flattened as
``rank * segments + segment``. Used by the sum check (:mod:`directcoll.verify.exact`) and the order check
(:mod:`directcoll.verify.order`).

Source: docs/verification.md (random 64-bit words per elementary segment).

>>> from directcoll.algorithms.ring import ring_allgather
>>> Segments(ring_allgather(range(3))).count
3
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from directcoll.errors import ScheduleError
from directcoll.resources import check_memory
from directcoll.schedule.ir import Schedule

#: Refuse to allocate more state than this (N x segments x 8 bytes).
MAX_STATE_BYTES = 12 * 2**30


class Segments:
    """Elementary segments of a schedule and every piece's segment range.

    Attributes:
        bounds: int64 (count + 1,), segment boundaries in units of 1 / denominator of a block.
        lo, hi, dst_lo, dst_hi: int64 (pieces,), each piece's first and past-the-end segment at its source and its
            (displaced) destination.
        count: the number of segments; data: how many come before the scratch blocks; block: int64 (count,), the
            block of each segment; den: the schedule's denominator.

    Raises:
        Nothing: the schedule was validated when built.

    Source: docs/verification.md (elementary segments).

    >>> from directcoll.algorithms.ring import ring_allgather
    >>> Segments(ring_allgather(range(3))).interval(1)
    ('1', '2')
    """

    def __init__(self, s: Schedule) -> None:
        total = s.nblocks + s.nscratch
        if s.piece_shift is not None:
            # displaced pieces must cut source and destination alike: use every unit of the coordinate
            self.bounds = np.arange(total * s.denominator + 1, dtype=np.int64)
        else:
            blocks = np.arange(total + 1, dtype=np.int64) * s.denominator
            self.bounds = np.unique(np.concatenate([blocks, s.piece_start, s.piece_stop]))
        self.lo = np.searchsorted(self.bounds, s.piece_start)
        self.hi = np.searchsorted(self.bounds, s.piece_stop)
        self.dst_lo = np.searchsorted(self.bounds, s.piece_start + s.shift)
        self.dst_hi = np.searchsorted(self.bounds, s.piece_stop + s.shift)
        self.count = len(self.bounds) - 1
        self.block = self.bounds[:-1] // s.denominator
        self.data = int(np.searchsorted(self.bounds, s.nblocks * s.denominator))  # data segments come first
        self.den = s.denominator

    def interval(self, seg: int) -> tuple[str, str]:
        """Segment ``seg`` as [start, stop) in blocks, exact fractions as strings. Raises: IndexError out of range.
        Source: docs/verification.md (failures name an interval)."""
        return (str(Fraction(int(self.bounds[seg]), self.den)), str(Fraction(int(self.bounds[seg + 1]), self.den)))


def flat_indices(rank: np.ndarray, lo: np.ndarray, hi: np.ndarray, nseg: int) -> np.ndarray:
    """Flat indices rank * nseg + seg of every segment of every piece [lo, hi) of ``rank``, concatenated: int64.

    Raises:
        Nothing: arithmetic on the caller's arrays.

    Source: docs/verification.md (vectorised gathers and scatters).

    >>> flat_indices(np.array([0, 1]), np.array([0, 1]), np.array([2, 3]), 4).tolist()
    [0, 1, 5, 6]
    """
    lengths = hi - lo
    starts = rank * nseg + lo
    offsets = np.cumsum(lengths) - lengths
    return np.repeat(starts - offsets, lengths) + np.arange(lengths.sum())


def chunks(lengths: np.ndarray, limit: int) -> list[tuple[int, int]]:
    """Split consecutive pieces of ``lengths`` segments into runs [a, b) whose total length stays near ``limit``.

    Raises:
        Nothing: arithmetic on the caller's array.

    Source: docs/verification.md (bounded index arrays).

    >>> chunks(np.array([2, 2, 2]), 4)
    [(0, 2), (2, 3)]
    """
    if not len(lengths):
        return []
    cum = np.cumsum(lengths)
    cuts = np.searchsorted(cum, np.arange(limit, cum[-1], limit), side="right")
    edges = np.unique(np.concatenate([[0], cuts, [len(lengths)]]))
    return list(zip(edges[:-1].tolist(), edges[1:].tolist(), strict=True))


def check_state(what: str, n: int, nseg: int, limit: float | None = None) -> None:
    """Refuse a verifier state of N x ``nseg`` 64-bit words over ``limit`` bytes (default :data:`MAX_STATE_BYTES`)
    or the memory budget.

    Raises:
        ScheduleError: over the limit. ResourceError: over the memory budget (``what`` names the work).

    Source: docs/architecture.md, "Engines, runtimes and scale" (estimate memory first, refuse over a budget).

    >>> check_state("a small check", 4, 16)
    """
    nbytes = 8.0 * n * nseg
    limit = MAX_STATE_BYTES if limit is None else limit
    if nbytes > limit:
        raise ScheduleError(f"verify: {n} ranks x {nseg} segments needs {nbytes / 2**30:.1f} GiB of "
                            f"state; the limit is {limit / 2**30:.0f} GiB")
    check_memory(what, nbytes + 8.0 * nseg)  # the state and the expected words
