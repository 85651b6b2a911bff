"""Bad command-line input ends in one line on stderr and exit status 2, fast, with nothing on stdout.

Every case runs the real command in a subprocess: what a new user types, what they see.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from directcoll.errors import DirectcollError
from directcoll.units import parse_bandwidth, parse_duration, parse_sizes

SRC = str(Path(__file__).resolve().parents[1] / "src")


def run_cli(*argv, cwd=None, limit_as: int | None = None, env_extra: dict | None = None, timeout: float = 60):
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", ""), **(env_extra or {})}

    def limit():  # runs in the child before exec
        if limit_as is not None:
            resource.setrlimit(resource.RLIMIT_AS, (limit_as, limit_as))

    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "directcoll.cli.main", *argv], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout, preexec_fn=limit)
    return proc, time.perf_counter() - t0


def refused(*argv, match: str, seconds: float = 10.0, **kw) -> str:
    """Assert a one-line refusal (exit 2, one stderr line naming ``match``, nothing on stdout) within ``seconds``."""
    proc, took = run_cli(*argv, **kw)
    lines = _errors(proc.stderr)
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert len(lines) == 1, proc.stderr
    assert "error:" in lines[0] and match in lines[0], lines[0]
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    return lines[0]


# --- physical quantities -----------------------------------------------------------------------------------------


def test_bandwidth_without_a_unit_is_refused():
    line = refused("compare", "torus:4x4", "--sizes", "1MiB", "--link-bandwidth", "400", match="--link-bandwidth")
    assert "no unit" in line and "400Gbps" in line


@pytest.mark.parametrize("option, value", [("--alpha", "-1"), ("--alpha", "nan"), ("--per-hop-latency", "inf"),
                                           ("--link-latency", "-1us"), ("--gamma", "nan"), ("--alpha", "1e400")])
def test_times_must_be_finite_and_non_negative(option, value):
    refused("compare", "torus:4x4", "--sizes", "1MiB", option, value, match=option)


def test_times_accept_units_and_bare_seconds():
    assert parse_duration("1us") == pytest.approx(1e-6)
    assert parse_duration("400ns") == pytest.approx(4e-7)
    assert parse_duration("2e-6") == pytest.approx(2e-6)
    assert parse_duration("0.2ns/B", per="B") == pytest.approx(2e-10)
    for bad in ("-1", "nan", "inf", "1 parsec", float("nan"), -1.0):
        with pytest.raises(DirectcollError):
            parse_duration(bad)
    # the unit the CLI gives is the one the simulation uses: ring:8 pays alpha in each of its 2 (8 - 1) steps
    proc_us, _ = run_cli("compare", "ring:8", "--sizes", "8B", "--algorithms", "ring", "--alpha", "1us", "--csv")
    proc_ns, _ = run_cli("compare", "ring:8", "--sizes", "8B", "--algorithms", "ring", "--alpha", "1ns", "--csv")
    t_us = float(next(csv.DictReader(io.StringIO(proc_us.stdout)))["time_s"])
    t_ns = float(next(csv.DictReader(io.StringIO(proc_ns.stdout)))["time_s"])
    assert t_us - t_ns == pytest.approx(2 * 7 * (1e-6 - 1e-9), rel=0.01)


def test_bandwidth_text_needs_its_unit_but_numbers_are_bytes_per_second():
    assert parse_bandwidth("400Gbps") == pytest.approx(5e10)
    assert parse_bandwidth(5e10) == 5e10
    for bad in ("400", "5e10", "1e400Gbps"):
        with pytest.raises(DirectcollError, match="bandwidth"):
            parse_bandwidth(bad)


# --- presets ------------------------------------------------------------------------------------------------------


def test_a_preset_without_network_parameters_is_refused():
    line = refused("compare", "torus:4x4", "--sizes", "1MiB", "--params", "ipu-pod64", match="'ipu-pod64'")
    assert "swing-sst" in line


def test_an_unknown_preset_names_the_closest():
    line = refused("compare", "torus:4x4", "--params", "swing-ss", match="did you mean swing-sst")
    assert "kolmakov-cluster" in line


def test_an_empty_preset_is_not_the_default():
    refused("compare", "torus:4x4", "--sizes", "1MiB", "--params", "", match="preset")


# --- output paths -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ("schedule", "ring", "ring:8", "-o", "{tmp}/missing/dir/out.json"),
    ("compare", "ring:8", "--sizes", "1MiB", "--plot", "{tmp}/missing/plot.png"),
    ("schedule", "ring", "ring:8", "-o", "{tmp}"),
    ("find-topology", "--nodes", "8", "--degree", "2", "-o", "{tmp}/nope/x.json"),
])
def test_an_output_that_cannot_be_written_is_refused_before_the_work(tmp_path, argv):
    argv = [a.format(tmp=tmp_path) for a in argv]
    refused(*argv, match=str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_export_and_import_outputs_are_checked(tmp_path):
    proc, _ = run_cli("schedule", "ring", "ring:4", "-o", str(tmp_path / "s.json"))
    assert proc.returncode == 0, proc.stderr
    refused("export", str(tmp_path / "s.json"), "-o", str(tmp_path / "no" / "a.xml"), match="does not exist")


# --- counts and sizes ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv, match", [
    (("compare", "ring:8", "--sizes", "0"), "positive"),
    (("compare", "ring:8", "--sizes", "1.5"), "not a whole number of bytes"),
    (("compare", "ring:8", "--sizes", "1KiB,16PiB"), "over the largest accepted size"),
    (("simulate", "x.json", "--size", "0B"), "--size"),
    (("schedule", "ring", "ring:8", "--ports", "0", "-o", "a.json"), "--ports"),
    (("verify", "x.json", "--seed", "-1"), "--seed"),
    (("table2", "--side", "0"), "--side"),
    (("table2", "--side", "100000"), "--side"),
    (("find-topology", "--nodes", "0", "--degree", "2"), "--nodes"),
    (("find-topology", "--nodes", "8", "--degree", "-3"), "--degree"),
    (("export", "x.json", "-o", "a.xml", "--max-chunks", "0"), "--max-chunks"),
    (("topology", "describe", "ring:8", "--alltoall", "--method", "bracket", "--max-iterations", "-1"),
     "--max-iterations"),
])
def test_counts_below_their_minimum_are_refused(tmp_path, argv, match):
    refused(*argv, match=match, cwd=tmp_path)


def test_a_finder_over_a_huge_network_is_refused_by_the_work_limit():
    from directcoll.synthesis.finder import MAX_NODES

    refused("find-topology", "--nodes", str(10**8), "--degree", "4", match="over the limit", seconds=5.0,
            limit_as=3 * 2**30)
    refused("find-topology", "--nodes", str(MAX_NODES + 1), "--degree", "4", match=f"{MAX_NODES:,} nodes")


def test_a_million_sizes_are_refused_by_the_work_limit():
    many = ",".join(["1KiB"] * 20_000)
    refused("compare", "ring:8", "--sizes", many, match="over the limit")
    with pytest.raises(DirectcollError, match="over the limit"):
        parse_sizes(["1KiB"] * 20_000)
    assert parse_sizes("1B..8PiB") == [2**k for k in range(54)]  # the largest range: every power of two to 2^53


# --- memory -------------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_compare_on_a_million_nodes_runs_what_fits_in_bounded_memory():
    # under an address-space limit: the contenders over the memory budget are skipped with that reason, the others
    # (ring and bucket, from their step patterns) run; nothing dies for want of memory
    proc, _ = run_cli("compare", "torus:1000x1000", "--json", limit_as=3 * 2**30,
                      env_extra={"DIRECTCOLL_MEMORY_BUDGET": "2GiB"}, timeout=600)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert {r["family"] for r in doc["results"]} == {"ring", "bucket"}
    memory = {s["algorithm"] for s in doc["skipped"] if s["kind"] == "memory"}
    assert {"swing", "recursive-doubling", "bfb", "generalized"} <= memory
    assert all("memory budget" in s["reason"] for s in doc["skipped"] if s["kind"] == "memory")


def test_memory_budget_option_before_or_after_the_command():
    refused("--memory-budget", "1KiB", "compare", "ring:8", "--sizes", "1MiB", match="over the memory budget of 1 KiB")
    refused("compare", "ring:8", "--sizes", "1MiB", "--memory-budget", "1KiB", match="1 KiB")
    refused("compare", "ring:8", "--memory-budget", "0", match="--memory-budget")
    proc, _ = run_cli("--help")
    assert "--memory-budget" in proc.stdout


def test_schedule_and_cost_check_memory_before_building():
    refused("--memory-budget", "1MiB", "schedule", "swing", "torus:30x30", "-o", "s.json", match="swing")
    refused("--memory-budget", "1MiB", "cost", "--topology", "torus:30x30", match="torus:30x30")


def test_the_schedule_builder_refuses_growth_over_the_budget():
    import numpy as np

    from directcoll.errors import ResourceError
    from directcoll.resources import memory_budget_override
    from directcoll.schedule.ir import ScheduleBuilder

    b = ScheduleBuilder("allgather", 4, 4, what="toy schedule")
    with memory_budget_override("32MiB"), pytest.raises(ResourceError, match="toy schedule"):
        for _ in range(100):
            b.add(np.zeros(2**18, np.int64), 0, 1, 0, 0, 1)


# --- the all-to-all bracket ---------------------------------------------------------------------------------------


def test_the_bracket_reports_that_it_did_not_converge():
    import json

    proc, _ = run_cli("topology", "describe", "genkautz:4:30", "--alltoall", "--method", "bracket",
                      "--max-iterations", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["alltoall_mcf_converged"] is False
    assert out["alltoall_mcf_gap"] > out["alltoall_mcf_target_gap"]
    assert out["alltoall_mcf_lower"] <= out["alltoall_mcf_upper"]
    assert "did not converge" in proc.stderr and proc.stderr.count("\n") == 1
    proc, _ = run_cli("topology", "describe", "torus:4x4", "--alltoall", "--method", "bracket", "--target-gap",
                      "5%", "--json")
    out = json.loads(proc.stdout)
    assert out["alltoall_mcf_converged"] is True and out["alltoall_mcf_gap"] <= 0.05
    assert proc.stderr == ""


def _errors(stderr: str) -> list[str]:
    """stderr's lines less the progress lines a loaded machine may print before the error (Heartbeat's)."""
    return [line for line in stderr.strip().splitlines() if not re.match(r"directcoll: .+ \.\.\. \d+ s", line)]


def test_flow_control_options_need_the_packet_model_and_a_buffer(capsys):
    from directcoll.cli.main import main

    assert main(["compare", "ring:4", "--buffer", "8KiB", "--sizes", "1KiB"]) == 2
    assert "flow control is simulated by the packet model" in capsys.readouterr().err
    assert main(["compare", "ring:4", "--model", "packet", "--vc-scheme", "hops", "--sizes", "1KiB"]) == 2
    assert "--vc-scheme needs --buffer" in capsys.readouterr().err
