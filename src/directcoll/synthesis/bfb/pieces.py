"""BFB's loads cut into pieces: from the LP loads of a node's in-links to the pieces of the shards it receives
(:mod:`directcoll.synthesis.bfb.plan` says which links feed which sources, :mod:`directcoll.synthesis.bfb.lp` how much).

Every feeding link holds all of a source's shard, so only amounts matter (Zhao et al. Sec. 6.1): the c_p shards
of a pattern are laid end to end and cut at the cumulative loads of its links, so each source gets consecutive
pieces summing to one whole shard and each link exactly its load.

Source: Zhao et al. (NSDI'25) Sec. 6.1 (LP (1): only the amount each link carries matters); the module docstring
of :mod:`directcoll.synthesis.bfb.schedule` ("From loads to pieces").

>>> import numpy as np
>>> merge_adjacent(np.array([0, 0, 1]), np.array([0, 2, 2]), np.array([2, 3, 4]))[2].tolist()
[3, 4]
"""

from __future__ import annotations

import numpy as np


def node_pieces(plan, loads: list[np.ndarray], den: int):
    """Pieces node u receives: (step, link index, source, lo, hi) with lo/hi numerators within the shard,
    sorted by (step, link, source), adjacent pieces of one transfer merged.

    Args:
        plan: node u's :class:`~directcoll.synthesis.bfb.plan.NodePlan` (its in-links, sources by group, and per group
            the step, LP id and LP row).
        loads: per LP, the (P, K) exact loads (Fractions, shards) of its pattern rows on u's K in-links.
        den: the schedule's common denominator (every load times ``den`` is an integer).

    Returns:
        (step (1-based), in-link index, start, stop) int64 arrays, one row per piece; start and stop are
        numerators over ``den`` in the N-block buffer (source v's shard is [v den, (v + 1) den)).

    Raises:
        Nothing of ours: the loads come from the LPs that made ``plan``.

    Source: Zhao et al. (NSDI'25) Sec. 6.1; :mod:`directcoll.synthesis.bfb.schedule`, "From loads to pieces".
    """
    k = len(plan.in_links)
    z = np.stack([loads[lp][row] for lp, row in zip(plan.group_lp, plan.group_row, strict=True)])  # (G, K)
    z = (z * den).astype(np.int64)
    base = np.r_[0, np.cumsum(plan.group_size)[:-1]] * den
    ends = base[:, None] + np.cumsum(z, axis=1)
    starts = ends - z
    used = z > 0
    link_start = starts[used]  # increasing: groups are consecutive and links cut each group in order
    link_of = np.broadcast_to(np.arange(k), z.shape)[used]
    cuts = np.union1d(np.arange(len(plan.sources)) * den, link_start)
    lo = cuts
    hi = np.r_[cuts[1:], len(plan.sources) * den]
    src_index = lo // den
    lk = link_of[np.searchsorted(link_start, lo, side="right") - 1]
    step = np.repeat(plan.group_step, plan.group_size)[src_index]
    v = plan.sources[src_index]
    lo, hi = lo - src_index * den, hi - src_index * den
    order = np.lexsort((v, lk, step))
    return step[order], lk[order], v[order] * den + lo[order], v[order] * den + hi[order]


def merge_adjacent(transfer: np.ndarray, start: np.ndarray, stop: np.ndarray):
    """Join consecutive pieces of one transfer that touch ([a, b) + [b, c) = [a, c)).

    Args:
        transfer, start, stop: int64 (P,) each, pieces sorted by transfer then start.

    Returns:
        The kept pieces' transfer ids, starts and stops (int64 arrays of equal length <= P).

    Raises:
        Nothing: numpy on the arrays given.

    Source: Zhao et al. (NSDI'25) Sec. 6.1 (a link carries one message per step); docs/architecture.md, "Schedule IR".

    >>> merge_adjacent(np.array([0, 0]), np.array([0, 1]), np.array([1, 3]))[1:]
    (array([0]), array([3]))
    """
    if not len(start):
        return transfer, start, stop
    keep = np.flatnonzero(np.r_[True, (transfer[1:] != transfer[:-1]) | (start[1:] != stop[:-1])])
    return transfer[keep], start[keep], np.maximum.reduceat(stop, keep)
