"""Random expanders, seeded so that a spec names one graph: Jellyfish and Xpander (Basu et al. Sec. 5.4, Fig. 10).

The module is not called ``random`` so that it never shadows the standard library's module of that name.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

from directcoll.errors import SpecError
from directcoll.resources import check_work
from directcoll.topology.families.base import need_int, sized, undirected
from directcoll.topology.model import DEFAULT_LINK_BANDWIDTH, DEFAULT_LINK_LATENCY, Topology
from directcoll.topology.sizes import BYTES_PER_PYTHON_EDGE, Size, as_float, brief_int, graph_size

__all__ = ["MAX_DRAWS", "MAX_DRAW_WORK", "MAX_SEED", "jellyfish", "xpander"]

#: A seeded draw that comes out disconnected is redrawn with the next seed, at most this many times.
MAX_DRAWS = 100
#: Most work the random draws of one Jellyfish or Xpander may take, in units of N d (d + 60) per draw
#: (rustworkx's sampler grows with N d^2, the edge list with N d), about a minute; a degree-2 graph is a union of
#: cycles, connected only by luck, so it counts :data:`MAX_DRAWS` draws.
MAX_DRAW_WORK = 4e9
#: Largest seed of a draw: a redrawn seed (seed + MAX_DRAWS) stays a 64-bit integer (rustworkx's seeds).
MAX_SEED = 2**63 - 1 - MAX_DRAWS
#: rustworkx's random regular graph and its edge list, per undirected edge (jellyfish).
BYTES_PER_RUSTWORKX_EDGE = 60


def _check_draw_work(spec: str, n: int, d: int, per_link: int) -> None:
    draws = MAX_DRAWS if d == 2 else 1
    check_work(f"topology {spec} ({draws} draw{'s' if draws > 1 else ''})", float(n) * d * per_link * draws,
               MAX_DRAW_WORK, "sampler steps")


def _connected(n: int, edges: np.ndarray) -> bool:
    adj = csr_matrix((np.ones(len(edges)), (edges[:, 0], edges[:, 1])), shape=(n, n))
    return connected_components(adj, directed=False)[0] == 1


def _draw_connected(spec: str, n: int, seed: int, draw) -> tuple[np.ndarray, int]:
    for k in range(MAX_DRAWS):
        edges = draw(seed + k)
        if _connected(n, edges):
            return edges, seed + k
    raise SpecError(f"{spec}: {MAX_DRAWS} draws from seed {seed} on were all disconnected; pick a larger degree")


def _jellyfish_size(n: int, d: int, seed: int = 0) -> Size:
    return graph_size(n, n * d, d, extra=BYTES_PER_RUSTWORKX_EDGE * as_float(n * d) / 2)


@sized(_jellyfish_size)
def jellyfish(n: int, d: int, seed: int = 0, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
              link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Jellyfish (Singla et al., NSDI'12): a uniformly random simple d-regular graph on N nodes, seeded.

    Bidirectional links, drawn by ``rustworkx.random_regular_graph`` with the seed, so a spec names one graph.
    A draw that is disconnected (rare for d >= 3) is replaced by the draw of seed + 1, and so on;
    ``params["seed_used"]`` says which seed the graph came from. Basu et al. (Sec. 5.4, Fig. 10) compare it with
    generalized Kautz, Xpander and 2D tori at d = 4.

    rustworkx's sampler slows down without bound as d nears N (d = 180 of N = 200 takes minutes), so d is at
    most N/2, and draws that would take longer than about a minute (:data:`MAX_DRAW_WORK`) are refused.

    Raises:
        SpecError: d < 2, n <= d, n * d odd, d > n / 2, or no connected draw in :data:`MAX_DRAWS` seeds.
        ResourceError: the draws would take too long (:data:`MAX_DRAW_WORK`).

    >>> jellyfish(10, 3).out_degree.tolist()
    [3, 3, 3, 3, 3, 3, 3, 3, 3, 3]
    """
    import rustworkx as rx

    d = need_int("jellyfish", "d", d, 2)
    n = need_int("jellyfish", "N", n, 1)
    seed = need_int("jellyfish", "seed", seed, 0)
    if seed > MAX_SEED:
        raise SpecError(f"jellyfish: seed must lie in 0..{MAX_SEED:,} (rustworkx takes 64-bit seeds, redraws add up "
                        f"to {MAX_DRAWS}), got {brief_int(seed)}")
    spec = f"jellyfish:{n}:{d}:{seed}"
    if n <= d or (n * d) % 2:
        raise SpecError(f"{spec}: a simple d-regular graph needs N > d and N * d even, got N={n}, d={d}")
    if 2 * d > n:
        raise SpecError(f"{spec}: d must lie in 2..N/2 = 2..{n // 2} (rustworkx's sampler stalls near d = N), "
                        f"got d={d}")
    _check_draw_work(spec, n, d, d + 60)

    def draw(s: int) -> np.ndarray:
        return np.array(rx.random_regular_graph(n, d, seed=s).edge_list(), dtype=np.int64).reshape(-1, 2)

    edges, used = _draw_connected(spec, n, seed, draw)
    return undirected("jellyfish", spec, n, edges, link_bandwidth, link_latency,
                      params={"N": n, "d": d, "seed": seed, "seed_used": used})


def _xpander_size(n: int, d: int, seed: int = 0) -> Size:
    return graph_size(n, n * d, d, extra=25 * as_float(n * d) + BYTES_PER_PYTHON_EDGE * as_float(d * (d + 1)) / 2)


@sized(_xpander_size)
def xpander(n: int, d: int, seed: int = 0, *, link_bandwidth: float = DEFAULT_LINK_BANDWIDTH,
            link_latency: float = DEFAULT_LINK_LATENCY) -> Topology:
    """Xpander (Valadarsky et al., CoNEXT'16): a random L-lift of K_{d+1}, N = L (d + 1) nodes, seeded.

    Node (a, i) = a * L + i for a in K_{d+1} and i in [0, L); every edge {a, b} of K_{d+1} becomes the perfect
    matching (a, i) -- (b, pi_ab(i)) for an independent uniformly random permutation pi_ab (numpy
    ``default_rng(seed)``), so the graph is simple and d-regular. Disconnected draws are redrawn as in
    :func:`jellyfish`. L = 1 is K_{d+1} itself. Basu et al. Sec. 5.4, Fig. 10.

    Raises:
        SpecError: d < 2, n not a multiple of d + 1, or no connected draw in :data:`MAX_DRAWS` seeds.
        ResourceError: the draws would take too long (:data:`MAX_DRAW_WORK`; degree 2 counts every draw).

    >>> xpander(12, 3).params["lift"]
    3
    """
    d = need_int("xpander", "d", d, 2)
    n = need_int("xpander", "N", n, 1)
    seed = need_int("xpander", "seed", seed, 0)
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

    edges, used = _draw_connected(spec, n, seed, draw)
    return undirected("xpander", spec, n, edges, link_bandwidth, link_latency,
                      params={"N": n, "d": d, "seed": seed, "seed_used": used, "lift": lift})
