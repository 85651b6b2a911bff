"""directcoll: collective algorithms and schedules for torus and direct-connect networks.

Layers (imports point down only; docs/architecture.md): errors, catalog, units, resources, lp, topology, schedule,
cost, verify, algorithms, synthesis, registry, simulate, export, lang, plugins, runtime, reports, cli.
"""

from directcoll.errors import (
    DirectcollError,
    ProgramError,
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
    "ProgramError",
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
