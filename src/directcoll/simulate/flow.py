"""The flow model: max-min fair sharing of link bandwidth, ranks advancing asynchronously (docs/architecture.md
"Cost and simulation").

A finer, slower check of the step model (:mod:`directcoll.simulate.step`), for small and medium networks.

Progress. Rank r runs the steps of the schedule in order. A transfer of step t from src to dst starts when both
src and dst have finished all their transfers of the steps before t (sent and received); a rank without a
transfer in a step passes through it at once. There is no global barrier: a pair whose step went quickly moves
on while other ranks are still in the step (in the step model every step waits for its slowest transfer).

Transfers as fluid flows. A transfer of ``size * size_bytes`` bytes becomes a flow ``alpha`` seconds after it
starts. Its route is the step model's (adaptive: split over all minimal paths; dor; or the schedule's explicit
route): flow i uses directed link e with weight ``share[i, e]`` (the shares of one hop sum to 1), so at rate
``r_i`` (bytes/s) it loads link e with ``share[i, e] * r_i``. A host-injection limit (``params.host_injection``)
adds one virtual link per rank for what it sends and one for what it receives, of that bandwidth, which every
flow leaving (entering) the rank uses with weight 1 (local copies, src == dst, use no link at all and drain at
once). Rates are max-min fair (progressive filling): all unfrozen flows grow at the same rate until a link
saturates (``sum share * r = bandwidth``); the flows crossing it freeze; repeat. Naive filling needs one round
per distinct bottleneck level (thousands on a random permutation). Here a round is a few vectorized sparse
reductions over the flow x link incidence and freezes every link that saturates at the lowest level (relative
tolerance 1e-9) *and* every link whose level is lowest among the links it shares flows with, which is exact
(see :func:`_water_fill`): a random permutation on torus:128x128 (2,378 distinct rates) takes 37 rounds.

Completion. A flow drains when all its bytes have left; the sender's part of the step ends then. The data
arrives ``latency`` later (share-weighted sum of the link latencies + hops * per_hop_latency, as in the step
model), plus ``gamma * bytes`` for a reduction; that ends the receiver's part. Packets as in the step model
(docs/simulation.md, "Packets in the models"): a flow carries ``bytes + packet_header * max(1, bytes /
packet_size)`` wire bytes, and every hop after the first adds the wait for a packet's header (cut-through) or for a
whole packet (store-and-forward) to the arrival.

Short transfers. Where every transfer of a step passes each link as one unit (at most one packet, or at most
its route's latency per hop c of serialisation on each of its links: the step model's regime, docs/simulation.md,
"Step model", item 4), its transfers are not fluid flows but units: a unit starting at time s reaches the link at
hop h of its route at s + h c, and each link sends the units that reach it at once together, in the first gap
at or after their arrival that earlier units left free; the unit arrives (hops - h) c after its last link sent
it, and its sender is done when its first link has. Units and fluid flows do not share capacity. For a whole step
that starts at once this is the step model's first-come-first-served recursion.

Events. The simulation jumps to the earliest next flow drain or flow start; flows that drain within a relative
tolerance of 1e-9 of the earliest are completed together (symmetric schedules drain thousands at once), and
rates are recomputed only when the set of flows changes. Between events every flow drains at a constant rate.

Differences from the step model. (1) Ranks are asynchronous: a rank starts step t+1 as soon as it and its
peer are done with step t, so fast pairs overlap with slow ones. (2) Link bandwidth is shared max-min fairly
among the flows present at each moment, whereas in the step model every transfer of a step takes as long as its
most loaded link needs to carry the whole step's load (``n * max_e load_e / bandwidth_e``), independently of
when the other transfers on that link finish. (3) A reduction costs ``gamma * bytes`` of that transfer; the step
model charges a receiver for everything it reduces in the step. For symmetric bandwidth-bound steps (every
flow's most loaded link carries the same load) both models give the same time.

Units: bytes, seconds, bytes/s throughout.

Source: docs/architecture.md, "Cost and simulation" (a finer flow-level model: max-min fair sharing, ranks advancing
asynchronously) and "Engines, runtimes and scale"; docs/simulation.md, "Flow model" and "Step model versus flow
model". Max-min fairness by progressive filling is the textbook definition (Bertsekas & Gallager, *Data
Networks*, on max-min flow control); none of the project's papers defines it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from directcoll.errors import DirectcollError
from directcoll.schedule.ir import Schedule
from directcoll.schedule.pattern import StepPattern
from directcoll.simulate.params import NetworkParams
from directcoll.simulate.routes import link_values, prepare, step_routes
from directcoll.simulate.step import by_place, call_cost, lindley, link_groups, ports_of, short_limits
from directcoll.topology.model import Topology
from directcoll.topology.routing import route_entries

#: links saturating within this relative distance of the lowest level freeze in the same water-filling round
LEVEL_RTOL = 1e-9
#: flows draining within this relative distance (of the time to the next event) complete together
DRAIN_RTOL = 1e-9
#: flow starts within this relative distance (of the simulated time) are processed together (round-off only)
START_RTOL = 1e-12
#: rate vectors remembered per simulation (the same flows in the same order: a step repeated in lockstep)
RATE_CACHE = 256


@dataclass(frozen=True)
class FlowResult:
    """Outcome of one flow simulation.

    Attributes:
        time_s: completion of the last transfer (its arrival, plus its reduction), s.
        step_end: float64 (S,): per step of the schedule, when the last transfer of that step arrived (plus its
            reduction), s; 0 for a step without transfers. Not monotone: ranks advance asynchronously.
        events: simulation events (distinct instants at which flows drained or started).
        rounds: water-filling rounds over all rate computations. Rates are recomputed only when the set of
            flows changes, and a set seen before in the same simulation (the same transfers in the same order:
            a step repeated in lockstep, as in ring) reuses its rates without new rounds.

    Raises:
        Nothing: a record returned by :func:`simulate_flow`.

    Source: docs/simulation.md, "Flow model".

    >>> FlowResult(1e-6, np.zeros(2), 3, 1).time_s
    1e-06
    """

    time_s: float
    step_end: np.ndarray
    events: int
    rounds: int


def _gather(ptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions ptr[r]:ptr[r+1] of every row r (concatenated) and, for each, its index into ``rows``."""
    starts, lens = ptr[rows], ptr[rows + 1] - ptr[rows]
    total = int(lens.sum())
    owner = np.repeat(np.arange(len(rows)), lens)
    if not total:
        return np.zeros(0, dtype=np.int64), owner
    first = np.cumsum(lens) - lens
    return np.arange(total) - np.repeat(first - starts, lens), owner


def _distinct(values: np.ndarray, size: int) -> np.ndarray:
    """Sorted distinct values of an int array with values in 0..size-1 (a mask: faster than np.unique here)."""
    mask = np.zeros(size, dtype=bool)
    mask[values] = True
    return np.flatnonzero(mask)


def max_min_rates(incidence, capacity) -> tuple[np.ndarray, int]:
    """Max-min fair rates by progressive filling.

    Args:
        incidence: (E x F) scipy.sparse or dense matrix, ``incidence[e, i]`` > 0 the weight with which flow i
            loads link e per unit of its rate (0 where it does not use it). Every flow must use a link.
        capacity: (E,) link capacities (bytes/s).

    Returns:
        (rates (F,), rounds): the rates, in the unit of ``capacity``, and the number of rounds (see
        :func:`_water_fill`).

    Raises:
        DirectcollError: a flow that uses no link (its rate would be unbounded).

    Source: docs/simulation.md, "Flow model" (progressive filling, several bottlenecks frozen per round; see
    :func:`_water_fill` for why that is exact); max-min fairness as in Bertsekas & Gallager, *Data Networks*.

    Two flows share link 0 (capacity 1); flow 1 also crosses link 1 (capacity 3) with flow 2, which gets the rest:

    >>> rates, rounds = max_min_rates(np.array([[1, 1, 0], [0, 1, 1]]), [1.0, 3.0])
    >>> rates.tolist(), rounds
    ([0.5, 0.5, 2.5], 2)
    """
    a = sp.csc_matrix(incidence, dtype=float)
    a.sum_duplicates()
    a.eliminate_zeros()
    used = np.diff(a.indptr)
    if (used == 0).any():
        raise DirectcollError(f"max_min_rates: flow {int(np.flatnonzero(used == 0)[0])} uses no link")
    flow = np.repeat(np.arange(a.shape[1]), used)
    return _water_fill(a.indices.astype(np.int64), flow, a.data, np.asarray(capacity, dtype=float), a.shape[1])


def _water_fill(link: np.ndarray, flow: np.ndarray, share: np.ndarray, capacity: np.ndarray,
                nflows: int) -> tuple[np.ndarray, int]:
    """Max-min fair rates of ``nflows`` flows from the incidence in coordinate form, sorted by flow.

    Progressive filling: all unfrozen flows grow at the same rate until a link saturates; the flows crossing
    it freeze; repeat. A round does not stop at the single lowest link: with ``level_e`` = (capacity left on
    e) / (weight of the unfrozen flows on e), every link whose level is no higher than the level of any link
    sharing an unfrozen flow with it (relative tolerance 1e-9) freezes in the same round, at its level. That
    is exact: levels only rise as flows freeze below them, so no flow of such a link can freeze earlier,
    and the link saturates at exactly its level. The lowest link always qualifies, so every round freezes at
    least one link; independent bottlenecks at different levels freeze together (a random permutation on a
    torus needs a few rounds instead of one per distinct level). Frozen flows leave the working arrays.

    Every flow must have an entry; ``share`` > 0.
    """
    cap = capacity.astype(float).copy()
    nl = len(cap)
    rates = np.zeros(nflows)
    rounds = 0
    while len(flow):
        rounds += 1
        weight = np.bincount(link, weights=share, minlength=nl)
        present = weight > 0
        level = np.full(nl, np.inf)
        level[present] = np.maximum(cap[present], 0.0) / weight[present]
        first = np.flatnonzero(np.r_[True, flow[1:] != flow[:-1]])
        per_flow = np.minimum.reduceat(level[link], first)          # each flow's lowest link level
        lowest = np.full(nl, np.inf)
        np.minimum.at(lowest, link, np.repeat(per_flow, np.diff(np.r_[first, len(flow)])))
        sat = present & (level <= lowest * (1 + LEVEL_RTOL))        # no neighbour saturates lower
        hit = np.zeros(nflows, dtype=bool)
        hit[flow[sat[link]]] = True
        ids = flow[first]
        freeze = hit[ids]
        rates[ids[freeze]] = per_flow[freeze]
        out = hit[flow]
        cap -= np.bincount(link[out], weights=share[out] * rates[flow[out]], minlength=nl)
        keep = ~out
        link, flow, share = link[keep], flow[keep], share[keep]
    return rates, rounds


@dataclass(frozen=True)
class _Prepared:
    """Everything about a pattern on a topology that does not depend on the vector size."""

    pattern: StepPattern
    params: NetworkParams
    ptr: np.ndarray          # (T+1,) CSR over the pattern's transfers of their (link, share) entries
    link: np.ndarray
    share: np.ndarray
    latency: np.ndarray      # (T,) route latency, s (without alpha)
    inv_bw: np.ndarray       # (T,) mean of 1 / bandwidth over the route, s per byte (0 for local transfers)
    hops: np.ndarray         # (T,) share-weighted hop count
    capacity: np.ndarray     # (E,) bandwidth of the real links, then the virtual injection links
    count: np.ndarray        # (K, N) transfers each rank takes part in (as src plus as dst) per distinct step
    rank_ptr: list           # per distinct step: CSR over ranks of the transfers they take part in
    rank_tr: list
    posted: np.ndarray       # (T,) messages its sender posts (its receiver takes) in its step, the more of the two
    hop: np.ndarray          # like link: the hop at which the entry's link is crossed (virtual links: -1)


def _prepare(schedule, topology: Topology, params: NetworkParams | None, routing: str) -> _Prepared:
    pattern, params = prepare(schedule, topology, params, routing)
    bw, lat = link_values(topology, params)
    n, nl, t_all = pattern.nranks, topology.num_links, len(pattern.src)
    idx, link, share = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)], [np.zeros(0)]
    hop = [np.zeros(0, dtype=np.int64)]
    count = np.zeros((pattern.num_distinct, n), dtype=np.int64)
    posted = np.zeros(t_all)  # messages of its step that the transfer's sender posts or its receiver takes
    rank_ptr, rank_tr = [], []
    for k in range(pattern.num_distinct):
        sl = pattern.step(k)
        src, dst = pattern.src[sl], pattern.dst[sl]
        count[k] = np.bincount(src, minlength=n) + np.bincount(dst, minlength=n)
        remote = src != dst
        posted[sl] = np.maximum(np.bincount(src[remote], minlength=n)[src], np.bincount(dst[remote], minlength=n)[dst])
        ranks = np.concatenate([src, dst])
        order = np.argsort(ranks, kind="stable")
        rank_tr.append(np.tile(np.arange(sl.start, sl.stop), 2)[order])
        rank_ptr.append(np.concatenate([[0], np.cumsum(np.bincount(ranks, minlength=n))]))
        net = src != dst
        if not net.any():
            continue
        routes = step_routes(pattern, k)
        if routes is not None:  # explicit routes: every transfer of the step follows its own
            entries = route_entries(topology, src, dst, routing, routes, hops=True)
            i = entries.transfer
        else:
            sel = np.flatnonzero(net)
            entries = route_entries(topology, src[sel], dst[sel], routing, hops=True)
            i = sel[entries.transfer]
        idx.append(i + sl.start)
        link.append(entries.link)
        share.append(entries.share)
        hop.append(entries.hop)
    idx, link, share, hop = np.concatenate(idx), np.concatenate(link), np.concatenate(share), np.concatenate(hop)
    hops = np.bincount(idx, weights=share, minlength=t_all)
    latency = np.bincount(idx, weights=share * lat[link], minlength=t_all) + hops * params.per_hop_latency
    inv_bw = np.bincount(idx, weights=share / bw[link], minlength=t_all) / np.maximum(hops, 1e-300)
    efficiency = params.implementation.bandwidth_efficiency  # the share of link rates its messages reach
    capacity = bw.astype(float) * efficiency
    if params.host_injection:
        net = np.flatnonzero(pattern.src != pattern.dst)
        idx = np.concatenate([idx, net, net])
        link = np.concatenate([link, nl + pattern.src[net], nl + n + pattern.dst[net]])
        share = np.concatenate([share, np.ones(2 * len(net))])
        hop = np.concatenate([hop, np.full(2 * len(net), -1)])
        capacity = np.concatenate([capacity, np.full(2 * n, float(params.host_injection) * efficiency)])
    order = np.argsort(idx, kind="stable")
    ptr = np.concatenate([[0], np.cumsum(np.bincount(idx, minlength=t_all))]).astype(np.int64)
    return _Prepared(pattern, params, ptr, link[order].astype(np.int64), share[order], latency, inv_bw, hops, capacity,
                     count, rank_ptr, rank_tr, posted, hop[order].astype(np.int64))


class _Run:
    """One simulation of a prepared pattern at one vector size (see the module docstring)."""

    def __init__(self, prep: _Prepared, size_bytes: float) -> None:
        self.prep = prep
        p = prep.pattern
        self.seq = p.sequence
        self.nsteps = len(self.seq)
        self.src, self.dst = p.src, p.dst
        par = prep.params
        impl = par.implementation
        threads = impl.reduction_threads(ports_of(p))
        nbytes = p.size * float(size_bytes)
        # alpha, then the messages of the step its threads post one after another (LogGP's o); a message over the
        # eager threshold waits a round trip for the rendezvous
        self.alpha = par.alpha + impl.message_overhead * np.ceil(prep.posted / threads)
        if impl.eager_threshold is not None:
            self.alpha = self.alpha + 2.0 * (self.alpha + prep.latency) * (nbytes > impl.eager_threshold)
        gamma = par.gamma if impl.gamma is None else impl.gamma
        self.reduce_time = gamma * nbytes * p.reduce / threads  # summed per rank: its reductions share its threads
        self.reduce_time = self.reduce_time + p.reduce * impl.reduction_cost(ports_of(p), nbytes)
        self.call_time = call_cost(impl, p, float(size_bytes))
        self.routed = np.diff(prep.ptr) > 0
        # packets (docs/simulation.md, "Packets in the models"): headers on the wire; every further hop waits for
        # a packet's header (cut-through) or whole packet (store-and-forward) before passing it on
        header, size = par.packet_header, par.packet_size
        self.bytes = nbytes + self.routed * header * np.maximum(1.0, nbytes / size)
        packet = header + (np.minimum(nbytes, size) if par.forwarding == "store-and-forward" else 0.0)
        self.latency = prep.latency + self.routed * np.maximum(prep.hops - 1, 0.0) * packet * prep.inv_bw
        self.per_hop = self.latency / np.maximum(prep.hops, 1e-300)   # c: the route's latency per hop, s
        self.unit = self._short(nbytes, float(size_bytes), impl)
        # the units links send: (link, start, end) of each, s; those ending before a start cannot delay it
        self.resv = (np.zeros(0, dtype=np.int64), np.zeros(0), np.zeros(0))
        n = p.nranks
        self.cur = np.full(n, -1, dtype=np.int64)     # the step each rank is in (nsteps: done)
        self.entry = np.zeros(n)                      # when it entered that step
        self.acc = np.zeros(n)                        # latest completion of its transfers in that step
        self.pend = np.zeros(n, dtype=np.int64)       # its transfers of that step not yet complete
        self.red = np.zeros(n)                        # what it reduces in that step, s of its threads' time
        self.step_end = np.zeros(self.nsteps)
        self.finish = np.zeros(n)
        # flows waiting for their start (time, transfer, step) and active flows (transfer, step, bytes left)
        self.q_time, self.q_p, self.q_t = np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        self.a_p, self.a_t, self.a_rem = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
        self.a_rate = np.zeros(0)
        self.events = self.rounds = 0
        self._cache: dict[bytes, np.ndarray] = {}    # rates of a set of flows (in order) seen before

    def _short(self, nbytes: np.ndarray, size_bytes: float, impl) -> np.ndarray:
        """bool (T,): the transfers that pass each link as one unit: those of distinct steps whose every
        transfer is at most one packet or takes at most its route's latency per hop on each of its links, as in
        the step model (docs/simulation.md, "Step model", item 4); none under store-and-forward, a
        host-injection limit or an eager threshold."""
        prep, par = self.prep, self.prep.params
        if par.forwarding == "store-and-forward" or par.host_injection or impl.eager_threshold is not None:
            return np.zeros(len(nbytes), dtype=bool)
        p = prep.pattern
        owner = np.repeat(np.arange(len(nbytes)), np.diff(prep.ptr))
        work = prep.share * p.size[owner] * (1 + par.packet_header / par.packet_size) / prep.capacity[prep.link]
        short = size_bytes <= short_limits(owner, work, self.per_hop, p.size, par.packet_size)
        unit = np.zeros(len(nbytes), dtype=bool)
        for k in range(p.num_distinct):
            sl = p.step(k)
            unit[sl] = short[sl].all()
        return unit & self.routed & (nbytes > 0)

    # -- ranks ------------------------------------------------------------------------------------------
    def _advance(self, ranks: np.ndarray, times: np.ndarray) -> None:
        """Ranks that completed their current step at ``times`` enter their next step with a transfer."""
        count = self.prep.count
        t = self.cur[ranks] + 1
        while True:
            open_ = t < self.nsteps
            idle = np.zeros(len(t), dtype=bool)
            idle[open_] = count[self.seq[t[open_]], ranks[open_]] == 0
            if not idle.any():
                break
            t[idle] += 1
        self.cur[ranks] = t
        self.entry[ranks] = times
        self.acc[ranks] = times
        done = t >= self.nsteps
        self.finish[ranks[done]] = times[done]
        ranks, t = ranks[~done], t[~done]
        self.pend[ranks] = count[self.seq[t], ranks]
        for step in (np.unique(t) if len(t) and t.min() != t.max() else t[:1]):
            k = self.seq[step]
            pos, _ = _gather(self.prep.rank_ptr[k], ranks[t == step])
            cand = _distinct(self.prep.rank_tr[k][pos], len(self.src))
            s, d = self.src[cand], self.dst[cand]
            ok = (self.cur[s] == step) & (self.cur[d] == step)
            cand = cand[ok]
            if len(cand):
                start = np.maximum(self.entry[s[ok]], self.entry[d[ok]]) + self.alpha[cand]
                self.q_time = np.concatenate([self.q_time, start])
                self.q_p = np.concatenate([self.q_p, cand])
                self.q_t = np.concatenate([self.q_t, np.full(len(cand), step, dtype=np.int64)])

    def _complete(self, p: np.ndarray, t: np.ndarray, sent, arrival) -> None:
        """Transfers ``p`` (schedule steps ``t``) whose senders were done at ``sent`` and whose data arrived at
        ``arrival`` (s, scalars or (len(p),))."""
        s, d = self.src[p], self.dst[p]
        np.maximum.at(self.acc, s, np.broadcast_to(sent, len(p)))
        np.maximum.at(self.acc, d, arrival)
        np.add.at(self.red, d, self.reduce_time[p])
        n = len(self.cur)
        self.pend -= np.bincount(s, minlength=n) + np.bincount(d, minlength=n)
        ranks = _distinct(np.concatenate([s, d]), len(self.cur))
        ranks = ranks[self.pend[ranks] == 0]
        if len(ranks):  # a rank done with its transfers reduces what it received, then moves on
            self.acc[ranks] += self.red[ranks]
            self.red[ranks] = 0.0
            np.maximum.at(self.step_end, self.cur[ranks], self.acc[ranks])
            self._advance(ranks, self.acc[ranks])

    # -- units ------------------------------------------------------------------------------------------
    def _units(self, p: np.ndarray, t: np.ndarray, now: float) -> None:
        """Short transfers ``p`` (steps ``t``) starting at ``now``: each reaches the link at hop h of its route
        ``h c`` later, and each link sends the units that reach it at once together, in the first gap at or after
        their arrival that the units before them left free (first come, first served among the units of a
        start, around those already on the link: the step model's item 4 when a whole step starts at once); a
        unit arrives ``(hops - h) c`` after its last link sent it. Units do not share the fluid flows' capacity.
        """
        prep = self.prep
        pos, owner = _gather(prep.ptr, p)
        link, hop, c = prep.link[pos], prep.hop[pos], self.per_hop[p][owner]
        arrive = now + hop * c
        work = prep.share[pos] * self.bytes[p][owner] / prep.capacity[link]
        ticks = np.rint((arrive - now) * 1e13).astype(np.int64)  # equal arrivals up to 0.1 ps form one group
        live = self.resv[2] > now  # reservations that arrivals from now on may meet
        free = not live.any()
        # by link then arrival where every link is free, else by arrival (equal (link, arrival) stay adjacent)
        order = np.lexsort((ticks, link)) if free else np.lexsort((link, ticks))
        first, _, position = link_groups(link[order], ticks[order])
        g_link, g_arrive = link[order][first], arrive[order][first]
        g_work = np.add.reduceat(work[order], first)
        if free:  # Lindley's recursion over each link's groups, all links at once
            done = lindley(*by_place(position), g_arrive, g_work)
            self.resv = (g_link, done - g_work, done)
        else:  # first fit into each link's gaps, one group at a time, in arrival order
            busy: dict[int, list] = {}
            for e, a, z in zip(*(x[live].tolist() for x in self.resv), strict=True):
                busy.setdefault(e, []).append((a, z))
            for intervals in busy.values():
                intervals.sort()
            done = np.empty(len(first))
            for g, (e, a, w) in enumerate(zip(g_link.tolist(), g_arrive.tolist(), g_work.tolist(), strict=True)):
                intervals = busy.setdefault(e, [])
                i, start = 0, a
                while i < len(intervals) and intervals[i][1] <= start:
                    i += 1
                while i < len(intervals) and intervals[i][0] < start + w:  # the first gap of w from the arrival
                    start = max(start, intervals[i][1])
                    i += 1
                intervals.insert(i, (start, start + w))
                done[g] = start + w
            kept = np.array([(e, a, z) for e, intervals in busy.items() for a, z in intervals])
            self.resv = (kept[:, 0].astype(np.int64), kept[:, 1], kept[:, 2])
        sent_at = np.empty(len(pos))
        sent_at[order] = np.repeat(done, np.diff(np.r_[first, len(pos)]))
        arrival = np.zeros(len(p))
        np.maximum.at(arrival, owner, sent_at + (prep.hops[p][owner] - hop) * c)
        sent = np.zeros(len(p))
        np.maximum.at(sent, owner[hop == 0], sent_at[hop == 0])
        self._complete(p, t, sent, arrival)

    # -- flows ------------------------------------------------------------------------------------------
    def _rates(self) -> None:
        if not len(self.a_p):
            self.a_rate = np.zeros(0)
            return
        key = self.a_p.tobytes()
        rates = self._cache.get(key)
        if rates is None:
            prep = self.prep
            pos, col = _gather(prep.ptr, self.a_p)
            rates, rounds = _water_fill(prep.link[pos], col, prep.share[pos], prep.capacity, len(self.a_p))
            self.rounds += rounds
            if len(self._cache) >= RATE_CACHE:
                self._cache.clear()
            self._cache[key] = rates
        self.a_rate = rates.copy()

    def run(self) -> FlowResult:
        n = len(self.cur)
        self._advance(np.arange(n), np.zeros(n))
        now, dirty = 0.0, True
        while len(self.q_time) or len(self.a_p):
            if dirty:
                self._rates()
                dirty = False
            with np.errstate(divide="ignore"):
                tte = self.a_rem / self.a_rate if len(self.a_p) else np.zeros(0)
            t_next = min(now + (tte.min() if len(tte) else np.inf), self.q_time.min() if len(self.q_time) else np.inf)
            if not np.isfinite(t_next):     # cannot happen with positive capacities; never loop forever
                raise DirectcollError("flow model stalled: active flows with zero rate and nothing to start")
            dt = t_next - now
            self.events += 1
            drained_p, drained_t = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
            if len(self.a_p):
                done = tte <= dt * (1 + DRAIN_RTOL) + START_RTOL * t_next
                if done.any():
                    drained_p, drained_t = self.a_p[done], self.a_t[done]
                    keep = ~done
                    self.a_p, self.a_t = self.a_p[keep], self.a_t[keep]
                    self.a_rem, self.a_rate = self.a_rem[keep], self.a_rate[keep]
                    dirty = True
                self.a_rem = np.maximum(self.a_rem - self.a_rate * dt, 0.0)
            now = t_next
            if len(self.q_time):
                go = self.q_time <= now * (1 + START_RTOL)
                if go.any():
                    p, t = self.q_p[go], self.q_t[go]
                    self.q_time, self.q_p, self.q_t = self.q_time[~go], self.q_p[~go], self.q_t[~go]
                    instant = (self.bytes[p] <= 0) | ~self.routed[p]
                    drained_p = np.concatenate([drained_p, p[instant]])
                    drained_t = np.concatenate([drained_t, t[instant]])
                    unit = ~instant & self.unit[p]
                    if unit.any():
                        self._units(p[unit], t[unit], now)
                    flow = ~instant & ~unit
                    if flow.any():
                        self.a_p = np.concatenate([self.a_p, p[flow]])
                        self.a_t = np.concatenate([self.a_t, t[flow]])
                        self.a_rem = np.concatenate([self.a_rem, self.bytes[p[flow]]])
                        self.a_rate = np.concatenate([self.a_rate, np.zeros(int(flow.sum()))])
                        dirty = True
            if len(drained_p):
                self._complete(drained_p, drained_t, now, now + self.latency[drained_p])
        if (self.cur < self.nsteps).any():
            raise DirectcollError("flow model: some ranks never finished (inconsistent pattern)")
        total = float(self.finish.max()) + self.call_time if n else 0.0  # the call's own costs, once
        return FlowResult(total, self.step_end, self.events, self.rounds)


def simulate_flow(schedule_or_pattern: Schedule | StepPattern, topology: Topology, size_bytes: float,
                  params: NetworkParams | None = None, routing: str = "adaptive") -> FlowResult:
    """Simulate one collective of ``size_bytes`` bytes in the flow model (see the module docstring).

    Args:
        schedule_or_pattern: a Schedule or a StepPattern whose ranks are the topology's compute nodes; every
            transfer carries ``size * size_bytes`` bytes (size: its fraction of the vector).
        topology: the network (link bandwidths in bytes/s, latencies in s, unless ``params`` overrides them).
        size_bytes: the vector size, bytes (>= 0).
        params: alpha, per-hop latency, gamma, host injection, forwarding, link overrides (default: zero
            overheads, the topology's own links).
        routing: "adaptive" (default: split evenly over all minimal paths), "dor" or "single"; explicit routes in the
            schedule take precedence, as in the step model.

    Returns:
        FlowResult: completion time (s), per-step end times, event and water-filling round counts.

    Raises:
        TopologyError: rank count mismatch, unknown routing, a routing the topology cannot do, or an explicit
            route that is empty or names a link outside the topology (:func:`route_entries`).
        ResourceError: a route's BFS is over the memory budget (:func:`~directcoll.topology.paths.bfs_distances`).
        DirectcollError: a negative or non-finite size.

    Source: docs/simulation.md, "Flow model"; docs/architecture.md, "Cost and simulation".

    >>> from directcoll.algorithms.ring import ring_reduce_scatter
    >>> from directcoll.topology import parse
    >>> r = simulate_flow(ring_reduce_scatter(range(4)), parse("ring:4"), 4e6, NetworkParams(link_bandwidth=1e9))
    >>> round(r.time_s * 1e6, 3), (r.step_end * 1e6).round(3).tolist()  # microseconds: 1 MB at 1 GB/s + 100 ns
    (3000.3, [1000.1, 2000.2, 3000.3])
    """
    prep = _prepare(schedule_or_pattern, topology, params, routing)
    return _simulate_prepared(prep, size_bytes)


def _simulate_prepared(prep: _Prepared, size_bytes: float) -> FlowResult:
    size = float(size_bytes)
    if not np.isfinite(size) or size < 0:
        raise DirectcollError(f"flow model: vector size must be a finite number of bytes >= 0, got {size_bytes!r}")
    return _Run(prep, size).run()


def flow_times(schedule_or_pattern: Schedule | StepPattern, topology: Topology, sizes,
               params: NetworkParams | None = None, routing: str = "adaptive") -> np.ndarray:
    """Flow-model completion time (s) for every vector size in ``sizes`` (bytes); same shape as ``sizes``.

    Routes are computed once per distinct step of the pattern and reused for every size and every repetition
    of the step in the schedule. Each size is one full event simulation (:func:`simulate_flow`).

    Returns:
        float64 of the shape of ``sizes`` (a 0-d array for a scalar), completion times in s.

    Raises:
        TopologyError, ResourceError, DirectcollError: as :func:`simulate_flow`.

    Source: docs/simulation.md, "Flow model" (``flow_times``: one simulation per size, no closed form).

    >>> from directcoll.algorithms.ring import build_ring
    >>> from directcoll.simulate.params import SWING_SST
    >>> from directcoll.topology import parse
    >>> t = parse("ring:8")
    >>> (flow_times(build_ring(t), t, [0, 2**20], SWING_SST) * 1e6).round(2).tolist()  # microseconds
    [5.6, 23.95]
    """
    prep = _prepare(schedule_or_pattern, topology, params, routing)
    flat = np.atleast_1d(np.asarray(sizes, dtype=float)).ravel()
    out = np.array([_simulate_prepared(prep, s).time_s for s in flat])
    return out.reshape(np.shape(sizes)) if np.ndim(sizes) else out.reshape(())
