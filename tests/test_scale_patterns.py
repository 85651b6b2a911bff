"""Step-pattern builders for Swing and BFB at scale: each equals ``pattern_of`` of the schedule
it stands for, is registered, is sized by ``estimate_bytes(pattern=True)``, and leaves ``compare`` unchanged."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from directcoll import registry
from directcoll.algorithms.swing import swing
from directcoll.algorithms.swing_pattern import PATTERN_BYTES_PER_TRANSFER, swing_pattern, swing_pattern_bytes
from directcoll.errors import UnsupportedShapeError
from directcoll.reports.compare import compare
from directcoll.schedule.pattern import pattern_of
from directcoll.synthesis.bfb import build_bfb, translation_loads
from directcoll.synthesis.bfb_pattern import bfb_pattern, bfb_pattern_bytes
from directcoll.topology import parse
from directcoll.verify import verify

SWING_SHAPES = ["torus:4x4", "torus:8", "torus:6", "torus:5", "torus:7", "torus:3x5", "torus:6x10", "torus:4x4x2",
                "torus:2x3x2x2", "torus:3x3", "torus:5x6x3", "torus:12x3", "torus:2x2", "torus:2", "mesh:4x3",
                "hypercube:3", "complete:6", "mesh:6x2", "hyperx:3x4", "hammingmesh:2x2:2x2"]
COLLECTIVES = ["allreduce", "reduce_scatter", "allgather"]


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
        assert swing_pattern_bytes(t, variant=variant) == len(p.src) * PATTERN_BYTES_PER_TRANSFER
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
