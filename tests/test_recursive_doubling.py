"""Torus-optimized recursive doubling (Swing paper Sec. 2.3.2, 2.3.3, Fig. 2, Table 2) and its mirrored
multiport version (Sec. 4.1, 5.1).

Ranks are row-major in the topology's shape: in Fig. 2's 4x4 torus rank = a0 * 4 + a1.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from directcoll import registry
from directcoll.algorithms import butterfly as bf
from directcoll.algorithms.recursive_doubling import recursive_doubling
from directcoll.cost.analytic import analyze
from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import COPY, REDUCE
from directcoll.topology.spec import parse
from directcoll.verify import verify

COLLECTIVES = ("allreduce", "reduce_scatter", "allgather")
POW2_SPECS = ["torus:4x4", "torus:8x8", "torus:16x4", "torus:2x8", "torus:4x4x4", "ring:16", "hypercube:4",
              "torus:2x2", "torus:2", "mesh:4x8"]
NON_POW2_SPECS = ["torus:6x10", "torus:7", "ring:13", "torus:3x3x2", "torus:12", "torus:9x6x5", "mesh:4x6",
                  "hyperx:4x3"]
NAMES = ("recursive-doubling", "rabenseifner", "mirrored-recursive-doubling")


# -- helpers -----------------------------------------------------------------------------------------------
def assert_ok(schedule):
    result = verify(schedule)
    assert result.ok, f"{result.summary()}; failure: {result.failure}"


def log2(d: int) -> int:
    assert bf.is_power_of_two(d)
    return d.bit_length() - 1


def floor_log2(d: int) -> int:
    return d.bit_length() - 1


def coords(shape, ranks) -> np.ndarray:
    return np.stack(np.unravel_index(np.asarray(ranks), shape), axis=-1)


def is_pow2_shape(shape) -> bool:
    return all(bf.is_power_of_two(d) for d in shape)


def expected_steps(shape, collective: str, variant: str) -> int:
    """log2 p (latency) or 2 log2 p (bandwidth allreduce) on the folded grid, plus 2 when folding."""
    core = sum(floor_log2(d) for d in shape)
    fold = 0 if is_pow2_shape(shape) else 2
    if variant == "latency":
        return core + fold
    return 2 * core + fold if collective == "allreduce" else core


def xor_moves(shape, src, dst):
    """(dimension, bit) of every transfer whose endpoints differ in one coordinate by XOR of one bit."""
    cs, cd = coords(shape, src), coords(shape, dst)
    changed = cs != cd
    assert np.all(changed.sum(axis=1) == 1), "a transfer moves in more than one dimension"
    dim = changed.argmax(axis=1)
    rows = np.arange(len(dim))
    x = cs[rows, dim] ^ cd[rows, dim]
    assert np.all(x & (x - 1) == 0), "peers must differ by one bit of one coordinate"
    return dim, x


def first_hop_links(shape, src, dst) -> np.ndarray:
    """(src, first neighbour) key of every single-dimension transfer at distance < d/2."""
    shape_a = np.asarray(shape)
    cs, cd = coords(shape, src), coords(shape, dst)
    dim = (cs != cd).argmax(axis=1)
    rows = np.arange(len(dim))
    d = shape_a[dim]
    off = (cd - cs)[rows, dim] % d
    assert np.all(2 * off != d)
    nxt = cs.copy()
    nxt[rows, dim] = (nxt[rows, dim] + np.where(off < d - off, 1, -1)) % d
    return np.asarray(src) * int(np.prod(shape)) + np.ravel_multi_index(tuple(nxt.T), shape)


# -- latency-optimal recursive doubling: Sec. 2.3.2, Fig. 2 ------------------------------------------------
def test_fig2_peers_of_rank_0_on_4x4():
    """Fig. 2: rank 0 meets its neighbours 1 and 4 (one per dimension), then 2 and 8 at distance 2."""
    s = registry.build("recursive-doubling", "torus:4x4")
    peers = [int(s.dst[(s.src == 0) & (s.step == t)][0]) for t in range(s.num_steps)]
    assert s.num_steps == 4
    assert set(peers[:2]) == {1, 4} and set(peers[2:]) == {2, 8}
    assert peers == [4, 1, 8, 2]  # dimension 0 (vertical) first


@pytest.mark.parametrize("spec", POW2_SPECS)
def test_latency_one_dimension_per_step(spec):
    """log2 p steps, every step in one dimension (round-robin over the unfinished ones), peer at XOR
    distance 2^sigma, the whole vector reduced every step."""
    topo = parse(spec)
    shape, p = topo.shape, topo.num_compute
    s = registry.build("recursive-doubling", spec)
    assert_ok(s)
    assert s.meta["algorithm"] == "recursive-doubling" and s.meta["variant"] == "latency"
    assert s.meta["ports"] == 1 and s.nblocks == 1
    assert s.num_steps == log2(p)
    assert np.all(s.op == REDUCE) and np.allclose(s.transfer_size, 1.0)
    assert np.all(np.bincount(s.step * p + s.src, minlength=s.num_steps * p) == 1)
    dim, bit = xor_moves(shape, s.src, s.dst)
    expected = bf.dimension_sequence([log2(d) for d in shape], 0)
    for t, (w, sigma) in enumerate(expected):
        sel = s.step == t
        assert np.all(dim[sel] == w) and np.all(bit[sel] == 1 << sigma)


def test_latency_bandwidth_deficiency_8x8():
    """Table 2: REC.DOUB. (L) sends the whole vector log2 p times on one port: Psi = D log2 p."""
    topo = parse("torus:8x8")
    report = analyze(registry.build("recursive-doubling", "torus:8x8"), topo, link_loads_too=False)
    assert report.steps == 6 and report.latency_deficiency == pytest.approx(1.0)
    assert report.bandwidth_deficiency == pytest.approx(2 * 6, rel=0.10)
    assert report.bytes_per_rank == pytest.approx(6.0)
    # Sec. 2.3.2: each dimension is walked at distances 1, 2, 4 (the ring distance of 4 on 8 is 4)
    assert report.congestion_deficiency == pytest.approx((1 + 1 + 2 + 2 + 4 + 4) / 6)


# -- Rabenseifner: Sec. 2.3.3 ------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", POW2_SPECS)
def test_rabenseifner_power_of_two(spec):
    """2 log2 p steps; the reduce-scatter halves contiguous pieces while the XOR distance doubles, the
    allgather reverses it; reduce-scatter and allgather alone verify too."""
    topo = parse(spec)
    shape, p = topo.shape, topo.num_compute
    half = log2(p)
    s = registry.build("rabenseifner", spec)
    assert_ok(s)
    assert s.meta["algorithm"] == "rabenseifner" and s.meta["variant"] == "bandwidth"
    assert s.num_steps == 2 * half
    assert np.all(np.diff(s.piece_offsets) == 1), "every transfer must be one contiguous piece"
    assert np.all(s.op[s.step < half] == REDUCE) and np.all(s.op[s.step >= half] == COPY)
    dim, bit = xor_moves(shape, s.src, s.dst)
    seq = bf.dimension_sequence([log2(d) for d in shape], 0)
    for t, (w, sigma) in enumerate(seq):
        for step in (t, 2 * half - 1 - t):
            sel = s.step == step
            assert np.all(dim[sel] == w) and np.all(bit[sel] == 1 << sigma)
            assert np.allclose(s.transfer_size[sel], 1 / 2 ** (t + 1))
    report = analyze(s, topo, link_loads_too=False)
    assert report.bytes_per_rank == pytest.approx(2 * (p - 1) / p)
    for collective in ("reduce_scatter", "allgather"):
        part = registry.build("rabenseifner", spec, collective)
        assert_ok(part)
        assert part.num_steps == half and np.all(np.diff(part.piece_offsets) == 1)
    assert registry.build("recursive-doubling", spec, variant="bandwidth").num_transfers == s.num_transfers


@pytest.mark.parametrize("spec", ["torus:8x8", "torus:4x4x4"])
def test_rabenseifner_bandwidth_deficiency(spec):
    """Table 2: REC.DOUB. (B) is single-port: Psi = 2D, Lambda = 2."""
    topo = parse(spec)
    report = analyze(registry.build("rabenseifner", spec), topo, link_loads_too=False)
    assert report.bandwidth_deficiency == pytest.approx(2 * len(topo.shape))
    assert report.latency_deficiency == pytest.approx(2.0)


@pytest.mark.parametrize("spec", NON_POW2_SPECS)
def test_non_power_of_two(spec):
    """Allreduce adds exactly two steps (fold in, fold out) and verifies; reduce-scatter and allgather
    are refused with UnsupportedShapeError."""
    topo = parse(spec)
    shape = topo.shape
    core = sum(floor_log2(d) for d in shape)
    for name, steps in (("rabenseifner", 2 * core), ("recursive-doubling", core)):
        s = registry.build(name, spec)
        assert_ok(s)
        assert s.num_steps == steps + 2
        assert s.meta["construction"] == "fold"
        sub = np.asarray([1 << floor_log2(d) for d in shape])
        extra = np.flatnonzero((coords(shape, np.arange(topo.num_compute)) >= sub).any(axis=1))
        assert sorted(set(s.src[s.step == 0].tolist())) == extra.tolist()
        assert sorted(set(s.dst[s.step == s.num_steps - 1].tolist())) == extra.tolist()
    for collective in ("reduce_scatter", "allgather"):
        for name in ("rabenseifner", "mirrored-recursive-doubling"):
            with pytest.raises(UnsupportedShapeError, match="power of two"):
                registry.build(name, spec, collective, variant="bandwidth")


# -- mirrored: Sec. 4.1, 5.1 --------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["torus:4x4", "torus:8x8", "torus:4x4x4", "ring:16", "torus:16x4", "torus:6x10",
                                  "torus:3x3x2", "hypercube:4"])
@pytest.mark.parametrize("variant", ["latency", "bandwidth"])
def test_mirrored_defaults_to_all_ports(spec, variant):
    topo = parse(spec)
    d = len(topo.shape)
    s = registry.build("mirrored-recursive-doubling", spec, variant=variant)
    assert_ok(s)
    assert s.meta["ports"] == 2 * d
    assert s.meta["algorithm"] == "mirrored-recursive-doubling" and s.meta["variant"] == (variant or "latency")
    assert s.num_steps == expected_steps(topo.shape, "allreduce", variant)
    if is_pow2_shape(topo.shape):
        p = topo.num_compute
        assert np.all(np.bincount(s.step * p + s.src) == 2 * d), "one transfer per collective and step"
    for ports in range(1, 2 * d + 1):
        assert registry.build("mirrored-recursive-doubling", spec, variant=variant, ports=ports).meta["ports"] == ports


@pytest.mark.parametrize("spec", ["torus:4x4", "torus:8x8", "torus:4x4x4", "ring:16", "torus:16x8"])
@pytest.mark.parametrize("variant", ["latency", "bandwidth"])
def test_mirrored_plain_and_mirrored_use_different_ports_at_step_0(spec, variant):
    topo = parse(spec)
    shape, p = topo.shape, topo.num_compute
    s = registry.build("mirrored-recursive-doubling", spec, variant=variant)
    step0 = s.step == 0
    links = first_hop_links(shape, s.src[step0], s.dst[step0])
    assert len(np.unique(links)) == len(links) == 2 * len(shape) * p
    if spec == "torus:4x4":
        assert sorted(s.dst[step0 & (s.src == 0)].tolist()) == [1, 3, 4, 12]


@pytest.mark.parametrize("spec", ["torus:16x16", "torus:8x8x8"])
def test_mirroring_does_not_reach_swing_congestion(spec):
    """Sec. 4.1: mirroring brings recursive doubling to Psi = 1, but its congestion deficiency stays above
    Swing's because its peers are farther away."""
    topo = parse(spec)
    rd = analyze(registry.build("mirrored-recursive-doubling", spec, variant="bandwidth"), topo,
                 link_loads_too=False)
    sw = analyze(registry.build("swing", spec), topo, link_loads_too=False)
    assert rd.bandwidth_deficiency == pytest.approx(1.0)
    assert rd.congestion_deficiency > sw.congestion_deficiency


# -- errors --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["recursive-doubling", "mirrored-recursive-doubling"])
@pytest.mark.parametrize("collective", ["reduce_scatter", "allgather"])
def test_latency_variant_is_allreduce_only(name, collective):
    with pytest.raises(UnsupportedShapeError, match="latency"):
        registry.build(name, "torus:4x4", collective)


def test_bad_variants_and_ports():
    with pytest.raises(UnsupportedShapeError, match="variant"):
        registry.build("rabenseifner", "torus:4x4", variant="latency")
    with pytest.raises(UnsupportedShapeError, match="variant"):
        registry.build("recursive-doubling", "torus:4x4", variant="fastest")
    with pytest.raises(UnsupportedShapeError, match="variant"):
        recursive_doubling(parse("torus:4x4"), variant="fastest")
    for name in NAMES:
        for ports in (0, 7):
            with pytest.raises(UnsupportedShapeError, match="ports"):
                registry.build(name, "torus:4x4", ports=ports)
    assert registry.get("rd").name == registry.get("recdoub").name == "recursive-doubling"


# -- property ------------------------------------------------------------------------------------------------
@st.composite
def shapes(draw, max_ranks: int = 1100, max_size: int = 12):
    ndim = draw(st.integers(1, 4))
    shape, budget = [], max_ranks
    for i in range(ndim):
        d = draw(st.integers(2, min(max_size, budget // 2 ** (ndim - 1 - i))))
        shape.append(d)
        budget //= d
    return tuple(shape)


@settings(max_examples=30, deadline=None)
@given(shape=shapes(), name=st.sampled_from(NAMES), collective=st.sampled_from(COLLECTIVES), data=st.data())
def test_recursive_doubling_property(shape, name, collective, data):
    """Every request either verifies with the expected step count or is refused with UnsupportedShapeError,
    exactly when it asks for a reduce-scatter / allgather that is latency-optimal or on a shape that is not
    all powers of two."""
    alg = registry.get(name)
    variant = data.draw(st.sampled_from((None,) + alg.variants), label="variant")
    ports = data.draw(st.sampled_from([None, 1, 2, 2 * len(shape)]), label="ports")
    effective = variant or ("bandwidth" if name == "rabenseifner" else "latency")
    spec = "torus:" + "x".join(map(str, shape))
    refuse = collective != "allreduce" and (effective == "latency" or not is_pow2_shape(shape))
    if refuse:
        with pytest.raises(UnsupportedShapeError):
            registry.build(name, spec, collective, variant=variant, ports=ports)
        return
    s = registry.build(name, spec, collective, variant=variant, ports=ports)
    assert_ok(s)
    assert s.num_steps == expected_steps(shape, collective, effective)
    default_ports = 2 * len(shape) if name.startswith("mirrored") else 1
    assert s.meta["ports"] == (ports or default_ports)
    if effective == "bandwidth" and is_pow2_shape(shape):
        assert np.all(np.diff(s.piece_offsets) == 1)
