"""Running schedules on real MPI ranks: programs, results equal to the MPI library's, failures."""

import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from directcoll.cli.main import main
from directcoll.errors import DirectcollError
from directcoll.registry import build
from directcoll.runtime import executor
from directcoll.runtime.program import boundaries, compile_programs, mpi_order
from directcoll.runtime.selftest import relayed_alltoall, ring_alltoall
from directcoll.schedule.ir import COPY, REDUCE, ScheduleBuilder
from directcoll.verify import verify

pytestmark = pytest.mark.mpi

MPIEXEC = shutil.which("mpiexec")
needs_mpi = pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not installed (pip install 'directcoll[mpi]')")
SCRIPTS = Path(__file__).parent / "mpi_scripts"
SRC = str(Path(__file__).resolve().parents[1] / "src")


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
def test_a_hung_or_dead_rank_makes_the_others_fail_within_the_timeout(mode, tmp_path):
    errors = tmp_path / "error"  # each survivor's message, also written to a file: MPI_Abort may cut the stderr
    proc = mpirun(4, str(SCRIPTS / "failing_rank.py"), mode, "2", str(errors), timeout=120)  # a hang fails here
    assert proc.returncode != 0
    if mode == "hang":  # the survivors name the step and the rank they wait for
        said = proc.stderr + "".join(p.read_text() for p in tmp_path.glob("error.*"))
        assert "did not complete within 2 s" in said and "waiting on ranks" in said, said


class FakeComm:
    """A communicator of ``size`` ranks that cannot send: any message would fail, so refusals must come first."""

    def __init__(self, size: int = 4, rank: int = 1) -> None:
        self.size, self.rank = size, rank

    def Get_size(self):
        return self.size

    def Get_rank(self):
        return self.rank


def test_mismatched_schedule_is_refused_before_any_message():
    pytest.importorskip("mpi4py")
    from mpi4py import MPI

    from directcoll.runtime import mpi as run

    s = build("swing", "torus:2x2")
    with pytest.raises(DirectcollError, match="for 4 ranks"):
        run.allreduce(FakeComm(3, 0), np.ones(8), np.empty(8), op=MPI.SUM, schedule=s)
    with pytest.raises(DirectcollError, match="not a reduce_scatter"):
        run.reduce_scatter_block(FakeComm(3, 0), np.ones(8), np.empty(2), op=MPI.SUM, schedule=s)


def test_mpi_arguments_are_refused_as_mpi_would_with_one_line_each():
    pytest.importorskip("mpi4py")
    from mpi4py import MPI

    from directcoll.runtime import mpi as run

    comm = FakeComm(2, 1)
    ar, rs = build("swing", "ring:2"), build("swing", "ring:2", "reduce_scatter")
    ag, a2a = build("ring", "ring:2", "allgather"), build("direct", "ring:2", "alltoall")
    x = np.arange(8.0)
    frozen = np.empty(8)
    frozen.flags.writeable = False
    cases = [
        (lambda: run.allreduce(comm, x, np.empty(8), MPI.LAND, schedule=ar),
         "op MPI.LAND is not supported: give MPI.SUM, MPI.PROD, MPI.MAX, MPI.MIN"),
        (lambda: run.allreduce(comm, x, np.empty(8), "sum", schedule=ar), "op 'sum' (a str, not an MPI.Op)"),
        (lambda: run.allreduce(comm, x, x, schedule=ar), "allreduce: sendbuf and recvbuf overlap"),
        (lambda: run.allreduce(comm, x[:6], x[2:], schedule=ar), "pass MPI.IN_PLACE as sendbuf"),
        (lambda: run.alltoall(comm, x, x, schedule=a2a), "alltoall: sendbuf and recvbuf overlap"),
        (lambda: run.allgather(comm, x[:4], x, schedule=ag), "allgather: sendbuf and recvbuf overlap"),
        (lambda: run.reduce_scatter_block(comm, x, x[:4], schedule=rs), "reduce_scatter_block: sendbuf and recvbuf"),
        (lambda: run.allreduce(comm, x, MPI.IN_PLACE, schedule=ar), "recvbuf: MPI.IN_PLACE is accepted as sendbuf"),
        (lambda: run.allreduce(comm, x[::2], np.empty(4), schedule=ar), "sendbuf is not contiguous"),
        (lambda: run.allreduce(comm, x, frozen, schedule=ar), "recvbuf is read-only"),
        (lambda: run.allreduce(comm, [1.0, 2.0], np.empty(2), schedule=ar), "sendbuf: a list of 2 items is not a "
                                                                            "buffer specification"),
        (lambda: run.allreduce(comm, "abc", np.empty(3), schedule=ar), "sendbuf is a str, not a buffer"),
        (lambda: run.allreduce(comm, [x, 9, MPI.DOUBLE], np.empty(9), schedule=ar), "count 9 and displacement 0"),
        (lambda: run.allreduce(comm, [x, MPI.DATATYPE_NULL], np.empty(8), schedule=ar), "no numpy equivalent"),
        (lambda: run.allreduce(comm, [x, MPI.FLOAT], np.empty(8), schedule=ar), "share one dtype"),
        (lambda: run.allreduce(comm, x.astype(np.int16), np.empty(8, np.int16), schedule=ar), "one dtype of"),
        (lambda: run.allreduce(comm, x, np.empty(7), schedule=ar), "sendbuf has 8 elements, recvbuf 7"),
        (lambda: run.reduce_scatter_block(comm, x, np.empty(3), schedule=rs),
         "reduce_scatter_block: sendbuf must hold N x recvbuf = 6 elements, has 8"),
        (lambda: run.reduce_scatter_block(comm, MPI.IN_PLACE, np.empty(7), schedule=rs),
         "its 7 elements are not a multiple of 2 ranks"),
        (lambda: run.reduce_scatter(comm, x, np.empty(4), [3, 5], schedule=rs),
         "recvcounts [3, 5] differ, and a schedule scatters N equal blocks (MPI_Reduce_scatter_block); call "
         "reduce_scatter_block"),
        (lambda: run.reduce_scatter(comm, x, np.empty(4), [4, 4, 4], schedule=rs),
         "recvcounts must be 2 non-negative integers"),
        (lambda: run.reduce_scatter(comm, x, np.empty(4), [4.0, 4.0], schedule=rs),
         "recvcounts must be 2 non-negative integers"),
        (lambda: run.reduce_scatter(comm, x, np.empty(3), [4, 4], schedule=rs),
         "recvcounts[1] is 4, but recvbuf has 3 elements"),
        (lambda: run.reduce_scatter(comm, MPI.IN_PLACE, x, schedule=rs), "MPI.IN_PLACE needs recvcounts"),
        (lambda: run.reduce_scatter(comm, MPI.IN_PLACE, x, [5, 5], schedule=rs), "sum(recvcounts) = 10 elements"),
        (lambda: run.allgather(comm, MPI.IN_PLACE, np.empty(7), schedule=ag), "not a multiple of 2 ranks"),
        (lambda: run.allgather(comm, x, np.empty(8), schedule=ag), "recvbuf must hold N x sendbuf = 16"),
        (lambda: run.native(comm, "allreduce", x, np.empty(8), "sum"), "op 'sum' is not an MPI.Op"),
    ]
    for call, message in cases:
        with pytest.raises(DirectcollError, match=re.escape(message)) as info:
            call()
        assert "\n" not in str(info.value)


@needs_mpi
def test_mpi4py_style_calls_equal_the_mpi_library_s_collectives():
    # IN_PLACE for all four collectives, buffer specifications, every op, recvcounts: as mpi4py programs call them
    proc = mpirun(2, str(SCRIPTS / "mpi4py_style.py"), timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(results) >= 19 and all(results.values()), results


BLOCK = "import sys; sys.modules[{name!r}] = None; "  # makes `import name` fail as if it were not installed


def _without(name: str, code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-c", BLOCK.format(name=name) + code], capture_output=True, text=True,
                          timeout=120, env=env)


@pytest.mark.parametrize("what, code, status, line", [
    ("the MPI executor", "import directcoll.runtime.mpi", 1,
     "MissingDependencyError: directcoll.runtime.mpi needs MPI: pip install 'directcoll[mpi]'"),
    ("directcoll run", "from directcoll.cli.main import main; sys.exit(main(['run', '--topology', 'ring:2', "
     "'--sizes', '8B']))", 2, "directcoll: error: directcoll run needs MPI: pip install 'directcoll[mpi]'"),
    ("a rank of directcoll run", "from directcoll.runtime.worker import main; sys.exit(main(['--topology', "
     "'ring:2', '--algorithms', 'ring', '--sizes', '8B', '--json-out', '/dev/null']))", 3,
     "directcoll run: error: rank 0: directcoll run needs MPI: pip install 'directcoll[mpi]'"),
    ("the selftest", "import runpy; runpy.run_module('directcoll.runtime.selftest', run_name='__main__')", 2,
     "selftest: error: the selftest needs MPI: pip install 'directcoll[mpi]'"),
])
def test_without_mpi4py_every_entry_point_names_the_mpi_extra(what, code, status, line):
    proc = _without("mpi4py", code)
    assert proc.returncode == status, (what, proc.stdout, proc.stderr)
    assert line in proc.stderr, (what, proc.stderr)
    if status != 1:  # the commands print one line, no traceback
        assert proc.stderr.strip().count("\n") == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_without_torch_the_torch_executor_names_the_torch_extra():
    proc = _without("torch", "import directcoll.runtime.torch_dist")
    assert proc.returncode == 1
    assert "directcoll.runtime.torch_dist needs torch: pip install 'directcoll[torch]'" in proc.stderr


def test_runtime_doctests():
    import doctest

    import directcoll.runtime

    assert doctest.testmod(directcoll.runtime).failed == 0


# -- all-to-all ----------------------------------------------------------------------------------------------------


def run_in_threads(schedule, sends: list[np.ndarray]) -> list[np.ndarray]:
    """The executor's all-to-all on every rank at once, one thread per rank, messages through queues."""
    boxes: dict = {}
    lock = threading.Lock()

    def box(key) -> queue.Queue:
        with lock:
            return boxes.setdefault(key, queue.Queue())

    outs = [np.empty_like(x) for x in sends]
    errors = []

    def rank_main(r: int) -> None:
        def exchange(t, to_send, to_recv):
            for peer, buf in to_send:
                box((r, peer, t)).put(buf.copy())
            for peer, buf in to_recv:
                buf[:] = box((peer, r, t)).get(timeout=10)

        try:
            executor.alltoall(sends[r], outs[r], schedule=schedule, rank=r, nranks=len(sends), exchange=exchange)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=rank_main, args=(r,)) for r in range(len(sends))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]
    return outs


def mpi_alltoall(sends: list[np.ndarray]) -> list[np.ndarray]:
    """MPI_Alltoall's definition: rank j receives part j of every rank's sendbuf, in rank order."""
    n = len(sends)
    parts = [np.split(x, n) for x in sends]
    return [np.concatenate([parts[i][j] for i in range(n)]) for j in range(n)]


def alltoall_schedules(n: int) -> list:
    return [build("direct", f"ring:{n}", "alltoall"), relayed_alltoall(n, 1), relayed_alltoall(n, 2),
            ring_alltoall(n, 1), ring_alltoall(n, 3)]


@pytest.mark.parametrize("n", [2, 3, 5])
def test_alltoall_programs_deliver_every_part_exactly(n):
    # relayed pieces at 1/3 and 2/3 of a block, pieces spanning several pairs' blocks: every element arrives
    # where MPI_Alltoall puts it, for part sizes that round those ends every way (1 element: empty pieces)
    for schedule in alltoall_schedules(n):
        assert verify(schedule).ok
        for m in (1, 2, 3, 5, 7, 16):
            for dtype in executor.DTYPES:
                sends = [(np.arange(n * m) + 1000 * r).astype(dtype) for r in range(n)]
                got = run_in_threads(schedule, sends)
                for r, (ours, native) in enumerate(zip(got, mpi_alltoall(sends), strict=True)):
                    assert ours.dtype == dtype and np.array_equal(ours, native), (schedule, m, r)


def test_alltoall_with_scratch_displaced_pieces_and_the_diagonal_in_the_schedule():
    # every rank stages each outgoing block in a scratch block (a displaced local copy), sends it from there in two
    # halves that land at the pair's coordinate, and round-trips its own diagonal block through its neighbour
    n = 4
    b = ScheduleBuilder("alltoall", n, n * n, denominator=2)
    for i in range(n):
        for j in range(n):
            x, scratch = (i * n + j) * 2, (n * n + j) * 2
            if i == j:
                b.add(0, i, (i + 1) % n, COPY, x, x + 2)
                b.add(1, (i + 1) % n, i, COPY, x, x + 2)
                continue
            b.add(0, i, i, COPY, x, x + 2, scratch - x)
            b.add(1, i, j, COPY, scratch, scratch + 1, x - scratch)
            b.add(2, i, j, COPY, scratch + 1, scratch + 2, x - scratch)
    schedule = b.build(nscratch=n)
    assert verify(schedule).ok
    for m in (1, 3, 8):
        sends = [(np.arange(n * m) + 1000 * r).astype(np.int32) for r in range(n)]
        assert all(np.array_equal(ours, native) for ours, native in
                   zip(run_in_threads(schedule, sends), mpi_alltoall(sends), strict=True))
        # scratch: the N-1 blocks a rank stages; relay: its neighbour's diagonal block
        assert [p.work_length for p in compile_programs(schedule, n * m)] == [2 * n * m + n * m] * n


def test_alltoall_work_buffer_is_send_receive_and_relayed_blocks_only():
    n, m = 8, 12
    direct = compile_programs(build("direct", f"ring:{n}", "alltoall"), n * m)
    assert [p.work_length for p in direct] == [2 * n * m] * n  # not the N^2 m of the whole coordinate
    for k in (1, 2):
        schedule = relayed_alltoall(n, k)
        for r, prog in enumerate(compile_programs(schedule, n * m)):
            relays = {(b // 3) for i in range(schedule.num_transfers) if schedule.dst[i] == r
                      for b in schedule.piece_start[schedule.piece_offsets[i]:schedule.piece_offsets[i + 1]]}
            relays = {b for b in relays if b // k // n != r and b // k % n != r}  # neither sent nor received by r
            assert prog.work_length == 2 * n * m + len(relays) * m // k
    # a piece of pairs (i, r), (i, r+1), ... sent to rank r is cut in two there (r's receive part, then the
    # blocks it relays), however many blocks it spans: cut at every block boundary, merged where contiguous
    ring = ring_alltoall(4, 3)
    ranges = [len(r) for p in compile_programs(ring, 4 * 5) for st in p.steps for _, r in st.sends]
    assert len(ranges) == ring.num_transfers and sorted(set(ranges)) == [1, 2]


def test_alltoall_fractional_ends_round_alike_on_every_rank():
    n = 3
    s = relayed_alltoall(n, 1)  # every block cut at 1/3 or 2/3; the first piece relayed, the second direct
    for m in (1, 2, 4, 5):
        count = n * m
        assert np.array_equal(boundaries(s, count), np.arange(n * n + 1) * m)  # the coordinate, never allocated
        programs = compile_programs(s, count)

        def size(ranges):
            return int((ranges[:, 1] - ranges[:, 0]).sum())

        # the two rounded pieces of every block tile its m elements exactly
        assert sum(size(r) for p in programs for _, r in p.steps[0].sends) == n * (n - 1) * m
        for p in programs:  # a relay forwards exactly what it received into its relay blocks (after 2 count)
            relayed = sum(int(b - a) for _, r, dst, _ in p.steps[0].recvs
                          for (a, b), d in zip(r, dst, strict=True) if d >= 2 * count)
            forwarded = sum(size(r) for st in p.steps[1:] for _, r in st.sends)
            assert relayed == forwarded and (relayed > 0 or m == 1)
            # it keeps the two blocks of the pairs between the other ranks whole (m = 1: blocks of one element,
            # and a piece that rounds to nothing is neither sent nor kept)
            assert p.work_length == 2 * count + (2 * m if m > 1 else forwarded)


def test_alltoall_refusals_come_before_any_message():
    pytest.importorskip("mpi4py")
    from directcoll.runtime import mpi as run

    a2a = build("direct", "ring:4", "alltoall")
    b = ScheduleBuilder("alltoall", 4, 16)
    b.add(0, [0, 1], [1, 1], [COPY, REDUCE], [1, 0], [2, 1], [0, 4])
    reducing = b.build()
    x = np.arange(8.0)
    comm = FakeComm(4, 1)
    cases = [
        (lambda: run.alltoall(comm, x, np.empty(8), schedule=build("swing", "torus:2x2")), "not a alltoall"),
        (lambda: run.allreduce(comm, x, np.empty(8), schedule=a2a), "is a alltoall, not a allreduce"),
        (lambda: run.alltoall(comm, x, np.empty(8), schedule=build("direct", "ring:3", "alltoall")),
         "for 3 ranks"),
        (lambda: run.alltoall(comm, x, np.empty(12), schedule=a2a), "sendbuf has 8 elements, recvbuf 12"),
        (lambda: run.alltoall(comm, np.arange(6.0), np.empty(6), schedule=a2a), "4 equal"),
        (lambda: run.alltoall(comm, x, np.empty(8, np.float32), schedule=a2a), "share one dtype"),
        (lambda: run.alltoall(comm, x.astype(np.int16), np.empty(8, np.int16), schedule=a2a), "one dtype of"),
        (lambda: run.alltoall(comm, x, np.empty(8), schedule=reducing), "an all-to-all only copies"),
    ]
    for call, message in cases:
        with pytest.raises(DirectcollError, match=re.escape(message)):
            call()


@needs_mpi
def test_directcoll_run_alltoall_defaults_to_direct_and_matches_mpi(capsys):
    code = main(["run", "--topology", "ring:3", "--collective", "alltoall", "--sizes", "24B,3KiB", "--repeat", "1",
                 "--json"])
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["collective"] == "alltoall" and data["ranks"] == 3
    assert [row["algorithm"] for row in data["results"]] == ["direct", "direct"]
    assert all(row["correct"] is True and row["native_time_s"] > 0 for row in data["results"])
