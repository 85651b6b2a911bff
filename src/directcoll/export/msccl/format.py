"""The MSCCL algorithm format: the program's elements as dataclasses, its XML text, parsing and checking.

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
allgather, reducescatter and alltoall (whose ``count`` is per rank, resp. per peer) and 1 for allreduce, broadcast
and reduce; ``count``
must be a multiple of ``nchunksperloop`` for the executor to select the algorithm (``msccl_lifecycle.cc``:
``count % nChunksPerLoop == 0``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from directcoll.errors import DirectcollError, ScheduleFormatError
from directcoll.inputs import parse_xml
from directcoll.schedule.ir import Collective

#: IR collective -> the executor's ``coll`` spelling (``msccl_parser.cc``).
COLL_NAMES = {Collective.ALLREDUCE: "allreduce", Collective.REDUCE_SCATTER: "reducescatter",
              Collective.ALLGATHER: "allgather", Collective.ALLTOALL: "alltoall",
              Collective.BROADCAST: "broadcast", Collective.REDUCE: "reduce"}
#: Every ``coll`` the executor knows; the importer reads allreduce, reducescatter, allgather, alltoall, broadcast
#: and reduce (the last two with sizeMultiplier 1, as allreduce; the XML has no root attribute: the program is
#: written for one root, which the importer finds as the rank that never receives (broadcast) or never sends
#: (reduce)).
EXECUTOR_COLLECTIVES = ("allreduce", "reducescatter", "allgather", "reduce", "broadcast", "send", "recv",
                        "gather", "scatter", "alltoall", "alltoallv")
PROTOCOLS = ("Simple", "LL", "LL128")
#: Step types (``msccl_struct.h``: MSCCL_SEND .. MSCCL_REDUCE, plus ``nop``).
STEP_TYPES = ("s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop")
BUFFERS = ("i", "o", "s")
#: Step types that send to the thread block's send peer, and those that receive from its receive peer.
SEND_TYPES = frozenset({"s", "rcs", "rrs", "rrcs"})
RECV_TYPES = frozenset({"r", "rcs", "rrs", "rrc", "rrcs"})

ALGO_ATTRS = ("name", "proto", "nchannels", "nchunksperloop", "ngpus", "coll", "inplace", "outofplace",
              "minBytes", "maxBytes")
GPU_ATTRS = ("id", "i_chunks", "o_chunks", "s_chunks")
TB_ATTRS = ("id", "send", "recv", "chan")
STEP_ATTRS = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps", "hasdep")

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


class MscclFormatError(ScheduleFormatError):
    """An MSCCL XML file is malformed or describes a program the importer cannot read (the message names the
    file and the element).

    Raises:
        Nothing: an exception class (raised by :func:`parse_msccl`, :func:`validate_program` and the importer).

    Source: the MSCCL executor's XML format (Azure/msccl-executor-nccl ``src/misc/msccl/msccl_parser.cc``);
    docs/export.md, "Import".
    """


class MscclLimitError(DirectcollError, ValueError):
    """A program exceeds one of the executor's limits.

    Attributes:
        limit: the executor's name for the limit (e.g. ``MSCCL_MAX_NUM_STEPS``).
        value: the offending value.
        allowed: the largest value accepted.

    Raises:
        Nothing: an exception class (raised by :func:`~directcoll.export.msccl.limits.check_limits` and the export).

    Source: the MSCCL executor's limits (Azure/msccl-executor-nccl ``src/include/msccl/msccl_struct.h``,
    ``msccl_parser.cc``); docs/export.md, "Limits".
    """

    def __init__(self, message: str, *, limit: str, value: int, allowed: int) -> None:
        super().__init__(message)
        self.limit, self.value, self.allowed = limit, value, allowed


class MscclRoundingWarning(UserWarning):
    """A fractional schedule was rounded to fewer chunks per block than it needs to be exact.

    Raises:
        Nothing: a warning class (issued by :func:`~directcoll.export.msccl.lower.to_msccl`).

    Source: docs/export.md, "What the export maps" (chunks: a fractional schedule rounded to ``max_chunks``);
    Zhao et al. (NSDI'25) App. E.2 (discrete chunked schedules).
    """


@dataclass
class Step:
    """One ``<step>``; ``s`` is its index in the thread block (nop steps included).

    Fields mirror the XML attributes: ``srcoff``/``dstoff`` and ``cnt`` in chunks (-1: none), ``depid``/``deps`` the
    thread block and step waited on (-1: none), ``hasdep`` 1 when another step waits on this one.

    Raises:
        Nothing: a plain record; :func:`validate_program` checks it.

    Source: the MSCCL executor's XML format (Azure/msccl-executor-nccl ``src/misc/msccl/msccl_parser.cc``);
    docs/export.md, "The format" (``<step>``).

    >>> Step(0, "s", cnt=1)
    Step(s=0, type='s', srcbuf='i', srcoff=-1, dstbuf='o', dstoff=-1, cnt=1, depid=-1, deps=-1, hasdep=0)
    """

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
    """One ``<tb>``: at most one send peer and one receive peer (-1: none), a channel, steps in order.

    Raises:
        Nothing: a plain record; :func:`validate_program` checks it.

    Source: the MSCCL executor's XML format (Azure/msccl-executor-nccl ``src/misc/msccl/msccl_parser.cc``);
    docs/export.md, "The format" (``<tb>``).

    >>> ThreadBlock(0, send=1).recv
    -1
    """

    id: int
    send: int = -1
    recv: int = -1
    chan: int = 0
    steps: list[Step] = field(default_factory=list)


@dataclass
class Gpu:
    """One ``<gpu>``: its buffer sizes in chunks and thread blocks.

    ``i_chunks``, ``o_chunks``, ``s_chunks``: input, output and scratch buffer sizes, in chunks.

    Raises:
        Nothing: a plain record; :func:`validate_program` checks it.

    Source: the MSCCL executor's XML format (Azure/msccl-executor-nccl ``src/misc/msccl/msccl_parser.cc``);
    docs/export.md, "The format" (``<gpu>``).

    >>> Gpu(0, 4, 4, 0).tbs
    []
    """

    id: int
    i_chunks: int
    o_chunks: int
    s_chunks: int
    tbs: list[ThreadBlock] = field(default_factory=list)


@dataclass
class Program:
    """An MSCCL algorithm: the ``<algo>`` element and everything in it.

    ``nchunksperloop``: chunks of one loop of the buffer; ``min_bytes``/``max_bytes``: message sizes, bytes, the
    executor selects it for (0: no limit).

    Raises:
        Nothing: a plain record; :func:`validate_program` checks it.

    Source: the MSCCL executor's XML format (Azure/msccl-executor-nccl ``src/misc/msccl/msccl_parser.cc``);
    docs/export.md, "The format" (``<algo>``); Zhao et al. (NSDI'25) Sec. 7 (schedules lowered to MSCCL XML).

    >>> Program("demo", "allreduce", ngpus=2, nchunksperloop=2, nchannels=1).proto
    'Simple'
    """

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


def fuses_with(prev: Step, step: Step) -> bool:
    """Whether the executor's parser fuses ``re`` step ``step`` into the ``re`` step ``prev`` before it (nop steps
    between them aside): ``step`` waits on nothing, ``prev`` publishes no flag, and both add the same source buffer
    into the same destination (``msccl_parser.cc`` then reduces only ``step``'s ``cnt`` chunks).

    Raises:
        Nothing: compares fields.

    Source: the MSCCL executor's XML format (Azure/msccl-executor-nccl ``src/misc/msccl/msccl_parser.cc``); the fusion
    of consecutive ``re`` steps.

    >>> fuses_with(Step(0, "re", "i", 0, "o", 0, 1), Step(1, "re", "i", 1, "o", 0, 2))
    True
    """
    return (step.depid < 0 and not prev.hasdep
            and (prev.dstbuf, prev.dstoff, prev.srcbuf) == (step.dstbuf, step.dstoff, step.srcbuf))


# -- XML text -------------------------------------------------------------------------------------------------

def _comment_text(text: str) -> str:
    return re.sub(r"-{2,}", "-", " ".join(str(text).split())).strip("-")


def program_to_xml(program: Program, *, comment: str | None = None) -> str:
    """The XML text of ``program`` in the layout the executor's hand-written parser accepts (``msccl_parser.cc``):
    double-quoted attributes separated by one space, ``<step .../>`` without a space before ``/>``, no XML
    declaration (the parser would reject ``<?xml``), spaces and newlines only. ``comment`` becomes a leading
    ``<!-- -->`` (runs of ``-`` folded to one).

    Returns:
        The text, one element per line, ending in a newline. Nothing is checked (see :func:`validate_program`).

    Raises:
        Nothing: string formatting (nothing is checked).

    Source: the MSCCL executor's XML format (Azure/msccl-executor-nccl ``src/misc/msccl/msccl_parser.cc``);
    docs/export.md, "The format".

    >>> p = Program("demo", "allreduce", ngpus=1, nchunksperloop=1, nchannels=1, gpus=[Gpu(0, 1, 1, 0)])
    >>> print(program_to_xml(p, comment="a -- b"), end="")
    <!-- a - b -->
    <algo name="demo" proto="Simple" nchannels="1" nchunksperloop="1" ngpus="1" coll="allreduce" inplace="1" \
outofplace="1" minBytes="0" maxBytes="0">
      <gpu id="0" i_chunks="1" o_chunks="1" s_chunks="0">
      </gpu>
    </algo>
    """
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


# -- parsing --------------------------------------------------------------------------------------------------

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
    """Parse MSCCL XML text (the executor's format, ``msccl_parser.cc``) into a :class:`Program` and check it
    (:func:`validate_program`; see :func:`~directcoll.export.msccl.lift.program_to_schedule` for the semantics
    and :func:`~directcoll.export.msccl.limits.check_limits` for the executor's limits).

    Integer attributes must be decimal ASCII integers in the ranges of :data:`INT_ATTRS`; nothing is cast. Unknown
    elements and attributes are ignored, as the executor's parser ignores them; a document type declaration
    (``<!DOCTYPE``, entities), which the executor's parser does not read, is refused.

    Raises:
        MscclFormatError: not well-formed XML, a root other than ``<algo>``, a missing, non-integer or
            out-of-range attribute, an unknown protocol, buffer or step type, ids or peers that do not name GPUs
            and thread blocks of the file; the message names ``source`` and the element (``gpu 1, tb 2, step 3``).

    Source: the MSCCL executor's XML format (Azure/msccl-executor-nccl ``src/misc/msccl/msccl_parser.cc``);
    docs/export.md, "Import".

    >>> parse_msccl(program_to_xml(Program("demo", "allreduce", 1, 1, 1, gpus=[Gpu(0, 1, 1, 0)]))).gpus
    [Gpu(id=0, i_chunks=1, o_chunks=1, s_chunks=0, tbs=[])]
    """
    if not isinstance(text, str):
        raise MscclFormatError(f"{source}: expected MSCCL XML text, got {type(text).__name__}")
    root = parse_xml(text, source, error=MscclFormatError)
    if root.tag != "algo":
        raise MscclFormatError(f"{source}: the root element is <{root.tag}>; an MSCCL algorithm is an <algo>")
    prog = _parse_algo(root, source)
    for ge in root:
        if ge.tag == "gpu":  # the executor ignores unknown elements too
            prog.gpus.append(_parse_gpu(ge, len(prog.gpus), source))
    validate_program(prog, source=source)
    return prog


def _parse_algo(root, source: str) -> Program:
    where = "<algo>"
    return Program(name=_str_attr(root, "name", where, source),
                   coll=_str_attr(root, "coll", where, source, EXECUTOR_COLLECTIVES),
                   ngpus=_int_attr(root, "ngpus", where, source),
                   nchunksperloop=_int_attr(root, "nchunksperloop", where, source),
                   nchannels=_int_attr(root, "nchannels", where, source),
                   proto=_str_attr(root, "proto", where, source, PROTOCOLS),
                   inplace=_int_attr(root, "inplace", where, source),
                   outofplace=_int_attr(root, "outofplace", where, source),
                   min_bytes=_int_attr(root, "minBytes", where, source),
                   max_bytes=_int_attr(root, "maxBytes", where, source))


def _parse_gpu(ge, index: int, source: str) -> Gpu:
    gid = _int_attr(ge, "id", f"<gpu> #{index}", source)
    gw = f"gpu {gid}"
    gpu = Gpu(gid, _int_attr(ge, "i_chunks", gw, source), _int_attr(ge, "o_chunks", gw, source),
              _int_attr(ge, "s_chunks", gw, source))
    for te in ge:
        if te.tag == "tb":
            gpu.tbs.append(_parse_tb(te, f"{gw}, <tb> #{len(gpu.tbs)}", gw, source))
    return gpu


def _parse_tb(te, tw: str, gw: str, source: str) -> ThreadBlock:
    tid = _int_attr(te, "id", tw, source)
    tw = f"{gw}, tb {tid}"
    tb = ThreadBlock(tid, _int_attr(te, "send", tw, source), _int_attr(te, "recv", tw, source),
                     _int_attr(te, "chan", tw, source))
    for se in te:
        if se.tag == "step":
            tb.steps.append(_parse_step(se, f"{tw}, step #{len(tb.steps)}", source))
    return tb


def _parse_step(se, sw: str, source: str) -> Step:
    return Step(_int_attr(se, "s", sw, source), _str_attr(se, "type", sw, source, STEP_TYPES),
                _str_attr(se, "srcbuf", sw, source, BUFFERS), _int_attr(se, "srcoff", sw, source),
                _str_attr(se, "dstbuf", sw, source, BUFFERS), _int_attr(se, "dstoff", sw, source),
                _int_attr(se, "cnt", sw, source), _int_attr(se, "depid", sw, source),
                _int_attr(se, "deps", sw, source), _int_attr(se, "hasdep", sw, source))


# -- checking -------------------------------------------------------------------------------------------------

def _check_field(obj, name: str, attr: str, element: str, where: str, source: str) -> None:
    value = getattr(obj, name)
    lo, hi = INT_ATTRS[element][attr]
    if type(value) is not int:
        raise MscclFormatError(f"{source}: {where}: {attr}={value!r} is not an integer; accepted: {lo}..{hi}")
    if not lo <= value <= hi:
        raise MscclFormatError(f"{source}: {where}: {attr}={value} is out of range; accepted: {lo}..{hi}")


def _check_str_field(value, accepted, what: str) -> None:
    if type(value) is not str or (accepted is not None and value not in accepted):
        raise MscclFormatError(f"{what}={value!r} is not accepted; accepted: "
                               + (", ".join(accepted) if accepted else "a string"))


def validate_program(program: Program, *, source: str = "<msccl>") -> None:
    """Check every field of ``program`` (parsed by :func:`parse_msccl` or built in Python) for its type and range
    (:data:`INT_ATTRS`, the executor's spellings), and that its ids and peers name GPUs and thread blocks that
    exist: ``ngpus`` GPUs with ids 0..ngpus-1, each GPU's thread blocks with ids 0..T-1, ``send``/``recv`` other
    GPUs or -1. Allocates nothing that grows with a field's value, so it is safe on any input;
    :func:`~directcoll.export.msccl.lift.program_to_schedule` calls it first.

    Raises:
        MscclFormatError: the first field of the wrong type or out of range, or a reference to nothing; the
            message names ``source``, the element and the accepted values.

    Source: the MSCCL executor's XML format (Azure/msccl-executor-nccl ``src/misc/msccl/msccl_parser.cc``);
    docs/export.md, "The format" and "Import".

    >>> validate_program(Program("demo", "allreduce", ngpus=2, nchunksperloop=1, nchannels=1, gpus=[Gpu(0, 1, 1, 0)]))
    Traceback (most recent call last):
    ...
    directcoll.export.msccl.format.MscclFormatError: <msccl>: <algo> ngpus=2 but the <gpu> ids are [0]; expected \
each of 0..1 once
    """
    if not isinstance(program, Program):
        raise MscclFormatError(f"{source}: expected an MSCCL Program, got {type(program).__name__}")
    _check_algo(program, source)
    for g in program.gpus:
        _check_gpu(g, program.ngpus, source)


def _check_algo(p: Program, source: str) -> None:
    """The ``<algo>`` fields, and that the GPUs are a list of ``ngpus`` GPUs with ids 0..ngpus-1."""
    for name, accepted in (("name", None), ("coll", EXECUTOR_COLLECTIVES), ("proto", PROTOCOLS)):
        _check_str_field(getattr(p, name), accepted, f"{source}: <algo> {name}")
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


def _check_gpu(g: Gpu, n: int, source: str) -> None:
    """One GPU's fields and thread blocks, and that their ids are 0..T-1."""
    gw = f"gpu {g.id}"
    for name in ("i_chunks", "o_chunks", "s_chunks"):
        _check_field(g, name, name, "gpu", gw, source)
    if not isinstance(g.tbs, list) or not all(isinstance(tb, ThreadBlock) for tb in g.tbs):
        raise MscclFormatError(f"{source}: {gw}: tbs must be a list of ThreadBlock")
    for i, tb in enumerate(g.tbs):
        _check_tb(tb, i, g.id, n, source)
    tids = sorted(tb.id for tb in g.tbs)
    if tids != list(range(len(tids))):
        dup = next((a for a, b in zip(tids, tids[1:], strict=False) if a == b), None)
        if dup is not None:
            raise MscclFormatError(f"{source}: {gw}: duplicate thread block id {dup}")
        missing = min(set(range(len(tids))) - set(tids))
        raise MscclFormatError(f"{source}: {gw}: thread block {missing} is missing (ids must be "
                               f"0..{len(tids) - 1})")


def _check_tb(tb: ThreadBlock, index: int, gid: int, n: int, source: str) -> None:
    gw = f"gpu {gid}"
    _check_field(tb, "id", "id", "tb", f"{gw}, <tb> #{index}", source)
    tw = f"{gw}, tb {tb.id}"
    for name in ("send", "recv", "chan"):
        _check_field(tb, name, name, "tb", tw, source)
    if tb.send == gid or tb.recv == gid or tb.send >= n or tb.recv >= n:
        raise MscclFormatError(f"{source}: {tw}: send={tb.send} recv={tb.recv} must be other GPUs "
                               f"0..{n - 1} or -1")
    if not isinstance(tb.steps, list) or not all(isinstance(st, Step) for st in tb.steps):
        raise MscclFormatError(f"{source}: {tw}: steps must be a list of Step")
    for j, st in enumerate(tb.steps):
        sw = f"{tw}, step #{j}"
        for name, accepted in (("type", STEP_TYPES), ("srcbuf", BUFFERS), ("dstbuf", BUFFERS)):
            _check_str_field(getattr(st, name), accepted, f"{source}: {sw}: {name}")
        for name in ("s", "srcoff", "dstoff", "cnt", "depid", "deps", "hasdep"):
            _check_field(st, name, name, "step", sw, source)
