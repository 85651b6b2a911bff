"""The all-to-all MCF linear programs (Basu et al. Sec. 3.1, eq. 1-14; Zhao et al. App. A.5, LP 3), built as
scipy.sparse triplets (never per variable), and how HiGHS solves them (:mod:`directcoll.lp` with the MCF
tolerances).

Every builder returns a :class:`~directcoll.lp.LinearProgram` over a :class:`~directcoll.synthesis.mcf.network.
FlowNetwork`'s links; capacities are in units of the reference capacity, divided by the caller's scale.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from directcoll.lp import METHODS as LP_METHODS
from directcoll.lp import LinearProgram
from directcoll.lp import solve as lp_solve
from directcoll.resources import check_memory
from directcoll.synthesis.mcf.network import FlowNetwork

#: LP solvers every MCF function accepts (:data:`directcoll.lp.METHODS`).
SOLVERS = LP_METHODS
#: Peak bytes per column (commodity x link) of building a flow LP's index arrays and sparse matrix (measured
#: about 270 with tracemalloc), checked before the arrays are allocated.
BYTES_PER_FLOW_COLUMN = 320
#: Flow values at or below this (in units of the reference capacity) are dropped from the returned flows.
FLOW_EPS = 1e-12
#: Tighter than HiGHS's 1e-7 defaults: F and the flows are O(1) after scaling, and a basic value of -1e-8
#: that simplex accepts as feasible would otherwise break the conservation of the returned flows.
HIGHS_DEFAULTS = {"primal_feasibility_tolerance": 1e-9, "dual_feasibility_tolerance": 1e-9}


def check_flow_lp(commodities: int, links: int, demands: int, on: str = "") -> None:
    """Refuse a flow LP whose construction would exceed the memory budget, before any array is allocated.

    Args:
        commodities: C, commodities (sources or pairs); links: J, links every commodity may use; demands: D,
            demand pairs; on: the topology spec, for the message.

    Returns:
        None: the estimate, :data:`BYTES_PER_FLOW_COLUMN` x C x J + 40 D bytes, fits the budget.

    Raises:
        ResourceError: over the budget (:func:`directcoll.resources.check_memory`).

    Source: docs/architecture.md, "Engines, runtimes and scale" (resources: estimate memory first, refuse over a
    budget).

    >>> check_flow_lp(27, 162, 27 * 26, on="torus:3x3x3") is None
    True
    """
    where = f" on {on}" if on else ""
    check_memory(f"the multi-commodity flow LP{where} ({commodities:,} commodities x {links:,} links)",
                 BYTES_PER_FLOW_COLUMN * float(commodities) * float(links) + 40.0 * float(demands))


def flow_lp(num_nodes: int, link_src, link_dst, capacity, comm_source, dem_comm, dem_node, *,
            fixed_demand: float | None = None) -> LinearProgram:
    """Multi-commodity flow LP over the links given (every commodity may use every one of them): the common
    form of Basu et al.'s link LP (eq. 1-5), source-aggregated LP (eq. 6-9) and child LPs (eq. 10-14).

    Args:
        num_nodes: V.
        link_src, link_dst: int (J,) link ends; capacity: float (J,).
        comm_source: int (C,) the source node of every commodity.
        dem_comm, dem_node: int (D,) the demand pairs (commodity, sink node).
        fixed_demand: None to maximize the common demand F, or the demand of every pair (then the total flow
            is minimized, eq. 10).

    Columns: ``x[c, j]`` at ``c * J + j`` (J = len(link_src)), then F unless ``fixed_demand``. Rows: J capacity
    rows ``sum_c x[c, j] <= capacity[j]`` (eq. 2 / 7 / 11), then for every commodity c and node u other than
    its source the conservation row ``out - in + F * demand(c, u) = 0`` at ``J + c * (V - 1) + u - (u > src)``
    (eq. 3-4 / 8 / 12-13, with equality so that the flows are conserved exactly). The demand pairs (c, u) are
    ``dem_comm``, ``dem_node``. The objective maximizes F (as min -F), or with ``fixed_demand`` minimizes the
    total flow (eq. 10). Flow into a commodity's own source is fixed to 0.

    Returns:
        :class:`~directcoll.lp.LinearProgram` with C J (+ 1) columns and J + C (V - 1) rows, in capacity units.

    Raises:
        ResourceError: the LP would exceed the memory budget (:func:`check_flow_lp`).

    Source: Basu et al. (HPDC'24) Sec. 3.1.1, eq. (1)-(5), and Sec. 3.1.2, eq. (6)-(9) and (10)-(14); the
    conservation inequalities (3), (8), (12) are read as equalities (Basu: "at the optimal solution, the
    inequality is enforced with no slack"), so the returned flows conserve exactly.

    A path 0 -> 1 -> 2 of unit links, one commodity from node 0 with demand F at nodes 1 and 2: link 0 -> 1
    carries 2F, so F = 1/2.

    >>> lp = flow_lp(3, [0, 1], [1, 2], [1.0, 1.0], [0], [0, 0], [1, 2])
    >>> x, objective, how = solve_lp(lp, "simplex", None)
    >>> lp.a.shape, -objective
    ((4, 3), 0.5)
    """
    link_src, link_dst = np.asarray(link_src, dtype=np.int64), np.asarray(link_dst, dtype=np.int64)
    comm_source = np.asarray(comm_source, dtype=np.int64)
    nl, nc = len(link_src), len(comm_source)
    check_flow_lp(nc, nl, len(dem_comm))
    ncol = nc * nl
    c_of = np.repeat(np.arange(nc, dtype=np.int64), nl)
    j_of = np.tile(np.arange(nl, dtype=np.int64), nc)
    col = np.arange(ncol, dtype=np.int64)
    s_of = comm_source[c_of]

    def cons_row(c, u, s):
        return nl + c * (num_nodes - 1) + u - (u > s)

    u, v = link_src[j_of], link_dst[j_of]
    out, into = u != s_of, v != s_of
    rows = [j_of, cons_row(c_of[out], u[out], s_of[out]), cons_row(c_of[into], v[into], s_of[into])]
    cols = [col, col[out], col[into]]
    vals = [np.ones(ncol), np.ones(out.sum()), -np.ones(into.sum())]
    dem_comm, dem_node = np.asarray(dem_comm, dtype=np.int64), np.asarray(dem_node, dtype=np.int64)
    dem_rows = cons_row(dem_comm, dem_node, comm_source[dem_comm])
    nrow = nl + nc * (num_nodes - 1)
    if fixed_demand is None:
        rows.append(dem_rows)
        cols.append(np.full(len(dem_rows), ncol))
        vals.append(np.ones(len(dem_rows)))
    total_cols = ncol + (fixed_demand is None)
    a = sp.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(nrow, total_cols))
    rhs = np.zeros(nrow - nl)
    if fixed_demand is not None:
        rhs[dem_rows - nl] = -fixed_demand
    col_upper = np.full(total_cols, np.inf)
    col_upper[:ncol][~into] = 0.0
    cost = np.ones(total_cols) if fixed_demand is not None else np.r_[np.zeros(ncol), -1.0]
    return LinearProgram(a, cost, np.zeros(total_cols), col_upper, np.r_[np.full(nl, -np.inf), rhs],
                         np.r_[np.asarray(capacity, dtype=float), rhs])


def source_lp(net: FlowNetwork) -> LinearProgram:
    """Source-aggregated LP (Basu eq. 6-9, Zhao LP 3): one commodity per compute node; columns ``x[s, j]`` at
    ``s E + j``, then F (:func:`flow_lp`).

    Returns:
        :class:`~directcoll.lp.LinearProgram` with N E + 1 columns and E + N (V - 1) rows.

    Raises:
        ResourceError: over the memory budget.

    Source: Basu et al. (HPDC'24) Sec. 3.1.2, eq. (6)-(9) (the master LP); Zhao et al. (NSDI'25) App. A.5, LP (3).

    >>> from directcoll.topology import parse
    >>> from directcoll.synthesis.mcf.network import flow_network
    >>> source_lp(flow_network(parse("ring:4"))).a.shape
    (20, 33)
    """
    n = net.num_compute
    check_flow_lp(n, net.num_links, n * (n - 1))
    s, t = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    off = s != t
    return flow_lp(net.num_nodes, net.link_src, net.link_dst, net.capacity, np.arange(n), s[off], t[off])


def pair_lp(net: FlowNetwork) -> tuple[LinearProgram, np.ndarray, np.ndarray]:
    """Per-pair LP (Basu eq. 1-5): commodities (s, d), s != d, in (s, d) order; returns (LP, s (C,), d (C,)).

    Returns:
        (LP with C E + 1 columns, C = N (N - 1); int64 (C,) sources; int64 (C,) destinations).

    Raises:
        ResourceError: over the memory budget.

    Source: Basu et al. (HPDC'24) Sec. 3.1.1, eq. (1)-(5) (link-based max-concurrent MCF).

    >>> from directcoll.topology import parse
    >>> from directcoll.synthesis.mcf.network import flow_network
    >>> lp, s, d = pair_lp(flow_network(parse("ring:4")))
    >>> lp.a.shape, s[:3].tolist(), d[:3].tolist()
    ((44, 97), [0, 0, 0], [1, 2, 3])
    """
    n = net.num_compute
    check_flow_lp(n * (n - 1), net.num_links, n * (n - 1))
    s, t = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    off = s != t
    src, dst = s[off], t[off]
    comm = np.arange(len(src))
    return flow_lp(net.num_nodes, net.link_src, net.link_dst, net.capacity, src, comm, dst), src, dst


def symmetric_lp(net: FlowNetwork) -> LinearProgram:
    """Source 0's flow phi with one capacity row per link orbit (the ``symmetric`` method of
    :mod:`directcoll.synthesis.mcf.link`, for translation-symmetric networks).

    Columns: phi on every network link, then F. Rows: one per orbit, ``sum_{e in orbit} phi_e <= cap(orbit)``,
    then conservation ``out - in + F [u is a compute node] = 0`` at every node u != 0.

    Returns:
        :class:`~directcoll.lp.LinearProgram` with E + 1 columns and K + V - 1 rows (K link orbits).

    Raises:
        Nothing: the caller checks :func:`~directcoll.synthesis.mcf.network.is_translation_symmetric` first (a
            network without orbits is a caller's bug: TypeError).

    Source: docs/alltoall.md, "Methods" (``symmetric``: the averaging argument over the translations), applied to
    Basu et al. (HPDC'24) eq. (6)-(9).

    >>> from directcoll.topology import parse
    >>> from directcoll.synthesis.mcf.network import flow_network
    >>> lp = symmetric_lp(flow_network(parse("ring:4")))
    >>> lp.a.shape, round(-solve_lp(lp, "simplex", None)[1], 9)
    ((5, 9), 0.5)
    """
    e, v, n = net.num_links, net.num_nodes, net.num_compute
    orbits, orbit_of = np.unique(net.orbit, return_inverse=True)
    k = len(orbits)
    col = np.arange(e, dtype=np.int64)
    out, into = net.link_src != 0, net.link_dst != 0
    rows = np.r_[orbit_of, k - 1 + net.link_src[out], k - 1 + net.link_dst[into], k - 1 + np.arange(1, n)]
    cols = np.r_[col, col[out], col[into], np.full(n - 1, e)]
    vals = np.r_[np.ones(e), np.ones(out.sum()), -np.ones(into.sum()), np.ones(n - 1)]
    a = sp.csc_matrix((vals, (rows, cols)), shape=(k + v - 1, e + 1))
    orbit_cap = np.empty(k)
    orbit_cap[orbit_of] = net.capacity  # constant on each orbit (checked by the caller)
    col_upper = np.r_[np.where(into, np.inf, 0.0), np.inf]
    return LinearProgram(a, np.r_[np.zeros(e), -1.0], np.zeros(e + 1), col_upper,
                         np.r_[np.full(k, -np.inf), np.zeros(v - 1)], np.r_[orbit_cap, np.zeros(v - 1)])


def sparse_flows(x: np.ndarray, num_links: int, num_comm: int):
    """The flows above :data:`FLOW_EPS` of an LP solution whose first columns are ``x[c, j]`` at ``c E + j``:
    (commodity, link, value), int64, int64, float64 (K,), value in capacity units.

    Raises:
        Nothing: numpy selection (``x`` shorter than E C columns is a caller's bug: ValueError).

    Source: docs/alltoall.md, "Methods" (per-source and per-pair flows are returned columnar).

    >>> sparse_flows(np.array([0.5, 0.0, 1e-13, 0.25]), 2, 2)
    (array([0, 1]), array([0, 1]), array([0.5 , 0.25]))
    """
    x = x[: num_links * num_comm].reshape(num_comm, num_links)
    comm, link = np.nonzero(x > FLOW_EPS)
    return comm.astype(np.int64), link.astype(np.int64), x[comm, link]


def solve_lp(lp: LinearProgram, solver: str, options: dict | None) -> tuple[np.ndarray, float, str]:
    """Solve an MCF LP to an optimal basis through :func:`directcoll.lp.solve` with the MCF tolerances;
    returns (x, objective, how).

    Returns:
        (x float64 (columns,), the objective (the LP's own units: -F for the flow LPs), the solver that ran
        (``simplex``, ``ipm``, ``pdlp+crossover``, ...)).

    Raises:
        SolverError: the solve failed, an unknown solver or rejected option, or the model is infeasible or
            unbounded.
        SolverLimitError: a time or iteration limit in ``options`` stopped it.
        ResourceError: the model's estimated memory is over the budget.

    Source: docs/architecture.md, "Engines, runtimes and scale" (solver hygiene: every LP through ``directcoll.lp``,
    every status checked); docs/alltoall.md, "Solvers" (the tightened 1e-9 tolerances).

    >>> lp = flow_lp(2, [0, 1], [1, 0], [1.0, 1.0], [0, 1], [0, 1], [1, 0])
    >>> x, objective, how = solve_lp(lp, "simplex", None)
    >>> -objective, how
    (1.0, 'simplex')
    """
    sol = lp_solve(lp, solver, {**HIGHS_DEFAULTS, **(options or {})})
    return sol.x, sol.objective, sol.method

