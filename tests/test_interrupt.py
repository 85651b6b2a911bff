"""Ctrl-C: one line on stderr, exit status 130, no child process left behind (a process inherits the run's tag
in its environment, so a survivor is found wherever it was reparented)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from directcoll.simulate.packet import available as ns3_available


def _tagged() -> list[str]:
    """Processes whose environment holds a tag of this module."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            env = Path(f"/proc/{d}/environ").read_bytes()
        except OSError:
            continue
        if b"DIRECTCOLL_INTERRUPT_TAG=" in env:
            try:
                out.append(Path(f"/proc/{d}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200])
            except OSError:
                continue
    return out


def interrupt(argv: list[str], after: float, tmp_path: Path, ready: str | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m directcoll ARGV``, send SIGINT ``after`` seconds in (or once stderr shows ``ready``), and
    return the finished process with its stderr."""
    env = {**os.environ, "DIRECTCOLL_INTERRUPT_TAG": uuid.uuid4().hex, "COLUMNS": "80"}
    err = tmp_path / "stderr.txt"
    with open(err, "w") as f:
        proc = subprocess.Popen([sys.executable, "-m", "directcoll", *argv], stdout=subprocess.DEVNULL, stderr=f,
                                env=env, cwd=tmp_path)
        deadline = time.monotonic() + 120
        while ready and ready not in err.read_text() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        time.sleep(after)
        assert proc.poll() is None, f"finished before the interrupt: {err.read_text()}"
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    return subprocess.CompletedProcess(argv, proc.returncode, "", err.read_text())


def check(done: subprocess.CompletedProcess) -> None:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 130, done.stderr
    assert lines and lines[-1] == "directcoll: interrupted", done.stderr
    assert "Traceback" not in done.stderr
    deadline = time.monotonic() + 30  # a hang guard: helpers (Dask's, multiprocessing's) notice their parent left
    while _tagged() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _tagged() == [], "child processes survived the interrupt"


@pytest.mark.parametrize("after", [1.0, 3.0])  # while numpy and our modules load; while it compares
def test_compare_interrupted_while_loading_and_while_running(tmp_path, after):
    check(interrupt(["compare", "torus:128x128"], after, tmp_path))


@pytest.mark.slow
def test_sweep_interrupted(tmp_path):
    spec = tmp_path / "grid.toml"
    spec.write_text('kind = "compare"\ntopology = ["torus:128x128", "torus:128x64", "torus:64x128", "torus:96x96"]\n'
                    'collective = "allreduce"\nsizes = "32B..512MiB"\n')
    # a local Dask cluster: its worker processes must go too
    done = interrupt(["sweep", str(spec), "-o", str(tmp_path / "out.parquet"), "--workers", "1"], 1.5, tmp_path,
                     ready="cells (starting)")
    check(done)


@pytest.mark.packet
@pytest.mark.skipif(not ns3_available(), reason="ns-3 is not installed (apt-get install libns3-dev libgsl-dev)")
def test_packet_model_interrupted(tmp_path):
    check(interrupt(["compare", "torus:8x8", "--model", "packet"], 3.0, tmp_path))


@pytest.mark.mpi
@pytest.mark.skipif(shutil.which("mpiexec", path=str(Path(sys.executable).parent)) is None,
                    reason="no mpiexec beside this Python (pip install -e '.[mpi]')")
def test_run_interrupted_leaves_no_rank(tmp_path):
    check(interrupt(["run", "ring:2", "--engine", "python", "--sizes", "64MiB", "--repeat", "1000"], 4.0, tmp_path))
