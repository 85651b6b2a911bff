"""Swing's block sets on one dimension: the plans the torus constructions lift (Swing Sec. 3.1.1, 3.2, App. A.2).

A *1D plan* on a ring of d ranks lists, for every reduce-scatter step index sigma (0 = the nearest peer), the
allgather's transfers (src, dst, blocks) at that step, blocks a bool mask of shape (d,); block b starts at rank
b. Two constructions: :func:`swing_1d_allgather` (Eq. 2's peers on the even part, Fig. 3's extra rank on an odd
d) and :func:`libswing_1d_allgather` (the authors' library: negabinary bitmaps, even d only). :func:`mirror_1d`
gives the mirrored collective's plan (Sec. 4.1). :func:`~directcoll.algorithms.swing.schedule.product_allgather`
lifts them to any torus shape.

Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1.1 (Eq. (2)), 3.2 (Fig. 3), 4.1 and App. A.2; the authors'
libswing.

>>> sorted(swing_1d_allgather(6))
[0, 1, 2]
"""

from __future__ import annotations

import numpy as np

from directcoll.algorithms import butterfly as bf
from directcoll.errors import UnsupportedShapeError


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


def mirror_1d(plan: dict, d: int) -> dict:
    """A 1D plan conjugated by a -> -a mod d (ranks and blocks): the mirrored collective of Sec. 4.1.

    Returns:
        A plan of the same steps, every (src, dst, mask) mapped to (-src, -dst, mask[-b]) modulo d.

    Raises:
        Nothing: index arithmetic on the plan given.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 4.1 (the mirrored collective leaves through the opposite port).

    >>> [(a, q) for a, q, _ in mirror_1d(swing_1d_allgather(4), 4)[0]]
    [(0, 3), (3, 0), (2, 1), (1, 2)]
    """
    neg = (-np.arange(d)) % d
    return {s: [(int(neg[a]), int(neg[q]), mask[neg]) for a, q, mask in sends] for s, sends in plan.items()}
