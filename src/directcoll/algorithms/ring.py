"""Ring reduce-scatter / allgather / allreduce, single- and multiport (Swing paper Sec. 2.3.1).

The ring algorithm arranges the N ranks in a ring and splits the vector into N blocks. The reduce-scatter
runs N-1 steps; at every step every rank sends one block to its ring successor, which reduces it into its
own copy. The allgather is the time reversal of the reduce-scatter, the allreduce is the two in sequence.

Multiport versions split the vector into equal parts and run one ring per part concurrently:

* ``unidirectional``: one ring, one port.
* ``bidirectional``: the same ring in both directions, each on half of the vector (two ports).
* ``hamiltonian``: on an r x c 2D torus, two edge-disjoint Hamiltonian cycles, each run in both directions,
  each of the four rings on a quarter of the vector (four ports, every link used by at most one ring per
  direction). Exists when r = c*k (k >= 1) and gcd(r, c-1) = 1, or the same with r and c swapped.

The shifted ring (``shifted-ring``, TopoOpt's ShiftedRing, the baseline of Zhao et al. Sec. 8.2: "a
superposition of two bidirectional rings, each allreducing half of the data") runs the bidirectional ring on
the ring order and on a second ring that visits the ring order with a stride s coprime to N, four rings on
quarters of the vector (:func:`build_shifted_ring`).

Algorithms never look at link bandwidths: they only use the topology's shape, N, kind and port count.

Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.1 (Hamiltonian rings, Table 2 row RING); Zhao et al.
(NSDI'25) Sec. 8.2 (ShiftedRing baseline).

>>> from directcoll.topology import parse
>>> build_ring(parse("torus:4x4"))
Schedule(allreduce, ring, N=16, nblocks=64, steps=30, transfers=1920)
"""

from __future__ import annotations

from math import gcd

import numpy as np

from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import COPY, REDUCE, Collective, Schedule
from directcoll.schedule.pattern import StepPattern
from directcoll.schedule.phases import Phase, Phases, Pieces, concat, concurrent
from directcoll.topology.families.circulants import shifted_ring_stride
from directcoll.topology.model import Topology

VARIANTS = ("unidirectional", "bidirectional", "hamiltonian")
_PORTS_TO_VARIANT = {1: "unidirectional", 2: "bidirectional", 4: "hamiltonian"}
_VARIANT_PORTS = {v: p for p, v in _PORTS_TO_VARIANT.items()}
_HAMILTONIAN_CONDITION = ("two edge-disjoint Hamiltonian cycles of an r x c 2D torus are built only when "
                          "r = c*k (k >= 1) and gcd(r, c-1) = 1, or the same with r and c swapped "
                          "(Swing paper Sec. 2.3.1)")


# -- ring orders -------------------------------------------------------------------------------------------
def ring_order(topology: Topology) -> np.ndarray:
    """The ranks in ring order for ``topology``: int64 array of shape (N,), a permutation of 0..N-1.

    For a topology whose grid shape has D >= 2 dimensions, the order is the reflected mixed-radix Gray code
    of the grid (snake / boustrophedon order, dimension 0 most significant): consecutive ranks of the order
    are grid neighbours (they differ by +-1 in exactly one coordinate, without wrap-around). The closing hop
    from the last rank back to the first is a single grid hop only when the snake happens to close into a
    cycle (e.g. a 2D torus with an even number of rows, where the wrap-around link of column 0 joins the
    ends); otherwise it spans more than one hop and the router forwards it. For 1D shapes and topologies
    without a shape the order is simply 0..N-1.

    Raises:
        Nothing: every topology has an order (its shape, or 0..N-1).

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.1 (nodes arranged in a ring).

    >>> from directcoll.topology import parse
    >>> ring_order(parse("torus:2x3")).tolist()
    [0, 1, 2, 5, 4, 3]
    """
    n = int(topology.num_compute)
    shape = topology.shape
    if shape is None or len(shape) < 2:
        return np.arange(n, dtype=np.int64)
    return _snake(tuple(int(d) for d in shape))


def _snake(shape: tuple[int, ...]) -> np.ndarray:
    """Reflected mixed-radix Gray code of ``shape`` as row-major node ids, vectorized over positions."""
    n = int(np.prod(shape))
    i = np.arange(n, dtype=np.int64)
    coords = []
    below = n
    for d in shape:
        below //= d
        digit = (i // below) % d
        prefix = i // (below * d)  # mixed-radix value of the more significant digits
        coords.append(np.where(prefix % 2 == 0, digit, d - 1 - digit))
    return np.ravel_multi_index(tuple(coords), shape).astype(np.int64)


def hamiltonian_cycles_2d(shape) -> tuple[np.ndarray, np.ndarray]:
    """Two edge-disjoint Hamiltonian cycles of an r x c 2D torus (Swing paper Sec. 2.3.1, Bae et al.).

    Args:
        shape: (r, c), the torus dimensions; node (x, y) has id x*c + y (row-major).

    Returns:
        (h1, h2): two int64 arrays of shape (r*c,), each the nodes of one cycle in visiting order starting at
        node 0. Consecutive nodes (including last -> first) are torus neighbours, every node appears once in
        each, and the two cycles share no link (a size-2 dimension counts its "+" and "-" cables as
        distinct links).

    Construction on an r x c torus: H1 starts at (0, 0) and repeats r times {c-1 moves +1 along y, one move
    +1 along x}, so it leaves row x at column (-x-1) mod c; H2 is the complementary 2-factor: from (x, y) it
    moves +1 along y when y = (-x-1) mod c, else +1 along x. Both are Hamiltonian exactly when c divides r
    and gcd(r, c-1) = 1. If (r, c) fails, the transposed orientation (c, r) is tried. The result is always
    checked programmatically.

    Raises:
        UnsupportedShapeError: ``shape`` is not 2D with sizes >= 2, or neither orientation satisfies the
            paper's condition (r = c*k, k >= 1, and gcd(r, c-1) = 1).

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.1 (two edge-disjoint Hamiltonian cycles, after Bae et al.).

    >>> h1, h2 = hamiltonian_cycles_2d((3, 3))
    >>> h1.tolist(), h2.tolist()
    ([0, 1, 2, 5, 3, 4, 7, 8, 6], [0, 3, 6, 7, 1, 4, 5, 8, 2])
    """
    shape = tuple(int(d) for d in shape)
    if len(shape) != 2 or min(shape) < 2:
        raise UnsupportedShapeError(f"hamiltonian_cycles_2d: need a 2D torus shape (r, c) with r, c >= 2, "
                                    f"got {shape}")
    r, c = shape
    for rr, cc, transposed in ((r, c, False), (c, r, True)):
        if rr % cc or gcd(rr, cc - 1) != 1:
            continue
        cycles = [_follow(rr, cc, _cycle_moves(rr, cc, which)) for which in (1, 2)]
        if any(h is None for h in cycles) or not _edge_disjoint(rr, cc, cycles[0], cycles[1]):
            continue
        out = []
        for nodes in cycles:
            if transposed:  # node (x', y') of the (c, r) torus is node (y', x') of the (r, c) torus
                xt, yt = np.divmod(nodes, cc)
                nodes = yt * c + xt
            out.append(nodes.astype(np.int64))
        return out[0], out[1]
    raise UnsupportedShapeError(f"hamiltonian ring: torus shape {r}x{c} is not supported; "
                                f"{_HAMILTONIAN_CONDITION}")


def _cycle_moves(r: int, c: int, which: int) -> np.ndarray:
    """Successor dimension of every node (0 = +x, 1 = +y) in cycle H1 or H2 of an r x c torus."""
    x, y = np.divmod(np.arange(r * c, dtype=np.int64), c)
    leave_row = y == (-x - 1) % c
    return np.where(leave_row, 0, 1) if which == 1 else np.where(leave_row, 1, 0)


def _successor(r: int, c: int, moves: np.ndarray) -> np.ndarray:
    """Node reached from every node of an r x c torus by its move (0 = +x, 1 = +y)."""
    x, y = np.divmod(np.arange(r * c, dtype=np.int64), c)
    return np.where(moves == 0, ((x + 1) % r) * c + y, x * c + (y + 1) % c)


def _follow(r: int, c: int, moves: np.ndarray) -> np.ndarray | None:
    """Follow the successor function given by ``moves`` from node 0: the visit order, or None when the
    walk is not one cycle through every node."""
    n = r * c
    nxt = _successor(r, c, moves)
    order = np.empty(n, dtype=np.int64)
    v = 0
    for i in range(n):  # one pass per node of the torus, O(N)
        order[i] = v
        v = int(nxt[v])
        if v == 0 and i < n - 1:
            return None
    if v != 0 or len(np.unique(order)) != n:
        return None
    return order


def _edge_disjoint(r: int, c: int, first: np.ndarray, second: np.ndarray) -> bool:
    """Both cycles (node orders) step only to a torus neighbour (+1 along x or y, modulo the shape) and
    share no link; a link is keyed (node, dim) for the cable from node to node + e_dim."""
    keys = []
    for nodes in (first, second):
        x, y = np.divmod(nodes, c)
        dx = (np.roll(x, -1) - x) % r
        dy = (np.roll(y, -1) - y) % c
        plus_x, plus_y = (dx == 1) & (dy == 0), (dx == 0) & (dy == 1)
        if not np.all(plus_x | plus_y):
            return False
        keys.append(nodes * 2 + plus_y)
    return len(np.intersect1d(keys[0], keys[1])) == 0


# -- schedules ---------------------------------------------------------------------------------------------
def _check_ring(order, direction: int) -> np.ndarray:
    order = np.asarray(order, dtype=np.int64).ravel()
    p = len(order)
    if p < 1 or not np.array_equal(np.sort(order), np.arange(p)):
        raise UnsupportedShapeError(f"ring: order must be a permutation of 0..p-1 (p >= 1), "
                                    f"got {order.tolist() if p <= 16 else f'{p} entries'}")
    if direction not in (1, -1):
        raise UnsupportedShapeError(f"ring: direction must be +1 or -1, got {direction!r}")
    return order


def ring_steps(order, direction: int = +1, collective="reduce_scatter") -> Phases:
    """One ring's reduce-scatter, or the allgather that runs the same way, described step by step: the one
    description its schedule and its step pattern are read from (:mod:`directcoll.schedule.phases`).

    Every one of the p-1 steps moves one block from every ring position i to position i + direction, so the steps
    are one phase; which block moves at step t is the reduce-scatter's (i - direction*(t+1)) mod p, the allgather's
    (i - direction*t) mod p.

    Args:
        order: int (p,), a permutation of 0..p-1: the ranks in ring order.
        direction: +1 (position i sends to i+1) or -1.
        collective: ``reduce_scatter`` (op reduce) or ``allgather`` (op copy, not the reduce-scatter's reversal,
            which would run against the ring: wrong on a unidirectional ring).

    Returns:
        A :class:`~directcoll.schedule.phases.Phases` of N = nblocks = p, one phase of p-1 steps; block i belongs
        to the rank at position i (``owner = order``).

    Raises:
        UnsupportedShapeError: ``order`` is empty or not a permutation of 0..p-1, ``direction`` is not +-1, or a
            collective other than these two.
        ScheduleError: an unknown collective name.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.1 (p - 1 steps, one block to the right neighbour).

    >>> ring_steps(range(5)).pattern().multiplicity.tolist()
    [4]
    """
    order = _check_ring(order, direction)
    coll = Collective.parse(collective)
    if coll not in (Collective.REDUCE_SCATTER, Collective.ALLGATHER):
        raise UnsupportedShapeError(f"ring: a single ring is a reduce_scatter or an allgather, not {coll.value}")
    p = len(order)
    pos = np.arange(p, dtype=np.int64)
    dst = order[(pos + direction) % p]
    first = 1 if coll is Collective.REDUCE_SCATTER else 0

    def pieces(t: int) -> Pieces:
        block = (pos - direction * (t + first)) % p
        return Pieces.single(block, block + 1)

    phase = Phase(p, REDUCE if first else COPY, lambda: (order, dst, np.ones(p, np.int64)), pieces, p - 1)
    return Phases(coll, p, p, (phase,), owner=order.copy())


def ring_reduce_scatter(order, direction: int = +1) -> Schedule:
    """Ring reduce-scatter over the ranks of ``order`` (Swing paper Sec. 2.3.1).

    Args:
        order: int array of shape (p,), a permutation of 0..p-1: the ranks in ring order. p is N, the number
            of ranks of the schedule.
        direction: +1 (position i sends to position i+1) or -1 (the ring runs the other way).

    Returns:
        A reduce-scatter Schedule with N = p, nblocks = p and p-1 steps. At step t the rank at ring position
        i sends block (i - direction*(t+1)) mod p to the rank at position (i + direction) mod p (op reduce).
        Block i ends at position i: ``owner[i] = order[i]``.

    Raises:
        UnsupportedShapeError: ``order`` is empty or not a permutation of 0..p-1, or ``direction`` is not
            +1 or -1.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.1 (p - 1 steps, one block to the right neighbour).

    >>> s = ring_reduce_scatter([0, 2, 1, 3])
    >>> s.num_steps, s.owner.tolist()
    (3, [0, 2, 1, 3])
    """
    return ring_steps(order, direction, Collective.REDUCE_SCATTER).schedule()


def ring_allgather(order, direction: int = +1) -> Schedule:
    """Ring allgather running the same way as :func:`ring_reduce_scatter` (not its time reversal, which
    would run against the ring: wrong on a unidirectional ring).

    At step t the rank at position i forwards block (i - direction*t) mod p to position i + direction
    (op copy); block i starts at position i (``owner[i] = order[i]``). p-1 steps.

    Args:
        order: int (p,), a permutation of 0..p-1: the ranks in ring order.
        direction: +1 or -1.

    Returns:
        An allgather Schedule with N = nblocks = p and p-1 steps.

    Raises:
        UnsupportedShapeError: ``order`` is empty or not a permutation of 0..p-1, or ``direction`` is not +-1.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.1.

    >>> ring_allgather(range(4), -1)
    Schedule(allgather, unknown, N=4, nblocks=4, steps=3, transfers=12)
    """
    return ring_steps(order, direction, Collective.ALLGATHER).schedule()


def ring_rings(topology: Topology, variant: str) -> list[tuple[np.ndarray, int]]:
    """The (order, direction) pairs of the concurrent rings of ``variant`` on ``topology``.

    ``unidirectional``: [(ring_order, +1)]; ``bidirectional``: the same order in both directions;
    ``hamiltonian``: both edge-disjoint Hamiltonian cycles of a 2D torus, each in both directions.

    Raises:
        UnsupportedShapeError: an unknown variant, or ``hamiltonian`` on anything but a 2D torus that
            satisfies the condition of Sec. 2.3.1 (r = c*k and gcd(r, c-1) = 1, in either orientation).

    Returns:
        A list of (order int64 (N,), direction +-1) pairs: 1, 2 or 4 of them.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.1 (multiport rings; Hamiltonian rings on 2D tori).

    >>> from directcoll.topology import parse
    >>> [(o.tolist(), d) for o, d in ring_rings(parse("ring:4"), "bidirectional")]
    [([0, 1, 2, 3], 1), ([0, 1, 2, 3], -1)]
    """
    if variant == "unidirectional":
        return [(ring_order(topology), +1)]
    if variant == "bidirectional":
        order = ring_order(topology)
        return [(order, +1), (order, -1)]
    if variant == "hamiltonian":
        if topology.kind != "torus" or topology.shape is None or len(topology.shape) != 2:
            raise UnsupportedShapeError(f"ring variant 'hamiltonian' needs a 2D torus; got {topology.spec} "
                                        f"(kind {topology.kind}, shape {topology.shape})")
        h1, h2 = hamiltonian_cycles_2d(topology.shape)
        return [(h1, +1), (h1, -1), (h2, +1), (h2, -1)]
    raise UnsupportedShapeError(f"ring: unknown variant {variant!r}; accepted: {', '.join(VARIANTS)}")


def _hamiltonian_ok(topology: Topology) -> bool:
    if topology.kind != "torus" or topology.shape is None or len(topology.shape) != 2:
        return False
    try:
        hamiltonian_cycles_2d(topology.shape)
    except UnsupportedShapeError:
        return False
    return True


def default_variant(topology: Topology) -> str:
    """The ring variant used when none is asked for: ``hamiltonian`` on a 2D torus satisfying the condition
    of Sec. 2.3.1, else ``bidirectional`` when every compute node has >= 2 outgoing links, else
    ``unidirectional``.

    Returns:
        One of :data:`VARIANTS`.

    Raises:
        Nothing: an unserved Hamiltonian shape falls back to the other variants.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.1 (use all ports; Hamiltonian cycles on 2D tori).

    >>> from directcoll.topology import parse
    >>> default_variant(parse("torus:4x4")), default_variant(parse("ring:4")), default_variant(parse("ring:4:uni"))
    ('hamiltonian', 'bidirectional', 'unidirectional')
    """
    if _hamiltonian_ok(topology):
        return "hamiltonian"
    if int(topology.out_degree[: topology.num_compute].min()) >= 2:
        return "bidirectional"
    return "unidirectional"


def _ring_setup(topology: Topology, variant, ports) -> tuple[list[tuple[np.ndarray, int]], dict]:
    if ports is not None:
        if ports not in _PORTS_TO_VARIANT:
            raise UnsupportedShapeError(f"ring: ports={ports} is not supported; accepted: "
                                        "1 (unidirectional), 2 (bidirectional), 4 (hamiltonian)")
        if variant is not None and variant != _PORTS_TO_VARIANT[ports]:
            raise UnsupportedShapeError(f"ring: ports={ports} contradicts variant {variant!r} "
                                        f"({variant!r} uses {_VARIANT_PORTS.get(variant, '?')} ports)")
        variant = _PORTS_TO_VARIANT[ports]
    if variant is None:
        variant = default_variant(topology)
    rings = ring_rings(topology, variant)
    meta = {"algorithm": "ring", "variant": variant, "ports": len(rings)}
    return rings, meta


def ring_pattern(topology: Topology, collective="allreduce", *, variant: str | None = None,
                 ports: int | None = None) -> StepPattern:
    """The step pattern of :func:`build_ring` without its 2(N-1) steps of transfers: the same description
    (:func:`ring_steps`, one per ring, side by side) read without pieces, so equal to ``pattern_of(build_ring(...))``:
    one reduce-scatter step and one allgather step, each run N-1 times.

    Returns:
        A :class:`~directcoll.schedule.pattern.StepPattern` with 1 (reduce-scatter, allgather) or 2 distinct steps.

    Raises:
        UnsupportedShapeError: as :func:`build_ring`.
        ScheduleError: an unknown collective name.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.1; docs/architecture.md, "Cost and simulation" (step patterns).

    >>> from directcoll.topology import parse
    >>> ring_pattern(parse("torus:4x4")).num_distinct
    2
    """
    rings, meta = _ring_setup(topology, variant, ports)
    return _rings_steps(rings, collective, meta).pattern()


def _rings_steps(rings: list[tuple[np.ndarray, int]], collective, meta: dict) -> Phases:
    """Concurrent rings on equal parts of the vector: their reduce-scatters, allgathers (running the same way) or
    both in sequence, as one description (a schedule's and a pattern's)."""
    coll = Collective.parse(collective)
    rs = concurrent([ring_steps(order, d, Collective.REDUCE_SCATTER) for order, d in rings], meta)
    if coll is Collective.REDUCE_SCATTER:
        return rs
    ag = concurrent([ring_steps(order, d, Collective.ALLGATHER) for order, d in rings], meta)
    return ag if coll is Collective.ALLGATHER else concat(rs, ag, meta)


def build_ring(topology: Topology, collective="allreduce", *, variant: str | None = None,
               ports: int | None = None) -> Schedule:
    """Ring allreduce / reduce-scatter / allgather on ``topology`` (Swing paper Sec. 2.3.1).

    Args:
        topology: any topology; rings follow :func:`ring_order` (or the Hamiltonian cycles of a 2D torus).
        collective: ``allreduce``, ``reduce_scatter`` or ``allgather``.
        variant: ``unidirectional`` (1 ring), ``bidirectional`` (2 rings, opposite directions, halves of the
            vector) or ``hamiltonian`` (4 rings on quarters: two edge-disjoint Hamiltonian cycles of a 2D
            torus, each in both directions). None picks :func:`default_variant` (or the one ``ports``
            selects).
        ports: 1, 2 or 4 select unidirectional, bidirectional, hamiltonian; None leaves it to ``variant``.

    Returns:
        A Schedule with N = topology.num_compute and nblocks = rings * N; the reduce-scatter runs N-1 steps,
        the allreduce 2(N-1). Block b of ring part k is owned by the rank at ring position b of that ring.
        ``meta`` = {"algorithm": "ring", "variant": ..., "ports": number of rings}.

    Raises:
        UnsupportedShapeError: ``ports`` not in {1, 2, 4}, ``ports`` contradicting ``variant``, an unknown
            variant, or ``hamiltonian`` on a shape that has no two edge-disjoint Hamiltonian cycles.
        ScheduleError: an unknown collective name.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.1 and Table 2 (RING: Lambda = 2p / log2 p, Psi = Xi = 1).

    >>> from directcoll.topology import parse
    >>> build_ring(parse("ring:6"), "allgather", ports=1)
    Schedule(allgather, ring, N=6, nblocks=6, steps=5, transfers=30)
    """
    rings, meta = _ring_setup(topology, variant, ports)
    return _rings_steps(rings, collective, meta).schedule()




# -- shifted ring (TopoOpt; Zhao et al. Sec. 8.2) ------------------------------------------------------------
SHIFTED_VARIANTS = ("bidirectional",)


def shifted_ring_stride_of(topology: Topology) -> int:
    """The stride s of the second ring of :func:`build_shifted_ring` on ``topology``.

    On a circulant with two offsets one of which is +-1 -- C(N, {1, s}), e.g. the
    :func:`~directcoll.topology.families.circulants.shifted_ring` topology -- it is that topology's s (normalised to
    s <= N/2), so both rings ride on links. Elsewhere it is
    :func:`~directcoll.topology.families.circulants.shifted_ring_stride` (the stride nearest N/2 coprime to N; 1 for
    N in {1, 2, 3, 4, 6}, where the two rings coincide).

    Returns:
        s, an int in [1, N/2] coprime to N.

    Raises:
        Nothing: every N has such a stride (1 at worst).

    Source: Zhao et al. (NSDI'25) Sec. 8.2 (TopoOpt's ShiftedRing baseline: a superposition of two rings).

    >>> from directcoll.topology import parse
    >>> shifted_ring_stride_of(parse("ring:8")), shifted_ring_stride_of(parse("circulant:10:1,3"))
    (3, 3)
    """
    n = int(topology.num_compute)
    if n < 2:
        return 1
    offsets = topology.params.get("offsets") if topology.kind == "circulant" else None
    if offsets is not None and len(offsets) == 2 and topology.params.get("bidirectional", True):
        a, b = (int(o) % n for o in offsets)
        for one, other in ((a, b), (b, a)):
            if one in (1, n - 1) and gcd(other, n) == 1:
                return min(other, n - other) or 1
    return shifted_ring_stride(n)


def shifted_ring_rings(topology: Topology) -> tuple[list[tuple[np.ndarray, int]], int]:
    """The four (order, direction) rings of the shifted ring and the stride s.

    Ring 1 is :func:`ring_order` (0, 1, ..., N-1 on topologies without a multi-dimensional shape); ring 2 visits
    ring 1's positions 0, s, 2s, ... (mod N), a Hamiltonian cycle because gcd(s, N) = 1. Each runs in both
    directions: [(ring1, +1), (ring1, -1), (ring2, +1), (ring2, -1)].

    Returns:
        (rings, s): four (order int64 (N,), direction) pairs and the stride.

    Raises:
        Nothing: every topology has a ring order and a stride.

    Source: Zhao et al. (NSDI'25) Sec. 8.2 (ShiftedRing baseline, after TopoOpt, Wang et al. NSDI'23).

    >>> from directcoll.topology import parse
    >>> rings, s = shifted_ring_rings(parse("ring:5"))
    >>> rings[2][0].tolist(), s
    ([0, 2, 4, 1, 3], 2)
    """
    first = ring_order(topology)
    n = len(first)
    s = shifted_ring_stride_of(topology)
    second = first[(np.arange(n, dtype=np.int64) * s) % n]
    return [(first, +1), (first, -1), (second, +1), (second, -1)], s


def _shifted_setup(topology: Topology, variant, ports) -> tuple[list[tuple[np.ndarray, int]], dict]:
    if variant is not None and variant not in SHIFTED_VARIANTS:
        raise UnsupportedShapeError(f"shifted-ring: unknown variant {variant!r}; accepted: "
                                    f"{', '.join(SHIFTED_VARIANTS)}")
    if ports is not None and ports != 4:
        raise UnsupportedShapeError(f"shifted-ring: runs 4 rings (two bidirectional rings); ports must be 4, "
                                    f"got {ports}; use the ring algorithm for 1, 2 or 4 rings of one order")
    rings, stride = shifted_ring_rings(topology)
    return rings, {"algorithm": "shifted-ring", "variant": "bidirectional", "ports": 4, "stride": stride}


def shifted_ring_pattern(topology: Topology, collective="allreduce", *, variant: str | None = None,
                         ports: int | None = None) -> StepPattern:
    """The step pattern of :func:`build_shifted_ring` without its 4 x 2(N-1) x N transfers (two distinct steps): the
    description :func:`build_shifted_ring` is built from (:func:`ring_steps` of its four rings), read without pieces.

    Returns:
        A :class:`~directcoll.schedule.pattern.StepPattern`.

    Raises:
        UnsupportedShapeError: as :func:`build_shifted_ring` (unknown variant, ports other than 4).
        ScheduleError: an unknown collective name.

    Source: Zhao et al. (NSDI'25) Sec. 8.2; docs/architecture.md, "Cost and simulation" (step patterns).

    >>> from directcoll.topology import parse
    >>> shifted_ring_pattern(parse("ring:8")).num_distinct
    2
    """
    rings, meta = _shifted_setup(topology, variant, ports)
    return _rings_steps(rings, collective, meta).pattern()


def build_shifted_ring(topology: Topology, collective="allreduce", *, variant: str | None = None,
                       ports: int | None = None) -> Schedule:
    """Shifted ring allreduce / reduce-scatter / allgather (TopoOpt, Wang et al. NSDI'23; the ShiftedRing
    baseline of Zhao et al. Sec. 8.2): two rings, each running the bidirectional ring algorithm on half of the
    vector, so four rings (two orders x two directions) on quarters of it.

    Args:
        topology: any topology; the rings are :func:`shifted_ring_rings` (stride :func:`shifted_ring_stride_of`).
            On ``shifted_ring(n)`` = C(n, {1, s}) every ring hop is one link.
        collective: ``allreduce``, ``reduce_scatter`` or ``allgather``.
        variant: ``bidirectional`` (the only one) or None.
        ports: 4 or None.

    Returns:
        A Schedule with N = topology.num_compute, nblocks = 4N and N-1 steps (reduce-scatter, allgather) or
        2(N-1) (allreduce); block b of ring part k is owned by the rank at position b of that ring. ``meta`` =
        {"algorithm": "shifted-ring", "variant": "bidirectional", "ports": 4, "stride": s}.

    Raises:
        UnsupportedShapeError: an unknown variant, or ports other than 4.
        ScheduleError: an unknown collective name.

    Source: Zhao et al. (NSDI'25) Sec. 8.2 (ShiftedRing baseline: "a superposition of two bidirectional rings,
    each allreducing half of the data").

    >>> from directcoll.topology import parse
    >>> build_shifted_ring(parse("ring:8"))
    Schedule(allreduce, shifted-ring, N=8, nblocks=32, steps=14, transfers=448)
    """
    rings, meta = _shifted_setup(topology, variant, ports)
    return _rings_steps(rings, collective, meta).schedule()
