"""The packet engine's flow control: credits against the credit loop's closed form, datelines and hop-count
virtual channels against deadlock, and a deadlock reported in one line naming its cycle."""

import contextlib
import io
import json

import numpy as np
import pytest

from directcoll.cli.main import main
from directcoll.errors import DeadlockError, DirectcollError, TopologyError
from directcoll.registry import build
from directcoll.schedule.pattern import from_steps
from directcoll.simulate import NetworkParams
from directcoll.simulate.packet import HEADER_BYTES, FlowControl, available, link_dimensions, simulate_packet
from directcoll.topology import bfs_distances, parse

pytestmark = [pytest.mark.packet,
              pytest.mark.skipif(not available(), reason="ns-3 is not installed (apt-get install libns3-dev "
                                                         "libgsl-dev pkg-config; see the README)")]

P = 1000                                   # payload bytes per packet
LAT = 5e-6                                 # link latency, s
PARAMS = NetworkParams(link_bandwidth=1e9, link_latency=LAT, packet_size=P, forwarding="store-and-forward")
WIRE = (P + HEADER_BYTES) / 1e9            # one packet's serialisation, s


def pattern(nranks, steps):
    """Pattern from distinct steps given as (src, dst, size), each step once."""
    return from_steps(nranks, "allreduce", [(*st, False) for st in steps], list(range(len(steps))))


def credit_loop(n: int, k: int, credit_delay: float = 0.0) -> float:
    """n packets over one link whose far end buffers k of them: packet j may start once the link is free and the
    credit of packet j - k is back (that packet arrived, a latency after it was serialised, and its credit took a
    latency and the credit delay back); the last arrival ends it."""
    start, end = np.zeros(n), np.zeros(n)
    for j in range(n):
        credit = end[j - k] + 2 * LAT + credit_delay if j >= k else 0.0
        start[j] = max(credit, end[j - 1] if j else 0.0)
        end[j] = start[j] + WIRE
    return end[-1] + LAT


@pytest.mark.parametrize("k, credit_delay", [(1, 0.0), (3, 0.0), (3, 2e-6), (20, 0.0)])
def test_one_flow_is_paced_by_its_credit_loop(k, credit_delay):
    n = 60
    flow = FlowControl(buffer_bytes=k * (P + HEADER_BYTES), credit_delay=credit_delay)
    r = simulate_packet(pattern(8, [([0], [1], [1.0])]), parse("ring:8:uni"), n * P, PARAMS, flow=flow)
    assert r.time_s == pytest.approx(credit_loop(n, k, credit_delay), rel=1e-9)
    if k * WIRE < WIRE + 2 * LAT + credit_delay:      # a credit-bound loop: k packets per round trip
        assert r.time_s > 1.5 * (n * WIRE + LAT)


def test_two_flows_share_a_credit_bound_link_at_its_loop_rate():
    """0 -> 2 and 1 -> 2 both cross 1 -> 2, whose far end buffers k packets: together they move k packets per
    round trip of its credits, each flow half of that."""
    n, k = 200, 2
    flow = FlowControl(buffer_bytes=k * (P + HEADER_BYTES))
    r = simulate_packet(pattern(4, [([0, 1], [2, 2], [1.0, 1.0])]), parse("ring:4:uni"), n * P, PARAMS, flow=flow)
    loop = WIRE + 2 * LAT
    assert r.time_s == pytest.approx(2 * n * loop / k, rel=0.02)
    unbounded = simulate_packet(pattern(4, [([0, 1], [2, 2], [1.0, 1.0])]), parse("ring:4:uni"), n * P, PARAMS)
    assert unbounded.time_s == pytest.approx(2 * n * WIRE, rel=0.02)   # the link's rate, without flow control


def test_buffers_that_never_fill_change_nothing():
    t = parse("torus:4x4")
    ring = build("ring", t, "allreduce")
    plain = simulate_packet(ring, t, 2**20, PARAMS)
    deep = simulate_packet(ring, t, 2**20, PARAMS, flow=FlowControl(buffer_bytes=2**30))
    assert deep.time_s == plain.time_s and np.array_equal(deep.link_bytes, plain.link_bytes)


SHIFT_TWO = pattern(4, [([0, 1, 2, 3], [2, 3, 0, 1], [1.0] * 4)])   # every rank two hops ahead on ring:4:uni


def test_a_ring_with_one_channel_deadlocks_and_says_where_in_one_line():
    flow = FlowControl(buffer_bytes=P + HEADER_BYTES)
    with pytest.raises(DeadlockError) as err:
        simulate_packet(SHIFT_TWO, parse("ring:4:uni"), 20 * P, PARAMS, "dor", flow=flow)
    message = str(err.value)
    assert "\n" not in message and "cycle of full buffers" in message
    for link in ("0->1 vc 0", "1->2 vc 0", "2->3 vc 0", "3->0 vc 0"):
        assert link in message


def test_datelines_make_the_same_ring_and_a_torus_deadlock_free():
    flow = FlowControl(buffer_bytes=P + HEADER_BYTES, virtual_channels=2, scheme="dateline")
    r = simulate_packet(SHIFT_TWO, parse("ring:4:uni"), 20 * P, PARAMS, "dor", flow=flow)
    assert r.time_s > 0 and r.packets == 80
    t = parse("torus:4x4")
    shift = pattern(16, [(list(range(16)), [(r + 6) % 16 for r in range(16)], [1.0] * 16)])
    with pytest.raises(DeadlockError, match="cycle of full buffers"):   # one channel: a column's ring locks
        simulate_packet(shift, t, 50 * P, PARAMS, "dor", flow=FlowControl(buffer_bytes=P + HEADER_BYTES))
    tight = simulate_packet(shift, t, 50 * P, PARAMS, "dor", flow=flow)
    free = simulate_packet(shift, t, 50 * P, PARAMS, "dor")
    assert tight.time_s > free.time_s                    # one packet of buffer: credit-bound, but it ends


def test_hop_count_channels_keep_an_arbitrary_graph_deadlock_free():
    """On a graph without dimensions, channel = hop index: with as many channels as the diameter, a packet only
    ever waits for a higher channel, so any minimal routing (adaptive here) ends."""
    t = parse("genkautz:3:10")
    n = t.num_compute
    diameter = int(bfs_distances(t).max())
    alltoall = pattern(n, [([s for s in range(n) for d in range(n) if d != s],
                            [d for s in range(n) for d in range(n) if d != s], [1.0] * (n * (n - 1)))])
    flow = FlowControl(buffer_bytes=P + HEADER_BYTES, virtual_channels=diameter, scheme="hops")
    r = simulate_packet(alltoall, t, 8 * P, PARAMS, flow=flow)
    assert r.time_s > simulate_packet(alltoall, t, 8 * P, PARAMS).time_s


def test_flow_control_is_checked_before_it_runs():
    with pytest.raises(DirectcollError, match="cannot hold one packet"):
        simulate_packet(SHIFT_TWO, parse("ring:4:uni"), P, PARAMS, flow=FlowControl(buffer_bytes=P))
    with pytest.raises(TopologyError, match="dimension-order"):
        simulate_packet(SHIFT_TWO, parse("ring:4:uni"), P, PARAMS, "adaptive",
                        flow=FlowControl(buffer_bytes=2 * P, virtual_channels=2, scheme="dateline"))
    with pytest.raises(TopologyError, match="torus's dimensions"):
        simulate_packet(pattern(10, [([0], [1], [1.0])]), parse("genkautz:3:10"), P, PARAMS, "dor",
                        flow=FlowControl(buffer_bytes=2 * P, virtual_channels=2, scheme="dateline"))
    for bad in ({"buffer_bytes": 0}, {"virtual_channels": 0}, {"scheme": "duato"},
                {"scheme": "dateline", "virtual_channels": 1}, {"credit_delay": -1.0},
                {"scheme": "duato", "virtual_channels": 3}, {"virtual_channels": 2}):  # the last two: no buffer
        with pytest.raises(DirectcollError, match="flow control"):
            FlowControl(**bad)


def test_link_dimensions_mark_each_torus_dimension_and_its_wrap_around_links():
    t = parse("torus:4x3")
    dim, wraps, way = link_dimensions(t)
    src, dst = t.coords(t.link_src), t.coords(t.link_dst)
    moved = (src != dst).argmax(axis=1)
    assert np.array_equal(dim, moved)
    rows = np.arange(t.num_links)
    side = np.asarray(t.shape)[dim]
    assert np.array_equal((src[rows, dim] + way) % side, dst[rows, dim]) and set(way.tolist()) == {-1, 1}
    far = np.abs(src - dst).max(axis=1) > 1                 # sides of 3 and 4: a wrap jumps across the side
    assert np.array_equal(wraps, far) and wraps.sum() == 2 * 3 + 2 * 4
    assert (link_dimensions(parse("genkautz:3:10"))[0] == -1).all()


def test_compare_skips_and_names_a_contender_that_deadlocks_and_says_what_it_assumed():
    """One channel (``--vc-scheme none``) locks the ring; the default, each schedule's fewest deadlock-free
    channels, and the dateline scheme do not."""
    common = ["compare", "ring:8:uni", "--model", "packet", "--sizes", "64KiB", "--routing", "dor",
              "--buffer", str(P + HEADER_BYTES), "--packet-size", str(P), "--json"]
    for extra, locked, scheme, channels in ((["--vc-scheme", "none"], True, "none", 1), ([], False, "auto", 1),
                                            (["--vc-scheme", "dateline"], False, "dateline", 2)):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(common + extra) == 0
        doc = json.loads(out.getvalue())
        deadlocked = [k for k in doc["skipped"] if k["kind"] == "deadlock"]
        assert bool(deadlocked) == locked
        assert all("cycle of full buffers" in k["reason"] for k in deadlocked)
        assert doc["flow_control"]["buffer_bytes"] == P + HEADER_BYTES
        assert (doc["flow_control"]["scheme"], doc["flow_control"]["virtual_channels"]) == (scheme, channels)


def test_simulate_with_a_buffer_alone_takes_the_schedules_deadlock_free_channels_and_says_which(tmp_path, capsys):
    """``--buffer`` without ``--vc-scheme``: dimension-order all-to-all on torus:4x4 (explicit routes of up to 4
    hops) gets 4 hop-indexed channels, Swing with adaptive routes Duato's 3, and named too few channels are
    refused in one line; one channel (``--vc-scheme none`` or ``--virtual-channels 1``) reports the deadlock it
    allows."""
    t = parse("torus:4x4")
    dor, swing = tmp_path / "dor.json", tmp_path / "swing.json"
    assert main(["schedule", "dor", t.spec, "--collective", "alltoall", "-o", str(dor)]) == 0
    assert main(["schedule", "swing", t.spec, "-o", str(swing)]) == 0
    capsys.readouterr()
    buffer = ["--model", "packet", "--sizes", "64KiB", "--buffer", str(8 * (P + HEADER_BYTES)), "--packet-size",
              str(P)]
    for path, flow in ((dor, {"scheme": "hops", "virtual_channels": 4}),
                       (swing, {"scheme": "duato", "virtual_channels": 3})):
        assert main(["simulate", str(path), *buffer, "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert {k: doc["flow_control"][k] for k in flow} == flow and doc["time_s"] > 0
    assert main(["simulate", str(swing), *buffer, "--virtual-channels", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "2 virtual channels are too few" in err[0] and "3 needed" in err[0]
    for one in (["--vc-scheme", "none"], ["--virtual-channels", "1"]):  # one channel, taken at its word
        assert main(["simulate", str(dor), *buffer, *one]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "cycle of full buffers" in err[0]


def test_duato_escape_channels_keep_adaptive_routing_on_a_torus_deadlock_free():
    """Adaptive minimal routing with one channel and one packet of buffer locks a torus; with Duato's protocol
    (adaptive channels 2.., escape channels 0-1 dimension-order with datelines) the same traffic ends, and an
    all-to-all too, whose packets find the one adaptive channel of one packet's buffer often full: they take the
    escape, or wait for whichever of the two frees first."""
    t = parse("torus:4x4")
    shift = pattern(16, [(list(range(16)), [(r + 5) % 16 for r in range(16)], [1.0] * 16)])
    one = FlowControl(buffer_bytes=P + HEADER_BYTES)
    with pytest.raises(DeadlockError, match="cycle of full buffers"):
        simulate_packet(shift, t, 50 * P, PARAMS, flow=one)
    duato = FlowControl(buffer_bytes=P + HEADER_BYTES, virtual_channels=3, scheme="duato")
    assert simulate_packet(shift, t, 50 * P, PARAMS, flow=duato).packets == 16 * 50
    n = 16
    alltoall = pattern(n, [([s for s in range(n) for d in range(n) if d != s],
                            [d for s in range(n) for d in range(n) if d != s], [1.0] * (n * (n - 1)))])
    r = simulate_packet(alltoall, t, 4 * P, PARAMS, flow=duato)
    assert r.time_s >= simulate_packet(alltoall, t, 4 * P, PARAMS).time_s
    assert r.escape_hops > 0 and r.adaptive_hops > 0
    assert r.escape_hops + r.adaptive_hops == 16 * 32 * 4  # one choice per hop: 32 hops from a rank, 4 packets
    with pytest.raises(TopologyError, match="adaptive"):
        simulate_packet(shift, t, P, PARAMS, "dor", flow=duato)
    with pytest.raises(DirectcollError, match="3 virtual channels"):
        FlowControl(buffer_bytes=2 * P, virtual_channels=2, scheme="duato")


def test_duato_lets_a_blocked_packet_take_whichever_channel_frees_first():
    """A packet that finds its adaptive channel full does not commit to the escape: it takes the escape if that one
    has credits, else waits for the first of the two to free (as a virtual-channel allocator offering every channel
    its routing allows). The direct all-to-all on torus:8x4 with one adaptive channel of one bandwidth-delay
    product then stays within 15 % of unbounded queues; queueing each such packet for its dimension-order escape
    made it about 1.5 times slower (tree saturation on the escape channels)."""
    from directcoll.simulate import SWING_SST
    from directcoll.simulate.packet import bandwidth_delay_bytes, deadlock_free

    t = parse("torus:8x4")
    direct = build("direct", t, "alltoall")
    params = SWING_SST.with_(packet_header=2)
    control = deadlock_free(t, "adaptive", bandwidth_delay_bytes(t, params), schedule=direct)
    assert (control.scheme, control.virtual_channels) == ("duato", 3)
    bounded = simulate_packet(direct, t, 1 << 20, params, flow=control)
    free = simulate_packet(direct, t, 1 << 20, params)
    assert free.time_s < bounded.time_s < 1.15 * free.time_s
    assert 0 < bounded.escape_hops < bounded.adaptive_hops


def test_a_packet_waits_behind_the_head_of_its_input_buffer():
    """Head-of-line blocking: an input buffer is first in, first out per channel. On a line 0-1-2-3, rank 1 sends
    to 2 while rank 3 does too, so rank 2's NIC (half a link's rate) takes rank 1's packets at a quarter of the
    link's rate, and they queue in router 2's buffer from link 1-2 (buffers deep enough that no credit ever
    binds). Rank 0's packets to 3 cross that buffer, interleaved with rank 1's: on one channel each waits for the
    one ahead, so they leave at rank 1's rate and end after it, past 4 n packet times (2 n without the blocking);
    with a channel per hop they pass on the second channel and end at their NIC's rate, 2 n and the latency."""
    n = 100
    line = parse("mesh:4")
    traffic = from_steps(4, "allreduce", [([1, 0, 3], [2, 3, 2], [1.0] * 3, False)], [0])
    params = NetworkParams(link_bandwidth=1e9, link_latency=LAT, packet_size=P, forwarding="store-and-forward",
                           host_injection=0.5e9)
    deep = 3 * n * (P + HEADER_BYTES)
    one = simulate_packet(traffic, line, n * P, params, "dor", flow=FlowControl(buffer_bytes=deep))
    per_hop = simulate_packet(traffic, line, n * P, params, "dor",
                              flow=FlowControl(buffer_bytes=deep, virtual_channels=3, scheme="hops"))
    ends = one.rank_step_end[:, 0] / (n * WIRE)
    assert ends[2] == pytest.approx(4, rel=0.05)                  # rank 2's NIC: 2 n packets at half the rate
    assert ends[3] >= ends[2]                                     # behind rank 1's last packet
    assert per_hop.rank_step_end[3, 0] / (n * WIRE) < 2.5         # 2 n and three hops' latency


HOP = 300e-9
RING8 = parse("ring:8")


@pytest.mark.parametrize("hops", [1, 3])
def test_a_rendezvous_adds_one_round_trip_of_two_header_messages(hops):
    """Above the eager threshold a request and a reply (header bytes only, each a message: alpha) cross the
    network before the data: one round trip, 2 (alpha + hops (latency + per hop + header / bandwidth)), more (on a
    one-way ring the reply would go the long way round: ring:8 has both ways)."""
    from directcoll.simulate.implementation import Implementation

    params = PARAMS.with_(alpha=1e-6, per_hop_latency=HOP, packet_header=16)
    one = pattern(8, [([0], [hops], [1.0])])
    eager = simulate_packet(one, RING8, 64 * P, params).time_s
    rdv = params.with_(implementation=Implementation("rdv", eager_threshold=4096))
    assert simulate_packet(one, RING8, 4096, rdv).time_s == \
        simulate_packet(one, RING8, 4096, params).time_s            # at the threshold: eager
    extra = simulate_packet(one, RING8, 64 * P, rdv).time_s - eager
    assert extra == pytest.approx(2 * (1e-6 + hops * (LAT + HOP + 16 / 1e9)), rel=1e-9)


def test_message_overhead_is_posted_on_the_ranks_threads_as_in_the_models():
    """LogGP's o: both ranks post every message on their first free thread; a bidirectional ring posts two
    messages per rank and step, one after the other on one thread, in parallel on one per port: the packet
    engine adds what the step model adds."""
    from directcoll.registry import build_pattern
    from directcoll.simulate import simulate
    from directcoll.simulate.implementation import Implementation

    topo = parse("ring:8")
    ring = build_pattern("ring", topo, "allreduce", variant="bidirectional")
    base = NetworkParams(alpha=1e-6, link_bandwidth=10e9, packet_header=2)
    bare = simulate_packet(ring, topo, 8.0, base).time_s
    for threads in (1, None):
        params = base.with_(implementation=Implementation("x", message_overhead=1e-6, threads=threads))
        added_model = float(simulate(ring, topo, params).time(8.0) - simulate(ring, topo, base).time(8.0))
        assert simulate_packet(ring, topo, 8.0, params).time_s - bare == pytest.approx(added_model, rel=0.02)


def test_a_nic_slower_than_the_link_paces_a_message_into_and_out_of_the_network():
    """host_injection is the rank's NIC: n packets pass it one after the other at its rate, then the router,
    the link and the far end's NIC: alpha + n p_nic + per hop + p_link + latency + p_nic, exactly."""
    inj, n = 0.25e9, 40
    params = PARAMS.with_(alpha=1e-6, per_hop_latency=HOP, host_injection=inj)
    r = simulate_packet(pattern(8, [([0], [1], [1.0])]), RING8, n * P, params)
    p_nic = (P + HEADER_BYTES) / inj
    assert r.time_s == pytest.approx(1e-6 + n * p_nic + HOP + WIRE + LAT + p_nic, rel=1e-9)


def test_two_senders_share_the_receivers_nic():
    """Ranks 7 and 1 send to 0 over different links: 0's NIC takes their packets one after the other, so
    together they take twice one message's time at the NIC's rate (the links are four times faster)."""
    inj, n = 0.25e9, 100
    params = PARAMS.with_(host_injection=inj)
    both = simulate_packet(pattern(8, [([7, 1], [0, 0], [1.0, 1.0])]), RING8, n * P, params).time_s
    one = simulate_packet(pattern(8, [([7], [0], [1.0])]), RING8, n * P, params).time_s
    p_nic = (P + HEADER_BYTES) / inj
    assert both == pytest.approx(2 * n * p_nic, rel=0.02) and one == pytest.approx(n * p_nic, rel=0.03)


def test_deadlock_free_picks_a_scheme_the_routes_allow():
    from directcoll.registry import build_pattern
    from directcoll.simulate.packet import bandwidth_delay_bytes, deadlock_free

    t = parse("torus:4x4")
    assert bandwidth_delay_bytes(t, PARAMS) == int(np.ceil(1e9 * (WIRE + 2 * LAT)))
    assert (deadlock_free(t, "adaptive", 4096).scheme, deadlock_free(t, "dor", 4096).scheme) == ("duato", "dateline")
    genkautz = parse("genkautz:3:10")
    assert deadlock_free(genkautz, "adaptive", 4096).virtual_channels == int(bfs_distances(genkautz).max())
    ewsp = build_pattern("ewsp", t, "alltoall")                      # explicit routes: hop-count channels
    control = deadlock_free(t, "adaptive", 4 * P, schedule=ewsp)
    assert control.scheme == "hops" and control.virtual_channels == int(np.diff(ewsp.route_offsets).max())
    assert simulate_packet(ewsp, t, 64 * P, PARAMS, flow=control).time_s > 0
    with pytest.raises(TopologyError, match="explicit routes"):
        simulate_packet(ewsp, t, 64 * P, PARAMS, flow=deadlock_free(t, "adaptive", 4 * P))


def test_duato_counts_its_choices_and_the_timeline_holds_every_byte_sent():
    """Every hop under Duato's scheme is one choice, an adaptive channel or the escape: their counts add up to the
    packet-hops of minimal routes; without flow control there are none. The utilisation timeline bins every byte
    that left a link, never more than the links could carry, up to the last."""
    t = parse("torus:4x4")
    n = 16
    pairs = [(s, d) for s in range(n) for d in range(n) if d != s]
    alltoall = pattern(n, [([s for s, _ in pairs], [d for _, d in pairs], [1.0] * len(pairs))])
    duato = FlowControl(buffer_bytes=3 * (P + HEADER_BYTES), virtual_channels=3, scheme="duato")
    r = simulate_packet(alltoall, t, 4 * P, PARAMS, flow=duato)
    dist = bfs_distances(t)
    assert r.adaptive_hops + r.escape_hops == 4 * sum(int(dist[s, d]) for s, d in pairs)
    assert r.adaptive_hops > 0
    sent = r.timeline * r.timeline_bin_s * float(t.link_bandwidth.sum() if PARAMS.link_bandwidth is None
                                                 else PARAMS.link_bandwidth * t.num_links)
    assert sent.sum() == pytest.approx(r.link_bytes.sum(), rel=1e-9)
    assert r.timeline.max() <= 1 + 1e-9 and len(r.timeline) <= 64
    assert len(r.timeline) * r.timeline_bin_s > r.time_s - LAT  # the last byte leaves its link a latency before
    plain = simulate_packet(alltoall, t, 4 * P, PARAMS)
    assert plain.adaptive_hops == plain.escape_hops == 0
