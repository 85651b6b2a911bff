"""Check every algorithm x collective x dtype x op against the MPI library's own collective.

Run under MPI: ``mpiexec -n 4 python3 -m directcoll.runtime.selftest [--topology SPEC] [--count N]``.
Rank 0 prints one line per failure and a summary; the exit status is non-zero on any failure.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from directcoll.algorithms import ALGORITHMS, build
from directcoll.errors import UnsupportedShapeError
from directcoll.runtime import mpi as run

NATIVE_OPS = {"sum": "SUM", "prod": "PROD", "max": "MAX", "min": "MIN"}


def _data(rank: int, size: int, dtype, op: str) -> np.ndarray:
    rng = np.random.default_rng(1000 + rank)
    if op == "prod":  # keep products of many ranks finite and exact in floating point
        return rng.choice(np.array([1, 2, -1], dtype=dtype), size)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-1000, 1000, size, dtype=dtype)
    return (rng.random(size) * 100 - 50).astype(dtype)


def main(argv=None) -> int:
    from mpi4py import MPI

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--topology", help="topology spec (default ring:N)")
    ap.add_argument("--count", type=int, default=0, help="elements per rank block (default 3, and 1)")
    args = ap.parse_args(argv)
    comm = MPI.COMM_WORLD
    n, rank = comm.Get_size(), comm.Get_rank()
    spec = args.topology or f"ring:{n}"
    failures, checks = [], 0
    counts = [args.count] if args.count else [3, 1]
    for name, alg in sorted(ALGORITHMS.items()):
        for collective in alg.collectives:
            for variant in (None, *alg.variants):
                try:
                    schedule = build(name, spec, collective, variant=variant)
                except UnsupportedShapeError:
                    continue
                for dtype in run.DTYPES:
                    for op in (("sum", "prod", "max", "min") if collective != "allgather" else ("sum",)):
                        for k in counts:
                            checks += 1
                            ok = _check_one(comm, schedule, collective, dtype, op, k, n, rank)
                            if not ok:
                                failures.append(f"{name} {variant} {collective} {np.dtype(dtype).name} {op} k={k}")
    all_failures = comm.gather(failures, root=0)
    if rank == 0:
        merged = sorted({f for fs in all_failures for f in fs})
        for f in merged:
            print(f"FAILED {f}")
        print(f"selftest on {spec}: {checks} checks, {len(merged)} failed")
        sys.stdout.flush()
    return 1 if comm.bcast(bool(failures) or any(all_failures or []), root=0) else 0


def _check_one(comm, schedule, collective, dtype, op, k, n, rank) -> bool:
    from mpi4py import MPI

    mop = getattr(MPI, NATIVE_OPS[op])
    if collective == "allreduce":
        x = _data(rank, n * k, dtype, op)
        ours, native = np.empty_like(x), np.empty_like(x)
        run.allreduce(x, ours, comm, schedule=schedule, op=op, timeout=60)
        comm.Allreduce(x, native, op=mop)
    elif collective == "reduce_scatter":
        x = _data(rank, n * k, dtype, op)
        ours, native = np.empty(k, dtype=dtype), np.empty(k, dtype=dtype)
        run.reduce_scatter(x, ours, comm, schedule=schedule, op=op, timeout=60)
        comm.Reduce_scatter_block(x, native, op=mop)
    else:
        x = _data(rank, k, dtype, op)
        ours, native = np.empty(n * k, dtype=dtype), np.empty(n * k, dtype=dtype)
        run.allgather(x, ours, comm, schedule=schedule, timeout=60)
        comm.Allgather(x, native)
    if np.issubdtype(dtype, np.integer) or op in ("max", "min") or collective == "allgather":
        return bool(np.array_equal(ours, native))
    tol = 1e-3 if dtype == np.float32 else 1e-9
    return bool(np.allclose(ours, native, rtol=tol, atol=tol * 50 * n))


if __name__ == "__main__":
    sys.exit(main())
