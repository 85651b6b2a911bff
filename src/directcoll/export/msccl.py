"""MSCCL XML: export a schedule to the NCCL MSCCL executor's algorithm format, and import MSCCL XML back into the IR.

The format is the one the executor's parser reads (Azure/msccl-executor-nccl ``src/misc/msccl/msccl_parser.cc``,
``mscclGetAlgoFromXmlFile``; structures and limits in ``src/include/msccl/msccl_struct.h``) and that
msccl-tools writes (microsoft/msccl-tools ``msccl/language/ir.py``, ``ir_to_xml``)::

    <algo name=.. proto=Simple|LL|LL128 nchannels=.. nchunksperloop=.. ngpus=..
          coll=allreduce|reducescatter|allgather|alltoall inplace=0|1 outofplace=0|1 minBytes=.. maxBytes=..>
      <gpu id=.. i_chunks=.. o_chunks=.. s_chunks=..>
        <tb id=.. send=peer|-1 recv=peer|-1 chan=..>
          <step s=.. type=s|r|rcs|rrs|rrc|rrcs|cpy|re|nop srcbuf=i|o|s srcoff=.. dstbuf=.. dstoff=.. cnt=..
                depid=tb|-1 deps=step|-1 hasdep=0|1/>

Execution model (the executor's kernel, Azure/msccl-executor-nccl ``src/device/msccl_kernel.cu``,
``mscclRunInterpreter``; ROCm/rccl ``src/device/msccl_kernel_impl.h`` is the same interpreter):
every thread block runs its steps in order; a step with ``depid``/``deps`` first waits until thread block
``depid`` of the same GPU has finished its step ``deps`` (a flag that block publishes after each step marked
``hasdep=1``); one step waits on one thread block, so extra dependencies are ``nop`` steps placed before it
(msccl-tools does the same), and ``s``/``deps`` count those ``nop`` steps. A thread block talks to at most one
send peer and one receive peer over the NCCL connection of its channel; sends and receives of one
(sender, receiver, channel) connection match in order. Chunk ``c`` of a buffer is elements
``[c, c+1) * count * m / nchunksperloop``, where ``m`` (``sizeMultiplier``, ``msccl_parser.cc``) is N for
allgather, reducescatter and alltoall (whose ``count`` is per rank, resp. per peer) and 1 for allreduce; ``count``
must be a multiple of ``nchunksperloop`` for the executor to select the algorithm (``msccl_lifecycle.cc``:
``count % nChunksPerLoop == 0``).

**Export mapping** (:func:`to_msccl`, :func:`export_msccl`).

- *Chunks.* A block is ``q`` chunks, ``nchunksperloop = vector_blocks * q`` (``nblocks * q``; all-to-all:
  ``N k q``, one rank's send buffer). ``q`` is the schedule's exact denominator (the least common denominator of
  its piece ends, 1 for block algorithms) unless ``nchunksperloop`` would exceed ``max_chunks``; then
  ``q = max_chunks // vector_blocks`` and every piece end is rounded to the nearest 1/q. The
  deviation (largest distance, in blocks, between an exact end and its rounded one) is returned in the report,
  written into an XML comment and warned about (:class:`MscclRoundingWarning`); a rounded schedule is no longer
  exact, so it may not verify.
- *Buffers* (NCCL's conventions, chunk positions in rank-major order so that they match NCCL's layout):
  ``allreduce``: i = o = the whole vector (block b = chunks ``[b*q, (b+1)*q)``). ``allgather``: o = the whole
  vector with the blocks sorted by (owner, block) -- rank r's blocks, in block order, are o chunks
  ``[r*k, (r+1)*k)`` and its i chunks ``[0, k)``, k = nchunksperloop / N. ``reducescatter``: i = the whole vector
  in the same rank-major order, o = the rank's k owned chunks. Data that is neither input nor output
  (reduce-scatter partial sums of blocks a rank does not own) and the IR's scratch blocks live in scratch ``s``.
  This is a permutation only when the schedule's ``owner`` is not MPI's (Swing's remapped blocks): the exported
  program is then still a correct NCCL collective, whose blocks are NCCL's, not the IR's.
  ``alltoall`` (nblocks = N^2 k, kq = k q chunks per pair; the runtime's ``compile_alltoall`` layout): rank r's
  i (N kq chunks, the sendbuf) holds pair (r, j) at chunks ``[j kq, (j+1) kq)``, its o (N kq chunks, the
  recvbuf) pair (i, r) at ``[i kq, (i+1) kq)``; its own pair (r, r) starts in i and ends in o, copied by a local
  ``cpy`` (as msccl-tools' alltoall programs do) unless the schedule moves it there itself. s holds, one chunk
  each in coordinate order, the cells of other pairs the rank relays, the IR's scratch cells it uses, and any
  write into its own send part (the sendbuf is const). The export declares ``inplace="0" outofplace="1"``, like
  msccl-tools' ``AllToAll(..., inplace=False)``: in place (sendbuff == recvbuff; the executor's fallback, a
  grouped ncclSend/ncclRecv per peer, races there too) the receive of pair (i, r) would overwrite pair (r, i)
  before it is sent.
- *Reads and writes.* A value is read where it currently lives: the input buffer until the first write, then
  where it was last written. Writes go to the value's home (o, or s for a reduce-scatter's non-owned blocks).
  The program (all but alltoall) is valid both in place and out of place (``inplace="1" outofplace="1"``): i and
  o are treated as one memory (NCCL's in-place aliasing: allreduce i = o, allgather i = o[r*k:], reduce-scatter
  o = i[r*k:]), and a step that overwrites a value another send or local copy still reads in the same IR step
  writes it to an alternate scratch chunk instead (renaming), so receives never wait on sends of the same step.
  At the end, output chunks that do not live in their home are copied there (``cpy``), e.g. an allgather's own
  blocks i -> o, an alltoall's own pair i -> o.
- *Thread blocks.* Per rank: one thread block per send peer (``send=peer recv=-1``), one per receive peer
  (``send=-1 recv=peer``), one for local ``cpy``/``re`` steps. Every (sender, receiver) connection gets a
  channel, filled greedily so that no channel has more send or receive thread blocks than the executor allows.
  A connection (or local sequence) with more steps than ``MSCCL_MAX_NUM_STEPS`` is cut into several thread
  blocks, on distinct channels, both ends cutting at the same index (``split=True``).
- *Steps.* Each IR transfer piece becomes runs of chunks contiguous on both ends (at most ``max_count`` each):
  ``s`` at the sender, ``r`` (copy) or ``rrc`` (reduce: received + local value -> destination) at the receiver;
  a local transfer becomes ``cpy`` or ``re`` (preceded by a ``cpy`` when the value must first move to its new
  location). Within an IR step, sends and receives of one connection are ordered by (op, transfer, piece), copies
  before reductions, as the IR's semantics land copies before reductions.
- *Dependencies.* A step depends on the last writer of every chunk it reads or writes and on every reader of a
  chunk it overwrites (read-after-write, write-after-write, write-after-read, on memory, in-place aware), except
  where its own thread block's order or an earlier wait (tracked with per-thread-block vector clocks) implies it.
  All dependencies point to earlier IR steps or, within a step, from receives and local steps to earlier ones, so
  the program is deadlock-free whatever the connection buffer size.

**Import** (:func:`import_msccl`, :func:`program_to_schedule`). Sends and receives are matched per connection in
order (``cnt`` must agree); the happens-before order (thread-block order, ``depid``/``deps``, send before its
receive) is sorted topologically, and the chunk accesses of every rank are replayed in that order. Each matched
pair becomes an IR transfer (copy for ``r``/``rcs``, reduce for ``rrc``/``rrs``/``rrcs``; a local copy in the
same IR step when a reduction's local operand is not its destination), ``cpy``/``re`` local transfers. IR steps
are the smallest ones that keep every read after the write it sees (one step later), every write after the
reads that must not see it (same step or later) and writes in order (a copy then a reduction may share a step),
so the bulk-synchronous IR reproduces the executor's result. Conflicting accesses not ordered by
happens-before are reported as data races. Coordinates: chunk c is block c (nblocks = nchunksperloop, MPI
ownership ``c // k`` for allgather / reduce-scatter); ``s`` chunks are scratch blocks after the data. With
``inplace="1"`` the buffers alias as in NCCL's in-place call; a file that only declares out-of-place gets an
input copy of the vector in scratch, filled by a local copy in step 0. ``alltoall`` (nchunksperloop = N kc):
nblocks = N * nchunksperloop, the export's mapping inverted -- i chunk ``j kc + w`` of rank r is block
``(r N + j) kc + w``, o chunk ``i kc + w`` block ``(i N + r) kc + w``. The rank's own part is one block in i and
o when o's chunks of it are only written by ``cpy`` from the same chunks of i (and i's are never written);
otherwise o's own part gets scratch blocks and a final local copy into the block, so that a program that never
fills it fails verification. In place (``inplace="1"``, msccl-tools' model: o is i) every chunk is its send
block and a final local step moves o's pair (r, i) chunks to block ``(i N + r) kc + w``.

**Limits** (:class:`MscclLimits`, :data:`LIMITS`, :func:`check_limits`), from the executor's sources:

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

import math
import re
import warnings
import xml.etree.ElementTree as ET
from collections import defaultdict, deque
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import numpy as np

from directcoll.errors import DirectcollError, ScheduleError, ScheduleFormatError
from directcoll.resources import check_memory
from directcoll.schedule.ir import COPY, REDUCE, Collective, Schedule, ScheduleBuilder

# -- the format -----------------------------------------------------------------------------------------------

#: IR collective -> the executor's ``coll`` spelling (``msccl_parser.cc``).
COLL_NAMES = {Collective.ALLREDUCE: "allreduce", Collective.REDUCE_SCATTER: "reducescatter",
              Collective.ALLGATHER: "allgather", Collective.ALLTOALL: "alltoall"}
#: Every ``coll`` the executor knows; the importer reads allreduce, reducescatter, allgather and alltoall.
EXECUTOR_COLLECTIVES = ("allreduce", "reducescatter", "allgather", "reduce", "broadcast", "send", "recv",
                        "gather", "scatter", "alltoall", "alltoallv")
PROTOCOLS = ("Simple", "LL", "LL128")
#: Step types (``msccl_struct.h``: MSCCL_SEND .. MSCCL_REDUCE, plus ``nop``).
STEP_TYPES = ("s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop")
BUFFERS = ("i", "o", "s")
_SENDS = frozenset({"s", "rcs", "rrs", "rrcs"})
_RECVS = frozenset({"r", "rcs", "rrs", "rrc", "rrcs"})

ALGO_ATTRS = ("name", "proto", "nchannels", "nchunksperloop", "ngpus", "coll", "inplace", "outofplace",
              "minBytes", "maxBytes")
GPU_ATTRS = ("id", "i_chunks", "o_chunks", "s_chunks")
TB_ATTRS = ("id", "send", "recv", "chan")
STEP_ATTRS = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps", "hasdep")


class MscclFormatError(ScheduleFormatError):
    """An MSCCL XML file is malformed or describes a program the importer cannot read (the message names the
    file and the element)."""


class MscclLimitError(DirectcollError, ValueError):
    """A program exceeds one of the executor's limits.

    Attributes:
        limit: the executor's name for the limit (e.g. ``MSCCL_MAX_NUM_STEPS``).
        value: the offending value.
        allowed: the largest value accepted.
    """

    def __init__(self, message: str, *, limit: str, value: int, allowed: int) -> None:
        super().__init__(message)
        self.limit, self.value, self.allowed = limit, value, allowed


class MscclRoundingWarning(UserWarning):
    """A fractional schedule was rounded to fewer chunks per block than it needs to be exact."""


@dataclass(frozen=True)
class MscclLimits:
    """The executor's limits (see the module docstring for the sources)."""

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


@dataclass
class Step:
    """One ``<step>``; ``s`` is its index in the thread block (nop steps included)."""

    s: int
    type: str
    srcbuf: str = "i"
    srcoff: int = -1
    dstbuf: str = "o"
    dstoff: int = -1
    cnt: int = 0
    depid: int = -1
    deps: int = -1
    hasdep: int = 0


@dataclass
class ThreadBlock:
    """One ``<tb>``: at most one send peer and one receive peer (-1: none), a channel, steps in order."""

    id: int
    send: int = -1
    recv: int = -1
    chan: int = 0
    steps: list[Step] = field(default_factory=list)


@dataclass
class Gpu:
    """One ``<gpu>``: its buffer sizes in chunks and thread blocks."""

    id: int
    i_chunks: int
    o_chunks: int
    s_chunks: int
    tbs: list[ThreadBlock] = field(default_factory=list)


@dataclass
class Program:
    """An MSCCL algorithm: the ``<algo>`` element and everything in it."""

    name: str
    coll: str
    ngpus: int
    nchunksperloop: int
    nchannels: int
    proto: str = "Simple"
    inplace: int = 1
    outofplace: int = 1
    min_bytes: int = 0
    max_bytes: int = 0
    gpus: list[Gpu] = field(default_factory=list)


@dataclass(frozen=True)
class MscclExport:
    """What :func:`to_msccl` produced: the program, its XML text and a report (chunks per block, rounding
    deviation, thread blocks, steps, channels, scratch)."""

    program: Program
    xml: str
    report: dict


# -- XML text -------------------------------------------------------------------------------------------------

def _comment_text(text: str) -> str:
    return re.sub(r"-{2,}", "-", " ".join(str(text).split())).strip("-")


def program_to_xml(program: Program, *, comment: str | None = None) -> str:
    """The XML text of ``program`` in the layout the executor's hand-written parser accepts: double-quoted
    attributes separated by one space, ``<step .../>`` without a space before ``/>``, no XML declaration (the
    parser would reject ``<?xml``), spaces and newlines only. ``comment`` becomes a leading ``<!-- -->``."""
    p = program
    out = []
    if comment:
        out.append(f"<!-- {_comment_text(comment)} -->")
    out.append(f'<algo name="{p.name}" proto="{p.proto}" nchannels="{p.nchannels}" '
               f'nchunksperloop="{p.nchunksperloop}" ngpus="{p.ngpus}" coll="{p.coll}" inplace="{p.inplace}" '
               f'outofplace="{p.outofplace}" minBytes="{p.min_bytes}" maxBytes="{p.max_bytes}">')
    for g in p.gpus:
        out.append(f'  <gpu id="{g.id}" i_chunks="{g.i_chunks}" o_chunks="{g.o_chunks}" s_chunks="{g.s_chunks}">')
        for tb in g.tbs:
            out.append(f'    <tb id="{tb.id}" send="{tb.send}" recv="{tb.recv}" chan="{tb.chan}">')
            for st in tb.steps:
                out.append(f'      <step s="{st.s}" type="{st.type}" srcbuf="{st.srcbuf}" srcoff="{st.srcoff}" '
                           f'dstbuf="{st.dstbuf}" dstoff="{st.dstoff}" cnt="{st.cnt}" depid="{st.depid}" '
                           f'deps="{st.deps}" hasdep="{st.hasdep}"/>')
            out.append("    </tb>")
        out.append("  </gpu>")
    out.append("</algo>")
    return "\n".join(out) + "\n"


#: Largest value of an integer attribute other than ``minBytes``/``maxBytes`` (ids, counts, offsets): 2^31 - 1.
MAX_ATTR = 2**31 - 1
#: Largest ``minBytes``/``maxBytes``.
MAX_BYTES_ATTR = 2**63 - 1
#: Accepted range of every integer attribute, per element (``-1`` means "none" where it is accepted).
INT_ATTRS = {
    "algo": {"ngpus": (1, MAX_ATTR), "nchunksperloop": (1, MAX_ATTR), "nchannels": (1, MAX_ATTR),
             "inplace": (0, 1), "outofplace": (0, 1), "minBytes": (0, MAX_BYTES_ATTR),
             "maxBytes": (0, MAX_BYTES_ATTR)},
    "gpu": {"id": (0, MAX_ATTR), "i_chunks": (0, MAX_ATTR), "o_chunks": (0, MAX_ATTR), "s_chunks": (0, MAX_ATTR)},
    "tb": {"id": (0, MAX_ATTR), "send": (-1, MAX_ATTR), "recv": (-1, MAX_ATTR), "chan": (0, MAX_ATTR)},
    "step": {"s": (0, MAX_ATTR), "srcoff": (-1, MAX_ATTR), "dstoff": (-1, MAX_ATTR), "cnt": (0, MAX_ATTR),
             "depid": (-1, MAX_ATTR), "deps": (-1, MAX_ATTR), "hasdep": (0, 1)},
}
#: Python and ElementTree objects per character of XML text, as bytes: the parsed document's estimated footprint.
XML_BYTES_PER_CHAR = 16
_INTEGER = re.compile(r"-?[0-9]{1,20}")


def _int_attr(elem, name: str, where: str, source: str) -> int:
    """Integer attribute ``name``: ASCII digits with an optional ``-`` and nothing else (no spaces, ``+``, other
    scripts' digits, fractions or exponents), in the range of :data:`INT_ATTRS`."""
    value = elem.get(name)
    lo, hi = INT_ATTRS[elem.tag][name]
    if value is None:
        raise MscclFormatError(f"{source}: {where}: missing attribute {name!r} (an integer in {lo}..{hi})")
    if not _INTEGER.fullmatch(value):
        raise MscclFormatError(f"{source}: {where}: attribute {name}={value!r} is not an integer; accepted: "
                               f"decimal digits, in {lo}..{hi}")
    number = int(value)
    if not lo <= number <= hi:
        raise MscclFormatError(f"{source}: {where}: attribute {name}={value} is out of range; accepted: {lo}..{hi}")
    return number


def _str_attr(elem, name: str, where: str, source: str, accepted=None) -> str:
    value = elem.get(name)
    if value is None:
        raise MscclFormatError(f"{source}: {where}: missing attribute {name!r}"
                               + (f" (one of {', '.join(accepted)})" if accepted else ""))
    if accepted is not None and value not in accepted:
        raise MscclFormatError(f"{source}: {where}: {name}={value!r} is not accepted; accepted: "
                               f"{', '.join(accepted)}")
    return value


def parse_msccl(text: str, *, source: str = "<msccl xml>") -> Program:
    """Parse MSCCL XML text into a :class:`Program` and check it (:func:`validate_program`; see
    :func:`program_to_schedule` for the semantics and :func:`check_limits` for the executor's limits).

    Integer attributes must be decimal ASCII integers in the ranges of :data:`INT_ATTRS`; nothing is cast. Unknown
    elements and attributes are ignored, as the executor's parser ignores them; a document type declaration
    (``<!DOCTYPE``, entities), which the executor's parser does not read, is refused.

    Raises:
        MscclFormatError: not well-formed XML, a root other than ``<algo>``, a missing, non-integer or
            out-of-range attribute, an unknown protocol, buffer or step type, ids or peers that do not name GPUs
            and thread blocks of the file; the message names ``source`` and the element (``gpu 1, tb 2, step 3``).
    """
    if not isinstance(text, str):
        raise MscclFormatError(f"{source}: expected MSCCL XML text, got {type(text).__name__}")
    if "<!DOCTYPE" in text or "<!ENTITY" in text:
        raise MscclFormatError(f"{source}: a document type declaration (<!DOCTYPE>, <!ENTITY>) is not accepted in "
                               "MSCCL XML")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise MscclFormatError(f"{source}: not well-formed XML: {exc}") from None
    if root.tag != "algo":
        raise MscclFormatError(f"{source}: the root element is <{root.tag}>; an MSCCL algorithm is an <algo>")
    where = "<algo>"
    prog = Program(name=_str_attr(root, "name", where, source),
                   coll=_str_attr(root, "coll", where, source, EXECUTOR_COLLECTIVES),
                   ngpus=_int_attr(root, "ngpus", where, source),
                   nchunksperloop=_int_attr(root, "nchunksperloop", where, source),
                   nchannels=_int_attr(root, "nchannels", where, source),
                   proto=_str_attr(root, "proto", where, source, PROTOCOLS),
                   inplace=_int_attr(root, "inplace", where, source),
                   outofplace=_int_attr(root, "outofplace", where, source),
                   min_bytes=_int_attr(root, "minBytes", where, source),
                   max_bytes=_int_attr(root, "maxBytes", where, source))
    for ge in root:
        if ge.tag != "gpu":
            continue  # the executor ignores unknown elements too
        gw = f"<gpu> #{len(prog.gpus)}"
        gid = _int_attr(ge, "id", gw, source)
        gw = f"gpu {gid}"
        gpu = Gpu(gid, _int_attr(ge, "i_chunks", gw, source), _int_attr(ge, "o_chunks", gw, source),
                  _int_attr(ge, "s_chunks", gw, source))
        for te in ge:
            if te.tag != "tb":
                continue
            tw = f"{gw}, <tb> #{len(gpu.tbs)}"
            tid = _int_attr(te, "id", tw, source)
            tw = f"{gw}, tb {tid}"
            tb = ThreadBlock(tid, _int_attr(te, "send", tw, source), _int_attr(te, "recv", tw, source),
                             _int_attr(te, "chan", tw, source))
            for se in te:
                if se.tag != "step":
                    continue
                sw = f"{tw}, step #{len(tb.steps)}"
                tb.steps.append(Step(_int_attr(se, "s", sw, source),
                                     _str_attr(se, "type", sw, source, STEP_TYPES),
                                     _str_attr(se, "srcbuf", sw, source, BUFFERS),
                                     _int_attr(se, "srcoff", sw, source),
                                     _str_attr(se, "dstbuf", sw, source, BUFFERS),
                                     _int_attr(se, "dstoff", sw, source),
                                     _int_attr(se, "cnt", sw, source), _int_attr(se, "depid", sw, source),
                                     _int_attr(se, "deps", sw, source), _int_attr(se, "hasdep", sw, source)))
            gpu.tbs.append(tb)
        prog.gpus.append(gpu)
    validate_program(prog, source=source)
    return prog


def _check_field(obj, name: str, attr: str, element: str, where: str, source: str) -> None:
    value = getattr(obj, name)
    lo, hi = INT_ATTRS[element][attr]
    if type(value) is not int:
        raise MscclFormatError(f"{source}: {where}: {attr}={value!r} is not an integer; accepted: {lo}..{hi}")
    if not lo <= value <= hi:
        raise MscclFormatError(f"{source}: {where}: {attr}={value} is out of range; accepted: {lo}..{hi}")


def validate_program(program: Program, *, source: str = "<msccl>") -> None:
    """Check every field of ``program`` (parsed by :func:`parse_msccl` or built in Python) for its type and range,
    and that its ids and peers name GPUs and thread blocks that exist: ``ngpus`` GPUs with ids 0..ngpus-1, each
    GPU's thread blocks with ids 0..T-1, ``send``/``recv`` other GPUs or -1. Allocates nothing that grows with a
    field's value, so it is safe on any input; :func:`program_to_schedule` calls it first.

    Raises:
        MscclFormatError: the first field of the wrong type or out of range, or a reference to nothing; the
            message names ``source``, the element and the accepted values.
    """
    if not isinstance(program, Program):
        raise MscclFormatError(f"{source}: expected an MSCCL Program, got {type(program).__name__}")
    p = program
    for name, accepted in (("name", None), ("coll", EXECUTOR_COLLECTIVES), ("proto", PROTOCOLS)):
        value = getattr(p, name)
        if type(value) is not str or (accepted is not None and value not in accepted):
            raise MscclFormatError(f"{source}: <algo> {name}={value!r} is not accepted; accepted: "
                                   + (", ".join(accepted) if accepted else "a string"))
    for name, attr in (("ngpus", "ngpus"), ("nchunksperloop", "nchunksperloop"), ("nchannels", "nchannels"),
                       ("inplace", "inplace"), ("outofplace", "outofplace"), ("min_bytes", "minBytes"),
                       ("max_bytes", "maxBytes")):
        _check_field(p, name, attr, "algo", "<algo>", source)
    n = p.ngpus
    if not isinstance(p.gpus, list) or not all(isinstance(g, Gpu) for g in p.gpus):
        raise MscclFormatError(f"{source}: <algo> gpus must be a list of Gpu")
    for i, g in enumerate(p.gpus):
        _check_field(g, "id", "id", "gpu", f"<gpu> #{i}", source)
    ids = sorted(g.id for g in p.gpus)
    if len(ids) != n or ids != list(range(n)):  # the length first: no list of ngpus entries for a huge ngpus
        raise MscclFormatError(f"{source}: <algo> ngpus={n} but the <gpu> ids are {ids[:12]}"
                               f"{' ...' if len(ids) > 12 else ''}; expected each of 0..{n - 1} once")
    for g in p.gpus:
        gw = f"gpu {g.id}"
        for name in ("i_chunks", "o_chunks", "s_chunks"):
            _check_field(g, name, name, "gpu", gw, source)
        if not isinstance(g.tbs, list) or not all(isinstance(tb, ThreadBlock) for tb in g.tbs):
            raise MscclFormatError(f"{source}: {gw}: tbs must be a list of ThreadBlock")
        for i, tb in enumerate(g.tbs):
            _check_field(tb, "id", "id", "tb", f"{gw}, <tb> #{i}", source)
            tw = f"{gw}, tb {tb.id}"
            for name in ("send", "recv", "chan"):
                _check_field(tb, name, name, "tb", tw, source)
            if tb.send == g.id or tb.recv == g.id or tb.send >= n or tb.recv >= n:
                raise MscclFormatError(f"{source}: {tw}: send={tb.send} recv={tb.recv} must be other GPUs "
                                       f"0..{n - 1} or -1")
            if not isinstance(tb.steps, list) or not all(isinstance(st, Step) for st in tb.steps):
                raise MscclFormatError(f"{source}: {tw}: steps must be a list of Step")
            for j, st in enumerate(tb.steps):
                sw = f"{tw}, step #{j}"
                for name, accepted in (("type", STEP_TYPES), ("srcbuf", BUFFERS), ("dstbuf", BUFFERS)):
                    value = getattr(st, name)
                    if type(value) is not str or value not in accepted:
                        raise MscclFormatError(f"{source}: {sw}: {name}={value!r} is not accepted; accepted: "
                                               f"{', '.join(accepted)}")
                for name in ("s", "srcoff", "dstoff", "cnt", "depid", "deps", "hasdep"):
                    _check_field(st, name, name, "step", sw, source)
        tids = sorted(tb.id for tb in g.tbs)
        if tids != list(range(len(tids))):
            dup = next((a for a, b in zip(tids, tids[1:], strict=False) if a == b), None)
            if dup is not None:
                raise MscclFormatError(f"{source}: {gw}: duplicate thread block id {dup}")
            missing = min(set(range(len(tids))) - set(tids))
            raise MscclFormatError(f"{source}: {gw}: thread block {missing} is missing (ids must be "
                                   f"0..{len(tids) - 1})")


# -- limits ---------------------------------------------------------------------------------------------------

def _limit(message: str, limit: str, value: int, allowed: int) -> MscclLimitError:
    return MscclLimitError(message, limit=limit, value=value, allowed=allowed)


def check_limits(program: Program, limits: MscclLimits = LIMITS) -> None:
    """Check ``program`` against the executor's limits and the rules its parser enforces.

    Raises:
        MscclLimitError: the first limit exceeded; the message names the limit, the value and the GPU / thread
            block / step (``limit``, ``value`` and ``allowed`` are attributes).
    """
    L = limits
    if len(program.name) > L.max_str_len:
        raise _limit(f"algo name has {len(program.name)} characters; the executor's parser holds at most "
                     f"MAX_STR_LEN = {L.max_str_len}", "MAX_STR_LEN", len(program.name), L.max_str_len)
    if program.nchannels > L.max_channels:
        raise _limit(f"the program uses {program.nchannels} channels; the executor allows MAXCHANNELS = "
                     f"{L.max_channels}", "MAXCHANNELS", program.nchannels, L.max_channels)
    if len(program.gpus) > L.max_subs:
        raise _limit(f"{len(program.gpus)} <gpu> elements; the parser reads at most MAX_SUBS = {L.max_subs} "
                     "children of one element", "MAX_SUBS", len(program.gpus), L.max_subs)
    for g in program.gpus:
        where = f"gpu {g.id}"
        if len(g.tbs) > L.max_threadblocks:
            raise _limit(f"{where} has {len(g.tbs)} thread blocks; the executor allows MSCCL_MAX_NUM_THREAD_BLOCKS"
                         f" = {L.max_threadblocks}", "MSCCL_MAX_NUM_THREAD_BLOCKS", len(g.tbs), L.max_threadblocks)
        if len(g.tbs) > L.max_subs:
            raise _limit(f"{where} has {len(g.tbs)} thread blocks; the parser reads at most MAX_SUBS = "
                         f"{L.max_subs} children of one element", "MAX_SUBS", len(g.tbs), L.max_subs)
        nodes = 1 + len(program.gpus) + len(g.tbs) + sum(len(tb.steps) for tb in g.tbs)
        if nodes > L.max_nodes:
            raise _limit(f"{where}: the parser would read {nodes} XML nodes (algo, gpus, this gpu's thread blocks "
                         f"and steps); it is limited to MAX_NODES = {L.max_nodes}", "MAX_NODES", nodes, L.max_nodes)
        sends, recvs = defaultdict(list), defaultdict(list)
        for tb in g.tbs:
            tw = f"{where}, tb {tb.id}"
            if tb.chan < 0 or tb.chan >= L.max_channels:
                raise _limit(f"{tw} uses channel {tb.chan}; channels are 0..MAXCHANNELS-1 = {L.max_channels - 1}",
                             "MAXCHANNELS", tb.chan + 1, L.max_channels)
            if tb.send >= 0:
                sends[tb.chan].append(tb.id)
            if tb.recv >= 0:
                recvs[tb.chan].append(tb.id)
            if len(tb.steps) > L.max_steps:
                raise _limit(f"{tw} has {len(tb.steps)} steps; the executor allows MSCCL_MAX_NUM_STEPS = "
                             f"{L.max_steps} per thread block (nop steps included)", "MSCCL_MAX_NUM_STEPS",
                             len(tb.steps), L.max_steps)
            prev_re = None
            for i, st in enumerate(tb.steps):
                sw = f"{tw}, step {i}"
                if st.s >= L.max_steps:
                    raise _limit(f"{sw} has s={st.s}; the executor rejects s >= MSCCL_MAX_NUM_STEPS = "
                                 f"{L.max_steps}", "MSCCL_MAX_NUM_STEPS", st.s + 1, L.max_steps)
                if st.type != "nop" and st.cnt > L.max_count:
                    raise _limit(f"{sw} has cnt={st.cnt}; the executor requires cnt < MSCCL_MAX_COUNT = "
                                 f"{L.max_count + 1}", "MSCCL_MAX_COUNT", st.cnt, L.max_count)
                if st.depid > L.max_depid:
                    raise _limit(f"{sw} depends on thread block {st.depid}; dependentBid is an int8_t (at most "
                                 f"{L.max_depid})", "dependentBid", st.depid, L.max_depid)
                for off in (st.srcoff, st.dstoff):
                    last = off + max(st.cnt, 1) - 1
                    if last > L.max_offset:
                        raise _limit(f"{sw} addresses chunk {last}; srcOffset/dstOffset are int16_t, so chunk offsets "
                                     f"are at most {L.max_offset} (int16_t offset)", "int16_t offset", last,
                                     L.max_offset)
                # the parser fuses consecutive `re` steps into one dst with no dependency: counts must agree
                if st.type == "re":
                    if (prev_re is not None and st.depid < 0 and (prev_re.dstbuf, prev_re.dstoff, prev_re.srcbuf)
                            == (st.dstbuf, st.dstoff, st.srcbuf) and prev_re.cnt != st.cnt and not prev_re.hasdep):
                        raise _limit(f"{sw}: the executor fuses it with the previous `re` (same destination, no "
                                     "dependency) and would reduce only the last step's cnt chunks",
                                     "MSCCL_MAX_REDUCE_FUSION", st.cnt, prev_re.cnt)
                    prev_re = st
                elif st.type != "nop":
                    prev_re = None
        for kind, table in (("send", sends), ("receive", recvs)):
            for chan, tbs in table.items():
                if len(tbs) > L.max_threadblocks_per_channel:
                    raise _limit(f"{where}, channel {chan} has {len(tbs)} {kind} thread blocks; the executor allows "
                                 f"MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL = {L.max_threadblocks_per_channel}",
                                 "MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL", len(tbs), L.max_threadblocks_per_channel)


# -- export ---------------------------------------------------------------------------------------------------

_I, _O, _S = 0, 1, 2           # buffer codes
_BUF = "ios"
_INIT, _HOME, _ALT = 0, 1, 2    # where a value lives: input/initial location, home, alternate scratch chunk


def _chunked(s: Schedule, max_chunks: int) -> tuple[Schedule, dict]:
    """The schedule in chunk units (denominator q = chunks per block) and the rounding report."""
    den = s.denominator
    g = den
    for arr in (s.piece_start, s.piece_stop, s.piece_shift):
        if arr is not None and len(arr):
            g = math.gcd(g, int(np.gcd.reduce(np.abs(arr))))
    exact = den // g
    cap = max(1, max_chunks // s.vector_blocks)  # nchunksperloop = vector_blocks * q (all-to-all: N k q)
    q = exact if exact <= cap else cap
    report = {"chunks_per_block": q, "exact_chunks_per_block": exact, "rounded": q != exact,
              "max_deviation_blocks": 0.0}
    if den == 1:
        return s, report
    start, stop, shift = s.piece_start, s.piece_stop, s.shift
    if q == exact:
        f = den // q
        new = (start // f, stop // f, shift // f)
    else:
        def rnd(x):
            return (2 * x * q + den) // (2 * den)
        a, b, land = rnd(start), rnd(stop), rnd(start + shift)
        dev = max(float(np.max(np.abs(a / q - start / den), initial=0)),
                  float(np.max(np.abs(b / q - stop / den), initial=0)),
                  float(np.max(np.abs(land / q - (start + shift) / den), initial=0)))
        report["max_deviation_blocks"] = dev
        new = (a, b, land - a)
    a, b, sh = new
    keep = b > a
    counts = np.bincount(s.piece_transfer[keep], minlength=s.num_transfers)
    alive = counts > 0
    offsets = np.concatenate([[0], np.cumsum(counts[alive])])
    try:
        scaled = Schedule(s.collective, s.nranks, s.nblocks, s.step[alive], s.src[alive], s.dst[alive], s.op[alive],
                          offsets, a[keep], b[keep], q, s.owner, s.nscratch,
                          sh[keep] if s.piece_shift is not None else None, meta=dict(s.meta))
    except ScheduleError as exc:
        raise DirectcollError(f"msccl export: rounding the schedule to {q} chunks per block (max_chunks="
                              f"{max_chunks}) breaks it ({exc}); raise max_chunks to at least "
                              f"{s.vector_blocks * exact}") from None
    return scaled, report


class _Op:
    __slots__ = ("id", "rank", "tb", "type", "srcbuf", "srcoff", "src_rank", "dstbuf", "dstoff", "dst_rank", "cnt",
                 "deps", "order", "hasdep", "pos")

    def __init__(self, rank, tb, type_, srcbuf, srcoff, src_rank, dstbuf, dstoff, dst_rank, cnt):
        self.rank, self.tb, self.type, self.cnt = rank, tb, type_, cnt
        self.srcbuf, self.srcoff, self.src_rank = srcbuf, srcoff, src_rank
        self.dstbuf, self.dstoff, self.dst_rank = dstbuf, dstoff, dst_rank
        self.deps: list[int] = []
        self.hasdep = 0
        self.id = self.order = self.pos = -1


class _Exporter:
    """Builds the thread blocks of every rank from a chunked schedule (module docstring, "Export mapping")."""

    def __init__(self, s: Schedule, q: int, max_count: int, part_size: dict | None = None) -> None:
        self.s, self.q, self.max_count = s, q, max_count
        self.part_size = part_size or {}     # connection (a, b) or ("local", r) -> ops per thread block
        self.counters: dict[tuple, int] = defaultdict(int)
        n = s.nranks
        self.n = n
        self.cd = cd = s.nblocks * q          # chunk cells of the data coordinate
        self.C = C = (s.nblocks + s.nscratch) * q
        self.nchunks = cd                     # nchunksperloop
        coll = s.collective
        x = np.arange(C, dtype=np.int64)
        self.init_buf = np.full((n, C), _S, np.int8)
        self.init_idx = np.zeros((n, C), np.int64)
        self.home_buf = np.full((n, C), _S, np.int8)
        self.home_idx = np.zeros((n, C), np.int64)
        self.alias = np.ones((n, C), bool)
        s_base = np.zeros(n, np.int64)
        self.output = np.zeros((n, C), bool)
        if coll is Collective.ALLTOALL:
            self.alltoall_layout(x)
        elif coll is Collective.ALLREDUCE:
            self.kc = cd
            self.init_buf[:, :cd], self.init_idx[:, :cd] = _I, x[:cd]
            self.home_buf[:, :cd], self.home_idx[:, :cd] = _O, x[:cd]
            self.output[:, :cd] = True
        else:
            owner = s.owner
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
            self.kc = kc = cd // n
            for r in range(n):
                own = cell_owner == r
                if coll is Collective.ALLGATHER:
                    self.init_buf[r, :cd] = np.where(own, _I, _O)
                    self.init_idx[r, :cd] = np.where(own, pos - r * kc, pos)
                    self.home_buf[r, :cd], self.home_idx[r, :cd] = _O, pos
                    self.output[r, :cd] = True
                else:
                    self.init_buf[r, :cd], self.init_idx[r, :cd] = _I, pos
                    self.home_buf[r, :cd] = np.where(own, _O, _S)
                    self.home_idx[r, :cd] = np.where(own, pos - r * kc, np.cumsum(~own) - 1)
                    self.alias[r, :cd] = own
                    self.output[r, :cd] = own
                    s_base[r] = cd - kc
        if coll is not Collective.ALLTOALL:
            self.init_idx[:, cd:] = self.home_idx[:, cd:] = s_base[:, None] + (x[cd:] - cd)[None, :]
            self.alt_base = s_base + (C - cd)
        self.loc = np.zeros((n, C), np.int8)
        self.read_now = np.zeros((n, C), bool)
        self.target = np.full((n, C), -1, np.int8)
        self.ops: list[_Op] = []
        self.tb_ops: dict[tuple, list[int]] = defaultdict(list)
        self.last_writer: dict[int, int] = {}
        self.readers: dict[int, dict] = {}
        self.clock: dict[tuple, dict] = {}   # per thread block: vector clock after its last op
        self._op_clock: dict[int, dict] = {}

    def alltoall_layout(self, x: np.ndarray) -> None:
        """All-to-all buffers (module docstring): rank r's ``i`` is its send part (pair (r, j), chunk ``j kq + w``),
        its ``o`` the receive part (pair (i, r), chunk ``i kq + w``), kq chunks per pair; its own pair (r, r) starts
        in ``i`` and ends in ``o``. Everything else the rank touches (relayed pairs, the IR's scratch, and the
        rare write into its own send part, which must not go to the const input) lives in ``s``, one chunk per
        touched cell, in coordinate order; alternate chunks follow them."""
        n, cd, C = self.n, self.cd, self.C
        kq = cd // (n * n)
        self.kc = self.nchunks = n * kq
        read, written = self.touched()
        pair, w = np.divmod(x[:cd], kq)
        src, dst = np.divmod(pair, n)
        self.alt_base = np.zeros(n, np.int64)
        for r in range(n):
            send = src == r
            diag = send & (dst == r)
            recv = (dst == r) & ~send
            tail = np.ones(C - cd, bool)
            relay = np.concatenate([~(send | recv), tail])      # other ranks' pairs and the IR's scratch
            sent = np.concatenate([send & ~diag, ~tail])         # needs a slot only where it is written
            in_s = (relay & (read[r] | written[r])) | (sent & written[r])
            slot = np.cumsum(in_s) - 1
            self.init_buf[r, :cd] = np.where(send, _I, np.where(recv, _O, _S))
            self.init_idx[r, :cd] = np.where(send, dst * kq + w, np.where(recv, src * kq + w, slot[:cd]))
            self.home_buf[r, :cd] = np.where(diag | recv, _O, _S)
            self.home_idx[r, :cd] = np.where(diag, r * kq + w, np.where(recv, src * kq + w, slot[:cd]))
            self.init_idx[r, cd:] = self.home_idx[r, cd:] = slot[cd:]
            self.alias[r, :cd] = ~send       # a send cell starts in i (const) and lives in o or s
            self.output[r, :cd] = diag | recv
            self.alt_base[r] = int(in_s.sum())

    def touched(self) -> tuple[np.ndarray, np.ndarray]:
        """Which cells every rank reads, and which it writes: two bool (N, C)."""
        s, n, C = self.s, self.n, self.C
        pt = s.piece_transfer
        out = []
        for ranks, a, b in ((s.src[pt], s.piece_start, s.piece_stop),
                            (s.dst[pt], s.piece_start + s.shift, s.piece_stop + s.shift)):
            diff = np.zeros((n, C + 1), np.int64)
            np.add.at(diff, (ranks, a), 1)
            np.add.at(diff, (ranks, b), -1)
            out.append(np.cumsum(diff, axis=1)[:, :C] > 0)
        return out[0], out[1]

    # -- locations ------------------------------------------------------------------------------------------
    def where(self, r: int, xs: np.ndarray, code: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        buf = np.where(code == _INIT, self.init_buf[r, xs], np.where(code == _HOME, self.home_buf[r, xs], _S))
        idx = np.where(code == _INIT, self.init_idx[r, xs],
                       np.where(code == _HOME, self.home_idx[r, xs], self.alt_base[r] + xs))
        return buf.astype(np.int8), idx

    def canon(self, r: int, xs: np.ndarray, code: np.ndarray) -> np.ndarray:
        """Memory slot of a location: the input aliases the home where NCCL's in-place call makes them one."""
        return np.where((code == _INIT) & self.alias[r, xs], _HOME, code)

    def keys(self, r: int, xs: np.ndarray, code: np.ndarray) -> np.ndarray:
        return (r * self.C + xs) * 3 + self.canon(r, xs, code)

    # -- ops and dependencies -------------------------------------------------------------------------------
    def tb_key(self, rank: int, kind: str, peer: int) -> tuple:
        """Thread block of the next op of this kind: a long connection (or local sequence) is cut into parts of
        ``part_size`` ops, each its own thread block (and channel); both ends cut at the same index."""
        conn = ("local", rank) if kind == "local" else ((rank, peer) if kind == "send" else (peer, rank))
        counter = (kind,) + conn
        index = self.counters[counter]
        self.counters[counter] = index + 1
        size = self.part_size.get(conn)
        return (rank, kind, peer, index // size if size else 0)

    def emit(self, op: _Op, reads, writes) -> None:
        reads = reads.tolist() if isinstance(reads, np.ndarray) else list(reads)
        writes = writes.tolist() if isinstance(writes, np.ndarray) else list(writes)
        op.id = len(self.ops)
        self.ops.append(op)
        tb_list = self.tb_ops[op.tb]
        op.order = len(tb_list)
        tb_list.append(op.id)
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
        for k in reads:
            self.readers.setdefault(k, {})[op.tb] = op.id
        for k in writes:
            lw[k] = op.id
            self.readers[k] = {}
        # keep only dependencies not implied by this thread block's order or its earlier waits
        clock = dict(self.clock.get(op.tb, {}))
        for t, o in sorted(wanted.items(), key=lambda kv: -kv[1]):
            if clock.get(t, -1) >= self.ops[o].order:
                continue
            op.deps.append(o)
            for tt, v in self.clock_of(o).items():
                if clock.get(tt, -1) < v:
                    clock[tt] = v
        clock[op.tb] = op.order
        self.clock[op.tb] = clock
        self._op_clock[op.id] = clock

    def clock_of(self, o: int) -> dict:
        return self._op_clock[o]

    def runs(self, cols: list[np.ndarray]) -> list[tuple[int, int]]:
        """Split cells into runs contiguous in every (buffer, index) column pair, at most max_count long."""
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

    # -- the schedule ---------------------------------------------------------------------------------------
    def run(self) -> None:
        s = self.s
        bounds = s.step_bounds
        for t in range(s.num_steps):
            self.step(range(bounds[t], bounds[t + 1]))
        self.finish()

    def step(self, transfers: range) -> None:
        s = self.s
        items = []
        for i in transfers:
            for p in range(s.piece_offsets[i], s.piece_offsets[i + 1]):
                xs = np.arange(s.piece_start[p], s.piece_stop[p], dtype=np.int64)
                items.append((int(s.op[i]), i, p, int(s.src[i]), int(s.dst[i]), xs, xs + s.shift[p]))
        items.sort(key=lambda it: (it[0], it[1], it[2]))
        # reads see the state at the end of the previous step
        src = []
        touched = []
        for _, _, _, a, _, xs, _ in items:
            code = self.loc[a, xs].copy()
            buf, idx = self.where(a, xs, code)
            src.append((buf, idx, self.keys(a, xs, code)))
            self.read_now[a, xs] = True
            touched.append((a, xs))
        # writes: copies first, then reductions (items are sorted so); a value read in this step is written
        # to the other of its two memories
        dst, opd = [], []
        for op, _, _, _, b, _, ys in items:
            cur = self.loc[b, ys].copy()
            undecided = self.target[b, ys] < 0
            clash = self.read_now[b, ys] & (self.canon(b, ys, cur) == _HOME)
            choice = np.where(clash, _ALT, _HOME).astype(np.int8)
            self.target[b, ys[undecided]] = choice[undecided]
            code = self.target[b, ys].copy()
            buf, idx = self.where(b, ys, code)
            dst.append((buf, idx, self.keys(b, ys, code)))
            if op == REDUCE:
                obuf, oidx = self.where(b, ys, cur)
                opd.append((obuf, oidx, self.keys(b, ys, cur)))
            else:
                opd.append(None)
            self.loc[b, ys] = code
            touched.append((b, ys))
        for r, xs in touched:
            self.read_now[r, xs] = False
            self.target[r, xs] = -1
        # split into runs, then emit sends (slot P) before receives and local steps (slots B, C)
        planned = []
        for k, (op, _, _, a, b, _, _) in enumerate(items):
            sb, si, sk = src[k]
            db, di, dk = dst[k]
            cols = [sb, si, db, di]
            if op == REDUCE:
                ob, oi, ok = opd[k]
                cols += [ob, oi]
                if a == b:  # `re` adds in place: a value not at its target location must be copied there first
                    pre = ((ob != db) | (oi != di)).astype(np.int8)
                    cols += [pre, np.arange(len(pre))]  # runs do not mix steps with and without the copy
            planned.append((k, self.runs(cols)))
        for k, runs in planned:
            op, _, _, a, b, _, _ = items[k]
            if a == b:
                continue
            sb, si, sk = src[k]
            db, di, _ = dst[k]
            for u, v in runs:  # the receiver's location rides along in dstbuf/dstoff, as msccl-tools writes it
                self.put(a, "send", b, "s", (sb[u], si[u], a), (db[u], di[u], b), v - u, sk[u:v], ())
        for k, runs in planned:
            op, _, _, a, b, _, _ = items[k]
            sb, si, sk = src[k]
            db, di, dk = dst[k]
            for u, v in runs:
                cnt, here = v - u, (db[u], di[u], b)
                if a != b and op == COPY:
                    self.put(b, "recv", a, "r", (sb[u], si[u], a), here, cnt, (), dk[u:v])
                elif a != b:
                    ob, oi, ok = opd[k]
                    self.put(b, "recv", a, "rrc", (ob[u], oi[u], b), here, cnt, ok[u:v], dk[u:v])
                elif op == COPY:
                    self.put(a, "local", -1, "cpy", (sb[u], si[u], a), here, cnt, sk[u:v], dk[u:v])
                else:
                    ob, oi, ok = opd[k]
                    if ob[u] != db[u] or oi[u] != di[u]:  # `re` adds in place: move the value to its target first
                        self.put(a, "local", -1, "cpy", (ob[u], oi[u], a), here, cnt, ok[u:v], dk[u:v])
                    self.put(a, "local", -1, "re", (sb[u], si[u], a), here, cnt, np.concatenate([sk[u:v], dk[u:v]]),
                             dk[u:v])

    def put(self, rank: int, kind: str, peer: int, type_: str, src: tuple, dst: tuple, cnt: int, reads, writes):
        """Emit one step of ``rank`` (thread block by ``kind``/``peer``); src/dst are (buffer, index, owner rank)."""
        op = _Op(rank, self.tb_key(rank, kind, peer), type_, _BUF[src[0]], int(src[1]), src[2], _BUF[dst[0]],
                 int(dst[1]), dst[2], cnt)
        self.emit(op, reads, writes)

    def finish(self) -> None:
        """Copy output chunks that do not live in their home there (e.g. an allgather's own blocks i -> o, an
        all-to-all's own part i -> o)."""
        for r in range(self.n):
            xs = np.flatnonzero(self.output[r] & (self.loc[r] != _HOME))
            sb, si = self.where(r, xs, self.loc[r, xs])
            db, di = self.where(r, xs, np.full(len(xs), _HOME, np.int8))
            xs = xs[(sb != db) | (si != di)]  # an all-to-all's receive cell starts where it ends: nothing to copy
            if not len(xs):
                continue
            code = self.loc[r, xs].copy()
            sb, si = self.where(r, xs, code)
            home = np.full(len(xs), _HOME, np.int8)
            db, di = self.where(r, xs, home)
            sk, dk = self.keys(r, xs, code), self.keys(r, xs, home)
            for u, v in self.runs([sb, si, db, di, np.zeros(len(xs), np.int8), xs]):
                self.put(r, "local", -1, "cpy", (sb[u], si[u], r), (db[u], di[u], r), v - u, sk[u:v], dk[u:v])
            self.loc[r, xs] = _HOME

    # -- assembly -------------------------------------------------------------------------------------------
    def compact_scratch(self) -> np.ndarray:
        """Number the alternate scratch chunks each rank uses densely; returns s_chunks per rank."""
        used = [set() for _ in range(self.n)]
        ends = np.zeros(self.n, np.int64)
        for op in self.ops:
            for buf, off, r in ((op.srcbuf, op.srcoff, op.src_rank), (op.dstbuf, op.dstoff, op.dst_rank)):
                if buf == "s" and off >= self.alt_base[r]:
                    used[r].update(range(off, off + op.cnt))
        remap = []
        for r in range(self.n):
            m = {v: int(self.alt_base[r]) + i for i, v in enumerate(sorted(used[r]))}
            remap.append(m)
        for op in self.ops:
            if op.srcbuf == "s" and op.srcoff >= self.alt_base[op.src_rank]:
                op.srcoff = remap[op.src_rank][op.srcoff]
            if op.dstbuf == "s" and op.dstoff >= self.alt_base[op.dst_rank]:
                op.dstoff = remap[op.dst_rank][op.dstoff]
            for buf, off, r in ((op.srcbuf, op.srcoff, op.src_rank), (op.dstbuf, op.dstoff, op.dst_rank)):
                if buf == "s":
                    ends[r] = max(ends[r], off + op.cnt)
        return ends

    def program(self, *, name: str, proto: str, min_bytes: int, max_bytes: int, limits: MscclLimits) -> Program:
        n = self.n
        s_chunks = self.compact_scratch()
        # channels: every (sender, receiver, part) connection gets one, filled greedily under the per-channel
        # limit; the parts of one (sender, receiver) pair need distinct channels (one connection per channel)
        conns = sorted({(t[0], t[2], t[3]) for t in self.tb_ops if t[1] == "send"})
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
                raise _limit(f"msccl export: rank {a} -> rank {b} needs channel {c}: ranks {a} and {b} have up to "
                             f"{need} send or receive thread blocks, at most {per} per channel "
                             f"(MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL), and the executor has MAXCHANNELS = "
                             f"{limits.max_channels} channels", "MAXCHANNELS", c + 1, limits.max_channels)
            chan[a, b, part] = c
            taken[a, b].add(c)
            nsend[a, c] += 1
            nrecv[b, c] += 1
        kind_rank = {"recv": 0, "send": 1, "local": 2}
        gpus = [Gpu(r, *self.buffer_sizes(r), int(s_chunks[r])) for r in range(n)]
        tb_id, tb_of = {}, {}
        for key in sorted(self.tb_ops, key=lambda t: (t[0], kind_rank[t[1]], t[2], t[3])):
            r = key[0]
            g = gpus[r]
            if key[1] == "send":
                tb = ThreadBlock(len(g.tbs), send=key[2], recv=-1, chan=chan[r, key[2], key[3]])
            elif key[1] == "recv":
                tb = ThreadBlock(len(g.tbs), send=-1, recv=key[2], chan=chan[key[2], r, key[3]])
            else:
                tb = ThreadBlock(len(g.tbs), chan=0)
            g.tbs.append(tb)
            tb_id[key], tb_of[key] = tb.id, tb
        # lay out steps: each extra dependency is a nop step before the op
        for ids in self.tb_ops.values():
            pos = 0
            for o in ids:
                op = self.ops[o]
                pos += max(0, len(op.deps) - 1)
                op.pos = pos
                pos += 1
        for key, ids in self.tb_ops.items():
            tb = tb_of[key]
            for o in ids:
                op = self.ops[o]
                deps = [self.ops[d] for d in op.deps]
                for d in deps[:-1]:
                    tb.steps.append(Step(len(tb.steps), "nop", depid=tb_id[d.tb], deps=d.pos))
                    d.hasdep = 1
                last = deps[-1] if deps else None
                if last is not None:
                    last.hasdep = 1
                tb.steps.append(Step(len(tb.steps), op.type, op.srcbuf, op.srcoff, op.dstbuf, op.dstoff, op.cnt,
                                     tb_id[last.tb] if last else -1, last.pos if last else -1))
        for key, ids in self.tb_ops.items():
            tb = tb_of[key]
            for o in ids:
                op = self.ops[o]
                tb.steps[op.pos].hasdep = op.hasdep
            # the parser fuses consecutive `re` steps into one destination; a dependency flag separates them
            prev = None
            for st in tb.steps:
                if st.type == "re":
                    if (prev is not None and st.depid < 0 and (prev.dstbuf, prev.dstoff, prev.srcbuf)
                            == (st.dstbuf, st.dstoff, st.srcbuf) and prev.cnt != st.cnt):
                        prev.hasdep = 1
                    prev = st
                elif st.type != "nop":
                    prev = None
        self.tb_of = tb_of
        nchannels = max((tb.chan + 1 for g in gpus for tb in g.tbs), default=1)
        # all-to-all: out of place only, like msccl-tools' AllToAll(..., inplace=False) (module docstring)
        inplace = 0 if self.s.collective is Collective.ALLTOALL else 1
        return Program(name=name, coll=COLL_NAMES[self.s.collective], ngpus=n, nchunksperloop=self.nchunks,
                       nchannels=nchannels, proto=proto, inplace=inplace, outofplace=1, min_bytes=min_bytes,
                       max_bytes=max_bytes, gpus=gpus)

    def buffer_sizes(self, r: int) -> tuple[int, int]:
        coll = self.s.collective
        if coll is Collective.ALLTOALL:
            return self.kc, self.kc
        if coll is Collective.ALLREDUCE:
            return self.cd, self.cd
        if coll is Collective.ALLGATHER:
            return self.kc, self.cd
        return self.cd, self.kc


_EXPORT_OPTIONS = ("name", "proto", "max_chunks", "min_bytes", "max_bytes", "split", "limits", "max_steps", "max_count",
                   "max_threadblocks_per_channel", "max_channels", "max_threadblocks")


def _default_name(schedule: Schedule) -> str:
    base = f"{schedule.algorithm}_{COLL_NAMES.get(schedule.collective, schedule.collective.value)}_{schedule.nranks}"
    return base


def to_msccl(schedule: Schedule, *, name: str | None = None, proto: str = "Simple", max_chunks: int = 1024,
             min_bytes: int = 0, max_bytes: int = 0, split: bool = True, limits: MscclLimits | None = None,
             **limit_overrides) -> MscclExport:
    """Translate ``schedule`` into an MSCCL program for the NCCL MSCCL executor (module docstring).

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
        ``max_threadblocks``, ``max_steps_per_threadblock``, ``nchannels``, ``max_scratch_chunks``.

    Raises:
        MscclLimitError: the program exceeds an executor limit (message names the limit and value).
        DirectcollError: a collective MSCCL cannot express, unequal ownership, bad options.

    Warns:
        MscclRoundingWarning: the schedule was rounded to fewer chunks per block than it needs.
    """
    if limits is None:
        limits = LIMITS
    unknown = set(limit_overrides) - set(_EXPORT_OPTIONS)
    if unknown:
        raise DirectcollError(f"msccl export: unknown option(s) {', '.join(sorted(unknown))}; accepted: "
                              f"{', '.join(_EXPORT_OPTIONS)}")
    if limit_overrides:
        limits = replace(limits, **limit_overrides)
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
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", name if name is not None else _default_name(schedule))
    if not name:
        raise DirectcollError("msccl export: the algorithm name is empty")
    if len(name) > limits.max_str_len:
        raise _limit(f"msccl export: name has {len(name)} characters; the executor's parser holds at most "
                     f"MAX_STR_LEN = {limits.max_str_len}", "MAX_STR_LEN", len(name), limits.max_str_len)
    scaled, report = _chunked(schedule, max_chunks)
    if report["rounded"]:
        warnings.warn(f"msccl export: {schedule!r} needs {report['exact_chunks_per_block']} chunks per block to be "
                      f"exact; max_chunks={max_chunks} allows {report['chunks_per_block']}, so piece ends moved by up "
                      f"to {report['max_deviation_blocks']:.4g} blocks", MscclRoundingWarning, stacklevel=2)
    part_size: dict = {}
    for _attempt in range(8):
        ex = _Exporter(scaled, report["chunks_per_block"], limits.max_count, part_size)
        ex.run()
        program = ex.program(name=name, proto=proto, min_bytes=min_bytes, max_bytes=max_bytes, limits=limits)
        if not split:
            break
        # cut thread blocks with too many steps: their connection (or local sequence) into more parts
        changed = False
        for key, tb in ex.tb_of.items():
            if len(tb.steps) <= limits.max_steps:
                continue
            r, kind, peer, _ = key
            conn = ("local", r) if kind == "local" else ((r, peer) if kind == "send" else (peer, r))
            nops = len(ex.tb_ops[key])
            size = max(1, min(part_size.get(conn, nops), nops * limits.max_steps // len(tb.steps) - 1))
            if size < part_size.get(conn, nops + 1):
                part_size[conn] = size
                changed = True
        if not changed:
            break
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
    return MscclExport(program, program_to_xml(program, comment=comment), report)


def export_msccl(schedule: Schedule, path=None, **options) -> str:
    """MSCCL XML of ``schedule`` (see :func:`to_msccl` for ``options``); written to ``path`` when given.

    Returns:
        The XML text.

    Raises:
        MscclLimitError, DirectcollError: as :func:`to_msccl`; OSError if ``path`` cannot be written.
    """
    result = to_msccl(schedule, **options)
    if path is not None:
        Path(path).write_text(result.xml)
    return result.xml


# -- import ---------------------------------------------------------------------------------------------------

_READ, _COPYW, _REDW = 0, 1, 2
_IMPORT_COLLS = {"allreduce": Collective.ALLREDUCE, "reducescatter": Collective.REDUCE_SCATTER,
                 "allgather": Collective.ALLGATHER, "alltoall": Collective.ALLTOALL}
#: Bytes per chunk access of an import (its coordinates, its per-chunk record in the conflict table).
IMPORT_BYTES_PER_ACCESS = 500
#: Data races are looked for up to this many steps (the happens-before closure is quadratic).
RACE_CHECK_MAX_STEPS = 20000
_START, _END = -1, -2   # pseudo op nodes: the out-of-place input copy (first), all-to-all's final copies (last)


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


def import_msccl(path_or_text, *, model: str = "auto", strict: bool = False, check_races: bool = True,
                 limits: MscclLimits | None = None) -> Schedule:
    """Read MSCCL XML (a path, or the XML text itself) into an IR schedule that :func:`~directcoll.verify.verify`
    and the simulators accept (module docstring, "Import").

    Args:
        path_or_text: a file path (str or Path), or a string holding the XML (it starts with ``<``).
        model: ``"inplace"`` (i and o alias as in NCCL's in-place call; alltoall: o is i), ``"outofplace"`` (the
            input is a separate copy), or ``"auto"``: in place when the file declares ``inplace="1"``.
        strict: also check the executor's limits (:func:`check_limits`).
        check_races: report conflicting chunk accesses that no dependency orders (skipped above
            :data:`RACE_CHECK_MAX_STEPS` steps).
        limits: limits for ``strict`` (default :data:`LIMITS`).

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
    """
    if isinstance(path_or_text, Path) or (isinstance(path_or_text, str) and not path_or_text.lstrip().startswith("<")):
        path = Path(path_or_text)
        try:
            check_memory(f"reading {path}", float(path.stat().st_size) * XML_BYTES_PER_CHAR)
            text = path.read_text()
        except UnicodeDecodeError as exc:
            raise MscclFormatError(f"{path}: not MSCCL XML (not UTF-8 text: {exc})") from None
        except OSError as exc:
            raise MscclFormatError(f"{path}: cannot read MSCCL XML ({exc.strerror or exc})") from None
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
    """The IR schedule of an MSCCL program (checked first by :func:`validate_program`); see :func:`import_msccl`.

    Raises:
        MscclFormatError: as :func:`import_msccl`.
        ResourceError: the import would need more memory than the budget (estimated before anything is built).
    """
    return _Importer(program, source, model, check_races).build()


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
        if self.coll is not Collective.ALLREDUCE and cd % n:
            self.fail(f"<algo> nchunksperloop={cd} must be a multiple of ngpus={n} for {p.coll}")
        self.kc = cd // n if self.coll is not Collective.ALLREDUCE else cd  # all-to-all: chunks per pair
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
        ops: list[_IOp] = []
        tb_seq: list[list[int]] = []
        conn_send, conn_recv = defaultdict(list), defaultdict(list)
        send_tb, recv_tb = {}, {}
        tbs_of_gpu = []
        for g in self.gpus:
            tbs_of_gpu.append({tb.id: tb for tb in g.tbs})  # ids 0..T-1, peers in range: validate_program
            for tb in sorted(g.tbs, key=lambda t: t.id):
                tw = f"gpu {g.id}, tb {tb.id}"
                if tb.send >= 0:
                    if (g.id, tb.send, tb.chan) in send_tb:
                        self.fail(f"{tw} and tb {send_tb[g.id, tb.send, tb.chan]} both send to gpu {tb.send} on "
                                  f"channel {tb.chan}; the executor gives each (peer, channel) one connection")
                    send_tb[g.id, tb.send, tb.chan] = tb.id
                if tb.recv >= 0:
                    if (tb.recv, g.id, tb.chan) in recv_tb:
                        self.fail(f"{tw} and tb {recv_tb[tb.recv, g.id, tb.chan]} both receive from gpu {tb.recv} on "
                                  f"channel {tb.chan}; the executor gives each (peer, channel) one connection")
                    recv_tb[tb.recv, g.id, tb.chan] = tb.id
                seq = []
                k = 0
                for i, st in enumerate(tb.steps):
                    where = f"{tw}, step {i} (s={st.s}, type={st.type})"
                    if st.type == "nop" and st.depid < 0:
                        continue  # the executor skips it and does not count it
                    if st.type != "nop" and st.cnt < 1:
                        self.fail(f"{where}: cnt={st.cnt} must be >= 1")
                    if st.type in _SENDS and tb.send < 0:
                        self.fail(f"{where}: a send in a thread block without a send peer (send=-1)")
                    if st.type in _RECVS and tb.recv < 0:
                        self.fail(f"{where}: a receive in a thread block without a receive peer (recv=-1)")
                    if st.hasdep not in (0, 1):
                        self.fail(f"{where}: hasdep={st.hasdep} must be 0 or 1")
                    op = _IOp(g.id, tb, st, k, where)
                    k += 1
                    op.node = len(ops)
                    ops.append(op)
                    seq.append(op.node)
                    if st.type in _SENDS:
                        conn_send[g.id, tb.send, tb.chan].append(op.node)
                    if st.type in _RECVS:
                        conn_recv[tb.recv, g.id, tb.chan].append(op.node)
                tb_seq.append(seq)
        self.ops = ops
        nv = len(ops)
        succ = [[] for _ in range(nv)]
        for seq in tb_seq:
            for u, v in zip(seq[:-1], seq[1:], strict=True):
                succ[u].append(v)
        by_tb = {}
        for seq in tb_seq:
            if seq:
                o = ops[seq[0]]
                by_tb[o.gpu, o.tb.id] = seq
        for op in ops:
            st = op.step
            if st.depid < 0:
                continue
            if st.depid not in tbs_of_gpu[op.gpu]:
                self.fail(f"{op.where}: depid={st.depid} is not a thread block of gpu {op.gpu}")
            cand = [u for u in by_tb.get((op.gpu, st.depid), []) if ops[u].k >= st.deps and ops[u].step.hasdep]
            if not cand:
                self.fail(f"{op.where}: waits for tb {st.depid} step {st.deps}, but no step of that thread block from "
                          "there on sets hasdep=1, so the executor would wait forever")
            succ[cand[0]].append(op.node)
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
        topo = self.toposort(succ)
        rank_of = np.empty(nv, np.int64)
        rank_of[topo] = np.arange(nv)
        self.topo_index = rank_of
        self.reach = self.reachability(topo, succ) if self.check_races and nv <= RACE_CHECK_MAX_STEPS else None
        if self.a2a and self.model == "outofplace":
            self.diag_alias = self.own_part_aliased()
            if not all(self.diag_alias):
                self.temp_base = self.diag_base + self.kc
        return self.replay(pairs)

    def toposort(self, succ) -> list[int]:
        nv = len(succ)
        indeg = [0] * nv
        for u in range(nv):
            for v in succ[u]:
                indeg[v] += 1
        ready = deque(u for u in range(nv) if indeg[u] == 0)
        order = []
        while ready:
            u = ready.popleft()
            order.append(u)
            for v in succ[u]:
                indeg[v] -= 1
                if indeg[v] == 0:
                    ready.append(v)
        if len(order) < nv:
            stuck = [u for u in range(nv) if indeg[u] > 0]
            self.fail(f"the thread blocks wait on each other in a cycle (deadlock), e.g. at {self.ops[stuck[0]].where}")
        return order

    def reachability(self, topo, succ) -> list[int]:
        preds = [[] for _ in range(len(succ))]
        for u, vs in enumerate(succ):
            for v in vs:
                preds[v].append(u)
        reach = [0] * len(succ)
        for v in topo:
            acc = 0
            for u in preds[v]:
                acc |= reach[u] | (1 << u)
            reach[v] = acc
        return reach

    # -- semantics ------------------------------------------------------------------------------------------
    def replay(self, pairs) -> Schedule:
        ops = self.ops
        events: list[list[tuple]] = []      # IR actions: (src rank, dst rank, op, src coordinates, dst coordinates)
        accesses = []                       # (rank, coordinates, position, kind, event, op node)
        recv_pair = {v: u for u, v in pairs}

        def event(*actions) -> int:
            events.append(list(actions))
            return len(events) - 1

        def pos(node: int, sub: int) -> int:
            return int(self.topo_index[node]) * 2 + sub

        sent_from = {}                      # sending op node -> coordinates its data is read from (on its gpu)
        for op in ops:
            st = op.step
            if st.type == "s":
                sent_from[op.node] = self.coord(op, st.srcbuf, st.srcoff, "source")
            elif st.type in ("rcs", "rrcs"):   # forwards what it received (and reduced) into dst
                sent_from[op.node] = self.coord(op, st.dstbuf, st.dstoff, "destination")
            elif st.type == "rrs":             # forwards received + local without storing it: a temporary
                sent_from[op.node] = self.temp(op.gpu, st.cnt)
        for op in ops:
            st, r, t = op.step, op.gpu, op.step.type
            if t == "nop" or t == "s":
                continue
            here = pos(op.node, 0)
            if t in _RECVS:
                snd = ops[recv_pair[op.node]]
                a, xs = snd.gpu, sent_from[snd.node]
                sub_read = 1 if snd.step.type != "s" else 0
                if t in ("r", "rcs"):
                    yd = self.coord(op, st.dstbuf, st.dstoff, "destination")
                    e = event((a, r, COPY, xs, yd))
                    accesses.append((r, yd, here, _COPYW, e, op.node))
                else:
                    yo = self.coord(op, st.srcbuf, st.srcoff, "source")
                    yd = (self.coord(op, st.dstbuf, st.dstoff, "destination") if t != "rrs" else sent_from[op.node])
                    moved = yo != yd
                    if not moved.any():
                        e = event((a, r, REDUCE, xs, yd))
                        accesses.append((r, yd, here, _REDW, e, op.node))
                    else:  # the local operand is copied to the destination first (same IR step)
                        e = event((r, r, COPY, yo[moved], yd[moved]), (a, r, REDUCE, xs, yd))
                        accesses.append((r, yo[moved], here, _READ, e, op.node))
                        accesses.append((r, yd[moved], here, _COPYW, e, op.node))
                        if not moved.all():
                            accesses.append((r, yd[~moved], here, _REDW, e, op.node))
                accesses.append((a, xs, pos(snd.node, sub_read), _READ, e, snd.node))
            elif t in ("cpy", "re"):
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
                        continue
                if len(np.intersect1d(ys, yd)):
                    self.fail(f"{op.where}: source and destination chunks overlap")
                e = event((r, r, COPY if t == "cpy" else REDUCE, ys, yd))
                accesses.append((r, ys, here, _READ, e, op.node))
                accesses.append((r, yd, here, _COPYW if t == "cpy" else _REDW, e, op.node))
        fixed = set()
        if self.model == "outofplace" and self.in_size:
            top = self.in_base + self.in_size
            uses_input = sorted({r for r, y, *_ in accesses if np.any((y >= self.in_base) & (y < top))})
            for r in uses_input:
                lo = r * self.kc if self.coll is Collective.ALLGATHER else 0
                src = np.arange(lo, lo + self.in_size, dtype=np.int64)
                dst = np.arange(self.in_base, top, dtype=np.int64)
                e = event((r, r, COPY, src, dst))
                accesses.append((r, src, -2, _READ, e, _START))
                accesses.append((r, dst, -1, _COPYW, e, _START))
                fixed.add(e)
        if self.a2a:  # after everything: move what o holds into the receive coordinates (module docstring)
            end, kc, cd = 2 * len(ops), self.kc, self.cd
            for r in range(self.n):
                if self.model == "inplace":
                    moves = [(r * cd + j * kc, j * cd + r * kc) for j in range(self.n) if j != r]
                else:
                    moves = [] if self.diag_alias[r] else [(self.diag_base, r * cd + r * kc)]
                if not moves:
                    continue
                src = np.concatenate([np.arange(x, x + kc, dtype=np.int64) for x, _ in moves])
                dst = np.concatenate([np.arange(y, y + kc, dtype=np.int64) for _, y in moves])
                e = event((r, r, COPY, src, dst))
                accesses.append((r, src, end, _READ, e, _END))
                accesses.append((r, dst, end + 1, _COPYW, e, _END))
        steps = self.solve(events, accesses, fixed)
        total = self.temp_base + max(self.temps, default=0)
        b = ScheduleBuilder(self.coll, self.n, self.nb)
        if events:
            uniq = {v: i for i, v in enumerate(sorted(set(steps)))}
            for e, acts in enumerate(events):
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
        try:
            return b.build(meta=meta, nscratch=total - self.nb)
        except ScheduleError as exc:
            self.fail(f"the imported schedule is inconsistent: {exc}")

    def ordered(self, a_node: int, b_node: int) -> bool:
        if a_node < 0 or b_node == _END or a_node == b_node:
            return True
        return bool((self.reach[b_node] >> a_node) & 1)

    def solve(self, events, accesses, fixed) -> list[int]:
        """Smallest IR steps that respect every conflict between chunk accesses (module docstring)."""
        per_cell = defaultdict(list)
        for r, cells, p, kind, e, node in accesses:
            for c in cells.tolist():
                per_cell[r, c].append((p, kind, e, node))
        edges = defaultdict(dict)          # u -> {v: weight}: step(v) >= step(u) + weight

        def need(u: int, v: int, w: int, u_node: int, v_node: int, r: int, c: int) -> None:
            if u == v:
                return
            if self.reach is not None and not self.ordered(u_node, v_node):
                self.fail(f"data race on gpu {r}, chunk coordinate {c}: {self.describe(u_node)} and "
                          f"{self.describe(v_node)} access it without a dependency ordering them")
            if edges[u].get(v, -1) < w:
                edges[u][v] = w

        for (r, c), acc in per_cell.items():
            acc.sort(key=lambda a: a[0])
            last = None                    # (event, kind, node)
            readers = []
            for _, kind, e, node in acc:
                if kind == _READ:
                    if last is not None:
                        need(last[0], e, 1, last[2], node, r, c)
                    readers.append((e, node))
                    continue
                for re_, rn in readers:
                    need(re_, e, 0, rn, node, r, c)
                if last is not None:
                    same_step_ok = kind == _REDW and not readers
                    need(last[0], e, 0 if same_step_ok else 1, last[2], node, r, c)
                last = (e, kind, node)
                readers = []
        ne = len(events)
        step = [1 if (fixed and e not in fixed) else 0 for e in range(ne)]
        first = [math.inf] * ne
        for a in accesses:
            first[a[4]] = min(first[a[4]], a[2])
        order = sorted(range(ne), key=lambda e: first[e])  # sweeps in happens-before order converge fast
        for _ in range(ne + 1):
            changed = False
            for u in order:
                su = step[u]
                for v, w in edges[u].items():
                    if step[v] < su + w:
                        if v in fixed:
                            self.fail("internal error: the out-of-place input copy must come first")
                        step[v] = su + w
                        changed = True
            if not changed:
                return step
        self.fail("the program cannot be expressed bulk-synchronously: its chunk accesses require a cycle of "
                  "strictly increasing steps")

    def describe(self, node: int) -> str:
        if node == _END:
            return "the final copy into the output"
        return "the input copy" if node < 0 else self.ops[node].where
