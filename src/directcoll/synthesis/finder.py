"""Topology finder (Zhao et al. Sec. 5.4, App. A.3): the Pareto frontier of (T_L, T_B) over direct-connect
topologies with N nodes and degree d, built bottom-up from base topologies and expansions.

1. **Bases** (the paper's Table 9, as far as this project generates them exactly): complete graphs, complete
   bipartite graphs, Hamming graphs, bi- and unidirectional rings, Theorem 22's minimum-diameter degree-4
   circulants, the minimum-diameter unidirectional 2-offset circulants (exhaustive search, at most
   :data:`MAX_UNI_CIRCULANT` nodes), generalized Kautz (App. F.2, Def. 16) and Kautz digraphs, and the
   distance-regular graphs of :mod:`directcoll.topology.families` (App. F.3). Every base whose size divides N
   and whose degree is at most d is costed exactly: T_L = its diameter, T_B its BFB LP value (eq. (2),
   :func:`directcoll.synthesis.bfb.bfb_cost`); rings and Theorem 22 circulants over :data:`EAGER_BASE_NODES`
   nodes in closed form (BW-optimal, App. F.1, F.4). **Bounds first:** a non-Cayley base over
   :data:`EAGER_BASE_NODES` nodes (generalized Kautz, Kautz, ...) gets its LPs solved only if a lower bound
   (the Moore-bound diameter, then :func:`directcoll.synthesis.finder_bounds.bfb_cost_bound`) of it or of its
   expansions is not strictly dominated at (N, d) by a candidate already found; over :data:`MAX_BASE_NODES` it
   is skipped and listed in :attr:`FinderResult.skipped`.
2. **Expansions**, predicted by the theorems without building anything (:mod:`directcoll.cost.expansions`, the
   formulas behind :func:`directcoll.synthesis.expansion_predictions.predict`):
   line graph L (Theorem 10: T_L + 1, T_B + 1/N, exact for BFB bases with out-degree > 1), degree expansion
   G*n (Theorem 11), Cartesian power G^n (Theorem 12), Cartesian product of BW-optimal BFB components
   (Theorem 13: BW-optimal, T_L = sum of diameters) and the unidirectional -> bidirectional conversion of a
   reverse-symmetric topology (App. A.6: same T_L and T_B, twice the degree).
3. **Search.** Sizes are processed in increasing order; every expansion that keeps the size a divisor of N
   and the degree at most d is applied; at every (size, degree) only Pareto-efficient candidates are kept
   (a candidate is dropped only when another is at least as good in both T_L and T_B and can be expanded in
   the same ways). At (N, d) the frontier is returned, with the best topology for a workload of sizes:
   allreduce time 2 (α T_L + T_B M / B) summed over the sizes (Table 4's 2(T_L + T_B) column). Of frontier
   candidates with equal (T_L, T_B) the best in all-to-all is kept
   (:func:`directcoll.synthesis.finder_bounds.alltoall_key`: capacity bound, then LP (3) up to
   :data:`directcoll.synthesis.finder_bounds.MAX_TIE_LP_NODES` nodes, then the shortest spec).

T_B is in units of M/B with B = d x link bandwidth, as everywhere in this project (Sec. 3.2).

Source: Zhao et al. (NSDI'25) Sec. 5.4, App. A.3, Tables 4 and 7; docs/finder.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from math import gcd, isqrt

import numpy as np

from directcoll.cost import expansions as ex
from directcoll.cost.bounds import moore_bound_diameter
from directcoll.errors import DirectcollError, TopologyError
from directcoll.synthesis.bfb import bfb_cost
from directcoll.synthesis.finder_bounds import alltoall_key, bfb_cost_bound, closed_form_cost
from directcoll.topology.spec import parse

#: largest non-Cayley base topology whose BFB LPs the finder solves (rings and Theorem 22 circulants come in closed
#: form at any size, other Cayley bases by one node's LPs; larger non-Cayley bases are skipped and counted)
MAX_BASE_NODES = 4096
#: non-Cayley bases above this size are deferred: bounded first (:mod:`directcoll.synthesis.finder_bounds`), their
#: LPs solved only if the bound could reach the frontier
EAGER_BASE_NODES = 16
#: largest unidirectional 2-offset circulant base (its offsets are found by exhaustive search)
MAX_UNI_CIRCULANT = 64
#: most candidates with equal (T_L, T_B) kept at (N, d) for the all-to-all tie-breaker
MAX_TIED = 8
#: largest target N: the bases are enumerated over N's divisors and the expansions up to N (N = 2^20 takes about a
#: minute and 400 MB; N = 10^8 ran out of 23 GB)
MAX_NODES = 2**20


@dataclass(frozen=True)
class Candidate:
    """One topology with its schedule's predicted (or, for bases, measured) allgather cost.

    ``t_l_steps``: T_L / α; ``t_b_m_over_b``: T_B in units of M/B; ``bw_optimal_bfb``: its optimal BFB schedule is
    BW-optimal (Theorem 13 may use it in a product); ``reverse_symmetric``: isomorphic to its transpose (App. A.6);
    ``bidirectional``: every link has a reverse link; ``regular``: every node has out-degree ``degree`` (the
    expansion theorems need it; an irregular base, such as a generalized Kautz digraph whose self-loops were
    dropped, competes only at its own size).

    ``nodes`` is N and ``degree`` d (the largest out-degree); ``construction`` names the last expansion applied
    (``"base"``, ``"line graph"``, ``"degree expansion"``, ``"Cartesian power"``, ``"Cartesian product"``,
    ``"bidirectional conversion"``).

    Raises:
        Nothing: a frozen dataclass; its fields are not checked.

    Source: Zhao et al. (NSDI'25) Sec. 5.4 (candidates of the Pareto frontier), Sec. 3.2 (T_L, T_B).

    >>> c = Candidate("ring:4", 4, 2, 2, 0.75, True, True, True)
    >>> c.t_l_steps, c.t_b_m_over_b, c.construction
    (2, 0.75, 'base')
    """

    spec: str
    nodes: int
    degree: int
    t_l_steps: int
    t_b_m_over_b: float
    bw_optimal_bfb: bool
    reverse_symmetric: bool
    bidirectional: bool
    construction: str = "base"
    regular: bool = True
    factors: tuple[str, ...] = ()  # a product's factor specs (they may contain commas: circulant:8:1,3:uni)

    def allreduce_time(self, alpha: float, m_over_b: float) -> float:
        """2 (α T_L + T_B M/B) in seconds: reduce-scatter then allgather (Table 4's 2(T_L + T_B) column).

        Args:
            alpha: α, seconds per step.
            m_over_b: M/B in seconds (M the vector size in bytes, B the node bandwidth in bytes/s).

        Returns:
            The allreduce time in seconds, a float.

        Raises:
            Nothing: arithmetic on the fields.

        Source: Zhao et al. (NSDI'25) Table 4 and App. C.3 (allreduce = reduce-scatter + allgather).

        >>> c = Candidate("ring:4", 4, 2, 2, 0.75, True, True, True)
        >>> round(c.allreduce_time(alpha=10e-6, m_over_b=8e-5), 9)  # 2 (2 x 10 us + 0.75 x 80 us)
        0.00016
        """
        return 2.0 * (alpha * self.t_l_steps + self.t_b_m_over_b * m_over_b)

    def to_dict(self) -> dict:
        """The JSON entry of ``find-topology --json``: spec, nodes, degree, t_l_steps (steps), t_b_m_over_b (units
        of M/B), bw_optimal (T_B = (N-1)/N, Corollary 4.1), bidirectional, construction. Raises: Nothing.
        Source: docs/finder.md (the ``frontier`` entries).

        >>> Candidate("ring:4", 4, 2, 2, 0.75, True, True, True).to_dict()["bw_optimal"]
        True
        """
        return {"spec": self.spec, "nodes": self.nodes, "degree": self.degree, "t_l_steps": self.t_l_steps,
                "t_b_m_over_b": float(self.t_b_m_over_b),
                "bw_optimal": bool(abs(self.t_b_m_over_b - (self.nodes - 1) / self.nodes) <= 1e-9),
                "bidirectional": bool(self.bidirectional),
                "construction": self.construction}


@dataclass
class FinderResult:
    """What :func:`find_topology` found for one (N, d).

    Attributes:
        nodes, degree: the target N and d.
        frontier: the Pareto-efficient :class:`Candidate` s at (N, d), by increasing T_L (steps).
        best: the frontier entry with the least workload time (None only when built by hand).
        bases: how many base topologies were considered.
        candidates: how many candidates (bases and expansions) were considered in all.
        times: spec -> workload time in seconds (the allreduce time summed over the sizes) of every frontier
            entry.
        skipped: non-Cayley bases over :data:`MAX_BASE_NODES` nodes, not evaluated (their BFB LPs need the
            all-pairs distances; e.g. ``genkautz:4:100000``).
        deferred, deferred_solved: non-Cayley bases over :data:`EAGER_BASE_NODES` nodes, bounded first, and how
            many of them could reach the frontier and had their BFB LPs solved.
        ties: frontier spec -> the specs with equal (T_L, T_B) it was chosen over (all-to-all tie-breaker).

    Raises:
        Nothing: a plain dataclass; fields are not checked.

    Source: Zhao et al. (NSDI'25) Sec. 5.4 (the Pareto frontier and the best topology for a workload).
    """

    nodes: int
    degree: int
    frontier: list[Candidate]  # Pareto-efficient at (nodes, degree), by increasing T_L
    best: Candidate | None  # fastest for the workload
    bases: int  # base topologies evaluated
    candidates: int  # candidates considered in all
    times: dict[str, float] = field(default_factory=dict)  # spec -> workload time (s) of frontier entries
    skipped: list[str] = field(default_factory=list)  # non-Cayley bases over MAX_BASE_NODES, not evaluated
    deferred: int = 0  # non-Cayley bases over EAGER_BASE_NODES, bounded first
    deferred_solved: int = 0  # of those, how many needed their BFB LPs
    ties: dict[str, list[str]] = field(default_factory=dict)  # frontier spec -> tied specs it was chosen over


def min_diameter_unidirectional_circulant(n: int) -> tuple[int, int]:
    """Offsets 1 <= a < b < n of the degree-2 unidirectional circulant (i -> i+a, i -> i+b mod n) with the
    smallest diameter (ties: the smallest (a, b)); exhaustive over all pairs, O(n^2 D^2) with D ~ sqrt(2n).

    Node x is reached in min{i + j : i a + j b = x mod n} hops, so the diameter is the largest such minimum;
    pairs with gcd(a, b, n) > 1 are disconnected and skipped.

    Returns:
        (a, b), two Python ints. n < 3 has no such pair and gets the placeholder (1, 2) (:func:`base_specs` asks
        only for 4 < n <= :data:`MAX_UNI_CIRCULANT`).

    Raises:
        Nothing: integer arithmetic (a negative n raises ValueError from ``math.isqrt``, a caller's bug).

    Source: docs/finder.md, "How it searches" (the minimum-diameter unidirectional 2-offset circulants); the
    directed circulants of Zhao et al. (NSDI'25) Fig. 3 and Table 4 (UniRing, C(16, {1, 7})).

    >>> min_diameter_unidirectional_circulant(16)  # diameter 5
    (1, 7)
    """
    best, best_pair = n, (1, 2)
    depth = 2 * isqrt(n) + 2  # the diameter of a connected 2-offset circulant is below 2 sqrt(n)
    i, j = np.meshgrid(np.arange(depth), np.arange(depth), indexing="ij")
    hops = (i + j).ravel()
    order = np.argsort(hops, kind="stable")
    for a in range(1, n):
        for b in range(a + 1, n):
            if gcd(gcd(a, b), n) != 1:
                continue
            pos = ((i * a + j * b) % n).ravel()[order]
            first = np.full(n, -1)
            first[pos[::-1]] = hops[order][::-1]  # smallest hop count wins (written last)
            if (first < 0).any():
                continue
            diameter = int(first.max())
            if diameter < best:
                best, best_pair = diameter, (a, b)
    return best_pair


def _divisors(n: int) -> list[int]:
    small = [k for k in range(1, isqrt(n) + 1) if n % k == 0]
    return sorted(set(small + [n // k for k in small]))


def base_specs(n_target: int, d_max: int) -> Iterable[tuple[str, bool]]:
    """(spec, reverse_symmetric) of every base topology with a size dividing ``n_target`` and degree <= d_max.

    Complete graphs, complete bipartite graphs K_{m,m}, bi- and unidirectional rings, Theorem 22's degree-4
    circulants (``circulant:n:opt4``, n > 6), minimum-diameter unidirectional 2-offset circulants
    (:func:`min_diameter_unidirectional_circulant`), generalized Kautz Π_{k,n} (Def. 16) and Kautz graphs,
    Hamming graphs H(a, q), the Petersen graph, its line graph, the Odd graph O_4 and K_{m,m} minus a perfect
    matching (distance-regular, Table 8). ``reverse_symmetric`` (Def. 6) is False where it is not known
    (generalized Kautz, Kautz), which keeps those out of App. A.6's conversion.

    Returns:
        A generator of (spec string, bool), in the order above per divisor of ``n_target``; the same graph
        may come under two specs (``complete:3`` and ``ring:3``).

    Raises:
        Nothing: integer arithmetic on ``n_target`` and ``d_max`` (a negative ``n_target`` raises ValueError
        from ``math.isqrt``, a caller's bug).

    Source: Zhao et al. (NSDI'25) Sec. 5.4 and Table 9 (the base topologies), App. F.2-F.4 (Theorem 22);
    docs/finder.md, "How it searches".

    >>> [spec for spec, _ in base_specs(8, 2)][:5]
    ['complete:2', 'bipartite:2', 'ring:4', 'ring:4:uni', 'genkautz:2:4']
    """
    for n in _divisors(n_target):
        if n < 2:
            continue
        if n - 1 <= d_max:
            yield f"complete:{n}", True
        if n % 2 == 0 and n // 2 <= d_max and n >= 4:
            yield f"bipartite:{n // 2}", True
        if n >= 3:
            if d_max >= 2 and n >= 3:
                yield f"ring:{n}", True
            yield f"ring:{n}:uni", True
        if n > 6 and d_max >= 4:
            yield f"circulant:{n}:opt4", True
        if 4 < n <= MAX_UNI_CIRCULANT and d_max >= 2:
            a, b = min_diameter_unidirectional_circulant(n)
            yield f"circulant:{n}:{a},{b}:uni", True
        for k in range(2, d_max + 1):  # generalized Kautz: any n > k
            if n > k + 1:
                yield f"genkautz:{k}:{n}", False
        for q in range(3, n + 1):  # Hamming H(a, q), degree a (q - 1)
            a, size = 1, q
            while size < n:
                size, a = size * q, a + 1
            if size == n and a >= 2 and a * (q - 1) <= d_max:
                yield f"hamming:{a}:{q}", True
        for k in range(2, d_max + 1):  # Kautz K(k, D): k^D + k^(D-1) nodes
            depth = 2
            while k ** depth + k ** (depth - 1) < n:
                depth += 1
            if k ** depth + k ** (depth - 1) == n:
                yield f"kautz:{k}:{depth}", False
    for spec, n, d in (("petersen", 10, 3), ("linegraph_petersen", 15, 4), ("odd:4", 35, 4)):
        if n_target % n == 0 and d <= d_max:
            yield spec, True
    for m in range(3, d_max + 2):
        if n_target % (2 * m) == 0:
            yield f"bipartite_minus_matching:{m}", True


def _evaluate_base(spec: str, reverse_symmetric: bool, topo=None, cost: tuple[int, float] | None = None
                   ) -> Candidate | None:
    """The base's candidate with its exact BFB cost (or ``cost`` where given: a closed form or a bound)."""
    topo = parse(spec) if topo is None else topo
    degrees = topo.out_degree[: topo.num_compute]
    t_l, t_b = bfb_cost(topo) if cost is None else cost
    t_b = float(t_b)
    n, d = topo.num_compute, int(degrees.max())
    optimal = bool(abs(t_b - (n - 1) / n) <= 1e-9)
    back = set(zip(topo.link_dst.tolist(), topo.link_src.tolist(), strict=True))
    bidirectional = all(pair in back for pair in zip(topo.link_src.tolist(), topo.link_dst.tolist(), strict=True))
    regular = bool(degrees.min() == degrees.max())
    return Candidate(topo.spec, n, d, t_l, t_b, optimal and regular, reverse_symmetric, bidirectional,
                     regular=regular)


def _dominates(a: Candidate, b: Candidate) -> bool:
    """a makes b redundant: no worse in T_L and T_B, and usable by every expansion b is usable by."""
    return (a.t_l_steps <= b.t_l_steps and a.t_b_m_over_b <= b.t_b_m_over_b + 1e-12
            and (a.bw_optimal_bfb or not b.bw_optimal_bfb) and (a.reverse_symmetric or not b.reverse_symmetric)
            and (a.bidirectional or not b.bidirectional))


def _add(pool: dict[tuple[int, int], list[Candidate]], c: Candidate, target=None) -> bool:
    """Add c unless dominated; at the ``target`` (N, d) equal (T_L, T_B) points are all kept (the all-to-all
    tie-breaker chooses among them), up to :data:`MAX_TIED` each."""
    here = pool.setdefault((c.nodes, c.degree), [])
    if (c.nodes, c.degree) == target:
        def beats(a, b):
            return (a.t_l_steps <= b.t_l_steps and a.t_b_m_over_b <= b.t_b_m_over_b + 1e-12
                    and (a.bidirectional or not b.bidirectional)
                    and (a.t_l_steps < b.t_l_steps or a.t_b_m_over_b < b.t_b_m_over_b - 1e-12
                         or (a.bidirectional and not b.bidirectional) or a.spec == b.spec))
        same = [o for o in here if o.t_l_steps == c.t_l_steps and abs(o.t_b_m_over_b - c.t_b_m_over_b) <= 1e-12]
        if any(beats(o, c) for o in here) or len(same) >= MAX_TIED:
            return False
        here[:] = [o for o in here if not beats(c, o)] + [c]
        return True
    if any(_dominates(o, c) for o in here):
        return False
    here[:] = [o for o in here if not _dominates(c, o)] + [c]
    return True


def _expansions(c: Candidate, pool, n_target: int, d_max: int) -> Iterable[Candidate]:
    n, d = c.nodes, c.degree
    if not c.regular:
        return
    me = (n, d, c.t_l_steps, c.t_b_m_over_b)
    if d > 1 and n_target % (n * d) == 0:  # Theorem 10 (BFB base, out-degree > 1): exact
        p = ex.predict_line_graph(me)
        yield Candidate(_line_of(c), p.nodes, d, p.t_l, float(p.t_b), False, c.reverse_symmetric, False,
                        "line graph")
    for m in range(2, d_max // d + 1):  # Theorem 11
        if n_target % (n * m) == 0:
            p = ex.predict_degree_expansion(me, m)
            yield Candidate(f"degree({c.spec},{m})", p.nodes, p.degree, p.t_l, float(p.t_b), False,
                            c.reverse_symmetric, c.bidirectional, "degree expansion")
    for k in range(2, d_max // d + 1):  # Theorem 12
        if n ** k <= n_target and n_target % (n ** k) == 0:
            p = ex.predict_cartesian_power(me, k)
            yield Candidate(f"power({c.spec},{k})", p.nodes, p.degree, p.t_l, float(p.t_b), c.bw_optimal_bfb,
                            c.reverse_symmetric, c.bidirectional, "Cartesian power")
    if c.reverse_symmetric and not c.bidirectional and 2 * d <= d_max:  # App. A.6
        p = ex.predict_bidirectional(me)
        yield Candidate(f"bidir({c.spec})", n, p.degree, p.t_l, float(p.t_b), False, True, True,
                        "bidirectional conversion")
    if c.bw_optimal_bfb:  # Theorem 13, with every BW-optimal partner of a compatible size and degree
        for (n2, d2), others in list(pool.items()):
            if d + d2 > d_max or n_target % (n * n2) or n2 < n:
                continue
            for o in others:
                if not (o.bw_optimal_bfb and o.regular and (n2 > n or o.spec >= c.spec)):
                    continue
                p = ex.predict_cartesian_product(me, (n2, d2, o.t_l_steps, o.t_b_m_over_b))
                factors = tuple(sorted(_factors(c) + _factors(o)))
                yield Candidate(f"product({','.join(factors)})", p.nodes, p.degree, p.t_l, float(p.t_b), True,
                                c.reverse_symmetric and o.reverse_symmetric, c.bidirectional and o.bidirectional,
                                "Cartesian product", factors=factors)


def _line_of(c: Candidate) -> str:
    """``line(X)`` of a candidate, written ``line^k(X)`` when X is itself a line graph."""
    if c.construction != "line graph":
        return f"line({c.spec})"
    head, _, inner = c.spec.partition("(")
    k = int(head.partition("^")[2] or 1)
    return f"line^{k + 1}({inner}"


def _factors(c: Candidate) -> tuple[str, ...]:
    """The factors of a product candidate (products are flattened: G x (H x K) = product(G,H,K)); kept as a tuple,
    never split from the spec text (a factor such as ``circulant:8:1,3:uni`` contains a comma)."""
    if c.construction == "Cartesian product" and c.factors:
        return c.factors
    return (c.spec,)


def find_topology(nodes: int, degree: int, *, alpha: float = 10e-6, m_over_b: Iterable[float] = (8e-5,),
                  bidirectional_only: bool = False, tie_break: bool = True,
                  progress: Callable[[int, int, str], None] | None = None) -> FinderResult:
    """Search bases x expansions for N = ``nodes``, d = ``degree`` (Zhao et al. Sec. 5.4).

    Args:
        nodes: target N >= 2.
        degree: target d >= 1 (out-degree of every node; a bidirectional cable counts once per direction).
        alpha: α in seconds per step.
        m_over_b: the workload, one M/B in seconds per collective (M the vector size, B = d x link bandwidth);
            Table 4 uses 1 MB / 100 Gb/s = 80 µs.
        bidirectional_only: keep only topologies whose links all come in opposite pairs (the paper's testbed).
        tie_break: among equal (T_L, T_B) candidates pick the best in all-to-all (capacity bound, then LP (3) up
            to :data:`directcoll.synthesis.finder_bounds.MAX_TIE_LP_NODES` nodes); else the shortest spec.
        progress: callable(done, total, label).

    Returns:
        FinderResult with the Pareto frontier (by increasing T_L in steps; T_B in units of M/B), the best entry
        for the workload and the workload time in seconds of each frontier entry (allreduce time
        2 (α T_L + T_B M/B), Table 4, summed over ``m_over_b``).

    Raises:
        DirectcollError: N < 2, d < 1 or d > N - 1 (or not integers), or nothing reaches (N, d).
        ResourceError: N over :data:`MAX_NODES`.
        SolverError: HiGHS fails on a base's BFB LP (:func:`directcoll.synthesis.bfb.bfb_cost`).

    Source: Zhao et al. (NSDI'25) Sec. 5.4, App. A.3, Tables 4 and 7; docs/finder.md, "How it searches".

    >>> r = find_topology(16, 2)
    >>> [(c.spec, c.t_l_steps, round(c.t_b_m_over_b, 4)) for c in r.frontier]
    [('line(circulant:8:1,3:uni)', 4, 1.0), ('circulant:16:1,7:uni', 5, 0.9375)]
    >>> r.best.spec  # 2 (4 α + 1.0 M/B) = 240 us beats 2 (5 α + 0.9375 M/B) = 250 us
    'line(circulant:8:1,3:uni)'
    """
    from directcoll.resources import check_work

    if int(nodes) != nodes or nodes < 2 or int(degree) != degree or degree < 1:
        raise DirectcollError(f"find-topology needs nodes >= 2 and degree >= 1, got nodes={nodes}, degree={degree}")
    check_work(f"find-topology for N={int(nodes):,}", nodes, MAX_NODES, "nodes")
    if degree > nodes - 1:  # every base and expansion is a digraph without parallel links
        raise DirectcollError(f"find-topology: degree {degree} is over N - 1 = {int(nodes) - 1}; a node of a "
                              f"network of N = {int(nodes)} nodes without parallel links has at most N - 1 neighbours")
    nodes, degree = int(nodes), int(degree)
    sizes = [float(m) for m in m_over_b]
    report = progress or (lambda *_: None)
    specs = list(dict.fromkeys(base_specs(nodes, degree)))
    target = (nodes, degree)
    pool: dict[tuple[int, int], list[Candidate]] = {}
    deferred, skipped = [], []
    for i, (spec, rev) in enumerate(specs):
        report(i, len(specs) + 1, spec)
        try:
            topo = parse(spec)
            n = topo.num_compute
            if n > MAX_BASE_NODES and not topo.is_cayley:
                skipped.append(spec)
            elif n > EAGER_BASE_NODES and not topo.is_cayley:
                deferred.append((spec, rev, topo))
            else:
                cost = closed_form_cost(spec, topo) if n > EAGER_BASE_NODES else None
                _add(pool, _evaluate_base(spec, rev, topo, cost), target)
        except TopologyError:
            continue
    report(len(specs), len(specs) + 1, "expansions")
    considered = len(specs) + _closure(pool, nodes, degree, target)
    deferred.sort(key=lambda item: (-item[2].num_compute, -int(item[2].out_degree.max()), item[0]))
    evaluated = 0
    for spec, rev, topo in deferred:  # bounds first: the LPs only where the bound could reach the frontier
        d_base = int(topo.out_degree.max())
        optimistic = Candidate(topo.spec, topo.num_compute, d_base,
                               int(moore_bound_diameter(topo.num_compute, d_base, True)),
                               (topo.num_compute - 1) / topo.num_compute, False, rev, False, regular=True)
        alone = topo.num_compute == nodes or d_base >= degree  # no room for a product partner
        if alone and not _could_reach(optimistic, pool, nodes, degree, bidirectional_only):
            continue
        t_l, t_b_low = bfb_cost_bound(topo)
        bound = _evaluate_base(spec, rev, topo, (t_l, t_b_low))
        if not bound.bw_optimal_bfb and not _could_reach(bound, pool, nodes, degree, bidirectional_only):
            continue
        evaluated += 1
        _add(pool, _evaluate_base(spec, rev, topo), target)
        considered += _closure(pool, nodes, degree, target)
    report(len(specs) + 1, len(specs) + 1, "done")
    final = [c for c in pool.get(target, []) if c.bidirectional or not bidirectional_only]
    if not final:
        raise DirectcollError(f"find-topology: no base topology and expansion reaches N={nodes}, d={degree}"
                              + (" with bidirectional links" if bidirectional_only else ""))
    frontier, ties = _pareto(final, tie_break)
    times = {c.spec: sum(c.allreduce_time(alpha, m) for m in sizes) for c in frontier}
    best = min(frontier, key=lambda c: times[c.spec])
    return FinderResult(nodes, degree, frontier, best, len(specs), considered, times, skipped=skipped,
                        deferred=len(deferred), deferred_solved=evaluated, ties=ties)


def _closure(pool, nodes: int, degree: int, target) -> int:
    """Apply every expansion until nothing new is Pareto-efficient; the number of candidates considered."""
    considered, changed = 0, True
    while changed:  # sizes only grow, so this ends; a few rounds in practice
        changed = False
        for key in sorted(pool):
            for c in list(pool.get(key, [])):
                for new in _expansions(c, pool, nodes, degree):
                    considered += 1
                    changed |= _add(pool, new, target)
    return considered


def _could_reach(low: Candidate, pool, nodes: int, degree: int, bidirectional_only: bool) -> bool:
    """Could a base whose cost is at least ``low``'s, or one of its expansions, be on the frontier at (N, d)?

    Theorems 10-12 and App. A.6 are monotone in the base's T_L and T_B, so the expansions of ``low`` (alone:
    it is not a product factor unless BW-optimal, which the caller checks) bound those of the real base from
    below; each must be strictly dominated by a candidate already at (N, d) for the answer to be no.
    """
    mini: dict[tuple[int, int], list[Candidate]] = {}
    _add(mini, low, (nodes, degree))
    _closure(mini, nodes, degree, (nodes, degree))
    known = [c for c in pool.get((nodes, degree), []) if c.bidirectional or not bidirectional_only]
    for c in mini.get((nodes, degree), []):
        if bidirectional_only and not c.bidirectional:
            continue
        if not any(k.t_l_steps <= c.t_l_steps and k.t_b_m_over_b <= c.t_b_m_over_b + 1e-12
                   and (k.t_l_steps < c.t_l_steps or k.t_b_m_over_b < c.t_b_m_over_b - 1e-12) for k in known):
            return True
    return False


def _pareto(cands: list[Candidate], tie_break: bool = True) -> tuple[list[Candidate], dict[str, list[str]]]:
    """Pareto-efficient in (T_L, T_B), by increasing T_L; of equal pairs the best in all-to-all
    (:func:`directcoll.synthesis.finder_bounds.alltoall_key`: capacity bound, then LP (3) where affordable; then
    the shortest spec), or the shortest spec without ``tie_break``. Also returns chosen spec -> the tied specs."""
    cands = sorted(cands, key=lambda c: (c.t_l_steps, c.t_b_m_over_b, len(c.spec), c.spec))
    groups: list[list[Candidate]] = []
    for c in cands:
        if groups and abs(c.t_l_steps - groups[-1][0].t_l_steps) == 0 \
                and abs(c.t_b_m_over_b - groups[-1][0].t_b_m_over_b) <= 1e-12:
            groups[-1].append(c)
        elif not groups or c.t_b_m_over_b < groups[-1][0].t_b_m_over_b - 1e-12:
            groups.append([c])
    out, ties = [], {}
    for group in groups:
        group = group[:MAX_TIED]
        if len(group) > 1 and tie_break:
            key = alltoall_key([c.spec for c in group])
            group.sort(key=lambda c: (-key[c.spec][0], len(c.spec), c.spec))
        out.append(group[0])
        if len(group) > 1:
            ties[group[0].spec] = [c.spec for c in group[1:]]
    return out, ties


def theoretical_bound(nodes: int, degree: int, *, directed: bool = True) -> tuple[int, float]:
    """(T_L*, T_B*) for N nodes of degree d: the Moore bound diameter (Def. 9) and (N-1)/N (Table 4's last row).

    Args:
        nodes: N >= 1.
        degree: d >= 0.
        directed: the directed Moore bound (Def. 9, Table 4); else the undirected one (Table 8's T_L**).

    Returns:
        (T_L* in steps, an int; T_B* = (N-1)/N in units of M/B, a float).

    Raises:
        ValueError: N < 1, d < 0, or no connected graph of that degree
            (:func:`directcoll.cost.bounds.moore_bound_diameter`).

    Source: Zhao et al. (NSDI'25) App. C.1, Def. 9 and 10 (Moore optimality); App. C.2, Corollary 4.1
    (T_B* = (M/B)(N-1)/N).

    >>> theoretical_bound(1024, 4)
    (5, 0.9990234375)
    """
    return int(moore_bound_diameter(nodes, degree, directed)), (nodes - 1) / nodes


__all__ = ["Candidate", "FinderResult", "base_specs", "find_topology", "theoretical_bound"]
