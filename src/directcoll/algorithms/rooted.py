"""Broadcast and reduce from trees: the shared machinery of the binomial, chain, Swing and BFB rooted schedules.

A broadcast tree is a set of edges (step, parent, child) that reaches every rank from the root, each rank
receiving once, from a parent that already holds the data. Three schedules come from a list of trees (one per
port: part i of the vector follows tree i, the multiport technique of Swing Sec. 4.1):

- :func:`tree_broadcast`: every edge copies its whole part; with ``chunks`` > 1 the part is cut into chunks and
  chunk j crosses an edge of tree step s at step s + j (pipelining: a rank forwards chunk j the step after it got
  it, whatever the tree). The latency-optimal broadcast of Swing Sec. 6 and the pipelined chain.
- :func:`scatter_allgather`: van de Geijn's broadcast, a scatter down the tree (a child gets the blocks its
  subtree owns in the allgather that follows) and an allgather; the allgather's pieces to a rank that already
  holds them from the scatter are dropped, so every rank receives every cell once.
- :func:`as_reduce`: the reversal of a broadcast (Zhao et al. App. B, Theorem 1): step t becomes T-1-t, src and
  dst swap, copies become reductions. Because every rank receives every cell exactly once in the broadcast,
  every rank's contribution reaches the root once: a tree broadcast reverses into a tree reduce, a
  scatter + allgather into a reduce-scatter + gather (Rabenseifner's reduce).

The root is ``meta["root"]`` of the result (:attr:`directcoll.schedule.ir.Schedule.root`).

Source: Swing (De Sensi et al., NSDI'24) Sec. 2.1 and 6 (broadcast and reduce with Swing in place of recursive
doubling); van de Geijn, "On global combine operations" (JPDC 1994) and Barnett et al. (1994) for scatter +
allgather; Zhao et al. (NSDI'25) App. B, Def. 5 and Theorem 1 (reversal); MPI 4.1 standard, Ch. 6 (MPI_Bcast,
MPI_Reduce).

>>> t = Tree.from_edges(4, 0, [0, 1, 1], [0, 0, 1], [1, 2, 3])  # 0 -> 1, then 0 -> 2 and 1 -> 3
>>> tree_broadcast([t])
Schedule(broadcast, unknown, N=4, nblocks=1, steps=2, transfers=3)
>>> as_reduce(tree_broadcast([t])).collective.value
'reduce'
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from directcoll.errors import ScheduleError, UnsupportedShapeError
from directcoll.resources import check_memory
from directcoll.schedule.ir import COPY, Collective, Schedule, ScheduleBuilder
from directcoll.schedule.ops import reverse


@dataclass(frozen=True)
class Tree:
    """A broadcast tree on ``nranks`` ranks from ``root``: edge e sends at ``step[e]`` from ``parent[e]`` to
    ``child[e]``.

    Attributes:
        nranks, root: N and the root rank.
        step, parent, child: int64 (N-1,), sorted by step.

    Raises:
        UnsupportedShapeError: (:meth:`from_edges`) a rank reached twice or never, or a parent that sends before it
            holds the data.

    Source: MPI 4.1 standard, Ch. 6 (MPI_Bcast); Swing (De Sensi et al., NSDI'24) Sec. 6.

    >>> Tree.from_edges(3, 2, [0, 1], [2, 0], [0, 1]).depth
    2
    """

    nranks: int
    root: int
    step: np.ndarray
    parent: np.ndarray
    child: np.ndarray

    @classmethod
    def from_edges(cls, nranks: int, root: int, step, parent, child) -> Tree:
        """The tree of these edges, checked: every rank but the root is reached exactly once, by a parent that
        received in an earlier step (or is the root).

        Returns:
            A :class:`Tree` with the edges sorted by step.

        Raises:
            UnsupportedShapeError: the edges are not such a tree (naming the first offending rank).

        Source: MPI 4.1 standard, Ch. 6 (MPI_Bcast: every rank ends with the root's data).

        >>> Tree.from_edges(2, 0, [0], [0], [1]).child.tolist()
        [1]
        """
        step, parent, child = (np.asarray(a, dtype=np.int64).ravel() for a in (step, parent, child))
        order = np.argsort(step, kind="stable")
        step, parent, child = step[order], parent[order], child[order]
        got = np.full(nranks, -2, dtype=np.int64)  # the step a rank receives in (-1: the root)
        got[root] = -1
        counts = np.bincount(child, minlength=nranks)
        if len(child) != nranks - 1 or counts[root] or np.any(np.delete(counts, root) != 1):
            bad = [r for r in range(nranks) if (counts[r] != 1) != (r == root)]
            raise UnsupportedShapeError(f"not a broadcast tree from rank {root} on {nranks} ranks: rank {bad[0]} is "
                                        f"reached {counts[bad[0]]} times")
        got[child] = step
        late = got[parent] >= step
        if late.any():
            e = int(np.flatnonzero(late)[0])
            raise UnsupportedShapeError(f"not a broadcast tree: rank {parent[e]} sends to rank {child[e]} in step "
                                        f"{step[e]} before it holds the data")
        return cls(int(nranks), int(root), step, parent, child)

    @property
    def depth(self) -> int:
        """Steps of the tree (one more than its last edge's step; 0 for one rank). Raises: Nothing.
        Source: this module (tree steps)."""
        return int(self.step[-1]) + 1 if len(self.step) else 0

    def subtrees(self) -> np.ndarray:
        """bool (N, N): ``[a, v]`` is True when a is v or one of v's ancestors (v lies in a's subtree).

        Raises:
            ResourceError: the N x N matrix would exceed the memory budget.

        Source: van de Geijn (1994): a scatter sends a child the blocks of its subtree.

        >>> Tree.from_edges(3, 0, [0, 1], [0, 1], [1, 2]).subtrees()[1].tolist()
        [False, True, True]
        """
        n = self.nranks
        check_memory(f"the subtrees of a broadcast tree on {n:,} ranks", float(n) * n)
        par = np.full(n, -1, dtype=np.int64)
        par[self.child] = self.parent
        inside = np.zeros((n, n), dtype=bool)
        cur = np.arange(n)
        live = np.ones(n, dtype=bool)
        while live.any():
            inside[cur[live], np.flatnonzero(live)] = True
            nxt = np.where(live, par[np.where(live, cur, 0)], -1)
            live = nxt >= 0
            cur = np.where(live, nxt, cur)
        return inside


def runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs of True in every row of a bool (R, B) array: (row, start, stop) int64 arrays, by row then start.

    Raises:
        Nothing: array arithmetic.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1.1 (send contiguous ranges: one piece per run).

    >>> [a.tolist() for a in runs(np.array([[True, True, False, True]]))]
    [[0, 0], [0, 3], [2, 4]]
    """
    padded = np.zeros((mask.shape[0], mask.shape[1] + 2), dtype=np.int8)
    padded[:, 1:-1] = mask
    edges = np.diff(padded, axis=1)
    rows, starts = np.nonzero(edges == 1)
    _, stops = np.nonzero(edges == -1)
    return rows.astype(np.int64), starts.astype(np.int64), stops.astype(np.int64)


def _check_trees(trees: list[Tree]) -> tuple[int, int]:
    if not trees:
        raise ScheduleError("a rooted schedule needs at least one tree")
    n, root = trees[0].nranks, trees[0].root
    if any((t.nranks, t.root) != (n, root) for t in trees):
        raise ScheduleError("every tree of a rooted schedule must span the same ranks from the same root")
    return n, root


def tree_broadcast(trees: list[Tree], *, chunks: int = 1, meta: dict | None = None) -> Schedule:
    """Broadcast part i of the vector down tree i, in ``chunks`` pipelined chunks per part.

    Args:
        trees: one :class:`Tree` per part (same N and root).
        chunks: chunks per part (>= 1); chunk j crosses an edge of step s at step s + j.
        meta: the schedule's metadata (the root is added).

    Returns:
        A broadcast Schedule: nblocks = len(trees) * chunks, max depth + chunks - 1 steps, (N-1) * nblocks
        transfers of one block each.

    Raises:
        ScheduleError: no trees, trees of different N or root, or chunks < 1.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1.2 and 6 (whole-vector steps); pipelined chains and trees
    (Sanders, Speck & Träff 2009, Sec. 2).

    >>> tree_broadcast([Tree.from_edges(3, 0, [0, 1], [0, 1], [1, 2])], chunks=2).num_steps
    3
    """
    n, root = _check_trees(trees)
    if int(chunks) < 1:
        raise ScheduleError(f"chunks must be >= 1, got {chunks}")
    chunks = int(chunks)
    b = ScheduleBuilder(Collective.BROADCAST, n, len(trees) * chunks)
    for i, t in enumerate(trees):
        for j in range(chunks):
            block = i * chunks + j
            b.add(t.step + j, t.parent, t.child, COPY, block, block + 1)
    return b.build(meta={**(meta or {}), "root": root})


def scatter_allgather(trees: list[Tree], allgather: Schedule, *, meta: dict | None = None) -> Schedule:
    """van de Geijn's broadcast: scatter every part down its tree, then ``allgather``.

    Part i is blocks [i * nblocks / k, (i + 1) * nblocks / k) of ``allgather`` (k = len(trees)); in the scatter, the
    edge to a child carries the blocks of part i whose ``allgather`` owner lies in the child's subtree (one piece per
    run). The allgather follows, its steps shifted by the scatter's depth, without the pieces a rank already holds
    (the root, and the blocks of a subtree that passed through a rank in the scatter).

    Returns:
        A broadcast Schedule with ``allgather``'s nblocks and denominator.

    Raises:
        ScheduleError: no trees, trees that disagree, an allgather of other N, nblocks not divisible by the number
            of trees, explicit routes, or scratch blocks.

    Source: van de Geijn (JPDC 1994); Barnett et al. (1994); Swing (De Sensi et al., NSDI'24) Sec. 2.1 and 6.

    >>> from directcoll.algorithms.ring import ring_allgather
    >>> t = Tree.from_edges(4, 0, [0, 1, 1], [0, 0, 2], [2, 1, 3])
    >>> scatter_allgather([t], ring_allgather(range(4))).num_steps
    5
    """
    n, root = _check_trees(trees)
    ag = allgather
    k = len(trees)
    if ag.collective is not Collective.ALLGATHER or ag.nranks != n or ag.nblocks % k:
        raise ScheduleError(f"scatter_allgather: need an allgather on {n} ranks with nblocks divisible by {k}")
    if ag.route_offsets is not None or ag.nscratch or ag.piece_shift is not None:
        raise ScheduleError("scatter_allgather: the allgather must have no routes, scratch or displaced pieces")
    den, per = ag.denominator, ag.nblocks // k
    b = ScheduleBuilder(Collective.BROADCAST, n, ag.nblocks, denominator=den)
    holds = np.zeros((n, ag.nblocks), dtype=bool)  # who holds which block after the scatter
    holds[root] = True
    depth = max(t.depth for t in trees)
    for i, t in enumerate(trees):
        inside = t.subtrees()
        owners = ag.owner[i * per:(i + 1) * per]
        masks = inside[t.child][:, owners]  # (edges, per): the blocks each edge carries
        holds[np.repeat(t.child, per), np.tile(np.arange(i * per, (i + 1) * per), len(t.child))] = masks.ravel()
        row, start, stop = runs(masks)
        counts = np.bincount(row, minlength=len(t.child))
        keep = counts > 0
        b.add_pieces(t.step[keep], t.parent[keep], t.child[keep], COPY, counts[keep],
                     (start + i * per) * den, (stop + i * per) * den)
    # the allgather, without the block pieces its destination already holds
    first, last = ag.piece_start // den, (ag.piece_stop - 1) // den
    count = last - first + 1
    piece = np.repeat(np.arange(ag.num_pieces), count)
    block = np.repeat(first, count) + np.arange(count.sum()) - np.repeat(np.cumsum(count) - count, count)
    lo = np.maximum(ag.piece_start[piece], block * den)
    hi = np.minimum(ag.piece_stop[piece], (block + 1) * den)
    tr = ag.piece_transfer[piece]
    keep = ~holds[ag.dst[tr], block]
    tr, lo, hi = tr[keep], lo[keep], hi[keep]
    joined = np.r_[False, (tr[1:] == tr[:-1]) & (lo[1:] == hi[:-1])]  # merge runs cut at block ends
    head = np.flatnonzero(~joined)
    tail = np.r_[head[1:], len(tr)] - 1
    tr, lo, hi = tr[head], lo[head], hi[tail]
    used, counts = np.unique(tr, return_counts=True)
    b.add_pieces(ag.step[used] + depth, ag.src[used], ag.dst[used], COPY, counts, lo, hi)
    return b.build(meta={**(meta or {}), "root": root})


def as_reduce(broadcast: Schedule, *, meta: dict | None = None) -> Schedule:
    """The reduce that reverses ``broadcast`` (same root, steps and volumes; copies become reductions).

    Returns:
        A reduce Schedule with ``broadcast``'s N, nblocks, steps and root.

    Raises:
        ScheduleError: ``broadcast`` is not a broadcast, or has explicit routes.

    Source: Zhao et al. (NSDI'25) App. B, Def. 5 and Theorem 1 (a reversed schedule on the transposed graph);
    valid because every rank receives every cell once in this module's broadcasts.

    >>> as_reduce(tree_broadcast([Tree.from_edges(2, 1, [0], [1], [0])])).root
    1
    """
    if broadcast.collective is not Collective.BROADCAST:
        raise ScheduleError(f"as_reduce: expected a broadcast, got {broadcast.collective.value}")
    return reverse(broadcast, meta=meta)


def rooted(collective, broadcast: Schedule) -> Schedule:
    """``broadcast`` itself for a broadcast, its reversal (:func:`as_reduce`) for a reduce.

    Returns:
        A Schedule of ``collective``.

    Raises:
        UnsupportedShapeError: a collective other than broadcast and reduce.

    Source: this module; Zhao et al. (NSDI'25) App. B, Theorem 1.

    >>> rooted("reduce", tree_broadcast([Tree.from_edges(2, 0, [0], [0], [1])])).collective.value
    'reduce'
    """
    coll = Collective.parse(collective)
    if not coll.rooted:
        raise UnsupportedShapeError(f"rooted schedules are broadcast and reduce only; got {coll.value}")
    return broadcast if coll is Collective.BROADCAST else as_reduce(broadcast)


def check_root(root, nranks: int, name: str) -> int:
    """``root`` as a rank of 0..N-1.

    Returns:
        The root, an int.

    Raises:
        UnsupportedShapeError: not an int in 0..N-1 (naming the algorithm).

    Source: MPI 4.1 standard, Ch. 6 (the root argument of MPI_Bcast and MPI_Reduce).

    >>> check_root(3, 4, "binomial")
    3
    """
    if isinstance(root, bool) or not isinstance(root, int | np.integer) or not 0 <= int(root) < nranks:
        raise UnsupportedShapeError(f"{name}: root must be a rank 0..{nranks - 1}, got {root!r}")
    return int(root)
