"""Kolmakov & Zhang's generalized allreduce (any number of processes P): the family in one package.

- :mod:`~directcoll.algorithms.generalized.groups`: the abelian groups of order P, their fold orders and the
  placement h (Sec. 4, 5, 7, 11).
- :mod:`~directcoll.algorithms.generalized.schedule`: the bandwidth-optimal, intermediate and latency-optimal
  allreduce, the reduce-scatter, the ring (Sec. 6-9) and the registry's builder.

Source: Kolmakov & Zhang, "A Generalization of the Allreduce Operation", Sec. 4-11; docs/generalized.md.

>>> generalized_allreduce(6).num_steps == 2 * num_steps(6)
True
"""

from directcoll.algorithms.generalized.groups import AbelianGroup, group_of, parse_group, placement_of
from directcoll.algorithms.generalized.schedule import (
    GROUPS,
    VARIANTS,
    build_generalized,
    generalized_allreduce,
    generalized_reduce_scatter,
    kolmakov_ring,
    num_steps,
)

__all__ = ["GROUPS", "VARIANTS", "AbelianGroup", "build_generalized", "generalized_allreduce",
           "generalized_reduce_scatter", "group_of", "kolmakov_ring", "num_steps", "parse_group", "placement_of"]
