"""The certified all-to-all bracket lower <= F <= upper (directcoll.synthesis.mcf.bracket) against the exact LP."""

import json

import numpy as np
import pytest

from directcoll.cli.main import main
from directcoll.errors import TopologyError, UnsupportedShapeError
from directcoll.synthesis.mcf.bracket import alltoall_mcf_bracket
from directcoll.synthesis.mcf.link import alltoall_mcf
from directcoll.synthesis.mcf.network import flow_network
from directcoll.topology import Topology, parse

SPECS = ["torus:3x3x3", "torus:3x3x2", "genkautz:4:30", "genkautz:2:10", "jellyfish:20:4:1", "xpander:20:4:2",
         "punctured(torus:4x4,links=2,seed=1)", "hammingmesh:2x2:2x2", "mesh:3x4"]


@pytest.mark.parametrize("spec", SPECS)
def test_bracket_contains_the_exact_value(spec):
    exact = alltoall_mcf(spec).value
    b = alltoall_mcf_bracket(spec, max_iterations=150)
    assert b.lower <= exact * (1 + 1e-9)
    assert exact <= b.upper * (1 + 1e-9)
    assert b.gap < 0.1  # and it is a useful bracket, not a trivial one


def test_bracket_with_the_host_bottleneck_contains_two_27ths():
    b = alltoall_mcf_bracket("torus:3x3x3", host_bandwidth="100Gbps", reference_bandwidth="25Gbps")
    assert b.lower <= 2 / 27 * (1 + 1e-9) <= b.upper * (1 + 1e-9)


@pytest.mark.parametrize("spec", ["genkautz:4:30", "torus:3x3x2", "hammingmesh:2x2:2x2"])
def test_lower_end_is_the_congestion_of_a_routing_it_returns(spec):
    b = alltoall_mcf_bracket(spec, max_iterations=50)
    net = flow_network(parse(spec))
    load = b.link_load
    assert load.shape == (net.num_links,) and np.all(load >= 0)
    assert 1 / np.max(load / net.capacity) == pytest.approx(b.lower, rel=1e-12)
    # every node other than a source receives what it forwards plus one unit from each other compute node
    n = net.num_compute
    net_in = np.bincount(net.link_dst, weights=load, minlength=net.num_nodes) - np.bincount(
        net.link_src, weights=load, minlength=net.num_nodes)
    assert np.allclose(net_in[:n], 0.0, atol=1e-9)  # each compute node receives n - 1 units and sends n - 1
    assert np.allclose(net_in[n:], 0.0, atol=1e-9)  # switches only forward


def test_iterations_stop_at_the_requested_gap():
    b = alltoall_mcf_bracket("genkautz:4:40", rel_gap=0.2)
    assert b.gap <= 0.2 and b.iterations < 400
    assert alltoall_mcf_bracket("genkautz:4:40", max_iterations=0).iterations == 0


def test_more_iterations_never_widen_the_bracket():
    short, long = (alltoall_mcf_bracket("jellyfish:30:4", max_iterations=k) for k in (20, 200))
    assert long.lower >= short.lower and long.upper <= short.upper


def test_bad_requests_raise_clear_errors():
    with pytest.raises(UnsupportedShapeError, match="rel_gap"):
        alltoall_mcf_bracket("torus:3x3", rel_gap=-1)
    with pytest.raises(UnsupportedShapeError, match="max_iterations"):
        alltoall_mcf_bracket("torus:3x3", max_iterations=2.5)
    with pytest.raises(TopologyError, match="at least 2 compute nodes"):
        alltoall_mcf_bracket(Topology(spec="one", kind="custom", num_compute=1, num_nodes=1,
                                      link_src=np.zeros(0, dtype=np.int64), link_dst=np.zeros(0, dtype=np.int64),
                                      link_bandwidth=np.zeros(0), link_latency=np.zeros(0)))


def test_cli_describe_bracket_json(capsys):
    assert main(["topology", "describe", "genkautz:4:30", "--alltoall", "--method", "bracket", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    exact = alltoall_mcf("genkautz:4:30").value
    assert out["alltoall_mcf_method"] == "bracket"
    assert out["alltoall_mcf_lower"] <= exact <= out["alltoall_mcf_upper"] * (1 + 1e-9)
    assert out["alltoall_mcf_upper"] <= out["alltoall_capacity_bound"] * (1 + 1e-9)
