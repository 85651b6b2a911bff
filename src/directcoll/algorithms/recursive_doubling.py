"""Torus-optimized recursive doubling (Swing Sec. 2.3.2-2.3.3, Fig. 2; Thakur et al.; Sack & Gropp).

- **latency-optimal recursive doubling**: at step s every rank exchanges its whole vector with the rank whose
  coordinate in dimension w(s) differs in bit sigma(s) (one dimension per step, Fig. 2).
- **Rabenseifner** (bandwidth-optimized recursive doubling): reduce-scatter by recursive halving of the data
  while the distance doubles, then the mirror-image allgather, with the same per-dimension peers.
- **mirrored** (Swing Sec. 5.1): ``ports`` > 1 runs plain and mirrored collectives side by side on equal
  parts of the vector, like multiport Swing.

Non-power-of-two shapes use the standard pre/post steps (:class:`~directcoll.algorithms.butterfly.Fold`):
allreduce only, since after folding the extra ranks hold no share of a reduce-scatter.

Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.2 (latency-optimal, Table 2 REC.DOUB. (L)), Sec. 2.3.3
(bandwidth-optimized, REC.DOUB. (B)) and Sec. 5.1 (mirrored multiport versions).

>>> from directcoll.topology import parse
>>> recursive_doubling(parse("torus:4x4"))
Schedule(allreduce, recursive-doubling, N=16, nblocks=1, steps=4, transfers=64)
"""

from __future__ import annotations

import numpy as np

from directcoll.algorithms import butterfly as bf
from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import Collective, Schedule
from directcoll.schedule.phases import Phases, concurrent, from_reduce_scatter
from directcoll.topology.model import Topology

VARIANTS = ("latency", "bandwidth")


def recursive_doubling(topology: Topology, collective=Collective.ALLREDUCE, *, variant: str | None = None,
                       ports: int | None = None) -> Schedule:
    """Recursive doubling on the topology's grid.

    Args:
        topology: any topology (its shape, or a 1D ring of its ranks).
        collective: allreduce; reduce_scatter / allgather with the bandwidth variant on power-of-two shapes.
        variant: "latency" (default: log2 p steps, whole vector) or "bandwidth" (Rabenseifner:
            2 log2 p steps, Psi = 2D single-port).
        ports: concurrent collectives, 1 (default, the classic algorithm) .. 2D (mirrored, Sec. 5.1); up to
            6 as the Swing library runs them (:func:`~directcoll.algorithms.butterfly.collectives_for_ports`).

    Returns:
        The schedule; meta = {algorithm, variant, ports, construction}.

    Raises:
        UnsupportedShapeError: latency variant for reduce_scatter / allgather; reduce_scatter / allgather on
            a shape with a dimension that is not a power of two; ports out of range.
        ScheduleError: an unknown collective name.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.2 (q = r XOR 2^s, one dimension per step, Fig. 2; the
    non-power-of-two pre/post steps), Sec. 2.3.3 (Rabenseifner: Lambda = 2, Psi = 2D) and Sec. 5.1 (mirrored).

    >>> from directcoll.topology import parse
    >>> recursive_doubling(parse("torus:4x4"), variant="bandwidth", ports=4).meta["algorithm"]
    'mirrored-recursive-doubling'
    >>> recursive_doubling(parse("ring:6")).meta["construction"]
    'fold'
    """
    return recursive_doubling_steps(topology, collective, variant=variant, ports=ports).schedule()


def recursive_doubling_steps(topology: Topology, collective=Collective.ALLREDUCE, *, variant: str | None = None,
                             ports: int | None = None) -> Phases:
    """Recursive doubling on the topology's grid described step by step: the one description
    :func:`recursive_doubling` builds its schedule from (and its step pattern is read from,
    :meth:`~directcoll.schedule.phases.Phases.pattern`). The latency variant exchanges every part whole at every
    step (:func:`~directcoll.algorithms.butterfly.latency_steps`); the bandwidth variant runs the butterfly
    reduce-scatter, then (allreduce) its allgather; an allreduce on a grid that folds adds the fold's pre- and
    post-step.

    Args:
        topology, collective, variant, ports: as :func:`recursive_doubling`.

    Returns:
        A :class:`~directcoll.schedule.phases.Phases` with :func:`recursive_doubling`'s meta.

    Raises:
        UnsupportedShapeError, ScheduleError: as :func:`recursive_doubling`.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.2 (recursive doubling, non-power-of-two pre/post steps), Sec.
    2.3.3 (Rabenseifner) and Sec. 5.1 (mirrored).

    >>> from directcoll.topology import parse
    >>> recursive_doubling_steps(parse("ring:6"), variant="bandwidth").num_steps  # pre, 2 + 2 butterfly, post
    6
    """
    collective = Collective.parse(collective)
    variant = variant or "latency"
    if variant not in VARIANTS:
        raise UnsupportedShapeError(f"recursive-doubling: unknown variant {variant!r}; accepted: "
                                    f"{', '.join(VARIANTS)}")
    shape = bf.logical_shape(topology)
    parts = bf.collectives_for_ports(shape, ports if ports is not None else 1, "recursive-doubling")
    name = "rabenseifner" if variant == "bandwidth" else "recursive-doubling"
    if len(parts) > 1:
        name = "mirrored-recursive-doubling"
    p = topology.num_compute
    fold = bf.Fold(shape)
    meta = {"algorithm": name, "variant": variant, "ports": len(parts), "mirrored": bf.mirrored_count(parts),
            "construction": "fold" if fold.needed else "butterfly"}
    if variant == "latency" and collective is not Collective.ALLREDUCE:
        raise UnsupportedShapeError("recursive-doubling: the latency-optimal variant is an allreduce; use "
                                    "--variant bandwidth (Rabenseifner) for reduce_scatter and allgather")
    if collective is not Collective.ALLREDUCE and fold.needed:
        raise UnsupportedShapeError(
            f"{name}: {collective.value} needs every dimension to be a power of two (shape "
            f"{'x'.join(map(str, shape))}); the standard non-power-of-two steps only serve allreduce. "
            "Swing serves this shape.")
    peers = [bf.peer_table("recdoub", fold.sub_shape, dim, mirrored) for dim, mirrored in parts]
    return _butterfly_steps(p, fold, peers, collective, variant, meta)




def _butterfly_steps(nranks: int, fold: bf.Fold, peers: list[np.ndarray], collective, variant: str,
                     meta: dict) -> Phases:
    """The fold's power-of-two sub-grid, one part per peer table: :func:`recursive_doubling_steps`'s body."""
    collective = Collective.parse(collective)
    if variant == "latency":
        return bf.latency_steps(nranks, fold, peers, meta)
    k, ranks = len(peers), fold.sub_ranks
    q = len(ranks)
    rs = concurrent([bf.reduce_scatter_steps(pt, ranks, nranks) for pt in peers], meta)
    if collective is not Collective.ALLREDUCE:
        return from_reduce_scatter(rs, collective)
    ag = concurrent([bf.allgather_steps(pt, ranks, nranks) for pt in peers])
    return Phases(Collective.ALLREDUCE, nranks, q * k, (*fold.pre(q * k), *rs.phases, *ag.phases,
                                                        *fold.post(q * k)), meta=meta)


def _rabenseifner(topology, collective=Collective.ALLREDUCE, *, variant=None, ports=None) -> Schedule:
    return recursive_doubling(topology, collective, variant="bandwidth", ports=ports)


def _mirrored(topology, collective=Collective.ALLREDUCE, *, variant=None, ports=None) -> Schedule:
    shape = bf.logical_shape(topology)
    return recursive_doubling(topology, collective, variant=variant, ports=ports or 2 * len(shape))


_GRID = ("any grid topology (its shape) or a 1D ring of ranks; non-power-of-two dimensions through "
         "the standard pre/post steps (allreduce only)")
