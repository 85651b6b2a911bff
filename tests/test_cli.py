"""The command line: every command works, prints JSON for scripts, and fails clearly on bad input."""

import json

import numpy as np
import pytest

from directcoll.cli.main import build_parser, main
from directcoll.schedule import Schedule, load, save

COMMANDS = [[], ["topology"], ["topology", "describe"], ["schedule"], ["verify"], ["cost"], ["algorithms"],
            ["table2"]]


@pytest.mark.parametrize("cmd", COMMANDS)
def test_every_command_has_help(cmd, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*cmd, "--help"])
    assert exc.value.code == 0
    assert "usage: directcoll" in capsys.readouterr().out


def run_json(capsys, *argv):
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_topology_describe_json(capsys):
    code, d = run_json(capsys, "topology", "describe", "torus:4x6")
    assert code == 0
    assert d["nodes"] == 24 and d["degree_min"] == d["degree_max"] == 4
    assert d["diameter"] == 2 + 3 and d["shape"] == [4, 6] and d["bisection_links"] == 8


def test_schedule_verify_cost_round_trip(tmp_path, capsys):
    path = tmp_path / "s.json"
    code, info = run_json(capsys, "schedule", "swing", "torus:8x8", "--collective", "allreduce", "-o", str(path))
    assert code == 0 and info["steps"] == 12 and path.exists()
    code, v = run_json(capsys, "verify", str(path))
    assert code == 0 and v["ok"] is True and v["ranks"] == 64 and v["steps"] == 12 and v["failure"] is None
    code, c = run_json(capsys, "cost", str(path), "--size", "1MiB")
    assert code == 0
    for key in ("algorithm", "collective", "ranks", "steps", "bytes_per_rank", "latency_deficiency",
                "bandwidth_deficiency", "congestion_deficiency", "t_l_steps", "t_b_m_over_b", "time_s"):
        assert key in c, key
    assert c["algorithm"] == "swing" and c["time_s"] > 0 and c["size_bytes"] == 1 << 20


@pytest.mark.parametrize("algorithm, spec, extra", [
    ("recursive-doubling", "torus:4x4", []), ("rabenseifner", "torus:8x8x8", []),
    ("ring", "ring:13", ["--collective", "allgather"]), ("bucket", "torus:16x4", []),
    ("swing", "torus:7", ["--variant", "latency"]), ("swing", "torus:3x3x2", ["--ports", "2"]),
])
def test_other_algorithms_verify(tmp_path, capsys, algorithm, spec, extra):
    path = tmp_path / "s.npz"
    assert main(["schedule", algorithm, spec, *extra, "-o", str(path)]) == 0
    assert main(["verify", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("OK:")


def test_verify_exits_1_with_the_first_failure(tmp_path, capsys):
    good = tmp_path / "good.json"
    main(["schedule", "swing", "torus:4x4", "-o", str(good)])
    s = load(good)
    keep = np.ones(s.num_transfers, dtype=bool)
    keep[17] = False
    broken = Schedule(s.collective, s.nranks, s.nblocks, s.step[keep], s.src[keep], s.dst[keep], s.op[keep],
                      np.arange(keep.sum() + 1), s.piece_start[keep], s.piece_stop[keep], meta=s.meta)
    save(broken, tmp_path / "bad.json")
    capsys.readouterr()
    code, v = run_json(capsys, "verify", str(tmp_path / "bad.json"))
    assert code == 1 and v["ok"] is False
    assert {"step", "rank", "interval", "expected", "found", "reason"} <= set(v["failure"])
    assert main(["verify", str(tmp_path / "bad.json")]) == 1
    assert "FAILED" in capsys.readouterr().out


def test_cost_without_a_file_builds_the_default(capsys):
    code, c = run_json(capsys, "cost", "--size", "64MiB")
    assert code == 0 and c["topology"] == "torus:8x8" and c["algorithm"] == "swing"
    assert main(["cost", "--algorithm", "bucket", "--topology", "torus:4x4"]) == 0


def test_algorithms_json_lists_every_algorithm(capsys):
    code, entries = run_json(capsys, "algorithms")
    names = {e["name"] for e in entries}
    assert {"swing", "recursive-doubling", "rabenseifner", "mirrored-recursive-doubling", "ring", "bucket"} <= names
    for e in entries:
        assert set(e) >= {"name", "collectives", "variants", "topologies"}


@pytest.mark.parametrize("argv, message", [
    (["topology", "describe", "tor:8"], "unknown topology spec"),
    (["schedule", "nosuch", "torus:4x4", "-o", "x.json"], "unknown algorithm"),
    (["schedule", "ring", "torus:6x4", "--variant", "hamiltonian", "-o", "x.json"], "gcd"),
    (["schedule", "rabenseifner", "torus:6x4", "--collective", "reduce_scatter", "-o", "x.json"], "power of two"),
    (["verify", "does-not-exist.json"], "no such schedule file"),
    (["cost", "--size", "12 parsecs"], "cannot read size"),
])
def test_bad_input_exits_2_with_a_clear_message(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_garbage_schedule_file(tmp_path, capsys):
    path = tmp_path / "junk.json"
    path.write_text("{not json")
    assert main(["verify", str(path)]) == 2
    assert "not valid JSON" in capsys.readouterr().err


def test_parser_builds():
    assert build_parser().prog == "directcoll"


def test_export_and_import_msccl_round_trip(tmp_path, capsys):
    sched, xml, back = tmp_path / "s.json", tmp_path / "a.xml", tmp_path / "back.npz"
    assert main(["schedule", "ring", "torus:2x3", "--collective", "allgather", "-o", str(sched)]) == 0
    assert main(["export", str(sched), "--format", "msccl", "-o", str(xml)]) == 0
    text = xml.read_text()
    assert 'coll="allgather"' in text and "<gpu " in text and "<tb " in text
    assert main(["import", str(xml), "-o", str(back)]) == 0
    capsys.readouterr()
    code, v = run_json(capsys, "verify", str(back))
    assert code == 0 and v["ok"] and v["ranks"] == 6


def test_import_rejects_garbage(tmp_path, capsys):
    bad = tmp_path / "bad.xml"
    bad.write_text("<algo name='x'><gpu>")
    assert main(["import", str(bad), "-o", str(tmp_path / "x.json")]) == 2
    assert str(bad) in capsys.readouterr().err
