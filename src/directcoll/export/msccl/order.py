"""The import's orders: the MSCCL program's happens-before order, and the IR steps that respect it.

Happens-before (the executor's semantics, Azure/msccl-executor-nccl ``src/device/msccl_kernel.cu``): a graph over
the program's steps (thread-block order, ``depid``/``deps`` waits, every send before its receive), sorted
topologically (:func:`topological_order`); :func:`reachability` gives, per step, the bit set of the steps before it.

IR steps (:func:`ir_steps`): every IR action (an *event*) touches chunk coordinates of a rank (*accesses*: read,
copy-write or reduce-write, at a position in happens-before order). The steps are the smallest ones that keep every
read after the write it sees (one step later), every write after the reads that must not see it (same step or
later) and writes in order (a copy then a reduction may share a step: the IR lands copies before reductions), so
the bulk-synchronous IR reproduces the executor's result. Conflicting accesses not ordered by happens-before are
data races.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from collections.abc import Callable

from directcoll.export.msccl.format import MscclFormatError

#: Access kinds.
READ, COPY_WRITE, REDUCE_WRITE = 0, 1, 2
#: Pseudo step nodes: the out-of-place input copy (before everything), all-to-all's final copies (after).
START, END = -1, -2


def topological_order(succ: list[list[int]]) -> tuple[list[int], int | None]:
    """Kahn's order of the graph ``succ`` (node -> successors), and a node left on a cycle (None if none).

    Returns:
        (order, stuck): a list of node ids (all nodes when acyclic), and a node on a cycle or None.

    Raises:
        Nothing: graph traversal.

    Source: Kahn's algorithm (Kahn, CACM 1962) over the executor's happens-before order (Azure/msccl-executor-nccl
    ``src/device/msccl_kernel.cu``); docs/export.md, "Import".

    >>> topological_order([[1], [2], []]), topological_order([[1], [0]])
    (([0, 1, 2], None), ([], 0))
    """
    nv = len(succ)
    indeg = [0] * nv
    for u in range(nv):
        for v in succ[u]:
            indeg[v] += 1
    ready = deque(u for u in range(nv) if indeg[u] == 0)
    order = []
    while ready:
        u = ready.popleft()
        order.append(u)
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
    stuck = next((u for u in range(nv) if indeg[u] > 0), None) if len(order) < nv else None
    return order, stuck


def reachability(order: list[int], succ: list[list[int]]) -> list[int]:
    """Per node, the bit set (an int) of the nodes that reach it; ``order`` is topological.

    Returns:
        A list of N ints; bit u of entry v is set when u reaches v.

    Raises:
        Nothing: graph traversal.

    Source: the executor's happens-before order (Azure/msccl-executor-nccl ``src/device/msccl_kernel.cu``);
    docs/export.md, "Import" (data races).

    >>> reachability([0, 1, 2], [[1], [2], []])
    [0, 1, 3]
    """
    preds = [[] for _ in range(len(succ))]
    for u, vs in enumerate(succ):
        for v in vs:
            preds[v].append(u)
    reach = [0] * len(succ)
    for v in order:
        acc = 0
        for u in preds[v]:
            acc |= reach[u] | (1 << u)
        reach[v] = acc
    return reach


def ir_steps(nevents: int, accesses: list[tuple], fixed: set, *, reach: list[int] | None,
             describe: Callable[[int], str], source: str) -> list[int]:
    """Smallest IR step of every event (module docstring).

    Args:
        nevents: number of events.
        accesses: (rank, coordinates int64 array, position, kind, event, step node) tuples.
        fixed: events that must stay in step 0 (the out-of-place input copy); the others start at step 1 if any.
        reach: :func:`reachability` of the step nodes, or None to skip the race check.
        describe: names a step node in messages.

    Raises:
        MscclFormatError: a data race, or accesses that need a cycle of increasing steps; messages start with
            ``source``.

    Returns:
        The IR step of every event, a list of ``nevents`` ints (steps).

    Source: docs/export.md, "Import"; the bulk-synchronous semantics of docs/schedule.md (copies land before
    reductions) against the executor's happens-before order (``msccl_kernel.cu``).
    """
    edges = _conflict_edges(accesses, reach, describe, source)
    step = [1 if (fixed and e not in fixed) else 0 for e in range(nevents)]
    first = [math.inf] * nevents
    for a in accesses:
        first[a[4]] = min(first[a[4]], a[2])
    order = sorted(range(nevents), key=lambda e: first[e])  # sweeps in happens-before order converge fast
    for _ in range(nevents + 1):
        changed = False
        for u in order:
            su = step[u]
            for v, w in edges[u].items():
                if step[v] < su + w:
                    if v in fixed:
                        raise MscclFormatError(f"{source}: internal error: the out-of-place input copy must come "
                                               "first")
                    step[v] = su + w
                    changed = True
        if not changed:
            return step
    raise MscclFormatError(f"{source}: the program cannot be expressed bulk-synchronously: its chunk accesses "
                           "require a cycle of strictly increasing steps")


def _conflict_edges(accesses: list[tuple], reach: list[int] | None, describe: Callable[[int], str],
                    source: str) -> defaultdict:
    """u -> {v: weight}: step(v) >= step(u) + weight, for every pair of conflicting accesses of one cell."""
    per_cell = defaultdict(list)
    for r, cells, p, kind, e, node in accesses:
        for c in cells.tolist():
            per_cell[r, c].append((p, kind, e, node))
    edges = defaultdict(dict)

    def need(u: int, v: int, w: int, u_node: int, v_node: int, r: int, c: int) -> None:
        if u == v:
            return
        if reach is not None and not _ordered(reach, u_node, v_node):
            raise MscclFormatError(f"{source}: data race on gpu {r}, chunk coordinate {c}: {describe(u_node)} and "
                                   f"{describe(v_node)} access it without a dependency ordering them")
        if edges[u].get(v, -1) < w:
            edges[u][v] = w

    for (r, c), acc in per_cell.items():
        acc.sort(key=lambda a: a[0])
        last = None                    # (event, kind, node)
        readers = []
        for _, kind, e, node in acc:
            if kind == READ:
                if last is not None:
                    need(last[0], e, 1, last[2], node, r, c)
                readers.append((e, node))
                continue
            for re_, rn in readers:
                need(re_, e, 0, rn, node, r, c)
            if last is not None:
                same_step_ok = kind == REDUCE_WRITE and not readers
                need(last[0], e, 0 if same_step_ok else 1, last[2], node, r, c)
            last = (e, kind, node)
            readers = []
    return edges


def _ordered(reach: list[int], a_node: int, b_node: int) -> bool:
    """Whether step node ``a_node`` happens before ``b_node`` (pseudo nodes: START first, END last)."""
    if a_node < 0 or b_node == END or a_node == b_node:
        return True
    return bool((reach[b_node] >> a_node) & 1)
