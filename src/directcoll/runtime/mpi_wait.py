"""Waiting with a deadline on MPI requests, and the MPI library's own collectives waited for that way: the
waits every executor step, barrier and native collective of :mod:`directcoll.runtime.mpi` uses (re-exported there).

A wait tests its requests back to back for a moment, then yields, then sleeps with doubling naps, so ranks that
share a core do not starve each other; past the deadline it cancels what is left and raises
:class:`~directcoll.runtime.executor.DeadlineError` naming the rank, what it waited for and the peers.

Importing this module imports ``mpi4py.MPI`` (initializing MPI); without mpi4py it raises
:class:`~directcoll.errors.MissingDependencyError` naming the ``mpi`` extra.

Source: docs/runtime.md, "Failures"; MPI 4.1 standard, Sec. 3.7.3 (MPI_Testall), 6.12 (nonblocking collectives).
"""

from __future__ import annotations

import os
import time

import numpy as np

from directcoll.errors import DirectcollError
from directcoll.runtime import MPI_EXTRA, missing
from directcoll.runtime.executor import DeadlineError

try:
    from mpi4py import MPI
except ImportError as _exc:
    raise missing("directcoll.runtime.mpi_wait", MPI_EXTRA, _exc) from _exc

__all__ = ["NATIVE", "barrier", "native", "other_ranks", "reduce_value", "wait"]

#: a wait tests its requests back to back for SPIN_S after it starts or after any of them completed, then yields
#: the processor between tests (other ranks may share it) until YIELD_S, then sleeps between tests, from FIRST_NAP_S
#: doubling up to MAX_NAP_S
SPIN_S, YIELD_S = 50e-6, 0.002
FIRST_NAP_S, MAX_NAP_S = 20e-6, 0.0005
#: the MPI library's own non-blocking collective, by schedule collective (a reduce-scatter schedule scatters equal
#: blocks: MPI_Reduce_scatter_block)
NATIVE = {"allreduce": "Iallreduce", "reduce_scatter": "Ireduce_scatter_block", "allgather": "Iallgather",
          "alltoall": "Ialltoall", "broadcast": "Ibcast", "reduce": "Ireduce"}

def wait(requests, timeout: float | None, *, rank: int, what: str, peers) -> None:
    """Wait for every MPI request of ``requests`` (a list, completed ones become null), at most ``timeout``
    seconds (None: no deadline, MPI_Waitall).

    Tests back to back while requests complete (:data:`SPIN_S` after the last completion), then yields the
    processor between tests, then sleeps between tests for growing naps: a healthy wait costs about what
    MPI_Waitall costs, ranks that share a processor let each other run, and a hung wait uses little CPU.

    Raises:
        DeadlineError: the deadline passed; names ``rank``, ``what`` (e.g. "step 3", "the barrier before
            timing") and ``peers``, the ranks it waited on. The requests are left pending.

    Source: MPI 4.1 standard, Sec. 3.7.3 and 3.7.5 (MPI_Test, MPI_Testsome, MPI_Waitall); docs/runtime.md,
    "Failures" (every wait has the same deadline).
    """
    if timeout is None:
        MPI.Request.Waitall(requests)
        return
    if len(requests) == 1:  # one request (a collective): Test is cheaper than Testsome
        req = requests[0]
        if req.Test():
            return
        test = lambda: None if req.Test() else []  # noqa: E731
    else:
        test = lambda: MPI.Request.Testsome(requests)  # noqa: E731 - None once all are complete (null)
    now = time.monotonic()
    deadline, active, nap = now + timeout, now, FIRST_NAP_S
    while True:
        done = test()
        if done is None:  # every request is complete
            return
        now = time.monotonic()
        if done:
            active, nap = now, FIRST_NAP_S
        elif now >= deadline:
            raise DeadlineError(rank, what, timeout, peers)
        elif now - active < SPIN_S:
            continue
        elif now - active < YIELD_S:
            os.sched_yield()
        else:
            time.sleep(min(nap, deadline - now))
            nap = min(2 * nap, MAX_NAP_S)


def other_ranks(comm) -> list[int]:
    """The ranks of ``comm`` other than this one (the peers a collective waits on). Raises: Nothing.
    Source: MPI 4.1 standard, Sec. 6.4 (MPI_Comm_rank, MPI_Comm_size)."""
    return [r for r in range(comm.Get_size()) if r != comm.Get_rank()]


def barrier(comm, *, timeout: float | None, what: str = "the barrier") -> None:
    """MPI_Barrier with a deadline (``comm.Ibarrier()``, then :func:`wait`).

    Raises:
        DeadlineError: not every rank reached the barrier within ``timeout`` seconds.

    Source: MPI 4.1 standard, Sec. 6.3 (MPI_Barrier) and Sec. 6.12 (MPI_Ibarrier); docs/runtime.md, "Failures".
    """
    wait([comm.Ibarrier()], timeout, rank=comm.Get_rank(), what=what, peers=other_ranks(comm))


def native(comm, collective: str, sendbuf, recvbuf, op=MPI.SUM, *, timeout: float | None = None,
           root: int = 0) -> None:
    """The MPI library's own ``collective`` on ``comm`` (:data:`NATIVE`: allreduce, reduce_scatter =
    MPI_Reduce_scatter_block, allgather or alltoall), started non-blocking (``comm.Iallreduce(sendbuf, recvbuf,
    op)``, ...) and waited for with a deadline of ``timeout`` seconds. ``op`` is used by the reductions only.

    Raises:
        DirectcollError: an unknown collective, or an ``op`` that is not an ``MPI.Op``.
        DeadlineError: it did not complete within ``timeout`` seconds.

    Broadcast (MPI_Ibcast) copies the ``root``'s sendbuf into its recvbuf first (ncclBroadcast's form); reduce is
    MPI_Ireduce to ``root``.

    Source: MPI 4.1 standard, Sec. 6.12 (nonblocking collectives: MPI_Iallreduce, MPI_Ireduce_scatter_block,
    MPI_Iallgather, MPI_Ialltoall, MPI_Ibcast, MPI_Ireduce); docs/runtime.md (``--compare-native``).
    """
    if collective not in NATIVE:
        raise DirectcollError(f"unknown collective {collective!r}; accepted: {', '.join(NATIVE)}")
    if not isinstance(op, MPI.Op):
        raise DirectcollError(f"op {op!r} is not an MPI.Op; accepted: MPI.SUM, MPI.PROD, MPI.MAX, MPI.MIN, ...")
    start = getattr(comm, NATIVE[collective])
    reduces = collective in ("allreduce", "reduce_scatter")
    if collective == "broadcast":  # ncclBroadcast's form: the root's sendbuf into every recvbuf (MPI_Ibcast)
        if comm.Get_rank() == root:
            recvbuf[...] = sendbuf
        req = comm.Ibcast(recvbuf, root=root)
    elif collective == "reduce":
        req = comm.Ireduce(sendbuf, recvbuf, op=op, root=root)
    else:
        req = start(sendbuf, recvbuf, op=op) if reduces else start(sendbuf, recvbuf)
    wait([req], timeout, rank=comm.Get_rank(), what=f"MPI {NATIVE[collective]}", peers=other_ranks(comm))


def reduce_value(comm, value, op=MPI.SUM, *, timeout: float | None, what: str = "a reduction"):
    """``op`` of one number over the ranks of ``comm`` (``comm.allreduce(value, op)``), with a deadline of
    ``timeout`` seconds: a float for a float, an int for an int, a bool for a bool (MPI.MIN of bools: all true).

    Raises:
        DeadlineError: as :func:`native`, naming ``what`` (e.g. "the reduction of the times").

    Source: MPI 4.1 standard, Sec. 6.9.6 (MPI_Allreduce, here non-blocking, Sec. 6.12); docs/runtime.md, "Failures"
    (the reductions of times and checks).
    """
    data = np.array([value], dtype=np.float64 if isinstance(value, float) else np.int64)
    out = np.empty_like(data)
    try:
        native(comm, "allreduce", data, out, op, timeout=timeout)
    except DeadlineError as exc:
        raise DeadlineError(exc.rank, what, exc.timeout, exc.peers) from None
    return type(value)(out[0]) if not isinstance(value, bool) else bool(out[0])
