"""Import: MSCCL XML back into the IR (:func:`import_msccl`, :func:`program_to_schedule`).

Sends and receives are matched per connection in order (``cnt`` must agree); the happens-before order
(thread-block order, ``depid``/``deps``, send before its receive) is sorted topologically, and the chunk accesses of
every rank are replayed in that order (:mod:`directcoll.export.msccl.order`). Each matched pair becomes an IR
transfer (copy for ``r``/``rcs``, reduce for ``rrc``/``rrs``/``rrcs``; a local copy in the same IR step when a
reduction's local operand is not its destination), ``cpy``/``re`` local transfers. IR steps are the smallest ones
that keep every read after the write it sees, so the bulk-synchronous IR reproduces the executor's result;
conflicting accesses not ordered by happens-before are reported as data races.

Coordinates: chunk c is block c (nblocks = nchunksperloop, MPI ownership ``c // k`` for allgather /
reduce-scatter); ``s`` chunks are scratch blocks after the data. With ``inplace="1"`` the buffers alias as in
NCCL's in-place call; a file that only declares out-of-place gets an input copy of the vector in scratch, filled by
a local copy in step 0. ``alltoall`` (nchunksperloop = N kc): nblocks = N * nchunksperloop, the export's mapping
inverted -- i chunk ``j kc + w`` of rank r is block ``(r N + j) kc + w``, o chunk ``i kc + w`` block
``(i N + r) kc + w``. The rank's own part is one block in i and o when o's chunks of it are only written by ``cpy``
from the same chunks of i (and i's are never written); otherwise o's own part gets scratch blocks and a final
local copy into the block, so that a program that never fills it fails verification. In place (``inplace="1"``,
msccl-tools' model: o is i) every chunk is its send block and a final local step moves o's pair (r, i) chunks to
block ``(i N + r) kc + w``.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from directcoll.errors import DirectcollError, ScheduleError
from directcoll.export.msccl.format import (
    RECV_TYPES,
    SEND_TYPES,
    XML_BYTES_PER_CHAR,
    MscclFormatError,
    Program,
    Step,
    ThreadBlock,
    parse_msccl,
    validate_program,
)
from directcoll.export.msccl.limits import LIMITS, MscclLimits, check_limits
from directcoll.export.msccl.order import (
    COPY_WRITE,
    END,
    READ,
    REDUCE_WRITE,
    START,
    ir_steps,
    reachability,
    topological_order,
)
from directcoll.inputs import read_text
from directcoll.resources import check_memory
from directcoll.schedule.ir import COPY, REDUCE, Collective, Schedule, ScheduleBuilder

_IMPORT_COLLS = {"allreduce": Collective.ALLREDUCE, "reducescatter": Collective.REDUCE_SCATTER,
                 "allgather": Collective.ALLGATHER, "alltoall": Collective.ALLTOALL,
                 "broadcast": Collective.BROADCAST, "reduce": Collective.REDUCE}
#: Collectives whose buffers are the whole vector on every rank (``sizeMultiplier`` 1)
_WHOLE = (Collective.ALLREDUCE, Collective.BROADCAST, Collective.REDUCE)
#: Bytes per chunk access of an import (its coordinates, its per-chunk record in the conflict table).
IMPORT_BYTES_PER_ACCESS = 500
#: Data races are looked for up to this many steps (the happens-before closure is quadratic).
RACE_CHECK_MAX_STEPS = 20000


def import_msccl(path_or_text, *, model: str = "auto", strict: bool = False, check_races: bool = True,
                 limits: MscclLimits | None = None) -> Schedule:
    """Read MSCCL XML (a path, or the XML text itself; the executor's format, ``msccl_parser.cc``) into an IR
    schedule that :func:`~directcoll.verify.verify` and the simulators accept (module docstring).

    Args:
        path_or_text: a file path (str or Path), or a string holding the XML (it starts with ``<``).
        model: ``"inplace"`` (i and o alias as in NCCL's in-place call; alltoall: o is i), ``"outofplace"`` (the
            input is a separate copy), or ``"auto"``: in place when the file declares ``inplace="1"``.
        strict: also check the executor's limits (:func:`~directcoll.export.msccl.limits.check_limits`).
        check_races: report conflicting chunk accesses that no dependency orders (skipped above
            :data:`RACE_CHECK_MAX_STEPS` steps).
        limits: limits for ``strict`` (default :data:`~directcoll.export.msccl.limits.LIMITS`).

    Returns:
        A schedule of ``nblocks = nchunksperloop`` blocks (alltoall: ``N * nchunksperloop``; denominator 1),
        scratch blocks for ``s`` chunks, temporaries and (out of place) the input copy or (alltoall) o's own part;
        meta records the source and the MSCCL attributes.

    Raises:
        MscclFormatError: malformed XML, an unsupported collective or step type, unmatched sends / receives,
            mismatched counts, chunks outside a buffer, a dependency that can never be satisfied, a deadlock,
            a data race, or a program the bulk-synchronous IR cannot express; messages name the file and element.
        MscclLimitError: with ``strict``, an executor limit is exceeded.
        ResourceError: the file, or the schedule it describes, would need more memory than the budget.

    Source: the MSCCL executor's XML format and execution model (Azure/msccl-executor-nccl ``msccl_parser.cc``,
    ``src/device/msccl_kernel.cu``); docs/export.md, "Import".

    >>> from directcoll.registry import build
    >>> from directcoll.export.msccl.lower import export_msccl
    >>> from directcoll.verify import verify
    >>> verify(import_msccl(export_msccl(build("ring", "ring:4", "allgather")))).ok
    True
    """
    if isinstance(path_or_text, Path) or (isinstance(path_or_text, str) and not path_or_text.lstrip().startswith("<")):
        path = Path(path_or_text)
        text = read_text(path, f"MSCCL XML {path}", bytes_per_byte=XML_BYTES_PER_CHAR, error=MscclFormatError)
        source = str(path)
    elif isinstance(path_or_text, str):
        text, source = path_or_text, "<msccl xml>"
        check_memory(f"parsing {source}", float(len(text)) * XML_BYTES_PER_CHAR)
    else:
        raise MscclFormatError(f"import_msccl: expected a path or XML text, got {type(path_or_text).__name__}")
    program = parse_msccl(text, source=source)
    if strict:
        check_limits(program, limits or LIMITS)
    return program_to_schedule(program, source=source, model=model, check_races=check_races)


def program_to_schedule(program: Program, *, source: str = "<msccl>", model: str = "auto",
                        check_races: bool = True) -> Schedule:
    """The IR schedule of an MSCCL program (checked first by
    :func:`~directcoll.export.msccl.format.validate_program`); see :func:`import_msccl`.

    Raises:
        MscclFormatError: as :func:`import_msccl`.
        ResourceError: the import would need more memory than the budget (estimated before anything is built).

    Source: the MSCCL executor's execution model (Azure/msccl-executor-nccl ``src/device/msccl_kernel.cu``,
    ``mscclRunInterpreter``); docs/export.md, "Import".

    >>> from directcoll.export.msccl.format import Gpu, Program
    >>> program_to_schedule(Program("none", "allreduce", 1, 1, 1, gpus=[Gpu(0, 1, 1, 0)])).nranks
    1
    """
    return _Importer(program, source, model, check_races).build()


def _runs(xs: np.ndarray, ys: np.ndarray) -> list[tuple[int, int, int]]:
    """(x, y, length) of the runs where both coordinate arrays advance by one chunk."""
    brk = np.flatnonzero((np.diff(xs) != 1) | (np.diff(ys) != 1)) + 1
    starts = np.concatenate([[0], brk])
    ends = np.concatenate([brk, [len(xs)]])
    return [(int(xs[a]), int(ys[a]), int(b - a)) for a, b in zip(starts, ends, strict=True)]


@dataclass
class _IOp:
    gpu: int
    tb: ThreadBlock
    step: Step
    k: int          # index in the thread block as the executor counts it
    where: str
    node: int = -1  # index in the happens-before graph


class _Importer:
    def __init__(self, p: Program, source: str, model: str, check_races: bool) -> None:
        validate_program(p, source=source)
        self.p, self.source, self.check_races = p, source, check_races
        if p.coll not in _IMPORT_COLLS:
            self.fail(f"<algo> coll={p.coll!r}: the IR has no such collective; importable: "
                      f"{', '.join(_IMPORT_COLLS)}")
        self.coll = _IMPORT_COLLS[p.coll]
        n = self.n = p.ngpus
        self.gpus = sorted(p.gpus, key=lambda g: g.id)
        cd = self.cd = p.nchunksperloop
        if self.coll not in _WHOLE and cd % n:
            self.fail(f"<algo> nchunksperloop={cd} must be a multiple of ngpus={n} for {p.coll}")
        self.kc = cd // n if self.coll not in _WHOLE else cd  # all-to-all: chunks per pair
        self.a2a = self.coll is Collective.ALLTOALL
        self.nb = n * cd if self.a2a else cd   # IR data blocks (all-to-all: N^2 kc, one block per chunk)
        if model == "auto":
            model = "inplace" if p.inplace else "outofplace"
        if model not in ("inplace", "outofplace"):
            raise DirectcollError(f"import_msccl: model {model!r}; accepted: auto, inplace, outofplace")
        self.model = model
        self.S = max((g.s_chunks for g in self.gpus), default=0)
        # all-to-all's input and output are distinct coordinates already: no input copy
        self.in_size = 0 if self.a2a else self.kc if self.coll is Collective.ALLGATHER else cd
        check_memory(f"{source}: importing {p.coll} on {n} GPUs ({cd:,} chunks per loop)", self.estimate_bytes())
        self.in_base = self.nb + self.S
        self.temp_base = self.diag_base = self.in_base + (self.in_size if model == "outofplace" else 0)
        self.diag_alias = [True] * n   # all-to-all out of place: rank r's own part of o shares i's coordinates
        self.temps = [0] * n

    def estimate_bytes(self) -> float:
        """Memory the import will need (an upper estimate), from the attributes alone, before anything is built:
        every chunk a step touches is a few coordinate entries and a per-chunk access record, and so is every
        chunk of the out-of-place input copies and all-to-all's final moves; plus the ownership map and the
        happens-before reachability bit sets."""
        steps = [st for g in self.gpus for tb in g.tbs for st in tb.steps if st.type != "nop" or st.depid >= 0]
        cells = 3.0 * sum(st.cnt for st in steps if st.type != "nop")
        if self.model == "outofplace":
            cells += 2.0 * self.n * self.in_size
        flags = 0.0
        if self.a2a:
            cells += 2.0 * self.n * self.cd
            flags = float(self.n) * self.kc  # which own-part chunks o receives (own_part_aliased)
        nv = float(len(steps))
        reach = nv * nv / 8 if self.check_races and nv <= RACE_CHECK_MAX_STEPS else 0.0
        return cells * IMPORT_BYTES_PER_ACCESS + 16.0 * self.nb + flags + reach + 1000.0 * nv

    def fail(self, message: str):
        raise MscclFormatError(f"{self.source}: {message}")

    # -- coordinates ----------------------------------------------------------------------------------------
    def natural(self, buf: str) -> int:
        c = self.coll
        if self.a2a and buf in "io":
            return self.cd
        if buf == "i":
            return self.kc if c is Collective.ALLGATHER else self.cd
        if buf == "o":
            return self.kc if c is Collective.REDUCE_SCATTER else self.cd
        return self.S

    def coord(self, op: _IOp, buf: str, off: int, role: str) -> np.ndarray:
        """IR coordinates of the ``cnt`` chunks of ``buf`` from ``off`` on the op's GPU (int64 array)."""
        g = self.gpus[op.gpu]
        cnt = op.step.cnt
        declared = {"i": g.i_chunks, "o": g.o_chunks, "s": g.s_chunks}[buf]
        size = min(declared, self.natural(buf)) if buf != "s" else declared
        if off < 0 or off + cnt > size:
            why = (f"{buf} has {declared} chunks (i_chunks/o_chunks/s_chunks)" if size == declared else
                   f"{self.p.coll} gives buffer {buf} {self.natural(buf)} chunks")
            self.fail(f"{op.where}: {role} chunks [{off}, {off + cnt}) of buffer {buf} are outside it: {why}")
        r = op.gpu
        cells = np.arange(off, off + cnt, dtype=np.int64)
        if buf == "s":
            return self.nb + cells
        if self.a2a:
            # i chunk j kc + w is pair (r, j); o chunk i kc + w is pair (i, r); in place o is i (msccl-tools' model)
            if buf == "i" or self.model == "inplace":
                return r * self.cd + cells
            src, w = np.divmod(cells, self.kc)
            out = src * self.cd + r * self.kc + w
            return out if self.diag_alias[r] else np.where(src == r, self.diag_base + w, out)
        if self.model == "outofplace" and buf == "i":
            return self.in_base + cells
        if buf == "i" and self.coll is Collective.ALLGATHER:
            return r * self.kc + cells
        if buf == "o" and self.coll is Collective.REDUCE_SCATTER:
            return r * self.kc + cells
        return cells

    def temp(self, r: int, cnt: int) -> np.ndarray:
        start = self.temp_base + self.temps[r]
        self.temps[r] += cnt
        return np.arange(start, start + cnt, dtype=np.int64)

    def own_part_aliased(self) -> list[bool]:
        """Out-of-place all-to-all: whether rank r's own part (chunks [r kc, (r+1) kc) of i and of o) can share one
        coordinate, pair (r, r): o's chunks of it are written only by ``cpy`` from the same chunks of i, each at
        least once, never read, and i's are never written -- then o ends equal to i, as the IR's one cell says.
        Otherwise o's own part gets scratch coordinates of its own and a final copy into pair (r, r), so that
        verify checks what the executor leaves in o (e.g. a program that forgets the local copy fails)."""
        kc, n = self.kc, self.n
        ok = [True] * n
        written = [np.zeros(kc, bool) for _ in range(n)]

        def own(r: int, off: int, cnt: int) -> tuple[int, int]:  # chunks [off, off + cnt) in the own part
            return max(off, r * kc) - r * kc, min(off + cnt, (r + 1) * kc) - r * kc

        for op in self.ops:
            st, r = op.step, op.gpu
            if st.type in ("s", "rrc", "rrs", "rrcs", "cpy", "re") and st.srcbuf == "o":
                a, b = own(r, st.srcoff, st.cnt)
                ok[r] &= a >= b
            if st.type in ("r", "rcs", "rrc", "rrcs", "cpy", "re") and st.dstbuf in "io":
                a, b = own(r, st.dstoff, st.cnt)
                if a >= b:
                    continue
                if st.dstbuf == "o" and st.type == "cpy" and st.srcbuf == "i" and st.srcoff == st.dstoff:
                    written[r][a:b] = True
                else:
                    ok[r] = False
        return [ok[r] and bool(written[r].all()) for r in range(n)]

    # -- reading --------------------------------------------------------------------------------------------
    def build(self) -> Schedule:
        """Read the steps, order them by happens-before, then replay them into a schedule."""
        tb_seq, conn_send, conn_recv = self.read_steps()
        succ = [[] for _ in range(len(self.ops))]
        for seq in tb_seq:
            for u, v in zip(seq[:-1], seq[1:], strict=True):
                succ[u].append(v)
        self.add_waits(succ, tb_seq)
        pairs = self.match_connections(conn_send, conn_recv, succ)
        topo, stuck = topological_order(succ)
        if stuck is not None:
            self.fail(f"the thread blocks wait on each other in a cycle (deadlock), e.g. at {self.ops[stuck].where}")
        rank_of = np.empty(len(self.ops), np.int64)
        rank_of[topo] = np.arange(len(self.ops))
        self.topo_index = rank_of
        nv = len(self.ops)
        self.reach = reachability(topo, succ) if self.check_races and nv <= RACE_CHECK_MAX_STEPS else None
        if self.a2a and self.model == "outofplace":
            self.diag_alias = self.own_part_aliased()
            if not all(self.diag_alias):
                self.temp_base = self.diag_base + self.kc
        return self.replay(pairs)

    def read_steps(self) -> tuple[list[list[int]], dict, dict]:
        """Every step the executor runs, as an op (``self.ops``); returns each thread block's op nodes in order and
        the send and receive op nodes of every (sender, receiver, channel) connection."""
        self.ops: list[_IOp] = []
        tb_seq: list[list[int]] = []
        conn_send, conn_recv = defaultdict(list), defaultdict(list)
        send_tb, recv_tb = {}, {}
        for g in self.gpus:
            for tb in sorted(g.tbs, key=lambda t: t.id):
                tw = f"gpu {g.id}, tb {tb.id}"
                self.claim_connection(send_tb, (g.id, tb.send, tb.chan), tb, tw, "send to", tb.send)
                self.claim_connection(recv_tb, (tb.recv, g.id, tb.chan), tb, tw, "receive from", tb.recv)
                seq = []
                k = 0
                for i, st in enumerate(tb.steps):
                    where = f"{tw}, step {i} (s={st.s}, type={st.type})"
                    if st.type == "nop" and st.depid < 0:
                        continue  # the executor skips it and does not count it
                    self.check_step(st, tb, where)
                    op = _IOp(g.id, tb, st, k, where, node=len(self.ops))
                    k += 1
                    self.ops.append(op)
                    seq.append(op.node)
                    if st.type in SEND_TYPES:
                        conn_send[g.id, tb.send, tb.chan].append(op.node)
                    if st.type in RECV_TYPES:
                        conn_recv[tb.recv, g.id, tb.chan].append(op.node)
                tb_seq.append(seq)
        return tb_seq, conn_send, conn_recv

    def claim_connection(self, owners: dict, key: tuple, tb: ThreadBlock, tw: str, verb: str, peer: int) -> None:
        """Record that ``tb`` uses connection ``key``; a second thread block on it is refused."""
        if peer < 0:
            return
        if key in owners:
            self.fail(f"{tw} and tb {owners[key]} both {verb} gpu {peer} on channel {tb.chan}; the executor gives "
                      "each (peer, channel) one connection")
        owners[key] = tb.id

    def check_step(self, st: Step, tb: ThreadBlock, where: str) -> None:
        if st.type != "nop" and st.cnt < 1:
            self.fail(f"{where}: cnt={st.cnt} must be >= 1")
        if st.type in SEND_TYPES and tb.send < 0:
            self.fail(f"{where}: a send in a thread block without a send peer (send=-1)")
        if st.type in RECV_TYPES and tb.recv < 0:
            self.fail(f"{where}: a receive in a thread block without a receive peer (recv=-1)")
        if st.hasdep not in (0, 1):
            self.fail(f"{where}: hasdep={st.hasdep} must be 0 or 1")

    def add_waits(self, succ: list[list[int]], tb_seq: list[list[int]]) -> None:
        """Edges from the step a ``depid``/``deps`` wait is released by (the first step of that thread block from
        ``deps`` on that sets ``hasdep``) to the waiting step."""
        ops = self.ops
        by_tb = {(ops[seq[0]].gpu, ops[seq[0]].tb.id): seq for seq in tb_seq if seq}
        tb_ids = [{tb.id for tb in g.tbs} for g in self.gpus]  # ids 0..T-1, peers in range: validate_program
        for op in ops:
            st = op.step
            if st.depid < 0:
                continue
            if st.depid not in tb_ids[op.gpu]:
                self.fail(f"{op.where}: depid={st.depid} is not a thread block of gpu {op.gpu}")
            cand = [u for u in by_tb.get((op.gpu, st.depid), []) if ops[u].k >= st.deps and ops[u].step.hasdep]
            if not cand:
                self.fail(f"{op.where}: waits for tb {st.depid} step {st.deps}, but no step of that thread block from "
                          "there on sets hasdep=1, so the executor would wait forever")
            succ[cand[0]].append(op.node)

    def match_connections(self, conn_send: dict, conn_recv: dict, succ: list[list[int]]) -> list[tuple[int, int]]:
        """Match sends and receives of every connection in order (an edge from each send to its receive); returns
        the (send, receive) op node pairs."""
        ops = self.ops
        pairs = []
        for key in sorted(set(conn_send) | set(conn_recv)):
            ss, rr = conn_send.get(key, []), conn_recv.get(key, [])
            for u, v in zip(ss, rr, strict=False):
                if ops[u].step.cnt != ops[v].step.cnt:
                    self.fail(f"{ops[u].where} sends {ops[u].step.cnt} chunks but the matching receive "
                              f"{ops[v].where} expects {ops[v].step.cnt}")
                succ[u].append(v)
                pairs.append((u, v))
            if len(ss) != len(rr):
                a, b, c = key
                extra = ops[ss[len(rr)]] if len(ss) > len(rr) else ops[rr[len(ss)]]
                self.fail(f"{extra.where} is unmatched: gpu {a} sends {len(ss)} times to gpu {b} on channel {c}, "
                          f"which receives {len(rr)} times")
        return pairs

    # -- semantics ------------------------------------------------------------------------------------------
    def replay(self, pairs) -> Schedule:
        """The IR actions (events) of every step and their chunk accesses, their IR steps, the schedule."""
        self.events: list[list[tuple]] = []  # IR actions: (src rank, dst rank, op, src coordinates, dst coordinates)
        self.accesses: list[tuple] = []      # (rank, coordinates, position, kind, event, op node)
        recv_pair = {v: u for u, v in pairs}
        sent_from = self.sent_from()
        for op in self.ops:
            t = op.step.type
            if t in RECV_TYPES:
                self.receive(op, self.ops[recv_pair[op.node]], sent_from)
            elif t in ("cpy", "re"):
                self.local(op)
        fixed = self.input_copies()
        if self.a2a:
            self.alltoall_moves()
        steps = ir_steps(len(self.events), self.accesses, fixed, reach=self.reach, describe=self.describe,
                         source=self.source)
        return self.schedule(steps)

    def event(self, *actions) -> int:
        self.events.append(list(actions))
        return len(self.events) - 1

    def pos(self, node: int, sub: int) -> int:
        """Position of an access in happens-before order (``sub`` 1: after the step's own receive)."""
        return int(self.topo_index[node]) * 2 + sub

    def sent_from(self) -> dict:
        """Sending op node -> coordinates (on its gpu) its data is read from."""
        sent = {}
        for op in self.ops:
            st = op.step
            if st.type == "s":
                sent[op.node] = self.coord(op, st.srcbuf, st.srcoff, "source")
            elif st.type in ("rcs", "rrcs"):   # forwards what it received (and reduced) into dst
                sent[op.node] = self.coord(op, st.dstbuf, st.dstoff, "destination")
            elif st.type == "rrs":             # forwards received + local without storing it: a temporary
                sent[op.node] = self.temp(op.gpu, st.cnt)
        return sent

    def receive(self, op: _IOp, snd: _IOp, sent_from: dict) -> None:
        """A receive (and its matched send): a copy, or a reduction (after a local copy of its operand to the
        destination where they differ)."""
        st, r, t, acc = op.step, op.gpu, op.step.type, self.accesses
        here = self.pos(op.node, 0)
        a, xs = snd.gpu, sent_from[snd.node]
        sub_read = 1 if snd.step.type != "s" else 0
        if t in ("r", "rcs"):
            yd = self.coord(op, st.dstbuf, st.dstoff, "destination")
            e = self.event((a, r, COPY, xs, yd))
            acc.append((r, yd, here, COPY_WRITE, e, op.node))
        else:
            yo = self.coord(op, st.srcbuf, st.srcoff, "source")
            yd = (self.coord(op, st.dstbuf, st.dstoff, "destination") if t != "rrs" else sent_from[op.node])
            moved = yo != yd
            if not moved.any():
                e = self.event((a, r, REDUCE, xs, yd))
                acc.append((r, yd, here, REDUCE_WRITE, e, op.node))
            else:  # the local operand is copied to the destination first (same IR step)
                e = self.event((r, r, COPY, yo[moved], yd[moved]), (a, r, REDUCE, xs, yd))
                acc.append((r, yo[moved], here, READ, e, op.node))
                acc.append((r, yd[moved], here, COPY_WRITE, e, op.node))
                if not moved.all():
                    acc.append((r, yd[~moved], here, REDUCE_WRITE, e, op.node))
        acc.append((a, xs, self.pos(snd.node, sub_read), READ, e, snd.node))

    def local(self, op: _IOp) -> None:
        """A ``cpy`` or ``re`` step (chunks copied onto themselves under in-place aliasing dropped)."""
        st, r, t = op.step, op.gpu, op.step.type
        ys = self.coord(op, st.srcbuf, st.srcoff, "source")
        yd = self.coord(op, st.dstbuf, st.dstoff, "destination")
        same = ys == yd
        if same.any():
            if t == "re":
                self.fail(f"{op.where}: `re` adds chunks [{st.srcoff}, +{st.cnt}) of {st.srcbuf} into "
                          f"{st.dstbuf} at the same place under the {self.model} model (it would double "
                          "them); try model='outofplace'")
            ys, yd = ys[~same], yd[~same]  # a copy onto itself (i -> o under in-place aliasing)
            if not len(ys):
                return
        if len(np.intersect1d(ys, yd)):
            self.fail(f"{op.where}: source and destination chunks overlap")
        here = self.pos(op.node, 0)
        e = self.event((r, r, COPY if t == "cpy" else REDUCE, ys, yd))
        self.accesses.append((r, ys, here, READ, e, op.node))
        self.accesses.append((r, yd, here, COPY_WRITE if t == "cpy" else REDUCE_WRITE, e, op.node))

    def input_copies(self) -> set:
        """Out of place: the input copy of every rank that reads its input, before everything; returns those
        events (they stay in step 0)."""
        fixed = set()
        if self.model != "outofplace" or not self.in_size:
            return fixed
        top = self.in_base + self.in_size
        uses_input = sorted({r for r, y, *_ in self.accesses if np.any((y >= self.in_base) & (y < top))})
        for r in uses_input:
            lo = r * self.kc if self.coll is Collective.ALLGATHER else 0
            src = np.arange(lo, lo + self.in_size, dtype=np.int64)
            dst = np.arange(self.in_base, top, dtype=np.int64)
            e = self.event((r, r, COPY, src, dst))
            self.accesses.append((r, src, -2, READ, e, START))
            self.accesses.append((r, dst, -1, COPY_WRITE, e, START))
            fixed.add(e)
        return fixed

    def alltoall_moves(self) -> None:
        """After everything: move what o holds into the receive coordinates (module docstring)."""
        end, kc, cd = 2 * len(self.ops), self.kc, self.cd
        for r in range(self.n):
            if self.model == "inplace":
                moves = [(r * cd + j * kc, j * cd + r * kc) for j in range(self.n) if j != r]
            else:
                moves = [] if self.diag_alias[r] else [(self.diag_base, r * cd + r * kc)]
            if not moves:
                continue
            src = np.concatenate([np.arange(x, x + kc, dtype=np.int64) for x, _ in moves])
            dst = np.concatenate([np.arange(y, y + kc, dtype=np.int64) for _, y in moves])
            e = self.event((r, r, COPY, src, dst))
            self.accesses.append((r, src, end, READ, e, END))
            self.accesses.append((r, dst, end + 1, COPY_WRITE, e, END))

    def schedule(self, steps: list[int]) -> Schedule:
        """The schedule of the events in their IR steps (renumbered densely)."""
        total = self.temp_base + max(self.temps, default=0)
        b = ScheduleBuilder(self.coll, self.n, self.nb)
        if self.events:
            uniq = {v: i for i, v in enumerate(sorted(set(steps)))}
            for e, acts in enumerate(self.events):
                for src, dst, op, xs, yd in acts:
                    runs = _runs(xs, yd)
                    x0 = np.array([x for x, _, _ in runs], np.int64)
                    y0 = np.array([y for _, y, _ in runs], np.int64)
                    length = np.array([c for _, _, c in runs], np.int64)
                    b.add_pieces(uniq[steps[e]], src, dst, op, len(runs), x0, x0 + length, y0 - x0)
        p = self.p
        meta = {"algorithm": p.name, "source": self.source, "import_model": self.model,
                "msccl": {"proto": p.proto, "coll": p.coll, "nchannels": p.nchannels,
                          "nchunksperloop": p.nchunksperloop, "inplace": p.inplace, "outofplace": p.outofplace,
                          "minBytes": p.min_bytes, "maxBytes": p.max_bytes}}
        if self.coll.rooted:  # the XML has no root: the rank that never receives (broadcast) or never sends (reduce)
            meta["root"] = self.root(b)
        try:
            return b.build(meta=meta, nscratch=total - self.nb)
        except ScheduleError as exc:
            self.fail(f"the imported schedule is inconsistent: {exc}")

    def root(self, b: ScheduleBuilder) -> int:
        """The root of an imported broadcast or reduce: the one rank that receives (sends) nothing from another."""
        moved = [(s, d) for acts in self.events for s, d, *_ in acts if s != d]
        busy = {d for _, d in moved} if self.coll is Collective.BROADCAST else {s for s, _ in moved}
        free = [r for r in range(self.n) if r not in busy]
        if len(free) != 1:
            what = "receives" if self.coll is Collective.BROADCAST else "sends"
            self.fail(f"a {self.coll.value} has one root, the rank that {what} nothing; ranks {free[:8]} qualify")
        return free[0]

    def describe(self, node: int) -> str:
        if node == END:
            return "the final copy into the output"
        return "the input copy" if node < 0 else self.ops[node].where
