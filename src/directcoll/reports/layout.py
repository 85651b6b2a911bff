"""Where a topology's nodes and links sit in a picture of a schedule (:mod:`directcoll.reports.draw`): grid
positions for tori, meshes, HyperX and HammingMesh (1D tori, rings and meshes on a line, three or more dimensions as 2D
planes side by side), a circle for every other topology, and the curves links and transfers are drawn along.

Geometry is in grid units: neighbours on a grid sit 1 apart. A cable carries one lane per direction, offset to the
right-hand side of that direction; a line that would cross another node bends away from it; wrap-around links
and transfers of tori leave one edge of the grid and come back at the opposite one (two stubs), and
HammingMesh's links to its row and column switches are stubs pointing west, east, north or south.

Source: Swing (De Sensi et al., NSDI'24) Figs. 1 and 4 (steps drawn on a 1D and a 4x4 torus, wrap-around links
left out of the grid); Hoefler et al. (SC'22) HammingMesh (boards joined by row and column switches).

>>> from directcoll.topology import parse
>>> layout(parse("torus:4x4")).style, layout(parse("ring:8")).style, layout(parse("circulant:16:1,5")).style
('grid', 'line', 'circle')
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from directcoll.errors import DirectcollError
from directcoll.topology.model import Topology

#: the most compute nodes a picture draws (beyond it labels and arrows are no longer legible)
MAX_NODES = 256
#: families drawn on their grid (others on a circle)
GRID_KINDS = ("torus", "mesh", "ring", "hyperx", "hammingmesh")
#: node radius, grid units
NODE_RADIUS = 0.24
#: a lane's offset from its cable's centre line, grid units
LANE_OFFSET = 0.075
_R = NODE_RADIUS
_BEND = 0.35        # transfers over other nodes bend by this fraction of their length (matplotlib's arc3 rad)
_CABLE_BEND = 0.22  # so do cables over other nodes
_STUB = 0.46        # wrap-around and switch stubs reach this far out of the node, grid units


@dataclass(frozen=True)
class Layout:
    """Where a topology's nodes sit in a picture, and how its links and transfers are drawn between them.

    Attributes:
        pos: float64 (num_nodes, 2), node positions in grid units (neighbours on a grid are 1 apart).
        style: ``grid`` (tori, meshes, HyperX, HammingMesh of two or more dimensions), ``line`` (1D tori and
            rings) or ``circle``.
        shown: bool (num_nodes,), which nodes are drawn (HammingMesh's switches are not: their links are stubs).
        wrap: float64 (num_nodes, num_nodes, 2) or None: for tori, the vector from a node to where its
            wrap-around neighbour would sit past the edge (zero where the pair is drawn directly).
        stub: dict link id -> float64 (2,): the direction of a link drawn as a stub out of its compute node.

    Raises:
        Nothing: a record built by :func:`layout`.

    Source: Swing (De Sensi et al., NSDI'24) Figs. 1 and 4 (grid and line layouts, wrap-around links omitted).

    >>> from directcoll.topology import parse
    >>> lay = layout(parse("torus:4x4"))
    >>> lay.style, lay.pos[5].tolist(), lay.wrap[0, 3].tolist()
    ('grid', [1.0, -1.0], [-1.0, 0.0])
    """

    pos: np.ndarray
    style: str
    shown: np.ndarray
    wrap: np.ndarray | None
    stub: dict

    def extent(self, span: float = 0.0) -> tuple[float, float, float, float]:
        """(xmin, xmax, ymin, ymax) of the drawing in grid units, stubs and node circles included; in the
        ``line`` style also the arcs over the line of transfers up to ``span`` grid units long.

        Raises:
            Nothing: arithmetic on the positions.

        Source: the layout's geometry (this module's docstring).

        >>> from directcoll.topology import parse
        >>> [round(v, 2) for v in layout(parse("ring:4")).extent(2.0)]
        [-0.9, 3.9, -0.44, 0.55]
        """
        pos = self.pos[self.shown]
        pad = _R + 0.2 + (_STUB if (self.wrap is not None or self.stub) else 0.0)
        (x0, y0), (x1, y1) = (float(x) for x in pos.min(axis=0)), (float(x) for x in pos.max(axis=0))
        if self.style == "line":  # an arc of length L bent by b peaks b L / 2 over the line
            return x0 - pad, x1 + pad, y0 - _R - 0.2, y1 + _R + 0.2 + max(_BEND * span / 2 - _R, 0.0)
        return x0 - pad, x1 + pad, y0 - pad, y1 + pad

    def span(self, a: int, b: int) -> float:
        """How long the arrow between nodes a and b is drawn, grid units (to the ghost past the edge where the pair
        wraps around). Raises: Nothing. Source: the layout's geometry (this module's docstring).
        """
        if self.wrap is not None and self.wrap[a, b].any():
            return float(np.linalg.norm(self.wrap[a, b]))
        return float(np.linalg.norm(self.pos[a] - self.pos[b]))


def _grid_positions(topology: Topology) -> np.ndarray:
    shape = topology.shape
    c = topology.coords(np.arange(topology.num_compute)).astype(float)
    if len(shape) == 1:
        return np.column_stack([c[:, 0], np.zeros(len(c))])
    x, y = c[:, -1].copy(), -c[:, -2].copy()
    if topology.kind == "hammingmesh":
        a, b = topology.params["board"]
        x += (c[:, -1] // b) * 0.6   # a gap between boards
        y -= (c[:, -2] // a) * 0.6
    if len(shape) > 2:  # planes of the last two dimensions, side by side in rows
        planes = int(np.prod(shape[:-2]))
        plane = np.ravel_multi_index(tuple(c[:, :-2].astype(int).T), shape[:-2])
        across = math.ceil(math.sqrt(planes))
        x += (plane % across) * (shape[-1] + 1)
        y -= (plane // across) * (shape[-2] + 1)
    return np.column_stack([x, y])


def layout(topology: Topology) -> Layout:
    """The picture's geometry of ``topology``: grid positions for tori, meshes, HyperX and HammingMesh, a line for
    1D tori, rings and meshes, a circle for every other topology (1D HyperX, a complete graph, included; switches
    on an inner circle).

    Returns:
        A :class:`Layout` (positions in grid units).

    Raises:
        DirectcollError: more than :data:`MAX_NODES` compute nodes.

    Source: Swing (De Sensi et al., NSDI'24) Figs. 1 and 4; Hoefler et al. (SC'22) HammingMesh (boards joined by
    row and column switches).

    >>> from directcoll.topology import parse
    >>> layout(parse("circulant:16:1,5")).style
    'circle'
    """
    n, v = topology.num_compute, topology.num_nodes
    if n > MAX_NODES:
        raise DirectcollError(f"{topology.spec} has {n} compute nodes; a picture draws at most {MAX_NODES} "
                              "legibly (use `directcoll show` for larger networks)")
    shown = np.ones(v, bool)
    wrap, stub = None, {}
    gridded = topology.kind in GRID_KINDS and topology.shape is not None and (topology.kind != "hammingmesh" or v > n)
    if gridded and not (topology.kind == "hyperx" and topology.ndim == 1):   # a 1D HyperX is a complete graph
        pos = np.zeros((v, 2))
        pos[:n] = _grid_positions(topology)
        style = "line" if len(topology.shape) == 1 else "grid"
        if topology.kind in ("torus", "ring") and topology.wraps:
            wrap = _wraps(topology)
        if topology.kind == "hammingmesh":
            shown[n:] = False
            stub = _hammingmesh_stubs(topology)
    else:
        style = "circle"
        radius = max(1.3, n / (2 * math.pi) * 0.95)       # neighbours 0.95 apart
        angle = math.pi / 2 - 2 * math.pi * np.arange(n) / n   # rank 0 on top, clockwise
        pos = np.zeros((v, 2))
        pos[:n] = radius * np.column_stack([np.cos(angle), np.sin(angle)])
        if v > n:
            inner = math.pi / 2 - 2 * math.pi * np.arange(v - n) / (v - n)
            pos[n:] = 0.45 * radius * np.column_stack([np.cos(inner), np.sin(inner)])
    return Layout(pos, style, shown, wrap, stub)


def _wraps(topology: Topology) -> np.ndarray:
    """For every pair of compute nodes, the vector to the ghost of the second past the edge where the shortest
    displacement between them wraps around in the drawn (last two) dimensions; zero elsewhere."""
    shape = np.asarray(topology.shape)
    n = topology.num_compute
    c = topology.coords(np.arange(n))
    delta = (c[None, :, :] - c[:, None, :]) % shape
    delta = np.where(delta * 2 > shape, delta - shape, delta)      # the shortest displacement, ties positive
    tie = delta * 2 == shape
    outside = (c[:, None, :] + delta < 0) | (c[:, None, :] + delta >= shape)
    delta = np.where(tie & outside, -delta, delta)                 # a tie takes the way inside the grid
    outside = (c[:, None, :] + delta < 0) | (c[:, None, :] + delta >= shape)
    drawn = np.zeros(len(shape), bool)
    drawn[-2:] = True
    crosses = (outside & drawn).any(axis=2) & ~(outside & ~drawn).any(axis=2)
    vec = np.zeros((n, n, 2))
    vec[..., 0] = delta[..., -1]
    if len(shape) >= 2:
        vec[..., 1] = -delta[..., -2]
    vec[~crosses] = 0.0
    return vec


def _hammingmesh_stubs(topology: Topology) -> dict:
    """Link id -> stub direction for HammingMesh's node <-> switch links: west / east to the row switch, north /
    south to the column switch, in the order the generator adds them (west before east, north before south)."""
    n = topology.num_compute
    rows = topology.shape[0]
    a, b = topology.params["board"]
    r, c = np.unravel_index(np.arange(n), topology.shape)
    out, seen = {}, {}
    for link in range(topology.num_links):
        u, w = int(topology.link_src[link]), int(topology.link_dst[link])
        node, switch = (u, w) if w >= n else (w, u)
        if switch < n:
            continue
        if switch - n < rows:
            options = [d for d, ok in (((-1.0, 0.0), c[node] % b == 0), ((1.0, 0.0), c[node] % b == b - 1)) if ok]
        else:
            options = [d for d, ok in (((0.0, 1.0), r[node] % a == 0), ((0.0, -1.0), r[node] % a == a - 1)) if ok]
        key = (u, w)
        k = seen.get(key, 0)
        seen[key] = k + 1
        out[link] = np.array(options[min(k, len(options) - 1)])
    return out


# -- geometry: quadratic Bezier pieces -------------------------------------------------------------------------
def _control(p: np.ndarray, q: np.ndarray, bend: float) -> np.ndarray:
    """Control point of the quadratic Bezier from p to q bent by ``bend`` to the right of its direction."""
    d = q - p
    return (p + q) / 2 + bend * np.array([d[1], -d[0]])


def _piece(p, c, q, t0: float, t1: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The part t0..t1 of the quadratic Bezier (p, c, q), as a quadratic Bezier (de Casteljau)."""
    def at(t):
        return (1 - t) ** 2 * p + 2 * (1 - t) * t * c + t ** 2 * q

    def tangent(t):
        return 2 * (1 - t) * (c - p) + 2 * t * (q - c)

    a, b = at(t0), at(t1)
    return a, a + (t1 - t0) / 2 * tangent(t0), b


def _sample(p, c, q, k: int = 16) -> np.ndarray:
    t = np.linspace(0, 1, k)[:, None]
    return (1 - t) ** 2 * p + 2 * (1 - t) * t * c + t ** 2 * q


def _detour(lay: Layout, p: np.ndarray, q: np.ndarray) -> float:
    """0 when the straight line p - q passes no node (but those at its ends), else the side to bend to, away from
    the nodes in the way: +1 right of p -> q, -1 left (nodes on the line itself: right, or above the line in the
    ``line`` style)."""
    d = q - p
    length2 = float(d @ d)
    if length2 == 0:
        return 0.0
    pos = lay.pos[lay.shown]
    pos = pos[(np.linalg.norm(pos - p, axis=1) > _R / 2) & (np.linalg.norm(pos - q, axis=1) > _R / 2)]
    rel = pos - p
    t = (rel @ d) / length2
    cross = (d[0] * rel[:, 1] - d[1] * rel[:, 0]) / math.sqrt(length2)   # > 0: left of p -> q
    near = (np.abs(cross) < _R * 1.3) & (t > 0) & (t < 1)
    if not near.any():
        return 0.0
    side = float(cross[near].mean())
    if abs(side) < 1e-6:   # over the line in the line style: the right-hand normal (d_y, -d_x) points up for d_x < 0
        return (1.0 if d[0] < 0 else -1.0) if lay.style == "line" else 1.0
    return 1.0 if side > 0 else -1.0


def _inside(lay: Layout, points: np.ndarray) -> np.ndarray:
    """Which points lie inside the grid's nodes' box widened by most of a stub (where wrap-around pieces end)."""
    pos = lay.pos[lay.shown]
    margin = _R + 0.8 * _STUB
    lo, hi = pos.min(axis=0) - margin, pos.max(axis=0) + margin
    return ((points >= lo) & (points <= hi)).all(axis=1)


def link_pieces(lay: Layout, topology: Topology, link: int, offset: float = LANE_OFFSET) -> list[np.ndarray]:
    """The lane of one directed link as polylines in grid units (one, or two stubs for a wrap-around link),
    ``offset`` grid units to the right-hand side of its direction (0: the cable's centre line).

    Returns:
        A list of float64 (k, 2) arrays.

    Raises:
        Nothing: ``link`` must be a link id of ``topology``.

    Source: Swing (De Sensi et al., NSDI'24) Figs. 1 and 4 (links between neighbours; wrap-around links left out
    of the grid, here stubs).

    >>> from directcoll.topology import parse
    >>> t = parse("torus:4x4")
    >>> [len(p) for p in link_pieces(layout(t), t, 3)]  # (0,0) -> (0,3) wraps around: two stubs
    [2, 2]
    """
    u, v = int(topology.link_src[link]), int(topology.link_dst[link])
    pos = lay.pos
    a, b = min(u, v), max(u, v)                       # draw both directions of a cable on one curve
    side = 1.0 if u == a else -1.0
    if link in lay.stub:
        node = u if u < topology.num_compute else v
        p = pos[node]
        q = p + lay.stub[link] * (_STUB + _R)
        curves = [(p, (p + q) / 2, q, _R / (_STUB + _R), 1.0)]
    elif lay.wrap is not None and lay.wrap[a, b].any():
        vec = lay.wrap[a, b]
        length = float(np.linalg.norm(vec))
        t = _R / length
        pa, pb = pos[a], pos[b]
        curves = [(pa, pa + vec / 2, pa + vec, t, min(0.5, (_R + _STUB) / length)),
                  (pb - vec, pb - vec / 2, pb, max(0.5, 1 - (_R + _STUB) / length), 1 - t)]
    else:
        pa, pb = pos[a], pos[b]
        length = float(np.linalg.norm(pb - pa)) or 1.0
        bend = _CABLE_BEND * _detour(lay, pa, pb)
        t = _R / length
        curves = [(pa, _control(pa, pb, bend), pb, t, 1 - t)]
    out = []
    for p, c, q, t0, t1 in curves:
        p, c, q = _piece(p, c, q, t0, t1)
        d = q - p
        normal = np.array([d[1], -d[0]]) / (np.linalg.norm(d) or 1.0)
        shift = side * offset * normal
        out.append(_sample(p + shift, c + shift, q + shift, 16 if not np.allclose(c, (p + q) / 2) else 2))
    return out


def arrow_pieces(lay: Layout, a: int, b: int, forward: bool = True, backward: bool = False,
                 cabled: bool = False) -> list[tuple[np.ndarray, str]]:
    """The arrow between ranks a and b: ``forward`` for a transfer a -> b, ``backward`` for b -> a, both for an
    exchange (one arrow, a head at each end). It runs straight, along the middle of the cable's two lanes where
    there is one (``cabled``), and bends where a straight line would cross another node; on a torus a
    wrap-around pair gets two halves, out of a past the edge and back in at the opposite edge into b.

    Returns:
        A list of (float64 (3, 2) quadratic Bezier control points in grid units, matplotlib arrow style).

    Raises:
        Nothing: ``a`` and ``b`` must be distinct nodes of the layout.

    Source: Swing (De Sensi et al., NSDI'24) Figs. 1 and 4 (arrows between communicating nodes).

    >>> from directcoll.topology import parse
    >>> [style for _, style in arrow_pieces(layout(parse("torus:4x4")), 0, 3, True, True)]  # wraps around
    ['<|-', '-|>']
    """
    p, q = lay.pos[a], lay.pos[b]
    gap = _R * 1.12
    if lay.wrap is not None and lay.wrap[a, b].any():   # the arc from a to b's ghost past the edge, and back
        vec = lay.wrap[a, b]
        length = float(np.linalg.norm(vec))
        c = _control(p, p + vec, _BEND * _detour(lay, p, p + vec))
        t = np.linspace(0, 1, 201)
        out = np.flatnonzero(~_inside(lay, _sample(p, c, p + vec, 201)))
        edge = float(t[out[0]]) if len(out) else 0.5
        shift = q - (p + vec)
        out_piece = _piece(p, c, p + vec, gap / length, edge)
        back_piece = _piece(p + shift, c + shift, q, 1 - edge, 1 - gap / length)
        return [(np.array(out_piece), "<|-" if backward else "-"), (np.array(back_piece), "-|>" if forward else "-")]
    length = float(np.linalg.norm(q - p)) or 1.0
    bend = (_CABLE_BEND if cabled else _BEND) * _detour(lay, p, q)
    style = {(True, True): "<|-|>", (True, False): "-|>", (False, True): "<|-"}[(forward, backward)]
    return [(np.array(_piece(p, _control(p, q, bend), q, gap / length, 1 - gap / length)), style)]
