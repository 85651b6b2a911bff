"""Closed-form metrics of a schedule on a topology: steps, bytes, the deficiencies of Swing Sec. 2.2, Zhao et
al.'s T_L and T_B, and an alpha-beta-gamma time without contention.

Definitions (sizes are fractions of the vector, so they scale with any vector size n):

- **steps** and **T_L** (in units of alpha): the number of steps.
- **bytes per rank**: the most data any rank sends over the whole schedule.
- **port time** of a step: the largest of, over ranks, its biggest single transfer and its total sent or
  received data divided by its number of ports (out-degree), i.e. the step's duration at one byte per unit
  time per port when nothing else interferes.
- **Lambda** (latency deficiency, Eq. 1): steps / log2 p.
- **Psi** (bandwidth deficiency, Eq. 1): the sum of port times divided by the lower bound
  2 (p-1)/p * n / ports for allreduce ((p-1)/p * n / ports for reduce-scatter and allgather); the paper
  drops the (p-1)/p factor, so its optimal Psi of 1 is exactly 1 here for every p.
- **Xi** (congestion deficiency): sum over steps of the largest size x hop distance of a transfer, divided by
  the sum over steps of the largest transfer size: the bandwidth term of Sec. 4.1,
  sum_s n/(2D) delta(s) / 2^(s+1), with the distance each transfer actually travels on the topology in
  place of delta, normalised by the same sum with all distances 1. For Swing-B this is the quantity of
  Table 2 (1.19 on 64x64, 1.03 on 8x8x8, 1.008 on 8x8x8x8).
- **T_B** (Zhao et al. Sec. 3.2): sum over steps of max over links of load / link bandwidth, with loads from
  minimal-path routing split evenly over all shortest paths; reported in units of M/B with B the node
  bandwidth (degree x link bandwidth).
- **all-to-all time** (``alltoall_time_m_over_b``, all-to-all schedules only): sum over steps of max over links
  of load / (bandwidth / b), loads in units of the per-pair shard m (one rank's send buffer / N) and b the largest
  link bandwidth, so the result is in units of m / b: 1 / F for a schedule achieving the max concurrent flow F
  (Basu et al.; ``directcoll.synthesis.mcf.link``). Transfers follow their explicit route where they have one, else
  minimal routing split evenly as for T_B.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from directcoll.cost.bounds import lower_bound_port_time
from directcoll.errors import ScheduleError, TopologyError
from directcoll.schedule.ir import REDUCE, Collective, Schedule
from directcoll.topology.model import Topology
from directcoll.topology.paths import hop_distance
from directcoll.topology.routing import link_loads


@dataclass(frozen=True)
class CostParams:
    """alpha (s per step), gamma (s per byte reduced); beta (s per byte) defaults to 1 / link bandwidth.

    The default alpha is one hop of the Swing paper's SST setup (Sec. 5: 100 ns link + 300 ns per-hop).
    """

    alpha: float = 400e-9
    gamma: float = 0.0
    beta: float | None = None


@dataclass(frozen=True)
class CostReport:
    """The metrics of :func:`analyze` (see the module docstring for their definitions)."""

    algorithm: str
    collective: str
    topology: str
    ranks: int
    steps: int
    bytes_per_rank: float
    latency_deficiency: float
    bandwidth_deficiency: float
    congestion_deficiency: float
    t_l_steps: int
    t_b_m_over_b: float | None
    port_time: np.ndarray = field(repr=False)      # per step, fraction of n per port
    reduce_time: np.ndarray = field(repr=False)    # per step, largest fraction of n reduced by one rank
    link_bound: np.ndarray | None = field(repr=False, default=None)  # per step, max load / bandwidth (s/byte)
    link_bandwidth: float = 0.0
    alltoall_time_m_over_b: float | None = None

    def time(self, size_bytes, params: CostParams = CostParams()) -> np.ndarray:
        """alpha-beta-gamma time without contention, seconds, for one or many vector sizes (bytes)."""
        beta = params.beta if params.beta is not None else 1.0 / self.link_bandwidth
        size = np.asarray(size_bytes, dtype=float)
        return (self.steps * params.alpha + size * beta * self.port_time.sum()
                + size * params.gamma * self.reduce_time.sum())

    def to_dict(self) -> dict:
        d = asdict(self)
        for k in ("port_time", "reduce_time", "link_bound"):
            d.pop(k)
        return d


def _per_step_max(step: np.ndarray, values: np.ndarray, nsteps: int) -> np.ndarray:
    out = np.zeros(nsteps)
    np.maximum.at(out, step, values)
    return out


def alltoall_time_m_over_b(schedule: Schedule, topology: Topology) -> float:
    """All-to-all completion time in units of (per-pair shard m) / b, b = the largest link bandwidth.

    Per step, every transfer's size (in shards: ``transfer_size * N``) is put on the links of its explicit
    route, or split evenly over the minimal paths when it has none; the step lasts max over links of load x
    b / bandwidth; steps add up. A schedule achieving the all-to-all max concurrent flow F (Basu et al. eq.
    1-5, in units of b) scores 1 / F; no schedule scores less.

    Raises:
        ScheduleError: not an all-to-all schedule.
        TopologyError: more ranks than compute nodes, or a route with a link id outside the topology.
    """
    s, n = schedule, schedule.nranks
    if s.collective is not Collective.ALLTOALL:
        raise ScheduleError(f"alltoall_time_m_over_b needs an all-to-all schedule, not {s.collective.value}")
    if n != topology.num_compute:
        raise TopologyError(f"schedule has {n} ranks but {topology.spec} has {topology.num_compute} compute nodes")
    size = np.where(s.is_local, 0.0, s.transfer_size) * n
    slowdown = topology.link_bandwidth.max() / topology.link_bandwidth
    total = 0.0
    for t in range(s.num_steps):
        a, b = s.step_bounds[t], s.step_bounds[t + 1]
        routes = None
        if s.route_offsets is not None:
            ro = s.route_offsets[a: b + 1]
            routes = (ro - ro[0], s.route_links[ro[0]: ro[-1]])
        loads = link_loads(topology, s.src[a:b], s.dst[a:b], size[a:b], routes=routes)
        total += float((loads * slowdown).max()) if len(loads) else 0.0
    return total


def analyze(schedule: Schedule, topology: Topology, *, link_loads_too: bool = True) -> CostReport:
    """Compute the metrics of the module docstring for ``schedule`` run on ``topology``.

    Args:
        schedule: a schedule whose ranks are the topology's compute nodes 0..N-1.
        topology: where it runs; hop distances and link loads come from its minimal paths.
        link_loads_too: route every step to compute T_B (the only part that needs link loads).

    Raises:
        TopologyError: the schedule has more ranks than the topology has compute nodes.
    """
    s, n = schedule, schedule.nranks
    if n != topology.num_compute:
        raise TopologyError(f"schedule has {n} ranks but {topology.spec} has {topology.num_compute} compute nodes")
    nsteps = s.num_steps
    local = s.is_local
    size = np.where(local, 0.0, s.transfer_size)  # local copies and reductions send nothing
    ports = topology.out_degree[:n].astype(float)
    sent = np.bincount(s.step * n + s.src, weights=size, minlength=nsteps * n).reshape(nsteps, n)
    recv = np.bincount(s.step * n + s.dst, weights=size, minlength=nsteps * n).reshape(nsteps, n)
    reduced = np.bincount(s.step * n + s.dst, weights=s.transfer_size * (s.op == REDUCE), minlength=nsteps * n)
    biggest = _per_step_max(s.step, size, nsteps)
    port_time = np.maximum(biggest, np.maximum(sent / ports, recv / ports).max(axis=1))
    hops = hop_distance(topology, s.src, s.dst)
    xi_num = _per_step_max(s.step, size * hops, nsteps).sum()
    bound = lower_bound_port_time(s.collective, n, int(ports.max())) if n > 1 else 1.0
    link_bound = None
    t_b = None
    if link_loads_too:
        link_bound = np.zeros(nsteps)
        for t in range(nsteps):
            a, b = s.step_bounds[t], s.step_bounds[t + 1]
            loads = link_loads(topology, s.src[a:b], s.dst[a:b], size[a:b])  # src == dst carries nothing
            link_bound[t] = (loads / topology.link_bandwidth).max() if len(loads) else 0.0
        t_b = float(link_bound.sum() * topology.node_bandwidth)
    a2a = alltoall_time_m_over_b(s, topology) if link_loads_too and s.collective is Collective.ALLTOALL else None
    return CostReport(
        algorithm=s.algorithm, collective=s.collective.value, topology=topology.spec, ranks=n, steps=nsteps,
        bytes_per_rank=float(sent.sum(axis=0).max()) if nsteps else 0.0,
        latency_deficiency=nsteps / np.log2(n) if n > 1 else 0.0,
        bandwidth_deficiency=float(port_time.sum() / bound),
        congestion_deficiency=float(xi_num / biggest.sum()) if biggest.sum() else 1.0,
        t_l_steps=nsteps, t_b_m_over_b=t_b, port_time=port_time,
        reduce_time=reduced.reshape(nsteps, n).max(axis=1) if nsteps else np.zeros(0),
        link_bound=link_bound, link_bandwidth=float(np.median(topology.link_bandwidth)),
        alltoall_time_m_over_b=a2a,
    )
