"""The ``directcoll`` command line: a thin layer over the library (every command is a library call first)."""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from directcoll import __version__
from directcoll.errors import DirectcollError

DEFAULT_TOPOLOGY = "torus:8x8"
DEFAULT_ALGORITHM = "swing"


def _print_json(obj) -> None:
    print(json.dumps(obj, indent=2, default=_json_default))


def _json_default(x):
    import numpy as np

    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, tuple):
        return list(x)
    raise TypeError(f"not JSON serializable: {type(x).__name__}")


def _table(title: str, rows: list[tuple[str, object]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for key, value in rows:
        table.add_row(key, f"{value:.4g}" if isinstance(value, float) else str(value))
    Console().print(table)


# -- topology ---------------------------------------------------------------------------------------------
def cmd_topology_describe(args) -> int:
    from directcoll.topology import describe, parse

    summary = describe(parse(args.spec))
    if args.json:
        _print_json(summary.to_dict())
    else:
        _table(f"topology {summary.spec}", list(summary.to_dict().items()))
    return 0


# -- schedule ---------------------------------------------------------------------------------------------
def cmd_schedule(args) -> int:
    from directcoll.algorithms import build
    from directcoll.schedule import save

    t0 = time.perf_counter()
    options = _generalized_options(args)
    schedule = build(args.algorithm, args.spec, args.collective, variant=args.variant, ports=args.ports, **options)
    path = save(schedule, args.output)
    info = {"file": str(path), "algorithm": schedule.algorithm, "collective": schedule.collective.value,
            "ranks": schedule.nranks, "steps": schedule.num_steps, "transfers": schedule.num_transfers,
            "nblocks": schedule.nblocks, "meta": schedule.meta, "seconds": time.perf_counter() - t0}
    if args.json:
        _print_json(info)
    else:
        print(f"wrote {path}: {schedule.algorithm} {schedule.collective.value} on {args.spec}, "
              f"{schedule.nranks} ranks, {schedule.num_steps} steps, {schedule.num_transfers} transfers")
    return 0


def _generalized_options(args) -> dict:
    """--steps / --group for the generalized allreduce: a step count, or "auto" = the r whose schedule the step
    model times fastest at --size on the topology with --params (eq. 37's choice is printed beside it)."""
    if args.steps is None and args.group is None:
        return {}
    from directcoll.algorithms.registry import get

    if get(args.algorithm).name != "generalized":
        raise DirectcollError("--steps and --group apply to the generalized algorithm only")
    from directcoll.algorithms.generalized import num_steps
    from directcoll.topology import parse

    options = {"group": args.group or "cyclic"}
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
    from directcoll.algorithms.registry import build_pattern
    from directcoll.cost.kolmakov import best_r_eq37
    from directcoll.simulate import network_params, simulate
    from directcoll.units import parse_size

    params = network_params(args.params or "kolmakov-cluster")
    size = parse_size(args.size or "1MiB")
    times = [float(simulate(build_pattern("generalized", topology, "allreduce", r=r, group=options["group"]),
                            topology, params).time(size)) for r in range(top + 1)]
    r = int(np.argmin(times))
    eq37 = best_r_eq37(p, size, params.alpha, 1 / (params.host_injection or params.link_bandwidth or 1e30),
                       params.gamma)
    print(f"--steps auto: r = {r} ({2 * top - r} steps) is fastest at {size} B with {params.name}; eq. 37 "
          f"gives r = {eq37}", file=sys.stderr)
    return {**options, "r": r}


# -- verify -----------------------------------------------------------------------------------------------
def cmd_verify(args) -> int:
    from directcoll.schedule import load
    from directcoll.verify import verify

    schedule = load(args.file)
    with _progress(schedule.num_steps, "verifying", enabled=not args.json and schedule.num_transfers > 50_000) as tick:
        result = verify(schedule, seed=args.seed, on_step=tick)
    if args.json:
        _print_json(result.to_dict())
    else:
        print(result.summary())
    return 0 if result.ok else 1


class _progress:
    """A rich progress bar over steps, or a no-op when disabled (JSON output, small work)."""

    def __init__(self, total: int, label: str, enabled: bool) -> None:
        self.total, self.label, self.enabled = total, label, enabled
        self._bar = None

    def __enter__(self):
        if not self.enabled:
            return None
        from rich.progress import Progress

        self._bar = Progress(transient=True, disable=not sys.stderr.isatty())
        self._bar.start()
        task = self._bar.add_task(self.label, total=self.total)
        return lambda done, total: self._bar.update(task, completed=done)

    def __exit__(self, *exc):
        if self._bar is not None:
            self._bar.stop()


# -- cost -------------------------------------------------------------------------------------------------
def cmd_cost(args) -> int:
    from directcoll.algorithms import build
    from directcoll.cost import CostParams, analyze
    from directcoll.schedule import load
    from directcoll.topology import parse
    from directcoll.units import format_time, parse_size

    if args.file:
        schedule = load(args.file)
        spec = args.topology or schedule.meta.get("topology")
        if not spec:
            raise DirectcollError(f"{args.file} does not record its topology; pass --topology SPEC")
    else:
        spec = args.topology or DEFAULT_TOPOLOGY
        schedule = build(args.algorithm or DEFAULT_ALGORITHM, spec, args.collective, variant=args.variant,
                         ports=args.ports)
    topology = parse(spec)
    report = analyze(schedule, topology)
    out = report.to_dict()
    params = CostParams(alpha=args.alpha, gamma=args.gamma)
    if args.size is not None:
        size = parse_size(args.size)
        out["size_bytes"] = size
        out["time_s"] = float(report.time(size, params))
        out["goodput_bytes_per_s"] = size / out["time_s"]
        out["alpha_s"], out["gamma_s_per_byte"] = params.alpha, params.gamma
    if args.json:
        _print_json(out)
        return 0
    rows = [(k, v) for k, v in out.items() if k not in ("time_s", "goodput_bytes_per_s")]
    if args.size is not None:
        rows.append(("time (alpha-beta-gamma, no contention)", format_time(out["time_s"])))
        rows.append(("goodput (GB/s)", out["goodput_bytes_per_s"] / 1e9))
    _table(f"cost of {report.algorithm} {report.collective} on {spec}", rows)
    return 0


# -- algorithms -------------------------------------------------------------------------------------------
def cmd_algorithms(args) -> int:
    from directcoll.algorithms import ALGORITHMS

    entries = [alg.to_dict() for alg in ALGORITHMS.values()]
    if args.json:
        _print_json(entries)
        return 0
    for e in entries:
        print(f"{e['name']}: {e['summary']}")
        print(f"    collectives: {', '.join(e['collectives'])}; variants: {', '.join(e['variants'])}")
        print(f"    serves: {e['topologies']}")
    return 0


# -- compare ----------------------------------------------------------------------------------------------
DEFAULT_SIZES = "32B..512MiB"


def _resolve_network(spec: str | None, params_name: str | None, args):
    """Topology and parameters from a spec or a system preset name, with command-line overrides."""
    from directcoll.errors import SpecError
    from directcoll.presets import get_preset
    from directcoll.simulate import network_params
    from directcoll.topology import parse

    spec = spec or DEFAULT_TOPOLOGY
    notes = []
    try:
        topology = parse(spec)
    except SpecError as exc:
        try:
            preset = get_preset(spec)
        except DirectcollError:
            from directcoll.presets import preset_names

            raise SpecError(f"{exc}; or a system preset: {', '.join(preset_names())}") from None
        if not preset.topologies:
            raise DirectcollError(f"preset {preset.name!r} has no topology in its source data "
                                  f"({preset.source}); give a topology spec instead") from None
        topology = parse(preset.topologies[0])
        notes.append(f"{preset.name}: {topology.spec} -- {preset.source}")
        if params_name is None and preset.link_bandwidth is not None:
            params_name = preset.name
    params = network_params(params_name)
    notes.append(f"parameters {params.name}: {params.source}")
    params = params.with_(alpha=args.alpha, per_hop_latency=args.per_hop_latency,
                          link_bandwidth=_bandwidth(args.link_bandwidth), link_latency=args.link_latency,
                          gamma=args.gamma, forwarding=args.forwarding)
    return topology, params, notes


def _bandwidth(text):
    if text is None:
        return None
    from directcoll.units import parse_bandwidth

    return parse_bandwidth(text)


def cmd_compare(args) -> int:
    from directcoll.reports.compare import DEFAULT_CONTENDERS, compare
    from directcoll.schedule.ir import Collective
    from directcoll.units import parse_sizes

    topology, params, notes = _resolve_network(args.spec, args.params, args)
    sizes = parse_sizes(args.sizes)
    contenders = DEFAULT_CONTENDERS
    if args.algorithms:
        wanted = [a.strip() for a in args.algorithms.split(",") if a.strip()]
        if not wanted:
            raise DirectcollError(f"--algorithms {args.algorithms!r} names no algorithm; see `directcoll algorithms`")
        contenders = [c for c in DEFAULT_CONTENDERS if c[0] in wanted or c[1] in wanted]
        extra = [w for w in wanted if not any(w in (c[0], c[1]) for c in DEFAULT_CONTENDERS)]
        from directcoll.algorithms.registry import get

        for w in extra:
            alg = get(w)
            if alg.name == "generalized":
                from directcoll.reports.compare import generalized_contenders

                contenders += generalized_contenders(topology.num_compute, Collective.parse(args.collective)) or [
                    ("generalized", "generalized", v) for v in ("bandwidth", "latency")]
            else:
                contenders += [(alg.name, alg.name, v) for v in alg.variants]
    quiet = args.json or args.csv
    with _progress(len(contenders), "simulating", enabled=not quiet) as tick:
        cmp = compare(topology, args.collective, sizes, params, args.routing, args.model, contenders,
                      progress=(lambda done, total, label="": tick(done, total)) if tick else _noop)
    if args.plot:
        from directcoll.reports.plot import plot_comparison

        plot_comparison(cmp, args.plot)
    if args.json:
        _print_json({**cmp.to_dict(), "notes": notes})
        return 0
    if args.csv:
        sys.stdout.write(cmp.to_csv())
        return 0
    _print_comparison(cmp, notes)
    if args.plot:
        print(f"plot written to {args.plot}")
    return 0


def _noop(*_args) -> None:
    return None


_SHORT_FAMILY = {"recursive-doubling": "rec.doub", "mirrored-recursive-doubling": "mirr.rd"}


def _gbps(bytes_per_s: float) -> str:
    v = bytes_per_s * 8 / 1e9
    return f"{v:.0f}" if v >= 100 else f"{v:.1f}" if v >= 10 else f"{v:.2f}" if v >= 1 else f"{v:.2g}"


def _print_comparison(cmp, notes) -> None:
    from rich.console import Console
    from rich.table import Table

    from directcoll.reports.plot import letter
    from directcoll.units import format_size, format_time

    fams = cmp.families()
    winners = cmp.winners()
    gain = cmp.gain()
    others = cmp.best_other() if gain is not None else None
    short = {"latency": "L", "bandwidth": "B", "hamiltonian": "H", "bidirectional": "bi", "unidirectional": "u",
             "r=0": "B"}
    from rich import box

    table = Table(title=f"{cmp.collective} on {cmp.topology}, goodput in Gb/s ({cmp.model} model, {cmp.routing} "
                        "routing)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("size", justify="right")
    for fam in fams:
        table.add_column(f"{_SHORT_FAMILY.get(fam, fam[:9])} ({letter(fam)})", justify="right")
    table.add_column("best", justify="center")
    table.add_column("time", justify="right")
    if gain is not None:
        table.add_column("swing gain", justify="right")
    for j, size in enumerate(cmp.sizes):
        row = [format_size(size)]
        for fam, (times, variants) in fams.items():
            cell = f"{_gbps(size / times[j])} {short.get(variants[j], variants[j])}"
            row.append(f"[bold]{cell}[/bold]" if fam == winners[j][0] else cell)
        row += [letter(winners[j][0]), format_time(winners[j][2])]
        if gain is not None:
            row.append(f"{gain[j] * 100:+.0f}% {letter(others[j])}")
        table.add_row(*row)
    console = Console()
    console.print(table)
    console.print(f"Each cell: goodput of the algorithm's best variant (L latency-, B bandwidth-optimal; r=k "
                  "generalized allreduce with k distribution steps removed; H/bi/u "
                  f"Hamiltonian/bidirectional/unidirectional rings). best = the fastest; swing gain = Swing's "
                  f"goodput over the best other (letter) - 1. Peak goodput {cmp.peak_goodput * 8 / 1e9:.4g} Gb/s.")
    for note in notes:
        console.print(f"[dim]{note}[/dim]")
    for s in cmp.skipped:
        console.print(f"[dim]skipped {s['algorithm']} {s['variant'] or ''}: {s['reason']}[/dim]")


# -- simulate ---------------------------------------------------------------------------------------------
def cmd_simulate(args) -> int:
    from directcoll.schedule import load
    from directcoll.simulate import simulate
    from directcoll.units import format_time, parse_size

    schedule = load(args.file)
    spec = args.topology or schedule.meta.get("topology")
    if not spec:
        raise DirectcollError(f"{args.file} does not record its topology; pass --topology SPEC")
    topology, params, notes = _resolve_network(spec, args.params, args)
    size = parse_size(args.size)
    if args.model == "flow":
        from directcoll.simulate.flow import simulate_flow

        res = simulate_flow(schedule, topology, size, params, args.routing)
        out = {"time_s": float(res.time_s), "model": "flow", "size": size,
               "steps": [{"step": t, "end_s": float(e)} for t, e in enumerate(res.step_end)]}
    else:
        sim = simulate(schedule, topology, params, args.routing)
        out = {"time_s": float(sim.time(size)), "model": "step", "size": size, "steps": sim.breakdown(size)}
    out.update({"algorithm": schedule.algorithm, "collective": schedule.collective.value, "topology": topology.spec,
                "routing": args.routing, "params": params.to_dict(), "goodput_Bps": size / out["time_s"]})
    if args.json:
        _print_json(out)
        return 0
    print(f"{schedule.algorithm} {schedule.collective.value} of {args.size} on {topology.spec} ({params.name}, "
          f"{args.routing} routing, {args.model} model): {format_time(out['time_s'])}, goodput "
          f"{out['goodput_Bps'] * 8 / 1e9:.4g} Gb/s")
    if args.model == "step":
        rows = [(f"step {r['step']}", f"max link {r['bytes_max_link']:.4g} B, {r['hops_max']:.0f} hops, "
                 f"{format_time(r['time_s'])}") for r in out["steps"]]
        _table("per step", rows)
    return 0


# -- run --------------------------------------------------------------------------------------------------
DEFAULT_RUN_ALGORITHMS = "swing:latency,swing:bandwidth,recursive-doubling,rabenseifner,ring"


def cmd_run(args) -> int:
    import shutil
    import subprocess
    import tempfile

    from directcoll.topology import parse
    from directcoll.units import format_size, format_time, parse_sizes

    topology = parse(args.topology)
    ranks = args.ranks or topology.num_compute
    if ranks != topology.num_compute:
        raise DirectcollError(f"--ranks {ranks} does not match {topology.spec}, which has {topology.num_compute} "
                              "compute nodes (one rank per node)")
    parse_sizes(args.sizes)  # refuse bad sizes before launching anything
    launcher = args.mpiexec.split() if args.mpiexec else [shutil.which("mpiexec") or "mpiexec"]
    with tempfile.TemporaryDirectory() as tmp:
        out = f"{tmp}/results.json"
        cmd = [*launcher, "-n", str(ranks), *(["-f", args.hostfile] if args.hostfile else []), sys.executable, "-m",
               "directcoll.runtime.worker", "--topology", topology.spec, "--algorithms", args.algorithms,
               "--collective", args.collective, "--sizes", args.sizes, "--repeat", str(args.repeat),
               "--timeout", str(args.timeout), "--json-out", out, *(["--native"] if args.compare_native else [])]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout * 20 + 60)
        except FileNotFoundError:
            raise DirectcollError(f"cannot start {launcher[0]!r}: install MPI (pip install mpi4py mpich) or pass "
                                  "--mpiexec") from None
        except subprocess.TimeoutExpired:
            raise DirectcollError(f"the run did not finish within {args.timeout * 20 + 60:g} s") from None
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-6:])
            raise DirectcollError(f"mpiexec exited with status {proc.returncode}:\n{tail}")
        with open(out) as fh:
            data = json.load(fh)
    if args.json:
        _print_json(data)
        return 0
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{data['collective']} on {ranks} MPI ranks ({topology.spec} schedules), this machine",
                  title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for col in ("algorithm", "size", "time", "Gb/s", "correct", "native", "ours/native"):
        table.add_column(col, justify="right")
    for row in data["results"]:
        if "skipped" in row:
            continue
        native = row.get("native_time_s")
        short = {"latency": "L", "bandwidth": "B", "hamiltonian": "H", "bidirectional": "bi"}
        variant = short.get(row["variant"], row["variant"] or "")
        table.add_row(f"{row['algorithm']} {variant}", format_size(row["size"]),
                      format_time(row["time_s"]), _gbps(row["goodput_Bps"]),
                      "yes" if row["correct"] else "[red]NO[/red]", format_time(native) if native else "-",
                      f"{row['time_s'] / native:.2f}x" if native else "-")
    Console().print(table)
    return 0 if all(r.get("correct", True) for r in data["results"]) else 1


# -- export / import --------------------------------------------------------------------------------------
def cmd_export(args) -> int:
    from directcoll.export.msccl import export_msccl
    from directcoll.schedule import load

    schedule = load(args.file)
    export_msccl(schedule, args.output, max_chunks=args.max_chunks)
    if args.json:
        _print_json({"file": args.output, "format": args.format, "algorithm": schedule.algorithm,
                     "collective": schedule.collective.value, "ranks": schedule.nranks})
    else:
        print(f"wrote {args.output}: MSCCL XML of {schedule.algorithm} {schedule.collective.value} on "
              f"{schedule.nranks} ranks")
    return 0


def cmd_import(args) -> int:
    from directcoll.export.msccl import import_msccl
    from directcoll.schedule import save

    schedule = import_msccl(args.file)
    save(schedule, args.output)
    info = {"file": args.output, "collective": schedule.collective.value, "ranks": schedule.nranks,
            "steps": schedule.num_steps, "transfers": schedule.num_transfers}
    if args.json:
        _print_json(info)
    else:
        print(f"wrote {args.output}: {schedule.collective.value} on {schedule.nranks} ranks, "
              f"{schedule.num_steps} steps, {schedule.num_transfers} transfers")
    return 0


# -- table 2 --------------------------------------------------------------------------------------------
def cmd_table2(args) -> int:
    from directcoll.cost.table2 import table2, to_dicts, to_markdown

    rows = table2(side=args.side)
    if args.json:
        _print_json(to_dicts(rows))
    else:
        print(to_markdown(rows))
    return 0


# -- parser -----------------------------------------------------------------------------------------------
def _add_build_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--collective", default="allreduce", choices=["allreduce", "reduce_scatter", "allgather"],
                   help="collective to build (default: allreduce)")
    p.add_argument("--variant", help="algorithm variant, e.g. latency or bandwidth (see `directcoll algorithms`)")
    p.add_argument("--ports", type=int, help="concurrent collectives / ports to use (default: the algorithm's)")


def _add_network_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", help="system preset for link and latency parameters (default swing-sst; "
                                    "see directcoll.presets)")
    p.add_argument("--routing", default="adaptive", choices=["adaptive", "dor"],
                   help="adaptive: split over all minimal paths (default); dor: dimension order")
    p.add_argument("--alpha", type=float, help="override: per-message overhead, s")
    p.add_argument("--per-hop-latency", type=float, help="override: per-hop latency, s")
    p.add_argument("--link-bandwidth", help="override: link bandwidth, e.g. 400Gbps or 50GB/s")
    p.add_argument("--link-latency", type=float, help="override: link latency, s")
    p.add_argument("--gamma", type=float, help="override: reduction cost, s per byte")
    p.add_argument("--forwarding", choices=["cut-through", "store-and-forward"],
                   help="per-hop behaviour (default cut-through)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="directcoll", description="Collective algorithms, schedules, verification and cost models for "
                                       "torus and direct-connect networks.")
    parser.add_argument("--version", action="version", version=f"directcoll {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    topo = sub.add_parser("topology", help="inspect topologies")
    topo_sub = topo.add_subparsers(dest="topology_command", required=True, metavar="SUBCOMMAND")
    desc = topo_sub.add_parser("describe", help="N, degree, diameter, average distance, links, bisection")
    desc.add_argument("spec", help="topology spec, e.g. torus:8x8, hammingmesh:2x2:32x32, hyperx:8x8")
    desc.add_argument("--json", action="store_true", help="machine-readable output")
    desc.set_defaults(func=cmd_topology_describe)

    sched = sub.add_parser("schedule", help="build a schedule file")
    sched.add_argument("algorithm", help="algorithm name (see `directcoll algorithms`)")
    sched.add_argument("spec", help="topology spec, e.g. torus:8x8")
    _add_build_options(sched)
    sched.add_argument("--steps", help="generalized only: number of steps (ceil(log2 P) .. 2 ceil(log2 P)) or "
                                       "'auto' (the fastest at --size with --params, default kolmakov-cluster)")
    sched.add_argument("--group", choices=["cyclic", "xor"], help="generalized only: the group T_P (default cyclic)")
    sched.add_argument("--size", help="vector size for --steps auto (default 1MiB)")
    sched.add_argument("--params", help="system preset for --steps auto (default kolmakov-cluster)")
    sched.add_argument("-o", "--output", required=True, help="output file (.json, or .npz for large schedules)")
    sched.add_argument("--json", action="store_true", help="machine-readable output")
    sched.set_defaults(func=cmd_schedule)

    ver = sub.add_parser("verify", help="execute a schedule exactly and check its collective")
    ver.add_argument("file", help="schedule file (.json or .npz)")
    ver.add_argument("--seed", type=int, default=0, help="seed of the random 64-bit words (default 0)")
    ver.add_argument("--json", action="store_true", help="machine-readable output")
    ver.set_defaults(func=cmd_verify)

    cost = sub.add_parser("cost", help="steps, bytes, deficiencies, T_L / T_B and an alpha-beta-gamma time",
                          description="Analyze a schedule file, or build one with --algorithm/--topology "
                                      f"(default: {DEFAULT_ALGORITHM} allreduce on {DEFAULT_TOPOLOGY}).")
    cost.add_argument("file", nargs="?", help="schedule file; omit to build one")
    cost.add_argument("--algorithm", help=f"algorithm to build when no file is given (default {DEFAULT_ALGORITHM})")
    cost.add_argument("--topology", help="topology spec (default: the one recorded in the file, or "
                                         f"{DEFAULT_TOPOLOGY})")
    _add_build_options(cost)
    cost.add_argument("--size", help="vector size for the time estimate, e.g. 64MiB")
    cost.add_argument("--alpha", type=float, default=400e-9, help="seconds per step (default 4e-7: one hop of "
                                                                  "the Swing SST setup)")
    cost.add_argument("--gamma", type=float, default=0.0, help="seconds per byte reduced (default 0)")
    cost.add_argument("--json", action="store_true", help="machine-readable output")
    cost.set_defaults(func=cmd_cost)

    cmp = sub.add_parser("compare", help="which algorithm wins on a network at each size (the main job)",
                         description="Simulate every algorithm that serves the network at every size and report "
                                     "goodput, the winner and Swing's gain. Default: allreduce on "
                                     f"{DEFAULT_TOPOLOGY}, {DEFAULT_SIZES}, swing-sst parameters.")
    cmp.add_argument("spec", nargs="?", help=f"topology spec or system preset (trn1, tpu-v4-cube, ...); "
                                              f"default {DEFAULT_TOPOLOGY}")
    cmp.add_argument("--collective", default="allreduce", choices=["allreduce", "reduce_scatter", "allgather"])
    cmp.add_argument("--sizes", default=DEFAULT_SIZES, help="32B..512MiB (powers of two), a list 1KiB,1MiB, or a "
                                                            "workload name such as swing_sweep")
    cmp.add_argument("--algorithms", help="comma list of algorithm families or registry names (default: swing, "
                                          "recursive-doubling, ring, bucket)")
    _add_network_options(cmp)
    cmp.add_argument("--model", default="step", choices=["step", "flow"],
                     help="step: congestion-aware step model (default); flow: max-min fair flows, slower")
    cmp.add_argument("--plot", help="write the goodput / gain figure to this PNG")
    cmp.add_argument("--json", action="store_true", help="machine-readable output")
    cmp.add_argument("--csv", action="store_true", help="CSV rows (algorithm, variant, size, time, goodput)")
    cmp.set_defaults(func=cmd_compare)

    sim = sub.add_parser("simulate", help="time one schedule file with a per-step breakdown")
    sim.add_argument("file", help="schedule file (.json or .npz)")
    sim.add_argument("--size", required=True, help="vector size, e.g. 64MiB")
    sim.add_argument("--topology", help="topology spec (default: the one recorded in the file)")
    _add_network_options(sim)
    sim.add_argument("--model", default="step", choices=["step", "flow"], help="simulation model (default step)")
    sim.add_argument("--json", action="store_true", help="machine-readable output")
    sim.set_defaults(func=cmd_simulate)

    rn = sub.add_parser("run", help="run schedules on real MPI ranks and compare with the MPI library",
                        description="Launch ranks through mpiexec on this machine (or --hostfile / --mpiexec for an "
                                    "allocation), time our schedules and the MPI library's own collective, and "
                                    "check that the results agree.")
    rn.add_argument("--ranks", type=int, help="number of ranks (default: the topology's nodes)")
    rn.add_argument("--topology", default="torus:2x4", help="topology the schedules are built for (default torus:2x4)")
    rn.add_argument("--algorithm", "--algorithms", dest="algorithms", default=DEFAULT_RUN_ALGORITHMS,
                    help=f"comma list of NAME or NAME:VARIANT (default {DEFAULT_RUN_ALGORITHMS})")
    rn.add_argument("--collective", default="allreduce", choices=["allreduce", "reduce_scatter", "allgather"])
    rn.add_argument("--size", "--sizes", dest="sizes", default="8B,64KiB,1MiB", help="sizes, e.g. 64MiB or 8B..1MiB")
    rn.add_argument("--repeat", type=int, default=3, help="timed repetitions per size (after one warm-up)")
    rn.add_argument("--timeout", type=float, default=30.0, help="seconds a rank waits for a step before failing")
    rn.add_argument("--compare-native", action=argparse.BooleanOptionalAction, default=True,
                    help="also time the MPI library's own collective (default on)")
    rn.add_argument("--hostfile", help="MPICH hostfile for mpiexec -f")
    rn.add_argument("--mpiexec", help="launcher command to use instead of mpiexec")
    rn.add_argument("--json", action="store_true", help="machine-readable output")
    rn.set_defaults(func=cmd_run)

    ex = sub.add_parser("export", help="export a schedule to a runtime format (MSCCL XML)")
    ex.add_argument("file", help="schedule file (.json or .npz)")
    ex.add_argument("--format", default="msccl", choices=["msccl"], help="output format (default msccl)")
    ex.add_argument("-o", "--output", required=True, help="output file, e.g. algo.xml")
    ex.add_argument("--max-chunks", type=int, default=1024, help="cap on chunks per buffer for fractional schedules")
    ex.add_argument("--json", action="store_true", help="machine-readable output")
    ex.set_defaults(func=cmd_export)

    im = sub.add_parser("import", help="read an MSCCL XML file into a schedule file (then verify, cost, simulate)")
    im.add_argument("file", help="MSCCL XML file")
    im.add_argument("-o", "--output", required=True, help="schedule file to write (.json or .npz)")
    im.add_argument("--json", action="store_true", help="machine-readable output")
    im.set_defaults(func=cmd_import)

    t2 = sub.add_parser("table2", help="regenerate Table 2 of the Swing paper (deficiencies, paper vs measured)")
    t2.add_argument("--side", type=int, default=8, help="torus side for the 2D/3D/4D measurements (default 8)")
    t2.add_argument("--json", action="store_true", help="machine-readable output (default: a Markdown table)")
    t2.set_defaults(func=cmd_table2)

    algs = sub.add_parser("algorithms", help="list every algorithm with the collectives and topologies it serves")
    algs.add_argument("--json", action="store_true", help="machine-readable output")
    algs.set_defaults(func=cmd_algorithms)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except DirectcollError as exc:
        print(f"directcoll: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
