"""Schedules you can see (docs/schedule.md, "Seeing a schedule"): ``directcoll show`` lists steps and transfers,
``directcoll draw`` draws steps on the network, and ``simulate``'s per-step table names its busiest link as u->v."""

import csv
import io
import json
import os
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest

from directcoll.cli.main import main
from directcoll.reports.draw import draw_steps
from directcoll.reports.layout import layout
from directcoll.reports.steps import link_label, route_text, step_overview, step_view, transfer_rows
from directcoll.schedule import COPY, ScheduleBuilder, load
from directcoll.topology import parse
from directcoll.topology.routing import link_between

CLI = [sys.executable, "-m", "directcoll.cli.main"]
MiB = 2**20


def _cli(args, cwd) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run(CLI + args, capture_output=True, text=True, timeout=300, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("show")
    paths = {"swing": tmp / "swing.json", "bfb": tmp / "bfb.json"}
    assert main(["schedule", "swing", "torus:4x4", "-o", str(paths["swing"])]) == 0
    assert main(["schedule", "bfb", "circulant:16:1,5", "-o", str(paths["bfb"])]) == 0
    return paths


def test_show_step_json_is_one_document_matching_the_schedule(files, tmp_path):
    out = _cli(["show", str(files["swing"]), "--step", "2", "--size", "4MiB", "--json"], tmp_path)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)  # the whole of standard output
    s = load(files["swing"])
    a, b = s.step_bounds[2], s.step_bounds[3]
    rows = doc["transfers"]
    assert doc["step"] == 2 and doc["topology"] == "torus:4x4" and doc["size"] == 4 * MiB
    assert len(rows) == b - a == 64
    assert [r["rank"] for r in rows] == s.src[a:b].tolist()
    assert [r["peer"] for r in rows] == s.dst[a:b].tolist()
    assert [r["bytes"] for r in rows] == pytest.approx((s.transfer_size[a:b] * 4 * MiB).tolist())
    assert {r["op"] for r in rows} == {"reduce"}
    assert all(r["pieces"] and r["route"].count("->") == 1 for r in rows)  # Swing on 4x4: every peer is a neighbour
    assert doc["bytes_busiest_link"] == pytest.approx(max(r["bytes"] for r in rows))


def test_show_summary_json_and_csv(files, tmp_path):
    doc = json.loads(_cli(["show", str(files["bfb"]), "--json"], tmp_path).stdout)
    assert doc["num_steps"] == len(doc["steps"]) == 8 and doc["size"] == MiB  # the default size
    assert all(r["transfers"] == 64 and r["hops_max"] == 1 for r in doc["steps"])
    out = _cli(["show", str(files["bfb"]), "--step", "0", "--csv"], tmp_path)
    rows = list(csv.reader(io.StringIO(out.stdout)))
    assert rows[0] == ["step", "index", "rank", "peer", "op", "bytes", "hops", "pieces", "route"]
    assert len(rows) == 65 and all(len(r) == 9 for r in rows)


def test_show_table(files, capsys):
    assert main(["show", str(files["swing"])]) == 0
    out = capsys.readouterr().out
    assert "busiest link" in out and "(0,0)->(1,0)" in out and len(out.splitlines()) == 2 + 8
    assert main(["show", str(files["swing"]), "--step", "0"]) == 0
    assert "(0,0)->(0,1)" in capsys.readouterr().out


@pytest.mark.parametrize("args, words", [
    (["show", "{swing}", "--step", "8"], "out of range"),
    (["show", "{swing}", "--topology", "torus:3x3"], "16 ranks but torus:3x3 has 9"),
    (["draw", "{swing}", "-o", "x.png", "--steps", "0,9"], "out of range"),
    (["draw", "{swing}", "-o", "x.png", "--topology", "torus:4x8"], "16 ranks"),
    (["show", "{swing}", "--json", "--csv"], "give one of them"),
])
def test_refusals_are_one_line_exit_2(files, tmp_path, args, words):
    out = _cli([a.format(swing=files["swing"]) for a in args], tmp_path)
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and words in out.stderr


def test_draw_refuses_too_many_nodes(tmp_path, capsys):
    path = tmp_path / "big.json"
    assert main(["schedule", "ring", "torus:17x17", "-o", str(path)]) == 0
    capsys.readouterr()
    assert main(["draw", str(path), "-o", str(tmp_path / "big.png"), "--steps", "0"]) == 2
    assert "at most 256" in capsys.readouterr().err
    assert not (tmp_path / "big.png").exists()


def test_draw_writes_png_and_svg(files, tmp_path, capsys):
    png, svg = tmp_path / "steps.png", tmp_path / "steps.svg"
    assert main(["draw", str(files["swing"]), "-o", str(png), "--steps", "0-2"]) == 0
    assert "3 of 8 steps" in capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["draw", str(files["bfb"]), "-o", str(svg), "--steps", "0", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "svg" and doc["steps"] == [0] and doc["file"] == str(svg)
    assert b"<svg" in svg.read_bytes()[:2000]


@pytest.mark.parametrize("spec, style", [("ring:8", "line"), ("hammingmesh:2x2:2x2", "grid"),
                                         ("kautz:2:3", "circle")])
def test_draw_other_layouts(spec, style, tmp_path):
    from directcoll.registry import build

    t = parse(spec)
    s = build("bfb" if spec.startswith("kautz") else "recursive-doubling", t, "allreduce")
    assert layout(t).style == style
    path = draw_steps(s, t, tmp_path / "x.pdf", steps=[0, s.num_steps - 1])
    assert path.read_bytes()[:4] == b"%PDF"


def test_wrap_around_and_switch_stubs():
    lay = layout(parse("torus:4x4"))
    assert lay.wrap[0, 3].tolist() == [-1.0, 0.0] and not lay.wrap[0, 1].any()  # (0,0) -> (0,3) wraps
    hm = parse("hammingmesh:2x2:2x2")
    lay = layout(hm)
    assert not lay.shown[hm.num_compute:].any() and len(lay.stub) == 2 * 2 * 16  # 2 ports per node, both ways


def test_routes_list_minimal_paths_or_count_them():
    t = parse("torus:8x8")
    b = ScheduleBuilder("allreduce", 64, 1)
    b.add(0, [0, 0, 0], [2, 9, 27], COPY, 0, 1)  # 2 hops straight, 1 + 1 hops, 3 + 3 hops
    s = b.build()
    view = step_view(s, t, 0, 1024)
    assert route_text(view, 0, t) == "(0,0)->(0,1)->(0,2)"
    assert route_text(view, 1, t) in ("(0,0)->(0,1)->(1,1) (50%) | (0,0)->(1,0)->(1,1) (50%)",
                                      "(0,0)->(1,0)->(1,1) (50%) | (0,0)->(0,1)->(1,1) (50%)")
    assert route_text(view, 2, t) == "adaptive over 20 minimal paths (6 hops)"
    assert view.hops.tolist() == pytest.approx([2.0, 2.0, 6.0])


def test_explicit_routes_are_followed():
    t = parse("ring:4")
    b = ScheduleBuilder("allreduce", 4, 1)
    b.add(0, [0, 1], [2, 2], COPY, 0, 1)
    s = b.build()
    detour = link_between(t, [0, 3], [3, 2])  # 0 -> 3 -> 2: one of the two minimal paths, chosen
    s = replace(s, route_offsets=np.array([0, 2, 2]), route_links=detour)  # transfer 1: route it yourself
    view = step_view(s, t, 0, 100)
    rows = transfer_rows(s, t, view)
    assert rows[0]["route"] == "0->3->2" and rows[1]["route"] == "1->2"
    assert view.loads[detour].tolist() == [100.0, 100.0]


def test_overview_matches_the_step_model(files):
    from directcoll.simulate import simulate

    s, t = load(files["bfb"]), parse("circulant:16:1,5")
    rows = step_overview(s, t, MiB)
    model = simulate(s, t).breakdown(MiB)
    assert [r["bytes_busiest_link"] for r in rows] == pytest.approx([m["bytes_max_link"] for m in model])


def test_simulate_table_names_the_busiest_link(files, capsys):
    assert main(["simulate", str(files["swing"]), "--size", "1MiB"]) == 0
    out = capsys.readouterr().out
    assert "max link (0,0)->(1,0):" in out
    assert main(["simulate", str(files["swing"]), "--size", "1MiB", "--json"]) == 0
    steps = json.loads(capsys.readouterr().out)["steps"]
    t = parse("torus:4x4")
    assert all(r["max_link_name"] == link_label(t, r["max_link"]) for r in steps)  # the id stays, the name is added


def test_dense_direct_connect_graphs_are_drawn_as_link_load_matrices(tmp_path):
    from directcoll.reports.draw import dense
    from directcoll.reports.layout import layout

    t = parse("circulant:16:3,4")
    assert dense(t, layout(t)) and not dense(parse("ring:8"), layout(parse("ring:8")))
    path = tmp_path / "s.json"
    assert main(["schedule", "bfb", "circulant:16:3,4", "-o", str(path)]) == 0
    for view in ("auto", "matrix", "network"):
        out = tmp_path / f"{view}.png"
        assert main(["draw", str(path), "-o", str(out), "--steps", "0,1", "--view", view]) == 0
        assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the matrix view is what auto chose here: the same picture
    assert (tmp_path / "auto.png").read_bytes() == (tmp_path / "matrix.png").read_bytes()
    assert (tmp_path / "auto.png").read_bytes() != (tmp_path / "network.png").read_bytes()
