"""All-to-all max concurrent flow (Basu et al. Sec. 3.1, 5.2; Zhao et al. App. A.5): the paper's numbers, the
three methods agreeing, flows that are feasible, bounds that hold, and clear errors."""

import json

import numpy as np
import pytest

from directcoll.cli.main import main
from directcoll.cost.bounds import capacity_bound, theorem1_bound
from directcoll.errors import DirectcollError, SolverError, SolverLimitError, TopologyError, UnsupportedShapeError
from directcoll.synthesis.mcf.link import alltoall_mcf
from directcoll.synthesis.mcf.network import flow_network
from directcoll.topology import Topology, parse

SMALL = ["ring:6", "torus:3x4", "hypercube:3", "complete:5", "kautz:2:2", "genkautz:2:10", "circulant:8:1,3"]
CAYLEY = ["ring:6", "ring:5:uni", "torus:3x4", "torus:2x2", "hypercube:3", "complete:5", "circulant:8:1,3",
          "hyperx:3x3", "twistedtorus:4x4:2"]


def torus_25g():
    """torus:3x3x3 with 6 x 25 Gb/s links per node (Basu Sec. 5.1's TACC cluster)."""
    return parse("torus:3x3x3", link_bandwidth=25e9 / 8)


def per_source_errors(r):
    """(largest capacity excess, largest conservation error) of the per-source flows."""
    net, n, f = r.network, r.num_compute, r.value
    excess = (r.link_load() - net.capacity).max()
    balance = np.zeros((n, net.num_nodes))
    np.add.at(balance, (r.flow_source, net.link_dst[r.flow_link]), r.flow_value)
    np.add.at(balance, (r.flow_source, net.link_src[r.flow_link]), -r.flow_value)
    want = np.zeros((n, net.num_nodes))
    want[:, :n] = f
    want[np.arange(n), np.arange(n)] = -(n - 1) * f
    assert (r.flow_value > 0).all() and (r.flow_source < n).all()
    return excess, np.abs(balance - want).max()


def per_pair_errors(r):
    """(largest excess of the pair flows over the capacities, largest conservation error per (s, d))."""
    net, n, f = r.network, r.num_compute, r.value
    load = np.bincount(r.commodity_link, weights=r.commodity_value, minlength=net.num_links)
    key = r.commodity_source * n + r.commodity_dest
    balance = np.zeros((n * n, net.num_nodes))
    np.add.at(balance, (key, net.link_dst[r.commodity_link]), r.commodity_value)
    np.add.at(balance, (key, net.link_src[r.commodity_link]), -r.commodity_value)
    s, d = np.divmod(np.arange(n * n), n)
    want = np.zeros_like(balance)
    pairs = np.flatnonzero(s != d)
    want[pairs, d[pairs]], want[pairs, s[pairs]] = f, -f
    assert (r.commodity_source != r.commodity_dest).all()
    return (load - net.capacity).max(), np.abs(balance - want).max()


# -- the paper's numbers -------------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["link", "symmetric", "auto"])
def test_torus_3x3x3_is_one_ninth(method):
    r = alltoall_mcf("torus:3x3x3", method=method)
    assert r.value == pytest.approx(1 / 9, rel=1e-9, abs=0)
    assert r.method == ("symmetric" if method == "auto" else method)


@pytest.mark.parametrize("method", ["link", "symmetric"])
def test_host_to_nic_bottleneck_gives_two_27ths(method):
    """Basu Sec. 5.2: 100 Gb/s host, 6 x 25 Gb/s links: f = 2/27 relative to 25 Gb/s (1/9 without the host)."""
    r = alltoall_mcf(torus_25g(), method=method, host_bandwidth="100Gbps")
    assert r.value == pytest.approx(2 / 27, rel=1e-9, abs=0)
    assert r.reference_bandwidth == 25e9 / 8 and r.host_bandwidth == 100e9 / 8
    assert r.throughput_bytes_per_s == pytest.approx(26 * 2 / 27 * 25e9 / 8)  # (N-1) f b = 6.02 GB/s
    assert r.network.num_nodes == 3 * 27 and r.network.num_links == 162 + 2 * 27
    assert alltoall_mcf(torus_25g(), method=method).value == pytest.approx(1 / 9, rel=1e-9)
    # a NIC that forwards by itself: the host link only carries injection and ejection, 26 f <= 4
    assert alltoall_mcf(torus_25g(), method=method, host_bandwidth="100Gbps",
                        nic_forwarding=True).value == pytest.approx(1 / 9, rel=1e-9)


def test_units_follow_the_reference_bandwidth():
    r = alltoall_mcf("torus:3x3x3", reference_bandwidth="100Gbps")  # links are 400 Gb/s by default
    assert r.value == pytest.approx(4 / 9, rel=1e-9)
    assert r.pair_rate_bytes_per_s == pytest.approx(alltoall_mcf("torus:3x3x3").pair_rate_bytes_per_s)
    assert r.alltoall_time(r.pair_rate_bytes_per_s) == pytest.approx(1.0)


# -- methods agree -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SMALL)
def test_decomposed_equals_link_and_the_per_pair_lp(spec):
    link = alltoall_mcf(spec, method="link")
    decomposed = alltoall_mcf(spec, method="decomposed", workers=1)
    pair = alltoall_mcf(spec, method="link", commodities="pair")
    assert decomposed.value == pytest.approx(link.value, rel=1e-7, abs=0)
    assert pair.value == pytest.approx(link.value, rel=1e-7, abs=0)
    for r in (decomposed, pair):
        excess, error = per_pair_errors(r)
        assert excess <= 1e-9 and error <= 1e-9


@pytest.mark.parametrize("spec", CAYLEY)
def test_symmetric_equals_link_on_cayley_topologies(spec):
    link = alltoall_mcf(spec, method="link")
    sym = alltoall_mcf(spec, method="symmetric")
    assert alltoall_mcf(spec).method == "symmetric"
    assert sym.value == pytest.approx(link.value, rel=1e-7, abs=0)
    excess, error = per_source_errors(sym)
    assert excess <= 1e-9 and error <= 1e-9


@pytest.mark.parametrize("spec, kwargs", [("genkautz:4:30", {}), ("genkautz:3:20", {}), ("kautz:2:3", {}),
                                          ("genkautz:4:25", {"host_bandwidth": "100GB/s"}),
                                          ("genkautz:4:30", {"host_bandwidth": "20GB/s", "nic_forwarding": True})])
def test_automorphism_method_equals_link_and_its_flows_are_feasible(spec, kwargs):
    link = alltoall_mcf(spec, method="link", **kwargs)
    auto = alltoall_mcf(spec, **kwargs)
    assert auto.method == "automorphism"
    assert auto.value == pytest.approx(link.value, rel=1e-9, abs=0)
    excess, error = per_source_errors(auto)
    assert excess <= 1e-9 and error <= 1e-9
    decomposed = alltoall_mcf(spec, method="decomposed", workers=1, **kwargs)  # children of one source per orbit
    assert decomposed.value == pytest.approx(link.value, rel=1e-9, abs=0)
    excess, error = per_pair_errors(decomposed)
    assert excess <= 1e-9 and error <= 1e-9


def test_automorphism_method_on_a_graph_without_symmetry_is_the_link_lp():
    """BLISS finds only the identity on this random graph: every node is its own orbit, N sources."""
    auto = alltoall_mcf("jellyfish:20:3", method="automorphism")
    assert auto.value == pytest.approx(alltoall_mcf("jellyfish:20:3", method="link").value, rel=1e-9)
    assert alltoall_mcf("jellyfish:20:3").method == "link"
    assert alltoall_mcf("genkautz:4:29").method == "automorphism"


def test_symmetric_optimum_can_sit_below_the_capacity_bound():
    """torus:3x4: the 4-long dimension's links carry 6 of every source's 10 link-units: F = 1/6 < 1/5."""
    assert alltoall_mcf("torus:3x4", method="symmetric").value == pytest.approx(1 / 6, rel=1e-9)
    assert capacity_bound("torus:3x4") == pytest.approx(1 / 5)


@pytest.mark.parametrize("solver", ["simplex", "ipm", "pdlp"])
def test_every_solver_reaches_the_same_vertex_value(solver):
    r = alltoall_mcf("genkautz:3:20", method="link", solver=solver)
    ref = alltoall_mcf("genkautz:3:20", method="link", solver="simplex")
    assert r.value == pytest.approx(ref.value, rel=1e-9, abs=0)
    excess, error = per_source_errors(r)
    assert excess <= 1e-9 and error <= 1e-9


def test_child_lps_in_a_process_pool_match_inline():
    inline = alltoall_mcf("torus:3x4", method="decomposed", workers=1)
    pooled = alltoall_mcf("torus:3x4", method="decomposed", workers=2)
    assert pooled.value == inline.value
    assert per_pair_errors(pooled)[1] <= 1e-9
    for name in ("commodity_source", "commodity_dest", "commodity_link", "commodity_value"):
        assert np.array_equal(getattr(pooled, name), getattr(inline, name)), name  # same LPs, same order


# -- feasibility of the returned flows -----------------------------------------------------------------------
@pytest.mark.parametrize("spec, kwargs", [
    ("torus:3x3x3", {"method": "link"}), ("torus:3x3x3", {"method": "symmetric"}),
    ("hammingmesh:2x2:2x2", {"method": "link"}), ("mesh:3x3", {"method": "decomposed", "workers": 1}),
    ("genkautz:2:10", {"method": "decomposed", "workers": 1, "host_bandwidth": 25e9}),
    ("torus:3x4", {"method": "symmetric", "host_bandwidth": "200Gbps"}),
])
def test_flows_conserve_and_respect_capacities(spec, kwargs):
    r = alltoall_mcf(spec, **kwargs)
    excess, error = per_source_errors(r)
    assert excess <= 1e-9 and error <= 1e-9
    if r.commodity_source is not None:
        excess, error = per_pair_errors(r)
        assert excess <= 1e-9 and error <= 1e-9
    # some link is saturated: F could not grow
    assert (r.link_load() >= r.network.capacity - 1e-9).any()


def test_hammingmesh_switches_carry_flow_but_demand_nothing():
    r = alltoall_mcf("hammingmesh:2x2:2x2", method="link")
    assert r.network.num_nodes == 24 and r.num_compute == 16 and r.value > 0
    used = np.unique(np.r_[r.network.link_src[r.flow_link], r.network.link_dst[r.flow_link]])
    assert used.max() >= 16  # traffic goes through the switches


# -- bounds --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SMALL + ["torus:3x3x3", "mesh:3x3", "hammingmesh:2x2:2x2"])
def test_bounds_hold(spec):
    f = alltoall_mcf(spec).value
    assert capacity_bound(spec) >= f * (1 - 1e-12)
    topo = parse(spec)
    deg = topo.out_degree[: topo.num_compute]
    if topo.num_nodes == topo.num_compute and deg.min() == deg.max():
        assert theorem1_bound(topo.num_compute, int(deg.max())) >= f * (1 - 1e-12)


def test_capacity_bound_is_tight_on_cubic_tori_and_with_the_host_bottleneck():
    assert capacity_bound("torus:3x3x3") == pytest.approx(1 / 9)
    assert capacity_bound(torus_25g(), host_bandwidth="100Gbps") == pytest.approx(2 / 27)
    assert capacity_bound(torus_25g(), host_bandwidth="100Gbps", nic_forwarding=True) == pytest.approx(1 / 9)


def test_theorem1_bound_counts_a_full_tree():
    # N = 7, d = 2: levels 1 + 2 + 4, distances 2 * 1 + 4 * 2 = 10
    assert theorem1_bound(7, 2) == pytest.approx(2 / 10)
    assert theorem1_bound(27, 6) == pytest.approx(6 / (6 + 2 * 20))


# -- errors --------------------------------------------------------------------------------------------------
def test_bad_requests_raise_clear_errors():
    with pytest.raises(UnsupportedShapeError, match="unknown all-to-all MCF method 'lp'; accepted: auto"):
        alltoall_mcf("ring:4", method="lp")
    with pytest.raises(UnsupportedShapeError, match="unknown LP solver"):
        alltoall_mcf("ring:4", solver="gurobi")
    with pytest.raises(UnsupportedShapeError, match="symmetric' needs a Cayley topology"):
        alltoall_mcf("kautz:2:2", method="symmetric")
    with pytest.raises(UnsupportedShapeError, match="needs method='link'"):
        alltoall_mcf("ring:4", method="decomposed", commodities="pair")
    with pytest.raises(DirectcollError, match="cannot read bandwidth"):
        alltoall_mcf("ring:4", host_bandwidth="fast")
    with pytest.raises(UnsupportedShapeError, match="host bandwidth must be > 0"):
        flow_network(parse("ring:4"), host_bandwidth=0.0)
    with pytest.raises(SolverError, match="HiGHS rejects option"):
        alltoall_mcf("ring:4", highs_options={"no_such_option": 1})
    with pytest.raises(UnsupportedShapeError, match="workers must be >= 1"):
        alltoall_mcf("ring:4", method="decomposed", workers=0)


def test_too_few_or_disconnected_compute_nodes():
    empty = np.zeros(0, dtype=np.int64)
    single = Topology("one", "single", 1, 1, empty, empty, np.zeros(0), np.zeros(0))
    with pytest.raises(TopologyError, match="at least 2 compute nodes"):
        alltoall_mcf(single)
    topo = parse("ring:4:uni")
    object.__setattr__(topo, "link_dst", topo.link_src.copy())  # every link a self-loop (Topology forbids this)
    with pytest.raises(TopologyError, match="not strongly connected"):
        alltoall_mcf(topo, method="link")


def test_highs_not_reaching_optimal_is_an_error():
    with pytest.raises(SolverLimitError, match=r"all-to-all MCF LP \(link\) on torus:3x4 .* stopped: Iteration limit"):
        alltoall_mcf("torus:3x4", method="link", solver="simplex",
                     highs_options={"presolve": "off", "simplex_iteration_limit": 1})


# -- command line --------------------------------------------------------------------------------------------
def test_cli_topology_describe_alltoall_json(capsys):
    assert main(["topology", "describe", "torus:3x3x3", "--alltoall", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["alltoall_mcf"] == pytest.approx(1 / 9, rel=1e-9)
    assert d["alltoall_mcf_method"] == "symmetric" and d["nodes"] == 27
    assert main(["topology", "describe", "torus:3x3x3", "--alltoall", "--method", "link", "--link-bandwidth",
                 "25Gbps", "--host-bandwidth", "100Gbps", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["alltoall_mcf"] == pytest.approx(2 / 27, rel=1e-9) and d["alltoall_mcf_method"] == "link"
    assert d["link_bandwidth_bytes_per_s"] == 25e9 / 8


def test_cli_topology_describe_alltoall_table_and_errors(capsys):
    assert main(["topology", "describe", "ring:6", "--alltoall"]) == 0
    out = capsys.readouterr().out
    assert "all-to-all max concurrent flow F" in out and "2/9" in out
    assert main(["topology", "describe", "ring:6", "--host-bandwidth", "100Gbps"]) == 2
    assert "add --alltoall" in capsys.readouterr().err
    assert main(["topology", "describe", "kautz:2:2", "--alltoall", "--method", "symmetric"]) == 2
    assert "Cayley" in capsys.readouterr().err
