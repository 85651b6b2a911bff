"""Programs of the schedule language: ranks, buffers and chunks, and the copies and reductions between them.

A :class:`Program` is written for one network and one collective, as in MSCCLang (msccl-tools): every rank has an
``input`` and an ``output`` buffer of chunks (aliased as MSCCLang's in-place collectives alias them) and a
``scratch`` buffer that grows as it is used. :func:`chunk` names chunks of a rank's buffer (a :class:`Ref`);
``ref.copy(dst, ...)`` sends them to another rank (or moves them within one), ``ref.reduce(other)`` adds ``other``'s
chunks into ``ref``'s, ``ref.send(dst, ..., reduce=True)`` is the same reduction written from the sender.

The IR is bulk-synchronous, so every operation has a step: the ``step=`` it is given, else the earliest step its
data allows (one after the last step that wrote the chunks it reads, and after the steps that wrote or read the
chunks it writes), which is how MSCCLang orders operations by their dependencies. :meth:`Program.compile` checks
the program step by step (:mod:`directcoll.lang.execute`): a rank that sends a chunk it does not hold, a
reduction that counts a contribution twice and a rank left short raise :class:`~directcoll.errors.ProgramError`
naming the step, the rank and the chunk; the schedule then goes through the IR's checks and the exact verifier.

Buffers and chunk indices (N ranks, chunk factor k; MSCCLang's ``get_buffer_index``):

============== ==================== =================== =================================================
collective     input                output              on rank r
============== ==================== =================== =================================================
allreduce      k chunks             the same k chunks   the vector: chunk i of every rank
broadcast      k chunks             the same k chunks   the root's chunks reach every rank
reduce         k chunks             the same k chunks   the root ends with the sum
reduce_scatter N k chunks           k chunks            output[c] is input[r k + c]
allgather      k chunks             N k chunks          input[c] is output[r k + c]
alltoall       N k chunks           N k chunks          input[j k + c] goes to output[r k + c] of rank j
============== ==================== =================== =================================================

Source: docs/language.md; MSCCLang (Cowan et al., ASPLOS'23; msccl-tools ``msccl.language``) for the vocabulary;
docs/architecture.md, "Schedule IR" for the semantics.

>>> prog = Program("ring:4", "allgather")
>>> for step in range(3):  # ring allgather: rank r forwards chunk r - step to r + 1
...     for r in range(4):
...         _ = prog.chunk(r, Buffer.output, (r - step) % 4).copy((r + 1) % 4)
>>> prog.compile()
Schedule(allgather, program, N=4, nblocks=4, steps=3, transfers=12)
"""

from __future__ import annotations

import contextvars

from directcoll.errors import ProgramError
from directcoll.lang.chunks import Buffer, Op, Ref, integer
from directcoll.schedule.ir import REDUCE, Collective, Schedule
from directcoll.topology.model import Topology
from directcoll.topology.spec import parse

#: the program a ``with Program(...)`` block is writing (:func:`chunk`, :func:`XML` and :func:`Check` use it)
_CURRENT: contextvars.ContextVar[tuple] = contextvars.ContextVar("directcoll_lang_programs", default=())
#: the collectives whose data only moves (a reduction there is a mistake)
GATHERING = (Collective.ALLGATHER, Collective.BROADCAST, Collective.ALLTOALL)


class Program:
    """A program of the schedule language for one collective on one network (MSCCLang's ``MSCCLProgram``).

    Args:
        topology: a :class:`~directcoll.topology.model.Topology` or a spec (``torus:8``); its compute nodes are
            the ranks.
        collective: allreduce (default), reduce_scatter, allgather, alltoall, broadcast or reduce.
        chunk_factor: MSCCLang's chunk factor k: chunks of the vector (allreduce, broadcast, reduce), or of each
            rank's part (reduce_scatter, allgather, alltoall); the buffer table of the module docstring.
        name: the schedule's algorithm name (``meta["algorithm"]``) and the prefix of its errors.
        root: broadcast and reduce: the root rank (default 0).

    Used as a context (``with Program(...) as prog:``), it is the program :func:`chunk`, :func:`XML` and
    :func:`Check` write and read, as in MSCCLang.

    Raises:
        ProgramError: a chunk factor < 1, a root outside the ranks or given to a collective without one.
        SpecError, TopologyError: a spec that does not parse. ScheduleError: an unknown collective.

    Source: docs/language.md; MSCCLang (msccl-tools ``MSCCLProgram``); docs/architecture.md, "Schedule IR".

    >>> with Program("ring:4", "broadcast", root=1) as prog:
    ...     chunk(1, Buffer.input, 0).copy(2).copy(3).copy(0) and None
    >>> prog.compile().num_steps
    3
    """

    def __init__(self, topology, collective="allreduce", *, chunk_factor: int = 1, name: str = "program",
                 root: int | None = None) -> None:
        self.topology: Topology = topology if isinstance(topology, Topology) else parse(str(topology))
        self.collective = Collective.parse(collective)
        self.name = str(name)
        n = self.num_ranks = int(self.topology.num_compute)
        k = self.chunk_factor = integer(chunk_factor, "chunk_factor", self.name, least=1)
        self.root: int | None = None
        if self.collective.rooted:
            self.root = integer(0 if root is None else root, "root", self.name, least=0)
            if self.root >= n:
                raise ProgramError(f"the root must be a rank 0..{n - 1}, got {root!r}", program=self.name)
        elif root is not None:
            raise ProgramError(f"a {self.collective.value} has no root (root={root!r}); only broadcast and reduce "
                               "have one", program=self.name)
        c = self.collective
        self.nblocks = {Collective.REDUCE_SCATTER: n * k, Collective.ALLGATHER: n * k,
                        Collective.ALLTOALL: n * n * k}.get(c, k)
        self.sizes = {Buffer.input: {Collective.REDUCE_SCATTER: n * k, Collective.ALLTOALL: n * k}.get(c, k),
                      Buffer.output: {Collective.ALLGATHER: n * k, Collective.ALLTOALL: n * k}.get(c, k)}
        self.ops: list[Op] = []
        self.meta: dict = {}
        self._scratch: dict[int, int] = {}
        self._written: dict[tuple[int, int], int] = {}  # (rank, cell) -> the last step that writes it
        self._read: dict[tuple[int, int], int] = {}     # (rank, cell) -> the last step that reads it
        self._compiled: tuple[int, Schedule] | None = None
        self._tokens: list = []

    # -- naming -------------------------------------------------------------------------------------------------
    def __repr__(self) -> str:
        return (f"Program({self.name!r}, {self.collective.value} on {self.topology.spec}, chunk_factor="
                f"{self.chunk_factor}, {len(self.ops)} operations)")

    def __enter__(self) -> Program:
        self._tokens.append(_CURRENT.set((*_CURRENT.get(), self)))
        return self

    def __exit__(self, *exc) -> None:
        _CURRENT.reset(self._tokens.pop())

    @property
    def num_steps(self) -> int:
        """Steps so far: one more than the largest step of an operation (0 without any). Raises: Nothing.
        Source: docs/architecture.md, "Schedule IR" (bulk-synchronous steps)."""
        return 1 + max((op.step for op in self.ops), default=-1)

    def scratch_size(self, rank: int) -> int:
        """Chunks of ``rank``'s scratch buffer used so far (where a copy into scratch without an index lands).

        Returns:
            An int >= 0.

        Raises:
            Nothing: reads a table.

        Source: docs/language.md, "Buffers and chunks"; MSCCLang (``BufferSlice.instance_size``).

        >>> prog = Program("ring:2", "allreduce")
        >>> prog.chunk(0, Buffer.input, 0).copy(1, Buffer.scratch) and prog.scratch_size(1)
        1
        """
        return self._scratch.get(int(rank), 0)

    def chunk(self, rank: int, buffer, index: int, size: int = 1) -> Ref:
        """The reference to chunks ``index .. index + size - 1`` of ``buffer`` on ``rank`` (MSCCLang's
        ``chunk(rank, buffer, index, size)``).

        Returns:
            A :class:`Ref`.

        Raises:
            ProgramError: a rank outside 0..N-1, an unknown buffer, indices outside the buffer (input and output
                have the sizes of the module docstring's table; scratch any index >= 0), or size < 1.

        Source: docs/language.md, "Buffers and chunks"; MSCCLang (msccl-tools ``chunk``).

        >>> Program("ring:4", "allgather").chunk(0, "input", 1)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        directcoll.errors.ProgramError: program: rank 0, chunk input[1]: outside the input buffer, which holds 1 ...
        """
        buf = Buffer.parse(buffer)
        rank, index = integer(rank, "rank", self.name), integer(index, "index", self.name)
        size = integer(size, "size", self.name)
        ref = Ref(self, rank, buf, index, size)
        if not 0 <= rank < self.num_ranks:
            raise ProgramError(f"rank {rank} is not a rank of {self.topology.spec} (0..{self.num_ranks - 1})",
                               chunk=ref.name, program=self.name)
        if size < 1:
            raise ProgramError(f"a reference holds at least one chunk, got size {size}", rank=rank, chunk=ref.name,
                               program=self.name)
        top = self.sizes.get(buf)
        if index < 0 or (top is not None and index + size > top):
            where = f"which holds {top} chunk(s) ({buf.value}[0:{top}])" if top is not None else "indices start at 0"
            raise ProgramError(f"outside the {buf.value} buffer, {where}", rank=rank, chunk=ref.name,
                               program=self.name)
        return ref

    def cells(self, ref: Ref) -> tuple[int, ...]:
        """The coordinates of ``ref``'s chunks in the IR's buffer of its rank (scratch after the data blocks).

        Returns:
            A tuple of ints, one per chunk (blocks of the IR; docs/language.md, "How a program becomes a schedule").

        Raises:
            Nothing: ``ref`` was checked when it was made.

        Source: docs/language.md, "How a program becomes a schedule"; docs/architecture.md, "Schedule IR".

        >>> prog = Program("ring:4", "alltoall")
        >>> prog.cells(prog.chunk(1, Buffer.input, 2)), prog.cells(prog.chunk(2, Buffer.output, 1))
        ((6,), (6,))
        """
        n, k, r, c = self.num_ranks, self.chunk_factor, ref.rank, self.collective
        out = []
        for i in range(ref.index, ref.index + ref.size):
            if ref.buffer is Buffer.scratch:
                out.append(self.nblocks + i)
            elif c is Collective.REDUCE_SCATTER and ref.buffer is Buffer.output:
                out.append(r * k + i)
            elif c is Collective.ALLGATHER and ref.buffer is Buffer.input:
                out.append(r * k + i)
            elif c is Collective.ALLTOALL:
                peer, part = divmod(i, k)
                out.append(((r * n + peer) if ref.buffer is Buffer.input else (peer * n + r)) * k + part)
            else:
                out.append(i)
        return tuple(out)

    def index_of(self, rank: int, buffer, cell: int) -> int | None:
        """The index at which ``rank``'s ``buffer`` holds cell ``cell`` of the IR's buffer, or None where it does not
        (the inverse of :meth:`cells`).

        Returns:
            An int or None.

        Raises:
            ProgramError: an unknown buffer.

        Source: docs/language.md, "Buffers and chunks".

        >>> prog = Program("ring:4", "allgather")
        >>> prog.index_of(2, "input", 2), prog.index_of(2, "input", 3), prog.index_of(2, "output", 3)
        (0, None, 3)
        """
        buf = Buffer.parse(buffer)
        n, k, c = self.num_ranks, self.chunk_factor, self.collective
        if buf is Buffer.scratch:
            return cell - self.nblocks if cell >= self.nblocks else None
        if not 0 <= cell < self.nblocks:
            return None
        if c is Collective.ALLTOALL:
            block, part = divmod(cell, k)
            src, dst = divmod(block, n)
            if buf is Buffer.input:
                return dst * k + part if src == rank else None
            return src * k + part if dst == rank else None
        if (c is Collective.REDUCE_SCATTER and buf is Buffer.output) or \
                (c is Collective.ALLGATHER and buf is Buffer.input):
            return cell - rank * k if 0 <= cell - rank * k < k else None
        return cell

    def same_place(self, rank: int, ref: Ref) -> Ref:
        """The chunks of ``rank`` at the place ``ref``'s chunks have on their rank (MSCCLang's "the same place in
        the next GPU": where :meth:`Ref.copy` lands without a buffer and index), named in ``ref``'s buffer where
        that buffer has them on ``rank``, else in another.

        Returns:
            A :class:`Ref` on ``rank``.

        Raises:
            ProgramError: ``rank`` has no buffer holding that place (an all-to-all's relay: give a scratch index).

        Source: docs/language.md, "Operations"; MSCCLang (msccl-tools ``Ref.copy`` without buffer and index).

        >>> prog = Program("ring:4", "allgather")
        >>> prog.same_place(3, prog.chunk(1, Buffer.input, 0))
        Ref(rank 3, output[1])
        """
        cells = self.cells(ref)
        for buf in (ref.buffer, *Buffer):
            index = self.index_of(rank, buf, cells[0])
            if index is not None:
                there = Ref(self, rank, buf, index, ref.size)
                top = self.sizes.get(buf)
                if (top is None or index + ref.size <= top) and self.cells(there) == cells:
                    return self.chunk(rank, buf, index, ref.size)
        raise ProgramError(f"rank {rank} has no chunk at the place {ref.name} has on rank {ref.rank}; give the "
                           "buffer and index it goes to (a scratch chunk for a relay)", rank=ref.rank,
                           chunk=ref.name, program=self.name)

    def name_of(self, rank: int, cell: int) -> str:
        """The name a program gives cell ``cell`` of ``rank``'s buffer: ``scratch[i]``, else the result's name
        (``output[...]`` for reduce_scatter at the owner, allgather and all-to-all; ``input[...]`` otherwise).

        Returns:
            A str such as ``output[3]``.

        Raises:
            Nothing: arithmetic.

        Source: docs/language.md, "Errors".

        >>> Program("ring:4", "reduce_scatter", chunk_factor=2).name_of(2, 5)
        'output[1]'
        """
        n, k, c = self.num_ranks, self.chunk_factor, self.collective
        if cell >= self.nblocks:
            return f"scratch[{cell - self.nblocks}]"
        if c is Collective.REDUCE_SCATTER and cell // k == rank:
            return f"output[{cell - rank * k}]"
        if c is Collective.ALLTOALL:
            block, part = divmod(cell, k)
            src, dst = divmod(block, n)
            if dst == rank:
                return f"output[{src * k + part}]"
            if src == rank:
                return f"input[{dst * k + part}]"
            return f"block {cell}"
        return f"{'output' if c is Collective.ALLGATHER else 'input'}[{cell}]"

    # -- operations --------------------------------------------------------------------------------------------
    def record(self, kind: int, src: Ref, dst: Ref, step: int | None = None, ch: int = 0) -> Op:
        """Add the operation ``src`` -> ``dst`` (``kind`` 0 copy, 1 reduce) at ``step`` (None: the earliest step
        the data allows) on channel ``ch``; :meth:`Ref.copy`, :meth:`Ref.reduce` and :meth:`Ref.send` call it.

        Returns:
            The :class:`Op` recorded.

        Raises:
            ProgramError: references of another program, sizes that differ, a reduction in a collective that only
                moves data, a chunk reduced into itself, a step or channel that is not an integer >= 0.

        Source: docs/language.md, "Steps".

        >>> prog = Program("ring:3", "allgather")
        >>> prog.record(0, prog.chunk(0, "input", 0), prog.chunk(1, "output", 0)).step
        0
        """
        if src.prog is not self or dst.prog is not self:
            raise ProgramError("an operation between chunks of different programs", rank=dst.rank, chunk=dst.name,
                               program=self.name)
        if src.size != dst.size:
            raise ProgramError(f"{src.size} chunk(s) of rank {src.rank} ({src.name}) into {dst.size}",
                               rank=dst.rank, chunk=dst.name, program=self.name)
        src_cells, dst_cells = self.cells(src), self.cells(dst)
        if kind == REDUCE and self.collective in GATHERING:
            raise ProgramError(f"rank {dst.rank} reduces {src.name} of rank {src.rank} into it, but a "
                               f"{self.collective.value} moves data and never adds it (use copy)", step=step,
                               rank=dst.rank, chunk=dst.name, program=self.name)
        if src.rank == dst.rank and set(src_cells) & set(dst_cells):
            raise ProgramError(f"rank {dst.rank} {'reduces' if kind == REDUCE else 'copies'} {src.name} into "
                               f"{dst.name}, which overlaps it", step=step, rank=dst.rank, chunk=dst.name,
                               program=self.name)
        ch = integer(0 if ch == -1 else ch, "channel", self.name, least=0)
        if step is None:
            step = self._earliest(kind, src.rank, src_cells, dst.rank, dst_cells)
        step = integer(step, "step", self.name, least=0)
        for cell in src_cells:
            self._read[(src.rank, cell)] = max(self._read.get((src.rank, cell), step), step)
        for cell in dst_cells:
            self._written[(dst.rank, cell)] = max(self._written.get((dst.rank, cell), step), step)
        if dst.buffer is Buffer.scratch:
            self._scratch[dst.rank] = max(self.scratch_size(dst.rank), dst.index + dst.size)
        op = Op(step, len(self.ops), int(kind), src.rank, dst.rank, src, dst, src_cells, dst_cells, ch)
        self.ops.append(op)
        return op

    def _earliest(self, kind: int, src: int, src_cells, dst: int, dst_cells) -> int:
        """The first step at which the data an operation reads is there and its destination is free: after every
        step that wrote what it reads, not before a step that reads what it overwrites, after a write of its
        destination (a reduction may join reductions of the same step and follow its copies)."""
        step = 0
        for cell in src_cells:
            if (w := self._written.get((src, cell))) is not None:
                step = max(step, w + 1)
        for cell in dst_cells:
            if (r := self._read.get((dst, cell))) is not None:
                step = max(step, r)
            if (w := self._written.get((dst, cell))) is not None:
                step = max(step, w if kind == REDUCE else w + 1)
        return step

    # -- results -----------------------------------------------------------------------------------------------
    def compile(self, *, verify: bool = True) -> Schedule:
        """The program as a schedule of the IR, checked: step by step for chunks sent before they are held,
        contributions counted twice and ranks left short (:func:`directcoll.lang.execute.execute`), then by the IR's
        structural checks and, with ``verify``, by the exact verifier.

        Returns:
            A :class:`~directcoll.schedule.ir.Schedule` whose meta names the algorithm (``name``), the topology,
            ``language: directcoll.lang`` and the chunk factor (and the root of a broadcast or reduce).

        Raises:
            ProgramError: the first mistake, one line naming its step, rank and chunk.
            ResourceError: verification over the memory budget.

        Source: docs/language.md, "Errors"; docs/verification.md.

        >>> Program("ring:2", "allreduce").compile()  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        directcoll.errors.ProgramError: program: step 0, rank 0, chunk input[0]: the program leaves rank 0 short: ...
        """
        if verify and self._compiled is not None and self._compiled[0] == len(self.ops):
            return self._compiled[1]  # verified already, and not written to since
        from directcoll.lang.execute import execute

        schedule = execute(self, verify=verify)
        if verify:
            self._compiled = (len(self.ops), schedule)
        return schedule

    def xml(self, **options) -> str:
        """The program as MSCCL XML (:func:`directcoll.export.msccl.export_msccl` of :meth:`compile`; ``options``
        such as ``proto="LL128"`` or ``path`` go there; the name defaults to the program's).

        Returns:
            The XML text.

        Raises:
            ProgramError: as :meth:`compile`. MscclLimitError, DirectcollError: as ``export_msccl``.

        Source: docs/export.md; MSCCLang's ``XML()``.

        >>> prog = Program("ring:2", "allgather")
        >>> prog.chunk(0, "input", 0).copy(1) and prog.chunk(1, "input", 0).copy(0) and None
        >>> 'coll="allgather"' in prog.xml()
        True
        """
        from directcoll.export.msccl import export_msccl

        return export_msccl(self.compile(), **{"name": self.name, **options})


def current() -> Program:
    """The program of the innermost ``with Program(...)`` block.

    Returns:
        A :class:`Program`.

    Raises:
        ProgramError: outside any such block.

    Source: docs/language.md, "Programs"; MSCCLang (the program in context).

    >>> with Program("ring:2") as prog:
    ...     current() is prog
    True
    """
    stack = _CURRENT.get()
    if not stack:
        raise ProgramError("no program is being written: call this inside `with Program(topology, collective) as "
                           "prog:` (or use prog.chunk(...))")
    return stack[-1]


def chunk(rank: int, buffer, index: int, size: int = 1) -> Ref:
    """MSCCLang's ``chunk(rank, buffer, index, size)``: :meth:`Program.chunk` of the program in context.

    Returns:
        A :class:`Ref`.

    Raises:
        ProgramError: outside a ``with Program(...)`` block, or as :meth:`Program.chunk`.

    Source: docs/language.md, "Programs"; MSCCLang (msccl-tools ``chunk``).

    >>> with Program("ring:2", "allreduce"):
    ...     chunk(1, Buffer.input, 0)
    Ref(rank 1, input[0])
    """
    return current().chunk(rank, buffer, index, size)


def XML(**options) -> None:  # noqa: N802 -- MSCCLang's spelling
    """Print the MSCCL XML of the program in context (MSCCLang's ``XML()``; ``options`` as :meth:`Program.xml`).

    Returns:
        None; the XML goes to standard output.

    Raises:
        ProgramError: outside a ``with Program(...)`` block, or as :meth:`Program.compile`. DirectcollError: as
        :meth:`Program.xml`.

    Source: docs/language.md, "MSCCLang"; docs/export.md.
    """
    print(current().xml(**options))


def Check() -> bool:  # noqa: N802 -- MSCCLang's spelling
    """Compile and verify the program in context (MSCCLang's ``Check()``).

    Returns:
        True when it implements its collective.

    Raises:
        ProgramError: outside a ``with Program(...)`` block, or the program's first mistake (step, rank, chunk).

    Source: docs/language.md, "Errors"; MSCCLang's ``Check()``.

    >>> with Program("ring:2", "allgather"):
    ...     _ = chunk(0, Buffer.input, 0).copy(1), chunk(1, Buffer.input, 0).copy(0)
    ...     Check()
    True
    """
    current().compile()
    return True


__all__ = ["GATHERING", "Buffer", "Check", "Op", "Program", "Ref", "XML", "chunk", "current", "integer"]
