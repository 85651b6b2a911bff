"""All-to-all MCF on graphs without usable symmetry: split ratios on per-source DAGs (a feasible routing, the lower
bound) against link lengths (weak duality, the upper bound), iterated to a requested certified gap.

**Routing (lower bound).** Every source s gets a DAG: the links u -> v with dist_w0(s, u) < dist_w0(s, v) under
link lengths w0, the hop lengths 1 / c_e perturbed by :data:`PERTURBATION` (every shortest path lies in it, and so
do paths through links between equally distant nodes, one hop longer). Any choice of *in-split
ratios* psi_s(p -> v) >= 0, summing to 1 over the DAG links into v, defines an exactly conserving flow that sinks one
unit at every compute node: taking nodes farthest first, node v must receive T_s(v) = [v is a compute node] +
(what its out-links carry), and its in-link p -> v carries psi_s(p -> v) T_s(v). (With one parent per node this is
the shortest-path tree routing of :mod:`~directcoll.synthesis.mcf.bracket`.) The loads of all sources give
F_low = 1 / max_e(load_e / c_e), certified whatever the ratios are.

**Optimising the ratios** (Gallager's minimum-delay routing, 1977; origin-based traffic assignment, Bar-Gera 2002):
the potential Phi = sum_e exp(alpha load_e / (c_e max)) smooths the maximum congestion; its gradient gives link
lengths w_e. The marginal cost of feeding v from parent p is D_s(p) + w(p, v), where D_s(p), the w-length of the
average path s -> p under the current ratios, comes from one pass nearest first. Every ratio is multiplied by
exp(-eta (m_p - min m) / D_s(v)) and renormalised: flow moves towards the cheapest parents at every node of every
source at once, which is what makes it converge where Frank-Wolfe (one common step for all sources) tails off.
A step is kept only if it lowers the potential (eta then grows by 1.5, else it shrinks by 0.3); the sharpness
alpha grows (continuation) when the potential stops improving, and at full sharpness the DAGs are re-oriented by
the best upper bound's lengths (optimal flows lie on their shortest paths). Both passes are vectorised across
sources and nodes (one numpy step per depth of the DAGs, about twice the diameter).

**Upper bound.** Weak duality at any lengths w >= 0 (Basu eq. 1-5's dual): F <= sum_e c_e w_e /
sum_{s != t} dist_w(s, t), evaluated at the hop lengths 1 / c_e (the capacity bound), at the lengths of
:data:`WARM_ITERATIONS` Frank-Wolfe iterations run first (:func:`~directcoll.synthesis.mcf.bracket.
alltoall_mcf_bracket`, whose dual-averaged lengths are the best measured), and every :data:`BOUND_EVERY` iterations
at softmax lengths of the current routing; the best is kept.

Stops when (upper - lower) / lower <= ``rel_gap`` (default 1 %), after ``time_limit`` seconds or after
``max_iterations``; every iteration reports (iteration, lower, upper, gap) to ``progress``.

Source: Basu et al. (HPDC'24) Sec. 3.1.1-3.1.2, eq. (1)-(9) (the LP, whose dual gives the upper end); R. Gallager,
"A minimum delay routing algorithm using distributed computation" (IEEE Trans. Commun. 1977) for the split-ratio
update; H. Bar-Gera, "Origin-based algorithm for the traffic assignment problem" (Transp. Sci. 2002) for the
per-origin DAGs; docs/alltoall.md, "Methods" (``certified``: a certified gap).
"""

from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from directcoll.errors import UnsupportedShapeError
from directcoll.resources import check_memory
from directcoll.synthesis.mcf.bracket import FrankWolfe, McfBracket, TreeRouting
from directcoll.synthesis.mcf.network import FlowNetwork, flow_network

#: Iterations between two evaluations of the weak-duality upper bound (one Dijkstra from every source).
BOUND_EVERY = 10
#: Frank-Wolfe iterations (:class:`~directcoll.synthesis.mcf.bracket.FrankWolfe`) run first, then one more per
#: split-ratio iteration: their dual-averaged lengths gave the best upper bounds measured (jellyfish:150:4: 0.006600
#: after 400, against 0.006619 from the split ratios' own softmax lengths).
WARM_ITERATIONS = 50
#: Relative perturbation of the hop lengths 1 / c_e that orients the links between equally distant nodes, so the
#: DAGs also hold paths one hop longer than the shortest (seeded: the result is reproducible).
PERTURBATION = 0.01
#: Starting ratio of the DAG links that lie on no shortest path (the shortest ones share the rest evenly).
START_DETOUR = 1e-3
#: Sharpnesses (relative to the maximum congestion) of the softmax lengths at which the upper bound is evaluated,
#: besides the potential's own.
BOUND_SHARPNESS = (5.0, 10.0, 20.0, 40.0)
#: Continuation of the potential's sharpness alpha: multiplied by SHARPEN (up to MAX_SHARPNESS) after STALL
#: iterations without a relative gain of 1e-4 in the potential.
SHARPEN, MAX_SHARPNESS, STALL = 1.3, 3000.0, 5
#: At full sharpness and stalled, the DAGs are rebuilt from the best upper bound's lengths (plus this share of the
#: hop lengths, which orients links of zero dual length), at most once every REBUILD_AFTER iterations.
REBUILD_HOP_WEIGHT, REBUILD_AFTER = 1e-3, 50
#: Bytes per (source, node, in-link slot) of the DAG arrays (parent, link, ratio, flow and temporaries).
BYTES_PER_SLOT = 64


class _Dags:
    """Per-source DAGs as padded (S, V, slots) arrays of in-links, and the passes over them."""

    def __init__(self, net: FlowNetwork, hops: np.ndarray, w0: np.ndarray):
        n, v = net.num_compute, net.num_nodes
        dist = dijkstra(_shortest_graph(net, w0), indices=np.arange(n))
        self.n, self.v = n, v
        self.order = np.argsort(dist, axis=1, kind="stable")  # (n, v): nodes nearest first per source
        indeg = np.bincount(net.link_dst, minlength=v)
        slots = int(indeg.max())
        self.parent = np.full((n, v, slots), -1, dtype=np.int64)
        self.link = np.zeros((n, v, slots), dtype=np.int64)
        links = np.argsort(net.link_dst, kind="stable")
        start = np.r_[0, np.cumsum(indeg)]
        slot_of = np.arange(len(links)) - start[net.link_dst[links]]
        u, t = net.link_src[links], net.link_dst[links]
        forward = dist[:, u] < dist[:, t]  # (n, L): link u -> t lies in source s's DAG
        forward &= t[None, :] != np.arange(n)[:, None]
        s_idx, j = np.nonzero(forward)
        self.parent[s_idx, t[j], slot_of[j]] = u[j]
        self.link[s_idx, t[j], slot_of[j]] = links[j]
        self.valid = self.parent >= 0
        self.rows = np.arange(n)
        self.sinks = (np.arange(v) < n).astype(float)
        # start: split evenly among the parents on shortest paths under the unperturbed lengths ``hops``
        hop = dijkstra(_shortest_graph(net, hops), indices=np.arange(n))
        par = np.maximum(self.parent, 0)
        slack = hop[self.rows[:, None, None], par] + hops[self.link] - hop[:, :, None]
        tight = self.valid & (slack <= 1e-9 * (1.0 + np.abs(hop[:, :, None])))
        self.psi = np.where(tight, 1.0, 0.0) + self.valid * START_DETOUR
        self.psi /= np.maximum(self.psi.sum(axis=2, keepdims=True), 1e-300)
        # depth in the DAG (longest path from the source): the nodes of one depth have no links between them, so
        # each pass takes one vectorized step per depth (about twice the diameter) instead of one per node rank
        depth = np.zeros((n, v), dtype=np.int64)
        for k in range(1, v):
            node = self.order[:, k]
            par = self.parent[self.rows, node]
            pd = np.where(par >= 0, depth[self.rows[:, None], np.maximum(par, 0)], -1)
            depth[self.rows, node] = np.where(np.isfinite(dist[self.rows, node]), pd.max(axis=1) + 1, 0)
        depth[self.rows, self.rows] = 0
        flat = np.argsort(depth, axis=None, kind="stable")
        bounds = np.searchsorted(depth.ravel()[flat], np.arange(depth.max() + 2))
        self.levels = [np.divmod(flat[bounds[d]: bounds[d + 1]], v) for d in range(1, depth.max() + 1)]

    def ratios_from(self, link_flow: np.ndarray) -> np.ndarray:
        """In-split ratios that follow per-source link flows (S, E) where this DAG allows, else START_DETOUR."""
        f = np.where(self.valid, link_flow[self.rows[:, None, None], self.link], 0.0)
        f = f / np.maximum(f.sum(axis=2, keepdims=True), 1e-300) + self.valid * START_DETOUR
        return f / np.maximum(f.sum(axis=2, keepdims=True), 1e-300)

    def link_flows(self, flow: np.ndarray, num_links: int) -> np.ndarray:
        """(S, E) per-source link flows of a (S, V, slots) DAG flow."""
        out = np.zeros((self.n, num_links))
        np.add.at(out, (np.broadcast_to(self.rows[:, None, None], flow.shape)[self.valid], self.link[self.valid]),
                  flow[self.valid])
        return out

    def flows(self, psi: np.ndarray) -> np.ndarray:
        """(S, V, slots) flow on every DAG in-link: T_s(v) psi, deepest first."""
        total = np.broadcast_to(self.sinks, (self.n, self.v)).copy()
        for s_idx, node in reversed(self.levels):
            share = total[s_idx, node][:, None] * psi[s_idx, node]
            par = self.parent[s_idx, node]
            ok = par >= 0
            np.add.at(total, (np.broadcast_to(s_idx[:, None], par.shape)[ok], par[ok]), share[ok])
        return total[:, :, None] * psi

    def distances(self, psi: np.ndarray, w: np.ndarray) -> np.ndarray:
        """(S, V) mean w-length of the paths s -> v under the ratios psi, shallowest first."""
        dist = np.zeros((self.n, self.v))
        for s_idx, node in self.levels:
            par = self.parent[s_idx, node]
            d = np.where(par >= 0, dist[s_idx[:, None], np.maximum(par, 0)] + w[self.link[s_idx, node]], 0.0)
            dist[s_idx, node] = (psi[s_idx, node] * d).sum(axis=1)
        return dist


def _shortest_graph(net: FlowNetwork, w: np.ndarray) -> sp.csr_matrix:
    """The network as a sparse graph keeping the shortest of parallel links."""
    key = net.link_src * net.num_nodes + net.link_dst
    order = np.lexsort((w, key))
    keep = order[np.r_[True, key[order][1:] != key[order][:-1]]]
    return sp.csr_matrix((w[keep], (net.link_src[keep], net.link_dst[keep])), shape=(net.num_nodes,) * 2)


def alltoall_mcf_certified(topology, *, rel_gap: float = 0.01, time_limit: float | None = None,
                           max_iterations: int = 2000, warm_iterations: int = WARM_ITERATIONS,
                           host_bandwidth=None, nic_forwarding: bool = False,
                           reference_bandwidth=None, progress=None) -> McfBracket:
    """Certified bounds lower <= F <= upper on the all-to-all MCF value, iterated until the relative gap is at
    most ``rel_gap`` (see the module docstring).

    Args:
        topology: a spec or :class:`~directcoll.topology.model.Topology`.
        rel_gap: stop when (upper - lower) / lower <= this (default 1 %).
        time_limit: stop after this many seconds (checked between iterations), or None.
        max_iterations: stop after this many split-ratio iterations.
        warm_iterations: Frank-Wolfe iterations run first for the upper bound (0: none).
        host_bandwidth, nic_forwarding, reference_bandwidth: as :func:`~directcoll.synthesis.mcf.link.
            alltoall_mcf`.
        progress: optional callable(iteration, lower, upper, gap) after every iteration.

    Returns:
        :class:`~directcoll.synthesis.mcf.bracket.McfBracket` (``lower``, ``upper``, ``gap``, ``converged``,
        ``iterations``, ``seconds``, ``link_load``: the best routing's load per unit of pair demand).

    Raises:
        UnsupportedShapeError: rel_gap < 0, a non-integer or negative max_iterations, a non-positive time_limit or
            bandwidth.
        TopologyError, SpecError: as :func:`~directcoll.synthesis.mcf.network.flow_network` and the spec parser.
        ResourceError: the DAG arrays (sources x nodes x in-degree) would exceed the memory budget.
        DirectcollError: a bandwidth string cannot be read.

    Source: the module docstring (Basu et al. (HPDC'24) eq. (1)-(9); Gallager 1977; Bar-Gera 2002).

    >>> b = alltoall_mcf_certified("petersen", rel_gap=1e-9)  # F = 1/5
    >>> round(b.lower, 9), round(b.upper, 9), b.converged
    (0.2, 0.2, True)
    """
    from directcoll.topology.spec import parse
    from directcoll.units import parse_bandwidth

    if not rel_gap >= 0 or int(max_iterations) != max_iterations or max_iterations < 0:
        raise UnsupportedShapeError(f"need rel_gap >= 0 and an integer max_iterations >= 0, got {rel_gap!r} and "
                                    f"{max_iterations!r}")
    if time_limit is not None and not time_limit > 0:
        raise UnsupportedShapeError(f"time_limit must be > 0 seconds, got {time_limit!r}")
    t0 = time.perf_counter()
    topo = parse(topology)
    host = None if host_bandwidth is None else parse_bandwidth(host_bandwidth)
    ref = None if reference_bandwidth is None else parse_bandwidth(reference_bandwidth)
    net = flow_network(topo, host_bandwidth=host, nic_forwarding=nic_forwarding, reference_bandwidth=ref)
    n, v, cap = net.num_compute, net.num_nodes, net.capacity
    slots = int(np.bincount(net.link_dst, minlength=v).max())
    check_memory(f"the per-source DAGs of the certified all-to-all MCF on {topo.spec} ({n} sources x {v} nodes x "
                 f"{slots} in-links)", BYTES_PER_SLOT * float(n) * v * slots)
    routing = TreeRouting(net)
    hops = 1.0 / cap
    total, _ = routing.route(hops)
    upper, lower, best_load = float(cap @ hops) / total, 0.0, None
    fw = FrankWolfe(net)  # its dual-averaged lengths give the best upper bounds measured
    for i in range(warm_iterations):
        fw.step(i + 1)
        if progress is not None and i % 10 == 9:
            progress(0, fw.lower, fw.upper, (fw.upper - fw.lower) / fw.lower)
    upper, best_w = min(upper, fw.upper), fw.best_w
    lower, best_load = fw.lower, fw.best_load
    fw_it = warm_iterations
    w0 = hops * (1.0 + PERTURBATION * np.random.default_rng(0).random(len(cap)))
    dags = _Dags(net, hops, w0)
    psi = dags.psi
    alpha, eta, it, stall, last_build = 20.0, 1.0, 0, 0, 0
    flow = dags.flows(psi)
    load = np.bincount(dags.link.ravel(), weights=flow.ravel(), minlength=len(cap))
    cong = float(np.max(load / cap))
    ref_cong = cong

    def potential(x):
        z = alpha * (x / cap) / ref_cong
        return float(z.max() + np.log(np.exp(z - z.max()).sum()))

    phi = potential(load)
    while it < max_iterations:
        it += 1
        if 1.0 / cong > lower:
            lower, best_load = 1.0 / cong, load
        z = alpha * (load / cap) / ref_cong
        w = np.exp(z - z.max()) / cap
        w = np.maximum(w, 1e-12 * w.max())
        fw_it += 1  # one Frank-Wolfe iteration per split-ratio iteration: the upper bound goes on improving
        fw.step(fw_it)
        if fw.upper < upper:
            upper, best_w = fw.upper, fw.best_w
        if fw.lower > lower:
            lower, best_load = fw.lower, fw.best_load
        if it % BOUND_EVERY == 0:  # the smoother lengths of the same routing are often the better dual
            for a in (*BOUND_SHARPNESS, alpha):
                wa = np.exp(a * (load / cap - cong) / cong) / cap
                wa = np.maximum(wa, 1e-12 * wa.max())
                total, _ = routing.route(wa)
                if float(cap @ wa) / total < upper:
                    upper, best_w = float(cap @ wa) / total, wa
        gap = (upper - lower) / lower
        if progress is not None:
            progress(it, lower, upper, gap)
        if gap <= rel_gap or (time_limit is not None and time.perf_counter() - t0 >= time_limit):
            break
        dist = dags.distances(psi, w)
        par = np.maximum(dags.parent, 0)
        marginal = np.where(dags.valid, dist[dags.rows[:, None, None], par] + w[dags.link], np.inf)
        low = marginal.min(axis=2, keepdims=True)
        scale = np.maximum(dist[:, :, None], 1e-300)
        with np.errstate(invalid="ignore"):  # nodes without in-links (the sources): inf - inf, masked
            step = np.exp(-eta * np.minimum(np.where(dags.valid, (marginal - low) / scale, 0.0), 50.0))
        trial = psi * step
        trial /= np.maximum(trial.sum(axis=2, keepdims=True), 1e-300)
        trial_flow = dags.flows(trial)
        trial_load = np.bincount(dags.link.ravel(), weights=trial_flow.ravel(), minlength=len(cap))
        trial_phi = potential(trial_load)
        if trial_phi < phi:
            gain = (phi - trial_phi) / abs(phi)
            psi, load, phi = trial, trial_load, trial_phi
            cong = float(np.max(load / cap))
            eta = min(eta * 1.5, 1e4)
            stall = stall + 1 if gain < 1e-4 else 0
        else:
            eta *= 0.3
            stall += 1
        if stall >= STALL or eta < 1e-6:  # the smoothed problem is solved: sharpen (continuation)
            if alpha >= MAX_SHARPNESS and it - last_build >= REBUILD_AFTER:
                # stuck at full sharpness: re-orient the DAGs by the best dual lengths (optimal flows lie on
                # their shortest paths), keeping the current flows where the new DAGs allow them
                per_source = dags.link_flows(dags.flows(psi), len(cap))
                w_dag = best_w / best_w.max() + REBUILD_HOP_WEIGHT * hops / hops.max()
                w_dag = w_dag * (1.0 + 1e-6 * np.random.default_rng(it).random(len(cap)))
                dags = _Dags(net, hops, w_dag)
                psi = dags.ratios_from(per_source)
                flow = dags.flows(psi)
                load = np.bincount(dags.link.ravel(), weights=flow.ravel(), minlength=len(cap))
                cong, alpha, last_build = float(np.max(load / cap)), MAX_SHARPNESS / 8, it
            alpha, ref_cong, stall, eta = min(alpha * SHARPEN, MAX_SHARPNESS), cong, 0, max(eta, 1.0)
            phi = potential(load)
    if 1.0 / cong > lower:
        lower, best_load = 1.0 / cong, load
    return McfBracket(topo.spec, lower, upper, it, time.perf_counter() - t0, best_load, float(rel_gap),
                      int(max_iterations))


#: ``auto_method``: the exact LP is chosen while its flow columns (after the symmetry reductions) are at most this
#: many (line^2(circulant:64:6,7), 32,768 columns: 8 s; genkautz:4:1000, 400,000 columns: 797 s, docs/alltoall.md).
EXACT_MAX_COLUMNS = 100_000


def auto_method(topology, *, host_bandwidth=None, nic_forwarding: bool = False,
                max_columns: int = EXACT_MAX_COLUMNS) -> tuple[str, int]:
    """The method ``--method auto`` runs: symmetry first, the exact LP while it is small, else ``certified``.

    Args:
        topology: a spec or :class:`~directcoll.topology.model.Topology`.
        host_bandwidth, nic_forwarding: as :func:`~directcoll.synthesis.mcf.link.alltoall_mcf`.
        max_columns: the largest exact LP (flow columns) to choose.

    Returns:
        (method, columns): ``symmetric`` (Cayley topologies), ``automorphism`` (a non-trivial BLISS group) or
        ``link`` when that LP has at most ``max_columns`` flow columns, else ``certified``; and the exact LP's
        flow columns.

    Raises:
        TopologyError, SpecError: as :func:`~directcoll.synthesis.mcf.network.flow_network` and the spec parser.
        DirectcollError: a bandwidth string cannot be read.

    Source: docs/alltoall.md, "Methods" (symmetry where it exists, ``certified`` where the LP is too large;
    the thresholds).

    >>> auto_method("torus:8x8"), auto_method("genkautz:4:20"), auto_method("jellyfish:1000:4")
    (('symmetric', 257), ('automorphism', 20), ('certified', 4000000))
    """
    from directcoll.synthesis.mcf.network import is_translation_symmetric
    from directcoll.synthesis.mcf.symmetry import automorphism_orbits
    from directcoll.topology.automorphism import automorphism_group
    from directcoll.topology.spec import parse
    from directcoll.units import parse_bandwidth

    topo = parse(topology)
    host = None if host_bandwidth is None else parse_bandwidth(host_bandwidth)
    net = flow_network(topo, host_bandwidth=host, nic_forwarding=nic_forwarding)
    if is_translation_symmetric(net):
        return "symmetric", net.num_links + 1
    group = automorphism_group(topo)
    if group.order == 1:
        columns, method = net.num_compute * net.num_links, "link"
    else:
        columns, method = automorphism_orbits(net, topo, group).num_columns, "automorphism"
    return (method if columns <= max_columns else "certified"), columns
