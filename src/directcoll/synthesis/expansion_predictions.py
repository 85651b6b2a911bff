"""Predicted costs of expanded topologies from the BFB schedules of their bases (Zhao et al., NSDI'25, Sec. 5,
App. D): the formulas of :mod:`directcoll.cost.expansions` applied to the (T_L, T_B) that BFB achieves on each base,
without building the expanded schedule. The topology finder ranks candidates by these predictions.

Source: Zhao et al. (NSDI'25) Sec. 5 and App. D (Theorems 7-13); docs/expansions.md, "Predictions".
"""

from __future__ import annotations

from functools import lru_cache

from directcoll.cost.expansions import Prediction, measured_cost, predict_expansion
from directcoll.schedule.ir import Collective
from directcoll.synthesis import bfb as _bfb
from directcoll.topology.grammar import parse_tree
from directcoll.topology.model import Topology


@lru_cache(maxsize=256)
def _bfb_cost(spec: str, collective: str) -> tuple[int, float]:
    from directcoll.topology.spec import parse

    topo = parse(spec)
    return measured_cost(_bfb.build_bfb(topo, collective), topo)


def bfb_base_cost(topology: Topology, collective) -> tuple[int, float]:
    """(T_L, T_B) of the BFB schedule of ``topology`` (:func:`directcoll.cost.expansions.measured_cost`), cached
    per spec: the base costs :func:`predict` starts from.

    The schedule is built from ``topology.spec`` (parsed again), so a Topology whose links differ from its spec
    gets the spec's cost.

    Returns:
        (T_L in steps, an int; T_B in units of M/B, a float) of the built BFB schedule of ``collective``.

    Raises:
        SpecError: ``topology.spec`` is not a spec the parser knows (a hand-built Topology).
        UnsupportedShapeError, SolverError, ScheduleError, ResourceError: as
            :func:`directcoll.synthesis.bfb.build_bfb`.

    Source: Zhao et al. (NSDI'25) Sec. 6.1 (BFB, LP (1)) and Sec. 3.2 (T_L, T_B of a schedule).

    >>> from directcoll.topology import parse
    >>> bfb_base_cost(parse("complete:4"), "allgather")
    (1, 0.75)
    """
    return _bfb_cost(topology.spec, Collective.parse(collective).value)


def predict(spec_or_topology, collective="allgather") -> Prediction:
    """Predicted (N, d, T_L, T_B) of :func:`~directcoll.synthesis.expansions.expanded_schedule` for a spec,
    from the BFB schedules of its bases alone (:func:`directcoll.cost.expansions.predict_expansion` with
    :func:`bfb_base_cost`).

    Returns:
        A :class:`~directcoll.cost.expansions.Prediction`: nodes, degree, T_L in steps, T_B in units of M/B
        (None for a product whose factors do not meet Theorem 13's conditions).

    Raises:
        SpecError, TopologyError, UnsupportedShapeError, ScheduleError, ResourceError: as
            :func:`~directcoll.cost.expansions.predict_expansion`.
        SolverError: as :func:`bfb_base_cost` on a base.

    Source: Zhao et al. (NSDI'25) Sec. 5, App. D (Theorems 7-13, Corollaries 7.1 and 10.1), App. A.6;
    docs/expansions.md, "Predictions".

    >>> predict("line(complete:4)")  # Theorem 10: T_L + 1 = 2, T_B + 1/N = 3/4 + 1/4
    Prediction(nodes=12, degree=3, t_l=2, t_b=1.0)
    """
    return predict_expansion(parse_tree(spec_or_topology.spec if isinstance(spec_or_topology, Topology)
                                        else spec_or_topology), collective, base_cost=bfb_base_cost)
