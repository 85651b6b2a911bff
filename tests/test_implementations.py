"""Hosts and implementations (docs/simulation.md, "Hosts and implementations"): every software term adds what its
definition says in the step and flow models, a multiport reduction costs the same in the step, flow and packet
engines, and parameter files carry named implementations."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace

import numpy as np
import pytest

from directcoll.errors import DirectcollError
from directcoll.registry import build, build_pattern
from directcoll.simulate import simulate
from directcoll.simulate.flow import flow_times
from directcoll.simulate.implementation import Implementation
from directcoll.simulate.params import NetworkParams, network_params
from directcoll.topology import parse

TORUS = parse("torus:4x4")
BASE = NetworkParams(alpha=1e-6, link_bandwidth=10e9, gamma=1e-9)


def _packet_engine():
    """The packet engine's entry point, or a skip where no C++ compiler can build its ns-3 driver."""
    if shutil.which("g++") is None:
        pytest.skip("no C++ compiler for the ns-3 driver")
    from directcoll.simulate.packet import simulate_packet

    return simulate_packet


def _times(pattern, params, sizes, topology=TORUS):
    step = simulate(pattern, topology, params).time(np.array(sizes, dtype=float))
    flow = flow_times(pattern, topology, sizes, params)
    return step, flow


@pytest.mark.parametrize("threads", [1, 2, None])
def test_a_multiport_reduction_costs_the_same_in_step_and_flow(threads):
    # Swing-B with 4 ports on torus:4x4: every step, every rank reduces 4 equal pieces; with T threads that is
    # ceil(4 / T) pieces' time: the step model's gamma * bytes / T (T divides 4 here) and the flow model's sum
    pattern = build_pattern("swing", TORUS, "allreduce", variant="bandwidth", ports=4)
    params = BASE.with_(implementation=Implementation("t", threads=threads))
    step, flow = _times(pattern, params, [2**20, 64 * 2**20])
    assert np.allclose(step, flow, rtol=1e-9)
    serial = _times(pattern, BASE, [64 * 2**20])[0][0]
    t = 4 if threads is None else threads
    reduce_serial = 1e-9 * 64 * 2**20 * (15 / 16)  # a rank reduces (N-1)/N of the vector over the reduce-scatter
    assert step[1] == pytest.approx(serial - reduce_serial * (1 - 1 / t), rel=1e-9)


@pytest.mark.packet
def test_a_multiport_reduction_costs_the_same_in_the_packet_engine():
    simulate_packet = _packet_engine()

    pattern = build("swing", parse("torus:4"), "allreduce", variant="bandwidth", ports=2)
    topo = parse("torus:4")
    size = 4 * 2**20
    for threads in (1, None):
        params = BASE.with_(implementation=Implementation("t", threads=threads), per_hop_latency=0.0,
                            packet_header=2)
        step = simulate(pattern, topo, params).time(float(size))
        packet = simulate_packet(pattern, topo, size, params).time_s
        assert packet == pytest.approx(step, rel=0.02), threads


def test_call_and_port_overheads_add_once_per_call():
    pattern = build_pattern("swing", TORUS, "allreduce", variant="latency", ports=3)
    impl = Implementation("x", call_overhead=5e-6, port_overhead=60e-6)
    step, flow = _times(pattern, BASE.with_(implementation=impl), [8.0, 2**20])
    bare_step, bare_flow = _times(pattern, BASE, [8.0, 2**20])
    assert np.allclose(step - bare_step, 5e-6 + 3 * 60e-6) and np.allclose(flow - bare_flow, 5e-6 + 3 * 60e-6)


@pytest.mark.parametrize("ports, threads, paid", [(1, None, False), (3, None, True), (3, 1, False), (3, 2, True)])
def test_the_thread_cost_is_paid_once_by_a_call_on_more_than_one_thread(ports, threads, paid):
    # starting and joining the port threads: once per call whatever their number, never on one thread
    pattern = build_pattern("swing", TORUS, "allreduce", variant="latency", ports=ports)
    impl = Implementation("x", call_overhead=5e-6, port_overhead=2e-6, thread_overhead=3e-6, threads=threads)
    step, flow = _times(pattern, BASE.with_(implementation=impl), [8.0, 2**20])
    bare_step, bare_flow = _times(pattern, BASE.with_(implementation=replace(impl, thread_overhead=0.0)), [8.0, 2**20])
    assert np.allclose(step - bare_step, 3e-6 * paid) and np.allclose(flow - bare_flow, 3e-6 * paid)


@pytest.mark.parametrize("ports, threads, paid", [(1, None, True), (2, None, False), (2, 1, True)])
def test_a_reduction_over_the_threshold_on_one_thread_pays_its_cost(ports, threads, paid):
    # Swing-B on torus:16 (a ring of 16): a rank reduces 1/2, 1/4, 1/8 and 1/16 of its port's share of the vector in
    # the 4 steps of its reduce-scatter, one reduction per port and step; with a 4 KiB threshold a 64 KiB vector on
    # one port has 3 reductions over it (32, 16 and 8 KiB; 4 KiB is not over), 1 KiB none; more than one thread:
    # none pays
    topo = parse("torus:16")
    pattern = build_pattern("swing", topo, "allreduce", variant="bandwidth", ports=ports)
    impl = Implementation("x", reduction_overhead=10e-6, reduction_threshold=4096, threads=threads)
    sizes = [1024.0, 65536.0]
    step, flow = _times(pattern, BASE.with_(implementation=impl), sizes, topo)
    bare_step, bare_flow = _times(pattern, BASE.with_(implementation=replace(impl, reduction_overhead=0.0)), sizes,
                                  topo)
    over = [0, {1: 3, 2: 2 * 2}[ports]] if paid else [0, 0]  # 2 ports: 2 of each port's halves (16 and 8 KiB)
    assert np.allclose(step - bare_step, np.multiply(over, 10e-6), rtol=0, atol=1e-12), (step - bare_step)
    assert np.allclose(flow - bare_flow, np.multiply(over, 10e-6), rtol=0, atol=1e-12), (flow - bare_flow)


@pytest.mark.packet
def test_the_packet_engine_charges_a_reduction_over_the_threshold_as_the_models_do():
    simulate_packet = _packet_engine()

    topo = parse("torus:8")
    pattern = build("swing", topo, "allreduce", variant="bandwidth", ports=1)
    params = BASE.with_(per_hop_latency=0.0, packet_header=2)
    impl = Implementation("x", reduction_overhead=10e-6, reduction_threshold=4096)
    size = 2**16  # reductions of 32, 16 and 8 KiB: 3 over the threshold
    bare = simulate_packet(pattern, topo, size, params).time_s
    paid = simulate_packet(pattern, topo, size, params.with_(implementation=impl)).time_s
    assert paid - bare == pytest.approx(3 * 10e-6, rel=1e-6)


def test_message_overhead_is_serialised_over_the_threads():
    # ring allreduce, bidirectional (2 ports): every rank posts 2 messages a step; one thread posts them one after
    # the other (2 o a step), one per port in parallel (o a step)
    topo = parse("ring:8")
    pattern = build_pattern("ring", topo, "allreduce", variant="bidirectional")
    steps, base = 2 * 7, NetworkParams(alpha=1e-6, link_bandwidth=10e9)  # no gamma: threads would change it too
    for threads, per_step in ((1, 2), (None, 1)):
        impl = Implementation("x", message_overhead=1e-6, threads=threads)
        step, flow = _times(pattern, base.with_(implementation=impl), [8.0], topo)
        bare_step, bare_flow = _times(pattern, base, [8.0], topo)
        assert step[0] - bare_step[0] == pytest.approx(steps * per_step * 1e-6, rel=1e-9)
        assert flow[0] - bare_flow[0] == pytest.approx(steps * per_step * 1e-6, rel=1e-9)


def test_rendezvous_adds_one_round_trip_above_the_eager_threshold():
    topo = parse("ring:4")
    pattern = build_pattern("ring", topo, "allgather", variant="unidirectional")  # 3 steps, N/4 of the vector each
    params = NetworkParams(alpha=1e-6, link_bandwidth=1e9, link_latency=0.0)
    impl = Implementation("x", eager_threshold=1024)
    for size, extra in ((4096.0, 0.0), (8192.0, 3 * 2 * 1e-6)):  # 1 KiB messages are eager, 2 KiB are not
        step, flow = _times(pattern, params.with_(implementation=impl), [size], topo)
        bare_step, bare_flow = _times(pattern, params, [size], topo)
        assert step[0] - bare_step[0] == pytest.approx(extra, abs=1e-15)
        assert flow[0] - bare_flow[0] == pytest.approx(extra, abs=1e-15)


def test_bandwidth_efficiency_divides_the_network_term():
    topo = parse("ring:8")
    pattern = build_pattern("ring", topo, "allgather", variant="unidirectional")
    params = NetworkParams(link_bandwidth=1e9, link_latency=0.0)
    step, flow = _times(pattern, params.with_(implementation=Implementation("x", bandwidth_efficiency=0.5)),
                        [2**20], topo)
    bare_step, bare_flow = _times(pattern, params, [2**20], topo)
    assert step[0] == pytest.approx(2 * bare_step[0]) and flow[0] == pytest.approx(2 * bare_flow[0])


def test_parameter_files_carry_named_implementations(tmp_path):
    path = tmp_path / "net.json"
    path.write_text(json.dumps({
        "link_bandwidth": 6.8e9, "alpha": 1e-6,
        "implementations": {"fujitsu-mpi": {"call_overhead": 3.7e-6, "bandwidth_efficiency": 0.4},
                            "libswing-utofu": {"port_overhead": 60e-6, "threads": None}},
        "default_implementation": "libswing-utofu"}))
    p = network_params(str(path))
    assert p.implementation.name == "libswing-utofu" and p.implementation.threads is None
    assert p.use("fujitsu-mpi").implementation.bandwidth_efficiency == 0.4
    assert p.use("libdirectcoll").implementation.neutral
    with pytest.raises(DirectcollError, match="'nope': the parameters .* describe fujitsu-mpi, libswing-utofu"):
        p.use("nope")
    for bad, match in [({"implementations": {"x": {"speed": 1}}}, "unknown key"),
                       ({"implementations": {"x": {"bandwidth_efficiency": 1.5}}}, r"bandwidth_efficiency = 1.5"),
                       ({"implementations": {"x": {"call_overhead": 1e400}}}, "call_overhead = inf is out of range"),
                       ({"implementations": {}, "default_implementation": "y"}, "default_implementation 'y'")]:
        path.write_text(json.dumps(bad).replace("Infinity", "1e400"))
        with pytest.raises(DirectcollError, match=match):
            network_params(str(path))


def test_the_command_line_takes_an_implementation_of_a_parameters_file(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "net.json"
    path.write_text(json.dumps({"link_bandwidth": 6.8e9, "implementations": {"slow": {"call_overhead": 1e-3}}}))

    def simulate_cli(*extra):
        done = subprocess.run([sys.executable, "-m", "directcoll", "compare", "torus:4x4", "--algorithms", "ring",
                               "--sizes", "1KiB", "--params", str(path), "--json", *extra], capture_output=True,
                              text=True, timeout=120)
        return done

    plain, slow = simulate_cli(), simulate_cli("--implementation", "slow")
    assert plain.returncode == 0 and slow.returncode == 0, slow.stderr
    t_plain = json.loads(plain.stdout)["results"][0]["time_s"]
    t_slow = json.loads(slow.stdout)["results"][0]["time_s"]
    assert t_slow == pytest.approx(t_plain + 1e-3, rel=1e-9)
    assert json.loads(slow.stdout)["params"]["implementation"]["name"] == "slow"
    bad = simulate_cli("--implementation", "nope")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "'nope'" in bad.stderr, bad.stderr


def test_a_code_path_adds_its_overheads_to_the_schedules_it_selects_in_step_and_flow():
    # the bandwidth-optimal path pays 40 us a call and 50 us a port more; the latency-optimal one nothing more
    impl = Implementation("lib", call_overhead=5e-6, port_overhead=2e-6,
                          paths=(("*:bandwidth", (("call_overhead", 40e-6), ("port_overhead", 50e-6))),
                                 ("swing:latency", (("message_overhead", 1e-6),))))
    params = BASE.with_(implementation=impl)
    for variant, extra in (("bandwidth", 40e-6 + 3 * 50e-6), ("latency", None)):
        pattern = build_pattern("swing", TORUS, "allreduce", variant=variant, ports=3)
        step, flow = _times(pattern, params, [8.0, 2**20])
        bare_step, bare_flow = _times(pattern, BASE.with_(implementation=replace(impl, paths=())), [8.0, 2**20])
        if extra is not None:
            assert np.allclose(step - bare_step, extra) and np.allclose(flow - bare_flow, extra)
        else:  # 4 steps on torus:4x4, each rank posting one message per port on its one thread: 3 us a step
            assert np.allclose(step - bare_step, 4 * 3e-6) and np.allclose(flow - bare_flow, 4 * 3e-6)
    # the most specific selector wins; an algorithm the paths do not name pays the implementation's own terms
    assert impl.path_of({"algorithm": "swing", "variant": "latency"}) == "swing:latency"
    assert impl.path_of({"algorithm": "recursive-doubling", "variant": "bandwidth"}) == "*:bandwidth"
    assert impl.path_of({"algorithm": "ring", "variant": "unidirectional"}) is None
    assert impl.on({"algorithm": "ring"}) == replace(impl, paths=())


@pytest.mark.packet
def test_a_code_path_adds_its_overheads_in_the_packet_engine():
    simulate_packet = _packet_engine()

    topo = parse("torus:4")
    pattern = build("swing", topo, "allreduce", variant="bandwidth", ports=2)
    impl = Implementation("lib", paths=(("swing", (("port_overhead", 30e-6),)),))
    params = BASE.with_(per_hop_latency=0.0, packet_header=2)
    bare = simulate_packet(pattern, topo, 2**16, params).time_s
    with_path = simulate_packet(pattern, topo, 2**16, params.with_(implementation=impl)).time_s
    assert with_path - bare == pytest.approx(2 * 30e-6, rel=1e-6)


def test_the_mirrored_collectives_setup_is_paid_only_by_schedules_that_run_them():
    # ports 0-2 on a 3D torus run the plain collectives and 3-5 the mirrored ones (the authors' library's order);
    # on a ring every second port is mirrored: 3 ports on torus:4x4x4 do not pay mirror_overhead, 6 do, 2 on a
    # ring do, in the step and flow models, with the same call, port and thread costs otherwise
    impl = Implementation("lib", port_overhead=2e-6, thread_overhead=3e-6,
                          paths=(("*:bandwidth", (("mirror_overhead", 80e-6),)),), threads=None)
    cube = parse("torus:4x4x4")
    for topo, ports, mirrored in ((cube, 3, False), (cube, 6, True), (parse("torus:16"), 2, True),
                                  (parse("torus:16"), 1, False)):
        for name in ("swing", "recursive-doubling"):
            pattern = build_pattern(name, topo, "allreduce", variant="bandwidth", ports=ports)
            assert (pattern.meta["mirrored"] > 0) == mirrored
            step, flow = _times(pattern, BASE.with_(implementation=impl), [8.0, 2**20], topo)
            bare_step, bare_flow = _times(pattern, BASE.with_(implementation=replace(impl, paths=())), [8.0, 2**20],
                                          topo)
            assert np.allclose(step - bare_step, 80e-6 * mirrored) and np.allclose(flow - bare_flow, 80e-6 * mirrored)
    # the latency path, without the setup, pays nothing more with its mirrored collectives
    pattern = build_pattern("swing", cube, "allreduce", variant="latency", ports=6)
    assert np.allclose(_times(pattern, BASE.with_(implementation=impl), [8.0], cube)[0],
                       _times(pattern, BASE.with_(implementation=replace(impl, paths=())), [8.0], cube)[0])


@pytest.mark.packet
def test_the_mirrored_collectives_setup_is_paid_in_the_packet_engine():
    simulate_packet = _packet_engine()

    topo = parse("torus:4")
    impl = Implementation("lib", paths=(("swing", (("mirror_overhead", 30e-6),)),))
    params = BASE.with_(per_hop_latency=0.0, packet_header=2)
    for ports, extra in ((1, 0.0), (2, 30e-6)):
        pattern = build("swing", topo, "allreduce", variant="bandwidth", ports=ports)
        bare = simulate_packet(pattern, topo, 2**16, params).time_s
        with_path = simulate_packet(pattern, topo, 2**16, params.with_(implementation=impl)).time_s
        assert with_path - bare == pytest.approx(extra, abs=1e-12)


def test_parameter_files_carry_code_paths_and_refuse_bad_ones(tmp_path):
    path = tmp_path / "net.json"
    doc = {"implementations": {"lib": {"paths": {"*:bandwidth": {"port_overhead": 5e-5}}}}}
    path.write_text(json.dumps(doc))
    impl = network_params(str(path)).use("lib").implementation
    assert impl.paths == (("*:bandwidth", (("port_overhead", 5e-5),)),) and not impl.neutral
    assert impl.to_dict()["paths"] == {"*:bandwidth": {"port_overhead": 5e-5}}
    # an alias becomes the name a schedule records
    path.write_text(json.dumps({"implementations": {"lib": {"paths": {"rd:bandwidth": {}}}}}))
    assert network_params(str(path)).use("lib").implementation.paths == (("recursive-doubling:bandwidth", ()),)
    for paths, match in [({"*": {}}, r"path '\*'; accepted: ALGORITHM, ALGORITHM:VARIANT or \*:VARIANT"),
                         ({"swing:": {}}, "path 'swing:'"),
                         ({"swing": {"gamma": 1e-9}}, "unknown term 'gamma'"),
                         ({"5": {}}, "path '5': unknown algorithm '5'; accepted: bfb, "),
                         ({"swing:fast": {}}, "unknown variant 'fast' of swing; accepted: bandwidth, latency"),
                         ({"swing": {"call_overhead": -1.0}}, "call_overhead"),
                         ([1], "paths must be an object")]:
        path.write_text(json.dumps({"implementations": {"lib": {"paths": paths}}}))
        with pytest.raises(DirectcollError, match=match):
            network_params(str(path))
