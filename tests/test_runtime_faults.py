"""Runtime faults end ``directcoll run`` cleanly: a stopped or killed rank ends the job within --timeout + 5 s with
one line naming the rank and the step, and no process of the job is left; below-minimum options are refused."""

import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from directcoll.cli.main import main
from directcoll.runtime import launch
from directcoll.runtime.launch import RunError, _parse_stat, _Watch, diagnose, run_job
from directcoll.runtime.progress import STARTING, WAITING, Progress, read_status, status_path

pytestmark = pytest.mark.mpi

MPIEXEC = shutil.which("mpiexec")
needs_mpi = pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not installed (pip install 'directcoll[mpi]')")
SRC = str(Path(__file__).resolve().parents[1] / "src")
TIMEOUT = 2.0


def _stat(pid: int):
    """(state, ppid, start time) of a process, or None once it is gone."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = data[data.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[19])


def _descendants(root: int) -> dict[int, int]:
    """pid -> start time of every process below ``root``."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (st := _stat(int(entry))):
            children.setdefault(st[1], []).append(int(entry))
    out, todo = {}, [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            if st := _stat(pid):
                out[pid] = st[2]
                todo.append(pid)
    return out


def _running(procs: dict[int, int]) -> list[int]:
    """The processes of ``procs`` that still run (the same process, not a zombie)."""
    return [pid for pid, start in procs.items() if (st := _stat(pid)) and st[2] == start and st[0] not in "ZX"]


def _status_dir(procs) -> str | None:
    for pid in procs:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--status-dir" in argv:
            return argv[argv.index(b"--status-dir") + 1].decode()
    return None


def _in_timed_step(status) -> bool:
    return status.state == WAITING and status.what == "step" and status.rep >= 1 and status.step >= 0


def _fault(sig: int, ready=_in_timed_step, options=("--sizes", "1KiB", "--repeat", "1000000", "--no-compare-native")
           ) -> tuple[
        float, float, subprocess.CompletedProcess, dict[int, int]]:
    """Start ``directcoll run`` on 2 ranks, send ``sig`` to rank 1 once ``ready(its status)`` (by default: it is in
    a timed step), and return (seconds from the signal to the end, seconds in all, the finished process, every
    process of the job that was seen)."""
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "directcoll.cli.main", "run", "--topology", "ring:2",
                             "--algorithms", "swing:latency", *options, "--timeout", str(TIMEOUT)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    seen: dict[int, int] = {}
    try:
        status = None
        while time.monotonic() - t0 < 60:
            seen.update(_descendants(proc.pid))
            directory = _status_dir(seen)
            status = directory and read_status(status_path(directory, 1), 1)
            if status and ready(status):
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.01)
        assert status and ready(status), "rank 1 never got ready for the signal"
        seen.update(_descendants(proc.pid))
        t_signal = time.monotonic()
        os.kill(status.pid, sig)
        out, err = proc.communicate(timeout=TIMEOUT + 30)
        t_end = time.monotonic()
    finally:
        if proc.poll() is None:  # the test failed: end what it started
            for pid in _running({**seen, **_descendants(proc.pid)}):
                os.kill(pid, signal.SIGKILL)
            proc.kill()
            proc.wait()
    return t_end - t_signal, t_end - t0, subprocess.CompletedProcess(proc.args, proc.returncode, out, err), seen


def _one_line(err: str) -> str:
    # progress on stderr is allowed (a fresh cache builds libdirectcoll first: "directcoll: building ..."); the
    # error itself is one line
    lines = [line for line in err.strip().splitlines() if not line.startswith("directcoll: building ")]
    assert len(lines) == 1 and lines[0].startswith("directcoll: error: "), err
    log = re.search(r"\(MPI's output: (\S+)\)$", lines[0])
    if log:  # the job's output is kept for the details; the test cleans it up
        Path(log.group(1)).unlink()
    return lines[0]


def _no_process_left(seen: dict[int, int]) -> None:
    deadline = time.monotonic() + 2  # killed processes may take a moment to be reaped
    while _running(seen) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(seen), [Path(f"/proc/{p}/cmdline").read_bytes() for p in _running(seen)]


@needs_mpi
@pytest.mark.parametrize("sig, says", [(signal.SIGSTOP, r"rank 1 stopped responding at "),
                                       (signal.SIGKILL, r"rank 1 (was killed \(signal 9, Killed\)|died) at ")])
def test_a_stopped_or_killed_rank_ends_the_run_in_time_with_one_line(sig, says, timings):
    for _ in range(3):
        after, total, proc, seen = _fault(sig)
        timings(f"run with rank 1 {signal.Signals(sig).name}: end {after:.2f} s after the signal", total)
        line = _one_line(proc.stderr)
        # where it was: in a step, or between two steps (at the start of a repetition, before its first step)
        where = r"(step \d+|the start) of swing:latency allreduce of 1KiB \(repetition \d+ of 1000000\)"
        # on a loaded machine MPICH can end rank 0 before the launcher looks: then both ended "together" and
        # the line names both, not rank 0 alone
        together = sig == signal.SIGKILL and line.startswith("directcoll: error: ranks 0, 1 ended together")
        assert proc.returncode == 2 and (re.search(says + where, line) or together), line
        timings(f"job end after the signal ({line[:40]})", after)
        assert len(seen) >= 3  # mpiexec, its proxy and the ranks were watched
        _no_process_left(seen)



@needs_mpi
@pytest.mark.parametrize("sig, says", [(signal.SIGSTOP, r"rank 1 stopped responding at "),
                                       (signal.SIGKILL, r"rank 1 (was killed \(signal 9, Killed\)|died) at ")])
def test_a_rank_stopped_or_killed_in_the_native_collective_ends_the_run_in_time(sig, says, timings):
    # the MPI library's own collective (timed for the comparison) has the deadline too: MPI_Allreduce had none.
    # 1000 repetitions last about 80 ms on a quiet machine: the test polls every 10 ms to catch rank 1 in one
    after, total, proc, seen = _fault(sig, lambda s: s.state == WAITING and s.what == "MPI Iallreduce" and s.rep >= 1,
                                      ("--sizes", "256KiB", "--repeat", "1000"))
    timings(f"run with rank 1 {signal.Signals(sig).name} in MPI_Iallreduce: end {after:.2f} s after the signal", total)
    line = _one_line(proc.stderr)
    where = r"MPI Iallreduce \(native allreduce of 256KiB\) \(repetition \d+ of 1000\)"
    # MPICH ends rank 0 with SIGKILL once rank 1 is gone: when the launcher sees both gone at once, the line names
    # both (MPICH's own report, SIGKILL for either, cannot tell which died first)
    together = sig == signal.SIGKILL and line.startswith("directcoll: error: ranks 0, 1 ended together")
    assert proc.returncode == 2 and (re.search(says + where, line) or together), line
    timings(f"job end after the signal ({line[:40]})", after)
    _no_process_left(seen)


@needs_mpi
def test_a_rank_stopped_in_mpi_init_ends_the_run_in_time(timings):
    # the other rank spins inside MPI_Init with no deadline of its own: the launcher's outer limit ends the job
    after, total, proc, seen = _fault(signal.SIGSTOP, lambda s: s.state == STARTING)
    timings(f"run with rank 1 SIGSTOP in MPI_Init: end {after:.2f} s after the signal", total)
    line = _one_line(proc.stderr)
    assert proc.returncode == 2 and "rank 1 stopped responding at MPI_Init (its process is stopped)" in line, line
    timings(f"job end after the signal ({line[:40]})", after)
    _no_process_left(seen)

def test_a_job_that_never_reports_is_killed_with_its_detached_children(tmp_path):
    # like MPICH's launcher, the job starts a child in a session of its own: killing the launcher's process
    # group alone would leave it running
    pids = tmp_path / "pids"
    script = ("import os, subprocess, sys, time; "
              "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], start_new_session=True); "
              f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{c.pid}}'); time.sleep(60)")
    with pytest.raises(RunError, match=r"no rank made progress for [\d.]+ s .*rank 0 at its start") as info:
        run_job([sys.executable, "-c", script], status_dir=str(tmp_path), nranks=1, timeout=0.5, grace=0.5,
                startup=0.5)
    assert "\n" not in str(info.value)
    started = [int(p) for p in pids.read_text().split()]
    assert len(started) == 2
    deadline = time.monotonic() + 2
    while any((st := _stat(p)) and st[0] not in "ZX" for p in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any((st := _stat(p)) and st[0] not in "ZX" for p in started)


def test_a_launcher_that_cannot_start_is_one_line(tmp_path, capsys):
    assert main(["run", "--topology", "ring:2", "--mpiexec", str(tmp_path / "no-such-mpiexec")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot start" in err and "--mpiexec" in err


@pytest.mark.parametrize("option, value, says", [
    ("--ranks", "0", "at least 1 rank"), ("--ranks", "-2", "at least 1 rank"),
    ("--repeat", "0", "at least 1 timed repetition"), ("--repeat", "-1", "at least 1 timed repetition"),
    ("--timeout", "0", "positive number of seconds"), ("--timeout", "-3", "positive number of seconds"),
    ("--timeout", "nan", "positive number of seconds"), ("--timeout", "inf", "positive number of seconds"),
    ("--sizes", "0B", "must be positive"), ("--algorithms", "", "comma list"), ("--algorithms", "swing,", "comma list"),
    ("--algorithms", "swnig", "unknown algorithm"), ("--algorithms", "swing:fast", "no variant 'fast'"),
])
def test_run_refuses_values_below_their_minimum_with_one_line(option, value, says, capsys):
    # refused before anything is launched: no MPI needed, and the default 8 ranks are never started
    assert main(["run", "--topology", "ring:2", option, value, "--mpiexec", "false"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("directcoll: error: ") and says in err, err


def test_run_refuses_sizes_over_the_memory_budget(capsys, monkeypatch):
    monkeypatch.setenv("DIRECTCOLL_MEMORY_BUDGET", "1GiB")
    assert main(["run", "--topology", "ring:2", "--sizes", "1GiB", "--mpiexec", "false"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "memory budget" in err



def test_the_rank_seen_gone_first_is_named_even_when_mpich_reports_another(tmp_path):
    # MPICH kills the other ranks when one dies and may report one of those: the launcher's own observation of the
    # first process gone wins; MPICH's report is used when it names that rank (or when nothing was seen)
    watch = _Watch(2)
    for rank in range(2):
        progress = Progress(str(tmp_path), rank)
        progress.set(WAITING, "step", "swing:latency allreduce of 1KiB", nsteps=1, rep=2, reps=5)
        progress.step(0)
        watch.statuses[rank] = read_status(status_path(str(tmp_path), rank), rank)
    pids = [s.pid for s in watch.statuses]  # this process for both; give them distinct pids as MPI would
    watch.statuses[1].pid = pids[1] + 1
    report = ("=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   PID {} RUNNING AT host\n=   EXIT CODE: 9\n"
              "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Killed (signal 9)\n")
    where = "at step 0 of swing:latency allreduce of 1KiB (repetition 2 of 5)"
    watch.gone = watch.first_gone = {1}
    assert diagnose(watch, report.format(watch.statuses[0].pid), 9, 3.0) == f"rank 1 died {where}"
    assert diagnose(watch, report.format(watch.statuses[1].pid), 9, 3.0) == (
        f"rank 1 was killed (signal 9, Killed) {where}")
    watch.gone = watch.first_gone = set()  # the launcher saw nothing: MPICH's report
    assert diagnose(watch, report.format(watch.statuses[0].pid), 9, 3.0) == (
        f"rank 0 was killed (signal 9, Killed) {where}")
    watch.gone = watch.first_gone = {0, 1}  # both gone at the first look, MPICH names neither: no rank is blamed
    line = diagnose(watch, "", 9, 3.0)
    assert line.startswith("ranks 0, 1 ended together, one of them first") and f"rank 1 {where}" in line, line
    # nor when it reports one of them killed by SIGKILL, the signal it ends the others with
    assert diagnose(watch, report.format(watch.statuses[0].pid), 9, 3.0) == line


def test_run_refuses_more_local_ranks_than_the_memory_budget_holds(capsys, monkeypatch):
    # each rank is a Python process: a million of them on this machine are refused before any is started
    monkeypatch.setenv("DIRECTCOLL_MEMORY_BUDGET", "8GiB")
    assert main(["run", "--topology", "torus:1000x1000", "--sizes", "8B", "--mpiexec", "false"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "memory budget" in err and "1000000 ranks" in err, err


def test_a_launcher_that_exits_0_while_a_rank_did_not_finish_fails(tmp_path):
    # MPICH's launcher can exit 0 when a rank is killed at the wrong moment: the ranks' statuses decide too
    script = (f"import os, sys; sys.path.insert(0, {SRC!r}); from directcoll.runtime.progress import Progress, "
              f"WAITING; p = Progress({str(tmp_path)!r}, 0); p.set(WAITING, 'step', 'swing:latency allreduce of 1KiB', "
              "nsteps=2, rep=1, reps=5); p.step(1); os._exit(0)")
    says = r"^rank 0 died at step 1 of swing:latency allreduce of 1KiB \(repetition 1 of 5\)"
    with pytest.raises(RunError, match=says):
        run_job([sys.executable, "-c", script], status_dir=str(tmp_path), nranks=1, timeout=5.0)


def test_a_rank_that_has_begun_to_exit_counts_as_gone():
    # a killed rank closes its pipes inside do_exit(), before it is a zombie: MPICH's launcher may then end the other
    # rank first, and the launcher must not take the other one for the first gone
    line = "4676 (python3 (x)) {} 4674 4674 4025 0 -1 {} 123 0 0 0 0 0 0 0 20 0 1 0 5752335 3133440 385"
    assert _parse_stat(line.format("R", 4194304))[0] == "R"
    assert _parse_stat(line.format("D", 4194304 | 0x4))[0] == "exiting"
    assert _parse_stat(line.format("Z", 4194304 | 0x4))[0] == "Z"
    assert _parse_stat(line.format("S", 4194304))[1:] == (4674, 4674, 4025, 5752335)


def test_the_launcher_takes_an_exiting_rank_for_the_first_gone(tmp_path, monkeypatch):
    watch = _Watch(2)
    for rank in range(2):
        Progress(str(tmp_path), rank).set(WAITING, "step", "swing:latency allreduce of 1KiB", nsteps=1, rep=2, reps=5)
        watch.statuses[rank] = read_status(status_path(str(tmp_path), rank), rank)
    monkeypatch.setattr(launch, "_process_states", lambda statuses: {0: "S", 1: "exiting"})
    watch.look()
    monkeypatch.setattr(launch, "_process_states", lambda statuses: {0: "Z", 1: "Z"})
    watch.look()
    assert watch.first_gone == {1} and watch.gone == {0, 1}
