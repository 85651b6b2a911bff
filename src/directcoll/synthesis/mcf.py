"""All-to-all throughput as a maximum concurrent multi-commodity flow (Basu et al., Sec. 3.1 and 5.2; Zhao et al.,
App. A.5, LP 3).

Every ordered pair (s, t) of compute nodes is a commodity of equal demand F, routed as a fluid over the directed
links; F is maximized subject to link capacities. The capacity of a link is its bandwidth divided by a reference
bandwidth (by default the fastest link of the topology), so F is in units of one reference link: with unit link
capacities F is the fraction of a unit demand every pair routes per time unit (torus:3x3x3: F = 1/9). In bytes,
every pair moves ``F * reference_bandwidth`` bytes/s at once; a node sends ``(N - 1) F b`` bytes/s in all (Basu
Sec. 5.2's throughput upper bound) and an all-to-all of shards of m bytes takes at least ``m / (F b)`` seconds.

Methods (:func:`alltoall_mcf`):

* ``link``: the link-based LP, source-aggregated (one commodity per source, Basu eq. 6-9 = Zhao LP 3): for a
  single source the N - 1 destination flows of eq. 1-5 add up to one flow with a sink of F at every other
  compute node, and any such flow splits back into per-destination flows (flow decomposition), so both LPs
  have the same optimum. ``commodities="pair"`` solves eq. 1-5 literally (N(N - 1) commodities; small N only).
* ``decomposed``: the same source-aggregated master LP (eq. 6-9), then one child LP per source (eq. 10-14:
  capacities = the master's flow of that source, demand F to every destination, minimize total flow) that
  recovers per-(s, d) flows, solved as the equivalent single-commodity min-cost flow and split exactly by
  proportional decomposition (:func:`_child`); children run in a process pool. Where ``automorphism``
  applies, the master is that reduced LP and only one source per orbit gets a child.
* ``symmetric``: for Cayley topologies (``Topology.port_offsets``). The translations form a group acting
  regularly on nodes and freely on links, with capacities constant on each link orbit. Averaging any optimal
  flow over the N translations gives an optimal flow in which source s's flow is source 0's moved by s, so
  it suffices to solve for source 0's flow phi with one capacity row per link orbit (sum of phi over the orbit
  <= the orbit's capacity, which is the load every link of the orbit then carries) and conservation at every
  other node. Conversely every such phi translates to a feasible link-LP solution, so the optimum is exactly
  the link LP's. The LP shrinks by a factor of N. (F need not equal the capacity bound: torus:3x4 has F = 1/6
  and bound 1/5.)
* ``automorphism``: the same reduction for a group G of automorphisms that is not regular on the nodes
  (:func:`directcoll.topology.families.kautz_digraphs.automorphisms`: generalized Kautz graphs, |G| = 2 gcd(d + 1, N)).
  Averaging over G gives an optimal flow with x_{g s} = g x_s, so only one source per node orbit keeps
  variables, and the load of a link orbit O is ``sum_r |orbit(r)| / |O| * sum_{e in O} x_r(e)``, one capacity
  row per link orbit. Conversely the reduced solution, averaged over each representative's stabilizer and
  moved by G, is a feasible link-LP solution of the same F: the optimum is exactly the link LP's, from an LP
  |G| times smaller (genkautz:4:1000: 10x).
* ``auto`` (default): ``symmetric`` where it applies, else ``automorphism`` where a group of order > 1 is
  known, else ``link``.

Host-to-NIC bottleneck (Basu Sec. 3.2.2, Fig. 2, Sec. 5.2): with ``host_bandwidth`` every compute node u
becomes a host u, a NIC-in node and a NIC-out node; network links run NIC-out -> NIC-in and each node gets a
NIC-in -> host and a host -> NIC-out link of the host bandwidth, so forwarded traffic crosses the host twice
(host-based forwarding of ML fabrics). ``nic_forwarding=True`` merges the two NIC nodes instead, so the NIC
forwards and only injection and ejection cross the host link (HPC fabrics). On torus:3x3x3 with 6 x 25 Gb/s
links and a 100 Gb/s host, F = 2/27 relative to 25 Gb/s (Basu Sec. 5.2); 1/9 with NIC forwarding or no host.

Solvers (HiGHS through :mod:`directcoll.lp`; the LPs are built with scipy.sparse, never per variable). ``simplex`` (dual
simplex) for small LPs; ``ipm`` (IPX interior point with crossover); ``pdlp`` (first-order PDLP, then the point
is made complementary and polished to an optimal vertex by IPX crossover and dual simplex, falling back to
``ipm`` when PDLP or crossover fails): every path ends at an optimal basis, so F is exact to floating point
(the methods agree to 1e-12 relative in the tests). ``auto`` picks simplex up to
:data:`directcoll.lp.SIMPLEX_MAX_COLUMNS` columns, ipm up to :data:`directcoll.lp.IPM_MAX_COLUMNS`, pdlp above.
PDLP is always given the LP as a minimization: with
``ObjSense.kMaximize`` HiGHS 1.15's PDLP reports wrong duals (the dual residual is of the order of the costs and
the run ends "Unknown"), and IPX crossover then rejects the point.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from multiprocessing import get_context

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, shortest_path

from directcoll.errors import DirectcollError, SolverError, SolverLimitError, TopologyError, UnsupportedShapeError
from directcoll.lp import METHODS as LP_METHODS
from directcoll.lp import LinearProgram
from directcoll.lp import solve as lp_solve
from directcoll.resources import check_memory
from directcoll.topology.model import Topology

METHODS = ("auto", "link", "decomposed", "symmetric", "automorphism")
SOLVERS = LP_METHODS
COMMODITIES = ("source", "pair")
#: Peak bytes per column (commodity x link) of building a flow LP's index arrays and sparse matrix (measured
#: about 270 with tracemalloc), checked before the arrays are allocated.
BYTES_PER_FLOW_COLUMN = 320
#: Flow values at or below this (in units of the reference capacity) are dropped from the returned flows.
FLOW_EPS = 1e-12

# -- the flow network the LP runs on --------------------------------------------------------------------------
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
        return len(self.link_src)

    def translate_links(self, links, by) -> np.ndarray:
        """Cayley topologies: link ids moved by the group element ``by`` (a compute node id); broadcasts."""
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

    Raises:
        TopologyError: fewer than two compute nodes, or compute nodes that cannot all reach each other.
        UnsupportedShapeError: a non-positive host or reference bandwidth.
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


def adjacency(net: FlowNetwork) -> sp.csr_matrix:
    """The (num_nodes, num_nodes) link adjacency matrix of ``net``, 1 per link, for hop-count BFS."""
    ones = np.ones(net.num_links)
    return sp.csr_matrix((ones, (net.link_src, net.link_dst)), shape=(net.num_nodes, net.num_nodes))


def _check_connected(net: FlowNetwork, spec: str) -> None:
    _, labels = connected_components(adjacency(net), directed=True, connection="strong")
    if len(np.unique(labels[: net.num_compute])) != 1:
        raise TopologyError(f"{spec}: the compute nodes are not strongly connected, so some pair has no path and "
                            "the all-to-all throughput is 0; give a connected topology")


# -- results --------------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class McfResult:
    """The optimal concurrent flow F and flows that achieve it.

    Attributes:
        value: F, the flow every ordered pair of compute nodes routes at once, in units of the reference capacity.
        method: the method that ran (``link``, ``decomposed`` or ``symmetric``).
        solver: how HiGHS got the optimum (``simplex``, ``ipm``, ``pdlp+crossover``), per LP kind.
        spec: the topology spec.
        network: the :class:`FlowNetwork` the flows live on (topology links first, then host links).
        reference_bandwidth: bytes/s of capacity 1.
        host_bandwidth: bytes/s of the host links, or None.
        seconds: wall time of the stages (``build``, ``solve``, ``children``...).
        commodity_source, commodity_dest, commodity_link, commodity_value: per-(s, d) flows, columnar (K,)
            arrays, for ``decomposed`` and ``link`` with ``commodities="pair"``; None otherwise.

    Per-source flows (every method) are :attr:`flow_source`, :attr:`flow_link`, :attr:`flow_value`: the flow of
    all commodities leaving a source, on each network link, in capacity units.
    """

    value: float
    method: str
    solver: str
    spec: str
    network: FlowNetwork
    reference_bandwidth: float
    host_bandwidth: float | None = None
    seconds: dict = field(default_factory=dict)
    commodity_source: np.ndarray | None = None
    commodity_dest: np.ndarray | None = None
    commodity_link: np.ndarray | None = None
    commodity_value: np.ndarray | None = None
    _source_flows: tuple | None = field(default=None, repr=False)
    _base_flow: tuple | None = field(default=None, repr=False)

    @property
    def num_compute(self) -> int:
        return self.network.num_compute

    @cached_property
    def _flows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._source_flows is not None:
            return self._source_flows
        links, values = self._base_flow  # symmetric: source 0's flow, translated to every source
        n = self.num_compute
        moved = self.network.translate_links(links[None, :], np.arange(n)[:, None])
        return (np.repeat(np.arange(n, dtype=np.int64), len(links)), moved.ravel(), np.tile(values, n))

    @property
    def flow_source(self) -> np.ndarray:
        """int64 (K,): the source of each per-source flow entry."""
        return self._flows[0]

    @property
    def flow_link(self) -> np.ndarray:
        """int64 (K,): the network link of each entry."""
        return self._flows[1]

    @property
    def flow_value(self) -> np.ndarray:
        """float64 (K,): the flow, in capacity units (F is the amount each destination receives)."""
        return self._flows[2]

    def link_load(self) -> np.ndarray:
        """Total flow on every network link, float64 (E,); at most ``network.capacity``."""
        return np.bincount(self.flow_link, weights=self.flow_value, minlength=self.network.num_links)

    @property
    def pair_rate_bytes_per_s(self) -> float:
        """Bytes/s every ordered pair moves concurrently: F times the reference bandwidth."""
        return self.value * self.reference_bandwidth

    @property
    def throughput_bytes_per_s(self) -> float:
        """Basu Sec. 5.2's all-to-all throughput bound per node, (N - 1) F b, bytes/s."""
        return (self.num_compute - 1) * self.pair_rate_bytes_per_s

    def alltoall_time(self, shard_bytes) -> np.ndarray:
        """Least time, s, for an all-to-all in which every pair exchanges ``shard_bytes`` (fluid model)."""
        return np.asarray(shard_bytes, dtype=float) / self.pair_rate_bytes_per_s

    def to_dict(self) -> dict:
        return {"spec": self.spec, "alltoall_mcf": self.value, "method": self.method, "solver": self.solver,
                "ranks": self.num_compute, "reference_bandwidth_bytes_per_s": self.reference_bandwidth,
                "host_bandwidth_bytes_per_s": self.host_bandwidth,
                "pair_rate_bytes_per_s": self.pair_rate_bytes_per_s,
                "throughput_bytes_per_s": self.throughput_bytes_per_s, "seconds": dict(self.seconds)}


# -- LP construction ------------------------------------------------------------------------------------------
def _check_flow_lp(commodities: int, links: int, demands: int, on: str = "") -> None:
    """Refuse a flow LP whose construction would exceed the memory budget, before any array is allocated.

    Raises:
        ResourceError: over the budget (:func:`directcoll.resources.check_memory`).
    """
    where = f" on {on}" if on else ""
    check_memory(f"the multi-commodity flow LP{where} ({commodities:,} commodities x {links:,} links)",
                 BYTES_PER_FLOW_COLUMN * float(commodities) * float(links) + 40.0 * float(demands))


def _flow_lp(num_nodes: int, link_src, link_dst, capacity, comm_source, dem_comm, dem_node, *,
             fixed_demand: float | None = None) -> LinearProgram:
    """Multi-commodity flow LP over the links given (every commodity may use every one of them).

    Columns: ``x[c, j]`` at ``c * J + j`` (J = len(link_src)), then F unless ``fixed_demand``. Rows: J capacity
    rows ``sum_c x[c, j] <= capacity[j]`` (eq. 2 / 7 / 11), then for every commodity c and node u other than
    its source the conservation row ``out - in + F * demand(c, u) = 0`` at ``J + c * (V - 1) + u - (u > src)``
    (eq. 3-4 / 8 / 12-13, with equality so that the flows are conserved exactly). The demand pairs (c, u) are
    ``dem_comm``, ``dem_node``. The objective maximizes F (as min -F), or with ``fixed_demand`` minimizes the
    total flow (eq. 10). Flow into a commodity's own source is fixed to 0.
    """
    link_src, link_dst = np.asarray(link_src, dtype=np.int64), np.asarray(link_dst, dtype=np.int64)
    comm_source = np.asarray(comm_source, dtype=np.int64)
    nl, nc = len(link_src), len(comm_source)
    _check_flow_lp(nc, nl, len(dem_comm))
    ncol = nc * nl
    c_of = np.repeat(np.arange(nc, dtype=np.int64), nl)
    j_of = np.tile(np.arange(nl, dtype=np.int64), nc)
    col = np.arange(ncol, dtype=np.int64)
    s_of = comm_source[c_of]

    def cons_row(c, u, s):
        return nl + c * (num_nodes - 1) + u - (u > s)

    u, v = link_src[j_of], link_dst[j_of]
    out, into = u != s_of, v != s_of
    rows = [j_of, cons_row(c_of[out], u[out], s_of[out]), cons_row(c_of[into], v[into], s_of[into])]
    cols = [col, col[out], col[into]]
    vals = [np.ones(ncol), np.ones(out.sum()), -np.ones(into.sum())]
    dem_comm, dem_node = np.asarray(dem_comm, dtype=np.int64), np.asarray(dem_node, dtype=np.int64)
    dem_rows = cons_row(dem_comm, dem_node, comm_source[dem_comm])
    nrow = nl + nc * (num_nodes - 1)
    if fixed_demand is None:
        rows.append(dem_rows)
        cols.append(np.full(len(dem_rows), ncol))
        vals.append(np.ones(len(dem_rows)))
    total_cols = ncol + (fixed_demand is None)
    a = sp.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(nrow, total_cols))
    rhs = np.zeros(nrow - nl)
    if fixed_demand is not None:
        rhs[dem_rows - nl] = -fixed_demand
    col_upper = np.full(total_cols, np.inf)
    col_upper[:ncol][~into] = 0.0
    cost = np.ones(total_cols) if fixed_demand is not None else np.r_[np.zeros(ncol), -1.0]
    return LinearProgram(a, cost, np.zeros(total_cols), col_upper, np.r_[np.full(nl, -np.inf), rhs],
               np.r_[np.asarray(capacity, dtype=float), rhs])


def _source_lp(net: FlowNetwork) -> LinearProgram:
    """Source-aggregated LP (Basu eq. 6-9, Zhao LP 3): one commodity per compute node."""
    n = net.num_compute
    _check_flow_lp(n, net.num_links, n * (n - 1))
    s, t = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    off = s != t
    return _flow_lp(net.num_nodes, net.link_src, net.link_dst, net.capacity, np.arange(n), s[off], t[off])


def _pair_lp(net: FlowNetwork) -> tuple[LinearProgram, np.ndarray, np.ndarray]:
    """Per-pair LP (Basu eq. 1-5): commodities (s, d), s != d."""
    n = net.num_compute
    _check_flow_lp(n * (n - 1), net.num_links, n * (n - 1))
    s, t = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    off = s != t
    src, dst = s[off], t[off]
    comm = np.arange(len(src))
    return _flow_lp(net.num_nodes, net.link_src, net.link_dst, net.capacity, src, comm, dst), src, dst


def _symmetric_lp(net: FlowNetwork) -> LinearProgram:
    """Source 0's flow phi with one capacity row per link orbit (see the module docstring).

    Columns: phi on every network link, then F. Rows: one per orbit, ``sum_{e in orbit} phi_e <= cap(orbit)``,
    then conservation ``out - in + F [u is a compute node] = 0`` at every node u != 0.
    """
    e, v, n = net.num_links, net.num_nodes, net.num_compute
    orbits, orbit_of = np.unique(net.orbit, return_inverse=True)
    k = len(orbits)
    col = np.arange(e, dtype=np.int64)
    out, into = net.link_src != 0, net.link_dst != 0
    rows = np.r_[orbit_of, k - 1 + net.link_src[out], k - 1 + net.link_dst[into], k - 1 + np.arange(1, n)]
    cols = np.r_[col, col[out], col[into], np.full(n - 1, e)]
    vals = np.r_[np.ones(e), np.ones(out.sum()), -np.ones(into.sum()), np.ones(n - 1)]
    a = sp.csc_matrix((vals, (rows, cols)), shape=(k + v - 1, e + 1))
    orbit_cap = np.empty(k)
    orbit_cap[orbit_of] = net.capacity  # constant on each orbit (checked by the caller)
    col_upper = np.r_[np.where(into, np.inf, 0.0), np.inf]
    return LinearProgram(a, np.r_[np.zeros(e), -1.0], np.zeros(e + 1), col_upper,
                         np.r_[np.full(k, -np.inf), np.zeros(v - 1)], np.r_[orbit_cap, np.zeros(v - 1)])


@dataclass(frozen=True)
class _Orbits:
    """A node automorphism group acting on a flow network (see ``method="automorphism"``)."""

    nodes: np.ndarray  # (G, V) node permutations, identity first
    links: np.ndarray  # (G, E) the link each link is moved to
    reps: np.ndarray  # (R,) one compute node per node orbit
    orbit_size: np.ndarray  # (R,) |orbit(rep)|
    link_orbit: np.ndarray  # (E,) index of the link's orbit
    link_orbit_size: np.ndarray  # (K,) |link orbit|


def _orbits(net: FlowNetwork, topology: Topology) -> _Orbits | None:
    """The known automorphism group of ``topology`` on ``net``, or None (no group, switches, parallel links)."""
    from directcoll.topology.families.kautz_digraphs import automorphisms

    perms = automorphisms(topology)
    n, v = topology.num_compute, topology.num_nodes
    if perms is None or len(perms) < 2 or v != n:
        return None
    extra = net.num_nodes - v  # NIC nodes V + u (and V + N + u) move with their host
    nodes = np.concatenate([perms] + [perms + v + k * n for k in range(extra // n)], axis=1)
    key = net.link_src * net.num_nodes + net.link_dst
    order = np.argsort(key)
    if np.any(key[order][1:] == key[order][:-1]):
        return None
    moved = nodes[:, net.link_src] * net.num_nodes + nodes[:, net.link_dst]
    pos = np.minimum(np.searchsorted(key, moved, sorter=order), len(key) - 1)
    links = order[pos]
    if np.any(key[links] != moved) or np.any(net.capacity[links] != net.capacity):
        raise DirectcollError(f"{topology.spec}: a listed automorphism does not map the network onto itself")
    node_rep = nodes[:, :n].min(axis=0)
    reps = np.unique(node_rep)
    _, link_orbit, link_orbit_size = np.unique(links.min(axis=0), return_inverse=True, return_counts=True)
    return _Orbits(nodes, links, reps, np.bincount(node_rep, minlength=n)[reps], link_orbit, link_orbit_size)


def _automorphism_lp(net: FlowNetwork, orbits: _Orbits) -> LinearProgram:
    """Flows of the representative sources with one capacity row per link orbit (the source LP otherwise).

    Columns ``x[i, j]`` at ``i * E + j`` for representative i, then F; rows: K orbit capacity rows, then the
    conservation rows of :func:`_flow_lp`.
    """
    n, e = net.num_compute, net.num_links
    r = len(orbits.reps)
    t = np.tile(np.arange(n), r)
    s = np.repeat(orbits.reps, n)
    off = s != t
    lp = _flow_lp(net.num_nodes, net.link_src, net.link_dst, net.capacity, orbits.reps,
                  np.repeat(np.arange(r), n)[off], t[off])
    rep_of, link_of = np.divmod(np.arange(r * e), e)
    k = len(orbits.link_orbit_size)
    rows = orbits.link_orbit[link_of]
    cap_rows = sp.csc_matrix((orbits.orbit_size[rep_of] / orbits.link_orbit_size[rows], (rows, np.arange(r * e))),
                             shape=(k, r * e + 1))
    orbit_cap = np.zeros(k)
    orbit_cap[orbits.link_orbit] = net.capacity
    a = sp.vstack([cap_rows, lp.a[e:]], format="csc")
    return LinearProgram(a, lp.cost, lp.col_lower, lp.col_upper, np.r_[np.full(k, -np.inf), lp.row_lower[e:]],
                         np.r_[orbit_cap, lp.row_upper[e:]])


def _orbit_flows(orbits: _Orbits, x: np.ndarray, num_compute: int, num_links: int):
    """Every source's flow from the representatives': each averaged over its stabilizer, then moved by G."""
    r, e = len(orbits.reps), num_links
    x = x[: r * e].reshape(r, e)
    flows = np.zeros((num_compute, e))
    for g_nodes, g_links in zip(orbits.nodes, orbits.links, strict=True):
        # g x_r puts x_r(l) on link g(l); summed over G, source s = g(r) gets |Stab(r)| copies
        flows[g_nodes[orbits.reps][:, None], g_links[None, :]] += x
    rep_index = np.searchsorted(orbits.reps, orbits.nodes[:, :num_compute].min(axis=0))  # reps are sorted
    flows /= (len(orbits.nodes) // orbits.orbit_size)[rep_index][:, None]
    src, link = np.nonzero(flows > FLOW_EPS)
    return src.astype(np.int64), link.astype(np.int64), flows[src, link]


def _move_children(orbits: _Orbits, src, dst, link, val):
    """Per-(s, d) flows of every source from its representative's: x_{g r, g d} = g x_{r, d} for one g per
    source (the representative's flow is stabilizer-averaged, so every such g gives the same flow)."""
    first = {}
    for gi, g in enumerate(orbits.nodes):
        for r in orbits.reps:
            first.setdefault(int(g[r]), (gi, int(r)))
    out = [[], [], [], []]
    rep_rows = {int(r): np.flatnonzero(src == r) for r in orbits.reps}
    for s_new, (gi, r) in sorted(first.items()):
        rows = rep_rows[r]
        g_nodes, g_links = orbits.nodes[gi], orbits.links[gi]
        out[0].append(np.full(len(rows), s_new, dtype=np.int64))
        out[1].append(g_nodes[dst[rows]])
        out[2].append(g_links[link[rows]])
        out[3].append(val[rows])
    return tuple(np.concatenate(c) for c in out)


# -- HiGHS ----------------------------------------------------------------------------------------------------
#: Tighter than HiGHS's 1e-7 defaults: F and the flows are O(1) after scaling, and a basic value of -1e-8
#: that simplex accepts as feasible would otherwise break the conservation of the returned flows.
HIGHS_DEFAULTS = {"primal_feasibility_tolerance": 1e-9, "dual_feasibility_tolerance": 1e-9}


def solve_lp(lp: LinearProgram, solver: str, options: dict | None) -> tuple[np.ndarray, float, str]:
    """Solve an MCF LP to an optimal basis through :func:`directcoll.lp.solve` with the MCF tolerances;
    returns (x, objective, how).

    Raises:
        SolverError: the solve failed, or the model is infeasible or unbounded.
        SolverLimitError: a time or iteration limit in ``options`` stopped it.
    """
    sol = lp_solve(lp, solver, {**HIGHS_DEFAULTS, **(options or {})})
    return sol.x, sol.objective, sol.method


# -- methods --------------------------------------------------------------------------------------------------
def is_translation_symmetric(net: FlowNetwork) -> bool:
    """Whether ``net`` has link orbits under the Cayley translations with one capacity per orbit, the condition
    for the ``symmetric`` method (one source's flow stands for all)."""
    if net.orbit is None:
        return False
    orbit_of = np.unique(net.orbit, return_inverse=True)[1]
    lo = np.full(orbit_of.max() + 1, np.inf)
    hi = np.full(orbit_of.max() + 1, -np.inf)
    np.minimum.at(lo, orbit_of, net.capacity)
    np.maximum.at(hi, orbit_of, net.capacity)
    return bool(np.all(lo == hi))


def _sparse_flows(x: np.ndarray, num_links: int, num_comm: int):
    x = x[: num_links * num_comm].reshape(num_comm, num_links)
    comm, link = np.nonzero(x > FLOW_EPS)
    return comm.astype(np.int64), link.astype(np.int64), x[comm, link]


def alltoall_mcf(topology, *, method: str = "auto", host_bandwidth=None, nic_forwarding: bool = False,
                 reference_bandwidth=None, commodities: str = "source", solver: str = "auto",
                 workers: int | None = None, highs_options: dict | None = None) -> McfResult:
    """Maximum concurrent all-to-all flow F and the flows achieving it (Basu et al. Sec. 3.1, eq. 1-14).

    Args:
        topology: a :class:`Topology` or a spec string (``torus:3x3x3``).
        method: ``auto`` (``symmetric`` on Cayley topologies whose capacities are translation-invariant, else
            ``link``), ``link`` (source-aggregated LP, eq. 6-9), ``decomposed`` (master eq. 6-9 + child LPs
            eq. 10-14 giving per-(s, d) flows) or ``symmetric`` (single-source LP on the translation orbits).
        host_bandwidth: bytes/s (a number or a string like ``100Gbps``) of each host <-> NIC link, modelling
            the host-to-NIC bottleneck (Basu Fig. 2, Sec. 5.2); None for none.
        nic_forwarding: with ``host_bandwidth``, the NIC forwards transit traffic instead of the host.
        reference_bandwidth: bytes/s (or a string) of capacity 1 in which F is expressed; default the
            largest link bandwidth of the topology (host links excluded).
        commodities: ``link`` only: ``source`` (default) or ``pair`` to solve eq. 1-5 with N(N - 1)
            commodities (returns per-pair flows; O(N^2 E) variables, small topologies only).
        solver: ``auto``, ``simplex``, ``ipm`` or ``pdlp`` (see the module docstring); every one ends at an
            optimal basis.
        workers: processes for the child LPs of ``decomposed`` (default ``os.cpu_count()``; 1 runs inline).
        highs_options: extra HiGHS options (name -> value) for every solve.

    Returns:
        :class:`McfResult`: F (``value``) in units of the reference capacity, per-source flows
        (``flow_source``, ``flow_link``, ``flow_value``; shape (K,) each) and, for ``decomposed`` or
        ``commodities="pair"``, per-(s, d) flows (``commodity_*``).

    Raises:
        TopologyError: fewer than 2 compute nodes, or compute nodes that cannot all reach each other.
        UnsupportedShapeError: an unknown method, solver, commodities or HiGHS option; ``symmetric`` on a
            topology that is not a Cayley graph with translation-invariant capacities; ``pair`` with another
            method; ``workers < 1``; a non-positive bandwidth.
        SpecError: an unknown topology spec.
        SolverError: HiGHS does not reach an optimal solution (SolverLimitError: a limit in ``highs_options``).
        ResourceError: the LP (commodities x links columns) would need more memory than the budget.
        DirectcollError: a bandwidth string cannot be read.
    """
    from directcoll.topology.spec import parse
    from directcoll.units import parse_bandwidth

    if method not in METHODS:
        raise UnsupportedShapeError(f"unknown all-to-all MCF method {method!r}; accepted: {', '.join(METHODS)}")
    if solver not in SOLVERS:
        raise UnsupportedShapeError(f"unknown LP solver {solver!r}; accepted: {', '.join(SOLVERS)}")
    if commodities not in COMMODITIES:
        raise UnsupportedShapeError(f"unknown commodities {commodities!r}; accepted: {', '.join(COMMODITIES)}")
    topology = parse(topology)
    host = None if host_bandwidth is None else parse_bandwidth(host_bandwidth)
    ref = None if reference_bandwidth is None else parse_bandwidth(reference_bandwidth)
    t0 = time.perf_counter()
    net = flow_network(topology, host_bandwidth=host, nic_forwarding=nic_forwarding, reference_bandwidth=ref)
    ref = float(topology.link_bandwidth.max()) if ref is None else ref
    symmetric_ok = is_translation_symmetric(net)
    orbits = None if symmetric_ok or method not in ("auto", "automorphism") else _orbits(net, topology)
    if method == "auto":
        method = "link" if commodities != "source" else "symmetric" if symmetric_ok else \
            "automorphism" if orbits is not None else "link"
    if method == "automorphism" and orbits is None:
        raise UnsupportedShapeError(f"{topology.spec}: method 'automorphism' needs a known automorphism group "
                                    "(generalized Kautz and Kautz graphs, no parallel links; Cayley graphs use "
                                    "'symmetric'); use 'link' or 'decomposed'")
    if method == "symmetric" and not symmetric_ok:
        raise UnsupportedShapeError(f"{topology.spec}: method 'symmetric' needs a Cayley topology (port_offsets, no "
                                    "switches) whose link bandwidths are the same on every port's links; use "
                                    "'link' or 'decomposed'")
    if commodities == "pair" and method != "link":
        raise UnsupportedShapeError(f"commodities='pair' is the per-pair link LP (eq. 1-5); it needs method='link', "
                                    f"not {method!r}")
    common = dict(method=method, spec=topology.spec, network=net, reference_bandwidth=ref, host_bandwidth=host)
    n, e = net.num_compute, net.num_links
    if method == "link":  # sized before anything grows with commodities x links
        _check_flow_lp(n * (n - 1) if commodities == "pair" else n, e, n * (n - 1), on=topology.spec)
    # Solve with capacities divided by an upper bound on F (every pair crosses at least one link), so that F
    # and the flows are O(1) against HiGHS's absolute tolerances; multiply back afterwards.
    scale = float(net.capacity.sum()) / (n * (n - 1))
    lp_net = replace(net, capacity=net.capacity / scale)
    seconds = {}

    def solve(lp, stage="solve"):
        lp.name = f"all-to-all MCF {'LP' if stage == 'solve' else stage + ' LP'} ({method}) on {topology.spec}"
        seconds["build"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        x, obj, how = solve_lp(lp, solver, highs_options)
        seconds[stage] = time.perf_counter() - t1
        return x * scale, -obj * scale, how

    if method == "symmetric":
        x, value, how = solve(_symmetric_lp(lp_net))
        phi = x[:e]
        keep = np.flatnonzero(phi > FLOW_EPS)
        return McfResult(value=value, solver=how, seconds=seconds, _base_flow=(keep, phi[keep]), **common)

    if method == "automorphism":
        x, value, how = solve(_automorphism_lp(lp_net, orbits))
        flows = _orbit_flows(orbits, x, n, e)
        return McfResult(value=value, solver=how, seconds=seconds, _source_flows=flows, **common)

    if commodities == "pair":
        lp, psrc, pdst = _pair_lp(lp_net)
        x, value, how = solve(lp)
        comm, link, val = _sparse_flows(x, e, len(psrc))
        s_of = psrc[comm]
        agg = np.bincount(s_of * e + link, weights=val, minlength=n * e)
        ks = np.flatnonzero(agg > FLOW_EPS)
        return McfResult(value=value, solver=how, seconds=seconds, commodity_source=s_of, commodity_dest=pdst[comm],
                         commodity_link=link, commodity_value=val,
                         _source_flows=(ks // e, ks % e, agg[ks]), **common)

    orbits = _orbits(net, topology) if method == "decomposed" else None
    if orbits is not None:  # the master reduced by the automorphisms, children for one source per orbit
        x, value, how = solve(_automorphism_lp(lp_net, orbits), "master")
        flows = _orbit_flows(orbits, x, n, e)
    else:
        x, value, how = solve(_source_lp(lp_net), "solve" if method == "link" else "master")
        flows = _sparse_flows(x, e, n)
    if method == "link":
        return McfResult(value=value, solver=how, seconds=seconds, _source_flows=flows, **common)

    t2 = time.perf_counter()
    sources = None if orbits is None else orbits.reps
    csrc, cdst, clink, cval, hows = solve_children(net, flows, value, solver, highs_options, workers, sources)
    if orbits is not None:
        csrc, cdst, clink, cval = _move_children(orbits, csrc, cdst, clink, cval)
    seconds["children"] = time.perf_counter() - t2
    how = f"master {how}, children {'/'.join(sorted(set(hows)))}"
    return McfResult(value=value, solver=how, seconds=seconds, commodity_source=csrc, commodity_dest=cdst,
                     commodity_link=clink, commodity_value=cval, _source_flows=flows, **common)


# -- child LPs (Basu eq. 10-14) -------------------------------------------------------------------------------
_CHILD_STATE: dict = {}
#: Relative capacity slack of a child LP that is infeasible with the master's flow as it is (see :func:`_child`).
CHILD_CAPACITY_SLACK = 1e-7


def _child_init(num_nodes, num_compute, link_src, link_dst, solver, options) -> None:
    _CHILD_STATE.update(num_nodes=num_nodes, num_compute=num_compute, link_src=link_src, link_dst=link_dst,
                        solver=solver, options=options)


def _child(task):
    """Per-destination flows of one source: min total flow within the master's flow (eq. 10-14).

    All of a child's commodities leave the same source, so eq. 10-14 is a single-commodity min-cost flow in
    disguise: the per-destination flows add up to one flow g from s that sinks F at every destination, within
    the master's flow, at the same total; conversely any such g splits back into per-destination flows of that
    total. So the child solves for g (E_s columns instead of (N - 1) E_s; unit costs make the optimal g
    acyclic) and splits it exactly by proportional flow decomposition on its DAG: with M[u, v] = g(u, v) /
    in(v), destination d's flow arriving at v is a_d(v) = [(I - M)^-1]_{v, d}, and f_d(u, v) = a_d(v) g(u, v) /
    in(v) conserves, delivers exactly F to d and sums over d to g (the tests check all three).

    Scaled by 1/F (demand 1 per destination, capacities f'/F) so HiGHS's absolute tolerances are relative to F.
    The master's flow conserves only to the LP tolerance, so a child can come out infeasible by ~1e-9 (seen on
    genkautz:4:200); it is then solved again with capacities :data:`CHILD_CAPACITY_SLACK` larger.
    """
    from scipy.sparse.linalg import splu

    s, links, flow, value = task
    st = _CHILD_STATE
    n, v = st["num_compute"], st["num_nodes"]
    dests = np.r_[np.arange(s), np.arange(s + 1, n)]
    cap = flow / value
    src, dst = st["link_src"][links], st["link_dst"][links]
    for slack in (0.0, CHILD_CAPACITY_SLACK):
        lp = _flow_lp(v, src, dst, cap * (1 + slack), np.array([s]), np.zeros(len(dests), dtype=np.int64), dests,
                      fixed_demand=1.0)
        lp.name = f"all-to-all MCF child LP of source {s}"
        try:
            g, _, how = solve_lp(lp, st["solver"], st["options"])
            break
        except SolverLimitError:
            raise
        except SolverError:
            if slack:
                raise
    how += f" (capacities +{slack:g})" if slack else ""
    g = g[: len(links)]
    used = g > FLOW_EPS
    g, links, src, dst = g[used], links[used], src[used], dst[used]
    inflow = np.bincount(dst, weights=g, minlength=v)
    share = g / inflow[dst]
    m = sp.csc_matrix((share, (src, dst)), shape=(v, v))
    rhs = np.zeros((v, len(dests)))
    rhs[dests, np.arange(len(dests))] = 1.0
    arrive = splu((sp.identity(v, format="csc") - m).tocsc()).solve(rhs)  # a_d(u), one column per destination
    per_dest = arrive[dst] * share[:, None]  # (E_s, N - 1)
    j, c = np.nonzero(per_dest > FLOW_EPS)
    return s, dests[c], links[j], per_dest[j, c] * value, how


def solve_children(net: FlowNetwork, flows, value: float, solver: str, options, workers, sources=None):
    """Basu eq. 10-14: split every source's aggregated flow ``flows = (source, link, value)`` into per-destination
    flows of ``value`` each, one child LP per source (of ``sources``, default all), in a process pool of
    ``workers`` (None: all cores)."""
    src, link, val = flows
    order = np.argsort(src, kind="stable")
    bounds = np.searchsorted(src[order], np.arange(net.num_compute + 1))
    tasks = [(s, link[order[bounds[s]: bounds[s + 1]]], val[order[bounds[s]: bounds[s + 1]]], value)
             for s in (range(net.num_compute) if sources is None else sources)]
    init = (net.num_nodes, net.num_compute, net.link_src, net.link_dst, solver, options)
    workers = (os.cpu_count() or 1) if workers is None else int(workers)
    if workers < 1:
        raise UnsupportedShapeError(f"workers must be >= 1, got {workers}")
    if workers == 1:
        saved = dict(_CHILD_STATE)
        try:
            _child_init(*init)
            results = [_child(t) for t in tasks]
        finally:
            _CHILD_STATE.clear()
            _CHILD_STATE.update(saved)
    else:
        chunk = max(1, len(tasks) // (4 * workers))
        with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"), initializer=_child_init,
                                 initargs=init) as pool:
            results = list(pool.map(_child, tasks, chunksize=chunk))
    return (np.concatenate([np.full(len(r[1]), r[0], dtype=np.int64) for r in results]),
            np.concatenate([r[1] for r in results]).astype(np.int64),
            np.concatenate([r[2] for r in results]).astype(np.int64),
            np.concatenate([r[3] for r in results]), [r[4] for r in results])


# -- bounds ---------------------------------------------------------------------------------------------------
def capacity_bound(topology, *, host_bandwidth=None, nic_forwarding: bool = False, reference_bandwidth=None) -> float:
    """Upper bound on F: total capacity over the capacity one unit of every pair needs at least.

    A pair at hop distance d(s, t) puts at least d(s, t) units of flow on network links per unit delivered, so
    ``F <= sum(capacity) / sum_{s != t} d(s, t)``; with unit capacities this is |E| / sum of distances. With a
    host bandwidth each network hop also crosses a host link each way (one crossing per pair with
    ``nic_forwarding``), giving a second bound; the smaller one is returned. Cayley topologies need one BFS,
    others one per compute node.

    Raises:
        as :func:`flow_network`.
    """
    from directcoll.topology.spec import parse
    from directcoll.units import parse_bandwidth

    topology = parse(topology)
    ref = None if reference_bandwidth is None else parse_bandwidth(reference_bandwidth)
    host = None if host_bandwidth is None else parse_bandwidth(host_bandwidth)
    net = flow_network(topology, reference_bandwidth=ref)
    total = _total_distance(topology)
    bound = float(net.capacity.sum()) / total
    if host is not None:
        n = topology.num_compute
        host_cap = host / (float(topology.link_bandwidth.max()) if ref is None else ref)
        # host forwarding: a pair d hops apart crosses d host -> NIC links; through switches, at least one
        crossings = total if not nic_forwarding and topology.num_nodes == n else n * (n - 1)
        bound = min(bound, n * host_cap / crossings)
    return bound


def _total_distance(topology: Topology) -> float:
    n = topology.num_compute
    adjacency = topology.adjacency
    if topology.is_cayley and topology.num_nodes == n:
        return float(shortest_path(adjacency, unweighted=True, indices=[0])[0, :n].sum() * n)
    total = 0.0
    for start in range(0, n, 512):
        total += float(shortest_path(adjacency, unweighted=True, indices=np.arange(start, min(n, start + 512)))[:, :n]
                       .sum())
    return total


def theorem1_bound(num_nodes: int, degree: int) -> float:
    """Basu et al. Theorem 1, eq. (25): F <= d / sum_u D(r, u) over the best out-tree of N nodes and out-degree
    d (levels of 1, d, d^2, ... nodes); an upper bound on F for any d-regular digraph with unit capacities.

    Raises:
        UnsupportedShapeError: N < 2 or d < 1.
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
