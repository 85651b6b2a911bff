"""Every schedule the project builds stays bit-identical across refactors: the digests of a fixed set of schedules
(every registered algorithm, collective and variant on small shapes, plus MSCCL exports) equal those recorded in
``tests/data/schedule_digests.json``. Schedules an LP solver makes are compared only under the HiGHS version that
recorded them (another version may pick another optimal vertex). After a deliberate change of a schedule, record
anew with ``python tests/test_schedule_digests.py --write`` and say why in the commit."""

import hashlib
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from directcoll.errors import UnsupportedShapeError
from directcoll.registry import ALGORITHMS, build

RECORD = Path(__file__).parent / "data" / "schedule_digests.json"
SHAPES = ("torus:4x4", "torus:3x3x2", "ring:6", "hypercube:3", "torus:6x10")
#: algorithms served by an LP or MIP: their schedules depend on the solver's version
SOLVED = ("bfb", "expansion", "ilp-disjoint", "mcf", "sssp", "ewsp", "bfb-tree")
#: the shapes of the expansion algorithm (specs built by expansion operators) and of the LP-based ones (small)
EXTRA = {"expansion": ("line(complete:4)", "product(ring:3,ring:3)", "degree(ring:4,2)"),
         "bfb": ("torus:3x3", "kautz:2:2"), "mcf": ("ring:4", "torus:2x3"), "ilp-disjoint": ("ring:4",),
         "bfb-tree": ("torus:3x3", "ring:6")}


def _cases():
    for name, alg in sorted(ALGORITHMS.items()):
        shapes = EXTRA.get(name, ()) if name in SOLVED and name in EXTRA else SHAPES
        if name in ("sssp", "ewsp"):
            shapes = ("torus:4x4", "ring:6")
        for spec in shapes:
            for collective in alg.collectives:
                for variant in (None, *alg.variants):
                    yield name, spec, collective, variant


def digest(schedule) -> str:
    """sha256 of every array, the denominator and the metadata of ``schedule`` (less wall-clock times)."""
    h = hashlib.sha256()
    for name in ("step", "src", "dst", "op", "piece_offsets", "piece_start", "piece_stop", "owner", "piece_shift",
                 "route_offsets", "route_links"):
        value = getattr(schedule, name)
        h.update(name.encode())
        if value is not None:
            a = np.ascontiguousarray(value)
            h.update(str(a.dtype).encode() + str(a.shape).encode() + a.tobytes())
    h.update(f"{schedule.collective} {schedule.nranks} {schedule.nblocks} {schedule.denominator} "
             f"{schedule.nscratch}".encode())
    meta = {k: v for k, v in schedule.meta.items() if not k.endswith("_seconds")}
    h.update(json.dumps(meta, sort_keys=True, default=str).encode())
    return h.hexdigest()


def _key(name, spec, collective, variant) -> str:
    return f"{name} {spec} {collective} {variant or '-'}"


def compute() -> dict:
    """{case: digest or the refusal's message} for every case, and the MSCCL exports of a few schedules."""
    from directcoll.export import export_msccl

    out = {}
    for case in _cases():
        try:
            schedule = build(case[0], case[1], case[2], variant=case[3])
        except UnsupportedShapeError as exc:
            out[_key(*case)] = f"refused: {exc}"
            continue
        out[_key(*case)] = digest(schedule)
    for case in (("swing", "torus:4x4", "allreduce", "bandwidth"), ("ring", "ring:6", "allgather", None),
                 ("recursive-doubling", "hypercube:3", "reduce_scatter", "bandwidth"),
                 ("generalized", "torus:6x10", "allreduce", None), ("bfb", "torus:3x3", "allgather", None),
                 ("mcf", "ring:4", "alltoall", None)):
        xml = export_msccl(build(case[0], case[1], case[2], variant=case[3]))
        out["msccl " + _key(*case)] = hashlib.sha256(xml.encode()).hexdigest()
    return out


def _highs() -> str:
    from importlib.metadata import version

    return version("highspy")


def test_every_schedule_is_bit_identical_to_the_record():
    record = json.loads(RECORD.read_text())
    now = compute()
    same_solver = record["highspy"] == _highs()
    assert set(now) == set(record["digests"]), "the set of cases changed: record anew (see the module docstring)"
    changed = [k for k, v in now.items() if record["digests"][k] != v
               and (same_solver or k.removeprefix("msccl ").split()[0] not in SOLVED)]
    assert not changed, f"{len(changed)} schedules changed, first: {changed[:5]}"
    if not same_solver:
        pytest.skip(f"LP-built schedules not compared: recorded with highspy {record['highspy']}, not {_highs()}")


if __name__ == "__main__" and sys.argv[1:] == ["--write"]:
    RECORD.write_text(json.dumps({"highspy": _highs(), "digests": compute()}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {RECORD}")
