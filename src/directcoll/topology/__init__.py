"""Topologies: the directed-multigraph network model (:mod:`~directcoll.topology.model`), the families by kind
(:mod:`~directcoll.topology.families`), graph operators (:mod:`~directcoll.topology.operators`), spec strings
(:mod:`~directcoll.topology.spec`: grammar, family table, sizes), paths, routing and metrics."""

from directcoll.topology.families.circulants import ring
from directcoll.topology.families.grids import hammingmesh, hypercube, hyperx, mesh, torus
from directcoll.topology.families.regular import complete
from directcoll.topology.metrics import TopologySummary, describe
from directcoll.topology.model import DEFAULT_LINK_BANDWIDTH, DEFAULT_LINK_LATENCY, Topology
from directcoll.topology.paths import bfs_distances, hop_distance
from directcoll.topology.routing import link_loads, minimal_route
from directcoll.topology.spec import parse

__all__ = [
    "DEFAULT_LINK_BANDWIDTH",
    "DEFAULT_LINK_LATENCY",
    "Topology",
    "TopologySummary",
    "bfs_distances",
    "complete",
    "describe",
    "hammingmesh",
    "hop_distance",
    "hypercube",
    "hyperx",
    "link_loads",
    "mesh",
    "minimal_route",
    "parse",
    "ring",
    "torus",
]
