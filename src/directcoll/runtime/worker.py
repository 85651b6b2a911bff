"""The ranks of ``directcoll run``: time our schedules and the MPI library's own collective, check results.

Started by ``directcoll run`` through ``mpiexec``; rank 0 writes one JSON object (``--json-out``). Our schedules
run on ``--engine`` (``c``: libdirectcoll, :mod:`directcoll.runtime.cengine`; ``python``: numpy), named in the
JSON. Every wait (the
schedule's steps, barriers, the MPI library's collective, the reductions of times and checks) has the deadline
``--timeout`` (:mod:`directcoll.runtime.mpi`). With ``--status-dir`` each rank publishes where it is
(:mod:`directcoll.runtime.progress`) for the launcher (:mod:`directcoll.runtime.launch`); a rank that fails writes
its error there and to stderr, then aborts the job.

Source: docs/runtime.md; docs/architecture.md, "Engines, runtimes and scale"; MPI 4.1 standard, Ch. 6 (the native
collectives it compares against).

>>> main([])  # the arguments of `directcoll run` are missing: argparse's usage error
Traceback (most recent call last):
...
SystemExit: 2
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import traceback

import numpy as np

from directcoll.errors import DirectcollError, UnsupportedShapeError
from directcoll.plugins import expand
from directcoll.registry import build
from directcoll.runtime import MPI_EXTRA, missing
from directcoll.runtime.executor import DeadlineError
from directcoll.runtime.progress import BUSY, STARTING, WAITING, Progress
from directcoll.units import format_size, parse_sizes

#: environment variables in which launchers give a rank its number before MPI starts (MPICH, Open MPI, PMIx)
RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")


def _buffers(collective: str, count: int, n: int, rank: int):
    """(sendbuf, our recvbuf, MPI's recvbuf) of float64 for a vector of ``count`` elements (all-to-all: per rank)."""
    rng = np.random.default_rng(rank)
    if collective == "alltoall":
        return rng.random(count), np.empty(count), np.empty(count)
    if collective == "allgather":
        x = rng.random(count // n)
        return x, np.empty(count), np.empty(count)
    x = rng.random(count)
    out = count if collective in ("allreduce", "broadcast", "reduce") else count // n
    return x, np.empty(out), np.empty(out)


def _time(comm, fn, repeat: int, timeout: float, progress: Progress, what: str, phase: str,
          nsteps: int = 0) -> tuple[float, list[float], float | None]:
    """Seconds per call of ``fn`` (the slowest rank's mean over ``repeat`` calls after a warm-up), the slowest
    rank's seconds of every repetition, and the busy share of this machine's cores during the calls (rank 0's
    reading of /proc/stat: every rank of a local or testbed run shares them)."""
    from mpi4py import MPI

    from directcoll.runtime import mpi as run
    from directcoll.runtime.launch import cpu_ticks

    progress.set(WAITING, what, phase, nsteps=nsteps, rep=0, reps=repeat)
    fn()  # warm-up: compiles programs, touches buffers
    progress.set(WAITING, "the barrier before timing", phase)
    run.barrier(comm, timeout=timeout, what=f"the barrier before timing {phase}")
    progress.set(WAITING, what, phase, nsteps=nsteps, rep=1, reps=repeat)
    busy0, total0 = cpu_ticks()
    t0 = MPI.Wtime()
    marks = [t0]
    for i in range(repeat):
        progress.repetition(i + 1)
        fn()
        marks.append(MPI.Wtime())
    busy1, total1 = cpu_ticks()
    elapsed = (marks[-1] - t0) / repeat
    progress.set(WAITING, "the reduction of the times", phase)
    mean = run.reduce_value(comm, elapsed, MPI.MAX, timeout=timeout, what=f"the reduction of the times of {phase}")
    each = [run.reduce_value(comm, b - a, MPI.MAX, timeout=timeout, what=f"the reduction of the times of {phase}")
            for a, b in itertools.pairwise(marks)]
    ticks = total1 - total0  # /proc/stat counts 100 ticks per second and core: fewer than 20 tell nothing
    return mean, each, (busy1 - busy0) / ticks if ticks >= 20 else None


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--topology", required=True)
    ap.add_argument("--algorithms", required=True, help="comma list of NAME or NAME:VARIANT")
    ap.add_argument("--collective", default="allreduce")
    ap.add_argument("--sizes", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--native", action="store_true")
    ap.add_argument("--engine", choices=["c", "python"], default="c", help="what runs our schedules (runtime.mpi)")
    ap.add_argument("--json-out", required=True)
    ap.add_argument("--root", type=int, help="broadcast and reduce: the root rank (default 0)")
    ap.add_argument("--status-dir", help="directory of the per-rank status files (directcoll.runtime.progress)")
    return ap


def _env_rank() -> int | None:
    for name in RANK_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return None


def main(argv=None) -> int:
    """Run the ranks' work; on failure publish the error, print it to stderr and abort the job.

    Every rank builds the schedules of ``--algorithms`` for ``--topology``, runs each at every size
    ``--repeat`` times after a warm-up (and the MPI library's collective with ``--native``), checks the results
    against the native collective and rank 0 writes the JSON document to ``--json-out``.

    Returns:
        0, or 3 when the rank failed before MPI started (otherwise MPI_Abort ends the process).

    Raises:
        SystemExit: bad arguments (argparse, status 2). Errors of the work (DirectcollError, DeadlineError, MPI
        errors) are published, printed and end the job with MPI_Abort(3), not raised.

    Source: docs/runtime.md, "Failures"; MPI 4.1 standard (MPI_Init_thread, MPI_Abort).
    """
    args = _parser().parse_args(argv)
    rank = _env_rank()
    progress = Progress(args.status_dir if rank is not None else None, rank or 0)
    # loading MPI's libraries is local work (long on a loaded machine); MPI_Init waits for every rank
    progress.set(BUSY, "the loading of MPI")
    comm = None
    try:
        try:
            import mpi4py

            mpi4py.rc.initialize, mpi4py.rc.finalize = False, True
            from mpi4py import MPI
        except ImportError as exc:  # on this host: the launcher checked its own
            raise missing("directcoll run", MPI_EXTRA, exc) from exc

        if args.engine == "c":  # built or found before MPI_Init: it runs the MPI compiler wrapper
            from directcoll.runtime.native import library_path

            progress.set(BUSY, "the build of libdirectcoll")
            args.library = library_path()
        progress.set(STARTING, "MPI_Init")
        if not MPI.Is_initialized():
            MPI.Init_thread()
        comm = MPI.COMM_WORLD
        if not progress.active and rank is None:
            progress = Progress(args.status_dir, comm.Get_rank())
        _work(args, comm, progress)
        progress.done()
        return 0
    except DeadlineError as exc:
        progress.fail(str(exc), exc.peers)
        message = str(exc)
    except DirectcollError as exc:
        progress.fail(str(exc))
        message = str(exc)
    except Exception as exc:  # noqa: BLE001 - an MPI error (a peer died) or a bug: one line for the launcher
        traceback.print_exc()
        progress.fail(f"{type(exc).__name__}: {exc}")
        message = f"{type(exc).__name__}: {exc}"
    prefix = "" if message.startswith("rank ") else f"rank {progress.rank}: "
    print(f"directcoll run: error: {prefix}{message}", file=sys.stderr, flush=True)
    if comm is not None:
        comm.Abort(3)
    return 3


def _work(args, comm, progress: Progress) -> None:
    from mpi4py import MPI

    from directcoll.runtime import mpi as run

    n, rank = comm.Get_size(), comm.Get_rank()
    timeout = args.timeout
    if args.engine == "c":  # asked for: a library that cannot run here (another MPI than mpi4py's) is an error
        from directcoll.runtime import cengine

        progress.set(BUSY, "the loading of libdirectcoll")
        cengine.library(getattr(args, "library", None))
    results = []
    native_cache: dict[int, float] = {}
    items = expand(args.algorithms.split(","))  # plugins, and file:PATH algorithms (docs/language.md)
    for size in parse_sizes(args.sizes):
        # float64 elements (all-to-all: of each rank's sendbuf), a multiple of N (reduce-scatter, allgather, alltoall)
        count = max(n, (size // 8) // n * n)
        for item in items:
            name, _, variant = item.partition(":")
            progress.set(BUSY, "the build of the schedule", f"{item} {args.collective} on {args.topology}")
            try:
                schedule = build(name, args.topology, args.collective, variant=variant or None,
                                 **({} if args.root is None else {"root": args.root}))
            except UnsupportedShapeError as exc:
                if rank == 0:
                    results.append({"algorithm": name, "variant": variant or None, "size": size,
                                    "skipped": str(exc)})
                continue
            label = schedule.algorithm + (f":{schedule.meta['variant']}" if schedule.meta.get("variant") else "")
            phase = f"{label} {args.collective} of {format_size(count * 8)}"
            send, ours, native = _buffers(args.collective, count, n, rank)
            fn = run.EXECUTORS[args.collective]
            kwargs = {"schedule": schedule, "timeout": timeout, "progress": progress, "engine": args.engine}
            t, each, busy = _time(comm, lambda fn=fn, kwargs=kwargs, send=send, ours=ours: fn(comm, send, ours,
                                                                                               **kwargs),
                                  args.repeat, timeout, progress, "step", phase, schedule.num_steps)
            mpi_name = f"MPI {run.NATIVE[args.collective]}"
            progress.set(WAITING, mpi_name, f"checking {phase} against it")
            run.native(comm, args.collective, send, native, timeout=timeout, root=schedule.root)
            same = (np.array_equal(ours, native) if args.collective in ("alltoall", "broadcast")  # copies: exactly
                    else np.allclose(ours, native, rtol=1e-9, atol=1e-9))
            if args.collective == "reduce" and rank != schedule.root:
                same = True  # MPI_Reduce defines the result at the root only
            progress.set(WAITING, "the reduction of the checks", phase)
            correct = run.reduce_value(comm, bool(same), MPI.MIN, timeout=timeout,
                                       what=f"the reduction of the checks of {phase}")
            row = {"algorithm": schedule.algorithm, "variant": schedule.meta.get("variant"), "size": size,
                   "bytes": count * 8, "time_s": t, "goodput_Bps": count * 8 / t, "correct": correct,
                   "engine": args.engine, "times_s": each, "cpu_busy": busy}
            if args.native:
                if size not in native_cache:
                    native_cache[size] = _time(
                        comm, lambda s=send, o=native, r=schedule.root: run.native(comm, args.collective, s, o,
                                                                                   timeout=timeout, root=r),
                        args.repeat, timeout, progress, mpi_name,
                        f"native {args.collective} of {format_size(count * 8)}")
                row["native_time_s"], row["native_times_s"], row["native_cpu_busy"] = native_cache[size]
            results.append(row)
    if rank == 0:
        progress.set(BUSY, "the writing of the results", args.json_out)
        with open(args.json_out, "w") as fh:
            json.dump({"ranks": n, "topology": args.topology, "collective": args.collective, "engine": args.engine,
                       "results": results}, fh)


if __name__ == "__main__":
    sys.exit(main())
