"""All-to-all on dimension-order routes (Basu et al., HPDC'24, Sec. 5.2 baseline, ref. [17]): one path per pair from
:func:`directcoll.topology.routing.dor_route` (dimension 0 first; on wrapping dimensions the shorter way, ties
"+"), as a path-based schedule (:func:`~directcoll.algorithms.alltoall.routed.path_alltoall`).
"""

from __future__ import annotations

import numpy as np

from directcoll.algorithms.alltoall.routed import csr_offsets, ordered_pairs, path_alltoall, require_alltoall
from directcoll.errors import TopologyError, UnsupportedShapeError
from directcoll.schedule.ir import Schedule
from directcoll.topology.model import Topology
from directcoll.topology.routing import dor_route

#: topology kinds dimension-order routing serves (:func:`directcoll.topology.routing.dor_route`)
DOR_KINDS = ("torus", "mesh", "ring", "hypercube", "hyperx")


def dor_alltoall(topology: Topology) -> Schedule:
    """All-to-all with every pair's block on its dimension-order route (one path per pair; Basu Sec. 5.2,
    Dally & Towles' DOR [17]): correct dimension 0, then 1, ...; wrapping dimensions the shorter way (ties "+"),
    HyperX and hypercube dimensions in one hop.

    Args:
        topology: a torus, mesh, ring, hypercube or HyperX topology (:data:`DOR_KINDS`) with its grid shape.

    Returns:
        A one-step all-to-all Schedule (N ranks, nblocks = N^2, N(N-1) transfers, whole blocks) with every pair's
        dimension-order route as its explicit route (link ids of ``topology``); meta ``max_link_load`` in blocks
        of one pair per unit of relative bandwidth (:func:`~directcoll.algorithms.alltoall.routed.
        alltoall_link_loads`).

    Raises:
        UnsupportedShapeError: a topology outside :data:`DOR_KINDS` (no grid, HammingMesh, punctured, ...), fewer
            than 2 ranks, or one missing a link its routes need (the TopologyError of
            :func:`~directcoll.topology.routing.dor_route`, re-raised).

    Source: Basu et al. (HPDC'24) Sec. 5.2 (DOR [17], "theoretically bandwidth optimal on the 3D Torus";
    "DOR does not work on non-Tori topologies"); the route rule is docs/alltoall.md, "Baselines and compare".

    >>> from directcoll.topology import parse
    >>> dor_alltoall(parse("torus:4x4")).meta["max_link_load"]
    12.0
    """
    n = topology.num_compute
    if topology.kind not in DOR_KINDS or topology.shape is None or n < 2:
        raise UnsupportedShapeError(f"dor: dimension-order routing needs a grid topology ({', '.join(DOR_KINDS)}); "
                                    f"{topology.spec} is a {topology.kind} topology")
    src, dst = ordered_pairs(n)
    try:
        if topology.is_cayley:  # one route per offset from node 0, translated to every source
            off = topology.offset(src, dst)
            lengths = np.zeros(len(src), np.int64)
            rows = [None] * len(src)
            for o in range(1, n):
                route = dor_route(topology, 0, o)[0]
                sel = np.flatnonzero(off == o)
                lengths[sel] = len(route)
                for i, r in zip(sel, topology.translate_links(route[None, :], src[sel][:, None]), strict=True):
                    rows[i] = r
            links = np.concatenate(rows)
        else:
            per = [dor_route(topology, int(s), int(d))[0] for s, d in zip(src, dst, strict=True)]
            lengths, links = np.array([len(r) for r in per]), np.concatenate(per)
    except TopologyError as exc:
        raise UnsupportedShapeError(f"dor: {exc}") from None
    return path_alltoall(topology, src, dst, np.ones(len(src), np.int64), csr_offsets(lengths), links,
                         meta={"algorithm": "dor", "variant": "dor"})


def build_dor(topology: Topology, collective, *, variant=None, ports=None, **options) -> Schedule:
    """Registry builder (algorithm ``dor``) of :func:`dor_alltoall`; ``variant`` and ``ports`` are ignored.

    Returns:
        The Schedule of :func:`dor_alltoall` (N ranks, nblocks = N^2, 1 step, routed).

    Raises:
        UnsupportedShapeError: another collective than alltoall, any option, fewer than 2 ranks, or a topology
            dimension-order routing does not serve (:func:`dor_alltoall`).
        ScheduleError: a collective name that is no collective.

    Source: Basu et al. (HPDC'24) Sec. 5.2 (the DOR baseline); docs/architecture.md, "The layers, bottom up" (the
    registry).

    >>> from directcoll.topology import parse
    >>> build_dor(parse("hypercube:3"), "alltoall").meta["max_link_load"]
    4.0
    """
    require_alltoall(topology, collective, "dor", options)
    return dor_alltoall(topology)
