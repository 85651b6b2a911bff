"""The MPI executor called as mpi4py programs call ``comm.Allreduce`` and friends, against those methods.

Run by tests/test_runtime.py under ``mpiexec -n 2``: every case runs our executor and the MPI library's own
collective on the same data (IN_PLACE, buffer specifications, ops, recvcounts) and rank 0 prints one JSON object,
{case: true when every rank matched}.
"""

import json

import numpy as np
from mpi4py import MPI

from directcoll.registry import build
from directcoll.runtime import mpi as dc

comm = MPI.COMM_WORLD
n, rank = comm.Get_size(), comm.Get_rank()
ring = f"ring:{n}"
allreduce_s = build("swing", ring)
reduce_scatter_s = build("swing", ring, "reduce_scatter")
allgather_s = build("ring", ring, "allgather")
alltoall_s = build("direct", ring, "alltoall")
rng = np.random.default_rng(rank)
k = 5
results = {}


def case(name, ours, native):
    results[name] = bool(comm.allreduce(bool(np.array_equal(ours, native)), op=MPI.LAND))


# allreduce: separate buffers, MPI.IN_PLACE, buffer specifications, every op
x = rng.integers(-100, 100, n * k).astype(np.int64)
ref = np.empty_like(x)
comm.Allreduce(x, ref, op=MPI.SUM)
y = np.empty_like(x)
dc.allreduce(comm, x, y, op=MPI.SUM, schedule=allreduce_s)
case("allreduce", y, ref)
z = x.copy()
dc.allreduce(comm, MPI.IN_PLACE, z, op=MPI.SUM, schedule=allreduce_s)
case("allreduce IN_PLACE", z, ref)
y = np.empty_like(x)
dc.allreduce(comm, [x, MPI.INT64_T], [y, MPI.INT64_T], schedule=allreduce_s)
case("allreduce [buf, datatype]", y, ref)
raw, out = bytearray(x.tobytes()), bytearray(x.nbytes)  # any buffer, its bytes read as the datatype
dc.allreduce(comm, [raw, MPI.INT64_T], [out, MPI.INT64_T], schedule=allreduce_s)
case("allreduce [bytearray, datatype]", np.frombuffer(out, np.int64), ref)
big, sub = np.zeros(n * k + 7), np.empty(n * k)
big[3:3 + n * k] = x
comm.Allreduce([big, (n * k, 3), MPI.DOUBLE], sub, op=MPI.SUM)
mine = np.empty(n * k)
dc.allreduce(comm, [big, (n * k, 3), MPI.DOUBLE], [mine, n * k, MPI.DOUBLE], schedule=allreduce_s)
case("allreduce [buf, (count, displ), datatype]", mine, sub)
for name, op in dc.OPS.items():
    comm.Allreduce(x, ref, op=op)
    y = np.empty_like(x)
    dc.allreduce(comm, x, y, op, schedule=allreduce_s)
    case(f"allreduce MPI.{name}", y, ref)

# reduce_scatter_block and reduce_scatter (equal recvcounts)
x = rng.integers(-100, 100, n * k).astype(np.int32)
ref = np.empty(k, np.int32)
comm.Reduce_scatter_block(x, ref, op=MPI.MAX)
y = np.empty(k, np.int32)
dc.reduce_scatter_block(comm, x, y, op=MPI.MAX, schedule=reduce_scatter_s)
case("reduce_scatter_block", y, ref)
z = x.copy()
dc.reduce_scatter_block(comm, MPI.IN_PLACE, z, op=MPI.MAX, schedule=reduce_scatter_s)
case("reduce_scatter_block IN_PLACE", z[:k], ref)
y = np.empty(k, np.int32)
dc.reduce_scatter(comm, x, y, op=MPI.MAX, schedule=reduce_scatter_s)
case("reduce_scatter recvcounts=None", y, ref)
y = np.empty(k, np.int32)
dc.reduce_scatter(comm, x, y, [k] * n, MPI.MAX, schedule=reduce_scatter_s)
case("reduce_scatter recvcounts", y, ref)
z = x.copy()
dc.reduce_scatter(comm, MPI.IN_PLACE, z, recvcounts=[k] * n, op=MPI.MAX, schedule=reduce_scatter_s)
case("reduce_scatter IN_PLACE", z[:k], ref)

# allgather
x = rng.random(k)
ref = np.empty(n * k)
comm.Allgather(x, ref)
y = np.empty(n * k)
dc.allgather(comm, x, y, schedule=allgather_s)
case("allgather", y, ref)
z = np.zeros(n * k)
z[rank * k:(rank + 1) * k] = x
dc.allgather(comm, MPI.IN_PLACE, z, schedule=allgather_s)
case("allgather IN_PLACE", z, ref)
z = np.zeros((n, k), dtype=np.float32)  # a 2-D recvbuf, as mpi4py reads it: its elements in memory order
z[rank] = x
ref32 = np.empty((n, k), dtype=np.float32)
comm.Allgather(x.astype(np.float32), ref32)
dc.allgather(comm, MPI.IN_PLACE, [z, MPI.FLOAT], schedule=allgather_s)
case("allgather IN_PLACE 2-D float32", z, ref32)

# alltoall
x = np.arange(n * k, dtype=np.int64) + 1000 * rank
ref = np.empty_like(x)
comm.Alltoall(x, ref)
y = np.empty_like(x)
dc.alltoall(comm, x, y, schedule=alltoall_s)
case("alltoall", y, ref)
z = x.copy()
dc.alltoall(comm, MPI.IN_PLACE, z, schedule=alltoall_s)
case("alltoall IN_PLACE", z, ref)

if rank == 0:
    print(json.dumps(results), flush=True)
