"""Run schedules on MPI (mpi4py), mirroring mpi4py's buffer-based collectives.

``allreduce(sendbuf, recvbuf, comm, schedule=...)``, ``reduce_scatter`` (MPI_Reduce_scatter_block semantics:
rank r gets block r of the reduced vector) and ``allgather`` take numpy buffers of float32, float64, int32 or
int64 and ops sum, prod, max, min. Every step posts non-blocking sends and receives (one message per transfer
of the schedule) and waits for them with a deadline, so a peer that died or hangs makes this rank raise a clear
error instead of hanging. Compiled programs are cached per (schedule, element count).

A schedule's reductions add every contribution exactly once (that is what the verifier proves), so any
commutative and associative op gives MPI's result: exactly for integers, up to reassociation for floats.
"""

from __future__ import annotations

import time
from functools import lru_cache

import numpy as np

from directcoll.errors import DirectcollError
from directcoll.runtime.program import RankProgram, compile_programs, mpi_order, user_blocks
from directcoll.schedule.ir import Collective, Schedule

OPS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
DTYPES = (np.float32, np.float64, np.int32, np.int64)
#: tag of the messages of step t (schedules have far fewer steps than MPI's minimum tag upper bound)
_TAG_BASE = 7000


@lru_cache(maxsize=64)
def _programs(schedule: Schedule, count: int) -> tuple[list[RankProgram], np.ndarray | None]:
    order = mpi_order(schedule, count)
    return compile_programs(schedule, count), (None if schedule.collective is Collective.ALLREDUCE else order)


def _check(schedule: Schedule, comm, collective: Collective, buffers, op: str = "sum") -> None:
    if op not in OPS:
        raise DirectcollError(f"unknown op {op!r}; accepted: {', '.join(OPS)}")
    if schedule.collective is not collective:
        raise DirectcollError(f"the schedule is a {schedule.collective.value}, not a {collective.value}")
    if schedule.nranks != comm.Get_size():
        raise DirectcollError(f"the schedule is for {schedule.nranks} ranks; the communicator has "
                              f"{comm.Get_size()}")
    dtypes = {np.asarray(b).dtype for b in buffers}
    if len(dtypes) != 1 or next(iter(dtypes)).type not in DTYPES:
        raise DirectcollError(f"buffers must share one dtype of {', '.join(d.__name__ for d in DTYPES)}; "
                              f"got {', '.join(map(str, dtypes))}")


def _run(program: RankProgram, work: np.ndarray, comm, op, timeout: float | None) -> None:
    from mpi4py import MPI

    reduce = OPS[op]
    rank = comm.Get_rank()
    for t, step in enumerate(program.steps):
        payloads = [np.concatenate([work[a:b] for a, b in ranges]) if len(ranges) else work[:0].copy()
                    for _, ranges in step.sends]
        local = [np.concatenate([work[a:b] for a, b in ranges]) if len(ranges) else work[:0].copy()
                 for ranges, _, _ in step.local]
        inbox = [np.empty(int((ranges[:, 1] - ranges[:, 0]).sum()), dtype=work.dtype) for _, ranges, _, _ in step.recvs]
        requests = [comm.Irecv(buf, source=peer, tag=_TAG_BASE + t) for buf, (peer, *_) in zip(inbox, step.recvs,
                                                                                          strict=True)]
        requests += [comm.Isend(buf, dest=peer, tag=_TAG_BASE + t) for buf, (peer, _) in zip(payloads, step.sends,
                                                                                        strict=True)]
        _wait(requests, timeout, rank, t, [p for p, *_ in step.recvs] + [p for p, _ in step.sends], MPI)
        arrivals = [(data, dst, ops, ranges) for data, (_, ranges, dst, ops) in zip(inbox, step.recvs, strict=True)]
        arrivals += [(data, dst, ops, ranges) for data, (ranges, dst, ops) in zip(local, step.local, strict=True)]
        for reducing in (0, 1):  # copies land before reductions
            for data, dst, ops, ranges in arrivals:
                pos = 0
                for (a, b), d, o in zip(ranges, dst, ops, strict=True):
                    n = b - a
                    if o == reducing:
                        if reducing:
                            reduce(work[d:d + n], data[pos:pos + n], out=work[d:d + n])
                        else:
                            work[d:d + n] = data[pos:pos + n]
                    pos += n


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
            raise DirectcollError(f"rank {rank}: step {step} did not complete within {timeout:g} s; waiting on "
                                  f"ranks {sorted(set(peers))} (a peer died or hangs)")
        time.sleep(0.0005)


def allreduce(sendbuf, recvbuf, comm, *, schedule: Schedule, op: str = "sum", timeout: float | None = None):
    """MPI_Allreduce with ``schedule``: recvbuf[i] = op over ranks of sendbuf[i].

    Raises:
        DirectcollError: a schedule of another collective or rank count, mismatched buffers, unknown op, or a
            step not finished within ``timeout`` seconds. Checked before any message is sent.
    """
    _check(schedule, comm, Collective.ALLREDUCE, (sendbuf, recvbuf), op)
    send, recv = np.asarray(sendbuf).ravel(), np.asarray(recvbuf).reshape(-1)
    if send.size != recv.size:
        raise DirectcollError(f"allreduce: sendbuf has {send.size} elements, recvbuf {recv.size}")
    programs, _ = _programs(schedule, send.size)
    program = programs[comm.Get_rank()]
    work = np.empty(program.work_length, dtype=send.dtype)
    work[: send.size] = send
    _run(program, work, comm, op, timeout)
    recv[:] = work[: send.size]
    return recvbuf


def reduce_scatter(sendbuf, recvbuf, comm, *, schedule: Schedule, op: str = "sum", timeout: float | None = None):
    """MPI_Reduce_scatter_block with ``schedule``: rank r gets block r (recvbuf.size elements) of the reduced
    vector (sendbuf.size = N * recvbuf.size elements, MPI order)."""
    _check(schedule, comm, Collective.REDUCE_SCATTER, (sendbuf, recvbuf), op)
    send, recv = np.asarray(sendbuf).ravel(), np.asarray(recvbuf).reshape(-1)
    if send.size != recv.size * comm.Get_size():
        raise DirectcollError(f"reduce_scatter: sendbuf must hold N x recvbuf = {recv.size * comm.Get_size()} "
                              f"elements, has {send.size}")
    programs, order = _programs(schedule, send.size)
    program = programs[comm.Get_rank()]
    work = np.empty(program.work_length, dtype=send.dtype)
    work[: send.size] = send[order]  # work element i is MPI element order[i]
    _run(program, work, comm, op, timeout)
    mine = user_blocks(schedule, send.size)[comm.Get_rank()]
    recv[:] = np.concatenate([work[a:b] for a, b in mine])
    return recvbuf


def allgather(sendbuf, recvbuf, comm, *, schedule: Schedule, timeout: float | None = None):
    """MPI_Allgather with ``schedule``: recvbuf = the ranks' sendbufs concatenated in rank order."""
    _check(schedule, comm, Collective.ALLGATHER, (sendbuf, recvbuf))
    send, recv = np.asarray(sendbuf).ravel(), np.asarray(recvbuf).reshape(-1)
    if recv.size != send.size * comm.Get_size():
        raise DirectcollError(f"allgather: recvbuf must hold N x sendbuf = {send.size * comm.Get_size()} "
                              f"elements, has {recv.size}")
    programs, order = _programs(schedule, recv.size)
    program = programs[comm.Get_rank()]
    work = np.zeros(program.work_length, dtype=send.dtype)
    mine = user_blocks(schedule, recv.size)[comm.Get_rank()]
    pos = 0
    for a, b in mine:
        work[a:b] = send[pos:pos + b - a]
        pos += b - a
    _run(program, work, comm, "sum", timeout)
    recv[order] = work[: recv.size]
    return recvbuf
