"""The baselines of Zhao et al. (NSDI'25) Sec. 8.2: the double binary tree (NCCL; Sanders, Speck & Träff 2009)
and TopoOpt's shifted ring -- exact verification, step counts from the tree depth, the two-tree property, the
links they use on their own topologies, and the alpha-beta times of Table 4's caption."""

from __future__ import annotations

from math import gcd

import numpy as np
import pytest

from directcoll.algorithms.ring import build_shifted_ring, shifted_ring_rings, shifted_ring_stride_of
from directcoll.algorithms.tree import DEFAULT_CHUNKS, dbt_allreduce, dbt_depth, dbt_steps, tree_depths
from directcoll.errors import SpecError, UnsupportedShapeError
from directcoll.registry import build, build_pattern
from directcoll.schedule.ir import COPY, REDUCE
from directcoll.schedule.pattern import pattern_of
from directcoll.simulate.params import NetworkParams
from directcoll.simulate.step import simulate
from directcoll.topology.families import (
    double_binary_tree,
    double_binary_tree_parents,
    shifted_ring,
    shifted_ring_stride,
)
from directcoll.topology.spec import parse
from directcoll.verify import verify

COLLECTIVES = ("allreduce", "reduce_scatter", "allgather")


def assert_ok(schedule):
    result = verify(schedule)
    assert result.ok, result.summary()


def links_of(topology) -> set[tuple[int, int]]:
    return set(zip(topology.link_src.tolist(), topology.link_dst.tolist(), strict=True))


def interior(parents: np.ndarray) -> np.ndarray:
    """bool (2, N): whether each rank has a child in each tree."""
    out = np.zeros(parents.shape, dtype=bool)
    for t in range(2):
        out[t, parents[t][parents[t] >= 0]] = True
    return out


# -- the two trees ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("n", [*range(1, 41), 64, 100, 127, 128, 1000, 1024, 1025])
def test_two_trees(n):
    parents = double_binary_tree_parents(n)
    assert parents.shape == (2, n)
    depth = tree_depths(parents)
    for t in range(2):
        assert (parents[t] == -1).sum() == 1, "one root per tree"
        assert np.bincount(parents[t][parents[t] >= 0], minlength=n).max(initial=0) <= 2, "binary"
        assert depth[t].max() == dbt_depth(n) == int(np.floor(np.log2(n)))
    inner = interior(parents)
    assert not (inner[0] & inner[1]).any(), "every rank is interior in at most one tree"
    # tree 0: the odd ranks are interior; tree 1: the even ranks (rank 0 only for even n)
    assert np.array_equal(np.flatnonzero(inner[0]), np.arange(1, n, 2))
    expected = [*([0] if n % 2 == 0 else []), *range(2, n, 2)]
    assert np.flatnonzero(inner[1]).tolist() == expected
    # tree 1 is tree 0 shifted by one rank
    shifted = np.where(parents[0] >= 0, (parents[0] + 1) % n, -1)
    assert np.array_equal(parents[1][(np.arange(n) + 1) % n], shifted)


def test_nccl_btree_example():
    """NCCL's ncclGetBtree picture for 14 ranks below root 0 is our tree on positions 1..13 (rank p - 1)."""
    parents = double_binary_tree_parents(13)[0] + 1  # positions
    expected = {1: 2, 3: 2, 2: 4, 5: 6, 7: 6, 6: 4, 4: 8, 9: 10, 11: 10, 10: 12, 13: 12, 12: 8, 8: 0}
    assert {p: int(parents[p - 1]) for p in range(1, 14)} == expected


def test_dbt_topology():
    for n in (2, 3, 5, 13, 16, 64, 1024):
        topo = double_binary_tree(n)
        assert topo.spec == f"dbt:{n}" and topo.num_compute == n and topo.kind == "dbt"
        assert topo.out_degree[:n].max() <= 4
        assert (topo.reverse_link >= 0).all()
    assert double_binary_tree(1024).out_degree.tolist().count(4) > 1000
    with pytest.raises(SpecError, match="N must be"):
        double_binary_tree(1)


# -- the double binary tree allreduce -----------------------------------------------------------------------
@pytest.mark.parametrize("chunks", [1, 2, 3, 8])
def test_dbt_verifies_and_counts_steps(chunks):
    for n in range(2, 41):
        schedule = dbt_allreduce(n, chunks)
        assert_ok(schedule)
        depth = int(tree_depths(double_binary_tree_parents(n)).max())
        assert schedule.num_steps == 2 * depth + chunks - 1 == dbt_steps(n, chunks)
        assert schedule.nblocks == 2 * chunks and schedule.meta["chunks"] == chunks
        assert schedule.meta["depth"] == depth
        # one chunk per transfer, each tree edge once up (reduce) and once down (copy) per chunk
        np.testing.assert_allclose(schedule.transfer_size, 1 / (2 * chunks))
        assert (schedule.op == REDUCE).sum() == (schedule.op == COPY).sum() == 2 * (n - 1) * chunks
        # a rank sends at most 3 chunks per step in the tree it is interior to and 1 in the other
        per = np.zeros((schedule.num_steps, n), dtype=int)
        np.add.at(per, (schedule.step, schedule.src), 1)
        assert per.max() <= 4


def test_dbt_uses_only_tree_links():
    for n in (2, 3, 7, 16, 33):
        links = links_of(double_binary_tree(n))
        schedule = dbt_allreduce(n, 3)
        assert set(zip(schedule.src.tolist(), schedule.dst.tolist(), strict=True)) <= links


def test_dbt_registry_and_errors():
    topo = parse("circulant:16:3,4")
    schedule = build("double-binary-tree", topo)
    assert schedule.meta["chunks"] == DEFAULT_CHUNKS and schedule.meta["variant"] == "bandwidth"
    assert schedule.meta["algorithm"] == "double-binary-tree" and schedule.meta["topology"] == topo.spec
    assert build("dbt", topo, variant="latency").num_steps == 2 * 4
    assert build("dbt", topo, chunks=5).num_steps == 2 * 4 + 4
    assert build_pattern("dbt", topo, chunks=5).equivalent(pattern_of(build("dbt", topo, chunks=5)))
    for collective in ("reduce_scatter", "allgather"):
        with pytest.raises(UnsupportedShapeError, match="allreduce"):
            build("double-binary-tree", topo, collective)
    for bad in (0, -1, 2.5, "x"):
        with pytest.raises((UnsupportedShapeError, ValueError)):
            build("double-binary-tree", topo, chunks=bad)
    with pytest.raises(UnsupportedShapeError, match="latency"):
        build("double-binary-tree", topo, variant="latency", chunks=4)
    with pytest.raises(UnsupportedShapeError, match="only the option 'chunks'"):
        build("double-binary-tree", topo, r=2)
    assert dbt_allreduce(1).num_steps == 0 and verify(dbt_allreduce(1)).ok


def test_dbt_alpha_beta_time_on_its_topology():
    """On the DBT topology every tree edge is one link and each directed link carries one chunk per step, so
    the step model gives (2D + P - 1)(alpha + M / (2 P b)). At N = 1024 (D = 10), alpha = 10 us, b = 25 Gb/s,
    M = 1 MiB and P = 16 that is 717.0 us, half of the 1434 us of Zhao et al.'s Table 4 caption, which reports
    2 (T_L + T_B). (The simulation runs at N = 256 to keep the test fast: routing a non-Cayley topology of
    1024 nodes takes seconds; docs/compare.md has the N = 1024 run.)"""
    n, size, alpha, bw = 256, 2**20, 10e-6, 25e9 / 8
    params = NetworkParams(alpha=alpha, link_bandwidth=bw, link_latency=0.0, per_hop_latency=0.0)
    topo = double_binary_tree(n)
    for chunks in (1, 16):
        t = simulate(build_pattern("double-binary-tree", topo, chunks=chunks), topo, params).time(size)
        closed = (2 * dbt_depth(n) + chunks - 1) * (alpha + size / (2 * chunks * bw))
        assert t == pytest.approx(closed, rel=1e-9)
    assert 2 * (2 * dbt_depth(1024) + 16 - 1) * (alpha + size / (2 * 16 * bw)) * 1e6 == pytest.approx(1434, abs=0.5)


# -- the shifted ring ---------------------------------------------------------------------------------------
def test_shifted_ring_stride():
    for n in range(2, 200):
        s = shifted_ring_stride(n)
        assert gcd(s, n) == 1 and 1 <= s <= n // 2
        # no stride coprime to n lies nearer n/2
        assert not any(gcd(t, n) == 1 for t in range(s + 1, n // 2 + 1))
    assert shifted_ring_stride(1024) == 511 and shifted_ring_stride(12) == 5
    assert [shifted_ring_stride(n) for n in (2, 3, 4, 6)] == [1, 1, 1, 1]


def test_shifted_ring_topology():
    topo = shifted_ring(1024)
    assert topo.spec == "circulant:1024:1,511" and topo.params["stride"] == 511
    assert parse(topo.spec).num_links == topo.num_links == 4 * 1024
    assert shifted_ring(12, stride=7).spec == "circulant:12:1,5"  # s and n - s: the same circulant
    with pytest.raises(SpecError, match="coprime"):
        shifted_ring(12, stride=4)
    with pytest.raises(SpecError, match="N must be"):
        shifted_ring(1)


@pytest.mark.parametrize("collective", COLLECTIVES)
def test_shifted_ring_verifies(collective):
    for n in range(3, 21):
        topo = shifted_ring(n)
        schedule = build("shifted-ring", topo, collective)
        assert_ok(schedule)
        assert schedule.nblocks == 4 * n
        assert schedule.num_steps == (n - 1) * (2 if collective == "allreduce" else 1)
        assert schedule.meta["stride"] == shifted_ring_stride(n) and schedule.meta["ports"] == 4
        # on its own topology every ring hop is a link
        assert set(zip(schedule.src.tolist(), schedule.dst.tolist(), strict=True)) <= links_of(topo)
        assert build_pattern("shifted-ring", topo, collective).equivalent(pattern_of(schedule))


def test_shifted_ring_rings_and_stride_of_topology():
    assert shifted_ring_stride_of(parse("circulant:16:1,5")) == 5
    assert shifted_ring_stride_of(parse("circulant:16:11,1")) == 5  # 11 = -5 mod 16
    assert shifted_ring_stride_of(parse("circulant:16:3,4")) == shifted_ring_stride(16) == 7
    rings, s = shifted_ring_rings(parse("torus:4x4"))
    assert s == 7 and [d for _, d in rings] == [1, -1, 1, -1]
    for order, _ in rings:
        assert sorted(order.tolist()) == list(range(16))
    assert_ok(build_shifted_ring(parse("torus:4x4"), "allreduce"))
    with pytest.raises(UnsupportedShapeError, match="ports must be 4"):
        build("shifted-ring", "ring:8", ports=2)
    with pytest.raises(UnsupportedShapeError, match="unknown variant"):
        build("shifted-ring", "ring:8", variant="hamiltonian")


def test_shifted_ring_alpha_beta_time_on_its_topology():
    """2(N-1)(alpha + M / (4 N b)) on C(1024, {1, 511}): 20628 us (Zhao et al. Table 4 caption: 20640 us)."""
    n, size, alpha, bw = 1024, 2**20, 10e-6, 25e9 / 8
    params = NetworkParams(alpha=alpha, link_bandwidth=bw, link_latency=0.0, per_hop_latency=0.0)
    topo = shifted_ring(n)
    t = simulate(build_pattern("shifted-ring", topo), topo, params).time(size)
    assert t == pytest.approx(2 * (n - 1) * (alpha + size / (4 * n * bw)), rel=1e-9)
    assert t * 1e6 == pytest.approx(20640, rel=1e-3)
