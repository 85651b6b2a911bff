"""Commands that time or run schedules: compare, simulate, run, export, import.

Every ``cmd_*`` takes the parsed arguments, prints its result on stdout and returns the exit status; errors are
raised as :class:`~directcoll.errors.DirectcollError` for :func:`directcoll.cli.main.main` to print as one line
(status 2).

Source: docs/architecture.md, "Cost and simulation" and "Engines, runtimes and scale".

>>> from directcoll.cli.main import main
>>> main(["simulate", "no/such/file.json", "--sizes", "1MiB"])  # the error goes to stderr
2
"""

from __future__ import annotations

import json
import sys

from directcoll.cli.build import DEFAULT_TOPOLOGY
from directcoll.cli.compare_table import print_comparison
from directcoll.cli.options import algorithm_list, check_output, network_spec, preset_spec, read_sizes
from directcoll.cli.output import (
    ProgressBar,
    gbps,
    noop,
    oversubscription,
    print_json,
    print_table,
    table_console,
)
from directcoll.errors import DirectcollError
from directcoll.units import plural

DEFAULT_SIZES = "32B..512MiB"
#: the packet model simulates every packet: its default sweep stops where one size takes seconds on torus:4x4
DEFAULT_PACKET_SIZES = "32B..4MiB"

#: the network ``directcoll run`` builds its schedules for unless given SPEC
DEFAULT_RUN_TOPOLOGY = "torus:2x4"
DEFAULT_RUN_ALGORITHMS = "swing:latency,swing:bandwidth,recursive-doubling,rabenseifner,ring"
DEFAULT_RUN_ALLTOALL = "direct"
DEFAULT_RUN_ROOTED = "binomial,swing-tree:latency,swing-tree:bandwidth,chain"



def _resolve_network(spec: str | None, params_name: str | None, args):
    from directcoll.simulate import resolve_network

    topology, params, notes = resolve_network(
        spec or DEFAULT_TOPOLOGY, params_name, alpha=args.alpha, per_hop_latency=args.per_hop_latency,
        link_bandwidth=args.link_bandwidth, link_latency=args.link_latency, gamma=args.gamma,
        forwarding=args.forwarding, packet_size=args.packet_size, packet_header=args.packet_header)
    params = params.use(getattr(args, "implementation", None))
    if not params.implementation.neutral:
        notes.append(f"implementation {params.implementation.name}: {_terms(params.implementation)}")
    return topology, params, notes


def _terms(impl) -> str:
    """An implementation's non-neutral terms, for a report's footer."""
    from directcoll.units import format_time

    out = [f"{k.replace('_', ' ')} {format_time(getattr(impl, k))}" for k in ("call_overhead", "port_overhead",
                                                                                "message_overhead") if getattr(impl, k)]
    if impl.eager_threshold is not None:
        out.append(f"eager up to {impl.eager_threshold:g} B")
    if impl.bandwidth_efficiency != 1.0:
        out.append(f"bandwidth efficiency {impl.bandwidth_efficiency:.3g}")
    if impl.gamma is not None:
        out.append(f"gamma {impl.gamma * 1e9:.3g} ns/B")
    out.append("one thread per port" if impl.threads is None else f"{impl.threads} thread(s)")
    return ", ".join(out)


def cmd_compare(args) -> int:
    """``directcoll compare [SPEC|PRESET]``: time every algorithm that serves the network at every size
    (:func:`directcoll.reports.compare.compare`) and report goodput, the winner per size and the reference family's
    gain (Swing on tori, BFB on direct-connect topologies, MCF schedules for all-to-all, with the MCF bound).

    Output: a table with notes and skipped contenders; ``--json``: :meth:`Comparison.to_dict
    <directcoll.reports.compare.Comparison.to_dict>` plus ``notes``; ``--csv``: one row per algorithm, variant and
    size (time in s, goodput in bytes/s); ``--why`` adds per size the winner's steps, congestion deficiency Ξ and
    busiest link with its bytes (table columns; fields of the JSON rows; CSV columns, for every entry); ``--plot
    FILE`` also writes the figure (png, pdf or svg: ``--format`` or the suffix); ``-o FILE.json`` / ``-o
    FILE.csv`` also writes the JSON document or the CSV rows to FILE (the format from the suffix). ``--variant
    NAME`` keeps, of every family that has variant NAME, only that variant (the others are timed as they are).

    Returns:
        0.

    Raises:
        DirectcollError: bad sizes, an ``--algorithms`` list naming nothing, a ``--variant`` no contender has (the
            message lists the accepted ones), an unwritable ``--plot`` or ``-o`` or one with another suffix than
            .json or .csv, a ``--plot`` suffix that is not a figure format or contradicts ``--format``, no algorithm
            serving the network, or bad network options.
        UnsupportedShapeError: an unknown algorithm in ``--algorithms``.
        SpecError, TopologyError, ResourceError, SolverError: from the network or a contender.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 5 and Fig. 6; Zhao et al. (NSDI'25) Sec. 8.2-8.3; Basu et al.
    (HPDC'24) Sec. 5.2.

    >>> from directcoll.cli.main import main
    >>> main(["compare", "ring:4", "--sizes", "1KiB", "--algorithms", "ring", "--csv"])
    ... # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
    algorithm,variant,ports,family,size_bytes,time_s,goodput_Bps,skipped
    ring,bidirectional,2,ring,1024,...
    0
    """
    from directcoll.cli.build import rooted_option
    from directcoll.reports.compare import compare
    from directcoll.reports.contenders import default_policy, select, with_root

    check_output(args.plot, "--plot")
    plot_format = _plot_format(args.plot, args.format)
    output_format = _output_format(args.output)
    topology, params, notes = _resolve_network(args.spec, args.params, args)
    sizes = read_sizes(args.sizes or (DEFAULT_PACKET_SIZES if args.model == "packet" else DEFAULT_SIZES))
    contenders, skipped = default_policy(topology, args.collective, cutoffs=args.cutoffs)
    if args.algorithms:
        wanted = [a.strip() for a in args.algorithms.split(",") if a.strip()]
        if not wanted:
            raise DirectcollError(f"--algorithms {args.algorithms!r} names no algorithm; see `directcoll algorithms`")
        contenders = select(contenders + [k.contender for k in skipped], wanted, topology, args.collective)
        skipped = []  # asked for by name: no cutoff applies
    if args.variant:
        contenders = _only_variant(contenders, args.variant)
    contenders = with_root(contenders, rooted_option(args.collective, args.root))
    quiet = args.json or args.csv
    with ProgressBar(len(contenders), "simulating", enabled=not quiet) as tick:
        cmp = compare(topology, args.collective, sizes, params, args.routing, args.model, contenders,
                      progress=tick or noop, why=args.why,
                      ports=args.ports, tie_tolerance=args.tie_tolerance)
    cmp.skipped[:0] = skipped  # the policy's cutoffs first, then what refused to run
    if args.plot:
        from directcoll.reports.plot import plot_comparison

        plot_comparison(cmp, args.plot, fmt=plot_format)
    if args.output:
        with open(args.output, "w", encoding="utf-8", newline="") as f:
            if output_format == "json":
                print_json({**cmp.to_dict(), "notes": notes}, file=f)
            else:
                f.write(cmp.to_csv())
    if args.json:
        print_json({**cmp.to_dict(), "notes": notes})
        return 0
    if args.csv:
        sys.stdout.write(cmp.to_csv())
        return 0
    print_comparison(cmp, notes, why=args.why, wide=args.wide)
    if args.plot:
        print(f"plot written to {args.plot}")
    if args.output:
        print(f"results written to {args.output} ({output_format.upper()})")
    return 0


def _plot_format(path: str | None, fmt: str | None) -> str | None:
    """png, pdf or svg, the format of ``compare --plot`` (None: no plot); refuses a mismatch before any work."""
    if path is None:
        if fmt is not None:
            raise DirectcollError(f"--format {fmt} is the format of --plot FILE; give --plot too")
        return None
    from directcoll.reports.draw import figure_format

    return figure_format(path, fmt, "--plot")


def _output_format(path: str | None) -> str | None:
    """json or csv, the format of ``compare -o`` from its suffix (None: no -o); refuses others before any work."""
    if path is None:
        return None
    check_output(path, "-o")
    fmt = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if fmt not in ("json", "csv"):
        raise DirectcollError(f"-o {path!r}: cannot tell the format from the suffix; give a file ending in .json "
                              "(the --json document) or .csv (the --csv rows)")
    return fmt


def _only_variant(contenders: list, variant: str) -> list:
    """Of every family with variant ``variant``, keep only that variant (families without it stay as they are)."""
    offered = sorted({str(c.variant) for c in contenders if c.variant is not None})
    if variant not in offered:
        raise DirectcollError(f"--variant {variant!r}: no contender has that variant; accepted: "
                              f"{', '.join(offered) or 'none (these algorithms have no variants)'}")
    having = {c.family for c in contenders if c.variant == variant}
    return [c for c in contenders if c.family not in having or c.variant == variant]



def cmd_simulate(args) -> int:
    """``directcoll simulate FILE --sizes SIZES``: time one schedule file on its topology (or ``--topology``) with
    the step model (per-step breakdown: most loaded link, hops, time), the flow model (per-step end times) or the
    packet model, at one size or a list of sizes (the step model routes once and times every size in closed form).

    Output: per size a summary line, and for one size a per-step table (the step model's busiest link as ``u->v``,
    with coordinates on grids); ``--json``, one size: {time_s, model, size, steps, algorithm, collective,
    topology, routing, params, goodput_Bps, variant, ports}, the step model's steps with ``max_link`` (an id) and
    ``max_link_name`` (``u->v``); several sizes: {sizes, results: [that document per size], algorithm,
    collective, topology, routing, params, model}; ``--csv``: one row per size and step, ``size_bytes`` first.

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
    schedule = load(args.file)
    spec = args.topology or schedule.meta.get("topology")
    if not spec:
        raise DirectcollError(f"{args.file} does not record its topology; pass --topology SPEC")
    topology, params, notes = _resolve_network(spec, args.params, args)
    sim = simulate(schedule, topology, params, args.routing) if args.model == "step" else None
    docs = [_simulate_one(schedule, topology, params, args, size, sim) for size in sizes]
    ports = schedule.meta.get("ports")
    common = {"algorithm": schedule.algorithm, "variant": schedule.meta.get("variant"),
              "ports": None if ports is None else int(ports), "collective": schedule.collective.value,
              "topology": topology.spec, "routing": args.routing, "params": params.to_dict()}
    if args.json:
        print_json({**docs[0], **common, "goodput_Bps": docs[0]["goodput_Bps"]} if len(docs) == 1 else
                   {"sizes": sizes, "model": args.model, **common, "results": docs})
        return 0
    if args.csv:
        _steps_csv([{"size_bytes": d["size"], **row} for d in docs for row in d["steps"]])
        return 0
    for d in docs:
        print(f"{schedule.algorithm} {schedule.collective.value} of {format_size(d['size'])} on {topology.spec} "
              f"({params.name}, {args.routing} routing, {args.model} model): {format_time(d['time_s'])}, goodput "
              f"{d['goodput_Bps'] * 8 / 1e9:.4g} Gb/s")
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
        from directcoll.simulate.packet import simulate_packet

        res = simulate_packet(schedule, topology, size, params, args.routing)
        out = {"time_s": res.time_s, "model": "packet", "size": size, "packets": res.packets,
               "steps": [{"step": t, "end_s": float(e)} for t, e in enumerate(res.step_end)],
               "rank_step_end_s": res.rank_step_end.tolist(), "link_bytes": res.link_bytes.tolist(),
               "max_link_utilisation": float(res.link_utilisation.max(initial=0.0))}
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



def _run_engine(asked: str | None) -> str:
    """The engine the ranks run our schedules on: ``asked`` ("c" or "python"), or by default "c" when libdirectcoll
    builds, else "python" with a one-line note on stderr. An asked-for "c" that cannot be built is an error."""
    if asked == "python":
        return "python"
    from directcoll.cli.output import Heartbeat
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
    if getattr(args, "engine", "python") == "smpi":  # simulated ranks: directcoll.cli.smpi
        from directcoll.cli.smpi import run_smpi

        return run_smpi(args)
    if getattr(args, "params", None):
        raise DirectcollError(f"--params {args.params}: network parameters apply to simulated ranks only; add "
                              "--engine smpi, or drop --params (real ranks run on this machine's network)")
    import math
    import shutil
    import tempfile

    from directcoll.resources import check_memory
    from directcoll.runtime import MPI_EXTRA, require_mpi
    from directcoll.runtime.launch import RANK_PROCESS_BYTES, run_job
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
    from directcoll.cli.build import rooted_option

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
    engine = _run_engine(args.engine)
    crowded = None if args.hostfile else oversubscription(ranks)
    if crowded:
        print(f"directcoll: warning: {crowded}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="directcoll-run-") as tmp:
        out = f"{tmp}/results.json"
        cmd = [*launcher, "-n", str(ranks), *(["-f", args.hostfile] if args.hostfile else []), sys.executable, "-m",
               "directcoll.runtime.worker", "--topology", topology.spec, "--algorithms", algorithms,
               "--collective", args.collective, "--sizes", sizes.text, "--repeat", str(args.repeat),
               "--timeout", repr(float(args.timeout)), "--json-out", out, "--status-dir", tmp, "--engine", engine,
               *(["--native"] if args.compare_native else []), *(["--root", str(root)] if root is not None else [])]
        run_job(cmd, status_dir=tmp, nranks=ranks, timeout=args.timeout)
        try:
            with open(out) as fh:
                data = json.load(fh)
        except (OSError, ValueError) as exc:
            raise DirectcollError(f"the ranks ended without writing their results ({exc})") from None
    if crowded:
        data["oversubscribed"] = crowded
    if args.json:
        print_json(data)
        return 0
    from rich import box
    from rich.table import Table

    engine_name = {"c": "C engine", "python": "Python engine"}.get(data.get("engine", ""), "")
    table = Table(title=f"{data['collective']} on {ranks} MPI ranks ({topology.spec} schedules, {engine_name}), this "
                        "machine",
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
        table.add_row(f"{row['algorithm']} {variant}", size,
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
