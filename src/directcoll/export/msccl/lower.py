"""Export: an IR schedule as an MSCCL program for the NCCL MSCCL executor (:func:`to_msccl`, :func:`export_msccl`).

- *Chunks* (:func:`directcoll.schedule.chunking.in_whole_chunks`; a BFB schedule is rebuilt along its LP's loads
  instead, :mod:`~directcoll.export.msccl.rechunk`). A block is ``q`` chunks,
  ``nchunksperloop = vector_blocks * q`` (``nblocks * q``; all-to-all: ``N k q``, one rank's send buffer). ``q``
  is the schedule's exact denominator (the least common denominator of its piece ends, 1 for block algorithms)
  unless ``nchunksperloop`` would exceed ``max_chunks``; then ``q = max_chunks // vector_blocks`` and every piece
  end is rounded to the nearest 1/q. The deviation (largest distance, in blocks, between an exact end and its
  rounded one) is returned in the report, written into an XML comment and warned about
  (:class:`MscclRoundingWarning`); a rounded schedule is no longer exact, so it may not verify.
- *Buffers*: :mod:`directcoll.export.msccl.layout`. An all-to-all's own pair (r, r) is copied from i to o by a
  local ``cpy`` (as msccl-tools' alltoall programs do) unless the schedule moves it there itself. The all-to-all
  export declares ``inplace="0" outofplace="1"``, like msccl-tools' ``AllToAll(..., inplace=False)``: in place
  (sendbuff == recvbuff; the executor's fallback, a grouped ncclSend/ncclRecv per peer, races there too) the
  receive of pair (i, r) would overwrite pair (r, i) before it is sent.
- *Reads and writes.* A value is read where it currently lives: the input buffer until the first write, then
  where it was last written. Writes go to the value's home (o, or s for a reduce-scatter's non-owned blocks).
  The program (all but alltoall) is valid both in place and out of place (``inplace="1" outofplace="1"``): i and
  o are treated as one memory, and a step that overwrites a value another send or local copy still reads in the
  same IR step writes it to an alternate scratch chunk instead (renaming), so receives never wait on sends of the
  same step. At the end, output chunks that do not live in their home are copied there (``cpy``), e.g. an
  allgather's own blocks i -> o, an alltoall's own pair i -> o.
- *Thread blocks.* Per rank: one thread block per send peer (``send=peer recv=-1``), one per receive peer
  (``send=-1 recv=peer``), one for local ``cpy``/``re`` steps; channels: :mod:`directcoll.export.msccl.assemble`.
  A connection (or local sequence) with more steps than ``MSCCL_MAX_NUM_STEPS`` is cut into several thread
  blocks, on distinct channels, both ends cutting at the same index (``split=True``).
- *Steps.* Each IR transfer piece becomes runs of chunks contiguous on both ends (at most ``max_count`` each):
  ``s`` at the sender, ``r`` (copy) or ``rrc`` (reduce: received + local value -> destination) at the receiver;
  a local transfer becomes ``cpy`` or ``re`` (preceded by a ``cpy`` when the value must first move to its new
  location). Within an IR step, sends and receives of one connection are ordered by (op, transfer, piece), copies
  before reductions, as the IR's semantics land copies before reductions.
- *Dependencies* (:mod:`directcoll.export.msccl.deps`): read-after-write, write-after-write, write-after-read, on
  memory, in-place aware. All dependencies point to earlier IR steps or, within a step, from receives and local
  steps to earlier ones, so the program is deadlock-free whatever the connection buffer size.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from directcoll.errors import DirectcollError, ScheduleError
from directcoll.export.msccl.assemble import assemble
from directcoll.export.msccl.deps import Op, OpLog, connection
from directcoll.export.msccl.format import (
    COLL_NAMES,
    PROTOCOLS,
    MscclLimitError,
    MscclRoundingWarning,
    Program,
    program_to_xml,
)
from directcoll.export.msccl.layout import ALT, BUFFER_LETTERS, HOME, BufferLayout, buffer_layout
from directcoll.export.msccl.limits import LIMITS, MscclLimits, check_limits
from directcoll.export.msccl.rechunk import bfb_along_loads
from directcoll.schedule.chunking import WholeChunks, exact_chunks_per_block, in_whole_chunks
from directcoll.schedule.ir import COPY, REDUCE, Schedule

_EXPORT_OPTIONS = ("name", "proto", "max_chunks", "min_bytes", "max_bytes", "split", "limits", "max_steps", "max_count",
                   "max_threadblocks_per_channel", "max_channels", "max_threadblocks")
#: Rounds of cutting long thread blocks before the export gives up splitting.
_SPLIT_ROUNDS = 8


@dataclass(frozen=True)
class MscclExport:
    """What :func:`to_msccl` produced: the program, its XML text and a report (chunks per block, rounding
    deviation, thread blocks, steps, channels, scratch).

    Raises:
        Nothing: a frozen record.

    Source: docs/export.md, "What the export maps" (``result.report``); the MSCCL executor's XML format
    (Azure/msccl-executor-nccl ``msccl_parser.cc``).
    """

    program: Program
    xml: str
    report: dict


class Lowering:
    """Walks a schedule in whole chunks step by step and emits its MSCCL ops (module docstring): ``log`` holds
    them once :meth:`run` returns. ``loc[r, x]``: where cell x of rank r lives now (INIT/HOME/ALT).

    Raises:
        Nothing: the lowering only emits ops; limits are checked after assembly (:func:`to_msccl`).

    Source: docs/export.md, "What the export maps"; Zhao et al. (NSDI'25) Sec. 7 (lowering a schedule to MSCCL
    send / receive / reduce / copy instructions per thread block).
    """

    def __init__(self, s: Schedule, layout: BufferLayout, max_count: int, part_size: dict | None = None) -> None:
        self.s, self.lay, self.max_count = s, layout, max_count
        self.log = OpLog(part_size)
        n, C = layout.n, layout.C
        self.loc = np.zeros((n, C), np.int8)
        self.read_now = np.zeros((n, C), bool)
        self.target = np.full((n, C), -1, np.int8)

    def run(self) -> None:
        """Lower every IR step in order (:meth:`step`), then copy outputs home (:meth:`finish`); fills ``log``.

        Raises:
            Nothing: the schedule was validated when built and the layout made for it.

        Source: docs/export.md, "What the export maps".
        """
        s = self.s
        bounds = s.step_bounds
        for t in range(s.num_steps):
            self.step(range(bounds[t], bounds[t + 1]))
        self.finish()

    def step(self, transfers: range) -> None:
        """One IR step: every piece's reads (as of the previous step), then its writes, then its MSCCL steps:
        all sends first, then receives and local steps.

        Raises:
            Nothing: the schedule was validated when built.

        Source: docs/schedule.md (bulk-synchronous step semantics); docs/export.md, "What the export maps" (steps).
        """
        items = self.pieces(transfers)
        src = [self.read_location(a, xs) for _, _, _, a, _, xs, _ in items]
        dst, opd = [], []
        for op, _, _, _, b, _, ys in items:
            written, operand = self.write_location(op, b, ys)
            dst.append(written)
            opd.append(operand)
        for _, _, _, a, b, xs, ys in items:
            self.read_now[a, xs] = self.read_now[b, ys] = False
            self.target[a, xs] = self.target[b, ys] = -1
        planned = [self.piece_runs(item, src[k], dst[k], opd[k]) for k, item in enumerate(items)]
        for k, runs in enumerate(planned):
            op, _, _, a, b, _, _ = items[k]
            if a != b:
                self.send(a, b, src[k], dst[k], runs)
        for k, runs in enumerate(planned):
            for u, v in runs:
                self.arrive(items[k], src[k], dst[k], opd[k], u, v)

    def pieces(self, transfers: range) -> list[tuple]:
        """(op, transfer, piece, src rank, dst rank, source cells, destination cells) of every piece, ordered by
        (op, transfer, piece): copies land before reductions.

        Cells are int64 chunk indices (source cells, and destination cells displaced by the piece's shift).

        Raises:
            Nothing: reads the schedule's arrays.

        Source: docs/schedule.md (pieces, ``piece_shift``; copies land before reductions).
        """
        s = self.s
        items = []
        for i in transfers:
            for p in range(s.piece_offsets[i], s.piece_offsets[i + 1]):
                xs = np.arange(s.piece_start[p], s.piece_stop[p], dtype=np.int64)
                items.append((int(s.op[i]), i, p, int(s.src[i]), int(s.dst[i]), xs, xs + s.shift[p]))
        items.sort(key=lambda it: (it[0], it[1], it[2]))
        return items

    def read_location(self, a: int, xs: np.ndarray) -> tuple:
        """(buffer, index, memory keys) cells ``xs`` of rank a are read from; marks them read in this step.

        Buffer codes int8, indices int64, keys int64, each of ``xs``' shape.

        Raises:
            Nothing: array indexing.

        Source: docs/export.md, "What the export maps" (reads: where the value currently lives).
        """
        code = self.loc[a, xs].copy()
        buf, idx = self.lay.where(a, xs, code)
        self.read_now[a, xs] = True
        return buf, idx, self.lay.keys(a, xs, code)

    def write_location(self, op: int, b: int, ys: np.ndarray) -> tuple:
        """(buffer, index, keys) cells ``ys`` of rank b are written to -- their home, or the alternate scratch
        chunk where the home is still read in this step (the first write of the step decides) -- and, for a
        reduction, where the local operand is (else None).

        Raises:
            Nothing: array indexing.

        Source: docs/export.md, "What the export maps" (writes go home, or to an alternate scratch chunk: renaming).
        """
        cur = self.loc[b, ys].copy()
        undecided = self.target[b, ys] < 0
        clash = self.read_now[b, ys] & (self.lay.canon(b, ys, cur) == HOME)
        choice = np.where(clash, ALT, HOME).astype(np.int8)
        self.target[b, ys[undecided]] = choice[undecided]
        code = self.target[b, ys].copy()
        buf, idx = self.lay.where(b, ys, code)
        written = (buf, idx, self.lay.keys(b, ys, code))
        operand = None
        if op == REDUCE:
            obuf, oidx = self.lay.where(b, ys, cur)
            operand = (obuf, oidx, self.lay.keys(b, ys, cur))
        self.loc[b, ys] = code
        return written, operand

    def piece_runs(self, item: tuple, src: tuple, dst: tuple, opd: tuple | None) -> list[tuple[int, int]]:
        """The piece's runs: contiguous at the source, the destination and (reduce) the local operand; a local
        ``re`` also never mixes chunks that need a preceding copy with chunks that do not.

        Returns [start, stop) cell ranges of the piece, each at most ``max_count`` chunks.

        Raises:
            Nothing: array arithmetic.

        Source: docs/export.md, "What the export maps" (steps: runs of chunks contiguous on both ends); the executor's
        ``MSCCL_MAX_COUNT`` (:mod:`directcoll.export.msccl.limits`).
        """
        op, _, _, a, b, _, _ = item
        cols = [src[0], src[1], dst[0], dst[1]]
        if op == REDUCE:
            ob, oi, _ = opd
            cols += [ob, oi]
            if a == b:  # `re` adds in place: a value not at its target location must be copied there first
                pre = ((ob != dst[0]) | (oi != dst[1])).astype(np.int8)
                cols += [pre, np.arange(len(pre))]
        return self.runs(cols)

    def runs(self, cols: list[np.ndarray]) -> list[tuple[int, int]]:
        """Split cells into runs contiguous in every (buffer, index) column pair, at most max_count long.

        Returns [start, stop) index ranges, in order.

        Raises:
            Nothing: array arithmetic.

        Source: docs/export.md, "What the export maps" (steps); the executor's ``cnt < MSCCL_MAX_COUNT``.
        """
        m = len(cols[0])
        brk = np.zeros(m, bool)
        brk[0] = True
        for c in range(0, len(cols), 2):
            buf, idx = cols[c], cols[c + 1]
            if m > 1:
                brk[1:] |= (buf[1:] != buf[:-1]) | (idx[1:] != idx[:-1] + 1)
        starts = np.flatnonzero(brk).tolist() + [m]
        out = []
        for a, b in zip(starts[:-1], starts[1:], strict=True):
            for c in range(a, b, self.max_count):
                out.append((c, min(b, c + self.max_count)))
        return out

    def send(self, a: int, b: int, src: tuple, dst: tuple, runs: list) -> None:
        """The sender's ``s`` steps; the receiver's location rides along in dstbuf/dstoff, as msccl-tools writes.

        Raises:
            Nothing: emits ops.

        Source: the MSCCL executor's XML format (step type ``s``; Azure/msccl-executor-nccl ``msccl_parser.cc``);
        microsoft/msccl-tools ``ir_to_xml`` (dstbuf/dstoff of a send).
        """
        sb, si, sk = src
        db, di, _ = dst
        for u, v in runs:
            self.put(a, "send", b, "s", (sb[u], si[u], a), (db[u], di[u], b), v - u, sk[u:v], ())

    def arrive(self, item: tuple, src: tuple, dst: tuple, opd: tuple | None, u: int, v: int) -> None:
        """Run [u, v) of a piece at its destination: ``r``/``rrc`` from a peer, or a local ``cpy``/``re``.

        Raises:
            Nothing: emits ops.

        Source: the MSCCL executor's XML format (step types ``r``, ``rrc``, ``cpy``, ``re``; Azure/msccl-executor-nccl
        ``msccl_parser.cc``); docs/export.md, "What the export maps".
        """
        op, _, _, a, b, _, _ = item
        sb, si, sk = src
        db, di, dk = dst
        cnt, here = v - u, (db[u], di[u], b)
        if a != b and op == COPY:
            self.put(b, "recv", a, "r", (sb[u], si[u], a), here, cnt, (), dk[u:v])
        elif a != b:
            ob, oi, ok = opd
            self.put(b, "recv", a, "rrc", (ob[u], oi[u], b), here, cnt, ok[u:v], dk[u:v])
        elif op == COPY:
            self.put(a, "local", -1, "cpy", (sb[u], si[u], a), here, cnt, sk[u:v], dk[u:v])
        else:
            ob, oi, ok = opd
            if ob[u] != db[u] or oi[u] != di[u]:  # `re` adds in place: move the value to its target first
                self.put(a, "local", -1, "cpy", (ob[u], oi[u], a), here, cnt, ok[u:v], dk[u:v])
            self.put(a, "local", -1, "re", (sb[u], si[u], a), here, cnt, np.concatenate([sk[u:v], dk[u:v]]),
                     dk[u:v])

    def put(self, rank: int, kind: str, peer: int, type_: str, src: tuple, dst: tuple, cnt: int, reads, writes):
        """Emit one step of ``rank`` (thread block by ``kind``/``peer``); src/dst are (buffer, index, owner rank).

        Raises:
            Nothing: emits one op (:meth:`~directcoll.export.msccl.deps.OpLog.emit`).

        Source: docs/export.md, "What the export maps" (thread blocks and dependencies).
        """
        op = Op(rank, self.log.tb_key(rank, kind, peer), type_, BUFFER_LETTERS[src[0]], int(src[1]), src[2],
                BUFFER_LETTERS[dst[0]], int(dst[1]), dst[2], cnt)
        self.log.emit(op, reads, writes)

    def finish(self) -> None:
        """Copy output chunks that do not live in their home there (e.g. an allgather's own blocks i -> o, an
        all-to-all's own part i -> o).

        Raises:
            Nothing: emits ``cpy`` ops.

        Source: docs/export.md, "What the export maps" (reads and writes: final copies home).
        """
        lay = self.lay
        for r in range(lay.n):
            xs = np.flatnonzero(lay.output[r] & (self.loc[r] != HOME))
            sb, si = lay.where(r, xs, self.loc[r, xs])
            db, di = lay.where(r, xs, np.full(len(xs), HOME, np.int8))
            xs = xs[(sb != db) | (si != di)]  # an all-to-all's receive cell starts where it ends: nothing to copy
            if not len(xs):
                continue
            code = self.loc[r, xs].copy()
            sb, si = lay.where(r, xs, code)
            home = np.full(len(xs), HOME, np.int8)
            db, di = lay.where(r, xs, home)
            sk, dk = lay.keys(r, xs, code), lay.keys(r, xs, home)
            for u, v in self.runs([sb, si, db, di, np.zeros(len(xs), np.int8), xs]):
                self.put(r, "local", -1, "cpy", (sb[u], si[u], r), (db[u], di[u], r), v - u, sk[u:v], dk[u:v])
            self.loc[r, xs] = HOME


def to_msccl(schedule: Schedule, *, name: str | None = None, proto: str = "Simple", max_chunks: int = 1024,
             min_bytes: int = 0, max_bytes: int = 0, split: bool = True, limits: MscclLimits | None = None,
             **limit_overrides) -> MscclExport:
    """Translate ``schedule`` into an MSCCL program for the NCCL MSCCL executor (module docstring; the format of
    Azure/msccl-executor-nccl ``msccl_parser.cc``).

    Args:
        schedule: an allreduce, reduce-scatter, allgather or all-to-all schedule (any algorithm; scratch, displaced
            pieces and relays allowed). Reduce-scatter / allgather ownership must give every rank the same number
            of blocks.
        name: the ``name`` attribute (default ``<algorithm>_<coll>_<N>``; characters other than letters, digits,
            ``_.-`` become ``_``).
        proto: ``Simple``, ``LL`` or ``LL128``.
        max_chunks: cap on ``nchunksperloop`` (``vector_blocks * q``); a fractional schedule needing more chunks is
            rounded (reported).
        min_bytes, max_bytes: message sizes the executor selects the algorithm for (``maxBytes=0``: no limit).
        split: when a thread block would exceed ``max_steps``, cut its connection (or local sequence) into parts,
            each a thread block of its own on its own channel, until every thread block fits (or no cut helps).
        limits: the executor's limits (default :data:`LIMITS`); ``max_steps``, ``max_count``,
            ``max_threadblocks_per_channel``, ``max_channels``, ``max_threadblocks`` override single fields.

    Returns:
        :class:`MscclExport` with the program, its XML and a report: ``chunks_per_block``,
        ``exact_chunks_per_block``, ``rounded``, ``max_deviation_blocks``, ``nchunksperloop``,
        ``max_threadblocks``, ``max_steps_per_threadblock``, ``nchannels``, ``max_scratch_chunks``; for a BFB
        schedule rebuilt along its LP's loads (:func:`~directcoll.export.msccl.rechunk.bfb_along_loads`) also
        ``bfb_along_lp_loads`` ({from_chunks_per_block, t_b_m_over_b, t_b_m_over_b_relaxed}).

    Raises:
        MscclLimitError: the program exceeds an executor limit (message names the limit and value).
        DirectcollError: a collective MSCCL cannot express, unequal ownership, bad options.

    Warns:
        MscclRoundingWarning: the schedule was rounded to fewer chunks per block than it needs.

    Source: Zhao et al. (NSDI'25) Sec. 7 (lowering schedules to MSCCL XML); the MSCCL executor's XML format
    (Azure/msccl-executor-nccl ``msccl_parser.cc``); docs/export.md.

    >>> from directcoll.registry import build
    >>> result = to_msccl(build("ring", "ring:4", "allreduce"))
    >>> result.program.nchunksperloop, result.report["rounded"], result.xml.startswith("<!-- directcoll export")
    (8, False, True)
    """
    limits = _limits(limits, limit_overrides)
    name = _checked_request(schedule, name, proto, max_chunks, min_bytes, max_bytes, limits)
    along = bfb_along_loads(schedule, max(1, max_chunks // schedule.vector_blocks))  # App. E.2, see rechunk.py
    chunked = _whole_chunks(schedule if along is None else along, max_chunks)
    report = {"chunks_per_block": chunked.chunks_per_block, "exact_chunks_per_block": chunked.exact_chunks_per_block,
              "rounded": chunked.rounded, "max_deviation_blocks": chunked.max_deviation_blocks}
    if along is not None:
        report["bfb_along_lp_loads"] = {"from_chunks_per_block": exact_chunks_per_block(schedule),
                                        "t_b_m_over_b": float(along.meta["t_b_m_over_b_lp"]),
                                        "t_b_m_over_b_relaxed": float(along.meta["t_b_m_over_b_relaxed"])}
    if report["rounded"]:
        warnings.warn(f"msccl export: {schedule!r} needs {report['exact_chunks_per_block']} chunks per block to be "
                      f"exact; max_chunks={max_chunks} allows {report['chunks_per_block']}, so piece ends moved by up "
                      f"to {report['max_deviation_blocks']:.4g} blocks", MscclRoundingWarning, stacklevel=2)
    program, part_size = _lower(chunked, limits, split, name=name, proto=proto, min_bytes=min_bytes,
                                max_bytes=max_bytes)
    report["split_connections"] = len(part_size)
    report.update(nchunksperloop=program.nchunksperloop, nchannels=program.nchannels,
                  max_threadblocks=max(len(g.tbs) for g in program.gpus),
                  max_steps_per_threadblock=max((len(tb.steps) for g in program.gpus for tb in g.tbs), default=0),
                  max_scratch_chunks=max(g.s_chunks for g in program.gpus), msccl_steps=sum(
                      len(tb.steps) for g in program.gpus for tb in g.tbs))
    check_limits(program, limits)
    meta = schedule.meta
    comment = (f"directcoll export: {schedule.algorithm} {schedule.collective.value} N={schedule.nranks} "
               f"topology={meta.get('topology', '?')} variant={meta.get('variant', '-')} "
               f"chunks/block={report['chunks_per_block']} (exact {report['exact_chunks_per_block']}) "
               f"max deviation={report['max_deviation_blocks']:.6g} blocks")
    if along is not None:
        comment += (f"; BFB loads rounded to {chunked.chunks_per_block} chunks per shard along the LP (Zhao et al. "
                    f"App. E.2), exact needs {report['bfb_along_lp_loads']['from_chunks_per_block']}")
    return MscclExport(program, program_to_xml(program, comment=comment), report)


def _limits(limits: MscclLimits | None, overrides: dict) -> MscclLimits:
    """``limits`` (default :data:`LIMITS`) with single fields overridden; unknown options refused."""
    if limits is None:
        limits = LIMITS
    unknown = set(overrides) - set(_EXPORT_OPTIONS)
    if unknown:
        raise DirectcollError(f"msccl export: unknown option(s) {', '.join(sorted(unknown))}; accepted: "
                              f"{', '.join(_EXPORT_OPTIONS)}")
    return replace(limits, **overrides) if overrides else limits


def _checked_request(schedule, name, proto, max_chunks, min_bytes, max_bytes, limits: MscclLimits) -> str:
    """Check the schedule and the options; returns the algorithm's name as written."""
    if not isinstance(schedule, Schedule):
        raise DirectcollError(f"msccl export: expected a Schedule, got {type(schedule).__name__}")
    if schedule.collective not in COLL_NAMES:
        raise DirectcollError(f"msccl export: {schedule.collective.value} has no MSCCL executor counterpart; "
                              f"accepted: {', '.join(c.value for c in COLL_NAMES)}")
    if proto not in PROTOCOLS:
        raise DirectcollError(f"msccl export: proto {proto!r} is not one of the executor's: {', '.join(PROTOCOLS)}")
    if max_chunks < 1:
        raise DirectcollError(f"msccl export: max_chunks must be >= 1, got {max_chunks}")
    if min_bytes < 0 or max_bytes < 0 or (max_bytes and max_bytes < min_bytes):
        raise DirectcollError(f"msccl export: need 0 <= min_bytes <= max_bytes (max_bytes 0 = no limit), got "
                              f"{min_bytes}, {max_bytes}")
    cells = max(schedule.vector_blocks, schedule.nscratch)  # chunks of one buffer, at one chunk per block
    if cells > limits.max_offset + 1:  # before any per-chunk work: a chunk index the executor cannot address
        raise MscclLimitError(f"msccl export: a buffer of {cells:,} blocks needs chunk offsets up to {cells - 1:,}; "
                              f"the executor's srcOffset/dstOffset are int16 (at most {limits.max_offset})",
                              limit="offset", value=cells - 1, allowed=limits.max_offset)
    default = f"{schedule.algorithm}_{COLL_NAMES.get(schedule.collective, schedule.collective.value)}_{schedule.nranks}"
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", name if name is not None else default)
    if not name:
        raise DirectcollError("msccl export: the algorithm name is empty")
    if len(name) > limits.max_str_len:
        raise MscclLimitError(f"msccl export: name has {len(name)} characters; the executor's parser holds at most "
                              f"MAX_STR_LEN = {limits.max_str_len}", limit="MAX_STR_LEN", value=len(name),
                              allowed=limits.max_str_len)
    return name


def _whole_chunks(schedule: Schedule, max_chunks: int) -> WholeChunks:
    """The schedule in whole chunks, ``nchunksperloop = vector_blocks * q`` at most ``max_chunks``."""
    cap = max(1, max_chunks // schedule.vector_blocks)  # nchunksperloop = vector_blocks * q (all-to-all: N k q)
    try:
        return in_whole_chunks(schedule, cap)
    except ScheduleError as exc:
        exact = exact_chunks_per_block(schedule)
        raise DirectcollError(f"msccl export: rounding the schedule to {min(exact, cap)} chunks per block "
                              f"(max_chunks={max_chunks}) breaks it ({exc}); raise max_chunks to at least "
                              f"{schedule.vector_blocks * exact}") from None


def _lower(chunked: WholeChunks, limits: MscclLimits, split: bool, **program_options) -> tuple[Program, dict]:
    """Lower and assemble; with ``split``, cut the connections of thread blocks over ``limits.max_steps`` into
    more parts and again, until every thread block fits or no cut helps. Returns the program and the parts'
    sizes ({connection: ops per thread block})."""
    part_size: dict = {}
    for _attempt in range(_SPLIT_ROUNDS):
        lowering = Lowering(chunked.schedule, buffer_layout(chunked.schedule, chunked.chunks_per_block),
                            limits.max_count, part_size)
        lowering.run()
        program, tb_of = assemble(lowering.log, lowering.lay, limits=limits, **program_options)
        if not split or not _cut_long_thread_blocks(lowering.log, tb_of, part_size, limits.max_steps):
            break
    return program, part_size


def _cut_long_thread_blocks(log: OpLog, tb_of: dict, part_size: dict, max_steps: int) -> bool:
    """Shrink ``part_size`` of every connection whose thread block has more than ``max_steps`` steps so that its
    parts would fit; returns whether any part size changed."""
    changed = False
    for key, tb in tb_of.items():
        if len(tb.steps) <= max_steps:
            continue
        r, kind, peer, _ = key
        conn = connection(r, kind, peer)
        nops = len(log.tb_ops[key])
        size = max(1, min(part_size.get(conn, nops), nops * max_steps // len(tb.steps) - 1))
        if size < part_size.get(conn, nops + 1):
            part_size[conn] = size
            changed = True
    return changed


def export_msccl(schedule: Schedule, path=None, **options) -> str:
    """MSCCL XML of ``schedule`` (see :func:`to_msccl` for ``options``); written to ``path`` when given.

    Returns:
        The XML text.

    Raises:
        MscclLimitError, DirectcollError: as :func:`to_msccl`; OSError if ``path`` cannot be written.

    Source: Zhao et al. (NSDI'25) Sec. 7; the MSCCL executor's XML format (Azure/msccl-executor-nccl
    ``msccl_parser.cc``); docs/export.md.

    >>> from directcoll.registry import build
    >>> export_msccl(build("ring", "ring:4", "allgather")).startswith("<!-- directcoll export")
    True
    """
    result = to_msccl(schedule, **options)
    if path is not None:
        Path(path).write_text(result.xml)
    return result.xml
