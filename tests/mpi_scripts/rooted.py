"""Broadcast and reduce through directcoll.runtime.mpi, called as mpi4py programs call comm.Bcast and comm.Reduce,
checked against the MPI library's own; rank 0 prints one JSON object {check: passed}."""

import json

import numpy as np
from mpi4py import MPI

from directcoll.registry import build
from directcoll.runtime import mpi as dc

comm = MPI.COMM_WORLD
n, rank = comm.Get_size(), comm.Get_rank()
results = {}
for name in ("binomial", "chain", "swing-tree"):
    for root in range(n):
        x = np.arange(37.0) + 10 * rank
        ours, theirs = x.copy(), x.copy()
        dc.bcast(comm, ours, root, schedule=build(name, f"ring:{n}", "broadcast", root=root))
        comm.Bcast(theirs, root=root)
        results[f"{name} bcast root {root}"] = bool(comm.allreduce(np.array_equal(ours, theirs), MPI.LAND))
        s = build(name, f"ring:{n}", "reduce", root=root)
        mine, native = np.zeros(37), np.zeros(37)
        dc.reduce(comm, x, mine if rank == root else None, op=MPI.MAX, root=root, schedule=s)
        comm.Reduce(x, native, op=MPI.MAX, root=root)
        inplace = x.copy()
        dc.reduce(comm, MPI.IN_PLACE if rank == root else x, inplace, op=MPI.SUM, root=root, schedule=s)
        total = sum(np.arange(37.0) + 10 * r for r in range(n))
        good = rank != root or (np.array_equal(mine, native) and np.allclose(inplace, total))
        results[f"{name} reduce root {root}"] = bool(comm.allreduce(good, MPI.LAND))
if rank == 0:
    print(json.dumps(results))
