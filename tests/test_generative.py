"""Generative topologies (Zhao et al. NSDI'25 App. F) and the Moore bound (Def. 9, 10)."""

import json
import math

import numpy as np
import pytest

from directcoll.cli.main import main
from directcoll.cost.bounds import is_moore_optimal, moore_bound, moore_bound_diameter, topology_moore_bound
from directcoll.errors import SpecError
from directcoll.topology import Topology, describe, parse
from directcoll.topology.families import (
    bipartite,
    bipartite_minus_matching,
    circulant,
    circulant_opt4,
    de_bruijn,
    generalized_kautz,
    hamming,
    hyperx,
    kautz,
    linegraph_petersen,
    odd_graph,
    petersen,
    pi_automorphisms,
    theorem22_m,
    twisted_hypercube,
    twisted_torus,
    twisted_torus_grid,
)
from directcoll.topology.metrics import distance_stats, intersection_array
from directcoll.topology.table import FAMILIES


def plain_copy(topo: Topology) -> Topology:
    """The same multigraph without its Cayley structure (generic code paths)."""
    return Topology(spec=topo.spec, kind=topo.kind, num_compute=topo.num_compute, num_nodes=topo.num_nodes,
                    link_src=topo.link_src.copy(), link_dst=topo.link_dst.copy(),
                    link_bandwidth=topo.link_bandwidth.copy(), link_latency=topo.link_latency.copy(),
                    shape=topo.shape, wraps=topo.wraps, port_offsets=None, params=dict(topo.params))


def diameter(topo) -> int:
    return distance_stats(topo)[0]


def is_bidirectional(topo) -> bool:
    return bool((topo.reverse_link >= 0).all())


def ceil_log(n: int, d: int) -> int:
    k = 0
    while d ** k < n:
        k += 1
    return k


# -- sizes, degrees, diameters -------------------------------------------------------------------------------
# spec, generator call, N, (degree_min, degree_max), diameter, bidirectional
CASES = [
    ("bipartite:4", lambda: bipartite(4), 8, (4, 4), 2, True),
    ("bipartite:1", lambda: bipartite(1), 2, (1, 1), 1, True),
    ("bipartite_minus_matching:5", lambda: bipartite_minus_matching(5), 10, (4, 4), 3, True),
    ("hamming:2:3", lambda: hamming(2, 3), 9, (4, 4), 2, True),
    ("hamming:3:4", lambda: hamming(3, 4), 64, (9, 9), 3, True),
    ("hamming:1:5", lambda: hamming(1, 5), 5, (4, 4), 1, True),
    ("circulant:16:3,4", lambda: circulant(16, (3, 4)), 16, (4, 4), 3, True),
    ("circulant:16:3,4:uni", lambda: circulant(16, (3, 4), bidirectional=False), 16, (2, 2), 6, False),
    ("circulant:10:5,1", lambda: circulant(10, (5, 1)), 10, (4, 4), 3, True),
    ("circulant:41:4,5", lambda: circulant_opt4(41), 41, (4, 4), 4, True),
    ("genkautz:2:10", lambda: generalized_kautz(2, 10), 10, (1, 2), 4, False),
    ("genkautz:3:12", lambda: generalized_kautz(3, 12), 12, (3, 3), 2, False),
    ("kautz:2:3", lambda: kautz(2, 3), 12, (2, 2), 3, False),
    ("kautz:3:2", lambda: kautz(3, 2), 12, (3, 3), 2, False),
    ("kautz:4:1", lambda: kautz(4, 1), 5, (4, 4), 1, True),  # K(d, 1) is the complete digraph K_{d+1}
    ("debruijn:2:3", lambda: de_bruijn(2, 3), 8, (1, 2), 3, False),
    ("debruijn:3:2", lambda: de_bruijn(3, 2), 9, (2, 3), 2, False),
    ("twistedhypercube:3", lambda: twisted_hypercube(3), 8, (3, 3), 2, True),
    ("twistedhypercube:6", lambda: twisted_hypercube(6), 64, (6, 6), 5, True),
    ("twistedtorus:4x8:4", lambda: twisted_torus((4, 8)), 32, (4, 4), 4, True),
    ("twistedtorus:3x6:1", lambda: twisted_torus((3, 6), (1,)), 18, (4, 4), None, True),
    ("twistedtorus:4x4x8:4,4", lambda: twisted_torus((4, 4, 8)), 128, (6, 6), None, True),
    ("odd:2", lambda: odd_graph(2), 3, (2, 2), 1, True),
    ("odd:4", lambda: odd_graph(4), 35, (4, 4), 3, True),
    ("petersen", petersen, 10, (3, 3), 2, True),
    ("linegraph_petersen", linegraph_petersen, 15, (4, 4), 3, True),
]


@pytest.mark.parametrize(("spec", "make", "n", "degree", "diam", "bidirectional"), CASES,
                         ids=[c[0] for c in CASES])
def test_family_size_degree_diameter_and_spec_round_trip(spec, make, n, degree, diam, bidirectional):
    built, parsed = make(), parse(spec)
    assert built.spec == parsed.spec == spec
    assert parse(parsed.spec).spec == spec
    for name in ("link_src", "link_dst", "link_bandwidth", "link_latency"):
        assert np.array_equal(getattr(parsed, name), getattr(built, name)), name
    summary = describe(parsed)
    assert summary.nodes == n and summary.switches == 0
    assert (summary.degree_min, summary.degree_max) == degree
    if diam is not None:
        assert summary.diameter == diam
    assert is_bidirectional(parsed) == bidirectional
    assert not np.any(parsed.link_src == parsed.link_dst), "no self-loops"
    assert np.all(np.diff(parsed.link_src) >= 0), "links are laid out node-major"


def test_every_registered_family_example_parses():
    for kind, (_, example, _) in FAMILIES.items():
        for spec in example.split(" | "):
            topo = parse(spec)
            assert topo.spec.split(":")[0] == kind


def test_link_parameters_reach_every_new_family():
    for spec, *_ in CASES:
        t = parse(spec, link_bandwidth=3e9, link_latency=7e-9)
        assert np.all(t.link_bandwidth == 3e9) and np.all(t.link_latency == 7e-9)


def test_cayley_families_keep_port_offsets_and_describe_agrees_with_bfs():
    for spec in ("bipartite:3", "bipartite_minus_matching:4", "hamming:2:4", "circulant:13:2,5",
                 "circulant:9:2:uni", "twistedtorus:4x8:4", "twistedtorus:3x4x6:1,5"):
        topo = parse(spec)
        assert topo.is_cayley, spec
        fast, slow = describe(topo).to_dict(), describe(plain_copy(topo)).to_dict()
        assert fast.pop("average_distance") == pytest.approx(slow.pop("average_distance"))
        assert fast == slow, spec


# -- family-specific facts -------------------------------------------------------------------------------------
def test_hamming_is_hyperx_and_its_diameter_is_n():
    for n, q in [(1, 3), (2, 2), (2, 5), (3, 3), (4, 2)]:
        h = hamming(n, q)
        x = hyperx((q,) * n)
        assert np.array_equal(h.link_dst, x.link_dst) and h.shape == x.shape
        assert h.num_compute == q ** n and describe(h).degree_max == n * (q - 1)
        assert diameter(h) == n


def test_bipartite_sides_and_removed_matching():
    n = 5
    k = bipartite(n)
    side = k.link_src // n != k.link_dst // n
    assert side.all() and k.num_links == 2 * n * n
    m = bipartite_minus_matching(n)
    assert m.num_links == 2 * n * (n - 1)
    assert not np.any(m.link_dst == (m.link_src + n) % (2 * n)), "node i is not linked to node n + i"


def test_circulant_links_follow_the_offsets():
    t = circulant(12, (1, 5))
    u = np.arange(12)
    dst = t.link_dst.reshape(12, 4)
    assert np.array_equal(dst, np.stack([(u + 1) % 12, (u - 1) % 12, (u + 5) % 12, (u - 5) % 12], axis=1))
    uni = circulant(12, (1, 5), bidirectional=False)
    assert np.array_equal(uni.link_dst.reshape(12, 2), dst[:, [0, 2]])
    assert parse("circulant:12:13,5").spec == "circulant:12:1,5"  # offsets reduced mod N


@pytest.mark.parametrize("n", [7, 8, 12, 13, 25, 26, 60, 61, 100, 221, 222, 500])
def test_theorem22_circulant_has_the_stated_diameter(n):
    m = math.ceil((-1 + math.sqrt(2 * n - 1)) / 2)
    assert theorem22_m(n) == m
    t = parse(f"circulant:{n}:opt4")
    assert t.spec == f"circulant:{n}:{m},{m + 1}"
    assert diameter(t) == m == t.params["theorem22_diameter"]


@pytest.mark.parametrize("n", [7, 11, 18, 25, 33])
def test_theorem22_diameter_is_minimal_over_all_degree4_circulants(n):
    best = min(diameter(circulant(n, (a, b))) for a in range(1, n // 2 + 1) for b in range(a + 1, n // 2 + 1)
               if math.gcd(n, a, b) == 1)
    assert best == diameter(circulant_opt4(n))


def test_theorem22_m_matches_float_formula_widely():
    for n in range(7, 20000):
        assert theorem22_m(n) == math.ceil((-1 + math.sqrt(2 * n - 1)) / 2), n


def test_generalized_kautz_matches_definition_16_and_drops_self_loops():
    for d, n in [(2, 10), (3, 7), (4, 22), (2, 3)]:
        t = generalized_kautz(d, n)
        arcs = {(x, (-d * x - a) % n) for x in range(n) for a in range(1, d + 1)}
        loops = {(x, y) for x, y in arcs if x == y}
        assert set(zip(t.link_src.tolist(), t.link_dst.tolist(), strict=True)) == arcs - loops
        assert t.num_links == d * n - len(loops) and t.params["self_loops_dropped"] == len(loops)


@pytest.mark.parametrize("d", [2, 3, 4])
def test_generalized_kautz_diameter_at_most_ceil_log_d_n(d):
    for n in range(d + 1, 160):
        t = generalized_kautz(d, n)
        k = diameter(t)
        assert k <= ceil_log(n, d), (d, n, k)
        assert n > moore_bound(d, k - 2) if k >= 2 else True  # Theorem 21


@pytest.mark.parametrize(("d", "big_d"), [(2, 1), (2, 2), (2, 4), (3, 3), (4, 2), (5, 2)])
def test_kautz_and_de_bruijn_have_diameter_d(d, big_d):
    k = kautz(d, big_d)
    assert k.num_compute == d ** big_d + d ** (big_d - 1) and k.params["self_loops_dropped"] == 0
    assert diameter(k) == big_d
    assert is_moore_optimal(k)
    b = de_bruijn(d, big_d)
    assert b.num_compute == d ** big_d and b.params["self_loops_dropped"] == d
    assert diameter(b) == big_d


def test_twisted_hypercube_is_q_k_with_one_twisted_4_cycle():
    for k in range(3, 9):
        t = twisted_hypercube(k)
        q = {(u, u ^ (1 << i)) for u in range(1 << k) for i in range(k)}
        q -= {(0, 1), (1, 0), (2, 3), (3, 2)}
        q |= {(0, 3), (3, 0), (1, 2), (2, 1)}
        assert set(zip(t.link_src.tolist(), t.link_dst.tolist(), strict=True)) == q
        assert diameter(t) == k - 1


@pytest.mark.parametrize(("shape", "twists"), [((4, 8), (4,)), ((3, 5), (2,)), ((2, 3), (1,)),
                                               ((4, 4, 8), (4, 4)), ((3, 4, 6), (1, 5)), ((5, 5), (0,))])
def test_twisted_torus_links_match_the_grid_definition(shape, twists):
    t = twisted_torus(shape, twists)
    grid = twisted_torus_grid(t)
    node_of = {tuple(p): i for i, p in enumerate(grid.tolist())}
    assert len(node_of) == t.num_compute == int(np.prod(shape))
    last = len(shape) - 1
    for u in range(t.num_compute):
        expected = []
        for i, d in enumerate(shape):
            for step in (1, -1):
                p = list(grid[u])
                p[i] += step
                if not 0 <= p[i] < d and i < last:
                    p[last] += twists[i] * step
                p[i] %= d
                p[last] %= shape[last]
                expected.append(node_of[tuple(p)])
        assert t.link_dst[t.link_src == u].tolist() == expected


def test_twisted_torus_rtt_diameter_and_plain_torus_for_zero_twist():
    for a in range(2, 9):
        assert diameter(twisted_torus((a, 2 * a))) == a  # Camara et al.: RTT(a) has diameter a
    assert diameter(twisted_torus((5, 5), (0,))) == 4 == describe(parse("torus:5x5")).diameter


def test_odd_graph_sizes_and_diameter():
    for k in range(2, 7):
        t = odd_graph(k)
        assert t.num_compute == math.comb(2 * k - 1, k - 1)
        assert describe(t).degree_min == describe(t).degree_max == k
        assert diameter(t) == k - 1
    p = petersen()
    assert np.array_equal(p.link_dst, odd_graph(3).link_dst)


# -- distance-regular --------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("spec", "array"), [
    ("petersen", ((3, 2), (1, 1))),
    ("odd:4", ((4, 3, 3), (1, 1, 2))),
    ("odd:5", ((5, 4, 4, 3), (1, 1, 2, 2))),
    ("linegraph_petersen", ((4, 2, 1), (1, 1, 4))),
    ("bipartite:4", ((4, 3), (1, 4))),
    ("bipartite_minus_matching:5", ((4, 3, 1), (1, 3, 4))),
    ("hamming:2:3", ((4, 2), (1, 2))),
    ("hamming:3:4", ((9, 6, 3), (1, 2, 3))),
    ("complete:6", ((5,), (1,))),
    ("hypercube:4", ((4, 3, 2, 1), (1, 2, 3, 4))),
])
def test_distance_regular_families_have_their_intersection_array(spec, array):
    assert intersection_array(parse(spec)) == array


def test_distance_regular_check_by_brute_force_and_rejects_others():
    from directcoll.topology.paths import bfs_distances

    t = linegraph_petersen()
    dist = bfs_distances(t, np.arange(t.num_compute))
    nbrs = [set(t.link_dst[t.link_src == u].tolist()) for u in range(t.num_compute)]
    seen = {}
    for x in range(t.num_compute):
        for y in range(t.num_compute):
            i = int(dist[x, y])
            key = tuple(sum(1 for z in nbrs[y] if dist[x, z] == j) for j in (i - 1, i, i + 1))
            assert seen.setdefault(i, key) == key
    for spec in ("circulant:16:3,4", "twistedhypercube:4", "kautz:2:3", "genkautz:3:20", "twistedtorus:4x8:4"):
        assert intersection_array(parse(spec)) is None, spec


# -- Moore bound -----------------------------------------------------------------------------------------------
def test_moore_bound_values():
    assert [moore_bound(2, k) for k in range(5)] == [1, 3, 7, 15, 31]
    assert moore_bound(4, 2) == 21 and moore_bound(3, 2, directed=False) == 10
    assert [moore_bound(4, k, directed=False) for k in range(6)] == [1, 5, 17, 53, 161, 485]
    assert moore_bound_diameter(1, 3) == 0
    assert moore_bound_diameter(21, 4) == 2 and moore_bound_diameter(22, 4) == 3
    assert moore_bound_diameter(1024, 4) == 5
    assert moore_bound_diameter(10, 3, directed=False) == 2  # Petersen is a Moore graph
    assert moore_bound_diameter(11, 3, directed=False) == 3
    assert moore_bound_diameter(9, 1) == 8  # unidirectional ring
    assert moore_bound_diameter(9, 2, directed=False) == 4 and moore_bound_diameter(10, 2, directed=False) == 5
    # Table 8 of Zhao et al. (d = 4): T_L* (directed) and T_L** (bidirectional)
    for n, directed, undirected in [(6, 2, 2), (9, 2, 2), (10, 2, 2), (14, 2, 2), (15, 2, 2), (16, 2, 2),
                                    (21, 2, 3), (26, 3, 3), (32, 3, 3), (35, 3, 3), (45, 3, 3), (70, 3, 4),
                                    (80, 3, 4), (189, 4, 5), (728, 5, 6)]:
        assert moore_bound_diameter(n, 4) == directed, n
        assert moore_bound_diameter(n, 4, directed=False) == undirected, n
    for n in range(2, 300):
        for d in range(2, 6):
            k = moore_bound_diameter(n, d)
            assert moore_bound(d, k) >= n and (k == 0 or moore_bound(d, k - 1) < n)
            k = moore_bound_diameter(n, d, directed=False)
            assert moore_bound(d, k, directed=False) >= n and (k == 0 or moore_bound(d, k - 1, directed=False) < n)


def test_moore_bound_rejects_impossible_graphs():
    for args in [(0, 2), (3, 0), (3, 1, False), (5, -1)]:
        with pytest.raises(ValueError):
            moore_bound_diameter(*args)


def test_describe_reports_moore_bound_and_optimality(capsys):
    cases = {  # spec: (moore_bound_diameter, Moore optimal)
        "kautz:2:3": (3, True), "genkautz:2:10": (3, False), "debruijn:2:3": (3, True),
        "petersen": (2, True), "complete:7": (1, True), "bipartite:4": (2, True), "hamming:2:3": (2, True),
        "ring:9:uni": (8, True), "ring:9": (4, True), "circulant:16:3,4": (2, False),
        "linegraph_petersen": (2, False), "odd:4": (3, True), "hypercube:4": (2, False),
        "twistedhypercube:3": (2, True),
    }
    for spec, (bound, optimal) in cases.items():
        topo = parse(spec)
        assert topology_moore_bound(topo) == bound, spec
        assert main(["topology", "describe", spec, "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["moore_bound_diameter"] == bound
        assert is_moore_optimal(topo) == optimal, spec
    assert topology_moore_bound(parse("hammingmesh:2x2:4x4")) is None
    with pytest.raises(ValueError, match="switchless"):
        is_moore_optimal(parse("hammingmesh:2x2:4x4"))
    # Petersen against the directed bound (Def. 9): 10 nodes of degree 3 could have diameter 2 as a digraph too
    assert is_moore_optimal(petersen(), directed=True)
    assert not is_moore_optimal(parse("circulant:16:3,4"), directed=True)


# -- errors ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("spec", "words"), [
    ("bipartite:0", ["bipartite", ">= 1"]),
    ("bipartite:x", ["expected a positive integer"]),
    ("bipartite_minus_matching:2", [">= 3"]),
    ("hamming:3", ["expected hamming:n:q"]),
    ("hamming:0:3", ["n must be", ">= 1"]),
    ("hamming:2:1", ["q must be", ">= 2"]),
    ("circulant:16", ["expected circulant:N:a1,a2"]),
    ("circulant:16:0", ["multiple of N=16"]),
    ("circulant:16:32", ["multiple of N=16"]),
    ("circulant:16:2,4", ["disconnected", "gcd"]),
    ("circulant:16:-1", ["expected a positive integer"]),
    ("circulant:16:1,,2", ["expected a positive integer"]),
    ("circulant:1:1", ["N must be", ">= 2"]),
    ("circulant:6:opt4", ["Theorem 22", "N > 6"]),
    ("circulant:16:opt4:uni", ["bidirectional"]),
    ("circulant:16:1:both", ["expected circulant:N"]),
    ("genkautz:1:10", ["d must be", ">= 2"]),
    ("genkautz:3:3", ["N >= d + 1 = 4"]),
    ("genkautz:3", ["expected genkautz:d:N"]),
    ("kautz:1:3", ["d must be", ">= 2"]),
    ("kautz:2:0", ["D must be", ">= 1"]),
    ("debruijn:2:0", ["D must be", ">= 1"]),
    ("debruijn:1:3", ["d must be", ">= 2"]),
    ("twistedhypercube:2", ["k must be", ">= 3"]),
    ("twistedtorus:8", ["at least 2 dimensions"]),
    ("twistedtorus:4x1", [">= 2"]),
    ("twistedtorus:4x8:8", ["twists must lie in 0..7"]),
    ("twistedtorus:4x4x8:4", ["needs 2 twist(s)"]),
    ("twistedtorus:4x8:", ["expected twistedtorus:AxB"]),
    ("odd:1", ["k must be", ">= 2"]),
    ("petersen:3", ["takes no arguments"]),
    ("linegraph_petersen:1", ["takes no arguments"]),
    ("kautz", ["'kautz'", "needs arguments", "accepted", "kautz:2:3"]),
    ("twistedcube:3", ["unknown topology spec", "did you mean twistedhypercube", "directcoll topology families"]),
])
def test_bad_specs_raise_spec_error(spec, words):
    with pytest.raises(SpecError) as info:
        parse(spec)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_bare_and_colon_forms_of_argumentless_families_agree():
    assert parse("petersen:").spec == parse("PETERSEN").spec == "petersen"
    assert parse("linegraph_petersen").num_compute == 15


# -- Jellyfish and Xpander ------------------------------------------------------------------------------------
def _edge_set(topo: Topology) -> set[tuple[int, int]]:
    return set(zip(topo.link_src.tolist(), topo.link_dst.tolist(), strict=True))


@pytest.mark.parametrize("spec", ["jellyfish:30:4", "jellyfish:31:4:5", "jellyfish:20:3:2", "xpander:30:4",
                                  "xpander:25:4:9", "xpander:12:3:1"])
def test_random_expanders_are_simple_connected_regular_and_bidirectional(spec):
    topo = parse(spec)
    d = topo.params["d"]
    links = _edge_set(topo)
    assert len(links) == topo.num_links == topo.num_nodes * d  # no parallel links
    assert all(u != v for u, v in links) and all((v, u) in links for u, v in links)
    assert np.all(np.bincount(topo.link_src, minlength=topo.num_nodes) == d)
    assert distance_stats(topo)[0] < topo.num_nodes  # connected (the diameter is finite)


@pytest.mark.parametrize("kind", ["jellyfish", "xpander"])
def test_random_expanders_are_fixed_by_their_seed(kind):
    a, b, c = parse(f"{kind}:40:4:7"), parse(f"{kind}:40:4:7"), parse(f"{kind}:40:4:8")
    assert _edge_set(a) == _edge_set(b) != _edge_set(c)
    assert parse(f"{kind}:40:4").spec == f"{kind}:40:4:0"


def test_xpander_is_a_lift_of_the_complete_graph():
    topo = parse("xpander:35:4:3")
    lift = topo.params["lift"]
    fiber_src, fiber_dst = topo.link_src // lift, topo.link_dst // lift
    assert np.all(fiber_src != fiber_dst)  # no link inside a fiber
    # every node has exactly one neighbour in every other fiber
    pairs = set(zip(topo.link_src.tolist(), fiber_dst.tolist(), strict=True))
    assert len(pairs) == topo.num_links


@pytest.mark.parametrize("spec, message", [("xpander:101:4", "multiple of d \\+ 1"),
                                           ("jellyfish:7:3", "N \\* d even"), ("jellyfish:4:4", "N > d"),
                                           ("xpander:10", "xpander:N:d")])
def test_random_expanders_refuse_impossible_shapes(spec, message):
    with pytest.raises(SpecError, match=message):
        parse(spec)


@pytest.mark.parametrize("d, n", [(4, 1000), (4, 999), (2, 12), (3, 12), (4, 30), (2, 10)])
def test_pi_automorphisms_form_a_group_of_order_2_gcd_that_maps_arcs_to_arcs(d, n):
    topo = parse(f"genkautz:{d}:{n}")
    perms = pi_automorphisms(d, n)
    assert len(perms) == 2 * math.gcd(d + 1, n) and np.array_equal(perms[0], np.arange(n))
    arcs = set(zip(topo.link_src.tolist(), topo.link_dst.tolist(), strict=True))
    for p in perms:
        assert sorted(p.tolist()) == list(range(n))
        assert set(zip(p[topo.link_src].tolist(), p[topo.link_dst].tolist(), strict=True)) == arcs
    rows = {tuple(p) for p in perms}
    assert all(tuple(a[b]) in rows for a in perms for b in perms)  # closed under composition
