"""Kolmakov & Zhang's generalized allreduce over any abelian group of order P (Secs. 5, 7 and 11) with the
placement permutation h (Sec. 5.1-5.2), and the per-rank programs that send each source byte once.

Notation: P ranks, L = ceil(log2 P), u = m / P (one block), N_i = ceil(P / 2^i), f_i = floor(N_i / 2).
"""

from __future__ import annotations

import math
import queue
import subprocess
import sys
import threading

import numpy as np
import pytest

from directcoll import registry
from directcoll.algorithms.generalized import generalized_allreduce, generalized_reduce_scatter
from directcoll.algorithms.generalized.groups import AbelianGroup, group_of, parse_group, placement_of
from directcoll.errors import UnsupportedShapeError
from directcoll.runtime.executor import allreduce
from directcoll.runtime.program import compile_programs, message_layout
from directcoll.topology import parse
from directcoll.verify import verify
from directcoll.verify.order import check_order

CLI = [sys.executable, "-m", "directcoll.cli.main"]


def L_of(p: int) -> int:
    return max(1, (p - 1).bit_length())


def n_of(p: int) -> list[int]:
    out = [p]
    for _ in range(L_of(p)):
        out.append(-(-out[-1] // 2))
    return out


def factorizations(p: int) -> list[tuple[int, ...]]:
    """Every ordered factorization of p into factors >= 2 (4x3 and 3x4 both)."""
    if p == 1:
        return [()]
    return [(f, *rest) for f in range(2, p + 1) if p % f == 0 for rest in factorizations(p // f)]


def odd_part_cyclic(factors) -> bool:
    """Whether the odd part of Z_n1 x ... x Z_nd is cyclic: no odd prime divides two factors."""
    for q in range(3, max(factors, default=2) + 1, 2):
        if all(q % d for d in range(3, int(q ** 0.5) + 1, 2)) and sum(f % q == 0 for f in factors) > 1:
            return False
    return True


def sent_units(s) -> np.ndarray:
    net = ~s.is_local
    return np.bincount(s.src[net], weights=s.transfer_size[net], minlength=s.nranks) * s.nranks


def assert_one_message_per_rank_per_step(s) -> None:
    p = s.nranks
    for t in range(s.num_steps):
        lo, hi = s.step_bounds[t], s.step_bounds[t + 1]
        net = ~s.is_local[lo:hi]
        assert np.array_equal(np.sort(s.src[lo:hi][net]), np.arange(p)), f"step {t}"
        assert np.array_equal(np.sort(s.dst[lo:hi][net]), np.arange(p)), f"step {t}"


# -- groups: parsing and refusals ---------------------------------------------------------------------------
def test_group_names_and_aliases():
    assert parse_group("cyclic", 12) == parse_group("12", 12) == (12,)
    assert parse_group("xor", 16) == parse_group("2x2x2x2", 16) == (2, 2, 2, 2)
    assert parse_group("4x3", 12) == (4, 3) and parse_group([2, 6], 12) == (2, 6)


@pytest.mark.parametrize("spec,p,match", [("2x5", 12, "order 10, not P = 12"), ("1x12", 12, "factor < 2"),
                                          ("4x3x1", 12, "factor < 2"), ("4*3", 12, "unknown group"),
                                          ("xor", 12, "power-of-two"), ("3x3", 9, "no element order")])
def test_bad_groups_are_refused_in_one_line(spec, p, match):
    with pytest.raises(UnsupportedShapeError, match=match) as info:
        generalized_allreduce(p, 0, spec)
    assert "\n" not in str(info.value)


def test_cli_refuses_a_bad_factorization_in_one_line(tmp_path):
    out = subprocess.run([*CLI, "schedule", "generalized", "torus:4x3", "--group", "2x5", "-o",
                          str(tmp_path / "g.npz")], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.startswith("directcoll: error: generalized: group 2x5 has order 10, not P = 12")
    assert out.stderr.count("\n") == 1


def test_cli_group_and_placement_reach_the_schedule(tmp_path):
    path = tmp_path / "g.json"
    subprocess.run([*CLI, "schedule", "generalized", "torus:3x4", "--group", "4x3", "--placement", "aligned",
                    "--steps", "6", "-o", str(path)], check=True, capture_output=True, timeout=120)
    from directcoll.schedule import load

    s = load(path)
    assert s.meta["group"] == "4x3" and s.meta["placement"] == "aligned" and s.num_steps == 6
    assert verify(s).ok


# -- every group of order P <= 24 with a fold order verifies; those without are refused -----------------------
@pytest.mark.parametrize("p", range(2, 25))
def test_sweep_every_factorization_r_and_placement(p):
    rng = np.random.default_rng(p)
    lg = L_of(p)
    rs = sorted({0, 1, lg, int(rng.integers(0, lg + 1))})
    for factors in factorizations(p):
        spec = "x".join(map(str, factors))
        if not odd_part_cyclic(factors):  # e.g. 3x3, 2x3x3, 3x6: no fold order exists (exhaustive search)
            with pytest.raises(UnsupportedShapeError, match="no element order"):
                group_of(spec, p)
            continue
        for placement in ("identity", rng.permutation(p).tolist()):
            for r in rs:
                s = generalized_allreduce(p, r, spec, placement)
                result = verify(s)
                assert result.ok, f"{spec} h={placement} r={r}: {result.summary()}"
                assert s.num_steps == 2 * lg - r
                assert_one_message_per_rank_per_step(s)
                sent = sent_units(s)
                assert np.allclose(sent, sent[0])
                if r == 0:  # eq. 25: 2 (P - 1) u
                    assert np.isclose(sent[0], 2 * (p - 1))
                elif r == lg:  # eq. 44: P L u
                    assert np.isclose(sent[0], p * lg)
                else:  # at most eq. 36 with the N_(L-r) <= 2^r sums the shortened distribution needs
                    assert sent[0] <= 2 * (p - 1) + (n_of(p)[lg - r] - 1) * (lg - 1) + 1e-9
            rs_ = generalized_reduce_scatter(p, spec, placement)
            assert verify(rs_).ok and rs_.num_steps == lg


def test_the_fold_order_has_one_operator_per_step():
    """Sec. 7 with any group: before step i the vectors sit at e_0..e_(N_i - 1); the moved ones are exactly f_i
    positions above where they land, by the single operator g_i."""
    for factors in [(4, 3), (3, 4), (2, 6), (2, 2, 3), (3, 5), (3, 8), (2, 3, 4), (4, 4), (2, 2, 2, 2)]:
        g = AbelianGroup(factors)
        order, ops = g.fold
        p = g.p
        assert sorted(order.tolist()) == list(range(p)) and order[0] == 0
        n = n_of(p)
        for i, op in enumerate(ops):
            f = n[i] // 2
            for k in range(n[i] - 2 * f, n[i] - f):
                assert int(g.add(order[k], op)) == order[k + f]


def test_known_groups_without_a_fold_order():
    for spec, p in [("3x3", 9), ("2x3x3", 18), ("3x6", 18)]:
        with pytest.raises(UnsupportedShapeError, match="no element order"):
            group_of(spec, p)


# -- placement h -------------------------------------------------------------------------------------------
def translation_per_step(s, topo) -> list[bool]:
    """Per step: whether every network message moves by one and the same torus translation."""
    out = []
    for t in range(s.num_steps):
        lo, hi = s.step_bounds[t], s.step_bounds[t + 1]
        net = ~s.is_local[lo:hi]
        delta = (topo.coords(s.dst[lo:hi][net]) - topo.coords(s.src[lo:hi][net])) % np.asarray(topo.shape)
        out.append(len(np.unique(delta, axis=0)) == 1)
    return out


@pytest.mark.parametrize("spec,group", [("torus:4x3", "12"), ("torus:3x4", "4x3"), ("torus:3x4", "12"),
                                        ("torus:4x4", "4x4"), ("torus:2x6", "2x2x3"), ("torus:8x3", "24")])
def test_aligned_placement_makes_every_operator_a_torus_translation(spec, group):
    topo = parse(spec)
    for r in (0, L_of(topo.num_compute)):
        s = registry.build("generalized", topo, r=r, group=group, placement="aligned")
        assert verify(s).ok
        assert all(translation_per_step(s, topo))


def test_identity_placement_of_a_misaligned_group_is_not_a_translation():
    topo = parse("torus:3x4")
    s = registry.build("generalized", topo, group="4x3")  # codes row-major over (4, 3), ranks over (3, 4)
    assert not all(translation_per_step(s, topo))
    s12 = registry.build("generalized", parse("torus:4x3"), group="12")  # j -> j + 6 wraps across rows
    assert not all(translation_per_step(s12, parse("torus:4x3")))


def test_aligned_is_an_isomorphism_onto_the_grid():
    g = AbelianGroup((12,))
    h = placement_of("aligned", g, (4, 3))
    coords = np.stack(np.unravel_index(np.arange(12), (4, 3)), axis=-1)
    for a in range(12):
        for b in range(12):
            c = (coords[a] + coords[b]) % (4, 3)
            assert h[np.ravel_multi_index(tuple(c), (4, 3))] == int(g.add(h[a], h[b]))


@pytest.mark.parametrize("placement,match", [("0,1,2", "permutation of 0..11"), ("0,0,1,2,3,4,5,6,7,8,9,10",
                                                                                    "permutation"),
                                             ("diagonal", "unknown placement")])
def test_bad_placements_are_refused(placement, match):
    with pytest.raises(UnsupportedShapeError, match=match):
        registry.build("generalized", "torus:4x3", placement=placement)


def test_aligned_refuses_a_group_not_isomorphic_to_the_torus():
    with pytest.raises(UnsupportedShapeError, match="not isomorphic"):
        registry.build("generalized", "torus:4x3", group="2x6", placement="aligned")


def test_placement_keeps_mpi_ownership_and_moves_only_communication():
    """h relabels which rank sits at which group element: the reduce-scatter still leaves block b on rank b, and
    the steps and bytes do not change (only who talks to whom)."""
    p = 12
    h = np.random.default_rng(0).permutation(p).tolist()
    a, b = generalized_reduce_scatter(p, "4x3"), generalized_reduce_scatter(p, "4x3", h)
    assert verify(b).ok and np.array_equal(a.owner, b.owner) and np.array_equal(b.owner, np.arange(p))
    for r in range(L_of(p) + 1):
        x, y = generalized_allreduce(p, r, "4x3"), generalized_allreduce(p, r, "4x3", h)
        assert x.num_steps == y.num_steps and np.allclose(sent_units(x), sent_units(y))
    assert not np.array_equal(a.dst, b.dst)


def test_order_metadata_stays_truthful_for_every_group():
    """The registry makes no order claim for generalized (commutative operators only); check that the claim is
    not stronger than what the schedules do, and that non-cyclic groups are indeed not order-preserving."""
    for spec, group in [("torus:4x3", "4x3"), ("torus:4x4", "2x2x2x2"), ("torus:2x6", "2x6"), ("ring:7", "7")]:
        topo = parse(spec)
        assert not registry.order_preserving("generalized", topo)
        s = registry.build("generalized", topo, group=group)
        assert not check_order(s).preserving


# -- runtime: each source byte sent once (eq. 44, eq. 36) -----------------------------------------------------
def program_units(s, count: int) -> list[int]:
    """Elements each rank's compiled program sends over the whole schedule, in units of u = count / P."""
    progs = compile_programs(s, count)
    per = count // s.nranks
    return [sum(int((rg[:, 1] - rg[:, 0]).sum()) for st in q.steps for _, rg in st.sends) / per for q in progs]


@pytest.mark.parametrize("p,r", [(13, 4), (23, 3), (23, 5), (12, 3), (7, 3), (16, 2), (29, 2)])
def test_programs_send_each_source_byte_once(p, r):
    lg = L_of(p)
    if r == lg:  # eq. 44: P ceil(log2 P) u
        expected = p * lg
    elif r == 1:  # eq. 36 with r = 1: 2(P - 1) + (2^1 - 1)(L - 1)
        expected = 2 * (p - 1) + (2 ** r - 1) * (lg - 1)
    else:  # eq. 36 with the N_(L-r) result sums the shortened distribution needs in place of 2^r
        expected = 2 * (p - 1) + (n_of(p)[lg - r] - 1) * (lg - 1)
    s = generalized_allreduce(p, r)
    assert program_units(s, 4 * p) == [expected] * p
    assert program_units(s, 4 * p) == pytest.approx(sent_units(s).tolist())  # the IR's count


def test_message_layout_sends_the_union_once():
    message, at = message_layout(np.array([[10, 14], [0, 3], [12, 16], [0, 3]]))
    assert message.tolist() == [[0, 3], [10, 16]] and at.tolist() == [3, 0, 5, 0]
    message, at = message_layout(np.array([[5, 7], [0, 2]]))  # disjoint: untouched, in piece order
    assert message.tolist() == [[5, 7], [0, 2]] and at.tolist() == [0, 2]


def run_threads(schedule, count: int):
    """Execute an allreduce on every rank in threads; returns (results, elements each rank sent)."""
    n = schedule.nranks
    boxes = {(a, b): queue.Queue() for a in range(n) for b in range(n)}
    sent = [0] * n
    out, errors = [np.zeros(count) for _ in range(n)], []

    def exchange_for(rank):
        def exchange(step, sends, recvs):
            for peer, payload in sends:
                sent[rank] += payload.size
                boxes[rank, peer].put(payload.copy())
            for peer, buf in recvs:
                buf[:] = boxes[peer, rank].get(timeout=30)
        return exchange

    def work(rank):
        try:
            allreduce(np.arange(count, dtype=float) * (rank + 1) + rank, out[rank], schedule=schedule, rank=rank,
                      nranks=n, op="sum", exchange=exchange_for(rank))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out, sent


@pytest.mark.parametrize("p,r,group", [(13, 4, "cyclic"), (12, 2, "2x2x3"), (12, 4, "4x3"), (6, 1, "2x3")])
def test_executed_programs_are_exact_and_send_the_ir_bytes(p, r, group):
    s = generalized_allreduce(p, r, group)
    count = 3 * p
    out, sent = run_threads(s, count)
    expected = sum(np.arange(count, dtype=float) * (k + 1) + k for k in range(p))
    for res in out:
        assert np.array_equal(res, expected)
    assert sent == pytest.approx((sent_units(s) * 3).tolist())
    if r == L_of(p):
        assert sent == [3 * p * L_of(p)] * p  # eq. 44 in elements (u = 3 elements)


def test_factorizations_helper():
    assert sorted(factorizations(12)) == sorted([(12,), (2, 6), (6, 2), (3, 4), (4, 3), (2, 2, 3), (2, 3, 2),
                                                 (3, 2, 2)])
    assert all(math.prod(f) == 24 for f in factorizations(24))


@pytest.mark.parametrize("group", ["2x2x3", "4x3", "2x6"])
def test_reduce_scatter_and_allgather_through_the_registry(group):
    h = np.random.default_rng(1).permutation(12).tolist()
    for collective in ("reduce_scatter", "allgather"):
        for placement in ("identity", h):
            s = registry.build("generalized", "torus:4x3", collective, group=group, placement=placement)
            assert verify(s).ok and s.num_steps == L_of(12)
            assert s.meta["group"] == group
