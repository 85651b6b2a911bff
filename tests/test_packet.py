"""The ns-3 packet engine against closed forms, and against the flow model where the two must agree."""

import json
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from directcoll.errors import DirectcollError, ResourceError, TopologyError
from directcoll.registry import build
from directcoll.schedule.pattern import from_steps
from directcoll.simulate import SWING_SST, NetworkParams, simulate
from directcoll.simulate.flow import simulate_flow
from directcoll.simulate.packet import HEADER_BYTES, available, lower, packet_times, simulate_packet
from directcoll.topology import parse

pytestmark = [pytest.mark.packet,
              pytest.mark.skipif(not available(), reason="ns-3 is not installed (apt-get install libns3-dev "
                                                         "libgsl-dev pkg-config; see the README)")]

BW, LAT, HOP, ALPHA = 50e9, 100e-9, 300e-9, 1e-6   # 400 Gb/s links, 100 ns, 300 ns per hop, 1 us per message
PARAMS = NetworkParams(alpha=ALPHA, per_hop_latency=HOP, link_bandwidth=BW, link_latency=LAT, packet_size=4096,
                       forwarding="store-and-forward")
CUT_THROUGH = PARAMS.with_(forwarding="cut-through", packet_header=16)


def pattern(nranks, steps):
    """Pattern from distinct steps given as (src, dst, size) or (src, dst, size, reduce), each step once."""
    steps = [st if len(st) == 4 else (*st, False) for st in steps]
    return from_steps(nranks, "allreduce", steps, list(range(len(steps))))


def one_message(nbytes: int, hops: int, params: NetworkParams = PARAMS) -> float:
    """One message of ``nbytes`` over ``hops`` links, pipelined over the hops packet by packet: each further hop
    waits for a whole packet (store-and-forward) or for its header (cut-through)."""
    header = max(HEADER_BYTES, params.packet_header)
    packets = max(1, -(-nbytes // params.packet_size))
    first = header + (min(nbytes, params.packet_size) if params.forwarding == "store-and-forward" else 0)
    return (params.alpha + hops * (params.link_latency + params.per_hop_latency)
            + (nbytes + header * packets) / params.link_bandwidth + (hops - 1) * first / params.link_bandwidth)


@pytest.mark.parametrize("params", [PARAMS, CUT_THROUGH], ids=["store-and-forward", "cut-through"])
@pytest.mark.parametrize("nbytes", [0, 1000, 4096, 1_000_000])
@pytest.mark.parametrize("hops", [1, 2, 3])
def test_one_message_over_h_hops_is_the_pipelined_closed_form(nbytes, hops, params):
    # ring:8 unidirectional: 0 -> hops is the only minimal path, with `hops` links
    r = simulate_packet(pattern(8, [([0], [hops], [1.0])]), parse("ring:8:uni"), nbytes, params)
    assert r.time_s == pytest.approx(one_message(nbytes, hops, params), rel=1e-9, abs=1e-12)
    assert r.packets == max(1, -(-nbytes // 4096))
    assert r.link_bytes.sum() == hops * (nbytes + r.header_bytes * r.packets)


@pytest.mark.parametrize("params", [PARAMS, CUT_THROUGH], ids=["store-and-forward", "cut-through"])
@pytest.mark.parametrize("nbytes", [0, 1000, 4096, 1_000_000])
def test_the_step_and_flow_models_price_packets_as_the_engine_does(nbytes, params):
    # one message over 3 hops: headers on the wire and the pipeline's fill, in all three engines
    pat, topo = pattern(8, [([0], [3], [1.0])]), parse("ring:8:uni")
    params = params.with_(packet_header=max(HEADER_BYTES, params.packet_header))
    expected = one_message(nbytes, 3, params)
    one_header = params.packet_header / params.link_bandwidth   # the models count max(1, B / P) headers, not ceil
    assert float(simulate(pat, topo, params).time(nbytes)) == pytest.approx(expected, rel=1e-12, abs=one_header)
    assert simulate_flow(pat, topo, nbytes, params).time_s == pytest.approx(expected, rel=1e-12, abs=one_header)


def test_two_flows_sharing_a_link_take_twice_as_long_disjoint_ones_do_not():
    topo = parse("ring:4:uni")     # 0 -> 1 -> 2 -> 3 -> 0
    plain = NetworkParams(link_bandwidth=1e9, link_latency=0.0, packet_size=1000, forwarding="store-and-forward")
    shared = simulate_packet(pattern(4, [([0, 1], [2, 2], [1.0, 1.0])]), topo, 1e6, plain)   # both cross 1 -> 2
    disjoint = simulate_packet(pattern(4, [([0, 2], [1, 3], [1.0, 1.0])]), topo, 1e6, plain)
    wire = 1e6 + HEADER_BYTES * 1000                                # bytes of one message on the wire
    assert disjoint.time_s == pytest.approx(wire / 1e9, rel=1e-9)
    # link 1 -> 2 carries both messages back to back; the first packet of 0's message reaches it one packet later
    assert shared.time_s == pytest.approx(2 * wire / 1e9, rel=2e-3)
    assert shared.time_s > 1.99 * disjoint.time_s


def test_a_ring_step_is_one_neighbour_message_per_rank():
    topo = parse("ring:8")
    src = np.arange(8)
    r = simulate_packet(pattern(8, [(src, (src + 1) % 8, np.full(8, 1.0))]), topo, 65536, PARAMS)
    assert r.time_s == pytest.approx(one_message(65536, 1), rel=1e-9)
    assert r.rank_step_end.shape == (8, 1)
    np.testing.assert_allclose(r.rank_step_end[:, 0], r.time_s, rtol=1e-9)


def test_steps_wait_for_their_data_and_reductions_cost_gamma():
    topo = parse("ring:4:uni")
    gamma = 1e-10
    params = NetworkParams(link_bandwidth=BW, link_latency=LAT, gamma=gamma, packet_size=4096,
                           forwarding="store-and-forward")
    # step 0: 0 -> 1 reduces; step 1: 1 -> 2 may start only once rank 1 has received and reduced
    r = simulate_packet(pattern(4, [([0], [1], [1.0], [True]), ([1], [2], [1.0])]), topo, 40960, params)
    one = one_message(40960, 1, params)
    reduced = one + gamma * 40960
    # a sender is done when its last packet has left (one link latency before it arrives)
    assert r.rank_step_end[1].tolist() == pytest.approx([reduced, reduced + one - LAT], rel=1e-9)
    assert r.rank_step_end[2, 1] == pytest.approx(reduced + one, rel=1e-9)
    assert r.time_s == pytest.approx(2 * one + gamma * 40960, rel=1e-9)


@pytest.mark.parametrize("spec,algorithm", [("torus:4x4", "ring"), ("torus:4x4", "swing"),
                                            ("torus:4x4", "bucket"), ("hypercube:3", "recursive-doubling")])
def test_symmetric_schedules_agree_with_the_flow_model_at_large_sizes(spec, algorithm):
    # bandwidth-bound and symmetric: every flow of a step has the same bottleneck, so packets and fluid agree up
    # to packetisation (headers, the pipeline's fill over hops)
    topo = parse(spec)
    schedule = build(algorithm, topo)
    size, params = 2**22, SWING_SST.with_(packet_header=HEADER_BYTES)   # the models carry the engine's header
    packet = simulate_packet(schedule, topo, size, params).time_s
    flow = simulate_flow(schedule, topo, size, params).time_s
    assert packet == pytest.approx(flow, rel=0.01)


def test_dimension_order_routing_uses_one_path_per_transfer():
    topo = parse("torus:4x4")
    pat = pattern(16, [([0], [10], [1.0])])                # (0,0) -> (2,2): 4 hops, 6 minimal paths
    dor = simulate_packet(pat, topo, 2**20, PARAMS, routing="dor")
    adaptive = simulate_packet(pat, topo, 2**20, PARAMS, routing="adaptive")
    assert dor.time_s == pytest.approx(one_message(2**20, 4), rel=1e-9)
    assert (dor.link_bytes > 0).sum() == 4
    assert (adaptive.link_bytes > 0).sum() > 4               # spread over several minimal paths
    assert adaptive.time_s < dor.time_s


def test_the_step_model_and_packet_engine_agree_on_a_latency_bound_allreduce():
    topo = parse("torus:4x4")
    schedule = build("swing", topo, variant="latency")
    packet = simulate_packet(schedule, topo, 32, SWING_SST).time_s
    step = float(simulate(schedule, topo, SWING_SST).time(32))
    assert packet == pytest.approx(step, rel=0.01)


def test_short_transfers_give_the_engines_time_and_winner_on_a_large_torus():
    # torus:32x32 at 64 KiB: latency-optimal Swing runs four ports, each sending a quarter of the vector (16 KiB,
    # 0.33 us a link: under a hop's 0.4 us) to peers up to 11 hops away. Such transfers pass each link as one
    # unit; timed first come, first served the step model gives the engine's 20.1 us, where its additive lines
    # gave 30.6 us and named BFB (26.3 us, one-hop steps) the winner
    topo = parse("torus:32x32")
    params = SWING_SST.with_(packet_header=HEADER_BYTES)
    times = {}
    for name, variant in (("swing", "latency"), ("bfb", None)):
        schedule = build(name, topo, variant=variant)
        times[name] = simulate_packet(schedule, topo, 65536, params).time_s
        assert float(simulate(schedule, topo, params).time(65536)) == pytest.approx(times[name], rel=1e-3)
    assert times["swing"] < 0.8 * times["bfb"]


def test_packet_times_sweeps_sizes():
    topo = parse("ring:4")
    times = packet_times(build("ring", topo), topo, [1024, 2**16], SWING_SST)
    assert times.shape == (2,) and times[0] < times[1]


def test_refusals():
    topo = parse("ring:4")
    schedule = build("ring", topo)
    with pytest.raises(ResourceError, match="packet-hops"):
        lower(schedule, topo, 2**40, NetworkParams())
    with pytest.raises(DirectcollError, match="finite"):
        lower(schedule, topo, float("nan"), NetworkParams())
    with pytest.raises(TopologyError, match="ranks"):
        lower(schedule, parse("ring:5"), 1024, NetworkParams())


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "directcoll.cli.main", *args], capture_output=True, text=True)


def test_compare_times_each_contender_in_several_orders_of_its_transfers(tmp_path):
    # torus:8x4 all-to-all at 128 KiB: as built, direct (4.56 us) loses to extended-path MCF (4.04 us) by 13 %; in
    # other orders of its transfers direct takes as little as 3.75 us: ns-3 cannot tell the two apart
    argv = ("compare", "torus:8x4", "--collective", "alltoall", "--model", "packet", "--sizes", "128KiB",
            "--algorithms", "direct,mcf", "--json")
    docs = [json.loads(run.stdout) for run in (_cli(*argv, "--orderings", "3"), _cli(*argv))]
    ranged, built = docs
    assert ranged["orderings"] == 3 and built["orderings"] == 1
    for r, b in zip(ranged["results"], built["results"], strict=True):
        lo, hi = r["time_range_s"]
        assert lo <= r["time_s"] == b["time_s"] <= hi and "time_range_s" not in b
    direct = next(r for r in ranged["results"] if r["algorithm"] == "direct")
    assert direct["time_range_s"][0] < 0.85 * direct["time_s"]
    assert built["best"][0]["ties"] == ["mcf"] and ranged["best"][0]["ties"] == ["mcf", "direct"]
    # simulate gives the same range for the same schedule and seeds
    path = tmp_path / "direct.json"
    assert _cli("schedule", "direct", "torus:8x4", "--collective", "alltoall", "-o", str(path)).returncode == 0
    one = json.loads(_cli("simulate", str(path), "--model", "packet", "--sizes", "128KiB", "--orderings", "3",
                          "--json").stdout)
    assert one["time_range_s"] == direct["time_range_s"] and one["time_s"] == direct["time_s"]


def test_compare_and_simulate_take_model_packet(tmp_path):
    run = _cli("compare", "ring:4", "--model", "packet", "--sizes", "1KiB,64KiB", "--json")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["model"] == "packet" and doc["sizes"] == [1024, 65536]
    path = tmp_path / "ring.json"
    assert _cli("schedule", "ring", "ring:4", "-o", str(path)).returncode == 0
    run = _cli("simulate", str(path), "--size", "64KiB", "--model", "packet", "--packet-size", "1KiB", "--json")
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    # 6 steps x 4 ranks x 2 directions x 8 KiB (half of a 16 KiB block) in packets of 1 KiB
    assert out["model"] == "packet" and out["packets"] == 6 * 4 * 2 * 8
    assert len(out["rank_step_end_s"]) == 4 and len(out["steps"]) == 6


def test_a_source_serves_its_transfers_in_turn_so_an_all_to_all_loads_links_evenly():
    # every rank sends to every other at once: round-robin injection and adaptive routing spread the bytes over
    # the links as the fluid models' even split does (a source that always served its lowest-numbered destination
    # first loaded the links of hypercube:4 from 2.6 to 6.1 MB where the even split gives 4.2 MB)
    topo = parse("hypercube:4")
    schedule = build("direct", topo, "alltoall")
    params = SWING_SST.with_(packet_header=HEADER_BYTES)
    r = simulate_packet(schedule, topo, 2**21, params)
    assert r.link_bytes.max() < 1.25 * r.link_bytes.min()   # the skew was 2.3x
    assert r.time_s == pytest.approx(float(simulate(schedule, topo, params).time(2**21)), rel=0.05)


@pytest.mark.parametrize("nbytes", [1000, 4096, 1_000_000])
def test_cut_through_sends_no_byte_before_it_arrived_from_a_slower_link(nbytes):
    # 0 -> 2 over a link ten times slower, then a full-rate one: the last byte leaves the slow link, crosses the
    # router and goes on at once, so the time is the slow link's serialisation plus each hop's latency (the fast
    # link must not finish a packet before its tail has arrived)
    topo = parse("links(ring:8:uni,link=0-1,bandwidth=0.1x)", link_bandwidth=BW, link_latency=LAT)
    params = replace(CUT_THROUGH, link_bandwidth=None, link_latency=None)   # the links' own values
    r = simulate_packet(pattern(8, [([0], [2], [1.0])]), topo, nbytes, params)
    wire = nbytes + r.header_bytes * r.packets
    expected = ALPHA + 2 * (LAT + HOP) + wire / (0.1 * BW)
    assert r.time_s == pytest.approx(expected, rel=1e-9)
