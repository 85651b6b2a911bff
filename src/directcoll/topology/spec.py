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

New families register a parser in :data:`FAMILIES` (aliases in :data:`ALIASES`); a parse error says what was
expected and where.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from directcoll.errors import SpecError
from directcoll.topology import expansions as ex
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


def _torus(args: list[str], **kw) -> Topology:
    if len(args) == 2 and args[1] == "simple":
        return gen.torus(_shape("torus", args[0]), simple=True, **kw)
    if len(args) != 1:
        raise SpecError(f"torus: expected torus:AxB[x...] or torus:AxB[x...]:simple, got {':'.join(args)!r}")
    return gen.torus(_shape("torus", args[0]), **kw)


def _shiftedring(args: list[str], **kw) -> Topology:
    if len(args) not in (1, 2):
        raise SpecError(f"shiftedring: expected shiftedring:N or shiftedring:N:s, got {':'.join(args)!r}")
    stride = _int("shiftedring", args[1]) if len(args) == 2 else None
    return gv.shifted_ring(_int("shiftedring", args[0]), stride, **kw)


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


def _seeded(kind: str, fn: Callable) -> Callable:
    def parse(args: list[str], **kw) -> Topology:
        if len(args) not in (2, 3):
            raise SpecError(f"{kind}: expected {kind}:N:d or {kind}:N:d:SEED, got {':'.join(args)!r}")
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
    "torus": (_torus, "torus:8x8 | torus:3x3x2:simple",
              "D-dimensional torus, any sizes >= 2; ':simple': one cable per size-2 dimension"),
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
    "jellyfish": (_seeded("jellyfish", gv.jellyfish), "jellyfish:100:4 | jellyfish:100:4:7",
                  "Jellyfish: random d-regular graph on N nodes, seeded (default seed 0)"),
    "xpander": (_seeded("xpander", gv.xpander), "xpander:100:4 | xpander:100:4:7",
                "Xpander: random lift of K_{d+1}, N a multiple of d + 1, seeded (default seed 0)"),
    "dbt": (_one("dbt", gv.double_binary_tree, _int), "dbt:16",
            "double binary tree topology (NCCL's two trees, one cable per tree edge)"),
}


def _uniring(args: list[str], **kw) -> Topology:
    if len(args) != 1:
        raise SpecError(f"uniring: expected uniring:N (= ring:N:uni), got {':'.join(args)!r}")
    return gen.ring(_int("uniring", args[0]), bidirectional=False, **kw)


#: distreg:NAME -> (spec it stands for, description). Names of Zhao et al. Table 8 that directcoll builds.
DISTREG: dict[str, tuple[str, str]] = {
    "petersen": ("petersen", "Petersen graph O_3 (10 nodes, degree 3)"),
    "linegraph_petersen": ("linegraph_petersen", "line graph of the Petersen graph (15 nodes, degree 4)"),
    "octahedron": ("circulant:6:1,2", "octahedron J(4,2) = K_6 minus a perfect matching = C(6,{1,2})"),
    "paley9": ("hamming:2:3", "Paley graph P9 = H(2,3)"),
}
_DISTREG_FORMS = ("distreg:petersen | distreg:linegraph_petersen | distreg:octahedron | distreg:paley9 | "
                  "distreg:oddK (Odd graph O_K, e.g. odd4) | distreg:qK (hypercube Q_K, e.g. q4) | "
                  "distreg:bipartite:n | distreg:bipartite_minus_matching:n | distreg:hamming:n:q | "
                  "distreg:complete:n")


def _distreg(args: list[str], **kw) -> Topology:
    if not args or not args[0]:
        raise SpecError(f"distreg: expected a distance-regular graph name: {_DISTREG_FORMS}")
    name, rest = args[0], args[1:]
    if name in DISTREG and not rest:
        return parse(DISTREG[name][0], **kw)
    for prefix, kind in (("odd", "odd"), ("q", "hypercube")):
        if name.startswith(prefix) and name[len(prefix):].isdigit() and not rest:
            return FAMILIES[kind][0]([name[len(prefix):]], **kw)
    if name in ("bipartite", "bipartite_minus_matching", "hamming", "complete", "odd"):
        return FAMILIES[name][0](rest, **kw)
    raise SpecError(f"distreg: unknown distance-regular graph {':'.join(args)!r}; accepted: {_DISTREG_FORMS}")


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


def accepted_forms() -> str:
    families = [example for _, example, _ in FAMILIES.values()]
    aliases = [example for _, example, _ in ALIASES.values()]
    return ", ".join(families + aliases + [form for form, _ in OPERATORS.values()])


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
        return SpecError(f"topology spec {self.original!r}: expected {expected} at position {self.i}, got {got}; "
                         f"accepted: {accepted_forms()}")

    def peek(self) -> str:
        return self.s[self.i] if self.i < len(self.s) else ""

    def expect(self, char: str, expected: str) -> None:
        if self.peek() != char:
            raise self.fail(expected)
        self.i += 1

    def integer(self, what: str) -> int:
        j = self.i
        while self.i < len(self.s) and self.s[self.i].isdigit():
            self.i += 1
        if j == self.i:
            raise self.fail(what)
        return int(self.s[j:self.i])

    def spec(self, *, trailing_int: bool = False) -> SpecNode:
        j = self.i
        while self.i < len(self.s) and (self.s[self.i].isalpha() or self.s[self.i] == "_"):
            self.i += 1
        word = self.s[j:self.i]
        if word in OPERATORS and self.peek() in ("(", "^"):
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
        if trailing_int and cuts and self.s[end: end + 1] == ")" and self.s[cuts[-1] + 1: end].isdigit():
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
                n = self.integer("an integer exponent K >= 1 after 'line^'")
        elif self.peek() == "^":
            raise self.fail(f"'(' after {op!r} (only line takes an exponent: line^K(SPEC))")
        self.expect("(", f"'(' after {op!r}: {OPERATORS[op][0]}")
        self.depth += 1
        children = [self.spec(trailing_int=op in ("degree", "power"))]
        if op in ("degree", "power"):
            self.expect(",", f"',' and the integer n of {OPERATORS[op][0]}")
            n = self.integer(f"the integer n of {OPERATORS[op][0]}")
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
            raise SpecError(f"topology spec {self.original!r}: {op} needs an integer >= 1, got {n}")
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
            got[key] = self.integer(f"a non-negative integer for {key!r} in {form}")
        if not ({"links", "nodes"} & set(got)):
            raise self.fail(f"',links=K' or ',nodes=K': {form} needs at least one of them")
        return tuple((k, got[k]) for k in PUNCTURED_KEYS if k in got)

    def parse(self) -> SpecNode:
        if not self.s:
            raise SpecError(f"empty topology spec; accepted: {accepted_forms()}")
        node = self.spec()
        if self.i != len(self.s):
            raise self.fail("the end of the spec (unbalanced ')' or text after the topology)")
        return node


def parse_tree(spec: str) -> SpecNode:
    """Parse a spec string into a :class:`SpecNode` tree without building anything (family arguments are
    checked when the tree is built).

    Raises:
        SpecError: malformed operators or parentheses; the message says what was expected and where.
    """
    return _Parser(spec).parse()


def _family(text: str, **link_params) -> Topology:
    kind, _, rest = text.partition(":")
    table = FAMILIES if kind in FAMILIES else ALIASES
    if kind not in table or (not rest and not getattr(table[kind][0], "no_args", False)):
        raise SpecError(f"unknown topology spec {text!r}; accepted: {accepted_forms()}")
    return table[kind][0](rest.split(":") if rest else [], **link_params)


def build_tree(node: SpecNode, **link_params) -> Topology:
    """Build the topology of a parsed spec tree (families get ``link_params``; expansions carry the link
    bandwidths and latencies of their inputs over).

    Raises:
        SpecError: malformed family arguments or an impossible operator parameter.
        TopologyError: an operator refuses its input (see :mod:`directcoll.topology.expansions`).
    """
    if node.op == "family":
        return _family(node.text, **link_params)
    kids = [build_tree(c, **link_params) for c in node.children]
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
        SpecError: an unknown family, malformed arguments or operators; the message lists the accepted forms.
        TopologyError: an expansion refuses its input (e.g. degree expansion of a non-regular graph).
    """
    if isinstance(spec, Topology):
        return spec
    return build_tree(parse_tree(spec), **link_params)
