"""The step-pattern builders of the algorithms whose full schedules outgrow memory at scale, and their sizes.

Swing's bandwidth variant on non-power-of-two tori (:mod:`directcoll.algorithms.swing_pattern`) and BFB on
translation-invariant Cayley topologies (:mod:`directcoll.synthesis.bfb_pattern`) write their step patterns
without their schedules, O(N) transfers per step. The registry registers them (``Algorithm.pattern``) and sizes
them with :func:`pattern_bytes` when it estimates a pattern's memory (``estimate_bytes(..., pattern=True)``).

Source: docs/architecture.md, "Cost and simulation" (step patterns) and "Engines, runtimes and scale" (estimate memory
first); docs/benchmarks.md, "Scale: Fugaku and HammingMesh" (Fugaku at full size).

>>> sorted(BUILDERS)
['bfb', 'swing']
"""

from __future__ import annotations

from directcoll.algorithms.swing_pattern import swing_pattern, swing_pattern_bytes
from directcoll.synthesis.bfb_pattern import bfb_pattern, bfb_pattern_bytes
from directcoll.topology.model import Topology

__all__ = ["BUILDERS", "bfb_pattern", "pattern_bytes", "swing_pattern"]

#: Registry name -> pattern builder ``(topology, collective, *, variant, ports, **options) -> StepPattern``.
BUILDERS = {"swing": swing_pattern, "bfb": bfb_pattern}


def pattern_bytes(name: str, topology: Topology, collective="allreduce", variant: str | None = None,
                  ports: int | None = None) -> float | None:
    """The memory the pattern builder of registry algorithm ``name`` needs on ``topology``, bytes; None for an
    algorithm without one here, or where the builder falls back to building the full schedule (the registry's
    estimate of the schedule applies then).

    Returns:
        Bytes (a float, 0 where the builder refuses the arguments before building anything), or None.

    Raises:
        ScheduleError: an unknown collective name.

    Source: :func:`~directcoll.algorithms.swing_pattern.swing_pattern_bytes`,
    :func:`~directcoll.synthesis.bfb_pattern.bfb_pattern_bytes`.

    >>> from directcoll.topology import parse
    >>> pattern_bytes("swing", parse("torus:4x4")), pattern_bytes("ring", parse("torus:4x4"))
    (12800.0, None)
    """
    if name == "swing":
        return swing_pattern_bytes(topology, collective, variant, ports)
    if name == "bfb":
        return bfb_pattern_bytes(topology, collective)
    return None
