"""All-to-all schedules lowered from the MCF solutions (Basu et al. Sec. 4) (algorithm ``mcf`` of the registry).

Variants:

* ``timestepped`` (link-based schedule, Basu Sec. 3.2.2, 4 "Link-based Schedules"): the tsMCF flow
  (:mod:`directcoll.synthesis.mcf.timestepped`) split into one walk per (source, destination) through the time-expanded
  graph; every shard is cut into q equal chunks and every walk carries a contiguous run of them, one link per
  step. Transfers go between neighbours only: one transfer per (step, link) carrying the pieces of every walk
  on that link in that step, with the link as its explicit route (parallel links stay distinct). Relays keep a
  chunk at its block coordinate (the IR's all-to-all semantics) and forward it in a later step.
* ``path`` (pMCF, eq. 21-24) and ``extp`` (MCF-extP, Sec. 3.2.1), path-based schedules for source-routed
  fabrics (:mod:`directcoll.synthesis.mcf.paths`): one step; for every pair (i, j) one transfer per path,
  carrying the path's share of block (i N + j) as a fractional piece, with the path's links as its explicit
  route, so the simulator and the cost model use exactly those routes.

**Chunking** (Basu Sec. 4: "the smallest chunk size to support the lowest such rate"; for paths "the highest
common factor across all path weights"): walk / path weights w (fractions of a shard, each pair's adding up to
1) are rationalised; when every w is within :data:`RATIONAL_TOLERANCE` of a fraction whose denominators have
an lcm q <= ``max_chunks``, the shard is cut into those q chunks and the schedule is exact. Otherwise q =
``max_chunks`` and each pair's weights are rounded to multiples of 1/q by largest remainder (the counts add up
to q): every weight moves by less than 1/q, which ``meta["discretization_error"]`` reports (the largest |n/q - w|)
together with the schedule's own time, ``meta["schedule_time_m_over_b"]``, against the LP's
``meta["lp_time_m_over_b"]``. Schedules use nblocks = N^2 (one block per pair) and ``denominator`` = q.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.chunking import common_denominator, largest_remainder, nearest_fractions
from directcoll.schedule.ir import Collective, Schedule
from directcoll.synthesis.mcf.paths import MAX_SHORTEST_PATHS, PathMcfResult, mcf_extp, pmcf
from directcoll.synthesis.mcf.timestepped import TsMcfResult, tsmcf
from directcoll.topology.model import Topology
from directcoll.topology.routing import link_loads

#: Default cap on the chunks per shard (q); exact rational weights with a larger lcm are rounded to it.
DEFAULT_MAX_CHUNKS = 256
#: A weight within this of a fraction (shard units) counts as that fraction.
RATIONAL_TOLERANCE = 1e-7
#: Largest ``max_chunks`` accepted (keeps RATIONAL_TOLERANCE * chunks far below one chunk).
MAX_CHUNKS_LIMIT = 1 << 20
VARIANTS = ("timestepped", "path", "extp")


@dataclass(frozen=True)
class Chunking:
    """Whole chunks of every walk / path: ``counts[p]`` chunks of 1/``chunks`` shard, starting at chunk
    ``first[p]`` of its pair's shard (a pair's runs tile [0, chunks)).

    Attributes:
        chunks: q, chunks per shard (each m / q bytes).
        counts: int64 (P,) chunks of every walk / path; a pair's counts add up to q.
        first: int64 (P,) the first chunk of every walk / path in its pair's shard.
        exact: the counts represent the weights exactly (to :data:`RATIONAL_TOLERANCE`).
        error: the largest |counts / chunks - weight|, in shards.

    Raises:
        Nothing: a frozen record built by :func:`chunk_shards`.

    Source: Basu et al. (HPDC'24) Sec. 4 ("the smallest chunk size to support the lowest such rate"; "the highest
    common factor across all path weights ... as the base chunk size").

    >>> chunk_shards([0, 0, 1], [0.25, 0.75, 1.0])
    Chunking(chunks=4, counts=array([1, 3, 4]), first=array([0, 1, 0]), exact=True, error=0.0)
    """

    chunks: int
    counts: np.ndarray
    first: np.ndarray
    exact: bool
    error: float


def chunk_shards(pair, weight, max_chunks: int = DEFAULT_MAX_CHUNKS) -> Chunking:
    """Cut every shard into the fewest equal chunks that represent its walks' / paths' weights.

    Args:
        pair: int (P,), the pair (any id) of every walk / path.
        weight: float (P,), its share of the pair's shard (normalised per pair here).
        max_chunks: the most chunks per shard.

    Returns:
        :class:`Chunking` (see the module docstring for the rule).

    Raises:
        UnsupportedShapeError: ``max_chunks`` outside 1..:data:`MAX_CHUNKS_LIMIT`, or a weight that is negative
            or not finite, or a pair whose weights add up to 0.
        ScheduleError: the largest-remainder rounding fails to give a pair q chunks (an internal error,
            :func:`directcoll.schedule.chunking.largest_remainder`).

    Source: Basu et al. (HPDC'24) Sec. 4 (chunking of link- and path-based schedules); the rounding rule when
    the lcm exceeds ``max_chunks`` is this module's docstring and docs/alltoall.md, "Lowering (Basu Sec. 4)".

    Weights 1/3, 2/3 need 3 chunks; with at most 2 they are rounded to 1/2, 1/2 (error 1/6):

    >>> c = chunk_shards([0, 0], [1 / 3, 2 / 3], max_chunks=2)
    >>> c.chunks, c.counts.tolist(), c.exact, round(c.error, 9)
    (2, [1, 1], False, 0.166666667)
    """
    pair = np.asarray(pair, dtype=np.int64)
    weight = np.asarray(weight, dtype=float)
    if not 1 <= max_chunks <= MAX_CHUNKS_LIMIT:
        raise UnsupportedShapeError(f"max_chunks must be between 1 and {MAX_CHUNKS_LIMIT}, got {max_chunks}")
    if not np.all(np.isfinite(weight)) or (weight < 0).any():
        raise UnsupportedShapeError("path / walk weights must be finite and >= 0")
    _, inverse = np.unique(pair, return_inverse=True)
    total = np.bincount(inverse, weights=weight)
    if not (total > 0).all():
        raise UnsupportedShapeError("every pair needs a positive total weight over its walks / paths")
    weight = weight / total[inverse]
    unique = np.unique(weight).tolist()
    fractions = dict(zip(unique, nearest_fractions(unique, max_chunks), strict=True))
    close = all(abs(float(f) - w) <= RATIONAL_TOLERANCE for w, f in fractions.items())
    q = common_denominator(fractions.values()) if close else max_chunks + 1
    exact = q <= max_chunks
    if not exact:
        q = max_chunks
    # largest remainder: each pair's counts add up to q (exact: from the nearest whole numbers, which add up to q)
    counts = largest_remainder(weight * q, np.full(len(total), q), inverse, tolerance=0.5 if exact else 0.0)
    order = np.argsort(inverse, kind="stable")
    cum = np.cumsum(counts[order])
    first = np.empty_like(counts)
    first[order] = cum - counts[order] - np.r_[0, cum][np.searchsorted(inverse[order], inverse[order])]
    return Chunking(q, counts, first, exact, float(np.abs(counts / q - weight).max()) if len(weight) else 0.0)


def _require_compute_only(topology: Topology, what: str) -> None:
    if topology.num_nodes != topology.num_compute:
        raise UnsupportedShapeError(f"{topology.spec}: the {what} schedule moves data between ranks link by link, "
                                    "so it needs a direct topology without switches; use variant 'path' or 'extp'")


def _merge_pieces(transfer: np.ndarray, start: np.ndarray, stop: np.ndarray):
    """Sort pieces by (transfer, start) and merge touching ones; returns (transfer, start, stop)."""
    order = np.lexsort((start, transfer))
    transfer, start, stop = transfer[order], start[order], stop[order]
    joined = np.r_[False, (transfer[1:] == transfer[:-1]) & (start[1:] == stop[:-1])]
    head = np.flatnonzero(~joined)
    last = np.r_[head[1:], len(start)] - 1
    return transfer[head], start[head], stop[last]


def tsmcf_schedule(topology, *, lmax: int | None = None, max_chunks: int = DEFAULT_MAX_CHUNKS,
                   solver: str = "auto", result: TsMcfResult | None = None, host_bandwidth=None,
                   nic_forwarding: bool = False) -> Schedule:
    """The tsMCF all-to-all lowered to a chunked, link-by-link, step-by-step schedule (Basu Sec. 3.1.3, 4).

    Args:
        topology: a :class:`Topology` or spec without switches (every node is a rank).
        lmax: steps of the time-expanded graph (default: chosen by :func:`tsmcf`).
        max_chunks: most chunks per shard (see the module docstring).
        solver: LP solver, as :func:`alltoall_mcf`.
        result: a :class:`TsMcfResult` of this topology to lower instead of solving.
        host_bandwidth, nic_forwarding: the host-to-NIC bottleneck, as :func:`tsmcf` (host forwarding only).

    Returns:
        An all-to-all :class:`Schedule` (nblocks = N^2, denominator = chunks per shard) of at most ``lmax``
        steps whose transfers each cross one link, given as the transfer's explicit route; meta records
        ``lp_value``, ``lp_time_m_over_b``, ``schedule_time_m_over_b``, ``chunks``, ``exact_chunking``,
        ``discretization_error``, ``lmax``, ``alltoall_mcf``; with a host bandwidth also
        ``host_bandwidth_bytes_per_s``, and the schedule's time counts every step's busiest host link (what a
        rank sends, or receives, in the step over the host bandwidth), as the step model with ``host_injection``
        does.

    Raises:
        UnsupportedShapeError: a topology with switches; as :func:`tsmcf` and :func:`chunk_shards`.
        TopologyError, SpecError, SolverError, ResourceError, DirectcollError: as :func:`tsmcf`.

    Source: Basu et al. (HPDC'24) Sec. 3.2.2 (tsMCF for non source-routed fabrics) and Sec. 4 ("Link-based
    Schedules": at each time step a rank sends the chunks received in the previous one); host links: Sec. 3.2.2,
    Fig. 2.

    >>> s = tsmcf_schedule("ring:4")
    >>> s.nblocks, round(s.meta["schedule_time_m_over_b"], 9), s.meta["exact_chunking"]
    (16, 2.0, True)
    >>> round(tsmcf_schedule("ring:4", host_bandwidth="50GB/s").meta["schedule_time_m_over_b"], 9)  # F = 1/4
    4.0
    """
    from directcoll.topology.spec import parse

    topology = parse(topology)
    _require_compute_only(topology, "timestepped")
    r = result if result is not None else tsmcf(topology, lmax=lmax, solver=solver, host_bandwidth=host_bandwidth,
                                                nic_forwarding=nic_forwarding)
    net, n = r.network, topology.num_compute
    walks = r.walks([0] if r.method == "symmetric" else None)
    src, dest, weight, links = walks["source"], walks["dest"], walks["weight"], walks["links"]
    if r.method == "symmetric":  # source 0's walks, translated to every source
        g = np.arange(n, dtype=np.int64)
        w0 = len(src)
        dest = net.translate_node(dest[None, :], g[:, None]).ravel()
        moved = net.translate_links(np.maximum(links, 0)[None, :, :], g[:, None, None])
        links = np.where(links[None, :, :] >= 0, moved, -1).reshape(-1, r.lmax)
        src, weight = np.repeat(g, w0), np.tile(weight, n)
    chunking = chunk_shards(src * n + dest, weight, max_chunks)
    q = chunking.chunks
    use = chunking.counts > 0
    walk, step = np.nonzero((links >= 0) & use[:, None])
    link = links[walk, step]
    start = (src[walk] * n + dest[walk]) * q + chunking.first[walk]
    stop = start + chunking.counts[walk]
    # one transfer per (step, link), steps renumbered to the ones that move data
    used_steps, step = np.unique(step, return_inverse=True)
    key = step * net.num_links + link
    keys, transfer = np.unique(key, return_inverse=True)
    transfer, start, stop = _merge_pieces(transfer, start, stop)
    t_step, t_link = keys // net.num_links, keys % net.num_links
    offsets = np.searchsorted(transfer, np.arange(len(keys) + 1)).astype(np.int64)
    # one transfer per (step, link): its amount is that link's load in the step
    amount = np.bincount(transfer, weights=(stop - start) / q, minlength=len(keys))
    load = amount / net.capacity[t_link]
    per_step = np.zeros(len(used_steps))
    np.maximum.at(per_step, t_step, load)
    if r.host_bandwidth is not None:  # what every rank sends / receives in a step crosses its host link
        host_cap = r.host_bandwidth / r.reference_bandwidth
        for end in (net.link_src[t_link], net.link_dst[t_link]):
            host_load = np.bincount(t_step * n + end, weights=amount, minlength=len(used_steps) * n) / host_cap
            np.maximum.at(per_step, np.arange(len(used_steps)).repeat(n), host_load)
    meta = {"algorithm": "mcf", "variant": "timestepped", "topology": topology.spec, "lmax": r.lmax,
            "steps_used": len(used_steps), "lp_value": r.value, "lp_time_m_over_b": r.time,
            "schedule_time_m_over_b": float(per_step.sum()), "alltoall_mcf": r.mcf_value,
            "chunks": q, "exact_chunking": chunking.exact, "discretization_error": chunking.error,
            "walks": int(use.sum()), "lp_method": r.method, "solver": r.solver,
            **({"host_bandwidth_bytes_per_s": r.host_bandwidth} if r.host_bandwidth is not None else {})}
    return Schedule(Collective.ALLTOALL, n, n * n, t_step, net.link_src[t_link], net.link_dst[t_link],
                    np.zeros(len(keys), np.uint8), offsets, start, stop, denominator=q,
                    route_offsets=np.arange(len(keys) + 1, dtype=np.int64), route_links=t_link, meta=meta)


def path_schedule(result: PathMcfResult, *, max_chunks: int = DEFAULT_MAX_CHUNKS) -> Schedule:
    """A pMCF / MCF-extP result lowered to a one-step all-to-all schedule with explicit routes (Basu Sec. 4,
    "Path-based Schedules").

    For every pair (i, j) and path p: one transfer i -> j carrying chunks ``[first, first + count)`` of block
    i N + j (a fractional piece, denominator = chunks per shard) along the path's links (the transfer's route).

    With a host bandwidth (NIC forwarding: every path starts with its source's host -> NIC link and ends with its
    destination's NIC -> host link) the routes keep the topology links only: the host links are the transfer's
    own ends, which the simulators charge with ``host_injection``; ``schedule_time_m_over_b`` counts them.

    Args:
        result: from :func:`pmcf` or :func:`mcf_extp`.
        max_chunks: most chunks per shard (see the module docstring).

    Returns:
        An all-to-all :class:`Schedule` (1 step, nblocks = N^2); meta records ``lp_value``, ``lp_time_m_over_b``
        (= 1 / value), ``schedule_time_m_over_b``, ``chunks``, ``exact_chunking``, ``discretization_error``, and
        ``host_bandwidth_bytes_per_s`` with a host bandwidth.

    Raises:
        UnsupportedShapeError: a path that crosses a host link other than at its ends (host forwarding); as
            :func:`chunk_shards`.
        ScheduleError: as :func:`chunk_shards`.

    Source: Basu et al. (HPDC'24) Sec. 4, "Path-based Schedules" (routes per commodity, shards divided into
    equal-sized chunks steered onto the routes by the path weights).

    >>> from directcoll.synthesis.mcf.paths import pmcf
    >>> s = path_schedule(pmcf("ring:4", paths="shortest"))
    >>> s.denominator, len(s.src), round(s.meta["schedule_time_m_over_b"], 9)
    (2, 16, 2.0)
    """
    net, n, p = result.network, result.num_compute, result.paths
    host = net.topology_link[p.links] < 0
    ends = np.zeros(len(p.links), dtype=bool)
    ends[p.offsets[:-1]] = ends[p.offsets[1:] - 1] = True
    if (host & ~ends).any():
        raise UnsupportedShapeError("path schedules forward in the NIC: a path crosses a host link between its ends "
                                    "(host forwarding); use the time-stepped schedule")
    chunking = chunk_shards(p.source * n + p.dest, result.weight, max_chunks)
    q = chunking.chunks
    keep = np.flatnonzero(chunking.counts > 0)
    counts = np.diff(p.offsets)[keep]
    route_offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)
    route = p.links[np.repeat(p.offsets[:-1][keep] - route_offsets[:-1], counts) + np.arange(route_offsets[-1])]
    start = (p.source[keep] * n + p.dest[keep]) * q + chunking.first[keep]
    stop = start + chunking.counts[keep]
    load = link_loads(net, p.source[keep], p.dest[keep], chunking.counts[keep] / q, routes=(route_offsets, route))
    host_bandwidth = None
    if host.any():  # the host links are the transfers' ends: keep the topology links as the routes
        inner = net.topology_link[route] >= 0
        route_offsets = np.r_[0, np.cumsum(np.add.reduceat(inner, route_offsets[:-1]))].astype(np.int64)
        route = route[inner]
        host_bandwidth = float(net.capacity[net.topology_link < 0][0] * result.reference_bandwidth)
    meta = {"algorithm": "mcf", "variant": "path" if result.method == "pmcf" else "extp", "topology": result.spec,
            "path_set": result.path_set, "lp_value": result.lp_value, "lp_time_m_over_b": 1.0 / result.lp_value,
            "paths_value": result.value, "schedule_time_m_over_b": float((load / net.capacity).max()),
            "alltoall_mcf": result.mcf_value, "chunks": q, "exact_chunking": chunking.exact,
            "discretization_error": chunking.error, "paths": len(keep), "solver": result.solver,
            **({"host_bandwidth_bytes_per_s": host_bandwidth} if host_bandwidth is not None else {})}
    t = len(keep)
    return Schedule(Collective.ALLTOALL, n, n * n, np.zeros(t, np.int64), p.source[keep], p.dest[keep],
                    np.zeros(t, np.uint8), np.arange(t + 1, dtype=np.int64), start, stop, denominator=q,
                    route_offsets=route_offsets, route_links=net.topology_link[route], meta=meta)


_OPTIONS = {"timestepped": {"lmax", "max_chunks", "solver", "host_bandwidth", "nic_forwarding"},
            "path": {"paths", "max_shortest", "max_chunks", "solver", "host_bandwidth", "nic_forwarding"},
            "extp": {"method", "max_chunks", "solver", "workers", "host_bandwidth", "nic_forwarding"}}


def mcf_schedule(topology, variant: str = "timestepped", **options) -> Schedule:
    """The ``mcf`` all-to-all schedule of one variant (``timestepped``, ``path``, ``extp``).

    Options: ``timestepped``: ``lmax``, ``max_chunks``, ``solver``; ``path``: ``paths`` (``auto``,
    ``disjoint``, ``shortest``), ``max_shortest``, ``max_chunks``, ``solver``; ``extp``: ``method``
    (``auto``, ``decomposed``, ``pair``), ``max_chunks``, ``solver``, ``workers``. Every variant takes
    ``host_bandwidth`` (bytes/s or a string, Basu Sec. 3.2.2's host-to-NIC bottleneck) and ``nic_forwarding``
    (default per variant: False for ``timestepped``, whose hosts forward; True for ``path`` and ``extp``, whose
    NICs do; the other value is refused).

    Returns:
        An all-to-all Schedule (nblocks = N^2, denominator = chunks per shard) with explicit routes; see
        :func:`tsmcf_schedule` and :func:`path_schedule` for its meta.

    Raises:
        UnsupportedShapeError: an unknown variant or option; as the variant's function.
        TopologyError, SpecError, SolverError, ResourceError, DirectcollError, ScheduleError: as the variant's
            function.

    Source: Basu et al. (HPDC'24) Sec. 3.2.1 (pMCF, MCF-extP), Sec. 3.2.2 (tsMCF) and Sec. 4 (lowering).

    >>> s = mcf_schedule("ring:4", "extp")
    >>> s.meta["variant"], round(s.meta["schedule_time_m_over_b"], 9)
    ('extp', 2.0)
    """
    if variant not in VARIANTS:
        raise UnsupportedShapeError(f"mcf: unknown variant {variant!r}; accepted: {', '.join(VARIANTS)}")
    extra = set(options) - _OPTIONS[variant]
    if extra:
        raise UnsupportedShapeError(f"mcf {variant} takes options {', '.join(sorted(_OPTIONS[variant]))}; got "
                                    f"{', '.join(sorted(extra))}")
    max_chunks = options.pop("max_chunks", DEFAULT_MAX_CHUNKS)
    if variant == "timestepped":
        return tsmcf_schedule(topology, max_chunks=max_chunks, **options)
    if variant == "path":
        options.setdefault("max_shortest", MAX_SHORTEST_PATHS)
        return path_schedule(pmcf(topology, **options), max_chunks=max_chunks)
    return path_schedule(mcf_extp(topology, **options), max_chunks=max_chunks)


def build_mcf(topology: Topology, collective, *, variant=None, ports=None, **options) -> Schedule:
    """Registry builder (algorithm ``mcf``): the all-to-all of :func:`mcf_schedule`; ``variant`` None means
    ``timestepped``.

    Returns:
        The Schedule of :func:`mcf_schedule`.

    Raises:
        UnsupportedShapeError: another collective than alltoall, ``ports`` other than None or 1, or as
            :func:`mcf_schedule`.
        ScheduleError: a collective name that is no collective; as :func:`mcf_schedule`.
        TopologyError, SpecError, SolverError, ResourceError, DirectcollError: as :func:`mcf_schedule`.

    Source: Basu et al. (HPDC'24) Sec. 3.2 and 4; docs/architecture.md, "The layers, bottom up" (the registry).

    >>> from directcoll.topology import parse
    >>> build_mcf(parse("ring:4"), "alltoall", variant="path").meta["variant"]
    'path'
    """
    if Collective.parse(collective) is not Collective.ALLTOALL:
        raise UnsupportedShapeError(f"mcf serves only alltoall, not {collective}")
    if ports not in (None, 1):
        raise UnsupportedShapeError(f"mcf builds one schedule over all links; ports must be 1, got {ports}")
    return mcf_schedule(topology, variant or "timestepped", **options)
