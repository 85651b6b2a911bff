"""Bounds: limits no schedule can beat, one function each, with the paper, section and equation it implements.

All-to-all bounds are on F, the maximum concurrent flow every ordered pair of compute nodes can route at once, in
units of a reference link capacity (Basu et al., HPDC 2024, Sec. 3.1; :func:`directcoll.synthesis.mcf.link.
alltoall_mcf` computes F itself): an all-to-all of m bytes per pair takes at least m / (F b) seconds, b the
reference bandwidth in bytes/s.
"""

from __future__ import annotations

from directcoll.errors import TopologyError, UnsupportedShapeError
from directcoll.topology.paths import distance_sum


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
