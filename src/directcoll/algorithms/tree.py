"""Double binary tree allreduce: NCCL's DBT (Jeaugey, "Massively scale your deep learning training with NCCL
2.4", 2019) after Sanders, Speck & Träff, "Two-tree algorithms for full bandwidth broadcast, reduction and scan"
(Parallel Computing 35(12), 2009) -- the DBT baseline of Zhao et al. (NSDI'25) Sec. 8.2, refs. [38, 71].

Two binary trees span the N ranks such that every rank is interior in at most one of them
(:func:`directcoll.topology.families.trees.double_binary_tree_parents`: the balanced in-order tree on positions
1..N, and the same tree shifted by one rank). Each tree carries half of the vector, cut into P chunks, and runs
a pipelined reduce up the tree (a child REDUCEs its partial sum of a chunk into its parent) followed, chunk by
chunk, by a broadcast down the tree (a parent COPYs the final chunk into its children); both trees and both
phases overlap.

Timing (bulk-synchronous steps, depth D = floor(log2 N) of both trees, a node's depth d, chunk k = 0..P-1):

* reduce: the node at depth d >= 1 sends its partial chunk k to its parent at step (D - d) + k. Its children
  (depth d + 1) sent theirs at step D - d - 1 + k, so it holds their sums; the root has chunk k complete after
  step D - 1 + k.
* broadcast: the node at depth d sends the complete chunk k to its children at step D + k + d.

So the allreduce takes 2D + P - 1 steps; in every step a rank sends at most one chunk up and two down in the
tree it is interior to and one chunk up in the other, each chunk being M / (2P) bytes. With α-β costs and one
link per tree edge that is (2D + P - 1)(α + M / (2 P b)) for link bandwidth b. The schedules are logical: on
any topology the simulator routes every tree edge over shortest paths; on the double binary tree topology
(:func:`directcoll.topology.families.trees.double_binary_tree`) every edge is one link.

Only allreduce: a tree reduces to a root, which is no reduce-scatter (UnsupportedShapeError otherwise).

Source: Zhao et al. (NSDI'25) Sec. 8.2 (the DBT baseline); Sanders, Speck & Träff (2009), two-tree algorithms.

>>> dbt_allreduce(6, 2)
Schedule(allreduce, double-binary-tree, N=6, nblocks=4, steps=5, transfers=40)
"""

from __future__ import annotations

import numpy as np

from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import COPY, REDUCE, Collective, Schedule, ScheduleBuilder
from directcoll.topology.families.trees import double_binary_tree_parents
from directcoll.topology.model import Topology

#: chunks per half-vector when none is asked for (variant ``bandwidth``); ``latency`` sends each half whole.
DEFAULT_CHUNKS = 8
VARIANTS = ("bandwidth", "latency")
_VARIANT_CHUNKS = {"bandwidth": DEFAULT_CHUNKS, "latency": 1}


def tree_depths(parents: np.ndarray) -> np.ndarray:
    """Depth of every rank (root 0) in the trees given by ``parents`` (shape (..., N), -1 at roots, as
    :func:`~directcoll.topology.families.trees.double_binary_tree_parents` returns); same shape, int64.

    Raises:
        UnsupportedShapeError: the parents do not form trees (a cycle).

    Source: Sanders, Speck & Träff (2009) (the two trees); used for the DBT baseline of Zhao et al.
    (NSDI'25) Sec. 8.2.

    >>> tree_depths(np.array([[-1, 0, 0, 1]])).tolist()
    [[0, 1, 1, 2]]
    """
    parents = np.asarray(parents, dtype=np.int64)
    depth = np.zeros(parents.shape, dtype=np.int64)
    up = parents.copy()
    rows = np.arange(parents.shape[0])[:, None] if parents.ndim == 2 else None
    for _ in range(parents.shape[-1]):
        live = up >= 0
        if not live.any():
            return depth
        depth += live
        nxt = np.where(live, up, 0)
        up = np.where(live, parents[rows, nxt] if rows is not None else parents[nxt], -1)
    raise UnsupportedShapeError("tree_depths: the parent arrays contain a cycle")


def dbt_depth(n: int) -> int:
    """D = floor(log2 N), the depth of both trees of the double binary tree on N >= 1 ranks.

    Returns:
        D, an int (steps of one traversal root to leaf).

    Raises:
        Nothing: arithmetic.

    Source: Sanders, Speck & Träff (2009) (balanced in-order trees); Zhao et al. (NSDI'25) Sec. 8.2 (DBT).

    >>> dbt_depth(6), dbt_depth(8)
    (2, 3)
    """
    return int(n).bit_length() - 1


def dbt_steps(n: int, chunks: int = DEFAULT_CHUNKS) -> int:
    """Steps of :func:`dbt_allreduce`: 2 floor(log2 N) + P - 1 for N >= 2 (0 for N = 1).

    Returns:
        An int (steps).

    Raises:
        Nothing: arithmetic.

    Source: this module's timing (module docstring), after Sanders, Speck & Träff (2009) pipelining.

    >>> dbt_steps(6), dbt_steps(6, chunks=1)
    (11, 4)
    """
    return 0 if n < 2 else 2 * dbt_depth(n) + int(chunks) - 1


def _check_chunks(chunks) -> int:
    if isinstance(chunks, bool) or int(chunks) != chunks or int(chunks) < 1:
        raise UnsupportedShapeError(f"double-binary-tree: chunks must be a positive integer (chunks per half "
                                    f"of the vector), got {chunks!r}")
    return int(chunks)


def dbt_allreduce(n: int, chunks: int = DEFAULT_CHUNKS) -> Schedule:
    """The pipelined double binary tree allreduce on N ranks (module docstring; Sanders et al. 2009, NCCL).

    Args:
        n: N >= 1 ranks.
        chunks: P >= 1, the chunks each tree's half of the vector is cut into (the degree of pipelining).

    Returns:
        An allreduce Schedule with nblocks = 2P (block t*P + k is chunk k of tree t) and 2 floor(log2 N) + P - 1
        steps (none for N = 1); per step and tree edge at most one REDUCE child -> parent and one COPY
        parent -> child of one chunk each. ``meta``: algorithm, variant (latency when P = 1, else bandwidth),
        chunks, depth.

    Raises:
        UnsupportedShapeError: n < 1 or chunks not a positive integer.

    Source: Sanders, Speck & Träff (2009); NCCL's double binary tree (Jeaugey 2019); the DBT baseline of
    Zhao et al. (NSDI'25) Sec. 8.2.

    >>> s = dbt_allreduce(6, 2)
    >>> s.num_steps == dbt_steps(6, 2), s.meta["depth"]
    (True, 2)
    """
    if isinstance(n, bool) or int(n) != n or int(n) < 1:
        raise UnsupportedShapeError(f"double-binary-tree: need N >= 1 ranks, got {n!r}")
    n, p = int(n), _check_chunks(chunks)
    parents = double_binary_tree_parents(n)
    depth = tree_depths(parents)
    big_d = dbt_depth(n)
    builder = ScheduleBuilder(Collective.ALLREDUCE, n, 2 * p)
    k = np.arange(p, dtype=np.int64)[None, :]
    for t in range(2):
        child = np.flatnonzero(parents[t] >= 0)
        parent, d = parents[t, child][:, None], depth[t, child][:, None]
        c = child[:, None]
        block = t * p + k
        builder.add(big_d - d + k, c, parent, REDUCE, block, block + 1)
        builder.add(big_d + k + d - 1, parent, c, COPY, block, block + 1)
    meta = {"algorithm": "double-binary-tree", "variant": "latency" if p == 1 else "bandwidth", "chunks": p,
            "depth": big_d}
    return builder.build(meta=meta)


def build_double_binary_tree(topology: Topology, collective="allreduce", *, variant: str | None = None,
                             ports: int | None = None, chunks: int | None = None, **options) -> Schedule:
    """Registry builder: :func:`dbt_allreduce` on the topology's N ranks.

    ``variant``: ``bandwidth`` (default, P = DEFAULT_CHUNKS = 8) or ``latency`` (P = 1: each half moves whole,
    2 floor(log2 N) steps); ``chunks`` sets P directly. ``ports`` is ignored (a rank uses at most 4 links:
    3 in the tree it is interior to, 1 in the other).

    Returns:
        An allreduce Schedule with nblocks = 2P (see :func:`dbt_allreduce`).

    Raises:
        UnsupportedShapeError: a collective other than allreduce, unknown options or variant, chunks not a
            positive integer, or ``latency`` with chunks > 1.
        ScheduleError: an unknown collective name.

    Source: Zhao et al. (NSDI'25) Sec. 8.2 (DBT baseline); Sanders, Speck & Träff (2009).

    >>> from directcoll.topology import parse
    >>> build_double_binary_tree(parse("ring:8"), variant="latency").num_steps
    6
    """
    if options:
        raise UnsupportedShapeError(f"double-binary-tree takes only the option 'chunks'; got "
                                    f"{', '.join(sorted(options))}")
    coll = Collective.parse(collective)
    if coll is not Collective.ALLREDUCE:
        raise UnsupportedShapeError(f"double-binary-tree implements allreduce only (a tree reduces to its root, "
                                    f"which is no {coll.value}); got {coll.value}")
    if variant is not None and variant not in VARIANTS:
        raise UnsupportedShapeError(f"double-binary-tree: unknown variant {variant!r}; accepted: "
                                    f"{', '.join(VARIANTS)}")
    if chunks is None:
        chunks = _VARIANT_CHUNKS[variant or "bandwidth"]
    chunks = _check_chunks(chunks)
    if variant == "latency" and chunks != 1:
        raise UnsupportedShapeError(f"double-binary-tree: variant 'latency' sends each half whole (chunks=1); "
                                    f"got chunks={chunks}, use variant 'bandwidth'")
    return dbt_allreduce(topology.num_compute, chunks)
