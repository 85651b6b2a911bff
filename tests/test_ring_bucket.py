"""Ring (Sec. 2.3.1) and bucket (Sec. 2.3.4, 5.2) schedules: exact verification, step counts, bytes, errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from directcoll import registry
from directcoll.algorithms.bucket import bucket_owner, build_bucket
from directcoll.algorithms.ring import (
    build_ring,
    default_variant,
    hamiltonian_cycles_2d,
    ring_order,
    ring_reduce_scatter,
)
from directcoll.errors import UnsupportedShapeError
from directcoll.topology import families as fam
from directcoll.topology.model import Topology
from directcoll.topology.spec import parse
from directcoll.verify import verify

COLLECTIVES = ("allreduce", "reduce_scatter", "allgather")
SPECS = ["torus:4x4", "torus:8x8", "torus:6x10", "torus:7", "torus:16x4", "torus:3x3x2", "torus:2x2",
         "ring:13", "ring:8:uni", "hypercube:3", "mesh:3x5"]
HAMILTONIAN_OK = ["torus:4x4", "torus:8x8", "torus:16x4", "torus:4x16", "torus:20x4", "torus:2x2", "torus:4x2"]
HAMILTONIAN_BAD = [(6, 4), (4, 6), (12, 4), (4, 12), (5, 3), (10, 5)]


def assert_ok(schedule):
    result = verify(schedule)
    assert result.ok, result.summary()


def torus_neighbours(topology: Topology, src, dst) -> np.ndarray:
    """Whether every (src, dst) pair differs by +-1 (mod size) in exactly one coordinate."""
    shape = np.asarray(topology.shape)
    diff = (topology.coords(dst) - topology.coords(src)) % shape
    unit = (diff == 1) | (diff == shape - 1)
    return ((diff != 0).sum(axis=1) == 1) & unit.any(axis=1)


# -- ring --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("variant", ["unidirectional", "bidirectional", None])
@pytest.mark.parametrize("collective", COLLECTIVES)
def test_ring_verifies(spec, variant, collective):
    schedule = build_ring(parse(spec), collective, variant=variant)
    assert_ok(schedule)
    assert schedule.meta["algorithm"] == "ring"
    rings = schedule.meta["ports"]
    n = parse(spec).num_compute
    assert schedule.nblocks == rings * n
    assert schedule.num_steps == (n - 1) * (2 if collective == "allreduce" else 1)


@pytest.mark.parametrize("spec", HAMILTONIAN_OK)
@pytest.mark.parametrize("collective", COLLECTIVES)
def test_ring_hamiltonian_verifies(spec, collective):
    topo = parse(spec)
    schedule = build_ring(topo, collective, variant="hamiltonian")
    assert_ok(schedule)
    assert schedule.meta["variant"] == "hamiltonian" and schedule.meta["ports"] == 4
    assert schedule.nblocks == 4 * topo.num_compute
    assert np.all(torus_neighbours(topo, schedule.src, schedule.dst))
    assert default_variant(topo) == "hamiltonian"
    assert build_ring(topo, collective, ports=4).num_transfers == schedule.num_transfers


@pytest.mark.parametrize("shape", [(8, 8), (16, 4), (4, 16), (20, 4), (4, 2), (2, 2), (3, 3), (6, 2), (6, 6), (9, 3)])
def test_hamiltonian_cycles_are_edge_disjoint(shape):
    h1, h2 = hamiltonian_cycles_2d(shape)
    n = shape[0] * shape[1]
    topo = fam.torus(shape)
    keys = []
    for h in (h1, h2):
        assert h[0] == 0 and sorted(h.tolist()) == list(range(n))
        nxt = np.roll(h, -1)
        assert np.all(torus_neighbours(topo, h, nxt))
        # a link is (lower endpoint along the move, dimension); "+" moves only, so key = (node, dim)
        diff = (topo.coords(nxt) - topo.coords(h)) % np.asarray(shape)
        dim = np.argmax(diff != 0, axis=1)
        keys.append(set(zip(h.tolist(), dim.tolist(), strict=True)))
    assert not keys[0] & keys[1]
    if min(shape) > 2:  # no parallel cables: the undirected node pairs are disjoint too
        pairs = [{frozenset(p) for p in zip(h.tolist(), np.roll(h, -1).tolist(), strict=True)} for h in (h1, h2)]
        assert not pairs[0] & pairs[1]


@pytest.mark.parametrize("shape", HAMILTONIAN_BAD)
def test_hamiltonian_rejects_shapes(shape):
    with pytest.raises(UnsupportedShapeError, match="gcd"):
        hamiltonian_cycles_2d(shape)
    topo = fam.torus(shape)
    with pytest.raises(UnsupportedShapeError, match=f"{shape[0]}x{shape[1]}"):
        build_ring(topo, "allreduce", variant="hamiltonian")
    assert default_variant(topo) == "bidirectional"
    assert_ok(build_ring(topo, "allreduce"))


@pytest.mark.parametrize("spec", ["torus:3x3x2", "mesh:4x4", "ring:8", "hypercube:2"])
def test_hamiltonian_needs_2d_torus(spec):
    with pytest.raises(UnsupportedShapeError, match="2D torus"):
        build_ring(parse(spec), "allreduce", variant="hamiltonian")


def test_ring_default_variants():
    assert default_variant(parse("ring:8:uni")) == "unidirectional"
    assert default_variant(parse("ring:8")) == "bidirectional"
    assert default_variant(parse("torus:3x3x2")) == "bidirectional"
    assert default_variant(parse("torus:8x8")) == "hamiltonian"
    assert build_ring(parse("ring:8:uni"), "allreduce").meta["variant"] == "unidirectional"


@pytest.mark.parametrize("ports, variant", [(1, "unidirectional"), (2, "bidirectional"), (4, "hamiltonian")])
def test_ring_ports_select_variant(ports, variant):
    schedule = build_ring(parse("torus:8x8"), "allreduce", ports=ports)
    assert schedule.meta == {"algorithm": "ring", "variant": variant, "ports": ports}


@pytest.mark.parametrize("ports", [0, 3, 5, 8])
def test_ring_rejects_ports(ports):
    with pytest.raises(UnsupportedShapeError, match="ports"):
        build_ring(parse("torus:8x8"), "allreduce", ports=ports)


def test_ring_rejects_conflicting_ports_and_variant():
    with pytest.raises(UnsupportedShapeError, match="contradicts"):
        build_ring(parse("torus:8x8"), "allreduce", variant="bidirectional", ports=1)


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:3x5", "torus:3x3x2", "mesh:3x5", "torus:2x3x4"])
def test_ring_order_is_snake(spec):
    topo = parse(spec)
    order = ring_order(topo)
    assert sorted(order.tolist()) == list(range(topo.num_compute))
    diff = np.abs(np.diff(topo.coords(order), axis=0))
    assert np.all(diff.sum(axis=1) == 1), "consecutive ranks must be grid neighbours (no wrap-around)"


def test_ring_order_1d():
    assert ring_order(parse("ring:5")).tolist() == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("p", [2, 3, 7, 16])
@pytest.mark.parametrize("direction", [1, -1])
def test_ring_reduce_scatter_steps_and_owner(p, direction):
    order = np.random.default_rng(p).permutation(p)
    rs = ring_reduce_scatter(order, direction)
    assert rs.num_steps == p - 1
    assert rs.nranks == p and rs.nblocks == p
    assert rs.owner.tolist() == order.tolist()
    assert np.all(rs.transfer_size == pytest.approx(1 / p))
    pos = np.argsort(order)
    assert np.all((pos[rs.dst] - pos[rs.src]) % p == direction % p)
    assert_ok(rs)


def test_ring_reduce_scatter_rejects_bad_input():
    with pytest.raises(UnsupportedShapeError, match="permutation"):
        ring_reduce_scatter([0, 0, 1])
    with pytest.raises(UnsupportedShapeError, match="direction"):
        ring_reduce_scatter([0, 1, 2], direction=2)


@pytest.mark.parametrize("spec", ["ring:8:uni", "torus:4x4", "torus:3x5"])
def test_ring_unidirectional_bytes(spec):
    topo = parse(spec)
    p = topo.num_compute
    schedule = build_ring(topo, "allreduce", variant="unidirectional")
    sent = np.bincount(schedule.src, weights=schedule.transfer_size, minlength=p)
    assert np.allclose(sent, 2 * (p - 1) / p)


# -- bucket ------------------------------------------------------------------------------------------------
BUCKET_SPECS = SPECS + ["torus:8x8x8", "hyperx:3x4", "hammingmesh:2x2:2x2"]


@pytest.mark.parametrize("spec", BUCKET_SPECS)
@pytest.mark.parametrize("collective", COLLECTIVES)
def test_bucket_verifies(spec, collective):
    topo = parse(spec)
    schedule = build_bucket(topo, collective)
    assert_ok(schedule)
    d, dmax = len(topo.shape), max(topo.shape)
    assert schedule.meta == {"algorithm": "bucket", "variant": "bandwidth", "ports": 2 * d}
    assert schedule.nblocks == 2 * d * topo.num_compute
    assert schedule.num_steps == d * (dmax - 1) * (2 if collective == "allreduce" else 1)


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:6x10", "torus:3x3x2", "torus:16x4"])
@pytest.mark.parametrize("collective", COLLECTIVES)
def test_bucket_fewer_ports(spec, collective):
    topo = parse(spec)
    for ports in range(1, 2 * len(topo.shape) + 1):
        schedule = build_bucket(topo, collective, ports=ports)
        assert schedule.meta["ports"] == ports
        assert schedule.nblocks == ports * topo.num_compute
        assert_ok(schedule)


@pytest.mark.parametrize("spec", ["torus:8x8", "torus:6x10", "torus:16x4", "torus:3x4x5"])
def test_bucket_links_used_once_per_step(spec):
    """Every transfer is a neighbour hop and no directed pair carries two transfers in one step (Xi = 1)."""
    topo = parse(spec)
    schedule = build_bucket(topo, "allreduce")
    assert np.all(torus_neighbours(topo, schedule.src, schedule.dst))
    n = topo.num_compute
    key = (schedule.step * n + schedule.src) * n + schedule.dst
    assert len(np.unique(key)) == len(key)


def test_bucket_bytes_are_optimal():
    topo = parse("torus:6x10")
    p = topo.num_compute
    schedule = build_bucket(topo, "reduce_scatter")
    sent = np.bincount(schedule.src, weights=schedule.transfer_size, minlength=p)
    assert np.allclose(sent, (p - 1) / p)


def test_bucket_owner_layout():
    owner = bucket_owner((2, 3), 1)  # processing order (1, 0): position = y*2 + x, owner id = x*3 + y
    assert owner.tolist() == [0, 3, 1, 4, 2, 5]
    assert bucket_owner((2, 3), 0).tolist() == list(range(6))


def test_bucket_rejects_bad_input():
    topo = parse("torus:4x4")
    for ports in (0, 5):
        with pytest.raises(UnsupportedShapeError, match="ports"):
            build_bucket(topo, "allreduce", ports=ports)
    with pytest.raises(UnsupportedShapeError, match="variant"):
        build_bucket(topo, "allreduce", variant="latency")
    shapeless = Topology(spec="custom", kind="custom", num_compute=3, num_nodes=3,
                         link_src=np.array([0, 1, 2]), link_dst=np.array([1, 2, 0]),
                         link_bandwidth=np.ones(3), link_latency=np.zeros(3))
    with pytest.raises(UnsupportedShapeError, match="no grid shape"):
        build_bucket(shapeless, "allreduce")
    assert_ok(build_ring(shapeless, "allreduce"))  # the ring serves any topology


# -- registry ----------------------------------------------------------------------------------------------
def test_registered():
    for name in ("ring", "bucket"):
        alg = registry.get(name)
        assert set(alg.collectives) == set(COLLECTIVES)
    assert registry.get("ring").variants == ("unidirectional", "bidirectional", "hamiltonian")
    assert registry.get("bucket").variants == ("bandwidth",)
    schedule = registry.build("ring", "torus:4x4", "reduce_scatter")
    assert schedule.meta["topology"] == "torus:4x4" and schedule.meta["variant"] == "hamiltonian"
    assert_ok(registry.build("bucket", "torus:3x4", "allgather", ports=3))


# -- property tests ----------------------------------------------------------------------------------------
shapes = st.lists(st.integers(2, 9), min_size=1, max_size=3).map(tuple)


@settings(max_examples=25, deadline=None)
@given(shape=shapes, variant=st.sampled_from([None, "unidirectional", "bidirectional"]),
       collective=st.sampled_from(COLLECTIVES))
def test_ring_random_shapes(shape, variant, collective):
    topo = fam.torus(shape)
    schedule = build_ring(topo, collective, variant=variant)
    assert_ok(schedule)
    assert schedule.num_steps == (topo.num_compute - 1) * (2 if collective == "allreduce" else 1)


@settings(max_examples=25, deadline=None)
@given(shape=shapes, collective=st.sampled_from(COLLECTIVES), data=st.data())
def test_bucket_random_shapes(shape, collective, data):
    topo = fam.torus(shape)
    ports = data.draw(st.one_of(st.none(), st.integers(1, 2 * len(shape))))
    schedule = build_bucket(topo, collective, ports=ports)
    assert_ok(schedule)
    if ports is None:
        assert schedule.num_steps == len(shape) * (max(shape) - 1) * (2 if collective == "allreduce" else 1)
