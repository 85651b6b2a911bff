"""Automorphism groups that shrink the all-to-all MCF LP (the ``automorphism`` method of
:mod:`directcoll.synthesis.mcf.link`; Basu et al. Sec. 3.1 averaged over a group G).

G is the topology's full automorphism group from BLISS (:func:`directcoll.topology.automorphism.automorphism_group`:
generators only, any family), lifted to the flow network (NIC nodes move with their host). Averaging an optimal flow
over G gives an optimal flow with x_{g s} = g x_s, so only one source r per node orbit keeps variables, and the load
of a G-link orbit O is ``sum_r |orbit(r)| / |O| * sum_{e in O} x_r(e)``, one capacity row per link orbit. Averaging
further over the stabilizer Stab(r) (which fixes r, so it maps r's flows to r's flows) makes x_r constant on every
Stab(r)-orbit of links: one column per Stab(r)-link orbit P, and, since such a flow conserves at u exactly when it
conserves at k u (k in Stab(r)), one conservation row per Stab(r)-node orbit. The stabilizer is BLISS run again with
r coloured apart. On a vertex-transitive graph this is ONE source with E / |Stab| columns (torus:4x4: 64 links,
|Stab| = 24, 4 columns).

Conversely a solution x_r (Stab(r)-invariant by construction) moved by any g with g r = s gives source s's flow;
the result does not depend on the choice of g (two choices differ by an element of Stab(r)), and the load of every
link of O is the orbit average above, so the link LP's optimum equals the reduced LP's. The g per source is a word
in the generators from a Schreier vector (:meth:`AutomorphismGroup.transversal`): the group is never enumerated,
which is what makes groups of any order usable (hypercube:10: 3.7e9 elements, 10 generators).

Source: docs/alltoall.md, "Methods" (``automorphism``: one source per orbit); docs/architecture.md, "Engines, runtimes
and scale" (symmetry first, before any scale-out).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from directcoll.lp import LinearProgram
from directcoll.synthesis.mcf.formulations import FLOW_EPS, check_flow_lp
from directcoll.synthesis.mcf.network import FlowNetwork
from directcoll.topology.automorphism import AutomorphismGroup, automorphism_group, orbit_labels, permute_links
from directcoll.topology.model import Topology


@dataclass(frozen=True, eq=False)
class Orbits:
    """A node automorphism group G acting on a flow network (see the module docstring).

    Attributes:
        order: |G|.
        nodes: int64 (k, V) generators of G on the flow network's nodes (NIC nodes move with their host).
        links: int64 (k, E) the link each link is moved to by each generator.
        reps: int64 (R,) one compute node per node orbit (the smallest), sorted.
        orbit_size: int64 (R,) |orbit(rep)|, adding up to N.
        link_orbit: int64 (E,) the index of every link's G-orbit.
        link_orbit_size: int64 (K,) |link orbit|.
        stab_link: list of R int64 (E,) arrays: every link's Stab(rep)-orbit, numbered 0..P_r-1.
        stab_node: list of R int64 (V,) arrays: every node's Stab(rep)-orbit label (its smallest member).
        transversals: list of R (nodes, parent, generator) Schreier vectors of the reps' orbits.

    Raises:
        Nothing: a frozen record built by :func:`automorphism_orbits`.

    Source: docs/alltoall.md, "Methods" (``automorphism``).

    >>> from directcoll.topology import parse
    >>> from directcoll.synthesis.mcf.network import flow_network
    >>> topo = parse("genkautz:2:10")
    >>> o = automorphism_orbits(flow_network(topo), topo)
    >>> o.order, o.reps.tolist(), o.orbit_size.tolist()
    (2, [0, 1, 2, 3, 4], [2, 2, 2, 2, 2])
    """

    order: int
    nodes: np.ndarray
    links: np.ndarray
    reps: np.ndarray
    orbit_size: np.ndarray
    link_orbit: np.ndarray
    link_orbit_size: np.ndarray
    stab_link: list
    stab_node: list
    transversals: list

    @property
    def num_columns(self) -> int:
        """Flow columns of the reduced LP (sum over reps of Stab(rep)-link orbits). Raises: Nothing. Source:
        the module docstring."""
        return int(sum(int(p.max()) + 1 for p in self.stab_link))


def _lift(net: FlowNetwork, topology: Topology, group: AutomorphismGroup) -> tuple[np.ndarray, np.ndarray]:
    """The group's generators on the flow network's nodes and links."""
    n, v = topology.num_compute, topology.num_nodes
    perms = group.generators
    extra = (net.num_nodes - v) // n  # NIC nodes V + k N + u move with their host u
    nodes = np.concatenate([perms] + [perms[:, :n] + v + k * n for k in range(extra)], axis=1)
    _, cap_class = np.unique(net.capacity, return_inverse=True)
    links = permute_links(net.link_src, net.link_dst, cap_class.ravel(), nodes) if len(nodes) else \
        np.zeros((0, net.num_links), dtype=np.int64)
    return nodes.reshape(-1, net.num_nodes), links


def automorphism_orbits(net: FlowNetwork, topology: Topology, group: AutomorphismGroup | None = None) -> Orbits:
    """The automorphism group of ``topology`` (BLISS) acting on ``net``, with the stabilizer of every
    representative source.

    Args:
        net: the flow network of ``topology`` (host links allowed: NIC nodes move with their host).
        topology: the topology.
        group: its automorphism group, if already computed (:func:`~directcoll.topology.automorphism.
            automorphism_group`).

    Returns:
        :class:`Orbits` (the trivial group gives N representatives, each with trivial stabilizer).

    Raises:
        DirectcollError: a generator does not map the flow network onto itself (capacities included).

    Source: docs/alltoall.md, "Methods" (``automorphism``: one source per orbit); the group: BLISS via
    :func:`directcoll.topology.automorphism.automorphism_group`.

    >>> from directcoll.topology import parse
    >>> from directcoll.synthesis.mcf.network import flow_network
    >>> topo = parse("genkautz:4:20")
    >>> o = automorphism_orbits(flow_network(topo), topo)
    >>> o.order, o.reps.tolist(), o.num_columns  # 120 automorphisms, one orbit: 80 links in 20 columns
    (120, [0], 20)
    """
    n = topology.num_compute
    group = automorphism_group(topology) if group is None else group
    nodes, links = _lift(net, topology, group)
    node_label = group.node_orbit[:n]
    reps = np.unique(node_label)
    link_label = orbit_labels(net.num_links, links)
    _, link_orbit, link_orbit_size = np.unique(link_label, return_inverse=True, return_counts=True)
    stab_link, stab_node, transversals = [], [], []
    for r in reps.tolist():
        stab = automorphism_group(topology, fix=[r]) if group.order > 1 else group
        s_nodes, s_links = _lift(net, topology, stab)
        stab_link.append(np.unique(orbit_labels(net.num_links, s_links), return_inverse=True)[1].ravel())
        stab_node.append(orbit_labels(net.num_nodes, s_nodes))
        transversals.append(group.transversal(r))
    return Orbits(group.order, nodes, links, reps, np.bincount(node_label, minlength=n)[reps], link_orbit.ravel(),
                  link_orbit_size, stab_link, stab_node, transversals)


def automorphism_lp(net: FlowNetwork, orbits: Orbits) -> LinearProgram:
    """The reduced LP: one Stab(r)-invariant flow per representative r, one capacity row per G-link orbit.

    Columns: for every representative r (in order), one per Stab(r)-link orbit P (its flow on each link of P), then
    F. Rows: K capacity rows, ``sum_r |orbit(r)| / |O| * sum_{e in O} x_r(e) <= cap(O)``; then, per representative,
    one conservation row ``out - in + F [u is a compute node] = 0`` at the smallest node u of every
    Stab(r)-node orbit other than {r}. Flow into r is fixed to 0.

    Returns:
        :class:`~directcoll.lp.LinearProgram` with :attr:`Orbits.num_columns` + 1 columns (capacity units).

    Raises:
        ResourceError: the LP would exceed the memory budget (:func:`~directcoll.synthesis.mcf.formulations.
            check_flow_lp`).

    Source: Basu et al. (HPDC'24) eq. (6)-(9) reduced by the averaging argument of this module's docstring
    (docs/alltoall.md, "Methods", ``automorphism``).

    >>> from directcoll.topology import parse
    >>> from directcoll.synthesis.mcf.network import flow_network
    >>> from directcoll.synthesis.mcf.formulations import solve_lp
    >>> topo = parse("genkautz:2:10")
    >>> net = flow_network(topo)
    >>> lp = automorphism_lp(net, automorphism_orbits(net, topo))
    >>> lp.a.shape, round(-solve_lp(lp, "simplex", None)[1] * 27, 9)  # F = 2/27, as the link LP
    ((54, 91), 2.0)
    """
    e, n = net.num_links, net.num_compute
    check_flow_lp(len(orbits.reps), e, n * len(orbits.reps))
    k = len(orbits.link_orbit_size)
    rows, cols, vals, upper = [], [], [], []
    offset, row0 = 0, k
    links = np.arange(e)
    for i, r in enumerate(orbits.reps.tolist()):
        col = offset + orbits.stab_link[i]
        p = int(orbits.stab_link[i].max()) + 1
        o = orbits.link_orbit
        rows.append(o)
        cols.append(col)
        vals.append(orbits.orbit_size[i] / orbits.link_orbit_size[o])
        label = orbits.stab_node[i]
        keep = np.unique(label[label != r])  # the smallest node of every Stab(r)-node orbit but {r}
        row_of = np.full(net.num_nodes, -1, dtype=np.int64)
        row_of[keep] = row0 + np.arange(len(keep))
        out, into = row_of[net.link_src] >= 0, row_of[net.link_dst] >= 0
        out &= net.link_src == label[net.link_src]
        into &= net.link_dst == label[net.link_dst]
        rows += [row_of[net.link_src[out]], row_of[net.link_dst[into]]]
        cols += [col[out], col[into]]
        vals += [np.ones(out.sum()), -np.ones(into.sum())]
        sinks = keep[keep < n]
        rows.append(row_of[sinks])
        cols.append(np.full(len(sinks), -1))  # F, placed below
        vals.append(np.ones(len(sinks)))
        up = np.full(p, np.inf)
        up[orbits.stab_link[i][links[net.link_dst == r]]] = 0.0
        upper.append(up)
        offset += p
        row0 += len(keep)
    ncol = offset + 1
    cols = [np.where(c < 0, offset, c) for c in cols]
    a = sp.csc_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(row0, ncol))
    orbit_cap = np.zeros(k)
    orbit_cap[orbits.link_orbit] = net.capacity
    cons = row0 - k
    return LinearProgram(a, np.r_[np.zeros(offset), -1.0], np.zeros(ncol), np.r_[np.concatenate(upper), np.inf],
                         np.r_[np.full(k, -np.inf), np.zeros(cons)], np.r_[orbit_cap, np.zeros(cons)])


def rep_flows(orbits: Orbits, x: np.ndarray) -> list[np.ndarray]:
    """Every representative's flow on every link, float64 (E,) each, from a solution of :func:`automorphism_lp`.
    Raises: Nothing. Source: the module docstring (x_r constant on Stab(r)-link orbits)."""
    out, offset = [], 0
    for p in orbits.stab_link:
        out.append(x[offset + p])
        offset += int(p.max()) + 1
    return out


def _moved(orbits: Orbits, i: int, node_ids: np.ndarray, link_ids: np.ndarray):
    """(s, moved nodes, moved links) for every s in representative i's orbit, breadth-first along its Schreier
    vector: each member's images are its parent's moved by one generator."""
    nodes, parent, gen = orbits.transversals[i]
    images = {int(nodes[0]): (node_ids, link_ids)}
    yield int(nodes[0]), node_ids, link_ids
    for s, p, g in zip(nodes[1:].tolist(), parent[1:].tolist(), gen[1:].tolist(), strict=True):
        pn, pl = images[p]
        moved = (orbits.nodes[g][pn], orbits.links[g][pl])
        images[s] = moved
        yield s, moved[0], moved[1]


def orbit_flows(orbits: Orbits, x: np.ndarray, num_compute: int, num_links: int):
    """Every source's flow from the representatives': x_{g r} = g x_r.

    Args:
        orbits: the group (:class:`Orbits`).
        x: float64 solution of :func:`automorphism_lp`.
        num_compute: N; num_links: E.

    Returns:
        (source, link, value): int64, int64, float64 (K,), per-source flows above
        :data:`~directcoll.synthesis.mcf.formulations.FLOW_EPS`, in the LP's capacity units.

    Raises:
        Nothing: numpy arithmetic on a solution of :func:`automorphism_lp`.

    Source: docs/alltoall.md, "Methods" (``automorphism``: "x_r moved by G gives a feasible link-LP solution with
    the same F").
    """
    out = [[], [], []]
    empty = np.zeros(0, dtype=np.int64)
    for i, flow in enumerate(rep_flows(orbits, x)):
        keep = np.flatnonzero(flow > FLOW_EPS)
        for s, _, moved in _moved(orbits, i, empty, keep):
            out[0].append(np.full(len(keep), s, dtype=np.int64))
            out[1].append(moved)
            out[2].append(flow[keep])
    src, link, val = (np.concatenate(c) for c in out)
    order = np.lexsort((link, src))
    return src[order], link[order], val[order]


def move_children(orbits: Orbits, src, dst, link, val):
    """Per-(s, d) flows of every source from its representative's: x_{g r, g d} = g x_{r, d} for the g the
    Schreier vector gives (the representative's flow is Stab(r)-invariant, so every such g gives the same
    per-source flow and a valid split of it into destinations).

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
    out = [[], [], [], []]
    for i, r in enumerate(orbits.reps.tolist()):
        rows = np.flatnonzero(src == r)
        for s, moved_dst, moved_link in _moved(orbits, i, dst[rows], link[rows]):
            out[0].append(np.full(len(rows), s, dtype=np.int64))
            out[1].append(moved_dst)
            out[2].append(moved_link)
            out[3].append(val[rows])
    return tuple(np.concatenate(c) for c in out)
