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
steps interleave with the halving rounds follows the paper's summary, "3-2-elimination steps for a group of
2^z x 3 processes in each round z for which the z-th bit of p is 1":

- A *unit* is a set of 2^z ranks that has finished z halving rounds: its j-th rank holds the unit's partial sum
  over the j-th of 2^z equal segments of the vector (m' = m / 2^z elements). Round 0 starts with P units of one
  rank each (the whole vector), in rank order.
- In round z the units pair up, (U_0, U_1), (U_2, U_3), ...; the j-th ranks of a pair exchange halves of their
  segment (the lower unit keeps the lower half), one step. When the number of units floor(P / 2^z) is odd, i.e. bit
  z of P is 1, the last three units run 2^z 3-2 elimination steps side by side (their j-th ranks form a triple
  p0, p1, p2 in rank order), two steps; the pairs exchange in the first of them. The triple's first two units merge
  into one unit of 2^(z+1) ranks, exactly like a pair; the third unit's ranks are eliminated (they get the result
  back from the reversed allgather).
- After floor(log2 P) rounds one unit of 2^floor(log2 P) ranks holds the reduced vector, one block each.

Steps: the reduce-scatter takes floor(log2 P) + (number of 1 bits of P below its top bit) steps: ceil(log2 P) for
P = 2^n + 2^k; the allreduce twice that. We build the protocol bulk-synchronously and do not overlap an
elimination's second step with the next round (the paper's overlapping protocol reaches ceil(log2 P) rounds for
every P; we do not claim it). Every message of round z is m / 2^(z+1), so the contention-free time is
:func:`directcoll.cost.analytic.elimination_allreduce_cost`: for P = 2^n + 1 its bandwidth term
2 (3/2 - 1/2^n) m beta is the published one (the Swing paper's "bandwidth deficiency [...] 3/2", Sec. 2.3.3).

Ranks are taken in their flattened (row-major) order on every topology: the Swing paper compares the 1D algorithm
and "found no reference of adaptations to torus networks" (Sec. 2.3.3), so neither do we. Units are contiguous
rank ranges and every reduction combines adjacent ranges, lower ranks first: the schedule keeps rank order
(non-commutative operators) on every P.

Source: Rabenseifner & Traeff, "More Efficient Reduction Algorithms for Non-Power-of-Two Number of Processors in
Message-Passing Parallel Systems", EuroPVM/MPI 2004 (the 3-2 elimination step, one elimination per 1 bit of p);
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


def elimination_rounds(p: int) -> list[tuple[list[tuple[np.ndarray, np.ndarray]], tuple | None]]:
    """The units of every round: the pairs that halve and the triple of units that runs 3-2 elimination.

    Args:
        p: number of ranks, >= 1.

    Returns:
        floor(log2 p) rounds, each (pairs, triple): pairs a list of (lower unit, upper unit), triple None or
        (U0, U1, U2); a unit is an int64 array of the ranks it holds, in rank order, all of one round's units of
        2^z ranks.

    Raises:
        UnsupportedShapeError: p < 1.

    Source: Rabenseifner & Traeff (EuroPVM/MPI 2004): a 3-2 elimination in each round z whose bit of p is 1.

    >>> [(len(pairs), t is not None) for pairs, t in elimination_rounds(7)]
    [(2, True), (0, True)]
    """
    if p < 1:
        raise UnsupportedShapeError(f"rabenseifner-elimination: needs at least 1 rank, got {p}")
    units = [np.array([r], dtype=np.int64) for r in range(p)]
    rounds = []
    while len(units) > 1:
        triple = tuple(units[-3:]) if len(units) % 2 else None
        paired = units[:-3] if triple else units
        pairs = [(paired[i], paired[i + 1]) for i in range(0, len(paired), 2)]
        units = [np.concatenate(pr) for pr in pairs]
        if triple:
            units.append(np.concatenate(triple[:2]))
        rounds.append((pairs, triple))
    return rounds


def elimination_reduce_scatter(p: int) -> Schedule:
    """The reduce-scatter half of the protocol on ranks 0..p-1, as a schedule of the IR.

    Returns:
        A reduce_scatter Schedule with nblocks = 2^floor(log2 p): block b ends reduced at the rank ``owner[b]`` of
        the last unit; the eliminated ranks own no block (so it is MPI_Reduce_scatter with zero counts for them, not
        MPI_Reduce_scatter_block; the allreduce reverses it to reach every rank).

    Raises:
        UnsupportedShapeError: p < 1.
        ResourceError: the schedule being built outgrows the memory budget.

    Source: Rabenseifner & Traeff (EuroPVM/MPI 2004), the 3-2 elimination step; Swing (NSDI'24) Sec. 2.3.3
    (recursive halving of the data while the distance doubles).

    >>> elimination_reduce_scatter(3).num_steps  # one 3-2 elimination: two steps
    2
    """
    rounds = elimination_rounds(p)
    nblocks = 1 << len(rounds)
    b = ScheduleBuilder(Collective.REDUCE_SCATTER, p, nblocks)
    lo = np.zeros(p, dtype=np.int64)     # every rank's current segment [lo, lo + width)
    step = 0
    for z, (pairs, triple) in enumerate(rounds):
        half = nblocks >> (z + 1)
        for a, c in pairs:               # a keeps the lower half, c the upper
            mid = lo[a] + half
            b.add(step, a, c, REDUCE, mid, mid + half)
            b.add(step, c, a, REDUCE, lo[c], lo[c] + half)
            lo[c] = mid
        if triple:
            u0, u1, u2 = triple
            mid = lo[u0] + half
            b.add(step, u2, u1, REDUCE, mid, mid + half)               # p2 -> p1: upper half
            b.add(step, u1, u2, REDUCE, lo[u1], lo[u1] + half)         # p1 -> p2: lower half
            b.add(step + 1, u2, u0, REDUCE, lo[u2], lo[u2] + half)     # p2 -> p0: lower half of p1 + p2
            b.add(step + 1, u0, u1, REDUCE, mid, mid + half)           # p0 -> p1: its upper half
            lo[u1] = mid
        step += 2 if triple else 1
    owner = np.full(nblocks, 0, dtype=np.int64)
    last = rounds[-1] if rounds else None
    if last is None:
        owner[0] = 0
    else:
        pairs, triple = last
        final = np.concatenate(pairs[0]) if pairs else np.concatenate(triple[:2])
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
    >>> rabenseifner_elimination(parse("torus:3x3")).num_steps  # 9 = 1001b: one elimination, 2 x (3 + 1)
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
