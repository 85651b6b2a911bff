"""Bounds: limits no topology or schedule can beat, one function each, with the paper, section and equation it
implements. Every bound of the project lives here.

- The Moore bound (Zhao et al., NSDI'25, App. C.1, Def. 9 and 10): the most nodes a degree-d graph of diameter k
  can have, hence the least T_L (in steps) of any schedule on N nodes of degree d.
- All-to-all bounds on F, the maximum concurrent flow every ordered pair of compute nodes can route at once, in
  units of a reference link capacity (Basu et al., HPDC 2024, Sec. 3.1; :func:`directcoll.synthesis.mcf.link.
  alltoall_mcf` computes F itself): an all-to-all of m bytes per pair takes at least m / (F b) seconds, b the
  reference bandwidth in bytes/s.
"""

from __future__ import annotations

from directcoll.errors import TopologyError, UnsupportedShapeError
from directcoll.schedule.ir import Collective
from directcoll.topology.metrics import distance_stats
from directcoll.topology.model import Topology
from directcoll.topology.paths import distance_sum


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


# -- bandwidth: the port-time bound (Swing, De Sensi et al., NSDI'24, Sec. 2.2) ---------------------------------
def lower_bound_port_time(collective: Collective, ranks: int, ports: int) -> float:
    """The least total port time of a collective, in units of the vector size n over one port's bandwidth: every
    rank must send and receive (p - 1)/p of the vector for a reduce-scatter or an allgather, twice that for an
    allreduce, spread over its ``ports`` ports: 2 (p - 1)/p / ports for allreduce, (p - 1)/p / ports otherwise; for
    broadcast and reduce every non-root rank receives or sends the whole vector: 1 / ports. The ratio of a
    schedule's port time to this is Swing's bandwidth deficiency Psi.

    Raises:
        Nothing: ``ranks`` and ``ports`` are positive counts (the callers' schedules and topologies).

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.2 (the bandwidth-optimal bound and the deficiency Psi).

    >>> lower_bound_port_time(Collective.ALLREDUCE, 4, 2)
    0.75
    """
    if collective.rooted:  # every non-root rank receives (broadcast) or sends (reduce) all n bytes at least once
        return 1.0 / ports
    factor = 2.0 if collective is Collective.ALLREDUCE else 1.0
    return factor * (ranks - 1) / ranks / ports


# -- all-to-all (Basu et al., HPDC'24, Sec. 3.1) --------------------------------------------------------------
def capacity_bound(topology, *, host_bandwidth=None, nic_forwarding: bool = False, reference_bandwidth=None) -> float:
    """Upper bound on the all-to-all MCF value F: total capacity over the capacity one unit of every pair needs
    at least (Basu et al. Sec. 3.1, eq. 1-5, by weak duality with unit link lengths; Zhao et al. App. A.5).

    A pair at hop distance d(s, t) puts at least d(s, t) units of flow on network links per unit delivered, so
    ``F <= sum(capacity) / sum_{s != t} d(s, t)``; with unit capacities this is |E| / sum of distances. With a
    host bandwidth (Basu Sec. 3.2.2, Fig. 2) each network hop also crosses a host link each way (one crossing
    per pair with ``nic_forwarding``), giving a second bound ``N host / crossings``; the smaller one is
    returned. Cayley topologies need one BFS, others one per compute node.

    Args:
        topology: a Topology or a spec string.
        host_bandwidth: bytes/s (or a string such as ``100Gbps``) of each host <-> NIC link, or None.
        nic_forwarding: with ``host_bandwidth``, the NIC forwards transit traffic instead of the host.
        reference_bandwidth: bytes/s (or a string) of capacity 1; default the largest link bandwidth.

    Returns:
        The bound on F, in units of the reference capacity (float).

    Raises:
        TopologyError: fewer than two compute nodes.
        UnsupportedShapeError: a non-positive reference bandwidth.
        SpecError, DirectcollError: an unknown spec, a bandwidth string that cannot be read.

    >>> capacity_bound("torus:3x3x3")
    0.1111111111111111
    """
    from directcoll.topology.spec import parse
    from directcoll.units import parse_bandwidth

    topology = parse(topology)
    ref = None if reference_bandwidth is None else parse_bandwidth(reference_bandwidth)
    host = None if host_bandwidth is None else parse_bandwidth(host_bandwidth)
    n = topology.num_compute
    if n < 2:
        raise TopologyError(f"{topology.spec}: all-to-all needs at least 2 compute nodes, got {n}")
    reference = float(topology.link_bandwidth.max()) if ref is None else float(ref)
    if not reference > 0:
        raise UnsupportedShapeError(f"reference bandwidth must be > 0 bytes/s, got {ref!r}")
    capacity = (topology.link_bandwidth / reference).astype(float)
    _, total = distance_sum(topology)
    bound = float(capacity.sum()) / total
    if host is not None:
        host_cap = host / (float(topology.link_bandwidth.max()) if ref is None else ref)
        # host forwarding: a pair d hops apart crosses d host -> NIC links; through switches, at least one
        crossings = total if not nic_forwarding and topology.num_nodes == n else n * (n - 1)
        bound = min(bound, n * host_cap / crossings)
    return bound


def theorem1_bound(num_nodes: int, degree: int) -> float:
    """Basu et al. Theorem 1, eq. (25): ``F <= d / sum_u D(r, u)`` over the best out-tree of N nodes and
    out-degree d (levels of 1, d, d^2, ... nodes); an upper bound on F for any d-regular digraph with unit
    capacities.

    Args:
        num_nodes: N, compute nodes.
        degree: d, out-degree of every node.

    Returns:
        The bound on F, in units of one link's capacity (float).

    Raises:
        UnsupportedShapeError: N < 2 or d < 1.

    >>> theorem1_bound(7, 2)  # levels 2 + 4: distances 2 * 1 + 4 * 2
    0.2
    """
    if num_nodes < 2 or degree < 1:
        raise UnsupportedShapeError(f"theorem1_bound needs N >= 2 and d >= 1, got N={num_nodes}, d={degree}")
    left, level, width, total = num_nodes - 1, 1, degree, 0
    while left > 0:
        take = min(left, width)
        total += take * level
        left -= take
        level, width = level + 1, width * degree
    return degree / total
