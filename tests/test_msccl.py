"""MSCCL XML export and import (directcoll.export.msccl).

Every exported program re-imports to a schedule that verifies, for every registered algorithm, variant, port count
and collective (all-to-all included) on small shapes; a small model of the MSCCL executor (thread blocks,
dependency flags, FIFO connections, in-place aliasing) runs the exported XML under random interleavings and
rendezvous sends and checks NCCL's results; the XML carries every attribute the executor's parser requires; each
executor limit raises its error; malformed files raise errors naming the element; hand-written MSCCL XML (an
msccl-tools-style all-to-all among them) imports and verifies.
"""

from __future__ import annotations

import copy
import re
import warnings
import xml.etree.ElementTree as ET
from collections import deque
from dataclasses import replace

import numpy as np
import pytest

from directcoll.errors import DirectcollError, UnsupportedShapeError
from directcoll.export import (
    LIMITS,
    MscclFormatError,
    MscclLimitError,
    MscclRoundingWarning,
    check_limits,
    export_msccl,
    import_msccl,
    parse_msccl,
    program_to_schedule,
    to_msccl,
)
from directcoll.export.msccl.format import ALGO_ATTRS, GPU_ATTRS, STEP_ATTRS, TB_ATTRS
from directcoll.registry import ALGORITHMS, build
from directcoll.schedule import ScheduleBuilder
from directcoll.verify import verify

REDUCING = ("allreduce", "reduce_scatter", "allgather")
COLLECTIVES = (*REDUCING, "alltoall")
SHAPES = ("torus:4x4", "ring:6", "torus:2x3")
EXECUTOR_COLL = {"allreduce": "allreduce", "reduce_scatter": "reducescatter", "allgather": "allgather",
                 "alltoall": "alltoall"}


def _cases():
    """(id, name, spec, collective, variant, options) for every algorithm / variant / ports / collective served."""
    out = []
    for name in sorted(ALGORITHMS):
        alg = ALGORITHMS[name]
        for spec in SHAPES:
            for coll in COLLECTIVES:
                if coll not in alg.collectives:
                    continue
                for variant in (None, *alg.variants):
                    for ports in (None, 2):
                        if ports and (not spec.startswith("torus") or coll == "alltoall"):
                            continue  # the all-to-all algorithms have no port variants
                        out.append((name, spec, coll, variant, {"ports": ports} if ports else {}))
    for coll in REDUCING:  # generalized on a prime, r = 0, 1 and L (latency-optimal)
        for variant, opts in ((None, {"r": 0}), (None, {"r": 1}), ("latency", {}), ("ring", {})):
            out.append(("generalized", "complete:5", coll, variant, opts))
    return out


def _try_build(name, spec, coll, variant, opts):
    try:
        return build(name, spec, coll, variant=variant, **opts)
    except UnsupportedShapeError:
        return None


_SCHEDULES = {}
for _case in _cases():
    _s = _try_build(*_case)
    if _s is not None:
        _SCHEDULES[_case[:4] + (tuple(_case[4].items()),)] = _s
CASES = [k[:4] + (dict(k[4]),) for k in _SCHEDULES]


def _build(name, spec, coll, variant, opts):
    return _SCHEDULES[(name, spec, coll, variant, tuple(opts.items()))]


def _id(case):
    name, spec, coll, variant, opts = case
    extra = "".join(f"-{k}{v}" for k, v in opts.items())
    return f"{name}-{spec}-{coll}-{variant}{extra}"


# -- a model of the MSCCL executor ------------------------------------------------------------------------------

class Deadlock(AssertionError):
    pass


def run_msccl(program, *, inplace: bool, seed: int, rendezvous: bool = True, capacity: int = 2):
    """Execute ``program`` as the executor would (msccl_kernel_impl.h): each thread block runs its steps in order,
    a step waits for ``flag[depid] >= deps`` (flags published after hasdep steps), sends and receives of a
    (sender, receiver, channel) connection match in FIFO order. ``rendezvous``: a send completes only together with
    its receive (no buffering at all); else up to ``capacity`` messages are buffered. Random interleaving.
    Returns (inputs, buffers) with one uint64 word per chunk."""
    rng = np.random.default_rng(seed)
    n, c = program.ngpus, program.nchunksperloop
    coll = program.coll
    k = c // n if coll != "allreduce" else c
    insize = k if coll == "allgather" else c
    inputs = [rng.integers(0, 2**63, insize, dtype=np.uint64) for _ in range(n)]
    bufs = []
    for g in program.gpus:
        gi = g.id
        s = rng.integers(0, 2**63, max(g.s_chunks, 1), dtype=np.uint64)
        if coll in ("allreduce", "alltoall"):  # all-to-all: i is the sendbuf, o the recvbuf (in place: one buffer)
            i = inputs[gi].copy()
            o = i if inplace else rng.integers(0, 2**63, c, dtype=np.uint64)
        elif coll == "allgather":
            o = rng.integers(0, 2**63, c, dtype=np.uint64)
            if inplace:
                o[gi * k:(gi + 1) * k] = inputs[gi]
                i = o[gi * k:(gi + 1) * k]
            else:
                i = inputs[gi].copy()
        else:
            i = inputs[gi].copy()
            o = i[gi * k:(gi + 1) * k] if inplace else rng.integers(0, 2**63, k, dtype=np.uint64)
        bufs.append({"i": i, "o": o, "s": s})
    tbs = {(g.id, tb.id): tb for g in program.gpus for tb in g.tbs}
    pc = dict.fromkeys(tbs, 0)
    flag = dict.fromkeys(tbs, -1)
    recv_tb = {(tb.recv, g, tb.chan): (g, tb.id) for (g, _), tb in tbs.items() if tb.recv >= 0}
    queues = {}

    def deps_ok(key):
        st = tbs[key].steps[pc[key]]
        return st.depid < 0 or flag[key[0], st.depid] >= st.deps

    def view(g, buf, off, cnt):
        return bufs[g][buf][off:off + cnt]

    def finish(key, st):
        if st.hasdep:
            flag[key] = pc[key]
        pc[key] += 1

    def receive(key, data):
        g, _ = key
        tb, st = tbs[key], tbs[key].steps[pc[key]]
        out = None
        if st.type == "r":
            view(g, st.dstbuf, st.dstoff, st.cnt)[:] = data
        elif st.type == "rrc":
            view(g, st.dstbuf, st.dstoff, st.cnt)[:] = view(g, st.srcbuf, st.srcoff, st.cnt) + data
        elif st.type == "rcs":
            view(g, st.dstbuf, st.dstoff, st.cnt)[:] = data
            out = data.copy()
        elif st.type == "rrs":
            out = view(g, st.srcbuf, st.srcoff, st.cnt) + data
        elif st.type == "rrcs":
            out = view(g, st.srcbuf, st.srcoff, st.cnt) + data
            view(g, st.dstbuf, st.dstoff, st.cnt)[:] = out
        else:
            raise AssertionError(f"gpu {g} tb {tb.id}: {st.type} receives but is not a receive")
        if out is not None:
            queues.setdefault((g, tb.send, tb.chan), deque()).append(out)
        finish(key, st)

    def try_step(key) -> bool:
        tb = tbs[key]
        if pc[key] >= len(tb.steps) or not deps_ok(key):
            return False
        g = key[0]
        st = tb.steps[pc[key]]
        if st.type == "nop":
            finish(key, st)
        elif st.type == "cpy":
            view(g, st.dstbuf, st.dstoff, st.cnt)[:] = view(g, st.srcbuf, st.srcoff, st.cnt).copy()
            finish(key, st)
        elif st.type == "re":
            view(g, st.dstbuf, st.dstoff, st.cnt)[:] += view(g, st.srcbuf, st.srcoff, st.cnt).copy()
            finish(key, st)
        elif st.type == "s":
            q = queues.setdefault((g, tb.send, tb.chan), deque())
            data = view(g, st.srcbuf, st.srcoff, st.cnt).copy()
            if rendezvous:
                rkey = recv_tb[g, tb.send, tb.chan]
                rtb = tbs[rkey]
                if q or pc[rkey] >= len(rtb.steps) or not deps_ok(rkey) or rtb.steps[pc[rkey]].type not in ("r", "rrc"):
                    return False
                finish(key, st)
                receive(rkey, data)
            else:
                if len(q) >= capacity:
                    return False
                q.append(data)
                finish(key, st)
        else:
            q = queues.get((tb.recv, g, tb.chan))
            if not q:
                return False
            data = q.popleft()
            if len(data) != st.cnt:
                raise AssertionError(f"gpu {g} tb {tb.id}: received {len(data)} chunks, expected {st.cnt}")
            receive(key, data)
        return True

    keys = list(tbs)
    while any(pc[kk] < len(tbs[kk].steps) for kk in keys):
        rng.shuffle(keys)
        progressed = False
        for kk in keys:
            for _ in range(int(rng.integers(1, 4))):
                if not try_step(kk):
                    break
                progressed = True
        if not progressed:
            stuck = [(kk, tbs[kk].steps[pc[kk]]) for kk in keys if pc[kk] < len(tbs[kk].steps)]
            raise Deadlock(f"no thread block can move; e.g. {stuck[:3]}")
    assert not any(queues.values()), "messages left in a connection"
    return inputs, bufs


def check_results(program, inputs, bufs, *, inplace: bool):
    n, coll = program.ngpus, program.coll
    total = np.zeros_like(inputs[0]) if coll != "allgather" else None
    if coll != "allgather":
        for x in inputs:
            total = total + x
    k = program.nchunksperloop // n
    for g in range(n):
        o = bufs[g]["o"]
        if coll == "alltoall":  # o chunk i k + w comes from rank i's chunk g k + w
            expected = np.concatenate([inputs[i][g * k:(g + 1) * k] for i in range(n)])
            np.testing.assert_array_equal(o, expected, err_msg=f"gpu {g}")
        elif coll == "allreduce":
            np.testing.assert_array_equal(o, total, err_msg=f"gpu {g}")
        elif coll == "allgather":
            np.testing.assert_array_equal(o, np.concatenate(inputs), err_msg=f"gpu {g}")
        else:
            np.testing.assert_array_equal(o, total[g * k:(g + 1) * k], err_msg=f"gpu {g}")
        if not inplace:  # NCCL's send buffer is const out of place
            np.testing.assert_array_equal(bufs[g]["i"], inputs[g], err_msg=f"gpu {g} input changed")


# -- round trip -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_export_reimports_and_verifies(case):
    schedule = _build(*case)
    assert verify(schedule).ok
    result = to_msccl(schedule)
    check_limits(result.program)
    back = import_msccl(result.xml)
    assert back.collective == schedule.collective and back.nranks == schedule.nranks
    res = verify(back)
    assert res.ok, res.summary()
    assert result.report["rounded"] is False and result.report["max_deviation_blocks"] == 0


EXECUTOR_CASES = [c for c in CASES if c[1] in ("torus:2x3", "complete:5") and not c[4].get("ports")]


@pytest.mark.parametrize("case", EXECUTOR_CASES, ids=[_id(c) for c in EXECUTOR_CASES])
def test_executor_model_runs_export(case):
    """The exported XML gives NCCL's result on the executor model, in place and out of place (all-to-all: out of
    place, what it declares), with rendezvous sends (no buffering: deadlock-free whatever the connection buffers)
    and buffered sends."""
    schedule = _build(*case)
    program = to_msccl(schedule).program
    for seed, inplace, rendezvous in ((0, True, True), (1, False, True), (2, True, False), (3, False, False)):
        if inplace and not program.inplace:
            continue  # all-to-all is exported out of place only
        inputs, bufs = run_msccl(program, inplace=inplace, seed=seed, rendezvous=rendezvous)
        check_results(program, inputs, bufs, inplace=inplace)


@pytest.mark.parametrize("name,spec,coll", [("swing", "torus:4x4", "allreduce"), ("swing", "torus:4x4", "allgather"),
                                            ("swing", "torus:4x4", "reduce_scatter"),
                                            ("recursive-doubling", "torus:4x4", "allreduce")])
def test_executor_model_16_ranks(name, spec, coll):
    program = to_msccl(build(name, spec, coll)).program
    for seed, inplace in ((5, True), (6, False)):
        inputs, bufs = run_msccl(program, inplace=inplace, seed=seed)
        check_results(program, inputs, bufs, inplace=inplace)


@pytest.mark.parametrize("name", ["swing", "ring"])
def test_reimported_schedule_simulates_like_the_original(name):
    from directcoll.simulate import simulate
    from directcoll.topology import parse
    topo = parse("torus:4x4")
    schedule = build(name, topo, "allreduce")
    back = import_msccl(export_msccl(schedule))
    a, b = simulate(schedule, topo), simulate(back, topo)
    for size in (1 << 10, 1 << 24):
        assert b.time(size) == pytest.approx(a.time(size))


def test_export_to_file_and_import_from_path(tmp_path):
    schedule = build("ring", "ring:6", "allreduce")
    path = tmp_path / "algo.xml"
    text = export_msccl(schedule, path, name="ring6")
    assert path.read_text() == text
    back = import_msccl(path)
    assert verify(back).ok
    assert back.meta["source"] == str(path) and back.meta["algorithm"] == "ring6"
    assert import_msccl(str(path)).num_transfers == back.num_transfers


def test_many_channels_and_small_counts_still_verify():
    """One thread block per channel (every connection on its own channel) and cnt <= 1 (every run split)."""
    schedule = build("swing", "torus:4x4", "allreduce")
    result = to_msccl(schedule, max_threadblocks_per_channel=1, max_count=1)
    assert result.program.nchannels > 1
    assert all(st.cnt <= 1 for g in result.program.gpus for tb in g.tbs for st in tb.steps)
    assert verify(import_msccl(result.xml)).ok
    inputs, bufs = run_msccl(result.program, inplace=True, seed=11)
    check_results(result.program, inputs, bufs, inplace=True)


def test_long_connections_are_split_across_channels():
    """A connection with more steps than MSCCL_MAX_NUM_STEPS is cut into thread blocks on separate channels."""
    schedule = build("ring", "ring:6", "allreduce", variant="unidirectional")
    whole = to_msccl(schedule).program
    assert max(len(tb.steps) for g in whole.gpus for tb in g.tbs) == 10
    result = to_msccl(schedule, max_steps=4)
    program = result.program
    assert max(len(tb.steps) for g in program.gpus for tb in g.tbs) <= 4
    assert program.nchannels > 1 and result.report["split_connections"] > 0
    check_limits(program, replace(LIMITS, max_steps=4))
    for g in program.gpus:  # each (peer, channel) is one connection: one thread block per direction
        sends = [(tb.send, tb.chan) for tb in g.tbs if tb.send >= 0]
        recvs = [(tb.recv, tb.chan) for tb in g.tbs if tb.recv >= 0]
        assert len(sends) == len(set(sends)) and len(recvs) == len(set(recvs))
    assert verify(import_msccl(result.xml)).ok
    for seed, inplace in ((0, True), (1, False)):
        inputs, bufs = run_msccl(program, inplace=inplace, seed=seed)
        check_results(program, inputs, bufs, inplace=inplace)


# -- the XML the executor reads ---------------------------------------------------------------------------------

@pytest.mark.parametrize("coll", REDUCING)
def test_xml_has_every_required_attribute(coll):
    schedule = build("swing", "torus:2x3", coll)
    text = export_msccl(schedule, proto="LL128", min_bytes=1024, max_bytes=1 << 20)
    # the executor's hand-written parser: no <?xml ?> declaration, double quotes, `<step .../>` without a space
    assert "<?xml" not in text and "'" not in text and " />" not in text
    assert all(ch in " \n" or ch.isprintable() for ch in text) and "\t" not in text
    root = ET.fromstring(text)
    assert root.tag == "algo" and set(root.attrib) == set(ALGO_ATTRS)
    a = root.attrib
    assert a["coll"] == EXECUTOR_COLL[coll] and a["proto"] == "LL128"
    assert (a["inplace"], a["outofplace"], a["minBytes"], a["maxBytes"]) == ("1", "1", "1024", str(1 << 20))
    assert int(a["ngpus"]) == 6 and int(a["nchunksperloop"]) == schedule.nblocks and int(a["nchannels"]) >= 1
    assert re.fullmatch(r"[A-Za-z0-9_.-]+", a["name"])
    gpus = root.findall("gpu")
    assert sorted(int(g.get("id")) for g in gpus) == list(range(6))
    k = int(a["nchunksperloop"]) // 6
    for g in gpus:
        assert set(g.attrib) == set(GPU_ATTRS)
        i_chunks, o_chunks = int(g.get("i_chunks")), int(g.get("o_chunks"))
        expected = {"allreduce": (6 * k, 6 * k), "allgather": (k, 6 * k), "reduce_scatter": (6 * k, k)}[coll]
        assert (i_chunks, o_chunks) == expected and int(g.get("s_chunks")) >= 0
        tbs = g.findall("tb")
        assert [int(t.get("id")) for t in tbs] == list(range(len(tbs)))
        steps_of = {}
        for tb in tbs:
            assert set(tb.attrib) == set(TB_ATTRS)
            send, recv = int(tb.get("send")), int(tb.get("recv"))
            assert send != int(g.get("id")) and recv != int(g.get("id"))
            assert 0 <= int(tb.get("chan")) < int(a["nchannels"])
            steps = tb.findall("step")
            assert steps, "a thread block without steps"
            steps_of[int(tb.get("id"))] = steps
            for idx, st in enumerate(steps):
                assert set(st.attrib) == set(STEP_ATTRS)
                assert int(st.get("s")) == idx
                t = st.get("type")
                assert t in ("s", "r", "rrc", "cpy", "re", "nop")
                assert st.get("srcbuf") in "ios" and st.get("dstbuf") in "ios"
                assert st.get("hasdep") in ("0", "1")
                if t == "s":
                    assert send >= 0
                if t in ("r", "rrc"):
                    assert recv >= 0
                if t == "nop":
                    assert int(st.get("depid")) >= 0
                else:
                    assert 1 <= int(st.get("cnt")) <= LIMITS.max_count
        for steps in steps_of.values():  # every dependency names a real step that publishes its flag
            for st in steps:
                depid, deps = int(st.get("depid")), int(st.get("deps"))
                if depid >= 0:
                    target = steps_of[depid][deps]
                    assert target.get("hasdep") == "1" and target.get("type") != "nop"
                else:
                    assert deps == -1


def test_parse_program_roundtrip_text():
    text = export_msccl(build("ring", "ring:6", "allgather"))
    program = parse_msccl(text)
    from directcoll.export import program_to_xml
    assert program_to_xml(program) == text.split("\n", 1)[1]  # the same text but the leading comment


# -- fractional schedules ---------------------------------------------------------------------------------------

def _thirds_allreduce():
    """2-rank allreduce on one block cut at 1/3: reduce-scatter then allgather (denominator 3)."""
    b = ScheduleBuilder("allreduce", 2, 1, denominator=3)
    b.add(0, [0, 1], [1, 0], 1, [1, 0], [3, 1])
    b.add(1, [1, 0], [0, 1], 0, [1, 0], [3, 1])
    return b.build(meta={"algorithm": "thirds"})


def test_fractional_schedule_is_chunked_exactly():
    s = _thirds_allreduce()
    assert verify(s).ok
    result = to_msccl(s)
    assert result.report["chunks_per_block"] == 3 and not result.report["rounded"]
    assert result.program.nchunksperloop == 3
    assert verify(import_msccl(result.xml)).ok


def test_fractional_schedule_rounded_reports_deviation():
    s = _thirds_allreduce()
    with pytest.warns(MscclRoundingWarning, match="chunks per block"):
        result = to_msccl(s, max_chunks=2)
    rep = result.report
    assert rep["rounded"] and rep["chunks_per_block"] == 2 and rep["exact_chunks_per_block"] == 3
    assert rep["max_deviation_blocks"] == pytest.approx(1 / 6)
    assert "deviation=0.166667" in result.xml.splitlines()[0]
    back = import_msccl(result.xml)  # the cut moved from 1/3 to 1/2: still an allreduce
    assert back.nblocks == 2 and verify(back).ok


def _local_reduce_allreduce():
    """2 ranks, 2 blocks and 2 scratch blocks: ranks swap their vectors into scratch, then each reduces the
    scratch copy into its own blocks with local (displaced) reductions -- `re` steps."""
    b = ScheduleBuilder("allreduce", 2, 2)
    b.add(0, [0, 1], [1, 0], 0, 0, 2, 2)        # copy [0, 2) to the peer's scratch [2, 4)
    b.add(1, [0, 1], [0, 1], 1, 2, 4, -2)       # local reduce scratch [2, 4) into [0, 2)
    return b.build(nscratch=2, meta={"algorithm": "swap-reduce"})


def test_local_reductions_run_in_and_out_of_place():
    s = _local_reduce_allreduce()
    assert verify(s).ok
    program = to_msccl(s).program
    assert any(st.type == "re" for g in program.gpus for tb in g.tbs for st in tb.steps)
    assert verify(program_to_schedule(program)).ok
    for seed, inplace, rendezvous in ((0, True, True), (1, False, True), (2, False, False)):
        inputs, bufs = run_msccl(program, inplace=inplace, seed=seed, rendezvous=rendezvous)
        check_results(program, inputs, bufs, inplace=inplace)


def test_unreduced_denominator_needs_no_extra_chunks():
    b = ScheduleBuilder("allgather", 2, 2, denominator=4)  # every end a multiple of 4/4: really one chunk per block
    b.add(0, [0, 1], [1, 0], 0, [0, 4], [4, 8])
    s = b.build(meta={"algorithm": "x"})
    result = to_msccl(s)
    assert result.report["chunks_per_block"] == 1 and result.program.nchunksperloop == 2
    assert verify(import_msccl(result.xml)).ok


# -- all-to-all -------------------------------------------------------------------------------------------------

_WRITES = ("r", "rcs", "rrc", "rrcs", "cpy", "re")  # step types that write dstbuf on their own GPU


def _relayed_thirds_alltoall(n: int = 4):
    """All-to-all on n >= 4 ranks, k = 1, every pair's block cut at 1/3 and 2/3 (denominator 3): [0, 1/3) goes
    straight from i to j in step 0; [1/3, 2/3) is relayed through the smaller of two ranks other than i and j,
    keeping its block coordinate; [2/3, 1) through the larger one, which keeps it in an IR scratch block
    (displaced pieces), and both relays forward in step 1."""
    den, nb = 3, n * n
    b = ScheduleBuilder("alltoall", n, nb, denominator=den)
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            x = (i * n + j) * den
            m1, m2 = sorted(set(range(n)) - {i, j})[:2]
            b.add(0, i, j, 0, x, x + 1)
            b.add(0, i, m1, 0, x + 1, x + 2)
            b.add(1, m1, j, 0, x + 1, x + 2)
            b.add(0, i, m2, 0, x + 2, x + 3, nb * den)                       # into scratch block nb + i n + j
            b.add(1, m2, j, 0, x + 2 + nb * den, x + 3 + nb * den, -nb * den)  # and back to the coordinate
    return b.build(nscratch=nb, meta={"algorithm": "thirds-relay"})


def _own_part_copied(gpu, kq: int) -> bool:
    """Whether the gpu's `cpy` steps copy all of its own part i[r kq, (r+1) kq) to the same chunks of o."""
    r, done = int(gpu.get("id")), set()
    for st in gpu.iter("step"):
        if (st.get("type"), st.get("srcbuf"), st.get("dstbuf")) == ("cpy", "i", "o") and \
                st.get("srcoff") == st.get("dstoff"):
            done.update(range(int(st.get("srcoff")), int(st.get("srcoff")) + int(st.get("cnt"))))
    return set(range(r * kq, (r + 1) * kq)) <= done


@pytest.mark.parametrize("name", sorted(a.name for a in ALGORITHMS.values() if "alltoall" in a.collectives))
def test_alltoall_xml_attributes(name):
    """coll="alltoall", out of place only (inplace="0" outofplace="1", as msccl-tools writes AllToAll programs),
    nchunksperloop = N k q = i_chunks = o_chunks, the sendbuf never written, every rank's own part copied i -> o."""
    schedule = build(name, "torus:2x3", "alltoall")
    result = to_msccl(schedule, min_bytes=512)
    root = ET.fromstring(result.xml)
    a = root.attrib
    assert set(a) == set(ALGO_ATTRS) and a["coll"] == "alltoall" and a["name"] == f"{name}_alltoall_6"
    assert (a["inplace"], a["outofplace"], a["minBytes"], a["maxBytes"]) == ("0", "1", "512", "0")
    q = result.report["chunks_per_block"]
    kq = schedule.nblocks // 36 * q
    assert int(a["nchunksperloop"]) == 6 * kq == schedule.vector_blocks * q == result.report["nchunksperloop"]
    for g in root.findall("gpu"):
        assert (int(g.get("i_chunks")), int(g.get("o_chunks"))) == (6 * kq, 6 * kq)
        assert not any(st.get("type") in _WRITES and st.get("dstbuf") == "i" for st in g.iter("step"))
        assert _own_part_copied(g, kq)


def test_relayed_fractional_alltoall_round_trip():
    s = _relayed_thirds_alltoall()
    assert verify(s).ok
    result = to_msccl(s)
    rep, program = result.report, result.program
    assert rep["chunks_per_block"] == 3 and not rep["rounded"] and program.nchunksperloop == 4 * 3
    # s holds only what a rank relays: 6 pairs (i, j) not involving it, one third (one chunk) each
    assert [g.s_chunks for g in program.gpus] == [6] * 4
    check_limits(program)
    back = import_msccl(result.xml)
    assert back.collective.value == "alltoall" and back.nranks == 4 and back.nblocks == 16 * 3
    res = verify(back)
    assert res.ok, res.summary()
    assert back.num_steps == 2 and back.meta["import_model"] == "outofplace"
    for seed, rendezvous in ((0, True), (1, False)):
        inputs, bufs = run_msccl(program, inplace=False, seed=seed, rendezvous=rendezvous)
        check_results(program, inputs, bufs, inplace=False)
    # export -> import -> export -> import is stable
    again = import_msccl(export_msccl(back))
    assert verify(again).ok and again.num_steps == back.num_steps


def test_relayed_fractional_alltoall_rounded():
    """max_chunks caps nchunksperloop = N k q: 8 allows q = 2, so the cuts at 1/3, 2/3 move to 1/2 (the middle
    third vanishes); the result is still an all-to-all."""
    with pytest.warns(MscclRoundingWarning, match="chunks per block"):
        result = to_msccl(_relayed_thirds_alltoall(), max_chunks=8)
    rep = result.report
    assert rep["rounded"] and rep["chunks_per_block"] == 2 and rep["exact_chunks_per_block"] == 3
    assert rep["nchunksperloop"] == 8 and rep["max_deviation_blocks"] == pytest.approx(1 / 6)
    assert "deviation=0.166667" in result.xml.splitlines()[0]
    assert verify(import_msccl(result.xml)).ok


def test_alltoall_limits():
    s = build("direct", "torus:4x4", "alltoall")  # 15 send and 15 receive thread blocks per GPU, and a local one
    with pytest.raises(MscclLimitError) as err:
        to_msccl(s, max_threadblocks=16)
    assert err.value.limit == "MSCCL_MAX_NUM_THREAD_BLOCKS" and err.value.value == 31
    with pytest.raises(MscclLimitError) as err:
        to_msccl(s, max_threadblocks_per_channel=4, max_channels=3)
    assert err.value.limit == "MAXCHANNELS"
    result = to_msccl(s, max_threadblocks_per_channel=4)
    assert result.program.nchannels >= 4  # 15 send thread blocks, at most 4 per channel (greedy: maybe more)
    check_limits(result.program, replace(LIMITS, max_threadblocks_per_channel=4))
    assert verify(import_msccl(result.xml)).ok
    # long connections cut into thread blocks on several channels, one chunk per step
    relayed = _relayed_thirds_alltoall()
    result = to_msccl(relayed, max_steps=2, max_count=1)
    program = result.program
    assert result.report["split_connections"] > 0 and program.nchannels > 1
    check_limits(program, replace(LIMITS, max_steps=2, max_count=1))
    assert verify(import_msccl(result.xml, strict=True, limits=replace(LIMITS, max_steps=2))).ok
    inputs, bufs = run_msccl(program, inplace=False, seed=4)
    check_results(program, inputs, bufs, inplace=False)


def _alltoall_allpairs_xml(n: int, *, own_copy: str | None = "direct", inplace: bool = False) -> str:
    """An all-pairs all-to-all (one chunk per pair) as msccl-tools' alltoall_allpairs.py writes it
    (``chunk(r, Buffer.input, j).copy(j, Buffer.output, r)``): one thread block per peer p that sends i[p] and
    then receives o[p], and a local thread block copying the rank's own chunk i[r] -> o[r] (``own_copy="direct"``),
    or i[r] -> s[0] -> o[r] (``"scratch"``), or not at all (None)."""
    def step(s, t, sb, so, db, do):
        return (f'      <step s="{s}" type="{t}" srcbuf="{sb}" srcoff="{so}" dstbuf="{db}" dstoff="{do}" cnt="1" '
                f'depid="-1" deps="-1" hasdep="0"/>')
    gpus = []
    for g in range(n):
        tbs = [f'    <tb id="{i}" send="{p}" recv="{p}" chan="0">\n{step(0, "s", "i", p, "o", g)}\n'
               f'{step(1, "r", "i", g, "o", p)}\n    </tb>' for i, p in enumerate(q for q in range(n) if q != g)]
        if own_copy == "direct":
            tbs.append(f'    <tb id="{n - 1}" send="-1" recv="-1" chan="0">\n{step(0, "cpy", "i", g, "o", g)}\n'
                       '    </tb>')
        elif own_copy == "scratch":
            tbs.append(f'    <tb id="{n - 1}" send="-1" recv="-1" chan="0">\n{step(0, "cpy", "i", g, "s", 0)}\n'
                       f'{step(1, "cpy", "s", 0, "o", g)}\n    </tb>')
        head = f'  <gpu id="{g}" i_chunks="{n}" o_chunks="{n}" s_chunks="{int(own_copy == "scratch")}">\n'
        gpus.append(head + "\n".join(tbs) + "\n  </gpu>")
    return (f'<algo name="alltoall_allpairs" proto="Simple" nchannels="1" nchunksperloop="{n}" ngpus="{n}" '
            f'coll="alltoall" inplace="{int(inplace)}" outofplace="{int(not inplace)}" minBytes="0" maxBytes="0">\n'
            + "\n".join(gpus) + "\n</algo>\n")


def test_msccl_tools_style_alltoall_imports_and_verifies():
    text = _alltoall_allpairs_xml(4)
    program = parse_msccl(text)
    check_limits(program)
    inputs, bufs = run_msccl(program, inplace=False, seed=1, rendezvous=False)
    check_results(program, inputs, bufs, inplace=False)
    s = import_msccl(text)
    assert s.collective.value == "alltoall" and s.nblocks == 16 and s.meta["import_model"] == "outofplace"
    res = verify(s)
    assert res.ok, res.summary()
    assert s.num_steps == 1 and s.nscratch == 0  # the own-part copy i -> o is the IR's one cell: nothing to do
    back = import_msccl(export_msccl(s))         # and our export of it adds the copy back
    assert verify(back).ok


def test_alltoall_own_part_through_scratch():
    """o's own part written otherwise than by a copy of the same chunks of i gets coordinates of its own and a
    final copy into pair (r, r)."""
    text = _alltoall_allpairs_xml(3, own_copy="scratch")
    program = parse_msccl(text)
    inputs, bufs = run_msccl(program, inplace=False, seed=5, rendezvous=False)
    check_results(program, inputs, bufs, inplace=False)
    s = import_msccl(text)
    res = verify(s)
    assert res.ok, res.summary()
    assert s.num_steps == 3  # i -> s, s -> o, o's own part -> pair (r, r)


def test_alltoall_without_own_copy_fails_verification():
    """A program that never copies the rank's own part into o leaves garbage there; the import must show it."""
    s = import_msccl(_alltoall_allpairs_xml(3, own_copy=None))
    res = verify(s)
    assert not res.ok and res.failure.rank == 0 and res.failure.interval == ("0", "1")


def test_alltoall_export_writes_own_send_part_to_scratch():
    """A schedule that overwrites a rank's own send coordinate: the sendbuf is const, so the value goes to s."""
    b = ScheduleBuilder("alltoall", 2, 4)
    b.add(0, 1, 0, 0, 2, 3)          # rank 1 sends pair (1, 0)
    b.add(1, 0, 1, 0, 1, 2, 1)       # rank 0 sends pair (0, 1), landing in rank 1's coordinate of pair (1, 0)
    b.add(2, 1, 1, 0, 2, 3, -1)      # rank 1 moves it to pair (0, 1)
    s = b.build(meta={"algorithm": "odd"})
    assert verify(s).ok
    program = to_msccl(s).program
    assert program.gpus[1].s_chunks == 1
    assert not any(st.type in _WRITES and st.dstbuf == "i" for g in program.gpus for tb in g.tbs for st in tb.steps)
    assert verify(program_to_schedule(program)).ok
    for seed, rendezvous in ((0, True), (1, False)):
        inputs, bufs = run_msccl(program, inplace=False, seed=seed, rendezvous=rendezvous)
        check_results(program, inputs, bufs, inplace=False)


def test_in_place_alltoall_imports_and_verifies():
    """inplace="1": o is i (msccl-tools' in-place AllToAll); the receive of o[p] after the send of i[p] in one thread
    block is ordered, and a final local step moves what o holds into the receive coordinates."""
    text = _alltoall_allpairs_xml(4, inplace=True)
    program = parse_msccl(text)
    inputs, bufs = run_msccl(program, inplace=True, seed=2, rendezvous=False)
    check_results(program, inputs, bufs, inplace=True)
    s = import_msccl(text)
    assert s.meta["import_model"] == "inplace"
    res = verify(s)
    assert res.ok, res.summary()
    assert s.num_steps == 2


def test_alltoall_import_errors():
    exported = export_msccl(build("direct", "ring:3", "alltoall"))
    with pytest.raises(MscclFormatError, match="data race"):  # receives into o[p] while i[p] is sent, if o is i
        import_msccl(exported, model="inplace")
    text = _alltoall_allpairs_xml(4).replace('nchunksperloop="4"', 'nchunksperloop="6"')
    with pytest.raises(MscclFormatError, match="nchunksperloop=6 must be a multiple of ngpus=4"):
        import_msccl(text)
    text = _alltoall_allpairs_xml(2).replace('srcoff="1" dstbuf="o" dstoff="0"', 'srcoff="2" dstbuf="o" dstoff="0"')
    with pytest.raises(MscclFormatError, match="outside it"):
        import_msccl(text)


# -- limits -----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def swing_program():
    return to_msccl(build("swing", "torus:4x4", "allreduce")).program


@pytest.mark.parametrize("field,value,limit", [
    ("max_steps", 3, "MSCCL_MAX_NUM_STEPS"),
    ("max_count", 1, "MSCCL_MAX_COUNT"),
    ("max_threadblocks_per_channel", 2, "MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL"),
    ("max_channels", 1, "MAXCHANNELS"),
    ("max_threadblocks", 4, "MSCCL_MAX_NUM_THREAD_BLOCKS"),
    ("max_depid", 2, "dependentBid"),
    ("max_offset", 10, "int16_t offset"),
    ("max_nodes", 50, "MAX_NODES"),
    ("max_subs", 5, "MAX_SUBS"),
    ("max_str_len", 5, "MAX_STR_LEN"),
])
def test_each_limit_raises_its_error(swing_program, field, value, limit):
    program = copy.deepcopy(swing_program)
    if field == "max_channels":
        program.nchannels = 2
    with pytest.raises(MscclLimitError) as err:
        check_limits(program, replace(LIMITS, **{field: value}))
    assert err.value.limit == limit and err.value.allowed == value and err.value.value > value
    assert limit in str(err.value) and str(err.value.value) in str(err.value)


def test_executor_default_limits_hit():
    """Programs past the executor's own numbers (not lowered options) are refused."""
    from directcoll.export import Gpu, Program, Step, ThreadBlock
    g = Gpu(0, 100, 100, 0, [ThreadBlock(t, send=1, recv=-1, chan=0, steps=[Step(0, "s", "i", 0, "o", 0, 1)])
                             for t in range(33)])
    program = Program("x", "allreduce", 2, 100, 1, gpus=[g, Gpu(1, 100, 100, 0)])
    with pytest.raises(MscclLimitError, match="MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL = 32"):
        check_limits(program)
    g.tbs = [ThreadBlock(0, send=1, chan=0, steps=[Step(s, "s", "i", 0, "o", 0, 1) for s in range(65)])]
    with pytest.raises(MscclLimitError, match="MSCCL_MAX_NUM_STEPS = 64"):
        check_limits(program)
    g.tbs = [ThreadBlock(0, send=1, chan=0, steps=[Step(0, "s", "i", 0, "o", 0, 72)])]
    with pytest.raises(MscclLimitError, match="MSCCL_MAX_COUNT = 72"):
        check_limits(program)
    g.tbs = [ThreadBlock(0, send=1, chan=32, steps=[Step(0, "s", "i", 0, "o", 0, 1)])]
    with pytest.raises(MscclLimitError, match="MAXCHANNELS"):
        check_limits(program)
    program.nchannels = 33
    with pytest.raises(MscclLimitError, match="MAXCHANNELS = 32"):
        check_limits(program)
    program.nchannels = 1
    g.tbs = [ThreadBlock(0, chan=0, steps=[Step(0, "re", "s", 0, "o", 0, 2), Step(1, "re", "s", 4, "o", 0, 1)])]
    with pytest.raises(MscclLimitError, match="fuses"):
        check_limits(program)


def test_export_options_that_exceed_limits():
    schedule = build("swing", "torus:4x4", "allreduce")
    with pytest.raises(MscclLimitError) as err:
        to_msccl(schedule, max_steps=4, split=False)
    assert err.value.limit == "MSCCL_MAX_NUM_STEPS" and "thread block" in str(err.value)
    with pytest.raises(MscclLimitError) as err:  # one op and its dependency nops cannot be cut further
        to_msccl(schedule, max_steps=1)
    assert err.value.limit == "MSCCL_MAX_NUM_STEPS"
    with pytest.raises(MscclLimitError) as err:
        to_msccl(schedule, max_threadblocks_per_channel=1, max_channels=2)
    assert err.value.limit == "MAXCHANNELS" and "MSCCL_MAX_NUM_THREAD_BLOCKS_PER_CHANNEL" in str(err.value)
    with pytest.raises(MscclLimitError) as err:
        to_msccl(schedule, max_threadblocks=3)
    assert err.value.limit == "MSCCL_MAX_NUM_THREAD_BLOCKS"
    with pytest.raises(MscclLimitError, match="MSCCL_MAX_COUNT = 72"):
        to_msccl(schedule, max_count=100)
    with pytest.raises(MscclLimitError, match="MAX_STR_LEN"):
        to_msccl(schedule, name="x" * 300)
    with pytest.raises(DirectcollError, match="unknown option"):
        to_msccl(schedule, max_stepz=3)
    with pytest.raises(DirectcollError, match="proto"):
        to_msccl(schedule, proto="Fast")


def test_strict_import_checks_limits():
    text = export_msccl(build("ring", "ring:6", "allreduce"))
    with pytest.raises(MscclLimitError):
        import_msccl(text, strict=True, limits=replace(LIMITS, max_steps=2))
    assert verify(import_msccl(text, strict=True)).ok


def test_unequal_ownership_is_refused():
    b = ScheduleBuilder("allgather", 2, 3)
    b.add(0, 0, 1, 0, 0, 2)
    b.add(0, 1, 0, 0, 2, 3)
    s = b.build(owner=[0, 0, 1])
    assert verify(s).ok
    with pytest.raises(DirectcollError, match="same share"):
        to_msccl(s)


# -- import: hand-written files ---------------------------------------------------------------------------------

ALLREDUCE_2GPU = """
<algo name="hand2" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allreduce" inplace="1"
      outofplace="0" minBytes="0" maxBytes="0">
  <!-- each GPU reduces the chunk it owns, then sends it back; one thread block talks both ways -->
  <gpu id="0" i_chunks="2" o_chunks="2" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrc" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="s" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="2" o_chunks="2" s_chunks="0">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="rrc" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="2" type="s" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="3" type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
"""


def _ring3_fused() -> str:
    """3-GPU ring allreduce written with the fused instructions (rrs, rrcs, rcs), like msccl-tools' ring: chunk c
    goes c -> c+1 (rrs) -> c+2 (rrcs, now reduced) -> c (rcs) -> c+1 (r)."""
    gpus = []
    for g in range(3):
        nxt, prv = (g + 1) % 3, (g - 1) % 3
        ops = [("s", g, g), ("rrs", prv, prv), ("rrcs", nxt, nxt), ("rcs", g, g), ("r", prv, prv)]
        steps = "\n".join(
            f'      <step s="{i}" type="{t}" srcbuf="o" srcoff="{src}" dstbuf="o" dstoff="{dst}" cnt="1" depid="-1" '
            f'deps="-1" hasdep="0"/>' for i, (t, src, dst) in enumerate(ops))
        gpus.append(f'  <gpu id="{g}" i_chunks="3" o_chunks="3" s_chunks="0">\n    <tb id="0" send="{nxt}" '
                    f'recv="{prv}" chan="0">\n{steps}\n    </tb>\n  </gpu>')
    return ('<algo name="ring3" proto="LL" nchannels="1" nchunksperloop="3" ngpus="3" coll="allreduce" '
            'inplace="1" outofplace="0" minBytes="0" maxBytes="0">\n' + "\n".join(gpus) + "\n</algo>\n")


# out of place: the input is read while the output is written; in place this would be a race
ALLREDUCE_2GPU_OUT_OF_PLACE = """<algo name="oop" proto="Simple" nchannels="1" nchunksperloop="1" ngpus="2"
 coll="allreduce" inplace="0" outofplace="1" minBytes="0" maxBytes="0">
  <gpu id="0" i_chunks="1" o_chunks="1" s_chunks="0">
    <tb id="0" send="1" recv="-1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="1" chan="0">
      <step s="0" type="rrc" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="1" o_chunks="1" s_chunks="0">
    <tb id="0" send="0" recv="-1" chan="0">
      <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
    <tb id="1" send="-1" recv="0" chan="0">
      <step s="0" type="rrc" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
"""

# allgather in place, read from the output buffer as NCCL's in-place call lays it out (i_chunks may be 0)
ALLGATHER_IN_PLACE = """<algo name="ag" proto="Simple" nchannels="1" nchunksperloop="2" ngpus="2" coll="allgather"
 inplace="1" outofplace="0" minBytes="0" maxBytes="0">
  <gpu id="0" i_chunks="0" o_chunks="2" s_chunks="0">
    <tb id="0" send="1" recv="1" chan="0">
      <step s="0" type="s" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
  <gpu id="1" i_chunks="0" o_chunks="2" s_chunks="0">
    <tb id="0" send="0" recv="0" chan="0">
      <step s="0" type="s" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>
      <step s="1" type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>
    </tb>
  </gpu>
</algo>
"""


def test_hand_written_allreduce_imports_and_verifies():
    s = import_msccl(ALLREDUCE_2GPU)
    assert s.collective.value == "allreduce" and s.nranks == 2 and s.nblocks == 2
    res = verify(s)
    assert res.ok, res.summary()
    assert s.num_steps == 2 and s.meta["algorithm"] == "hand2"
    program = parse_msccl(ALLREDUCE_2GPU)
    inputs, bufs = run_msccl(program, inplace=True, seed=0, rendezvous=False)
    check_results(program, inputs, bufs, inplace=True)


def test_hand_written_fused_ring_imports_and_verifies():
    text = _ring3_fused()
    s = import_msccl(text)
    res = verify(s)
    assert res.ok, res.summary()
    assert s.nscratch > 0  # rrs forwards a reduced value it never stores: a temporary
    program = parse_msccl(text)
    inputs, bufs = run_msccl(program, inplace=True, seed=3, rendezvous=False)
    check_results(program, inputs, bufs, inplace=True)


def _allpairs_xml(n: int) -> str:
    """An all-pairs allreduce in the style msccl-tools writes (e.g. its ap2ll.xml): in place on the input buffer
    only (o_chunks=0); every GPU sends each peer that peer's chunk into scratch, a local thread block waits for all
    receives with nop steps and reduces them into its own chunk with a chain of `re` steps (which the executor
    fuses), then every GPU sends its reduced chunk to all peers."""
    def step(s, t, sb, so, db, do, cnt, depid=-1, deps=-1, hasdep=0):
        return (f'      <step s="{s}" type="{t}" srcbuf="{sb}" srcoff="{so}" dstbuf="{db}" dstoff="{do}" cnt="{cnt}" '
                f'depid="{depid}" deps="{deps}" hasdep="{hasdep}"/>')
    gpus = []
    for g in range(n):
        peers = [p for p in range(n) if p != g]
        local = len(peers)
        tbs = []
        for i, p in enumerate(peers):
            slot = [q for q in range(n) if q != p].index(g)   # where p keeps what g sends it
            tbs.append(f'    <tb id="{i}" send="{p}" recv="{p}" chan="0">\n' + "\n".join([
                step(0, "s", "i", p, "s", slot, 1),
                step(1, "r", "i", g, "s", i, 1, hasdep=1),
                step(2, "s", "i", g, "i", g, 1, depid=local, deps=len(peers) - 1 + len(peers) - 1),
                step(3, "r", "i", p, "i", p, 1)]) + "\n    </tb>")
        lines = [step(i, "nop", "i", -1, "o", -1, 0, depid=i, deps=1) for i in range(len(peers) - 1)]
        base = len(lines)
        for i in range(len(peers)):
            dep = (len(peers) - 1, 1) if i == 0 else (-1, -1)
            lines.append(step(base + i, "re", "s", i, "i", g, 1, *dep, hasdep=int(i == len(peers) - 1)))
        tbs.append(f'    <tb id="{local}" send="-1" recv="-1" chan="0">\n' + "\n".join(lines) + "\n    </tb>")
        head = f'  <gpu id="{g}" i_chunks="{n}" o_chunks="0" s_chunks="{n - 1}">\n'
        gpus.append(head + "\n".join(tbs) + "\n  </gpu>")
    return (f'<!-- generated like msccl-tools -->\n<algo name="allpairs" proto="LL" nchannels="1" nchunksperloop="{n}" '
            f'ngpus="{n}" coll="allreduce" inplace="1" outofplace="0" minBytes="0" maxBytes="65536">\n'
            + "\n".join(gpus) + "\n</algo>\n")


@pytest.mark.parametrize("n", [2, 4])
def test_msccl_tools_style_allpairs_imports_and_verifies(n):
    text = _allpairs_xml(n)
    program = parse_msccl(text)
    check_limits(program)
    inputs, bufs = run_msccl(program, inplace=True, seed=n, rendezvous=False, capacity=1)  # o aliases i
    check_results(program, inputs, bufs, inplace=True)
    s = import_msccl(text)
    res = verify(s)
    assert res.ok, res.summary()
    assert s.num_steps == 3  # exchange, reduce, broadcast


def test_out_of_place_file_uses_a_separate_input():
    s = import_msccl(ALLREDUCE_2GPU_OUT_OF_PLACE)
    assert s.meta["import_model"] == "outofplace" and verify(s).ok
    with pytest.raises(MscclFormatError, match="data race"):
        import_msccl(ALLREDUCE_2GPU_OUT_OF_PLACE, model="inplace")


def test_in_place_allgather_reads_own_block_from_output():
    s = import_msccl(ALLGATHER_IN_PLACE)
    assert s.collective.value == "allgather" and verify(s).ok


def test_dependencies_order_a_hand_written_file():
    """Two thread blocks write the same chunk; a depid/deps/hasdep chain orders them."""
    text = ALLREDUCE_2GPU_OUT_OF_PLACE.replace(
        '<step s="0" type="rrc" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>',
        '<step s="0" type="rrc" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="0" deps="0" hasdep="0"/>'
    ).replace(
        '<step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>',
        '<step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="1"/>')
    s = import_msccl(text, model="inplace")  # now the receive waits for the send: no race in place either
    assert verify(s).ok


# -- import: errors ---------------------------------------------------------------------------------------------

def _mutate(text, old, new, count=1):
    assert old in text
    return text.replace(old, new, count)


STEP0 = '<step s="0" type="s" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" hasdep="0"/>'


@pytest.mark.parametrize("text,match", [
    ("<algo name='x'", "not well-formed"),
    ("<schedule/>", "root element is <schedule>"),
    (_mutate(ALLREDUCE_2GPU, ' cnt="1" depid="-1"', ' depid="-1"'), "gpu 0, tb 0, step #0: missing attribute 'cnt'"),
    (_mutate(ALLREDUCE_2GPU, 'nchunksperloop="2"', 'nchunksperloop="two"'), "nchunksperloop='two' is not an integer"),
    (_mutate(ALLREDUCE_2GPU, 'type="rrc"', 'type="xyz"'), "type='xyz' is not accepted"),
    (_mutate(ALLREDUCE_2GPU, 'srcbuf="o" srcoff="1"', 'srcbuf="q" srcoff="1"'), "srcbuf='q'"),
    (_mutate(ALLREDUCE_2GPU, 'coll="allreduce"', 'coll="gather"'), "coll='gather'"),
    (_mutate(ALLREDUCE_2GPU, 'proto="Simple"', 'proto="Fast"'), "proto='Fast'"),
    (_mutate(ALLREDUCE_2GPU, 'ngpus="2"', 'ngpus="3"'), "ngpus=3 but the <gpu> ids"),
    (_mutate(ALLREDUCE_2GPU, STEP0, ""), "unmatched"),
    (_mutate(ALLREDUCE_2GPU, STEP0, STEP0.replace('cnt="1"', 'cnt="2"').replace('srcoff="1"', 'srcoff="0"')),
     "sends 2 chunks but the matching receive"),
    (_mutate(ALLREDUCE_2GPU, STEP0, STEP0.replace('srcoff="1"', 'srcoff="5"')), "outside it"),
    (_mutate(ALLREDUCE_2GPU, 'tb id="0" send="1"', 'tb id="0" send="-1"'), "without a send peer"),
    (_mutate(ALLREDUCE_2GPU, 'tb id="0" send="1"', 'tb id="1" send="1"'), "thread block 0 is missing"),
    (_mutate(ALLREDUCE_2GPU, STEP0, STEP0.replace('depid="-1" deps="-1"', 'depid="0" deps="2"')),
     "wait forever"),
    (_mutate(ALLREDUCE_2GPU, STEP0, STEP0.replace('depid="-1" deps="-1" hasdep="0"', 'depid="0" deps="3" hasdep="0"'))
     .replace('<step s="3" type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" deps="-1" '
              'hasdep="0"/>', '<step s="3" type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1" cnt="1" depid="-1" '
              'deps="-1" hasdep="1"/>', 1), "deadlock"),
    (ALLREDUCE_2GPU_OUT_OF_PLACE.replace('inplace="0"', 'inplace="1"'), "data race"),
])
def test_malformed_or_invalid_xml(text, match):
    with pytest.raises(MscclFormatError, match=re.escape(match)):
        import_msccl(text)


def test_error_names_the_file(tmp_path):
    path = tmp_path / "broken.xml"
    path.write_text(_mutate(ALLREDUCE_2GPU, 'type="rrc"', 'type="xyz"'))
    with pytest.raises(MscclFormatError, match=re.escape(str(path))):
        import_msccl(path)
    with pytest.raises(MscclFormatError, match="no such file"):
        import_msccl(tmp_path / "missing.xml")


def test_round_trip_is_stable():
    """Exporting an imported file and importing it again gives the same transfers."""
    first = import_msccl(export_msccl(build("swing", "ring:6", "allreduce")))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = import_msccl(export_msccl(first))
    assert verify(second).ok and second.num_steps == first.num_steps


def test_program_to_schedule_direct():
    program = to_msccl(build("bucket", "torus:2x3", "reduce_scatter")).program
    assert verify(program_to_schedule(program)).ok
