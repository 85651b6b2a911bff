"""``directcoll calibrate``: fit the step model's network parameters to measured collective timings.

Source: docs/simulation.md, "Calibration" (:func:`directcoll.simulate.calibrate.calibrate_file`: least squares,
scipy.optimize.least_squares' trust region reflective method, on relative residuals).

>>> from directcoll.cli.main import main
>>> main(["calibrate", "no/such/file.csv", "ring:4"])  # the error goes to stderr
2
"""

from __future__ import annotations

import argparse
import json
import sys

from directcoll.cli.options import (
    SPEC_HELP,
    USE_SPEC,
    Deprecated,
    add_network_options,
    add_output_options,
    check_output,
    count,
    network_spec,
)
from directcoll.cli.output import print_json, print_table
from directcoll.errors import DirectcollError

#: the base-value options of add_network_options and the parameter each sets
_OVERRIDES = {"alpha": "--alpha", "per_hop_latency": "--per-hop-latency", "link_bandwidth": "--link-bandwidth",
              "gamma": "--gamma"}


def register(sub) -> None:
    """Register ``directcoll calibrate`` on the subparsers ``sub``. Raises: nothing (builds
    parsers). Source: docs/architecture.md, "Command line"."""
    cal = sub.add_parser("calibrate", help="fit network parameters to measured collective timings (CSV or OSU)",
                         description="Fit the step model's alpha, link bandwidth, per-hop latency and gamma (or the "
                                     "--fit subset, which may add each implementation's software terms) by least "
                                     "squares on relative residuals to measured times, and leave each algorithm out "
                                     "once to predict it: a CSV of algorithm,ranks,bytes,seconds (+ collective, "
                                     "variant, ports, segment, implementation) or the output of an "
                                     "OSU benchmark (osu_allreduce, osu_allgather, osu_reduce_scatter, "
                                     "osu_alltoall). All measurements must be on the topology's ranks: pass one "
                                     "file per topology. -o writes a file for --params FILE.json.")
    cal.add_argument("measurements", help="CSV or OSU output file")
    cal.add_argument("spec", nargs="?", help=f"{SPEC_HELP}: the network the measurements ran on (required)")
    cal.add_argument("--topology", action=Deprecated, use=USE_SPEC, help=argparse.SUPPRESS)
    cal.add_argument("--fit", help="comma list of parameters to fit: alpha, link_bandwidth, host_injection, "
                                   "per_hop_latency, gamma (the network's; host_injection, a rank's NIC cap, only "
                                   "when named) and call_overhead, port_overhead, thread_overhead, mirror_overhead, "
                                   "reduction_overhead, "
                                   "message_overhead, copy_overhead, bandwidth_efficiency (each implementation's, "
                                   "and what its code paths add); default the network's four (those an option "
                                   "sets excepted) and, when the measurements name implementations, their "
                                   "software terms and gamma each, with an alpha and a link bandwidth that "
                                   "--params gives kept")
    cal.add_argument("--format", choices=["csv", "osu"], help="input format (default: detected, OSU output starts "
                                                              "with '#')")
    cal.add_argument("--ranks", type=count(1), help="OSU only (required there): the number of ranks it ran on")
    cal.add_argument("--algorithm", help="OSU only: NAME[:VARIANT] of ours standing for the MPI library's "
                                         "algorithm (default rabenseifner)")
    add_network_options(cal)
    cal.add_argument("-o", "--output", help="write the fitted parameters to this JSON file (for --params FILE)")
    add_output_options(cal)
    cal.set_defaults(func=cmd_calibrate)


def cmd_calibrate(args) -> int:
    """``directcoll calibrate MEASUREMENTS SPEC``: fit ``--fit`` (default
    :func:`~directcoll.simulate.calibrate.default_fit`, less the values an option sets) by least squares on relative
    residuals so that the step model reproduces the measured times
    (:func:`directcoll.simulate.calibrate.calibrate`); ``-o FILE.json`` writes the parameters for
    ``--params FILE.json`` anywhere. Values not fitted come from ``--params`` and the override options (default:
    zero, and the topology's own links).

    Output: a table of the fitted values and of every measurement's residual; with ``--json`` one JSON document
    (:meth:`Calibration.to_dict <directcoll.simulate.calibrate.Calibration.to_dict>` plus ``output``). Warnings
    (a poor fit, a parameter that is not identifiable) go to stderr as ``directcoll: warning: ...``.

    Returns:
        0 (also for a poor fit: the warning says so).

    Raises:
        DirectcollError: no SPEC, a bad measurement file (naming its line), ranks that differ from the topology's
            compute nodes, an unknown ``--fit`` name, an override of a fitted parameter, an unwritable ``-o``; the CLI
            turns it into one line and exit status 2.
        SpecError, TopologyError, ResourceError, UnsupportedShapeError: from the topology or an algorithm.

    Source: docs/simulation.md, "Calibration"; scipy.optimize.least_squares (trust region reflective).

    >>> import os, tempfile
    >>> from directcoll.cli.main import main
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "t.csv")
    ...     _ = open(path, "w").write("algorithm,ranks,bytes,seconds\\nring,4,8,2e-6\\nring,4,1048576,3e-4\\n")
    ...     main(["calibrate", path, "ring:4", "--fit", "alpha,link_bandwidth", "--json"])
    ... # doctest: +ELLIPSIS
    {
      "params": {
        "alpha": ...
    0
    """
    from directcoll.simulate import NetworkParams, resolve_network
    from directcoll.simulate.calibrate import calibrate_file, parse_fit

    check_output(args.output, "-o")
    spec = network_spec(args)
    if spec is None:
        raise DirectcollError("calibrate needs the network the measurements ran on: directcoll calibrate "
                              "MEASUREMENTS SPEC, e.g. torus:4x4 or a system preset")
    # without --fit, what the data calls for (default_fit) minus what an option sets; with it, exactly that
    fit = parse_fit(args.fit) if args.fit is not None else None
    for name, option in _OVERRIDES.items():
        if fit is not None and name in fit and getattr(args, name) is not None:
            raise DirectcollError(f"{option} sets {name}, which --fit fits; drop {option} or leave {name} out of "
                                  "--fit")
    overrides = {"alpha": args.alpha, "per_hop_latency": args.per_hop_latency, "link_bandwidth": args.link_bandwidth,
                 "link_latency": args.link_latency, "gamma": args.gamma, "forwarding": args.forwarding,
                 "packet_size": args.packet_size}
    topology, params, _notes = resolve_network(spec, args.params)
    base = (params if args.params is not None else NetworkParams()).with_(**overrides).use(args.implementation)
    cal = calibrate_file(args.measurements, topology, fmt=args.format, ranks=args.ranks, algorithm=args.algorithm,
                         fit=fit, routing=args.routing, base=base,
                         given=[name for name in _OVERRIDES if getattr(args, name) is not None])
    for line in cal.warnings:
        print(f"directcoll: warning: {line}", file=sys.stderr)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump(cal.params_file(), f, indent=2)
            f.write("\n")
    if args.json:
        print_json({**cal.to_dict(), "output": args.output})
        return 0
    _print_calibration(cal)
    if args.output:
        print(f"wrote {args.output}: use it with --params {args.output}")
    return 0


def _value(name: str, value: float) -> str:
    from directcoll.units import format_time

    name = name.partition("@")[0]  # a software term: TERM@IMPLEMENTATION
    if name in ("link_bandwidth", "host_injection"):
        return f"{value / 1e9:.4g} GB/s ({value * 8 / 1e9:.4g} Gb/s)"
    if name == "bandwidth_efficiency":
        return f"{value:.3g} of the link rate"
    if name in ("gamma", "copy_overhead"):
        return f"{value * 1e9:.4g} ns/B"
    return format_time(value) if value else "0 s"


def _print_calibration(cal) -> None:
    from directcoll.units import format_size, format_time

    rows = [(name, _value(name, value)) for name, value in cal.fitted.items()]
    rows += [("measurements", str(len(cal.measurements))), ("RMS relative residual", f"{cal.rms:.2%}"),
             ("largest |relative residual|", f"{cal.max_abs:.2%}"), ("routing", cal.routing)]
    cv = cal.cross_validation
    if cv:
        rows.append(("leave one algorithm out", f"median |error| {cv['median_abs']:.1%}, largest {cv['max_abs']:.1%}"))
        rows += [(f"  {label}", f"median |error| {err:.1%}") for label, err in cv["by_label"].items()]
    rows += [("note", n) for n in cal.notes]
    print_table(f"calibrated on {cal.topology} from {cal.source}", rows)
    print_table("measured vs model (relative residual)",
                [(f"line {m.line}: {m.label} {format_size(m.size)}",
                  f"{format_time(m.seconds)} vs {format_time(t)} ({r:+.1%})")
                 for m, t, r in zip(cal.measurements, cal.model, cal.residuals, strict=True)])
