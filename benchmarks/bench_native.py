"""libdirectcoll against the MPI library's own MPI_Allreduce, per schedule, on 2 and 4 ranks of this machine
(docs/benchmarks.md, "Native runtime").

For every default contender of ``ring:N`` (Swing latency / bandwidth, recursive doubling latency / bandwidth =
Rabenseifner, ring, bucket, BFB) that compiles, one ``directcoll_bench`` run with a one-entry tuning table times
MPICH's ``MPI_Allreduce`` (the ``PMPI_`` call) and ours alternating round by round in the same run, so each ratio
time(native) / time(ours) compares numbers taken under the same load. ``MPI_DOUBLE``, ``MPI_SUM``, not in place.
It also times MPICH's point-to-point floor: a 2-rank ``MPI_Sendrecv`` of 8 B (the cost of one step of any
schedule over point-to-point; MPICH's own small allreduce takes a shared-memory collective path instead).

Prints one markdown table per N (rows: sizes; columns: MPI_Allreduce's time, then each schedule's ratio, ">= 1"
means ours is at least as fast) with the date and ``uptime`` before and after, and writes every number to
``--out DIR``/bench_native.json (default DIR: benchmarks/out/).

Run: python benchmarks/bench_native.py [--ranks 2,4] [--sizes 8B,1KiB,64KiB,1MiB,8MiB,64MiB]
         [--schedules swing-bandwidth,...] [--round-seconds 0.2] [--segment-bytes N] [--out DIR]
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import benchcli

from directcoll.cli.options import read_sizes
from directcoll.errors import DirectcollError, ScheduleError, UnsupportedShapeError
from directcoll.registry import build
from directcoll.reports.contenders import default_contenders
from directcoll.reports.tuning import find_mpiexec, parse_bench, run_bench
from directcoll.runtime.native import find_mpicc, write_program
from directcoll.topology.spec import parse

DEFAULT_SIZES = "8B,1KiB,64KiB,1MiB,8MiB,64MiB"
#: bandwidth-optimal schedules (each rank sends and receives 2 (N-1)/N of the vector): the issue's >= 0.9 target
BANDWIDTH_OPTIMAL = ("swing-bandwidth", "recursive-doubling-bandwidth", "ring", "bucket", "bfb")

_PINGPONG = r"""#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size; double x = 1, y = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    double best = 1e30;
    for (int r = 0; r < 7; r++) {
        int iters = 200000;
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int i = 0; i < iters; i++)
            MPI_Sendrecv(&x, 1, MPI_DOUBLE, rank ^ 1, 0, &y, 1, MPI_DOUBLE, rank ^ 1, 0, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
        double t = (MPI_Wtime() - t0) / iters;
        if (r > 0 && t < best) best = t;
    }
    if (rank == 0) printf("%.4f\n", best * 1e6);
    MPI_Finalize();
    return 0;
}
"""


#: 2 ranks, 7 schedules x 6 sizes, 0.2 s rounds: a few minutes quiet; 4 ranks on 2 cores take much longer
ESTIMATE = "5-15 minutes (4 ranks oversubscribe a 2-core machine)"

def label(algorithm: str, variant: str | None) -> str:
    return f"{algorithm}-{variant}" if variant else algorithm


def programs(n: int, folder: Path, only: set[str] | None) -> dict[str, Path]:
    """The verified program of every default contender of ring:N that compiles (label -> path)."""
    topology = parse(f"ring:{n}")
    out = {}
    for c in default_contenders(topology, "allreduce"):
        name, variant = c.algorithm, c.variant
        key = label(name, variant)
        if only and key not in only:
            continue
        try:
            sched = build(name, topology, "allreduce", variant=variant, **c.options)
            out[key] = write_program(sched, folder / f"{key}-{n}.dcp")
        except (ScheduleError, UnsupportedShapeError) as exc:
            print(f"bench_native: {key} on {n} ranks: {exc}", file=sys.stderr)
    return out


def pingpong_us(folder: Path) -> float:
    """MPICH's 2-rank MPI_Sendrecv of one double, microseconds per exchange (best of 6 rounds)."""
    mpicc = find_mpicc()
    src, exe = folder / "pingpong.c", folder / "pingpong"
    src.write_text(_PINGPONG)
    subprocess.run([*mpicc, "-O2", "-o", str(exe), str(src)], check=True, capture_output=True)
    done = subprocess.run([find_mpiexec(mpicc), "-n", "2", str(exe)], check=True, capture_output=True, text=True,
                          timeout=600)
    return float(done.stdout.split()[-1])


def uptime() -> str:
    """The load averages over 1, 5 and 15 minutes, as `uptime` prints them."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv=None) -> int:
    ap = benchcli.parser(__doc__, ESTIMATE, out_help="the JSON of every number is DIR/bench_native.json")
    ap.add_argument("--ranks", default="2,4", help="comma-separated rank counts (default 2,4)")
    ap.add_argument("--sizes", default=DEFAULT_SIZES, help=f"vector sizes (default {DEFAULT_SIZES})")
    ap.add_argument("--schedules", help="comma-separated labels to run (default: every contender), e.g. "
                                        "swing-bandwidth,recursive-doubling-bandwidth,ring")
    ap.add_argument("--round-seconds", type=float, default=0.2, help="seconds per timed round (default 0.2)")
    ap.add_argument("--no-pingpong", action="store_true", help="skip the MPI_Sendrecv floor")
    ap.add_argument("--timeout", type=float, default=600.0,
                    help="seconds one schedule's run may take before it is skipped (default 600)")
    ap.add_argument("--segment-bytes", type=int, help="the library's message segment (DIRECTCOLL_SEGMENT_BYTES; "
                                                      "default: its built-in 512 KiB)")
    args = ap.parse_args(argv)
    if args.segment_bytes is not None:
        if args.segment_bytes <= 0:
            ap.error(f"--segment-bytes must be > 0, got {args.segment_bytes}")
        os.environ["DIRECTCOLL_SEGMENT_BYTES"] = str(args.segment_bytes)  # run_bench passes the environment on
    try:
        sizes = read_sizes(args.sizes)
        ranks = [int(r) for r in args.ranks.split(",")]
    except (ValueError, DirectcollError) as exc:
        ap.error(f"--sizes {args.sizes!r} / --ranks {args.ranks!r}: {exc}")
    if any(r < 1 for r in ranks):
        ap.error(f"--ranks must be positive integers, got {args.ranks!r}")
    only = set(args.schedules.split(",")) if args.schedules else None
    out = benchcli.begin(args, ESTIMATE, "bench_native") / "bench_native.json"
    doc = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
           "command": " ".join(["python", "benchmarks/bench_native.py", *(argv or sys.argv[1:])]),
           "load_before": uptime(), "sizes": sizes, "segment_bytes": args.segment_bytes, "runs": {}}
    print(f"# {doc['date']}, load average (1, 5, 15 min) {doc['load_before']}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-native-") as tmp:
        tmp = Path(tmp)
        if not args.no_pingpong:
            doc["sendrecv_8B_us"] = pingpong_us(tmp)
            print(f"# MPI_Sendrecv of 8 B between 2 ranks: {doc['sendrecv_8B_us']:.3f} us", flush=True)
        for n in ranks:
            rows = {}
            for key, path in programs(n, tmp, only).items():
                table = tmp / f"one-{key}-{n}.json"
                table.write_text(json.dumps([{"collective": "allreduce", "ranks": n, "program": path.name}]))
                print(f"# {n} ranks: {key} ...", file=sys.stderr, flush=True)
                try:
                    got = parse_bench(run_bench(n, sizes, table=table, round_seconds=args.round_seconds,
                                                timeout=args.timeout))
                except DirectcollError as exc:  # a run past --timeout (e.g. oversubscribed ranks under load)
                    print(f"bench_native: {n} ranks, {key}: {exc}", file=sys.stderr)
                    doc.setdefault("failed", []).append({"ranks": n, "schedule": key, "error": str(exc)})
                    continue
                rows[key] = {str(s): {"mpi_s": m, "ours_s": o, "ratio": m / o} for s, (m, o) in sorted(got.items())}
            doc["runs"][str(n)] = rows
            print_table(n, rows)
    doc["load_after"] = uptime()
    print(f"# load average after: {doc['load_after']}")
    out.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"# wrote {out}", file=sys.stderr)
    return 0


def human(b: int) -> str:
    for unit, k in (("MiB", 20), ("KiB", 10)):
        if b >= 1 << k and b % (1 << k) == 0:
            return f"{b >> k} {unit}"
    return f"{b} B"


def print_table(n: int, rows: dict) -> None:
    keys = list(rows)
    if not keys:
        return
    sizes = list(rows[keys[0]])
    print(f"\n{n} ranks: time(MPI_Allreduce) / time(ours) per schedule (* bandwidth-optimal); MPI's time from the "
          "first schedule's run\n")
    print("| bytes | MPI_Allreduce | " + " | ".join(k + ("*" if k in BANDWIDTH_OPTIMAL else "") for k in keys)
          + " | best |")
    print("|---" * (len(keys) + 3) + "|")
    for s in sizes:
        mpi = rows[keys[0]][s]["mpi_s"]
        shown = f"{mpi * 1e6:.2f} us" if mpi < 1e-3 else f"{mpi * 1e3:.2f} ms"
        ratios = [rows[k][s]["ratio"] for k in keys]
        print(f"| {human(int(s))} | {shown} | " + " | ".join(f"{r:.2f}" for r in ratios) + f" | {max(ratios):.2f} |")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
