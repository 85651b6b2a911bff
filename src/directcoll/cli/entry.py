"""The ``directcoll`` console script: the command line behind a guard for Ctrl-C.

This module imports nothing heavy, so a Ctrl-C at any moment — while numpy and the command's modules load, or
while the command runs — ends the process with one line on standard error and status 130 (128 + SIGINT, the
shell's convention), never a traceback. Child processes are ended by their owners' ``finally`` blocks (MPI jobs,
the ns-3 driver) and temporary directories by their context managers, which a KeyboardInterrupt unwinds.

Source: POSIX.1-2017, Shell Command Language, 2.8.2 (exit status 128 + n for a command ended by signal n);
docs/architecture.md ("Quality bar").

>>> main(["--version"])  # doctest: +ELLIPSIS
directcoll ...
0
"""

from __future__ import annotations

import sys

#: exit status after Ctrl-C: 128 + SIGINT (2)
INTERRUPTED = 130


def main(argv: list[str] | None = None) -> int:
    """Run ``directcoll`` with ``argv`` (default ``sys.argv[1:]``); Ctrl-C gives status 130 and one line.

    Args:
        argv: the command line without the program name.

    Returns:
        The command's exit status (:func:`directcoll.cli.main.main`), 130 after Ctrl-C, or argparse's status for
        ``--help``, ``--version`` and usage errors.

    Raises:
        Nothing: SystemExit is turned into its status.

    Source: this module's docstring.
    """
    try:
        from directcoll.cli.main import main as run

        return run(argv)
    except KeyboardInterrupt:
        print("directcoll: interrupted", file=sys.stderr)
        return INTERRUPTED
    except SystemExit as exc:  # argparse: --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)


if __name__ == "__main__":
    sys.exit(main())
