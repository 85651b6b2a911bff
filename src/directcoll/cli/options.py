"""Argument types and checks of the command line: counts with a minimum, times with units, writable outputs.

Every bad value ends in one line: argparse types raise :class:`argparse.ArgumentTypeError` (reported by
:class:`Parser` as ``directcoll COMMAND: error: argument --ports: ...``), the checks run inside a command raise
:class:`~directcoll.errors.DirectcollError`.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from directcoll.errors import DirectcollError
from directcoll.units import parse_bandwidth, parse_duration, parse_size


class Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line on stderr (no usage block), exit status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def count(minimum: int, maximum: int | None = None):
    """An argparse type: an integer >= ``minimum`` (and <= ``maximum`` when given)."""

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

    Raises:
        DirectcollError: not a size, or zero bytes, naming ``option``.
    """
    try:
        value = parse_size(text)
    except DirectcollError as exc:
        raise DirectcollError(f"{option}: {exc}") from None
    if value < 1:
        raise DirectcollError(f"{option} {text!r} must be at least 1 byte; use e.g. 1024, 64KiB or 1MiB")
    return value


def size_option(option: str):
    """An argparse type: a size of at least one byte (:func:`positive_size`)."""
    return _from_library(lambda text: positive_size(text, option))


def check_output(path: str | os.PathLike | None, option: str) -> None:
    """Refuse an output file that cannot be written, before any work starts: its folder must exist and be
    writable, and the path must not be a folder or an existing read-only file.

    Raises:
        DirectcollError: naming the option, the path and why.
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
