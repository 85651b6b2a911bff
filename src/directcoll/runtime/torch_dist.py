"""Run schedules on torch.distributed with its own names and argument orders (``pip install 'directcoll[torch]'``).

``all_reduce(tensor, op=ReduceOp.SUM, group=None, *, schedule)`` is ``torch.distributed.all_reduce`` run with
``schedule`` (``directcoll.registry.build``); likewise :func:`all_gather_into_tensor` (output first),
:func:`reduce_scatter_tensor` (output first) and :func:`all_to_all_single` (equal splits). They take CPU tensors of
float32, float64, int32 or int64 and (the reductions) ``ReduceOp.SUM``, ``PRODUCT``, ``MAX`` or ``MIN``, return
None as torch's do without ``async_op``, and run exactly the per-rank programs of :mod:`directcoll.runtime.mpi`
(the checks, buffer layout and step loop are shared: :mod:`directcoll.runtime.executor`).

A call that would write where torch would not is refused before any message, naming the argument and the size
expected: an output of the wrong size (the arguments swapped, say) or one that overlaps the input (beyond the
in-place layouts torch accepts: the input being the output's chunk of this rank for
``all_gather_into_tensor``, and the output the input's chunk of this rank for ``reduce_scatter_tensor``).

Every step is one ``torch.distributed.batch_isend_irecv`` of the step's messages (one per transfer), whose works
are waited on with a deadline, so a peer that died or hangs makes this rank raise a clear :class:`DirectcollError`
naming the rank, the step and the peers instead of hanging. Tested with the gloo backend; the n-th message from one
rank to another in a call has tag n, so messages never match the wrong receive whatever order a backend delivers
them in.

Importing this module imports torch (as any torch.distributed program does); without torch it raises
:class:`~directcoll.errors.MissingDependencyError` naming the ``torch`` extra. Nothing else in directcoll imports
torch.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from datetime import timedelta

from directcoll.errors import DirectcollError
from directcoll.runtime import TORCH_EXTRA, executor, missing
from directcoll.runtime.executor import deadline_error
from directcoll.schedule.ir import Schedule

try:
    import torch
    import torch.distributed as dist
    from torch.distributed import ReduceOp
except ImportError as _exc:
    raise missing("directcoll.runtime.torch_dist", TORCH_EXTRA, _exc) from _exc

__all__ = ["DTYPES", "OPS", "all_gather_into_tensor", "all_reduce", "all_to_all_single", "reduce_scatter_tensor"]

#: the tensor dtypes accepted
DTYPES = (torch.float32, torch.float64, torch.int32, torch.int64)
#: the reductions accepted, by ReduceOp name. A schedule combines every contribution exactly once, so any commutative
#: and associative op gives torch's result; AVG and PREMUL_SUM are not plain combinations (divide a SUM instead).
OPS = {"SUM": ReduceOp.SUM, "PRODUCT": ReduceOp.PRODUCT, "MAX": ReduceOp.MAX, "MIN": ReduceOp.MIN}
_EXECUTOR_OPS = {"SUM": "sum", "PRODUCT": "prod", "MAX": "max", "MIN": "min"}


# -- the arguments -------------------------------------------------------------------------------------------------


def _op(op) -> str:
    """The executor's name ("sum", ...) of the ReduceOp ``op``."""
    for name, known in OPS.items():
        try:
            if op == known:
                return _EXECUTOR_OPS[name]
        except (TypeError, RuntimeError):  # a type ReduceOp does not compare with
            break
    name = getattr(op, "name", None)
    what = f"ReduceOp.{name}" if isinstance(name, str) and not isinstance(op, str) else repr(op)
    raise DirectcollError(f"op {what} is not supported: give {', '.join('ReduceOp.' + n for n in OPS)} (a schedule "
                          "combines every contribution once, with a commutative and associative op; for "
                          "ReduceOp.AVG, divide a SUM by the group size)")


def _tensor(tensor, name: str, writable: bool):
    """The flat numpy view of a CPU tensor (a copy for a non-contiguous input)."""
    if not isinstance(tensor, torch.Tensor):
        raise DirectcollError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if tensor.device.type != "cpu":
        raise DirectcollError(f"{name} is on {tensor.device}; this executor takes CPU tensors")
    if tensor.dtype not in DTYPES:
        raise DirectcollError(f"{name} has dtype {tensor.dtype}; accepted: {', '.join(map(str, DTYPES))}")
    if writable and not tensor.is_contiguous():
        raise DirectcollError(f"{name} must be contiguous: the result is written into it in place")
    return tensor.detach().numpy().reshape(-1)


def _overlap(a, b) -> bool:
    """Whether the memory of tensors ``a`` and ``b`` overlaps (their address ranges intersect)."""
    def span(t) -> tuple[int, int]:
        last = sum((size - 1) * stride for size, stride in zip(t.shape, t.stride(), strict=True))
        return t.data_ptr(), t.data_ptr() + (last + 1) * t.element_size()

    if a.numel() == 0 or b.numel() == 0:
        return False
    (a0, a1), (b0, b1) = span(a), span(b)
    return a0 < b1 and b0 < a1


def _refuse_size(call: str, name: str, has: int, expected: str, hint: str = "") -> None:
    raise DirectcollError(f"{call}: {name} has {has} elements; expected {expected}{hint}")


def _group(group) -> tuple[int, int]:
    if not dist.is_initialized():
        raise DirectcollError("torch.distributed is not initialized: call torch.distributed.init_process_group "
                              "first")
    rank, nranks = dist.get_rank(group), dist.get_world_size(group)
    if rank < 0:
        raise DirectcollError("this process is not a member of the group")
    return rank, nranks


def _context(group, rank: int, nranks: int, schedule: Schedule, timeout) -> dict:
    return {"schedule": schedule, "rank": rank, "nranks": nranks,
            "exchange": _exchange(group, rank, nranks, _seconds(timeout)), "group": "process group"}


def _sync(async_op) -> None:
    if async_op:
        raise DirectcollError("async_op=True is not supported: the steps run on the calling thread, and the call "
                              "returns when the collective is complete")


def _seconds(timeout) -> float | None:
    return timeout.total_seconds() if isinstance(timeout, timedelta) else timeout


# -- messages ------------------------------------------------------------------------------------------------------


def _exchange(group, rank: int, nranks: int, timeout: float | None) -> executor.Exchange:
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


# -- the collectives -----------------------------------------------------------------------------------------------


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False, *, schedule: Schedule, timeout=None) -> None:
    """``torch.distributed.all_reduce(tensor, op, group)`` run with ``schedule``: in place, tensor[i] = op over the
    group's ranks of tensor[i].

    Args:
        tensor: a contiguous CPU tensor of float32, float64, int32 or int64, any shape (n elements); input and
            output.
        op: ``ReduceOp.SUM``, ``ReduceOp.PRODUCT``, ``ReduceOp.MAX`` or ``ReduceOp.MIN``.
        group: a process group of N ranks (None: the default group); ranks are group ranks.
        async_op: False (True is refused: the call returns when the collective is complete).
        schedule: an allreduce schedule for N ranks (``directcoll.registry.build(name, topology)``); any n.
        timeout: seconds (or a ``timedelta``) every step may take; None: the process group's own timeout.

    Raises:
        DirectcollError: a schedule of another collective or group size; a tensor of another dtype or device, not
            contiguous, or not a tensor; another op; async_op=True; torch.distributed not initialized or this rank
            outside ``group`` (all checked before any message is sent); a step not finished within ``timeout`` or
            failed (a peer died): the message names this rank, the step and the peers.

    Example (``torchrun --nproc-per-node 4 train.py``)::

        import torch
        import torch.distributed as dist
        from directcoll.registry import build
        from directcoll.runtime import torch_dist as dc

        dist.init_process_group("gloo")
        n = dist.get_world_size()
        schedule = build("swing", f"ring:{n}")
        grads = torch.full((1000,), float(dist.get_rank()))
        dc.all_reduce(grads, op=dist.ReduceOp.SUM, schedule=schedule)      # grads[:] = 0 + 1 + ... + n-1

    Source: PyTorch's ``torch.distributed.all_reduce`` (its argument order and semantics); docs/runtime.md,
    "torch.distributed".
    """
    _sync(async_op)
    name = _op(op)
    view = _tensor(tensor, "tensor", True)
    rank, nranks = _group(group)
    executor.allreduce(view, view, op=name, **_context(group, rank, nranks, schedule, timeout))


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False, *,
                          schedule: Schedule, timeout=None) -> None:
    """``torch.distributed.reduce_scatter_tensor(output, input, op, group)`` run with ``schedule``: the op over the
    group's ranks of ``input`` (N·k elements) is cut into N chunks of k, and rank r receives chunk r in ``output``.

    Args:
        output: a contiguous CPU tensor of k elements (any shape), written; it may be this rank's chunk of
            ``input`` (``input.view(N, -1)[rank]``, in place as torch accepts it), and must not overlap ``input``
            otherwise.
        input: a CPU tensor of N·k elements of output's dtype (any shape, e.g. ``(N * k,)`` or ``(N, k)``).
        op, group, async_op, timeout: as :func:`all_reduce`.
        schedule: a reduce_scatter schedule for N ranks.

    Raises:
        DirectcollError: ``output`` or ``input`` of the wrong size (the message says which and the size expected,
            e.g. for arguments given input first), an output overlapping the input otherwise than as its chunk;
            otherwise as :func:`all_reduce`.

    Example (``torchrun --nproc-per-node 4``; ``dist``, ``n``, ``dc`` as in :func:`all_reduce`)::

        schedule = build("swing", f"ring:{n}", "reduce_scatter")
        grads = torch.ones(n * 256)
        shard = torch.empty(256)
        dc.reduce_scatter_tensor(shard, grads, op=dist.ReduceOp.SUM, schedule=schedule)     # shard[:] = n

    Source: PyTorch's ``torch.distributed.reduce_scatter_tensor``; docs/runtime.md, "torch.distributed".
    """
    call = "reduce_scatter_tensor"
    _sync(async_op)
    name = _op(op)
    send, recv = _tensor(input, "input", False), _tensor(output, "output", True)
    rank, nranks = _group(group)
    if input.numel() != nranks * output.numel():
        swapped = output.numel() == nranks * input.numel() and input.numel()
        _refuse_size(call, "input", input.numel(), f"{nranks * output.numel()} = group size {nranks} x output's "
                     f"{output.numel()}", " (torch.distributed takes the output first: reduce_scatter_tensor(output, "
                     "input))" if swapped else "")
    k = output.numel()
    if _overlap(output, input) and not (output.data_ptr() == input.data_ptr() + rank * k * input.element_size()
                                        and input.is_contiguous()):
        raise DirectcollError(f"{call}: output overlaps input; give a separate output of {k} elements, or this "
                              f"rank's chunk of input (input.view({nranks}, -1)[{rank}]) for an in-place call")
    executor.reduce_scatter(send, recv, op=name, what=call, **_context(group, rank, nranks, schedule, timeout))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False, *, schedule: Schedule,
                           timeout=None) -> None:
    """``torch.distributed.all_gather_into_tensor(output_tensor, input_tensor, group)`` run with ``schedule``:
    output_tensor = the group's input tensors concatenated in rank order.

    Args:
        output_tensor: a contiguous CPU tensor of N·k elements (any shape, e.g. ``(N * k,)`` or ``(N, k)``),
            written; it must not overlap input_tensor, unless input_tensor is this rank's chunk of it
            (``output_tensor.view(N, -1)[rank]``, in place as torch accepts it).
        input_tensor: a CPU tensor of k elements of output_tensor's dtype (any shape).
        group, async_op, timeout: as :func:`all_reduce`.
        schedule: an allgather schedule for N ranks.

    Raises:
        DirectcollError: ``output_tensor`` of the wrong size (the message gives the size expected and notes
            arguments given input first), an output overlapping the input otherwise than as its chunk; otherwise
            as :func:`all_reduce` (no op).

    Example (``torchrun --nproc-per-node 4``; ``dist``, ``n``, ``dc`` as in :func:`all_reduce`)::

        schedule = build("swing", f"ring:{n}", "allgather")
        shard = torch.full((256,), float(dist.get_rank()))
        params = torch.empty(n, 256)
        dc.all_gather_into_tensor(params, shard, schedule=schedule)        # params[r] = r

    Source: PyTorch's ``torch.distributed.all_gather_into_tensor``; docs/runtime.md, "torch.distributed".
    """
    call = "all_gather_into_tensor"
    _sync(async_op)
    send, recv = _tensor(input_tensor, "input_tensor", False), _tensor(output_tensor, "output_tensor", True)
    rank, nranks = _group(group)
    k = input_tensor.numel()
    if output_tensor.numel() != nranks * k:
        swapped = input_tensor.numel() == nranks * output_tensor.numel() and output_tensor.numel()
        _refuse_size(call, "output_tensor", output_tensor.numel(), f"{nranks * k} = group size {nranks} x "
                     f"input_tensor's {k}", " (torch.distributed takes the output first: all_gather_into_tensor("
                     "output_tensor, input_tensor))" if swapped else "")
    if _overlap(output_tensor, input_tensor) and not (
            input_tensor.data_ptr() == output_tensor.data_ptr() + rank * k * output_tensor.element_size()
            and input_tensor.is_contiguous()):
        raise DirectcollError(f"{call}: output_tensor overlaps input_tensor; give a separate output_tensor of "
                              f"{nranks * k} elements, or pass its chunk output_tensor.view({nranks}, -1)[{rank}] as "
                              "input_tensor for an in-place call")
    executor.allgather(send, recv, **_context(group, rank, nranks, schedule, timeout))


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None, group=None,
                      async_op=False, *, schedule: Schedule, timeout=None) -> None:
    """``torch.distributed.all_to_all_single(output, input, group=group)`` with equal splits, run with
    ``schedule``: ``input`` and ``output`` hold N equal parts along dim 0 (m elements each); part j of ``input``
    goes to group rank j, part i of ``output`` comes from group rank i. The schedule's block ((i N + j) k + c)
    carries part j of rank i's input (it may be relayed through other ranks); the rank's own part is copied
    locally.

    Args:
        output: a contiguous CPU tensor of N·m elements whose dim 0 divides by N, written; it must not overlap
            ``input``.
        input: a CPU tensor of output's dtype and number of elements, dim 0 divisible by N.
        output_split_sizes, input_split_sizes: None, or N equal sizes (dim 0 / N each); uneven splits are refused.
        group, async_op, timeout: as :func:`all_reduce`.
        schedule: an all-to-all schedule for N ranks (copies only).

    Raises:
        DirectcollError: uneven splits; ``output`` or ``input`` of the wrong size or a dim 0 not divisible by N (the
            message says which and what is expected); overlapping tensors; a schedule that reduces; otherwise as
            :func:`all_reduce` (no op).

    Example (``torchrun --nproc-per-node 4``; ``dist``, ``n``, ``dc`` as in :func:`all_reduce`)::

        schedule = build("direct", f"ring:{n}", "alltoall")
        tokens = torch.arange(n * 100, dtype=torch.int64)     # rows 100 j .. 100 j + 99 go to rank j
        received = torch.empty_like(tokens)
        dc.all_to_all_single(received, tokens, schedule=schedule)

    Source: PyTorch's ``torch.distributed.all_to_all_single``; docs/runtime.md, "torch.distributed".
    """
    call = "all_to_all_single"
    _sync(async_op)
    send, recv = _tensor(input, "input", False), _tensor(output, "output", True)
    rank, nranks = _group(group)
    for name, tensor, splits in (("input", input, input_split_sizes), ("output", output, output_split_sizes)):
        rows = tensor.shape[0] if tensor.dim() else 1
        if rows % nranks:
            raise DirectcollError(f"{call}: {name} has {rows} rows (dim 0), not divisible into {nranks} equal "
                                  "splits, one per rank")
        if splits is not None and [int(s) for s in splits] != [rows // nranks] * nranks:
            raise DirectcollError(f"{call}: {name}_split_sizes {list(splits)} are not {nranks} equal splits of "
                                  f"{rows} rows ([{rows // nranks}] * {nranks}, or None): a schedule moves equal "
                                  "parts, uneven splits are not supported")
    if output.numel() != input.numel():
        _refuse_size(call, "output", output.numel(), f"{input.numel()}, as many as input")
    if _overlap(output, input):
        raise DirectcollError(f"{call}: output overlaps input; give a separate output of {input.numel()} elements")
    executor.alltoall(send, recv, **_context(group, rank, nranks, schedule, timeout))
