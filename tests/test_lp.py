"""The solver layer: every HiGHS status is checked in every client, nothing reaches standard output.

Each client (BFB, expansions, the finder, the MCF methods, time-stepped and path MCF, the ILP baseline) is driven
into a real failed solve, a real infeasible model and a real time limit by perturbing what reaches HiGHS, and must
raise SolverError / SolverLimitError (or, for the ILP whose time limit is part of the method, report the limit).
"""

import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from directcoll.algorithms.alltoall.ilp import ilp_alltoall
from directcoll.errors import SolverError, SolverLimitError
from directcoll.lp import LinearProgram, Solver, solve
from directcoll.lp import highs as lp_highs
from directcoll.synthesis.bfb import bfb_allgather, bfb_cost
from directcoll.synthesis.expansions import expanded_schedule
from directcoll.synthesis.finder import find_topology
from directcoll.synthesis.mcf.link import alltoall_mcf
from directcoll.synthesis.mcf.paths import mcf_extp, pmcf
from directcoll.synthesis.mcf.timestepped import tsmcf
from directcoll.topology.spec import parse

CLIENTS = {
    "bfb": lambda: bfb_allgather(parse("circulant:16:3,4")),
    "bfb_cost": lambda: bfb_cost(parse("genkautz:3:20")),
    "expansion": lambda: expanded_schedule("line^2(circulant:8:1,2)"),
    "finder": lambda: find_topology(12, 2),
    "mcf-link": lambda: alltoall_mcf("torus:3x4", method="link"),
    "mcf-symmetric": lambda: alltoall_mcf("torus:3x3", method="symmetric"),
    "mcf-automorphism": lambda: alltoall_mcf("genkautz:2:12", method="automorphism"),
    "mcf-decomposed": lambda: alltoall_mcf("torus:3x3", method="decomposed", workers=1),
    "mcf-ipm": lambda: alltoall_mcf("torus:3x4", method="link", solver="ipm"),
    "mcf-pdlp": lambda: alltoall_mcf("torus:3x4", method="link", solver="pdlp"),
    "tsmcf": lambda: tsmcf("ring:5", lmax=3),
    "pmcf": lambda: pmcf("torus:3x3"),
    "extp": lambda: mcf_extp("torus:3x3", workers=1),
}


def _perturb_models(monkeypatch, change):
    original = Solver._pass
    calls = []

    def perturbed(self, lp):
        calls.append(lp.name)
        return original(self, change(lp))

    monkeypatch.setattr(Solver, "_pass", perturbed)
    return calls


def _nan_cost(lp):
    return dataclasses.replace(lp, cost=np.r_[np.nan, lp.cost[1:]])


def _empty_box(lp):  # column 0 must lie in [1, 0]: infeasible whatever the model
    return dataclasses.replace(lp, col_lower=np.r_[1.0, lp.col_lower[1:]], col_upper=np.r_[0.0, lp.col_upper[1:]])


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_every_client_runs_through_the_lp_layer_and_raises_on_a_failed_solve(monkeypatch, client):
    calls = _perturb_models(monkeypatch, _nan_cost)
    with pytest.raises(SolverError, match="non-finite cost"):
        CLIENTS[client]()
    assert calls, f"{client} solved no LP through directcoll.lp"


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_every_client_raises_on_an_infeasible_model(monkeypatch, client):
    _perturb_models(monkeypatch, _empty_box)
    with pytest.raises(SolverError, match="infeasible"):
        CLIENTS[client]()


@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_every_client_reports_a_limit_as_a_limit(monkeypatch, client):
    """Time limit 0 (and iteration limits 0: older HiGHS releases let IPX finish a small model past a zero time
    limit)."""
    original = Solver.__init__
    limits = {"time_limit": 0.0, "presolve": "off", "simplex_iteration_limit": 0, "ipm_iteration_limit": 0,
              "pdlp_iteration_limit": 0}

    def limited(self, options=None):
        original(self, {**(options or {}), **limits})

    monkeypatch.setattr(Solver, "__init__", limited)
    with pytest.raises(SolverLimitError, match="(Time|Iteration) limit reached"):
        CLIENTS[client]()


def test_ilp_reports_its_time_limit_and_keeps_the_start_solution(monkeypatch):
    original = Solver.__init__
    monkeypatch.setattr(Solver, "__init__", lambda self, options=None: original(self, {**options, "time_limit": 0.0}))
    s = ilp_alltoall(parse("torus:4x4"), "shortest")
    assert s.meta["ilp_status"] == "Time limit reached"
    assert s.meta["ilp_bound"] < s.meta["ilp_objective"]  # not proved optimal, and says so


@pytest.mark.parametrize("change", [_nan_cost, _empty_box])
def test_ilp_raises_on_failed_or_infeasible_model(monkeypatch, change):
    _perturb_models(monkeypatch, change)
    with pytest.raises(SolverError):
        ilp_alltoall(parse("hypercube:3"))


def test_ilp_is_optimal_after_other_solves():
    """HiGHS refuses a thread count set after an earlier solve unless its scheduler is reset (the bug that made
    the ILP return its start solution with status "Not Set")."""
    alltoall_mcf("torus:3x4", method="link")
    bfb_allgather(parse("circulant:16:3,4"))
    s = ilp_alltoall(parse("hypercube:3"))
    assert s.meta["ilp_status"] == "Optimal" and s.meta["ilp_objective"] == pytest.approx(4.0)


def _toy(**kw) -> LinearProgram:
    return LinearProgram(sp.csc_matrix(np.ones((3, 4))), -np.ones(4), np.zeros(4), np.ones(4), np.full(3, -np.inf),
                         np.full(3, 2.0), name="toy", **kw)


def test_a_failed_run_is_an_error_not_a_result(monkeypatch):
    """The real failure: threads set after an earlier solve, without the scheduler reset, makes run() fail."""
    Solver({"threads": 1}).solve(_toy())  # the global scheduler now has one thread
    solver = Solver({"threads": 2})
    solver._reset_threads = False
    with pytest.raises(SolverError, match="failed: run status error"):
        solver.solve(_toy())


def test_unbounded_iteration_limit_and_rejected_option():
    unbounded = dataclasses.replace(_toy(), col_upper=np.full(4, np.inf), row_upper=np.full(3, np.inf))
    with pytest.raises(SolverError, match="unbounded"):
        solve(unbounded)
    with pytest.raises(SolverLimitError, match="Iteration limit reached"):
        solve(_toy(), "simplex", {"simplex_iteration_limit": 0, "presolve": "off"})
    with pytest.raises(SolverError, match="rejects option threads='many'"):
        Solver({"threads": "many"})
    with pytest.raises(SolverError, match="unknown LP method 'barrier'"):
        solve(_toy(), "barrier")


@pytest.mark.parametrize("method", ["simplex", "ipm", "pdlp"])
def test_methods_agree(method):
    assert solve(_toy(), method).objective == pytest.approx(-2.0)


def test_a_model_over_the_memory_budget_is_refused(monkeypatch):
    from directcoll.errors import ResourceError
    from directcoll.resources import memory_budget_override

    monkeypatch.setattr(lp_highs, "MEMORY_CHECK_FROM", 0)
    with memory_budget_override("1KiB"), pytest.raises(ResourceError, match="toy"):
        solve(_toy())


def test_highs_writes_nothing_to_standard_output():
    """The banner HiGHS prints from C on descriptor 1 at construction; only a subprocess sees it."""
    code = ("from directcoll.lp import Solver, solve; from directcoll.synthesis.mcf.link import alltoall_mcf; "
            "Solver(); alltoall_mcf('torus:3x3', method='link', solver='ipm'); print('only this')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONUNBUFFERED": "1"})
    assert out.returncode == 0, out.stderr
    assert out.stdout == "only this\n"
