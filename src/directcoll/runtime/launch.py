"""Launching the ranks of ``directcoll run``: an outer deadline, no process left behind, one line on failure.

:func:`run_job` starts ``mpiexec`` in a session of its own with its output going to a log file, and watches the
ranks' status files (:mod:`directcoll.runtime.progress`). The job fails when

* ``mpiexec`` exits with a non-zero status (a rank died, or aborted after an error),
* a rank reports an error or its process is gone, and MPI has not ended the job :data:`SETTLE_S` later, or
* no rank made progress for ``timeout`` + ``grace`` seconds while none was computing (a hang the ranks' own
  deadlines did not catch: a rank stopped inside MPI_Init, a launcher that never starts them). A rank that has
  not published its status yet counts as computing for ``startup`` seconds after the launch (a loaded machine
  may take long to start Python and import numpy), as does one loading MPI's libraries.

Whatever ends the job, every process of it is killed: MPICH's launcher puts its proxies and the ranks in sessions
of their own, so the launcher's process group alone is not enough; its descendants are found in ``/proc`` (where
there is one) and killed by id. A failure becomes one line that names the rank and where it was ("rank 1 was
killed (signal 9) at step 2 of swing:latency allreduce of 1 KiB (repetition 3 of 5)"), and the log is kept for
the details.

Source: docs/runtime.md, "Failures"; MPICH's Hydra launcher (``mpiexec``, its BAD TERMINATION report); Linux
proc(5) for the process tree.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as tmp:
...     run_job(["true"], status_dir=tmp, nranks=0, timeout=5.0)  # a "job" with no ranks that succeeds
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from directcoll.errors import DirectcollError
from directcoll.runtime import MPI_EXTRA
from directcoll.runtime.progress import BUSY, DONE, FAILED, Status, read_status, status_path

#: memory of one rank's process before its buffers (Python, numpy, mpi4py and MPI: about 77 MiB measured)
RANK_PROCESS_BYTES = 80 * 2**20
#: the outer limit is the ranks' timeout plus this: no rank progressed for that long (and none is computing)
GRACE_S = 2.0
#: a rank that has not published its status yet (Python starts, imports numpy) counts as computing this long
STARTUP_S = 60.0
#: after a rank failed or its process is gone, how long MPI may take to end the job itself before it is killed
SETTLE_S = 0.5
#: how often the launcher looks at the job
POLL_S = 0.02
#: busy share of the cores above which a timed call is reported as CPU-bound (:func:`cpu_ticks`; docs/testbed.md,
#: "Choosing rates")
CPU_BOUND = 0.9
#: how often it looks for the job's processes in /proc (the process tree changes only at start)
SCAN_S = 0.25


class RunError(DirectcollError):
    """The MPI job of ``directcoll run`` failed; the message names the rank and where it was. ``log``: the file
    that keeps the job's output (MPI's messages, tracebacks), or None.

    Raises:
        Nothing: an exception class; raised by :func:`run_job`.

    Source: docs/runtime.md, "Failures".

    >>> e = RunError("rank 1 died at step 2 of ring allreduce of 1 KiB", log=None)
    >>> isinstance(e, DirectcollError), e.log
    (True, None)
    """

    def __init__(self, message: str, log: str | None = None) -> None:
        super().__init__(message + (f" (MPI's output: {log})" if log else ""))
        self.log = log


def run_job(cmd: list[str], *, status_dir: str, nranks: int, timeout: float, grace: float = GRACE_S,
            startup: float = STARTUP_S, env: dict | None = None) -> None:
    """Run the MPI job ``cmd`` whose ``nranks`` ranks publish their progress to ``status_dir``; return when it
    succeeded. Its output goes to ``status_dir``/mpiexec.log, kept elsewhere when the job fails.

    Args:
        cmd: the launcher's command line (``mpiexec -n N python -m directcoll.runtime.worker ...``).
        status_dir: the ranks' status files (:mod:`directcoll.runtime.progress`) and the log.
        nranks: ranks that publish a status; timeout: the ranks' own deadline in s; grace: s added to it for the
            outer limit; startup: s a rank may take to publish its first status; env: the job's environment.

    Returns:
        None once every rank finished done and the launcher exited 0.

    Raises:
        DirectcollError: the launcher cannot be started.
        RunError: the job failed or hung (see the module docstring); one line naming the rank and the step.

    Source: docs/runtime.md, "Failures".

    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     try:
    ...         run_job(["sh", "-c", "echo boom; exit 3"], status_dir=tmp, nranks=0, timeout=5.0)
    ...     except RunError as exc:
    ...         print(str(exc).split(" (MPI's")[0])
    ...         os.remove(exc.log)
    mpiexec exited with status 3: boom
    """
    log_path = os.path.join(status_dir, "mpiexec.log")
    with open(log_path, "wb") as log:
        try:
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True, env=env)
        except OSError as exc:
            raise DirectcollError(f"cannot start {cmd[0]!r} ({exc.strerror}): install MPI ({MPI_EXTRA}) or pass "
                                  "--mpiexec") from None
    tree = _Tree(proc.pid)
    watch = None
    try:
        watch = _watch(proc, tree, status_dir, nranks, timeout + grace, startup)
    finally:
        tree.kill()
        proc.wait()
    if watch.reason is None and proc.returncode == 0 and not watch.unfinished():
        return
    try:
        with open(log_path, "rb") as fh:
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        text = ""
    message = diagnose(watch, text, proc.returncode, timeout)
    raise RunError(message, _keep(log_path) if text.strip() else None)


class _Watch:
    """What the launcher saw: the reason it stopped the job (None: the job ended by itself), the last status of
    every rank, the ranks whose process it last saw stopped, and those it saw gone (or a zombie) before they were
    done and before any rank reported a failure (after that, MPI may be killing them)."""

    def __init__(self, nranks: int) -> None:
        self.reason: str | None = None
        self.statuses: list[Status | None] = [None] * nranks
        self.stopped: set[int] = set()
        self.gone: set[int] = set()
        self.first_gone: set[int] = set()  # gone at the first look that found any: one, unless they ended together
        self.silent_s = 0.0

    def look(self) -> None:
        """Note the state of the ranks' processes (those on this host)."""
        failed = any(s is not None and s.state == FAILED for s in self.statuses)
        for rank, state in _process_states(self.statuses).items():
            if state in ("T", "t"):
                self.stopped.add(rank)
            elif state in ("R", "S", "D"):
                self.stopped.discard(rank)  # running again (a debugger let it go)
            elif state in ("Z", "X", "exiting", "gone") and not failed and self.statuses[rank].state != DONE:
                self.gone.add(rank)
        if not self.first_gone:
            self.first_gone = set(self.gone)

    def unfinished(self) -> bool:
        """Whether a rank that published its status did not end done (mpiexec may exit 0 when one was killed)."""
        return bool(self.gone) or any(s is not None and s.state != DONE for s in self.statuses)


def _watch(proc, tree: _Tree, status_dir: str, nranks: int, limit: float, startup: float) -> _Watch:
    w = _Watch(nranks)
    exits = _Exits()
    try:
        return _watch_loop(proc, tree, status_dir, nranks, limit, startup, w, exits)
    finally:
        exits.close()


def _watch_loop(proc, tree: _Tree, status_dir: str, nranks: int, limit: float, startup: float, w: _Watch,
                exits: _Exits) -> _Watch:
    paths = [status_path(status_dir, r) for r in range(nranks)]
    host = socket.gethostname()
    beats: tuple = ()
    start = last_change = next_scan = time.monotonic()
    trouble_since = None
    while True:
        finished = proc.poll() is not None
        w.statuses = [read_status(p, r) or w.statuses[r] for r, p in enumerate(paths)]
        now = time.monotonic()
        w.look()  # also once the job has finished: mpiexec may exit 0 when a rank was killed
        if finished:
            return w
        for s in w.statuses:
            if s is not None and s.pid > 0 and s.host == host:
                exits.add(s.pid)
        if now >= next_scan:
            tree.scan()
            next_scan = now + SCAN_S
        current = tuple(s.beat if s else -1 for s in w.statuses)
        if current != beats:
            beats, last_change = current, now
        trouble = w.gone or any(s is not None and s.state == FAILED for s in w.statuses)
        if trouble and trouble_since is None:
            trouble_since = now
        if trouble_since is not None and now - trouble_since >= SETTLE_S:
            w.reason = "failed"
            return w
        computing = any(s is not None and s.state == BUSY and r not in w.stopped for r, s in enumerate(w.statuses))
        computing = computing or (None in w.statuses and now - start < startup)
        if not computing and now - last_change > limit and trouble_since is None:
            w.reason, w.silent_s = "no progress", now - last_change
            return w
        exits.sleep(POLL_S)


class _Exits:
    """Wakes the launcher as soon as a rank's process (on this host) ends, instead of at its next look: when a rank
    dies, MPICH's launcher kills the others a moment later, and only the first one gone names the culprit."""

    def __init__(self) -> None:
        self.fds: dict[int, int] = {}  # pid -> pidfd (-1: none)
        self.poller = select.poll()

    def add(self, pid: int) -> None:
        if pid in self.fds or not hasattr(os, "pidfd_open"):
            return
        try:
            fd = os.pidfd_open(pid)
        except OSError:  # gone already, or pidfds are not supported: the next look finds it
            self.fds[pid] = -1
            return
        self.fds[pid] = fd
        self.poller.register(fd, select.POLLIN)

    def sleep(self, seconds: float) -> None:
        """Sleep ``seconds``, or less if a watched process ends (it is then watched no more)."""
        if not any(fd >= 0 for fd in self.fds.values()):
            time.sleep(seconds)
            return
        for fd, _ in self.poller.poll(seconds * 1000):
            self.poller.unregister(fd)

    def close(self) -> None:
        for fd in self.fds.values():
            if fd >= 0:
                os.close(fd)
        self.fds.clear()


def diagnose(watch: _Watch, log: str, returncode: int | None, timeout: float) -> str:
    """One line: which rank made the job fail and where it was, from the ranks' statuses, the state of their
    processes and MPICH's report of a bad termination in ``log``.

    Checked in order: a rank that died (the first seen gone, or the one MPICH names; when several ended between two
    looks and MPICH names none, all of them, blaming none), a stopped rank, a rank another
    one waited on in vain, a rank that reported a failure, a hang nobody reported, else the launcher's status and
    the last line of its log.

    Returns:
        The line (no trailing period).

    Raises:
        Nothing: works on what was observed.

    Source: docs/runtime.md, "Failures"; MPICH's Hydra BAD TERMINATION report (``PID ... RUNNING AT``,
    ``EXIT CODE``, ``EXIT STRING``).
    """
    statuses = watch.statuses
    known = {s.rank: s for s in statuses if s is not None}

    def where(rank: int) -> str:
        s = known.get(rank)
        return s.where() if s else "its start (it never reported)"

    # 1. a rank that died: the one the launcher saw gone first (MPICH then kills the others, and may report one
    # of those), else the one MPICH names by its pid (among those seen gone first, when they ended together)
    by_pid = {s.pid: s.rank for s in known.values()}
    terminations = [(by_pid[pid], how) for pid, how in _bad_terminations(log) if pid in by_pid]
    first = sorted(watch.first_gone - watch.stopped)
    if len(first) == 1:
        how = dict(terminations).get(first[0], "died")
        return f"rank {first[0]} {how} at {where(first[0])}"
    for rank, how in terminations:
        if len(first) > 1 and how.startswith("was killed (signal 9"):
            continue  # MPICH kills the others with SIGKILL too: among ranks that ended together it names no culprit
        if known[rank].state not in (FAILED, DONE) and (not first or rank in first):
            return f"rank {rank} {how} at {where(rank)}"
    gone = first or sorted(watch.gone - watch.stopped)
    if len(gone) == 1:
        return f"rank {gone[0]} died at {where(gone[0])}"
    if gone:  # they ended between two looks and MPICH named none of them: which one died first is unknown
        ranks = ", ".join(str(r) for r in gone[:4]) + (f", ... ({len(gone)} ranks)" if len(gone) > 4 else "")
        return (f"ranks {ranks} ended together, one of them first (MPICH then ends the others; the launcher saw "
                f"none alone): " + "; ".join(f"rank {r} at {where(r)}" for r in gone[:4]))
    failed = [s for s in known.values() if s.state == FAILED]
    waited = {}  # rank -> (the rank that gave up waiting on it)
    for s in failed:
        for p in s.waiting_on.split(","):
            if p.strip().isdigit():
                waited.setdefault(int(p), s.rank)
    # 2. a stopped rank
    for rank in sorted(watch.stopped):
        if rank in known:
            by = f"; rank {waited[rank]} waited {timeout:g} s for it" if rank in waited else ""
            return f"rank {rank} stopped responding at {where(rank)} (its process is stopped){by}"
    # 3. a rank another one waited on in vain, that did not fail itself
    for rank, by in sorted(waited.items()):
        if rank not in known or known[rank].state != FAILED:
            return f"rank {rank} stopped responding at {where(rank)}; rank {by} waited {timeout:g} s for it"
    # 4. a rank that failed
    if failed:
        s = min(failed, key=lambda s: s.rank)
        return f"rank {s.rank} failed at {where(s.rank)}: {s.message}"
    # 5. a hang nobody reported
    if watch.reason == "no progress":
        stuck = "; ".join(f"rank {r} at {where(r)}" for r in range(min(len(statuses), 4)))
        more = f"; ... ({len(statuses)} ranks)" if len(statuses) > 4 else ""
        return (f"no rank made progress for {watch.silent_s:.1f} s (--timeout {timeout:g} s + {GRACE_S:g} s): "
                f"{stuck}{more}")
    lines = [ln.strip() for ln in log.splitlines() if ln.strip() and not ln.lstrip().startswith("=")]
    last = f": {lines[-1]}" if lines else ""
    return f"mpiexec exited with status {returncode}{last}"


_PID = re.compile(r"PID\s+(\d+)\s+RUNNING AT")
_CODE = re.compile(r"EXIT CODE:\s*(-?\d+)")
_SIGNAL = re.compile(r"EXIT STRING:\s*([^\n(]*)\(signal (\d+)\)")


def _bad_terminations(log: str) -> list[tuple[int, str]]:
    """(pid, "was killed (signal 9, Killed)" or "exited with status 1") of each process MPICH's launcher reports
    as a bad termination."""
    out = []
    for block in log.split("BAD TERMINATION")[1:]:
        pid = _PID.search(block)
        if not pid:
            continue
        sig, code = _SIGNAL.search(block), _CODE.search(block)
        if sig:
            how = f"was killed (signal {sig.group(2)}, {sig.group(1).strip()})"
        elif code:
            how = f"exited with status {code.group(1)}"
        else:
            how = "died"
        out.append((int(pid.group(1)), how))
    return out


def _keep(path: str) -> str | None:
    try:
        fd, kept = tempfile.mkstemp(prefix="directcoll-run-", suffix=".log")
        os.close(fd)
        shutil.copyfile(path, kept)
        return kept
    except OSError:
        return None


# -- processes ------------------------------------------------------------------------------------------------------


_PF_EXITING = 0x4  # the kernel's task flag, set as do_exit() starts: before the process closes its files


def _stat(pid: int) -> tuple[str, int, int, int, int] | None:
    """(state, ppid, pgid, sid, start time) of process ``pid`` from /proc, or None. The state is "exiting" (not the
    kernel's letter) once the process has begun to exit."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read().decode("ascii", "replace")
    except OSError:
        return None
    return _parse_stat(data)


def _parse_stat(data: str) -> tuple[str, int, int, int, int]:
    fields = data[data.rindex(")") + 2:].split()
    state = fields[0]
    if state not in "ZX" and int(fields[6]) & _PF_EXITING:
        # a killed rank closes its pipes before it becomes a zombie: MPICH's launcher may see that, kill another
        # rank, and that one may be a zombie first; the exiting one ended first
        state = "exiting"
    return state, int(fields[1]), int(fields[2]), int(fields[3]), int(fields[19])


def _process_states(statuses) -> dict[int, str]:
    """rank -> process state letter ("R", "S", "T", "Z", ...; "exiting", "gone") for the ranks on this host."""
    host = socket.gethostname()
    out = {}
    for s in statuses:
        if s is not None and s.pid > 0 and s.host == host:
            st = _stat(s.pid)
            out[s.rank] = st[0] if st else "gone"
    return out


class _Tree:
    """The processes of the job: the launcher (the leader of its own session) and every descendant seen, each with
    its start time so that a reused pid is never killed."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.seen: dict[int, int] = {}  # pid -> start time
        st = _stat(root)
        if st:
            self.seen[root] = st[4]

    def scan(self) -> None:
        """Add the current descendants of every process seen (and of the root)."""
        try:
            pids = [int(d) for d in os.listdir("/proc") if d.isdigit()]
        except OSError:
            return
        stats = {p: st for p in pids if (st := _stat(p)) is not None}
        sessions = {stats[p][3] for p in self.seen if p in stats and stats[p][4] == self.seen[p]}
        sessions.add(self.root)
        grew = True
        while grew:
            grew = False
            for p, st in stats.items():
                if p not in self.seen and (st[1] in self.seen or st[1] == self.root or st[3] in sessions):
                    self.seen[p] = st[4]
                    sessions.add(st[3])
                    grew = True

    def alive(self) -> list[int]:
        """The processes seen that still run (not zombies) and are still the same processes."""
        out = []
        for p, start in self.seen.items():
            st = _stat(p)
            if st and st[4] == start and st[0] not in ("Z", "X"):
                out.append(p)
        return out

    def kill(self, wait_s: float = 3.0) -> list[int]:
        """SIGKILL the whole job; return the pids still alive ``wait_s`` later (none, normally)."""
        try:
            os.killpg(self.root, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        end = time.monotonic() + wait_s
        while True:
            self.scan()
            left = [p for p in self.alive() if p != self.root]
            for p in left:
                try:
                    os.kill(p, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            if not left or time.monotonic() > end:
                return left
            time.sleep(0.01)


def cpu_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all cores since boot, from the first line of /proc/stat; the busy share
    between two readings says whether a run was CPU-bound.

    Returns:
        (busy, total): total counts every state, busy all but idle and iowait.

    Raises:
        Nothing: (0, 0) where /proc/stat cannot be read.

    Source: proc(5) (/proc/stat: user nice system idle iowait irq softirq steal).

    >>> busy, total = cpu_ticks()
    >>> 0 <= busy <= total
    True
    """
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return 0, 0
    return sum(fields) - fields[3] - fields[4], sum(fields)
