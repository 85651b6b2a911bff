"""``directcoll topology describe | families | export``: inspect a topology, list the spec grammar, write a
network file that ``file:PATH`` reads back.

Every ``cmd_*`` takes the parsed arguments, prints its result on stdout (``--json``: one JSON document) and returns the
exit status; errors are raised as :class:`~directcoll.errors.DirectcollError` for :func:`directcoll.cli.main.main`
to print as one line (status 2).

Source: docs/topology.md; docs/architecture.md, "Command line".

>>> from directcoll.cli.main import main
>>> main(["topology", "describe", "no-such-family:4"])  # the error goes to stderr
2
"""

from __future__ import annotations

import sys

from directcoll.cli.options import LINK_BANDWIDTH_HELP, bandwidth, check_output, count, fraction, preset_spec
from directcoll.cli.output import Heartbeat, echo, print_fields, print_json
from directcoll.errors import DirectcollError


def register(sub) -> None:
    """Register ``directcoll topology`` and its subcommands describe, families and export on the subparsers ``sub``.
    Raises: nothing (builds parsers). Source: docs/architecture.md, "Command line"."""
    topo = sub.add_parser("topology", help="inspect topologies")
    topo_sub = topo.add_subparsers(dest="topology_command", required=True, metavar="SUBCOMMAND")
    desc = topo_sub.add_parser("describe", help="N, degree, diameter, average distance, links, bisection")
    desc.add_argument("spec", help="topology spec, e.g. torus:8x8, hammingmesh:2x2:32x32, hyperx:8x8")
    desc.add_argument("--json", action="store_true", help="machine-readable output")
    _add_alltoall_options(desc)
    desc.set_defaults(func=cmd_topology_describe)
    fams = topo_sub.add_parser("families", help="list the topology families, aliases and operators of spec strings")
    fams.add_argument("--json", action="store_true", help="machine-readable output")
    fams.set_defaults(func=cmd_topology_families)
    tex = topo_sub.add_parser("export", help="write a topology to a network file (GraphML, edge list, JSON) that "
                                             "file:PATH reads back")
    tex.add_argument("spec", help="topology spec, e.g. torus:8x8, or file:PATH")
    tex.add_argument("-o", "--output", required=True, help="file to write: .graphml, .edges or .json")
    tex.add_argument("--format", choices=["graphml", "edges", "json", "simgrid"],
                     help="format (default: from the suffix); simgrid: a SimGrid/SMPI platform with our routes")
    tex.add_argument("--json", action="store_true", help="machine-readable output")
    tex.set_defaults(func=cmd_topology_export)


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


def cmd_topology_export(args) -> int:
    """``directcoll topology export SPEC -o FILE [--format graphml|edges|json|simgrid]``: write the topology of a
    spec (or a preset's, or another file's) with every directed link's bandwidth (bit/s) and latency (s) and the
    switches marked, as a directed graph in link order (:func:`directcoll.topology.files.write_network`), so
    ``file:FILE`` gives the same links, values and node count. The format comes from the suffix unless
    ``--format``. ``--format simgrid`` writes a SimGrid platform instead (hosts, links, our routes:
    :mod:`directcoll.topology.simgrid`), which ``file:`` does not read back.

    Output: one line ``wrote FILE: SPEC, N nodes, S switches, L directed links (FORMAT)``; ``--json``: an object
    with ``file``, ``format``, ``spec``, ``nodes``, ``switches`` and ``links``.

    Returns:
        0.

    Raises:
        DirectcollError: an unwritable output file.
        SpecError: an unparseable spec, or an unknown format or suffix.
        TopologyError, ResourceError: as :func:`directcoll.topology.parse`.

    Source: docs/topology.md, "Your own network".

    >>> import os, tempfile
    >>> from directcoll.cli.main import main
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     main(["topology", "export", "ring:4", "-o", os.path.join(tmp, "ring.graphml")])  # doctest: +ELLIPSIS
    wrote .../ring.graphml: ring:4, 4 nodes, 0 switches, 8 directed links (graphml)
    0
    """
    from directcoll.topology import parse
    from directcoll.topology.files import file_format, write_network

    if args.format == "simgrid":
        return _export_simgrid(args)
    fmt = file_format(args.output, args.format)
    check_output(args.output, "-o")
    topology = parse(preset_spec(args.spec))
    write_network(topology, args.output, fmt)
    info = {"file": args.output, "format": fmt, "spec": topology.spec, "nodes": topology.num_compute,
            "switches": topology.num_nodes - topology.num_compute, "links": topology.num_links}
    if args.json:
        print_json(info)
    else:
        print(f"wrote {args.output}: {topology.spec}, {info['nodes']} nodes, {info['switches']} switches, "
              f"{info['links']} directed links ({fmt})")
    return 0


def _export_simgrid(args) -> int:
    """``topology export SPEC --format simgrid -o platform.xml``: the SimGrid platform of SPEC with its own link
    values (:func:`directcoll.topology.simgrid.write_platform`); the same output contract as the other formats,
    plus ``routes`` and ``routing``."""
    from directcoll.topology import parse
    from directcoll.topology.simgrid import write_platform

    check_output(args.output, "-o")
    topology = parse(preset_spec(args.spec))
    written = write_platform(topology, args.output)
    info = {"file": args.output, "format": "simgrid", "spec": topology.spec, "nodes": topology.num_compute,
            "switches": topology.num_nodes - topology.num_compute, "links": topology.num_links,
            "routes": written["routes"], "routing": written["routing"]}
    if args.json:
        print_json(info)
    else:
        print(f"wrote {args.output}: {topology.spec}, {info['nodes']} hosts, {info['links']} directed links, "
              f"{info['routes']:,} {info['routing']} routes (SimGrid platform)")
    return 0


def _add_alltoall_options(p) -> None:
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
    p.add_argument("--target-gap", type=fraction, help="bracket and certified only: stop at this relative gap "
                                                       "(upper - lower) / lower, e.g. 0.01 or 1%% (default 0.1%% for "
                                                       "bracket, 1%% for certified)")
    p.add_argument("--time-limit", type=float, help="certified only: stop after this many seconds, > 0 (the bounds "
                                                    "hold; the gap is reported)")
    p.add_argument("--link-bandwidth", type=bandwidth, help=LINK_BANDWIDTH_HELP)
    p.add_argument("--host-bandwidth", type=bandwidth, help="host <-> NIC bandwidth, e.g. 100Gbps or 12.5GB/s: "
                                                            "models the host-to-NIC bottleneck (Basu et al. Fig. 2)")


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
