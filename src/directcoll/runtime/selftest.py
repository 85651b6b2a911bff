"""Check every algorithm x collective x dtype x op against the MPI library's own collective.

Run under MPI: ``mpiexec -n 4 python3 -m directcoll.runtime.selftest [--topology SPEC] [--count N]``.
Rank 0 prints one line per failure and a summary; the exit status is non-zero on any failure. Every schedule runs
through the executor the way mpi4py programs call it (``allreduce(comm, sendbuf, recvbuf, op=MPI.SUM)``, ...),
for every dtype and op, and once more with ``MPI.IN_PLACE`` (float64, MPI.SUM), against ``comm.Allreduce``,
``comm.Reduce_scatter_block``, ``comm.Allgather``, ``comm.Alltoall``, ``comm.Ibcast`` and ``comm.Ireduce``
(broadcast and reduce from the last rank; the reduce checked at the root, IN_PLACE there only).

Besides the registered algorithms it runs two hand-built all-to-all schedules that the direct all-to-all never
exercises (:func:`hand_built`): pieces relayed through other ranks at fractional ends, and pieces that span
several pairs' blocks and are forwarded around a ring.

Source: docs/runtime.md; MPI 4.1 standard, Ch. 6 (the reference collectives); docs/verification.md.

>>> [label for label, _ in hand_built(4)]
['relayed k=1', 'relayed k=2', 'ring-relay k=2']
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from directcoll.errors import DirectcollError, UnsupportedShapeError
from directcoll.registry import ALGORITHMS, build
from directcoll.runtime import MPI_EXTRA, missing
from directcoll.schedule.ir import COPY, Schedule, ScheduleBuilder


def _data(rank: int, size: int, dtype, op: str) -> np.ndarray:
    rng = np.random.default_rng(1000 + rank)
    if op == "PROD":  # keep products of many ranks finite and exact in floating point
        return rng.choice(np.array([1, 2, -1], dtype=dtype), size)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-1000, 1000, size, dtype=dtype)
    return (rng.random(size) * 100 - 50).astype(dtype)


def relayed_alltoall(nranks: int, k: int = 1) -> Schedule:
    """A hand-built all-to-all with fractional pieces: block c of every pair (i, j), i != j, is cut at 1/3 or 2/3
    (alternating) and its two pieces go through two different other ranks (step 0 to the relay, step 1 or 2 on
    to j; with fewer than two other ranks, a piece goes straight to j). Denominator 3, nblocks N^2 k.

    Returns:
        An all-to-all :class:`~directcoll.schedule.ir.Schedule` (3 steps for N >= 3).

    Raises:
        ScheduleError: ``nranks`` < 1 (nothing to build).

    Source: docs/architecture.md, "Schedule IR" (fractional pieces, all-to-all blocks); Basu et al. (HPDC'24) Sec. 4
    (relayed all-to-all schedules).

    >>> from directcoll.verify import verify
    >>> s = relayed_alltoall(4)
    >>> s, verify(s).ok
    (Schedule(alltoall, relayed, N=4, nblocks=16, steps=3, transfers=48), True)
    """
    n = nranks
    b = ScheduleBuilder("alltoall", n, n * n * k, denominator=3)
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            relays = [int(q) for q in np.roll(np.arange(n), -(i + j)) if q not in (i, j)] + [j, j]
            for c in range(k):
                x = ((i * n + j) * k + c) * 3
                cut = x + (1 if (i + j + c) % 2 else 2)
                for q, (lo, hi) in zip(relays[:2], ((x, cut), (cut, x + 3)), strict=True):
                    b.add(0, i, q, COPY, lo, hi)
                    if q != j:
                        b.add(1 + q % 2, q, j, COPY, lo, hi)
    return b.build(meta={"algorithm": "relayed", "variant": f"k={k}"})


def ring_alltoall(nranks: int, k: int = 1) -> Schedule:
    """A hand-built all-to-all in N-1 steps around a ring: in step t, rank i + t forwards to i + t + 1 the blocks
    of the pairs (i, i + d), d > t, as few pieces as possible (a piece spans several pairs' blocks, which the
    receiving relay keeps apart from its own). nblocks N^2 k.

    Returns:
        An all-to-all :class:`~directcoll.schedule.ir.Schedule` with N - 1 steps.

    Raises:
        ScheduleError: ``nranks`` < 1.

    Source: docs/architecture.md, "Schedule IR"; a ring relay as in Basu et al. (HPDC'24) Sec. 4 (store-and-forward
    relays).

    >>> from directcoll.verify import verify
    >>> verify(ring_alltoall(4, 2)).ok
    True
    """
    n = nranks
    b = ScheduleBuilder("alltoall", n, n * n * k)
    for t in range(n - 1):
        for i in range(n):
            dests = sorted((i + d) % n for d in range(t + 1, n))
            runs = [[dests[0], dests[0] + 1]]
            for j in dests[1:]:
                if runs[-1][1] == j:
                    runs[-1][1] = j + 1
                else:
                    runs.append([j, j + 1])
            for lo, hi in runs:
                b.add(t, (i + t) % n, (i + t + 1) % n, COPY, (i * n + lo) * k, (i * n + hi) * k)
    return b.build(meta={"algorithm": "ring-relay", "variant": f"k={k}"})


def hand_built(nranks: int) -> list[tuple[str, Schedule]]:
    """(label, schedule) of the hand-built all-to-all schedules checked besides the registered algorithms.

    Raises:
        ScheduleError: ``nranks`` < 1.

    Source: this module's docstring (cases the direct all-to-all never exercises).
    """
    return [(f"relayed k={k}", relayed_alltoall(nranks, k)) for k in (1, 2)] + [
        ("ring-relay k=2", ring_alltoall(nranks, 2))]


def main(argv=None) -> int:
    """Check every registered algorithm x collective x dtype x op (and :func:`hand_built`) against the MPI library's own
    collective on ``--topology`` (default ring:N); run under ``mpiexec``.

    Output: rank 0 prints ``FAILED ...`` per failure and ``selftest on SPEC: C checks, F failed``.

    Returns:
        0 when every check passed, else 1.

    Raises:
        SystemExit: bad arguments (argparse). MissingDependencyError: no mpi4py (the ``mpi`` extra).
        Errors of the MPI library propagate.

    Source: MPI 4.1 standard, Ch. 6 (MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather, MPI_Alltoall);
    docs/runtime.md.
    """
    try:
        from mpi4py import MPI

        from directcoll.runtime import mpi as run
    except ImportError as exc:
        raise missing("the selftest", MPI_EXTRA, exc) from exc

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--topology", help="topology spec (default ring:N)")
    ap.add_argument("--count", type=int, default=0,
                    help="elements per rank block, all-to-all: per pair of ranks (default 3, and 1)")
    args = ap.parse_args(argv)
    comm = MPI.COMM_WORLD
    n, rank = comm.Get_size(), comm.Get_rank()
    spec = args.topology or f"ring:{n}"
    failures, checks = [], 0
    counts = [args.count] if args.count else [3, 1]
    schedules = []
    for name, alg in sorted(ALGORITHMS.items()):
        for collective in alg.collectives:
            for variant in (None, *alg.variants):
                try:
                    root = {"root": n - 1} if collective in ("broadcast", "reduce") else {}  # not rank 0
                    schedules.append((f"{name} {variant}", build(name, spec, collective, variant=variant, **root)))
                except UnsupportedShapeError:
                    continue
    schedules += hand_built(n) if n > 1 else []
    for label, schedule in schedules:
        collective = schedule.collective.value
        cases = [(dtype, op, k, False) for dtype in run.DTYPES
                 for op in (run.OPS if collective in ("allreduce", "reduce_scatter", "reduce") else ["SUM"])
                 for k in counts]
        cases += [(np.float64, "SUM", k, True) for k in counts if collective != "broadcast"]  # ncclBroadcast's form
        for dtype, op, k, in_place in cases:
            checks += 1
            if not _check_one(comm, run, schedule, collective, dtype, op, k, in_place):
                failures.append(f"{label} {collective} {np.dtype(dtype).name} MPI.{op} k={k}"
                                + (" MPI.IN_PLACE" if in_place else ""))
    all_failures = comm.gather(failures, root=0)
    if rank == 0:
        merged = sorted({f for fs in all_failures for f in fs})
        for f in merged:
            print(f"FAILED {f}")
        print(f"selftest on {spec}: {checks} checks, {len(merged)} failed")
        sys.stdout.flush()
    return 1 if comm.bcast(bool(failures) or any(all_failures or []), root=0) else 0


def _check_one(comm, run, schedule, collective: str, dtype, op: str, k: int, in_place: bool) -> bool:
    """Our executor against the MPI library's collective on the same data: ``op`` is a key of ``run.OPS``; with
    ``in_place``, ours runs with MPI.IN_PLACE (the input in recvbuf)."""
    from mpi4py import MPI

    n, rank = comm.Get_size(), comm.Get_rank()
    mpi_op = run.OPS[op]
    size = k if collective == "allgather" else n * k  # sendbuf: a block, or N blocks (all-to-all: k per pair)
    x = _data(rank, size, dtype, op)
    out = k if collective == "reduce_scatter" else n * k
    ours, native = np.empty(out, dtype=dtype), np.empty(out, dtype=dtype)
    send = x
    root = schedule.root
    if in_place and collective == "reduce" and rank != root:  # MPI_IN_PLACE is the root's only
        in_place = False
    if in_place:  # the input goes where MPI_IN_PLACE reads it
        send = MPI.IN_PLACE
        if collective == "reduce_scatter":
            ours = x.copy()  # the whole input; the result lands in its first k elements
        elif collective == "allgather":
            ours[rank * k:(rank + 1) * k] = x
        else:
            ours = x.copy()
    if collective in ("allreduce", "reduce_scatter", "reduce"):
        run.EXECUTORS[collective](comm, send, ours, mpi_op, schedule=schedule, timeout=60)
        run.native(comm, collective, x, native, mpi_op, timeout=60, root=root)
    else:
        run.EXECUTORS[collective](comm, send, ours, schedule=schedule, timeout=60)
        run.native(comm, collective, x, native, timeout=60, root=root)
    ours = ours[:out]
    if collective == "reduce" and rank != root:
        return True  # MPI_Reduce defines the result at the root only
    if np.issubdtype(dtype, np.integer) or op in ("MAX", "MIN") or collective in ("allgather", "alltoall", "broadcast"):
        return bool(np.array_equal(ours, native))
    tol = 1e-3 if dtype == np.float32 else 1e-9
    return bool(np.allclose(ours, native, rtol=tol, atol=tol * 50 * n))


if __name__ == "__main__":
    try:
        sys.exit(main())
    except DirectcollError as exc:
        print(f"selftest: error: {exc}", file=sys.stderr)
        sys.exit(2)
