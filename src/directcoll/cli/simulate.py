"""``directcoll simulate FILE --sizes SIZES``: time one schedule file with the step, flow or packet model.

Errors are raised as :class:`~directcoll.errors.DirectcollError` for :func:`directcoll.cli.main.main` to print as
one line (status 2).

Source: docs/simulation.md; docs/architecture.md, "Cost and simulation".

>>> from directcoll.cli.main import main
>>> main(["simulate", "no/such/file.json", "--sizes", "1MiB"])  # the error goes to stderr
2
"""

from __future__ import annotations

import dataclasses
import sys

from directcoll.cli.options import (
    TOPOLOGY_OVERRIDE_HELP,
    add_deprecated_size,
    add_flow_control_options,
    add_network_options,
    add_orderings_option,
    add_output_options,
    flow_control,
    orderings,
    read_sizes,
    resolve_network,
)
from directcoll.cli.output import print_json, print_table
from directcoll.errors import DirectcollError


def register(sub) -> None:
    """Register ``directcoll simulate`` on the subparsers ``sub``. Raises: nothing (builds
    parsers). Source: docs/architecture.md, "Command line"."""
    sim = sub.add_parser("simulate", help="time one schedule file with a per-step breakdown")
    sim.add_argument("file", help="schedule file (.json or .npz)")
    sim.add_argument("--sizes", help="vector sizes: one (64MiB) or a list (1KiB,1MiB or 32B..1GiB) (required)")
    add_deprecated_size(sim)
    sim.add_argument("--topology", help=TOPOLOGY_OVERRIDE_HELP)
    add_network_options(sim)
    sim.add_argument("--model", default="step", choices=["step", "flow", "packet"],
                     help="simulation model: step (default), flow, or packet (ns-3; needs libns3-dev)")
    add_flow_control_options(sim)
    add_orderings_option(sim)
    add_output_options(sim, csv="CSV rows, one per step (the step model's busiest link, or the flow and packet "
                                "models' step end times)")
    sim.set_defaults(func=cmd_simulate)


def cmd_simulate(args) -> int:
    """``directcoll simulate FILE --sizes SIZES``: time one schedule file on its topology (or ``--topology``) with
    the step model (per-step breakdown: most loaded link, hops, time), the flow model (per-step end times) or the
    packet model, at one size or a list of sizes (the step model routes once and times every size in closed form).

    Output: per size a summary line, and for one size a per-step table (the step model's busiest link as ``u->v``,
    with coordinates on grids); ``--json``, one size: {time_s, model, size, steps, algorithm, collective,
    topology, routing, params, goodput_Bps, variant, ports, sizes, results: [that document]}, the step model's
    steps with ``max_link`` (an id) and ``max_link_name`` (``u->v``), the packet model's with ``packets``,
    ``rank_step_end_s``, ``link_bytes``, ``max_link_utilisation``, ``adaptive_hops``, ``escape_hops`` and
    ``utilisation_timeline`` ({bin_s, utilisation}); several sizes: {sizes, results: [that document per size],
    algorithm, collective, topology, routing, params, model}; ``--csv``: one row per size and step, ``size_bytes``
    first.

    Returns:
        0.

    Raises:
        DirectcollError: no ``--sizes``, bad sizes, a file that records no topology and no ``--topology``, bad
            network options.
        ScheduleFormatError, ScheduleError, SpecError, TopologyError, ResourceError: from loading the schedule or
            building and simulating on the network.

    Source: docs/architecture.md, "Cost and simulation" (step model; flow model); Swing (NSDI'24) Sec. 5 (400 Gb/s
    links, 100 ns latency, 300 ns per hop: the swing-sst preset).

    >>> import os, tempfile
    >>> from directcoll.cli.main import main
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "ring.json")
    ...     main(["schedule", "ring", "ring:4", "-o", path, "--json"]) and None  # doctest: +ELLIPSIS
    ...     main(["simulate", path, "--sizes", "1MiB", "--json"])  # doctest: +ELLIPSIS
    {
    ...
    {
      "time_s": ...
    ...
    0
    """
    from directcoll.schedule import load
    from directcoll.simulate import simulate
    from directcoll.units import format_size, format_time

    if args.sizes is None:
        raise DirectcollError("simulate needs the vector size: give --sizes SIZE, e.g. --sizes 64MiB, or a list "
                              "such as 1KiB,1MiB or 32B..1GiB")
    sizes = [int(v) for v in read_sizes(args.sizes)]
    args.flow = flow_control(args)
    orderings(args)
    schedule = load(args.file)
    spec = args.topology or schedule.meta.get("topology")
    if not spec:
        raise DirectcollError(f"{args.file} does not record its topology; pass --topology SPEC")
    topology, params, notes = resolve_network(spec, args.params, args)
    if args.flow is not None:  # "auto" made concrete for this schedule, so the output says what ran
        from directcoll.simulate.packet import resolved

        args.flow = resolved(args.flow, topology, args.routing, schedule)
    sim = simulate(schedule, topology, params, args.routing) if args.model == "step" else None
    docs = [_simulate_one(schedule, topology, params, args, size, sim) for size in sizes]
    ports = schedule.meta.get("ports")
    common = {"algorithm": schedule.algorithm, "variant": schedule.meta.get("variant"),
              "ports": None if ports is None else int(ports), "collective": schedule.collective.value,
              "topology": topology.spec, "routing": args.routing, "params": params.to_dict(),
              **({"flow_control": dataclasses.asdict(args.flow)} if args.flow is not None else {})}
    if args.json:
        # one size: its document at the top level too; results[] always, whatever the count
        print_json({**docs[0], **common, "goodput_Bps": docs[0]["goodput_Bps"], "sizes": sizes, "results": docs}
                   if len(docs) == 1 else {"sizes": sizes, "model": args.model, **common, "results": docs})
        return 0
    if args.csv:
        _steps_csv([{"size_bytes": d["size"], **row} for d in docs for row in d["steps"]])
        return 0
    for d in docs:
        print(f"{schedule.algorithm} {schedule.collective.value} of {format_size(d['size'])} on {topology.spec} "
              f"({params.name}, {args.routing} routing, {args.model} model"
              + (f", {args.flow.describe()}" if args.flow is not None else "")
              + f"): {format_time(d['time_s'])}, goodput "
              f"{d['goodput_Bps'] * 8 / 1e9:.4g} Gb/s"
              + (f"; {format_time(d['time_range_s'][0])} to {format_time(d['time_range_s'][1])} over "
                 f"{args.orderings} orders of the transfers" if "time_range_s" in d else ""))
    if args.model == "step" and len(docs) == 1:
        rows = [(f"step {r['step']}", f"max link {r['max_link_name']}: {format_size(r['bytes_max_link'])}, "
                 f"{_count(r['hops_max'], 'hop')}, {format_time(r['time_s'])}") for r in docs[0]["steps"]]
        print_table("per step", rows)
    return 0


def _count(value: float, noun: str) -> str:
    """``1 hop``, ``2 hops``, ``1.5 hops``."""
    return f"{value:.3g} {noun}{'' if value == 1 else 's'}"


def _simulate_one(schedule, topology, params, args, size: int, sim) -> dict:
    """The ``simulate --json`` document of one size (without the fields common to every size but goodput)."""
    if args.model == "flow":
        from directcoll.simulate.flow import simulate_flow

        res = simulate_flow(schedule, topology, size, params, args.routing)
        out = {"time_s": float(res.time_s), "model": "flow", "size": size,
               "steps": [{"step": t, "end_s": float(e)} for t, e in enumerate(res.step_end)]}
    elif args.model == "packet":
        from directcoll.simulate.packet import order_range, simulate_packet

        res = simulate_packet(schedule, topology, size, params, args.routing, flow=args.flow)
        spread = {} if args.orderings == 1 else {"time_range_s": order_range(
            schedule, topology, [size], [res.time_s], args.orderings, params, args.routing, args.flow)[0].tolist()}
        out = {"time_s": res.time_s, **spread, "model": "packet", "size": size, "packets": res.packets,
               "steps": [{"step": t, "end_s": float(e)} for t, e in enumerate(res.step_end)],
               "rank_step_end_s": res.rank_step_end.tolist(), "link_bytes": res.link_bytes.tolist(),
               "max_link_utilisation": float(res.link_utilisation.max(initial=0.0)),
               "adaptive_hops": res.adaptive_hops, "escape_hops": res.escape_hops,
               "utilisation_timeline": {"bin_s": res.timeline_bin_s, "utilisation": res.timeline.tolist()}}
    else:
        from directcoll.reports.steps import link_label

        out = {"time_s": float(sim.time(size)), "model": "step", "size": size, "steps": sim.breakdown(size)}
        for row in out["steps"]:  # the busiest link as u->v ((0,1)->(0,2) on grids) beside its id
            row["max_link_name"] = link_label(topology, row["max_link"])
    out["goodput_Bps"] = size / out["time_s"]
    return out


def _steps_csv(steps: list[dict]) -> None:
    """The per-step rows of ``simulate --csv``: every scalar field of the steps, in their order."""
    import csv

    columns = [k for k, v in steps[0].items() if not isinstance(v, list | dict)] if steps else ["step"]
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(columns)
    for row in steps:
        writer.writerow([row.get(c, "") for c in columns])
