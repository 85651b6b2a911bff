"""Lossless schedule files: versioned JSON (small, readable) and ``.npz`` (large, fast).

Both hold the same fields: a header (format, version, collective, nranks, nblocks, denominator, nscratch, meta)
and the columnar arrays of :class:`~directcoll.schedule.ir.Schedule`.

Reading is strict (:func:`validate_dict`): every field is checked for its type and range before it is used and
before anything that grows with its value is allocated; integer columns must hold integers (JSON ints, not
bools, floats or strings; ``.npz`` arrays of an integer dtype), and nothing is cast or reinterpreted, so a file
either reads back exactly what it holds or is refused with one :class:`~directcoll.errors.ScheduleFormatError`
(or :class:`~directcoll.errors.ScheduleError`, :class:`~directcoll.errors.ResourceError`) naming the field.

Source: docs/architecture.md, "Schedule IR" (a versioned JSON and ``.npz`` round-trip losslessly); docs/schedule.md.

>>> from directcoll.algorithms.ring import ring_allgather
>>> from_dict(to_dict(ring_allgather(range(3))))
Schedule(allgather, unknown, N=3, nblocks=3, steps=2, transfers=6)
"""

from __future__ import annotations

import difflib
import json
import math
import zipfile
from pathlib import Path

import numpy as np

from directcoll.errors import DirectcollError, ScheduleError, ScheduleFormatError
from directcoll.inputs import read_text, regular_file_size
from directcoll.resources import check_memory
from directcoll.schedule.ir import Collective, Schedule

FORMAT = "directcoll-schedule"
VERSION = 2
READABLE_VERSIONS = (1, 2)  # version 2 added nscratch and piece_shift (both optional)
_ARRAYS = ("step", "src", "dst", "op", "piece_offsets", "piece_start", "piece_stop")
_OPTIONAL = ("owner", "piece_shift", "route_offsets", "route_links")
_HEADER = ("format", "version", "collective", "nranks", "nblocks", "denominator", "nscratch", "meta")
#: Largest rank count, block count, denominator, step or link id a file may hold (2^31 - 1).
MAX_INDEX = 2**31 - 1
#: Largest coordinate numerator, (nblocks + nscratch) * denominator: piece ends and shifts stay far from int64's
#: limit, so sums of them never overflow.
MAX_COORDINATE = 2**60
#: The least memory a consumer of a schedule holds per block of the work buffer (one int64), bytes.
BYTES_PER_BLOCK = 8.0
#: Python objects per character of JSON text, as bytes: the parsed document's estimated footprint.
JSON_BYTES_PER_CHAR = 12


def _header(schedule: Schedule) -> dict:
    """The fields of :func:`to_dict` that are not arrays."""
    return {"format": FORMAT, "version": VERSION, "collective": schedule.collective.value,
            "nranks": schedule.nranks, "nblocks": schedule.nblocks, "denominator": schedule.denominator,
            "nscratch": schedule.nscratch, "meta": schedule.meta}


def to_dict(schedule: Schedule) -> dict:
    """A JSON-serializable dict holding every field of the schedule.

    Returns:
        ``{"format": FORMAT, "version": VERSION, header fields..., array fields as lists of ints (None when
        absent)}``; piece ends are numerators over ``denominator``.

    Raises:
        Nothing: every field of a built schedule converts.

    Source: docs/architecture.md, "Schedule IR" (versioned JSON).

    >>> from directcoll.algorithms.ring import ring_allgather
    >>> d = to_dict(ring_allgather(range(3)))
    >>> d["format"], d["version"], d["src"]
    ('directcoll-schedule', 2, [0, 1, 2, 0, 1, 2])
    """
    d = _header(schedule)
    for name in _ARRAYS + _OPTIONAL:
        value = getattr(schedule, name)
        d[name] = None if value is None else value.tolist()
    return d


# -- validation -----------------------------------------------------------------------------------------------

def _kind(value) -> str:
    """The JSON name of a value's type, for messages."""
    if isinstance(value, np.ndarray):
        return f"an array of dtype {value.dtype}"
    return {bool: "a boolean", int: "an integer", float: "a number with a fraction or exponent", str: "a string",
            list: "a list", dict: "an object", type(None): "null"}.get(type(value), type(value).__name__)


def _int(d: dict, name: str, source: str, lo: int, hi: int, default=None) -> int:
    """Field ``name`` of ``d``: a JSON integer (not a bool, float or string) in [lo, hi]."""
    if name not in d and default is not None:
        return default
    value = d[name]
    if type(value) is not int:
        shown = repr(value) if not isinstance(value, list | dict) else _kind(value)
        raise ScheduleFormatError(f"{source}: field {name!r} is {shown} ({_kind(value)}); expected an integer "
                                  f"in {lo}..{hi}")
    if not lo <= value <= hi:
        raise ScheduleFormatError(f"{source}: field {name!r} = {value} is out of range; accepted: {lo}..{hi}")
    return value


def _column(value, name: str, source: str, lo: int, hi: int) -> np.ndarray:
    """An integer column as int64, its values checked in [lo, hi] before any conversion.

    JSON: a list of integers (bools, floats, strings refused). ``.npz``: a one-dimensional array of an integer
    dtype (bool, float, string dtypes refused, even when the values are integral)."""
    accepted = f"a list of integers in {lo}..{hi}"
    if isinstance(value, np.ndarray):
        if value.ndim != 1 or value.dtype.kind not in "iu":
            shape = "x".join(map(str, value.shape)) or "scalar"
            raise ScheduleFormatError(f"{source}: schedule arrays must hold integers: {name!r} is a {shape} array "
                                      f"of dtype {value.dtype}; expected a one-dimensional integer array "
                                      f"(values in {lo}..{hi})")
        if len(value):
            vmin, vmax = int(value.min()), int(value.max())  # Python ints: no wrap-around for uint64
            if vmin < lo or vmax > hi:
                bad = vmin if vmin < lo else vmax
                raise ScheduleFormatError(f"{source}: {name!r} holds {bad}, out of range; accepted: {lo}..{hi}")
        return value.astype(np.int64)
    if not isinstance(value, list):
        raise ScheduleFormatError(f"{source}: schedule arrays must hold integers: {name!r} is {_kind(value)}; "
                                  f"expected {accepted}")
    for i, v in enumerate(value):
        if type(v) is not int:
            raise ScheduleFormatError(f"{source}: schedule arrays must hold integers: {name}[{i}] is {v!r} "
                                      f"({_kind(v)}); expected {accepted}")
        if not lo <= v <= hi:
            raise ScheduleFormatError(f"{source}: {name}[{i}] = {v} is out of range; accepted: {lo}..{hi}")
    return np.array(value, dtype=np.int64)


def validate_dict(d, *, source: str = "<dict>") -> dict:
    """Check a schedule document (the dict of :func:`to_dict`, or an ``.npz`` header with its arrays) field by
    field and return the keyword arguments of :class:`~directcoll.schedule.ir.Schedule`, with every column an
    int64 array holding exactly the file's values. Nothing is allocated that grows with a field's value before
    that value is checked against its range and the memory budget.

    Returns:
        A dict of the Schedule's keyword arguments (columns int64 of shape (T,), (T+1,), (P,) or (nblocks,)).

    Raises:
        ScheduleFormatError: not a directcoll schedule, an unsupported version, a missing or unknown field, a
            field of the wrong type (a bool, float, string or NaN where an integer is expected; a non-integer
            ``.npz`` dtype) or out of range (ranks outside 0..N-1, op other than 0/1, negative steps, piece
            ends outside the buffer, ...); the message names ``source`` and the field.
        ResourceError: the schedule would need more memory than the budget (e.g. a huge ``nblocks``).

    Source: docs/architecture.md, "Schedule IR" and "Quality bar" (bad input names the field).

    >>> validate_dict({"format": "x"})
    Traceback (most recent call last):
    ...
    directcoll.errors.ScheduleFormatError: <dict>: not a directcoll schedule (expected "format": "directcoll-schedule")
    """
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise ScheduleFormatError(f"{source}: not a directcoll schedule (expected \"format\": \"{FORMAT}\")")
    version = d.get("version")
    if type(version) is not int or version not in READABLE_VERSIONS:
        raise ScheduleFormatError(f"{source}: schedule format version {version!r} is not supported; "
                                  f"this directcoll reads versions {', '.join(map(str, READABLE_VERSIONS))}")
    known = _HEADER + _ARRAYS + _OPTIONAL
    unknown = sorted(k for k in d if k not in known)
    if unknown:
        close = difflib.get_close_matches(str(unknown[0]), known, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ScheduleFormatError(f"{source}: unknown field {unknown[0]!r}{hint}; accepted fields: "
                                  f"{', '.join(known)}")
    missing = [k for k in ("collective", "nranks", "nblocks", *_ARRAYS) if d.get(k) is None]
    if missing:
        raise ScheduleFormatError(f"{source}: missing fields {', '.join(missing)}")
    names = [c.value for c in Collective]
    if d["collective"] not in names or type(d["collective"]) is not str:
        raise ScheduleFormatError(f"{source}: field 'collective' is {d['collective']!r}; accepted: "
                                  f"{', '.join(names)}")
    coll = Collective(d["collective"])
    nranks = _int(d, "nranks", source, 1, MAX_INDEX)
    nblocks = _int(d, "nblocks", source, 1, MAX_COORDINATE)
    denominator = _int(d, "denominator", source, 1, MAX_COORDINATE, default=1)
    nscratch = _int(d, "nscratch", source, 0, MAX_COORDINATE, default=0)
    hi = (nblocks + nscratch) * denominator
    if hi > MAX_COORDINATE:
        raise ScheduleFormatError(f"{source}: (nblocks + nscratch) x denominator = {hi} is out of range; accepted: "
                                  f"at most {MAX_COORDINATE}")
    # every consumer keeps at least one 64-bit word per block of the work buffer: the runtime's block boundaries,
    # the verifier's segments; a scratch count read from a file is budgeted before any of them allocates
    check_memory(f"{source}: a work buffer of {nblocks + nscratch:,} blocks (nblocks + nscratch)",
                 BYTES_PER_BLOCK * (nblocks + nscratch))
    meta = d.get("meta", {})
    if not isinstance(meta, dict):
        raise ScheduleFormatError(f"{source}: field 'meta' is {_kind(meta)}; expected an object")
    if coll.has_owner and "owner" in d and d["owner"] is None:  # absent means MPI's default; null is ambiguous
        raise ScheduleFormatError(f"{source}: field 'owner' is null; {coll.value} schedules give the rank of each "
                                  "of their blocks (a list of nblocks ranks), or leaves 'owner' out for MPI's "
                                  "default (rank r owns blocks r*k..(r+1)*k-1)")
    if not coll.has_owner and d.get("owner") is not None:
        raise ScheduleFormatError(f"{source}: field 'owner' is only for allgather and reduce_scatter; "
                                  f"{coll.value} schedules have \"owner\": null")
    last = nranks - 1
    cols = {"step": _column(d["step"], "step", source, 0, MAX_INDEX),
            "src": _column(d["src"], "src", source, 0, last),
            "dst": _column(d["dst"], "dst", source, 0, last),
            "op": _column(d["op"], "op", source, 0, 1),  # 0 = copy, 1 = reduce
            "piece_offsets": _column(d["piece_offsets"], "piece_offsets", source, 0, MAX_COORDINATE),
            "piece_start": _column(d["piece_start"], "piece_start", source, 0, hi),
            "piece_stop": _column(d["piece_stop"], "piece_stop", source, 0, hi)}
    ranges = {"owner": (0, last), "piece_shift": (-hi, hi), "route_offsets": (0, MAX_COORDINATE),
              "route_links": (0, MAX_INDEX)}
    for name, (lo, top) in ranges.items():
        cols[name] = None if d.get(name) is None else _column(d[name], name, source, lo, top)
    if len(cols["step"]):  # Schedule.step_bounds holds one entry per step, empty ones included
        check_memory(f"{source}: {int(cols['step'].max()) + 1:,} steps", 8.0 * (int(cols["step"].max()) + 2))
    return dict(collective=coll, nranks=nranks, nblocks=nblocks, denominator=denominator, nscratch=nscratch,
                meta=meta, **cols)


def from_dict(d: dict, *, source: str = "<dict>") -> Schedule:
    """Rebuild a schedule from :func:`to_dict` output, strictly (:func:`validate_dict`).

    Returns:
        The :class:`~directcoll.schedule.ir.Schedule` the document holds, field for field.

    Raises:
        ScheduleFormatError: wrong format name or version, a missing, unknown, mistyped or out-of-range field.
        ScheduleError: fields present but inconsistent (the message is prefixed with ``source``).
        ResourceError: the schedule would exceed the memory budget.

    Source: docs/architecture.md, "Schedule IR" (lossless round trip).

    >>> from directcoll.algorithms.ring import ring_allgather
    >>> from_dict(to_dict(ring_allgather(range(3)))).num_steps
    2
    """
    fields = validate_dict(d, source=source)
    try:
        return Schedule(**fields)
    except ScheduleError as exc:
        raise ScheduleError(f"{source}: {exc}") from None


def save(schedule: Schedule, path) -> Path:
    """Write ``schedule`` to ``path``: ``.npz`` for the binary format, anything else as JSON.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        Nothing of ours: an unwritable path raises the OS's :class:`OSError`.

    Source: docs/architecture.md, "Schedule IR" (JSON for small, ``.npz`` for large schedules).

    >>> import os, tempfile
    >>> from directcoll.algorithms.ring import ring_allgather
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     load(save(ring_allgather(range(3)), os.path.join(tmp, "ring.npz")))
    Schedule(allgather, unknown, N=3, nblocks=3, steps=2, transfers=6)
    """
    path = Path(path)
    if path.suffix == ".npz":
        header = _header(schedule)  # the arrays go to .npy members, never through Python lists
        arrays = {k: getattr(schedule, k) for k in _ARRAYS + _OPTIONAL if getattr(schedule, k) is not None}
        _write_npz(path, {"header": np.array(json.dumps(header)), **arrays})
    else:
        path.write_text(json.dumps(to_dict(schedule), separators=(",", ":")))
    return path


#: zlib level of ``.npz`` schedules: level 1 wrote BFB's torus:50x50 allreduce (12.5 M pieces) in 2.4 s and
#: 56 MB against numpy's default level's 6.2 s and 31 MB (docs/benchmarks.md, "Writing schedules"); any reader
#: of deflate (numpy's ``np.load``, :func:`read_npz`) reads every level
NPZ_LEVEL = 1


def _write_npz(path: Path, arrays: dict) -> None:
    """``np.savez_compressed``'s format (one ``.npy`` member per array, deflated) at zlib level :data:`NPZ_LEVEL`."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=NPZ_LEVEL) as zf:
        for name, value in arrays.items():
            with zf.open(f"{name}.npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.asanyarray(value), allow_pickle=False)


def _parse_json(text: str, source: str):
    try:
        return json.loads(text)  # NaN/Infinity parse (meta may hold them) and are refused where numbers are checked
    except (json.JSONDecodeError, ValueError, RecursionError) as exc:
        raise ScheduleFormatError(f"{source}: not valid JSON ({exc}); expected a directcoll schedule "
                                  "(.json or .npz)") from None


def read_npz(path) -> dict:
    """The document of an ``.npz`` schedule: its JSON header with its arrays, each array's size checked against
    the memory budget (from the ``.npy`` header) before it is read.

    Returns:
        A dict as :func:`to_dict` writes it, with numpy arrays in place of the lists (not yet validated).

    Raises:
        ScheduleFormatError: not a zip of ``.npy`` arrays, any corrupted byte of the archive (zip, deflate stream,
            ``.npy`` header), an unknown array, no 0-d string ``header``, a header that is not JSON or names a field
            also stored as an array, an object (pickled) array.
        ResourceError: an array larger than the memory budget.

    Source: docs/architecture.md, "Schedule IR"; numpy's ``.npy`` format (NEP 1) read header first.

    >>> import os, tempfile
    >>> from directcoll.algorithms.ring import ring_allgather
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     read_npz(save(ring_allgather(range(3)), os.path.join(tmp, "ring.npz")))["src"]
    array([0, 1, 2, 0, 1, 2])
    """
    path = Path(path)
    regular_file_size(path, str(path), error=ScheduleFormatError)  # arrays are budgeted one by one below
    try:
        with zipfile.ZipFile(path) as zf:
            members = {n[:-4]: n for n in zf.namelist() if n.endswith(".npy")}
            unknown = sorted(set(members) - {"header", *_ARRAYS, *_OPTIONAL})
            if unknown:
                close = difflib.get_close_matches(unknown[0], _ARRAYS + _OPTIONAL, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ScheduleFormatError(f"{path}: unknown array {unknown[0]!r}{hint}; accepted arrays: "
                                          f"{', '.join(_ARRAYS + _OPTIONAL)}")
            if "header" not in members:
                raise ScheduleFormatError(f"{path}: not a readable .npz schedule (it has no 'header' array)")
            shapes = {}
            for key in ("header", *_ARRAYS, *_OPTIONAL):
                if key not in members:
                    continue
                with zf.open(members[key]) as f:
                    version = np.lib.format.read_magic(f)
                    read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                                   else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = read_header(f)
                shapes[key] = (shape, dtype)
                nbytes = float(math.prod(shape)) * dtype.itemsize
                check_memory(f"{path}: array {key!r} ({'x'.join(map(str, shape)) or 'scalar'} of {dtype})", nbytes)
            with np.load(path, allow_pickle=False) as z:
                header = z["header"]
                if header.shape != () or header.dtype.kind != "U":
                    raise ScheduleFormatError(f"{path}: not a readable .npz schedule ('header' is a "
                                              f"{shapes['header'][0]} array of {header.dtype}; expected one JSON "
                                              "string)")
                d = _parse_json(str(header), str(path))
                if isinstance(d, dict):  # anything else is rejected by validate_dict
                    clash = [k for k in _ARRAYS + _OPTIONAL if k in d and k in members]
                    if clash:
                        raise ScheduleFormatError(f"{path}: field {clash[0]!r} is both in the header and an array")
                    d.update({k: z[k] for k in _ARRAYS + _OPTIONAL if k in members})
    except (DirectcollError, MemoryError):
        raise
    except Exception as exc:  # an untrusted container: zipfile, zlib and numpy's .npy header parser
        # (ast, tokenize) each have their own errors for a corrupted byte; every one of them means the same thing
        raise ScheduleFormatError(f"{path}: not a readable .npz schedule ({type(exc).__name__}: {exc})") from None
    return d


def load(path) -> Schedule:
    """Read a schedule written by :func:`save`, strictly (:func:`validate_dict`).

    Returns:
        The :class:`~directcoll.schedule.ir.Schedule` the file holds.

    Raises:
        ScheduleFormatError: the file is missing, not JSON / npz, not a directcoll schedule, or a field is
            missing, unknown, of the wrong type or out of range (the message names the file and the field).
        ScheduleError: the fields are inconsistent.
        ResourceError: reading it would exceed the memory budget.

    Source: docs/architecture.md, "Schedule IR" (versioned files; version 1 files still load).

    >>> load("no/such/file.json")
    Traceback (most recent call last):
    ...
    directcoll.errors.ScheduleFormatError: no/such/file.json: no such schedule file
    """
    path = Path(path)
    if not path.exists():
        raise ScheduleFormatError(f"{path}: no such schedule file")
    if path.suffix == ".npz":
        return from_dict(read_npz(path), source=str(path))
    text = read_text(path, str(path), bytes_per_byte=JSON_BYTES_PER_CHAR, error=ScheduleFormatError)
    return from_dict(_parse_json(text, str(path)), source=str(path))
