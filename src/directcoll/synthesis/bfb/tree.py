"""BFB broadcast and reduce on direct-connect topologies (Zhao et al. Sec. 6.1, read for one root).

Zhao et al. build allgather as "a simultaneous broadcast from every node", each broadcast breadth-first: in
step t every node at distance t from the source receives the source's data over its in-links from nodes at
distance t - 1, the amounts per link set by LP (1). We take the two rooted collectives from that reading.

- **Latency-optimal** (``variant="latency"``): the breadth-first broadcast of the root alone. With one source,
  LP (1) for (u, t) is: minimise U subject to sum_l x_l = 1 and x_l <= U bw(l) / max bw over the in-links l of u
  from distance t - 1 (App. E.3, LP (14) with α = 0), whose optimum is x_l proportional to bw(l): equal shares on
  uniform links. So u gets the vector in pieces, one per feeding in-neighbour, in ecc(root) steps (the fewest
  possible, Theorem 15's argument for one source) over shortest paths only. The reduce is its reversal on the
  transposed graph (App. B, Theorem 1, Corollary 1.1): every rank's partial sums flow back along shortest paths.
- **Bandwidth-optimal** (``variant="bandwidth"``): van de Geijn's scatter + allgather with the BFB allgather
  (:func:`directcoll.synthesis.bfb.bfb_allgather`, BW-optimal on tori, rings, circulants and other symmetric
  graphs, Sec. 6.2): the root scatters every rank's shard down a breadth-first (shortest-path) tree whose
  subtrees are balanced (deepest ranks first, each to the in-neighbour one hop closer with the smallest subtree so
  far); then BFB allgather. ecc(root) + D steps. The reduce is BFB reduce-scatter (Corollary 1.1) followed by the
  gather that reverses the scatter.

Direct topologies only (every node a rank), as BFB. Reductions join ranks by distance, not rank order: commutative
operators.

Source: Zhao et al. (NSDI'25) Sec. 6.1 (LP (1), eq. (2)), App. B (Theorem 1, Corollary 1.1), App. E.1 and E.3;
van de Geijn (JPDC 1994).

>>> from directcoll.topology import parse
>>> build_bfb_tree(parse("torus:3x3"), "broadcast", root=4)
Schedule(broadcast, bfb-tree, N=9, nblocks=1, steps=2, transfers=12)
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from directcoll.algorithms.rooted import Tree, check_root, rooted, scatter_allgather
from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.chunking import common_denominator, rational_row
from directcoll.schedule.ir import COPY, Collective, Schedule, ScheduleBuilder
from directcoll.schedule.ops import reverse
from directcoll.synthesis.bfb.lp import MAX_PIECE_DENOMINATOR, MAX_SCHEDULE_DENOMINATOR
from directcoll.synthesis.bfb.schedule import bfb_allgather, bfb_reduce_scatter
from directcoll.topology.model import Topology
from directcoll.topology.paths import LinkSet, bfs_distances

VARIANTS = ("latency", "bandwidth")


def _links(topology: Topology, transpose: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(src, dst, bandwidth) of the direct links (self-loops dropped), transposed for a reduce."""
    if topology.num_nodes != topology.num_compute:
        raise UnsupportedShapeError(f"bfb-tree: {topology.spec} has switch nodes; BFB schedules direct topologies "
                                    "(every node a rank, Zhao et al. Sec. 6.1)")
    keep = topology.link_src != topology.link_dst
    src, dst = topology.link_src[keep], topology.link_dst[keep]
    if transpose:
        src, dst = dst, src
    return src, dst, topology.link_bandwidth[keep].astype(float)


def _distances(n: int, src: np.ndarray, dst: np.ndarray, root: int, spec: str) -> np.ndarray:
    dist = bfs_distances(LinkSet(n, src, dst, spec=spec), [root])[0]
    if (dist < 0).any():
        raise UnsupportedShapeError(f"bfb-tree: rank {int(np.flatnonzero(dist < 0)[0])} cannot be reached from "
                                    f"rank {root} on {spec}")
    return dist


def bfb_broadcast(topology: Topology, root: int = 0, *, transpose: bool = False) -> Schedule:
    """The breadth-first broadcast of the root's vector (module docstring, latency-optimal), on the transposed
    links with ``transpose`` (to be reversed into a reduce).

    Returns:
        A broadcast Schedule: nblocks = 1, ecc(root) steps, one transfer per (feeding in-neighbour, rank); the pieces
        are exact fractions (shares proportional to link bandwidth).

    Raises:
        UnsupportedShapeError: switch nodes, a rank the root cannot reach, or a root outside 0..N-1.
        ScheduleError: the shares need a denominator over the BFB cap.

    Source: Zhao et al. (NSDI'25) Sec. 6.1, LP (1) for one source; App. E.3 (bandwidth-proportional shares).

    >>> from directcoll.topology import parse
    >>> bfb_broadcast(parse("ring:4")).denominator  # rank 2 gets one half from rank 1, one from rank 3
    2
    """
    n = topology.num_compute
    root = check_root(root, n, "bfb-tree")
    src, dst, bw = _links(topology, transpose)
    dist = _distances(n, src, dst, root, topology.spec)
    feed = dist[src] + 1 == dist[dst]  # links from one hop closer
    src, dst, bw = src[feed], dst[feed], bw[feed]
    pairs, where = np.unique(np.stack([dst, src], axis=1), axis=0, return_inverse=True)
    weight = np.bincount(where.ravel(), weights=bw, minlength=len(pairs))  # (u, w): bandwidth of its links
    shares: list[Fraction] = []
    for u in np.unique(pairs[:, 0]):
        rows = np.flatnonzero(pairs[:, 0] == u)
        shares += rational_row(weight[rows] / weight[rows].sum(), 1, MAX_PIECE_DENOMINATOR)
    den = common_denominator(shares, MAX_SCHEDULE_DENOMINATOR, what="bfb-tree's link shares",
                             hint="give the links simpler bandwidth ratios")
    amount = np.array([int(f * den) for f in shares], dtype=np.int64)
    first = np.r_[True, pairs[1:, 0] != pairs[:-1, 0]]
    ends = np.cumsum(amount)
    starts = ends - amount
    starts -= np.maximum.accumulate(np.where(first, starts, 0))  # restart at 0 for every rank
    b = ScheduleBuilder(Collective.BROADCAST, n, 1, denominator=den)
    b.add(dist[pairs[:, 0]] - 1, pairs[:, 1], pairs[:, 0], COPY, starts, starts + amount)
    return b.build(meta={"root": root})


def bfs_scatter_tree(topology: Topology, root: int = 0, *, transpose: bool = False) -> Tree:
    """A shortest-path tree from the root with balanced subtrees (module docstring, bandwidth-optimal).

    Returns:
        A :class:`~directcoll.algorithms.rooted.Tree`: the rank at distance t joins at step t - 1.

    Raises:
        UnsupportedShapeError: switch nodes, a rank the root cannot reach, or a root outside 0..N-1.

    Source: Zhao et al. (NSDI'25) Sec. 6.1 (breadth-first, shortest paths only); Graham's LPT rule for the balance.

    >>> from directcoll.topology import parse
    >>> bfs_scatter_tree(parse("ring:5")).depth
    2
    """
    n = topology.num_compute
    root = check_root(root, n, "bfb-tree")
    src, dst, _ = _links(topology, transpose)
    dist = _distances(n, src, dst, root, topology.spec)
    feed = dist[src] + 1 == dist[dst]
    src, dst = src[feed], dst[feed]
    size = np.ones(n, dtype=np.int64)  # subtree sizes, filled from the deepest ranks up
    parent = np.full(n, -1, dtype=np.int64)
    for t in range(int(dist.max()), 0, -1):
        level = np.flatnonzero(dist == t)
        for u in level[np.argsort(-size[level], kind="stable")]:
            cand = np.unique(src[dst == u])
            w = int(cand[np.argmin(size[cand])])  # the smallest subtree so far (the first of equals)
            parent[u] = w
            size[w] += size[u]
    kids = np.flatnonzero(parent >= 0)
    return Tree.from_edges(n, root, dist[kids] - 1, parent[kids], kids)


def build_bfb_tree(topology: Topology, collective="broadcast", *, variant: str | None = None,
                   ports: int | None = None, root: int = 0) -> Schedule:
    """Registry builder: BFB broadcast or reduce (module docstring).

    Args:
        topology: a direct topology (every node a rank).
        collective: broadcast or reduce.
        variant: "latency" (default: ecc(root) steps, the whole vector spread over the shortest paths) or "bandwidth"
            (scatter + BFB allgather, ecc(root) + D steps; reduce: BFB reduce-scatter + gather).
        ports: ignored (BFB uses every link).
        root: the root rank.

    Returns:
        A Schedule with meta {algorithm, variant, root}: nblocks 1 (latency) or N (bandwidth).

    Raises:
        UnsupportedShapeError: another collective or variant, switch nodes, an unreachable rank, a bad root.
        ScheduleError, SolverError, ResourceError: as :func:`directcoll.synthesis.bfb.bfb_allgather`.

    Source: Zhao et al. (NSDI'25) Sec. 6.1, App. B Corollary 1.1; van de Geijn (JPDC 1994).

    >>> from directcoll.topology import parse
    >>> build_bfb_tree(parse("circulant:8:1,3"), "reduce", variant="bandwidth", root=2).num_steps
    4
    """
    variant = variant or "latency"
    if variant not in VARIANTS:
        raise UnsupportedShapeError(f"bfb-tree: unknown variant {variant!r}; accepted: {', '.join(VARIANTS)}")
    coll = Collective.parse(collective)
    reduce = coll is Collective.REDUCE
    meta = {"algorithm": "bfb-tree", "variant": variant, "root": check_root(root, topology.num_compute, "bfb-tree")}
    if variant == "latency":
        bcast = bfb_broadcast(topology, root, transpose=reduce).with_meta(**meta)
    else:
        tree = bfs_scatter_tree(topology, root, transpose=reduce)
        # a reduce runs on the transposed links: its allgather half is the reversed BFB reduce-scatter (Cor. 1.1)
        ag = reverse(bfb_reduce_scatter(topology)) if reduce else bfb_allgather(topology)
        bcast = scatter_allgather([tree], ag, meta=meta)
    return rooted(coll, bcast)
