"""Topology metrics: size, degree, diameter, average distance, bisection facts, intersection arrays.

Bounds on these (the Moore bound on the diameter, Zhao et al. Def. 9) live in :mod:`directcoll.cost.bounds`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from directcoll.resources import check_memory
from directcoll.topology.model import Topology
from directcoll.topology.paths import bfs_distances, distance_sum


@dataclass(frozen=True)
class TopologySummary:
    """What ``directcoll topology describe`` prints. Distances are hop counts between compute nodes.

    Units: ``*_bytes_per_s`` in bytes/s (the median link bandwidth; a node's summed out-links), ``diameter`` and
    ``average_distance`` in hops, ``links`` directed.

    Raises:
        Nothing: a frozen record; :func:`describe` fills it.

    Source: docs/topology.md, "Metrics and routing"; Zhao et al. (NSDI'25) Sec. 3 (diameter D(G), the T_L of a
    BFB schedule).
    """

    spec: str
    kind: str
    nodes: int
    switches: int
    links: int
    shape: tuple[int, ...] | None
    degree_min: int
    degree_max: int
    diameter: int
    average_distance: float
    link_bandwidth_bytes_per_s: float
    node_bandwidth_bytes_per_s: float
    bisection_links: int | None
    bisection_bandwidth_bytes_per_s: float | None

    def to_dict(self) -> dict:
        """The fields as a JSON-ready dict (``shape`` a list). Raises: Nothing. Source: docs/topology.md, "Metrics
        and routing" (``describe --json``)."""
        d = asdict(self)
        d["shape"] = list(self.shape) if self.shape is not None else None
        return d


def distance_stats(topo: Topology) -> tuple[int, float]:
    """(diameter, average distance over ordered pairs of distinct compute nodes).

    Cayley topologies need one BFS (every node sees the same distance profile); others run a BFS from
    every compute node, in chunks of :func:`~directcoll.topology.paths.bfs_chunk` sources to bound memory
    (:func:`~directcoll.topology.paths.distance_sum`).

    Raises:
        ResourceError: a non-Cayley topology too large for a BFS from every node
            (:data:`~directcoll.topology.paths.MAX_BFS_WORK`).

    Returns:
        (diameter in hops, an int; average distance in hops, a float).

    Source: Zhao et al. (NSDI'25) Sec. 3 (graph diameter D(G)) and App. C.1; docs/topology.md, "Metrics and routing".

    >>> from directcoll.topology.families import petersen
    >>> distance_stats(petersen())
    (2, 1.6666666666666667)
    """
    n = topo.num_compute
    diameter, total = distance_sum(topo)
    return diameter, total / (n * (n - 1)) if n > 1 else 0.0


def bisection_links(topo: Topology) -> int | None:
    """Directed links crossing the minimum bisection, one direction, for families where it is known in
    closed form (cut the largest dimension in half); None otherwise.

    torus: 2 N / d_max (wrap-around doubles the cut; with d_max = 2 the two parallel cables both cross);
    mesh: N / d_max; ring:N:uni: 1; hypercube: N / 2; HyperX: (d_max/2)^2 * N / d_max for even d_max.

    Raises:
        Nothing: closed forms by family.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 5.4 (HyperX / HammingMesh links raise the bisection bandwidth of
    a torus); docs/topology.md, "Metrics and routing".

    >>> from directcoll.topology.families import hypercube, torus
    >>> bisection_links(torus((4, 8))), bisection_links(hypercube(3))
    (8, 4)
    """
    if topo.shape is None:
        return None
    n, dmax = topo.num_compute, max(topo.shape)
    if topo.kind == "torus":
        return 2 * n // dmax
    if topo.kind == "ring":
        return 2 if topo.params.get("bidirectional", True) else 1
    if topo.kind == "mesh":
        return n // dmax
    if topo.kind == "hypercube":
        return n // 2
    if topo.kind == "hyperx" and dmax % 2 == 0:
        return (dmax // 2) ** 2 * (n // dmax)
    return None


def describe(topo: Topology) -> TopologySummary:
    """Summarize a topology: N, switches, directed links, degree range, diameter, average distance,
    bandwidths (bytes/s) and the bisection where known. ``directcoll topology describe`` adds the Moore-bound
    diameter (:func:`directcoll.cost.bounds.topology_moore_bound`).

    Raises:
        ResourceError: the distances of a non-Cayley topology need too much work (:func:`distance_stats`).

    Source: docs/topology.md, "Metrics and routing" (``directcoll topology describe``).

    >>> from directcoll.topology.families import torus
    >>> summary = describe(torus((4, 4)))
    >>> summary.diameter, summary.bisection_links
    (4, 8)
    """
    deg = topo.out_degree[: topo.num_compute]
    diameter, avg = distance_stats(topo)
    cut = bisection_links(topo)
    bw = float(np.median(topo.link_bandwidth)) if topo.num_links else 0.0
    return TopologySummary(
        spec=topo.spec, kind=topo.kind, nodes=topo.num_compute, switches=topo.num_nodes - topo.num_compute,
        links=topo.num_links, shape=topo.shape, degree_min=int(deg.min()), degree_max=int(deg.max()),
        diameter=diameter, average_distance=avg, link_bandwidth_bytes_per_s=bw,
        node_bandwidth_bytes_per_s=topo.node_bandwidth, bisection_links=cut,
        # links of unequal bandwidths (links(...), App. E.3): the cut's bandwidth is not cut * one rate
        bisection_bandwidth_bytes_per_s=None if cut is None or np.ptp(topo.link_bandwidth) > 0 else cut * bw,
    )


def intersection_array(topo: Topology) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """({b_0, ..., b_(D-1)}, {c_1, ..., c_D}) when the compute-node graph is distance-regular (Zhao et al.
    Def. 17: for every pair x, y at distance i, y has c_i neighbours at distance i-1 from x, a_i at distance
    i and b_i at distance i+1), else None. Only for bidirectional topologies; parallel links count once.
    Dense all-pairs BFS: meant for graphs of up to a few thousand nodes.

    Raises:
        ResourceError: the dense N x N distance and layer matrices would exceed the memory budget.

    >>> from directcoll.topology.families import petersen, ring
    >>> intersection_array(petersen()), intersection_array(ring(6, bidirectional=False))
    (((3, 2), (1, 1)), None)
    """
    n = topo.num_compute
    if topo.num_nodes != n or (topo.reverse_link < 0).any():
        return None
    # distances (int64 and scipy's float64), adjacency and three float32 layers, the boolean masks
    check_memory(f"the intersection array of {topo.spec} (dense {n:,} x {n:,} matrices)", 40.0 * n * n)
    dist = bfs_distances(topo, np.arange(n))
    adj = np.zeros((n, n), dtype=np.float32)
    adj[topo.link_src, topo.link_dst] = 1.0  # parallel links count once
    np.fill_diagonal(adj, 0.0)
    diameter = int(dist.max())
    # layer[j][x, y]: neighbours of y at distance j from x (float32 matmul: exact for these small counts)
    layer = {j: (dist == j).astype(np.float32) @ adj for j in (0, 1)}
    b, c = [], []
    for i in range(diameter + 1):
        at_i = dist == i
        if i + 1 <= diameter:
            layer[i + 1] = (dist == i + 1).astype(np.float32) @ adj
        for j, out in ((i - 1, c), (i + 1, b)):
            if j < 0 or j > diameter:
                continue
            vals = np.unique(layer[j][at_i])
            if len(vals) != 1:
                return None
            out.append(int(vals[0]))
        layer.pop(i - 1, None)
    return tuple(b), tuple(c)
