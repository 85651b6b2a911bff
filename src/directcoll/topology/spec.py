"""Topology spec strings, sized and built: ``torus:8x8``, ``mesh:4x4``, ``ring:16``, ``ring:16:uni``,
``hypercube:10``, ``hyperx:64x64``, ``hammingmesh:2x2:32x32``, ``complete:127``, the direct-connect families
(``bipartite:4``, ``hamming:2:3``, ``circulant:16:3,4``, ``kautz:2:3``, ``petersen``, ...;
docs/topologies_generative.md) and the operators nested freely around them (``line^3(circulant:16:3,4)``;
docs/expansions.md).

The grammar is in :mod:`directcoll.topology.grammar`, the families and the forms they accept in
:mod:`directcoll.topology.table`. Every spec is sized from the spec alone before it is built (:func:`size_of`,
:func:`estimate`) and refused above :data:`~directcoll.topology.sizes.MAX_NODES` nodes,
:data:`~directcoll.topology.sizes.MAX_LINKS` links or the memory budget (:func:`check_spec`,
:mod:`directcoll.resources`).

Source: docs/architecture.md, "Topology" (every generator reachable from a short spec string) and "Engines, runtimes and
scale" (estimate memory first, refuse over a budget); docs/topology.md, "Strict specs and sizes".
"""

from __future__ import annotations

from directcoll.errors import SpecError
from directcoll.resources import check_memory
from directcoll.topology import operators as ops
from directcoll.topology.files import FILE_PREFIX, file_size, read_network
from directcoll.topology.grammar import OPERATORS, SpecNode, parse_tree
from directcoll.topology.model import Topology
from directcoll.topology.modifiers import modify_links
from directcoll.topology.placement import placed
from directcoll.topology.sizes import Size, check_caps, count, operator_size, show
from directcoll.topology.table import read_family


def _size(node: SpecNode) -> Size:
    if node.op == "family" and node.text.startswith(FILE_PREFIX):
        size = file_size(node.text[len(FILE_PREFIX):])
    elif node.op == "family":
        fn, args, kwargs = read_family(node.text)
        size = fn.size(*args, **kwargs)
    else:
        size = operator_size(node.op, node.n, [_size(c) for c in node.children])
    check_caps(f"topology spec {show(node)}", size)
    return size


def size_of(spec) -> Size:
    """The :class:`~directcoll.topology.sizes.Size` of a spec string or parsed
    :class:`~directcoll.topology.grammar.SpecNode` tree, from the spec alone: cheap (Python ints, nothing built),
    so guards can size a request before anything is allocated.

    Raises:
        SpecError: a malformed spec, or one over :data:`~directcoll.topology.sizes.MAX_NODES` nodes or
            :data:`~directcoll.topology.sizes.MAX_LINKS` links (at any level of the tree), naming the spec and
            the limit.

    Source: docs/topology.md, "Strict specs and sizes" (sized from the spec alone, operators included).

    >>> size = size_of("degree(ring:8,2)")
    >>> size.nodes, size.links, size.max_out
    (16, 64, 4)
    """
    return _size(spec if isinstance(spec, SpecNode) else parse_tree(spec))


def estimate(spec) -> tuple[int, int]:
    """(nodes, directed links) the spec will build (nodes include switches; links are an upper bound where
    self-loops are dropped or ``punctured`` removes some), from the spec alone; see :func:`size_of`.

    Raises:
        SpecError: a malformed spec, or one over the hard caps (:data:`~directcoll.topology.sizes.MAX_NODES`,
            :data:`~directcoll.topology.sizes.MAX_LINKS`).

    Source: docs/topology.md, "Strict specs and sizes" (``estimate(spec) -> (nodes, links)``).

    >>> estimate("line^2(torus:4x4)")
    (256, 1024)
    """
    size = size_of(spec)
    return size.nodes, size.links


def check_spec(spec) -> Size:
    """Refuse a spec (string or tree) that is malformed, over the hard caps or over the memory budget before
    anything is built; return its :class:`~directcoll.topology.sizes.Size`.

    Raises:
        SpecError: malformed, or over :data:`~directcoll.topology.sizes.MAX_NODES` nodes /
            :data:`~directcoll.topology.sizes.MAX_LINKS` links.
        ResourceError: the estimated memory of building it is over the budget (:mod:`directcoll.resources`).

    Source: docs/topology.md, "Strict specs and sizes" (2^30 nodes, 2^34 links, ``--memory-budget``);
    docs/architecture.md, "Engines, runtimes and scale" (Resources).

    >>> check_spec("hypercube:4").links
    64
    """
    node = spec if isinstance(spec, SpecNode) else parse_tree(spec)
    size = _size(node)
    if node.op == "family" and node.text.startswith(FILE_PREFIX):  # sized from its bytes: reading it is the cost
        check_memory(f"reading {node.text}", size.nbytes)
    else:
        check_memory(f"topology {show(node)} ({count(size.nodes)} nodes, {count(size.links)} links)", size.nbytes)
    return size


def build_tree(node: SpecNode, **link_params) -> Topology:
    """Build the topology of a parsed spec tree (families get ``link_params``; operators carry the link
    bandwidths and latencies of their inputs over), after :func:`check_spec` has sized it.

    Raises:
        SpecError: malformed family arguments, an impossible operator parameter, or a spec over the hard caps.
        ResourceError: building it would need more memory than the budget.
        TopologyError: an operator refuses its input (see :mod:`directcoll.topology.operators`).

    Returns:
        the :class:`~directcoll.topology.model.Topology` (bandwidths in bytes/s, latencies in s).

    Source: docs/topology.md; docs/expansions.md (the operators: line graph, degree and Cartesian product
    expansions of Zhao et al. (NSDI'25) Sec. 5.1-5.3, ``bidir`` of its App. A.6, ``links`` (heterogeneous links)
    of its App. E.3, ``punctured`` after Basu et al.
    (HPDC'24) Sec. 5.2).

    >>> build_tree(parse_tree("bidir(ring:4:uni)")).spec
    'bidir(ring:4:uni)'
    """
    check_spec(node)
    return _build(node, **link_params)


def _build(node: SpecNode, **link_params) -> Topology:
    if node.op == "family":
        return _family(node.text, **link_params)
    kids = [_build(c, **link_params) for c in node.children]
    if node.op == "line":
        return ops.line_graph(kids[0], node.n)
    if node.op == "degree":
        return ops.degree_expansion(kids[0], node.n)
    if node.op == "power":
        return ops.cartesian_power(kids[0], node.n)
    if node.op == "product":
        return ops.cartesian_product(*kids)
    if node.op == "bidir":
        return ops.bidirectional(kids[0])
    if node.op == "punctured":
        return ops.punctured(kids[0], **dict(node.kwargs))
    if node.op == "links":
        return modify_links(kids[0], node.kwargs)
    if node.op == "placed":
        return placed(kids[0], kids[1], **dict(node.kwargs))
    raise SpecError(f"unknown operator {node.op!r}; accepted: {', '.join(OPERATORS)}")


def _family(text: str, **link_params) -> Topology:
    if text.startswith(FILE_PREFIX):
        return read_network(text[len(FILE_PREFIX):], **link_params)
    fn, args, kwargs = read_family(text)
    try:
        return fn(*args, **kwargs, **link_params)
    except SpecError as exc:  # the generator's "kind: ..." -> "topology spec 'kind:args': ..."
        message, kind = str(exc), text.partition(":")[0]
        if message.startswith(f"{kind}:") and not message.startswith(f"{kind}: "):
            raise  # it names the canonical spec already, e.g. "circulant:4: offset 0 ..."
        rest = message[len(kind) + 2:] if message.startswith(f"{kind}: ") else message
        raise SpecError(f"topology spec {show(text)}: {rest}") from None


def parse(spec: str, **link_params) -> Topology:
    """Build the topology a spec string names.

    Args:
        spec: ``KIND:ARGS`` as listed in :data:`~directcoll.topology.table.FAMILIES` or
            :data:`~directcoll.topology.table.ALIASES` (e.g. ``torus:64x64``), or operators around them
            (:mod:`directcoll.topology.grammar`), e.g. ``line^3(circulant:16:3,4)``, or ``file:PATH`` of a
            network file (:mod:`directcoll.topology.files`). A Topology is returned unchanged.
        **link_params: ``link_bandwidth`` (bytes/s) and ``link_latency`` (s) passed to the generators (for a
            network file: the values of links the file gives none).

    Raises:
        SpecError: an unknown family (with the closest names), malformed arguments or operators, a number
            outside its field's range, or a topology over :data:`~directcoll.topology.sizes.MAX_NODES` nodes;
            the message names the spec, the field and what is accepted.
        ResourceError: building it would need more memory than the budget (:func:`check_spec`).
        TopologyError: an operator refuses its input (e.g. degree expansion of a non-regular graph), or a network
            file's compute nodes cannot all reach each other (a malformed file is a SpecError naming its line).

    Returns:
        the :class:`~directcoll.topology.model.Topology` (bandwidths in bytes/s, latencies in s).

    Source: docs/architecture.md, "Topology" (spec strings such as ``torus:64x64``; parse errors say what was expected);
    docs/topology.md.

    >>> parse("torus:4x4").num_links
    64
    """
    if isinstance(spec, Topology):
        return spec
    return build_tree(parse_tree(spec), **link_params)
