"""The export's steps and the dependencies between them, before they become thread blocks.

A step (:class:`Op`) belongs to a thread block, identified by a key ``(rank, kind, peer, part)`` (kind: ``send``,
``recv`` or ``local``; part: which cut of a long connection, :meth:`OpLog.tb_key`). :meth:`OpLog.emit` gives a
step a dependency on the last writer of every memory slot it reads or writes and on every reader of a slot it
overwrites (read-after-write, write-after-write, write-after-read), except where its own thread block's order or
an earlier wait already implies it (per-thread-block vector clocks). The MSCCL executor runs one wait per step
(``depid``/``deps``, Azure/msccl-executor-nccl ``src/device/msccl_kernel.cu``): :mod:`.assemble` turns the extra
ones into ``nop`` steps.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np


class Op:
    """One step of a thread block: its type, source and destination (buffer letter, chunk index, the rank whose
    buffer it is), chunk count, the ops it waits on (``deps``), its index in its thread block (``order``), its
    position among the thread block's steps once ``nop`` steps are laid out (``pos``) and whether another step
    waits on it (``hasdep``).

    Offsets and ``cnt`` are in chunks; ``id``, ``order`` and ``pos`` are -1 until :meth:`OpLog.emit` and the
    assembly set them.

    Raises:
        Nothing: a plain record.

    Source: the MSCCL executor's execution model (Azure/msccl-executor-nccl ``src/device/msccl_kernel.cu``, one wait per
    step); docs/export.md, "What the export maps".
    """

    __slots__ = ("id", "rank", "tb", "type", "srcbuf", "srcoff", "src_rank", "dstbuf", "dstoff", "dst_rank", "cnt",
                 "deps", "order", "hasdep", "pos")

    def __init__(self, rank, tb, type_, srcbuf, srcoff, src_rank, dstbuf, dstoff, dst_rank, cnt):
        self.rank, self.tb, self.type, self.cnt = rank, tb, type_, cnt
        self.srcbuf, self.srcoff, self.src_rank = srcbuf, srcoff, src_rank
        self.dstbuf, self.dstoff, self.dst_rank = dstbuf, dstoff, dst_rank
        self.deps: list[int] = []
        self.hasdep = 0
        self.id = self.order = self.pos = -1


def connection(rank: int, kind: str, peer: int) -> tuple:
    """The connection a thread block of ``kind`` serves: ``(sender, receiver)``, or ``("local", rank)``.

    Raises:
        Nothing: tuple arithmetic.

    Source: the MSCCL executor's execution model (Azure/msccl-executor-nccl ``src/device/msccl_kernel.cu``, sends and
    receives of one (sender, receiver, channel) connection match in order).

    >>> connection(0, "send", 3), connection(0, "recv", 3), connection(0, "local", -1)
    ((0, 3), (3, 0), ('local', 0))
    """
    return ("local", rank) if kind == "local" else ((rank, peer) if kind == "send" else (peer, rank))


class OpLog:
    """Every op in emission order (``ops``), the op ids of every thread block in order (``tb_ops``), and the
    state that dependencies are computed from.

    Args:
        part_size: connection (:func:`connection`) -> ops per thread block; a connection not named is not cut.

    Raises:
        Nothing: bookkeeping only.

    Source: the MSCCL executor's execution model (Azure/msccl-executor-nccl ``src/device/msccl_kernel.cu``,
    ``depid``/``deps`` waits); docs/export.md, "What the export maps" (dependencies).

    >>> log = OpLog()
    >>> a = Op(0, log.tb_key(0, "local", -1), "cpy", "i", 0, 0, "o", 0, 0, 1)
    >>> b = Op(0, ("another tb",), "cpy", "o", 0, 0, "s", 0, 0, 1)
    >>> log.emit(a, [0], [1]); log.emit(b, [1], [2])
    >>> b.deps
    [0]
    """

    def __init__(self, part_size: dict | None = None) -> None:
        self.part_size = part_size or {}
        self.counters: dict[tuple, int] = defaultdict(int)
        self.ops: list[Op] = []
        self.tb_ops: dict[tuple, list[int]] = defaultdict(list)
        self.last_writer: dict[int, int] = {}
        self.readers: dict[int, dict] = {}
        self.clock: dict[tuple, dict] = {}   # per thread block: vector clock after its last op
        self.op_clock: dict[int, dict] = {}

    def tb_key(self, rank: int, kind: str, peer: int) -> tuple:
        """Thread block of the next op of this kind: a long connection (or local sequence) is cut into parts of
        ``part_size`` ops, each its own thread block (and channel); both ends cut at the same index.

        Returns:
            ``(rank, kind, peer, part)``; each call counts one more op of that connection.

        Raises:
            Nothing: counting.

        Source: docs/export.md, "What the export maps" (thread blocks: long connections cut, ``split=True``); the
        executor's ``MSCCL_MAX_NUM_STEPS`` (:mod:`directcoll.export.msccl.limits`).
        """
        conn = connection(rank, kind, peer)
        counter = (kind,) + conn
        index = self.counters[counter]
        self.counters[counter] = index + 1
        size = self.part_size.get(conn)
        return (rank, kind, peer, index // size if size else 0)

    def emit(self, op: Op, reads, writes) -> None:
        """Append ``op``, which reads memory slots ``reads`` and writes ``writes`` (int keys), with the
        dependencies it needs (module docstring).

        Raises:
            Nothing: bookkeeping (sets ``op.id``, ``op.order`` and ``op.deps``).

        Source: the MSCCL executor's execution model (Azure/msccl-executor-nccl ``src/device/msccl_kernel.cu``,
        ``depid``/``deps``); docs/export.md, "What the export maps" (dependencies).
        """
        reads = reads.tolist() if isinstance(reads, np.ndarray) else list(reads)
        writes = writes.tolist() if isinstance(writes, np.ndarray) else list(writes)
        op.id = len(self.ops)
        self.ops.append(op)
        tb_list = self.tb_ops[op.tb]
        op.order = len(tb_list)
        tb_list.append(op.id)
        wanted = self._conflicts(op, reads, writes)
        self._record(op, reads, writes)
        self._wait(op, wanted)

    def _conflicts(self, op: Op, reads: list, writes: list) -> dict:
        """The latest conflicting op of every other thread block: {thread block: op id}."""
        wanted: dict[tuple, int] = {}

        def want(o: int) -> None:
            t = self.ops[o].tb
            if t != op.tb and wanted.get(t, -1) < o:
                wanted[t] = o

        lw = self.last_writer
        for k in reads:
            w = lw.get(k)
            if w is not None:
                want(w)
        for k in writes:
            w = lw.get(k)
            if w is not None:
                want(w)
            rd = self.readers.get(k)
            if rd:
                for o in rd.values():
                    want(o)
        return wanted

    def _record(self, op: Op, reads: list, writes: list) -> None:
        for k in reads:
            self.readers.setdefault(k, {})[op.tb] = op.id
        for k in writes:
            self.last_writer[k] = op.id
            self.readers[k] = {}

    def _wait(self, op: Op, wanted: dict) -> None:
        """Keep only dependencies not implied by the thread block's order or its earlier waits, latest first."""
        clock = dict(self.clock.get(op.tb, {}))
        for t, o in sorted(wanted.items(), key=lambda kv: -kv[1]):
            if clock.get(t, -1) >= self.ops[o].order:
                continue
            op.deps.append(o)
            for tt, v in self.op_clock[o].items():
                if clock.get(tt, -1) < v:
                    clock[tt] = v
        clock[op.tb] = op.order
        self.clock[op.tb] = clock
        self.op_clock[op.id] = clock
