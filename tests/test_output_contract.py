"""--json and --csv are a contract: standard output holds exactly that document, whatever runs underneath
(HiGHS included, which prints from C below Python's sys.stdout). Only a real subprocess sees such writes."""

import csv
import io
import json
import os
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "directcoll.cli.main"]


def _run(args, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    out = subprocess.run(CLI + args, capture_output=True, text=True, timeout=300, cwd=cwd, env=env)
    assert out.returncode == 0, f"{args}: exit {out.returncode}\n{out.stderr}"
    return out


JSON_COMMANDS = {
    "compare (default: torus:8x8 with BFB, an LP)": ["compare", "--json"],
    "compare trn1": ["compare", "trn1", "--json", "--sizes", "1KiB,1MiB"],
    "compare direct-connect": ["compare", "circulant:16:3,4", "--json", "--sizes", "1KiB,1MiB"],
    "compare alltoall": ["compare", "torus:3x3", "--collective", "alltoall", "--json", "--sizes", "1KiB"],
    "topology describe": ["topology", "describe", "hammingmesh:2x2:4x4", "--json"],
    "topology describe --alltoall": ["topology", "describe", "genkautz:3:20", "--alltoall", "--json"],
    "schedule bfb": ["schedule", "bfb", "circulant:16:3,4", "-o", "bfb.json", "--json"],
    "schedule mcf": ["schedule", "mcf", "torus:3x3", "--collective", "alltoall", "-o", "mcf.json", "--json"],
    "cost": ["cost", "--algorithm", "bfb", "--topology", "circulant:16:3,4", "--json"],
    "find-topology": ["find-topology", "--nodes", "16", "--degree", "2", "--json"],
    "find-topology --alltoall": ["find-topology", "--nodes", "12", "--degree", "2", "--alltoall", "--json"],
    "table2": ["table2", "--side", "4", "--json"],
    "algorithms": ["algorithms", "--json"],
    "topology families": ["topology", "families", "--json"],
    "run (2 MPI ranks)": ["run", "--topology", "ring:2", "--sizes", "1KiB", "--algorithms", "ring", "--repeat", "1",
                          "--json"],
}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.mpi) if n.startswith("run") else n
                                  for n in sorted(JSON_COMMANDS)])
def test_json_output_is_exactly_one_document(name, tmp_path):
    out = _run(JSON_COMMANDS[name], tmp_path)
    json.loads(out.stdout)  # the whole of standard output, nothing before or after


@pytest.mark.slow
def test_file_commands_json(tmp_path):
    """schedule -> verify, simulate, export, import: each --json is the whole of standard output."""
    _run(["schedule", "bfb", "circulant:8:1,3", "-o", "s.json"], tmp_path)
    for args in (["verify", "s.json", "--json"], ["simulate", "s.json", "--json", "--size", "1MiB"],
                 ["export", "s.json", "-o", "s.xml", "--json"], ["import", "s.xml", "-o", "t.json", "--json"],
                 ["verify", "t.json", "--json"]):
        json.loads(_run(args, tmp_path).stdout)


@pytest.mark.parametrize("args", [["compare", "--csv"], ["compare", "circulant:16:3,4", "--csv", "--sizes", "1KiB"]])
def test_csv_output_is_exactly_one_table(args, tmp_path):
    rows = list(csv.reader(io.StringIO(_run(args, tmp_path).stdout)))
    header = rows[0]
    assert header[0] == "algorithm" and "time_s" in header
    assert len(rows) > 1 and all(len(r) == len(header) for r in rows)
    for r in rows[1:]:
        float(r[header.index("time_s")])
