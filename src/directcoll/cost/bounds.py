"""Bounds: the least cost any topology or schedule of a given size can have. Every bound of the project lives here,
each function with the paper, section and equation it implements.
"""

from __future__ import annotations

from directcoll.topology.metrics import distance_stats
from directcoll.topology.model import Topology


# -- the Moore bound (Zhao et al., NSDI'25, App. C.1, Def. 9 and 10) -----------------------------------------------
def moore_bound(d: int, k: int, *, directed: bool = True) -> int:
    """The Moore bound M_{d,k}: the largest possible number of nodes of a degree-d graph of diameter k.

    Directed (Zhao et al. NSDI'25, App. C.1, Def. 9): M_{d,k} = 1 + d + d^2 + ... + d^k. Undirected
    (bidirectional, the T_L** of Table 8): 1 + d * (1 + (d-1) + ... + (d-1)^(k-1)).

    Args:
        d: the degree (out-degree of a digraph), >= 0.
        k: the diameter, in hops, >= 0.

    Returns:
        a number of nodes (a Python int, exact for any d and k).

    Raises:
        ValueError: d < 0 or k < 0.

    >>> moore_bound(2, 3), moore_bound(3, 2, directed=False)
    (15, 10)
    """
    d, k = int(d), int(k)
    if d < 0 or k < 0:
        raise ValueError(f"moore_bound: need d >= 0 and k >= 0, got d={d}, k={k}")
    if directed:
        return sum(d ** i for i in range(k + 1))
    return 1 + d * sum((d - 1) ** i for i in range(k))


def moore_bound_diameter(n: int, d: int, directed: bool = True) -> int:
    """T_L*(N, d) in hops: the least diameter any n-node graph of degree d can have by the Moore bound.

    The least k with :func:`moore_bound` (d, k) >= n. A topology of that diameter is Moore optimal (Zhao et al.
    NSDI'25, App. C.1, Def. 10: N > M_{d,k-1} for diameter k).

    Args:
        n: number of nodes, >= 1.
        d: degree, >= 0.
        directed: the directed bound (Def. 9), else the undirected one (Table 8's T_L**).

    Returns:
        the diameter k, in hops.

    Raises:
        ValueError: n < 1, d < 0, or no connected graph exists (n > 1 with d = 0; undirected n > 2 with d = 1).

    >>> moore_bound_diameter(1024, 4), moore_bound_diameter(10, 3, directed=False)
    (5, 2)
    """
    n, d = int(n), int(d)
    if n < 1 or d < 0:
        raise ValueError(f"moore_bound_diameter: need n >= 1 and d >= 0, got n={n}, d={d}")
    if n == 1:
        return 0
    if d == 0 or (not directed and d == 1 and n > 2):
        raise ValueError(f"moore_bound_diameter: no connected {'directed' if directed else 'undirected'} graph "
                         f"with n={n} nodes and degree {d}")
    if directed and d == 1:
        return n - 1
    if not directed and d == 2:
        return n // 2
    k = 0
    while moore_bound(d, k, directed=directed) < n:
        k += 1
    return k


def moore_parameters(topo: Topology) -> tuple[int, bool] | None:
    """(d, directed) of a topology's Moore bound (Zhao et al. NSDI'25, App. C.1, Def. 9), or None.

    Directed when some link has no reverse link, d the largest out-degree of a compute node (parallel links
    counted, which only weakens the bound). None for topologies with switches, to which the bound does not apply.

    Raises:
        Nothing: reads the topology's link arrays (a topology without links gives (0, False)).

    >>> from directcoll.topology.spec import parse
    >>> moore_parameters(parse("kautz:2:3")), moore_parameters(parse("hammingmesh:2x2:2x2"))
    ((2, True), None)
    """
    if topo.num_nodes != topo.num_compute:
        return None
    directed = bool(topo.num_links) and bool((topo.reverse_link < 0).any())
    return int(topo.out_degree[: topo.num_compute].max()), directed


def topology_moore_bound(topo: Topology) -> int | None:
    """The Moore-bound diameter of a topology, in hops (Zhao et al. NSDI'25, App. C.1, Def. 9), or None.

    :func:`moore_bound_diameter` with the N and :func:`moore_parameters` of ``topo``: the least diameter any
    graph with this N and degree can have (directed when some link has no reverse, else undirected, degree =
    largest out-degree). None where it does not apply (switch nodes) or no connected graph of that degree
    exists. ``directcoll topology describe`` reports it as ``moore_bound_diameter``.

    Raises:
        Nothing: a degree for which no connected graph exists (ValueError of :func:`moore_bound_diameter`) gives None.

    >>> from directcoll.topology.spec import parse
    >>> topology_moore_bound(parse("petersen")), topology_moore_bound(parse("circulant:16:3,4"))
    (2, 2)
    """
    p = moore_parameters(topo)
    if p is None:
        return None
    try:
        return moore_bound_diameter(topo.num_compute, p[0], directed=p[1])
    except ValueError:
        return None


def is_moore_optimal(topo: Topology, *, directed: bool | None = None) -> bool:
    """True when the topology's diameter equals its Moore-bound diameter (Zhao et al. NSDI'25, App. C.1, Def. 10).

    With a bidirectional topology the undirected bound (the T_L** of Table 8) is used, unless ``directed=True``
    (Def. 9 as stated, for digraphs).

    Raises:
        ValueError: a topology with switch nodes.
        ResourceError: the diameter of a non-Cayley topology needs too much work
            (:func:`directcoll.topology.metrics.distance_stats`).

    >>> from directcoll.topology.spec import parse
    >>> is_moore_optimal(parse("kautz:2:3")), is_moore_optimal(parse("circulant:16:3,4"))
    (True, False)
    """
    p = moore_parameters(topo)
    if p is None:
        raise ValueError(f"{topo.spec}: the Moore bound applies to switchless topologies only")
    d, auto = p
    bound = moore_bound_diameter(topo.num_compute, d, directed=auto if directed is None else directed)
    return distance_stats(topo)[0] == bound
