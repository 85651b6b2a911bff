"""The flow model (max-min fair sharing, asynchronous ranks) against hand computations and the step model."""

import numpy as np
import pytest

from directcoll.errors import DirectcollError, TopologyError
from directcoll.registry import build_pattern
from directcoll.schedule.pattern import from_steps
from directcoll.simulate import SWING_SST, NetworkParams, simulate
from directcoll.simulate.flow import FlowResult, flow_times, max_min_rates, simulate_flow
from directcoll.topology import parse
from directcoll.topology.model import Topology

GB = 1e9
PLAIN = NetworkParams(link_bandwidth=1 * GB, link_latency=0.0)   # 1 GB/s links, no latency: times are bytes/bw


def pattern(nranks, steps, sequence=None):
    """Pattern from distinct steps given as (src, dst, size) or (src, dst, size, reduce)."""
    steps = [st if len(st) == 4 else (*st, False) for st in steps]
    return from_steps(nranks, "allreduce", steps, list(range(len(steps))) if sequence is None else sequence)


# -- single transfers and simple sharing ---------------------------------------------------------------
def test_one_transfer_on_a_ring_is_alpha_plus_latency_plus_bytes_over_bandwidth():
    topo = parse("ring:8")
    params = NetworkParams(alpha=1e-6, per_hop_latency=300e-9, link_bandwidth=50e9, link_latency=100e-9)
    n = 3e6
    r = simulate_flow(pattern(8, [([0], [2], [1.0])]), topo, n, params)   # 0 -> 1 -> 2: the only minimal path
    assert isinstance(r, FlowResult)
    assert r.time_s == pytest.approx(1e-6 + 2 * (100e-9 + 300e-9) + n / 50e9, rel=1e-12)
    assert r.step_end.tolist() == [r.time_s]
    assert r.rounds == 1


def test_two_transfers_on_one_link_share_it_disjoint_ones_do_not():
    # unidirectional ring 0 -> 1 -> 2 -> 3 -> 0; 1 MB each at 1 GB/s (SimGrid CM02: 1 ms alone, 2 ms shared)
    topo = parse("ring:4:uni")
    shared = pattern(4, [([0, 1], [2, 2], [1.0, 1.0])])     # 0 -> 2 and 1 -> 2 both cross link 1 -> 2
    disjoint = pattern(4, [([0, 2], [1, 3], [1.0, 1.0])])
    assert simulate_flow(shared, topo, 1e6, PLAIN).time_s == pytest.approx(2e-3, rel=1e-12)
    assert simulate_flow(disjoint, topo, 1e6, PLAIN).time_s == pytest.approx(1e-3, rel=1e-12)


def _three_node_line(c1: float, c2: float) -> Topology:
    """0 -> 1 (capacity c1), 1 -> 2 (c2), and the reverse links (fast) so the graph is strongly connected."""
    return Topology(spec="line3", kind="custom", num_compute=3, num_nodes=3,
                    link_src=np.array([0, 1, 1, 2]), link_dst=np.array([1, 2, 0, 1]),
                    link_bandwidth=np.array([c1, c2, 10 * GB, 10 * GB]), link_latency=np.zeros(4))


def test_max_min_fairness_classic_three_flows():
    # A uses links 1 and 2, B link 1, C link 2; capacities 1 and 2. Link 1 saturates first at 1/2 each (A, B);
    # C then takes what A leaves on link 2: 2 - 1/2 = 3/2.
    rates, rounds = max_min_rates(np.array([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]]), [1.0, 2.0])
    np.testing.assert_allclose(rates, [0.5, 0.5, 1.5], rtol=1e-12)
    assert rounds == 2
    # the same through the simulator: A = 0 -> 2, B = 0 -> 1, C = 1 -> 2 with 1, 1 and 3 MB all end at 2 ms
    topo = _three_node_line(1 * GB, 2 * GB)
    no_override = NetworkParams()
    step = ([0, 0, 1], [2, 1, 2])
    r = simulate_flow(pattern(3, [(*step, [1.0, 1.0, 3.0])]), topo, 1e6, no_override)
    assert r.time_s == pytest.approx(2e-3, rel=1e-12)
    # with 4 MB, C runs alone at 2 GB/s once A and B are gone: 3 MB by 2 ms, the last 1 MB in 0.5 ms
    r = simulate_flow(pattern(3, [(*step, [1.0, 1.0, 4.0])]), topo, 1e6, no_override)
    assert r.time_s == pytest.approx(2.5e-3, rel=1e-12)


def test_max_min_batches_links_saturating_at_the_same_level():
    # 4 disjoint pairs of flows on 4 links of equal capacity: one round, not four
    inc = np.kron(np.eye(4), np.ones((1, 2)))
    rates, rounds = max_min_rates(inc, np.ones(4))
    np.testing.assert_allclose(rates, 0.5)
    assert rounds == 1
    with pytest.raises(DirectcollError, match="uses no link"):
        max_min_rates(np.array([[1.0, 0.0]]), [1.0])


def _naive_max_min(inc: np.ndarray, cap: np.ndarray) -> np.ndarray:
    """Textbook progressive filling: one saturating link per round."""
    rates, frozen, cap = np.zeros(inc.shape[1]), np.zeros(inc.shape[1], dtype=bool), cap.astype(float).copy()
    while not frozen.all():
        w = inc[:, ~frozen].sum(axis=1)
        used = w > 0
        level = np.where(used, cap / np.where(used, w, 1), np.inf)
        e = int(np.argmin(level))
        now = ~frozen & (inc[e] > 0)
        rates[now] = level[e]
        frozen |= now
        cap -= inc[:, now] @ rates[now]
    return rates


def test_batched_water_filling_matches_textbook_progressive_filling():
    rng = np.random.default_rng(7)
    for _ in range(200):
        e, f = rng.integers(1, 25), rng.integers(1, 30)
        inc = (rng.random((e, f)) < rng.uniform(0.05, 0.5)) * rng.choice([1.0, 0.5, 1 / 3, rng.uniform(0.01, 1)],
                                                                           size=(e, f))
        inc[rng.integers(e, size=f), np.arange(f)] += 1.0 * ~inc.any(axis=0)      # every flow uses a link
        cap = np.ones(e) if rng.random() < 0.3 else rng.uniform(0.5, 3.0, e)
        rates, rounds = max_min_rates(inc, cap)
        np.testing.assert_allclose(rates, _naive_max_min(inc, cap), rtol=1e-9)
        assert (inc @ rates <= cap * (1 + 1e-9)).all()
        assert rounds <= len(np.unique(np.round(rates, 9)))


def test_host_injection_is_a_virtual_link_per_rank():
    topo = parse("ring:8")
    two_out = pattern(8, [([0, 0], [1, 7], [1.0, 1.0])])    # different links, same sender
    assert simulate_flow(two_out, topo, 1e6, PLAIN).time_s == pytest.approx(1e-3, rel=1e-12)
    limited = PLAIN.with_(host_injection=1 * GB)
    assert simulate_flow(two_out, topo, 1e6, limited).time_s == pytest.approx(2e-3, rel=1e-12)
    assert simulate(two_out, topo, limited).time(1e6) == pytest.approx(2e-3, rel=1e-12)


def test_gamma_store_and_forward_and_local_copies():
    topo = parse("ring:8")
    one = pattern(8, [([0], [2], [1.0], [True])])
    r = simulate_flow(one, topo, 1e6, PLAIN.with_(gamma=1e-9))
    assert r.time_s == pytest.approx(1e-3 + 1e-3, rel=1e-12)                    # bytes/bw + gamma * bytes
    saf = simulate_flow(one, topo, 1e6, NetworkParams(link_bandwidth=GB, link_latency=0.0,
                                                      forwarding="store-and-forward"))
    assert saf.time_s == pytest.approx(1e-3 + 4096 / GB, rel=1e-12)               # 2 hops: one packet's wait
    local = simulate_flow(pattern(8, [([3], [3], [1.0])]), topo, 1e6, PLAIN.with_(alpha=1e-6))
    assert local.time_s == pytest.approx(1e-6, rel=1e-12)


def test_zero_size_costs_alpha_and_latency_only():
    topo = parse("ring:8")
    params = NetworkParams(alpha=2e-6, link_latency=1e-7)
    r = simulate_flow(pattern(8, [([0], [1], [1.0])], [0, 0]), topo, 0.0, params)
    assert r.time_s == pytest.approx(2 * (2e-6 + 1e-7), rel=1e-12)


# -- asynchronous progress -------------------------------------------------------------------------------
def test_ranks_advance_asynchronously():
    # step 0: 0 <-> 1 exchange 0.1 of the vector while 2 <-> 3 exchange 1.0; step 1: 0 <-> 1 again
    topo = parse("ring:4")
    pat = pattern(4, [([0, 1, 2, 3], [1, 0, 3, 2], [0.1, 0.1, 1.0, 1.0]), ([0, 1], [1, 0], [0.1, 0.1])])
    n = 1e6
    r = simulate_flow(pat, topo, n, SWING_SST)
    bw, lat = SWING_SST.link_bandwidth, SWING_SST.link_latency + SWING_SST.per_hop_latency
    # ranks 0/1 are done with step 1 long before 2/3 are done with step 0
    assert r.step_end[1] == pytest.approx(2 * (0.1 * n / bw + lat), rel=1e-12)
    assert r.step_end[0] == pytest.approx(n / bw + lat, rel=1e-12)
    assert r.step_end[1] < r.step_end[0]
    assert r.time_s == r.step_end[0]
    step = simulate(pat, topo, SWING_SST).time(n)             # bulk-synchronous: 1.0 then 0.1
    assert step == pytest.approx(1.1 * n / bw + 2 * lat, rel=1e-12)
    assert r.time_s < step


def test_fixed_split_under_max_min_can_be_slower_than_the_step_model():
    # mesh:3x3, one step: A = 3 -> 6 (one link, 1 unit), B = 0 -> 8 (3 units over the 6 minimal paths; 1/6 of it
    # crosses link 3 -> 6). Step model: the most loaded link of each carries 1.5 units -> 1.5 n/bw.
    # Flow model: A and B grow together until link 3 -> 6 saturates at r (1 + 1/6) = bw, so B is held at 6/7 bw
    # although 5/6 of it avoids that link; A ends at 7/6, B then runs alone at 2 bw (its first hop is split in
    # two) for its remaining 2 units: 7/6 + 1 = 13/6 n/bw. The split is fixed per flow, and max-min fairness
    # equalises flows, not paths: real adaptive routing would move B off the busy link.
    topo = parse("mesh:3x3")
    pat = pattern(9, [([3, 0], [6, 8], [1.0, 3.0])])
    n = 1e6
    assert simulate(pat, topo, PLAIN).time(n) == pytest.approx(1.5e-3, rel=1e-12)
    assert simulate_flow(pat, topo, n, PLAIN).time_s == pytest.approx(13 / 6 * 1e-3, rel=1e-12)


# -- against the step model ------------------------------------------------------------------------------
CASES = [("swing", "bandwidth"), ("ring", None), ("bucket", None), ("rabenseifner", None)]


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:8x8"])
@pytest.mark.parametrize(("name", "variant"), CASES)
def test_flow_agrees_with_step_model_on_tori(spec, name, variant):
    topo = parse(spec)
    pat = build_pattern(name, topo, variant=variant)
    step = simulate(pat, topo, SWING_SST)
    big, small = 64 * 2**20, 32.0
    times = flow_times(pat, topo, [small, big], SWING_SST)
    # bandwidth-bound: within 10% (the design's bar). In fact these schedules are symmetric under the torus's
    # translations (and reflections): in every step all transfers have the same latency and the same most
    # loaded link, so every rank finishes every step at the same instant (no asynchrony to exploit) and
    # max-min sharing gives each flow exactly the share the step model assumes -> equal to round-off.
    assert times[1] == pytest.approx(step.time(big), rel=0.10)
    assert times[1] == pytest.approx(step.time(big), rel=1e-9)
    # latency-bound (32 B): every transfer is less than a packet, and both models let a link send the packets
    # that reach it first come, first served (short transfers): equal to round-off here too
    assert times[0] == pytest.approx(step.time(small), rel=1e-9)


@pytest.mark.parametrize(("spec", "name", "variant", "collective"), [
    ("torus:4x4", "mcf", "path", "alltoall"),            # explicit routes, moved with their transfers
    ("hyperx:4x4", "direct", None, "alltoall"),          # adaptive routes, short transfers at 16 KiB
    ("genkautz:2:16", "double-binary-tree", None, "allreduce"),   # pipelined, asynchronous in the flow model
])
def test_neither_model_depends_on_the_order_a_step_lists_its_transfers(spec, name, variant, collective):
    # the same problem listed in other orders: the packet engine may move (its NIC serves ready transfers in
    # list order, docs/fidelity.md "Ties"), a model must not
    topo = parse(spec)
    pat = build_pattern(name, topo, collective, variant=variant)
    sizes = np.array([2048.0, 16384.0, 131072.0, 2**20])
    step, flow = simulate(pat, topo, SWING_SST).time(sizes), flow_times(pat, topo, sizes, SWING_SST)
    for seed in (1, 2):
        other = pat.reordered(seed)
        assert not np.array_equal(other.src, pat.src)
        np.testing.assert_allclose(simulate(other, topo, SWING_SST).time(sizes), step, rtol=1e-12)
        np.testing.assert_allclose(flow_times(other, topo, sizes, SWING_SST), flow, rtol=1e-12)


def test_short_transfers_pass_each_link_as_one_unit_as_in_the_step_model():
    # ring:8, 0 -> 2 and 1 -> 3 of 16 KiB each (a quarter of 64 KiB): 0.33 us a link, under a hop's 0.4 us. Link
    # 1 -> 2 sends 1 -> 3's at once and 0 -> 2's when it arrives a hop later: both done 2 hops + 0.33 us after
    # the start (the step model's closed form, tests/test_simulate.py), not the additive 2 hops + 0.66 us
    topo = parse("ring:8")
    hop, bw = 400e-9, 50e9
    pat = pattern(8, [([0, 1], [2, 3], [0.25, 0.25])])
    got = simulate_flow(pat, topo, 65536, SWING_SST).time_s
    assert got == pytest.approx(2 * hop + 16384 / bw, rel=1e-12)
    assert got == pytest.approx(float(simulate(pat, topo, SWING_SST).time(65536)), rel=1e-12)
    # 20 KiB each (0.41 us a link) no longer passes as one unit: max-min sharing, as before
    assert simulate_flow(pat, topo, 81920, SWING_SST).time_s == pytest.approx(2 * hop + 40960 / bw, rel=1e-12)


def test_a_later_unit_uses_a_gap_the_earlier_ones_left():
    # ring:10, 16 KiB units (S = 0.33 us a link). Step 0: 0 -> 4 reserves link 3 -> 4 from 3 hops on; 3 -> 2 and
    # 5 -> 6 leave ranks 3 and 5 free after S. Their step 1, 3 -> 5, starts then and crosses 3 -> 4 long before
    # 0 -> 4 reaches it: it takes the gap, and neither waits for the other
    topo = parse("ring:10")
    hop, unit = 400e-9, 16384 / 50e9
    pat = pattern(10, [([0, 3, 5], [4, 2, 6], [0.25] * 3), ([3], [5], [0.25])])
    got = simulate_flow(pat, topo, 65536, SWING_SST)
    assert got.step_end[0] == pytest.approx(4 * hop + unit, rel=1e-12)
    assert got.step_end[1] == pytest.approx(unit + 2 * hop + unit, rel=1e-12)


def test_flow_is_faster_where_ranks_can_run_ahead():
    # torus:6x6 is not a power of two: Swing's steps have transfers of different lengths, so the step model waits
    # for the longest one every step, while in the flow model ranks with short transfers run ahead (32 KiB: a
    # transfer takes longer on a link than a hop's latency, where the step model keeps its bulk-synchronous lines)
    topo = parse("torus:6x6")
    pat = build_pattern("swing", topo, variant="latency")
    flow = simulate_flow(pat, topo, 32768, SWING_SST)
    assert flow.time_s < simulate(pat, topo, SWING_SST).time(32768)
    assert flow.events > 2 * pat.num_steps     # not in lockstep


# -- API ---------------------------------------------------------------------------------------------------
def test_flow_times_matches_simulate_flow_and_keeps_shape():
    topo = parse("torus:4x4")
    pat = build_pattern("swing", topo, variant="bandwidth")
    sizes = np.array([[32.0, 1024.0], [2.0**20, 2.0**26]])
    t = flow_times(pat, topo, sizes, SWING_SST)
    assert t.shape == sizes.shape
    for size, got in zip(sizes.ravel(), t.ravel(), strict=True):
        assert got == simulate_flow(pat, topo, size, SWING_SST).time_s
    assert np.all(np.diff(t.ravel()) > 0)
    assert flow_times(pat, topo, 1024.0, SWING_SST).shape == ()


def test_schedules_and_dor_routing():
    from directcoll.registry import build

    topo = parse("torus:4x4")
    s = build("swing", topo, variant="bandwidth")
    a = simulate_flow(s, topo, 2**20, SWING_SST)
    b = simulate_flow(build_pattern("swing", topo, variant="bandwidth"), topo, 2**20, SWING_SST)
    assert a.time_s == b.time_s and len(a.step_end) == s.num_steps
    dor = simulate_flow(s, topo, 2**20, SWING_SST, routing="dor")
    assert dor.time_s == pytest.approx(simulate(s, topo, SWING_SST, routing="dor").time(2**20), rel=1e-9)


def test_errors():
    pat = build_pattern("ring", parse("torus:4x4"))
    with pytest.raises(TopologyError, match="16 ranks"):
        simulate_flow(pat, parse("torus:4x8"), 1024)
    with pytest.raises(TopologyError, match="unknown routing"):
        simulate_flow(pat, parse("torus:4x4"), 1024, routing="valiant")
    with pytest.raises(DirectcollError, match="size"):
        simulate_flow(pat, parse("torus:4x4"), -1)
