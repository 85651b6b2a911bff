"""The directed graph the all-to-all MCF LPs run on (Basu et al. Sec. 3.1; host-to-NIC augmentation Sec. 3.2.2,
Fig. 2): the topology's links with capacities relative to a reference bandwidth, plus host <-> NIC links when a
host bandwidth is given, and the translation symmetry of Cayley topologies that the symmetric methods use.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, partial

import numpy as np
from scipy.sparse.csgraph import connected_components

from directcoll.errors import TopologyError, UnsupportedShapeError
from directcoll.topology.model import Topology
from directcoll.topology.paths import adjacency


@dataclass(frozen=True, eq=False)
class FlowNetwork:
    """The directed graph the LP runs on: the topology's links, plus host links when a host bandwidth is given.

    Attributes:
        num_nodes: nodes of the network; hosts (the compute nodes, the only sources and sinks) are ``0..N-1``,
            then the topology's switch nodes, then NIC nodes (NIC-in ``V + u``, NIC-out ``V + N + u``; one NIC
            ``V + u`` with ``nic_forwarding``).
        num_compute: N.
        link_src, link_dst: int64 (E,) endpoints; links ``0..L-1`` are the topology's links in its order, then
            host -> NIC links of hosts 0..N-1, then NIC -> host links.
        capacity: float64 (E,), bandwidth / reference bandwidth.
        topology_link: int64 (E,), the topology link a network link models, -1 for host links.
        orbit: int64 (E,) link orbits under translation (Cayley topologies: the port, then host-out, host-in),
            or None.
        translate_node: Cayley networks: callable(nodes, by) moving node ids by the group element ``by``; else
            None.

    Raises:
        Nothing: a frozen record; :func:`flow_network` validates what it builds.

    Source: Basu et al. (HPDC'24) Sec. 3.1.1 (the network G = (V, E, cap) of the MCF LP) and Sec. 3.2.2, Fig. 2
    (the host-to-NIC augmentation).

    >>> from directcoll.topology import parse
    >>> net = flow_network(parse("ring:4"), host_bandwidth=1e9)
    >>> net.num_nodes, net.num_links, int(net.topology_link[-1])
    (12, 16, -1)
    """

    num_nodes: int
    num_compute: int
    link_src: np.ndarray
    link_dst: np.ndarray
    capacity: np.ndarray
    topology_link: np.ndarray
    orbit: np.ndarray | None = None
    translate_node: object = field(default=None, repr=False)

    @property
    def num_links(self) -> int:
        """E, the number of network links (topology links, then host links). Raises: Nothing. Source: Basu et al.
        (HPDC'24) Sec. 3.1.1 (the links E of G)."""
        return len(self.link_src)

    def translate_links(self, links, by) -> np.ndarray:
        """Cayley topologies: link ids moved by the group element ``by`` (a compute node id); broadcasts.

        Args:
            links: int link ids, any shape.
            by: int compute node ids (group elements), broadcast against ``links``.

        Returns:
            int64 array of the broadcast shape: the id of the link each link is moved to (same orbit).

        Raises:
            UnsupportedShapeError: a network without translations (not a Cayley topology).

        Source: docs/alltoall.md, "Methods" (the ``symmetric`` method: translations act freely on links).

        >>> from directcoll.topology import parse
        >>> net = flow_network(parse("ring:4"))
        >>> net.translate_links([0, 1], 1).tolist()
        [2, 3]
        """
        if self.translate_node is None:
            raise UnsupportedShapeError("links of a non-Cayley flow network cannot be translated")
        links = np.asarray(links, dtype=np.int64)
        src = self.translate_node(self.link_src[links], by)
        dst = self.translate_node(self.link_dst[links], by)
        return self._link_index(self.orbit[links], src, dst)

    @cached_property
    def _by_key(self):
        key = (self.orbit * self.num_nodes + self.link_src) * self.num_nodes + self.link_dst
        order = np.argsort(key, kind="stable")
        return key[order], order

    def _link_index(self, orbit, src, dst) -> np.ndarray:
        keys, order = self._by_key
        want = (orbit * self.num_nodes + src) * self.num_nodes + dst
        return order[np.searchsorted(keys, want)]


def flow_network(topology: Topology, *, host_bandwidth: float | None = None, nic_forwarding: bool = False,
                 reference_bandwidth: float | None = None) -> FlowNetwork:
    """The graph :func:`alltoall_mcf` optimizes over (see :class:`FlowNetwork`).

    Args:
        topology: the network; its compute nodes must be at least two.
        host_bandwidth: bytes/s of each host <-> NIC link (Basu Fig. 2), or None for no host bottleneck.
        nic_forwarding: with ``host_bandwidth``, let the NIC forward (one NIC node) instead of the host.
        reference_bandwidth: bytes/s of capacity 1; default the largest link bandwidth of the topology.

    Returns:
        :class:`FlowNetwork`: capacities float64 (E,) = bandwidth (bytes/s) / reference bandwidth (bytes/s),
        E = L topology links, plus 2N host links with ``host_bandwidth``.

    Raises:
        TopologyError: fewer than two compute nodes, or compute nodes that cannot all reach each other.
        UnsupportedShapeError: a non-positive host or reference bandwidth.

    Source: Basu et al. (HPDC'24) Sec. 3.1.1 (G = (V, E, cap)) and Sec. 3.2.2, Fig. 2 (host-to-NIC bottleneck:
    "forces data to flow through the host even when the node is not the destination"); the NIC-forwarding form
    is docs/alltoall.md, "Host-to-NIC bottleneck".

    >>> from directcoll.topology import parse
    >>> net = flow_network(parse("torus:3x3x3"))
    >>> net.num_nodes, net.num_links, float(net.capacity.max())
    (27, 162, 1.0)
    """
    n, v, num_links = topology.num_compute, topology.num_nodes, topology.num_links
    if n < 2:
        raise TopologyError(f"{topology.spec}: all-to-all needs at least 2 compute nodes, got {n}")
    ref = float(topology.link_bandwidth.max()) if reference_bandwidth is None else float(reference_bandwidth)
    if not ref > 0:
        raise UnsupportedShapeError(f"reference bandwidth must be > 0 bytes/s, got {reference_bandwidth!r}")
    cap = topology.link_bandwidth / ref
    src, dst = topology.link_src.astype(np.int64), topology.link_dst.astype(np.int64)
    origin = np.arange(num_links, dtype=np.int64)
    k = None if topology.port_offsets is None else len(topology.port_offsets)
    cayley = k is not None and v == n
    orbit = origin % k if cayley else None
    num_nodes = v
    if host_bandwidth is not None:
        if not host_bandwidth > 0:
            raise UnsupportedShapeError(f"host bandwidth must be > 0 bytes/s, got {host_bandwidth!r}")
        hosts = np.arange(n, dtype=np.int64)
        nic_in = v + hosts
        nic_out = nic_in if nic_forwarding else v + n + hosts
        num_nodes = v + (n if nic_forwarding else 2 * n)
        src = np.where(src < n, nic_out[np.minimum(src, n - 1)], src)
        dst = np.where(dst < n, nic_in[np.minimum(dst, n - 1)], dst)
        src = np.r_[src, hosts, nic_in]
        dst = np.r_[dst, nic_out, hosts]
        cap = np.r_[cap, np.full(2 * n, host_bandwidth / ref)]
        origin = np.r_[origin, np.full(2 * n, -1, dtype=np.int64)]
        if cayley:
            orbit = np.r_[orbit, np.full(n, k), np.full(n, k + 1)]
    translate = partial(_translate_node, topology) if cayley else None
    net = FlowNetwork(num_nodes, n, src, dst, cap.astype(float), origin, orbit, translate)
    _check_connected(net, topology.spec)
    return net


def _translate_node(topology: Topology, nodes, by) -> np.ndarray:
    """Nodes of a Cayley flow network moved by the group element ``by``: host u -> u + by, and its NICs with it."""
    n = topology.num_compute
    nodes, by = np.broadcast_arrays(np.asarray(nodes, dtype=np.int64), np.asarray(by, dtype=np.int64))
    host, kind = nodes % n, nodes // n  # kind 0: host, 1: NIC-in (the NIC with nic_forwarding), 2: NIC-out
    return topology.translate(host, by) + kind * n


def _check_connected(net: FlowNetwork, spec: str) -> None:
    _, labels = connected_components(adjacency(net), directed=True, connection="strong")
    if len(np.unique(labels[: net.num_compute])) != 1:
        raise TopologyError(f"{spec}: the compute nodes are not strongly connected, so some pair has no path and "
                            "the all-to-all throughput is 0; give a connected topology")


def is_translation_symmetric(net: FlowNetwork) -> bool:
    """Whether ``net`` has link orbits under the Cayley translations with one capacity per orbit, the condition
    for the ``symmetric`` method (one source's flow stands for all).

    Returns:
        a bool: False for non-Cayley networks (``orbit`` None).

    Raises:
        Nothing: compares the capacities within each orbit.

    Source: docs/alltoall.md, "Methods" (``symmetric``: capacities constant on each link orbit).

    >>> from directcoll.topology import parse
    >>> is_translation_symmetric(flow_network(parse("torus:3x3"))), is_translation_symmetric(
    ...     flow_network(parse("petersen")))
    (True, False)
    """
    if net.orbit is None:
        return False
    orbit_of = np.unique(net.orbit, return_inverse=True)[1]
    lo = np.full(orbit_of.max() + 1, np.inf)
    hi = np.full(orbit_of.max() + 1, -np.inf)
    np.minimum.at(lo, orbit_of, net.capacity)
    np.maximum.at(hi, orbit_of, net.capacity)
    return bool(np.all(lo == hi))

