"""Every benchmark script answers --help without running, has an --out directory that defaults outside docs/, and
prints an estimate of its run time (docs/architecture.md, "Command line"). Only argument parsing runs here: the scripts
themselves take minutes to hours."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HELPERS = {"benchcli.py", "common.py"}
SCRIPTS = sorted(p for p in [*ROOT.glob("benchmarks/*.py"), *ROOT.glob("benchmarks/paper/*.py")]
                 if p.name not in HELPERS)


def _run(script: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=180,
                          cwd=cwd, env=env)


@pytest.fixture(scope="module")
def helps(tmp_path_factory):
    cwd = tmp_path_factory.mktemp("bench")
    with ThreadPoolExecutor(4) as pool:
        runs = pool.map(lambda s: _run(s, "--help", "--out", str(cwd / s.stem), cwd=cwd), SCRIPTS)
        return dict(zip(SCRIPTS, runs, strict=True)), cwd


def test_every_script_is_checked():
    names = {p.name for p in SCRIPTS}
    assert {"kolmakov_fig7_12.py", "swing_fig6.py", "basu_fig10.py", "run_all.py", "bench_compare.py",
            "bench_mpi.py", "fidelity.py"} <= names and len(names) >= 25


@pytest.mark.slow
@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_help_runs_nothing_and_names_out_and_estimate(helps, script):
    runs, cwd = helps
    out = runs[script]
    assert out.returncode == 0, out.stderr
    assert "--out DIR" in out.stdout and "Estimated run time:" in out.stdout, out.stdout
    options = out.stdout.split("\noptions:", 1)[1]
    default = " ".join(options.split("--out DIR", 1)[1].split()).split("default ", 1)[1].split("/", 2)
    assert default[0] == "benchmarks" and default[1] == "out", out.stdout   # benchmarks/out/...: not docs/
    assert not (cwd / script.stem).exists(), "--help wrote outputs"
    assert "estimated run time" not in out.stderr                          # the run's own announcement


def test_a_bad_argument_is_refused_before_any_work(tmp_path):
    for script in (ROOT / "benchmarks/paper/kolmakov_fig7_12.py", ROOT / "benchmarks/bench_compare.py"):
        out = _run(script, "--no-such-flag", cwd=tmp_path)
        assert out.returncode == 2 and "unrecognized arguments" in out.stderr
        assert "estimated run time" not in out.stderr


def test_a_rerun_that_measures_nothing_rewrites_nothing(tmp_path):
    # every row of Fig. 10 is stored with its date: a run that measures none leaves the result files as they are
    import json
    import shutil

    results = tmp_path / "results"
    results.mkdir()
    shutil.copy(ROOT / "benchmarks/paper/results/basu_fig10.json", results)
    (results / "basu_fig10.md").write_text("the tracked table\n")
    rows = json.loads((results / "basu_fig10.json").read_text())
    assert rows and all(r["measured"] for r in rows)
    done = _run(ROOT / "benchmarks/paper/basu_fig10.py", "--out", str(tmp_path / "out"), "--results", str(results),
                cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "nothing measured, nothing rewritten" in done.stderr
    assert (results / "basu_fig10.md").read_text() == "the tracked table\n"
    assert not (tmp_path / "out" / "basu_fig10.png").exists()
