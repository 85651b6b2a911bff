"""Sweeps (docs/sweep.md): a grid of library calls run on a local Dask cluster gives exactly the
rows of the serial run, finished cells are not computed again, and a bad sweep file is refused in one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from directcoll.errors import DirectcollError, MissingDependencyError, ResourceError
from directcoll.resources import memory_budget_override
from directcoll.sweep import execute
from directcoll.sweep.cells import COLUMNS, VOLATILE_COLUMNS
from directcoll.sweep.execute import run_sweep
from directcoll.sweep.plan import load_sweep, plan_sweep

CLI = [sys.executable, "-m", "directcoll.cli.main"]

COMPARE = {"kind": "compare", "topology": ["ring:8", "torus:4x4"], "collective": ["allreduce", "alltoall"],
           "sizes": "1KiB,1MiB", "alpha": ["0s", "2us"], "algorithms": ["ring", "swing", "direct"]}
FINDER = {"kind": "find-topology", "nodes": [8, 12, 16], "degree": [2, 3]}
ALLTOALL = {"kind": "alltoall", "topology": ["genkautz:4:{nodes}", "jellyfish:{nodes}:4:0", "xpander:{nodes}:4:0"],
            "nodes": [16, 20], "method": ["link", "decomposed"]}


@pytest.fixture(scope="module")
def scheduler():
    """A local Dask cluster of 2 worker processes (what `directcoll sweep` starts by default), shared by the
    tests: its address goes where --scheduler ADDRESS would."""
    import distributed

    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=50) as cluster:
        yield cluster.scheduler_address


def _table(path):
    return pq.read_table(path).drop(list(VOLATILE_COLUMNS))


def _same_on_dask_and_serial(doc, tmp_path, scheduler):
    sweep = plan_sweep(doc)
    serial = run_sweep(sweep, tmp_path / "serial.parquet", serial=True)
    dask = run_sweep(sweep, tmp_path / "dask.parquet", scheduler=scheduler)
    assert serial.computed == dask.computed == len(sweep.cells) and dask.executor == scheduler
    a, b = _table(tmp_path / "serial.parquet"), _table(tmp_path / "dask.parquet")
    assert a.num_rows == serial.rows == dask.rows > 0
    assert a.equals(b), "the Dask run's rows differ from the serial run's"
    assert pq.read_table(tmp_path / "dask.parquet").column_names == [name for name, _ in COLUMNS[sweep.kind]]
    return sweep, a.to_pylist()


def test_compare_sweep_on_dask_equals_the_serial_run(tmp_path, scheduler):
    sweep, rows = _same_on_dask_and_serial(COMPARE, tmp_path, scheduler)
    assert len(sweep.cells) == 8 and [r["cell_index"] for r in rows] == sorted(r["cell_index"] for r in rows)
    # every cell has one winner per size, and it is the fastest row of its cell and size
    for (cell, size) in {(r["cell"], r["size_bytes"]) for r in rows}:
        at = [r for r in rows if r["cell"] == cell and r["size_bytes"] == size and r["family"] != "bound"]
        winners = [r for r in at if r["winner"]]
        assert len(winners) == 1 and winners[0]["time_s"] == min(r["time_s"] for r in at)
    # alpha is a parameter of the grid: it reaches the simulator (2 us more per step at 1 KiB)
    ring = {r["alpha_s"]: r["time_s"] for r in rows if r["topology"] == "ring:8" and r["algorithm"] == "ring"
            and r["collective"] == "allreduce" and r["size_bytes"] == 1024 and r["variant"] == "bidirectional"}
    assert ring[2e-6] > ring[0.0] + 2e-6
    assert {r["algorithm"] for r in rows if r["collective"] == "alltoall"} >= {"direct", "mcf-bound"}


def test_find_topology_sweep_on_dask_equals_the_serial_run(tmp_path, scheduler):
    from directcoll.synthesis.finder import find_topology

    _, rows = _same_on_dask_and_serial(FINDER, tmp_path, scheduler)
    assert {(r["nodes"], r["degree"]) for r in rows} == {(n, d) for n in (8, 12, 16) for d in (2, 3)}
    best = {(r["nodes"], r["degree"]): r["spec"] for r in rows if r["best"]}
    assert len(best) == 6
    assert best[(16, 2)] == find_topology(16, 2, m_over_b=[2**20 / 12.5e9]).best.spec


def test_alltoall_sweep_solves_decomposed_children_on_dask(tmp_path, scheduler):
    import distributed

    with distributed.Client(scheduler) as client, distributed.get_task_stream(client) as stream:
        _, rows = _same_on_dask_and_serial(ALLTOALL, tmp_path, scheduler)
    assert any("child_task" in t["key"] if isinstance(t["key"], str) else "child_task" in str(t["key"])
               for t in stream.data), "no child LP ran as a Dask task"
    ok = [r for r in rows if r["error"] is None]
    for r in ok:  # the decomposed master gives the link LP's F, and its per-pair flows are the serial run's
        assert r["f_lower"] <= r["theorem1_bound"] + 1e-12 and r["f_lower"] <= r["capacity_bound"] + 1e-12
    link = {r["topology"]: r["f_lower"] for r in ok if r["method"] == "link"}
    dec = {r["topology"]: r for r in ok if r["method"] == "decomposed"}
    assert link.keys() == dec.keys() and len(link) == 5
    for spec, r in dec.items():
        assert r["f_lower"] == pytest.approx(link[spec], rel=1e-7) and r["pair_flows"] > 0
    refused = [r for r in rows if r["error"]]  # xpander needs N divisible by 5: 16 is refused, in its own row
    assert [(r["topology"], r["error"].split(":")[0]) for r in refused] == [("xpander:16:4:0", "SpecError")] * 2


def test_children_map_gives_the_pool_s_result():
    from directcoll.synthesis.mcf.link import alltoall_mcf

    calls = []

    def counting_map(fn, tasks):
        tasks = list(tasks)
        calls.append(len(tasks))
        return [fn(t) for t in reversed(tasks)][::-1]  # any order of work, results in task order

    inline = alltoall_mcf("jellyfish:12:3:0", method="decomposed", workers=1)
    mapped = alltoall_mcf("jellyfish:12:3:0", method="decomposed", workers=1, map=counting_map)
    from directcoll.topology import parse
    from directcoll.topology.automorphism import automorphism_group

    # one child LP per source orbit under the graph's automorphisms (synthesis/mcf/link.py, "decomposed")
    assert calls == [automorphism_group(parse("jellyfish:12:3:0")).num_node_orbits]
    for name in ("commodity_source", "commodity_dest", "commodity_link", "commodity_value"):
        assert np.array_equal(getattr(inline, name), getattr(mapped, name)), name


def test_resume_computes_only_missing_cells(tmp_path, monkeypatch):
    ran = []

    def counting(kind, params, budget=None, children_map=None):
        ran.append(params["nodes"])
        return run_cell(kind, params, budget, children_map)

    from directcoll.sweep.cells import run_cell

    monkeypatch.setattr(execute, "run_cell", counting)
    out = tmp_path / "r.parquet"
    first = run_sweep(plan_sweep({**FINDER, "degree": 2}), out, serial=True)
    assert (first.computed, first.reused, len(ran)) == (3, 0, 3)
    before = pq.read_table(out)
    again = run_sweep(plan_sweep({**FINDER, "degree": 2}), out, serial=True)
    assert (again.computed, again.reused, len(ran)) == (0, 3, 3)
    assert pq.read_table(out).equals(before)  # the same parts, cell_seconds included
    first_cell = plan_sweep({**FINDER, "degree": 2}).cells[0]
    (tmp_path / "r.parquet.parts" / f"{first_cell.key}.parquet").unlink()  # as if stopped before it finished
    grown = run_sweep(plan_sweep({**FINDER, "nodes": [8, 12, 16, 24], "degree": 2}), out, serial=True)
    assert (grown.computed, grown.reused, grown.cells) == (2, 2, 4) and ran[3:] == [8, 24]
    table = pq.read_table(out).to_pylist()
    assert [r["cell_index"] for r in table] == sorted(r["cell_index"] for r in table)
    assert {r["nodes"] for r in table} == {8, 12, 16, 24}


def test_over_the_budget_is_refused_before_any_cell(tmp_path):
    sweep = plan_sweep({"kind": "alltoall", "topology": ["ring:4", "genkautz:4:30"], "method": "link"})
    with memory_budget_override("1MiB"), pytest.raises(ResourceError, match="sweep cell 1 .*genkautz:4:30"):
        run_sweep(sweep, tmp_path / "r.parquet", serial=True)
    assert not (tmp_path / "r.parquet.parts").exists()
    with pytest.raises(ResourceError, match="sweep cell 1 .*over the limit of 1,048,576 nodes"):
        run_sweep(plan_sweep({**FINDER, "nodes": [8, 2**21], "degree": 2}), tmp_path / "r.parquet", serial=True)


def test_without_dask_one_line_names_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(MissingDependencyError, match=r"needs distributed: pip install 'directcoll\[sweep\]'"):
        run_sweep(plan_sweep({**FINDER, "nodes": 8, "degree": 2}), tmp_path / "r.parquet", workers=1)
    with pytest.raises(DirectcollError, match="--workers"):
        run_sweep(plan_sweep({**FINDER, "nodes": 8, "degree": 2}), tmp_path / "r.parquet", serial=True, workers=2)


def _cli(*args, cwd):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


@pytest.mark.parametrize("text, says", [
    ('kind = "compare"\ntopology = "torus:4x4"\nalpah = "1us"\n', "unknown key 'alpah' for kind 'compare'; did you "
                                                                  "mean 'alpha'?"),
    ('kind = "compare"\ntopology = ["torus:4x4", "torsu:4"]\n', "key 'topology': unknown topology spec 'torsu:4'"),
    ('kind = compare\n', "not TOML: Invalid value (at line 1, column 8)"),
    ('kind = "histogram"\n', "unknown kind 'histogram'; accepted: kind = 'compare' | 'find-topology' | 'alltoall'"),
    ('kind = "find-topology"\nnodes = 8\n', "kind 'find-topology' needs the key 'degree'"),
    ('kind = "find-topology"\nnodes = 8\ndegree = [2, "x"]\n', "key 'degree': must be a whole number >= 1"),
    ('kind = "compare"\ntopology = "ring:4"\nalpha = "1 parsec"\n', "key 'alpha': cannot read duration"),
    ('kind = "alltoall"\ntopology = "genkautz:{d}:{nodes}"\nnodes = 8\n', "names 'd'; accepted: {nodes}, {degree}"),
    ('kind = "alltoall"\ntopology = "ring:4"\nmethod = []\n', "key 'method': is an empty list"),
])
def test_a_bad_sweep_file_is_one_line(tmp_path, monkeypatch, capsys, text, says):
    from directcoll.cli.main import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.toml").write_text(text)
    assert main(["sweep", "s.toml", "-o", "r.parquet", "--serial"]) == 2
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert out.out == "" and len(lines) == 1, out
    assert lines[0].startswith("directcoll: error: s.toml: ") and says in lines[0], lines[0]
    assert not (tmp_path / "r.parquet").exists() and not (tmp_path / "r.parquet.parts").exists()


def test_stdout_is_the_summary_and_progress_goes_to_stderr(tmp_path, monkeypatch, capsys):
    (tmp_path / "s.toml").write_text('kind = "find-topology"\nnodes = [8, 16]\ndegree = 2\n')
    out = _cli("sweep", "s.toml", "-o", "r.parquet", "--serial", "--json", cwd=tmp_path)  # a user's view
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert (doc["cells"], doc["computed"], doc["reused"], doc["executor"]) == (2, 2, 0, "serial")
    assert doc["rows"] == pq.read_table(tmp_path / "r.parquet").num_rows and "spec" in doc["columns"]
    assert "directcoll: sweep: 2/2 cells" in out.stderr

    from directcoll.cli.main import main

    monkeypatch.chdir(tmp_path)
    assert main(["sweep", "s.toml", "-o", "r.parquet", "--serial"]) == 0
    again = capsys.readouterr()
    assert again.out.count("\n") == 1 and "2 cells (0 computed, 2 reused, 0 refused)" in again.out
    with pytest.raises(SystemExit) as help_exit:
        main(["sweep", "--help"])
    assert help_exit.value.code == 0 and "--scheduler ADDRESS" in capsys.readouterr().out


def test_the_example_sweeps_plan():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    examples = sorted((root / "benchmarks" / "sweeps").glob("*.toml"))
    assert len(examples) >= 3
    for path in examples:
        assert load_sweep(path).cells, path
