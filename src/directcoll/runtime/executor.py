"""The engine-independent half of every executor: checks, buffer layout and the per-step loop.

An engine (MPI in :mod:`directcoll.runtime.mpi`, torch.distributed in :mod:`directcoll.runtime.torch_dist`)
supplies only an ``exchange(step, sends, recvs)`` callable: send every ``(peer, payload)`` of ``sends``, receive
every ``(peer, buffer)`` of ``recvs`` into the buffer in place (``peer`` is a rank of the communicator or process
group; the messages between one ordered pair of ranks are listed in the same order on both ends), return when all
have completed, and raise :class:`DirectcollError` naming the rank, the step and the peers when they do not (a
deadline passed, a peer died). Everything else is here, so the engines compute exactly the same thing.

Buffers are 1-D numpy views of the user's data; a rank works in one buffer of the collective's data followed by
the schedule's scratch blocks (all-to-all: its send part, its receive part and the blocks it relays;
:mod:`directcoll.runtime.program`).

Source: docs/architecture.md, "Schedule IR" (bulk-synchronous semantics) and "Engines, runtimes and scale" (runtime);
MPI 4.1 standard, Ch. 6 (MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather, MPI_Alltoall buffers);
docs/runtime.md.

Two ranks in threads, exchanging through queues:

>>> import queue, threading
>>> from directcoll.registry import build
>>> s = build("ring", "ring:2", variant="unidirectional")
>>> boxes = {(a, b): queue.Queue() for a in range(2) for b in range(2)}
>>> def exchange_for(rank):
...     def exchange(step, sends, recvs):
...         for peer, payload in sends:
...             boxes[rank, peer].put(payload)
...         for peer, buf in recvs:
...             buf[:] = boxes[peer, rank].get(timeout=10)
...     return exchange
>>> out = [np.zeros(4), np.zeros(4)]
>>> def work(rank):
...     allreduce(np.arange(4.0) * (rank + 1), out[rank], schedule=s, rank=rank, nranks=2, op="sum",
...               exchange=exchange_for(rank))
>>> threads = [threading.Thread(target=work, args=(r,)) for r in range(2)]
>>> for t in threads:
...     t.start()
>>> for t in threads:
...     t.join()
>>> out[0].tolist(), out[1].tolist()
([0.0, 3.0, 6.0, 9.0], [0.0, 3.0, 6.0, 9.0])
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from directcoll.errors import DirectcollError
from directcoll.runtime.program import RankProgram, compile_programs, mpi_order, user_blocks
from directcoll.schedule.ir import COPY, Collective, Schedule

OPS = {"sum": np.add, "prod": np.multiply, "max": np.maximum, "min": np.minimum}
DTYPES = (np.float32, np.float64, np.int32, np.int64)

Exchange = Callable[[int, list[tuple[int, np.ndarray]], list[tuple[int, np.ndarray]]], None]


@dataclass(frozen=True)
class UserOp:
    """A user's associative reduction: ``fn(left, right)`` returns left o right elementwise (numpy arrays of one
    length). A non-commutative one (``commutative=False``) runs only on schedules that reduce in rank order
    (:func:`directcoll.verify.order.check_order`), each reduction with its operands in that order.

    Raises:
        Nothing: a record; :func:`check` refuses a non-commutative one on a schedule that cannot keep order.

    Source: MPI 4.1 standard, Sec. 6.9.5 (user-defined operations, ``commute``) and Sec. 6.9.1 (rank order).

    >>> UserOp(np.subtract).fn(np.array([5]), np.array([2])).tolist()
    [3]
    """

    fn: Callable[[np.ndarray, np.ndarray], np.ndarray]
    commutative: bool = False
    name: str = "a user-defined op"


@lru_cache(maxsize=32)
def order_of(schedule: Schedule):
    """(:class:`~directcoll.verify.order.OrderResult`, bool per piece: received operand first) of ``schedule``.
    Cached. Raises: what :func:`~directcoll.verify.order.check_order` raises.
    Source: MPI 4.1 standard, Sec. 6.9.1; docs/verification.md, "Reduction order".
    """
    from directcoll.verify.order import check_order, operand_order

    return check_order(schedule), operand_order(schedule)


@lru_cache(maxsize=64)
def programs(schedule: Schedule, count: int, ordered: bool = False) -> tuple[list[RankProgram], np.ndarray | None]:
    """The per-rank programs of ``schedule`` for ``count`` elements and, for reduce-scatter and allgather, the
    work-buffer -> MPI-order permutation (:func:`~directcoll.runtime.program.mpi_order`). Cached.

    Returns:
        (one :class:`~directcoll.runtime.program.RankProgram` per rank, int64 (count,) permutation or None).

    Raises:
        DirectcollError: ``count`` < 1, or not a multiple of N for reduce-scatter, allgather and all-to-all.

    Source: docs/runtime.md, "Per-rank programs"; MPI 4.1 standard, Ch. 6 (buffer order).

    >>> from directcoll.algorithms.ring import ring_allgather
    >>> programs(ring_allgather(range(2)), 4)[1].tolist()
    [0, 1, 2, 3]
    """
    first = order_of(schedule)[1] if ordered and schedule.collective is not Collective.ALLTOALL else None
    if schedule.collective in (Collective.ALLREDUCE, Collective.ALLTOALL):
        return compile_programs(schedule, count, first), None
    return compile_programs(schedule, count, first), mpi_order(schedule, count)


def _ordered(op) -> bool:
    """Whether ``op`` needs each reduction's operands in rank order (a non-commutative :class:`UserOp`)."""
    return isinstance(op, UserOp) and not op.commutative


def check(schedule: Schedule, nranks: int, collective: Collective, dtypes, op: str = "sum",
          group: str = "communicator") -> None:
    """Refuse an unknown op, a non-commutative :class:`UserOp` on a schedule that does not reduce in rank order, a
    schedule of another collective or rank count, or buffers that do not share one supported dtype (``dtypes``: the
    numpy dtypes of the buffers). ``group`` names the engine's rank set in the message.

    Raises:
        DirectcollError: what is wrong and what would be accepted.

    Source: MPI 4.1 standard, Ch. 6 (ops and matching buffers); docs/architecture.md, "Quality bar".

    >>> from directcoll.schedule.ir import ScheduleBuilder
    >>> one = ScheduleBuilder("allreduce", 1, 1).build()  # one rank, no steps
    >>> check(one, 2, one.collective, [np.float64])
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: the schedule is for 1 ranks; the communicator has 2
    """
    if isinstance(op, UserOp):
        if not op.commutative and collective in (Collective.ALLREDUCE, Collective.REDUCE_SCATTER, Collective.REDUCE):
            order = order_of(schedule)[0]
            if not order.preserving:
                raise DirectcollError(
                    f"{op.name} is not commutative and this {schedule.algorithm} {schedule.collective.value} on "
                    f"{schedule.nranks} ranks does not reduce in rank order ({order.summary()}); use an "
                    "order-preserving schedule (docs/algorithms.md) or a commutative op")
    elif op not in OPS:
        raise DirectcollError(f"unknown op {op!r}; accepted: {', '.join(OPS)}")
    if schedule.collective is not collective:
        raise DirectcollError(f"the schedule is a {schedule.collective.value}, not a {collective.value}")
    if schedule.nranks != nranks:
        raise DirectcollError(f"the schedule is for {schedule.nranks} ranks; the {group} has {nranks}")
    dtypes = {np.dtype(d) for d in dtypes}
    if len(dtypes) != 1 or next(iter(dtypes)).type not in DTYPES:
        raise DirectcollError(f"buffers must share one dtype of {', '.join(d.__name__ for d in DTYPES)}; "
                              f"got {', '.join(map(str, dtypes))}")


def validate(collective: Collective, send: np.ndarray, recv: np.ndarray, *, schedule: Schedule, nranks: int,
             op="sum", group: str = "communicator", what: str | None = None) -> bool:
    """The checks of every engine before any message: :func:`check`, then the buffers' sizes for ``collective``
    (allreduce: equal; reduce-scatter: ``send`` N times ``recv``; allgather: ``recv`` N times ``send``; all-to-all:
    equal, N equal parts, a schedule that only copies). ``what`` names the caller (default: the collective).

    Returns:
        Whether there is anything to do: False for empty buffers (count 0, which MPI allows: no message).

    Raises:
        DirectcollError: what :func:`check` raises, or sizes that do not fit the collective.

    Source: MPI 4.1 standard, Ch. 6 (buffer sizes of MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather,
    MPI_Alltoall; a count of 0 is valid).

    >>> from directcoll.algorithms.ring import ring_allgather
    >>> validate(Collective.ALLGATHER, np.zeros(0), np.zeros(0), schedule=ring_allgather(range(2)), nranks=2)
    False
    """
    what = what or collective.value
    check(schedule, nranks, collective, (send.dtype, recv.dtype), op, group)
    if collective is Collective.ALLREDUCE and send.size != recv.size:
        raise DirectcollError(f"{what}: sendbuf has {send.size} elements, recvbuf {recv.size}")
    if collective is Collective.REDUCE_SCATTER and send.size != recv.size * nranks:
        raise DirectcollError(f"{what}: sendbuf must hold N x recvbuf = {recv.size * nranks} "
                              f"elements, has {send.size}")
    if collective is Collective.ALLGATHER and recv.size != send.size * nranks:
        raise DirectcollError(f"{what}: recvbuf must hold N x sendbuf = {send.size * nranks} "
                              f"elements, has {recv.size}")
    if collective is Collective.ALLTOALL:
        if send.size != recv.size:
            raise DirectcollError(f"{what}: sendbuf has {send.size} elements, recvbuf {recv.size}; both hold one "
                                  "part per rank")
        if send.size % nranks:
            raise DirectcollError(f"{what}: buffers of {send.size} elements do not split into {nranks} equal "
                                  "parts, one per rank")
        if schedule.num_transfers and schedule.op.max() != COPY:
            raise DirectcollError("the all-to-all schedule reduces (transfer "
                                  f"{int(np.flatnonzero(schedule.op != COPY)[0])}); an all-to-all only copies")
    return max(send.size, recv.size) > 0


def allreduce(send: np.ndarray, recv: np.ndarray, *, schedule: Schedule, rank: int, nranks: int, op: str,
              exchange: Exchange, group: str = "communicator") -> None:
    """recv[i] = op over ranks of send[i]; ``recv`` is written in place (1-D views).

    Args:
        send, recv: 1-D arrays of the same length and dtype (float32/64, int32/64).
        schedule: an allreduce schedule for ``nranks`` ranks; rank: this rank; op: sum, prod, max or min.
        exchange: the engine's ``exchange(step, sends, recvs)`` (module docstring); group: the rank set's name.

    Returns:
        None.

    Raises:
        DirectcollError: an unknown op, another collective or rank count, mismatched dtypes or lengths, or what
            ``exchange`` raises (:class:`DeadlineError` when a peer does not answer).

    Source: MPI 4.1 standard, Ch. 6 (MPI_Allreduce); docs/architecture.md, "Schedule IR" (semantics).

    >>> from directcoll.schedule.ir import ScheduleBuilder
    >>> one = ScheduleBuilder("allreduce", 1, 1).build()  # one rank, no steps
    >>> recv = np.zeros(3)
    >>> allreduce(np.arange(3.0), recv, schedule=one, rank=0, nranks=1, op="sum", exchange=None)
    >>> recv.tolist()
    [0.0, 1.0, 2.0]
    """
    if not validate(Collective.ALLREDUCE, send, recv, schedule=schedule, nranks=nranks, op=op, group=group):
        return
    program = programs(schedule, send.size, _ordered(op))[0][rank]
    work = np.empty(program.work_length, dtype=send.dtype)
    work[: send.size] = send
    run(program, work, op, exchange)
    recv[:] = work[: send.size]


def reduce_scatter(send: np.ndarray, recv: np.ndarray, *, schedule: Schedule, rank: int, nranks: int, op: str,
                   exchange: Exchange, group: str = "communicator", what: str = "reduce_scatter") -> None:
    """MPI_Reduce_scatter_block: ``recv`` (k elements) = block ``rank`` of the reduced ``send`` (N·k elements).
    ``what`` names the caller's function in the messages.

    Returns:
        None; ``recv`` is written in place.

    Raises:
        DirectcollError: an unknown op, another collective or rank count, mismatched dtypes, ``send`` not N times
            ``recv``, or what ``exchange`` raises.

    Source: MPI 4.1 standard, Ch. 6 (MPI_Reduce_scatter_block).

    >>> from directcoll.algorithms.ring import ring_reduce_scatter
    >>> recv = np.zeros(2)
    >>> reduce_scatter(np.array([1.0, 2.0]), recv, schedule=ring_reduce_scatter(range(1)), rank=0, nranks=1,
    ...                op="max", exchange=None)
    >>> recv.tolist()
    [1.0, 2.0]
    """
    if not validate(Collective.REDUCE_SCATTER, send, recv, schedule=schedule, nranks=nranks, op=op, group=group,
                    what=what):
        return
    (progs, order) = programs(schedule, send.size, _ordered(op))
    program = progs[rank]
    work = np.empty(program.work_length, dtype=send.dtype)
    work[: send.size] = send[order]  # work element i is MPI element order[i]
    run(program, work, op, exchange)
    mine = user_blocks(schedule, send.size)[rank]
    recv[:] = np.concatenate([work[a:b] for a, b in mine])


def allgather(send: np.ndarray, recv: np.ndarray, *, schedule: Schedule, rank: int, nranks: int,
              exchange: Exchange, group: str = "communicator") -> None:
    """MPI_Allgather: ``recv`` (N·k elements) = the ranks' ``send`` (k elements) concatenated in rank order.

    Returns:
        None; ``recv`` is written in place.

    Raises:
        DirectcollError: another collective or rank count, mismatched dtypes, ``recv`` not N times ``send``, or
            what ``exchange`` raises.

    Source: MPI 4.1 standard, Ch. 6 (MPI_Allgather).

    >>> from directcoll.algorithms.ring import ring_allgather
    >>> recv = np.zeros(2)
    >>> allgather(np.array([1.0, 2.0]), recv, schedule=ring_allgather(range(1)), rank=0, nranks=1, exchange=None)
    >>> recv.tolist()
    [1.0, 2.0]
    """
    if not validate(Collective.ALLGATHER, send, recv, schedule=schedule, nranks=nranks, group=group):
        return
    (progs, order) = programs(schedule, recv.size)
    program = progs[rank]
    work = np.zeros(program.work_length, dtype=send.dtype)
    pos = 0
    for a, b in user_blocks(schedule, recv.size)[rank]:
        work[a:b] = send[pos:pos + b - a]
        pos += b - a
    run(program, work, "sum", exchange)
    recv[order] = work[: recv.size]


def alltoall(send: np.ndarray, recv: np.ndarray, *, schedule: Schedule, rank: int, nranks: int,
             exchange: Exchange, group: str = "communicator") -> None:
    """MPI_Alltoall: ``send`` and ``recv`` hold N equal parts of m elements; part j of ``send`` goes to rank j,
    part i of ``recv`` came from rank i (its part ``rank``). The diagonal part is copied locally from ``send``,
    whatever the schedule does with its blocks. Copies only: a schedule with reductions is refused.

    Returns:
        None; ``recv`` is written in place.

    Raises:
        DirectcollError: another collective or rank count, mismatched dtypes or lengths, buffers that do not split
            into N equal parts, a schedule with reductions, or what ``exchange`` raises (empty buffers: nothing to do).

    Source: MPI 4.1 standard, Ch. 6 (MPI_Alltoall); docs/architecture.md, "Schedule IR" (all-to-all blocks).

    >>> from directcoll.schedule.ir import ScheduleBuilder
    >>> recv = np.zeros(2)
    >>> alltoall(np.array([5.0, 6.0]), recv, schedule=ScheduleBuilder("alltoall", 1, 1).build(), rank=0,
    ...          nranks=1, exchange=None)
    >>> recv.tolist()
    [5.0, 6.0]
    """
    if not validate(Collective.ALLTOALL, send, recv, schedule=schedule, nranks=nranks, group=group):
        return
    count, m = send.size, send.size // nranks
    program = programs(schedule, count)[0][rank]
    work = np.empty(program.work_length, dtype=send.dtype)
    work[:count] = send
    work[count + rank * m: count + (rank + 1) * m] = send[rank * m: (rank + 1) * m]  # the diagonal, locally
    run(program, work, "sum", exchange)
    recv[:] = work[count: 2 * count]


def _check_root(schedule: Schedule, root: int | None) -> int:
    """The root of the call: ``root``, or the schedule's when None; refuses a root the schedule was not built for."""
    if root is not None and root != schedule.root:
        raise DirectcollError(f"the {schedule.algorithm} {schedule.collective.value} schedule is built for root "
                              f"{schedule.root}, not {root}; build it with root={root}")
    return schedule.root


def validate_rooted(collective: Collective, send: np.ndarray, recv: np.ndarray | None, *, schedule: Schedule,
                    rank: int, nranks: int, op="sum", root: int | None = None, group: str = "communicator") -> bool:
    """The checks of every engine before a broadcast or reduce sends anything: the root (``root``, None: the
    schedule's, which must equal it), then :func:`check`, then the buffers: a broadcast's ``send`` and ``recv`` of
    one size on every rank; a reduce's root needs a ``recv`` of ``send``'s size (``recv`` may be None elsewhere).

    Returns:
        Whether there is anything to do: False for a count of 0 (which MPI allows: no message).

    Raises:
        DirectcollError: another root than the schedule's, what :func:`check` raises, a root without recvbuf, or
            sizes that differ.

    Source: MPI 4.1 standard, Sec. 6.4 (MPI_Bcast) and 6.9.1 (MPI_Reduce: recvbuf significant at the root only).

    >>> from directcoll.registry import build
    >>> validate_rooted(Collective.REDUCE, np.zeros(0), None, schedule=build("binomial", "ring:2", "reduce"), rank=1,
    ...                 nranks=2)
    False
    """
    root = _check_root(schedule, root)
    at_root = rank == root
    if collective is Collective.REDUCE and at_root and recv is None:
        raise DirectcollError("reduce: the root needs a recvbuf")
    check(schedule, nranks, collective, (send.dtype,) if recv is None else (send.dtype, recv.dtype),
          op if collective is Collective.REDUCE else "sum", group)
    if recv is not None and (collective is Collective.BROADCAST or at_root) and send.size != recv.size:
        raise DirectcollError(f"{collective.value}: sendbuf has {send.size} elements, recvbuf {recv.size}")
    return send.size > 0


def broadcast(send: np.ndarray, recv: np.ndarray, *, schedule: Schedule, rank: int, nranks: int,
              exchange: Exchange, root: int | None = None, group: str = "communicator") -> None:
    """MPI_Bcast (ncclBroadcast's form): every rank's ``recv`` = the root's ``send`` (read at the root only; it may
    be ``recv`` itself, MPI_Bcast's one buffer).

    Returns:
        None; ``recv`` is written in place.

    Raises:
        DirectcollError: another collective, rank count or root, mismatched dtypes or lengths, or what ``exchange``
            raises.

    Source: MPI 4.1 standard, Sec. 6.4 (MPI_Bcast); NCCL's ncclBroadcast(sendbuff, recvbuff, count, root).

    >>> from directcoll.algorithms.rooted import Tree, tree_broadcast
    >>> recv = np.zeros(2)  # one rank, no steps
    >>> broadcast(np.array([4.0, 5.0]), recv, schedule=tree_broadcast([Tree.from_edges(1, 0, [], [], [])]), rank=0,
    ...           nranks=1, exchange=None)
    >>> recv.tolist()
    [4.0, 5.0]
    """
    if not validate_rooted(Collective.BROADCAST, send, recv, schedule=schedule, rank=rank, nranks=nranks, root=root,
                           group=group):
        return
    root = schedule.root
    program = programs(schedule, recv.size)[0][rank]
    work = np.zeros(program.work_length, dtype=recv.dtype)
    if rank == root:
        work[: recv.size] = send
    run(program, work, "sum", exchange)
    recv[:] = work[: recv.size]


def reduce(send: np.ndarray, recv: np.ndarray | None, *, schedule: Schedule, rank: int, nranks: int, op: str,
           exchange: Exchange, root: int | None = None, group: str = "communicator") -> None:
    """MPI_Reduce: the root's ``recv`` = op over ranks of ``send``; ``recv`` is not touched elsewhere (None there).

    Returns:
        None; the root's ``recv`` is written in place.

    Raises:
        DirectcollError: an unknown op, a non-commutative op on a schedule that does not reduce in rank order,
            another collective, rank count or root, mismatched dtypes or lengths, or what ``exchange`` raises.

    Source: MPI 4.1 standard, Sec. 6.9.1 (MPI_Reduce).

    >>> from directcoll.algorithms.rooted import Tree, as_reduce, tree_broadcast
    >>> one = as_reduce(tree_broadcast([Tree.from_edges(1, 0, [], [], [])]))  # one rank, no steps
    >>> recv = np.zeros(2)
    >>> reduce(np.array([4.0, 5.0]), recv, schedule=one, rank=0, nranks=1, op="max", exchange=None)
    >>> recv.tolist()
    [4.0, 5.0]
    """
    if not validate_rooted(Collective.REDUCE, send, recv if rank == schedule.root else None, schedule=schedule,
                           rank=rank, nranks=nranks, op=op, root=root, group=group):
        return
    at_root = rank == schedule.root
    program = programs(schedule, send.size, _ordered(op))[0][rank]
    work = np.empty(program.work_length, dtype=send.dtype)
    work[: send.size] = send
    run(program, work, op, exchange)
    if at_root:
        recv[:] = work[: send.size]


def _gather(work: np.ndarray, ranges: np.ndarray) -> np.ndarray:
    return np.concatenate([work[a:b] for a, b in ranges]) if len(ranges) else work[:0].copy()


def run(program: RankProgram, work: np.ndarray, op: str, exchange: Exchange) -> None:
    """Execute ``program`` on ``work`` (data then scratch), step by step: read everything sent and copied
    locally (the state at the end of the previous step), exchange the messages, then apply copies, then
    reductions with ``op`` (a name of :data:`OPS` or a :class:`UserOp`; op code 2 puts the received operand on the
    left) — the IR's bulk-synchronous semantics.

    Returns:
        None; ``work`` (1-D, the program's ``work_length`` elements) is updated in place.

    Raises:
        Nothing of ours itself: ``exchange`` may raise :class:`DeadlineError` or another DirectcollError; an
        unknown ``op`` raises KeyError (callers pass it through :func:`check` first).

    Source: docs/architecture.md, "Schedule IR" (all transfers of step t read the state at the end of step t-1; copies,
    then reductions).

    >>> from directcoll.schedule.ir import ScheduleBuilder
    >>> one = ScheduleBuilder("allreduce", 1, 1).build()  # one rank, no steps
    >>> work = np.arange(3.0)
    >>> run(programs(one, 3)[0][0], work, "sum", exchange=None)
    >>> work.tolist()
    [0.0, 1.0, 2.0]
    """
    user = op.fn if isinstance(op, UserOp) else None
    reduce = OPS[op] if user is None else None
    for t, step in enumerate(program.steps):
        sends = [(peer, _gather(work, ranges)) for peer, ranges in step.sends]
        local = [_gather(work, ranges) for ranges, _, _ in step.local]
        inbox = [np.empty(int(at[:, 1].max()) if len(at) else 0, dtype=work.dtype) for _, at, _, _ in step.recvs]
        exchange(t, sends, [(peer, buf) for buf, (peer, *_) in zip(inbox, step.recvs, strict=True)])
        arrivals = [(data, dst, ops, at) for data, (_, at, dst, ops) in zip(inbox, step.recvs, strict=True)]
        for data, (ranges, dst, ops) in zip(local, step.local, strict=True):  # gathered back to back
            ends = np.cumsum(ranges[:, 1] - ranges[:, 0])
            arrivals.append((data, dst, ops, np.stack([ends - (ranges[:, 1] - ranges[:, 0]), ends], axis=1)))
        for reducing in (0, 1):  # copies land before reductions
            for data, dst, ops, at in arrivals:  # at: (start, stop) of every range in data
                for (a, b), d, o in zip(at, dst, ops, strict=True):
                    n = b - a
                    if min(o, 1) == reducing:
                        own, got = work[d:d + n], data[a:b]
                        left, right = (got, own) if o == 2 else (own, got)  # 2: the received operand first
                        if not reducing:
                            work[d:d + n] = got
                        elif user is None:
                            reduce(left, right, out=own)
                        else:
                            work[d:d + n] = user(left, right)


class DeadlineError(DirectcollError, TimeoutError):
    """A step or collective of a rank did not complete within its deadline: a peer died, hangs or is stopped.

    Attributes: ``rank`` (the rank that gave up), ``what`` (the step or collective, e.g. ``"step 3"``),
    ``timeout`` (seconds it waited), ``peers`` (the ranks it was waiting on, sorted).

    Also a :class:`TimeoutError`.

    Raises:
        Nothing: an exception class; raised by the engines through :func:`deadline_error`.

    Source: docs/runtime.md, "Failures".

    >>> e = DeadlineError(1, "step 3", 30, [2, 0])
    >>> e.peers, isinstance(e, TimeoutError)
    ([0, 2], True)
    """

    def __init__(self, rank: int, what: str, timeout: float, peers) -> None:
        self.rank, self.what, self.timeout, self.peers = rank, what, timeout, sorted({int(p) for p in peers})
        super().__init__(f"rank {rank}: {what} did not complete within {timeout:g} s; waiting on ranks "
                         f"{self.peers} (a peer died or hangs)")


def deadline_error(rank: int, step: int, timeout: float, peers) -> DeadlineError:
    """The error every engine raises when a step misses its deadline.

    Returns:
        A :class:`DeadlineError` (not raised here).

    Raises:
        Nothing: builds the exception.

    Source: docs/runtime.md, "Failures".

    >>> print(deadline_error(1, 3, 30.0, [2, 0]))
    rank 1: step 3 did not complete within 30 s; waiting on ranks [0, 2] (a peer died or hangs)
    """
    return DeadlineError(rank, f"step {step}", timeout, peers)
