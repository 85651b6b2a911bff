"""Generalized allreduce for any number of processes (Kolmakov & Zhang, "A Generalization of the Allreduce
Operation", Sec. 5-9).

The vector of every process is cut into P parts. A *distributed vector* at placement k holds part b at process
t_k(b) = b + k (the group T_P acting on ranks; Sec. 5.2 with h = identity), so each process holds one element
of every distributed vector, and the P distributed vectors at placements 0..P-1 are the initial data.

- **Bandwidth-optimal** (Sec. 7): with N_0 = P vectors, step i applies the operator t^(-f_i), f_i =
  floor(N_i / 2), to the vectors at placements N_i - f_i .. N_i - 1, which land on (and are reduced into) the
  vectors at placements N_i - 2 f_i ..; N_(i+1) = ceil(N_i / 2) remain (eq. 17-24). After ceil(log2 P) steps
  placement 0 holds the sum: part b at rank b, a reduce-scatter with MPI's ownership. The distribution phase
  is the same steps reversed, as copies (eq. 25).
- **Intermediate** (Sec. 8): to drop the first r distribution steps the reduction must end with the sum at the
  N_(L-r) placements the shortened distribution starts from (the paper asks for 2^r, an upper bound of
  N_(L-r)); each of them is the Sec. 7 reduction shifted by its placement, with the same operators (eq. 26).
  We run the union of these shifted reductions: a vector shared by several of them (same placement, same
  partial sum) is sent and reduced once, so each step sends the distinct vectors only (eq. 32); where two of
  them hold different partial sums at one placement (the paper's q* and q'), the second lives in scratch
  space, and a received vector may be reduced into both (one message, two reductions: eq. 33-35).
- **Latency-optimal** (Sec. 9): r = ceil(log2 P): every placement ends with the sum; no distribution phase
  (eq. 38-44).

The group is the cyclic group by default (t: rank j -> j + 1); ``group="xor"`` is the group of Table 1.b for
power-of-two P (t_k: j -> j XOR k), with which the bandwidth-optimal algorithm is recursive halving and the
latency-optimal one recursive doubling (Sec. 7, 8). Any abelian group of order P given by its cyclic factors
(``group="4x3"``) that has a fold order serves (``directcoll.algorithms.generalized.groups``: placements are the group
elements e_k of the fold order instead of t^k, the step operators g_i instead of t^(-f_i)), and ``placement`` is
the paper's h (Sec. 5.1-5.2): rank b's part sits at group element h(b), so the group acts on ranks through h.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from directcoll.algorithms.generalized.groups import PLACEMENTS, AbelianGroup, fold_counts, group_of, placement_of
from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import COPY, REDUCE, Collective, Schedule, ScheduleBuilder
from directcoll.schedule.ops import from_reduce_scatter
from directcoll.topology.model import Topology

GROUPS = ("cyclic", "xor", "N1xN2x... (cyclic factors whose product is P)")


def num_steps(p: int) -> int:
    """ceil(log2 P), the reduction steps of every version (at least 1).

    Returns:
        L, an int (steps).

    Raises:
        Nothing: arithmetic (callers check P >= 2).

    Source: Kolmakov & Zhang, Sec. 7 (the reduction phase takes ceil(log P) steps).

    >>> num_steps(7), num_steps(8)
    (3, 3)
    """
    return max(1, math.ceil(math.log2(p)))


@dataclass(frozen=True)
class _Space:
    """The group, its fold order and the placement h: schedules are computed on group elements (codes) and
    written for ranks and blocks through h (rank b and block b sit at element h[b])."""

    g: AbelianGroup
    h: np.ndarray

    @property
    def p(self) -> int:
        return self.g.p

    @cached_property
    def hinv(self) -> np.ndarray:
        inv = np.empty(self.p, dtype=np.int64)
        inv[self.h] = np.arange(self.p)
        return inv

    def at(self, k: int) -> int:
        """The element of position k of the fold order."""
        return int(self.g.fold[0][k])

    def add(self, a, b):
        return self.g.add(a, b)

    def neg(self, a):
        return self.g.neg(a)


def _space(p: int, group, placement=None, shape=None) -> _Space:
    g = group_of(group, p)
    return _Space(g, placement_of(placement, g, shape))


def _check(p: int, r: int) -> int:
    if p < 2:
        raise UnsupportedShapeError(f"generalized allreduce needs P >= 2 processes, got {p}")
    steps = num_steps(p)
    if not 0 <= r <= steps:
        raise UnsupportedShapeError(f"generalized: r must be between 0 (bandwidth-optimal) and ceil(log2 P) = "
                                    f"{steps} (latency-optimal) for P = {p}, got {r}")
    return steps


def generalized_allreduce(p: int, r: int = 0, group="cyclic", placement=None, shape=None) -> Schedule:
    """Generalized allreduce on P >= 2 ranks with 2 ceil(log2 P) - r steps (module docstring).

    Args:
        p: number of processes, any P >= 2 (primes included).
        r: distribution steps removed: 0 = bandwidth-optimal (eq. 25), 0 < r < ceil(log2 P) intermediate
            (eq. 36), ceil(log2 P) = latency-optimal (eq. 44).
        group: "cyclic" (default), "xor" (Table 1.b, power-of-two P) or cyclic factors whose product is P
            ("4x3", "2x2x3"; :func:`directcoll.algorithms.generalized.groups.parse_group`).
        placement: the permutation h, rank b's part at group element h[b]: None / "identity", "aligned"
            (needs ``shape``) or a permutation (:func:`directcoll.algorithms.generalized.groups.placement_of`).
        shape: the topology's grid shape, for ``placement="aligned"``.

    Returns:
        An allreduce schedule with nblocks = P (part b = block b) and, for r > 0, scratch blocks for the
        second partial sum some placements hold; meta records r, the group and the placement.

    Raises:
        UnsupportedShapeError: P < 2, r out of range, a group that is not of order P or has no fold order
            (e.g. 3x3), or a placement that is not a permutation (or not alignable).

    Source: Kolmakov & Zhang, Sec. 5 (groups, h), Sec. 7 (eq. 17-25), Sec. 8 (eq. 26-36), Sec. 9 (eq. 38-44).

    >>> s = generalized_allreduce(7, r=1)
    >>> s.num_steps, s.nblocks, s.meta["variant"]
    (5, 7, 'intermediate')
    >>> generalized_allreduce(12, 0, "2x2x3").meta["group"]
    '2x2x3'
    """
    steps = _check(p, r)
    sp = _space(p, group, placement, shape)
    n = fold_counts(p)
    results = n[steps - r]
    b = ScheduleBuilder(Collective.ALLREDUCE, p, p)
    slots = _reduction(b, sp, n, results)
    codes = np.arange(p)
    for d in range(steps - r):  # distribution: the first reduction steps reversed, as copies, in the data slot
        i = steps - r - 1 - d
        f = n[i] // 2
        ks = np.array([sp.at(k) for k in range(n[i] - f, n[i])])
        dst = sp.add(codes, sp.g.fold_ops[i])
        parts = sp.hinv[sp.add(dst[:, None], sp.neg(ks)[None, :])]
        b.add_pieces(steps + d, sp.hinv, sp.hinv[dst], COPY, len(ks), parts.ravel(), parts.ravel() + 1)
    version = "bandwidth" if r == 0 else "latency" if r == steps else "intermediate"
    return b.build(nscratch=(slots - 1) * p, meta={"algorithm": "generalized", "variant": version, "r": r,
                                                   **_group_meta(group, sp, placement), "ports": 1})


def _group_meta(group, sp: _Space, placement) -> dict:
    name = group if group in ("cyclic", "xor") else sp.g.name
    if placement is None or isinstance(placement, str) and placement in PLACEMENTS:
        where = placement or "identity"
    else:
        where = ",".join(map(str, sp.h.tolist()))
    return {"group": name, "placement": where}


def generalized_reduce_scatter(p: int, group="cyclic", placement=None, shape=None) -> Schedule:
    """The reduction phase of the bandwidth-optimal version: rank b ends with part b summed (Sec. 7).

    Args:
        p: number of processes, any P >= 2; group, placement, shape: as :func:`generalized_allreduce`.

    Returns:
        A reduce-scatter schedule with nblocks = P, ceil(log2 P) steps and MPI's ownership (block b at rank b).

    Raises:
        UnsupportedShapeError: P < 2, or a group or placement :func:`generalized_allreduce` refuses.

    Source: Kolmakov & Zhang, Sec. 7, eq. (17)-(24).

    >>> generalized_reduce_scatter(7).num_steps
    3
    """
    _check(p, 0)
    sp = _space(p, group, placement, shape)
    b = ScheduleBuilder(Collective.REDUCE_SCATTER, p, p)
    _reduction(b, sp, fold_counts(p), 1)
    return b.build(meta={"algorithm": "generalized", "variant": "bandwidth", "r": 0,
                         **_group_meta(group, sp, placement), "ports": 1})


def _reduction(b: ScheduleBuilder, sp: _Space, n: list[int], results: int) -> int:
    """Emit the union of the reductions shifted by e_0..e_(results-1); returns the number of slots per placement.

    A vector is (placement, set of the original placements it sums), placements being group elements. Cell of a
    vector in slot s at placement k on the rank at element j: coordinate s*P + block of part j - k (blocks and
    ranks sit at elements through h). The sums the shortened distribution starts from end in slot 0 (the data).
    """
    p = sp.p
    full = (1 << p) - 1
    vid: dict[tuple[int, int], int] = {}
    vectors: list[tuple[int, int]] = []

    def vector(place: int, members: int) -> int:
        key = (place, members)
        if key not in vid:
            vid[key] = len(vectors)
            vectors.append(key)
        return vid[key]

    order = sp.g.fold[0]
    places = sp.add(order[None, :], order[:results, None]).tolist()  # placement of position k of shift s
    shifts = [[vector(e, 1 << e) for e in row] for row in places]
    slot = {v: 0 for v in range(len(vectors))}  # the raw vectors are the data
    codes = np.arange(p)
    slots_used = 1
    last = len(n) - 2
    for i in range(len(n) - 1):
        f = n[i] // 2
        low = n[i] - f
        existing = set(slot)
        combos: dict[tuple[int, int], int] = {}  # (base, moved) -> new vector
        new_shifts = []
        for state in shifts:
            nxt = []
            for k in range(n[i + 1]):
                base = state[k]
                if low <= k + f < n[i]:
                    moved = state[k + f]
                    w = vector(vectors[base][0], vectors[base][1] | vectors[moved][1])
                    if w not in existing:  # a partial sum another shift already holds is not made twice
                        combos[(base, moved)] = w
                    nxt.append(w)
                else:
                    nxt.append(base)
            new_shifts.append(nxt)
        alive = {v for state in new_shifts for v in state}
        made = {}  # new vector -> the (base, moved) that makes it
        for key, w in combos.items():
            made.setdefault(w, key)
        uses: dict[int, int] = {}
        for base, _ in made.values():
            uses[base] = uses.get(base, 0) + 1
        busy: dict[int, set[int]] = {}  # placement -> slots kept or written this step
        for v in alive & existing:
            busy.setdefault(vectors[v][0], set()).add(slot[v])
        targets: dict[int, tuple[int, bool]] = {}
        for w, (base, _) in made.items():  # reduce in place where the old partial sum is not needed again
            want_data = i == last and vectors[w][1] == full
            if base not in alive and uses[base] == 1 and (not want_data or slot[base] == 0):
                targets[w] = (slot[base], True)
                busy.setdefault(vectors[w][0], set()).add(slot[base])
        for w in sorted(set(made) - set(targets)):  # elsewhere: copy the partial sum, reduce the new part on top
            taken = busy.setdefault(vectors[w][0], set())
            want_data = i == last and vectors[w][1] == full
            free = 0 if want_data and 0 not in taken else next(s for s in range(p + 1) if s not in taken)
            targets[w] = (free, False)
            taken.add(free)
        for w, (s_to, _) in targets.items():
            slot[w] = s_to
            slots_used = max(slots_used, s_to + 1)
        _emit_step(b, sp, i, sp.g.fold_ops[i], vectors, slot, made, targets)
        shifts = new_shifts
    for state in shifts:  # a sum that was complete before the last step moves to the data slot in it
        v = state[0]
        if slot[v] != 0:
            parts = sp.hinv[sp.add(codes, sp.neg(vectors[v][0]))]
            b.add(last, sp.hinv, sp.hinv, COPY, slot[v] * p + parts, slot[v] * p + parts + 1, -slot[v] * p)
    return slots_used


def _emit_step(b: ScheduleBuilder, sp: _Space, step: int, op: int, vectors, slot, made, targets):
    """One transfer per rank to the rank at its element - op carrying every moved vector once (placed in each
    target cell), and one local transfer per rank for the partial sums that must be kept while a copy of them is
    extended."""
    p = sp.p
    codes = np.arange(p)
    dst = sp.hinv[sp.add(codes, sp.neg(op))]
    starts, shifts, local_starts, local_shifts = [], [], [], []
    for w, (base, moved) in made.items():
        s_to, in_place = targets[w]
        part = sp.hinv[sp.add(codes, sp.neg(vectors[moved][0]))]  # block held by the rank at element j
        starts.append(slot[moved] * p + part)
        shifts.append(np.full(p, (s_to - slot[moved]) * p))
        if not in_place:
            bpart = sp.hinv[sp.add(codes, sp.neg(vectors[base][0]))]
            local_starts.append(slot[base] * p + bpart)
            local_shifts.append(np.full(p, (s_to - slot[base]) * p))
    if starts:
        st = np.stack(starts, axis=1)
        b.add_pieces(step, sp.hinv, dst, REDUCE, st.shape[1], st.ravel(), st.ravel() + 1,
                     np.stack(shifts, 1).ravel())
    if local_starts:
        st = np.stack(local_starts, axis=1)
        b.add_pieces(step, sp.hinv, sp.hinv, COPY, st.shape[1], st.ravel(), st.ravel() + 1,
                     np.stack(local_shifts, 1).ravel())


def kolmakov_ring(p: int) -> Schedule:
    """Sec. 6: the cyclic group with the single operator t applied at every step: the ring allreduce.

    Reduction step i sends the vector at placement i (rank j sends part j - i to rank j + 1, which reduces);
    after P - 1 steps placement P - 1 holds the sum and the distribution applies t P - 1 more times (copies).

    Returns:
        An allreduce schedule with nblocks = P and 2(P - 1) steps.

    Raises:
        UnsupportedShapeError: P < 2.

    Source: Kolmakov & Zhang, Sec. 6, eq. (16) and Fig. 4.

    >>> kolmakov_ring(5).num_steps
    8
    """
    _check(p, 0)
    b = ScheduleBuilder(Collective.ALLREDUCE, p, p)
    ranks = np.arange(p)
    for i in range(2 * (p - 1)):
        part = (ranks - i) % p
        b.add(i, ranks, (ranks + 1) % p, REDUCE if i < p - 1 else COPY, part, part + 1)
    return b.build(meta={"algorithm": "generalized", "variant": "ring", "r": 0, "group": "cyclic", "ports": 1})


# -- registry ---------------------------------------------------------------------------------------------
VARIANTS = ("bandwidth", "latency", "ring")


def build_generalized(topology: Topology, collective=Collective.ALLREDUCE, *, variant: str | None = None,
                      ports: int | None = None, r: int | None = None, group="cyclic", placement=None) -> Schedule:
    """Registry builder of ``generalized``: :func:`generalized_allreduce` on the topology's N ranks (its shape for
    the ``aligned`` placement), its reduce-scatter and allgather (r = 0), or :func:`kolmakov_ring`.

    Args:
        topology: any topology of N >= 2 ranks (only N, and the shape for ``placement="aligned"``, are used).
        collective: ``allreduce``; ``reduce_scatter`` or ``allgather`` (the bandwidth-optimal version only).
        variant: ``bandwidth`` (r = 0, the default), ``latency`` (r = ceil(log2 P)) or ``ring`` (Sec. 6); None
            with an ``r`` between: the intermediate algorithm of Sec. 8.
        ports: None or 1 (one message per rank per step).
        r, group, placement: as :func:`generalized_allreduce`.

    Returns:
        The :class:`~directcoll.schedule.ir.Schedule`; meta names the variant, r and the group.

    Raises:
        UnsupportedShapeError: ports other than 1, the ring variant with r, a group or a placement, a reduce-scatter
            or allgather with r != 0, or as :func:`generalized_allreduce` (r out of range, a group without a fold
            order, a bad placement).
        ScheduleError: an unknown collective name.

    Source: Kolmakov & Zhang Sec. 6 (ring), 7 (bandwidth-optimal), 8 (intermediate), 9 (latency-optimal).

    >>> from directcoll.topology import parse
    >>> build_generalized(parse("ring:6"), variant="latency").meta["r"]
    3
    """
    collective = Collective.parse(collective)
    p = topology.num_compute
    if ports not in (None, 1):
        raise UnsupportedShapeError(f"generalized: single-port algorithm (one message per step), got ports={ports}")
    variant = variant or ("bandwidth" if r is None or r == 0 else None)
    group = group or "cyclic"
    if variant == "ring":
        if collective is not Collective.ALLREDUCE:
            raise UnsupportedShapeError(f"generalized: the ring variant is an allreduce, not {collective.value}")
        if r not in (None, 0) or group not in ("cyclic", str(p)) or placement not in (None, "identity"):
            raise UnsupportedShapeError("generalized: the ring variant is the cyclic group's single operator "
                                        f"(Sec. 6); it takes no r, group or placement (got r={r}, group={group}, "
                                        f"placement={placement})")
        return kolmakov_ring(p)
    steps = num_steps(p)
    r = (0 if variant == "bandwidth" else steps) if r is None else int(r)
    shape = tuple(topology.shape) if getattr(topology, "shape", None) is not None else None
    if collective is Collective.ALLREDUCE:
        return generalized_allreduce(p, r, group, placement, shape)
    if r != 0:
        raise UnsupportedShapeError(f"generalized: {collective.value} is the bandwidth-optimal version (r = 0)")
    return from_reduce_scatter(generalized_reduce_scatter(p, group, placement, shape), collective)
