"""The step model (simulate/step.py), its routing (topology/routing.py) and step patterns (schedule/pattern.py).

Routing is checked against path counts worked out by hand, the step model against a hand-checked step and
against a straightforward per-size reference simulation, and the whole against the Swing paper's findings.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from directcoll.errors import TopologyError, UnsupportedShapeError
from directcoll.registry import build, build_pattern
from directcoll.schedule.ir import COPY, REDUCE, ScheduleBuilder
from directcoll.schedule.pattern import from_steps, pattern_of
from directcoll.simulate import SWING_SST, NetworkParams, simulate
from directcoll.topology import bfs_distances, minimal_route, parse
from directcoll.topology.paths import path_counts
from directcoll.topology.routing import dor_route, link_between, route_entries, route_pattern

NS = 1e-9
BW = 50e9  # SWING_SST: 400 Gb/s links
HOP = (100 + 300) * NS  # SWING_SST: link latency + per-hop latency


# -- routing: minimal paths counted by hand ---------------------------------------------------------------
def n_paths(topo, src: int, dst: int) -> float:
    return float(path_counts(topo, bfs_distances(topo, [src])[0])[dst])


def first_links(topo, src: int, links: np.ndarray, share: np.ndarray) -> dict[int, float]:
    first = topo.link_src[links] == src
    return {int(topo.link_dst[link]): float(s) for link, s in zip(links[first], share[first], strict=True)}


def test_path_counts_torus_4x4_by_hand():
    t = parse("torus:4x4")
    at = lambda *c: int(t.node_at(c))  # noqa: E731
    # offset (1, 1): x then y or y then x
    assert n_paths(t, 0, at(1, 1)) == 2
    # offset (2, 2): both directions of both dimensions are minimal (distance 2 each way): choose which of
    # the 4 hops are x hops, C(4, 2), and a direction per dimension, 2 * 2
    assert n_paths(t, 0, at(2, 2)) == math.comb(4, 2) * 2 * 2 == 24
    # offset (2, 0): two directions, one dimension
    assert n_paths(t, 0, at(2, 0)) == 2
    assert n_paths(t, 0, at(0, 1)) == 1
    # offset (1, 2): C(3, 1) orders times 2 directions in y
    assert n_paths(t, 0, at(1, 2)) == 6
    # translation invariance
    assert n_paths(t, at(3, 1), at(1, 3)) == 24


def test_minimal_route_shares_torus_4x4():
    t = parse("torus:4x4")
    at = lambda *c: int(t.node_at(c))  # noqa: E731
    links, share = minimal_route(t, 0, at(1, 1))
    assert len(links) == 4 and np.allclose(share, 0.5)
    assert first_links(t, 0, links, share) == {at(1, 0): 0.5, at(0, 1): 0.5}
    # offset (2, 2): each of the four first links starts 24 / 4 = 6 paths: share 1/4
    links, share = minimal_route(t, 0, at(2, 2))
    assert first_links(t, 0, links, share) == pytest.approx({at(1, 0): 0.25, at(3, 0): 0.25, at(0, 1): 0.25,
                                                              at(0, 3): 0.25})
    # link (1,0) -> (1,1): paths 0 -> (1,0) (1 way) times (1,1) -> (2,2) (2 ways) = 2 of 24
    lk = int(link_between(t, at(1, 0), at(1, 1)))
    assert share[list(links).index(lk)] == pytest.approx(2 / 24)
    # every path has 4 hops: the shares add up to the hop count; the last links into the target add to 1
    assert share.sum() == pytest.approx(4)
    assert share[t.link_dst[links] == at(2, 2)].sum() == pytest.approx(1)
    # offset (1, 2): first link x carries the 2 paths that start with x (of 6)
    links, share = minimal_route(t, 0, at(1, 2))
    assert first_links(t, 0, links, share) == pytest.approx({at(1, 0): 2 / 6, at(0, 1): 2 / 6, at(0, 3): 2 / 6})
    assert len(minimal_route(t, 5, 5)[0]) == 0


def test_path_counts_mesh_corner_to_corner():
    m = parse("mesh:3x3")
    assert n_paths(m, 0, 8) == math.comb(4, 2) == 6
    links, share = minimal_route(m, 0, 8)
    assert share.sum() == pytest.approx(4)
    assert first_links(m, 0, links, share) == pytest.approx({1: 0.5, 3: 0.5})
    # centre link (1,1) -> (1,2): 2 ways to reach (1,1), 1 way on from (1,2): 2 of 6
    assert share[list(links).index(int(link_between(m, 4, 5)))] == pytest.approx(2 / 6)


def test_path_counts_hyperx_and_ring():
    h = parse("hyperx:4x4")
    # HyperX: one hop per differing dimension, in either order
    assert n_paths(h, 0, int(h.node_at((2, 3)))) == 2
    assert n_paths(h, 0, int(h.node_at((0, 3)))) == 1
    r = parse("ring:8")
    assert n_paths(r, 0, 4) == 2 and n_paths(r, 0, 3) == 1
    assert n_paths(parse("ring:8:uni"), 0, 7) == 1


def test_route_pattern_matches_minimal_route_and_rejects_unknown_routing():
    t = parse("torus:6x4")
    for dst in range(1, 24):
        a, b = route_pattern(t, 0, dst), minimal_route(t, 0, dst)
        assert np.array_equal(a[0], b[0]) and np.allclose(a[1], b[1])
    with pytest.raises(TopologyError, match="unknown routing"):
        route_pattern(t, 0, 1, "ecmp")


# -- dimension-order routes -------------------------------------------------------------------------------
def route_nodes(topo, links) -> list[int]:
    assert np.array_equal(topo.link_dst[links[:-1]], topo.link_src[links[1:]])  # a connected path
    return [int(topo.link_src[links[0]]), *map(int, topo.link_dst[links])]


def test_link_between():
    t = parse("torus:4x4")
    got = link_between(t, [0, 0, 0, 5], [4, 1, 5, 9])
    assert got[2] == -1
    for k in (0, 1, 3):
        assert (t.link_src[got[k]], t.link_dst[got[k]]) == ([0, 0, 0, 5][k], [4, 1, 5, 9][k])


def test_dor_route_torus_goes_dimension_0_first_then_the_short_way():
    t = parse("torus:4x4")
    links, share = dor_route(t, 0, int(t.node_at((1, 3))))
    assert np.array_equal(share, [1, 1])
    # (0,0) -> (1,0) in dimension 0, then (1,0) -> (1,3): y - 1 mod 4, not three hops +1
    assert route_nodes(t, links) == [0, int(t.node_at((1, 0))), int(t.node_at((1, 3)))]
    links, _ = dor_route(t, int(t.node_at((3, 2))), int(t.node_at((1, 0))))
    # ties (distance 2 both ways) go "+": 3 -> 0 -> 1 in dimension 0, then 2 -> 3 -> 0 in dimension 1
    assert route_nodes(t, links) == [int(t.node_at(c)) for c in ((3, 2), (0, 2), (1, 2), (1, 3), (1, 0))]
    assert route_pattern(t, 0, 5, "dor")[0].tolist() == dor_route(t, 0, 5)[0].tolist()


def test_dor_route_mesh_hyperx_ring():
    m = parse("mesh:3x3")
    assert route_nodes(m, dor_route(m, 0, 8)[0]) == [0, 3, 6, 7, 8]
    assert route_nodes(m, dor_route(m, 8, 0)[0]) == [8, 5, 2, 1, 0]
    h = parse("hyperx:4x4")
    links, share = dor_route(h, 0, int(h.node_at((3, 2))))
    assert route_nodes(h, links) == [0, int(h.node_at((3, 0))), int(h.node_at((3, 2)))]
    assert len(dor_route(h, 0, int(h.node_at((0, 2))))[0]) == 1
    uni = parse("ring:8:uni")
    assert route_nodes(uni, dor_route(uni, 0, 7)[0]) == list(range(8))
    assert route_nodes(uni, dor_route(uni, 5, 2)[0]) == [5, 6, 7, 0, 1, 2]
    bi = parse("ring:8")
    assert route_nodes(bi, dor_route(bi, 0, 7)[0]) == [0, 7]
    assert route_nodes(bi, dor_route(bi, 0, 4)[0]) == [0, 1, 2, 3, 4]  # tie goes "+"
    assert len(dor_route(bi, 3, 3)[0]) == 0


def test_dor_route_refuses_hammingmesh():
    hm = parse("hammingmesh:2x2:2x2")
    with pytest.raises(TopologyError, match="dimension-order"):
        dor_route(hm, 0, 5)
    with pytest.raises(TopologyError):
        simulate(build("swing", hm, variant="bandwidth"), hm, SWING_SST, routing="dor")


# -- a step checked by hand -------------------------------------------------------------------------------
def ring_step(op=COPY, transfers=((0, 2, 0, 2), (1, 3, 2, 4)), nranks=8):
    """One step on 8 ranks, 8 blocks: (src, dst, first block, end block) per transfer."""
    b = ScheduleBuilder("allreduce", nranks, 8)
    for src, dst, lo, hi in transfers:
        b.add(0, src, dst, op, lo, hi)
    return b.build(meta={"algorithm": "hand"})


SIZES = np.array([32.0, 1000.0, 2.0**20, 3 * 2.0**27, 2.0**30])


def _two_on_one_link(n):
    """0 -> 2 and 1 -> 3 on ring:8, a quarter of the vector each: both 2 hops, link 1 -> 2 carries both (half the
    vector). While a transfer is one packet (4 KiB) or takes at most a hop's latency on a link (w = n/4 / BW <= 1
    hop), link 1 -> 2 sends them as they come: 1 -> 3's at once (its first hop), 0 -> 2's a hop later (its second)
    after 1 -> 3's if that is still going; 0 -> 2 is then done a hop after the link, 1 -> 3 two hops after:
    max(2 hops + w, 1 hop + max(1 hop, w) + w), less than 2 hops + 2w whenever w < 1 hop. Beyond, each waits for
    the link's whole load: 2 hops + n/2 / BW."""
    w = n / 4 / BW
    short = np.maximum(2 * HOP + w, HOP + np.maximum(HOP, w) + w)
    return np.where((n / 4 <= 4096) | (w <= HOP), short, 2 * HOP + n / 2 / BW)


@pytest.mark.parametrize("routing", ["adaptive", "dor"])
def test_hand_checked_step(routing):
    ring = parse("ring:8")
    sim = simulate(ring_step(), ring, SWING_SST, routing)
    assert np.allclose(sim.time(SIZES), _two_on_one_link(SIZES), rtol=1e-12, atol=0)
    assert sim.time(1000.0) == pytest.approx(2 * HOP + 250 / BW, rel=1e-12)  # the packets do not meet
    # 16 KiB a transfer (four packets, 0.33 us a link: under a hop's 0.4 us) still passes link 1 -> 2 as one unit,
    # 22 % under the additive lines; 20 KiB (0.41 us) no longer does
    short, long = sim.time(np.array([65536.0, 81920.0]))
    assert short == pytest.approx(2 * HOP + 16384 / BW, rel=1e-12) and short < 0.8 * (2 * HOP + 32768 / BW)
    assert long == pytest.approx(2 * HOP + 40960 / BW, rel=1e-12)
    # with 64-byte headers a transfer of three packets carries three of them (and its second hop waits for the
    # first header: cut-through)
    headed = simulate(ring_step(), ring, SWING_SST.with_(packet_header=64), routing).time(49152.0)
    assert headed == pytest.approx(2 * HOP + 64 / BW + (12288 + 3 * 64) / BW, rel=1e-12)
    (row,) = sim.breakdown(2**20)
    assert row["bytes_max_link"] == pytest.approx(2**19) and row["hops_max"] == pytest.approx(2)
    assert row["max_link"] == int(link_between(ring, 1, 2))
    assert row["time_s"] == pytest.approx(2 * HOP + 2**19 / BW, rel=1e-12)
    assert row["step"] == 0 and row["distinct_step"] == 0


def test_hand_checked_step_forwarding_injection_gamma():
    ring = parse("ring:8")
    n = SIZES
    saf = simulate(ring_step(), ring, SWING_SST.with_(forwarding="store-and-forward")).time(n)
    # store-and-forward: the second hop waits for a whole packet (4 KiB, or the whole transfer of n/4 if smaller)
    assert np.allclose(saf, 2 * HOP + (n / 2) / BW + np.minimum(n / 4, 4096) / BW, rtol=1e-12)
    # host injection: each rank sends (and receives) a quarter; binds below 25 GB/s, not above
    slow = simulate(ring_step(), ring, SWING_SST.with_(host_injection=10e9)).time(n)
    assert np.allclose(slow, 2 * HOP + (n / 4) / 10e9, rtol=1e-12)
    fast = simulate(ring_step(), ring, SWING_SST.with_(host_injection=40e9)).time(n)
    assert np.allclose(fast, 2 * HOP + (n / 2) / BW, rtol=1e-12)
    # gamma: s per byte reduced at the receiver, only for reduce transfers
    gamma = 1e-10
    red = simulate(ring_step(REDUCE), ring, SWING_SST.with_(gamma=gamma)).time(n)
    assert np.allclose(red, 2 * HOP + (n / 2) / BW + gamma * n / 4, rtol=1e-12)
    copy = simulate(ring_step(COPY), ring, SWING_SST.with_(gamma=gamma)).time(n)
    assert np.allclose(copy, 2 * HOP + (n / 2) / BW, rtol=1e-12)
    # alpha once per transfer; a link override
    p = SWING_SST.with_(alpha=1e-6, link_bandwidth=25e9, link_latency=0.0)
    assert np.allclose(simulate(ring_step(), ring, p).time(n), 1e-6 + 2 * 300 * NS + (n / 2) / 25e9, rtol=1e-12)


def test_hand_checked_antipodal_split_and_dor():
    ring = parse("ring:8")
    step = ring_step(transfers=((0, 4, 0, 2),))
    # two minimal paths of 4 hops: an eighth of the vector on each link of both halves
    sim = simulate(step, ring, SWING_SST)
    assert np.allclose(sim.time(SIZES), 4 * HOP + SIZES / 8 / BW, rtol=1e-12)
    assert sim.breakdown(800)[0]["bytes_max_link"] == pytest.approx(100)
    # dor takes "+" only: a quarter on each link
    assert np.allclose(simulate(step, ring, SWING_SST, "dor").time(SIZES), 4 * HOP + SIZES / 4 / BW, rtol=1e-12)


def test_step_time_is_the_upper_envelope_of_its_transfers():
    ring = parse("ring:8")
    # 0 -> 1 carries half the vector over 1 hop; 2 -> 5 an eighth over 3 hops: latency wins small sizes,
    # bandwidth wins large ones
    step = ring_step(transfers=((0, 1, 0, 4), (2, 5, 4, 5)))
    got = simulate(step, ring, SWING_SST).time(SIZES)
    expected = np.maximum(HOP + SIZES / 2 / BW, 3 * HOP + SIZES / 8 / BW)
    assert np.allclose(got, expected, rtol=1e-12)
    assert got[0] == pytest.approx(3 * HOP + 4 / BW) and got[-1] == pytest.approx(HOP + 2**29 / BW)


def test_steps_add_up_and_the_empty_step_is_free():
    ring = parse("ring:8")
    b = ScheduleBuilder("allreduce", 8, 8)
    b.add(0, [0, 1], [2, 3], COPY, [0, 2], [2, 4])
    b.add(2, 0, 4, COPY, 0, 2)  # step 1 has no transfer
    sim = simulate(b.build(), ring, SWING_SST)
    expected = _two_on_one_link(SIZES) + 4 * HOP + SIZES / 8 / BW
    assert np.allclose(sim.time(SIZES), expected, rtol=1e-12, atol=0)
    rows = sim.breakdown(1024)
    assert [r["step"] for r in rows] == [0, 1, 2] and rows[1]["time_s"] == 0 and rows[1]["max_link"] == -1
    assert sum(r["time_s"] for r in rows) == pytest.approx(float(sim.time(1024)), rel=1e-12)
    assert np.shape(sim.time(SIZES.reshape(5, 1))) == (5, 1)


# -- the closed-form sweep against a direct per-size simulation ----------------------------------------
def reference_times(schedule, topo, params: NetworkParams, routing: str, sizes) -> list[float]:
    """Time of ``schedule`` for every vector size n, one size at a time, straight from the model's definition."""
    bw = topo.link_bandwidth if params.link_bandwidth is None else np.full(topo.num_links, params.link_bandwidth)
    lat = topo.link_latency if params.link_latency is None else np.full(topo.num_links, params.link_latency)
    frac = schedule.transfer_size
    steps = []  # per step: [(src, dst, fraction, reduces, links, shares)] of its transfers
    for t in range(schedule.num_steps):
        transfers = []
        for i in range(schedule.step_bounds[t], schedule.step_bounds[t + 1]):
            src, dst = int(schedule.src[i]), int(schedule.dst[i])
            links, share = route_pattern(topo, src, dst, routing)
            transfers.append((src, dst, frac[i], schedule.op[i] == REDUCE, links, share))
        steps.append(transfers)
    totals = []
    for n in sizes:
        total = 0.0
        for transfers in steps:
            loads = np.zeros(topo.num_links)
            reduced = np.zeros(topo.num_compute)
            for _, dst, f, reduces, links, share in transfers:
                np.add.at(loads, links, n * f * share)
                reduced[dst] += n * f if reduces else 0.0
            step = 0.0
            for _, dst, _, _, links, share in transfers:
                hops = share.sum()
                latency = params.alpha + (share * lat[links]).sum() + hops * params.per_hop_latency
                congestion = (loads[links] / bw[links]).max()
                step = max(step, latency + congestion + params.gamma * reduced[dst])
            if all(n * f <= params.packet_size or _within_a_hop(params, n * f, links, share, bw, lat)
                   for src, dst, f, _, links, share in transfers if src != dst):
                step = min(step, _first_come_first_served(topo, params, transfers, n, bw, lat, reduced))
            total += step
        totals.append(total)
    return totals


def _within_a_hop(params, nbytes, links, share, bw, lat) -> bool:
    """Whether a transfer of ``nbytes`` (no packet headers) takes at most its route's latency per hop on each of
    its links: it has left a link before the transfers one hop behind it reach it."""
    per_hop = ((share * lat[links]).sum() + share.sum() * params.per_hop_latency) / share.sum()
    return bool((share * nbytes / bw[links] <= per_hop * (1 + 1e-12)).all())


def _first_come_first_served(topo, params, transfers, n, bw, lat, reduced) -> float:
    """A step of short transfers (one packet, or at most a hop's latency on each link), link by link: each entry
    of a route reaches its link after the route's latency per hop times its hop (its BFS distance from the
    source), the link sends the arrivals in order (equal arrivals together), and a transfer is done its remaining
    hops after the link's last byte of its group."""
    arrivals = {}  # link -> [(arrival, work, tail)]
    for src, dst, f, _, links, share in transfers:
        if src == dst:
            continue
        hop = bfs_distances(topo, [src])[0][topo.link_src[links]]
        per_hop = ((share * lat[links]).sum() + share.sum() * params.per_hop_latency) / share.sum()
        for link, sh, h in zip(links, share, hop, strict=True):
            arrivals.setdefault(int(link), []).append(
                (params.alpha + h * per_hop, sh * n * f / bw[link],
                 (share.sum() - h) * per_hop + params.gamma * reduced[dst]))
    end = 0.0
    for queue in arrivals.values():
        queue.sort()
        free, i = 0.0, 0
        while i < len(queue):
            j = i
            while j < len(queue) and abs(queue[j][0] - queue[i][0]) < 1e-13:
                j += 1
            free = max(free, queue[i][0]) + sum(w for _, w, _ in queue[i:j])
            end = max(end, free + max(t for _, _, t in queue[i:j]))
            i = j
    return end


def test_adaptive_route_shares_add_up_to_the_hop_distance():
    for spec in ("torus:6x4", "hyperx:4x4", "hammingmesh:2x2:2x2"):
        topo = parse(spec)
        dist = bfs_distances(topo, np.arange(topo.num_compute))
        for src in range(topo.num_compute):
            for dst in range(topo.num_compute):
                links, share = route_pattern(topo, src, dst)
                assert share.sum() == pytest.approx(dist[src, dst])
                out = np.bincount(topo.link_src[links], weights=share, minlength=topo.num_nodes)
                assert out[src] == pytest.approx(1.0 if src != dst else 0.0)


SWEEP_SIZES = 2.0 ** np.arange(5, 31)  # 32 B .. 1 GiB
SWEEP_ALGORITHMS = [("swing", "bandwidth"), ("swing", "latency"), ("recursive-doubling", "latency"),
                    ("recursive-doubling", "bandwidth"), ("rabenseifner", None), ("ring", None), ("bucket", None)]
SWEEP_PARAMS = [SWING_SST, SWING_SST.with_(alpha=1.5e-6, gamma=2e-11)]


@pytest.mark.parametrize(("spec", "routing"), [("torus:4x4", "adaptive"), ("torus:6x4", "adaptive"),
                                               ("torus:6x4", "dor"), ("hammingmesh:2x2:2x2", "adaptive"),
                                               ("hyperx:4x4", "adaptive"), ("hyperx:4x4", "dor")])
@pytest.mark.parametrize(("algorithm", "variant"), SWEEP_ALGORITHMS)
def test_closed_form_sweep_equals_per_size_simulation(spec, routing, algorithm, variant):
    topo = parse(spec)
    schedule = build(algorithm, topo, variant=variant)
    for params in SWEEP_PARAMS:
        got = simulate(schedule, topo, params, routing).time(SWEEP_SIZES)
        expected = reference_times(schedule, topo, params, routing, SWEEP_SIZES)
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=0)


def test_closed_form_sweep_reduce_scatter_and_allgather():
    topo = parse("torus:4x4")
    for coll in ("reduce_scatter", "allgather"):
        for algorithm, variant in (("swing", "bandwidth"), ("bucket", None), ("ring", None)):
            schedule = build(algorithm, topo, coll, variant=variant)
            params = SWEEP_PARAMS[1]
            got = simulate(schedule, topo, params).time(SWEEP_SIZES)
            expected = reference_times(schedule, topo, params, "adaptive", SWEEP_SIZES)
            np.testing.assert_allclose(got, expected, rtol=1e-9, atol=0)


def test_pattern_and_schedule_simulate_alike():
    topo = parse("torus:6x4")
    schedule = build("ring", topo)
    a = simulate(schedule, topo, SWING_SST).time(SWEEP_SIZES)
    b = simulate(build_pattern("ring", topo), topo, SWING_SST).time(SWEEP_SIZES)
    np.testing.assert_allclose(a, b, rtol=1e-12)
    calls = []
    simulate(schedule, topo, SWING_SST, progress=lambda done, total: calls.append((done, total)))
    assert calls[-1][0] == calls[-1][1] == pattern_of(schedule).num_distinct == 2


# -- step patterns ----------------------------------------------------------------------------------------
def test_pattern_of_keeps_distinct_steps_once():
    p = pattern_of(build("ring", "torus:4x4", variant="unidirectional"))
    assert p.num_steps == 30 and p.num_distinct == 2
    assert p.multiplicity.tolist() == [15, 15] and p.sequence.tolist() == [0] * 15 + [1] * 15
    q = from_steps(4, "allreduce", [([0, 1], [1, 2], 0.25, True)], [0, 0])
    assert q.num_distinct == 1 and q.num_steps == 2 and q.size.tolist() == [0.25, 0.25]
    assert not q.equivalent(from_steps(4, "allreduce", [([0, 1], [1, 3], 0.25, True)], [0, 0]))
    assert q.equivalent(from_steps(4, "allreduce", [([1, 0], [2, 1], 0.25, True)], [0, 0]))


def _build_both(name, spec, collective, variant, ports):
    try:
        full = pattern_of(build(name, spec, collective, variant=variant, ports=ports))
    except UnsupportedShapeError:
        with pytest.raises(UnsupportedShapeError):
            build_pattern(name, spec, collective, variant=variant, ports=ports)
        return None, None
    return full, build_pattern(name, spec, collective, variant=variant, ports=ports)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shape=st.lists(st.integers(2, 6), min_size=1, max_size=3).filter(lambda s: math.prod(s) <= 64),
       algorithm=st.sampled_from(["ring", "bucket"]),
       collective=st.sampled_from(["allreduce", "reduce_scatter", "allgather"]),
       variant=st.sampled_from([None, "unidirectional", "bidirectional", "hamiltonian", "bandwidth"]),
       ports=st.sampled_from([None, 1, 2, 4]))
def test_build_pattern_equals_pattern_of_build(shape, algorithm, collective, variant, ports):
    spec = "torus:" + "x".join(map(str, shape))
    full, fast = _build_both(algorithm, spec, collective, variant, ports)
    if full is None:
        return
    assert fast.equivalent(full)
    assert fast.nranks == full.nranks == math.prod(shape) and fast.collective == full.collective
    assert fast.meta["algorithm"] == algorithm and fast.meta["topology"] == spec


@pytest.mark.parametrize("spec", ["ring:8:uni", "ring:13", "mesh:3x5", "hypercube:3", "torus:8x8", "torus:3x3x2"])
@pytest.mark.parametrize("algorithm", ["ring", "bucket"])
def test_build_pattern_equals_pattern_of_build_on_other_shapes(spec, algorithm):
    alg_variants = [None, "unidirectional", "bidirectional", "hamiltonian"] if algorithm == "ring" else [None]
    for collective in ("allreduce", "reduce_scatter", "allgather"):
        for variant in alg_variants:
            full, fast = _build_both(algorithm, spec, collective, variant, None)
            assert full is None or fast.equivalent(full)


def test_ring_pattern_on_a_large_torus_without_the_schedule(timings):
    t0 = time.perf_counter()
    p = build_pattern("ring", "torus:64x64")
    timings("ring pattern on torus:64x64", time.perf_counter() - t0)
    assert p.num_distinct == 2 and p.num_steps == 2 * (4096 - 1)
    assert p.multiplicity.tolist() == [4095, 4095]


# -- errors -----------------------------------------------------------------------------------------------
def test_simulate_refuses_mismatched_ranks_and_unknown_routing():
    with pytest.raises(TopologyError, match="8 ranks"):
        simulate(ring_step(), parse("torus:4x4"), SWING_SST)
    with pytest.raises(TopologyError, match="unknown routing"):
        simulate(ring_step(), parse("ring:8"), SWING_SST, routing="valiant")
    with pytest.raises(TopologyError, match="16 ranks"):
        simulate(build_pattern("ring", "torus:4x4"), parse("torus:4x8"))


def test_default_params_are_zero_overheads_and_the_topology_links():
    ring = parse("ring:8")
    got = simulate(ring_step(), ring).time(SIZES)
    # the generators default to the Swing SST links: 100 ns, 50 GB/s; no per-hop latency
    assert np.allclose(got, 2 * 100 * NS + SIZES / 2 / BW, rtol=1e-12)


# -- physical sanity: the Swing paper's findings on a 64x64 torus -----------------------------------------
@pytest.fixture(scope="module")
def torus64():
    topo = parse("torus:64x64")
    sims = {(a, v): simulate(build_pattern(a, topo, variant=v), topo, SWING_SST)
            for a, v in [("swing", "bandwidth"), ("swing", "latency"), ("bucket", None),
                         ("recursive-doubling", "latency"), ("recursive-doubling", "bandwidth")]}
    return topo, sims


def test_swing_reaches_most_of_the_peak_at_512MiB_and_bucket_beats_it(torus64):
    topo, sims = torus64
    n = 512 * 2**20
    p = topo.num_compute
    peak = topo.ndim * 400e9 / 8 * p / (p - 1)  # bytes/s: D x 400 Gb/s x p/(p-1)
    swing = n / sims["swing", "bandwidth"].time(n)
    assert 0.77 * peak < swing < 0.85 * peak
    bucket = n / sims["bucket", None].time(n)
    assert bucket > swing


def test_swing_beats_recursive_doubling_by_more_than_2x_at_2MiB(torus64):
    _, sims = torus64
    n = 2 * 2**20
    swing = min(sims["swing", v].time(n) for v in ("bandwidth", "latency"))
    rd = min(sims["recursive-doubling", v].time(n) for v in ("bandwidth", "latency"))
    assert rd > 2 * swing


def test_alltoall_sizes_are_per_rank_send_buffers():
    """An all-to-all's vector is one rank's send buffer (N k blocks): on K_4 the direct all-to-all sends
    size / N over every link at once."""
    from directcoll.schedule.ir import ScheduleBuilder
    from directcoll.simulate.params import NetworkParams
    from directcoll.simulate.step import simulate
    from directcoll.topology.spec import parse

    n = 4
    b = ScheduleBuilder("alltoall", n, n * n)
    for i in range(n):
        for j in range(n):
            if i != j:
                b.add(0, i, j, 0, i * n + j, i * n + j + 1)
    schedule, topo = b.build(), parse("complete:4")
    assert schedule.vector_blocks == n and np.allclose(schedule.transfer_size, 1 / n)
    size = 4 * 2**20
    time = simulate(schedule, topo, NetworkParams(link_latency=0.0)).time([size])[0]
    assert time == pytest.approx(size / n / topo.link_bandwidth[0], rel=1e-6)


def test_routed_steps_are_kept_within_a_share_of_the_memory_budget():
    """The step model keeps routed steps for reuse, the oldest dropped first once they hold a quarter of the
    memory budget (a count bound alone let a comparison on degree(ring:14,22) keep 1.2 GB), and a cached step
    times exactly as a freshly routed one."""
    from directcoll.resources import memory_budget_override
    from directcoll.simulate import step

    t = parse("degree(ring:6,4)")
    pattern = build_pattern("ring", t, "allreduce")
    step._ROUTED.clear()
    fresh = simulate(pattern, t, SWING_SST).time([1024, 2**20])
    whole = sum(n for _, n in step._ROUTED.values())
    assert whole > 0
    step._ROUTED.clear()
    budget = int(whole / step.ROUTED_CACHE_SHARE / 2)  # room for about half of the steps
    with memory_budget_override(budget):
        again = simulate(pattern, t, SWING_SST).time([1024, 2**20])
        kept = sum(n for _, n in step._ROUTED.values())
        assert 0 < kept <= step.ROUTED_CACHE_SHARE * budget < whole
        assert np.array_equal(simulate(pattern, t, SWING_SST).time([1024, 2**20]), again)
    assert np.array_equal(again, fresh)
    step._ROUTED.clear()


def test_a_step_too_large_for_the_short_transfers_pass_keeps_its_lines(monkeypatch):
    # the direct all-to-all on torus:4x4x4 at 16 KiB: 256 B a transfer, 4,032 transfers split over their minimal
    # paths in about 93,000 route entries. Within the cap its links are timed first come, first served, faster
    # than the additive lines; with a cap of 1,000 entries the lines stand
    from directcoll.simulate import step

    topo = parse("torus:4x4x4")
    pattern = build_pattern("direct", topo, "alltoall")
    fast = simulate(pattern, topo, SWING_SST).time(16384.0)
    monkeypatch.setattr(step, "SHORT_MAX_ENTRIES", 1000)
    lines = simulate(pattern, topo, SWING_SST).time(16384.0)
    assert fast < lines * 0.98  # 4 % apart here


@pytest.mark.parametrize(("spec", "routing"), [("torus:4x4", "adaptive"), ("torus:4x4x4", "dor"),
                                               ("genkautz:2:16", "adaptive"), ("hammingmesh:2x2:2x2", "adaptive"),
                                               ("hyperx:4x4", "dor"), ("circulant:16:1,5", "adaptive")])
def test_route_entries_carry_the_hop_of_each_link(spec, routing):
    # every routing here is minimal: a link u -> v of a route is crossed at hop dist(source, u); an explicit route
    # crosses its links in the order it lists them
    topo = parse(spec)
    n = topo.num_compute
    src, dst = np.repeat(np.arange(n), n), np.tile(np.arange(n), n)
    src, dst = src[src != dst], dst[src != dst]
    e = route_entries(topo, src, dst, routing, hops=True)
    dist = bfs_distances(topo, np.arange(topo.num_nodes))
    assert (e.hop == dist[src[e.transfer], topo.link_src[e.link]]).all()
    explicit = route_entries(topo, np.array([0, 1]), np.array([2, 3]), routes=(np.array([0, 3, 5]),
                                                                              np.array([7, 3, 5, 1, 2])))
    assert explicit.hop.tolist() == [0, 1, 2, 0, 1]
