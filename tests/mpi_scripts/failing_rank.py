"""A 4-rank Swing allreduce in which rank 1 hangs (``hang``) or dies (``die``) at the start.

Run by tests/test_runtime.py under mpiexec: the other ranks must fail with a clear error within the timeout.
Each survivor prints its error and, given a third argument, also writes it to ``ARG.RANK``: MPI_Abort can tear
the job down before the launcher forwards what a rank printed last (seen on a loaded machine).
"""

import os
import sys
import time

import numpy as np
from mpi4py import MPI

from directcoll.errors import DirectcollError
from directcoll.registry import build
from directcoll.runtime import mpi as run

mode, timeout = sys.argv[1], float(sys.argv[2])
comm = MPI.COMM_WORLD
schedule = build("swing", f"ring:{comm.Get_size()}")
x = np.ones(64)
y = np.empty_like(x)
if comm.Get_rank() == 1:
    if mode == "die":
        os._exit(9)
    time.sleep(timeout * 10)
try:
    run.allreduce(comm, x, y, op=MPI.SUM, schedule=schedule, timeout=timeout)
except DirectcollError as exc:
    print(f"directcoll: error: {exc}", file=sys.stderr, flush=True)
    if len(sys.argv) > 3:
        with open(f"{sys.argv[3]}.{comm.Get_rank()}", "w", encoding="utf-8") as f:
            f.write(str(exc))
    comm.Abort(3)
