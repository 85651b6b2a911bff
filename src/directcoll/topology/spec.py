"""Spec strings for topologies: ``torus:8x8``, ``mesh:4x4``, ``ring:16``, ``ring:16:uni``, ``hypercube:10``,
``hyperx:64x64``, ``hammingmesh:2x2:32x32``, ``complete:127``.

New families register a parser in :data:`FAMILIES`; a parse error lists the accepted forms.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from directcoll.errors import SpecError
from directcoll.topology import generators as gen
from directcoll.topology.model import Topology

_SHAPE = re.compile(r"^\d+(x\d+)*$")


def _shape(kind: str, text: str) -> tuple[int, ...]:
    if not _SHAPE.match(text):
        raise SpecError(f"{kind}: expected dimension sizes like 8x8 or 4x4x4, got {text!r}")
    return tuple(int(t) for t in text.split("x"))


def _int(kind: str, text: str) -> int:
    if not text.isdigit():
        raise SpecError(f"{kind}: expected a positive integer, got {text!r}")
    return int(text)


def _ring(args: list[str], **kw) -> Topology:
    if len(args) == 2 and args[1] in ("uni", "bi"):
        return gen.ring(_int("ring", args[0]), bidirectional=args[1] == "bi", **kw)
    if len(args) != 1:
        raise SpecError(f"ring: expected ring:N or ring:N:uni, got {':'.join(args)!r}")
    return gen.ring(_int("ring", args[0]), **kw)


def _one(kind: str, fn: Callable, convert: Callable) -> Callable:
    def parse(args: list[str], **kw) -> Topology:
        if len(args) != 1:
            raise SpecError(f"{kind}: expected one argument after '{kind}:', got {':'.join(args)!r}")
        return fn(convert(kind, args[0]), **kw)
    return parse


def _hammingmesh(args: list[str], **kw) -> Topology:
    if len(args) != 2:
        raise SpecError("hammingmesh: expected hammingmesh:AxB:XxY (board a x b, grid of x x y boards), "
                        f"got {':'.join(args)!r}")
    board, grid = _shape("hammingmesh", args[0]), _shape("hammingmesh", args[1])
    if len(board) != 2 or len(grid) != 2:
        raise SpecError(f"hammingmesh: board and grid must both be 2D (AxB:XxY), got {':'.join(args)!r}")
    return gen.hammingmesh(board, grid, **kw)


#: kind -> (parser, example spec, one-line description)
FAMILIES: dict[str, tuple[Callable, str, str]] = {
    "torus": (_one("torus", gen.torus, _shape), "torus:8x8", "D-dimensional torus, any sizes >= 2"),
    "mesh": (_one("mesh", gen.mesh, _shape), "mesh:4x4", "D-dimensional mesh"),
    "ring": (_ring, "ring:16 | ring:16:uni", "bidirectional or unidirectional ring"),
    "hypercube": (_one("hypercube", gen.hypercube, _int), "hypercube:10", "hypercube of 2^k nodes"),
    "hyperx": (_one("hyperx", gen.hyperx, _shape), "hyperx:64x64", "HyperX (all-to-all rows)"),
    "complete": (_one("complete", gen.complete, _int), "complete:8", "complete graph K_n (fully connected)"),
    "hammingmesh": (_hammingmesh, "hammingmesh:2x2:32x32", "HammingMesh: board AxB, grid XxY"),
}


def accepted_forms() -> str:
    return ", ".join(example for _, example, _ in FAMILIES.values())


def parse(spec: str, **link_params) -> Topology:
    """Build the topology a spec string names.

    Args:
        spec: ``KIND:ARGS`` as listed in :data:`FAMILIES`, e.g. ``torus:64x64``.
        **link_params: ``link_bandwidth`` (bytes/s) and ``link_latency`` (s) passed to the generator.

    Raises:
        SpecError: an unknown family or malformed arguments; the message lists the accepted forms.
    """
    if isinstance(spec, Topology):
        return spec
    text = str(spec).strip().lower()
    kind, _, rest = text.partition(":")
    if kind not in FAMILIES or not rest:
        raise SpecError(f"unknown topology spec {spec!r}; accepted: {accepted_forms()}")
    return FAMILIES[kind][0](rest.split(":"), **link_params)
