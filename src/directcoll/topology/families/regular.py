"""Highly regular families: the complete graph, complete bipartite graphs, Hamming graphs and the distance-regular
graphs of Zhao et al. Table 8 and App. F.3 (Odd graphs, the Petersen graph and its line graph).

Every one is undirected (both directions of every cable) and distance-regular (Def. 17), which gives it a
BW-optimal BFB schedule (Zhao et al. App. F.3); :func:`directcoll.topology.metrics.intersection_array` checks
that property of any topology. The complete graph, K_{n,n}, K_{n,n} minus a matching and the Hamming graphs are
Cayley graphs of abelian groups (``port_offsets`` kept).
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np

from directcoll.topology.families.base import cayley, check_shape, need_int, sized, undirected
from directcoll.topology.model import DEFAULT_LINK_BANDWIDTH, DEFAULT_LINK_LATENCY, Topology
from directcoll.topology.sizes import (
    BYTES_PER_PYTHON_EDGE,
    BYTES_PER_PYTHON_NODE,
    Size,
    as_float,
    capped_pow,
    cayley_size,
    graph_size,
)

__all__ = ["bipartite", "bipartite_minus_matching", "complete", "hamming", "linegraph_petersen", "odd_graph",
           "petersen"]


@sized(lambda n: cayley_size(n, max(n - 1, 0), 1))
def complete(n: int, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
             link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Complete graph K_n (fully connected): every node linked to every other (n - 1 ports).

    The "peer-to-peer network with full-duplex channels" of Kolmakov & Zhang Sec. 2, where no communication
    pattern conflicts; distance-regular with intersection array {n-1; 1}. Cayley graph of Z_n: port k - 1 of
    node i goes to i + k (mod n).

    Parameters
    ----------
    n : int
        The number of nodes (>= 2).
    link_bandwidth : float, default 5e10
        Every directed link's bandwidth in bytes/s (400 Gb/s).
    link_latency : float, default 1e-7
        Every directed link's latency in seconds (100 ns).

    Returns
    -------
    Topology
        n compute nodes of n - 1 ports each.

    Raises
    ------
    SpecError
        n < 2.

    Examples
    --------
    >>> complete(4).link_dst[:3].tolist()
    [1, 2, 3]
    """
    (n,) = check_shape("complete", (n,))
    offsets = np.arange(1, n, dtype=np.int64)[:, None]
    return cayley("complete", f"complete:{n}", (n,), offsets, link_bandwidth, link_latency)


@sized(lambda n: cayley_size(2 * n, n, 2, extra=100 * n))
def bipartite(n: int, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
              link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Complete bipartite graph K_{n,n} (Zhao et al. Fig. 1, Table 9): 2n nodes, degree n, diameter 2.

    Diameter 1 for n = 1; distance-regular with intersection array {n, n-1; 1, n}. Sides: nodes ``0..n-1`` and
    ``n..2n-1``. It is the Cayley graph of Z_2 x Z_n (shape (2, n)) with generators (1, delta) for
    delta = 0..n-1, so node i of one side has port delta to node i + delta (mod n) of the other side.

    Raises:
        SpecError: n < 1.

    >>> bipartite(2).link_dst.tolist()
    [2, 3, 3, 2, 0, 1, 1, 0]
    """
    n = need_int("bipartite", "n", n, 1)
    offsets = np.array([[1, delta] for delta in range(n)], dtype=np.int64)
    return cayley("bipartite", f"bipartite:{n}", (2, n), offsets, link_bandwidth, link_latency)


@sized(lambda n: cayley_size(2 * n, max(n - 1, 0), 2, extra=100 * n))
def bipartite_minus_matching(n: int, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
                             link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """K_{n,n} minus a perfect matching (Zhao et al. Table 8): 2n nodes, degree n - 1, diameter 3.

    Distance-regular with intersection array {n-1, n-2, 1; 1, n-2, n-1}. Same layout as :func:`bipartite`
    (shape (2, n)) without the generator (1, 0): the removed matching joins node i to node n + i.

    Raises:
        SpecError: n < 3 (K_{2,2} minus a matching is disconnected).

    >>> bipartite_minus_matching(3).out_degree.tolist()
    [2, 2, 2, 2, 2, 2]
    """
    n = need_int("bipartite_minus_matching", "n", n, 3)
    offsets = np.array([[1, delta] for delta in range(1, n)], dtype=np.int64)
    return cayley("bipartite_minus_matching", f"bipartite_minus_matching:{n}", (2, n), offsets,
                  link_bandwidth, link_latency)


@sized(lambda n, q: cayley_size(capped_pow(q, n), n * max(q - 1, 0), n))
def hamming(n: int, q: int, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
            link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Hamming graph H(n, q) (Zhao et al. Table 9, Fig. 3): words of length n over q letters, one letter apart.

    Words of length n over an alphabet of q letters, adjacent when they differ in exactly one position.
    Size: q^n nodes, degree n(q-1), diameter n; distance-regular. It is the Cartesian power K_q^(box n), i.e.
    the HyperX ``hyperx:qx...xq`` (same links, same port layout, kind ``hamming``); H(n, 2) is the hypercube
    Q_n, H(1, q) the complete graph K_q, and H(n, 3) the torus 3x...x3. Cayley graph of Z_q^n, shape (q,)*n.

    Raises:
        SpecError: n < 1 or q < 2.

    >>> hamming(2, 3).num_links
    36
    """
    n = need_int("hamming", "n", n, 1)
    q = need_int("hamming", "q", q, 2)
    offsets = []
    for i in range(n):
        for delta in range(1, q):
            e = np.zeros(n, dtype=np.int64)
            e[i] = delta
            offsets.append(e)
    return cayley("hamming", f"hamming:{n}:{q}", (q,) * n, np.array(offsets), link_bandwidth, link_latency,
                  {"n": n, "q": q})


# -- distance-regular graphs of Zhao et al. Table 8 -------------------------------------------------------------
def _odd_graph_edges(k: int) -> tuple[int, np.ndarray]:
    """Vertices: (k-1)-subsets of {0..2k-2} (bit masks, in lexicographic order); edges: disjoint pairs."""
    full = (1 << (2 * k - 1)) - 1
    masks = [sum(1 << e for e in c) for c in combinations(range(2 * k - 1), k - 1)]
    index = {m: i for i, m in enumerate(masks)}
    edges = []
    for i, m in enumerate(masks):
        comp = full ^ m  # k elements; a neighbour is comp minus one of them
        for e in range(2 * k - 1):
            if comp >> e & 1:
                j = index[comp ^ (1 << e)]
                if i < j:
                    edges.append((i, j))
    return len(masks), np.array(edges, dtype=np.int64)


def _odd_size(k: int) -> Size:
    k_cut = min(k, 64)  # C(127, 63) is over every cap already: no huge binomials for direct calls
    n = math.comb(2 * k_cut - 1, k_cut - 1) if k >= 1 else 0
    return graph_size(n, n * k, k,
                      extra=BYTES_PER_PYTHON_NODE * as_float(n) + BYTES_PER_PYTHON_EDGE * as_float(n * k) / 2)


@sized(_odd_size)
def odd_graph(k: int, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
              link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Odd graph O_k (distance-regular): the (k-1)-subsets of a (2k-1)-set, adjacent when disjoint.

    Zhao et al. Table 8 (O_4). Size: C(2k-1, k-1) nodes, degree k, diameter k - 1. O_2 is the triangle K_3,
    O_3 the Petersen graph. Node i is the i-th subset in lexicographic order.

    Raises:
        SpecError: k < 2.

    >>> odd_graph(4).num_compute
    35
    """
    k = need_int("odd", "k", k, 2)
    n, edges = _odd_graph_edges(k)
    return undirected("odd", f"odd:{k}", n, edges, link_bandwidth, link_latency, params={"k": k})


@sized(lambda: graph_size(10, 30, 3))
def petersen(*, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH, link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Petersen graph (= odd:3, Odd graph O_3): 10 nodes, degree 3, diameter 2, girth 5.

    A Moore graph (meets the undirected Moore bound); distance-regular with intersection array {3, 2; 1, 1}
    (Zhao et al. Table 8).

    Raises:
        Nothing: a fixed graph.

    >>> petersen().num_links
    30
    """
    n, edges = _odd_graph_edges(3)
    return undirected("petersen", "petersen", n, edges, link_bandwidth, link_latency)


@sized(lambda: graph_size(15, 60, 4))
def linegraph_petersen(*, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
                       link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Line graph of the Petersen graph (distance-regular; Zhao et al. Table 8): 15 nodes, degree 4, diameter 3.

    One node per Petersen edge, two nodes adjacent when their edges share an endpoint (the undirected line
    graph, not the directed line graph of Def. 12). Intersection array {4, 2, 1; 1, 1, 4}.

    Raises:
        Nothing: a fixed graph.

    >>> linegraph_petersen().num_compute
    15
    """
    _, pe = _odd_graph_edges(3)
    edges = [(i, j) for i, j in combinations(range(len(pe)), 2) if set(pe[i].tolist()) & set(pe[j].tolist())]
    return undirected("linegraph_petersen", "linegraph_petersen", len(pe), edges, link_bandwidth, link_latency)
