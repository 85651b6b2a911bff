"""Host-to-NIC bottleneck schedules (Basu et al. Sec. 3.2.2, Fig. 2, Fig. 3's 27-node torus) and the ILP baseline
above 16 ranks with a time limit (Sec. 5.3)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from directcoll.algorithms.alltoall.ilp import ILP_MAX_RANKS, ilp_alltoall, ilp_gap
from directcoll.errors import DirectcollError, ResourceError, UnsupportedShapeError
from directcoll.resources import memory_budget_override
from directcoll.simulate.params import NetworkParams
from directcoll.simulate.step import simulate
from directcoll.synthesis.mcf.link import alltoall_mcf
from directcoll.synthesis.mcf.paths import mcf_extp, pmcf
from directcoll.synthesis.mcf.schedules import mcf_schedule
from directcoll.synthesis.mcf.timestepped import tsmcf
from directcoll.topology import parse
from directcoll.verify import verify

ROOT = Path(__file__).resolve().parents[1]
# (spec, host bandwidth): Cayley (symmetric LPs) and not (per-source LPs), host links slower than the node's links
CASES = [("torus:3x3", 25e9), ("torus:3x4", 40e9), ("mesh:3x3", 30e9), ("petersen", 60e9)]
NIC = {"timestepped": False, "path": True, "extp": True}


def _time(schedule, topology, host, shard):
    """Step-model time (s) of an all-to-all of ``shard`` bytes per pair with the host injection limit, no latency."""
    params = NetworkParams(host_injection=host, link_latency=0.0)
    return float(simulate(schedule, topology, params).time([topology.num_compute * shard])[0])


@pytest.mark.parametrize("spec,host", CASES)
@pytest.mark.parametrize("variant", ["timestepped", "path", "extp"])
def test_host_schedules_verify_and_simulate_at_one_over_f(spec, host, variant):
    topo = parse(spec)
    s = mcf_schedule(topo, variant, host_bandwidth=host)
    assert verify(s).ok
    b = float(topo.link_bandwidth.max())
    f = alltoall_mcf(topo, host_bandwidth=host, nic_forwarding=NIC[variant]).value
    assert s.meta["host_bandwidth_bytes_per_s"] == host
    # the host link binds in every case: F below the no-host F
    assert f < alltoall_mcf(topo).value * (1 - 1e-6)
    shard = 2.0**20
    simulated = _time(s, topo, host, shard)
    assert simulated == pytest.approx(s.meta["schedule_time_m_over_b"] * shard / b, rel=1e-9)
    # the schedule reaches the fluid optimum of its forwarding model, 1 / F (up to the chunk rounding)
    assert simulated >= shard / (b * f) * (1 - 1e-9)
    assert simulated == pytest.approx(shard / (b * f), rel=1e-6 + 2 * s.meta["discretization_error"])


@pytest.mark.parametrize("variant", ["path", "extp"])
def test_path_schedules_with_host_links_route_through_switches(variant):
    """hammingmesh (fat-tree switches): the host links bound the injection, the routes cross the switches."""
    topo, host = parse("hammingmesh:2x2:2x2"), 20e9
    s = mcf_schedule(topo, variant, host_bandwidth=host)
    assert verify(s).ok
    f = alltoall_mcf(topo, host_bandwidth=host, nic_forwarding=True).value
    assert f == pytest.approx(host / float(topo.link_bandwidth.max()) / (topo.num_compute - 1), rel=1e-9)
    shard, b = 2.0**20, float(topo.link_bandwidth.max())
    assert _time(s, topo, host, shard) == pytest.approx(shard / (b * f), rel=1e-9)


def test_fig3_torus_flow_values_and_bound():
    """Basu Sec. 5.2: 3x3x3 torus, 25 Gb/s links, 100 Gb/s host: F = 2/27, (N - 1) F b = 6.01 GB/s; 1/9 without
    the bottleneck (and with NIC forwarding, the path schedules' fabric)."""
    topo = parse("links(torus:3x3x3,bandwidth=25gbps)")
    ts = tsmcf(topo, host_bandwidth="100Gbps")
    assert ts.value == pytest.approx(2 / 27, rel=1e-9) and ts.mcf_value == pytest.approx(2 / 27, rel=1e-9)
    assert 26 * ts.value * 3.125 == pytest.approx(6.01, abs=0.01)
    assert pmcf(topo, host_bandwidth="100Gbps").value == pytest.approx(1 / 9, rel=1e-9)
    assert mcf_extp(topo, host_bandwidth="100Gbps").value == pytest.approx(1 / 9, rel=1e-9)
    s = mcf_schedule(topo, "timestepped", host_bandwidth="100Gbps")
    assert verify(s).ok
    shard = 2.0**20
    # 26 shards of host-forwarded data per node at (N - 1) F b bytes/s
    assert _time(s, topo, 12.5e9, shard) == pytest.approx(26 * shard / (26 * 2 / 27 * 3.125e9), rel=1e-9)
    # without the host limit in the simulator the host-aware schedule is no faster than the fluid 1/9
    assert _time(s, topo, None, shard) >= shard / (3.125e9 / 9) * (1 - 1e-9)


def test_the_host_aware_lp_beats_the_blind_schedule_where_nodes_forward_unequal_shares():
    """mesh:3x3: the centre forwards most; the schedule built without the host link is 4/3 slower with it."""
    topo, host = parse("mesh:3x3"), 30e9
    aware = mcf_schedule(topo, "timestepped", host_bandwidth=host)
    blind = mcf_schedule(topo, "timestepped")
    shard = 2.0**20
    assert _time(blind, topo, host, shard) == pytest.approx(4 / 3 * _time(aware, topo, host, shard), rel=1e-6)


@pytest.mark.parametrize("variant", ["timestepped", "path", "extp"])
def test_a_host_link_that_does_not_bind_changes_nothing(variant):
    topo = parse("torus:3x3")
    plain = mcf_schedule(topo, variant)
    fast = mcf_schedule(topo, variant, host_bandwidth=1e15)
    assert verify(fast).ok
    assert fast.meta["lp_value"] == pytest.approx(plain.meta["lp_value"], rel=1e-9)
    assert fast.meta["schedule_time_m_over_b"] == pytest.approx(plain.meta["schedule_time_m_over_b"], rel=1e-9)
    assert "host_bandwidth_bytes_per_s" not in plain.meta


def test_forwarding_models_outside_the_paper_are_refused():
    with pytest.raises(UnsupportedShapeError, match="forwards in the host"):
        mcf_schedule("ring:4", "timestepped", host_bandwidth=1e9, nic_forwarding=True)
    for variant in ("path", "extp"):
        with pytest.raises(UnsupportedShapeError, match="source-routed"):
            mcf_schedule("ring:4", variant, host_bandwidth=1e9, nic_forwarding=False)
    with pytest.raises(DirectcollError, match="bandwidth 0.0 is out of range"):
        tsmcf("ring:4", host_bandwidth=0.0)


def test_ilp_above_16_ranks_needs_a_time_limit_and_reports_the_gap():
    topo = parse("torus:4x5")
    assert topo.num_compute == 20 > ILP_MAX_RANKS
    with pytest.raises(UnsupportedShapeError, match="time limit"):
        ilp_alltoall(topo)
    with pytest.raises(UnsupportedShapeError, match="time_limit must be > 0"):
        ilp_alltoall(topo, time_limit=0)
    s = ilp_alltoall(topo, time_limit=5.0)
    assert verify(s).ok
    m = s.meta
    assert m["ilp_status"] in ("Optimal", "Time limit reached"), m
    assert m["ilp_bound"] <= m["ilp_objective"] + 1e-9 and m["ilp_objective"] == m["max_link_load"]
    assert ilp_gap(m) == pytest.approx((m["ilp_objective"] - m["ilp_bound"]) / m["ilp_objective"], abs=1e-12)
    assert (ilp_gap(m) <= 1e-4) == (m["ilp_status"] == "Optimal")
    # a single path per pair is never faster than the fluid optimum
    assert m["ilp_objective"] >= 1 / alltoall_mcf(topo).value * (1 - 1e-9)
    with memory_budget_override(2**20), pytest.raises(ResourceError, match="ilp-disjoint MIP"):
        ilp_alltoall(topo, time_limit=5.0)


def _cli(*args):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "directcoll.cli.main", *args], capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.mark.slow
def test_cli_host_bandwidth_and_time_limit(tmp_path):
    out = _cli("schedule", "mcf", "torus:3x3", "--collective", "alltoall", "--method", "path", "--host-bandwidth",
               "25GB/s", "-o", str(tmp_path / "p.json"), "--json")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["meta"]["host_bandwidth_bytes_per_s"] == 25e9
    assert np.isclose(info["meta"]["lp_value"], 1 / 16)   # 8 shards per host at half a link's bandwidth
    out = _cli("schedule", "ilp-disjoint", "torus:4x5", "--collective", "alltoall", "--time-limit", "5", "-o",
               str(tmp_path / "i.json"), "--json")
    assert out.returncode == 0, out.stderr
    assert {"ilp_status", "ilp_bound", "ilp_objective"} <= set(json.loads(out.stdout)["meta"])
    for bad in (["mcf", "torus:3x3", "--collective", "alltoall", "--time-limit", "5"],
                ["ilp-disjoint", "torus:3x3", "--collective", "alltoall", "--host-bandwidth", "1GB/s"],
                ["ilp-disjoint", "torus:4x5", "--collective", "alltoall"]):
        out = _cli("schedule", *bad, "-o", str(tmp_path / "x.json"))
        assert out.returncode == 2 and out.stderr.startswith("directcoll: error: "), out.stderr
        assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
