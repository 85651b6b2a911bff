"""BFB schedules (Zhao et al. Sec. 6.1): every schedule verifies, T_L = diameter, BW-optimal on tori and rings."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from directcoll.cost.analytic import analyze
from directcoll.errors import DirectcollError, UnsupportedShapeError
from directcoll.registry import build, get
from directcoll.schedule.ir import Collective
from directcoll.synthesis.bfb import bfb_allgather, bfb_reduce_scatter, build_bfb
from directcoll.topology.families import torus
from directcoll.topology.paths import bfs_distances
from directcoll.topology.spec import parse
from directcoll.verify.exact import verify

SPECS = ["torus:3x3", "torus:4x4", "torus:5x4x3", "ring:7", "ring:8", "hypercube:3", "complete:5", "hyperx:3x3",
         "petersen", "circulant:13:opt4", "genkautz:3:20"]
BW_OPTIMAL = ["torus:3x3", "torus:4x4", "torus:5x4x3", "torus:3x7", "torus:6x3x4", "torus:3x3x3x3", "ring:7", "ring:8",
              "ring:5", "hypercube:5"]
#: distance-regular graphs (Zhao et al. App. F.3) and other symmetric families of Sec. 6.2
DISTANCE_REGULAR = ["petersen", "odd:4", "linegraph_petersen", "hamming:2:3", "hamming:3:3", "bipartite:4",
                    "bipartite_minus_matching:5", "complete:6", "hypercube:4", "distreg:octahedron", "distreg:paley9",
                    "distreg:q5", "distreg:odd3", "distreg:bipartite_minus_matching:4", "distreg:hamming:2:5"]


def _topology(spec):
    try:
        return parse(spec)
    except DirectcollError as exc:
        pytest.skip(f"{spec} does not parse here: {exc}")


def _diameter(topo):
    n = topo.num_compute
    return int(bfs_distances(topo, np.arange(n))[:, :n].max())


@pytest.mark.parametrize("spec", SPECS)
def test_bfb_verifies_with_diameter_steps(spec):
    topo = _topology(spec)
    d = _diameter(topo)
    for coll, steps in (("allgather", d), ("reduce_scatter", d), ("allreduce", 2 * d)):
        schedule = build_bfb(topo, coll)
        assert schedule.collective is Collective.parse(coll)
        result = verify(schedule)
        assert result.ok, f"{spec} {coll}: {result.summary()}"
        assert schedule.num_steps == steps
        assert schedule.nblocks == topo.num_compute


@pytest.mark.parametrize("spec", BW_OPTIMAL)
def test_bfb_allgather_is_bandwidth_optimal(spec):
    topo = _topology(spec)
    n = topo.num_compute
    schedule = bfb_allgather(topo)
    report = analyze(schedule, topo)
    assert report.t_b_m_over_b == pytest.approx((n - 1) / n, abs=1e-9)
    assert schedule.meta["t_b_m_over_b_lp"] == pytest.approx((n - 1) / n, abs=1e-9)


@pytest.mark.parametrize("n", [5, 7, 8, 9, 12])
def test_bfb_ring_has_half_the_steps_and_is_bandwidth_optimal(n):
    schedule = bfb_allgather(parse(f"ring:{n}"))
    assert schedule.num_steps == n // 2
    assert analyze(schedule, parse(f"ring:{n}")).t_b_m_over_b == pytest.approx((n - 1) / n, abs=1e-12)


@pytest.mark.parametrize("shape", [(3, 3), (5, 4, 3), (4, 6), (3, 3, 3), (7, 3)])
def test_bfb_torus_latency_is_sum_of_half_dimensions(shape):
    spec = "torus:" + "x".join(map(str, shape))
    schedule = bfb_allgather(parse(spec))
    assert schedule.num_steps == sum(d // 2 for d in shape)
    assert verify(schedule).ok


@pytest.mark.parametrize("spec", DISTANCE_REGULAR)
def test_bfb_distance_regular_is_bandwidth_optimal(spec):
    topo = _topology(spec)
    n = topo.num_compute
    schedule = bfb_allgather(topo)
    assert verify(schedule).ok
    assert schedule.num_steps == _diameter(topo)
    assert analyze(schedule, topo).t_b_m_over_b == pytest.approx((n - 1) / n, abs=1e-12)


def test_bfb_cayley_and_generic_paths_agree():
    """The Cayley shortcut (node 0's LPs translated) gives the loads the per-node LPs give."""
    topo = parse("torus:5x4x3")
    generic = replace(topo, port_offsets=None)
    fast, slow = bfb_allgather(topo), bfb_allgather(generic)
    assert fast.meta["bfb_lps"] <= fast.num_steps < slow.meta["bfb_lps"] or slow.meta["bfb_lps"] == fast.num_steps
    assert fast.meta["t_b_m_over_b_lp"] == pytest.approx(slow.meta["t_b_m_over_b_lp"], abs=1e-12)
    assert verify(slow).ok and verify(fast).ok
    assert analyze(fast, topo).t_b_m_over_b == pytest.approx(analyze(slow, topo).t_b_m_over_b, abs=1e-12)


@pytest.mark.parametrize("spec", ["genkautz:3:20", "kautz:2:3", "circulant:13:opt4", "torus:4x5"])
@pytest.mark.parametrize("chunks", [1, 2, 7])
def test_bfb_discrete_chunks_meet_theorem_20(spec, chunks):
    """App. E.2: with P chunks per shard, T_B <= T_B^LP + (M/B) d (d^D - 1) / ((d - 1) P N) (Theorem 20)."""
    topo = parse(spec)
    exact, chunked = bfb_allgather(topo), bfb_allgather(topo, chunks=chunks)
    assert chunked.denominator == chunks and verify(chunked).ok
    n, d, diam = topo.num_compute, topo.num_links // topo.num_compute, chunked.num_steps
    bound = d * (d ** diam - 1) / ((d - 1) * chunks * n)
    t_b = analyze(chunked, topo).t_b_m_over_b
    assert analyze(exact, topo).t_b_m_over_b - 1e-12 <= t_b <= exact.meta["t_b_m_over_b_lp"] + bound + 1e-12


def test_bfb_heterogeneous_links_follow_bandwidth():
    """LP (14) with α = 0: a link twice as fast carries twice the load when it has the choice."""
    topo = parse("torus:4x4")
    bw = topo.link_bandwidth.copy()
    bw[topo.link_src == 0] *= 2
    fast = replace(topo, link_bandwidth=bw)
    schedule = bfb_allgather(fast)
    assert verify(schedule).ok
    plain = bfb_allgather(topo)
    # T_B in seconds (t_b_m_over_b is in units of M/B and B, node 0's bandwidth, doubled)
    assert (schedule.meta["t_b_m_over_b_lp"] / fast.node_bandwidth
            <= plain.meta["t_b_m_over_b_lp"] / topo.node_bandwidth * (1 + 1e-12))
    sent = np.bincount(schedule.src, weights=schedule.transfer_size, minlength=16)
    assert sent[0] > sent[1:].mean()


def test_bfb_rejects_bad_chunks():
    with pytest.raises(UnsupportedShapeError, match="chunks"):
        bfb_allgather(parse("ring:4"), chunks=0)


def test_bfb_transfers_use_links_and_are_exact():
    topo = parse("torus:4x4")
    schedule = bfb_allgather(topo)
    links = set(zip(topo.link_src.tolist(), topo.link_dst.tolist(), strict=True))
    assert set(zip(schedule.src.tolist(), schedule.dst.tolist(), strict=True)) <= links
    # every rank receives exactly N-1 shards in total
    received = np.bincount(schedule.dst, weights=schedule.transfer_size * schedule.nblocks, minlength=16)
    assert np.allclose(received, 15)


def test_bfb_registered():
    alg = get("bfb")
    assert set(alg.collectives) == {"allgather", "reduce_scatter", "allreduce"}
    assert alg.variants == ("bandwidth",)
    schedule = build("bfb", "hypercube:3", "allreduce", variant="bandwidth")
    assert verify(schedule).ok and schedule.meta["algorithm"] == "bfb"
    with pytest.raises(UnsupportedShapeError):
        build("bfb", "ring:4", "allreduce", bogus=1)


def test_bfb_unidirectional_ring_uses_only_its_links():
    topo = parse("ring:6:uni")
    links = set(zip(topo.link_src.tolist(), topo.link_dst.tolist(), strict=True))
    for coll in ("allgather", "reduce_scatter", "allreduce"):
        schedule = build_bfb(topo, coll)
        assert verify(schedule).ok
        assert set(zip(schedule.src.tolist(), schedule.dst.tolist(), strict=True)) <= links
        assert schedule.num_steps == (5 if coll != "allreduce" else 10)


@pytest.mark.parametrize("shape", [(3, 3, 2), (4, 2), (2, 2, 3), (5, 2, 3)])
def test_bfb_size_two_dimension(shape):
    """A size-2 dimension is two parallel cables by default (not a simple graph: Theorem 13 does not apply and
    BFB is not BW-optimal there); ``simple=True`` keeps one cable and BFB is BW-optimal (degree 2D - 1)."""
    cabled, simple = torus(shape), torus(shape, simple=True)
    n = cabled.num_compute
    assert simple.num_links == cabled.num_links - n * shape.count(2)
    t_cabled = analyze(bfb_allgather(cabled), cabled).t_b_m_over_b
    schedule = bfb_allgather(simple)
    assert verify(schedule).ok and schedule.num_steps == sum(d // 2 for d in shape)
    assert analyze(schedule, simple).t_b_m_over_b == pytest.approx((n - 1) / n, abs=1e-12)
    assert t_cabled > (n - 1) / n + 1e-9


def test_simple_torus_spec():
    topo = parse("torus:3x3x2:simple")
    assert topo.spec == "torus:3x3x2:simple" and topo.num_links == 18 * 5
    assert np.array_equal(topo.link_dst, torus((3, 3, 2), simple=True).link_dst)
    with pytest.raises(DirectcollError, match="simple"):
        parse("torus:3x3:bogus")


#: every generative family of Zhao et al. Sec. 6.2 / App. F at several sizes and degrees
GENERATIVE = ["complete:3", "complete:7", "bipartite:2", "bipartite:5", "hamming:2:4", "hamming:3:2", "ring:10",
              "uniring:7", "circulant:12:1,5", "circulant:20:opt4", "circulant:15:2,3,7", "circulant:11:1,3:uni",
              "genkautz:2:9", "genkautz:3:30", "genkautz:4:70", "kautz:2:2", "kautz:3:2", "debruijn:2:4",
              "debruijn:3:2", "hypercube:2", "hypercube:6", "twisted-hypercube:4", "twisted-torus:4x8:4",
              "twisted-torus:3x3x6:3,3", "distreg:octahedron", "distreg:paley9", "distreg:q4", "distreg:odd3",
              "bipartite_minus_matching:4", "line(complete:4)", "power(ring:3:uni,2)", "degree(bipartite:2,2)"]


@pytest.mark.parametrize("spec", GENERATIVE)
def test_bfb_allreduce_on_generative_topologies(spec, tmp_path, capsys):
    """The issue's first Done-when line, through the CLI: `schedule bfb SPEC --collective allreduce` verifies."""
    from directcoll.cli.main import main

    out = tmp_path / "s.npz"
    assert main(["schedule", "bfb", spec, "--collective", "allreduce", "-o", str(out)]) == 0
    assert main(["verify", str(out), "--json"]) == 0
    assert '"ok": true' in capsys.readouterr().out


@pytest.mark.parametrize("spec", ["torus:5x4x3", "circulant:16:3,4", "circulant:11:1,3:uni", "ring:7:uni",
                                  "hamming:2:3", "twisted-torus:4x8:4"])
def test_bfb_reduce_scatter_by_isomorphism_equals_by_transpose(spec):
    """Theorem 2 (x -> -x maps a Cayley graph of an abelian group onto its transpose) gives the reduce-scatter
    of Theorem 1's transposed-graph allgather, at the same cost and on the topology's own links."""
    from directcoll.schedule.ops import reverse
    from directcoll.synthesis.bfb.plan import link_graph
    from directcoll.synthesis.bfb.schedule import _allgather_on, _meta

    topo = parse(spec)
    iso = bfb_reduce_scatter(topo)
    transposed = reverse(_allgather_on(link_graph(topo, True), None, _meta(None)))
    assert verify(iso).ok and verify(transposed).ok
    links = set(zip(topo.link_src.tolist(), topo.link_dst.tolist(), strict=True))
    assert set(zip(iso.src.tolist(), iso.dst.tolist(), strict=True)) <= links
    assert iso.num_steps == transposed.num_steps
    assert analyze(iso, topo).t_b_m_over_b == pytest.approx(analyze(transposed, topo).t_b_m_over_b, abs=1e-12)


def test_relabel_checks_its_maps():
    from directcoll.schedule.ops import relabel

    ag = bfb_allgather(parse("ring:5"))
    with pytest.raises(DirectcollError, match="permutation"):
        relabel(ag, [0, 1, 2, 3, 3])
    moved = relabel(ag, [4, 3, 2, 1, 0])
    assert verify(moved).ok
