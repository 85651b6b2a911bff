"""``directcoll sweep SWEEP.toml -o results.parquet``: a grid of studies on Dask (or ``--serial``), resumable.

Source: docs/sweep.md.

>>> from directcoll.cli.main import main
>>> main(["sweep", "no/such/sweep.toml", "-o", "r.parquet"])  # the error goes to stderr
2
"""

from __future__ import annotations

import sys
import time

from directcoll.cli.options import check_output, count
from directcoll.cli.output import Heartbeat, print_json


def register(sub) -> None:
    """Register ``directcoll sweep`` on the subparsers ``sub``.

    Returns:
        None.

    Raises:
        Nothing: builds a parser.

    Source: docs/sweep.md, "Running".

    >>> from directcoll.cli.main import build_parser
    >>> build_parser().parse_args(["sweep", "s.toml", "-o", "r.parquet", "--serial"]).func.__name__
    'cmd_sweep'
    """
    p = sub.add_parser("sweep", help="run a grid of compare / find-topology / all-to-all studies from a TOML file "
                                     "on Dask, resumable, into one Parquet table",
                       description="Read SWEEP.toml (a kind: compare, find-topology or alltoall, and its grid; "
                                   "docs/sweep.md), run every cell not already finished on a local Dask cluster "
                                   "(default), a Dask scheduler (--scheduler) or this process (--serial), store each "
                                   "cell as it finishes in OUTPUT.parts/, and write one table to OUTPUT. A rerun "
                                   "computes only the missing cells. Progress goes to stderr.")
    p.add_argument("sweep", help="the sweep file (TOML), e.g. benchmarks/sweeps/compare_tori.toml")
    p.add_argument("-o", "--output", required=True, help="the Parquet table to write, e.g. results.parquet (cell "
                                                         "parts go to OUTPUT.parts/)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDRESS", help="run on the Dask cluster of this scheduler, e.g. "
                                                              "tcp://10.0.0.1:8786 (its workers need directcoll)")
    where.add_argument("--serial", action="store_true", help="run every cell in this process, no Dask")
    p.add_argument("--workers", type=count(1), help="worker processes of the local Dask cluster (default: the "
                                                    "cores)")
    p.add_argument("--json", action="store_true", help="print the run's summary as JSON (cells computed, reused, "
                                                       "refused; rows; columns)")
    p.set_defaults(func=cmd_sweep)


class _Progress:
    """``directcoll: sweep: 3/12 cells, ETA 40 s (last: ...)`` on stderr: in place on a terminal, else a line at
    most every second and at the end."""

    def __init__(self) -> None:
        self.beat = None  # a Heartbeat's detail, for cells that run long between two of these lines
        self.t0 = time.monotonic()
        self.last = 0.0
        self.first_done: int | None = None
        self.tty = sys.stderr.isatty()

    def __call__(self, done: int, total: int, label: str) -> None:
        now = time.monotonic()
        if self.first_done is None:  # cells reused from an earlier run do not count for the rate
            self.first_done, self.t0 = done, now
            if done == total:
                return
        computed = done - self.first_done
        eta = f", ETA {(now - self.t0) / computed * (total - done):.0f} s" if computed and done < total else ""
        line = f"directcoll: sweep: {done}/{total} cells{eta} ({label})"
        if self.beat is not None:
            self.beat(f"{done}/{total} cells{eta}")
        if self.tty:
            sys.stderr.write(f"\r\033[K{line}" + ("\n" if done == total else ""))
        elif now - self.last >= 1.0 or done == total:
            sys.stderr.write(line + "\n")
            self.last = now
        sys.stderr.flush()


def cmd_sweep(args) -> int:
    """``directcoll sweep SWEEP.toml -o results.parquet``: plan the sweep, run what is missing, write the table
    (:func:`directcoll.sweep.execute.run_sweep`).

    Output: one line naming the table and the counts; ``--json``: :meth:`SweepResult.to_dict
    <directcoll.sweep.execute.SweepResult.to_dict>`. Cells refused for now (memory, solver limits) are named on
    stderr and left for a rerun.

    Returns:
        0.

    Raises:
        DirectcollError: a bad sweep file, an unwritable output, ``--workers`` with ``--serial`` or
            ``--scheduler``, no scheduler at the address. ResourceError: a cell over the budget.
            MissingDependencyError: the ``sweep`` extra is not installed.

    Source: docs/sweep.md.

    >>> import os, tempfile
    >>> from directcoll.cli.main import main
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "s.toml")
    ...     with open(path, "w") as f:
    ...         _ = f.write('kind = "alltoall"\\ntopology = ["ring:4", "ring:6"]\\n')
    ...     main(["sweep", path, "-o", os.path.join(tmp, "r.parquet"), "--serial"])  # doctest: +ELLIPSIS
    wrote .../r.parquet: alltoall sweep, 2 cells (2 computed, 0 reused, 0 refused), 2 rows; parts in ...
    0
    """
    from directcoll.sweep.execute import run_sweep
    from directcoll.sweep.plan import load_sweep

    check_output(args.output, "-o")
    sweep = load_sweep(args.sweep)
    progress = _Progress()
    with Heartbeat(f"sweep of {len(sweep.cells)} cells running") as progress.beat:
        result = run_sweep(sweep, args.output, serial=args.serial, scheduler=args.scheduler, workers=args.workers,
                           progress=progress)
    for line in result.unfinished:
        print(f"directcoll: warning: not finished, rerun to retry: {line}", file=sys.stderr)
    if args.json:
        print_json(result.to_dict())
        return 0
    print(f"wrote {result.output}: {result.kind} sweep, {result.cells} cells ({result.computed} computed, "
          f"{result.reused} reused, {result.errors} refused"
          + (f", {len(result.unfinished)} not finished" if result.unfinished else "")
          + f"), {result.rows} rows; parts in {result.output}.parts/")
    return 0
