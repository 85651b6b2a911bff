"""Swing allreduce, reduce-scatter and allgather (De Sensi et al., NSDI'24, Sec. 3-4, App. A).

Constructions:

- **Power-of-two tori, bandwidth-optimal** (Sec. 3.1.1, 4.1, 4.2): a butterfly reduce-scatter with Swing's
  peers and the logical block remapping, so every send is one contiguous piece; the allgather is its
  reversal. See :mod:`directcoll.algorithms.butterfly`.
- **Other shapes, bandwidth-optimal** (Sec. 3.2, App. A.2), built per dimension and lifted to the torus as a
  product: in a dimension of even size every rank sends only blocks its peer does not already have ("never
  send a block twice"); in a dimension of odd size d the first d-1 coordinates run Swing and the last one
  exchanges one block directly with ceil(remaining/2) of them per step (the last step takes the rest),
  as in Fig. 3. No extra step is needed; an odd dimension adds one block per rank (the 1/p of Sec. 3.2).
  Blocks stay in rank order, and a send is as many pieces as its block set has runs.
- **Latency-optimal** (Sec. 3.1.2): every step exchanges the whole vector with the Swing peer. Power-of-two
  tori only; other shapes first fold onto the largest power-of-two sub-grid and unfold at the end
  (:class:`~directcoll.algorithms.butterfly.Fold`), our documented fallback: Sec. 3.2 only treats the
  bandwidth-optimal algorithm, and whole-vector reductions cannot skip duplicated contributions.
- **libswing** (the authors' library, a variant): Eq. 2's peers modulo d for ceil(log2 d) steps on every
  dimension, block sets from negabinary bitmaps (:func:`libswing_1d_allgather`), lifted by the same product.
  Identical block sets to the construction above on even dimensions; refused on odd ones, where it is not an
  allreduce (docs/algorithms.md, "Swing on odd dimensions").

Multiport (Sec. 4.1): ``ports`` collectives run side by side on equal parts of the vector, ordered
plain(dim 0), mirrored(dim 0), plain(dim 1), mirrored(dim 1), ...; the default uses all 2D.

Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1.1 (Eq. (2), Listing 1), 3.1.2, 3.2 (Fig. 3), 4.1, 4.2 and
App. A.

>>> from directcoll.topology import parse
>>> swing(parse("torus:4x4"))
Schedule(allreduce, swing, N=16, nblocks=64, steps=8, transfers=512)
"""

from __future__ import annotations

import numpy as np

from directcoll.algorithms import butterfly as bf
from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import COPY, Collective, Schedule, ScheduleBuilder
from directcoll.schedule.ops import concurrent, from_reduce_scatter, reverse
from directcoll.topology.model import Topology

VARIANTS = ("bandwidth", "latency", "libswing")


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


def collectives_for_ports(shape: tuple[int, ...], ports: int | None, name: str) -> list[tuple[int, bool]]:
    """(first dimension, mirrored) of each concurrent collective: all 2D of them by default.

    Raises:
        UnsupportedShapeError: ports outside 1..2D.

    Returns:
        ``ports`` pairs ordered plain(dim 0), mirrored(dim 0), plain(dim 1), ...

    Source: Swing (De Sensi et al., NSDI'24) Sec. 4.1 (D plain and D mirrored collectives).

    >>> collectives_for_ports((4, 4), None, "swing")
    [(0, False), (0, True), (1, False), (1, True)]
    """
    full = [(dim, mirrored) for dim in range(len(shape)) for mirrored in (False, True)]
    ports = len(full) if ports is None else ports
    if not 1 <= ports <= len(full):
        raise UnsupportedShapeError(f"{name}: ports must be between 1 and 2D = {len(full)} on shape "
                                    f"{'x'.join(map(str, shape))}, got {ports}")
    return full[:ports]


# -- 1D building block for the general shapes -------------------------------------------------------------
def swing_1d_allgather(d: int) -> dict[int, list[tuple[int, int, np.ndarray]]]:
    """Plain Swing allgather on a ring of d >= 2 ranks as block sets (Sec. 3.1.1, 3.2, App. A.2).

    Returns:
        For every reduce-scatter step index sigma (0 = nearest peer), the allgather's transfers
        (src, dst, blocks) at that step, blocks a bool mask of shape (d,). The allgather runs sigma from
        the largest down to 0. Block b starts at rank b.

    Raises:
        UnsupportedShapeError: if the construction leaves some rank without some block (not expected; the
            paper's App. A.2 proves it cannot happen).

    Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1.1 (Eq. (2): pi(r, s) = r +- rho(s), with
    rho(s) = (1 - (-2)^(s+1)) / 3), Sec. 3.2 (odd p: node p - 1 exchanges with (p - 1) / 2^s nodes per step,
    Fig. 3) and App. A.2.

    >>> plan = swing_1d_allgather(7)
    >>> sorted(plan), [(a, q, m.nonzero()[0].tolist()) for a, q, m in plan[0][:1]]
    ([0, 1, 2], [(0, 1, [0, 3])])
    """
    m = d if d % 2 == 0 else d - 1          # ranks that run Swing; an odd d adds rank d-1 (Fig. 3)
    steps = max(1, int(np.ceil(np.log2(m))))
    base = np.arange(m)
    known = np.eye(d, dtype=bool)
    in_base = np.arange(d) < m
    groups: dict[int, np.ndarray] = {}
    rest = list(range(m)) if m < d else []
    for sigma in range(steps):
        take = len(rest) if sigma == steps - 1 else -(-len(rest) // 2)
        groups[sigma], rest = np.array(rest[:take], dtype=np.int64), rest[take:]
    plan: dict[int, list[tuple[int, int, np.ndarray]]] = {}
    for sigma in range(steps - 1, -1, -1):
        r = int(bf.rho(sigma))
        peer = np.where(base % 2 == 0, base + r, base - r) % m
        sends = [(int(a), int(q), known[a] & ~known[q] & in_base) for a, q in zip(base, peer, strict=True)]
        sends = [t for t in sends if t[2].any()]
        for j in groups.get(sigma, ()):
            sends.append((d - 1, int(j), np.arange(d) == d - 1))
            sends.append((int(j), d - 1, np.arange(d) == j))
        for _src, q, mask in sends:
            known[q] |= mask
        plan[sigma] = sends
    if not known.all():
        raise UnsupportedShapeError(f"swing: the block-set construction is incomplete on a ring of {d} ranks")
    return plan


def _negabinary(x: int) -> int:
    """The integer whose negabinary (base -2) digits are the bits of x."""
    return sum((-2) ** i for i in range(x.bit_length()) if x >> i & 1)


def _first_step(x: int, steps: int) -> int:
    """The step a path starts at, from its negabinary digits: the run of equal low digits, minus one."""
    run = 0
    while run < steps and (x >> run & 1) == (x & 1):
        run += 1
    return run - 1


def libswing_1d_allgather(d: int, *, refuse_odd: bool = True) -> dict[int, list[tuple[int, int, np.ndarray]]]:
    """The Swing authors' library's construction on a ring of d ranks, as :func:`swing_1d_allgather`'s plan.

    libswing (the authors' code, ``compute_peers`` and ``get_blocks_bitmaps``) runs Eq. 2's peers modulo d for
    L = ceil(log2 d) steps on every d, with no rank set apart. In the reduce-scatter, rank r sends at step s the
    blocks r + rho(s0) - rho(s1) + rho(s2) - ... (mod d; signs flipped for odd r) over every step sequence
    s = s0 < s1 < ... <= L-1: the L-digit negabinary numbers whose run of equal low digits has length s + 1 (low
    digit 1: added, low digit 0: subtracted, for even r). A block that another L-digit negabinary number
    congruent modulo d reaches through a later first step is left to that step (each block is sent once), and a
    block reached twice in one step is sent once (the library keeps a bitmap). The allgather reverses it.

    For every even d this gives exactly the block sets of :func:`swing_1d_allgather` (tests/test_nonpow2_baselines.py
    checks d = 2..64); for odd d the peer function is not a pairing (d = 3, step 0: rank 2 sends to 0, which
    exchanges with 1) and the exact verifier finds doubled and missing contributions for every odd d from 3 to 33,
    so odd d is refused (``refuse_odd=False`` builds it anyway, to show the failure).

    Returns:
        For every step index sigma, the allgather's transfers (src, dst, blocks), blocks a bool mask of shape (d,).

    Raises:
        UnsupportedShapeError: d odd (the construction is not an allreduce there) or d < 2.

    Source: the Swing authors' libswing (De Sensi et al., NSDI'24 artifact: Eq. 2 modulo d, ceil(log2 d) steps per
    dimension, negabinary block bitmaps); Swing Sec. 3.1.1 (Listing 1) and App. A.2 (odd p "might not reach all the
    nodes").

    >>> [(a, q, m.nonzero()[0].tolist()) for a, q, m in libswing_1d_allgather(6)[2]]
    [(3, 0, [3]), (4, 1, [4]), (5, 2, [5]), (0, 3, [0]), (1, 4, [1]), (2, 5, [2])]
    """
    if d < 2 or (d % 2 and refuse_odd):
        raise UnsupportedShapeError(
            f"swing: the libswing variant (the authors' library: Eq. 2's peers modulo d, ceil(log2 d) steps) is not "
            f"an allreduce on a dimension of odd size {d} (at step 0 rank d-1 sends to 0, which exchanges with 1; "
            "the exact verifier finds doubled and missing contributions); use --variant bandwidth (Fig. 3: d-1 ranks "
            "plus one)" if d >= 2 else f"swing: the libswing variant needs dimensions of size >= 2, got {d}")
    steps = max(1, int(np.ceil(np.log2(d))))
    value = {_negabinary(x): x for x in range(1 << steps)}
    ranks = np.arange(d)
    sign = np.where(ranks % 2 == 0, 1, -1)
    plan: dict[int, list[tuple[int, int, np.ndarray]]] = {}
    for s in range(steps):
        offsets = set()
        for x in range(1, 1 << steps):
            v = _negabinary(x)
            if _first_step(x, steps) != s or v % d == 0:
                continue
            later = any(_first_step(value[v + k * d], steps) > s for k in range(-4, 5)
                        if k and v + k * d in value)
            if not later:
                offsets.add(v if x & 1 else -v)
        peer = (ranks + sign * int(bf.rho(s))) % d
        sends = []
        for a in range(d):
            mask = np.zeros(d, dtype=bool)
            mask[[(a + sign[a] * o) % d for o in offsets]] = True
            if mask.any():
                sends.append((int(peer[a]), a, mask))   # the allgather runs the reduce-scatter's a -> peer backwards
        plan[s] = sends
    return plan


def _mirror_1d(plan, d: int):
    """Conjugate a 1D plan by a -> -a mod d (ranks and blocks): the mirrored collective of Sec. 4.1."""
    neg = (-np.arange(d)) % d
    return {s: [(int(neg[a]), int(neg[q]), mask[neg]) for a, q, mask in sends] for s, sends in plan.items()}


def _mask_runs(masks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs of True in every row of a (B, n) bool array: (row, start, stop), sorted by row then start."""
    padded = np.zeros((masks.shape[0], masks.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = masks
    edges = np.diff(padded, axis=1)
    rows, starts = np.nonzero(edges == 1)
    _, stops = np.nonzero(edges == -1)
    return rows, starts, stops


def product_allgather(shape: tuple[int, ...], first_dim: int, mirrored: bool, *,
                      plan_1d=swing_1d_allgather) -> Schedule:
    """Swing allgather on any torus shape, lifted dimension by dimension from :func:`swing_1d_allgather`.

    At a step in dimension w, a 1D transfer x -> y with block set M becomes, for every rank a with a_w = x,
    a transfer to a + (y - x) e_w of the blocks b with b_w in M and b_i in the set rank a currently knows
    in dimension i (i != w). Blocks are in rank order (block b starts at rank b).

    Args:
        shape: the torus shape (d_0, ..., d_(D-1)), every d_i >= 2.
        first_dim: the dimension of step 0 (steps cycle through the dimensions, Sec. 4.1).
        mirrored: run the mirrored collective (ranks and blocks negated).
        plan_1d: the 1D construction (:func:`swing_1d_allgather`, Fig. 3; :func:`libswing_1d_allgather`, the
            authors' library).

    Returns:
        An allgather Schedule with N = nblocks = prod(shape) and MPI's ownership.

    Raises:
        UnsupportedShapeError: a 1D construction left a rank without a block (App. A.2 proves it cannot happen).

    Source: Swing (De Sensi et al., NSDI'24) Sec. 4.1 (one dimension per step, omega(s) = s mod D), Sec. 4.2
    (non-square tori) and Sec. 3.2.

    >>> product_allgather((3,), 0, False)
    Schedule(allgather, unknown, N=3, nblocks=3, steps=1, transfers=6)
    """
    p = int(np.prod(shape))
    plans = [plan_1d(d) for d in shape]
    if mirrored:
        plans = [_mirror_1d(pl, d) for pl, d in zip(plans, shape, strict=True)]
    known = [np.eye(d, dtype=bool) for d in shape]
    coords = np.stack(np.unravel_index(np.arange(p), shape), axis=-1)
    seq = bf.dimension_sequence([len(pl) for pl in plans], first_dim)
    b = ScheduleBuilder(Collective.ALLGATHER, p, p)
    for step, (dim, sigma) in enumerate(reversed(seq)):
        for x, y, mask in plans[dim][sigma]:
            senders = np.flatnonzero(coords[:, dim] == x)
            sets = np.ones((len(senders),) + shape, dtype=bool)
            for i, d in enumerate(shape):
                view = [len(senders)] + [1] * len(shape)
                view[i + 1] = d
                rows = np.broadcast_to(mask, (len(senders), d)) if i == dim else known[i][coords[senders, i]]
                sets &= rows.reshape(view)
            row, start, stop = _mask_runs(sets.reshape(len(senders), p))
            counts = np.bincount(row, minlength=len(senders))
            dst = senders + (y - x) * int(np.prod(shape[dim + 1:]))
            b.add_pieces(step, senders, dst, COPY, counts, start, stop)
        for _x, y, mask in plans[dim][sigma]:
            known[dim][y] |= mask
    return b.build()


# -- the algorithm ----------------------------------------------------------------------------------------
def swing(topology: Topology, collective=Collective.ALLREDUCE, *, variant: str | None = None,
          ports: int | None = None) -> Schedule:
    """Swing on the topology's grid (its shape; a 1D ring of its ranks if it has none).

    Args:
        topology: any topology; tori, meshes, HyperX, HammingMesh and hypercubes use their shape.
        collective: allreduce, reduce_scatter or allgather (the latter two bandwidth-optimal only).
        variant: "bandwidth" (default; 2 ceil(log2 d_i) steps summed over dimensions, Psi = 1) or
            "latency" (allreduce only, sum of log2 steps, whole vector every step) or "libswing" (the authors'
            library's block bitmaps, :func:`libswing_1d_allgather`: the bandwidth variant's steps and block sets on
            even dimensions, blocks in rank order; refuses odd dimensions).
        ports: concurrent collectives, 1..2D (default 2D: D plain + D mirrored, Sec. 4.1).

    Returns:
        The schedule, meta = {algorithm, variant, ports, construction}. nblocks = ports * N for the
        bandwidth-optimal variant, ports for the latency-optimal one.

    Raises:
        UnsupportedShapeError: latency variant with a collective other than allreduce, an unknown variant, ports
            out of range, the libswing variant on a dimension of odd size.
        ScheduleError: an unknown collective name.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1.1 (bandwidth-optimal, Lambda = 2, Psi = 1), 3.1.2
    (latency-optimal, Lambda = 1, Psi = D log2 p), 3.2 (non-power-of-two), 4.1-4.2 (multiport, tori), Table 2.

    >>> from directcoll.topology import parse
    >>> swing(parse("torus:4x4"), variant="latency").meta["construction"]
    'butterfly'
    >>> swing(parse("torus:6x4"), "reduce_scatter").meta["construction"]
    'block-set product'
    """
    collective = Collective.parse(collective)
    variant = variant or "bandwidth"
    shape = logical_shape(topology)
    parts = collectives_for_ports(shape, ports, "swing")
    meta = {"algorithm": "swing", "variant": variant, "ports": len(parts)}
    p = topology.num_compute
    if variant == "latency":
        if collective is not Collective.ALLREDUCE:
            raise UnsupportedShapeError("swing: the latency-optimal variant is an allreduce; use "
                                        "--variant bandwidth for reduce_scatter and allgather")
        fold = bf.Fold(shape)
        b = ScheduleBuilder(Collective.ALLREDUCE, p, len(parts))
        s0 = fold.add_pre(b, 0, len(parts))
        steps = 0
        for i, (dim, mirrored) in enumerate(parts):
            peers = bf.peer_table("swing", fold.sub_shape, dim, mirrored)
            bf.add_exchange(b, peers, fold.sub_ranks, s0, i, i + 1)
            steps = len(peers)
        fold.add_post(b, s0 + steps, 0, len(parts))
        return b.build(meta={**meta, "construction": "fold" if fold.needed else "butterfly"})
    if variant not in VARIANTS:
        raise UnsupportedShapeError(f"swing: unknown variant {variant!r}; accepted: {', '.join(VARIANTS)}")
    if variant == "libswing":
        rs = reverse(concurrent([product_allgather(shape, dim, mirrored, plan_1d=libswing_1d_allgather)
                                 for dim, mirrored in parts]))
        construction = "libswing bitmaps"
    elif all(bf.is_power_of_two(d) for d in shape):
        rs_parts = []
        for dim, mirrored in parts:
            b = ScheduleBuilder(Collective.REDUCE_SCATTER, p, p)
            pos = bf.add_reduce_scatter(b, bf.peer_table("swing", shape, dim, mirrored), np.arange(p), 0, 0)
            owner = np.empty(p, dtype=np.int64)
            owner[pos] = np.arange(p)
            rs_parts.append(b.build(owner=owner))
        rs = concurrent(rs_parts)
        construction = "butterfly"
    else:
        rs = reverse(concurrent([product_allgather(shape, dim, mirrored) for dim, mirrored in parts]))
        construction = "block-set product"
    return from_reduce_scatter(rs, collective, meta={**meta, "construction": construction})
