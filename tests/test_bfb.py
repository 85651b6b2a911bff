"""BFB schedules (Zhao et al. Sec. 6.1): every schedule verifies, T_L = diameter, BW-optimal on tori and rings."""

from __future__ import annotations

import numpy as np
import pytest

from directcoll.algorithms import build, get
from directcoll.cost.analytic import analyze
from directcoll.errors import DirectcollError, UnsupportedShapeError
from directcoll.schedule.ir import Collective
from directcoll.synthesis.bfb import bfb_allgather, build_bfb
from directcoll.topology.routing import bfs_distances
from directcoll.topology.spec import parse
from directcoll.verify.exact import verify

SPECS = ["torus:3x3", "torus:4x4", "torus:5x4x3", "ring:7", "ring:8", "hypercube:3", "complete:5", "hyperx:3x3",
         "petersen", "circulant:13:opt4", "genkautz:3:20"]
BW_OPTIMAL = ["torus:3x3", "torus:4x4", "torus:5x4x3", "ring:7", "ring:8", "ring:5"]


def _topology(spec):
    try:
        return parse(spec)
    except DirectcollError as exc:
        pytest.skip(f"{spec} does not parse here: {exc}")


def _diameter(topo):
    n = topo.num_compute
    return int(bfs_distances(topo, np.arange(n))[:, :n].max())


@pytest.mark.parametrize("spec", SPECS)
def test_bfb_verifies_with_diameter_steps(spec):
    topo = _topology(spec)
    d = _diameter(topo)
    for coll, steps in (("allgather", d), ("reduce_scatter", d), ("allreduce", 2 * d)):
        schedule = build_bfb(topo, coll)
        assert schedule.collective is Collective.parse(coll)
        result = verify(schedule)
        assert result.ok, f"{spec} {coll}: {result.summary()}"
        assert schedule.num_steps == steps
        assert schedule.nblocks == topo.num_compute


@pytest.mark.parametrize("spec", BW_OPTIMAL)
def test_bfb_allgather_is_bandwidth_optimal(spec):
    topo = _topology(spec)
    n = topo.num_compute
    schedule = bfb_allgather(topo)
    report = analyze(schedule, topo)
    assert report.t_b_m_over_b == pytest.approx((n - 1) / n, abs=1e-9)
    assert schedule.meta["t_b_m_over_b_lp"] == pytest.approx((n - 1) / n, abs=1e-9)


@pytest.mark.parametrize("n", [5, 7, 8, 9])
def test_bfb_ring_has_half_the_steps(n):
    assert bfb_allgather(parse(f"ring:{n}")).num_steps == n // 2


def test_bfb_transfers_use_links_and_are_exact():
    topo = parse("torus:4x4")
    schedule = bfb_allgather(topo)
    links = set(zip(topo.link_src.tolist(), topo.link_dst.tolist(), strict=True))
    assert set(zip(schedule.src.tolist(), schedule.dst.tolist(), strict=True)) <= links
    # every rank receives exactly N-1 shards in total
    received = np.bincount(schedule.dst, weights=schedule.transfer_size * schedule.nblocks, minlength=16)
    assert np.allclose(received, 15)


def test_bfb_registered():
    alg = get("bfb")
    assert set(alg.collectives) == {"allgather", "reduce_scatter", "allreduce"}
    assert alg.variants == ("bandwidth",)
    schedule = build("bfb", "hypercube:3", "allreduce", variant="bandwidth")
    assert verify(schedule).ok and schedule.meta["algorithm"] == "bfb"
    with pytest.raises(UnsupportedShapeError):
        build("bfb", "ring:4", "allreduce", bogus=1)


def test_bfb_unidirectional_ring_uses_only_its_links():
    topo = parse("ring:6:uni")
    links = set(zip(topo.link_src.tolist(), topo.link_dst.tolist(), strict=True))
    for coll in ("allgather", "reduce_scatter", "allreduce"):
        schedule = build_bfb(topo, coll)
        assert verify(schedule).ok
        assert set(zip(schedule.src.tolist(), schedule.dst.tolist(), strict=True)) <= links
        assert schedule.num_steps == (5 if coll != "allreduce" else 10)
