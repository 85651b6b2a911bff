"""Swing (De Sensi et al., NSDI'24): the claims of Sec. 3, Sec. 4 and App. A, checked on built schedules.

Ranks are row-major in the topology's shape (the last dimension varies fastest), so in the paper's 4x4
figures the horizontal dimension is our dimension 1 and the vertical one our dimension 0.
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from directcoll import registry
from directcoll.algorithms import butterfly as bf
from directcoll.algorithms.swing import swing
from directcoll.cost.analytic import analyze
from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import COPY, REDUCE
from directcoll.topology.spec import parse
from directcoll.verify import verify

COLLECTIVES = ("allreduce", "reduce_scatter", "allgather")
SPECS = ["torus:4x4", "torus:8x8", "torus:8x8x8", "torus:6x10", "torus:7", "torus:16x4", "torus:3x3x2", "ring:13",
         "torus:2x2", "torus:2", "torus:9x6x5", "hypercube:4", "mesh:4x6", "hyperx:4x3", "hammingmesh:2x2:2x3"]
#: (collective, variant) pairs Swing implements
FLAVOURS = [("allreduce", "bandwidth"), ("reduce_scatter", "bandwidth"), ("allgather", "bandwidth"),
            ("allreduce", "latency")]
POW2_SPECS = ["torus:4x4", "torus:8x8", "torus:16x4", "torus:2x8", "torus:4x4x4", "ring:16", "hypercube:4",
              "torus:2x2", "torus:2"]
#: power-of-two tori with every dimension >= 4 and equal (Sec. 4.1's square tori)
SQUARE_SPECS = ["torus:4x4", "torus:8x8", "torus:16x16", "torus:4x4x4", "torus:8x8x8", "ring:16", "ring:64"]


# -- helpers -----------------------------------------------------------------------------------------------
def assert_ok(schedule):
    result = verify(schedule)
    assert result.ok, f"{result.summary()}; failure: {result.failure}"


def shape_of(spec: str) -> tuple[int, ...]:
    return parse(spec).shape


def spec_of(shape) -> str:
    return "torus:" + "x".join(map(str, shape))


def log2(d: int) -> int:
    assert bf.is_power_of_two(d)
    return d.bit_length() - 1


def swing_dim_steps(d: int) -> int:
    """Steps of one dimension: ceil(log2 d) for even d (Sec. 3.2), ceil(log2(d-1)) for odd d (Fig. 3)."""
    m = d if d % 2 == 0 else d - 1
    return max(1, math.ceil(math.log2(m)))


def bandwidth_steps(shape, collective: str) -> int:
    half = sum(swing_dim_steps(d) for d in shape)
    return 2 * half if collective == "allreduce" else half


def latency_steps(shape) -> int:
    """sum log2 d_i on power-of-two shapes; the fold adds a pre- and a post-step otherwise."""
    fold = 0 if all(bf.is_power_of_two(d) for d in shape) else 2
    return sum(d.bit_length() - 1 for d in shape) + fold


def coords(shape, ranks) -> np.ndarray:
    return np.stack(np.unravel_index(np.asarray(ranks), shape), axis=-1)


def moved_dimension(shape, src, dst) -> np.ndarray:
    """The one dimension in which every (src, dst) pair differs (asserts there is exactly one)."""
    changed = coords(shape, src) != coords(shape, dst)
    assert np.all(changed.sum(axis=1) == 1), "a transfer moves in more than one dimension"
    return changed.argmax(axis=1)


def hops(shape, src, dst):
    """First and last directed link (u, v) of the unique minimal path of every single-dimension transfer."""
    shape = np.asarray(shape)
    cs, cd = coords(tuple(shape), src), coords(tuple(shape), dst)
    dim = moved_dimension(tuple(shape), src, dst)
    rows = np.arange(len(dim))
    d = shape[dim]
    off = (cd - cs)[rows, dim] % d
    assert np.all(2 * off != d), "a peer at distance d/2 has two minimal directions"
    sign = np.where(off < d - off, 1, -1)
    nxt, prv = cs.copy(), cd.copy()
    nxt[rows, dim] = (nxt[rows, dim] + sign) % d
    prv[rows, dim] = (prv[rows, dim] - sign) % d
    flat = np.ravel_multi_index
    return flat(tuple(nxt.T), tuple(shape)), flat(tuple(prv.T), tuple(shape))


def delivery_counts(schedule, by: str = "dst") -> np.ndarray:
    """counts[r, b]: how many transfers deliver block b to rank r (``by="src"``: send it from rank r);
    block-aligned schedules only."""
    assert schedule.denominator == 1
    length = schedule.piece_stop - schedule.piece_start
    transfer = np.repeat(schedule.piece_transfer, length)
    block = np.repeat(schedule.piece_start - (np.cumsum(length) - length), length) + np.arange(length.sum())
    n, nb = schedule.nranks, schedule.nblocks
    rank = getattr(schedule, by)[transfer]
    return np.bincount(rank * nb + block, minlength=n * nb).reshape(n, nb)


def assert_allgather_delivers_each_block_once(schedule):
    """App. A.2: no rank receives a block twice, and every rank gets every block it does not own."""
    counts = delivery_counts(schedule)
    expected = np.ones_like(counts)
    expected[schedule.owner, np.arange(schedule.nblocks)] = 0
    assert counts.max() <= 1, "some rank receives the same block twice"
    assert np.array_equal(counts, expected)


def collective_index(schedule, ports: int) -> np.ndarray:
    """For every transfer, which of the ``ports`` concurrent collectives it belongs to (its block range)."""
    part = schedule.nblocks // ports
    first = schedule.piece_start[schedule.piece_offsets[:-1]] // (part * schedule.denominator)
    last = (schedule.piece_stop[schedule.piece_offsets[1:] - 1] - 1) // (part * schedule.denominator)
    assert np.array_equal(first, last), "a transfer mixes the blocks of two collectives"
    return first


def reach_counts(peers: np.ndarray, steps: int | None = None) -> np.ndarray:
    """ways[r, q]: number of increasing step sequences by which rank r's data reaches rank q (App. A.1)."""
    p = peers.shape[1]
    ways = np.eye(p, dtype=np.int64)
    for s in range(peers.shape[0] if steps is None else steps):
        moved = np.zeros_like(ways)
        moved[:, peers[s]] = ways  # the data a rank holds goes to its peer
        ways = ways + moved
    return ways


# -- peers: Eq. 2, App. A.1 --------------------------------------------------------------------------------
def test_rho_and_delta():
    s = np.arange(12)
    r = bf.rho(s)
    assert r[:6].tolist() == [1, -1, 3, -5, 11, -21]
    assert np.array_equal(r, [sum((-2) ** i for i in range(k + 1)) for k in s])
    delta = np.abs(r)
    assert np.array_equal(delta, (2 ** (s + 1) - (-1) ** (s + 1)) // 3)
    assert np.all(delta <= 2 ** s)
    assert np.all(delta[1:] < 2 ** s[1:]), "Swing peers are strictly closer than recursive doubling's for s >= 1"
    assert np.all(delta % 2 == 1), "Lemma A.1: rho(s) and delta(s) are odd"


def test_fig1_1d_peers_of_node_0():
    """Fig. 1 / App. A.1: on 16 nodes node 0 meets 1, 15, 3 and 11 (= -5 mod 16)."""
    assert bf.peer_table("swing", (16,), 0, False)[:, 0].tolist() == [1, 15, 3, 11]
    rs = registry.build("swing", "ring:16", "reduce_scatter", ports=1)
    assert [int(rs.dst[(rs.src == 0) & (rs.step == s)][0]) for s in range(4)] == [1, 15, 3, 11]
    # Eq. 2: even ranks add rho, odd ranks subtract it
    peers = bf.peer_table("swing", (16,), 0, False)
    r = np.arange(16)
    for s in range(4):
        assert np.array_equal(peers[s], np.where(r % 2 == 0, r + bf.rho(s), r - bf.rho(s)) % 16)


def test_fig4_peers_of_rank_0_on_4x4():
    """Fig. 4: plain collectives meet 1 (horizontal) and 4 (vertical), mirrored ones 3 and 12."""
    first = {(dim, mirrored): int(bf.peer_table("swing", (4, 4), dim, mirrored)[0, 0])
             for dim in (0, 1) for mirrored in (False, True)}
    assert first == {(0, False): 4, (0, True): 12, (1, False): 1, (1, True): 3}
    s = registry.build("swing", "torus:4x4")
    step0 = (s.step == 0) & (s.src == 0)
    assert sorted(s.dst[step0].tolist()) == [1, 3, 4, 12]
    # collectives ordered plain(dim 0), plain(dim 1), mirrored(dim 0), mirrored(dim 1), as the authors' library
    which = collective_index(s, 4)[step0]
    assert dict(zip(which.tolist(), s.dst[step0].tolist(), strict=True)) == {0: 4, 1: 1, 2: 12, 3: 3}


@pytest.mark.parametrize("shape", [(16,), (1024,), (4, 4), (8, 4, 2), (2, 2, 2, 2), (16, 16)])
def test_theorem_a5_every_node_reached_exactly_once(shape):
    """App. A.1: on power-of-two shapes a rank's data reaches every other rank through exactly one sequence."""
    p = int(np.prod(shape))
    for dim in range(len(shape)):
        for mirrored in (False, True):
            peers = bf.peer_table("swing", shape, dim, mirrored)
            assert len(peers) == log2(p)
            if p <= 256:
                assert np.array_equal(reach_counts(peers), np.ones((p, p), dtype=np.int64))
            else:  # one source rank is enough to keep this cheap
                ways = np.zeros(p, dtype=np.int64)
                ways[0] = 1
                for s in range(len(peers)):
                    moved = np.zeros_like(ways)
                    moved[peers[s]] = ways
                    ways += moved
                assert np.all(ways == 1)


@pytest.mark.parametrize("p", [6, 10, 12, 14, 20, 24, 44, 100])
def test_appendix_a2_even_sizes(p):
    """App. A.2: for even p the peers pair up at every step (pi(r, s) = pi(g, s) only if r = g), reached
    ranks stay distinct until the last step, and only the last step can reach a rank twice."""
    peers = bf.peer_table("swing", (p,), 0, False)
    assert len(peers) == math.ceil(math.log2(p))
    for s in range(len(peers)):
        assert np.array_equal(peers[s][peers[s]], np.arange(p)), f"step {s} is not a perfect matching"
    assert reach_counts(peers, len(peers) - 1).max() == 1
    assert reach_counts(peers).max() > 1, "the last step reaches some rank twice: why blocks must not be resent"


# -- verification: every collective, variant and port count ------------------------------------------------
@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("collective, variant", FLAVOURS)
@pytest.mark.parametrize("ports", [1, 2, None])
def test_swing_verifies(spec, collective, variant, ports):
    shape = shape_of(spec)
    schedule = registry.build("swing", spec, collective, variant=variant, ports=ports)
    assert_ok(schedule)
    expected_ports = 2 * len(shape) if ports is None else ports
    assert schedule.meta["algorithm"] == "swing"
    assert schedule.meta["variant"] == variant and schedule.meta["ports"] == expected_ports
    p = parse(spec).num_compute
    if variant == "bandwidth":
        assert schedule.num_steps == bandwidth_steps(shape, collective)
        assert schedule.nblocks % (expected_ports * p) == 0
    else:
        assert schedule.num_steps == latency_steps(shape)
        assert schedule.nblocks == expected_ports


@pytest.mark.parametrize("spec", ["ring:2", "ring:1024", "torus:32x32"])
def test_swing_verifies_from_2_to_1024_ranks(spec):
    shape = shape_of(spec)
    schedule = registry.build("swing", spec, "allreduce")
    assert_ok(schedule)
    assert schedule.num_steps == 2 * sum(log2(d) for d in shape)
    assert_ok(registry.build("swing", spec, "allreduce", variant="latency"))


@st.composite
def shapes(draw, max_ranks: int = 1100, max_size: int = 12):
    """Torus shapes of 1 to 4 dimensions, sizes 2..max_size, at most max_ranks ranks."""
    ndim = draw(st.integers(1, 4))
    shape, budget = [], max_ranks
    for i in range(ndim):
        d = draw(st.integers(2, min(max_size, budget // 2 ** (ndim - 1 - i))))
        shape.append(d)
        budget //= d
    return tuple(shape)


@settings(max_examples=30, deadline=None)
@given(shape=shapes(), flavour=st.sampled_from(FLAVOURS + [("reduce_scatter", "latency")]), data=st.data())
def test_swing_property(shape, flavour, data):
    """Any shape: Swing verifies, takes the step count of Sec. 3.2, never resends a block, and sends the
    optimal 2 (p-1)/p of the vector per rank up to the 1/p an odd dimension adds."""
    collective, variant = flavour
    spec = spec_of(shape)
    ports = data.draw(st.sampled_from([None, 1, 2, 2 * len(shape)]), label="ports")
    if variant == "latency" and collective != "allreduce":
        with pytest.raises(UnsupportedShapeError):
            registry.build("swing", spec, collective, variant=variant, ports=ports)
        return
    schedule = registry.build("swing", spec, collective, variant=variant, ports=ports)
    assert_ok(schedule)
    p = schedule.nranks
    if variant == "latency":
        assert schedule.num_steps == latency_steps(shape)
        return
    assert schedule.num_steps == bandwidth_steps(shape, collective)
    if collective == "allgather":
        assert_allgather_delivers_each_block_once(schedule)
    if collective == "allreduce":
        sent = analyze(schedule, parse(spec), link_loads_too=False).bytes_per_rank
        assert 2 * (p - 1) / p - 1e-9 <= sent <= 2 * (p - 1) / p + 2 / p + 1e-9


# -- power-of-two shapes: Sec. 3.1 -------------------------------------------------------------------------
@pytest.mark.parametrize("spec", POW2_SPECS)
@pytest.mark.parametrize("ports", [1, None])
def test_power_of_two_structure(spec, ports):
    """Contiguous sends (logical block remapping), 2 sum log2 d_i steps, data halving then doubling, one
    transfer per collective per rank per step, and exactly 2 (p-1)/p of the vector sent per rank."""
    topo = parse(spec)
    shape, p = topo.shape, topo.num_compute
    k = 2 * len(shape) if ports is None else ports
    schedule = registry.build("swing", spec, "allreduce", ports=ports)
    half = sum(log2(d) for d in shape)
    assert schedule.num_steps == 2 * half
    assert schedule.meta["construction"] == "butterfly"
    assert np.all(np.diff(schedule.piece_offsets) == 1), "every transfer must be one contiguous piece"
    per_step = np.bincount(schedule.step * p + schedule.src, minlength=2 * half * p)
    assert np.all(per_step == k), "every rank sends exactly one transfer per collective per step"
    per_step = np.bincount(schedule.step * p + schedule.dst, minlength=2 * half * p)
    assert np.all(per_step == k), "every rank receives exactly one transfer per collective per step"
    size = schedule.transfer_size
    for s in range(half):
        assert np.allclose(size[schedule.step == s], 1 / (k * 2 ** (s + 1))), "reduce-scatter halves the data"
        assert np.allclose(size[schedule.step == 2 * half - 1 - s], 1 / (k * 2 ** (s + 1)))
    assert np.all(schedule.op[schedule.step < half] == REDUCE)
    assert np.all(schedule.op[schedule.step >= half] == COPY)
    report = analyze(schedule, topo, link_loads_too=False)
    assert report.bytes_per_rank == pytest.approx(2 * (p - 1) / p)
    sent = np.bincount(schedule.src, weights=size, minlength=p)
    assert np.allclose(sent, 2 * (p - 1) / p), "every rank sends the same amount"
    for collective in ("reduce_scatter", "allgather"):
        part = registry.build("swing", spec, collective, ports=ports)
        assert part.num_steps == half and np.all(np.diff(part.piece_offsets) == 1)
    assert_allgather_delivers_each_block_once(registry.build("swing", spec, "allgather", ports=ports))


@pytest.mark.parametrize("spec", POW2_SPECS)
def test_power_of_two_latency_variant(spec):
    """Sec. 3.1.2: same peers, log2 p steps, the whole (per-port part of the) vector every step."""
    topo = parse(spec)
    shape, p = topo.shape, topo.num_compute
    k = 2 * len(shape)
    schedule = registry.build("swing", spec, "allreduce", variant="latency")
    assert schedule.num_steps == sum(log2(d) for d in shape) == log2(p)
    assert schedule.meta["construction"] == "butterfly"
    assert np.allclose(schedule.transfer_size, 1 / k)
    assert np.all(schedule.op == REDUCE)
    assert np.all(np.bincount(schedule.step * p + schedule.src) == k)
    # the same communication pattern as the bandwidth-optimal reduce-scatter
    rs = registry.build("swing", spec, "reduce_scatter")
    key = lambda s: sorted(zip(s.step.tolist(), s.src.tolist(), s.dst.tolist(), strict=True))  # noqa: E731
    assert key(schedule) == key(rs)


# -- non-power-of-two: Sec. 3.2, Fig. 3, App. A.2 ----------------------------------------------------------
@pytest.mark.parametrize("p", [6, 10, 12, 14, 24, 100])
def test_even_sizes(p):
    """Even p: 2 ceil(log2 p) steps, no block sent twice to a rank, no extra data (Sec. 3.2)."""
    spec = f"ring:{p}"
    for ports in (1, 2):
        schedule = registry.build("swing", spec, "allreduce", ports=ports)
        assert_ok(schedule)
        assert schedule.num_steps == 2 * math.ceil(math.log2(p))
        assert analyze(schedule, parse(spec), link_loads_too=False).bytes_per_rank == pytest.approx(2 * (p - 1) / p)
        ag = registry.build("swing", spec, "allgather", ports=ports)
        assert ag.num_steps == math.ceil(math.log2(p))
        assert_allgather_delivers_each_block_once(ag)
        # the reduce-scatter mirrors it: every rank sends each block it does not own exactly once
        rs = registry.build("swing", spec, "reduce_scatter", ports=ports)
        expected = np.ones((p, rs.nblocks), dtype=np.int64)
        expected[rs.owner, np.arange(rs.nblocks)] = 0
        assert np.array_equal(delivery_counts(rs, by="src"), expected)


def test_fig3_odd_seven_nodes():
    """Fig. 3: the first 6 nodes run Swing; node 6 exchanges one block (n/7) with nodes 0, 1, 2 in step 0,
    with 3 and 4 in step 1 and with 5 in the last step of the reduce-scatter."""
    rs = registry.build("swing", "torus:7", "reduce_scatter", ports=1)
    assert rs.num_steps == 3 == math.ceil(math.log2(6))
    for step, nodes in enumerate([{0, 1, 2}, {3, 4}, {5}]):
        out = (rs.step == step) & (rs.src == 6)
        into = (rs.step == step) & (rs.dst == 6)
        assert set(rs.dst[out].tolist()) == nodes and set(rs.src[into].tolist()) == nodes
        assert np.allclose(rs.transfer_size[out | into], 1 / 7)
        base = (rs.step == step) & (rs.src != 6) & (rs.dst != 6)
        peers = bf.peer_table("swing", (6,), 0, False)[step]
        assert np.array_equal(rs.dst[base], peers[rs.src[base]]), "nodes 0..5 run Swing on 6 nodes"


@pytest.mark.parametrize("p", [3, 5, 7, 9, 13, 15, 33])
def test_odd_sizes(p):
    """Odd p: 2 ceil(log2(p-1)) steps; the extra node p-1 meets ceil(rest/2) of the others per step (the
    rest in the last step), each exactly once; at most 1/p extra data per rank and direction."""
    spec = f"ring:{p}"
    steps = math.ceil(math.log2(p - 1))
    rs = registry.build("swing", spec, "reduce_scatter", ports=1)
    assert rs.num_steps == steps
    rest, met = list(range(p - 1)), []
    for s in range(steps):
        partners = sorted(rs.dst[(rs.step == s) & (rs.src == p - 1)].tolist())
        assert sorted(rs.src[(rs.step == s) & (rs.dst == p - 1)].tolist()) == partners
        take = len(rest) if s == steps - 1 else -(-len(rest) // 2)
        assert len(partners) == take
        met += partners
        rest = [r for r in rest if r not in partners]
    assert sorted(met) == list(range(p - 1)), "node p-1 meets every other node exactly once"
    for ports in (1, 2):
        schedule = registry.build("swing", spec, "allreduce", ports=ports)
        assert_ok(schedule)
        assert schedule.num_steps == 2 * steps
        sent = analyze(schedule, parse(spec), link_loads_too=False).bytes_per_rank
        assert 2 * (p - 1) / p - 1e-9 <= sent <= 2 * (p - 1) / p + 2 / p + 1e-9
        assert_allgather_delivers_each_block_once(registry.build("swing", spec, "allgather", ports=ports))


@pytest.mark.parametrize("spec", ["torus:6x10", "torus:7", "ring:13", "torus:3x3x2", "torus:9x6x5", "mesh:4x6",
                                  "hyperx:4x3", "torus:12", "hammingmesh:2x2:2x3"])
def test_latency_variant_folds_non_power_of_two(spec):
    """Latency-optimal Swing on other shapes: fold onto the largest power-of-two sub-grid, 2 extra steps."""
    topo = parse(spec)
    shape = topo.shape
    sub = [1 << (d.bit_length() - 1) for d in shape]
    schedule = registry.build("swing", spec, "allreduce", variant="latency")
    assert_ok(schedule)
    assert schedule.meta["construction"] == "fold"
    core = sum(d.bit_length() - 1 for d in shape)
    assert schedule.num_steps == core + 2
    c = coords(shape, np.arange(topo.num_compute))
    extra = np.flatnonzero((c >= np.asarray(sub)).any(axis=1))
    inside = np.setdiff1d(np.arange(topo.num_compute), extra)
    first, last = schedule.step == 0, schedule.step == core + 1
    assert sorted(set(schedule.src[first].tolist())) == extra.tolist()
    assert np.all(np.isin(schedule.dst[first], inside)) and np.all(schedule.op[first] == REDUCE)
    assert sorted(set(schedule.dst[last].tolist())) == extra.tolist() and np.all(schedule.op[last] == COPY)
    middle = ~(first | last)
    assert np.all(np.isin(schedule.src[middle], inside)) and np.all(np.isin(schedule.dst[middle], inside))


# -- multiport: Sec. 4.1, Fig. 4 -----------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SQUARE_SPECS)
@pytest.mark.parametrize("variant", ["bandwidth", "latency"])
def test_multiport_collectives_use_different_ports(spec, variant):
    """With 2D collectives on a square power-of-two torus, each step's transfers leave (and enter) every
    rank through 2D different links: no directed link is the first (or last) hop of two transfers."""
    topo = parse(spec)
    shape, p = topo.shape, topo.num_compute
    k = 2 * len(shape)
    s = registry.build("swing", spec, "allreduce", variant=variant)
    first, last = hops(shape, s.src, s.dst)
    adjacency = topo.adjacency.tocsr()
    assert np.all(np.asarray(adjacency[s.src, first]) > 0) and np.all(np.asarray(adjacency[last, s.dst]) > 0)
    for u, v in ((s.src, first), (last, s.dst)):
        key = (s.step * p + u) * p + v
        assert len(np.unique(key)) == len(key), "two transfers of one step share a directed link"
    assert np.all(np.bincount(s.step * p + s.src) == k), "one transfer per collective, rank and step"
    # step 0: every rank sends to its 2D torus neighbours, one collective per port
    step0 = s.step == 0
    for r in (0, p // 2 + 1, p - 1):
        out = s.dst[step0 & (s.src == r)]
        assert len(set(out.tolist())) == k
        assert np.all(np.abs(((coords(shape, out) - coords(shape, [r])[0] + 1) % np.asarray(shape)) - 1).sum(1) == 1)


@pytest.mark.parametrize("spec", ["torus:16x4", "torus:4x16", "torus:8x4x4", "torus:32x8"])
def test_rectangular_ports_until_smallest_dimension_done(spec):
    """Sec. 4.2: for the first D log2(d_min) steps Swing behaves as on a d_min^D torus (all ports distinct);
    afterwards some ports idle and collectives share links."""
    topo = parse(spec)
    shape, p = topo.shape, topo.num_compute
    k = 2 * len(shape)
    rs = registry.build("swing", spec, "reduce_scatter")
    cut = len(shape) * log2(min(shape))
    first, _ = hops(shape, rs.src, rs.dst)
    for step in range(rs.num_steps):
        sel = rs.step == step
        links = np.unique(rs.src[sel] * p + first[sel])
        if step < cut:
            assert len(links) == k * p, f"step {step}: ports collide before d_min is exhausted"
        else:
            assert len(links) < k * p, f"step {step}: all 2D ports cannot be in use"
            dims = moved_dimension(shape, rs.src[sel], rs.dst[sel])
            assert np.all(np.asarray(shape)[dims] > min(shape))


@pytest.mark.parametrize("spec", ["torus:2x4", "torus:4x16"])
def test_rectangular_fig5(spec):
    """Fig. 5: once dimension 0 is exhausted, every collective runs in dimension 1; before that the
    collectives alternate dimensions starting from their own."""
    shape = shape_of(spec)
    s = registry.build("swing", spec, "allreduce")
    half = s.num_steps // 2
    cut = 2 * log2(shape[0])
    dims = moved_dimension(shape, s.src, s.dst)
    which = collective_index(s, 4)
    for step in range(2 * half):
        rs_step = step if step < half else 2 * half - 1 - step
        sel = s.step == step
        if rs_step >= cut:
            assert np.all(dims[sel] == 1), f"step {step} must run in dimension 1"
        else:
            start = which[sel] % 2  # ports 0, 2 (plain, mirrored) start in dimension 0; ports 1, 3 in 1
            assert np.array_equal(dims[sel], (start + rs_step) % 2)
    if spec == "torus:2x4":  # Fig. 5, node 0: the last step's 4 collectives all go horizontally
        assert set(s.dst[(s.step == 2) & (s.src == 0)].tolist()) == {1, 3}  # 0 + rho(1) = -1 and mirrored


# -- cost: Table 2 ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec, xi, tol", [("torus:64x64", 1.19, 0.02), ("torus:8x8x8", 1.03, 0.02),
                                           ("torus:8x8x8x8", 1.008, 0.01)])
def test_table2_congestion_deficiency(spec, xi, tol):
    report = analyze(registry.build("swing", spec), parse(spec), link_loads_too=False)
    assert report.congestion_deficiency == pytest.approx(xi, rel=tol)
    assert report.bandwidth_deficiency == pytest.approx(1.0)
    assert report.latency_deficiency == pytest.approx(2.0)


@pytest.mark.parametrize("spec", SQUARE_SPECS + ["torus:16x4", "torus:2x2"])
def test_bandwidth_deficiency_is_one_on_power_of_two_tori(spec):
    report = analyze(registry.build("swing", spec), parse(spec), link_loads_too=False)
    assert report.bandwidth_deficiency == pytest.approx(1.0)


@pytest.mark.parametrize("spec", ["torus:8x8", "torus:16x16", "torus:8x8x8"])
def test_latency_variant_congestion_beats_recursive_doubling(spec):
    """Sec. 4.1: the latency-optimal Swing walks delta(sigma) <= 2^sigma per step, recursive doubling 2^sigma."""
    topo = parse(spec)
    sw = analyze(registry.build("swing", spec, variant="latency", ports=1), topo, link_loads_too=False)
    rd = analyze(registry.build("recursive-doubling", spec), topo, link_loads_too=False)
    d = topo.shape[0]
    sigmas = [s // len(topo.shape) for s in range(sw.steps)]
    swing_dist = [min(int(abs(bf.rho(g))) % d, d - int(abs(bf.rho(g))) % d) for g in sigmas]
    rd_dist = [min(2 ** g, d - 2 ** g) for g in sigmas]
    assert sw.congestion_deficiency == pytest.approx(np.mean(swing_dist))
    assert rd.congestion_deficiency == pytest.approx(np.mean(rd_dist))
    assert sw.congestion_deficiency < rd.congestion_deficiency


# -- errors ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("collective", ["reduce_scatter", "allgather"])
def test_latency_variant_is_allreduce_only(collective):
    with pytest.raises(UnsupportedShapeError, match="latency"):
        registry.build("swing", "torus:4x4", collective, variant="latency")
    with pytest.raises(UnsupportedShapeError):
        swing(parse("torus:6x10"), collective, variant="latency")


@pytest.mark.parametrize("name", ["swing", "recursive-doubling"])
@pytest.mark.parametrize("spec, ports", [("ring:16", 4), ("ring:16", 6), ("ring:12", 4), ("torus:4x6", 6),
                                         ("ring:12", 3)])
@pytest.mark.parametrize("variant", ["bandwidth", "latency"])
def test_ports_beyond_2d_repeat_the_collectives(name, spec, ports, variant):
    """More ports than 2D (the Swing library's threads and network interfaces on a ring) run the 2D collectives
    again on further shares of the vector: the schedule verifies and, with a multiple of 2D ports, its links
    carry what the 2D ports' do, so the step model's network time (no per-port costs) is the 2D schedule's."""
    from directcoll.simulate.params import NetworkParams
    from directcoll.simulate.step import simulate

    topo = parse(spec)
    many = registry.build(name, spec, variant=variant, ports=ports)
    assert_ok(many)
    assert many.meta["ports"] == ports
    full = registry.build(name, spec, variant=variant, ports=2 * len(topo.shape))
    if ports % (2 * len(topo.shape)):
        return
    params = NetworkParams(alpha=0.0, link_latency=0.0, per_hop_latency=0.0)
    assert simulate(many, topo, params).time(1 << 20) == pytest.approx(simulate(full, topo, params).time(1 << 20))


@pytest.mark.parametrize("spec, ports", [("torus:4x4", 0), ("torus:4x4", 7), ("ring:8", 7), ("torus:3x3x2", 7),
                                         ("torus:4x4", -1), ("torus:2x2x2x2", 9)])
def test_ports_out_of_range(spec, ports):
    with pytest.raises(UnsupportedShapeError, match="ports"):
        registry.build("swing", spec, ports=ports)
    with pytest.raises(UnsupportedShapeError, match="ports"):
        swing(parse(spec), ports=ports)


def test_unknown_variant():
    with pytest.raises(UnsupportedShapeError, match="variant"):
        registry.build("swing", "torus:4x4", variant="fastest")
    with pytest.raises(UnsupportedShapeError, match="variant"):
        swing(parse("torus:4x4"), variant="fastest")


# -- timing ------------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_print_build_and_verify_time_64x64(timings):
    t0 = time.perf_counter()
    schedule = registry.build("swing", "torus:64x64", "allreduce")
    t1 = time.perf_counter()
    result = verify(schedule)
    t2 = time.perf_counter()
    assert result.ok, result.summary()
    timings(f"swing bandwidth allreduce on torus:64x64 ({schedule.num_transfers} transfers): build", t1 - t0)
    timings("  verify", t2 - t1)
    timings("  build + verify (target < 60 s)", t2 - t0)
