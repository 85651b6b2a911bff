"""Step patterns are derived, not written twice: ring, bucket, recursive doubling, Swing and BFB each describe their
steps once (:mod:`directcoll.schedule.phases`), and their schedule and their step pattern are two readings of that
description. These tests check the derivation: the two readings agree (``pattern_of(schedule)`` equals the pattern)
on many shapes, collectives, variants and ports; the schedule refuses a description whose pieces contradict its
widths; a change in a description shows in both readings; the registry's pattern builders are those readings, sized
by ``estimate_bytes(pattern=True)``; and ``compare`` is the same with and without them."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from directcoll import registry
from directcoll.algorithms import butterfly as bf
from directcoll.algorithms.bucket import bucket_pattern, build_bucket
from directcoll.algorithms.recursive_doubling import recursive_doubling, recursive_doubling_steps
from directcoll.algorithms.ring import build_ring, build_shifted_ring, ring_pattern, shifted_ring_pattern
from directcoll.algorithms.swing.pattern import pattern_bytes as swing_pattern_bytes
from directcoll.algorithms.swing.pattern import swing_pattern
from directcoll.algorithms.swing.schedule import swing
from directcoll.errors import ScheduleError, UnsupportedShapeError
from directcoll.reports.compare import compare
from directcoll.schedule.ir import REDUCE
from directcoll.schedule.pattern import BYTES_PER_TRANSFER, pattern_of
from directcoll.schedule.phases import Phase, Phases, Pieces
from directcoll.synthesis.bfb.pattern import bfb_pattern
from directcoll.synthesis.bfb.pattern import pattern_bytes as bfb_pattern_bytes
from directcoll.synthesis.bfb.schedule import build_bfb, translation_loads
from directcoll.topology import parse
from directcoll.verify import verify

SWING_SHAPES = ["torus:4x4", "torus:8", "torus:6", "torus:5", "torus:7", "torus:3x5", "torus:6x10", "torus:4x4x2",
                "torus:2x3x2x2", "torus:3x3", "torus:5x6x3", "torus:12x3", "torus:2x2", "torus:2", "mesh:4x3",
                "hypercube:3", "complete:6", "mesh:6x2", "hyperx:3x4", "hammingmesh:2x2:2x2"]
COLLECTIVES = ["allreduce", "reduce_scatter", "allgather"]


@pytest.mark.parametrize("spec", ["ring:5", "ring:4:uni", "torus:4x4", "torus:3x5", "torus:6x4", "mesh:3x2",
                                  "hypercube:3", "torus:2x3x2", "complete:4", "ring:2"])
def test_ring_and_bucket_patterns_are_their_schedules_read_without_pieces(spec):
    t = parse(spec)
    for coll in COLLECTIVES:
        for build, pattern, ports in ((build_ring, ring_pattern, (None, 1, 2, 4)),
                                      (build_shifted_ring, shifted_ring_pattern, (None,)),
                                      (build_bucket, bucket_pattern, (None, 1, 2, 3, 4))):
            for p in ports:
                try:
                    schedule = build(t, coll, ports=p)
                except UnsupportedShapeError as exc:  # refused alike, with the same words
                    with pytest.raises(UnsupportedShapeError) as mine:
                        pattern(t, coll, ports=p)
                    assert str(mine.value) == str(exc)
                    continue
                mine = pattern(t, coll, ports=p)
                assert mine.equivalent(pattern_of(schedule)), (spec, coll, build.__name__, p)
                assert mine.meta == schedule.meta


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:6", "ring:5", "torus:3x4", "hypercube:3", "torus:2x2x2"])
def test_recursive_doubling_is_built_from_its_description(spec):
    t = parse(spec)
    for variant in ("latency", "bandwidth"):
        for ports in (1, 2):
            for coll in COLLECTIVES if variant == "bandwidth" else ["allreduce"]:
                try:
                    s = recursive_doubling(t, coll, variant=variant, ports=ports)
                except UnsupportedShapeError:  # reduce-scatter / allgather on a grid that folds
                    continue
                assert verify(s).ok
                steps = recursive_doubling_steps(t, coll, variant=variant, ports=ports)
                assert steps.pattern().equivalent(pattern_of(s)) and steps.pattern().meta == s.meta


def test_a_description_whose_pieces_contradict_its_widths_builds_no_schedule():
    r = np.arange(4)
    wrong = Phases("reduce_scatter", 4, 4, (Phase(4, REDUCE, lambda: (r, (r + 1) % 4, np.full(4, 2)),
                                                  lambda i: Pieces.single(r, r + 1), 3),))
    assert wrong.pattern().size.tolist() == [0.5] * 4  # the pattern reads the widths alone ...
    with pytest.raises(ScheduleError, match="contradicts itself"):  # ... the schedule checks them against the pieces
        wrong.schedule()


def test_a_change_in_the_description_shows_in_both_readings(monkeypatch):
    """Swing's butterfly with recursive doubling's peers: schedule and pattern change together (one description)."""
    t = parse("torus:8x4")
    before = swing_pattern(t)
    table = bf.peer_table
    monkeypatch.setattr(bf, "peer_table", lambda kind, *args: table("recdoub", *args))
    after, schedule = swing_pattern(t), swing(t)
    assert not after.equivalent(before)
    assert after.equivalent(pattern_of(schedule)) and verify(schedule).ok


@pytest.mark.parametrize("spec", SWING_SHAPES)
def test_swing_pattern_equals_the_schedules_pattern(spec):
    t = parse(spec)
    for coll in COLLECTIVES:
        for ports in (None, 1, 2, 3):
            cases = [("bandwidth", coll), ("libswing", coll)] + ([("latency", coll)] if coll == "allreduce" else [])
            for variant, c in cases:
                try:
                    schedule = swing(t, c, variant=variant, ports=ports)
                except UnsupportedShapeError as exc:  # ports beyond 2D, libswing on odd sides: refused alike
                    with pytest.raises(UnsupportedShapeError) as mine:
                        swing_pattern(t, c, variant=variant, ports=ports)
                    assert str(mine.value) == str(exc)
                    continue
                mine = swing_pattern(t, c, variant=variant, ports=ports)
                assert mine.equivalent(pattern_of(schedule)), (spec, c, variant, ports)
                assert mine.meta["construction"] == schedule.meta["construction"]
    assert verify(swing(t)).ok  # the schedule the pattern stands for is a correct allreduce


def test_swing_pattern_refuses_what_swing_refuses():
    t = parse("torus:6x4")
    with pytest.raises(UnsupportedShapeError, match="latency-optimal variant is an allreduce"):
        swing_pattern(t, "allgather", variant="latency")
    with pytest.raises(UnsupportedShapeError, match="unknown variant"):
        swing_pattern(t, variant="fast")


@pytest.mark.parametrize("spec", ["torus:3x3", "torus:4x3", "torus:2x3x2", "torus:5x6", "ring:5", "ring:4:uni",
                                  "hypercube:3", "torus:4x4x2", "mesh:3x3", "torus:2x2",
                                  "links(ring:4,offset=1,latency=2us)", "links(torus:3x4,dim=1,bandwidth=0.5x)",
                                  "links(ring:6,cable=0-1,latency=10x)"])
def test_bfb_pattern_equals_the_schedules_pattern(spec):
    t = parse(spec)
    for coll in COLLECTIVES:
        for chunks, size in ((None, None), (4, None), (None, 2**20)):
            schedule = build_bfb(t, coll, chunks=chunks, size=size)
            mine = bfb_pattern(t, coll, chunks=chunks, size=size)
            assert mine.equivalent(pattern_of(schedule)), (spec, coll, chunks, size)
            assert mine.meta == schedule.meta
    assert verify(build_bfb(t, "allreduce")).ok


def test_bfb_pattern_translates_node_zero_only_on_cayley_topologies():
    assert translation_loads(parse("mesh:3x3")) is None          # not Cayley: the full schedule is built
    assert bfb_pattern_bytes(parse("mesh:3x3")) is None
    step, link, num, den = translation_loads(parse("torus:4x4"))
    assert (parse("torus:4x4").link_dst[link] == 0).all()       # node 0's in-links
    assert num.sum() == 15 * den                                  # node 0 receives the other 15 shards once
    # node 0's steps are laid out as blocks of N transfers with one offset: the step model's translation layout
    p = bfb_pattern(parse("torus:4x4"), "allgather")
    from directcoll.topology.routing import uniform_offsets
    assert all(uniform_offsets(parse("torus:4x4"), p.src[p.step(k)], p.dst[p.step(k)]) is not None
               for k in range(p.num_distinct))


def test_pattern_estimates_match_the_patterns_and_admit_fugaku():
    for spec, variant in [("torus:6x10", "bandwidth"), ("torus:4x4", "bandwidth"), ("torus:6x5", "latency")]:
        t = parse(spec)
        p = swing_pattern(t, variant=variant)
        assert swing_pattern_bytes(t, variant=variant) == len(p.src) * BYTES_PER_TRANSFER
        assert registry.estimate_bytes("swing", t, variant=variant, pattern=True) == len(p.src) * 25
    t = parse("torus:5x6")
    assert bfb_pattern_bytes(t) == len(bfb_pattern(t).src) * 25
    fugaku = parse("torus:24x23x24x2x3x2")
    # the full block-set schedule tracks N^2 pieces (TiB); its pattern 79 M transfers, under 2 GiB
    assert registry.estimate_bytes("swing", fugaku, variant="bandwidth") > 2**40
    assert registry.estimate_bytes("swing", fugaku, variant="bandwidth", pattern=True) < 2 * 2**30
    assert registry.estimate_bytes("bfb", fugaku, pattern=True) < 4 * 2**30
    # libswing refuses Fugaku's odd sides itself: its estimate must not refuse the whole comparison first
    assert registry.estimate_bytes("swing", fugaku, variant="libswing", pattern=True) == 0.0
    with pytest.raises(UnsupportedShapeError, match="odd size 23"):
        registry.build_pattern("swing", fugaku, variant="libswing")


def test_build_pattern_uses_the_builders_and_bfb_options():
    t = parse("torus:4x3")
    p = registry.build_pattern("bfb", t, "allreduce", chunks=4)
    assert p.meta["chunks"] == 4 and p.meta["topology"] == "torus:4x3"
    assert p.equivalent(pattern_of(registry.build("bfb", t, "allreduce", chunks=4)))
    assert registry.build_pattern("swing", "torus:6x10").equivalent(pattern_of(registry.build("swing", "torus:6x10")))


@pytest.mark.parametrize("spec,name", [("torus:16x12", "swing"), ("torus:8x8x8", "swing"), ("torus:6x5", "bfb")])
def test_compare_row_is_the_same_with_and_without_the_pattern_builder(spec, name, monkeypatch):
    t = parse(spec)
    contenders = [(name, name, "bandwidth")]
    with_builder = compare(t, contenders=contenders)
    monkeypatch.setitem(registry.ALGORITHMS, name, replace(registry.ALGORITHMS[name], pattern=None))
    without = compare(t, contenders=contenders)
    assert len(with_builder.entries) == len(without.entries) == 1
    a, b = with_builder.entries[0], without.entries[0]
    assert (a.family, a.algorithm, a.variant) == (b.family, b.algorithm, b.variant)
    # the same numbers up to the order in which link loads are summed (transfers within a step come in another
    # order; BFB's in the translation layout, timed from one route per offset): a few ulps
    np.testing.assert_allclose(a.times, b.times, rtol=1e-13, atol=0)
    assert not np.array_equal(a.times, np.zeros_like(a.times))


@pytest.mark.parametrize("spec", ["genkautz:3:200", "line^2(linegraph_petersen)", "mesh:8x8"])
def test_bfb_without_translation_is_estimated_per_pair_of_ranks(spec):
    """Where no translation gives every node's plan, BFB plans every node (N x N distances and pieces): the
    estimate bounds what tracemalloc sees while building, and grows as N^2, so a large non-Cayley network is
    refused (a comparison skips it) before its plans fill the memory."""
    import tracemalloc

    t = parse(spec)
    tracemalloc.start()
    try:
        registry.build_pattern("bfb", t, "allreduce")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    n = t.num_compute
    assert registry.estimate_bytes("bfb", t, pattern=True) == \
        n * n * registry.BFB_BYTES_PER_PAIR + n * registry.BFB_BYTES_PER_RANK >= peak
    torus = parse("torus:16x16")  # translation: one node plans, O(N D) transfers
    assert registry.estimate_bytes("bfb", torus, pattern=True) < 256 * 256 * registry.BFB_BYTES_PER_PAIR
