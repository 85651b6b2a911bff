"""Commands on topologies and schedules: topology describe and families, schedule, verify, cost, algorithms, table2.

Every ``cmd_*`` takes the parsed arguments, prints its result on stdout (``--json``: one JSON document) and
returns the exit status; errors are raised as :class:`~directcoll.errors.DirectcollError` for
:func:`directcoll.cli.main.main` to print as one line (status 2).

Source: docs/architecture.md, "Command line" (the CLI is a thin layer; output is a contract).

>>> from directcoll.cli.main import main
>>> main(["schedule", "no-such-algorithm", "ring:4", "-o", "x.json"])  # the error goes to stderr
2
"""

from __future__ import annotations

import sys
import time

import numpy as np

from directcoll.cli.options import bandwidth, check_output, count, one_size, preset_spec
from directcoll.cli.output import Heartbeat, ProgressBar, echo, print_fields, print_json
from directcoll.errors import DirectcollError
from directcoll.units import plural

DEFAULT_TOPOLOGY = "torus:8x8"

DEFAULT_ALGORITHM = "swing"



def cmd_topology_describe(args) -> int:
    """``directcoll topology describe SPEC``: N, switches, links, degree, diameter, average distance, bandwidths,
    bisection and the Moore bound of a topology; with ``--alltoall`` also its all-to-all MCF value F (or, with
    ``--method bracket``, certified bounds on it).

    Output: a table, or with ``--json`` one object (:meth:`TopologySummary.to_dict
    <directcoll.topology.metrics.TopologySummary.to_dict>` plus the ``alltoall_*`` fields; bandwidths in bytes/s).

    Returns:
        0.

    Raises:
        SpecError: an unparseable spec. TopologyError: an unusable topology (e.g. disconnected, for the MCF).
        ResourceError: over the memory budget. SolverError: the MCF LP failed.
        DirectcollError: MCF options without ``--alltoall``, bracket-only options with another method, or a bad
            bandwidth.

    Source: Zhao et al. (NSDI'25) Def. 9 (Moore bound) and App. A.5 (all-to-all throughput); Basu et al.
    (HPDC'24) Sec. 3.1 (MCF) and Fig. 2 (host-to-NIC bottleneck).

    >>> from directcoll.cli.main import main
    >>> main(["topology", "describe", "ring:4", "--json"])  # doctest: +ELLIPSIS
    {
      "spec": "ring:4",
    ...
      "diameter": 2,
    ...
    }
    0
    """
    from directcoll.cost.bounds import topology_moore_bound
    from directcoll.topology import describe, parse

    link_bandwidth = getattr(args, "link_bandwidth", None)  # bytes/s, read by the parser
    spec = preset_spec(args.spec)
    topology = parse(spec) if link_bandwidth is None else parse(spec, link_bandwidth=link_bandwidth)
    out = describe(topology).to_dict()
    out["moore_bound_diameter"] = topology_moore_bound(topology)
    if topology.params.get("description"):  # a network file: where its link values come from
        out["source"] = topology.params["description"]
    if getattr(args, "alltoall", False):
        out.update(_alltoall_fields(topology, args))
    elif any(getattr(args, k, None) is not None for k in ("host_bandwidth", "method", "max_iterations", "target_gap",
                                                          "time_limit")):
        raise DirectcollError("--method, --host-bandwidth, --max-iterations, --target-gap and --time-limit apply to "
                              "the all-to-all MCF; add --alltoall")
    if args.json:
        print_json(out)
    else:
        print_fields(f"topology {out['spec']}", out)
    return 0


def cmd_topology_families(args) -> int:
    """``directcoll topology families``: every topology family, alias and operator of the spec grammar with its
    form and a description.

    Output: one line per entry, or with ``--json`` a list of {name, form, type, description} objects.

    Returns:
        0.

    Raises:
        Nothing: lists the spec grammar.

    Source: :mod:`directcoll.topology.spec` (docs/topology.md, docs/expansions.md; Zhao et al. (NSDI'25) Sec. 5
    operators and App. F families).

    >>> from directcoll.cli.main import main
    >>> main(["topology", "families"])  # doctest: +ELLIPSIS
    torus ...
    0
    """
    from directcoll.topology.table import families

    rows = families()
    if args.json:
        print_json(rows)
        return 0
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        echo(f"{r['name']:<{width}}  {r['form']}  ({r['type']}: {r['description']})", hang=width + 2)
    return 0


def add_alltoall_options(p) -> None:
    """The all-to-all MCF options of ``topology describe`` (library: directcoll.synthesis.mcf.link.alltoall_mcf).

    Adds ``--alltoall``, ``--method``, ``--max-iterations``, ``--target-gap``, ``--link-bandwidth`` and
    ``--host-bandwidth`` to the parser ``p``.

    Raises:
        Nothing: adds arguments.

    Source: Basu et al. (HPDC'24) Sec. 3.1 (MCF), Sec. 3.2.2 and Fig. 2 (host-to-NIC bottleneck); docs/alltoall.md.
    """
    p.add_argument("--alltoall", action="store_true",
                   help="also compute the all-to-all max concurrent flow F (alltoall_mcf, in units of one link)")
    p.add_argument("--method", choices=["auto", "link", "decomposed", "symmetric", "automorphism", "certified",
                                        "bracket"],
                   help="MCF method (default auto: symmetric on Cayley topologies, else automorphism (one source per "
                        "orbit of the BLISS automorphism group) or link while the LP has at most 100,000 flow "
                        "columns, else certified); certified: lower <= F <= upper iterated to --target-gap; bracket: "
                        "Frank-Wolfe bounds")
    p.add_argument("--max-iterations", type=count(0), help="bracket and certified only: iteration cap, >= 0 "
                                                           "(default 400 and 2000); a warning says when it stops the "
                                                           "run before --target-gap")
    p.add_argument("--target-gap", type=_fraction, help="bracket and certified only: stop at this relative gap "
                                                       "(upper - lower) / lower, e.g. 0.01 or 1%% (default 0.1%% for "
                                                       "bracket, 1%% for certified)")
    p.add_argument("--time-limit", type=float, help="certified only: stop after this many seconds, > 0 (the bounds "
                                                    "hold; the gap is reported)")
    p.add_argument("--link-bandwidth", type=bandwidth, help="override: link bandwidth with its unit, e.g. 400Gbps "
                                                            "or 50GB/s (a bare number is refused)")
    p.add_argument("--host-bandwidth", type=bandwidth, help="host <-> NIC bandwidth, e.g. 100Gbps or 12.5GB/s: "
                                                            "models the host-to-NIC bottleneck (Basu et al. Fig. 2)")


def _fraction(text: str) -> float:
    """argparse type: a relative gap >= 0, ``0.001`` or ``0.1%``."""
    import argparse
    import math

    body = text.strip()
    scale = 100.0 if body.endswith("%") else 1.0
    try:
        value = float(body.rstrip("%")) / scale
    except ValueError:
        value = float("nan")
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a relative gap >= 0 such as 0.001 or 0.1%, got {text!r}")
    return value


def _alltoall_fields(topology, args) -> dict:
    from fractions import Fraction

    from directcoll.cost.bounds import capacity_bound
    from directcoll.synthesis.mcf.link import alltoall_mcf

    bound = capacity_bound(topology, host_bandwidth=args.host_bandwidth)
    method = args.method or "auto"
    if method == "auto":
        from directcoll.synthesis.mcf.certified import auto_method

        method, columns = auto_method(topology, host_bandwidth=args.host_bandwidth)
        if method == "certified":
            print(f"directcoll: note: the exact LP of {topology.spec} has {columns:,} flow columns after the "
                  "symmetry reductions; bounding F by --method certified instead", file=sys.stderr)
    if method == "certified" and getattr(args, "time_limit", None) is not None and not args.time_limit > 0:
        raise DirectcollError(f"--time-limit must be > 0 seconds, got {args.time_limit}")
    if method in ("bracket", "certified"):
        from directcoll.synthesis.mcf.bracket import alltoall_mcf_bracket
        from directcoll.synthesis.mcf.certified import alltoall_mcf_certified

        limits = {k: v for k, v in (("rel_gap", args.target_gap), ("max_iterations", args.max_iterations))
                  if v is not None}
        with Heartbeat(f"bounding the all-to-all MCF of {topology.spec} ({method})") as beat:
            if method == "bracket":
                b = alltoall_mcf_bracket(topology, host_bandwidth=args.host_bandwidth,
                                         progress=lambda it, cap, gap: beat(f"iteration {it}/{cap}, gap {gap:.2%}"),
                                         **limits)
            else:
                b = alltoall_mcf_certified(
                    topology, host_bandwidth=args.host_bandwidth, time_limit=getattr(args, "time_limit", None),
                    progress=lambda it, lo, up, gap: beat(f"iteration {it}, {lo:.6g} <= F <= {up:.6g}, "
                                                          f"gap {gap:.2%}"), **limits)
        if not b.converged:
            print(f"directcoll: warning: the bounds did not converge: gap {b.gap:.2%} after {b.iterations} "
                  f"iterations, target {b.rel_gap:.2%} (raise --max-iterations, --time-limit or --target-gap)",
                  file=sys.stderr)
        return {"alltoall_mcf_lower": b.lower, "alltoall_mcf_upper": b.upper, "alltoall_mcf_gap": b.gap,
                "alltoall_mcf_converged": b.converged, "alltoall_mcf_target_gap": b.rel_gap,
                "alltoall_mcf_method": method, "alltoall_mcf_iterations": b.iterations,
                "alltoall_mcf_max_iterations": b.max_iterations, "alltoall_mcf_seconds": b.seconds,
                "alltoall_capacity_bound": bound}
    if args.max_iterations is not None or args.target_gap is not None or getattr(args, "time_limit", None):
        raise DirectcollError("--max-iterations, --target-gap and --time-limit apply to --method bracket and "
                              "certified only")
    with Heartbeat(f"solving the all-to-all MCF of {topology.spec} (method {method})"):
        result = alltoall_mcf(topology, method=method, host_bandwidth=args.host_bandwidth)
    fields = {"alltoall_mcf": result.value, "alltoall_mcf_method": result.method,
              "alltoall_capacity_bound": bound,
              "alltoall_reference_bandwidth_bytes_per_s": result.reference_bandwidth,
              **({"alltoall_host_bandwidth_bytes_per_s": result.host_bandwidth} if result.host_bandwidth else {}),
              "alltoall_throughput_bytes_per_s": result.throughput_bytes_per_s}
    if not args.json:
        frac = Fraction(result.value).limit_denominator(10_000)
        if abs(float(frac) - result.value) <= 1e-9 * result.value:
            fields["alltoall_mcf"] = f"{result.value:.6g} (= {frac})"
    return fields



def cmd_schedule(args) -> int:
    """``directcoll schedule ALGORITHM SPEC -o FILE``: build a schedule (:func:`directcoll.registry.build`; ALGORITHM
    a registry name, a plugin's, or ``file:PATH`` of a file defining one) and save it
    (:func:`directcoll.schedule.io.save`; ``.npz`` or JSON by the file's suffix).

    ``--steps`` / ``--group`` / ``--placement`` choose the generalized allreduce's r, group and h (``--steps auto``:
    the fastest r at ``--sizes`` under ``--params``, eq. 37's choice printed on stderr beside it); ``--method`` is
    mcf's variant.

    Output: ``wrote FILE: ...`` or, with ``--json``, {file, algorithm, collective, ranks, steps, transfers, nblocks,
    meta, seconds}.

    Returns:
        0.

    Raises:
        DirectcollError: an unwritable ``-o``, ``--method`` disagreeing with ``--variant``, ``--steps`` / ``--group``
            for another algorithm or out of range, an ALGORITHM ``file:PATH`` that cannot be loaded or defines
            several algorithms (docs/language.md).
        UnsupportedShapeError, ScheduleError, SpecError, TopologyError, ResourceError, SolverError: as
            :func:`directcoll.registry.build`.

    Source: docs/architecture.md, "Schedule IR" (files); Kolmakov & Zhang Sec. 8, eq. (36)-(37) for ``--steps``.

    >>> import os, tempfile
    >>> from directcoll.cli.main import main
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     main(["schedule", "generalized", "ring:7", "--steps", "5", "-o", os.path.join(tmp, "g.npz")])
    ...     # doctest: +ELLIPSIS
    wrote .../g.npz: generalized allreduce on ring:7, 7 ranks, 5 steps, ... transfers
    0
    """
    from directcoll.plugins import one_algorithm
    from directcoll.registry import build
    from directcoll.schedule import save

    t0 = time.perf_counter()
    check_output(args.output, "-o")
    args.algorithm = one_algorithm(args.algorithm)  # a plugin's name, or file:PATH of one algorithm
    args.spec = preset_spec(args.spec)
    options = {**_generalized_options(args), **build_options(args)}
    network, bfb = _bfb_options(args, args.spec, "schedule")
    method = getattr(args, "method", None)  # mcf: --method timestepped|path|extp is the variant
    if method is not None and args.variant not in (None, method):
        raise DirectcollError(f"--method {method} and --variant {args.variant} disagree; give one of them")
    schedule = build(args.algorithm, network, args.collective, variant=method or args.variant, ports=args.ports,
                     **options, **bfb)
    path = save(schedule, args.output)
    info = {"file": str(path), "algorithm": schedule.algorithm, "collective": schedule.collective.value,
            "ranks": schedule.nranks, "steps": schedule.num_steps, "transfers": schedule.num_transfers,
            "nblocks": schedule.nblocks, "meta": schedule.meta, "seconds": time.perf_counter() - t0}
    if args.json:
        print_json(info)
    else:
        print(f"wrote {path}: {schedule.algorithm} {schedule.collective.value} on {args.spec}, "
              f"{plural(schedule.nranks, 'rank')}, {plural(schedule.num_steps, 'step')}, "
              f"{plural(schedule.num_transfers, 'transfer')}"
              + _bfb_summary(schedule.meta, schedule.collective.value))
    return 0


def _bfb_options(args, spec: str, command: str) -> tuple:
    """(the network to build on, bfb options): the one size of ``--sizes`` as bfb's ``size`` (Zhao et al. App.
    E.3; ``--chunks``, App. E.2, is a build option of :func:`build_options`); a note on stderr when links differ in
    latency and no size is given. Other algorithms get the spec unchanged and no options."""
    from directcoll.registry import get

    if get(args.algorithm or DEFAULT_ALGORITHM).name != "bfb":
        return spec, {}
    from directcoll.topology import parse

    topology = parse(spec)
    options = {}
    if args.sizes is not None:
        options["size"] = one_size(args.sizes, f"{command} bfb --sizes")
    elif topology.num_links and np.ptp(topology.link_latency) > 0:
        print(f"directcoll: note: the links of {topology.spec} differ in latency; without --sizes M, BFB balances "
              "bandwidth only (LP (14) of Zhao et al. App. E.3 needs the size M)", file=sys.stderr)
    return topology, options


def _bfb_summary(meta: dict, collective: str) -> str:
    """``; T_B = ... M/B`` (and the LP's, the LP (14) time and dropped links) for a BFB schedule, else ""."""
    if "t_b_m_over_b_lp" not in meta:
        return ""
    out = f"; T_B = {float(meta['t_b_m_over_b_lp']):.6g} M/B" + (" per phase" if collective == "allreduce" else "")
    if "t_b_m_over_b_relaxed" in meta:
        out += f" with {meta['chunks']} chunks per shard (LP: {float(meta['t_b_m_over_b_relaxed']):.6g} M/B)"
    if "bfb_time_s" in meta:
        out += (f"; LP (14) time at {meta['size_bytes']:.6g} B: {meta['bfb_time_s'] * 1e6:.6g} us, "
                f"{meta['bfb_dropped_links']} slow in-links dropped")
    return out



def rooted_option(collective: str, root: int | None) -> int | None:
    """``--root`` checked against ``--collective``: the root for broadcast and reduce (None: the default, 0).

    Raises:
        DirectcollError: ``--root`` with another collective.

    Source: MPI 4.1 standard, Ch. 6 (the root of MPI_Bcast and MPI_Reduce).

    >>> rooted_option("broadcast", 2), rooted_option("allreduce", None)
    (2, None)
    """
    if root is not None and collective not in ("broadcast", "reduce"):
        raise DirectcollError(f"--root {root}: only broadcast and reduce have a root; --collective is {collective}")
    return root


def build_options(args) -> dict:
    """``--root``, ``--chunks``, ``--host-bandwidth`` (mcf) and ``--time-limit`` (ilp-disjoint) as build options of
    ``args.algorithm`` (those it takes; absent ones left out).

    Raises:
        DirectcollError: ``--root`` with a collective other than broadcast and reduce, ``--chunks`` for an
            algorithm that does not pipeline (naming those that do), ``--host-bandwidth`` or ``--time-limit`` for
            another algorithm than mcf or ilp-disjoint.
        UnsupportedShapeError: an unknown algorithm.

    Source: docs/algorithms.md (each algorithm's options).
    """
    import inspect

    from directcoll.registry import ALGORITHMS, get

    options = {}
    root = rooted_option(args.collective, getattr(args, "root", None))
    if root is not None:
        options["root"] = root
    if getattr(args, "chunks", None) is not None:
        takes = [a.name for a in ALGORITHMS.values() if "chunks" in inspect.signature(a.build).parameters]
        if get(args.algorithm or DEFAULT_ALGORITHM).name not in takes:
            raise DirectcollError(f"--chunks applies to {', '.join(takes)}; not to {args.algorithm}")
        options["chunks"] = args.chunks
    for flag, key, algorithm in (("--host-bandwidth", "host_bandwidth", "mcf"),
                                 ("--time-limit", "time_limit", "ilp-disjoint")):
        if getattr(args, key, None) is not None:
            if get(args.algorithm or DEFAULT_ALGORITHM).name != algorithm:
                raise DirectcollError(f"{flag} applies to {algorithm} only; not to {args.algorithm}")
            options[key] = getattr(args, key)
    return options


def _generalized_options(args) -> dict:
    """--steps / --group for the generalized allreduce: a step count, or "auto" = the r whose schedule the step
    model times fastest at --sizes on the topology with --params (eq. 37's choice is printed beside it)."""
    placement = getattr(args, "placement", None)
    if args.steps is None and args.group is None and placement is None:
        return {}
    from directcoll.registry import get

    if get(args.algorithm).name != "generalized":
        raise DirectcollError("--steps, --group and --placement apply to the generalized algorithm only")
    from directcoll.algorithms.generalized import num_steps
    from directcoll.topology import parse

    options = {"group": args.group or "cyclic", **({"placement": placement} if placement else {})}
    topology = parse(args.spec)
    p = topology.num_compute
    top = num_steps(p)
    if args.steps is None:
        return options
    if args.steps != "auto":
        if not args.steps.isdigit() or not top <= int(args.steps) <= 2 * top:
            raise DirectcollError(f"--steps must be 'auto' or a step count between ceil(log2 P) = {top} and "
                                  f"2 ceil(log2 P) = {2 * top} for P = {p}, got {args.steps!r}")
        return {**options, "r": 2 * top - int(args.steps)}
    from directcoll.cost.kolmakov import best_r_eq37
    from directcoll.registry import build_pattern
    from directcoll.simulate import network_params, simulate

    params = network_params("kolmakov-cluster" if args.params is None else args.params)
    size = one_size(args.sizes or "1MiB", "schedule --steps auto")
    times = [float(simulate(build_pattern("generalized", topology, "allreduce", r=r, **options),
                            topology, params).time(size)) for r in range(top + 1)]
    r = int(np.argmin(times))
    eq37 = best_r_eq37(p, size, params.alpha, 1 / (params.host_injection or params.link_bandwidth or 1e30),
                       params.gamma)
    print(f"--steps auto: r = {r} ({2 * top - r} steps) is fastest at {size} B with {params.name}; eq. 37 "
          f"gives r = {eq37}", file=sys.stderr)
    return {**options, "r": r}



def cmd_verify(args) -> int:
    """``directcoll verify FILE``: execute a schedule file exactly (:func:`directcoll.verify.verify`).

    Output: ``OK: ...`` or ``FAILED: ...: step, rank, interval, expected, found, reason``; with ``--json``
    :meth:`VerifyResult.to_dict <directcoll.verify.exact.VerifyResult.to_dict>`. With ``--order``, the OK line
    ends with ``; order-preserving (...)`` or ``; not order-preserving: step, rank, interval: why``
    (:func:`directcoll.verify.order.check_order`).

    Returns:
        0 when the schedule implements its collective (in rank order, with ``--order``), 1 when it does not.

    Raises:
        ScheduleFormatError, ScheduleError, ResourceError: an unreadable file or a state over the budget.

    Source: docs/verification.md.

    >>> from directcoll.cli.main import main
    >>> main(["verify", "no/such/file.json"])
    2
    """
    from directcoll.schedule import load
    from directcoll.verify import verify

    schedule = load(args.file)
    big = not args.json and schedule.num_transfers > 50_000
    with ProgressBar(schedule.num_steps, "verifying", enabled=big) as tick:
        result = verify(schedule, seed=args.seed, on_step=tick, order=getattr(args, "order", False))
    if args.json:
        print_json(result.to_dict())
    else:
        print(result.summary())
    return 0 if result.ok and (result.order is None or result.order.preserving) else 1



def cmd_cost(args) -> int:
    """``directcoll cost [FILE]``: steps, bytes per rank, deficiencies (Lambda, Psi, Xi), T_L / T_B and, with
    ``--sizes``, an alpha-beta-gamma time of a schedule file, or of a schedule built with ``--algorithm`` /
    ``--topology`` (default swing allreduce on torus:8x8).

    Output: a table, or with ``--json`` :meth:`CostReport.to_dict <directcoll.cost.analytic.CostReport.to_dict>`
    plus ``size_bytes``, ``time_s``, ``eq1_time_s`` (the Swing paper's Eq. 1,
    :func:`directcoll.cost.swing_model.eq1_time`), ``goodput_bytes_per_s``, ``alpha_s``, ``gamma_s_per_byte`` when
    ``--size`` is given (one size); for Swing-B on a torus of power-of-two sides also
    ``congestion_deficiency_closed_form`` (Sec. 4.1-4.2, exact) and ``congestion_deficiency_eq3`` (the paper's
    Eq. 3 estimate) beside the measured ``congestion_deficiency``.

    Returns:
        0.

    Raises:
        DirectcollError: a file that records no topology and no ``--topology``, or more than one size.
        ScheduleFormatError, ScheduleError, SpecError, TopologyError, UnsupportedShapeError, ResourceError: from
            loading, building or analysing the schedule.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 2.2, Eq. (1) (Lambda, Psi, Xi, the time) and Sec. 4.2, Eq. (3);
    Zhao et al. (NSDI'25) Sec. 3.2 (T_L, T_B).

    >>> from directcoll.cli.main import main
    >>> main(["cost", "--algorithm", "ring", "--topology", "ring:4", "--json"])  # doctest: +ELLIPSIS
    {
    ...
    }
    0
    """
    from directcoll.cost import CostParams, analyze
    from directcoll.registry import build
    from directcoll.schedule import load
    from directcoll.topology import parse
    from directcoll.units import format_bandwidth, format_size, format_time

    if args.file and getattr(args, "chunks", None) is not None:
        raise DirectcollError("--chunks applies when cost builds a bfb schedule (--algorithm bfb), not to a file")
    if args.file:
        schedule = load(args.file)
        spec = args.topology or schedule.meta.get("topology")
        if not spec:
            raise DirectcollError(f"{args.file} does not record its topology; pass --topology SPEC")
        spec = preset_spec(spec)
    else:
        spec = preset_spec(args.topology or DEFAULT_TOPOLOGY)
        network, bfb = _bfb_options(args, spec, "cost")
        schedule = build(args.algorithm or DEFAULT_ALGORITHM, network, args.collective, variant=args.variant,
                         ports=args.ports, **build_options(args), **bfb)
    topology = parse(spec)
    report = analyze(schedule, topology)
    out = report.to_dict()
    params = CostParams(alpha=args.alpha, gamma=args.gamma)
    swing_b = report.algorithm == "swing" and schedule.meta.get("variant") == "bandwidth"
    if swing_b and topology.kind == "torus" and all(d & (d - 1) == 0 for d in topology.shape):
        from directcoll.cost.swing_model import swing_xi_closed_form, swing_xi_eq3

        out["congestion_deficiency_closed_form"] = swing_xi_closed_form(topology.shape)
        out["congestion_deficiency_eq3"] = swing_xi_eq3(topology.shape)
    if args.sizes is not None:
        from directcoll.cost.swing_model import eq1_time

        size = one_size(args.sizes, "cost")
        out["size_bytes"] = size
        out["time_s"] = float(report.time(size, params))
        out["eq1_time_s"] = eq1_time(report, size, alpha=params.alpha)
        out["goodput_bytes_per_s"] = size / out["time_s"]
        out["alpha_s"], out["gamma_s_per_byte"] = params.alpha, params.gamma
    if args.json:
        print_json(out)
        return 0
    shown = {k: v for k, v in out.items() if k not in ("time_s", "eq1_time_s", "goodput_bytes_per_s")
             and v is not None}
    extra = []
    if args.sizes is not None:
        extra = [("bytes sent per rank", format_size(out["bytes_per_rank"] * out["size_bytes"])),
                 ("time (α-β-γ, no contention)", format_time(out["time_s"])),
                 ("time (Swing Eq. 1: log2(p) α Λ + n/D β Ψ Ξ)", format_time(out["eq1_time_s"])),
                 ("goodput", format_bandwidth(out["goodput_bytes_per_s"]))]
    print_fields(f"cost of {report.algorithm} {report.collective} on {spec}", shown, extra)
    return 0



def cmd_algorithms(args) -> int:
    """``directcoll algorithms``: every registered algorithm with its summary (paper and section), collectives,
    variants and the topologies it serves.

    Output: three lines per algorithm (a fourth, ``from:``, for plugins: docs/language.md, "Plugins"), or with
    ``--json`` a list of :meth:`Algorithm.to_dict <directcoll.registry.Algorithm.to_dict>` (plugins with their
    ``origin``).

    Returns:
        0.

    Raises:
        Nothing: lists the registry (a plugin that fails to load is a warning line on stderr).

    Source: :data:`directcoll.registry.ALGORITHMS` (each summary cites its paper).

    >>> from directcoll.cli.main import main
    >>> main(["algorithms"])  # doctest: +ELLIPSIS
    ring: ring reduce-scatter + allgather, 1, 2 or 4 concurrent rings (Swing paper
    ...
    0
    """
    from directcoll.plugins import load_installed, origin
    from directcoll.registry import ALGORITHMS

    load_installed()
    entries = [{**alg.to_dict(), **({} if origin(alg.name) == "built-in" else {"origin": origin(alg.name)})}
               for alg in ALGORITHMS.values()]
    if args.json:
        print_json(entries)
        return 0
    for e in entries:
        echo(f"{e['name']}: {e['summary']}")
        echo(f"collectives: {', '.join(e['collectives'])}; variants: {', '.join(e['variants'])}", indent=4)
        echo(f"serves: {e['topologies']}", indent=4)
        if "origin" in e:
            echo(f"from: {e['origin']}", indent=4)
    return 0



def cmd_table2(args) -> int:
    """``directcoll table2``: regenerate Table 2 of the Swing paper (:func:`directcoll.reports.table2.table2` on
    ``--side``^D tori, D = 2, 3, 4, and Swing-B on 64x64).

    Output: two Markdown tables, or with ``--json`` the rows (:func:`~directcoll.reports.table2.to_dicts`).

    Returns:
        0.

    Raises:
        ResourceError: a torus over the memory budget (``--side`` is capped at 16 by the parser).

    Source: Swing (De Sensi et al., NSDI'24) Table 2 and Sec. 2.3, 4.1.

    >>> from directcoll.cli.main import main
    >>> main(["table2", "--side", "99"])  # a usage error: one line on stderr, status 2
    Traceback (most recent call last):
    ...
    SystemExit: 2
    """
    from directcoll.reports.table2 import table2, to_dicts, to_markdown

    rows = table2(side=args.side)
    if args.json:
        print_json(to_dicts(rows))
    else:
        print(to_markdown(rows))
    return 0
