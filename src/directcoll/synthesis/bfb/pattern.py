"""BFB at scale: its step pattern, read from the description its schedule is built from, and that pattern's memory.

On a translation-invariant Cayley topology (tori, rings, hypercubes, circulants, ... with the same links at
every node) BFB solves node 0's LPs once and moves node 0's plan to every node. The schedule that results holds
N x (node 0's pieces): about N^2 / 2 pieces per step, out of reach at Fugaku's 158,976 ranks. Its step pattern
needs only what node 0 receives per step and in-link: at allgather step t node 0 gets z_(t,l) shards over its
in-link l from its neighbour w_l, so every node u receives z_(t,l) / N of the vector from u + w_l.
:func:`bfb_pattern` reads exactly that from :func:`~directcoll.synthesis.bfb.schedule.bfb_steps`, the description
:func:`~directcoll.synthesis.bfb.schedule.build_bfb` builds its schedule from (there node 0's pieces are cut, moved
to every node and checked to carry those loads), so the two cannot drift; the reduce-scatter is the same
description relabelled by x -> -x and reversed (Theorem 2), the allreduce the two in sequence. Every step is
listed as one block of N transfers per in-link, every node sending once with the same offset: the layout in which
the step model times the step from one route per offset (docs/simulation.md, "Symmetry"). Other topologies get
their per-node loads the same way, node by node.

Source: Zhao et al. (NSDI'25) Sec. 6.1 (BFB, LP (1); "vertex-transitive"), App. B Theorem 2 (reduce-scatter by
relabelling and reversal); docs/architecture.md, "Cost and simulation" (step patterns).

>>> from directcoll.topology import parse
>>> from directcoll.schedule.pattern import pattern_of
>>> from directcoll.synthesis.bfb.schedule import build_bfb
>>> t = parse("torus:4x3")
>>> bfb_pattern(t, "allreduce").equivalent(pattern_of(build_bfb(t, "allreduce")))
True
"""

from __future__ import annotations

from directcoll.schedule.ir import Collective
from directcoll.schedule.pattern import BYTES_PER_TRANSFER, StepPattern
from directcoll.synthesis.bfb.schedule import bfb_steps
from directcoll.topology.model import Topology
from directcoll.topology.paths import LinkSet, bfs_distances


def bfb_pattern(topology: Topology, collective=Collective.ALLREDUCE, *, variant=None, ports=None,
                chunks: int | None = None, size: float | None = None, **options) -> StepPattern:
    """The step pattern of :func:`~directcoll.synthesis.bfb.schedule.build_bfb` without its schedule: the loads of
    :func:`~directcoll.synthesis.bfb.schedule.bfb_steps`, so equal to ``pattern_of(build_bfb(...))`` up to the
    order of transfers within a step.

    Args:
        topology, collective, variant, ports, chunks, size, options: as
            :func:`~directcoll.synthesis.bfb.schedule.build_bfb` (which refuses options other than ``chunks`` and
            ``size``; ``variant`` and ``ports`` are ignored).

    Returns:
        A :class:`~directcoll.schedule.pattern.StepPattern`: D distinct steps (allgather, reduce-scatter) or 2D
        (allreduce), D the diameter; on a translation-invariant topology N transfers per in-link of node 0 used in
        the step; meta as the schedule's.

    Raises:
        UnsupportedShapeError, ScheduleError, SolverError, ResourceError: as
            :func:`~directcoll.synthesis.bfb.schedule.build_bfb`.

    Source: Zhao et al. (NSDI'25) Sec. 6.1 and App. B Theorem 2; this module's docstring.

    >>> from directcoll.topology import parse
    >>> p = bfb_pattern(parse("torus:8x7x8"), "allgather")  # 448 ranks: node 0's LPs, translated
    >>> p.num_steps, len(p.src) // p.num_steps // 448  # diameter 4 + 3 + 4; six in-links used every step
    (11, 6)
    """
    return bfb_steps(topology, collective, chunks=chunks, size=size, **options).pattern()


def pattern_bytes(topology: Topology, collective=Collective.ALLREDUCE, variant: str | None = None,
                  ports: int | None = None) -> float | None:
    """The memory :func:`bfb_pattern` needs on a translation-invariant Cayley topology: N x (out-degree) x D
    transfers per collective (twice for allreduce), D the eccentricity of node 0 (one BFS), of
    :data:`~directcoll.schedule.pattern.BYTES_PER_TRANSFER`; None elsewhere (the full schedule is built there).
    ``variant`` and ``ports`` are accepted for the registry's signature and ignored (BFB has one variant and uses
    every link).

    Returns:
        Bytes, a float, or None.

    Raises:
        ScheduleError: an unknown collective name.

    Source: this module's docstring (N transfers per in-link and step).

    >>> from directcoll.topology import parse
    >>> pattern_bytes(parse("ring:4"))  # 4 ranks x 2 in-links x 2 steps x 2 (allreduce) x 25 B
    800.0
    """
    coll = Collective.parse(collective)
    if not topology.is_cayley or topology.num_compute != topology.num_nodes:
        return None
    n = topology.num_compute
    bw, lat = topology.link_bandwidth.reshape(n, -1), topology.link_latency.reshape(n, -1)
    if not ((bw == bw[0]).all() and (lat == lat[0]).all()):   # links that differ by node: the full schedule
        return None
    ecc = int(bfs_distances(LinkSet(n, topology.link_src, topology.link_dst, spec=topology.spec), [0])[0].max())
    degree = float(len(topology.link_src)) / n
    return n * degree * ecc * (2.0 if coll is Collective.ALLREDUCE else 1.0) * BYTES_PER_TRANSFER
