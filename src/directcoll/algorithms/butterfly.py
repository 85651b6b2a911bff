"""Butterfly schedules on tori: the shared machinery of Swing and torus-optimized recursive doubling.

Both algorithms pair every rank with one peer per step, one torus dimension at a time (Swing Sec. 4.1,
Fig. 2): at step s the dimension is chosen round-robin, starting from the collective's first dimension and
skipping dimensions whose log2(d_i) steps are done (Sec. 4.2); sigma(s) counts the steps already taken in
that dimension. The peer of a coordinate a at dimension-step sigma is

- Swing (Eq. 2): a + rho(sigma) if a is even, a - rho(sigma) if odd, with rho(s) = (1 - (-2)^(s+1)) / 3.
  Sec. 4.1 writes delta(sigma(s)) with a sign flip for odd a; we read it as rho(sigma(s)), which is what
  Eq. 2, Fig. 1 and App. A.1 use (node 0 meets node p-1 at step 1).
- recursive doubling: a XOR 2^sigma.

A *mirrored* collective (Sec. 4.1) conjugates the peer function by negation, a -> -a mod d, so it leaves
every rank through the port opposite to the plain one.

When every dimension is a power of two, placing rank r's block at the position v(r) of
:func:`block_positions` (the logical block remapping of Sec. 3.1.1) makes every reduce-scatter send one
contiguous range: at step s a rank sends the aligned range of 2^(L-1-s) positions that holds its peer's
position.

Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.2-2.3.3 (recursive doubling on tori, Fig. 2), Sec. 3.1.1
(Eq. (2), Listing 1, logical block remapping), Sec. 4.1-4.2 and App. A.1.

>>> peer_table("swing", (8,), 0, False)[1].tolist()  # step 1: even ranks go -1, odd ranks +1
[7, 2, 1, 4, 3, 6, 5, 0]
"""

from __future__ import annotations

import numpy as np

from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import COPY, REDUCE, Collective
from directcoll.schedule.phases import Phase, Phases, Pieces, concurrent
from directcoll.topology.model import Topology


def rho(s) -> np.ndarray:
    """Swing's signed distance rho(s) = sum_{i<=s} (-2)^i = (1 - (-2)^(s+1)) / 3 (Eq. 2).

    The paper's text prints the sum as ``sum -2^i``; we read it as (-2)^i, which the closed form requires.

    Args:
        s: step index or indices (ints >= 0), any shape.

    Returns:
        int64 array of ``s``'s shape (ranks of distance, signed).

    Raises:
        Nothing: integer arithmetic.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1.1, Eq. (2).

    >>> rho(np.arange(5)).tolist()
    [1, -1, 3, -5, 11]
    """
    s = np.asarray(s, dtype=np.int64)
    return (1 - (-2) ** (s + 1)) // 3


def is_power_of_two(n: int) -> bool:
    """Whether ``n`` is a power of two (1 included). Raises: Nothing.
    Source: Swing (NSDI'24) Sec. 3.1 (the power-of-two case).

    >>> is_power_of_two(8), is_power_of_two(6)
    (True, False)
    """
    return n >= 1 and n & (n - 1) == 0


def steps_per_dim(shape) -> list[int]:
    """ceil(log2 d) steps in every dimension.

    Returns:
        A list of D ints (steps).

    Raises:
        Nothing: arithmetic (sizes >= 1).

    Source: Swing (De Sensi et al., NSDI'24) Sec. 4.2 (log2 d_i steps in dimension i).

    >>> steps_per_dim((4, 8))
    [2, 3]
    """
    return [int(np.ceil(np.log2(d))) for d in shape]


def dimension_sequence(counts: list[int], first_dim: int = 0) -> list[tuple[int, int]]:
    """Steps as (dimension, sigma): round-robin from ``first_dim``, skipping finished dimensions (Sec. 4.2).

    Args:
        counts: steps per dimension (see :func:`steps_per_dim`); first_dim: the dimension of step 0.

    Returns:
        A list of sum(counts) (dimension, sigma) pairs, sigma counting the steps already taken in that dimension.

    Raises:
        Nothing: bookkeeping (``counts`` must be non-empty).

    Source: Swing (De Sensi et al., NSDI'24) Sec. 4.1 (omega(s) = s mod D, sigma(s) = floor(s / D)) and Sec. 4.2
    (finished dimensions are skipped on non-square tori).

    >>> dimension_sequence([1, 3])
    [(0, 0), (1, 0), (1, 1), (1, 2)]
    """
    done = [0] * len(counts)
    seq: list[tuple[int, int]] = []
    dim = first_dim % len(counts)
    while len(seq) < sum(counts):
        if done[dim] < counts[dim]:
            seq.append((dim, done[dim]))
            done[dim] += 1
        dim = (dim + 1) % len(counts)
    return seq


def coordinate_peer(kind: str, a: np.ndarray, sigma: int, d: int, mirrored: bool) -> np.ndarray:
    """Peer coordinates in one dimension of size d for ``kind`` in {"swing", "recdoub"}.

    Args:
        kind: "swing" (Eq. 2) or "recdoub" (a XOR 2^sigma).
        a: coordinates, int array of any shape; sigma: the dimension-step; d: the dimension's size;
        mirrored: conjugate by a -> -a mod d (Sec. 4.1).

    Returns:
        int64 array of ``a``'s shape.

    Raises:
        ValueError: an unknown ``kind`` (a built-in error: the kinds are fixed by the callers).

    Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1.1 Eq. (2), Sec. 2.3.2 (q = r XOR 2^s), Sec. 4.1 (mirrored).

    >>> coordinate_peer("swing", np.arange(8), 1, 8, False).tolist()
    [7, 2, 1, 4, 3, 6, 5, 0]
    >>> coordinate_peer("recdoub", np.arange(4), 1, 4, False).tolist()
    [2, 3, 0, 1]
    """
    a = np.asarray(a, dtype=np.int64)
    if mirrored:
        return (-coordinate_peer(kind, (-a) % d, sigma, d, False)) % d
    if kind == "swing":
        r = int(rho(sigma))
        return np.where(a % 2 == 0, a + r, a - r) % d
    if kind == "recdoub":
        return a ^ (1 << sigma)
    raise ValueError(f"unknown butterfly kind {kind!r}")


def peer_table(kind: str, shape: tuple[int, ...], first_dim: int, mirrored: bool) -> np.ndarray:
    """Peers of every rank (row-major in ``shape``) at every step: int64 array (L, p).

    L = sum of ceil(log2 d_i) steps, p = prod(shape); steps follow :func:`dimension_sequence`.

    Raises:
        ValueError: an unknown ``kind`` (see :func:`coordinate_peer`).

    Source: Swing (De Sensi et al., NSDI'24) Sec. 4.1 (peer on dimension omega(s) at distance delta(sigma(s))).

    >>> peer_table("recdoub", (2, 2), 0, False).tolist()
    [[2, 3, 0, 1], [1, 0, 3, 2]]
    """
    coords = np.stack(np.unravel_index(np.arange(int(np.prod(shape))), shape), axis=-1)
    rows = []
    for dim, sigma in dimension_sequence(steps_per_dim(shape), first_dim):
        c = coords.copy()
        c[:, dim] = coordinate_peer(kind, c[:, dim], sigma, shape[dim], mirrored)
        rows.append(np.ravel_multi_index(tuple(c.T), shape))
    return np.array(rows, dtype=np.int64).reshape(len(rows), -1)


def block_positions(peers: np.ndarray) -> np.ndarray:
    """The logical block remapping: a position v(r) for every rank's block such that at every step s the
    peer's position shares its first s bits with v(r) and differs in bit s (bits counted from the top).

    The blocks a rank still reduces after step s are those of the ranks it reaches through steps > s
    (Listing 1's get_rs_idx); on a power-of-two torus these sets are laminar, each splitting into the set of
    the rank and that of its step-s peer. Labelling every set by its smallest rank and giving bit s = 0 to
    the half that keeps the parent's label makes each set an aligned range of positions.

    Args:
        peers: int64 (L, p), the peer of every rank at every step.

    Returns:
        int64 (p,), a permutation of 0..p-1.

    Raises:
        UnsupportedShapeError: the sets are not laminar (some dimension is not a power of two).

    Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1.1 (Listing 1's get_rs_idx; the logical block remapping
    that makes every send contiguous).

    >>> block_positions(peer_table("swing", (8,), 0, False)).tolist()
    [0, 4, 6, 1, 2, 7, 5, 3]
    """
    steps, p = peers.shape
    label = np.arange(p)
    bits = np.zeros(p, dtype=np.int64)
    for s in range(steps - 1, -1, -1):
        parent = np.minimum(label, label[peers[s]])
        bits |= (label != parent).astype(np.int64) << (steps - 1 - s)
        label = parent
    ok = len(np.unique(bits)) == p
    for s in range(steps):
        shift = steps - 1 - s
        ok = ok and np.array_equal(bits[peers[s]] >> shift, (bits >> shift) ^ 1)
    if not ok:
        raise UnsupportedShapeError("the butterfly construction needs every dimension to be a power of two "
                                    "(the reduce-scatter block sets are not laminar otherwise)")
    return bits


def reduce_scatter_steps(peers: np.ndarray, ranks: np.ndarray, nranks: int) -> Phases:
    """A butterfly reduce-scatter on the ranks ``ranks`` (local index -> global rank), described step by step.

    At step s every rank sends the aligned range of 2^(L-1-s) positions holding its peer's position (one
    contiguous piece), over the p = len(ranks) blocks of the collective; the result of local rank r ends at block
    v(r) (:func:`block_positions`).

    Args:
        peers: int64 (L, p), the peer (local index) of every local rank at every step.
        ranks: int64 (p,), the global ranks; nranks: N, the schedule's ranks.

    Returns:
        A :class:`~directcoll.schedule.phases.Phases` of a reduce-scatter on p blocks, one phase per step, owner
        ``owner[v(r)] = ranks[r]``.

    Raises:
        UnsupportedShapeError: the peers do not form a power-of-two butterfly (see :func:`block_positions`).

    Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1.1 (reduce-scatter halving the data at each step) and
    Sec. 2.3.3 (recursive halving).

    >>> rs = reduce_scatter_steps(peer_table("swing", (8,), 0, False), np.arange(8), 8)
    >>> rs.owner.tolist(), rs.schedule().num_steps
    ([0, 3, 4, 7, 1, 6, 2, 5], 3)
    """
    v = block_positions(peers)
    steps, q = peers.shape
    ranks = np.asarray(ranks, dtype=np.int64)
    owner = np.empty(q, dtype=np.int64)
    owner[v] = ranks
    phases = []
    for s in range(steps):
        width = 1 << (steps - 1 - s)
        lo = (v[peers[s]] // width) * width
        phases.append(Phase(q, REDUCE, lambda s=s, width=width: (ranks, ranks[peers[s]], np.full(q, width, np.int64)),
                            lambda i, lo=lo, width=width: Pieces.single(lo, lo + width)))
    return Phases(Collective.REDUCE_SCATTER, nranks, q, tuple(phases), owner=owner)


def allgather_steps(peers: np.ndarray, ranks: np.ndarray, nranks: int) -> Phases:
    """The butterfly allgather that undoes :func:`reduce_scatter_steps` (far peers first, the data doubling),
    described step by step: at its step L-1-s every rank sends the aligned range of 2^(L-1-s) positions holding its
    own position to its step-s peer.

    Returns:
        A :class:`~directcoll.schedule.phases.Phases` of an allgather on p = len(ranks) blocks, one phase per step,
        owner as :func:`reduce_scatter_steps`'s.

    Raises:
        UnsupportedShapeError: the peers do not form a power-of-two butterfly.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1.1 (the allgather selects peers in reverse order).

    >>> allgather_steps(peer_table("recdoub", (4,), 0, False), np.arange(4), 4).schedule().num_steps
    2
    """
    v = block_positions(peers)
    steps, q = peers.shape
    ranks = np.asarray(ranks, dtype=np.int64)
    owner = np.empty(q, dtype=np.int64)
    owner[v] = ranks
    phases = []
    for s in reversed(range(steps)):
        width = 1 << (steps - 1 - s)
        lo = (v // width) * width
        phases.append(Phase(q, COPY, lambda s=s, width=width: (ranks, ranks[peers[s]], np.full(q, width, np.int64)),
                            lambda i, lo=lo, width=width: Pieces.single(lo, lo + width)))
    return Phases(Collective.ALLGATHER, nranks, q, tuple(phases), owner=owner)


def exchange_steps(peers: np.ndarray, ranks: np.ndarray, nranks: int) -> Phases:
    """Latency-optimal allreduce, described step by step: at every step every rank reduces its whole part (one
    block) into its peer.

    Returns:
        A :class:`~directcoll.schedule.phases.Phases` of an allreduce on one block, one phase per step.

    Raises:
        Nothing: numpy on the tables given.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1.2 (latency-optimal Swing) and Sec. 2.3.2 (latency-optimal
    recursive doubling).

    >>> exchange_steps(peer_table("swing", (4,), 0, False), np.arange(4), 4).schedule()
    Schedule(allreduce, unknown, N=4, nblocks=1, steps=2, transfers=8)
    """
    ranks = np.asarray(ranks, dtype=np.int64)
    q = len(ranks)
    zeros, ones = np.zeros(q, np.int64), np.ones(q, np.int64)
    return Phases(Collective.ALLREDUCE, nranks, 1, tuple(
        Phase(q, REDUCE, lambda row=row: (ranks, ranks[row], ones), lambda i: Pieces.single(zeros, ones))
        for row in peers))


def latency_steps(nranks: int, fold: Fold, peers: list[np.ndarray], meta: dict) -> Phases:
    """The latency-optimal allreduce on a fold's power-of-two sub-grid, one part (one block) per peer table,
    described step by step: the fold's pre-step, every part exchanged whole at every step, the post-step.

    Args:
        nranks: N; fold: the grid's :class:`Fold`; peers: one int64 (L, q) peer table per part (q = the sub-grid's
            ranks); meta: the result's metadata.

    Returns:
        A :class:`~directcoll.schedule.phases.Phases` of an allreduce on len(peers) blocks.

    Raises:
        Nothing: numpy on the tables given.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1.2 (latency-optimal Swing), Sec. 2.3.2 (latency-optimal
    recursive doubling and its non-power-of-two steps).

    >>> f = Fold((6,))
    >>> latency_steps(6, f, [peer_table("recdoub", f.sub_shape, 0, False)], {}).num_steps  # pre, 2, post
    4
    """
    k = len(peers)
    body = concurrent([exchange_steps(pt, fold.sub_ranks, nranks) for pt in peers])
    return Phases(Collective.ALLREDUCE, nranks, k, (*fold.pre(k), *body.phases, *fold.post(k)), meta=meta)


class Fold:
    """The standard non-power-of-two pre/post steps, applied per torus dimension.

    In every dimension of size d, d' = 2^floor(log2 d) coordinates stay and the other x = d - d' fold onto
    coordinate a - x. A rank with any folded coordinate sends its whole vector (reduce) to its image in the
    d'_0 x d'_1 x ... sub-grid in one pre-step; the sub-grid runs the power-of-two algorithm; one post-step
    copies the result back (Swing Sec. 2.3.2, "Non-power-of-two"; Thakur et al.). Costs two extra steps and
    one extra vector transfer.

    Attributes:
        shape, sub_shape: the torus and its power-of-two sub-grid (tuples of D ints).
        extras, targets: int64 (E,), the folded ranks and their images in the sub-grid.
        sub_ranks: int64 (prod(sub_shape),), the sub-grid's ranks (row-major in ``sub_shape``).

    Raises:
        Nothing: any shape of sizes >= 1 folds.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.2, "Non-power-of-two" (reduce to the largest power of two
    p' < p first; Thakur et al.).

    >>> f = Fold((6,))
    >>> f.sub_shape, f.extras.tolist(), f.targets.tolist()
    ((4,), [4, 5], [2, 3])
    """

    def __init__(self, shape: tuple[int, ...]) -> None:
        self.shape = tuple(shape)
        self.sub_shape = tuple(1 << int(np.floor(np.log2(d))) for d in shape)
        p = int(np.prod(shape))
        coords = np.stack(np.unravel_index(np.arange(p), shape), axis=-1)
        sub = np.asarray(self.sub_shape)
        extra = (coords >= sub).any(axis=1)
        image = np.where(coords >= sub, coords - (np.asarray(shape) - sub), coords)
        self.extras = np.flatnonzero(extra)
        self.targets = np.ravel_multi_index(tuple(image[extra].T), shape)
        sub_coords = np.stack(np.unravel_index(np.arange(int(np.prod(self.sub_shape))), self.sub_shape), -1)
        self.sub_ranks = np.ravel_multi_index(tuple(sub_coords.T), shape).astype(np.int64)

    @property
    def needed(self) -> bool:
        """Whether any rank folds (some dimension is not a power of two). Raises: Nothing.
        Source: Swing (NSDI'24) Sec. 2.3.2.
        """
        return len(self.extras) > 0

    def pre(self, blocks: int) -> list[Phase]:
        """The pre-step, if needed: every folded rank reduces its whole buffer ([0, blocks)) into its image.

        Returns:
            A list of one :class:`~directcoll.schedule.phases.Phase` (none when nothing folds).

        Raises:
            Nothing: numpy on the fold's arrays.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.2, "Non-power-of-two".

        >>> [ph.count for ph in Fold((6,)).pre(1)], Fold((4,)).pre(1)
        ([2], [])
        """
        return [_whole(REDUCE, self.extras, self.targets, blocks)] if self.needed else []

    def post(self, blocks: int) -> list[Phase]:
        """The post-step, if needed: every image copies the whole result ([0, blocks)) back to its folded rank.

        Returns:
            A list of one :class:`~directcoll.schedule.phases.Phase` (none when nothing folds).

        Raises:
            Nothing: numpy on the fold's arrays.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.2, "Non-power-of-two".
        """
        return [_whole(COPY, self.targets, self.extras, blocks)] if self.needed else []


def _whole(op: int, src: np.ndarray, dst: np.ndarray, blocks: int) -> Phase:
    """One step in which every src sends its whole buffer [0, blocks) to its dst."""
    n = len(src)
    start, stop = np.zeros(n, np.int64), np.full(n, blocks, np.int64)
    return Phase(n, op, lambda: (src, dst, stop), lambda i: Pieces.single(start, stop))


def logical_shape(topology: Topology) -> tuple[int, ...]:
    """The grid the torus algorithms run on: the topology's shape, or a 1D ring of its ranks.

    Returns:
        A tuple of D ints (dimension sizes) whose product is N.

    Raises:
        Nothing: every topology has one or the other.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.2 (D-dimensional tori d_0 x ... x d_(D-1)).

    >>> from directcoll.topology import parse
    >>> logical_shape(parse("torus:4x4")), logical_shape(parse("complete:5"))
    ((4, 4), (5,))
    """
    return topology.shape if topology.shape is not None else (topology.num_compute,)


#: the most ports the Swing authors' library runs (``LIBSWING_MAX_SUPPORTED_PORTS``: a thread and one of
#: Tofu-D's six network interfaces each); a torus of more than 3 dimensions has 2D
LIBRARY_PORTS = 6


def collectives_for_ports(shape: tuple[int, ...], ports: int | None, name: str) -> list[tuple[int, bool]]:
    """(first dimension, mirrored) of each concurrent collective, one per port on its own share of the vector:
    all 2D of them by default, the D plain collectives (port p starting in dimension p) before the D mirrored ones,
    so that fewer ports spread over the dimensions before they mirror. More than 2D ports repeat them in the same
    order (port p runs collective p mod 2D). Both are the order of the Swing authors' library on Fugaku, where a
    port is a thread and a network interface (Tofu-D has six) rather than a link: two ports then share each
    direction's links.

    Raises:
        UnsupportedShapeError: ports outside 1..max(2D, :data:`LIBRARY_PORTS`).

    Returns:
        ``ports`` pairs ordered plain(dim 0), ..., plain(dim D-1), mirrored(dim 0), ..., mirrored(dim D-1), then
        again from the start.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 4.1 (D plain and D mirrored collectives); beyond 2D,
    ``is_mirroring_port`` and ``compute_peers`` (port p starts in dimension p mod D) in the authors'
    ``lib/libswing_common.cc`` (HLC-Lab/bine_trees_fugaku).

    >>> collectives_for_ports((4, 4), None, "swing")
    [(0, False), (1, False), (0, True), (1, True)]
    >>> collectives_for_ports((4, 4, 4), 3, "swing")  # three ports on a 3D torus: one plain collective a dimension
    [(0, False), (1, False), (2, False)]
    >>> collectives_for_ports((16,), 4, "swing")  # four ports on a ring: two on each direction
    [(0, False), (0, True), (0, False), (0, True)]
    """
    full = [(dim, mirrored) for mirrored in (False, True) for dim in range(len(shape))]
    ports = len(full) if ports is None else ports
    most = max(len(full), LIBRARY_PORTS)
    if isinstance(ports, bool) or not isinstance(ports, int | np.integer) or not 1 <= ports <= most:
        raise UnsupportedShapeError(f"{name}: ports must be between 1 and {most} on shape "
                                    f"{'x'.join(map(str, shape))} (2D = {len(full)} use every link once; up to "
                                    f"{LIBRARY_PORTS} as the Swing library runs them), got {ports}")
    return [full[p % len(full)] for p in range(ports)]


def mirrored_count(parts: list[tuple[int, bool]]) -> int:
    """How many of :func:`collectives_for_ports`'s collectives are mirrored: a schedule's ``meta["mirrored"]``,
    which a library that sets up the mirrored collectives' peers apart pays for (``mirror_overhead``,
    docs/simulation.md, "Hosts and implementations"). Raises: Nothing.
    Source: Swing (De Sensi et al., NSDI'24) Sec. 4.1.

    >>> mirrored_count(collectives_for_ports((4, 4, 4), 3, "swing"))  # ports 4 to 6 run the mirrored ones
    0
    >>> mirrored_count(collectives_for_ports((16,), 2, "swing"))  # on a ring, every second port
    1
    """
    return sum(1 for _, mirrored in parts if mirrored)
