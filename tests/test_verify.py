"""Exact verification (docs/verification.md): good schedules pass, broken ones fail with the first fault named."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from directcoll import registry
from directcoll.errors import ScheduleError
from directcoll.schedule import COPY, REDUCE, Schedule, concat, reverse
from directcoll.verify import exact, verify


def rebuild(s: Schedule, order, *, op=None, owner=None, extra=()) -> Schedule:
    """A schedule made of the transfers ``order`` of ``s`` (indices may repeat or be missing), with their pieces;
    ``extra`` inserts new one-piece transfers ``(position, step, src, dst, op, start, stop)`` before ``position``
    of the new order. Piece CSR offsets are rebuilt from scratch."""
    rows = []
    for i in order:
        p = slice(s.piece_offsets[i], s.piece_offsets[i + 1])
        rows.append((int(s.step[i]), int(s.src[i]), int(s.dst[i]), int(s.op[i]),
                     list(zip(s.piece_start[p].tolist(), s.piece_stop[p].tolist(), strict=True))))
    for position, step, src, dst, kind, start, stop in sorted(extra, reverse=True):
        rows.insert(position, (step, src, dst, kind, [(start, stop)]))
    if op is not None:
        rows = [(t, a, b, o, p) for (t, a, b, _, p), o in zip(rows, op, strict=True)]
    counts = [len(r[4]) for r in rows]
    pieces = [piece for r in rows for piece in r[4]]
    return Schedule(s.collective, s.nranks, s.nblocks, step=[r[0] for r in rows], src=[r[1] for r in rows],
                    dst=[r[2] for r in rows], op=[r[3] for r in rows], piece_offsets=np.r_[0, np.cumsum(counts)],
                    piece_start=[a for a, _ in pieces], piece_stop=[b for _, b in pieces],
                    denominator=s.denominator, owner=s.owner if owner is None else owner, meta=s.meta)


def pieces_of(s: Schedule, i: int) -> list[tuple[Fraction, Fraction]]:
    p = slice(s.piece_offsets[i], s.piece_offsets[i + 1])
    return [(Fraction(int(a), s.denominator), Fraction(int(b), s.denominator))
            for a, b in zip(s.piece_start[p], s.piece_stop[p], strict=True)]


def inside(interval: tuple[str, str], pieces) -> bool:
    lo, hi = (Fraction(x) for x in interval)
    return any(a <= lo and hi <= b for a, b in pieces)


def everything_but(s: Schedule, i: int) -> np.ndarray:
    return np.delete(np.arange(s.num_transfers), i)


@pytest.fixture(scope="module")
def swing_allreduce() -> Schedule:
    return registry.build("swing", "torus:4x4", "allreduce")


@pytest.fixture(scope="module")
def swing_allgather() -> Schedule:
    return registry.build("swing", "torus:4x4", "allgather")


# -- correct schedules pass ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "collective"), [
    ("swing", "allreduce"), ("swing", "reduce_scatter"), ("swing", "allgather"),
    ("recursive-doubling", "allreduce"), ("rabenseifner", "allreduce"), ("rabenseifner", "reduce_scatter"),
    ("mirrored-recursive-doubling", "allreduce"), ("ring", "allreduce"), ("bucket", "allgather"),
])
@pytest.mark.parametrize("spec", ["torus:4x4", "torus:3x5", "torus:2x2x2"])
def test_correct_schedules_pass(name, collective, spec):
    if name in ("recursive-doubling", "rabenseifner", "mirrored-recursive-doubling") and spec == "torus:3x5":
        spec = "torus:2x8"  # recursive doubling wants a power-of-two size
    s = registry.build(name, spec, collective)
    result = verify(s)
    assert result.ok, result.summary()
    assert result.failure is None
    assert (result.collective, result.algorithm, result.ranks, result.steps, result.transfers) == (
        collective, name, s.nranks, s.num_steps, s.num_transfers)
    assert result.summary().startswith("OK: ")


def test_result_does_not_depend_on_the_seed(swing_allreduce):
    assert all(verify(swing_allreduce, seed=seed).ok for seed in range(3))
    broken = rebuild(swing_allreduce, everything_but(swing_allreduce, 7))
    assert not any(verify(broken, seed=seed).ok for seed in range(3))


def test_small_chunks_give_the_same_answer(swing_allreduce):
    assert verify(swing_allreduce, chunk_elements=3).ok
    broken = rebuild(swing_allreduce, everything_but(swing_allreduce, 7))
    assert verify(broken, chunk_elements=3).failure == verify(broken).failure


def test_reduces_from_several_ranks_into_one_segment_in_one_step_are_allowed():
    # step 0: ranks 1 and 2 both add into rank 0; step 1: rank 0 sends the sum back
    s = Schedule("allreduce", 3, 1, step=[0, 0, 1, 1], src=[1, 2, 0, 0], dst=[0, 0, 1, 2],
                 op=[REDUCE, REDUCE, COPY, COPY], piece_offsets=[0, 1, 2, 3, 4], piece_start=[0] * 4,
                 piece_stop=[1] * 4)
    assert verify(s).ok


# -- broken schedules fail, naming the first fault -----------------------------------------------------------
@pytest.mark.parametrize("dropped", [0, 5, 17])
def test_dropped_reduce_is_a_missing_contribution(swing_allreduce, dropped):
    s = swing_allreduce
    assert s.step[dropped] == 0 and s.op[dropped] == REDUCE
    result = verify(rebuild(s, everything_but(s, dropped)))
    assert not result.ok
    f = result.failure
    assert -1 <= f.step < s.num_steps and 0 <= f.rank < s.nranks
    # in step 0 a rank holds only its own contribution, so exactly the sender's contribution goes missing
    assert f"missing the contributions of 1 rank(s): {s.src[dropped]}" in f.reason
    assert inside(f.interval, pieces_of(s, dropped))
    assert f.expected != f.found and f.expected.startswith("0x") and len(f.expected) == 18
    assert result.summary().startswith("FAILED: ") and f.reason in result.summary()


def test_dropped_transfer_late_in_allreduce_misses_many_contributions(swing_allreduce):
    s = swing_allreduce
    last_reduce = int(np.flatnonzero(s.op == REDUCE)[-1])
    f = verify(rebuild(s, everything_but(s, last_reduce))).failure
    assert f is not None and "missing the contributions of" in f.reason
    assert inside(f.interval, pieces_of(s, last_reduce))


@pytest.mark.parametrize("duplicated", [0, 100, 255])
def test_duplicated_reduce_is_a_doubled_contribution_at_its_step(swing_allreduce, duplicated):
    s = swing_allreduce
    assert s.op[duplicated] == REDUCE
    order = np.insert(np.arange(s.num_transfers), duplicated + 1, duplicated)
    result = verify(rebuild(s, order))
    assert not result.ok
    f = result.failure
    assert f.step == s.step[duplicated]
    assert "doubled contribution" in f.reason
    assert f"rank {s.dst[duplicated]} holds" in f.reason
    assert inside(f.interval, pieces_of(s, duplicated))


def test_allgather_with_dropped_last_step_transfer_leaves_a_rank_without_a_block(swing_allgather):
    s = swing_allgather
    dropped = s.num_transfers - 3
    assert s.step[dropped] == s.num_steps - 1
    f = verify(rebuild(s, everything_but(s, dropped))).failure
    assert f is not None
    assert f.rank == s.dst[dropped]
    assert f.step == -1  # the cell was never written
    assert f"rank {f.rank} never received this block from its owner" in f.reason
    assert inside(f.interval, pieces_of(s, dropped))
    block = int(Fraction(f.interval[0]))
    assert f"(rank {s.owner[block]})" in f.reason


def test_allgather_forwarding_a_missing_block_names_the_forwarding_step(swing_allgather):
    s = swing_allgather
    f = verify(rebuild(s, everything_but(s, 0))).failure  # step 0: the forwarder never gets the block
    assert f is not None and "never came from the owner" in f.reason
    assert f.step > 0


@pytest.mark.parametrize("changed", [0, 130, 255])
def test_reduce_in_an_allgather_is_named(swing_allgather, changed):
    s = swing_allgather
    op = s.op.copy()
    op[changed] = REDUCE
    result = verify(rebuild(s, range(s.num_transfers), op=op))
    assert not result.ok
    f = result.failure
    assert f.step == s.step[changed]
    assert f"rank {s.dst[changed]} reduces in an allgather" in f.reason


@pytest.mark.parametrize("reduce_first", [True, False])
def test_a_reduce_added_on_top_of_a_copy_is_caught(swing_allreduce, reduce_first):
    # within a step copies land first and reductions add on top, whatever the transfer order: an extra
    # reduction into a cell that a copy fills leaves a contribution the allreduce must not have
    s = swing_allreduce
    copy = int(np.flatnonzero(s.op == COPY)[0])
    step, dst = int(s.step[copy]), int(s.dst[copy])
    (start, stop), *_ = pieces_of(s, copy)
    other = next(r for r in range(s.nranks) if r not in (dst, s.src[copy]))
    position = copy if reduce_first else copy + 1
    broken = rebuild(s, range(s.num_transfers),
                     extra=[(position, step, other, dst, int(REDUCE), int(start), int(start) + 1)])
    result = verify(broken)
    assert not result.ok
    assert result.failure.interval[0] == str(start) or result.failure.rank != dst


def test_copies_land_before_reductions_in_one_step():
    # rank 1 copies its block into rank 0's scratch while rank 0 reduces its own block into the same scratch
    # cell (a local reduction): the scratch ends with x0 + x1, which step 1 copies back to both ranks
    s = Schedule("allreduce", 2, 1, step=[0, 0, 1, 1], src=[1, 0, 0, 0], dst=[0, 0, 0, 1],
                 op=[COPY, REDUCE, COPY, COPY], piece_offsets=[0, 1, 2, 3, 4], piece_start=[0, 0, 1, 1],
                 piece_stop=[1, 1, 2, 2], nscratch=1, piece_shift=[1, 1, -1, -1])
    assert verify(s).ok, verify(s).summary()
    reordered = Schedule("allreduce", 2, 1, step=[0, 0, 1, 1], src=[0, 1, 0, 0], dst=[0, 0, 1, 0],
                         op=[REDUCE, COPY, COPY, COPY], piece_offsets=[0, 1, 2, 3, 4], piece_start=[0, 0, 1, 1],
                         piece_stop=[1, 1, 2, 2], nscratch=1, piece_shift=[1, 1, -1, -1])
    assert verify(reordered).ok


def test_two_copies_into_one_segment_in_one_step_are_rejected():
    s = Schedule("allgather", 3, 3, step=[0, 0], src=[0, 2], dst=[1, 1], op=[COPY, COPY],
                 piece_offsets=[0, 1, 2], piece_start=[0, 0], piece_stop=[1, 1])
    f = verify(s).failure
    assert "two copies" in f.reason and (f.step, f.rank, f.interval) == (0, 1, ("0", "1"))


def test_a_message_carries_a_source_byte_once():
    # one transfer placing the same source block in two destination cells sends one block
    s = Schedule("allreduce", 2, 1, step=[0], src=[0], dst=[1], op=[COPY], piece_offsets=[0, 2],
                 piece_start=[0, 0], piece_stop=[1, 1], nscratch=1, piece_shift=[1, 0])
    assert s.transfer_size[0] == pytest.approx(1.0)


def test_reduce_scatter_with_wrong_owner_fails_at_the_wrong_owner():
    s = registry.build("swing", "torus:4x4", "reduce_scatter")
    assert verify(s).ok
    owner = s.owner.copy()
    a, b = 0, int(np.flatnonzero(owner != owner[0])[0])
    owner[a], owner[b] = owner[b], owner[a]
    result = verify(rebuild(s, range(s.num_transfers), owner=owner))
    assert not result.ok
    f = result.failure
    assert f.rank in (owner[a], owner[b])
    assert int(Fraction(f.interval[0])) in (a, b)
    assert owner[int(Fraction(f.interval[0]))] == f.rank
    assert "missing the contributions" in f.reason


def test_allgather_with_wrong_owner_fails():
    s = registry.build("ring", "torus:3x4", "allgather")
    owner = np.roll(s.owner, 1)
    f = verify(rebuild(s, range(s.num_transfers), owner=owner)).failure
    assert f is not None and "owner" in f.reason


# -- fractional pieces ---------------------------------------------------------------------------------------
def two_rank_allreduce(split_start: int = 1) -> Schedule:
    """Rank 0 reduces [0, 1/3) into rank 1, rank 1 reduces [split_start/3, 1) into rank 0; then they copy back."""
    return Schedule("allreduce", 2, 1, step=[0, 0, 1, 1], src=[0, 1, 1, 0], dst=[1, 0, 0, 1],
                    op=[REDUCE, REDUCE, COPY, COPY], piece_offsets=[0, 1, 2, 3, 4],
                    piece_start=[0, split_start, 0, 1], piece_stop=[1, 3, 1, 3], denominator=3)


def test_fractional_allreduce_verifies():
    result = verify(two_rank_allreduce())
    assert result.ok, result.summary()
    assert result.segments == 2  # [0, 1/3) and [1/3, 1)


def test_shifted_fractional_end_leaves_a_gap():
    result = verify(two_rank_allreduce(split_start=2))  # rank 1 now sends [2/3, 1): [1/3, 2/3) is lost
    assert not result.ok
    f = result.failure
    assert f.interval == ("1/3", "2/3")
    assert f.rank == 0
    assert "missing the contributions of 1 rank(s): 1" in f.reason
    assert result.segments == 3


def test_fractional_reduce_scatter_and_allgather_compose():
    rs = Schedule("reduce_scatter", 2, 2, step=[0, 0], src=[0, 1], dst=[1, 0], op=[REDUCE, REDUCE],
                  piece_offsets=[0, 2, 3], piece_start=[5, 7, 0], piece_stop=[7, 10, 5], denominator=5)
    ag = reverse(rs)
    assert verify(rs).ok and verify(ag).ok and verify(concat(rs, ag)).ok
    shifted = Schedule("reduce_scatter", 2, 2, step=[0, 0], src=[0, 1], dst=[1, 0], op=[REDUCE, REDUCE],
                       piece_offsets=[0, 2, 3], piece_start=[5, 8, 0], piece_stop=[7, 10, 5], denominator=5)
    f = verify(shifted).failure
    assert (f.rank, f.interval) == (1, ("7/5", "8/5"))


# -- results -------------------------------------------------------------------------------------------------
def test_results_serialize_to_json(swing_allreduce):
    ok = verify(swing_allreduce).to_dict()
    assert json.loads(json.dumps(ok)) == ok and ok["ok"] is True and ok["failure"] is None
    broken = verify(rebuild(swing_allreduce, everything_but(swing_allreduce, 3))).to_dict()
    back = json.loads(json.dumps(broken))
    assert back == broken and back["ok"] is False
    assert set(back["failure"]) == {"step", "rank", "interval", "expected", "found", "reason"}
    assert isinstance(back["failure"]["interval"], list) and len(back["failure"]["interval"]) == 2
    clash = Schedule("allreduce", 3, 1, step=[0, 0], src=[0, 2], dst=[1, 1], op=[COPY, REDUCE],
                     piece_offsets=[0, 1, 2], piece_start=[0, 0], piece_stop=[1, 1])
    d = verify(clash).to_dict()
    assert json.loads(json.dumps(d)) == d


def test_state_too_large_raises(monkeypatch, swing_allreduce):
    monkeypatch.setattr(exact, "MAX_STATE_BYTES", 1024)
    with pytest.raises(ScheduleError, match="GiB of state"):
        verify(swing_allreduce)


def _direct_alltoall(n, k=1, skip=()):
    """Every rank i sends its k blocks for rank j straight to j in one step (the 'direct' all-to-all)."""
    from directcoll.schedule.ir import ScheduleBuilder

    b = ScheduleBuilder("alltoall", n, n * n * k)
    for i in range(n):
        for j in range(n):
            if i != j and (i, j) not in skip:
                b.add(0, i, j, 0, (i * n + j) * k, (i * n + j + 1) * k)
    return b


def test_alltoall_direct_and_relayed():
    from directcoll.schedule.ir import ScheduleBuilder

    assert verify(_direct_alltoall(5, k=2).build()).ok
    n = 4
    b = ScheduleBuilder("alltoall", n, n * n)
    for i in range(n):
        for j in range(n):
            blk = i * n + j
            if (j - i) % n == 2:  # two hops through rank i + 1: relays keep the block's coordinate
                b.add(0, i, (i + 1) % n, 0, blk, blk + 1)
                b.add(1, (i + 1) % n, j, 0, blk, blk + 1)
            elif i != j:
                b.add(0, i, j, 0, blk, blk + 1)
    assert verify(b.build()).ok


def test_alltoall_missing_block_is_named():
    result = verify(_direct_alltoall(4, skip={(2, 1)}).build())
    assert not result.ok
    assert result.failure.rank == 1 and "source (rank 2)" in result.failure.reason


def test_alltoall_reduction_is_a_fault():
    b = _direct_alltoall(3)
    b.add(1, 0, 1, 1, 1, 2)  # rank 0 adds its block for rank 1 again
    result = verify(b.build())
    assert not result.ok and result.failure.rank == 1


def test_alltoall_needs_n_squared_blocks():
    from directcoll.schedule.ir import ScheduleBuilder

    with pytest.raises(ScheduleError, match="N\\^2"):
        ScheduleBuilder("alltoall", 3, 6).build()


@pytest.mark.parametrize("spec", ["torus:3x3", "complete:5", "genkautz:2:7"])
def test_direct_alltoall_verifies(spec):
    from directcoll.registry import build

    schedule = build("direct", spec, "alltoall")
    assert verify(schedule).ok and schedule.num_steps == 1
