"""Per-rank programs: a schedule compiled for one vector length into what each rank does at every step.

A program works on one *work buffer* per rank: the collective's data blocks followed by the schedule's scratch
blocks. Block coordinates become element offsets by rounding every piece end for the actual length
(``boundaries``): pieces that share an end in block coordinates share it in elements, so the rounded
pieces still tile every block exactly and the collective stays exact for any length. Blocks are mapped to
the user's buffers in MPI order (``user_blocks``): block b of a reduce-scatter or allgather belongs to rank
``owner[b]``, and a rank's blocks in block order are the consecutive slices of its MPI block.

All-to-all (:func:`compile_alltoall`) is laid out differently, because its coordinate (N^2 k blocks) is N times
one rank's data: a rank's work buffer is its send part (the sendbuf, N k blocks), its receive part (the recvbuf,
N k blocks) and then only the blocks it relays or the scratch blocks it uses, each block at a local offset.

Per step a rank: reads what it sends and what its local copies read (the state at the end of the previous
step), exchanges one message per transfer, then applies copies, then reductions (the IR's semantics).

Source: docs/architecture.md, "Engines, runtimes and scale" (per-rank programs executed with point-to-point calls) and
"Schedule IR" (semantics); docs/runtime.md, "Per-rank programs"; MPI 4.1 standard, Ch. 6 (buffer order).

>>> from directcoll.registry import build
>>> programs = compile_programs(build("ring", "ring:3", variant="unidirectional"), 6)
>>> programs[0].steps[0].sends  # rank 0 sends elements [4, 6) to rank 1 in step 0
[(1, array([[4, 6]]))]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from directcoll.errors import DirectcollError
from directcoll.schedule.ir import Collective, Schedule


@dataclass
class StepProgram:
    """What one rank does in one step. Ranges are (start, stop) element offsets in the work buffer.

    Attributes:
        sends: (peer, ranges read int64 (k, 2)) per message sent.
        recvs: (peer, (start, stop) offsets in the message int64 (k, 2) (a message carries each source element once,
            so two ranges may read the same offsets: :func:`message_layout`), destination starts int64 (k,), op per
            range int (k,):
            0 copy / 1 reduce (own operand on the left) / 2 reduce (received operand on the left; only compiled for
            non-commutative operators)) per message received.
        local: (source ranges (k, 2), destination starts (k,), ops (k,)) per local copy or reduction.

    Raises:
        Nothing: a record filled by :func:`compile_programs`.

    Source: docs/architecture.md, "Schedule IR" (bulk-synchronous step: read, exchange, copies, then reductions).
    """

    sends: list[tuple[int, np.ndarray]] = field(default_factory=list)   # (peer, ranges read, shape (k, 2))
    recvs: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    # (peer, offsets in the message, destination starts, op per range: 0 copy / 1 reduce)
    local: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)
    # (source ranges, destination starts, ops)


@dataclass
class RankProgram:
    """One rank's program: its work buffer's length and what it does at every step.

    Attributes:
        rank: the rank.
        work_length: elements of the work buffer (data + scratch; all-to-all: send, receive, relay).
        data_length: elements of the collective's buffer (all-to-all: of one rank's sendbuf).
        steps: one :class:`StepProgram` per step of the schedule.

    Raises:
        Nothing: a record built by :func:`compile_programs`.

    Source: docs/architecture.md, "Engines, runtimes and scale" (compiled per-rank programs).

    >>> from directcoll.registry import build
    >>> p = compile_programs(build("ring", "ring:3", variant="unidirectional"), 6)[0]
    >>> p.rank, p.work_length, p.data_length, len(p.steps)
    (0, 6, 6, 4)
    """
    rank: int
    work_length: int            # elements of the work buffer (data + scratch; all-to-all: send, receive, relay)
    data_length: int            # elements of the collective's buffer (all-to-all: of one rank's sendbuf)
    steps: list[StepProgram]


def boundaries(schedule: Schedule, count: int) -> np.ndarray:
    """Element offset of every block boundary of the work buffer (data then scratch): int64 (nblocks+nscratch+1,).

    ``count`` is the number of elements of the full vector; data blocks split it as evenly as rounding allows,
    and scratch blocks have the sizes of the first data blocks. For all-to-all, ``count`` is one rank's sendbuf and
    the offsets are those of the whole coordinate (N x count elements, never allocated): every pair's k blocks
    split its count / N elements alike (:func:`compile_alltoall`).

    Raises:
        DirectcollError: a reduce-scatter, allgather or all-to-all whose ``count`` is not a multiple of N.

    Source: docs/architecture.md, "Schedule IR" (block coordinate); MPI 4.1 standard, Ch. 6 (equal MPI blocks of
    MPI_Reduce_scatter_block / MPI_Allgather / MPI_Alltoall).

    >>> from directcoll.registry import build
    >>> boundaries(build("ring", "ring:3", variant="unidirectional"), 7).tolist()  # allreduce: any count
    [0, 2, 5, 7]
    """
    nb, ns = schedule.nblocks, schedule.nscratch
    if schedule.collective is Collective.ALLTOALL:
        n = schedule.nranks
        if count % n:
            raise DirectcollError(f"alltoall of {count} elements per rank: the sendbuf must split into {n} equal "
                                  "parts, one per rank")
        k = nb // (n * n)
        cut = np.floor(np.arange(k + 1) * (count // n) / k + 0.5).astype(np.int64)
        data = np.concatenate([[0], np.cumsum(np.tile(np.diff(cut), n * n))])
    elif schedule.owner is None:
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
    end = int(data[-1])
    scratch = end + np.concatenate([[0], np.cumsum(np.resize(sizes, ns))]) if ns else np.array([end])
    return np.concatenate([data, scratch[1:]])


def _elements(schedule: Schedule, bounds: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Element offset of block coordinates x (numerators over the denominator), rounded consistently."""
    den = schedule.denominator
    block = np.minimum(x // den, len(bounds) - 2)
    frac = (x - block * den) / den
    width = bounds[block + 1] - bounds[block]
    return bounds[block] + np.floor(frac * width + 0.5).astype(np.int64)


def compile_programs(schedule: Schedule, count: int, received_first: np.ndarray | None = None) -> list[RankProgram]:
    """Compile ``schedule`` for a vector of ``count`` elements into one program per rank.

    ``count`` is the length of the full vector, or for all-to-all of one rank's sendbuf (``vector_blocks``);
    all-to-all is compiled by :func:`compile_alltoall`. ``received_first`` (bool per piece, from
    :func:`directcoll.verify.order.operand_order`) marks the reductions whose received operand goes on the left
    (op code 2), for non-commutative operators.

    Raises:
        DirectcollError: count < 1 (all-to-all: count not a multiple of N).

    Returns:
        One :class:`RankProgram` per rank (element offsets in the work buffer).

    Source: docs/architecture.md, "Schedule IR" (semantics) and "Engines, runtimes and scale"; docs/runtime.md.

    >>> from directcoll.registry import build
    >>> len(compile_programs(build("ring", "ring:3", variant="unidirectional"), 6))
    3
    """
    if count < 1:
        raise DirectcollError(f"cannot run a collective on {count} elements")
    if schedule.collective is Collective.ALLTOALL:
        return compile_alltoall(schedule, count)
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
        if received_first is not None and s.op[i]:
            ops = ops + received_first[a:b][keep]  # 2: reduce with the received operand on the left
        step = int(s.step[i])
        src, dst = int(s.src[i]), int(s.dst[i])
        if src == dst:
            programs[src].steps[step].local.append((ranges, dst_starts, ops))
        else:
            message, at = message_layout(ranges)
            programs[src].steps[step].sends.append((dst, message))
            programs[dst].steps[step].recvs.append((src, np.stack([at, at + ranges[:, 1] - ranges[:, 0]], axis=1),
                                                    dst_starts, ops))
    return programs


def message_layout(ranges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What one message carries for pieces that read ``ranges`` of the sender's work buffer, each source element
    once (the IR's semantics: pieces of one transfer that read the same source interval, to place it in several
    destination cells, travel once).

    Args:
        ranges: int64 (k, 2), the (start, stop) element ranges the transfer's pieces read, in piece order.

    Returns:
        (message ranges int64 (u, 2), piece offsets int64 (k,)): the sender's ranges in message order, and where
        each piece's elements start in the message. Pairwise disjoint pieces keep their order (the message is
        their concatenation); overlapping ones are sent as the union of their ranges, in ascending order.

    Raises:
        Nothing: arithmetic on valid ranges.

    Source: docs/architecture.md, "Schedule IR" (a message carries each source byte once); :attr:`Schedule.transfer_size
    <directcoll.schedule.ir.Schedule.transfer_size>` counts the same union.

    >>> message, at = message_layout(np.array([[4, 6], [0, 2], [4, 6]]))  # [4, 6) lands in two cells
    >>> message.tolist(), at.tolist()
    ([[0, 2], [4, 6]], [2, 0, 2])
    """
    ranges = np.asarray(ranges, dtype=np.int64).reshape(-1, 2)
    order = np.argsort(ranges[:, 0], kind="stable")
    lo, hi = ranges[order, 0], ranges[order, 1]
    reach = np.maximum.accumulate(hi) if len(hi) else hi
    if not len(hi) or np.all(lo[1:] >= reach[:-1]):  # disjoint: the pieces themselves, in piece order
        ends = np.cumsum(ranges[:, 1] - ranges[:, 0])
        return ranges, (ends - (ranges[:, 1] - ranges[:, 0])).astype(np.int64)
    head = np.r_[True, lo[1:] >= reach[:-1]]  # a new interval of the union starts here
    group = np.cumsum(head) - 1
    starts = lo[head]
    stops = np.maximum.reduceat(hi, np.flatnonzero(head))
    where = np.concatenate([[0], np.cumsum(stops - starts)[:-1]])
    at = np.empty(len(ranges), dtype=np.int64)
    at[order] = where[group] + lo - starts[group]
    return np.stack([starts, stops], axis=1), at


def user_blocks(schedule: Schedule, count: int) -> list[np.ndarray] | None:
    """For reduce-scatter and allgather: per rank, the work-buffer ranges (in block order) that make up its MPI
    block, as an int64 (k, 2) array; None for allreduce, all-to-all, broadcast and reduce (the work buffer starts
    with the user's vector, in order).

    Raises:
        DirectcollError: ``count`` not a multiple of N (see :func:`boundaries`).

    Source: MPI 4.1 standard, Ch. 6 (rank r's block of MPI_Reduce_scatter_block / MPI_Allgather); the IR's
    ``owner`` (docs/architecture.md, "Schedule IR").

    >>> from directcoll.algorithms.ring import ring_allgather
    >>> user_blocks(ring_allgather([2, 0, 1]), 6)[0].tolist()  # rank 0 owns block 1: elements [2, 4)
    [[2, 4]]
    """
    if schedule.collective in (Collective.ALLREDUCE, Collective.ALLTOALL) or schedule.collective.rooted:
        return None
    bounds = boundaries(schedule, count)
    owner = schedule.owner
    return [np.stack([bounds[np.flatnonzero(owner == r)], bounds[np.flatnonzero(owner == r) + 1]], axis=1)
            for r in range(schedule.nranks)]


def mpi_order(schedule: Schedule, count: int) -> np.ndarray:
    """Permutation of element indices: work-buffer data element -> index in the MPI-ordered vector.

    MPI's vector is rank 0's block, then rank 1's, ...; the work buffer holds rank r's block in the blocks it
    owns, in block order.

    Returns:
        int64 (count,); the identity for allreduce and all-to-all.

    Raises:
        DirectcollError: ``count`` not a multiple of N (see :func:`boundaries`).

    Source: MPI 4.1 standard, Ch. 6 (buffer order of the collectives); docs/architecture.md, "Schedule IR" (ownership).

    >>> from directcoll.algorithms.ring import ring_allgather
    >>> mpi_order(ring_allgather([2, 0, 1]), 6).tolist()
    [4, 5, 0, 1, 2, 3]
    """
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



def _inner_cuts(bounds: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(piece index, offset) of every entry of ``bounds`` strictly inside some (lo[i], hi[i])."""
    first = np.searchsorted(bounds, lo, side="right")
    counts = np.maximum(np.searchsorted(bounds, hi, side="left") - first, 0)
    piece = np.repeat(np.arange(len(lo)), counts)
    ends = np.cumsum(counts)
    return piece, bounds[np.repeat(first - ends + counts, counts) + np.arange(ends[-1] if len(ends) else 0)]


def compile_alltoall(schedule: Schedule, count: int) -> list[RankProgram]:
    """Compile an all-to-all ``schedule`` for sendbufs of ``count`` elements (N parts of m = count / N) into one
    program per rank, without giving any rank the N^2 k blocks of the coordinate.

    Rank r's work buffer is its send part (coordinates [r N k, (r+1) N k), the sendbuf, elements [0, count)), its
    receive part (pair (i, r) at count + i m, the recvbuf; the diagonal pair (r, r) lives in the send part and the
    executor copies it), and then every other block it touches (blocks it relays, scratch blocks), in block order.
    Piece ends are rounded to elements on the whole coordinate (:func:`boundaries`), the same on every rank, so
    fractional pieces relayed through other ranks stay exact; a piece is cut where it crosses a block boundary
    (consecutive blocks need not be neighbours locally), and consecutive cut pieces that stay contiguous on both
    ends are merged again.

    Raises:
        DirectcollError: count < 1 or not a multiple of N.

    Returns:
        One :class:`RankProgram` per rank; rank r's work length is 2 count plus the blocks it relays.

    Source: docs/architecture.md, "Schedule IR" (all-to-all block numbering); MPI 4.1 standard, Ch. 6 (MPI_Alltoall's
    sendbuf and recvbuf); Basu et al. (HPDC'24) Sec. 4 (lowering schedules with relays to a runtime).

    >>> from directcoll.registry import build
    >>> p = compile_alltoall(build("direct", "ring:3", "alltoall"), 6)[0]
    >>> p.work_length, p.steps[0].sends[0]
    (12, (1, array([[2, 4]])))
    """
    if count < 1:
        raise DirectcollError(f"cannot run a collective on {count} elements")
    s = schedule
    bounds = boundaries(s, count)  # raises for count % N
    n = s.nranks
    start = _elements(s, bounds, s.piece_start)
    stop = _elements(s, bounds, s.piece_stop)
    delta = _elements(s, bounds, s.piece_start + s.shift) - start  # destination displacement in elements
    pt = s.piece_transfer
    keep = np.flatnonzero(stop > start)
    start, stop, delta, pt = start[keep], stop[keep], delta[keep], pt[keep]
    # cut every piece at the block boundaries inside it, on the source side and on the destination side
    src_piece, src_cut = _inner_cuts(bounds, start, stop)
    dst_piece, dst_cut = _inner_cuts(bounds, start + delta, stop + delta)
    piece = np.concatenate([np.arange(len(start)), src_piece, dst_piece])
    a = np.concatenate([start, src_cut, dst_cut - delta[dst_piece]])
    order = np.lexsort((a, piece))
    piece, a = piece[order], a[order]
    fresh = np.r_[True, (piece[1:] != piece[:-1]) | (a[1:] != a[:-1])][: len(piece)]
    piece, a = piece[fresh], a[fresh]
    last = np.r_[piece[1:] != piece[:-1], True][: len(piece)]
    b = np.where(last, stop[piece], np.r_[a[1:], 0])
    d = a + delta[piece]
    tr = pt[piece]
    src_local = _local_offsets(n, count, s.src[tr], a)
    dst_local = _local_offsets(n, count, s.dst[tr], d)
    src_out, dst_out = src_local < 0, dst_local < 0
    relay = _RelayLayout(bounds, n, count, np.concatenate([s.src[tr][src_out], s.dst[tr][dst_out]]),
                         np.concatenate([a[src_out], d[dst_out]]))
    src_local[src_out] = relay(s.src[tr][src_out], a[src_out])
    dst_local[dst_out] = relay(s.dst[tr][dst_out], d[dst_out])
    length = b - a
    # merge consecutive cut pieces of one transfer that stay contiguous on both ranks
    joined = np.r_[False, (tr[1:] == tr[:-1]) & (src_local[1:] == src_local[:-1] + length[:-1])
                   & (dst_local[1:] == dst_local[:-1] + length[:-1])][: len(tr)]
    run = np.cumsum(~joined) - 1
    heads = np.flatnonzero(~joined)
    run_len = np.bincount(run, weights=length, minlength=len(heads)).astype(np.int64)
    run_tr, run_src, run_dst = tr[heads], src_local[heads], dst_local[heads]
    work = relay.lengths
    programs = [RankProgram(r, int(work[r]), count, [StepProgram() for _ in range(s.num_steps)])
                for r in range(n)]
    edges = np.searchsorted(run_tr, np.arange(s.num_transfers + 1))
    for i in range(s.num_transfers):
        lo, hi = edges[i], edges[i + 1]
        if lo == hi:
            continue
        ranges = np.stack([run_src[lo:hi], run_src[lo:hi] + run_len[lo:hi]], axis=1)
        ops = np.full(hi - lo, int(s.op[i]))
        step, src, dst = int(s.step[i]), int(s.src[i]), int(s.dst[i])
        if src == dst:
            programs[src].steps[step].local.append((ranges, run_dst[lo:hi], ops))
        else:
            programs[src].steps[step].sends.append((dst, ranges))
            at = np.cumsum(run_len[lo:hi])  # the runs are disjoint: the message is their concatenation
            programs[dst].steps[step].recvs.append((src, np.stack([at - run_len[lo:hi], at], axis=1), run_dst[lo:hi],
                                                    ops))
    return programs


def _local_offsets(n: int, count: int, rank: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Work-buffer offset on ``rank`` of coordinate element ``x`` (of N ranks' sendbufs of ``count`` elements) in
    its send or receive part; -1 elsewhere (blocks of other pairs, scratch)."""
    m = count // n
    pair = np.where(x < n * count, x // m, -1)  # every pair has m elements
    i, j = pair // n, pair % n
    sent = (pair >= 0) & (i == rank)
    received = (pair >= 0) & (j == rank) & ~sent
    return np.where(sent, x - rank * count, np.where(received, count + i * m + (x - pair * m), -1))


class _RelayLayout:
    """Where each rank keeps the blocks outside its send and receive parts that it touches: after its 2 count
    elements, in block order. Call with (rank, coordinate element) for offsets; ``lengths``: work length per rank."""

    def __init__(self, bounds: np.ndarray, n: int, count: int, rank: np.ndarray, x: np.ndarray) -> None:
        """``rank``, ``x``: every (rank, coordinate element) outside the rank's send and receive parts that it
        reads or writes (the start of a piece cut at block boundaries, so its block is the one it lies in)."""
        self.width = len(bounds) - 1
        blocks = np.searchsorted(bounds, x, side="right") - 1
        self.keys = np.unique(rank * self.width + blocks)
        key_rank, key_block = np.divmod(self.keys, self.width)
        size = bounds[key_block + 1] - bounds[key_block]
        ends = np.cumsum(size)
        per_rank = np.bincount(key_rank, weights=size, minlength=n).astype(np.int64)
        first = np.concatenate([[0], np.cumsum(per_rank)[:-1]])  # where each rank's run of keys starts in ends
        self.local = 2 * count + ends - size - first[key_rank]
        self.block_start = bounds[key_block]
        self.bounds = bounds
        self.lengths = 2 * count + per_rank

    def __call__(self, rank: np.ndarray, x: np.ndarray) -> np.ndarray:
        if not len(self.keys):
            return np.full(len(x), -1, dtype=np.int64)
        blocks = np.minimum(np.searchsorted(self.bounds, x, side="right") - 1, self.width - 1)
        idx = np.minimum(np.searchsorted(self.keys, rank * self.width + blocks), len(self.keys) - 1)
        return self.local[idx] + (x - self.block_start[idx])
