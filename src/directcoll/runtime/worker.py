"""The ranks of ``directcoll run``: time our schedules and the MPI library's own collective, check results.

Started by ``directcoll run`` through ``mpiexec``; rank 0 writes one JSON object (``--json-out``).
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from directcoll.algorithms import build
from directcoll.errors import DirectcollError, UnsupportedShapeError
from directcoll.runtime import mpi as run
from directcoll.units import parse_sizes

NATIVE = {"allreduce": "Allreduce", "reduce_scatter": "Reduce_scatter_block", "allgather": "Allgather",
          "alltoall": "Alltoall"}


def _buffers(collective: str, count: int, n: int, rank: int):
    """(sendbuf, our recvbuf, MPI's recvbuf) of float64 for a vector of ``count`` elements (all-to-all: per rank)."""
    rng = np.random.default_rng(rank)
    if collective == "alltoall":
        return rng.random(count), np.empty(count), np.empty(count)
    if collective == "allgather":
        x = rng.random(count // n)
        return x, np.empty(count), np.empty(count)
    x = rng.random(count)
    out = count if collective == "allreduce" else count // n
    return x, np.empty(out), np.empty(out)


def _time(comm, fn, repeat: int) -> float:
    from mpi4py import MPI

    fn()  # warm-up: compiles programs, touches buffers
    comm.Barrier()
    t0 = MPI.Wtime()
    for _ in range(repeat):
        fn()
    elapsed = (MPI.Wtime() - t0) / repeat
    return comm.allreduce(elapsed, op=MPI.MAX)


def main(argv=None) -> int:
    from mpi4py import MPI

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--topology", required=True)
    ap.add_argument("--algorithms", required=True, help="comma list of NAME or NAME:VARIANT")
    ap.add_argument("--collective", default="allreduce")
    ap.add_argument("--sizes", required=True)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--timeout", type=float, default=60.0)
    ap.add_argument("--native", action="store_true")
    ap.add_argument("--json-out", required=True)
    args = ap.parse_args(argv)
    comm = MPI.COMM_WORLD
    n, rank = comm.Get_size(), comm.Get_rank()
    results = []
    native_cache: dict[int, float] = {}
    for size in parse_sizes(args.sizes):
        # float64 elements (all-to-all: of each rank's sendbuf), a multiple of N (reduce-scatter, allgather, alltoall)
        count = max(n, (size // 8) // n * n)
        for item in args.algorithms.split(","):
            name, _, variant = item.partition(":")
            try:
                schedule = build(name, args.topology, args.collective, variant=variant or None)
            except UnsupportedShapeError as exc:
                if rank == 0:
                    results.append({"algorithm": name, "variant": variant or None, "size": size,
                                    "skipped": str(exc)})
                continue
            send, ours, native = _buffers(args.collective, count, n, rank)
            fn = getattr(run, args.collective)
            kwargs = {"schedule": schedule, "timeout": args.timeout}
            t = _time(comm, lambda fn=fn, kwargs=kwargs, send=send, ours=ours: fn(send, ours, comm, **kwargs),
                      args.repeat)
            getattr(comm, NATIVE[args.collective])(send, native)
            same = (np.array_equal(ours, native) if args.collective == "alltoall"  # copies: exactly
                    else np.allclose(ours, native, rtol=1e-9, atol=1e-9))
            correct = comm.allreduce(bool(same), op=MPI.LAND)
            row = {"algorithm": schedule.algorithm, "variant": schedule.meta.get("variant"), "size": size,
                   "bytes": count * 8, "time_s": t, "goodput_Bps": count * 8 / t, "correct": correct}
            if args.native:
                if size not in native_cache:
                    native_cache[size] = _time(comm, lambda s=send, o=native: getattr(comm, NATIVE[args.collective])(
                        s, o), args.repeat)
                row["native_time_s"] = native_cache[size]
            results.append(row)
    if rank == 0:
        with open(args.json_out, "w") as fh:
            json.dump({"ranks": n, "topology": args.topology, "collective": args.collective, "results": results}, fh)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except DirectcollError as exc:
        print(f"directcoll run: error: {exc}", file=sys.stderr, flush=True)
        from mpi4py import MPI

        MPI.COMM_WORLD.Abort(3)
