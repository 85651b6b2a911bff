"""Compiling a program of the schedule language: run it on symbols step by step, then lower it to the IR.

Every cell of every rank's buffer holds a symbol: which chunk of the collective it carries (the IR block it
started as) and whose contributions it sums (a bit per rank), or nothing. Steps run as the IR runs them
(docs/architecture.md, "Schedule IR"): every operation of a step reads what the steps before left, then the copies
land, then the reductions add. The first mistake stops the run with one
:class:`~directcoll.errors.ProgramError` line naming the step, the rank and the chunk:

- a rank sends (or copies, or reduces from) a chunk it does not hold: the cell holds nothing yet;
- a reduction counts a contribution twice: the two operands share a rank's contribution (or mixes two chunks);
- a rank is left short: at the end a cell the collective defines lacks contributions, or holds nothing, or holds
  another chunk (MPI 4.1 standard, Ch. 6, for what each collective defines).

Two copies into one cell in one step are refused as the IR refuses them. Then the operations of a step with the
same sender, receiver, kind and channel become one transfer (its pieces the runs of consecutive chunks), the
schedule is built (the IR's structural checks) and, by default, the exact verifier runs it on random words.

Source: docs/language.md, "Errors" and "How a program becomes a schedule"; docs/verification.md (the verifier's
step, rank and interval, which the checks here name in the program's words).

>>> from directcoll.lang.program import Program
>>> prog = Program("ring:3", "allgather")
>>> prog.chunk(0, "output", 1).copy(2) and None
>>> execute(prog)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
directcoll.errors.ProgramError: program: step 0, rank 0, chunk output[1]: rank 0 sends it to rank 2 but does not ...
"""

from __future__ import annotations

from itertools import groupby
from typing import Any

import numpy as np

from directcoll.errors import ProgramError
from directcoll.schedule.ir import COPY, Collective, Schedule, ScheduleBuilder
from directcoll.verify import verify as verify_schedule

#: ranks listed in a message before it says "..."
SHOWN = 8


def _ranks(mask: int, n: int) -> str:
    """The ranks of a bit mask, as ``rank 3`` or ``ranks 0, 2, 5 ...``."""
    ranks = [r for r in range(n) if mask >> r & 1]
    text = ", ".join(map(str, ranks[:SHOWN])) + (" ..." if len(ranks) > SHOWN else "")
    return f"rank{'s' if len(ranks) > 1 else ''} {text}"


class Symbols:
    """What every cell of every rank holds while a program runs: (chunk, contributions) or None.

    Attributes:
        prog: the :class:`~directcoll.lang.program.Program`; full: the bit mask of every rank.
        state: (rank, cell) -> symbol, for the cells written so far; last: (rank, cell) -> the last step writing it.

    Raises:
        Nothing: made by :func:`execute`.

    Source: docs/language.md, "Errors"; the collectives' definitions (MPI 4.1 standard, Ch. 6).

    >>> from directcoll.lang.program import Program
    >>> s = Symbols(Program("ring:4", "allgather"))
    >>> s.get(2, 2), s.get(2, 1), s.expected(0, 3)
    ((2, 4), None, (3, 8))
    """

    def __init__(self, prog: Any) -> None:  # a directcoll.lang.program.Program
        self.prog = prog
        self.full = (1 << prog.num_ranks) - 1
        self.state: dict[tuple[int, int], tuple[int, int] | None] = {}
        self.last: dict[tuple[int, int], int] = {}

    def initial(self, rank: int, cell: int) -> tuple[int, int] | None:
        """What cell ``cell`` of ``rank`` holds before the first step (scratch: nothing).

        Returns:
            (block, mask of contributing ranks) or None.

        Raises:
            Nothing: arithmetic.

        Source: MPI 4.1 standard, Ch. 6 (every rank contributes its vector to a reduction; an allgather's block,
        a broadcast's vector, an all-to-all's block start at one rank).
        """
        p = self.prog
        if cell >= p.nblocks:
            return None
        n, k, c = p.num_ranks, p.chunk_factor, p.collective
        holder = rank  # a reduction: every rank contributes every chunk
        if c is Collective.ALLGATHER:
            holder = cell // k
        elif c is Collective.BROADCAST:
            holder = p.root
        elif c is Collective.ALLTOALL:
            holder = cell // (n * k)
        return (cell, 1 << rank) if holder == rank else None

    def expected(self, rank: int, cell: int) -> tuple[int, int] | None:
        """What the collective defines for cell ``cell`` of ``rank`` at the end (None: nothing, not checked).

        Returns:
            (block, mask) or None.

        Raises:
            Nothing: arithmetic.

        Source: MPI 4.1 standard, Ch. 6 (MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather, MPI_Alltoall,
        MPI_Bcast, MPI_Reduce).
        """
        p = self.prog
        if cell >= p.nblocks:
            return None
        n, k, c = p.num_ranks, p.chunk_factor, p.collective
        if c is Collective.ALLREDUCE or (c is Collective.REDUCE_SCATTER and cell // k == rank) or \
                (c is Collective.REDUCE and rank == p.root):
            return cell, self.full
        if c is Collective.ALLGATHER:
            return cell, 1 << (cell // k)
        if c is Collective.BROADCAST:
            return cell, 1 << p.root
        if c is Collective.ALLTOALL and (cell // k) % n == rank:
            return cell, 1 << (cell // (n * k))
        return None

    def get(self, rank: int, cell: int) -> tuple[int, int] | None:
        """The symbol cell ``cell`` of ``rank`` holds now. Raises: Nothing. Source: docs/language.md, "Errors"."""
        key = (rank, cell)
        return self.state[key] if key in self.state else self.initial(rank, cell)


def _error(prog: Any, message: str, step: int, rank: int, chunk: str) -> ProgramError:
    return ProgramError(message, step=step, rank=rank, chunk=chunk, program=prog.name)


def _arrival(prog: Any, rank: int, cell: int, after: int) -> str:
    """When cell ``cell`` of ``rank`` is first written at or after step ``after``, in words."""
    steps = [op.step for op in prog.ops if op.dst == rank and cell in op.dst_cells and op.step >= after]
    if not steps:
        return f"no step brings it to rank {rank}"
    first = min(steps)
    if first == after:
        return f"it arrives in this step {first}, and a step reads what the steps before it left; send it in step " \
               f"{first + 1} or later"
    return f"it arrives in step {first}; send it in step {first + 1} or later"


def run(prog: Any) -> Symbols:
    """Run ``prog`` on symbols step by step (module docstring) and check what every rank ends with.

    Returns:
        The final :class:`Symbols`.

    Raises:
        ProgramError: the first mistake: a chunk sent before it is held, a contribution counted twice, two chunks
            mixed, two copies into one cell in one step, a reduction into a cell that holds nothing, or a rank left
            short at the end; the message names the step, the rank and the chunk.

    Source: docs/language.md, "Errors"; docs/architecture.md, "Schedule IR" (bulk-synchronous steps: copies land
    before reductions add).

    >>> from directcoll.lang.program import Program
    >>> prog = Program("ring:2", "allreduce")
    >>> for r in (0, 1):  # both in step 0: each adds what the other held before it
    ...     _ = prog.chunk(1 - r, "input", 0).reduce(prog.chunk(r, "input", 0), step=0)
    >>> run(prog).get(0, 0)
    (0, 3)
    """
    sym = Symbols(prog)
    n = prog.num_ranks
    for step, group in groupby(sorted(prog.ops, key=lambda op: (op.step, op.seq)), key=lambda op: op.step):
        ops = list(group)
        incoming = []
        for op in ops:
            values = []
            for i, cell in enumerate(op.src_cells):
                value = sym.get(op.src, cell)
                if value is None:
                    ref = op.src_ref
                    verb = "copies it" if op.src == op.dst else f"sends it to rank {op.dst}"
                    when = _arrival(prog, op.src, cell, step)
                    raise _error(prog, f"rank {op.src} {verb} but does not hold it ({when})", step, op.src,
                                 f"{ref.buffer.value}[{ref.index + i}]")
                values.append(value)
            incoming.append(values)
        copied: dict[tuple[int, int], int] = {}
        for op, values in zip(ops, incoming, strict=True):
            if op.kind != COPY:
                continue
            for i, (cell, value) in enumerate(zip(op.dst_cells, values, strict=True)):
                key = (op.dst, cell)
                if key in copied:
                    raise _error(prog, f"two copies write it in one step (from rank {copied[key]} and rank {op.src}); "
                                       "a step's copies land at once", step, op.dst, _name(op, i))
                copied[key] = op.src
                sym.state[key], sym.last[key] = value, step
        for op, values in zip(ops, incoming, strict=True):
            if op.kind == COPY:
                continue
            for i, (cell, value) in enumerate(zip(op.dst_cells, values, strict=True)):
                key = (op.dst, cell)
                here = sym.get(op.dst, cell)
                source = f"{op.src_ref.buffer.value}[{op.src_ref.index + i}] of rank {op.src}"
                if here is None:
                    raise _error(prog, f"rank {op.dst} reduces {source} into it, but it holds nothing yet (copy into "
                                       "it first)", step, op.dst, _name(op, i))
                if here[0] != value[0]:
                    raise _error(prog, f"rank {op.dst} reduces {source} into it, but they hold different chunks "
                                       f"({prog.name_of(op.src, value[0])} and {prog.name_of(op.dst, here[0])} of "
                                       "the vector)", step, op.dst, _name(op, i))
                if here[1] & value[1]:
                    raise _error(prog, f"rank {op.dst} counts {_ranks(here[1] & value[1], n)}'s contribution twice: "
                                       f"it holds {_ranks(here[1], n)} and {source} brings {_ranks(value[1], n)}",
                                 step, op.dst, _name(op, i))
                sym.state[key], sym.last[key] = (here[0], here[1] | value[1]), step
    _check_end(prog, sym)
    return sym


def _name(op, i: int) -> str:
    ref = op.dst_ref
    return f"{ref.buffer.value}[{ref.index + i}]"


def _check_end(prog: Any, sym: Symbols) -> None:
    """The first rank (in rank order) whose result differs from the collective's definition."""
    n, end = prog.num_ranks, prog.num_steps
    for rank in range(n):
        for cell in range(prog.nblocks):
            want = sym.expected(rank, cell)
            if want is None:
                continue
            have = sym.get(rank, cell)
            if have == want:
                continue
            step = sym.last.get((rank, cell))
            when = f"last written in step {step}" if step is not None else "never written; the program has no " \
                "steps" if not end else f"never written; the program ends after step {end - 1}"
            if have is None:
                what = "it never receives the chunk"
            elif have[0] != want[0]:
                what = f"it holds the data of {prog.name_of(rank, have[0])} instead"
            else:
                missing = want[1] & ~have[1]
                what = f"the chunk lacks the contributions of {_ranks(missing, n)}"
            raise _error(prog, f"the program leaves rank {rank} short: {what} ({when})",
                         max(end - 1, 0) if step is None else step, rank, prog.name_of(rank, cell))


def lower(prog: Any) -> Schedule:
    """The program's operations as a :class:`~directcoll.schedule.ir.Schedule`: one transfer per step, sender,
    receiver, kind and channel (in the order the program first names them), its pieces the runs of consecutive
    chunks, landing displaced where the receiver's chunks lie elsewhere in its buffer.

    Returns:
        The schedule (N ranks, the program's data blocks plus the scratch it used), meta: algorithm (the program's
        name), language, chunk_factor, topology, and root for broadcast and reduce.

    Raises:
        ScheduleError: the IR's structural checks (:meth:`~directcoll.schedule.ir.Schedule.validate`).
        ResourceError: the schedule would outgrow the memory budget.

    Source: docs/language.md, "How a program becomes a schedule"; docs/architecture.md, "Schedule IR".

    >>> from directcoll.lang.program import Program
    >>> prog = Program("ring:2", "allgather", chunk_factor=2)
    >>> prog.chunk(0, "input", 0, 2).copy(1) and prog.chunk(1, "input", 0, 2).copy(0) and None
    >>> s = lower(prog)
    >>> s.num_transfers, s.num_pieces, s.transfer_size.tolist()
    (2, 2, [0.5, 0.5])
    """
    groups: dict[tuple[int, int, int, int, int], list[tuple[int, int]]] = {}
    for op in sorted(prog.ops, key=lambda op: (op.step, op.seq)):
        pairs = groups.setdefault((op.step, op.src, op.dst, op.kind, op.ch), [])
        pairs.extend(zip(op.src_cells, op.dst_cells, strict=True))
    cols: list[list[int]] = [[] for _ in range(5)]
    start: list[int] = []
    stop: list[int] = []
    shift: list[int] = []
    for (step, src, dst, kind, _ch), pairs in groups.items():
        pairs.sort()
        runs = 0
        for a, b in pairs:
            if runs and a == stop[-1] and b - a == shift[-1]:
                stop[-1] += 1
                continue
            start.append(a)
            stop.append(a + 1)
            shift.append(b - a)
            runs += 1
        for col, value in zip(cols, (step, src, dst, kind, runs), strict=True):
            col.append(value)
    nscratch = max((c + 1 - prog.nblocks for op in prog.ops for c in (*op.src_cells, *op.dst_cells)
                    if c >= prog.nblocks), default=0)
    b = ScheduleBuilder(prog.collective, prog.num_ranks, prog.nblocks,
                        what=f"program {prog.name!r} ({prog.collective.value} on {prog.num_ranks:,} ranks)")
    if start:
        b.add_pieces(*(np.asarray(c, np.int64) for c in cols), np.asarray(start), np.asarray(stop),
                     np.asarray(shift))
    meta = {"algorithm": prog.name, "language": "directcoll.lang", "chunk_factor": prog.chunk_factor,
            "topology": prog.topology.spec, **prog.meta}
    if prog.root is not None:
        meta["root"] = prog.root
    return b.build(meta=meta, nscratch=nscratch)


def execute(prog: Any, *, verify: bool = True) -> Schedule:
    """Compile ``prog``: :func:`run` (the language's checks), :func:`lower` (the IR's checks) and, with
    ``verify``, the exact verifier (:func:`directcoll.verify.verify`), whose first failure would be reported in
    the program's words.

    Returns:
        The checked :class:`~directcoll.schedule.ir.Schedule`.

    Raises:
        ProgramError: the program's first mistake (step, rank, chunk).
        ScheduleError: the IR's checks. ResourceError: verification over the memory budget.

    Source: docs/language.md, "Errors"; docs/verification.md.

    >>> from directcoll.lang.program import Program
    >>> prog = Program("ring:2", "broadcast")
    >>> prog.chunk(0, "input", 0).copy(1) and None
    >>> execute(prog)
    Schedule(broadcast, program, N=2, nblocks=1, steps=1, transfers=1)
    """
    run(prog)
    schedule = lower(prog)
    if verify:
        result = verify_schedule(schedule)
        if not result.ok:
            f = result.failure
            top, _, bottom = f.interval[0].partition("/")
            cell = int(top) // int(bottom or 1)
            raise _error(prog, f"the exact verifier finds: {f.reason}", max(f.step, 0), f.rank,
                         prog.name_of(f.rank, cell))
    return schedule
