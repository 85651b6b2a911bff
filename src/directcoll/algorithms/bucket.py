"""Multiport bucket algorithm on D-dimensional tori (Swing paper Sec. 2.3.4 and Sec. 5.2).

The bucket algorithm (Jain & Sabharwal, ICS'10; Sack & Gropp) runs a ring reduce-scatter along every
dimension in turn, each on the data the previous dimensions left at the rank, then the allgather in reverse.
To use all 2D ports of a torus node it splits the vector into 2D parts and runs 2D instances concurrently,
instance (c, dir) starting from dimension c with ring direction dir, so that at every step each link
carries at most one ring per direction.

On rectangular tori the dimensions are switched synchronously (Sec. 5.2): phase k of every instance starts
at step k*(d_max - 1), and rings along dimensions shorter than d_max idle for the rest of the phase. The
reduce-scatter takes D*(d_max - 1) steps, the allreduce twice that.

Algorithms never look at link bandwidths: only the topology's shape is used.

Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.4 (bucket algorithm, Table 2 row BUCKET) and Sec. 5.2
(rectangular tori).

>>> from directcoll.topology import parse
>>> build_bucket(parse("torus:4x4"))
Schedule(allreduce, bucket, N=16, nblocks=64, steps=12, transfers=768)
"""

from __future__ import annotations

import numpy as np

from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import REDUCE, Collective, Schedule
from directcoll.schedule.pattern import StepPattern
from directcoll.schedule.phases import Phase, Phases, Pieces, concurrent, from_reduce_scatter, idle
from directcoll.topology.model import Topology

VARIANTS = ("bandwidth",)


def _check_shape(shape) -> tuple[int, ...]:
    if shape is None:
        raise UnsupportedShapeError("bucket: the topology has no grid shape; the bucket algorithm needs a "
                                    "grid (torus, mesh, ring, hypercube, hyperx, hammingmesh)")
    shape = tuple(int(d) for d in shape)
    if not shape or min(shape) < 1:
        raise UnsupportedShapeError(f"bucket: need a non-empty shape of sizes >= 1, got {shape}")
    return shape


def bucket_instances(ndim: int, ports: int | None = None) -> list[tuple[int, int]]:
    """The (start dimension, direction) of the first ``ports`` concurrent bucket instances on a D-dim torus.

    Instances are ordered [(0, +1), (0, -1), (1, +1), (1, -1), ...]; ``ports`` = None means all 2D.

    Raises:
        UnsupportedShapeError: ``ports`` outside 1..2D.

    Returns:
        A list of ``ports`` (start dimension, direction) pairs (2D of them by default).

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.4 (2D bucket algorithms, each from a different dimension
    and direction).

    >>> bucket_instances(2)
    [(0, 1), (0, -1), (1, 1), (1, -1)]
    """
    every = [(c, d) for c in range(ndim) for d in (+1, -1)]
    if ports is None:
        return every
    if not 1 <= ports <= len(every):
        raise UnsupportedShapeError(f"bucket: ports={ports} is not supported on a {ndim}-dimensional shape; "
                                    f"accepted: 1..{len(every)} (2D concurrent instances)")
    return every[:ports]


def bucket_owner(shape, start_dim: int) -> np.ndarray:
    """Owner of every block of the instance starting at ``start_dim``: int64 (N,).

    Block position = mixed-radix index of the block's coordinates with the dimensions in processing order
    (start_dim, start_dim+1, ..., mod D; first-processed most significant); the block whose coordinates are
    a ends at the rank with coordinates a.

    Raises:
        UnsupportedShapeError: an empty shape or ``start_dim`` outside 0..D-1.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.4 (reduce-scatter dimension by dimension).

    >>> bucket_owner((2, 3), 1).tolist()
    [0, 3, 1, 4, 2, 5]
    """
    shape = _check_shape(shape)
    ndim = len(shape)
    if not 0 <= start_dim < ndim:
        raise UnsupportedShapeError(f"bucket: start dimension {start_dim} outside 0..{ndim - 1} for {shape}")
    perm = [(start_dim + k) % ndim for k in range(ndim)]
    n = int(np.prod(shape))
    permuted = np.unravel_index(np.arange(n, dtype=np.int64), tuple(shape[w] for w in perm))
    coords = [None] * ndim
    for k, w in enumerate(perm):
        coords[w] = permuted[k]
    return np.ravel_multi_index(tuple(coords), shape).astype(np.int64)


def bucket_instance_steps(shape, start_dim: int, direction: int) -> Phases:
    """One bucket reduce-scatter instance on a torus of ``shape``, described step by step: the one description its
    schedule and its step pattern are read from (:mod:`directcoll.schedule.phases`; Swing paper Sec. 2.3.4, 5.2).

    The instance processes dimensions start_dim, start_dim+1, ..., start_dim+D-1 (mod D). In phase k
    (dimension w of size d) every rank a runs a ring reduce-scatter with the ranks that share its other
    coordinates: at phase-step t (0..d-2) it sends to its neighbour at a_w + direction the contiguous slab of
    blocks whose coordinates in the processed dimensions equal its own, whose coordinate in w is
    (a_w - direction*(t+1)) mod d, and anything in the unprocessed dimensions (op reduce): every step of the phase
    moves the same amount (the slab) between the same neighbours. Phase k starts at step k*(d_max - 1)
    ("dimensions switched synchronously", Sec. 5.2); a shorter dimension idles for the rest of it.

    Returns:
        A :class:`~directcoll.schedule.phases.Phases` of a reduce-scatter with N = prod(shape), nblocks = N, one
        phase (and an idle one) per dimension, owner :func:`bucket_owner`.

    Raises:
        UnsupportedShapeError: an empty shape, ``start_dim`` outside 0..D-1 or ``direction`` not +-1.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.4 and Sec. 5.2 (synchronous dimension switching).

    >>> [(ph.count, ph.repeat) for ph in bucket_instance_steps((3, 2), 1, 1).phases]  # dim 1: 1 step, 1 idle
    [(6, 1), (0, 1), (6, 2)]
    """
    shape = _check_shape(shape)
    ndim = len(shape)
    if direction not in (1, -1):
        raise UnsupportedShapeError(f"bucket: direction must be +1 or -1, got {direction!r}")
    owner = bucket_owner(shape, start_dim)
    n = int(np.prod(shape))
    dmax = max(shape)
    perm = [(start_dim + k) % ndim for k in range(ndim)]
    ranks = np.arange(n, dtype=np.int64)
    coords = np.stack(np.unravel_index(ranks, shape), axis=-1).astype(np.int64)
    phases: list[Phase] = []
    prefix = np.zeros(n, dtype=np.int64)  # mixed-radix index of the rank's coordinates in processed dims
    for k, w in enumerate(perm):
        d = shape[w]
        rest = int(np.prod([shape[u] for u in perm[k + 1:]], dtype=np.int64))
        nbr = coords.copy()
        nbr[:, w] = (nbr[:, w] + direction) % d
        dst = np.ravel_multi_index(tuple(nbr.T), shape).astype(np.int64)

        def pieces(t: int, base=prefix * d, d=d, rest=rest, c=coords[:, w]) -> Pieces:
            start = (base + (c - direction * (t + 1)) % d) * rest
            return Pieces.single(start, start + rest)

        phases.append(Phase(n, REDUCE, lambda dst=dst, rest=rest: (ranks, dst, np.full(n, rest, np.int64)),
                            pieces, d - 1))
        if dmax > d:
            phases.append(idle(dmax - d))
        prefix = prefix * d + coords[:, w]
    return Phases(Collective.REDUCE_SCATTER, n, n, tuple(phases), owner=owner)


def bucket_reduce_scatter_instance(shape, start_dim: int, direction: int) -> Schedule:
    """One bucket reduce-scatter instance on a torus of ``shape`` (Swing paper Sec. 2.3.4, Sec. 5.2): the schedule
    of :func:`bucket_instance_steps`.

    Returns:
        A reduce-scatter Schedule with N = prod(shape), nblocks = N, D*(d_max-1) steps (fewer only when the
        last phases' dimensions are shorter than d_max) and owner :func:`bucket_owner`.

    Raises:
        UnsupportedShapeError: an empty shape, ``start_dim`` outside 0..D-1 or ``direction`` not +-1.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.4 and Sec. 5.2 (synchronous dimension switching).

    >>> bucket_reduce_scatter_instance((3, 3), 0, 1).num_steps  # D (d_max - 1) = 2 * 2
    4
    """
    return bucket_instance_steps(shape, start_dim, direction).schedule()


def bucket_reduce_scatter(shape, ports: int | None = None) -> Schedule:
    """Multiport bucket reduce-scatter: ``ports`` concurrent instances, each on an equal slice of the vector.

    Args:
        shape: the torus shape (d0, ..., d(D-1)).
        ports: number of concurrent instances, 1..2D (default 2D), taken in the order of
            :func:`bucket_instances`.

    Returns:
        A reduce-scatter Schedule with N = prod(shape), nblocks = ports * N and D*(d_max-1) steps (always
        with ports = 2D; with fewer ports, fewer when no chosen instance ends on a dimension of size d_max).

    Raises:
        UnsupportedShapeError: an empty shape or ``ports`` outside 1..2D.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.4 (2D concurrent bucket algorithms on n / 2D each).

    >>> bucket_reduce_scatter((4, 4))
    Schedule(reduce_scatter, unknown, N=16, nblocks=64, steps=6, transfers=384)
    """
    shape = _check_shape(shape)
    return concurrent([bucket_instance_steps(shape, c, d) for c, d in bucket_instances(len(shape), ports)]).schedule()


def bucket_pattern(topology: Topology, collective="allreduce", *, variant: str | None = None,
                   ports: int | None = None) -> StepPattern:
    """The step pattern of :func:`build_bucket` without building its transfers' blocks: read from the same
    description (:func:`bucket_instance_steps`, side by side), so equal to ``pattern_of(build_bucket(...))``; a
    128x128 bucket allreduce has 33 million transfers but 4 distinct steps.

    Returns:
        A :class:`~directcoll.schedule.pattern.StepPattern` (sizes as fractions of the vector).

    Raises:
        UnsupportedShapeError: as :func:`build_bucket` (no shape, unknown variant, ports outside 1..2D).
        ScheduleError: an unknown collective name.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.4, 5.2; docs/architecture.md, "Cost and simulation" (step
    patterns).

    >>> from directcoll.topology import parse
    >>> bucket_pattern(parse("torus:4x4")).num_distinct
    4
    """
    return _bucket_steps(topology, collective, variant, ports).pattern()


def _bucket_setup(topology: Topology, variant, ports):
    if variant is not None and variant not in VARIANTS:
        raise UnsupportedShapeError(f"bucket: unknown variant {variant!r}; accepted: {', '.join(VARIANTS)}")
    if topology.shape is None:
        raise UnsupportedShapeError(f"bucket: topology {topology.spec} ({topology.kind}) has no grid shape; "
                                    "accepted: torus, mesh, ring, hypercube, hyperx, hammingmesh")
    shape = _check_shape(topology.shape)
    instances = bucket_instances(len(shape), ports)
    return shape, instances, {"algorithm": "bucket", "variant": "bandwidth", "ports": len(instances)}


def build_bucket(topology: Topology, collective="allreduce", *, variant: str | None = None,
                 ports: int | None = None) -> Schedule:
    """Bucket allreduce / reduce-scatter / allgather on a grid topology (Swing paper Sec. 2.3.4, 5.2).

    Args:
        topology: a topology with a grid shape (torus, mesh, ring, hypercube, hyperx, hammingmesh); only the
            shape is used, rings along each dimension wrap around.
        collective: ``allreduce``, ``reduce_scatter`` or ``allgather``.
        variant: None or ``bandwidth`` (the only one: bucket is bandwidth-optimal).
        ports: number of concurrent instances, 1..2D (default 2D).

    Returns:
        A Schedule with N = topology.num_compute, nblocks = ports * N, D*(d_max-1) steps for the
        reduce-scatter and allgather and 2*D*(d_max-1) for the allreduce (with ports = 2D; see
        :func:`bucket_reduce_scatter` for fewer ports). ``meta`` = {"algorithm": "bucket",
        "variant": "bandwidth", "ports": ports}.

    Raises:
        UnsupportedShapeError: a topology without a shape, an unknown variant or ``ports`` outside 1..2D.
        ScheduleError: an unknown collective name.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.4 (Lambda = 2D p^(1/D) / log2 p, Psi = Xi = 1; the
    paper's text prints the D-th root as a p-th root) and Sec. 5.2.

    >>> from directcoll.topology import parse
    >>> build_bucket(parse("torus:4x4"), "reduce_scatter", ports=2).nblocks
    32
    """
    return _bucket_steps(topology, collective, variant, ports).schedule()


def _bucket_steps(topology: Topology, collective, variant, ports) -> Phases:
    """The bucket collective on ``topology`` described step by step: the instances side by side, then reversed
    and sequenced as the collective asks (its schedule's and its pattern's one description)."""
    shape, instances, meta = _bucket_setup(topology, variant, ports)
    rs = concurrent([bucket_instance_steps(shape, c, d) for c, d in instances], meta)
    return from_reduce_scatter(rs, collective, meta)
