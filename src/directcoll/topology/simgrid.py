"""SimGrid platform files: any topology as a SimGrid (SMPI) platform whose routes are the project's routes, so that
real MPI code simulated by SMPI crosses the same links as the step, flow and packet models
(``directcoll topology export SPEC --format simgrid -o platform.xml``; ``directcoll run --engine smpi``).

The platform is one zone with ``routing="Full"``: one host per compute node (``h0`` .. ``h{N-1}``, rank r on host
``hr``), one link per directed link of the topology (``l0`` .. ``l{L-1}``, SimGrid's default SHARED policy, so the
two directions of a cable are two independent links, as in our models), and one explicit ``<route>`` per ordered
pair of compute nodes listing the links of our route (``symmetrical="NO"``). Switches are not hosts: a route simply
passes through their links. A link's SimGrid latency is its own latency plus the per-hop router latency, so a
route's latency is ``sum(link latency) + hops * per_hop_latency``, the step model's T_L without alpha.

Routes. SimGrid sends every message along one path, so the platform cannot split a message over all shortest paths
as our ``adaptive`` routing does: it uses ``dor`` (dimension order, :func:`directcoll.topology.routing.dor_route`,
shorter direction on wrapping dimensions, ties "+") wherever the topology has it (tori, meshes, rings, hypercubes,
HyperX), else one fixed shortest path per pair (the BFS tree from the source that always takes the lowest-numbered
node as predecessor). Compare SMPI with the models' ``--routing dor`` where it exists.

Why explicit routes rather than SimGrid's built-in torus cluster (``<cluster topology="TORUS">``)? Its dimension-order
routing breaks the antipodal tie the other way when the source sits exactly at d/2 of an even dimension (it goes
"-" to coordinate 0, we go "+"), which recursive doubling hits on every even torus; it has one bandwidth and
latency for every link; and it exists only for tori. Explicit routes are exact for every topology; their cost is
N^2 routes of ``average distance`` links each, estimated (:func:`platform_size`) and refused over the memory
budget (SimGrid holds every route in memory: about :data:`SIMGRID_BYTES_PER_ELEMENT` per route element).

Source: SimGrid 3.32 documentation, "Describing your platform" (``routing="Full"``, ``<route>``, ``<link_ctn>``,
``symmetrical``); docs/runtime.md, "The SMPI engine"; docs/simulation.md, "Step model" (T_L).

>>> import io
>>> from directcoll.topology import parse
>>> out = io.StringIO()
>>> write_platform(parse("ring:4"), out)["routes"]
12
>>> '<route src="h0" dst="h2" symmetrical="NO">' in out.getvalue()
True
"""

from __future__ import annotations

import numpy as np
import scipy.sparse.csgraph as csgraph

from directcoll.errors import TopologyError
from directcoll.resources import check_memory
from directcoll.topology.model import Topology
from directcoll.topology.routing import link_between, route_entries

#: bytes of the platform file per route element (``<link_ctn id="l1234"/>`` and its line), measured on tori
FILE_BYTES_PER_ELEMENT = 24.0
#: bytes of a route's own element besides its links (``<route src=... symmetrical="NO">...</route>``)
FILE_BYTES_PER_ROUTE = 70.0
#: SimGrid's memory per route element and per route while it parses and holds the platform: twice what smpirun's
#: peak resident memory on torus:32x32 gives (409 MB for 16.8 M elements and 1.05 M routes, docs/runtime.md,
#: "The SMPI engine")
SIMGRID_BYTES_PER_ELEMENT = 40.0
SIMGRID_BYTES_PER_ROUTE = 100.0
#: the families whose dimension-order routes are minimal (routing.dor_route walks one coordinate at a time)
DOR_KINDS = ("torus", "mesh", "ring", "hypercube", "hyperx")
#: routes computed and written per block (bounds the route entries held at once: about 40 bytes per element)
ROUTES_PER_BLOCK = 1 << 16


def route_kind(topology: Topology) -> str:
    """The routing the platform's routes follow: ``dor`` where the topology's dimension-order routes are minimal
    (:data:`DOR_KINDS`), else ``shortest`` (one fixed shortest path per pair).

    Returns:
        ``"dor"`` or ``"shortest"``.

    Raises:
        Nothing.

    Source: :func:`directcoll.topology.routing.dor_route` (which topologies have it).

    >>> from directcoll.topology import parse
    >>> route_kind(parse("torus:4x4")), route_kind(parse("circulant:16:1,5"))
    ('dor', 'shortest')
    """
    return "dor" if topology.shape is not None and topology.kind in DOR_KINDS else "shortest"


def platform_size(topology: Topology) -> dict:
    """Estimated size of the platform: ``routes`` (N (N - 1)), ``elements`` (route elements: N (N - 1) times the
    average hop distance between compute nodes), ``file_bytes`` and ``simgrid_bytes`` (what SimGrid holds).

    Returns:
        A dict of those four numbers (floats for the bytes).

    Raises:
        ResourceError: the distance computation over the memory budget (a BFS per source on large graphs).

    Source: :data:`FILE_BYTES_PER_ELEMENT`, :data:`SIMGRID_BYTES_PER_ELEMENT` (measured).

    >>> from directcoll.topology import parse
    >>> s = platform_size(parse("torus:4x4"))
    >>> s["routes"], s["elements"]
    (240, 512)
    """
    from directcoll.topology.paths import distance_sum

    n = topology.num_compute
    routes = n * (n - 1)
    if topology.num_nodes == n:
        _, total = distance_sum(topology)
        elements = int(total)
    else:  # switches: the BFS from every compute node, over all nodes
        dist = csgraph.shortest_path(_adjacency(topology), unweighted=True, indices=np.arange(n))[:, :n]
        elements = int(dist[np.isfinite(dist)].sum())
    return {"routes": routes, "elements": elements,
            "file_bytes": FILE_BYTES_PER_ELEMENT * elements + FILE_BYTES_PER_ROUTE * routes,
            "simgrid_bytes": SIMGRID_BYTES_PER_ELEMENT * elements + SIMGRID_BYTES_PER_ROUTE * routes}


def _adjacency(topology: Topology):
    import scipy.sparse as sp

    ones = np.ones(topology.num_links)
    return sp.csr_matrix((ones, (topology.link_src, topology.link_dst)), shape=(topology.num_nodes,) * 2)


def check_platform(topology: Topology) -> dict:
    """Refuse a platform whose file or SimGrid's copy of it would exceed the memory budget; else its
    :func:`platform_size`.

    Returns:
        The size dict.

    Raises:
        ResourceError: over the budget (the message names the topology and the routes).

    Source: docs/architecture.md, "Engines, runtimes and scale" (estimate, then refuse).
    """
    size = platform_size(topology)
    check_memory(f"SimGrid platform of {topology.spec} ({size['routes']:,} routes of {size['elements']:,} links in "
                 "all, held by SimGrid)", size["simgrid_bytes"])
    return size


def _pairs(n: int, sources: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (s, t) with s in ``sources`` and t != s a compute node, by source then destination."""
    src = np.repeat(sources, n - 1)
    t = np.tile(np.arange(n - 1, dtype=np.int64), len(sources))
    return src, t + (t >= src)


def _dor_routes(topology: Topology, sources: np.ndarray):
    """(src, dst, CSR offsets, links) of the dimension-order routes from ``sources`` to every other compute node:
    one :func:`~directcoll.topology.routing.route_entries` call, which routes each offset's pattern once."""
    src, dst = _pairs(topology.num_compute, sources)
    e = route_entries(topology, src, dst, "dor")
    counts = np.bincount(e.transfer, minlength=len(src))
    return src, dst, np.r_[0, np.cumsum(counts)], e.link


def _shortest_routes(topology: Topology, s: int, pred: np.ndarray):
    """The same for one source along the BFS tree ``pred`` (predecessor nodes from ``s``): walk back from every
    destination at once."""
    src, dst = _pairs(topology.num_compute, np.array([s], dtype=np.int64))
    hops: list[np.ndarray] = []
    cur = dst.copy()
    alive = np.ones(len(dst), dtype=bool)
    while alive.any():
        prev = pred[cur[alive]]
        if (prev < 0).any():
            raise TopologyError(f"{topology.spec}: a compute node is unreachable from node {s}")
        col = np.full(len(dst), -1, dtype=np.int64)
        col[alive] = link_between(topology, prev, cur[alive])
        hops.append(col)
        cur[alive] = prev
        alive &= cur != s
    table = np.stack(hops, axis=1)[:, ::-1] if hops else np.zeros((len(dst), 0), dtype=np.int64)
    counts = (table >= 0).sum(axis=1)
    return src, dst, np.r_[0, np.cumsum(counts)], table[table >= 0]


def write_platform(topology: Topology, out, *, link_bandwidth=None, link_latency=None, per_hop_latency: float = 0.0,
                   host_injection: float | None = None, host_speed: str = "1Gf") -> dict:
    """Write the SimGrid platform of ``topology`` to ``out`` (a path or a text file object): hosts ``h0..h{N-1}``,
    links ``l0..l{L-1}`` and the routes of :func:`route_kind`, as the module docstring describes.

    Args:
        topology: the network.
        out: a path or a writable text stream.
        link_bandwidth, link_latency: bytes/s and s, a scalar or one value per link (None: the topology's own).
        per_hop_latency: s added to every link's latency (router delay; our models add it per hop).
        host_injection: bytes/s a host can send and receive in total (None: no limit): adds links ``in{r}`` and
            ``out{r}`` (latency 0) to the ends of every route.
        host_speed: SimGrid host speed (compute is not simulated by ``directcoll run --engine smpi``).

    Returns:
        {"hosts", "links", "routes", "elements", "routing"}: what was written.

    Raises:
        ResourceError: the platform over the memory budget (:func:`check_platform`).
        TopologyError: a compute node unreachable from another.
        OSError: the file cannot be written.

    Source: SimGrid 3.32 documentation, "Describing your platform"; docs/runtime.md, "The SMPI engine".

    >>> import io
    >>> from directcoll.topology import parse
    >>> buf = io.StringIO()
    >>> write_platform(parse("torus:2x2"), buf, per_hop_latency=3e-7)["links"]  # two cables each way between each pair
    16
    >>> print(buf.getvalue().splitlines()[9])  # 15 significant digits: 100 ns + 300 ns per hop
      <link id="l0" bandwidth="50000000000Bps" latency="4e-07s"/>
    """
    if isinstance(out, str) or hasattr(out, "__fspath__"):
        with open(out, "w", encoding="utf-8", newline="\n") as f:
            return write_platform(topology, f, link_bandwidth=link_bandwidth, link_latency=link_latency,
                                  per_hop_latency=per_hop_latency, host_injection=host_injection,
                                  host_speed=host_speed)
    check_platform(topology)
    n, nl = topology.num_compute, topology.num_links
    bw = np.broadcast_to(topology.link_bandwidth if link_bandwidth is None else link_bandwidth, (nl,))
    lat = np.broadcast_to(topology.link_latency if link_latency is None else link_latency, (nl,)) + per_hop_latency
    kind = route_kind(topology)
    f = out
    f.write("<?xml version='1.0'?>\n<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
            f"<!-- directcoll platform of {topology.spec}: {n} hosts (rank r on host hr), {nl} directed links, "
            f"{kind} routes; bandwidth in bytes/s, latency in s (link latency + per-hop latency) -->\n"
            '<platform version="4.1">\n<zone id="directcoll" routing="Full">\n')
    f.write("".join(f'  <host id="h{r}" speed="{host_speed}"/>\n' for r in range(n)))
    f.write("".join(f'  <link id="l{i}" bandwidth="{b:.15g}Bps" latency="{t:.15g}s"/>\n'
                    for i, (b, t) in enumerate(zip(bw.tolist(), lat.tolist(), strict=True))))
    if host_injection is not None:
        f.write("".join(f'  <link id="out{r}" bandwidth="{host_injection:.15g}Bps" latency="0s"/>\n'
                        f'  <link id="in{r}" bandwidth="{host_injection:.15g}Bps" latency="0s"/>\n' for r in range(n)))
    pred = None
    if kind == "shortest":
        _, pred = csgraph.shortest_path(_adjacency(topology), unweighted=True, indices=np.arange(n),
                                        return_predecessors=True)
    routes = elements = 0
    names = np.array([f'<link_ctn id="l{x}"/>' for x in range(nl)], dtype=object)
    block = max(1, ROUTES_PER_BLOCK // max(n - 1, 1)) if kind == "dor" else 1
    for lo in range(0, n, block):
        if kind == "dor":
            src, dst, off, links = _dor_routes(topology, np.arange(lo, min(lo + block, n), dtype=np.int64))
        else:
            src, dst, off, links = _shortest_routes(topology, lo, pred[lo])
        parts = names[links].tolist()
        lines = []
        for j, (s, t) in enumerate(zip(src.tolist(), dst.tolist(), strict=True)):
            head, tail = (f'<link_ctn id="out{s}"/>', f'<link_ctn id="in{t}"/>') if host_injection is not None \
                else ("", "")
            lines.append(f'  <route src="h{s}" dst="h{t}" symmetrical="NO">{head}'
                         f'{"".join(parts[off[j]:off[j + 1]])}{tail}</route>\n')
        f.write("".join(lines))
        routes += len(dst)
        elements += len(links)
    f.write("</zone>\n</platform>\n")
    return {"hosts": n, "links": nl, "routes": routes, "elements": elements, "routing": kind}
