"""The congestion-aware step model (DESIGN.md "Cost and simulation").

Every step is timed on its own (bulk-synchronous). Each transfer is routed over the topology (adaptive: split
evenly over all minimal paths; dor: dimension order; or the schedule's explicit route), the bytes of all
transfers of the step are added on every directed link, and transfer i takes

    T_i(n) = alpha + sum over its path of (link latency + per-hop latency)            [latency, s]
           + n * max over its links e of (load_e / bandwidth_e)                       [congestion, s]
           (+ n * gamma * data the receiver reduces in the step; host-injection limits; see NetworkParams)

with loads per byte of the vector, so the step lasts max_i T_i(n). The adaptive-routing latency is the
share-weighted mean over the minimal paths, which all have the same hop count. Because loads scale with the
vector size n, the lines (a_i, b_i) of a step are computed once and any number of sizes are timed in closed
form: time(n) = sum over steps of max_i (a_i + b_i n). Only the Pareto-maximal lines are kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from directcoll.schedule.ir import Schedule
from directcoll.schedule.pattern import StepPattern
from directcoll.simulate.params import NetworkParams
from directcoll.simulate.routes import link_values, prepare, step_routes
from directcoll.topology.model import Topology
from directcoll.topology.routing import route_entries


@dataclass(frozen=True)
class StepLines:
    """The timing lines of one distinct step and what the per-step breakdown reports."""

    latency: np.ndarray          # a_i, s (Pareto-maximal lines only)
    slope: np.ndarray            # b_i, s per byte of the vector
    max_link_load: float         # the most loaded link's load, bytes per byte of the vector
    max_link: int                # its id (-1 for an empty step)
    hops_max: float              # the longest route of the step

    def time(self, sizes: np.ndarray) -> np.ndarray:
        if not len(self.latency):
            return np.zeros_like(sizes, dtype=float)
        return (self.latency[:, None] + self.slope[:, None] * sizes[None, :]).max(axis=0)


@dataclass(frozen=True)
class SimulatedSchedule:
    """A schedule routed once; :meth:`time` sweeps vector sizes in closed form."""

    pattern: StepPattern
    steps: list[StepLines]
    routing: str
    params: NetworkParams

    def time(self, sizes) -> np.ndarray:
        """Completion time in seconds for every vector size (bytes); same shape as ``sizes``."""
        n = np.atleast_1d(np.asarray(sizes, dtype=float))
        per_distinct = np.array([s.time(n) for s in self.steps]).reshape(len(self.steps), len(n))
        total = (self.pattern.multiplicity[:, None] * per_distinct).sum(axis=0)
        return total.reshape(np.shape(sizes)) if np.ndim(sizes) else float(total[0])

    def breakdown(self, size: float) -> list[dict]:
        """Per step of the schedule (in order): the most loaded link, its load in bytes, hops, time."""
        n = np.array([float(size)])
        rows = []
        for t, k in enumerate(self.pattern.sequence):
            st = self.steps[k]
            rows.append({"step": t, "distinct_step": int(k), "bytes_max_link": st.max_link_load * size,
                         "max_link": st.max_link, "hops_max": st.hops_max, "time_s": float(st.time(n)[0])})
        return rows


def _pareto(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lines not dominated by another with both a larger intercept and a larger slope."""
    order = np.lexsort((-b, -a))
    a, b = a[order], b[order]
    keep = b > np.r_[-np.inf, np.maximum.accumulate(b)[:-1]]
    return a[keep], b[keep]


def step_lines(topology: Topology, src, dst, size, reduce, params: NetworkParams, routing: str = "adaptive",
               routes=None) -> StepLines:
    """Timing lines of one step (see the module docstring); sizes are fractions of the vector."""
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    size, reduce = np.asarray(size, dtype=float), np.asarray(reduce, dtype=bool)
    n = topology.num_compute
    reduced = np.bincount(dst, weights=size * reduce, minlength=n)  # local reductions cost gamma too
    net = src != dst  # local copies and reductions use no link
    if routes is not None and not net.all():
        offsets, links = routes
        keep = np.flatnonzero(net)
        counts = np.diff(offsets)[keep]
        idx = np.repeat(offsets[:-1][keep] - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(counts.sum())
        routes = (np.r_[0, np.cumsum(counts)], links[idx])
    src, dst, size, reduce = src[net], dst[net], size[net], reduce[net]
    if not len(src):
        busy = reduced.max() * params.gamma
        return StepLines(np.zeros(1), np.full(1, busy), 0.0, -1, 0.0) if busy else StepLines(
            np.zeros(0), np.zeros(0), 0.0, -1, 0.0)
    bw, lat = link_values(topology, params)
    entries = route_entries(topology, src, dst, routing, routes)
    idx, link, share = entries.transfer, entries.link, entries.share
    loads = entries.loads(size, topology.num_links)
    ratio = loads / bw
    starts = np.flatnonzero(np.r_[True, idx[1:] != idx[:-1]])
    slope = np.maximum.reduceat(ratio[link], starts)
    hops = np.add.reduceat(share, starts)
    latency = params.alpha + np.add.reduceat(share * lat[link], starts) + hops * params.per_hop_latency
    if params.forwarding == "store-and-forward":
        slope = slope * hops
    if params.host_injection:  # the network term is the slower of the links and the host's injection
        sent = np.bincount(src, weights=size, minlength=n) / params.host_injection
        recv = np.bincount(dst, weights=size, minlength=n) / params.host_injection
        slope = np.maximum(slope, np.maximum(sent[src], recv[dst]))
    if params.gamma:  # then the receiver reduces what it got
        slope = slope + params.gamma * reduced[dst]
    a, b = _pareto(latency, slope)
    top = int(np.argmax(loads))
    return StepLines(a, b, float(loads[top]), top, float(hops.max()))


def simulate(schedule: Schedule | StepPattern, topology: Topology, params: NetworkParams | None = None,
             routing: str = "adaptive", progress=None) -> SimulatedSchedule:
    """Route a schedule (or its step pattern) once on ``topology``; time sizes with ``.time(sizes)``.

    Args:
        schedule: a Schedule or a StepPattern whose ranks are the topology's compute nodes.
        topology: the network.
        params: alpha, per-hop latency, gamma, host injection, forwarding, link overrides (default: zero
            overheads, the topology's own links).
        routing: "adaptive" (default) or "dor".
        progress: optional callable(done, total) called after each distinct step.

    Raises:
        TopologyError: rank count mismatch, unknown routing, or a routing the topology cannot do.
    """
    pattern, params = prepare(schedule, topology, params, routing)
    steps = []
    for k in range(pattern.num_distinct):
        sl = pattern.step(k)
        steps.append(step_lines(topology, pattern.src[sl], pattern.dst[sl], pattern.size[sl], pattern.reduce[sl],
                                params, routing, step_routes(pattern, k)))
        if progress is not None:
            progress(k + 1, pattern.num_distinct)
    return SimulatedSchedule(pattern, steps, routing, params)
