"""directcoll: collective algorithms and schedules for torus and direct-connect networks.

``import directcoll as dc`` gives the public API (:mod:`directcoll.api`; the page docs/api.md):

- ``dc.topology(spec)``: a network from a spec (``"torus:8x8"``), a network file or a published system;
- ``dc.build(algorithm, topology, collective, ...)``: a schedule; ``dc.pattern(...)``: its step pattern at scale;
- ``dc.verify(schedule)``: the exact verifier; ``dc.simulate(schedule, topology)``: the step model;
- ``dc.compare(topology, sizes=...)``: every algorithm timed, the winner per size; ``dc.algorithms()``: the names;
- the main types: ``Topology``, ``Schedule``, ``StepPattern``, ``Collective``, ``NetworkParams``, ``Comparison``,
  ``VerifyResult``, ``SimulatedSchedule``, ``Algorithm``, and the errors of :mod:`directcoll.errors`.

The API's names are loaded on first use, so ``import directcoll`` (and the ``directcoll`` command's start-up) imports
nothing but the errors. ``dc.topology``, ``dc.verify``, ``dc.simulate`` and ``dc.algorithms`` are also the
subpackages of those names: calling one calls the API function (``dc.verify(s)`` is ``dc.api.verify(s)``), and
``dc.verify.verify`` or ``import directcoll.topology.spec`` work as ever.

Layers (imports point down only; docs/architecture.md): errors, catalog, units, resources, lp, topology, schedule,
cost, verify, algorithms, synthesis, registry, simulate, export, lang, plugins, runtime, reports, api, sweep, cli.

Source: docs/api.md; docs/architecture.md, "The layers, bottom up".

>>> import directcoll as dc
>>> dc.build("ring", dc.topology("ring:4"), "allgather").num_steps
3
"""

import importlib
import types

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

#: the API's names, each loaded from :mod:`directcoll.api` on first use
API = ("Algorithm", "Collective", "Comparison", "NetworkParams", "Schedule", "SimulatedSchedule", "StepPattern",
       "Topology", "VerifyResult", "algorithms", "build", "compare", "pattern", "simulate", "topology", "verify")
#: API functions that share their name with a subpackage: the subpackage is returned, and calling it calls the function
CALLABLE_PACKAGES = ("algorithms", "simulate", "topology", "verify")

__all__ = [
    *API,
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


class CallablePackage(types.ModuleType):
    """A subpackage that is also an API function of its name (``dc.topology("torus:4x4")``): calling it calls
    ``directcoll.api.<name>``; everything else is the subpackage's own.

    Raises:
        Nothing of its own: a call raises what the API function documents.

    Source: docs/api.md; Python's module ``__class__`` assignment (PEP 549's alternative, the language reference's
    "Customizing module attribute access").

    >>> import directcoll as dc
    >>> dc.topology("ring:4").num_compute, dc.topology.parse("ring:4").num_compute
    (4, 4)
    """

    def __call__(self, *args, **kwargs):
        return getattr(importlib.import_module("directcoll.api"), self.__name__.rsplit(".", 1)[1])(*args, **kwargs)


class _Package(types.ModuleType):
    """``directcoll`` itself: the API's subpackages are made callable whenever they are looked up."""

    def __getattribute__(self, name):
        value = super().__getattribute__(name)
        if name in CALLABLE_PACKAGES and type(value) is types.ModuleType:
            value.__class__ = CallablePackage
        return value


def __getattr__(name: str):
    """The API's names on first use (PEP 562): a subpackage of that name (made callable), else
    :mod:`directcoll.api`'s attribute.

    Returns:
        The object named.

    Raises:
        AttributeError: a name that is neither (Python's own error for a missing attribute).

    Source: docs/api.md.
    """
    if name in CALLABLE_PACKAGES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in API:
        value = getattr(importlib.import_module("directcoll.api"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names and the API's. Raises: Nothing. Source: docs/api.md."""
    return sorted(set(globals()) | set(API))


__import__("sys").modules[__name__].__class__ = _Package
