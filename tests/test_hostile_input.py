"""Hostile input by class: numbers that overflow or leave their physical range, XML encodings, special files,
sizes read from files. Each class has a property test over its one door (the number parsers, the bounded readers)
and a reproducer through the command line: one line, exit 2, under a 1 GiB address-space limit (the wall time
of each is printed among the measured times, not asserted).
"""

from __future__ import annotations

import json
import math
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from directcoll.errors import DirectcollError, SpecError
from directcoll.inputs import check_xml_encoding, read_bytes, regular_file_size
from directcoll.topology.linktable import bandwidth_value, latency_value
from directcoll.units import (
    MAX_BANDWIDTH,
    MAX_SIZE,
    MAX_TIME,
    MAX_TIME_PER_BYTE,
    MIN_BANDWIDTH,
    check_quantity,
    parse_bandwidth,
    parse_duration,
    parse_size,
    parse_sizes,
)

SRC = Path(__file__).resolve().parents[1] / "src"

# -- one number parser: any text gives a value in its range or the project's error --------------------------
MANTISSAS = st.sampled_from(["0", "1", "2.5", ".5", "1e400", "1e-400", "1e308", "9" * 400, "1e-320", "-1", "nan",
                             "inf", "-0", "1e+300", "4e-324", "0x10", "1_000", "１"])
UNITS = st.sampled_from(["", "s", "ms", "us", "µs", "ns", "ps", "/B", "ns/B", "Gbps", "Tb/s", "GB/s", "GiB/s",
                         "bps", "B", "KiB", "PiB", "Ebps", " ", "x"])
NUMBERISH = st.one_of(st.text(max_size=30), st.builds(lambda m, u: m + u, MANTISSAS, UNITS),
                      st.floats(allow_nan=True, allow_infinity=True), st.integers(min_value=-2**80, max_value=2**80))


def _in_range_or_refused(function, value, low, high):
    try:
        out = function(value)
    except DirectcollError:
        return
    assert isinstance(out, int | float) and not isinstance(out, bool)
    assert math.isfinite(out) and low <= out <= high, (value, out)


@settings(max_examples=300, deadline=None)
@given(NUMBERISH)
def test_every_number_parser_gives_a_value_in_range_or_its_error(text):
    _in_range_or_refused(parse_bandwidth, text, MIN_BANDWIDTH, MAX_BANDWIDTH)
    _in_range_or_refused(parse_duration, text, 0.0, MAX_TIME)
    _in_range_or_refused(lambda t: parse_duration(t, per="B"), text, 0.0, MAX_TIME_PER_BYTE)
    _in_range_or_refused(parse_size, text, 0, MAX_SIZE)
    _in_range_or_refused(lambda t: bandwidth_value(t, "x"), text, MIN_BANDWIDTH, MAX_BANDWIDTH)
    _in_range_or_refused(lambda t: latency_value(t, "x"), text, 0.0, MAX_TIME)
    for kind in ("time", "time per byte", "bandwidth"):
        _in_range_or_refused(lambda t, k=kind: check_quantity(t, k, "field"), text, 0.0, MAX_BANDWIDTH)
    try:
        sizes = parse_sizes(text)
    except DirectcollError:
        return
    assert all(isinstance(s, int) and 0 < s <= MAX_SIZE for s in sizes)


@pytest.mark.parametrize("spec, field", [
    ("links(dbt:16,bandwidth=1e400Gbps)", "bandwidth"), ("links(dbt:16,bandwidth=1e400)", "bandwidth"),
    ("links(dbt:16,bandwidth=1e-300Gbps)", "bandwidth"), ("links(mesh:3x2x2,latency=1e300s)", "latency"),
    ("links(mesh:3x2x2,latency=1e400ns)", "latency"), ("links(mesh:3x2x2,latency=nan)", "latency"),
])
def test_overflowing_numbers_in_a_spec_are_refused_naming_the_field(spec, field):
    from directcoll.topology import parse

    with pytest.raises(SpecError, match=f"{field}.*(out of range|accepted: a (rate|time) from)"):
        parse(spec)


def test_network_parameters_refuse_values_outside_their_physical_range():
    from directcoll.simulate.params import NetworkParams

    for field, value in [("alpha", 1e300), ("alpha", math.nan), ("gamma", math.inf), ("link_bandwidth", 1e-300),
                         ("host_injection", 1e300), ("per_hop_latency", -1e-9)]:
        with pytest.raises(DirectcollError, match=f"network parameter {field} = .* is out of range; accepted"):
            NetworkParams(**{field: value})


# -- files: regular only, budgeted, XML encodings handled or refused -------------------------------------------
def test_special_files_are_refused_before_reading(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for path, kind in [("/dev/zero", "a device"), (fifo, "a pipe"), (tmp_path, "a folder")]:
        with pytest.raises(DirectcollError, match=f"is {kind}, not a regular file"):
            regular_file_size(path, str(path))
    (tmp_path / "small").write_bytes(b"12345")
    assert read_bytes(tmp_path / "small", "small") == b"12345"


GRAPHML = ('<?xml version="1.0" encoding="{}"?>\n<graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
           '<graph edgedefault="undirected"><node id="a"/><node id="b"/><edge source="a" target="b"/></graph>'
           "</graphml>\n")


@pytest.mark.parametrize("encoding, accepted", [
    ("utf-8", True), ("UTF-8", True), ("us-ascii", True), ("iso-8859-1", True), ("cp1252", True),
    ("utf-16", True), ("utf-7", False), ("utf-32", False), ("bogus", False), ("idna", False), ("", False),
])
def test_graphml_encodings_are_read_or_refused_in_one_line(tmp_path, encoding, accepted):
    from directcoll.topology import parse

    text = GRAPHML.format(encoding)
    path = tmp_path / "net.graphml"
    path.write_bytes(text.encode("utf-16" if encoding == "utf-16" else "utf-8"))
    if accepted:
        assert parse(f"file:{path}").num_compute == 2
    else:
        with pytest.raises(SpecError, match=f"declares encoding '{encoding}'.*; accepted: UTF-8"):
            parse(f"file:{path}")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=40))
def test_any_declared_encoding_is_accepted_or_refused_as_our_error(name):
    head = f'<?xml version="1.0" encoding="{name}"?><a/>'.encode("utf-8", "replace")
    try:
        check_xml_encoding(head, "x.xml")
    except DirectcollError:
        pass


def test_xml_entities_are_refused_by_the_hardened_parser(tmp_path):
    from directcoll.export import import_msccl

    bomb = '<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x "xxxxxxxx"><!ENTITY y "&x;&x;&x;">]><algo name="&y;"/>'
    with pytest.raises(DirectcollError, match="document type declaration"):
        import_msccl(bomb)
    path = tmp_path / "net.graphml"
    path.write_text(GRAPHML.format("utf-8").replace("<graphml", '<!DOCTYPE g [<!ENTITY x SYSTEM "file:///etc/'
                                                                  'passwd">]><graphml'))
    from directcoll.topology import parse

    with pytest.raises(SpecError, match="entity declarations are not accepted"):
        parse(f"file:{path}")


# -- the command line: a reproducer per class ------------------------------------------------------------------
def _limits():
    resource.setrlimit(resource.RLIMIT_AS, (2**30, 2**30))


def _cli(tmp_path, *argv):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    env.pop("DIRECTCOLL_MEMORY_BUDGET", None)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "directcoll", *map(str, argv)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=tmp_path, preexec_fn=_limits)  # the timeout only stops a hang
    return done, time.perf_counter() - t0


def _schedule(tmp_path, **fields) -> Path:
    from directcoll.registry import build
    from directcoll.schedule import io as sio

    doc = sio.to_dict(build("ring", "ring:4", "allreduce"))
    doc.update(fields)
    path = tmp_path / "s.json"
    path.write_text(json.dumps(doc))
    return path


CASES = {
    "overflowing bandwidth": lambda tmp: ["topology", "describe", "links(dbt:16,bandwidth=1e400)"],
    "overflowing latency": lambda tmp: ["topology", "describe", "links(mesh:3x2x2,latency=1e300s)"],
    "overflowing --alpha": lambda tmp: ["compare", "ring:8", "--alpha", "1e400s"],
    "utf-7 graphml": lambda tmp: ["topology", "describe", f"file:{_graphml(tmp, 'utf-7')}"],
    "utf-32 graphml": lambda tmp: ["topology", "describe", f"file:{_graphml(tmp, 'utf-32')}"],
    "unknown encoding": lambda tmp: ["topology", "describe", f"file:{_graphml(tmp, 'bogus')}"],
    "idna graphml": lambda tmp: ["topology", "describe", f"file:{_graphml(tmp, 'idna')}"],
    "corrupted npz": lambda tmp: ["cost", _corrupted_npz(tmp)],
    "huge nscratch, verify": lambda tmp: ["verify", _schedule(tmp, nscratch=10**12)],
    "nscratch 10^7, verify": lambda tmp: ["verify", _schedule(tmp, nscratch=10**7)],
    "nscratch 10^7, export": lambda tmp: ["export", _schedule(tmp, nscratch=10**7), "-o", "x.xml",
                                          "--memory-budget", "256MiB"],
    "degree 99999": lambda tmp: ["find-topology", "--nodes", "8", "--degree", "99999"],
    "import /dev/zero": lambda tmp: ["import", "/dev/zero", "-o", "o.npz"],
    "verify /dev/zero": lambda tmp: ["verify", "/dev/zero"],
    "calibrate /dev/zero": lambda tmp: ["calibrate", "/dev/zero", "ring:4"],
}


def _graphml(tmp_path, encoding) -> Path:
    path = tmp_path / f"net-{encoding}.graphml"
    path.write_bytes(GRAPHML.format(encoding).encode("utf-8"))
    return path


def _corrupted_npz(tmp_path) -> Path:
    """A schedule whose deflate stream has a flipped byte (zlib: "invalid distance too far back" and kin)."""
    import zipfile

    from directcoll.registry import build
    from directcoll.schedule import io as sio

    good = sio.save(build("ring", "torus:4x4", "allreduce"), tmp_path / "good.npz")
    with zipfile.ZipFile(good) as zf:
        info = zf.getinfo("src.npy")
    data = bytearray(good.read_bytes())
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)  # the member's compressed bytes
    for k in range(8):
        data[start + 20 + k] ^= 0xFF
    path = tmp_path / "bad.npz"
    path.write_bytes(bytes(data))
    return path


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_hostile_input_gives_one_line_and_exit_2(tmp_path, case, timings):
    done, seconds = _cli(tmp_path, *CASES[case](tmp_path))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, (case, done.returncode, done.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("directcoll") and " error: " in lines[0], done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    timings(f"hostile input, {case}: one line, exit 2 (1 GiB limit)", seconds)
