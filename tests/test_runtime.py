"""Running schedules on real MPI ranks: programs, results equal to the MPI library's, failures."""

import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from directcoll.algorithms import build
from directcoll.cli.main import main
from directcoll.errors import DirectcollError
from directcoll.runtime.program import boundaries, compile_programs, mpi_order

MPIEXEC = shutil.which("mpiexec")
needs_mpi = pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not installed (pip install mpi4py mpich)")
SCRIPTS = Path(__file__).parent / "mpi_scripts"


@pytest.mark.parametrize("count", [1, 5, 16, 17, 1000])
def test_rounded_pieces_tile_every_block(count):
    s = build("swing", "torus:2x3", "allreduce")
    bounds = boundaries(s, count)
    assert bounds[0] == 0 and bounds[s.nblocks] == count and np.all(np.diff(bounds) >= 0)
    programs = compile_programs(s, count)
    # rounding keeps the schedule's structure: the copies a rank receives in one step never overlap
    for prog in programs:
        for step in prog.steps:
            cells = np.concatenate([np.arange(d, d + b - a) for _, ranges, dst, ops in step.recvs
                                    for (a, b), d, o in zip(ranges, dst, ops, strict=True) if o == 0]
                                   or [np.zeros(0, int)])
            assert len(cells) == len(np.unique(cells))
    # and the pieces a rank sends and receives cover as many elements as the block pieces say, to within one
    # element per piece end
    sent = sum(int((r[:, 1] - r[:, 0]).sum()) for prog in programs for st in prog.steps for _, r in st.sends)
    exact = float((s.transfer_size * count)[~s.is_local].sum())
    assert abs(sent - exact) <= s.num_pieces


def test_reduce_scatter_blocks_follow_mpi_order():
    s = build("swing", "torus:2x2", "reduce_scatter")  # Swing remaps blocks: owner is a permutation
    perm = mpi_order(s, 8 * 4)
    assert sorted(perm) == list(range(32))
    with pytest.raises(DirectcollError, match="equal MPI blocks"):
        boundaries(s, 30)


def mpirun(n, *args, timeout=300):
    return subprocess.run([MPIEXEC, "-n", str(n), sys.executable, *args], capture_output=True, text=True,
                          timeout=timeout)


@needs_mpi
@pytest.mark.parametrize("n, spec", [(2, "ring:2"), (3, "ring:3"), (4, "torus:2x2"), (6, "torus:2x3"),
                                     (8, "torus:2x4")])
def test_every_algorithm_collective_dtype_and_op_matches_native_mpi(n, spec, timings):
    t0 = time.perf_counter()
    proc = mpirun(n, "-m", "directcoll.runtime.selftest", "--topology", spec, "--count", "3")
    timings(f"MPI selftest on {n} ranks ({spec})", time.perf_counter() - t0)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = proc.stdout.strip().splitlines()[-1]
    checks = int(re.search(r"(\d+) checks", summary).group(1))
    assert summary.endswith(" 0 failed") and checks > 100, summary


@needs_mpi
def test_directcoll_run_json(capsys):
    code = main(["run", "--topology", "torus:2x2", "--sizes", "1KiB", "--algorithms", "swing,ring", "--repeat", "1",
                 "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ranks"] == 4 and data["topology"] == "torus:2x2"
    for row in data["results"]:
        assert {"size", "time_s", "goodput_Bps", "correct", "native_time_s"} <= set(row)
        assert row["correct"] is True


@needs_mpi
def test_run_refuses_mismatched_ranks(capsys):
    assert main(["run", "--ranks", "3", "--topology", "torus:2x2"]) == 2
    assert "does not match" in capsys.readouterr().err


@needs_mpi
@pytest.mark.parametrize("mode", ["hang", "die"])
def test_a_hung_or_dead_rank_makes_the_others_fail_within_the_timeout(mode):
    t0 = time.perf_counter()
    proc = mpirun(4, str(SCRIPTS / "failing_rank.py"), mode, "2", timeout=120)
    elapsed = time.perf_counter() - t0
    assert proc.returncode != 0
    assert elapsed < 60
    if mode == "hang":  # the survivors name the step and the rank they wait for
        assert "did not complete within 2 s" in proc.stderr and "waiting on ranks" in proc.stderr


def test_mismatched_schedule_is_refused_before_any_message():
    from directcoll.runtime import mpi as run

    class FakeComm:  # any message would fail: the check must come first
        def Get_size(self):
            return 3

        def Get_rank(self):
            return 0

    s = build("swing", "torus:2x2")
    with pytest.raises(DirectcollError, match="for 4 ranks"):
        run.allreduce(np.ones(8), np.empty(8), FakeComm(), schedule=s)
    with pytest.raises(DirectcollError, match="not a reduce_scatter"):
        run.reduce_scatter(np.ones(8), np.empty(2), FakeComm(), schedule=s)
