"""Step patterns: what a schedule looks like to a network, without its data.

Timing a step needs only who sends how much to whom (and whether the receiver reduces); which blocks move is
irrelevant. Many schedules repeat the same step pattern: a ring allreduce on p ranks has 2(p-1) steps but
only two distinct patterns, and on a 128x128 torus it has 2 billion transfers. A :class:`StepPattern` keeps
each distinct step once with its multiplicity and the order of steps, so the simulator can time any
schedule — and algorithms whose full schedule would be too large read their pattern from the description
their schedule is built from, without the schedule (:mod:`directcoll.schedule.phases`; ``Algorithm.pattern`` in
the registry).

Source: docs/architecture.md, "Cost and simulation" (the load pattern of a step does not depend on the vector size:
route once, sweep sizes in closed form).

>>> from directcoll.algorithms.ring import build_ring
>>> from directcoll.topology import parse
>>> p = pattern_of(build_ring(parse("ring:5")))
>>> p.num_steps, p.num_distinct, p.multiplicity.tolist()
(8, 2, [4, 4])
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace

import numpy as np

from directcoll.errors import ScheduleError
from directcoll.schedule.ir import REDUCE, Schedule

#: Bytes per transfer of a :class:`StepPattern`: src and dst int64, size float64, reduce bool.
BYTES_PER_TRANSFER = 25


@dataclass(frozen=True, eq=False)
class StepPattern:
    """Distinct steps of a schedule, as columns over their transfers.

    Attributes (K distinct steps, T transfers over them):
        nranks: N.
        collective: the collective's name.
        step_offsets: int64 (K+1,): distinct step k holds transfers step_offsets[k]:step_offsets[k+1].
        src, dst: int64 (T,).
        size: float64 (T,), fraction of the vector each transfer carries.
        reduce: bool (T,), whether the receiver reduces what it gets.
        sequence: int64 (S,), the distinct step run at every step of the schedule (S steps in all).
        route_offsets, route_links: optional explicit routes per transfer (CSR over link ids).
        meta: the schedule's metadata.

    Raises:
        ScheduleError: on construction, offsets that do not cover the transfers, a sequence naming a missing
            step, or columns of different lengths.

    Source: docs/architecture.md, "Cost and simulation" and "Schedule IR" (columnar storage).

    >>> import numpy as np
    >>> r = np.arange(4)
    >>> from_steps(4, "allgather", [(r, (r + 1) % 4, 0.25, False)], [0, 0, 0]).num_distinct
    1
    """

    nranks: int
    collective: str
    step_offsets: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    size: np.ndarray
    reduce: np.ndarray
    sequence: np.ndarray
    route_offsets: np.ndarray | None = None
    route_links: np.ndarray | None = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        k = len(self.step_offsets) - 1
        if k < 0 or self.step_offsets[0] != 0 or self.step_offsets[-1] != len(self.src):
            raise ScheduleError("StepPattern: step_offsets must run from 0 to the number of transfers")
        if len(self.sequence) and (self.sequence.min() < 0 or self.sequence.max() >= k):
            raise ScheduleError("StepPattern: sequence names a distinct step that does not exist")
        if any(len(a) != len(self.src) for a in (self.dst, self.size, self.reduce)):
            raise ScheduleError("StepPattern: src, dst, size and reduce must have the same length")

    @property
    def num_distinct(self) -> int:
        """K, the number of distinct steps. Raises: Nothing. Source: docs/architecture.md, "Cost and simulation"."""
        return len(self.step_offsets) - 1

    @property
    def num_steps(self) -> int:
        """S, the number of steps of the schedule (length of ``sequence``). Raises: Nothing.
        Source: docs/architecture.md, "Cost and simulation".
        """
        return len(self.sequence)

    @property
    def multiplicity(self) -> np.ndarray:
        """How many steps of the schedule run each distinct step, int64 (K,).

        Raises:
            Nothing: ``sequence`` was validated on construction.

        Source: docs/architecture.md, "Cost and simulation".
        """
        return np.bincount(self.sequence, minlength=self.num_distinct)

    @property
    def algorithm(self) -> str:
        """``meta["algorithm"]`` as a str, or ``"unknown"``. Raises: Nothing.
        Source: docs/architecture.md, "Schedule IR" (metadata).
        """
        return str(self.meta.get("algorithm", "unknown"))

    def step(self, k: int) -> slice:
        """The slice of the transfer columns that distinct step ``k`` holds.

        Returns:
            ``slice(step_offsets[k], step_offsets[k+1])``.

        Raises:
            Nothing of ours: an out-of-range ``k`` raises numpy's IndexError.

        Source: docs/architecture.md, "Schedule IR" (CSR layout).

        >>> import numpy as np
        >>> r = np.arange(4)
        >>> from_steps(4, "allgather", [(r, (r + 1) % 4, 0.25, False)], [0, 0, 0]).step(0)
        slice(0, 4, None)
        """
        return slice(int(self.step_offsets[k]), int(self.step_offsets[k + 1]))

    def equivalent(self, other: StepPattern) -> bool:
        """Same steps in the same order, up to the order of transfers within a step.

        Returns:
            A bool; sizes are compared rounded to 15 decimals (fractions of the vector).

        Raises:
            Nothing: compares digests of canonical columns.

        Source: docs/architecture.md, "Cost and simulation"; the registry tests use it to check ``Algorithm.pattern``
        against :func:`pattern_of`.

        >>> from directcoll.algorithms.ring import build_ring, ring_pattern
        >>> from directcoll.topology import parse
        >>> t = parse("ring:5")
        >>> pattern_of(build_ring(t)).equivalent(ring_pattern(t))
        True
        """
        if self.num_steps != other.num_steps or self.nranks != other.nranks:
            return False
        mine = [_step_key(self, k) for k in self.sequence]
        theirs = [_step_key(other, k) for k in other.sequence]
        return mine == theirs

    def reordered(self, seed: int) -> StepPattern:
        """The same pattern with each distinct step's transfers listed in another order (a seeded shuffle), each
        transfer keeping its explicit route: the same problem for a network. A model's time must not change; an
        engine that serves transfers ready at once in list order (a NIC's round robin) may move, and how far
        measures what its verdict between near-equal schedules rests on (docs/fidelity.md, "Ties").

        Args:
            seed: the shuffle's seed (numpy's ``default_rng``).

        Returns:
            A :class:`StepPattern` :meth:`equivalent` to this one.

        Raises:
            Nothing.

        Source: docs/fidelity.md, "Ties" (the packet engine's spread over the orders of the transfers).

        >>> from directcoll.algorithms.ring import build_ring
        >>> from directcoll.topology import parse
        >>> p = pattern_of(build_ring(parse("ring:5")))
        >>> q = p.reordered(1)
        >>> q.equivalent(p), q.src.tolist() == p.src.tolist()
        (True, False)
        """
        rng = np.random.default_rng(seed)
        bounds = self.step_offsets
        perm = np.concatenate([a + rng.permutation(b - a) for a, b in zip(bounds[:-1], bounds[1:], strict=True)])
        moved = {"src": self.src[perm], "dst": self.dst[perm], "size": self.size[perm], "reduce": self.reduce[perm]}
        if self.route_offsets is not None:
            counts = np.diff(self.route_offsets)[perm]
            starts = np.repeat(self.route_offsets[:-1][perm], counts)
            within = np.arange(counts.sum()) - np.repeat(np.r_[0, np.cumsum(counts)[:-1]], counts)
            moved.update(route_offsets=np.r_[0, np.cumsum(counts)], route_links=self.route_links[starts + within])
        return replace(self, **moved)


def _canonical(src, dst, size, reduce) -> tuple[np.ndarray, ...]:
    size = np.round(np.asarray(size, dtype=float), 15)
    order = np.lexsort((reduce, size, dst, src))
    return src[order], dst[order], size[order], reduce[order]


def _digest(*arrays) -> str:
    h = hashlib.blake2b(digest_size=16)
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def _step_key(p: StepPattern, k: int) -> str:
    sl = p.step(int(k))
    return _digest(*_canonical(p.src[sl], p.dst[sl], p.size[sl], p.reduce[sl]))


def pattern_of(schedule: Schedule) -> StepPattern:
    """The step pattern of a schedule: identical steps (same transfers up to order and block identity)
    are stored once.

    Explicit routes, when the schedule has them, make every step distinct (kept as they are).

    Returns:
        A :class:`StepPattern` with ``num_steps == schedule.num_steps``; sizes are fractions of the vector.

    Raises:
        Nothing: the schedule was validated when built.

    Source: docs/architecture.md, "Cost and simulation".

    >>> from directcoll.algorithms.ring import ring_reduce_scatter
    >>> pattern_of(ring_reduce_scatter(range(4))).multiplicity.tolist()
    [3]
    """
    s = schedule
    size = s.transfer_size
    reduce = s.op == REDUCE
    bounds = s.step_bounds
    keys: dict[str, int] = {}
    sequence = np.zeros(s.num_steps, dtype=np.int64)
    cols: list[tuple[np.ndarray, ...]] = []
    routed = s.route_offsets is not None
    for t in range(s.num_steps):
        a, b = bounds[t], bounds[t + 1]
        canon = _canonical(s.src[a:b], s.dst[a:b], size[a:b], reduce[a:b])
        key = _digest(*canon) if not routed else f"step{t}"
        if key not in keys:
            keys[key] = len(cols)
            cols.append(canon if not routed else (s.src[a:b], s.dst[a:b], size[a:b], reduce[a:b]))
        sequence[t] = keys[key]
    offsets = np.concatenate([[0], np.cumsum([len(c[0]) for c in cols])]).astype(np.int64)
    src, dst, sz, red = (np.concatenate([c[i] for c in cols]) if cols else np.zeros(0) for i in range(4))
    return StepPattern(s.nranks, s.collective.value, offsets, src.astype(np.int64), dst.astype(np.int64),
                       sz.astype(float), red.astype(bool), sequence,
                       s.route_offsets if routed else None, s.route_links if routed else None, dict(s.meta))


def from_steps(nranks: int, collective: str, steps: list[tuple], sequence, meta: dict | None = None) -> StepPattern:
    """Build a pattern from distinct steps given as (src, dst, size, reduce) arrays and the step sequence.

    Args:
        nranks: N; collective: its name.
        steps: K tuples (src int (T_k,), dst int (T_k,), size float (T_k,) or scalar fraction of the vector,
            reduce bool (T_k,) or scalar).
        sequence: int (S,), the distinct step run at every step.
        meta: the pattern's metadata.

    Returns:
        A :class:`StepPattern`.

    Raises:
        ScheduleError: a sequence naming a step that does not exist, or columns of different lengths.

    Source: docs/architecture.md, "Cost and simulation".

    >>> import numpy as np
    >>> r = np.arange(4)
    >>> from_steps(4, "allgather", [(r, (r + 1) % 4, 0.25, False)], [0, 0, 0]).num_steps
    3
    """
    offsets = np.concatenate([[0], np.cumsum([len(np.atleast_1d(st[0])) for st in steps])]).astype(np.int64)
    cols = [np.concatenate([np.broadcast_to(np.asarray(st[i]), np.shape(np.atleast_1d(st[0]))) for st in steps])
            for i in range(4)]
    return StepPattern(nranks, collective, offsets, cols[0].astype(np.int64), cols[1].astype(np.int64),
                       cols[2].astype(float), cols[3].astype(bool), np.asarray(sequence, dtype=np.int64),
                       meta=meta or {})
