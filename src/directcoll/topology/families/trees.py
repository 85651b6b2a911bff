"""Tree families: NCCL's double binary tree (Sanders, Speck & Träff 2009; Zhao et al. Sec. 8.2 baseline).

:func:`double_binary_tree_parents` is the pair of trees itself, which :mod:`directcoll.algorithms.tree` schedules;
:func:`double_binary_tree` the topology with one cable per tree edge.
"""

from __future__ import annotations

import numpy as np

from directcoll.topology.families.base import need_int, sized, undirected
from directcoll.topology.model import DEFAULT_LINK_BANDWIDTH, DEFAULT_LINK_LATENCY, Topology
from directcoll.topology.sizes import graph_size

__all__ = ["double_binary_tree", "double_binary_tree_parents"]


def double_binary_tree_parents(n: int) -> np.ndarray:
    """The two trees of the double binary tree on ranks 0..n-1 (NCCL's DBT; Zhao et al. Sec. 8.2 baseline).

    Sanders, Speck & Träff, Parallel Computing 35(12), 2009. Both trees are the balanced in-order binary tree
    on positions 1..n (NCCL's ``ncclGetBtree`` without its extra root): the root is the largest power of two
    R <= n, and position p with lowest set bit b has parent p + b if bit 2b of p is clear and p + b <= n, else
    p - b. Even positions are interior, odd ones leaves, the depth is floor(log2 n). Tree 0 puts rank p - 1 at
    position p; tree 1 is the same tree shifted by one rank (rank p mod n at position p). So the interior ranks
    are the odd ones in tree 0 and the even ones (rank 0 only for even n) in tree 1: every rank is interior in
    at most one tree, and for odd n rank 0 is a leaf of both. NCCL mirrors the second tree for even n instead;
    the shift serves every n with one rule and keeps both trees full (every interior node but the last
    position has two children).

    Returns:
        int64 array of shape (2, n): ``parents[t, r]`` is the parent rank of rank r in tree t, -1 at the root.

    Raises:
        SpecError: n < 1.

    >>> double_binary_tree_parents(4).tolist()
    [[1, 3, 1, -1], [-1, 2, 0, 2]]
    """
    n = need_int("dbt", "N", n, 1)
    p = np.arange(1, n + 1, dtype=np.int64)
    b = p & -p
    up = np.where((p & (2 * b)) == 0, p + b, p - b)
    up = np.where(up > n, p - b, up)  # 0 only at the root R (p = b = R, 2R > n)
    parents = np.empty((2, n), dtype=np.int64)
    parents[0, p - 1] = np.where(up == 0, -1, up - 1)
    parents[1, p % n] = np.where(up == 0, -1, up % n)
    return parents


@sized(lambda n: graph_size(n, 4 * max(n - 1, 0), 4, extra=130 * n))
def double_binary_tree(n: int, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
                       link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Double binary tree topology (NCCL's two trees, one cable per tree edge; Zhao et al. Sec. 8.2 baseline).

    "The topology and schedule from [38, 71]": one bidirectional link per tree edge of
    :func:`double_binary_tree_parents`.

    Size: n nodes, degree <= 4 (3 links in the tree a rank is interior to, 1 in the other; rank 0 of an odd n
    has 2), diameter <= 2 floor(log2 n). A tree edge present in both trees (n <= 3) gives parallel links.
    Spec ``dbt:n`` (``params["parents"]`` is not kept; recompute it).

    Raises:
        SpecError: n < 2.

    >>> double_binary_tree(8).num_links
    28
    """
    n = need_int("dbt", "N", n, 2)
    parents = double_binary_tree_parents(n)
    child = np.flatnonzero(parents.ravel() >= 0) % n
    edges = np.stack([child, parents.ravel()[parents.ravel() >= 0]], axis=1)
    return undirected("dbt", f"dbt:{n}", n, edges, link_bandwidth, link_latency)
