"""Automorphism groups that shrink the all-to-all MCF LP (the ``automorphism`` method of
:mod:`directcoll.synthesis.mcf.link`; Basu et al. Sec. 3.1 averaged over a group G).

For a group G of automorphisms that is not regular on the nodes (generalized Kautz graphs, |G| = 2 gcd(d + 1,
N), :func:`directcoll.topology.families.kautz_digraphs.automorphisms`), averaging an optimal flow over G gives an
optimal flow with x_{g s} = g x_s, so only one source per node orbit keeps variables, and the load of a link orbit O is
``sum_r |orbit(r)| / |O| * sum_{e in O} x_r(e)``, one capacity row per link orbit. The reduced solution,
averaged over each representative's stabilizer and moved by G, is a feasible link-LP solution of the same F.

Source: docs/alltoall.md, "Methods" (``automorphism``), the reduction DESIGN.md, "Engines, runtimes and scale" asks
for ("Symmetry ... is the first tool before any scale-out"); the group of Pi_{d,N} is Zhao et al. (NSDI'25) Def. 16's
graph's, via :func:`directcoll.topology.families.kautz_digraphs.pi_automorphisms`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from directcoll.errors import DirectcollError
from directcoll.lp import LinearProgram
from directcoll.synthesis.mcf.formulations import FLOW_EPS, flow_lp
from directcoll.synthesis.mcf.network import FlowNetwork
from directcoll.topology.model import Topology


@dataclass(frozen=True)
class Orbits:
    """A node automorphism group G acting on a flow network (see the module docstring).

    Attributes:
        nodes: int64 (|G|, V) node permutations of the flow network (NIC nodes move with their host), identity
            first.
        links: int64 (|G|, E): the link each link is moved to by each element.
        reps: int64 (R,) one compute node per node orbit (the smallest), sorted.
        orbit_size: int64 (R,) |orbit(rep)|, adding up to N.
        link_orbit: int64 (E,) the index of every link's orbit.
        link_orbit_size: int64 (K,) |link orbit|.

    Raises:
        Nothing: a frozen record built by :func:`automorphism_orbits`.

    Source: docs/alltoall.md, "Methods" (``automorphism``).

    >>> from directcoll.topology import parse
    >>> from directcoll.synthesis.mcf.network import flow_network
    >>> topo = parse("genkautz:2:10")
    >>> o = automorphism_orbits(flow_network(topo), topo)
    >>> o.nodes.shape, o.reps.tolist(), o.orbit_size.tolist()
    ((2, 10), [0, 1, 2, 3, 4], [2, 2, 2, 2, 2])
    """

    nodes: np.ndarray  # (G, V) node permutations, identity first
    links: np.ndarray  # (G, E) the link each link is moved to
    reps: np.ndarray  # (R,) one compute node per node orbit
    orbit_size: np.ndarray  # (R,) |orbit(rep)|
    link_orbit: np.ndarray  # (E,) index of the link's orbit
    link_orbit_size: np.ndarray  # (K,) |link orbit|


def automorphism_orbits(net: FlowNetwork, topology: Topology) -> Orbits | None:
    """The known automorphism group of ``topology`` acting on ``net``, or None (no group, switches, parallel
    links).

    Args:
        net: the flow network of ``topology`` (host links allowed: NIC nodes move with their host).
        topology: the topology (its kind and parameters select the group).

    Returns:
        :class:`Orbits`, or None where no group of order > 1 is known or the network has switches or parallel
        links.

    Raises:
        DirectcollError: a listed automorphism does not map the network onto itself (or changes a capacity).

    Source: docs/alltoall.md, "Methods" (``automorphism``: generalized Kautz and Kautz graphs, |G| =
    2 gcd(d + 1, N)); the group: :func:`directcoll.topology.families.kautz_digraphs.automorphisms`.

    >>> from directcoll.topology import parse
    >>> from directcoll.synthesis.mcf.network import flow_network
    >>> topo = parse("genkautz:4:20")
    >>> len(automorphism_orbits(flow_network(topo), topo).nodes)
    10
    >>> automorphism_orbits(flow_network(parse("ring:4")), parse("ring:4")) is None
    True
    """
    from directcoll.topology.families.kautz_digraphs import automorphisms

    perms = automorphisms(topology)
    n, v = topology.num_compute, topology.num_nodes
    if perms is None or len(perms) < 2 or v != n:
        return None
    extra = net.num_nodes - v  # NIC nodes V + u (and V + N + u) move with their host
    nodes = np.concatenate([perms] + [perms + v + k * n for k in range(extra // n)], axis=1)
    key = net.link_src * net.num_nodes + net.link_dst
    order = np.argsort(key)
    if np.any(key[order][1:] == key[order][:-1]):
        return None
    moved = nodes[:, net.link_src] * net.num_nodes + nodes[:, net.link_dst]
    pos = np.minimum(np.searchsorted(key, moved, sorter=order), len(key) - 1)
    links = order[pos]
    if np.any(key[links] != moved) or np.any(net.capacity[links] != net.capacity):
        raise DirectcollError(f"{topology.spec}: a listed automorphism does not map the network onto itself")
    node_rep = nodes[:, :n].min(axis=0)
    reps = np.unique(node_rep)
    _, link_orbit, link_orbit_size = np.unique(links.min(axis=0), return_inverse=True, return_counts=True)
    return Orbits(nodes, links, reps, np.bincount(node_rep, minlength=n)[reps], link_orbit, link_orbit_size)


def automorphism_lp(net: FlowNetwork, orbits: Orbits) -> LinearProgram:
    """Flows of the representative sources with one capacity row per link orbit (the source LP otherwise).

    Columns ``x[i, j]`` at ``i * E + j`` for representative i, then F; rows: K orbit capacity rows, then the
    conservation rows of :func:`~directcoll.synthesis.mcf.formulations.flow_lp`. The row of link orbit O is
    ``sum_r |orbit(r)| / |O| * sum_{e in O} x_r(e) <= cap(O)``.

    Returns:
        :class:`~directcoll.lp.LinearProgram` with R E + 1 columns and K + R (V - 1) rows (capacity units).

    Raises:
        ResourceError: the LP would exceed the memory budget (:func:`~directcoll.synthesis.mcf.formulations.
            check_flow_lp`).

    Source: Basu et al. (HPDC'24) eq. (6)-(9) reduced by the averaging argument of docs/alltoall.md, "Methods"
    (``automorphism``).

    >>> from directcoll.topology import parse
    >>> from directcoll.synthesis.mcf.network import flow_network
    >>> from directcoll.synthesis.mcf.formulations import solve_lp
    >>> topo = parse("genkautz:2:10")
    >>> net = flow_network(topo)
    >>> lp = automorphism_lp(net, automorphism_orbits(net, topo))
    >>> lp.a.shape, round(-solve_lp(lp, "simplex", None)[1] * 27, 9)  # F = 2/27, as the link LP
    ((54, 91), 2.0)
    """
    n, e = net.num_compute, net.num_links
    r = len(orbits.reps)
    t = np.tile(np.arange(n), r)
    s = np.repeat(orbits.reps, n)
    off = s != t
    lp = flow_lp(net.num_nodes, net.link_src, net.link_dst, net.capacity, orbits.reps,
                  np.repeat(np.arange(r), n)[off], t[off])
    rep_of, link_of = np.divmod(np.arange(r * e), e)
    k = len(orbits.link_orbit_size)
    rows = orbits.link_orbit[link_of]
    cap_rows = sp.csc_matrix((orbits.orbit_size[rep_of] / orbits.link_orbit_size[rows], (rows, np.arange(r * e))),
                             shape=(k, r * e + 1))
    orbit_cap = np.zeros(k)
    orbit_cap[orbits.link_orbit] = net.capacity
    a = sp.vstack([cap_rows, lp.a[e:]], format="csc")
    return LinearProgram(a, lp.cost, lp.col_lower, lp.col_upper, np.r_[np.full(k, -np.inf), lp.row_lower[e:]],
                         np.r_[orbit_cap, lp.row_upper[e:]])


def orbit_flows(orbits: Orbits, x: np.ndarray, num_compute: int, num_links: int):
    """Every source's flow from the representatives': each averaged over its stabilizer, then moved by G.

    Args:
        orbits: the group (:class:`Orbits`).
        x: float64 solution of :func:`automorphism_lp` (its first R E columns are the representatives' flows).
        num_compute: N; num_links: E.

    Returns:
        (source, link, value): int64, int64, float64 (K,), per-source flows above
        :data:`~directcoll.synthesis.mcf.formulations.FLOW_EPS`, in the LP's capacity units.

    Raises:
        Nothing: numpy arithmetic on a solution of :func:`automorphism_lp`.

    Source: docs/alltoall.md, "Methods" (``automorphism``: "each x_r, averaged over its stabilizer and moved by G,
    gives a feasible link-LP solution with the same F").
    """
    r, e = len(orbits.reps), num_links
    x = x[: r * e].reshape(r, e)
    flows = np.zeros((num_compute, e))
    for g_nodes, g_links in zip(orbits.nodes, orbits.links, strict=True):
        # g x_r puts x_r(l) on link g(l); summed over G, source s = g(r) gets |Stab(r)| copies
        flows[g_nodes[orbits.reps][:, None], g_links[None, :]] += x
    rep_index = np.searchsorted(orbits.reps, orbits.nodes[:, :num_compute].min(axis=0))  # reps are sorted
    flows /= (len(orbits.nodes) // orbits.orbit_size)[rep_index][:, None]
    src, link = np.nonzero(flows > FLOW_EPS)
    return src.astype(np.int64), link.astype(np.int64), flows[src, link]


def move_children(orbits: Orbits, src, dst, link, val):
    """Per-(s, d) flows of every source from its representative's: x_{g r, g d} = g x_{r, d} for one g per
    source (the representative's flow is stabilizer-averaged, so every such g gives the same per-source flow and
    a valid split of it into destinations).

    Args:
        orbits: the group (:class:`Orbits`).
        src, dst, link, val: the representatives' per-(s, d) flows, columnar (K,) arrays (child LPs).

    Returns:
        (source, dest, link, value): int64, int64, int64, float64 (K',) per-(s, d) flows of every source.

    Raises:
        Nothing: relabels the children's flows by the group's permutations.

    Source: Basu et al. (HPDC'24) Sec. 3.1.2, eq. (10)-(14) (the child LPs' per-commodity flows), moved by G as
    in docs/alltoall.md, "Methods" (``decomposed`` with the automorphism master).
    """
    first = {}
    for gi, g in enumerate(orbits.nodes):
        for r in orbits.reps:
            first.setdefault(int(g[r]), (gi, int(r)))
    out = [[], [], [], []]
    rep_rows = {int(r): np.flatnonzero(src == r) for r in orbits.reps}
    for s_new, (gi, r) in sorted(first.items()):
        rows = rep_rows[r]
        g_nodes, g_links = orbits.nodes[gi], orbits.links[gi]
        out[0].append(np.full(len(rows), s_new, dtype=np.int64))
        out[1].append(g_nodes[dst[rows]])
        out[2].append(g_links[link[rows]])
        out[3].append(val[rows])
    return tuple(np.concatenate(c) for c in out)

