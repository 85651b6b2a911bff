"""Exceptions raised by directcoll: every message names the offending input and what is accepted."""


class DirectcollError(Exception):
    """Base class of every error directcoll raises on bad input."""


class SpecError(DirectcollError, ValueError):
    """A topology spec string could not be parsed or names an impossible shape."""


class TopologyError(DirectcollError, ValueError):
    """A topology is unusable for the request (disconnected, wrong kind, node out of range)."""


class ScheduleError(DirectcollError, ValueError):
    """A schedule is malformed (ranks or pieces out of range, inconsistent arrays, bad collective)."""


class ScheduleFormatError(ScheduleError):
    """A schedule file could not be read (unknown format, version, or missing fields)."""


class UnsupportedShapeError(DirectcollError, ValueError):
    """An algorithm cannot serve the requested topology, shape, collective or variant."""


class SolverError(DirectcollError, RuntimeError):
    """An LP or MIP solve failed, was infeasible or unbounded, or stopped at a limit (:mod:`directcoll.lp`)."""


class SolverLimitError(SolverError):
    """A solve stopped at a time or iteration limit before it proved optimality."""


class ResourceError(DirectcollError):
    """A request would need more memory or work than the budget allows (:mod:`directcoll.resources`)."""


class MissingDependencyError(DirectcollError, ImportError):
    """An optional dependency of the feature used is not installed; the message names the extra that installs it
    (``pip install 'directcoll[mpi]'``, ``'directcoll[torch]'``)."""
