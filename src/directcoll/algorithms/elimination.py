"""Rabenseifner's allreduce for any number of ranks with 3-2 elimination (Rabenseifner & Traeff, EuroPVM/MPI 2004).

The reduce-scatter is recursive vector halving with distance doubling (Swing Sec. 2.3.3); where the number of
ranks is not a power of two, the 3-2 elimination step absorbs one group of ranks into two others instead of
folding whole vectors onto a power-of-two subset first (:class:`~directcoll.algorithms.butterfly.Fold`, Swing Sec.
2.3.2). The allgather is the reduce-scatter reversed (Zhao et al. App. B, Theorem 1).

**How we read the protocol.** The paper is not in this project's corpus; we build from its 3-2 elimination step as
quoted in secondary sources: "the 3-2 elimination step is used on a group of three processes p0, p1, and p2, to
absorb the vector of process p2 into the partial results of process p0 and p1, which will survive for the
following rounds. [...] process p2 sends m'/2 (upper) elements to process p1, and simultaneously receives m'/2
(lower) elements from process p1. Process p1 and p2 can then perform the reduction operation on their respective
part of the vector. Next, process p0 receives the m'/2 (lower) elements of the partial result just computed from
process p2" and, we complete, sends its m'/2 upper elements to p1, so that p0 ends with the lower and p1 with the
upper half of the three ranks' sum: a reduce-scatter of three onto two, each rank sending m'/2 per step. How the
steps interleave with the halving rounds follows the paper's summary of its overlapping protocol, which
"schedules 3-2-elimination steps for a group of 2^z x 3 processes in each round z for which the z-th bit of p is
1" and whose round count does not "increase by more than 1, for a total of n + 1 = ceil(log2 p) rounds" (that
our assignment of roles below is the paper's own we cannot check; it reaches the same rounds and the published
bandwidth):

- A *unit* is a set of 2^z ranks that has finished z halving rounds: its j-th rank holds the unit's partial sum
  over the j-th of 2^z equal segments of the vector (m' = m / 2^z elements). Round 0 starts with P units of one
  rank each (the whole vector), in rank order.
- In round z the units pair up, (U_0, U_1), (U_2, U_3), ...; the j-th ranks of a pair exchange halves of their
  segment (the lower unit keeps the lower half), one step. When the number of units floor(P / 2^z) is odd, i.e. bit
  z of P is 1, the last three units run 2^z 3-2 elimination steps side by side (their j-th ranks form a triple),
  two steps. The triple's p0 and p1 merge into one unit of 2^(z+1) ranks, exactly like a pair; p2's ranks are
  eliminated (they get the result back from the reversed allgather).
- *Overlap*: a merged unit finishes one step after the pairs of its round. Of the last three units, the one at an
  end that is ready last plays p0, which waits during the triple's first exchange anyway, so the lateness never
  grows beyond one step: the reduce-scatter takes ceil(log2 P) steps for every P, the paper's n + 1 rounds
  (:func:`elimination_rounds`). Roles need not follow rank order (p0 may be the right end); every reduction still
  combines adjacent rank ranges.
- After floor(log2 P) rounds one unit of 2^floor(log2 P) ranks holds the reduced vector, one block each.

Every rank sends at most one message and receives at most one per step. Every message of round z is m / 2^(z+1),
so the contention-free time is :func:`directcoll.cost.analytic.elimination_allreduce_cost`: 2 ceil(log2 P) steps
and a bandwidth term of at most 2 (3/2 - 1/2^n) m beta, reached for odd P: the published cost, the Swing paper's
"bandwidth deficiency [...] 3/2" (Sec. 2.3.3).

Ranks are taken in their flattened (row-major) order on every topology: the Swing paper compares the 1D algorithm
and "found no reference of adaptations to torus networks" (Sec. 2.3.3), so neither do we. Every unit's partial
sums cover a contiguous range of ranks (a pair or triple of adjacent units) and every reduction combines two
adjacent ranges: the schedule keeps rank order (non-commutative operators) on every P.

Source: Rabenseifner & Traeff, "More Efficient Reduction Algorithms for Non-Power-of-Two Number of Processors in
Message-Passing Parallel Systems", EuroPVM/MPI 2004 (the 3-2 elimination step, one elimination per 1 bit of p,
ceil(log2 p) rounds);
Swing (De Sensi et al., NSDI'24) Sec. 2.3.3 (Rabenseifner's algorithm and its non-power-of-two handling).

>>> from directcoll.topology import parse
>>> s = rabenseifner_elimination(parse("ring:5"))
>>> s.num_steps, s.nblocks, s.meta["construction"]
(6, 4, '3-2 elimination')
"""

from __future__ import annotations

import numpy as np

from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import REDUCE, Collective, Schedule, ScheduleBuilder
from directcoll.schedule.ops import from_reduce_scatter
from directcoll.topology.model import Topology

VARIANTS = ("bandwidth",)


def elimination_rounds(p: int) -> list[tuple[list[tuple[int, np.ndarray, np.ndarray]], tuple | None]]:
    """The units of every round, with the step each operation runs at (the overlapping schedule).

    A unit is ready at the step after its last operation. A pair halves at the step both are ready. Of the last
    three units X, Y, Z (rank order), the one at an end that is ready last plays p0, which waits during the first
    exchange, and the other two (adjacent) play p1, p2: the first exchange runs when both are ready, the second
    when p0 is ready too. So a unit merged by an elimination is one step late, and in the next elimination it
    plays p0, whose first step it misses: the lateness never exceeds one step.

    Args:
        p: number of ranks, >= 1.

    Returns:
        floor(log2 p) rounds, each (pairs, triple): pairs a list of (step, lower unit, upper unit), triple None
        or (first step, second step, U0, U1, U2) in the roles p0, p1, p2; a unit is an int64 array of the ranks it
        holds, member j holding the j-th of the round's 2^z segments.

    Raises:
        UnsupportedShapeError: p < 1.

    Source: Rabenseifner & Traeff (EuroPVM/MPI 2004): a 3-2 elimination in each round z whose bit of p is 1,
    overlapped so that the reduce-scatter takes ceil(log2 p) steps.

    >>> [([t for t, *_ in pairs], t and t[0]) for pairs, t in elimination_rounds(7)]
    [([0, 0], 0), ([], 1)]
    """
    if p < 1:
        raise UnsupportedShapeError(f"rabenseifner-elimination: needs at least 1 rank, got {p}")
    units = [(np.array([r], dtype=np.int64), 0) for r in range(p)]     # (ranks, ready step)
    rounds = []
    while len(units) > 1:
        triple_units = units[-3:] if len(units) % 2 else []
        paired = units[:len(units) - len(triple_units)]
        pairs, merged = [], []
        for (a, ra), (c, rc) in zip(paired[::2], paired[1::2], strict=True):
            t = max(ra, rc)
            pairs.append((t, a, c))
            merged.append((np.concatenate([a, c]), t + 1))
        triple = None
        if triple_units:
            (x, rx), (y, ry), (zz, rz) = triple_units
            (u0, r0), (u1, r1), (u2, r2) = ((zz, rz), (x, rx), (y, ry)) if rz >= rx else ((x, rx), (y, ry), (zz, rz))
            first = max(r1, r2)
            second = max(first + 1, r0)
            triple = (first, second, u0, u1, u2)
            merged.append((np.concatenate([u0, u1]), second + 1))
        rounds.append((pairs, triple))
        units = merged
    return rounds


def elimination_reduce_scatter(p: int) -> Schedule:
    """The reduce-scatter half of the protocol on ranks 0..p-1, as a schedule of the IR.

    Every rank sends at most one message and receives at most one per step (the paper's single-ported model).

    Returns:
        A reduce_scatter Schedule with nblocks = 2^floor(log2 p) and ceil(log2 p) steps: block b ends reduced at
        the rank ``owner[b]`` of the last unit; the eliminated ranks own no block (so it is MPI_Reduce_scatter with
        zero counts for them, not MPI_Reduce_scatter_block; the allreduce reverses it to reach every rank).

    Raises:
        UnsupportedShapeError: p < 1.
        ResourceError: the schedule being built outgrows the memory budget.

    Source: Rabenseifner & Traeff (EuroPVM/MPI 2004), the 3-2 elimination step; Swing (NSDI'24) Sec. 2.3.3
    (recursive halving of the data while the distance doubles).

    >>> elimination_reduce_scatter(7).num_steps  # two eliminations, overlapped: ceil(log2 7)
    3
    """
    rounds = elimination_rounds(p)
    nblocks = 1 << len(rounds)
    b = ScheduleBuilder(Collective.REDUCE_SCATTER, p, nblocks)
    lo = np.zeros(p, dtype=np.int64)     # every rank's current segment [lo, lo + width)
    final = np.zeros(1, dtype=np.int64)
    for z, (pairs, triple) in enumerate(rounds):
        half = nblocks >> (z + 1)
        for t, a, c in pairs:            # a keeps the lower half, c the upper
            mid = lo[a] + half
            b.add(t, a, c, REDUCE, mid, mid + half)
            b.add(t, c, a, REDUCE, lo[c], lo[c] + half)
            lo[c] = mid
            final = np.concatenate([a, c])
        if triple:
            t, second, u0, u1, u2 = triple
            mid = lo[u0] + half
            b.add(t, u2, u1, REDUCE, mid, mid + half)                   # p2 -> p1: upper half
            b.add(t, u1, u2, REDUCE, lo[u1], lo[u1] + half)             # p1 -> p2: lower half
            b.add(second, u2, u0, REDUCE, lo[u2], lo[u2] + half)        # p2 -> p0: lower half of p1 + p2
            b.add(second, u0, u1, REDUCE, mid, mid + half)              # p0 -> p1: its upper half
            lo[u1] = mid
            final = np.concatenate([u0, u1])
    owner = np.zeros(nblocks, dtype=np.int64)
    owner[lo[final]] = final
    return b.build(owner=owner, meta={"construction": "3-2 elimination"})


def rabenseifner_elimination(topology: Topology, collective=Collective.ALLREDUCE, *, variant: str | None = None,
                             ports: int | None = None) -> Schedule:
    """Rabenseifner's allreduce with 3-2 elimination on the topology's ranks 0..N-1 (flattened order).

    Args:
        topology: any topology with N >= 1 compute nodes (ranks in their row-major order).
        collective: allreduce for any N; reduce_scatter and allgather when N is a power of two (then the protocol
            is plain recursive halving, which leaves one block on every rank).
        variant: "bandwidth" (the only one) or None.
        ports: 1 or None: one collective (the paper's single-ported algorithm).

    Returns:
        The schedule with nblocks = 2^floor(log2 N); meta = {algorithm, variant, ports, construction}.

    Raises:
        UnsupportedShapeError: reduce_scatter / allgather when N is not a power of two (the protocol leaves the
            result on 2^floor(log2 N) ranks); an unknown variant; ports other than 1.
        ScheduleError: an unknown collective name.
        ResourceError: the schedule being built outgrows the memory budget.

    Source: Rabenseifner & Traeff (EuroPVM/MPI 2004); Swing (De Sensi et al., NSDI'24) Sec. 2.3.3 (the 3-2
    elimination as the non-power-of-two alternative to folding).

    >>> from directcoll.topology import parse
    >>> rabenseifner_elimination(parse("torus:3x3")).num_steps  # 2 ceil(log2 9)
    8
    """
    collective = Collective.parse(collective)
    variant = variant or "bandwidth"
    if variant not in VARIANTS:
        raise UnsupportedShapeError(f"rabenseifner-elimination: unknown variant {variant!r}; accepted: "
                                    f"{', '.join(VARIANTS)}")
    if ports not in (None, 1):
        raise UnsupportedShapeError(f"rabenseifner-elimination: one port only (the paper's algorithm), got {ports}")
    p = topology.num_compute
    if collective is not Collective.ALLREDUCE and p & (p - 1):
        raise UnsupportedShapeError(
            f"rabenseifner-elimination: {collective.value} needs a power-of-two number of ranks, got {p}: 3-2 "
            "elimination leaves the reduce-scatter's result on 2^floor(log2 N) ranks; allreduce serves any N")
    rs = elimination_reduce_scatter(p)
    construction = "3-2 elimination" if p & (p - 1) else "recursive halving"
    meta = {"algorithm": "rabenseifner-elimination", "variant": variant, "ports": 1, "construction": construction}
    return from_reduce_scatter(rs, collective, meta=meta)
