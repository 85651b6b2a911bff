"""Argument types and checks of the command line: counts with a minimum, times with units, writable outputs.

Every bad value ends in one line: argparse types raise :class:`argparse.ArgumentTypeError` (reported by
:class:`Parser` as ``directcoll COMMAND: error: argument --ports: ...``), the checks run inside a command raise
:class:`~directcoll.errors.DirectcollError`.

Source: DESIGN.md, "Quality bar for every module" (one clear error naming the input and what is accepted).

>>> count(1)("4"), positive_size("64KiB", "--size")
(4, 65536)
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from directcoll.errors import DirectcollError
from directcoll.units import parse_bandwidth, parse_duration, parse_size


class Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line on stderr (no usage block), exit status 2.

    Raises:
        SystemExit: status 2 on a usage error (see :meth:`error`).

    Source: DESIGN.md, "Quality bar for every module"; Python's argparse.

    >>> Parser(prog="demo").parse_args([])
    Namespace()
    """

    def error(self, message: str):
        """Print ``PROG: error: MESSAGE (see PROG --help)`` on stderr and exit.

        Raises:
            SystemExit: always, with status 2.

        Source: DESIGN.md, "Quality bar for every module".

        >>> Parser(prog="demo").error("bad")
        Traceback (most recent call last):
        ...
        SystemExit: 2
        """
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def count(minimum: int, maximum: int | None = None):
    """An argparse type: an integer >= ``minimum`` (and <= ``maximum`` when given).

    Returns:
        A function str -> int for ``add_argument(type=...)``.

    Raises:
        Nothing itself; the returned function raises argparse.ArgumentTypeError on a non-integer or a value out of
        range (argparse reports it as a usage error, status 2).

    Source: DESIGN.md, "Quality bar for every module".

    >>> count(1, 16)("8")
    8
    >>> count(1)("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be an integer >= 1, got '0'
    """

    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum or (maximum is not None and value > maximum):
            accepted = f"from {minimum} to {maximum}" if maximum is not None else f">= {minimum}"
            raise argparse.ArgumentTypeError(f"must be an integer {accepted}, got {text!r}")
        return value

    parse.__name__ = "count"
    return parse


def _from_library(function, *args):
    def parse(text: str):
        try:
            return function(text, *args)
        except DirectcollError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = getattr(function, "__name__", "value")
    return parse


#: argparse type: a time >= 0 (``1us``, ``400ns``, ``2ms``; a bare number is seconds)
duration = _from_library(parse_duration, "time")
#: argparse type: seconds per byte >= 0 (``0.2ns`` or ``0.2ns/B``; a bare number is seconds per byte)
per_byte = _from_library(parse_duration, "time per byte", "B")
#: argparse type: a bandwidth with its unit (``400Gbps``, ``50GB/s``)
bandwidth = _from_library(parse_bandwidth)


def positive_size(text: str, option: str) -> int:
    """Bytes of ``text`` (``64MiB``), which must be at least one byte.

    Returns:
        The size in bytes, an int >= 1.

    Raises:
        DirectcollError: not a size, or zero bytes, naming ``option``.

    Source: :func:`directcoll.units.parse_size`; DESIGN.md, "Quality bar for every module".

    >>> positive_size("0", "--size")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: --size '0' must be at least 1 byte; ...
    """
    try:
        value = parse_size(text)
    except DirectcollError as exc:
        raise DirectcollError(f"{option}: {exc}") from None
    if value < 1:
        raise DirectcollError(f"{option} {text!r} must be at least 1 byte; use e.g. 1024, 64KiB or 1MiB")
    return value


def size_option(option: str):
    """An argparse type: a size of at least one byte (:func:`positive_size`).

    Returns:
        A function str -> int (bytes) raising argparse.ArgumentTypeError on bad input.

    Raises:
        Nothing itself; the returned function raises argparse.ArgumentTypeError.

    Source: :func:`directcoll.units.parse_size`; the CLI's ``--memory-budget``.

    >>> size_option("--memory-budget")("8GiB")
    8589934592
    """
    return _from_library(lambda text: positive_size(text, option))


def check_output(path: str | os.PathLike | None, option: str) -> None:
    """Refuse an output file that cannot be written, before any work starts: its folder must exist and be
    writable, and the path must not be a folder or an existing read-only file.

    Returns:
        None (also for ``path`` None: no output asked for).

    Raises:
        DirectcollError: naming the option, the path and why.

    Source: DESIGN.md, "Quality bar for every module" (refuse early, name the input).

    >>> check_output(None, "-o")
    >>> check_output("no/such/folder/out.json", "-o")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: -o 'no/such/folder/out.json': cannot write there, folder ... does not exist; ...
    """
    if path is None:
        return
    if str(path) == "":
        raise DirectcollError(f"{option}: empty file name; give a file to write")
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        why = "is not a folder" if parent.exists() else "does not exist"
        raise DirectcollError(f"{option} {str(path)!r}: cannot write there, folder {str(parent)!r} {why}; "
                              "create it first or choose another file")
    if p.is_dir():
        raise DirectcollError(f"{option} {str(path)!r} is a folder; give a file name")
    if p.exists() and not os.access(p, os.W_OK):
        raise DirectcollError(f"{option} {str(path)!r}: the file exists and is not writable")
    if not os.access(parent, os.W_OK | os.X_OK) or _pseudo_filesystem(parent):
        raise DirectcollError(f"{option} {str(path)!r}: folder {str(parent)!r} is not writable")


def _pseudo_filesystem(folder: Path) -> bool:
    """/proc and /sys accept no new files even for root (os.access says yes there)."""
    if not sys.platform.startswith("linux"):
        return False
    resolved = folder.resolve()
    return any(resolved == Path(root) or Path(root) in resolved.parents for root in ("/proc", "/sys"))
