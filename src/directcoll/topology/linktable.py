"""Networks given as named nodes and links with optional per-link values: what network files
(:mod:`directcoll.topology.files`) and networkx graphs (:meth:`Topology.from_networkx
<directcoll.topology.model.Topology.from_networkx>`) are read into before they become a Topology.

Per-link values are named ``bandwidth`` and ``latency``: a number is bit/s and seconds, text carries its unit
(``"100Gbps"``, ``"12.5GB/s"``, ``"500ns"``; :mod:`directcoll.units`). An undirected edge is a link in each
direction (u -> v, then v -> u); a directed edge one link; parallel edges are parallel links.

Node numbering: compute nodes first, then the nodes marked as switches (``switch`` true), each group in the
numeric order of the names when every name is an integer (``"0"``, ``"7"``, ``12``: so a file whose nodes are
``0..N-1`` keeps them), else in the order the names are first seen (declared nodes first, then link endpoints in
link order). Rank r runs on compute node r.

Source: docs/topology.md, "Your own network"; docs/architecture.md, "Topology" (the directed multigraph of compute
nodes, switches and links).
"""

from __future__ import annotations

import math
import numbers
import re
from array import array

import numpy as np

from directcoll.errors import DirectcollError, MissingDependencyError, SpecError, TopologyError
from directcoll.resources import check_memory
from directcoll.topology.sizes import check_caps, graph_size
from directcoll.units import (
    MAX_BANDWIDTH,
    MAX_TIME,
    MIN_BANDWIDTH,
    format_time,
    parse_bandwidth,
    parse_duration,
)

#: what a bandwidth or latency may be, for messages
BANDWIDTH_FORMS = ("a rate from 1 bit/s to 1 Eb/s with its unit (100Gbps, 400Gb/s, 12.5GB/s) or a plain number "
                   "of bit/s (1e11)")
LATENCY_FORMS = (f"a time from 0 to {MAX_TIME:g} s with its unit (500ns, 1us) or a plain number of seconds "
                 "(5e-7)")
#: how to install networkx (the ``networkx`` extra)
NETWORKX_EXTRA = "pip install 'directcoll[networkx]'"
#: networkx keeps a few dicts per node and per edge: bytes each (measured with tracemalloc, rounded up)
BYTES_PER_NETWORKX_NODE, BYTES_PER_NETWORKX_EDGE = 600, 700
_INTEGER = re.compile(r"[+-]?[0-9]{1,18}")


def _number(value) -> float | None:
    """A Python or numpy real number (not a bool) as a float; numeric text as a float; else None."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    if isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
        try:
            return float(value)
        except OverflowError:  # an int beyond float's range: infinite, which the callers refuse
            return math.inf
    return None


def bandwidth_value(value, where: str) -> float:
    """A link's bandwidth in bytes/s from a file or a graph: a number (or numeric text) of bit/s, or text with
    its unit (``"100Gbps"``, ``"12.5GB/s"``); None (no value) gives NaN, for the default.

    Raises:
        SpecError: anything else, or a bandwidth outside 1 bit/s to 1 Eb/s; the message starts with
            ``where`` (the file and line, or the graph's edge) and lists the accepted forms.

    Source: docs/topology.md, "Your own network" (numbers are bit/s, text carries its unit); SI / IEC 80000-13
    prefixes (:func:`directcoll.units.parse_bandwidth`).

    >>> bandwidth_value("100Gbps", "x"), bandwidth_value(1e11, "x"), bandwidth_value("1e11", "x")
    (12500000000.0, 12500000000.0, 12500000000.0)
    >>> bandwidth_value("0Gbps", "net.edges: line 3")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.SpecError: net.edges: line 3: bandwidth '0Gbps' is not a positive rate; accepted: a rate ...
    """
    if value is None:
        return math.nan
    bits = _number(value)
    if bits is None and isinstance(value, str):
        try:
            return parse_bandwidth(value.strip())
        except DirectcollError:
            pass
    elif bits is not None and MIN_BANDWIDTH <= bits / 8 <= MAX_BANDWIDTH:  # NaN and infinities fail too
        return bits / 8
    raise SpecError(f"{where}: bandwidth {_short(value)} is not a positive rate; accepted: {BANDWIDTH_FORMS}")


def latency_value(value, where: str) -> float:
    """A link's latency in seconds from a file or a graph: a number (or numeric text) of seconds, or text with
    its unit (``"500ns"``); None (no value) gives NaN, for the default.

    Raises:
        SpecError: anything else, or a latency outside 0 to an hour; the message starts with ``where`` and lists
            the accepted forms.

    Source: docs/topology.md, "Your own network"; SI prefixes (:func:`directcoll.units.parse_duration`).

    >>> latency_value("500ns", "x"), latency_value(1e-7, "x")
    (5e-07, 1e-07)
    """
    if value is None:
        return math.nan
    seconds = _number(value)
    if seconds is None and isinstance(value, str):
        try:
            return parse_duration(value.strip(), "latency")
        except DirectcollError:
            pass
    elif seconds is not None and 0 <= seconds <= MAX_TIME:
        return seconds
    raise SpecError(f"{where}: latency {_short(value)} is not a time >= 0; accepted: {LATENCY_FORMS}")


def flag_value(value, where: str, what: str = "switch") -> bool:
    """A yes/no attribute (``switch``, ``directed``): a bool, 0/1, or the text true/false, yes/no, 1/0 (any case).

    Raises:
        SpecError: anything else, naming ``where`` and ``what``.

    Source: the GraphML specification's ``boolean`` attribute type (true/false); docs/topology.md, "Your own
    network".

    >>> flag_value("True", "x"), flag_value(0, "x"), flag_value(None, "x")
    (True, False, False)
    """
    if value is None:
        return False
    if isinstance(value, bool | np.bool_) or (isinstance(value, numbers.Integral) and value in (0, 1)):
        return bool(value)
    text = str(value).strip().lower()
    if text in ("true", "yes", "1"):
        return True
    if text in ("false", "no", "0", ""):
        return False
    raise SpecError(f"{where}: {what} {_short(value)} is not a yes/no value; accepted: true or false")


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:30] + "..." + text[-6:]


def _integer(name) -> int | None:
    if isinstance(name, numbers.Integral) and not isinstance(name, bool | np.bool_):
        return int(name)
    if isinstance(name, str) and _INTEGER.fullmatch(name):
        return int(name)
    return None


class LinkTable:
    """Named nodes and directed links with optional per-link bandwidths and latencies (NaN: not given), filled
    by a reader and turned into a Topology's fields by :meth:`fields`.

    Args:
        what: the source in messages, e.g. ``"file:net.graphml"`` or ``"networkx graph 'G'"``.

    Raises:
        Nothing: an empty table; :meth:`node` and :meth:`link` check what goes into it.

    Source: docs/topology.md, "Your own network" (numbering, directions, defaults).

    >>> table = LinkTable("example")
    >>> table.link("a", "b", math.nan, 1e-7, "line 1", directed=False)
    >>> fields = table.fields(50e9, 1e-7)
    >>> fields["num_compute"], fields["link_src"].tolist(), fields["link_dst"].tolist()
    (2, [0, 1], [1, 0])
    """

    def __init__(self, what: str) -> None:
        self.what = what
        self.ids: dict = {}
        self.names: list = []
        self.switches: set[int] = set()
        self.declared: set[int] = set()
        self.src, self.dst = array("q"), array("q")
        self.bandwidth, self.latency = array("d"), array("d")
        self.directed = self.undirected = 0

    def node(self, name, where: str, *, switch: bool = False, declared: bool = False) -> int:
        """The position of node ``name`` (first-seen order), adding it if new; ``switch`` marks it a switch,
        ``declared`` (a node element or list entry, not a link endpoint) refuses a name declared before.

        Raises:
            SpecError: an empty or unhashable name, or a node declared twice; the message starts with ``where``.

        Source: docs/topology.md, "Your own network".

        >>> LinkTable("x").node("a", "line 1")
        0
        """
        if name is None or isinstance(name, bool) or name == "":
            raise SpecError(f"{where}: node name {_short(name)} is not a name; accepted: a non-empty text or an "
                            "integer")
        try:
            pos = self.ids.get(name)
        except TypeError:
            raise SpecError(f"{where}: node name {_short(name)} is not a name; accepted: a non-empty text or an "
                            "integer") from None
        if pos is None:
            pos = self.ids[name] = len(self.names)
            self.names.append(name)
        if declared:
            if pos in self.declared:
                raise SpecError(f"{where}: node {_short(name)} is declared twice; accepted: each node once")
            self.declared.add(pos)
        if switch:
            self.switches.add(pos)
        return pos

    def link(self, u, v, bandwidth: float, latency: float, where: str, *, directed: bool) -> None:
        """Add the links of an edge u - v: one (u -> v) when ``directed``, else two (u -> v, v -> u).
        ``bandwidth`` (bytes/s) and ``latency`` (s) are NaN where not given.

        Raises:
            SpecError: a self-loop (u is v) or a bad node name; the message starts with ``where``.

        Source: docs/topology.md, "Your own network" (an undirected edge is a link in each direction).

        >>> table = LinkTable("x")
        >>> table.link(0, 1, 1e9, 0.0, "edge 1", directed=True)
        >>> len(table.src)
        1
        """
        a, b = self.ids.get(u), self.ids.get(v)  # the common case first: both seen before
        if a is None or b is None:
            a, b = self.node(u, where), self.node(v, where)
        if a == b:
            raise SpecError(f"{where}: a self-loop at node {_short(u)}; accepted: links between two different nodes")
        self.src.append(a)
        self.dst.append(b)
        self.bandwidth.append(bandwidth)
        self.latency.append(latency)
        if directed:
            self.directed += 1
        else:
            self.undirected += 1
            self.src.append(b)
            self.dst.append(a)
            self.bandwidth.append(bandwidth)
            self.latency.append(latency)

    def numbering(self) -> np.ndarray:
        """Node id of every position (first-seen order): compute nodes ``0..N-1`` then switches, each group by
        integer name when every name is an integer, else in first-seen order. int64 (nodes,).

        Raises:
            Nothing: reads the table.

        Source: docs/topology.md, "Your own network" (node numbering).

        >>> table = LinkTable("x")
        >>> table.link("10", "2", math.nan, math.nan, "line 1", directed=True)
        >>> table.numbering().tolist()
        [1, 0]
        """
        n = len(self.names)
        keys = [_integer(name) for name in self.names]
        numeric = all(k is not None for k in keys)
        compute = [p for p in range(n) if p not in self.switches]
        switches = sorted(self.switches)
        if numeric:
            compute.sort(key=lambda p: (keys[p], str(self.names[p])))
            switches.sort(key=lambda p: (keys[p], str(self.names[p])))
        ids = np.empty(n, dtype=np.int64)
        ids[np.asarray(compute + switches, dtype=np.int64)] = np.arange(n, dtype=np.int64)
        return ids

    def fields(self, default_bandwidth: float, default_latency: float) -> dict:
        """The Topology fields ``num_compute``, ``num_nodes``, ``link_src``, ``link_dst``, ``link_bandwidth``
        (bytes/s) and ``link_latency`` (s), links in the order added, with the defaults where no value was given,
        and ``params``: ``per_link`` (the values the source gave: "bandwidth", "latency"), ``directed`` and a
        one-line ``description`` saying where the defaults were used. Sized against the caps and the memory
        budget before the arrays are built.

        Raises:
            SpecError: no nodes, no links, only switches, or over the caps of
                :func:`~directcoll.topology.sizes.check_caps`.
            ResourceError: the topology would need more memory than the budget.

        Source: docs/topology.md, "Your own network"; docs/architecture.md, "Engines, runtimes and scale" (estimate
        memory first).

        >>> table = LinkTable("x")
        >>> table.link(0, 1, 1e9, math.nan, "line 1", directed=False)
        >>> table.fields(50e9, 1e-7)["params"]["description"]
        'x: 2 nodes, 2 links (undirected edges); bandwidth given on every link; latency 100ns (default) on all 2 links'
        """
        n, links = len(self.names), len(self.src)
        if n == 0 or links == 0:
            raise SpecError(f"{self.what}: the network has {'no nodes' if n == 0 else 'no links'}; accepted: at least "
                            "two compute nodes and the links between them")
        if len(self.switches) == n:
            raise SpecError(f"{self.what}: all {n:,} nodes are switches; accepted: at least one compute node")
        size = graph_size(n, links, links)
        check_caps(self.what, size)
        check_memory(f"{self.what} ({n:,} nodes, {links:,} links)", size.nbytes)
        ids = self.numbering()
        src = ids[np.frombuffer(self.src, dtype=np.int64)]
        dst = ids[np.frombuffer(self.dst, dtype=np.int64)]
        notes, per_link, out = [], [], {}
        for name, values, default, show in (
                ("bandwidth", self.bandwidth, default_bandwidth, format_rate),
                ("latency", self.latency, default_latency, lambda s: format_time(s).replace(" ", ""))):
            arr = np.array(np.frombuffer(values, dtype=np.float64))
            missing = np.isnan(arr)
            given = links - int(missing.sum())
            arr[missing] = default
            out[name] = arr
            if given:
                per_link.append(name)
            if given == links:
                notes.append(f"{name} given on every link")
            else:
                where = (f"all {links:,} links" if given == 0 else
                         f"the {links - given:,} of {links:,} links without one")
                notes.append(f"{name} {show(default)} (default) on {where}")
        kinds = [k for k, c in (("directed", self.directed), ("undirected", self.undirected)) if c]
        switches = f", {len(self.switches):,} switches" if self.switches else ""
        description = (f"{self.what}: {n - len(self.switches):,} nodes{switches}, {links:,} links "
                       f"({' and '.join(kinds)} edges); {'; '.join(notes)}")
        return {"num_compute": n - len(self.switches), "num_nodes": n, "link_src": src, "link_dst": dst,
                "link_bandwidth": out["bandwidth"], "link_latency": out["latency"],
                "params": {"per_link": tuple(per_link), "directed": not self.undirected,
                           "description": description}}


def format_rate(bytes_per_s: float) -> str:
    """A bandwidth for a message, in bit/s with an SI prefix: ``400Gbps``.

    Raises:
        Nothing: formatting.

    Source: SI prefixes; link rates as the papers quote them (Swing Sec. 5: 400 Gb/s links).

    >>> format_rate(50e9), format_rate(1.25e8)
    ('400Gbps', '1Gbps')
    """
    bits = bytes_per_s * 8
    for prefix, f in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if bits >= f:
            return f"{bits / f:.4g}{prefix}bps"
    return f"{bits:.4g}bps"


def table_of_networkx(graph, bandwidth: str = "bandwidth", latency: str = "latency") -> LinkTable:
    """The :class:`LinkTable` of a networkx graph: its nodes (``switch`` node attribute), its edges in the
    graph's edge order (a MultiDiGraph whose edge keys are exactly ``0..E-1``, as
    :func:`to_networkx` writes them, in key order) with the edge attributes named ``bandwidth`` and ``latency``
    (numbers are bit/s and seconds, text carries its unit). Undirected graphs give a link each way.

    Raises:
        TopologyError: ``graph`` is not a networkx graph.
        SpecError: a bad attribute value or node name, or a self-loop, naming the edge.

    Source: docs/topology.md, "Your own network" (``Topology.from_networkx``).

    >>> import networkx as nx
    >>> table = table_of_networkx(nx.path_graph(3))
    >>> len(table.names), len(table.src)
    (3, 4)
    """
    if not all(hasattr(graph, a) for a in ("is_directed", "is_multigraph", "nodes", "edges")):
        raise TopologyError(f"from_networkx needs a networkx graph, got {type(graph).__name__}")
    directed, multi = graph.is_directed(), graph.is_multigraph()
    name = getattr(graph, "name", "")
    what = f"networkx graph {name!r}" if name else "networkx graph"
    table = LinkTable(what)
    check_memory(f"{what} ({graph.number_of_nodes():,} nodes, {graph.number_of_edges():,} edges)",
                 graph_size(graph.number_of_nodes(), 2 * graph.number_of_edges(), 0).nbytes)
    for node, data in graph.nodes(data=True):
        where = f"{what}: node {_short(node)}"
        table.node(node, where, switch=flag_value(data.get("switch"), where), declared=True)
    if multi:
        edges = graph.edges(keys=True, data=True)
        if directed:
            keys = [k for _, _, k, _ in edges]
            if all(isinstance(k, int) for k in keys) and sorted(keys) == list(range(len(keys))):
                edges = sorted(edges, key=lambda e: e[2])
    else:
        edges = ((u, v, None, d) for u, v, d in graph.edges(data=True))
    for u, v, _, data in edges:
        where = f"{what}: edge ({_short(u)}, {_short(v)})"
        table.link(u, v, bandwidth_value(data.get(bandwidth), where), latency_value(data.get(latency), where),
                   where, directed=directed)
    return table


def to_networkx(topology):
    """A networkx MultiDiGraph of a topology: nodes ``0..num_nodes-1`` with ``switch`` (bool), one edge per
    directed link keyed by its link id with ``bandwidth`` (bit/s) and ``latency`` (s) as floats; the graph's
    ``name`` and ``spec`` are the topology's spec.

    Raises:
        MissingDependencyError: networkx is not installed (:data:`NETWORKX_EXTRA`).
        ResourceError: the graph would need more memory than the budget.

    Source: docs/topology.md, "Your own network" (``Topology.to_networkx``).

    >>> from directcoll.topology import parse
    >>> g = to_networkx(parse("ring:3"))
    >>> g.number_of_edges(), g.edges[0, 1, 0]["bandwidth"]
    (6, 400000000000.0)
    """
    try:
        import networkx as nx
    except ImportError as exc:
        raise MissingDependencyError(f"to_networkx needs networkx: {NETWORKX_EXTRA} ({exc})") from None
    check_memory(f"the networkx graph of {topology.spec}", BYTES_PER_NETWORKX_NODE * topology.num_nodes
                 + BYTES_PER_NETWORKX_EDGE * topology.num_links)
    g = nx.MultiDiGraph(name=topology.spec, spec=topology.spec)
    g.add_nodes_from((i, {"switch": i >= topology.num_compute}) for i in range(topology.num_nodes))
    values = zip((topology.link_bandwidth * 8).tolist(), topology.link_latency.tolist(), strict=True)
    g.add_edges_from((s, d, i, {"bandwidth": bw, "latency": lat}) for i, (s, d, (bw, lat)) in enumerate(
        zip(topology.link_src.tolist(), topology.link_dst.tolist(), values, strict=True)))
    return g
