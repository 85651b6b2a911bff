"""The emulated testbed (docs/testbed.md): the plan's routes are exactly the minimal paths, its links and rates
follow the topology; built for real (marker ``testbed``: root or CAP_NET_ADMIN), its links carry packets at their
rate, MPI runs across it and gets correct results, and a launcher killed with SIGKILL leaves nothing that
``testbed down --stale`` does not remove."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from directcoll.errors import DirectcollError
from directcoll.testbed.netns import Testbed, privileges, states
from directcoll.testbed.plan import BURST, MAX_NODES, address, plan
from directcoll.topology import parse
from directcoll.topology.paths import bfs_distances

CLI = [sys.executable, "-m", "directcoll.cli.main"]


@pytest.mark.parametrize("spec", ["ring:5", "torus:2x2", "torus:3x4", "hypercube:3", "circulant:8:1,3"])
def test_routes_are_the_minimal_paths(spec):
    """Node u reaches d through exactly the links (u, w) with dist(w, d) = dist(u, d) - 1, by BFS independently."""
    t = parse(spec)
    p = plan(t, link_rate=1e6)
    dist = bfs_distances(t)
    out = {}  # (node, interface) -> next node, from the pairs
    for q in p.pairs:
        if q.ab:
            out[(q.a, q.a_name)] = q.b
        if q.ba:
            out[(q.b, q.b_name)] = q.a
    for u in range(t.num_nodes):
        for d in range(t.num_nodes):
            if u == d:
                assert d not in p.routes[u]
                continue
            want = sorted((w, dev) for (v, dev), w in out.items() if v == u and dist[w, d] == dist[u, d] - 1)
            assert sorted(p.routes[u][d]) == want and want, (spec, u, d)


@pytest.mark.parametrize("spec", ["ring:6", "torus:2x4", "torus:3x3", "hypercube:3", "genkautz:3:8",
                                  "twistedhypercube:3"])
def test_single_routing_is_the_models_single_route(spec):
    """The testbed's `single` routes and the models' `single_route` choose the same next node at every hop, the
    path is minimal, and parallel links to that node share the transfer evenly."""
    from directcoll.topology.routing import single_route

    t = parse(spec)
    p = plan(t, link_rate=1e6, routing="single")
    dist = bfs_distances(t)
    for u in range(t.num_nodes):
        for d in range(t.num_nodes):
            if u == d:
                continue
            links, share = single_route(t, u, d)
            nodes = [u, *t.link_dst[links][np.r_[np.diff(t.link_dst[links]) != 0, True]]]
            assert len(nodes) - 1 == dist[u, d]  # minimal
            assert [w for w, _ in p.routes[u][d]] == [nodes[1]]
            first = links[t.link_dst[links] == nodes[1]]
            assert share[: len(first)].sum() == pytest.approx(1.0)


def test_links_pair_the_two_directions_and_bundle_parallel_links():
    t = parse("torus:2x4")  # side 2: two parallel links between neighbours along the first dimension
    p = plan(t, link_rate=1e6)
    used = sorted([e for q in p.pairs for e in q.ab + q.ba])
    assert used == list(range(t.num_links))  # every directed link in exactly one pair
    for q in p.pairs:
        assert all((t.link_src[e], t.link_dst[e]) == (q.a, q.b) for e in q.ab)
        assert all((t.link_src[e], t.link_dst[e]) == (q.b, q.a) for e in q.ba)
        assert q.rate_ab == pytest.approx(1e6 * len(q.ab)) and q.rate_ba == pytest.approx(1e6 * len(q.ba))
    assert sorted({len(q.ab) for q in p.pairs}) == [1, 2]  # the bundles along the side-2 dimension
    slow = parse("links(torus:4x4,dim=0,bandwidth=100Gbps)")  # dimension 0 at 100 of 400 Gb/s
    rates = {q.rate_ab for q in plan(slow, link_rate=8e6).pairs}
    assert sorted(rates) == pytest.approx([2e6, 8e6])  # the fastest at the link rate, the others at their ratio


def test_a_directed_topology_gets_pairs_whose_reverse_carries_no_route():
    t = parse("circulant:5:1:uni")  # one direction only
    p = plan(t, link_rate=1e6)
    assert len(p.pairs) == t.num_links and all(q.ba == () for q in p.pairs)
    assert all(dev.endswith("a") for table in p.routes for hops in table.values() for _, dev in hops)


def test_the_plan_refuses_what_it_cannot_build():
    with pytest.raises(DirectcollError, match="at most 64"):
        plan(parse(f"ring:{MAX_NODES + 1}"))
    with pytest.raises(DirectcollError, match="queue"):
        plan(parse("ring:4"), queue=BURST - 1)
    with pytest.raises(DirectcollError, match="link rate"):
        plan(parse("ring:4"), link_rate=0.0)
    with pytest.raises(DirectcollError, match="link delay"):
        plan(parse("ring:4"), link_delay=-1e-6)
    with pytest.raises(DirectcollError, match="adaptive .* or single"):
        plan(parse("torus:4x4"), routing="dor")
    assert address(0) == "10.0.0.1" and len({address(k) for k in range(MAX_NODES)}) == MAX_NODES


def test_without_privileges_the_testbed_refuses_in_one_line():
    """Without CAP_NET_ADMIN (dropped by capsh), `testbed up` says what it needs, exit 2, no traceback."""
    if os.geteuid() != 0 or not Path("/usr/sbin/capsh").exists():
        pytest.skip("needs root and capsh to drop CAP_NET_ADMIN")
    env = {**os.environ, "DIRECTCOLL_TESTBED_STATE": "/tmp"}
    done = subprocess.run(["capsh", "--drop=cap_net_admin", "--", "-c", " ".join([*CLI, "testbed", "up", "ring:4"])],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "CAP_NET_ADMIN" in done.stderr, done.stderr


needs_root = pytest.mark.skipif(bool(privileges()), reason=f"no testbed here: {privileges()}")


def _ours(prefix: str) -> list[str]:
    return [ns for ns in os.listdir("/run/netns") if ns.startswith(prefix)] if os.path.isdir("/run/netns") else []


@pytest.fixture
def state(tmp_path, monkeypatch):
    monkeypatch.setenv("DIRECTCOLL_TESTBED_STATE", str(tmp_path / "state"))
    return tmp_path / "state"


@pytest.mark.testbed
@needs_root
def test_a_link_carries_tcp_at_its_rate_and_multihop_routes_work(state):
    """2 MiB over TCP from node 0 to node 2 of ring:4 (two hops) at 20 Mb/s takes the time its frames need on the
    wire at 20 Mb/s (within -3 % and +30 %); the testbed is gone afterwards."""
    rate = 20e6 / 8
    p = plan(parse("ring:4"), link_rate=rate, prefix="dctb-rate")
    size = 2 << 20
    with Testbed(p):
        server = subprocess.Popen(["ip", "netns", "exec", p.namespaces[2], sys.executable, "-c",
                                   "import socket,time\ns=socket.socket();s.setsockopt(socket.SOL_SOCKET,"
                                   "socket.SO_REUSEADDR,1);s.bind(('0.0.0.0',5201));s.listen(1);print('ready',"
                                   "flush=True)\nc,_=s.accept();n=0;t=None\nwhile True:\n b=c.recv(1<<16)\n "
                                   "t=t or time.monotonic()\n if not b: break\n n+=len(b)\n"
                                   "print(n,time.monotonic()-t,flush=True)"], stdout=subprocess.PIPE, text=True)
        assert server.stdout.readline().strip() == "ready"
        client = subprocess.run(["ip", "netns", "exec", p.namespaces[0], sys.executable, "-c",
                                 f"import socket\ns=socket.create_connection(('{p.addresses[2]}',5201),timeout=30)\n"
                                 f"s.sendall(b'x'*{size});s.close()"], capture_output=True, text=True, timeout=60)
        assert client.returncode == 0, client.stderr
        got, seconds = server.stdout.readline().split()
        server.wait(timeout=30)
    assert int(got) == size
    # on the wire every 1448 payload bytes travel in a 1514-byte frame (TCP/IP and Ethernet headers); TCP's window
    # growth and an occasional retransmission add up to a few tenths more (1 run in 10 took +10 % over the wire
    # time), a wrong shaping (none, or bits for bytes) would be off by orders of magnitude
    wire = size * 1514 / 1448 / rate
    assert 0.97 * wire < float(seconds) < 1.3 * wire, (float(seconds), wire)
    assert not _ours("dctb-rate") and not list(state.glob("*.json"))


@pytest.mark.testbed
@pytest.mark.mpi
@needs_root
def test_run_on_the_testbed_is_correct_and_leaves_nothing(state):
    """`directcoll run torus:2x2 --engine testbed`: Swing and MPI's own allreduce through the emulated links,
    results checked by the ranks; afterwards no namespace and no state file is left."""
    before = set(_ours("dctb-"))
    done = subprocess.run([*CLI, "run", "torus:2x2", "--engine", "testbed", "--algorithms", "swing:bandwidth,ring",
                           "--sizes", "8B,256KiB", "--repeat", "2", "--json"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(done.stdout)
    rows = [r for r in data["results"] if "skipped" not in r]
    assert len(rows) == 4 and all(r["correct"] and r["native_time_s"] > 0 for r in rows)
    assert data["engine"] == "c" and data["testbed"]["link_rate_Bps"] == pytest.approx(20e6 / 8)
    # an allreduce moves at least 2 (p - 1) / p of the vector in and out of every node, whose 4 links run at
    # 20 Mb/s: 256 KiB cannot take less, so the emulated links shape the run
    big = [r for r in rows if r["size"] == 256 * 1024]
    assert all(r["time_s"] > 1.5 * 256 * 1024 / (4 * 20e6 / 8) for r in big)
    assert set(_ours("dctb-")) <= before and not list(state.glob("*.json"))


@pytest.mark.testbed
@pytest.mark.native
@needs_root
def test_bench_on_the_testbed_prints_both_times(state):
    """`directcoll bench torus:2x2 --engine testbed`: the OSU-format run of MPI's allreduce and ours (the model's
    table, through LD_PRELOAD) on the emulated links, both timed; nothing left behind."""
    before = set(_ours("dctb-"))
    done = subprocess.run([*CLI, "bench", "torus:2x2", "--engine", "testbed", "--sizes", "8B,64KiB", "--json"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads(done.stdout)["rows"]
    assert [r["bytes"] for r in rows] == [8, 65536] and all(r["mpi_s"] > 0 and r["directcoll_s"] > 0 for r in rows)
    # 64 KiB through 20 Mb/s links: at least the time one node's 4 links take to carry it once
    assert rows[1]["mpi_s"] > 65536 / (4 * 20e6 / 8)
    assert set(_ours("dctb-")) <= before and not list(state.glob("*.json"))


@pytest.mark.testbed
@needs_root
def test_a_launcher_killed_with_sigkill_is_cleaned_by_down_stale(state):
    """SIGKILL the `testbed exec` process while its ranks run: its namespaces and ranks survive it, `testbed
    list` calls it stale, `testbed down --stale` removes every namespace and kills every rank; nothing else."""
    env = {**os.environ}
    mine = subprocess.run(["ip", "netns", "add", "dctbkeep-other"], capture_output=True)  # not ours: must survive
    # ranks sleep a duration no other process on the machine is likely to (they are found by their command line)
    proc = subprocess.Popen([*CLI, "testbed", "exec", "ring:4", "--", "sleep", "120.0625"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        found = []
        while time.monotonic() < deadline and not found:
            found = [s for s in states() if s.get("pid") == proc.pid]
            time.sleep(0.2)
        assert found, proc.stderr.read() if proc.poll() is not None else "no state file"
        name = found[0]["name"]
        while time.monotonic() < deadline and not all(
                subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.strip()
                for ns in found[0]["namespaces"]):
            time.sleep(0.2)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert _ours(name), "the namespaces should outlive a launcher killed with SIGKILL"
        listed = subprocess.run([*CLI, "testbed", "list", "--json"], capture_output=True, text=True, timeout=60)
        assert [s["stale"] for s in json.loads(listed.stdout) if s["name"] == name] == [True]
        down = subprocess.run([*CLI, "testbed", "down", "--stale", "--json"], capture_output=True, text=True,
                              timeout=120)
        assert down.returncode == 0, down.stderr
        assert sorted(json.loads(down.stdout)["removed"][name]) == sorted(found[0]["namespaces"])
        assert not _ours(name) and not list(state.glob("*.json"))
        left = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cmdline(pid) == b"sleep\x00120.0625\x00"]
        assert not left, f"ranks left running: {left}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        if mine.returncode == 0:
            assert "dctbkeep-other" in os.listdir("/run/netns")
            subprocess.run(["ip", "netns", "delete", "dctbkeep-other"], capture_output=True)
        for s in states():
            if s.get("pid") == proc.pid:
                from directcoll.testbed.netns import down as remove

                remove(s["file"])


def _cmdline(pid: str) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def test_down_never_removes_a_namespace_it_did_not_create(tmp_path, monkeypatch):
    """A state file naming a namespace without the project's prefix (edited, or written by someone else) does not
    make `down` delete it."""
    monkeypatch.setenv("DIRECTCOLL_TESTBED_STATE", str(tmp_path))
    f = tmp_path / "dctb-forged.json"
    f.write_text(json.dumps({"name": "dctb-forged", "namespaces": ["default", "other"], "pid": None}))
    from directcoll.testbed.netns import down

    assert down(f) == [] and not f.exists()
