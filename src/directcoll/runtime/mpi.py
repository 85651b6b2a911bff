"""Run schedules on MPI through mpi4py's buffer API: the collectives of ``MPI.Comm`` as functions of the communicator.

``allreduce(comm, sendbuf, recvbuf, op=MPI.SUM, *, schedule)`` is ``comm.Allreduce(sendbuf, recvbuf, op=MPI.SUM)``
run with ``schedule`` (``directcoll.registry.build``); likewise :func:`reduce_scatter_block`,
:func:`reduce_scatter` (equal ``recvcounts`` only), :func:`allgather` and :func:`alltoall`. They take what the
mpi4py methods take and return None as they do:

- buffers: numpy arrays (or any contiguous object with the buffer protocol), or the buffer specifications
  ``[buf, datatype]`` and ``[buf, count, datatype]`` / ``[buf, (count, displ), datatype]`` (``datatype`` an
  ``MPI.Datatype``: the bytes of ``buf`` read as that type), of float32, float64, int32 or int64 elements, one type
  for both buffers;
- ``MPI.IN_PLACE`` as ``sendbuf`` wherever MPI accepts it (all four collectives), with MPI's meaning;
- ``op``: ``MPI.SUM``, ``MPI.PROD``, ``MPI.MAX`` or ``MPI.MIN`` (:data:`OPS`), or a user-defined ``MPI.Op.Create(fn,
  commute)`` for allreduce and reduce-scatter, applied with ``Reduce_local``; a non-commutative one
  (``commute=False``) only on a schedule that reduces in rank order (docs/algorithms.md; refused with one line
  elsewhere), each reduction then taking its operands in rank order.

The functions take the communicator first (``allreduce(comm, ...)`` is ``MPI.Comm.Allreduce(comm, ...)``, the
method unbound) rather than wrapping it in a class: the schedule is an argument of every call anyway (it depends on
the collective and the rank count), any communicator works as it is (``COMM_WORLD``, ``comm.Split(...)``), and there
is no wrapper to keep in step with it.

Every step posts non-blocking sends and receives (one message per transfer of the schedule) and waits for them with
a deadline (:func:`wait`), so a peer that died or hangs makes this rank raise a clear error instead of hanging.
:func:`barrier`, :func:`native` (the MPI library's own collective) and :func:`reduce_value` wait with the same
deadline. Compiled programs are cached per (schedule, element count). An all-to-all only copies: its schedule may
relay blocks through other ranks but never reduces.

A schedule's reductions combine every contribution exactly once (that is what the verifier proves), so any
commutative and associative op gives MPI's result: exactly for integers, up to reassociation for floats; a
non-commutative one needs a schedule whose reductions also run in rank order (``directcoll verify --order``).
The checks, buffer layout and step loop are shared with the torch.distributed executor
(:mod:`directcoll.runtime.executor`); this module only reads the arguments and moves the messages. With
``engine="c"`` (the default) the steps run in libdirectcoll instead (:mod:`directcoll.runtime.cengine`), the same
checks first; calls it does not serve (a user-defined op) run here, with a note on stderr.

Importing this module imports ``mpi4py.MPI``, which initializes MPI (as in any mpi4py program); without mpi4py it
raises :class:`~directcoll.errors.MissingDependencyError` naming the ``mpi`` extra (``pip install
'directcoll[mpi]'``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from directcoll.errors import DirectcollError
from directcoll.runtime import MPI_EXTRA, cengine, executor, missing
from directcoll.runtime.executor import DTYPES, DeadlineError, deadline_error
from directcoll.schedule.ir import Collective, Schedule

try:
    from mpi4py import MPI
    from mpi4py.util import dtlib
except ImportError as _exc:
    raise missing("directcoll.runtime.mpi", MPI_EXTRA, _exc) from _exc

# after the check above, so that a missing mpi4py is named for this module
from directcoll.runtime.mpi_wait import NATIVE, barrier, native, reduce_value, wait  # noqa: E402

__all__ = ["DTYPES", "EXECUTORS", "NATIVE", "OPS", "DeadlineError", "allgather", "allreduce", "alltoall", "barrier",
           "bcast", "broadcast", "native", "reduce", "reduce_scatter", "reduce_scatter_block", "reduce_value", "wait"]

#: tag of the messages of step t (schedules have far fewer steps than MPI's minimum tag upper bound)
_TAG_BASE = 7000
#: the ops the reductions take, by MPI name. A schedule combines every contribution exactly once, so any commutative
#: and associative op gives MPI's result; these four are the ones checked against the MPI library (the selftest).
OPS = {"SUM": MPI.SUM, "PROD": MPI.PROD, "MAX": MPI.MAX, "MIN": MPI.MIN}
#: the names of MPI's predefined ops, to name a refused one
_MPI_OP_NAMES = [name for name in dir(MPI) if name.isupper() and isinstance(getattr(MPI, name), MPI.Op)]
_FORMS = "a numpy array, [buf, datatype], [buf, count, datatype] or [buf, (count, displ), datatype]"


def _reduce_local(op, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    """left o right with a user-defined MPI.Op: MPI_Reduce_local(inbuf, inoutbuf) sets inoutbuf = inbuf o inoutbuf."""
    out = np.array(right, copy=True)
    op.Reduce_local(np.ascontiguousarray(left), out)
    return out


# -- the arguments, as mpi4py reads them --------------------------------------------------------------------------


def _op(op) -> str | executor.UserOp:
    """The executor's name ("sum", ...) of the MPI.Op ``op``, or for a user-defined one (``MPI.Op.Create(fn,
    commute)``) an :class:`~directcoll.runtime.executor.UserOp` applying it with ``Reduce_local`` (a non-commutative
    one runs only on a schedule that reduces in rank order: the executor refuses it elsewhere)."""
    if isinstance(op, MPI.Op):
        for name, known in OPS.items():
            if op == known:
                return name.lower()
        builtin = next((f"MPI.{n}" for n in _MPI_OP_NAMES if op == getattr(MPI, n)), None)
        if builtin is None:
            return executor.UserOp(partial(_reduce_local, op), commutative=bool(op.is_commutative),
                                   name="the user-defined MPI.Op" + ("" if op.is_commutative else " (commute=False)"))
        what = builtin
    else:
        what = f"{op!r} (a {type(op).__name__}, not an MPI.Op)"
    raise DirectcollError(f"op {what} is not supported: give {', '.join('MPI.' + n for n in OPS)} (a schedule "
                          "combines every contribution once, with a commutative and associative op)")


def _buffer(buf, name: str, *, writable: bool) -> np.ndarray:
    """The 1-D numpy view, in memory order, of the mpi4py buffer argument ``buf`` (:data:`_FORMS`)."""
    data, datatype, count, displ = buf, None, None, 0
    if isinstance(buf, list | tuple):
        if len(buf) == 2:
            data, datatype = buf
        elif len(buf) == 3:
            data, count, datatype = buf
            if isinstance(count, list | tuple) and len(count) == 2:
                count, displ = count
        if not isinstance(datatype, MPI.Datatype):
            raise DirectcollError(f"{name}: a {type(buf).__name__} of {len(buf)} items is not a buffer "
                                  f"specification; give {_FORMS} (datatype: an MPI.Datatype such as MPI.DOUBLE)")
    if data is MPI.IN_PLACE:
        raise DirectcollError(f"{name}: MPI.IN_PLACE is accepted as sendbuf only (recvbuf then holds the input)")
    if isinstance(data, np.ndarray):
        arr = data
    else:
        try:
            arr = np.asarray(memoryview(data))
        except TypeError:
            raise DirectcollError(f"{name} is a {type(data).__name__}, not a buffer; give {_FORMS}") from None
    if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
        raise DirectcollError(f"{name} is not contiguous, as MPI buffers must be (numpy.ascontiguousarray "
                              "copies it)")
    flat = arr.reshape(-1, order="A")  # a view, in memory order (as MPI reads it)
    if datatype is not None:
        try:
            dtype = dtlib.to_numpy_dtype(datatype)
        except (ValueError, TypeError, KeyError):
            raise DirectcollError(f"{name}: its MPI datatype has no numpy equivalent; accepted: MPI.FLOAT, "
                                  "MPI.DOUBLE, MPI.INT32_T, MPI.INT64_T (or MPI.INT, MPI.LONG ...)") from None
        if flat.nbytes % dtype.itemsize:
            raise DirectcollError(f"{name}: {flat.nbytes} bytes do not hold a whole number of {dtype} elements")
        flat = flat.view(np.uint8).view(dtype)
        if count is not None:
            if not all(isinstance(v, int | np.integer) and v >= 0 for v in (count, displ)) or \
                    displ + count > flat.size:
                raise DirectcollError(f"{name}: count {count!r} and displacement {displ!r} do not lie within its "
                                      f"{flat.size} {dtype} elements")
            flat = flat[displ:displ + count]
    if writable and not flat.flags.writeable:
        raise DirectcollError(f"{name} is read-only; the result is written into it")
    return flat


def _send(sendbuf, recv: np.ndarray, collective: str) -> np.ndarray:
    """The view of ``sendbuf`` (not MPI.IN_PLACE), refused where it overlaps ``recv``: MPI forbids aliasing."""
    send = _buffer(sendbuf, "sendbuf", writable=False)
    if np.shares_memory(send, recv):
        raise DirectcollError(f"{collective}: sendbuf and recvbuf overlap, and MPI forbids aliased buffers; pass "
                              f"MPI.IN_PLACE as sendbuf for an in-place {collective}")
    return send


def _intra(comm) -> None:
    if isinstance(comm, MPI.Comm) and comm.Is_inter():
        raise DirectcollError("an intercommunicator is not supported: give an intracommunicator (e.g. "
                              "comm.Merge())")


def _on_c(engine: str, collective: Collective, comm, send, recv, name="sum", op=None, *, sendbuf, schedule,
          timeout, progress, what=None, root=None) -> bool:
    """Run the call on the C engine when ``engine`` asks for it and it serves ``name`` (cengine.choose); whether
    it did (False: the caller runs the Python engine). Broadcast and reduce: ``root`` as the executors take it; a
    broadcast's ``sendbuf`` is MPI.IN_PLACE for MPI_Bcast's one buffer."""
    if engine == "c" and isinstance(comm, MPI.Comm):  # the ranks agree on the engine: a message, so check first
        _intra(comm)
        n = comm.Get_size()
        if not (executor.validate_rooted(collective, send, recv, schedule=schedule, rank=comm.Get_rank(), nranks=n,
                                         op=name, root=root) if collective.rooted else
                executor.validate(collective, send, recv, schedule=schedule, nranks=n, op=name, what=what)):
            return True  # nothing to do (count 0), on either engine
    if cengine.choose(engine, name, send.dtype, comm if isinstance(comm, MPI.Comm) else None, timeout) != "c":
        return False
    _intra(comm)
    cengine.run(collective, comm, send, recv, name, op, schedule=schedule, in_place=sendbuf is MPI.IN_PLACE,
                timeout=timeout, progress=progress, what=what, root=root)
    return True


def _context(comm, schedule: Schedule, timeout: float | None, progress) -> dict:
    _intra(comm)
    return {"schedule": schedule, "rank": comm.Get_rank(), "nranks": comm.Get_size(),
            "exchange": _exchange(comm, timeout, progress)}


def _exchange(comm, timeout: float | None, progress) -> executor.Exchange:
    rank = comm.Get_rank()

    def exchange(t, sends, recvs) -> None:
        if progress is not None:
            progress.step(t)
        requests = [comm.Irecv(buf, source=peer, tag=_TAG_BASE + t) for peer, buf in recvs]
        requests += [comm.Isend(buf, dest=peer, tag=_TAG_BASE + t) for peer, buf in sends]
        if timeout is None:
            wait(requests, None, rank=rank, what=f"step {t}", peers=())
            return
        try:
            wait(requests, timeout, rank=rank, what=f"step {t}", peers=[p for p, _ in recvs] + [p for p, _ in sends])
        except DeadlineError as exc:
            for req in requests:  # point-to-point: pending ones can be cancelled
                if req:
                    req.Cancel()
            raise deadline_error(rank, t, timeout, exc.peers) from None

    return exchange


# -- the collectives ----------------------------------------------------------------------------------------------


def allreduce(comm, sendbuf, recvbuf, op=MPI.SUM, *, schedule: Schedule, timeout: float | None = None,
              progress=None, engine: str = "c") -> None:
    """``comm.Allreduce(sendbuf, recvbuf, op)`` (MPI_Allreduce, MPI 4.1 §6.9.6) run with ``schedule``:
    recvbuf[i] = op over the ranks of sendbuf[i].

    Args:
        comm: an intracommunicator of N ranks (``MPI.COMM_WORLD``, ``comm.Split(...)``).
        sendbuf: m elements (a buffer or buffer specification, see the module), or ``MPI.IN_PLACE``: the input is
            then recvbuf's m elements, replaced by the result.
        recvbuf: m elements of sendbuf's type, written in place; it must not overlap sendbuf.
        op: ``MPI.SUM``, ``MPI.PROD``, ``MPI.MAX``, ``MPI.MIN`` or a user-defined ``MPI.Op`` (the module).
        schedule: an allreduce schedule for N ranks (``directcoll.registry.build(name, topology)``); any m.
        timeout: seconds every step may take (None: no deadline).
        progress: a :class:`~directcoll.runtime.progress.Progress` told of every step (``directcoll run``), or
            None.
        engine: ``"c"`` (libdirectcoll, :mod:`~directcoll.runtime.cengine`; a user-defined op, or a library that
            cannot be built or loaded, runs on the Python engine with one note on stderr) or ``"python"``.

    Raises:
        DirectcollError: a schedule of another collective or rank count; buffers of different sizes or types, of
            a type other than float32, float64, int32, int64, not contiguous, overlapping, or a read-only
            recvbuf; another built-in op, or a non-commutative user op on a schedule that does not reduce in rank
            order — all checked before any message is sent.
        DeadlineError: a step not finished within ``timeout`` seconds (names the rank, the step and the peers).

    Example (``mpiexec -n 4 python3 script.py``)::

        from mpi4py import MPI
        import numpy as np
        from directcoll.registry import build
        from directcoll.runtime import mpi as dc

        comm = MPI.COMM_WORLD
        n = comm.Get_size()
        schedule = build("swing", f"ring:{n}")
        x = np.full(1000, comm.Get_rank(), dtype=np.float64)
        dc.allreduce(comm, MPI.IN_PLACE, x, op=MPI.SUM, schedule=schedule)   # x[:] = 0 + 1 + ... + n-1

    Source: MPI 4.1 standard, Sec. 6.9.6 (MPI_Allreduce); docs/runtime.md, "Library".
    """
    name = _op(op)
    recv = _buffer(recvbuf, "recvbuf", writable=True)
    send = recv if sendbuf is MPI.IN_PLACE else _send(sendbuf, recv, "allreduce")
    if _on_c(engine, Collective.ALLREDUCE, comm, send, recv, name, op, sendbuf=sendbuf, schedule=schedule,
             timeout=timeout, progress=progress):
        return
    executor.allreduce(send, recv, op=name, **_context(comm, schedule, timeout, progress))


def reduce_scatter_block(comm, sendbuf, recvbuf, op=MPI.SUM, *, schedule: Schedule, timeout: float | None = None,
                         progress=None, engine: str = "c") -> None:
    """``comm.Reduce_scatter_block(sendbuf, recvbuf, op)`` (MPI_Reduce_scatter_block, MPI 4.1 §6.10.1) run with
    ``schedule``: the op over the ranks of sendbuf, of N·k elements, is cut into N blocks of k, and rank r receives
    block r in recvbuf (k elements).

    Args:
        comm: an intracommunicator of N ranks.
        sendbuf: N·k elements, or ``MPI.IN_PLACE``: recvbuf then holds the N·k input elements and receives the
            result in its first k.
        recvbuf: k elements of sendbuf's type (N·k with ``MPI.IN_PLACE``), written in place; it must not overlap
            sendbuf.
        op, timeout, progress, engine: as :func:`allreduce`.
        schedule: a reduce_scatter schedule for N ranks.

    Raises:
        DirectcollError: as :func:`allreduce`; with ``MPI.IN_PLACE``, a recvbuf whose size is not a multiple of N.
        DeadlineError: as :func:`allreduce`.

    Example (``mpiexec -n 4``; ``comm``, ``n``, ``dc`` as in :func:`allreduce`)::

        schedule = build("swing", f"ring:{n}", "reduce_scatter")
        x = np.ones(n * 256)                         # N blocks of 256
        mine = np.empty(256)
        dc.reduce_scatter_block(comm, x, mine, op=MPI.SUM, schedule=schedule)     # mine[:] = n

    Source: MPI 4.1 standard, Sec. 6.10.1 (MPI_Reduce_scatter_block); docs/runtime.md, "Library".
    """
    name = _op(op)
    recv = _buffer(recvbuf, "recvbuf", writable=True)
    if sendbuf is MPI.IN_PLACE:
        n = comm.Get_size()
        if recv.size % n:
            raise DirectcollError(f"reduce_scatter_block with MPI.IN_PLACE: recvbuf holds the whole input, N x "
                                  f"recvcount elements; its {recv.size} elements are not a multiple of {n} ranks")
        send, recv = recv, recv[: recv.size // n]
    else:
        send = _send(sendbuf, recv, "reduce_scatter_block")
    if _on_c(engine, Collective.REDUCE_SCATTER, comm, send, recv, name, op, sendbuf=sendbuf, schedule=schedule,
             timeout=timeout, progress=progress, what="reduce_scatter_block"):
        return
    executor.reduce_scatter(send, recv, op=name, what="reduce_scatter_block",
                            **_context(comm, schedule, timeout, progress))


def reduce_scatter(comm, sendbuf, recvbuf, recvcounts=None, op=MPI.SUM, *, schedule: Schedule,
                   timeout: float | None = None, progress=None, engine: str = "c") -> None:
    """``comm.Reduce_scatter(sendbuf, recvbuf, recvcounts, op)`` (MPI_Reduce_scatter, MPI 4.1 §6.10.2) run with
    ``schedule``, for equal ``recvcounts`` only: a schedule scatters N equal blocks, so this is
    :func:`reduce_scatter_block` with k = recvcounts[r].

    Args:
        comm: an intracommunicator of N ranks.
        sendbuf: sum(recvcounts) = N·k elements, or ``MPI.IN_PLACE``: recvbuf then holds the N·k input elements
            and receives the result in its first k (``recvcounts`` is then required, as MPI requires it).
        recvbuf: k = recvcounts[rank] elements, written in place; it must not overlap sendbuf.
        recvcounts: N equal counts, or None: every rank receives recvbuf's size (as mpi4py does).
        op, timeout, progress, engine: as :func:`allreduce`.
        schedule: a reduce_scatter schedule for N ranks.

    Raises:
        DirectcollError: recvcounts that differ (use :func:`reduce_scatter_block`, or pad the blocks to one size),
            are not N non-negative integers, or do not match recvbuf; otherwise as :func:`reduce_scatter_block`.
        DeadlineError: as :func:`allreduce`.

    Example (``mpiexec -n 4``; ``comm``, ``n``, ``dc``, ``schedule`` as in :func:`reduce_scatter_block`)::

        x = np.ones(n * 256)
        dc.reduce_scatter(comm, MPI.IN_PLACE, x, [256] * n, op=MPI.SUM, schedule=schedule)   # x[:256] = n

    Source: MPI 4.1 standard, Sec. 6.10.2 (MPI_Reduce_scatter); docs/runtime.md, "Library".
    """
    name = _op(op)
    n, rank = comm.Get_size(), comm.Get_rank()
    counts = None if recvcounts is None else _counts(recvcounts, n)
    recv = _buffer(recvbuf, "recvbuf", writable=True)
    if sendbuf is MPI.IN_PLACE:
        if counts is None:
            raise DirectcollError("reduce_scatter with MPI.IN_PLACE needs recvcounts (recvbuf holds the whole "
                                  "input); or call reduce_scatter_block")
        if recv.size < n * counts[0]:
            raise DirectcollError(f"reduce_scatter with MPI.IN_PLACE: recvbuf holds the whole input, sum(recvcounts) "
                                  f"= {n * counts[0]} elements; it has {recv.size}")
        send, recv = recv[: n * counts[0]], recv[: counts[0]]
    else:
        send = _send(sendbuf, recv, "reduce_scatter")
        if counts is not None and counts[rank] != recv.size:
            raise DirectcollError(f"reduce_scatter: recvcounts[{rank}] is {counts[rank]}, but recvbuf has "
                                  f"{recv.size} elements")
    if _on_c(engine, Collective.REDUCE_SCATTER, comm, send, recv, name, op, sendbuf=sendbuf, schedule=schedule,
             timeout=timeout, progress=progress, what="reduce_scatter"):
        return
    executor.reduce_scatter(send, recv, op=name, what="reduce_scatter", **_context(comm, schedule, timeout, progress))


def _counts(recvcounts, n: int) -> list[int]:
    try:
        counts = [int(c) for c in recvcounts if isinstance(c, int | np.integer) and not isinstance(c, bool) and c >= 0]
        valid = len(counts) == len(recvcounts) == n
    except TypeError:  # not a sequence
        valid = False
    if not valid:
        raise DirectcollError(f"reduce_scatter: recvcounts must be {n} non-negative integers, one per rank; got "
                              f"{recvcounts!r}")
    if len(set(counts)) > 1:
        raise DirectcollError(f"reduce_scatter: recvcounts {counts} differ, and a schedule scatters N equal blocks "
                              "(MPI_Reduce_scatter_block); call reduce_scatter_block, padding the blocks to one "
                              "size")
    return counts


def allgather(comm, sendbuf, recvbuf, *, schedule: Schedule, timeout: float | None = None, progress=None,
              engine: str = "c") -> None:
    """``comm.Allgather(sendbuf, recvbuf)`` (MPI_Allgather, MPI 4.1 §6.7) run with ``schedule``: recvbuf = the
    ranks' sendbufs concatenated in rank order.

    Args:
        comm: an intracommunicator of N ranks.
        sendbuf: k elements, or ``MPI.IN_PLACE``: the rank's k elements are already in place, at
            recvbuf[rank·k:(rank+1)·k].
        recvbuf: N·k elements of sendbuf's type, written in place; it must not overlap sendbuf.
        timeout, progress, engine: as :func:`allreduce`.
        schedule: an allgather schedule for N ranks.

    Raises:
        DirectcollError: as :func:`allreduce` (no op); with ``MPI.IN_PLACE``, a recvbuf whose size is not a
            multiple of N.
        DeadlineError: as :func:`allreduce`.

    Example (``mpiexec -n 4``; ``comm``, ``n``, ``dc`` as in :func:`allreduce`)::

        schedule = build("swing", f"ring:{n}", "allgather")
        everyone = np.zeros((n, 256))
        everyone[comm.Get_rank()] = comm.Get_rank()
        dc.allgather(comm, MPI.IN_PLACE, everyone, schedule=schedule)   # row r holds r

    Source: MPI 4.1 standard, Sec. 6.7 (MPI_Allgather); docs/runtime.md, "Library".
    """
    recv = _buffer(recvbuf, "recvbuf", writable=True)
    if sendbuf is MPI.IN_PLACE:
        n, rank = comm.Get_size(), comm.Get_rank()
        if recv.size % n:
            raise DirectcollError(f"allgather with MPI.IN_PLACE: recvbuf holds N blocks, this rank's in place; its "
                                  f"{recv.size} elements are not a multiple of {n} ranks")
        k = recv.size // n
        send = recv[rank * k:(rank + 1) * k]
    else:
        send = _send(sendbuf, recv, "allgather")
    if _on_c(engine, Collective.ALLGATHER, comm, send, recv, sendbuf=sendbuf, schedule=schedule, timeout=timeout,
             progress=progress):
        return
    executor.allgather(send, recv, **_context(comm, schedule, timeout, progress))


def alltoall(comm, sendbuf, recvbuf, *, schedule: Schedule, timeout: float | None = None, progress=None,
             engine: str = "c") -> None:
    """``comm.Alltoall(sendbuf, recvbuf)`` (MPI_Alltoall, MPI 4.1 §6.8) run with ``schedule``: sendbuf and recvbuf
    hold N equal parts of m elements (sendcount = recvcount = m); part j of sendbuf goes to rank j, and part i of
    recvbuf comes from rank i. The schedule's block ((i N + j) k + c) carries part j of rank i's sendbuf (it may be
    relayed through other ranks); the rank's own part is copied locally.

    Args:
        comm: an intracommunicator of N ranks.
        sendbuf: N·m elements, or ``MPI.IN_PLACE``: recvbuf then holds the input and is replaced by the result.
        recvbuf: N·m elements of sendbuf's type, written in place; it must not overlap sendbuf.
        timeout, progress, engine: as :func:`allreduce`.
        schedule: an all-to-all schedule for N ranks (copies only).

    Raises:
        DirectcollError: a schedule of another collective or rank count, or one that reduces; buffers of
            different sizes, not N equal parts, of mixed or unsupported types, not contiguous,
            overlapping, or a read-only recvbuf (all checked before any message is sent).
        DeadlineError: as :func:`allreduce`.

    Example (``mpiexec -n 4``; ``comm``, ``n``, ``dc`` as in :func:`allreduce`)::

        schedule = build("direct", f"ring:{n}", "alltoall")
        x = np.arange(n * 100, dtype=np.int64)       # part j (100 elements) goes to rank j
        y = np.empty_like(x)                         # part i comes from rank i
        dc.alltoall(comm, [x, MPI.INT64_T], [y, MPI.INT64_T], schedule=schedule)

    Source: MPI 4.1 standard, Sec. 6.8 (MPI_Alltoall); docs/runtime.md, "Library" and "All-to-all".
    """
    recv = _buffer(recvbuf, "recvbuf", writable=True)
    send = recv if sendbuf is MPI.IN_PLACE else _send(sendbuf, recv, "alltoall")
    if _on_c(engine, Collective.ALLTOALL, comm, send, recv, sendbuf=sendbuf, schedule=schedule, timeout=timeout,
             progress=progress):
        return
    executor.alltoall(send, recv, **_context(comm, schedule, timeout, progress))


def bcast(comm, buf, root: int | None = None, *, schedule: Schedule, timeout: float | None = None,
          progress=None, engine: str = "c") -> None:
    """``comm.Bcast(buf, root)`` (MPI_Bcast, MPI 4.1 §6.4) run with ``schedule``: every rank's buf = the root's.

    ``root`` defaults to the schedule's (``meta["root"]``; another one is refused); timeout, progress, engine: as
    :func:`allreduce`.

    Raises:
        DirectcollError: a schedule of another collective, rank count or root, or a bad buffer. DeadlineError: as
            :func:`allreduce`.

    Example (``mpiexec -n 4``; ``comm``, ``n``, ``dc`` as in :func:`allreduce`)::

        schedule = build("binomial", f"ring:{n}", "broadcast", root=2)
        x = np.arange(1000.0) if comm.Get_rank() == 2 else np.empty(1000)
        dc.bcast(comm, x, 2, schedule=schedule)   # every x holds 0, 1, ..., 999

    Source: MPI 4.1 standard, Sec. 6.4 (MPI_Bcast); docs/runtime.md, "Library".
    """
    data = _buffer(buf, "buf", writable=True)
    if _on_c(engine, Collective.BROADCAST, comm, data, data, sendbuf=MPI.IN_PLACE, schedule=schedule, timeout=timeout,
             progress=progress, root=root):
        return
    executor.broadcast(data, data, root=root, **_context(comm, schedule, timeout, progress))


def broadcast(comm, sendbuf, recvbuf, *, schedule: Schedule, timeout: float | None = None, progress=None,
              engine: str = "c") -> None:
    """ncclBroadcast's form of :func:`bcast`: every rank's recvbuf = the root's sendbuf (``schedule.root``; the
    executor form of ``directcoll run``). Raises: as :func:`bcast`. Source: MPI 4.1 standard, Sec. 6.4.
    """
    recv = _buffer(recvbuf, "recvbuf", writable=True)
    send = _buffer(sendbuf, "sendbuf", writable=False)
    if _on_c(engine, Collective.BROADCAST, comm, send, recv, sendbuf=sendbuf, schedule=schedule, timeout=timeout,
             progress=progress):
        return
    executor.broadcast(send, recv, **_context(comm, schedule, timeout, progress))


def reduce(comm, sendbuf, recvbuf, op=MPI.SUM, root: int | None = None, *, schedule: Schedule,
           timeout: float | None = None, progress=None, engine: str = "c") -> None:
    """``comm.Reduce(sendbuf, recvbuf, op, root)`` (MPI_Reduce, MPI 4.1 §6.9.1) run with ``schedule``: the root's
    recvbuf = op over the ranks of sendbuf; recvbuf is ignored elsewhere (it may be None there).

    sendbuf may be ``MPI.IN_PLACE`` at the root; ``root`` defaults to the schedule's; op, timeout, progress: as
    :func:`allreduce` (a non-commutative op needs an order-preserving schedule); engine: as :func:`allreduce`.

    Raises:
        DirectcollError: as :func:`allreduce`, or a root other than the schedule's. DeadlineError: as :func:`allreduce`.

    Example (``mpiexec -n 4``; ``comm``, ``n``, ``dc`` as in :func:`allreduce`)::

        schedule = build("binomial", f"ring:{n}", "reduce")
        total = np.empty(1000) if comm.Get_rank() == 0 else None
        dc.reduce(comm, np.ones(1000), total, op=MPI.SUM, root=0, schedule=schedule)   # total[:] = n at rank 0

    Source: MPI 4.1 standard, Sec. 6.9.1 (MPI_Reduce); docs/runtime.md, "Library".
    """
    name = _op(op)
    mine = comm.Get_rank() == (schedule.root if root is None else root)
    recv = _buffer(recvbuf, "recvbuf", writable=True) if mine else None
    send = recv if sendbuf is MPI.IN_PLACE and mine else _buffer(sendbuf, "sendbuf", writable=False)
    if recv is not None and send is not recv and np.shares_memory(send, recv):
        raise DirectcollError("reduce: sendbuf and recvbuf overlap, and MPI forbids aliased buffers; pass "
                              "MPI.IN_PLACE as sendbuf at the root")
    if _on_c(engine, Collective.REDUCE, comm, send, recv, name, op, sendbuf=sendbuf, schedule=schedule,
             timeout=timeout, progress=progress, root=root):
        return
    executor.reduce(send, recv, op=name, root=root, **_context(comm, schedule, timeout, progress))


#: the executor of each schedule collective (a reduce-scatter schedule serves :func:`reduce_scatter_block`)
EXECUTORS: dict[str, Callable[..., None]] = {"allreduce": allreduce, "reduce_scatter": reduce_scatter_block,
                                             "allgather": allgather, "alltoall": alltoall,
                                             "broadcast": broadcast, "reduce": reduce}
