"""Fit the step model's network parameters to measured collective timings (``directcoll calibrate``).

The forward model is the project's step model (:func:`directcoll.simulate.simulate`) on the schedule each
measured algorithm builds (:func:`directcoll.registry.build_pattern`): every (algorithm, variant, collective)
is routed once per evaluation and timed at its measured sizes in closed form. A subset of five
:class:`~directcoll.simulate.params.NetworkParams` fields is fitted by ``scipy.optimize.least_squares`` (trust
region reflective, bounds >= 0) on the relative residuals model / measured - 1, in well-scaled variables:
alpha and per-hop latency in us, gamma and the inverse rates 1 / ``link_bandwidth`` and 1 / ``host_injection``
in ns per byte (the model is piecewise linear in these, so the fit is well conditioned). After the fit every
fitted parameter's effect on the measurements is probed: a parameter without effect is not identifiable (it is
put back to its base value), and parameters whose effects are proportional (a near-zero singular value of the
normalised sensitivity matrix) cannot be told apart; both give a warning, as does a poor fit (:data:`POOR_RMS`,
:data:`POOR_MAX`).

Source: docs/simulation.md, "Calibration"; the least-squares method: scipy.optimize.least_squares, method "trf"
(Branch, Coleman & Li, SIAM J. Sci. Comput. 21(1), 1999).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np

from directcoll.errors import DirectcollError
from directcoll.simulate.implementation import PATH_TERMS, Implementation
from directcoll.simulate.measurements import read_measurements
from directcoll.simulate.params import NetworkParams
from directcoll.simulate.step import simulate
from directcoll.topology.model import Topology
from directcoll.units import MAX_BANDWIDTH, MAX_TIME, MAX_TIME_PER_BYTE, MIN_BANDWIDTH

#: the network's terms calibrate can fit (shared by every implementation); ``host_injection`` (a rank's NIC cap,
#: fitted as its inverse like the link rate) only when named: a default fit keeps the base's cap or has none
NETWORK = ("alpha", "link_bandwidth", "host_injection", "per_hop_latency", "gamma")
#: an implementation's terms calibrate can fit, once per implementation the measurements name
#: (:class:`~directcoll.simulate.implementation.Implementation`)
SOFTWARE = ("call_overhead", "port_overhead", "thread_overhead", "mirror_overhead", "reduction_overhead",
            "message_overhead", "copy_overhead", "bandwidth_efficiency")
FITTABLE = NETWORK + SOFTWARE
#: what is fitted when ``fit`` is not given and no measurement names an implementation (:func:`default_fit`)
DEFAULT_FIT = tuple(n for n in NETWORK if n != "host_injection")
#: a fit is poor when the RMS relative residual is over 10 % or any one is over 25 % (docs/simulation.md,
#: "Calibration": OSU averages repeat within a few per cent; beyond these the model misses a regime)
POOR_RMS = 0.10
POOR_MAX = 0.25
#: parameters whose effects are proportional below this ratio of singular values cannot be told apart
COLLINEAR = 1e-6
#: a parameter changing no relative time by more than this (for a 1 % change of its scale) has no effect
NO_EFFECT = 1e-9
#: SI value of one unit of the fitted variable: us for the latencies and overheads, ns/B for gamma and the
#: inverse rates, a share for the bandwidth efficiency
_UNIT = {"alpha": 1e-6, "per_hop_latency": 1e-6, "gamma": 1e-9, "link_bandwidth": 1e-9, "host_injection": 1e-9,
         "call_overhead": 1e-6, "port_overhead": 1e-6, "thread_overhead": 1e-6, "mirror_overhead": 1e-6,
         "reduction_overhead": 1e-6,
         "message_overhead": 1e-6, "copy_overhead": 1e-9, "bandwidth_efficiency": 1.0}
#: the range each fitted variable is searched in (in its unit; the fit runs on their logarithms): a picosecond to
#: half an hour (a code path's term adds to its implementation's, and their sum must stay a valid time), 1 Eb/s
#: to 1 bit/s, a share of 0.1 % to all of the link rate
_LATENCY = ("alpha", "per_hop_latency", "call_overhead", "port_overhead", "thread_overhead", "mirror_overhead",
            "reduction_overhead", "message_overhead")
_RANGE = {**dict.fromkeys(_LATENCY, (1e-6, MAX_TIME / 2e-6)),
          **dict.fromkeys(("gamma", "copy_overhead"), (1e-9, MAX_TIME_PER_BYTE / 1e-9)),
          **dict.fromkeys(("link_bandwidth", "host_injection"), (1e9 / MAX_BANDWIDTH, 1e9 / MIN_BANDWIDTH)),
          "bandwidth_efficiency": (1e-3, 1.0)}
#: the smallest inverse bandwidth, ns/B: keeps link_bandwidth finite
_MIN_BETA = _RANGE["link_bandwidth"][0]
#: fitted as inverse rates (ns/B); the bottom of their range is the fastest rate, not 0
_INVERSE = ("link_bandwidth", "host_injection")
#: the value a variable keeps where it is not fitted in a cross-validation fold (0 unless named; a cap: none)
_NEUTRAL = {"bandwidth_efficiency": 1.0, "host_injection": _MIN_BETA}
#: which of a set of variables the rows cannot tell apart is fitted (the first; network terms before software
#: terms): LogGP's o before a per-call cost, the reduction cost before an efficiency or a copy
_PRIORITY = ("alpha", "per_hop_latency", "link_bandwidth", "host_injection", "message_overhead", "call_overhead",
             "port_overhead", "thread_overhead", "mirror_overhead", "reduction_overhead", "gamma",
             "bandwidth_efficiency", "copy_overhead")
#: how the identifiability warning ends when the fit keeps every member of a set (the split is not determined)
_ARBITRARY = "their fitted values are one of many equally good choices"
#: a unit effect column closer than this to the span of those kept is a combination of them
_TOLD_APART = 1e-4
#: starting points tried, as factors of the plausible start (the best fit of all is kept)
STARTS = (1.0, 0.1, 10.0)
#: iterations of the search in log space (to 1e-8 relative) and of the polish (to 1e-12): each iteration is one
#: model evaluation plus one per variable for the Jacobian
SEARCH_EVALUATIONS, POLISH_EVALUATIONS = 50, 50


def parse_fit(text: str | None) -> tuple[str, ...]:
    """The parameters named by ``--fit`` (a comma list of :data:`FITTABLE`; None: :data:`DEFAULT_FIT`).

    Returns:
        tuple of field names of :class:`NetworkParams`, in :data:`FITTABLE` order, without repeats.

    Raises:
        DirectcollError: an unknown name or an empty list, naming the accepted ones.

    Source: docs/simulation.md, "Calibration" (what is fitted).

    >>> parse_fit("link_bandwidth, alpha"), parse_fit("per-hop-latency")
    (('alpha', 'link_bandwidth'), ('per_hop_latency',))
    """
    if text is None:
        return DEFAULT_FIT
    names = [t.strip().lower().replace("-", "_") for t in text.split(",") if t.strip()]
    unknown = [n for n in names if n not in FITTABLE]
    if unknown or not names:
        what = f"unknown parameter(s) {', '.join(map(repr, unknown))}" if unknown else "no parameter"
        raise DirectcollError(f"--fit {text!r}: {what}; accepted: a comma list of {', '.join(FITTABLE)}")
    return tuple(n for n in FITTABLE if n in names)


def default_fit(measurements, base: NetworkParams, given=()) -> tuple[str, ...]:
    """What ``calibrate`` fits when not told: :data:`DEFAULT_FIT` for measurements of one (unnamed) implementation;
    where a measurement names its implementation, the network's per-hop latency shared by all, every
    implementation's software terms (:data:`SOFTWARE`) and its gamma (its reduction code), what its code paths add
    (:attr:`~directcoll.simulate.implementation.Implementation.paths`, where the rows tell them apart), and the
    network's alpha and link bandwidth only where ``base`` gives none: a published value is kept (each
    implementation's efficiency is fitted against the link rate, its message overhead on top of alpha).
    Parameters in ``given`` (set by the user) are not fitted.

    Returns:
        tuple of names of :data:`FITTABLE`, in its order.

    Raises:
        Nothing.

    Source: docs/simulation.md, "Calibration" (what is fitted).

    >>> from directcoll.simulate.measurements import Measurement
    >>> rows = [Measurement("ring", None, "allreduce", 4, 8.0, 1e-5, implementation="mpi")]
    >>> default_fit(rows, NetworkParams(link_bandwidth=6.8e9), given=("gamma", "copy_overhead"))[:5]
    ('alpha', 'per_hop_latency', 'call_overhead', 'port_overhead', 'thread_overhead')
    >>> default_fit(rows, NetworkParams(link_bandwidth=6.8e9, alpha=4.9e-7))[:2]
    ('per_hop_latency', 'gamma')
    """
    if not any(m.implementation for m in measurements):
        names = DEFAULT_FIT
    else:
        names = tuple(n for n in DEFAULT_FIT if not (n == "link_bandwidth" and base.link_bandwidth is not None)
                      and not (n == "alpha" and base.alpha > 0)) + SOFTWARE
    return tuple(n for n in names if n not in given)


@dataclass(frozen=True)
class Calibration:
    """The result of a fit: parameters, per-measurement residuals and what to beware of.

    Attributes:
        params: the fitted :class:`NetworkParams` (name ``calibrated from FILE``, source the fit's summary).
        fitted: the fitted values by name (s, bytes/s, s/byte as in NetworkParams); a parameter of ``fit``
            without effect on the measurements is left out (it keeps its base value; a warning says so).
        measurements: the measurements fitted, in input order.
        model: float64 (M,), the model's time of every measurement, s.
        beaten: the measurements faster than the topology's links alone allow (:func:`faster_than_links`), as
            (index, measured / that time) pairs; a warning names them.
        residuals: float64 (M,), model / measured - 1.
        rms, max_abs: the RMS and the largest absolute relative residual.
        warnings: one line each: a poor fit, a parameter that is not identifiable, an unconverged solve.
        notes: one line each: parameters at their lower bound 0.
        topology, routing, source: the topology spec, the routing and the measurement file.

    Raises:
        Nothing: a record built by :func:`calibrate`.

    Source: docs/simulation.md, "Calibration".

    >>> from directcoll.simulate.measurements import Measurement
    >>> c = calibrate([Measurement("ring", None, "allreduce", 4, s, 1e-6 + s / 1e9) for s in (8.0, 1e6)],
    ...               "ring:4", fit=("alpha",), base=NetworkParams(link_bandwidth=1e9))
    >>> c.poor, len(c.residuals)
    (True, 2)
    """

    params: NetworkParams
    fitted: dict
    measurements: tuple
    model: np.ndarray
    residuals: np.ndarray
    rms: float
    max_abs: float
    warnings: tuple
    notes: tuple
    topology: str
    routing: str
    source: str
    uncertainty: dict | None = None
    cross_validation: dict | None = None
    beaten: tuple = ()

    @property
    def poor(self) -> bool:
        """Whether the fit is poor: RMS > :data:`POOR_RMS` or max > :data:`POOR_MAX`. Raises: Nothing.
        Source: docs/simulation.md, "Calibration" (thresholds)."""
        return self.rms > POOR_RMS or self.max_abs > POOR_MAX

    def to_dict(self) -> dict:
        """Everything as plain JSON types: ``params`` (:meth:`NetworkParams.to_dict`), ``fitted``, ``rms``,
        ``max_abs``, ``poor``, ``thresholds``, ``warnings``, ``notes``, ``topology``, ``routing``, ``source`` and
        ``measurements`` (line, algorithm, variant, collective, ranks, bytes, measured_s, model_s, residual, and
        ``of_link_bound``: measured / the links' time where the measurement beats it, else null).

        Returns:
            a dict (times in s, sizes in bytes, residuals relative).

        Raises:
            Nothing: plain data.

        Source: docs/simulation.md, "Calibration" (``--json``).

        >>> from directcoll.simulate.measurements import Measurement
        >>> c = calibrate([Measurement("ring", None, "allreduce", 4, 8.0, 2e-6)], "ring:4", fit=("alpha",))
        >>> sorted(c.to_dict()["measurements"][0])[:3]
        ['algorithm', 'bytes', 'collective']
        """
        beaten = dict(self.beaten)
        rows = [{"line": m.line, "algorithm": m.algorithm, "variant": m.variant, "collective": m.collective,
                 "ranks": m.ranks, "bytes": m.size, "measured_s": m.seconds, "model_s": float(t),
                 "residual": float(r), "of_link_bound": beaten.get(i)}
                for i, (m, t, r) in enumerate(zip(self.measurements, self.model, self.residuals, strict=True))]
        return {"params": self.params.to_dict(), "fitted": dict(self.fitted), "rms": self.rms,
                "max_abs": self.max_abs, "poor": self.poor, "thresholds": {"rms": POOR_RMS, "max_abs": POOR_MAX},
                "warnings": list(self.warnings), "notes": list(self.notes), "topology": self.topology,
                "routing": self.routing, "source": self.source, "measurements": rows,
                "uncertainty": self.uncertainty, "cross_validation": self.cross_validation}

    def params_file(self) -> dict:
        """What ``calibrate -o FILE`` writes: the keys of :meth:`NetworkParams.to_dict` plus ``calibration`` (the
        rest of :meth:`to_dict`), which :func:`~directcoll.simulate.params.params_from_file` accepts and skips.

        Returns:
            a dict of plain JSON types (s, bytes/s, s/byte).

        Raises:
            Nothing: plain data.

        Source: docs/simulation.md, "Calibration" (the parameters file).

        >>> from directcoll.simulate.measurements import Measurement
        >>> c = calibrate([Measurement("ring", None, "allreduce", 4, 8.0, 2e-6)], "ring:4", fit=("alpha",))
        >>> c.params_file()["name"], "calibration" in c.params_file()
        ('calibrated from measurements', True)
        """
        rest = self.to_dict()
        rest.pop("params")
        return {**self.params.file_dict(), "calibration": rest}


def _name(key: str) -> str:
    """The field of a fitted variable's key (``alpha``, ``call_overhead@fujitsu-mpi`` -> ``call_overhead``)."""
    return key.partition("@")[0]


def _split(key: str) -> tuple[str, str, str | None]:
    """(field, implementation or "", code path selector or None) of a fitted variable's key: ``alpha``,
    ``call_overhead@fujitsu-mpi``, ``port_overhead@libswing-utofu[*:bandwidth]`` (what that path adds)."""
    name, _, impl = key.partition("@")
    if impl.endswith("]") and "[" in impl:
        impl, _, selector = impl[:-1].partition("[")
        return name, impl, selector
    return name, impl, None


def _keys(fit, implementations, paths, named: bool) -> tuple[str, ...]:
    """The fitted variables: each network term once, each software term once per implementation (gamma too when
    the measurements name implementations, ``named``: the reduction runs the library's own code), and the
    overheads a code path adds once per path in ``paths`` (implementation -> selectors the rows can tell apart
    from the implementation's own terms), a thread cost excepted: starting threads costs what the library's
    runtime costs on every path (a path's step from one port to more is its own setup, such as the mirrored collectives'
    peers, ``mirror_overhead``); a parameters file may still give a path one."""
    out = [k for n in fit for k in ([n] if n in NETWORK and not (named and n == "gamma")
                                    else [f"{n}@{i}" for i in implementations])]
    return tuple(out + [f"{n}@{i}[{sel}]" for i in implementations for sel in paths.get(i, ()) for n in fit
                        if n in PATH_TERMS and n != "thread_overhead"])


def _base_profiles(base: NetworkParams, implementations) -> dict:
    """Every implementation the measurements name: the base parameters' own profile, else a neutral one."""
    out = {}
    for name in implementations:
        try:
            out[name] = base.use(name).implementation
        except DirectcollError:
            out[name] = Implementation(name=name)
    return out


def _path_rows(groups, profiles: dict, count: int) -> list:
    """(implementation, code path selector or None) of every measurement."""
    out = [None] * count
    for pattern, idx, _, impl in groups:
        for i in idx:
            out[i] = (impl, profiles[impl].path_of(pattern.meta))
    return out


def _separable(rows, train=None) -> dict:
    """Implementation -> the code paths whose extra overheads the (``train``) rows can tell from the
    implementation's own: rows on the path and rows on no path."""
    used = [r for r, t in zip(rows, train if train is not None else [True] * len(rows), strict=True) if t]
    return {impl: tuple(dict.fromkeys(sel for i, sel in used if i == impl and sel))
            for impl in dict.fromkeys(i for i, sel in used if sel is None)}


def _profiles(base_profiles: dict, keys, source: str) -> dict:
    """The base profiles; the source of each whose software terms ``keys`` fits says so."""
    out = {}
    for name, profile in base_profiles.items():
        if any(_split(k)[1] == name for k in keys):
            fitted = f"software terms fitted by directcoll calibrate from {source}"
            profile = replace(profile, source=f"{profile.source}; {fitted}" if profile.source else fitted)
        out[name] = profile
    return out


def _with_values(base: NetworkParams, keys, x, profiles: dict) -> dict:
    """NetworkParams per implementation name with the fitted values ``x`` (in their units) in place."""
    net, soft = {}, {name: {} for name in profiles}
    paths = {name: {sel: dict(terms) for sel, terms in profiles[name].paths} for name in profiles}
    for key, v in zip(keys, x, strict=True):
        name, impl, selector = _split(key)
        lo, hi = _RANGE[name]
        v = min(max(float(v), lo), hi)  # a probe or a rounding may step past the range; the values never do
        value = 1.0 / (v * _UNIT[name]) if name in _INVERSE else v * _UNIT[name]
        if selector:
            paths[impl].setdefault(selector, {})[name] = value
        else:
            (soft[impl] if impl else net)[name] = value
    params = replace(base, **net)
    impls = tuple(replace(profiles[i], **soft[i], paths=tuple((sel, tuple(t.items())) for sel, t in paths[i].items()))
                  for i in profiles)
    params = replace(params, implementations=impls + tuple(i for i in base.implementations if i.name not in profiles))
    return {i.name: replace(params, implementation=i) for i in impls}


def _groups(measurements, topology: Topology, source: str, default: str):
    from directcoll.registry import build_pattern

    groups: dict[tuple, list[int]] = {}
    for i, m in enumerate(measurements):
        key = (m.algorithm, m.variant, m.collective, m.ports, m.implementation or default)
        groups.setdefault(key, []).append(i)
    out = []
    for (name, variant, collective, ports, impl), idx in groups.items():
        first = measurements[idx[0]]
        try:
            pattern = build_pattern(name, topology, collective, variant=variant, ports=ports)
        except DirectcollError as exc:
            raise DirectcollError(f"{source} line {first.line}: {first.label} on {topology.spec}: {exc}") from None
        sizes = np.array([measurements[i].size for i in idx], dtype=float)
        out.append((pattern, np.array(idx), sizes, impl))
    return out


def faster_than_links(measurements, topology, link_bandwidth: float | None = None, routing: str = "adaptive",
                      *, groups=None) -> list[tuple[int, float]]:
    """The measurements faster than the topology's links alone allow: the time their schedule's bytes take on
    its links (at ``link_bandwidth`` B/s, default the topology's own rates), with no latency, software, reduction
    or injection cost, is a lower bound on any run on that network. A measurement below it did not run there.

    Parameters:
        measurements: :class:`~directcoll.simulate.measurements.Measurement` rows (bytes, s).
        topology: a Topology or a spec string, the network the rows are said to have run on.
        link_bandwidth: bytes/s of every link, or None for the topology's own.
        routing: ``adaptive`` (every minimal path) or ``dor``.
        groups: the rows' schedules as :func:`calibrate` builds them (built here when None).

    Returns:
        (index into ``measurements``, measured / the links' time) for every measurement below the bound.

    Raises:
        DirectcollError: a row whose algorithm the registry refuses on the topology (naming its line).

    Source: docs/simulation.md, "Calibration" (the network check); docs/fidelity.md, "The network of each run".

    >>> from directcoll.simulate.measurements import Measurement
    >>> rows = [Measurement("ring", None, "allreduce", 4, 8e6, t) for t in (1e-3, 1e-4)]
    >>> faster_than_links(rows, "ring:4", link_bandwidth=1e10)   # 12 MB over 2 links a rank at 10 GB/s: 0.6 ms
    [(1, 0.16666666666666666)]
    """
    topo = parse_topology(topology) if isinstance(topology, str) else topology
    measurements = tuple(measurements)
    links = link_times(measurements, topo, link_bandwidth, routing, groups=groups)
    return [(i, m.seconds / float(t)) for i, (m, t) in enumerate(zip(measurements, links, strict=True))
            if m.seconds < t]


def link_times(measurements, topology, link_bandwidth: float | None = None, routing: str = "adaptive",
               *, groups=None) -> np.ndarray:
    """The time each measurement's schedule takes on the topology's links alone: its bytes at ``link_bandwidth``
    B/s (default the topology's own rates), no latency, software, reduction or injection cost.

    Parameters:
        measurements, topology, link_bandwidth, routing, groups: as :func:`faster_than_links`.

    Returns:
        float64 (M,), s, one per measurement.

    Raises:
        DirectcollError: a row whose algorithm the registry refuses on the topology (naming its line).

    Source: docs/simulation.md, "Calibration" (the network check).

    >>> from directcoll.simulate.measurements import Measurement
    >>> link_times([Measurement("ring", None, "allreduce", 4, 8e6, 1e-3)], "ring:4", link_bandwidth=1e10)
    array([0.0006])
    """
    topo = parse_topology(topology) if isinstance(topology, str) else topology
    measurements = tuple(measurements)
    if groups is None:
        groups = _groups(measurements, topo, "measurements", "")
    bound = NetworkParams(link_bandwidth=link_bandwidth, link_latency=0.0)
    out = np.zeros(len(measurements))
    for pattern, idx, group_sizes, _ in groups:
        out[idx] = simulate(pattern, topo, bound, routing).time(group_sizes)
    return out


def _starting_point(keys, seconds: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """A plausible start in the variables' units: latencies and overheads a tenth of the shortest time, per-byte
    costs a tenth of the largest time per byte, efficiencies 1; clipped to :data:`_RANGE`."""
    latency = max(0.1 * float(seconds.min()), 1e-8)
    per_byte = max(float((seconds / np.maximum(sizes, 1.0)).max()) * 0.1, 1e-13)
    x = []
    for key in keys:
        name = _name(key)
        v = 1.0 if name == "bandwidth_efficiency" else (latency if name in _LATENCY else per_byte) / _UNIT[name]
        lo, hi = _RANGE[name]
        x.append(min(max(v, lo), hi))
    return np.array(x)


def _solve(residuals, keys, start: np.ndarray, starts=STARTS, search: bool = True):
    """Bounded least squares on the logarithms of the variables from several starting points, each polished in
    the variables themselves; the best result (``search=False``: the polish from ``start`` only, for a start that
    is already close). Returns (x in the variables' units, the scipy result, whether every start stopped before
    converging)."""
    from scipy.optimize import least_squares

    lo = np.log([_RANGE[_name(k)][0] for k in keys])
    hi = np.log([_RANGE[_name(k)][1] for k in keys])
    best, stalled = None, True
    for factor in starts if search else (1.0,):
        u0 = np.clip(np.log(start) + np.where([_name(k) == "bandwidth_efficiency" for k in keys], 0.0,
                                              np.log(factor)), lo, hi)
        res = least_squares(lambda u: residuals(np.exp(u)), u0, bounds=(lo, hi), method="trf", x_scale="jac",
                            ftol=1e-8, xtol=1e-8, gtol=1e-8, max_nfev=SEARCH_EVALUATIONS) if search else None
        # then in the variables themselves: a term the log search drove towards 0 can come back (its gradient
        # vanishes there in log space)
        polish = least_squares(residuals, np.exp(res.x if search else u0), bounds=(np.exp(lo), np.exp(hi)),
                               method="trf", x_scale="jac", ftol=1e-12, xtol=1e-12, gtol=1e-12,
                               max_nfev=POLISH_EVALUATIONS)
        stalled = stalled and (res is None or res.status <= 0) and polish.status <= 0
        if best is None or polish.cost < best.cost:
            best = polish
    return best.x, best, stalled


def calibrate(measurements, topology, *, fit=None, routing: str = "adaptive",
              base: NetworkParams | None = None, source: str = "measurements", cross_validate: bool = True,
              given=()) -> Calibration:
    """Fit ``fit`` (fields of :data:`FITTABLE`) so that the step model reproduces ``measurements``.

    Network terms (:data:`NETWORK`) are shared by every measurement; software terms (:data:`SOFTWARE`) are fitted
    once per implementation the measurements name (``implementation`` column; rows without one belong to the
    base parameters' active implementation). The fit minimises the relative residuals model / measured - 1 over
    the logarithms of the variables, bounded by :data:`_RANGE`, from each of :data:`STARTS`; then every fitted
    value at a bound of its range is warned about, and, with ``cross_validate``, every algorithm (label) is left
    out in turn, the rest refitted and its times predicted: the cross-validation error.

    Args:
        measurements: :class:`Measurement` rows (sizes in bytes, times in s); every one's ranks must be the
            topology's compute nodes.
        topology: a Topology or a spec string.
        fit: the parameters to fit (default :func:`default_fit`: the network's alpha, link_bandwidth,
            per_hop_latency and gamma; with implementations named, their software terms too).
        routing: ``adaptive`` (default) or ``dor``.
        base: the values not fitted (default :class:`NetworkParams`: zero overheads, the topology's own links),
            with the implementations it describes.
        source: the measurements' file, for messages and the result's name.
        cross_validate: leave each algorithm out once (one refit per label).
        given: without ``fit``, the parameters the caller set (an option's value), which the default leaves out.

    Returns:
        :class:`Calibration`: the fitted NetworkParams (``name`` "calibrated from SOURCE"; its ``implementations``
        every implementation fitted), the model time and relative residual of every measurement, RMS and largest
        residual, warnings and notes, the fitted values' relative uncertainty, the cross-validation residuals.

    Raises:
        DirectcollError: no measurements, a measurement whose ranks differ from the topology's compute nodes, an
            empty or unknown ``fit``, a default fit that ``given`` leaves empty; an algorithm, variant, port count
            or collective the registry refuses (naming the line).
        SpecError, TopologyError, ResourceError: from the topology spec, the routing or a build over the budget.

    Source: docs/simulation.md, "Calibration"; scipy.optimize.least_squares (trust region reflective, Branch,
    Coleman & Li 1999) on relative residuals, bounded, in log space.

    >>> from directcoll.registry import build_pattern
    >>> from directcoll.simulate.measurements import Measurement
    >>> truth = NetworkParams(alpha=2e-6, link_bandwidth=10e9)
    >>> t = simulate(build_pattern("ring", "ring:4"), parse_topology("ring:4"), truth).time([8.0, 1e6])
    >>> data = [Measurement("ring", None, "allreduce", 4, s, float(x)) for s, x in zip([8.0, 1e6], t)]
    >>> c = calibrate(data, "ring:4", fit=("alpha", "link_bandwidth"))
    >>> round(c.fitted["alpha"] * 1e6, 6), round(c.fitted["link_bandwidth"] / 1e9, 6), c.warnings
    (2.0, 10.0, ())
    """
    topo = parse_topology(topology) if isinstance(topology, str) else topology
    measurements = tuple(measurements)
    base = base if base is not None else NetworkParams()
    defaulted = fit is None
    if fit is None:
        fit = default_fit(measurements, base, given)
        if not fit:
            raise DirectcollError(f"every parameter calibrate would fit is set ({', '.join(given)}): nothing is "
                                  "left to fit; set one fewer or name what to fit (--fit)")
    fit = parse_fit(",".join(fit)) if not isinstance(fit, str) else parse_fit(fit)
    if not measurements:
        raise DirectcollError(f"{source}: no measurements to fit")
    for m in measurements:
        if m.ranks != topo.num_compute:
            raise DirectcollError(f"{source} line {m.line}: measured on {m.ranks} ranks but {topo.spec} has "
                                  f"{topo.num_compute} compute nodes; calibrate one topology at a time (put each "
                                  "rank count in its own file with its --topology)")
    default = base.implementation.name
    groups = _groups(measurements, topo, source, default)
    implementations = tuple(dict.fromkeys(g[3] for g in groups))
    own = _base_profiles(base, implementations)
    rows = _path_rows(groups, own, len(measurements))
    keys = _keys(fit, implementations, _separable(rows), any(m.implementation for m in measurements))
    if defaulted:  # a one-thread implementation never starts threads: its thread cost is not a default term
        keys = tuple(k for k in keys if not (_name(k) == "thread_overhead" and own[_split(k)[1]].threads == 1))
    profiles = _profiles(own, keys, source)
    seconds = np.array([m.seconds for m in measurements])
    sizes = np.array([m.size for m in measurements])

    def model(x, rows=None, use=keys) -> np.ndarray:
        return model_for(_with_values(base, use, x, profiles), groups, topo, routing, len(measurements), rows)

    x, res, stalled = _solve(lambda v: model(v) / seconds - 1.0, keys, _starting_point(keys, seconds, sizes))
    warnings = [f"least squares stopped before converging from every start ({res.message}); the values may not be "
                "the best fit"] if stalled else []
    solved = keys  # the variables of the last solve (res)
    kept, x, found, columns = _identifiability(keys, x, model, seconds, sizes)
    warnings += found
    # of a set the rows cannot tell apart, the first (in _PRIORITY order) is fitted and the others keep their base
    # values (a preset's, else the defaults) rather than an arbitrary split: a prediction for a port count or a
    # code path the rows lack then rests on what the base says, not on an accident of the search
    apart = _independent(range(len(kept)), kept, columns.__getitem__)
    if len(apart) < len(kept):
        held = [k for i, k in enumerate(kept) if i not in apart]
        kept = solved = tuple(kept[i] for i in apart)
        x, res, _ = _solve(lambda v: model(v, use=kept) / seconds - 1.0, kept, x[apart], search=False)
        which = f"{', '.join(held)} keep their base values and the others are fitted"
        if any(_ARBITRARY in w for w in warnings):
            warnings = [w.replace(_ARBITRARY, which) for w in warnings]
        else:
            warnings.append(f"not separately identifiable from these measurements: {', '.join(held)} change the "
                            f"modelled times only as {', '.join(kept)} do; they keep their base values and the "
                            "others are fitted")
    warnings += _at_bounds(kept, x)
    warnings += _inherited_caps(base, kept, x)
    per_impl = _with_values(base, kept, x, profiles)
    times = model_for(per_impl, groups, topo, routing, len(measurements))
    r = times / seconds - 1.0
    rms, worst = float(np.sqrt(np.mean(r * r))), int(np.argmax(np.abs(r)))
    max_abs = float(abs(r[worst]))
    if rms > POOR_RMS or max_abs > POOR_MAX:
        m = measurements[worst]
        warnings.insert(0, f"poor fit: RMS relative residual {rms:.1%}, largest {r[worst]:+.1%} (line {m.line}, "
                           f"{m.label} at {m.size:g} B); thresholds {POOR_RMS:.0%} RMS, {POOR_MAX:.0%} largest: the "
                           "step model with these parameters does not describe these measurements (see "
                           "docs/simulation.md, Calibration)")
    params = per_impl[default] if default in per_impl else next(iter(per_impl.values()))
    beaten = tuple(faster_than_links(measurements, topo, params.link_bandwidth, routing, groups=groups))
    if beaten:
        i, ratio = min(beaten, key=lambda b: b[1])
        m = measurements[i]
        warnings.insert(0, f"{len(beaten)} of {len(measurements)} measurements are faster than the links of "
                           f"{topo.spec} alone allow (their bytes on its links, no latency or software cost), down "
                           f"to {ratio:.2f} of it (line {m.line}, {m.label} at {m.size:g} B): they did not run on "
                           "this network; give the one they ran on (a job's ranks on a machine's network: "
                           "placed(LOGICAL,PHYSICAL,order=...), docs/topology.md, Placement)")
    fitted = {k: _value_of(per_impl, k) for k in kept}
    notes = [f"{k} fitted at the bottom of its range (effectively 0)" for k in _at_bottom(kept, x, model)]
    uncertainty = _uncertainty(res, solved, kept, len(measurements))
    cv = (_cross_validation(measurements, kept, x, lambda v, rows=None: model(v, rows, kept), seconds, rows)
          if cross_validate else None)
    labels = ", ".join(dict.fromkeys(m.label for m in measurements))
    summary = (f"directcoll calibrate: least squares on {len(measurements)} measurements of {source} ({labels}) "
               f"on {topo.spec}, {routing} routing, fitted {', '.join(kept) or 'nothing'}; RMS relative residual "
               f"{rms:.3g}, largest {max_abs:.3g}")
    params = replace(_pin_links(params, topo), name=f"calibrated from {os.path.basename(source) or source}",
                     source=summary)
    return Calibration(params, fitted, measurements, times, r, rms, max_abs, tuple(warnings), tuple(notes),
                       topo.spec, routing, source, uncertainty, cv, beaten)


def model_for(per_impl: dict, groups, topo: Topology, routing: str, count: int, rows=None) -> np.ndarray:
    """float64 (M,): the step model's time of every measurement with the parameters of its implementation, s
    (with ``rows``, a bool (M,) mask, only the groups with a row there; NaN elsewhere).
    Raises: as :func:`directcoll.simulate.step.simulate`. Source: docs/simulation.md, "Calibration"."""
    out = np.full(count, np.nan)
    for pattern, idx, group_sizes, impl in groups:
        if rows is None or rows[idx].any():
            out[idx] = simulate(pattern, topo, per_impl[impl], routing).time(group_sizes)
    return out


def _value_of(per_impl: dict, key: str) -> float:
    name, impl, selector = _split(key)
    params = per_impl[impl] if impl else next(iter(per_impl.values()))
    if selector:
        return float(dict(dict(params.implementation.paths)[selector])[name])
    return float(getattr(params.implementation, name) if impl else getattr(params, name))


#: the largest relative change of any modelled time that setting a term to the bottom of its range may make for
#: the term to count as effectively 0 (the solver stops short of a bound by a tolerance, not exactly on it)
_NEGLIGIBLE = 1e-6


def _at_bottom(keys, x, model) -> list[str]:
    """The fitted terms (not inverse rates) within a decade of the bottom of their range whose value there changes
    no modelled time by more than :data:`_NEGLIGIBLE` against the bottom itself: effectively 0."""
    base = model(x, use=keys)
    out = []
    for i, key in enumerate(keys):
        lo = _RANGE[_name(key)][0]
        if _name(key) in _INVERSE or x[i] > 10 * lo:
            continue
        y = np.array(x, dtype=float)
        y[i] = lo
        if np.max(np.abs(model(y, use=keys) / base - 1.0)) <= _NEGLIGIBLE:
            out.append(key)
    return out


def _at_bounds(keys, x) -> list[str]:
    """Warnings for fitted values pinned at the top of their range, or an efficiency of 1 (the model wanted
    more): a term is missing or the data cannot bound it."""
    out = []
    for key, v in zip(keys, x, strict=True):
        lo, hi = _RANGE[_name(key)]
        if v >= hi * 0.9999 and _name(key) != "bandwidth_efficiency":
            out.append(f"{key} is at the top of its physical range ({hi * _UNIT[_name(key)]:g}); the model lacks a "
                       "term these measurements need, or they cannot bound it")
        if _name(key) in _INVERSE and v <= lo * 1.0001:
            out.append(f"{key} is at the top of its physical range (1 Eb/s); the measurements do not bound it")
    return out


def _inherited_caps(base: NetworkParams, keys, x) -> list[str]:
    """A warning when link bandwidth is fitted while the base's host-injection cap binds at the fitted value (the
    cap, not the links, would then set every bandwidth term)."""
    if base.host_injection is None or "link_bandwidth" not in keys or "host_injection" in keys:
        return []
    bw = 1.0 / (x[list(keys).index("link_bandwidth")] * _UNIT["link_bandwidth"])
    return [f"the base parameters' host_injection of {base.host_injection:g} B/s is kept while link_bandwidth is "
            f"fitted to {bw:g} B/s: where it binds it, not the links, sets the bandwidth term; give base "
            "parameters without it or fit with it in mind"] if base.host_injection < 2 * bw else []


def _uncertainty(res, keys, kept, count: int) -> dict:
    """Relative one-sigma uncertainty of each fitted value from the Jacobian at the solution (sigma / value);
    None where it cannot be estimated."""
    if count <= len(keys) or res.jac is None:
        return {k: None for k in kept}
    jac = np.asarray(res.jac)
    dof = max(count - len(keys), 1)
    s2 = float(2.0 * res.cost / dof)
    try:
        cov = np.linalg.pinv(jac.T @ jac) * s2
    except np.linalg.LinAlgError:
        return {k: None for k in kept}
    relative = np.sqrt(np.maximum(np.diag(cov), 0.0)) / np.maximum(np.abs(res.x), 1e-300)
    sigma = dict(zip(keys, relative, strict=True))
    return {k: float(sigma[k]) for k in kept}


def _neutralised(x: np.ndarray, keys, free) -> np.ndarray:
    """``x`` with every variable outside ``free`` at its neutral value (:data:`_NEUTRAL`)."""
    out = x.copy()
    for i, key in enumerate(keys):
        if i not in free:
            out[i] = _NEUTRAL.get(_name(key), 0.0)
    return out


def _told_apart(free, keys, x, model, seconds, sizes, train) -> list:
    """The variables of ``free`` whose effects on the ``train`` rows are not a combination of those kept before
    them, in :data:`_PRIORITY` order: of a set the rows cannot tell apart (a per-call and a per-message cost when
    every algorithm left has the same step count) one is fitted and the rest keep their neutral values."""
    now = model(x, train)
    return _independent(free, keys, lambda i: _effect(model, x, i, keys[i], seconds, sizes, now, train))


def _independent(free, keys, column_of) -> list:
    """Of ``free`` (indices into ``keys``), in :data:`_PRIORITY` order (a code path's terms after the rest), those
    whose effect column (``column_of(i)``) is not within :data:`_TOLD_APART` of the span of those kept before."""
    kept, basis = [], None
    for i in sorted(free, key=lambda i: (_split(keys[i])[2] is not None, _PRIORITY.index(_name(keys[i])))):
        column = column_of(i)
        norm = float(np.linalg.norm(column))
        if norm == 0.0:
            continue
        column = column / norm
        if basis is not None:
            rest = column - basis @ np.linalg.lstsq(basis, column, rcond=None)[0]
            if float(np.linalg.norm(rest)) < _TOLD_APART:
                continue
        kept.append(i)
        basis = column[:, None] if basis is None else np.column_stack([basis, column])
    return sorted(kept)


def _cross_validation(measurements, keys, x, model, seconds, rows) -> dict | None:
    """Leave each algorithm (label) out, refit the rest from the full fit, predict it: residuals per row, the
    median and largest |residual|, and per label. A software term whose implementation only the left-out label
    has keeps the value of a neutral implementation (it cannot be fitted without it); so does what a code path
    adds when the rest cannot tell it from the implementation's own terms (``rows``: each measurement's
    implementation and path, :func:`_path_rows`), and every variable but one of a set whose effects the rest
    cannot tell apart (:func:`_told_apart`). None with one label."""
    sizes = np.array([m.size for m in measurements], dtype=float)
    labels = [m.label for m in measurements]
    distinct = list(dict.fromkeys(labels))
    if len(distinct) < 2 or not keys:
        return None
    lab = np.array(labels)
    cv = np.full(len(measurements), np.nan)
    for label in distinct:
        out = lab == label
        train = ~out
        impls_left = {impl for (impl, _), t in zip(rows, train, strict=True) if t}
        paths_left = _separable(rows, train)
        free = []
        for i, key in enumerate(keys):
            _, impl, selector = _split(key)
            if not impl or (impl in impls_left if selector is None else selector in paths_left.get(impl, ())):
                free.append(i)
        free = _told_apart(free, keys, _neutralised(x, keys, free), model, seconds, sizes, train)
        neutral = _neutralised(x, keys, free)
        sub = [keys[i] for i in free]

        def residuals(v, free=free, neutral=neutral, train=train):
            full = neutral.copy()
            full[free] = v
            return (model(full, train) / seconds - 1.0)[train]

        if sub:
            v, _, _ = _solve(residuals, sub, np.clip(x[free], [_RANGE[_name(k)][0] for k in sub],
                                                     [_RANGE[_name(k)][1] for k in sub]), search=False)
            neutral[free] = v
        cv[out] = (model(neutral, out) / seconds - 1.0)[out]
    by_label = {label: float(np.median(np.abs(cv[lab == label]))) for label in distinct}
    return {"median_abs": float(np.median(np.abs(cv))), "max_abs": float(np.max(np.abs(cv))),
            "by_label": by_label, "residuals": cv.tolist()}


def _pin_links(params: NetworkParams, topology: Topology) -> NetworkParams:
    """Record the topology's own link latency (and bandwidth) that the fit used, when uniform and not overridden,
    so that ``--params FILE`` reproduces the fitted model on topologies with other defaults."""
    values = {}
    for name, own in (("link_latency", topology.link_latency), ("link_bandwidth", topology.link_bandwidth)):
        if getattr(params, name) is None and len(own) and np.all(own == own[0]):
            values[name] = float(own[0])
    return replace(params, **values)


def _probe_step(name: str, value: float, seconds: np.ndarray, sizes: np.ndarray) -> float:
    """The step that probes a variable's effect: 1 % of its value (of the data's scale, for a latency or per-byte
    cost fitted near 0: a probe of 1 % of ~0 would call a term that matters "without effect"); links step faster
    (would faster links change anything: not when a cap binds), and so does a cap (a cap that binds nowhere, or
    only just, leaves the times as they are: the data bound it from below only), an efficiency steps down."""
    if name == "bandwidth_efficiency":
        scale = 1.0
    elif name in _LATENCY:
        scale = float(seconds.min()) / _UNIT[name]
    else:
        scale = float((seconds / np.maximum(sizes, 1.0)).min()) / _UNIT[name]
    step = 0.01 * (max(value, scale) if name in (*_LATENCY, "gamma", "copy_overhead") else value) * (
        -1.0 if name in ("bandwidth_efficiency", *_INVERSE) else 1.0)
    return -step if value + step > _RANGE[name][1] else step  # at the top of its range: probe below it


def _effect(model, x: np.ndarray, j: int, key: str, seconds, sizes, now: np.ndarray, rows=None) -> np.ndarray:
    """The change of every (``rows``') relative time when variable ``j`` takes its probe step
    (:func:`_probe_step`); ``now``: the model's times at ``x``."""
    probe = x.copy()
    probe[j] += _probe_step(_name(key), x[j], seconds, sizes)
    column = (model(probe, rows) - now) / seconds
    return column if rows is None else column[rows]


def _identifiability(keys, x, model, seconds, sizes):
    """Probe each fitted variable's effect on the relative times (a 1 % step of its scale); drop the ones without
    effect (they keep their base value); name groups whose effects are proportional. Returns (the keys kept,
    their values, warnings, their unit effect columns)."""
    now = model(x)
    columns, kept, out = [], [], []
    for j, key in enumerate(keys):
        column = _effect(model, x, j, key, seconds, sizes, now)
        if np.abs(column).max() <= NO_EFFECT:
            out.append(f"{key} is not identifiable from these measurements: it changes none of the modelled "
                       "times (e.g. gamma without reductions); it is left at its base value, leave it out of --fit")
            continue
        columns.append(column / np.linalg.norm(column))
        kept.append(j)
    names = tuple(keys[j] for j in kept)
    if len(names) > len(seconds):
        out.append(f"{len(seconds)} measurement(s) for {len(names)} fitted parameters ({', '.join(names)}): the "
                   "fit is underdetermined; measure more sizes or algorithms, or fit fewer (--fit)")
    elif len(names) > 1:
        out += _collinear(names, np.array(columns), sizes)
    return names, x[kept], out, columns


def _collinear(names, columns: np.ndarray, sizes: np.ndarray) -> list[str]:
    """Warnings for parameters whose (unit-norm) effect columns are proportional: pairs first (grouped), then
    any remaining dependency among one representative per group (a near-zero singular value)."""
    k = len(names)
    group = list(range(k))
    for i in range(k):
        for j in range(i + 1, k):
            if abs(float(columns[i] @ columns[j])) >= 1.0 - COLLINEAR and group[j] == j:
                group[j] = group[i]
    sets = [[names[j] for j in range(k) if group[j] == g] for g in sorted(set(group))]
    found = [s for s in sets if len(s) > 1]
    reps = sorted(set(group))
    if len(reps) > 1:
        _, sv, vt = np.linalg.svd(columns[reps].T, full_matrices=False)
        null = [i for i in range(len(sv)) if sv[i] <= COLLINEAR * sv[0]]
        mixed = [names[reps[j]] for j in range(len(reps)) if any(abs(vt[i, j]) > 0.1 for i in null)]
        if mixed:
            found.append(mixed)
    if not found:
        return []
    why = (f"all measurements are at one size ({sizes[0]:g} B)" if len(set(sizes.tolist())) == 1 else
           "each set changes the modelled times only in fixed proportion (e.g. alpha and per_hop_latency when "
           "every transfer crosses the same number of hops, link_bandwidth and gamma within one allreduce "
           "algorithm)")
    sets_text = "; ".join(" and ".join(s) for s in found)
    return [f"not separately identifiable from these measurements: {sets_text}: {why}; {_ARBITRARY}; fit fewer "
            "(--fit) or add sizes or algorithms that separate them"]


def calibrate_file(path, topology, *, fmt: str | None = None, ranks: int | None = None,
                   algorithm: str | None = None, fit=None, routing: str = "adaptive",
                   base: NetworkParams | None = None, given=()) -> Calibration:
    """:func:`calibrate` on the measurements of a file (:func:`~directcoll.simulate.measurements.read_measurements`:
    a CSV, or an OSU benchmark's output with ``ranks`` and ``algorithm``; ``given`` as there).

    Returns:
        :class:`Calibration` whose params are named ``calibrated from FILE``.

    Raises:
        DirectcollError: a bad file (naming its line), ranks that differ from the topology's compute nodes, an
            unknown ``fit`` or an algorithm the registry refuses; SpecError, TopologyError, ResourceError as
            :func:`calibrate`.

    Source: docs/simulation.md, "Calibration"; scipy.optimize.least_squares (trust region reflective).

    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "osu.txt")
    ...     _ = open(path, "w").write("# OSU MPI Allreduce Latency Test v7.4\\n# Size  Avg Latency(us)\\n8  2.0\\n")
    ...     c = calibrate_file(path, "ring:4", ranks=4, algorithm="ring", fit=("alpha",))
    >>> c.params.name, round(c.fitted["alpha"] * 1e6, 3)  # us: 2 us = 6 steps of alpha + 100 ns link latency
    ('calibrated from osu.txt', 0.233)
    """
    measurements = read_measurements(path, fmt, ranks=ranks, algorithm=algorithm)
    return calibrate(measurements, topology, fit=fit, routing=routing, base=base, source=os.fspath(path),
                     given=given)


def parse_topology(spec: str) -> Topology:
    """The topology of a spec string (:func:`directcoll.topology.parse`).

    Returns:
        the :class:`~directcoll.topology.model.Topology`.

    Raises:
        SpecError, TopologyError, ResourceError: as :func:`directcoll.topology.parse`.

    Source: docs/topology.md (spec strings).

    >>> parse_topology("ring:4").num_compute
    4
    """
    from directcoll.topology import parse

    return parse(spec)

