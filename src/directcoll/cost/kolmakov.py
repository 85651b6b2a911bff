"""alpha-beta-gamma estimates of Kolmakov & Zhang (Sec. 2, 6-9) and of the algorithms they compare against.

All times in seconds for a vector of m bytes on P processes, u = m / P, L = ceil(log2 P), on the paper's
peer-to-peer full-duplex network (one message out and one in per process per step, no conflicts):

- eq. 25, bandwidth-optimal:  2L alpha + 2(P-1) u beta + (P-1) u gamma
- eq. 36, intermediate r:     (2L - r) alpha + (2(P-1) + (2^r - 1)(L - 1)) u beta
                              + ((P-1) + (2^r - 1)(2L - 2)) u gamma,            0 <= r < L
- eq. 44, latency-optimal:    L alpha + P L u beta + P (2L - 2) u gamma
- eq. 37, the r minimising eq. 36: r = log2(alpha / (m (beta + 2 gamma))) + log2(P / ((log2 P - 1) ln 2)),
  read with the paper's log = log2; we round it to the nearest integer in [0, L] (L meaning eq. 44).
- ring (eq. 15): 2(P-1) alpha + 2(P-1) u beta + (P-1) u gamma.
- recursive halving (Rabenseifner) and recursive doubling with the standard non-power-of-two handling
  (Thakur et al.; Swing Sec. 2.3.2): the P - P' ranks above P' = 2^floor(log2 P) send their vector to a
  partner first (alpha + m beta + m gamma) and get the result back last (alpha + m beta);
  RH on P': 2 log2 P' alpha + 2 (P'-1)/P' m beta + (P'-1)/P' m gamma; RD on P': log2 P' (alpha + m beta + m gamma).

Eq. 36 and 44 are the paper's worst-case counts; our schedules (cyclic group) send exactly eq. 25, eq. 36 for
r = 1 and eq. 44, and at most eq. 36 for 2 <= r < L (they finish the reduction with the ceil(P / 2^(L-r)) sums
the shortened distribution needs where the paper computes 2^r; equal when those agree, e.g. P a power of two).
"""

from __future__ import annotations

import math

import numpy as np


def _l(p: int) -> int:
    return max(1, math.ceil(math.log2(p)))


def tau_generalized(p: int, m, r: int, alpha: float, beta: float, gamma: float):
    """Time of Kolmakov & Zhang's generalized allreduce: eq. 25 (r = 0), eq. 36 (0 < r < L) or eq. 44 (r = L).

    With u = m / P and L = ceil(log2 P) (the paper writes ``log`` for log2):
    eq. 25 = 2L alpha + 2(P-1) u beta + (P-1) u gamma;
    eq. 36 = (2L - r) alpha + (2(P-1) + (2^r - 1)(L - 1)) u beta + ((P-1) + (2^r - 1)(2L - 2)) u gamma;
    eq. 44 = L alpha + P L u beta + P (2L - 2) u gamma. Eq. 36 is taken as printed: the sentence before it says
    ``(2^r - 1) ceil(log P) u beta`` extra data, the equation ``(2^r - 1)(ceil(log P) - 1)``; we follow the equation.

    Args:
        p: number of processes P >= 2.
        m: vector size in bytes, a number or an array of any shape.
        r: distribution steps removed, 0 <= r <= L.
        alpha: s per message; beta: s per byte sent; gamma: s per byte reduced.

    Returns:
        Seconds, a numpy float64 array of ``m``'s shape (0-d for a scalar ``m``).

    Raises:
        ValueError: ``r`` outside [0, L] (a built-in error: this module is pure arithmetic).

    Source: Kolmakov & Zhang, Sec. 7 eq. (25), Sec. 8 eq. (36), Sec. 9 eq. (44).

    >>> float(tau_generalized(7, 7e6, 0, 1e-6, 1e-9, 0.0))  # 2*3 alpha + 2*6*1e6 beta
    0.012006000000000001
    >>> float(tau_generalized(8, 8e3, 3, 1e-6, 1e-9, 0.0))  # eq. 44: 3 alpha + 8*3*1e3 beta
    2.7e-05
    """
    m = np.asarray(m, dtype=float)
    u, lg = m / p, _l(p)
    if not 0 <= r <= lg:
        raise ValueError(f"r must be between 0 and ceil(log2 P) = {lg} for P = {p}, got {r}")
    if r == lg:
        return lg * alpha + p * lg * u * beta + p * (2 * lg - 2) * u * gamma
    extra = 2 ** r - 1
    return ((2 * lg - r) * alpha + (2 * (p - 1) + extra * (lg - 1)) * u * beta
            + ((p - 1) + extra * (2 * lg - 2)) * u * gamma)


def best_r_eq37(p: int, m: float, alpha: float, beta: float, gamma: float) -> int:
    """Eq. 37 rounded to an integer in [0, L]; P <= 2 (log2 P - 1 <= 0) takes the latency-optimal version.

    Eq. 37 is read as r = log2(alpha / (m (beta + 2 gamma))) + log2(P / ((log2 P - 1) ln 2)) (the paper's ``log``
    is log2, ``ln`` the natural log); a non-positive ``m`` also takes r = L.

    Args:
        p: number of processes P; m: vector size in bytes (a scalar);
        alpha: s per message; beta: s per byte sent; gamma: s per byte reduced.

    Returns:
        r, an int in [0, L], L = ceil(log2 P) (L meaning the latency-optimal eq. 44).

    Raises:
        Nothing: closed form, clipped to the valid range.

    Source: Kolmakov & Zhang, Sec. 8, eq. (37).

    >>> best_r_eq37(64, 1024, 1e-5, 1e-10, 1e-11)
    6
    """
    lg = _l(p)
    if p <= 2 or m <= 0:
        return lg
    r = math.log2(alpha / (m * (beta + 2 * gamma))) + math.log2(p / ((math.log2(p) - 1) * math.log(2)))
    return int(min(lg, max(0, round(r))))


def best_r_exact(p: int, m: float, alpha: float, beta: float, gamma: float) -> int:
    """The r in [0, L] with the least eq. 36 / 44 time (the exact minimisation eq. 37 approximates).

    Args:
        p: number of processes P; m: vector size in bytes (a scalar);
        alpha: s per message; beta: s per byte sent; gamma: s per byte reduced.

    Returns:
        r, an int in [0, L], L = ceil(log2 P); the smallest r on ties.

    Raises:
        Nothing: every r tried is in range.

    Source: Kolmakov & Zhang, Sec. 8, eq. (36) minimised over r (eq. (37) is its continuous approximation).

    >>> best_r_exact(64, 1024, 1e-5, 1e-10, 1e-11), best_r_exact(64, 1e9, 1e-5, 1e-10, 1e-11)
    (6, 0)
    """
    times = [float(tau_generalized(p, m, r, alpha, beta, gamma)) for r in range(_l(p) + 1)]
    return int(np.argmin(times))


def tau_ring(p: int, m, alpha: float, beta: float, gamma: float):
    """Ring allreduce time, eq. 15: 2(P-1) alpha + 2(P-1) u beta + (P-1) u gamma with u = m / P.

    Args:
        p: number of processes P; m: vector size in bytes (a number or an array);
        alpha: s per message; beta: s per byte sent; gamma: s per byte reduced.

    Returns:
        Seconds, a numpy float64 array of ``m``'s shape.

    Raises:
        Nothing: closed form.

    Source: Kolmakov & Zhang, Sec. 6, eq. (15) (the cyclic-group ring, Fig. 4).

    >>> float(tau_ring(4, 4e6, 1e-6, 1e-9, 0.0))
    0.006006
    """
    m = np.asarray(m, dtype=float)
    return 2 * (p - 1) * alpha + 2 * (p - 1) * m / p * beta + (p - 1) * m / p * gamma


def _fold_cost(p: int, m, alpha, beta, gamma):
    pp = 1 << int(math.floor(math.log2(p)))
    extra = 0.0 if pp == p else 2 * alpha + 2 * m * beta + m * gamma
    return pp, extra


def tau_recursive_halving(p: int, m, alpha: float, beta: float, gamma: float):
    """Recursive halving (Rabenseifner) allreduce time, with the standard non-power-of-two fold.

    On P' = 2^floor(log2 P): 2 log2 P' alpha + 2 (P'-1)/P' m beta + (P'-1)/P' m gamma; when P' < P the extra ranks
    first send their vector to a partner (alpha + m beta + m gamma) and get the result back last (alpha + m beta).

    Args:
        p: number of processes P; m: vector size in bytes (a number or an array);
        alpha: s per message; beta: s per byte sent; gamma: s per byte reduced.

    Returns:
        Seconds, a numpy float64 array of ``m``'s shape.

    Raises:
        Nothing: closed form.

    Source: Kolmakov & Zhang Sec. 3 and Fig. 1 (the baseline); the fold as in Swing (NSDI'24) Sec. 2.3.2-2.3.3
    (Thakur et al.).

    >>> float(tau_recursive_halving(4, 4e6, 1e-6, 1e-9, 0.0))
    0.006004
    """
    m = np.asarray(m, dtype=float)
    pp, extra = _fold_cost(p, m, alpha, beta, gamma)
    lg = math.log2(pp)
    return 2 * lg * alpha + 2 * (pp - 1) / pp * m * beta + (pp - 1) / pp * m * gamma + extra


def tau_recursive_doubling(p: int, m, alpha: float, beta: float, gamma: float):
    """Recursive doubling allreduce time, with the standard non-power-of-two fold.

    On P' = 2^floor(log2 P): log2 P' (alpha + m beta + m gamma); when P' < P add 2 alpha + 2 m beta + m gamma for
    the fold in and out (see :func:`tau_recursive_halving`).

    Args:
        p: number of processes P; m: vector size in bytes (a number or an array);
        alpha: s per message; beta: s per byte sent; gamma: s per byte reduced.

    Returns:
        Seconds, a numpy float64 array of ``m``'s shape.

    Raises:
        Nothing: closed form.

    Source: Kolmakov & Zhang Sec. 3 and Fig. 1 (the baseline); Swing (NSDI'24) Sec. 2.3.2 (latency-optimal
    recursive doubling and its non-power-of-two handling).

    >>> float(tau_recursive_doubling(4, 4e6, 1e-6, 1e-9, 0.0))
    0.008002
    """
    m = np.asarray(m, dtype=float)
    pp, extra = _fold_cost(p, m, alpha, beta, gamma)
    return math.log2(pp) * (alpha + m * beta + m * gamma) + extra


def fig1_ratio(p: int, sizes, alpha: float, beta: float, gamma: float, choose: str = "exact"):
    """Kolmakov & Zhang Fig. 1: tau(chosen version) / min(tau_RD, tau_RH, tau_ring) for every size.

    Args:
        p: number of processes P.
        sizes: vector sizes in bytes, shape (S,).
        alpha: s per message; beta: s per byte sent; gamma: s per byte reduced.
        choose: "exact" (minimise over r, :func:`best_r_exact`); anything else uses the paper's closed form
            (:func:`best_r_eq37`).

    Returns:
        (ratio, chosen r): float64 (S,) (dimensionless, <= 1 where the generalized algorithm wins) and int (S,).

    Raises:
        Nothing: closed forms over valid r.

    Source: Kolmakov & Zhang, Sec. 10, Fig. 1 (eq. (25), (36), (37), (44) against the baselines).

    >>> ratio, rs = fig1_ratio(64, [1e3, 1e8], 1e-5, 1e-10, 1e-11)
    >>> ratio.shape, rs.tolist()
    ((2,), [6, 0])
    """
    sizes = np.asarray(sizes, dtype=float)
    pick = best_r_exact if choose == "exact" else best_r_eq37
    rs = np.array([pick(p, m, alpha, beta, gamma) for m in sizes])
    ours = np.array([float(tau_generalized(p, m, r, alpha, beta, gamma)) for m, r in zip(sizes, rs, strict=True)])
    best = np.minimum.reduce([tau_ring(p, sizes, alpha, beta, gamma),
                              tau_recursive_halving(p, sizes, alpha, beta, gamma),
                              tau_recursive_doubling(p, sizes, alpha, beta, gamma)])
    return ours / best, rs


def baseline_switches(p: int, alpha: float, beta: float, gamma: float) -> list[tuple[float, str, str]]:
    """Where the best of recursive doubling, recursive halving and ring changes with the vector size: the
    discontinuities of Fig. 1 (its caption: "RD to RH, then RH to ring").

    Every baseline time is a line in m (:func:`tau_recursive_doubling`, :func:`tau_recursive_halving`,
    :func:`tau_ring`), so the best one is their lower envelope and its breakpoints are exact intersections.

    Args:
        p: number of processes P >= 2; alpha: s per message; beta: s per byte sent; gamma: s per byte reduced.

    Returns:
        [(size in bytes, best below, best above)] in increasing size; e.g. two entries (RD -> RH -> ring) for
        P = 127, one (RD -> ring) for P = 5, where recursive halving is never the fastest.

    Raises:
        Nothing: closed forms.

    Source: Kolmakov & Zhang, Sec. 1, Fig. 1 (caption) with eq. (15) and the baselines of Sec. 3.

    >>> [(round(m), a, b) for m, a, b in baseline_switches(5, 3e-5, 1e-8, 2e-10)]
    [(4910, 'RD', 'ring')]
    """
    lines = {}
    for name, tau in (("RD", tau_recursive_doubling), ("RH", tau_recursive_halving), ("ring", tau_ring)):
        a0 = float(tau(p, 0.0, alpha, beta, gamma))
        lines[name] = (a0, float(tau(p, 1.0, alpha, beta, gamma)) - a0)
    best = min(lines, key=lambda k: (lines[k][0], lines[k][1]))
    out, at = [], 0.0
    while True:
        a, b = lines[best]
        cross = [((a - a2) / (b2 - b), k) for k, (a2, b2) in lines.items() if b2 < b]
        cross = [(m, k) for m, k in cross if m > at]
        if not cross:
            return out
        m, k = min(cross)
        out.append((m, best, k))
        best, at = k, m
