"""The MSCCL executor's limits (:class:`MscclLimits`, :data:`LIMITS`, :func:`check_limits`), from its sources:

==============================  ======  =========================================================================
limit                           value   source
==============================  ======  =========================================================================
steps per thread block          64      ``MSCCL_MAX_NUM_STEPS ?= 64`` (msccl-executor-nccl ``Makefile``; 256 in
                                        microsoft/msccl ``src/include/msccl.h``); ``s >= MSCCL_MAX_NUM_STEPS``
                                        is rejected by ``msccl_parser.cc``
cnt per step                    71      ``count >= MSCCL_MAX_COUNT`` (72) rejected (``msccl_parser.cc``)
send (recv) thread blocks per   32      ``MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL`` (``msccl_struct.h``)
channel
channels                        32      ``MAXCHANNELS`` (``src/include/device.h``); the communicator must also
                                        have ``nchannels`` channels at run time
thread blocks per GPU           1024    ``MSCCL_MAX_NUM_THREAD_BLOCKS`` = 32 x MAXCHANNELS; they must also be
                                        co-resident (at most the GPU's SM count in practice)
depid                           127     ``dependentBid`` is ``int8_t`` (``msccl_struct.h``)
chunk offsets                   32767   ``srcOffset``/``dstOffset`` are ``int16_t``
XML nodes read per rank         4096    ``MAX_NODES`` (``msccl_parser.h``): algo + gpus + its tbs and steps
children of one element         1024    ``MAX_SUBS`` (``msccl_parser.h``)
attribute value length          255     ``MAX_STR_LEN`` (``msccl_parser.h``; values are not bounds-checked)
==============================  ======  =========================================================================
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, fields

from directcoll.errors import DirectcollError
from directcoll.export.msccl.format import Gpu, MscclLimitError, Program, Step, ThreadBlock, fuses_with


@dataclass(frozen=True)
class MscclLimits:
    """The executor's limits (see the module docstring for the sources).

    Raises:
        MscclLimitError: ``max_count`` above 71 (the executor rejects ``cnt >= MSCCL_MAX_COUNT = 72``).
        DirectcollError: a limit below 1.

    Source: the MSCCL executor's limits (Azure/msccl-executor-nccl ``Makefile``, ``src/include/msccl/msccl_struct.h``,
    ``msccl_parser.h``, ``src/include/device.h``; the table of the module docstring); docs/export.md, "Limits".

    >>> MscclLimits(max_steps=256).max_steps
    256
    """

    max_steps: int = 64                      # MSCCL_MAX_NUM_STEPS (msccl-executor-nccl Makefile default)
    max_count: int = 71                      # cnt < MSCCL_MAX_COUNT = 72
    max_threadblocks_per_channel: int = 32   # MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL (send and recv each)
    max_channels: int = 32                   # MAXCHANNELS
    max_threadblocks: int = 1024             # MSCCL_MAX_NUM_THREAD_BLOCKS
    max_depid: int = 127                     # dependentBid is int8_t
    max_offset: int = 32767                  # srcOffset / dstOffset are int16_t
    max_nodes: int = 4096                    # MAX_NODES of the XML parser
    max_subs: int = 1024                     # MAX_SUBS of the XML parser
    max_str_len: int = 255                   # MAX_STR_LEN of the XML parser

    def __post_init__(self) -> None:
        if self.max_count > 71:
            raise MscclLimitError(f"max_count {self.max_count} is above what the executor accepts: cnt must be "
                                  "below MSCCL_MAX_COUNT = 72", limit="MSCCL_MAX_COUNT", value=self.max_count,
                                  allowed=71)
        for f in fields(self):
            if getattr(self, f.name) < 1:
                raise DirectcollError(f"MSCCL limit {f.name} must be >= 1, got {getattr(self, f.name)}")


#: The executor's defaults.
LIMITS = MscclLimits()


def check_limits(program: Program, limits: MscclLimits = LIMITS) -> None:
    """Check ``program`` against the executor's limits (module docstring) and the rules its parser enforces
    (``msccl_parser.cc``: consecutive ``re`` steps it would fuse must agree on ``cnt``).

    Raises:
        MscclLimitError: the first limit exceeded; the message names the limit, the value and the GPU / thread
            block / step (``limit``, ``value`` and ``allowed`` are attributes).

    Source: the MSCCL executor's limits and parser (Azure/msccl-executor-nccl ``msccl_parser.cc``,
    ``msccl_struct.h``); docs/export.md, "Limits".

    >>> from directcoll.export.msccl.format import Gpu
    >>> check_limits(Program("x" * 300, "allreduce", 1, 1, 1, gpus=[Gpu(0, 1, 1, 0)]))
    Traceback (most recent call last):
    ...
    directcoll.export.msccl.format.MscclLimitError: algo name has 300 characters; the executor's parser holds at \
most MAX_STR_LEN = 255
    """
    L = limits
    if len(program.name) > L.max_str_len:
        raise MscclLimitError(f"algo name has {len(program.name)} characters; the executor's parser holds at most "
                              f"MAX_STR_LEN = {L.max_str_len}", limit="MAX_STR_LEN", value=len(program.name),
                              allowed=L.max_str_len)
    if program.nchannels > L.max_channels:
        raise MscclLimitError(f"the program uses {program.nchannels} channels; the executor allows MAXCHANNELS = "
                              f"{L.max_channels}", limit="MAXCHANNELS", value=program.nchannels,
                              allowed=L.max_channels)
    if len(program.gpus) > L.max_subs:
        raise MscclLimitError(f"{len(program.gpus)} <gpu> elements; the parser reads at most MAX_SUBS = "
                              f"{L.max_subs} children of one element", limit="MAX_SUBS", value=len(program.gpus),
                              allowed=L.max_subs)
    for g in program.gpus:
        _check_gpu(g, len(program.gpus), L)


def _check_gpu(g: Gpu, ngpus: int, L: MscclLimits) -> None:
    """One GPU: its thread blocks, the XML nodes the parser reads for it, its channels' thread blocks."""
    where = f"gpu {g.id}"
    if len(g.tbs) > L.max_threadblocks:
        raise MscclLimitError(f"{where} has {len(g.tbs)} thread blocks; the executor allows "
                              f"MSCCL_MAX_NUM_THREAD_BLOCKS = {L.max_threadblocks}",
                              limit="MSCCL_MAX_NUM_THREAD_BLOCKS", value=len(g.tbs), allowed=L.max_threadblocks)
    if len(g.tbs) > L.max_subs:
        raise MscclLimitError(f"{where} has {len(g.tbs)} thread blocks; the parser reads at most MAX_SUBS = "
                              f"{L.max_subs} children of one element", limit="MAX_SUBS", value=len(g.tbs),
                              allowed=L.max_subs)
    nodes = 1 + ngpus + len(g.tbs) + sum(len(tb.steps) for tb in g.tbs)
    if nodes > L.max_nodes:
        raise MscclLimitError(f"{where}: the parser would read {nodes} XML nodes (algo, gpus, this gpu's thread "
                              f"blocks and steps); it is limited to MAX_NODES = {L.max_nodes}", limit="MAX_NODES",
                              value=nodes, allowed=L.max_nodes)
    sends, recvs = defaultdict(list), defaultdict(list)
    for tb in g.tbs:
        _check_tb(tb, f"{where}, tb {tb.id}", L)
        if tb.send >= 0:
            sends[tb.chan].append(tb.id)
        if tb.recv >= 0:
            recvs[tb.chan].append(tb.id)
    per = L.max_threadblocks_per_channel
    for kind, table in (("send", sends), ("receive", recvs)):
        for chan, tbs in table.items():
            if len(tbs) > per:
                raise MscclLimitError(f"{where}, channel {chan} has {len(tbs)} {kind} thread blocks; the executor "
                                      f"allows MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL = {per}",
                                      limit="MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL", value=len(tbs), allowed=per)


def _check_tb(tb: ThreadBlock, tw: str, L: MscclLimits) -> None:
    """One thread block: its channel, its number of steps, every step, and the ``re`` steps the parser fuses."""
    if tb.chan < 0 or tb.chan >= L.max_channels:
        raise MscclLimitError(f"{tw} uses channel {tb.chan}; channels are 0..MAXCHANNELS-1 = {L.max_channels - 1}",
                              limit="MAXCHANNELS", value=tb.chan + 1, allowed=L.max_channels)
    if len(tb.steps) > L.max_steps:
        raise MscclLimitError(f"{tw} has {len(tb.steps)} steps; the executor allows MSCCL_MAX_NUM_STEPS = "
                              f"{L.max_steps} per thread block (nop steps included)", limit="MSCCL_MAX_NUM_STEPS",
                              value=len(tb.steps), allowed=L.max_steps)
    prev_re = None
    for i, st in enumerate(tb.steps):
        sw = f"{tw}, step {i}"
        _check_step(st, sw, L)
        if st.type == "re":
            if prev_re is not None and fuses_with(prev_re, st) and prev_re.cnt != st.cnt:
                raise MscclLimitError(f"{sw}: the executor fuses it with the previous `re` (same destination, no "
                                      "dependency) and would reduce only the last step's cnt chunks",
                                      limit="MSCCL_MAX_REDUCE_FUSION", value=st.cnt, allowed=prev_re.cnt)
            prev_re = st
        elif st.type != "nop":
            prev_re = None


def _check_step(st: Step, sw: str, L: MscclLimits) -> None:
    """One step: its index, count, dependency and chunk offsets."""
    if st.s >= L.max_steps:
        raise MscclLimitError(f"{sw} has s={st.s}; the executor rejects s >= MSCCL_MAX_NUM_STEPS = {L.max_steps}",
                              limit="MSCCL_MAX_NUM_STEPS", value=st.s + 1, allowed=L.max_steps)
    if st.type != "nop" and st.cnt > L.max_count:
        raise MscclLimitError(f"{sw} has cnt={st.cnt}; the executor requires cnt < MSCCL_MAX_COUNT = "
                              f"{L.max_count + 1}", limit="MSCCL_MAX_COUNT", value=st.cnt, allowed=L.max_count)
    if st.depid > L.max_depid:
        raise MscclLimitError(f"{sw} depends on thread block {st.depid}; dependentBid is an int8_t (at most "
                              f"{L.max_depid})", limit="dependentBid", value=st.depid, allowed=L.max_depid)
    for off in (st.srcoff, st.dstoff):
        last = off + max(st.cnt, 1) - 1
        if last > L.max_offset:
            raise MscclLimitError(f"{sw} addresses chunk {last}; srcOffset/dstOffset are int16_t, so chunk offsets "
                                  f"are at most {L.max_offset} (int16_t offset)", limit="int16_t offset",
                                  value=last, allowed=L.max_offset)
