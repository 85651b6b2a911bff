"""Routing by symmetry (docs/simulation.md, "Symmetry"): the fast paths of topology/routing.py (one BFS for a Cayley
topology, HammingMesh board shifts, routes moved instead of recomputed) give the times the pair-by-pair routing gives.

The reference routes every transfer on its own with :func:`minimal_route` (two BFS per pair, no symmetry), so a
wrong translation, a wrong link permutation or a lost parallel cable changes some time.
"""

from __future__ import annotations

import numpy as np
import pytest

from directcoll.errors import UnsupportedShapeError
from directcoll.registry import build_pattern
from directcoll.reports.contenders import default_contenders
from directcoll.simulate import SWING_SST, NetworkParams, simulate
from directcoll.simulate import step as step_module
from directcoll.topology import minimal_route, parse
from directcoll.topology import routing as routing_module
from directcoll.topology.routing import route_entries, route_pattern
from directcoll.topology.symmetry import board_shifts

SIZES = 2.0 ** np.arange(5, 30, 3)
SLOW = pytest.mark.slow
SHAPES = [pytest.param("torus:4x4x3", marks=SLOW), pytest.param("hammingmesh:2x2:4x4", marks=SLOW), "hyperx:4x4",
          pytest.param("torus:3x3x2x2", marks=SLOW), "hammingmesh:1x1:3x4",
          pytest.param("hammingmesh:2x3:2x3", marks=SLOW)]


def _pairwise_groups(topo, src, dst, routing):
    for i, (s, d) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        yield (np.array([i]), *minimal_route(topo, s, d))


def _reference_times(monkeypatch, pattern, topo, params=SWING_SST):
    with monkeypatch.context() as m:
        m.setattr(routing_module, "_groups", _pairwise_groups)
        m.setattr(routing_module, "_placed", lambda topo, src, sel, pattern, routing: pattern)
        m.setattr(step_module, "_uniform", lambda *args: None)
        return simulate(pattern, topo, params).time(SIZES)


@pytest.mark.parametrize("spec", SHAPES)
def test_fast_routing_equals_pairwise(monkeypatch, spec):
    topo = parse(spec)
    timed = 0
    for c in default_contenders(topo, "allreduce"):
        name, variant = c.algorithm, c.variant
        try:  # a contender may refuse the shape (libswing: odd dimensions); compare lists it as skipped
            pattern = build_pattern(name, topo, "allreduce", variant=variant, **c.options)
        except UnsupportedShapeError:
            continue
        fast = simulate(pattern, topo, SWING_SST).time(SIZES)
        ref = _reference_times(monkeypatch, pattern, topo)
        np.testing.assert_allclose(fast, ref, rtol=1e-12, err_msg=f"{name} {variant} on {spec}")
        timed += 1
    assert timed >= 4


@pytest.mark.parametrize("spec", [pytest.param("torus:4x4x3", marks=pytest.mark.slow), "hyperx:4x4", "mesh:3x4"])
@pytest.mark.parametrize("name", ["ring", "bucket"])
def test_uniform_steps_with_packets_and_injection(monkeypatch, spec, name):
    """Translation-invariant steps (ring, bucket on Cayley tori) with every per-transfer term switched on."""
    topo = parse(spec)
    params = NetworkParams(alpha=1e-6, per_hop_latency=3e-7, gamma=1e-11, host_injection=80e9,
                           packet_size=4096, packet_header=64, forwarding="store-and-forward")
    pattern = build_pattern(name, topo, "allreduce")
    fast = simulate(pattern, topo, params).time(SIZES)
    np.testing.assert_allclose(fast, _reference_times(monkeypatch, pattern, topo, params), rtol=1e-12)
    if topo.is_cayley and name == "bucket":  # every bucket step is translation-invariant (a torus ring is a snake)
        sl = pattern.step(0)
        assert routing_module.uniform_offsets(topo, pattern.src[sl], pattern.dst[sl]) is not None


@pytest.mark.parametrize("spec", ["torus:4x4x3", "hyperx:4x4", "torus:3x3x2x2", "ring:7", "hypercube:4",
                                  "circulant:11:1,3"])
def test_cayley_route_is_minimal_route(spec):
    topo = parse(spec)
    for o in range(1, topo.num_nodes):
        links, share = minimal_route(topo, 0, o)
        fast_links, fast_share = route_pattern(topo, 0, o)
        assert fast_links.tolist() == links.tolist()
        np.testing.assert_allclose(fast_share, share, rtol=1e-15)


@pytest.mark.parametrize("spec", ["hammingmesh:2x2:4x4", "hammingmesh:1x1:3x4", "hammingmesh:3x2:2x3"])
def test_board_shifts_are_automorphisms(spec):
    topo = parse(spec)
    group = board_shifts(topo)
    assert group is not None
    key = set(zip(topo.link_src.tolist(), topo.link_dst.tolist(), strict=True))
    rng = np.random.default_rng(0)
    for shift in range(group.x * group.y):
        moved = group.move_links(np.arange(topo.num_links), shift)
        assert sorted(moved.tolist()) == list(range(topo.num_links))  # a permutation of the links
        u, v = group.move_nodes(topo.link_src, shift), group.move_nodes(topo.link_dst, shift)
        assert (topo.link_src[moved] == u).all() and (topo.link_dst[moved] == v).all()
        assert set(zip(u.tolist(), v.tolist(), strict=True)) == key
    src, dst = rng.integers(0, topo.num_compute, 40), rng.integers(0, topo.num_compute, 40)
    src, dst = src[src != dst], dst[src != dst]
    fast = route_entries(topo, src, dst)
    for i, (s, d) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
        links, share = minimal_route(topo, s, d)
        mine = fast.transfer == i
        got = dict(zip(fast.link[mine].tolist(), fast.share[mine].tolist(), strict=True))
        assert got == pytest.approx(dict(zip(links.tolist(), share.tolist(), strict=True)), rel=1e-15)


def test_board_shifts_refuse_other_topologies():
    assert board_shifts(parse("torus:4x4")) is None
    assert board_shifts(parse("mesh:4x4")) is None
