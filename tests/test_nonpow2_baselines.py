"""The Swing paper's non-power-of-two baselines (docs/algorithms.md): Rabenseifner's allreduce with 3-2 elimination
(Rabenseifner & Traeff 2004; Swing Sec. 2.3.3) and the Swing authors' library construction for any d (libswing:
Eq. 2 modulo d, ceil(log2 d) steps), each verified exactly, against its cost model, the registry's order metadata
and ``directcoll compare``."""

import json
import subprocess
import sys
from functools import partial

import numpy as np
import pytest

from directcoll.algorithms.elimination import (
    elimination_reduce_scatter,
    elimination_rounds,
    rabenseifner_elimination,
)
from directcoll.algorithms.swing import libswing_1d_allgather, product_allgather, swing, swing_1d_allgather
from directcoll.cost.analytic import analyze, elimination_allreduce_cost
from directcoll.errors import UnsupportedShapeError
from directcoll.registry import build, get, order_preserving
from directcoll.reports.contenders import default_contenders
from directcoll.reports.plot import letter
from directcoll.schedule import save
from directcoll.schedule.ops import from_reduce_scatter, reverse
from directcoll.topology import parse
from directcoll.verify import verify

TORI = ["torus:3x5", "torus:5x6", "torus:6x6", "torus:3x3x3", "torus:7x4"]
SWEEP = [f"ring:{p}" for p in range(3, 34)] + TORI


# -- 3-2 elimination ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", SWEEP)
def test_elimination_allreduce_verifies_in_rank_order_and_matches_its_cost_model(spec):
    topo = parse(spec)
    s = build("rabenseifner-elimination", topo)
    result = verify(s, order=True)
    assert result.ok, result.summary()
    assert result.order.preserving == order_preserving("rabenseifner-elimination", topo) is True
    r = analyze(s, topo, link_loads_too=False)
    steps, beta, gamma = elimination_allreduce_cost(topo.num_compute)
    assert (r.steps, float(r.port_time.sum()), float(r.reduce_time.sum())) == pytest.approx((steps, beta, gamma))
    assert r.steps == 2 * int(np.ceil(np.log2(topo.num_compute)))   # the paper's n + 1 rounds per phase


@pytest.mark.parametrize("p", range(2, 40))
def test_elimination_is_single_ported(p):
    """One message out and one in per rank per step, the model the protocol's cost is stated in."""
    rs = elimination_reduce_scatter(p)
    assert np.bincount(rs.step * p + rs.src).max() <= 1 and np.bincount(rs.step * p + rs.dst).max() <= 1
    assert rs.num_steps == int(np.ceil(np.log2(p)))


@pytest.mark.parametrize("p", [3, 5, 7, 9, 11, 13, 15, 17, 21, 31, 33])
def test_elimination_cost_is_the_published_one_for_odd_p(p):
    """Odd P: 2 (n + 1) alpha + 2 (3/2 - 1/2^n) m beta + (3/2 - 1/2^n) m gamma, measured on the schedule (the
    Swing paper's bandwidth deficiency of 3/2 for 3-2 elimination)."""
    n = p.bit_length() - 1
    topo = parse(f"ring:{p}")
    r = analyze(rabenseifner_elimination(topo), topo, link_loads_too=False)
    assert r.steps == 2 * (n + 1) == 2 * int(np.ceil(np.log2(p)))
    assert float(r.port_time.sum()) == pytest.approx(2 * (1.5 - 2.0 ** -n))
    assert float(r.reduce_time.sum()) == pytest.approx(1.5 - 2.0 ** -n)


def test_elimination_on_powers_of_two_is_recursive_halving():
    for p in (2, 4, 8, 16):
        assert all(t is None for _, t in elimination_rounds(p))
        r = analyze(rabenseifner_elimination(parse(f"ring:{p}")), parse(f"ring:{p}"), link_loads_too=False)
        assert (r.steps, float(r.port_time.sum())) == pytest.approx((2 * np.log2(p), 2 * (p - 1) / p))
        for coll in ("reduce_scatter", "allgather"):
            assert verify(build("rabenseifner-elimination", f"ring:{p}", coll)).ok


def test_elimination_sends_less_than_the_fold():
    """The beta coefficient (critical-path data) is below the fold's on every non-power-of-two P."""
    for p in (3, 5, 6, 7, 9, 12, 15, 17, 31, 33):
        topo = parse(f"ring:{p}")
        fold = analyze(build("rabenseifner", topo), topo, link_loads_too=False)
        elim = analyze(build("rabenseifner-elimination", topo), topo, link_loads_too=False)
        assert float(elim.port_time.sum()) < float(fold.port_time.sum()), p


def test_elimination_refuses_what_it_cannot_serve():
    with pytest.raises(UnsupportedShapeError, match="power-of-two number of ranks"):
        build("rabenseifner-elimination", "ring:6", "reduce_scatter")
    with pytest.raises(UnsupportedShapeError, match="one port"):
        build("rabenseifner-elimination", "ring:6", ports=2)
    assert get("rabenseifner-3-2").name == "rabenseifner-elimination"


def test_verify_order_cli_agrees_with_the_registry(tmp_path):
    """``directcoll verify --order`` on saved schedules: elimination keeps rank order, the fold does not (N = 6)."""
    for name, preserving in (("rabenseifner-elimination", True), ("rabenseifner", False)):
        assert order_preserving(name, "ring:6") is preserving
        path = tmp_path / f"{name}.json"
        save(build(name, "ring:6"), path)
        out = subprocess.run([sys.executable, "-m", "directcoll.cli.main", "verify", "--order", "--json", str(path)],
                             capture_output=True, text=True, timeout=120)
        doc = json.loads(out.stdout)
        assert doc["ok"] and out.returncode == (0 if preserving else 1), out.stderr


# -- the Swing authors' library construction ------------------------------------------------------------------
def _sets(plan):
    return {s: sorted((a, q, tuple(np.flatnonzero(m))) for a, q, m in sends) for s, sends in plan.items()}


@pytest.mark.parametrize("d", range(2, 65, 2))
def test_libswing_equals_fig3_block_sets_on_even_d(d):
    assert _sets(libswing_1d_allgather(d)) == _sets(swing_1d_allgather(d))


@pytest.mark.parametrize("d", range(3, 34, 2))
def test_libswing_is_not_an_allreduce_on_odd_d(d):
    """Built anyway, the library's construction loses or doubles contributions on every odd d: it is refused."""
    with pytest.raises(UnsupportedShapeError, match="odd size"):
        libswing_1d_allgather(d)
    ag = product_allgather((d,), 0, False, plan_1d=partial(libswing_1d_allgather, refuse_odd=False))
    assert not verify(from_reduce_scatter(reverse(ag), "allreduce")).ok


@pytest.mark.parametrize("spec", ["ring:6", "ring:10", "ring:12", "torus:6x6", "torus:10x6", "torus:6x4",
                                  "torus:4x4", "torus:4x6x2"])
def test_libswing_verifies_and_costs_as_fig3_on_even_dimensions(spec):
    topo = parse(spec)
    lib, fig3 = swing(topo, variant="libswing"), swing(topo, variant="bandwidth")
    assert verify(lib).ok
    a, b = analyze(lib, topo), analyze(fig3, topo)
    assert (a.steps, a.bytes_per_rank, a.congestion_deficiency, a.t_b_m_over_b) == \
        pytest.approx((b.steps, b.bytes_per_rank, b.congestion_deficiency, b.t_b_m_over_b))
    assert a.steps == 2 * sum(int(np.ceil(np.log2(d))) for d in topo.shape)
    if all(d & (d - 1) == 0 for d in topo.shape):   # blocks in rank order, not remapped: more pieces per send
        assert lib.num_pieces > fig3.num_pieces


@pytest.mark.parametrize("spec", ["ring:7", *TORI])
def test_libswing_refuses_odd_dimensions_through_the_registry(spec):
    topo = parse(spec)
    if all(d % 2 == 0 for d in topo.shape):
        assert verify(build("swing", topo, variant="libswing")).ok
        return
    with pytest.raises(UnsupportedShapeError, match="not an allreduce on a dimension of odd size"):
        build("swing", topo, variant="libswing")


# -- compare ----------------------------------------------------------------------------------------------------
def test_both_baselines_compete_on_non_power_of_two_tori_with_their_own_letters():
    from directcoll.reports.compare import compare

    for spec, libswing_runs in (("torus:3x5", False), ("torus:6x6", True)):
        topo = parse(spec)
        contenders = default_contenders(topo)
        families = list(dict.fromkeys(c.family for c in contenders))
        assert {"rabenseifner-3-2", "swing-libswing"} <= set(families)
        letters = [letter(f) for f in families]
        assert len(set(letters)) == len(letters), dict(zip(families, letters, strict=True))
        cmp = compare(topo, sizes=[1024, 1 << 20], contenders=contenders, bound=False)
        assert "rabenseifner-3-2" in cmp.families()
        assert ("swing-libswing" in cmp.families()) is libswing_runs
        assert any(s.contender.variant == "libswing" for s in cmp.skipped) is not libswing_runs
    assert not any(c.family == "rabenseifner-3-2" for c in default_contenders(parse("torus:4x4")))
