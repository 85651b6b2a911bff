"""BFB's load-balancing LPs: how much of each source's shard every in-link of a node carries in a step (Zhao et al.
Sec. 6.1, LP (1); App. E.2, E.3, LP (14)), solved once per distinct content and made exact rationals.

**Aggregated LP.** Sources whose sets of feasible in-links are equal (the same *pattern*) are interchangeable:
averaging any solution over them keeps every link load, so LP (1) has an optimum where they split alike. We
therefore solve, per (u, t), the LP over patterns p with multiplicity c_p, in link loads z[p, l] (shards)::

    minimise U  subject to
        sum_{l in p} z[p, l] = c_p                                 for every pattern p
        a_l + sum_p z[p, l] * max bw / bw(l) <= U                   for every in-link l of u   (App. E.3, LP (14))
        z >= 0

Its optimum is that of LP (1) / (14). The LP depends only on the patterns, counts, bandwidths and latencies,
so identical LPs are solved once (:class:`LoadLPs` caches them by their exact content, solved one after the other:
cheaper than a process pool's start-up).

**LP (14), as we read it.** The text reads ``α_{w,u} + (M/N)/B_{w,u} Σ_v x_{v,(w,u),t} <= U_{u,t}`` for every
w in N^-(u): a link's time in a step is its latency plus its bytes over its bandwidth (Sec. 3's α-β model per
link). Time is measured in tau = (M/N) / max bw (one shard on the fastest link), a_l = α_l / tau with α_l the
link's latency (``Topology.link_latency``). A latency shared by all in-links (the simulator's α and per-hop
latency, uniform links) only shifts U, so a_l is taken relative to the smallest among the step's usable
in-links: uniform latencies give exactly LP (1) and the same schedule. Without a size (``size=None``) a_l = 0,
LP (14)'s limit for large M.

**The slow-link rule (App. E.3):** "α_{w,u} alone dominates U_{u,t} even though Σ_v x_{v,(w,u),t} = 0 ...
[remove] link (w, u) and [solve] the LP again." Exactly: after a solve, every in-link with a_l >= U (its
latency alone reaches the optimum, so it carries nothing) and above the smallest latency is removed and the LP
solved again, until none is left (removed links carried nothing, so every pattern stays feasible and U never
grows). An in-link that can carry none of step t's sources is left out of the latency rows from the start.

**Discrete chunks (App. E.2).** With ``chunks=P`` every shard is cut into P equal chunks and the loads of each
pattern are rounded to whole chunks by largest remainder
(:func:`~directcoll.schedule.chunking.largest_remainder`, row sums kept): the rounding of IP (13)'s LP
relaxation (LP (1) scaled by P). A link then carries at most one chunk more per pattern than the LP asks,
within Theorem 20's bound of one chunk per source; ``meta["t_b_m_over_b_relaxed"]`` keeps the relaxation's
T_B^LP beside the rounded schedule's ``t_b_m_over_b_lp``.

**Exact loads.** Loads are made exact rationals (:func:`~directcoll.schedule.chunking.rational_row`:
``Fraction.limit_denominator``, the largest of each pattern absorbing the rounding so rows sum to c_p exactly)
over one common denominator (:meth:`LoadLPs.denominator`); on uniform links their denominators divide small
integers (the optimum is a ratio |J| / |links feeding J|, Theorem 19), so the common denominator stays small.

Source: Zhao et al. (NSDI'25) Sec. 6.1 (LP (1)), App. E.2 (IP (13), Theorem 20), App. E.3 (LP (14)), Theorem 19.

>>> import numpy as np
>>> lps = LoadLPs(None)
>>> lps.solve(np.array([[True, True]]), np.array([1]), np.ones(2), np.zeros(2))  # one source, two equal links
0
>>> [str(f) for f in lps.solutions[0][0]], lps.denominator()
(['1/2', '1/2'], 2)
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import scipy.sparse as sp

from directcoll.errors import ScheduleError
from directcoll.lp import LinearProgram, Solver
from directcoll.schedule.chunking import common_denominator, largest_remainder, rational_row

#: Largest denominator accepted when turning an LP load into a rational.
MAX_PIECE_DENOMINATOR = 10_000
#: Largest common denominator of a whole schedule (numerators are int64 and the verifier cuts segments).
MAX_SCHEDULE_DENOMINATOR = 10**6
#: With ``chunks``: an LP load this close below a whole number of chunks counts as it.
WHOLE_CHUNK_TOLERANCE = 1e-9


class LoadLPs:
    """The aggregated LPs of all (u, t), solved once per distinct content; loads kept as exact Fractions.

    Args:
        chunks: None for exact rational loads; P to round every pattern's loads to whole 1/P chunks (App. E.2).
        options: HiGHS options for the one :class:`~directcoll.lp.Solver` every LP shares.
        drop_slow_links: apply App. E.3's slow-link rule (module docstring).

    Attributes (one entry per distinct LP, in the order first solved):
        solutions: (P, K) object arrays of Fractions, shards of pattern p's sources on in-link k.
        times: the most loaded link's time, shards / relative bandwidth.
        full_times: LP (14)'s U in tau (latency + data over the links that carry data).
        relaxed: the data time of the LP's own, unrounded loads (with ``chunks``: T_B^LP of App. E.2).
        dropped: in-links removed by the slow-link rule.

    Raises:
        Nothing on construction; :meth:`solve` raises what the solver does.

    Source: Zhao et al. (NSDI'25) Sec. 6.1, LP (1); App. E.2, E.3 (LP (14)); this module's docstring.
    """

    def __init__(self, chunks: int | None, options: dict | None = None, drop_slow_links: bool = True) -> None:
        self._solver: Solver | None = None  # one HiGHS instance for all LPs, made at the first real LP
        self._options, self.chunks, self.drop_slow_links = options, chunks, drop_slow_links
        self.solutions: list[np.ndarray] = []  # per LP: (P, K) object array of Fractions
        self.times: list[float] = []  # per LP: most loaded link's time, shards / relative bandwidth
        self.full_times: list[float] = []  # per LP: LP (14)'s U, max over used links of latency + data, in tau
        self.relaxed: list[float] = []  # per LP: the data time of the LP's own (unrounded) loads
        self.dropped: list[int] = []  # per LP: in-links removed by the slow-link rule (App. E.3)
        self._index: dict[tuple, int] = {}

    def solve(self, patterns: np.ndarray, counts: np.ndarray, rel_bw: np.ndarray, rel_lat: np.ndarray) -> int:
        """The id of the LP over ``patterns`` (solved now unless an identical one was).

        Args:
            patterns: bool (P, K), the in-links each pattern's sources can arrive through.
            counts: int (P,), sources per pattern.
            rel_bw, rel_lat: float (K,), the in-links' bandwidths relative to the fastest link and latencies in tau.

        Returns:
            An int, the index of the LP's loads in :attr:`solutions` (and its times).

        Raises:
            SolverError: HiGHS fails on the LP.
            ScheduleError: rounding the LP solution to exact loads or whole chunks fails.

        Source: Zhao et al. (NSDI'25) Sec. 6.1, LP (1); App. E.3, LP (14) and the slow-link rule.
        """
        key = (patterns.tobytes(), patterns.shape, counts.tobytes(), rel_bw.tobytes(), rel_lat.tobytes())
        found = self._index.get(key)
        if found is None:
            found = self._index[key] = len(self.solutions)
            loads, relaxed, dropped = self._solve(patterns, counts, rel_bw, rel_lat)
            self.solutions.append(loads)
            data = loads.sum(axis=0).astype(float) / rel_bw
            self.times.append(float(data.max()))
            self.full_times.append(float((rel_lat + data)[data > 0].max()))
            self.relaxed.append(relaxed)
            self.dropped.append(dropped)
        return found

    def _solve(self, patterns, counts, rel_bw, rel_lat) -> tuple[np.ndarray, float, int]:
        """LP (14) over the patterns with the slow-link rule: (loads (P, K) Fractions, the unrounded loads'
        data time, links dropped)."""
        usable = patterns.any(axis=0)
        # App. E.3: only latency differences matter (U - min alpha is the same LP); uniform latencies give LP (1)
        alpha = np.where(usable, rel_lat - rel_lat[usable].min(), 0.0)
        active = usable.copy()
        while True:
            pi, li = np.nonzero(patterns & active)
            x = self._lp(pi, li, patterns.shape, counts, rel_bw, np.where(active, alpha, 0.0))  # removed: no row
            link_load = np.bincount(li, weights=x, minlength=patterns.shape[1])
            u = float((alpha + link_load / rel_bw)[active].max())
            # the rule: a link whose latency alone reaches U (so it carries nothing) is removed, the LP solved again
            slow = active & (alpha > 0) & (alpha >= u - 1e-9 * max(1.0, u))
            if not self.drop_slow_links or not slow.any():
                break
            active &= ~slow
        loads = np.zeros(patterns.shape, dtype=object)
        loads[:] = Fraction(0)
        for p in range(len(counts)):
            sel = np.flatnonzero(pi == p)
            if self.chunks is None:
                row = rational_row(x[sel], int(counts[p]), MAX_PIECE_DENOMINATOR)
            else:  # App. E.2: whole chunks, largest remainder, row sum c_p * P kept
                whole = largest_remainder(x[sel] * self.chunks, [int(counts[p]) * self.chunks],
                                          tolerance=WHOLE_CHUNK_TOLERANCE)
                row = [Fraction(int(w), self.chunks) for w in whole]
            if min(row) < 0:
                raise ScheduleError("bfb: rounding an LP solution to exact loads failed")
            loads[p, li[sel]] = row
        return loads, float((link_load / rel_bw).max()), int((usable & ~active).sum())

    def _lp(self, pi, li, shape, counts, rel_bw, alpha) -> np.ndarray:
        """x (nx,): the loads of entries (pi, li) minimising U subject to LP (14)'s rows (module docstring)."""
        nx, npat, nl = len(pi), len(counts), shape[1]
        if np.all(np.bincount(pi, minlength=npat) == 1):  # every pattern has a single feeding link: nothing to choose
            return counts[pi].astype(float)
        # column j < nx: pattern row pi[j] and link row npat + li[j]; column nx (U): -rel_bw on link rows
        start = np.r_[np.arange(0, 2 * nx + 1, 2), 2 * nx + nl]
        index = np.r_[np.c_[pi, npat + li].ravel(), npat + np.arange(nl)]
        a = sp.csc_matrix((np.r_[np.ones(2 * nx), -rel_bw], index, start), shape=(npat + nl, nx + 1))
        link_upper = np.zeros(nl) if not alpha.any() else -alpha * rel_bw
        lp = LinearProgram(a, np.r_[np.zeros(nx), 1.0], np.zeros(nx + 1), np.full(nx + 1, np.inf),
                           np.r_[counts.astype(float), np.full(nl, -np.inf)],
                           np.r_[counts.astype(float), link_upper],
                           name=f"BFB load-balancing LP ({npat} source groups, {nl} in-links)")
        if self._solver is None:
            self._solver = Solver(self._options)
        return np.maximum(self._solver.solve(lp).x[:nx], 0.0)

    def denominator(self) -> int:
        """The common denominator of every load solved so far (``chunks`` when the loads are whole chunks).

        Returns:
            An int >= 1: every load times it is an integer.

        Raises:
            ScheduleError: the loads need a denominator above :data:`MAX_SCHEDULE_DENOMINATOR` (the message says to
                pass ``chunks``).

        Source: Zhao et al. (NSDI'25) App. E.2 (chunks), Theorem 19 (small denominators on uniform links).
        """
        if self.chunks is not None:
            return self.chunks
        return common_denominator((f for sol in self.solutions for f in sol.ravel()), MAX_SCHEDULE_DENOMINATOR,
                                  what="bfb: the exact LP loads",
                                  hint="pass chunks=P to round them to P chunks per shard (Zhao et al. App. E.2)")
