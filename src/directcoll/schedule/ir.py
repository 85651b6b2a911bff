"""The schedule IR (docs/architecture.md, "Schedule IR"): one columnar representation for every collective and
algorithm.

Buffer coordinate: every rank sees one buffer of ``nblocks`` equal blocks, addressed by x in [0, nblocks).
A piece is a half-open interval [a, b) of that coordinate, stored exactly as integer numerators over the
schedule-wide ``denominator`` (block algorithms use denominator 1; LP schedules use the least common
denominator of their rational ends).

A transfer is (step, src rank, dst rank, op in {copy, reduce}, pieces, optional route). Semantics are
bulk-synchronous: all transfers of step t read their pieces as they stood at the end of step t-1; then the
step's copies overwrite their destinations, and then its reductions add into theirs (so a copy and a reduction
into one cell in one step leave copy + reduction; two copies into one cell are an error).

Scratch and relocation (our extension of the IR, needed by algorithms that keep several partial sums of
one block, such as Kolmakov & Zhang's intermediate and latency-optimal allreduce): a schedule may declare
``nscratch`` scratch blocks after its ``nblocks`` data blocks (coordinates [nblocks, nblocks + nscratch)), which
hold no data of the collective and are never checked; and a piece may land at a displaced coordinate on the
destination (``piece_shift``: [a, b) is read at the source and written at [a + shift, b + shift)). A transfer
whose src equals its dst is a local copy or reduction; all its pieces must be displaced.

Roots (broadcast and reduce): ``meta["root"]`` (default 0) is the rank that starts with the vector (broadcast:
MPI_Bcast copies the root's ``nblocks`` blocks to every rank) or ends with the reduction of every rank's vector
(reduce: MPI_Reduce, the result defined at the root only); :attr:`Schedule.root` reads it.

Ownership (reduce-scatter and allgather): ``owner[b]`` is the rank that ends with (reduce-scatter) or starts
with (allgather) block b. The default is MPI's: rank r owns blocks [r*k, (r+1)*k) with k = nblocks / N.
Algorithms that remap blocks logically (Swing Sec. 3.1.1) say so through ``owner``.

Source: docs/architecture.md, "Schedule IR"; docs/schedule.md.

>>> import numpy as np
>>> b = ScheduleBuilder("allgather", 4, 4)
>>> r = np.arange(4)
>>> for t in range(3):  # ring allgather: rank r forwards block r - t to r + 1
...     b.add(t, r, (r + 1) % 4, COPY, (r - t) % 4, (r - t) % 4 + 1)
>>> b.build(meta={"algorithm": "ring"})
Schedule(allgather, ring, N=4, nblocks=4, steps=3, transfers=12)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cached_property

import numpy as np

from directcoll.errors import ScheduleError


class Collective(StrEnum):
    """The collectives a schedule can implement (MPI semantics).

    Raises:
        Nothing: an enumeration; :meth:`parse` raises on unknown names.

    Source: docs/architecture.md, "Schedule IR" (collectives); MPI 4.1 standard, Ch. 6 (MPI_Allgather, MPI_Alltoall,
    MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Bcast and MPI_Reduce, the last two with a root rank).

    >>> Collective.ALLREDUCE.value
    'allreduce'
    """

    ALLGATHER = "allgather"
    REDUCE_SCATTER = "reduce_scatter"
    ALLREDUCE = "allreduce"
    ALLTOALL = "alltoall"
    BROADCAST = "broadcast"
    REDUCE = "reduce"

    @classmethod
    def parse(cls, name) -> Collective:
        """The collective called ``name`` (case-insensitive; ``-`` or ``_``; aliases ``rs``, ``ag``, ``a2a``, ...).

        Returns:
            A :class:`Collective` (``name`` itself when it already is one).

        Raises:
            ScheduleError: unknown name, listing the accepted ones.

        Source: docs/architecture.md, "Schedule IR".

        >>> Collective.parse("rs"), Collective.parse("All-to-All")
        (<Collective.REDUCE_SCATTER: 'reduce_scatter'>, <Collective.ALLTOALL: 'alltoall'>)
        """
        text = str(name).strip().lower().replace("-", "_")
        aliases = {"reducescatter": "reduce_scatter", "rs": "reduce_scatter", "ag": "allgather",
                   "all_to_all": "alltoall", "a2a": "alltoall", "bcast": "broadcast"}
        text = aliases.get(text, text)
        try:
            return cls(text)
        except ValueError:
            raise ScheduleError(f"unknown collective {name!r}; accepted: "
                                f"{', '.join(c.value for c in cls)}") from None

    @property
    def has_owner(self) -> bool:
        """Whether the collective has block owners (reduce-scatter and allgather). Raises: Nothing.
        Source: docs/architecture.md, "Schedule IR" (ownership).
        """
        return self in (Collective.ALLGATHER, Collective.REDUCE_SCATTER)

    @property
    def rooted(self) -> bool:
        """Whether the collective has a root rank (broadcast and reduce). Raises: Nothing.
        Source: docs/architecture.md, "Schedule IR" (the last two with a root rank).
        """
        return self in (Collective.BROADCAST, Collective.REDUCE)


COPY = np.uint8(0)
REDUCE = np.uint8(1)
OP_NAMES = ("copy", "reduce")


def alltoall_endpoints(nranks: int, nblocks: int, blocks) -> tuple[np.ndarray, np.ndarray]:
    """All-to-all: block ((i N + j) k + c) starts at rank i and must reach rank j, k = nblocks / N^2.

    Args:
        nranks: N; nblocks: N^2 k; blocks: block indices, any shape.

    Returns:
        (source rank i, destination rank j) of every block in ``blocks``: two int64 arrays of ``blocks``' shape.

    Raises:
        Nothing: arithmetic (the schedule checked N^2 | nblocks when it was built).

    Source: docs/architecture.md, "Schedule IR" (all-to-all block numbering); MPI 4.1 standard, Ch. 6 (MPI_Alltoall).

    >>> alltoall_endpoints(2, 8, [0, 2, 5, 7])
    (array([0, 0, 1, 1]), array([0, 1, 0, 1]))
    """
    k = nblocks // (nranks * nranks)
    blocks = np.asarray(blocks, dtype=np.int64)
    return blocks // (nranks * k), (blocks // k) % nranks


def default_owner(nranks: int, nblocks: int) -> np.ndarray:
    """MPI ownership: block b belongs to rank b // (nblocks / N). Requires N | nblocks.

    Returns:
        int64 (nblocks,), the owner rank of every block.

    Raises:
        ScheduleError: ``nblocks`` is not divisible by ``nranks``.

    Source: MPI 4.1 standard, Ch. 6 (MPI_Reduce_scatter_block: rank r gets the r-th block; MPI_Allgather);
    docs/architecture.md, "Schedule IR".

    >>> default_owner(2, 4)
    array([0, 0, 1, 1])
    """
    if nblocks % nranks:
        raise ScheduleError(f"default ownership needs nblocks ({nblocks}) divisible by N ({nranks})")
    return np.arange(nblocks, dtype=np.int64) // (nblocks // nranks)


@dataclass(frozen=True, eq=False)
class Schedule:
    """A collective schedule in columnar form.

    Attributes (T transfers, P pieces):
        collective: what the schedule implements.
        nranks: N.
        nblocks: number of equal blocks of the buffer.
        step, src, dst: int64 (T,), sorted by step.
        op: uint8 (T,), 0 = copy, 1 = reduce.
        piece_offsets: int64 (T+1,), transfer i owns pieces piece_offsets[i]:piece_offsets[i+1].
        piece_start, piece_stop: int64 (P,), numerators over ``denominator`` of the piece ends (in blocks).
        denominator: positive int.
        owner: int64 (nblocks,) for reduce-scatter / allgather, None for the other collectives.
        nscratch: scratch blocks after the data blocks (default 0).
        piece_shift: int64 (P,) or None: destination displacement of every piece (numerators), None = 0.
        route_offsets, route_links: optional explicit routes (CSR over link ids of the topology);
            transfer i follows route_links[route_offsets[i]:route_offsets[i+1]], empty = route it yourself.
        meta: algorithm name and parameters, topology spec, anything else JSON-serializable; broadcast and
            reduce keep their root rank in ``meta["root"]`` (default 0, :attr:`root`).

    Raises:
        ScheduleError: on construction, if any array is inconsistent (see :meth:`validate`) or the collective is
            unknown.

    Source: docs/architecture.md, "Schedule IR" (columnar storage, CSR pieces, bulk-synchronous semantics).

    >>> from directcoll.algorithms.ring import ring_allgather
    >>> s = ring_allgather(range(4))
    >>> s.step.shape, s.op.dtype.name, s.owner.tolist()
    ((12,), 'uint8', [0, 1, 2, 3])
    """

    collective: Collective
    nranks: int
    nblocks: int
    step: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    op: np.ndarray
    piece_offsets: np.ndarray
    piece_start: np.ndarray
    piece_stop: np.ndarray
    denominator: int = 1
    owner: np.ndarray | None = None
    nscratch: int = 0
    piece_shift: np.ndarray | None = None
    route_offsets: np.ndarray | None = None
    route_links: np.ndarray | None = None
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "collective", Collective.parse(self.collective))
        for name in ("step", "src", "dst", "piece_offsets", "piece_start", "piece_stop"):
            object.__setattr__(self, name, np.ascontiguousarray(getattr(self, name), dtype=np.int64))
        op = np.asarray(self.op)
        if op.size and (op.dtype.kind not in "iub" or op.min() < 0 or op.max() > 1):  # before narrowing to uint8
            raise ScheduleError("op must be 0 (copy) or 1 (reduce)")
        object.__setattr__(self, "op", np.ascontiguousarray(op, dtype=np.uint8))
        for name in ("route_offsets", "route_links", "piece_shift"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, np.ascontiguousarray(getattr(self, name), dtype=np.int64))
        if self.owner is None and self.collective.has_owner:
            object.__setattr__(self, "owner", default_owner(self.nranks, self.nblocks))
        if self.owner is not None:
            if not self.collective.has_owner:
                object.__setattr__(self, "owner", None)
            else:
                object.__setattr__(self, "owner", np.ascontiguousarray(self.owner, dtype=np.int64))
        self.validate()

    # -- checks ----------------------------------------------------------------------------------------
    def validate(self) -> None:
        """Check every structural invariant; raise ScheduleError naming the first violation.

        Checks: array lengths agree, steps sorted and >= 0, ranks in [0, N), pieces non-empty and inside
        [0, nblocks + nscratch) at source and destination, local transfers displaced, N^2 | nblocks for all-to-all,
        owner maps every block to a rank, routes CSR-consistent.

        Returns:
            None.

        Raises:
            ScheduleError: the first violated invariant, naming the transfer, its step and the offending value.

        Source: docs/architecture.md, "Schedule IR".

        >>> from directcoll.algorithms.ring import ring_allgather
        >>> ring_allgather(range(3)).validate()
        """
        t = len(self.step)
        if self.nranks < 1 or self.nblocks < 1 or self.denominator < 1:
            raise ScheduleError(f"need nranks, nblocks, denominator >= 1; got {self.nranks}, "
                                f"{self.nblocks}, {self.denominator}")
        for name in ("src", "dst", "op"):
            if len(getattr(self, name)) != t:
                raise ScheduleError(f"{name} has {len(getattr(self, name))} entries, step has {t}")
        po = self.piece_offsets
        if len(po) != t + 1 or po[0] != 0 or (t and np.any(np.diff(po) < 0)):
            raise ScheduleError("piece_offsets must have T+1 non-decreasing entries starting at 0")
        if po[-1] != len(self.piece_start) or len(self.piece_stop) != len(self.piece_start):
            raise ScheduleError("piece_offsets[-1] must equal the number of pieces in piece_start/piece_stop")
        if self.piece_shift is not None and len(self.piece_shift) != len(self.piece_start):
            raise ScheduleError("piece_shift must have one entry per piece")
        if t:
            if self.step.min() < 0 or np.any(np.diff(self.step) < 0):
                raise ScheduleError("steps must be >= 0 and transfers sorted by step")
            for name in ("src", "dst"):
                a = getattr(self, name)
                if a.min() < 0 or a.max() >= self.nranks:
                    bad = int(np.flatnonzero((a < 0) | (a >= self.nranks))[0])
                    raise ScheduleError(f"transfer {bad} (step {self.step[bad]}): {name} rank {a[bad]} "
                                        f"outside 0..{self.nranks - 1}")
            local = self.src == self.dst
            if local.any():
                counts = np.diff(po)
                displaced = np.bincount(self.piece_transfer, weights=self.shift != 0, minlength=t)
                bad_local = local & ((counts == 0) | (displaced < counts))
                if bad_local.any():
                    bad = int(np.flatnonzero(bad_local)[0])
                    raise ScheduleError(f"transfer {bad} (step {self.step[bad]}) sends rank {self.src[bad]} to "
                                        "itself without displacing its pieces (a local copy needs piece_shift)")
            if self.op.max() > 1:
                raise ScheduleError("op must be 0 (copy) or 1 (reduce)")
        if self.collective is Collective.ALLTOALL and self.nblocks % (self.nranks * self.nranks):
            raise ScheduleError(f"an all-to-all needs nblocks divisible by N^2 = {self.nranks ** 2} (block "
                                f"((i N + j) k + c) goes from rank i to rank j); got nblocks = {self.nblocks}")
        if self.collective.rooted:
            root = self.meta.get("root", 0)
            if isinstance(root, bool) or not isinstance(root, int | np.integer) or not 0 <= root < self.nranks:
                raise ScheduleError(f"the root of a {self.collective.value} (meta['root']) must be a rank "
                                    f"0..{self.nranks - 1}; got {root!r}")
        if self.nscratch < 0:
            raise ScheduleError(f"nscratch must be >= 0, got {self.nscratch}")
        hi = (self.nblocks + self.nscratch) * self.denominator
        if len(self.piece_start):
            shift = 0 if self.piece_shift is None else self.piece_shift
            bad = (self.piece_start < 0) | (self.piece_stop > hi) | (self.piece_stop <= self.piece_start)
            bad |= (self.piece_start + shift < 0) | (self.piece_stop + shift > hi)
            if bad.any():
                p = int(np.flatnonzero(bad)[0])
                i = int(np.searchsorted(po, p, side="right") - 1)
                raise ScheduleError(f"transfer {i} (step {self.step[i]}): piece "
                                    f"[{self.piece_start[p]}/{self.denominator}, "
                                    f"{self.piece_stop[p]}/{self.denominator}) is empty, or it or its "
                                    f"destination lies outside [0, {self.nblocks + self.nscratch})")
        if self.owner is not None:
            if len(self.owner) != self.nblocks or (self.nblocks and (
                    self.owner.min() < 0 or self.owner.max() >= self.nranks)):
                raise ScheduleError(f"owner must map each of the {self.nblocks} blocks to a rank "
                                    f"0..{self.nranks - 1}")
        if (self.route_offsets is None) != (self.route_links is None):
            raise ScheduleError("route_offsets and route_links come together")
        if self.route_offsets is not None:
            ro = self.route_offsets
            if len(ro) != t + 1 or ro[0] != 0 or np.any(np.diff(ro) < 0) or ro[-1] != len(self.route_links):
                raise ScheduleError("route_offsets must have T+1 non-decreasing entries from 0 to the number "
                                    "of route_links")

    # -- derived ---------------------------------------------------------------------------------------
    @property
    def num_transfers(self) -> int:
        """T, the number of transfers. Raises: Nothing. Source: docs/architecture.md, "Schedule IR"."""
        return len(self.step)

    @property
    def num_pieces(self) -> int:
        """P, the number of pieces over all transfers. Raises: Nothing. Source: docs/architecture.md, "Schedule IR"."""
        return len(self.piece_start)

    @property
    def num_steps(self) -> int:
        """Number of steps (one more than the largest step index; 0 for an empty schedule).

        Raises:
            Nothing: reads the sorted step array.

        Source: docs/architecture.md, "Schedule IR" (bulk-synchronous steps).
        """
        return int(self.step[-1]) + 1 if len(self.step) else 0

    @cached_property
    def step_bounds(self) -> np.ndarray:
        """Transfers of step t are ``step_bounds[t]:step_bounds[t+1]``; int64 (num_steps+1,).

        Raises:
            Nothing: the steps were validated sorted.

        Source: docs/architecture.md, "Schedule IR" (transfers sorted by step).
        """
        return np.searchsorted(self.step, np.arange(self.num_steps + 1))

    @cached_property
    def piece_transfer(self) -> np.ndarray:
        """For every piece, the index of its transfer; int64 (P,).

        Raises:
            Nothing: the CSR offsets were validated.

        Source: docs/architecture.md, "Schedule IR" (CSR pieces).
        """
        return np.repeat(np.arange(self.num_transfers), np.diff(self.piece_offsets))

    @cached_property
    def shift(self) -> np.ndarray:
        """Destination displacement of every piece (zeros when the schedule has none); int64 (P,), in numerators.

        Raises:
            Nothing: reads the validated ``piece_shift``.

        Source: the IR's scratch-and-relocation extension (module docstring; docs/schedule.md).
        """
        return np.zeros(self.num_pieces, np.int64) if self.piece_shift is None else self.piece_shift

    @property
    def is_local(self) -> np.ndarray:
        """Which transfers are local copies or reductions (src == dst); bool (T,).

        Raises:
            Nothing: compares two arrays.

        Source: the IR's scratch-and-relocation extension (module docstring; docs/schedule.md).
        """
        return self.src == self.dst

    @property
    def vector_blocks(self) -> int:
        """Blocks in the vector whose size a user gives: the whole buffer, except for all-to-all, where it is one
        rank's send buffer (N k of the N^2 k blocks, MPI_Alltoall's sendcount x N).

        Returns:
            An int (blocks).

        Raises:
            Nothing: arithmetic.

        Source: MPI 4.1 standard, Ch. 6 (MPI_Alltoall); docs/architecture.md, "Schedule IR".
        """
        return self.nblocks // self.nranks if self.collective is Collective.ALLTOALL else self.nblocks

    @cached_property
    def transfer_size(self) -> np.ndarray:
        """Size of every transfer as a fraction of the vector (:attr:`vector_blocks`); float64 (T,).

        A message carries each source byte once: pieces of one transfer that read the same source interval
        (to place it in several destination cells) count once. Multiply by the vector size in bytes for bytes.

        Raises:
            Nothing: the pieces were validated.

        Source: docs/architecture.md, "Schedule IR" and "Cost and simulation" (bytes per transfer).

        >>> from directcoll.algorithms.ring import ring_allgather
        >>> ring_allgather(range(4)).transfer_size[:2].tolist()
        [0.25, 0.25]
        """
        start, stop, owner = self.piece_start, self.piece_stop, self.piece_transfer
        if self.piece_shift is not None and len(start):
            order = np.lexsort((start, owner))
            big = int(stop.max()) + 1
            key_start, key_stop = owner[order] * big + start[order], owner[order] * big + stop[order]
            reach = np.maximum.accumulate(key_stop)  # furthest source end so far (transfers ascend)
            prev = np.r_[np.iinfo(np.int64).min, reach[:-1]]
            lengths = np.clip(key_stop - np.maximum(key_start, prev), 0, None).astype(float)
            owner = owner[order]
        else:
            lengths = (stop - start).astype(float)
        sizes = np.bincount(owner, weights=lengths, minlength=self.num_transfers)
        return sizes / (self.vector_blocks * self.denominator)

    @property
    def root(self) -> int:
        """The root rank of a broadcast or reduce (``meta["root"]``, default 0); 0 for the other collectives.

        Raises:
            Nothing: the root was validated when the schedule was built.

        Source: MPI 4.1 standard, Ch. 6 (MPI_Bcast, MPI_Reduce: the root argument); docs/architecture.md, "Schedule IR".

        >>> b = ScheduleBuilder("broadcast", 2, 1)
        >>> b.add(0, 1, 0, COPY, 0, 1)
        >>> b.build(meta={"root": 1}).root
        1
        """
        return int(self.meta.get("root", 0)) if self.collective.rooted else 0

    @property
    def algorithm(self) -> str:
        """``meta["algorithm"]`` as a str, or ``"unknown"``. Raises: Nothing.
        Source: docs/architecture.md, "Schedule IR" (metadata).
        """
        return str(self.meta.get("algorithm", "unknown"))

    def with_meta(self, **meta) -> Schedule:
        """A copy of the schedule with ``meta`` updated by the keyword arguments (arrays shared, not copied).

        Raises:
            Nothing: the arrays were validated when this schedule was built (they are validated again, and pass).

        Source: docs/architecture.md, "Schedule IR" (every schedule carries its metadata).

        >>> from directcoll.algorithms.ring import ring_allgather
        >>> ring_allgather(range(3)).with_meta(topology="ring:3").meta["topology"]
        'ring:3'
        """
        return replace(self, meta={**self.meta, **meta})

    def __repr__(self) -> str:
        return (f"Schedule({self.collective.value}, {self.algorithm}, N={self.nranks}, "
                f"nblocks={self.nblocks}, steps={self.num_steps}, transfers={self.num_transfers})")


def reorder_csr(offsets: np.ndarray, order: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Reorder the rows of a CSR structure: returns (new offsets, indices of the entries in new order).

    Args:
        offsets: int (R+1,), row i owns entries offsets[i]:offsets[i+1].
        order: int (R,), the rows in their new order.

    Returns:
        (new offsets int64 (R+1,), entry indices int64 (E,)) with E = offsets[-1] of the kept rows.

    Raises:
        Nothing: pure indexing (``order`` must index ``offsets``' rows; numpy raises IndexError otherwise).

    Source: docs/architecture.md, "Schedule IR" (pieces stored CSR-style).

    >>> import numpy as np
    >>> reorder_csr(np.array([0, 2, 3, 5]), np.array([2, 0, 1]))
    (array([0, 2, 4, 5]), array([3, 4, 0, 1, 2]))
    """
    counts = np.diff(offsets)[order]
    new_offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    idx = np.repeat(offsets[:-1][order] - new_offsets[:-1], counts) + np.arange(new_offsets[-1])
    return new_offsets, idx


class ScheduleBuilder:
    """Collects transfers as numpy arrays, one batch at a time, and builds a sorted :class:`Schedule`.

    ``add`` takes one piece per transfer (the common case: contiguous sends); ``add_pieces`` takes CSR
    pieces. Batches may come in any step order; ``build`` sorts them stably by step. ``what`` names the schedule
    in the :class:`~directcoll.errors.ResourceError` raised by ``add`` / ``add_pieces`` when the arrays would
    outgrow the memory budget (:func:`directcoll.resources.check_memory`).

    Raises:
        ScheduleError: on construction, an unknown collective.

    Source: docs/architecture.md, "Schedule IR" (columnar storage) and "Engines, runtimes and scale" (resources).

    >>> b = ScheduleBuilder("reduce_scatter", 2, 2)
    >>> b.add(0, [0, 1], [1, 0], REDUCE, [1, 0], [2, 1])
    >>> b.build()
    Schedule(reduce_scatter, unknown, N=2, nblocks=2, steps=1, transfers=2)
    """

    def __init__(self, collective, nranks: int, nblocks: int, *, denominator: int = 1, what: str | None = None) -> None:
        self.collective = Collective.parse(collective)
        self.nranks, self.nblocks, self.denominator = int(nranks), int(nblocks), int(denominator)
        self._cols: list[tuple[np.ndarray, ...]] = []
        self._bytes, self._next_check = 0, 16 * 2**20
        self.what = what or f"a {self.collective.value} schedule on {self.nranks:,} ranks"

    def _grow(self, cols: tuple[np.ndarray, ...]) -> None:
        """Append a batch, refusing it when the schedule would outgrow the memory budget: ``build`` holds the
        batches, their concatenation and the sorted copy at once (3x)."""
        from directcoll.resources import check_memory

        self._bytes += sum(c.nbytes for c in cols)
        if self._bytes >= self._next_check:  # reading the budget costs a /proc read: check every 25 % of growth
            check_memory(f"{self.what} (being built: {self._bytes:,} bytes so far)", 3.0 * self._bytes)
            self._next_check = 1.25 * self._bytes
        self._cols.append(cols)

    def add(self, step, src, dst, op, start, stop, shift=0) -> None:
        """Add transfers with one piece [start, stop) each (numerators over ``denominator``), landing at
        [start + shift, stop + shift) on the destination; all arguments broadcast to one length T.

        Raises:
            ResourceError: the schedule being built would outgrow the memory budget.
            DirectcollError: ``DIRECTCOLL_MEMORY_BUDGET`` is not a size (read when the budget is checked).

        Source: docs/architecture.md, "Schedule IR".
        """
        step, src, dst, op, start, stop, shift = (np.ravel(a) for a in np.broadcast_arrays(
            np.asarray(step, np.int64), np.asarray(src, np.int64), np.asarray(dst, np.int64),
            np.asarray(op, np.int64), np.asarray(start, np.int64), np.asarray(stop, np.int64),
            np.asarray(shift, np.int64)))
        self._grow((step, src, dst, op, np.ones(len(step), np.int64), start, stop, shift))

    def add_pieces(self, step, src, dst, op, counts, start, stop, shift=None) -> None:
        """Add transfers whose pieces are CSR: transfer i has ``counts[i]`` consecutive pieces (with optional
        per-piece destination displacements ``shift``).

        Raises:
            ScheduleError: ``counts`` does not sum to the number of pieces, or ``start`` and ``stop`` differ in length.
            ResourceError: the schedule being built would outgrow the memory budget.

        Source: docs/architecture.md, "Schedule IR" (CSR pieces).

        >>> b = ScheduleBuilder("allgather", 2, 2)
        >>> b.add_pieces(0, [0, 1], [1, 0], COPY, [1, 1], [0, 1], [1, 2])
        >>> b.build().num_pieces
        2
        """
        step, src, dst, op, counts = (np.ravel(a) for a in np.broadcast_arrays(
            np.asarray(step, np.int64), np.asarray(src, np.int64), np.asarray(dst, np.int64),
            np.asarray(op, np.int64), np.asarray(counts, np.int64)))
        start, stop = np.asarray(start, np.int64).ravel(), np.asarray(stop, np.int64).ravel()
        shift = np.zeros(len(start), np.int64) if shift is None else np.broadcast_to(
            np.asarray(shift, np.int64), start.shape).ravel()
        if counts.sum() != len(start) or len(start) != len(stop):
            raise ScheduleError("add_pieces: counts must sum to the number of pieces")
        self._grow((step, src, dst, op, counts, start, stop, shift))

    def build(self, *, owner=None, meta: dict | None = None, nscratch: int = 0) -> Schedule:
        """The :class:`Schedule` of every batch added, sorted stably by step.

        Args:
            owner: int (nblocks,) block owners for reduce-scatter / allgather (None: MPI's default).
            meta: the schedule's metadata.
            nscratch: scratch blocks after the data blocks.

        Returns:
            A validated :class:`Schedule`.

        Raises:
            ScheduleError: the transfers are inconsistent (ranks or pieces out of range, a local transfer without
                displacement, N not dividing nblocks for the default owner, ...), see :meth:`Schedule.validate`.

        Source: docs/architecture.md, "Schedule IR".
        """
        if self._cols:
            step, src, dst, op, counts, start, stop, shift = (np.concatenate(c) for c in zip(*self._cols, strict=True))
        else:
            step = src = dst = op = counts = start = stop = shift = np.zeros(0, np.int64)
        order = np.argsort(step, kind="stable")
        offsets, idx = reorder_csr(np.concatenate([[0], np.cumsum(counts)]), order)
        shift = shift[idx] if shift.any() else None
        return Schedule(self.collective, self.nranks, self.nblocks, step[order], src[order], dst[order],
                        op[order], offsets, start[idx], stop[idx], self.denominator, owner=owner,
                        nscratch=nscratch, piece_shift=shift, meta=meta or {})
