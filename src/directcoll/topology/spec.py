"""Spec strings for topologies: ``torus:8x8``, ``mesh:4x4``, ``ring:16``, ``ring:16:uni``, ``hypercube:10``,
``hyperx:64x64``, ``hammingmesh:2x2:32x32``, ``complete:127``, and the generative topologies of
:mod:`directcoll.topology.generative` (``bipartite:4``, ``hamming:2:3``, ``circulant:16:3,4``, ``kautz:2:3``,
``petersen``, ...; docs/topologies_generative.md).

New families register a parser in :data:`FAMILIES`; a parse error lists the accepted forms.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from directcoll.errors import SpecError
from directcoll.topology import generative as gv
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


def _ints(kind: str, form: str, fn: Callable, count: int) -> Callable:
    def parse(args: list[str], **kw) -> Topology:
        if len(args) != count:
            raise SpecError(f"{kind}: expected {form}, got {':'.join(args)!r}")
        return fn(*(_int(kind, a) for a in args), **kw)
    return parse


def _fixed(kind: str, fn: Callable) -> Callable:
    def parse(args: list[str], **kw) -> Topology:
        if args:
            raise SpecError(f"{kind}: takes no arguments (the spec is just {kind!r}), got {':'.join(args)!r}")
        return fn(**kw)
    parse.no_args = True
    return parse


def _circulant(args: list[str], **kw) -> Topology:
    form = "circulant:N:a1,a2,... (bidirectional), circulant:N:a1,a2,...:uni or circulant:N:opt4"
    if len(args) == 3 and args[2] in ("uni", "bi"):
        bidirectional = args[2] == "bi"
        args = args[:2]
    else:
        bidirectional = True
    if len(args) != 2 or not args[1]:
        raise SpecError(f"circulant: expected {form}, got {':'.join(args)!r}")
    n = _int("circulant", args[0])
    if args[1] == "opt4":
        if not bidirectional:
            raise SpecError("circulant: opt4 (Theorem 22) is a bidirectional circulant; drop ':uni'")
        return gv.circulant_opt4(n, **kw)
    offsets = [_int("circulant", a) for a in args[1].split(",")]
    return gv.circulant(n, offsets, bidirectional=bidirectional, **kw)


def _twistedtorus(args: list[str], **kw) -> Topology:
    if len(args) not in (1, 2) or (len(args) == 2 and not args[1]):
        raise SpecError("twistedtorus: expected twistedtorus:AxB[:t] or twistedtorus:AxBxC[:t1,t2] "
                        f"(one twist per dimension but the last), got {':'.join(args)!r}")
    shape = _shape("twistedtorus", args[0])
    twists = None if len(args) == 1 else [_int("twistedtorus", t) for t in args[1].split(",")]
    return gv.twisted_torus(shape, twists, **kw)


#: kind -> (parser, example spec, one-line description)
FAMILIES: dict[str, tuple[Callable, str, str]] = {
    "torus": (_one("torus", gen.torus, _shape), "torus:8x8", "D-dimensional torus, any sizes >= 2"),
    "mesh": (_one("mesh", gen.mesh, _shape), "mesh:4x4", "D-dimensional mesh"),
    "ring": (_ring, "ring:16 | ring:16:uni", "bidirectional or unidirectional ring"),
    "hypercube": (_one("hypercube", gen.hypercube, _int), "hypercube:10", "hypercube of 2^k nodes"),
    "hyperx": (_one("hyperx", gen.hyperx, _shape), "hyperx:64x64", "HyperX (all-to-all rows)"),
    "complete": (_one("complete", gen.complete, _int), "complete:8", "complete graph K_n (fully connected)"),
    "hammingmesh": (_hammingmesh, "hammingmesh:2x2:32x32", "HammingMesh: board AxB, grid XxY"),
    "bipartite": (_one("bipartite", gv.bipartite, _int), "bipartite:4", "complete bipartite graph K_{n,n}"),
    "bipartite_minus_matching": (_one("bipartite_minus_matching", gv.bipartite_minus_matching, _int),
                                 "bipartite_minus_matching:5", "K_{n,n} minus a perfect matching"),
    "hamming": (_ints("hamming", "hamming:n:q", gv.hamming, 2), "hamming:2:3", "Hamming graph H(n,q)"),
    "circulant": (_circulant, "circulant:16:3,4 | circulant:16:3,4:uni | circulant:16:opt4",
                  "circulant C(N,{a1..ak}); opt4: Theorem 22's minimum-diameter degree-4 choice"),
    "genkautz": (_ints("genkautz", "genkautz:d:N", gv.generalized_kautz, 2), "genkautz:2:10",
                 "generalized Kautz digraph Pi_{d,N} (self-loops dropped)"),
    "kautz": (_ints("kautz", "kautz:d:D", gv.kautz, 2), "kautz:2:3", "Kautz digraph K(d,D), d^D+d^(D-1) nodes"),
    "debruijn": (_ints("debruijn", "debruijn:d:D", gv.de_bruijn, 2), "debruijn:2:3",
                 "de Bruijn digraph B(d,D), d^D nodes (self-loops dropped)"),
    "twistedhypercube": (_one("twistedhypercube", gv.twisted_hypercube, _int), "twistedhypercube:3",
                         "twisted hypercube (Esfahanian et al.)"),
    "twistedtorus": (_twistedtorus, "twistedtorus:4x8:4 | twistedtorus:4x4x8:4,4",
                     "twisted torus (Camara et al.; TPU v4)"),
    "odd": (_one("odd", gv.odd_graph, _int), "odd:4", "Odd graph O_k (distance-regular)"),
    "petersen": (_fixed("petersen", gv.petersen), "petersen", "Petersen graph (= odd:3)"),
    "linegraph_petersen": (_fixed("linegraph_petersen", gv.linegraph_petersen), "linegraph_petersen",
                           "line graph of the Petersen graph (distance-regular)"),
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
    if kind not in FAMILIES or (not rest and not getattr(FAMILIES[kind][0], "no_args", False)):
        raise SpecError(f"unknown topology spec {spec!r}; accepted: {accepted_forms()}")
    return FAMILIES[kind][0](rest.split(":") if rest else [], **link_params)
