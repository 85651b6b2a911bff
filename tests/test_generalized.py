"""Kolmakov & Zhang, "A Generalization of the Allreduce Operation" (Sec. 5-9): the generalized allreduce of
``directcoll.algorithms.generalized`` and the cost model of ``directcoll.cost.kolmakov``.

Notation: P ranks, L = ceil(log2 P), u = m / P (one block), N_i = ceil(P / 2^i), f_i = floor(N_i / 2).
The full 2..300 sweep of every (P, r) is a benchmark; here a hypothesis sample plus a fixed list of P.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from directcoll import registry
from directcoll.algorithms.generalized import (
    generalized_allreduce,
    generalized_reduce_scatter,
    kolmakov_ring,
)
from directcoll.cost.kolmakov import (
    best_r_eq37,
    best_r_exact,
    fig1_ratio,
    tau_generalized,
    tau_recursive_doubling,
    tau_recursive_halving,
    tau_ring,
)
from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import COPY, REDUCE, Collective
from directcoll.verify import verify

EXPLICIT_P = (2, 3, 5, 7, 13, 31, 64, 127, 128, 129)
POW2_P = (2, 4, 8, 16, 32, 64, 128)
TABLE2 = dict(alpha=3e-5, beta=1e-8, gamma=2e-10)  # Kolmakov & Zhang Table 2


# -- helpers -----------------------------------------------------------------------------------------------
def L_of(p: int) -> int:
    """ceil(log2 P) by integer arithmetic (independent of the module's float log2)."""
    return max(1, (p - 1).bit_length())


def n_of(p: int) -> list[int]:
    """N_i = ceil(P / 2^i), i = 0..L (eq. 18)."""
    out = [p]
    for _ in range(L_of(p)):
        out.append(-(-out[-1] // 2))
    return out


def eq25_units(p: int) -> int:
    return 2 * (p - 1)


def eq36_units(p: int, r: int) -> int:
    return 2 * (p - 1) + (2 ** r - 1) * (L_of(p) - 1)


def eq44_units(p: int) -> int:
    return p * L_of(p)


def sent_units(s) -> np.ndarray:
    """Data every rank sends over the network in the whole schedule, in units of u = m / P."""
    net = ~s.is_local
    return np.bincount(s.src[net], weights=s.transfer_size[net], minlength=s.nranks) * s.nranks


def assert_ok(s) -> None:
    result = verify(s)
    assert result.ok, result.summary()


def assert_one_message_per_rank_per_step(s) -> None:
    """Every step: every rank sends exactly one network message and receives exactly one (the operator t^-f
    is a permutation of the ranks; Sec. 5.3)."""
    p = s.nranks
    for t in range(s.num_steps):
        lo, hi = s.step_bounds[t], s.step_bounds[t + 1]
        net = ~s.is_local[lo:hi]
        src, dst = s.src[lo:hi][net], s.dst[lo:hi][net]
        assert np.array_equal(np.sort(src), np.arange(p)), f"step {t}: senders {sorted(src.tolist())}"
        assert np.array_equal(np.sort(dst), np.arange(p)), f"step {t}: receivers {sorted(dst.tolist())}"


def expected_cyclic_units(p: int, r: int) -> int:
    """Exact bytes per rank (units of u) of our cyclic-group schedules.

    eq. 36 charges (2^r - 1)(L - 1) extra because the paper ends the reduction with 2^r sums. The construction
    ends it with exactly the N_(L-r) = ceil(P / 2^(L-r)) sums the shortened distribution starts from, and
    N_(L-r) <= 2^r (equality when P is a power of two, and for r = 1 where N_(L-1) = 2), so it pays
    (N_(L-r) - 1)(L - 1) and sends at most eq. 36, strictly less when N_(L-r) < 2^r (e.g. P = 5, r = 2).
    """
    lg = L_of(p)
    if r == lg:
        return eq44_units(p)
    return 2 * (p - 1) + (n_of(p)[lg - r] - 1) * (lg - 1)


def check_allreduce(p: int, r: int, group: str = "cyclic") -> None:
    """Verification, step count and per-rank traffic of generalized_allreduce(p, r, group)."""
    lg = L_of(p)
    s = generalized_allreduce(p, r, group)
    assert s.collective is Collective.ALLREDUCE and s.nranks == p and s.nblocks == p
    assert_ok(s)
    assert s.num_steps == 2 * lg - r
    assert_one_message_per_rank_per_step(s)
    sent = sent_units(s)
    assert np.allclose(sent, sent[0]), f"P={p} r={r}: ranks send different amounts {sorted(set(sent))}"
    if r == 0:
        assert np.isclose(sent[0], eq25_units(p))
    elif r == lg:
        assert np.isclose(sent[0], eq44_units(p))
    else:
        assert sent[0] <= eq36_units(p, r) + 1e-9
        if r == 1 and group == "cyclic":  # (the xor group sends less: see below)
            assert np.isclose(sent[0], eq36_units(p, 1))
    if group == "cyclic":
        assert np.isclose(sent[0], expected_cyclic_units(p, r))
    else:
        # the xor group shares more partial sums between the shifted reductions: it is recursive halving for
        # L - r steps, recursive doubling on 2^r blocks for r steps, then the allgather back: 2(P - 2^r) + r 2^r
        assert np.isclose(sent[0], 2 * (p - 2 ** r) + r * 2 ** r)


# -- 1, 2. every version verifies and sends what the paper says ---------------------------------------------
@st.composite
def p_and_r(draw):
    p = draw(st.integers(2, 300))
    return p, draw(st.integers(0, L_of(p)))


@settings(max_examples=40, deadline=None)
@given(p_and_r())
def test_sweep_verifies_and_counts(pr):
    check_allreduce(*pr)


@settings(max_examples=20, deadline=None)
@given(st.sampled_from(POW2_P), st.data())
def test_sweep_xor_group(p, data):
    check_allreduce(p, data.draw(st.integers(0, L_of(p))), "xor")


@pytest.mark.parametrize("p", EXPLICIT_P)
def test_explicit_every_r(p):
    for r in range(L_of(p) + 1):
        check_allreduce(p, r)


def test_eq36_is_strict_where_fewer_sums_are_needed():
    # P = 5, L = 3, r = 2: the paper ends the reduction with 2^2 = 4 sums, we need N_1 = 3: 2 * 3 + 8 < 14
    assert np.isclose(sent_units(generalized_allreduce(5, 2))[0], 12) and eq36_units(5, 2) == 14
    # power of two: N_(L-r) = 2^r, eq. 36 exactly
    assert np.isclose(sent_units(generalized_allreduce(64, 4))[0], eq36_units(64, 4))


def test_sends_grow_with_r():
    for p in (3, 7, 13, 31, 129):
        sent = [sent_units(generalized_allreduce(p, r))[0] for r in range(L_of(p) + 1)]
        assert all(a < b for a, b in zip(sent, sent[1:], strict=False)), (p, sent)


@pytest.mark.parametrize("p", EXPLICIT_P)
def test_bandwidth_optimal_computation(p):
    """eq. 25's gamma term: every rank reduces (P - 1) u, no local work."""
    s = generalized_allreduce(p, 0)
    assert not s.is_local.any() and s.nscratch == 0
    red = s.op == REDUCE
    work = np.bincount(s.dst[red], weights=s.transfer_size[red], minlength=p) * p
    assert np.allclose(work, p - 1)
    lg = L_of(p)
    assert np.all(s.op[s.step < lg] == REDUCE) and np.all(s.op[s.step >= lg] == COPY)


@pytest.mark.parametrize("spec", ["complete", "ring"])
@pytest.mark.parametrize("p", EXPLICIT_P)
def test_reduce_scatter_and_allgather_via_registry(spec, p):
    lg = L_of(p)
    rs = registry.build("generalized", f"{spec}:{p}", "reduce_scatter")
    ag = registry.build("generalized", f"{spec}:{p}", "allgather", r=0)
    for s, kind in ((rs, Collective.REDUCE_SCATTER), (ag, Collective.ALLGATHER)):
        assert s.collective is kind and s.num_steps == lg
        assert np.array_equal(s.owner, np.arange(p))  # rank b owns part b: MPI's ownership, no final shift
        assert_ok(s)
        assert_one_message_per_rank_per_step(s)
        assert np.allclose(sent_units(s), p - 1)
        assert s.meta["topology"] == f"{spec}:{p}" and s.meta["algorithm"] == "generalized"
    # the reduce-scatter is the reduction phase of the bandwidth-optimal allreduce
    ar = generalized_allreduce(p, 0)
    first = ar.step < lg
    assert np.array_equal(rs.src, ar.src[first]) and np.array_equal(rs.dst, ar.dst[first])
    assert np.array_equal(rs.piece_start, generalized_reduce_scatter(p).piece_start)


# -- 3. Sec. 7: the communication operators ----------------------------------------------------------------
@pytest.mark.parametrize("p", EXPLICIT_P + (6, 100, 300))
def test_sec7_operators(p):
    """Reduction step i applies t^(-f_i): rank j sends to j - f_i (every version); distribution step d
    applies the inverse of reduction step L - r - 1 - d."""
    lg, n = L_of(p), n_of(p)
    ranks = np.arange(p)
    for r in sorted({0, 1, lg // 2, lg}):
        s = generalized_allreduce(p, r)
        net = ~s.is_local
        for t in range(s.num_steps):
            sel = net & (s.step == t)
            src, dst = s.src[sel], s.dst[sel]
            assert np.array_equal(np.sort(src), ranks)
            if t < lg:
                assert np.array_equal(dst, (src - n[t] // 2) % p), f"P={p} r={r} reduction step {t}"
                assert np.all(s.op[sel] == REDUCE)
            else:
                i = lg - r - 1 - (t - lg)
                assert np.array_equal(dst, (src + n[i] // 2) % p), f"P={p} r={r} distribution step {t}"
                assert np.all(s.op[sel] == COPY)
        assert not (s.is_local & (s.step >= lg)).any()  # the distribution is network copies only


# -- 4. special cases ---------------------------------------------------------------------------------------
def recursive_halving_reference(p: int) -> list[Counter]:
    """Recursive-halving reduce-scatter then recursive-doubling allgather on power-of-two P, per step a multiset
    of (src, dst, blocks sent). RS step i: rank j exchanges with j ^ P/2^(i+1) the half of its current block
    range that the partner keeps; AG: the same exchanges in reverse order, each sending everything held."""
    lg = L_of(p)
    held = [set(range(p)) for _ in range(p)]
    steps = []
    for i in range(lg):
        h = p >> (i + 1)
        sends = {j: {b for b in held[j] if b & h == (j ^ h) & h} for j in range(p)}
        steps.append(Counter((j, j ^ h, frozenset(sends[j])) for j in range(p)))
        for j in range(p):
            held[j] -= sends[j]
    assert all(held[j] == {j} for j in range(p))
    for i in reversed(range(lg)):
        h = p >> (i + 1)
        steps.append(Counter((j, j ^ h, frozenset(held[j])) for j in range(p)))
        held = [held[j] | held[j ^ h] for j in range(p)]
    assert all(h == set(range(p)) for h in held)
    return steps


def messages(s, t: int) -> Counter:
    """Multiset of (src, dst, set of blocks sent) of step t's network transfers (one-block pieces)."""
    out = Counter()
    for k in range(s.step_bounds[t], s.step_bounds[t + 1]):
        a, b = s.piece_offsets[k], s.piece_offsets[k + 1]
        assert np.all(s.piece_stop[a:b] - s.piece_start[a:b] == s.denominator)
        out[(int(s.src[k]), int(s.dst[k]), frozenset((s.piece_start[a:b] // s.denominator).tolist()))] += 1
    return out


@pytest.mark.parametrize("p", POW2_P)
def test_xor_bandwidth_is_recursive_halving(p):
    s = registry.build("generalized", f"complete:{p}", group="xor")
    assert not s.is_local.any() and s.nscratch == 0
    ref = recursive_halving_reference(p)
    assert s.num_steps == len(ref)
    for t, want in enumerate(ref):
        assert messages(s, t) == want, f"P={p} step {t}"


@pytest.mark.parametrize("p", POW2_P)
def test_xor_latency_is_recursive_doubling(p):
    lg = L_of(p)
    s = registry.build("generalized", f"complete:{p}", variant="latency", group="xor")
    assert s.meta["r"] == lg and s.num_steps == lg
    assert not s.is_local.any()
    ranks = np.arange(p)
    for t in range(lg):
        lo, hi = s.step_bounds[t], s.step_bounds[t + 1]
        pairs = sorted(zip(s.src[lo:hi].tolist(), s.dst[lo:hi].tolist(), strict=True))
        assert pairs == sorted(zip(ranks.tolist(), (ranks ^ (p >> (t + 1))).tolist(), strict=True))
        assert np.allclose(s.transfer_size[lo:hi], 1.0)  # the whole vector, each part once
        for k in range(lo, hi):
            a, b = s.piece_offsets[k], s.piece_offsets[k + 1]
            assert set((s.piece_start[a:b] % (p * s.denominator) // s.denominator).tolist()) == set(range(p))


@pytest.mark.parametrize("p", (2, 3, 5, 7, 8, 13, 31))
def test_kolmakov_ring_is_the_ring(p):
    g = registry.build("generalized", f"complete:{p}", variant="ring")
    ring = registry.build("ring", f"ring:{p}", variant="unidirectional")
    assert g.meta["variant"] == "ring"
    assert_ok(g)
    assert g.num_steps == ring.num_steps == 2 * (p - 1)
    assert g.num_transfers == ring.num_transfers
    assert np.all(np.diff(g.piece_offsets) == 1) and np.all(np.diff(ring.piece_offsets) == 1)

    def rows(s, relabel):
        blocks = relabel(s.piece_start // s.denominator)
        return sorted(zip(s.step.tolist(), s.src.tolist(), s.dst.tolist(), s.op.tolist(), blocks.tolist(),
                          strict=True))

    assert rows(g, lambda b: (b - 1) % p) == rows(ring, lambda b: b)
    assert np.array_equal(kolmakov_ring(p).src, g.src)


# -- 5. cost formulas ---------------------------------------------------------------------------------------
def eq25(p, m, alpha, beta, gamma):
    lg, u = L_of(p), np.asarray(m, float) / p
    return 2 * lg * alpha + 2 * (p - 1) * u * beta + (p - 1) * u * gamma


def eq36(p, m, r, alpha, beta, gamma):
    lg, u = L_of(p), np.asarray(m, float) / p
    return ((2 * lg - r) * alpha + (2 * (p - 1) + (2 ** r - 1) * (lg - 1)) * u * beta
            + ((p - 1) + (2 ** r - 1) * (2 * lg - 2)) * u * gamma)


def eq44(p, m, alpha, beta, gamma):
    lg, u = L_of(p), np.asarray(m, float) / p
    return lg * alpha + p * lg * u * beta + p * (2 * lg - 2) * u * gamma


SIZES = np.array([8.0, 1e3, 65536.0, 1e6, 2.0 ** 30])


@pytest.mark.parametrize("p", (2, 3, 7, 16, 127, 129, 300))
def test_tau_generalized_equations(p):
    lg = L_of(p)
    a, b, g = TABLE2.values()
    assert np.allclose(tau_generalized(p, SIZES, 0, a, b, g), eq25(p, SIZES, a, b, g), rtol=1e-12)
    assert np.allclose(tau_generalized(p, SIZES, lg, a, b, g), eq44(p, SIZES, a, b, g), rtol=1e-12)
    for r in range(lg):
        assert np.allclose(tau_generalized(p, SIZES, r, a, b, g), eq36(p, SIZES, r, a, b, g), rtol=1e-12)
    # eq. 36 at r = 0 is eq. 25
    assert np.allclose(eq36(p, SIZES, 0, a, b, g), eq25(p, SIZES, a, b, g))


@pytest.mark.parametrize("p", (3, 7, 31, 127, 129, 300))
def test_best_r_exact_minimises(p):
    a, b, g = TABLE2.values()
    for m in np.geomspace(1, 1e10, 25):
        times = [float(tau_generalized(p, m, r, a, b, g)) for r in range(L_of(p) + 1)]
        best = best_r_exact(p, m, a, b, g)
        assert 0 <= best <= L_of(p) and times[best] == min(times)


def test_best_r_eq37_extremes_and_closed_form():
    a, b, g = TABLE2.values()
    for p in (3, 7, 31, 127, 129, 300):
        assert best_r_eq37(p, 1.0, a, b, g) == L_of(p)
        assert best_r_eq37(p, 1e12, a, b, g) == 0
        for m in (1e3, 1e4, 3e4, 1e5):
            r = np.log2(a / (m * (b + 2 * g))) + np.log2(p / ((np.log2(p) - 1) * np.log(2)))
            assert best_r_eq37(p, m, a, b, g) == int(min(L_of(p), max(0, round(r))))


@pytest.mark.parametrize("choose", ["exact", "eq37"])
def test_fig1_p127_beats_the_classics(choose):
    p, (a, b, g) = 127, TABLE2.values()
    sizes = np.unique(np.concatenate([np.geomspace(8, 1e9, 120), 2.0 ** np.arange(3, 31)]))
    assert sizes[0] == 8 and sizes[-1] == 2.0 ** 30
    ratio, rs = fig1_ratio(p, sizes, a, b, g, choose=choose)
    assert np.all(ratio < 1), sizes[ratio >= 1]
    assert rs[0] == L_of(p) and rs[-1] == 0
    best = np.minimum.reduce([tau_ring(p, sizes, a, b, g), tau_recursive_halving(p, sizes, a, b, g),
                              tau_recursive_doubling(p, sizes, a, b, g)])
    chosen = np.array([float(tau_generalized(p, m, r, a, b, g)) for m, r in zip(sizes, rs, strict=True)])
    assert np.allclose(ratio, chosen / best)
    # very large m: bandwidth-optimal against the ring, same bandwidth term, 2L vs 2(P-1) alpha: ratio -> 1
    big, _ = fig1_ratio(p, [1e9, 1e11, 1e13], a, b, g, choose=choose)
    assert np.all(np.diff(big) > 0) and np.all(big < 1) and 1 - big[-1] < 1e-5


# -- 6. errors ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("build", [generalized_allreduce, generalized_reduce_scatter, kolmakov_ring])
def test_one_process_is_refused(build):
    with pytest.raises(UnsupportedShapeError, match=r"P >= 2.*got 1"):
        build(1)


@pytest.mark.parametrize("p", (2, 7, 64))
def test_r_out_of_range(p):
    lg = L_of(p)
    for r in (-1, lg + 1, lg + 5):
        with pytest.raises(UnsupportedShapeError, match=rf"P = {p}, got {r}$"):
            generalized_allreduce(p, r)
        with pytest.raises(UnsupportedShapeError, match=rf"got {r}$"):
            registry.build("generalized", f"complete:{p}", r=r)


@pytest.mark.parametrize("p", (3, 6, 12, 127))
def test_xor_needs_power_of_two(p):
    with pytest.raises(UnsupportedShapeError, match=rf"xor.*power-of-two P, got {p}"):
        generalized_allreduce(p, 0, "xor")
    with pytest.raises(UnsupportedShapeError, match=rf"got {p}"):
        registry.build("generalized", f"complete:{p}", "reduce_scatter", group="xor")


def test_unknown_group():
    with pytest.raises(UnsupportedShapeError, match="'abelian'"):
        generalized_allreduce(8, 0, "abelian")


def test_ports_two_refused():
    with pytest.raises(UnsupportedShapeError, match="ports=2"):
        registry.build("generalized", "complete:8", ports=2)


@pytest.mark.parametrize("collective", ["reduce_scatter", "allgather"])
def test_latency_variant_is_allreduce_only(collective):
    with pytest.raises(UnsupportedShapeError, match=collective):
        registry.build("generalized", "complete:8", collective, variant="latency")
    with pytest.raises(UnsupportedShapeError, match=collective):
        registry.build("generalized", "complete:7", collective, r=1)
