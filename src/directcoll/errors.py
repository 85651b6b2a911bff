"""Exceptions raised by directcoll: every message names the offending input and what is accepted.

Every class derives from :class:`DirectcollError`; the input errors also derive from :class:`ValueError` and
the solver errors from :class:`RuntimeError`, so callers that catch the built-in classes keep working. The CLI
turns any :class:`DirectcollError` into one line on stderr and exit status 2.

Source: docs/architecture.md, "Quality bar" (bad input raises a clear error naming the input and what
would be accepted).

>>> issubclass(SpecError, DirectcollError) and issubclass(SpecError, ValueError)
True
>>> issubclass(SolverLimitError, SolverError) and issubclass(SolverError, RuntimeError)
True
"""


class DirectcollError(Exception):
    """Base class of every error directcoll raises on bad input.

    Raises:
        Nothing: an exception class; raised, never raising.

    Source: docs/architecture.md, "Quality bar".

    >>> try:
    ...     raise DirectcollError("cannot read size '3 apples'; use bytes like 1024")
    ... except DirectcollError as exc:
    ...     print(exc)
    cannot read size '3 apples'; use bytes like 1024
    """


class SpecError(DirectcollError, ValueError):
    """A topology spec string could not be parsed or names an impossible shape (also a :class:`ValueError`).

    Raises:
        Nothing: an exception class; raised by the topology spec parser (``directcoll.topology.spec``).

    Source: docs/architecture.md, "Topology" (specs) and "Quality bar".

    >>> isinstance(SpecError("torus:0x4"), ValueError)
    True
    """


class TopologyError(DirectcollError, ValueError):
    """A topology is unusable for the request (disconnected, wrong kind, node out of range); a :class:`ValueError`.

    Raises:
        Nothing: an exception class; raised by ``directcoll.topology`` and by algorithms that need a given shape.

    Source: docs/architecture.md, "Topology" and "Quality bar".

    >>> issubclass(TopologyError, DirectcollError)
    True
    """


class ScheduleError(DirectcollError, ValueError):
    """A schedule is malformed (ranks or pieces out of range, inconsistent arrays, bad collective).

    Also a :class:`ValueError`.

    Raises:
        Nothing: an exception class; raised by :class:`directcoll.schedule.ir.Schedule` validation and the passes.

    Source: docs/architecture.md, "Schedule IR".

    >>> issubclass(ScheduleError, ValueError)
    True
    """


class ProgramError(ScheduleError):
    """A program of the schedule language (:mod:`directcoll.lang`) is wrong: one line naming the step, the rank
    and the chunk (``step 2, rank 3, chunk input[5]: ...``), as the verifier names the step, rank and interval of a
    schedule; a :class:`ScheduleError`.

    Attributes:
        step, rank: where the mistake is (None where it has none, e.g. a rank outside the network).
        chunk: the chunk as the program names it (``input[5]``, ``scratch[0]``), or None.

    Raises:
        Nothing: an exception class; raised by :class:`directcoll.lang.Program` while a program is written and
        compiled.

    Source: docs/language.md, "Errors".

    >>> e = ProgramError("rank 1 sends it but does not hold it", step=0, rank=1, chunk="output[2]")
    >>> str(e), e.rank
    ('step 0, rank 1, chunk output[2]: rank 1 sends it but does not hold it', 1)
    """

    def __init__(self, message: str, *, step: int | None = None, rank: int | None = None,
                 chunk: str | None = None, program: str | None = None) -> None:
        self.step, self.rank, self.chunk, self.program = step, rank, chunk, program
        where = [f"step {step}" if step is not None else "", f"rank {rank}" if rank is not None else "",
                 f"chunk {chunk}" if chunk is not None else ""]
        head = ", ".join(w for w in where if w)
        text = f"{head}: {message}" if head else message
        super().__init__(f"{program}: {text}" if program else text)


class ScheduleFormatError(ScheduleError):
    """A schedule file could not be read (unknown format, version, or missing fields); a :class:`ScheduleError`.

    Raises:
        Nothing: an exception class; raised by :func:`directcoll.schedule.io.load` and ``from_dict``.

    Source: docs/architecture.md, "Schedule IR" (versioned JSON and ``.npz`` files).

    >>> issubclass(ScheduleFormatError, ScheduleError)
    True
    """


class UnsupportedShapeError(DirectcollError, ValueError):
    """An algorithm cannot serve the requested topology, shape, collective or variant; a :class:`ValueError`.

    Raises:
        Nothing: an exception class; raised by the algorithm builders (``directcoll.algorithms``,
        ``directcoll.synthesis``) and :func:`directcoll.registry.build`.

    Source: docs/architecture.md, "Quality bar" (a shape an algorithm cannot serve).

    >>> issubclass(UnsupportedShapeError, DirectcollError)
    True
    """


class SolverError(DirectcollError, RuntimeError):
    """An LP or MIP solve failed, was infeasible or unbounded, or stopped at a limit (:mod:`directcoll.lp`).

    Also a :class:`RuntimeError`.

    Raises:
        Nothing: an exception class; raised by :func:`directcoll.lp.solve` and the LP-based synthesis.

    Source: docs/architecture.md, "Engines, runtimes and scale" (solver hygiene: every status checked).

    >>> issubclass(SolverError, RuntimeError)
    True
    """


class SolverLimitError(SolverError):
    """A solve stopped at a time or iteration limit before it proved optimality (a :class:`SolverError`).

    Raises:
        Nothing: an exception class; raised by :func:`directcoll.lp.solve` when HiGHS reports a limit status.

    Source: docs/architecture.md, "Engines, runtimes and scale" (solver hygiene).

    >>> issubclass(SolverLimitError, SolverError)
    True
    """


class ResourceError(DirectcollError):
    """A request would need more memory or work than the budget allows (:mod:`directcoll.resources`).

    Raises:
        Nothing: an exception class; raised by :func:`directcoll.resources.check_memory` and
        :func:`directcoll.resources.check_work`.

    Source: docs/architecture.md, "Engines, runtimes and scale" (resources: estimate memory first, refuse over a
    budget).

    >>> issubclass(ResourceError, DirectcollError) and not issubclass(ResourceError, ValueError)
    True
    """


class DeadlockError(DirectcollError, RuntimeError):
    """A simulated network with finite buffers deadlocked: packets wait for one another's buffers in a cycle (the
    message names the cycle's links and virtual channels).

    Raises:
        Nothing: an exception class; raised by :func:`directcoll.simulate.packet.simulate_packet`.

    Source: docs/simulation.md, "The packet engine" (flow control); Dally & Towles (2004), Ch. 14.

    >>> issubclass(DeadlockError, DirectcollError)
    True
    """


class MissingDependencyError(DirectcollError, ImportError):
    """An optional dependency of the feature used is not installed; the message names the extra that installs it
    (``pip install 'directcoll[mpi]'``, ``'directcoll[torch]'``).

    Raises:
        Nothing: an exception class; raised by :func:`directcoll.runtime.missing` where an optional import fails.

    Source: pyproject.toml's optional dependencies (extras ``mpi`` and ``torch``).

    >>> issubclass(MissingDependencyError, ImportError)
    True
    """
