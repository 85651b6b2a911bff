"""Run schedules on MPI (mpi4py), mirroring mpi4py's buffer-based collectives.

``allreduce(sendbuf, recvbuf, comm, schedule=...)``, ``reduce_scatter`` (MPI_Reduce_scatter_block semantics:
rank r gets block r of the reduced vector), ``allgather`` and ``alltoall`` take numpy buffers of float32,
float64, int32 or int64 and (the reductions) ops sum, prod, max, min. Every step posts non-blocking sends and
receives (one message per transfer of the schedule) and waits for them with a deadline, so a peer that died or
hangs makes this rank raise a clear error instead of hanging. Compiled programs are cached per (schedule,
element count). An all-to-all only copies: its schedule may relay blocks through other ranks but never reduces.

A schedule's reductions add every contribution exactly once (that is what the verifier proves), so any
commutative and associative op gives MPI's result: exactly for integers, up to reassociation for floats.
The checks, buffer layout and step loop are shared with the torch.distributed executor
(:mod:`directcoll.runtime.executor`); this module only moves the messages.
"""

from __future__ import annotations

import time

import numpy as np

from directcoll.runtime import executor
from directcoll.runtime.executor import DTYPES, OPS, deadline_error
from directcoll.schedule.ir import Schedule

__all__ = ["DTYPES", "OPS", "allgather", "allreduce", "alltoall", "reduce_scatter"]

#: tag of the messages of step t (schedules have far fewer steps than MPI's minimum tag upper bound)
_TAG_BASE = 7000


def _exchange(comm, timeout: float | None) -> executor.Exchange:
    def exchange(t, sends, recvs) -> None:
        from mpi4py import MPI

        requests = [comm.Irecv(buf, source=peer, tag=_TAG_BASE + t) for peer, buf in recvs]
        requests += [comm.Isend(buf, dest=peer, tag=_TAG_BASE + t) for peer, buf in sends]
        _wait(requests, timeout, comm.Get_rank(), t, [p for p, _ in recvs] + [p for p, _ in sends], MPI)

    return exchange


def _wait(requests, timeout, rank, step, peers, MPI) -> None:
    if timeout is None:
        MPI.Request.Waitall(requests)
        return
    deadline = time.monotonic() + timeout
    for _ in range(200):  # spin briefly before sleeping: most steps finish quickly
        if MPI.Request.Testall(requests):
            return
    while not MPI.Request.Testall(requests):
        if time.monotonic() > deadline:
            for req in requests:
                req.Cancel()
            raise deadline_error(rank, step, timeout, peers)
        time.sleep(0.0005)


def _args(sendbuf, recvbuf, comm, schedule: Schedule, timeout: float | None) -> dict:
    return {"send": np.asarray(sendbuf).ravel(), "recv": np.asarray(recvbuf).reshape(-1), "schedule": schedule,
            "rank": comm.Get_rank(), "nranks": comm.Get_size(), "exchange": _exchange(comm, timeout)}


def allreduce(sendbuf, recvbuf, comm, *, schedule: Schedule, op: str = "sum", timeout: float | None = None):
    """MPI_Allreduce with ``schedule``: recvbuf[i] = op over ranks of sendbuf[i].

    Raises:
        DirectcollError: a schedule of another collective or rank count, mismatched buffers, unknown op, or a
            step not finished within ``timeout`` seconds. Checked before any message is sent.
    """
    executor.allreduce(**_args(sendbuf, recvbuf, comm, schedule, timeout), op=op)
    return recvbuf


def reduce_scatter(sendbuf, recvbuf, comm, *, schedule: Schedule, op: str = "sum", timeout: float | None = None):
    """MPI_Reduce_scatter_block with ``schedule``: rank r gets block r (recvbuf.size elements) of the reduced
    vector (sendbuf.size = N * recvbuf.size elements, MPI order). Raises as :func:`allreduce`."""
    executor.reduce_scatter(**_args(sendbuf, recvbuf, comm, schedule, timeout), op=op)
    return recvbuf


def allgather(sendbuf, recvbuf, comm, *, schedule: Schedule, timeout: float | None = None):
    """MPI_Allgather with ``schedule``: recvbuf = the ranks' sendbufs concatenated in rank order. Raises as
    :func:`allreduce`."""
    executor.allgather(**_args(sendbuf, recvbuf, comm, schedule, timeout))
    return recvbuf


def alltoall(sendbuf, recvbuf, comm, *, schedule: Schedule, timeout: float | None = None):
    """MPI_Alltoall with ``schedule``: sendbuf and recvbuf hold N equal parts (sendcount = recvcount =
    sendbuf.size / N); part j of sendbuf goes to rank j, and part i of recvbuf comes from rank i. The schedule's
    block ((i N + j) k + c) carries part j of rank i's sendbuf (it may be relayed through other ranks); rank r's
    own part r is copied locally.

    Raises:
        DirectcollError: a schedule of another collective or rank count, or one that reduces; buffers of other
            sizes, not divisible by N, or of mixed or unsupported dtypes (all checked before any message is
            sent); or a step not finished within ``timeout`` seconds.
    """
    executor.alltoall(**_args(sendbuf, recvbuf, comm, schedule, timeout))
    return recvbuf
