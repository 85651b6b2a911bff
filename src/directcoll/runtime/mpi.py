"""Run schedules on MPI (mpi4py), mirroring mpi4py's buffer-based collectives.

``allreduce(sendbuf, recvbuf, comm, schedule=...)``, ``reduce_scatter`` (MPI_Reduce_scatter_block semantics:
rank r gets block r of the reduced vector), ``allgather`` and ``alltoall`` take numpy buffers of float32,
float64, int32 or int64 and (the reductions) ops sum, prod, max, min. Every step posts non-blocking sends and
receives (one message per transfer of the schedule) and waits for them with a deadline (:func:`wait`), so a peer
that died or hangs makes this rank raise a clear error instead of hanging. :func:`barrier`, :func:`native` (the MPI
library's own collective) and :func:`reduce_value` wait with the same deadline. Compiled programs are cached per
(schedule, element count). An all-to-all only copies: its schedule may relay blocks through other ranks but never
reduces.

A schedule's reductions add every contribution exactly once (that is what the verifier proves), so any
commutative and associative op gives MPI's result: exactly for integers, up to reassociation for floats.
The checks, buffer layout and step loop are shared with the torch.distributed executor
(:mod:`directcoll.runtime.executor`); this module only moves the messages.
"""

from __future__ import annotations

import os
import time

import numpy as np

from directcoll.errors import DirectcollError
from directcoll.runtime import executor
from directcoll.runtime.executor import DTYPES, OPS, DeadlineError, deadline_error
from directcoll.schedule.ir import Schedule

__all__ = ["DTYPES", "NATIVE", "OPS", "DeadlineError", "allgather", "allreduce", "alltoall", "barrier", "native",
           "reduce_scatter", "reduce_value", "wait"]

#: tag of the messages of step t (schedules have far fewer steps than MPI's minimum tag upper bound)
_TAG_BASE = 7000
#: a wait tests its requests back to back for SPIN_S after it starts or after any of them completed, then yields
#: the processor between tests (other ranks may share it) until YIELD_S, then sleeps between tests, from FIRST_NAP_S
#: doubling up to MAX_NAP_S
SPIN_S, YIELD_S = 50e-6, 0.002
FIRST_NAP_S, MAX_NAP_S = 20e-6, 0.0005
#: the MPI library's own non-blocking collectives, by collective
NATIVE = {"allreduce": "Iallreduce", "reduce_scatter": "Ireduce_scatter_block", "allgather": "Iallgather",
          "alltoall": "Ialltoall"}
_MPI_OPS = {"sum": "SUM", "prod": "PROD", "max": "MAX", "min": "MIN"}


def wait(requests, timeout: float | None, *, rank: int, what: str, peers) -> None:
    """Wait for every MPI request of ``requests`` (a list, completed ones become null), at most ``timeout``
    seconds (None: no deadline, MPI_Waitall).

    Tests back to back while requests complete (:data:`SPIN_S` after the last completion), then yields the
    processor between tests, then sleeps between tests for growing naps: a healthy wait costs about what
    MPI_Waitall costs, ranks that share a processor let each other run, and a hung wait uses little CPU.

    Raises:
        DeadlineError: the deadline passed; names ``rank``, ``what`` (e.g. "step 3", "the barrier before
            timing") and ``peers``, the ranks it waited on. The requests are left pending.
    """
    from mpi4py import MPI

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


def _others(comm) -> list[int]:
    return [r for r in range(comm.Get_size()) if r != comm.Get_rank()]


def barrier(comm, *, timeout: float | None, what: str = "the barrier") -> None:
    """MPI_Barrier with a deadline (MPI_Ibarrier, then :func:`wait`).

    Raises:
        DeadlineError: not every rank reached the barrier within ``timeout`` seconds.
    """
    wait([comm.Ibarrier()], timeout, rank=comm.Get_rank(), what=what, peers=_others(comm))


def native(collective: str, sendbuf, recvbuf, comm, *, op: str = "sum", timeout: float | None = None):
    """The MPI library's own ``collective`` (allreduce, reduce_scatter = MPI_Reduce_scatter_block, allgather or
    alltoall) on numpy buffers, non-blocking and waited for with a deadline. Returns ``recvbuf``.

    Raises:
        DirectcollError: an unknown collective or op.
        DeadlineError: it did not complete within ``timeout`` seconds.
    """
    from mpi4py import MPI

    if collective not in NATIVE:
        raise DirectcollError(f"unknown collective {collective!r}; accepted: {', '.join(NATIVE)}")
    if op not in _MPI_OPS:
        raise DirectcollError(f"unknown op {op!r}; accepted: {', '.join(_MPI_OPS)}")
    start = getattr(comm, NATIVE[collective])
    reduces = collective in ("allreduce", "reduce_scatter")
    req = start(sendbuf, recvbuf, op=getattr(MPI, _MPI_OPS[op])) if reduces else start(sendbuf, recvbuf)
    wait([req], timeout, rank=comm.Get_rank(), what=f"MPI {NATIVE[collective]}", peers=_others(comm))
    return recvbuf


def reduce_value(value, comm, *, op: str, timeout: float | None, what: str = "a reduction"):
    """``op`` (sum, prod, max, min) of one number over the ranks, with a deadline: a float for a float, an int for
    an int or a bool. Raises as :func:`native`."""
    data = np.array([value], dtype=np.float64 if isinstance(value, float) else np.int64)
    out = np.empty_like(data)
    try:
        native("allreduce", data, out, comm, op=op, timeout=timeout)
    except DeadlineError as exc:
        raise DeadlineError(exc.rank, what, exc.timeout, exc.peers) from None
    return type(value)(out[0]) if not isinstance(value, bool) else bool(out[0])


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


def _args(sendbuf, recvbuf, comm, schedule: Schedule, timeout: float | None, progress) -> dict:
    return {"send": np.asarray(sendbuf).ravel(), "recv": np.asarray(recvbuf).reshape(-1), "schedule": schedule,
            "rank": comm.Get_rank(), "nranks": comm.Get_size(), "exchange": _exchange(comm, timeout, progress)}


def allreduce(sendbuf, recvbuf, comm, *, schedule: Schedule, op: str = "sum", timeout: float | None = None,
              progress=None):
    """MPI_Allreduce with ``schedule``: recvbuf[i] = op over ranks of sendbuf[i]. Every step must complete within
    ``timeout`` seconds (None: no deadline); ``progress`` (a :class:`~directcoll.runtime.progress.Progress`, as
    ``directcoll run`` passes) is told of every step.

    Raises:
        DirectcollError: a schedule of another collective or rank count, mismatched buffers or unknown op, checked
            before any message is sent.
        DeadlineError: a step not finished within ``timeout`` seconds (names the rank, the step and the peers).
    """
    executor.allreduce(**_args(sendbuf, recvbuf, comm, schedule, timeout, progress), op=op)
    return recvbuf


def reduce_scatter(sendbuf, recvbuf, comm, *, schedule: Schedule, op: str = "sum", timeout: float | None = None,
                   progress=None):
    """MPI_Reduce_scatter_block with ``schedule``: rank r gets block r (recvbuf.size elements) of the reduced
    vector (sendbuf.size = N * recvbuf.size elements, MPI order). Raises as :func:`allreduce`."""
    executor.reduce_scatter(**_args(sendbuf, recvbuf, comm, schedule, timeout, progress), op=op)
    return recvbuf


def allgather(sendbuf, recvbuf, comm, *, schedule: Schedule, timeout: float | None = None, progress=None):
    """MPI_Allgather with ``schedule``: recvbuf = the ranks' sendbufs concatenated in rank order. Raises as
    :func:`allreduce`."""
    executor.allgather(**_args(sendbuf, recvbuf, comm, schedule, timeout, progress))
    return recvbuf


def alltoall(sendbuf, recvbuf, comm, *, schedule: Schedule, timeout: float | None = None, progress=None):
    """MPI_Alltoall with ``schedule``: sendbuf and recvbuf hold N equal parts (sendcount = recvcount =
    sendbuf.size / N); part j of sendbuf goes to rank j, and part i of recvbuf comes from rank i. The schedule's
    block ((i N + j) k + c) carries part j of rank i's sendbuf (it may be relayed through other ranks); rank r's
    own part r is copied locally.

    Raises:
        DirectcollError: a schedule of another collective or rank count, or one that reduces; buffers of other
            sizes, not divisible by N, or of mixed or unsupported dtypes (all checked before any message is
            sent); or a step not finished within ``timeout`` seconds.
    """
    executor.alltoall(**_args(sendbuf, recvbuf, comm, schedule, timeout, progress))
    return recvbuf
