"""The network model (docs/architecture.md, "Topology"): a directed multigraph of compute nodes, switches and links.

Compute nodes are ``0..N-1`` (rank r runs on node r); switch nodes, where a topology has them, come after
them. A bidirectional cable is two directed links; parallel links are allowed. Grid topologies keep their
``shape``: compute node r has coordinates ``numpy.unravel_index(r, shape)`` (row-major, the last dimension
varies fastest). Topologies that are Cayley graphs of the abelian group Z_{d0} x ... x Z_{d(D-1)} (tori,
rings, hypercubes, HyperX) also keep their generator offsets, which makes routing translation-invariant.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from directcoll.errors import TopologyError
from directcoll.units import MAX_BANDWIDTH, MAX_TIME, MIN_BANDWIDTH

#: Link bandwidth and latency used when a generator is not told otherwise: the Swing paper's SST setup
#: (Sec. 5: 400 Gb/s links, 100 ns latency), in bytes/s and seconds.
DEFAULT_LINK_BANDWIDTH = 400e9 / 8
DEFAULT_LINK_LATENCY = 100e-9


@dataclass(frozen=True, eq=False)
class Topology:
    """A directed multigraph with per-link bandwidth (bytes/s) and latency (s).

    Attributes:
        spec: the spec string that rebuilds this topology (see :func:`directcoll.topology.parse`).
        kind: family name (``torus``, ``mesh``, ``ring``, ``hypercube``, ``hyperx``, ``hammingmesh``...).
        num_compute: N, the number of compute nodes (ranks), numbered ``0..N-1``.
        num_nodes: N plus the number of switch nodes.
        link_src, link_dst: int64 arrays of shape (L,), the endpoints of each directed link.
        link_bandwidth: float64 (L,), bytes per second.
        link_latency: float64 (L,), seconds.
        shape: the logical grid of the compute nodes, or None for topologies without one.
        wraps: whether grid coordinates wrap around (tori, rings, HyperX, hypercubes).
        port_offsets: int64 (K, D) generator offsets when the topology is a Cayley graph of
            Z_shape; then link ``u*K + k`` goes from u to ``u + port_offsets[k]`` (coordinate-wise, mod shape).

    Raises:
        TopologyError: arrays of inconsistent length, a link endpoint out of range, a non-positive
            bandwidth, or compute nodes that cannot all reach each other.

    Source: Zhao et al. (NSDI'25) Sec. 3 (a direct-connect topology G of N nodes, degree d, node bandwidth B);
    Swing (De Sensi et al., NSDI'24) Sec. 2.2 (D-dimensional tori, 2D ports per node); docs/topology.md.

    >>> import numpy as np
    >>> t = Topology("pair", "pair", 2, 2, np.array([0, 1]), np.array([1, 0]), np.ones(2), np.zeros(2))
    >>> t.num_links, t.reverse_link.tolist()
    (2, [1, 0])
    """

    spec: str
    kind: str
    num_compute: int
    num_nodes: int
    link_src: np.ndarray
    link_dst: np.ndarray
    link_bandwidth: np.ndarray
    link_latency: np.ndarray
    shape: tuple[int, ...] | None = None
    wraps: bool = False
    port_offsets: np.ndarray | None = None
    params: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        n_links = len(self.link_src)
        for name in ("link_dst", "link_bandwidth", "link_latency"):
            if len(getattr(self, name)) != n_links:
                raise TopologyError(f"{self.spec}: {name} has {len(getattr(self, name))} entries, "
                                    f"link_src has {n_links}")
        if self.num_compute < 1 or self.num_nodes < self.num_compute:
            raise TopologyError(f"{self.spec}: need 1 <= num_compute <= num_nodes, got "
                                f"{self.num_compute} and {self.num_nodes}")
        if n_links and (min(self.link_src.min(), self.link_dst.min()) < 0
                        or max(self.link_src.max(), self.link_dst.max()) >= self.num_nodes):
            raise TopologyError(f"{self.spec}: a link endpoint is outside 0..{self.num_nodes - 1}")
        bw, lat = self.link_bandwidth, self.link_latency  # NaN fails every comparison
        if n_links and not (np.all((bw >= MIN_BANDWIDTH) & (bw <= MAX_BANDWIDTH))
                            and np.all((lat >= 0) & (lat <= MAX_TIME))):
            raise TopologyError(f"{self.spec}: link bandwidths must lie in [{MIN_BANDWIDTH:g}, {MAX_BANDWIDTH:g}] "
                                f"bytes/s (1 bit/s to 1 Eb/s) and latencies in [0, {MAX_TIME:g}] s")
        if self.shape is not None and int(np.prod(self.shape)) != self.num_compute:
            raise TopologyError(f"{self.spec}: shape {self.shape} does not hold {self.num_compute} nodes")
        if self.num_compute > 1:
            _, labels = connected_components(self.adjacency, directed=True, connection="strong")
            if len(np.unique(labels[: self.num_compute])) != 1:
                raise TopologyError(f"{self.spec}: the compute nodes are not strongly connected; "
                                    "every rank must be able to reach every other rank")

    def __repr__(self) -> str:
        switches = self.num_nodes - self.num_compute
        return (f"Topology({self.spec}, N={self.num_compute}{f', switches={switches}' if switches else ''}, "
                f"links={self.num_links})")

    # -- sizes ---------------------------------------------------------------------------------------
    @property
    def num_links(self) -> int:
        """L, the number of directed links. Raises: Nothing. Source: docs/topology.md (the network model)."""
        return len(self.link_src)

    @property
    def ndim(self) -> int:
        """D, the number of grid dimensions (0 for topologies without a shape).

        Raises:
            Nothing: reads ``shape``.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 2.2 (D, the number of torus dimensions).
        """
        return 0 if self.shape is None else len(self.shape)

    @property
    def grid_is_links(self) -> bool:
        """Whether the grid (``shape``, coordinates, dimensions) describes the links: False for a placed job, whose
        grid is its logical network's and whose links are the physical network's.

        Raises:
            Nothing: reads ``kind``.

        Source: docs/topology.md, "Placement".

        >>> from directcoll.topology import parse
        >>> parse("torus:4x4").grid_is_links, parse("placed(torus:16,mesh:2x2x2x2,order=gray)").grid_is_links
        (True, False)
        """
        return self.kind != "placed"

    @property
    def job_kind(self) -> str:
        """The kind of network the ranks are numbered for: a placed job's logical network's kind, else ``kind``.

        Raises:
            Nothing: reads ``kind`` and ``params``.

        Source: docs/topology.md, "Placement".

        >>> from directcoll.topology import parse
        >>> parse("placed(torus:16,mesh:2x2x2x2,order=gray)").job_kind, parse("ring:4").job_kind
        ('torus', 'ring')
        """
        return self.kind if self.grid_is_links else self.params.get("logical_kind", self.kind)

    @property
    def is_cayley(self) -> bool:
        """True when routing is translation-invariant (links laid out as ``node*K + port``).

        Raises:
            Nothing: reads ``port_offsets``.

        Source: docs/topology.md, "Metrics and routing" (Cayley topologies need one BFS); Zhao et al. (NSDI'25) Def. 18
        (circulants, the Cayley graphs of Z_n).
        """
        return self.port_offsets is not None

    @cached_property
    def out_degree(self) -> np.ndarray:
        """Number of outgoing links of every node, shape (num_nodes,).

        int64 array, counting parallel links.

        Raises:
            Nothing: counts the link array.

        Source: Zhao et al. (NSDI'25) Sec. 3 (the degree d of a node).
        """
        return np.bincount(self.link_src, minlength=self.num_nodes)

    @cached_property
    def node_bandwidth(self) -> float:
        """B: the largest total outgoing bandwidth of a compute node, bytes/s (Zhao et al. Sec. 3.2).

        Raises:
            Nothing: sums the link arrays (validated when built).
        """
        out = np.bincount(self.link_src, weights=self.link_bandwidth, minlength=self.num_nodes)
        return float(out[: self.num_compute].max())

    @cached_property
    def adjacency(self) -> sp.csr_matrix:
        """Sparse (num_nodes x num_nodes) matrix of link counts.

        Raises:
            Nothing: the link arrays were validated when built.

        Source: docs/topology.md (a directed multigraph; parallel links counted).
        """
        ones = np.ones(self.num_links, dtype=np.int64)
        return sp.csr_matrix((ones, (self.link_src, self.link_dst)), shape=(self.num_nodes, self.num_nodes))

    @cached_property
    def reverse_link(self) -> np.ndarray:
        """For every link (u, v), the index of a link (v, u), or -1 when there is none; shape (L,).

        int64 array.

        Raises:
            Nothing: sorting and searching the link arrays.

        Source: Zhao et al. (NSDI'25) App. A.6 (bidirectional topologies: every link has a reverse link).
        """
        key = self.link_src * self.num_nodes + self.link_dst
        rkey = self.link_dst * self.num_nodes + self.link_src
        order = np.argsort(key, kind="stable")
        pos = np.searchsorted(key[order], rkey)
        pos = np.minimum(pos, self.num_links - 1)
        found = key[order][pos] == rkey
        return np.where(found, order[pos], -1)

    # -- coordinates ---------------------------------------------------------------------------------
    def _require_shape(self) -> tuple[int, ...]:
        if self.shape is None:
            raise TopologyError(f"{self.spec}: this {self.kind} topology has no grid coordinates")
        return self.shape

    def coords(self, nodes) -> np.ndarray:
        """Grid coordinates of compute nodes: array of shape (len(nodes), D), int64.

        Raises:
            TopologyError: the topology has no grid shape, or a node outside 0..N-1.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 2.2 (ranks mapped to torus nodes linearly; row-major coordinates).

        >>> from directcoll.topology.families import torus
        >>> torus((2, 3)).coords([4]).tolist()
        [[1, 1]]
        """
        shape = self._require_shape()
        nodes = np.asarray(nodes, dtype=np.int64)
        if nodes.size and (nodes.min() < 0 or nodes.max() >= self.num_compute):
            raise TopologyError(f"{self.spec}: compute node out of range 0..{self.num_compute - 1}")
        # unravel a flat copy: numpy 2.4's unravel_index returns wrong coordinates past the 8,192nd element of
        # a multi-dimensional input (an iterator-buffer bug; torus:24x23x24's BFB broke on it)
        flat = np.unravel_index(nodes.ravel(), shape)
        return np.stack(flat, axis=-1).astype(np.int64).reshape(*nodes.shape, len(shape))

    def node_at(self, coords) -> np.ndarray:
        """Compute node ids of grid coordinates (..., D); coordinates wrap modulo the shape.

        int64 array of the coordinates' shape without the last axis.

        Raises:
            TopologyError: the topology has no grid shape.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 2.2 (row-major rank mapping, wrap-around coordinates).

        >>> from directcoll.topology.families import torus
        >>> torus((2, 3)).node_at([[1, 4], [-1, 0]]).tolist()
        [4, 3]
        """
        shape = self._require_shape()
        coords = np.asarray(coords, dtype=np.int64) % np.asarray(shape)
        return np.ravel_multi_index(tuple(np.moveaxis(coords, -1, 0)), shape).astype(np.int64)

    def translate(self, nodes, by) -> np.ndarray:
        """Cayley topologies: node ids ``nodes + by`` (coordinate-wise, modulo the shape); broadcasts.

        int64 array of the broadcast shape of ``nodes`` and ``by``.

        Raises:
            TopologyError: the topology has no grid shape, or a node outside 0..N-1.

        Source: docs/topology.md, "Metrics and routing" (translation-invariant routing of Cayley topologies).

        >>> from directcoll.topology.families import torus
        >>> torus((2, 3)).translate([1, 2], 4).tolist()
        [5, 3]
        """
        return self.node_at(self.coords(np.ravel(nodes)).reshape(*np.shape(nodes), -1)
                            + self.coords(np.ravel(by)).reshape(*np.shape(by), -1))

    def offset(self, src, dst) -> np.ndarray:
        """Cayley topologies: the node id of ``dst - src`` (coordinate-wise, modulo the shape).

        int64 array.

        Raises:
            TopologyError: the topology has no grid shape, or a node outside 0..N-1.

        Source: docs/topology.md, "Metrics and routing" (translation-invariant routing).

        >>> from directcoll.topology.families import torus
        >>> int(torus((2, 3)).offset(4, 0))
        5
        """
        return self.node_at(self.coords(dst) - self.coords(src))

    def translate_links(self, links, by) -> np.ndarray:
        """Cayley topologies: the link ids of ``links`` moved by the group element ``by`` (broadcasts).

        int64 array of the broadcast shape of ``links`` and ``by``.

        Raises:
            TopologyError: a non-Cayley topology (no ``port_offsets``), or as :meth:`translate`.

        Source: docs/topology.md, "Metrics and routing" (translation-invariant routing: link ``u*K + k``).
        """
        if self.port_offsets is None:
            raise TopologyError(f"{self.spec}: links of a non-Cayley topology cannot be translated")
        k = len(self.port_offsets)
        links = np.asarray(links, dtype=np.int64)
        return self.translate(links // k, by) * k + links % k

    # -- networkx ------------------------------------------------------------------------------------------
    @classmethod
    def from_networkx(cls, graph, *, bandwidth: str = "bandwidth", latency: str = "latency",
                      spec: str | None = None) -> Topology:
        """The topology of a networkx graph: every node a compute node unless its ``switch`` attribute is true, an
        undirected edge a link each way, a directed edge one link, parallel edges parallel links; the edge
        attributes named ``bandwidth`` (a number of bit/s or text with its unit, "100Gbps") and ``latency`` (a
        number of seconds or text, "500ns") give each link's values, 400 Gb/s and 100 ns where absent. Nodes
        are numbered compute nodes first, by value when all are integers, else in the graph's node order
        (:mod:`directcoll.topology.linktable`).

        Returns:
            a Topology of kind ``networkx`` (bandwidths in bytes/s, latencies in s), its spec ``spec`` (default
            ``networkx:NAME``, which names it but does not rebuild it: write it with
            :func:`~directcoll.topology.files.write_network` and use ``file:PATH`` for that).

        Raises:
            SpecError: a bad bandwidth, latency or switch value or a self-loop (naming the edge), no links.
            TopologyError: not a networkx graph, or compute nodes that cannot all reach each other.
            ResourceError: over the memory budget.

        Source: docs/topology.md, "Your own network".

        >>> import networkx as nx
        >>> g = nx.cycle_graph(4)
        >>> g.edges[0, 1]["bandwidth"] = "100Gbps"
        >>> t = Topology.from_networkx(g)
        >>> t.num_links, t.link_bandwidth[:2].tolist()
        (8, [12500000000.0, 12500000000.0])
        """
        from directcoll.topology.linktable import table_of_networkx

        name = getattr(graph, "name", "")
        fields = table_of_networkx(graph, bandwidth, latency).fields(DEFAULT_LINK_BANDWIDTH, DEFAULT_LINK_LATENCY)
        return cls(spec or (f"networkx:{name}" if name else "networkx"), "networkx", **fields)

    def to_networkx(self):
        """A networkx MultiDiGraph of this topology: nodes ``0..num_nodes-1`` (attribute ``switch``), one edge per
        directed link keyed by its link id, with ``bandwidth`` (bit/s) and ``latency`` (s) as floats;
        :meth:`from_networkx` reads it back with the same links in the same order.

        Raises:
            MissingDependencyError: networkx is not installed (``pip install 'directcoll[networkx]'``).
            ResourceError: over the memory budget.

        Source: docs/topology.md, "Your own network".

        >>> from directcoll.topology.families import ring
        >>> ring(4).to_networkx().number_of_edges()
        8
        """
        from directcoll.topology.linktable import to_networkx

        return to_networkx(self)

    def describe_short(self) -> str:
        """One line for messages: ``"<spec> (N ranks, L directed links)"``.

        Raises:
            Nothing: formatting.

        Source: docs/topology.md (the network model).

        >>> from directcoll.topology.families import ring
        >>> ring(4).describe_short()
        'ring:4 (4 ranks, 8 directed links)'
        """
        return f"{self.spec} ({self.num_compute} ranks, {self.num_links} directed links)"
