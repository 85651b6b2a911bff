"""The cost model's claims: deficiencies of Sec. 2.2 and Table 2, T_L / T_B, alpha-beta-gamma times."""

import numpy as np
import pytest

from directcoll.cost import CostParams, analyze
from directcoll.errors import TopologyError
from directcoll.registry import build
from directcoll.reports.table2 import swing_b_congestion_limit, table2, to_markdown
from directcoll.topology import parse


def cost(name, spec, **kw):
    topo = parse(spec)
    return analyze(build(name, topo, **kw), topo)


def test_swing_b_is_bandwidth_optimal_with_congestion_from_distances():
    r = cost("swing", "torus:16x16")
    assert r.steps == 16 and r.t_l_steps == 16
    assert r.latency_deficiency == pytest.approx(2.0)
    assert r.bandwidth_deficiency == pytest.approx(1.0)
    assert r.bytes_per_rank == pytest.approx(2 * 255 / 256)
    # Sec. 4.1: sum_s delta(sigma(s)) / 2^(s+1), normalised; 16x16 has sigma = 0..3 (delta 1, 1, 3, 5)
    delta = [1, 1, 3, 5]
    num = sum(delta[s // 2] / 2 ** (s + 1) for s in range(8))
    den = sum(1 / 2 ** (s + 1) for s in range(8))
    assert r.congestion_deficiency == pytest.approx(num / den)


@pytest.mark.parametrize("spec, paper, tol", [("torus:8x8x8", 1.03, 0.02), ("torus:64x64", 1.19, 0.02)])
def test_table2_swing_b_congestion(spec, paper, tol):
    xi = cost("swing", spec).congestion_deficiency
    print(f"Swing-B Xi on {spec}: {xi:.4f} (paper {paper})")
    assert abs(xi - paper) / paper < tol


def test_swing_b_congestion_limit_closed_form():
    assert swing_b_congestion_limit(2) == pytest.approx(1.2, abs=0.01)
    assert swing_b_congestion_limit(4) == pytest.approx(1.008, abs=0.001)
    # the limit bounds every finite torus from above
    assert cost("swing", "torus:32x32").congestion_deficiency < swing_b_congestion_limit(2)


def test_ring_and_bucket_have_no_bandwidth_or_congestion_deficiency():
    for name, spec in [("ring", "torus:8x8"), ("bucket", "torus:8x8"), ("bucket", "torus:4x4x4")]:
        r = cost(name, spec)
        assert r.bandwidth_deficiency == pytest.approx(1.0), name
        assert r.congestion_deficiency == pytest.approx(1.0), name


def test_latency_optimal_recursive_doubling_sends_the_whole_vector_every_step():
    r = cost("recursive-doubling", "torus:8x8")
    assert r.steps == 6 and r.latency_deficiency == pytest.approx(1.0)
    assert r.bytes_per_rank == pytest.approx(6.0)
    # single port: Psi = D log2 p against the exact bound 2 (p-1)/p / 2D
    assert r.bandwidth_deficiency == pytest.approx(6 / (2 * 63 / 64 / 4))
    # mean distance of peers at 1, 2, 4 hops in each dimension
    assert r.congestion_deficiency == pytest.approx(7 / 3)


def test_t_b_counts_the_most_loaded_link():
    # unidirectional ring on a unidirectional ring topology: every link carries one block per step
    topo = parse("ring:8:uni")
    r = analyze(build("ring", topo, variant="unidirectional"), topo)
    # T_B = sum over 14 steps of (1/8) / b, in units of M/B with B = b (degree 1)
    assert r.t_b_m_over_b == pytest.approx(14 / 8)
    # recursive doubling across a bidirectional ring: distance-4 exchange splits over both directions
    topo = parse("ring:8")
    r = analyze(build("recursive-doubling", topo), topo)
    assert r.t_b_m_over_b == pytest.approx(2 * (1 + 2 + 2))  # loads 1, 2, 4/2 per step; B = 2 links


def test_time_grows_with_size_and_has_alpha_per_step():
    r = cost("swing", "torus:8x8")
    sizes = np.array([0, 1 << 10, 1 << 20])
    t = r.time(sizes, CostParams(alpha=1e-6))
    assert t[0] == pytest.approx(12e-6)
    assert np.all(np.diff(t) > 0)
    gamma = r.time(1 << 20, CostParams(alpha=0, gamma=1e-9)) - r.time(1 << 20, CostParams(alpha=0))
    assert gamma > 0


def test_schedule_and_topology_must_match():
    with pytest.raises(TopologyError, match="ranks"):
        analyze(build("swing", "torus:4x4"), parse("torus:8x8"))


def test_table2_small_tori_rows():
    rows = table2(dims=(2, 3), side=4, extra=())
    names = {r.algorithm for r in rows}
    assert names == {"ring", "rec.doub. (L)", "rec.doub. (B)", "bucket", "swing (L)", "swing (B)"}
    for r in rows:
        assert r.measured[0] > 0 and r.measured[1] >= 1 - 1e-9 and r.measured[2] >= 1 - 1e-9
        if r.algorithm in ("swing (L)", "rec.doub. (L)"):
            assert r.measured[0] == pytest.approx(1.0)
    swing_l = [r for r in rows if r.algorithm == "swing (L)"]
    rd_l = [r for r in rows if r.algorithm == "rec.doub. (L)"]
    for s, rd in zip(swing_l, rd_l, strict=True):  # Swing's peers are never farther than recursive doubling's
        assert s.distance_sum <= rd.distance_sum
    assert "swing (B)" in to_markdown(rows)
