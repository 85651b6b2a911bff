"""``directcoll export`` and ``directcoll import``: a schedule file to MSCCL XML and back.

Errors are raised as :class:`~directcoll.errors.DirectcollError` for :func:`directcoll.cli.main.main` to print as
one line (status 2).

Source: docs/export.md; the MSCCL executor's XML format; Zhao et al. (NSDI'25) Sec. 7.

>>> from directcoll.cli.main import main
>>> main(["import", "no/such/file.xml", "-o", "out.json"])  # the error goes to stderr
2
"""

from __future__ import annotations

from directcoll.cli.options import check_output, count
from directcoll.cli.output import print_json
from directcoll.units import plural


def register(sub) -> None:
    """Register ``directcoll export`` and ``directcoll import`` on the subparsers ``sub``. Raises: nothing (builds
    parsers). Source: docs/architecture.md, "Command line"."""
    ex = sub.add_parser("export", help="export a schedule to a runtime format (MSCCL XML)")
    ex.add_argument("file", help="schedule file (.json or .npz)")
    ex.add_argument("--format", default="msccl", choices=["msccl"], help="output format (default msccl)")
    ex.add_argument("-o", "--output", required=True, help="output file, e.g. algo.xml")
    ex.add_argument("--max-chunks", type=count(1), default=1024,
                    help="cap on chunks per buffer for fractional schedules, >= 1 (default 1024)")
    ex.add_argument("--json", action="store_true", help="machine-readable output")
    ex.set_defaults(func=cmd_export)

    im = sub.add_parser("import", help="read an MSCCL XML file into a schedule file (then verify, cost, simulate)")
    im.add_argument("file", help="MSCCL XML file")
    im.add_argument("-o", "--output", required=True, help="schedule file to write (.json or .npz)")
    im.add_argument("--json", action="store_true", help="machine-readable output")
    im.set_defaults(func=cmd_import)


def cmd_export(args) -> int:
    """``directcoll export FILE -o OUT.xml``: lower a schedule file to MSCCL XML
    (:func:`directcoll.export.msccl.export_msccl`, ``--max-chunks`` caps the chunks of fractional schedules).

    Output: ``wrote OUT: MSCCL XML of ...``; ``--json``: {file, format, algorithm, collective, ranks}.

    Returns:
        0.

    Raises:
        DirectcollError: an unwritable ``-o``; a schedule the export cannot lower (as
            :func:`~directcoll.export.msccl.export_msccl` documents).
        ScheduleFormatError, ScheduleError: an unreadable schedule file.

    Source: Zhao et al. (NSDI'25) Sec. 7 (lowering to MSCCL); Basu et al. (HPDC'24) Sec. 4; the MSCCL executor's
    XML format (docs/export.md).

    >>> import os, tempfile
    >>> from directcoll.cli.main import main
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "ring.json")
    ...     main(["schedule", "ring", "ring:4", "-o", path, "--json"]) and None  # doctest: +ELLIPSIS
    ...     main(["export", path, "-o", os.path.join(tmp, "ring.xml")])
    {
    ...
    wrote .../ring.xml: MSCCL XML of ring allreduce on 4 ranks
    0
    """
    from directcoll.export.msccl import export_msccl
    from directcoll.schedule import load

    check_output(args.output, "-o")
    schedule = load(args.file)
    export_msccl(schedule, args.output, max_chunks=args.max_chunks)
    if args.json:
        print_json({"file": args.output, "format": args.format, "algorithm": schedule.algorithm,
                     "collective": schedule.collective.value, "ranks": schedule.nranks})
    else:
        print(f"wrote {args.output}: MSCCL XML of {schedule.algorithm} {schedule.collective.value} on "
              f"{schedule.nranks} ranks")
    return 0


def cmd_import(args) -> int:
    """``directcoll import FILE.xml -o OUT``: read an MSCCL XML file into a schedule file
    (:func:`directcoll.export.msccl.import_msccl`), to verify, cost or simulate it.

    Output: ``wrote OUT: ...``; ``--json``: {file, collective, ranks, steps, transfers}.

    Returns:
        0.

    Raises:
        DirectcollError: an unwritable ``-o``, or an XML file that is not an MSCCL algorithm it can read (as
            :func:`~directcoll.export.msccl.import_msccl` documents).

    Source: the MSCCL executor's XML format (docs/export.md, "Import"); Zhao et al. (NSDI'25) Sec. 7.

    >>> from directcoll.cli.main import main
    >>> main(["import", "no/such/file.xml", "-o", "out.json"])
    2
    """
    from directcoll.export.msccl import import_msccl
    from directcoll.schedule import save

    check_output(args.output, "-o")
    schedule = import_msccl(args.file)
    save(schedule, args.output)
    info = {"file": args.output, "collective": schedule.collective.value, "ranks": schedule.nranks,
            "steps": schedule.num_steps, "transfers": schedule.num_transfers}
    if args.json:
        print_json(info)
    else:
        print(f"wrote {args.output}: {schedule.collective.value} on {schedule.nranks} ranks, "
              f"{plural(schedule.num_steps, 'step')}, {plural(schedule.num_transfers, 'transfer')}")
    return 0
