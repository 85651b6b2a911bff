"""The SMPI engine: SimGrid platforms from topologies (always) and libdirectcoll inside SimGrid SMPI (skipped,
saying why, without SimGrid's smpicc and smpirun: ``apt-get install libsimgrid-dev``).

Source: docs/runtime.md, "The SMPI engine".
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from directcoll.errors import MissingDependencyError, ResourceError
from directcoll.resources import memory_budget_override
from directcoll.topology import parse
from directcoll.topology.paths import bfs_distances
from directcoll.topology.routing import dor_route
from directcoll.topology.simgrid import platform_size, route_kind, write_platform

pytestmark = pytest.mark.smpi

CLI = [sys.executable, "-m", "directcoll.cli.main"]


def _platform(spec: str, **kw):
    """(topology, write_platform's answer, hosts, links {id: (bandwidth, latency)}, routes {(src, dst): [link ids]})"""
    topo = parse(spec)
    buf = io.StringIO()
    info = write_platform(topo, buf, **kw)
    root = ET.fromstring(buf.getvalue().split("\n", 2)[2])  # after the XML declaration and the DOCTYPE
    zone = root.find("zone")
    assert zone.get("routing") == "Full"
    hosts = [h.get("id") for h in zone.findall("host")]
    links = {lk.get("id"): (float(lk.get("bandwidth").removesuffix("Bps")), float(lk.get("latency").removesuffix("s")))
             for lk in zone.findall("link")}
    routes = {}
    for r in zone.findall("route"):
        assert r.get("symmetrical") == "NO"
        routes[(int(r.get("src")[1:]), int(r.get("dst")[1:]))] = [c.get("id") for c in r.findall("link_ctn")]
    return topo, info, hosts, links, routes


def test_platform_of_a_torus_has_our_hosts_links_values_and_dor_routes():
    topo, info, hosts, links, routes = _platform("torus:4x4", link_bandwidth=50e9, link_latency=1e-7,
                                                 per_hop_latency=3e-7)
    assert hosts == [f"h{r}" for r in range(16)]
    assert sorted(links) == sorted(f"l{i}" for i in range(topo.num_links))
    assert {v for v in links.values()} == {(50e9, 4e-7)}  # link latency + per-hop latency
    assert len(routes) == 16 * 15 == info["routes"] and info["routing"] == "dor"
    for s, t in [(0, 1), (0, 5), (3, 12), (0, 10), (10, 0), (6, 9), (15, 0)]:  # (0, 10) and (10, 0): antipodal ties
        assert routes[(s, t)] == [f"l{x}" for x in dor_route(topo, s, t)[0].tolist()]
    assert info["elements"] == platform_size(topo)["elements"] == sum(len(v) for v in routes.values())


def test_platform_keeps_a_topologys_own_link_values():
    topo, _, _, links, _ = _platform("ring:4")
    for i in range(topo.num_links):
        assert links[f"l{i}"] == (float(topo.link_bandwidth[i]), float(topo.link_latency[i]))


@pytest.mark.parametrize("spec", ["circulant:16:1,5", "hammingmesh:2x2:2x2", "genkautz:2:16"])
def test_platform_routes_are_shortest_paths_elsewhere(spec):
    topo, info, hosts, links, routes = _platform(spec)
    n = topo.num_compute
    assert info["routing"] == route_kind(topo) == "shortest" and len(hosts) == n
    dist = bfs_distances(topo, list(range(n)))[:, :n]
    src = {f"l{i}": int(s) for i, s in enumerate(topo.link_src)}
    dst = {f"l{i}": int(d) for i, d in enumerate(topo.link_dst)}
    for (s, t), path in routes.items():
        assert len(path) == dist[s, t]
        assert src[path[0]] == s and dst[path[-1]] == t  # a walk from s to t, link after link
        assert all(dst[a] == src[b] for a, b in zip(path, path[1:], strict=False))


def test_platform_with_host_injection_adds_a_link_at_each_end():
    _, _, _, links, routes = _platform("torus:2x2", host_injection=25e9)
    assert links["out0"] == (25e9, 0.0) and links["in3"] == (25e9, 0.0)
    assert routes[(0, 3)][0] == "out0" and routes[(0, 3)][-1] == "in3"


def test_platform_over_the_budget_is_refused():
    with memory_budget_override(1 << 20), pytest.raises(ResourceError, match="SimGrid platform of torus:16x16"):
        write_platform(parse("torus:16x16"), io.StringIO())
    size = platform_size(parse("torus:32x32"))  # 1024 ranks: 1,047,552 routes, 16 hops on average
    assert size["routes"] == 1024 * 1023 and size["elements"] == 1024 * 1023 * 16 * 1024 // 1023


def test_topology_export_simgrid_cli(tmp_path):
    out = tmp_path / "p.xml"
    done = subprocess.run([*CLI, "topology", "export", "torus:4x4", "--format",
                           "simgrid", "-o", str(out), "--json"], capture_output=True, text=True, check=True)
    doc = json.loads(done.stdout)
    assert doc["format"] == "simgrid" and doc["routes"] == 240 and doc["links"] == 64
    assert out.read_text().count("<route ") == 240


# -- inside SimGrid SMPI -------------------------------------------------------------------------------------------
try:
    from directcoll.runtime import smpi

    smpi.find_smpi()
    WHY = ""
except MissingDependencyError as exc:
    WHY = str(exc)
needs_smpi = pytest.mark.skipif(bool(WHY), reason=f"no SimGrid: {WHY}")


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """A private cache for the SMPI program and platforms, restored after."""
    old = os.environ.get("DIRECTCOLL_CACHE")
    os.environ["DIRECTCOLL_CACHE"] = str(tmp_path_factory.mktemp("smpi") / "cache")
    yield
    if old is None:
        os.environ.pop("DIRECTCOLL_CACHE", None)
    else:
        os.environ["DIRECTCOLL_CACHE"] = old


@needs_smpi
def test_allreduce_on_a_simulated_4x4_torus_is_correct_and_timed_like_the_flow_model(cache):
    from directcoll.registry import build
    from directcoll.simulate import resolve_network
    from directcoll.simulate.flow import simulate_flow

    topo, params, _ = resolve_network("torus:4x4", "swing-sst")
    doc = smpi.smpi_run(topo, params, "allreduce", [("ring", None), ("swing", "bandwidth")], [8, 1 << 20])
    rows = {(r["algorithm"], r["size"]): r for r in doc["results"]}
    assert len(rows) == 4 and doc["ranks"] == 16 and doc["platform"]["routing"] == "dor"
    for row in rows.values():
        assert row["correct"] and row["served"] and not row["late"]
        assert row["time_s"] > 0 and row["native_time_s"] > 0  # ours and SMPI's own, both reported
    for name, variant in [("ring", None), ("swing", "bandwidth")]:
        flow = simulate_flow(build(name, topo, variant=variant), topo, 1 << 20, params, "dor").time_s
        # one-hop, equal-size transfers per step: CM02's latency + bytes / bandwidth is the flow model's form
        assert rows[(name, 1 << 20)]["time_s"] == pytest.approx(flow, rel=0.02), name
    assert rows[("ring", 8)]["bytes"] == 128  # rounded up to one float64 per rank, as directcoll run does


@needs_smpi
@pytest.mark.parametrize("collective,algorithm", [("reduce_scatter", "swing"), ("allgather", "ring"),
                                                  ("alltoall", "direct")])
def test_other_collectives_on_a_simulated_torus(cache, collective, algorithm):
    from directcoll.simulate import resolve_network

    topo, params, _ = resolve_network("torus:2x2", "swing-sst")
    doc = smpi.smpi_run(topo, params, collective, [(algorithm, None)], [64, 4096])
    assert [(r["correct"], r["served"]) for r in doc["results"]] == [(True, True)] * 2


@needs_smpi
def test_a_call_that_falls_through_is_counted(cache, tmp_path):
    from directcoll.simulate import resolve_network

    topo, params, _ = resolve_network("torus:2x2", "swing-sst")
    platform, _ = smpi.platform_path(topo, params)
    hosts = tmp_path / "hosts"
    hosts.write_text("h0\nh1\nh2\nh3\n")
    rows, calls = smpi.run_program(smpi.driver_path(), platform, hosts, 4, "allreduce", [64], program=None)
    assert rows[0]["correct"] and calls["served"] == 0 and calls["fell_through"] == 4 * 2
    assert calls["reasons"] == ["DIRECTCOLL_SCHEDULES is not set"]


@needs_smpi
def test_run_engine_smpi_cli(cache):
    env = {**os.environ}
    done = subprocess.run([*CLI, "run", "torus:2x2", "--engine", "smpi", "--sizes",
                           "1KiB", "--algorithms", "ring,recursive-doubling", "--repeat", "1", "--json"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["engine"] == "smpi" and [r["algorithm"] for r in doc["results"]] == ["ring", "recursive-doubling"]
    assert all(r["correct"] and r["served"] for r in doc["results"])
    assert np.isfinite([r["native_time_s"] for r in doc["results"]]).all()


def test_run_engine_smpi_refuses_a_hostfile():
    done = subprocess.run([*CLI, "run", "torus:2x2", "--engine", "smpi", "--hostfile",
                           "h"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [done.stderr.strip()] and "--hostfile launches real ranks" in done.stderr


def test_params_without_engine_smpi_is_refused():
    done = subprocess.run([*CLI, "run", "torus:2x2", "--params", "swing-sst"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2 and "--params swing-sst: network parameters apply to simulated ranks" in done.stderr
