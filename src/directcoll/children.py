"""Child processes that do not outlive their parent's interrupt: compilers, the ns-3 driver, SMPI runs.

``subprocess.run`` kills the child it started when the parent is interrupted, but not that child's own children
(``g++`` leaves ``cc1plus`` running; ``smpirun`` its simulated ranks). :func:`run` starts the child in a session of
its own and, on any exception while it runs (Ctrl-C's KeyboardInterrupt, a timeout), kills the whole process group
before re-raising.

Source: POSIX.1-2017 ``setsid`` and ``killpg`` (a session's processes share one process group unless they leave
it); docs/architecture.md ("Quality bar": Ctrl-C leaves nothing behind).

>>> run(["true"]).returncode
0
"""

from __future__ import annotations

import os
import signal
import subprocess


def run(cmd: list[str], *, timeout: float | None = None, **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run(cmd, ...)`` in a new session, the whole group killed if the wait is interrupted.

    Args:
        cmd: the program and its arguments; timeout: seconds, or None; kwargs: as ``subprocess.run``
            (``capture_output``, ``text``, ``env``, ``cwd``, ...; not ``start_new_session``).

    Returns:
        The CompletedProcess, as ``subprocess.run``.

    Raises:
        subprocess.TimeoutExpired: past ``timeout`` (the group killed first); KeyboardInterrupt and any other
            exception of the wait, after killing the group; OSError: the program cannot be started.

    Source: this module's docstring.

    >>> run(["sh", "-c", "echo hi"], capture_output=True, text=True).stdout
    'hi\\n'
    """
    kwargs.pop("start_new_session", None)
    with subprocess.Popen(cmd, start_new_session=True, **_streams(kwargs)) as proc:
        try:
            out, err = proc.communicate(kwargs.get("input"), timeout=timeout)
        except BaseException:
            _kill_group(proc)
            raise
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _streams(kwargs: dict) -> dict:
    """Popen's keywords from ``subprocess.run``'s (``capture_output``, ``input``)."""
    kwargs = dict(kwargs)
    if kwargs.pop("capture_output", False):
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    if kwargs.pop("input", None) is not None:
        kwargs["stdin"] = subprocess.PIPE
    return kwargs


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()
