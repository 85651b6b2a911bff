"""Long LP solves show HiGHS's own log on standard error, never on standard output (docs/architecture.md, "Command
line": "a sign of life on anything over two seconds"); short ones, and every solve with the log off, print nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.sparse as sp

from directcoll.errors import SolverError
from directcoll.lp import LinearProgram, Solver, solve
from directcoll.lp import highs as lp_highs


def _lp(n: int = 60) -> LinearProgram:
    rng = np.random.default_rng(0)
    a = sp.random(n, 2 * n, density=0.2, random_state=1, format="csc")
    return LinearProgram(a, -rng.random(2 * n), np.zeros(2 * n), np.full(2 * n, 10.0), np.full(n, -np.inf),
                         np.ones(n), name="random")


def test_on_after_the_threshold_the_log_goes_to_stderr_only(monkeypatch, capfd):
    monkeypatch.setattr(lp_highs, "SOLVER_LOG_AFTER", 0.0)   # every solve counts as long
    with lp_highs.solver_log("on"):
        sol = Solver({"solver": "simplex"}).solve(_lp())
    out, err = capfd.readouterr()
    assert sol.optimal and out == ""
    assert "directcoll: HiGHS (simplex) on random" in err
    lines = [line for line in err.splitlines() if line.startswith("  highs: ")]
    assert any("Model status" in line and "Optimal" in line for line in lines), err


@pytest.mark.parametrize("mode", ["off", "auto"])   # auto: standard error is not a terminal under pytest
def test_off_or_not_a_terminal_prints_nothing(monkeypatch, capfd, mode):
    monkeypatch.setattr(lp_highs, "SOLVER_LOG_AFTER", 0.0)
    with lp_highs.solver_log(mode):
        solve(_lp(), "ipm")
    assert capfd.readouterr() == ("", "")


def test_a_short_solve_prints_nothing_and_the_solver_is_quiet_afterwards(capfd):
    solver = Solver()
    with lp_highs.solver_log("on"):
        solver.solve(_lp())                       # well under SOLVER_LOG_AFTER
    solver.solve(_lp(40))                         # log relay gone, output_flag back off
    assert capfd.readouterr() == ("", "")


def test_the_timer_announces_a_silent_solver(capsys):
    relay = lp_highs._LogRelay("a model", after=0.05)
    with relay:
        relay(type("E", (), {"message": "presolve\n"})())
        time.sleep(0.3)                           # HiGHS says nothing for a while
        relay(type("E", (), {"message": "iteration 7\n"})())
    err = capsys.readouterr().err.splitlines()
    assert err == ["directcoll: a model has run 0.05 s; HiGHS's log:", "  highs: presolve", "  highs: iteration 7"]


def test_a_bad_mode_is_refused(monkeypatch):
    monkeypatch.setenv(lp_highs.SOLVER_LOG_ENV, "loud")
    with pytest.raises(SolverError, match="accepted: auto, on, off"):
        lp_highs.solver_log_enabled()
    with pytest.raises(SolverError, match="accepted"):
        with lp_highs.solver_log("verbose"):
            pass


def test_cli_solver_log_keeps_json_clean():
    """An all-to-all compare solves the MCF bound through HiGHS: with the log on, --json stays one document."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    out = subprocess.run([sys.executable, "-m", "directcoll.cli.main", "--solver-log", "on", "compare", "torus:3x3",
                          "--collective", "alltoall", "--sizes", "1KiB", "--json"], capture_output=True, text=True,
                         timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["bound"]["F"] > 0
    bad = subprocess.run([sys.executable, "-m", "directcoll.cli.main", "compare", "--solver-log", "loud"],
                         capture_output=True, text=True, timeout=120, env=env)
    assert bad.returncode == 2 and "invalid choice" in bad.stderr
