"""Expansion techniques of Zhao et al. (NSDI'25, Sec. 5, App. A.6, D): topologies (Table 3), spec strings, and
expanded schedules that verify exactly and cost what Theorems 7/10, 11, 12, 13 and App. A.6 predict."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from directcoll.cost.analytic import analyze
from directcoll.cost.expansions import (
    Prediction,
    predict_bidirectional,
    predict_cartesian_power,
    predict_cartesian_product,
    predict_degree_expansion,
    predict_line_graph,
)
from directcoll.errors import ScheduleError, SpecError, TopologyError, UnsupportedShapeError
from directcoll.registry import build
from directcoll.schedule.ops import reverse
from directcoll.synthesis.bfb import bfb_allgather, bfb_reduce_scatter
from directcoll.synthesis.expansion_predictions import predict
from directcoll.synthesis.expansions import (
    bidirectional_allgather,
    cartesian_power_allgather,
    cartesian_product_allgather,
    degree_expansion_allgather,
    expanded_schedule,
    line_graph_allgather,
)
from directcoll.topology import Topology, parse
from directcoll.topology import operators as tex
from directcoll.topology.grammar import parse_tree
from directcoll.topology.metrics import distance_stats, intersection_array
from directcoll.verify import verify

BASES = ["complete:4", "bipartite:3", "circulant:8:1,2", "ring:4:uni", "hamming:2:3", "kautz:2:2"]
TIGHT = {"rel": 1e-9, "abs": 1e-12}


def diameter(topo: Topology) -> int:
    return distance_stats(topo)[0]


def links(topo: Topology) -> set[tuple[int, int]]:
    return set(zip(topo.link_src.tolist(), topo.link_dst.tolist(), strict=True))


def same_links(a: Topology, b: Topology) -> bool:
    return np.array_equal(a.link_src, b.link_src) and np.array_equal(a.link_dst, b.link_dst)


# -- topologies: Table 3 -------------------------------------------------------------------------------------
@pytest.mark.parametrize("base", BASES)
def test_sizes_and_degrees_follow_table_3(base):
    g = parse(base)
    n, d = g.num_compute, tex.regular_degree(g)
    for k in (1, 2):
        lk = tex.line_graph(g, k)
        assert (lk.num_compute, tex.regular_degree(lk)) == (d ** k * n, d)
    for m in (1, 2, 3):
        gm = tex.degree_expansion(g, m)
        assert (gm.num_compute, tex.regular_degree(gm)) == (m * n, m * d)
    p = tex.cartesian_power(g, 2)
    assert (p.num_compute, tex.regular_degree(p)) == (n ** 2, 2 * d)
    h = parse("ring:3:uni")
    prod = tex.cartesian_product(g, h, g)
    assert (prod.num_compute, tex.regular_degree(prod)) == (n * 3 * n, 2 * d + 1)
    assert diameter(prod) == 2 * diameter(g) + 2 and diameter(p) == 2 * diameter(g)
    b = tex.bidirectional(g)
    assert (b.num_compute, tex.regular_degree(b)) == (n, 2 * d)
    assert (b.reverse_link >= 0).all()


@pytest.mark.parametrize("base", BASES)
def test_line_graph_is_definition_12(base):
    g = parse(base)
    lg = tex.line_graph(g)
    e, f = lg.link_src, lg.link_dst
    assert np.all(g.link_dst[e] == g.link_src[f]), "(uv, vw): the head of e is the tail of f"
    assert lg.num_links == np.bincount(g.link_src, minlength=g.num_compute)[g.link_dst].sum()
    assert len(links(lg)) == lg.num_links, "simple when G is"
    back = g.reverse_link  # Def. 12 keeps (uv -> vu) when G has both directions
    has_back = back >= 0
    assert links(lg) >= set(zip(np.flatnonzero(has_back).tolist(), back[has_back].tolist(), strict=True))
    cycle = tex.regular_degree(g) == 1  # L of a directed cycle is the cycle again
    assert diameter(lg) == diameter(g) + (not cycle)  # Theorem 7's T_L + 1 is the diameter of L(G)
    assert np.all(np.diff(lg.link_src) >= 0), "node-major"


def test_degree_expansion_is_definition_13():
    g = parse("kautz:2:2")
    n = 3
    gn = tex.degree_expansion(g, n)
    big = g.num_compute
    want = {(i * big + u, j * big + w) for u, w in links(g) for i in range(n) for j in range(n)}
    assert links(gn) == want and gn.num_links == n * n * g.num_links


def test_cayley_expansions_keep_their_group_layout():
    # power / product / bidir of Cayley graphs are Cayley graphs with the expected generators
    assert same_links(tex.cartesian_power(parse("ring:4"), 2), parse("torus:4x4"))
    assert same_links(tex.cartesian_power(parse("complete:3"), 3), parse("hamming:3:3"))
    assert same_links(tex.bidirectional(parse("ring:5:uni")), parse("ring:5"))
    for spec in ("power(ring:4,2)", "product(circulant:7:1,2:uni,ring:3)", "degree(circulant:8:1,3,2)",
                 "bidir(circulant:7:1,2:uni)"):
        topo = parse(spec)
        assert topo.is_cayley, spec
        k = len(topo.port_offsets)
        # link u*K + p goes to u + offset[p]
        assert np.array_equal(topo.link_dst, topo.translate(np.arange(topo.num_compute).repeat(k),
                                                            np.tile(topo.node_at(topo.port_offsets), topo.num_compute)))


def test_link_bandwidth_and_latency_are_carried_over():
    for spec in ("line^2(complete:3)", "degree(ring:4:uni,3)", "product(ring:3,complete:3)", "power(ring:3:uni,2)",
                 "bidir(kautz:2:2)"):
        topo = parse(spec, link_bandwidth=3e9, link_latency=7e-9)
        assert np.all(topo.link_bandwidth == 3e9) and np.all(topo.link_latency == 7e-9)
        assert topo.node_bandwidth == pytest.approx(tex.regular_degree(topo) * 3e9)


def test_transpose_keeps_ids():
    g = parse("kautz:2:2")
    t = tex.transpose(g)
    assert np.array_equal(t.link_src, g.link_dst) and np.array_equal(t.link_dst, g.link_src)
    assert t.num_compute == g.num_compute


def test_expansions_refuse_bad_input():
    with pytest.raises(TopologyError, match="switch nodes"):
        tex.line_graph(parse("hammingmesh:2x2:2x2"))
    loop = Topology(spec="loopy", kind="x", num_compute=2, num_nodes=2, link_src=np.array([0, 1, 1]),
                    link_dst=np.array([1, 0, 1]), link_bandwidth=np.ones(3), link_latency=np.zeros(3))
    with pytest.raises(TopologyError, match="loopy.*self-loops"):
        tex.line_graph(loop)
    with pytest.raises(TopologyError, match="genkautz:2:5 is not regular"):
        tex.degree_expansion(parse("genkautz:2:5"), 2)
    for call in (lambda: tex.degree_expansion(parse("ring:4"), 0), lambda: tex.cartesian_power(parse("ring:4"), 0),
                 lambda: tex.line_graph(parse("ring:4"), 0), lambda: tex.degree_expansion(parse("ring:4"), 1.5)):
        with pytest.raises(SpecError, match="ring:4"):
            call()
    with pytest.raises(TopologyError, match="at least two"):
        tex.cartesian_product(parse("ring:4"))
    with pytest.raises(TopologyError, match="expected a Topology"):
        tex.bidirectional("ring:4")


# -- spec strings ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, nodes, degree, canonical", [
    ("line^3(circulant:16:3,4)", 1024, 4, "line^3(circulant:16:3,4)"),
    ("power(product(ring:4:uni,ring:8:uni),2)", 1024, 4, "power(product(ring:4:uni,ring:8:uni),2)"),
    ("line(line(complete:4))", 36, 3, "line^2(complete:4)"),
    ("line^2(line(bipartite:2))", 32, 2, "line^3(bipartite:2)"),
    ("degree(circulant:16:3,4,2)", 32, 8, "degree(circulant:16:3,4,2)"),
    ("product(circulant:8:1,2,ring:4)", 32, 6, "product(circulant:8:1,2,ring:4)"),
    ("product(ring:4, circulant:8:1,2, twistedtorus:4x4x8:4,4)", 4096, 12,
     "product(ring:4,circulant:8:1,2,twistedtorus:4x4x8:4,4)"),
    ("BIDIR( uniring:5 )", 5, 2, "bidir(ring:5:uni)"),
    ("degree(line(kautz:2:2),3)", 36, 6, "degree(line(kautz:2:2),3)"),
    ("power(bidir(circulant:7:1,2:uni),2)", 49, 8, "power(bidir(circulant:7:1,2:uni),2)"),
])
def test_nested_specs_parse_and_round_trip(spec, nodes, degree, canonical):
    topo = parse(spec)
    assert (topo.num_compute, tex.regular_degree(topo), topo.spec) == (nodes, degree, canonical)
    again = parse(topo.spec)
    assert again.spec == canonical and same_links(again, topo)


def test_spec_tree_keeps_commas_of_family_arguments():
    tree = parse_tree("product(circulant:8:1,2,line^2(ring:4),twistedtorus:4x4x8:4,4)")
    assert [str(c) for c in tree.children] == ["circulant:8:1,2", "line^2(ring:4)", "twistedtorus:4x4x8:4,4"]
    tree = parse_tree("degree(circulant:16:3,4,2)")
    assert (tree.op, tree.n, str(tree.children[0])) == ("degree", 2, "circulant:16:3,4")


def test_aliases_build_the_canonical_families():
    assert parse("uniring:6").spec == "ring:6:uni"
    assert parse("twisted-hypercube:3").spec == "twistedhypercube:3"
    assert parse("twisted-torus:4x8:4").spec == "twistedtorus:4x8:4"
    for name, spec, nodes in [("petersen", "petersen", 10), ("linegraph_petersen", "linegraph_petersen", 15),
                              ("octahedron", "circulant:6:1,2", 6), ("paley9", "hamming:2:3", 9),
                              ("odd4", "odd:4", 35), ("q4", "hypercube:4", 16),
                              ("bipartite_minus_matching:5", "bipartite_minus_matching:5", 10)]:
        topo = parse(f"distreg:{name}")
        assert (topo.spec, topo.num_compute) == (spec, nodes)
        assert intersection_array(topo) is not None, name
    assert parse("line(distreg:octahedron)").spec == "line(circulant:6:1,2)"
    assert parse("ring:16").spec == "ring:16" and parse("circulant:16:3,4:uni").num_compute == 16


@pytest.mark.parametrize("spec, error, message", [
    ("line(ring:4", SpecError, "expected ')' closing line"),
    ("line^0(ring:4)", SpecError, "integer >= 1"),
    ("line^(ring:4)", SpecError, "exponent K"),
    ("degree(ring:4)", SpecError, "the integer n of degree"),
    ("power(ring:4,x)", SpecError, "the integer n of power"),
    ("product(ring:4)", SpecError, "at least two"),
    ("product(ring:4,)", SpecError, "expected a topology spec"),
    ("power^2(ring:4)", SpecError, "only line takes an exponent"),
    ("foo(ring:4)", SpecError, "an operator"),
    ("line(ring:4))", SpecError, "unbalanced"),
    ("line()", SpecError, "expected a topology spec"),
    ("", SpecError, "empty"),
    ("line(bogus:3)", SpecError, "unknown topology spec 'bogus:3'"),
    ("distreg:dodecahedron", SpecError, "one of petersen, linegraph_petersen"),
    ("line(hammingmesh:2x2:2x2)", TopologyError, "switch nodes"),
    ("degree(genkautz:2:5,2)", TopologyError, "not regular"),
])
def test_spec_errors_say_what_was_expected(spec, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse(spec)


_LEAVES = ["ring:3:uni", "complete:3", "bipartite:2", "circulant:5:1,2:uni", "circulant:7:1,3"]


@st.composite
def spec_trees(draw, depth=2):
    """(spec, N, d) of random nested expansions with the sizes Table 3 predicts."""
    if depth == 0 or draw(st.booleans()):
        leaf = draw(st.sampled_from(_LEAVES))
        topo = parse(leaf)
        return leaf, topo.num_compute, tex.regular_degree(topo)
    op = draw(st.sampled_from(["line", "degree", "power", "product", "bidir"]))
    spec, n, d = draw(spec_trees(depth=depth - 1))
    if op == "line":
        k = draw(st.integers(1, 2))
        return (f"line({spec})" if k == 1 else f"line^{k}({spec})"), d ** k * n, d
    if op in ("degree", "power"):
        m = draw(st.integers(1, 2))
        return f"{op}({spec},{m})", (m * n if op == "degree" else n ** m), m * d
    if op == "bidir":
        return f"bidir({spec})", n, 2 * d
    spec2, n2, d2 = draw(spec_trees(depth=depth - 1))
    return f"product({spec},{spec2})", n * n2, d + d2


@settings(max_examples=40, deadline=None)
@given(spec_trees())
def test_random_nested_specs_have_table_3_sizes(case):
    spec, nodes, degree = case
    topo = parse(spec)
    assert (topo.num_compute, tex.regular_degree(topo)) == (nodes, degree)
    assert same_links(parse(topo.spec), topo)


# -- expanded schedules ----------------------------------------------------------------------------------------
EXPANDED = [f"line({b})" for b in BASES if b != "ring:4:uni"] + [  # line of a cycle: see below
    "line^2(complete:4)", "line^2(bipartite:2)",
    "degree(complete:4,2)", "degree(bipartite:3,3)", "degree(ring:4:uni,2)", "degree(kautz:2:2,2)",
    "degree(circulant:8:1,2,2)",
    "power(ring:4:uni,2)", "power(complete:3,3)", "power(bipartite:2,2)", "power(kautz:2:2,2)",
    "power(hamming:1:3,2)",
    "product(ring:4:uni,complete:3)", "product(bipartite:2,ring:3:uni,complete:2)",
    "bidir(ring:4:uni)", "bidir(circulant:7:1,2:uni)",
    "line(degree(ring:3:uni,2))", "power(line(complete:3),2)", "degree(power(ring:3:uni,2),2)",
    "line(bidir(ring:4:uni))", "line(torus:2x3)",  # parallel links in the base
]


@pytest.mark.parametrize("spec", EXPANDED)
def test_expanded_schedules_verify_and_cost_what_the_theorems_predict(spec):
    topo = parse(spec)
    for coll in ("allgather", "reduce_scatter", "allreduce"):
        schedule = expanded_schedule(spec, coll)
        result = verify(schedule)
        assert result.ok, f"{spec} {coll}: {result.summary()}"
        assert schedule.nranks == schedule.nblocks == topo.num_compute
        assert set(zip(schedule.src.tolist(), schedule.dst.tolist(), strict=True)) <= links(topo)
        assert schedule.meta["topology"] == topo.spec
        want = predict(spec, coll)
        assert (want.nodes, want.degree) == (topo.num_compute, tex.regular_degree(topo))
        assert schedule.num_steps == want.t_l, f"{spec} {coll}"
        assert analyze(schedule, topo).t_b_m_over_b == pytest.approx(float(want.t_b), **TIGHT), f"{spec} {coll}"


def test_expanded_schedule_takes_a_topology_and_plain_specs():
    topo = parse("line(complete:3)")
    assert verify(expanded_schedule(topo, "allreduce")).ok
    plain = expanded_schedule("ring:5", "reduce_scatter")
    assert plain.algorithm == "bfb" and verify(plain).ok
    other = Topology(spec="line(complete:3)", kind="x", num_compute=6, num_nodes=6,
                     link_src=topo.link_src, link_dst=topo.link_dst[::-1].copy(),
                     link_bandwidth=topo.link_bandwidth, link_latency=topo.link_latency)
    with pytest.raises(TopologyError, match="differ"):
        expanded_schedule(other)
    with pytest.raises(ScheduleError, match="unknown collective"):
        expanded_schedule("line(complete:3)", "gather")


def test_bw_optimal_bases_give_exact_theorem_values():
    # BW-optimal bases: T_B = (N-1)/N, so the predictions are exact fractions
    n = 4
    base = Prediction(n, 3, 1, Fraction(n - 1, n))  # complete:4
    assert predict_line_graph(base, 2) == (36, 3, 3, Fraction(3, 4) + Fraction(1, 4) + Fraction(1, 12))
    assert predict_degree_expansion(base, 2) == (8, 6, 2, Fraction(7, 8))  # BW-optimal (Corollary 11.1)
    assert predict_cartesian_power(base, 3) == (64, 9, 3, Fraction(63, 64))  # BW-optimal (Corollary 12.1)
    assert predict_bidirectional(base) == (4, 6, 1, Fraction(3, 4))
    assert predict_cartesian_product(base, (3, 2, 1, Fraction(2, 3))) == (12, 5, 2, Fraction(11, 12))
    assert predict_cartesian_product(base, (3, 2, 1, Fraction(5, 6))).t_b is None  # no bound in the paper
    s = expanded_schedule("line^2(complete:4)")
    assert analyze(s, parse("line^2(complete:4)")).t_b_m_over_b == pytest.approx(13 / 12, **TIGHT)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 40), st.integers(2, 8), st.integers(1, 6))
def test_theorem_9_and_optimality_preservation(n, d, k):
    base = Prediction(n, d, 1, Fraction(n - 1, n))
    lk = predict_line_graph(base, k)
    # Corollary 7.1 closed form; Theorem 9: within 1 + 1/((d-1)N) of optimal
    assert lk.t_b == base.t_b + Fraction(d, d - 1) * (Fraction(1, n) - Fraction(1, d ** k * n))
    assert lk.t_b / Fraction(lk.nodes - 1, lk.nodes) <= 1 + Fraction(1, (d - 1) * n)
    for p in (predict_degree_expansion(base, k), predict_cartesian_power(base, min(k, 3))):
        assert p.t_b == Fraction(p.nodes - 1, p.nodes)


def test_paper_table_4_predictions():
    p = predict("line^3(circulant:16:3,4)")
    assert (p.nodes, p.degree, p.t_l, round(float(p.t_b), 3)) == (1024, 4, 6, 1.020)
    p = predict("power(product(ring:4:uni,ring:8:uni),2)")
    assert (p.nodes, p.degree, p.t_l, round(float(p.t_b), 3)) == (1024, 4, 20, 0.999)


def test_predictions_refuse_what_the_theorems_exclude():
    with pytest.raises(UnsupportedShapeError, match="d >= 2"):
        predict("line(ring:4:uni)")  # the line graph of a directed cycle is the cycle (Theorem 10)
    with pytest.raises(TopologyError, match="not regular"):
        predict("line(genkautz:2:5)")
    assert predict("product(genkautz:2:5,ring:3:uni)").t_b is None


def test_line_graph_of_a_directed_cycle_still_verifies():
    s = expanded_schedule("line(ring:4:uni)")
    assert verify(s).ok and s.num_steps <= 4


def test_public_constructions_take_any_neighbour_allgather():
    # the ring algorithm's allgather (two blocks per rank, interleaved ownership) as the base schedule
    g = parse("ring:5")
    ring = build("ring", g, "allgather")
    t_l, t_b = ring.num_steps, analyze(ring, g).t_b_m_over_b
    cases = [(line_graph_allgather(g, ring), tex.line_graph(g), predict_line_graph((5, 2, t_l, t_b))),
             (degree_expansion_allgather(g, ring, 2), tex.degree_expansion(g, 2),
              predict_degree_expansion((5, 2, t_l, t_b), 2)),
             (cartesian_power_allgather(g, ring, 2), tex.cartesian_power(g, 2),
              predict_cartesian_power((5, 2, t_l, t_b), 2))]
    for schedule, topo, want in cases:
        assert verify(schedule).ok and schedule.meta["base_algorithm"] == "ring"
        assert schedule.num_steps == want.t_l
        assert analyze(schedule, topo).t_b_m_over_b <= float(want.t_b) + 1e-9  # Theorem 7 is an upper bound
    u = parse("circulant:7:1,2:uni")
    s = bidirectional_allgather(u, bfb_allgather(u), reverse(bfb_reduce_scatter(u)))
    assert verify(s).ok and s.num_steps == 3
    assert analyze(s, tex.bidirectional(u)).t_b_m_over_b == pytest.approx(6 / 7, **TIGHT)
    p = cartesian_product_allgather(parse("ring:3:uni"), parse("complete:4"))  # Theorem 13: BW-optimal
    assert verify(p).ok and p.num_steps == 2 + 1
    assert analyze(p, parse("product(ring:3:uni,complete:4)")).t_b_m_over_b == pytest.approx(11 / 12, **TIGHT)


def test_constructions_refuse_unusable_schedules():
    g = parse("ring:5")
    with pytest.raises(ScheduleError, match="6 ranks but ring:5 has 5"):
        line_graph_allgather(g, bfb_allgather(parse("ring:6")))
    with pytest.raises(ScheduleError, match="needs an allgather"):
        degree_expansion_allgather(g, bfb_reduce_scatter(g), 2)
    with pytest.raises(ScheduleError, match="not a link of ring:5"):
        cartesian_power_allgather(g, bfb_allgather(parse("complete:5")), 2)
    with pytest.raises(TopologyError, match="not regular"):
        degree_expansion_allgather(parse("genkautz:2:5"), bfb_allgather(parse("genkautz:2:5")), 2)


@settings(max_examples=12, deadline=None)
@given(st.integers(3, 7), st.sampled_from(["line", "degree", "power", "bidir"]), st.integers(0, 10))
def test_random_directed_circulant_bases(n, op, seed):
    rng = np.random.default_rng(seed)
    offsets = sorted({1, int(rng.integers(1, n))})
    base = f"circulant:{n}:{','.join(map(str, offsets))}:uni"
    spec = {"line": f"line({base})", "degree": f"degree({base},2)", "power": f"power({base},2)",
            "bidir": f"bidir({base})"}[op]
    topo = parse(spec)
    schedule = expanded_schedule(spec, "allgather")
    assert verify(schedule).ok
    if op == "line" and len(offsets) == 1:
        return  # a directed cycle: Theorem 10 does not apply
    want = predict(spec)
    assert schedule.num_steps == want.t_l
    assert analyze(schedule, topo).t_b_m_over_b == pytest.approx(float(want.t_b), **TIGHT)


@pytest.mark.parametrize("spec", ["line(genkautz:2:5)", "power(genkautz:2:5,2)", "bidir(genkautz:2:5)",
                                  "line(debruijn:2:3)"])
def test_irregular_bases_still_give_verified_schedules(spec):
    # the constructions do not need regularity (only the cost theorems do); self-loop nodes have degree d-1
    for coll in ("allgather", "reduce_scatter", "allreduce"):
        assert verify(expanded_schedule(spec, coll)).ok, (spec, coll)


def test_punctured_is_a_leaf_of_the_expansions():
    """A punctured topology has no expansion theorem: the expansion algorithm refuses it, BFB schedules it, and
    expansions of it are still built (and verify)."""
    from directcoll.errors import UnsupportedShapeError
    from directcoll.registry import build
    from directcoll.synthesis.expansions import expanded_schedule
    from directcoll.verify import verify

    spec = "punctured(torus:4x4,links=2,seed=1)"
    with pytest.raises(UnsupportedShapeError, match="plain BFB"):
        build("expansion", spec)
    assert expanded_schedule(spec, "allreduce").meta["algorithm"] == "bfb"
    assert verify(expanded_schedule(f"line({spec})", "allgather")).ok


def test_links_of_their_own_are_a_base_of_the_expansions():
    """links(...) sets bandwidths or latencies that the expansion theorems do not assume: its schedule is built
    as a whole (BFB), never by an expansion of its argument, and a spec with it inside an expansion still works."""
    spec = "links(line(complete:4),bandwidth=100Gbps)"
    with pytest.raises(UnsupportedShapeError, match="plain BFB"):
        build("expansion", parse(spec), "allreduce")
    assert verify(build("bfb", parse(spec), "allreduce")).ok
    inner = parse("line(links(complete:4,bandwidth=100Gbps))")
    assert verify(build("expansion", inner, "allreduce")).ok
