"""The native runtime (docs/runtime.md, "The native runtime"): libdirectcoll built against the mpich wheel's mpicc
(or the MPI $MPICC names, e.g. Debian's Open MPI: MPICC=/usr/bin/mpicc.openmpi, launched by the mpiexec beside it or
$DIRECTCOLL_MPIEXEC),
program files, and MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather and MPI_Alltoall of an unmodified C program
(tests/native/collective_check.c) served under LD_PRELOAD against the PMPI_ calls: every predefined basic datatype x
op MPI defines on it, counts 0, 1, fewer than the ranks, not divisible, large; in place and not; the fall-throughs
with their DEBUG lines; the ABI refusal; ASan + UBSan. Both transports: the shared-memory channels (the default
on one node) and MPI point-to-point (DIRECTCOLL_TRANSPORT=mpi) run the allreduce and segmented matrices.

2 ranks run the whole matrix; 3 and 4 ranks (oversubscribed on small machines, where MPICH's busy polling makes
large messages slow) run int, double, float and uint8 on smaller counts.
"""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from directcoll.cli.main import main
from directcoll.errors import DirectcollError, MissingDependencyError
from directcoll.runtime import native
from directcoll.runtime.program import _elements, boundaries
from directcoll.schedule import load
from directcoll.schedule.ir import ScheduleBuilder

HERE = Path(__file__).resolve().parent


def native_workdir(root: Path, mpicc: list[str]):
    """Build the library in a private cache under ``root`` and compile the checker; yield (root, library,
    checker) and restore ``$DIRECTCOLL_CACHE`` after (shared by the native tests' module fixtures). Meanwhile the
    environment holds what the launcher needs (:func:`~directcoll.runtime.native.launch_env`: Open MPI's
    oversubscription and root permission), so every ``mpiexec`` the tests start inherits it."""
    saved = {k: os.environ.get(k) for k in ("DIRECTCOLL_CACHE", *native.launch_env(MPIEXEC))}
    os.environ.update({"DIRECTCOLL_CACHE": str(root / "cache"), **native.launch_env(MPIEXEC)})
    try:
        lib = native.library_path()
        checker = root / "collective_check"
        subprocess.run([*mpicc, "-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(checker),
                        str(HERE / "native" / "collective_check.c"), "-lm"], check=True)
        yield root, lib, checker
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


#: each rank's stderr into a file of its own: Open MPI's launcher forwards the ranks' output in chunks that may cut a
#: line and put another rank's output inside it, and the tests read the library's debug lines whole
_RANK_STDERR = 'exec "$@" 2>"$0/rank.${PMI_RANK:-${OMPI_COMM_WORLD_RANK:-$PMIX_RANK}}"'


def rank_stderr_command(ranks: int, argv: list[str], folder) -> list[str]:
    """``mpiexec -n ranks argv...`` with each rank's stderr in ``folder``/rank.R (MPICH's PMI_RANK, Open MPI's
    OMPI_COMM_WORLD_RANK)."""
    return [MPIEXEC, "-n", str(ranks), "sh", "-c", _RANK_STDERR, str(folder), *map(str, argv)]


def rank_stderr(ranks: int, folder) -> str:
    """The ranks' stderr files of :func:`rank_stderr_command`, whole, in rank order."""
    files = [Path(folder) / f"rank.{r}" for r in range(ranks)]
    return "".join(f.read_text(errors="replace") for f in files if f.exists())


def mpirun(ranks: int, argv: list[str], env: dict, timeout: float = 240) -> subprocess.CompletedProcess:
    """Run ``argv`` on ``ranks`` ranks under :data:`MPIEXEC` with ``env``; stderr holds each rank's whole (in rank
    order), then the launcher's."""
    with tempfile.TemporaryDirectory(prefix="directcoll-ranks-") as tmp:
        done = subprocess.run(rank_stderr_command(ranks, argv, tmp), capture_output=True, text=True, env=env,
                              timeout=timeout)
        done.stderr = rank_stderr(ranks, tmp) + done.stderr
    return done


def mpi4py_runs_this_mpi() -> str:
    """Why tests of mpi4py programs (the C engine, ``directcoll run``) cannot run on the MPI of $MPICC, or "" when
    they can: mpi4py (the mpich wheel) must run on the MPI the library is built for."""
    probe = ("import mpi4py; mpi4py.rc.initialize = False; from mpi4py import MPI; "
             "print(MPI.Get_library_version().splitlines()[0])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    ours = native.mpi_identity(MPICC)[1].splitlines()[0]
    if done.returncode != 0:
        return f"mpi4py does not load: {done.stderr.strip().splitlines()[-1:]}"
    theirs = done.stdout.strip()
    return "" if theirs == ours else f"mpi4py runs on {theirs!r}, the library is built for {ours!r}"

try:
    MPICC = native.find_mpicc()
except MissingDependencyError as exc:  # pragma: no cover - the test extra installs the mpich wheel
    MPICC, WHY = None, str(exc)
else:
    WHY = ""
try:  # the launcher of that MPI: $DIRECTCOLL_MPIEXEC, beside the wrapper (mpiexec.openmpi beside mpicc.openmpi), PATH
    MPIEXEC = native.find_mpiexec(MPICC) if MPICC else None
except MissingDependencyError:  # pragma: no cover
    MPIEXEC = None
pytestmark = [pytest.mark.native,
              pytest.mark.skipif(MPICC is None or MPIEXEC is None, reason=f"no MPI compiler wrapper or mpiexec: {WHY}")]

#: (algorithm, topology spec, extra schedule options) per rank count
SCHEDULES = {
    2: [("swing", "ring:2", []), ("ring", "ring:2", []), ("recursive-doubling", "ring:2", [])],
    3: [("swing", "ring:3", []), ("ring", "ring:3", []), ("recursive-doubling", "ring:3", []),
        ("generalized", "ring:3", ["--variant", "latency"])],  # scratch blocks, local reductions, shifted pieces
    4: [("swing", "torus:4", []), ("ring", "ring:4", []), ("recursive-doubling", "ring:4", []),
        ("bfb", "torus:2x2", [])],  # fractional pieces (denominator 4)
}


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A private cache (the library is built here, once) and the compiled checker."""
    yield from native_workdir(tmp_path_factory.mktemp("native"), MPICC)


def _program(root: Path, algorithm: str, spec: str, extra: list[str]) -> Path:
    sched = root / f"{algorithm}-{spec.replace(':', '_')}{''.join(extra).replace('-', '_')}.json"
    prog = sched.with_suffix(".dcp")
    if not prog.exists():
        assert main(["schedule", algorithm, spec, "-o", str(sched), *extra]) == 0
        assert main(["native", "compile", str(sched), "-o", str(prog)]) == 0
    return prog


def _table(root: Path, name: str, entries: list[dict]) -> Path:
    path = root / name
    path.write_text(json.dumps({"entries": entries}))
    return path


def _run(lib, checker, ranks: int, table, args: list[str], preload=None, extra_env=None, timeout=240,
         collective="allreduce"):
    env = {**os.environ, "LD_PRELOAD": preload or str(lib), "DIRECTCOLL_DEBUG": "1"}
    if table is not None:
        env["DIRECTCOLL_SCHEDULES"] = str(table)
    env.update(extra_env or {})
    return mpirun(ranks, [str(checker), collective, *args], env, timeout)


def test_library_is_built_once_and_cached(work, capsys):
    _, lib, _ = work
    assert lib.is_file() and lib.name.endswith(".so") and lib.parent == Path(os.environ["DIRECTCOLL_CACHE"])
    assert native.library_path() == lib  # cached: same key, same file
    assert main(["native", "lib"]) == 0
    assert capsys.readouterr().out.strip() == str(lib)
    version = ctypes.CDLL(str(lib)).directcoll_built_mpi_version
    version.restype = ctypes.c_char_p
    assert version().decode() == native.mpi_identity()[1]


def test_mpicc_names_the_mpi_to_build_against(work, monkeypatch):
    _, lib, _ = work
    monkeypatch.setenv("MPICC", MPICC[0])  # the same wrapper, named: the same cache entry
    assert native.library_path() == lib


OPEN_MPI_CC, WHEEL_CC = Path("/usr/bin/mpicc.openmpi"), Path(sys.executable).parent / "mpicc"


@pytest.mark.skipif(not (OPEN_MPI_CC.exists() and WHEEL_CC.exists()), reason="needs the mpich wheel's mpicc and "
                    "Debian's Open MPI (apt-get install libopenmpi-dev openmpi-bin)")
def test_each_mpi_gets_its_own_library_and_launcher(work, monkeypatch):
    """MPICC picks the MPI: the mpich wheel's and Debian's Open MPI build two libraries side by side in the cache
    (the key holds the MPI), each recording its MPI; the launcher is the one beside the wrapper
    (mpicc.openmpi: mpiexec.openmpi), with Open MPI's additions to its environment; $DIRECTCOLL_MPIEXEC wins."""
    monkeypatch.delenv("DIRECTCOLL_MPIEXEC", raising=False)  # (CI's Open MPI leg sets it)
    libs = {}
    for family, cc in (("MPICH", WHEEL_CC), ("Open MPI", OPEN_MPI_CC)):
        monkeypatch.setenv("MPICC", str(cc))
        libs[family] = native.library_path()
        version = ctypes.CDLL(str(libs[family])).directcoll_built_mpi_version
        version.restype = ctypes.c_char_p
        assert native.mpi_family(version().decode()) == family
        assert native.library_path() == libs[family]  # cached under its own key
    assert libs["MPICH"] != libs["Open MPI"] and libs["MPICH"].parent == libs["Open MPI"].parent
    assert native.find_mpiexec([str(OPEN_MPI_CC)]) == "/usr/bin/mpiexec.openmpi"
    assert native.find_mpiexec([str(WHEEL_CC)]) == str(WHEEL_CC.parent / "mpiexec")
    assert native.launch_env("/usr/bin/mpiexec.openmpi")["OMPI_MCA_rmaps_base_oversubscribe"] == "1"
    assert native.launch_env(str(WHEEL_CC.parent / "mpiexec")) == {}
    monkeypatch.setenv("DIRECTCOLL_MPIEXEC", "/usr/bin/mpiexec.openmpi")
    assert native.find_mpiexec([str(WHEEL_CC)]) == "/usr/bin/mpiexec.openmpi"


def test_a_bad_mpicc_is_one_clear_error(monkeypatch, capsys):
    monkeypatch.setenv("MPICC", "/no/such/mpicc")
    with pytest.raises(MissingDependencyError, match="MPICC"):
        native.find_mpicc()
    assert main(["native", "lib"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_program_files_round_trip_and_refuse_damage(tmp_path, capsys):
    prog = _program(tmp_path, "swing", "ring:3", [])
    info = native.program_info(prog.read_bytes())
    assert (info["version"], info["collective"], info["ranks"], info["name"]) == (2, "allreduce", 3, "swing:bandwidth")
    blob = bytearray(prog.read_bytes())
    blob[60] ^= 1
    with pytest.raises(DirectcollError, match="checksum"):
        native.program_info(bytes(blob))
    assert main(["schedule", "direct", "ring:3", "--collective", "alltoall", "-o", str(tmp_path / "a.json")]) == 0
    assert main(["native", "compile", str(tmp_path / "a.json"), "-o", str(tmp_path / "a.dcp")]) == 0
    info = native.program_info((tmp_path / "a.dcp").read_bytes())
    assert (info["version"], info["collective"], info["nblocks"], info["root"]) == (2, "alltoall", 9, None)


def test_the_library_rounds_piece_ends_exactly_as_the_python_programs(work):
    """Every piece end and destination, for counts 0..40 and a large one, on a fractional and a scratch schedule."""
    root, lib, _ = work
    offsets = ctypes.CDLL(str(lib)).directcoll_element_offsets
    offsets.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p]
    for algorithm, spec, extra in [("bfb", "torus:2x2", []), ("generalized", "ring:3", ["--variant", "latency"]),
                                   ("swing", "ring:3", []), ("swing", "torus:4", ["--collective", "reduce_scatter"]),
                                   ("bfb", "torus:2x2", ["--collective", "allgather"]),
                                   ("ewsp", "torus:2x2", ["--collective", "alltoall"]),
                                   ("mcf", "ring:4", ["--collective", "alltoall", "--method", "timestepped"])]:
        prog = _program(root, algorithm, spec, extra)
        s = load(prog.with_suffix(".json"))
        xs = np.ascontiguousarray(np.concatenate([s.piece_start, s.piece_stop, s.piece_start + s.shift]),
                                  dtype=np.int64)
        # reduce-scatter and allgather: N equal MPI blocks; all-to-all: N equal parts of one rank's sendbuf
        step = s.nranks if s.owner is not None or s.collective.value == "alltoall" else 1
        for count in [*range(0, 41 * step, step), 100003 * step]:
            out = np.empty_like(xs)
            assert offsets(str(prog).encode(), count, xs.ctypes.data, len(xs), out.ctypes.data) == 0
            assert np.array_equal(out, _elements(s, boundaries(s, count), xs)), (algorithm, count)


@pytest.mark.parametrize(("ranks", "transport"), [(2, "shm"), (2, "mpi"), (3, "shm"), (4, "shm"), (4, "mpi")])
def test_allreduce_matches_the_mpi_library(work, ranks, transport):  # 3 ranks over mpi: the segmented test
    root, lib, checker = work
    runs = ([["all", "0", "1", "7", "1001"], ["quick", "100003"]] if ranks == 2 else
            [["quick", "0", "1", str(ranks - 1), "7", "1001"]])  # a loaded machine makes large ones slow
    for (algorithm, spec, extra), args in ((s, a) for s in SCHEDULES[ranks] for a in runs):
        prog = _program(root, algorithm, spec, extra)
        table = _table(root, f"t{ranks}.json", [{"collective": "allreduce", "ranks": ranks, "min_bytes": 0,
                                                 "max_bytes": None, "program": prog.name}])
        run = _run(lib, checker, ranks, table, args, extra_env={"DIRECTCOLL_TRANSPORT": transport})
        assert run.returncode == 0, (algorithm, run.stdout, run.stderr[-3000:])
        cases = int(run.stdout.split()[1])
        assert "0 failures" in run.stdout and cases > 0
        lines = run.stderr.splitlines()
        served = [line for line in lines if ": served by " in line]
        assert len(served) == cases * ranks, (algorithm, [line for line in lines if "served" not in line][:5])
        assert served[0].endswith(f"{prog.name})") and not [line for line in lines if "fell through" in line]
        assert all(f" over {transport}" in line for line in served), served[0]


#: segments of 40 bytes: 5 doubles, 2 double complexes, 1 long double complex, 40 bytes (none divides every
#: message), so messages of a few elements travel in many segments and the last is shorter
SEGMENTED = {"DIRECTCOLL_SEGMENT_BYTES": "40"}


# (3 ranks over shm left out: segments do not cut the cells; the tiny-cell test below wraps the channels)
@pytest.mark.parametrize(("ranks", "transport"), [(2, "shm"), (2, "mpi"), (3, "mpi"), (4, "shm"), (4, "mpi")])
def test_segmented_messages_match_the_mpi_library(work, ranks, transport):
    """Every message cut into segments (DIRECTCOLL_SEGMENT_BYTES): pipelined reduced receives through the window
    slots (Swing, ring), the steps that are not pipelined (recursive doubling latency reduces into what it sends),
    three-operand first reductions not in place, scratch and local reductions (generalized), several runs per
    message as one derived datatype per segment (BFB, Swing's reduce-scatter owners, MCF's relays)."""
    root, lib, checker = work
    runs = [["all", "0", "1", "7", "1001"]] if ranks == 2 else [["quick", "0", "1", str(ranks - 1), "7", "333"]]
    cases = [("allreduce", s) for s in SCHEDULES[ranks]]
    if ranks == 4:
        cases += [("reduce_scatter", ("swing", "torus:4", [])), ("allgather", ("swing", "torus:4", [])),
                  ("alltoall", ("mcf", "ring:4", ["--method", "timestepped"]))]
    for (collective, (algorithm, spec, extra)), args in ((c, a) for c in cases for a in runs):
        prog = _program(root, algorithm, spec, extra if collective == "allreduce" else
                        [*extra, "--collective", collective])
        table = _table(root, f"seg{ranks}.json", [{"collective": collective, "ranks": ranks, "program": prog.name}])
        name = "reduce_scatter_block" if collective == "reduce_scatter" else collective
        run = _run(lib, checker, ranks, table, args, collective=name,
                   extra_env={**SEGMENTED, "DIRECTCOLL_TRANSPORT": transport})
        assert run.returncode == 0 and "0 failures" in run.stdout, (algorithm, collective, run.stdout,
                                                                    run.stderr[-3000:])
        served = [line for line in run.stderr.splitlines() if ": served by " in line]
        assert len(served) == int(run.stdout.split()[1]) * ranks and "fell through" not in run.stderr
        assert all(f" over {transport}" in line for line in served), served[0]


#: channels of three cells of 40 bytes (64 apart): 1 long double complex, 2 double complexes, 5 doubles per cell, so
#: every message of a few elements fills many cells and wraps around its channel many times
TINY_CELLS = {"DIRECTCOLL_SHM_CELL_BYTES": "40", "DIRECTCOLL_SHM_CELLS": "3"}


@pytest.mark.parametrize("ranks", [2, 4, 8])
def test_shared_memory_channels_of_tiny_cells(work, ranks):
    """Every message through many cells of a three-cell channel: direct and staged copies, reductions from the cells
    into place (pipelined or not, three operands not in place) and staged ones, several messages per peer and step,
    relays (all-to-all); 8 ranks on this machine's cores (oversubscribed: the loop must yield)."""
    root, lib, checker = work
    cases = {2: [("allreduce", ("swing", "ring:2", ["--variant", "latency"])), ("allreduce", SCHEDULES[2][1])],
             4: [("allreduce", SCHEDULES[4][3]), ("allreduce", SCHEDULES[4][0]),
                 ("reduce_scatter", OWNED[4][0]), ("allgather", OWNED[4][1]), ("alltoall", ALLTOALL[4][0])],
             8: [("allreduce", ("swing", "torus:8", []))]}[ranks]
    args = ["all", "0", "1", "7", "333"] if ranks == 2 else ["quick", "0", "1", "7", "333"]
    for collective, (algorithm, spec, extra) in cases:
        prog = _program(root, algorithm, spec, extra if collective == "allreduce" else
                        [*extra, "--collective", collective])
        table = _table(root, f"tiny{ranks}.json", [{"collective": collective, "ranks": ranks, "program": prog.name}])
        name = "reduce_scatter_block" if collective == "reduce_scatter" else collective
        run = _run(lib, checker, ranks, table, args, collective=name,
                   extra_env={**TINY_CELLS, "DIRECTCOLL_TRANSPORT": "shm"})
        assert run.returncode == 0 and "0 failures" in run.stdout, (algorithm, collective, run.stderr[-3000:])
        served = [line for line in run.stderr.splitlines() if ": served by " in line]
        assert len(served) == int(run.stdout.split()[1]) * ranks and "fell through" not in run.stderr
        assert all(" over shm (" in line for line in served), served[0]


def test_the_shared_memory_loop_drives_mpi_progress(work):
    """Rank 0 calls the collective while rank 1 waits in MPI_Recv on rank 0's MPI_Isend of 4 MiB, which MPICH (CMA off:
    through its cells, pushed by the sender) moves only inside rank 0's MPI calls: the loop must drive them."""
    root, lib, checker = work
    table = _table(root, "progress.json", [{"collective": "allreduce", "ranks": 2,
                                            "program": str(_program(root, "swing", "ring:2", []))}])
    run = _run(lib, checker, 2, table, ["progress", str(1 << 22)], timeout=60,
               extra_env={"MPIR_CVAR_CH4_CMA_ENABLE": "0", "DIRECTCOLL_TRANSPORT": "shm"})
    assert run.returncode == 0 and "0 failures" in run.stdout, run.stderr[-3000:]
    assert run.stderr.count(" over shm (") == 2 * int(run.stdout.split()[1])


def test_the_transport_falls_back_and_refuses_with_one_line(work):
    """Channels over the budget, or cells narrower than the datatype: MPI point-to-point, the reason in the debug
    line; a DIRECTCOLL_TRANSPORT other than auto, shm or mpi: everything falls through, one line per rank."""
    root, lib, checker = work
    table = _table(root, "fallback.json", [{"collective": "allreduce", "ranks": 2,
                                            "program": str(_program(root, "swing", "ring:2", []))}])
    run = _run(lib, checker, 2, table, ["quick", "7"], extra_env={"DIRECTCOLL_SHM_CELL_BYTES": str(1 << 30)})
    assert run.returncode == 0 and "0 failures" in run.stdout, run.stderr[-3000:]
    served = [line for line in run.stderr.splitlines() if ": served by " in line]
    assert served and all(" over mpi [its channels would take 8192 MiB, over the 256 MiB budget] (" in line
                          for line in served), served[0]
    run = _run(lib, checker, 2, table, ["all", "3"], extra_env={"DIRECTCOLL_SHM_CELL_BYTES": "24"})
    assert run.returncode == 0 and "0 failures" in run.stdout, run.stderr[-3000:]
    assert "MPI_C_LONG_DOUBLE_COMPLEX, MPI_SUM) on 2 ranks, 96 bytes: served by swing:bandwidth over mpi [a " \
           "datatype wider than a cell]" in run.stderr
    assert "(count=3, MPI_DOUBLE, MPI_SUM) on 2 ranks, 24 bytes: served by swing:bandwidth over shm (" in run.stderr
    run = _run(lib, checker, 2, table, ["quick", "7"], extra_env={"DIRECTCOLL_TRANSPORT": "fast",
                                                                  "DIRECTCOLL_DEBUG": "0"})
    assert run.returncode == 0 and "0 failures" in run.stdout
    assert run.stderr.count("directcoll: DIRECTCOLL_TRANSPORT is fast, not auto, shm or mpi; every collective falls "
                            "through to the MPI library\n") == 2 and run.stderr.count("\n") == 2


def test_one_rank_no_steps(work):
    """No step writes recvbuf: not in place, every cell comes from sendbuf at the end."""
    root, lib, checker = work
    native.write_program(ScheduleBuilder("allreduce", 1, 1).build(meta={"algorithm": "none"}), root / "one.dcp")
    table = _table(root, "one.json", [{"collective": "allreduce", "ranks": 1, "program": "one.dcp"}])
    run = _run(lib, checker, 1, table, ["all", "0", "1", "7", "1001"])
    assert run.returncode == 0 and "0 failures" in run.stdout, run.stderr[-3000:]
    assert run.stderr.count("served by none") == int(run.stdout.split()[1])


#: reduce-scatter and allgather: Swing with its permuted block owners, BFB with fractional pieces, the ring
OWNED = {2: [("swing", "ring:2", [])], 3: [("ring", "ring:3", []), ("generalized", "ring:3", [])],
         4: [("swing", "torus:4", []), ("bfb", "torus:2x2", [])]}


@pytest.mark.parametrize("collective", ["reduce_scatter", "allgather"])
@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_reduce_scatter_and_allgather_match_the_mpi_library(work, ranks, collective):
    root, lib, checker = work
    runs = [["all", "0", "1", "7", "333"], ["quick", "30011"]] if ranks == 2 else [["quick", "0", "1", "2", "7", "333"]]
    for (algorithm, spec, extra), args in ((s, a) for s in OWNED[ranks] for a in runs):
        prog = _program(root, algorithm, spec, [*extra, "--collective", collective])
        table = _table(root, f"{collective}{ranks}.json", [{"collective": collective, "ranks": ranks,
                                                           "program": prog.name}])
        name = "reduce_scatter_block" if collective == "reduce_scatter" else collective
        run = _run(lib, checker, ranks, table, args, collective=name)
        assert run.returncode == 0 and "0 failures" in run.stdout, (algorithm, run.stdout, run.stderr[-3000:])
        served = [line for line in run.stderr.splitlines() if ": served by " in line]
        assert len(served) == int(run.stdout.split()[1]) * ranks and "fell through" not in run.stderr


#: all-to-all: the direct exchange; MCF (time-stepped: relays through other ranks, denominator 2 or 4) and EwSP
#: (fractional pieces, denominator 8)
ALLTOALL = {2: [("direct", "ring:2", [])], 3: [("direct", "ring:3", []), ("ewsp", "ring:3", [])],
            4: [("mcf", "ring:4", ["--method", "timestepped"]), ("ewsp", "torus:2x2", []),
                ("mcf", "torus:2x2", ["--method", "timestepped"])]}


@pytest.mark.parametrize("ranks", [2, 3, 4])
def test_alltoall_matches_the_mpi_library(work, ranks):
    """Every datatype (copies), blocks of 0, 1, 7 and 333 elements per destination, in place (MPI_IN_PLACE) and
    not; the relayed pieces of MCF and the fractional ones of EwSP land where MPI_Alltoall puts them."""
    root, lib, checker = work
    runs = [["all", "0", "1", "7", "333"], ["quick", "30011"]] if ranks == 2 else [["quick", "0", "1", "2", "7", "333"]]
    for (algorithm, spec, extra), args in ((s, a) for s in ALLTOALL[ranks] for a in runs):
        prog = _program(root, algorithm, spec, [*extra, "--collective", "alltoall"])
        table = _table(root, f"alltoall{ranks}.json", [{"collective": "alltoall", "ranks": ranks,
                                                       "program": prog.name}])
        run = _run(lib, checker, ranks, table, args, collective="alltoall")
        assert run.returncode == 0 and "0 failures" in run.stdout, (algorithm, run.stdout, run.stderr[-3000:])
        served = [line for line in run.stderr.splitlines() if ": served by " in line]
        assert len(served) == int(run.stdout.split()[1]) * ranks and "fell through" not in run.stderr


def test_several_communicators_each_with_its_own_state(work):
    """MPI_COMM_WORLD, a duplicate and two halves interleaved (each its size's program, plans cached per
    communicator), an intercommunicator (falls through), communicators freed in between."""
    root, lib, checker = work
    table = _table(root, "comms.json", [
        {"collective": "allreduce", "ranks": 2, "program": str(_program(root, "swing", "ring:2", []))},
        {"collective": "allreduce", "ranks": 4, "program": str(_program(root, "bfb", "torus:2x2", []))}])
    run = _run(lib, checker, 4, table, ["comms", "0", "5", "1001"])
    assert run.returncode == 0 and "0 failures" in run.stdout, run.stderr[-3000:]
    lines = run.stderr.splitlines()
    assert len([line for line in lines if "on 4 ranks" in line and "served by bfb" in line]) == 4 * 24
    assert len([line for line in lines if "on 2 ranks" in line and "served by swing" in line]) == 4 * 12
    assert len([line for line in lines if "on 2 ranks, 4 bytes: fell through: an intercommunicator" in line]) == 4


def test_what_the_schedules_cannot_serve_falls_through(work):
    root, lib, checker = work
    prog = _program(root, "swing", "ring:2", [])
    table = _table(root, "small.json", [{"collective": "allreduce", "ranks": 2, "max_bytes": 64,
                                         "program": str(prog)}])
    run = _run(lib, checker, 2, table, ["fallthrough", "10"])
    assert run.returncode == 0 and "0 failures" in run.stdout, run.stderr
    assert run.stderr.count("fell through: a user-defined or non-reduction op") == 4  # allreduce, reduce-scatter
    assert run.stderr.count("fell through: a derived, non-contiguous or unsupported datatype") == 8
    assert "MPI_Allreduce(count=64, MPI_CHAR, MPI_MAX) on 2 ranks, 64 bytes: fell through" in run.stderr
    assert "MPI_Reduce_scatter_block(count=10, MPI_INT, a user-defined or other op) on 2 ranks, 80 bytes" in run.stderr
    assert "MPI_Allgather(count=1, a derived or unsupported type) on 2 ranks, 16 bytes: fell through" in run.stderr
    assert "MPI_Alltoall(count=1, a derived or unsupported type) on 2 ranks, 16 bytes: fell through" in run.stderr
    run = _run(lib, checker, 2, table, ["quick", "16", "17"])  # 64 bytes of int served, 68 not
    assert run.returncode == 0 and "0 failures" in run.stdout, run.stderr
    assert "MPI_Allreduce(count=16, MPI_INT, MPI_SUM) on 2 ranks, 64 bytes: served by swing:bandwidth" in run.stderr
    assert ("MPI_Allreduce(count=17, MPI_INT, MPI_SUM) on 2 ranks, 68 bytes: fell through: no table entry covers an "
            "allreduce on 2 ranks of 68 bytes") in run.stderr
    run = _run(lib, checker, 3, table, ["quick", "5"])  # no entry for 3 ranks
    assert run.returncode == 0 and "served by" not in run.stderr and "no table entry covers" in run.stderr
    run = _run(lib, checker, 2, None, ["quick", "5"], extra_env={"DIRECTCOLL_SCHEDULES": ""})
    assert run.returncode == 0 and "fell through: DIRECTCOLL_SCHEDULES is not set" in run.stderr


def test_broken_tables_and_programs_fall_through_with_one_line(work):
    root, lib, checker = work
    bad = root / "bad.json"
    bad.write_text('{"entries": [{"collective": "allreduce", "ranks": 2')
    run = _run(lib, checker, 2, bad, ["quick", "5"], extra_env={"DIRECTCOLL_DEBUG": "0"})
    assert run.returncode == 0 and "0 failures" in run.stdout
    assert run.stderr.count("bad.json") == 2 and "falls through" in run.stderr  # one line per rank
    damaged = root / "damaged.dcp"
    damaged.write_bytes(_program(root, "ring", "ring:2", []).read_bytes()[:-3])
    table = _table(root, "damaged.json", [{"collective": "allreduce", "ranks": 2, "program": "damaged.dcp"}])
    run = _run(lib, checker, 2, table, ["quick", "5"])
    assert run.returncode == 0 and "0 failures" in run.stdout and "served by" not in run.stderr
    assert "checksum mismatch" in run.stderr
    table = _table(root, "wrong.json", [{"collective": "allgather", "ranks": 2,
                                         "program": str(_program(root, "ring", "ring:2", []))}])
    run = _run(lib, checker, 2, table, ["quick", "5"], collective="allgather")
    assert run.returncode == 0 and "0 failures" in run.stdout and "served by" not in run.stderr
    assert "holds a program of allreduce for 2 ranks; its table entry says allgather on 2 ranks" in run.stderr


def test_a_library_built_for_another_mpi_refuses(work):
    root, _, checker = work
    show, _version = native.mpi_identity()
    other = native.build_library(root / "libother.so", identity=(show, "Another MPI 9.9"))
    table = _table(root, "t2.json", [{"collective": "allreduce", "ranks": 2,
                                      "program": str(_program(root, "ring", "ring:2", []))}])
    run = _run(None, checker, 2, table, ["quick", "5"], preload=str(other), extra_env={"DIRECTCOLL_DEBUG": "0"})
    assert run.returncode == 0 and "0 failures" in run.stdout  # everything fell through to MPICH
    refusals = [line for line in run.stderr.splitlines() if "refusing to run" in line]
    assert len(refusals) == 2 and "Another MPI 9.9" in refusals[0]  # once per rank


def sanitizer_env() -> dict[str, str]:
    """The environment of a run under ASan + UBSan with leak checks. On Open MPI also its suppressions
    (tests/native/lsan-openmpi.supp: memory Open MPI's own libraries never free) and full stacks on every malloc
    (its libraries have no frame pointers: without them a leak's stack stops at an unnamed frame)."""
    if native.mpi_family(native.mpi_identity(MPICC)[1]) != "Open MPI":
        return {"ASAN_OPTIONS": "detect_leaks=1"}
    return {"ASAN_OPTIONS": "detect_leaks=1:fast_unwind_on_malloc=0",
            "LSAN_OPTIONS": f"suppressions={HERE / 'native' / 'lsan-openmpi.supp'}:print_suppressions=0"}


_SANITIZED: dict[str, tuple[str, Path]] = {}  # built once per session (the first caller's folder outlives it)


def sanitized_library(root: Path) -> tuple[str, Path]:
    """(gcc's libasan.so, libdirectcoll built with ASan + UBSan into root, once per session); skips the test where
    either is missing."""
    if "lib" in _SANITIZED:
        return _SANITIZED["lib"]
    gcc = shutil.which("gcc")
    asan = subprocess.run([gcc, "-print-file-name=libasan.so"], capture_output=True, text=True).stdout.strip() \
        if gcc else ""
    if not os.path.isabs(asan) or not os.path.exists(asan):
        pytest.skip("gcc has no libasan.so")
    try:
        lib = native.build_library(root / "libdirectcoll-asan.so", extra_flags=(
            "-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer", "-g"))
    except DirectcollError as exc:
        pytest.skip(f"the sanitizer build failed: {exc}")
    _SANITIZED["lib"] = (asan, lib)
    return asan, lib


def test_under_address_and_undefined_behaviour_sanitizers(work):
    """ASan must come first in LD_PRELOAD; leaks are checked too (LeakSanitizer at exit)."""
    root, _, checker = work
    asan, lib = sanitized_library(root)
    for ranks, algorithm, spec, extra in [(2, "swing", "ring:2", []), (3, "generalized", "ring:3", ["--variant",
                                                                                                 "latency"])]:
        prog = _program(root, algorithm, spec, extra)
        table = _table(root, "asan.json", [{"collective": "allreduce", "ranks": ranks, "program": str(prog)}])
        args = ["all", "0", "1", "7", "1001"] if ranks == 2 else ["quick", "0", "1", "2", "7"]
        run = _run(None, checker, ranks, table, args, preload=f"{asan}:{lib}",
                   extra_env={**sanitizer_env(), "DIRECTCOLL_DEBUG": "0"})
        assert run.returncode == 0 and "0 failures" in run.stdout, run.stderr[-3000:]
        assert "runtime error" not in run.stderr and "AddressSanitizer" not in run.stderr
    prog = _program(root, "mcf", "ring:4", ["--method", "timestepped", "--collective", "alltoall"])
    table = _table(root, "asan.json", [{"collective": "alltoall", "ranks": 4, "program": str(prog)}])
    run = _run(None, checker, 4, table, ["quick", "0", "1", "7"], preload=f"{asan}:{lib}",
               extra_env={**sanitizer_env(), "DIRECTCOLL_DEBUG": "0"}, collective="alltoall")
    assert run.returncode == 0 and "0 failures" in run.stdout, run.stderr[-3000:]
    assert "runtime error" not in run.stderr and "AddressSanitizer" not in run.stderr
    for collective in ("reduce_scatter", "allgather"):
        prog = _program(root, "swing", "torus:4", ["--collective", collective])
        table = _table(root, "asan.json", [{"collective": collective, "ranks": 4, "program": str(prog)}])
        run = _run(None, checker, 4, table, ["quick", "0", "1", "7"], preload=f"{asan}:{lib}",
                   extra_env={**sanitizer_env(), "DIRECTCOLL_DEBUG": "0"},
                   collective="reduce_scatter_block" if collective == "reduce_scatter" else collective)
        assert run.returncode == 0 and "0 failures" in run.stdout, run.stderr[-3000:]
    table = _table(root, "asan.json", [
        {"collective": "allreduce", "ranks": 2, "program": str(_program(root, "swing", "ring:2", []))},
        {"collective": "allreduce", "ranks": 4, "program": str(_program(root, "bfb", "torus:2x2", []))}])
    run = _run(None, checker, 4, table, ["comms", "0", "5"], preload=f"{asan}:{lib}",
               extra_env={**sanitizer_env(), "DIRECTCOLL_DEBUG": "0"})
    assert run.returncode == 0 and "0 failures" in run.stdout, run.stderr[-3000:]
    assert "runtime error" not in run.stderr and "AddressSanitizer" not in run.stderr
    for ranks, collective, (algorithm, spec, extra) in [(2, "allreduce", SCHEDULES[2][0]), (4, "allreduce",
                                                        SCHEDULES[4][3]), (4, "reduce_scatter", OWNED[4][0])]:
        prog = _program(root, algorithm, spec, extra if collective == "allreduce" else
                        [*extra, "--collective", collective])  # segmented: window slots, segment datatypes
        table = _table(root, "asan.json", [{"collective": collective, "ranks": ranks, "program": str(prog)}])
        run = _run(None, checker, ranks, table, ["quick", "0", "1", "7", "333"], preload=f"{asan}:{lib}",
                   extra_env={**sanitizer_env(), "DIRECTCOLL_DEBUG": "0", **SEGMENTED, **TINY_CELLS},
                   collective="reduce_scatter_block" if collective == "reduce_scatter" else collective)
        assert run.returncode == 0 and "0 failures" in run.stdout, (algorithm, run.stderr[-3000:])
        assert "runtime error" not in run.stderr and "AddressSanitizer" not in run.stderr
