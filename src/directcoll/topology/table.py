"""The family table: every family and alias a spec string may name (``KIND:ARGS``), with the reader of its
arguments, the forms it accepts and its description (the first line of its generator's docstring), and the
readers that turn a family spec into a generator call without building it (:func:`read_family`).

New families register a reader in :data:`FAMILIES` (aliases in :data:`ALIASES`) that reads the arguments into a
call of a :func:`~directcoll.topology.families.base.sized` generator. ``directcoll topology families`` prints
:func:`families`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable

from directcoll.errors import SpecError
from directcoll.topology.families import circulants, grids, random_graphs, regular, trees
from directcoll.topology.families import kautz_digraphs as kd
from directcoll.topology.families.random_graphs import MAX_SEED
from directcoll.topology.grammar import DIGITS, LIST_COMMAND, MAX_INT, OPERATORS, number, summary
from directcoll.topology.model import Topology
from directcoll.topology.sizes import show

#: Largest k of the Odd graph ``odd:k`` (C(2k-1, k-1) nodes, built by a Python loop: odd:12 has 1,352,078).
MAX_ODD_K = 12

_SHAPE = re.compile(r"[0-9]+(x[0-9]+)*")


def _shape(kind: str, text: str) -> tuple[int, ...]:
    if not _SHAPE.fullmatch(text):
        raise SpecError(f"{kind}: expected dimension sizes like 8x8 or 4x4x4, got {show(text)}")
    return tuple(number(kind, "a dimension size", t) for t in text.split("x"))


def _int(kind: str, text: str, field: str = "the argument", hi: int = MAX_INT) -> int:
    return number(kind, field, text, hi)


def _plan(read: Callable) -> Callable:
    """A table parser from ``read(args) -> (generator, positional args, keyword args)``: reading the arguments
    (``parser.read``) is kept apart from building, so a spec can be sized without building it."""
    def parse(args: list[str], **kw) -> Topology:
        fn, a, k = read(args)
        return fn(*a, **k, **kw)
    parse.read = read
    return parse


def _entry(parser: Callable, form: str, fn: Callable, note: str = "") -> tuple[Callable, str, str]:
    """A table row: (parser, accepted forms, description); the description is ``fn``'s docstring summary, then
    ``note`` (what the spec form adds)."""
    return parser, form, summary(fn) + (f"; {note}" if note else "")


@_plan
def _ring(args: list[str]):
    if len(args) == 2 and args[1] in ("uni", "bi"):
        return circulants.ring, (_int("ring", args[0], "N"),), {"bidirectional": args[1] == "bi"}
    if len(args) != 1:
        raise SpecError(f"ring: expected ring:N or ring:N:uni, got {show(':'.join(args))}")
    return circulants.ring, (_int("ring", args[0], "N"),), {}


def _one(kind: str, fn: Callable, convert: Callable, field: str = "the argument", hi: int = MAX_INT) -> Callable:
    def read(args: list[str]):
        if len(args) != 1:
            raise SpecError(f"{kind}: expected one argument after '{kind}:', got {show(':'.join(args))}")
        value = convert(kind, args[0]) if convert is _shape else convert(kind, args[0], field, hi)
        return fn, (value,), {}
    return _plan(read)


@_plan
def _torus(args: list[str]):
    if len(args) == 2 and args[1] == "simple":
        return grids.torus, (_shape("torus", args[0]),), {"simple": True}
    if len(args) != 1:
        raise SpecError(f"torus: expected torus:AxB[x...] or torus:AxB[x...]:simple, got {show(':'.join(args))}")
    return grids.torus, (_shape("torus", args[0]),), {}


@_plan
def _shiftedring(args: list[str]):
    if len(args) not in (1, 2):
        raise SpecError(f"shiftedring: expected shiftedring:N or shiftedring:N:s, got {show(':'.join(args))}")
    stride = _int("shiftedring", args[1], "s") if len(args) == 2 else None
    return circulants.shifted_ring, (_int("shiftedring", args[0], "N"), stride), {}


@_plan
def _hammingmesh(args: list[str]):
    if len(args) != 2:
        raise SpecError("hammingmesh: expected hammingmesh:AxB:XxY (board a x b, grid of x x y boards), "
                        f"got {show(':'.join(args))}")
    board, grid = _shape("hammingmesh", args[0]), _shape("hammingmesh", args[1])
    if len(board) != 2 or len(grid) != 2:
        raise SpecError(f"hammingmesh: board and grid must both be 2D (AxB:XxY), got {show(':'.join(args))}")
    return grids.hammingmesh, (board, grid), {}


def _ints(kind: str, form: str, fn: Callable, fields: tuple[tuple[str, int], ...]) -> Callable:
    """``kind:a:b...``: one integer per (field name, upper bound) of ``fields``."""
    def read(args: list[str]):
        if len(args) != len(fields):
            raise SpecError(f"{kind}: expected {form}, got {show(':'.join(args))}")
        return fn, tuple(_int(kind, a, f, hi) for a, (f, hi) in zip(args, fields, strict=True)), {}
    return _plan(read)


def _seeded(kind: str, fn: Callable) -> Callable:
    def read(args: list[str]):
        if len(args) not in (2, 3):
            raise SpecError(f"{kind}: expected {kind}:N:d or {kind}:N:d:SEED, got {show(':'.join(args))}")
        fields = (("N", MAX_INT), ("d", MAX_INT), ("SEED", MAX_SEED))
        return fn, tuple(_int(kind, a, f, hi) for a, (f, hi) in zip(args, fields, strict=False)), {}
    return _plan(read)


def _fixed(kind: str, fn: Callable) -> Callable:
    def read(args: list[str]):
        if args:
            raise SpecError(f"{kind}: takes no arguments (the spec is just {kind!r}), got {show(':'.join(args))}")
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
        raise SpecError(f"circulant: expected {form}, got {show(':'.join(args))}")
    n = _int("circulant", args[0], "N")
    if args[1] == "opt4":
        if not bidirectional:
            raise SpecError("circulant: opt4 (Theorem 22) is a bidirectional circulant; drop ':uni'")
        return circulants.circulant_opt4, (n,), {}
    offsets = [_int("circulant", a, "an offset") for a in args[1].split(",")]
    return circulants.circulant, (n, offsets), {"bidirectional": bidirectional}


@_plan
def _twistedtorus(args: list[str]):
    if len(args) not in (1, 2) or (len(args) == 2 and not args[1]):
        raise SpecError("twistedtorus: expected twistedtorus:AxB[:t] or twistedtorus:AxBxC[:t1,t2] "
                        f"(one twist per dimension but the last), got {show(':'.join(args))}")
    shape = _shape("twistedtorus", args[0])
    twists = None if len(args) == 1 else [_int("twistedtorus", t, "a twist") for t in args[1].split(",")]
    return grids.twisted_torus, (shape, twists), {}


#: kind -> (parser, example specs ``|``-separated, description: the generator's docstring summary)
FAMILIES: dict[str, tuple[Callable, str, str]] = {
    "torus": _entry(_torus, "torus:8x8 | torus:3x3x2:simple", grids.torus,
                    "':simple': one cable per size-2 dimension"),
    "mesh": _entry(_one("mesh", grids.mesh, _shape), "mesh:4x4", grids.mesh),
    "ring": _entry(_ring, "ring:16 | ring:16:uni", circulants.ring),
    "hypercube": _entry(_one("hypercube", grids.hypercube, _int, "k", 30), "hypercube:10", grids.hypercube),
    "hyperx": _entry(_one("hyperx", grids.hyperx, _shape), "hyperx:64x64", grids.hyperx),
    "complete": _entry(_one("complete", regular.complete, _int, "n"), "complete:8", regular.complete),
    "hammingmesh": _entry(_hammingmesh, "hammingmesh:2x2:32x32", grids.hammingmesh, "board AxB, grid XxY"),
    "bipartite": _entry(_one("bipartite", regular.bipartite, _int, "n"), "bipartite:4", regular.bipartite),
    "bipartite_minus_matching": _entry(
        _one("bipartite_minus_matching", regular.bipartite_minus_matching, _int, "n"), "bipartite_minus_matching:5",
        regular.bipartite_minus_matching),
    "hamming": _entry(_ints("hamming", "hamming:n:q", regular.hamming, (("n", 30), ("q", MAX_INT))), "hamming:2:3",
                      regular.hamming),
    "circulant": _entry(_circulant, "circulant:16:3,4 | circulant:16:3,4:uni | circulant:16:opt4",
                        circulants.circulant, f"':uni': directed; opt4: {summary(circulants.circulant_opt4)}"),
    "genkautz": _entry(_ints("genkautz", "genkautz:d:N", kd.generalized_kautz, (("d", MAX_INT), ("N", MAX_INT))),
                       "genkautz:2:10", kd.generalized_kautz, "self-loops dropped"),
    "kautz": _entry(_ints("kautz", "kautz:d:D", kd.kautz, (("d", MAX_INT), ("D", 30))), "kautz:2:3",
                    kd.kautz),
    "debruijn": _entry(_ints("debruijn", "debruijn:d:D", kd.de_bruijn, (("d", MAX_INT), ("D", 30))),
                       "debruijn:2:3", kd.de_bruijn, "self-loops dropped"),
    "twistedhypercube": _entry(_one("twistedhypercube", grids.twisted_hypercube, _int, "k", 30), "twistedhypercube:3",
                               grids.twisted_hypercube),
    "twistedtorus": _entry(_twistedtorus, "twistedtorus:4x8:4 | twistedtorus:4x4x8:4,4", grids.twisted_torus),
    "odd": _entry(_one("odd", regular.odd_graph, _int, "k", MAX_ODD_K), "odd:4", regular.odd_graph),
    "petersen": _entry(_fixed("petersen", regular.petersen), "petersen", regular.petersen),
    "linegraph_petersen": _entry(_fixed("linegraph_petersen", regular.linegraph_petersen), "linegraph_petersen",
                                 regular.linegraph_petersen),
    "jellyfish": _entry(_seeded("jellyfish", random_graphs.jellyfish), "jellyfish:100:4 | jellyfish:100:4:7",
                        random_graphs.jellyfish, "default seed 0"),
    "xpander": _entry(_seeded("xpander", random_graphs.xpander), "xpander:100:4 | xpander:100:4:7",
                      random_graphs.xpander, "default seed 0"),
    "dbt": _entry(_one("dbt", trees.double_binary_tree, _int, "N"), "dbt:16", trees.double_binary_tree),
}


@_plan
def _uniring(args: list[str]):
    if len(args) != 1:
        raise SpecError(f"uniring: expected uniring:N (= ring:N:uni), got {show(':'.join(args))}")
    return circulants.ring, (_int("uniring", args[0], "N"),), {"bidirectional": False}


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
        return read_family(DISTREG[name][0])
    for prefix, kind in (("odd", "odd"), ("q", "hypercube")):
        if name.startswith(prefix) and DIGITS.fullmatch(name[len(prefix):]) and not rest:
            return FAMILIES[kind][0].read([name[len(prefix):]])
    if name in ("bipartite", "bipartite_minus_matching", "hamming", "complete", "odd"):
        return FAMILIES[name][0].read(rest)
    raise SpecError(f"distreg: unknown distance-regular graph {show(':'.join(args))}; accepted: {_DISTREG_FORMS}")


#: Other names for families: kind -> (parser, example spec, description). The topology they build carries the
#: canonical spec (``uniring:8`` builds ``ring:8:uni``).
ALIASES: dict[str, tuple[Callable, str, str]] = {
    "uniring": (_uniring, "uniring:8", "unidirectional ring (= ring:N:uni), the paper's UniRing"),
    "twisted-hypercube": (FAMILIES["twistedhypercube"][0], "twisted-hypercube:3", "= twistedhypercube:k"),
    "twisted-torus": (FAMILIES["twistedtorus"][0], "twisted-torus:4x8:4", "= twistedtorus:..."),
    "distreg": (_distreg, "distreg:petersen | distreg:odd4 | distreg:bipartite_minus_matching:5",
                "distance-regular graphs of Zhao et al. Table 8 by name"),
    "shiftedring": _entry(_shiftedring, "shiftedring:16 | shiftedring:16:5", circulants.shifted_ring,
                          "its spec is circulant:N:1,s"),
}


def accepted_forms() -> str:
    """Every family, alias and operator form, comma-separated (``directcoll topology families`` lists them).

    Raises:
        Nothing: reads the module's tables.

    Source: docs/topology.md, "Strict specs and sizes" (``directcoll topology families``).

    >>> "punctured(SPEC,links=K,nodes=K,seed=S)" in accepted_forms().split(", ")
    True
    """
    families = [example for _, example, _ in FAMILIES.values()]
    aliases = [example for _, example, _ in ALIASES.values()]
    return ", ".join(families + aliases + [form for form, _ in OPERATORS.values()])


def families() -> list[dict]:
    """Every family, alias and operator a spec may name: dicts with ``name``, ``type`` (family, alias or
    operator), ``form`` (example specs, ``|``-separated) and ``description`` (the first line of the generator's
    or operator's docstring, for aliases their own); ``directcoll topology families`` prints them.

    Raises:
        Nothing: reads the module's tables.

    Source: docs/topology.md, "Strict specs and sizes" (``directcoll topology families [--json]``).

    >>> [r for r in families() if r["name"] == "mesh"][0]["description"]
    'D-dimensional mesh d0 x d1 x ...: a torus without its wrap-around links'
    """
    rows = [{"name": k, "type": "family", "form": form, "description": d} for k, (_, form, d) in FAMILIES.items()]
    rows += [{"name": k, "type": "alias", "form": form, "description": d} for k, (_, form, d) in ALIASES.items()]
    rows += [{"name": k, "type": "operator", "form": form, "description": d} for k, (form, d) in OPERATORS.items()]
    return rows


def read_family(text: str):
    """(generator, positional args, keyword args) of a family spec such as ``torus:8x8``, without building.

    Raises:
        SpecError: an unknown family (with the closest names) or malformed arguments.

    Source: docs/topology.md, "Strict specs and sizes"; the grammar of :mod:`directcoll.topology.grammar`.

    >>> fn, args, kwargs = read_family("torus:4x4:simple")
    >>> fn.__name__, args, kwargs
    ('torus', ((4, 4),), {'simple': True})
    """
    kind, _, rest = text.partition(":")
    table = FAMILIES if kind in FAMILIES else ALIASES
    if kind not in table:
        names = list(FAMILIES) + list(ALIASES) + list(OPERATORS)
        close = difflib.get_close_matches(kind, names, n=3)
        hint = f"; did you mean {' or '.join(close)}?" if close else ""
        raise SpecError(f"unknown topology spec {show(text)}: no family {show(kind)}{hint} "
                        f"(list them: {LIST_COMMAND})")
    parser, example, _ = table[kind]
    if not rest and not getattr(parser, "no_args", False):
        raise SpecError(f"topology spec {show(text)}: {kind} needs arguments; accepted: {example}")
    try:
        return parser.read(rest.split(":") if rest else [])
    except SpecError as exc:  # "kind: ..." -> "topology spec 'kind:args': ..." (the whole spec named)
        message = str(exc)
        if not message.startswith(f"{kind}:"):
            raise
        raise SpecError(f"topology spec {show(text)}:{message[len(kind) + 1:]}") from None
