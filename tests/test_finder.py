"""Topology finder (Zhao et al. Sec. 5.4): the frontier is Pareto-efficient, its predictions are what the built
schedules measure, and at N = 1024, d = 4 it is at least as good as every Table 4 row our bases can build."""

from __future__ import annotations

import json

import pytest

from directcoll.cli.main import main
from directcoll.cost.analytic import analyze
from directcoll.errors import DirectcollError
from directcoll.synthesis.expansions import expanded_schedule
from directcoll.synthesis.finder import find_topology, min_diameter_unidirectional_circulant, theoretical_bound
from directcoll.topology.metrics import describe
from directcoll.topology.spec import parse
from directcoll.verify import verify


def _pareto_efficient(frontier):
    for a in frontier:
        for b in frontier:
            if a is not b:
                assert not (b.t_l_steps <= a.t_l_steps and b.t_b_m_over_b <= a.t_b_m_over_b), (a.spec, b.spec)


@pytest.mark.parametrize("nodes", [32, 64])
def test_frontier_predictions_equal_the_built_schedules(nodes):
    """Every frontier entry's predicted (T_L, T_B) is what its allgather schedule measures (Theorems 10-13)."""
    result = find_topology(nodes, 4)
    _pareto_efficient(result.frontier)
    assert result.best in result.frontier
    for c in result.frontier:
        topo = parse(c.spec)
        assert topo.num_compute == nodes and int(topo.out_degree.max()) == c.degree == 4
        schedule = expanded_schedule(c.spec, "allgather")
        assert verify(schedule).ok, c.spec
        assert schedule.num_steps == c.t_l_steps, c.spec
        assert analyze(schedule, topo).t_b_m_over_b == pytest.approx(c.t_b_m_over_b, abs=1e-9), c.spec


def test_table7_n32_rows():
    """Table 7, N = 32, d = 4: L(K_{4,4}) at 3α / 1.000 and a BW-optimal 4α topology (0.969)."""
    frontier = {(c.t_l_steps, round(c.t_b_m_over_b, 4)) for c in find_topology(32, 4).frontier}
    assert (3, 1.0) in frontier and (4, 0.9688) in frontier


def test_table4_rows_are_matched_or_beaten():
    """N = 1024, d = 4 (Table 4): every row our bases can build (Pi_{4,1024}; L^3(C(16,{3,4})); the BW-optimal
    end; the Diamond / DBJMod rows by other bases) has a frontier entry at least as good in T_L and T_B."""
    result = find_topology(1024, 4)
    _pareto_efficient(result.frontier)
    paper = [(5, 1.332), (6, 1.020), (8, 1.004), (11, 1.000), (20, 0.999)]
    for t_l, t_b in paper:
        assert any(c.t_l_steps <= t_l and c.t_b_m_over_b <= t_b + 5e-4 for c in result.frontier), (t_l, t_b)
    bound_t_l, bound_t_b = theoretical_bound(1024, 4)
    assert bound_t_l == 5 and all(c.t_l_steps >= bound_t_l and c.t_b_m_over_b >= bound_t_b - 1e-12
                                  for c in result.frontier)
    # the best for 1 MiB at α = 10 µs, B = 100 Gb/s minimises 2 (α T_L + T_B M/B)
    m_over_b = 2**20 * 8 / 100e9
    times = {c.spec: c.allreduce_time(10e-6, m_over_b) for c in result.frontier}
    assert result.best.spec == min(times, key=times.get)


def test_bidirectional_only():
    result = find_topology(64, 4, bidirectional_only=True)
    assert result.frontier and all(c.bidirectional for c in result.frontier)
    for c in result.frontier:
        topo = parse(c.spec)
        pairs = set(zip(topo.link_src.tolist(), topo.link_dst.tolist(), strict=True))
        assert all((b, a) in pairs for a, b in pairs), c.spec


def test_min_diameter_unidirectional_circulant_is_exhaustive():
    for n in (9, 16, 20):
        a, b = min_diameter_unidirectional_circulant(n)
        best = min(describe(parse(f"circulant:{n}:{x},{y}:uni")).diameter
                   for x in range(1, n) for y in range(x + 1, n)
                   if _connected(n, x, y))
        assert describe(parse(f"circulant:{n}:{a},{b}:uni")).diameter == best


def _connected(n, a, b):
    from math import gcd

    return gcd(gcd(a, b), n) == 1


def test_errors():
    with pytest.raises(DirectcollError, match="nodes >= 2"):
        find_topology(1, 4)
    with pytest.raises(DirectcollError, match="degree 4 is over N - 1 = 1"):
        find_topology(2, 4)
    with pytest.raises(DirectcollError, match="degree 99999 is over N - 1 = 7"):  # refused before any search
        find_topology(8, 99999)


def test_cli_json_and_schedule(tmp_path, capsys):
    out = tmp_path / "best.npz"
    code = main(["find-topology", "--nodes", "16", "--degree", "4", "--alpha", "10us", "--bandwidth", "100Gbps",
                 "--size", "1MiB", "-o", str(out), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["frontier"] and out.exists()
    for row in data["frontier"]:
        assert {"spec", "t_l_steps", "t_b_m_over_b"} <= set(row)
    assert data["best"] in {row["spec"] for row in data["frontier"]}
    code = main(["verify", str(out), "--json"])
    assert code == 0 and json.loads(capsys.readouterr().out)["ok"] is True


def test_cli_alltoall_column(capsys):
    """--alltoall adds LP (3)'s value to every frontier entry; it never exceeds the capacity bound."""
    from directcoll.cost.bounds import capacity_bound

    assert main(["find-topology", "--nodes", "32", "--degree", "4", "--alltoall", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    for row in data["frontier"]:
        assert 0 < row["alltoall_mcf"] <= capacity_bound(parse(row["spec"])) + 1e-12


# -- large N, spec round-trip, all-to-all tie-breaker --------------------------------------------------------------

_LARGE: dict = {}


def _large(nodes, degree):
    """find_topology at a large N, computed once per module (each takes a few seconds)."""
    if (nodes, degree) not in _LARGE:
        _LARGE[nodes, degree] = find_topology(nodes, degree)
    return _LARGE[nodes, degree]


@pytest.mark.slow
def test_prime_n_over_1024_finds_generalized_kautz():
    """N = 2003 (prime, over the old 1,024-node base limit), d = 4: Pi_{4,2003} and the circulant are bases."""
    specs = {c.spec for c in _large(2003, 4).frontier}
    assert "genkautz:4:2003" in specs and any(s.startswith("circulant:2003:") for s in specs)


@pytest.mark.parametrize(("degree", "t_l"), [(2, 11), (8, 4)])
@pytest.mark.slow
def test_n2000_reaches_generalized_kautz_latency(degree, t_l):
    """N = 2000: the lowest T_L is genkautz:d:2000's (11 steps at d = 2, 4 at d = 8), not 32 / 6."""
    result = _large(2000, degree)
    _pareto_efficient(result.frontier)
    assert min(c.t_l_steps for c in result.frontier) <= t_l
    assert result.deferred_solved < result.deferred  # the bounds skipped most deferred bases' LPs


@pytest.mark.parametrize(("nodes", "degree"), [pytest.param(2000, 2, marks=pytest.mark.slow),
                                               pytest.param(2000, 8, marks=pytest.mark.slow),
                                               pytest.param(2003, 4, marks=pytest.mark.slow), (64, 4), (72, 3)])
def test_frontier_specs_round_trip(nodes, degree):
    """Every frontier spec parses back to a topology with N nodes and degree d, and to the same spec."""
    for c in (_large(nodes, degree) if nodes > 1000 else find_topology(nodes, degree)).frontier:
        topo = parse(c.spec)
        assert topo.spec == c.spec and topo.num_compute == nodes and int(topo.out_degree.max()) == degree, c.spec


def test_product_factors_with_commas_are_not_split():
    """A product of products keeps factors such as circulant:8:1,3:uni whole (the N = 1500 spec bug)."""
    from directcoll.synthesis.finder import Candidate, _factors

    inner = Candidate("product(circulant:8:1,3:uni,ring:5:uni)", 40, 3, 7, 0.975, True, False, False,
                      "Cartesian product", factors=("circulant:8:1,3:uni", "ring:5:uni"))
    assert _factors(inner) == ("circulant:8:1,3:uni", "ring:5:uni")
    parse(f"line(product({','.join(_factors(inner) + ('ring:3:uni',))}))")


def test_generalized_kautz_bound_is_below_the_lp():
    """bfb_cost_bound: the diameter exactly and T_B never above the LP's (it prunes deferred bases)."""
    from directcoll.synthesis.bfb import bfb_cost
    from directcoll.synthesis.finder_bounds import bfb_cost_bound

    for spec in ("genkautz:3:40", "genkautz:5:72", "kautz:2:4", "line(bipartite:3)", "petersen"):
        t_l, t_b = bfb_cost(parse(spec))
        low_l, low_b = bfb_cost_bound(parse(spec))
        assert low_l == t_l and low_b <= float(t_b) + 1e-9, spec


@pytest.mark.parametrize(("nodes", "degree"), [(20, 2), (20, 3), (20, 4)])
def test_alltoall_breaks_ties(nodes, degree):
    """Among equal (T_L, T_B) points the frontier keeps the best all-to-all (LP (3) at this size)."""
    from directcoll.synthesis.mcf.link import alltoall_mcf

    result = find_topology(nodes, degree)
    assert result.ties
    for chosen, others in result.ties.items():
        value = {s: float(alltoall_mcf(parse(s)).value) for s in (chosen, *others)}
        assert value[chosen] >= max(value.values()) - 1e-9, value
    plain = {(c.t_l_steps, round(c.t_b_m_over_b, 9)) for c in find_topology(nodes, degree, tie_break=False).frontier}
    assert plain == {(c.t_l_steps, round(c.t_b_m_over_b, 9)) for c in result.frontier}


@pytest.mark.parametrize(("nodes", "degree"), [(60, 4), (96, 3)])
def test_bounds_first_keeps_the_frontier(monkeypatch, nodes, degree):
    """Skipping deferred bases' LPs by their bounds changes no frontier point (against solving them all)."""
    import directcoll.synthesis.finder as finder

    pruned = {(c.t_l_steps, round(c.t_b_m_over_b, 9)) for c in find_topology(nodes, degree, tie_break=False).frontier}
    monkeypatch.setattr(finder, "EAGER_BASE_NODES", 10**9)
    full = {(c.t_l_steps, round(c.t_b_m_over_b, 9)) for c in find_topology(nodes, degree, tie_break=False).frontier}
    assert pruned == full
