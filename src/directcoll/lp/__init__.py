"""The one door to HiGHS: every LP and MIP of directcoll is built as a :class:`LinearProgram` and solved here.

Options are set once, when a :class:`Solver` is constructed; every run's status and model status is checked;
a failed, infeasible or unbounded solve raises :class:`~directcoll.errors.SolverError` naming the model and its
size; a time or iteration limit raises :class:`~directcoll.errors.SolverLimitError` unless the caller accepts
limits, and is then reported in :attr:`Solution.status`, never passed off as a result; nothing is written to
the process's standard output.

:func:`solve` adds the method choice measured on the all-to-all MCF LPs (docs/alltoall.md): dual simplex up to
:data:`SIMPLEX_MAX_COLUMNS` columns, interior point (IPX, with crossover) up to :data:`IPM_MAX_COLUMNS`, PDLP
then crossover above.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from directcoll.errors import SolverError, SolverLimitError
from directcoll.lp.highs import Solver, quiet_stdout
from directcoll.lp.model import LinearProgram, Solution

__all__ = ["IPM_MAX_COLUMNS", "LinearProgram", "METHODS", "PDLP_KKT_TOLERANCE", "SIMPLEX_MAX_COLUMNS",
           "Solution", "Solver", "SolverError", "SolverLimitError", "quiet_stdout", "solve"]

METHODS = ("auto", "simplex", "ipm", "pdlp")
#: ``method="auto"``: dual simplex up to this many columns (torus:3x3x3 MCF, 4.4k columns: simplex 0.13 s,
#: IPX 0.07 s; genkautz:4:100, 40k columns: simplex 144 s, IPX 11.4 s, PDLP + crossover 7.6 s).
SIMPLEX_MAX_COLUMNS = 2000
IPM_MAX_COLUMNS = 20000
#: KKT tolerance of the PDLP phase before crossover: looser means fewer PDLP iterations but a longer crossover
#: (genkautz:4:150: 1e-7: 43 s in all, 1e-5: 18 s, 1e-4: 34 s).
PDLP_KKT_TOLERANCE = 1e-5
_HIGHS_SOLVER = {"simplex": "simplex", "ipm": "ipx", "pdlp": "pdlp"}


def solve(lp: LinearProgram, method: str = "auto", options: dict | None = None, *,
          accept_limit: bool = False, start: np.ndarray | None = None) -> Solution:
    """Solve ``lp`` to optimality with ``method``, every status checked.

    Args:
        lp: the model; a MIP (``lp.integer``) is solved by HiGHS's branch and cut whatever ``method`` says.
        method: ``auto``, ``simplex``, ``ipm`` (interior point + crossover) or ``pdlp`` (PDLP on the equality
            form, made exactly complementary, crossover, then dual simplex: an optimal basis; falls back to
            ``ipm`` when PDLP or crossover fails, but not when it hits a limit).
        options: HiGHS options for every run (e.g. ``{"time_limit": 60.0}``, seconds).
        accept_limit: see :meth:`Solver.solve`.
        start: a MIP's starting point, shape (cols,).

    Returns:
        the :class:`Solution` (``x`` of shape (cols,), ``seconds`` of wall time); ``method`` says which path
        solved it (``"pdlp+crossover"``, ``"ipm (pdlp failed)"``, ...).

    Raises:
        SolverError: unknown method, rejected option or model, infeasible or unbounded model, failed solve.
        SolverLimitError: a limit stopped the solve.
        ResourceError: the model's estimated memory is over the budget.

    Source: docs/architecture.md, "Engines, runtimes and scale" (solver hygiene: every LP/MIP through ``directcoll.lp``,
    every status checked); the method thresholds measured in docs/alltoall.md, "Solvers".

    >>> lp = LinearProgram(sp.csc_matrix([[1.0, 1.0]]), np.array([-1.0, -1.0]), np.zeros(2), np.ones(2),
    ...                    np.array([-np.inf]), np.array([1.5]), name="toy")
    >>> solve(lp).objective
    -1.5
    >>> bad = LinearProgram(lp.a, lp.cost, lp.col_lower, lp.col_upper, np.array([3.0]), np.array([np.inf]),
    ...                     name="infeasible toy")
    >>> solve(bad)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.SolverError: HiGHS (simplex) on infeasible toy (1 rows, 2 columns, 2 non-zeros): the model ...
    """
    if method not in METHODS:
        raise SolverError(f"unknown LP method {method!r}; accepted: {', '.join(METHODS)}")
    if lp.is_mip:
        return Solver(options).solve(lp, start=start, accept_limit=accept_limit)
    if method == "auto":
        cols = lp.num_cols
        method = "simplex" if cols <= SIMPLEX_MAX_COLUMNS else "ipm" if cols <= IPM_MAX_COLUMNS else "pdlp"
    label = ""
    if method == "pdlp":
        out = _pdlp_crossover(lp, options)
        if out is not None:
            return out
        method, label = "ipm", "ipm (pdlp failed)"
    solver = Solver({**(options or {}), "solver": _HIGHS_SOLVER[method]})
    return solver.solve(lp, accept_limit=accept_limit, start=start, method=label or method)


def _pdlp_crossover(lp: LinearProgram, options: dict | None) -> Solution | None:
    """PDLP, then crossover from the PDLP point made exactly complementary, then dual simplex from that basis.

    The ``<=`` rows get explicit slack columns (all rows become equalities), so complementarity only involves
    column bounds and is enforced exactly: IPX rejects a starting point with a nonzero dual on a value off its
    bound. Returns None when PDLP or crossover fails (the caller falls back to interior point); a limit raises.
    """
    ineq = lp.row_lower != lp.row_upper
    if np.any(ineq & (np.isfinite(lp.row_lower) | ~np.isfinite(lp.row_upper))):
        return None  # only "<=" and "=" rows are supported by this path
    rows = np.flatnonzero(ineq)
    slack = sp.csc_matrix((np.ones(len(rows)), (rows, np.arange(len(rows)))), shape=(lp.num_rows, len(rows)))
    n0 = lp.num_cols
    eq = LinearProgram(sp.hstack([lp.a, slack], format="csc"), np.r_[lp.cost, np.zeros(len(rows))],
                       np.r_[lp.col_lower, np.zeros(len(rows))], np.r_[lp.col_upper, np.full(len(rows), np.inf)],
                       lp.row_upper.copy(), lp.row_upper.copy(), name=lp.name + " (equality form)")
    try:
        first = Solver({"kkt_tolerance": PDLP_KKT_TOLERANCE, **(options or {}), "solver": "pdlp"}).solve(
            eq, duals=True)
    except SolverLimitError:
        raise
    except SolverError:
        return None
    x, z = first.x, first.col_dual
    lo, up = eq.col_lower, eq.col_upper
    x = np.clip(x, lo, up)
    at_lo = (x <= lo + 1e-9) & (z > 0)
    at_up = (x >= up - 1e-9) & (z < 0) & ~at_lo
    fixed = lo == up
    x[at_lo], x[at_up], x[fixed] = lo[at_lo], up[at_up], lo[fixed]
    z[~(at_lo | at_up | fixed)] = 0.0
    try:
        # from the crossover basis (optimal, or "imprecise" after a looser PDLP): a few simplex iterations at most
        out = Solver({**(options or {}), "solver": "simplex"}).crossover(eq, x, z)
    except SolverLimitError:
        raise
    except SolverError:
        return None
    return Solution(x=out.x[:n0], objective=out.objective, status=out.status, optimal=True, method="pdlp+crossover",
                    seconds=first.seconds + out.seconds, dual_bound=out.objective)
