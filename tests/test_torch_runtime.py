"""Running schedules on torch.distributed (gloo, CPU): results equal torch's own collectives, refusals, failures.

Each job spawns 2, 3 or 4 ranks once (importing torch is slow) on loopback and runs many checks in it; the
tests then read the job's report. Skipped when torch is not installed (``pip install 'directcoll[torch]'``). The
executor is called as torch.distributed is: output first, ``op=ReduceOp.SUM``, ``group=``.
"""

import multiprocessing
import os
import queue
import re
import socket
import subprocess
import sys
import time
from datetime import timedelta

import numpy as np
import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

from directcoll.errors import DirectcollError, UnsupportedShapeError  # noqa: E402
from directcoll.registry import ALGORITHMS, build  # noqa: E402
from directcoll.runtime import torch_dist as dc  # noqa: E402
from directcoll.runtime.selftest import hand_built  # noqa: E402
from directcoll.schedule.ir import COPY, REDUCE, ScheduleBuilder  # noqa: E402

#: (dtype, op, elements per rank block) run for every schedule: every dtype and op, exact integer sums, and one
#: element per block (rounded pieces, empty messages); allgather runs the first four, ops aside, and alltoall
#: (k elements per pair of ranks) those and the last
CASES = [(torch.int64, "sum", 3), (torch.float32, "sum", 3), (torch.float64, "prod", 3), (torch.int32, "max", 3),
         (torch.int64, "min", 3), (torch.int32, "sum", 1)]
NATIVE_OP = {"sum": "SUM", "prod": "PRODUCT", "max": "MAX", "min": "MIN"}
JOB_TIMEOUT = 120  # s: a job that takes longer fails instead of hanging the suite


def _schedules(spec: str, n: int) -> list:
    """(label, collective, schedule) for every registered algorithm x variant x collective that serves ``spec``,
    and the hand-built all-to-alls of the MPI selftest (fractional pieces relayed through other ranks, pieces
    spanning several pairs)."""
    out = [(label, "alltoall", schedule) for label, schedule in hand_built(n)]
    for name, alg in sorted(ALGORITHMS.items()):
        for collective in alg.collectives:
            for variant in (None, *alg.variants):
                try:
                    out.append((f"{name}:{variant} {collective}", collective,
                                build(name, spec, collective, variant=variant)))
                except UnsupportedShapeError:
                    pass
    return out


def _data(rank: int, size: int, dtype, op: str):
    rng = np.random.default_rng(1000 + rank)
    npdtype = torch.empty(0, dtype=dtype).numpy().dtype
    if op == "prod":  # products of many ranks stay finite and exact
        x = rng.choice(np.array([1, 2, -1], dtype=npdtype), size)
    elif npdtype.kind == "i":
        x = rng.integers(-1000, 1000, size, dtype=npdtype)
    else:
        x = (rng.random(size) * 100 - 50).astype(npdtype)
    return torch.from_numpy(x)


def _check_one(schedule, collective: str, dtype, op: str, k: int, rank: int, n: int) -> bool:
    """Our executor and torch's collective on the same data, called alike (output first, in place for all_reduce)."""
    native_op = getattr(dist.ReduceOp, NATIVE_OP[op])
    if collective == "allreduce":
        x = _data(rank, n * k, dtype, op)
        ours, native = x.clone(), x.clone()
        dc.all_reduce(ours, op=native_op, schedule=schedule, timeout=60)
        dist.all_reduce(native, op=native_op)
    elif collective == "reduce_scatter":
        x = _data(rank, n * k, dtype, op)
        ours, native = torch.empty(k, dtype=dtype), torch.empty(k, dtype=dtype)
        dc.reduce_scatter_tensor(ours, x, op=native_op, schedule=schedule, timeout=60)
        dist.reduce_scatter_tensor(native, x, op=native_op)
    elif collective == "allgather":
        x = _data(rank, k, dtype, op)
        ours, native = torch.empty(n * k, dtype=dtype), torch.empty(n * k, dtype=dtype)
        dc.all_gather_into_tensor(ours, x, schedule=schedule, timeout=60)
        dist.all_gather_into_tensor(native, x)
    else:  # alltoall, k elements per pair
        x = _data(rank, n * k, dtype, op)
        ours, native = torch.empty(n * k, dtype=dtype), torch.empty(n * k, dtype=dtype)
        dc.all_to_all_single(ours, x, schedule=schedule, timeout=60)
        dist.all_to_all_single(native, x)
    if not dtype.is_floating_point or op in ("max", "min") or collective in ("allgather", "alltoall"):
        return bool(torch.equal(ours, native))
    tol = 1e-3 if dtype == torch.float32 else 1e-9
    return bool(torch.allclose(ours, native, rtol=tol, atol=tol * 50 * n))


def _in_place(rank: int, n: int) -> list[str]:
    """The in-place layouts torch accepts, and 2-D tensors, against torch's collectives: "ok" or what differed."""
    k, out = 3, []
    x = _data(rank, n * k, torch.int64, "sum")
    shard = x[:k].clone()
    rs, ag = build("ring", f"ring:{n}", "reduce_scatter"), build("ring", f"ring:{n}", "allgather")
    native = torch.empty(k, dtype=torch.int64)
    dist.reduce_scatter_tensor(native, x)
    whole = x.clone().view(n, k)
    dc.reduce_scatter_tensor(whole[rank], whole, schedule=rs, timeout=30)  # output: this rank's chunk of input
    out.append("ok" if torch.equal(whole[rank], native) else f"reduce_scatter_tensor in place: {whole[rank]}")
    native = torch.empty(n * k, dtype=torch.int64)  # gloo takes the concatenated shape only
    dist.all_gather_into_tensor(native, shard)
    gathered = torch.zeros(n, k, dtype=torch.int64)  # the stacked shape (N, k)
    gathered[rank] = shard
    dc.all_gather_into_tensor(gathered, gathered[rank], schedule=ag, timeout=30)  # input: this rank's chunk
    out.append("ok" if torch.equal(gathered.reshape(-1), native) else f"all_gather_into_tensor in place: {gathered}")
    grid, native = x.clone().view(n, k), x.clone().view(n, k)
    dc.all_reduce(grid, schedule=build("swing", f"ring:{n}"), timeout=30)  # op defaults to ReduceOp.SUM
    dist.all_reduce(native)
    out.append("ok" if torch.equal(grid, native) else f"all_reduce 2-D: {grid}")
    return out


def _refusals(rank: int, n: int) -> list[tuple[str, str]]:
    """Every mismatch is refused with a DirectcollError before any message: (expected part, message), in order."""
    other = build("swing", f"ring:{n + 2}")
    s = build("swing", f"ring:{n}")
    rs = build("swing", f"ring:{n}", "reduce_scatter")
    ag = build("ring", f"ring:{n}", "allgather")
    a2a = build("direct", f"ring:{n}", "alltoall")
    b = ScheduleBuilder("alltoall", n, n * n)
    b.add(0, [0, 1], [1, 1], [COPY, REDUCE], [1, 0], [2, 1], [0, n])
    reducing = b.build()
    x, y = torch.ones(2 * n), torch.empty(2 * n)
    small = torch.empty(2)
    cases = [
        (lambda: dc.all_reduce(x, schedule=other), f"the schedule is for {n + 2} ranks; the process group has {n}"),
        (lambda: dc.reduce_scatter_tensor(small, x, schedule=s), "not a reduce_scatter"),
        (lambda: dc.reduce_scatter_tensor(x, small, schedule=rs),  # input first, as some libraries order them
         f"reduce_scatter_tensor: input has 2 elements; expected {2 * n * n} = group size {n} x output's {2 * n} "
         "(torch.distributed takes the output first"),
        (lambda: dc.reduce_scatter_tensor(torch.empty(3), x, schedule=rs),
         f"reduce_scatter_tensor: input has {2 * n} elements; expected {3 * n}"),
        (lambda: dc.all_gather_into_tensor(small, y, schedule=ag),  # input first
         f"all_gather_into_tensor: output_tensor has 2 elements; expected {2 * n * n} = group size {n} x "
         f"input_tensor's {2 * n} (torch.distributed takes the output first"),
        (lambda: dc.all_gather_into_tensor(y, y[:2], schedule=ag) if rank else dc.all_gather_into_tensor(
            y, y[1:3], schedule=ag), "all_gather_into_tensor: output_tensor overlaps input_tensor"),
        (lambda: dc.reduce_scatter_tensor(x[1:3], x, schedule=rs), "reduce_scatter_tensor: output overlaps input"),
        (lambda: dc.all_reduce(x.double(), schedule=s, op=dist.ReduceOp.AVG),
         "op ReduceOp.AVG is not supported: give ReduceOp.SUM"),
        (lambda: dc.all_reduce(x, op="sum", schedule=s), "is not supported: give ReduceOp.SUM, ReduceOp.PRODUCT"),
        (lambda: dc.all_reduce(x, async_op=True, schedule=s), "async_op=True is not supported"),
        (lambda: dc.all_reduce(x.half(), schedule=s), "accepted: torch.float32"),
        (lambda: dc.all_reduce(torch.empty(2 * n, device="meta"), schedule=s), "is on meta"),
        (lambda: dc.all_reduce(torch.empty(2, 2 * n)[:, 0], schedule=s), "must be contiguous"),
        (lambda: dc.all_reduce(x.numpy(), schedule=s), "must be a torch.Tensor"),
        (lambda: dc.all_to_all_single(y, x, schedule=s), "the schedule is a allreduce, not a alltoall"),
        (lambda: dc.all_to_all_single(y, x, schedule=build("direct", f"ring:{n + 1}", "alltoall")),
         f"the schedule is for {n + 1} ranks"),
        (lambda: dc.all_to_all_single(y[:-n], x, schedule=a2a), f"all_to_all_single: output has {n} elements; "
                                                                f"expected {2 * n}, as many as input"),
        (lambda: dc.all_to_all_single(torch.empty(2 * n + 1), torch.ones(2 * n + 1), schedule=a2a),
         f"input has {2 * n + 1} rows (dim 0), not divisible into {n} equal splits"),
        (lambda: dc.all_to_all_single(y, x, [1] + [2] * (n - 2) + [3], schedule=a2a),
         "output_split_sizes [1, " + "2, " * (n - 2) + f"3] are not {n} equal splits"),
        (lambda: dc.all_to_all_single(y, x, input_split_sizes=[2 * n] + [0] * (n - 1), schedule=a2a),
         "uneven splits are not supported"),
        (lambda: dc.all_to_all_single(x, x, schedule=a2a), "all_to_all_single: output overlaps input"),
        (lambda: dc.all_to_all_single(y, x.int(), schedule=a2a), "share one dtype"),
        (lambda: dc.all_to_all_single(y, x, schedule=reducing), "an all-to-all only copies"),
    ]
    messages = []
    for case, expected in cases:
        try:
            case()
            messages.append((expected, "not refused"))
        except DirectcollError as exc:
            messages.append((expected, str(exc)))
    # had any refusal sent a message, this allreduce (in place, like all_reduce) would receive it and be wrong
    y = torch.full((2 * n,), float(rank))
    dc.all_reduce(y, schedule=s, timeout=30)
    expected = torch.full((2 * n,), n * (n - 1) / 2)
    messages.append(("ok", "ok" if torch.equal(y, expected) else f"wrong result {y}"))
    return messages


def _subgroup(rank: int, n: int) -> str:
    """Ranks 1..n-1 as their own group (group rank = global rank - 1): results equal torch's on that group, and
    rank 0, not a member, is refused."""
    sub = dist.new_group(list(range(1, n)))
    x = _data(rank, 4 * (n - 1), torch.int64, "sum")
    schedule = build("ring", f"ring:{n - 1}", "reduce_scatter")
    if rank == 0:
        try:
            dc.reduce_scatter_tensor(torch.empty(4, dtype=torch.int64), x, group=sub, schedule=schedule)
            return "not refused"
        except DirectcollError as exc:
            return str(exc)
    ours, native = torch.empty(4, dtype=torch.int64), torch.empty(4, dtype=torch.int64)
    dc.reduce_scatter_tensor(ours, x, group=sub, schedule=schedule, timeout=30)
    dist.reduce_scatter_tensor(native, x, group=sub)
    return "ok" if torch.equal(ours, native) else f"{ours} != {native}"


def _rank_main(rank: int, n: int, port: int, schedules: list, failure: str, report) -> None:
    """One rank of a job: checks against torch's collectives, refusals, then ``failure`` (``hang``: rank n-1
    sleeps; ``die``: rank n-1 exits) while the others run an allreduce with a short timeout, report and wait
    to be killed (so that no survivor's exit is what the others see)."""
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # loopback only
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n,
                            timeout=timedelta(seconds=60))
    t0 = time.perf_counter()
    failures, checks = [], 0
    for label, collective, schedule in schedules:
        cases = {"allgather": CASES[:4], "alltoall": CASES[:4] + CASES[5:]}.get(collective, CASES)
        for dtype, op, k in cases:
            checks += 1
            if not _check_one(schedule, collective, dtype, op, k, rank, n):
                failures.append(f"{label} {dtype} {op} k={k}")
    report.put((rank, "checks", (checks, failures, time.perf_counter() - t0)))
    report.put((rank, "refusals", _refusals(rank, n)))
    report.put((rank, "in place", _in_place(rank, n)))
    report.put((rank, "group", _subgroup(rank, n) if n > 2 else "ok"))
    dist.barrier()
    if failure == "die" and rank == n - 1:
        report.close()
        report.join_thread()
        os._exit(9)
    if failure and rank < n - 1:
        t0 = time.perf_counter()
        x = torch.ones(64)
        try:
            timeout = timedelta(seconds=2) if rank == 0 else 2  # both forms
            dc.all_reduce(x, schedule=build("swing", f"ring:{n}"), timeout=timeout)
            outcome = "completed"
        except DirectcollError as exc:
            outcome = str(exc)
        report.put((rank, failure, (outcome, time.perf_counter() - t0)))
    report.close()
    report.join_thread()
    if failure:
        time.sleep(JOB_TIMEOUT)  # hung rank and survivors alike: the parent kills them
    dist.destroy_process_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _job(n: int, spec: str, failure: str) -> dict:
    """Run ``n`` ranks; return {(rank, kind): value} from their reports and the job's wall time."""
    ctx = multiprocessing.get_context("spawn")
    report = ctx.Queue()
    schedules = _schedules(spec, n)
    port = _free_port()
    procs = [ctx.Process(target=_rank_main, args=(r, n, port, schedules, failure, report), daemon=True)
             for r in range(n)]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    expected = 4 * n + (n - 1 if failure else 0)
    results = {}
    try:
        while len(results) < expected and time.perf_counter() - t0 < JOB_TIMEOUT:
            try:
                rank, kind, value = report.get(timeout=1)
                results[rank, kind] = value
            except queue.Empty:
                if all(not p.is_alive() for p in procs):
                    break
    finally:
        for p in procs:
            p.join(timeout=0.1 if failure else 10)
            if p.is_alive():
                p.kill()
                p.join()
    results["wall_s"] = time.perf_counter() - t0
    results["schedules"] = len(schedules)
    return results


JOBS = {2: ("ring:2", ""), 3: ("complete:3", "hang"), 4: ("torus:2x2", "die")}


@pytest.fixture(scope="module")
def jobs():
    return {}


def _result(jobs: dict, n: int, timings) -> dict:
    if n not in jobs:
        spec, failure = JOBS[n]
        jobs[n] = _job(n, spec, failure)
        then = {"": "a clean exit", "hang": "a hung rank", "die": "a killed rank"}[failure]
        timings(f"torch.distributed job on {n} ranks ({spec}, gloo, then {then})",
                jobs[n]["wall_s"])
    return jobs[n]


@pytest.mark.parametrize("n", sorted(JOBS))
def test_every_algorithm_collective_dtype_and_op_matches_torch(n, jobs, timings):
    res = _result(jobs, n, timings)
    assert res["schedules"] >= 3 * 5  # swing, ring, recursive doubling, generalized, bfb, ... x 3 collectives
    for rank in range(n):
        assert (rank, "checks") in res, f"rank {rank} did not report: {res}"
        checks, failures, _ = res[rank, "checks"]
        assert failures == [] and checks > 100, (rank, failures)


@pytest.mark.parametrize("n", sorted(JOBS))
def test_mismatches_are_refused_before_any_message(n, jobs, timings):
    res = _result(jobs, n, timings)
    for rank in range(n):
        messages = res[rank, "refusals"]
        assert len(messages) > 20
        for expected, message in messages:
            assert expected in message, (expected, message)


@pytest.mark.parametrize("n", sorted(JOBS))
def test_in_place_layouts_torch_accepts_give_torch_s_results(n, jobs, timings):
    res = _result(jobs, n, timings)
    assert all(res[rank, "in place"] == ["ok"] * 3 for rank in range(n)), res


@pytest.mark.parametrize("n", [3, 4])
def test_a_subgroup_runs_with_its_own_ranks_and_refuses_non_members(n, jobs, timings):
    res = _result(jobs, n, timings)
    assert "not a member" in res[0, "group"]
    assert all(res[r, "group"] == "ok" for r in range(1, n))


@pytest.mark.parametrize("n, pattern", [
    (3, r"rank [01]: step \d+ did not complete within 2 s; waiting on ranks \[(\d, )*2\]"),
    (4, r"rank [012]: step \d+ (did not complete within 2 s; waiting on ranks|failed exchanging with ranks) "
        r"\[[\d, ]+\]"),
])
def test_a_hung_or_dead_rank_makes_the_others_fail_within_the_timeout(n, pattern, jobs, timings):
    res = _result(jobs, n, timings)
    failure = JOBS[n][1]
    outcomes = []
    for rank in range(n - 1):
        outcome, seconds = res[rank, failure]
        assert re.search(pattern, outcome), outcome
        outcomes.append(outcome)
    # the failed rank's partners name it (the others may wait on survivors stuck in their error)
    assert any(re.search(rf"ranks \[[\d, ]*{n - 1}\]", outcome) for outcome in outcomes), outcomes


def test_importing_directcoll_does_not_import_torch():
    code = ("import sys, directcoll, directcoll.runtime, directcoll.runtime.executor, directcoll.algorithms, "
            "directcoll.cli.main; print('torch' in sys.modules)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "False", proc.stderr
