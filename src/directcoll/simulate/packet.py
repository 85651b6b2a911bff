"""The packet-level engine: a schedule's transfers as packets on ns-3 (docs/architecture.md "Engines, runtimes and
scale").

The reference the step and flow models are validated against (docs/fidelity.md). ns-3 (Debian's ``libns3-dev``,
ns-3.37) simulates the network: every directed link is a point-to-point channel with the link's bandwidth and
latency and a FIFO output queue, packets are serialised store-and-forward hop by hop (so a message pipelines over
the hops packet by packet), and the event scheduler orders everything. A small C++ driver,
``simulate/ns3/driver.cc``, built against ns-3 on first use and cached (:func:`driver`), wires the topology,
forwards packets (a per-hop router delay, then minimal adaptive routing by output-queue occupancy, or a source
route: dimension order or the schedule's explicit route) and starts each transfer when the flow model's progress
rule allows it (both ranks finished their earlier steps). Its comment block states the model in full.

What the driver takes (:func:`lower`): the links, the parameters, and every transfer of the schedule as
(step, src, dst, bytes, reduce, source route). What it returns (:class:`PacketResult`): the completion time, per
rank and step the time the rank finished the step, and the bytes every link carried.

Packets carry ``packet_size`` payload bytes and ``packet_header`` header bytes
(:class:`~directcoll.simulate.params.NetworkParams`), at least :data:`HEADER_BYTES`: ns-3's point-to-point
device adds a 2-byte PPP header to every packet, so a smaller ``packet_header`` is carried as 2 (the result's
``header_bytes`` says what was used). Both ``forwarding`` modes are simulated (cut-through by handing a packet to
the next router once its header has arrived). ``host_injection`` is a rank's NIC: packets pass it one after
another at that rate, into the network and out of it.
Queues are unbounded unless :class:`FlowControl` gives finite input buffers per virtual channel with credits;
then a cycle of full buffers is a :class:`~directcoll.errors.DeadlockError` naming it.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

import numpy as np

from directcoll import children
from directcoll.errors import DeadlockError, DirectcollError, MissingDependencyError, ResourceError, TopologyError
from directcoll.resources import cached_build
from directcoll.schedule.ir import Schedule
from directcoll.schedule.pattern import StepPattern, pattern_of
from directcoll.simulate.params import NetworkParams
from directcoll.simulate.routes import link_values, prepare, step_routes
from directcoll.simulate.step import call_cost, ports_of
from directcoll.topology.model import Topology
from directcoll.topology.paths import bfs_distances
from directcoll.topology.routing import route_entries

#: bytes ns-3's point-to-point device adds to every packet (its PPP header)
HEADER_BYTES = 2
#: packet-hops (packets times links crossed) one simulation may take: about a minute of ns-3 on one core
MAX_PACKET_HOPS = 2e7
#: the ns-3 modules the driver links (pkg-config names of Debian's libns3-dev)
NS3_MODULES = ("ns3-core", "ns3-network", "ns3-point-to-point")
#: virtual channel schemes of :class:`FlowControl`; the fewest channels a scheme needs and the routing it keeps
#: deadlock-free, where it is tied to one; the channels the engine takes per link
VC_SCHEMES = ("none", "hops", "dateline", "duato", "auto")
SCHEME_CHANNELS = {"dateline": 2, "duato": 3}
SCHEME_ROUTING = {"dateline": "dor", "duato": "adaptive"}
MAX_VIRTUAL_CHANNELS = 64
INSTALL_HINT = ("the packet engine needs ns-3: install Debian's libns3-dev and libgsl-dev "
                "(apt-get install libns3-dev libgsl-dev pkg-config g++), see the README")


@dataclass(frozen=True)
class PacketResult:
    """Outcome of one packet-level simulation.

    Attributes:
        time_s: when the last rank finished its last step, s.
        rank_step_end: float64 (N, S): when rank r finished step t of the schedule, s (a rank without transfers
            in a step passes it as soon as it finished the step before).
        link_bytes: int64 (L,): bytes each directed link carried, headers included.
        link_utilisation: float64 (L,): ``link_bytes / (bandwidth * time_s)``, in [0, 1].
        packets: packets injected.
        events: packet arrivals and transfer completions the driver handled.
        header_bytes: header bytes per packet on the wire (:func:`header_bytes`).
        adaptive_hops, escape_hops: with Duato's scheme, the packet-hops that took an adaptive channel and those
            that took their escape channel (0 and 0 under any other scheme).
        timeline_bin_s: the width of a bin of ``timeline``, s.
        timeline: float64 (B,): the share of all links' capacity in use over each bin from time 0 (bytes that
            left a link in the bin over the bin times the links' summed bandwidth), at most 64 bins.

    Raises:
        Nothing: a record, made by :func:`simulate_packet`.

    Source: docs/simulation.md, "The packet engine".
    """

    time_s: float
    rank_step_end: np.ndarray
    link_bytes: np.ndarray
    link_utilisation: np.ndarray
    packets: int
    events: int
    header_bytes: int
    adaptive_hops: int = 0
    escape_hops: int = 0
    timeline_bin_s: float = 0.0
    timeline: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def step_end(self) -> np.ndarray:
        """float64 (S,): when the last rank finished each step, s. Raises: Nothing. Source: docs/simulation.md."""
        return self.rank_step_end.max(axis=0) if self.rank_step_end.size else np.zeros(0)


@dataclass(frozen=True)
class FlowControl:
    """Credit-based flow control of the packet engine: finite input buffers per virtual channel.

    Every directed link feeds an input buffer of ``buffer_bytes`` per virtual channel at its far end; its sender
    spends credits (bytes) to send and gets them back when the packet leaves that buffer, after the link's latency
    plus ``credit_delay`` (the credit's trip back). ``buffer_bytes=None`` is the engine without flow control
    (unbounded queues, nothing ever waits for a buffer).

    Attributes:
        buffer_bytes: bytes per input buffer and virtual channel (at least one packet with its header), or None.
        virtual_channels: virtual channels per link (>= 1; "dateline" needs 2; more than 1 needs a buffer).
        scheme: how a hop picks its channel (any but "none" needs a buffer). "none": channel 0. "hops": the hop's
            index, capped at the last channel (deadlock-free with as many channels as the longest route has hops: a
            packet only waits for a higher channel). "dateline": on a torus, per dimension, channel 0 until the
            packet crosses the dimension's wrap-around link and channel 1 from it on (deadlock-free for
            dimension-order routes, Dally and Seitz 1987). "duato": on a torus with adaptive routing, channels 2
            and up carry minimal adaptive hops and channels 0 and 1 are the escape, dimension-order with the
            dateline: a packet that finds no adaptive channel's credits free waits for its dimension-order hop's
            escape channel (deadlock-free by Duato's theorem, 1993; needs 3 channels or more). "auto": the scheme
            :func:`deadlock_free` gives each schedule (its fewest channels, or ``virtual_channels`` if more),
            resolved by :func:`resolved` when the schedule is known.
        credit_delay: seconds a credit takes beyond the link's latency (a router's credit pipeline), >= 0.

    Raises:
        DirectcollError: a value outside these ranges (on construction).

    Source: docs/simulation.md, "The packet engine" (flow control); Dally & Towles, *Principles and Practices of
    Interconnection Networks* (2004), Ch. 13 (credit-based flow control) and Ch. 14 (deadlock, datelines).

    >>> FlowControl(buffer_bytes=8192, virtual_channels=2, scheme="dateline").scheme
    'dateline'
    """

    buffer_bytes: int | None = None
    virtual_channels: int = 1
    scheme: str = "none"
    credit_delay: float = 0.0

    def describe(self) -> str:
        """"8192 B buffers x 2 virtual channels (dateline)", or for "auto" "8192 B buffers, each schedule's fewest
        deadlock-free virtual channels": what a report says the packet engine assumed. Raises: Nothing.
        Source: docs/simulation.md, "The packet engine" (flow control).

        >>> FlowControl(8192, virtual_channels=2, scheme="dateline").describe()
        '8192 B buffers x 2 virtual channels (dateline)'
        """
        if self.scheme == "auto":  # resolved per schedule (resolved)
            return (f"{self.buffer_bytes} B buffers, each schedule's fewest deadlock-free virtual channels"
                    + (f" (at least {self.virtual_channels})" if self.virtual_channels > 1 else ""))
        return (f"{self.buffer_bytes} B buffers x {self.virtual_channels} virtual channel"
                f"{'s' if self.virtual_channels > 1 else ''} ({self.scheme})")

    def __post_init__(self) -> None:
        if self.buffer_bytes is not None and (not isinstance(self.buffer_bytes, int) or self.buffer_bytes < 1):
            raise DirectcollError(f"flow control: buffer_bytes must be a whole number of bytes >= 1 or None, got "
                                  f"{self.buffer_bytes!r}")
        if not isinstance(self.virtual_channels, int) or not 1 <= self.virtual_channels <= MAX_VIRTUAL_CHANNELS:
            raise DirectcollError(f"flow control: virtual_channels must be 1..{MAX_VIRTUAL_CHANNELS}, got "
                                  f"{self.virtual_channels!r}")
        if self.scheme not in VC_SCHEMES:
            raise DirectcollError(f"flow control: unknown scheme {self.scheme!r}; accepted: {', '.join(VC_SCHEMES)}")
        if self.buffer_bytes is None and (self.scheme != "none" or self.virtual_channels > 1):
            # without buffers nothing waits for credits: channels would change nothing, and duato would always
            # take its escape channel
            raise DirectcollError(f"flow control: virtual channels (scheme {self.scheme!r}, {self.virtual_channels} "
                                  "channels) need buffer_bytes: without a buffer size there is no flow control")
        if self.virtual_channels < SCHEME_CHANNELS.get(self.scheme, 1):
            raise DirectcollError("flow control: the dateline scheme needs 2 virtual channels" if self.scheme ==
                                  "dateline" else "flow control: the duato scheme needs 3 virtual channels or more "
                                  "(2 escape, the rest adaptive)")
        if not (np.isfinite(self.credit_delay) and self.credit_delay >= 0):
            raise DirectcollError(f"flow control: credit_delay must be a time >= 0 s, got {self.credit_delay!r}")


def link_dimensions(topology: Topology) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(dimension (L,), wraps (L,), direction (L,)) of every link of a torus-like topology: the coordinate its port
    moves along, whether it steps over the edge of that coordinate (the dateline link) and which way (+1, -1);
    (-1, False, 0) where the topology has no row-major coordinates (not a Cayley topology laid out node by node)
    or a port moves along several or by more than one.

    Raises:
        Nothing: reads the topology's layout.

    Source: Dally & Towles (2004), Sec. 14.2 (datelines on tori).

    >>> from directcoll.topology import parse
    >>> dim, wraps, way = link_dimensions(parse("ring:4"))
    >>> dim.tolist(), np.flatnonzero(wraps).tolist(), way[:2].tolist()  # 3 -> 0 and 0 -> 3 wrap around
    ([0, 0, 0, 0, 0, 0, 0, 0], [1, 6], [1, -1])
    """
    n_links = topology.num_links
    none = np.full(n_links, -1, dtype=np.int64), np.zeros(n_links, dtype=bool), np.zeros(n_links, dtype=np.int64)
    offsets = topology.port_offsets
    # a Cayley topology's link u * K + k leaves node u by port k (Topology.port_offsets); its nodes are ranks
    # with row-major coordinates over its shape (Topology.coords)
    v = topology.num_nodes
    if offsets is None or topology.shape is None or topology.num_compute != v or n_links != v * len(offsets):
        return none
    k = len(offsets)
    offsets = np.asarray(offsets)
    moving = offsets != 0
    single = (moving.sum(axis=1) == 1) & (np.abs(offsets).max(axis=1) == 1)
    port_dim = np.where(single, moving.argmax(axis=1), -1)
    port = np.arange(n_links) % k
    dim = port_dim[port]
    at = topology.coords(topology.link_src)
    d = np.maximum(dim, 0)
    step = at[np.arange(n_links), d] + offsets[port, d]
    side = np.asarray(topology.shape)[d]
    wraps = (dim >= 0) & ((step < 0) | (step >= side))
    return dim, wraps, np.where(dim >= 0, offsets[port, d], 0)


def bandwidth_delay_bytes(topology: Topology, params: NetworkParams, credit_delay: float = 0.0) -> int:
    """Bytes a link's input buffer needs so that credits never stall one flow: the largest over the links of
    bandwidth x (a packet's serialisation + the router's per-hop latency + 2 x the link's latency + the credit
    delay), the credit loop of :class:`FlowControl`; at least one packet with its header.

    Returns:
        Bytes, an int.

    Raises:
        Nothing: arithmetic on the links.

    Source: docs/simulation.md, "Packet engine" (flow control); Dally & Towles (2004), Sec. 13.3 (a buffer of
    one credit round trip keeps a link busy).

    >>> from directcoll.topology import parse
    >>> from directcoll.simulate.params import SWING_SST
    >>> bandwidth_delay_bytes(parse("torus:4x4"), SWING_SST)  # 50 GB/s x (4098 B / 50 GB/s + 300 ns + 2 x 100 ns)
    29098
    """
    bw, lat = link_values(topology, params)
    packet = params.packet_size + header_bytes(params)
    loop = packet / bw + params.per_hop_latency + 2 * lat + credit_delay
    return max(packet, int(np.ceil((bw * loop).max())))


def deadlock_free(topology: Topology, routing: str, buffer_bytes: int, credit_delay: float = 0.0,
                  schedule: Schedule | StepPattern | None = None) -> FlowControl:
    """The flow control with the fewest virtual channels whose scheme is deadlock-free for ``routing`` on
    ``topology``: "dateline" (2 channels) for dimension-order routes on a torus, "duato" (3) for adaptive routes
    on a torus, "hops" with as many channels as the diameter elsewhere (minimal routes of any kind), and "hops"
    with as many channels as its longest route has hops for a ``schedule`` with explicit routes.

    Returns:
        A :class:`FlowControl` with ``buffer_bytes`` per buffer and channel.

    Raises:
        DirectcollError: a diameter over 64 hops (more channels than the engine takes).

    Source: docs/simulation.md, "Packet engine" (flow control); Dally & Seitz (1987); Duato (1993).

    >>> from directcoll.topology import parse
    >>> deadlock_free(parse("torus:4x4"), "adaptive", 8192).scheme
    'duato'
    >>> deadlock_free(parse("genkautz:3:10"), "adaptive", 8192).virtual_channels  # its diameter
    3
    """
    dims = link_dimensions(topology)[0]
    longest = _longest_route(schedule)
    if longest is not None:
        scheme, channels = "hops", max(1, longest)
    elif (dims >= 0).all() and routing in SCHEME_ROUTING.values():
        scheme = next(k for k, r in SCHEME_ROUTING.items() if r == routing)
        channels = SCHEME_CHANNELS[scheme]
    else:
        scheme, channels = "hops", max(1, int(bfs_distances(topology).max()))
    if channels > MAX_VIRTUAL_CHANNELS:
        raise DirectcollError(f"{topology.spec}: routes of {channels} hops need more virtual channels than the "
                              f"packet engine takes ({MAX_VIRTUAL_CHANNELS})")
    return FlowControl(buffer_bytes=int(buffer_bytes), virtual_channels=channels, scheme=scheme,
                       credit_delay=credit_delay)


def resolved(flow: FlowControl | None, topology: Topology, routing: str,
             schedule: Schedule | StepPattern) -> FlowControl | None:
    """``flow`` with its "auto" scheme made concrete for ``schedule``: :func:`deadlock_free`'s scheme and channels,
    or ``flow.virtual_channels`` where those are more (more adaptive channels under Duato's protocol). Any other
    flow control (or None) is returned as it is.

    Parameters
    ----------
    flow : FlowControl or None
        The requested flow control.
    topology : Topology
        The network the schedule runs on.
    routing : str
        "adaptive", "dor" or "single": the routes of transfers that bring none.
    schedule : Schedule or StepPattern
        The schedule to time (its explicit routes, if any, decide the scheme).

    Returns
    -------
    FlowControl or None

    Raises
    ------
    DirectcollError
        ``flow.virtual_channels`` above 1 but fewer than the scheme needs (naming both), or as
        :func:`deadlock_free`.

    Source: docs/simulation.md, "The packet engine" (flow control).

    >>> from directcoll.topology import parse
    >>> from directcoll.registry import build
    >>> t = parse("torus:4x4")
    >>> resolved(FlowControl(8192, scheme="auto"), t, "adaptive", build("swing", t)).scheme
    'duato'
    >>> resolved(FlowControl(8192, scheme="auto"), t, "dor", build("swing", t)).virtual_channels
    2
    """
    if flow is None or flow.scheme != "auto":
        return flow
    need = deadlock_free(topology, routing, flow.buffer_bytes, flow.credit_delay, schedule=schedule)
    if 1 < flow.virtual_channels < need.virtual_channels:
        raise DirectcollError(f"flow control: {flow.virtual_channels} virtual channels are too few for a deadlock-free "
                              f"{need.scheme!r} scheme on {topology.spec} ({need.virtual_channels} needed); give "
                              f"{need.virtual_channels} or more, or name a scheme with --vc-scheme")
    return replace(need, virtual_channels=max(need.virtual_channels, flow.virtual_channels))


def _longest_route(schedule) -> int | None:
    """The most links an explicit route of ``schedule`` takes, or None without explicit routes."""
    if schedule is None:
        return None
    pattern = schedule if isinstance(schedule, StepPattern) else pattern_of(schedule)
    if pattern.route_offsets is None:
        return None
    return int(np.diff(pattern.route_offsets).max(initial=0))


# -- the driver -----------------------------------------------------------------------------------------------------
def _ns3_flags() -> list[str]:
    if shutil.which("pkg-config") is None or shutil.which("g++") is None:
        raise MissingDependencyError(INSTALL_HINT)
    run = subprocess.run(["pkg-config", "--libs", *NS3_MODULES], capture_output=True, text=True)
    if run.returncode != 0:
        raise MissingDependencyError(f"{INSTALL_HINT} (pkg-config: {run.stderr.strip()})")
    return run.stdout.split()


def driver() -> Path:
    """The packet engine's executable, built on first use with ``g++ -std=c++17 -O2`` against ns-3 and cached
    under :func:`directcoll.resources.cache_dir` (:func:`~directcoll.resources.cached_build`), keyed by a hash of
    the source, the compiler and the ns-3 link flags.

    Returns:
        the path of the executable.

    Raises:
        MissingDependencyError: no ``g++``, no ``pkg-config`` or no ns-3 (the message says what to install).
        DirectcollError: the build failed (the compiler's last lines are in the message).

    Source: docs/architecture.md, "Engines, runtimes and scale" (the driver the project builds on first use).
    """
    source = resources.files("directcoll.simulate").joinpath("ns3/driver.cc").read_bytes()
    flags = _ns3_flags()
    compiler = subprocess.run(["g++", "--version"], capture_output=True, text=True).stdout.splitlines()[:1]

    def build(tmp: Path, out: Path) -> None:
        src = tmp / "driver.cc"
        src.write_bytes(source)
        run = children.run(["g++", "-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-o", str(out), str(src),
                              *flags], capture_output=True, text=True)
        if run.returncode != 0:
            tail = "\n".join(run.stderr.strip().splitlines()[-15:])
            raise DirectcollError(f"building the ns-3 packet engine failed:\n{tail}")

    return cached_build("ns3-driver", source + " ".join(flags + compiler).encode(), build)


def available() -> bool:
    """True when ns-3, pkg-config and g++ are installed (the driver can be built). Raises: Nothing.
    Source: docs/architecture.md, "Engines, runtimes and scale"."""
    try:
        _ns3_flags()
    except MissingDependencyError:
        return False
    return True


# -- lowering -------------------------------------------------------------------------------------------------------
def header_bytes(params: NetworkParams) -> int:
    """Header bytes per packet the packet engine carries: ``params.packet_header``, at least :data:`HEADER_BYTES`.
    Raises: Nothing. Source: ns-3.37's PointToPointNetDevice (a PPP header on every packet)."""
    return max(HEADER_BYTES, params.packet_header)


def _check_flow(flow: FlowControl, params: NetworkParams, topology: Topology, routing: str, dims,
                explicit: bool) -> None:
    if flow.buffer_bytes is not None and flow.buffer_bytes < params.packet_size + header_bytes(params):
        raise DirectcollError(f"flow control: a buffer of {flow.buffer_bytes} bytes cannot hold one packet of "
                              f"{params.packet_size} + {header_bytes(params)} header bytes")
    if flow.scheme in ("dateline", "duato"):
        if explicit:
            raise TopologyError(f"the {flow.scheme} scheme needs the engine's own routes; this schedule brings "
                                "explicit routes: use scheme 'hops' with as many channels as its longest route")
        if (dims < 0).any():
            raise TopologyError(f"the {flow.scheme} scheme needs a torus's dimensions; {topology.spec} has none "
                                "(use scheme 'hops')")
        if flow.scheme == "dateline" and routing != "dor":
            raise TopologyError("dateline virtual channels keep dimension-order routes deadlock-free; use "
                                "--routing dor, scheme 'duato' for adaptive routes on a torus, or scheme 'hops' "
                                "with as many channels as the diameter")
        if flow.scheme == "duato" and routing != "adaptive":
            raise TopologyError("the duato scheme is for adaptive routing (its escape channels are dimension-order "
                                "with datelines); with --routing dor use scheme 'dateline'")


def _ordered_routes(topology: Topology, src: np.ndarray, dst: np.ndarray, routing: str,
                    routes) -> tuple[np.ndarray, np.ndarray]:
    """(offsets (T + 1,), links) of every transfer's source route in path order; routes of length 0 for adaptive
    routing without explicit routes."""
    if routes is None and routing == "adaptive":
        return np.zeros(len(src) + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
    entries = route_entries(topology, src, dst, routing, routes)
    if routes is not None:  # explicit routes are in path order already; the driver checks they connect
        return routes[0].astype(np.int64), routes[1].astype(np.int64)
    if not np.all(entries.share == 1.0):
        raise TopologyError(f"{routing} routing splits a transfer over several paths on {topology.spec}; "
                            "the packet engine needs one path per transfer (use --routing adaptive)")
    # a minimal path visits nodes at distance 0, 1, 2, ... from its source: sort each transfer's links by that
    uniq, inv = np.unique(src, return_inverse=True)
    dist = bfs_distances(topology, uniq)
    order = np.lexsort((dist[inv[entries.transfer], topology.link_src[entries.link]], entries.transfer))
    counts = np.bincount(entries.transfer, minlength=len(src))
    return np.concatenate([[0], np.cumsum(counts)]), entries.link[order]


def lower(schedule: Schedule | StepPattern, topology: Topology, size_bytes: float,
          params: NetworkParams | None = None, routing: str = "adaptive", *,
          max_packet_hops: float = MAX_PACKET_HOPS, flow: FlowControl | None = None) -> tuple[str, int]:
    """The driver's input for one collective of ``size_bytes`` bytes: (text, packet-hops estimate).

    Every transfer carries ``round(size * size_bytes)`` bytes (size: its fraction of the vector), in
    ``ceil(bytes / packet_size)`` packets (one empty packet for 0 bytes). The format: ``directcoll-packet 2``;
    ``nodes V N``; ``links L`` then L lines ``src dst bandwidth(bytes/s) latency(s) dimension wraps(0/1)
    direction(+1/-1/0)`` (:func:`link_dimensions`); ``shape D side_1 .. side_D`` (D = 0 without coordinates);
    ``params packet_size per_hop(s) alpha(s) gamma(s/byte) header_bytes cut_through(0/1) threads
    eager_threshold(bytes; -1: none) message_overhead(s) host_injection(bytes/s; 0: none) reduction_overhead(s; 0:
    none, or the reductions run on several threads) reduction_threshold(bytes)``; ``flow
    buffer_bytes(0: none) virtual_channels scheme credit_delay(s)`` (:class:`FlowControl`); ``transfers T S``
    then T lines ``step src dst bytes reduce k link_1 .. link_k`` (k = 0: adaptive routing).

    Raises:
        TopologyError: rank count mismatch, unknown routing, a routing the topology cannot do or one that splits
            a transfer over several paths; the dateline or duato scheme on a topology without torus dimensions,
            with explicit routes, or with routes other than dimension order (dateline) or adaptive (duato).
        DirectcollError: a negative or non-finite size, or a buffer smaller than one packet with its header.
        ResourceError: more than ``max_packet_hops`` packet-hops (default :data:`MAX_PACKET_HOPS`).

    Source: docs/simulation.md, "The packet engine".

    >>> from directcoll.topology import parse
    >>> from directcoll.registry import build
    >>> text, work = lower(build("ring", "ring:4"), parse("ring:4"), 1024, NetworkParams(packet_size=256))
    >>> text.splitlines()[0], work
    ('directcoll-packet 2', 48)
    """
    pattern, params = prepare(schedule, topology, params, routing)
    flow = resolved(flow, topology, routing, pattern) if flow is not None else FlowControl()
    dims, wraps, ways = link_dimensions(topology)
    _check_flow(flow, params, topology, routing, dims, pattern.route_offsets is not None)
    size = float(size_bytes)
    if not np.isfinite(size) or size < 0:
        raise DirectcollError(f"packet engine: vector size must be a finite number of bytes >= 0, got {size_bytes!r}")
    bw, lat = link_values(topology, params)
    per_step = []
    for k in range(pattern.num_distinct):
        sl = pattern.step(k)
        src, dst = pattern.src[sl], pattern.dst[sl]
        offsets, links = np.zeros(len(src) + 1, dtype=np.int64), np.zeros(0, dtype=np.int64)
        net = np.flatnonzero(src != dst)
        routes = step_routes(pattern, k)
        if len(net):
            if routes is not None and len(net) < len(src):
                raise TopologyError("a schedule with explicit routes has a local transfer; the packet engine "
                                    "needs a route for every transfer of a routed step")
            o, ln = _ordered_routes(topology, src[net], dst[net], routing, routes)
            counts = np.zeros(len(src), dtype=np.int64)
            counts[net] = np.diff(o)
            offsets, links = np.concatenate([[0], np.cumsum(counts)]), ln
        nbytes = np.rint(pattern.size[sl] * size).astype(np.int64)
        per_step.append((src, dst, nbytes, pattern.reduce[sl], offsets, links))
    lines = [f"directcoll-packet 2\nnodes {topology.num_nodes} {topology.num_compute}\nlinks {topology.num_links}"]
    lines += [f"{s} {d} {b!r} {t!r} {m} {int(w)} {y}"
              for s, d, b, t, m, w, y in zip(topology.link_src.tolist(), topology.link_dst.tolist(),
                                             bw.astype(float).tolist(), lat.astype(float).tolist(), dims.tolist(),
                                             wraps.tolist(), ways.tolist(), strict=True)]
    shape = [int(x) for x in topology.shape] if (dims >= 0).any() else []
    lines.append(" ".join(map(str, ["shape", len(shape), *shape])))
    impl = params.implementation
    gamma = params.gamma if impl.gamma is None else impl.gamma
    eager = -1.0 if impl.eager_threshold is None else float(impl.eager_threshold)
    lines.append(f"params {params.packet_size} {params.per_hop_latency!r} {params.alpha!r} {gamma!r} "
                 f"{header_bytes(params)} {int(params.forwarding == 'cut-through')} "
                 f"{impl.reduction_threads(ports_of(pattern))} {eager!r} {float(impl.message_overhead)!r} "
                 f"{float(params.host_injection or 0.0)!r} "
                 f"{float(impl.reduction_overhead) if impl.forks(ports_of(pattern)) else 0.0!r} "
                 f"{float(impl.reduction_threshold)!r}")
    lines.append(f"flow {flow.buffer_bytes or 0} {flow.virtual_channels} {flow.scheme} {flow.credit_delay!r}")
    body, work = [], 0
    hops = _hop_counts(topology, routing, per_step)
    for t, k in enumerate(pattern.sequence.tolist()):
        src, dst, nbytes, reduce, offsets, links = per_step[k]
        packets = np.maximum(1, -(-nbytes // params.packet_size))
        work += int((packets * hops[k]).sum())
        if work > max_packet_hops:
            raise ResourceError(f"the packet engine would simulate more than {max_packet_hops:.0e} packet-hops "
                                f"for {size_bytes:g} bytes on {topology.spec} (about 5 us of one core each); "
                                "use a smaller size, a larger packet_size, or the flow model")
        for i in range(len(src)):
            route = links[offsets[i]:offsets[i + 1]].tolist()
            body.append(f"{t} {src[i]} {dst[i]} {nbytes[i]} {int(reduce[i])} {len(route)}"
                        + "".join(f" {x}" for x in route))
    lines.append(f"transfers {len(body)} {len(pattern.sequence)}")
    return "\n".join(lines + body) + "\n", work


def _hop_counts(topology: Topology, routing: str, per_step) -> list[np.ndarray]:
    """Per distinct step, (T_k,) the hops every transfer crosses (0 for local ones), for the work estimate."""
    hops = [np.diff(offsets).astype(np.int64) for _, _, _, _, offsets, _ in per_step]
    todo = [np.flatnonzero((h == 0) & (src != dst)) for h, (src, dst, *_) in zip(hops, per_step, strict=True)]
    sources = np.unique(np.concatenate([per_step[k][0][t] for k, t in enumerate(todo)] + [np.zeros(0, np.int64)]))
    if len(sources):
        dist = bfs_distances(topology, sources)
        for h, t, (src, dst, *_) in zip(hops, todo, per_step, strict=True):
            h[t] = dist[np.searchsorted(sources, src[t]), dst[t]]
    return hops


# -- running --------------------------------------------------------------------------------------------------------
def simulate_packet(schedule: Schedule | StepPattern, topology: Topology, size_bytes: float,
                    params: NetworkParams | None = None, routing: str = "adaptive", *,
                    max_packet_hops: float = MAX_PACKET_HOPS, flow: FlowControl | None = None) -> PacketResult:
    """Simulate one collective of ``size_bytes`` bytes packet by packet on ns-3 (see the module docstring).

    Args:
        schedule: a Schedule or a StepPattern whose ranks are the topology's compute nodes.
        topology: the network (bandwidths in bytes/s, latencies in s, unless ``params`` overrides them).
        size_bytes: the vector size, bytes (>= 0).
        params: per-hop latency (router delay), alpha, gamma, link overrides and ``packet_size``.
        routing: "adaptive" (minimal, by output-queue occupancy, per packet at every router), "dor" or "single"
            (a source route per transfer); explicit routes in the schedule take precedence.
        flow: finite buffers and virtual channels (:class:`FlowControl`); default: none, unbounded queues.

    Returns:
        :class:`PacketResult`.

    Raises:
        MissingDependencyError: ns-3 or a compiler is not installed.
        DeadlockError: with ``flow``, packets wait on each other's buffers in a cycle (the message names it).
        TopologyError, DirectcollError, ResourceError: as :func:`lower`; DirectcollError also when the driver
            fails (its message) or drops a packet, or for an implementation with a bandwidth efficiency below 1
            (this engine carries headers itself).

    Source: docs/simulation.md, "The packet engine"; ns-3.37's point-to-point model.
    """
    params = params if params is not None else NetworkParams()
    impl = params.implementation.on(schedule.meta)  # with the code path that runs the schedule
    if impl.bandwidth_efficiency != 1.0:
        raise DirectcollError(f"the packet engine does not model implementation {impl.name!r}'s bandwidth "
                              "efficiency (it carries the packets' headers itself); time it with the step or flow "
                              "model")
    text, _ = lower(schedule, topology, size_bytes, params, routing, max_packet_hops=max_packet_hops, flow=flow)
    exe = driver()
    with tempfile.TemporaryDirectory(prefix="directcoll-packet-") as tmp:
        inp, outp = Path(tmp) / "in.txt", Path(tmp) / "out.txt"
        inp.write_text(text)
        run = children.run([str(exe), str(inp), str(outp)], capture_output=True, text=True)
        if run.returncode != 0:
            message = run.stderr.strip() or f"exit {run.returncode}"
            if "deadlock: " in message:
                raise DeadlockError(f"packet engine on {topology.spec}: {message.split('deadlock: ', 1)[1]}")
            raise DirectcollError(f"packet engine failed: {message}")
        result = _parse(outp.read_text(), topology, params)
    # the call's own costs, once
    return replace(result, time_s=result.time_s + call_cost(impl, schedule, float(size_bytes)))


def _parse(text: str, topology: Topology, params: NetworkParams) -> PacketResult:
    """The driver's output: ``key value`` lines (time, drops, packets, events, adaptive and escape hops, the
    timeline: a bin width and bytes per bin), ``steps N S`` and N rows of S times, ``links L`` and L byte counts."""
    lines = iter(text.splitlines())
    head: dict[str, list[str]] = {}
    for line in lines:
        key, *vals = line.split()
        head[key] = vals
        if key == "steps":
            break
    if int(head["drops"][0]):
        raise DirectcollError(f"packet engine dropped {head['drops'][0]} packets; the network must be lossless")
    n, s = (int(v) for v in head["steps"])
    rank_step = np.array([next(lines).split() for _ in range(n)], dtype=float).reshape(n, s)
    nl = int(next(lines).split()[1])
    link_bytes = np.array([next(lines) for _ in range(nl)], dtype=np.int64)
    time_s = float(head["time"][0])
    bw, _ = link_values(topology, params)
    util = link_bytes / (bw * time_s) if time_s > 0 else np.zeros(nl)
    width, sent = float(head["timeline"][0]), np.array(head["timeline"][1:], dtype=float)
    return PacketResult(time_s, rank_step, link_bytes, util, int(head["packets"][0]), int(head["events"][0]),
                        header_bytes(params), int(head["adaptive_hops"][0]), int(head["escape_hops"][0]), width,
                        sent / (width * float(bw.sum())))


def packet_times(schedule: Schedule | StepPattern, topology: Topology, sizes, params: NetworkParams | None = None,
                 routing: str = "adaptive", progress=None, flow: FlowControl | None = None) -> np.ndarray:
    """Packet-level completion time (s) for every vector size in ``sizes`` (bytes); same shape as ``sizes``.

    One ns-3 simulation per size (:func:`simulate_packet`); ``progress(done, total)`` after each.

    Raises:
        as :func:`simulate_packet`.

    Source: docs/simulation.md, "The packet engine".
    """
    flat = np.atleast_1d(np.asarray(sizes, dtype=float)).ravel()
    flow = resolved(flow, topology, routing, schedule)  # once for every size
    out = np.empty(len(flat))
    for i, size in enumerate(flat):
        out[i] = simulate_packet(schedule, topology, size, params, routing, flow=flow).time_s
        if progress is not None:
            progress(i + 1, len(flat))
    return out.reshape(np.shape(sizes)) if np.ndim(sizes) else out.reshape(())


def order_range(schedule: Schedule | StepPattern, topology: Topology, sizes, first, orderings: int,
                params: NetworkParams | None = None, routing: str = "adaptive", flow: FlowControl | None = None,
                max_packet_hops: float = MAX_PACKET_HOPS) -> np.ndarray:
    """The fastest and slowest packet-level time per size over the order as built and ``orderings - 1`` other
    orders of each step's transfers (:meth:`StepPattern.reordered <directcoll.schedule.pattern.StepPattern.
    reordered>` with seeds 1, 2, ...): the same problem, which the engine serves in list order (a NIC's round
    robin).

    Args:
        schedule: a Schedule or StepPattern; topology: its network.
        sizes: float (S,) vector sizes, bytes.
        first: float (S,) the times already simulated in the order as built, s.
        orderings: how many orders in all, >= 1.
        params, routing, flow, max_packet_hops: as :func:`simulate_packet`.

    Returns:
        float64 (S, 2): per size, the fastest and the slowest time, s.

    Raises:
        as :func:`simulate_packet`.

    Source: docs/fidelity.md, "Ties" (the packet engine's spread over the orders of the transfers).
    """
    pattern = schedule if isinstance(schedule, StepPattern) else pattern_of(schedule)
    flow = resolved(flow, topology, routing, pattern)  # once for every order and size (routes are kept)
    sizes = np.atleast_1d(np.asarray(sizes, dtype=float))
    every = [np.atleast_1d(np.asarray(first, dtype=float))]
    for seed in range(1, orderings):
        other = pattern.reordered(seed)
        every.append(np.array([simulate_packet(other, topology, size, params, routing, flow=flow,
                                               max_packet_hops=max_packet_hops).time_s for size in sizes]))
    return np.column_stack([np.min(every, axis=0), np.max(every, axis=0)])
