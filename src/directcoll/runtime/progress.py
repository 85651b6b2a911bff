"""Where each rank of ``directcoll run`` is: a small per-rank status file that the launcher reads.

Every rank maps its file (:data:`SIZE` bytes) into memory and overwrites it in place: a step costs one
``struct.pack_into`` (the step number and a heartbeat counter), no system call. The launcher
(:mod:`directcoll.runtime.launch`) reads the files to tell progress from a hang and, when the job fails, to name the
rank and the step: "rank 1 stopped responding at step 3 of swing:latency allreduce of 1 KiB".

A rank that cannot create its file (a status directory that does not exist on a remote host) runs without one:
every method of an inactive :class:`Progress` does nothing.

Source: docs/runtime.md, "Failures" (name the rank and the step of a failed or hung job); Linux mmap(2).

>>> import tempfile
>>> tmp = tempfile.TemporaryDirectory()
>>> p = Progress(tmp.name, 1)
>>> p.set(WAITING, "step", "swing:latency allreduce of 1 KiB", nsteps=4, rep=2, reps=3)
>>> p.step(3)
>>> read_status(status_path(tmp.name, 1), 1).where()
'step 3 of swing:latency allreduce of 1 KiB (repetition 2 of 3)'
>>> tmp.cleanup()
"""

from __future__ import annotations

import mmap
import os
import socket
import struct
from dataclasses import dataclass

#: Rank states. BUSY: computing locally (building a schedule), so a long silence is not a hang; WAITING: in a
#: collective or a step, whose wait has a deadline.
STARTING, BUSY, WAITING, DONE, FAILED = range(5)
STATE_NAMES = ("starting", "busy", "waiting", "done", "failed")

SIZE = 2048
_HEAD = struct.Struct("<8q")  # pid, state, beat, step, nsteps, rep, reps, reserved
_BEAT_STEP = struct.Struct("<2q")  # at offset 16: beat, step
_FIELDS = {"host": (64, 64), "what": (128, 128), "phase": (256, 256), "waiting_on": (512, 128),
           "message": (640, 1024)}  # name: (offset, length) of utf-8 text, NUL padded


@dataclass
class Status:
    """One rank's last published state (see :func:`read_status`).

    Attributes:
        rank, pid: the rank and its process id.
        state: one of STARTING, BUSY, WAITING, DONE, FAILED; beat: a counter bumped at every update.
        step, nsteps: the current step (-1 before the first) and the phase's steps.
        rep, reps: the repetition (0: the warm-up) of ``reps``.
        host, what, phase, waiting_on, message: text fields (waiting_on: comma-separated ranks).

    Raises:
        Nothing: a record built by :func:`read_status`.

    Source: docs/runtime.md, "Failures".
    """

    rank: int
    pid: int
    state: int
    beat: int
    step: int
    nsteps: int
    rep: int
    reps: int
    host: str
    what: str
    phase: str
    waiting_on: str
    message: str

    @property
    def state_name(self) -> str:
        """The state in words (``"waiting"``, ...), ``"unknown"`` outside the known states. Raises: Nothing.
        Source: docs/runtime.md, "Failures".
        """
        return STATE_NAMES[self.state] if 0 <= self.state < len(STATE_NAMES) else "unknown"

    def where(self) -> str:
        """Where the rank was, in words: "step 3 of swing:latency allreduce of 1 KiB (repetition 2 of 3)".

        Raises:
            Nothing: formats the fields.

        Source: docs/runtime.md, "Failures".

        >>> import tempfile
        >>> tmp = tempfile.TemporaryDirectory()
        >>> p = Progress(tmp.name, 1)
        >>> p.set(WAITING, "step", "swing:latency allreduce of 1 KiB", nsteps=4, rep=2, reps=3)
        >>> p.step(3)
        >>> read_status(status_path(tmp.name, 1), 1).where()
        'step 3 of swing:latency allreduce of 1 KiB (repetition 2 of 3)'
        >>> tmp.cleanup()
        """
        if self.what == "step":
            text = f"step {self.step} of {self.phase}" if self.step >= 0 else f"the start of {self.phase}"
        else:
            text = f"{self.what} ({self.phase})" if self.phase else self.what
        if self.reps and self.state in (WAITING, FAILED):
            text += " (warm-up)" if self.rep == 0 else f" (repetition {self.rep} of {self.reps})"
        return text


def status_path(directory: str, rank: int) -> str:
    """The status file of ``rank`` in ``directory``. Raises: Nothing.
    Source: docs/runtime.md, "Failures".

    >>> status_path("/tmp/run", 3)
    '/tmp/run/rank3.status'
    """
    return os.path.join(directory, f"rank{rank}.status")


class Progress:
    """The writer side: one rank's status file, updated in place.

    ``Progress(None, rank)`` (or a directory it cannot write) is inactive: every method does nothing.

    Raises:
        Nothing: a file that cannot be created makes it inactive.

    Source: docs/runtime.md, "Failures"; the file is :data:`SIZE` bytes mapped with mmap(2).

    >>> Progress(None, 0).active
    False
    """

    def __init__(self, directory: str | None, rank: int) -> None:
        self.rank = rank
        self._mm = None
        self._beat = 0
        if directory is None:
            return
        try:
            fd = os.open(status_path(directory, rank), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.ftruncate(fd, SIZE)
                self._mm = mmap.mmap(fd, SIZE)
            finally:
                os.close(fd)
        except OSError:
            self._mm = None
            return
        _HEAD.pack_into(self._mm, 0, os.getpid(), STARTING, 0, -1, 0, 0, 0, 0)
        self._text("host", socket.gethostname())

    @property
    def active(self) -> bool:
        """Whether the status file is mapped (updates are written). Raises: Nothing.
        Source: docs/runtime.md, "Failures".
        """
        return self._mm is not None

    def _text(self, name: str, value: str) -> None:
        offset, length = _FIELDS[name]
        data = value.encode("utf-8", "replace")[:length]
        self._mm[offset:offset + length] = data.ljust(length, b"\0")

    def _head(self, state: int, step: int, nsteps: int, rep: int, reps: int) -> None:
        self._beat += 1
        _HEAD.pack_into(self._mm, 0, os.getpid(), state, self._beat, step, nsteps, rep, reps, 0)

    def set(self, state: int, what: str, phase: str = "", *, nsteps: int = 0, rep: int = 0, reps: int = 0) -> None:
        """Publish a new phase: ``what`` the rank does ("step", "the barrier before timing", "the build of the
        schedule"), ``phase`` the collective it belongs to, ``rep`` of ``reps`` (0: the warm-up; reps 0: none).

        Raises:
            Nothing: writes to the mapped file (nothing when inactive).

        Source: docs/runtime.md, "Failures".

        >>> import tempfile
        >>> tmp = tempfile.TemporaryDirectory()
        >>> p = Progress(tmp.name, 1)
        >>> p.set(WAITING, "step", "swing:latency allreduce of 1 KiB", nsteps=4, rep=2, reps=3)
        >>> p.step(3)
        >>> read_status(status_path(tmp.name, 1), 1).state_name
        'waiting'
        >>> tmp.cleanup()
        """
        if self._mm is None:
            return
        self._text("what", what)
        self._text("phase", phase)
        self._head(state, -1, nsteps, rep, reps)

    def repetition(self, rep: int) -> None:
        """Start repetition ``rep`` of the current phase (0: the warm-up). Raises: Nothing.
        Source: docs/runtime.md, "Failures".
        """
        if self._mm is None:
            return
        struct.pack_into("<q", self._mm, 40, rep)
        self.step(-1)

    def step(self, t: int) -> None:
        """Enter step ``t`` of the current phase (the hot path: one memory write). Raises: Nothing.
        Source: docs/runtime.md, "Failures".
        """
        if self._mm is not None:
            self._beat += 1
            _BEAT_STEP.pack_into(self._mm, 16, self._beat, t)

    def step_words(self):
        """The (beat, step) words of the mapped file as a ctypes array of two int64 (a C engine that runs the steps
        itself bumps the beat and writes the step, as :meth:`step` does), or None when inactive.

        Raises:
            Nothing.

        Source: docs/runtime.md, "The C engine" (steps published from C).

        >>> Progress(None, 0).step_words() is None
        True
        """
        if self._mm is None:
            return None
        if getattr(self, "_words", None) is None:
            import ctypes

            self._words = (ctypes.c_int64 * 2).from_buffer(self._mm, 16)
        return self._words

    def done(self) -> None:
        """The rank finished its work. Raises: Nothing. Source: docs/runtime.md, "Failures"."""
        if self._mm is not None:
            self._text("what", "finishing")
            self._text("phase", "")
            self._head(DONE, -1, 0, 0, 0)

    def fail(self, message: str, waiting_on=()) -> None:
        """The rank failed with ``message`` (``waiting_on``: the ranks it waited for when a deadline passed); where
        it was stays as it was.

        Raises:
            Nothing: writes to the mapped file (nothing when inactive).

        Source: docs/runtime.md, "Failures".

        >>> import tempfile
        >>> tmp = tempfile.TemporaryDirectory()
        >>> p = Progress(tmp.name, 1)
        >>> p.set(WAITING, "step", "swing:latency allreduce of 1 KiB", nsteps=4, rep=2, reps=3)
        >>> p.step(3)
        >>> p.fail("deadline", [0, 2])
        >>> s = read_status(status_path(tmp.name, 1), 1)
        >>> s.state_name, s.waiting_on, s.step
        ('failed', '0,2', 3)
        >>> tmp.cleanup()
        """
        if self._mm is None:
            return
        self._text("message", message)
        self._text("waiting_on", ",".join(str(int(r)) for r in waiting_on))
        _, _, _, step, nsteps, rep, reps, _ = _HEAD.unpack_from(self._mm, 0)
        self._head(FAILED, step, nsteps, rep, reps)


def read_status(path: str, rank: int) -> Status | None:
    """The status ``rank`` last published to ``path``; None if there is none (yet) or it cannot be read.

    Returns:
        A :class:`Status`, or None.

    Raises:
        Nothing: an unreadable or short file gives None.

    Source: docs/runtime.md, "Failures".

    >>> read_status("no/such/rank0.status", 0) is None
    True
    """
    try:
        with open(path, "rb") as fh:
            data = fh.read(SIZE)
    except OSError:
        return None
    if len(data) < SIZE:
        return None
    pid, state, beat, step, nsteps, rep, reps, _ = _HEAD.unpack_from(data, 0)
    texts = {name: data[off:off + n].split(b"\0", 1)[0].decode("utf-8", "replace")
             for name, (off, n) in _FIELDS.items()}
    return Status(rank, pid, state, beat, step, nsteps, rep, reps, **texts)
