"""The step pattern of BFB (:func:`directcoll.synthesis.bfb.build_bfb`) by translation, without its schedule.

On a translation-invariant Cayley topology (tori, rings, hypercubes, circulants, ... with the same links at
every node) BFB solves node 0's LPs once and translates node 0's plan to every node
(:func:`~directcoll.synthesis.bfb.bfb_allgather`). The schedule that results holds N x (node 0's pieces): about
N^2 / 2 pieces per step, out of reach at Fugaku's 158,976 ranks. Its step pattern needs only what node 0
receives per step and in-link (:func:`~directcoll.synthesis.bfb.translation_loads`): at allgather step t, node 0
gets z_(t,l) shards over its in-link l from its neighbour w_l, so every node s sends z_(t,l) / N of the vector to
s - w_l. The reduce-scatter of such a topology is the allgather relabelled by x -> -x and reversed (Theorem 2,
:func:`~directcoll.synthesis.bfb.bfb_reduce_scatter`): its step D-1-t moves the same pairs s -> s - w_l with
reduction. Every step is written as one block of N transfers per in-link, every node sending once with the same
offset: the layout in which the step model times the step from one route per offset (docs/simulation.md,
"Symmetry"). Other topologies get ``pattern_of(build_bfb(...))``.

Source: Zhao et al. (NSDI'25) Sec. 6.1 (BFB, LP (1); "vertex-transitive"), App. B Theorem 2 (reduce-scatter by
relabelling and reversal); docs/architecture.md, "Cost and simulation" (step patterns).

>>> from directcoll.topology import parse
>>> from directcoll.schedule.pattern import pattern_of
>>> from directcoll.synthesis.bfb import build_bfb
>>> t = parse("torus:4x3")
>>> bfb_pattern(t, "allreduce").equivalent(pattern_of(build_bfb(t, "allreduce")))
True
"""

from __future__ import annotations

import numpy as np

from directcoll.schedule.ir import Collective
from directcoll.schedule.pattern import StepPattern, pattern_of
from directcoll.synthesis.bfb import build_bfb, translation_loads
from directcoll.topology.model import Topology
from directcoll.topology.paths import LinkSet, bfs_distances

#: Bytes per transfer of a pattern built here: src and dst int64, size float64, reduce bool.
PATTERN_BYTES_PER_TRANSFER = 25


def bfb_pattern(topology: Topology, collective=Collective.ALLREDUCE, *, variant=None, ports=None,
                chunks: int | None = None, size: float | None = None, **options) -> StepPattern:
    """The step pattern of :func:`~directcoll.synthesis.bfb.build_bfb` (equal to ``pattern_of(build_bfb(...))``
    up to the order of transfers within a step), by translation of node 0's plan where the topology allows.

    Args:
        topology, collective, variant, ports, chunks, size, options: as
            :func:`~directcoll.synthesis.bfb.build_bfb` (which refuses options other than ``chunks`` and ``size``).

    Returns:
        A :class:`~directcoll.schedule.pattern.StepPattern`: D distinct steps (allgather, reduce-scatter) or 2D
        (allreduce), D the diameter, N transfers per in-link of node 0 used in the step; meta ``algorithm``,
        ``variant`` (and ``chunks``, ``size_bytes``); the LP statistics of the schedule's meta are not recorded.

    Raises:
        UnsupportedShapeError, ScheduleError, SolverError, ResourceError: as
            :func:`~directcoll.synthesis.bfb.build_bfb`.

    Source: Zhao et al. (NSDI'25) Sec. 6.1 and App. B Theorem 2; this module's docstring.

    >>> from directcoll.topology import parse
    >>> p = bfb_pattern(parse("torus:8x7x8"), "allgather")  # 448 ranks: node 0's LPs, translated
    >>> p.num_steps, len(p.src) // p.num_steps // 448  # diameter 4 + 3 + 4; six in-links used every step
    (11, 6)
    """
    coll = Collective.parse(collective)
    loads = None if options else translation_loads(topology, chunks=chunks, size=size)
    if loads is None or coll not in (Collective.ALLGATHER, Collective.REDUCE_SCATTER, Collective.ALLREDUCE):
        return pattern_of(build_bfb(topology, coll, chunks=chunks, size=size, **options))
    step, link, num, den = loads
    n = topology.num_compute
    tails = topology.link_src[link]
    minus = topology.node_at(-topology.coords(tails))           # -w_l for every row
    nsteps = int(step.max()) + 1
    rows = np.bincount(step, minlength=nsteps)                 # in-links used per allgather step
    ag = list(range(nsteps))
    order = ({Collective.ALLGATHER: [], Collective.REDUCE_SCATTER: ag[::-1], Collective.ALLREDUCE: ag[::-1]}[coll],
             {Collective.ALLGATHER: ag, Collective.REDUCE_SCATTER: [], Collective.ALLREDUCE: ag}[coll])
    per = [rows[t] * n for t in order[0]] + [rows[t] * n for t in order[1]]
    offsets = np.r_[0, np.cumsum(per)].astype(np.int64)
    total = int(offsets[-1])
    src, dst = np.empty(total, np.int64), np.empty(total, np.int64)
    frac, reduce = np.empty(total, float), np.zeros(total, bool)
    coords = topology.coords(np.arange(n, dtype=np.int64))      # once: every row is coords - w_l
    first = np.r_[0, np.cumsum(rows)]
    slot = {(red, t): int(offsets[k]) for k, (red, t) in enumerate([(True, t) for t in order[0]]
                                                                   + [(False, t) for t in order[1]])}
    for t in ag:
        for r in range(first[t], first[t + 1]):
            moved = topology.node_at(coords + topology.coords(minus[r]))
            for red in (True, False):
                if (red, t) in slot:
                    at = slot[red, t] + (r - first[t]) * n
                    src[at:at + n] = np.arange(n)
                    dst[at:at + n] = moved
                    frac[at:at + n] = num[r] / (n * den)
                    reduce[at:at + n] = red
    meta = {"algorithm": "bfb", "variant": "bandwidth", **({} if chunks is None else {"chunks": int(chunks)}),
            **({} if size is None else {"size_bytes": float(size)})}
    return StepPattern(n, coll.value, offsets, src, dst, frac, reduce, np.arange(len(per), dtype=np.int64),
                       meta=meta)


def bfb_pattern_bytes(topology: Topology, collective=Collective.ALLREDUCE) -> float | None:
    """The memory :func:`bfb_pattern` needs on a translation-invariant Cayley topology: N x (out-degree) x D
    transfers per collective (twice for allreduce), D the eccentricity of node 0 (one BFS), of
    :data:`PATTERN_BYTES_PER_TRANSFER`; None elsewhere (the full schedule is built there).

    Returns:
        Bytes, a float, or None.

    Raises:
        ScheduleError: an unknown collective name.

    Source: this module's docstring (N transfers per in-link and step).

    >>> from directcoll.topology import parse
    >>> bfb_pattern_bytes(parse("ring:4"))  # 4 ranks x 2 in-links x 2 steps x 2 (allreduce) x 25 B
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
    return n * degree * ecc * (2.0 if coll is Collective.ALLREDUCE else 1.0) * PATTERN_BYTES_PER_TRANSFER
