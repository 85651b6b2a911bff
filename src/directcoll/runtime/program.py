"""Per-rank programs: a schedule compiled for one vector length into what each rank does at every step.

A program works on one *work buffer* per rank: the collective's data blocks followed by the schedule's scratch
blocks. Block coordinates become element offsets by rounding every piece end for the actual length
(``boundaries``): pieces that share an end in block coordinates share it in elements, so the rounded
pieces still tile every block exactly and the collective stays exact for any length. Blocks are mapped to
the user's buffers in MPI order (``user_blocks``): block b of a reduce-scatter or allgather belongs to rank
``owner[b]``, and a rank's blocks in block order are the consecutive slices of its MPI block.

Per step a rank: reads what it sends and what its local copies read (the state at the end of the previous
step), exchanges one message per transfer, then applies copies, then reductions (the IR's semantics).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from directcoll.errors import DirectcollError
from directcoll.schedule.ir import Collective, Schedule


@dataclass
class StepProgram:
    """What one rank does in one step. Ranges are (start, stop) element offsets in the work buffer."""

    sends: list[tuple[int, np.ndarray]] = field(default_factory=list)   # (peer, ranges read, shape (k, 2))
    recvs: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    # (peer, ranges of the message, destination starts, op per range: 0 copy / 1 reduce)
    local: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    # (source ranges, destination starts, ops)


@dataclass
class RankProgram:
    rank: int
    work_length: int            # elements of the work buffer (data + scratch)
    data_length: int            # elements of the collective's buffer
    steps: list[StepProgram]


def boundaries(schedule: Schedule, count: int) -> np.ndarray:
    """Element offset of every block boundary of the work buffer (data then scratch): int64 (nblocks+nscratch+1,).

    ``count`` is the number of elements of the full vector; data blocks split it as evenly as rounding allows,
    and scratch blocks have the sizes of the first data blocks."""
    nb, ns = schedule.nblocks, schedule.nscratch
    if schedule.owner is None:
        data = np.floor(np.arange(nb + 1) * count / nb + 0.5).astype(np.int64)
    else:  # every rank's blocks add up to its MPI block of count / N elements
        n = schedule.nranks
        if count % n:
            raise DirectcollError(f"{schedule.collective.value} of {count} elements: the vector must split into "
                                  f"{n} equal MPI blocks")
        per = count // n
        nth = np.zeros(nb, dtype=np.int64)  # the t-th block a rank owns
        mine = np.bincount(schedule.owner, minlength=n)
        for r in range(n):
            nth[schedule.owner == r] = np.arange(mine[r])
        m = mine[schedule.owner]
        cut = np.floor(np.stack([nth, nth + 1]) * per / m + 0.5).astype(np.int64)
        data = np.concatenate([[0], np.cumsum(cut[1] - cut[0])])
    sizes = np.diff(data)
    scratch = count + np.concatenate([[0], np.cumsum(np.resize(sizes, ns))]) if ns else np.array([count])
    return np.concatenate([data, scratch[1:]])


def _elements(schedule: Schedule, bounds: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Element offset of block coordinates x (numerators over the denominator), rounded consistently."""
    den = schedule.denominator
    block = np.minimum(x // den, len(bounds) - 2)
    frac = (x - block * den) / den
    width = bounds[block + 1] - bounds[block]
    return bounds[block] + np.floor(frac * width + 0.5).astype(np.int64)


def compile_programs(schedule: Schedule, count: int) -> list[RankProgram]:
    """Compile ``schedule`` for a vector of ``count`` elements into one program per rank.

    Raises:
        DirectcollError: count < 1.
    """
    if count < 1:
        raise DirectcollError(f"cannot run a collective on {count} elements")
    s = schedule
    bounds = boundaries(s, count)
    start = _elements(s, bounds, s.piece_start)
    stop = _elements(s, bounds, s.piece_stop)
    dest = _elements(s, bounds, s.piece_start + s.shift)
    programs = [RankProgram(r, int(bounds[-1]), count, [StepProgram() for _ in range(s.num_steps)])
                for r in range(s.nranks)]
    po = s.piece_offsets
    for i in range(s.num_transfers):
        a, b = po[i], po[i + 1]
        keep = stop[a:b] > start[a:b]
        ranges = np.stack([start[a:b][keep], stop[a:b][keep]], axis=1)
        dst_starts = dest[a:b][keep]
        ops = np.full(len(ranges), int(s.op[i]))
        step = int(s.step[i])
        src, dst = int(s.src[i]), int(s.dst[i])
        if src == dst:
            programs[src].steps[step].local.append((ranges, dst_starts, ops))
        else:
            programs[src].steps[step].sends.append((dst, ranges))
            programs[dst].steps[step].recvs.append((src, ranges, dst_starts, ops))
    return programs


def user_blocks(schedule: Schedule, count: int) -> list[np.ndarray] | None:
    """For reduce-scatter and allgather: per rank, the work-buffer ranges (in block order) that make up its MPI
    block, as an int64 (k, 2) array; None for allreduce (the work buffer is the user's vector)."""
    if schedule.collective is Collective.ALLREDUCE:
        return None
    bounds = boundaries(schedule, count)
    owner = schedule.owner
    return [np.stack([bounds[np.flatnonzero(owner == r)], bounds[np.flatnonzero(owner == r) + 1]], axis=1)
            for r in range(schedule.nranks)]


def mpi_order(schedule: Schedule, count: int) -> np.ndarray:
    """Permutation of element indices: work-buffer data element -> index in the MPI-ordered vector.

    MPI's vector is rank 0's block, then rank 1's, ...; the work buffer holds rank r's block in the blocks it
    owns, in block order."""
    per_rank = user_blocks(schedule, count)
    if per_rank is None:
        return np.arange(count)
    perm = np.empty(count, dtype=np.int64)
    pos = 0
    for ranges in per_rank:
        for a, b in ranges:
            perm[a:b] = np.arange(pos, pos + b - a)
            pos += b - a
    return perm

