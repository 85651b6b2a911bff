"""The Swing paper's time model (Eq. 1) and its congestion deficiency on rectangular tori (Sec. 4.1-4.2, Eq. 3).

**Eq. 1**, as read from the paper's text (Sec. 2.2): T(n) = log2(p) alpha Lambda + (n/D) beta Psi Xi, where
alpha log2 p + beta n/D is the optimal allreduce on a D-dimensional torus with 2D ports (2n bytes over 2D ports).
Here Lambda = steps / log2 p, so the first term is steps x alpha; and the paper's optimal bandwidth term n/D is
the lower bound that :mod:`directcoll.cost.analytic` divides Psi by (2 (p-1)/p n / ports for allreduce, (p-1)/p
n / ports for reduce-scatter and allgather; ports = 2D on a torus, and the paper drops (p-1)/p), so the second term
is n beta x (that bound) x Psi x Xi = n beta sum(port time) x Xi: the contention-free time stretched by the
congestion deficiency. The reduction term gamma is not part of Eq. 1 and is left out.

**Xi of Swing on a torus of power-of-two sides d_1..d_D** (Sec. 4.1's bandwidth term
n/(2D) beta sum_s delta(sigma(s)) / 2^(s+1), normalised by the same sum with every distance 1, which is the
congestion deficiency :func:`directcoll.cost.analytic.analyze` measures): in round k = 0, 1, ... every dimension
with log2 d_i > k takes one step at distance delta(k) = (2^(k+1) - (-1)^(k+1)) / 3 (Sec. 3.1); steps halve the
data. :func:`swing_xi` evaluates this exactly, for square and rectangular tori (Sec. 4.2: a dimension that has run
out of steps drops out); :func:`swing_xi_closed_form` gives the same value in closed form (geometric series per
phase of equal side lengths), which for 2D shows the rectangular part growing as log2(d_max / d_min) / (3 d_min).

**Eq. 3** (Sec. 4.2): the paper's estimate for a rectangular torus is the square torus d_min^D's Xi plus
Xi_Q = 1 / (2 d_min^D) sum_{s = log2 d_min}^{log2 d_max - 1} (2^(s+1) - (-1)^(s+1)) / (3 x 2^(s+1 - log2 d_min))
~ log2(d_max / d_min) / (6 d_min^(D-1)), taking d_min x ... x d_min x d_max as the worst case. We read the
garbled sum as printed (a 1D phase starting at step log2 d_min on data n / (2 d_min^D)); it is an approximation
(it ignores that the data keeps halving over the steps the smaller dimensions still run, and counts the rest as
one dimension): it is within 5.5 % of the exact value on 64x16, 128x8, 32x8, 16x4 and 8x4x2 (1.5 %, 5.4 %, 2.4 %,
3.6 % below, 4.5 % above) and drifts further as d_max / d_min grows (13 % below on 256x4; tests/test_swing_model.py).

Source: Swing (De Sensi et al., NSDI'24) Sec. 2.2 Eq. (1), Sec. 3.1 (delta), Sec. 4.1 (the bandwidth term),
Sec. 4.2 Eq. (3).

>>> round(swing_xi((16, 16)), 4), round(swing_xi_eq3((64, 16)), 4), round(swing_xi((64, 16)), 4)
(1.1412, 1.1622, 1.1799)
"""

from __future__ import annotations

import math

from directcoll.errors import UnsupportedShapeError


def delta(k: int) -> int:
    """Distance of Swing's peer at per-dimension step k: |sum_{i<=k} (-2)^i| = (2^(k+1) - (-1)^(k+1)) / 3.

    Raises:
        UnsupportedShapeError: k < 0.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1 (delta(s), Eq. after Eq. 2).

    >>> [delta(k) for k in range(5)]
    [1, 1, 3, 5, 11]
    """
    if k < 0:
        raise UnsupportedShapeError(f"delta: step {k} < 0")
    return (2 ** (k + 1) - (-1) ** (k + 1)) // 3


def _log2_sides(shape) -> list[int]:
    sides = [int(d) for d in shape]
    if not sides or any(d < 2 or d & (d - 1) for d in sides):
        raise UnsupportedShapeError(f"the Swing paper's closed forms need power-of-two torus sides >= 2, got "
                                    f"{'x'.join(map(str, sides)) or 'none'}")
    return [d.bit_length() - 1 for d in sides]


def swing_xi(shape) -> float:
    """Xi of the bandwidth-optimal Swing allreduce on a torus of power-of-two sides ``shape`` (square or not),
    exactly: sum_s delta(k_s) / 2^(s+1) over sum_s 1 / 2^(s+1), round k running one step per dimension that has
    more than k steps.

    Raises:
        UnsupportedShapeError: a side that is not a power of two >= 2.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 4.1 (bandwidth term) and Sec. 4.2 (dimensions drop out).

    >>> swing_xi((4, 4)), round(swing_xi((8, 8)), 4)
    (1.0, 1.0952)
    """
    logs = _log2_sides(shape)
    num = den = 0.0
    s = 0
    for k in range(max(logs)):
        for _ in range(sum(1 for e in logs if e > k)):
            num += delta(k) / 2 ** (s + 1)
            den += 1 / 2 ** (s + 1)
            s += 1
    return num / den


def swing_xi_closed_form(shape) -> float:
    """:func:`swing_xi` in closed form: a sum over the at most D phases of distinct side lengths, each a pair of
    geometric series, instead of a sum over the log2 p steps.

    With e_1..e_D the log2 of the sides and n = sum e_i, round k runs c_k = #{i: e_i > k} steps; c is constant on
    each phase [a, b) between consecutive distinct e's, which starts after S_a = sum_i min(e_i, a) steps. A phase
    contributes (1 - x) 2^(-S_a) sum_(j<b-a) delta(a + j) x^j with x = 2^(-c), and with delta(k) =
    (2^(k+1) - (-1)^(k+1)) / 3 that is (1 - x) 2^(-S_a) / 3 (2^(a+1) G(2x) + (-1)^a G(-x)), G(y) = (1 - y^(b-a)) /
    (1 - y) (b - a for y = 1). Xi is the sum over phases divided by 1 - 2^(-n). For a 2D torus d_min x d_max,
    a = log2 d_min, b = log2 d_max, this is

        Xi = [1 - 2^-a + (1 - (-4)^-a) / 5 + (b - a) / (3 d_min) + (-1)^a (1 - (-1/2)^(b-a)) / (9 d_min^2)]
             / (1 - 1 / (d_min d_max)),

    which tends to 1.2 on large square tori (b = a) and grows by (b - a) / (3 d_min) on rectangular ones: twice
    Eq. 3's approximation log2(d_max / d_min) / (6 d_min^(D-1)), whose sum divides delta(s) by 3 2^(s+1-log2 d_min),
    one halving more than the data n / (2 d_min^D) it starts the phase with.

    Returns:
        Xi, a float (exact up to rounding; tests compare it with :func:`swing_xi` and the measured Xi).

    Raises:
        UnsupportedShapeError: a side that is not a power of two >= 2.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 3.1 (delta), Sec. 4.1 (bandwidth term), Sec. 4.2 (dimensions
    drop out; Eq. (3) for comparison).

    >>> round(swing_xi_closed_form((64, 16)), 4), round(swing_xi_closed_form((8, 4, 2)), 4)
    (1.1799, 1.0317)
    """
    logs = sorted(_log2_sides(shape))
    total, start = 0.0, 0
    for a, b in zip([0, *logs], logs, strict=False):
        if b == a:
            continue
        c = sum(1 for e in logs if e > a)
        x = 2.0 ** -c
        m = b - a

        def geometric(y: float, m: int = m) -> float:
            return float(m) if y == 1 else (1 - y ** m) / (1 - y)

        total += (1 - x) * 2.0 ** -start / 3 * (2 ** (a + 1) * geometric(2 * x) + (-1) ** a * geometric(-x))
        start += c * m
    return total / (1 - 2.0 ** -sum(logs))


def eq3_xi_q(shape, *, approximate: bool = False) -> float:
    """Eq. 3's extra congestion deficiency Xi_Q of a rectangular torus (0 on a square one): the printed sum, or
    with ``approximate`` its last line log2(d_max / d_min) / (6 d_min^(D-1)).

    Raises:
        UnsupportedShapeError: a side that is not a power of two >= 2.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 4.2, Eq. (3).

    >>> round(eq3_xi_q((64, 16)), 5), round(eq3_xi_q((64, 16), approximate=True), 5), eq3_xi_q((8, 8))
    (0.021, 0.02083, 0.0)
    """
    logs = _log2_sides(shape)
    lo, hi, dims = min(logs), max(logs), len(logs)
    dmin = 2 ** lo
    if approximate:
        return (hi - lo) / (6 * dmin ** (dims - 1))
    total = sum((2 ** (s + 1) - (-1) ** (s + 1)) / (3 * 2 ** (s + 1 - lo)) for s in range(lo, hi))
    return total / (2 * dmin ** dims)


def swing_xi_eq3(shape, *, approximate: bool = False) -> float:
    """The paper's estimate of Xi on a rectangular torus: :func:`swing_xi` of the square torus d_min^D plus
    :func:`eq3_xi_q`.

    Raises:
        UnsupportedShapeError: a side that is not a power of two >= 2.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 4.2 ("summing the one for square tori to the one in Eq. 3").

    >>> round(swing_xi_eq3((128, 8)), 4)
    1.1778
    """
    logs = _log2_sides(shape)
    square = (2 ** min(logs),) * len(logs)
    return swing_xi(square) + eq3_xi_q(shape, approximate=approximate)


def eq1_time(report, size_bytes: float, *, alpha: float, beta: float | None = None) -> float:
    """Eq. 1's time of the schedule ``report`` describes (a :class:`~directcoll.cost.analytic.CostReport`) for
    a ``size_bytes`` vector: steps x alpha + n beta sum(port time) x Xi (the module docstring's reading).

    Args:
        report: the schedule's metrics; size_bytes: n; alpha: s per step; beta: s per byte (default 1 / the
            report's median link bandwidth).

    Returns:
        Seconds.

    Raises:
        UnsupportedShapeError: a negative size.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.2, Eq. (1).

    >>> from directcoll.cost.analytic import analyze
    >>> from directcoll.registry import build
    >>> from directcoll.topology import parse
    >>> r = analyze(build("swing", "torus:8x8", variant="bandwidth"), parse("torus:8x8"), link_loads_too=False)
    >>> round(eq1_time(r, 2**20, alpha=0.0, beta=1.0) / 2**20, 4)  # 2 (63/64) / 4 ports x Xi 1.0952
    0.5391
    """
    if size_bytes < 0:
        raise UnsupportedShapeError(f"eq1_time: size {size_bytes} < 0")
    b = beta if beta is not None else 1.0 / report.link_bandwidth
    latency = math.log2(report.ranks) * alpha * report.latency_deficiency if report.ranks > 1 else 0.0
    return float(latency + size_bytes * b * float(report.port_time.sum()) * report.congestion_deficiency)
