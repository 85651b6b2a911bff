"""``directcoll cost [FILE]``: steps, bytes, deficiencies, T_L / T_B and an alpha-beta-gamma time of a schedule.

Source: Swing (De Sensi et al., NSDI'24) Sec. 2.2, Eq. (1); Zhao et al. (NSDI'25) Sec. 3.2; docs/architecture.md,
"Command line".

>>> from directcoll.cli.main import main
>>> main(["cost", "no/such/file.json"])  # the error goes to stderr
2
"""

from __future__ import annotations

from directcoll.cli.options import (
    DEFAULT_ALGORITHM,
    DEFAULT_TOPOLOGY,
    TOPOLOGY_OVERRIDE_HELP,
    add_build_options,
    add_deprecated_size,
    add_output_options,
    bfb_options,
    build_options,
    duration,
    one_size,
    per_byte,
    preset_spec,
)
from directcoll.cli.output import print_fields, print_json
from directcoll.errors import DirectcollError


def register(sub) -> None:
    """Register ``directcoll cost`` on the subparsers ``sub``. Raises: nothing (builds
    parsers). Source: docs/architecture.md, "Command line"."""
    cost = sub.add_parser("cost", help="steps, bytes, deficiencies, T_L / T_B and an alpha-beta-gamma time",
                          description="Analyze a schedule file, or build one with --algorithm/--topology "
                                      f"(default: {DEFAULT_ALGORITHM} allreduce on {DEFAULT_TOPOLOGY}).")
    cost.add_argument("file", nargs="?", help="schedule file; omit to build one")
    cost.add_argument("--algorithm", help=f"algorithm to build when no file is given (default {DEFAULT_ALGORITHM})")
    cost.add_argument("--topology", help=f"{TOPOLOGY_OVERRIDE_HELP}; without a file, the network to build on "
                                         f"(default {DEFAULT_TOPOLOGY})")
    add_build_options(cost)
    cost.add_argument("--sizes", help="vector size for the time estimate, one size such as 64MiB (bfb: also the "
                                      "size M of LP (14))")
    add_deprecated_size(cost)
    cost.add_argument("--alpha", type=duration, default=400e-9, help="time per step, e.g. 400ns or 1us; a bare "
                                                                     "number is seconds (default 400ns: one hop of "
                                                                     "the Swing SST setup)")
    cost.add_argument("--gamma", type=per_byte, default=0.0, help="time per byte reduced, e.g. 0.2ns or 0.2ns/B; a "
                                                                  "bare number is seconds per byte (default 0)")
    add_output_options(cost)
    cost.set_defaults(func=cmd_cost)


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
        network, bfb = bfb_options(args, spec, "cost")
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
