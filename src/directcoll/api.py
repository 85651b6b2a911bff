"""The public API: ``import directcoll as dc``, then ``dc.topology``, ``dc.build``, ``dc.verify``, ``dc.simulate``,
``dc.compare`` (and ``dc.pattern``, ``dc.algorithms``), with the main types beside them.

Every function takes what a user types (a topology spec such as ``"torus:8x8"``, a size such as ``"1MiB"``, a
registry name such as ``"swing"``) or the library's own objects, and returns the library's objects. Units are
SI throughout: sizes in bytes, bandwidths in bytes/s, times in seconds. Errors are the kinds of
:mod:`directcoll.errors`, each naming the input and what would be accepted.

``directcoll/__init__.py`` exposes these names lazily (nothing here is imported by ``import directcoll``), and
``dc.topology``, ``dc.verify``, ``dc.simulate`` and ``dc.algorithms`` are at once the functions below and the
subpackages of those names (calling the subpackage calls the function), so ``import directcoll.topology`` keeps
working.

Source: docs/api.md (generated from these docstrings by docs/gen_api.py); docs/architecture.md, "The layers,
bottom up" (the API sits above the reports, below the command line).

>>> import directcoll as dc
>>> t = dc.topology("torus:4x4")
>>> s = dc.build("swing", t)
>>> dc.verify(s).ok, round(float(dc.simulate(s, t).time(2**20)) * 1e6, 2)
(True, 13.03)
"""

from __future__ import annotations

from directcoll.registry import ALGORITHMS, Algorithm, build_pattern
from directcoll.registry import build as _registry_build
from directcoll.reports.compare import compare as _compare
from directcoll.reports.comparison import Comparison
from directcoll.schedule.ir import Collective, Schedule
from directcoll.schedule.pattern import StepPattern
from directcoll.simulate.params import NetworkParams, default_params, network_params, resolve_network
from directcoll.simulate.step import SimulatedSchedule
from directcoll.simulate.step import simulate as _simulate
from directcoll.topology.model import Topology
from directcoll.units import parse_sizes
from directcoll.verify import VerifyResult
from directcoll.verify import verify as _verify

__all__ = ["Algorithm", "Collective", "Comparison", "NetworkParams", "Schedule", "SimulatedSchedule", "StepPattern",
           "Topology", "VerifyResult", "algorithms", "build", "compare", "pattern", "simulate", "topology", "verify"]


def topology(spec) -> Topology:
    """The network of a spec string, a network file or a published system.

    Parameters
    ----------
    spec : str or Topology
        A topology spec (``"torus:8x8"``, ``"hammingmesh:2x2:4x4"``, ``"circulant:16:1,5"``, operators such as
        ``"line(complete:4)"``; grammar and size limits in docs/topology.md; a bandwidth in a spec carries its
        unit, ``"links(torus:8x8,dim=1,bandwidth=100Gbps)"``, and is stored in bytes/s; a latency too, ``2us``,
        stored in s), ``"file:PATH"`` (a network file, docs/topology.md), or a system preset name (``directcoll
        presets``: its first published topology). A :class:`~directcoll.topology.model.Topology` is returned as
        is.

    Returns
    -------
    Topology
        Compute nodes ``0..N-1`` (switches after them), directed links with bandwidths in bytes/s
        (``link_bandwidth``, default 400 Gb/s = 5e10 bytes/s) and latencies in seconds (``link_latency``, default
        100 ns).

    Raises
    ------
    SpecError
        A spec that does not parse and is no preset (the message says what was expected and lists the presets).
    TopologyError
        Compute nodes that cannot all reach each other, or an operator that refuses its input.
    ResourceError
        A topology over the memory budget (estimated from the spec before it is built).

    Source: docs/topology.md (spec grammar, families, network files); docs/architecture.md, "Topology".

    Examples
    --------
    >>> import directcoll as dc
    >>> t = dc.topology("torus:8x8")
    >>> t.num_compute, t.shape, float(t.link_bandwidth[0])  # 64 ranks, links of 5e10 bytes/s
    (64, (8, 8), 50000000000.0)
    >>> dc.topology("trn1").spec  # a published system
    'torus:4x4'
    """
    if isinstance(spec, Topology):
        return spec
    return resolve_network(str(spec))[0]


def _topology(value) -> Topology:
    return value if isinstance(value, Topology) else topology(value)


def build(algorithm: str, topology, collective="allreduce", *, variant: str | None = None,
          ports: int | None = None, **options) -> Schedule:
    """The schedule of a registered algorithm on a network.

    Parameters
    ----------
    algorithm : str
        A registry name or alias (``"swing"``, ``"ring"``, ``"bucket"``, ``"bfb"``, ``"rd"``, ...; all of them:
        :func:`algorithms`).
    topology : str or Topology
        The network, as :func:`topology` takes it.
    collective : str, default "allreduce"
        ``allreduce``, ``reduce_scatter``, ``allgather``, ``alltoall``, ``broadcast`` or ``reduce`` (those the
        algorithm implements).
    variant : str, optional
        One of the algorithm's variants (``Algorithm.variants``, e.g. Swing's ``bandwidth``, ``latency``,
        ``libswing``); None: the algorithm's default.
    ports : int, optional
        Concurrent collectives per rank (a count, >= 1; Swing: 1..2D on a D-dimensional grid, up to 6: ports beyond
        2D repeat the collectives, as the Swing library does); None: the
        algorithm's default (all ports where it uses them).
    **options
        The algorithm's own options: ``root`` (a rank, broadcast and reduce), ``chunks`` (a count: pieces per shard
        for ``bfb``, pipeline chunks for ``chain`` and ``double-binary-tree``), ``size`` (bytes, ``bfb``'s LP (14)
        with latencies), ``r``, ``group``, ``placement`` (``generalized``).

    Returns
    -------
    Schedule
        The columnar schedule (docs/schedule.md): ``num_steps`` steps, ``num_transfers`` transfers of pieces of
        ``nblocks`` blocks per rank; ``meta`` names the algorithm, variant, ports and topology spec.

    Raises
    ------
    UnsupportedShapeError
        An unknown algorithm, a collective it does not implement, an unknown variant, ``ports`` < 1, or a shape it
        cannot serve (the message says what it serves).
    ScheduleError
        An unknown collective name.
    SpecError, TopologyError
        As :func:`topology`.
    ResourceError
        The schedule's estimated memory is over the budget (``DIRECTCOLL_MEMORY_BUDGET``).
    SolverError
        An LP-based algorithm (``bfb``, ``expansion``, ``mcf``, ``ilp-disjoint``) whose solve failed.

    Source: docs/algorithms.md (every algorithm, its paper and section); :func:`directcoll.registry.build`.

    Examples
    --------
    >>> import directcoll as dc
    >>> dc.build("swing", "torus:4x4")
    Schedule(allreduce, swing, N=16, nblocks=64, steps=8, transfers=512)
    >>> dc.build("ring", "ring:6", "allgather", ports=1).num_steps
    5
    """
    return _registry_build(algorithm, _topology(topology), collective, variant=variant, ports=ports, **options)


def pattern(algorithm: str, topology, collective="allreduce", *, variant: str | None = None,
            ports: int | None = None, **options) -> StepPattern:
    """The step pattern of :func:`build`'s schedule (who sends how much to whom, step by step), without the
    schedule where the algorithm can (ring, bucket, Swing, BFB): what :func:`simulate` times, at
    scales whose schedules would not fit in memory.

    Parameters
    ----------
    algorithm : str
        A registry name or alias, as :func:`build`.
    topology : str or Topology
        The network, as :func:`topology` takes it.
    collective : str, default "allreduce"
        As :func:`build`.
    variant : str, optional
        As :func:`build`.
    ports : int, optional
        Concurrent collectives per rank (a count), as :func:`build`.
    **options
        As :func:`build`.

    Returns
    -------
    StepPattern
        Distinct steps (sizes as fractions of the vector, 0..1) and the sequence in which the schedule runs them;
        equal to the pattern of ``build(...)`` up to the order of transfers within a step.

    Raises
    ------
    UnsupportedShapeError, ScheduleError, SpecError, TopologyError, ResourceError, SolverError
        As :func:`build` (the memory estimate is the pattern's).

    Source: docs/architecture.md, "Cost and simulation" (step patterns); :func:`directcoll.registry.build_pattern`.

    Examples
    --------
    >>> import directcoll as dc
    >>> p = dc.pattern("ring", "torus:64x64")  # 2 x 4,095 steps, two distinct ones: no schedule built
    >>> p.num_steps, p.num_distinct
    (8190, 2)
    """
    return build_pattern(algorithm, _topology(topology), collective, variant=variant, ports=ports, **options)


def verify(schedule: Schedule, *, seed: int = 0) -> VerifyResult:
    """Run a schedule's data semantics exactly and check every rank's result against the collective's definition.

    Parameters
    ----------
    schedule : Schedule
        Any schedule (:func:`build`, a file, the schedule language).
    seed : int, default 0
        The seed of the random 64-bit words every rank starts with (a missing or doubled contribution is caught
        with probability 1 - 2^-64 per seed).

    Returns
    -------
    VerifyResult
        ``ok`` (a bool) and, when it fails, the first failure: step, rank, interval (in blocks), expected and found
        values, and the reason.

    Raises
    ------
    ResourceError
        The verifier's state (ranks x elementary segments) would exceed the memory budget.

    Source: docs/verification.md; MPI 4.1 standard, Ch. 6 (the collectives' definitions).

    Examples
    --------
    >>> import directcoll as dc
    >>> dc.verify(dc.build("bucket", "torus:4x4")).ok
    True
    """
    return _verify(schedule, seed=seed)


def simulate(schedule, topology=None, *, params=None, routing: str = "adaptive") -> SimulatedSchedule:
    """Route a schedule (or its step pattern) once on a network with the congestion-aware step model; time any
    vector size with ``.time(sizes)``.

    Parameters
    ----------
    schedule : Schedule or StepPattern
        What to time (:func:`build`, :func:`pattern`).
    topology : str or Topology, optional
        The network, as :func:`topology` takes it; None: the spec the schedule was built for
        (``meta["topology"]``).
    params : NetworkParams or str, optional
        Network parameters: α (s per message), per-hop latency (s), γ (s per byte reduced), host injection
        (bytes/s), link overrides; or a preset name (``"swing-sst"``, a system of ``directcoll presets``). None: the
        Swing paper's SST setup (400 Gb/s links, 100 ns link latency, 300 ns per hop), as :func:`compare` uses.
    routing : str, default "adaptive"
        ``adaptive`` (minimal paths, the step's bytes split evenly) or ``dor`` (dimension order, grids).

    Returns
    -------
    SimulatedSchedule
        ``.time(sizes)``: seconds for vector sizes in bytes (any array shape); ``.breakdown(size)``: per step.

    Raises
    ------
    TopologyError
        The schedule's rank count differs from the topology's compute nodes, or the routing does not apply.
    DirectcollError
        ``topology`` is None and the schedule records no topology, or an unknown preset name.
    SpecError, ResourceError
        As :func:`topology`; a route's search over the memory budget.

    Source: docs/simulation.md, "Step model"; Swing (De Sensi et al., NSDI'24) Sec. 5 (the SST setup).

    Examples
    --------
    >>> import directcoll as dc
    >>> sim = dc.simulate(dc.build("ring", "ring:8"))
    >>> round(float(sim.time(2**20)) * 1e6, 2)  # microseconds for a 1 MiB allreduce
    23.95
    """
    if topology is None:
        spec = getattr(schedule, "meta", {}).get("topology")
        if spec is None:
            from directcoll.errors import DirectcollError

            raise DirectcollError("simulate: give the topology (the schedule records none in meta['topology'])")
        topology = spec
    topo = _topology(topology)
    if params is None:
        params = default_params(topo)
    elif not isinstance(params, NetworkParams):
        params = network_params(str(params))
    return _simulate(schedule, topo, params, routing)


def compare(topology, collective="allreduce", sizes=None, *, algorithms=None, params=None,
            routing: str = "adaptive", model: str = "step", ports: int | None = None) -> Comparison:
    """Time every algorithm that serves a network at every size, and say which wins.

    Parameters
    ----------
    topology : str or Topology
        The network, as :func:`topology` takes it (a system preset brings its published parameters).
    collective : str, default "allreduce"
        ``allreduce``, ``reduce_scatter``, ``allgather``, ``alltoall``, ``broadcast`` or ``reduce``.
    sizes : int, str or list, optional
        Vector sizes: bytes (``1048576``), sizes with units (``"1MiB"``, ``"64KiB"``), ranges (``"32B..512MiB"``,
        powers of two), comma lists or workload names, or a list of any of them. None: 32 B to 512 MiB in powers of
        two (the Swing paper's sweep).
    algorithms : list of str, optional
        Registry names to time, each in its default variant (or :class:`~directcoll.reports.contenders.Contender`
        records, one per variant and option set); None: the default policy for the network, every family in its
        variants (docs/compare.md).
    params : NetworkParams or str, optional
        As :func:`simulate`; None: the preset's parameters for a system preset, else the Swing paper's SST setup.
    routing : str, default "adaptive"
        ``adaptive`` or ``dor``, as :func:`simulate`.
    model : str, default "step"
        ``step`` (closed form), ``flow`` (max-min fair, slower) or ``packet`` (ns-3, slowest).
    ports : int, optional
        Build every algorithm with this many concurrent collectives per rank (a count); None: each one's default.

    Returns
    -------
    Comparison
        Times in seconds per (algorithm, variant) and size (``entries``), the winner per size (``winners()``), ties,
        the gain of the reference family (``gain()``), what was skipped and why (``skipped``); ``str()`` of it is a
        table.

    Raises
    ------
    DirectcollError
        An unknown model, a size that does not parse, ``ports`` < 1, or no algorithm runs (the message lists every
        skip).
    ScheduleError
        An unknown collective name.
    SpecError, TopologyError, SolverError
        As :func:`topology`; an algorithm whose LP fails (one that cannot serve the shape or is over the memory
        budget is skipped instead).

    Source: docs/compare.md; Swing (De Sensi et al., NSDI'24) Sec. 5 (goodput, gain, the size sweep).

    Examples
    --------
    >>> import directcoll as dc
    >>> c = dc.compare(dc.topology("torus:4x4"), sizes=["1MiB"], algorithms=["swing", "ring"])
    >>> [e.family for e in c.entries], c.winners()[0][0]
    (['swing', 'ring'], 'swing')
    """
    if isinstance(topology, Topology):
        topo, preset_params = topology, None
    else:
        topo, preset_params, _ = resolve_network(str(topology))
    if params is None:
        params = preset_params
    elif not isinstance(params, NetworkParams):
        params = network_params(str(params))
    size_list = None if sizes is None else parse_sizes(sizes)
    return _compare(topo, collective, size_list, params, routing, model, contenders=algorithms or None, ports=ports)


def algorithms(collective=None) -> list[str]:
    """The names :func:`build` accepts, in the registry's order.

    Parameters
    ----------
    collective : str, optional
        Only the algorithms that implement this collective (``allreduce``, ``alltoall``, ``broadcast``, ...).

    Returns
    -------
    list of str
        Registry names (each one's collectives, variants and paper: ``directcoll algorithms`` or
        :data:`directcoll.registry.ALGORITHMS`).

    Raises
    ------
    ScheduleError
        An unknown collective name.

    Source: docs/algorithms.md; :data:`directcoll.registry.ALGORITHMS`.

    Examples
    --------
    >>> import directcoll as dc
    >>> dc.algorithms("broadcast")
    ['binomial', 'swing-tree', 'chain', 'bfb-tree']
    """
    if collective is None:
        return list(ALGORITHMS)
    coll = Collective.parse(collective).value
    return [name for name, alg in ALGORITHMS.items() if coll in alg.collectives]
