"""Translation symmetries of topologies that are not Cayley graphs, for routing: route one transfer per orbit and
move its links to every other member (docs/simulation.md, "Symmetry").

Cayley topologies (tori, rings, hypercubes, HyperX) carry their group in ``port_offsets`` and
:mod:`directcoll.topology.routing` translates their routes already. A HammingMesh (Hoefler et al., SC'22) is no
Cayley graph (its row and column fat trees are switch nodes), but shifting every board by whole boards along the
grid, cyclically, is an automorphism: a board's mesh links keep their in-board coordinates, and every row (column)
switch goes to the switch of the shifted row (column), which joins the same ports of the shifted boards. So the
minimal-path split of s -> t is that of (s - B) -> (t - B) moved by B, with B the board of s: routing needs one
pattern per (position of s on its board, t relative to s's board) instead of one per (s, t) pair.

:func:`board_shifts` builds the shift group of a HammingMesh after checking, on the link arrays, that both
generating shifts map every link (its ends, bandwidth and latency) to a link (parallel cables matched by their
order): a topology that only claims to be a HammingMesh gets ``None`` and is routed pair by pair.

Source: Hoefler et al., "HammingMesh" (SC'22) Sec. 3 (boards in a grid, rows and columns joined by fat trees);
Swing (De Sensi et al., NSDI'24) Sec. 5.4.1 (the 2x2-board HammingMesh it simulates); docs/simulation.md.
"""

from __future__ import annotations

import weakref

import numpy as np

from directcoll.topology.model import Topology


class BoardShifts:
    """The board translations of a HammingMesh: shift ``g = gx * y + gy`` moves every node by ``gx`` boards down
    and ``gy`` boards right (modulo the x by y grid of boards), switches with their rows and columns.

    Raises:
        Nothing: built by :func:`board_shifts` from a checked topology.

    Source: Hoefler et al. (SC'22) Sec. 3; this module's docstring (the automorphism).

    >>> from directcoll.topology import parse
    >>> g = board_shifts(parse("hammingmesh:2x2:2x2"))
    >>> g.board([0, 3, 13]).tolist(), g.move_nodes([0, 16], [3, 3]).tolist()  # node 13 is at (3, 1): board 2
    ([0, 1, 2], [10, 18])
    """

    def __init__(self, topo: Topology) -> None:
        (self.a, self.b), (self.x, self.y) = topo.params["board"], topo.params["grid"]
        self.rows, self.cols = self.x * self.a, self.y * self.b
        self.n, self.num_nodes = topo.num_compute, topo.num_nodes
        self.link_src, self.link_dst = topo.link_src, topo.link_dst
        key = self.link_src * self.num_nodes + self.link_dst
        self.order = np.argsort(key, kind="stable")
        self.sorted_key = key[self.order]
        first = np.searchsorted(self.sorted_key, self.sorted_key)        # first link of every (u, v) group
        self.rank = np.empty(len(key), dtype=np.int64)                   # a link's place among its parallels
        self.rank[self.order] = np.arange(len(key)) - first

    def board(self, nodes) -> np.ndarray:
        """The shift that moves board 0 onto the board of every compute node of ``nodes`` (int64, its shape).
        Raises: Nothing (ids outside 0..N-1 are the caller's bug). Source: this module's docstring."""
        nodes = np.asarray(nodes, dtype=np.int64)
        return (nodes // self.cols // self.a) * self.y + (nodes % self.cols) // self.b

    def move_nodes(self, nodes, shift, *, sign: int = 1) -> np.ndarray:
        """Node ids (compute nodes and switches) moved by ``sign`` times shift ``shift`` (broadcasts; int64).
        Raises: Nothing (ids out of range are the caller's bug). Source: this module's docstring."""
        nodes, shift = np.asarray(nodes, dtype=np.int64), np.asarray(shift, dtype=np.int64)
        dr, dc = sign * (shift // self.y) * self.a, sign * (shift % self.y) * self.b
        n, rows = self.n, self.rows
        gr, gc = nodes // self.cols, nodes % self.cols
        compute = ((gr + dr) % rows) * self.cols + (gc + dc) % self.cols
        row_switch = n + (nodes - n + dr) % rows
        col_switch = n + rows + (nodes - n - rows + dc) % self.cols
        return np.where(nodes < n, compute, np.where(nodes < n + rows, row_switch, col_switch))

    def move_links(self, links, shift) -> np.ndarray:
        """Link ids moved by shift ``shift`` (broadcasts; int64): the link between the moved ends with the same
        place among parallel cables. Raises: Nothing (the shift was checked to be an automorphism).
        Source: this module's docstring."""
        links = np.asarray(links, dtype=np.int64)
        u = self.move_nodes(self.link_src[links], shift)
        v = self.move_nodes(self.link_dst[links], shift)
        pos = np.searchsorted(self.sorted_key, u * self.num_nodes + v) + self.rank[links]
        return self.order[pos]


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def board_shifts(topo: Topology) -> BoardShifts | None:
    """The board-shift group of a HammingMesh (:class:`BoardShifts`), or None for any other topology and for one
    whose links the two generating shifts do not map onto links of the same bandwidth and latency (cached per
    topology).

    Returns:
        A :class:`BoardShifts`, or None.

    Raises:
        Nothing: a topology that fails the check gets None.

    Source: Hoefler et al. (SC'22) Sec. 3; this module's docstring (why board shifts are automorphisms).

    >>> from directcoll.topology import parse
    >>> board_shifts(parse("hammingmesh:2x2:4x4")) is not None, board_shifts(parse("torus:4x4"))
    (True, None)
    """
    try:
        return _CACHE[topo]
    except (KeyError, TypeError):
        pass
    group = _build(topo)
    try:
        _CACHE[topo] = group
    except TypeError:
        pass
    return group


def _build(topo: Topology) -> BoardShifts | None:
    params = topo.params or {}
    if topo.kind != "hammingmesh" or "board" not in params or "grid" not in params:
        return None
    (a, b), (x, y) = params["board"], params["grid"]
    if topo.num_compute != x * a * y * b or topo.num_nodes != topo.num_compute + x * a + y * b:
        return None
    group = BoardShifts(topo)
    key = group.sorted_key
    for shift in (y % (x * y), 1 % (x * y)):  # one board down, one board right
        u = group.move_nodes(topo.link_src, shift)
        v = group.move_nodes(topo.link_dst, shift)
        want = u * topo.num_nodes + v
        pos = np.searchsorted(key, want) + group.rank
        if (pos >= len(key)).any() or (key[np.minimum(pos, len(key) - 1)] != want).any():
            return None
        image = group.order[pos]
        if (np.bincount(image, minlength=topo.num_links) != 1).any():
            return None
        if (topo.link_bandwidth[image] != topo.link_bandwidth).any() or \
                (topo.link_latency[image] != topo.link_latency).any():
            return None
    return group
