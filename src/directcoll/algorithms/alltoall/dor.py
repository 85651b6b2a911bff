"""All-to-all on dimension-order routes (Basu et al. Sec. 5.2 baseline, ref. [17]): one path per pair from
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

    Raises:
        UnsupportedShapeError: a topology outside :data:`DOR_KINDS` (no grid, HammingMesh, punctured, ...) or
            one missing a link its routes need.
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
    """Registry builder of :func:`dor_alltoall`."""
    require_alltoall(topology, collective, "dor", options)
    return dor_alltoall(topology)
