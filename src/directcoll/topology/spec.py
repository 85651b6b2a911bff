"""Spec strings for topologies: ``torus:8x8``, ``mesh:4x4``, ``ring:16``, ``ring:16:uni``, ``hypercube:10``,
``hyperx:64x64``, ``hammingmesh:2x2:32x32``, ``complete:127``, the generative topologies of
:mod:`directcoll.topology.generative` (``bipartite:4``, ``hamming:2:3``, ``circulant:16:3,4``, ``kautz:2:3``,
``petersen``, ...; docs/topologies_generative.md), and the expansions of Zhao et al. Sec. 5 nested freely
around them (docs/expansions.md)::

    spec     := operator | family
    operator := "line" ["^" K] "(" spec ")"            line graph L^K (Def. 12), K >= 1
              | "degree" "(" spec "," n ")"            degree expansion G * n (Def. 13), n >= 1
              | "product" "(" spec ("," spec)+ ")"     Cartesian product G1 x G2 x ... (Def. 3)
              | "power" "(" spec "," n ")"             Cartesian power G^(box n), n >= 1
              | "bidir" "(" spec ")"                   G united with its transpose (App. A.6)
              | "punctured" "(" spec ("," KEY "=" INT)+ ")"   KEY: links, nodes, seed (at least links or
                                                       nodes): random cables / compute nodes removed (failures)
    family   := KIND[:ARGS]                            a family of FAMILIES or ALIASES

e.g. ``line^3(circulant:16:3,4)``, ``power(product(ring:4:uni,ring:8:uni),2)``,
``punctured(torus:4x4,links=2,seed=1)`` (:func:`directcoll.topology.expansions.punctured`). Family arguments may contain
commas (circulant offsets, twisted-torus twists): inside an operator, a comma not followed by a letter continues
the family's argument list (every spec starts with a letter), and the trailing ``,n`` of ``degree``/``power`` is
always their n (so ``degree(circulant:16:3,4,2)`` is C(16,{3,4}) * 2, and ``degree(circulant:16:3,4)`` is
C(16,{3}) * 4). Spaces are ignored and names are case-insensitive.

New families register a parser in :data:`FAMILIES` (aliases in :data:`ALIASES`) that reads the arguments into a
generator call, and the generator's sizes in :data:`_SIZES`; a parse error says what was expected and where.

Numbers are ASCII decimal digits (no sign, no Unicode digits) within their field's range (:data:`MAX_INT`, and
smaller bounds for exponents). Every spec is sized from the spec alone before it is built (:func:`estimate`,
:func:`size_of`) and refused above :data:`MAX_NODES` nodes, :data:`MAX_LINKS` links or the memory budget
(:func:`check_spec`, :mod:`directcoll.resources`).
"""

from __future__ import annotations

import difflib
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from directcoll.errors import SpecError
from directcoll.resources import check_memory
from directcoll.topology import expansions as ex
from directcoll.topology import generative as gv
from directcoll.topology import generators as gen
from directcoll.topology.model import Topology

#: Largest number of nodes (compute nodes and switches) of any topology a spec may name, after every operator: the
#: hard cap that keeps a typo from running for hours whatever the memory budget (:func:`check_spec`).
MAX_NODES = 2**30
#: Largest number any spec field may hold (a signed 64-bit integer: numpy's int64 and rustworkx's seeds).
MAX_INT = 2**63 - 1
#: Largest seed of ``jellyfish``/``xpander``/``punctured``: a redrawn seed (seed + MAX_DRAWS) stays a 64-bit int.
MAX_SEED = gv.MAX_SEED
#: Largest K of ``line^K`` and n of ``power(SPEC,n)`` (with at least 2 nodes every power doubles N; a line graph
#: of a degree-1 graph stays the same size, so K is bounded on its own).
MAX_EXPONENT = 64

#: Largest k of the Odd graph ``odd:k`` (C(2k-1, k-1) nodes, built by a Python loop: odd:12 has 1,352,078).
MAX_ODD_K = 12

_DIGITS = re.compile(r"[0-9]+")
_SHAPE = re.compile(r"[0-9]+(x[0-9]+)*")


def _number(what: str, field: str, text: str, hi: int = MAX_INT) -> int:
    """An ASCII decimal integer in 0..hi (no sign, no Unicode digits; checked before converting, so a
    10,000-digit number costs nothing)."""
    if not _DIGITS.fullmatch(text):
        raise SpecError(f"{what}: expected a positive integer for {field} (ASCII digits 0-9), got {_show(text)}")
    digits = text.lstrip("0") or "0"
    if len(digits) > len(str(hi)) or int(digits) > hi:
        shown = text if len(text) <= 24 else f"{text[:10]}...({len(text)} digits)"
        raise SpecError(f"{what}: {field} must be at most {hi:,}, got {shown}")
    return int(digits)


def _shape(kind: str, text: str) -> tuple[int, ...]:
    if not _SHAPE.fullmatch(text):
        raise SpecError(f"{kind}: expected dimension sizes like 8x8 or 4x4x4, got {_show(text)}")
    return tuple(_number(kind, "a dimension size", t) for t in text.split("x"))


def _int(kind: str, text: str, field: str = "the argument", hi: int = MAX_INT) -> int:
    return _number(kind, field, text, hi)


def _plan(read: Callable) -> Callable:
    """A :data:`FAMILIES` parser from ``read(args) -> (generator, positional args, keyword args)``: parsing the
    arguments (``parser.read``) is kept apart from building, so :func:`estimate` can size a spec without
    building it."""
    def parse(args: list[str], **kw) -> Topology:
        fn, a, k = read(args)
        return fn(*a, **k, **kw)
    parse.read = read
    return parse


@_plan
def _ring(args: list[str]):
    if len(args) == 2 and args[1] in ("uni", "bi"):
        return gen.ring, (_int("ring", args[0], "N"),), {"bidirectional": args[1] == "bi"}
    if len(args) != 1:
        raise SpecError(f"ring: expected ring:N or ring:N:uni, got {_show(':'.join(args))}")
    return gen.ring, (_int("ring", args[0], "N"),), {}


def _one(kind: str, fn: Callable, convert: Callable, field: str = "the argument", hi: int = MAX_INT) -> Callable:
    def read(args: list[str]):
        if len(args) != 1:
            raise SpecError(f"{kind}: expected one argument after '{kind}:', got {_show(':'.join(args))}")
        value = convert(kind, args[0]) if convert is _shape else convert(kind, args[0], field, hi)
        return fn, (value,), {}
    return _plan(read)


@_plan
def _torus(args: list[str]):
    if len(args) == 2 and args[1] == "simple":
        return gen.torus, (_shape("torus", args[0]),), {"simple": True}
    if len(args) != 1:
        raise SpecError(f"torus: expected torus:AxB[x...] or torus:AxB[x...]:simple, got {_show(':'.join(args))}")
    return gen.torus, (_shape("torus", args[0]),), {}


@_plan
def _shiftedring(args: list[str]):
    if len(args) not in (1, 2):
        raise SpecError(f"shiftedring: expected shiftedring:N or shiftedring:N:s, got {_show(':'.join(args))}")
    stride = _int("shiftedring", args[1], "s") if len(args) == 2 else None
    return gv.shifted_ring, (_int("shiftedring", args[0], "N"), stride), {}


@_plan
def _hammingmesh(args: list[str]):
    if len(args) != 2:
        raise SpecError("hammingmesh: expected hammingmesh:AxB:XxY (board a x b, grid of x x y boards), "
                        f"got {_show(':'.join(args))}")
    board, grid = _shape("hammingmesh", args[0]), _shape("hammingmesh", args[1])
    if len(board) != 2 or len(grid) != 2:
        raise SpecError(f"hammingmesh: board and grid must both be 2D (AxB:XxY), got {_show(':'.join(args))}")
    return gen.hammingmesh, (board, grid), {}


def _ints(kind: str, form: str, fn: Callable, fields: tuple[tuple[str, int], ...]) -> Callable:
    """``kind:a:b...``: one integer per (field name, upper bound) of ``fields``."""
    def read(args: list[str]):
        if len(args) != len(fields):
            raise SpecError(f"{kind}: expected {form}, got {_show(':'.join(args))}")
        return fn, tuple(_int(kind, a, f, hi) for a, (f, hi) in zip(args, fields, strict=True)), {}
    return _plan(read)


def _seeded(kind: str, fn: Callable) -> Callable:
    def read(args: list[str]):
        if len(args) not in (2, 3):
            raise SpecError(f"{kind}: expected {kind}:N:d or {kind}:N:d:SEED, got {_show(':'.join(args))}")
        fields = (("N", MAX_INT), ("d", MAX_INT), ("SEED", MAX_SEED))
        return fn, tuple(_int(kind, a, f, hi) for a, (f, hi) in zip(args, fields, strict=False)), {}
    return _plan(read)


def _fixed(kind: str, fn: Callable) -> Callable:
    def read(args: list[str]):
        if args:
            raise SpecError(f"{kind}: takes no arguments (the spec is just {kind!r}), got {_show(':'.join(args))}")
        return fn, (), {}
    parse = _plan(read)
    parse.no_args = True
    return parse


@_plan
def _circulant(args: list[str]):
    form = "circulant:N:a1,a2,... (bidirectional), circulant:N:a1,a2,...:uni or circulant:N:opt4"
    if len(args) == 3 and args[2] in ("uni", "bi"):
        bidirectional = args[2] == "bi"
        args = args[:2]
    else:
        bidirectional = True
    if len(args) != 2 or not args[1]:
        raise SpecError(f"circulant: expected {form}, got {_show(':'.join(args))}")
    n = _int("circulant", args[0], "N")
    if args[1] == "opt4":
        if not bidirectional:
            raise SpecError("circulant: opt4 (Theorem 22) is a bidirectional circulant; drop ':uni'")
        return gv.circulant_opt4, (n,), {}
    offsets = [_int("circulant", a, "an offset") for a in args[1].split(",")]
    return gv.circulant, (n, offsets), {"bidirectional": bidirectional}


@_plan
def _twistedtorus(args: list[str]):
    if len(args) not in (1, 2) or (len(args) == 2 and not args[1]):
        raise SpecError("twistedtorus: expected twistedtorus:AxB[:t] or twistedtorus:AxBxC[:t1,t2] "
                        f"(one twist per dimension but the last), got {_show(':'.join(args))}")
    shape = _shape("twistedtorus", args[0])
    twists = None if len(args) == 1 else [_int("twistedtorus", t, "a twist") for t in args[1].split(",")]
    return gv.twisted_torus, (shape, twists), {}


#: kind -> (parser, example spec, one-line description)
FAMILIES: dict[str, tuple[Callable, str, str]] = {
    "torus": (_torus, "torus:8x8 | torus:3x3x2:simple",
              "D-dimensional torus, any sizes >= 2; ':simple': one cable per size-2 dimension"),
    "mesh": (_one("mesh", gen.mesh, _shape), "mesh:4x4", "D-dimensional mesh"),
    "ring": (_ring, "ring:16 | ring:16:uni", "bidirectional or unidirectional ring"),
    "hypercube": (_one("hypercube", gen.hypercube, _int, "k", 30), "hypercube:10", "hypercube of 2^k nodes"),
    "hyperx": (_one("hyperx", gen.hyperx, _shape), "hyperx:64x64", "HyperX (all-to-all rows)"),
    "complete": (_one("complete", gen.complete, _int, "n"), "complete:8", "complete graph K_n (fully connected)"),
    "hammingmesh": (_hammingmesh, "hammingmesh:2x2:32x32", "HammingMesh: board AxB, grid XxY"),
    "bipartite": (_one("bipartite", gv.bipartite, _int, "n"), "bipartite:4", "complete bipartite graph K_{n,n}"),
    "bipartite_minus_matching": (_one("bipartite_minus_matching", gv.bipartite_minus_matching, _int, "n"),
                                 "bipartite_minus_matching:5", "K_{n,n} minus a perfect matching"),
    "hamming": (_ints("hamming", "hamming:n:q", gv.hamming, (("n", 30), ("q", MAX_INT))), "hamming:2:3",
                "Hamming graph H(n,q)"),
    "circulant": (_circulant, "circulant:16:3,4 | circulant:16:3,4:uni | circulant:16:opt4",
                  "circulant C(N,{a1..ak}); opt4: Theorem 22's minimum-diameter degree-4 choice"),
    "genkautz": (_ints("genkautz", "genkautz:d:N", gv.generalized_kautz, (("d", MAX_INT), ("N", MAX_INT))),
                 "genkautz:2:10",
                 "generalized Kautz digraph Pi_{d,N} (self-loops dropped)"),
    "kautz": (_ints("kautz", "kautz:d:D", gv.kautz, (("d", MAX_INT), ("D", 30))), "kautz:2:3",
              "Kautz digraph K(d,D), d^D+d^(D-1) nodes"),
    "debruijn": (_ints("debruijn", "debruijn:d:D", gv.de_bruijn, (("d", MAX_INT), ("D", 30))), "debruijn:2:3",
                 "de Bruijn digraph B(d,D), d^D nodes (self-loops dropped)"),
    "twistedhypercube": (_one("twistedhypercube", gv.twisted_hypercube, _int, "k", 30), "twistedhypercube:3",
                         "twisted hypercube (Esfahanian et al.)"),
    "twistedtorus": (_twistedtorus, "twistedtorus:4x8:4 | twistedtorus:4x4x8:4,4",
                     "twisted torus (Camara et al.; TPU v4)"),
    "odd": (_one("odd", gv.odd_graph, _int, "k", MAX_ODD_K), "odd:4", "Odd graph O_k (distance-regular)"),
    "petersen": (_fixed("petersen", gv.petersen), "petersen", "Petersen graph (= odd:3)"),
    "linegraph_petersen": (_fixed("linegraph_petersen", gv.linegraph_petersen), "linegraph_petersen",
                           "line graph of the Petersen graph (distance-regular)"),
    "jellyfish": (_seeded("jellyfish", gv.jellyfish), "jellyfish:100:4 | jellyfish:100:4:7",
                  "Jellyfish: random d-regular graph on N nodes, seeded (default seed 0)"),
    "xpander": (_seeded("xpander", gv.xpander), "xpander:100:4 | xpander:100:4:7",
                "Xpander: random lift of K_{d+1}, N a multiple of d + 1, seeded (default seed 0)"),
    "dbt": (_one("dbt", gv.double_binary_tree, _int, "N"), "dbt:16",
            "double binary tree topology (NCCL's two trees, one cable per tree edge)"),
}


@_plan
def _uniring(args: list[str]):
    if len(args) != 1:
        raise SpecError(f"uniring: expected uniring:N (= ring:N:uni), got {_show(':'.join(args))}")
    return gen.ring, (_int("uniring", args[0], "N"),), {"bidirectional": False}


#: distreg:NAME -> (spec it stands for, description). Names of Zhao et al. Table 8 that directcoll builds.
DISTREG: dict[str, tuple[str, str]] = {
    "petersen": ("petersen", "Petersen graph O_3 (10 nodes, degree 3)"),
    "linegraph_petersen": ("linegraph_petersen", "line graph of the Petersen graph (15 nodes, degree 4)"),
    "octahedron": ("circulant:6:1,2", "octahedron J(4,2) = K_6 minus a perfect matching = C(6,{1,2})"),
    "paley9": ("hamming:2:3", "Paley graph P9 = H(2,3)"),
}
_DISTREG_FORMS = ("distreg:NAME, NAME one of petersen, linegraph_petersen, octahedron, paley9, oddK, qK, "
                  "bipartite:n, bipartite_minus_matching:n, hamming:n:q, complete:n")


@_plan
def _distreg(args: list[str]):
    if not args or not args[0]:
        raise SpecError(f"distreg: expected a distance-regular graph name: {_DISTREG_FORMS}")
    name, rest = args[0], args[1:]
    if name in DISTREG and not rest:
        return _read_family(DISTREG[name][0])
    for prefix, kind in (("odd", "odd"), ("q", "hypercube")):
        if name.startswith(prefix) and _DIGITS.fullmatch(name[len(prefix):]) and not rest:
            return FAMILIES[kind][0].read([name[len(prefix):]])
    if name in ("bipartite", "bipartite_minus_matching", "hamming", "complete", "odd"):
        return FAMILIES[name][0].read(rest)
    raise SpecError(f"distreg: unknown distance-regular graph {_show(':'.join(args))}; accepted: {_DISTREG_FORMS}")


#: Other names for families: kind -> (parser, example spec, one-line description). The topology they build
#: carries the canonical spec (``uniring:8`` builds ``ring:8:uni``).
ALIASES: dict[str, tuple[Callable, str, str]] = {
    "uniring": (_uniring, "uniring:8", "unidirectional ring (= ring:N:uni), the paper's UniRing"),
    "twisted-hypercube": (FAMILIES["twistedhypercube"][0], "twisted-hypercube:3", "= twistedhypercube:k"),
    "twisted-torus": (FAMILIES["twistedtorus"][0], "twisted-torus:4x8:4", "= twistedtorus:..."),
    "distreg": (_distreg, "distreg:petersen | distreg:odd4 | distreg:bipartite_minus_matching:5",
                "distance-regular graphs of Zhao et al. Table 8 by name"),
    "shiftedring": (_shiftedring, "shiftedring:16 | shiftedring:16:5",
                    "TopoOpt's ShiftedRing C(N,{1,s}) (Zhao et al. baseline; its spec is circulant:N:1,s)"),
}

#: Expansion operators (Zhao et al. Sec. 5): name -> (form, description).
OPERATORS: dict[str, tuple[str, str]] = {
    "line": ("line(SPEC) | line^K(SPEC)", "line graph L^K(G) (Def. 12): d^K N nodes, degree d"),
    "degree": ("degree(SPEC,n)", "degree expansion G * n (Def. 13): nN nodes, degree nd"),
    "product": ("product(SPEC,SPEC,...)", "Cartesian product (Def. 3): prod N_i nodes, degree sum d_i"),
    "power": ("power(SPEC,n)", "Cartesian power G^(box n): N^n nodes, degree nd"),
    "bidir": ("bidir(SPEC)", "G united with its transpose (App. A.6): N nodes, degree 2d"),
    "punctured": ("punctured(SPEC,links=K,nodes=K,seed=S)",
                  "K random cables (both directions) and/or K random compute nodes removed, drawn by seed S "
                  "(Basu et al. Sec. 5.2 failure study); refused if the rest is disconnected"),
}
#: keyword arguments of ``punctured(...)`` and their defaults
PUNCTURED_KEYS = {"links": 0, "nodes": 0, "seed": 0}


#: Longest spec string and deepest nesting of operators accepted (the parser is recursive).
MAX_SPEC_LENGTH = 10_000
MAX_DEPTH = 32
#: Where the accepted forms are listed, for error messages.
LIST_COMMAND = "`directcoll topology families`"


def accepted_forms() -> str:
    """Every family, alias and operator form, comma-separated (``directcoll topology families`` lists them)."""
    families = [example for _, example, _ in FAMILIES.values()]
    aliases = [example for _, example, _ in ALIASES.values()]
    return ", ".join(families + aliases + [form for form, _ in OPERATORS.values()])


def families() -> list[dict]:
    """Every family, alias and operator a spec may name: dicts with ``name``, ``type`` (family, alias or
    operator), ``form`` (example specs, ``|``-separated) and ``description`` (``directcoll topology families``)."""
    rows = [{"name": k, "type": "family", "form": form, "description": d} for k, (_, form, d) in FAMILIES.items()]
    rows += [{"name": k, "type": "alias", "form": form, "description": d} for k, (_, form, d) in ALIASES.items()]
    rows += [{"name": k, "type": "operator", "form": form, "description": d} for k, (form, d) in OPERATORS.items()]
    return rows


# -- the spec tree ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SpecNode:
    """One node of a parsed spec: a family leaf (``op == "family"``, ``text`` its spec, e.g.
    ``circulant:16:3,4``) or an operator of :data:`OPERATORS` over ``children`` with integer parameter ``n``
    (K of ``line^K``, n of ``degree``/``power``; None for ``product``/``bidir``/``punctured``) and keyword
    arguments ``kwargs`` (``punctured``: (key, value) pairs of :data:`PUNCTURED_KEYS`, in that order)."""

    op: str
    text: str = ""
    children: tuple[SpecNode, ...] = ()
    n: int | None = None
    kwargs: tuple[tuple[str, int], ...] = ()

    def __str__(self) -> str:
        if self.op == "family":
            return self.text
        inner = ",".join(str(c) for c in self.children)
        if self.op == "punctured":
            return ex.punctured_spec(inner, **dict(self.kwargs))
        if self.op == "line":
            return f"line({inner})" if self.n == 1 else f"line^{self.n}({inner})"
        if self.op in ("degree", "power"):
            return f"{self.op}({inner},{self.n})"
        return f"{self.op}({inner})"


class _Parser:
    """Recursive descent over the grammar of the module docstring, tracking parentheses."""

    def __init__(self, original: str) -> None:
        self.original = original
        self.s = "".join(str(original).split()).lower()
        self.i = 0
        self.depth = 0  # open operator parentheses

    def fail(self, expected: str) -> SpecError:
        got = repr(self.s[self.i]) if self.i < len(self.s) else "the end"
        return SpecError(f"topology spec {_show(self.original)}: expected {expected} at position {self.i}, got "
                         f"{got}; the forms: {LIST_COMMAND}")

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def expect(self, char: str, expected: str) -> None:
        if self.peek() != char:
            raise self.fail(expected)
        self.i += 1

    def integer(self, what: str, hi: int) -> int:
        """An ASCII decimal integer in 0..hi at the current position."""
        j = self.i
        while self.i < len(self.s) and self.s[self.i] in "0123456789":
            self.i += 1
        if j == self.i:
            raise self.fail(what)
        return _number(f"topology spec {_show(self.original)}", what, self.s[j:self.i], hi)

    def spec(self, *, trailing_int: bool = False) -> SpecNode:
        j = self.i
        while self.i < len(self.s) and (self.s[self.i].isalpha() or self.s[self.i] == "_"):
            self.i += 1
        word = self.s[j:self.i]
        if word in OPERATORS and self.peek() in ("(", "^"):
            if self.depth >= MAX_DEPTH:
                raise SpecError(f"topology spec {_show(self.original)}: operators nest more than {MAX_DEPTH} deep")
            return self.operator(word)
        self.i = j
        return self.family(trailing_int)

    def family(self, trailing_int: bool) -> SpecNode:
        """KIND[:ARGS] up to the next ',' or ')' at this depth; ',<digits...>' segments continue it. With
        ``trailing_int`` (inside degree/power) the last ',<int>' before ')' is left for the operator."""
        def segment_end(k: int) -> int:
            while k < len(self.s) and self.s[k] not in ",()":
                k += 1
            return k

        start = self.i
        end = segment_end(start)
        if end < len(self.s) and self.s[end] == "(":
            raise self.fail(f"an operator ({', '.join(OPERATORS)}) before '(' or a family spec without "
                            "parentheses")
        cuts = []  # positions of the commas that continued the family (a new spec starts with a letter)
        while end < len(self.s) and self.s[end] == "," and (self.depth == 0 or (
                self.s[end + 1: end + 2] not in ("", ")") and not self.s[end + 1].isalpha())):
            cuts.append(end)
            end = segment_end(end + 1)
        if trailing_int and cuts and self.s[end: end + 1] == ")" and _DIGITS.fullmatch(self.s[cuts[-1] + 1: end]):
            end = cuts[-1]
        text = self.s[start:end]
        if not text:
            raise self.fail("a topology spec (a family such as ring:8, or an operator such as line(...))")
        self.i = end
        return SpecNode("family", text)

    def operator(self, op: str) -> SpecNode:
        n = None
        if op == "line":
            n = 1
            if self.peek() == "^":
                self.i += 1
                n = self.integer(f"an integer exponent K in 1..{MAX_EXPONENT} after 'line^'", MAX_EXPONENT)
        elif self.peek() == "^":
            raise self.fail(f"'(' after {op!r} (only line takes an exponent: line^K(SPEC))")
        self.expect("(", f"'(' after {op!r}: {OPERATORS[op][0]}")
        self.depth += 1
        children = [self.spec(trailing_int=op in ("degree", "power"))]
        if op in ("degree", "power"):
            self.expect(",", f"',' and the integer n of {OPERATORS[op][0]}")
            hi = MAX_EXPONENT if op == "power" else MAX_NODES
            n = self.integer(f"the integer n of {OPERATORS[op][0]} (1..{hi:,})", hi)
        elif op == "product":
            while self.peek() == ",":
                self.i += 1
                children.append(self.spec())
            if len(children) < 2:
                raise self.fail("',' and a second factor: product(SPEC,SPEC,...) needs at least two")
        kwargs = self.keywords(op) if op == "punctured" else ()
        self.expect(")", f"')' closing {OPERATORS[op][0]}")
        self.depth -= 1
        if n is not None and n < 1:
            raise SpecError(f"topology spec {_show(self.original)}: {op} needs an integer >= 1, got {n}")
        return SpecNode(op, "", tuple(children), n, kwargs)

    def keywords(self, op: str) -> tuple[tuple[str, int], ...]:
        """``,KEY=INT`` arguments of ``punctured`` (keys of :data:`PUNCTURED_KEYS`, each at most once, links or
        nodes at least once), returned in :data:`PUNCTURED_KEYS` order."""
        form = OPERATORS[op][0]
        got: dict[str, int] = {}
        while self.peek() == ",":
            self.i += 1
            j = self.i
            while self.i < len(self.s) and self.s[self.i].isalpha():
                self.i += 1
            key = self.s[j:self.i]
            if key not in PUNCTURED_KEYS:
                self.i = j
                raise self.fail(f"a keyword of {form} ({', '.join(PUNCTURED_KEYS)})")
            if key in got:
                self.i = j
                raise self.fail(f"each keyword of {form} once ({key!r} is repeated)")
            self.expect("=", f"'=' and an integer after {key!r} in {form}")
            hi = MAX_SEED if key == "seed" else MAX_INT
            got[key] = self.integer(f"a non-negative integer for {key!r} in {form} (0..{hi:,})", hi)
        if not ({"links", "nodes"} & set(got)):
            raise self.fail(f"',links=K' or ',nodes=K': {form} needs at least one of them")
        return tuple((k, got[k]) for k in PUNCTURED_KEYS if k in got)

    def parse(self) -> SpecNode:
        if not self.s:
            raise SpecError(f"empty topology spec; the forms: {LIST_COMMAND}")
        if len(self.s) > MAX_SPEC_LENGTH:
            raise SpecError(f"topology spec {_show(self.original)} is {len(self.s):,} characters long; at most "
                            f"{MAX_SPEC_LENGTH:,} are accepted")
        node = self.spec()
        if self.i != len(self.s):
            raise self.fail("the end of the spec (unbalanced ')' or text after the topology)")
        return node


def parse_tree(spec: str) -> SpecNode:
    """Parse a spec string into a :class:`SpecNode` tree without building anything (family arguments are
    checked when the tree is built).

    Raises:
        SpecError: not a string, or malformed operators or parentheses; the message says what was expected and
            where.
    """
    if not isinstance(spec, str):
        raise SpecError(f"a topology spec is a string such as 'torus:8x8', got {type(spec).__name__} "
                        f"{_show(repr(spec))}")
    return _Parser(spec).parse()


def _show(text) -> str:
    """repr of a spec for a message, shortened past 80 characters."""
    text = str(text)
    return repr(text) if len(text) <= 80 else repr(text[:60]) + f"... ({len(text):,} characters)"


def _read_family(text: str):
    """(generator, positional args, keyword args) of a family spec such as ``torus:8x8``, without building.

    Raises:
        SpecError: an unknown family (with the closest names) or malformed arguments.
    """
    kind, _, rest = text.partition(":")
    table = FAMILIES if kind in FAMILIES else ALIASES
    if kind not in table:
        names = list(FAMILIES) + list(ALIASES) + list(OPERATORS)
        close = difflib.get_close_matches(kind, names, n=3)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise SpecError(f"unknown topology spec {_show(text)}: no family {_show(kind)}{hint} "
                        f"(list them: {LIST_COMMAND})")
    parser, example, _ = table[kind]
    if not rest and not getattr(parser, "no_args", False):
        raise SpecError(f"topology spec {_show(text)}: {kind} needs arguments; accepted: {example}")
    try:
        return parser.read(rest.split(":") if rest else [])
    except SpecError as exc:  # "kind: ..." -> "topology spec 'kind:args': ..." (the whole spec named)
        message = str(exc)
        if not message.startswith(f"{kind}:"):
            raise
        raise SpecError(f"topology spec {_show(text)}:{message[len(kind) + 1:]}") from None


def _family(text: str, **link_params) -> Topology:
    fn, args, kwargs = _read_family(text)
    try:
        return fn(*args, **kwargs, **link_params)
    except SpecError as exc:  # the generator's "kind: ..." -> "topology spec 'kind:args': ..."
        message, kind = str(exc), text.partition(":")[0]
        if message.startswith(f"{kind}:") and not message.startswith(f"{kind}: "):
            raise  # it names the canonical spec already, e.g. "circulant:4: offset 0 ..."
        rest = message[len(kind) + 2:] if message.startswith(f"{kind}: ") else message
        raise SpecError(f"topology spec {_show(text)}: {rest}") from None


# -- sizes from the spec alone ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Size:
    """What a spec will build, computed from the spec alone with Python ints (nothing is allocated).

    Attributes:
        nodes: compute nodes plus switches.
        links: directed links (an upper bound where a generator drops self-loops or ``punctured`` removes).
        max_out, max_in: upper bounds on the out- and in-degree of a node (line graphs multiply by them).
        nbytes: estimated peak memory of building it: the topology's arrays and the generator's intermediates
            (rustworkx graphs, Python objects, broadcast index arrays), inputs of operators included.
    """

    nodes: int
    links: int
    max_out: int
    max_in: int
    nbytes: float


#: Estimated bytes per directed link and per node of a built Topology (its four link arrays, the sparse
#: adjacency built to check connectivity and the generator's temporaries), and per link and node per grid
#: dimension of a Cayley generator (coordinates): fitted to the peak resident memory of building torus, complete,
#: hypercube, Kautz, jellyfish, ... topologies with a few million links.
BYTES_PER_LINK, BYTES_PER_NODE, BYTES_PER_LINK_DIM, BYTES_PER_NODE_DIM = 64, 32, 12, 8
#: Operators build index arrays over the new links (broadcasts, sorts, cable pairing) on top of that.
BYTES_PER_OPERATOR_LINK = {"line": 70, "degree": 80, "power": 125, "product": 125, "bidir": 70,
                           "punctured": 180}
#: rustworkx's random regular graph and its edge list, per undirected edge (jellyfish).
BYTES_PER_RUSTWORKX_EDGE = 60
#: Python objects per node and per undirected edge of the Odd graph's construction.
BYTES_PER_PYTHON_NODE, BYTES_PER_PYTHON_EDGE = 90, 60
#: Hard cap on directed links after every operator.
MAX_LINKS = 2**34


def _float(n: int) -> float:
    return float(n) if n.bit_length() < 1000 else math.inf


def _count(n: int) -> str:
    """A count for a message: exact below 10^15, else its power of two (no huge decimal conversions)."""
    return f"{n:,}" if n < 10**15 else f"about 2^{n.bit_length() - 1}"


def _pow(base: int, exp: int) -> int:
    """base ** exp, or a number above every cap when that would be huge (exp is cut at 64 for base >= 2)."""
    if exp < 0:
        return 0
    return base ** min(exp, 64) if base >= 2 else base ** exp


def _sized(nodes: int, links: int, out: int, inn: int | None = None, *, dims: int = 0, extra: float = 0.0) -> Size:
    nbytes = (BYTES_PER_LINK * _float(links) + BYTES_PER_NODE * _float(nodes)
              + dims * (BYTES_PER_LINK_DIM * _float(links) + BYTES_PER_NODE_DIM * _float(nodes))
              + (_float(extra) if isinstance(extra, int) else extra))
    return Size(nodes, links, out, out if inn is None else inn, nbytes)


def _cayley_size(n: int, k: int, dims: int, extra: float = 0.0) -> Size:
    return _sized(n, n * k, k, dims=dims, extra=extra)


def _pi_size(d: int, n: int) -> Size:
    g = math.gcd(d, n) or 1
    return _sized(n, n * d, d, g * -(-d // g), extra=30 * _float(n * d))


def _mesh_size(shape) -> Size:
    n = math.prod(shape)
    if min(shape) < 1:
        return _sized(0, 0, 0)
    return _sized(n, 2 * sum(n // d * (d - 1) for d in shape), 2 * len(shape), dims=len(shape))


def _hammingmesh_size(board, grid) -> Size:
    (a, b), (x, y) = board, grid
    rows, cols = x * a, y * b
    links = 2 * (rows * y * max(b - 1, 0) + cols * x * max(a - 1, 0) + 2 * rows * y + 2 * cols * x)
    return _sized(rows * cols + rows + cols, links, max(8, 2 * x, 2 * y), dims=2)


def _odd_size(k: int) -> Size:
    k_cut = min(k, 64)  # C(127, 63) is over every cap already: no huge binomials for direct calls
    n = math.comb(2 * k_cut - 1, k_cut - 1) if k >= 1 else 0
    return _sized(n, n * k, k, extra=BYTES_PER_PYTHON_NODE * _float(n) + BYTES_PER_PYTHON_EDGE * _float(n * k) / 2)


def _jellyfish_size(n: int, d: int, seed: int = 0) -> Size:
    return _sized(n, n * d, d, extra=BYTES_PER_RUSTWORKX_EDGE * _float(n * d) / 2)


def _xpander_size(n: int, d: int, seed: int = 0) -> Size:
    return _sized(n, n * d, d, extra=25 * _float(n * d) + BYTES_PER_PYTHON_EDGE * _float(d * (d + 1)) / 2)


#: generator -> its sizes from the same arguments (:func:`estimate`); every generator FAMILIES can call is here.
_SIZES: dict[Callable, Callable[..., Size]] = {
    gen.torus: lambda shape, simple=False: _cayley_size(
        math.prod(shape), sum(1 if simple and d == 2 else 2 for d in shape), len(shape)),
    gen.mesh: _mesh_size,
    gen.ring: lambda n, bidirectional=True: _cayley_size(n, 2 if bidirectional else 1, 1),
    gen.hypercube: lambda k: _cayley_size(_pow(2, k), k, k, extra=16 * _float(k * _pow(2, k))),
    gen.hyperx: lambda shape: _cayley_size(math.prod(shape), sum(d - 1 for d in shape), len(shape)),
    gen.hammingmesh: _hammingmesh_size,
    gen.complete: lambda n: _cayley_size(n, max(n - 1, 0), 1),
    gv.bipartite: lambda n: _cayley_size(2 * n, n, 2, extra=100 * n),
    gv.bipartite_minus_matching: lambda n: _cayley_size(2 * n, max(n - 1, 0), 2, extra=100 * n),
    gv.hamming: lambda n, q: _cayley_size(_pow(q, n), n * max(q - 1, 0), n),
    gv.circulant: lambda n, offsets, bidirectional=True: _cayley_size(
        n, len(offsets) * (2 if bidirectional else 1), 1),
    gv.circulant_opt4: lambda n: _cayley_size(n, 4, 1),
    gv.shifted_ring: lambda n, stride=None: _cayley_size(n, 4, 1),
    gv.generalized_kautz: _pi_size,
    gv.kautz: lambda d, big_d: _pi_size(d, _pow(d, big_d) + _pow(d, big_d - 1) if big_d >= 1 else 0),
    gv.de_bruijn: lambda d, big_d: _pi_size(d, _pow(d, big_d)),
    gv.twisted_hypercube: lambda k: _sized(_pow(2, k), k * _pow(2, k), k, extra=30 * _float(k * _pow(2, k))),
    gv.twisted_torus: lambda shape, twists=None: _cayley_size(math.prod(shape), 2 * len(shape), len(shape)),
    gv.odd_graph: _odd_size,
    gv.petersen: lambda: _sized(10, 30, 3),
    gv.linegraph_petersen: lambda: _sized(15, 60, 4),
    gv.jellyfish: _jellyfish_size,
    gv.xpander: _xpander_size,
    gv.double_binary_tree: lambda n: _sized(n, 4 * max(n - 1, 0), 4, extra=130 * n),
}


def _operator_size(node: SpecNode, kids: list[Size]) -> Size:
    per_link = BYTES_PER_OPERATOR_LINK[node.op]
    below = sum(k.nbytes for k in kids)
    g = kids[0]
    if node.op == "line":
        nodes, links, nbytes = g.nodes, g.links, below
        for _ in range(node.n):
            nodes, links = links, links * g.max_out
            nbytes += per_link * _float(links) + BYTES_PER_NODE * _float(nodes)
            if nodes > MAX_NODES:
                break
        return Size(nodes, links, g.max_out, g.max_in, nbytes)
    if node.op == "degree":
        n = node.n
        nodes, links, out, inn = n * g.nodes, n * n * g.links, n * g.max_out, n * g.max_in
    elif node.op in ("power", "product"):
        kids = kids * node.n if node.op == "power" else kids  # n <= MAX_EXPONENT
        nodes, links = 1, 0
        for k in kids:  # |V(A x B)| = |V(A)| |V(B)|, |E(A x B)| = |E(A)| |V(B)| + |E(B)| |V(A)|
            nodes, links = nodes * k.nodes, links * k.nodes + k.links * nodes  # O(factors) multiplications
        out, inn = sum(k.max_out for k in kids), sum(k.max_in for k in kids)
    elif node.op == "bidir":
        nodes, links, out = g.nodes, 2 * g.links, g.max_out + g.max_in
        inn = out
    else:  # punctured: at most what G has
        nodes, links, out, inn = g.nodes, g.links, g.max_out, g.max_in
        per_link = BYTES_PER_OPERATOR_LINK["punctured"]
    nbytes = below + per_link * _float(links) + BYTES_PER_NODE * (1 + len(kids)) * _float(nodes)
    return Size(nodes, links, out, inn, nbytes)


def _size(node: SpecNode) -> Size:
    if node.op == "family":
        fn, args, kwargs = _read_family(node.text)
        size = _SIZES[fn](*args, **kwargs)
    else:
        size = _operator_size(node, [_size(c) for c in node.children])
    if size.nodes > MAX_NODES or size.links > MAX_LINKS:
        raise SpecError(f"topology spec {_show(node)} has {_count(size.nodes)} nodes and {_count(size.links)} "
                        f"links; accepted: at most {MAX_NODES:,} nodes and {MAX_LINKS:,} links")
    return size


def size_of(spec) -> Size:
    """The :class:`Size` of a spec string or parsed :class:`SpecNode` tree, from the spec alone: cheap (Python
    ints, nothing built), so guards can size a request before anything is allocated.

    Raises:
        SpecError: a malformed spec, or one over :data:`MAX_NODES` nodes or :data:`MAX_LINKS` links (at any
            level of the tree), naming the spec and the limit.
    """
    return _size(spec if isinstance(spec, SpecNode) else parse_tree(spec))


def estimate(spec) -> tuple[int, int]:
    """(nodes, directed links) the spec will build (nodes include switches; links are an upper bound where
    self-loops are dropped or ``punctured`` removes some), from the spec alone; see :func:`size_of`.

    Raises:
        SpecError: a malformed spec, or one over the hard caps (:data:`MAX_NODES`, :data:`MAX_LINKS`).

    >>> estimate("line^2(torus:4x4)")
    (256, 1024)
    """
    size = size_of(spec)
    return size.nodes, size.links


def check_spec(spec) -> Size:
    """Refuse a spec (string or tree) that is malformed, over the hard caps or over the memory budget before
    anything is built; return its :class:`Size`.

    Raises:
        SpecError: malformed, or over :data:`MAX_NODES` nodes / :data:`MAX_LINKS` links.
        ResourceError: the estimated memory of building it is over the budget (:mod:`directcoll.resources`).
    """
    node = spec if isinstance(spec, SpecNode) else parse_tree(spec)
    size = _size(node)
    check_memory(f"topology {_show(node)} ({_count(size.nodes)} nodes, {_count(size.links)} links)", size.nbytes)
    return size


def _exact_ints(value):
    """The call's numbers as Python ints (tuples for sequences), or TypeError for anything else."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (list, tuple, np.ndarray)):
        return tuple(_exact_ints(v) for v in value)
    return operator.index(value)


def check_call(fn: Callable, args: tuple, kwargs: dict) -> None:
    """Size a direct call of a generator (``gen.torus((8, 8))``) before it builds: the same caps and memory
    budget as :func:`check_spec`. Arguments that are not integers are left to the generator's own checks.

    Raises:
        SpecError: over :data:`MAX_NODES` nodes or :data:`MAX_LINKS` links.
        ResourceError: building it would need more memory than the budget.
    """
    size_of_call = _SIZES.get(fn)
    if size_of_call is None:
        return
    try:
        params = {k: _exact_ints(v) for k, v in kwargs.items() if k not in ("link_bandwidth", "link_latency")}
        args = tuple(_exact_ints(a) for a in args)
        size = size_of_call(*args, **params)
    except (TypeError, ValueError, OverflowError):
        return  # not plain integers: the generator refuses them with its own message
    call = _show(f"{fn.__name__}({', '.join(_brief_arg(a) for a in args)})")
    if size.nodes > MAX_NODES or size.links > MAX_LINKS:
        raise SpecError(f"topology {call} has {_count(size.nodes)} nodes and {_count(size.links)} links; "
                        f"accepted: at most {MAX_NODES:,} nodes and {MAX_LINKS:,} links")
    check_memory(f"topology {call} ({_count(size.nodes)} nodes, {_count(size.links)} links)", size.nbytes)


def _brief_arg(value) -> str:
    """An argument of a generator call for a message: huge integers as powers of two, long tuples shortened."""
    if isinstance(value, tuple):
        items = [_brief_arg(v) for v in (value if len(value) <= 8 else value[:4] + value[-2:])]
        if len(value) <= 8:
            return f"({', '.join(items)}{',' if len(value) == 1 else ''})"
        return f"({', '.join(items[:4])}, ..., {', '.join(items[4:])}) ({len(value)} values)"
    return _count(value).replace(",", "") if isinstance(value, int) and not isinstance(value, bool) else repr(value)


def build_tree(node: SpecNode, **link_params) -> Topology:
    """Build the topology of a parsed spec tree (families get ``link_params``; expansions carry the link
    bandwidths and latencies of their inputs over), after :func:`check_spec` has sized it.

    Raises:
        SpecError: malformed family arguments, an impossible operator parameter, or a spec over the hard caps.
        ResourceError: building it would need more memory than the budget.
        TopologyError: an operator refuses its input (see :mod:`directcoll.topology.expansions`).
    """
    check_spec(node)
    return _build(node, **link_params)


def _build(node: SpecNode, **link_params) -> Topology:
    if node.op == "family":
        return _family(node.text, **link_params)
    kids = [_build(c, **link_params) for c in node.children]
    if node.op == "line":
        return ex.line_graph(kids[0], node.n)
    if node.op == "degree":
        return ex.degree_expansion(kids[0], node.n)
    if node.op == "power":
        return ex.cartesian_power(kids[0], node.n)
    if node.op == "product":
        return ex.cartesian_product(*kids)
    if node.op == "bidir":
        return ex.bidirectional(kids[0])
    if node.op == "punctured":
        return ex.punctured(kids[0], **dict(node.kwargs))
    raise SpecError(f"unknown operator {node.op!r}; accepted: {', '.join(OPERATORS)}")


def parse(spec: str, **link_params) -> Topology:
    """Build the topology a spec string names.

    Args:
        spec: ``KIND:ARGS`` as listed in :data:`FAMILIES` or :data:`ALIASES` (e.g. ``torus:64x64``), or
            expansion operators around them (module docstring), e.g. ``line^3(circulant:16:3,4)``.
            A Topology is returned unchanged.
        **link_params: ``link_bandwidth`` (bytes/s) and ``link_latency`` (s) passed to the generators.

    Raises:
        SpecError: an unknown family (with the closest names), malformed arguments or operators, a number
            outside its field's range, or a topology over :data:`MAX_NODES` nodes; the message names the spec,
            the field and what is accepted.
        ResourceError: building it would need more memory than the budget (:func:`check_spec`).
        TopologyError: an expansion refuses its input (e.g. degree expansion of a non-regular graph).
    """
    if isinstance(spec, Topology):
        return spec
    return build_tree(parse_tree(spec), **link_params)
