"""Generative topologies of Zhao et al. (NSDI'25, App. F) and the Moore bound (Def. 9, 10).

One pure function per family; every generator takes ``link_bandwidth`` (bytes/s) and ``link_latency`` (s)
like :mod:`directcoll.topology.generators` and raises :class:`~directcoll.errors.SpecError` for impossible
parameters. "Bidirectional" families have both directions of every link (an undirected graph); the
unidirectional ones (generalized Kautz, Kautz, de Bruijn, ``circulant:...:uni``) are digraphs.

Families that are Cayley graphs of an abelian group Z_shape keep ``port_offsets`` (translation-invariant
routing): circulants (Z_N), Hamming graphs (Z_q^n), K_{n,n} and K_{n,n} minus a perfect matching
(Z_2 x Z_n), twisted tori (Z^D / twist lattice, in Smith normal form). The complete graph, rings and the
hypercube are in :mod:`~directcoll.topology.generators` (``complete:n``, ``ring:n``, ``ring:n:uni``,
``hypercube:k``).
"""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np

from directcoll.errors import SpecError
from directcoll.topology.generators import _brief, _cayley, _check_shape, _spec_shape, sized
from directcoll.topology.model import DEFAULT_LINK_BANDWIDTH, DEFAULT_LINK_LATENCY, Topology

BW = DEFAULT_LINK_BANDWIDTH
LAT = DEFAULT_LINK_LATENCY


# -- helpers -------------------------------------------------------------------------------------------------
def _need_int(kind: str, name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or int(value) != value or int(value) < minimum:
        raise SpecError(f"{kind}: {name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _from_links(kind: str, spec: str, n: int, src, dst, link_bandwidth: float, link_latency: float, *,
                shape: tuple[int, ...] | None = None, wraps: bool = False, params: dict | None = None) -> Topology:
    """A switchless topology from directed links, laid out node-major (stable: port order is kept)."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    order = np.argsort(src, kind="stable")
    src, dst = src[order], dst[order]
    links = len(src)
    return Topology(spec=spec, kind=kind, num_compute=n, num_nodes=n, link_src=src, link_dst=dst,
                    link_bandwidth=np.full(links, float(link_bandwidth)),
                    link_latency=np.full(links, float(link_latency)), shape=shape, wraps=wraps,
                    params=params or {})


def _undirected(kind: str, spec: str, n: int, edges, link_bandwidth: float, link_latency: float,
                **kw) -> Topology:
    """Both directions of every undirected edge (u, v)."""
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    return _from_links(kind, spec, n, np.concatenate([e[:, 0], e[:, 1]]), np.concatenate([e[:, 1], e[:, 0]]),
                       link_bandwidth, link_latency, **kw)


# -- complete bipartite ----------------------------------------------------------------------------------------
@sized
def bipartite(n: int, *, link_bandwidth: float = BW, link_latency: float = LAT) -> Topology:
    """Complete bipartite graph K_{n,n} (Zhao et al. Fig. 1, Table 9): 2n nodes, degree n, diameter 2 (1 for
    n = 1); distance-regular with intersection array {n, n-1; 1, n}.

    Sides: nodes ``0..n-1`` and ``n..2n-1``. It is the Cayley graph of Z_2 x Z_n (shape (2, n)) with
    generators (1, delta) for delta = 0..n-1, so node i of one side has port delta to node i + delta (mod n)
    of the other side.

    Raises:
        SpecError: n < 1.
    """
    n = _need_int("bipartite", "n", n, 1)
    offsets = np.array([[1, delta] for delta in range(n)], dtype=np.int64)
    return _cayley("bipartite", f"bipartite:{n}", (2, n), offsets, link_bandwidth, link_latency)


@sized
def bipartite_minus_matching(n: int, *, link_bandwidth: float = BW, link_latency: float = LAT) -> Topology:
    """K_{n,n} minus a perfect matching (K_{n,n} - I, Zhao et al. Table 8): 2n nodes, degree n - 1, diameter 3;
    distance-regular with intersection array {n-1, n-2, 1; 1, n-2, n-1}.

    Same layout as :func:`bipartite` (shape (2, n)) without the generator (1, 0): the removed matching joins
    node i to node n + i.

    Raises:
        SpecError: n < 3 (K_{2,2} minus a matching is disconnected).
    """
    n = _need_int("bipartite_minus_matching", "n", n, 3)
    offsets = np.array([[1, delta] for delta in range(1, n)], dtype=np.int64)
    return _cayley("bipartite_minus_matching", f"bipartite_minus_matching:{n}", (2, n), offsets,
                   link_bandwidth, link_latency)


# -- Hamming graph ---------------------------------------------------------------------------------------------
@sized
def hamming(n: int, q: int, *, link_bandwidth: float = BW, link_latency: float = LAT) -> Topology:
    """Hamming graph H(n, q) (Zhao et al. Table 9, Fig. 3): words of length n over an alphabet of q letters,
    adjacent when they differ in exactly one position.

    Size: q^n nodes, degree n(q-1), diameter n; distance-regular. It is the Cartesian power K_q^(box n), i.e.
    the HyperX ``hyperx:qx...xq`` (same links, same port layout, kind ``hamming``); H(n, 2) is the hypercube
    Q_n, H(1, q) the complete graph K_q, and H(n, 3) the torus 3x...x3. Cayley graph of Z_q^n, shape (q,)*n.

    Raises:
        SpecError: n < 1 or q < 2.
    """
    n = _need_int("hamming", "n", n, 1)
    q = _need_int("hamming", "q", q, 2)
    offsets = []
    for i in range(n):
        for delta in range(1, q):
            e = np.zeros(n, dtype=np.int64)
            e[i] = delta
            offsets.append(e)
    return _cayley("hamming", f"hamming:{n}:{q}", (q,) * n, np.array(offsets), link_bandwidth, link_latency,
                   {"n": n, "q": q})


# -- circulant graphs ------------------------------------------------------------------------------------------
def theorem22_m(n: int) -> int:
    """m = ceil((-1 + sqrt(2n - 1)) / 2) of Zhao et al. Theorem 22 (Boesch & Wang 1985), in exact integer
    arithmetic: the least m >= 0 with (2m + 1)^2 >= 2n - 1."""
    m = max(0, (math.isqrt(2 * n - 1) - 1) // 2)
    while (2 * m + 1) ** 2 < 2 * n - 1:
        m += 1
    return m


@sized
def circulant(n: int, offsets, *, bidirectional: bool = True, link_bandwidth: float = BW,
              link_latency: float = LAT) -> Topology:
    """Circulant graph C(n, {a_1..a_k}) (Zhao et al. Def. 18): node i linked to i +- a_1, ..., i +- a_k (mod n).

    Bidirectional: 2k ports per node, port 2j to i + a_j and port 2j+1 to i - a_j (an offset a = n/2 or two
    offsets a, n - a give parallel links, as in the paper's multiedge construction). Unidirectional
    (``bidirectional=False``, the directed circulant of Fig. 3): k ports, i -> i + a_j. Cayley graph of Z_n.
    Connected iff gcd(n, a_1, ..., a_k) = 1 (Meijer; Monakhova). Offsets (any integers, negative ones too from
    Python) are reduced modulo n.

    Raises:
        SpecError: n < 2, no offsets, an offset that is a multiple of n, or gcd(n, a_1..a_k) > 1.
    """
    n = _need_int("circulant", "N", n, 2)
    raw = list(offsets)
    if not raw:
        raise SpecError(f"circulant:{n}: needs at least one offset a_1, e.g. circulant:{n}:1,2")
    offs = []
    for a in raw:
        if isinstance(a, bool) or int(a) != a:
            raise SpecError(f"circulant:{n}: offsets must be integers, got {a!r}")
        a = int(a)
        if a % n == 0:
            raise SpecError(f"circulant:{n}: offset {a} is a multiple of N={n} (a self-loop); "
                            f"offsets must be nonzero modulo {n}")
        offs.append(a % n)
    g = math.gcd(n, *offs)
    if g != 1:
        raise SpecError(f"circulant:{n}: offsets {_brief(offs)} leave the graph disconnected: "
                        f"gcd(N, a_1..a_k) = {g}, must be 1")
    signs = (1, -1) if bidirectional else (1,)
    gens = np.array([[s * a] for a in offs for s in signs], dtype=np.int64)
    spec = f"circulant:{n}:{','.join(map(str, offs))}" + ("" if bidirectional else ":uni")
    return _cayley("circulant", spec, (n,), gens, link_bandwidth, link_latency,
                   {"offsets": tuple(offs), "bidirectional": bidirectional})


@sized
def circulant_opt4(n: int, *, link_bandwidth: float = BW, link_latency: float = LAT) -> Topology:
    """Minimum-diameter degree-4 circulant of Zhao et al. Theorem 22 (Boesch & Wang, IEEE TCAS 1985): for
    n > 6 and m = ceil((-1 + sqrt(2n - 1)) / 2), C(n, {m, m+1}) has diameter m, the least diameter of any
    C(n, {a_1, a_2}). Its spec is the explicit ``circulant:n:m,m+1``.

    Raises:
        SpecError: n <= 6 (the theorem needs n > 6).
    """
    n = _need_int("circulant opt4", "N", n, 1)
    if n <= 6:
        raise SpecError(f"circulant:{n}:opt4: Theorem 22 needs N > 6, got {n}")
    m = theorem22_m(n)
    topo = circulant(n, (m, m + 1), link_bandwidth=link_bandwidth, link_latency=link_latency)
    topo.params["theorem22_diameter"] = m
    return topo


# -- baselines of Zhao et al. Sec. 8.2: shifted ring and double binary tree ------------------------------------
def shifted_ring_stride(n: int) -> int:
    """The stride s of the second ring of :func:`shifted_ring`: the s <= n/2 nearest n/2 with gcd(s, n) = 1.

    TopoOpt (Wang et al., NSDI'23) builds its rings from strides coprime to n (its TotientPerms); which stride
    its degree-4 "ShiftedRing" uses is not stated in Zhao et al. We take the one nearest n/2 (s and n - s give
    the same circulant): it reproduces the all-to-all time of Zhao et al.'s Table 4 caption exactly (C(1024,
    {1, 511}) has mean distance 128.0, and 128.0 x 1 MiB / 100 Gb/s = 10738 us). n in {2, 3, 4, 6} have no
    coprime stride other than 1; there s = 1 and the two rings coincide (parallel links).

    Raises:
        SpecError: n < 2.
    """
    n = _need_int("shiftedring", "N", n, 2)
    half = n // 2
    for delta in range(half):
        if math.gcd(half - delta, n) == 1:
            return half - delta
    return 1  # not reached: gcd(1, n) = 1


@sized
def shifted_ring(n: int, stride: int | None = None, *, link_bandwidth: float = BW,
                 link_latency: float = LAT) -> Topology:
    """TopoOpt's ShiftedRing topology (Zhao et al. Sec. 8.2 baseline, degree 4): the superposition of two
    bidirectional rings on 0..n-1, one visiting 0, 1, ..., n-1 and one with stride s (0, s, 2s, ... mod n),
    i.e. the circulant C(n, {1, s}) of :func:`circulant`.

    Size: n nodes, degree 4 (ports: +1, -1, +s, -s; s = 1 or s = n/2 gives parallel links). Its spec is the
    explicit ``circulant:n:1,s``; ``params["stride"]`` = s.

    Args:
        n: number of nodes, >= 2.
        stride: s, coprime to n; None picks :func:`shifted_ring_stride` (nearest n/2).

    Raises:
        SpecError: n < 2, or a stride that is not an integer coprime to n.
    """
    n = _need_int("shiftedring", "N", n, 2)
    s = shifted_ring_stride(n) if stride is None else _need_int("shiftedring", "stride", stride, 1)
    if math.gcd(s, n) != 1:
        raise SpecError(f"shiftedring:{n}: stride {s} must be coprime to N={n} (gcd {math.gcd(s, n)}), or the "
                        "second ring does not visit every node")
    s %= n
    s = min(s, n - s) or 1
    topo = circulant(n, (1, s), link_bandwidth=link_bandwidth, link_latency=link_latency)
    topo.params["stride"] = s
    return topo


def double_binary_tree_parents(n: int) -> np.ndarray:
    """The two trees of the double binary tree on ranks 0..n-1 (NCCL's DBT; Sanders, Speck & Träff, Parallel
    Computing 35(12), 2009; Zhao et al. Sec. 8.2 baseline).

    Both trees are the balanced in-order binary tree on positions 1..n (NCCL's ``ncclGetBtree`` without its
    extra root): the root is the largest power of two R <= n, and position p with lowest set bit b has parent
    p + b if bit 2b of p is clear and p + b <= n, else p - b. Even positions are interior, odd ones leaves,
    the depth is floor(log2 n). Tree 0 puts rank p - 1 at position p; tree 1 is the same tree shifted by one
    rank (rank p mod n at position p). So the interior ranks are the odd ones in tree 0 and the even ones
    (rank 0 only for even n) in tree 1: every rank is interior in at most one tree, and for odd n rank 0 is a
    leaf of both. NCCL mirrors the second tree for even n instead; the shift serves every n with one rule and
    keeps both trees full (every interior node but the last position has two children).

    Returns:
        int64 array of shape (2, n): ``parents[t, r]`` is the parent rank of rank r in tree t, -1 at the root.

    Raises:
        SpecError: n < 1.
    """
    n = _need_int("dbt", "N", n, 1)
    p = np.arange(1, n + 1, dtype=np.int64)
    b = p & -p
    up = np.where((p & (2 * b)) == 0, p + b, p - b)
    up = np.where(up > n, p - b, up)  # 0 only at the root R (p = b = R, 2R > n)
    parents = np.empty((2, n), dtype=np.int64)
    parents[0, p - 1] = np.where(up == 0, -1, up - 1)
    parents[1, p % n] = np.where(up == 0, -1, up % n)
    return parents


@sized
def double_binary_tree(n: int, *, link_bandwidth: float = BW, link_latency: float = LAT) -> Topology:
    """The double binary tree topology (Zhao et al. Sec. 8.2 baseline: "the topology and schedule from
    [38, 71]"): one bidirectional link per tree edge of :func:`double_binary_tree_parents`.

    Size: n nodes, degree <= 4 (3 links in the tree a rank is interior to, 1 in the other; rank 0 of an odd n
    has 2), diameter <= 2 floor(log2 n). A tree edge present in both trees (n <= 3) gives parallel links.
    Spec ``dbt:n`` (``params["parents"]`` is not kept; recompute it).

    Raises:
        SpecError: n < 2.
    """
    n = _need_int("dbt", "N", n, 2)
    parents = double_binary_tree_parents(n)
    child = np.flatnonzero(parents.ravel() >= 0) % n
    edges = np.stack([child, parents.ravel()[parents.ravel() >= 0]], axis=1)
    return _undirected("dbt", f"dbt:{n}", n, edges, link_bandwidth, link_latency)


# -- generalized Kautz, Kautz, de Bruijn ---------------------------------------------------------------------
def _arcs_without_loops(kind: str, spec: str, n: int, src: np.ndarray, dst: np.ndarray, link_bandwidth: float,
                        link_latency: float, params: dict) -> Topology:
    loop = src == dst
    params = {**params, "self_loops_dropped": int(loop.sum())}
    return _from_links(kind, spec, n, src[~loop], dst[~loop], link_bandwidth, link_latency, params=params)


@sized
def generalized_kautz(d: int, n: int, *, link_bandwidth: float = BW, link_latency: float = LAT) -> Topology:
    """Generalized Kautz digraph Pi_{d,n} (Imase & Itoh 1983; Zhao et al. Def. 16): vertices Z_n, arcs
    x -> -d*x - a (mod n) for a = 1..d. Port a-1 of x is the arc with that a.

    Size: n nodes, out-degree d; diameter <= ceil(log_d n) (Imase & Itoh), so at most one step above the
    Moore bound (Theorem 21). Self-loops (where (d+1) x = -a mod n; none when d+1 divides n) carry nothing
    and are **dropped**, leaving those nodes with out-degree d - 1; ``params["self_loops_dropped"]`` counts
    them. The d arcs of a node are distinct because n > d.

    Raises:
        SpecError: d < 2 or n < d + 1.
    """
    d = _need_int("genkautz", "d", d, 2)
    n = _need_int("genkautz", "N", n, 1)
    if n < d + 1:
        raise SpecError(f"genkautz:{d}:{n}: needs N >= d + 1 = {d + 1} nodes, got N={n}")
    return _pi(d, n, "genkautz", f"genkautz:{d}:{n}", link_bandwidth, link_latency, {"d": d, "N": n})


def _pi(d: int, n: int, kind: str, spec: str, link_bandwidth: float, link_latency: float, params: dict) -> Topology:
    """Arcs of Pi_{d,n} (Def. 16), self-loops dropped."""
    x = np.repeat(np.arange(n, dtype=np.int64), d)
    a = np.tile(np.arange(1, d + 1, dtype=np.int64), n)
    return _arcs_without_loops(kind, spec, n, x, (-d * x - a) % n, link_bandwidth, link_latency, params)


def pi_automorphisms(d: int, n: int) -> np.ndarray:
    """The affine automorphisms x -> a x + b (mod n) of Pi_{d,n} (generalized Kautz, and Kautz), as a (|G|, n)
    array of node permutations, identity first; a group of order 2 gcd(d + 1, n).

    x -> -d x - j (j = 1..d) maps to a x + b -> -a d x - a j + b, an arc of Pi_{d,n} exactly when
    {a j - (d + 1) b : j = 1..d} = {1..d} (mod n): a = 1 with (d + 1) b = 0, or a = -1 with (d + 1)(b + 1) = 0
    (mod n). Self-loops map to self-loops, so the graph with them dropped keeps every one of these maps. Used by
    :func:`directcoll.synthesis.mcf.link.alltoall_mcf` to shrink the all-to-all LP by the group order.
    """
    g = math.gcd(d + 1, n)
    x = np.arange(n, dtype=np.int64)
    shifts = np.arange(g, dtype=np.int64) * (n // g)
    return np.stack([(x + b) % n for b in shifts] + [(-x + b - 1) % n for b in shifts])


def automorphisms(topo: Topology) -> np.ndarray | None:
    """Known node automorphisms of a generated topology (a group, identity first, shape (|G|, num_nodes)) beyond
    the translations of Cayley graphs, or None: generalized Kautz and Kautz graphs (:func:`pi_automorphisms`)."""
    if topo.kind in ("genkautz", "kautz"):
        return pi_automorphisms(topo.params["d"], topo.params["N"])
    return None


@sized
def kautz(d: int, diameter: int, *, link_bandwidth: float = BW, link_latency: float = LAT) -> Topology:
    """Kautz digraph K(d, D): the generalized Kautz digraph Pi_{d,N} with N = d^D + d^(D-1) (Zhao et al. after
    Def. 16, Imase & Itoh), isomorphic to the classic Kautz graph on strings of length D over d+1 letters
    with no two equal consecutive letters.

    Size: d^D + d^(D-1) nodes, out-degree d, diameter D; no self-loops; Moore optimal. Notation: the paper's
    K(d, n) = L^n(K_{d+1}) has d^(n+1) + d^n nodes and diameter n + 1, i.e. it is this K(d, D) with D = n + 1.

    Raises:
        SpecError: d < 2 or D < 1.
    """
    d = _need_int("kautz", "d", d, 2)
    big_d = _need_int("kautz", "D", diameter, 1)
    n = d ** big_d + d ** (big_d - 1)
    return _pi(d, n, "kautz", f"kautz:{d}:{big_d}", link_bandwidth, link_latency, {"d": d, "D": big_d, "N": n})


@sized
def de_bruijn(d: int, diameter: int, *, link_bandwidth: float = BW, link_latency: float = LAT) -> Topology:
    """de Bruijn digraph B(d, D) (Zhao et al. Table 9, Fig. 20): vertices Z_{d^D} (D-digit words in base d),
    arcs x -> d*x + a (mod d^D) for a = 0..d-1 (shift left, append digit a).

    Size: d^D nodes, out-degree d, diameter D. The d self-loops (at the constant words aa...a) are
    **dropped**, so those nodes have out-degree d - 1 (``params["self_loops_dropped"]``); the paper's
    "modified de Bruijn" rewiring of loops and 2-cycles is not applied.

    Raises:
        SpecError: d < 2 or D < 1.
    """
    d = _need_int("debruijn", "d", d, 2)
    big_d = _need_int("debruijn", "D", diameter, 1)
    n = d ** big_d
    x = np.repeat(np.arange(n, dtype=np.int64), d)
    a = np.tile(np.arange(d, dtype=np.int64), n)
    return _arcs_without_loops("debruijn", f"debruijn:{d}:{big_d}", n, x, (d * x + a) % n, link_bandwidth,
                               link_latency, {"d": d, "D": big_d})


# -- random expanders: Jellyfish and Xpander (Basu et al. Sec. 5.4, Fig. 10) -----------------------------------
#: A seeded draw that comes out disconnected is redrawn with the next seed, at most this many times.
MAX_DRAWS = 100
#: Most work the random draws of one Jellyfish or Xpander may take, in units of N d (d + 60) per draw
#: (rustworkx's sampler grows with N d^2, the edge list with N d), about a minute; a degree-2 graph is a union of
#: cycles, connected only by luck, so it counts :data:`MAX_DRAWS` draws.
MAX_DRAW_WORK = 4e9
#: Largest seed of a draw: a redrawn seed (seed + MAX_DRAWS) stays a 64-bit integer (rustworkx's seeds).
MAX_SEED = 2**63 - 1 - MAX_DRAWS


def _brief_int(value: int) -> str:
    """An integer for a message: exact up to 24 digits, else its power of two (no huge decimal conversions)."""
    return str(value) if value.bit_length() <= 79 else f"about 2^{value.bit_length() - 1}"


def _check_draw_work(spec: str, n: int, d: int, per_link: int) -> None:
    from directcoll.resources import check_work

    draws = MAX_DRAWS if d == 2 else 1
    check_work(f"topology {spec} ({draws} draw{'s' if draws > 1 else ''})", float(n) * d * per_link * draws,
               MAX_DRAW_WORK, "sampler steps")


def _connected(n: int, edges: np.ndarray) -> bool:
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import connected_components

    adj = csr_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    return connected_components(adj, directed=False)[0] == 1


def _draw_connected(kind: str, spec: str, n: int, seed: int, draw) -> tuple[np.ndarray, int]:
    for k in range(MAX_DRAWS):
        edges = draw(seed + k)
        if _connected(n, edges):
            return edges, seed + k
    raise SpecError(f"{spec}: {MAX_DRAWS} draws from seed {seed} on were all disconnected; pick a larger degree")


@sized
def jellyfish(n: int, d: int, seed: int = 0, *, link_bandwidth: float = BW, link_latency: float = LAT) -> Topology:
    """Jellyfish (Singla et al., NSDI'12): a uniformly random simple d-regular graph on n nodes, bidirectional
    links (``rustworkx.random_regular_graph``, seeded, so a spec names one graph).

    A draw that is disconnected (rare for d >= 3) is replaced by the draw of seed + 1, and so on;
    ``params["seed_used"]`` says which seed the graph came from. Basu et al. (Fig. 10) compare it with
    generalized Kautz, Xpander and 2D tori at d = 4.

    rustworkx's sampler slows down without bound as d nears N (d = 180 of N = 200 takes minutes), so d is at
    most N/2, and draws that would take longer than about a minute (:data:`MAX_DRAW_WORK`) are refused.

    Raises:
        SpecError: d < 2, n <= d, n * d odd, d > n / 2, or no connected draw in :data:`MAX_DRAWS` seeds.
        ResourceError: the draws would take too long (:data:`MAX_DRAW_WORK`).
    """
    import rustworkx as rx

    d = _need_int("jellyfish", "d", d, 2)
    n = _need_int("jellyfish", "N", n, 1)
    seed = _need_int("jellyfish", "seed", seed, 0)
    if seed > MAX_SEED:
        raise SpecError(f"jellyfish: seed must lie in 0..{MAX_SEED:,} (rustworkx takes 64-bit seeds, redraws add up "
                        f"to {MAX_DRAWS}), got {_brief_int(seed)}")
    spec = f"jellyfish:{n}:{d}:{seed}"
    if n <= d or (n * d) % 2:
        raise SpecError(f"{spec}: a simple d-regular graph needs N > d and N * d even, got N={n}, d={d}")
    if 2 * d > n:
        raise SpecError(f"{spec}: d must lie in 2..N/2 = 2..{n // 2} (rustworkx's sampler stalls near d = N), "
                        f"got d={d}")
    _check_draw_work(spec, n, d, d + 60)

    def draw(s: int) -> np.ndarray:
        return np.array(rx.random_regular_graph(n, d, seed=s).edge_list(), dtype=np.int64).reshape(-1, 2)

    edges, used = _draw_connected("jellyfish", spec, n, seed, draw)
    return _undirected("jellyfish", spec, n, edges, link_bandwidth, link_latency,
                       params={"N": n, "d": d, "seed": seed, "seed_used": used})


@sized
def xpander(n: int, d: int, seed: int = 0, *, link_bandwidth: float = BW, link_latency: float = LAT) -> Topology:
    """Xpander (Valadarsky et al., CoNEXT'16): a random L-lift of the complete graph K_{d+1}, n = L (d + 1).

    Node (a, i) = a * L + i for a in K_{d+1} and i in [0, L); every edge {a, b} of K_{d+1} becomes the perfect
    matching (a, i) -- (b, pi_ab(i)) for an independent uniformly random permutation pi_ab (numpy
    ``default_rng(seed)``), so the graph is simple and d-regular. Disconnected draws are redrawn as in
    :func:`jellyfish`. L = 1 is K_{d+1} itself.

    Raises:
        SpecError: d < 2, n not a multiple of d + 1, or no connected draw in :data:`MAX_DRAWS` seeds.
        ResourceError: the draws would take too long (:data:`MAX_DRAW_WORK`; degree 2 counts every draw).
    """
    d = _need_int("xpander", "d", d, 2)
    n = _need_int("xpander", "N", n, 1)
    seed = _need_int("xpander", "seed", seed, 0)
    spec = f"xpander:{n}:{d}:{seed}"
    if n % (d + 1):
        lo = max(d + 1, n // (d + 1) * (d + 1))
        raise SpecError(f"{spec}: a lift of K_{d + 1} has a multiple of d + 1 = {d + 1} nodes, got N={n} "
                        f"(nearest: {lo} or {lo + d + 1})")
    _check_draw_work(spec, n, d, 60)
    lift = n // (d + 1)
    pairs = np.array(list(combinations(range(d + 1), 2)), dtype=np.int64)

    def draw(s: int) -> np.ndarray:
        rng = np.random.default_rng(s)
        perm = np.argsort(rng.random((len(pairs), lift)), axis=1)
        i = np.arange(lift)
        u = (pairs[:, :1] * lift + i).ravel()
        v = (pairs[:, 1:] * lift + perm).ravel()
        return np.stack([u, v], axis=1)

    edges, used = _draw_connected("xpander", spec, n, seed, draw)
    return _undirected("xpander", spec, n, edges, link_bandwidth, link_latency,
                       params={"N": n, "d": d, "seed": seed, "seed_used": used, "lift": lift})


# -- twisted hypercube and twisted torus ---------------------------------------------------------------------
@sized
def twisted_hypercube(k: int, *, link_bandwidth: float = BW, link_latency: float = LAT) -> Topology:
    """Twisted hypercube TQ_k (Esfahanian, Ni & Sagan, IEEE TC 1991 -- Zhao et al. ref. [28], Sec. 7 testbed):
    the hypercube Q_k with the 4-cycle 0-1-3-2 twisted, i.e. the links {0,1} and {2,3} replaced by {0,3}
    and {1,2}.

    Size: 2^k nodes, degree k, diameter k - 1 (Q_k has k). Node r keeps bit coordinates (shape (2,)*k);
    port i of node r goes to r XOR 2^i except port 0 of nodes 0..3, which goes to r XOR 3. Not a Cayley
    graph, so routing runs a BFS per source.

    Raises:
        SpecError: k < 3 (Q_2 twisted is Q_2 again).
    """
    k = _need_int("twistedhypercube", "k", k, 3)
    n = 1 << k
    src = np.repeat(np.arange(n, dtype=np.int64), k)
    dst = src ^ np.tile(1 << np.arange(k, dtype=np.int64), n)
    twisted = (src < 4) & (np.tile(np.arange(k), n) == 0)
    dst[twisted] = src[twisted] ^ 3
    return _from_links("twistedhypercube", f"twistedhypercube:{k}", n, src, dst, link_bandwidth, link_latency,
                       shape=(2,) * k, wraps=True, params={"twisted_links": ((0, 3), (1, 2))})


def _smith_columns(matrix: list[list[int]]) -> tuple[list[int], np.ndarray]:
    """Smith normal form of a square nonsingular integer matrix M: (s, V) with U M V = diag(s), V unimodular,
    s_1 | s_2 | ... (only V is kept). Then x -> (x V) mod s maps Z^D onto Z_s with kernel the row lattice of M."""
    a = [list(map(int, row)) for row in matrix]
    size = len(a)
    v = [[int(i == j) for j in range(size)] for i in range(size)]

    def swap_cols(i, j):
        for row in a:
            row[i], row[j] = row[j], row[i]
        for row in v:
            row[i], row[j] = row[j], row[i]

    def add_col(dst, src, q):  # col dst += q * col src
        for row in a:
            row[dst] += q * row[src]
        for row in v:
            row[dst] += q * row[src]

    for t in range(size):
        while True:
            _, i, j = min((abs(a[i][j]), i, j) for i in range(t, size) for j in range(t, size) if a[i][j])
            a[t], a[i] = a[i], a[t]
            swap_cols(t, j)
            p = a[t][t]
            clean = True
            for i in range(t + 1, size):
                q = a[i][t] // p
                a[i] = [x - q * y for x, y in zip(a[i], a[t], strict=True)]
                clean &= a[i][t] == 0
            for j in range(t + 1, size):
                add_col(j, t, -(a[t][j] // p))
                clean &= a[t][j] == 0
            if not clean:
                continue
            bad = [i for i in range(t + 1, size) if any(a[i][j] % p for j in range(t + 1, size))]
            if bad:
                a[t] = [x + y for x, y in zip(a[t], a[bad[0]], strict=True)]
                continue
            if p < 0:
                add_col(t, t, -2)  # negate column t
            break
    return [a[t][t] for t in range(size)], np.array(v, dtype=np.int64)


@sized
def twisted_torus(shape, twists=None, *, link_bandwidth: float = BW, link_latency: float = LAT) -> Topology:
    """Twisted torus (Camara et al., IEEE TPDS 2010 -- Zhao et al. ref. [26]; the TPU v4 twisted 3D torus of
    Jouppi et al. ISCA'23): a D-dimensional torus d_0 x ... x d_(D-1) whose wrap-around links in every
    dimension i < D-1 also move t_i steps along the last dimension: (.., x_i = d_i - 1, .., y) + e_i is
    (.., 0, .., y + t_i mod d_(D-1)). The last dimension wraps plainly.

    Default twists: t_i = d_(D-1) // 2, which gives Camara's rectangular twisted torus RTT(a) =
    ``twistedtorus:ax2a:a`` (2a^2 nodes, diameter a, vs 3a/2 for the a x 2a torus) and the TPU v4 layout
    ``twistedtorus:kxkx2k:k,k``. All twists 0 is the plain torus.

    Size: prod(d_i) nodes, 2D ports (+- every dimension; a size-2 dimension keeps two parallel cables, as in
    :func:`~directcoll.topology.generators.torus`). It is the Cayley graph of Z^D / L, L spanned by
    d_i e_i - t_i e_(D-1), which is rewritten in Smith normal form as Z_s (the topology's ``shape``), so
    routing is translation-invariant. Node ids therefore follow the group coordinates, not the grid;
    :func:`twisted_torus_grid` gives each node's grid position. ``params``: ``grid``, ``twists``.

    Raises:
        SpecError: fewer than 2 dimensions, a dimension < 2, a wrong number of twists, or a twist outside
            0..d_(D-1) - 1.
    """
    shape = _check_shape("twistedtorus", shape)
    if len(shape) < 2:
        raise SpecError(f"twistedtorus: needs at least 2 dimensions (AxB), got {shape}")
    last = shape[-1]
    twists = tuple([last // 2] * (len(shape) - 1) if twists is None else (int(t) for t in twists))
    if len(twists) != len(shape) - 1:
        raise SpecError(f"twistedtorus:{_spec_shape(shape)}: needs {len(shape) - 1} twist(s), one per dimension "
                        f"but the last, got {len(twists)}: {_brief(twists)}")
    if any(not 0 <= t < last for t in twists):
        raise SpecError(f"twistedtorus:{_spec_shape(shape)}: twists must lie in 0..{last - 1}, got {_brief(twists)}")
    dim = len(shape)
    lattice = [[0] * dim for _ in range(dim)]
    for i, d in enumerate(shape):
        lattice[i][i] = d
        if i < dim - 1:
            lattice[i][-1] = -twists[i]
    s, v = _smith_columns(lattice)
    keep = [j for j in range(dim) if s[j] > 1]
    group = tuple(s[j] for j in keep)
    gens = []
    for i in range(dim):
        for sign in (1, -1):
            gens.append((sign * v[i, keep]) % np.array(group))
    spec = f"twistedtorus:{_spec_shape(shape)}:{','.join(map(str, twists))}"
    return _cayley("twistedtorus", spec, group, np.array(gens, dtype=np.int64), link_bandwidth, link_latency,
                   {"grid": shape, "twists": twists, "group_map": tuple(map(tuple, v[:, keep].tolist()))})


def twisted_torus_grid(topo: Topology) -> np.ndarray:
    """Grid coordinates (N, D) of every node of a :func:`twisted_torus` (row r: node r's position)."""
    grid = topo.params["grid"]
    v = np.array(topo.params["group_map"], dtype=np.int64).reshape(len(grid), -1)
    box = np.stack(np.unravel_index(np.arange(topo.num_compute), grid), axis=-1).astype(np.int64)
    nodes = topo.node_at(box @ v)
    out = np.empty_like(box)
    out[nodes] = box
    return out


# -- distance-regular graphs -----------------------------------------------------------------------------------
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


@sized
def odd_graph(k: int, *, link_bandwidth: float = BW, link_latency: float = LAT) -> Topology:
    """Odd graph O_k: the (k-1)-subsets of a (2k-1)-set, adjacent when disjoint (Zhao et al. Table 8: O_4).

    Size: C(2k-1, k-1) nodes, degree k, diameter k - 1; distance-regular. O_2 is the triangle K_3, O_3 the
    Petersen graph. Node i is the i-th subset in lexicographic order.

    Raises:
        SpecError: k < 2.
    """
    k = _need_int("odd", "k", k, 2)
    n, edges = _odd_graph_edges(k)
    return _undirected("odd", f"odd:{k}", n, edges, link_bandwidth, link_latency, params={"k": k})


def petersen(*, link_bandwidth: float = BW, link_latency: float = LAT) -> Topology:
    """Petersen graph (= Odd graph O_3): 10 nodes, degree 3, diameter 2, girth 5; a Moore graph (meets the
    undirected Moore bound); distance-regular with intersection array {3, 2; 1, 1}."""
    n, edges = _odd_graph_edges(3)
    return _undirected("petersen", "petersen", n, edges, link_bandwidth, link_latency)


def linegraph_petersen(*, link_bandwidth: float = BW, link_latency: float = LAT) -> Topology:
    """Line graph of the Petersen graph (Zhao et al. Table 8): one node per Petersen edge, two nodes adjacent
    when their edges share an endpoint (the undirected line graph, not the directed line graph of Def. 12).

    Size: 15 nodes, degree 4, diameter 3; distance-regular with intersection array {4, 2, 1; 1, 1, 4}.
    """
    _, pe = _odd_graph_edges(3)
    edges = [(i, j) for i, j in combinations(range(len(pe)), 2) if set(pe[i].tolist()) & set(pe[j].tolist())]
    return _undirected("linegraph_petersen", "linegraph_petersen", len(pe), edges, link_bandwidth, link_latency)


def intersection_array(topo: Topology) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """({b_0, ..., b_(D-1)}, {c_1, ..., c_D}) when the compute-node graph is distance-regular (Zhao et al.
    Def. 17: for every pair x, y at distance i, y has c_i neighbours at distance i-1 from x, a_i at distance
    i and b_i at distance i+1), else None. Only for bidirectional topologies; parallel links count once.
    Dense all-pairs BFS: meant for graphs of up to a few thousand nodes.

    Raises:
        ResourceError: the dense N x N distance and layer matrices would exceed the memory budget.
    """
    from directcoll.resources import check_memory
    from directcoll.topology.paths import bfs_distances

    n = topo.num_compute
    if topo.num_nodes != n or (topo.reverse_link < 0).any():
        return None
    # distances (int64 and scipy's float64), adjacency and three float32 layers, the boolean masks
    check_memory(f"the intersection array of {topo.spec} (dense {n:,} x {n:,} matrices)", 40.0 * n * n)
    dist = bfs_distances(topo, np.arange(n))
    adj = np.zeros((n, n), dtype=np.float32)
    adj[topo.link_src, topo.link_dst] = 1.0  # parallel links count once
    np.fill_diagonal(adj, 0.0)
    diameter = int(dist.max())
    # layer[j][x, y]: neighbours of y at distance j from x (float32 matmul: exact for these small counts)
    layer = {j: (dist == j).astype(np.float32) @ adj for j in (0, 1)}
    b, c = [], []
    for i in range(diameter + 1):
        at_i = dist == i
        if i + 1 <= diameter:
            layer[i + 1] = (dist == i + 1).astype(np.float32) @ adj
        for j, out in ((i - 1, c), (i + 1, b)):
            if j < 0 or j > diameter:
                continue
            vals = np.unique(layer[j][at_i])
            if len(vals) != 1:
                return None
            out.append(int(vals[0]))
        layer.pop(i - 1, None)
    return tuple(b), tuple(c)


# -- Moore bound ---------------------------------------------------------------------------------------------
def moore_bound(d: int, k: int, *, directed: bool = True) -> int:
    """Largest possible number of nodes of a degree-d graph of diameter k.

    Directed (Zhao et al. Def. 9): M_{d,k} = 1 + d + d^2 + ... + d^k. Undirected (bidirectional):
    1 + d * (1 + (d-1) + ... + (d-1)^(k-1)).
    """
    d, k = int(d), int(k)
    if d < 0 or k < 0:
        raise ValueError(f"moore_bound: need d >= 0 and k >= 0, got d={d}, k={k}")
    if directed:
        return sum(d ** i for i in range(k + 1))
    return 1 + d * sum((d - 1) ** i for i in range(k))


def moore_bound_diameter(n: int, d: int, directed: bool = True) -> int:
    """The least diameter any n-node graph of degree d can have by the Moore bound: the least k with
    moore_bound(d, k) >= n. A topology of that diameter is Moore optimal (Zhao et al. Def. 10:
    N > M_{d,k-1} for diameter k).

    Raises:
        ValueError: n < 1, d < 0, or no connected graph exists (n > 1 with d = 0; undirected n > 2 with d = 1).
    """
    n, d = int(n), int(d)
    if n < 1 or d < 0:
        raise ValueError(f"moore_bound_diameter: need n >= 1 and d >= 0, got n={n}, d={d}")
    if n == 1:
        return 0
    if d == 0 or (not directed and d == 1 and n > 2):
        raise ValueError(f"moore_bound_diameter: no connected {'directed' if directed else 'undirected'} graph "
                         f"with n={n} nodes and degree {d}")
    if directed and d == 1:
        return n - 1
    if not directed and d == 2:
        return n // 2
    k = 0
    while moore_bound(d, k, directed=directed) < n:
        k += 1
    return k


def moore_parameters(topo: Topology) -> tuple[int, bool] | None:
    """(d, directed) used for a topology's Moore bound: directed when some link has no reverse link, d the
    largest out-degree of a compute node (parallel links counted, which only weakens the bound). None for
    topologies with switches, to which the bound does not apply."""
    if topo.num_nodes != topo.num_compute:
        return None
    directed = bool(topo.num_links) and bool((topo.reverse_link < 0).any())
    return int(topo.out_degree[: topo.num_compute].max()), directed


def topology_moore_bound(topo: Topology) -> int | None:
    """moore_bound_diameter of a topology (see :func:`moore_parameters`), or None where it does not apply."""
    p = moore_parameters(topo)
    if p is None:
        return None
    try:
        return moore_bound_diameter(topo.num_compute, p[0], directed=p[1])
    except ValueError:
        return None


def is_moore_optimal(topo: Topology, *, directed: bool | None = None) -> bool:
    """True when the topology's diameter equals its Moore-bound diameter (Zhao et al. Def. 10; with a
    bidirectional topology the undirected bound, the T_L** of Table 8, unless ``directed=True``).

    Raises:
        ValueError: a topology with switch nodes.
    """
    from directcoll.topology.metrics import distance_stats

    p = moore_parameters(topo)
    if p is None:
        raise ValueError(f"{topo.spec}: the Moore bound applies to switchless topologies only")
    d, auto = p
    bound = moore_bound_diameter(topo.num_compute, d, directed=auto if directed is None else directed)
    return distance_stats(topo)[0] == bound
