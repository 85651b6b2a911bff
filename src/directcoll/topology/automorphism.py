"""Automorphism groups of any topology, from BLISS (Junttila & Kaski) through python-igraph, for work that repeats
under them: one LP source per node orbit (:mod:`directcoll.synthesis.mcf.symmetry`), and any other computation
that can be done once per orbit and moved to the other members.

An automorphism of a :class:`~directcoll.topology.model.Topology` is a permutation g of its nodes that maps compute
nodes to compute nodes and switches to switches, and maps the links u -> v onto the links g(u) -> g(v) with the
same bandwidths and latencies. Parallel links are collapsed into one edge per (u, v) for BLISS (which takes simple
graphs); the edge keeps the sorted tuple of its links' (bandwidth, latency) as its colour, so only capacity- and
latency-preserving maps count; where edges have more than one colour, every edge is subdivided by a vertex of its
colour (BLISS colours vertices only). Links then move by matching their ends and their place among equally
coloured parallel links.

The group is kept as generators (BLISS's, a few), never enumerated: orbits come from a union-find over the
generators, :meth:`AutomorphismGroup.transversal` gives a word in the generators mapping an orbit's representative
onto each member (a Schreier vector, found by breadth-first search, so words are shortest), and the stabilizer of a
node is BLISS run again with that node coloured apart. That scales to groups of any order (hypercube:10 has
3.7 x 10^9 elements) at the cost of one BLISS call per stabilizer.

Source: docs/architecture.md, "Engines, runtimes and scale" (symmetry first: automorphism groups from a
well-kept library, before any scale-out); T. Junttila, P. Kaski, "Engineering an efficient canonical labeling tool
for large and sparse graphs" (ALENEX 2007), via igraph's ``Graph.automorphism_group``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from directcoll.errors import DirectcollError
from directcoll.topology.model import Topology


def orbit_labels(num: int, perms) -> np.ndarray:
    """Orbit label (the smallest member) of every point 0..num-1 under the permutations ``perms``.

    Args:
        num: the number of points; perms: int (k, num) permutations (k may be 0).

    Returns:
        int64 (num,): the smallest point of every point's orbit.

    Raises:
        Nothing: a union-find (connected components) over the permutations' cycles.

    Source: this module's docstring (orbits from generators).

    >>> orbit_labels(4, [[1, 0, 2, 3]]).tolist()
    [0, 0, 2, 3]
    """
    perms = np.asarray(perms, dtype=np.int64).reshape(-1, num)
    if len(perms) == 0:
        return np.arange(num, dtype=np.int64)
    src = np.tile(np.arange(num), len(perms))
    graph = coo_matrix((np.ones(src.size), (src, perms.ravel())), shape=(num, num))
    _, label = connected_components(graph, directed=False)
    smallest = np.full(label.max() + 1, num, dtype=np.int64)
    np.minimum.at(smallest, label, np.arange(num))
    return smallest[label]


def permute_links(link_src, link_dst, link_key, node_perms) -> np.ndarray:
    """The link permutations induced by node permutations: link u -> v goes to the link g(u) -> g(v) with the
    same place among the parallel links of equal ``link_key``.

    Args:
        link_src, link_dst: int (L,) link ends.
        link_key: int (L,) a colour per link (e.g. a capacity class); parallel links are matched in order of it.
        node_perms: int (k, V) node permutations.

    Returns:
        int64 (k, L): the image of every link under every permutation.

    Raises:
        DirectcollError: a permutation does not map the links onto links of the same colour (not an
            automorphism).

    Source: this module's docstring (parallel links matched by colour and place).

    >>> permute_links([0, 1, 2], [1, 2, 0], [0, 0, 0], np.array([[1, 2, 0]])).tolist()  # a 3-cycle rotated
    [[1, 2, 0]]
    """
    src, dst = np.asarray(link_src, dtype=np.int64), np.asarray(link_dst, dtype=np.int64)
    key = np.asarray(link_key, dtype=np.int64)
    perms = np.atleast_2d(np.asarray(node_perms, dtype=np.int64))
    v = int(max(perms.shape[1], src.max(initial=-1) + 1, dst.max(initial=-1) + 1))
    nk = int(key.max(initial=0)) + 1
    full = (src * v + dst) * nk + key
    order = np.argsort(full, kind="stable")
    sorted_full = full[order]
    first = np.searchsorted(sorted_full, sorted_full)
    rank = np.empty(len(full), dtype=np.int64)
    rank[order] = np.arange(len(full)) - first  # place among the parallel links of equal colour
    out = np.empty((len(perms), len(full)), dtype=np.int64)
    for i, g in enumerate(perms):
        want = (g[src] * v + g[dst]) * nk + key
        pos = np.searchsorted(sorted_full, want) + rank
        ok = pos < len(full)
        if not ok.all() or np.any(sorted_full[pos] != want):
            raise DirectcollError("a node permutation does not map the links onto links of the same colour")
        out[i] = order[pos]
    return out


@dataclass(frozen=True, eq=False)
class AutomorphismGroup:
    """A group of automorphisms of a topology, kept as generators (see the module docstring).

    Attributes:
        generators: int64 (k, V) node permutations (k may be 0: the trivial group).
        link_generators: int64 (k, L) the link permutations they induce.
        order: |G|, from BLISS (an int; may be very large).
        fixed: the nodes every element fixes by construction (the stabilizer's points), sorted.

    Raises:
        Nothing: a frozen record built by :func:`automorphism_group`.

    Source: this module's docstring.

    >>> from directcoll.topology import parse
    >>> g = automorphism_group(parse("torus:4x4"))
    >>> g.order, g.num_node_orbits, g.num_link_orbits
    (384, 1, 1)
    """

    generators: np.ndarray
    link_generators: np.ndarray
    order: int
    fixed: tuple = ()
    _num_nodes: int = field(default=0, repr=False)

    @cached_property
    def node_orbit(self) -> np.ndarray:
        """int64 (V,): every node's orbit, labelled by its smallest member. Raises: Nothing. Source: this
        module's docstring (union-find over the generators)."""
        return orbit_labels(self._num_nodes, self.generators)

    @cached_property
    def link_orbit(self) -> np.ndarray:
        """int64 (L,): every link's orbit, labelled by its smallest member. Raises: Nothing. Source: this
        module's docstring."""
        return orbit_labels(self.link_generators.shape[1], self.link_generators)

    @property
    def num_node_orbits(self) -> int:
        """Number of node orbits (switches included). Raises: Nothing. Source: this module's docstring."""
        return len(np.unique(self.node_orbit))

    @property
    def num_link_orbits(self) -> int:
        """Number of link orbits. Raises: Nothing. Source: this module's docstring."""
        return len(np.unique(self.link_orbit))

    def transversal(self, root: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """A Schreier vector of ``root``'s orbit: breadth-first over the generators from ``root``.

        Returns:
            (nodes, parent, generator): int64 (|orbit|,) each, in breadth-first order (``root`` first, with
            parent -1): node = generators[generator][parent], so the word read back to the root maps ``root``
            onto the node.

        Raises:
            Nothing: ``root`` out of range is the caller's bug (IndexError).

        Source: Schreier vectors (Sims, "Computation with permutation groups", 1971); this module's docstring.

        >>> from directcoll.topology import parse
        >>> nodes, parent, gen = automorphism_group(parse("ring:4")).transversal(0)
        >>> sorted(nodes.tolist()), int(parent[0])
        ([0, 1, 2, 3], -1)
        """
        seen = {int(root): 0}
        nodes, parent, gen = [int(root)], [-1], [-1]
        head = 0
        while head < len(nodes):
            u = nodes[head]
            for i, g in enumerate(self.generators):
                w = int(g[u])
                if w not in seen:
                    seen[w] = len(nodes)
                    nodes.append(w)
                    parent.append(u)
                    gen.append(i)
            head += 1
        return np.array(nodes, dtype=np.int64), np.array(parent, dtype=np.int64), np.array(gen, dtype=np.int64)

    def words(self, root: int) -> dict[int, list[int]]:
        """For every node of ``root``'s orbit, the generator indices whose product (applied first to last)
        maps ``root`` onto it (shortest words; ``root`` gets []).

        Raises:
            Nothing: see :meth:`transversal`.

        Source: this module's docstring (Schreier vector).

        >>> from directcoll.topology import parse
        >>> w = automorphism_group(parse("ring:4")).words(0)
        >>> w[0], len(w)
        ([], 4)
        """
        nodes, parent, gen = self.transversal(root)
        out: dict[int, list[int]] = {int(root): []}
        for u, p, g in zip(nodes[1:].tolist(), parent[1:].tolist(), gen[1:].tolist(), strict=True):
            out[u] = out[p] + [g]
        return out


def _colours(topology: Topology) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Collapsed (u, v) edges of the topology, each with a colour id for its parallel links' (bandwidth,
    latency) multiset, and every link's own colour id (its (bandwidth, latency) class)."""
    src, dst = topology.link_src.astype(np.int64), topology.link_dst.astype(np.int64)
    _, link_class = np.unique(np.stack([topology.link_bandwidth, topology.link_latency]), axis=1,
                              return_inverse=True)
    link_class = link_class.ravel().astype(np.int64)
    v = topology.num_nodes
    pair = src * v + dst
    order = np.lexsort((link_class, pair))
    pairs, start = np.unique(pair[order], return_index=True)
    bounds = np.r_[start, len(order)]
    signature = [tuple(link_class[order[a:b]].tolist()) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    ids: dict = {}
    edge_colour = np.array([ids.setdefault(s, len(ids)) for s in signature], dtype=np.int64)
    return pairs // v, pairs % v, edge_colour, link_class


def automorphism_group(topology: Topology, *, fix=()) -> AutomorphismGroup:
    """The automorphism group of ``topology`` (or the stabilizer of the nodes ``fix``), by BLISS.

    Args:
        topology: any topology (switches, parallel links, mixed bandwidths and latencies allowed).
        fix: node ids every element must fix (each gets a colour of its own): the pointwise stabilizer.

    Returns:
        :class:`AutomorphismGroup` with BLISS's generators (checked to be automorphisms) and its order.

    Raises:
        DirectcollError: a generator BLISS returns is not an automorphism (a library bug; never seen).

    Source: this module's docstring; BLISS via igraph ``Graph.automorphism_group`` / ``count_automorphisms``.

    >>> from directcoll.topology import parse
    >>> automorphism_group(parse("genkautz:4:20")).order, automorphism_group(parse("jellyfish:50:4")).order
    (120, 1)
    >>> automorphism_group(parse("torus:4x4"), fix=[0]).order  # 384 / 16
    24
    """
    import igraph

    v = topology.num_nodes
    u, w, edge_colour, link_class = _colours(topology)
    colour = np.zeros(v, dtype=np.int64)
    colour[topology.num_compute:] = 1  # switches never swap with compute nodes
    fix = sorted({int(x) for x in fix})
    colour[fix] = 2 + np.arange(len(fix))
    base = 2 + len(fix)
    if len(np.unique(edge_colour)) > 1:  # subdivide every edge by a vertex of its colour
        mid = v + np.arange(len(u))
        edges = np.r_[np.c_[u, mid], np.c_[mid, w]]
        colour = np.r_[colour, base + edge_colour]
        num = v + len(u)
    else:
        edges, num = np.c_[u, w], v
    graph = igraph.Graph(n=num, edges=edges.tolist(), directed=True)
    col = colour.tolist()
    gens = np.array(graph.automorphism_group(color=col), dtype=np.int64).reshape(-1, num)[:, :v]
    order = int(graph.count_automorphisms(color=col))
    gens = gens[np.any(gens != np.arange(v), axis=1)]
    try:
        links = permute_links(topology.link_src, topology.link_dst, link_class, gens)
    except DirectcollError as err:
        raise DirectcollError(f"{topology.spec}: BLISS returned a map that is not an automorphism ({err})") from None
    return AutomorphismGroup(gens, links, order, tuple(fix), v)
