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
plain(dim 0), ..., plain(dim D-1), mirrored(dim 0), ..., mirrored(dim D-1), as the authors' library orders its
ports (:func:`~directcoll.algorithms.butterfly.collectives_for_ports`); the default uses all 2D.

Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1.1 (Eq. (2), Listing 1), 3.1.2, 3.2 (Fig. 3), 4.1, 4.2 and
App. A.

>>> from directcoll.topology import parse
>>> swing(parse("torus:4x4"))
Schedule(allreduce, swing, N=16, nblocks=64, steps=8, transfers=512)
"""

from __future__ import annotations

import numpy as np

from directcoll.algorithms import butterfly as bf
from directcoll.algorithms.swing.plans import libswing_1d_allgather, mirror_1d, swing_1d_allgather
from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import COPY, Collective, Schedule
from directcoll.schedule.phases import Phase, Phases, Pieces, concurrent, from_reduce_scatter
from directcoll.topology.model import Topology

VARIANTS = ("bandwidth", "latency", "libswing")


def _mask_runs(masks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs of True in every row of a (B, n) bool array: (row, start, stop), sorted by row then start."""
    padded = np.zeros((masks.shape[0], masks.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = masks
    edges = np.diff(padded, axis=1)
    rows, starts = np.nonzero(edges == 1)
    _, stops = np.nonzero(edges == -1)
    return rows, starts, stops


def product_steps(shape: tuple[int, ...], first_dim: int, mirrored: bool, *,
                  plan_1d=swing_1d_allgather) -> Phases:
    """Swing allgather on any torus shape, lifted dimension by dimension from a 1D plan, described step by step:
    the one description of its schedule (:func:`product_allgather`) and its step pattern.

    At a step in dimension w, a 1D transfer x -> y with block set M becomes, for every rank a with a_w = x,
    a transfer to a + (y - x) e_w of the blocks b with b_w in M and b_i in the set K_i(a_i) rank a knows so far in
    dimension i (i != w). Its width is therefore |M| * prod_{i != w} |K_i(a_i)| blocks, known from the D small 1D
    plans (d_i x d_i masks) without the N-block sets: that is all the step pattern reads (O(N) per step), while
    the schedule cuts the sets into pieces (O(N^2) per step off powers of two) and checks they carry exactly those
    widths. Blocks are in rank order (block b starts at rank b).

    Args:
        shape: the torus shape (d_0, ..., d_(D-1)).
        first_dim: the dimension of step 0 (steps cycle through the dimensions, Sec. 4.1).
        mirrored: run the mirrored collective (ranks and blocks negated).
        plan_1d: the 1D construction (:func:`~directcoll.algorithms.swing.plans.swing_1d_allgather`, Fig. 3;
            :func:`~directcoll.algorithms.swing.plans.libswing_1d_allgather`, the authors' library).

    Returns:
        A :class:`~directcoll.schedule.phases.Phases` of an allgather with N = nblocks = prod(shape), one phase per
        step, MPI's ownership.

    Raises:
        UnsupportedShapeError: as ``plan_1d`` (libswing on an odd side; a 1D construction left incomplete).

    Source: Swing (De Sensi et al., NSDI'24) Sec. 4.1 (one dimension per step, omega(s) = s mod D), Sec. 4.2
    (non-square tori), Sec. 3.2 and App. A.2.

    >>> from directcoll.schedule.pattern import pattern_of
    >>> steps = product_steps((6, 3), 0, False)
    >>> steps.num_steps, steps.pattern().equivalent(pattern_of(steps.schedule()))
    (4, True)
    """
    shape = tuple(int(d) for d in shape)
    p = int(np.prod(shape))
    plans = [plan_1d(d) for d in shape]
    if mirrored:
        plans = [mirror_1d(pl, d) for pl, d in zip(plans, shape, strict=True)]
    known = [np.eye(d, dtype=bool) for d in shape]
    phases = []
    for dim, sigma in reversed(bf.dimension_sequence([len(pl) for pl in plans], first_dim)):
        sends = plans[dim][sigma]
        phases.append(_product_phase(shape, dim, sends, [k.copy() for k in known]))
        for _x, y, mask in sends:
            known[dim][y] |= mask
    return Phases(Collective.ALLGATHER, p, p, tuple(phases))


def _product_phase(shape: tuple[int, ...], dim: int, sends, known: list[np.ndarray]) -> Phase:
    """One allgather step of the block-set product: the 1D ``sends`` of dimension ``dim`` lifted to every rank, with
    ``known`` the per-dimension sets K_i before the step."""
    p = int(np.prod(shape))
    stride = int(np.prod(shape[dim + 1:]))

    def senders(x: int, grid=None) -> np.ndarray:  # the ranks with coordinate x in dim, ascending
        grid = np.arange(p, dtype=np.int64).reshape(shape) if grid is None else grid
        return np.take(grid, x, axis=dim).ravel()

    def ends():
        grid = np.arange(p, dtype=np.int64).reshape(shape)
        weight = np.ones(shape, dtype=np.int64)  # prod_{i != dim} |K_i(a_i)| for every rank a
        for i, k in enumerate(known):
            if i != dim:
                weight = weight * k.sum(axis=1).reshape([-1 if j == i else 1 for j in range(len(shape))])
        src = np.concatenate([senders(x, grid) for x, _, _ in sends])
        dst = np.concatenate([senders(x, grid) + (y - x) * stride for x, y, _ in sends])
        width = np.concatenate([np.take(weight, x, axis=dim).ravel() * int(mask.sum()) for x, _, mask in sends])
        return src, dst, width

    def pieces(i: int) -> Pieces:
        coords = np.stack(np.unravel_index(np.arange(p), shape), axis=-1)
        counts, starts, stops = [], [], []
        for x, _y, mask in sends:
            who = senders(x)
            sets = np.ones((len(who),) + shape, dtype=bool)
            for j, d in enumerate(shape):
                view = [len(who)] + [1] * len(shape)
                view[j + 1] = d
                rows = np.broadcast_to(mask, (len(who), d)) if j == dim else known[j][coords[who, j]]
                sets &= rows.reshape(view)
            row, start, stop = _mask_runs(sets.reshape(len(who), p))
            counts.append(np.bincount(row, minlength=len(who)))
            starts.append(start)
            stops.append(stop)
        return Pieces(np.concatenate(counts), np.concatenate(starts), np.concatenate(stops))

    return Phase(len(sends) * (p // shape[dim]), COPY, ends, pieces)


def product_allgather(shape: tuple[int, ...], first_dim: int, mirrored: bool, *,
                      plan_1d=swing_1d_allgather) -> Schedule:
    """Swing allgather on any torus shape, lifted dimension by dimension from a 1D plan: the schedule of
    :func:`product_steps`.

    Args:
        shape, first_dim, mirrored, plan_1d: as :func:`product_steps`.

    Returns:
        An allgather Schedule with N = nblocks = prod(shape) and MPI's ownership.

    Raises:
        UnsupportedShapeError: as :func:`product_steps`.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 4.1 (one dimension per step, omega(s) = s mod D), Sec. 4.2
    (non-square tori) and Sec. 3.2.

    >>> product_allgather((3,), 0, False)
    Schedule(allgather, unknown, N=3, nblocks=3, steps=1, transfers=6)
    """
    return product_steps(shape, first_dim, mirrored, plan_1d=plan_1d).schedule()


def swing_steps(topology: Topology, collective=Collective.ALLREDUCE, *, variant: str | None = None,
                ports: int | None = None) -> Phases:
    """Swing on the topology's grid described step by step: the one description :func:`swing` builds its schedule
    from and :func:`~directcoll.algorithms.swing.pattern.swing_pattern` its step pattern.

    Power-of-two shapes run the butterfly reduce-scatter with the logical block remapping
    (:func:`~directcoll.algorithms.butterfly.reduce_scatter_steps`); other shapes and the libswing variant the
    reversal of the block-set product allgather (:func:`product_steps`); the latency variant
    :func:`~directcoll.algorithms.butterfly.latency_steps` on Swing's peers; every one with ``ports`` parts side by
    side (:func:`~directcoll.schedule.phases.concurrent`), and the collective from the reduce-scatter
    (:func:`~directcoll.schedule.phases.from_reduce_scatter`).

    Args:
        topology, collective, variant, ports: as :func:`swing`.

    Returns:
        A :class:`~directcoll.schedule.phases.Phases` with :func:`swing`'s meta.

    Raises:
        UnsupportedShapeError, ScheduleError: as :func:`swing`.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1.1, 3.1.2, 3.2, 4.1-4.2 and App. A.

    >>> from directcoll.topology import parse
    >>> swing_steps(parse("torus:24x23x24x2x3x2")).num_pattern_transfers  # Fugaku, without a piece built
    78962688
    """
    collective = Collective.parse(collective)
    variant = variant or "bandwidth"
    shape = bf.logical_shape(topology)
    parts = bf.collectives_for_ports(shape, ports, "swing")
    meta = {"algorithm": "swing", "variant": variant, "ports": len(parts), "mirrored": bf.mirrored_count(parts)}
    p = topology.num_compute
    if variant == "latency":
        if collective is not Collective.ALLREDUCE:
            raise UnsupportedShapeError("swing: the latency-optimal variant is an allreduce; use "
                                        "--variant bandwidth for reduce_scatter and allgather")
        fold = bf.Fold(shape)
        peers = [bf.peer_table("swing", fold.sub_shape, dim, mirrored) for dim, mirrored in parts]
        return bf.latency_steps(p, fold, peers, {**meta, "construction": "fold" if fold.needed else "butterfly"})
    if variant not in VARIANTS:
        raise UnsupportedShapeError(f"swing: unknown variant {variant!r}; accepted: {', '.join(VARIANTS)}")
    if variant == "libswing":
        rs = concurrent([product_steps(shape, dim, mirrored, plan_1d=libswing_1d_allgather)
                         for dim, mirrored in parts]).reversed()
        construction = "libswing bitmaps"
    elif all(bf.is_power_of_two(d) for d in shape):
        rs = concurrent([bf.reduce_scatter_steps(bf.peer_table("swing", shape, dim, mirrored), np.arange(p), p)
                         for dim, mirrored in parts])
        construction = "butterfly"
    else:
        rs = concurrent([product_steps(shape, dim, mirrored) for dim, mirrored in parts]).reversed()
        construction = "block-set product"
    return from_reduce_scatter(rs, collective, {**meta, "construction": construction})


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
        ports: concurrent collectives, 1..2D (default 2D: D plain + D mirrored, Sec. 4.1); up to 6 as the
            Swing library runs them (:func:`~directcoll.algorithms.butterfly.collectives_for_ports`).

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
    return swing_steps(topology, collective, variant=variant, ports=ports).schedule()
