"""Swing broadcast and reduce: Swing's peer sequence in place of recursive doubling's (Swing Sec. 2.1 and 6).

"Swing can replace the recursive doubling algorithm for all those collectives where it is used (e.g. broadcast
and reduce)" (Sec. 6). We read it as follows.

- **Latency-optimal** (``variant="latency"``): the binomial tree of recursive doubling with Swing's peers. The
  broadcast runs the allgather's step order (Sec. 3.1.1: the most distant peer first): at step i every rank that
  holds the vector sends it whole to its Swing peer pi(r, L-1-i) (Eq. 2; on tori one dimension per step, Sec.
  4.1), unless the peer already holds it. On power-of-two tori this is a spanning tree of L = sum log2 d_i steps
  (App. A: the butterfly reaches 2^(i+1) ranks after i + 1 steps); on other shapes the peers are taken modulo d_i
  as in :func:`directcoll.algorithms.butterfly.peer_table`, which reaches every rank in L = sum ceil(log2 d_i)
  steps on most shapes, and a last step sends to the ranks left out (from their nearest holder) where it does not
  (e.g. a ring of 15 from rank 0). The reduce is the same tree reversed (Zhao et al. App. B, Theorem 1): Swing's
  reduce-scatter step order, the nearest peers first.
- **Bandwidth-optimal** (``variant="bandwidth"``): van de Geijn's scatter + allgather, both with Swing's peers:
  the scatter runs down the tree above (the root sends the half its first peer's subtree needs, then quarters,
  ...: Swing's bandwidth-optimal halves, Sec. 3.1.1) and the allgather is Swing's
  (:func:`directcoll.algorithms.swing.swing`, with its logical block remapping); the reduce is its reversal, Swing's
  reduce-scatter followed by a gather to the root.
- **Multiport** (Sec. 4.1): ``ports`` parts of the vector, part i on the tree of the i-th plain or mirrored
  collective (default all 2D).

Reductions combine ranks that are adjacent only cyclically (step 1 joins {0, 1} with {p-2, p-1}), so these
reduces are for commutative operators.

Source: Swing (De Sensi et al., NSDI'24) Sec. 2.1, 3.1 (Eq. 2, Listing 1), 3.2, 4.1, 6 and App. A; van de Geijn
(JPDC 1994) for scatter + allgather.

>>> from directcoll.topology import parse
>>> build_swing_tree(parse("torus:4x4"), "broadcast", variant="latency", ports=1)
Schedule(broadcast, swing-tree, N=16, nblocks=1, steps=4, transfers=15)
"""

from __future__ import annotations

import numpy as np

from directcoll.algorithms import butterfly as bf
from directcoll.algorithms.rooted import Tree, check_root, rooted, scatter_allgather, tree_broadcast
from directcoll.algorithms.swing.schedule import swing
from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import Schedule
from directcoll.topology.model import Topology
from directcoll.topology.paths import bfs_distances

VARIANTS = ("latency", "bandwidth")


def swing_tree(topology: Topology, root: int = 0, first_dim: int = 0, mirrored: bool = False) -> Tree:
    """The Swing broadcast tree from ``root`` (module docstring): peers of the collective that starts in
    ``first_dim`` (``mirrored``: the mirrored one), in allgather order.

    Returns:
        A :class:`~directcoll.algorithms.rooted.Tree` of L steps (L + 1 where the peers leave ranks out).

    Raises:
        UnsupportedShapeError: ``root`` outside 0..N-1.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1.1 (Eq. 2), 4.1 and 6.

    >>> from directcoll.topology import parse
    >>> t = swing_tree(parse("ring:8"), 0)  # distances 3, then 1, then 1: the short-cut ring of Fig. 1
    >>> list(zip(t.step.tolist(), t.parent.tolist(), t.child.tolist()))[:3]
    [(0, 0, 3), (1, 3, 4), (1, 0, 7)]
    """
    shape = bf.logical_shape(topology)
    p = topology.num_compute
    root = check_root(root, p, "swing-tree")
    if p == 1:
        return Tree.from_edges(1, root, [], [], [])
    peers = bf.peer_table("swing", shape, first_dim, mirrored)
    held = np.zeros(p, dtype=bool)
    held[root] = True
    steps, parents, children = [], [], []
    for i, s in enumerate(range(len(peers) - 1, -1, -1)):
        holders = np.flatnonzero(held)
        q = peers[s, holders]
        fresh = ~held[q]
        q, first = np.unique(q[fresh], return_index=True)  # one sender per new rank
        steps.append(np.full(len(q), i))
        parents.append(holders[fresh][first])
        children.append(q)
        held[q] = True
    left = np.flatnonzero(~held)
    if len(left):  # the modulo-d peers missed these ranks: one more step from the nearest holder
        to_left = bfs_distances(topology, left, reverse=True)[:, :p]  # [i, v]: hops from v to left[i]
        to_left[:, ~held] = np.iinfo(np.int64).max
        steps.append(np.full(len(left), len(peers)))
        parents.append(np.argmin(to_left, axis=1))
        children.append(left)
    return Tree.from_edges(p, root, np.concatenate(steps), np.concatenate(parents), np.concatenate(children))


def build_swing_tree(topology: Topology, collective="broadcast", *, variant: str | None = None,
                     ports: int | None = None, root: int = 0) -> Schedule:
    """Registry builder: Swing broadcast or reduce (module docstring).

    Args:
        topology: any topology; grids use their shape, others a 1D ring of their ranks.
        collective: broadcast or reduce.
        variant: "latency" (default; the Swing tree, whole parts, L steps) or "bandwidth" (scatter + Swing allgather,
            or Swing reduce-scatter + gather: 2L steps, every rank sends about n bytes).
        ports: parts of the vector, 1..2D (default 2D; up to 6, ports beyond 2D repeating the collectives), part
            i on the i-th plain or mirrored collective.
        root: the root rank.

    Returns:
        A Schedule with meta {algorithm, variant, ports, root}: nblocks = ports (latency) or ports * N (bandwidth).

    Raises:
        UnsupportedShapeError: another collective or variant, ports outside 1..max(2D, 6), or a root outside 0..N-1.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.1, 3.1.1, 3.1.2, 4.1 and 6.

    >>> from directcoll.topology import parse
    >>> build_swing_tree(parse("torus:4x4"), "reduce", variant="bandwidth", root=5).num_steps
    8
    """
    variant = variant or "latency"
    if variant not in VARIANTS:
        raise UnsupportedShapeError(f"swing-tree: unknown variant {variant!r}; accepted: {', '.join(VARIANTS)}")
    parts = bf.collectives_for_ports(bf.logical_shape(topology), ports, "swing-tree")
    trees = [swing_tree(topology, root, dim, mirrored) for dim, mirrored in parts]
    meta = {"algorithm": "swing-tree", "variant": variant, "ports": len(parts), "mirrored": bf.mirrored_count(parts)}
    if variant == "latency":
        return rooted(collective, tree_broadcast(trees, meta=meta))
    ag = swing(topology, "allgather", variant="bandwidth", ports=len(parts))
    return rooted(collective, scatter_allgather(trees, ag, meta=meta))
