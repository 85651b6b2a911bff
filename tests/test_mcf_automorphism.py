"""Automorphism groups from BLISS (directcoll.topology.automorphism) and the MCF methods built on them: the
``automorphism`` LP (one source per orbit, stabilizer-averaged) against the plain link LP, and the ``certified``
bounds (directcoll.synthesis.mcf.certified) against the exact LP."""

import json
import subprocess
import sys

import numpy as np
import pytest

from directcoll.errors import UnsupportedShapeError
from directcoll.registry import build
from directcoll.synthesis.mcf.certified import alltoall_mcf_certified, auto_method
from directcoll.synthesis.mcf.link import alltoall_mcf
from directcoll.synthesis.mcf.network import flow_network
from directcoll.synthesis.mcf.symmetry import automorphism_orbits
from directcoll.topology import parse
from directcoll.topology.automorphism import automorphism_group, orbit_labels, permute_links
from directcoll.topology.families.kautz_digraphs import automorphisms as kautz_automorphisms
from directcoll.topology.symmetry import board_shifts
from directcoll.verify import verify

CLI = [sys.executable, "-m", "directcoll.cli.main"]


def _is_automorphism(topo, perm):
    permute_links(topo.link_src, topo.link_dst, np.zeros(topo.num_links, dtype=np.int64), perm[None, :])
    return True


# -- the group -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, order, node_orbits, link_orbits", [
    ("torus:4x4", 384, 1, 1),            # Z4 wr: translations (16) x the 24 symmetries of the 4-cycle pair
    ("torus:3x4", 48, 1, 2),             # 12 translations x 4 reflections; the 3- and 4-long rings differ
    ("hypercube:4", 384, 1, 1),          # 2^4 4!
    ("circulant:13:1,5", 52, 1, 1),      # translations and x -> 5x (5 {1, 5} = {5, -1} mod 13, order 4)
    ("circulant:16:3,4", 32, 1, 2),      # translations and x -> -x only: offsets 3 and 4 stay apart
    ("ring:7:uni", 7, 1, 1),
    ("mesh:3x3", 8, 3, 4),               # the square's dihedral group: corners, edges, centre
])
def test_orders_and_orbits_of_known_groups(spec, order, node_orbits, link_orbits):
    g = automorphism_group(parse(spec))
    assert (g.order, g.num_node_orbits, g.num_link_orbits) == (order, node_orbits, link_orbits)
    topo = parse(spec)
    assert all(_is_automorphism(topo, p) for p in g.generators)


@pytest.mark.parametrize("spec", ["genkautz:4:20", "genkautz:3:12", "kautz:2:3", "genkautz:4:29"])
def test_kautz_groups_are_subgroups_of_the_bliss_group(spec):
    """The family-specific group (Zhao Def. 16's affine maps) is contained: every map is an automorphism and its
    orbits refine BLISS's."""
    topo = parse(spec)
    known = kautz_automorphisms(topo)
    g = automorphism_group(topo)
    assert g.order % len(known) == 0
    assert all(_is_automorphism(topo, p) for p in known)
    fine, coarse = orbit_labels(topo.num_nodes, known), g.node_orbit
    assert all(len(np.unique(coarse[fine == f])) == 1 for f in np.unique(fine))


def test_hammingmesh_board_shifts_lie_in_the_group_and_switches_stay_switches():
    topo = parse("hammingmesh:2x2:2x2")
    g = automorphism_group(topo)
    shifts = board_shifts(topo)
    n = topo.num_compute
    assert (g.generators[:, :n] < n).all() and (g.generators[:, n:] >= n).all()
    moved = shifts.move_nodes(np.arange(topo.num_nodes), 1)
    assert _is_automorphism(topo, moved)
    assert len(np.unique(g.node_orbit[:n])) == 1  # every board position is equivalent


def test_stabilizer_order_and_schreier_words():
    topo = parse("torus:4x4")
    g = automorphism_group(topo)
    assert automorphism_group(topo, fix=[5]).order * 16 == g.order  # orbit-stabilizer
    words = g.words(0)
    assert len(words) == 16
    for node, word in words.items():
        x = 0
        for i in word:
            x = int(g.generators[i][x])
        assert x == node


def test_capacities_and_parallel_links_restrict_the_group():
    topo = parse("torus:4x4")
    bw = topo.link_bandwidth.copy()
    bw[topo.link_src == 0] *= 2  # node 0's out-links are faster: it is fixed
    from directcoll.topology.model import Topology

    faster = Topology("t", "custom", 16, 16, topo.link_src, topo.link_dst, bw, topo.link_latency)
    g = automorphism_group(faster)
    assert g.node_orbit[0] == 0 and (g.node_orbit[1:] != 0).all()
    assert g.order == 384 // 16


# -- the automorphism method -----------------------------------------------------------------------------------
def _feasible(r):
    net, n, f = r.network, r.num_compute, r.value
    balance = np.zeros((n, net.num_nodes))
    np.add.at(balance, (r.flow_source, net.link_dst[r.flow_link]), r.flow_value)
    np.add.at(balance, (r.flow_source, net.link_src[r.flow_link]), -r.flow_value)
    want = np.zeros((n, net.num_nodes))
    want[:, :n] = f
    want[np.arange(n), np.arange(n)] = -(n - 1) * f
    return (r.link_load() - net.capacity).max() <= 1e-9 and np.abs(balance - want).max() <= 1e-9


@pytest.mark.parametrize("spec, kwargs", [
    ("genkautz:4:20", {}),                                  # vertex-transitive under BLISS: one source
    ("line(circulant:8:1,3:uni)", {}),                      # a line graph (not Cayley)
    ("mesh:3x4", {}),                                       # not vertex-transitive: 3 orbits
    ("punctured(torus:3x3x3,links=3,seed=0)", {}),          # almost no symmetry
    ("hammingmesh:2x2:2x2", {}),                            # switches
    ("petersen", {"host_bandwidth": "100GB/s"}),            # the host-to-NIC augmentation
    ("torus:3x4", {"host_bandwidth": "20GB/s", "nic_forwarding": True}),
])
def test_automorphism_equals_link_lp_and_flows_are_feasible(spec, kwargs):
    link = alltoall_mcf(spec, method="link", **kwargs)
    auto = alltoall_mcf(spec, method="automorphism", **kwargs)
    assert auto.value == pytest.approx(link.value, rel=1e-8, abs=0)
    assert _feasible(auto)


def test_vertex_transitive_graph_is_one_source_with_stabilizer_columns():
    topo = parse("line(circulant:8:1,3)")
    net = flow_network(topo)
    o = automorphism_orbits(net, topo)
    assert len(o.reps) == 1 and o.num_columns < net.num_links


def test_decomposed_children_moved_by_schreier_words_conserve():
    r = alltoall_mcf("mesh:3x4", method="decomposed", workers=1)
    net, n, f = r.network, r.num_compute, r.value
    key = r.commodity_source * n + r.commodity_dest
    balance = np.zeros((n * n, net.num_nodes))
    np.add.at(balance, (key, net.link_dst[r.commodity_link]), r.commodity_value)
    np.add.at(balance, (key, net.link_src[r.commodity_link]), -r.commodity_value)
    s, d = np.divmod(np.arange(n * n), n)
    pairs = np.flatnonzero(s != d)
    assert np.allclose(balance[pairs, d[pairs]], f, atol=1e-9)
    load = np.bincount(r.commodity_link, weights=r.commodity_value, minlength=net.num_links)
    assert (load <= net.capacity + 1e-9).all()


def test_extp_schedule_from_automorphism_flows_verifies():
    s = build("mcf", "line(circulant:8:1,3:uni)", "alltoall", variant="extp")
    assert verify(s).ok


# -- the certified method --------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, converges", [("jellyfish:20:3", True), ("jellyfish:30:3", True),
                                             ("xpander:20:4:2", False), ("genkautz:3:12", True)])
def test_certified_bounds_contain_the_exact_value(spec, converges):
    """The bounds always hold; where the Frank-Wolfe upper end converges fast they also reach the 1 % gap
    (xpander:20:4:2: the lower end is within 0.04 % of F after 2,000 iterations, the upper end 1.4 % above)."""
    exact = alltoall_mcf(spec, method="link").value
    seen = []
    b = alltoall_mcf_certified(spec, rel_gap=0.01, max_iterations=300, progress=lambda *a: seen.append(a))
    assert b.lower <= exact * (1 + 1e-9) and exact <= b.upper * (1 + 1e-9)
    assert b.converged == (b.gap <= 0.01)
    if converges:
        assert b.converged
    assert seen and seen[-1][3] == pytest.approx(b.gap)
    net = flow_network(parse(spec))
    assert 1 / np.max(b.link_load / net.capacity) == pytest.approx(b.lower, rel=1e-12)


def test_certified_refuses_bad_arguments():
    with pytest.raises(UnsupportedShapeError, match="rel_gap"):
        alltoall_mcf_certified("petersen", rel_gap=-1)
    with pytest.raises(UnsupportedShapeError, match="time_limit"):
        alltoall_mcf_certified("petersen", time_limit=0)


def test_auto_method_picks_symmetry_first():
    assert auto_method("torus:4x4")[0] == "symmetric"
    assert auto_method("mesh:3x4")[0] == "automorphism"
    assert auto_method("jellyfish:20:3")[0] == "link"
    assert auto_method("jellyfish:20:3", max_columns=10)[0] == "certified"


def test_cli_certified_json_and_progress():
    out = subprocess.run([*CLI, "topology", "describe", "jellyfish:20:3", "--alltoall",
                          "--method", "certified", "--target-gap", "1%", "--json"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["alltoall_mcf_method"] == "certified" and doc["alltoall_mcf_gap"] <= 0.01
    assert doc["alltoall_mcf_lower"] <= doc["alltoall_mcf_upper"]
    bad = subprocess.run([*CLI, "topology", "describe", "ring:4", "--alltoall",
                          "--time-limit", "5"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("directcoll: error:")
