"""Graph operators: new topologies from topologies. The expansions of Zhao et al. (NSDI'25, Sec. 5, App. A.6 and
D): line graph, degree expansion, Cartesian product and power, and the unidirectional-to-bidirectional conversion;
the transpose (App. B); and the punctured topologies of Basu et al.'s failure study (Sec. 5.2).

Every function is a pure function of its input topologies (direct topologies: no switch nodes, no
self-loops), vectorized over links, and returns a :class:`~directcoll.topology.model.Topology` whose ``spec``
rebuilds it through :func:`directcoll.topology.parse` (``line(...)``, ``degree(...,n)``, ``product(...)``,
``power(...,n)``, ``bidir(...)``; docs/expansions.md). Every link of the result comes from one link of an
input and carries that link's bandwidth and latency, so a node's bandwidth is (degree x link bandwidth) as
for the other generators. Links are laid out node-major (all links of node 0 first).

Node numbering, which the schedule expansions of :mod:`directcoll.synthesis.expansions` rely on:

- ``line_graph(G)``: node e is link e of G (in G's link order).
- ``degree_expansion(G, n)``: node v of copy i is ``i * N + v``.
- ``cartesian_product(G1, G2, ...)``: node (u1, u2, ...) is ``ravel_multi_index((u1, u2, ...), (N1, N2, ...))``
  (row-major, the last factor varies fastest); ``cartesian_power(G, n)`` likewise with n equal factors.
- ``bidirectional(G)``: the nodes of G.
- ``punctured(G, links=K, nodes=K, seed=S)``: the surviving compute nodes of G in their order, renumbered
  densely ``0..N-K-1``, then G's switch nodes.

Products, powers, degree expansions and bidirectional versions of Cayley topologies (tori, rings, circulants,
Hamming graphs, ...) are Cayley topologies again (``port_offsets`` kept), so their routing stays
translation-invariant.
"""

from __future__ import annotations

import re
from math import prod

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from directcoll.errors import SpecError, TopologyError
from directcoll.topology.model import Topology

__all__ = [
    "bidirectional",
    "cables",
    "cartesian_power",
    "cartesian_product",
    "degree_expansion",
    "line_graph",
    "punctured",
    "punctured_spec",
    "regular_degree",
    "transpose",
]


# -- checks ----------------------------------------------------------------------------------------------------
def _check_direct(g, what: str) -> Topology:
    if not isinstance(g, Topology):
        raise TopologyError(f"{what}: expected a Topology, got {type(g).__name__} {g!r}")
    if g.num_nodes != g.num_compute:
        raise TopologyError(f"{what}: {g.spec} has {g.num_nodes - g.num_compute} switch nodes; expansions apply "
                            "to direct topologies (every node a rank)")
    if np.any(g.link_src == g.link_dst):
        raise TopologyError(f"{what}: {g.spec} has self-loops; expansions need a topology without them")
    return g


def _check_count(what: str, name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or int(value) < minimum:
        raise SpecError(f"{what}: {name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def regular_degree(g: Topology) -> int | None:
    """d when every compute node of ``g`` has in-degree and out-degree d (parallel links counted), else None
    (also for topologies with switch nodes).

    Raises:
        Nothing: counts the link arrays.

    Source: Zhao et al. (NSDI'25) Sec. 3 (d-regular topologies, the precondition of the expansions of Sec. 5 /
    Def. 13).

    >>> from directcoll.topology.families import complete, mesh
    >>> regular_degree(complete(4)), regular_degree(mesh((3, 3)))
    (3, None)
    """
    if g.num_nodes != g.num_compute:
        return None
    out = np.bincount(g.link_src, minlength=g.num_nodes)
    inn = np.bincount(g.link_dst, minlength=g.num_nodes)
    d = int(out[0])
    return d if np.all(out == d) and np.all(inn == d) else None


def _topology(kind: str, spec: str, n: int, src, dst, bw, lat, *, params: dict, shape=None,
              port_offsets=None) -> Topology:
    return Topology(spec=spec, kind=kind, num_compute=n, num_nodes=n, link_src=np.asarray(src, np.int64),
                    link_dst=np.asarray(dst, np.int64), link_bandwidth=np.asarray(bw, float),
                    link_latency=np.asarray(lat, float), shape=None if shape is None else tuple(shape),
                    wraps=shape is not None, port_offsets=port_offsets, params=params)


def _node_major(src: np.ndarray, *cols: np.ndarray) -> list[np.ndarray]:
    order = np.argsort(src, kind="stable")
    return [src[order]] + [c[order] for c in cols]


def _cayley_layout(g: Topology) -> bool:
    """Links laid out as ``node*K + port`` with the offsets of a Cayley graph of Z_shape (model.py)."""
    if g.port_offsets is None or g.shape is None:
        return False
    k = len(g.port_offsets)
    return g.num_links == g.num_compute * k and np.array_equal(g.link_src, np.repeat(np.arange(g.num_compute), k))


# -- transpose -------------------------------------------------------------------------------------------------
def transpose(g: Topology) -> Topology:
    """The transpose graph G^T (Zhao et al. App. B): every link reversed, **link ids and node ids kept**
    (link e of G^T is link e of G turned around), so a schedule for G^T names the same ranks. Not laid out
    node-major and not Cayley; meant for building reduce-scatter schedules (Theorem 1), not for routing.

    Raises:
        TopologyError: switch nodes or self-loops (as every expansion).

    >>> from directcoll.topology.families import ring
    >>> transpose(ring(3, bidirectional=False)).link_dst.tolist()
    [0, 1, 2]
    """
    g = _check_direct(g, "transpose")
    return _topology(g.kind, f"transpose({g.spec})", g.num_compute, g.link_dst, g.link_src, g.link_bandwidth,
                     g.link_latency, params={**g.params, "transposed": True})


# -- line graph ------------------------------------------------------------------------------------------------
def line_edges(g: Topology) -> tuple[np.ndarray, np.ndarray]:
    """The edges (e, f) of L(G), Def. 12: every link f leaving the head of link e, for every link e; int64
    arrays in node-major order (e ascending, then f in G's link order). Includes f = reverse of e.

    Raises:
        Nothing: index arithmetic on a topology's link arrays (callers check for switches and self-loops).

    >>> from directcoll.topology.families import ring
    >>> [a.tolist() for a in line_edges(ring(3, bidirectional=False))]
    [[0, 1, 2], [1, 2, 0]]
    """
    n = g.num_compute
    out_order = np.argsort(g.link_src, kind="stable")
    out_start = np.r_[0, np.cumsum(np.bincount(g.link_src, minlength=n))]
    head = g.link_dst
    count = out_start[head + 1] - out_start[head]
    e = np.repeat(np.arange(g.num_links, dtype=np.int64), count)
    first = np.repeat(out_start[head] - np.r_[0, np.cumsum(count)[:-1]], count)
    f = out_order[first + np.arange(len(e))]
    return e, f.astype(np.int64)


_LINE_POWER = re.compile(r"^line(?:\^(\d+))?\((.*)\)$")


def _line_spec(spec: str, k: int) -> str:
    m = _LINE_POWER.match(spec)
    if m and _balanced(m.group(2)):
        k += int(m.group(1) or 1)
        spec = m.group(2)
    return f"line({spec})" if k == 1 else f"line^{k}({spec})"


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return False
    return depth == 0


def line_graph(g: Topology, k: int = 1) -> Topology:
    """Line graph L^K(G) (Zhao et al. Def. 12): d^K N nodes, degree d, for an N-node d-regular G.

    L(G) iterated k times (L^k). Every link e = (u -> v) of G becomes node e of L(G), and (e -> f) is a link of
    L(G) for every link f leaving v. We read Def. 12 literally ("for every uv, vw pair ... (uv, vw) is an
    edge"): w = u is allowed, so in the line graph of a bidirectional graph node uv is adjacent to its
    back-edge vu. Only this reading keeps L(G) d-regular with dN nodes (Table 3) and makes the schedule of
    Def. 1 work. L(G) is a digraph even when G is bidirectional.

    Size: L^k(G) of an N-node d-regular G has d^k N nodes, degree d, diameter D(G) + k (G not a directed
    cycle). Link (e -> f) carries the bandwidth and latency of link f (the link of G the data continues on).
    Parallel links of G are distinct nodes of L(G).

    Raises:
        TopologyError: switch nodes or self-loops in G (a self-loop would be a node adjacent to itself).
        SpecError: k < 1.

    >>> from directcoll.topology.families import ring
    >>> g = line_graph(ring(4), 2)
    >>> g.spec, g.num_compute, g.num_links
    ('line^2(ring:4)', 16, 32)
    """
    g = _check_direct(g, "line graph")
    k = _check_count(f"line graph of {g.spec}", "k", k)
    for _ in range(k):
        e, f = line_edges(g)
        g = _topology("line", _line_spec(g.spec, 1), g.num_links, e, f, g.link_bandwidth[f], g.link_latency[f],
                      params={"base": g.spec})
    return g


# -- degree expansion ------------------------------------------------------------------------------------------
def degree_expansion(g: Topology, n: int) -> Topology:
    """Degree expansion G * n (Zhao et al. Def. 13): nN nodes, degree nd.

    n copies v_0..v_(n-1) of every node v, and a link u_i -> w_j for every link u -> w of G and all i, j
    (i = j included).

    Size: nN nodes (v_i is node ``i * N + v``), degree nd, n^2 |E_G| links. Node (i, u)'s links are in
    G's port order, each port p repeated for j = i, i+1, ... (mod n), so a Cayley G of Z_shape gives a Cayley
    G * n of Z_n x Z_shape. Link (u_i -> w_j) carries the bandwidth and latency of (u -> w).

    Raises:
        TopologyError: switch nodes, self-loops, or a G that is not d-regular (Def. 13 defines G * n for
            N-node d-regular G without self-loops).
        SpecError: n < 1.

    >>> from directcoll.topology.families import ring
    >>> g = degree_expansion(ring(4), 2)
    >>> g.num_compute, g.num_links, g.shape
    (8, 32, (2, 4))
    """
    g = _check_direct(g, "degree expansion")
    n = _check_count(f"degree expansion of {g.spec}", "n", n)
    if regular_degree(g) is None:
        raise TopologyError(f"degree expansion: {g.spec} is not regular (in- and out-degrees differ between "
                            "nodes); Def. 13 needs a d-regular topology")
    big_n = g.num_compute
    spec = f"degree({g.spec},{n})"
    if n == 1:
        return _topology("degree", spec, big_n, g.link_src, g.link_dst, g.link_bandwidth, g.link_latency,
                         params={"base": g.spec, "n": 1}, shape=g.shape, port_offsets=g.port_offsets)
    i = np.arange(n, dtype=np.int64)[:, None, None]        # copy of the tail
    delta = np.arange(n, dtype=np.int64)[None, None, :]    # j - i (mod n)
    link = np.arange(g.num_links)[None, :, None]
    shape3 = (n, g.num_links, n)
    src = np.broadcast_to(i * big_n + g.link_src[link], shape3).ravel()
    dst = np.broadcast_to(((i + delta) % n) * big_n + g.link_dst[link], shape3).ravel()
    links = np.broadcast_to(link, shape3).ravel()
    src, dst, links = _node_major(src, dst, links)
    shape = offsets = None
    if _cayley_layout(g):
        k = len(g.port_offsets)
        shape = (n,) + tuple(g.shape)
        offsets = np.concatenate([np.repeat(np.arange(n), k)[:, None], np.tile(g.port_offsets, (n, 1))], axis=1)
        offsets = offsets.reshape(n, k, -1).transpose(1, 0, 2).reshape(n * k, -1)  # port p*n + delta
    return _topology("degree", spec, n * big_n, src, dst, g.link_bandwidth[links], g.link_latency[links],
                     params={"base": g.spec, "n": n}, shape=shape, port_offsets=offsets)


# -- Cartesian product and power -------------------------------------------------------------------------------
def cartesian_product(*graphs: Topology) -> Topology:
    """Cartesian product G1 x G2 x ... (Zhao et al. Def. 3, Sec. 5.3): prod N_i nodes, degree sum d_i.

    Nodes are tuples (u1, u2, ...), and (u1, .., ui, ..) -> (u1, .., wi, ..) for every link ui -> wi of Gi.

    Size: prod N_i nodes, degree sum d_i, diameter sum D(G_i). Node (u1, u2, ...) is
    ``ravel_multi_index((u1, u2, ...), (N1, N2, ...))``; its links are those of G1 (in G1's order), then G2's,
    .... Products of Cayley topologies are Cayley topologies of the product group (shape = concatenated
    shapes). Links carry the bandwidth and latency of the factor link they copy.

    Raises:
        TopologyError: fewer than two factors, or a factor with switch nodes or self-loops.

    >>> from directcoll.topology.families import ring
    >>> g = cartesian_product(ring(3), ring(4))
    >>> g.spec, g.num_compute, g.shape
    ('product(ring:3,ring:4)', 12, (3, 4))
    """
    if len(graphs) < 2:
        raise TopologyError(f"cartesian product: needs at least two factors, got {len(graphs)}")
    gs = [_check_direct(g, "cartesian product") for g in graphs]
    return _product(gs, "product(" + ",".join(g.spec for g in gs) + ")", "product",
                    {"factors": tuple(g.spec for g in gs)})


def cartesian_power(g: Topology, n: int) -> Topology:
    """Cartesian power G^(box n) = G x ... x G, n factors (Zhao et al. Sec. 5.3, App. D.3): N^n nodes, degree nd.

    Size: N^n nodes, degree nd, diameter n D(G); numbering and links as :func:`cartesian_product`.

    Raises:
        TopologyError: switch nodes or self-loops.
        SpecError: n < 1.

    >>> from directcoll.topology.families import ring
    >>> g = cartesian_power(ring(3, bidirectional=False), 2)
    >>> g.spec, g.num_compute, g.num_links
    ('power(ring:3:uni,2)', 9, 18)
    """
    g = _check_direct(g, "cartesian power")
    n = _check_count(f"cartesian power of {g.spec}", "n", n)
    return _product([g] * n, f"power({g.spec},{n})", "power", {"base": g.spec, "n": n})


def _product(gs: list[Topology], spec: str, kind: str, params: dict) -> Topology:
    sizes = [g.num_compute for g in gs]
    total = prod(sizes)
    coords = np.stack(np.unravel_index(np.arange(total, dtype=np.int64), sizes), axis=-1)
    strides = np.array([prod(sizes[i + 1:]) for i in range(len(sizes))], dtype=np.int64)
    src, dst, bw, lat, rank = [], [], [], [], []
    for i, g in enumerate(gs):
        # every node x every link of G_i leaving its coordinate i
        out_order = np.argsort(g.link_src, kind="stable")
        deg = np.bincount(g.link_src, minlength=g.num_compute)
        start = np.r_[0, np.cumsum(deg)]
        c = coords[:, i]
        count = deg[c]
        node = np.repeat(np.arange(total, dtype=np.int64), count)
        first = np.repeat(start[c] - np.r_[0, np.cumsum(count)[:-1]], count)
        link = out_order[first + np.arange(len(node))]
        src.append(node)
        dst.append(node + (g.link_dst[link] - g.link_src[link]) * strides[i])
        bw.append(g.link_bandwidth[link])
        lat.append(g.link_latency[link])
        rank.append(np.full(len(node), i))
    src, dst, bw, lat, rank = (np.concatenate(a) for a in (src, dst, bw, lat, rank))
    order = np.lexsort((rank, src))  # node-major, then factor order (within a factor: its port order)
    shape = offsets = None
    if len(gs) > 1 and all(_cayley_layout(g) for g in gs):
        shape = sum((tuple(g.shape) for g in gs), ())
        width = [len(g.shape) for g in gs]
        blocks = []
        for i, g in enumerate(gs):
            pad = np.zeros((len(g.port_offsets), sum(width)), dtype=np.int64)
            pad[:, sum(width[:i]): sum(width[:i + 1])] = g.port_offsets
            blocks.append(pad)
        offsets = np.concatenate(blocks)
    elif len(gs) == 1 and _cayley_layout(gs[0]):
        shape, offsets = gs[0].shape, gs[0].port_offsets
    return _topology(kind, spec, total, src[order], dst[order], bw[order], lat[order], params=params,
                     shape=shape, port_offsets=offsets)


# -- unidirectional to bidirectional ---------------------------------------------------------------------------
def bidirectional(g: Topology) -> Topology:
    """G united with its transpose, G' = G u G^T (Zhao et al. App. A.6): N nodes, degree 2d.

    Every link u -> v of G also gives v -> u, so an N-node d-regular digraph becomes an N-node 2d-regular
    bidirectional topology.

    The union is taken as multigraphs: a link whose reverse already exists in G (a 2-cycle, or a G that is
    already bidirectional) is doubled, which keeps the degree 2d. Node u's links are G's links of u, then the
    reversed in-links of u (in G's link order); a Cayley G with offsets g_k gives the Cayley G' with offsets
    g_k, -g_k. Reversed links carry the bandwidth and latency of the link they reverse. App. A.6's schedule
    (half of every shard on each direction) keeps T_L and T_B when G is reverse-symmetric; that is not
    checked here.

    Raises:
        TopologyError: switch nodes or self-loops.

    >>> from directcoll.topology.families import ring
    >>> bidirectional(ring(4, bidirectional=False)).link_dst.tolist()
    [1, 3, 2, 0, 3, 1, 0, 2]
    """
    g = _check_direct(g, "bidirectional")
    spec = f"bidir({g.spec})"
    if _cayley_layout(g):
        offsets = np.concatenate([g.port_offsets, -g.port_offsets])
        shape = tuple(g.shape)
        n, k = g.num_compute, len(offsets)
        coords = np.stack(np.unravel_index(np.arange(n), shape), axis=-1)
        nbr = (coords[:, None, :] + offsets[None, :, :]) % np.asarray(shape)
        dst = np.ravel_multi_index(tuple(np.moveaxis(nbr, -1, 0)), shape).reshape(-1)
        half = len(g.port_offsets)
        # link u*k + p: p < half is G's link u*half + p; else the reverse of G's link (u - g_p)*half + p
        fwd = np.arange(n)[:, None] * half + np.arange(half)[None, :]
        rev = dst.reshape(n, k)[:, half:] * half + np.arange(half)[None, :]
        src_link = np.concatenate([fwd, rev], axis=1).ravel()
        return _topology("bidir", spec, n, np.repeat(np.arange(n), k), dst, g.link_bandwidth[src_link],
                         g.link_latency[src_link], params={"base": g.spec}, shape=shape,
                         port_offsets=offsets.astype(np.int64))
    src = np.concatenate([g.link_src, g.link_dst])
    dst = np.concatenate([g.link_dst, g.link_src])
    links = np.concatenate([np.arange(g.num_links), np.arange(g.num_links)])
    src, dst, links = _node_major(src, dst, links)
    return _topology("bidir", spec, g.num_compute, src, dst, g.link_bandwidth[links], g.link_latency[links],
                     params={"base": g.spec})


# -- failures: punctured topologies ----------------------------------------------------------------------------
def cables(g: Topology) -> np.ndarray:
    """The cable of every link: int64 (L,), cable ids ``0..C-1`` in order of first appearance.

    A bidirectional cable is a link u -> v together with a link v -> u: the i-th link u -> v (in link order) is
    paired with the i-th link v -> u, so parallel cables stay distinct; a link without such a partner (a
    unidirectional topology) is a cable on its own, and so is every self-loop.

    Raises:
        Nothing: index arithmetic on the link arrays.

    Source: Basu et al. (HPDC'24) Sec. 5.2 (link failures remove a bidirectional cable, both directions).

    >>> from directcoll.topology.families import ring
    >>> cables(ring(3)).tolist(), cables(ring(3, bidirectional=False)).tolist()
    ([0, 1, 2, 0, 1, 2], [0, 1, 2])
    """
    lo, hi = np.minimum(g.link_src, g.link_dst), np.maximum(g.link_src, g.link_dst)
    backward = (g.link_src > g.link_dst).astype(np.int64)
    ids = np.arange(g.num_links, dtype=np.int64)
    order = np.lexsort((ids, backward, hi, lo))
    key = (lo * g.num_nodes + hi) * 2 + backward
    ks = key[order]
    first = np.r_[0, np.flatnonzero(ks[1:] != ks[:-1]) + 1]
    rank = np.arange(g.num_links) - np.repeat(first, np.diff(np.r_[first, g.num_links]))
    rank_of = np.empty(g.num_links, dtype=np.int64)
    rank_of[order] = rank
    loop = g.link_src == g.link_dst
    cable_key = np.stack([lo, hi, np.where(loop, ids, rank_of)], axis=1)  # a self-loop is always alone
    _, first_seen, inverse = np.unique(cable_key, axis=0, return_index=True, return_inverse=True)
    relabel = np.empty(len(first_seen), dtype=np.int64)
    relabel[np.argsort(first_seen, kind="stable")] = np.arange(len(first_seen))
    return relabel[inverse.ravel()]


def punctured(g: Topology, *, links: int = 0, nodes: int = 0, seed: int = 0) -> Topology:
    """G minus random cables and/or compute nodes drawn by a seed (Basu et al. Sec. 5.2); refused if disconnected.

    ``nodes`` random compute nodes and ``links`` random cables removed: the punctured topologies of Basu et
    al.'s failure study (Sec. 5.2, Fig. 5: 3D tori with 3 random edges or 3 random nodes removed).

    ``numpy.random.default_rng(seed)`` first draws the compute nodes to remove (with every link touching them),
    then the cables (:func:`cables`: both directions of a bidirectional cable go together) among those left, so
    a seed names one topology. The surviving compute nodes keep their order and are renumbered densely
    ``0..N-nodes-1`` (switch nodes follow, as in every topology); links keep their order, bandwidth and latency.
    The result has ``kind == "punctured"``, no grid shape and no Cayley structure (``params`` records the base
    spec and the removed original node ids and link ids), and its spec
    ``punctured(SPEC,links=K,nodes=K,seed=S)`` rebuilds it.

    Raises:
        SpecError: a negative count or seed, or more nodes or cables than G has (at least 2 compute nodes must
            remain).
        TopologyError: the compute nodes left cannot all reach each other (the message names the seed: try
            another one).

    >>> from directcoll.topology.families import torus
    >>> g = punctured(torus((4, 4)), links=2, seed=1)
    >>> g.spec, g.num_links
    ('punctured(torus:4x4,links=2,seed=1)', 60)
    """
    if not isinstance(g, Topology):
        raise TopologyError(f"punctured: expected a Topology, got {type(g).__name__} {g!r}")
    what = f"punctured({g.spec})"
    links = _check_count(what, "links", links, 0)
    nodes = _check_count(what, "nodes", nodes, 0)
    seed = _check_count(what, "seed", seed, 0)
    spec = punctured_spec(g.spec, links, nodes, seed)
    n = g.num_compute
    if nodes > n - 2:
        raise SpecError(f"{spec}: nodes={nodes} would leave {n - nodes} of the {n} compute nodes of {g.spec}; at "
                        "least 2 must remain")
    rng = np.random.default_rng(seed)
    gone_nodes = np.sort(rng.choice(n, size=nodes, replace=False)) if nodes else np.zeros(0, np.int64)
    alive = np.ones(g.num_nodes, dtype=bool)
    alive[gone_nodes] = False
    keep = alive[g.link_src] & alive[g.link_dst]
    cable = cables(g)
    left = np.unique(cable[keep])
    if links > len(left):
        raise SpecError(f"{spec}: links={links} but {g.spec} has only {len(left)} cables"
                        + (" left after removing the nodes" if nodes else ""))
    gone_cables = rng.choice(left, size=links, replace=False) if links else np.zeros(0, np.int64)
    keep &= ~np.isin(cable, gone_cables)
    new_id = np.cumsum(alive) - 1
    src, dst = new_id[g.link_src[keep]], new_id[g.link_dst[keep]]
    num_nodes, num_compute = int(alive.sum()), n - nodes
    adjacency = sp.csr_matrix((np.ones(len(src)), (src, dst)), shape=(num_nodes, num_nodes))
    _, labels = connected_components(adjacency, directed=True, connection="strong")
    if len(np.unique(labels[:num_compute])) != 1:
        cut = np.flatnonzero(np.isin(cable, gone_cables))
        raise TopologyError(f"{spec}: removing {_removed(g, gone_nodes, cut)} disconnects the compute nodes (seed "
                            f"{seed}); try another seed or remove fewer")
    params = {"base": g.spec, "links": links, "nodes": nodes, "seed": seed,
              "removed_nodes": tuple(int(v) for v in gone_nodes),
              "removed_links": tuple(int(e) for e in np.flatnonzero(~keep))}
    return Topology(spec=spec, kind="punctured", num_compute=num_compute, num_nodes=num_nodes,
                    link_src=src.astype(np.int64), link_dst=dst.astype(np.int64),
                    link_bandwidth=g.link_bandwidth[keep].astype(float),
                    link_latency=g.link_latency[keep].astype(float), params=params)


def _removed(g: Topology, gone_nodes: np.ndarray, gone_links: np.ndarray) -> str:
    parts = []
    if len(gone_nodes):
        parts.append(f"nodes {', '.join(str(int(v)) for v in gone_nodes)}")
    if len(gone_links):
        pairs = sorted({(int(min(u, v)), int(max(u, v))) for u, v in zip(g.link_src[gone_links], g.link_dst[gone_links],
                                                                          strict=True)})
        parts.append("cables " + ", ".join(f"{u}-{v}" for u, v in pairs))
    return " and ".join(parts)


def punctured_spec(base: str, links: int = 0, nodes: int = 0, seed: int = 0) -> str:
    """The canonical spec of :func:`punctured`: ``punctured(BASE,links=K,nodes=K,seed=S)``, a zero count left
    out (``links=0`` kept when both are zero), the seed always written.

    Raises:
        Nothing: string formatting.

    Source: Basu et al. (HPDC'24) Sec. 5.2 (punctured topologies); docs/expansions.md (spec grammar).

    >>> punctured_spec("torus:4x4", nodes=1)
    'punctured(torus:4x4,nodes=1,seed=0)'
    """
    args = [f"links={links}"] if links or not nodes else []
    args += [f"nodes={nodes}"] if nodes else []
    return f"punctured({base},{','.join(args + [f'seed={seed}'])})"
