"""Resource budgets: estimate what a request needs before building it, and refuse it above the budget.

Anything whose memory grows with the network (topology, all-pairs distances, routes, schedules, the verifier's
state, LPs, simulations) calls :func:`check_memory` with an estimate *before* it allocates, so a typo such as
``complete:20000`` ends in one clear line in milliseconds instead of a machine out of memory. Work that cannot
finish in any reasonable time (a million sizes, a finder over 10^9 nodes) is refused by :func:`check_work`.

The memory budget is, in order: the value set by :func:`memory_budget_override` (the CLI's ``--memory-budget``),
the environment variable ``DIRECTCOLL_MEMORY_BUDGET`` (a size such as ``16GiB``), or
:data:`DEFAULT_FRACTION` of the memory the kernel reports available (``MemAvailable`` in ``/proc/meminfo``).
Estimates are of the dominant arrays only (a lower bound on the real peak), so the default leaves headroom.

Artifacts built on first use (the ns-3 driver, libdirectcoll) are cached here too: :func:`cache_dir` says where,
:func:`cached_build` builds one once per key, under a lock.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from directcoll.errors import DirectcollError, ResourceError

ENV_MEMORY_BUDGET = "DIRECTCOLL_MEMORY_BUDGET"
#: Share of the available memory a single request may plan to use by default.
DEFAULT_FRACTION = 0.5
#: Used when the available memory cannot be read (not Linux): 4 GiB.
FALLBACK_AVAILABLE = 4 * 2**30

_override: list[int] = []


def _proc_kib(path: str, key: str) -> int | None:
    """Bytes of a ``key: N kB`` line of a /proc file, or None where there is none (not Linux)."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def available_memory() -> int:
    """Bytes this process can still use: what the kernel reports available (``MemAvailable``, else
    :data:`FALLBACK_AVAILABLE`), and no more than the address-space limit (``ulimit -v``) leaves.

    Returns:
        An int, bytes (0 or more).

    Raises:
        Nothing: unreadable ``/proc`` files or limits fall back to :data:`FALLBACK_AVAILABLE` / no limit.

    Source: docs/architecture.md, "Engines, runtimes and scale" (resources); Linux proc(5) ``/proc/meminfo``.

    >>> available_memory() > 0
    True
    """
    available = _proc_kib("/proc/meminfo", "MemAvailable")
    return int(min(FALLBACK_AVAILABLE if available is None else available, _address_space_left()))


def _address_space_left() -> float:
    """Bytes below RLIMIT_AS not yet mapped by this process (inf without a limit)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    except (ImportError, OSError, ValueError):
        return float("inf")
    if soft == resource.RLIM_INFINITY:
        return float("inf")
    return max(0, soft - (_proc_kib("/proc/self/status", "VmSize") or 0))


def memory_budget() -> int:
    """The memory budget in bytes (see the module docstring for where it comes from).

    Returns:
        An int, bytes: the innermost :func:`memory_budget_override`, else ``DIRECTCOLL_MEMORY_BUDGET``, else
        :data:`DEFAULT_FRACTION` of :func:`available_memory`.

    Raises:
        DirectcollError: ``DIRECTCOLL_MEMORY_BUDGET`` is set but is not a size such as ``16GiB``.

    Source: docs/architecture.md, "Engines, runtimes and scale" (resources: refuse over a budget).

    >>> with memory_budget_override("1GiB"):
    ...     memory_budget()
    1073741824
    """
    if _override:
        return _override[-1]
    text = os.environ.get(ENV_MEMORY_BUDGET)
    if text:
        from directcoll.units import parse_size

        try:
            return parse_size(text)
        except DirectcollError:
            raise DirectcollError(f"{ENV_MEMORY_BUDGET}={text!r} is not a size; use e.g. 16GiB or 500MB") from None
    return int(DEFAULT_FRACTION * available_memory())


@contextmanager
def memory_budget_override(budget):
    """Use ``budget`` (bytes, or a size string such as ``8GiB``) as the memory budget inside the ``with`` block.

    Yields:
        The budget in bytes (an int); overrides nest, the innermost wins.

    Raises:
        DirectcollError: ``budget`` is not a positive size (from :func:`directcoll.units.parse_size` or here).

    Source: docs/architecture.md, "Engines, runtimes and scale" (resources); the CLI's ``--memory-budget``.

    >>> with memory_budget_override("2MiB") as b:
    ...     b
    2097152
    """
    from directcoll.units import parse_size

    value = parse_size(budget)
    if value <= 0:
        raise DirectcollError(f"memory budget must be positive, got {budget!r}")
    _override.append(value)
    try:
        yield value
    finally:
        _override.pop()


def _human(n: float) -> str:
    for unit, f in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= f:
            return f"{n / f:.3g} {unit}"
    return f"{n:.0f} B"


def check_memory(what: str, nbytes: float) -> None:
    """Refuse ``what`` if its estimated memory ``nbytes`` exceeds :func:`memory_budget`.

    Args:
        what: the request in the user's words, e.g. ``"topology complete:20000 (400,000,000 links)"``.
        nbytes: estimated bytes of its dominant arrays (a float: estimates may overflow int64).

    Returns:
        None when it fits.

    Raises:
        ResourceError: over the budget; the message names the request, the estimate, the budget and how to
            raise it.
        DirectcollError: ``DIRECTCOLL_MEMORY_BUDGET`` is not a size (see :func:`memory_budget`).

    Source: docs/architecture.md, "Engines, runtimes and scale" (anything that grows with the network estimates its
    memory first and refuses over a budget).

    >>> check_memory("a small thing", 1e3)
    >>> check_memory("a huge thing", 1e30)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.ResourceError: a huge thing needs about 9.09e+17 TiB, over the memory budget ...
    """
    budget = memory_budget()
    if nbytes > budget:
        raise ResourceError(f"{what} needs about {_human(nbytes)}, over the memory budget of {_human(budget)} "
                            f"(raise it with --memory-budget or {ENV_MEMORY_BUDGET}, e.g. 32GiB)")


def check_work(what: str, amount: float, limit: float, unit: str) -> None:
    """Refuse ``what`` when it needs ``amount`` ``unit`` of work, over ``limit`` (work that could not finish).

    Args:
        what: the request in the user's words.
        amount, limit: counts in ``unit`` (sizes, nodes, LPs, ...).
        unit: the unit's name, for the message.

    Returns:
        None when ``amount <= limit``.

    Raises:
        ResourceError: ``amount > limit``, naming both.

    Source: docs/architecture.md, "Engines, runtimes and scale" (resources).

    >>> check_work("compare", 40, 1000, "sizes")
    >>> check_work("compare", 4000, 1000, "sizes")
    Traceback (most recent call last):
    ...
    directcoll.errors.ResourceError: compare needs 4,000 sizes, over the limit of 1,000 sizes
    """
    if amount > limit:
        raise ResourceError(f"{what} needs {amount:,.0f} {unit}, over the limit of {limit:,.0f} {unit}")


# -- artifacts built on first use (the ns-3 driver, libdirectcoll) -------------------------------------------------
def cache_dir() -> Path:
    """Where artifacts built on first use are kept: ``$DIRECTCOLL_CACHE``, else ``$XDG_CACHE_HOME/directcoll``,
    else ``~/.cache/directcoll``.

    Returns:
        A :class:`~pathlib.Path` (not created here).

    Raises:
        Nothing: reads the environment.

    Source: the XDG Base Directory specification; docs/architecture.md, "Engines, runtimes and scale" (built on first
    use).

    >>> import os
    >>> os.environ["DIRECTCOLL_CACHE"] = "/tmp/dc-cache"; str(cache_dir())
    '/tmp/dc-cache'
    >>> del os.environ["DIRECTCOLL_CACHE"]
    """
    if os.environ.get("DIRECTCOLL_CACHE"):
        return Path(os.environ["DIRECTCOLL_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "directcoll"


def cached_build(name: str, key: bytes, build: Callable[[Path, Path], None], suffix: str = "") -> Path:
    """The artifact ``name-HASH`` + ``suffix`` (e.g. ``.so``) under :func:`cache_dir`, where HASH is a digest of
    ``key`` (the sources, the compiler and whatever else the artifact depends on): built by ``build(tmp, out)``
    the first time (``tmp`` a scratch folder, ``out`` the file to write), under a file lock so that concurrent
    processes build it once, and moved into place atomically.

    Returns:
        The artifact's path.

    Raises:
        whatever ``build`` raises (the cache is left without the artifact); OSError: the cache is not writable.

    Source: docs/architecture.md, "Engines, runtimes and scale" (artifacts built on first use, cached by a hash of what
    they depend on).

    >>> import os, tempfile
    >>> os.environ["DIRECTCOLL_CACHE"] = tempfile.mkdtemp()
    >>> path = cached_build("hello", b"v1", lambda tmp, out: out.write_text("hi"))
    >>> path.read_text(), path.name.startswith("hello-")
    ('hi', True)
    >>> del os.environ["DIRECTCOLL_CACHE"]
    """
    target = cache_dir() / f"{name}-{hashlib.sha256(key).hexdigest()[:16]}{suffix}"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be building the same artifact
        if target.exists():
            return target
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            out = Path(tmp) / "artifact"
            build(Path(tmp), out)
            os.replace(out, target)
    return target
