"""Cheap bounds the topology finder uses before (or instead of) solving LPs (Zhao et al. Sec. 5.4, App. E, F).

* :func:`bfb_cost_bound`: T_L (the diameter, exact: App. E.1, Theorem 15) and a lower bound on BFB's T_B
  (eq. (2)) from hop distances alone. Used to skip a large base's BFB LPs when nothing it or its expansions
  could reach would be Pareto-efficient (the expansions of Theorems 10-12 are monotone in the base's T_L and T_B).
* :func:`closed_form_cost`: (T_L, T_B) of the bases whose BFB cost is known in closed form, at any size:
  rings (App. F.1, BW-optimal) and Theorem 22's degree-4 circulants (App. F.4, BW-optimal); T_L is the
  diameter, from one BFS (Cayley graphs).
* :func:`alltoall_key`: the all-to-all tie-breaker among frontier points of equal (T_L, T_B): the capacity
  bound (Basu et al. Sec. 3.1) for every tied candidate, then LP (3) where it is affordable.

Source: Zhao et al. (NSDI'25) Sec. 5.4, App. E.1 (Theorem 15), App. F.1, F.4, App. A.5 / Table 7 (all-to-all);
docs/finder.md, "Large N" and "Ties".
"""

from __future__ import annotations

import numpy as np

from directcoll.topology.model import Topology
from directcoll.topology.paths import LinkSet, bfs_distances, distance_sum

#: largest tied candidate whose all-to-all LP (3) the finder solves to break a tie (above: the capacity bound only)
MAX_TIE_LP_NODES = 64


def bfb_cost_bound(topology: Topology) -> tuple[int, float]:
    """(T_L, a lower bound on T_B) of the BFB allgather of ``topology``, without its LPs.

    In step t node u receives the n_t(u) shards of the nodes at distance t, through in-links (w -> u) with
    d(v, w) = t - 1 (Sec. 6.1). If f such links are feasible for any of those sources, the most loaded one carries
    at least n_t(u) / f shards, and a link that is the only feasible one for s sources carries at least s; a
    shard is M/N and a link's bandwidth B/d, so step t takes at least max_u max(n_t(u)/f, s) d/N (units of M/B).
    Summed over t this bounds eq. (2) from below; with uniform links it is never above :func:`bfb_cost`.

    Args:
        topology: a direct topology (no switch nodes) with uniform link bandwidth.

    Returns:
        (T_L in steps = the diameter, an int; lower bound on T_B in units of M/B, a float).

    Raises:
        ResourceError: the all-pairs distance matrix would exceed the memory budget.
        TopologyError: the topology is disconnected.

    Source: Zhao et al. (NSDI'25) Sec. 6.1 (LP (1), eq. (2)), App. E.1 (Theorem 15: T_L = diameter), App. E.3
    (Theorem 19: the optimum is a ratio |J| / |links feeding J|; singletons and all sources are two such J).

    >>> from directcoll.topology import parse
    >>> bfb_cost_bound(parse("genkautz:4:64"))  # bfb_cost gives the same: (3, 1.3125)
    (3, 1.3125)
    """
    from directcoll.errors import TopologyError

    n = topology.num_compute
    keep = topology.link_src != topology.link_dst
    src, dst = topology.link_src[keep], topology.link_dst[keep]
    d = int(np.bincount(src, minlength=n).max())
    dist = bfs_distances(LinkSet(n, src, dst, spec=topology.spec))
    if (dist < 0).any():
        raise TopologyError(f"{topology.spec}: disconnected, no BFB schedule")
    diameter = int(dist.max())
    order = np.argsort(dst, kind="stable")
    start = np.searchsorted(dst[order], np.arange(n + 1))
    worst = np.zeros(diameter + 1)
    for u in range(n):
        tails = src[order[start[u]:start[u + 1]]]
        to_u = dist[:, u]
        feasible = dist[:, tails] == (to_u - 1)[:, None]  # (sources, in-links)
        k = len(tails)
        count = np.bincount(to_u, minlength=diameter + 1).astype(float)
        cell = (to_u[:, None] * k + np.arange(k)[None, :])  # (step, in-link) of every (source, in-link)
        links = (np.bincount(cell[feasible], minlength=(diameter + 1) * k).reshape(diameter + 1, k) > 0).sum(1)
        only = feasible & (feasible.sum(1) == 1)[:, None]
        single = np.bincount(cell[only], minlength=(diameter + 1) * k).reshape(diameter + 1, k)
        load = np.maximum(count / np.maximum(links, 1), single.max(1, initial=0))
        worst = np.maximum(worst, load)
    return diameter, float(worst[1:].sum() * d / n)


def closed_form_cost(spec: str, topology: Topology) -> tuple[int, float] | None:
    """(T_L, T_B) of BFB on a ring or Theorem 22 circulant in closed form, or None for any other base.

    Bidirectional and unidirectional rings (App. F.1) and the degree-4 circulants of Theorem 22 (App. F.4) are
    BW-optimal under BFB: T_B = (N-1)/N; T_L is the diameter (Theorem 15), one BFS on a Cayley graph.

    Returns:
        (T_L in steps, T_B in units of M/B) or None.

    Raises:
        Nothing beyond :func:`directcoll.topology.paths.distance_sum` on a Cayley graph (one BFS).

    Source: Zhao et al. (NSDI'25) App. F.1 (rings), App. F.4 (Theorem 22, degree-4 circulants), App. E.1.

    >>> from directcoll.topology import parse
    >>> closed_form_cost("circulant:2000:opt4", parse("circulant:2000:opt4"))
    (32, 0.9995)
    """
    if not (spec.startswith("ring:") or (spec.startswith("circulant:") and spec.endswith(":opt4"))):
        return None
    n = topology.num_compute
    return int(distance_sum(topology)[0]), (n - 1) / n


def alltoall_key(specs: list[str], *, lp_max_nodes: int = MAX_TIE_LP_NODES) -> dict[str, tuple[float, float]]:
    """spec -> (all-to-all value used for ranking, capacity bound) of tied frontier candidates; larger is better.

    Bounds first: every candidate gets the capacity bound |E| / sum of distances (Basu et al. Sec. 3.1; one BFS
    on Cayley graphs, one per node otherwise). If the best bound is shared (within 1e-12) and the graphs have at
    most ``lp_max_nodes`` nodes, LP (3) is solved for those sharing it and its value ranks them; otherwise the
    bound is the ranking value.

    Args:
        specs: candidate specs with equal (T_L, T_B).
        lp_max_nodes: largest N at which LP (3) is solved.

    Returns:
        dict spec -> (ranking value, capacity bound), floats in units of link capacity.

    Raises:
        ResourceError, SolverError: as :func:`directcoll.cost.bounds.capacity_bound` and
            :func:`directcoll.synthesis.mcf.link.alltoall_mcf`.

    Source: Zhao et al. (NSDI'25) Table 7 (the MCF column), App. A.5; docs/finder.md, "Ties".

    >>> key = alltoall_key(["ring:8", "circulant:8:1,3:uni"])
    >>> key["ring:8"][1] > 0
    True
    """
    from directcoll.cost.bounds import capacity_bound
    from directcoll.topology.spec import parse

    topos = {s: parse(s) for s in specs}
    bound = {s: float(capacity_bound(t)) for s, t in topos.items()}
    top = max(bound.values())
    tied = [s for s in specs if bound[s] >= top - 1e-12]
    key = {s: (bound[s], bound[s]) for s in specs}
    if len(tied) > 1 and all(topos[s].num_compute <= lp_max_nodes for s in tied):
        from directcoll.synthesis.mcf.link import alltoall_mcf

        for s in tied:
            key[s] = (float(alltoall_mcf(topos[s]).value), bound[s])
    return key


__all__ = ["MAX_TIE_LP_NODES", "alltoall_key", "bfb_cost_bound", "closed_form_cost"]
