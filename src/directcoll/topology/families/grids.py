"""Grid families: torus, mesh, HyperX, hypercube and HammingMesh (the Swing paper's topologies, Sec. 2.2 and
5.4), and the twisted torus and twisted hypercube (Zhao et al. refs. [26], [28]).

Every one keeps the grid ``shape`` of its compute nodes, so algorithms that need coordinates (Swing, bucket,
dimension-order routing) can ask: node r sits at ``numpy.unravel_index(r, shape)`` (row-major, the last
dimension fastest), except the twisted torus, whose node ids follow its group (:func:`twisted_torus_grid`).
"""

from __future__ import annotations

import math

import numpy as np

from directcoll.errors import SpecError
from directcoll.topology.families.base import cayley, check_shape, from_links, need_int, sized, spec_shape
from directcoll.topology.model import DEFAULT_LINK_BANDWIDTH, DEFAULT_LINK_LATENCY, Topology
from directcoll.topology.sizes import Size, as_float, brief, capped_pow, cayley_size, graph_size

__all__ = ["hammingmesh", "hypercube", "hyperx", "mesh", "torus", "twisted_hypercube", "twisted_torus",
           "twisted_torus_grid"]


@sized(lambda shape, simple=False: cayley_size(math.prod(shape), sum(1 if simple and d == 2 else 2 for d in shape),
                                               len(shape)))
def torus(shape, *, simple: bool = False, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
          link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """D-dimensional torus d0 x d1 x ... (every d_i >= 2): links to both neighbours in every dimension.

    Size: N = prod(d_i) nodes, 2D directed links out of every node (2D ports, Swing Sec. 2.2). A dimension
    of size 2 has two parallel cables between its two nodes (the "+" and the "-" port), so every node keeps
    2D ports, as a torus is cabled. With ``simple=True`` (spec ``torus:3x3x2:simple``) such a dimension has
    one cable instead, so the graph is simple (degree 2D minus the number of size-2 dimensions), the form
    Zhao et al.'s Theorem 13 needs. Node r sits at ``unravel_index(r, shape)``; a Cayley graph of Z_shape.

    Parameters
    ----------
    shape : tuple of int
        The side d_i of every dimension, in nodes (each >= 2); the spec ``torus:8x8`` is ``shape=(8, 8)``.
    simple : bool, default False
        One cable, not two, along a dimension of size 2.
    link_bandwidth : float, default 5e10
        Every directed link's bandwidth in bytes/s (5e10 bytes/s = 400 Gb/s, the Swing paper's links).
    link_latency : float, default 1e-7
        Every directed link's latency in seconds (100 ns).

    Returns
    -------
    Topology
        N = prod(d_i) compute nodes and no switches, ``shape`` and the ports' ``port_offsets`` kept.

    Raises
    ------
    SpecError
        An empty shape or a dimension smaller than 2.

    Examples
    --------
    >>> torus((4, 4)).num_links, torus((3, 2), simple=True).out_degree.tolist()
    (64, [3, 3, 3, 3, 3, 3])
    >>> float(torus((4, 4), link_bandwidth=12.5e9).link_bandwidth[0])  # 100 Gb/s links
    12500000000.0
    """
    shape = check_shape("torus", shape)
    offsets = []
    for i in range(len(shape)):
        for sign in ((1,) if simple and shape[i] == 2 else (1, -1)):
            e = np.zeros(len(shape), dtype=np.int64)
            e[i] = sign
            offsets.append(e)
    spec = f"torus:{spec_shape(shape)}" + (":simple" if simple and 2 in shape else "")
    return cayley("torus", spec, shape, np.array(offsets), link_bandwidth, link_latency,
                  {"simple": True} if simple and 2 in shape else None)


def _grid_links(shape: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Directed neighbour links of a mesh, in both directions along every dimension."""
    n = int(np.prod(shape))
    coords = np.stack(np.unravel_index(np.arange(n), shape), axis=-1)
    src, dst = [], []
    for i, d in enumerate(shape):
        ok = coords[:, i] + 1 < d
        nb = coords[ok].copy()
        nb[:, i] = nb[:, i] + 1
        a = np.flatnonzero(ok)
        b = np.ravel_multi_index(tuple(nb.T), shape)
        src += [a, b]
        dst += [b, a]
    return np.concatenate(src).astype(np.int64), np.concatenate(dst).astype(np.int64)


def _mesh_size(shape) -> Size:
    n = math.prod(shape)
    if min(shape) < 1:
        return graph_size(0, 0, 0)
    return graph_size(n, 2 * sum(n // d * (d - 1) for d in shape), 2 * len(shape), dims=len(shape))


@sized(_mesh_size)
def mesh(shape, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
         link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """D-dimensional mesh d0 x d1 x ...: a torus without its wrap-around links.

    Size: N = prod(d_i) nodes, up to 2D ports (a node on a face has fewer). Node r sits at
    ``unravel_index(r, shape)``; links are those along dimension 0 (both directions), then dimension 1, ...

    Parameters
    ----------
    shape : tuple of int
        The side d_i of every dimension, in nodes (each >= 2).
    link_bandwidth : float, default 5e10
        Every directed link's bandwidth in bytes/s (400 Gb/s).
    link_latency : float, default 1e-7
        Every directed link's latency in seconds (100 ns).

    Returns
    -------
    Topology
        N = prod(d_i) compute nodes, ``shape`` kept, no wrap-around.

    Raises
    ------
    SpecError
        An empty shape or a dimension smaller than 2.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.2 (D-dimensional torus, of which this is the wrap-less form)
    and Sec. 5.4.1 (HammingMesh boards are 2D meshes).

    Examples
    --------
    >>> mesh((3, 3)).num_links
    24
    """
    shape = check_shape("mesh", shape)
    src, dst = _grid_links(shape)
    return Topology(spec=f"mesh:{spec_shape(shape)}", kind="mesh", num_compute=int(np.prod(shape)),
                    num_nodes=int(np.prod(shape)), link_src=src, link_dst=dst,
                    link_bandwidth=np.full(len(src), float(link_bandwidth)),
                    link_latency=np.full(len(src), float(link_latency)), shape=shape, wraps=False)


@sized(lambda k: cayley_size(capped_pow(2, k), k, k, extra=16 * as_float(k * capped_pow(2, k))))
def hypercube(dim: int, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
              link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Hypercube Q_k of 2^k nodes: node r linked to r XOR 2^i for every i < k (k ports, one cable each).

    Its grid shape is (2,)*k, so torus algorithms see it as a torus of size-2 dimensions whose "+" and "-"
    neighbours coincide on the same single cable (Swing Sec. 2.2); a Cayley graph of Z_2^k.

    Parameters
    ----------
    dim : int
        k, the number of dimensions (>= 1): 2^k nodes.
    link_bandwidth : float, default 5e10
        Every directed link's bandwidth in bytes/s (400 Gb/s).
    link_latency : float, default 1e-7
        Every directed link's latency in seconds (100 ns).

    Returns
    -------
    Topology
        2^k compute nodes of k ports each, shape (2,)*k.

    Raises
    ------
    SpecError
        k < 1.

    Examples
    --------
    >>> hypercube(3).out_degree.tolist()
    [3, 3, 3, 3, 3, 3, 3, 3]
    """
    if int(dim) < 1:
        raise SpecError(f"hypercube: dimension must be >= 1, got {dim}")
    dim = int(dim)
    return cayley("hypercube", f"hypercube:{dim}", (2,) * dim, np.eye(dim, dtype=np.int64),
                  link_bandwidth, link_latency)


@sized(lambda shape: cayley_size(math.prod(shape), sum(d - 1 for d in shape), len(shape)))
def hyperx(shape, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
           link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """HyperX d0 x d1 x ... (Ahn et al., SC'09): every node linked to every node of its row in every dimension.

    It is the Cartesian product of complete graphs K_{d0} x K_{d1} x ... (Swing Sec. 5.4.2). Size:
    N = prod(d_i) nodes, sum(d_i - 1) ports per node; a Cayley graph of Z_shape.

    Raises:
        SpecError: an empty shape or a dimension smaller than 2.

    >>> int(hyperx((4, 4)).out_degree[0])
    6
    """
    shape = check_shape("hyperx", shape)
    offsets = []
    for i, d in enumerate(shape):
        for delta in range(1, d):
            e = np.zeros(len(shape), dtype=np.int64)
            e[i] = delta
            offsets.append(e)
    return cayley("hyperx", f"hyperx:{spec_shape(shape)}", shape, np.array(offsets), link_bandwidth,
                  link_latency)


def _hammingmesh_size(board, grid) -> Size:
    (a, b), (x, y) = board, grid
    rows, cols = x * a, y * b
    links = 2 * (rows * y * max(b - 1, 0) + cols * x * max(a - 1, 0) + 2 * rows * y + 2 * cols * x)
    return graph_size(rows * cols + rows + cols, links, max(8, 2 * x, 2 * y), dims=2)


@sized(_hammingmesh_size)
def hammingmesh(board, grid, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
                link_latency: float = DEFAULT_LINK_LATENCY, board_latency: float | None = None) -> Topology:
    """HammingMesh (Hoefler et al., SC'22): a x b mesh boards in an x x y grid, rows and columns joined by fat trees.

    ``board = (a, b)``: every board is an a x b 2D mesh (PCB traces, latency ``board_latency``, default
    ``link_latency``). ``grid = (x, y)``: boards arranged in x rows by y columns, so the compute nodes form a
    (x*a) x (y*b) grid and node r sits at ``unravel_index(r, (x*a, y*b))``. Every global row joins the
    west ports of its boards' left-edge nodes and the east ports of their right-edge nodes through one fat
    tree; every global column joins the north and south ports of its boards' edge nodes the same way (Swing
    Sec. 5.4.1).

    Model choice: each fat tree is one *non-blocking switch node* (any port reaches any other through it,
    at link bandwidth, in two hops: node -> switch -> node). Row switches are nodes ``N .. N+x*a-1``, column
    switches follow. With 1x1 boards every node has two cables to its row switch and two to its column
    switch, the switch-based equivalent of a 2D HyperX.

    Raises:
        SpecError: a board or grid size smaller than 1, or a single board (x = y = 1).

    >>> t = hammingmesh((2, 2), (2, 2))
    >>> t.num_compute, t.num_nodes
    (16, 24)
    """
    a, b = check_shape("hammingmesh board", board, minimum=1)
    x, y = check_shape("hammingmesh grid", grid, minimum=1)
    if len((a, b)) != 2 or x * y < 2:
        raise SpecError(f"hammingmesh: need a 2D board and at least 2 boards, got board {board}, grid {grid}")
    rows, cols = x * a, y * b
    n = rows * cols
    gr, gc = np.unravel_index(np.arange(n), (rows, cols))
    i, j = gr % a, gc % b
    src, dst, lat = [], [], []
    blat = link_latency if board_latency is None else board_latency

    def add(u, v, latency):
        src.extend([u, v])
        dst.extend([v, u])
        lat.extend([np.full(len(u), latency)] * 2)

    node = np.arange(n)
    east = j + 1 < b
    add(node[east], node[east] + 1, blat)
    south = i + 1 < a
    add(node[south], node[south] + cols, blat)
    row_switch = n + gr
    col_switch = n + rows + gc
    add(node[j == 0], row_switch[j == 0], link_latency)          # west ports
    add(node[j == b - 1], row_switch[j == b - 1], link_latency)  # east ports
    add(node[i == 0], col_switch[i == 0], link_latency)          # north ports
    add(node[i == a - 1], col_switch[i == a - 1], link_latency)  # south ports
    src = np.concatenate(src).astype(np.int64)
    dst = np.concatenate(dst).astype(np.int64)
    return Topology(spec=f"hammingmesh:{a}x{b}:{x}x{y}", kind="hammingmesh", num_compute=n,
                    num_nodes=n + rows + cols, link_src=src, link_dst=dst,
                    link_bandwidth=np.full(len(src), float(link_bandwidth)),
                    link_latency=np.concatenate(lat).astype(float), shape=(rows, cols), wraps=False,
                    params={"board": (a, b), "grid": (x, y)})


# -- twisted hypercube and twisted torus ---------------------------------------------------------------------
@sized(lambda k: graph_size(capped_pow(2, k), k * capped_pow(2, k), k, extra=30 * as_float(k * capped_pow(2, k))))
def twisted_hypercube(k: int, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
                      link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Twisted hypercube TQ_k (Esfahanian, Ni & Sagan, IEEE TC 1991): Q_k with one 4-cycle twisted, diameter k - 1.

    Zhao et al. ref. [28], Sec. 7 testbed: the hypercube Q_k with the 4-cycle 0-1-3-2 twisted, i.e. the links
    {0,1} and {2,3} replaced by {0,3} and {1,2}.

    Size: 2^k nodes, degree k, diameter k - 1 (Q_k has k). Node r keeps bit coordinates (shape (2,)*k);
    port i of node r goes to r XOR 2^i except port 0 of nodes 0..3, which goes to r XOR 3. Not a Cayley
    graph, so routing runs a BFS per source.

    Raises:
        SpecError: k < 3 (Q_2 twisted is Q_2 again).

    >>> twisted_hypercube(3).link_dst[:3].tolist()
    [3, 2, 4]
    """
    k = need_int("twistedhypercube", "k", k, 3)
    n = 1 << k
    src = np.repeat(np.arange(n, dtype=np.int64), k)
    dst = src ^ np.tile(1 << np.arange(k, dtype=np.int64), n)
    twisted = (src < 4) & (np.tile(np.arange(k), n) == 0)
    dst[twisted] = src[twisted] ^ 3
    return from_links("twistedhypercube", f"twistedhypercube:{k}", n, src, dst, link_bandwidth, link_latency,
                      shape=(2,) * k, wraps=True, params={"twisted_links": ((0, 3), (1, 2))})


def _smith_columns(matrix: list[list[int]]) -> tuple[list[int], np.ndarray]:
    """Smith normal form of a square nonsingular integer matrix M: (s, V) with U M V = diag(s), V unimodular,
    s_1 | s_2 | ... (only V is kept). Then x -> (x V) mod s maps Z^D onto Z_s with kernel the row lattice of M."""
    a = [list(map(int, row)) for row in matrix]
    size = len(a)
    v = [[int(i == j) for j in range(size)] for i in range(size)]

    def swap_cols(i, j):
        for row in a:
            row[i], row[j] = row[j], row[i]
        for row in v:
            row[i], row[j] = row[j], row[i]

    def add_col(dst, src, q):  # col dst += q * col src
        for row in a:
            row[dst] += q * row[src]
        for row in v:
            row[dst] += q * row[src]

    for t in range(size):
        while True:
            _, i, j = min((abs(a[i][j]), i, j) for i in range(t, size) for j in range(t, size) if a[i][j])
            a[t], a[i] = a[i], a[t]
            swap_cols(t, j)
            p = a[t][t]
            clean = True
            for i in range(t + 1, size):
                q = a[i][t] // p
                a[i] = [x - q * y for x, y in zip(a[i], a[t], strict=True)]
                clean &= a[i][t] == 0
            for j in range(t + 1, size):
                add_col(j, t, -(a[t][j] // p))
                clean &= a[t][j] == 0
            if not clean:
                continue
            bad = [i for i in range(t + 1, size) if any(a[i][j] % p for j in range(t + 1, size))]
            if bad:
                a[t] = [x + y for x, y in zip(a[t], a[bad[0]], strict=True)]
                continue
            if p < 0:
                add_col(t, t, -2)  # negate column t
            break
    return [a[t][t] for t in range(size)], np.array(v, dtype=np.int64)


@sized(lambda shape, twists=None: cayley_size(math.prod(shape), 2 * len(shape), len(shape)))
def twisted_torus(shape, twists=None, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
                  link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Twisted torus (Camara et al., IEEE TPDS 2010; TPU v4): wrap-around links also move along the last dimension.

    Zhao et al. ref. [26]; the TPU v4 twisted 3D torus of Jouppi et al. ISCA'23: a D-dimensional torus
    d_0 x ... x d_(D-1) whose wrap-around links in every dimension i < D-1 also move t_i steps along the last
    dimension: (.., x_i = d_i - 1, .., y) + e_i is (.., 0, .., y + t_i mod d_(D-1)). The last dimension wraps
    plainly.

    Default twists: t_i = d_(D-1) // 2, which gives Camara's rectangular twisted torus RTT(a) =
    ``twistedtorus:ax2a:a`` (2a^2 nodes, diameter a, vs 3a/2 for the a x 2a torus) and the TPU v4 layout
    ``twistedtorus:kxkx2k:k,k``. All twists 0 is the plain torus.

    Size: prod(d_i) nodes, 2D ports (+- every dimension; a size-2 dimension keeps two parallel cables, as in
    :func:`torus`). It is the Cayley graph of Z^D / L, L spanned by d_i e_i - t_i e_(D-1), which is rewritten
    in Smith normal form as Z_s (the topology's ``shape``), so routing is translation-invariant. Node ids
    therefore follow the group coordinates, not the grid; :func:`twisted_torus_grid` gives each node's grid
    position. ``params``: ``grid``, ``twists``.

    Raises:
        SpecError: fewer than 2 dimensions, a dimension < 2, a wrong number of twists, or a twist outside
            0..d_(D-1) - 1.

    Source: Zhao et al. (NSDI'25) Sec. 6 (generative topologies: "The Twisted Torus [26] used by TPU v4 [40]"),
    ref. [26] (Camara et al., IEEE TPDS 21(12), 2010).

    >>> twisted_torus((4, 8)).spec
    'twistedtorus:4x8:4'
    """
    shape = check_shape("twistedtorus", shape)
    if len(shape) < 2:
        raise SpecError(f"twistedtorus: needs at least 2 dimensions (AxB), got {shape}")
    last = shape[-1]
    twists = tuple([last // 2] * (len(shape) - 1) if twists is None else (int(t) for t in twists))
    if len(twists) != len(shape) - 1:
        raise SpecError(f"twistedtorus:{spec_shape(shape)}: needs {len(shape) - 1} twist(s), one per dimension "
                        f"but the last, got {len(twists)}: {brief(twists)}")
    if any(not 0 <= t < last for t in twists):
        raise SpecError(f"twistedtorus:{spec_shape(shape)}: twists must lie in 0..{last - 1}, got {brief(twists)}")
    dim = len(shape)
    lattice = [[0] * dim for _ in range(dim)]
    for i, d in enumerate(shape):
        lattice[i][i] = d
        if i < dim - 1:
            lattice[i][-1] = -twists[i]
    s, v = _smith_columns(lattice)
    keep = [j for j in range(dim) if s[j] > 1]
    group = tuple(s[j] for j in keep)
    gens = []
    for i in range(dim):
        for sign in (1, -1):
            gens.append((sign * v[i, keep]) % np.array(group))
    spec = f"twistedtorus:{spec_shape(shape)}:{','.join(map(str, twists))}"
    return cayley("twistedtorus", spec, group, np.array(gens, dtype=np.int64), link_bandwidth, link_latency,
                  {"grid": shape, "twists": twists, "group_map": tuple(map(tuple, v[:, keep].tolist()))})


def twisted_torus_grid(topo: Topology) -> np.ndarray:
    """Grid coordinates of every node of a :func:`twisted_torus`: int64 (N, D), row r node r's position.

    Raises:
        KeyError: ``topo`` is not a :func:`twisted_torus` (no ``grid`` / ``group_map`` in its ``params``).

    Source: the Smith-normal-form construction of :func:`twisted_torus` (Zhao et al. (NSDI'25) Sec. 6, ref. [26]).

    >>> twisted_torus_grid(twisted_torus((2, 4)))[:2].tolist()
    [[0, 0], [0, 1]]
    """
    grid = topo.params["grid"]
    v = np.array(topo.params["group_map"], dtype=np.int64).reshape(len(grid), -1)
    box = np.stack(np.unravel_index(np.arange(topo.num_compute), grid), axis=-1).astype(np.int64)
    nodes = topo.node_at(box @ v)
    out = np.empty_like(box)
    out[nodes] = box
    return out
