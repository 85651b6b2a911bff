"""Path-based all-to-all flows for source-routed fabrics (Basu et al. Sec. 3.1.4, 3.2.1, eq. 21-24).

A fabric that routes in hardware needs, for every pair (s, d), a few paths and the share of the shard each one
carries. Two ways to get them:

* **pMCF** (eq. 21-24): choose a set of paths P(s, d) per pair, then one LP variable per path: maximize F
  subject to the capacity of every link (eq. 22) and every pair routing at least F over its paths (eq. 23). With
  every path allowed it equals the link MCF; restricted sets give F_pMCF <= F. Path sets
  (:func:`path_sets`): ``disjoint``, a maximum set of link-disjoint paths per pair (Basu: "a maximal set of
  link-disjoint (s, d) paths", here a maximum one, by BFS augmenting paths: Edmonds-Karp with unit
  capacities, so as many paths as the pair's link connectivity, each augmenting path a shortest one;
  :func:`directcoll.topology.paths.max_disjoint_paths`); ``shortest``, all shortest paths
  (:func:`directcoll.topology.paths.shortest_paths_from`, refused when a pair has more than ``max_shortest``,
  the cap policy of :mod:`directcoll.topology.paths`); ``auto`` (default),
  the union of the disjoint paths and, for pairs with at most ``max_shortest`` of them, all shortest paths.
  On Cayley topologies the path sets of source 0 are translated and the LP is solved on the link orbits (one
  row per orbit and destination), N times smaller, by the averaging argument of ``alltoall_mcf``'s symmetric
  method.
* **MCF-extP** (Sec. 3.2.1): solve the decomposed link MCF (``alltoall_mcf(method="decomposed")``, eq. 6-14:
  per-(s, d) link flows), then for every pair extract paths greedily by **widest path** (Dijkstra maximizing
  the bottleneck; :func:`widest_paths`) from the subgraph of its flow, subtracting
  each path's width, until no path is left.

**Host-to-NIC bottleneck** (``host_bandwidth``, Basu Sec. 3.2.2, Fig. 2; Sec. 5.1's torus: 100 Gb/s host, 6 x 25
Gb/s links): source-routed fabrics forward in the NIC, so a path crosses the host links of its ends only. Both
methods run on the NIC-forwarding network (``flow_network(nic_forwarding=True)``): pMCF adds each path's host ->
NIC and NIC -> host links to the topology's path sets, so eq. 22 bounds them too; MCF-extP extracts widest paths
from that network's MCF flows. Host forwarding is refused (the time-stepped schedules model it).

Both return a :class:`PathMcfResult`: paths as CSR over network link ids, the rate of every path (capacity
units) and its **weight** (its share of its pair's shard: rates normalised to add up to 1 per pair). Sending
every pair's shard split by the weights along the paths in one step takes ``time_m_over_b`` = max over links
of (sum of weights of the paths through it) / capacity, in units of (shard m) / (reference bandwidth b);
``value`` = 1 / that. For pMCF this is exactly 1 / F_pMCF (normalising never adds load, and any such one-step
schedule is a feasible pMCF point); for MCF-extP it is 1 / F up to the round-off the extraction drops.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np
import scipy.sparse as sp

from directcoll.errors import UnsupportedShapeError
from directcoll.lp import LinearProgram
from directcoll.synthesis.mcf.children import solve_children
from directcoll.synthesis.mcf.formulations import SOLVERS, solve_lp
from directcoll.synthesis.mcf.link import alltoall_mcf
from directcoll.synthesis.mcf.network import FlowNetwork, flow_network, is_translation_symmetric
from directcoll.topology.paths import (
    LinkLists,
    bfs_distances,
    max_disjoint_paths,
    path_counts,
    shortest_paths_from,
)
from directcoll.topology.routing import link_loads

PATH_SETS = ("auto", "disjoint", "shortest")
#: ``auto`` adds all shortest paths of a pair when it has at most this many (``shortest`` refuses more).
MAX_SHORTEST_PATHS = 64
EXTP_METHODS = ("auto", "decomposed", "pair")


@dataclass(frozen=True, eq=False)
class PathSet:
    """Paths between compute nodes, CSR over network link ids: path p runs ``links[offsets[p]:offsets[p+1]]``
    from ``source[p]`` to ``dest[p]``; paths of a pair are consecutive.

    Attributes:
        source, dest: int64 (P,) the pair of every path.
        offsets: int64 (P + 1,) CSR offsets into ``links``.
        links: int64 (R,) network link ids, path by path, in order.

    Raises:
        Nothing: a frozen record; :func:`path_sets` and :meth:`from_lists` build it.

    Source: Basu et al. (HPDC'24) Sec. 3.1.4 (the path set P(s, d) of every commodity).

    >>> p = PathSet.from_lists([0, 0], [1, 2], [[0], [0, 2]])
    >>> p.num_paths, p.offsets.tolist(), p.path_of_link.tolist()
    (2, [0, 1, 3], [0, 1, 1])
    """

    source: np.ndarray
    dest: np.ndarray
    offsets: np.ndarray
    links: np.ndarray

    @property
    def num_paths(self) -> int:
        """P, the number of paths. Raises: Nothing. Source: Basu et al. (HPDC'24) Sec. 3.1.4 (|P|)."""
        return len(self.source)

    @property
    def path_of_link(self) -> np.ndarray:
        """int64 (R,): the path of every entry of ``links``. Raises: Nothing. Source: Basu et al. (HPDC'24)
        eq. (22) (the paths p through each link e)."""
        return np.repeat(np.arange(self.num_paths), np.diff(self.offsets))

    def translated(self, net: FlowNetwork) -> PathSet:
        """Cayley networks: these paths (of source 0) moved to every source g = 0..N-1, source-major.

        Returns:
            :class:`PathSet` of N P paths (R N links): source g's paths are source 0's translated by g.

        Raises:
            UnsupportedShapeError: ``net`` is not a Cayley network
                (:meth:`~directcoll.synthesis.mcf.network.FlowNetwork.translate_links`).

        Source: docs/alltoall.md, "pMCF (eq. 21-24) and MCF-extP" (on Cayley topologies the paths of source 0
        are translated).

        >>> from directcoll.synthesis.mcf.network import flow_network
        >>> from directcoll.topology import parse
        >>> net = flow_network(parse("ring:4"))
        >>> path_sets(net, "shortest", sources=[0]).translated(net).num_paths
        16
        """
        n = net.num_compute
        g = np.arange(n, dtype=np.int64)[:, None]
        counts = np.diff(self.offsets)
        return PathSet(np.repeat(g[:, 0], self.num_paths), net.translate_node(self.dest[None, :], g).ravel(),
                       np.r_[0, np.cumsum(np.tile(counts, n))].astype(np.int64),
                       net.translate_links(self.links[None, :], g).ravel())

    @classmethod
    def from_lists(cls, source, dest, paths) -> PathSet:
        """A PathSet from per-path lists: ``source``, ``dest`` (P,) and ``paths`` (P lists of link ids). Raises:
        Nothing (lengths are the caller's to match). Source: Basu et al. (HPDC'24) Sec. 3.1.4 (path sets)."""
        counts = np.array([len(p) for p in paths], dtype=np.int64)
        links = np.concatenate([np.asarray(p, dtype=np.int64) for p in paths]) if paths else np.zeros(0, np.int64)
        return cls(np.asarray(source, dtype=np.int64), np.asarray(dest, dtype=np.int64),
                   np.r_[0, np.cumsum(counts)].astype(np.int64), links)


@dataclass(frozen=True, eq=False)
class PathMcfResult:
    """Weighted paths for every ordered pair of compute nodes (pMCF or MCF-extP).

    Attributes:
        value: 1 / :attr:`time_m_over_b`, the concurrent rate the weighted paths achieve (units of the
            reference capacity): F_pMCF for pMCF, F (up to dropped round-off) for MCF-extP.
        method: ``pmcf`` or ``extp``.
        path_set: the path set (``auto``, ``disjoint``, ``shortest``) or ``widest`` (MCF-extP).
        solver: how HiGHS got the optimum.
        spec: the topology spec.
        network: the :class:`FlowNetwork` whose link ids the paths use.
        reference_bandwidth: bytes/s of capacity 1.
        paths: the :class:`PathSet` (P paths; pairs consecutive).
        rate: float64 (P,), the LP rate of every path (capacity units; a pair's rates add up to >= F).
        mcf_value: the link MCF's F where it was computed (MCF-extP), else None.
        lp_value: the LP's optimum (F_pMCF for pMCF, the link MCF's F for MCF-extP).
        seconds: wall time of the stages.

    Raises:
        Nothing: a frozen record built by :func:`pmcf` and :func:`mcf_extp`.

    Source: Basu et al. (HPDC'24) Sec. 3.1.4, eq. (21)-(24) (pMCF) and Sec. 3.2.1 (MCF-extP); the one-step time
    is Sec. 4 ("Path-based Schedules": chunks steered onto routes by the path weights).

    >>> r = pmcf("ring:4", paths="shortest")
    >>> r.method, round(r.value, 9), round(r.lp_value, 9), r.paths.num_paths
    ('pmcf', 0.5, 0.5, 16)
    """

    value: float
    method: str
    path_set: str
    solver: str
    spec: str
    network: FlowNetwork
    reference_bandwidth: float
    paths: PathSet
    rate: np.ndarray
    lp_value: float
    mcf_value: float | None = None
    seconds: dict = field(default_factory=dict)

    @property
    def num_compute(self) -> int:
        """N, the number of compute nodes. Raises: Nothing. Source: Basu et al. (HPDC'24) Sec. 2.2 (N nodes)."""
        return self.network.num_compute

    @cached_property
    def weight(self) -> np.ndarray:
        """float64 (P,): every path's share of its pair's shard (a pair's weights add up to 1).

        Raises:
            Nothing: normalises the rates per pair (every kept path has a positive rate).

        Source: Basu et al. (HPDC'24) Sec. 3 ("weights w_{p_i} ... controlling the fraction of traffic that
        should be sent along p_i").

        >>> r = pmcf("ring:4", paths="shortest")
        >>> sorted(set(r.weight.round(9).tolist()))
        [0.5, 1.0]
        """
        return _normalise(self.paths.source * self.num_compute + self.paths.dest, self.rate)

    def link_load(self) -> np.ndarray:
        """float64 (E,): shards (m bytes each) every link carries when every pair sends one shard split by
        :attr:`weight`.

        Raises:
            Nothing: the paths are network links (checked when built).

        Source: Basu et al. (HPDC'24) eq. (22) (the load of link e: the flow of the paths through it).

        >>> pmcf("ring:4", paths="shortest").link_load().tolist()
        [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]
        """
        p = self.paths
        return link_loads(self.network, p.source, p.dest, self.weight, routes=(p.offsets, p.links))

    @property
    def time_m_over_b(self) -> float:
        """One-step all-to-all time in units of (shard m) / (reference bandwidth b): max over links of load /
        capacity. Raises: Nothing. Source: Basu et al. (HPDC'24) Sec. 5.3 (all-to-all time = 1 / MCF = the
        maximum link load)."""
        return float((self.link_load() / self.network.capacity).max())

    def paths_per_pair(self) -> tuple[float, int]:
        """(mean, max) number of paths of a pair: (float, int).

        Raises:
            Nothing: counts the paths per pair.

        Source: Basu et al. (HPDC'24) Sec. 5.1 (the Cerio card stores up to 8 routes per destination: the count
        matters).

        >>> pmcf("ring:4", paths="shortest").paths_per_pair()[1]
        2
        """
        _, counts = np.unique(self.paths.source * self.num_compute + self.paths.dest, return_counts=True)
        return float(counts.mean()), int(counts.max())

    def to_dict(self) -> dict:
        """JSON-ready summary (values in capacity units, time in m / b, path counts, stage seconds). Raises:
        Nothing. Source: docs/alltoall.md, "pMCF (eq. 21-24) and MCF-extP"."""
        mean, most = self.paths_per_pair()
        return {"spec": self.spec, "method": self.method, "path_set": self.path_set, "value": self.value,
                "lp_value": self.lp_value, "alltoall_mcf": self.mcf_value, "time_m_over_b": self.time_m_over_b,
                "paths": self.paths.num_paths, "paths_per_pair_mean": mean, "paths_per_pair_max": most,
                "solver": self.solver, "seconds": dict(self.seconds)}


def _normalise(key: np.ndarray, value: np.ndarray) -> np.ndarray:
    _, inverse = np.unique(key, return_inverse=True)
    total = np.bincount(inverse, weights=value)
    return value / total[inverse]


# -- path sets ------------------------------------------------------------------------------------------------
def path_sets(net: FlowNetwork, kind: str = "auto", *, max_shortest: int = MAX_SHORTEST_PATHS,
              sources=None) -> PathSet:
    """Candidate paths of every pair (s, d), s in ``sources`` (default all compute nodes), d != s.

    Args:
        net: the flow network (:func:`directcoll.synthesis.mcf.network.flow_network`).
        kind: ``disjoint`` (a maximum set of link-disjoint paths), ``shortest`` (all shortest paths) or
            ``auto`` (their union, shortest paths only for pairs with at most ``max_shortest``).
        max_shortest: see ``kind``.
        sources: compute nodes whose paths are wanted.

    Returns:
        :class:`PathSet`, pairs in (source, dest) order, no path twice.

    Raises:
        UnsupportedShapeError: an unknown kind, ``max_shortest < 1``, or ``shortest`` with a pair that has more
            than ``max_shortest`` shortest paths.
        ResourceError: the hop distances of ``sources`` would exceed the memory budget.

    Source: Basu et al. (HPDC'24) Sec. 3.1.4 ("a maximal set of link-disjoint (s, d) paths"; here a maximum one,
    :func:`directcoll.topology.paths.max_disjoint_paths`) and Sec. 5.3 (pMCF with all shortest paths).

    >>> from directcoll.synthesis.mcf.network import flow_network
    >>> from directcoll.topology import parse
    >>> p = path_sets(flow_network(parse("ring:4")), "disjoint")
    >>> p.num_paths, p.dest[:4].tolist()
    (24, [1, 1, 2, 2])
    """
    if kind not in PATH_SETS:
        raise UnsupportedShapeError(f"unknown path set {kind!r}; accepted: {', '.join(PATH_SETS)}")
    if max_shortest < 1:
        raise UnsupportedShapeError(f"max_shortest must be >= 1, got {max_shortest}")
    n = net.num_compute
    sources = np.arange(n) if sources is None else np.asarray(sources, dtype=np.int64)
    lists = LinkLists.of(net)
    dist = bfs_distances(net, sources)
    src_of, dst_of, paths = [], [], []
    for row, s in enumerate(sources.tolist()):
        shortest: dict[int, list[tuple]] = {}
        if kind != "disjoint":
            dests = np.delete(np.arange(n), s)
            if kind == "auto":  # pairs with more than max_shortest shortest paths get the disjoint ones only
                dests = dests[path_counts(net, dist[row])[dests] <= max_shortest]
            try:
                dest, offsets, links = shortest_paths_from(net, s, dests, max_paths=max_shortest, dist=dist[row])
            except UnsupportedShapeError as exc:
                raise UnsupportedShapeError(f"{exc}; use paths='auto' or 'disjoint', or raise max_shortest") from None
            for d, a, b in zip(dest.tolist(), offsets[:-1].tolist(), offsets[1:].tolist(), strict=True):
                shortest.setdefault(d, []).append(tuple(links[a:b].tolist()))
            for found in shortest.values():
                # the order pMCF has always listed them in (last link first): it fixes the LP's column order and so
                # the optimal vertex HiGHS returns
                found.sort(key=lambda p: p[::-1])
        for d in range(n):
            if d == s:
                continue
            found: list = []
            if kind != "shortest":
                found += max_disjoint_paths(net, s, d, lists=lists)
            found += shortest.get(d, [])
            unique = list(dict.fromkeys(tuple(p) for p in found))
            src_of += [s] * len(unique)
            dst_of += [d] * len(unique)
            paths += [list(p) for p in unique]
    return PathSet.from_lists(src_of, dst_of, paths)


# -- pMCF (eq. 21-24) -----------------------------------------------------------------------------------------
def _pmcf_lp(net: FlowNetwork, paths: PathSet, symmetric: bool, scale: float) -> tuple[LinearProgram, int]:
    """Columns: x_p (P), then F. Rows: capacity ``sum_{p ∋ e} x_p <= cap_e / scale`` (per link orbit when
    symmetric, counting a path's links in the orbit), then demand ``F - sum_{p in P(s, d)} x_p <= 0`` per pair.
    ``scale`` (an upper bound on F) makes F O(1) for HiGHS's absolute tolerances."""
    npath = paths.num_paths
    if symmetric:
        orbits, orbit_of = np.unique(net.orbit, return_inverse=True)
        k = len(orbits)
        cap = np.empty(k)
        cap[orbit_of] = net.capacity
        cap_row = orbit_of[paths.links]
    else:
        k, cap, cap_row = net.num_links, net.capacity, paths.links
    _, pair = np.unique(paths.source * net.num_compute + paths.dest, return_inverse=True)
    npair = int(pair.max()) + 1
    rows = np.r_[cap_row, k + pair, k + np.arange(npair)]
    cols = np.r_[paths.path_of_link, np.arange(npath), np.full(npair, npath)]
    vals = np.r_[np.ones(len(cap_row)), -np.ones(npath), np.ones(npair)]
    a = sp.csc_matrix((vals, (rows, cols)), shape=(k + npair, npath + 1))
    lp = LinearProgram(a, np.r_[np.zeros(npath), -1.0], np.zeros(npath + 1), np.full(npath + 1, np.inf),
                       np.full(k + npair, -np.inf), np.r_[cap / scale, np.zeros(npair)])
    return lp, npath


def pmcf(topology, *, paths: str = "auto", max_shortest: int = MAX_SHORTEST_PATHS, solver: str = "auto",
         reference_bandwidth=None, highs_options: dict | None = None, host_bandwidth=None,
         nic_forwarding: bool = True) -> PathMcfResult:
    """Path-based all-to-all MCF (Basu et al. Sec. 3.1.4, eq. 21-24) over the path sets of :func:`path_sets`.

    Args:
        topology: a :class:`Topology` or a spec string.
        paths: path set kind (``auto``, ``disjoint``, ``shortest``).
        max_shortest: per-pair cap on all-shortest-path sets.
        solver: as :func:`alltoall_mcf`.
        reference_bandwidth: bytes/s (or a string) of capacity 1; default the largest link bandwidth.
        highs_options: extra HiGHS options.
        host_bandwidth: bytes/s (or a string) of every host <-> NIC link, or None (see the module docstring).
        nic_forwarding: must be True with ``host_bandwidth`` (source-routed fabrics forward in the NIC).

    Returns:
        :class:`PathMcfResult` with ``method="pmcf"``; ``lp_value`` = F_pMCF <= F. With a host bandwidth its
        network is the NIC-forwarding one and every path starts and ends with its host links.

    Raises:
        UnsupportedShapeError: bad ``paths``, ``max_shortest`` or ``solver``; a non-positive bandwidth;
            ``host_bandwidth`` with ``nic_forwarding=False``.
        TopologyError, SpecError, DirectcollError: as :func:`alltoall_mcf`.
        SolverError: HiGHS rejects an option or does not reach the optimum (SolverLimitError: a limit).
        ResourceError: the hop distances or the LP exceed the memory budget.

    Source: Basu et al. (HPDC'24) Sec. 3.1.4, eq. (21)-(24), and Sec. 3.2.1 ("pMCF: Directly applying
    path-variable based MCF"); the symmetric reduction is docs/alltoall.md, "pMCF (eq. 21-24) and MCF-extP".

    >>> r = pmcf("torus:3x3", paths="disjoint")
    >>> round(r.lp_value * 3, 9), round(r.value * 3, 9)  # F = 1/3
    (1.0, 1.0)

    A host link of half a link's bandwidth: every host injects 8 shards, F = 1/16:

    >>> round(pmcf("torus:3x3", paths="disjoint", host_bandwidth="25GB/s").value * 16, 9)
    1.0
    """
    from directcoll.topology.spec import parse
    from directcoll.units import parse_bandwidth

    if solver not in SOLVERS:
        raise UnsupportedShapeError(f"unknown LP solver {solver!r}; accepted: {', '.join(SOLVERS)}")
    topology = parse(topology)
    ref = None if reference_bandwidth is None else parse_bandwidth(reference_bandwidth)
    host = _host(host_bandwidth, nic_forwarding)
    t0 = time.perf_counter()
    plain = flow_network(topology, reference_bandwidth=ref)
    net = plain if host is None else flow_network(topology, host_bandwidth=host, nic_forwarding=True,
                                                  reference_bandwidth=ref)
    ref = float(topology.link_bandwidth.max()) if ref is None else ref
    symmetric = is_translation_symmetric(net)
    found = path_sets(plain, paths, max_shortest=max_shortest, sources=[0] if symmetric else None)
    if host is not None:
        found = _with_host_links(found, plain)
    t1 = time.perf_counter()
    n = net.num_compute
    scale = float(net.capacity.sum()) / (n * (n - 1))
    lp, npath = _pmcf_lp(net, found, symmetric, scale)
    lp.name = f"path-based MCF LP ({npath} paths{', symmetric' if symmetric else ''})"
    t2 = time.perf_counter()
    x, obj, how = solve_lp(lp, solver, highs_options)
    t3 = time.perf_counter()
    rate, lp_value = np.clip(x[:npath], 0.0, None) * scale, -obj * scale
    if symmetric:
        found, rate = found.translated(net), np.tile(rate, n)
    keep = rate > 0
    found, rate = _subset(found, keep), rate[keep]
    result = PathMcfResult(value=0.0, method="pmcf", path_set=paths, solver=how + (" (symmetric)" if symmetric else ""),
                           spec=topology.spec, network=net, reference_bandwidth=ref, paths=found, rate=rate,
                           lp_value=lp_value, seconds={"paths": t1 - t0, "build": t2 - t1, "solve": t3 - t2})
    return _with_value(result)


def _host(host_bandwidth, nic_forwarding: bool) -> float | None:
    """The host bandwidth in bytes/s (None: none), refusing host forwarding for path schedules."""
    from directcoll.units import parse_bandwidth

    if host_bandwidth is None:
        return None
    if not nic_forwarding:
        raise UnsupportedShapeError("path schedules are for source-routed fabrics, where the NIC forwards (Basu Sec. "
                                    "3.2.1); with host forwarding use the time-stepped schedules (mcf variant "
                                    "'timestepped')")
    host = parse_bandwidth(host_bandwidth)
    if not host > 0:
        raise UnsupportedShapeError(f"host bandwidth must be > 0 bytes/s, got {host_bandwidth!r}")
    return host


def _with_host_links(paths: PathSet, plain: FlowNetwork) -> PathSet:
    """Paths of the topology network ``plain`` as paths of its NIC-forwarding host network: the source's host -> NIC
    link (L + s) first, the destination's NIC -> host link (L + N + d) last (link ids of
    :func:`~directcoll.synthesis.mcf.network.flow_network`)."""
    offsets = np.r_[0, np.cumsum(np.diff(paths.offsets) + 2)].astype(np.int64)
    links = np.insert(paths.links, paths.offsets[:-1], plain.num_links + paths.source)
    links = np.insert(links, offsets[1:] - 1 - np.arange(len(offsets) - 1), plain.num_links + plain.num_compute
                      + paths.dest)
    return PathSet(paths.source, paths.dest, offsets, links)


def _subset(paths: PathSet, keep: np.ndarray) -> PathSet:
    counts = np.diff(paths.offsets)[keep]
    return PathSet(paths.source[keep], paths.dest[keep], np.r_[0, np.cumsum(counts)].astype(np.int64),
                   paths.links[keep[paths.path_of_link]])


def _with_value(result: PathMcfResult) -> PathMcfResult:
    return replace(result, value=1.0 / result.time_m_over_b)


# -- MCF-extP (Sec. 3.2.1) ------------------------------------------------------------------------------------
def mcf_extp(topology, *, method: str = "auto", solver: str = "auto", workers: int | None = 1,
             reference_bandwidth=None, highs_options: dict | None = None, host_bandwidth=None,
             nic_forwarding: bool = True) -> PathMcfResult:
    """MCF-extP (Basu et al. Sec. 3.2.1): per-pair link flows of the MCF, then widest-path extraction.

    Args:
        topology: a :class:`Topology` or a spec string.
        method: how the per-pair flows are obtained: ``decomposed`` (master eq. 6-9 + child LPs eq. 10-14,
            ``alltoall_mcf(method="decomposed")``), ``pair`` (the per-pair LP eq. 1-5; small N), or ``auto``
            (default): on Cayley topologies the symmetric master (source 0's flow translated, a vertex of a
            small LP, so the weights are simple fractions) followed by the same child LPs, else
            ``decomposed``.
        solver, workers, reference_bandwidth, highs_options: as :func:`alltoall_mcf` (``workers`` defaults to
            1 here: spawning a pool only pays off for large topologies).
        host_bandwidth, nic_forwarding: as :func:`pmcf` (the MCF of the NIC-forwarding host network).

    Returns:
        :class:`PathMcfResult` with ``method="extp"``, ``path_set="widest"``, ``mcf_value`` = F.

    Raises:
        UnsupportedShapeError: an unknown method; ``host_bandwidth`` with ``nic_forwarding=False``; as
            :func:`alltoall_mcf` otherwise.
        TopologyError, SpecError, SolverError, ResourceError, DirectcollError: as :func:`alltoall_mcf`.

    Source: Basu et al. (HPDC'24) Sec. 3.2.1 (MCF-extP: the decomposed link MCF of Sec. 3.1.2, then "Widest path
    extraction", steps 1-4).

    >>> r = mcf_extp("ring:4")
    >>> r.method, r.path_set, round(r.value, 9), round(r.mcf_value, 9)
    ('extp', 'widest', 0.5, 0.5)
    """
    from directcoll.topology.spec import parse

    if method not in EXTP_METHODS:
        raise UnsupportedShapeError(f"unknown MCF-extP method {method!r}; accepted: {', '.join(EXTP_METHODS)}")
    topology = parse(topology)
    host = _host(host_bandwidth, nic_forwarding)
    t0 = time.perf_counter()
    common = dict(solver=solver, reference_bandwidth=reference_bandwidth, highs_options=highs_options,
                  **({} if host is None else {"host_bandwidth": host, "nic_forwarding": True}))
    how = None
    if method == "pair":
        mcf = alltoall_mcf(topology, method="link", commodities="pair", **common)
        flows = (mcf.commodity_source, mcf.commodity_dest, mcf.commodity_link, mcf.commodity_value)
    elif method == "decomposed" or not is_translation_symmetric(
            flow_network(topology, **({} if host is None else {"host_bandwidth": host, "nic_forwarding": True}))):
        mcf = alltoall_mcf(topology, method="decomposed", workers=workers, **common)
        flows = (mcf.commodity_source, mcf.commodity_dest, mcf.commodity_link, mcf.commodity_value)
    else:
        mcf = alltoall_mcf(topology, method="symmetric", **common)
        *flows, hows = solve_children(mcf.network, (mcf.flow_source, mcf.flow_link, mcf.flow_value), mcf.value,
                                       solver, highs_options, workers)
        how = f"master {mcf.solver} (symmetric), children {'/'.join(sorted(set(hows)))}"
    t1 = time.perf_counter()
    net, n = mcf.network, mcf.num_compute
    csrc, cdst, clink, cval = flows
    key = csrc * n + cdst
    order = np.argsort(key, kind="stable")
    bounds = np.searchsorted(key[order], np.arange(n * n + 1))
    link_src, link_dst = net.link_src.tolist(), net.link_dst.tolist()
    src_of, dst_of, paths, widths = [], [], [], []
    eps = 1e-9 * mcf.value
    for pair in range(n * n):
        sel = order[bounds[pair]: bounds[pair + 1]]
        if not len(sel):
            continue
        s, d = divmod(pair, n)
        for path, width in widest_paths(s, d, clink[sel], cval[sel], link_src, link_dst, eps=eps):
            src_of.append(s)
            dst_of.append(d)
            paths.append(path)
            widths.append(width)
    t2 = time.perf_counter()
    result = PathMcfResult(value=0.0, method="extp", path_set="widest", solver=how or mcf.solver, spec=topology.spec,
                           network=net, reference_bandwidth=mcf.reference_bandwidth,
                           paths=PathSet.from_lists(src_of, dst_of, paths), rate=np.asarray(widths, dtype=float),
                           lp_value=mcf.value, mcf_value=mcf.value,
                           seconds={**mcf.seconds, "mcf": t1 - t0, "extract": t2 - t1})
    return _with_value(result)


def widest_paths(source: int, dest: int, links, flows, link_src, link_dst, *, eps: float = 0.0):
    """Basu et al. Sec. 3.2.1's widest-path extraction from one pair's link flows (MCF-extP).

    Repeatedly find the source -> dest path of largest bottleneck in the flow subgraph (Dijkstra with max-min
    labels), subtract its width from its links, until no path wider than ``eps`` is left.

    Args:
        source, dest: the pair.
        links, flows: the pair's flow, (K,) link ids and values (any unit: widths come out in it).
        link_src, link_dst: endpoints of every link of the network (sequences indexable by link id).
        eps: widths at or below this end the extraction.

    Returns:
        list of (links of the path, width), widths non-increasing.

    Raises:
        Nothing: a Dijkstra variant on the given flows; link ids must index ``link_src`` and ``link_dst``.

    Source: Basu et al. (HPDC'24) Sec. 3.2.1, "Widest path extraction" (steps 1-4).

    >>> widest_paths(0, 2, [0, 1, 2], [0.6, 0.5, 0.4], [0, 1, 0], [1, 2, 2])
    [([0, 1], 0.5), ([2], 0.4)]
    """
    cap = {int(j): float(f) for j, f in zip(links, flows, strict=True)}
    adj: dict[int, list[int]] = {}
    for j in cap:
        adj.setdefault(int(link_src[j]), []).append(j)
    out = []
    while True:
        best, prev, done = {source: np.inf}, {}, set()
        heap = [(-np.inf, source)]
        while heap:
            neg, u = heapq.heappop(heap)
            if u in done:
                continue
            done.add(u)
            if u == dest:
                break
            for j in adj.get(u, ()):
                width = min(-neg, cap[j])
                v = int(link_dst[j])
                if width > eps and v not in done and width > best.get(v, 0.0):
                    best[v], prev[v] = width, j
                    heapq.heappush(heap, (-width, v))
        if dest not in done:
            return out
        path, v = [], dest
        while v != source:
            path.append(prev[v])
            v = int(link_src[prev[v]])
        path.reverse()
        width = best[dest]
        for j in path:
            cap[j] -= width
        out.append((path, width))
