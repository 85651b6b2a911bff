"""The ``directcoll`` command line: a thin layer over the library (every command is a library call first).

Every command group is one module of :mod:`directcoll.cli` with a ``register(sub)`` that adds its parser and sets
its function (:data:`COMMANDS`, in the order ``directcoll --help`` lists them); this module only assembles them and
adds the global options. Commands share helpers through :mod:`directcoll.cli.options` (arguments and what they
mean) and :mod:`directcoll.cli.output` (printing), never through each other. Exit status: 0 done, 1 a check that
failed (``verify``, ``run``), 2 a bad input or request (one line on stderr, ``directcoll: error: ...``; usage
errors ``directcoll COMMAND: error: ...``).

Source: docs/architecture.md, "Command line" (machine-readable output is a contract tested in
subprocesses) and "Quality bar" (one clear error naming the input).

>>> main(["verify", "no/such/file.json"])  # the error goes to stderr
2
"""

from __future__ import annotations

import argparse
import sys

from directcoll import __version__
from directcoll.cli import (
    algorithms,
    calibrate,
    compare,
    cost,
    discover,
    find_topology,
    msccl,
    native,
    run,
    schedule,
    show,
    simulate,
    sweep,
    table2,
    testbed,
    topology,
    tune,
    verify,
)
from directcoll.cli.options import Parser, add_memory_budget, add_solver_log, print_notes
from directcoll.errors import DirectcollError

#: the command groups, each a module with ``register(sub)``, in the order of ``directcoll --help``
COMMANDS = (topology, schedule, verify, cost, compare, simulate, run, testbed, msccl, calibrate, find_topology,
            table2, algorithms, show, discover, native, tune, sweep)


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of every command and subcommand (each command group's ``register``), with
    ``--memory-budget`` and ``--solver-log`` before or after the command.

    Returns:
        A :class:`~directcoll.cli.options.Parser`; ``parse_args`` leaves the command's function in ``args.func``.

    Raises:
        Nothing: builds the parser (parsing bad arguments exits with status 2).

    Source: docs/architecture.md, "Command line" (the CLI is a thin layer over the library).

    >>> build_parser().parse_args(["verify", "s.json"]).func.__name__
    'cmd_verify'
    """
    parser = Parser(
        prog="directcoll", description="Collective algorithms, schedules, verification and cost models for "
                                       "torus and direct-connect networks.")
    parser.add_argument("--version", action="version", version=f"directcoll {__version__}")
    add_memory_budget(parser)
    add_solver_log(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in COMMANDS:
        group.register(sub)
    for command in _commands(sub):
        add_memory_budget(command)
        add_solver_log(command)
    return parser


def _commands(sub) -> list[argparse.ArgumentParser]:
    """The parsers that run a command under the subparsers ``sub``: a group (``topology``, ``native``) is walked
    into, its subcommands returned."""
    out = []
    for parser in dict.fromkeys(sub.choices.values()):  # aliases map to the same parser
        inner = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        out.extend(_commands(inner[0]) if inner else [parser])
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``) and return the exit status: 0 done, 1 a check
    that failed (verify, run), 2 a bad input or request (one line on stderr: ``directcoll: error: ...``).

    Output contract: the result on stdout (``--json``: one JSON document, ``--csv``: CSV rows), everything else
    (progress bars, warnings, errors, and after the run the deprecation notes of old spellings) on stderr.

    Returns:
        The exit status, an int in {0, 1, 2}, or 130 after Ctrl-C (one line on stderr, no traceback).

    Raises:
        SystemExit: a usage error (status 2, one line on stderr), ``--help`` or ``--version`` (status 0), as
            argparse does; every :class:`~directcoll.errors.DirectcollError` and OSError of a command is turned
            into status 2 and is not raised.

    Source: docs/architecture.md, "Command line" and "Quality bar".

    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "ring.json")
    ...     main(["schedule", "ring", "ring:4", "-o", path])  # doctest: +ELLIPSIS
    ...     main(["verify", path])
    wrote .../ring.json: ring allreduce on ring:4, 4 ranks, 6 steps, 48 transfers
    0
    OK: ring allreduce on 4 ranks, 6 steps, 48 transfers
    0
    """
    from contextlib import nullcontext

    from directcoll.cli.output import wide_tables
    from directcoll.lp.highs import solver_log
    from directcoll.resources import memory_budget_override

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        budget = getattr(args, "memory_budget", None)
        with (memory_budget_override(budget) if budget is not None else nullcontext(),
              solver_log(getattr(args, "solver_log", None)), wide_tables(getattr(args, "wide", False))):
            status = args.func(args)
        print_notes(args)  # after the run: an error stays one line on stderr
        return status
    except DirectcollError as exc:
        message = str(exc) if getattr(args, "keep_lines", False) else _one_line(str(exc))
        print(f"directcoll: error: {message}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:  # Ctrl-C: one line, 128 + SIGINT (directcoll.cli.entry guards the imports too)
        print("directcoll: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # a file that went away or filled the disk while writing: the checks before are best-effort
        where = f" {exc.filename!r}" if exc.filename else ""
        print(f"directcoll: error: cannot access{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2


def _one_line(text: str) -> str:
    return " ".join(text.split())


if __name__ == "__main__":
    sys.exit(main())
