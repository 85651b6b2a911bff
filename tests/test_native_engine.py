"""The C engine of the MPI executors (docs/runtime.md, "The C engine"): libdirectcoll's entry point
called through ctypes from directcoll.runtime.mpi gives the Python engine's results and the MPI library's, for
every algorithm ``directcoll run`` offers (2 ranks; a subset with fractional and relayed pieces on 4), at counts 0,
1, fewer than the ranks, not divisible by them and large, in place and not; the engine choice and its notes; the
deadline and the published step; the refusal of a library bound to another MPI; ``directcoll run --engine``;
broadcast and reduce from a non-zero root; the C plans send each source byte of a transfer once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_native import MPICC, MPIEXEC, WHY, mpi4py_runs_this_mpi, mpirun, native_workdir

from directcoll.algorithms.generalized import generalized_allreduce
from directcoll.registry import ALGORITHMS
from directcoll.runtime.native import write_program

HERE = Path(__file__).resolve().parent
SRC = str(HERE.parent / "src")
pytestmark = [pytest.mark.native,
              pytest.mark.skipif(MPICC is None or MPIEXEC is None, reason=f"no MPI compiler wrapper or mpiexec: {WHY}")]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A private cache with the library built once (the ranks find it through $DIRECTCOLL_CACHE); skipped where
    $MPICC names another MPI than mpi4py's (the Open MPI leg of CI: the C engine runs on mpi4py's MPI)."""
    if why := mpi4py_runs_this_mpi():
        pytest.skip(f"the C engine needs the library built for mpi4py's MPI: {why}")
    yield from native_workdir(tmp_path_factory.mktemp("engine"), MPICC)


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}


def _mpirun(n: int, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([MPIEXEC, "-n", str(n), sys.executable, *args], capture_output=True, text=True,
                          timeout=timeout, env=_env())


def _engines(n: int, topologies: str, algorithms: str, counts: list[int]) -> dict:
    proc = _mpirun(n, str(HERE / "mpi_scripts" / "engines.py"), topologies, algorithms, *map(str, counts))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "note:" not in proc.stderr, proc.stderr  # the C engine ran every call: no fall-back to Python
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_c_engine_equals_python_engine_and_mpi_for_every_algorithm_on_2_ranks(work, timings):
    import time

    t0 = time.perf_counter()
    # counts: 0, 1, fewer than... (1 < 2 is count 1), odd (not divisible by 2 ranks), prime and large
    result = _engines(2, "ring:2;bidir(ring:2)", "all", [0, 1, 3, 7, 30011])
    timings("C engine vs Python engine vs MPI, every algorithm, 2 ranks", time.perf_counter() - t0)
    assert result["failures"] == [], result["failures"]
    collectives = {"allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast", "reduce"}
    offered = {name for name, alg in ALGORITHMS.items() if collectives & set(alg.collectives)}
    ran = {entry.split(":")[0] for entry in result["built"]}
    assert ran == offered, offered - ran
    assert result["cases"] >= 1000


def test_c_engine_equals_python_engine_with_fractional_and_relayed_pieces_on_4_ranks(work, timings):
    import time

    t0 = time.perf_counter()
    # Swing's permuted owners, BFB's quarter blocks, the generalized allreduce's scratch, the Hamiltonian ring,
    # EwSP's eighths, MCF's relays; counts 0, 1, 3 (< 4 ranks), 1001 (not divisible by 4)
    # and the rooted trees, chain and scatter + allgather, from root 3
    result = _engines(4, "torus:2x2", "swing,bfb,generalized,ring,ewsp,mcf,binomial,chain,swing-tree,bfb-tree",
                      [0, 1, 3, 1001])
    timings("C engine vs Python engine vs MPI, 10 algorithms, 4 ranks", time.perf_counter() - t0)
    assert result["failures"] == [], result["failures"]
    assert result["cases"] >= 500 and any("hamiltonian" in b for b in result["built"])
    assert any(b.startswith("chain:pipelined reduce") for b in result["built"])


CHOICE = """
import json, sys
import numpy as np
from mpi4py import MPI
from directcoll.errors import DirectcollError
from directcoll.runtime import cengine, executor
from directcoll.runtime import mpi as dc
from directcoll.schedule.ir import ScheduleBuilder
out = {"plain": cengine.choose("c"), "python": cengine.choose("python"),
       "user": cengine.choose("c", executor.UserOp(np.add, True)),
       "user again": cengine.choose("c", executor.UserOp(np.add, True)),
       "swapped": cengine.choose("c", "sum", np.dtype(">f8"))}
try:
    cengine.choose("fortran")
except DirectcollError as exc:
    out["bad"] = str(exc)
one = ScheduleBuilder("allreduce", 1, 1).build()
x, y = np.arange(5.0), np.zeros(5)
dc.allreduce(MPI.COMM_SELF, x, y, schedule=one, engine="c")
out["one rank"] = y.tolist()
print(json.dumps(out))
"""


def test_the_engine_choice_falls_back_to_python_with_one_note_per_reason(work):
    proc = subprocess.run([sys.executable, "-c", CHOICE], capture_output=True, text=True, timeout=120, env=_env())
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert (out["plain"], out["python"], out["user"], out["user again"], out["swapped"]) == (
        "c", "python", "python", "python", "python")
    assert out["bad"] == "engine 'fortran': accepted: c, python"
    assert out["one rank"] == [0.0, 1.0, 2.0, 3.0, 4.0]
    notes = proc.stderr.strip().splitlines()
    assert len(notes) == 2 and all(line.startswith("directcoll: note: ") for line in notes), notes  # once each
    assert "user-defined" in notes[0] or "a user-defined op" in notes[0], notes


OTHER_MPI = CHOICE.split("out = ")[0] + """
cengine._mapped_mpi = lambda: {"/elsewhere/lib/libmpi.so.12"}
try:
    cengine.library()
except DirectcollError as exc:
    print(json.dumps({"error": str(exc), "engine": cengine.choose("c")}))
"""


def test_a_library_bound_to_another_mpi_than_mpi4py_s_is_refused_in_one_line(work):
    proc = subprocess.run([sys.executable, "-c", OTHER_MPI], capture_output=True, text=True, timeout=120,
                          env=_env())
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert "calls the MPI library" in out["error"] and "/elsewhere/lib/libmpi.so.12" in out["error"]
    assert "\n" not in out["error"] and out["engine"] == "python"
    assert proc.stderr.count("directcoll: note: the C engine is not available") == 1, proc.stderr


DEADLINE = """
import json, sys, tempfile, time
import numpy as np
from mpi4py import MPI
from directcoll.registry import build
from directcoll.runtime import mpi as dc
from directcoll.runtime.executor import DeadlineError
from directcoll.runtime.progress import WAITING, Progress, read_status, status_path
comm = MPI.COMM_WORLD
rank = comm.Get_rank()
schedule = build("swing", "ring:2", variant="bandwidth")     # 2 steps
x, y = np.ones(10), np.zeros(10)
with tempfile.TemporaryDirectory() as tmp:
    progress = Progress(tmp, rank)
    progress.set(WAITING, "step", "swing allreduce", nsteps=2)
    before = read_status(status_path(tmp, rank), rank)
    dc.allreduce(comm, x, y, schedule=schedule, timeout=30, progress=progress, engine="c")
    after = read_status(status_path(tmp, rank), rank)
    out = {"sum": y.tolist() == [2.0] * 10, "beats": after.beat - before.beat, "step": after.step}
comm.Barrier()
if rank == 1:
    time.sleep(3)         # rank 0 waits for a step that rank 1 never starts
else:
    t0 = time.monotonic()
    try:
        dc.allreduce(comm, x, y, schedule=schedule, timeout=1, engine="c")
    except DeadlineError as exc:
        out.update(error=str(exc), peers=exc.peers, after=time.monotonic() - t0)
    print(json.dumps(out), flush=True)
"""


def test_a_step_past_its_deadline_raises_and_every_step_is_published(work, tmp_path):
    script = tmp_path / "deadline.py"
    script.write_text(DEADLINE)
    proc = _mpirun(2, str(script), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["sum"] and out["beats"] == 2 and out["step"] == 1, out  # steps 0 and 1 seen by the status file
    assert out["error"] == ("rank 0: step 0 did not complete within 1 s; waiting on ranks [1] (a peer died or "
                            "hangs)") and out["peers"] == [1]
    assert 1 <= out["after"] < 2.5, out


@pytest.mark.parametrize("engine", ["c", "python"])
def test_directcoll_run_reports_the_engine_it_ran(work, engine):
    proc = subprocess.run([sys.executable, "-m", "directcoll.cli.main", "run", "ring:2", "--algorithms",
                           "swing,ring", "--sizes", "8B,64KiB", "--repeat", "2", "--engine", engine, "--json"],
                          capture_output=True, text=True, timeout=240, env=_env())
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["engine"] == engine and len(data["results"]) == 4
    assert all(r["engine"] == engine and r["correct"] and r["native_time_s"] > 0 for r in data["results"])
    table = subprocess.run([sys.executable, "-m", "directcoll.cli.main", "run", "ring:2", "--algorithms", "swing",
                            "--sizes", "8B", "--repeat", "1", "--engine", engine], capture_output=True, text=True,
                           timeout=240, env=_env())
    assert table.returncode == 0 and f"{'C' if engine == 'c' else 'Python'} engine" in table.stdout, table.stdout


def test_run_without_an_mpi_compiler_falls_back_with_a_note_or_refuses_c(work, tmp_path):
    env = {**_env(), "MPICC": str(tmp_path / "no-mpicc"), "DIRECTCOLL_CACHE": str(tmp_path / "cache")}
    args = [sys.executable, "-m", "directcoll.cli.main", "run", "ring:2", "--algorithms", "swing", "--sizes", "8B",
            "--repeat", "1", "--json"]
    default = subprocess.run(args, capture_output=True, text=True, timeout=240, env=env)
    assert default.returncode == 0, default.stderr
    assert json.loads(default.stdout)["engine"] == "python"
    assert default.stderr.count("directcoll: note: running the Python engine") == 1, default.stderr
    asked = subprocess.run([*args, "--engine", "c"], capture_output=True, text=True, timeout=60, env=env)
    assert asked.returncode == 2 and asked.stderr.startswith("directcoll: error: --engine c: ") and \
        asked.stderr.count("\n") == 1, asked.stderr


SENT = """
import ctypes, json, sys
from mpi4py import MPI
from directcoll.algorithms.generalized import generalized_allreduce
from directcoll.runtime import cengine
from directcoll.runtime.program import compile_programs
p, r = int(sys.argv[1]), int(sys.argv[2])
s, count = generalized_allreduce(p, r), 3 * p  # u = 3 elements
program = cengine._program(s)
sent = program._lib.directcoll_plan_sent
sent.restype = ctypes.c_longlong
sent.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_longlong, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t]
err = ctypes.create_string_buffer(256)
progs = compile_programs(s, count)
msgs = [at for q in progs for st in q.steps for _, at, _, _ in st.recvs]
print(json.dumps({
    "c": [sent(program.handle, k, count, MPI.DOUBLE.py2f(), err, len(err)) for k in range(p)],
    "python": [sum(int((rg[:, 1] - rg[:, 0]).sum()) for st in q.steps for _, rg in st.sends) for q in progs],
    "pieces": sum(int((at[:, 1] - at[:, 0]).sum()) for at in msgs),  # each piece sent on its own
    "twice": sum(int((at[:, 1] - at[:, 0]).sum()) > int(at[:, 1].max()) for at in msgs)}))
"""


@pytest.mark.parametrize("p, r", [(13, 4), (7, 3), (23, 3)])
def test_the_c_plans_send_each_source_byte_once(work, p, r):
    """The generalized allreduce (Kolmakov & Zhang) has transfers two of whose pieces read one source range for two
    cells: the C plans send that range once, as the Python programs do (eq. 44: P ceil(log2 P) u elements per rank
    at r = ceil(log2 P); P = 23, r = 3: 64 units per rank against 74 with each piece on its own, counted only), and
    the receivers apply both pieces from it; the result is exact against MPI_Allreduce
    (collective_check on P ranks, integers bitwise; on 7 ranks in 40-byte segments)."""
    root, lib, checker = work
    proc = subprocess.run([sys.executable, "-c", SENT, str(p), str(r)], capture_output=True, text=True, timeout=120,
                          env=_env())
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["twice"] > 0 and out["pieces"] > sum(out["python"])  # some pieces land twice: a union to send
    assert out["c"] == out["python"]
    if (p, r) == (13, 4):
        assert out["c"] == [3 * p * 4] * p  # eq. 44 in elements: P L u with L = 4, u = 3
    if p == 23:  # the issue's second case (eq. 36's 64 units against 74 sent twice): counted only, not run
        assert sum(out["c"]) == 3 * 64 * p and out["pieces"] == 3 * 74 * p
        return
    prog = write_program(generalized_allreduce(p, r), root / f"generalized-{p}-{r}.dcp")
    table = root / f"generalized-{p}.json"
    table.write_text(json.dumps([{"collective": "allreduce", "ranks": p, "program": prog.name}]))
    # both transports; P = 7 also in 40-byte segments (MPI) and through 40-byte cells (shared memory)
    # (P = 13, 13 ranks on 2 cores: the default transport only)
    transports = [{"DIRECTCOLL_TRANSPORT": "mpi", "DIRECTCOLL_SEGMENT_BYTES": "40"},
                  {"DIRECTCOLL_TRANSPORT": "shm", "DIRECTCOLL_SHM_CELL_BYTES": "40"}] if p == 7 else \
        [{"DIRECTCOLL_TRANSPORT": "shm"}]
    for extra in transports:
        env = {**os.environ, "LD_PRELOAD": str(lib), "DIRECTCOLL_DEBUG": "1", "DIRECTCOLL_SCHEDULES": str(table),
               **extra}
        run = mpirun(p, [str(checker), "allreduce", "quick", str(3 * p), "1001"], env)
        assert run.returncode == 0 and "0 failures" in run.stdout, run.stderr[-3000:]
        served = [line for line in run.stderr.splitlines() if ": served by " in line]
        assert len(served) == int(run.stdout.split()[1]) * p and "fell through" not in run.stderr
        assert all(f" over {extra['DIRECTCOLL_TRANSPORT']}" in line for line in served), served[:2]
