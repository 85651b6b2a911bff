"""The lowered input every simulation engine starts from (docs/architecture.md "Engines, runtimes and scale": three
engines, one interface): a schedule's step pattern checked against the topology, the links' effective bandwidths
and latencies, and each distinct step's routes.

An engine (the step model :mod:`directcoll.simulate.step`, the flow model :mod:`directcoll.simulate.flow`, a
packet-level engine) calls :func:`prepare` once, :func:`link_values` for its link parameters, and for every
distinct step k passes :func:`step_routes` (explicit routes, or None) to
:func:`directcoll.topology.routing.route_entries`, which lowers the step's transfers to columnar (transfer,
link, share) entries. None of these knows which algorithm made the schedule.

Source: docs/architecture.md, "Engines, runtimes and scale" (three engines, one lowered input); docs/simulation.md.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from directcoll.errors import TopologyError
from directcoll.schedule.ir import Schedule
from directcoll.schedule.pattern import StepPattern, pattern_of
from directcoll.simulate.params import NetworkParams
from directcoll.topology.model import Topology
from directcoll.topology.routing import ROUTINGS


def prepare(schedule: Schedule | StepPattern, topology: Topology, params: NetworkParams | None,
            routing: str) -> tuple[StepPattern, NetworkParams]:
    """The step pattern and parameters every engine starts from, after checking ranks and routing.

    Args:
        schedule: a Schedule or its StepPattern.
        topology: the network; its compute nodes must be the schedule's ranks.
        params: network parameters, or None for the defaults (zero overheads, the topology's links).
        routing: ``adaptive`` or ``dor`` (:data:`~directcoll.topology.routing.ROUTINGS`).

    Returns:
        (pattern, params): the :class:`~directcoll.schedule.pattern.StepPattern` (sizes as fractions of the
        vector) and ``params`` or the default :class:`NetworkParams`.

    Raises:
        TopologyError: rank count mismatch or unknown routing.

    Source: docs/architecture.md, "Engines, runtimes and scale" (the lowered input every engine takes);
    docs/simulation.md.

    >>> from directcoll.algorithms.ring import ring_reduce_scatter
    >>> from directcoll.topology import parse
    >>> pattern, params = prepare(ring_reduce_scatter(range(4)), parse("ring:4"), None, "adaptive")
    >>> pattern.num_steps, pattern.num_distinct, params.name
    (3, 1, 'custom')
    """
    pattern = schedule if isinstance(schedule, StepPattern) else pattern_of(schedule)
    if routing not in ROUTINGS:
        raise TopologyError(f"unknown routing {routing!r}; accepted: {', '.join(ROUTINGS)}")
    if pattern.nranks != topology.num_compute:
        raise TopologyError(f"schedule has {pattern.nranks} ranks but {topology.spec} has "
                            f"{topology.num_compute} compute nodes")
    params = params if params is not None else NetworkParams()
    # the implementation's terms on this schedule: its own plus those of the code path that runs it
    return pattern, replace(params, implementation=params.implementation.on(pattern.meta))


def link_values(topology: Topology, params: NetworkParams) -> tuple[np.ndarray, np.ndarray]:
    """(bandwidth bytes/s, latency s) of every link, float64 (L,) each: the topology's own, or the overrides
    ``params.link_bandwidth`` / ``params.link_latency`` for every link.

    Raises:
        Nothing: both were validated (the Topology and NetworkParams refuse non-positive bandwidths).

    Source: docs/simulation.md, "Step model" (link bandwidth/latency overrides).

    >>> from directcoll.topology import parse
    >>> bw, lat = link_values(parse("ring:4"), NetworkParams(link_bandwidth=1e9))
    >>> bw.shape, float(bw[0]), float(lat[0])
    ((8,), 1000000000.0, 1e-07)
    """
    bw = topology.link_bandwidth if params.link_bandwidth is None else np.full(topology.num_links,
                                                                               params.link_bandwidth)
    lat = topology.link_latency if params.link_latency is None else np.full(topology.num_links, params.link_latency)
    return bw, lat


def step_routes(pattern: StepPattern, k: int) -> tuple[np.ndarray, np.ndarray] | None:
    """The explicit routes of distinct step k's transfers, (offsets (T_k + 1,) from 0, links), or None when the
    schedule has none (the engine routes them by the routing mode).

    Returns:
        (offsets int64 (T_k + 1,) starting at 0, links int64 (R_k,) link ids): transfer i of the step runs
        ``links[offsets[i]:offsets[i + 1]]``; or None.

    Raises:
        Nothing: reads the pattern's route arrays (validated with the schedule); k must be a distinct step.

    Source: docs/architecture.md, "Schedule IR" (optional explicit route of a transfer).

    >>> from directcoll.algorithms.ring import ring_reduce_scatter
    >>> from directcoll.schedule.pattern import pattern_of
    >>> step_routes(pattern_of(ring_reduce_scatter(range(4))), 0) is None
    True
    """
    if pattern.route_offsets is None:
        return None
    sl = pattern.step(k)
    ro = pattern.route_offsets[sl.start: sl.stop + 1]
    return ro - ro[0], pattern.route_links[ro[0]: ro[-1]]
