"""Topologies: the directed-multigraph network model, generators, spec strings, paths, routing and metrics."""

from directcoll.topology.generators import complete, hammingmesh, hypercube, hyperx, mesh, ring, torus
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
