"""Topology metrics: size, degree, diameter, average distance, bisection facts."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from directcoll.topology.generative import topology_moore_bound
from directcoll.topology.model import Topology
from directcoll.topology.paths import check_bfs_work, distance_sum


@dataclass(frozen=True)
class TopologySummary:
    """What ``directcoll topology describe`` prints. Distances are hop counts between compute nodes."""

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
    #: least diameter any graph with this N and degree can have (Moore bound, Zhao et al. Def. 9): directed
    #: when some link has no reverse, else undirected, degree = largest out-degree; None with switches.
    moore_bound_diameter: int | None = None

    def to_dict(self) -> dict:
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
    """
    n = topo.num_compute
    if n > 1 and not topo.is_cayley:
        check_bfs_work(topo, n, "the diameter and average distance (a BFS from every node)")
    diameter, total = distance_sum(topo)
    return diameter, total / (n * (n - 1)) if n > 1 else 0.0


def bisection_links(topo: Topology) -> int | None:
    """Directed links crossing the minimum bisection, one direction, for families where it is known in
    closed form (cut the largest dimension in half); None otherwise.

    torus: 2 N / d_max (wrap-around doubles the cut; with d_max = 2 the two parallel cables both cross);
    mesh: N / d_max; ring:N:uni: 1; hypercube: N / 2; HyperX: (d_max/2)^2 * N / d_max for even d_max.
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
    bandwidths (bytes/s), the bisection where known and the Moore-bound diameter (the topology is Moore
    optimal when ``diameter == moore_bound_diameter``).

    Raises:
        ResourceError: the distances of a non-Cayley topology need too much work (:func:`distance_stats`).
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
        bisection_bandwidth_bytes_per_s=None if cut is None else cut * bw,
        moore_bound_diameter=topology_moore_bound(topo),
    )
