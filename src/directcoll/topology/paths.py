"""Hop distances and paths between the nodes of a directed multigraph: the one home of BFS, shortest-path counts
and DAGs, the enumeration of shortest paths and link-disjoint paths (widest-path extraction from an MCF flow
is MCF-extP's: :mod:`directcoll.synthesis.mcf.paths`).

Every function takes a *link graph*: any object with ``num_nodes`` and int64 ``link_src``, ``link_dst`` arrays
(a :class:`~directcoll.topology.model.Topology`, the MCF's ``FlowNetwork``, or a :class:`LinkSet` for a
filtered or transposed set of links); ``spec`` names it in messages where it has one. Paths are sequences of
link ids, so parallel links are distinct paths.

**Cap on enumerated paths.** A pair can have exponentially many shortest paths (torus:16x16: 51,480 between
antipodes), so :func:`shortest_paths_from`, through which every enumeration of shortest paths goes (EwSP,
ILP-shortest, pMCF path sets), takes ``max_paths`` (default :data:`MAX_PATHS_PER_PAIR`) and *refuses* before
enumerating: a pair with more shortest paths (counted exactly by :func:`path_counts`) raises
UnsupportedShapeError. Nothing is truncated silently; pMCF's ``auto`` path sets ask :func:`path_counts` first.

How traffic spreads over these paths and the link loads it puts on the network: :mod:`directcoll.topology.routing`.

Source: docs/topology.md, "Metrics and routing" and "Strict specs and sizes" (BFS work and memory limits);
docs/architecture.md, "Topology"; Basu et al. (HPDC'24) Sec. 3.1.4, 3.2.1 and 5.2 (path sets of the all-to-all
schedules).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import numpy as np
import rustworkx as rx
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

from directcoll.errors import ResourceError, TopologyError, UnsupportedShapeError
from directcoll.resources import check_memory, check_work

#: Bytes per (source, node) entry of :func:`bfs_distances` from given sources (scipy's float64 result, the -1
#: fill, the int64 copy).
BYTES_PER_DISTANCE = 25
#: Bytes per entry of the all-pairs matrix of :func:`bfs_distances` (rustworkx's float64 one, the int64 copy)
#: and per link of the graph rustworkx builds.
BYTES_PER_ALL_PAIRS_DISTANCE = 16
BYTES_PER_RUSTWORKX_LINK = 200
#: Memory one chunk of BFS rows may take when many sources are swept (all-pairs distances, hop distances).
CHUNK_BYTES = 64 * 2**20
#: Most link visits (BFS sources x links) one request may need: about two minutes of scipy's BFS; beyond it
#: the all-pairs sweeps of non-Cayley topologies (``topology describe``, hop distances, link loads) are refused.
MAX_BFS_WORK = 4e9
#: Default cap of :func:`shortest_paths_from`: a pair with more shortest paths than this is refused (see the
#: module docstring).
MAX_PATHS_PER_PAIR = 1024


class LinkGraph(Protocol):
    """What the functions of this module read of a graph (Topology and FlowNetwork have it).

    ``num_nodes`` V, and int64 (L,) arrays ``link_src``, ``link_dst`` of the directed links.

    Raises:
        Nothing: a structural type for annotations, never instantiated.

    Source: docs/architecture.md, "Topology" (a directed multigraph of nodes and links).
    """

    num_nodes: int
    link_src: np.ndarray
    link_dst: np.ndarray


@dataclass(frozen=True, eq=False)
class LinkSet:
    """A bare link graph: ``num_nodes`` nodes and directed links ``link_src[j] -> link_dst[j]`` (int64 (L,)), for
    callers whose links are not a topology's (self-loops removed, transposed); ``spec`` names it in messages.

    Raises:
        Nothing: the arrays are taken as given (not validated).

    Source: docs/topology.md (the network model: directed links, parallel links allowed).

    >>> LinkSet(3, np.array([0, 1]), np.array([1, 2])).spec
    'a link set'
    """

    num_nodes: int
    link_src: np.ndarray
    link_dst: np.ndarray
    spec: str = "a link set"


def _spec(graph) -> str:
    return getattr(graph, "spec", "a link graph")


def adjacency(graph: LinkGraph, *, reverse: bool = False) -> sp.csr_matrix:
    """(V, V) sparse matrix with the number of links u -> v at [u, v] (at [v, u] with ``reverse``), for scipy's
    graph routines. A Topology's cached ``adjacency`` is reused.

    Returns:
        scipy.sparse CSR, shape (V, V), int64 link counts.

    Raises:
        Nothing: builds a sparse matrix from the link arrays.

    Source: docs/topology.md (a directed multigraph; parallel links counted).

    >>> adjacency(LinkSet(3, np.array([0, 1, 1]), np.array([1, 2, 2]))).toarray().tolist()
    [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    """
    a = getattr(graph, "adjacency", None)
    if not isinstance(a, sp.spmatrix | sp.sparray):
        v = graph.num_nodes
        a = sp.csr_matrix((np.ones(len(graph.link_src), dtype=np.int64), (graph.link_src, graph.link_dst)),
                          shape=(v, v))
    return a.T.tocsr() if reverse else a


def bfs_chunk(graph: LinkGraph) -> int:
    """How many BFS sources fit in :data:`CHUNK_BYTES` of distance rows (1..512).

    Returns:
        a number of sources (int), CHUNK_BYTES // (BYTES_PER_DISTANCE x V) clipped to 1..512.

    Raises:
        Nothing: arithmetic on ``num_nodes``.

    Source: docs/topology.md, "Strict specs and sizes" (all-pairs sweeps in 64 MiB chunks).

    >>> bfs_chunk(LinkSet(4, np.zeros(0, np.int64), np.zeros(0, np.int64)))
    512
    >>> bfs_chunk(LinkSet(10**6, np.zeros(0, np.int64), np.zeros(0, np.int64)))
    2
    """
    return max(1, min(512, CHUNK_BYTES // (BYTES_PER_DISTANCE * max(graph.num_nodes, 1))))


def check_bfs_work(graph: LinkGraph, sources: int, what: str) -> None:
    """Refuse ``what`` when it needs ``sources`` BFS sweeps over ``graph`` beyond :data:`MAX_BFS_WORK`.

    Raises:
        ResourceError: sources x links over the limit, naming the graph.

    Source: docs/topology.md, "Strict specs and sizes" (all-pairs BFS refused beyond 4 x 10^9 link visits);
    docs/architecture.md, "Engines, runtimes and scale" (Resources).

    >>> from directcoll.topology import parse
    >>> check_bfs_work(parse("ring:4"), 4, "hop distances") is None
    True
    """
    links = len(graph.link_src)
    check_work(f"{what} on {_spec(graph)} ({sources:,} BFS sources x {links:,} links)",
               float(sources) * float(max(links, 1)), MAX_BFS_WORK, "link visits")


def bfs_distances(graph: LinkGraph, sources=None, *, reverse: bool = False) -> np.ndarray:
    """Hop distances from every source to every node (to every source, with ``reverse``).

    Args:
        graph: a link graph (:class:`LinkGraph`).
        sources: node ids (S,), or None for all nodes (the all-pairs matrix, by rustworkx's parallel BFS).
        reverse: distances *to* the sources (BFS over the reversed links).

    Returns:
        int64 (S, V): ``[i, u]`` = hops from sources[i] to u (from u to sources[i] with ``reverse``); -1 where
        unreachable. All pairs: (V, V).

    Raises:
        ResourceError: the result would exceed the memory budget (checked first: rustworkx aborts the process
            when an allocation fails).

    Source: docs/topology.md, "Metrics and routing" (hop distances, diameter); Zhao et al. (NSDI'25) Sec. 3.2
    (the diameter D(G) bounds T_L).

    >>> from directcoll.topology import parse
    >>> bfs_distances(parse("ring:6"), [0]).tolist()
    [[0, 1, 2, 3, 2, 1]]
    >>> bfs_distances(LinkSet(3, np.array([0, 1]), np.array([1, 2]))).tolist()
    [[0, 1, 2], [-1, 0, 1], [-1, -1, 0]]
    """
    v = graph.num_nodes
    if sources is None:
        check_memory(f"the all-pairs hop distance matrix of {_spec(graph)} ({v:,} x {v:,})",
                     BYTES_PER_ALL_PAIRS_DISTANCE * float(v) ** 2 + BYTES_PER_RUSTWORKX_LINK * len(graph.link_src))
        src, dst = (graph.link_dst, graph.link_src) if reverse else (graph.link_src, graph.link_dst)
        dg = rx.PyDiGraph()
        dg.add_nodes_from(range(v))
        dg.add_edges_from_no_data(list(zip(src.tolist(), dst.tolist(), strict=True)))
        try:
            d = rx.digraph_distance_matrix(dg, null_value=-1.0)
        except BaseException as e:  # rustworkx panics (a BaseException) when its thread pool cannot start
            if type(e).__name__ != "PanicException":
                raise
            raise ResourceError(f"the all-pairs hop distances of {_spec(graph)}: rustworkx could not start its "
                                f"threads ({str(e).split(':')[0]}); raise the process's memory or thread "
                                "limits") from None
        return d.astype(np.int64).reshape(v, v)
    sources = np.atleast_1d(np.asarray(sources, dtype=np.int64))
    check_memory(f"hop distances from {len(sources):,} sources to the {v:,} nodes of {_spec(graph)}",
                 BYTES_PER_DISTANCE * float(len(sources)) * float(v))
    d = shortest_path(adjacency(graph, reverse=reverse), unweighted=True, directed=True, indices=sources)
    d = np.where(np.isinf(d), -1, d)
    return d.astype(np.int64).reshape(len(sources), v)


@lru_cache(maxsize=64)
def _distances_from_origin(topo) -> np.ndarray:
    return bfs_distances(topo, [0])[0]


def hop_distance(topo, src, dst) -> np.ndarray:
    """Shortest-path hop counts between compute nodes of a topology, vectorized over pairs.

    Cayley topologies use one BFS from node 0 and translation; others run one BFS per distinct source, in
    chunks of :func:`bfs_chunk` sources.

    Args:
        topo: a :class:`~directcoll.topology.model.Topology`.
        src, dst: int arrays of one shape, compute node ids.

    Returns:
        int64 array of the shape of ``src``.

    Raises:
        ResourceError: more BFS work than :data:`MAX_BFS_WORK`.
        TopologyError: some destination is unreachable.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.2 and Sec. 4.1 (the distance between communicating nodes,
    which the congestion deficiency weighs); docs/topology.md, "Metrics and routing".

    >>> from directcoll.topology import parse
    >>> hop_distance(parse("torus:4x4"), [0, 0], [5, 10]).tolist()
    [2, 4]
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


def distance_sum(topo) -> tuple[int, float]:
    """(diameter, sum of the hop distances over ordered pairs of distinct compute nodes) of a topology.

    Cayley topologies need one BFS (every node sees the same distance profile); others run a BFS from every
    compute node, in chunks of :func:`bfs_chunk` sources. The sum is exact (integers below 2^53).

    Returns:
        (diameter in hops (int), sum of distances in hops (float)); (0, 0.0) for one compute node.

    Raises:
        ResourceError: a non-Cayley topology needing more than :data:`MAX_BFS_WORK`, or a chunk of distance rows
            over the memory budget (:func:`bfs_distances`).

    Source: docs/topology.md, "Metrics and routing" (diameter, average distance); the bound |E| / sum of
    distances on the MCF value F of Basu et al. (HPDC'24) Sec. 3.1.1 (:func:`directcoll.cost.bounds.capacity_bound`).

    >>> from directcoll.topology import parse
    >>> distance_sum(parse("ring:4"))
    (2, 16.0)
    """
    n = topo.num_compute
    if n == 1:
        return 0, 0.0
    if topo.is_cayley:
        d = bfs_distances(topo, [0])[0][:n]
        return int(d.max()), float(d.sum() * n)
    check_bfs_work(topo, n, "the diameter and average distance (a BFS from every node)")
    diameter, total = 0, 0.0
    step = bfs_chunk(topo)
    for start in range(0, n, step):
        d = bfs_distances(topo, np.arange(start, min(n, start + step)))[:, :n]
        diameter = max(diameter, int(d.max()))
        total += float(d.sum())
    return diameter, total


def shortest_path_dag(graph: LinkGraph, dist: np.ndarray, *, reverse: bool = False):
    """The links on shortest paths from the BFS root of ``dist`` (to it, with ``reverse``).

    Args:
        graph: a link graph.
        dist: int (V,) hop distances from the root (:func:`bfs_distances`; to the root with ``reverse``).

    Returns:
        (links, near, far, bounds): int64 link ids with ``dist[far] == dist[near] + 1`` sorted by the layer
        ``dist[near]`` (by id within a layer); ``near``, ``far`` the (V,)-indexable link ends nearer to and
        farther from the root (``link_src``, ``link_dst``, swapped with ``reverse``); ``bounds`` (D + 2,) with
        layer k at ``links[bounds[k]:bounds[k + 1]]``.

    Raises:
        Nothing: array operations on ``dist`` (which must be a BFS result of ``graph``).

    Source: docs/topology.md, "Metrics and routing" (the BFS DAG of a source, walked backwards for link loads).

    >>> from directcoll.topology import parse
    >>> t = parse("ring:4")
    >>> links, near, far, bounds = shortest_path_dag(t, bfs_distances(t, [0])[0])
    >>> links.tolist(), bounds.tolist()
    ([0, 1, 2, 7], [0, 2, 4, 4])
    """
    near, far = (graph.link_dst, graph.link_src) if reverse else (graph.link_src, graph.link_dst)
    ok = (dist[near] >= 0) & (dist[far] == dist[near] + 1)
    links = np.flatnonzero(ok)
    links = links[np.argsort(dist[near[links]], kind="stable")]
    bounds = np.searchsorted(dist[near[links]], np.arange(dist.max() + 2))
    return links, near, far, bounds


def path_counts(graph: LinkGraph, dist: np.ndarray, *, reverse: bool = False) -> np.ndarray:
    """Number of shortest paths from the BFS root of ``dist`` to every node: float64 (V,), exact below 2^53.

    With ``reverse``, ``dist`` holds distances *to* a root and the counts are of paths to it. Parallel links
    count as distinct paths.

    Raises:
        Nothing: array operations on ``dist`` (which must be a BFS result of ``graph``).

    Source: docs/topology.md, "Metrics and routing" (sigma, the shortest-path counts of the adaptive split).

    >>> from directcoll.topology import parse
    >>> t = parse("torus:3x3")
    >>> path_counts(t, bfs_distances(t, [0])[0]).tolist()
    [1.0, 1.0, 1.0, 1.0, 2.0, 2.0, 1.0, 2.0, 2.0]
    """
    links, near, far, bounds = shortest_path_dag(graph, dist, reverse=reverse)
    sigma = np.zeros(graph.num_nodes)
    sigma[dist == 0] = 1.0
    for k in range(len(bounds) - 1):
        layer = links[bounds[k]: bounds[k + 1]]
        if len(layer):
            sigma += np.bincount(far[layer], weights=sigma[near[layer]], minlength=graph.num_nodes)
    return sigma


# -- enumerating shortest paths ---------------------------------------------------------------------------
def shortest_paths_from(graph: LinkGraph, source: int, dests, *, max_paths: int = MAX_PATHS_PER_PAIR,
                        dist: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every shortest path from ``source`` to each of ``dests``, by extending layer by layer along the BFS DAG
    of ``source`` (only towards the requested destinations).

    Args:
        graph: a link graph.
        source: the node the paths start at.
        dests: int (D,) destination nodes other than ``source``; unreachable ones get no path.
        max_paths: the cap of the module docstring.
        dist: int (V,) hop distances from ``source`` if the caller has them.

    Returns:
        (dest, offsets, links): int64 (P,), (P + 1,), (R,): path p runs ``links[offsets[p]:offsets[p + 1]]``
        to ``dest[p]``. Paths come by length, then in lexicographic order of their link ids; all paths to one
        destination have its distance as length, so a stable sort by ``dest`` keeps each destination's paths
        lexicographic.

    Raises:
        UnsupportedShapeError: a destination with more than ``max_paths`` shortest paths (checked before any
            path is enumerated; the message names the one with the most).
        ResourceError: the BFS from ``source`` over the memory budget (:func:`bfs_distances`).

    Source: Basu et al. (HPDC'24) Sec. 3.1.4 (path sets of the path-based MCF, and why all shortest paths can be
    exponentially many) and Sec. 5.3 (EwSP); the cap of this module's docstring.

    >>> from directcoll.topology import parse
    >>> dest, offsets, links = shortest_paths_from(parse("ring:4"), 0, [2])
    >>> [links[a:b].tolist() for a, b in zip(offsets[:-1], offsets[1:])]
    [[0, 2], [1, 7]]
    """
    dist = bfs_distances(graph, [source])[0] if dist is None else np.asarray(dist)
    dests = np.asarray(dests, dtype=np.int64)
    sigma = path_counts(graph, dist)
    if len(dests) and sigma[dests].max() > max_paths:
        t = int(dests[np.argmax(sigma[dests])])
        raise UnsupportedShapeError(f"{_spec(graph)}: nodes {source} and {t} have {sigma[t]:.0f} shortest paths, "
                                    f"more than max_paths = {max_paths} that are enumerated")
    dag, near, far, bounds = shortest_path_dag(graph, dist)
    wanted = np.zeros(graph.num_nodes, dtype=bool)
    wanted[dests] = True
    useful = wanted.copy()  # nodes on a shortest path to a wanted destination
    for k in range(len(bounds) - 2, -1, -1):
        layer = dag[bounds[k]: bounds[k + 1]]
        np.logical_or.at(useful, near[layer], useful[far[layer]])
    dag = dag[useful[far[dag]]]
    dag = dag[np.argsort(near[dag], kind="stable")]  # every node's out-links, by id
    start = np.searchsorted(near[dag], np.arange(graph.num_nodes + 1))
    routes = np.zeros((1, 0), np.int64)
    ends = np.array([source], dtype=np.int64)
    found_dest, found_routes = [np.zeros(0, np.int64)], [np.zeros((0, 0), np.int64)]
    while len(ends):
        deg = start[ends + 1] - start[ends]
        parent = np.repeat(np.arange(len(ends)), deg)
        first = np.repeat(start[ends] - np.r_[0, np.cumsum(deg)[:-1]], deg)
        link = dag[first + np.arange(len(parent))]
        routes = np.concatenate([routes[parent], link[:, None]], axis=1)
        ends = far[link]
        mine = wanted[ends]
        if mine.any():
            found_dest.append(ends[mine])
            found_routes.append(routes[mine])
    lengths = np.concatenate([np.full(len(r), r.shape[1], dtype=np.int64) for r in found_routes])
    return (np.concatenate(found_dest), np.r_[0, np.cumsum(lengths)].astype(np.int64),
            np.concatenate([r.ravel() for r in found_routes]))


# -- disjoint paths ---------------------------------------------------------------------------------------
def successive_shortest_paths(graph: LinkGraph, s: int, t: int, k: int) -> list[np.ndarray]:
    """Up to k link-disjoint s -> t paths, greedily: a shortest path, then a shortest path avoiding its links,
    and so on (a *maximal*, not necessarily maximum, disjoint set, shortest first; Basu et al. Sec. 5.2's
    ILP-disjoint candidates). Each BFS is scipy's; a hop u -> v takes the lowest-numbered free link u -> v.

    Returns:
        list of int64 arrays of link ids, at most k; fewer when t becomes unreachable (k empty paths for s == t).

    Raises:
        Nothing: scipy BFS on the remaining links; node ids must be in range.

    Source: Basu et al. (HPDC'24) Sec. 3.1.4 (link-disjoint path sets) and Sec. 5.2 (ILP-disjoint).

    >>> from directcoll.topology import parse
    >>> [p.tolist() for p in successive_shortest_paths(parse("ring:4"), 0, 1, 3)]
    [[0], [1, 7, 5]]
    """
    v = graph.num_nodes
    free = np.ones(len(graph.link_src), dtype=bool)
    out = []
    for _ in range(k):
        idx = np.flatnonzero(free)
        g = sp.csr_matrix((np.ones(len(idx)), (graph.link_src[idx], graph.link_dst[idx])), shape=(v, v))
        dist, pred = shortest_path(g, unweighted=True, directed=True, indices=s, return_predecessors=True)
        if np.isinf(dist[t]):
            break
        nodes = [t]
        while nodes[-1] != s:
            nodes.append(int(pred[nodes[-1]]))
        nodes = nodes[::-1]
        path = []
        for a, b in zip(nodes[:-1], nodes[1:], strict=True):
            e = int(np.flatnonzero(free & (graph.link_src == a) & (graph.link_dst == b))[0])
            free[e] = False
            path.append(e)
        out.append(np.array(path, np.int64))
    return out


@dataclass(frozen=True, eq=False)
class LinkLists:
    """Python lists of a link graph for per-pair searches: ``out_links[u]``, ``in_links[u]`` (link ids, in id
    order, self-loops left out) and the link ends ``link_src``, ``link_dst``.

    Raises:
        Nothing: a record built by :meth:`of`.

    Source: Basu et al. (HPDC'24) Sec. 3.1.4 (disjoint path sets for many pairs; see :func:`max_disjoint_paths`).

    >>> from directcoll.topology import parse
    >>> lists = LinkLists.of(parse("ring:4"))
    >>> lists.out_links[0], lists.in_links[0]
    ([0, 1], [3, 6])
    """

    out_links: list
    in_links: list
    link_src: list
    link_dst: list

    @classmethod
    def of(cls, graph: LinkGraph) -> LinkLists:
        """The lists of ``graph`` (V lists of link ids each). Raises: Nothing. Source: Basu et al. Sec. 3.1.4."""
        out_adj, in_adj = [[] for _ in range(graph.num_nodes)], [[] for _ in range(graph.num_nodes)]
        src, dst = graph.link_src.tolist(), graph.link_dst.tolist()
        for j, (u, v) in enumerate(zip(src, dst, strict=True)):
            if u != v:
                out_adj[u].append(j)
                in_adj[v].append(j)
        return cls(out_adj, in_adj, src, dst)


def max_disjoint_paths(graph: LinkGraph, s: int, t: int, *, lists: LinkLists | None = None) -> list[list[int]]:
    """A *maximum* set of link-disjoint s -> t paths: BFS augmenting paths with unit capacities (Edmonds-Karp),
    so as many paths as the pair's link connectivity, then the unit flow split into simple paths (cycles
    dropped). Basu et al. Sec. 3.1.4's disjoint path sets.

    Args:
        graph: a link graph.
        s, t: distinct nodes.
        lists: :meth:`LinkLists.of` of ``graph``, when many pairs are asked.

    Returns:
        list of paths (lists of link ids).

    Raises:
        TopologyError: s == t (no path of links joins a node to itself here); node ids must be in range.

    Source: Basu et al. (HPDC'24) Sec. 3.1.4 (link-disjoint (s, d) paths as pMCF candidates).

    >>> from directcoll.topology import parse
    >>> max_disjoint_paths(parse("ring:4"), 0, 2)
    [[1, 7], [0, 2]]
    """
    if s == t:
        raise TopologyError(f"disjoint paths need two distinct nodes, got {s} -> {t}")
    lists = LinkLists.of(graph) if lists is None else lists
    out_adj, in_adj, link_src, link_dst = lists.out_links, lists.in_links, lists.link_src, lists.link_dst
    used: set[int] = set()
    while True:
        prev = {s: None}
        queue = deque([s])
        while queue and t not in prev:
            u = queue.popleft()
            for j in out_adj[u]:
                v = link_dst[j]
                if j not in used and v not in prev:
                    prev[v] = (j, True)
                    queue.append(v)
            for j in in_adj[u]:
                v = link_src[j]
                if j in used and v not in prev:
                    prev[v] = (j, False)
                    queue.append(v)
        if t not in prev:
            break
        v = t
        while v != s:
            j, forward = prev[v]
            if forward:
                used.add(j)
                v = link_src[j]
            else:
                used.discard(j)
                v = link_dst[j]
    out_used: dict[int, list[int]] = {}
    for j in sorted(used):
        out_used.setdefault(link_src[j], []).append(j)
    paths = []
    while out_used.get(s):
        u, path, pos = s, [], {s: 0}
        while u != t:
            j = out_used[u].pop()
            v = link_dst[j]
            if v in pos:  # a cycle: drop it
                for w in [link_dst[k] for k in path[pos[v]:]]:
                    pos.pop(w, None)
                del path[pos[v]:]
                pos[v] = len(path)
            else:
                path.append(j)
                pos[v] = len(path)
            u = v
        paths.append(path)
    return paths
