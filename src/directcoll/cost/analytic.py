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
  2 (p-1)/p * n / ports for allreduce ((p-1)/p * n / ports for reduce-scatter and allgather, n / ports for
  broadcast and reduce); the paper
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

Broadcast and reduce also have closed forms per family (:func:`rooted_time`, :func:`chain_chunks`).

Source: docs/cost.md (the table of keys and why Psi divides by 2(p-1)/p); Swing (De Sensi et al., NSDI'24) Sec.
2.2, Eq. (1) and Sec. 4.1; Zhao et al. (NSDI'25) Sec. 3.2; Basu et al. (HPDC'24) Sec. 2.2 and Sec. 3.1.1.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from directcoll.cost.bounds import lower_bound_port_time
from directcoll.errors import ScheduleError, TopologyError
from directcoll.resources import check_memory
from directcoll.schedule.ir import REDUCE, Collective, Schedule
from directcoll.topology.model import Topology
from directcoll.topology.paths import hop_distance
from directcoll.topology.routing import link_loads


@dataclass(frozen=True)
class CostParams:
    """alpha (s per step), gamma (s per byte reduced); beta (s per byte) defaults to 1 / link bandwidth.

    The default alpha is one hop of the Swing paper's SST setup (Sec. 5: 100 ns link + 300 ns per-hop).

    Raises:
        Nothing: a record of three numbers, not checked.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.2 (T(n) = alpha + n beta, the gamma term of reductions) and
    Sec. 5 (the SST latencies); docs/cost.md (``time_s``).

    >>> CostParams().alpha, CostParams(alpha=1e-6).beta
    (4e-07, None)
    """

    alpha: float = 400e-9
    gamma: float = 0.0
    beta: float | None = None


@dataclass(frozen=True)
class CostReport:
    """The metrics of :func:`analyze` (see the module docstring for their definitions).

    Attributes:
        algorithm, collective, topology, ranks: what was analyzed (ranks = p = N).
        steps, t_l_steps: the number of steps (T_L in units of alpha).
        bytes_per_rank: the most data one rank sends over the schedule, a multiple of the vector size.
        latency_deficiency, bandwidth_deficiency, congestion_deficiency: Lambda, Psi, Xi (dimensionless).
        t_b_m_over_b: T_B in units of M/B (M the vector size, B the node bandwidth), or None when not computed.
        port_time: float64 (S,), per step, the port time as a fraction of n per port.
        reduce_time: float64 (S,), per step, the largest fraction of n one rank reduces.
        link_bound: float64 (S,), per step, max over links of load / bandwidth, s per byte of the vector; or None.
        link_bandwidth: the median link bandwidth, bytes/s (beta = 1 / it in :meth:`time`).
        alltoall_time_m_over_b: all-to-all time in units of m / b (all-to-all schedules), or None.

    Raises:
        Nothing: a record built by :func:`analyze`.

    Source: docs/cost.md (the keys of ``directcoll cost --json``); Swing (De Sensi et al., NSDI'24) Sec. 2.2,
    Eq. (1); Zhao et al. (NSDI'25) Sec. 3.2.

    >>> from directcoll.algorithms.ring import build_ring
    >>> from directcoll.topology import parse
    >>> r = analyze(build_ring(parse("ring:4")), parse("ring:4"))
    >>> r.steps, r.bytes_per_rank, r.bandwidth_deficiency, r.t_b_m_over_b
    (6, 1.5, 1.0, 1.5)
    """

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
        """alpha-beta-gamma time without contention, seconds, for one or many vector sizes (bytes).

        time(n) = steps alpha + n beta sum(port_time) + n gamma sum(reduce_time), beta defaulting to 1 / the
        median link bandwidth.

        Args:
            size_bytes: a vector size or an array of them, bytes.
            params: alpha (s), gamma (s/byte), beta (s/byte) or None.

        Returns:
            float64 of the shape of ``size_bytes``, seconds.

        Raises:
            Nothing: the report's arrays come from :func:`analyze` (link bandwidths are positive).

        Source: Swing (De Sensi et al., NSDI'24) Sec. 2.2 (T(n) = alpha + n beta per message, gamma for
        reductions); docs/cost.md (``time_s``).

        >>> from directcoll.algorithms.ring import build_ring
        >>> from directcoll.topology import parse
        >>> r = analyze(build_ring(parse("ring:4")), parse("ring:4"))
        >>> (r.time([0, 2**20]) * 1e6).round(3).tolist()  # microseconds: 6 x 400 ns, then + 1.5 MiB at 100 GB/s
        [2.4, 18.129]
        """
        beta = params.beta if params.beta is not None else 1.0 / self.link_bandwidth
        size = np.asarray(size_bytes, dtype=float)
        return (self.steps * params.alpha + size * beta * self.port_time.sum()
                + size * params.gamma * self.reduce_time.sum())

    def to_dict(self) -> dict:
        """The scalar metrics by name (the per-step arrays left out). Raises: Nothing. Source: docs/cost.md."""
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

    Returns:
        the time in units of m / b (float); m the per-pair shard in bytes, b in bytes/s.

    Raises:
        ScheduleError: not an all-to-all schedule.
        TopologyError: a rank count other than the topology's compute nodes, or a route with a link id outside
            the topology.
        ResourceError: minimal routing needs more BFS work or memory than allowed
            (:func:`directcoll.topology.routing.link_loads`).

    Source: Basu et al. (HPDC'24) Sec. 2.2 (shards of m bytes, link bandwidth b, throughput (N-1)m/T) and Sec.
    3.1.1, eq. (1)-(5) (the max concurrent flow F); docs/alltoall.md.

    >>> from directcoll.algorithms.alltoall.direct import direct_alltoall
    >>> from directcoll.topology import parse
    >>> alltoall_time_m_over_b(direct_alltoall(4), parse("ring:4"))  # = 1 / F: 8 links carry 16 shard-hops
    2.0
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

    Returns:
        :class:`CostReport`: sizes as fractions of the vector, T_B in units of M/B.

    Raises:
        TopologyError: the schedule's rank count differs from the topology's compute nodes.
        ResourceError: the schedule's arrays and the per-transfer work arrays (:data:`ANALYZE_BYTES_PER_TRANSFER`)
            need more memory than the budget, or hop distances or link loads need more BFS work or memory than
            allowed (:func:`directcoll.topology.paths.hop_distance`, :func:`directcoll.topology.routing.link_loads`).

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.2, Eq. (1) (Lambda, Psi, Xi) and Sec. 4.1 (Xi from the
    distance-weighted bandwidth term); Zhao et al. (NSDI'25) Sec. 3.2 (T_L, T_B); docs/cost.md.

    >>> from directcoll.algorithms.ring import build_ring
    >>> from directcoll.topology import parse
    >>> r = analyze(build_ring(parse("ring:8")), parse("ring:8"))
    >>> r.steps, round(float(r.latency_deficiency), 3), r.bandwidth_deficiency, r.congestion_deficiency
    (14, 4.667, 1.0, 1.0)
    """
    s, n = schedule, schedule.nranks
    if n != topology.num_compute:
        raise TopologyError(f"schedule has {n} ranks but {topology.spec} has {topology.num_compute} compute nodes")
    held = sum(a.nbytes for a in vars(s).values() if isinstance(a, np.ndarray))  # already resident: counted too
    check_memory(f"analyzing {s.algorithm} on {n:,} ranks ({s.num_transfers:,} transfers)",
                 held + ANALYZE_BYTES_PER_TRANSFER * s.num_transfers)
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


# -- broadcast and reduce: closed forms of the rooted families (one message per rank and step, no contention) --
ROOTED_FORMS = ("binomial", "chain", "scatter-allgather")
#: peak bytes :func:`analyze` adds per transfer (sizes, step-rank keys, hop distances, the schedule's cached
#: per-transfer properties): 156 measured with tracemalloc on bucket, torus:8x8x8x8 (1,835,008 transfers)
ANALYZE_BYTES_PER_TRANSFER = 160


def rooted_time(form: str, ranks: int, size_bytes, alpha: float, beta: float, gamma: float = 0.0, *,
                reduce: bool = False, chunks: int = 1, hops: int | None = None):
    """α-β-γ time of a broadcast (or, with ``reduce``, a reduce) of ``size_bytes`` on ``ranks`` ranks.

    - ``binomial``: ceil(log2 p) steps of the whole vector: ceil(log2 p) (α + n β [+ n γ]).
    - ``chain``: a pipeline of ``hops`` hops (default p - 1) in ``chunks`` chunks: (h + c - 1)(α + (n / c)(β [+ γ])).
    - ``scatter-allgather`` (van de Geijn; reduce: reduce-scatter + gather; p a power of two): 2 log2 p α +
      2 (p - 1)/p n β [+ (p - 1)/p n γ].

    Args:
        form: one of :data:`ROOTED_FORMS`. ranks: p >= 1. size_bytes: n, a number or an array (bytes).
        alpha: s per message; beta: s per byte; gamma: s per byte reduced (reduce only).
        chunks, hops: the chain's c >= 1 and h >= 1.

    Returns:
        Seconds, float64 of ``size_bytes``' shape.

    Raises:
        ValueError: an unknown form, or chunks < 1.

    Source: Thakur, Rabenseifner & Gropp (IJHPCA 2005) Sec. 4.1 and 4.5 (binomial; scatter + allgather); Sanders,
    Speck & Träff (Parallel Computing 2009) Sec. 2 (pipelines); Swing (De Sensi et al., NSDI'24) Sec. 2.2 (α, β, γ).

    >>> round(float(rooted_time("binomial", 8, 1e6, 1e-6, 1e-9)), 9)  # 3 steps of 1 us + 1 ms
    0.003003
    >>> round(float(rooted_time("chain", 8, 1e6, 1e-6, 1e-9, chunks=10)), 9)  # 16 steps of 1 us + 0.1 ms
    0.001616
    """
    n = np.asarray(size_bytes, dtype=float)
    g = gamma if reduce else 0.0
    if form == "binomial":
        steps = int(np.ceil(np.log2(ranks))) if ranks > 1 else 0
        return steps * (alpha + n * (beta + g))
    if form == "chain":
        if chunks < 1:
            raise ValueError(f"chunks must be >= 1, got {chunks}")
        h = ranks - 1 if hops is None else hops
        return (h + chunks - 1) * (alpha + n / chunks * (beta + g))
    if form == "scatter-allgather":
        frac = (ranks - 1) / ranks
        steps = 2 * int(np.ceil(np.log2(ranks))) if ranks > 1 else 0
        return steps * alpha + 2 * frac * n * beta + frac * n * g
    raise ValueError(f"unknown rooted form {form!r}; accepted: {', '.join(ROOTED_FORMS)}")


def chain_chunks(hops: int, size_bytes: float, alpha: float, beta: float, gamma: float = 0.0) -> int:
    """The chunk count c >= 1 that minimises the chain's (h + c - 1)(α + (n / c)(β + γ)): the integer next to
    c* = sqrt((h - 1) n (β + γ) / α) with the smaller time.

    Returns:
        c, an int >= 1 (1 for h <= 1 or n = 0).

    Raises:
        ValueError: alpha <= 0.

    Source: Sanders, Speck & Träff (Parallel Computing 2009) Sec. 2 (the optimal pipeline granularity).

    >>> chain_chunks(16, 2**20, 1e-6, 1e-9)  # c* = sqrt(15 x 1.05 ms / 1 us)
    125
    """
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    if hops <= 1 or size_bytes <= 0:
        return 1
    best = np.sqrt((hops - 1) * size_bytes * (beta + gamma) / alpha)
    cands = {max(1, int(np.floor(best))), max(1, int(np.ceil(best)))}
    return min(sorted(cands), key=lambda c: (hops + c - 1) * (alpha + size_bytes / c * (beta + gamma)))


def elimination_allreduce_cost(p: int) -> tuple[int, float, float]:
    """Closed-form cost of Rabenseifner's allreduce with 3-2 elimination on p ranks (one port, no contention).

    With n = floor(log2 p) and z0 the lowest 1 bit of p (the first round with a 3-2 elimination), the overlapped
    reduce-scatter takes ceil(log2 p) steps whose largest messages are m/2, m/4, ..., m/2^n plus, from the first
    elimination on, one extra message of m/2^(z0+1) (a merged unit stays one step late); the allgather mirrors it
    without reductions:

        T(m) = 2 ceil(log2 p) alpha + 2 B m beta + B m gamma,   B = 1 - 1/2^n + [p not a power of two] / 2^(z0+1).

    B <= 3/2 - 1/2^n, with equality for odd p: the published cost of 3-2 elimination, the Swing paper's
    "bandwidth deficiency [...] 3/2" (Sec. 2.3.3); for a power of two it is Rabenseifner's 2 log2 p alpha +
    2 (p-1)/p m beta + (p-1)/p m gamma. The schedule is :mod:`directcoll.algorithms.elimination`.

    Args:
        p: number of ranks, >= 1.

    Returns:
        (steps, bandwidth, reduction): steps (the alpha count), and the sums over steps of the largest message and
        of the largest reduction, as fractions of the vector m (the beta and gamma coefficients); the same
        quantities :func:`analyze` measures as ``steps``, ``port_time.sum()`` and ``reduce_time.sum()``.

    Raises:
        ValueError: p < 1 (a built-in error: arithmetic on p).

    Source: Rabenseifner & Traeff (EuroPVM/MPI 2004), 3-2 elimination (ceil(log2 p) rounds); Swing (De Sensi et al.,
    NSDI'24) Sec. 2.3.3.

    >>> elimination_allreduce_cost(5), elimination_allreduce_cost(6)  # B = 3/2 - 1/4; B = 1 - 1/4 + 1/4
    ((6, 2.5, 1.25), (6, 2.0, 1.0))
    """
    if p < 1:
        raise ValueError(f"elimination_allreduce_cost: p must be >= 1, got {p}")
    n = p.bit_length() - 1
    z0 = (p & -p).bit_length() - 1
    half = 1.0 - 2.0 ** -n + (2.0 ** -(z0 + 1) if p & (p - 1) else 0.0)
    return 2 * (n + (1 if p & (p - 1) else 0)), 2 * half, half
