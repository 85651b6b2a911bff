"""Run schedules on torch.distributed, mirroring its tensor collectives (``pip install directcoll[torch]``).

``allreduce(tensor_in, tensor_out, group, schedule=...)``, ``reduce_scatter`` (like
``reduce_scatter_tensor``: rank r gets block r of the reduced vector), ``allgather`` (like
``all_gather_into_tensor``) and ``alltoall`` (like ``all_to_all_single`` with equal splits) take CPU tensors of
float32, float64, int32 or int64 and (the reductions) ops sum, prod, max, min,
and run exactly the per-rank programs of :mod:`directcoll.runtime.mpi` (the checks, buffer layout and step loop
are shared: :mod:`directcoll.runtime.executor`). Every step is one ``torch.distributed.batch_isend_irecv`` of
the step's messages (one per transfer), whose works are waited on with a deadline, so a peer that died or hangs
makes this rank raise a clear :class:`DirectcollError` naming the rank, the step and the peers instead of
hanging. Tested with the gloo backend; the n-th message from one rank to another in a call has tag n, so
messages never match the wrong receive whatever order a backend delivers them in.

torch is imported when a function is called, never when ``directcoll`` is imported.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from datetime import timedelta

from directcoll.errors import DirectcollError
from directcoll.runtime import executor
from directcoll.runtime.executor import OPS, deadline_error
from directcoll.schedule.ir import Schedule

__all__ = ["DTYPES", "OPS", "allgather", "allreduce", "alltoall", "reduce_scatter"]

#: the torch dtypes accepted, by name (torch is not imported here)
DTYPES = ("float32", "float64", "int32", "int64")


def _view(tensor, name: str, writable: bool):
    """The numpy view of a CPU tensor (flattened; a copy for a non-contiguous input)."""
    import torch

    if not isinstance(tensor, torch.Tensor):
        raise DirectcollError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.device.type != "cpu":
        raise DirectcollError(f"{name} is on {tensor.device}; this executor takes CPU tensors")
    if str(tensor.dtype).removeprefix("torch.") not in DTYPES:
        raise DirectcollError(f"{name} has dtype {tensor.dtype}; accepted: "
                              f"{', '.join('torch.' + d for d in DTYPES)}")
    if writable and not tensor.is_contiguous():
        raise DirectcollError(f"{name} must be contiguous: the result is written into it in place")
    return tensor.detach().numpy().reshape(-1)


def _seconds(timeout) -> float | None:
    return timeout.total_seconds() if isinstance(timeout, timedelta) else timeout


def _exchange(group, rank: int, nranks: int, timeout: float | None) -> executor.Exchange:
    import torch
    import torch.distributed as dist

    world = list(range(nranks)) if group is None else [dist.get_global_rank(group, r) for r in range(nranks)]
    sent, received = Counter(), Counter()  # the n-th message from a to b in this call has tag n

    def exchange(t, sends, recvs) -> None:
        ops, peers = [], []
        for peer, buf in recvs:
            ops.append(dist.P2POp(dist.irecv, torch.from_numpy(buf), world[peer], group, received[peer]))
            received[peer] += 1
            peers.append(peer)
        for peer, buf in sends:
            ops.append(dist.P2POp(dist.isend, torch.from_numpy(buf), world[peer], group, sent[peer]))
            sent[peer] += 1
            peers.append(peer)
        if ops:
            _wait(dist.batch_isend_irecv(ops), peers, rank, t, timeout)

    return exchange


def _wait(works, peers: list[int], rank: int, step: int, timeout: float | None) -> None:
    deadline = None if timeout is None else time.monotonic() + timeout
    for i, work in enumerate(works):
        try:
            if deadline is None:
                work.wait()  # the process group's own timeout
            else:
                work.wait(timedelta(seconds=max(deadline - time.monotonic(), 0.001)))
        except RuntimeError as exc:
            raise _failure(exc, works, peers, i, rank, step, timeout, deadline) from exc


def _failure(exc, works, peers, i, rank, step, timeout, deadline) -> DirectcollError:
    """The error for a step whose work ``works[i]`` failed; names the peers of the works still pending."""
    waiting = list(peers)
    if len(works) == len(peers):  # one work per message (gloo): probe the ones after the failed one
        waiting = [peers[i]]
        for work, peer in zip(works[i + 1:], peers[i + 1:], strict=True):
            try:
                work.wait(timedelta(milliseconds=1))
            except RuntimeError:
                waiting.append(peer)
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if deadline is not None and (time.monotonic() >= deadline - 0.01 or "timed out" in text.lower()):
        return deadline_error(rank, step, timeout, waiting)
    text = re.sub(r"^\[[^\]]*\]\s*", "", text).split(". ")[0]  # gloo's "[file.cc:line] " prefix
    return DirectcollError(f"rank {rank}: step {step} failed exchanging with ranks {sorted(set(waiting))} "
                           f"(a peer died?): {text}")


def _args(tensor_in, tensor_out, group, schedule: Schedule, timeout) -> dict:
    import torch.distributed as dist

    send, recv = _view(tensor_in, "tensor_in", False), _view(tensor_out, "tensor_out", True)
    if not dist.is_initialized():
        raise DirectcollError("torch.distributed is not initialized: call torch.distributed.init_process_group "
                              "first")
    rank, nranks = dist.get_rank(group), dist.get_world_size(group)
    if rank < 0:
        raise DirectcollError("this process is not a member of the group")
    return {"send": send, "recv": recv, "schedule": schedule, "rank": rank, "nranks": nranks,
            "exchange": _exchange(group, rank, nranks, _seconds(timeout)), "group": "process group"}


def allreduce(tensor_in, tensor_out, group=None, *, schedule: Schedule, op: str = "sum", timeout=None):
    """``all_reduce`` with ``schedule``: tensor_out[i] = op over the group's ranks of tensor_in[i].

    Args:
        tensor_in, tensor_out: CPU tensors of one dtype (float32, float64, int32, int64) and the same number of
            elements (any shapes; tensor_out contiguous; it may be tensor_in, for an in-place allreduce).
        group: a process group (default: the world).
        schedule: an allreduce schedule for the group's size (``directcoll.registry.build``).
        op: ``sum``, ``prod``, ``max`` or ``min``.
        timeout: seconds (or a timedelta) every step may take; None: the process group's timeout.

    Returns ``tensor_out``.

    Raises:
        DirectcollError: a schedule of another collective or rank count, mismatched tensors, unknown op (all
            checked before any message is sent), or a step not finished within ``timeout`` or failed (a peer
            died); the message names this rank, the step and the peers.
    """
    executor.allreduce(**_args(tensor_in, tensor_out, group, schedule, timeout), op=op)
    return tensor_out


def reduce_scatter(tensor_in, tensor_out, group=None, *, schedule: Schedule, op: str = "sum", timeout=None):
    """``reduce_scatter_tensor`` with ``schedule``: tensor_out (k elements) = block r (rank r's) of the reduced
    tensor_in (N·k elements, rank order). Arguments and errors as :func:`allreduce`."""
    executor.reduce_scatter(**_args(tensor_in, tensor_out, group, schedule, timeout), op=op)
    return tensor_out


def allgather(tensor_in, tensor_out, group=None, *, schedule: Schedule, timeout=None):
    """``all_gather_into_tensor`` with ``schedule``: tensor_out (N·k elements) = the ranks' tensor_in (k elements
    each) concatenated in rank order. Arguments and errors as :func:`allreduce`."""
    executor.allgather(**_args(tensor_in, tensor_out, group, schedule, timeout))
    return tensor_out


def alltoall(tensor_in, tensor_out, group=None, *, schedule: Schedule, timeout=None):
    """``all_to_all_single(tensor_out, tensor_in, group=group)`` (equal splits) with ``schedule``: both tensors
    hold N equal parts; part j of tensor_in goes to group rank j, part i of tensor_out comes from group rank i.
    The schedule's block ((i N + j) k + c) carries part j of rank i's tensor_in (it may be relayed through other
    ranks); the rank's own part is copied locally.

    Args:
        tensor_in, tensor_out: CPU tensors of one dtype (float32, float64, int32, int64) and the same number of
            elements, a multiple of the group's size (any shapes; tensor_out contiguous).
        group, timeout: as :func:`allreduce`.
        schedule: an all-to-all schedule for the group's size (copies only).

    Returns ``tensor_out``.

    Raises:
        DirectcollError: a schedule of another collective or group size, or one that reduces; tensors of other
            sizes, not divisible by N, or of another dtype or device (all checked before any message is sent); or
            a step not finished within ``timeout`` or failed (a peer died).
    """
    executor.alltoall(**_args(tensor_in, tensor_out, group, schedule, timeout))
    return tensor_out
