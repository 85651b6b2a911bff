"""``directcoll compare --why``: per winner, its steps, Ξ and busiest link, equal to what the cost and simulation
code give for the same schedule (docs/architecture.md, "Command line": "an optional --why that adds, per winner, steps,
Ξ and the busiest link's load")."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys

import numpy as np
import pytest

from directcoll.cost.analytic import analyze
from directcoll.registry import build, build_pattern, get
from directcoll.reports.compare import WHY_CSV, compare
from directcoll.reports.steps import link_label, step_view
from directcoll.reports.why import pattern_congestion_deficiency
from directcoll.simulate import simulate
from directcoll.simulate.params import SWING_SST
from directcoll.topology import parse
from directcoll.verify import verify

CLI = [sys.executable, "-m", "directcoll.cli.main"]
FIELDS = {"steps", "congestion_deficiency", "max_link_name", "max_link", "bytes_max_link", "max_link_step"}


def _cli(*args) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=300)


def _schedule(row: dict, topology):
    alg = get(row["algorithm"])
    variant = row["variant"] if row["variant"] in alg.variants else None
    schedule = build(row["algorithm"], topology, "allreduce", variant=variant)
    assert verify(schedule).ok
    return schedule


@pytest.mark.parametrize("spec", ["torus:4x4", "circulant:16:1,5"])
def test_json_why_is_one_document_whose_numbers_are_the_cost_and_step_models(spec):
    out = _cli("compare", spec, "--sizes", "256B,16MiB", "--json", "--why")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)                       # exactly one JSON document on stdout
    topology = parse(spec)
    winners = set()
    for row in doc["best"]:
        assert FIELDS <= set(row), row
        schedule = _schedule(row, topology)
        winners.add((row["algorithm"], row["variant"]))
        report = analyze(schedule, topology, link_loads_too=False)
        assert row["steps"] == report.steps == schedule.num_steps
        assert row["congestion_deficiency"] == pytest.approx(report.congestion_deficiency, rel=1e-12)
        steps = simulate(schedule, topology, SWING_SST).breakdown(row["size"])
        assert row["bytes_max_link"] == pytest.approx(max(r["bytes_max_link"] for r in steps), rel=1e-12)
        # the named link carries those bytes in the named step, counted by `directcoll show`'s own routing
        view = step_view(schedule, topology, row["max_link_step"], row["size"])
        assert view.loads[row["max_link"]] == pytest.approx(row["bytes_max_link"], rel=1e-9)
        assert row["max_link_name"] == link_label(topology, row["max_link"])
    assert len(winners) >= 1
    for row in doc["results"]:                          # every timed entry has them too
        assert FIELDS <= set(row)


def test_without_why_the_document_is_unchanged():
    out = _cli("compare", "ring:8", "--sizes", "1KiB", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert not FIELDS & set(doc["best"][0]) and not FIELDS & set(doc["results"][0])


def test_csv_and_table_why():
    out = _cli("compare", "torus:4x4", "--sizes", "1KiB,1MiB", "--csv", "--why")
    assert out.returncode == 0, out.stderr
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert rows and all(set(WHY_CSV) <= set(r) and r["max_link_name"] for r in rows)
    assert all(int(r["steps"]) >= 1 and float(r["congestion_deficiency"]) >= 1.0 for r in rows)
    table = _cli("compare", "torus:4x4", "--sizes", "1KiB,1MiB", "--why", "--wide")
    assert table.returncode == 0, table.stderr
    header = next(line for line in table.stdout.splitlines() if line.strip().startswith("size"))
    assert all(word in header for word in ("steps", "Ξ", "busiest link", "its bytes"))
    assert "congestion deficiency" in table.stdout


def test_pattern_xi_is_analyze_xi_on_other_shapes():
    for spec, name, variant in [("torus:8x8", "swing", "latency"), ("torus:4x8", "bucket", None),
                                ("hyperx:4x4", "recursive-doubling", "latency"), ("ring:7", "ring", None)]:
        t = parse(spec)
        want = analyze(build(name, t, variant=variant), t, link_loads_too=False).congestion_deficiency
        assert pattern_congestion_deficiency(build_pattern(name, t, variant=variant), t) == pytest.approx(want)


def test_library_why_for_flow_model_uses_step_routing():
    t = parse("ring:4")
    step = compare(t, sizes=np.array([4096.0]), contenders=[("ring", "ring", None)], why=True)
    flow = compare(t, sizes=np.array([4096.0]), model="flow", contenders=[("ring", "ring", None)], why=True)
    assert step.entries[0].why == flow.entries[0].why
