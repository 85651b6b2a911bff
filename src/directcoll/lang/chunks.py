"""Chunks of a program of the schedule language: the buffers (:class:`Buffer`), references to chunks (:class:`Ref`,
MSCCLang's chunk reference with ``copy``, ``reduce``, ``send``, ``split`` and ``group``) and the operations they
record (:class:`Op`). The program they belong to is a :class:`directcoll.lang.program.Program`.

Source: docs/language.md, "Buffers and chunks" and "Operations"; MSCCLang (msccl-tools ``msccl.language``).

>>> Buffer.parse("i"), integer(2, "rank", "program")
(<Buffer.input: 'input'>, 2)
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from directcoll.errors import ProgramError
from directcoll.schedule.ir import COPY, REDUCE


def integer(value, what: str, program: str, *, least: int | None = None) -> int:
    """``value`` as an int (ints and numpy integers, not bools), at least ``least``: the ranks, indices, steps and
    channels a program gives.

    Returns:
        An int.

    Raises:
        ProgramError: not an integer, or below ``least`` (the message names ``what`` and the ``program``).

    Source: docs/language.md, "Errors".

    >>> integer(3, "rank", "p"), integer(-1, "step", "p", least=0)
    Traceback (most recent call last):
    ...
    directcoll.errors.ProgramError: p: the step must be an integer >= 0, got -1
    """
    try:
        if isinstance(value, bool):
            raise TypeError
        number = operator.index(value)
    except TypeError:
        raise ProgramError(f"the {what} must be an integer, got {value!r}", program=program) from None
    if least is not None and number < least:
        raise ProgramError(f"the {what} must be an integer >= {least}, got {value!r}", program=program)
    return number


class Buffer(StrEnum):
    """A rank's buffers, as MSCCLang's ``Buffer``: ``input``, ``output`` and ``scratch``.

    Raises:
        Nothing: an enumeration; :meth:`parse` raises on unknown names.

    Source: docs/language.md, "Buffers and chunks"; MSCCLang (msccl-tools ``msccl.language.ir.Buffer``).

    >>> Buffer.parse("o") is Buffer.output
    True
    """

    input = "input"
    output = "output"
    scratch = "scratch"

    @classmethod
    def parse(cls, value) -> Buffer:
        """The buffer ``value`` names: a :class:`Buffer` or ``input``/``i``, ``output``/``o``, ``scratch``/``s``.

        Returns:
            A :class:`Buffer`.

        Raises:
            ProgramError: any other name, listing the accepted ones.

        Source: docs/language.md, "Buffers and chunks".

        >>> Buffer.parse("scratch")
        <Buffer.scratch: 'scratch'>
        """
        if isinstance(value, Buffer):
            return value
        text = str(getattr(value, "value", value)).strip().lower()
        short = {"i": "input", "o": "output", "s": "scratch"}
        try:
            return cls(short.get(text, text))
        except ValueError:
            raise ProgramError(f"unknown buffer {value!r}; accepted: input, output, scratch") from None


@dataclass(frozen=True, eq=False)
class Op:
    """One operation of a program: ``size`` chunks from ``src`` to ``dst`` at ``step``, copied or reduced.

    Attributes:
        step: the step (>= 0); seq: its place in the program (0, 1, ...); kind: 0 copy, 1 reduce.
        src, dst: ranks; src_ref, dst_ref: the chunks as the program named them (:class:`Ref`).
        src_cells, dst_cells: their coordinates in the IR's buffer (blocks; scratch after the data blocks).
        ch: the channel (operations on different channels are separate transfers).

    Raises:
        Nothing: a record made by :class:`Program`.

    Source: docs/language.md, "How a program becomes a schedule".

    >>> from directcoll.lang.program import Program
    >>> prog = Program("ring:2", "allreduce")
    >>> prog.chunk(0, Buffer.input, 0).reduce(prog.chunk(1, Buffer.input, 0)) and None
    >>> op = prog.ops[0]
    >>> (op.step, op.src, op.dst, op.kind, op.dst_cells)
    (0, 1, 0, 1, (0,))
    """

    step: int
    seq: int
    kind: int
    src: int
    dst: int
    src_ref: Ref
    dst_ref: Ref
    src_cells: tuple[int, ...]
    dst_cells: tuple[int, ...]
    ch: int = 0


@dataclass(frozen=True, eq=False)
class Ref:
    """Chunks ``index .. index + size - 1`` of ``buffer`` on ``rank`` in program ``prog`` (MSCCLang's chunk
    reference): the operand of :meth:`copy`, :meth:`reduce` and :meth:`send`.

    Attributes:
        prog: the :class:`Program`; rank: the rank; buffer: a :class:`Buffer`; index: the first chunk; size: chunks.

    Raises:
        Nothing: made by :meth:`Program.chunk`, which checks the rank, buffer and indices.

    Source: docs/language.md, "Buffers and chunks"; MSCCLang (msccl-tools ``Ref``: copy, reduce, split, group).

    >>> from directcoll.lang.program import Program
    >>> Program("ring:4", "reduce_scatter").chunk(2, "input", 1, 2)
    Ref(rank 2, input[1:3])
    """

    prog: Any  # the Program (directcoll.lang.program) that made it
    rank: int
    buffer: Buffer
    index: int
    size: int = 1

    @property
    def name(self) -> str:
        """``input[3]``, or ``input[3:5]`` for several chunks. Raises: Nothing. Source: docs/language.md, "Errors"."""
        span = str(self.index) if self.size == 1 else f"{self.index}:{self.index + self.size}"
        return f"{self.buffer.value}[{span}]"

    def __repr__(self) -> str:
        return f"Ref(rank {self.rank}, {self.name})"

    def copy(self, dst: int, buffer=None, index: int | None = None, *, step: int | None = None, ch: int = 0,
             sendtb: int = -1, recvtb: int = -1) -> Ref:
        """Copy these chunks to rank ``dst`` (the same rank: a local copy), into ``buffer`` at ``index``.

        Args:
            dst: the receiving rank.
            buffer, index: where they land (MSCCLang's defaults: neither given, the same place of ``dst``'s buffers,
                :meth:`Program.same_place`; a buffer without an index: the same index, or for scratch the first
                chunk after those ``dst``'s scratch holds so far).
            step: the step (default: the earliest the data allows; docs/language.md, "Steps").
            ch: the channel; operations on different channels stay separate transfers.
            sendtb, recvtb: MSCCLang's thread blocks, accepted and ignored (the export assigns thread blocks).

        Returns:
            The :class:`Ref` of the copies on ``dst`` (a local copy onto the same chunks does nothing and returns
            this reference, as in MSCCLang).

        Raises:
            ProgramError: a rank, buffer or index outside the program, a negative step, or a copy in a step where
                ``step`` names one before the data is written (found when the program is compiled).

        Source: docs/language.md, "Operations"; MSCCLang (msccl-tools ``Ref.copy``).

        >>> from directcoll.lang.program import Program
        >>> prog = Program("ring:3", "allgather")
        >>> prog.chunk(0, Buffer.input, 0).copy(1, Buffer.output, 0)
        Ref(rank 1, output[0])
        """
        return self.send(dst, buffer, index, step=step, ch=ch)

    def reduce(self, other: Ref, *, step: int | None = None, ch: int = 0, sendtb: int = -1, recvtb: int = -1
               ) -> Ref:
        """Add ``other``'s chunks (on its rank) into these: this rank receives and reduces (MSCCLang's
        ``c.reduce(other)``).

        Returns:
            This :class:`Ref`.

        Raises:
            ProgramError: ``other`` of another program or of another size, a reduction in a collective that only
                moves data (allgather, broadcast, all-to-all), a chunk reduced into itself, a negative step.

        Source: docs/language.md, "Operations"; MSCCLang (msccl-tools ``Ref.reduce``).

        >>> from directcoll.lang.program import Program
        >>> prog = Program("ring:2", "allreduce")
        >>> prog.chunk(1, Buffer.input, 0).reduce(prog.chunk(0, Buffer.input, 0))
        Ref(rank 1, input[0])
        """
        if not isinstance(other, Ref) or other.prog is not self.prog:
            raise ProgramError(f"reduce() takes a chunk of the same program (prog.chunk(...)), got {other!r}",
                               rank=self.rank, chunk=self.name)
        if other.size != self.size:
            raise ProgramError(f"reduces {other.size} chunk(s) of rank {other.rank} ({other.name}) into {self.size}",
                               rank=self.rank, chunk=self.name)
        self.prog.record(REDUCE, other, self, step, ch)
        return self

    def send(self, dst: int, buffer=None, index: int | None = None, *, reduce: bool = False,
             step: int | None = None, ch: int = 0) -> Ref:
        """Send these chunks to rank ``dst``: copied there, or with ``reduce`` added into the chunks there (the
        sender's spelling of :meth:`reduce`). ``buffer`` and ``index`` default as in :meth:`copy`.

        Returns:
            The :class:`Ref` of the chunks on ``dst``.

        Raises:
            ProgramError: as :meth:`copy` and :meth:`reduce`.

        Source: docs/language.md, "Operations".

        >>> from directcoll.lang.program import Program
        >>> prog = Program("ring:2", "allreduce")
        >>> prog.chunk(0, Buffer.input, 0).send(1, reduce=True)
        Ref(rank 1, input[0])
        """
        prog = self.prog
        index = None if index == -1 else index
        if buffer is None and index is None:
            there = prog.same_place(integer(dst, "rank", prog.name), self)
        else:
            target = Buffer.parse(buffer) if buffer is not None else self.buffer
            if index is None:
                index = prog.scratch_size(dst) if target is Buffer.scratch else self.index
            there = prog.chunk(dst, target, index, self.size)
        if not reduce and there.rank == self.rank and prog.cells(there) == prog.cells(self):
            return self  # a local copy onto itself: nothing to do (MSCCLang returns as well)
        prog.record(REDUCE if reduce else COPY, self, there, step, ch)
        return there

    def split(self, num: int) -> list[Ref]:
        """These chunks cut into ``num`` equal references (MSCCLang's ``split``).

        Returns:
            ``num`` :class:`Ref` of ``size / num`` chunks each.

        Raises:
            ProgramError: ``num`` does not divide the size.

        Source: docs/language.md, "Buffers and chunks"; MSCCLang (msccl-tools ``Ref.split``).

        >>> from directcoll.lang.program import Program
        >>> Program("ring:2", "allreduce", chunk_factor=4).chunk(0, Buffer.input, 0, 4).split(2)
        [Ref(rank 0, input[0:2]), Ref(rank 0, input[2:4])]
        """
        if num < 1 or self.size % num:
            raise ProgramError(f"cannot split {self.size} chunk(s) into {num} equal parts", rank=self.rank,
                               chunk=self.name)
        part = self.size // num
        return [Ref(self.prog, self.rank, self.buffer, self.index + i * part, part) for i in range(num)]

    def group(self, other: Ref) -> Ref:
        """The chunks from the first of these and ``other`` to the last of both (MSCCLang's ``group``).

        Returns:
            A :class:`Ref` on the same rank and buffer.

        Raises:
            ProgramError: ``other`` on another rank or buffer.

        Source: docs/language.md, "Buffers and chunks"; MSCCLang (msccl-tools ``Ref.group``).

        >>> from directcoll.lang.program import Program
        >>> prog = Program("ring:2", "allreduce", chunk_factor=4)
        >>> prog.chunk(0, Buffer.input, 2).group(prog.chunk(0, Buffer.input, 0))
        Ref(rank 0, input[0:3])
        """
        if other.rank != self.rank or other.buffer is not self.buffer:
            raise ProgramError(f"cannot group {other.name} of rank {other.rank} with these chunks: only chunks of "
                               "one rank's one buffer group", rank=self.rank, chunk=self.name)
        lo, hi = min(self.index, other.index), max(self.index + self.size, other.index + other.size)
        return Ref(self.prog, self.rank, self.buffer, lo, hi - lo)
