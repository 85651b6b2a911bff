"""Our schedules on real MPI ranks against the MPI library's MPI_Allreduce, from the same run.

Run: python3 benchmarks/bench_mpi.py [--out DIR]   (8 ranks on torus:2x4 and 16 on torus:4x4 schedules, 8 B .. 64 MiB)
Prints a Markdown table of time(ours) / time(native) per size; docs/benchmarks.md records it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import benchcli

ESTIMATE = "a few minutes (two mpiexec jobs of 8 and 16 ranks, 6 sizes, 2 repetitions)"
SIZES = "8B,1KiB,64KiB,1MiB,16MiB,64MiB"
ALGORITHMS = "swing:latency,swing:bandwidth,ring,rabenseifner"


def main() -> None:
    args = benchcli.parser(__doc__, ESTIMATE).parse_args()
    benchcli.begin(args, ESTIMATE, "bench_mpi")
    print(f"# {time.strftime('%Y-%m-%d')}, MPICH wheel, ranks oversubscribed on this machine's cores")
    for ranks, spec in ((8, "torus:2x4"), (16, "torus:4x4")):
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "directcoll.cli.main", "run", "--topology", spec, "--sizes", SIZES,
                              "--algorithms", ALGORITHMS, "--repeat", "2", "--timeout", "120", "--json"],
                             capture_output=True, text=True, check=True)
        data = json.loads(out.stdout)
        rows: dict[str, dict[int, float]] = {}
        native: dict[int, float] = {}
        for r in data["results"]:
            if "skipped" in r:
                continue
            rows.setdefault(f"{r['algorithm']} {r['variant']}", {})[r["size"]] = r["time_s"] / r["native_time_s"]
            native[r["size"]] = r["native_time_s"]
            assert r["correct"], r
        sizes = sorted(native)
        print(f"\n{ranks} ranks ({spec}), {time.perf_counter() - t0:.0f} s wall; time ours / time MPI_Allreduce\n")
        print("| algorithm | " + " | ".join(_fmt(s) for s in sizes) + " |")
        print("|---|" + "---|" * len(sizes))
        for name, ratios in rows.items():
            print(f"| {name} | " + " | ".join(f"{ratios[s]:.2f}" for s in sizes) + " |")
        print("| MPI_Allreduce time | " + " | ".join(f"{native[s] * 1e3:.3g} ms" for s in sizes) + " |")


def _fmt(size: int) -> str:
    for unit, f in (("MiB", 2**20), ("KiB", 2**10)):
        if size >= f:
            return f"{size // f}{unit}"
    return f"{size}B"


if __name__ == "__main__":
    main()
