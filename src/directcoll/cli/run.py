"""``directcoll run [SPEC]``: run schedules on real MPI ranks (the C or Python engine) or on ranks simulated by
SimGrid SMPI (``--engine smpi``), and compare them with the MPI library's own collective.

Errors are raised as :class:`~directcoll.errors.DirectcollError` for :func:`directcoll.cli.main.main` to print as
one line (status 2; the message of a failed job keeps its lines).

Source: docs/runtime.md ("The SMPI engine" too); docs/architecture.md, "Engines, runtimes and scale".

>>> from directcoll.cli.main import main
>>> main(["run", "--ranks", "0"])  # refused before anything is launched
2
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from directcoll.cli.options import (
    COLLECTIVES,
    SIZES_FORMS,
    SPEC_HELP,
    USE_SPEC,
    Deprecated,
    add_deprecated_size,
    add_output_options,
    add_testbed_options,
    algorithm_list,
    count,
    network_spec,
    preset_spec,
    read_sizes,
    refuse_testbed_options,
    rooted_option,
    testbed_plan,
)
from directcoll.cli.output import SHORT_FAMILY, Heartbeat, gbps, oversubscription, print_json, table_console
from directcoll.errors import DirectcollError

#: the network ``directcoll run`` builds its schedules for unless given SPEC
DEFAULT_RUN_TOPOLOGY = "torus:2x4"
DEFAULT_RUN_ALGORITHMS = "swing:latency,swing:bandwidth,recursive-doubling,rabenseifner,ring"
DEFAULT_RUN_ALLTOALL = "direct"
DEFAULT_RUN_ROOTED = "binomial,swing-tree:latency,swing-tree:bandwidth,chain"
#: wall-clock seconds one smpirun (one algorithm, every size) may take
SMPI_WALL_LIMIT = 1800.0


def register(sub) -> None:
    """Register ``directcoll run`` on the subparsers ``sub``. Raises: nothing (builds
    parsers). Source: docs/architecture.md, "Command line"."""
    rn = sub.add_parser("run", help="run schedules on real MPI ranks and compare with the MPI library",
                        description="Launch ranks through mpiexec on this machine (or --hostfile / --mpiexec for an "
                                    "allocation), time our schedules and the MPI library's own collective, and "
                                    "check that the results agree.")
    rn.add_argument("spec", nargs="?", help=f"{SPEC_HELP}: the network the schedules are built for (default "
                                             f"{DEFAULT_RUN_TOPOLOGY})")
    rn.add_argument("--topology", action=Deprecated, use=USE_SPEC, help=argparse.SUPPRESS)
    rn.add_argument("--ranks", type=int, help="number of ranks (default: the topology's nodes)")
    rn.add_argument("--algorithm", "--algorithms", dest="algorithms", default=DEFAULT_RUN_ALGORITHMS,
                    help=f"comma list of NAME or NAME:VARIANT, or file:PATH.py (default {DEFAULT_RUN_ALGORITHMS})")
    rn.add_argument("--collective", default="allreduce",
                    choices=COLLECTIVES,
                    help="collective to run (default allreduce); alltoall runs --algorithm direct unless given one, "
                         "and its sizes are each rank's send buffer")
    rn.add_argument("--root", type=count(0), help="broadcast and reduce: the root rank, >= 0 (default 0)")
    rn.add_argument("--sizes", default="8B,64KiB,1MiB",
                    help=f"{SIZES_FORMS} (default 8B,64KiB,1MiB); each runs as float64 elements, a multiple of the "
                         "ranks (at least one per rank), and the table shows the bytes run where they differ")
    add_deprecated_size(rn)
    rn.add_argument("--repeat", type=int, default=3, help="timed repetitions per size, at least 1 (after one warm-up)")
    rn.add_argument("--timeout", type=float, default=30.0,
                    help="seconds a rank waits for any step or collective before failing (default 30); the job is "
                         "killed when no rank made progress for this long plus 2 s")
    rn.add_argument("--compare-native", action=argparse.BooleanOptionalAction, default=True,
                    help="also time the MPI library's own collective (default on)")
    rn.add_argument("--engine", choices=["python", "c", "smpi", "testbed"], default=None,
                    help="what runs our schedules: c (libdirectcoll on the real ranks, built on first use), python "
                         "(numpy on the real ranks), smpi (libdirectcoll inside SimGrid SMPI on a simulated SPEC: "
                         "simulated times; needs libsimgrid-dev), or testbed (libdirectcoll on ranks in an emulated "
                         "SPEC on this machine: a network namespace per node, shaped veth links, MPI over TCP; "
                         "needs root, docs/testbed.md); default c when the library builds, else python with a note")
    add_testbed_options(rn, "--engine testbed: ")
    rn.add_argument("--hostfile", help="MPICH hostfile for mpiexec -f")
    rn.add_argument("--mpiexec", help="launcher command to use instead of mpiexec")
    rn.add_argument("--params", help="--engine smpi: network parameters, a preset or FILE.json (default swing-sst)")
    add_output_options(rn)
    rn.set_defaults(func=cmd_run, keep_lines=True)  # a failed job's message keeps the ranks' lines


def cmd_run(args) -> int:
    """``directcoll run [SPEC]``: launch ranks through mpiexec (:func:`directcoll.runtime.launch.run_job`, worker
    :mod:`directcoll.runtime.worker`), time our schedules and the MPI library's own collective, and check that the
    results agree.

    Output: a table (algorithm, size, time, Gb/s, correct, native, ours/native; its title names the engine,
    ``--engine``) and skipped algorithms; ``--json``: the workers' results document (``engine`` at the top and per
    row).

    Returns:
        0 when every result is correct, 1 when any rank computed a wrong result.

    Raises:
        DirectcollError: bad ``--ranks``, ``--repeat``, ``--timeout``, sizes or ``--algorithms``; a job that fails,
            hangs or ends without results (the message names the rank and what it printed).
        SpecError: a bad SPEC. UnsupportedShapeError: an unknown algorithm.
        ResourceError: the ranks would not fit this machine's memory budget.

    Source: docs/runtime.md; docs/architecture.md, "Engines, runtimes and scale" (runtime); MPI 4.1 standard, Ch. 6 (the
    native collectives compared against).

    >>> from directcoll.cli.main import main
    >>> main(["run", "--ranks", "0"])  # refused before anything is launched
    2
    """
    if getattr(args, "engine", "python") == "smpi":  # simulated ranks
        return _run_smpi(args)
    testbed = getattr(args, "engine", None) == "testbed"
    if not testbed:
        refuse_testbed_options(args)
    if testbed and (args.hostfile or args.ranks is not None and args.ranks < 1):
        raise DirectcollError("--engine testbed runs every rank on this machine, one per node of SPEC; drop "
                              "--hostfile" if args.hostfile else f"--ranks {args.ranks}: give at least 1 rank")
    if getattr(args, "params", None):
        raise DirectcollError(f"--params {args.params}: network parameters apply to simulated ranks only; add "
                              "--engine smpi, or drop --params (real ranks run on this machine's network)")
    import math
    import shutil
    import tempfile

    from directcoll.resources import check_memory
    from directcoll.runtime import MPI_EXTRA, require_mpi
    from directcoll.runtime.launch import CPU_BOUND, RANK_PROCESS_BYTES, run_job
    from directcoll.topology import parse
    from directcoll.units import format_size, format_time

    if args.ranks is not None and args.ranks < 1:
        raise DirectcollError(f"--ranks {args.ranks}: a run needs at least 1 rank (default: one per compute node "
                              "of SPEC)")
    if args.repeat < 1:
        raise DirectcollError(f"--repeat {args.repeat}: give at least 1 timed repetition (after one warm-up)")
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise DirectcollError(f"--timeout {args.timeout:g}: give a positive number of seconds a rank waits for a "
                              "step (default 30)")
    topology = parse(preset_spec(network_spec(args, DEFAULT_RUN_TOPOLOGY)))
    ranks = topology.num_compute if args.ranks is None else args.ranks
    if ranks != topology.num_compute:
        raise DirectcollError(f"--ranks {ranks} does not match {topology.spec}, which has {topology.num_compute} "
                              "compute nodes (one rank per node)")
    sizes = read_sizes(args.sizes)  # refuse bad sizes before launching anything
    algorithms = args.algorithms
    if args.collective == "alltoall" and algorithms == DEFAULT_RUN_ALGORITHMS:
        algorithms = DEFAULT_RUN_ALLTOALL  # the default list has no all-to-all
    elif args.collective in ("broadcast", "reduce") and algorithms == DEFAULT_RUN_ALGORITHMS:
        algorithms = DEFAULT_RUN_ROOTED
    algorithm_list(algorithms, args.collective, DEFAULT_RUN_ALGORITHMS)  # refused before anything is launched
    from directcoll.plugins import expand

    algorithms = ",".join(expand(algorithms.split(","), absolute=True))  # the ranks load file:PATH themselves
    root = rooted_option(args.collective, args.root)
    if root is not None and root >= ranks:
        raise DirectcollError(f"--root {root}: the root must be one of the ranks 0..{ranks - 1} of {topology.spec}")
    if not args.hostfile:  # every rank on this machine: its process, send buffer, two results and work buffer
        check_memory(f"run of {format_size(max(sizes))} on {ranks} ranks of this machine",
                     ranks * (float(RANK_PROCESS_BYTES) + 5.0 * max(sizes)))
    require_mpi("directcoll run")  # the ranks run this Python: mpi4py must be here (the mpi extra)
    launcher = args.mpiexec.split() if args.mpiexec else [shutil.which("mpiexec") or "mpiexec"]
    if not launcher or shutil.which(launcher[0]) is None:  # refused before the library is built for the ranks
        raise DirectcollError(f"cannot start {launcher[0] if launcher else ''!r} (No such file or directory): "
                              f"install MPI ({MPI_EXTRA}) or pass --mpiexec")
    if testbed:
        from directcoll.testbed.netns import require_hydra, require_privileges

        require_privileges()
        require_hydra(launcher)
        layout = testbed_plan(args, topology)
    engine = _run_engine("c" if testbed else args.engine)
    crowded = None if args.hostfile else oversubscription(ranks)
    if crowded:
        print(f"directcoll: warning: {crowded}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="directcoll-run-") as tmp:
        out = f"{tmp}/results.json"
        worker = [sys.executable, "-m", "directcoll.runtime.worker", "--topology", topology.spec, "--algorithms",
                  algorithms, "--collective", args.collective, "--sizes", sizes.text, "--repeat", str(args.repeat),
                  "--timeout", repr(float(args.timeout)), "--json-out", out, "--status-dir", tmp, "--engine", engine,
                  *(["--native"] if args.compare_native else []), *(["--root", str(root)] if root is not None else [])]
        if testbed:
            from directcoll.testbed.netns import Testbed

            with Testbed(layout) as bed:
                run_job(bed.mpiexec(launcher, worker), status_dir=tmp, nranks=ranks, timeout=args.timeout)
        else:
            run_job([*launcher, "-n", str(ranks), *(["-f", args.hostfile] if args.hostfile else []), *worker],
                    status_dir=tmp, nranks=ranks, timeout=args.timeout)
        try:
            with open(out) as fh:
                data = json.load(fh)
        except (OSError, ValueError) as exc:
            raise DirectcollError(f"the ranks ended without writing their results ({exc})") from None
    if crowded:
        data["oversubscribed"] = crowded
    if testbed:
        data["testbed"] = {"link_rate_Bps": layout.link_rate,
                           "link_delay_s": args.link_delay or 0.0, "queue_bytes": layout.queue}
        busy = {(r["algorithm"], r["size"]): max(r.get("cpu_busy") or 0, r.get("native_cpu_busy") or 0)
                for r in data["results"]}
        bound = [f"{name} at {format_size(size)} ({b:.0%})" for (name, size), b in busy.items() if b > CPU_BOUND]
        if bound:
            print(f"directcoll: warning: the cores were busier than {CPU_BOUND:.0%} while timing "
                  f"{', '.join(bound)}: those times may be set by the CPU rather than the emulated links (lower "
                  "--link-rate)", file=sys.stderr)
    if args.json:
        print_json(data)
        return 0
    from rich import box
    from rich.table import Table

    engine_name = {"c": "C engine", "python": "Python engine"}.get(data.get("engine", ""), "")
    where = (f"emulated testbed, {gbps(data['testbed']['link_rate_Bps'])} Gb/s links" if testbed
             else "this machine")
    table = Table(title=f"{data['collective']} on {ranks} MPI ranks ({topology.spec} schedules, {engine_name}), "
                        f"{where}",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("algorithm", "size", "time", "Gb/s", "correct", "native", "ours/native"):
        table.add_column(col, justify="right")
    rounded: dict[str, None] = {}
    for row in data["results"]:
        if "skipped" in row:
            continue
        native = row.get("native_time_s")
        short = {"latency": "L", "bandwidth": "B", "hamiltonian": "H", "bidirectional": "bi"}
        variant = short.get(row["variant"], row["variant"] or "")
        size = format_size(row.get("bytes", row["size"]))
        if row.get("bytes", row["size"]) != row["size"]:
            size += "*"
            rounded.setdefault(f"{format_size(row['size'])} ran as {size[:-1]}", None)
        table.add_row(f"{SHORT_FAMILY.get(row['algorithm'], row['algorithm'])} {variant}", size,
                      format_time(row["time_s"]), gbps(row["goodput_Bps"]),
                      "yes" if row["correct"] else "[red]NO[/red]", format_time(native) if native else "-",
                      f"{row['time_s'] / native:.2f}x{'*' if crowded else ''}" if native else "-")
    console = table_console(table)
    console.print(table)
    if rounded:
        console.print(f"* sizes run as whole float64 elements, a multiple of the ranks: {', '.join(rounded)}")
    if crowded:
        console.print(f"* ours/native: {crowded}")
    for row in data["results"]:
        if "skipped" in row:
            console.print(f"[dim]skipped {row['algorithm']} {row['variant'] or ''} at {format_size(row['size'])}: "
                          f"{row['skipped']}[/dim]")
    return 0 if all(r.get("correct", True) for r in data["results"]) else 1


def _run_engine(asked: str | None) -> str:
    """The engine the ranks run our schedules on: ``asked`` ("c" or "python"), or by default "c" when libdirectcoll
    builds, else "python" with a one-line note on stderr. An asked-for "c" that cannot be built is an error."""
    if asked == "python":
        return "python"
    from directcoll.runtime import native

    try:
        with Heartbeat("building libdirectcoll (once per MPI)"):
            native.library_path()
    except DirectcollError as exc:  # MissingDependencyError included
        if asked == "c":
            raise DirectcollError(f"--engine c: libdirectcoll cannot be built: {str(exc).splitlines()[0]}") from None
        print(f"directcoll: note: running the Python engine: libdirectcoll cannot be built "
              f"({str(exc).splitlines()[0]})", file=sys.stderr)
        return "python"
    return "c"


def _run_smpi(args) -> int:
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
    topology, params, notes = resolve_network(network_spec(args, DEFAULT_RUN_TOPOLOGY), getattr(args, "params", None))
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
