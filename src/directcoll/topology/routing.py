"""Minimal-path routing: hop distances and the load every transfer puts on every directed link.

Traffic between two nodes is split evenly over *all* shortest paths (every minimal path carries the same
share), which approximates minimal adaptive routing (Swing Sec. 2.2, DESIGN.md "Cost and simulation").
Under that split, a link (u, v) carries the share ``sigma_s(u) * sigma_t(v) / sigma_s(t)`` of the s -> t
traffic when ``d(s,u) + 1 + d(v,t) = d(s,t)``, with sigma the shortest-path counts.

On Cayley topologies (tori, rings, hypercubes, HyperX) the pattern of s -> t depends on t - s only, so one
pattern per distinct offset is computed and translated to every source. The cost is (transfers x links in the
pattern): 65,536 transfers along one dimension of a 128x128 torus route in 0.2 s, but antipodal transfers,
whose minimal paths fill a whole 64x64 box, take tens of seconds. Other topologies aggregate all
destinations of a source in one backward pass over its BFS DAG (Brandes' accumulation), one source at a time.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy.sparse.csgraph import shortest_path

from directcoll.errors import TopologyError
from directcoll.resources import check_memory, check_work
from directcoll.topology.model import Topology

#: Bytes per (source, node) entry of :func:`bfs_distances` (scipy's float64 result, the -1 fill, the int64 copy).
BYTES_PER_DISTANCE = 25
#: Memory one chunk of BFS rows may take when many sources are swept (all-pairs distances, hop distances).
CHUNK_BYTES = 64 * 2**20
#: Most link visits (BFS sources x links) one request may need: about two minutes of scipy's BFS; beyond it
#: the all-pairs sweeps of non-Cayley topologies (``topology describe``, hop distances, link loads) are refused.
MAX_BFS_WORK = 4e9


def bfs_chunk(topo: Topology) -> int:
    """How many BFS sources fit in :data:`CHUNK_BYTES` of distance rows (1..512)."""
    return max(1, min(512, CHUNK_BYTES // (BYTES_PER_DISTANCE * max(topo.num_nodes, 1))))


def check_bfs_work(topo: Topology, sources: int, what: str) -> None:
    """Refuse ``what`` when it needs ``sources`` BFS sweeps over ``topo`` beyond :data:`MAX_BFS_WORK`.

    Raises:
        ResourceError: sources x links over the limit, naming the topology.
    """
    check_work(f"{what} on {topo.spec} ({sources:,} BFS sources x {topo.num_links:,} links)",
               float(sources) * float(max(topo.num_links, 1)), MAX_BFS_WORK, "link visits")


def bfs_distances(topo: Topology, sources, *, reverse: bool = False) -> np.ndarray:
    """Hop distances from every source to every node (to every source, with ``reverse``).

    Returns:
        int64 array of shape (len(sources), num_nodes); -1 where unreachable.

    Raises:
        ResourceError: the (sources x nodes) result would exceed the memory budget.
    """
    sources = np.atleast_1d(np.asarray(sources, dtype=np.int64))
    check_memory(f"hop distances from {len(sources):,} sources to the {topo.num_nodes:,} nodes of {topo.spec}",
                 BYTES_PER_DISTANCE * float(len(sources)) * float(topo.num_nodes))
    graph = topo.adjacency.T.tocsr() if reverse else topo.adjacency
    d = shortest_path(graph, unweighted=True, directed=True, indices=sources)
    d = np.where(np.isinf(d), -1, d)
    return d.astype(np.int64).reshape(len(sources), topo.num_nodes)


def _dag(topo: Topology, dist: np.ndarray, reverse: bool):
    """Links on shortest paths from the BFS root, sorted by the layer of their near end."""
    near, far = (topo.link_dst, topo.link_src) if reverse else (topo.link_src, topo.link_dst)
    ok = (dist[near] >= 0) & (dist[far] == dist[near] + 1)
    links = np.flatnonzero(ok)
    links = links[np.argsort(dist[near[links]], kind="stable")]
    bounds = np.searchsorted(dist[near[links]], np.arange(dist.max() + 2))
    return links, near, far, bounds


def path_counts(topo: Topology, dist: np.ndarray, *, reverse: bool = False) -> np.ndarray:
    """Number of shortest paths from the BFS root of ``dist`` to every node (float64, exact below 2**53).

    With ``reverse``, ``dist`` holds distances *to* a root and the counts are of paths to it.
    """
    links, near, far, bounds = _dag(topo, dist, reverse)
    sigma = np.zeros(topo.num_nodes)
    sigma[dist == 0] = 1.0
    for k in range(len(bounds) - 1):
        layer = links[bounds[k]: bounds[k + 1]]
        if len(layer):
            sigma += np.bincount(far[layer], weights=sigma[near[layer]], minlength=topo.num_nodes)
    return sigma


def minimal_route(topo: Topology, src: int, dst: int) -> tuple[np.ndarray, np.ndarray]:
    """Links used by traffic from ``src`` to ``dst`` split evenly over all shortest paths.

    Returns:
        (links, share): int64 link ids and the float64 share of the traffic each carries (shares of the
        links leaving ``src`` sum to 1). Empty arrays when src == dst.

    Raises:
        TopologyError: a node out of range or dst unreachable from src.
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


@lru_cache(maxsize=64)
def _distances_from_origin(topo: Topology) -> np.ndarray:
    return bfs_distances(topo, [0])[0]


def hop_distance(topo: Topology, src, dst) -> np.ndarray:
    """Shortest-path hop counts between compute nodes, vectorized over pairs (int64, same shape as src).

    Cayley topologies use one BFS from node 0 and translation; others run one BFS per distinct source, in
    chunks of :func:`bfs_chunk` sources.

    Raises:
        ResourceError: more BFS work than :data:`MAX_BFS_WORK`.
        TopologyError: some destination is unreachable.
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    if topo.is_cayley:
        return _distances_from_origin(topo)[topo.offset(src.ravel(), dst.ravel())].reshape(src.shape)
    out = np.empty(src.size, dtype=np.int64)
    s_flat, d_flat = src.ravel(), dst.ravel()
    uniq, inv = np.unique(s_flat, return_inverse=True)
    check_bfs_work(topo, len(uniq), "hop distances")
    step = bfs_chunk(topo)
    for chunk in range(0, len(uniq), step):
        rows = bfs_distances(topo, uniq[chunk: chunk + step])
        sel = (inv >= chunk) & (inv < chunk + step)
        out[sel] = rows[inv[sel] - chunk, d_flat[sel]]
    if (out < 0).any():
        raise TopologyError(f"{topo.spec}: some destination is unreachable")
    return out.reshape(src.shape)


def link_loads(topo: Topology, src, dst, amount) -> np.ndarray:
    """Total traffic on every directed link when every (src[i] -> dst[i]) carries ``amount[i]``.

    Args:
        src, dst: int arrays of shape (T,), node ids.
        amount: float array of shape (T,) (bytes, or any unit: the result is in the same unit).

    Returns:
        float64 array of shape (L,), the load of every link under even splitting over all shortest paths.

    Raises:
        ResourceError: more BFS work than :data:`MAX_BFS_WORK` (non-Cayley topologies: one BFS per source), or
            translated routes over the memory budget (Cayley topologies).
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    amount = np.broadcast_to(np.asarray(amount, dtype=float), src.shape)
    keep = src != dst
    src, dst, amount = src[keep], dst[keep], amount[keep]
    loads = np.zeros(topo.num_links)
    if not len(src):
        return loads
    if topo.is_cayley:
        off = topo.offset(src, dst)
        for o in np.unique(off):
            links, share = _cayley_pattern(topo, int(o))
            sel = off == o
            check_memory(f"link loads of {int(sel.sum()):,} transfers over {len(links):,} links each on {topo.spec}",
                         32.0 * float(sel.sum()) * float(len(links)))
            moved = topo.translate_links(links[None, :], src[sel][:, None])
            loads += np.bincount(moved.ravel(), weights=(amount[sel][:, None] * share[None, :]).ravel(),
                                 minlength=topo.num_links)
        return loads
    sources = np.unique(src)
    check_bfs_work(topo, len(sources), "link loads")
    for s in sources:
        sel = src == s
        loads += _source_loads(topo, int(s), dst[sel], amount[sel])
    return loads


@lru_cache(maxsize=4096)
def _cayley_pattern(topo: Topology, offset: int) -> tuple[np.ndarray, np.ndarray]:
    """The route from node 0 to node ``offset``; translating it by s gives the route s -> s + offset."""
    return minimal_route(topo, 0, offset)


def _source_loads(topo: Topology, s: int, dst: np.ndarray, amount: np.ndarray) -> np.ndarray:
    """Brandes-style accumulation of all traffic leaving ``s`` over its shortest-path DAG."""
    dist = bfs_distances(topo, [s])[0]
    if (dist[dst] < 0).any():
        raise TopologyError(f"{topo.spec}: a destination is unreachable from node {s}")
    sigma = path_counts(topo, dist)
    links, near, far, bounds = _dag(topo, dist, reverse=False)
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


# -- route patterns for the simulator ---------------------------------------------------------------------
ROUTINGS = ("adaptive", "dor")


def link_between(topo: Topology, u, v) -> np.ndarray:
    """Id of a link u -> v for every pair (the first one when cables are parallel); -1 where none exists."""
    key = topo.link_src * topo.num_nodes + topo.link_dst
    order = np.argsort(key, kind="stable")
    want = np.asarray(u, dtype=np.int64) * topo.num_nodes + np.asarray(v, dtype=np.int64)
    pos = np.minimum(np.searchsorted(key[order], want), max(topo.num_links - 1, 0))
    return np.where(key[order][pos] == want, order[pos], -1)


def dor_route(topo: Topology, src: int, dst: int) -> tuple[np.ndarray, np.ndarray]:
    """Dimension-order route: correct dimension 0 first, then 1, ...; one path, every link share 1.

    On wrapping dimensions the shorter direction is taken (ties go "+"); HyperX and hypercube dimensions
    take one hop. Needs a grid topology whose neighbours differ in one coordinate (torus, mesh, ring,
    hypercube, HyperX).

    Raises:
        TopologyError: a topology without a grid shape, or a hop the topology has no link for.
    """
    if topo.shape is None or topo.kind == "hammingmesh":
        raise TopologyError(f"{topo.spec}: dimension-order routing needs a torus, mesh, ring, hypercube or "
                            "HyperX; use adaptive routing")
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


@lru_cache(maxsize=65536)
def _route_cached(topo: Topology, src: int, dst: int, routing: str) -> tuple[np.ndarray, np.ndarray]:
    if routing == "dor":
        return dor_route(topo, src, dst)
    return minimal_route(topo, src, dst)


def route_pattern(topo: Topology, src: int, dst: int, routing: str = "adaptive") -> tuple[np.ndarray, np.ndarray]:
    """(links, shares) of a transfer src -> dst under ``routing`` ("adaptive": even split over all minimal
    paths; "dor": dimension order), cached. Cayley topologies cache one pattern per offset from node 0.

    Raises:
        TopologyError: an unknown routing name.
    """
    if routing not in ROUTINGS:
        raise TopologyError(f"unknown routing {routing!r}; accepted: {', '.join(ROUTINGS)}")
    return _route_cached(topo, int(src), int(dst), routing)
