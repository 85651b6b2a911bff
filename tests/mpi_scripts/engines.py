"""The C engine against the Python engine and the MPI library, for every algorithm ``directcoll run`` offers on
the job's ranks: run by tests/test_native_engine.py under ``mpiexec -n N`` with ``TOPOLOGIES ALGORITHMS COUNTS...``
(TOPOLOGIES: specs separated by ";"; ALGORITHMS: "all" or a comma list; counts of the vector for allreduce, of one
rank's block for the others). Every (algorithm, variant, collective), built on the first of TOPOLOGIES where it
builds, runs at every count, in place and not, on int64 (SUM, MAX: bitwise), float64 (SUM: to reassociation)
and, at the smallest nonzero counts, int32 and float32 (MIN, PROD). Broadcast and reduce run from the last rank
(a non-zero root): in place is MPI_Bcast's one buffer (``dc.bcast``) and a reduce's MPI_IN_PLACE at the root; a
reduce's result is compared at the root only. Rank 0 prints one JSON object: {"cases": how many, "failures": [...],
"skipped": [...]}.
"""

import json
import sys

import numpy as np
from mpi4py import MPI

from directcoll.errors import UnsupportedShapeError
from directcoll.registry import ALGORITHMS, build
from directcoll.runtime import mpi as dc

comm = MPI.COMM_WORLD
n, rank = comm.Get_size(), comm.Get_rank()
topologies, only, counts = sys.argv[1].split(";"), sys.argv[2], [int(c) for c in sys.argv[3:]]
ROOT = n - 1
NATIVE = {"allreduce": comm.Allreduce, "reduce_scatter": comm.Reduce_scatter_block, "allgather": comm.Allgather,
          "alltoall": comm.Alltoall, "reduce": lambda x, ref, op: comm.Reduce(x, ref, op=op, root=ROOT),
          "broadcast": lambda x, ref: (ref.__setitem__(slice(None), x), comm.Bcast(ref, root=ROOT))}
OP_NAMES = {MPI.SUM.py2f(): "SUM", MPI.MAX.py2f(): "MAX", MPI.MIN.py2f(): "MIN", MPI.PROD.py2f(): "PROD"}
failures, skipped, built, cases = [], [], [], 0


def inputs(collective, count, dtype):
    """(sendbuf, recvbuf size) of this rank; values small enough that PROD of int32 does not overflow."""
    rng = np.random.default_rng(1000 * rank + count)
    one = collective in ("allreduce", "broadcast", "reduce")  # one vector of count elements
    size = count if one else count * (1 if collective == "allgather" else n)
    x = rng.integers(1, 4, size) if dtype(0).dtype.kind == "i" else rng.random(size) + 0.5
    out = count if collective == "reduce_scatter" or one else count * n
    return x.astype(dtype), out


def call(collective, schedule, engine, x, out, op, in_place):
    fn = dc.EXECUTORS[collective]
    kw = {"schedule": schedule, "timeout": 30, "engine": engine}
    if collective in ("allreduce", "reduce_scatter", "reduce"):
        kw["op"] = op
    if collective == "broadcast" and in_place:  # MPI_Bcast's one buffer
        y = x.copy() if rank == ROOT else np.full(out, -7, dtype=x.dtype)
        dc.bcast(comm, y, ROOT, schedule=schedule, timeout=30, engine=engine)
        return y
    if collective == "reduce":  # the result at the root only (recvbuf None elsewhere)
        y = (x.copy() if in_place else np.full(out, -7, dtype=x.dtype)) if rank == ROOT else None
        fn(comm, MPI.IN_PLACE if in_place and rank == ROOT else x, y, root=ROOT, **kw)
        return y if rank == ROOT else None
    if not in_place:
        y = np.full(out, -7, dtype=x.dtype)
        fn(comm, x, y, **kw)
        return y
    if collective == "allgather":
        y = np.full(out, -7, dtype=x.dtype)
        y[rank * x.size:(rank + 1) * x.size] = x
    else:
        y = x.copy()
    fn(comm, MPI.IN_PLACE, y, **kw)
    return y[:out]


def same(a, b, dtype, exact):
    if a is None:  # a reduce off the root
        return True
    return a.shape == b.shape and (np.array_equal(a, b) if exact else np.allclose(a, b, rtol=1e-12, atol=0))


def first_build(name, collective, variant):
    why = ""
    for topology in topologies:
        try:
            return build(name, topology, collective, variant=variant,
                         **({"root": ROOT} if collective in ("broadcast", "reduce") else {}))
        except UnsupportedShapeError as exc:
            why = str(exc)[:80]
    skipped.append(f"{name}:{variant} {collective}: {why}")
    return None


for name, alg in ALGORITHMS.items():
    for collective in ("allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast", "reduce"):
        if collective not in alg.collectives or (only != "all" and name not in only.split(",")):
            continue
        for variant in alg.variants or (None,):
            schedule = first_build(name, collective, variant)
            if schedule is None:
                continue
            built.append(f"{name}:{variant} {collective} on {schedule.meta.get('topology', '?')}")
            reduces = collective in ("allreduce", "reduce_scatter", "reduce")
            for count in counts:
                kinds = [(np.int64, MPI.SUM, True), (np.float64, MPI.SUM, False)]
                if reduces:
                    kinds.append((np.int64, MPI.MAX, True))
                if count in counts[1:3]:
                    kinds += [(np.int32, MPI.PROD, True), (np.float32, MPI.MIN, True)]
                if not reduces:
                    kinds = [(np.int64, None, True), (np.float32, None, True)]
                for dtype, op, exact in kinds:
                    x, out = inputs(collective, count, dtype)
                    ref = np.empty(out, dtype=dtype)
                    if reduces:
                        NATIVE[collective](x, ref, op=op)
                    else:
                        NATIVE[collective](x, ref)
                    for in_place in (False, True):
                        got = {e: call(collective, schedule, e, x, out, op, in_place) for e in ("c", "python")}
                        ok = same(got["c"], got["python"], dtype, exact) and same(got["c"], ref, dtype, exact)
                        cases += 1
                        if not comm.allreduce(ok, op=MPI.LAND) and rank == 0:
                            opname = OP_NAMES[op.py2f()] if op else "copy"
                            failures.append(f"{name}:{variant} {collective} count {count} "
                                            f"{np.dtype(dtype).name} {opname} in_place={in_place}")
if rank == 0:
    print(json.dumps({"cases": cases, "failures": failures, "skipped": skipped, "built": built}))
