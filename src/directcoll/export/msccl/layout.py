"""Where every chunk of a schedule lives in the MSCCL executor's buffers, per rank (the export's buffer mapping).

A schedule in whole chunks (q per block, :func:`directcoll.schedule.chunking.in_whole_chunks`) has
``C = (nblocks + nscratch) q`` chunk cells per rank, the first ``cd = nblocks q`` of them data. Every cell has
three possible locations: its *initial* one (where the collective's input puts it), its *home* (where it is
written; the output for output cells) and an *alternate* scratch chunk (where a write goes when the home is still
read in the same IR step). NCCL's conventions, chunk positions in rank-major order so that they match NCCL's
layout:

- ``allreduce``: i = o = the whole vector (block b = chunks ``[b*q, (b+1)*q)``).
- ``allgather``: o = the whole vector with the blocks sorted by (owner, block) -- rank r's blocks, in block order,
  are o chunks ``[r*k, (r+1)*k)`` and its i chunks ``[0, k)``, k = nchunksperloop / N.
- ``reducescatter``: i = the whole vector in the same rank-major order, o = the rank's k owned chunks. Data that is
  neither input nor output (partial sums of blocks a rank does not own) and the IR's scratch blocks live in
  scratch ``s``. This is a permutation only when the schedule's ``owner`` is not MPI's (Swing's remapped
  blocks): the exported program is then still a correct NCCL collective, whose blocks are NCCL's, not the IR's.
- ``broadcast``: i = o = the whole vector on every rank (NCCL's ncclBroadcast reads sendbuff at the root only;
  the other ranks' i holds nothing the program reads before writing it).
- ``reduce``: the root's i = o = the whole vector; every other rank reads its i and keeps its partial sums in s
  (ncclReduce writes recvbuff at the root only).
- ``alltoall`` (nblocks = N^2 k, kq = k q chunks per pair; the runtime's ``compile_alltoall`` layout): rank r's
  i (N kq chunks, the sendbuf) holds pair (r, j) at chunks ``[j kq, (j+1) kq)``, its o (N kq chunks, the
  recvbuf) pair (i, r) at ``[i kq, (i+1) kq)``; its own pair (r, r) starts in i and ends in o. s holds, one chunk
  each in coordinate order, the cells of other pairs the rank relays, the IR's scratch cells it uses, and any
  write into its own send part (the sendbuf is const).

i and o are one memory where NCCL's in-place call makes them one (allreduce i = o, allgather i = o[r*k:],
reduce-scatter o = i[r*k:]): :meth:`BufferLayout.canon` maps a location to its memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from directcoll.errors import DirectcollError
from directcoll.export.msccl.format import COLL_NAMES
from directcoll.resources import check_memory
from directcoll.schedule.ir import Collective, Schedule

#: Buffer codes, and their letters in the XML (``BUFFER_LETTERS[I] == "i"``).
I, O, S = 0, 1, 2
BUFFER_LETTERS = "ios"
#: bytes per rank and chunk cell of a :class:`BufferLayout`: two int8 buffer maps, two int64 index maps, two
#: bool masks
LAYOUT_BYTES_PER_CELL = 20
#: Where a value lives: its initial location, its home, its alternate scratch chunk.
INIT, HOME, ALT = 0, 1, 2


@dataclass(eq=False)
class BufferLayout:
    """Per rank r and chunk cell x (arrays (N, C)): the buffer and chunk index of the initial location
    (``init_buf``/``init_idx``) and of the home (``home_buf``/``home_idx``), whether the initial location is the
    home's memory (``alias``), whether the cell is output (``output``); ``alt_base[r]``: rank r's first alternate
    scratch chunk (cell x's is ``alt_base[r] + x``). ``kc``: chunks of a rank's share (allreduce: all of them;
    all-to-all: of one pair row), ``nchunks``: ``nchunksperloop``.

    Raises:
        Nothing: a record; :func:`buffer_layout` fills it.

    Source: NCCL's buffer conventions per collective (module docstring); docs/export.md, "What the export maps"
    (buffers).
    """

    collective: Collective
    n: int
    cd: int
    C: int
    nchunks: int
    kc: int
    init_buf: np.ndarray
    init_idx: np.ndarray
    home_buf: np.ndarray
    home_idx: np.ndarray
    alias: np.ndarray
    output: np.ndarray
    alt_base: np.ndarray

    def where(self, r: int, xs: np.ndarray, code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Buffer (int8) and chunk index (int64) of cells ``xs`` of rank r at locations ``code`` (INIT/HOME/ALT).

        Raises:
            Nothing: array indexing (``xs`` within 0..C-1).

        Source: docs/export.md, "What the export maps" (reads and writes).
        """
        buf = np.where(code == INIT, self.init_buf[r, xs], np.where(code == HOME, self.home_buf[r, xs], S))
        idx = np.where(code == INIT, self.init_idx[r, xs],
                       np.where(code == HOME, self.home_idx[r, xs], self.alt_base[r] + xs))
        return buf.astype(np.int8), idx

    def canon(self, r: int, xs: np.ndarray, code: np.ndarray) -> np.ndarray:
        """Memory slot of a location: the input aliases the home where NCCL's in-place call makes them one.

        Returns int8-compatible codes, the shape of ``xs``.

        Raises:
            Nothing: array indexing.

        Source: NCCL's in-place calls (sendbuff == recvbuff, i and o one memory); docs/export.md, "What the export
        maps".
        """
        return np.where((code == INIT) & self.alias[r, xs], HOME, code)

    def keys(self, r: int, xs: np.ndarray, code: np.ndarray) -> np.ndarray:
        """One integer per memory slot of every rank (for dependency tracking).

        Returns int64 of ``xs``' shape: ``(r * C + x) * 3 + slot``.

        Raises:
            Nothing: arithmetic.

        Source: docs/export.md, "What the export maps" (dependencies on memory, in-place aware).
        """
        return (r * self.C + xs) * 3 + self.canon(r, xs, code)

    def buffer_sizes(self, r: int) -> tuple[int, int]:
        """``i_chunks``, ``o_chunks`` of rank r.

        Both in chunks.

        Raises:
            Nothing: a lookup by collective.

        Source: the MSCCL executor's XML format (Azure/msccl-executor-nccl ``src/misc/msccl/msccl_parser.cc``); ``<gpu
        i_chunks o_chunks>``; NCCL's buffer sizes per collective.
        """
        coll = self.collective
        if coll is Collective.ALLTOALL:
            return self.kc, self.kc
        if coll in (Collective.ALLREDUCE, Collective.BROADCAST, Collective.REDUCE):
            return self.cd, self.cd
        if coll is Collective.ALLGATHER:
            return self.kc, self.cd
        return self.cd, self.kc


def buffer_layout(s: Schedule, q: int) -> BufferLayout:
    """The buffer layout (module docstring) of schedule ``s`` in whole chunks, q chunks per block.

    Raises:
        DirectcollError: an allgather or reduce-scatter whose ownership does not give every rank the same share
            (NCCL's collectives do).

    Source: NCCL's buffer conventions (module docstring); docs/export.md, "What the export maps" (buffers).

    >>> from directcoll.registry import build
    >>> from directcoll.schedule.chunking import in_whole_chunks
    >>> lay = buffer_layout(in_whole_chunks(build("ring", "ring:4", "allgather"), 8).schedule, 1)
    >>> lay.buffer_sizes(0)
    (2, 8)
    """
    n, cd, C = s.nranks, s.nblocks * q, (s.nblocks + s.nscratch) * q
    check_memory(f"the MSCCL buffer layout of {n:,} ranks x {C:,} chunk cells", LAYOUT_BYTES_PER_CELL * n * C)
    lay = BufferLayout(s.collective, n, cd, C, nchunks=cd, kc=cd,
                       init_buf=np.full((n, C), S, np.int8), init_idx=np.zeros((n, C), np.int64),
                       home_buf=np.full((n, C), S, np.int8), home_idx=np.zeros((n, C), np.int64),
                       alias=np.ones((n, C), bool), output=np.zeros((n, C), bool), alt_base=np.zeros(n, np.int64))
    x = np.arange(C, dtype=np.int64)
    if s.collective is Collective.ALLTOALL:
        _alltoall(lay, s, x)
        return lay
    s_base = np.zeros(n, np.int64)
    if s.collective in (Collective.ALLREDUCE, Collective.BROADCAST, Collective.REDUCE):
        lay.init_buf[:, :cd], lay.init_idx[:, :cd] = I, x[:cd]
        lay.home_buf[:, :cd], lay.home_idx[:, :cd] = O, x[:cd]
        lay.output[:, :cd] = True
        if s.collective is Collective.REDUCE:  # partial sums of the other ranks live in their scratch
            others = np.arange(n) != s.root
            lay.home_buf[others, :cd], lay.alias[others, :cd], lay.output[others, :cd] = S, False, False
            s_base[others] = cd
    else:
        _owned(lay, s, q, x, s_base)
    lay.init_idx[:, cd:] = lay.home_idx[:, cd:] = s_base[:, None] + (x[cd:] - cd)[None, :]
    lay.alt_base = s_base + (C - cd)
    return lay


def _owned(lay: BufferLayout, s: Schedule, q: int, x: np.ndarray, s_base: np.ndarray) -> None:
    """Allgather and reduce-scatter: blocks in (owner, block) order; ``s_base``: where each rank's scratch starts."""
    n, cd, coll, owner = lay.n, lay.cd, s.collective, s.owner
    share = np.bincount(owner, minlength=n)
    if s.nblocks % n or np.any(share != s.nblocks // n):
        raise DirectcollError(
            f"msccl export: NCCL's {COLL_NAMES[coll]} gives every rank the same share, but this schedule's "
            f"ownership gives ranks {share.min()}..{share.max()} of its {s.nblocks} blocks")
    order = np.lexsort((np.arange(s.nblocks), owner))
    bpos = np.empty(s.nblocks, np.int64)
    bpos[order] = np.arange(s.nblocks)
    pos = bpos[x[:cd] // q] * q + x[:cd] % q
    cell_owner = owner[x[:cd] // q]
    lay.kc = kc = cd // n
    for r in range(n):
        own = cell_owner == r
        if coll is Collective.ALLGATHER:
            lay.init_buf[r, :cd] = np.where(own, I, O)
            lay.init_idx[r, :cd] = np.where(own, pos - r * kc, pos)
            lay.home_buf[r, :cd], lay.home_idx[r, :cd] = O, pos
            lay.output[r, :cd] = True
        else:
            lay.init_buf[r, :cd], lay.init_idx[r, :cd] = I, pos
            lay.home_buf[r, :cd] = np.where(own, O, S)
            lay.home_idx[r, :cd] = np.where(own, pos - r * kc, np.cumsum(~own) - 1)
            lay.alias[r, :cd] = own
            lay.output[r, :cd] = own
            s_base[r] = cd - kc


def _alltoall(lay: BufferLayout, s: Schedule, x: np.ndarray) -> None:
    """All-to-all buffers (module docstring): rank r's ``i`` is its send part (pair (r, j), chunk ``j kq + w``),
    its ``o`` the receive part (pair (i, r), chunk ``i kq + w``), kq chunks per pair; its own pair (r, r) starts
    in ``i`` and ends in ``o``. Everything else the rank touches (relayed pairs, the IR's scratch, and the
    rare write into its own send part, which must not go to the const input) lives in ``s``, one chunk per
    touched cell, in coordinate order; alternate chunks follow them."""
    n, cd, C = lay.n, lay.cd, lay.C
    kq = cd // (n * n)
    lay.kc = lay.nchunks = n * kq
    read, written = touched_cells(s, C)
    pair, w = np.divmod(x[:cd], kq)
    src, dst = np.divmod(pair, n)
    for r in range(n):
        send = src == r
        diag = send & (dst == r)
        recv = (dst == r) & ~send
        tail = np.ones(C - cd, bool)
        relay = np.concatenate([~(send | recv), tail])      # other ranks' pairs and the IR's scratch
        sent = np.concatenate([send & ~diag, ~tail])         # needs a slot only where it is written
        in_s = (relay & (read[r] | written[r])) | (sent & written[r])
        slot = np.cumsum(in_s) - 1
        lay.init_buf[r, :cd] = np.where(send, I, np.where(recv, O, S))
        lay.init_idx[r, :cd] = np.where(send, dst * kq + w, np.where(recv, src * kq + w, slot[:cd]))
        lay.home_buf[r, :cd] = np.where(diag | recv, O, S)
        lay.home_idx[r, :cd] = np.where(diag, r * kq + w, np.where(recv, src * kq + w, slot[:cd]))
        lay.init_idx[r, cd:] = lay.home_idx[r, cd:] = slot[cd:]
        lay.alias[r, :cd] = ~send       # a send cell starts in i (const) and lives in o or s
        lay.output[r, :cd] = diag | recv
        lay.alt_base[r] = int(in_s.sum())


def touched_cells(s: Schedule, C: int) -> tuple[np.ndarray, np.ndarray]:
    """Which of the C chunk cells every rank of ``s`` (in whole chunks) reads, and which it writes: bool (N, C).

    Raises:
        Nothing: the schedule was validated when built (pieces lie within its C cells).

    Source: docs/schedule.md (pieces and their landing shift); docs/export.md, "What the export maps" (scratch).
    """
    n, pt = s.nranks, s.piece_transfer
    out = []
    for ranks, a, b in ((s.src[pt], s.piece_start, s.piece_stop),
                        (s.dst[pt], s.piece_start + s.shift, s.piece_stop + s.shift)):
        diff = np.zeros((n, C + 1), np.int64)
        np.add.at(diff, (ranks, a), 1)
        np.add.at(diff, (ranks, b), -1)
        out.append(np.cumsum(diff, axis=1)[:, :C] > 0)
    return out[0], out[1]
