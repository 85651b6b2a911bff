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

    Raises:
        ResourceError: over the budget (:func:`directcoll.resources.check_memory`).
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

    Raises:
        ResourceError: the LP would exceed the memory budget (:func:`check_flow_lp`).
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

    Raises:
        ResourceError: over the memory budget.
    """
    n = net.num_compute
    check_flow_lp(n, net.num_links, n * (n - 1))
    s, t = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    off = s != t
    return flow_lp(net.num_nodes, net.link_src, net.link_dst, net.capacity, np.arange(n), s[off], t[off])


def pair_lp(net: FlowNetwork) -> tuple[LinearProgram, np.ndarray, np.ndarray]:
    """Per-pair LP (Basu eq. 1-5): commodities (s, d), s != d, in (s, d) order; returns (LP, s (C,), d (C,)).

    Raises:
        ResourceError: over the memory budget.
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
    (commodity, link, value), int64, int64, float64 (K,)."""
    x = x[: num_links * num_comm].reshape(num_comm, num_links)
    comm, link = np.nonzero(x > FLOW_EPS)
    return comm.astype(np.int64), link.astype(np.int64), x[comm, link]


def solve_lp(lp: LinearProgram, solver: str, options: dict | None) -> tuple[np.ndarray, float, str]:
    """Solve an MCF LP to an optimal basis through :func:`directcoll.lp.solve` with the MCF tolerances;
    returns (x, objective, how).

    Raises:
        SolverError: the solve failed, or the model is infeasible or unbounded.
        SolverLimitError: a time or iteration limit in ``options`` stopped it.
    """
    sol = lp_solve(lp, solver, {**HIGHS_DEFAULTS, **(options or {})})
    return sol.x, sol.objective, sol.method

