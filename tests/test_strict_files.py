"""Strict reading of schedule files (JSON, .npz) and MSCCL XML: every field is checked for its type
and range before use and before anything that grows with it is allocated; nothing is cast; every bad file ends
in one DirectcollError line. Regressions of the fuzz findings, hypothesis mutations, and the CLI in a
subprocess under an address-space limit."""

import copy
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from directcoll.errors import DirectcollError, ResourceError, ScheduleError, ScheduleFormatError
from directcoll.export import export_msccl, import_msccl, parse_msccl
from directcoll.export.msccl.format import INT_ATTRS, MscclFormatError, MscclLimitError
from directcoll.registry import build
from directcoll.resources import memory_budget_override
from directcoll.schedule import io as sio
from directcoll.schedule.ir import Schedule
from directcoll.verify import verify

SRC = Path(__file__).resolve().parents[1] / "src"
INT_COLUMNS = ("step", "src", "dst", "op", "piece_offsets", "piece_start", "piece_stop")


@pytest.fixture(scope="module")
def docs():
    schedules = [build("ring", "ring:4", "allreduce"), build("swing", "torus:4x4", "reduce_scatter"),
                 build("bfb", "circulant:8:1,3", "allgather"), build("direct", "ring:4", "alltoall")]
    return [sio.to_dict(s) for s in schedules]


@pytest.fixture(scope="module")
def xml(tmp_path_factory):
    path = tmp_path_factory.mktemp("xml") / "ring.xml"
    export_msccl(build("ring", "ring:4", "allreduce"), path)
    return path.read_text()


def _json(tmp_path, doc, name="s.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc, allow_nan=True))
    return path


def _npz(tmp_path, doc, name="s.npz", **replace):
    header = {k: v for k, v in doc.items() if k not in sio._ARRAYS + sio._OPTIONAL}
    arrays = {k: np.asarray(doc[k], np.int64) for k in sio._ARRAYS + sio._OPTIONAL if doc.get(k) is not None}
    arrays.update(replace)
    path = tmp_path / name
    np.savez(path, header=np.array(json.dumps(header)), **arrays)
    return path


# -- round trips ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_every_valid_schedule_reads_back_identically(tmp_path, docs, suffix):
    for i, doc in enumerate(docs):
        s = sio.from_dict(doc)
        back = sio.load(sio.save(s, tmp_path / f"s{i}{suffix}"))
        assert sio.to_dict(back) == doc
        assert verify(back).ok


def test_meta_may_hold_any_json_value(tmp_path):
    s = build("ring", "ring:4", "allreduce").with_meta(bound=float("inf"), note=None, sizes=[1, 2.5])
    for suffix in (".json", ".npz"):
        back = sio.load(sio.save(s, tmp_path / f"m{suffix}"))
        assert back.meta["bound"] == float("inf") and back.meta["sizes"] == [1, 2.5] and back.meta["note"] is None


def test_npz_with_narrower_integer_dtypes_is_read_exactly(tmp_path, docs):
    doc = docs[0]
    path = _npz(tmp_path, doc, src=np.asarray(doc["src"], np.uint8), op=np.asarray(doc["op"], np.int8))
    assert sio.to_dict(sio.load(path)) == doc


# -- fuzz findings as regressions -------------------------------------------------------------------------------

@pytest.mark.parametrize("column", INT_COLUMNS)
@pytest.mark.parametrize("delta", [0.5, 1e-9, 0.0])
def test_npz_float_columns_are_refused_naming_the_column(tmp_path, docs, column, delta):
    """184 fuzz cases: float columns (even integral ones) were cast and accepted."""
    doc = docs[1]
    path = _npz(tmp_path, doc, **{column: np.asarray(doc[column], np.float64) + delta})
    with pytest.raises(ScheduleFormatError, match=rf"{re.escape(str(path))}: .*'{column}'.*float64"):
        sio.load(path)


@pytest.mark.parametrize("dtype", [np.bool_, np.float32, "U8", np.complex64])
def test_npz_non_integer_dtypes_are_refused(tmp_path, docs, dtype):
    doc = docs[0]
    with pytest.raises(ScheduleFormatError, match="'dst'"):
        sio.load(_npz(tmp_path, doc, dst=np.asarray(doc["dst"]).astype(dtype)))


@pytest.mark.parametrize("shift", [256, -256, 512])
def test_op_plus_256_is_refused_not_narrowed(tmp_path, docs, shift):
    """Adding 256 to every op used to verify OK: op was cast to 8 bits before its range was checked."""
    doc = copy.deepcopy(docs[0])
    doc["op"] = [v + shift for v in doc["op"]]
    with pytest.raises(ScheduleFormatError, match=r"op\[0\] = -?\d+ is out of range; accepted: 0\.\.1"):
        sio.load(_json(tmp_path, doc))
    with pytest.raises(ScheduleFormatError, match="'op' holds"):
        sio.load(_npz(tmp_path, docs[0], op=np.asarray(doc["op"], np.int64)))
    with pytest.raises(ScheduleError, match="op must be 0"):  # the IR itself checks before narrowing
        Schedule(**{**sio.validate_dict(docs[0]), "op": np.asarray(doc["op"])})


def test_huge_nscratch_is_refused_on_loading_and_by_verify(tmp_path, docs):
    """"nscratch": 10**12 made verify allocate 7.28 TiB (MemoryError); 10**7 made the MSCCL export run for long:
    a scratch count read from a file is budgeted on loading, and each consumer budgets its own state."""
    with memory_budget_override("1GiB"):
        with pytest.raises(ResourceError, match=r"work buffer of 1,000,000,000,008 blocks \(nblocks \+ nscratch\)"):
            sio.load(_json(tmp_path, {**docs[0], "nscratch": 10**12}))
        s = sio.load(_json(tmp_path, {**docs[0], "nscratch": 10**8}))
        with pytest.raises(ResourceError, match="verify .* segments.* over the memory budget"):
            verify(s)
        with pytest.raises(MscclLimitError, match="chunk offsets up to 99,999,999"):  # before any per-chunk work
            export_msccl(s)
        s = sio.load(_json(tmp_path, {**docs[0], "nscratch": 30_000}))  # addressable, but the layout is budgeted
        with memory_budget_override("1MiB"), pytest.raises(ResourceError, match="MSCCL buffer layout"):
            export_msccl(s)


def test_huge_nblocks_is_refused_before_allocation(tmp_path, docs):
    doc = {k: v for k, v in docs[2].items() if k != "owner"}  # the default owner would be 2^40 int64
    doc["nblocks"] = 2**40
    with memory_budget_override("1GiB"), pytest.raises(ResourceError, match="work buffer"):
        sio.load(_json(tmp_path, doc))


def test_huge_step_numbers_do_not_allocate_or_loop(tmp_path, docs):
    doc = copy.deepcopy(docs[0])
    doc["step"] = [v + 2**24 for v in doc["step"]]  # sparse: steps 2^24.. are as valid as 0..
    s = sio.load(_json(tmp_path, doc))
    assert verify(s).ok
    with memory_budget_override("64MiB"), pytest.raises(ResourceError, match="steps"):
        sio.load(_json(tmp_path, doc))


@pytest.mark.parametrize(("field", "value", "message"), [
    ("version", True, "version True is not supported"),
    ("version", "2", "version '2' is not supported"),
    ("version", 2.0, "version 2.0 is not supported"),
    ("nranks", 4.0, "'nranks' is 4.0"),
    ("nranks", True, "'nranks' is True"),
    ("nranks", "4", "'nranks' is '4'"),
    ("nranks", 2**64, "'nranks' = 18446744073709551616 is out of range"),
    ("nranks", -1, "'nranks' = -1 is out of range"),
    ("nblocks", float("nan"), "'nblocks' is nan"),
    ("nblocks", float("inf"), "'nblocks' is inf"),
    ("denominator", None, "'denominator' is None"),
    ("nscratch", -1, "'nscratch' = -1 is out of range"),
    ("nscratch", 2**70, "'nscratch' = .* is out of range"),
    ("collective", "ALLREDUCE", "'collective' is 'ALLREDUCE'; accepted: allgather"),
    ("collective", "rs", "'collective' is 'rs'"),
    ("meta", [1], "'meta' is a list"),
    ("nranx", 4, "unknown field 'nranx' \\(did you mean 'nranks'\\?\\)"),
    ("owner", [0] * 8, "'owner' is only for allgather and reduce_scatter"),
    ("collective", "allgather", "'owner' is null; allgather schedules give the rank of each"),
    ("src", [1.0] * 32, r"src\[0\] is 1.0"),
    ("src", [True] * 32, r"src\[0\] is True"),
    ("src", "0", "'src' is a string"),
    ("piece_stop", [2**63] * 32, r"piece_stop\[0\] = 9223372036854775808 is out of range"),
    ("piece_shift", [2**62] * 32, r"piece_shift\[0\] = .* is out of range"),
    ("route_links", [-1], r"route_links\[0\] = -1 is out of range"),
    ("step", [-1] * 32, r"step\[0\] = -1 is out of range"),
])
def test_bad_json_fields_are_one_clear_error_naming_the_field(tmp_path, docs, field, value, message):
    doc = {**docs[0], field: value}
    path = _json(tmp_path, doc)
    with pytest.raises(ScheduleFormatError, match=message) as info:
        sio.load(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_npz_unknown_array_two_dimensional_column_and_non_string_header(tmp_path, docs):
    doc = docs[0]
    with pytest.raises(ScheduleFormatError, match="unknown array 'srcs' \\(did you mean 'src'\\?\\)"):
        sio.load(_npz(tmp_path, doc, srcs=np.zeros(3, np.int64)))
    with pytest.raises(ScheduleFormatError, match="'src' is a 2x24 array"):
        sio.load(_npz(tmp_path, doc, src=np.asarray(doc["src"], np.int64).reshape(2, -1)))
    path = tmp_path / "h.npz"
    np.savez(path, header=np.array([1, 2]), **{k: np.asarray(doc[k]) for k in INT_COLUMNS})
    with pytest.raises(ScheduleFormatError, match="'header' is a"):
        sio.load(path)


def test_npz_arrays_are_sized_from_their_headers_before_reading(tmp_path, docs):
    path = _npz(tmp_path, docs[0], piece_start=np.zeros(5_000_000, np.int64))  # 40 MB, compressible
    with memory_budget_override("16MiB"), pytest.raises(ResourceError, match="array 'piece_start'"):
        sio.load(path)


@pytest.mark.parametrize(("old", "new", "message"), [
    ('ngpus="4"', 'ngpus="100000000000"', "ngpus=100000000000 is out of range; accepted: 1..2147483647"),
    ('ngpus="4"', 'ngpus="2147483647"', "ngpus=2147483647 but the <gpu> ids"),
    ('ngpus="4"', 'ngpus=" 4"', "ngpus=' 4' is not an integer"),
    ('ngpus="4"', 'ngpus="+4"', "ngpus='+4' is not an integer"),
    ('ngpus="4"', 'ngpus="٤"', "is not an integer"),
    ('ngpus="4"', 'ngpus="4.0"', "is not an integer"),
    ('ngpus="4"', 'ngpus="' + "9" * 30 + '"', "is not an integer"),
    ('cnt="1"', 'cnt="-5"', "cnt=-5 is out of range"),
    ('hasdep="0"', 'hasdep="2"', "hasdep=2 is out of range; accepted: 0..1"),
    ('s_chunks="0"', 's_chunks="-1"', "s_chunks=-1 is out of range"),
    ('<algo ', '<!DOCTYPE algo [<!ENTITY a "aaaa">]><algo ', "document type declaration"),
    ('</algo>', '', "not well-formed XML"),
])
def test_bad_msccl_attributes_are_one_clear_error(xml, old, new, message):
    assert old in xml
    with pytest.raises(MscclFormatError, match=re.escape(message) if "(" not in message else message) as info:
        import_msccl(xml.replace(old, new, 1))
    assert "\n" not in str(info.value)


def test_msccl_import_estimates_memory_before_building(xml):
    """ngpus="100000000000" used to end in MemoryError; a program within the attribute ranges whose import would
    be huge (an out-of-place input copy of 2^31 - 1 chunks per GPU) is refused before anything is built."""
    big = xml.replace('nchunksperloop="8"', 'nchunksperloop="2147483647"').replace('inplace="1"', 'inplace="0"')
    big = re.sub(r'([io])_chunks="\d+"', r'\1_chunks="2147483647"', big)
    with memory_budget_override("1GiB"), pytest.raises(ResourceError, match="importing allreduce on 4 GPUs"):
        import_msccl(big)


# -- hypothesis: mutated files are read exactly or refused ------------------------------------------------------

_VALUES = st.one_of(st.integers(-2**70, 2**70), st.sampled_from([0, 1, 255, 256, 257, -1]),
                    st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(), st.text(max_size=4),
                    st.lists(st.integers(-3, 300), max_size=3))


def _read_exactly_or_refuse(load, doc):
    """Reading either raises a DirectcollError or returns a schedule holding exactly the document's fields (ints
    as ints); a returned schedule verifies or fails cleanly."""
    try:
        s = load()
    except DirectcollError:
        return
    back = sio.to_dict(s)
    for key in ("collective", "nranks", "nblocks", "denominator", "nscratch", *INT_COLUMNS, *sio._OPTIONAL):
        if key in doc:
            value = doc[key]
            if isinstance(value, np.ndarray):
                assert value.dtype.kind in "iu", key
                value = value.tolist()
            assert json.dumps(value) == json.dumps(back[key]), key  # no float/bool/str stood in for an int
    try:
        verify(s)
    except DirectcollError:
        pass


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_json_is_read_exactly_or_refused(tmp_path, docs, data):
    doc = copy.deepcopy(data.draw(st.sampled_from(docs)))
    for _ in range(data.draw(st.integers(1, 3))):
        key = data.draw(st.sampled_from(sorted(k for k in doc if k != "meta")))
        how = data.draw(st.sampled_from(["value", "element", "drop", "op256"]))
        if how == "drop":
            doc.pop(key)
        elif how == "op256" and "op" in doc and isinstance(doc["op"], list):
            doc["op"] = [v + 256 if type(v) is int else v for v in doc["op"]]
        elif how == "element" and isinstance(doc[key], list) and doc[key]:
            doc[key][data.draw(st.integers(0, len(doc[key]) - 1))] = data.draw(_VALUES)
        else:
            doc[key] = data.draw(_VALUES)
    path = _json(tmp_path, doc, "h.json")
    with memory_budget_override("256MiB"):
        _read_exactly_or_refuse(lambda: sio.load(path), doc)


_DTYPES = st.sampled_from([np.int64, np.int32, np.int8, np.uint8, np.uint64, np.float64, np.float32, np.bool_])


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_npz_is_read_exactly_or_refused(tmp_path, docs, data):
    doc = data.draw(st.sampled_from(docs))
    arrays = {k: np.asarray(doc[k], np.int64) for k in sio._ARRAYS + sio._OPTIONAL if doc.get(k) is not None}
    for _ in range(data.draw(st.integers(1, 2))):
        name = data.draw(st.sampled_from(sorted(arrays)))
        a = arrays[name].astype(np.int64) + data.draw(st.sampled_from([0, 0, 256, -1, 2**40]))
        if len(a) and data.draw(st.booleans()):
            a[data.draw(st.integers(0, len(a) - 1))] = data.draw(st.integers(-2**63, 2**63 - 1))
        dtype = data.draw(_DTYPES)
        with np.errstate(all="ignore"):
            arrays[name] = a.astype(dtype) + (data.draw(st.sampled_from([0.0, 0.5])) if dtype in (np.float64,
                                                                                                 np.float32) else 0)
    path = _npz(tmp_path, doc, "h.npz", **arrays)
    header = {k: v for k, v in doc.items() if k not in sio._ARRAYS + sio._OPTIONAL}
    with memory_budget_override("256MiB"):
        _read_exactly_or_refuse(lambda: sio.load(path), {**header, **arrays})


_ATTR = re.compile(r'(\w+)="([^"]*)"')


@settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_mutated_msccl_is_imported_exactly_or_refused(xml, data):
    matches = list(_ATTR.finditer(xml))
    m = data.draw(st.sampled_from(matches))
    new = data.draw(st.one_of(st.integers(-2**40, 2**70).map(str), st.sampled_from(
        [" 1", "+1", "1.5", "1e3", "٣", "", "x", "0x10", "01", "-0", "nop", "i", "o", "s"]), st.text(max_size=5)))
    new = new.replace('"', "").replace("<", "").replace("&", "")
    text = xml[: m.start(2)] + new + xml[m.end(2):]
    with memory_budget_override("256MiB"):
        try:
            program = parse_msccl(text)
        except DirectcollError:
            return
        if re.fullmatch(r"-?[0-9]+", m.group(2)):  # an integer attribute was read: exactly the text's value
            assert re.fullmatch(r"-?[0-9]+", new), new
            element = next(tag for tag in ("step", "tb", "gpu", "algo") if text.rfind("<" + tag, 0, m.start()) ==
                           max(text.rfind("<" + t, 0, m.start()) for t in ("step", "tb", "gpu", "algo")))
            lo, hi = INT_ATTRS[element][m.group(1)]
            assert lo <= int(new) <= hi
        try:
            import_msccl(text)
        except DirectcollError:
            pass
        del program


# -- the CLI: one line, exit 2, bounded memory and time ---------------------------------------------------------

def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))


def _cli(*argv, timeout=60):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    env.pop("DIRECTCOLL_MEMORY_BUDGET", None)
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "directcoll.cli.main", *map(str, argv)], capture_output=True,
                          text=True, timeout=timeout, env=env, preexec_fn=_limit_memory)
    return done, time.perf_counter() - t0


@pytest.mark.parametrize("edit", [
    lambda d: d.update(op=[v + 256 for v in d["op"]]),
    lambda d: d.update(nscratch=10**12),
    lambda d: d.update(nranks=2.5),
    lambda d: d.update(src=[10**30] * len(d["src"])),
], ids=["op+256", "nscratch", "float-nranks", "huge-src"])
def test_cli_verify_bad_file_exits_2_with_one_line(tmp_path, docs, edit):
    doc = copy.deepcopy(docs[0])
    edit(doc)
    done, seconds = _cli("verify", _json(tmp_path, doc))
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and lines[0].startswith("directcoll: error: ") and "Traceback" not in done.stderr


def test_cli_import_huge_ngpus_exits_2_with_one_line(tmp_path, xml):
    path = tmp_path / "huge.xml"
    path.write_text(xml.replace('ngpus="4"', 'ngpus="100000000000"'))
    done, _ = _cli("import", path, "-o", tmp_path / "out.json")
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "ngpus" in lines[0], done.stderr


def test_a_corrupted_npz_is_a_format_error_never_a_zlib_error(tmp_path):
    # bytes flipped anywhere in the archive (headers, deflate streams, CRCs): the file loads as a valid schedule or
    # is refused as the project's error, never with zlib's, zipfile's or numpy's own exception
    from directcoll.errors import DirectcollError
    from directcoll.registry import build

    good = sio.save(build("ring", "torus:4x4", "allreduce"), tmp_path / "good.npz").read_bytes()
    kinds = set()
    for at in range(0, len(good), 7):
        bad = bytearray(good)
        bad[at] ^= 0xA5
        path = tmp_path / "bad.npz"
        path.write_bytes(bytes(bad))
        try:
            sio.load(path)
        except DirectcollError as exc:
            kinds.add(type(exc).__name__)
    assert "ScheduleFormatError" in kinds
