"""What a schedule's steps do on a network, transfer by transfer: the data behind ``directcoll show`` and
``directcoll draw`` (:mod:`directcoll.reports.draw`).

A :class:`StepView` holds one step's transfers (rank, peer, op, bytes at a vector size), the links each one uses
with the share of its bytes on each (the schedule's explicit routes where it has them, else minimal adaptive or
dimension-order routing, :func:`directcoll.topology.routing.route_entries`) and the load of every directed link.
Nodes and links are named for people: grid topologies by coordinates (``(0,1)->(0,2)``), HammingMesh switches
as ``[row 2]`` / ``[col 1]``, other switches as ``[switch k]``, other nodes by their rank.

Source: docs/architecture.md, "Cost and simulation" (a step's bytes on every directed link) and "Schedule IR" (pieces,
the optional explicit route of a transfer); Swing (De Sensi et al., NSDI'24) Figs. 1 and 4 (a step's transfers
drawn on the network).

>>> from directcoll.algorithms.ring import build_ring
>>> from directcoll.topology import parse
>>> t = parse("torus:2x3")
>>> view = step_view(build_ring(t), t, 0, 1024)
>>> view.num_transfers, link_label(t, view.busiest)
(12, '(0,0)->(0,1)')
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from directcoll.errors import DirectcollError, TopologyError
from directcoll.schedule.ir import OP_NAMES, Schedule
from directcoll.topology.model import Topology
from directcoll.topology.routing import RouteEntries, route_entries

#: families whose compute nodes are named by their grid coordinates (two or more dimensions)
COORDINATE_KINDS = ("torus", "mesh", "hyperx", "hammingmesh")
#: a transfer's route lists its minimal paths one by one up to this many, else says how many there are
MAX_LISTED_PATHS = 4
#: ties closer than this (relative) count as the same load
_TIE = 1e-9


def node_label(topology: Topology, node: int) -> str:
    """A node's name for people: ``(i,j)`` coordinates on grid topologies of two or more dimensions (torus, mesh,
    HyperX, HammingMesh), ``[row r]`` / ``[col c]`` for HammingMesh's row and column switches, ``[switch k]``
    for other switches, else the rank.

    Returns:
        The name, a str.

    Raises:
        Nothing: ``node`` must be a node of ``topology`` (0..num_nodes-1).

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.2 and Fig. 4 (nodes named by torus coordinates); Hoefler et
    al. (SC'22) HammingMesh (row and column fat trees, :func:`directcoll.topology.families.grids.hammingmesh`).

    >>> from directcoll.topology import parse
    >>> node_label(parse("torus:4x4"), 6), node_label(parse("ring:4"), 3)
    ('(1,2)', '3')
    >>> node_label(parse("hammingmesh:2x2:2x2"), 21)
    '[col 1]'
    """
    node = int(node)
    n = topology.num_compute
    if node >= n:
        if topology.kind == "hammingmesh" and topology.shape is not None:
            rows = topology.shape[0]
            k = node - n
            return f"[row {k}]" if k < rows else f"[col {k - rows}]"
        return f"[switch {node - n}]"
    if topology.kind in COORDINATE_KINDS and topology.ndim >= 2:
        return "(" + ",".join(str(int(c)) for c in topology.coords([node])[0]) + ")"
    return str(node)


def link_label(topology: Topology, link: int) -> str:
    """A directed link as ``u->v`` with :func:`node_label` names, e.g. ``(0,1)->(0,2)``; ``-`` for -1 (no link).

    Returns:
        The name, a str.

    Raises:
        Nothing: ``link`` must be -1 or a link id of ``topology``.

    Source: docs/topology.md (links are directed and identified by id); Swing (De Sensi et al., NSDI'24) Sec. 4.1
    (the most loaded link of a step sets its time).

    >>> from directcoll.topology import parse
    >>> link_label(parse("torus:4x4"), 2), link_label(parse("ring:4"), -1)
    ('(0,0)->(0,1)', '-')
    """
    link = int(link)
    if link < 0:
        return "-"
    return f"{node_label(topology, topology.link_src[link])}->{node_label(topology, topology.link_dst[link])}"


def check_ranks(schedule: Schedule, topology: Topology) -> None:
    """Refuse a schedule whose ranks are not the topology's compute nodes.

    Returns:
        None.

    Raises:
        TopologyError: the rank count differs from the topology's compute nodes, naming both.

    Source: docs/architecture.md, "Topology" (rank r runs on compute node r).

    >>> from directcoll.algorithms.ring import ring_allgather
    >>> from directcoll.topology import parse
    >>> check_ranks(ring_allgather(range(4)), parse("torus:3x3"))
    Traceback (most recent call last):
    ...
    directcoll.errors.TopologyError: the schedule has 4 ranks but torus:3x3 has 9 compute nodes; give the \
topology it was built for (--topology SPEC)
    """
    if schedule.nranks != topology.num_compute:
        raise TopologyError(f"the schedule has {schedule.nranks} ranks but {topology.spec} has "
                            f"{topology.num_compute} compute nodes; give the topology it was built for "
                            "(--topology SPEC)")


@dataclass(frozen=True)
class StepView:
    """One step of a schedule on a network, at one vector size.

    Attributes (T transfers in the step, L links):
        step: the step index.
        index: int64 (T,), the transfers' indices in the schedule.
        src, dst: int64 (T,), rank and peer.
        op: uint8 (T,), 0 = copy, 1 = reduce.
        nbytes: float64 (T,), bytes each transfer carries (local copies and reductions: their size, on no link).
        hops: float64 (T,), hops of each route (the share-weighted mean over adaptive routing's minimal paths).
        entries: the step's :class:`~directcoll.topology.routing.RouteEntries`, transfer ids local to the step.
        loads: float64 (L,), bytes on every directed link.

    Raises:
        Nothing: a record built by :func:`step_view`.

    Source: docs/architecture.md, "Cost and simulation" (the bytes of a step added on every directed link).

    >>> from directcoll.algorithms.ring import build_ring
    >>> from directcoll.topology import parse
    >>> t = parse("ring:4")
    >>> step_view(build_ring(t), t, 0, 4096).nbytes.tolist()[:2]
    [512.0, 512.0]
    """

    step: int
    index: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    op: np.ndarray
    nbytes: np.ndarray
    hops: np.ndarray
    entries: RouteEntries
    loads: np.ndarray

    @property
    def num_transfers(self) -> int:
        """T, the transfers of the step. Raises: Nothing. Source: docs/architecture.md, "Schedule IR"."""
        return len(self.src)

    @property
    def busiest(self) -> int:
        """Id of the most loaded link (the lowest id among ties), -1 when no byte crosses a link.

        Raises:
            Nothing: an argmax over the loads.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 4.1 (the most loaded link sets a step's time).
        """
        if not len(self.loads) or self.loads.max() <= 0:
            return -1
        return int(np.argmax(self.loads))

    @property
    def busiest_links(self) -> np.ndarray:
        """int64 (K,): every link whose load ties the most loaded one (empty when no byte crosses a link).

        Raises:
            Nothing: compares the loads.

        Source: Swing (De Sensi et al., NSDI'24) Sec. 4.1 (congestion: the most loaded link).
        """
        if self.busiest < 0:
            return np.zeros(0, np.int64)
        top = self.loads.max()
        return np.flatnonzero(self.loads >= top * (1 - _TIE)).astype(np.int64)

    def paths(self, i: int, topology: Topology, limit: int = MAX_LISTED_PATHS) -> tuple[int, list]:
        """The paths transfer i (local to the step) takes: (number of paths, [(node ids, share), ...]), the list
        empty when there are more than ``limit`` paths (or none: a local transfer).

        Returns:
            (count, paths): count an int; each path a list of node ids from rank to peer and its share of the
            transfer's bytes (a float; shares sum to 1).

        Raises:
            Nothing: walks the transfer's route entries (an explicit route that is not a path from the rank to
            the peer is returned as its links' nodes in order).

        Source: docs/topology.md, "Metrics and routing" (adaptive routing splits evenly over all minimal paths).

        >>> from directcoll.algorithms.recursive_doubling import recursive_doubling
        >>> from directcoll.topology import parse
        >>> t = parse("torus:4x4")
        >>> view = step_view(recursive_doubling(t), t, 2, 1024)  # rank 0 sends to rank 8, two hops away
        >>> count, paths = view.paths(0, t)
        >>> count, [("->".join(node_label(t, v) for v in p), s) for p, s in paths]
        (2, [('(0,0)->(1,0)->(2,0)', 0.5), ('(0,0)->(3,0)->(2,0)', 0.5)])
        """
        lo, hi = np.searchsorted(self.entries.transfer, [i, i + 1])
        links, share = self.entries.link[lo:hi], self.entries.share[lo:hi]
        if not len(links):
            return 0, []
        u, v = topology.link_src[links], topology.link_dst[links]
        out: dict[int, list[int]] = {}
        for k, node in enumerate(u.tolist()):
            out.setdefault(node, []).append(k)
        flow = {node: float(share[ks].sum()) for node, ks in out.items()}
        s, t = int(self.src[i]), int(self.dst[i])
        counts: dict[int, int] = {t: 1}

        def count(node: int, depth: int) -> int:
            if node not in counts:
                counts[node] = 0 if depth > len(links) else sum(count(int(v[k]), depth + 1)
                                                                for k in out.get(node, []))
            return counts[node]

        total = count(s, 0)
        if total == 0:  # an explicit route that is no path from the rank to the peer: its links in order
            return 1, [([int(u[0]), *map(int, v)], 1.0)]
        if total > limit:
            return total, []
        found = []

        def walk(node: int, nodes: list[int], p: float) -> None:
            if node == t:
                found.append((nodes, p))
                return
            for k in out.get(node, []):
                if counts.get(int(v[k]), 0):
                    walk(int(v[k]), [*nodes, int(v[k])], p * float(share[k]) / flow[node])

        walk(s, [s], 1.0)
        return total, found


def step_view(schedule: Schedule, topology: Topology, step: int, size: float, routing: str = "adaptive") -> StepView:
    """Step ``step`` of ``schedule`` on ``topology`` for a vector of ``size`` bytes: its transfers, their routes
    and every link's load.

    Args:
        schedule: the schedule; its ranks must be the topology's compute nodes.
        topology: the network.
        step: the step index, 0..num_steps-1.
        size: the vector size, bytes (all-to-all: one rank's send buffer).
        routing: ``adaptive`` (even split over all minimal paths) or ``dor`` for transfers without an explicit
            route.

    Returns:
        A :class:`StepView` (bytes and loads in bytes).

    Raises:
        DirectcollError: ``step`` outside the schedule's steps.
        TopologyError: ranks that are not the topology's compute nodes, an unknown routing or one the topology
            cannot do, an explicit route with a link outside the topology (:func:`route_entries`).
        ResourceError: routes over the memory budget (BFS of a large topology).

    Source: docs/architecture.md, "Cost and simulation" (route every transfer, add its bytes on every link); "Schedule
    IR" (an empty explicit route means: route it yourself).

    >>> from directcoll.algorithms.ring import build_ring
    >>> from directcoll.topology import parse
    >>> t = parse("ring:4")
    >>> step_view(build_ring(t), t, 9, 1024)
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: step 9 is out of range: the schedule has 6 steps (0..5)
    """
    check_ranks(schedule, topology)
    nsteps = schedule.num_steps
    if not 0 <= step < nsteps:
        raise DirectcollError(f"step {step} is out of range: the schedule has {nsteps} steps (0..{nsteps - 1})")
    a, b = (int(x) for x in schedule.step_bounds[step: step + 2])
    src, dst = schedule.src[a:b], schedule.dst[a:b]
    nbytes = schedule.transfer_size[a:b] * float(size)
    routes = None
    if schedule.route_offsets is not None:
        ro = schedule.route_offsets[a: b + 1]
        routes = (ro - ro[0], schedule.route_links[ro[0]: ro[-1]])
    entries = _entries(topology, src, dst, routing, routes)
    hops = np.bincount(entries.transfer, weights=entries.share, minlength=len(src))
    return StepView(step, np.arange(a, b, dtype=np.int64), src, dst, schedule.op[a:b], nbytes, hops, entries,
                    entries.loads(nbytes, topology.num_links))


def _entries(topology: Topology, src, dst, routing: str, routes) -> RouteEntries:
    """Route entries of a step: explicit routes where given (non-empty), else ``routing``; local transfers none."""
    explicit = np.zeros(len(src), bool) if routes is None else np.diff(routes[0]) > 0
    parts = [(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))]
    auto = np.flatnonzero((src != dst) & ~explicit)
    if len(auto):
        e = route_entries(topology, src[auto], dst[auto], routing)
        parts.append((auto[e.transfer], e.link, e.share))
    given = np.flatnonzero(explicit)
    if len(given):
        offsets, links = routes
        counts = np.diff(offsets)[given]
        starts = np.repeat(offsets[:-1][given] - np.r_[0, np.cumsum(counts)[:-1]], counts)
        chosen = links[starts + np.arange(counts.sum())]
        if chosen.min() < 0 or chosen.max() >= topology.num_links:
            raise TopologyError(f"a route uses a link id outside 0..{topology.num_links - 1} of {topology.spec}")
        parts.append((np.repeat(given, counts), chosen, np.ones(len(chosen))))
    transfer, link, share = (np.concatenate(c) for c in zip(*parts, strict=True))
    order = np.argsort(transfer, kind="stable")
    return RouteEntries(transfer[order], link[order], share[order])


def pieces_text(schedule: Schedule, transfer: int, limit: int = 4) -> str:
    """The pieces of a transfer as the IR holds them: block intervals ``[a,b)`` (fractions over the schedule's
    denominator where it has one; ``[a,b) at [c,d)`` where a piece lands displaced), the first ``limit`` of
    them and then how many there are.

    Returns:
        The text, e.g. ``'[0,8)'`` or ``'[0,1/2) [3/2,2)'``.

    Raises:
        Nothing: ``transfer`` must be a transfer index of ``schedule``.

    Source: docs/architecture.md, "Schedule IR" (pieces are half-open block intervals over a common denominator).

    >>> from directcoll.algorithms.ring import ring_allgather
    >>> pieces_text(ring_allgather(range(4)), 1)
    '[1,2)'
    """
    lo, hi = int(schedule.piece_offsets[transfer]), int(schedule.piece_offsets[transfer + 1])
    d = schedule.denominator

    def frac(x) -> str:
        return str(Fraction(int(x), d))

    out = []
    for p in range(lo, min(hi, lo + limit)):
        a, b, s = schedule.piece_start[p], schedule.piece_stop[p], schedule.shift[p]
        out.append(f"[{frac(a)},{frac(b)})" + (f" at [{frac(a + s)},{frac(b + s)})" if s else ""))
    if hi - lo > limit:
        out.append(f"... ({hi - lo} pieces)")
    return " ".join(out)


def route_text(view: StepView, i: int, topology: Topology, limit: int = MAX_LISTED_PATHS) -> str:
    """Transfer i's route as ``u->v->w``; several minimal paths as ``path (share) | path (share)``; more than
    ``limit`` as ``adaptive over N minimal paths``; a local copy or reduction as ``local``.

    Returns:
        The text.

    Raises:
        Nothing: reads the view (:meth:`StepView.paths`).

    Source: docs/topology.md, "Metrics and routing"; Swing (De Sensi et al., NSDI'24) Sec. 2.2 (minimal adaptive
    routing).

    >>> from directcoll.algorithms.ring import build_ring
    >>> from directcoll.topology import parse
    >>> t = parse("torus:2x3")
    >>> route_text(step_view(build_ring(t), t, 0, 1024), 0, t)
    '(0,0)->(0,1)'
    """
    count, paths = view.paths(i, topology, limit)
    if count == 0:
        return "local"
    if not paths:
        return f"adaptive over {count} minimal paths ({view.hops[i]:.3g} hops)"
    names = ["->".join(node_label(topology, v) for v in nodes) for nodes, _ in paths]
    if len(paths) == 1:
        return names[0]
    return " | ".join(f"{name} ({share:.0%})" for name, (_, share) in zip(names, paths, strict=True))


def transfer_rows(schedule: Schedule, topology: Topology, view: StepView) -> list[dict]:
    """One dict per transfer of the step, for tables and JSON: ``index``, ``rank``, ``peer``, ``op`` (copy or
    reduce), ``bytes``, ``hops``, ``pieces`` ([start, stop] numerators over the schedule's ``denominator``, in
    blocks), ``shift`` (destination displacements, only where a piece lands displaced), ``pieces_text``,
    ``paths`` (number of paths), ``route`` (:func:`route_text`), ``links`` (the link ids the transfer uses).

    Returns:
        A list of T dicts (bytes in bytes, hops in hops).

    Raises:
        Nothing: reads the view.

    Source: docs/architecture.md, "Schedule IR" (transfer = step, src, dst, op, pieces, optional route).

    >>> from directcoll.algorithms.ring import build_ring
    >>> from directcoll.topology import parse
    >>> t = parse("ring:4")
    >>> s = build_ring(t)
    >>> row = transfer_rows(s, t, step_view(s, t, 0, 1024))[0]
    >>> row["rank"], row["peer"], row["op"], row["bytes"], row["route"]
    (0, 1, 'reduce', 128.0, '0->1')
    """
    rows = []
    bounds = np.searchsorted(view.entries.transfer, np.arange(view.num_transfers + 1))
    for i in range(view.num_transfers):
        t = int(view.index[i])
        lo, hi = int(schedule.piece_offsets[t]), int(schedule.piece_offsets[t + 1])
        count, _ = view.paths(i, topology, 0)
        row = {"index": t, "rank": int(view.src[i]), "peer": int(view.dst[i]), "op": OP_NAMES[int(view.op[i])],
               "bytes": float(view.nbytes[i]), "hops": round(float(view.hops[i]), 9),
               "pieces": np.column_stack([schedule.piece_start[lo:hi], schedule.piece_stop[lo:hi]]).tolist()}
        if schedule.shift[lo:hi].any():
            row["shift"] = schedule.shift[lo:hi].tolist()
        row.update({"pieces_text": pieces_text(schedule, t), "paths": count, "route": route_text(view, i, topology),
                    "links": sorted(set(view.entries.link[bounds[i]: bounds[i + 1]].tolist()))})
        rows.append(row)
    return rows


def step_overview(schedule: Schedule, topology: Topology, size: float, routing: str = "adaptive") -> list[dict]:
    """One dict per step: ``step``, ``transfers``, ``bytes`` (all the step's transfers), ``busiest_link`` (id, -1
    for none), ``busiest_link_name`` (``u->v``), ``bytes_busiest_link``, ``busiest_ties`` (links as loaded as
    it), ``hops_max``.

    Returns:
        A list of num_steps dicts (bytes in bytes).

    Raises:
        TopologyError, ResourceError: as :func:`step_view`.

    Source: docs/architecture.md, "Cost and simulation" (per-step bytes on the most loaded link); docs/simulation.md,
    "Step model" (the per-step breakdown).

    >>> from directcoll.algorithms.ring import build_ring
    >>> from directcoll.topology import parse
    >>> t = parse("ring:4")
    >>> row = step_overview(build_ring(t), t, 1024)[0]  # two rings, one each way: 1/8 of the vector per link
    >>> row["transfers"], row["bytes_busiest_link"], row["busiest_ties"]
    (8, 128.0, 8)
    """
    check_ranks(schedule, topology)
    rows = []
    for k in range(schedule.num_steps):
        view = step_view(schedule, topology, k, size, routing)
        top = view.busiest
        rows.append({"step": k, "transfers": view.num_transfers, "bytes": float(view.nbytes.sum()),
                     "busiest_link": top, "busiest_link_name": link_label(topology, top),
                     "bytes_busiest_link": float(view.loads[top]) if top >= 0 else 0.0,
                     "busiest_ties": len(view.busiest_links),
                     "hops_max": round(float(view.hops.max(initial=0.0)), 9)})
    return rows
