"""A certified bracket lower <= F <= upper on the all-to-all MCF value for topologies too large for the exact LP.

The exact link LP (:func:`~directcoll.synthesis.mcf.link.alltoall_mcf`) has N |E| columns: 4 million on a 1,000-node
degree-4 graph, far beyond a 2-core machine for non-Cayley graphs (measured in docs/benchmarks.md). Basu et al.'s
topology study (Sec. 5.4, Fig. 10) needs F on such graphs, and a bracket a fraction of a percent wide answers
its questions. Both ends are proofs, not estimates:

* **upper** (weak duality of the max concurrent flow LP, Basu eq. 1-5): for any link lengths w >= 0, not all
  zero, a routing of F per pair puts at least ``F * dist_w(s, t)`` of w-weighted flow on the links for every
  pair, and at most ``sum_e c_e w_e`` fits, so ``F <= sum_e c_e w_e / sum_{s != t} dist_w(s, t)``;
* **lower** (a feasible routing): a convex combination x of shortest-path-tree routings (every source sends one
  unit to every other compute node along a tree) carries ``F = 1 / max_e(x_e / c_e)`` per pair.

The routing is improved by Frank-Wolfe on the link congestion: the lengths are the softmax gradient
``w_e = exp(mu (x_e / c_e - max) / max) / c_e`` of the congestion, every source's shortest-path tree under w
is the descent direction (one all-sources Dijkstra, scipy), and the step minimizes the maximum congestion
exactly (or, where that minimum is at step 0, is the classic 2 / (k + 2)). The same w gives the upper bound.
Each iteration costs one Dijkstra from every compute node and a vectorized subtree-size accumulation: 0.3 s at
N = 1,000, d = 4. The upper bound converges fast (within 0.5 % of F after 400 iterations on genkautz:4:100),
the feasible routing more slowly (3 % there), so the gap is reported and the caller decides; the tests check
``lower <= F <= upper`` against the LP on small graphs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from directcoll.errors import UnsupportedShapeError
from directcoll.synthesis.mcf.network import flow_network
from directcoll.topology.model import Topology

#: Softmax sharpness of the link lengths, relative to the current maximum congestion (tuned on genkautz:4:200,
#: where 10, 20, 60 and 150 end 400 iterations at gaps of 3.9 %, 2.1 %, 3.3 % and 9.9 %).
SOFTMAX_SHARPNESS = 20.0
#: Lengths are floored at this fraction of the largest, so a child's distance always exceeds its parent's in
#: floating point (the subtree sizes are accumulated in order of distance).
LENGTH_FLOOR = 1e-9


@dataclass(frozen=True, eq=False)
class McfBracket:
    """lower <= F <= upper, F in units of the reference link capacity (as :class:`McfResult.value`).

    Attributes:
        spec: the topology.
        lower: F of the best routing found (feasible).
        upper: the best weak-duality bound.
        iterations: Frank-Wolfe iterations run.
        seconds: wall time.
        link_load: float64 (E,) load per unit of pair demand of the best routing, on the flow network's links.
        rel_gap: the target relative gap the run stopped at or aimed for.
        max_iterations: the iteration cap of the run.
        lengths: float64 (E,) the link lengths w of the best upper bound (its dual certificate), or None.

    Raises:
        Nothing: a frozen record built by :func:`alltoall_mcf_bracket`.

    Source: Basu et al. (HPDC'24) Sec. 3.1.1, eq. (1)-(5) (F, whose LP dual gives the upper end); the method is
    this module's docstring and docs/alltoall.md, "Bounds".

    >>> b = alltoall_mcf_bracket("petersen")
    >>> round(b.lower, 9), round(b.upper, 9), b.converged
    (0.2, 0.2, True)
    """

    spec: str
    lower: float
    upper: float
    iterations: int
    seconds: float
    link_load: np.ndarray
    rel_gap: float = 1e-3
    max_iterations: int = 400
    lengths: np.ndarray | None = None

    @property
    def converged(self) -> bool:
        """Whether the gap reached ``rel_gap``; False when the run stopped at ``max_iterations`` first (the bounds
        still hold, they are just farther apart than asked). Raises: Nothing. Source: docs/alltoall.md, "Bounds"."""
        return self.gap <= self.rel_gap

    @property
    def gap(self) -> float:
        """(upper - lower) / lower, the relative width of the bracket (dimensionless, >= 0). Raises: Nothing.
        Source: docs/alltoall.md, "Bounds"."""
        return (self.upper - self.lower) / self.lower

    def to_dict(self) -> dict:
        """JSON-ready summary (bounds in capacity units, seconds in s; no link loads). Raises: Nothing. Source:
        docs/alltoall.md, "Bounds" (``topology describe --alltoall --method bracket``)."""
        return {"spec": self.spec, "lower": self.lower, "upper": self.upper, "gap": self.gap,
                "converged": self.converged, "rel_gap": self.rel_gap, "iterations": self.iterations,
                "max_iterations": self.max_iterations, "seconds": self.seconds}


class TreeRouting:
    """Shortest-path-tree routing of every compute node's all-to-all row under link lengths w.

    Args:
        net: the :class:`~directcoll.synthesis.mcf.network.FlowNetwork` (parallel links allowed: the shortest of
            each (u, v) takes the trees' load).

    Raises:
        Nothing: stores the network's arrays.

    Source: the pricing step of Frank-Wolfe (this module) and of column generation
    (:mod:`~directcoll.synthesis.mcf.colgen`): min over routings of sum_e w_e load_e is a shortest-path tree
    per source (Basu et al. (HPDC'24) eq. (6)-(9), whose source-aggregated flows these trees are vertices of).

    >>> from directcoll.topology import parse
    >>> from directcoll.synthesis.mcf.network import flow_network
    >>> net = flow_network(parse("ring:4"))
    >>> total, load = TreeRouting(net).route(np.ones(8))
    >>> total, float(load.sum())  # 4 sources x (1 + 1 + 2) hops
    (16.0, 16.0)
    """

    def __init__(self, net):
        self.n, self.v = net.num_compute, net.num_nodes
        self.capacity = net.capacity
        self.src, self.dst = net.link_src, net.link_dst
        self.key = self.src * self.v + self.dst
        self.sinks = (np.arange(self.v) < self.n).astype(float)  # only compute nodes receive

    def route(self, w: np.ndarray, sources: np.ndarray | None = None, groups: np.ndarray | None = None):
        """Route every source's row along its shortest-path tree under the lengths ``w``.

        Args:
            w: float (E,) link lengths, > 0.
            sources: int (S,) the sources (default all compute nodes).
            groups: int (S,) a group id 0..k-1 per source, or None: the loads are then summed per group.

        Returns:
            (sum over the sources of the distances to every compute node under w, link loads: float64 (E,), or
            (k, E) with ``groups``), the loads in units of one pair's demand.

        Raises:
            Nothing: scipy Dijkstra and numpy (w must be positive: a caller's contract).

        Source: the class docstring.
        """
        sources = np.arange(self.n) if sources is None else sources
        # parallel links: the graph keeps the shortest of each (u, v) and its id takes the trees' load
        order = np.lexsort((w, self.key))
        first = np.r_[True, self.key[order][1:] != self.key[order][:-1]]
        keep = order[first]
        graph = sp.csr_matrix((w[keep], (self.src[keep], self.dst[keep])), shape=(self.v, self.v))
        dist, pred = dijkstra(graph, indices=sources, return_predecessors=True)
        total = float(dist[:, : self.n].sum())
        size = np.broadcast_to(self.sinks, dist.shape).copy()
        rows = np.arange(len(sources))
        by_distance = np.argsort(dist, axis=1, kind="stable")
        for k in range(self.v - 1, 0, -1):  # farthest first: a node's subtree is complete before its parent's turn
            node = by_distance[:, k]
            parent = pred[rows, node]
            ok = parent >= 0  # one (row, parent) per row: plain fancy-index accumulation is exact
            size[rows[ok], parent[ok]] += size[rows[ok], node[ok]]
        s, node = np.nonzero(pred >= 0)
        keys, ids = self.key[keep], keep
        sorter = np.argsort(keys)
        link = ids[sorter[np.searchsorted(keys, pred[s, node] * self.v + node, sorter=sorter)]]
        e = len(self.src)
        if groups is None:
            return total, np.bincount(link, weights=size[s, node], minlength=e)
        k = int(groups.max()) + 1
        loads = np.bincount(groups[s] * e + link, weights=size[s, node], minlength=k * e)
        return total, loads.reshape(k, e)


class FrankWolfe:
    """The Frank-Wolfe state of :func:`alltoall_mcf_bracket` (see the module docstring), one :meth:`step` at a time:
    the routing x (a convex combination of tree routings), the best feasible F (``lower``, ``best_load``) and the
    best weak-duality bound (``upper``, ``best_w``).

    Raises:
        Nothing: routes the hop-shortest trees first.

    Source: this module's docstring.

    >>> from directcoll.topology import parse
    >>> from directcoll.synthesis.mcf.network import flow_network
    >>> fw = FrankWolfe(flow_network(parse("petersen")))
    >>> round(fw.lower, 9), round(fw.upper, 9)  # F = 1/5: the hop-shortest trees are already optimal
    (0.2, 0.2)
    """

    def __init__(self, net) -> None:
        self.routing, self.cap = TreeRouting(net), net.capacity
        w = 1.0 / self.cap
        total, self.x = self.routing.route(w)
        self.upper, self.best_w = float(self.cap @ w) / total, w
        self.best_load, self.lower = self.x, 1.0 / float(np.max(self.x / self.cap))

    def step(self, it: int) -> None:
        """One iteration (``it`` counts from 1: the fallback step is 2 / (it + 2)). Raises: Nothing. Source: this
        module's docstring."""
        cap = self.cap
        congestion = self.x / cap
        top = float(congestion.max())
        w = np.exp(SOFTMAX_SHARPNESS * (congestion - top) / top) / cap
        w = np.maximum(w, LENGTH_FLOOR * w.max())
        total, y = self.routing.route(w)
        if float(cap @ w) / total < self.upper:
            self.upper, self.best_w = float(cap @ w) / total, w
        step = _best_step(congestion, y / cap)
        # the maximum is flat along y more often than not: then the classic 2 / (k + 2) step keeps x moving
        self.x = self.x + (step if step > 1e-6 else 2.0 / (it + 2)) * (y - self.x)
        value = 1.0 / float(np.max(self.x / cap))
        if value > self.lower:
            self.lower, self.best_load = value, self.x


def _best_step(a: np.ndarray, b: np.ndarray) -> float:
    """argmin over g in [0, 1] of max((1 - g) a + g b), a convex piecewise-linear function (ternary search)."""
    lo, hi = 0.0, 1.0
    for _ in range(60):
        m1, m2 = lo + (hi - lo) / 3, hi - (hi - lo) / 3
        if np.max(a + m1 * (b - a)) < np.max(a + m2 * (b - a)):
            hi = m2
        else:
            lo = m1
    return (lo + hi) / 2


def alltoall_mcf_bracket(topology, *, rel_gap: float = 1e-3, max_iterations: int = 400, host_bandwidth=None,
                         nic_forwarding: bool = False, reference_bandwidth=None, progress=None) -> McfBracket:
    """Bounds lower <= F <= upper on the all-to-all MCF value F (see the module docstring).

    Args:
        topology: a spec or :class:`Topology`.
        rel_gap: stop when (upper - lower) / lower is at most this.
        max_iterations: stop after this many Frank-Wolfe iterations in any case.
        host_bandwidth, nic_forwarding, reference_bandwidth: as :func:`~directcoll.synthesis.mcf.link.alltoall_mcf`.
        progress: optional callable(iteration, max_iterations, gap) after every iteration.

    Returns:
        :class:`McfBracket`; its ``converged`` is False when ``max_iterations`` ran out before ``rel_gap``.

    Raises:
        UnsupportedShapeError: rel_gap < 0 or max_iterations < 0 or not an integer; a non-positive bandwidth.
        TopologyError, SpecError: as :func:`~directcoll.synthesis.mcf.network.flow_network` and the spec parser.
        DirectcollError: a bandwidth string cannot be read.

    Source: upper end: weak duality of Basu et al. (HPDC'24) eq. (1)-(5); lower end: a feasible routing; both
    improved by Frank-Wolfe (this module's docstring, docs/alltoall.md, "Bounds"). The tests check
    lower <= F <= upper against :func:`~directcoll.synthesis.mcf.link.alltoall_mcf`.

    >>> b = alltoall_mcf_bracket("hypercube:3", max_iterations=5)  # F = 1/4
    >>> b.lower < 0.25, round(b.upper, 9), b.iterations, b.converged, b.link_load.shape
    (True, 0.25, 5, False, (24,))
    """
    from directcoll.topology.spec import parse
    from directcoll.units import parse_bandwidth

    if not rel_gap >= 0 or int(max_iterations) != max_iterations or max_iterations < 0:
        raise UnsupportedShapeError(f"need rel_gap >= 0 and an integer max_iterations >= 0, got {rel_gap!r} and "
                                    f"{max_iterations!r}")
    topo: Topology = parse(topology)
    t0 = time.perf_counter()
    host = None if host_bandwidth is None else parse_bandwidth(host_bandwidth)
    ref = None if reference_bandwidth is None else parse_bandwidth(reference_bandwidth)
    net = flow_network(topo, host_bandwidth=host, nic_forwarding=nic_forwarding, reference_bandwidth=ref)
    fw = FrankWolfe(net)
    it = 0
    while it < max_iterations and (fw.upper - fw.lower) / fw.lower > rel_gap:
        it += 1
        fw.step(it)
        if progress is not None:
            progress(it, max_iterations, (fw.upper - fw.lower) / fw.lower)
    upper, lower, best_load, best_w = fw.upper, fw.lower, fw.best_load, fw.best_w
    return McfBracket(topo.spec, lower, upper, it, time.perf_counter() - t0, best_load, float(rel_gap),
                      int(max_iterations), best_w)
