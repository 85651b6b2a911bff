"""Commands that let you see a schedule: ``show`` (its steps and transfers as text, JSON or CSV) and ``draw``
(its steps drawn on the network, :func:`directcoll.reports.draw.draw_steps`).

Every ``cmd_*`` takes the parsed arguments, prints its result on stdout and returns the exit status; errors are
raised as :class:`~directcoll.errors.DirectcollError` for :func:`directcoll.cli.main.main` to print as one line
(status 2).

Source: docs/architecture.md, "Command line" (results on stdout, ``--json`` and ``--csv`` a contract);
Swing (De Sensi et al., NSDI'24) Figs. 1 and 4 (a schedule's steps drawn on the network).

>>> from directcoll.cli.main import main
>>> main(["show", "no/such/file.json"])  # the error goes to stderr
2
"""

from __future__ import annotations

import argparse
import csv
import sys

from directcoll.cli.options import (
    ROUTING_HELP,
    ROUTINGS,
    TOPOLOGY_OVERRIDE_HELP,
    add_deprecated_size,
    add_output_options,
    check_output,
    count,
    one_size,
    preset_spec,
)
from directcoll.cli.output import print_json
from directcoll.errors import DirectcollError

#: the vector size ``show`` and ``draw`` count bytes for unless given ``--sizes``
DEFAULT_SIZE = "1MiB"


def register(sub) -> None:
    """Register ``show`` and ``draw`` on the subcommand parsers ``sub`` of :func:`directcoll.cli.main.build_parser`.

    Raises:
        Nothing: adds parsers.

    Source: docs/architecture.md, "Command line" (one grammar across commands).

    >>> from directcoll.cli.main import build_parser
    >>> build_parser().parse_args(["draw", "s.json", "-o", "s.png"]).func.__name__
    'cmd_draw'
    """
    show = sub.add_parser("show", help="list a schedule's steps, or one step's transfers with their routes",
                          description="Without --step: one line per step (transfers, bytes, the busiest link and "
                                      "its bytes, hops). With --step K: that step's transfers (rank, peer, op, "
                                      "bytes, hops, pieces, route).")
    _common(show)
    show.add_argument("--step", type=count(0), help="the step whose transfers to list (0 is the first)")
    add_output_options(show, csv="CSV rows (one per step, or per transfer with --step)")
    show.set_defaults(func=cmd_show)

    draw = sub.add_parser("draw", help="draw a schedule's steps on the network (PNG, PDF or SVG)",
                          description="One panel per step: nodes at their grid positions (tori, meshes, HyperX, "
                                      "HammingMesh) or on a circle, an arrow per pair of ranks that talk, link "
                                      "loads coloured, the busiest link outlined (Swing paper, Figs. 1 and 4).")
    _common(draw)
    draw.add_argument("--steps", default="all", help="steps to draw: all (default), a comma list 0,1,2 or ranges "
                                                     "0-3")
    draw.add_argument("-o", "--output", required=True, help="the picture to write, e.g. steps.png")
    draw.add_argument("--format", choices=["png", "pdf", "svg"], help="picture format (default: the output's "
                                                                     "suffix, else png)")
    draw.add_argument("--columns", type=count(1, 16), help="panels per row (default 1 to 4, by the panels)")
    draw.add_argument("--title", help="the picture's title (default: algorithm, collective, topology, size)")
    draw.add_argument("--view", choices=["auto", "network", "matrix"], default="auto",
                      help="network: the steps on the network's drawing; matrix: each step's link-load matrix (rows "
                           "send, columns receive); auto (default): matrix where ranks on a circle have four or more "
                           "neighbours, network otherwise")
    add_output_options(draw)
    draw.set_defaults(func=cmd_draw)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", help="schedule file (.json or .npz)")
    p.add_argument("--topology", help=TOPOLOGY_OVERRIDE_HELP)
    p.add_argument("--sizes", help=f"vector size the bytes are counted for, one size such as 64MiB "
                                               f"(default {DEFAULT_SIZE}; all-to-all: one rank's send buffer)")
    add_deprecated_size(p)
    p.add_argument("--routing", default="adaptive", choices=ROUTINGS, help=ROUTING_HELP)


def _load(args):
    """(schedule, topology, size in bytes) of the command's file, ``--topology`` and ``--sizes``."""
    from directcoll.reports.steps import check_ranks
    from directcoll.schedule import load
    from directcoll.topology import parse

    size = one_size(args.sizes or DEFAULT_SIZE, args.command)
    schedule = load(args.file)
    spec = args.topology or schedule.meta.get("topology")
    if not spec:
        raise DirectcollError(f"{args.file} does not record its topology; pass --topology SPEC")
    topology = parse(preset_spec(spec))
    check_ranks(schedule, topology)
    return schedule, topology, size


def _header(schedule, topology, size: int, args) -> dict:
    return {"file": str(args.file), "algorithm": schedule.algorithm, "collective": schedule.collective.value,
            "topology": topology.spec, "ranks": schedule.nranks, "num_steps": schedule.num_steps, "size": size,
            "routing": args.routing}


def cmd_show(args) -> int:
    """``directcoll show FILE [--step K]``: a schedule's steps on its topology (the file's, or ``--topology``) at a
    vector of ``--sizes`` bytes (one size, default 1MiB).

    Without ``--step``: one line per step (:func:`directcoll.reports.steps.step_overview`: transfers, bytes, the
    busiest link as ``u->v`` and its bytes, how many links tie with it, the longest route in hops). With ``--step
    K``: the step's transfers (:func:`directcoll.reports.steps.transfer_rows`: rank, peer, op (copy or reduce),
    bytes, hops, pieces as the IR holds them, route as ``u->v->w``; adaptive routing's minimal paths with their
    shares, or ``adaptive over N minimal paths`` when there are more than four).

    Output: a table; ``--json``: one document, {file, algorithm, collective, topology, ranks, num_steps, size,
    routing} plus ``steps`` (a list of step rows) or, with ``--step``, ``step``, ``nblocks``, ``denominator``,
    the busiest link's fields and ``transfers`` (a list of transfer rows); ``--csv``: the rows.

    Returns:
        0.

    Raises:
        DirectcollError: more than one size, a file that records no topology and no
            ``--topology``, ``--step`` out of range.
        ScheduleFormatError, ScheduleError, SpecError, TopologyError, ResourceError: from loading the schedule,
            building the topology (or one whose compute nodes are not the schedule's ranks) and routing.

    Source: docs/architecture.md, "Schedule IR" and "Cost and simulation"; Swing (De Sensi et al., NSDI'24) Sec. 4.1
    (the most loaded link of a step).

    >>> import os, tempfile
    >>> from directcoll.cli.main import main
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "ring.json")
    ...     main(["schedule", "ring", "ring:4", "-o", path])
    ...     main(["show", path, "--step", "0", "--csv"])  # doctest: +ELLIPSIS
    wrote ...
    0
    step,index,rank,peer,op,bytes,hops,pieces,route
    0,0,0,1,reduce,131072.0,1.0,"[3,4)",0->1
    ...
    0
    """
    from directcoll.reports.steps import link_label, step_overview, step_view, transfer_rows
    from directcoll.units import format_size

    schedule, topology, size = _load(args)
    head = _header(schedule, topology, size, args)
    if args.step is None:
        rows = step_overview(schedule, topology, size, args.routing)
        if args.json:
            print_json({**head, "steps": rows})
        elif args.csv:
            _csv(rows, ["step", "transfers", "bytes", "busiest_link", "busiest_link_name", "bytes_busiest_link",
                        "busiest_ties", "hops_max"])
        else:
            print(_title(head, size))
            _table(["step", "transfers", "bytes", "busiest link", "its bytes", "hops"],
                   [[r["step"], r["transfers"], format_size(r["bytes"]), _busiest(r), format_size(r[
                       "bytes_busiest_link"]), f"{r['hops_max']:.3g}"] for r in rows])
        return 0
    n = schedule.num_steps
    if args.step >= n:
        raise DirectcollError(f"--step {args.step} is out of range: {args.file} has {n} steps (0..{n - 1})" if n
                              else f"--step {args.step}: {args.file} has no transfers, so no steps")
    view = step_view(schedule, topology, args.step, size, args.routing)
    rows = transfer_rows(schedule, topology, view)
    top = view.busiest
    busiest = {"busiest_link": top, "busiest_link_name": link_label(topology, top),
               "bytes_busiest_link": float(view.loads[top]) if top >= 0 else 0.0,
               "busiest_ties": len(view.busiest_links)}
    if args.json:
        print_json({**head, "step": args.step, "nblocks": schedule.nblocks, "denominator": schedule.denominator,
                    **busiest, "transfers": rows})
    elif args.csv:
        _csv([{"step": args.step, **r, "pieces": r["pieces_text"]} for r in rows],
             ["step", "index", "rank", "peer", "op", "bytes", "hops", "pieces", "route"])
    else:
        print(f"{_title(head, size)}, step {args.step}: {view.num_transfers} transfers, busiest link "
              f"{_busiest(busiest)} with {format_size(busiest['bytes_busiest_link'])}")
        _table(["rank", "peer", "op", "bytes", "hops", "pieces", "route"],
               [[r["rank"], r["peer"], r["op"], format_size(r["bytes"]), f"{r['hops']:.3g}", r["pieces_text"],
                 r["route"]] for r in rows])
    return 0


def _title(head: dict, size: int) -> str:
    from directcoll.units import format_size

    return (f"{head['algorithm']} {head['collective']} on {head['topology']}, {head['ranks']} ranks, "
            f"{head['num_steps']} steps, {format_size(size)} vector, {head['routing']} routing")


def _busiest(row: dict) -> str:
    ties = row["busiest_ties"]
    return row["busiest_link_name"] + (f" (+{ties - 1} tied)" if ties > 1 else "")


def _table(header: list[str], rows: list[list]) -> None:
    cells = [header, *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[j]) for r in cells) for j in range(len(header))]
    for r in cells:
        print("  ".join(c.ljust(w) if j == len(r) - 1 or not c[:1].isdigit() else c.rjust(w)
                        for j, (c, w) in enumerate(zip(r, widths, strict=True))).rstrip())


def _csv(rows: list[dict], columns: list[str]) -> None:
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow([r[c] for c in columns])


def parse_steps(text: str, num_steps: int) -> list[int]:
    """The steps ``--steps`` names: ``all``, or a comma list of steps and ranges ``a-b`` (both ends included).

    Returns:
        The step indices in the order given (duplicates dropped), a list of ints.

    Raises:
        DirectcollError: text that is no such list, or a step outside 0..num_steps-1.

    Source: docs/architecture.md, "Quality bar" (a bad value names the option and what is accepted).

    >>> parse_steps("0,2-4", 8), parse_steps("all", 3)
    ([0, 2, 3, 4], [0, 1, 2])
    >>> parse_steps("9", 8)
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: --steps: step 9 is out of range: the schedule has 8 steps (0..7)
    """
    if text.strip().lower() == "all":
        return list(range(num_steps))
    out: list[int] = []
    for item in text.split(","):
        lo, sep, hi = item.strip().partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise DirectcollError(f"--steps {text!r}: give all, or a comma list of steps and ranges such as 0,2-4")
        for k in range(int(lo), int(hi if sep else lo) + 1):
            if k >= num_steps:
                raise DirectcollError(f"--steps: step {k} is out of range: the schedule has {num_steps} steps "
                                      f"(0..{num_steps - 1})")
            if k not in out:
                out.append(k)
    if not out:
        raise DirectcollError(f"--steps {text!r} names no step; give all, or steps such as 0,2-4")
    return out


def cmd_draw(args) -> int:
    """``directcoll draw FILE -o steps.png``: draw steps of a schedule on its topology (the file's, or
    ``--topology``), one panel per step (:func:`directcoll.reports.draw.draw_steps`): transfers as arrows, every
    directed link coloured by the bytes it carries at ``--sizes`` (one size, default 1MiB), the busiest link outlined.

    Output: ``wrote FILE: ...``; ``--json``: {file, format, steps, algorithm, collective, topology, ranks,
    num_steps, size, routing}.

    Returns:
        0.

    Raises:
        DirectcollError: an unwritable ``-o``, more than one size, a bad ``--steps`` (a step out of range), a file that
            records no topology and no ``--topology``, more than 256 compute nodes or 64 panels.
        ScheduleFormatError, ScheduleError, SpecError, TopologyError, ResourceError: from loading the schedule,
            building the topology (or one whose compute nodes are not the schedule's ranks) and routing.

    Source: Swing (De Sensi et al., NSDI'24) Figs. 1 and 4.

    >>> from directcoll.cli.main import main
    >>> main(["draw", "no/such/file.json", "-o", "steps.png"])  # the error goes to stderr
    2
    """
    from pathlib import Path

    from directcoll.reports.draw import draw_steps

    check_output(args.output, "-o")
    fmt = args.format or Path(args.output).suffix.lstrip(".").lower() or "png"
    if fmt not in ("png", "pdf", "svg"):
        raise DirectcollError(f"-o {args.output!r}: cannot tell the format from the suffix .{fmt}; give --format "
                              "png, pdf or svg")
    schedule, topology, size = _load(args)
    if not schedule.num_steps:
        raise DirectcollError(f"{args.file} has no transfers: no step to draw")
    steps = parse_steps(args.steps, schedule.num_steps)
    path = draw_steps(schedule, topology, args.output, steps=steps, size=size, routing=args.routing, fmt=fmt,
                      columns=args.columns, title=args.title, view=args.view)
    if args.json:
        print_json({**_header(schedule, topology, size, args), "file": str(path), "format": fmt, "steps": steps})
    else:
        print(f"wrote {path}: {len(steps)} of {schedule.num_steps} steps of {schedule.algorithm} "
              f"{schedule.collective.value} on {topology.spec}")
    return 0
