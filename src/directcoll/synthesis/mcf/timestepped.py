"""Time-stepped all-to-all multi-commodity flow (tsMCF, Basu et al. Sec. 3.1.3, eq. 15-20).

The fluid MCF of :mod:`directcoll.synthesis.mcf.link` gives rates; runtimes that move data in bulk-synchronous steps
(accelerators forwarding in software, MSCCL / oneCCL interpreters: Basu Sec. 3.2.2, 4) need to know what moves in
which step. tsMCF solves the MCF on the **time-expanded graph**: ``lmax + 1`` copies u_0 .. u_lmax of every node;
for every step t = 0..lmax-1 a link u_t -> v_{t+1} of capacity ``cap(u, v) U_t`` for every network link (u, v), and
a "hold" edge u_t -> u_{t+1} of unbounded capacity (a node keeps data for a later step). Data that reaches u in step
t can leave u in step t + 1 at the earliest, as in the bulk-synchronous IR. Every ordered pair (s, d) moves one
shard (demand 1, eq. 19) from s_0 to d_lmax; step t lasts U_t (its most loaded link's load over capacity, eq. 16)
and the objective is the completion time sum_t U_t (eq. 15), in units of (shard size m) / (reference bandwidth b).
Its inverse ``value`` is the stepped schedule's throughput, comparable with the fluid F: adding up the steps gives a
static flow of rate 1 / sum_t U_t, so ``value <= F``. With enough steps it reaches F (on every topology measured, at
l_max = diameter D to D + 2; docs/alltoall.md).

Formulation (an exact reformulation of eq. 15-20):

* **Source-aggregated** (as eq. 6-9 for the fluid LP; Basu: "this time-stepped LP can be decomposed into a
  source-based LP"): one commodity per source s, with link flows ``f[s, t, e]`` and holds ``g[s, t, u]``, and
  conservation at every time-expanded node (u, t): out-links of step t + hold of step t = in-links of step
  t - 1 + hold of step t - 1, with supply N - 1 at (s, 0) and demand 1 at (d, lmax) for every compute d != s
  (eq. 17-18: eq. 17's "sent so far <= received before" is exactly g >= 0). A flow of one source on the
  time-expanded DAG splits into one walk per destination (flow decomposition), so the per-pair LP has the same
  optimum; :meth:`TsMcfResult.walks` does that split greedily (instead of Basu's child LPs).
* **Symmetric** (Cayley topologies, as ``alltoall_mcf(method="symmetric")``): translations preserve time, so
  averaging an optimal flow over them keeps the objective; only source 0's flow is solved, with one capacity
  row per (step, link orbit). The LP shrinks by a factor of N.

Flows into a commodity's own source are fixed to 0 (they never help). Built vectorized from scipy.sparse triplets
and solved by HiGHS through :mod:`directcoll.synthesis.mcf.formulations` (same solvers, same optimal-basis
guarantee).

**Host-to-NIC bottleneck** (Basu Sec. 3.2.2, Fig. 2; ``host_bandwidth``): runtimes that forward in the host (the
non source-routed fabrics tsMCF is for) pass every chunk a node sends, its own or forwarded, over its host -> NIC
link, and every chunk it receives over its NIC -> host link. In the time-expanded graph this is one more capacity
per step and host: ``sum of the flows on u's out-links in step t <= H U_t`` and the same for its in-links (H: host
bandwidth / reference bandwidth), exactly Fig. 2's augmented graph with the host and NIC hops of one link taken in
the same step (a bulk-synchronous step moves data host -> NIC -> link -> NIC -> host). Symmetric: every link leaves
one host, so the host row of step t is ``sum over all links of source 0's flow <= H U_t``. The fluid F of the
augmented network (``alltoall_mcf(host_bandwidth=H)``) is the stopping target; torus:3x3x3 with 25 Gb/s links and
a 100 Gb/s host reaches Basu's F = 2/27. NIC forwarding (transit traffic bypassing the host) is for source-routed
fabrics: the path variants.

``lmax`` defaults to the hop diameter D, then grows one step at a time while the value improves by more than
:data:`LMAX_TOLERANCE` (relative) and stays below the fluid F, up to D + :data:`LMAX_EXTRA`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from directcoll.errors import UnsupportedShapeError
from directcoll.lp import LinearProgram
from directcoll.synthesis.mcf.formulations import FLOW_EPS, SOLVERS, solve_lp
from directcoll.synthesis.mcf.link import alltoall_mcf
from directcoll.synthesis.mcf.network import FlowNetwork, flow_network, is_translation_symmetric
from directcoll.topology.model import Topology
from directcoll.topology.paths import bfs_distances

#: ``lmax=None``: at most this many steps beyond the diameter are tried.
LMAX_EXTRA = 6
#: Relative improvement of the value below which ``lmax=None`` stops adding steps.
LMAX_TOLERANCE = 1e-9
#: Largest l_max accepted (the LP grows linearly with it).
LMAX_LIMIT = 64
TS_METHODS = ("auto", "source", "symmetric")


def diameter(net: FlowNetwork) -> int:
    """Largest hop distance between two compute nodes of a flow network (one BFS on Cayley networks), in hops.

    Raises:
        ResourceError: the hop distances would exceed the memory budget.

    Source: Basu et al. (HPDC'24) Sec. 3.1.3 ("l_max is set to a value >= diameter(G)").

    >>> from directcoll.synthesis.mcf.network import flow_network
    >>> from directcoll.topology import parse
    >>> diameter(flow_network(parse("torus:3x3x3"))), diameter(flow_network(parse("petersen")))
    (3, 2)
    """
    n = net.num_compute
    sources = [0] if net.orbit is not None else np.arange(n)
    return int(bfs_distances(net, sources)[:, :n].max())


@dataclass(frozen=True, eq=False)
class TsMcfResult:
    """An optimal time-stepped all-to-all flow (Basu eq. 15-20).

    Attributes:
        value: 1 / ``time``, the concurrent rate the stepped schedule achieves, in units of the reference
            capacity (comparable with ``alltoall_mcf(...).value``; never larger).
        time: sum_t U_t, the completion time of an all-to-all of one shard m per pair, in units of m / b.
        lmax: the number of steps of the time-expanded graph.
        step_time: float64 (lmax,), U_t (a step with nothing to move has U_t = 0).
        method: ``source`` (source-aggregated LP) or ``symmetric`` (source 0 on the link orbits).
        solver: how HiGHS got the optimum.
        spec: the topology spec.
        network: the :class:`FlowNetwork` the flows live on.
        reference_bandwidth: bytes/s of capacity 1.
        mcf_value: the fluid F of :func:`alltoall_mcf` used as the stopping target (None if not computed).
        tried: l_max -> value for every l_max solved (``lmax=None`` tries several).
        seconds: wall time of the stages.
        host_bandwidth: bytes/s of every host <-> NIC link (host forwarding), or None for no host bottleneck.

    Per-source flows (:attr:`flow_source`, :attr:`flow_step`, :attr:`flow_link`, :attr:`flow_value`, columnar
    (K,) arrays) are in shards: ``flow_value`` of source s on link e in step t (0-based, the LP's t + 1).
    Holds (:attr:`hold_source`, :attr:`hold_step`, :attr:`hold_node`, :attr:`hold_value`) are what node u keeps
    of s's data through step t without sending it (the hold edge u_t -> u_{t+1}).

    Raises:
        Nothing: a frozen record built by :func:`tsmcf`.

    Source: Basu et al. (HPDC'24) Sec. 3.1.3, eq. (15)-(20) (U_t, the flows f_{(s,d),(u,v),t}).

    >>> r = tsmcf("ring:4")
    >>> r.lmax, r.step_time.shape, round(float(r.step_time.sum()), 9), round(r.value, 9)
    (2, (2,), 2.0, 0.5)
    """

    value: float
    time: float
    lmax: int
    step_time: np.ndarray
    method: str
    solver: str
    spec: str
    network: FlowNetwork
    reference_bandwidth: float
    mcf_value: float | None = None
    tried: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)
    host_bandwidth: float | None = None
    _flows: tuple = field(default=(), repr=False)   # (src, step, link, value): all sources, or source 0 (symmetric)
    _holds: tuple = field(default=(), repr=False)   # (src, step, node, value)

    @property
    def num_compute(self) -> int:
        """N, the number of compute nodes. Raises: Nothing. Source: Basu et al. (HPDC'24) Sec. 2.2 (N nodes)."""
        return self.network.num_compute

    @cached_property
    def _all_flows(self) -> tuple[tuple, tuple]:
        if self.method != "symmetric":
            return self._flows, self._holds
        n, net = self.num_compute, self.network
        g = np.arange(n, dtype=np.int64)[:, None]
        _, fs, fl, fv = self._flows
        _, hs, hu, hv = self._holds
        flows = (np.repeat(g[:, 0], len(fl)), np.tile(fs, n), net.translate_links(fl[None, :], g).ravel(),
                 np.tile(fv, n))
        holds = (np.repeat(g[:, 0], len(hu)), np.tile(hs, n), net.translate_node(hu[None, :], g).ravel(),
                 np.tile(hv, n))
        return flows, holds

    flow_source = property(lambda self: self._all_flows[0][0], doc="int64 (K,): source of every flow entry.")
    flow_step = property(lambda self: self._all_flows[0][1], doc="int64 (K,): step (0-based) of every entry.")
    flow_link = property(lambda self: self._all_flows[0][2], doc="int64 (K,): network link of every entry.")
    flow_value = property(lambda self: self._all_flows[0][3], doc="float64 (K,): shards moved.")
    hold_source = property(lambda self: self._all_flows[1][0], doc="int64 (H,): source of every holding.")
    hold_step = property(lambda self: self._all_flows[1][1], doc="int64 (H,): the step held through (0-based).")
    hold_node = property(lambda self: self._all_flows[1][2], doc="int64 (H,): node holding the data.")
    hold_value = property(lambda self: self._all_flows[1][3], doc="float64 (H,): shards held.")

    def link_load(self) -> np.ndarray:
        """float64 (lmax, E): shards every link carries in every step; ``<= capacity * step_time``.

        Raises:
            Nothing: sums the per-source flows.

        Source: Basu et al. (HPDC'24) eq. (16) (the load of link (u, v) in step t, at most U_t times its
        capacity).

        >>> load = tsmcf("ring:4").link_load()  # 12 pairs: 8 one hop, 4 two hops
        >>> load.shape, round(float(load.sum()), 9)
        ((2, 8), 16.0)
        """
        e = self.network.num_links
        return np.bincount(self.flow_step * e + self.flow_link, weights=self.flow_value,
                           minlength=self.lmax * e).reshape(self.lmax, e)

    def alltoall_time(self, shard_bytes) -> np.ndarray:
        """Time, s, of the stepped all-to-all with ``shard_bytes`` per pair: time * m / b (fluid steps).

        Args:
            shard_bytes: m, bytes per ordered pair; a number or an array of any shape.

        Returns:
            float64 array of ``shard_bytes``' shape, in s (bandwidth only: no per-step latency).

        Raises:
            Nothing: arithmetic.

        Source: Basu et al. (HPDC'24) eq. (15) (sum_t U_t, here in units of m / b).

        ring:4 with its default 50 GB/s links: 2 x 1 MB / 50 GB/s = 40 us.

        >>> tsmcf("ring:4").alltoall_time([1e6]).round(8).tolist()
        [4e-05]
        """
        return np.asarray(shard_bytes, dtype=float) * self.time / self.reference_bandwidth

    def walks(self, sources=None) -> dict:
        """Split every source's flow into one walk per (source, destination) (flow decomposition).

        Args:
            sources: compute nodes to split (default all; the symmetric method splits source 0 and callers
                translate).

        Returns:
            dict of columnar arrays, W walks: ``source``, ``dest`` (int64 (W,)), ``weight`` (float64 (W,), shards;
            every pair's weights add up to 1 up to ~1e-9), ``links`` (int64 (W, lmax): the link taken in every
            step, -1 where the walk holds).

        Raises:
            Nothing: a greedy walk decomposition of flows that conserve (round-off is left unassigned).

        Source: flow decomposition on the time-expanded DAG, instead of Basu et al. (HPDC'24) Sec. 3.1.3's
        "source-based LP + child LPs"; docs/alltoall.md, "Time-stepped MCF (tsMCF, eq. 15-20)".

        >>> w = tsmcf("ring:4").walks([0])
        >>> sorted(set(w["dest"].tolist())), round(float(w["weight"].sum()), 9), w["links"].shape[1]
        ([1, 2, 3], 3.0, 2)
        """
        net, lmax = self.network, self.lmax
        fsrc, fstep, flink, fval = self._flows if self.method == "symmetric" else self._all_flows[0]
        hsrc, hstep, hnode, hval = self._holds if self.method == "symmetric" else self._all_flows[1]
        if sources is None:
            sources = np.unique(fsrc)
        out = {"source": [], "dest": [], "weight": [], "links": []}
        out_links = _out_links(net)
        for s in np.asarray(sources, dtype=np.int64):
            f = np.zeros((lmax, net.num_links))
            sel = fsrc == s
            f[fstep[sel], flink[sel]] = fval[sel]
            h = np.zeros((lmax, net.num_nodes))
            sel = hsrc == s
            h[hstep[sel], hnode[sel]] = hval[sel]
            for d, w, links in _split_source(int(s), f, h, out_links, net.link_dst, net.num_compute):
                out["source"].append(int(s))
                out["dest"].append(d)
                out["weight"].append(w)
                out["links"].append(links)
        return {"source": np.asarray(out["source"], dtype=np.int64), "dest": np.asarray(out["dest"], dtype=np.int64),
                "weight": np.asarray(out["weight"], dtype=float),
                "links": np.asarray(out["links"], dtype=np.int64).reshape(-1, lmax)}

    def to_dict(self) -> dict:
        """JSON-ready summary (value in capacity units, times in m / b, l_max in steps, stage seconds in s). Raises:
        Nothing. Source: docs/alltoall.md, "Time-stepped MCF (tsMCF, eq. 15-20)"."""
        return {"spec": self.spec, "tsmcf_value": self.value, "time_m_over_b": self.time, "lmax": self.lmax,
                "step_time": self.step_time.tolist(), "method": self.method, "solver": self.solver,
                "alltoall_mcf": self.mcf_value, "tried": {str(k): v for k, v in self.tried.items()},
                "seconds": dict(self.seconds),
                **({"host_bandwidth_bytes_per_s": self.host_bandwidth} if self.host_bandwidth else {})}


def _out_links(net: FlowNetwork) -> list[np.ndarray]:
    order = np.argsort(net.link_src, kind="stable")
    bounds = np.searchsorted(net.link_src[order], np.arange(net.num_nodes + 1))
    return [order[bounds[u]: bounds[u + 1]] for u in range(net.num_nodes)]


def _split_source(s: int, f: np.ndarray, h: np.ndarray, out_links, link_dst, n: int, eps: float = 1e-10):
    """Greedy walk decomposition of one source's time-expanded flow (f: (lmax, E) link flows, h: (lmax, V)
    holds): from (s, 0) follow the widest residual edge (a link, or holding) of every step to time lmax, where
    the walk's node is its destination; subtract the walk's width. Yields (dest, weight, links)."""
    lmax = f.shape[0]
    supply = float(n - 1)
    while supply > eps * n:
        u, width, links, nodes = s, supply, [], [s]
        for t in range(lmax):
            outs = out_links[u]
            flows = f[t, outs]
            k = int(np.argmax(flows)) if len(outs) else -1
            move = flows[k] if k >= 0 else 0.0
            if h[t, u] >= move:
                links.append(-1)
                width = min(width, h[t, u])
            else:
                links.append(int(outs[k]))
                width = min(width, move)
                u = int(link_dst[outs[k]])
            nodes.append(u)
        if width <= eps:
            return  # only round-off is left (the caller renormalises every pair)
        for t, j in enumerate(links):
            if j < 0:
                h[t, nodes[t]] -= width
            else:
                f[t, j] -= width
        supply -= width
        yield nodes[-1], width, links


# -- the LP ---------------------------------------------------------------------------------------------------
def _ts_lp(net: FlowNetwork, lmax: int, symmetric: bool, scale: float, host: float | None = None) -> LinearProgram:
    """tsMCF LP on the time-expanded graph (see the module docstring).

    Columns: ``f[s, t, e]`` (link e in step t) at ``(s lmax + t) E + e``; then ``g[s, t, u]`` (u holds during
    step t) at ``S lmax E + (s lmax + t) V + u``; then ``W_t = scale U_t``. Rows: capacity ``sum_s f[s, t, e] -
    cap_e / scale W_t <= 0`` at ``t K + e`` (``t K + orbit(e)`` when symmetric, K = #orbits), then conservation
    at the time-expanded node (u, t), t = 0..lmax, ``out_t + g[t] - in_{t-1} - g[t-1] = b`` at
    ``lmax K + (s (lmax + 1) + t) V + u``, with b = N - 1 at (s, 0) and -1 at (d, lmax) for every compute
    d != s. Objective: min sum_t W_t. With ``host`` (host capacity relative to the reference), host rows after
    those: ``sum_{s, e out of u} f[s, t, e] - host / scale W_t <= 0`` at ``R + t 2N + u`` and the same over the
    links into u at ``R + t 2N + N + u`` (R: the rows before); symmetric: one row per step, ``R + t``, over all
    links of source 0 (see the module docstring).
    """
    n, v, e, lm = net.num_compute, net.num_nodes, net.num_links, lmax
    sources = np.array([0]) if symmetric else np.arange(n)
    ns = len(sources)
    if symmetric:
        orbits, orbit_of = np.unique(net.orbit, return_inverse=True)
        k = len(orbits)
        cap = np.empty(k)
        cap[orbit_of] = net.capacity
    else:
        orbit_of, k, cap = np.arange(e), e, net.capacity
    r0 = lm * k
    # flows: leave (src, t), enter (dst, t + 1)
    s_f, t_f, j_f = (a.ravel() for a in np.meshgrid(np.arange(ns), np.arange(lm), np.arange(e), indexing="ij"))
    col_f = np.arange(ns * lm * e, dtype=np.int64)
    base_f = r0 + (s_f * (lm + 1) + t_f) * v
    # holds: leave (u, t), enter (u, t + 1)
    nh = ns * lm * v
    s_h, t_h, u_h = (a.ravel() for a in np.meshgrid(np.arange(ns), np.arange(lm), np.arange(v), indexing="ij"))
    col_h = ns * lm * e + np.arange(nh, dtype=np.int64)
    row_h = r0 + (s_h * (lm + 1) + t_h) * v + u_h
    # step durations
    col_w0 = ns * lm * e + nh
    t_w, k_w = (a.ravel() for a in np.meshgrid(np.arange(lm), np.arange(k), indexing="ij"))
    rows = np.concatenate([t_f * k + orbit_of[j_f], base_f + net.link_src[j_f], base_f + v + net.link_dst[j_f],
                           row_h, row_h + v, t_w * k + k_w])
    cols = np.concatenate([col_f, col_f, col_f, col_h, col_h, col_w0 + t_w])
    vals = np.concatenate([np.ones(len(col_f)), np.ones(len(col_f)), -np.ones(len(col_f)), np.ones(nh),
                           -np.ones(nh), -cap[k_w] / scale])
    ncol, nrow = col_w0 + lm, r0 + ns * (lm + 1) * v
    a = sp.csc_matrix((vals, (rows, cols)), shape=(nrow, ncol))
    rhs = np.zeros((ns, lm + 1, v))
    rhs[np.arange(ns), 0, sources] = n - 1
    rhs[:, lm, :n] = -1.0
    rhs[np.arange(ns), lm, sources] = 0.0
    rhs = rhs.ravel()
    col_upper = np.full(ncol, np.inf)
    useless = (net.link_dst[j_f] == sources[s_f]) | (net.link_src[j_f] == net.link_dst[j_f])
    col_upper[col_f[useless]] = 0.0
    cost = np.r_[np.zeros(col_w0), np.ones(lm)]
    lower, upper = np.r_[np.full(r0, -np.inf), rhs], np.r_[np.zeros(r0), rhs]
    if host is not None:
        a, nh_rows = _host_rows(a, net, lm, symmetric, t_f, j_f, col_f, col_w0, host / scale)
        lower, upper = np.r_[lower, np.full(nh_rows, -np.inf)], np.r_[upper, np.zeros(nh_rows)]
    return LinearProgram(a, cost, np.zeros(ncol), col_upper, lower, upper)


def _host_rows(a, net: FlowNetwork, lm: int, symmetric: bool, t_f, j_f, col_f, col_w0: int, host: float):
    """The tsMCF LP's matrix ``a`` with the host rows of :func:`_ts_lp` appended; returns (matrix, rows added)."""
    n = net.num_compute
    if symmetric:  # every link leaves one host: source 0's total flow of step t bounds every host's out (and in)
        rows, cols, vals = t_f, col_f, np.ones(len(col_f))
        nrows = lm
        rows, cols = np.r_[rows, np.arange(lm)], np.r_[cols, col_w0 + np.arange(lm)]
        vals = np.r_[vals, np.full(lm, -host)]
    else:
        out, into = net.link_src[j_f], net.link_dst[j_f]
        o, i = out < n, into < n
        rows = np.r_[t_f[o] * 2 * n + out[o], t_f[i] * 2 * n + n + into[i]]
        cols, vals = np.r_[col_f[o], col_f[i]], np.ones(int(o.sum() + i.sum()))
        nrows = lm * 2 * n
        t_w = np.repeat(np.arange(lm), 2 * n)
        rows, cols = np.r_[rows, np.arange(nrows)], np.r_[cols, col_w0 + t_w]
        vals = np.r_[vals, np.full(nrows, -host)]
    extra = sp.csc_matrix((vals, (rows, cols)), shape=(nrows, a.shape[1]))
    return sp.vstack([a, extra], format="csc"), nrows


def _solve_ts(net: FlowNetwork, lmax: int, symmetric: bool, solver: str, options, host: float | None = None):
    n, e, v, lm = net.num_compute, net.num_links, net.num_nodes, lmax
    scale = float(net.capacity.sum()) / (n * (n - 1))
    lp = _ts_lp(net, lm, symmetric, scale, host)
    lp.name = f"time-stepped MCF LP ({lm} steps{', symmetric' if symmetric else ''})"
    x, obj, how = solve_lp(lp, solver, options)
    ns = 1 if symmetric else n
    f = x[: ns * lm * e].reshape(ns, lm, e)
    h = x[ns * lm * e: ns * lm * e + ns * lm * v].reshape(ns, lm, v)
    step_time = np.clip(x[-lm:], 0.0, None) / scale
    s, t, j = np.nonzero(f > FLOW_EPS)
    hs, ht, hu = np.nonzero(h > FLOW_EPS)
    flows = (s.astype(np.int64), t.astype(np.int64), j.astype(np.int64), f[s, t, j])
    holds = (hs.astype(np.int64), ht.astype(np.int64), hu.astype(np.int64), h[hs, ht, hu])
    return float(step_time.sum()), step_time, flows, holds, how


def tsmcf(topology, *, lmax: int | None = None, method: str = "auto", solver: str = "auto",
          reference_bandwidth=None, highs_options: dict | None = None, host_bandwidth=None,
          nic_forwarding: bool = False) -> TsMcfResult:
    """Time-stepped all-to-all MCF (Basu et al. Sec. 3.1.3, eq. 15-20) on the time-expanded graph.

    Args:
        topology: a :class:`Topology` or a spec string.
        lmax: number of steps (>= the hop diameter between compute nodes, at most :data:`LMAX_LIMIT`); None:
            the diameter, then one more step at a time while the value improves by more than
            :data:`LMAX_TOLERANCE` (relative) and is below the fluid F, at most diameter + :data:`LMAX_EXTRA`.
        method: ``auto`` (``symmetric`` on Cayley topologies with translation-invariant capacities, else
            ``source``), ``source`` or ``symmetric``.
        solver: as :func:`alltoall_mcf` (``auto``, ``simplex``, ``ipm``, ``pdlp``).
        reference_bandwidth: bytes/s (or a string) of capacity 1; default the largest link bandwidth.
        highs_options: extra HiGHS options.
        host_bandwidth: bytes/s (or a string such as ``100Gbps``) of every host <-> NIC link, the host forwarding
            (Basu Sec. 3.2.2, Fig. 2); None: no host bottleneck.
        nic_forwarding: must be False: time-stepped schedules forward in the host (NIC forwarding: the path
            schedules of :mod:`~directcoll.synthesis.mcf.paths`).

    Returns:
        :class:`TsMcfResult`: value (1 / time), time in m / b, U_t per step, per-step per-link flows.

    Raises:
        UnsupportedShapeError: lmax below the diameter or above the limit, an unknown method or solver,
            ``symmetric`` on a topology without the symmetry; a non-positive bandwidth; ``nic_forwarding``.
        TopologyError, SpecError, DirectcollError: as :func:`alltoall_mcf`.
        SolverError: HiGHS rejects an option or does not reach the optimum (SolverLimitError: a limit).
        ResourceError: the hop distances or an LP exceed the memory budget.

    Source: Basu et al. (HPDC'24) Sec. 3.1.3, eq. (15)-(20), as the exact source-aggregated reformulation of
    this module's docstring (eq. (17) read as the hold variables being >= 0; eq. (16) with link capacities
    cap(u, v) U_t, Basu's "multiplier ... if link bandwidth is not uniform"); the host rows are Sec. 3.2.2, Fig. 2.

    >>> r = tsmcf("ring:4")
    >>> r.method, r.lmax, round(r.time, 9), round(r.mcf_value, 9)
    ('symmetric', 2, 2.0, 0.5)

    A host link of one link's bandwidth: every host forwards 1 + 2 + 1 = 4 shard-hops per source, F = 1/4
    instead of 1/2:

    >>> r = tsmcf("ring:4", host_bandwidth="50GB/s")
    >>> round(r.value * 4, 9), round(r.mcf_value * 4, 9)
    (1.0, 1.0)
    """
    from directcoll.topology.spec import parse
    from directcoll.units import parse_bandwidth

    if method not in TS_METHODS:
        raise UnsupportedShapeError(f"unknown tsMCF method {method!r}; accepted: {', '.join(TS_METHODS)}")
    if solver not in SOLVERS:
        raise UnsupportedShapeError(f"unknown LP solver {solver!r}; accepted: {', '.join(SOLVERS)}")
    if nic_forwarding:
        raise UnsupportedShapeError("time-stepped MCF forwards in the host (Basu Sec. 3.2.2); for NIC forwarding use "
                                    "the path schedules (mcf variant 'path' or 'extp')")
    topology: Topology = parse(topology)
    ref = None if reference_bandwidth is None else parse_bandwidth(reference_bandwidth)
    host = None if host_bandwidth is None else parse_bandwidth(host_bandwidth)
    if host is not None and not host > 0:
        raise UnsupportedShapeError(f"host bandwidth must be > 0 bytes/s, got {host_bandwidth!r}")
    t0 = time.perf_counter()
    net = flow_network(topology, reference_bandwidth=ref)
    ref = float(topology.link_bandwidth.max()) if ref is None else ref
    host_cap = None if host is None else host / ref
    symmetric_ok = is_translation_symmetric(net)
    if method == "auto":
        method = "symmetric" if symmetric_ok else "source"
    if method == "symmetric" and not symmetric_ok:
        raise UnsupportedShapeError(f"{topology.spec}: tsMCF method 'symmetric' needs a Cayley topology with the "
                                    "same bandwidth on every port's links; use 'source'")
    diam = diameter(net)
    if lmax is not None and not diam <= int(lmax) <= LMAX_LIMIT:
        raise UnsupportedShapeError(f"{topology.spec}: lmax must be between the diameter {diam} and {LMAX_LIMIT}, "
                                    f"got {lmax}")
    seconds = {"build": time.perf_counter() - t0}
    mcf_value = None
    if lmax is None:
        t1 = time.perf_counter()
        mcf_value = alltoall_mcf(topology, reference_bandwidth=ref, solver=solver, highs_options=highs_options,
                                 host_bandwidth=host).value
        seconds["mcf"] = time.perf_counter() - t1
    symmetric = method == "symmetric"
    candidates = [int(lmax)] if lmax is not None else range(diam, min(diam + LMAX_EXTRA, LMAX_LIMIT) + 1)
    tried, best = {}, None
    t2 = time.perf_counter()
    for lm in candidates:
        total, step_time, flows, holds, how = _solve_ts(net, lm, symmetric, solver, highs_options, host_cap)
        tried[lm] = 1.0 / total
        if best is not None and total >= best[1] * (1 - LMAX_TOLERANCE):
            break  # no improvement: keep the shorter schedule
        best = (lm, total, step_time, flows, holds, how)
        if mcf_value is not None and 1.0 / total >= mcf_value * (1 - LMAX_TOLERANCE):
            break  # the fluid optimum is reached
    seconds["solve"] = time.perf_counter() - t2
    lm, total, step_time, flows, holds, how = best
    return TsMcfResult(value=1.0 / total, time=total, lmax=lm, step_time=step_time, method=method, solver=how,
                       spec=topology.spec, network=net, reference_bandwidth=ref, mcf_value=mcf_value, tried=tried,
                       seconds=seconds, host_bandwidth=host, _flows=flows, _holds=holds)


