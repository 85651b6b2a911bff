"""Networks from files: ``file:net.graphml``, ``file:net.edges`` and ``file:net.json`` are accepted wherever a
topology spec is (``compare``, ``schedule``, ``cost``, ``simulate``, ``run``, ``topology describe``, the library's
``parse``), and ``directcoll topology export SPEC -o FILE`` writes any topology in each format.

Formats (by suffix: ``.graphml``/``.xml``, ``.edges``/``.edgelist``/``.txt``, ``.json``; docs/topology.md, "Your
own network"):

* GraphML, as ``networkx.write_graphml`` and yEd write it: edge attributes named ``bandwidth`` and ``latency``
  (any GraphML type; a ``<default>`` of the key applies), node attribute ``switch`` (boolean); ``edgedefault``
  and each edge's ``directed`` say whether an edge is one link or two. One graph per file; nested graphs,
  hyperedges and XML entity declarations are refused.
* Edge list: one edge per line, ``SRC DST [BANDWIDTH [LATENCY]]`` separated by spaces or commas, ``-`` for no
  value, or networkx's ``SRC DST {'bandwidth': 1e11}``; an optional header line naming the columns (``src dst
  latency``); ``#`` starts a comment; directive lines ``directed: true`` (default false, before the first edge),
  ``nodes: A B ...`` and ``switches: S T ...`` (declare nodes in order, before the first edge) and
  ``bandwidth: 100Gbps`` / ``latency: 500ns`` (the value of links without one).
* JSON: ``{"directed": false, "nodes": ["a", {"id": "s", "switch": true}], "links": [{"src": "a", "dst": "s",
  "bandwidth": "100Gbps", "latency": 5e-7}], "bandwidth": ..., "latency": ...}``; ``source``/``target`` and
  ``edges`` are accepted too (networkx's node-link data); only ``links`` is required.

Values and numbering are those of :mod:`directcoll.topology.linktable` (numbers are bit/s and seconds). Links
without a value get ``link_bandwidth`` / ``link_latency`` (default 400 Gb/s and 100 ns, as every family), and the
topology's ``params["description"]`` says so. Every problem is one :class:`~directcoll.errors.SpecError` line
naming the file, the line or element, and what is accepted. A file topology has kind ``file``, no grid shape
(algorithms that need grid coordinates refuse it), and the spec ``file:ABSOLUTE_PATH``, which rebuilds it.

Source: docs/topology.md, "Your own network"; the GraphML specification (Brandes et al., "GraphML Progress
Report", GD 2001; graphml.graphdrawing.org); docs/architecture.md, "Engines, runtimes and scale" (size before building).
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
from xml.sax import SAXParseException
from xml.sax.handler import ContentHandler
from xml.sax.saxutils import escape

import numpy as np

from directcoll.errors import SpecError
from directcoll.inputs import check_xml_encoding, regular_file_size
from directcoll.resources import check_memory
from directcoll.topology.linktable import LinkTable, bandwidth_value, flag_value, latency_value
from directcoll.topology.model import DEFAULT_LINK_BANDWIDTH, DEFAULT_LINK_LATENCY, Topology
from directcoll.topology.sizes import MAX_LINKS, MAX_NODES, Size

FILE_PREFIX = "file:"
#: file suffix -> format
SUFFIXES = {".graphml": "graphml", ".xml": "graphml", ".edges": "edges", ".edgelist": "edges", ".txt": "edges",
            ".json": "json"}
FORMATS = ("graphml", "edges", "json")
#: the fewest bytes one edge takes in each format (``<edge source="a" target="b"/>``, ``a b``, ``{"src":"a",
#: "dst":"b"},``): bounds the links a file can hold from its size alone
MIN_EDGE_BYTES = {"graphml": 30, "edges": 4, "json": 20}
#: peak bytes of reading a file and building its topology, per byte of the file, measured with tracemalloc on
#: files of the fewest bytes per edge (rounded up; JSON holds the whole document as Python objects)
READ_BYTES_PER_FILE_BYTE = {"graphml": 16, "edges": 40, "json": 30}
#: links written per chunk (bounds the Python objects of a write)
WRITE_CHUNK = 1 << 16
_SOURCE, _TARGET = ("src", "source", "u", "from"), ("dst", "target", "v", "to")
_COLUMNS = {**dict.fromkeys(_SOURCE, "src"), **dict.fromkeys(_TARGET, "dst"), "bandwidth": "bandwidth",
            "bw": "bandwidth", "latency": "latency", "lat": "latency", "delay": "latency"}
_DIRECTIVE = re.compile(r"(directed|nodes|switches|bandwidth|latency)\s*:(.*)$", re.IGNORECASE)
_DICT_LINE = re.compile(r"(\S+?)[\s,]+(\S+?)[\s,]+(\{.*\})$")
_SPLIT = re.compile(r"[\s,]+")
_ACCEPTED = "accepted: file:PATH of a .graphml, .edges or .json network (docs/topology.md, 'Your own network')"


def is_file_spec(spec) -> bool:
    """Whether ``spec`` is a ``file:PATH`` spec (the prefix in any case, spaces around it allowed).

    Raises:
        Nothing: a test on text.

    Source: docs/topology.md, "Your own network".

    >>> is_file_spec("file:net.graphml"), is_file_spec("torus:4x4"), is_file_spec(None)
    (True, False, False)
    """
    return isinstance(spec, str) and spec.strip()[: len(FILE_PREFIX)].lower() == FILE_PREFIX


def file_path(spec: str) -> str:
    """The path of a ``file:PATH`` spec, as given (``~`` expanded; case and spaces inside kept).

    Raises:
        SpecError: no path after ``file:``.

    Source: docs/topology.md, "Your own network".

    >>> file_path(" FILE:nets/a b.json ")
    'nets/a b.json'
    """
    path = spec.strip()[len(FILE_PREFIX):].strip()
    if not path:
        raise SpecError(f"topology spec {spec.strip()!r}: no path after 'file:'; {_ACCEPTED}")
    return os.path.expanduser(path)


def file_format(path, fmt: str | None = None) -> str:
    """The format of a network file: ``fmt`` when given, else from the suffix of ``path`` (:data:`SUFFIXES`).

    Raises:
        SpecError: an unknown format or suffix, listing the accepted ones.

    Source: docs/topology.md, "Your own network".

    >>> file_format("net.GraphML"), file_format("net.dat", "edges")
    ('graphml', 'edges')
    """
    if fmt is not None:
        if fmt not in FORMATS:
            raise SpecError(f"network format {fmt!r}: accepted: {', '.join(FORMATS)}")
        return fmt
    suffix = os.path.splitext(str(path))[1].lower()
    if suffix not in SUFFIXES:
        raise SpecError(f"file:{path}: unknown suffix {suffix or '(none)'!r}; accepted: "
                        f"{', '.join(SUFFIXES)} (GraphML, edge list, JSON)")
    return SUFFIXES[suffix]


def file_size(path, fmt: str | None = None) -> Size:
    """Upper bounds on what a network file holds, from its size in bytes alone (:data:`MIN_EDGE_BYTES` per edge,
    two links per edge), with the estimated peak memory of reading it (:data:`READ_BYTES_PER_FILE_BYTE`): what
    :func:`directcoll.topology.spec.check_spec` checks against the budget before the file is read.

    Raises:
        SpecError: an unknown suffix, or a file that is missing or unreadable.

    Source: docs/topology.md, "Strict specs and sizes" and "Your own network"; docs/architecture.md, "Engines, runtimes
    and scale" (estimate memory first).

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".edges") as f:
    ...     _ = f.write("0 1\\n"); f.flush()
    ...     file_size(f.name).links
    4
    """
    fmt = file_format(path, fmt)
    nbytes = regular_file_size(path, f"{FILE_PREFIX}{path}", error=SpecError)
    links = min(2 * (nbytes // MIN_EDGE_BYTES[fmt] + 1), MAX_LINKS)
    return Size(min(links, MAX_NODES), links, links, links, READ_BYTES_PER_FILE_BYTE[fmt] * float(nbytes))


def read_network(path, *, link_bandwidth: float | None = None, link_latency: float | None = None,
                 fmt: str | None = None) -> Topology:
    """The topology of a network file (format from the suffix unless ``fmt``); links without a bandwidth or
    latency get ``link_bandwidth`` (bytes/s) / ``link_latency`` (s), by default 400 Gb/s and 100 ns.

    Returns:
        a :class:`~directcoll.topology.model.Topology` of kind ``file``, spec ``file:ABSOLUTE_PATH``, no shape;
        ``params``: ``path``, ``format``, ``per_link`` (the values the file gave), ``directed``, ``description``.

    Raises:
        SpecError: a missing or unreadable file, malformed content (naming the line or element and what is
            accepted), a bad value, a self-loop, no links, or over the caps.
        ResourceError: reading or building it would need more memory than the budget.
        TopologyError: the compute nodes are not strongly connected.

    Source: docs/topology.md, "Your own network".

    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile("w", suffix=".edges") as f:
    ...     _ = f.write("a b 100Gbps\\nb c 100Gbps 1us\\n"); f.flush()
    ...     t = read_network(f.name)
    >>> t.num_compute, t.link_bandwidth.tolist(), t.link_latency.tolist()
    (3, [12500000000.0, 12500000000.0, 12500000000.0, 12500000000.0], [1e-07, 1e-07, 1e-06, 1e-06])
    """
    path = str(path)
    what = f"{FILE_PREFIX}{path}"
    fmt = file_format(path, fmt)
    check_memory(f"reading {what}", file_size(path, fmt).nbytes)
    table = LinkTable(what)
    defaults: dict[str, float] = {}
    try:
        if fmt == "graphml":
            with open(path, "rb") as f:
                _GraphML(table, what).parse(f)
        else:
            with open(path, encoding="utf-8") as f:
                (_read_edges if fmt == "edges" else _read_json)(f, table, what, defaults)
    except UnicodeDecodeError as exc:
        raise SpecError(f"{what}: not UTF-8 text (byte {exc.start}); {_ACCEPTED}") from None
    except OSError as exc:
        raise SpecError(f"{what}: cannot be read ({exc.strerror or exc}); {_ACCEPTED}") from None
    bw = defaults.get("bandwidth", DEFAULT_LINK_BANDWIDTH if link_bandwidth is None else link_bandwidth)
    lat = defaults.get("latency", DEFAULT_LINK_LATENCY if link_latency is None else link_latency)
    fields = table.fields(bw, lat)
    fields["params"].update(path=os.path.abspath(path), format=fmt)
    return Topology(f"{FILE_PREFIX}{os.path.abspath(path)}", "file", **fields)


# -- GraphML --------------------------------------------------------------------------------------------------
class _GraphML(ContentHandler):
    """A streaming GraphML reader (SAX through defusedxml): keys, one graph, its nodes and edges with their data."""

    def __init__(self, table: LinkTable, what: str) -> None:
        super().__init__()
        self.table, self.what = table, what
        self.stack: list[str] = []
        self.keys: dict[str, tuple[str, str]] = {}  # key id -> (for, attribute name)
        self.defaults: dict[str, str] = {}
        self.key: str | None = None  # the <key> being read
        self.item: dict | None = None  # the <node> or <edge> being read
        self.text: list[str] | None = None  # text of the <data> or <default> being read
        self.data_key: str | None = None
        self.graphs = 0
        self.directed = False
        self.edges = 0

    @property
    def line(self) -> int:
        return self._locator.getLineNumber() if self._locator is not None else 0

    def fail(self, message: str) -> SpecError:
        return SpecError(f"{self.what}: line {self.line}: {message}")

    def parse(self, f) -> None:
        from defusedxml import DefusedXmlException
        from defusedxml.sax import make_parser

        check_xml_encoding(f.read(512), self.what, error=SpecError)
        f.seek(0)
        parser = make_parser()  # entity declarations and external references refused; a DOCTYPE alone is read
        parser.setContentHandler(self)
        try:
            parser.parse(f)
        except SAXParseException as exc:
            raise SpecError(f"{self.what}: line {exc.getLineNumber()}: not well-formed XML ({exc.getMessage()}); "
                            "accepted: a GraphML file as networkx.write_graphml writes it") from None
        except DefusedXmlException:
            raise self.fail("XML entity declarations are not accepted in a network file, nor external "
                            "references") from None
        if not self.graphs:
            raise SpecError(f"{self.what}: no <graph> element; accepted: a GraphML file with one graph")

    def attr(self, attrs: dict, name: str, element: str) -> str:
        if name not in attrs:
            raise self.fail(f"<{element}> without its {name!r} attribute; accepted: <{element} {name}=\"...\">")
        return attrs[name]

    def startElement(self, name: str, attrs) -> None:
        local = name.rpartition(":")[2]
        parent = self.stack[-1] if self.stack else None
        self.stack.append(local)
        if parent is None:
            if local != "graphml":
                raise self.fail(f"the root element is <{name}>; accepted: a GraphML file (<graphml> root)")
        elif parent == "graphml" and local == "key":
            self.key = self.attr(attrs, "id", "key")
            self.keys[self.key] = (attrs.get("for", "all"), attrs.get("attr.name", self.key).strip().lower())
        elif parent == "key" and local == "default":
            self.text = []
        elif local == "graph":
            if parent != "graphml":
                raise self.fail("a nested graph; accepted: one flat graph of nodes and edges")
            self.graphs += 1
            if self.graphs > 1:
                raise self.fail("a second <graph>; accepted: one graph per file")
            directed = attrs.get("edgedefault", "undirected")
            if directed not in ("directed", "undirected"):
                raise self.fail(f"edgedefault {directed!r}; accepted: directed or undirected")
            self.directed = directed == "directed"
        elif parent == "graph" and local in ("node", "edge"):
            if local == "node":
                self.item = {"id": self.attr(attrs, "id", "node"), "data": {}}
            else:
                self.edges += 1
                directed = attrs.get("directed")
                self.item = {"source": self.attr(attrs, "source", "edge"), "target": self.attr(attrs, "target", "edge"),
                             "directed": self.directed if directed is None else flag_value(
                                 directed, f"{self.what}: line {self.line}", "directed"),
                             "data": {}, "line": self.line}
        elif local == "hyperedge":
            raise self.fail("a hyperedge; accepted: edges between two nodes")
        elif local == "data" and parent in ("node", "edge") and self.item is not None:
            self.data_key = self.attr(attrs, "key", "data")
            if self.data_key not in self.keys:
                raise self.fail(f"<data key={self.data_key!r}> names no <key>; accepted: keys declared before "
                                "the graph")
            self.text = []

    def characters(self, data: str) -> None:
        if self.text is not None and self.stack[-1] in ("data", "default"):
            self.text.append(data)

    def endElement(self, name: str) -> None:
        local = self.stack.pop()
        if local == "default" and self.key is not None and self.text is not None:
            self.defaults[self.key] = "".join(self.text)
            self.text = None
        elif local == "key":
            self.key = None
        elif local == "data" and self.data_key is not None and self.item is not None and self.text is not None:
            self.item["data"][self.data_key] = "".join(self.text)
            self.text, self.data_key = None, None
        elif local in ("node", "edge") and self.stack[-1:] == ["graph"] and self.item is not None:
            item, self.item = self.item, None
            values = self.values(local, item["data"])
            if local == "node":
                where = f"{self.what}: line {self.line}: node {item['id']!r}"
                self.table.node(item["id"], where, switch=flag_value(values.get("switch"), where), declared=True)
            else:
                where = f"{self.what}: line {item['line']}: edge {self.edges}"
                self.table.link(item["source"], item["target"], bandwidth_value(values.get("bandwidth"), where),
                                latency_value(values.get("latency"), where), where, directed=item["directed"])

    def values(self, element: str, data: dict) -> dict:
        """The element's data by attribute name, the keys' defaults where it has none."""
        out = {}
        for key, (scope, name) in self.keys.items():
            if scope in (element, "all"):
                value = data.get(key, self.defaults.get(key))
                if value is not None:
                    out[name] = value.strip()
        return out


# -- edge lists -----------------------------------------------------------------------------------------------
def _read_edges(f, table: LinkTable, what: str, defaults: dict) -> None:
    columns: list[str] | None = None
    directed, linked = False, False
    for number, raw in enumerate(f, 1):
        body = raw.split("#", 1)[0].strip()
        if not body:
            continue
        where = f"{what}: line {number}"
        m = _DIRECTIVE.match(body) if ":" in body else None
        if m:
            key, value = m.group(1).lower(), m.group(2).strip()
            if key in ("directed", "nodes", "switches") and linked:
                raise SpecError(f"{where}: '{key}:' after the first edge; accepted: directives before the edges")
            if key == "directed":
                directed = flag_value(value, where, "directed")
            elif key in ("nodes", "switches"):
                for name in _SPLIT.split(value):
                    if name:
                        table.node(name, where, switch=key == "switches", declared=True)
            else:
                defaults[key] = (bandwidth_value if key == "bandwidth" else latency_value)(value, where)
            continue
        if columns is None:
            columns = ["src", "dst", "bandwidth", "latency"]
            words = [w.lower() for w in _SPLIT.split(body) if w]
            if any(w in _SOURCE for w in words) and any(w in _TARGET for w in words):
                unknown = [w for w in words if w not in _COLUMNS]
                named = [_COLUMNS.get(w) for w in words]
                if unknown or len(set(named)) != len(named):
                    why = f"unknown column {unknown[0]!r}" if unknown else "a repeated column"
                    raise SpecError(f"{where}: header {body!r}: {why}; accepted: src, dst, bandwidth, latency (each "
                                    "once, any order)")
                columns = named
                continue
        m = _DICT_LINE.match(body) if "{" in body else None
        if m:
            try:
                attrs = ast.literal_eval(m.group(3))
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                attrs = None
            if not isinstance(attrs, dict):
                raise SpecError(f"{where}: cannot read the attributes {m.group(3)[:40]!r}; accepted: a Python dict "
                                "such as {'bandwidth': 1e11, 'latency': 5e-7}")
            values = {"src": m.group(1), "dst": m.group(2), **{k: attrs.get(k) for k in ("bandwidth", "latency")}}
        else:
            tokens = [t for t in _SPLIT.split(body) if t]
            if not 2 <= len(tokens) <= len(columns):
                raise SpecError(f"{where}: {len(tokens)} fields; accepted: {' '.join(c.upper() for c in columns)} "
                                "(the first two required; '-' for no value)")
            values = {c: (None if t == "-" else t) for c, t in zip(columns, tokens, strict=False)}
        if values.get("src") is None or values.get("dst") is None:
            raise SpecError(f"{where}: an edge without both endpoints; accepted: SRC DST [BANDWIDTH [LATENCY]]")
        table.link(values["src"], values["dst"], bandwidth_value(values.get("bandwidth"), where),
                   latency_value(values.get("latency"), where), where, directed=directed)
        linked = True


# -- JSON -----------------------------------------------------------------------------------------------------
def _json_name(value, where: str):
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return str(value)
    raise SpecError(f"{where}: node name {json.dumps(value)[:40]} is not a name; accepted: a string or an integer")


def _read_json(f, table: LinkTable, what: str, defaults: dict) -> None:
    try:
        doc = json.load(f)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{what}: line {exc.lineno}: not valid JSON ({exc.msg}); {_ACCEPTED}") from None
    except RecursionError:
        raise SpecError(f"{what}: JSON nested too deeply; {_ACCEPTED}") from None
    form = '{"links": [{"src": ..., "dst": ..., "bandwidth": ..., "latency": ...}], "nodes": [...], "directed": ...}'
    if not isinstance(doc, dict):
        raise SpecError(f"{what}: the JSON document is a {type(doc).__name__}; accepted: an object {form}")
    if "links" in doc and "edges" in doc:
        raise SpecError(f"{what}: both 'links' and 'edges'; accepted: one of them")
    key = "edges" if "edges" in doc else "links"
    links, nodes = doc.get(key), doc.get("nodes", [])
    if not isinstance(links, list) or not isinstance(nodes, list):
        raise SpecError(f"{what}: {'nodes' if isinstance(links, list) else key!r} is not a list; accepted: {form}")
    directed = flag_value(doc.get("directed"), f"{what}: 'directed'", "directed")
    for name in ("bandwidth", "latency"):
        if doc.get(name) is not None:
            defaults[name] = (bandwidth_value if name == "bandwidth" else latency_value)(doc[name], f"{what}: {name!r}")
    for i, node in enumerate(nodes):
        where = f"{what}: nodes[{i}]"
        if isinstance(node, dict):
            if "id" not in node:
                raise SpecError(f'{where}: a node object without "id"; accepted: {{"id": NAME, "switch": true}}')
            table.node(_json_name(node["id"], where), where, switch=flag_value(node.get("switch"), where),
                       declared=True)
        else:
            table.node(_json_name(node, where), where, declared=True)
    for i, link in enumerate(links):
        where = f"{what}: {key}[{i}]"
        if not isinstance(link, dict):
            raise SpecError(f"{where}: a {type(link).__name__}; accepted: an object {{\"src\": ..., \"dst\": ...}}")
        ends = []
        for names in (_SOURCE[:2], _TARGET[:2]):
            found = [link[n] for n in names if n in link]
            if len(found) != 1:
                raise SpecError(f"{where}: {'no' if not found else 'two'} {' / '.join(names)}; accepted: "
                                '{"src": NAME, "dst": NAME} (or "source" / "target")')
            ends.append(_json_name(found[0], where))
        table.link(ends[0], ends[1], bandwidth_value(link.get("bandwidth"), where),
                   latency_value(link.get("latency"), where), where, directed=directed)


# -- writing --------------------------------------------------------------------------------------------------
def _num(x: float) -> str:
    """A float as the shortest text that reads back to it (integers without ``.0``)."""
    return str(int(x)) if x.is_integer() and abs(x) < 2**53 else repr(x)


def _chunks(topology: Topology):
    for lo in range(0, topology.num_links, WRITE_CHUNK):
        sl = slice(lo, lo + WRITE_CHUNK)
        yield from zip(topology.link_src[sl].tolist(), topology.link_dst[sl].tolist(),
                       (topology.link_bandwidth[sl] * 8).tolist(), topology.link_latency[sl].tolist(), strict=True)


def _isolated(topology: Topology) -> bool:
    """Whether some node has no link (then a file must declare the nodes to keep their number)."""
    seen = np.zeros(topology.num_nodes, dtype=bool)
    seen[topology.link_src] = True
    seen[topology.link_dst] = True
    return not bool(seen.all())


def write_network(topology: Topology, path, fmt: str | None = None) -> str:
    """Write a topology to a network file (format from the suffix unless ``fmt``): every directed link in link
    order with its bandwidth (bit/s) and latency (s), nodes ``0..num_nodes-1`` with the switches marked, as a
    directed graph, so ``file:PATH`` reads back the same links, values and node count.

    Returns:
        the format written: ``graphml``, ``edges`` or ``json``.

    Raises:
        SpecError: an unknown format or suffix.
        OSError: the file cannot be written.

    Source: docs/topology.md, "Your own network" (``directcoll topology export``).

    >>> import os, tempfile
    >>> from directcoll.topology import parse
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "ring.edges")
    ...     write_network(parse("ring:4"), path)
    ...     read_network(path).link_dst.tolist() == parse("ring:4").link_dst.tolist()
    'edges'
    True
    """
    fmt = file_format(path, fmt)
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        {"graphml": _write_graphml, "edges": _write_edges, "json": _write_json}[fmt](topology, f)
    return fmt


def _header(topology: Topology) -> str:
    return (f"directcoll network {topology.spec}: {topology.num_compute} compute nodes, "
            f"{topology.num_nodes - topology.num_compute} switches, {topology.num_links} directed links; bandwidth in "
            "bit/s, latency in s")


def _write_graphml(topology: Topology, f) -> None:
    f.write("<?xml version='1.0' encoding='utf-8'?>\n"
            '<graphml xmlns="http://graphml.graphdrawing.org/xmlns" '
            'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:schemaLocation="http://graphml.graphdrawing.org/'
            'xmlns http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">\n'
            f"  <!-- {escape(_header(topology)).replace('--', '- -')} -->\n"
            '  <key id="spec" for="graph" attr.name="spec" attr.type="string" />\n'
            '  <key id="switch" for="node" attr.name="switch" attr.type="boolean" />\n'
            '  <key id="bandwidth" for="edge" attr.name="bandwidth" attr.type="double" />\n'
            '  <key id="latency" for="edge" attr.name="latency" attr.type="double" />\n'
            '  <graph edgedefault="directed">\n'
            f'    <data key="spec">{escape(topology.spec)}</data>\n')
    n = topology.num_compute
    for lo in range(0, topology.num_nodes, WRITE_CHUNK):
        f.write("".join(f'    <node id="{i}" />\n' if i < n else
                        f'    <node id="{i}">\n      <data key="switch">true</data>\n    </node>\n'
                        for i in range(lo, min(lo + WRITE_CHUNK, topology.num_nodes))))
    for s, d, bw, lat in _chunks(topology):
        f.write(f'    <edge source="{s}" target="{d}">\n      <data key="bandwidth">{_num(bw)}</data>\n'
                f'      <data key="latency">{_num(lat)}</data>\n    </edge>\n')
    f.write("  </graph>\n</graphml>\n")


def _write_edges(topology: Topology, f) -> None:
    n = topology.num_compute
    f.write(f"# {_header(topology)}\n# one directed link per line, in link order\ndirected: true\n")
    if _isolated(topology):
        f.write("nodes: " + " ".join(map(str, range(n))) + "\n")
    if topology.num_nodes > n:
        f.write("switches: " + " ".join(map(str, range(n, topology.num_nodes))) + "\n")
    f.write("src dst bandwidth latency\n")
    for s, d, bw, lat in _chunks(topology):
        f.write(f"{s} {d} {_num(bw)} {_num(lat)}\n")


def _write_json(topology: Topology, f) -> None:
    n = topology.num_compute
    nodes = ", ".join([str(i) for i in range(n)] + [f'{{"id": {i}, "switch": true}}'
                                                     for i in range(n, topology.num_nodes)])
    f.write(f'{{"format": "directcoll network", "spec": {json.dumps(topology.spec)}, "units": {{"bandwidth": '
            f'"bit/s", "latency": "s"}},\n "directed": true,\n "nodes": [{nodes}],\n "links": [')
    sep = "\n"
    for s, d, bw, lat in _chunks(topology):
        f.write(f'{sep}  {{"src": {s}, "dst": {d}, "bandwidth": {_json_num(bw)}, "latency": {_json_num(lat)}}}')
        sep = ",\n"
    f.write("\n ]\n}\n")


def _json_num(x: float) -> str:
    return _num(x) if math.isfinite(x) else json.dumps(str(x))
