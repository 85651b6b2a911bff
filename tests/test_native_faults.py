"""libdirectcoll fails safe (docs/runtime.md, "Failing safe"): a rank that cannot run a call's schedule makes every rank
fall through together, and a rank that dies mid-collective ends the job instead of hanging it. Under both MPI
families: the tests run on the MPI $MPICC names (the mpich wheel by default; CI runs them again with Debian's Open
MPI, MPICC=/usr/bin/mpicc.openmpi).

Allocation failures are forced on one rank with the test-only $DIRECTCOLL_TEST_FAIL_ALLOC (R:N the N-th allocation
of a call's setup on world rank R, R:N+ from the N-th on, R:%N every N-th): an unmodified C program
(tests/native/collective_check.c) under LD_PRELOAD must get MPI's results on every call, and both ranks must make the
same decision, call by call, each saying why in its debug line; the same under ASan + UBSan with leak checks (the
error paths free what they built). The C engine refuses on every rank alike. A rank killed (SIGKILL) while the ranks
run collectives back to back ends the job within seconds, over shared memory and over MPI point-to-point, with MPI's
default error handler and with MPI_ERRORS_RETURN.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_native import (
    MPICC,
    MPIEXEC,
    WHY,
    mpi4py_runs_this_mpi,
    mpirun,
    native_workdir,
    rank_stderr,
    rank_stderr_command,
    sanitized_library,
    sanitizer_env,
)

from directcoll.cli.main import main

HERE = Path(__file__).resolve().parent
pytestmark = [pytest.mark.native,
              pytest.mark.skipif(MPICC is None or MPIEXEC is None, reason=f"no MPI compiler wrapper or mpiexec: {WHY}")]
SWING2 = ("swing", "ring:2", [])


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    yield from native_workdir(tmp_path_factory.mktemp("faults"), MPICC)


def _program(root: Path, algorithm: str, spec: str, extra: list[str]) -> Path:
    prog = root / f"{algorithm}-{spec.replace(':', '_')}{''.join(extra).replace('-', '_')}.dcp"
    if not prog.exists():
        assert main(["schedule", algorithm, spec, "-o", str(prog.with_suffix(".json")), *extra]) == 0
        assert main(["native", "compile", str(prog.with_suffix(".json")), "-o", str(prog)]) == 0
    return prog


def _table(root: Path, name: str, entries: list[dict]) -> Path:
    (root / name).write_text(json.dumps({"entries": entries}))
    return root / name


def _run(lib, checker, ranks: int, table: Path, args: list[str], preload=None, extra_env=None,
         collective="allreduce") -> subprocess.CompletedProcess:
    env = {**os.environ, "LD_PRELOAD": preload or str(lib), "DIRECTCOLL_DEBUG": "1",
           "DIRECTCOLL_SCHEDULES": str(table), **(extra_env or {})}
    return mpirun(ranks, [str(checker), collective, *args], env)


def _decisions(stderr: str, ranks: int) -> list[list[tuple[str, str]]]:
    """Per rank, its calls in order: (the call, "served" or why it fell through)."""
    per: list[list[tuple[str, str]]] = [[] for _ in range(ranks)]
    for line in stderr.splitlines():
        m = re.match(r"directcoll: rank (\d+): (.*?): (served by|fell through: )(.*)$", line)
        if m:
            per[int(m[1])].append((m[2], "served" if m[3] == "served by" else m[4]))
    return per


def _same_decisions(run, ranks: int) -> list[list[tuple[str, str]]]:
    """The run's calls: correct (0 failures), and every call served on every rank or fallen through on every rank."""
    assert run.returncode == 0 and "0 failures" in run.stdout, run.stderr[-3000:]
    per = _decisions(run.stderr, ranks)
    cases = int(run.stdout.split()[1])
    assert all(len(calls) == cases for calls in per), [len(calls) for calls in per]
    for k in range(cases):
        outcome = {calls[k][1] == "served" for calls in per}
        assert len(outcome) == 1, [calls[k] for calls in per]  # served everywhere or nowhere
    return per


@pytest.mark.parametrize("transport", ["shm", "mpi"])
def test_an_allocation_failure_on_one_rank_makes_every_rank_fall_through(work, transport):
    root, lib, checker = work
    prog = _program(root, *SWING2)  # swing on ring:2
    table = _table(root, "faults.json", [{"collective": "allreduce", "ranks": 2, "program": prog.name}])
    env = {"DIRECTCOLL_TRANSPORT": transport}
    # rank 1's first allocation (its state for the communicator): the first call falls through on both ranks,
    # naming who could not; the next call sets the state up again and is served
    run = _run(lib, checker, 2, table, ["quick", "7", "1001"], extra_env={**env, "DIRECTCOLL_TEST_FAIL_ALLOC": "1:1"})
    per = _same_decisions(run, 2)
    assert per[1][0][1] == "this rank could not set up the communicator's state (out of memory)"
    assert per[0][0][1] == "another rank could not set up the communicator's state (out of memory)"
    assert all(outcome == "served" for _, outcome in per[0][1:]), per[0][:3]
    # rank 1 never has memory: every call falls through everywhere, and still gets MPI's result
    run = _run(lib, checker, 2, table, ["quick", "7"], extra_env={**env, "DIRECTCOLL_TEST_FAIL_ALLOC": "1:1+"})
    per = _same_decisions(run, 2)
    assert not [c for calls in per for c in calls if c[1] == "served"]
    # every 23rd allocation of rank 0: plans fail to build at different points
    run = _run(lib, checker, 2, table, ["quick", "0", "7", "1001"],
               extra_env={**env, "DIRECTCOLL_TEST_FAIL_ALLOC": "0:%23"})
    per = _same_decisions(run, 2)
    assert "this rank could not build its plan: out of memory" in {o for _, o in per[0]}, per[0][:4]
    assert "rank 0 could not build its plan (no rank runs the program)" in {o for _, o in per[1]}, per[1][:4]


@pytest.mark.parametrize(("ranks", "collective", "case"), [
    (4, "reduce_scatter_block", ("swing", "torus:4", ["--collective", "reduce_scatter"])),
    (4, "alltoall", ("mcf", "ring:4", ["--method", "timestepped", "--collective", "alltoall"])),
    (3, "reduce:2", ("chain", "ring:3", ["--collective", "reduce", "--root", "2"])),  # the root builds both plans
    (3, "bcast:2", ("chain", "ring:3", ["--collective", "broadcast", "--root", "2"])),
])
def test_other_collectives_fall_through_together_too(work, ranks, collective, case):
    root, lib, checker = work
    prog = _program(root, *case)
    name = {"reduce_scatter_block": "reduce_scatter", "reduce:2": "reduce", "bcast:2": "broadcast"}.get(collective,
                                                                                                    collective)
    table = _table(root, f"faults-{name}.json", [{"collective": name, "ranks": ranks, "program": prog.name}])
    for spec in ("1:%17", "2:%29"):
        run = _run(lib, checker, ranks, table, ["quick", "0", "1", "7", "50"], collective=collective,
                   extra_env={"DIRECTCOLL_TEST_FAIL_ALLOC": spec})
        per = _same_decisions(run, ranks)
        assert {o for calls in per for _, o in calls} - {"served"}, spec  # some call fell through


def test_allocation_failures_under_address_and_undefined_behaviour_sanitizers(work):
    """The error paths of the setup and of plan building free everything (leak checks on) and touch nothing out of
    bounds; failures at different points: every 5th, 11th or 19th allocation of one rank."""
    root, _, checker = work
    asan, lib = sanitized_library(root)
    cases = [(2, "allreduce", _program(root, *SWING2), "allreduce"),
             (4, "reduce_scatter_block", _program(root, "swing", "torus:4", ["--collective", "reduce_scatter"]),
              "reduce_scatter"),
             (3, "reduce:2", _program(root, "chain", "ring:3", ["--collective", "reduce", "--root", "2"]), "reduce")]
    for (ranks, collective, prog, name), spec in zip(cases, ["1:%5", "0:%11", "2:%19"], strict=True):
        table = _table(root, "asan-faults.json", [{"collective": name, "ranks": ranks, "program": prog.name}])
        for transport in ("shm", "mpi"):
            run = _run(None, checker, ranks, table, ["quick", "0", "1", "7"], preload=f"{asan}:{lib}",
                       collective=collective, extra_env={**sanitizer_env(), "DIRECTCOLL_TEST_FAIL_ALLOC": spec,
                                                         "DIRECTCOLL_TRANSPORT": transport})
            _same_decisions(run, ranks)
            assert "runtime error" not in run.stderr and "AddressSanitizer" not in run.stderr, run.stderr[-3000:]


def _kill_one_rank(lib, checker, table, transport: str, extra: list[str], folder: Path) -> tuple[int, float, str]:
    """Start 2 ranks running MPI_Allreduce (1 MiB) back to back, SIGKILL rank 1 once both are looping; the job's
    status, the seconds from the kill to its end, its output."""
    env = {**os.environ, "LD_PRELOAD": str(lib), "DIRECTCOLL_SCHEDULES": str(table), "DIRECTCOLL_TRANSPORT": transport}
    argv = [checker, "allreduce", "loop", "120", str(1 << 17), *extra]
    proc = subprocess.Popen(rank_stderr_command(2, argv, folder), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)
    pids: dict[int, int] = {}
    try:
        deadline = time.monotonic() + 120
        while len(pids) < 2 and time.monotonic() < deadline and proc.poll() is None:
            pids = {int(r): int(p) for r, p in re.findall(r"rank (\d+) pid (\d+) looping", rank_stderr(2, folder))}
            time.sleep(0.05)
        assert len(pids) == 2, f"the ranks did not start looping: {rank_stderr(2, folder)[-2000:]}"
        time.sleep(0.3)  # inside a collective: the loop does little else
        os.kill(pids[1], signal.SIGKILL)
        killed = time.monotonic()
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the job hung after rank 1 was killed ({transport}, {extra})")
        return proc.returncode, time.monotonic() - killed, out + err + rank_stderr(2, folder)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for pid in pids.values():  # no rank is left behind
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
                pytest.fail(f"rank process {pid} outlived the job")


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie, dead and not reaped yet, does not)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return False


@pytest.mark.parametrize("transport", ["shm", "mpi"])
@pytest.mark.parametrize("handler", ["fatal", "return"])
def test_a_rank_killed_mid_collective_ends_the_job(work, transport, handler, timings, tmp_path):
    root, lib, checker = work
    table = _table(root, "loop.json", [{"collective": "allreduce", "ranks": 2,
                                        "program": _program(root, *SWING2).name}])
    status, after, output = _kill_one_rank(lib, checker, table, transport, [] if handler == "fatal" else ["return"],
                                           tmp_path)
    timings(f"job end after a rank was killed in the native collective ({transport}, {handler})", after)
    assert status != 0 and after < 30, (status, after, output[-2000:])


C_ENGINE = """
import json, sys
import numpy as np
from mpi4py import MPI
from directcoll.errors import DirectcollError
from directcoll.registry import build
from directcoll.runtime import mpi as dc
comm = MPI.COMM_WORLD
schedule = build("swing", "ring:2")
outcomes = []
for count in (1, 7, 1001, 30011, 7, 1001):
    x, y, ref = np.arange(count, dtype=np.float64) + comm.Get_rank(), np.zeros(count), np.zeros(count)
    comm.Allreduce(x, ref)
    try:
        dc.allreduce(comm, x, y, schedule=schedule, timeout=30, engine="c")
        outcomes.append("ok" if np.array_equal(y, ref) else "wrong")
    except DirectcollError as exc:
        outcomes.append("refused: " + str(exc).split(": ", 1)[1])
every = comm.gather(outcomes, root=0)
if comm.Get_rank() == 0:
    print(json.dumps(every), flush=True)
"""


def test_the_c_engine_refuses_on_every_rank_alike(work, tmp_path):
    """directcoll_run: a rank without memory for its state or its plan makes every rank refuse the call (the Python
    caller raises on every rank, before any message); the other calls run and are correct."""
    if why := mpi4py_runs_this_mpi():
        pytest.skip(f"the C engine needs the library built for mpi4py's MPI: {why}")
    script = tmp_path / "c_engine_faults.py"
    script.write_text(C_ENGINE)
    env = {**os.environ, "PYTHONPATH": str(HERE.parent / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for spec, refused in (("1:1", "rank 1 could not set up its state"), ("0:%17", "could not build its plan")):
        proc = mpirun(2, [sys.executable, str(script)], {**env, "DIRECTCOLL_TEST_FAIL_ALLOC": spec})
        assert proc.returncode == 0, proc.stderr[-3000:]
        out = json.loads(proc.stdout.strip().splitlines()[-1])  # per rank, its outcome of each call
        ok = [[o == "ok" for o in outcomes] for outcomes in out]
        assert len(out) == 2 and ok[0] == ok[1] and not all(ok[0]), out  # alike, call by call
        assert spec != "1:1" or ok[0] == [False] + [True] * 5, out  # then set up again and served
        assert "wrong" not in out[0] + out[1]
        assert any(refused in o for outcomes in out for o in outcomes), (spec, out)
