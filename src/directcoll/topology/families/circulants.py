"""Circulant families: rings, circulant graphs C(N, {a_1..a_k}) (Zhao et al. Def. 18, App. F.4), Theorem 22's
minimum-diameter degree-4 circulant and TopoOpt's ShiftedRing (Zhao et al. Sec. 8.2 baseline).

All are Cayley graphs of Z_N (``port_offsets`` kept, translation-invariant routing); the unidirectional forms
(``ring:N:uni``, ``circulant:...:uni``) are digraphs.
"""

from __future__ import annotations

import math

import numpy as np

from directcoll.errors import SpecError
from directcoll.topology.families.base import cayley, check_shape, need_int, sized
from directcoll.topology.model import DEFAULT_LINK_BANDWIDTH, DEFAULT_LINK_LATENCY, Topology
from directcoll.topology.sizes import brief, cayley_size

__all__ = ["circulant", "circulant_opt4", "ring", "shifted_ring", "shifted_ring_stride", "theorem22_m"]


@sized(lambda n, bidirectional=True: cayley_size(n, 2 if bidirectional else 1, 1))
def ring(n: int, *, bidirectional: bool = True, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
         link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Ring of n nodes: bidirectional (the 1D torus, 2 ports) or unidirectional (i -> i+1, 1 port).

    The bidirectional ring is the torus of shape (n,); the unidirectional one is Zhao et al.'s UniRing (the
    directed circulant C(n, {1})). Links of node i: to i + 1, then (bidirectional) to i - 1.

    Parameters
    ----------
    n : int
        The number of nodes (>= 2).
    bidirectional : bool, default True
        Links both ways (2 ports per node); False: i -> i+1 only (``ring:N:uni``).
    link_bandwidth : float, default 5e10
        Every directed link's bandwidth in bytes/s (400 Gb/s).
    link_latency : float, default 1e-7
        Every directed link's latency in seconds (100 ns).

    Returns
    -------
    Topology
        n compute nodes, shape (n,).

    Raises
    ------
    SpecError
        n < 2.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.1 (ring); Zhao et al. (NSDI'25) Def. 18 (C(n, {1})) and
    Table 4 (UniRing / BiRing).

    Examples
    --------
    >>> ring(4).link_dst.tolist(), ring(4, bidirectional=False).spec
    ([1, 3, 2, 0, 3, 1, 0, 2], 'ring:4:uni')
    """
    (n,) = check_shape("ring", (n,))
    if bidirectional:
        offsets = np.array([[1], [-1]])
        spec = f"ring:{n}"
    else:
        offsets = np.array([[1]])
        spec = f"ring:{n}:uni"
    return cayley("ring", spec, (n,), offsets, link_bandwidth, link_latency, {"bidirectional": bidirectional})


def theorem22_m(n: int) -> int:
    """m = ceil((-1 + sqrt(2n - 1)) / 2) of Zhao et al. Theorem 22 (Boesch & Wang 1985), exactly.

    Computed in integer arithmetic: the least m >= 0 with (2m + 1)^2 >= 2n - 1.

    Raises:
        Nothing: integer arithmetic (n >= 1 expected; n = 0 would make math.isqrt raise ValueError).

    >>> theorem22_m(1024)
    23
    """
    m = max(0, (math.isqrt(2 * n - 1) - 1) // 2)
    while (2 * m + 1) ** 2 < 2 * n - 1:
        m += 1
    return m


@sized(lambda n, offsets, bidirectional=True: cayley_size(n, len(offsets) * (2 if bidirectional else 1), 1))
def circulant(n: int, offsets, *, bidirectional: bool = True, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
              link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Circulant graph C(N, {a_1..a_k}) (Zhao et al. Def. 18): node i linked to i +- a_1, ..., i +- a_k (mod N).

    Bidirectional: 2k ports per node, port 2j to i + a_j and port 2j+1 to i - a_j (an offset a = n/2 or two
    offsets a, n - a give parallel links, as in the paper's multiedge construction). Unidirectional
    (``bidirectional=False``, the directed circulant of Fig. 3): k ports, i -> i + a_j. Cayley graph of Z_n.
    Connected iff gcd(n, a_1, ..., a_k) = 1 (Meijer; Monakhova). Offsets (any integers, negative ones too from
    Python) are reduced modulo n.

    Raises:
        SpecError: n < 2, no offsets, an offset that is a multiple of n, or gcd(n, a_1..a_k) > 1.

    >>> circulant(16, [3, 4]).spec, circulant(16, [3, 4], bidirectional=False).num_links
    ('circulant:16:3,4', 32)
    """
    n = need_int("circulant", "N", n, 2)
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
        raise SpecError(f"circulant:{n}: offsets {brief(offs)} leave the graph disconnected: "
                        f"gcd(N, a_1..a_k) = {g}, must be 1")
    signs = (1, -1) if bidirectional else (1,)
    gens = np.array([[s * a] for a in offs for s in signs], dtype=np.int64)
    spec = f"circulant:{n}:{','.join(map(str, offs))}" + ("" if bidirectional else ":uni")
    return cayley("circulant", spec, (n,), gens, link_bandwidth, link_latency,
                  {"offsets": tuple(offs), "bidirectional": bidirectional})


@sized(lambda n: cayley_size(n, 4, 1))
def circulant_opt4(n: int, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
                   link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Minimum-diameter degree-4 circulant C(N, {m, m+1}) of Zhao et al. Theorem 22 (Boesch & Wang, IEEE TCAS 1985).

    For n > 6 and m = ceil((-1 + sqrt(2n - 1)) / 2) (:func:`theorem22_m`), C(n, {m, m+1}) has diameter m, the
    least diameter of any C(n, {a_1, a_2}). Its spec is the explicit ``circulant:n:m,m+1``;
    ``params["theorem22_diameter"]`` = m.

    Raises:
        SpecError: n <= 6 (the theorem needs n > 6).

    >>> circulant_opt4(100).spec
    'circulant:100:7,8'
    """
    n = need_int("circulant opt4", "N", n, 1)
    if n <= 6:
        raise SpecError(f"circulant:{n}:opt4: Theorem 22 needs N > 6, got {n}")
    m = theorem22_m(n)
    topo = circulant(n, (m, m + 1), link_bandwidth=link_bandwidth, link_latency=link_latency)
    topo.params["theorem22_diameter"] = m
    return topo


def shifted_ring_stride(n: int) -> int:
    """The stride s of the second ring of :func:`shifted_ring`: the s <= n/2 nearest n/2 with gcd(s, n) = 1.

    TopoOpt (Wang et al., NSDI'23) builds its rings from strides coprime to n (its TotientPerms); which stride
    its degree-4 "ShiftedRing" uses is not stated in Zhao et al. We take the one nearest n/2 (s and n - s give
    the same circulant): it reproduces the all-to-all time of Zhao et al.'s Table 4 caption exactly (C(1024,
    {1, 511}) has mean distance 128.0, and 128.0 x 1 MiB / 100 Gb/s = 10738 us). n in {2, 3, 4, 6} have no
    coprime stride other than 1; there s = 1 and the two rings coincide (parallel links).

    Raises:
        SpecError: n < 2.

    >>> shifted_ring_stride(1024), shifted_ring_stride(6)
    (511, 1)
    """
    n = need_int("shiftedring", "N", n, 2)
    half = n // 2
    for delta in range(half):
        if math.gcd(half - delta, n) == 1:
            return half - delta
    return 1  # not reached: gcd(1, n) = 1


@sized(lambda n, stride=None: cayley_size(n, 4, 1))
def shifted_ring(n: int, stride: int | None = None, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
                 link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """TopoOpt's ShiftedRing C(N, {1, s}): two bidirectional rings, one of stride s (Zhao et al. Sec. 8.2 baseline).

    The superposition of two bidirectional rings on 0..n-1, one visiting 0, 1, ..., n-1 and one with stride s
    (0, s, 2s, ... mod n), i.e. the circulant C(n, {1, s}) of :func:`circulant`.

    Size: n nodes, degree 4 (ports: +1, -1, +s, -s; s = 1 or s = n/2 gives parallel links). Its spec is the
    explicit ``circulant:n:1,s``; ``params["stride"]`` = s.

    Args:
        n: number of nodes, >= 2.
        stride: s, coprime to n; None picks :func:`shifted_ring_stride` (nearest n/2).

    Raises:
        SpecError: n < 2, or a stride that is not an integer coprime to n.

    >>> shifted_ring(16).spec
    'circulant:16:1,7'
    """
    n = need_int("shiftedring", "N", n, 2)
    s = shifted_ring_stride(n) if stride is None else need_int("shiftedring", "stride", stride, 1)
    if math.gcd(s, n) != 1:
        raise SpecError(f"shiftedring:{n}: stride {s} must be coprime to N={n} (gcd {math.gcd(s, n)}), or the "
                        "second ring does not visit every node")
    s %= n
    s = min(s, n - s) or 1
    topo = circulant(n, (1, s), link_bandwidth=link_bandwidth, link_latency=link_latency)
    topo.params["stride"] = s
    return topo
