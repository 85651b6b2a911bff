"""The contenders of ``directcoll compare``: which algorithms (family, registry name, variant[, options]) compete on
a topology for a collective (the rules are in :mod:`directcoll.reports.compare`'s docstring).

Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (the grid families); Zhao et al. (NSDI'25) Sec. 8.2-8.3 (the
direct-connect comparison); Basu et al. (HPDC'24) Sec. 5.2 (all-to-all baselines); Kolmakov & Zhang Sec. 10.

>>> from directcoll.topology import parse
>>> [c[0] for c in default_contenders(parse("torus:4x4"))][:3]
['swing', 'swing', 'recursive-doubling']
"""

from __future__ import annotations

import numpy as np

from directcoll.errors import DirectcollError, UnsupportedShapeError
from directcoll.schedule.ir import Collective
from directcoll.topology.model import Topology

#: (family, registry name, variant) compared on grids; the families are what the Swing paper plots.
DEFAULT_CONTENDERS: list[tuple[str, str, str | None]] = [
    ("swing", "swing", "latency"),
    ("swing", "swing", "bandwidth"),
    ("recursive-doubling", "recursive-doubling", "latency"),
    ("recursive-doubling", "recursive-doubling", "bandwidth"),
    ("ring", "ring", None),
    ("bucket", "bucket", None),
]
BFB_CONTENDER: tuple[str, str, str | None] = ("bfb", "bfb", None)
#: topology kinds compared as grids (the Swing paper's networks); every other switchless kind is direct-connect
GRID_KINDS = ("torus", "mesh", "hyperx", "hammingmesh", "ring", "hypercube")
#: BFB joins the grid contenders up to this many ranks: building its schedule dominates the comparison beyond
#: (torus:32x32: 0.17 s -> 0.51 s with BFB; torus:64x64: 0.83 s -> 6.9 s, 8x, so it stays out there)
BFB_TORUS_MAX_RANKS = 1024
#: chunk counts P of the double binary tree compared as variants of one family (Zhao et al. Sec. 8.2 sweep
#: "degrees of pipelining for the DBT baseline")
DBT_CHUNKS = (1, 4, 16, 64)
#: the largest P for which every intermediate version of the generalized allreduce is compared (its union
#: construction tracks ceil(P / 2^(L-r)) shifted reductions of P vectors each)
GENERALIZED_ALL_R_MAX = 1024
#: chunk counts of the pipelined chain compared as variants of one family (broadcast and reduce), as the DBT's
CHAIN_CHUNKS = (1, 4, 16, 64)


#: the non-power-of-two baselines of issue #17, each its own family (letters E and L in the compare legend)
NONPOW2_CONTENDERS: list[tuple[str, str, str | None]] = [
    ("rabenseifner-3-2", "rabenseifner-elimination", None),
    ("swing-libswing", "swing", "libswing"),
]


def nonpow2_contenders(topology: Topology, collective: Collective) -> list[tuple]:
    """The non-power-of-two baselines on a grid whose N is not a power of two: Rabenseifner's allreduce with 3-2
    elimination (allreduce only) and the Swing authors' library construction (skipped, with its reason, where a
    dimension is odd).

    Returns:
        (family, registry name, variant) tuples; [] for N a power of two, a topology without a grid shape, or a
        collective other than allreduce / reduce-scatter / allgather.

    Raises:
        Nothing: reads the topology's shape.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.3 (3-2 elimination) and Sec. 3.2 (odd sizes);
    Rabenseifner & Traeff (EuroPVM/MPI 2004).

    >>> from directcoll.topology import parse
    >>> [c[0] for c in nonpow2_contenders(parse("torus:6x6"), Collective.ALLREDUCE)]
    ['rabenseifner-3-2', 'swing-libswing']
    """
    n = topology.num_compute
    if topology.shape is None or n & (n - 1) == 0 or collective is Collective.ALLTOALL:
        return []
    if collective is Collective.ALLREDUCE:
        return list(NONPOW2_CONTENDERS)
    return [c for c in NONPOW2_CONTENDERS if c[1] != "rabenseifner-elimination"]


def generalized_contenders(p: int, collective: Collective) -> list[tuple]:
    """Kolmakov & Zhang's allreduce for non-power-of-two P (for a power of two it is recursive halving and
    doubling): every r = 0..ceil(log2 P) up to GENERALIZED_ALL_R_MAX ranks, r = 0 beyond.

    Returns:
        (family, registry name, variant, {"r": r}) tuples; [] for P < 3 or a power of two; only r = 0 for
        reduce-scatter / allgather.

    Raises:
        Nothing: arithmetic on P.

    Source: Kolmakov & Zhang Sec. 7-9 (r = 0 .. ceil(log2 P)); Sec. 7-8 (power-of-two P: recursive halving and
    doubling as special cases).

    >>> [c[3]["r"] for c in generalized_contenders(6, Collective.ALLREDUCE)]
    [0, 1, 2, 3]
    """
    if p & (p - 1) == 0 or p < 3:
        return []
    if collective is not Collective.ALLREDUCE:
        return [("generalized", "generalized", "bandwidth", {"r": 0})]
    top = max(1, int(np.ceil(np.log2(p))))
    rs = range(top + 1) if p <= GENERALIZED_ALL_R_MAX else range(1)
    return [("generalized", "generalized", "bandwidth" if r == 0 else "latency" if r == top else None, {"r": r})
            for r in rs]


def is_direct_connect(topology: Topology) -> bool:
    """Whether ``topology`` is compared as a direct-connect network (Zhao et al.'s contenders): no switch
    nodes and a kind outside :data:`GRID_KINDS`.

    Raises:
        Nothing: reads the topology.

    Source: Zhao et al. (NSDI'25) Sec. 2.1 (direct-connect fabrics) and Sec. 8.2 (their baselines).

    >>> from directcoll.topology import parse
    >>> is_direct_connect(parse("circulant:8:1,2")), is_direct_connect(parse("torus:4x4"))
    (True, False)
    """
    return topology.num_nodes == topology.num_compute and topology.kind not in GRID_KINDS


def grid_embeds(topology: Topology) -> bool:
    """Whether the torus of the topology's shape is a subgraph of it: every compute node links to its +-1
    neighbours (with wrap-around) in every dimension of ``topology.shape``. Then Swing's and bucket's
    distance-1 peers are neighbours and their distance-2^k peers are as near as on that torus (e.g. any
    circulant with offset 1, Hamming graphs, complete graphs). False for topologies without a shape.

    Raises:
        Nothing: reads the topology.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 4.1 (peers at distance delta(s) along torus dimensions).

    >>> from directcoll.topology import parse
    >>> grid_embeds(parse("complete:4")), grid_embeds(parse("kautz:2:3"))
    (True, False)
    """
    shape = topology.shape
    if shape is None:
        return False
    n = topology.num_compute
    inside = topology.link_dst < n
    have = np.unique(topology.link_src[inside] * n + topology.link_dst[inside])
    nodes = np.arange(n, dtype=np.int64)
    coords = topology.coords(nodes)
    for dim, size in enumerate(shape):
        for sign in ((1, -1) if size > 2 else (1,) if size == 2 else ()):
            moved = coords.copy()
            moved[:, dim] += sign
            if not np.isin(nodes * n + topology.node_at(moved), have).all():
                return False
    return True


def dbt_contenders(collective=Collective.ALLREDUCE, chunks=DBT_CHUNKS) -> list[tuple]:
    """The double binary tree at every chunk count of ``chunks`` (allreduce only; [] otherwise).

    Returns:
        (family, registry name, None, {"chunks": P}) tuples.

    Raises:
        ScheduleError: an unknown collective name.

    Source: Zhao et al. (NSDI'25) Sec. 8.2 (degrees of pipelining for the DBT baseline).

    >>> [c[3]["chunks"] for c in dbt_contenders()]
    [1, 4, 16, 64]
    """
    if Collective.parse(collective) is not Collective.ALLREDUCE:
        return []
    return [("double-binary-tree", "double-binary-tree", None, {"chunks": int(p)}) for p in chunks]


#: the all-to-all baselines of Basu et al. Sec. 5.2 compared by default, in column order (``dor`` only where
#: :func:`directcoll.algorithms.alltoall.dor.dor_alltoall` serves the topology; ``mcf`` when registered)
ALLTOALL_CONTENDERS: list[tuple[str, str, str | None]] = [
    ("direct", "direct", None),
    ("ewsp", "ewsp", None),
    ("sssp", "sssp", None),
    ("dor", "dor", None),
]


def mcf_contenders() -> list[tuple]:
    """The all-to-all schedules of the algorithm registered as ``mcf``, one per variant (family ``mcf``); [] when
    no such algorithm is registered or it has no all-to-all.

    Raises:
        Nothing: a missing registration gives [].

    Source: Basu et al. (HPDC'24) Sec. 3.1.3-3.2.1 (tsMCF, pMCF, MCF-extP).

    >>> [c[2] for c in mcf_contenders()]
    ['timestepped', 'path', 'extp']
    """
    from directcoll.registry import get

    try:
        alg = get("mcf")
    except UnsupportedShapeError:
        return []
    if "alltoall" not in alg.collectives:
        return []
    return [("mcf", alg.name, v) for v in alg.variants or (None,)]


def alltoall_contenders(topology: Topology) -> list[tuple]:
    """All-to-all contenders: :data:`ALLTOALL_CONTENDERS` (DOR only on the grids it serves) and
    :func:`mcf_contenders`.

    Returns:
        (family, registry name, variant) tuples, in column order.

    Raises:
        Nothing: filters constant lists.

    Source: Basu et al. (HPDC'24) Sec. 5.2 (baselines DOR, SSSP, EwSP; direct as in NCCL / Open MPI).

    >>> from directcoll.topology import parse
    >>> [c[0] for c in alltoall_contenders(parse("ring:4"))][:4]
    ['direct', 'ewsp', 'sssp', 'dor']
    """
    from directcoll.algorithms.alltoall.dor import DOR_KINDS

    grid = topology.kind in DOR_KINDS and topology.shape is not None
    return [c for c in ALLTOALL_CONTENDERS if c[0] != "dor" or grid] + mcf_contenders()


def rooted_contenders(topology: Topology) -> list[tuple]:
    """The broadcast and reduce contenders: binomial tree, Swing (latency tree; bandwidth scatter + allgather), the
    pipelined chain at every chunk count of :data:`CHAIN_CHUNKS`, and BFB (latency, bandwidth) on switchless
    topologies (grids up to :data:`BFB_TORUS_MAX_RANKS` ranks).

    Returns:
        (family, registry name, variant[, build options]) tuples.

    Raises:
        Nothing: reads the topology's size and kind.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.1 and 6; Zhao et al. (NSDI'25) Sec. 6.1.

    >>> from directcoll.topology import parse
    >>> [c[0] for c in rooted_contenders(parse("torus:4x4"))][:3]
    ['binomial', 'swing-tree', 'swing-tree']
    """
    out: list[tuple] = [("binomial", "binomial", None), ("swing-tree", "swing-tree", "latency"),
                        ("swing-tree", "swing-tree", "bandwidth"),
                        *[("chain", "chain", None, {"chunks": c}) for c in CHAIN_CHUNKS]]
    n = topology.num_compute
    if topology.num_nodes == n and (is_direct_connect(topology) or n <= BFB_TORUS_MAX_RANKS):
        out += [("bfb-tree", "bfb-tree", "latency"), ("bfb-tree", "bfb-tree", "bandwidth")]
    return out


def with_root(contenders: list[tuple], root: int | None) -> list[tuple]:
    """``contenders`` with the build option ``root`` added (broadcast and reduce; None: unchanged).

    Returns:
        (family, registry name, variant, build options) tuples.

    Raises:
        Nothing: rebuilds the tuples.

    Source: MPI 4.1 standard, Ch. 6 (the root of MPI_Bcast and MPI_Reduce).

    >>> with_root([("binomial", "binomial", None)], 3)
    [('binomial', 'binomial', None, {'root': 3})]
    """
    if root is None:
        return list(contenders)
    return [(*c[:3], {**(c[3] if len(c) > 3 else {}), "root": root}) for c in contenders]


def default_contenders(topology: Topology, collective="allreduce") -> list[tuple]:
    """The contenders :func:`compare` times when none are given (module docstring).

    Grids: :data:`DEFAULT_CONTENDERS`, plus BFB when the topology has no switches and at most
    :data:`BFB_TORUS_MAX_RANKS` ranks. Direct-connect topologies (:func:`is_direct_connect`): BFB, the expanded
    schedule when the spec applies expansion operators (Zhao et al. Sec. 5), ring,
    shifted ring, double binary tree (:data:`DBT_CHUNKS`), recursive doubling (latency, bandwidth), and Swing
    (latency, bandwidth) and bucket where :func:`grid_embeds`. Both: :func:`generalized_contenders`.

    All-to-all: :func:`alltoall_contenders`. Broadcast and reduce: :func:`rooted_contenders`.

    Returns:
        (family, registry name, variant[, build options]) tuples, in column order.

    Raises:
        ScheduleError: an unknown collective name.

    Source: Swing (NSDI'24) Sec. 5 (grids), Zhao et al. (NSDI'25) Sec. 8.2-8.3 (direct-connect), Basu et al.
    (HPDC'24) Sec. 5.2 (all-to-all), Kolmakov & Zhang Sec. 10 (non-power-of-two P).

    >>> from directcoll.topology import parse
    >>> [c[0] for c in default_contenders(parse("torus:4x4"))]
    ['swing', 'swing', 'recursive-doubling', 'recursive-doubling', 'ring', 'bucket', 'bfb']
    """
    coll = Collective.parse(collective)
    n = topology.num_compute
    if coll is Collective.ALLTOALL:
        return alltoall_contenders(topology)
    if coll.rooted:
        return rooted_contenders(topology)
    if is_direct_connect(topology):
        out: list[tuple] = [BFB_CONTENDER, *([("expansion", "expansion", None)] if _is_expansion(topology) else []),
                            ("ring", "ring", None), ("shifted-ring", "shifted-ring", None),
                            *dbt_contenders(coll), *DEFAULT_CONTENDERS[2:4]]
        if grid_embeds(topology):
            out += [*DEFAULT_CONTENDERS[:2], ("bucket", "bucket", None)]
    else:
        out = list(DEFAULT_CONTENDERS)
        if topology.num_nodes == n and n <= BFB_TORUS_MAX_RANKS:
            out.append(BFB_CONTENDER)
        out += nonpow2_contenders(topology, coll)
    return out + generalized_contenders(n, coll)


def _is_expansion(topology: Topology) -> bool:
    """The topology's spec applies an expansion operator (line, degree, product, power, bidir)."""
    from directcoll.cost.expansions import LEAVES
    from directcoll.topology.grammar import parse_tree

    try:
        return parse_tree(topology.spec).op not in LEAVES
    except DirectcollError:
        return False


def family_contenders(name: str, topology: Topology, collective="allreduce") -> list[tuple]:
    """Contenders for one algorithm asked for by name (``directcoll compare --algorithms``): the generalized
    allreduce at every r, the double binary tree at every chunk count of :data:`DBT_CHUNKS`, else one per
    registered variant (Swing's libswing variant in its own family, as in :data:`NONPOW2_CONTENDERS`).

    Raises:
        UnsupportedShapeError: an unknown algorithm name (the message lists the registered ones).
        ScheduleError: an unknown collective name.

    Returns:
        (family, registry name, variant[, options]) tuples.

    Source: the registry's variants (DESIGN.md, "Layers"); Zhao et al. (NSDI'25) Sec. 8.2 for the DBT chunk sweep.

    >>> from directcoll.topology import parse
    >>> family_contenders("swing", parse("torus:4x4"))
    [('swing', 'swing', 'bandwidth'), ('swing', 'swing', 'latency'), ('swing-libswing', 'swing', 'libswing')]
    """
    from directcoll.registry import get

    alg = get(name)
    coll = Collective.parse(collective)
    if alg.name == "generalized":
        return generalized_contenders(topology.num_compute, coll) or [
            ("generalized", "generalized", v) for v in ("bandwidth", "latency")]
    if alg.name == "double-binary-tree":
        return dbt_contenders(Collective.ALLREDUCE)  # compare() skips them with the reason on other collectives
    if alg.name == "chain":
        return [("chain", "chain", None, {"chunks": c}) for c in CHAIN_CHUNKS]
    own = {c[1:]: c[0] for c in NONPOW2_CONTENDERS}  # baselines with a family of their own (the libswing variant)
    return [(own.get((alg.name, v), alg.name), alg.name, v) for v in alg.variants or (None,)]
