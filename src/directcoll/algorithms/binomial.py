"""Binomial-tree broadcast and reduce for any number of ranks and any root, in rank order.

The reduce merges contiguous rank ranges: at step k = 0 .. ceil(log2 N) - 1 the range [a, a + 2^k) and the range
[a + 2^k, a + 2^(k+1)) (cut at N) combine, for every a divisible by 2^(k+1). Each range is held by one rank: the
root if it lies inside, else the range's first rank; the holder of the half without the root sends its partial
result to the other holder. Every reduction therefore joins two adjacent rank ranges, so the reduce keeps rank
order for a non-commutative operator whatever the root is (MPI 4.1 Sec. 6.9.1), without MPICH's rotation of the
ranks (which keeps order only at root 0). The broadcast is the same tree run backwards (the root first sends to
the holder of the half without it, at distance up to N/2, then the distances halve): ceil(log2 N) steps, the
whole vector on every edge.

Source: the binomial trees of MPICH's MPIR_Bcast_intra_binomial and MPIR_Reduce_intra_binomial (Thakur,
Rabenseifner & Gropp, "Optimization of collective communication operations in MPICH", IJHPCA 2005, Sec. 4.1
and 4.5); Swing (De Sensi et al., NSDI'24) Sec. 2.1 and 6 (the trees Swing replaces).

>>> from directcoll.topology import parse
>>> build_binomial(parse("ring:6"), "broadcast", root=4)
Schedule(broadcast, binomial, N=6, nblocks=1, steps=3, transfers=5)
"""

from __future__ import annotations

import numpy as np

from directcoll.algorithms.rooted import Tree, check_root, rooted, tree_broadcast
from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import Schedule
from directcoll.topology.model import Topology

VARIANTS = ("latency",)


def binomial_tree(nranks: int, root: int = 0) -> Tree:
    """The broadcast tree of the rank-range binomial reduce (module docstring), from ``root``.

    Returns:
        A :class:`~directcoll.algorithms.rooted.Tree` of ceil(log2 N) steps.

    Raises:
        UnsupportedShapeError: ``root`` outside 0..N-1, or N < 1.

    Source: Thakur, Rabenseifner & Gropp (IJHPCA 2005) Sec. 4.1 (binomial broadcast) and 4.5 (binomial reduce).

    >>> t = binomial_tree(4, 3)
    >>> list(zip(t.step.tolist(), t.parent.tolist(), t.child.tolist()))
    [(0, 3, 0), (1, 0, 1), (1, 3, 2)]
    """
    if nranks < 1:
        raise UnsupportedShapeError(f"binomial: need N >= 1 ranks, got {nranks}")
    root = check_root(root, nranks, "binomial")
    levels = max(0, int(np.ceil(np.log2(nranks)))) if nranks > 1 else 0
    step, parent, child = [], [], []
    for k in range(levels):
        a = np.arange(0, nranks, 2 ** (k + 1))
        m = a + 2 ** k
        a, m = a[m < nranks], m[m < nranks]
        left = np.where((a <= root) & (root < m), root, a)
        right = np.where((m <= root) & (root < m + 2 ** k), root, m)
        root_right = right == root
        receiver, sender = np.where(root_right, right, left), np.where(root_right, left, right)
        step.append(np.full(len(a), levels - 1 - k))
        parent.append(receiver)
        child.append(sender)
    if not levels:
        return Tree.from_edges(nranks, root, [], [], [])
    return Tree.from_edges(nranks, root, np.concatenate(step), np.concatenate(parent), np.concatenate(child))


def build_binomial(topology: Topology, collective="broadcast", *, variant: str | None = None,
                   ports: int | None = None, root: int = 0) -> Schedule:
    """Registry builder: binomial-tree broadcast or reduce of the whole vector (one block).

    Args:
        topology: any topology (the tree is over ranks; the network routes every edge).
        collective: broadcast or reduce.
        variant: "latency" (the only one).
        ports: 1 (a tree uses one message per rank and step).
        root: the root rank.

    Returns:
        A Schedule with nblocks = 1, ceil(log2 N) steps and N - 1 transfers, meta root and algorithm.

    Raises:
        UnsupportedShapeError: another collective, variant or ports, or a root outside 0..N-1.

    Source: Thakur, Rabenseifner & Gropp (IJHPCA 2005) Sec. 4.1 and 4.5; MPI 4.1 standard, Sec. 6.9.1.

    >>> from directcoll.topology import parse
    >>> build_binomial(parse("torus:3x5"), "reduce", root=7).num_steps
    4
    """
    if variant not in (None, *VARIANTS):
        raise UnsupportedShapeError(f"binomial: unknown variant {variant!r}; accepted: {', '.join(VARIANTS)}")
    if ports not in (None, 1):
        raise UnsupportedShapeError(f"binomial: a tree runs on 1 port, got ports = {ports}")
    tree = binomial_tree(topology.num_compute, root)
    return rooted(collective, tree_broadcast([tree], meta={"algorithm": "binomial", "variant": "latency",
                                                          "ports": 1}))
