"""Lossless schedule files: versioned JSON (small, readable) and ``.npz`` (large, fast).

Both hold the same fields: a header (format, version, collective, nranks, nblocks, denominator, meta) and the
columnar arrays of :class:`~directcoll.schedule.ir.Schedule`.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np

from directcoll.errors import ScheduleError, ScheduleFormatError
from directcoll.schedule.ir import Schedule

FORMAT = "directcoll-schedule"
VERSION = 2
READABLE_VERSIONS = (1, 2)  # version 2 added nscratch and piece_shift (both optional)
_ARRAYS = ("step", "src", "dst", "op", "piece_offsets", "piece_start", "piece_stop")
_OPTIONAL = ("owner", "piece_shift", "route_offsets", "route_links")


def to_dict(schedule: Schedule) -> dict:
    """A JSON-serializable dict holding every field of the schedule."""
    d = {"format": FORMAT, "version": VERSION, "collective": schedule.collective.value,
         "nranks": schedule.nranks, "nblocks": schedule.nblocks, "denominator": schedule.denominator,
         "nscratch": schedule.nscratch,
         "meta": schedule.meta}
    for name in _ARRAYS + _OPTIONAL:
        value = getattr(schedule, name)
        d[name] = None if value is None else value.tolist()
    return d


def from_dict(d: dict, *, source: str = "<dict>") -> Schedule:
    """Rebuild a schedule from :func:`to_dict` output.

    Raises:
        ScheduleFormatError: wrong format name or version, or a missing field.
        ScheduleError: fields present but inconsistent.
    """
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise ScheduleFormatError(f"{source}: not a directcoll schedule (expected \"format\": \"{FORMAT}\")")
    if d.get("version") not in READABLE_VERSIONS:
        raise ScheduleFormatError(f"{source}: schedule format version {d.get('version')!r} is not supported; "
                                  f"this directcoll reads versions {', '.join(map(str, READABLE_VERSIONS))}")
    missing = [k for k in ("collective", "nranks", "nblocks", *_ARRAYS) if d.get(k) is None]
    if missing:
        raise ScheduleFormatError(f"{source}: missing fields {', '.join(missing)}")
    try:
        arrays = {k: np.asarray(d[k], dtype=np.int64) for k in _ARRAYS}
        optional = {k: None if d.get(k) is None else np.asarray(d[k], dtype=np.int64) for k in _OPTIONAL}
    except (TypeError, ValueError) as exc:
        raise ScheduleFormatError(f"{source}: schedule arrays must hold integers ({exc})") from None
    try:
        return Schedule(d["collective"], int(d["nranks"]), int(d["nblocks"]),
                        denominator=int(d.get("denominator", 1)), nscratch=int(d.get("nscratch", 0)),
                        meta=dict(d.get("meta") or {}), **arrays, **optional)
    except ScheduleError as exc:
        raise ScheduleError(f"{source}: {exc}") from None


def save(schedule: Schedule, path) -> Path:
    """Write ``schedule`` to ``path``: ``.npz`` for the binary format, anything else as JSON."""
    path = Path(path)
    if path.suffix == ".npz":
        header = {k: v for k, v in to_dict(schedule).items() if k not in _ARRAYS + _OPTIONAL}
        arrays = {k: getattr(schedule, k) for k in _ARRAYS + _OPTIONAL if getattr(schedule, k) is not None}
        np.savez_compressed(path, header=np.array(json.dumps(header)), **arrays)
    else:
        path.write_text(json.dumps(to_dict(schedule), separators=(",", ":")))
    return path


def load(path) -> Schedule:
    """Read a schedule written by :func:`save`.

    Raises:
        ScheduleFormatError: the file is missing, not JSON / npz, or not a directcoll schedule.
    """
    path = Path(path)
    if not path.exists():
        raise ScheduleFormatError(f"{path}: no such schedule file")
    if path.suffix == ".npz":
        try:
            with np.load(path, allow_pickle=False) as z:
                d = json.loads(str(z["header"]))
                if isinstance(d, dict):  # anything else is rejected by from_dict
                    d.update({k: z[k] for k in _ARRAYS + _OPTIONAL if k in z.files})
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            raise ScheduleFormatError(f"{path}: not a readable .npz schedule ({exc})") from None
        return from_dict(d, source=str(path))
    try:
        d = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ScheduleFormatError(f"{path}: not valid JSON ({exc}); expected a directcoll schedule "
                                  "(.json or .npz)") from None
    return from_dict(d, source=str(path))
