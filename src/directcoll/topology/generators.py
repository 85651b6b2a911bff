"""Topology generators: one pure function per family, parameters named for the math.

Every generator takes ``link_bandwidth`` (bytes/s) and ``link_latency`` (s), defaulting to the Swing
paper's SST setup (400 Gb/s, 100 ns), and returns a :class:`~directcoll.topology.model.Topology`.
"""

from __future__ import annotations

import functools

import numpy as np

from directcoll.errors import SpecError
from directcoll.topology.model import DEFAULT_LINK_BANDWIDTH, DEFAULT_LINK_LATENCY, Topology


def sized(fn):
    """Decorator of a public generator: before building, size the topology from the call's arguments
    (:func:`directcoll.topology.spec.check_call`: the node and link caps and the memory budget), so that direct
    library calls are refused as fast as spec strings are.

    Raises (the wrapped generator):
        SpecError: over :data:`~directcoll.topology.spec.MAX_NODES` nodes or
            :data:`~directcoll.topology.spec.MAX_LINKS` links.
        ResourceError: building it would need more memory than the budget.
    """
    @functools.wraps(fn)
    def build(*args, **kwargs):
        from directcoll.topology.spec import check_call

        check_call(build, args, kwargs)
        return fn(*args, **kwargs)

    return build


def _brief(values) -> str:
    """A tuple of numbers for an error message, its middle left out past 8 entries."""
    values = tuple(values)
    if len(values) <= 8:
        return str(values)
    return f"({', '.join(map(str, values[:4]))}, ..., {', '.join(map(str, values[-2:]))}) ({len(values)} values)"


def _check_shape(kind: str, shape, minimum: int = 2) -> tuple[int, ...]:
    shape = tuple(int(d) for d in shape)
    if not shape or any(d < minimum for d in shape):
        raise SpecError(f"{kind}: every dimension size must be an integer >= {minimum}, got {_brief(shape)}")
    return shape


def _spec_shape(shape) -> str:
    return "x".join(str(d) for d in shape)


def _cayley(kind: str, spec: str, shape: tuple[int, ...], offsets: np.ndarray,
            link_bandwidth: float, link_latency: float, params: dict | None = None) -> Topology:
    """Cayley graph of Z_shape with generator ``offsets`` (K, D): link u*K+k joins u to u+offsets[k]."""
    n = int(np.prod(shape))
    k = len(offsets)
    coords = np.stack(np.unravel_index(np.arange(n), shape), axis=-1)
    nbr = (coords[:, None, :] + offsets[None, :, :]) % np.asarray(shape)
    dst = np.ravel_multi_index(tuple(np.moveaxis(nbr, -1, 0)), shape).reshape(-1)
    src = np.repeat(np.arange(n, dtype=np.int64), k)
    links = len(src)
    return Topology(spec=spec, kind=kind, num_compute=n, num_nodes=n, link_src=src,
                    link_dst=dst.astype(np.int64), link_bandwidth=np.full(links, float(link_bandwidth)),
                    link_latency=np.full(links, float(link_latency)), shape=shape, wraps=True,
                    port_offsets=offsets.astype(np.int64), params=params or {})


@sized
def torus(shape, *, simple: bool = False, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
          link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """D-dimensional torus d0 x d1 x ... with bidirectional links to the two neighbours in every dimension.

    Size: N = prod(d_i) nodes, 2D directed links out of every node (2D ports, Swing Sec. 2.2). A dimension
    of size 2 has two parallel cables between its two nodes (the "+" and the "-" port), so every node keeps
    2D ports, as a torus is cabled. With ``simple=True`` (spec ``torus:3x3x2:simple``) such a dimension has
    one cable instead, so the graph is simple (degree 2D minus the number of size-2 dimensions), the form
    Zhao et al.'s Theorem 13 needs. Node r sits at ``unravel_index(r, shape)``.

    Raises:
        SpecError: an empty shape or a dimension smaller than 2.
    """
    shape = _check_shape("torus", shape)
    offsets = []
    for i in range(len(shape)):
        for sign in ((1,) if simple and shape[i] == 2 else (1, -1)):
            e = np.zeros(len(shape), dtype=np.int64)
            e[i] = sign
            offsets.append(e)
    spec = f"torus:{_spec_shape(shape)}" + (":simple" if simple and 2 in shape else "")
    return _cayley("torus", spec, shape, np.array(offsets), link_bandwidth, link_latency,
                   {"simple": True} if simple and 2 in shape else None)


@sized
def ring(n: int, *, bidirectional: bool = True, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
         link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Ring of n nodes: bidirectional (the 1D torus, 2 ports) or unidirectional (i -> i+1, 1 port).

    Raises:
        SpecError: n < 2.
    """
    (n,) = _check_shape("ring", (n,))
    if bidirectional:
        offsets = np.array([[1], [-1]])
        spec = f"ring:{n}"
    else:
        offsets = np.array([[1]])
        spec = f"ring:{n}:uni"
    return _cayley("ring", spec, (n,), offsets, link_bandwidth, link_latency,
                   {"bidirectional": bidirectional})


@sized
def hypercube(dim: int, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
              link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Hypercube Q_dim: 2**dim nodes, node r linked to r XOR 2**i for every i (dim ports, one cable each).

    Its grid shape is (2,)*dim, so torus algorithms see it as a torus of size-2 dimensions whose "+" and "-"
    neighbours coincide on the same single cable.

    Raises:
        SpecError: dim < 1.
    """
    if int(dim) < 1:
        raise SpecError(f"hypercube: dimension must be >= 1, got {dim}")
    dim = int(dim)
    return _cayley("hypercube", f"hypercube:{dim}", (2,) * dim, np.eye(dim, dtype=np.int64),
                   link_bandwidth, link_latency)


@sized
def hyperx(shape, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
           link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """HyperX (Ahn et al., SC'09; Swing Sec. 5.4.2): every node linked to every node of its row in every
    dimension, i.e. the Cartesian product of complete graphs K_{d0} x K_{d1} x ...

    Size: N = prod(d_i) nodes, sum(d_i - 1) ports per node.

    Raises:
        SpecError: an empty shape or a dimension smaller than 2.
    """
    shape = _check_shape("hyperx", shape)
    offsets = []
    for i, d in enumerate(shape):
        for delta in range(1, d):
            e = np.zeros(len(shape), dtype=np.int64)
            e[i] = delta
            offsets.append(e)
    return _cayley("hyperx", f"hyperx:{_spec_shape(shape)}", shape, np.array(offsets), link_bandwidth,
                   link_latency)


def _grid_links(shape: tuple[int, ...], wraps: bool) -> tuple[np.ndarray, np.ndarray]:
    """Directed neighbour links of a mesh (wraps=False) in both directions along every dimension."""
    n = int(np.prod(shape))
    coords = np.stack(np.unravel_index(np.arange(n), shape), axis=-1)
    src, dst = [], []
    for i, d in enumerate(shape):
        ok = coords[:, i] + 1 < d if not wraps else np.ones(n, dtype=bool)
        nb = coords[ok].copy()
        nb[:, i] = (nb[:, i] + 1) % d
        a = np.flatnonzero(ok)
        b = np.ravel_multi_index(tuple(nb.T), shape)
        src += [a, b]
        dst += [b, a]
    return np.concatenate(src).astype(np.int64), np.concatenate(dst).astype(np.int64)


@sized
def mesh(shape, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
         link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """D-dimensional mesh (a torus without wrap-around links): N = prod(d_i) nodes, up to 2D ports.

    Raises:
        SpecError: an empty shape or a dimension smaller than 2.
    """
    shape = _check_shape("mesh", shape)
    src, dst = _grid_links(shape, wraps=False)
    return Topology(spec=f"mesh:{_spec_shape(shape)}", kind="mesh", num_compute=int(np.prod(shape)),
                    num_nodes=int(np.prod(shape)), link_src=src, link_dst=dst,
                    link_bandwidth=np.full(len(src), float(link_bandwidth)),
                    link_latency=np.full(len(src), float(link_latency)), shape=shape, wraps=False)


@sized
def hammingmesh(board, grid, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
                link_latency: float = DEFAULT_LINK_LATENCY, board_latency: float | None = None) -> Topology:
    """HammingMesh HxaMesh (Hoefler et al., SC'22; Swing Sec. 5.4.1).

    ``board = (a, b)``: every board is an a x b 2D mesh (PCB traces, latency ``board_latency``, default
    ``link_latency``). ``grid = (x, y)``: boards arranged in x rows by y columns, so the compute nodes form a
    (x*a) x (y*b) grid and node r sits at ``unravel_index(r, (x*a, y*b))``. Every global row joins the
    west ports of its boards' left-edge nodes and the east ports of their right-edge nodes through one fat
    tree; every global column joins the north and south ports of its boards' edge nodes the same way.

    Model choice: each fat tree is one *non-blocking switch node* (any port reaches any other through it,
    at link bandwidth, in two hops: node -> switch -> node). Row switches are nodes ``N .. N+x*a-1``, column
    switches follow. With 1x1 boards every node has two cables to its row switch and two to its column
    switch, the switch-based equivalent of a 2D HyperX.

    Raises:
        SpecError: a board or grid size smaller than 1, or a single board (x = y = 1).
    """
    a, b = _check_shape("hammingmesh board", board, minimum=1)
    x, y = _check_shape("hammingmesh grid", grid, minimum=1)
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


@sized
def complete(n: int, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
             link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Complete graph K_n: every node linked to every other (n - 1 ports); the "peer-to-peer network with
    full-duplex channels" of Kolmakov & Zhang Sec. 2, where no communication pattern conflicts.

    Raises:
        SpecError: n < 2.
    """
    (n,) = _check_shape("complete", (n,))
    offsets = np.arange(1, n, dtype=np.int64)[:, None]
    return _cayley("complete", f"complete:{n}", (n,), offsets, link_bandwidth, link_latency)
