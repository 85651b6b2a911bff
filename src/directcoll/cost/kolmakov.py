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
    """Eq. 25 (r = 0), 36 (0 < r < L) or 44 (r = L), seconds; m may be an array of sizes in bytes."""
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
    """Eq. 37 rounded to an integer in [0, L]; P <= 2 (log2 P - 1 <= 0) takes the latency-optimal version."""
    lg = _l(p)
    if p <= 2 or m <= 0:
        return lg
    r = math.log2(alpha / (m * (beta + 2 * gamma))) + math.log2(p / ((math.log2(p) - 1) * math.log(2)))
    return int(min(lg, max(0, round(r))))


def best_r_exact(p: int, m: float, alpha: float, beta: float, gamma: float) -> int:
    """The r in [0, L] with the least eq. 36 / 44 time (the exact minimisation eq. 37 approximates)."""
    times = [float(tau_generalized(p, m, r, alpha, beta, gamma)) for r in range(_l(p) + 1)]
    return int(np.argmin(times))


def tau_ring(p: int, m, alpha: float, beta: float, gamma: float):
    m = np.asarray(m, dtype=float)
    return 2 * (p - 1) * alpha + 2 * (p - 1) * m / p * beta + (p - 1) * m / p * gamma


def _fold_cost(p: int, m, alpha, beta, gamma):
    pp = 1 << int(math.floor(math.log2(p)))
    extra = 0.0 if pp == p else 2 * alpha + 2 * m * beta + m * gamma
    return pp, extra


def tau_recursive_halving(p: int, m, alpha: float, beta: float, gamma: float):
    m = np.asarray(m, dtype=float)
    pp, extra = _fold_cost(p, m, alpha, beta, gamma)
    lg = math.log2(pp)
    return 2 * lg * alpha + 2 * (pp - 1) / pp * m * beta + (pp - 1) / pp * m * gamma + extra


def tau_recursive_doubling(p: int, m, alpha: float, beta: float, gamma: float):
    m = np.asarray(m, dtype=float)
    pp, extra = _fold_cost(p, m, alpha, beta, gamma)
    return math.log2(pp) * (alpha + m * beta + m * gamma) + extra


def fig1_ratio(p: int, sizes, alpha: float, beta: float, gamma: float, choose: str = "exact"):
    """Kolmakov & Zhang Fig. 1: tau(chosen version) / min(tau_RD, tau_RH, tau_ring) for every size.

    Args:
        choose: "exact" (minimise over r) or "eq37" (the paper's closed form).

    Returns:
        (ratio, chosen r) arrays over sizes.
    """
    sizes = np.asarray(sizes, dtype=float)
    pick = best_r_exact if choose == "exact" else best_r_eq37
    rs = np.array([pick(p, m, alpha, beta, gamma) for m in sizes])
    ours = np.array([float(tau_generalized(p, m, r, alpha, beta, gamma)) for m, r in zip(sizes, rs, strict=True)])
    best = np.minimum.reduce([tau_ring(p, sizes, alpha, beta, gamma),
                              tau_recursive_halving(p, sizes, alpha, beta, gamma),
                              tau_recursive_doubling(p, sizes, alpha, beta, gamma)])
    return ours / best, rs
