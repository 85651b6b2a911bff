"""Sizes and hard caps: what a topology will be, computed before anything is built.

Every family declares its :class:`Size` as a function of its generator's arguments (the ``sized`` decorator of
:mod:`directcoll.topology.families.base`), every operator its own from its inputs' (:func:`operator_size`), so a
spec string or a direct generator call is sized with Python ints, nothing allocated, and refused above
:data:`MAX_NODES` nodes, :data:`MAX_LINKS` links (:func:`check_caps`) or the memory budget
(:mod:`directcoll.resources`).

The byte constants were fitted to the peak resident memory of building torus, complete, hypercube, Kautz,
jellyfish, ... topologies with a few million links.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from directcoll.errors import SpecError

#: Largest number of nodes (compute nodes and switches) of any topology a spec may name, after every operator: the
#: hard cap that keeps a typo from running for hours whatever the memory budget.
MAX_NODES = 2**30
#: Hard cap on directed links after every operator.
MAX_LINKS = 2**34

#: Estimated bytes per directed link and per node of a built Topology (its four link arrays, the sparse
#: adjacency built to check connectivity and the generator's temporaries), and per link and node per grid
#: dimension of a Cayley generator (coordinates).
BYTES_PER_LINK, BYTES_PER_NODE, BYTES_PER_LINK_DIM, BYTES_PER_NODE_DIM = 64, 32, 12, 8
#: Operators build index arrays over the new links (broadcasts, sorts, cable pairing) on top of that.
BYTES_PER_OPERATOR_LINK = {"line": 70, "degree": 80, "power": 125, "product": 125, "bidir": 70,
                           "punctured": 180, "links": 100, "placed": 100}
#: Python objects per node and per undirected edge of a construction written as a Python loop (Odd graphs, the
#: pairs of an Xpander's base graph).
BYTES_PER_PYTHON_NODE, BYTES_PER_PYTHON_EDGE = 90, 60


@dataclass(frozen=True)
class Size:
    """What a spec or a generator call will build, computed from its arguments alone with Python ints.

    Attributes:
        nodes: compute nodes plus switches.
        links: directed links (an upper bound where a generator drops self-loops or ``punctured`` removes).
        max_out, max_in: upper bounds on the out- and in-degree of a node (line graphs multiply by them).
        nbytes: estimated peak memory of building it, bytes: the topology's arrays and the generator's
            intermediates (rustworkx graphs, Python objects, broadcast index arrays), inputs of operators included.

    Raises:
        Nothing: a frozen record.

    Source: docs/topology.md, "Strict specs and sizes".

    >>> Size(10, 30, 3, 3, 1e3).links
    30
    """

    nodes: int
    links: int
    max_out: int
    max_in: int
    nbytes: float


def as_float(n: int) -> float:
    """``float(n)``, or infinity for an int too large to convert (estimates stay comparable with any budget).

    Raises:
        Nothing: arithmetic.

    Source: docs/topology.md, "Strict specs and sizes".

    >>> as_float(3), as_float(2**2000)
    (3.0, inf)
    """
    return float(n) if n.bit_length() < 1000 else math.inf


def capped_pow(base: int, exp: int) -> int:
    """base ** exp, or a number above every cap when that would be huge (exp is cut at 64 for base >= 2).

    Raises:
        Nothing: arithmetic (a negative exponent gives 0).

    Source: docs/topology.md, "Strict specs and sizes".

    >>> capped_pow(2, 3), capped_pow(2, 1000) == 2**64
    (8, True)
    """
    if exp < 0:
        return 0
    return base ** min(exp, 64) if base >= 2 else base ** exp


def graph_size(nodes: int, links: int, out: int, inn: int | None = None, *, dims: int = 0,
               extra: float = 0.0) -> Size:
    """The :class:`Size` of a generator's topology: ``nodes``, directed ``links``, out-degree bound ``out``
    (in-degree bound ``inn``, default ``out``), ``dims`` grid dimensions of coordinates and ``extra`` bytes of
    the generator's own intermediates (an int or a float).

    Raises:
        Nothing: arithmetic (bytes are estimates; the byte constants are fitted, see this module's docstring).

    Source: docs/topology.md, "Strict specs and sizes".

    >>> graph_size(16, 64, 4, dims=2)
    Size(nodes=16, links=64, max_out=4, max_in=4, nbytes=6400.0)
    """
    nbytes = (BYTES_PER_LINK * as_float(links) + BYTES_PER_NODE * as_float(nodes)
              + dims * (BYTES_PER_LINK_DIM * as_float(links) + BYTES_PER_NODE_DIM * as_float(nodes))
              + (as_float(extra) if isinstance(extra, int) else extra))
    return Size(nodes, links, out, out if inn is None else inn, nbytes)


def cayley_size(n: int, k: int, dims: int, extra: float = 0.0) -> Size:
    """The :class:`Size` of a Cayley topology of ``n`` nodes, ``k`` ports each, on a ``dims``-dimensional group
    (:func:`directcoll.topology.families.base.cayley`).

    Raises:
        Nothing: arithmetic.

    Source: docs/topology.md, "Strict specs and sizes".

    >>> cayley_size(64, 4, 2).links
    256
    """
    return graph_size(n, n * k, k, dims=dims, extra=extra)


def operator_size(op: str, n: int | None, kids: list[Size]) -> Size:
    """The :class:`Size` of an operator of :mod:`directcoll.topology.operators` over inputs of sizes ``kids``
    (``n``: K of ``line^K``, n of ``degree``/``power``). Line graphs turn links into nodes (|V(L(G))| = |E(G)|,
    Zhao et al. Def. 12), products multiply (|V(A x B)| = |V(A)| |V(B)|, |E(A x B)| = |E(A)| |V(B)| + |E(B)| |V(A)|,
    Def. 3), ``degree`` multiplies nodes by n and links by n^2 (Def. 13), ``punctured`` keeps at most what G has.

    Raises:
        KeyError: ``op`` is not an operator name (a caller's bug: the grammar only passes known operators).

    Source: docs/topology.md, "Strict specs and sizes". Zhao et al. (NSDI'25) Def. 3, 12, 13 as above; App. A.6 (bidir
    doubles the links).

    >>> operator_size("line", 2, [cayley_size(16, 4, 2)]).nodes
    256
    """
    per_link = BYTES_PER_OPERATOR_LINK[op]
    below = sum(k.nbytes for k in kids)
    g = kids[0]
    if op == "line":
        nodes, links, nbytes = g.nodes, g.links, below
        for _ in range(n):
            nodes, links = links, links * g.max_out
            nbytes += per_link * as_float(links) + BYTES_PER_NODE * as_float(nodes)
            if nodes > MAX_NODES:
                break
        return Size(nodes, links, g.max_out, g.max_in, nbytes)
    if op == "degree":
        nodes, links, out, inn = n * g.nodes, n * n * g.links, n * g.max_out, n * g.max_in
    elif op in ("power", "product"):
        kids = kids * n if op == "power" else kids  # n <= MAX_EXPONENT
        nodes, links = 1, 0
        for k in kids:  # O(factors) multiplications
            nodes, links = nodes * k.nodes, links * k.nodes + k.links * nodes
        out, inn = sum(k.max_out for k in kids), sum(k.max_in for k in kids)
    elif op == "bidir":
        nodes, links, out = g.nodes, 2 * g.links, g.max_out + g.max_in
        inn = out
    elif op == "placed":  # the physical network's nodes and links
        p = kids[1]
        nodes, links, out, inn = p.nodes, p.links, p.max_out, p.max_in
    else:  # punctured: at most what G has; links: what G has
        nodes, links, out, inn = g.nodes, g.links, g.max_out, g.max_in
    nbytes = below + per_link * as_float(links) + BYTES_PER_NODE * (1 + len(kids)) * as_float(nodes)
    return Size(nodes, links, out, inn, nbytes)


def check_caps(what: str, size: Size) -> None:
    """Refuse ``what`` (e.g. ``"topology spec 'torus:8x8'"``) when ``size`` is over :data:`MAX_NODES` nodes or
    :data:`MAX_LINKS` links.

    Raises:
        SpecError: over a cap; the message names ``what``, its size and the caps.

    Source: docs/topology.md, "Strict specs and sizes".

    >>> check_caps("topology 'x'", graph_size(2**31, 0, 0))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.SpecError: topology 'x' has 2,147,483,648 nodes and 0 links; accepted: at most ...
    """
    if size.nodes > MAX_NODES or size.links > MAX_LINKS:
        raise SpecError(f"{what} has {count(size.nodes)} nodes and {count(size.links)} links; accepted: at most "
                        f"{MAX_NODES:,} nodes and {MAX_LINKS:,} links")


# -- numbers and specs in messages -----------------------------------------------------------------------------
def count(n: int) -> str:
    """A count for a message: exact below 10^15, else its power of two (no huge decimal conversions).

    Raises:
        Nothing: formatting.

    Source: docs/topology.md, "Strict specs and sizes".

    >>> count(1024), count(2**70)
    ('1,024', 'about 2^70')
    """
    return f"{n:,}" if n < 10**15 else f"about 2^{n.bit_length() - 1}"


def brief_int(value: int) -> str:
    """An integer for a message: exact up to 24 digits, else its power of two (no huge decimal conversions).

    Raises:
        Nothing: formatting.

    Source: docs/topology.md, "Strict specs and sizes".

    >>> brief_int(2**64), brief_int(10**30)
    ('18446744073709551616', 'about 2^99')
    """
    return str(value) if value.bit_length() <= 79 else f"about 2^{value.bit_length() - 1}"


def brief(values) -> str:
    """A tuple of numbers for a message, its middle left out past 8 entries.

    Raises:
        Nothing: formatting.

    Source: docs/topology.md, "Strict specs and sizes".

    >>> brief(range(10))
    '(0, 1, 2, 3, ..., 8, 9) (10 values)'
    """
    values = tuple(values)
    if len(values) <= 8:
        return str(values)
    return f"({', '.join(map(str, values[:4]))}, ..., {', '.join(map(str, values[-2:]))}) ({len(values)} values)"


def show(text) -> str:
    """repr of a spec for a message, shortened past 80 characters.

    Raises:
        Nothing: formatting.

    Source: docs/topology.md, "Strict specs and sizes".

    >>> show("torus:8x8")
    "'torus:8x8'"
    """
    text = str(text)
    return repr(text) if len(text) <= 80 else repr(text[:60]) + f"... ({len(text):,} characters)"
