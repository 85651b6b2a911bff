"""The contenders of ``directcoll compare``: which algorithms compete on a topology for a collective, as a visible
policy (the rules are in :mod:`directcoll.reports.compare`'s docstring).

A :class:`Contender` is one timed line (family, registry algorithm, variant, ports, build options). A default
contender that does not run is never dropped silently: it becomes a :class:`Skipped` record with its kind
(:data:`SKIP_KINDS`: a shape the algorithm does not serve, over the memory budget, a size cutoff of this policy, a
port count it cannot be restricted to, a deadlock under the packet model's flow control) and a reason, which every
output of ``compare`` lists.

Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (the grid families); Zhao et al. (NSDI'25) Sec. 8.2-8.3 (the
direct-connect comparison); Basu et al. (HPDC'24) Sec. 5.2 (all-to-all baselines); Kolmakov & Zhang Sec. 10.

>>> from directcoll.topology import parse
>>> [c.family for c in default_contenders(parse("torus:4x4"))][:3]
['swing', 'swing', 'recursive-doubling']
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from directcoll.errors import DirectcollError, UnsupportedShapeError
from directcoll.schedule.ir import Collective
from directcoll.topology.model import Topology


@dataclass(frozen=True)
class Contender:
    """One algorithm line of a comparison: what is built and how it is labelled.

    Attributes:
        family: the family it is plotted and ranked in (``"swing"``; a family's best variant per size is shown).
        algorithm: the registry name it is built with (:func:`directcoll.registry.build_pattern`).
        variant: the registry variant (``"latency"``, ``"bandwidth"``, ...), None for the algorithm's default.
        ports: concurrent collectives / links per rank (Swing Sec. 4.1: 1..2D on a D-dimensional torus), None
            for the algorithm's default.
        options: further build options (``{"r": 2}`` for the generalized allreduce, ``{"chunks": 16}`` for the
            double binary tree and the chain, ``{"root": 0}`` for broadcast and reduce).

    Raises:
        Nothing: a record.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (one line per algorithm, variant and port count).

    >>> Contender("generalized", "generalized", None, options={"r": 2}).label
    'r=2'
    >>> Contender.of(("swing", "swing", "bandwidth")).ports is None
    True
    """

    family: str
    algorithm: str
    variant: str | None = None
    ports: int | None = None
    options: dict = field(default_factory=dict, hash=False)

    @property
    def label(self) -> str:
        """The variant label of its rows: ``r=k`` (generalized), ``P=k`` (chunk counts), else the variant ("" for
        the default). Raises: Nothing. Source: Kolmakov & Zhang Sec. 8 (r); Zhao et al. Sec. 8.2 (chunks)."""
        if "r" in self.options:
            return f"r={self.options['r']}"
        if "chunks" in self.options:
            return f"P={self.options['chunks']}"
        return self.variant or ""

    def with_(self, **changes) -> Contender:
        """This contender with fields replaced (``options`` merged, not replaced).

        Raises:
            TypeError: a keyword that is not a field.

        Source: :class:`Contender`.

        >>> Contender("swing", "swing", "bandwidth").with_(ports=1, options={"root": 0}).ports
        1
        """
        if "options" in changes:
            changes["options"] = {**self.options, **changes["options"]}
        return replace(self, **changes)

    @classmethod
    def of(cls, value) -> Contender:
        """A Contender from a Contender, a registry name (``"ring"``) or a tuple (family, algorithm, variant[,
        options]) as earlier releases took.

        Raises:
            DirectcollError: anything else (the message shows the accepted forms).

        Source: :class:`Contender`.

        >>> Contender.of("ring").family, Contender.of(("dbt", "double-binary-tree", None, {"chunks": 4})).label
        ('ring', 'P=4')
        """
        if isinstance(value, Contender):
            return value
        if isinstance(value, str) and value:
            return cls(value, value)
        if isinstance(value, tuple) and 2 <= len(value) <= 4 and all(isinstance(v, str) for v in value[:2]):
            options = value[3] if len(value) > 3 else {}
            return cls(value[0], value[1], value[2] if len(value) > 2 else None, options=dict(options or {}))
        raise DirectcollError(f"a contender must be a Contender, a registry name or a tuple (family, algorithm, "
                              f"variant[, options]); got {value!r}")

    def to_dict(self) -> dict:
        """family, algorithm, variant, ports and options as plain JSON. Raises: Nothing. Source: :class:`Contender`."""
        return {"family": self.family, "algorithm": self.algorithm, "variant": self.variant, "ports": self.ports,
                "options": dict(self.options)}


#: why a contender did not run: ``shape`` (the algorithm does not serve this topology or collective), ``memory``
#: (its schedule would not fit the memory budget), ``cutoff`` (this policy leaves it out at this size; lifted by
#: ``cutoffs=False`` / ``compare --no-cutoffs``), ``ports`` (it cannot be restricted to the ports asked for)
SKIP_KINDS = ("shape", "memory", "cutoff", "ports", "deadlock")


@dataclass(frozen=True)
class Skipped:
    """A contender that did not run, and why.

    Attributes:
        contender: the :class:`Contender`; kind: one of :data:`SKIP_KINDS`; reason: one line for people.

    Raises:
        DirectcollError: an unknown kind.

    Source: :mod:`directcoll.reports.contenders` (no contender is dropped silently).

    >>> Skipped(Contender("bfb", "bfb"), "cutoff", "over 10 ranks").to_dict()["kind"]
    'cutoff'
    """

    contender: Contender
    kind: str
    reason: str

    def __post_init__(self) -> None:
        if self.kind not in SKIP_KINDS:
            raise DirectcollError(f"unknown skip kind {self.kind!r}; accepted: {', '.join(SKIP_KINDS)}")

    def to_dict(self) -> dict:
        """algorithm, family, variant, ports, kind and reason as plain JSON. Raises: Nothing.
        Source: :class:`Skipped`."""
        c = self.contender
        return {"algorithm": c.algorithm, "family": c.family, "variant": c.label or None, "ports": c.ports,
                "kind": self.kind, "reason": self.reason}


#: two contenders whose times differ by at most this fraction of the faster one are a tie: the model cannot tell
#: them apart. 0.5 %: in the fidelity study (docs/fidelity.md, "Ties") the step model's tie set at 0.5 % holds the
#: packet engine's winner in 83 of 86 cells, its single winner in 65; ``compare --tie-tolerance`` sets another
TIE_TOLERANCE = 0.005

def grouped_skips(skipped: list[Skipped]) -> list[tuple[str, str, str]]:
    """``skipped`` for people: one (names, kind, reason) per algorithm, kind and reason, in order of first
    appearance, the labels of its variants joined (``generalized r=1..18``).

    Returns:
        A list of (names, kind, reason) tuples.

    Raises:
        Nothing: groups records.

    Source: :class:`Skipped`.

    >>> cut = [Skipped(Contender("generalized", "generalized", options={"r": r}), "cutoff", "too big")
    ...        for r in (1, 2, 3)]
    >>> grouped_skips(cut)
    [('generalized r=1..3', 'cutoff', 'too big')]
    """
    groups: dict[tuple[str, str, str], list[str]] = {}
    for k in skipped:
        groups.setdefault((k.contender.algorithm, k.kind, k.reason), []).append(k.contender.label)
    out = []
    for (algorithm, kind, reason), labels in groups.items():
        labels = [lab for lab in labels if lab]
        numbers = [lab.split("=", 1) for lab in labels]
        if len(labels) > 2 and all(len(n) == 2 and n[0] == numbers[0][0] and n[1].isdigit() for n in numbers):
            values = [int(n[1]) for n in numbers]
            if values == list(range(values[0], values[0] + len(values))):
                labels = [f"{numbers[0][0]}={values[0]}..{values[-1]}"]
        out.append((" ".join([algorithm, ", ".join(labels)]).strip(), kind, reason))
    return out


#: the contenders compared on grids; the families are what the Swing paper plots
DEFAULT_CONTENDERS: list[Contender] = [
    Contender("swing", "swing", "latency"),
    Contender("swing", "swing", "bandwidth"),
    Contender("recursive-doubling", "recursive-doubling", "latency"),
    Contender("recursive-doubling", "recursive-doubling", "bandwidth"),
    Contender("ring", "ring"),
    Contender("bucket", "bucket"),
]
BFB_CONTENDER = Contender("bfb", "bfb")
#: topology kinds compared as grids (the Swing paper's networks); every other switchless kind is direct-connect
GRID_KINDS = ("torus", "mesh", "hyperx", "hammingmesh", "ring", "hypercube")
#: BFB (allreduce family and broadcast/reduce trees) joins the grid contenders at any size where it plans by
#: translation (tori, HyperX, hypercubes: one node's LPs, :func:`~directcoll.synthesis.bfb.translation_invariant`;
#: torus:64x64 in about a second, Fugaku's 158,976 ranks in under a minute, docs/benchmarks.md); on other grids
#: (meshes) every node solves its own LPs, so there it joins up to this many ranks and is skipped beyond as a
#: ``cutoff`` (``cutoffs=False`` lifts it)
BFB_GRID_MAX_RANKS = 1024
#: chunk counts P of the double binary tree compared as variants of one family (Zhao et al. Sec. 8.2 sweep
#: "degrees of pipelining for the DBT baseline")
DBT_CHUNKS = (1, 4, 16, 64)
#: the largest P for which every intermediate version r > 0 of the generalized allreduce is compared (its union
#: construction tracks ceil(P / 2^(L-r)) shifted reductions of P vectors each); beyond, r > 0 is skipped as a
#: ``cutoff`` and r = 0 runs
GENERALIZED_ALL_R_MAX = 1024
#: chunk counts of the pipelined chain compared as variants of one family (broadcast and reduce), as the DBT's
CHAIN_CHUNKS = (1, 4, 16, 64)


#: the non-power-of-two baselines, each its own family (letters E and L in the compare legend)
NONPOW2_CONTENDERS: list[Contender] = [
    Contender("rabenseifner-3-2", "rabenseifner-elimination"),
    Contender("swing-libswing", "swing", "libswing"),
]


def nonpow2_contenders(topology: Topology, collective: Collective) -> list[Contender]:
    """The non-power-of-two baselines on a grid whose N is not a power of two: Rabenseifner's allreduce with 3-2
    elimination (allreduce only) and the Swing authors' library construction (skipped, with its reason, where a
    dimension is odd).

    Returns:
        :class:`Contender` list; [] for N a power of two, a topology without a grid shape, or a collective other
        than allreduce / reduce-scatter / allgather.

    Raises:
        Nothing: reads the topology's shape.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.3.3 (3-2 elimination) and Sec. 3.2 (odd sizes);
    Rabenseifner & Traeff (EuroPVM/MPI 2004).

    >>> from directcoll.topology import parse
    >>> [c.family for c in nonpow2_contenders(parse("torus:6x6"), Collective.ALLREDUCE)]
    ['rabenseifner-3-2', 'swing-libswing']
    """
    n = topology.num_compute
    if topology.shape is None or n & (n - 1) == 0 or collective is Collective.ALLTOALL:
        return []
    if collective is Collective.ALLREDUCE:
        return list(NONPOW2_CONTENDERS)
    return [c for c in NONPOW2_CONTENDERS if c.algorithm != "rabenseifner-elimination"]


def generalized_contenders(p: int, collective: Collective, cutoffs: bool = True
                           ) -> tuple[list[Contender], list[Skipped]]:
    """Kolmakov & Zhang's allreduce for non-power-of-two P (for a power of two it is recursive halving and
    doubling): every r = 0..ceil(log2 P); with ``cutoffs``, r > 0 only up to :data:`GENERALIZED_ALL_R_MAX` ranks
    (the others are returned as skipped, kind ``cutoff``).

    Returns:
        (contenders, skipped); ([], []) for P < 3 or a power of two; only r = 0 for reduce-scatter / allgather.

    Raises:
        Nothing: arithmetic on P.

    Source: Kolmakov & Zhang Sec. 7-9 (r = 0 .. ceil(log2 P)); Sec. 7-8 (power-of-two P: recursive halving and
    doubling as special cases).

    >>> [c.options["r"] for c in generalized_contenders(6, Collective.ALLREDUCE)[0]]
    [0, 1, 2, 3]
    >>> [s.contender.label for s in generalized_contenders(1100, Collective.ALLREDUCE)[1]][:2]
    ['r=1', 'r=2']
    """
    if p & (p - 1) == 0 or p < 3:
        return [], []
    if collective is not Collective.ALLREDUCE:
        return [Contender("generalized", "generalized", "bandwidth", options={"r": 0})], []
    top = max(1, int(np.ceil(np.log2(p))))
    every = [Contender("generalized", "generalized", "bandwidth" if r == 0 else "latency" if r == top else None,
                       options={"r": r}) for r in range(top + 1)]
    if not cutoffs or p <= GENERALIZED_ALL_R_MAX:
        return every, []
    reason = (f"intermediate versions r > 0 are compared up to {GENERALIZED_ALL_R_MAX} ranks (their union "
              f"construction grows as P^2 / 2^(L-r)); --no-cutoffs includes them")
    return every[:1], [Skipped(c, "cutoff", reason) for c in every[1:]]


def is_direct_connect(topology: Topology) -> bool:
    """Whether ``topology`` is compared as a direct-connect network (Zhao et al.'s contenders): no switch
    nodes and a kind outside :data:`GRID_KINDS` (a placed job's: its logical network's kind, so a torus job on
    another machine network gets the contenders a torus job runs).

    Raises:
        Nothing: reads the topology.

    Source: Zhao et al. (NSDI'25) Sec. 2.1 (direct-connect fabrics) and Sec. 8.2 (their baselines).

    >>> from directcoll.topology import parse
    >>> is_direct_connect(parse("circulant:8:1,2")), is_direct_connect(parse("torus:4x4"))
    (True, False)
    """
    return topology.num_nodes == topology.num_compute and topology.job_kind not in GRID_KINDS


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


def dbt_contenders(collective=Collective.ALLREDUCE, chunks=DBT_CHUNKS) -> list[Contender]:
    """The double binary tree at every chunk count of ``chunks`` (allreduce only; [] otherwise).

    Returns:
        :class:`Contender` list with options {"chunks": P}.

    Raises:
        ScheduleError: an unknown collective name.

    Source: Zhao et al. (NSDI'25) Sec. 8.2 (degrees of pipelining for the DBT baseline).

    >>> [c.options["chunks"] for c in dbt_contenders()]
    [1, 4, 16, 64]
    """
    if Collective.parse(collective) is not Collective.ALLREDUCE:
        return []
    return [Contender("double-binary-tree", "double-binary-tree", options={"chunks": int(p)}) for p in chunks]


#: the all-to-all baselines of Basu et al. Sec. 5.2 compared by default, in column order (``dor`` only where
#: :func:`directcoll.algorithms.alltoall.dor.dor_alltoall` serves the topology; ``mcf`` when registered)
ALLTOALL_CONTENDERS: list[Contender] = [Contender(n, n) for n in ("direct", "ewsp", "sssp", "dor")]


def mcf_contenders() -> list[Contender]:
    """The all-to-all schedules of the algorithm registered as ``mcf``, one per variant (family ``mcf``); [] when
    no such algorithm is registered or it has no all-to-all.

    Raises:
        Nothing: a missing registration gives [].

    Source: Basu et al. (HPDC'24) Sec. 3.1.3-3.2.1 (tsMCF, pMCF, MCF-extP).

    >>> [c.variant for c in mcf_contenders()]
    ['timestepped', 'path', 'extp']
    """
    from directcoll.registry import get

    try:
        alg = get("mcf")
    except UnsupportedShapeError:
        return []
    if "alltoall" not in alg.collectives:
        return []
    return [Contender("mcf", alg.name, v) for v in alg.variants or (None,)]


def alltoall_contenders(topology: Topology) -> list[Contender]:
    """All-to-all contenders: :data:`ALLTOALL_CONTENDERS` (DOR only on the grids it serves) and
    :func:`mcf_contenders`.

    Returns:
        :class:`Contender` list, in column order.

    Raises:
        Nothing: filters constant lists.

    Source: Basu et al. (HPDC'24) Sec. 5.2 (baselines DOR, SSSP, EwSP; direct as in NCCL / Open MPI).

    >>> from directcoll.topology import parse
    >>> [c.family for c in alltoall_contenders(parse("ring:4"))][:4]
    ['direct', 'ewsp', 'sssp', 'dor']
    """
    from directcoll.algorithms.alltoall.dor import DOR_KINDS

    grid = topology.kind in DOR_KINDS and topology.shape is not None
    return [c for c in ALLTOALL_CONTENDERS if c.family != "dor" or grid] + mcf_contenders()


def _bfb_cutoff(topology: Topology, contenders: list[Contender], cutoffs: bool
                ) -> tuple[list[Contender], list[Skipped]]:
    """BFB ``contenders`` on a switchless topology: run where :data:`BFB_GRID_MAX_RANKS` allows (direct-connect
    topologies always), else skipped as a cutoff; [] with switches (BFB needs every node to be a rank)."""
    from directcoll.synthesis.bfb import translation_invariant

    n = topology.num_compute
    if topology.num_nodes != n:
        return [], []
    if not cutoffs or is_direct_connect(topology) or n <= BFB_GRID_MAX_RANKS or translation_invariant(topology):
        return contenders, []
    reason = (f"on a grid without translation symmetry BFB solves one set of LPs per rank; compared up to "
              f"{BFB_GRID_MAX_RANKS} ranks there; --no-cutoffs includes it")
    return [], [Skipped(c, "cutoff", reason) for c in contenders]


def rooted_contenders(topology: Topology, cutoffs: bool = True) -> tuple[list[Contender], list[Skipped]]:
    """The broadcast and reduce contenders: binomial tree, Swing (latency tree; bandwidth scatter + allgather), the
    pipelined chain at every chunk count of :data:`CHAIN_CHUNKS`, and BFB (latency, bandwidth) on switchless
    topologies (:data:`BFB_GRID_MAX_RANKS` applies with ``cutoffs``).

    Returns:
        (contenders, skipped).

    Raises:
        Nothing: reads the topology's size and kind.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.1 and 6; Zhao et al. (NSDI'25) Sec. 6.1.

    >>> from directcoll.topology import parse
    >>> [c.family for c in rooted_contenders(parse("torus:4x4"))[0]][:3]
    ['binomial', 'swing-tree', 'swing-tree']
    """
    out = [Contender("binomial", "binomial"), Contender("swing-tree", "swing-tree", "latency"),
           Contender("swing-tree", "swing-tree", "bandwidth"),
           *[Contender("chain", "chain", options={"chunks": c}) for c in CHAIN_CHUNKS]]
    bfb, skipped = _bfb_cutoff(topology, [Contender("bfb-tree", "bfb-tree", v) for v in ("latency", "bandwidth")],
                               cutoffs)
    return out + bfb, skipped


def with_root(contenders: list[Contender], root: int | None) -> list[Contender]:
    """``contenders`` with the build option ``root`` added (broadcast and reduce; None: unchanged).

    Returns:
        :class:`Contender` list.

    Raises:
        Nothing: rebuilds the records.

    Source: MPI 4.1 standard, Ch. 6 (the root of MPI_Bcast and MPI_Reduce).

    >>> with_root([Contender("binomial", "binomial")], 3)[0].options
    {'root': 3}
    """
    if root is None:
        return list(contenders)
    return [Contender.of(c).with_(options={"root": root}) for c in contenders]


def default_policy(topology: Topology, collective="allreduce", cutoffs: bool = True
                   ) -> tuple[list[Contender], list[Skipped]]:
    """The contenders :func:`compare` times when none are given (module docstring), and the default contenders
    this policy leaves out (kind ``cutoff``, with the reason; ``cutoffs=False`` runs them too).

    Grids: :data:`DEFAULT_CONTENDERS`, plus BFB when the topology has no switches (see
    :data:`BFB_GRID_MAX_RANKS`). Direct-connect topologies (:func:`is_direct_connect`): BFB, the expanded
    schedule when the spec applies expansion operators (Zhao et al. Sec. 5), ring, shifted ring, double binary
    tree (:data:`DBT_CHUNKS`), recursive doubling (latency, bandwidth), and Swing (latency, bandwidth) and bucket
    where :func:`grid_embeds`. Both: :func:`generalized_contenders`.

    All-to-all: :func:`alltoall_contenders`. Broadcast and reduce: :func:`rooted_contenders`.

    Returns:
        (contenders in column order, skipped).

    Raises:
        ScheduleError: an unknown collective name.

    Source: Swing (NSDI'24) Sec. 5 (grids), Zhao et al. (NSDI'25) Sec. 8.2-8.3 (direct-connect), Basu et al.
    (HPDC'24) Sec. 5.2 (all-to-all), Kolmakov & Zhang Sec. 10 (non-power-of-two P).

    >>> from directcoll.topology import parse
    >>> run, skipped = default_policy(parse("torus:6x6"))
    >>> [c.family for c in run][:7], skipped
    (['swing', 'swing', 'recursive-doubling', 'recursive-doubling', 'ring', 'bucket', 'bfb'], [])
    """
    coll = Collective.parse(collective)
    n = topology.num_compute
    if coll is Collective.ALLTOALL:
        return alltoall_contenders(topology), []
    if coll.rooted:
        return rooted_contenders(topology, cutoffs)
    if is_direct_connect(topology):
        out: list[Contender] = [BFB_CONTENDER, *([Contender("expansion", "expansion")] if _is_expansion(topology)
                                                 else []),
                                Contender("ring", "ring"), Contender("shifted-ring", "shifted-ring"),
                                *dbt_contenders(coll), *DEFAULT_CONTENDERS[2:4]]
        if grid_embeds(topology):
            out += [*DEFAULT_CONTENDERS[:2], Contender("bucket", "bucket")]
        skipped: list[Skipped] = []
    else:
        bfb, skipped = _bfb_cutoff(topology, [BFB_CONTENDER], cutoffs)
        out = [*DEFAULT_CONTENDERS, *bfb, *nonpow2_contenders(topology, coll)]
    general, cut = generalized_contenders(n, coll, cutoffs)
    return out + general, skipped + cut


def default_contenders(topology: Topology, collective="allreduce") -> list[Contender]:
    """The contenders :func:`default_policy` runs (its cutoffs applied).

    Returns:
        :class:`Contender` list, in column order.

    Raises:
        ScheduleError: an unknown collective name.

    Source: :func:`default_policy`.

    >>> from directcoll.topology import parse
    >>> [c.family for c in default_contenders(parse("torus:4x4"))]
    ['swing', 'swing', 'recursive-doubling', 'recursive-doubling', 'ring', 'bucket', 'bfb']
    """
    return default_policy(topology, collective)[0]


def _is_expansion(topology: Topology) -> bool:
    """The topology's spec applies an expansion operator (line, degree, product, power, bidir)."""
    from directcoll.cost.expansions import LEAVES
    from directcoll.topology.grammar import parse_tree

    try:
        return parse_tree(topology.spec).op not in LEAVES
    except DirectcollError:
        return False


def family_contenders(name: str, topology: Topology, collective="allreduce") -> list[Contender]:
    """Contenders for one algorithm asked for by name (``directcoll compare --algorithms``): the generalized
    allreduce at every r (no cutoff: it was asked for), the double binary tree at every chunk count of
    :data:`DBT_CHUNKS`, else one per registered variant (Swing's libswing variant in its own family, as in
    :data:`NONPOW2_CONTENDERS`).

    Raises:
        UnsupportedShapeError: an unknown algorithm name (the message lists the registered ones).
        ScheduleError: an unknown collective name.

    Returns:
        :class:`Contender` list.

    Source: the registry's variants (docs/architecture.md); Zhao et al. (NSDI'25) Sec. 8.2 for the DBT chunk sweep.

    >>> from directcoll.topology import parse
    >>> [(c.family, c.variant) for c in family_contenders("swing", parse("torus:4x4"))]
    [('swing', 'bandwidth'), ('swing', 'latency'), ('swing-libswing', 'libswing')]
    """
    from directcoll.registry import get

    alg = get(name)
    coll = Collective.parse(collective)
    if alg.name == "generalized":
        return generalized_contenders(topology.num_compute, coll, cutoffs=False)[0] or [
            Contender("generalized", "generalized", v) for v in ("bandwidth", "latency")]
    if alg.name == "double-binary-tree":
        return dbt_contenders(Collective.ALLREDUCE)  # compare() skips them with the reason on other collectives
    if alg.name == "chain":
        return [Contender("chain", "chain", options={"chunks": c}) for c in CHAIN_CHUNKS]
    own = {(c.algorithm, c.variant): c.family for c in NONPOW2_CONTENDERS}  # baselines with a family of their own
    return [Contender(own.get((alg.name, v), alg.name), alg.name, v) for v in alg.variants or (None,)]


def select(contenders: list[Contender], wanted: list[str], topology: Topology, collective="allreduce"
           ) -> list[Contender]:
    """The contenders of ``wanted`` families or registry names (``compare --algorithms``; ``file:PATH``: the
    algorithms the file defines, docs/language.md): those of ``contenders`` that match, then
    :func:`family_contenders` for a name that matches none.

    Raises:
        UnsupportedShapeError: an unknown algorithm name. DirectcollError: a ``file:`` that cannot be loaded.

    Returns:
        :class:`Contender` list.

    Source: :func:`family_contenders`.

    >>> from directcoll.topology import parse
    >>> t = parse("torus:4x4")
    >>> [c.family for c in select(default_contenders(t), ["ring", "generalized"], t)][:1]
    ['ring']
    """
    from directcoll.plugins import expand

    wanted = expand(wanted)  # plugins load on a name not found; file:PATH items name the file's algorithms
    out = [c for c in contenders if c.family in wanted or c.algorithm in wanted]
    for w in wanted:
        if not any(w in (c.family, c.algorithm) for c in contenders):
            out += family_contenders(w, topology, collective)
    return out
