"""The algorithm registry: every algorithm the project builds, listed explicitly for the CLI, comparisons, runtime.

The registry sits above :mod:`directcoll.algorithms` and :mod:`directcoll.synthesis` (it imports both; neither
imports it), so adding an algorithm is two steps: write its builder ``build(topology, collective, *, variant,
ports, **options) -> Schedule`` in its module, and add its :class:`Algorithm` entry to :data:`ALGORITHMS` below.

Source: docs/architecture.md, "The layers, bottom up"; each entry's ``summary`` names its paper and section.

>>> get("swing").collectives
('allreduce', 'reduce_scatter', 'allgather')
>>> build("ring", "ring:4", "allgather").num_steps
3
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from directcoll.algorithms import (
    binomial,
    bucket,
    chain,
    elimination,
    generalized,
    recursive_doubling,
    ring,
    swing,
    tree,
)
from directcoll.algorithms.alltoall import direct, dor, ewsp, ilp, sssp
from directcoll.errors import UnsupportedShapeError
from directcoll.schedule.ir import Collective, Schedule
from directcoll.schedule.pattern import StepPattern, pattern_of
from directcoll.synthesis import bfb
from directcoll.synthesis import expansions as synth_expansions
from directcoll.synthesis.mcf import schedules as mcf_schedules
from directcoll.topology.model import Topology
from directcoll.topology.spec import parse


@dataclass(frozen=True)
class Algorithm:
    """An entry of the registry.

    ``build(topology, collective, *, variant, ports)`` returns a Schedule or raises UnsupportedShapeError
    with a message saying what the algorithm serves.

    Attributes:
        name: the registry name (``"swing"``); aliases: other accepted names (``"rd"``).
        build: the builder; pattern: an optional step-pattern builder equal to ``pattern_of(build(...))``;
            pattern_bytes: the memory that pattern builder needs.
        collectives, variants: what it implements.
        topologies, summary: one line each, for ``directcoll algorithms`` (the summary cites the paper).
        order, order_shapes: where its reductions keep rank order (non-commutative operators; :func:`order_preserving`,
            :func:`order_table`), a predicate of the topology and the same in words; None: commutative only.

    Raises:
        Nothing: a frozen record; its ``build`` raises what its module documents.

    Source: docs/architecture.md, "The layers, bottom up" (registry above algorithms/ and synthesis/).

    >>> get("kolmakov").name
    'generalized'
    """

    name: str
    build: Callable[..., Schedule]
    collectives: tuple[str, ...]
    variants: tuple[str, ...]
    topologies: str
    summary: str
    aliases: tuple[str, ...] = ()
    #: optional ``pattern(topology, collective, *, variant, ports) -> StepPattern`` for algorithms whose full
    #: schedule is too large to time (ring, bucket, Swing, BFB): the family's pattern builder, equal to
    #: pattern_of(build(...)) (both are made from one description of the family's steps)
    pattern: Callable[..., StepPattern] | None = None
    #: optional ``pattern_bytes(topology, collective, variant, ports) -> float | None``: the memory ``pattern``
    #: needs (None where it builds the full schedule; :func:`estimate_bytes` then sizes that)
    pattern_bytes: Callable[..., float | None] | None = None
    #: ``order(topology) -> bool``: whether its allreduce and reduce-scatter reduce in rank order 0..N-1 on that
    #: topology (so a non-commutative operator is correct; :mod:`directcoll.verify.order`); None: commutative
    #: operators only, except N <= 2. Checked against the verifier by tests/test_order.py.
    order: Callable[[Topology], bool] | None = None
    #: the shapes on which ``order`` holds, in words (the table of docs/algorithms.md)
    order_shapes: str = ""

    def to_dict(self) -> dict:
        """The entry as a JSON-serializable dict (builders left out). Raises: Nothing.
        Source: docs/architecture.md, "Engines, runtimes and scale" (machine-readable output).
        """
        return {"name": self.name, "collectives": list(self.collectives), "variants": list(self.variants),
                "topologies": self.topologies, "summary": self.summary, "aliases": list(self.aliases),
                "order_preserving": self.order_shapes or "N <= 2"}


def _pow2(n: int) -> bool:
    return n >= 1 and not n & (n - 1)


def _rd_order(topology: Topology) -> bool:
    """Recursive doubling keeps rank order on a 1D grid of 2^k or 2^k + 1 ranks: the butterfly pairs adjacent rank
    ranges, and the one extra rank of 2^k + 1 folds into its neighbour 2^k - 1 (with more, a folds into a - (d - 2^k),
    not adjacent)."""
    n = topology.num_compute
    return len(topology.shape or ()) == 1 and (_pow2(n) or _pow2(n - 1))


def _bfb_order(topology: Topology) -> bool:
    """BFB's breadth-first trees keep rank order on a line (a 1D mesh) and on a 3-ring (every rank a neighbour)."""
    shape = topology.shape or ()
    return len(shape) == 1 and (not topology.wraps or topology.num_compute <= 3)


_RD_SHAPES = "1D grids (ring, torus:N, mesh:N) of 2^k or 2^k + 1 ranks"


def _line_order(topology: Topology) -> bool:
    """Breadth-first trees on a line (a 1D mesh) join adjacent rank ranges from any root."""
    return len(topology.shape or ()) == 1 and not topology.wraps


def _path_order(topology: Topology) -> bool:
    """The chain's path is the rank order (1D shapes and shapeless topologies), so its reduce joins adjacent ranks."""
    return len(topology.shape or ()) <= 1


#: Every algorithm by name, in the order listed.
ALGORITHMS: dict[str, Algorithm] = {alg.name: alg for alg in (
    Algorithm(
        name="ring",
        build=ring.build_ring,
        pattern=ring.ring_pattern,
        collectives=("allreduce", "reduce_scatter", "allgather"),
        variants=ring.VARIANTS,
        topologies="any (snake ring over the grid shape, else ranks 0..N-1); hamiltonian: 2D tori r x c with "
                   "r = c*k and gcd(r, c-1) = 1 (either orientation)",
        summary="ring reduce-scatter + allgather, 1, 2 or 4 concurrent rings (Swing paper Sec. 2.3.1)",
    ),
    Algorithm(
        name="shifted-ring",
        build=ring.build_shifted_ring,
        pattern=ring.shifted_ring_pattern,
        collectives=("allreduce", "reduce_scatter", "allgather"),
        variants=ring.SHIFTED_VARIANTS,
        aliases=("shiftedring",),
        topologies="any (ring 1: the ring order; ring 2: stride s coprime to N, the topology's s on C(N, {1, s}))",
        summary="TopoOpt's shifted ring: two bidirectional rings (stride 1 and s) on halves of the vector "
                "(Zhao et al. Sec. 8.2 baseline)",
    ),
    Algorithm(
        name="bucket",
        build=bucket.build_bucket,
        pattern=bucket.bucket_pattern,
        collectives=("allreduce", "reduce_scatter", "allgather"),
        variants=bucket.VARIANTS,
        topologies="any topology with a grid shape (torus, mesh, ring, hypercube, hyperx, hammingmesh); "
                   "designed for D-dimensional tori",
        summary="multiport bucket: 2D concurrent per-dimension ring reduce-scatters + allgathers "
                "(Swing paper Sec. 2.3.4, synchronous dimension switching Sec. 5.2)",
    ),
    Algorithm(
        name="swing",
        build=swing.swing, pattern=swing.swing_pattern, pattern_bytes=swing.pattern_bytes,
        collectives=("allreduce", "reduce_scatter", "allgather"),
        variants=swing.VARIANTS,
        topologies="any grid topology (torus, mesh, HyperX, HammingMesh, hypercube, ring) of any shape and size; "
                   "other topologies as a 1D ring of their ranks",
        summary="Swing (De Sensi et al. NSDI'24): short-cutting butterfly, multiport plain + mirrored",
    ),
    Algorithm(
        name="recursive-doubling",
        order=_rd_order,
        order_shapes=_RD_SHAPES,
        build=recursive_doubling.recursive_doubling,
        collectives=("allreduce", "reduce_scatter", "allgather"),
        variants=recursive_doubling.VARIANTS,
        topologies=recursive_doubling._GRID,
        aliases=("recdoub", "rd"),
        summary="torus-optimized recursive doubling: latency-optimal (default) or bandwidth-optimized",
    ),
    Algorithm(
        name="rabenseifner",
        order=_rd_order,
        order_shapes=_RD_SHAPES,
        build=recursive_doubling._rabenseifner,
        collectives=("allreduce", "reduce_scatter", "allgather"),
        variants=("bandwidth",),
        topologies=recursive_doubling._GRID,
        summary="bandwidth-optimized recursive doubling: recursive-halving reduce-scatter + allgather",
    ),
    Algorithm(
        name="rabenseifner-elimination",
        order=lambda topology: True,  # its units are contiguous rank ranges, on every N
        order_shapes="any N (ranks in flattened order)",
        build=elimination.rabenseifner_elimination,
        collectives=("allreduce", "reduce_scatter", "allgather"),
        variants=elimination.VARIANTS,
        aliases=("rabenseifner-3-2", "3-2-elimination"),
        topologies="any N >= 2 on the flattened ranks; reduce_scatter / allgather only for N a power of two",
        summary="Rabenseifner's allreduce with 3-2 elimination for non-power-of-two N (Rabenseifner & Traeff 2004; "
                "Swing paper Sec. 2.3.3)",
    ),
    Algorithm(
        name="mirrored-recursive-doubling",
        build=recursive_doubling._mirrored,
        collectives=("allreduce", "reduce_scatter", "allgather"),
        variants=recursive_doubling.VARIANTS,
        topologies=recursive_doubling._GRID,
        summary="recursive doubling with D plain + D mirrored collectives on all 2D ports (Swing Sec. 5.1)",
    ),
    Algorithm(
        name="double-binary-tree",
        order=lambda topology: _pow2(topology.num_compute),  # in-order trees keep rank order for N = 2^k
        order_shapes="N a power of two",
        build=tree.build_double_binary_tree,
        collectives=("allreduce",),
        variants=tree.VARIANTS,
        aliases=("dbt", "double-tree"),
        topologies="any N >= 1 (logical trees; one link per tree edge on the dbt topology)",
        summary="NCCL's double binary tree: two pipelined reduce+broadcast trees on halves of the vector "
                "(Sanders et al. 2009; Zhao et al. Sec. 8.2 baseline), option chunks=P",
    ),
    Algorithm(
        name="generalized",
        build=generalized.build_generalized,
        collectives=("allreduce", "reduce_scatter", "allgather"),
        variants=generalized.VARIANTS,
        topologies="any number of ranks P >= 2; group: cyclic factors of P with a fold order (4x3; xor = 2x..x2)",
        summary="Kolmakov & Zhang generalized allreduce: any P, 2 ceil(log2 P) - r steps (bandwidth, latency, "
                "intermediate r via `schedule --steps`)",
        aliases=("kolmakov",),
    ),
    Algorithm(
        name="direct",
        build=direct.build_direct,
        collectives=("alltoall",),
        variants=("direct",),
        topologies="any (the network routes every pair's message)",
        summary="all-to-all as N-1 point-to-point sends per rank in one step (NCCL / Open MPI; Basu et al. baseline)",
    ),
    Algorithm(
        name="dor",
        build=dor.build_dor,
        collectives=("alltoall",),
        variants=("dor",),
        topologies="grids: torus, mesh, ring, hypercube, HyperX",
        summary="all-to-all on dimension-order routes, one path per pair (Basu et al. Sec. 5.2 baseline)",
    ),
    Algorithm(
        name="sssp",
        build=sssp.build_sssp,
        collectives=("alltoall",),
        variants=sssp.SSSP_VARIANTS,
        topologies="any",
        summary="all-to-all on Domke et al.'s SSSP routes: per destination, shortest paths on congestion-weighted "
                "links (Basu et al. Sec. 5.2 baseline)",
    ),
    Algorithm(
        name="ewsp",
        build=ewsp.build_ewsp,
        collectives=("alltoall",),
        variants=("ewsp",),
        topologies=f"any with at most {ewsp.MAX_PATHS_PER_PAIR} shortest paths per pair",
        summary="all-to-all split equally over every pair's shortest paths (Basu et al. EwSP baseline)",
    ),
    Algorithm(
        name="ilp-disjoint",
        build=ilp.build_ilp,
        collectives=("alltoall",),
        variants=ilp.ILP_VARIANTS,
        topologies=f"any with at most {ilp.ILP_MAX_RANKS} ranks (more with a time limit)",
        summary="all-to-all on one path per pair chosen by a HiGHS MIP minimizing the largest link load (Basu et al. "
                "ILP-disjoint / ILP-shortest baseline)",
        aliases=("ilp",),
    ),
    Algorithm(
        name="bfb",
        order=_bfb_order,
        order_shapes="a line (mesh:N) or a ring of 3",
        build=bfb.build_bfb, pattern=bfb.bfb_pattern, pattern_bytes=bfb.pattern_bytes,
        collectives=("allgather", "reduce_scatter", "allreduce"),
        variants=bfb.VARIANTS,
        topologies="any direct topology (no switches); BW-optimal on tori, bidirectional rings, circulant and other "
                   "symmetric graphs",
        summary="breadth-first-broadcast LP schedules, T_L = diameter (Zhao et al. Sec. 6.1, LP (1))",
    ),
    Algorithm(
        name="binomial",
        order=lambda topology: True,
        order_shapes="any N and root",
        build=binomial.build_binomial,
        collectives=("broadcast", "reduce"),
        variants=binomial.VARIANTS,
        aliases=("binomial-tree",),
        topologies="any N >= 1, any root (a tree over ranks; the network routes every edge)",
        summary="binomial-tree broadcast / reduce over contiguous rank ranges, ceil(log2 N) steps of the whole "
                "vector (MPICH's binomial trees; the trees Swing Sec. 6 replaces), option root=R",
    ),
    Algorithm(
        name="swing-tree",
        build=swing.build_swing_tree,
        collectives=("broadcast", "reduce"),
        variants=swing.tree.VARIANTS,
        topologies="any grid topology of any shape and size (torus, mesh, HyperX, HammingMesh, hypercube, ring); "
                   "others as a 1D ring of their ranks; any root",
        summary="Swing broadcast / reduce (Swing Sec. 2.1, 6): Swing-peer binomial tree (latency) or scatter + "
                "Swing allgather / Swing reduce-scatter + gather (bandwidth), multiport, option root=R",
    ),
    Algorithm(
        name="chain",
        order=_path_order,
        order_shapes="1D shapes (ring, mesh:N, torus:N) and topologies without a shape, any root",
        build=chain.build_chain,
        collectives=("broadcast", "reduce"),
        variants=chain.VARIANTS,
        aliases=("pipelined-chain",),
        topologies="any N >= 1, any root (the ring order: snake path on grids, else ranks 0..N-1)",
        summary="pipelined chain broadcast / reduce in chunks down both arms of the ring order from the root, "
                "options chunks=C (default: the longer arm's hops) and root=R",
    ),
    Algorithm(
        name="bfb-tree",
        order=_line_order,
        order_shapes="a line (mesh:N), any root",
        build=bfb.build_bfb_tree,
        collectives=("broadcast", "reduce"),
        variants=bfb.tree.VARIANTS,
        aliases=("bfb-rooted",),
        topologies="any direct topology (no switches), strongly connected; any root",
        summary="BFB broadcast / reduce (Zhao et al. Sec. 6.1 for one root): breadth-first shortest-path spread, "
                "ecc(root) steps (latency), or BFS scatter + BFB allgather (bandwidth), option root=R",
    ),
    Algorithm(
        name="expansion",
        build=synth_expansions.build_expansion,
        collectives=("allgather", "reduce_scatter", "allreduce"),
        variants=("bandwidth",),
        topologies="topologies built by expansion operators: line(...), line^k(...), degree(...,n), product(...), "
                   "power(...,n), bidir(...)",
        summary="expanded schedules of Zhao et al. Sec. 5 (line graph Def. 1, degree Def. 2, Cartesian power Def. 14, "
                "product by BFB, App. A.6), T_L and T_B by Theorems 7-13",
    ),
    Algorithm(
        name="mcf",
        build=mcf_schedules.build_mcf,
        collectives=("alltoall",),
        variants=mcf_schedules.VARIANTS,
        topologies="any connected topology (timestepped: no switches)",
        summary="all-to-all from the max concurrent flow (Basu et al.): time-stepped tsMCF chunks, or pMCF / "
                "MCF-extP weighted paths with explicit routes",
    ),
)}
#: Loaders of algorithms from outside the package, each run once on the first name :func:`get` does not know, adding
#: entries to :data:`ALGORITHMS` (:func:`directcoll.plugins.install` adds the installed plugins' loader)
LOADERS: list[Callable[[], object]] = []


def get(name: str) -> Algorithm:
    """The algorithm called ``name`` (or an alias; case-insensitive, ``_`` or ``-``); a miss runs :data:`LOADERS`.

    Returns:
        The :class:`Algorithm`.

    Raises:
        UnsupportedShapeError: unknown name; the message lists the registered ones.

    Source: docs/architecture.md, "The layers, bottom up".

    >>> get("rd").name, get("Double_Binary_Tree").name
    ('recursive-doubling', 'double-binary-tree')
    """
    key = name.strip().lower().replace("_", "-")
    for alg in ALGORITHMS.values():
        if key == alg.name or key in alg.aliases:
            return alg
    if LOADERS:  # algorithms from outside the package, loaded on the first name not found here
        LOADERS.pop(0)()
        return get(name)
    raise UnsupportedShapeError(f"unknown algorithm {name!r}; available: {', '.join(sorted(ALGORITHMS))}")


def order_preserving(name: str, topology, collective="allreduce") -> bool:
    """Whether algorithm ``name``'s ``collective`` on ``topology`` reduces in rank order 0..N-1, so that a
    non-commutative operator is correct (the registry's ``order`` metadata; allgather and all-to-all do not reduce).

    Returns:
        True or False.

    Raises:
        UnsupportedShapeError: an unknown algorithm. SpecError: an unparseable spec. ScheduleError: a bad collective.

    Source: MPI 4.1 standard, Sec. 6.9.1 (rank order); :mod:`directcoll.verify.order` (what the metadata records).

    >>> order_preserving("rabenseifner", "ring:8"), order_preserving("swing", "torus:4x4")
    (True, False)
    """
    alg = get(name)
    topo: Topology = parse(topology) if not isinstance(topology, Topology) else topology
    if Collective.parse(collective) in (Collective.ALLGATHER, Collective.ALLTOALL, Collective.BROADCAST) \
            or topo.num_compute <= 2:
        return True
    return alg.order is not None and bool(alg.order(topo))


def order_table() -> str:
    """The Markdown table of docs/algorithms.md: algorithm x collective x operators (commutative only |
    order-preserving) x where order is kept x shapes served, from the metadata.

    Returns:
        The table, one line per (algorithm, collective), ending with a newline.

    Raises:
        Nothing: reads :data:`ALGORITHMS`.

    Source: MPI 4.1 standard, Sec. 6.9.1; docs/algorithms.md, "Reduction order (non-commutative operators)".

    >>> order_table().splitlines()[2].split(" | ")[:4]
    ['| ring', 'allreduce', 'commutative only', 'N <= 2']
    """
    lines = ["| algorithm | collective | operators | order kept on | shapes served |", "|---|---|---|---|---|"]
    for alg in ALGORITHMS.values():
        served = alg.topologies.replace("|", "/")
        for coll in alg.collectives:
            if coll in ("allgather", "alltoall", "broadcast"):
                ops, kept = "any (no reduction)", "any"
            elif alg.order is None:
                ops, kept = "commutative only", "N <= 2"
            else:
                ops, kept = "order-preserving", f"{alg.order_shapes}; N <= 2"
            lines.append(f"| {alg.name} | {coll} | {ops} | {kept} | {served} |")
    return "\n".join(lines) + "\n"


def _resolve(name: str, topology, collective, variant, ports) -> tuple[Algorithm, Topology, Collective]:
    alg = get(name)
    topo: Topology = parse(topology) if not isinstance(topology, Topology) else topology
    coll = Collective.parse(collective)
    if coll.value not in alg.collectives:
        use = [a.name for a in ALGORITHMS.values() if coll.value in a.collectives and a.name.startswith(alg.name)]
        hint = f"; for {coll.value} use {' or '.join(use)}" if use else ""
        raise UnsupportedShapeError(f"{alg.name} does not implement {coll.value}; it implements "
                                    f"{', '.join(alg.collectives)}{hint}")
    if variant is not None and variant not in alg.variants:
        raise UnsupportedShapeError(f"{alg.name}: unknown variant {variant!r}; accepted: "
                                    f"{', '.join(alg.variants)}")
    if ports is not None and ports < 1:
        raise UnsupportedShapeError(f"{alg.name}: ports must be >= 1, got {ports}")
    return alg, topo, coll


#: Bytes per transfer of a built schedule at its peak while building (step, src, dst, op, pieces, the builder's
#: lists and the final concatenation): measured on torus:64x64 with 4 ports, 118 B (bucket, 4.1 M transfers),
#: 155 B (swing bandwidth), 213 B (recursive doubling): what :func:`estimate_bytes` multiplies transfers by.
BYTES_PER_TRANSFER = 128
#: Bytes per (rank, rank) pair where the construction tracks N pieces per rank (Swing-B for N not a power of two,
#: generalized): 136-250 B measured on torus:30x30 and 60x60 (1,970 and 1,770 MB at N = 3,600); 128 a lower bound.
BYTES_PER_PAIR = 128
#: Algorithms whose construction holds about N^2 pieces when N is not a power of two.
QUADRATIC = {"swing": ("bandwidth", None, "libswing"), "generalized": None}
#: bytes per pair of ranks of an expanded schedule: 322 measured with tracemalloc on degree(line(torus:4x4),8)
EXPANSION_BYTES_PER_PAIR = 320
#: bytes per pair of ranks, and per rank, of BFB where no translation gives every node's plan (non-Cayley
#: topologies, links that differ by node): every node plans every source's block over the N x N hop distances,
#: and holds its plan's arrays and LPs. tracemalloc's peaks: 34-116 B per pair at N = 200-900 (genkautz:3:800,
#: line^2(linegraph_petersen), jellyfish:300:4, mesh:30x30), and on meshes, whose diameter grows with N, up to
#: 48-110 KB per rank (mesh:12x12..30x30)
BFB_BYTES_PER_PAIR = 128
BFB_BYTES_PER_RANK = 64 * 1024
#: bytes per (rank, block) of a scatter-allgather broadcast (the allgather cut at block ends): 67 measured with
#: tracemalloc on swing-tree bandwidth, torus:32x32 (4,096 blocks)
SCATTER_ALLGATHER_BYTES_PER_BLOCK = 72
#: Algorithms whose steps grow linearly: a ring's 2 (N - 1), a bucket's 2 sum_i (d_i - 1) on sides d_i (252 steps
#: and 4.1 M transfers with 4 ports on torus:64x64).
LINEAR_STEPS = ("ring", "shifted-ring", "bucket", "chain")


def _steps(name: str, topology: Topology, n: float) -> float:
    """Steps of a ``name`` allreduce on ``topology``: linear for :data:`LINEAR_STEPS`, else 2 ceil(log2 N)."""
    if name in LINEAR_STEPS:
        if name == "bucket" and topology.shape:
            return 2.0 * sum(float(d) - 1.0 for d in topology.shape)
        return 2.0 * (n - 1.0)
    return 2.0 * max(1, math.ceil(math.log2(max(n, 2.0))))


def estimate_bytes(name: str, topology: Topology, collective="allreduce", variant: str | None = None,
                   ports: int | None = None, *, pattern: bool = False) -> float:
    """A lower-bound estimate of the memory ``build(name, topology, collective, variant=...)`` needs
    (a float, never overflowing): N ranks x steps (:func:`_steps`) x ports transfers of :data:`BYTES_PER_TRANSFER`,
    N^2 of them for all-to-all schedules, and N^2 x :data:`BYTES_PER_PAIR` for the constructions that track N
    pieces per rank (:data:`QUADRATIC`) when N is not a power of two. With ``pattern`` (``build_pattern``), an
    algorithm with a pattern builder of its own holds only its distinct steps (ring, bucket: two per dimension;
    swing, bfb: sized by their own ``pattern_bytes``, O(N) transfers per step).

    Returns:
        Bytes, a float.

    Raises:
        UnsupportedShapeError: an unknown algorithm name.
        ScheduleError: an unknown collective name.

    Source: docs/architecture.md, "Engines, runtimes and scale" (resources); the per-transfer bytes measured on
    torus:64x64 (module constants).

    >>> from directcoll.topology import parse
    >>> estimate_bytes("ring", parse("torus:4x4"))  # 16 ranks x 30 steps x 128 B
    61440.0
    >>> estimate_bytes("ring", parse("torus:4x4"), pattern=True)  # 16 ranks x 4 distinct steps x 128 B
    8192.0
    """
    alg = get(name)
    n = float(topology.num_compute)
    if pattern and alg.pattern_bytes is not None and \
            (own := alg.pattern_bytes(topology, collective, variant, ports)) is not None:
        return own
    steps = _steps(alg.name, topology, n)
    if pattern and alg.pattern is not None:
        steps = min(steps, 2.0 * max(1, len(topology.shape or ())))
    nbytes = n * steps * float(ports or 1) * BYTES_PER_TRANSFER
    if Collective.parse(collective) is Collective.ALLTOALL:
        nbytes = max(nbytes, n * n * BYTES_PER_TRANSFER)
    quadratic = alg.name in QUADRATIC and (QUADRATIC[alg.name] is None or variant in QUADRATIC[alg.name])
    if quadratic and int(n) & (int(n) - 1):
        nbytes = max(nbytes, n * n * BYTES_PER_PAIR)
    if alg.name == "expansion":  # expanded trees carry a piece per pair of ranks, at every N
        nbytes = max(nbytes, n * n * EXPANSION_BYTES_PER_PAIR)
    if alg.name in ("bfb", "bfb-tree") and not bfb.translation_invariant(topology):  # a plan per node
        nbytes = max(nbytes, n * n * BFB_BYTES_PER_PAIR + n * BFB_BYTES_PER_RANK)
    if alg.name in ("swing-tree", "bfb-tree") and variant == "bandwidth":  # scatter-allgather: a piece per block
        trees = float(ports or (topology.out_degree.max() if alg.name == "swing-tree" else 1))  # and rank
        nbytes = max(nbytes, n * n * trees * SCATTER_ALLGATHER_BYTES_PER_BLOCK)
    return nbytes


def check_build_memory(name: str, topology: Topology, collective="allreduce", variant: str | None = None,
                       ports: int | None = None, *, pattern: bool = False) -> None:
    """Refuse building ``name`` on ``topology`` (its step pattern, with ``pattern``) when :func:`estimate_bytes`
    is over the memory budget.

    Returns:
        None when it fits.

    Raises:
        ResourceError: over the budget, naming the algorithm, variant and topology.
        UnsupportedShapeError: an unknown algorithm name.
        ScheduleError: an unknown collective name.

    Source: docs/architecture.md, "Engines, runtimes and scale" (estimate memory first, refuse over a budget).

    >>> from directcoll.topology import parse
    >>> check_build_memory("swing", parse("torus:4x4"))
    """
    from directcoll.resources import check_memory

    label = f"{get(name).name}{f' ({variant})' if variant else ''} {Collective.parse(collective).value} on " \
            f"{topology.spec} ({topology.num_compute:,} ranks)"
    check_memory(label, estimate_bytes(name, topology, collective, variant, ports, pattern=pattern))


def build_pattern(name: str, topology, collective="allreduce", *, variant: str | None = None,
                  ports: int | None = None, **options) -> StepPattern:
    """The step pattern of ``build(name, ...)``: the algorithm's own pattern builder where it has one (its
    description read without pieces, so huge ring, bucket, Swing and BFB schedules are never materialised), else
    ``pattern_of(build(...))``.

    Returns:
        A :class:`~directcoll.schedule.pattern.StepPattern` whose meta names the algorithm and topology.

    Raises:
        UnsupportedShapeError, SpecError, TopologyError, ScheduleError, ResourceError, SolverError: as
            :func:`build`.

    Source: docs/architecture.md, "Cost and simulation" (route once per schedule, sweep sizes in closed form).

    >>> build_pattern("bucket", "torus:4x4").num_distinct
    4
    """
    alg, topo, coll = _resolve(name, topology, collective, variant, ports)
    check_build_memory(alg.name, topo, coll, variant, ports, pattern=True)
    if alg.pattern is None or (options and alg.name != "bfb"):  # BFB's pattern takes its build option (chunks)
        return pattern_of(build(name, topo, coll, variant=variant, ports=ports, **options))
    pattern = alg.pattern(topo, coll, variant=variant, ports=ports, **options)
    pattern.meta.update({"topology": topo.spec, "algorithm": alg.name, **pattern.meta})
    return pattern


def build(name: str, topology, collective="allreduce", *, variant: str | None = None,
          ports: int | None = None, **options) -> Schedule:
    """Build a schedule of algorithm ``name`` on ``topology`` (a Topology or a spec string).

    The schedule's meta records the algorithm, variant, ports and topology spec.
    ``options`` go to algorithms that take more parameters (``generalized``: ``r``, ``group``, ``placement``;
    ``double-binary-tree``: ``chunks``; broadcast and reduce: ``root``, and ``chain``: ``chunks``).

    Returns:
        The :class:`~directcoll.schedule.ir.Schedule`.

    Raises:
        UnsupportedShapeError: unknown algorithm, a collective it does not implement, an unknown variant,
            ports < 1, or a shape it cannot serve.
        ScheduleError: an unknown collective name.
        SpecError: an unparseable topology spec.
        TopologyError: a topology the algorithm or an expansion refuses (e.g. disconnected, for all-to-all).
        ResourceError: :func:`estimate_bytes` (or the builder's own estimate) is over the memory budget.
        SolverError: an LP-based algorithm (bfb, expansion, mcf, ilp-disjoint) whose solve failed.

    Source: docs/architecture.md, "The layers, bottom up"; each algorithm's module cites its paper (:data:`ALGORITHMS`).

    >>> build("generalized", "ring:7", r=1).meta["variant"]
    'intermediate'
    >>> build("ring", "ring:4", "foo")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.ScheduleError: unknown collective 'foo'; accepted: allgather, reduce_scatter, ..., reduce
    """
    alg, topo, coll = _resolve(name, topology, collective, variant, ports)
    check_build_memory(alg.name, topo, coll, variant, ports)
    schedule = alg.build(topo, coll, variant=variant, ports=ports, **options)
    return schedule.with_meta(**{"algorithm": alg.name, **schedule.meta, "topology": topo.spec})
