"""All-to-all schedules from the MCF (Basu et al. Sec. 3.1.3, 3.1.4, 3.2.1, 4): tsMCF reaches the fluid F, the
lowered schedules verify, move data only where the flows say, and take 1 / F in the cost model."""

import json
import subprocess
import sys
from functools import cache

import numpy as np
import pytest

from directcoll.cli.main import main
from directcoll.cost.analytic import alltoall_time_m_over_b, analyze
from directcoll.errors import ScheduleError, UnsupportedShapeError
from directcoll.registry import ALGORITHMS, build
from directcoll.synthesis.mcf.link import alltoall_mcf
from directcoll.synthesis.mcf.paths import mcf_extp, path_sets, pmcf, widest_paths
from directcoll.synthesis.mcf.schedules import chunk_shards, mcf_schedule, path_schedule, tsmcf_schedule
from directcoll.synthesis.mcf.timestepped import diameter, tsmcf
from directcoll.topology import parse
from directcoll.verify import verify

SPECS = ["torus:3x3", "torus:3x3x3", "hypercube:3", "genkautz:2:10", "genkautz:3:12", "bipartite:3", "jellyfish:12:3",
         "xpander:12:3"]
VARIANTS = ["timestepped", "path", "extp"]


@cache
def mcf_value(spec):
    return alltoall_mcf(spec).value


@cache
def schedule(spec, variant):
    return build("mcf", spec, "alltoall", variant=variant)


# -- tsMCF (eq. 15-20) ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS)
def test_tsmcf_reaches_the_fluid_optimum(spec):
    r = tsmcf(spec)
    assert r.value == pytest.approx(mcf_value(spec), rel=1e-7)
    assert r.time == pytest.approx(r.step_time.sum(), rel=1e-12)
    # l_max starts at the diameter and grows one step at a time until F is reached
    assert sorted(r.tried) == list(range(diameter(r.network), r.lmax + 1)) and r.tried[r.lmax] == r.value
    # per-step per-link flows respect cap * U_t (eq. 16) and every pair's walks carry exactly one shard
    assert (r.link_load() <= r.network.capacity[None, :] * r.step_time[:, None] + 1e-9).all()
    walks = r.walks()
    n = r.num_compute
    per_pair = np.bincount(walks["source"] * n + walks["dest"], weights=walks["weight"], minlength=n * n)
    sources = np.unique(walks["source"])
    want = np.ones((n, n)) - np.eye(n)
    assert np.allclose(per_pair.reshape(n, n)[sources], want[sources], atol=1e-9)


@pytest.mark.parametrize("spec", ["torus:3x3", "bipartite:3", "hypercube:3"])
def test_tsmcf_symmetric_equals_source_aggregated(spec):
    sym, src = tsmcf(spec, method="symmetric", lmax=3), tsmcf(spec, method="source", lmax=3)
    assert sym.value == pytest.approx(src.value, rel=1e-9)
    assert sym.flow_source.max() == src.flow_source.max() == parse(spec).num_compute - 1


def test_tsmcf_never_beats_the_fluid_flow_and_needs_the_diameter():
    assert tsmcf("genkautz:3:12", lmax=2).value < mcf_value("genkautz:3:12") * (1 - 1e-6)  # D = 2 is not enough
    assert tsmcf("genkautz:3:12", lmax=4).value == pytest.approx(mcf_value("genkautz:3:12"), rel=1e-7)
    with pytest.raises(UnsupportedShapeError, match="diameter 2"):
        tsmcf("torus:3x3", lmax=1)
    with pytest.raises(UnsupportedShapeError, match="symmetric"):
        tsmcf("genkautz:2:10", method="symmetric")


# -- lowered schedules ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("spec", SPECS)
def test_lowered_schedules_verify_and_take_one_over_f(spec, variant):
    s = schedule(spec, variant)
    result = verify(s)
    assert result.ok, result.failure
    assert s.collective.value == "alltoall" and s.meta["variant"] == variant and s.meta["exact_chunking"]
    assert s.meta["discretization_error"] < 1e-7
    topo = parse(spec)
    t = alltoall_time_m_over_b(s, topo)
    assert t == pytest.approx(s.meta["schedule_time_m_over_b"], rel=1e-9)
    assert t == pytest.approx(1 / mcf_value(spec), rel=1e-7)  # every variant reaches F on these topologies
    counts = np.diff(s.route_offsets)
    links = s.route_links
    if variant == "timestepped":  # neighbours only, one link per transfer, at most lmax steps
        assert (counts == 1).all()
        assert (topo.link_src[links] == s.src).all() and (topo.link_dst[links] == s.dst).all()
        assert s.num_steps <= s.meta["lmax"]
    else:  # one step, every route a path from src to dst
        assert s.num_steps == 1 and (counts >= 1).all()
        first, last = s.route_offsets[:-1], s.route_offsets[1:] - 1
        assert (topo.link_src[links[first]] == s.src).all() and (topo.link_dst[links[last]] == s.dst).all()
        inner = np.ones(len(links), bool)
        inner[last] = False
        assert (topo.link_dst[links[:-1]][inner[:-1]] == topo.link_src[links[1:]][inner[:-1]]).all()


@pytest.mark.parametrize("spec", SPECS)
def test_path_schedule_takes_one_over_f_pmcf(spec):
    r = pmcf(spec, paths="disjoint")
    s = path_schedule(r)
    assert verify(s).ok
    assert r.lp_value <= mcf_value(spec) * (1 + 1e-9)
    assert alltoall_time_m_over_b(s, parse(spec)) == pytest.approx(1 / r.lp_value, rel=1e-9)
    assert r.value == pytest.approx(r.lp_value, rel=1e-9)


def test_shortest_paths_alone_can_lose_throughput():
    """Generalized Kautz graphs need some non-shortest paths: F_pMCF(shortest) < F = F_pMCF(disjoint)."""
    short, disjoint = pmcf("genkautz:2:10", paths="shortest"), pmcf("genkautz:2:10", paths="disjoint")
    assert short.lp_value == pytest.approx(0.75 * mcf_value("genkautz:2:10"), rel=1e-9)
    assert disjoint.lp_value == pytest.approx(mcf_value("genkautz:2:10"), rel=1e-9)
    assert alltoall_time_m_over_b(path_schedule(short), parse("genkautz:2:10")) == pytest.approx(1 / short.lp_value)
    with pytest.raises(UnsupportedShapeError, match="shortest paths"):
        pmcf("torus:4x4x4", paths="shortest", max_shortest=4)


def test_disjoint_path_sets_are_disjoint_and_maximum():
    net = tsmcf("genkautz:3:12", lmax=2).network
    p = path_sets(net, "disjoint")
    counts = np.diff(p.offsets)
    key = p.source * net.num_compute + p.dest
    for pair in np.unique(key)[:40]:
        sel = np.flatnonzero(key == pair)
        links = np.concatenate([p.links[p.offsets[i]: p.offsets[i + 1]] for i in sel])
        assert len(np.unique(links)) == len(links)  # link-disjoint
        s, d = divmod(int(pair), net.num_compute)
        assert len(sel) == min(np.sum(net.link_src == s), np.sum(net.link_dst == d))  # = the connectivity here
    assert counts.min() >= 1


def test_widest_path_extraction_takes_the_widest_first():
    # 0 -> 1 -> 3 (0.5), 0 -> 2 -> 3 (0.3), 1 -> 2 (0.1 more through 2)
    src, dst = [0, 1, 0, 2, 1], [1, 3, 2, 3, 2]
    paths = widest_paths(0, 3, [0, 1, 2, 3, 4], [0.6, 0.5, 0.3, 0.4, 0.1], src, dst, eps=1e-12)
    assert [p for p, _ in paths] == [[0, 1], [2, 3], [0, 4, 3]]
    assert [w for _, w in paths] == pytest.approx([0.5, 0.3, 0.1])


def test_extp_keeps_the_mcf_value_with_decomposed_flows():
    r = mcf_extp("genkautz:2:10", method="decomposed")
    assert r.value == pytest.approx(mcf_value("genkautz:2:10"), rel=1e-9)
    assert r.mcf_value == pytest.approx(mcf_value("genkautz:2:10"), rel=1e-12)
    assert r.paths_per_pair()[1] >= 2


# -- chunking and discretization ------------------------------------------------------------------------------
def test_chunks_are_the_fewest_that_represent_the_weights():
    c = chunk_shards([0, 0, 1, 1, 1], [1 / 3, 2 / 3, 0.25, 0.25, 0.5])
    assert c.exact and c.chunks == 12 and c.error < 1e-12
    assert c.counts.tolist() == [4, 8, 3, 3, 6] and c.first.tolist() == [0, 4, 0, 3, 6]


def test_rounding_is_largest_remainder_within_one_chunk():
    rng = np.random.default_rng(1)
    pair = np.repeat(np.arange(50), 3)
    weight = rng.random(150) + np.sqrt(2) / 10
    c = chunk_shards(pair, weight, max_chunks=8)
    assert not c.exact and c.chunks == 8
    share = weight / np.bincount(pair, weights=weight)[pair]
    assert c.error == pytest.approx(np.abs(c.counts / 8 - share).max()) and c.error < 1 / 8
    assert (np.bincount(pair, weights=c.counts) == 8).all()
    end = c.first + c.counts
    assert ((c.first >= 0) & (end <= 8)).all()


def test_a_rounded_timestepped_schedule_still_verifies_and_reports_its_error():
    s = tsmcf_schedule("genkautz:3:12", max_chunks=4)  # the exact chunking needs 10 chunks per shard
    assert verify(s).ok
    assert not s.meta["exact_chunking"] and s.meta["chunks"] == 4 and 0 < s.meta["discretization_error"] < 1 / 4
    t = alltoall_time_m_over_b(s, parse("genkautz:3:12"))
    assert t == pytest.approx(s.meta["schedule_time_m_over_b"], rel=1e-9)
    assert t >= s.meta["lp_time_m_over_b"] * (1 - 1e-9)  # nothing beats the LP


# -- registry, errors, CLI ------------------------------------------------------------------------------------
def test_registered_as_one_algorithm_with_three_variants():
    alg = ALGORITHMS["mcf"]
    assert alg.collectives == ("alltoall",) and alg.variants == tuple(VARIANTS)
    assert build("mcf", "torus:3x3", "alltoall").meta["variant"] == "timestepped"
    with pytest.raises(UnsupportedShapeError, match="implements alltoall"):
        build("mcf", "torus:3x3", "allreduce")
    with pytest.raises(UnsupportedShapeError, match="takes options"):
        mcf_schedule("torus:3x3", "path", lmax=3)
    with pytest.raises(UnsupportedShapeError, match="without switches"):
        build("mcf", "hammingmesh:2x2:2x2", "alltoall", variant="timestepped")
    assert verify(build("mcf", "hammingmesh:2x2:2x2", "alltoall", variant="extp")).ok  # paths cross switches
    with pytest.raises(ScheduleError, match="all-to-all"):
        alltoall_time_m_over_b(build("ring", "ring:4", "allgather"), parse("ring:4"))


def test_cost_of_the_direct_all_to_all_uses_minimal_routing():
    topo = parse("genkautz:3:12")
    direct = build("direct", topo, "alltoall")
    assert analyze(direct, topo).alltoall_time_m_over_b == pytest.approx(7.0)  # > 1 / F = 6.6
    assert analyze(build("ring", "ring:4", "allgather"), parse("ring:4")).alltoall_time_m_over_b is None


@pytest.mark.parametrize("method", VARIANTS)
def test_cli_round_trip(tmp_path, capsys, method):
    path = tmp_path / f"{method}.json"
    assert main(["schedule", "mcf", "genkautz:3:12", "--collective", "alltoall", "--method", method,
                 "-o", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["meta"]["variant"] == method
    assert main(["verify", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"]
    assert main(["cost", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["alltoall_time_m_over_b"] == pytest.approx(6.6, rel=1e-9)
    assert main(["schedule", "mcf", "torus:3x3", "--collective", "alltoall", "--method", "path", "--variant",
                 "extp", "-o", str(path)]) == 2
    assert "disagree" in capsys.readouterr().err


@pytest.mark.parametrize("module", ["directcoll.synthesis.mcf.schedules", "directcoll.synthesis.mcf.timestepped",
                                    "directcoll.synthesis.mcf.paths"])
def test_imports_alone(module):
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("spec", ["punctured(torus:3x3,links=1,seed=2)", "punctured(torus:4x4,nodes=1,seed=5)"])
def test_lowered_schedules_on_punctured_tori(spec, variant):
    """Failure studies (Basu Sec. 5): on a torus with a cut cable or a dead node the schedules still verify and
    take at most a rounding step more than 1/F."""
    s = schedule(spec, variant)
    assert verify(s).ok
    t = alltoall_time_m_over_b(s, parse(spec))
    assert 1 / mcf_value(spec) * (1 - 1e-9) <= t <= 1 / mcf_value(spec) * (1 + s.meta["discretization_error"] + 1e-7)
