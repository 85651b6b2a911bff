"""``compare`` (reports/compare.py, reports/plot.py) and the ``compare`` and ``simulate`` commands."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import replace

import numpy as np
import pytest

from directcoll.cli.main import main
from directcoll.errors import DirectcollError
from directcoll.registry import build_pattern
from directcoll.reports.compare import compare
from directcoll.reports.comparison import Comparison, Entry
from directcoll.reports.contenders import (
    BFB_GRID_MAX_RANKS,
    DBT_CHUNKS,
    DEFAULT_CONTENDERS,
    Contender,
    default_contenders,
    default_policy,
    grid_embeds,
    is_direct_connect,
)
from directcoll.reports.plot import letter, plot_comparison
from directcoll.simulate import SWING_SST
from directcoll.topology import parse

PNG = b"\x89PNG\r\n\x1a\n"
MiB = 2**20
DEFAULT_SIZES = [2**k for k in range(5, 30)]  # 32 B .. 512 MiB


@pytest.fixture(scope="module")
def cmp8():
    return compare(parse("torus:8x8"), params=SWING_SST)


def family_best(cmp) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for e in cmp.entries:
        out[e.family] = np.minimum(out[e.family], e.times) if e.family in out else e.times
    return out


def test_compare_torus_8x8_default_contenders(cmp8):
    assert cmp8.topology == "torus:8x8" and cmp8.collective == "allreduce" and cmp8.routing == "adaptive"
    assert cmp8.sizes.tolist() == DEFAULT_SIZES
    # the Swing paper's families, and BFB on a switchless torus
    assert list(cmp8.families()) == ["swing", "recursive-doubling", "ring", "bucket", "bfb"]
    assert [(e.family, e.algorithm) for e in cmp8.entries] == [(c.family, c.algorithm) for c in DEFAULT_CONTENDERS + [
        Contender("bfb", "bfb")]]
    assert cmp8.reference == "swing" and cmp8.gain_family == "swing"
    assert [e.variant for e in cmp8.entries][:4] == ["latency", "bandwidth", "latency", "bandwidth"]
    assert not cmp8.skipped
    for e in cmp8.entries:
        assert e.times.shape == cmp8.sizes.shape and np.all(e.times > 0) and np.all(np.diff(e.times) > 0)
    # peak goodput: half the injection bandwidth (4 links of 50 GB/s) times p / (p - 1)
    assert cmp8.peak_goodput == pytest.approx(4 * 50e9 / 2 * 64 / 63)
    for e in cmp8.entries:
        assert np.all(cmp8.goodput(e.times) < cmp8.peak_goodput)


def test_winners_gain_and_best_other_are_consistent(cmp8):
    best = family_best(cmp8)
    fams = cmp8.families()
    for fam, (times, variants) in fams.items():
        np.testing.assert_array_equal(times, best[fam])
        mine = {e.variant: e.times for e in cmp8.entries if e.family == fam}
        assert all(mine[v][j] == times[j] for j, v in enumerate(variants))
    tol = cmp8.tie_tolerance
    fastest = np.min(list(best.values()), axis=0)
    for j, tie in enumerate(cmp8.ties()):  # the tie: every family within the tolerance of the fastest
        assert set(tie) == {f for f in best if best[f][j] <= fastest[j] * (1 + tol)} and tie[0] == cmp8.winners()[j][0]
    for fam in ("swing", "bucket"):  # the rival: best outside the tie when fam ties for first, else the winner
        gain, rivals = cmp8.gain(fam), cmp8.best_other(fam)
        for j, tie in enumerate(cmp8.ties()):
            outside = [f for f in best if f != fam and (fam not in tie or f not in tie)]
            rival = min(outside, key=lambda f: best[f][j])
            assert rivals[j] == rival and gain[j] == pytest.approx(best[rival][j] / best[fam][j] - 1, rel=1e-12)
            assert (fam in tie) == (gain[j] >= -tol / (1 + tol))
    # at 128 MiB .. 512 MiB bucket and BFB are within 0.4 % of each other: a tie, and bucket's gain is taken
    # against the best family outside it
    assert cmp8.ties()[-1][:2] in (["bfb", "bucket"], ["bucket", "bfb"]) and cmp8.best_other("bucket")[-1] != "bfb"
    assert cmp8.gain("nonesuch") is None
    # the paper's shape on a small torus: Swing latency-optimal wins small vectors, a bandwidth algorithm
    # (Swing or bucket) the largest ones
    winners = cmp8.winners()
    assert winners[0][:2] == ("swing", "latency") and winners[-1][1] == "bandwidth"


def test_to_dict(cmp8):
    d = cmp8.to_dict()
    assert {"topology", "collective", "params", "sizes", "results", "best"} <= set(d)
    assert d["topology"] == "torus:8x8" and d["collective"] == "allreduce" and d["sizes"] == DEFAULT_SIZES
    assert d["params"]["name"] == SWING_SST.name and d["params"]["link_bandwidth"] == 50e9
    assert len(d["results"]) == 25 * len(cmp8.entries)
    for r in d["results"]:
        assert {"algorithm", "variant", "size", "time_s", "goodput_Bps"} <= set(r)
        assert r["goodput_Bps"] == pytest.approx(r["size"] / r["time_s"])
    assert [b["size"] for b in d["best"]] == DEFAULT_SIZES
    for b, w, g in zip(d["best"], cmp8.winners(), cmp8.gain(), strict=True):
        assert {"size", "algorithm", "goodput_Bps"} <= set(b)
        assert b["algorithm"] == w[0] and b["goodput_Bps"] == pytest.approx(b["size"] / w[2])
        assert b["swing_gain"] == pytest.approx(g)
    json.dumps(d)  # plain JSON


def test_to_csv(cmp8):
    rows = list(csv.DictReader(io.StringIO(cmp8.to_csv())))
    assert len(rows) == len(cmp8.sizes) * len(cmp8.entries)
    assert {"algorithm", "variant", "size_bytes", "time_s", "goodput_Bps"} <= set(rows[0])
    first = cmp8.entries[0]
    assert rows[0]["algorithm"] == first.algorithm and int(rows[0]["size_bytes"]) == 32
    assert float(rows[0]["time_s"]) == pytest.approx(first.times[0], rel=1e-8)


def test_contenders_that_refuse_are_skipped():
    cmp = compare(parse("torus:6x10"), "reduce_scatter", sizes=[1024, MiB], params=SWING_SST)
    skipped = {(s.contender.algorithm, s.contender.variant): s.reason for s in cmp.skipped}
    assert ("recursive-doubling", "bandwidth") in skipped
    assert "power of two" in skipped["recursive-doubling", "bandwidth"]
    assert all(reason for reason in skipped.values()) and {s.kind for s in cmp.skipped} == {"shape"}
    assert {"swing", "ring", "bucket"} <= set(cmp.families())
    assert "recursive-doubling" not in cmp.families()
    assert cmp.peak_goodput == pytest.approx(4 * 50e9 * 60 / 59)
    assert cmp.to_dict()["skipped"] == [s.to_dict() for s in cmp.skipped]


def test_no_contender_serving_raises():
    contenders = [("recursive-doubling", "recursive-doubling", "bandwidth"), ("swing", "swing", "latency")]
    with pytest.raises(DirectcollError, match="no algorithm runs"):
        compare(parse("torus:6x10"), "reduce_scatter", sizes=[1024], contenders=contenders)
    with pytest.raises(DirectcollError, match="unknown model"):
        compare(parse("torus:4x4"), model="bogus")


def test_compare_routing_and_alone():
    topo = parse("torus:4x4")
    dor = compare(topo, sizes=[64 * MiB], params=SWING_SST, routing="dor")
    adaptive = compare(topo, sizes=[64 * MiB], params=SWING_SST)
    assert dor.routing == "dor"
    # one path instead of all minimal paths: never faster
    for a, b in zip(adaptive.entries, dor.entries, strict=True):
        assert b.times[0] >= a.times[0] * (1 - 1e-12)
    alone = compare(topo, sizes=[1024, MiB], contenders=[("swing", "swing", "bandwidth")])
    assert alone.gain() is None and alone.winners()[0][0] == "swing"


@pytest.mark.parametrize("sizes", [[2**k for k in range(5, 30)], [MiB, 64 * MiB], [1024]])
def test_plot_writes_a_png(tmp_path, sizes):
    cmp = compare(parse("torus:4x4"), sizes=sizes, params=SWING_SST)
    path = plot_comparison(cmp, tmp_path / "c.png")
    data = path.read_bytes()
    assert data.startswith(PNG) and len(data) > 10_000
    assert letter("swing") == "S" and letter("bucket") == "B" and letter("other") == "O"


# -- the command line -------------------------------------------------------------------------------------
def run(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def run_json(capsys, *argv):
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def test_cli_compare_table(capsys):
    code, out, _ = run(capsys, "compare")
    assert code == 0
    assert "allreduce on torus:8x8" in out and "swing gain" in out and "512MiB" in out and "32B" in out
    assert "Peak goodput" in out and "swing-sst" in out


def test_cli_compare_json(capsys):
    d = run_json(capsys, "compare")
    assert {"topology", "collective", "params", "sizes", "results", "best", "notes"} <= set(d)
    assert d["topology"] == "torus:8x8" and d["sizes"] == DEFAULT_SIZES and len(d["sizes"]) == 25
    assert d["sizes"][0] == 32 and d["sizes"][-1] == 512 * MiB
    assert len(d["best"]) == 25 and len(d["results"]) == 25 * len(default_contenders(parse("torus:8x8")))
    assert d["gain_family"] == "swing" and all(b["gain"] == b["swing_gain"] for b in d["best"])
    assert d["params"]["name"] == "swing-sst"
    lib = compare(parse("torus:8x8"), params=SWING_SST).to_dict()
    assert [r["time_s"] for r in d["results"]] == pytest.approx([r["time_s"] for r in lib["results"]], rel=1e-12)


def test_cli_compare_csv(capsys):
    code, out, _ = run(capsys, "compare", "torus:4x4", "--csv", "--sizes", "1KiB..1MiB")
    assert code == 0
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 11 * len(default_contenders(parse("torus:4x4")))
    assert {r["algorithm"] for r in rows} == {"swing", "recursive-doubling", "ring", "bucket", "bfb"}


def test_cli_compare_plot(tmp_path, capsys):
    path = tmp_path / "cmp.png"
    code, out, _ = run(capsys, "compare", "--plot", str(path))
    assert code == 0 and f"plot written to {path}" in out
    data = path.read_bytes()
    assert data.startswith(PNG) and len(data) > 10_000
    # large sizes only (no small-vector inset), one family (no gain panel), JSON output
    path2 = tmp_path / "big.png"
    d = run_json(capsys, "compare", "torus:4x4", "--sizes", "1MiB,64MiB", "--algorithms", "swing",
                 "--plot", str(path2))
    assert d["sizes"] == [MiB, 64 * MiB] and path2.read_bytes().startswith(PNG)


def test_cli_compare_presets(capsys):
    d = run_json(capsys, "compare", "trn1")
    assert d["topology"] == "torus:4x4"
    assert any("Trainium" in n for n in d["notes"]) and any("trn1" in n for n in d["notes"])
    d = run_json(capsys, "compare", "tpu-v4-cube", "--sizes", "1KiB,1MiB")
    assert d["topology"] == "torus:4x4x4" and d["sizes"] == [1024, MiB]
    assert any("TPU" in n for n in d["notes"])
    assert len(d["results"]) == 2 * len(default_contenders(parse("torus:4x4x4")))


def test_cli_compare_options(capsys):
    d = run_json(capsys, "compare", "torus:6x10", "--collective", "reduce_scatter", "--sizes", "1KiB,1MiB")
    assert d["collective"] == "reduce_scatter"
    assert any(s["algorithm"] == "recursive-doubling" for s in d["skipped"])
    d = run_json(capsys, "compare", "torus:4x4", "--routing", "dor", "--sizes", "64MiB")
    assert d["routing"] == "dor"
    d = run_json(capsys, "compare", "torus:4x4", "--sizes", "swing_sweep")
    assert d["sizes"] == DEFAULT_SIZES
    d = run_json(capsys, "compare", "torus:4x4", "--sizes", "1MiB", "--link-bandwidth", "100Gbps",
                 "--algorithms", "bucket,rabenseifner")
    assert d["params"]["link_bandwidth"] == pytest.approx(12.5e9)
    assert {(r["algorithm"], r["variant"]) for r in d["results"]} == {("bucket", "bandwidth"),
                                                                      ("rabenseifner", "bandwidth")}


def test_ties_over_the_orders_of_the_transfers():
    # the packet engine's times in several orders of each step's transfers: B is 3 % slower as built, but its
    # fastest order is within 0.5 % of A's slowest, so the engine cannot tell them apart; C's ranges never meet A's
    sizes = np.array([1024.0])
    entries = [Entry("a", "a", "", np.array([1.00e-6]), spread=np.array([[0.99e-6, 1.02e-6]])),
               Entry("b", "b", "", np.array([1.03e-6]), spread=np.array([[1.024e-6, 1.05e-6]])),
               Entry("c", "c", "", np.array([1.04e-6]), spread=np.array([[1.03e-6, 1.04e-6]]))]
    cmp = Comparison("ring:4", "alltoall", SWING_SST, "adaptive", "packet", sizes, entries, orderings=3)
    assert cmp.ties() == [["a", "b"]]
    assert cmp.to_dict()["results"][1]["time_range_s"] == [1.024e-6, 1.05e-6]
    assert "3 orders of the transfers" in cmp.conditions()
    as_built = Comparison("ring:4", "alltoall", SWING_SST, "adaptive", "packet", sizes,
                          [replace(e, spread=None) for e in entries])
    assert as_built.ties() == [["a"]]
    with pytest.raises(DirectcollError, match="only with the packet model"):
        compare(parse("ring:4"), sizes=[1024], contenders=["ring"], orderings=2)


@pytest.mark.parametrize(("argv", "message"), [
    (["compare", "torus:0x3"], "torus"),
    (["compare", "nonesuch"], "nonesuch"),
    (["compare", "ipu-pod64"], "no topology"),
    (["compare", "--sizes", "12XB"], "cannot read sizes"),
    (["compare", "--sizes", "1MiB..1KiB"], "cannot read sizes"),
    (["compare", "--algorithms", "nonesuch"], "unknown algorithm"),
    (["compare", "--params", "nonesuch"], "unknown system preset"),
    (["compare", "--orderings", "3"], "--orderings 3: the packet model's option"),
])
def test_cli_compare_errors(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("directcoll: error:") and message in err and "Traceback" not in err


def test_cli_simulate(tmp_path, capsys):
    path = tmp_path / "swing.json"
    assert main(["schedule", "swing", "torus:4x4", "-o", str(path)]) == 0
    capsys.readouterr()
    d = run_json(capsys, "simulate", str(path), "--size", "64MiB")
    assert {"time_s", "steps"} <= set(d)
    assert d["size"] == 64 * MiB and d["topology"] == "torus:4x4" and d["algorithm"] == "swing"
    assert len(d["steps"]) == 8
    for row in d["steps"]:
        assert {"bytes_max_link", "hops_max", "time_s"} <= set(row)
        assert row["bytes_max_link"] > 0 and row["hops_max"] >= 1 and row["time_s"] > 0
    assert d["time_s"] == pytest.approx(sum(r["time_s"] for r in d["steps"]), rel=1e-12)
    assert d["goodput_Bps"] == pytest.approx(64 * MiB / d["time_s"])
    lib = compare(parse("torus:4x4"), sizes=[64 * MiB], params=SWING_SST,
                  contenders=[("swing", "swing", "bandwidth")])
    assert d["time_s"] == pytest.approx(lib.entries[0].times[0], rel=1e-12)
    # the table form, and a topology that does not fit the file
    code, out, _ = run(capsys, "simulate", str(path), "--size", "64MiB")
    assert code == 0 and "per step" in out and "torus:4x4" in out
    code, _, err = run(capsys, "simulate", str(path), "--size", "64MiB", "--topology", "torus:8x8")
    assert code == 2 and "16 ranks" in err
    code, _, err = run(capsys, "simulate", str(path), "--size", "lots")
    assert code == 2 and "cannot read size" in err


# -- direct-connect topologies (Zhao et al. Sec. 8.2-8.3) -------------------------------------------------
@pytest.fixture(scope="module")
def cmp_circulant():
    return compare(parse("circulant:16:3,4"), params=SWING_SST)


def test_direct_connect_classification():
    assert not is_direct_connect(parse("torus:8x8")) and not is_direct_connect(parse("hypercube:4"))
    assert not is_direct_connect(parse("hammingmesh:2x2:2x2"))  # switches
    for spec in ("circulant:16:3,4", "genkautz:4:64", "complete:8", "bipartite:4", "circulant:15:1,4"):
        assert is_direct_connect(parse(spec)), spec
    assert grid_embeds(parse("torus:4x4")) and grid_embeds(parse("circulant:16:1,5"))
    assert grid_embeds(parse("complete:8")) and grid_embeds(parse("hamming:2:4"))
    assert not grid_embeds(parse("circulant:16:3,4")) and not grid_embeds(parse("genkautz:4:64"))
    assert not grid_embeds(parse("bipartite:4"))


def test_default_contenders_per_network():
    families = [c.family for c in default_contenders(parse("circulant:16:3,4"))]
    assert families == ["bfb", "ring", "shifted-ring", *["double-binary-tree"] * len(DBT_CHUNKS),
                        "recursive-doubling", "recursive-doubling"]
    assert [c.options["chunks"] for c in default_contenders(parse("circulant:16:3,4"))
            if "chunks" in c.options] == list(DBT_CHUNKS)
    # Swing and bucket join where the torus of the shape is a subgraph (a circulant with offset 1)
    assert {"swing", "bucket"} <= {c.family for c in default_contenders(parse("circulant:16:1,5"))}
    # the generalized allreduce for non-power-of-two N, no double binary tree but for allreduce
    odd = default_contenders(parse("circulant:15:1,4"), "reduce_scatter")
    assert "generalized" in {c.family for c in odd} and "double-binary-tree" not in {c.family for c in odd}
    # grids: the Swing paper's contenders plus BFB at any size where it plans by translation (tori)
    assert default_contenders(parse("torus:8x8")) == [*DEFAULT_CONTENDERS, Contender("bfb", "bfb")]
    assert default_policy(parse("torus:64x64")) == ([*DEFAULT_CONTENDERS, Contender("bfb", "bfb")], [])
    assert "bfb" not in {c.family for c in default_contenders(parse("hammingmesh:2x2:2x2"))}
    # meshes: every rank solves its own LPs, so BFB is a stated cutoff beyond BFB_GRID_MAX_RANKS ranks
    run, skipped = default_policy(parse("mesh:33x32"))
    assert parse("mesh:33x32").num_compute > BFB_GRID_MAX_RANKS and "bfb" not in {c.family for c in run}
    assert [(s.contender.family, s.kind) for s in skipped][:1] == [("bfb", "cutoff")]
    assert "bfb" in {c.family for c in default_policy(parse("mesh:33x32"), cutoffs=False)[0]}


def test_compare_circulant_bfb_wins_large_vectors(cmp_circulant):
    cmp = cmp_circulant
    topo = parse("circulant:16:3,4")
    assert list(cmp.families()) == ["bfb", "ring", "shifted-ring", "double-binary-tree", "recursive-doubling"]
    assert not cmp.skipped and cmp.reference == "bfb" and cmp.gain_family == "bfb"
    assert {e.variant for e in cmp.entries if e.family == "double-binary-tree"} == {f"P={p}" for p in DBT_CHUNKS}
    # BFB takes 2 x diameter steps (3 + 3 on C(16, {3, 4})), the ring 2 (N - 1) = 30, and BFB is BW-optimal
    # here (Zhao et al. Sec. 6.2): at 512 MiB its goodput is the peak's, the ring's at most half of it
    from directcoll.topology.metrics import distance_stats

    assert build_pattern("bfb", topo).num_steps == 2 * distance_stats(topo)[0] == 6
    assert build_pattern("ring", topo).num_steps == 30
    fams = cmp.families()
    goodput = {f: cmp.sizes[-1] / t[-1] for f, (t, _) in fams.items()}
    assert goodput["bfb"] == pytest.approx(cmp.peak_goodput, rel=0.01)
    assert goodput["ring"] <= 0.51 * cmp.peak_goodput
    winners = cmp.winners()
    assert all(w[0] == "bfb" for w in winners[-8:])  # 2 MiB .. 512 MiB
    gain = cmp.gain()
    np.testing.assert_allclose(gain, np.min([t for f, (t, _) in fams.items() if f != "bfb"], axis=0)
                               / fams["bfb"][0] - 1)
    assert np.all(gain[-8:] > 0)
    d = cmp.to_dict()
    assert d["gain_family"] == "bfb"
    for b, g in zip(d["best"], gain, strict=True):
        assert b["gain_family"] == "bfb" and b["gain"] == pytest.approx(g) and "swing_gain" not in b


def test_compare_genkautz():
    cmp = compare(parse("genkautz:4:64"), sizes=[1024, MiB, 64 * MiB], params=SWING_SST)
    assert {"bfb", "ring", "shifted-ring", "double-binary-tree", "recursive-doubling"} == set(cmp.families())
    assert cmp.gain_family == "bfb" and not cmp.skipped
    fams = cmp.families()
    best = min(fams, key=lambda f: fams[f][0][-1])
    assert cmp.winners()[-1][0] == best


def test_cli_compare_direct_connect(capsys):
    code, out, _ = run(capsys, "compare", "circulant:16:3,4", "--sizes", "1KiB,64MiB", "--wide")
    assert code == 0 and "bfb gain" in out and "swing gain" not in out and "P=" in out
    d = run_json(capsys, "compare", "circulant:16:3,4", "--sizes", "1KiB,64MiB")
    assert d["gain_family"] == "bfb" and {"bfb", "shifted-ring", "double-binary-tree"} <= {
        r["algorithm"] for r in d["results"]}
    d = run_json(capsys, "compare", "torus:4x4", "--sizes", "1MiB", "--algorithms", "dbt,swing")
    assert {(r["algorithm"], r["variant"]) for r in d["results"] if r["algorithm"] != "swing"} == {
        ("double-binary-tree", f"P={p}") for p in DBT_CHUNKS}


def test_expansion_topologies_compare_the_expanded_schedule():
    """On a spec built by expansion operators, the expanded schedule (Zhao et al. Sec. 5) competes beside BFB;
    for a line graph of a BFB base both are optimal BFB schedules (Theorem 10), so their T_B match."""
    from directcoll.topology.spec import parse

    cmp = compare(parse("line(bipartite:3)"), sizes=[2**10, 2**26])
    fams = cmp.families()
    assert "expansion" in fams and "bfb" in fams
    assert fams["expansion"][0][-1] == pytest.approx(fams["bfb"][0][-1], rel=1e-9)
    assert "expansion" not in compare(parse("circulant:16:3,4"), sizes=[2**10]).families()
