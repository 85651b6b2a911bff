"""Collective algorithms. Each module registers its algorithms in :mod:`directcoll.algorithms.registry`."""

from directcoll.algorithms import (  # noqa: F401  (registration)
    alltoall,
    bucket,
    generalized,
    recursive_doubling,
    ring,
    swing,
    tree,
)
from directcoll.algorithms.registry import ALGORITHMS, Algorithm, build, get
from directcoll.synthesis import bfb as _bfb  # noqa: F401  (registration)
from directcoll.synthesis import expansions as _expansions  # noqa: F401  (registration)
from directcoll.synthesis.mcf import schedules as _mcf_schedules  # noqa: F401  (registration)

__all__ = ["ALGORITHMS", "Algorithm", "build", "get"]
