"""The congestion-aware step model (docs/architecture.md "Cost and simulation").

Every step is timed on its own (bulk-synchronous). Each transfer is routed over the topology (adaptive: split
evenly over all minimal paths; dor: dimension order; or the schedule's explicit route), the bytes of all
transfers of the step are added on every directed link, and transfer i takes

    T_i(n) = alpha + sum over its path of (link latency + per-hop latency)            [latency, s]
           + n * max over its links e of (load_e / bandwidth_e)                       [congestion, s]
           (+ n * gamma * data the receiver reduces in the step; host-injection limits; see NetworkParams)

with loads per byte of the vector, so the step lasts max_i T_i(n). The adaptive-routing latency is the
share-weighted mean over the minimal paths, which all have the same hop count. Because loads scale with the
vector size n, the lines (a_i, b_i) of a step are computed once and any number of sizes are timed in closed
form: time(n) = sum over steps of max_i (a_i + b_i n). Only the Pareto-maximal lines are kept. Packet headers
and store-and-forward add the terms of :class:`PacketTerms` (docs/simulation.md, "Packets in the models").

Source: docs/architecture.md, "Cost and simulation"; docs/simulation.md, "Step model". The latency + bandwidth form is
the alpha-beta model of Swing (De Sensi et al., NSDI'24) Sec. 2.2, with beta replaced per transfer by its most loaded
link (congestion, Sec. 4.1) and minimal adaptive routing as in its Sec. 2.2 and Sec. 6, "Routing Impact".
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from directcoll.resources import memory_budget
from directcoll.schedule.ir import Schedule
from directcoll.schedule.pattern import StepPattern
from directcoll.simulate.params import NetworkParams
from directcoll.simulate.routes import link_values, prepare, step_routes
from directcoll.topology.model import Topology
from directcoll.topology.routing import RouteEntries, route_entries, route_hops, route_pattern, uniform_offsets


@dataclass(frozen=True)
class StepLines:
    """The timing lines of one distinct step and what the per-step breakdown reports.

    Attributes:
        latency: float64 (K,), a_i in s, of the Pareto-maximal lines (K = 0 for a step without cost).
        slope: float64 (K,), b_i in s per byte of the vector.
        max_link_load: the most loaded link's load, bytes per byte of the vector.
        max_link: its link id (-1 for a step without network transfers).
        hops_max: the longest route of the step, hops (share-weighted mean over the minimal paths).

    Raises:
        Nothing: a record built by :func:`step_lines`.

    Source: docs/simulation.md, "Step model" (a step is a set of lines a_i + b_i n).

    >>> import numpy as np
    >>> lines = StepLines(np.array([1e-6]), np.array([1e-9]), 1.0, 0, 1.0)
    >>> (lines.time(np.array([0.0, 1000.0])) * 1e6).round(6).tolist()  # microseconds
    [1.0, 2.0]
    """

    latency: np.ndarray          # a_i, s (Pareto-maximal lines only)
    slope: np.ndarray            # b_i, s per byte of the vector
    max_link_load: float         # the most loaded link's load, bytes per byte of the vector
    max_link: int                # its id (-1 for an empty step)
    hops_max: float              # the longest route of the step
    packets: PacketTerms | None = None   # per line, when packet headers or store-and-forward are modelled
    rendezvous: Rendezvous | None = None  # per line, when the implementation has an eager threshold
    forks: Forks | None = None            # per line, when its receiver pays a cost per reduction on one thread
    short: ShortTransfers | None = None   # the step's time while every transfer passes each link as one unit

    def time(self, sizes: np.ndarray) -> np.ndarray:
        """float64 (S,): the step's time in s, max_i T_i(n), for every vector size n of ``sizes`` (S,) in bytes
        (zeros for a step without lines): T_i(n) = a_i + b_i n, plus :class:`PacketTerms` where modelled.
        Raises: Nothing. Source: docs/simulation.md, "Step model" and "Packets in the models"."""
        if not len(self.latency):
            return np.zeros_like(sizes, dtype=float)
        n = sizes[None, :]
        t = self.latency[:, None] + self.slope[:, None] * n
        if self.packets is not None:
            t = t + self.packets.time(n)
        if self.rendezvous is not None:
            t = t + self.rendezvous.time(n)
        if self.forks is not None:
            t = t + self.forks.time(n)
        t = t.max(axis=0)
        if self.short is not None:  # transfers that pass each link as one unit: the links' queues may save time
            small = sizes <= self.short.upto
            t[small] = np.minimum(self.short.time(sizes[small]), t[small])
        return t


@dataclass(frozen=True)
class ShortTransfers:
    """A step's time while each of its transfers passes every link of its route as one unit (vector sizes up to
    ``upto`` bytes): a transfer of at most one packet, or one whose serialisation on each link is at most its
    route's latency per hop, so that it has left a link before the transfers one hop behind it reach it. Each
    transfer reaches a link after the route's latency up to that link, and each link sends what reaches it
    first come, first served (its output queue), so the link's busy period over those arrivals, not its whole
    load after the whole route's latency, sets when the last transfer through it leaves. A transfer that waits
    at one link reaches the next later than the model assumes (queueing upstream is not carried forward), which
    puts this time below the truth where upstream links queue; it is never above the step's lines.

    The arrivals are kept per link and arrival time (a group: packets that reach a link at once) and timed at
    each size by Lindley's recursion, F_h = max(F_(h-1), arrival_h) + work_h(n) over a link's groups in order,
    which stays linear in the groups (all the lines a_g + work_(g..h)(n) of every pair g <= h would be quadratic).
    A group's work is ``fixed + rate n`` plus the headers of its transfers' further packets,
    ``max(0, header_rate n - fixed)`` (one header a packet, as :class:`PacketTerms`; exact for a group of
    transfers of one size).

    Attributes:
        by_position: int64 (G,): the groups ordered by their place among their link's groups (0: the first).
        bounds: int64 (P + 1,): ``by_position[bounds[p]:bounds[p + 1]]`` are the groups in place p.
        arrive, fixed, rate: float64 (G,): each group's arrival (s) and work, ``fixed + rate * n`` (s, s per
            byte of the vector: one header a transfer, and the payload), in link order: group i - 1 is the one
            before i on the same link when i is not in place 0.
        header_rate: float64 (G,): the group's headers if each transfer carried one per packet of its payload, s
            per byte of the vector.
        group, tail, reduce: the tails (T,): a packet of group ``group`` is done ``tail + reduce * n`` after its
            link sends the group's last byte (its remaining hops, its receiver's reduction).
        upto: the largest vector size (bytes) at which every transfer passes each link as one unit.
        forks: the per-reduction costs of each tail's receiver (:class:`Forks`), or None.

    Raises:
        Nothing: a record built by :func:`step_lines`.

    Source: docs/simulation.md, "Step model" (short transfers); Lindley's recursion for a first-come,
    first-served queue.

    >>> import numpy as np
    >>> one = ShortTransfers(np.arange(2), np.array([0, 1, 2]), np.array([0.0, 1e-6]), np.zeros(2),
    ...                      np.array([1e-9, 1e-9]), np.zeros(2), np.array([1]), np.array([1e-7]), np.zeros(1), 4096.0)
    >>> (one.time(np.array([100.0, 2000.0])) * 1e6).round(6).tolist()  # the second group waits past 1 us
    [1.2, 4.1]
    """

    by_position: np.ndarray
    bounds: np.ndarray
    arrive: np.ndarray
    fixed: np.ndarray
    rate: np.ndarray
    header_rate: np.ndarray
    group: np.ndarray
    tail: np.ndarray
    reduce: np.ndarray
    upto: float
    forks: Forks | None = None

    def time(self, sizes: np.ndarray) -> np.ndarray:
        """float64 (S,): the step's time at vector sizes n (S,) in bytes, s. Raises: Nothing. Source: as the
        class."""
        n, fixed = sizes[None, :], self.fixed[:, None]
        work = fixed + self.rate[:, None] * n + np.maximum(self.header_rate[:, None] * n - fixed, 0.0)
        done = lindley(self.by_position, self.bounds, self.arrive[:, None], work)
        t = done[self.group] + self.tail[:, None] + self.reduce[:, None] * sizes[None, :]
        if self.forks is not None:
            t = t + self.forks.time(sizes[None, :])
        return t.max(axis=0)


@dataclass(frozen=True)
class Forks:
    """The per-reduction costs of a step's lines: the receiver of a line, reducing on its only thread, pays
    ``cost`` for each of its reductions of the step larger than ``threshold`` bytes (the implementation's
    ``reduction_overhead`` and ``reduction_threshold``).

    Attributes:
        kind: int64 (K,), each line's receiver's kind: receivers of one kind make the same reductions.
        keys: float64 (P,), sorted: each kind k's reductions as ``k + piece / 2`` (piece: the fraction of the vector
            a reduction takes, in (0, 1]), so that one sorted array holds every kind's pieces in order.
        kinds: the number of kinds.
        threshold: bytes.
        cost: s per reduction.

    Raises:
        Nothing: a record built by :func:`step_lines`.

    Source: docs/simulation.md, "Hosts and implementations" (reductions on one thread).

    >>> import numpy as np
    >>> f = Forks(np.array([0]), np.array([0.125, 0.25]), 1, 4096.0, 1e-5)  # one kind: halves and quarters
    >>> (f.time(np.array([[8192.0, 65536.0]])) * 1e6).round(6).tolist()  # 4 KiB + 2 KiB, then 32 + 16 KiB
    [[0.0, 20.0]]
    """

    kind: np.ndarray
    keys: np.ndarray
    kinds: int
    threshold: float
    cost: float

    def time(self, n: np.ndarray) -> np.ndarray:
        """float64 (K, S): the cost of each line's receiver's reductions over the threshold at vector sizes n
        (1, S) in bytes, s. Raises: Nothing. Source: as the class."""
        with np.errstate(divide="ignore"):
            smallest = np.clip(self.threshold / n.ravel(), 0.0, 1.0)  # the largest piece that does not pay
        k = np.arange(self.kinds, dtype=float)[:, None]
        end = np.searchsorted(self.keys, k + 0.5, side="right")
        over = end - np.searchsorted(self.keys, (k + smallest / 2).ravel(), side="right").reshape(len(k), -1)
        return self.cost * over[self.kind]


@dataclass(frozen=True)
class Rendezvous:
    """The rendezvous terms of a step's lines: a transfer of s n bytes above the implementation's eager
    threshold first sends a request and waits for the reply, one round trip (twice its latency) more.

    Attributes:
        handshake: float64 (K,), s, the round trip of each line.
        piece: float64 (K,), s, each line's transfer as a fraction of the vector.
        threshold: bytes; messages larger than it use the rendezvous.

    Raises:
        Nothing: a record built by :func:`step_lines`.

    Source: docs/simulation.md, "Hosts and implementations" (eager and rendezvous protocols).

    >>> import numpy as np
    >>> r = Rendezvous(np.array([2e-6]), np.array([0.5]), 1024.0)
    >>> (r.time(np.array([[1024.0, 4096.0]])) * 1e6).tolist()  # 512 B is eager, 2 KiB is not
    [[0.0, 2.0]]
    """

    handshake: np.ndarray
    piece: np.ndarray
    threshold: float

    def time(self, n: np.ndarray) -> np.ndarray:
        """float64 (K, S): the handshake of every line whose message is over the threshold at vector sizes n (1, S)
        in bytes, s. Raises: Nothing. Source: as the class."""
        return self.handshake[:, None] * (self.piece[:, None] * n > self.threshold)


@dataclass(frozen=True)
class PacketTerms:
    """The packet terms of a step's lines (docs/simulation.md, "Packets in the models"): for a transfer of
    s n bytes (s: its fraction of the vector, n: the vector size) over h hops, headers add
    ``max(c, d n)`` (its congestion term grown by ``packet_header * max(1, s n / packet_size)`` wire bytes)
    and store-and-forward adds ``f min(s n, packet_size)`` (one packet's payload per further hop).

    Attributes:
        header_fixed, header_rate: c in s and d in s per byte of the vector, (K,) each.
        fill: f, (h - 1) times the mean of 1 / bandwidth over the route, s per byte, (K,).
        piece: s, the transfer's fraction of the vector, (K,).
        packet_size: payload bytes per packet.

    Raises:
        Nothing: a record built by :func:`step_lines`.

    Source: docs/simulation.md, "Packets in the models"; the pipelining of packets over hops in
    :mod:`directcoll.simulate.packet`.

    >>> import numpy as np
    >>> terms = PacketTerms(np.zeros(1), np.zeros(1), np.array([1e-9]), np.ones(1), 4096)
    >>> (terms.time(np.array([[1024.0, 1e6]])) * 1e9).round(3).tolist()  # ns: 1 KiB, then one 4 KiB packet
    [[1024.0, 4096.0]]
    """

    header_fixed: np.ndarray
    header_rate: np.ndarray
    fill: np.ndarray
    piece: np.ndarray
    packet_size: int

    def time(self, n: np.ndarray) -> np.ndarray:
        """float64 (K, S): the terms for vector sizes n (1, S) in bytes, s. Raises: Nothing. Source: as the class."""
        c, d, f, s = (x[:, None] for x in (self.header_fixed, self.header_rate, self.fill, self.piece))
        return np.maximum(c, d * n) + f * np.minimum(s * n, self.packet_size)


@dataclass(frozen=True)
class SimulatedSchedule:
    """A schedule routed once; :meth:`time` sweeps vector sizes in closed form.

    Attributes:
        pattern: the step pattern simulated (distinct steps, their sequence and multiplicity).
        steps: one :class:`StepLines` per distinct step.
        routing: the routing mode it was routed with (``adaptive`` or ``dor``).
        params: the network parameters used.

    Raises:
        Nothing: a record built by :func:`simulate`.

    Source: docs/architecture.md, "Cost and simulation" (route once per schedule, sweep sizes in closed form).

    >>> from directcoll.algorithms.ring import ring_reduce_scatter
    >>> from directcoll.topology import parse
    >>> sim = simulate(ring_reduce_scatter(range(4)), parse("ring:4"))
    >>> len(sim.steps), sim.routing
    (1, 'adaptive')
    """

    pattern: StepPattern
    steps: list[StepLines]
    routing: str
    params: NetworkParams

    def time(self, sizes) -> np.ndarray:
        """Completion time in seconds for every vector size (bytes); same shape as ``sizes``.

        time(n) = sum over the schedule's steps of max_i (a_i + b_i n) (the module docstring), each distinct
        step counted by its multiplicity.

        Args:
            sizes: a number or an array of vector sizes, bytes.

        Returns:
            a float (s) for a scalar ``sizes``, else float64 of the shape of ``sizes`` (s).

        Raises:
            Nothing: the schedule was routed by :func:`simulate`; sizes that are not numbers raise numpy's errors.

        Source: docs/simulation.md, "Step model" (closed-form sweep of sizes).

        >>> from directcoll.algorithms.ring import ring_reduce_scatter
        >>> from directcoll.topology import parse
        >>> sim = simulate(ring_reduce_scatter(range(4)), parse("ring:4"), NetworkParams(link_bandwidth=1e9))
        >>> (sim.time([0, 4e6]) * 1e6).round(3).tolist()  # microseconds: 3 steps of 100 ns + 1 MB / 1 GB/s
        [0.3, 3000.3]
        """
        n = np.atleast_1d(np.asarray(sizes, dtype=float)).ravel()
        per_distinct = np.array([s.time(n) for s in self.steps]).reshape(len(self.steps), len(n))
        total = (self.pattern.multiplicity[:, None] * per_distinct).sum(axis=0)
        total = total + call_cost(self.params.implementation, self.pattern, n)  # once per call
        return total.reshape(np.shape(sizes)) if np.ndim(sizes) else float(total[0])

    def breakdown(self, size: float) -> list[dict]:
        """Per step of the schedule (in order): the most loaded link, its load in bytes, hops, time.

        Args:
            size: the vector size, bytes.

        Returns:
            list of one dict per step of the schedule (S rows): ``step``, ``distinct_step``, ``bytes_max_link``
            (bytes on the most loaded link), ``max_link`` (its id, -1 if none), ``hops_max`` (hops) and
            ``time_s`` (s).

        Raises:
            Nothing: the schedule was routed by :func:`simulate`.

        Source: docs/simulation.md, "Step model" (``directcoll simulate --json``: steps[] with bytes_max_link,
        hops_max, time_s).

        >>> from directcoll.algorithms.ring import ring_reduce_scatter
        >>> from directcoll.topology import parse
        >>> row = simulate(ring_reduce_scatter(range(4)), parse("ring:4")).breakdown(1024)[0]
        >>> row["bytes_max_link"], row["hops_max"]
        (256.0, 1.0)
        """
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
               routes=None, ports: int = 1) -> StepLines:
    """Timing lines of one step (see the module docstring); sizes are fractions of the vector.

    Args:
        topology: the network.
        src, dst: int (T,) ranks of the step's transfers (src == dst: a local copy or reduction, no link).
        size: float (T,) transfer sizes, fractions of the vector.
        reduce: bool (T,) whether the receiver reduces the data (costs gamma per byte).
        params: network parameters (alpha, per-hop latency, gamma, host injection, forwarding, link overrides).
        routing: ``adaptive`` or ``dor`` for transfers without an explicit route.
        routes: optional explicit routes of all T transfers (offsets (T + 1,), links), as :func:`step_routes`.
        ports: the ports the schedule uses (its ``meta["ports"]``): how many threads an implementation that runs
            one per port has (``params.implementation``, docs/simulation.md, "Hosts and implementations").

    Returns:
        :class:`StepLines`: a_i in s, b_i in s per byte of the vector (Pareto-maximal lines only), the most
        loaded link and its load per byte of the vector, the longest route in hops.

    Raises:
        TopologyError: an unknown routing, a routing the topology cannot do (dor without a grid), an empty
            explicit route or one with a link id outside the topology (:func:`route_entries`).

    Source: docs/architecture.md, "Cost and simulation"; docs/simulation.md, "Step model", item 3 (T_i(n) = alpha + sum
    of latencies + n max_e load_e / bandwidth_e).

    >>> from directcoll.topology import parse
    >>> lines = step_lines(parse("ring:4"), [0, 1], [2, 2], [0.5, 0.5], [False, False], NetworkParams())
    >>> lines.max_link, lines.max_link_load, lines.hops_max  # link 1 -> 2 carries 1/4 + 1/2 of the vector
    (2, 0.75, 2.0)
    """
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    size, reduce = np.asarray(size, dtype=float), np.asarray(reduce, dtype=bool)
    n = topology.num_compute
    impl = params.implementation
    threads = impl.reduction_threads(ports)
    gamma = (params.gamma if impl.gamma is None else impl.gamma) / threads  # a rank's reductions, on its threads
    reduced = np.bincount(dst, weights=size * reduce, minlength=n)  # local reductions cost gamma too
    forks = _reductions(dst, size, reduce, n, impl) if impl.forks(ports) else None  # a kind per rank
    net = src != dst  # local copies and reductions use no link
    # messages each rank posts and takes in the step: its threads post them one after another (LogGP's o)
    posted = np.bincount(src[net], minlength=n), np.bincount(dst[net], minlength=n)
    if routes is not None and not net.all():
        offsets, links = routes
        keep = np.flatnonzero(net)
        counts = np.diff(offsets)[keep]
        idx = np.repeat(offsets[:-1][keep] - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(counts.sum())
        routes = (np.r_[0, np.cumsum(counts)], links[idx])
    src, dst, size, reduce = src[net], dst[net], size[net], reduce[net]
    if not len(src):
        if forks is not None:  # every rank's reductions, each a line of its own
            return _lines([np.zeros(n), reduced * gamma], 0.0, -1, 0.0, impl, params, forks=forks)
        busy = reduced.max() * gamma
        return StepLines(np.zeros(1), np.full(1, busy), 0.0, -1, 0.0) if busy else StepLines(
            np.zeros(0), np.zeros(0), 0.0, -1, 0.0)
    bw, lat = link_values(topology, params)
    bw = bw * impl.bandwidth_efficiency  # the share of the link rate the implementation's messages reach
    if params.host_injection:  # the network term is the slower of the links and the host's injection
        inject = params.host_injection * impl.bandwidth_efficiency
        sent = np.bincount(src, weights=size, minlength=n) / inject
        recv = np.bincount(dst, weights=size, minlength=n) / inject
    src, dst, size, reduce, entries, loads = _routed(topology, src, dst, size, reduce, bw, lat, routing, routes,
                                                     bool(net.all()))
    idx, link, share = entries.transfer, entries.link, entries.share
    ratio = loads / bw
    starts = np.flatnonzero(np.r_[True, idx[1:] != idx[:-1]])
    slope = np.maximum.reduceat(ratio[link], starts)
    hops = np.add.reduceat(share, starts)
    before = np.full(len(hops), params.alpha)  # what a transfer waits before its first link
    if impl.message_overhead:
        before = before + impl.message_overhead * np.ceil(np.maximum(posted[0][src], posted[1][dst]) / threads)
    latency = before + np.add.reduceat(share * lat[link], starts) + hops * params.per_hop_latency
    if params.host_injection:
        slope = np.maximum(slope, np.maximum(sent[src], recv[dst]))
    terms = None
    header, saf = params.packet_header, params.forwarding == "store-and-forward"
    if header or saf:
        inv_bw = np.add.reduceat(share / bw[link], starts) / hops      # mean s per byte over the route
        latency = latency + (hops - 1) * header * inv_bw               # every further hop: the header at least
        fixed = np.where(size > 0, slope * header / np.where(size > 0, size, 1.0), header * inv_bw)
        terms = np.column_stack([fixed, slope * header / params.packet_size,
                                 (hops - 1) * inv_bw if saf else np.zeros(len(hops)), size])
    if gamma:  # then the receiver reduces what it got
        slope = slope + gamma * reduced[dst]
    top = int(np.argmax(loads))
    forks = None if forks is None else replace(forks, kind=forks.kind[dst])  # a kind per transfer
    lines = _lines([latency, slope], float(loads[top]), top, float(hops.max()), impl, params, terms=terms,
                   size=size, forks=forks)
    if (entries.hop is None or saf or params.host_injection or impl.eager_threshold is not None
            or not (size > 0).any() or len(entries.link) > SHORT_MAX_ENTRIES):
        return lines
    reducing = gamma * reduced[dst] if gamma else np.zeros(len(dst))
    return replace(lines, short=_short_transfers(entries, before, latency, hops, size, reducing, bw, header,
                                                 params.packet_size, forks))


def _short_transfers(entries: RouteEntries, before, latency, hops, size, reducing, bw, header: float,
                     packet_size: int, forks=None) -> ShortTransfers:
    """:class:`ShortTransfers` of a step: each transfer t reaches the link of its route entry at hop h at
    ``before_t + h c_t`` (c_t: its route's latency per hop) with ``share (header + size_t n) / bandwidth`` of
    work (a header per packet beyond the first), and is done ``(hops_t - h) c_t`` after that link sends its
    last byte, plus its receiver's reduction (``reducing``, s per byte of the vector). Per link, transfers that
    arrive at one time form a group. The regime ends where a transfer grows past one packet and past c_t of
    serialisation on one of its links. ``forks``: the receivers' per-reduction costs (:class:`Forks`, a kind per
    transfer), kept per tail."""
    t, link, share, hop = entries.transfer, entries.link, entries.share, entries.hop
    per_hop = (latency - before) / np.maximum(hops, 1e-300)
    arrive = before[t] + hop * per_hop[t]
    tail = (hops[t] - hop) * per_hop[t]
    fixed, rate = share * header / bw[link], share * size[t] / bw[link]
    header_rate = rate * header / packet_size
    upto = float(short_limits(t, rate + header_rate, per_hop, size, packet_size).min())
    ticks = np.rint(arrive * 1e13).astype(np.int64)  # equal arrivals up to 0.1 ps form one group
    ticks -= ticks.min()
    span = int(ticks.max()) + 1
    # by link, then arrival: one sort of a combined key where it fits in 63 bits (three times a lexsort's speed)
    order = np.argsort(link * span + ticks) if int(link.max()) < (1 << 62) // span else np.lexsort((ticks, link))
    receiver = np.zeros(len(t), dtype=np.int64) if forks is None else forks.kind[t]
    link, ticks, arrive, tail, fixed, rate, header_rate, red, receiver = (
        x[order] for x in (link, ticks, arrive, tail, fixed, rate, header_rate, reducing[t], receiver))
    first, new_link, position = link_groups(link, ticks)
    work = (arrive[first], *(np.add.reduceat(x, first) for x in (fixed, rate, header_rate)))
    if forks is None and (np.maximum.reduceat(red, first) == np.minimum.reduceat(red, first)).all():
        # one reduction per group (symmetric steps, or none): its longest tail is the group's only one; links
        # with the same groups in the same order (every translate of a link, on a torus) are timed once
        groups = np.column_stack([*work, np.maximum.reduceat(tail, first), red[first]])
        keep = _distinct_links(groups, position, new_link)
        groups = groups[keep]
        return ShortTransfers(*by_place(position[keep]), *groups[:, :4].T, np.arange(len(groups)),
                              *groups[:, 4:].T, upto)
    group = np.repeat(np.arange(len(first)), np.diff(np.r_[first, len(link)]))
    tails = np.unique(np.column_stack([group, tail, red, receiver]), axis=0)  # each group's distinct tails
    extra = None if forks is None else replace(forks, kind=tails[:, 3].astype(np.int64))
    return ShortTransfers(*by_place(position), *work, tails[:, 0].astype(np.int64), tails[:, 1], tails[:, 2],
                          upto, extra)


def short_limits(transfer: np.ndarray, work: np.ndarray, per_hop: np.ndarray, size: np.ndarray,
                 packet_size: int) -> np.ndarray:
    """float64 (T,): the largest vector size (bytes) at which each transfer passes every link of its route as one
    unit: its bytes are at most one packet, or take at most its route's latency per hop on each of its links
    (inf for a transfer of no bytes).

    Args:
        transfer: int64 (K,), each route entry's transfer. work: float64 (K,), the entry's time on its link, s per
            byte of the vector (its share of the transfer's bytes and headers over the link's bandwidth).
        per_hop: float64 (T,), each transfer's route latency per hop, s. size: float64 (T,), each transfer's
            fraction of the vector. packet_size: bytes of payload a packet.

    Raises:
        Nothing.

    Source: docs/simulation.md, "Step model", item 4 (short transfers).

    >>> short_limits(np.array([0, 0]), np.array([1e-11, 2e-11]), np.array([4e-7]), np.array([0.5]), 4096).tolist()
    [20000.0]
    """
    within = np.full(len(size), np.inf)
    carried = work > 0
    np.minimum.at(within, transfer[carried], per_hop[transfer[carried]] / work[carried])
    sized = size > 0
    return np.where(sized, np.maximum(packet_size / np.where(sized, size, 1.0), within), np.inf)


def link_groups(link: np.ndarray, ticks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The arrival groups of route entries sorted by link, then arrival (``ticks``: integer arrival times): the
    index of each group's first entry, whether it opens its link, and its place among its link's groups (0: the
    first). Raises: Nothing. Source: docs/simulation.md, "Step model", item 4.

    >>> [x.tolist() for x in link_groups(np.array([3, 3, 3, 5]), np.array([0, 0, 4, 1]))]
    [[0, 2, 3], [True, False, True], [0, 1, 0]]
    """
    first = np.flatnonzero(np.r_[True, (link[1:] != link[:-1]) | (ticks[1:] != ticks[:-1])])
    g_link = link[first]
    new_link = np.r_[True, g_link[1:] != g_link[:-1]]
    position = np.arange(len(first)) - np.maximum.accumulate(np.where(new_link, np.arange(len(first)), 0))
    return first, new_link, position


def lindley(by_position: np.ndarray, bounds: np.ndarray, arrive: np.ndarray, work: np.ndarray) -> np.ndarray:
    """When each link sends the last byte of each of its arrival groups, first come, first served: Lindley's
    recursion F_g = max(F_(g-1), arrival_g) + work_g over a link's groups in place order, all links at once.

    Args:
        by_position, bounds: the groups by place and each place's bounds (:func:`by_place`); group i - 1 is the
            one before i on its link when i is not in place 0.
        arrive: float64 (G,) or (G, 1), s. work: float64 (G,) or (G, S), s (S: sizes timed at once).

    Returns:
        float64 of ``work``'s shape, s.

    Raises:
        Nothing.

    Source: docs/simulation.md, "Step model", item 4; Lindley's recursion for a first-come-first-served queue.

    >>> lindley(np.arange(2), np.array([0, 1, 2]), np.array([0.0, 1.0]), np.array([2.0, 1.0])).tolist()
    [2.0, 3.0]
    """
    done = np.empty(np.broadcast_shapes(np.shape(arrive), np.shape(work)))
    for p in range(len(bounds) - 1):
        sel = by_position[bounds[p]:bounds[p + 1]]
        done[sel] = (arrive[sel] if p == 0 else np.maximum(arrive[sel], done[sel - 1])) + work[sel]
    return done


def by_place(position: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(groups ordered by their place among their link's groups, the bounds of each place in that order): what
    :func:`lindley` walks. Raises: Nothing. Source: docs/simulation.md, "Step model", item 4.

    >>> [x.tolist() for x in by_place(np.array([0, 1, 0]))]
    [[0, 2, 1], [0, 2, 3]]
    """
    by_position = np.argsort(position, kind="stable")
    return by_position, np.searchsorted(position[by_position], np.arange(position.max() + 2))


def _distinct_links(groups: np.ndarray, position: np.ndarray, new_link: np.ndarray) -> np.ndarray:
    """bool (G,): the groups of one link of each distinct sequence of groups (rows of ``groups``, in place order
    ``position``; ``new_link`` marks each link's first group): a link whose groups repeat another's adds nothing
    to the step's time."""
    link = np.cumsum(new_link) - 1
    width = int(position.max()) + 1
    table = np.full((int(link[-1]) + 1, width * groups.shape[1]), np.nan)
    for j in range(groups.shape[1]):  # each link's groups side by side, NaN-padded to the longest
        table[link, j * width + position] = groups[:, j]
    bits = np.nan_to_num(table, nan=-1.0).view(np.uint64)
    # one 64-bit hash per link (its bits times odd constants, wrapping), then checked: every link must equal the
    # first link of its hash; a collision, never seen, falls back to comparing whole rows
    mix = np.random.default_rng(0).integers(1, 1 << 63, bits.shape[1], dtype=np.uint64) | np.uint64(1)
    _, first, inverse = np.unique((bits * mix).sum(axis=1, dtype=np.uint64), return_index=True,
                                  return_inverse=True)
    if not (bits[first[inverse.ravel()]] == bits).all():
        _, first = np.unique(bits, axis=0, return_index=True)
    return np.isin(link, first)


def _reductions(dst, size, reduce, n: int, impl) -> Forks:
    """:class:`Forks` of a step with a kind per rank: each rank's reductions (the fractions of the vector its
    reduced transfers carry), ranks with the same ones sharing a kind (symmetric steps: a few), at the
    implementation's threshold and cost. Memory: O(reduced transfers)."""
    keep = reduce & (size > 0)
    dst, size = dst[keep], size[keep]
    order = np.lexsort((size, dst))
    dst, size = dst[order], size[order]
    bounds = np.searchsorted(dst, np.arange(n + 1))
    rows = np.empty(n, dtype=object)
    rows[:] = [size[bounds[r]:bounds[r + 1]].tobytes() for r in range(n)]
    uniq, first, kind = np.unique(rows, return_index=True, return_inverse=True)
    keys = np.concatenate([k + size[bounds[r]:bounds[r + 1]] / 2 for k, r in enumerate(first)] or [np.zeros(0)])
    return Forks(kind.ravel(), np.sort(keys), len(uniq), float(impl.reduction_threshold),
                 float(impl.reduction_overhead))


def _lines(base, max_link_load: float, top: int, hops_max: float, impl, params: NetworkParams, *, terms=None,
           size=None, forks=None) -> StepLines:
    """A step's :class:`StepLines` from each transfer's latency and slope (``base``) and its optional terms: packet
    terms (``terms``), a rendezvous above the eager threshold (``size``) and its receiver's per-reduction costs
    (``forks``: :class:`Forks` with a kind per transfer); lines equal
    in every term are kept once (symmetric steps: a few classes), only the Pareto-maximal ones where there is no
    other term."""
    latency, slope = base
    rendezvous = impl.eager_threshold is not None and size is not None
    if terms is None and not rendezvous and forks is None:
        a, b = _pareto(latency, slope)
        return StepLines(a, b, max_link_load, top, hops_max)
    cols = [latency[:, None], slope[:, None]]
    if terms is not None:
        cols.append(terms)
    if rendezvous:  # a request and a reply before the data, one round trip
        cols.append(np.column_stack([2.0 * latency, size]))
    if forks is not None:
        cols.append(forks.kind[:, None])
    rows = np.unique(np.hstack(cols), axis=0)
    j, extra = 2, {}
    if terms is not None:
        extra["packets"] = PacketTerms(*(rows[:, j + k] for k in range(4)), params.packet_size)
        j += 4
    if rendezvous:
        extra["rendezvous"] = Rendezvous(rows[:, j], rows[:, j + 1], float(impl.eager_threshold))
        j += 2
    if forks is not None:
        extra["forks"] = replace(forks, kind=rows[:, j].astype(np.int64))
    return StepLines(rows[:, 0], rows[:, 1], max_link_load, top, hops_max, **extra)


#: the most route entries of a step whose short transfers are timed link by link: the pass sorts them and holds
#: about 100 bytes an entry; a larger step keeps its lines (an upper bound), so a comparison on a network of 100,000
#: ranks costs about what it did without the pass (docs/simulation.md, docs/benchmarks.md)
SHORT_MAX_ENTRIES = 1 << 20
#: routed steps kept for reuse: the routes and loads of a step depend on the topology, the transfers and the
#: routing, not on the parameters (a calibration times the same steps under hundreds of parameter values). At
#: most ROUTED_CACHE steps and ROUTED_CACHE_SHARE of the memory budget (a step of adaptive routes on a dense
#: network holds megabytes: 224 steps of degree(ring:14,22) held 1.2 GB), the oldest dropped first.
ROUTED_CACHE = 256
ROUTED_CACHE_SHARE = 0.25
_ROUTED: dict = {}


def _routed(topology: Topology, src, dst, size, reduce, bw, lat, routing: str, routes, every_net: bool):
    """(src, dst, size, reduce, entries, loads) of a step's network transfers: one representative per class on a
    translation-invariant step (:func:`_uniform`), else every transfer routed; from :data:`_ROUTED` when seen."""
    v = topology.num_nodes
    k = len(topology.port_offsets) if topology.is_cayley and topology.port_offsets is not None else 0
    by_port = bool(k and topology.num_links == v * k and (bw.reshape(v, k) == bw[:k]).all()
                   and (lat.reshape(v, k) == lat[:k]).all())  # what _uniform needs of the link values
    key = (topology.spec, topology.num_links, routing, by_port, every_net, src.tobytes(), dst.tobytes(),
           size.tobytes(), reduce.tobytes(), None if routes is None else (routes[0].tobytes(), routes[1].tobytes()))
    hit = _ROUTED.get(key)
    if hit is not None:
        return hit[0]
    uniform = _uniform(topology, src, dst, size, reduce, bw, lat, routing) if routes is None and every_net else None
    if uniform is None:
        entries = route_entries(topology, src, dst, routing, routes, hops=True)
        uniform = (src, dst, size, reduce, entries, entries.loads(size, topology.num_links))
    _remember(key, uniform)
    return uniform


def _remember(key, routed) -> None:
    """Keep ``routed`` in :data:`_ROUTED` within its count and byte bounds, dropping the oldest steps."""
    src, dst, size, reduce, entries, loads = routed
    arrays = (src, dst, size, reduce, entries.transfer, entries.link, entries.share, entries.hop, loads)
    nbytes = sum(a.nbytes for a in arrays if a is not None) + sum(len(k) for k in key if isinstance(k, bytes))
    limit = ROUTED_CACHE_SHARE * memory_budget()
    if nbytes > limit:
        return
    total = nbytes + sum(n for _, n in _ROUTED.values())
    while _ROUTED and (len(_ROUTED) >= ROUTED_CACHE or total > limit):
        total -= _ROUTED.pop(next(iter(_ROUTED)))[1]
    _ROUTED[key] = (routed, nbytes)


def _uniform(topology: Topology, src, dst, size, reduce, bw, lat, routing: str):
    """A translation-invariant step on a Cayley topology whose links' bandwidths and latencies repeat at every
    node (:func:`~directcoll.topology.routing.uniform_offsets`): one representative transfer 0 -> o_j per class
    j, its route with every link folded onto node 0's link of the same port (which carries the same load, by
    symmetry), and the link loads (node 0's links; the others are translates). None when not invariant."""
    offsets = uniform_offsets(topology, src, dst)
    v, k = topology.num_nodes, len(topology.port_offsets) if topology.is_cayley else 0
    if offsets is None or topology.num_links != v * k:
        return None
    c = len(offsets)
    size, reduce = size.reshape(c, v), reduce.reshape(c, v)
    if not ((size == size[:, :1]).all() and (reduce == reduce[:, :1]).all()):
        return None
    if not ((bw.reshape(v, k) == bw[:k]).all() and (lat.reshape(v, k) == lat[:k]).all()):
        return None
    routes = [route_pattern(topology, 0, int(o), routing) for o in offsets]
    count = np.array([len(pl) for pl, _ in routes], dtype=np.int64)
    link = np.concatenate([pl % k for pl, _ in routes])
    share = np.concatenate([ps for _, ps in routes])
    transfer = np.repeat(np.arange(c, dtype=np.int64), count)
    hop = np.concatenate([route_hops(topology, 0, int(o), routing) for o in offsets])
    entries = RouteEntries(transfer, link, share, hop)
    return (np.zeros(c, dtype=np.int64), offsets, size[:, 0].copy(), reduce[:, 0].copy(), entries,
            entries.loads(size[:, 0], topology.num_links))


def simulate(schedule: Schedule | StepPattern, topology: Topology, params: NetworkParams | None = None,
             routing: str = "adaptive", progress=None) -> SimulatedSchedule:
    """Route a schedule (or its step pattern) once on ``topology``; time sizes with ``.time(sizes)``.

    Args:
        schedule: a Schedule or a StepPattern whose ranks are the topology's compute nodes.
        topology: the network.
        params: alpha, per-hop latency, gamma, host injection, forwarding, link overrides (default: zero
            overheads, the topology's own links).
        routing: "adaptive" (default), "dor" or "single" (:data:`directcoll.topology.routing.ROUTINGS`).
        progress: optional callable(done, total) called after each distinct step.

    Returns:
        :class:`SimulatedSchedule`: ``.time(sizes)`` in s for sizes in bytes, ``.breakdown(size)`` per step.

    Raises:
        TopologyError: rank count mismatch, unknown routing, or a routing the topology cannot do.
        ResourceError: a route's BFS is over the memory budget (:func:`~directcoll.topology.paths.bfs_distances`).

    Source: docs/architecture.md, "Cost and simulation"; docs/simulation.md, "Step model".

    >>> from directcoll.algorithms.ring import build_ring
    >>> from directcoll.topology import parse
    >>> from directcoll.simulate.params import SWING_SST
    >>> t = parse("ring:8")
    >>> round(simulate(build_ring(t), t, SWING_SST).time(2**20) * 1e6, 2)  # microseconds for 1 MiB
    23.95

    (14 steps of 100 ns + 300 ns, plus 2 x 7/8 MiB sent over both directions of 50 GB/s links.)
    """
    pattern, params = prepare(schedule, topology, params, routing)
    steps = []
    for k in range(pattern.num_distinct):
        sl = pattern.step(k)
        steps.append(step_lines(topology, pattern.src[sl], pattern.dst[sl], pattern.size[sl], pattern.reduce[sl],
                                params, routing, step_routes(pattern, k), ports_of(pattern)))
        if progress is not None:
            progress(k + 1, pattern.num_distinct)
    return SimulatedSchedule(pattern, steps, routing, params)


def ports_of(schedule) -> int:
    """The ports a schedule (or step pattern) uses: its ``meta["ports"]``, else 1. Raises: Nothing.
    Source: docs/simulation.md, "Hosts and implementations" (threads and per-port costs)."""
    ports = schedule.meta.get("ports") if isinstance(schedule.meta, dict) else None
    return int(ports) if isinstance(ports, int | float) and ports >= 1 else 1


def mirrored_of(schedule) -> bool:
    """Whether a schedule (or step pattern) runs mirrored collectives: its ``meta["mirrored"]`` (how many of its
    ports run one) is above 0. Raises: Nothing.
    Source: docs/simulation.md, "Hosts and implementations" (mirror_overhead); Swing (NSDI'24) Sec. 4.1."""
    mirrored = schedule.meta.get("mirrored") if isinstance(schedule.meta, dict) else None
    return isinstance(mirrored, int | float) and not isinstance(mirrored, bool) and mirrored > 0


def call_cost(implementation, schedule, size_bytes):
    """s: what one call of ``schedule`` (a vector of ``size_bytes`` bytes, a number or an array) pays under an
    :class:`~directcoll.simulate.implementation.Implementation` besides its steps, the ports and mirrored
    collectives read from the schedule's meta (:func:`ports_of`, :func:`mirrored_of`): the one rule every engine
    applies. Raises: Nothing. Source: docs/simulation.md, "Hosts and implementations"."""
    return implementation.call_time(ports_of(schedule), size_bytes, mirrored_of(schedule))
