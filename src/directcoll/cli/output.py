"""Output helpers of the command line: JSON, tables, progress bars, number formats.

Source: docs/architecture.md, "Command line" (results on stdout, ``--json`` a contract; progress on
stderr).

>>> gbps(50e9)
'400'
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import sys

import numpy as np

SHORT_FAMILY = {"recursive-doubling": "rec.doub", "mirrored-recursive-doubling": "mirr.rd",
                "double-binary-tree": "dbt", "shifted-ring": "sh.ring", "generalized": "general.",
                "rabenseifner-3-2": "rab.3-2", "swing-libswing": "libswing"}



def print_json(obj, file=None) -> None:
    """Print ``obj`` as indented JSON on stdout, or on the open text ``file`` (numpy numbers and arrays, tuples as
    lists).

    Raises:
        Nothing of ours: an object JSON cannot hold raises TypeError.

    Source: docs/architecture.md, "Command line" (machine-readable output is a contract).

    >>> print_json({"steps": np.int64(3), "sizes": np.array([1.5])})
    {
      "steps": 3,
      "sizes": [
        1.5
      ]
    }
    """
    print(json.dumps(obj, indent=2, default=_json_default), file=file)



def _json_default(x):

    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, tuple):
        return list(x)
    raise TypeError(f"not JSON serializable: {type(x).__name__}")



#: whether tables print as wide as they need (``--wide``) rather than fitted to the terminal; a context variable,
#: set for one command by :func:`wide_tables`
_WIDE: contextvars.ContextVar[bool] = contextvars.ContextVar("directcoll_wide_tables", default=False)


@contextlib.contextmanager
def wide_tables(on: bool):
    """Inside the block, :func:`table_console` prints tables as wide as they need (``--wide``).

    Yields:
        Nothing.

    Raises:
        Nothing: sets a context variable.

    Source: docs/architecture.md, "Command line" (tables that fit, --wide for everything).

    >>> with wide_tables(True):
    ...     _WIDE.get()
    True
    """
    token = _WIDE.set(bool(on))
    try:
        yield
    finally:
        _WIDE.reset(token)


def table_console(*tables):
    """A rich Console on stdout for ``tables``: the terminal's width (``$COLUMNS``, 80 when piped), a table too wide
    for it folding its cells onto more lines (never cutting one); under :func:`wide_tables` (``--wide``) as wide as
    the widest table needs.

    Returns:
        A ``rich.console.Console`` writing to stdout.

    Raises:
        Nothing: measures the tables.

    Source: docs/architecture.md, "Command line" ("tables that read well anywhere"); rich's ``Measurement`` of a
    renderable.

    >>> from rich.table import Table
    >>> t = Table("size", "a very long column heading that would not fit in sixty columns, not at all")
    >>> table_console(t).width >= 80
    True
    """
    from rich.console import Console
    from rich.measure import Measurement

    console = Console()
    need = max((Measurement.get(console, console.options.update(width=10_000), t).maximum for t in tables),
               default=0)
    if need <= console.width:
        return console
    if _WIDE.get():
        return Console(width=need)
    for table in tables:
        for column in getattr(table, "columns", ()):
            column.overflow = "fold"
    return console


def print_table(title: str, rows: list[tuple[str, object]]) -> None:
    """Print ``rows`` (key, value) as a two-column rich table titled ``title`` on stdout (floats to 4 digits).

    Raises:
        Nothing: formatting only.

    Source: docs/architecture.md, "Command line" (human output; ``--json`` for machines).
    """
    from rich.table import Table

    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for key, value in rows:
        table.add_row(key, f"{value:.4g}" if isinstance(value, float) else str(value))
    table_console(table).print(table)



#: labels of the fields of ``topology describe`` and ``cost`` (their --json keys) for people; a key not named here
#: is shown with its underscores as spaces and its unit from its suffix (:func:`human_value`)
FIELD_LABELS = {
    "nodes": "compute nodes", "links": "directed links", "shape": "shape", "degree_min": "degree (min)",
    "degree_max": "degree (max)", "diameter": "diameter (hops)", "average_distance": "average distance (hops)",
    "link_bandwidth_bytes_per_s": "link bandwidth", "node_bandwidth_bytes_per_s": "node bandwidth (injection)",
    "bisection_links": "bisection links", "bisection_bandwidth_bytes_per_s": "bisection bandwidth",
    "moore_bound_diameter": "Moore bound on the diameter (hops)", "ranks": "ranks", "steps": "steps",
    "bytes_per_rank": "bytes sent per rank (x vector size)", "latency_deficiency": "latency deficiency Λ",
    "bandwidth_deficiency": "bandwidth deficiency Ψ", "congestion_deficiency": "congestion deficiency Ξ",
    "t_l_steps": "T_L (steps)", "t_b_m_over_b": "T_B (x M/B)", "link_bandwidth": "link bandwidth",
    "alltoall_time_m_over_b": "all-to-all time (x m/b)",
    "congestion_deficiency_closed_form": "Ξ closed form (Swing Sec. 4.1)",
    "congestion_deficiency_eq3": "Ξ by Swing Eq. 3", "size_bytes": "vector size", "alpha_s": "α per step",
    "gamma_s_per_byte": "γ per byte reduced",
    "alltoall_mcf": "all-to-all max concurrent flow F", "alltoall_mcf_method": "F by method",
    "alltoall_capacity_bound": "all-to-all capacity bound on F",
    "alltoall_reference_bandwidth_bytes_per_s": "F's unit (one link)",
    "alltoall_throughput_bytes_per_s": "all-to-all throughput per rank",
}


def human_value(key: str, value) -> str:
    """``value`` of field ``key`` for people: its unit from the key's suffix (``_bytes_per_s`` and the link
    bandwidths as bit/s, ``_bytes`` as a size, ``_s`` as a time, ``_s_per_byte`` as ns/B), a shape as ``4 x 4``,
    None as ``-``, other numbers to four significant digits without exponents.

    Returns:
        The text.

    Raises:
        Nothing: formatting.

    Source: docs/architecture.md, "Command line" (human output with units; --json for machines).

    >>> human_value("link_bandwidth_bytes_per_s", 5e10), human_value("size_bytes", 2**20), human_value("shape", [4, 4])
    ('400 Gb/s', '1MiB', '4 x 4')
    """
    from directcoll.units import format_bandwidth, format_size, format_time

    if value is None:
        return "-"
    if isinstance(value, bool) or isinstance(value, str):
        return str(value)
    if isinstance(value, list | tuple):
        return " x ".join(str(v) for v in value) if key == "shape" else ", ".join(str(v) for v in value)
    if key.endswith("_bytes_per_s") or key == "link_bandwidth":
        return format_bandwidth(value)
    if key.endswith("_s_per_byte"):
        return f"{value * 1e9:.3g} ns/B"
    if key.endswith("_bytes"):
        return format_size(value)
    if key.endswith("_s"):
        return format_time(value)
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


def print_fields(title: str, doc: dict, extra: list[tuple[str, str]] = ()) -> None:
    """Print the fields of a --json document ``doc`` as a two-column table with labels and units
    (:data:`FIELD_LABELS`, :func:`human_value`), then ``extra`` (label, text) rows.

    Raises:
        Nothing: formatting.

    Source: docs/architecture.md, "Command line".
    """
    print_table(title, [(FIELD_LABELS.get(k, k.replace("_", " ")), human_value(k, v)) for k, v in doc.items()]
                + list(extra))


class ProgressBar:
    """Progress over steps on standard error, or nothing when disabled (JSON output, small work).

    ``with ProgressBar(total, label, enabled) as tick:`` gives ``tick(done, total[, what])`` (None when disabled).
    On a terminal it drives a rich bar; piped, a :class:`Heartbeat` prints one line after two seconds and then every
    ten: the label, how far, what runs now, the time elapsed and an estimate of the time left (from the average
    time per step so far). Standard output holds only the result.

    Raises:
        Nothing: a disabled bar does nothing.

    Source: docs/architecture.md, "Command line" (stdout holds only the result; progress on anything over two
    seconds, piped too).

    >>> with ProgressBar(10, "verifying", enabled=False) as tick:
    ...     tick is None
    True
    """

    def __init__(self, total: int, label: str, enabled: bool) -> None:
        self.total, self.label, self.enabled = total, label, enabled
        self._bar = None
        self._beat: Heartbeat | None = None

    def __enter__(self):
        if not self.enabled:
            return None
        if not sys.stderr.isatty():
            return self._piped()
        from rich.console import Console
        from rich.progress import Progress

        self._bar = Progress(transient=True, console=Console(stderr=True))  # stdout holds only the result
        self._bar.start()
        task = self._bar.add_task(self.label, total=self.total)
        return lambda done, total, what="": self._bar.update(task, completed=done, total=total)

    def _piped(self):
        import time

        t0 = time.monotonic()
        self._beat = Heartbeat(self.label).__enter__()

        def tick(done: int, total: int, what: str = "") -> None:
            elapsed = time.monotonic() - t0
            left = f", about {elapsed / done * (total - done):.0f} s left" if 0 < done < total else ""
            self._beat(f"{done}/{total}{f' {what}' if what else ''}{left}")

        return tick

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.stop()
        if self._beat is not None:
            self._beat.__exit__(*exc)


class Heartbeat:
    """A sign of life on standard error for work that may take more than two seconds.

    ``with Heartbeat("solving the all-to-all LP") as beat:`` prints nothing if the block ends within ``after``
    seconds; otherwise a line ``directcoll: solving the all-to-all LP ... 2 s`` and then one every ``every``
    seconds (rewritten in place on a terminal). ``beat(text)`` sets a detail shown after the label (an
    iteration, a gap). Standard output is untouched.

    Raises:
        Nothing: a daemon thread that only writes to standard error.

    Source: docs/architecture.md, "Command line" ("a sign of life on anything over two seconds, on standard error").

    >>> with Heartbeat("nothing slow", after=60) as beat:
    ...     beat("step 1")
    """

    def __init__(self, label: str, *, after: float = 2.0, every: float = 10.0) -> None:
        import threading

        self.label, self.after, self.every = label, after, every
        self.detail = ""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._shown = False

    def __call__(self, detail: str) -> None:
        self.detail = detail

    def _line(self, elapsed: float) -> str:
        detail = f" ({self.detail})" if self.detail else ""
        return f"directcoll: {self.label} ... {elapsed:.0f} s{detail}"

    def _run(self) -> None:
        import time

        t0 = time.monotonic()
        tty = sys.stderr.isatty()
        wait = self.after
        while not self._stop.wait(wait):
            line = self._line(time.monotonic() - t0)
            sys.stderr.write(f"\r\033[K{line}" if tty else f"{line}\n")
            sys.stderr.flush()
            self._shown = True
            wait = 1.0 if tty else self.every

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        if self._shown and sys.stderr.isatty():
            sys.stderr.write("\n")
            sys.stderr.flush()


def echo(text: str, indent: int = 0, hang: int | None = None) -> None:
    """Print ``text`` on stdout wrapped to the terminal's width (``$COLUMNS``, the terminal, else 80 when piped),
    ``indent`` spaces before its first line and ``hang`` (default ``indent + 4``) before the others; words (spec
    strings, names) are never split.

    Raises:
        Nothing: formatting.

    Source: docs/architecture.md, "Command line" (output that fits 80 columns).

    >>> echo("torus  torus:8x8 (family: a D-dimensional torus)", hang=7)
    torus  torus:8x8 (family: a D-dimensional torus)
    """
    import shutil
    import textwrap

    width = shutil.get_terminal_size((80, 24)).columns
    hang = indent + 4 if hang is None else hang
    print(textwrap.fill(text, width=max(width, 40), initial_indent=" " * indent, subsequent_indent=" " * hang,
                        break_long_words=False, break_on_hyphens=False))


def oversubscription(ranks: int) -> str | None:
    """The warning for ``ranks`` processes on this machine's cores (``os.sched_getaffinity``, else the CPU count),
    or None when each rank has a core.

    Returns:
        One line, or None.

    Raises:
        Nothing: reads the affinity mask.

    Source: docs/runtime.md (on 2 cores, 4 ranks of a busy-polling MPI measure waiting, not speed).

    >>> oversubscription(1) is None
    True
    """
    import os

    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    if ranks <= cores:
        return None
    plural = "s" if cores != 1 else ""
    return (f"{ranks} ranks on {cores} core{plural} are oversubscribed: ranks wait for a core, so times and ratios "
            "measure waiting as much as speed and say little about a machine with a core per rank")


def noop(*_args) -> None:
    """Accept anything and do nothing (a progress callback when no bar is shown). Raises: Nothing.
    Source: docs/architecture.md, "Command line".
    """
    return None



def gbps(bytes_per_s: float) -> str:
    """Bytes/s as Gb/s text with about three significant digits (no decimals from 100 Gb/s).

    Returns:
        The text, e.g. ``'400'``, ``'12.5'``, ``'1.25'``.

    Raises:
        Nothing: formatting.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (goodput in Gb/s).

    >>> gbps(50e9), gbps(1.5625e9), gbps(1e6)
    ('400', '12.5', '0.008')
    """
    v = bytes_per_s * 8 / 1e9
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}" if v >= 1 else f"{v:.2g}"
