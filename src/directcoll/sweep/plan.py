"""SWEEP.toml: a kind of study and its grid, read into cells (one library call each) with stable keys.

A sweep file is TOML (read with :mod:`tomllib`) with a ``kind`` and that kind's keys (docs/sweep.md, "The file"):

* ``kind = "compare"``: :func:`directcoll.reports.compare.compare` per (topology, collective, model, routing,
  network parameters); every network parameter (``alpha``, ``link_bandwidth`` ...) may be a list.
* ``kind = "find-topology"``: :func:`directcoll.synthesis.finder.find_topology` per (nodes, degree, alpha,
  bandwidth, bidirectional).
* ``kind = "alltoall"``: :func:`directcoll.synthesis.mcf.link.alltoall_mcf` (or the certified bracket) per
  (topology, method, solver, host bandwidth), Basu et al.'s Fig. 10 style; a topology may be a template such as
  ``"genkautz:{degree}:{nodes}"`` over the ``nodes`` and ``degree`` lists.

A key marked *axis* takes one value or a list; the cells are the Cartesian product of the axes in the order the
table :data:`KEYS` lists them (the first varies slowest). Every value is read (units, specs, choices) before
anything runs, and a bad file is refused in one line naming the file and the key. A cell's key is the SHA-256 of
its kind, its parameters (defaults filled in, quantities in s and bytes; the contents of the files it reads) and
the directcoll version: what :mod:`directcoll.sweep.store` files its results under.

Source: docs/sweep.md, "The file" and "Cells and keys".

>>> s = plan_sweep({"kind": "find-topology", "nodes": [8, 16], "degree": 2})
>>> [c.label for c in s.cells]
['find-topology nodes=8', 'find-topology nodes=16']
>>> s.cells[0].params["alpha"], s.cells[0].params["sizes"]
(1e-05, [1048576])
"""

from __future__ import annotations

import hashlib
import itertools
import json
import string
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from directcoll import __version__
from directcoll.errors import DirectcollError, SpecError
from directcoll.units import parse_bandwidth, parse_duration, parse_size, parse_sizes

KINDS = ("compare", "find-topology", "alltoall")
#: the MCF methods of an all-to-all cell: those of :func:`~directcoll.synthesis.mcf.link.alltoall_mcf` and the
#: certified Frank-Wolfe bracket of :func:`~directcoll.synthesis.mcf.bracket.alltoall_mcf_bracket`
ALLTOALL_METHODS = ("auto", "link", "decomposed", "symmetric", "automorphism", "bracket")
#: the template variables of an all-to-all topology (``genkautz:{degree}:{nodes}``): grid axes that are not
#: parameters of the cell themselves
TEMPLATE_VARS = ("nodes", "degree")


@dataclass(frozen=True)
class Cell:
    """One cell of a sweep: one call into the library.

    Attributes:
        index: its place in the grid (0-based, the order of :data:`KEYS`).
        kind: one of :data:`KINDS`.
        params: the cell's parameters by key, defaults filled in (s, bytes, bytes/s; sizes a list of bytes).
        key: :func:`cell_key` of kind and params, 16 hex digits.

    Raises:
        Nothing: a record built by :func:`plan_sweep`.

    Source: docs/sweep.md, "Cells and keys".
    """

    index: int
    kind: str
    params: dict
    key: str

    @property
    def label(self) -> str:
        """The cell in words: its kind and the values of the sweep's axes (what varies). Raises: Nothing.
        Source: docs/sweep.md."""
        shown = [k for k in self.params.get("_axes", ()) if k != "topology"]
        first = [self.params["topology"]] if "topology" in self.params else []
        value = {k: f"{v:g}" if isinstance(v, float) else v for k, v in self.params.items()}
        return " ".join([self.kind, *first, *(f"{k}={value[k]}" for k in shown)])


@dataclass(frozen=True)
class Sweep:
    """A planned sweep: its kind, the axes that vary and every cell.

    Attributes:
        kind: one of :data:`KINDS`; source: the file (or "sweep" for a dict); axes: key -> its values, for the
            keys given as lists; cells: the :class:`Cell` s in grid order (duplicates removed).

    Raises:
        Nothing: a record built by :func:`plan_sweep`.

    Source: docs/sweep.md.
    """

    kind: str
    source: str
    axes: dict
    cells: list


def cell_key(kind: str, params: dict, version: str = __version__) -> str:
    """The stable key of a cell: the first 16 hex digits of SHA-256 over the canonical JSON of kind, params and
    the directcoll version (a new version recomputes every cell).

    Returns:
        16 hex digits.

    Raises:
        TypeError: a parameter JSON cannot hold (never for :func:`plan_sweep`'s cells).

    Source: docs/sweep.md, "Cells and keys".

    >>> cell_key("compare", {"topology": "ring:4"}, "0.1.0") == cell_key("compare", {"topology": "ring:4"}, "0.1.0")
    True
    >>> cell_key("compare", {"topology": "ring:4"}, "0.1.0") != cell_key("compare", {"topology": "ring:4"}, "0.2.0")
    True
    """
    params = {k: v for k, v in params.items() if not k.startswith("_")}
    text = json.dumps({"kind": kind, "params": params, "version": version}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# --- readers: TOML value -> canonical value, or DirectcollError naming the key ---------------------------------------

def _fail(where: str, key: str, why: str) -> DirectcollError:
    return DirectcollError(f"{where}: key {key!r}: {why}")


def _string(where, key, v):
    if not isinstance(v, str) or not v.strip():
        raise _fail(where, key, f"must be a non-empty string, got {v!r}")
    return v.strip()


def _choice(*options) -> Callable:
    def read(where, key, v):
        if v not in options:
            raise _fail(where, key, f"unknown value {v!r}; accepted: {', '.join(map(str, options))}")
        return v
    return read


def _integer(low: int) -> Callable:
    def read(where, key, v):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise _fail(where, key, f"must be a whole number >= {low}, got {v!r}")
        return v
    return read


def _boolean(where, key, v):
    if not isinstance(v, bool):
        raise _fail(where, key, f"must be true or false, got {v!r}")
    return v


def _number(where, key, v):
    if isinstance(v, bool) or not isinstance(v, int | float) or not v >= 0:
        raise _fail(where, key, f"must be a number >= 0, got {v!r}")
    return float(v)


def _quantity(parse: Callable, forms: str) -> Callable:
    def read(where, key, v):
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise _fail(where, key, f"must be {forms}, got {v!r}")
        try:
            return parse(v)
        except DirectcollError as exc:
            raise _fail(where, key, str(exc)) from None
    return read


_duration = _quantity(parse_duration, "a time such as 10us (a bare number is seconds)")
_per_byte = _quantity(lambda v: parse_duration(v, per="B"), "a time per byte such as 0.2ns/B")
_bandwidth = _quantity(parse_bandwidth, "a bandwidth such as 400Gbps or 50GB/s (a bare number is bytes/s)")
_size = _quantity(parse_size, "a size such as 4KiB")


def _sizes(where, key, v):
    """A --sizes text (``32B..512MiB``, ``1KiB,1MiB``, a workload name) or a list of sizes: a list of bytes."""
    items = v if isinstance(v, list) else [v]
    if not items or any(isinstance(x, bool) or not isinstance(x, str | int) for x in items):
        raise _fail(where, key, f"must be a --sizes text such as '32B..1MiB' or a list of sizes, got {v!r}")
    try:
        return sorted({int(s) for x in items for s in parse_sizes(str(x))})
    except DirectcollError as exc:
        raise _fail(where, key, str(exc)) from None


def _names(where, key, v):
    items = v if isinstance(v, list) else [v]
    return [_string(where, key, x) for x in items] or None


def _network(where, key, v):
    """A topology spec or a system preset (as ``compare`` takes), sized from the spec alone."""
    spec = _string(where, key, v)
    if "{" in spec:
        return spec  # a template: checked once filled in (plan_sweep)
    from directcoll.topology.spec import size_of

    try:
        size_of(spec)
    except SpecError as exc:
        from directcoll.catalog.presets import get_preset

        try:
            get_preset(spec)
        except DirectcollError:
            raise _fail(where, key, str(exc)) from None
    return spec


_AXIS, _ONE = True, False
#: per kind: key -> (reader, default, axis). A default of None means "not given" (the library's default);
#: a key without a default (``...``) is required.
KEYS: dict[str, dict[str, tuple]] = {
    "compare": {
        "topology": (_network, ..., _AXIS), "collective": (
            _choice("allreduce", "reduce_scatter", "allgather", "alltoall"), "allreduce", _AXIS),
        "model": (_choice("step", "flow", "packet"), "step", _AXIS),
        "routing": (_choice("adaptive", "dor", "single"), "adaptive", _AXIS),
        "params": (_string, None, _AXIS),
        "alpha": (_duration, None, _AXIS), "per_hop_latency": (_duration, None, _AXIS),
        "link_bandwidth": (_bandwidth, None, _AXIS), "link_latency": (_duration, None, _AXIS),
        "gamma": (_per_byte, None, _AXIS), "host_injection": (_bandwidth, None, _AXIS),
        "forwarding": (_choice("cut-through", "store-and-forward"), None, _AXIS),
        "packet_size": (_size, None, _AXIS), "packet_header": (_integer(0), None, _AXIS),
        "sizes": (_sizes, None, _ONE), "algorithms": (_names, None, _ONE),
    },
    "find-topology": {
        "nodes": (_integer(2), ..., _AXIS), "degree": (_integer(1), ..., _AXIS),
        "alpha": (_duration, "10us", _AXIS), "bandwidth": (_bandwidth, "100Gbps", _AXIS),
        "bidirectional": (_boolean, False, _AXIS), "sizes": (_sizes, "1MiB", _ONE),
        "alltoall": (_boolean, False, _ONE),
    },
    "alltoall": {
        "topology": (_network, ..., _AXIS), "nodes": (_integer(2), None, _AXIS),
        "degree": (_integer(1), None, _AXIS), "method": (_choice(*ALLTOALL_METHODS), "auto", _AXIS),
        "solver": (_choice("auto", "simplex", "ipm", "pdlp"), "auto", _AXIS),
        "host_bandwidth": (_bandwidth, None, _AXIS), "nic_forwarding": (_boolean, False, _AXIS),
        "rel_gap": (_number, 1e-3, _ONE), "max_iterations": (_integer(0), 400, _ONE),
    },
}


def load_sweep(path) -> Sweep:
    """Read and plan the sweep file ``path`` (:func:`plan_sweep`).

    Returns:
        The :class:`Sweep`.

    Raises:
        DirectcollError: the file is missing, unreadable or not TOML, or :func:`plan_sweep` refuses it; one line
            naming the file.

    Source: docs/sweep.md, "The file"; Python's :mod:`tomllib` (TOML 1.0).

    >>> load_sweep("no/such/sweep.toml")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: sweep file 'no/such/sweep.toml' does not exist; ...
    """
    import tomllib

    where = str(path)
    if not Path(path).is_file():
        raise DirectcollError(f"sweep file {where!r} does not exist; give a TOML file with a kind "
                              f"({', '.join(KINDS)}) and its grid (docs/sweep.md)")
    try:
        with open(path, "rb") as f:
            doc = tomllib.load(f)
    except OSError as exc:
        raise DirectcollError(f"sweep file {where!r} cannot be read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise DirectcollError(f"{where}: not TOML: {exc}") from None
    return plan_sweep(doc, where)


def plan_sweep(doc: dict, where: str = "sweep") -> Sweep:
    """The cells of a sweep document (the TOML file as a dict): every key read and checked, the axes' Cartesian
    product in :data:`KEYS` order, templates filled in, duplicate cells dropped.

    Args:
        doc: the document: ``kind`` and that kind's keys (:data:`KEYS`); ``title`` is accepted and not read.
        where: the file, for error messages.

    Returns:
        The :class:`Sweep`.

    Raises:
        DirectcollError: no or an unknown kind, an unknown key (the message lists the accepted ones), a missing
            required key, an empty list, a value that does not read (a spec, a unit, a choice), a template naming
            a variable that is not given; one line naming ``where`` and the key.

    Source: docs/sweep.md, "The file".

    >>> plan_sweep({"kind": "compare", "topology": ["ring:4", "ring:8"], "alpha": ["0s", "1us"]}).axes
    {'topology': ['ring:4', 'ring:8'], 'alpha': [0.0, 1e-06]}
    >>> plan_sweep({"kind": "compare", "topology": "ring:4", "colective": "allgather"})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: sweep: unknown key 'colective' for kind 'compare'; did you mean 'collective'? ...
    """
    if not isinstance(doc, dict):
        raise DirectcollError(f"{where}: a sweep is a TOML table with a kind, got {type(doc).__name__}")
    kind = doc.get("kind")
    if kind not in KINDS:
        raise DirectcollError(f"{where}: {'no kind' if kind is None else f'unknown kind {kind!r}'}; accepted: "
                              f"kind = {' | '.join(repr(k) for k in KINDS)}")
    keys = KEYS[kind]
    unknown = [k for k in doc if k not in keys and k not in ("kind", "title")]
    if unknown:
        import difflib

        close = difflib.get_close_matches(unknown[0], keys, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise DirectcollError(f"{where}: unknown key {unknown[0]!r} for kind {kind!r}; {hint}accepted: "
                              f"{', '.join(keys)} (and title)")
    values, axes = {}, {}
    for key, (read, default, axis) in keys.items():
        if key not in doc:
            if default is ...:
                raise DirectcollError(f"{where}: kind {kind!r} needs the key {key!r}")
            values[key] = [None if default is None else read(where, key, default)]
            continue
        raw = doc[key]
        if axis and isinstance(raw, list):
            if not raw:
                raise _fail(where, key, "is an empty list; give one value or a list of values")
            values[key] = axes[key] = [read(where, key, v) for v in raw]
        else:
            values[key] = [read(where, key, raw)]
    cells, seen, digests = [], set(), {}
    for combo in itertools.product(*values.values()):
        params = dict(zip(values, combo, strict=True))
        if kind == "alltoall":
            params = _fill_template(params, where)
        inputs = _input_files(params, digests)
        if inputs:
            params["inputs"] = inputs
        params["_axes"] = tuple(k for k in axes if k in params)
        key = cell_key(kind, params)
        if key not in seen:
            seen.add(key)
            cells.append(Cell(len(cells), kind, params, key))
    return Sweep(kind, where, axes, cells)


def _input_files(params: dict, digests: dict) -> dict:
    """path -> SHA-256 of every file a cell reads (a ``--params FILE.json``, the ``file:PATH`` leaves of its
    topology), so that a cell's key changes with the files' contents; {} for a cell that reads none."""
    from directcoll.topology.files import file_path, is_file_spec

    paths = []
    if isinstance(params.get("params"), str) and params["params"].lower().endswith(".json"):
        paths.append(params["params"])
    spec = params.get("topology")
    if isinstance(spec, str) and "file:" in spec.lower():
        from directcoll.topology.grammar import parse_tree

        try:
            stack = [parse_tree(spec)]
        except SpecError:
            stack = []
        while stack:
            node = stack.pop()
            if node.op == "family" and is_file_spec(node.text):
                paths.append(file_path(node.text))
            stack.extend(node.children)
    out = {}
    for path in sorted(set(paths)):
        if path not in digests:
            try:
                digests[path] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            except OSError:
                digests[path] = None  # the cell reports the missing file
        out[path] = digests[path]
    return out


def _fill_template(params: dict, where: str) -> dict:
    """An all-to-all cell's topology with ``{nodes}`` / ``{degree}`` filled in; the template variables leave the
    parameters (the filled-in spec says all)."""
    spec = params["topology"]
    wanted = {name for _, name, _, _ in string.Formatter().parse(spec) if name is not None}
    bad = wanted - set(TEMPLATE_VARS)
    if bad:
        raise _fail(where, "topology", f"template {spec!r} names {sorted(bad)[0]!r}; accepted: "
                                       + ", ".join("{" + v + "}" for v in TEMPLATE_VARS))
    missing = [v for v in wanted if params[v] is None]
    if missing:
        raise _fail(where, "topology", f"template {spec!r} needs the key {missing[0]!r}")
    filled = {k: v for k, v in params.items() if k not in TEMPLATE_VARS}
    filled["topology"] = spec.format(**{v: params[v] for v in wanted})
    return filled
