"""Predicted costs of Zhao et al.'s expansions (NSDI'25, Sec. 5, Theorems 7-13, App. A.6) from their bases' costs.

T_L is in steps (units of alpha), T_B in units of M/B with B = d x link bandwidth (the ``t_b_m_over_b`` of
:func:`directcoll.cost.analytic.analyze`). The predictions are exact (Fractions in, Fractions out) where the theorems
state equalities. The schedules themselves are built by :mod:`directcoll.synthesis.expansions`.

Source: Zhao et al. (NSDI'25) App. D, Theorems 7, 10-13, Corollaries 7.1, 10.1 (eq. (4)-(12)), and App. A.6.

>>> predict_degree_expansion(Prediction(4, 1, 3, Fraction(3, 4)), 2)
Prediction(nodes=8, degree=2, t_l=4, t_b=Fraction(7, 8))
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from math import prod
from typing import NamedTuple

import numpy as np

from directcoll.errors import TopologyError, UnsupportedShapeError
from directcoll.schedule.ir import Collective, Schedule
from directcoll.topology import operators
from directcoll.topology.grammar import SpecNode, parse_tree
from directcoll.topology.metrics import distance_stats
from directcoll.topology.model import Topology
from directcoll.topology.spec import build_tree

#: spec nodes whose schedule is built as a whole (their cost is a base cost): base families, punctured
#: topologies (failures break the symmetry every expansion theorem needs) and links(...) (links of their own
#: bandwidth or latency: the theorems assume every link alike) and placed(...) (a job's ranks on a physical
#: network: its schedule is built for the placed whole)
LEAVES = ("family", "punctured", "links", "placed")


class Prediction(NamedTuple):
    """Size, degree and cost of a (base or expanded) allgather / reduce-scatter algorithm.

    ``t_l`` is in steps (units of alpha), ``t_b`` in units of M/B with B = degree x link bandwidth (None where
    no theorem gives it). Fractions stay exact through the predictions; floats stay floats.

    Raises:
        Nothing: a named tuple; the prediction functions check their bases.

    Source: Zhao et al. (NSDI'25) Sec. 3.2 (cost model: T_L in units of alpha, T_B in units of M/B).

    >>> Prediction(8, 2, 4, Fraction(7, 8)).t_b
    Fraction(7, 8)
    """

    nodes: int
    degree: int
    t_l: int
    t_b: Fraction | float | None


def _base(base, what: str, *, regular: bool = True) -> Prediction:
    p = Prediction(*base)
    if p.nodes < 1 or (regular and (p.degree is None or p.degree < 1)) or p.t_l < 0:
        raise UnsupportedShapeError(f"{what}: needs a base with N >= 1, a regular degree d >= 1 and T_L >= 0, "
                                    f"got {tuple(p)}")
    return p


def _add(t_b, x):
    return None if t_b is None else t_b + x


def predict_line_graph(base, k: int = 1) -> Prediction:
    """Cost of L^k(G) (Zhao et al. Theorem 7, Corollary 7.1, Theorem 10, Corollary 10.1) from the base's
    (N, d, T_L, T_B):

        N' = d^k N,  d' = d,  T_L' = T_L + k,  T_B' = T_B + (M/B) d/(d-1) (1/N - 1/(d^k N)).

    For T_B this is the equality of Corollary 10.1 (an optimal BFB base schedule, every node with more than
    one out-neighbour) and the upper bound of Corollary 7.1 for any other base schedule. The bound is the
    geometric sum over the k expansions of 1/(d^i N), i = 0..k-1, which is how eq. (7) reads.

    Raises:
        UnsupportedShapeError: k < 1, or d < 2 (the line graph of a degree-1 topology, a directed cycle, is
            the cycle itself; Theorem 10 needs |N^+(u)| > 1).

    Returns:
        The :class:`Prediction` of L^k(G) (exact Fractions when ``t_b`` is one; None stays None).

    Source: Zhao et al. (NSDI'25) App. D.1, Theorem 7 (eq. (4), (5)), Corollary 7.1 (eq. (6), (7)), Theorem 10
    and Corollary 10.1.

    >>> predict_line_graph((5, 2, 2, Fraction(4, 5)), 2)  # 4/5 + 2 (1/5 - 1/20)
    Prediction(nodes=20, degree=2, t_l=4, t_b=Fraction(11, 10))
    """
    n, d, t_l, t_b = _base(base, "line graph prediction")
    if k < 1 or d < 2:
        raise UnsupportedShapeError(f"line graph prediction: needs k >= 1 and degree d >= 2 (Theorem 10), got "
                                    f"k={k}, d={d}")
    extra = Fraction(d, d - 1) * (Fraction(1, n) - Fraction(1, d ** k * n))
    return Prediction(d ** k * n, d, t_l + k, _add(t_b, extra))


def predict_degree_expansion(base, n: int) -> Prediction:
    """Cost of G * n (Zhao et al. Theorem 11): N' = nN, d' = nd, T_L' = T_L + 1, T_B' = T_B + (M/B) (n-1)/(nN)
    (for n = 1, G * 1 = G and T_L' = T_L). BW-optimal when the base is (Corollary 11.1).

    Raises:
        UnsupportedShapeError: n < 1.
        UnsupportedShapeError: also a base with N < 1, degree < 1 or T_L < 0.

    Returns:
        The :class:`Prediction` of G * n.

    Source: Zhao et al. (NSDI'25) App. D.2, Theorem 11 (eq. (9), (10)) and Corollary 11.1.

    >>> predict_degree_expansion((4, 1, 3, Fraction(3, 4)), 2)
    Prediction(nodes=8, degree=2, t_l=4, t_b=Fraction(7, 8))
    """
    big_n, d, t_l, t_b = _base(base, "degree expansion prediction")
    if n < 1:
        raise UnsupportedShapeError(f"degree expansion prediction: n must be >= 1, got {n}")
    return Prediction(n * big_n, n * d, t_l + (n > 1), _add(t_b, Fraction(n - 1, n * big_n)))


def predict_cartesian_power(base, n: int) -> Prediction:
    """Cost of G^(box n) (Zhao et al. Theorem 12): N' = N^n, d' = nd, T_L' = n T_L,
    T_B' = T_B N/(N-1) (N^n - 1)/N^n. BW-optimal when the base is (Corollary 12.1).

    Raises:
        UnsupportedShapeError: n < 1 or N < 2.
        UnsupportedShapeError: also a base with degree < 1 or T_L < 0.

    Returns:
        The :class:`Prediction` of G^(box n).

    Source: Zhao et al. (NSDI'25) App. D.3, Theorem 12 (eq. (11), (12)) and Corollary 12.1.

    >>> predict_cartesian_power((4, 2, 2, Fraction(3, 4)), 2)
    Prediction(nodes=16, degree=4, t_l=4, t_b=Fraction(15, 16))
    """
    big_n, d, t_l, t_b = _base(base, "cartesian power prediction")
    if n < 1 or big_n < 2:
        raise UnsupportedShapeError(f"cartesian power prediction: needs n >= 1 and N >= 2, got n={n}, N={big_n}")
    factor = Fraction(big_n, big_n - 1) * Fraction(big_n ** n - 1, big_n ** n)
    return Prediction(big_n ** n, n * d, n * t_l, None if t_b is None else t_b * factor)


def _bw_optimal(p: Prediction) -> bool:
    if p.t_b is None:
        return False
    opt = Fraction(p.nodes - 1, p.nodes)
    return p.t_b == opt if isinstance(p.t_b, Fraction | int) else abs(p.t_b - float(opt)) <= 1e-9


def predict_cartesian_product(*factors) -> Prediction:
    """Cost of the BFB schedule of G_1 x ... x G_n (Zhao et al. Theorem 13) from every factor's
    (N_i, d_i, T_L_i, T_B_i), where T_L_i must be the factor's diameter (the T_L of its BFB schedule) and
    T_B_i the T_B of its BFB schedule:

        N = prod N_i,  d = sum d_i,  T_L = sum D(G_i),  T_B = (M/B) (N-1)/N if every factor's T_B_i is
        BW-optimal ((N_i - 1)/N_i), else None (the paper gives no bound).

    Theorem 13 also needs simple, nontrivial factors; :func:`predict` checks that, this function cannot.

    Raises:
        UnsupportedShapeError: fewer than two factors.
        UnsupportedShapeError: also a factor with N < 1 or T_L < 0.

    Returns:
        The :class:`Prediction` of the product (degree None when a factor is not regular).

    Source: Zhao et al. (NSDI'25) Sec. 5.3 and App. D.3, Theorem 13.

    >>> predict_cartesian_product((4, 2, 2, Fraction(3, 4)), (3, 2, 1, Fraction(2, 3)))
    Prediction(nodes=12, degree=4, t_l=3, t_b=Fraction(11, 12))
    """
    ps = [_base(f, "cartesian product prediction", regular=False) for f in factors]
    if len(ps) < 2:
        raise UnsupportedShapeError(f"cartesian product prediction: needs at least two factors, got {len(ps)}")
    big_n = prod(p.nodes for p in ps)
    t_b = None
    if all(_bw_optimal(p) for p in ps):
        exact = all(isinstance(p.t_b, Fraction | int) for p in ps)
        t_b = Fraction(big_n - 1, big_n) if exact else (big_n - 1) / big_n
    degree = None if any(p.degree is None for p in ps) else sum(p.degree for p in ps)
    return Prediction(big_n, degree, sum(p.t_l for p in ps), t_b)


def predict_bidirectional(base) -> Prediction:
    """Cost of G u G^T with App. A.6's schedule: N' = N, d' = 2d, T_L' = T_L, T_B' = T_B (G reverse-symmetric:
    each direction carries half of every shard at half of the doubled node bandwidth B' = 2db).

    Returns:
        The :class:`Prediction` of G u G^T.

    Raises:
        UnsupportedShapeError: a base with N < 1, degree < 1 or T_L < 0.

    Source: Zhao et al. (NSDI'25) App. A.6 (T_L(A) = T_L(A'), T_B(A) = T_B(A')).

    >>> predict_bidirectional((4, 1, 3, Fraction(3, 4)))
    Prediction(nodes=4, degree=2, t_l=3, t_b=Fraction(3, 4))
    """
    big_n, d, t_l, t_b = _base(base, "bidirectional prediction")
    return Prediction(big_n, 2 * d, t_l, t_b)


def measured_cost(schedule: Schedule, topology: Topology) -> tuple[int, float]:
    """(T_L, T_B) of a schedule on a topology: its number of steps and ``analyze(...).t_b_m_over_b``.

    Returns:
        (steps, T_B in units of M/B as a float).

    Raises:
        TopologyError: the schedule has more ranks than the topology has compute nodes (from
            :func:`directcoll.cost.analytic.analyze`).

    Source: Zhao et al. (NSDI'25) Sec. 3.2 (T_L and T_B of a schedule).

    >>> from directcoll.algorithms.ring import build_ring
    >>> from directcoll.topology import parse
    >>> t = parse("ring:4:uni")
    >>> measured_cost(build_ring(t, "allgather"), t)
    (3, 0.75)
    """
    from directcoll.cost.analytic import analyze

    return schedule.num_steps, float(analyze(schedule, topology).t_b_m_over_b)


def predict_expansion(spec, collective="allgather", *,
                      base_cost: Callable[[Topology, Collective], tuple[int, float]]) -> Prediction:
    """Predicted (N, d, T_L, T_B) of the expansion schedule of a spec (Zhao et al. Sec. 5,
    :func:`directcoll.synthesis.expansions.expanded_schedule`), from the costs of its bases alone: the theorems'
    formulas applied bottom-up; nothing but the bases is scheduled.

    Args:
        spec: a spec string, a Topology built from one, or a parsed :class:`~directcoll.topology.spec.SpecNode`.
        collective: allgather, reduce_scatter (the same formulas on the bases' reduce-scatter costs) or
            allreduce (reduce-scatter + allgather: T_L and T_B add up).
        base_cost: ``(topology, collective) -> (T_L, T_B)`` of a base's schedule (BFB:
            :func:`directcoll.synthesis.expansion_predictions.bfb_base_cost`; or :func:`measured_cost` of any schedule).

    Returns:
        The :class:`Prediction` of the whole spec (T_L in steps, T_B in units of M/B).

    Raises:
        TopologyError: a line/degree/power/bidir argument that is not regular (the theorems need d-regular G).
        UnsupportedShapeError: as the prediction functions.
        SpecError: an unparseable spec.
        ScheduleError: an unknown collective name.
        ResourceError: a base topology over the memory budget.

    Source: Zhao et al. (NSDI'25) Sec. 5 and App. D (Theorems 7-13), App. A.6; the allreduce as reduce-scatter
    plus allgather (App. B, Theorem 2).

    >>> from directcoll.topology import parse
    >>> def ring_cost(topology, collective):  # a unidirectional ring's allgather: N - 1 steps, T_B = (N-1)/N
    ...     n = topology.num_compute
    ...     return n - 1, Fraction(n - 1, n)
    >>> predict_expansion("degree(ring:4:uni,2)", base_cost=ring_cost)
    Prediction(nodes=8, degree=2, t_l=4, t_b=Fraction(7, 8))
    """
    coll = Collective.parse(collective)
    if coll is Collective.ALLREDUCE:
        rs = predict_expansion(spec, Collective.REDUCE_SCATTER, base_cost=base_cost)
        ag = predict_expansion(spec, Collective.ALLGATHER, base_cost=base_cost)
        return Prediction(ag.nodes, ag.degree, rs.t_l + ag.t_l, None if None in (rs.t_b, ag.t_b) else rs.t_b + ag.t_b)
    if isinstance(spec, Topology):
        spec = spec.spec
    tree = spec if isinstance(spec, SpecNode) else parse_tree(spec)
    cost = base_cost
    topos: dict[SpecNode, Topology] = {}

    def topo_of(node: SpecNode) -> Topology:
        if node not in topos:
            topos[node] = build_tree(node)
        return topos[node]

    def base_prediction(node: SpecNode) -> Prediction:
        topo = topo_of(node)
        t_l, t_b = cost(topo, coll)
        return Prediction(topo.num_compute, operators.regular_degree(topo), t_l, t_b)

    def rec(node: SpecNode) -> Prediction:
        if node.op in LEAVES:
            return base_prediction(node)
        if node.op == "product":
            factors = []
            for child in node.children:  # Theorem 13: simple, nontrivial factors, T_L_i their diameters
                topo = topo_of(child)
                simple = len(np.unique(topo.link_src * topo.num_compute + topo.link_dst)) == topo.num_links
                p = base_prediction(child)
                factors.append(p._replace(t_l=distance_stats(topo)[0], t_b=p.t_b if simple and p.nodes > 1 else None))
            return predict_cartesian_product(*factors)
        child = rec(node.children[0])
        if child.degree is None:
            raise TopologyError(f"predict: {node.children[0]} is not regular; the {node.op} theorems need a "
                                "d-regular topology")
        if node.op == "line":
            return predict_line_graph(child, node.n)
        if node.op == "degree":
            return predict_degree_expansion(child, node.n)
        if node.op == "power":
            return predict_cartesian_power(child, node.n)
        return predict_bidirectional(child)

    return rec(tree)
