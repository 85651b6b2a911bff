"""Topology model (docs/architecture.md "Topology"): generators, spec strings, metrics against closed forms, routing."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from directcoll.errors import SpecError, TopologyError
from directcoll.topology import (
    Topology,
    bfs_distances,
    describe,
    hammingmesh,
    hop_distance,
    hypercube,
    hyperx,
    link_loads,
    mesh,
    minimal_route,
    parse,
    ring,
    torus,
)


def plain_copy(topo: Topology) -> Topology:
    """The same multigraph without its Cayley structure, so every algorithm takes the generic code path."""
    return Topology(spec=topo.spec, kind=topo.kind, num_compute=topo.num_compute, num_nodes=topo.num_nodes,
                    link_src=topo.link_src.copy(), link_dst=topo.link_dst.copy(),
                    link_bandwidth=topo.link_bandwidth.copy(), link_latency=topo.link_latency.copy(),
                    shape=topo.shape, wraps=topo.wraps, port_offsets=None, params=dict(topo.params))


def cables(topo: Topology) -> Counter:
    """Multiset of directed (src, dst) links."""
    return Counter(zip(topo.link_src.tolist(), topo.link_dst.tolist(), strict=True))


def undirected_neighbours(topo: Topology, node: int) -> set[int]:
    return set(topo.link_dst[topo.link_src == node].tolist())


# -- generators ----------------------------------------------------------------------------------------------
TORUS_SHAPES = [(2,), (5,), (8,), (2, 2), (3, 5), (4, 4), (2, 3, 4), (3, 3, 3), (2, 2, 2, 2), (3, 2, 5, 2)]


@pytest.mark.parametrize("shape", TORUS_SHAPES)
def test_torus_has_prod_nodes_and_2D_ports_per_node(shape):
    t = torus(shape)
    n, dims = int(np.prod(shape)), len(shape)
    assert t.num_compute == t.num_nodes == n
    assert t.num_links == 2 * dims * n
    assert (t.out_degree == 2 * dims).all()
    assert (np.bincount(t.link_dst, minlength=n) == 2 * dims).all()  # in-degree too
    assert t.shape == shape and t.wraps and t.is_cayley
    # every link joins two nodes that differ by +-1 (mod d) in exactly one coordinate
    diff = (t.coords(t.link_dst) - t.coords(t.link_src)) % np.asarray(shape)
    moved = diff != 0
    assert (moved.sum(axis=1) == 1).all()
    assert np.all((diff[moved] == 1) | (diff[moved] == np.asarray(shape)[np.nonzero(moved)[1]] - 1))


def test_torus_dimension_of_size_2_has_two_parallel_cables():
    t = torus((2, 3))
    counts = cables(t)
    # node 0 = (0,0) and node 3 = (1,0) are joined by the "+" and the "-" port of dimension 0
    assert counts[(0, 3)] == 2 and counts[(3, 0)] == 2
    assert counts[(0, 1)] == 1 and counts[(0, 2)] == 1


def test_cayley_link_layout_is_node_times_ports_plus_port():
    t = torus((3, 4))
    k = len(t.port_offsets)
    expected = t.translate(np.arange(t.num_links) // k, t.node_at(t.port_offsets[np.arange(t.num_links) % k]))
    assert np.array_equal(t.link_dst, expected)
    assert np.array_equal(t.link_src, np.repeat(np.arange(t.num_nodes), k))


@pytest.mark.parametrize("shape", [(2,), (5,), (2, 2), (3, 4), (2, 3, 4), (3, 3, 3, 2)])
def test_mesh_link_count(shape):
    m = mesh(shape)
    n = int(np.prod(shape))
    # one cable per adjacent pair along each dimension: (d_i - 1) * N / d_i cables, two directed links each
    expected = sum(2 * (d - 1) * (n // d) for d in shape)
    assert m.num_links == expected
    assert not m.wraps and not m.is_cayley
    assert m.out_degree.max() <= 2 * len(shape)
    corner = 0
    assert m.out_degree[corner] == len(shape)


@pytest.mark.parametrize("n", [2, 3, 7, 16])
def test_ring_bidirectional_and_unidirectional(n):
    bi, uni = ring(n), ring(n, bidirectional=False)
    assert bi.num_links == 2 * n and (bi.out_degree == 2).all()
    assert uni.num_links == n and (uni.out_degree == 1).all()
    assert np.array_equal(uni.link_dst, (uni.link_src + 1) % n)
    assert set(zip(bi.link_src.tolist(), bi.link_dst.tolist(), strict=True)) == (
        {(i, (i + 1) % n) for i in range(n)} | {(i, (i - 1) % n) for i in range(n)})
    assert bi.spec == f"ring:{n}" and uni.spec == f"ring:{n}:uni"


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_hypercube_nodes_and_degree(k):
    h = hypercube(k)
    n = 2**k
    assert h.num_compute == n and h.num_links == k * n
    assert (h.out_degree == k).all()
    assert np.array_equal(np.sort(h.link_src ^ h.link_dst), np.sort(np.tile(2 ** np.arange(k), n)))
    assert h.shape == (2,) * k


@pytest.mark.parametrize("shape", [(3,), (4, 4), (2, 5), (3, 4, 2)])
def test_hyperx_degree_and_diameter(shape):
    h = hyperx(shape)
    assert (h.out_degree == sum(d - 1 for d in shape)).all()
    assert describe(h).diameter == len(shape)
    # every node is linked to every other node of its row in each dimension, and to nothing else
    for node in (0, h.num_compute - 1):
        c = h.coords([node])[0]
        peers = {int(h.node_at(np.r_[c[:i], x, c[i + 1:]])) for i, d in enumerate(shape) for x in range(d)
                 if x != c[i]}
        assert undirected_neighbours(h, node) == peers


def test_hammingmesh_2x2_boards_in_4x4_grid():
    hm = hammingmesh((2, 2), (4, 4))
    rows = cols = 8
    assert hm.num_compute == 64
    assert hm.num_nodes - hm.num_compute == rows + cols
    assert (hm.out_degree[:64] == 4).all()
    assert hm.shape == (8, 8)
    # every row switch reaches the 2 edge nodes of each of the 4 boards in its row (west and east ports)
    row_switch_deg = hm.out_degree[64:64 + rows]
    col_switch_deg = hm.out_degree[64 + rows:]
    assert (row_switch_deg == 8).all() and (col_switch_deg == 8).all()
    # no compute-to-compute link crosses a board boundary
    compute = (hm.link_src < 64) & (hm.link_dst < 64)
    board = hm.coords(hm.link_src[compute]) // 2
    assert np.array_equal(board, hm.coords(hm.link_dst[compute]) // 2)


def test_hammingmesh_1x1_boards_link_each_node_twice_to_each_switch():
    hm = hammingmesh((1, 1), (3, 4))
    n = 12
    counts = cables(hm)
    for node in range(n):
        r, c = hm.coords([node])[0]
        row_switch, col_switch = n + r, n + 3 + c
        assert counts[(node, row_switch)] == 2 and counts[(row_switch, node)] == 2
        assert counts[(node, col_switch)] == 2 and counts[(col_switch, node)] == 2
    assert (hm.out_degree[:n] == 4).all()
    assert describe(hm).diameter == 4  # node -> row switch -> node -> column switch -> node


def test_hammingmesh_board_links_have_board_latency():
    hm = hammingmesh((2, 3), (2, 2), link_latency=1e-6, board_latency=5e-9)
    on_board = (hm.link_src < hm.num_compute) & (hm.link_dst < hm.num_compute)
    assert on_board.any() and (~on_board).any()
    assert np.all(hm.link_latency[on_board] == 5e-9)
    assert np.all(hm.link_latency[~on_board] == 1e-6)
    default = hammingmesh((2, 3), (2, 2), link_latency=1e-6)
    assert np.all(default.link_latency == 1e-6)


def test_generators_take_link_bandwidth_and_latency():
    t = torus((3, 3), link_bandwidth=1e9, link_latency=2e-6)
    assert np.all(t.link_bandwidth == 1e9) and np.all(t.link_latency == 2e-6)
    assert t.node_bandwidth == 4e9


# -- spec strings --------------------------------------------------------------------------------------------
SPEC_CASES = [
    ("torus:8", lambda: torus((8,))),
    ("torus:2x2", lambda: torus((2, 2))),
    ("torus:3x5x2", lambda: torus((3, 5, 2))),
    ("torus:2x3x2x3", lambda: torus((2, 3, 2, 3))),
    ("mesh:4x3", lambda: mesh((4, 3))),
    ("ring:9", lambda: ring(9)),
    ("ring:9:uni", lambda: ring(9, bidirectional=False)),
    ("hypercube:4", lambda: hypercube(4)),
    ("hyperx:3x4", lambda: hyperx((3, 4))),
    ("hammingmesh:2x2:4x4", lambda: hammingmesh((2, 2), (4, 4))),
    ("hammingmesh:1x1:2x3", lambda: hammingmesh((1, 1), (2, 3))),
]


@pytest.mark.parametrize(("spec", "make"), SPEC_CASES, ids=[s for s, _ in SPEC_CASES])
def test_spec_parses_to_the_generator_result(spec, make):
    parsed, built = parse(spec), make()
    assert parsed.spec == built.spec == spec
    assert (parsed.kind, parsed.num_compute, parsed.num_nodes, parsed.shape) == (
        built.kind, built.num_compute, built.num_nodes, built.shape)
    for name in ("link_src", "link_dst", "link_bandwidth", "link_latency"):
        assert np.array_equal(getattr(parsed, name), getattr(built, name)), name
    assert parse(parsed.spec).spec == parsed.spec


def test_spec_aliases_normalise_to_canonical_spec():
    assert parse("ring:9:bi").spec == "ring:9"
    assert parse("  TORUS:4x4 ").spec == "torus:4x4"
    t = torus((4, 4))
    assert parse(t) is t


def test_spec_passes_link_parameters():
    t = parse("torus:4x4", link_bandwidth=3e9, link_latency=7e-9)
    assert np.all(t.link_bandwidth == 3e9) and np.all(t.link_latency == 7e-9)


@pytest.mark.parametrize(("spec", "expected_words"), [
    ("torus:", ["'torus:'", "accepted", "torus:8x8", "torus:3x3x2:simple"]),
    ("torus:8x", ["expected dimension sizes", "8x8"]),
    ("torus:1x4", [">= 2", "(1, 4)"]),
    ("foo:3", ["unknown topology spec", "'foo:3'", "directcoll topology families"]),
    ("tor:8", ["unknown topology spec", "did you mean torus?"]),
    ("hammingmesh:2x2", ["expected hammingmesh:AxB:XxY"]),
    ("ring:abc", ["expected a positive integer", "'abc'"]),
    ("hypercube:0", [">= 1"]),
    ("torus:4x4:4", ["expected torus:AxB", ":simple"]),
    ("hammingmesh:2x2x2:2x2", ["2D"]),
    ("hammingmesh:2x2:1x1", ["at least 2 boards"]),
])
def test_bad_specs_raise_spec_error_saying_what_was_expected(spec, expected_words):
    with pytest.raises(SpecError) as info:
        parse(spec)
    for word in expected_words:
        assert word in str(info.value), (word, str(info.value))


# -- model checks --------------------------------------------------------------------------------------------
def test_disconnected_topology_is_rejected():
    # two separate bidirectional pairs: {0, 1} and {2, 3}
    src = np.array([0, 1, 2, 3])
    dst = np.array([1, 0, 3, 2])
    with pytest.raises(TopologyError, match="not strongly connected"):
        Topology(spec="two-pairs", kind="custom", num_compute=4, num_nodes=4, link_src=src, link_dst=dst,
                 link_bandwidth=np.ones(4), link_latency=np.zeros(4))


def test_one_way_topology_is_rejected():
    # 0 -> 1 -> 2 reaches everything from 0, but nothing gets back to 0
    with pytest.raises(TopologyError, match="strongly connected"):
        Topology(spec="path", kind="custom", num_compute=3, num_nodes=3, link_src=np.array([0, 1]),
                 link_dst=np.array([1, 2]), link_bandwidth=np.ones(2), link_latency=np.zeros(2))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"link_dst": np.array([1])}, "link_dst has 1 entries"),
    ({"link_dst": np.array([1, 5])}, "outside 0..1"),
    ({"link_bandwidth": np.array([1.0, 0.0])}, "bandwidths must lie in"),
    ({"shape": (3,)}, "does not hold 2 nodes"),
])
def test_inconsistent_topology_arrays_are_rejected(kwargs, message):
    base = dict(spec="pair", kind="custom", num_compute=2, num_nodes=2, link_src=np.array([0, 1]),
                link_dst=np.array([1, 0]), link_bandwidth=np.ones(2), link_latency=np.zeros(2))
    with pytest.raises(TopologyError, match=message):
        Topology(**{**base, **kwargs})


def test_coordinates_round_trip_and_reject_switches():
    hm = hammingmesh((2, 2), (2, 2))
    nodes = np.arange(hm.num_compute)
    assert np.array_equal(hm.node_at(hm.coords(nodes)), nodes)
    with pytest.raises(TopologyError, match="out of range"):
        hm.coords([hm.num_compute])  # a switch has no grid coordinates
    with pytest.raises(TopologyError, match="no grid coordinates"):
        plain = Topology(spec="pair", kind="custom", num_compute=2, num_nodes=2, link_src=np.array([0, 1]),
                         link_dst=np.array([1, 0]), link_bandwidth=np.ones(2), link_latency=np.zeros(2))
        plain.coords([0])


# -- metrics vs closed forms ---------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", [(2,), (7,), (8,), (4, 4), (3, 6), (2, 3, 5), (5, 5, 5)])
def test_torus_diameter_is_sum_of_half_sizes(shape):
    assert describe(torus(shape)).diameter == sum(d // 2 for d in shape)


@pytest.mark.parametrize("n", [2, 3, 4, 9, 10, 33])
def test_ring_average_distance(n):
    # bidirectional: distance to offset k is min(k, n-k); unidirectional: k
    bi = sum(min(k, n - k) for k in range(1, n)) / (n - 1)
    assert describe(ring(n)).average_distance == pytest.approx(bi)
    assert describe(ring(n)).average_distance == pytest.approx((n * n // 4) / (n - 1))
    assert describe(ring(n, bidirectional=False)).average_distance == pytest.approx(n / 2)
    assert describe(ring(n, bidirectional=False)).diameter == n - 1


@pytest.mark.parametrize("k", [1, 2, 3, 6])
def test_hypercube_average_distance_and_diameter(k):
    summary = describe(hypercube(k))
    assert summary.average_distance == pytest.approx(k * 2 ** (k - 1) / (2**k - 1))
    assert summary.diameter == k
    assert summary.bisection_links == 2 ** (k - 1)


@pytest.mark.parametrize("shape", [(2,), (6,), (3, 4), (2, 3, 4)])
def test_mesh_diameter_is_sum_of_sizes_minus_one(shape):
    assert describe(mesh(shape)).diameter == sum(d - 1 for d in shape)


def test_torus_average_distance_is_sum_of_per_dimension_averages_over_all_pairs():
    shape = (4, 5)
    n = 20
    per_dim = [sum(min(k, d - k) for k in range(d)) / d for d in shape]  # mean over all d offsets, incl. 0
    assert describe(torus(shape)).average_distance == pytest.approx(sum(per_dim) * n / (n - 1))


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:2x3x2", "torus:5", "ring:6:uni", "hypercube:4",
                                  "hyperx:3x4", "mesh:3x4"])
def test_describe_cayley_and_generic_paths_agree(spec):
    topo = parse(spec)
    fast, slow = describe(topo), describe(plain_copy(topo))
    assert not plain_copy(topo).is_cayley
    a, b = fast.to_dict(), slow.to_dict()
    assert a.pop("average_distance") == pytest.approx(b.pop("average_distance"))
    assert a == b


def test_describe_counts_switches_and_bisection():
    summary = describe(parse("hammingmesh:2x2:4x4"))
    assert (summary.nodes, summary.switches, summary.degree_min, summary.degree_max) == (64, 16, 4, 4)
    assert summary.bisection_links is None and summary.bisection_bandwidth_bytes_per_s is None
    t = describe(parse("torus:8x4"))
    assert t.bisection_links == 2 * 32 // 8
    assert t.bisection_bandwidth_bytes_per_s == pytest.approx(t.bisection_links * t.link_bandwidth_bytes_per_s)
    assert t.to_dict()["shape"] == [8, 4]


# -- routing -------------------------------------------------------------------------------------------------
ROUTE_SPECS = ["torus:4x4", "torus:2x3", "torus:3x3x2", "ring:7:uni", "mesh:3x4", "hyperx:3x3",
               "hypercube:3", "hammingmesh:2x2:2x2", "hammingmesh:1x1:2x3"]


def net_outflow(topo: Topology, links: np.ndarray, share: np.ndarray) -> np.ndarray:
    out = np.bincount(topo.link_src[links], weights=share, minlength=topo.num_nodes)
    inflow = np.bincount(topo.link_dst[links], weights=share, minlength=topo.num_nodes)
    return out - inflow


@pytest.mark.parametrize("spec", ROUTE_SPECS)
def test_minimal_route_is_a_unit_flow_over_shortest_paths(spec):
    topo = parse(spec)
    n = topo.num_compute
    rng = np.random.default_rng(1)
    for src, dst in rng.integers(0, n, size=(12, 2)):
        if src == dst:
            continue
        links, share = minimal_route(topo, int(src), int(dst))
        assert np.all(share > 0) and np.all(share <= 1 + 1e-12)
        assert share[topo.link_src[links] == src].sum() == pytest.approx(1.0)
        expected = np.zeros(topo.num_nodes)
        expected[src], expected[dst] = 1.0, -1.0
        np.testing.assert_allclose(net_outflow(topo, links, share), expected, atol=1e-12)
        # every unit of traffic crosses exactly d(src, dst) links
        assert share.sum() == pytest.approx(int(hop_distance(topo, src, dst)))


def test_minimal_route_to_itself_is_empty_and_bad_nodes_raise():
    topo = torus((3, 3))
    links, share = minimal_route(topo, 4, 4)
    assert len(links) == len(share) == 0
    with pytest.raises(TopologyError, match="outside 0..8"):
        minimal_route(topo, 0, 9)


@pytest.mark.parametrize("n", [2, 4, 8, 12])
def test_ring_antipodal_traffic_splits_half_each_way(n):
    topo = ring(n)
    links, share = minimal_route(topo, 0, n // 2)
    assert len(links) == n  # n/2 hops each way (ring:2: its two parallel cables)
    np.testing.assert_allclose(share, 0.5)
    first = links[topo.link_src[links] == 0]
    assert len(first) == 2 and set(topo.link_dst[first].tolist()) == {1, n - 1}


def test_ring_non_antipodal_traffic_goes_the_short_way_only():
    topo = ring(9)
    links, share = minimal_route(topo, 2, 5)
    assert len(links) == 3 and np.all(share == 1.0)
    assert np.array_equal(np.sort(topo.link_src[links]), [2, 3, 4])
    assert np.all(topo.link_dst[links] == topo.link_src[links] + 1)


def test_torus_route_splits_over_all_monotone_paths():
    # (0,0) -> (2,2) on a 4x4 torus: 4 quadrant directions x 6 monotone paths each = 24 shortest paths,
    # so each of the 4 links leaving the source carries a quarter
    topo = torus((4, 4))
    links, share = minimal_route(topo, 0, int(topo.node_at([2, 2])))
    first = topo.link_src[links] == 0
    assert first.sum() == 4
    np.testing.assert_allclose(share[first], 0.25)


LOAD_SPECS = ["torus:4x4", "torus:3x2x2", "torus:5", "ring:6:uni", "hyperx:3x4", "hypercube:3"]
LOAD_PAIRS = {spec: (parse(spec), plain_copy(parse(spec))) for spec in LOAD_SPECS}


@settings(max_examples=25, deadline=None)
@given(spec=st.sampled_from(LOAD_SPECS), data=st.data())
def test_link_loads_cayley_equals_generic(spec, data):
    cayley, generic = LOAD_PAIRS[spec]
    n = cayley.num_compute
    count = data.draw(st.integers(1, 20), label="transfers")
    nodes = st.lists(st.integers(0, n - 1), min_size=count, max_size=count)
    src = np.array(data.draw(nodes, label="src"))
    dst = np.array(data.draw(nodes, label="dst"))
    amount = np.array(data.draw(st.lists(st.floats(0.0, 10.0), min_size=count, max_size=count), label="amount"))
    fast = link_loads(cayley, src, dst, amount)
    slow = link_loads(generic, src, dst, amount)
    np.testing.assert_allclose(fast, slow, rtol=1e-12, atol=1e-12)
    # load conservation: every transfer puts amount x hops on the network
    assert fast.sum() == pytest.approx(float((amount * hop_distance(cayley, src, dst)).sum()))


def test_link_loads_of_nothing_and_of_self_transfers_are_zero():
    topo = torus((3, 3))
    assert not link_loads(topo, [], [], []).any()
    assert not link_loads(topo, [1, 2], [1, 2], [5.0, 5.0]).any()
    assert link_loads(topo, [0], [1], 2.0).sum() == pytest.approx(2.0)  # scalar amount broadcasts


@pytest.mark.parametrize("spec", ["torus:4x5", "ring:7:uni", "mesh:3x4", "hyperx:3x4", "hammingmesh:2x2:2x2"])
def test_hop_distance_equals_bfs(spec):
    topo = parse(spec)
    n = topo.num_compute
    src, dst = (a.ravel() for a in np.meshgrid(np.arange(n), np.arange(n), indexing="ij"))
    bfs = bfs_distances(topo, np.arange(n))[:, :n]
    assert np.array_equal(hop_distance(topo, src, dst), bfs[src, dst])
    assert np.array_equal(hop_distance(topo, src.reshape(n, n), dst.reshape(n, n)), bfs)


def test_bfs_reverse_gives_distances_to_the_sources():
    topo = ring(5, bidirectional=False)
    assert bfs_distances(topo, [0]).tolist() == [[0, 1, 2, 3, 4]]
    assert bfs_distances(topo, [0], reverse=True).tolist() == [[0, 4, 3, 2, 1]]


def test_large_torus_routes_all_ranks_at_once():
    topo = torus((128, 128))
    n = topo.num_compute
    src = np.arange(n)
    total = np.zeros(topo.num_links)
    for shift in ([1, 0], [3, 5], [64, 0], [0, 127]):
        dst = topo.translate(src, topo.node_at(shift))
        loads = link_loads(topo, src, dst, np.ones(n))
        # translation invariance: every link of the same port carries the same load
        per_port = loads.reshape(n, -1)
        assert np.allclose(per_port, per_port[0])
        assert loads.sum() == pytest.approx(n * sum(min(s, 128 - s) for s in shift))
        total += loads
    assert total.max() > 0


def test_all_pairs_of_small_torus_load_every_link_equally():
    topo = torus((4, 4))
    pairs = np.array([(s, d) for s, d in itertools.product(range(16), repeat=2) if s != d])
    loads = link_loads(topo, pairs[:, 0], pairs[:, 1], 1.0)
    assert np.allclose(loads, loads[0])
    assert loads.sum() == pytest.approx(describe(topo).average_distance * 16 * 15)


def test_coords_of_a_multidimensional_array_are_right_past_8192_nodes():
    # numpy 2.4's unravel_index is wrong past the 8,192nd element of a 2D input; coords must not inherit it
    import numpy as np

    from directcoll.topology import parse

    t = parse("torus:24x23x24")
    nodes = np.arange(t.num_compute)
    assert (t.coords(nodes[:, None])[:, 0] == t.coords(nodes)).all()
    tails = np.array([1, 552, 24])
    assert (t.offset(tails[None, :], nodes[:, None])[8193] == t.offset(tails, 8193)).all()


def test_a_rustworkx_panic_in_all_pairs_distances_is_a_resource_error(monkeypatch):
    """rustworkx panics (pyo3's PanicException, a BaseException) when its thread pool cannot start, e.g. under
    an address-space limit: that is one of our errors, not a traceback."""
    from directcoll.errors import ResourceError
    from directcoll.topology import paths

    panic = type("PanicException", (BaseException,), {})

    def fail(*_, **__):
        raise panic("The global thread pool has not been initialized.: ThreadPoolBuildError")

    monkeypatch.setattr(paths.rx, "digraph_distance_matrix", fail)
    with pytest.raises(ResourceError, match="rustworkx could not start its threads"):
        paths.bfs_distances(parse("ring:6"))
    monkeypatch.setattr(paths.rx, "digraph_distance_matrix", lambda *_, **__: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):  # anything else passes through
        paths.bfs_distances(parse("ring:6"))
