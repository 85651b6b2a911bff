"""Why an algorithm wins (``directcoll compare --why``): its number of steps, its congestion deficiency Ξ and its
busiest link.

Goodput alone says who wins; these three numbers say why, in the Swing paper's terms (Sec. 2.2, Eq. 1): the
latency term grows with the steps, the bandwidth term with Ξ (how far the bytes travel, Sec. 4.1) and with the most
loaded link of a step (congestion: the step model times a step by it, docs/architecture.md "Cost and simulation").

- **steps**: the schedule's number of steps (T_L in units of α).
- **Ξ** (``congestion_deficiency``): Σ_s max_t(size_t · hops_t) / Σ_s max_t(size_t), hops on the topology's
  shortest paths: :func:`directcoll.cost.analytic.analyze`'s ``congestion_deficiency``, evaluated here on the step
  pattern a comparison times (each distinct step once, weighed by how often it runs), so it is the same number for
  every topology, torus or not (docs/cost.md).
- **busiest link**: of all steps, the one whose most loaded directed link carries the most bytes; that link as
  ``u->v`` (:func:`directcoll.reports.steps.link_label`), its bytes at a vector size and the step: the
  ``max_link_name`` and ``bytes_max_link`` of ``directcoll simulate`` for the same schedule.

Source: Swing (De Sensi et al., NSDI'24) Sec. 2.2, Eq. (1) (Λ, Ψ, Ξ) and Sec. 4.1 (Ξ from the distance-weighted
bandwidth term); docs/cost.md (``congestion_deficiency``); docs/simulation.md, "Step model" (the busiest link).

>>> from directcoll.registry import build_pattern
>>> from directcoll.simulate.step import simulate
>>> from directcoll.topology import parse
>>> t = parse("torus:8x8")
>>> p = build_pattern("swing", t, variant="bandwidth")
>>> why = explain(p, simulate(p, t), t)
>>> why.steps, round(why.congestion_deficiency, 4), why.at(2**20)["bytes_max_link"]
(12, 1.0952, 131072.0)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from directcoll.reports.steps import link_label
from directcoll.schedule.pattern import StepPattern
from directcoll.topology.model import Topology
from directcoll.topology.paths import hop_distance


@dataclass(frozen=True)
class Why:
    """What makes a schedule fast or slow on a network (the module docstring defines each number).

    Attributes:
        steps: the number of steps.
        congestion_deficiency: Ξ, dimensionless (1.0: every byte travels one hop).
        max_link_load: the busiest link's load in its busiest step, bytes per byte of the vector.
        max_link: that link's id (-1: no transfer uses the network); max_link_name: it as ``u->v``.
        max_link_step: the first step in which it carries that load (-1 when none).

    Raises:
        Nothing: a record built by :func:`explain`.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.2, Eq. (1) and Sec. 4.1.

    >>> Why(2, 1.0, 0.5, 3, "1->2", 0).at(1024)["bytes_max_link"]
    512.0
    """

    steps: int
    congestion_deficiency: float
    max_link_load: float
    max_link: int
    max_link_name: str
    max_link_step: int

    def at(self, size: float) -> dict:
        """The JSON fields of one size: ``steps``, ``congestion_deficiency``, ``max_link_name``, ``max_link``,
        ``bytes_max_link`` (bytes on the busiest link in its busiest step for a ``size``-byte vector) and
        ``max_link_step``.

        Returns:
            A dict of plain numbers and strings.

        Raises:
            Nothing: arithmetic.

        Source: docs/simulation.md, "Step model" (``bytes_max_link``, ``max_link_name`` of ``directcoll simulate``).

        >>> sorted(Why(2, 1.0, 0.5, 3, "1->2", 0).at(8))
        ['bytes_max_link', 'congestion_deficiency', 'max_link', 'max_link_name', 'max_link_step', 'steps']
        """
        return {"steps": self.steps, "congestion_deficiency": self.congestion_deficiency,
                "max_link_name": self.max_link_name, "max_link": self.max_link,
                "bytes_max_link": float(self.max_link_load * size), "max_link_step": self.max_link_step}


def pattern_congestion_deficiency(pattern: StepPattern, topology: Topology) -> float:
    """Ξ of a step pattern: Σ over the schedule's steps of max_t(size_t · hops_t) over Σ of max_t(size_t), local
    transfers (src == dst) counting nothing; 1.0 when nothing crosses the network.

    Args:
        pattern: the steps (sizes: fractions of the vector); topology: its ranks are the compute nodes.

    Returns:
        Ξ, a float >= 1 (or 1.0).

    Raises:
        ResourceError: the hop distances need more BFS work than allowed (:func:`hop_distance`).
        TopologyError: a destination is unreachable.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 4.1; the definition of ``congestion_deficiency`` in
    :mod:`directcoll.cost.analytic` (equal to it on the full schedule: tests/test_compare_why.py).

    >>> from directcoll.registry import build_pattern
    >>> from directcoll.topology import parse
    >>> pattern_congestion_deficiency(build_pattern("ring", "ring:8"), parse("ring:8"))
    1.0
    """
    net = pattern.src != pattern.dst
    size = np.where(net, pattern.size, 0.0)
    hops = np.zeros(len(size))
    if net.any():
        hops[net] = hop_distance(topology, pattern.src[net], pattern.dst[net])
    num = np.zeros(pattern.num_distinct)
    den = np.zeros(pattern.num_distinct)
    for k in range(pattern.num_distinct):
        sl = pattern.step(k)
        if sl.stop > sl.start:
            num[k] = (size[sl] * hops[sl]).max()
            den[k] = size[sl].max()
    mult = pattern.multiplicity
    total = float((mult * den).sum())
    return float((mult * num).sum()) / total if total else 1.0


def explain(pattern: StepPattern, simulated, topology: Topology) -> Why:
    """The :class:`Why` of a pattern that the step model routed (``simulated``: the
    :class:`~directcoll.simulate.step.SimulatedSchedule` of ``pattern`` on ``topology``).

    Returns:
        A :class:`Why`.

    Raises:
        ResourceError, TopologyError: from :func:`pattern_congestion_deficiency`.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.2 and 4.1; docs/simulation.md, "Step model".

    >>> from directcoll.registry import build_pattern
    >>> from directcoll.simulate.step import simulate
    >>> from directcoll.topology import parse
    >>> t = parse("ring:4")
    >>> p = build_pattern("ring", t)
    >>> explain(p, simulate(p, t), t).max_link_load  # the bidirectional ring: 1/8 of the vector each way
    0.125
    """
    loads = np.array([simulated.steps[k].max_link_load for k in pattern.sequence])
    step = int(np.argmax(loads)) if len(loads) else -1
    link = simulated.steps[pattern.sequence[step]].max_link if step >= 0 else -1
    return Why(steps=pattern.num_steps, congestion_deficiency=pattern_congestion_deficiency(pattern, topology),
               max_link_load=float(loads[step]) if step >= 0 else 0.0, max_link=int(link),
               max_link_name=link_label(topology, link), max_link_step=step if link >= 0 else -1)
