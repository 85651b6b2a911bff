"""Tuning tables and the benchmark of the native runtime (docs/runtime.md, "Tuning and benchmarks"): ``directcoll tune``
from the step model and ``--measure``d on real ranks, ``directcoll bench`` in the OSU format that ``calibrate`` reads,
and an unmodified C program served from a tuned table under LD_PRELOAD.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from test_native import mpirun, native_workdir

from directcoll.cli.main import main
from directcoll.errors import DirectcollError, MissingDependencyError
from directcoll.reports import tuning as tune
from directcoll.runtime import native

pytestmark = pytest.mark.native

HERE = Path(__file__).resolve().parent

try:
    MPICC = native.find_mpicc()
except MissingDependencyError as exc:  # pragma: no cover - the test extra installs the mpich wheel
    MPICC, WHY = None, str(exc)
else:
    WHY = ""
try:  # the launcher of that MPI (runtime/native.find_mpiexec)
    MPIEXEC = native.find_mpiexec(MPICC) if MPICC else None
except MissingDependencyError:  # pragma: no cover
    MPIEXEC = None
needs_mpi = pytest.mark.skipif(MPICC is None or MPIEXEC is None, reason=f"no MPI compiler wrapper or mpiexec: {WHY}")


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A private cache (library and bench built here, once) and the compiled checker."""
    if MPICC is None or MPIEXEC is None:
        pytest.skip(f"no MPI compiler wrapper or mpiexec: {WHY}")
    yield from native_workdir(tmp_path_factory.mktemp("tune"), MPICC)


def _check(lib, checker, ranks, table, args, collective="allreduce"):
    env = {**os.environ, "LD_PRELOAD": str(lib), "DIRECTCOLL_DEBUG": "1", "DIRECTCOLL_SCHEDULES": str(table)}
    return mpirun(ranks, [str(checker), collective, *args], env)


def test_byte_ranges_meet_at_geometric_midpoints_and_native_wins_leave_gaps():
    assert tune.byte_ranges([8, 32, 128]) == [(0, 16), (17, 64), (65, None)]
    entries = tune.table_entries("allgather", 3, [8, 32, 128, 512], ["a.dcp", None, "b.dcp", "b.dcp"])
    assert [(e["min_bytes"], e["max_bytes"], e["program"]) for e in entries] == [(0, 16, "a.dcp"), (65, None, "b.dcp")]
    with pytest.raises(DirectcollError, match="ascending"):
        tune.byte_ranges([64, 8])


def test_tune_from_the_model_serves_an_unmodified_program(work, capsys):
    """ring:4 switches from Swing's latency to its bandwidth variant between 32 KiB and 256 KiB: both entries are
    used by the checker (7 doubles under, 30000 ints over the midpoint), every call served and correct."""
    root, lib, checker = work
    table_path = root / "model" / "tuning.json"
    table_path.parent.mkdir()
    assert main(["tune", "ring:4", "--ranks", "4", "--sizes", "8B,32KiB,256KiB", "-o", str(table_path),
                 "--json"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert table == json.loads(table_path.read_text())
    entries = table["entries"]
    assert table["sizes"] == [8, 32768, 262144] and len(entries) == 2
    assert entries[0]["min_bytes"] == 0 and entries[-1]["max_bytes"] is None
    assert entries[0]["max_bytes"] + 1 == entries[1]["min_bytes"] == int((32768 * 262144) ** 0.5) + 1
    for e in entries:
        info = native.program_info((table_path.parent / e["program"]).read_bytes())
        assert (info["collective"], info["ranks"]) == ("allreduce", 4)
    run = _check(lib, checker, 4, table_path, ["quick", "7", "30000"])
    assert run.returncode == 0 and "0 failures" in run.stdout, run.stderr[-3000:]
    served = [line for line in run.stderr.splitlines() if ": served by " in line]
    assert len(served) == int(run.stdout.split()[1]) * 4 and "fell through" not in run.stderr
    assert any("swing:latency" in line for line in served) and any("swing:bandwidth" in line for line in served)
    for collective in ("reduce_scatter", "allgather", "alltoall"):
        path = root / "model" / f"{collective}.json"
        assert main(["tune", "torus:2x2", "--collective", collective, "--sizes", "64B,1MiB", "-o", str(path)]) == 0
        run = _check(lib, checker, 4, path, ["quick", "1", "7"],
                     collective="reduce_scatter_block" if collective == "reduce_scatter" else collective)
        assert run.returncode == 0 and "0 failures" in run.stdout and "fell through" not in run.stderr, run.stderr
    assert "wrote" in capsys.readouterr().out


def test_tune_and_bench_broadcast_and_reduce_for_a_root(work, tmp_path, capsys):
    """A table of programs compiled for root 3 serves MPI_Bcast / MPI_Reduce from root 3 and lets root 0 fall
    through; the bench times the rooted call from the table's root (and refuses a table of another root)."""
    _root, lib, checker = work
    for collective, name in (("broadcast", "bcast"), ("reduce", "reduce")):
        path = tmp_path / f"{collective}.json"
        assert main(["tune", "torus:2x2", "--collective", collective, "--root", "3", "--sizes", "64B,1MiB",
                     "-o", str(path), "--json"]) == 0
        table = json.loads(capsys.readouterr().out)
        assert table["root"] == 3 and all(e["root"] == 3 and e["program"].endswith("-root3.dcp")
                                          for e in table["entries"])
        assert all(native.program_info((tmp_path / e["program"]).read_bytes())["root"] == 3 for e in table["entries"])
        run = _check(lib, checker, 4, path, ["quick", "1", "7"], collective=f"{name}:3")
        assert run.returncode == 0 and "0 failures" in run.stdout and "fell through" not in run.stderr, run.stderr
        run = _check(lib, checker, 4, path, ["quick", "7"], collective=f"{name}:0")
        assert run.returncode == 0 and "0 failures" in run.stdout and "served by" not in run.stderr
        assert "is compiled for root 3, not 0" in run.stderr
    assert main(["bench", "--ranks", "4", "--collective", "reduce", "--root", "3", "--table", str(path),
                 "--sizes", "8B", "--round-seconds", "0.01", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["root"] == 3 and doc["rows"][0]["directcoll_s"] > 0 and doc["rows"][0]["mpi_s"] > 0
    assert main(["bench", "--ranks", "4", "--collective", "reduce", "--table", str(path), "--sizes", "8B"]) == 2
    assert "has no entry for reduce on 4 ranks from root 0" in capsys.readouterr().err
    assert main(["tune", "torus:2x2", "--root", "1", "-o", str(tmp_path / "x.json")]) == 2
    assert "only broadcast and reduce have a root" in capsys.readouterr().err


def test_tune_refuses_bad_requests_with_one_line(tmp_path, capsys):
    assert main(["tune", "ring:4", "--ranks", "3", "-o", str(tmp_path / "t.json")]) == 2
    assert "ring:4 has 4 ranks" in capsys.readouterr().err
    assert main(["tune", "ring:4", "--sizes", "nope", "-o", str(tmp_path / "t.json")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    with pytest.raises(SystemExit):
        main(["tune", "ring:4", "--collective", "bcast", "-o", str(tmp_path / "t.json")])
    assert main(["bench", "--impl", "both", "--ranks", "2"]) == 2
    assert "give a network SPEC or --table" in capsys.readouterr().err


def test_bench_prints_osu_output_that_calibrate_reads(work, tmp_path, capsys):
    out = tmp_path / "osu.txt"
    assert main(["bench", "ring:2", "--sizes", "8B,64KiB", "--round-seconds", "0.01", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert text == out.read_text() and text.startswith("# OSU MPI Allreduce Latency Test")
    rows = tune.parse_bench(text)
    assert sorted(rows) == [8, 65536] and all(a > 0 and b > 0 for a, b in rows.values())
    assert main(["calibrate", str(out), "ring:2", "--format", "osu", "--ranks", "2", "--fit", "alpha,link_bandwidth",
                 "--json"]) == 0
    assert "alpha" in json.dumps(json.loads(capsys.readouterr().out))
    assert main(["bench", "--ranks", "2", "--impl", "native", "--collective", "allgather", "--sizes", "8B,1KiB",
                 "--round-seconds", "0.01", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["bytes"] for r in doc["rows"]] == [8, 1024] and doc["rows"][0]["directcoll_s"] is None
    assert main(["bench", "torus:2x2", "--collective", "alltoall", "--sizes", "8B,1KiB", "--round-seconds", "0.01",
                 "--json"]) == 0  # four ranks, oversubscribed: a smoke test
    doc = json.loads(capsys.readouterr().out)
    assert [r["bytes"] for r in doc["rows"]] == [8, 1024] and all(r["directcoll_s"] > 0 for r in doc["rows"])
    (tmp_path / "gone.json").write_text(json.dumps([{"collective": "allreduce", "ranks": 2, "program": "gone.dcp"}]))
    assert main(["bench", "--ranks", "2", "--table", str(tmp_path / "gone.json")]) == 2  # would time MPI twice
    assert "gone.dcp" in capsys.readouterr().err


def test_measured_table_keeps_the_fastest_and_falls_through_where_mpi_wins(work, tmp_path, capsys):
    _root, lib, checker = work
    path = tmp_path / "measured.json"
    assert main(["tune", "ring:2", "--measure", "--sizes", "8B,64KiB", "--round-seconds", "0.01", "-o", str(path),
                 "--json"]) == 0
    table = json.loads(capsys.readouterr().out)
    assert table["source"] == "measured" and "mpi" in table["times"] and len(table["times"]) > 2
    for j, winner in enumerate(table["winners"]):  # the fastest (ties, as 0.12 us and 0.12 us, either)
        best = min(t[j] for t in table["times"].values() if t[j] is not None)
        assert table["times"][winner or "mpi"][j] == best
    assert sorted(p.name for p in tmp_path.glob("*.dcp")) == sorted({w for w in table["winners"] if w})
    run = _check(lib, checker, 2, path, ["quick", "1", "2000"])
    assert run.returncode == 0 and "0 failures" in run.stdout, run.stderr[-3000:]
    if not table["entries"]:
        assert "served by" not in run.stderr
