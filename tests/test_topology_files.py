"""Networks from files and libraries (docs/topology.md, "Your own network"): ``file:net.graphml`` / ``.edges`` /
``.json`` wherever a spec is, ``Topology.from_networkx`` / ``to_networkx``, ``directcoll topology export``, per-link
values in the models, and one clear line for every bad file."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from directcoll.cli.main import main
from directcoll.errors import ResourceError, SpecError, TopologyError, UnsupportedShapeError
from directcoll.resources import memory_budget_override
from directcoll.topology import Topology, parse
from directcoll.topology.files import read_network, write_network
from directcoll.topology.grammar import parse_tree

nx = pytest.importorskip("networkx")

CLI = [sys.executable, "-m", "directcoll.cli.main"]
ARRAYS = ("link_src", "link_dst", "link_bandwidth", "link_latency")


def _cli(args, cwd) -> subprocess.CompletedProcess:
    return subprocess.run(CLI + args, capture_output=True, text=True, timeout=300, cwd=cwd,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _same(a: Topology, b: Topology) -> None:
    assert (a.num_compute, a.num_nodes, a.num_links) == (b.num_compute, b.num_nodes, b.num_links)
    for name in ARRAYS:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


# -- compare on a GraphML file written by networkx -------------------------------------------------------------
def _ring_graphml(path, slow_edge=None) -> None:
    g = nx.cycle_graph(8)
    for u, v in g.edges:
        g.edges[u, v]["bandwidth"] = 100e9  # bit/s
    if slow_edge is not None:
        g.edges[slow_edge]["bandwidth"] = 50e9
    nx.write_graphml(g, path)


def test_compare_reads_a_networkx_graphml_and_its_per_link_bandwidth(tmp_path):
    _ring_graphml(tmp_path / "net.graphml")
    _ring_graphml(tmp_path / "slow.graphml", slow_edge=(3, 4))
    times = {}
    for name in ("net", "slow"):
        out = _cli(["compare", f"file:{name}.graphml", "--json", "--sizes", "1MiB", "--algorithms", "ring"], tmp_path)
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        assert doc["topology"] == f"file:{tmp_path / name}.graphml"
        assert any("bandwidth given on every link" in note for note in doc["notes"])
        assert doc["params"]["link_bandwidth"] is None  # the preset's 400 Gb/s does not override the file's values
        times[name] = {(r["variant"]): r["time_s"] for r in doc["results"]}
    # 100 Gb/s links: a 1 MiB ring allreduce moves 2 (N-1)/N of it over each link; halving one link slows it
    assert times["slow"]["bidirectional"] > 1.5 * times["net"]["bidirectional"]


def test_per_link_values_reach_the_flow_model_and_overrides_still_win(tmp_path):
    from directcoll.registry import build_pattern
    from directcoll.simulate import resolve_network, simulate

    _ring_graphml(tmp_path / "net.graphml")
    topology, params, notes = resolve_network(f"file:{tmp_path / 'net.graphml'}")
    assert params.link_bandwidth is None and params.link_latency == 1e-7  # the file gives no latency
    assert set(topology.link_bandwidth.tolist()) == {100e9 / 8}
    pattern = build_pattern("ring", topology)
    t100 = float(simulate(pattern, topology, params).time(1 << 20))
    _, fast, _ = resolve_network(f"file:{tmp_path / 'net.graphml'}", link_bandwidth=400e9 / 8)
    assert fast.link_bandwidth == 50e9
    assert float(simulate(pattern, topology, fast).time(1 << 20)) < t100 / 2


# -- export -> file: round trip --------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["torus:4x4", "hammingmesh:2x2:2x2", "genkautz:2:16"])
@pytest.mark.parametrize("fmt", ["graphml", "edges", "json"])
def test_export_then_file_gives_the_same_topology(tmp_path, capsys, spec, fmt):
    path = tmp_path / f"net.{fmt}"
    assert main(["topology", "export", spec, "-o", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["format"] == fmt and info["links"] == parse(spec).num_links
    back = parse(f"file:{path}")
    _same(parse(spec), back)
    assert back.spec == f"file:{path}" and back.kind == "file" and back.shape is None
    _same(back, parse(back.spec))  # the spec rebuilds it


def test_export_subprocess_with_format_option_and_odd_values(tmp_path):
    t = parse("ring:5", link_bandwidth=12.345e9, link_latency=3.3e-7)
    write_network(t, tmp_path / "ring.json")
    out = _cli(["topology", "export", "file:ring.json", "-o", "ring.dat", "--format", "edges"], tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("wrote ring.dat: file:")
    _same(t, read_network(tmp_path / "ring.dat", fmt="edges"))


def test_networkx_reads_what_export_writes(tmp_path):
    write_network(parse("hammingmesh:2x2:2x2"), tmp_path / "hm.graphml")
    g = nx.read_graphml(tmp_path / "hm.graphml")
    assert g.is_directed() and g.number_of_nodes() == 24 and g.number_of_edges() == 96
    assert sum(1 for _, d in g.nodes(data=True) if d.get("switch")) == 8
    assert {d["bandwidth"] for *_, d in g.edges(data=True)} == {400e9}


# -- from_networkx / to_networkx -------------------------------------------------------------------------------
def test_to_networkx_and_back_keeps_links_and_order():
    for spec in ("torus:2x4", "hammingmesh:2x2:2x2", "genkautz:2:16"):
        t = parse(spec)
        g = t.to_networkx()
        assert g.number_of_edges() == t.num_links and g.graph["spec"] == spec
        _same(t, Topology.from_networkx(g))


def test_from_networkx_names_directions_parallel_edges_and_switches():
    g = nx.MultiGraph(name="mine")
    g.add_edge("b", "a", bandwidth="100Gbps", latency="1us")
    g.add_edge("a", "b", bandwidth=200e9)  # parallel cable
    g.add_edge("b", "sw", latency=5e-7)
    g.add_edge("a", "sw")
    g.nodes["sw"]["switch"] = True
    t = Topology.from_networkx(g)
    assert t.spec == "networkx:mine" and t.kind == "networkx"
    assert (t.num_compute, t.num_nodes, t.num_links) == (2, 3, 8)  # b=0, a=1 (first seen), then the switch 2
    assert t.link_src.tolist()[:4] == [0, 1, 0, 1] and t.link_dst.tolist()[:4] == [1, 0, 1, 0]
    assert t.link_bandwidth.tolist()[:4] == [12.5e9, 12.5e9, 25e9, 25e9]
    assert t.link_latency.tolist()[4:6] == [5e-7, 5e-7] and t.link_latency[6] == 1e-7  # default
    assert "(default) on the 4 of 8 links without one" in t.params["description"]
    d = nx.DiGraph([(2, 1), (1, 0), (0, 2)])  # integer names: numeric order, one link per directed edge
    t = Topology.from_networkx(d)
    pairs = sorted(zip(t.link_src.tolist(), t.link_dst.tolist(), strict=True))
    assert t.num_links == 3 and pairs == [(0, 2), (1, 0), (2, 1)]


def test_from_networkx_refuses_clearly():
    with pytest.raises(SpecError, match=r"edge \(0, 0\): a self-loop"):
        Topology.from_networkx(nx.Graph([(0, 1), (0, 0)]))
    with pytest.raises(SpecError, match="bandwidth 'fast' is not a positive rate"):
        Topology.from_networkx(nx.Graph([(0, 1, {"bandwidth": "fast"})]))
    with pytest.raises(TopologyError, match="not strongly connected"):
        Topology.from_networkx(nx.Graph([(0, 1), (2, 3)]))
    with pytest.raises(TopologyError, match="needs a networkx graph"):
        Topology.from_networkx([(0, 1)])


# -- edge lists and JSON ---------------------------------------------------------------------------------------
def test_edge_list_with_units_header_directives_and_comments(tmp_path):
    path = tmp_path / "net.edges"
    path.write_text("# a 3-node line plus a switch\n"
                    "latency: 250ns   # default for links without one\n"
                    "switches: hub\n"
                    "dst, src, bandwidth\n"
                    "b, a, 100Gbps\n"
                    "b c 12.5GB/s\n"
                    "c a 1e11\n"
                    "hub a -\n"
                    "a b {'bandwidth': 8e9, 'latency': 2e-6}\n")
    t = parse(f"file:{path}")
    assert (t.num_compute, t.num_nodes, t.num_links) == (3, 4, 10)  # a=0, b=1, c=2 (first seen), hub=3
    assert t.link_src.tolist() == [0, 1, 2, 1, 0, 2, 0, 3, 0, 1]
    assert t.link_bandwidth.tolist()[:6] == [12.5e9] * 6
    assert t.link_bandwidth[6] == 50e9 and t.link_bandwidth[8] == 1e9  # default 400 Gb/s; 8e9 bit/s
    assert t.link_latency.tolist()[:8] == [2.5e-7] * 8 and t.link_latency[8] == 2e-6
    assert t.params["per_link"] == ("bandwidth", "latency") and t.params["directed"] is False


def test_graphml_by_hand_defaults_directions_and_foreign_data(tmp_path):
    (tmp_path / "h.graphml").write_text(
        '<?xml version="1.0"?>\n<graphml xmlns="http://graphml.graphdrawing.org/xmlns" xmlns:y="http://www.yworks.com">\n'
        '<key id="bw" for="edge" attr.name="Bandwidth" attr.type="string"><default>10Gbps</default></key>\n'
        '<key id="sw" for="node" attr.name="switch" attr.type="boolean"/>\n'
        '<key id="g" for="node" yfiles.type="nodegraphics"/>\n'
        '<graph id="G" edgedefault="directed">\n'
        '<edge source="x" target="y" directed="false"><data key="bw">20Gbps</data></edge>\n'
        '<edge source="y" target="s"/><edge source="s" target="x"/>\n'
        '<node id="x"><data key="g"><y:ShapeNode><y:Label>x</y:Label></y:ShapeNode></data></node>\n'
        '<node id="s"><data key="sw">true</data></node>\n'
        '</graph></graphml>\n')
    t = parse(f"file:{tmp_path / 'h.graphml'}")
    assert (t.num_compute, t.num_nodes, t.link_src.tolist(), t.link_dst.tolist()) == (2, 3, [0, 1, 1, 2], [1, 0, 2, 0])
    assert t.link_bandwidth.tolist() == [2.5e9, 2.5e9, 1.25e9, 1.25e9]


def test_edge_list_integer_names_are_numbered_by_value(tmp_path):
    (tmp_path / "n.txt").write_text("directed: yes\n10 2\n2 7\n7 10\n")
    t = parse(f"file:{tmp_path / 'n.txt'}")
    assert t.link_src.tolist() == [2, 0, 1] and t.link_dst.tolist() == [0, 1, 2]


def test_json_schema_and_networkx_node_link_data(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps({
        "directed": False, "bandwidth": "200Gbps", "nodes": ["x", "y", {"id": "s", "switch": True}],
        "links": [{"src": "x", "dst": "y", "latency": "1us"}, {"src": "x", "dst": "s"}, {"src": "y", "dst": "s",
                                                                                        "bandwidth": 1e9}]}))
    t = parse(f"file:{tmp_path / 'a.json'}")
    assert (t.num_compute, t.num_nodes, t.num_links) == (2, 3, 6)
    assert t.link_bandwidth.tolist() == [25e9] * 4 + [1.25e8] * 2
    g = nx.MultiDiGraph()
    g.add_edge("p", "q", bandwidth=4e11)
    g.add_edge("q", "p", bandwidth=4e11)
    try:
        data = nx.node_link_data(g, edges="edges")  # networkx >= 3.4
    except TypeError:
        data = nx.node_link_data(g)  # "links"
    (tmp_path / "nl.json").write_text(json.dumps(data))
    t = parse(f"file:{tmp_path / 'nl.json'}")
    assert t.num_links == 2 and t.link_bandwidth.tolist() == [50e9, 50e9]


def test_the_spec_keeps_the_path_and_rebuilds_from_elsewhere(tmp_path, monkeypatch):
    folder = tmp_path / "My Nets"
    folder.mkdir()
    write_network(parse("ring:4"), folder / "Ring.EDGES")
    monkeypatch.chdir(folder)
    assert str(parse_tree("file:Ring.EDGES")) == "file:Ring.EDGES"
    t = parse(" file:Ring.EDGES ")
    assert t.spec == f"file:{folder / 'Ring.EDGES'}"
    monkeypatch.chdir(tmp_path)
    _same(t, parse(t.spec))


# -- algorithms on a file topology -----------------------------------------------------------------------------
def test_graph_algorithms_work_and_grid_algorithms_refuse(tmp_path):
    from directcoll.registry import build
    from directcoll.synthesis.mcf.link import alltoall_mcf
    from directcoll.verify import verify

    g = nx.random_regular_graph(3, 8, seed=2)
    nx.write_graphml(g, tmp_path / "rr.graphml")
    t = parse(f"file:{tmp_path / 'rr.graphml'}")
    for name, coll in (("bfb", "allreduce"), ("ring", "allreduce"), ("direct", "alltoall")):
        assert verify(build(name, t, coll)).ok, name
    assert alltoall_mcf(t).value > 0
    with pytest.raises(UnsupportedShapeError, match="no grid shape"):
        build("bucket", t)


# -- refusals --------------------------------------------------------------------------------------------------
BAD = {
    "missing.graphml": (None, "no such file"),
    "net.dat": ("a b\n", "unknown suffix '.dat'"),
    "broken.graphml": ('<graphml><graph><node id="a"/>', "line 1: not well-formed XML"),
    "root.graphml": ("<html/>", "the root element is <html>"),
    "entity.graphml": ('<!DOCTYPE g [<!ENTITY x "y">]><graphml/>', "entity declarations are not accepted"),
    "unit.edges": ("a b 100Gbps\nb a 10 furlongs\n", "line 2: latency 'furlongs' is not a time"),
    "badbw.edges": ("a b 100Gxps\n", "line 1: bandwidth '100Gxps' is not a positive rate; accepted: a rate"),
    "zero.json": ('{"links": [{"src": 0, "dst": 1, "bandwidth": 0}]}', r"links\[0\]: bandwidth 0 is not a positive"),
    "negative.edges": ("a b 1Gbps -1ns\n", "line 1: latency '-1ns' is not a time >= 0"),
    "loop.edges": ("a b\nb b\n", "line 2: a self-loop at node 'b'"),
    "split.edges": ("a b\nc d\n", "not strongly connected"),
    "empty.edges": ("# nothing here\n", "the network has no nodes"),
    "nolinks.json": ('{"nodes": ["a", "b"], "links": []}', "the network has no links"),
    "list.json": ("[1, 2]", "the JSON document is a list"),
    "notjson.json": ('{"links": [', "line 1: not valid JSON"),
    "late.edges": ("a b\ndirected: true\n", "line 2: 'directed:' after the first edge"),
    "twice.json": ('{"nodes": ["a", "a"], "links": [{"src": "a", "dst": "b"}]}', r"nodes\[1\]: node 'a' is declared"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_files_are_refused_in_one_line(tmp_path, capsys, name):
    text, message = BAD[name]
    if text is not None:
        (tmp_path / name).write_text(text)
    assert main(["topology", "describe", f"file:{tmp_path / name}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("directcoll: error: ") and len(err.strip().splitlines()) == 1, err
    assert name in err and re.search(message, err), err


@pytest.mark.parametrize("name", ["broken.graphml", "unit.edges", "split.edges", "missing.graphml"])
def test_bad_files_exit_2_with_one_line_in_a_subprocess(tmp_path, name):
    text, _ = BAD[name]
    if text is not None:
        (tmp_path / name).write_text(text)
    out = _cli(["compare", f"file:{name}", "--sizes", "1KiB"], tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert out.stderr.startswith("directcoll: error: file:") and "system preset" not in out.stderr


def test_file_inside_an_operator_is_refused():
    with pytest.raises(SpecError, match="a file:PATH spec stands alone"):
        parse("bidir(file:net.edges)")
    with pytest.raises(SpecError, match="no path after 'file:'"):
        parse("file:  ")


def test_a_large_file_is_refused_before_it_is_read(tmp_path):
    path = tmp_path / "big.edges"
    path.write_text("0 1\n1 0\n" * 5000)
    with memory_budget_override("64KiB"), pytest.raises(ResourceError, match="reading file:"):
        parse(f"file:{path}")
    assert parse(f"file:{path}").num_links == 20000  # parallel links
