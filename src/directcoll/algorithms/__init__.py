"""Collective algorithms. Each module registers its algorithms in :mod:`directcoll.algorithms.registry`."""

from directcoll.algorithms import bucket, generalized, recursive_doubling, ring, swing  # noqa: F401  (registration)
from directcoll.algorithms.registry import ALGORITHMS, Algorithm, build, get

__all__ = ["ALGORITHMS", "Algorithm", "build", "get"]
