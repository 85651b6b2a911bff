"""What an emulated testbed of a topology is made of: a network namespace per node, a veth pair per pair of
neighbours, a ``tc`` token bucket on every link end, an address per node and routes along every minimal path.

The plan is pure computation (no privileges, nothing created); :mod:`directcoll.testbed.netns` turns it into
``ip`` and ``tc`` batches. Choices, each a decision a user of the testbed should know (docs/testbed.md):

* **Nodes.** Every node, switches included, is a namespace with one IPv4 address, ``10.0.0.0 + node + 1``, held
  by each of its links' interfaces (a /32 on every veth end): a rank's MPI library binds to that address whichever
  interface it picks, and a neighbour's ARP request on any link is answered.
* **Links.** The links between two nodes, both directions, are one veth pair (its ends in the nodes'
  namespaces); parallel links (a torus of side 2 has two between neighbours) are one veth direction at their summed
  rate, because MPI over TCP holds one connection per pair of ranks, which per-flow routing would pin to one of
  them. A link without a reverse (a directed topology) still gets a pair, whose reverse direction no route uses.
  Each direction is shaped on its sending end by a token bucket (``tc tbf``): the link's rate (serialisation) and
  a queue of ``queue`` bytes; a propagation delay, where asked for, is a ``netem`` qdisc in front of it (kernels
  without sch_netem refuse a delay).
* **Rates.** The fastest link of the topology runs at ``link_rate``; every other link keeps its ratio to it, so a
  topology with slower links (``links(...)``, a network file) keeps its shape. Every link gets the delay
  ``link_delay`` (default none): the topologies' latencies (100 ns and the like) are far below what the kernel's
  own path adds (tens of µs per hop), so they are not emulated.
* **Routes.** Node u reaches node d through every link (u, w) with dist(w, d) = dist(u, d) - 1 (all minimal
  paths, as the step model's adaptive routing); several such links become one ECMP route, spread per flow by the
  kernel's layer-4 hash (``fib_multipath_hash_policy`` 1). With ``routing="single"`` only the first of them (by
  link number) is kept: one path per destination, the models' ``single`` routing.

Source: docs/testbed.md; Linux ip-netns(8), veth(4), tc-netem(8), ip-route(8) (ECMP ``nexthop``); Zhao et al.
(NSDI'25) Sec. 8.1 (their testbed: servers joined by point-to-point links through a patch panel).

>>> from directcoll.topology import parse
>>> p = plan(parse("ring:3"), link_rate=100e6 / 8, prefix="dctb-demo")
>>> len(p.namespaces), len(p.pairs), p.addresses[2]
(3, 3, '10.0.0.3')
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field

import numpy as np

from directcoll.errors import DirectcollError
from directcoll.topology.paths import bfs_distances
from directcoll.topology.routing import route_pattern

#: the most nodes a testbed builds: every node is a namespace and every compute node a rank process (about 80 MiB
#: each, directcoll.runtime.launch.RANK_PROCESS_BYTES), on a machine whose cores also carry every packet
MAX_NODES = 64
#: the Ethernet MTU of every veth (bytes)
MTU = 1500
#: the token bucket's depth (bytes): two full frames, so that a link sends back to back at its rate
BURST = 2 * MTU
#: the rate of the fastest link when none is given: 20 Mb/s in bytes/s; 2 cores carry torus:2x2 at this rate with
#: time to spare, and are the bottleneck at 50 Mb/s (docs/testbed.md, "Choosing rates")
DEFAULT_LINK_RATE = 20e6 / 8
#: the queue of a link end when none is given (bytes): 256 KiB, 105 ms at 20 Mb/s; the queue sweep on torus:2x4
#: (docs/testbed.md, "Queues") found the smallest run-to-run spread there, and TCP losses at 64 KiB
DEFAULT_QUEUE = 256 * 1024
#: names of namespaces start with this, then a run id: what `testbed down --stale` may remove
PREFIX = "dctb-"


@dataclass(frozen=True)
class Pair:
    """One veth pair: ends ``a`` and ``b`` (node ids), their interface names, and per direction the rate
    (bytes/s) and delay (s) shaped on the sending end; ``ab`` / ``ba``: the topology's links the two directions
    carry (parallel links of one direction are one veth direction at their summed rate; empty where a direction
    is not a link of the topology).

    Raises:
        Nothing: a record.

    Source: Linux veth(4) (a pair of connected virtual Ethernet devices); tc-netem(8) (rate, delay, limit).
    """

    a: int
    b: int
    a_name: str
    b_name: str
    ab: tuple[int, ...]
    ba: tuple[int, ...]
    rate_ab: float
    rate_ba: float
    delay_ab: float
    delay_ba: float


@dataclass(frozen=True)
class Plan:
    """The testbed of one topology: namespaces (``namespaces[node]``), addresses, veth pairs, the queue of every
    link end (bytes), the fastest link's rate (bytes/s), and routes: ``routes[node]`` maps a destination node to the
    (next node, interface) of every minimal path's first link.

    Raises:
        Nothing: a record; :func:`plan` builds it.

    Source: docs/testbed.md.
    """

    spec: str
    prefix: str
    num_compute: int
    namespaces: list[str]
    addresses: list[str]
    pairs: list[Pair]
    queue: int
    link_rate: float
    routes: list[dict[int, list[tuple[int, str]]]] = field(repr=False)


def run_name() -> str:
    """A fresh testbed name: :data:`PREFIX`, this process's id and the time in ms modulo 10^5.

    Returns:
        The name, e.g. ``dctb-4242-31415``.

    Raises:
        Nothing: reads the process id and the clock.

    Source: docs/testbed.md, "Removal" (names carry the run).

    >>> run_name().startswith(PREFIX)
    True
    """
    return f"{PREFIX}{os.getpid()}-{int(time.time() * 1000) % 100000}"


def address(node: int) -> str:
    """The IPv4 address of ``node`` on every testbed: 10.0.0.0 + node + 1.

    Parameters
    ----------
    node : int
        The node id, 0 <= node < 2^24 - 2.

    Returns:
        The dotted address.

    Raises:
        Nothing: arithmetic (:func:`plan` bounds the nodes).

    Source: RFC 1918 (10.0.0.0/8, private addresses).

    >>> address(0), address(255)
    ('10.0.0.1', '10.0.1.0')
    """
    k = node + 1
    return f"10.{(k >> 16) & 255}.{(k >> 8) & 255}.{k & 255}"


def plan(topology, *, link_rate: float | None = None, link_delay: float | None = None, queue: int | None = None,
         prefix: str = PREFIX + "0", routing: str | None = None) -> Plan:
    """Plan the emulated testbed of ``topology``.

    Parameters
    ----------
    topology : Topology
        The network; every node (switches too) becomes a namespace, every compute node a rank.
    link_rate : float or None
        Rate of the topology's fastest link, bytes/s (> 0); the others keep their ratio to it. None:
        :data:`DEFAULT_LINK_RATE`.
    link_delay : float or None
        One-way delay added on every link, seconds (>= 0); None or 0: none.
    queue : int or None
        Queue of every link end, bytes (>= the token bucket's :data:`BURST`). None: :data:`DEFAULT_QUEUE`.
    prefix : str
        Start of every namespace's name (``PREFIX`` and a run id); interfaces are named ``l<pair>a`` /
        ``l<pair>b`` inside the namespaces.
    routing : str or None
        ``adaptive`` (None): every minimal path, ECMP per flow; ``single``: one next node per destination, the one the
        node's lowest-numbered link on a minimal path leads to (the models' ``single`` routing,
        :func:`directcoll.topology.routing.single_route`).

    Returns:
        The :class:`Plan`.

    Raises:
        DirectcollError: more than :data:`MAX_NODES` nodes, a rate, delay or queue out of range, another routing.
        ResourceError: the all-pairs distances over the memory budget.

    Source: docs/testbed.md ("Rates", "Routes"); Linux ip-route(8) (multipath routes).

    >>> from directcoll.topology import parse
    >>> p = plan(parse("ring:4"), link_rate=1e6)
    >>> p.routes[0][2]  # two minimal paths from 0 to 2: through 1 and through 3
    [(1, 'l0a'), (3, 'l1a')]
    """
    link_rate = DEFAULT_LINK_RATE if link_rate is None else link_rate
    queue = DEFAULT_QUEUE if queue is None else queue
    routing = routing or "adaptive"
    n = topology.num_nodes
    if n > MAX_NODES:
        raise DirectcollError(f"{topology.spec} has {n} nodes; the testbed emulates at most {MAX_NODES} on one "
                              "machine (a namespace per node, a rank process per compute node)")
    if not (math.isfinite(link_rate) and link_rate > 0):
        raise DirectcollError(f"link rate must be a positive bandwidth, got {link_rate!r} bytes/s")
    if link_delay is not None and not (math.isfinite(link_delay) and 0 <= link_delay <= 10.0):
        raise DirectcollError(f"link delay must lie in [0, 10] s, got {link_delay!r}")
    if routing not in ("adaptive", "single"):
        raise DirectcollError(f"the testbed routes adaptive (ECMP over every minimal path) or single (one minimal "
                              f"path per destination), not {routing!r}")
    if not (isinstance(queue, int | np.integer) and BURST <= queue <= 2**30):
        raise DirectcollError(f"queue must lie in [{BURST}, 2^30] bytes (two frames at least), got {queue!r}")
    bw = np.asarray(topology.link_bandwidth, dtype=float)
    scale = link_rate / bw.max() if len(bw) else 1.0
    src, dst = topology.link_src.tolist(), topology.link_dst.tolist()
    bundles: dict[tuple[int, int], list[int]] = {}  # (u, v) -> the links from u to v
    for e, (u, v) in enumerate(zip(src, dst, strict=True)):
        bundles.setdefault((u, v), []).append(e)
    pairs: list[Pair] = []
    delay = float(link_delay or 0.0)
    for (u, v), links in bundles.items():
        back = bundles.get((v, u), [])
        if back and (v, u) < (u, v):
            continue  # this pair was made from the other direction
        i = len(pairs)
        rate = float(bw[links].sum() * scale)
        pairs.append(Pair(u, v, f"l{i}a", f"l{i}b", tuple(links), tuple(back), rate,
                          float(bw[back].sum() * scale) if back else rate, delay, delay if back else 0.0))
    device = {(p.a, p.b): p.a_name for p in pairs if p.ab} | {(p.b, p.a): p.b_name for p in pairs if p.ba}
    dist = bfs_distances(topology)  # [u, v]: hops from u to v
    routes: list[dict[int, list[tuple[int, str]]]] = []
    for u in range(n):
        table = {}
        for d in range(n):
            if d == u or dist[u, d] <= 0:
                continue
            if routing == "single":  # the models' single route: its first link's next node
                w = int(topology.link_dst[route_pattern(topology, u, d, "single")[0][0]])
                table[d] = [(w, device[(u, w)])]
            else:
                table[d] = [(w, dev) for (x, w), dev in device.items() if x == u and dist[w, d] == dist[u, d] - 1]
        routes.append(table)
    return Plan(topology.spec, prefix, topology.num_compute, [f"{prefix}-n{k}" for k in range(n)],
                [address(k) for k in range(n)], pairs, int(queue), float(link_rate), routes)
