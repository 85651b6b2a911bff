"""Routing: which directed links a transfer uses and with what share of its bytes, and the load every step's
transfers put on every link (docs/architecture.md "Cost and simulation").

Routing modes (:data:`ROUTINGS`):

* ``adaptive``: traffic between two nodes is split evenly over *all* shortest paths (every minimal path
  carries the same share), which approximates minimal adaptive routing (Swing Sec. 2.2). Under that split, a
  link (u, v) carries the share ``sigma_s(u) * sigma_t(v) / sigma_s(t)`` of the s -> t traffic when
  ``d(s,u) + 1 + d(v,t) = d(s,t)``, with sigma the shortest-path counts (:func:`minimal_route`).
* ``dor``: dimension-order routing on grids, one path (:func:`dor_route`).
* explicit routes: a schedule may give every transfer its own path (CSR over link ids), which then wins.

Two views of the same routing, both columnar (no Python object per transfer):

* :func:`route_entries`: one (transfer, link, share) entry per link every transfer uses. This is the lowered
  routing every simulation engine consumes (the step model takes per-transfer maxima over it, the flow model
  builds its flow x link incidence from it).
* :func:`link_loads`: the load of every link of one step, in the unit of the transfer amounts (bytes, or
  fractions of a vector or of a block). Callers that need no per-transfer view (cost models, all-to-all
  schedules) use it: it never materializes more than one group of transfers, and on other topologies than
  Cayley graphs it aggregates all destinations of a source in one backward pass over its BFS DAG (Brandes'
  accumulation), one BFS per source instead of two per pair.

On Cayley topologies (tori, rings, hypercubes, HyperX) the pattern of s -> t depends on t - s only, so one
pattern per distinct offset is computed (from node 0's BFS alone: distances and path counts to t are node 0's
to t - v) and translated to every source; on a HammingMesh one pattern per pair moved to board 0 is computed and
moved to the source's board (:mod:`directcoll.topology.symmetry`; docs/simulation.md, "Symmetry"). The cost
is (transfers x links in the pattern): 65,536 transfers along one dimension of a 128x128 torus route in 0.2 s,
but antipodal transfers, whose minimal paths fill a whole 64x64 box, take tens of seconds.

Source: docs/architecture.md, "Cost and simulation" (minimal paths split evenly, dimension order as an option);
docs/topology.md, "Metrics and routing"; Swing (De Sensi et al., NSDI'24) Sec. 2.2 and Sec. 6, "Routing Impact"
(minimal adaptive routing).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from directcoll.errors import TopologyError
from directcoll.resources import check_memory
from directcoll.topology.model import Topology
from directcoll.topology.paths import bfs_distances, check_bfs_work, path_counts, shortest_path_dag
from directcoll.topology.symmetry import board_shifts

#: Routing modes a transfer without an explicit route can be routed by.
ROUTINGS = ("adaptive", "dor", "single")


def minimal_route(topo: Topology, src: int, dst: int) -> tuple[np.ndarray, np.ndarray]:
    """Links used by traffic from ``src`` to ``dst`` split evenly over all shortest paths (``adaptive``).

    Returns:
        (links, share): int64 link ids and the float64 share of the traffic each carries (shares of the
        links leaving ``src`` sum to 1). Empty arrays when src == dst.

    Raises:
        TopologyError: a node out of range or dst unreachable from src.

    Source: docs/topology.md, "Metrics and routing" (share sigma_s(u) sigma_t(v) / sigma_s(t)); Swing (De Sensi et
    al., NSDI'24) Sec. 2.2 (minimal adaptive routing, which the even split approximates).

    >>> from directcoll.topology import parse
    >>> links, share = minimal_route(parse("ring:4"), 0, 2)
    >>> links.tolist(), share.tolist()
    ([0, 1, 2, 7], [0.5, 0.5, 0.5, 0.5])
    """
    for node in (src, dst):
        if not 0 <= node < topo.num_nodes:
            raise TopologyError(f"{topo.spec}: node {node} outside 0..{topo.num_nodes - 1}")
    if src == dst:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    ds = bfs_distances(topo, [src])[0]
    dt = bfs_distances(topo, [dst], reverse=True)[0]
    if ds[dst] < 0:
        raise TopologyError(f"{topo.spec}: node {dst} is unreachable from node {src}")
    ss = path_counts(topo, ds)
    st = path_counts(topo, dt, reverse=True)
    u, v = topo.link_src, topo.link_dst
    on = (ds[u] >= 0) & (dt[v] >= 0) & (ds[u] + 1 + dt[v] == ds[dst])
    links = np.flatnonzero(on)
    return links.astype(np.int64), ss[u[links]] * st[v[links]] / ss[dst]


def link_between(topo: Topology, u, v) -> np.ndarray:
    """Id of a link u -> v for every pair (the first one when cables are parallel); -1 where none exists.

    Args:
        topo: the network.
        u, v: int arrays (or scalars) of one shape, node ids in 0..num_nodes-1.

    Returns:
        int64 array of the shape of ``u``: link ids, -1 where there is no link u -> v.

    Raises:
        Nothing: a binary search over the sorted (src, dst) keys; ids outside the node range are the caller's bug
            (not checked).

    Source: docs/topology.md (parallel links are distinct; links are identified by id).

    >>> from directcoll.topology import parse
    >>> link_between(parse("ring:4"), [0, 0], [1, 2]).tolist()
    [0, -1]
    """
    key = topo.link_src * topo.num_nodes + topo.link_dst
    order = np.argsort(key, kind="stable")
    want = np.asarray(u, dtype=np.int64) * topo.num_nodes + np.asarray(v, dtype=np.int64)
    pos = np.minimum(np.searchsorted(key[order], want), max(topo.num_links - 1, 0))
    return np.where(key[order][pos] == want, order[pos], -1)


def dor_route(topo: Topology, src: int, dst: int) -> tuple[np.ndarray, np.ndarray]:
    """Dimension-order route (``dor``; Dally and Seitz 1987, Basu et al. (HPDC'24) ref. [17]): correct dimension 0
    first, then 1, ...; one path, every link share 1.

    On wrapping dimensions the shorter direction is taken (ties go "+"); HyperX and hypercube dimensions
    take one hop. Needs a grid topology whose neighbours differ in one coordinate (torus, mesh, ring,
    hypercube, HyperX).

    Returns:
        (links, share): int64 link ids in path order, float64 ones.

    Raises:
        TopologyError: a topology without a grid shape, or a hop the topology has no link for.

    Source: Basu et al. (HPDC'24) Sec. 5.2 (the DOR baseline on tori, ref. [17]); docs/architecture.md, "Cost and
    simulation" (dimension order as an option).

    >>> from directcoll.topology import parse
    >>> dor_route(parse("torus:4x4"), 0, 5)[0].tolist()
    [0, 18]
    """
    if topo.shape is None or topo.kind == "hammingmesh" or not topo.grid_is_links:
        raise TopologyError(f"{topo.spec}: dimension-order routing needs a torus, mesh, ring, hypercube or "
                            "HyperX (a placed job's grid is not its links); use adaptive routing")
    cur = topo.coords([src])[0].copy()
    goal = topo.coords([dst])[0]
    nodes = [topo.node_at(cur)]
    for dim, d in enumerate(topo.shape):
        if topo.kind in ("hyperx", "hypercube"):
            if cur[dim] != goal[dim]:
                cur[dim] = goal[dim]
                nodes.append(topo.node_at(cur))
            continue
        delta = int(goal[dim] - cur[dim])
        if topo.wraps:
            delta %= d
            bidirectional = topo.params.get("bidirectional", True)
            if bidirectional and delta > d - delta:
                delta -= d
        step = 1 if delta > 0 else -1
        for _ in range(abs(delta)):
            cur[dim] = (cur[dim] + step) % d
            nodes.append(topo.node_at(cur))
    nodes = np.array(nodes, dtype=np.int64)
    links = link_between(topo, nodes[:-1], nodes[1:])
    if (links < 0).any():
        raise TopologyError(f"{topo.spec}: dimension-order route {src} -> {dst} needs a missing link")
    return links, np.ones(len(links))


def single_route(topo: Topology, src: int, dst: int) -> tuple[np.ndarray, np.ndarray]:
    """One minimal path (``single``): at every node the next node is the one its lowest-numbered link on a minimal
    path to ``dst`` leads to, and the transfer is split evenly over the parallel links to that node. The choice
    depends on the node and the destination only, as an IP routing table's (the emulated testbed routes so), and
    on Cayley topologies it is the same at every node (the lowest port), so routes translate.

    Returns:
        (links, share): int64 link ids in path order (parallel links together), float64 shares (1 / the number of
        parallel links). Empty arrays when src == dst.

    Raises:
        TopologyError: a node out of range or dst unreachable from src.

    Source: docs/topology.md, "Metrics and routing"; docs/testbed.md, "What it builds" (destination-based routes,
    one path per flow).

    >>> from directcoll.topology import parse
    >>> [a.tolist() for a in single_route(parse("ring:4"), 0, 2)]
    [[0, 2], [1.0, 1.0]]
    >>> [a.tolist() for a in single_route(parse("torus:2x2"), 0, 1)]  # two parallel links to the neighbour
    [[2, 3], [0.5, 0.5]]
    """
    for node in (src, dst):
        if not 0 <= node < topo.num_nodes:
            raise TopologyError(f"{topo.spec}: node {node} outside 0..{topo.num_nodes - 1}")
    dt = bfs_distances(topo, [dst], reverse=True)[0]
    if dt[src] < 0:
        raise TopologyError(f"{topo.spec}: node {dst} is unreachable from node {src}")
    links, share, u = [], [], src
    while u != dst:
        out = np.flatnonzero(topo.link_src == u)
        on = out[dt[topo.link_dst[out]] == dt[u] - 1]
        w = topo.link_dst[on[0]]
        parallel = on[topo.link_dst[on] == w]
        links += parallel.tolist()
        share += [1.0 / len(parallel)] * len(parallel)
        u = int(w)
    return np.array(links, dtype=np.int64), np.array(share)


@lru_cache(maxsize=8)
def _origin(topo: Topology):
    """Cayley topologies: (distances from node 0, shortest-path counts from node 0, coordinates of every node),
    or None when the node and link layout is not the translation-invariant one (then routes run their BFS)."""
    v, k = topo.num_nodes, len(topo.port_offsets)
    if topo.num_compute != v or topo.num_links != v * k or \
            not np.array_equal(topo.link_src, np.repeat(np.arange(v, dtype=np.int64), k)):
        return None
    dist = bfs_distances(topo, [0])[0]
    if (dist < 0).any():
        return None
    return dist, path_counts(topo, dist), topo.coords(np.arange(v))


def _cayley_minimal_route(topo: Topology, dst: int) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`minimal_route` from node 0 on a Cayley topology without a BFS: the distance from v to ``dst`` and
    the number of shortest paths between them are node 0's to ``dst - v`` (translation), so the links
    (u, v) with d(0, u) + 1 + d(v, dst) = d(0, dst) and their shares sigma(u) sigma(dst - v) / sigma(dst) follow
    from one BFS of node 0 (the same numbers :func:`minimal_route` computes, links in increasing order)."""
    origin = _origin(topo)
    if origin is None:
        return None
    dist, sigma, coords = origin
    back = topo.node_at(coords[dst] - coords)           # dst - v for every node v
    to_dst, total = dist[back], dist[dst]
    cand = np.flatnonzero(dist + to_dst == total)        # nodes on a shortest path 0 -> dst
    k = len(topo.port_offsets)
    links = (cand[:, None] * k + np.arange(k)).ravel()
    u, w = topo.link_src[links], topo.link_dst[links]
    on = dist[u] + 1 + to_dst[w] == total
    links, u, w = links[on], u[on], w[on]
    return links.astype(np.int64), sigma[u] * sigma[back[w]] / sigma[dst]


@lru_cache(maxsize=65536)
def _route_cached(topo: Topology, src: int, dst: int, routing: str) -> tuple[np.ndarray, np.ndarray]:
    if routing == "dor":
        return dor_route(topo, src, dst)
    if routing == "single":
        return single_route(topo, src, dst)
    if src == 0 and dst != 0 and topo.is_cayley and 0 <= dst < topo.num_nodes:
        fast = _cayley_minimal_route(topo, dst)
        if fast is not None:
            return fast
    return minimal_route(topo, src, dst)


def route_hops(topo: Topology, src: int, dst: int, routing: str = "adaptive") -> np.ndarray:
    """int64 (k,): the hop at which each link of :func:`route_pattern` (same arguments) is crossed, from 0 at the
    source: every routing here is minimal, so a link u -> w of the route is crossed at hop dist(src, u), on
    whichever of the minimal paths carries it. Cached like the pattern.

    Raises:
        TopologyError: as :func:`route_pattern`.

    Source: docs/simulation.md, "Step model" (short transfers).

    >>> from directcoll.topology import parse
    >>> route_hops(parse("ring:4"), 0, 2, "dor").tolist()
    [0, 1]
    """
    links, _ = route_pattern(topo, src, dst, routing)
    return _distances_from(topo, int(src))[topo.link_src[links]]


@lru_cache(maxsize=8)  # a node's distances (V int64): patterns come grouped by source, Cayley ones all from 0
def _distances_from(topo: Topology, src: int) -> np.ndarray:
    origin = _origin(topo) if src == 0 and topo.is_cayley else None  # node 0's, already found for its routes
    return origin[0] if origin is not None else bfs_distances(topo, [src])[0]


def _check_routing(routing: str) -> None:
    if routing not in ROUTINGS:
        raise TopologyError(f"unknown routing {routing!r}; accepted: {', '.join(ROUTINGS)}")


def route_pattern(topo: Topology, src: int, dst: int, routing: str = "adaptive") -> tuple[np.ndarray, np.ndarray]:
    """(links, shares) of a transfer src -> dst under ``routing`` ("adaptive": even split over all minimal
    paths; "dor": dimension order; "single": one minimal path, :func:`single_route`), cached. Cayley topologies
    cache one pattern per offset from node 0.

    Raises:
        TopologyError: an unknown routing name; as :func:`minimal_route` and :func:`dor_route`.

    Returns:
        (links int64 (k,), shares float64 (k,)): the share of the transfer's bytes on each link.

    Source: docs/topology.md, "Metrics and routing".

    >>> from directcoll.topology import parse
    >>> [a.tolist() for a in route_pattern(parse("ring:4"), 0, 2, "dor")]
    [[0, 2], [1.0, 1.0]]
    """
    _check_routing(routing)
    return _route_cached(topo, int(src), int(dst), routing)


# -- route entries and link loads -------------------------------------------------------------------------
@dataclass(frozen=True)
class RouteEntries:
    """The links T transfers use, columnar: transfer ``transfer[k]`` puts the share ``share[k]`` of its bytes
    on link ``link[k]`` (int64, int64, float64 (K,)), grouped by transfer in increasing order. Adaptive
    routes' shares of one hop add up to 1, so ``sum(share)`` of a transfer is its (mean) hop count.

    Raises:
        Nothing: a record built by :func:`route_entries`.

    Source: docs/architecture.md, "Engines, runtimes and scale" (the lowered input every engine takes);
    docs/topology.md.

    >>> e = RouteEntries(np.array([0, 0, 1]), np.array([3, 4, 4]), np.array([1.0, 1.0, 1.0]))
    >>> e.loads([2.0, 5.0], 6).tolist()
    [0.0, 0.0, 0.0, 2.0, 7.0, 0.0]
    """

    transfer: np.ndarray
    link: np.ndarray
    share: np.ndarray
    hop: np.ndarray | None = None  # int64 (K,): the hop at which each entry's link is crossed, when asked for

    def loads(self, amount, num_links: int) -> np.ndarray:
        """float64 (num_links,): every link's load when transfer i carries ``amount[i]`` (any unit), in that unit.

        Raises:
            Nothing: ``amount`` (T,) is indexed by the entries' transfer ids, which must be in range.

        Source: docs/architecture.md, "Cost and simulation" (add the bytes of a step's transfers on every directed
        link).

        >>> RouteEntries(np.array([0]), np.array([1]), np.array([0.5])).loads([8.0], 2).tolist()
        [0.0, 4.0]
        """
        return np.bincount(self.link, weights=np.asarray(amount, dtype=float)[self.transfer] * self.share,
                           minlength=num_links)


def _explicit(offsets, links, num_links: int, spec: str) -> RouteEntries:
    offsets, links = np.asarray(offsets, dtype=np.int64), np.asarray(links, dtype=np.int64)
    if len(links) and (links.min() < 0 or links.max() >= num_links):
        raise TopologyError(f"a route uses a link id outside 0..{num_links - 1} of {spec}")
    counts = np.diff(offsets)
    hop = np.arange(len(links), dtype=np.int64) - np.repeat(offsets[:-1], counts)  # routes list links in order
    return RouteEntries(np.repeat(np.arange(len(counts)), counts), links, np.ones(len(links)), hop)


@lru_cache(maxsize=8)
def _grid(topo: Topology) -> tuple[np.ndarray, tuple[int, ...], tuple[int, ...]]:
    """Cayley topologies: (coordinates (V, D) of every node, the shape, the row-major strides), for translations
    digit by digit without unravelling node ids again."""
    shape = tuple(int(d) for d in topo.shape)
    strides = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) for i in range(len(shape)))
    return topo.coords(np.arange(topo.num_compute)), shape, strides


def _cayley_offset(topo: Topology, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """``topo.offset(src, dst)`` (the node id of dst - src), from the cached coordinates."""
    coords, shape, strides = _grid(topo)
    for nodes in (src, dst):
        if len(nodes) and (nodes.min() < 0 or nodes.max() >= len(coords)):
            raise TopologyError(f"{topo.spec}: compute node out of range 0..{len(coords) - 1}")
    out = np.zeros(len(src), dtype=np.int64)
    for d, (n, stride) in enumerate(zip(shape, strides, strict=True)):
        out += (coords[dst, d] - coords[src, d]) % n * stride
    return out


def _cayley_translate_links(topo: Topology, pattern: np.ndarray, by: np.ndarray) -> np.ndarray:
    """``topo.translate_links(pattern[None, :], by[:, None])`` (G, k), from the cached coordinates."""
    coords, shape, strides = _grid(topo)
    k = len(topo.port_offsets)
    node, port = pattern // k, pattern % k
    out = np.zeros((len(by), len(pattern)), dtype=np.int64)
    for d, (n, stride) in enumerate(zip(shape, strides, strict=True)):
        digit = coords[by, d][:, None] + coords[node, d][None, :]
        digit[digit >= n] -= n
        out += digit * (stride * k)
    out += port[None, :]
    return out


def uniform_offsets(topo: Topology, src, dst) -> np.ndarray | None:
    """The offsets of a translation-invariant set of transfers on a Cayley topology, or None.

    The transfers are translation-invariant in the layout checked here when they are c blocks of V (the number
    of nodes): in block j, every node s sends once, to ``s + o_j`` (in any order). Then every transfer of block j
    is a translate of 0 -> o_j, and (routing being translation-invariant) the load of link ``u*K + p`` is the
    same for every node u: one route per block gives the whole step (:func:`directcoll.simulate.step.step_lines`).

    Returns:
        int64 (c,): the offsets o_j (node ids of the group element), or None when the topology is not Cayley or
        the transfers are not in that layout.

    Raises:
        Nothing: any other input gets None.

    Source: docs/simulation.md, "Symmetry"; docs/topology.md, "Metrics and routing" (translation-invariant
    routing of Cayley topologies).

    >>> from directcoll.topology import parse
    >>> r = np.arange(4)
    >>> uniform_offsets(parse("ring:4"), np.r_[r, r], np.r_[(r + 1) % 4, (r + 3) % 4]).tolist()
    [1, 3]
    >>> uniform_offsets(parse("ring:4"), r, r ^ 1) is None
    True
    """
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    v = topo.num_nodes
    if not topo.is_cayley or topo.num_compute != v or not len(src) or len(src) % v or len(dst) != len(src):
        return None
    blocks = len(src) // v
    if src.min() < 0 or src.max() >= v or dst.min() < 0 or dst.max() >= v:
        return None
    block_of = np.repeat(np.arange(blocks, dtype=np.int64), v)
    if not (np.bincount(block_of * v + src, minlength=blocks * v) == 1).all():  # every node once per block
        return None
    off = _cayley_offset(topo, src, dst).reshape(blocks, v)
    if not (off == off[:, :1]).all():
        return None
    return off[:, 0].copy()


def _groups(topo: Topology, src: np.ndarray, dst: np.ndarray, routing: str):
    """Transfers sharing one route pattern: Cayley topologies group by offset (the pattern from node 0),
    HammingMeshes by the pair moved to board 0 (:mod:`directcoll.topology.symmetry`), others by (src, dst) pair.
    Yields (transfers (G,), pattern links (k,), pattern shares (k,), the pattern's source, its destination)."""
    v = topo.num_nodes
    if topo.is_cayley:
        src, dst = np.zeros_like(src), _cayley_offset(topo, src, dst)
    else:
        shifts = board_shifts(topo) if routing == "adaptive" else None
        if shifts is not None:
            board = shifts.board(src)
            src, dst = shifts.move_nodes(src, board, sign=-1), shifts.move_nodes(dst, board, sign=-1)
    uniq, inverse = np.unique(src * v + dst, return_inverse=True)
    if not topo.is_cayley:  # a minimal route is two BFS sweeps and a path count over the links, per pair
        check_bfs_work(topo, 3 * len(uniq), f"routes of {len(uniq):,} (source, destination) pairs")
    order = np.argsort(inverse, kind="stable")  # transfers of one group together, in increasing order
    bounds = np.searchsorted(inverse[order], np.arange(len(uniq) + 1))
    for j, key in enumerate(uniq):
        a, b = int(key // v), int(key % v)
        yield (order[bounds[j]: bounds[j + 1]], *route_pattern(topo, a, b, routing), a, b)


def _placed(topo: Topology, src: np.ndarray, sel: np.ndarray, pattern: np.ndarray, routing: str) -> np.ndarray:
    """(G * k,) the links of a group's pattern for each of its transfers, transfer-major (Cayley topologies:
    translated from node 0 to each transfer's source; HammingMeshes: moved from board 0 to the source's board)."""
    if topo.is_cayley:
        return _cayley_translate_links(topo, pattern, src[sel]).ravel()
    shifts = board_shifts(topo) if routing == "adaptive" else None
    if shifts is not None:
        return shifts.move_links(pattern[None, :], shifts.board(src[sel])[:, None]).ravel()
    return np.tile(pattern, len(sel))


def route_entries(topo: Topology, src, dst, routing: str = "adaptive", routes=None, *,
                  hops: bool = False) -> RouteEntries:
    """The links every transfer src[i] -> dst[i] uses and the share of its bytes on each: the lowered routing
    every simulation engine starts from.

    Args:
        topo: the network.
        src, dst: int (T,) node ids; src != dst (local copies use no link: callers leave them out).
        routing: ``adaptive``, ``dor`` or ``single`` (:data:`ROUTINGS`), for transfers without an explicit route.
        routes: optional explicit routes (offsets (T + 1,), links (R,)): transfer i uses
            ``links[offsets[i]:offsets[i + 1]]``, share 1 each; every transfer must have one.
        hops: also fill :attr:`RouteEntries.hop` (explicit routes always have it: a link's place in its route).

    Returns:
        :class:`RouteEntries` grouped by transfer.

    Raises:
        TopologyError: an unknown routing, a routing the topology cannot do, an empty explicit route or a route
            with a link id outside the topology.
        ResourceError: route patterns need more memory than allowed (BFS of a large topology,
            :func:`directcoll.topology.paths.bfs_distances`), or more BFS work than
            :data:`~directcoll.topology.paths.MAX_BFS_WORK` (three sweeps per distinct pair on a topology without
            translation symmetry).

    Source: docs/architecture.md, "Engines, runtimes and scale" (three engines take the same lowered input);
    docs/simulation.md, "Step model", item 1.

    >>> from directcoll.topology import parse
    >>> e = route_entries(parse("ring:4"), [0, 1], [2, 2])
    >>> e.transfer.tolist(), e.link.tolist(), e.share.tolist()
    ([0, 0, 0, 0, 1], [0, 1, 2, 7, 2], [0.5, 0.5, 0.5, 0.5, 1.0])
    """
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    if routes is not None:
        if (np.diff(routes[0]) == 0).any():
            raise TopologyError("a transfer with an explicit route table has an empty route")
        return _explicit(*routes, topo.num_links, topo.spec)
    _check_routing(routing)
    groups = list(_groups(topo, src, dst, routing))
    count = np.zeros(len(src), dtype=np.int64)
    for sel, pl, *_ in groups:
        count[sel] = len(pl)
    start = np.r_[0, np.cumsum(count)]
    # entries (transfer, link, share: 24 B; a hop: 8 B more) plus one group's positions and placed links while
    # filling them
    check_memory(f"route entries of {len(src):,} transfers on {topo.spec}", (48.0 if hops else 40.0) * float(start[-1]))
    link, share = np.empty(start[-1], dtype=np.int64), np.empty(start[-1])
    hop = np.empty(start[-1], dtype=np.int64) if hops else None
    for sel, pl, ps, pattern_src, pattern_dst in groups:  # each group's entries go straight to their places
        pos = (start[sel][:, None] + np.arange(len(pl))).ravel()
        link[pos] = _placed(topo, src, sel, pl, routing)
        share[pos] = np.tile(ps, len(sel))
        if hops:  # a pattern placed at another source keeps its hop numbers (a translation or a board move)
            hop[pos] = np.tile(route_hops(topo, pattern_src, pattern_dst, routing), len(sel))
    return RouteEntries(np.repeat(np.arange(len(src), dtype=np.int64), count), link, share, hop)


def link_loads(topo: Topology, src, dst, amount, *, routing: str = "adaptive", routes=None) -> np.ndarray:
    """Load of every directed link when every transfer src[i] -> dst[i] carries ``amount[i]``: the one
    per-step link-load computation of the project (cost models, all-to-all schedules; the simulators take
    :meth:`RouteEntries.loads` of the entries they need anyway).

    Args:
        topo: the network (a Topology; with ``routes`` only, any link graph with ``num_links``).
        src, dst: int (T,) node ids; transfers with src == dst carry nothing.
        amount: float (T,) or a scalar (bytes, or any unit: the result is in the same unit).
        routing: ``adaptive`` (default), ``dor`` or ``single``, for the transfers without an explicit route.
        routes: optional explicit routes (offsets (T + 1,), links (R,)): a transfer with a non-empty route puts
            its whole amount on each of its links; one with an empty route is routed by ``routing`` (the IR's
            "empty = route it yourself").

    Returns:
        float64 (L,): every link's load, in the unit of ``amount``.

    Raises:
        ResourceError: more BFS work than :data:`~directcoll.topology.paths.MAX_BFS_WORK` (adaptive on
            non-Cayley topologies: one BFS per source), or translated routes over the memory budget.
        TopologyError: an unknown routing, a routing the topology cannot do, or a route with a link id outside
            the topology.

    Source: docs/architecture.md, "Cost and simulation" (bytes of a step added on every directed link); Zhao et al.
    (NSDI'25) Sec. 3.2 (a step's BW runtime: the most data a link carries, over its bandwidth); Basu et al.
    (HPDC'24) Sec. 5.3 (EwSP: the even split over all shortest paths); Brandes' dependency accumulation for
    the backward pass.

    >>> from directcoll.topology import parse
    >>> link_loads(parse("ring:4"), [0], [2], 8.0).tolist()
    [4.0, 4.0, 4.0, 0.0, 0.0, 0.0, 0.0, 4.0]
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    amount = np.broadcast_to(np.asarray(amount, dtype=float), src.shape)
    num_links = topo.num_links if hasattr(topo, "num_links") else len(topo.link_src)
    if routes is not None:
        entries = _explicit(*routes, num_links, getattr(topo, "spec", "the network"))
        loads = entries.loads(amount, num_links)
        free = np.diff(routes[0]) == 0
        if not free.any():
            return loads
        return loads + link_loads(topo, src[free], dst[free], amount[free], routing=routing)
    _check_routing(routing)
    keep = src != dst
    src, dst, amount = src[keep], dst[keep], amount[keep]
    loads = np.zeros(num_links)
    if not len(src):
        return loads
    if routing == "adaptive" and not topo.is_cayley:
        sources = np.unique(src)
        check_bfs_work(topo, len(sources), "link loads")
        for s in sources:
            sel = src == s
            loads += _source_loads(topo, int(s), dst[sel], amount[sel])
        return loads
    for sel, pl, ps, *_ in _groups(topo, src, dst, routing):
        check_memory(f"link loads of {len(sel):,} transfers over {len(pl):,} links each on {topo.spec}",
                     32.0 * float(len(sel)) * float(len(pl)))
        weights = (amount[sel][:, None] * ps[None, :]).ravel()
        loads += np.bincount(_placed(topo, src, sel, pl, routing), weights=weights, minlength=num_links)
    return loads


def _source_loads(topo: Topology, s: int, dst: np.ndarray, amount: np.ndarray) -> np.ndarray:
    """Brandes-style accumulation of all traffic leaving ``s`` over its shortest-path DAG."""
    dist = bfs_distances(topo, [s])[0]
    if (dist[dst] < 0).any():
        raise TopologyError(f"{topo.spec}: a destination is unreachable from node {s}")
    sigma = path_counts(topo, dist)
    links, near, far, bounds = shortest_path_dag(topo, dist)
    demand = np.bincount(dst, weights=amount, minlength=topo.num_nodes)
    through = np.zeros(topo.num_nodes)  # traffic that passes through or ends at a node, per node
    loads = np.zeros(topo.num_links)
    for k in range(len(bounds) - 2, -1, -1):
        layer = links[bounds[k]: bounds[k + 1]]
        if not len(layer):
            continue
        v = far[layer]
        flow = sigma[near[layer]] / sigma[v] * (demand[v] + through[v])
        loads[layer] = flow
        through += np.bincount(near[layer], weights=flow, minlength=topo.num_nodes)
    return loads
