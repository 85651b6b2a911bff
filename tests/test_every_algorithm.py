"""Every registered algorithm, on the issue's shapes, either builds a schedule the verifier accepts or refuses
the shape with UnsupportedShapeError — never a wrong schedule, never another exception. Swing serves them all."""

import pytest

from directcoll.errors import UnsupportedShapeError
from directcoll.registry import ALGORITHMS, build
from directcoll.verify import verify

SHAPES = [
    "torus:4x4", "torus:8x8", pytest.param("torus:8x8x8", marks=pytest.mark.slow),
    "torus:6x10", "torus:7", "ring:13", "torus:16x4", "torus:3x3x2"]
COLLECTIVES = ["allreduce", "reduce_scatter", "allgather"]


@pytest.mark.parametrize("spec", SHAPES)
@pytest.mark.parametrize("name", sorted(ALGORITHMS))
def test_serves_or_refuses(name, spec):
    if name == "expansion":
        pytest.skip("expansion serves only specs built by expansion operators (tests/test_expansions.py)")
    if "allreduce" not in ALGORITHMS[name].collectives:
        pytest.skip(f"{name} serves {', '.join(ALGORITHMS[name].collectives)} only")
    served = []
    for collective in COLLECTIVES:
        for variant in (None, *ALGORITHMS[name].variants):
            try:
                schedule = build(name, spec, collective, variant=variant)
            except UnsupportedShapeError as exc:
                assert str(exc), "a refusal must say why"
                continue
            result = verify(schedule)
            assert result.ok, f"{name} {variant} {collective} on {spec}: {result.failure}"
            served.append((collective, variant))
    if name == "swing":
        assert {c for c, _ in served} == set(COLLECTIVES), f"swing must serve every collective on {spec}"
    assert any(c == "allreduce" for c, _ in served), f"{name} serves no allreduce on {spec}"
