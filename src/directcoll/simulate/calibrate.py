"""Fit the step model's network parameters to measured collective timings (``directcoll calibrate``).

The forward model is the project's step model (:func:`directcoll.simulate.simulate`) on the schedule each
measured algorithm builds (:func:`directcoll.registry.build_pattern`): every (algorithm, variant, collective)
is routed once per evaluation and timed at its measured sizes in closed form. A subset of four
:class:`~directcoll.simulate.params.NetworkParams` fields is fitted by ``scipy.optimize.least_squares`` (trust
region reflective, bounds >= 0) on the relative residuals model / measured - 1, in well-scaled variables:
alpha and per-hop latency in us, gamma and the inverse link bandwidth 1 / ``link_bandwidth`` in ns per byte (the
model is piecewise linear in these, so the fit is well conditioned). After the fit every fitted parameter's
effect on the measurements is probed: a parameter without effect is not identifiable (it is put back to its
base value), and parameters whose effects are proportional (a near-zero singular value of the normalised
sensitivity matrix) cannot be told apart; both give a warning, as does a poor fit (:data:`POOR_RMS`,
:data:`POOR_MAX`).

Source: docs/simulation.md, "Calibration"; the least-squares method: scipy.optimize.least_squares, method "trf"
(Branch, Coleman & Li, SIAM J. Sci. Comput. 21(1), 1999).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np

from directcoll.errors import DirectcollError
from directcoll.simulate.measurements import read_measurements
from directcoll.simulate.params import NetworkParams
from directcoll.simulate.step import simulate
from directcoll.topology.model import Topology

#: the NetworkParams fields calibrate can fit, and the default ``--fit``
FITTABLE = ("alpha", "link_bandwidth", "per_hop_latency", "gamma")
DEFAULT_FIT = FITTABLE
#: a fit is poor when the RMS relative residual is over 10 % or any one is over 25 % (docs/simulation.md,
#: "Calibration": OSU averages repeat within a few per cent; beyond these the model misses a regime)
POOR_RMS = 0.10
POOR_MAX = 0.25
#: parameters whose effects are proportional below this ratio of singular values cannot be told apart
COLLINEAR = 1e-6
#: a parameter changing no relative time by more than this (for a 1 % change of its scale) has no effect
NO_EFFECT = 1e-9
#: SI value of one unit of the fitted variable: us for the latencies, ns/B for gamma and 1 / link_bandwidth
_UNIT = {"alpha": 1e-6, "per_hop_latency": 1e-6, "gamma": 1e-9, "link_bandwidth": 1e-9}
#: the smallest inverse bandwidth, ns/B (1e9 GB/s): keeps link_bandwidth finite
_MIN_BETA = 1e-9
_LATENCY = ("alpha", "per_hop_latency")


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


@dataclass(frozen=True)
class Calibration:
    """The result of a fit: parameters, per-measurement residuals and what to beware of.

    Attributes:
        params: the fitted :class:`NetworkParams` (name ``calibrated from FILE``, source the fit's summary).
        fitted: the fitted values by name (s, bytes/s, s/byte as in NetworkParams); a parameter of ``fit``
            without effect on the measurements is left out (it keeps its base value; a warning says so).
        measurements: the measurements fitted, in input order.
        model: float64 (M,), the model's time of every measurement, s.
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

    @property
    def poor(self) -> bool:
        """Whether the fit is poor: RMS > :data:`POOR_RMS` or max > :data:`POOR_MAX`. Raises: Nothing.
        Source: docs/simulation.md, "Calibration" (thresholds)."""
        return self.rms > POOR_RMS or self.max_abs > POOR_MAX

    def to_dict(self) -> dict:
        """Everything as plain JSON types: ``params`` (:meth:`NetworkParams.to_dict`), ``fitted``, ``rms``,
        ``max_abs``, ``poor``, ``thresholds``, ``warnings``, ``notes``, ``topology``, ``routing``, ``source`` and
        ``measurements`` (line, algorithm, variant, collective, ranks, bytes, measured_s, model_s, residual).

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
        rows = [{"line": m.line, "algorithm": m.algorithm, "variant": m.variant, "collective": m.collective,
                 "ranks": m.ranks, "bytes": m.size, "measured_s": m.seconds, "model_s": float(t),
                 "residual": float(r)} for m, t, r in zip(self.measurements, self.model, self.residuals, strict=True)]
        return {"params": self.params.to_dict(), "fitted": dict(self.fitted), "rms": self.rms,
                "max_abs": self.max_abs, "poor": self.poor, "thresholds": {"rms": POOR_RMS, "max_abs": POOR_MAX},
                "warnings": list(self.warnings), "notes": list(self.notes), "topology": self.topology,
                "routing": self.routing, "source": self.source, "measurements": rows}

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
        return {**rest.pop("params"), "calibration": rest}


def _with_values(base: NetworkParams, fit, x) -> NetworkParams:
    values = {}
    for name, v in zip(fit, x, strict=True):
        if name == "link_bandwidth":
            values[name] = 1.0 / (max(float(v), _MIN_BETA) * _UNIT[name])
        else:
            values[name] = float(v) * _UNIT[name]
    return replace(base, **values)


def _groups(measurements, topology: Topology, source: str):
    from directcoll.registry import build_pattern

    groups: dict[tuple, list[int]] = {}
    for i, m in enumerate(measurements):
        groups.setdefault((m.algorithm, m.variant, m.collective), []).append(i)
    out = []
    for (name, variant, collective), idx in groups.items():
        first = measurements[idx[0]]
        try:
            pattern = build_pattern(name, topology, collective, variant=variant)
        except DirectcollError as exc:
            raise DirectcollError(f"{source} line {first.line}: {first.label} on {topology.spec}: {exc}") from None
        sizes = np.array([measurements[i].size for i in idx], dtype=float)
        out.append((pattern, np.array(idx), sizes))
    return out


def _starting_point(fit, seconds: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Scaled variables of a plausible start: latencies a tenth of the shortest time (at least 10 ns), per-byte
    costs a tenth of the largest time per byte (at least 1e-4 ns/B)."""
    latency = max(0.1 * float(seconds.min()), 1e-8)
    per_byte = float((seconds / np.maximum(sizes, 1.0)).max()) * 0.1
    per_byte = max(per_byte, 1e-13)
    return np.array([(latency if n in _LATENCY else per_byte) / _UNIT[n] for n in fit])


def calibrate(measurements, topology, *, fit=DEFAULT_FIT, routing: str = "adaptive",
              base: NetworkParams | None = None, source: str = "measurements") -> Calibration:
    """Fit ``fit`` (fields of :data:`FITTABLE`) so that the step model reproduces ``measurements``.

    Args:
        measurements: :class:`Measurement` rows (sizes in bytes, times in s); every one's ranks must be the
            topology's compute nodes.
        topology: a Topology or a spec string.
        fit: the parameters to fit (default all four: alpha, link_bandwidth, per_hop_latency, gamma).
        routing: ``adaptive`` (default) or ``dor``.
        base: the values not fitted (default :class:`NetworkParams`: zero overheads, the topology's own links).
        source: the measurements' file, for messages and the result's name.

    Returns:
        :class:`Calibration`: the fitted NetworkParams (``name`` "calibrated from SOURCE"), the model time and
        relative residual of every measurement, RMS and largest residual, warnings and notes.

    Raises:
        DirectcollError: no measurements, a measurement whose ranks differ from the topology's compute nodes, an
            empty or unknown ``fit``; an algorithm, variant or collective the registry refuses (naming the line).
        SpecError, TopologyError, ResourceError: from the topology spec, the routing or a build over the budget.

    Source: docs/simulation.md, "Calibration"; scipy.optimize.least_squares (trust region reflective, Branch,
    Coleman & Li 1999) on relative residuals with bounds >= 0.

    >>> from directcoll.registry import build_pattern
    >>> from directcoll.simulate.measurements import Measurement
    >>> truth = NetworkParams(alpha=2e-6, link_bandwidth=10e9)
    >>> t = simulate(build_pattern("ring", "ring:4"), parse_topology("ring:4"), truth).time([8.0, 1e6])
    >>> data = [Measurement("ring", None, "allreduce", 4, s, float(x)) for s, x in zip([8.0, 1e6], t)]
    >>> c = calibrate(data, "ring:4", fit=("alpha", "link_bandwidth"))
    >>> round(c.fitted["alpha"] * 1e6, 9), round(c.fitted["link_bandwidth"] / 1e9, 6), c.warnings
    (2.0, 10.0, ())
    """
    from scipy.optimize import least_squares

    fit = parse_fit(",".join(fit)) if not isinstance(fit, str) else parse_fit(fit)
    topo = parse_topology(topology) if isinstance(topology, str) else topology
    measurements = tuple(measurements)
    if not measurements:
        raise DirectcollError(f"{source}: no measurements to fit")
    for m in measurements:
        if m.ranks != topo.num_compute:
            raise DirectcollError(f"{source} line {m.line}: measured on {m.ranks} ranks but {topo.spec} has "
                                  f"{topo.num_compute} compute nodes; calibrate one topology at a time (put each "
                                  "rank count in its own file with its --topology)")
    base = base if base is not None else NetworkParams()
    groups = _groups(measurements, topo, source)
    seconds = np.array([m.seconds for m in measurements])
    sizes = np.array([m.size for m in measurements])

    def model(params: NetworkParams) -> np.ndarray:
        out = np.empty(len(measurements))
        for pattern, idx, group_sizes in groups:
            out[idx] = simulate(pattern, topo, params, routing).time(group_sizes)
        return out

    def residuals(x) -> np.ndarray:
        return model(_with_values(base, fit, x)) / seconds - 1.0

    lower = np.array([_MIN_BETA if n == "link_bandwidth" else 0.0 for n in fit])
    res = least_squares(residuals, _starting_point(fit, seconds, sizes), bounds=(lower, np.inf), method="trf",
                        x_scale="jac", ftol=1e-12, xtol=1e-12, gtol=1e-12, max_nfev=200 * (len(fit) + 1))
    x = np.maximum(res.x, lower)
    warnings = [] if res.status > 0 else [f"least squares stopped before converging ({res.message}); the values "
                                          "may not be the best fit"]
    kept, x, found = _identifiability(fit, x, base, model, seconds, sizes)
    warnings += found
    params = _with_values(base, kept, x)
    times = model(params)
    r = times / seconds - 1.0
    rms, worst = float(np.sqrt(np.mean(r * r))), int(np.argmax(np.abs(r)))
    max_abs = float(abs(r[worst]))
    if rms > POOR_RMS or max_abs > POOR_MAX:
        m = measurements[worst]
        warnings.insert(0, f"poor fit: RMS relative residual {rms:.1%}, largest {r[worst]:+.1%} (line {m.line}, "
                           f"{m.label} at {m.size:g} B); thresholds {POOR_RMS:.0%} RMS, {POOR_MAX:.0%} largest: the "
                           "step model with these parameters does not describe these measurements (see "
                           "docs/simulation.md, Calibration)")
    fitted = {n: getattr(params, n) for n in kept}
    notes = [f"{n} fitted at its lower bound 0" for n in kept if n != "link_bandwidth" and fitted[n] == 0.0]
    labels = ", ".join(dict.fromkeys(m.label for m in measurements))
    summary = (f"directcoll calibrate: least squares on {len(measurements)} measurements of {source} ({labels}) "
               f"on {topo.spec}, {routing} routing, fitted {', '.join(kept) or 'nothing'}; RMS relative residual "
               f"{rms:.3g}, largest {max_abs:.3g}")
    params = replace(_pin_links(params, topo), name=f"calibrated from {os.path.basename(source) or source}",
                     source=summary)
    return Calibration(params, fitted, measurements, times, r, rms, max_abs, tuple(warnings), tuple(notes),
                       topo.spec, routing, source)


def _pin_links(params: NetworkParams, topology: Topology) -> NetworkParams:
    """Record the topology's own link latency (and bandwidth) that the fit used, when uniform and not overridden,
    so that ``--params FILE`` reproduces the fitted model on topologies with other defaults."""
    values = {}
    for name, own in (("link_latency", topology.link_latency), ("link_bandwidth", topology.link_bandwidth)):
        if getattr(params, name) is None and len(own) and np.all(own == own[0]):
            values[name] = float(own[0])
    return replace(params, **values)


def _identifiability(fit, x, base, model, seconds, sizes):
    """Probe each fitted parameter's effect on the relative times (a 1 % step of its scale); drop the ones without
    effect (they keep their base value); name groups whose effects are proportional. Returns (the fitted names
    kept, their scaled values, warnings)."""
    latency_scale = float(seconds.min())
    per_byte_scale = float((seconds / np.maximum(sizes, 1.0)).min())
    now = model(_with_values(base, fit, x))
    columns, kept, out = [], [], []
    for j, name in enumerate(fit):
        scale = (latency_scale if name in _LATENCY else per_byte_scale) / _UNIT[name]
        step = 0.01 * max(x[j], scale)
        probe = x.copy()
        probe[j] += step
        column = (model(_with_values(base, fit, probe)) - now) / seconds
        if np.abs(column).max() <= NO_EFFECT:
            value = getattr(base, name)
            shown = "the topology's own links" if value is None else f"{value:g}"
            out.append(f"{name} is not identifiable from these measurements: it changes none of the modelled "
                       f"times (e.g. gamma without reductions); it is left at its base value ({shown}), leave it "
                       "out of --fit")
            continue
        columns.append(column / np.linalg.norm(column))
        kept.append(j)
    names = tuple(fit[j] for j in kept)
    if len(names) > len(seconds):
        out.append(f"{len(seconds)} measurement(s) for {len(names)} fitted parameters ({', '.join(names)}): the "
                   "fit is underdetermined; measure more sizes or algorithms, or fit fewer (--fit)")
    elif len(names) > 1:
        out += _collinear(names, np.array(columns), sizes)
    return names, x[kept], out


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
    return [f"not separately identifiable from these measurements: {sets_text}: {why}; their fitted values are one "
            "of many equally good choices; fit fewer (--fit) or add sizes or algorithms that separate them"]


def calibrate_file(path, topology, *, fmt: str | None = None, ranks: int | None = None,
                   algorithm: str | None = None, fit=DEFAULT_FIT, routing: str = "adaptive",
                   base: NetworkParams | None = None) -> Calibration:
    """:func:`calibrate` on the measurements of a file (:func:`~directcoll.simulate.measurements.read_measurements`:
    a CSV, or an OSU benchmark's output with ``ranks`` and ``algorithm``).

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
    return calibrate(measurements, topology, fit=fit, routing=routing, base=base, source=os.fspath(path))


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

