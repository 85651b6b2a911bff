"""Pipelined chain broadcast and reduce: the vector cut into chunks that stream along a path of ranks.

The path is the topology's ring order (:func:`directcoll.algorithms.ring.ring_order`: ranks 0..N-1 on 1D shapes
and topologies without a shape, the snake order of a grid, where consecutive ranks are neighbours). The root
splits it into two arms, the ranks before it and the ranks after it, and sends down both at once; the wrap-around
hop of a ring is not used, so on a 1D shape every reduction joins adjacent rank ranges and the reduce keeps rank
order for any root (MPI 4.1 Sec. 6.9.1). With arms of h hops and c chunks, chunk j crosses the i-th hop of an arm
at step i + j: h + c - 1 steps of n / c bytes, T = (h + c - 1)(α + β n / c) (+ γ n / c per step for the reduce).

The best c for a vector of n bytes is sqrt((h - 1) β n / α) (:func:`directcoll.cost.analytic.chain_chunks`);
the schedule cannot know n, so the default is c = h: 2h - 1 steps, within a factor 2 of both the latency term
h α and the bandwidth term β n. Pass ``chunks`` (``--chunks`` on the command line) for another size.

Source: the pipelined chain of Träff & Ripke, "Optimal broadcast for fully connected processor-node networks"
(JPDC 2008, Sec. 1) and of MPICH's pipelined broadcast; Sanders, Speck & Träff (Parallel Computing 2009), Sec. 2
(pipelined trees, the optimal chunk count); Swing (De Sensi et al., NSDI'24) Sec. 2.3.1 (the ring order).

>>> from directcoll.topology import parse
>>> build_chain(parse("ring:8"), "broadcast", root=3, chunks=2)
Schedule(broadcast, chain, N=8, nblocks=2, steps=5, transfers=14)
"""

from __future__ import annotations

import numpy as np

from directcoll.algorithms.ring import ring_order
from directcoll.algorithms.rooted import Tree, check_root, rooted, tree_broadcast
from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import Schedule
from directcoll.topology.model import Topology

VARIANTS = ("pipelined",)


def chain_tree(path, root: int) -> Tree:
    """The two-armed chain along ``path`` (a permutation of the ranks) from ``root``: hop i of an arm at step i.

    Returns:
        A :class:`~directcoll.algorithms.rooted.Tree` of max(arm lengths) steps.

    Raises:
        UnsupportedShapeError: ``root`` is not in ``path``.

    Source: Träff & Ripke (JPDC 2008) Sec. 1 (the linear pipeline).

    >>> t = chain_tree([0, 1, 2, 3], 1)
    >>> list(zip(t.step.tolist(), t.parent.tolist(), t.child.tolist()))
    [(0, 1, 0), (0, 1, 2), (1, 2, 3)]
    """
    path = np.asarray(path, dtype=np.int64)
    n = len(path)
    where = np.flatnonzero(path == root)
    if not len(where):
        raise UnsupportedShapeError(f"chain: root {root} is not a rank of the path")
    q = int(where[0])
    left = np.arange(q)  # hop i: path[q - i] -> path[q - i - 1]
    right = np.arange(n - 1 - q)  # hop i: path[q + i] -> path[q + i + 1]
    step = np.concatenate([left, right])
    parent = np.concatenate([path[q - left], path[q + right]])
    child = np.concatenate([path[q - left - 1], path[q + right + 1]])
    return Tree.from_edges(n, root, step, parent, child)


def build_chain(topology: Topology, collective="broadcast", *, variant: str | None = None,
                ports: int | None = None, root: int = 0, chunks: int | None = None) -> Schedule:
    """Registry builder: pipelined chain broadcast or reduce (module docstring).

    Args:
        topology: any topology (grids: the snake path; others: ranks 0..N-1).
        collective: broadcast or reduce.
        variant: "pipelined" (the only one). ports: 1 (the two arms already leave the root by two links).
        root: the root rank. chunks: chunks of the vector, >= 1 (default: the longer arm's hops, at least 1).

    Returns:
        A Schedule with nblocks = chunks and h + chunks - 1 steps (h = the longer arm), meta root and chunks.

    Raises:
        UnsupportedShapeError: another collective, variant or ports, chunks < 1, or a root outside 0..N-1.

    Source: Träff & Ripke (JPDC 2008); Sanders, Speck & Träff (2009) Sec. 2; MPI 4.1 standard, Sec. 6.9.1.

    >>> from directcoll.topology import parse
    >>> build_chain(parse("mesh:5"), "reduce", root=2).meta["chunks"]
    2
    """
    if variant not in (None, *VARIANTS):
        raise UnsupportedShapeError(f"chain: unknown variant {variant!r}; accepted: {', '.join(VARIANTS)}")
    if ports not in (None, 1):
        raise UnsupportedShapeError(f"chain: one pipeline per arm, ports must be 1, got {ports}")
    root = check_root(root, topology.num_compute, "chain")
    tree = chain_tree(ring_order(topology), root)
    if chunks is None:
        chunks = max(1, tree.depth)
    if isinstance(chunks, bool) or not isinstance(chunks, int | np.integer) or chunks < 1:
        raise UnsupportedShapeError(f"chain: chunks must be an integer >= 1, got {chunks!r}")
    meta = {"algorithm": "chain", "variant": "pipelined", "ports": 1, "chunks": int(chunks)}
    return rooted(collective, tree_broadcast([tree], chunks=int(chunks), meta=meta))
