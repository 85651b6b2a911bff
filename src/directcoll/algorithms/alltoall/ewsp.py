"""All-to-all split equally over all shortest paths (Basu et al.'s EwSP baseline, HPDC'24 Sec. 5.2 and Fig. 8), as a
path-based schedule: pair (i, j) with sigma shortest paths sends 1/sigma of its block on each of them (exact
fractions; the denominator is the lcm of the path counts). The link loads are exactly those of
:func:`directcoll.topology.routing.link_loads` (even split over all minimal paths). The paths are enumerated
(:func:`directcoll.topology.paths.shortest_paths_from`), so a pair with more than ``max_paths`` (default
:data:`~directcoll.topology.paths.MAX_PATHS_PER_PAIR`) shortest paths is refused (torus:16x16 has 51,480 between
antipodes).
"""

from __future__ import annotations

from math import lcm

import numpy as np

from directcoll.algorithms.alltoall.routed import csr_offsets, path_alltoall, require_alltoall
from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import Schedule, reorder_csr
from directcoll.topology.model import Topology
from directcoll.topology.paths import MAX_PATHS_PER_PAIR, shortest_paths_from


def shortest_paths(topology: Topology, max_paths: int = MAX_PATHS_PER_PAIR):
    """Every shortest path between every ordered pair of compute nodes (:func:`~directcoll.topology.paths.
    shortest_paths_from` from every source; Cayley topologies: from node 0, translated to every source).

    Returns:
        (src, dst, route_offsets, route_links, count): int64 (P,), (P,), (P + 1,), (R,) with the paths of a pair
        consecutive (lexicographic in their link ids) and pairs in rank order, and count (P,), the number of
        shortest paths of each path's pair.

    Raises:
        UnsupportedShapeError: a pair with more than ``max_paths`` shortest paths (the message names it).
        ResourceError: the hop distances of a source would exceed the memory budget
            (:func:`~directcoll.topology.paths.bfs_distances`).

    Source: Basu et al. (HPDC'24) Sec. 5.2 (EwSP "distributes each commodity equally on all the shortest paths
    between source and destination") and Sec. 3.1.4 (the all-shortest-paths set of pMCF); the enumeration and
    its cap are docs/alltoall.md, "Baselines and compare".

    >>> from directcoll.topology import parse
    >>> src, dst, offsets, links, count = shortest_paths(parse("ring:4"))
    >>> len(src), int(count.max())
    (16, 2)
    """
    n = topology.num_compute
    sources = [0] if topology.is_cayley else range(n)
    parts = []
    for s in sources:
        dest, ro, links = shortest_paths_from(topology, s, np.delete(np.arange(n), s), max_paths=max_paths)
        lengths = np.diff(ro)
        if topology.is_cayley:
            every = np.arange(n)
            parts.append((np.repeat(every, len(dest)), topology.translate(dest[None, :], every[:, None]).ravel(),
                          np.tile(lengths, n), topology.translate_links(links[None, :], every[:, None]).ravel()))
        else:
            parts.append((np.full(len(dest), s), dest, lengths, links))
    src, dst, lengths, links = (np.concatenate([p[i] for p in parts]) for i in range(4))
    order = np.lexsort((dst, src))
    ro, idx = reorder_csr(csr_offsets(lengths), order)
    src, dst = src[order], dst[order]
    pair = src * n + dst
    count = np.bincount(pair, minlength=n * n)[pair]
    return src, dst, ro, links[idx], count


def ewsp_alltoall(topology: Topology, max_paths: int = MAX_PATHS_PER_PAIR) -> Schedule:
    """All-to-all that splits every pair's block equally over all its shortest paths (Basu's EwSP baseline,
    Sec. 5.2): 1/sigma of the block on each of the sigma paths, exactly (denominator lcm of the sigmas).

    Args:
        topology: any topology whose compute nodes all reach each other.
        max_paths: the most shortest paths a pair may have (default
            :data:`~directcoll.topology.paths.MAX_PATHS_PER_PAIR`).

    Returns:
        A one-step all-to-all Schedule (N ranks, nblocks = N^2, one transfer per shortest path, exact fractional
        pieces with ``denominator`` = the lcm of the path counts), each transfer routed on its path; meta
        ``max_paths_per_pair`` and ``max_link_load`` (blocks of one pair per unit of relative bandwidth).

    Raises:
        UnsupportedShapeError: fewer than 2 ranks, a pair with more than ``max_paths`` shortest paths, or a
            denominator beyond 2^62 / N^2 (exact pieces would overflow int64).
        ScheduleError: a pair without any path (unreachable; :func:`~directcoll.algorithms.alltoall.routed.
            path_alltoall` finds its block uncovered).
        ResourceError: as :func:`shortest_paths`.

    Source: Basu et al. (HPDC'24) Sec. 5.2 (Equal weight Shortest Path, EwSP) and Sec. 5.3, Fig. 8.

    >>> from directcoll.topology import parse
    >>> s = ewsp_alltoall(parse("ring:4"))  # antipodal pairs split over 2 paths
    >>> s.denominator, len(s.src), s.meta["max_link_load"]
    (2, 16, 2.0)
    """
    n = topology.num_compute
    if n < 2:
        raise UnsupportedShapeError(f"ewsp: an all-to-all needs at least 2 ranks, {topology.spec} has {n}")
    src, dst, ro, links, count = shortest_paths(topology, max_paths)
    den = lcm(*np.unique(count).tolist())
    if den > 2**62 // (n * n):
        raise UnsupportedShapeError(f"ewsp: {topology.spec}: the lcm of the path counts ({den}) is too large for "
                                    "exact pieces")
    return path_alltoall(topology, src, dst, den // count, ro, links, denominator=den,
                         meta={"algorithm": "ewsp", "variant": "ewsp", "max_paths_per_pair": int(count.max())})


def build_ewsp(topology: Topology, collective, *, variant=None, ports=None, **options) -> Schedule:
    """Registry builder (algorithm ``ewsp``) of :func:`ewsp_alltoall` (option ``max_paths``); ``variant`` and
    ``ports`` are ignored.

    Returns:
        The Schedule of :func:`ewsp_alltoall`.

    Raises:
        UnsupportedShapeError: another collective than alltoall, an option other than ``max_paths``, or as
            :func:`ewsp_alltoall`.
        ScheduleError: a collective name that is no collective; as :func:`ewsp_alltoall`.
        ResourceError: as :func:`ewsp_alltoall`.

    Source: Basu et al. (HPDC'24) Sec. 5.2 (the EwSP baseline); docs/architecture.md, "The layers, bottom up" (the
    registry).

    >>> from directcoll.topology import parse
    >>> build_ewsp(parse("ring:4"), "alltoall", max_paths=2).meta["max_paths_per_pair"]
    2
    """
    require_alltoall(topology, collective, "ewsp", options, ("max_paths",))
    return ewsp_alltoall(topology, int(options.get("max_paths", MAX_PATHS_PER_PAIR)))
