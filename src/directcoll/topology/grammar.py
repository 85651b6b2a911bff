"""The grammar of topology spec strings: families (``torus:8x8``, ``circulant:16:3,4``; the forms each accepts are
in :mod:`directcoll.topology.table`) and the operators of :mod:`directcoll.topology.operators` nested freely
around them (docs/expansions.md)::

    spec     := operator | family
    operator := "line" ["^" K] "(" spec ")"            line graph L^K (Def. 12), K >= 1
              | "degree" "(" spec "," n ")"            degree expansion G * n (Def. 13), n >= 1
              | "product" "(" spec ("," spec)+ ")"     Cartesian product G1 x G2 x ... (Def. 3)
              | "power" "(" spec "," n ")"             Cartesian power G^(box n), n >= 1
              | "bidir" "(" spec ")"                   G united with its transpose (App. A.6)
              | "punctured" "(" spec ("," KEY "=" INT)+ ")"   KEY: links, nodes, seed (at least links or
                                                       nodes): random cables / compute nodes removed (failures)
              | "links" "(" spec ("," KEY "=" VALUE)+ ")"     KEY: dim, offset, link, cable (which links),
                                                       bandwidth, latency (their values or factors such as 0.5x)
              | "placed" "(" spec "," spec ["," "order" "=" ORDER] ")"   a job's logical network on a physical
                                                       one, ORDER rows (default) or gray
    family   := KIND[:ARGS]                            a family of FAMILIES or ALIASES

A whole spec may also be ``file:PATH``, a network file (:mod:`directcoll.topology.files`); its path is taken
as written (case and spaces kept) and operators do not take it.

e.g. ``line^3(circulant:16:3,4)``, ``power(product(ring:4:uni,ring:8:uni),2)``,
``punctured(torus:4x4,links=2,seed=1)`` (:func:`directcoll.topology.operators.punctured`),
``links(torus:4x4,dim=0,bandwidth=0.5x,latency=2us)`` (:func:`directcoll.topology.modifiers.modify_links`),
``placed(torus:16,hypercube:4,order=gray)`` (:func:`directcoll.topology.placement.placed`).
Family arguments may contain commas (circulant offsets, twisted-torus twists): inside an operator, a comma not
followed by a letter continues the family's argument list (every spec starts with a letter), and the trailing
``,n`` of ``degree``/``power`` is always their n (so ``degree(circulant:16:3,4,2)`` is C(16,{3,4}) * 2, and
``degree(circulant:16:3,4)`` is C(16,{3}) * 4). Spaces are ignored and names are case-insensitive.

Numbers are ASCII decimal digits (no sign, no Unicode digits) within their field's range (:data:`MAX_INT`, and
smaller bounds for exponents). :func:`parse_tree` reads a spec into a :class:`SpecNode` tree without building
anything; :mod:`directcoll.topology.spec` sizes and builds it.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

from directcoll.errors import SpecError
from directcoll.topology import modifiers as mods
from directcoll.topology import operators as ops
from directcoll.topology import placement
from directcoll.topology.families.random_graphs import MAX_SEED
from directcoll.topology.files import FILE_PREFIX, file_path, is_file_spec
from directcoll.topology.sizes import MAX_NODES, show

#: Largest number any spec field may hold (a signed 64-bit integer: numpy's int64 and rustworkx's seeds).
MAX_INT = 2**63 - 1
#: Largest K of ``line^K`` and n of ``power(SPEC,n)`` (with at least 2 nodes every power doubles N; a line graph
#: of a degree-1 graph stays the same size, so K is bounded on its own).
MAX_EXPONENT = 64
#: Longest spec string and deepest nesting of operators accepted (the parser is recursive).
MAX_SPEC_LENGTH = 10_000
MAX_DEPTH = 32
#: Where the accepted forms are listed, for error messages.
LIST_COMMAND = "`directcoll topology families`"
#: A field of ASCII decimal digits.
DIGITS = re.compile(r"[0-9]+")


def summary(fn) -> str:
    """The first line of ``fn``'s docstring (its first paragraph, joined), without the final period: what
    ``directcoll topology families`` says of a family or an operator.

    Raises:
        Nothing: a callable without a docstring gives "".

    Source: docs/expansions.md (the operator table of ``directcoll topology families``).

    >>> summary(ops.bidirectional)
    "G united with its transpose, G' = G u G^T (Zhao et al. App. A.6): N nodes, degree 2d"
    """
    first = (inspect.getdoc(fn) or "").split("\n\n", 1)[0]
    return " ".join(first.split()).removesuffix(".")


#: Operators (Zhao et al. Sec. 5; Basu et al. Sec. 5.2): name -> (form, description from the docstring).
OPERATORS: dict[str, tuple[str, str]] = {
    "line": ("line(SPEC) | line^K(SPEC)", summary(ops.line_graph)),
    "degree": ("degree(SPEC,n)", summary(ops.degree_expansion)),
    "product": ("product(SPEC,SPEC,...)", summary(ops.cartesian_product)),
    "power": ("power(SPEC,n)", summary(ops.cartesian_power)),
    "bidir": ("bidir(SPEC)", summary(ops.bidirectional)),
    "punctured": ("punctured(SPEC,links=K,nodes=K,seed=S)", summary(ops.punctured)),
    "links": ("links(SPEC,dim=K|offset=S|link=U-V|cable=U-V,bandwidth=B,latency=T)", summary(mods.modify_links)),
    "placed": ("placed(LOGICAL,PHYSICAL,order=rows|gray)", summary(placement.placed)),
}
#: keyword arguments of ``punctured(...)`` and their defaults
PUNCTURED_KEYS = {"links": 0, "nodes": 0, "seed": 0}


def number(what: str, field: str, text: str, hi: int = MAX_INT) -> int:
    """An ASCII decimal integer in 0..hi (no sign, no Unicode digits; checked before converting, so a
    10,000-digit number costs nothing).

    Raises:
        SpecError: not ASCII digits, or above ``hi``; the message names ``what`` and ``field``.

    Source: docs/expansions.md (spec grammar: numbers are ASCII decimal digits within their field's range).

    >>> number("ring", "N", "016")
    16
    """
    if not DIGITS.fullmatch(text):
        raise SpecError(f"{what}: expected a positive integer for {field} (ASCII digits 0-9), got {show(text)}")
    digits = text.lstrip("0") or "0"
    if len(digits) > len(str(hi)) or int(digits) > hi:
        shown = text if len(text) <= 24 else f"{text[:10]}...({len(text)} digits)"
        raise SpecError(f"{what}: {field} must be at most {hi:,}, got {shown}")
    return int(digits)


# -- the spec tree ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SpecNode:
    """One node of a parsed spec: a family leaf (``op == "family"``, ``text`` its spec, e.g.
    ``circulant:16:3,4``) or an operator of :data:`OPERATORS` over ``children`` with integer parameter ``n``
    (K of ``line^K``, n of ``degree``/``power``; None for the others) and keyword arguments ``kwargs``
    (``punctured``: (key, int) pairs of :data:`PUNCTURED_KEYS`, in that order; ``links``: (key, value text) pairs
    in canonical order, :func:`directcoll.topology.modifiers.links_spec`; ``placed``: ``(("order", ORDER),)``).

    Raises:
        Nothing: a frozen record; :func:`parse_tree` checks what goes into it.

    Source: docs/expansions.md (spec grammar); the operators are Zhao et al. (NSDI'25) Def. 12 (line), Def. 13
    (degree), Def. 3 (product), Def. 14 (power), App. A.6 (bidir).

    >>> str(SpecNode("line", children=(SpecNode("family", "kautz:2:2"),), n=2))
    'line^2(kautz:2:2)'
    """

    op: str
    text: str = ""
    children: tuple[SpecNode, ...] = ()
    n: int | None = None
    kwargs: tuple[tuple[str, int | str], ...] = ()

    def __str__(self) -> str:
        if self.op == "family":
            return self.text
        inner = ",".join(str(c) for c in self.children)
        if self.op == "punctured":
            return ops.punctured_spec(inner, **dict(self.kwargs))
        if self.op == "links":
            return mods.links_spec(inner, self.kwargs)
        if self.op == "placed":
            return placement.placed_spec(str(self.children[0]), str(self.children[1]), *dict(self.kwargs).values())
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
        return SpecError(f"topology spec {show(self.original)}: expected {expected} at position {self.i}, got "
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
        return number(f"topology spec {show(self.original)}", what, self.s[j:self.i], hi)

    def spec(self, *, trailing_int: bool = False) -> SpecNode:
        j = self.i
        while self.i < len(self.s) and (self.s[self.i].isalpha() or self.s[self.i] == "_"):
            self.i += 1
        word = self.s[j:self.i]
        if word in OPERATORS and self.peek() in ("(", "^"):
            if self.depth >= MAX_DEPTH:
                raise SpecError(f"topology spec {show(self.original)}: operators nest more than {MAX_DEPTH} deep")
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
        if trailing_int and cuts and self.s[end: end + 1] == ")" and DIGITS.fullmatch(self.s[cuts[-1] + 1: end]):
            end = cuts[-1]
        text = self.s[start:end]
        if text.startswith(FILE_PREFIX):
            raise SpecError(f"topology spec {show(self.original)}: a file:PATH spec stands alone; accepted: "
                            "operators around families only (write the expanded network to a file instead)")
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
        elif op == "placed":
            self.expect(",", f"',' and the physical network of {OPERATORS[op][0]}")
            children.append(self.spec())
        kwargs = (self.keywords(op) if op == "punctured" else self.settings(op) if op == "links"
                  else self.order(op) if op == "placed" else ())
        self.expect(")", f"')' closing {OPERATORS[op][0]}")
        self.depth -= 1
        if n is not None and n < 1:
            raise SpecError(f"topology spec {show(self.original)}: {op} needs an integer >= 1, got {n}")
        return SpecNode(op, "", tuple(children), n, kwargs)

    def _keyword(self, form: str, keys) -> tuple[int, str]:
        """After a ',' of ``form``'s keyword arguments: (where the keyword starts, the keyword), one of ``keys``."""
        self.i += 1
        j = self.i
        while self.i < len(self.s) and self.s[self.i].isalpha():
            self.i += 1
        key = self.s[j:self.i]
        if key not in keys:
            self.i = j
            raise self.fail(f"a keyword of {form} ({', '.join(keys)})")
        return j, key

    def keywords(self, op: str) -> tuple[tuple[str, int], ...]:
        """``,KEY=INT`` arguments of ``punctured`` (keys of :data:`PUNCTURED_KEYS`, each at most once, links or
        nodes at least once), returned in :data:`PUNCTURED_KEYS` order."""
        form = OPERATORS[op][0]
        got: dict[str, int] = {}
        while self.peek() == ",":
            j, key = self._keyword(form, PUNCTURED_KEYS)
            if key in got:
                self.i = j
                raise self.fail(f"each keyword of {form} once ({key!r} is repeated)")
            self.expect("=", f"'=' and an integer after {key!r} in {form}")
            hi = MAX_SEED if key == "seed" else MAX_INT
            got[key] = self.integer(f"a non-negative integer for {key!r} in {form} (0..{hi:,})", hi)
        if not ({"links", "nodes"} & set(got)):
            raise self.fail(f"',links=K' or ',nodes=K': {form} needs at least one of them")
        return tuple((k, got[k]) for k in PUNCTURED_KEYS if k in got)

    def order(self, op: str) -> tuple[tuple[str, str], ...]:
        """The optional ``,order=ORDER`` of ``placed`` (one of :data:`~directcoll.topology.placement.ORDERS`)."""
        form = OPERATORS[op][0]
        if self.peek() != ",":
            return ()
        self._keyword(form, ("order",))
        self.expect("=", f"'=' and an order after 'order' in {form}")
        j = self.i
        while self.i < len(self.s) and self.s[self.i].isalpha():
            self.i += 1
        word = self.s[j:self.i].lower()
        if word not in placement.ORDERS:
            self.i = j
            raise self.fail(f"an order of {form} ({', '.join(placement.ORDERS)})")
        return () if word == "rows" else (("order", word),)

    def settings(self, op: str) -> tuple[tuple[str, str], ...]:
        """``,KEY=VALUE`` arguments of ``links`` (keys of the modifiers module; a value runs to the next ',' or
        ')'), returned in canonical order; their meaning is checked when the topology is built."""
        form = OPERATORS[op][0]
        keys = mods.SELECTOR_KEYS + mods.VALUE_KEYS
        got: list[tuple[str, str]] = []
        while self.peek() == ",":
            j, key = self._keyword(form, keys)
            if key in dict(got) and key not in mods.REPEATABLE:
                self.i = j
                raise self.fail(f"each keyword of {form} once but link= and cable= ({key!r} is repeated)")
            self.expect("=", f"'=' and a value after {key!r} in {form}")
            j = self.i
            while self.i < len(self.s) and self.s[self.i] not in ",()":
                self.i += 1
            if j == self.i:
                raise self.fail(f"a value after '{key}=' in {form}")
            got.append((key, self.s[j:self.i]))
        if not any(k in mods.VALUE_KEYS for k, _ in got):
            raise self.fail(f"',bandwidth=B' or ',latency=T': {form} needs at least one of them")
        order = {k: i for i, k in enumerate(keys)}
        return tuple(sorted(got, key=lambda kv: order[kv[0]]))

    def parse(self) -> SpecNode:
        if not self.s:
            raise SpecError(f"empty topology spec; the forms: {LIST_COMMAND}")
        if len(self.s) > MAX_SPEC_LENGTH:
            raise SpecError(f"topology spec {show(self.original)} is {len(self.s):,} characters long; at most "
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

    Source: docs/expansions.md (spec grammar); this module's docstring gives the grammar.

    >>> tree = parse_tree("line^2(kautz:2:2)")
    >>> tree.op, tree.n, str(tree.children[0])
    ('line', 2, 'kautz:2:2')
    """
    if not isinstance(spec, str):
        raise SpecError(f"a topology spec is a string such as 'torus:8x8', got {type(spec).__name__} "
                        f"{show(repr(spec))}")
    if is_file_spec(spec):  # a network file: the path is kept as given (case, spaces)
        return SpecNode("family", FILE_PREFIX + file_path(spec))
    return _Parser(spec).parse()

