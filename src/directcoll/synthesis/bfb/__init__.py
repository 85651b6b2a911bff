"""Breadth-first-broadcast (BFB) schedules (Zhao et al., NSDI'25, Sec. 6.1): the family in one package, one concept
per module.

- :mod:`~directcoll.synthesis.bfb.lp`: the load-balancing LPs (LP (1) / (14), aggregated by source pattern), the
  slow-link rule (App. E.3), exact loads and whole chunks (App. E.2).
- :mod:`~directcoll.synthesis.bfb.plan`: who feeds whom at which step (BFS layers), one LP per (node, step), node
  0's plan translated on Cayley topologies; eq. (2).
- :mod:`~directcoll.synthesis.bfb.pieces`: a node's loads cut into the pieces of the shards it receives.
- :mod:`~directcoll.synthesis.bfb.schedule`: the allgather, reduce-scatter and allreduce schedules (the registry's
  ``bfb``) and their costs without schedules (:func:`bfb_cost`).
- :mod:`~directcoll.synthesis.bfb.pattern`: the same collectives as step patterns (the registry's ``pattern=``) and
  their memory (:func:`pattern_bytes`).
- :mod:`~directcoll.synthesis.bfb.tree`: broadcast and reduce from one root (the registry's ``bfb-tree``).

Source: Zhao et al. (NSDI'25) Sec. 6.1, App. B and App. E; docs/architecture.md, "The layers, bottom up" (a
package per family).

>>> from directcoll.topology import parse
>>> bfb_allgather(parse("torus:3x3")).num_steps, bfb_pattern(parse("torus:3x3"), "allgather").num_steps
(2, 2)
"""

from directcoll.synthesis.bfb.lp import MAX_PIECE_DENOMINATOR, MAX_SCHEDULE_DENOMINATOR
from directcoll.synthesis.bfb.pattern import bfb_pattern, pattern_bytes
from directcoll.synthesis.bfb.plan import translation_invariant
from directcoll.synthesis.bfb.schedule import (
    VARIANTS,
    bfb_allgather,
    bfb_cost,
    bfb_reduce_scatter,
    build_bfb,
    translation_loads,
)
from directcoll.synthesis.bfb.tree import build_bfb_tree

__all__ = ["MAX_PIECE_DENOMINATOR", "MAX_SCHEDULE_DENOMINATOR", "VARIANTS", "bfb_allgather", "bfb_cost", "bfb_pattern",
           "bfb_reduce_scatter", "build_bfb", "build_bfb_tree", "pattern_bytes", "translation_invariant",
           "translation_loads"]
