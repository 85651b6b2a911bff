"""Kautz-type digraphs: the generalized Kautz digraph Pi_{d,N} (Imase & Itoh 1983; Zhao et al. Def. 16, App. F.2),
the Kautz digraph K(d, D) and the de Bruijn digraph B(d, D), with the affine automorphisms of Pi_{d,N}.

All are unidirectional (digraphs of out-degree d). Self-loops carry nothing and are dropped, so the nodes that had
one have out-degree d - 1 (``params["self_loops_dropped"]`` counts them).
"""

from __future__ import annotations

import math

import numpy as np

from directcoll.errors import SpecError
from directcoll.topology.families.base import from_links, need_int, sized
from directcoll.topology.model import DEFAULT_LINK_BANDWIDTH, DEFAULT_LINK_LATENCY, Topology
from directcoll.topology.sizes import Size, as_float, capped_pow, graph_size

__all__ = ["automorphisms", "de_bruijn", "generalized_kautz", "kautz", "pi_automorphisms"]


def _arcs_without_loops(kind: str, spec: str, n: int, src: np.ndarray, dst: np.ndarray, link_bandwidth: float,
                        link_latency: float, params: dict) -> Topology:
    loop = src == dst
    params = {**params, "self_loops_dropped": int(loop.sum())}
    return from_links(kind, spec, n, src[~loop], dst[~loop], link_bandwidth, link_latency, params=params)


def _pi(d: int, n: int, kind: str, spec: str, link_bandwidth: float, link_latency: float, params: dict) -> Topology:
    """Arcs of Pi_{d,n} (Def. 16), self-loops dropped."""
    x = np.repeat(np.arange(n, dtype=np.int64), d)
    a = np.tile(np.arange(1, d + 1, dtype=np.int64), n)
    return _arcs_without_loops(kind, spec, n, x, (-d * x - a) % n, link_bandwidth, link_latency, params)


def _pi_size(d: int, n: int) -> Size:
    g = math.gcd(d, n) or 1
    return graph_size(n, n * d, d, g * -(-d // g), extra=30 * as_float(n * d))


@sized(_pi_size)
def generalized_kautz(d: int, n: int, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
                      link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Generalized Kautz digraph Pi_{d,N} (Imase & Itoh 1983; Zhao et al. Def. 16): arcs x -> -d*x - a (mod N).

    Vertices Z_n, arcs x -> -d*x - a (mod n) for a = 1..d; port a-1 of x is the arc with that a.

    Size: n nodes, out-degree d; diameter <= ceil(log_d n) (Imase & Itoh), so at most one step above the
    Moore bound (Theorem 21). Self-loops (where (d+1) x = -a mod n; none when d+1 divides n) carry nothing
    and are **dropped**, leaving those nodes with out-degree d - 1; ``params["self_loops_dropped"]`` counts
    them. The d arcs of a node are distinct because n > d.

    Raises:
        SpecError: d < 2 or n < d + 1.

    >>> generalized_kautz(2, 10).link_dst[:4].tolist()
    [9, 8, 7, 6]
    """
    d = need_int("genkautz", "d", d, 2)
    n = need_int("genkautz", "N", n, 1)
    if n < d + 1:
        raise SpecError(f"genkautz:{d}:{n}: needs N >= d + 1 = {d + 1} nodes, got N={n}")
    return _pi(d, n, "genkautz", f"genkautz:{d}:{n}", link_bandwidth, link_latency, {"d": d, "N": n})


def pi_automorphisms(d: int, n: int) -> np.ndarray:
    """The affine automorphisms x -> a x + b (mod n) of Pi_{d,n} (generalized Kautz, and Kautz).

    Returns:
        int64 array (|G|, n) of node permutations, identity first; a group of order 2 gcd(d + 1, n).

    x -> -d x - j (j = 1..d) maps to a x + b -> -a d x - a j + b, an arc of Pi_{d,n} exactly when
    {a j - (d + 1) b : j = 1..d} = {1..d} (mod n): a = 1 with (d + 1) b = 0, or a = -1 with (d + 1)(b + 1) = 0
    (mod n) (Zhao et al. Def. 16). Self-loops map to self-loops, so the graph with them dropped keeps every one
    of these maps. Used by :func:`directcoll.synthesis.mcf.alltoall_mcf` to shrink the all-to-all LP by the
    group order.

    Raises:
        Nothing: integer arithmetic on d >= 1, n >= 1.

    >>> pi_automorphisms(2, 5).tolist()
    [[0, 1, 2, 3, 4], [4, 3, 2, 1, 0]]
    """
    g = math.gcd(d + 1, n)
    x = np.arange(n, dtype=np.int64)
    shifts = np.arange(g, dtype=np.int64) * (n // g)
    return np.stack([(x + b) % n for b in shifts] + [(-x + b - 1) % n for b in shifts])


def automorphisms(topo: Topology) -> np.ndarray | None:
    """Known node automorphisms of a generated topology beyond the translations of Cayley graphs, or None.

    Returns:
        int64 array (|G|, num_nodes), a group, identity first: generalized Kautz and Kautz graphs
        (:func:`pi_automorphisms`); None for every other kind.

    Raises:
        Nothing: looks up ``topo.kind`` and ``topo.params``.

    Source: Zhao et al. (NSDI'25) Def. 16 (Pi_{d,n}), via :func:`pi_automorphisms`.

    >>> automorphisms(kautz(2, 2)).shape
    (6, 6)
    """
    if topo.kind in ("genkautz", "kautz"):
        return pi_automorphisms(topo.params["d"], topo.params["N"])
    return None


@sized(lambda d, big_d: _pi_size(d, capped_pow(d, big_d) + capped_pow(d, big_d - 1) if big_d >= 1 else 0))
def kautz(d: int, diameter: int, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
          link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Kautz digraph K(d, D): Pi_{d,N} with N = d^D + d^(D-1), diameter D, Moore optimal (Zhao et al. after Def. 16).

    Imase & Itoh: isomorphic to the classic Kautz graph on strings of length D over d+1 letters with no two
    equal consecutive letters.

    Size: d^D + d^(D-1) nodes, out-degree d, diameter D; no self-loops; Moore optimal. Notation: the paper's
    K(d, n) = L^n(K_{d+1}) has d^(n+1) + d^n nodes and diameter n + 1, i.e. it is this K(d, D) with D = n + 1.

    Raises:
        SpecError: d < 2 or D < 1.

    >>> kautz(2, 3).num_compute
    12
    """
    d = need_int("kautz", "d", d, 2)
    big_d = need_int("kautz", "D", diameter, 1)
    n = d ** big_d + d ** (big_d - 1)
    return _pi(d, n, "kautz", f"kautz:{d}:{big_d}", link_bandwidth, link_latency, {"d": d, "D": big_d, "N": n})


@sized(lambda d, big_d: _pi_size(d, capped_pow(d, big_d)))
def de_bruijn(d: int, diameter: int, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
              link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """de Bruijn digraph B(d, D) (Zhao et al. Table 9, Fig. 20): d^D nodes, x -> d*x + a (mod d^D).

    Vertices Z_{d^D} (D-digit words in base d), arcs x -> d*x + a (mod d^D) for a = 0..d-1 (shift left, append
    digit a).

    Size: d^D nodes, out-degree d, diameter D. The d self-loops (at the constant words aa...a) are
    **dropped**, so those nodes have out-degree d - 1 (``params["self_loops_dropped"]``); the paper's
    "modified de Bruijn" rewiring of loops and 2-cycles is not applied.

    Raises:
        SpecError: d < 2 or D < 1.

    >>> de_bruijn(2, 3).params["self_loops_dropped"]
    2
    """
    d = need_int("debruijn", "d", d, 2)
    big_d = need_int("debruijn", "D", diameter, 1)
    n = d ** big_d
    x = np.repeat(np.arange(n, dtype=np.int64), d)
    a = np.tile(np.arange(d, dtype=np.int64), n)
    return _arcs_without_loops("debruijn", f"debruijn:{d}:{big_d}", n, x, (d * x + a) % n, link_bandwidth,
                               link_latency, {"d": d, "D": big_d})
