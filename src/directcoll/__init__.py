"""directcoll: collective algorithms and schedules for torus and direct-connect networks.

Layers (imports point down only): topology -> schedule -> algorithms -> verify -> cost -> cli.
"""

from directcoll.errors import (
    DirectcollError,
    ResourceError,
    ScheduleError,
    ScheduleFormatError,
    SolverError,
    SolverLimitError,
    SpecError,
    TopologyError,
    UnsupportedShapeError,
)

__version__ = "0.1.0"

__all__ = [
    "DirectcollError",
    "ResourceError",
    "ScheduleError",
    "ScheduleFormatError",
    "SolverError",
    "SolverLimitError",
    "SpecError",
    "TopologyError",
    "UnsupportedShapeError",
    "__version__",
]
