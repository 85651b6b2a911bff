"""The C engine of the MPI executors: a schedule's per-rank program run by ``libdirectcoll`` (``directcoll_run``,
``native/dc_entry.c``) on mpi4py's communicator, with the caller's buffers, datatype and op.

:mod:`directcoll.runtime.mpi` calls :func:`run` when its ``engine`` is ``"c"`` (the default) and :func:`choose`
says the C engine serves the call; the Python engine (:mod:`directcoll.runtime.executor`) serves the rest (a
user-defined op, or a library that cannot be built or loaded), with one note on stderr per reason and process.
Both engines check the arguments with the same function (:func:`~directcoll.runtime.executor.validate`) before any
message, so they refuse the same calls with the same messages, and both wait for every step with the same deadline.

The library is the one ``LD_PRELOAD`` puts under unmodified programs (:func:`directcoll.runtime.native.library_path`,
built on first use, cached per MPI), loaded with ctypes: the program file of a schedule
(:func:`~directcoll.runtime.native.encode_program`) is loaded once per process and schedule, and the library caches
its plans per (communicator, program, count, datatype). mpi4py's objects reach it as Fortran handles
(``comm.py2f()``; ``MPI_Comm_f2c`` in C). Before its first use the module checks that the library calls the MPI
library mpi4py runs on (the same shared object, by ``dladdr``, and the same ``MPI_Get_library_version``) and refuses
in one line otherwise: two MPI libraries in one process cannot share a communicator.

Source: docs/runtime.md, "The C engine"; MPI 4.1 standard, Sec. 19.3.4 (handle conversion,
MPI_Comm_f2c) and Sec. 9.1.1 (MPI_Get_library_version).

>>> ENGINES
('c', 'python')
"""

from __future__ import annotations

import ctypes
import os
import sys
import tempfile
import threading
from functools import lru_cache

import numpy as np

from directcoll.errors import DirectcollError
from directcoll.runtime import executor, native
from directcoll.schedule.ir import Collective, Schedule

#: the engines of the MPI executors: libdirectcoll's, and the numpy one of runtime/executor.py
ENGINES = ("c", "python")
_RUN_OK, _RUN_REFUSED, _RUN_DEADLINE = 0, 1, 2
_lock = threading.Lock()
_state: dict = {}        # "lib": the loaded library, or "error": why it cannot be
_noted: set[str] = set()
_local = threading.local()


def _mapped_mpi() -> set[str]:
    """The MPI shared objects mapped into this process (``libmpi*`` in /proc/self/maps), as real paths."""
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split(maxsplit=5)[5].strip() for line in fh if line.count(" ") >= 5 and "/" in line}
    except OSError:
        return set()
    return {os.path.realpath(p) for p in paths if os.path.basename(p).startswith("libmpi")}


def _load(path):
    from mpi4py import MPI

    before = _mapped_mpi()
    path = path or native.library_path()
    lib = ctypes.CDLL(str(path))
    lib.directcoll_mpi_library.restype = ctypes.c_char_p
    lib.directcoll_built_mpi_version.restype = ctypes.c_char_p
    ours = os.path.realpath(lib.directcoll_mpi_library().decode())
    if before and ours not in before:
        raise DirectcollError(f"libdirectcoll ({path}) calls the MPI library {ours}, but mpi4py runs on "
                              f"{', '.join(sorted(before))}; build it with that MPI's mpicc (MPICC=...) or use the "
                              "Python engine")
    built = lib.directcoll_built_mpi_version().decode()
    if built != MPI.Get_library_version() or not lib.directcoll_same_mpi():
        raise DirectcollError(f"libdirectcoll ({path}) was built for another MPI library "
                              f"({built.splitlines()[0] if built else '?'}) than mpi4py's "
                              f"({MPI.Get_library_version().splitlines()[0]}); rebuild it: directcoll native lib")
    if lib.directcoll_fint_bytes() != ctypes.sizeof(ctypes.c_int):
        raise DirectcollError("libdirectcoll's MPI_Fint is not a C int; use the Python engine")
    lib.directcoll_program_open.restype = ctypes.c_void_p
    lib.directcoll_program_open.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.directcoll_program_close.argtypes = [ctypes.c_void_p]
    lib.directcoll_run.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                   ctypes.c_longlong, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_double,
                                   ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    return lib


def library(path=None):
    """libdirectcoll loaded into this process for the C engine (built first if needed), checked against mpi4py's
    MPI. Once per process; a failure is remembered. ``path``: the library when the caller has it
    (:func:`~directcoll.runtime.native.library_path`, which runs the MPI compiler wrapper: ``directcoll run``'s
    ranks call it before ``MPI_Init``, since processes forked after it can slow MPI down).

    Returns:
        The ``ctypes.CDLL``.

    Raises:
        DirectcollError: no MPI compiler wrapper, the build failed, or the library calls another MPI library
            than mpi4py's (the message says which and how to rebuild).

    Source: docs/runtime.md, "The C engine" (the ABI check); MPI 4.1 standard, Sec. 9.1.1.
    """
    with _lock:
        if "lib" not in _state and "error" not in _state:
            try:
                _state["lib"] = _load(path)
            except (DirectcollError, OSError) as exc:  # MissingDependencyError is a DirectcollError too
                _state["error"] = str(exc).splitlines()[0]
        if "error" in _state:
            raise DirectcollError(_state["error"])
        return _state["lib"]


def choose(engine: str, op="sum", dtype=np.float64, comm=None, timeout: float | None = None) -> str:
    """The engine that runs a call asked to run on ``engine`` with ``op`` (an executor op name or a
    :class:`~directcoll.runtime.executor.UserOp`) on elements of ``dtype``: ``"c"`` when asked for and the C engine
    serves it (a predefined op or a copy, on elements in the machine's byte order; the library loads), else
    ``"python"``, with one note on stderr per reason and process.

    Every rank of a collective must run the same engine (they exchange different messages). The op and dtype are
    the same on every rank, but whether the library loads is each process's own outcome (a failed or racing build),
    so with ``comm`` the ranks agree once per communicator, the first time the C engine is asked for on it: the C
    engine only if it loads on every rank (a MIN-reduction of one flag with the call's ``timeout``).

    Returns:
        ``"c"`` or ``"python"``.

    Raises:
        DirectcollError: ``engine`` is not one of :data:`ENGINES`.

    Source: docs/runtime.md, "The C engine" (which engine runs a call).

    >>> choose("python")
    'python'
    """
    if engine not in ENGINES:
        raise DirectcollError(f"engine {engine!r}: accepted: {', '.join(ENGINES)}")
    if engine == "python":
        return "python"
    if isinstance(op, executor.UserOp):
        why = f"{op.name} runs on the Python engine (the C engine reduces with MPI's predefined ops)"
    elif not np.dtype(dtype).isnative:
        why = f"elements of {np.dtype(dtype).str} (not in this machine's byte order) run on the Python engine"
    else:
        try:
            library()
            loads, why = True, ""
        except DirectcollError as exc:
            loads, why = False, f"the C engine is not available ({exc}); running the Python engine"
        if comm is not None:
            loads = _agreed(comm, loads, timeout)
            if not loads and not why:
                why = "the C engine is not available on every rank of the communicator; running the Python engine"
        if loads:
            return "c"
    if why not in _noted:
        _noted.add(why)
        print(f"directcoll: note: {why}", file=sys.stderr, flush=True)
    return "python"


def _agreed(comm, loads: bool, timeout: float | None) -> bool:
    """Whether the library loads on every rank of ``comm``: one MIN-reduction per communicator (cached by its
    handle), the first time the C engine is asked for on it."""
    key = comm.py2f()
    agreed = _state.setdefault("agreed", {})
    if key not in agreed:
        from mpi4py import MPI

        from directcoll.runtime.mpi_wait import reduce_value

        agreed[key] = reduce_value(comm, bool(loads), MPI.MIN, timeout=timeout,
                                   what="the agreement on the C engine (does libdirectcoll load on every rank)")
    return agreed[key]


class _Program:
    """A schedule's program file loaded into the library (closed when dropped)."""

    def __init__(self, schedule: Schedule) -> None:
        self._lib = library()
        fd, path = tempfile.mkstemp(prefix="directcoll-", suffix=".dcp")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(native.encode_program(schedule))
            err = ctypes.create_string_buffer(512)
            self.handle = self._lib.directcoll_program_open(path.encode(), err, len(err))
        finally:
            os.unlink(path)
        if not self.handle:
            raise DirectcollError(f"the C engine cannot load the program of this schedule: {err.value.decode()}")

    def __del__(self) -> None:
        if getattr(self, "handle", None):
            self._lib.directcoll_program_close(self.handle)


@lru_cache(maxsize=32)
def _program(schedule: Schedule) -> _Program:
    return _Program(schedule)


@lru_cache(maxsize=16)
def _datatype(dtype: np.dtype) -> int:
    """The Fortran handle of the predefined MPI datatype of ``dtype`` (one of executor.DTYPES, native order)."""
    from mpi4py import MPI

    return {"f4": MPI.FLOAT, "f8": MPI.DOUBLE, "i4": MPI.INT32_T, "i8": MPI.INT64_T}[dtype.str[1:]].py2f()


def _buffers(n: int):
    if getattr(_local, "n", None) != n:
        _local.n, _local.failure, _local.err = n, (ctypes.c_int * (n + 2))(), ctypes.create_string_buffer(512)
    return _local.failure, _local.err


def run(collective: Collective, comm, send: np.ndarray, recv: np.ndarray | None, op="sum", mpi_op=None, *,
        schedule: Schedule, in_place: bool, timeout: float | None, progress=None, what: str | None = None,
        root: int | None = None) -> None:
    """Run ``schedule`` on ``comm`` through libdirectcoll: the arguments are those of the Python engine's
    :mod:`~directcoll.runtime.executor` functions (1-D views ``send`` and ``recv`` as MPI reads them; ``op`` its
    name for the checks, ``mpi_op`` the ``MPI.Op`` of a reduction) plus ``in_place`` (the call's sendbuf was
    ``MPI.IN_PLACE``: ``send`` is then the view of recvbuf that holds the input; a broadcast's one buffer, as
    MPI_Bcast's). Broadcast and reduce: ``root`` (None: the schedule's, which must equal it); a reduce's ``recv``
    may be None off the root (it is not touched there).

    Returns:
        None; ``recv`` is written in place.

    Raises:
        DirectcollError: what :func:`~directcoll.runtime.executor.validate` raises (before any message); the
            library cannot be loaded; a rank could not build its plan (raised on every rank, before any message);
            an MPI error in a step.
        DeadlineError: a step did not complete within ``timeout`` seconds (names the rank, the step and the peers
            it waited on; their requests are cancelled), or the setup before the first message did not (a call that
            builds a plan: the ranks agree that each built it, docs/runtime.md "Failing safe").

    Source: docs/runtime.md, "The C engine"; MPI 4.1 standard, Ch. 6.
    """
    n, rank = comm.Get_size(), comm.Get_rank()
    if not (executor.validate_rooted(collective, send, recv, schedule=schedule, rank=rank, nranks=n, op=op, root=root)
            if collective.rooted else executor.validate(collective, send, recv, schedule=schedule, nranks=n, op=op,
                                                        what=what)):
        return
    program = _program(schedule)
    count = {Collective.ALLREDUCE: send.size, Collective.REDUCE_SCATTER: send.size // n,
             Collective.ALLGATHER: send.size, Collective.ALLTOALL: send.size // n, Collective.BROADCAST: send.size,
             Collective.REDUCE: send.size}[collective]
    words = progress.step_words() if progress is not None else None
    failure, err = _buffers(n)
    rc = program._lib.directcoll_run(
        program.handle, native.COLLECTIVE_CODES[collective], int(in_place), None if in_place else send.ctypes.data,
        None if recv is None else recv.ctypes.data, count, _datatype(send.dtype),
        mpi_op.py2f() if mpi_op is not None else 0, comm.py2f(),
        float(timeout or 0.0), None if words is None else ctypes.addressof(words), failure, err, len(err))
    if rc == _RUN_DEADLINE:
        peers = list(failure[2:2 + failure[1]])
        if failure[0] < 0:  # before the first message: the duplicate of the communicator, or the ranks' agreement
            raise executor.DeadlineError(rank, "the C engine's setup before the first message (the communicator's "
                                         "MPI_Comm_idup, or the ranks' agreement on their plans)",
                                         float(timeout or 0.0), peers)
        raise executor.deadline_error(rank, failure[0], float(timeout or 0.0), peers)
    if rc != _RUN_OK:
        raise DirectcollError(f"rank {rank}: the C engine {'refused' if rc == _RUN_REFUSED else 'failed'}: "
                              f"{err.value.decode(errors='replace')}")
