"""``directcoll run --engine smpi [SPEC]``: our schedules and SMPI's own collective, as real MPI code (libdirectcoll)
inside SimGrid SMPI on a simulated network built from SPEC (docs/runtime.md, "The SMPI engine").

Errors are raised as :class:`~directcoll.errors.DirectcollError` for :func:`directcoll.cli.main.main` to print as
one line (status 2).

Source: docs/runtime.md, "The SMPI engine".

>>> from directcoll.cli.main import main
>>> main(["run", "torus:2x2", "--engine", "smpi", "--hostfile", "hosts"])  # refused before anything runs
2
"""

from __future__ import annotations

import math

from directcoll.cli.options import algorithm_list, network_spec, read_sizes
from directcoll.cli.output import Heartbeat, gbps, print_json, table_console
from directcoll.errors import DirectcollError

#: the network ``run --engine smpi`` simulates unless given SPEC (cli.network's default for run)
DEFAULT_SMPI_TOPOLOGY = "torus:2x4"
#: wall-clock seconds one smpirun (one algorithm, every size) may take
SMPI_WALL_LIMIT = 1800.0


def run_smpi(args) -> int:
    """``directcoll run --engine smpi [SPEC]``: write SPEC's SimGrid platform (our routes, ``--params``' links),
    build libdirectcoll with ``smpicc``, and run every algorithm of ``--algorithms`` and SMPI's own collective on
    SPEC's compute nodes as simulated ranks (:func:`directcoll.runtime.smpi.smpi_run`).

    Output: the table of ``directcoll run`` (algorithm, size, time, Gb/s, correct, native, ours/native) in
    simulated time; ``--json``: the document of :func:`~directcoll.runtime.smpi.smpi_run`.

    Returns:
        0 when every result is correct and every call was served by our program, 1 otherwise.

    Raises:
        DirectcollError: ``--hostfile`` or ``--mpiexec`` (real launches only), a broadcast or reduce (the SMPI
            driver does not time them), bad ``--ranks``, ``--repeat``, sizes or ``--algorithms``, an smpirun that
            fails.
        MissingDependencyError: no SimGrid (``apt-get install libsimgrid-dev``).
        SpecError, ResourceError, ScheduleError: from the network, the memory budget or a schedule.

    Source: docs/runtime.md, "The SMPI engine".
    """
    from directcoll.runtime.smpi import smpi_run
    from directcoll.simulate import resolve_network
    from directcoll.units import format_size, format_time

    for flag, value in (("--hostfile", args.hostfile), ("--mpiexec", args.mpiexec)):
        if value:
            raise DirectcollError(f"{flag} launches real ranks; --engine smpi simulates every rank in one SimGrid "
                                  "process on this machine (drop it, or use --engine python)")
    if args.collective in ("broadcast", "reduce"):  # the SMPI driver times the four unrooted collectives
        raise DirectcollError(f"--engine smpi runs allreduce, reduce_scatter, allgather and alltoall; a "
                              f"{args.collective} runs on real ranks (--engine c or python)")
    if args.repeat < 1:
        raise DirectcollError(f"--repeat {args.repeat}: give at least 1 timed repetition (after one warm-up)")
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise DirectcollError(f"--timeout {args.timeout:g}: give a positive number of seconds")
    topology, params, notes = resolve_network(network_spec(args, DEFAULT_SMPI_TOPOLOGY), getattr(args, "params", None))
    if args.ranks is not None and args.ranks != topology.num_compute:
        raise DirectcollError(f"--ranks {args.ranks} does not match {topology.spec}, which has "
                              f"{topology.num_compute} compute nodes (one simulated rank per node)")
    sizes = read_sizes(args.sizes)
    algorithms = args.algorithms
    if args.collective == "alltoall" and algorithms == "swing:latency,swing:bandwidth,recursive-doubling," \
                                                      "rabenseifner,ring":
        algorithms = "direct"  # as directcoll run: the default list has no all-to-all
    pairs = algorithm_list(algorithms, args.collective)
    quiet = args.json
    with Heartbeat(f"SMPI run on {topology.num_compute} simulated ranks") as beat:
        doc = smpi_run(topology, params, args.collective, pairs, list(sizes), repeat=args.repeat,
                       timeout=SMPI_WALL_LIMIT, progress=beat)
    doc["notes"] = notes
    ok = all(r.get("correct", True) and r.get("served", True) for r in doc["results"])
    if quiet:
        print_json(doc)
        return 0 if ok else 1
    from rich import box
    from rich.table import Table

    table = Table(title=f"{doc['collective']} on {doc['ranks']} simulated ranks of {topology.spec} (SimGrid SMPI, "
                        f"{params.name}, {doc['platform']['routing']} routes), simulated time",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("algorithm", "size", "time", "Gb/s", "correct", "native", "ours/native"):
        table.add_column(col, justify="right")
    short = {"latency": "L", "bandwidth": "B", "hamiltonian": "H", "bidirectional": "bi"}
    for row in doc["results"]:
        if "skipped" in row:
            continue
        size = format_size(row["bytes"]) + ("*" if row["bytes"] != row["size"] else "")
        correct = "yes" if row["correct"] else "[red]NO[/red]"
        if not row["served"]:
            correct += " [red](fell through)[/red]"
        native = row["native_time_s"]
        table.add_row(f"{row['algorithm']} {short.get(row['variant'], row['variant'] or '')}", size,
                      format_time(row["time_s"]), gbps(row["goodput_Bps"] or 0.0), correct, format_time(native),
                      f"{row['time_s'] / native:.2f}x" if native else "-")
    console = table_console(table)
    console.print(table)
    if any(r.get("bytes") != r["size"] for r in doc["results"] if "skipped" not in r):
        console.print("* sizes run as whole float64 elements, a multiple of the ranks")
    console.print(f"[dim]native = SMPI's own MPI_{_native_name(doc['collective'])} (smpi/coll-selector:mpich); "
                  f"SimGrid config: {', '.join(doc['config'])}; platform {doc['platform']['file']} "
                  f"({doc['platform']['routes']:,} routes)[/dim]")
    for note in notes:
        console.print(f"[dim]{note}[/dim]")
    for row in doc["results"]:
        if "skipped" in row:
            console.print(f"[dim]skipped {row['algorithm']} {row['variant'] or ''} at {format_size(row['size'])}: "
                          f"{row['skipped']}[/dim]")
        elif row.get("fell_through"):
            console.print(f"[red]{row['algorithm']}: calls fell through to SMPI: {'; '.join(row['fell_through'])}"
                          "[/red]")
    return 0 if ok else 1


def _native_name(collective: str) -> str:
    return {"allreduce": "Allreduce", "reduce_scatter": "Reduce_scatter_block", "allgather": "Allgather",
            "alltoall": "Alltoall"}[collective]
