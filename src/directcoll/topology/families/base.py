"""What the family modules share: the ``sized`` decorator, argument checks and the link-array builders.

Every generator is a pure function of its parameters (named for the math), takes ``link_bandwidth`` (bytes/s)
and ``link_latency`` (s), defaulting to the Swing paper's SST setup (400 Gb/s, 100 ns,
:data:`~directcoll.topology.model.DEFAULT_LINK_BANDWIDTH`), raises :class:`~directcoll.errors.SpecError` for
impossible parameters, and returns a :class:`~directcoll.topology.model.Topology`.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable

import numpy as np

from directcoll.errors import SpecError
from directcoll.resources import check_memory
from directcoll.topology.model import Topology
from directcoll.topology.sizes import Size, brief, check_caps, count, show


def sized(size: Callable[..., Size]) -> Callable:
    """Decorator of a public generator: ``size`` gives its :class:`~directcoll.topology.sizes.Size` from the
    generator's own arguments (``link_bandwidth`` and ``link_latency`` left out). The wrapped generator keeps it
    as ``.size`` (the spec parser sizes a spec with it before building) and, before building, checks the call
    against the caps and the memory budget, so that direct library calls are refused as fast as spec strings.

    Raises:
        SpecError: (the wrapped generator, before it builds) over :data:`~directcoll.topology.sizes.MAX_NODES`
            nodes or :data:`~directcoll.topology.sizes.MAX_LINKS` links.
        ResourceError: (the wrapped generator, before it builds) building it would need more memory than the
            budget. The decorator itself raises nothing.

    Source: docs/topology.md, "Strict specs and sizes" (every generator declares its size, ``@sized(...)``).

    >>> @sized(lambda n: Size(n, 0, 0, 0, 0.0))
    ... def nodes(n):
    ...     return n
    >>> nodes.size(3).nodes, nodes(3)
    (3, 3)
    """
    def decorate(fn: Callable) -> Callable:
        @functools.wraps(fn)
        def build(*args, **kwargs):
            check_call(build, args, kwargs)
            return fn(*args, **kwargs)

        build.size = size
        return build

    return decorate


def _exact_ints(value):
    """The call's numbers as Python ints (tuples for sequences), or TypeError for anything else."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, (list, tuple, np.ndarray)):
        return tuple(_exact_ints(v) for v in value)
    return operator.index(value)


def check_call(fn: Callable, args: tuple, kwargs: dict) -> None:
    """Size a direct call of a :func:`sized` generator (``torus((8, 8))``) before it builds: the same caps and
    memory budget as :func:`directcoll.topology.spec.check_spec`. Arguments that are not integers are left to
    the generator's own checks.

    Raises:
        SpecError: over :data:`~directcoll.topology.sizes.MAX_NODES` nodes or
            :data:`~directcoll.topology.sizes.MAX_LINKS` links.
        ResourceError: building it would need more memory than the budget.

    Source: docs/topology.md, "Strict specs and sizes" (direct library calls sized like spec strings).

    >>> from directcoll.topology.families import torus
    >>> check_call(torus, ((8, 8),), {}) is None
    True
    """
    try:
        params = {k: _exact_ints(v) for k, v in kwargs.items() if k not in ("link_bandwidth", "link_latency")}
        args = tuple(_exact_ints(a) for a in args)
        size = fn.size(*args, **params)
    except (TypeError, ValueError, OverflowError):
        return  # not plain integers: the generator refuses them with its own message
    call = show(f"{fn.__name__}({', '.join(_brief_arg(a) for a in args)})")
    check_caps(f"topology {call}", size)
    check_memory(f"topology {call} ({count(size.nodes)} nodes, {count(size.links)} links)", size.nbytes)


def _brief_arg(value) -> str:
    """An argument of a generator call for a message: huge integers as powers of two, long tuples shortened."""
    if isinstance(value, tuple):
        items = [_brief_arg(v) for v in (value if len(value) <= 8 else value[:4] + value[-2:])]
        if len(value) <= 8:
            return f"({', '.join(items)}{',' if len(value) == 1 else ''})"
        return f"({', '.join(items[:4])}, ..., {', '.join(items[4:])}) ({len(value)} values)"
    return count(value).replace(",", "") if isinstance(value, int) and not isinstance(value, bool) else repr(value)


# -- argument checks -------------------------------------------------------------------------------------------
def need_int(kind: str, name: str, value, minimum: int) -> int:
    """``value`` as an int, refused unless it is an integer (not a bool) >= ``minimum``.

    Raises:
        SpecError: naming the family ``kind`` and the parameter ``name``.

    Source: docs/topology.md, "Strict specs and sizes" (family arguments are checked integers).

    >>> need_int("kautz", "d", 3.0, 2)
    3
    """
    if isinstance(value, bool) or int(value) != value or int(value) < minimum:
        raise SpecError(f"{kind}: {name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_shape(kind: str, shape, minimum: int = 2) -> tuple[int, ...]:
    """A grid shape (d0, d1, ...) as a tuple of ints, every dimension at least ``minimum``.

    Raises:
        SpecError: an empty shape or a dimension below ``minimum``.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.2 (a D-dimensional torus of size {d_0, ..., d_(D-1)}).

    >>> check_shape("torus", [4, 4])
    (4, 4)
    """
    shape = tuple(int(d) for d in shape)
    if not shape or any(d < minimum for d in shape):
        raise SpecError(f"{kind}: every dimension size must be an integer >= {minimum}, got {brief(shape)}")
    return shape


def spec_shape(shape) -> str:
    """A shape as a spec writes it.

    Raises:
        Nothing: string formatting.

    Source: docs/topology.md (spec strings such as ``torus:8x8``).

    >>> spec_shape((4, 4, 2))
    '4x4x2'
    """
    return "x".join(str(d) for d in shape)


# -- link arrays -----------------------------------------------------------------------------------------------
def cayley(kind: str, spec: str, shape: tuple[int, ...], offsets: np.ndarray, link_bandwidth: float,
           link_latency: float, params: dict | None = None) -> Topology:
    """The Cayley graph of the abelian group Z_shape = Z_{d0} x ... x Z_{d(D-1)} with generators ``offsets``
    (int array (K, D)): node u (row-major coordinates) has link ``u*K + k`` to u + offsets[k] (mod shape). The
    topology keeps ``shape`` (wrapping) and ``port_offsets``, so routing is translation-invariant. Every link
    has ``link_bandwidth`` (bytes/s) and ``link_latency`` (s).

    Raises:
        TopologyError: the generators do not reach every node (:class:`~directcoll.topology.model.Topology`).

    Source: Zhao et al. (NSDI'25) Def. 18 (circulants, the Cayley graphs of Z_n) generalized to abelian groups
    Z_{d0} x ... x Z_{d(D-1)} (tori, HyperX, twisted torus); docs/topology.md, "Metrics and routing".

    >>> cayley("ring", "ring:4", (4,), np.array([[1], [-1]]), 1.0, 0.0).link_dst.tolist()
    [1, 3, 2, 0, 3, 1, 0, 2]
    """
    n = int(np.prod(shape))
    k = len(offsets)
    coords = np.stack(np.unravel_index(np.arange(n), shape), axis=-1)
    nbr = (coords[:, None, :] + offsets[None, :, :]) % np.asarray(shape)
    dst = np.ravel_multi_index(tuple(np.moveaxis(nbr, -1, 0)), shape).reshape(-1)
    src = np.repeat(np.arange(n, dtype=np.int64), k)
    links = len(src)
    return Topology(spec=spec, kind=kind, num_compute=n, num_nodes=n, link_src=src,
                    link_dst=dst.astype(np.int64), link_bandwidth=np.full(links, float(link_bandwidth)),
                    link_latency=np.full(links, float(link_latency)), shape=shape, wraps=True,
                    port_offsets=offsets.astype(np.int64), params=params or {})


def from_links(kind: str, spec: str, n: int, src, dst, link_bandwidth: float, link_latency: float, *,
               shape: tuple[int, ...] | None = None, wraps: bool = False, params: dict | None = None) -> Topology:
    """A switchless topology of ``n`` nodes from directed links ``src[i] -> dst[i]``, laid out node-major
    (stably: the order of a node's links, its port order, is kept); every link of the same bandwidth (bytes/s)
    and latency (s).

    Raises:
        TopologyError: an endpoint outside 0..n-1, or nodes that cannot all reach each other.

    Source: docs/topology.md, "Direct-connect families" (switchless topologies as node-major link arrays).

    >>> from_links("path", "path", 2, [1, 0], [0, 1], 1.0, 0.0).link_src.tolist()
    [0, 1]
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    order = np.argsort(src, kind="stable")
    src, dst = src[order], dst[order]
    links = len(src)
    return Topology(spec=spec, kind=kind, num_compute=n, num_nodes=n, link_src=src, link_dst=dst,
                    link_bandwidth=np.full(links, float(link_bandwidth)),
                    link_latency=np.full(links, float(link_latency)), shape=shape, wraps=wraps,
                    params=params or {})


def undirected(kind: str, spec: str, n: int, edges, link_bandwidth: float, link_latency: float,
               **kw) -> Topology:
    """:func:`from_links` with both directions of every undirected edge (u, v) of ``edges`` (E, 2): the links
    u -> v of all edges first, then v -> u, before the node-major sort.

    Raises:
        TopologyError: as :func:`from_links`.

    Source: docs/topology.md, "Direct-connect families"; Zhao et al. (NSDI'25) App. A.6 (a bidirectional graph
    as a digraph with both directions of every edge).

    >>> undirected("k2", "k2", 2, [(0, 1)], 1.0, 0.0).link_dst.tolist()
    [1, 0]
    """
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return from_links(kind, spec, n, np.concatenate([e[:, 0], e[:, 1]]), np.concatenate([e[:, 1], e[:, 0]]),
                      link_bandwidth, link_latency, **kw)
