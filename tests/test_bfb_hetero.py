"""BFB on heterogeneous links and in discrete chunks (Zhao et al. App. E.2, E.3): LP (14) with per-link latency,
the slow-link rule, the ``links(...)`` spec modifier, ``--chunks P`` and the MSCCL export along the LP's loads."""

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

from directcoll.cli.main import main
from directcoll.errors import SpecError, UnsupportedShapeError
from directcoll.export.msccl import import_msccl, to_msccl
from directcoll.registry import build
from directcoll.simulate.step import simulate
from directcoll.synthesis.bfb import bfb_allgather, bfb_reduce_scatter, build_bfb
from directcoll.topology import describe, parse
from directcoll.topology.files import write_network
from directcoll.verify import verify

SHARD_US = 50_000  # bytes of one shard that a 400 Gb/s (50 GB/s) link sends in 1 us

HETERO = ["links(ring:4,offset=1,latency=2us)",                      # Cayley, one slow direction
          "links(circulant:12:1,5,offset=5,latency=1500ns)",         # circulant, one long-latency link class
          "links(torus:3x4,dim=1,latency=2us,bandwidth=0.7x)",       # torus, one slow and narrow dimension
          "links(ring:6,link=0-1,latency=4us)"]                      # one named link: not translation-invariant


@pytest.mark.parametrize("spec", HETERO)
@pytest.mark.parametrize("size", [1e4, 2e5, 1e7])
def test_lp14_time_is_the_step_simulators(spec, size):
    """Every collective verifies, has D steps, and LP (14)'s time is the step model's with the same links."""
    t = parse(spec)
    for collective in ("allgather", "reduce_scatter", "allreduce"):
        s = build_bfb(t, collective, size=size)
        assert verify(s).ok
        d = describe(t).diameter
        assert s.num_steps == (2 * d if collective == "allreduce" else d)
        sim = simulate(s, t)  # no alpha / per-hop latency: each link's own latency and bandwidth
        assert float(sim.time(size)) == pytest.approx(s.meta["bfb_time_s"], rel=1e-9)
        if collective != "allreduce":  # T_B: the step model's slope at large sizes, in M/B
            big = 1e15
            slope = float(sim.time(2 * big) - sim.time(big)) / big
            assert slope * t.node_bandwidth == pytest.approx(float(s.meta["t_b_m_over_b_lp"]), rel=1e-6)


def test_latency_changes_the_loads_and_helps():
    """With the latency in the LP the schedule is faster at its size than the bandwidth-only one, and the rule
    never hurts (App. E.3)."""
    for spec, size in (("links(circulant:12:1,5,offset=5,latency=1500ns)", 1e5),
                       ("links(torus:4x4,link=1-0,latency=3us)", 4e5)):
        t = parse(spec)
        aware, kept, blind = (bfb_allgather(t, size=size), bfb_allgather(t, size=size, drop_slow_links=False),
                              bfb_allgather(t))
        times = [float(simulate(s, t).time(size)) for s in (aware, kept, blind)]
        assert times[0] < times[1] < times[2], (spec, times)
        assert aware.meta["bfb_dropped_links"] > 0 and kept.meta["bfb_dropped_links"] == 0


@pytest.mark.parametrize("slow_us, dropped", [(1.0, False), (1.05, False), (1.15, True), (2.0, True)])
def test_slow_link_rule_threshold(slow_us, dropped):
    """ring:4, clockwise links of latency a, the others 0.1 us, one shard = 1 us. In step 2 the opposite shard can
    come either way: LP (14) gives the clockwise link (1 - (a - 0.1)) / 2 shards while a - 0.1 < 1, so U =
    0.1 + (1 + a - 0.1) / 2; from a - 0.1 >= 1 its latency alone reaches U, the rule drops it and U = 1.1 us."""
    t = parse(f"links(ring:4,offset=1,latency={int(slow_us * 1000)}ns)")
    s = bfb_allgather(t, size=4 * SHARD_US)
    assert verify(s).ok
    assert s.meta["bfb_dropped_links"] == (4 if dropped else 0)
    cw = (s.dst - s.src) % 4 == 1
    assert bool(np.any(cw & (s.step == 1))) is not dropped  # the slow link carries data in step 2 iff kept
    step2 = 1.1 if dropped else 0.1 + (1 + slow_us - 0.1) / 2
    assert s.meta["bfb_time_s"] * 1e6 == pytest.approx(slow_us + 1 + step2)


def test_uniform_latency_gives_the_same_schedule():
    """Latencies shared by all links shift U only: the schedule is the bandwidth-only one, array for array."""
    for spec in ("torus:3x3", "kautz:2:2", "links(torus:3x4,latency=5us)", "links(ring:5,bandwidth=0.5x)"):
        t = parse(spec)
        plain = bfb_allgather(t)
        for sized in (bfb_allgather(t, size=1e3), bfb_reduce_scatter(t, size=1e9)):
            ref = plain if sized.collective == plain.collective else bfb_reduce_scatter(t)
            for name in ("step", "src", "dst", "piece_offsets", "piece_start", "piece_stop"):
                assert np.array_equal(getattr(sized, name), getattr(ref, name)), (spec, name)
            assert sized.denominator == ref.denominator and sized.meta["bfb_dropped_links"] == 0


def test_network_file_latencies_reach_the_lp(tmp_path):
    """A network file's per-link latencies and bandwidths flow into LP (14) like the spec modifier's."""
    t = parse("links(circulant:12:1,5,offset=5,latency=1500ns,bandwidth=0.5x)")
    path = tmp_path / "c12.edges"
    write_network(t, path)
    f = parse(f"file:{path}")
    assert np.array_equal(f.link_latency, t.link_latency) and not f.is_cayley
    a, b = bfb_allgather(t, size=1e5), bfb_allgather(f, size=1e5)
    assert verify(b).ok
    assert b.meta["bfb_time_s"] == pytest.approx(a.meta["bfb_time_s"], rel=1e-9)
    assert b.meta["bfb_dropped_links"] == a.meta["bfb_dropped_links"] > 0


def test_size_refused():
    with pytest.raises(UnsupportedShapeError, match="size must be a positive number"):
        bfb_allgather(parse("ring:4"), size=0)
    with pytest.raises(UnsupportedShapeError, match="chunks' and 'size'"):
        build_bfb(parse("ring:4"), "allgather", speed=1)


# -- discrete chunks (App. E.2) ----------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["torus:3x4", "twistedtorus:4x8:2", "circulant:11:2,3"])
def test_chunks_within_theorem_20(spec):
    """P chunks per shard: exact loads in multiples of 1/P, T_B >= the LP's and within Theorem 20's bound."""
    t = parse(spec)
    lp = float(bfb_allgather(t).meta["t_b_m_over_b_lp"])
    d, n, diam = int(t.out_degree.max()), t.num_compute, describe(t).diameter
    for p in (1, 2, 3, 8):
        s = bfb_allgather(t, chunks=p)
        assert verify(s).ok and s.denominator == p
        assert float(s.meta["t_b_m_over_b_relaxed"]) == pytest.approx(lp, rel=1e-6)
        got = float(s.meta["t_b_m_over_b_lp"])
        assert lp - 1e-9 <= got <= lp + d * (d**diam - 1) / ((d - 1) * p * n) + 1e-9


def test_chunks_approach_the_lp_on_heterogeneous_links():
    """Links of two bandwidths: the LP's loads are sevenths; T_B of P chunks falls towards the LP's as P grows
    and meets it at P = 7."""
    t = parse("links(circulant:8:1,3,offset=3,bandwidth=0.5x)")
    plain = bfb_allgather(t)
    assert plain.denominator == 7
    lp = float(plain.meta["t_b_m_over_b_lp"])
    gaps = []
    for p in (1, 8, 64, 7):
        s = bfb_allgather(t, chunks=p)
        assert verify(s).ok
        pieces = (s.piece_stop - s.piece_start)
        assert s.denominator == p and np.all(pieces > 0)  # every piece a whole number of 1/P chunks
        gaps.append(float(s.meta["t_b_m_over_b_lp"]) - lp)
    assert gaps[0] > gaps[1] > gaps[2] > 0 and gaps[3] == pytest.approx(0, abs=1e-12)


# -- MSCCL export along the LP's loads ---------------------------------------------------------------------------
def test_msccl_export_of_chunked_schedules_round_trips(tmp_path, capsys):
    """schedule --chunks P -> export -> import -> verify, through the command line."""
    spec = "links(circulant:8:1,3,offset=3,bandwidth=0.5x)"
    for collective in ("allgather", "allreduce"):
        sched, xml, back = (tmp_path / f"{collective}.{x}" for x in ("json", "xml", "back.json"))
        assert main(["schedule", "bfb", spec, "--collective", collective, "--chunks", "4", "-o", str(sched)]) == 0
        assert "with 4 chunks per shard" in capsys.readouterr().out
        assert main(["export", str(sched), "-o", str(xml)]) == 0
        assert main(["import", str(xml), "-o", str(back)]) == 0
        assert main(["verify", str(back)]) == 0


def test_msccl_export_rechunks_along_the_lp_loads():
    """Loads that need more chunks than max_chunks allows: the export rebuilds the schedule with P chunks per
    shard (App. E.2) instead of rounding piece ends, and the program still verifies after import."""
    s = build("bfb", "links(torus:3x4,dim=1,latency=2us,bandwidth=0.7x)", "allreduce", size=1e7)
    assert s.denominator > 100
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no rounding warning
        result = to_msccl(s, max_chunks=4 * s.nranks)
    report = result.report
    assert report["chunks_per_block"] == 4 and not report["rounded"]
    assert report["bfb_along_lp_loads"]["from_chunks_per_block"] == s.denominator
    assert "along the LP" in result.xml.splitlines()[0]
    back = import_msccl(result.xml)
    assert verify(back).ok and back.collective == s.collective


# -- the spec modifier and the command line -----------------------------------------------------------------------
def test_links_modifier_forms():
    t = parse("links(links(torus:4x4,dim=0,bandwidth=0.5x),dim=1,latency=2us)")
    assert t.is_cayley and parse(t.spec).spec == t.spec
    vertical = (t.link_dst - t.link_src) % 4 == 0  # dimension 0 moves by 4 node ids
    assert np.allclose(t.link_bandwidth[vertical], 25e9) and np.allclose(t.link_bandwidth[~vertical], 50e9)
    assert np.allclose(t.link_latency[~vertical], 2e-6) and np.allclose(t.link_latency[vertical], 1e-7)
    c = parse("links(ring:6,cable=0-1,link=2-3,latency=10x)")
    slow = {(int(a), int(b)) for a, b, x in zip(c.link_src, c.link_dst, c.link_latency, strict=True) if x > 5e-7}
    assert slow == {(0, 1), (1, 0), (2, 3)}
    # simulate / compare keep the values a modifier set over the preset's; a cut of mixed rates has no one value
    from directcoll.simulate.params import resolve_network

    _, params, _ = resolve_network("links(ring:4,offset=1,latency=2us)", "swing-sst")
    assert params.link_latency is None and params.link_bandwidth == 50e9
    assert describe(t).bisection_bandwidth_bytes_per_s is None and describe(t).bisection_links == 8
    for bad, why in (("links(torus:3x3,offset=1,latency=1us)", "one-dimensional"),
                     ("links(ring:4,link=0-2,latency=1us)", "chooses no link"),
                     ("links(ring:4,latency=5)", "needs its unit"), ("links(ring:4,dim=0)", "bandwidth=B")):
        with pytest.raises(SpecError, match=why):
            parse(bad)


def test_cli_json_errors_and_note(tmp_path):
    out = subprocess.run([sys.executable, "-m", "directcoll.cli.main", "schedule", "bfb",
                          "links(ring:4,offset=1,latency=2us)", "--collective", "allgather", "--sizes", "200kB",
                          "--chunks", "2", "-o", str(tmp_path / "r.json"), "--json"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    meta = json.loads(out.stdout)["meta"]
    assert meta["chunks"] == 2 and meta["size_bytes"] == 200_000 and meta["bfb_dropped_links"] == 4
    bad = subprocess.run([sys.executable, "-m", "directcoll.cli.main", "schedule", "ring", "ring:4", "--chunks", "2",
                          "-o", str(tmp_path / "x.json")], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
    assert "--chunks applies to" in bad.stderr and "bfb" in bad.stderr
    mixed = subprocess.run([sys.executable, "-m", "directcoll.cli.main", "schedule", "bfb",
                            "links(ring:4,dim=0,link=0-1,latency=2us)", "-o", str(tmp_path / "y.json")],
                           capture_output=True, text=True, timeout=120)
    assert mixed.returncode == 2 and mixed.stderr.startswith("directcoll: error: links(ring:4")
    assert mixed.stderr.count("\n") == 1 and "one selector kind" in mixed.stderr


def test_cli_note_without_a_size(tmp_path, capsys):
    """Latencies that differ and no --sizes: BFB balances bandwidth only, and says so on stderr."""
    assert main(["schedule", "bfb", "links(ring:4,offset=1,latency=2us)", "-o", str(tmp_path / "r.json")]) == 0
    err = capsys.readouterr().err
    assert "differ in latency" in err and "--sizes" in err
    assert main(["schedule", "bfb", "ring:4", "-o", str(tmp_path / "p.json")]) == 0
    assert "note" not in capsys.readouterr().err
