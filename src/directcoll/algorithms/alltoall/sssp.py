"""All-to-all on Domke, Hoefler and Nagel's SSSP routes (IPDPS'11, Basu et al. ref. [19]; Basu et al. HPDC'24 Sec. 5.2:
"iteratively computes shortest paths through a graph whose link weights reflect the additional congestion
caused due to each iteration"), as a path-based schedule.

Destinations are taken one at a time (0, 1, ..., N-1); for destination d, Dijkstra on the link-weight graph
gives a shortest-path in-tree towards d and every source follows it (destination-based routing, as a forwarding
table needs); then every link's weight grows by the load just routed over it (one block per route, divided by
the link's bandwidth relative to the fastest). Variants: ``minimal`` (default) starts every link at a weight
larger than all the load that can ever be added, so every route is a minimal-hop path and the weights only
choose, among minimal paths, the least loaded one; ``nonminimal`` starts at weight 1 (one block's load), so a
route detours round loaded links when that costs less than its extra hops.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from directcoll.algorithms.alltoall.routed import csr_offsets, path_alltoall, require_alltoall
from directcoll.errors import TopologyError, UnsupportedShapeError
from directcoll.schedule.ir import Schedule, reorder_csr
from directcoll.topology.model import Topology

SSSP_VARIANTS = ("minimal", "nonminimal")


def sssp_alltoall(topology: Topology, variant: str = "minimal") -> Schedule:
    """All-to-all on Domke et al.'s SSSP routes (the module docstring; Basu Sec. 5.2 baseline [19]).

    For d = 0, ..., N-1: Dijkstra towards d on the current link weights gives every node one next link towards
    d (parallel links: the lightest), every compute source follows them, and every link's weight grows by the
    routes to d it carries divided by its relative bandwidth. ``minimal`` starts every weight at
    W0 = V N^2 / min relative bandwidth + 1, more than any path's added load, so routes are minimal-hop paths;
    ``nonminimal`` starts at 1.

    Args:
        topology: any topology whose compute nodes all reach each other (switches may relay).
        variant: ``minimal`` (default) or ``nonminimal`` (:data:`SSSP_VARIANTS`).

    Returns:
        A one-step all-to-all Schedule (N ranks, nblocks = N^2, N(N-1) transfers of whole blocks), one explicit
        route per pair; meta ``max_link_load`` in blocks of one pair per unit of relative bandwidth.

    Raises:
        UnsupportedShapeError: an unknown variant or fewer than 2 ranks.
        TopologyError: some rank cannot reach another.

    Source: Basu et al. (HPDC'24) Sec. 5.2 (the SSSP baseline, ref. [19]: "iteratively computes shortest paths
    through a graph whose link weights reflect the additional congestion"); the weight rule (destination order,
    W0, loads over relative bandwidth) is this project's reading, docs/alltoall.md, "Baselines and compare".

    >>> from directcoll.topology import parse
    >>> s = sssp_alltoall(parse("complete:4"))  # every pair's only shortest path is its own link
    >>> len(s.src), s.meta["max_link_load"]
    (12, 1.0)
    """
    if variant not in SSSP_VARIANTS:
        raise UnsupportedShapeError(f"sssp: unknown variant {variant!r}; accepted: {', '.join(SSSP_VARIANTS)}")
    n, v = topology.num_compute, topology.num_nodes
    if n < 2:
        raise UnsupportedShapeError(f"sssp: an all-to-all needs at least 2 ranks, {topology.spec} has {n}")
    cap = topology.link_bandwidth / topology.link_bandwidth.max()
    w0 = v * n * n / cap.min() + 1.0 if variant == "minimal" else 1.0
    weight = np.full(topology.num_links, w0)
    u_of, v_of = topology.link_src, topology.link_dst
    key = u_of * v + v_of
    out_src, out_dst, out_len, out_links = [], [], [], []
    for d in range(n):
        # lightest link of every (u, v) node pair, and the reversed graph for distances towards d
        order = np.lexsort((weight, key))
        first = order[np.r_[True, key[order][1:] != key[order][:-1]]]
        graph = sp.csr_matrix((weight[first], (v_of[first], u_of[first])), shape=(v, v))
        dist, pred = dijkstra(graph, directed=True, indices=d, return_predecessors=True)
        sources = np.delete(np.arange(n), d)
        if np.isinf(dist[sources]).any():
            raise TopologyError(f"sssp: {topology.spec}: some rank cannot reach rank {d}")
        pair_keys = key[first]
        cur, hops, links = sources.copy(), np.zeros(len(sources), np.int64), []
        active = np.arange(len(sources))
        while len(active):
            u = cur[active]
            nxt = pred[u]
            link = first[np.searchsorted(pair_keys, u * v + nxt)]
            links.append((active, hops[active], link))
            hops[active] += 1
            cur[active] = nxt
            active = active[nxt != d]
        who = np.concatenate([a for a, _, _ in links])
        at = np.concatenate([h for _, h, _ in links])
        lk = np.concatenate([k for _, _, k in links])
        seq = lk[np.lexsort((at, who))]
        weight += np.bincount(lk, minlength=topology.num_links) / cap
        out_src.append(sources)
        out_dst.append(np.full(len(sources), d))
        out_len.append(hops)
        out_links.append(seq)
    src, dst, lengths = (np.concatenate(a) for a in (out_src, out_dst, out_len))
    ro = csr_offsets(lengths)
    order = np.lexsort((dst, src))  # pairs in rank order
    ro, idx = reorder_csr(ro, order)
    links = np.concatenate(out_links)[idx]
    return path_alltoall(topology, src[order], dst[order], np.ones(len(src), np.int64), ro, links,
                         meta={"algorithm": "sssp", "variant": variant})


def build_sssp(topology: Topology, collective, *, variant=None, ports=None, **options) -> Schedule:
    """Registry builder (algorithm ``sssp``) of :func:`sssp_alltoall`; ``variant`` None means ``minimal``,
    ``ports`` is ignored.

    Returns:
        The Schedule of :func:`sssp_alltoall` (N ranks, nblocks = N^2, 1 step, routed).

    Raises:
        UnsupportedShapeError: another collective than alltoall, any option, an unknown variant or fewer than
            2 ranks.
        ScheduleError: a collective name that is no collective.
        TopologyError: some rank cannot reach another.

    Source: Basu et al. (HPDC'24) Sec. 5.2 (the SSSP baseline); docs/architecture.md, "The layers, bottom up" (the
    registry).

    >>> from directcoll.topology import parse
    >>> build_sssp(parse("ring:4"), "alltoall").meta["variant"]
    'minimal'
    """
    require_alltoall(topology, collective, "sssp", options)
    return sssp_alltoall(topology, variant or "minimal")
