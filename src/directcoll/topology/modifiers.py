"""Heterogeneous links from a spec: ``links(SPEC,SELECTOR,bandwidth=B,latency=T)`` sets or scales the bandwidth
and latency of a chosen set of links of any topology (Zhao et al. App. E.3: links (w, u) of their own bandwidth
B_{w,u} and latency alpha_{w,u}).

Selectors (at most one kind; none selects every link):

- ``dim=K``: the links along grid dimension K (0-based) of a topology with a grid shape (torus, mesh, ring,
  hypercube, HyperX, circulant ...): on a Cayley topology the ports whose offset moves dimension K only, else
  the links whose endpoints' coordinates differ in dimension K only.
- ``offset=S``: on a topology with a one-dimensional shape (rings, circulants), the links u -> u + S (mod N),
  S in 0..N-1 (write N - s for -s).
- ``link=U-V`` (repeatable): every directed link from compute node U to compute node V; ``cable=U-V``
  (repeatable): those of both directions.

Values: ``bandwidth=`` a bandwidth with its unit (``100gbps``, ``50gb/s``) or a factor of the link's own
(``0.5x``); ``latency=`` a time with its unit (``2us``, ``500ns``) or a factor (``10x``). At least one of them.
Modifiers nest: ``links(links(torus:4x4,dim=0,bandwidth=0.5x),dim=1,latency=2us)``. Like a network file's,
the values a modifier sets are kept per link by ``simulate`` and ``compare`` over a preset's link bandwidth or
latency (``params["per_link"]``); the other links keep the spec's (400 Gb/s, 100 ns unless told otherwise).

Source: Zhao et al. (NSDI'25) App. E.3 (heterogeneous links); docs/topology.md, "Heterogeneous links".
"""

from __future__ import annotations

import re

import numpy as np

from directcoll.errors import SpecError, TopologyError
from directcoll.topology.linktable import bandwidth_value, latency_value
from directcoll.topology.model import Topology

#: selector keys and value keys of ``links(...)``, in their canonical order
SELECTOR_KEYS = ("dim", "offset", "link", "cable")
VALUE_KEYS = ("bandwidth", "latency")
#: keys that may repeat
REPEATABLE = ("link", "cable")
_PAIR = re.compile(r"([0-9]+)-([0-9]+)")
_FACTOR = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)x")


def links_spec(base: str, settings) -> str:
    """The canonical spec of :func:`modify_links`: ``links(BASE,KEY=VALUE,...)`` with selectors first (dim,
    offset, link, cable), then bandwidth and latency, each value as given.

    Raises:
        Nothing: string formatting.

    Source: docs/topology.md, "Heterogeneous links" (the ``links(...)`` spec modifier).

    >>> links_spec("torus:4x4", [("bandwidth", "0.5x"), ("dim", "0")])
    'links(torus:4x4,dim=0,bandwidth=0.5x)'
    """
    order = {k: i for i, k in enumerate(SELECTOR_KEYS + VALUE_KEYS)}
    items = sorted(settings, key=lambda kv: order[kv[0]])
    return f"links({base},{','.join(f'{k}={v}' for k, v in items)})"


def _int(spec: str, key: str, text: str) -> int:
    if not text.isdigit():
        raise SpecError(f"{spec}: {key}={text} is not a non-negative integer (ASCII digits)")
    return int(text)


def _pair(spec: str, key: str, text: str, n: int) -> tuple[int, int]:
    m = _PAIR.fullmatch(text)
    if not m:
        raise SpecError(f"{spec}: {key}={text} is not a pair of compute nodes; accepted: {key}=U-V, e.g. {key}=0-1")
    u, v = int(m.group(1)), int(m.group(2))
    if max(u, v) >= n:
        raise SpecError(f"{spec}: {key}={text} names a node outside the compute nodes 0..{n - 1}")
    return u, v


def _selected(g: Topology, spec: str, selectors: list[tuple[str, str]]) -> np.ndarray:
    """(L,) bool: the links the selectors choose (every link without selectors)."""
    kinds = {k for k, _ in selectors}
    if not kinds:
        return np.ones(g.num_links, bool)
    if len(kinds) > 1 and not kinds <= {"link", "cable"}:
        raise SpecError(f"{spec}: give one selector kind (dim=K, offset=S, or link=U-V / cable=U-V), got "
                        f"{', '.join(sorted(kinds))}")
    key, text = selectors[0]
    n = g.num_compute
    compute = (g.link_src < n) & (g.link_dst < n)
    if key in ("dim", "offset") and not g.grid_is_links:
        raise SpecError(f"{spec}: {key}= selects links by the grid, and a placed job's grid is not its links; "
                        "modify the physical network inside placed(...), or select link=U-V or cable=U-V")
    if key == "dim":
        k = _int(spec, key, text)
        if g.shape is None or k >= len(g.shape):
            dims = "no grid shape" if g.shape is None else f"dimensions 0..{len(g.shape) - 1}"
            raise SpecError(f"{spec}: dim={k} but {g.spec} has {dims}; accepted: dim=K on a grid topology")
        if g.port_offsets is not None:
            moves = g.port_offsets != 0
            port = moves[:, k] & (moves.sum(axis=1) == 1)
            return port[np.arange(g.num_links) % len(g.port_offsets)]
        sel = np.zeros(g.num_links, bool)
        idx = np.flatnonzero(compute)
        diff = g.coords(g.link_src[idx]) != g.coords(g.link_dst[idx])
        sel[idx] = diff[:, k] & (diff.sum(axis=1) == 1)
        return sel
    if key == "offset":
        s = _int(spec, key, text)
        if g.shape is None or len(g.shape) != 1:
            raise SpecError(f"{spec}: offset=S needs a one-dimensional topology (ring, circulant), {g.spec} is "
                            "not one; accepted there: dim=K, link=U-V, cable=U-V")
        if s >= n:
            raise SpecError(f"{spec}: offset={s} must be in 0..{n - 1} (write N - s for -s)")
        return compute & ((g.link_dst - g.link_src) % n == s)
    sel = np.zeros(g.num_links, bool)
    for key, text in selectors:
        u, v = _pair(spec, key, text, n)
        sel |= (g.link_src == u) & (g.link_dst == v)
        if key == "cable":
            sel |= (g.link_src == v) & (g.link_dst == u)
    return sel


def _value(spec: str, key: str, text: str, own: np.ndarray) -> np.ndarray:
    m = _FACTOR.fullmatch(text)
    if m:
        factor = float(m.group(1))
        if key == "bandwidth" and factor <= 0:
            raise SpecError(f"{spec}: bandwidth={text}: a factor must be > 0")
        return own * factor
    convert = bandwidth_value if key == "bandwidth" else latency_value
    if key == "latency" and re.fullmatch(r"[0-9.eE+-]+", text):
        raise SpecError(f"{spec}: latency={text} needs its unit (e.g. 500ns, 2us) or a factor (e.g. 10x)")
    return np.full(len(own), convert(text, f"{spec}: {key}"))


def modify_links(g: Topology, settings) -> Topology:
    """G with the bandwidth and/or latency of chosen links set (100gbps, 2us) or scaled (0.5x) (Zhao et al. App.
    E.3): the links along grid dimension K, of offset S (rings, circulants), or named U-V; none: every link.

    Selectors and values as in the module docstring.

    Args:
        g: any topology.
        settings: (key, value text) pairs, keys of :data:`SELECTOR_KEYS` and :data:`VALUE_KEYS`, values as
            written in a spec (``("dim", "0")``, ``("bandwidth", "0.5x")``, ``("latency", "2us")``).

    Returns:
        A Topology with the same nodes, links (order kept), shape, Cayley offsets, kind and params as G and the
        changed bandwidths (bytes/s) and latencies (s) of the selected links; its spec is :func:`links_spec`,
        which rebuilds it. ``params["per_link"]`` names the values set, which the simulators then keep per link
        over a preset's (:func:`directcoll.simulate.params.resolve_network`), as a network file's.

    Raises:
        SpecError: an unknown or repeated key, no value key, a selector that does not fit G (``dim`` beyond its
            dimensions, ``offset`` off a one-dimensional topology, a node outside 0..N-1), a selection of no
            link, or a bad value; the message names the spec and what is accepted.
        TopologyError: ``g`` is not a Topology.

    Source: Zhao et al. (NSDI'25) App. E.3 (links of their own bandwidth and latency); docs/topology.md.

    >>> from directcoll.topology.families import torus
    >>> t = modify_links(torus((3, 3)), [("dim", "1"), ("bandwidth", "0.5x"), ("latency", "1us")])
    >>> t.spec, sorted(set((t.link_bandwidth * 8 / 1e9).tolist())), sorted(set(t.link_latency.tolist()))
    ('links(torus:3x3,dim=1,bandwidth=0.5x,latency=1us)', [200.0, 400.0], [1e-07, 1e-06])
    """
    if not isinstance(g, Topology):
        raise TopologyError(f"links: expected a Topology, got {type(g).__name__} {g!r}")
    settings = [(str(k), str(v)) for k, v in settings]
    spec = links_spec(g.spec, settings) if all(k in SELECTOR_KEYS + VALUE_KEYS for k, _ in settings) else \
        f"links({g.spec},...)"
    seen = set()
    for k, _ in settings:
        if k not in SELECTOR_KEYS + VALUE_KEYS:
            raise SpecError(f"{spec}: unknown key {k!r}; accepted: {', '.join(SELECTOR_KEYS + VALUE_KEYS)}")
        if k in seen and k not in REPEATABLE:
            raise SpecError(f"{spec}: {k} is given twice (only link= and cable= repeat)")
        seen.add(k)
    values = [(k, v) for k, v in settings if k in VALUE_KEYS]
    if not values:
        raise SpecError(f"{spec}: give bandwidth=B and/or latency=T (a value with its unit or a factor such as "
                        "0.5x)")
    sel = _selected(g, spec, [(k, v) for k, v in settings if k in SELECTOR_KEYS])
    if not sel.any():
        raise SpecError(f"{spec}: the selector chooses no link of {g.spec}")
    bw, lat = g.link_bandwidth.astype(float).copy(), g.link_latency.astype(float).copy()
    for k, v in values:
        if k == "bandwidth":
            bw[sel] = _value(spec, k, v, bw[sel])
        else:
            lat[sel] = _value(spec, k, v, lat[sel])
    per_link = tuple(k for k in VALUE_KEYS if k in dict(values) or k in g.params.get("per_link", ()))
    return Topology(spec=spec, kind=g.kind, num_compute=g.num_compute, num_nodes=g.num_nodes, link_src=g.link_src,
                    link_dst=g.link_dst, link_bandwidth=bw, link_latency=lat, shape=g.shape, wraps=g.wraps,
                    port_offsets=g.port_offsets, params={**g.params, "per_link": per_link})
