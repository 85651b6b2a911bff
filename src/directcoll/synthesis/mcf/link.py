"""All-to-all throughput as a maximum concurrent multi-commodity flow (Basu et al., Sec. 3.1 and 5.2; Zhao et al.,
App. A.5, LP 3).

Every ordered pair (s, t) of compute nodes is a commodity of equal demand F, routed as a fluid over the directed
links; F is maximized subject to link capacities. The capacity of a link is its bandwidth divided by a reference
bandwidth (by default the fastest link of the topology), so F is in units of one reference link: with unit link
capacities F is the fraction of a unit demand every pair routes per time unit (torus:3x3x3: F = 1/9). In bytes,
every pair moves ``F * reference_bandwidth`` bytes/s at once; a node sends ``(N - 1) F b`` bytes/s in all (Basu
Sec. 5.2's throughput upper bound) and an all-to-all of shards of m bytes takes at least ``m / (F b)`` seconds.

Methods (:func:`alltoall_mcf`):

* ``link``: the link-based LP, source-aggregated (one commodity per source, Basu eq. 6-9 = Zhao LP 3): for a
  single source the N - 1 destination flows of eq. 1-5 add up to one flow with a sink of F at every other
  compute node, and any such flow splits back into per-destination flows (flow decomposition), so both LPs
  have the same optimum. ``commodities="pair"`` solves eq. 1-5 literally (N(N - 1) commodities; small N only).
* ``decomposed``: the same source-aggregated master LP (eq. 6-9), then one child LP per source (eq. 10-14:
  capacities = the master's flow of that source, demand F to every destination, minimize total flow) that
  recovers per-(s, d) flows, solved as the equivalent single-commodity min-cost flow and split exactly by
  proportional decomposition (:mod:`~directcoll.synthesis.mcf.children`); children run in a process pool.
  Where ``automorphism`` applies, the master is that reduced LP and only one source per orbit gets a child.
* ``symmetric``: for Cayley topologies (``Topology.port_offsets``). The translations form a group acting
  regularly on nodes and freely on links, with capacities constant on each link orbit. Averaging any optimal
  flow over the N translations gives an optimal flow in which source s's flow is source 0's moved by s, so
  it suffices to solve for source 0's flow phi with one capacity row per link orbit (sum of phi over the orbit
  <= the orbit's capacity, which is the load every link of the orbit then carries) and conservation at every
  other node. Conversely every such phi translates to a feasible link-LP solution, so the optimum is exactly
  the link LP's. The LP shrinks by a factor of N. (F need not equal the capacity bound: torus:3x4 has F = 1/6
  and bound 1/5.)
* ``automorphism``: the same reduction for the topology's full automorphism group G, found by BLISS
  (:func:`directcoll.topology.automorphism.automorphism_group`, any family, as generators). Averaging over G gives
  an optimal flow with x_{g s} = g x_s, so only one source per node orbit keeps variables, and the load of a
  link orbit O is ``sum_r |orbit(r)| / |O| * sum_{e in O} x_r(e)``, one capacity row per link orbit; averaging
  over the stabilizer of r makes x_r constant on its link orbits (one column each). Conversely the reduced
  solution moved by G is a feasible link-LP solution of the same F: the optimum is exactly the link LP's
  (:mod:`~directcoll.synthesis.mcf.symmetry`; line^2(circulant:64:6,7): 32,768 columns instead of 4.2M).
* ``auto`` (default): ``symmetric`` where it applies, else ``automorphism`` where BLISS finds a group of order
  > 1, else ``link``. (Graphs whose LP stays too large: :mod:`~directcoll.synthesis.mcf.certified`.)

Host-to-NIC bottleneck (Basu Sec. 3.2.2, Fig. 2, Sec. 5.2): with ``host_bandwidth`` every compute node u
becomes a host u, a NIC-in node and a NIC-out node; network links run NIC-out -> NIC-in and each node gets a
NIC-in -> host and a host -> NIC-out link of the host bandwidth, so forwarded traffic crosses the host twice
(host-based forwarding of ML fabrics). ``nic_forwarding=True`` merges the two NIC nodes instead, so the NIC
forwards and only injection and ejection cross the host link (HPC fabrics). On torus:3x3x3 with 6 x 25 Gb/s
links and a 100 Gb/s host, F = 2/27 relative to 25 Gb/s (Basu Sec. 5.2); 1/9 with NIC forwarding or no host.

Solvers (HiGHS through :mod:`directcoll.lp`; the LPs are built with scipy.sparse, never per variable). ``simplex`` (dual
simplex) for small LPs; ``ipm`` (IPX interior point with crossover); ``pdlp`` (first-order PDLP, then the point
is made complementary and polished to an optimal vertex by IPX crossover and dual simplex, falling back to
``ipm`` when PDLP or crossover fails): every path ends at an optimal basis, so F is exact to floating point
(the methods agree to 1e-12 relative in the tests). ``auto`` picks simplex up to
:data:`directcoll.lp.SIMPLEX_MAX_COLUMNS` columns, ipm up to :data:`directcoll.lp.IPM_MAX_COLUMNS`, pdlp above.
PDLP is always given the LP as a minimization: with
``ObjSense.kMaximize`` HiGHS 1.15's PDLP reports wrong duals (the dual residual is of the order of the costs and
the run ends "Unknown"), and IPX crossover then rejects the point.
"""


from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from directcoll.errors import UnsupportedShapeError
from directcoll.synthesis.mcf.children import solve_children
from directcoll.synthesis.mcf.formulations import (
    FLOW_EPS,
    SOLVERS,
    check_flow_lp,
    pair_lp,
    solve_lp,
    source_lp,
    sparse_flows,
    symmetric_lp,
)
from directcoll.synthesis.mcf.network import FlowNetwork, flow_network, is_translation_symmetric
from directcoll.synthesis.mcf.symmetry import automorphism_lp, automorphism_orbits, move_children, orbit_flows
from directcoll.topology.automorphism import automorphism_group

METHODS = ("auto", "link", "decomposed", "symmetric", "automorphism")
COMMODITIES = ("source", "pair")


# -- results --------------------------------------------------------------------------------------------------
@dataclass(frozen=True, eq=False)
class McfResult:
    """The optimal concurrent flow F and flows that achieve it.

    Attributes:
        value: F, the flow every ordered pair of compute nodes routes at once, in units of the reference capacity.
        method: the method that ran (``link``, ``decomposed``, ``symmetric`` or ``automorphism``).
        solver: how HiGHS got the optimum (``simplex``, ``ipm``, ``pdlp+crossover``), per LP kind.
        spec: the topology spec.
        network: the :class:`FlowNetwork` the flows live on (topology links first, then host links).
        reference_bandwidth: bytes/s of capacity 1.
        host_bandwidth: bytes/s of the host links, or None.
        seconds: wall time of the stages (``build``, ``solve``, ``children``...).
        commodity_source, commodity_dest, commodity_link, commodity_value: per-(s, d) flows, columnar (K,)
            arrays, for ``decomposed`` and ``link`` with ``commodities="pair"``; None otherwise.

    Per-source flows (every method) are :attr:`flow_source`, :attr:`flow_link`, :attr:`flow_value`: the flow of
    all commodities leaving a source, on each network link, in capacity units.

    Raises:
        Nothing: a frozen record built by :func:`alltoall_mcf`.

    Source: Basu et al. (HPDC'24) Sec. 3.1.1-3.1.2 (F and the flows f of eq. (1)-(14)); Zhao et al. (NSDI'25)
    App. A.5 (f B/d "the rate at which every node can send to every other node simultaneously").

    >>> r = alltoall_mcf("torus:3x3x3")
    >>> r.method, round(1 / r.value, 9), r.flow_source.shape == r.flow_value.shape
    ('symmetric', 9.0, True)
    """

    value: float
    method: str
    solver: str
    spec: str
    network: FlowNetwork
    reference_bandwidth: float
    host_bandwidth: float | None = None
    seconds: dict = field(default_factory=dict)
    commodity_source: np.ndarray | None = None
    commodity_dest: np.ndarray | None = None
    commodity_link: np.ndarray | None = None
    commodity_value: np.ndarray | None = None
    _source_flows: tuple | None = field(default=None, repr=False)
    _base_flow: tuple | None = field(default=None, repr=False)

    @property
    def num_compute(self) -> int:
        """N, the number of compute nodes. Raises: Nothing. Source: Basu et al. (HPDC'24) Sec. 2.2 (N nodes)."""
        return self.network.num_compute

    @cached_property
    def _flows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._source_flows is not None:
            return self._source_flows
        links, values = self._base_flow  # symmetric: source 0's flow, translated to every source
        n = self.num_compute
        moved = self.network.translate_links(links[None, :], np.arange(n)[:, None])
        return (np.repeat(np.arange(n, dtype=np.int64), len(links)), moved.ravel(), np.tile(values, n))

    @property
    def flow_source(self) -> np.ndarray:
        """int64 (K,): the source of each per-source flow entry. Raises: Nothing. Source: Basu et al. (HPDC'24)
        eq. (6)-(9) (the source-based flows f'_s)."""
        return self._flows[0]

    @property
    def flow_link(self) -> np.ndarray:
        """int64 (K,): the network link of each entry. Raises: Nothing. Source: Basu et al. (HPDC'24) eq. (6)-(9)
        (f'_{s,(u,v)})."""
        return self._flows[1]

    @property
    def flow_value(self) -> np.ndarray:
        """float64 (K,): the flow, in capacity units (F is the amount each destination receives). Raises: Nothing.
        Source: Basu et al. (HPDC'24) eq. (6)-(9)."""
        return self._flows[2]

    def link_load(self) -> np.ndarray:
        """Total flow on every network link, float64 (E,) in capacity units; at most ``network.capacity``.

        Raises:
            Nothing: sums the per-source flows.

        Source: Basu et al. (HPDC'24) eq. (7) (the capacity constraint the loads satisfy).

        >>> r = alltoall_mcf("torus:3x3x3")
        >>> r.link_load().shape, bool((r.link_load() <= r.network.capacity + 1e-9).all())
        ((162,), True)
        """
        return np.bincount(self.flow_link, weights=self.flow_value, minlength=self.network.num_links)

    @property
    def pair_rate_bytes_per_s(self) -> float:
        """Bytes/s every ordered pair moves concurrently: F times the reference bandwidth (bytes/s). Raises:
        Nothing. Source: Zhao et al. (NSDI'25) App. A.5 (f B/d with B/d the link bandwidth)."""
        return self.value * self.reference_bandwidth

    @property
    def throughput_bytes_per_s(self) -> float:
        """Basu Sec. 5.2's all-to-all throughput bound per node, (N - 1) F b, bytes/s.

        Raises:
            Nothing: arithmetic on the result.

        Basu's TACC torus (25 Gb/s links, 100 Gb/s host): (26)(2/27)(3.125 GB/s) = 6.01 GB/s.

        >>> r = alltoall_mcf("torus:3x3x3", host_bandwidth="100Gbps", reference_bandwidth="25Gbps")
        >>> round(r.value * 27, 9), round(r.throughput_bytes_per_s / 1e9, 2)
        (2.0, 6.02)
        """
        return (self.num_compute - 1) * self.pair_rate_bytes_per_s

    def alltoall_time(self, shard_bytes) -> np.ndarray:
        """Least time, s, for an all-to-all in which every pair exchanges ``shard_bytes`` (fluid model).

        Args:
            shard_bytes: m, bytes per ordered pair; a number or an array of any shape.

        Returns:
            float64 array of ``shard_bytes``' shape: m / (F b), in s.

        Raises:
            Nothing: arithmetic (F > 0 on every connected network).

        Source: Basu et al. (HPDC'24) Sec. 5.3 (all-to-all time = 1 / MCF in units of m / b); docs/alltoall.md,
        "The LP and the units of F".

        torus:3x3x3 (F = 1/9) with its default 50 GB/s links: 9 x 1 MB / 50 GB/s = 180 us.

        >>> r = alltoall_mcf("torus:3x3x3")
        >>> r.alltoall_time([1e6, 2e6]).round(8).tolist()
        [0.00018, 0.00036]
        """
        return np.asarray(shard_bytes, dtype=float) / self.pair_rate_bytes_per_s

    def to_dict(self) -> dict:
        """JSON-ready summary: spec, F (``alltoall_mcf``), method, solver, ranks, bandwidths and rates (bytes/s),
        stage seconds (s). Raises: Nothing. Source: docs/alltoall.md (``topology describe --alltoall --json``)."""
        return {"spec": self.spec, "alltoall_mcf": self.value, "method": self.method, "solver": self.solver,
                "ranks": self.num_compute, "reference_bandwidth_bytes_per_s": self.reference_bandwidth,
                "host_bandwidth_bytes_per_s": self.host_bandwidth,
                "pair_rate_bytes_per_s": self.pair_rate_bytes_per_s,
                "throughput_bytes_per_s": self.throughput_bytes_per_s, "seconds": dict(self.seconds)}


def alltoall_mcf(topology, *, method: str = "auto", host_bandwidth=None, nic_forwarding: bool = False,
                 reference_bandwidth=None, commodities: str = "source", solver: str = "auto",
                 workers: int | None = None, highs_options: dict | None = None, map=None) -> McfResult:
    """Maximum concurrent all-to-all flow F and the flows achieving it (Basu et al. Sec. 3.1, eq. 1-14).

    Args:
        topology: a :class:`Topology` or a spec string (``torus:3x3x3``).
        method: ``auto`` (``symmetric`` on Cayley topologies whose capacities are translation-invariant, else
            ``automorphism`` where BLISS finds a group of order > 1, else ``link``), ``link``
            (source-aggregated LP, eq. 6-9),
            ``decomposed`` (master eq. 6-9 + child LPs eq. 10-14 giving per-(s, d) flows), ``symmetric``
            (single-source LP on the translation orbits) or ``automorphism`` (one source per node orbit of the
            BLISS automorphism group, :mod:`~directcoll.synthesis.mcf.symmetry`; the trivial group is the link
            LP). ``decomposed`` uses the automorphism master and children where the group is not trivial.
        host_bandwidth: bytes/s (a number or a string like ``100Gbps``) of each host <-> NIC link, modelling
            the host-to-NIC bottleneck (Basu Fig. 2, Sec. 5.2); None for none.
        nic_forwarding: with ``host_bandwidth``, the NIC forwards transit traffic instead of the host.
        reference_bandwidth: bytes/s (or a string) of capacity 1 in which F is expressed; default the
            largest link bandwidth of the topology (host links excluded).
        commodities: ``link`` only: ``source`` (default) or ``pair`` to solve eq. 1-5 with N(N - 1)
            commodities (returns per-pair flows; O(N^2 E) variables, small topologies only).
        solver: ``auto``, ``simplex``, ``ipm`` or ``pdlp`` (see the module docstring); every one ends at an
            optimal basis.
        workers: processes for the child LPs of ``decomposed`` (default ``os.cpu_count()``; 1 runs inline).
        highs_options: extra HiGHS options (name -> value) for every solve.
        map: ``decomposed`` only: a callable ``map(fn, tasks)`` that solves the child LPs instead of the process
            pool (e.g. on a Dask cluster; :func:`~directcoll.synthesis.mcf.children.solve_children`); same result.

    Returns:
        :class:`McfResult`: F (``value``) in units of the reference capacity, per-source flows
        (``flow_source``, ``flow_link``, ``flow_value``; shape (K,) each) and, for ``decomposed`` or
        ``commodities="pair"``, per-(s, d) flows (``commodity_*``).

    Raises:
        TopologyError: fewer than 2 compute nodes, or compute nodes that cannot all reach each other.
        UnsupportedShapeError: an unknown method, solver or commodities; ``symmetric`` on a topology that is not
            a Cayley graph with translation-invariant capacities; ``pair`` with another method; ``workers < 1``
            (``decomposed``); a non-positive bandwidth.
        SpecError: an unknown topology spec (ResourceError, TopologyError: as the spec parser).
        SolverError: HiGHS rejects an option of ``highs_options`` or does not reach an optimal solution
            (SolverLimitError: a limit in ``highs_options``).
        ResourceError: the LP (commodities x links columns) would need more memory than the budget.
        DirectcollError: a bandwidth string cannot be read, or a BLISS generator does not map the network onto
            itself.

    Source: Basu et al. (HPDC'24) Sec. 3.1.1, eq. (1)-(5); Sec. 3.1.2, eq. (6)-(14); Sec. 3.2.2, Fig. 2 (host
    bottleneck); Zhao et al. (NSDI'25) App. A.5, LP (3). The symmetric and automorphism reductions are
    docs/alltoall.md, "Methods".

    >>> r = alltoall_mcf("torus:3x3x3")
    >>> r.method, round(1 / r.value, 9)
    ('symmetric', 9.0)
    >>> r = alltoall_mcf("ring:4", method="decomposed", workers=1)
    >>> round(r.value, 9), len(r.commodity_source) > 0
    (0.5, True)
    """
    from directcoll.topology.spec import parse
    from directcoll.units import parse_bandwidth

    if method not in METHODS:
        raise UnsupportedShapeError(f"unknown all-to-all MCF method {method!r}; accepted: {', '.join(METHODS)}")
    if solver not in SOLVERS:
        raise UnsupportedShapeError(f"unknown LP solver {solver!r}; accepted: {', '.join(SOLVERS)}")
    if commodities not in COMMODITIES:
        raise UnsupportedShapeError(f"unknown commodities {commodities!r}; accepted: {', '.join(COMMODITIES)}")
    topology = parse(topology)
    host = None if host_bandwidth is None else parse_bandwidth(host_bandwidth)
    ref = None if reference_bandwidth is None else parse_bandwidth(reference_bandwidth)
    t0 = time.perf_counter()
    net = flow_network(topology, host_bandwidth=host, nic_forwarding=nic_forwarding, reference_bandwidth=ref)
    ref = float(topology.link_bandwidth.max()) if ref is None else ref
    symmetric_ok = is_translation_symmetric(net)
    orbits = None
    if method in ("auto", "automorphism", "decomposed") and commodities == "source" and not \
            (symmetric_ok and method == "auto"):
        group = automorphism_group(topology)
        if group.order > 1 or method == "automorphism":
            orbits = automorphism_orbits(net, topology, group)
    if method == "auto":
        method = "link" if commodities != "source" else "symmetric" if symmetric_ok else \
            "automorphism" if orbits is not None else "link"
    if method == "symmetric" and not symmetric_ok:
        raise UnsupportedShapeError(f"{topology.spec}: method 'symmetric' needs a Cayley topology (port_offsets, no "
                                    "switches) whose link bandwidths are the same on every port's links; use "
                                    "'link' or 'decomposed'")
    if commodities == "pair" and method != "link":
        raise UnsupportedShapeError(f"commodities='pair' is the per-pair link LP (eq. 1-5); it needs method='link', "
                                    f"not {method!r}")
    common = dict(method=method, spec=topology.spec, network=net, reference_bandwidth=ref, host_bandwidth=host)
    n, e = net.num_compute, net.num_links
    if method == "link":  # sized before anything grows with commodities x links
        check_flow_lp(n * (n - 1) if commodities == "pair" else n, e, n * (n - 1), on=topology.spec)
    # Solve with capacities divided by an upper bound on F (every pair crosses at least one link), so that F
    # and the flows are O(1) against HiGHS's absolute tolerances; multiply back afterwards.
    scale = float(net.capacity.sum()) / (n * (n - 1))
    lp_net = replace(net, capacity=net.capacity / scale)
    seconds = {}

    def solve(lp, stage="solve"):
        lp.name = f"all-to-all MCF {'LP' if stage == 'solve' else stage + ' LP'} ({method}) on {topology.spec}"
        seconds["build"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        x, obj, how = solve_lp(lp, solver, highs_options)
        seconds[stage] = time.perf_counter() - t1
        return x * scale, -obj * scale, how

    if method == "symmetric":
        x, value, how = solve(symmetric_lp(lp_net))
        phi = x[:e]
        keep = np.flatnonzero(phi > FLOW_EPS)
        return McfResult(value=value, solver=how, seconds=seconds, _base_flow=(keep, phi[keep]), **common)

    if method == "automorphism":
        x, value, how = solve(automorphism_lp(lp_net, orbits))
        flows = orbit_flows(orbits, x, n, e)
        return McfResult(value=value, solver=how, seconds=seconds, _source_flows=flows, **common)

    if commodities == "pair":
        lp, psrc, pdst = pair_lp(lp_net)
        x, value, how = solve(lp)
        comm, link, val = sparse_flows(x, e, len(psrc))
        s_of = psrc[comm]
        agg = np.bincount(s_of * e + link, weights=val, minlength=n * e)
        ks = np.flatnonzero(agg > FLOW_EPS)
        return McfResult(value=value, solver=how, seconds=seconds, commodity_source=s_of, commodity_dest=pdst[comm],
                         commodity_link=link, commodity_value=val,
                         _source_flows=(ks // e, ks % e, agg[ks]), **common)

    orbits = orbits if method == "decomposed" else None
    if orbits is not None:  # the master reduced by the automorphisms, children for one source per orbit
        x, value, how = solve(automorphism_lp(lp_net, orbits), "master")
        flows = orbit_flows(orbits, x, n, e)
    else:
        x, value, how = solve(source_lp(lp_net), "solve" if method == "link" else "master")
        flows = sparse_flows(x, e, n)
    if method == "link":
        return McfResult(value=value, solver=how, seconds=seconds, _source_flows=flows, **common)

    t2 = time.perf_counter()
    sources = None if orbits is None else orbits.reps
    csrc, cdst, clink, cval, hows = solve_children(net, flows, value, solver, highs_options, workers, sources, map)
    if orbits is not None:
        csrc, cdst, clink, cval = move_children(orbits, csrc, cdst, clink, cval)
    seconds["children"] = time.perf_counter() - t2
    how = f"master {how}, children {'/'.join(sorted(set(hows)))}"
    return McfResult(value=value, solver=how, seconds=seconds, commodity_source=csrc, commodity_dest=cdst,
                     commodity_link=clink, commodity_value=cval, _source_flows=flows, **common)
