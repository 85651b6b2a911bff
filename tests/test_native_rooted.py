"""Broadcast and reduce in libdirectcoll: program files of format 2 that record the root, and MPI_Bcast
and MPI_Reduce of an unmodified C program (tests/native/collective_check.c) served under LD_PRELOAD against the
PMPI_ calls, on 2 to 8 ranks, from root 0 (up to 5 ranks) and from a non-zero root: every predefined basic
datatype x op MPI defines on it on 2 ranks (int, double, float and uint8 on more), counts 0, 1, fewer than the
ranks, not divisible and large, a reduce in place at the root (recvbuf NULL elsewhere) and not (recvbuf off the
root untouched); the fall-throughs (another root, a user-defined op, a derived datatype, an intercommunicator) with
their DEBUG lines.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from test_native import (
    MPICC,
    MPIEXEC,
    WHY,
    mpi4py_runs_this_mpi,
    mpirun,
    native_workdir,
    sanitized_library,
    sanitizer_env,
)

from directcoll.cli.main import main
from directcoll.errors import DirectcollError
from directcoll.registry import build
from directcoll.runtime import native

pytestmark = [pytest.mark.native,
              pytest.mark.skipif(MPICC is None or MPIEXEC is None, reason=f"no MPI compiler wrapper or mpiexec: {WHY}")]

#: (ranks, algorithm, topology spec, variant, roots): trees (binomial, Swing's latency tree, BFB's), a pipelined
#: chain (several chunks: fractional pieces), scatter + allgather (Swing's bandwidth variant: scratch-free halving)
ROOTED = [(2, "binomial", "ring:2", None, (0, 1)),
          (3, "chain", "ring:3", None, (0, 2)),
          (4, "swing-tree", "torus:4", "bandwidth", (0, 3)),
          (5, "bfb-tree", "ring:5", "bandwidth", (0, 2)),
          (6, "swing-tree", "ring:6", "latency", (5,)),  # many oversubscribed ranks: the non-zero root only
          (8, "binomial", "torus:2x4", None, (5,))]


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """A private cache (the library is built here, once) and the compiled checker."""
    yield from native_workdir(tmp_path_factory.mktemp("rooted"), MPICC)


def _program(root: Path, algorithm: str, spec: str, variant: str | None, collective: str, at: int) -> Path:
    prog = root / f"{algorithm}-{variant}-{spec.replace(':', '_')}-{collective}-{at}.dcp"
    if not prog.exists():
        sched = prog.with_suffix(".json")
        extra = ["--variant", variant] if variant else []
        assert main(["schedule", algorithm, spec, "--collective", collective, "--root", str(at), *extra,
                     "-o", str(sched)]) == 0
        assert main(["native", "compile", str(sched), "-o", str(prog)]) == 0
    return prog


def _run(lib, checker, ranks: int, table: Path, collective: str, args: list[str], extra_env=None):
    env = {**os.environ, "LD_PRELOAD": str(lib), "DIRECTCOLL_DEBUG": "1", "DIRECTCOLL_SCHEDULES": str(table),
           **(extra_env or {})}
    return mpirun(ranks, [str(checker), collective, *args], env)


def test_program_files_record_the_root():
    for collective, code in (("broadcast", 4), ("reduce", 5)):
        blob = native.encode_program(build("binomial", "ring:5", collective, root=3))
        info = native.program_info(blob)
        assert (info["version"], info["collective"], info["root"]) == (2, collective, 3)
        assert int.from_bytes(blob[12:16], "little") == code
    assert native.program_info(native.encode_program(build("ring", "ring:3")))["root"] is None
    old = bytearray(native.encode_program(build("binomial", "ring:4", "broadcast")))
    old[8:12] = (1).to_bytes(4, "little")  # a version-1 header: refused (the checksum is checked after)
    with pytest.raises(DirectcollError, match="program format version 1; this directcoll reads 2"):
        native.program_info(bytes(old))


@pytest.mark.parametrize("ranks, algorithm, spec, variant, roots", ROOTED, ids=[f"{r[0]}-{r[1]}" for r in ROOTED])
def test_bcast_and_reduce_match_the_mpi_library(work, ranks, algorithm, spec, variant, roots):
    root, lib, checker = work
    small = ["0", "1", str(ranks - 1), "7", "333"]
    for at in roots:
        table = root / f"rooted{ranks}.json"
        table.write_text(json.dumps([{"collective": c, "ranks": ranks, "root": at,
                                      "program": _program(root, algorithm, spec, variant, c, at).name}
                                     for c in ("broadcast", "reduce")]))
        for collective in ("bcast", "reduce"):
            runs = [["all", *small], ["quick", "30011"]] if ranks == 2 else [["quick", *small]]
            # 4 ranks also in 40-byte segments: reductions pipelined through the window slots
            envs = [{}, {"DIRECTCOLL_SEGMENT_BYTES": "40"}] if ranks == 4 else [{}]
            for args, extra in ((a, e) for a in runs for e in envs):
                run = _run(lib, checker, ranks, table, f"{collective}:{at}", args, extra)
                assert run.returncode == 0 and "0 failures" in run.stdout, (collective, at, run.stdout,
                                                                            run.stderr[-3000:])
                served = [line for line in run.stderr.splitlines() if ": served by " in line]
                assert len(served) == int(run.stdout.split()[1]) * ranks and "fell through" not in run.stderr
                assert f", root={at}) on {ranks} ranks" in served[0]


def test_other_roots_and_what_the_schedules_cannot_serve_fall_through(work):
    root, lib, checker = work
    for collective, name in (("broadcast", "MPI_Bcast"), ("reduce", "MPI_Reduce")):
        prog = _program(root, "binomial", "ring:4", None, collective, 1)
        table = root / f"fall-{collective}.json"
        table.write_text(json.dumps([{"collective": collective, "ranks": 4, "program": prog.name}]))
        run = _run(lib, checker, 4, table, f"{'bcast' if collective == 'broadcast' else 'reduce'}:1",
                   ["fallthrough", "10"])
        assert run.returncode == 0 and "0 failures" in run.stdout, run.stderr[-3000:]
        err = run.stderr
        assert "served by" not in err
        assert err.count(f"root=2) on 4 ranks, 40 bytes: fell through: the program for a {collective} on 4 ranks of "
                         f"40 bytes ({prog}) is compiled for root 1, not 2") == 4
        assert err.count("fell through: a derived, non-contiguous or unsupported datatype") == 4
        assert err.count("fell through: an intercommunicator") == 4
        if collective == "reduce":
            assert err.count(f"{name}(count=10, MPI_INT, a user-defined or other op, root=1) on 4 ranks, 40 bytes: "
                             "fell through: a user-defined or non-reduction op") == 4


def test_the_library_refuses_a_version_1_program_with_one_line(work):
    root, lib, checker = work
    body = bytearray(native.encode_program(build("ring", "ring:2"))[:-8])
    body[8:12] = (1).to_bytes(4, "little")  # a file of the first format, its checksum right
    (root / "v1.dcp").write_bytes(bytes(body) + native._fnv1a(bytes(body)).to_bytes(8, "little"))
    table = root / "v1.json"
    table.write_text(json.dumps([{"collective": "allreduce", "ranks": 2, "program": "v1.dcp"}]))
    run = _run(lib, checker, 2, table, "allreduce", ["quick", "5"])
    assert run.returncode == 0 and "0 failures" in run.stdout and "served by" not in run.stderr
    assert run.stderr.count("v1.dcp: program format version 1; this library reads version 2; calls it covers "
                            "fall through") == 2  # one line per rank


def test_a_table_serves_each_root_from_its_own_program(work):
    """Two entries for one size, roots 0 and 2: each call runs the program of its root."""
    root, lib, checker = work
    progs = {at: _program(root, "chain", "ring:3", None, "reduce", at) for at in (0, 2)}
    table = root / "two-roots.json"
    table.write_text(json.dumps([{"collective": "reduce", "ranks": 3, "root": at, "program": p.name}
                                 for at, p in progs.items()]))
    for at in (0, 2):
        run = _run(lib, checker, 3, table, f"reduce:{at}", ["quick", "5"])
        assert run.returncode == 0 and "0 failures" in run.stdout, run.stderr[-3000:]
        served = [line for line in run.stderr.splitlines() if ": served by " in line]
        assert served and all(line.endswith(f"({progs[at]})") for line in served)


def test_rooted_and_overlapping_receives_under_address_and_undefined_behaviour_sanitizers(work):
    """A broadcast and a reduce (the non-root work buffers, from_send at the root; in segments) from root 2, and the
    generalized allreduce's receives of overlapping pieces (applied slice by slice), under ASan + UBSan with leak
    checks. ASan must come first in LD_PRELOAD."""
    root, _, checker = work
    asan, lib = sanitized_library(root)
    table = root / "asan.json"
    native.write_program(build("generalized", "ring:7", variant="latency"), root / "generalized7.dcp")  # r = 3
    entries = [{"collective": c, "ranks": 3, "program": _program(root, "chain", "ring:3", None, c, 2).name}
               for c in ("broadcast", "reduce")]
    table.write_text(json.dumps([*entries, {"collective": "allreduce", "ranks": 7, "program": "generalized7.dcp"}]))
    env = {**os.environ, "LD_PRELOAD": f"{asan}:{lib}", "DIRECTCOLL_SCHEDULES": str(table),
           **sanitizer_env()}
    segmented = {"DIRECTCOLL_SEGMENT_BYTES": "40"}
    for ranks, collective, extra in [(3, "bcast:2", {}), (3, "reduce:2", segmented), (7, "allreduce", segmented)]:
        run = mpirun(ranks, [str(checker), collective, "quick", "0", "1", "2", "7", "50"], {**env, **extra})
        assert run.returncode == 0 and "0 failures" in run.stdout, (collective, run.stderr[-3000:])
        assert "runtime error" not in run.stderr and "AddressSanitizer" not in run.stderr


def test_directcoll_run_serves_rooted_collectives_on_the_c_engine(work, capsys):
    import sys

    if why := mpi4py_runs_this_mpi():
        pytest.skip(f"directcoll run's C engine needs the library built for mpi4py's MPI: {why}")

    src = str(Path(__file__).resolve().parents[1] / "src")
    env = {**os.environ, "PYTHONPATH": src + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.run([sys.executable, "-m", "directcoll.cli.main", "run", "ring:3", "--collective", "reduce",
                           "--root", "2", "--algorithms", "binomial,chain", "--sizes", "8B,64KiB", "--repeat", "1",
                           "--engine", "c", "--json"], capture_output=True, text=True, timeout=240, env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["engine"] == "c" and len(data["results"]) == 4 and "note:" not in proc.stderr
    assert all(r["engine"] == "c" and r["correct"] for r in data["results"])
    assert main(["run", "ring:4", "--engine", "smpi", "--collective", "broadcast"]) == 2
    assert capsys.readouterr().err.strip() == ("directcoll: error: --engine smpi runs allreduce, reduce_scatter, "
                                               "allgather and alltoall; a broadcast runs on real ranks (--engine c "
                                               "or python)")
