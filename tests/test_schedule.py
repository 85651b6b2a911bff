"""Schedule IR (docs/architecture.md "Schedule IR"): builder, validation, lossless files, and passes over schedules."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from directcoll import registry
from directcoll.errors import ScheduleError, ScheduleFormatError
from directcoll.schedule import (
    COPY,
    REDUCE,
    Collective,
    Schedule,
    ScheduleBuilder,
    concat,
    concurrent,
    default_owner,
    from_dict,
    load,
    offset_steps,
    reverse,
    save,
    step_summary,
    to_dict,
)
from directcoll.verify import verify

ARRAYS = ("step", "src", "dst", "op", "piece_offsets", "piece_start", "piece_stop", "owner", "route_offsets",
          "route_links")


def assert_same_schedule(a: Schedule, b: Schedule) -> None:
    """Every field equal: header, meta and every array (None where the other is None)."""
    assert (a.collective, a.nranks, a.nblocks, a.denominator) == (b.collective, b.nranks, b.nblocks, b.denominator)
    assert a.meta == b.meta
    for name in ARRAYS:
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            assert x.dtype == y.dtype, name
            assert np.array_equal(x, y), name


def transfers(s: Schedule) -> list[tuple]:
    """One tuple per transfer: (step, src, dst, op, pieces as exact fractions)."""
    out = []
    for i in range(s.num_transfers):
        p = slice(s.piece_offsets[i], s.piece_offsets[i + 1])
        pieces = tuple((Fraction(int(a), s.denominator), Fraction(int(b), s.denominator))
                       for a, b in zip(s.piece_start[p], s.piece_stop[p], strict=True))
        out.append((int(s.step[i]), int(s.src[i]), int(s.dst[i]), int(s.op[i]), pieces))
    return out


def fractional_allreduce() -> Schedule:
    """Allreduce on 2 ranks with pieces [0, 1/3) and [1/3, 1), with an explicit route per transfer."""
    return Schedule("allreduce", 2, 1, step=[0, 0, 1, 1], src=[0, 1, 1, 0], dst=[1, 0, 0, 1],
                    op=[REDUCE, REDUCE, COPY, COPY], piece_offsets=[0, 1, 2, 3, 4], piece_start=[0, 1, 0, 1],
                    piece_stop=[1, 3, 1, 3], denominator=3, route_offsets=[0, 1, 2, 3, 4],
                    route_links=[0, 1, 1, 0], meta={"algorithm": "hand", "note": ["fractional", 3]})


def small(collective="allreduce", **kw) -> dict:
    """Arguments of a valid 3-rank, 3-block schedule with two transfers; override any field."""
    base = dict(collective=collective, nranks=3, nblocks=3, step=[0, 1], src=[0, 1], dst=[1, 2], op=[COPY, COPY],
                piece_offsets=[0, 1, 2], piece_start=[0, 0], piece_stop=[1, 1])
    return {**base, **kw}


# -- builder -------------------------------------------------------------------------------------------------
def test_builder_sorts_by_step_and_keeps_pieces_with_their_transfers():
    b = ScheduleBuilder("allreduce", 4, 8)
    # step 2: rank 0 sends 3 pieces, rank 1 sends 1 piece
    b.add_pieces(step=2, src=[0, 1], dst=[1, 2], op=REDUCE, counts=[3, 1], start=[0, 2, 6, 4], stop=[1, 3, 7, 5])
    # step 0: one transfer with 2 pieces, one with none
    b.add_pieces(step=[0, 0], src=[3, 2], dst=[0, 3], op=COPY, counts=[2, 0], start=[5, 7], stop=[6, 8])
    # step 1: contiguous pieces, broadcast over three transfers
    b.add(step=1, src=[0, 1, 2], dst=[3, 3, 3], op=REDUCE, start=[0, 2, 4], stop=[2, 4, 8])
    s = b.build(meta={"algorithm": "test"})
    assert s.step.tolist() == [0, 0, 1, 1, 1, 2, 2]
    F = Fraction
    assert transfers(s) == [
        (0, 3, 0, 0, ((F(5), F(6)), (F(7), F(8)))),
        (0, 2, 3, 0, ()),
        (1, 0, 3, 1, ((F(0), F(2)),)),
        (1, 1, 3, 1, ((F(2), F(4)),)),
        (1, 2, 3, 1, ((F(4), F(8)),)),
        (2, 0, 1, 1, ((F(0), F(1)), (F(2), F(3)), (F(6), F(7)))),
        (2, 1, 2, 1, ((F(4), F(5)),)),
    ]
    assert s.num_steps == 3 and s.num_pieces == 9
    assert s.step_bounds.tolist() == [0, 2, 5, 7]
    assert s.piece_transfer.tolist() == [0, 0, 2, 3, 4, 5, 5, 5, 6]
    np.testing.assert_allclose(s.transfer_size, np.array([2, 0, 2, 2, 4, 3, 1]) / 8)
    assert s.algorithm == "test"


def test_builder_rejects_counts_that_do_not_match_pieces():
    b = ScheduleBuilder("allgather", 2, 2)
    with pytest.raises(ScheduleError, match="counts must sum"):
        b.add_pieces(step=0, src=0, dst=1, op=COPY, counts=[2], start=[0], stop=[1])


def test_empty_builder_gives_empty_schedule():
    s = ScheduleBuilder("allgather", 2, 2).build()
    assert s.num_transfers == 0 and s.num_steps == 0 and s.owner.tolist() == [0, 1]
    assert s.piece_offsets.tolist() == [0]


# -- validation ----------------------------------------------------------------------------------------------
def test_valid_small_schedule_constructs():
    s = Schedule(**small())
    assert s.op.dtype == np.uint8 and s.step.dtype == np.int64 and s.owner is None


@pytest.mark.parametrize(("override", "message"), [
    ({"dst": [1, 3]}, r"transfer 1 \(step 1\): dst rank 3 outside 0..2"),
    ({"src": [-1, 1]}, r"transfer 0 \(step 0\): src rank -1 outside 0..2"),
    ({"dst": [1, 1]}, r"transfer 1 \(step 1\) sends rank 1 to itself"),
    ({"piece_stop": [1, 4]}, r"transfer 1 \(step 1\): piece \[0/1, 4/1\) is empty.*outside \[0, 3\)"),
    ({"piece_start": [-1, 0]}, r"transfer 0 \(step 0\).*outside \[0, 3\)"),
    ({"piece_start": [0, 1]}, r"transfer 1 \(step 1\): piece \[1/1, 1/1\) is empty"),
    ({"step": [1, 0]}, "sorted by step"),
    ({"step": [-1, 0]}, "steps must be >= 0"),
    ({"op": [0, 2]}, "op must be 0"),
    ({"src": [0]}, "src has 1 entries, step has 2"),
    ({"piece_offsets": [0, 1]}, "T\\+1"),
    ({"piece_offsets": [0, 2, 1]}, "non-decreasing"),
    ({"piece_offsets": [0, 1, 3]}, "number of pieces"),
    ({"nblocks": 0}, ">= 1"),
    ({"collective": "gather"}, "unknown collective 'gather'; accepted: allgather, reduce_scatter, allreduce"),
    ({"route_offsets": [0, 0, 0]}, "come together"),
    ({"route_offsets": [0, 0], "route_links": []}, "route_offsets must have T\\+1"),
    ({"route_offsets": [0, 2, 1], "route_links": [5]}, "non-decreasing"),
    ({"route_offsets": [0, 1, 2], "route_links": [5]}, "number of route_links"),
])
def test_malformed_schedules_raise_schedule_error(override, message):
    with pytest.raises(ScheduleError, match=message):
        Schedule(**small(**override))


@pytest.mark.parametrize("owner", [[0, 1], [0, 1, 2, 0], [0, 1, 3]])
def test_bad_owner_raises(owner):
    with pytest.raises(ScheduleError, match="owner must map each of the 3 blocks to a rank 0..2"):
        Schedule(**small("allgather"), owner=owner)


def test_default_owner_is_mpi_block_ownership_and_needs_divisibility():
    assert default_owner(3, 6).tolist() == [0, 0, 1, 1, 2, 2]
    assert Schedule(**small("reduce_scatter")).owner.tolist() == [0, 1, 2]
    with pytest.raises(ScheduleError, match="divisible"):
        default_owner(4, 6)
    assert Schedule(**small("allreduce"), owner=[2, 1, 0]).owner is None  # allreduce has no owner


def test_collective_names_and_aliases():
    assert Collective.parse("Reduce-Scatter") is Collective.REDUCE_SCATTER
    assert Collective.parse("rs") is Collective.REDUCE_SCATTER
    assert Collective.parse("ag") is Collective.ALLGATHER
    assert Collective.parse(Collective.ALLREDUCE) is Collective.ALLREDUCE
    with pytest.raises(ScheduleError, match="unknown collective 'alltoall-ish'"):
        Collective.parse("alltoall-ish")


# -- files ---------------------------------------------------------------------------------------------------
BUILT = [("swing", "torus:4x4", "allreduce", None), ("swing", "torus:3x5", "reduce_scatter", None),
         ("recursive-doubling", "torus:4x4", "allreduce", None), ("rabenseifner", "torus:2x4", "allgather", None),
         ("mirrored-recursive-doubling", "torus:4x4", "allreduce", None),
         ("ring", "torus:4x4", "allgather", None), ("bucket", "torus:3x4", "reduce_scatter", None),
         ("ring", "ring:5", "allreduce", "unidirectional")]


def built(name, spec, collective, variant) -> Schedule:
    return registry.build(name, spec, collective, variant=variant)


@pytest.fixture(params=BUILT + ["fractional"], ids=[f"{b[0]}-{b[2]}-{b[1]}" for b in BUILT] + ["fractional"])
def any_schedule(request) -> Schedule:
    return fractional_allreduce() if request.param == "fractional" else built(*request.param)


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_files_round_trip_losslessly(any_schedule, tmp_path, suffix):
    path = save(any_schedule, tmp_path / f"schedule{suffix}")
    assert path.exists()
    assert_same_schedule(load(path), any_schedule)


def test_dict_round_trip_is_json_serializable(any_schedule):
    text = json.dumps(to_dict(any_schedule))
    assert_same_schedule(from_dict(json.loads(text)), any_schedule)


def test_file_round_trip_keeps_fractions_and_still_verifies(tmp_path):
    s = load(save(fractional_allreduce(), tmp_path / "f.json"))
    assert s.denominator == 3 and s.piece_stop.tolist() == [1, 3, 1, 3]
    assert s.route_links.tolist() == [0, 1, 1, 0]
    assert verify(s).ok


def _write(path, d):
    path.write_text(json.dumps(d))
    return path


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.update(format="something-else"), "not a directcoll schedule"),
    (lambda d: d.update(version=99), "version 99 is not supported"),
    (lambda d: d.pop("piece_offsets"), "missing fields piece_offsets"),
    (lambda d: d.pop("nranks"), "missing fields nranks"),
    (lambda d: d.update(step=None), "missing fields step"),
    (lambda d: d.update(src="zero"), "must hold integers"),
])
def test_bad_json_files_raise_format_error_naming_the_file(tmp_path, edit, message):
    d = to_dict(registry.build("swing", "torus:4x4", "allgather"))
    edit(d)
    path = _write(tmp_path / "bad.json", d)
    with pytest.raises(ScheduleFormatError, match=message) as info:
        load(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(("name", "content"), [
    ("garbage.json", b"{not json at all"),
    ("binary.json", b"\xff\xfe\x00garbage"),
    ("list.json", b"[1, 2, 3]"),
    ("garbage.npz", b"PK\x03\x04 this is not really a zip"),
    ("text.npz", b"hello"),
    ("empty.npz", b""),
])
def test_garbage_files_raise_format_error_naming_the_file(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ScheduleFormatError) as info:
        load(path)
    assert str(path) in str(info.value)


def test_missing_file_raises_format_error(tmp_path):
    with pytest.raises(ScheduleFormatError, match="no such schedule file"):
        load(tmp_path / "absent.npz")


def test_npz_with_missing_array_or_bad_header_raises_format_error(tmp_path):
    good = save(registry.build("swing", "torus:4x4", "allgather"), tmp_path / "good.npz")
    with np.load(good) as z:
        arrays = dict(z)
    no_step = {k: v for k, v in arrays.items() if k != "step"}
    np.savez(tmp_path / "no_step.npz", **no_step)
    with pytest.raises(ScheduleFormatError, match=r"no_step\.npz: missing fields step"):
        load(tmp_path / "no_step.npz")
    np.savez(tmp_path / "no_header.npz", **{k: v for k, v in arrays.items() if k != "header"})
    with pytest.raises(ScheduleFormatError, match=r"no_header\.npz: not a readable"):
        load(tmp_path / "no_header.npz")
    np.savez(tmp_path / "list_header.npz", **{**arrays, "header": np.array("[1, 2]")})
    with pytest.raises(ScheduleFormatError, match=r"list_header\.npz: not a directcoll schedule"):
        load(tmp_path / "list_header.npz")


def test_inconsistent_file_raises_schedule_error_naming_the_file(tmp_path):
    d = to_dict(registry.build("swing", "torus:4x4", "allgather"))
    d["dst"][0] = 99
    path = _write(tmp_path / "inconsistent.json", d)
    with pytest.raises(ScheduleError, match=r"inconsistent\.json: dst\[0\] = 99 is out of range; accepted: 0\.\.15"):
        load(path)


# -- passes --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "spec"), [("swing", "torus:4x4"), ("ring", "torus:3x4"),
                                            ("bucket", "torus:2x3"), ("rabenseifner", "torus:8")])
def test_concat_reduce_scatter_then_allgather_is_allreduce(name, spec):
    rs = registry.build(name, spec, "reduce_scatter")
    ag = registry.build(name, spec, "allgather")
    ar = concat(rs, ag)
    assert ar.collective is Collective.ALLREDUCE and ar.owner is None
    assert ar.num_steps == rs.num_steps + ag.num_steps
    assert ar.num_transfers == rs.num_transfers + ag.num_transfers
    assert transfers(ar)[: rs.num_transfers] == transfers(rs)
    assert [(t + rs.num_steps, *rest) for t, *rest in transfers(ag)] == [tuple(x) for x in
                                                                           transfers(ar)[rs.num_transfers:]]
    assert verify(ar).ok


def test_concat_brings_denominators_to_their_lcm():
    rs = Schedule("reduce_scatter", 2, 2, step=[0, 0], src=[0, 1], dst=[1, 0], op=[REDUCE, REDUCE],
                  piece_offsets=[0, 1, 2], piece_start=[2, 0], piece_stop=[4, 2], denominator=2)
    ag = Schedule("allgather", 2, 2, step=[0, 0], src=[0, 1], dst=[1, 0], op=[COPY, COPY],
                  piece_offsets=[0, 1, 2], piece_start=[0, 3], piece_stop=[3, 6], denominator=3)
    ar = concat(rs, ag)
    assert ar.denominator == 6
    assert ar.piece_start.tolist() == [6, 0, 0, 6] and ar.piece_stop.tolist() == [12, 6, 6, 12]
    assert verify(ar).ok


def test_concat_rejects_wrong_order_mismatched_owner_and_sizes():
    rs = registry.build("swing", "torus:4x4", "reduce_scatter")
    ag = registry.build("swing", "torus:4x4", "allgather")
    with pytest.raises(ScheduleError, match="cannot sequence allgather then reduce_scatter"):
        concat(ag, rs)
    with pytest.raises(ScheduleError, match="cannot sequence allreduce"):
        concat(concat(rs, ag), ag)
    other_owner = registry.build("ring", "torus:4x4", "allgather")
    assert rs.nblocks == other_owner.nblocks and not np.array_equal(rs.owner, other_owner.owner)
    with pytest.raises(ScheduleError, match="leaves blocks where the allgather does not start"):
        concat(rs, other_owner)
    with pytest.raises(ScheduleError, match="N/nblocks differ"):
        concat(rs, registry.build("swing", "torus:4x2", "allgather"))


@pytest.mark.parametrize(("name", "spec", "collective"), [
    ("swing", "torus:4x4", "allgather"), ("swing", "torus:3x5", "reduce_scatter"),
    ("ring", "torus:4x4", "reduce_scatter"), ("bucket", "torus:3x4", "allgather"),
])
def test_reverse_twice_is_identity(name, spec, collective):
    s = registry.build(name, spec, collective)
    assert_same_schedule(reverse(reverse(s)), s)


def test_reverse_flips_time_direction_and_op():
    ag = registry.build("swing", "torus:4x4", "allgather")
    rs = reverse(ag)
    assert rs.collective is Collective.REDUCE_SCATTER
    assert np.array_equal(rs.owner, ag.owner)
    last = ag.num_steps - 1
    flipped = sorted((last - t, dst, src, 1 - op, pieces) for t, src, dst, op, pieces in transfers(ag))
    assert sorted(transfers(rs)) == flipped
    assert set(ag.op.tolist()) == {int(COPY)} and set(rs.op.tolist()) == {int(REDUCE)}
    assert verify(rs).ok


def test_reverse_rejects_allreduce_and_routed_schedules():
    with pytest.raises(ScheduleError, match="only allgather, reduce_scatter, broadcast and reduce reverse"):
        reverse(registry.build("swing", "torus:4x4", "allreduce"))
    routed = Schedule(**small("allgather"), route_offsets=[0, 1, 2], route_links=[3, 4])
    with pytest.raises(ScheduleError, match="explicit routes"):
        reverse(routed)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_concurrent_parts_stack_blocks_and_owners(k):
    parts = [registry.build(name, "torus:4x4", "allgather") for name in ("swing", "ring", "bucket")[:k]]
    assert len({p.nblocks for p in parts}) == 1
    nb = parts[0].nblocks
    both = concurrent(parts)
    assert both.nblocks == k * nb
    assert np.array_equal(both.owner, np.concatenate([p.owner for p in parts]))
    assert both.num_transfers == sum(p.num_transfers for p in parts)
    assert both.num_steps == max(p.num_steps for p in parts)
    expected = sorted((t, s, d, o, tuple((a + i * nb, b + i * nb) for a, b in pieces))
                      for i, p in enumerate(parts) for t, s, d, o, pieces in transfers(p))
    assert sorted(transfers(both)) == expected
    assert np.all(np.diff(both.step) >= 0)
    assert verify(both).ok


def test_concurrent_rejects_mixed_parts():
    with pytest.raises(ScheduleError, match="at least one"):
        concurrent([])
    with pytest.raises(ScheduleError, match="same collective, N and nblocks"):
        concurrent([registry.build("swing", "torus:4x4", "allgather"),
                    registry.build("swing", "torus:4x4", "reduce_scatter")])


def test_offset_steps_shifts_every_step():
    s = registry.build("swing", "torus:4x4", "allgather")
    later = offset_steps(s, 3)
    assert np.array_equal(later.step, s.step + 3) and later.num_steps == s.num_steps + 3
    assert np.array_equal(later.piece_start, s.piece_start)
    assert verify(later).ok  # idle steps change nothing
    assert np.array_equal(offset_steps(later, -3).step, s.step)
    with pytest.raises(ScheduleError, match="negative"):
        offset_steps(s, -1)


@pytest.mark.parametrize("n", [4, 7, 8])
def test_step_summary_of_unidirectional_ring_allgather(n):
    s = registry.build("ring", f"ring:{n}", "allgather", variant="unidirectional")
    summary = step_summary(s)
    assert summary.transfers.tolist() == [n] * (n - 1)
    np.testing.assert_allclose(summary.bytes_per_rank, 1 / n)
    np.testing.assert_allclose(summary.max_bytes_per_rank, 1 / n)
    np.testing.assert_allclose(summary.max_transfer, 1 / n)
    rows = summary.rows()
    assert len(rows) == n - 1 and rows[0] == {"step": 0, "transfers": n, "bytes_per_rank": pytest.approx(1 / n),
                                              "max_bytes_per_rank": pytest.approx(1 / n),
                                              "max_transfer": pytest.approx(1 / n)}


def test_step_summary_mean_and_max_differ_when_ranks_send_unequally():
    s = Schedule("allreduce", 4, 4, step=[0, 0, 1], src=[0, 0, 1], dst=[1, 2, 3], op=[REDUCE] * 3,
                 piece_offsets=[0, 1, 2, 3], piece_start=[0, 1, 0], piece_stop=[1, 3, 4])
    summary = step_summary(s)
    assert summary.transfers.tolist() == [2, 1]
    np.testing.assert_allclose(summary.max_bytes_per_rank, [3 / 4, 1.0])
    np.testing.assert_allclose(summary.bytes_per_rank, [3 / 16, 1 / 4])
    np.testing.assert_allclose(summary.max_transfer, [1 / 2, 1.0])


# -- property: reversal duality (Zhao et al. Theorem 1) --------------------------------------------------------
shapes = st.lists(st.integers(2, 6), min_size=1, max_size=3).filter(lambda s: int(np.prod(s)) <= 48)


@settings(max_examples=20, deadline=None)
@given(shape=shapes)
def test_reversed_swing_reduce_scatter_is_an_allgather(shape):
    spec = "torus:" + "x".join(map(str, shape))
    rs = registry.build("swing", spec, "reduce_scatter")
    assert verify(rs).ok
    ag = reverse(rs)
    assert ag.collective is Collective.ALLGATHER
    result = verify(ag)
    assert result.ok, result.summary()
    ar = concat(rs, ag)
    assert ar.num_steps == 2 * rs.num_steps
    result = verify(ar)
    assert result.ok, result.summary()


def test_concurrent_and_concat_keep_routes_with_their_transfers():
    routed = Schedule("allgather", 2, 2, step=[0, 1], src=[0, 1], dst=[1, 0], op=[COPY, COPY],
                      piece_offsets=[0, 1, 2], piece_start=[0, 1], piece_stop=[1, 2],
                      route_offsets=[0, 1, 3], route_links=[7, 8, 9])
    plain = Schedule("allgather", 2, 2, step=[0], src=[1], dst=[0], op=[COPY], piece_offsets=[0, 1],
                     piece_start=[1], piece_stop=[2])
    both = concurrent([routed, plain])
    routes = {(int(s), int(a)): both.route_links[both.route_offsets[i]:both.route_offsets[i + 1]].tolist()
              for i, (s, a) in enumerate(zip(both.step, both.src, strict=True))}
    assert routes == {(0, 0): [7], (0, 1): [], (1, 1): [8, 9]}
    rs = Schedule("reduce_scatter", 2, 2, step=[0], src=[1], dst=[0], op=[REDUCE], piece_offsets=[0, 1],
                  piece_start=[0], piece_stop=[1], route_offsets=[0, 2], route_links=[4, 5])
    joined = concat(rs, routed)
    assert joined.route_offsets.tolist() == [0, 2, 3, 5] and joined.route_links.tolist() == [4, 5, 7, 8, 9]
