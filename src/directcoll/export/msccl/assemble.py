"""From the export's ops (:class:`~directcoll.export.msccl.deps.OpLog`) to an MSCCL :class:`Program`.

- *Scratch.* The alternate scratch chunks each rank uses are numbered densely after its other scratch chunks.
- *Channels.* Every (sender, receiver, part) connection gets a channel, filled greedily so that no channel has
  more send or receive thread blocks than the executor allows (``MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL``,
  ``msccl_struct.h``); the parts of one (sender, receiver) pair get distinct channels (one connection per channel).
- *Thread blocks.* Per rank, receive thread blocks first, then send, then local ones, each by peer and part.
- *Steps.* One wait per step (``depid``/``deps``, Azure/msccl-executor-nccl ``src/device/msccl_kernel.cu``): every
  dependency but an op's last is a ``nop`` step before it, and the waited-on steps get ``hasdep=1``. Consecutive
  ``re`` steps the parser would fuse with different counts (:func:`~directcoll.export.msccl.format.fuses_with`)
  are kept apart by a dependency flag.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from directcoll.export.msccl.deps import Op, OpLog
from directcoll.export.msccl.format import COLL_NAMES, Gpu, MscclLimitError, Program, Step, ThreadBlock, fuses_with
from directcoll.export.msccl.layout import BufferLayout
from directcoll.export.msccl.limits import MscclLimits
from directcoll.schedule.ir import Collective

#: Order of a rank's thread blocks by kind.
_KIND_ORDER = {"recv": 0, "send": 1, "local": 2}


def assemble(log: OpLog, layout: BufferLayout, *, name: str, proto: str, min_bytes: int, max_bytes: int,
             limits: MscclLimits) -> tuple[Program, dict]:
    """The program of ``log``'s ops on ``layout``'s buffers (module docstring), and its thread blocks by key.

    Raises:
        MscclLimitError: a connection finds no channel below ``limits.max_channels``.

    Returns:
        (:class:`~directcoll.export.msccl.format.Program`, {thread block key: ThreadBlock}).

    Source: the MSCCL executor's XML format and execution model (Azure/msccl-executor-nccl ``msccl_parser.cc``,
    ``src/device/msccl_kernel.cu``); docs/export.md, "What the export maps"; Zhao et al. (NSDI'25) Sec. 7
    (lowering to MSCCL XML, workload spread across thread blocks).
    """
    n = layout.n
    s_chunks = compact_scratch(log.ops, layout)
    chan = assign_channels(log.tb_ops, limits)
    gpus = [Gpu(r, *layout.buffer_sizes(r), int(s_chunks[r])) for r in range(n)]
    tb_of = _thread_blocks(log.tb_ops, gpus, chan)
    tb_id = {key: tb.id for key, tb in tb_of.items()}
    _lay_out_steps(log, tb_of, tb_id)
    for key, ids in log.tb_ops.items():
        tb = tb_of[key]
        for o in ids:
            op = log.ops[o]
            tb.steps[op.pos].hasdep = op.hasdep
        _separate_fused_re(tb.steps)
    nchannels = max((tb.chan + 1 for g in gpus for tb in g.tbs), default=1)
    # all-to-all: out of place only, like msccl-tools' AllToAll(..., inplace=False) (export mapping)
    inplace = 0 if layout.collective is Collective.ALLTOALL else 1
    program = Program(name=name, coll=COLL_NAMES[layout.collective], ngpus=n, nchunksperloop=layout.nchunks,
                      nchannels=nchannels, proto=proto, inplace=inplace, outofplace=1, min_bytes=min_bytes,
                      max_bytes=max_bytes, gpus=gpus)
    return program, tb_of


def compact_scratch(ops: list[Op], layout: BufferLayout) -> np.ndarray:
    """Number the alternate scratch chunks each rank uses densely (rewriting the ops' offsets); returns
    ``s_chunks`` per rank, int64 (N,).

    Raises:
        Nothing: rewrites offsets of ops the lowering made.

    Source: the MSCCL executor's XML format (``<gpu s_chunks>``, Azure/msccl-executor-nccl ``msccl_parser.cc``);
    Zhao et al. (NSDI'25) Sec. 7 (a scratch buffer for non-contiguous sends).
    """
    n, alt_base = layout.n, layout.alt_base
    used = [set() for _ in range(n)]
    ends = np.zeros(n, np.int64)
    for op in ops:
        for buf, off, r in ((op.srcbuf, op.srcoff, op.src_rank), (op.dstbuf, op.dstoff, op.dst_rank)):
            if buf == "s" and off >= alt_base[r]:
                used[r].update(range(off, off + op.cnt))
    remap = [{v: int(alt_base[r]) + i for i, v in enumerate(sorted(used[r]))} for r in range(n)]
    for op in ops:
        if op.srcbuf == "s" and op.srcoff >= alt_base[op.src_rank]:
            op.srcoff = remap[op.src_rank][op.srcoff]
        if op.dstbuf == "s" and op.dstoff >= alt_base[op.dst_rank]:
            op.dstoff = remap[op.dst_rank][op.dstoff]
        for buf, off, r in ((op.srcbuf, op.srcoff, op.src_rank), (op.dstbuf, op.dstoff, op.dst_rank)):
            if buf == "s":
                ends[r] = max(ends[r], off + op.cnt)
    return ends


def assign_channels(tb_ops: dict, limits: MscclLimits) -> dict:
    """Channel of every (sender, receiver, part) connection (module docstring): {(a, b, part): channel}.

    Raises:
        MscclLimitError: a connection needs a channel beyond ``limits.max_channels``.

    Source: the MSCCL executor's limits (Azure/msccl-executor-nccl: ``MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL``,
    ``msccl_struct.h``; ``MAXCHANNELS``); docs/export.md, "Limits".
    """
    conns = sorted({(t[0], t[2], t[3]) for t in tb_ops if t[1] == "send"})
    per = limits.max_threadblocks_per_channel
    nsend, nrecv = defaultdict(int), defaultdict(int)
    taken = defaultdict(set)
    chan = {}
    for a, b, part in conns:
        c = 0
        while nsend[a, c] >= per or nrecv[b, c] >= per or c in taken[a, b]:
            c += 1
        if c >= limits.max_channels:
            need = max(sum(1 for x, _, _ in conns if x == a), sum(1 for _, y, _ in conns if y == b))
            raise MscclLimitError(f"msccl export: rank {a} -> rank {b} needs channel {c}: ranks {a} and {b} have up "
                                  f"to {need} send or receive thread blocks, at most {per} per channel "
                                  f"(MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL), and the executor has MAXCHANNELS = "
                                  f"{limits.max_channels} channels", limit="MAXCHANNELS", value=c + 1,
                                  allowed=limits.max_channels)
        chan[a, b, part] = c
        taken[a, b].add(c)
        nsend[a, c] += 1
        nrecv[b, c] += 1
    return chan


def _thread_blocks(tb_ops: dict, gpus: list[Gpu], chan: dict) -> dict:
    """Create every GPU's thread blocks, in order (module docstring); returns {key: ThreadBlock}."""
    tb_of = {}
    for key in sorted(tb_ops, key=lambda t: (t[0], _KIND_ORDER[t[1]], t[2], t[3])):
        r, kind, peer, part = key
        g = gpus[r]
        if kind == "send":
            tb = ThreadBlock(len(g.tbs), send=peer, recv=-1, chan=chan[r, peer, part])
        elif kind == "recv":
            tb = ThreadBlock(len(g.tbs), send=-1, recv=peer, chan=chan[peer, r, part])
        else:
            tb = ThreadBlock(len(g.tbs), chan=0)
        g.tbs.append(tb)
        tb_of[key] = tb
    return tb_of


def _lay_out_steps(log: OpLog, tb_of: dict, tb_id: dict) -> None:
    """Every op's step, after a ``nop`` step for each of its dependencies but the last; marks the ops waited on
    (``hasdep``)."""
    ops = log.ops
    for ids in log.tb_ops.values():
        pos = 0
        for o in ids:
            op = ops[o]
            pos += max(0, len(op.deps) - 1)
            op.pos = pos
            pos += 1
    for key, ids in log.tb_ops.items():
        tb = tb_of[key]
        for o in ids:
            op = ops[o]
            deps = [ops[d] for d in op.deps]
            for d in deps[:-1]:
                tb.steps.append(Step(len(tb.steps), "nop", depid=tb_id[d.tb], deps=d.pos))
                d.hasdep = 1
            last = deps[-1] if deps else None
            if last is not None:
                last.hasdep = 1
            tb.steps.append(Step(len(tb.steps), op.type, op.srcbuf, op.srcoff, op.dstbuf, op.dstoff, op.cnt,
                                 tb_id[last.tb] if last else -1, last.pos if last else -1))


def _separate_fused_re(steps: list[Step]) -> None:
    """The parser fuses consecutive ``re`` steps into one destination: a dependency flag on the first keeps two
    of different counts apart."""
    prev = None
    for st in steps:
        if st.type == "re":
            if prev is not None and fuses_with(prev, st) and prev.cnt != st.cnt:
                prev.hasdep = 1
            prev = st
        elif st.type != "nop":
            prev = None
