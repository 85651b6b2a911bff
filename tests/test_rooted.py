"""Broadcast and reduce: every rooted schedule verifies exactly on a sweep of shapes and roots, reduces
keep rank order where the registry says so, the trees have the steps their papers give, the closed-form costs match
the schedules, files and MSCCL round-trip the root, and the executors, `compare` and `run` serve both collectives."""

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from directcoll.algorithms.binomial import binomial_tree
from directcoll.algorithms.rooted import Tree, scatter_allgather
from directcoll.algorithms.swing.tree import swing_tree
from directcoll.cost.analytic import CostParams, analyze, chain_chunks, rooted_time
from directcoll.errors import DirectcollError, ScheduleError, UnsupportedShapeError
from directcoll.export.msccl.lift import import_msccl
from directcoll.export.msccl.lower import export_msccl
from directcoll.registry import build, order_preserving
from directcoll.runtime.executor import UserOp, broadcast, reduce
from directcoll.runtime.native import encode_program, program_info
from directcoll.schedule import load, save
from directcoll.schedule.ir import COPY, ScheduleBuilder
from directcoll.topology import parse
from directcoll.verify import verify

SRC = str(Path(__file__).resolve().parents[1] / "src")
SCRIPTS = Path(__file__).parent / "mpi_scripts"
MPIEXEC = shutil.which("mpiexec")
needs_mpi = pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not installed (pip install 'directcoll[mpi]')")
RINGS = [f"ring:{p}" for p in range(2, 18)]
GRIDS = ["torus:4x4", "torus:3x5", "torus:2x2x2", "mesh:6"]
CIRCULANTS = ["circulant:9:1,2", "circulant:16:1,5", "circulant:12:1,5"]
FAST = [("binomial", None), ("chain", None), ("swing-tree", "latency"), ("swing-tree", "bandwidth")]


def _check(name, spec, variant, roots, collectives=("broadcast", "reduce")):
    topo = parse(spec)
    for root in roots:
        for coll in collectives:
            s = build(name, topo, coll, variant=variant, root=root)
            assert s.root == root and s.collective.value == coll
            result = verify(s, order=coll == "reduce")
            assert result.ok, f"{name} {variant} {coll} on {spec} from {root}: {result.failure}"
            if coll == "reduce" and order_preserving(name, topo, coll):
                assert result.order.preserving, f"{name} {coll} on {spec} from {root}: {result.order.summary()}"


@pytest.mark.parametrize("spec", RINGS + GRIDS)
@pytest.mark.parametrize("name, variant", FAST)
def test_every_tree_schedule_verifies_from_every_root(name, variant, spec):
    _check(name, spec, variant, range(parse(spec).num_compute))


@pytest.mark.parametrize("spec", ["ring:2", "ring:5", "ring:8", "ring:13", "torus:4x4", "torus:3x5", "torus:2x2x2",
                                  "hypercube:3", *CIRCULANTS, "genkautz:2:10"])
@pytest.mark.parametrize("variant", ["latency", "bandwidth"])
def test_bfb_rooted_schedules_verify(variant, spec):
    n = parse(spec).num_compute
    _check("bfb-tree", spec, variant, sorted({0, n // 2, n - 1}))


def test_order_claims_hold_for_every_root_and_break_where_not_claimed():
    for p in (5, 8, 11):  # binomial: any N and root; chain: 1D shapes; Swing's cyclic ranges break order
        for root in range(p):
            for name in ("binomial", "chain"):
                assert verify(build(name, f"ring:{p}", "reduce", root=root), order=True).order.preserving
    assert not verify(build("chain", "torus:4x4", "reduce", root=3), order=True).order.preserving
    assert all(verify(build("bfb-tree", "mesh:7", "reduce", variant=v, root=r), order=True).order.preserving
               for v in ("latency", "bandwidth") for r in range(7))
    assert not verify(build("swing-tree", "ring:8", "reduce", variant="latency", ports=1), order=True).order.preserving
    assert order_preserving("chain", "ring:6", "reduce") and not order_preserving("chain", "torus:4x4", "reduce")
    assert order_preserving("swing-tree", "torus:4x4", "broadcast")  # no reductions


def test_binomial_tree_joins_adjacent_rank_ranges_in_ceil_log2_steps():
    for p in range(1, 18):
        for root in range(p):
            t = binomial_tree(p, root)
            assert t.depth == (int(np.ceil(np.log2(p))) if p > 1 else 0)
            inside = t.subtrees()
            for c in t.child:  # every subtree is a contiguous range of ranks
                members = np.flatnonzero(inside[c])
                assert members.max() - members.min() + 1 == len(members)


def test_swing_tree_follows_the_swing_peers_and_patches_only_where_needed():
    t = swing_tree(parse("ring:16"), 0)
    assert t.depth == 4  # log2 16 (Lambda = 1)
    first = t.child[t.step == 0]
    assert first.tolist() == [11]  # rho(3) = -5: the allgather's most distant peer first (Eq. 2)
    assert swing_tree(parse("torus:4x4"), 5, 1, True).depth == 4
    assert swing_tree(parse("ring:15"), 0).depth == 5  # the modulo-15 peers miss ranks: one more step
    assert swing_tree(parse("ring:12"), 7).depth == 4
    # shorter hops than the binomial tree's (distances 5, 3, 1, 1 against 8, 4, 2, 1): Swing's lower Xi
    ring = parse("ring:16")
    sw = analyze(build("swing-tree", ring, "broadcast", variant="latency", ports=1), ring)
    bi = analyze(build("binomial", ring, "broadcast"), ring)
    assert (sw.congestion_deficiency, bi.congestion_deficiency) == (pytest.approx(2.5), pytest.approx(3.75))


def test_scatter_allgather_hands_every_rank_every_cell_once():
    for spec, root in (("torus:4x4", 5), ("ring:7", 3), ("torus:3x5", 14)):
        s = build("swing-tree", spec, "broadcast", variant="bandwidth", ports=1, root=root)
        got = np.bincount(s.dst, weights=s.transfer_size * s.nblocks, minlength=s.nranks)
        assert got[root] == 0 and np.allclose(np.delete(got, root), s.nblocks)
    with pytest.raises(ScheduleError, match="need an allgather on 4 ranks"):
        scatter_allgather([binomial_tree(4)], build("ring", "ring:4", "reduce_scatter"))


def test_refusals_name_the_input():
    with pytest.raises(UnsupportedShapeError, match=r"binomial: root must be a rank 0..3, got 4"):
        build("binomial", "ring:4", "broadcast", root=4)
    with pytest.raises(UnsupportedShapeError, match="bfb-tree: .* has switch nodes"):
        build("bfb-tree", "hammingmesh:2x2:2x2", "broadcast")
    with pytest.raises(UnsupportedShapeError, match="chain: chunks must be an integer >= 1"):
        build("chain", "ring:4", "broadcast", chunks=0)
    with pytest.raises(UnsupportedShapeError, match="not a broadcast tree from rank 0 on 3 ranks: rank 2"):
        Tree.from_edges(3, 0, [0], [0], [1])
    with pytest.raises(UnsupportedShapeError, match="swing does not implement broadcast"):
        build("swing", "ring:4", "broadcast")
    b = ScheduleBuilder("reduce", 2, 1)
    b.add(0, 1, 0, 1, 0, 1)
    with pytest.raises(ScheduleError, match=r"the root of a reduce \(meta\['root'\]\) must be a rank 0..1; got 2"):
        b.build(meta={"root": 2})


def test_verifier_checks_the_rooted_semantics():
    b = ScheduleBuilder("broadcast", 3, 1)
    b.add(0, [1, 1], [0, 2], COPY, 0, 1)
    assert verify(b.build(meta={"root": 1})).ok
    f = verify(b.build(meta={"root": 0})).failure  # rank 0 holds the data: rank 1's overwrites it
    assert f.rank == 0 and "root" in f.reason
    b = ScheduleBuilder("reduce", 3, 1)
    b.add(0, [0, 2], [1, 1], 1, 0, 1)
    assert verify(b.build(meta={"root": 1})).ok
    f = verify(b.build(meta={"root": 2})).failure
    assert f.rank == 2 and "missing the contributions of 2 rank(s): 0, 1" in f.reason


def test_closed_forms_match_the_schedules():
    ring, p = parse("ring:8"), CostParams(alpha=1e-6, beta=1e-9)
    n = 2.0**20
    bi = analyze(build("binomial", ring, "broadcast"), ring).time(n, p)
    assert bi == pytest.approx(rooted_time("binomial", 8, n, 1e-6, 1e-9))
    mesh = parse("mesh:8")  # root 0: one arm of 7 hops
    ch = analyze(build("chain", mesh, "reduce", chunks=5), mesh).time(n, p)
    assert ch == pytest.approx(rooted_time("chain", 8, n, 1e-6, 1e-9, chunks=5))
    sw = analyze(build("swing-tree", ring, "broadcast", variant="bandwidth", ports=1, root=3), ring).time(n, p)
    assert sw == pytest.approx(rooted_time("scatter-allgather", 8, n, 1e-6, 1e-9))
    best = chain_chunks(9, n, 1e-6, 1e-9)
    times = [rooted_time("chain", 10, n, 1e-6, 1e-9, chunks=c, hops=9) for c in range(1, 400)]
    assert best == int(np.argmin(times)) + 1


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_files_keep_the_root(tmp_path, suffix):
    s = build("chain", "torus:3x5", "reduce", root=11, chunks=3)
    back = load(save(s, tmp_path / f"s{suffix}"))
    assert back.root == 11 and back.collective.value == "reduce" and verify(back).ok


@pytest.mark.parametrize("name, spec, coll, variant, root", [
    ("binomial", "ring:6", "broadcast", None, 2), ("binomial", "ring:5", "reduce", None, 4),
    ("chain", "torus:2x3", "broadcast", None, 1), ("swing-tree", "torus:4x4", "reduce", "bandwidth", 5),
    ("bfb-tree", "torus:3x3", "broadcast", "latency", 4), ("bfb-tree", "ring:4", "reduce", "latency", 1)])
def test_msccl_round_trip_finds_the_root(name, spec, coll, variant, root):
    s = build(name, spec, coll, variant=variant, root=root)
    xml = export_msccl(s)
    assert f'coll="{coll}"' in xml
    for model in ("inplace", "outofplace"):
        back = import_msccl(xml, model=model)
        assert back.collective.value == coll and back.root == root and verify(back).ok


def _threads(n, fn):
    boxes = {(a, b): queue.Queue() for a in range(n) for b in range(n)}

    def exchange_for(rank):
        def exchange(step, sends, recvs):
            for peer, payload in sends:
                boxes[rank, peer].put(payload.copy())
            for peer, buf in recvs:
                buf[:] = boxes[peer, rank].get(timeout=20)
        return exchange

    out, errors = {}, []

    def work(rank):
        try:
            out[rank] = fn(rank, exchange_for(rank))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(r,)) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out


def _cat(left, right):
    """Rank intervals lo << 20 | hi concatenated (-1 where not adjacent): associative, not commutative."""
    mask = (1 << 20) - 1
    ok = (left >= 0) & (right >= 0) & ((left & mask) + 1 == right >> 20)
    return np.where(ok, ((left >> 20) << 20) | (right & mask), -1)


@pytest.mark.parametrize("name, variant", [("binomial", None), ("chain", None), ("swing-tree", "bandwidth")])
def test_executors_broadcast_and_reduce_from_any_root(name, variant):
    n, count, root = 5, 13, 3
    b = build(name, f"ring:{n}", "broadcast", variant=variant, root=root)
    out = _threads(n, lambda r, ex: _bcast(b, r, ex, count))
    assert all(np.array_equal(v, np.arange(count) + 100.0 * root) for v in out.values())
    s = build(name, f"ring:{n}", "reduce", variant=variant, root=root)
    out = _threads(n, lambda r, ex: _reduce(s, r, ex, count, "sum"))
    assert np.allclose(out[root], sum(np.arange(count) + 100.0 * r for r in range(n)))
    assert all(out[r] is None for r in range(n) if r != root)


def _bcast(s, rank, exchange, count):
    recv = np.zeros(count)
    broadcast(np.arange(count) + 100.0 * rank, recv, schedule=s, rank=rank, nranks=s.nranks, exchange=exchange)
    return recv


def _reduce(s, rank, exchange, count, op):
    recv = np.zeros(count, np.int64 if isinstance(op, UserOp) else float) if rank == s.root else None
    send = (np.full(count, (rank << 20) | rank, np.int64) if isinstance(op, UserOp)
            else np.arange(count) + 100.0 * rank)
    reduce(send, recv, schedule=s, rank=rank, nranks=s.nranks, op=op, exchange=exchange)
    return recv


def test_a_non_commutative_reduce_runs_in_rank_order_and_is_refused_where_it_cannot():
    op = UserOp(_cat, name="interval concatenation")
    for name in ("binomial", "chain"):
        s = build(name, "ring:6", "reduce", root=4)
        out = _threads(6, lambda r, ex, s=s: _reduce(s, r, ex, 3, op))
        assert out[4].tolist() == [5] * 3  # [0, 5]: the product in rank order
    s = build("swing-tree", "ring:8", "reduce", variant="latency", ports=1)
    with pytest.raises(DirectcollError, match="interval concatenation is not commutative and this swing-tree reduce"):
        reduce(np.zeros(4, np.int64), np.zeros(4, np.int64), schedule=s, rank=0, nranks=8, op=op, exchange=None)
    with pytest.raises(DirectcollError, match="built for root 0, not 2"):
        broadcast(np.zeros(4), np.zeros(4), schedule=build("binomial", "ring:4", "broadcast"), rank=0, nranks=4,
                  exchange=None, root=2)


def test_the_native_program_format_records_the_root():
    assert program_info(encode_program(build("binomial", "ring:4", "broadcast", root=2)))["root"] == 2


def _cli(*args, timeout=300):
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-m", "directcoll.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def test_compare_broadcast_json_in_a_subprocess():
    proc = _cli("compare", "torus:4x4", "--collective", "broadcast", "--root", "5", "--sizes", "32,1MiB", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["collective"] == "broadcast"
    families = {e["family"] for e in doc["results"]}
    assert {"binomial", "swing-tree", "chain", "bfb-tree"} <= families and doc["gain_family"] == "swing-tree"
    assert doc["peak_goodput_Bps"] == pytest.approx(parse("torus:4x4").node_bandwidth)
    bad = _cli("compare", "torus:4x4", "--collective", "allreduce", "--root", "1", "--sizes", "32")
    assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1].startswith("directcoll: error: --root 1: ")


def test_schedule_verify_and_cost_commands_take_the_root(tmp_path):
    f = tmp_path / "r.json"
    proc = _cli("schedule", "binomial", "ring:6", "--collective", "reduce", "--root", "4", "-o", str(f), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["meta"]["root"] == 4
    ver = _cli("verify", str(f), "--order")
    assert ver.returncode == 0 and "order-preserving" in ver.stdout
    cost = _cli("cost", "--algorithm", "chain", "--topology", "ring:6", "--collective", "broadcast", "--chunks", "3",
                "--json")
    assert cost.returncode == 0 and json.loads(cost.stdout)["steps"] == 7  # 5 hops + 3 chunks - 1
    bad = _cli("cost", "--algorithm", "swing", "--topology", "ring:6", "--chunks", "3")
    assert bad.returncode == 2 and "--chunks applies to" in bad.stderr


@needs_mpi
@pytest.mark.mpi
def test_mpi_broadcast_and_reduce_equal_the_mpi_library_s():
    proc = subprocess.run([MPIEXEC, "-n", "2", sys.executable, str(SCRIPTS / "rooted.py")], capture_output=True,
                          text=True, timeout=240, env={**os.environ, "PYTHONPATH": SRC})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    assert len(results) >= 6 and all(results.values()), results


@needs_mpi
@pytest.mark.mpi
def test_directcoll_run_reduce_json():
    proc = _cli("run", "ring:2", "--collective", "reduce", "--root", "1", "--algorithms", "binomial,chain",
                "--sizes", "1KiB", "--repeat", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)["results"]
    assert len(rows) == 2 and all(r["correct"] is True for r in rows)
