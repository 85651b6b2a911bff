"""The Swing paper's Eq. 1 time and its congestion deficiency on rectangular tori (Sec. 4.1-4.2, Eq. 3) against
the measured Xi of :func:`directcoll.cost.analyze`."""

import json

import pytest

from directcoll.cli.main import main
from directcoll.cost import CostParams, analyze
from directcoll.cost.swing_model import delta, eq1_time, eq3_xi_q, swing_xi, swing_xi_closed_form, swing_xi_eq3
from directcoll.errors import UnsupportedShapeError
from directcoll.registry import build
from directcoll.topology import parse

RECTANGULAR = ["torus:64x16", "torus:128x8", "torus:16x4", "torus:32x8", "torus:8x4x2"]


def _measured(spec, collective="allreduce", ports=None):
    topo = parse(spec)
    return analyze(build("swing", topo, collective, variant="bandwidth", ports=ports), topo, link_loads_too=False)


@pytest.mark.parametrize("spec", [*RECTANGULAR, "torus:8x8", "torus:16x16", "torus:16", "torus:4x4x4x4",
                                  "torus:256x4"])
def test_closed_form_equals_measured_xi(spec):
    shape = parse(spec).shape
    assert swing_xi(shape) == pytest.approx(_measured(spec).congestion_deficiency, rel=1e-12)


RECT_SWEEP = [f"torus:{2 ** b}x{2 ** a}" for a in range(1, 5) for b in range(a + 1, 10 - a)] + \
    [f"torus:{x}x{y}x{z}" for x, y, z in [(8, 4, 2), (16, 4, 2), (8, 8, 2), (16, 8, 4), (32, 4, 2), (4, 4, 2)]]


@pytest.mark.parametrize("spec", RECT_SWEEP)
def test_geometric_closed_form_equals_measured_xi_on_rectangular_tori(spec):
    """The sum-free closed form (geometric series per phase of equal side lengths) against analyze's Xi."""
    shape = parse(spec).shape
    assert swing_xi_closed_form(shape) == pytest.approx(_measured(spec).congestion_deficiency, rel=1e-12)


def test_geometric_closed_form_equals_the_step_sum_everywhere():
    import itertools

    for dims in (1, 2, 3, 4):
        for logs in itertools.combinations_with_replacement(range(1, 11), dims):
            shape = tuple(2 ** e for e in logs)
            assert swing_xi_closed_form(shape) == pytest.approx(swing_xi(shape), rel=1e-12)


def test_two_dimensional_closed_form_and_eq3_leading_term():
    """Xi(d_min x d_max) in closed form: the rectangular part grows as log2(d_max/d_min) / (3 d_min), twice Eq. 3's
    approximation log2(d_max/d_min) / (6 d_min)."""
    for a in range(1, 8):
        for b in range(a, 12):
            dmin, dmax = 2 ** a, 2 ** b
            xi = (1 - 2 ** -a + (1 - (-4.0) ** -a) / 5 + (b - a) / (3 * dmin)
                  + (-1) ** a * (1 - (-0.5) ** (b - a)) / (9 * dmin ** 2)) / (1 - 1 / (dmin * dmax))
            assert swing_xi_closed_form((dmax, dmin)) == pytest.approx(xi, rel=1e-12)
    step = swing_xi_closed_form((2 ** 12, 16)) - swing_xi_closed_form((2 ** 11, 16))  # one more doubling of d_max
    assert step == pytest.approx(1 / (3 * 16), rel=2e-3)
    assert step == pytest.approx(2 * (eq3_xi_q((2 ** 12, 16), approximate=True)
                                      - eq3_xi_q((2 ** 11, 16), approximate=True)), rel=2e-3)


@pytest.mark.parametrize("collective", ["reduce_scatter", "allgather"])
@pytest.mark.parametrize("ports", [1, 2])
def test_closed_form_holds_for_every_collective_and_port_count(collective, ports):
    assert swing_xi((16, 4)) == pytest.approx(_measured("torus:16x4", collective, ports).congestion_deficiency)


@pytest.mark.parametrize("spec", RECTANGULAR)
def test_eq3_estimate_is_within_the_papers_approximation(spec):
    """Eq. 3 is an approximation (the worst case d_min x ... x d_max, one 1D phase): within 5.5 % here, and never
    below the square torus d_min^D nor above a 1D torus of p nodes (Sec. 4.2: 'somewhere between')."""
    shape = parse(spec).shape
    measured = _measured(spec).congestion_deficiency
    estimate = swing_xi_eq3(shape)
    assert estimate == pytest.approx(measured, rel=0.055)
    assert swing_xi((min(shape),) * len(shape)) <= measured <= swing_xi((parse(spec).num_compute,))
    assert eq3_xi_q(shape, approximate=True) == pytest.approx(eq3_xi_q(shape), rel=0.07)  # drops (-1)^(s+1)


def test_eq3_is_zero_on_square_tori_and_grows_with_the_ratio():
    assert eq3_xi_q((16, 16)) == 0 and eq3_xi_q((8, 8, 8), approximate=True) == 0
    assert eq3_xi_q((64, 16)) < eq3_xi_q((128, 8)) < eq3_xi_q((256, 4))
    assert [delta(k) for k in range(6)] == [1, 1, 3, 5, 11, 21]


def test_closed_forms_refuse_non_power_of_two_sides():
    with pytest.raises(UnsupportedShapeError, match="power-of-two"):
        swing_xi((6, 10))
    with pytest.raises(UnsupportedShapeError):
        eq3_xi_q(())


def test_eq1_time_reads_lambda_psi_xi():
    r = _measured("torus:64x16")
    n, alpha, beta = 2**20, 1e-6, 1e-10
    expected = 10 * alpha * r.latency_deficiency + n * beta * r.port_time.sum() * r.congestion_deficiency
    assert eq1_time(r, n, alpha=alpha, beta=beta) == pytest.approx(expected)
    assert eq1_time(r, 0, alpha=alpha) == pytest.approx(r.steps * alpha)  # log2(p) Lambda = steps
    # Xi >= 1 here, so Eq. 1 is never below the contention-free alpha-beta time
    assert eq1_time(r, n, alpha=alpha) >= float(r.time(n, CostParams(alpha=alpha)))


def test_cost_cli_reports_eq1_and_eq3(capsys):
    assert main(["cost", "--algorithm", "swing", "--topology", "torus:16x4", "--sizes", "1MiB", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["eq1_time_s"] > out["time_s"] > 0
    assert out["congestion_deficiency_closed_form"] == pytest.approx(out["congestion_deficiency"])
    assert out["congestion_deficiency_eq3"] == pytest.approx(swing_xi_eq3((16, 4)))
    assert main(["cost", "--algorithm", "swing", "--topology", "torus:16x4", "--sizes", "1MiB"]) == 0
    assert "Swing Eq. 1" in capsys.readouterr().out
    assert main(["cost", "--algorithm", "ring", "--topology", "torus:6x10", "--json"]) == 0
    assert "congestion_deficiency_eq3" not in capsys.readouterr().out
