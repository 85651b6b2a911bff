"""Algorithms from outside the package: installed plugins (the entry-point group ``directcoll.algorithms``) and
single files (``file:my_alg.py``), registered beside the built-in ones in :data:`directcoll.registry.ALGORITHMS`.

- A plugin package declares ``[project.entry-points."directcoll.algorithms"]`` in its pyproject.toml; each entry
  point resolves to a :class:`~directcoll.registry.Algorithm` (as :func:`directcoll.lang.algorithm` makes one), a
  list of them, a module with a list ``ALGORITHMS``, or a function of no arguments returning one of those.
  :func:`install` makes :func:`directcoll.registry.get` load them on the first name it does not know (the command
  line and the ranks of ``directcoll run`` install it); :func:`load_installed` loads them at once. A plugin that
  fails to load, or whose algorithm takes a name already registered, is one warning line on standard error
  naming it, and the others load.
- ``file:PATH.py`` is a Python file that defines algorithms the same way (decorated functions, or ``ALGORITHMS``);
  :func:`expand` turns ``file:`` items of an ``--algorithms`` list into the names of the file's algorithms,
  registering them; a file that cannot be loaded is an error, since it was asked for by name.

Source: docs/language.md, "Plugins"; the entry points of Python packaging (importlib.metadata, the PyPA "Entry
points specification").

>>> sorted(GROUP.split("."))
['algorithms', 'directcoll']
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import sys
import types
from collections.abc import Iterable
from pathlib import Path

from directcoll.errors import DirectcollError, UnsupportedShapeError
from directcoll.registry import ALGORITHMS, LOADERS, Algorithm

#: the entry-point group plugin packages declare
GROUP = "directcoll.algorithms"
#: the prefix of a single-file algorithm in an ``--algorithms`` list
FILE = "file:"
#: where every algorithm from outside the package came from: registry name -> "plugin NAME (DIST VERSION)",
#: "file PATH" or "registered in this process"
ORIGINS: dict[str, str] = {}
#: the algorithms of every file loaded, by resolved path
FILES: dict[Path, list[Algorithm]] = {}
_STATE = {"installed_loaded": False}


def warn(message: str) -> None:
    """Print ``directcoll: warning: MESSAGE`` as one line on standard error (a plugin that did not load).

    Returns:
        None.

    Raises:
        Nothing: writes a line.

    Source: docs/architecture.md, "Command line" (warnings go to standard error).
    """
    print(f"directcoll: warning: {' '.join(str(message).split())}", file=sys.stderr)


def origin(name: str) -> str:
    """Where the registry's algorithm ``name`` came from: ``built-in``, or its entry in :data:`ORIGINS`.

    Returns:
        A str.

    Raises:
        Nothing: reads a table.

    Source: docs/language.md, "Plugins".

    >>> origin("ring")
    'built-in'
    """
    return ORIGINS.get(name, "built-in")


def _taken(alg: Algorithm) -> str | None:
    """The registered algorithm one of ``alg``'s names already belongs to (None: every name is free)."""
    mine = {alg.name, *alg.aliases}
    for other in ALGORITHMS.values():
        if other is not alg and mine & {other.name, *other.aliases}:
            return other.name
    return None


def register(alg: Algorithm, where: str = "registered in this process") -> Algorithm:
    """Add ``alg`` to :data:`directcoll.registry.ALGORITHMS`, as a plugin does, recording ``where`` it came from.

    Returns:
        ``alg``.

    Raises:
        UnsupportedShapeError: ``alg`` is not an :class:`~directcoll.registry.Algorithm`, its name is not a
            registry name (lowercase letters, digits and ``-``, starting with a letter), or it or an alias is taken
            (the message names the algorithm that has it, and whether that one is built in).

    Source: docs/language.md, "Plugins"; docs/architecture.md, "Adding things".

    >>> import dataclasses
    >>> register(dataclasses.replace(ALGORITHMS["ring"]))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.UnsupportedShapeError: algorithm 'ring' (...): the name is taken by ring (built-in); choose ...
    """
    if not isinstance(alg, Algorithm):
        raise UnsupportedShapeError(f"{where}: expected a directcoll.registry.Algorithm (directcoll.lang.algorithm "
                                    f"makes one), got {type(alg).__name__}")
    for name in (alg.name, *alg.aliases):
        if not isinstance(name, str) or not name[:1].isalpha() or name != name.lower() or \
                not all(ch.isalnum() or ch == "-" for ch in name):
            raise UnsupportedShapeError(f"algorithm {name!r} ({where}): a registry name is lowercase letters, digits "
                                        "and '-', starting with a letter (e.g. my-ring)")
    if ALGORITHMS.get(alg.name) is alg:
        return alg
    if (taken := _taken(alg)) is not None:
        raise UnsupportedShapeError(f"algorithm {alg.name!r} ({where}): the name is taken by {taken} "
                                    f"({origin(taken)}); choose another name")
    ALGORITHMS[alg.name] = alg
    ORIGINS[alg.name] = where
    return alg


def algorithms_of(obj, what: str) -> list[Algorithm]:
    """The algorithms ``obj`` holds: an Algorithm, a list, tuple or dict of them, a module (its ``ALGORITHMS``,
    else every Algorithm defined at its top level), or a function of no arguments returning one of those.

    Returns:
        A list of :class:`~directcoll.registry.Algorithm`.

    Raises:
        UnsupportedShapeError: ``obj`` holds none, or something else (``what`` names it in the message).

    Source: docs/language.md, "Plugins".

    >>> [a.name for a in algorithms_of([ALGORITHMS["ring"]], "a list")]
    ['ring']
    """
    if isinstance(obj, types.ModuleType):
        listed = getattr(obj, "ALGORITHMS", None)
        obj = listed if listed is not None else [v for v in vars(obj).values() if isinstance(v, Algorithm)]
    elif callable(obj) and not isinstance(obj, Algorithm | type):
        obj = obj()
    if isinstance(obj, Algorithm):
        return [obj]
    values = list(obj.values()) if isinstance(obj, dict) else list(obj) if isinstance(obj, list | tuple) else None
    if not values or not all(isinstance(v, Algorithm) for v in values):
        raise UnsupportedShapeError(f"{what} holds no algorithm: give an Algorithm (decorate a function with "
                                    "directcoll.lang.algorithm), a list ALGORITHMS of them, or a function returning "
                                    f"them; found {type(obj).__name__}")
    return values


def load_installed(entry_points: Iterable | None = None) -> list[str]:
    """Load every installed plugin (entry points of :data:`GROUP`), once: their algorithms join the registry.

    Args:
        entry_points: the entry points to load (default: those installed; tests pass their own).

    Returns:
        The names registered by this call ([] when the plugins were loaded before).

    Raises:
        Nothing: a plugin that fails to load (an import error, an exception, no algorithm, a name taken) is one
        warning line on standard error naming it and its distribution, never a traceback, and is skipped.

    Source: docs/language.md, "Plugins"; importlib.metadata (entry points).

    >>> load_installed([])
    []
    """
    if entry_points is None:
        if _STATE["installed_loaded"]:
            return []
        _STATE["installed_loaded"] = True
        entry_points = importlib.metadata.entry_points(group=GROUP)
    names = []
    for ep in entry_points:
        dist = getattr(ep, "dist", None)
        label = f"plugin {ep.name!r} ({ep.value}" + (f", from {dist.name} {dist.version})" if dist else ")")
        try:
            found = algorithms_of(ep.load(), label)
            for alg in found:
                register(alg, label)
                names.append(alg.name)
        except Exception as exc:  # noqa: BLE001 -- a broken plugin must not stop the command: one line, skipped
            text = str(exc).splitlines()[0] if str(exc) else ""
            warn(f"{text}; not loaded" if isinstance(exc, DirectcollError) else
                 f"{label} not loaded: {type(exc).__name__}{': ' + text if text else ''}")
    return names


def install() -> None:
    """Make :func:`directcoll.registry.get` load the installed plugins (:func:`load_installed`) the first time it
    does not know a name; cheap, and idempotent.

    Returns:
        None.

    Raises:
        Nothing: appends to :data:`directcoll.registry.LOADERS`.

    Source: docs/language.md, "Plugins".

    >>> install(); install(); LOADERS.count(load_installed) <= 1
    True
    """
    if not _STATE["installed_loaded"] and load_installed not in LOADERS:
        LOADERS.append(load_installed)


def _module_from(path: Path) -> types.ModuleType:
    """Execute the Python file ``path`` as a module of its own (named after the file and a hash of its path)."""
    name = f"directcoll_file_{path.stem}_{hashlib.blake2b(str(path).encode(), digest_size=4).hexdigest()}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise DirectcollError(f"{FILE}{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        tb = exc.__traceback__
        line = ""
        while tb is not None:
            if Path(tb.tb_frame.f_code.co_filename) == path:
                line = f" (line {tb.tb_lineno})"
            tb = tb.tb_next
        if isinstance(exc, SyntaxError) and exc.lineno:
            line = f" (line {exc.lineno})"
        text = " ".join(str(exc).split())
        raise DirectcollError(f"{FILE}{path}: cannot load it: {type(exc).__name__}{': ' + text if text else ''}"
                              f"{line}") from None
    return module


def algorithms_in_file(path) -> list[Algorithm]:
    """The algorithms a Python file defines (:func:`algorithms_of` of the file run as a module), without
    registering them; a file is run once per process.

    Returns:
        A list of :class:`~directcoll.registry.Algorithm`.

    Raises:
        DirectcollError: no such file, or running it raises (one line: the exception and the file's line).
        UnsupportedShapeError: it defines no algorithm.

    Source: docs/language.md, "A single file".

    >>> algorithms_in_file("no/such/file.py")
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: file:no/such/file.py: no such file
    """
    given = Path(str(path))
    resolved = given.expanduser().resolve()
    if resolved not in FILES:
        if not resolved.is_file():
            raise DirectcollError(f"{FILE}{given}: no such file")
        FILES[resolved] = algorithms_of(_module_from(resolved), f"{FILE}{given}")
    return FILES[resolved]


def load_file(path) -> list[str]:
    """Register the algorithms of the Python file ``path`` (:func:`algorithms_in_file`); loading a file again
    registers nothing new.

    Returns:
        The names of the file's algorithms, in the order it defines them.

    Raises:
        DirectcollError, UnsupportedShapeError: as :func:`algorithms_in_file` and :func:`register` (a name taken).

    Source: docs/language.md, "A single file".
    """
    where = f"file {Path(str(path)).expanduser().resolve()}"
    return [register(alg, where).name for alg in algorithms_in_file(path)]


def expand(items: Iterable[str], *, absolute: bool = False) -> list[str]:
    """An ``--algorithms`` list with every ``file:PATH`` item replaced by the names of the file's algorithms
    (:func:`load_file`; ``absolute``: kept as ``file:`` items with their paths made absolute instead, for the ranks
    of ``directcoll run``); also :func:`install` s the installed plugins' loader.

    Returns:
        The items, in order.

    Raises:
        DirectcollError, UnsupportedShapeError: a ``file:`` item that cannot be loaded (:func:`load_file`).

    Source: docs/language.md, "A single file".

    >>> expand(["ring", "swing:bandwidth"])
    ['ring', 'swing:bandwidth']
    """
    install()
    out: list[str] = []
    for item in items:
        item = item.strip()
        if not item.startswith(FILE):
            out.append(item)
            continue
        path = item[len(FILE):]
        names = load_file(path)
        out += [f"{FILE}{Path(path).expanduser().resolve()}"] if absolute else names
    return out


def one_algorithm(text: str) -> str:
    """The registry name ``text`` names: itself, or for ``file:PATH`` the one algorithm the file defines.

    Returns:
        A str.

    Raises:
        DirectcollError: a file with several algorithms (the message lists them), or one that cannot be loaded.

    Source: docs/language.md, "A single file".

    >>> one_algorithm("swing")
    'swing'
    """
    names = expand([text])
    if len(names) != 1:
        raise DirectcollError(f"{text} defines {len(names)} algorithms ({', '.join(names)}); give a file with one, "
                              "or load it in --algorithms of compare")
    return names[0]
