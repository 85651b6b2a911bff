"""The ``directcoll`` command line: a thin layer over the library (every command is a library call first)."""

from __future__ import annotations

import argparse
import json
import sys
import time

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
    schedule = build(args.algorithm, args.spec, args.collective, variant=args.variant, ports=args.ports)
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

        self._bar = Progress(transient=True)
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
