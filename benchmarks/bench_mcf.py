"""All-to-all MCF: F on a few topologies, and link vs decomposed vs symmetric solve times (docs/alltoall.md).

Run: python3 benchmarks/bench_mcf.py [--table] [--timing] [--solvers] [--specs genkautz:4:100,torus:8x8]
     [--workers K] [--repeat R] [--scaling 100,200,500,1000]
     [--certified jellyfish:150:4,jellyfish:1000:4 --gap 0.01 --time-limit 600]
With none of --table, --timing, --solvers, --scaling, the first two run. --scaling times the decomposed method
(exact, all workers) on genkautz:4:N (Basu et al. Fig. 7's scaling benchmark) and the all-to-all bracket of
:mod:`directcoll.synthesis.mcf.bracket` on the same graphs. --certified runs
directcoll.synthesis.mcf.certified.alltoall_mcf_certified (lower <= F <= upper, docs/alltoall.md, "Methods") on
the specs given, with progress on stderr. Prints Markdown tables; docs/alltoall.md records
them with the date and machine. Timings are wall seconds of alltoall_mcf (best of --repeat runs), split into its
stages.
"""

from __future__ import annotations

import os
import platform
import time
from fractions import Fraction

import benchcli

from directcoll.cost.bounds import capacity_bound, theorem1_bound
from directcoll.synthesis.mcf.bracket import alltoall_mcf_bracket
from directcoll.synthesis.mcf.link import alltoall_mcf
from directcoll.topology import parse

ESTIMATE = "seconds for --table; minutes for --timing, --solvers and --scaling (docs/alltoall.md lists them)"

#: (label, spec, keyword arguments of alltoall_mcf and capacity_bound)
TABLE = [
    ("torus:3x3x3", "torus:3x3x3", {}),
    ("torus:3x3x3, 25 Gb/s links, 100 Gb/s host", "torus:3x3x3", {"host_bandwidth": "100Gbps"}),
    ("torus:3x3x3, same, NIC forwarding", "torus:3x3x3", {"host_bandwidth": "100Gbps", "nic_forwarding": True}),
    ("torus:3x4", "torus:3x4", {}),
    ("torus:8x8", "torus:8x8", {}),
    ("torus:4x4x4", "torus:4x4x4", {}),
    ("hypercube:4", "hypercube:4", {}),
    ("complete:8", "complete:8", {}),
    ("circulant:16:opt4", "circulant:16:opt4", {}),
    ("kautz:2:3", "kautz:2:3", {}),
    ("genkautz:4:20", "genkautz:4:20", {}),
    ("genkautz:4:64", "genkautz:4:64", {}),
    ("petersen", "petersen", {}),
    ("mesh:4x4", "mesh:4x4", {}),
    ("hammingmesh:2x2:2x2", "hammingmesh:2x2:2x2", {}),
]


#: --timing also solves the per-pair LP (eq. 1-5, N(N - 1) commodities) up to this many nodes.
PAIR_MAX_NODES = 32


def fraction(x: float) -> str:
    f = Fraction(x).limit_denominator(100_000)
    return str(f) if abs(float(f) - x) <= 1e-12 * x else ""


def regular_degree(topo) -> int | None:
    deg = topo.out_degree[: topo.num_compute]
    return int(deg[0]) if topo.num_nodes == topo.num_compute and deg.min() == deg.max() else None


def table() -> None:
    print("| topology | N | links | F | F exact | capacity bound | Theorem 1 bound | method | seconds |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, spec, kw in TABLE:
        topo = parse(spec, link_bandwidth=25e9 / 8) if "host_bandwidth" in kw else parse(spec)
        t0 = time.perf_counter()
        r = alltoall_mcf(topo, **kw)
        seconds = time.perf_counter() - t0
        bound = capacity_bound(topo, **kw)
        d = regular_degree(topo)
        thm1 = f"{theorem1_bound(topo.num_compute, d):.6g}" if d and "host_bandwidth" not in kw else ""
        print(f"| {label} | {topo.num_compute} | {topo.num_links} | {r.value:.6g} | {fraction(r.value)} | "
              f"{bound:.6g} | {thm1} | {r.method} ({r.solver}) | {seconds:.2f} |", flush=True)


def timing(specs: list[str], workers: int, repeat: int) -> None:
    print("| topology | method | F | solver | build s | solve / master s | children s | total s |")
    print("|---|---|---|---|---|---|---|---|")
    for spec in specs:
        topo = parse(spec)
        runs = [("link", {}), ("decomposed", {"workers": 1}), ("decomposed", {"workers": workers})]
        if topo.num_compute <= PAIR_MAX_NODES:
            runs.insert(1, ("link", {"commodities": "pair"}))
        if topo.is_cayley:
            runs.append(("symmetric", {}))
        for method, kw in runs:
            best, result = float("inf"), None
            for _ in range(repeat):
                t0 = time.perf_counter()
                r = alltoall_mcf(topo, method=method, **kw)
                total = time.perf_counter() - t0
                if total < best:
                    best, result = total, r
            s = result.seconds
            label = method + (f", {kw['workers']} worker{'s' * (kw['workers'] > 1)}" if "workers" in kw else "")
            label += ", per-pair LP (eq. 1-5)" if kw.get("commodities") == "pair" else ""
            solve = s.get("solve", s.get("master", 0.0))
            children = f"{s['children']:.2f}" if "children" in s else ""
            print(f"| {spec} | {label} | {result.value:.10g} | {result.solver} | {s['build']:.3f} | {solve:.2f} | "
                  f"{children} | {best:.2f} |", flush=True)


def solvers(specs: list[str], repeat: int) -> None:
    """Seconds of the link LP (source-aggregated) by HiGHS solver; simplex is skipped above 20k columns."""
    print("| topology | LP columns | simplex s | ipm s | pdlp + crossover s |")
    print("|---|---|---|---|---|")
    for spec in specs:
        topo = parse(spec)
        cols = topo.num_compute * topo.num_links + 1
        cells = []
        for solver in ("simplex", "ipm", "pdlp"):
            if solver == "simplex" and cols > 20_000:
                cells.append("")
                continue
            best = float("inf")
            for _ in range(repeat):
                t0 = time.perf_counter()
                r = alltoall_mcf(topo, method="link", solver=solver)
                best = min(best, time.perf_counter() - t0)
            cells.append(f"{best:.2f}" + ("" if r.solver.startswith(solver) else f" ({r.solver})"))
        print(f"| {spec} | {cols} | " + " | ".join(cells) + " |", flush=True)


def scaling(sizes: list[int], workers: int) -> None:
    print("| topology | decomposed F | master s | children s | total s | bracket lower | bracket upper | gap | "
          "bracket s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in sizes:
        spec = f"genkautz:4:{n}"
        t0 = time.perf_counter()
        r = alltoall_mcf(spec, method="decomposed", workers=workers)
        total = time.perf_counter() - t0
        t0 = time.perf_counter()
        b = alltoall_mcf_bracket(spec)
        took = time.perf_counter() - t0
        print(f"| {spec} | {r.value:.10g} | {r.seconds['master']:.1f} | {r.seconds['children']:.1f} | {total:.1f} | "
              f"{b.lower:.10g} | {b.upper:.10g} | {b.gap:.2e} | {took:.1f} |", flush=True)


def certified(specs: list[str], gap: float, time_limit: float) -> None:
    import sys

    from directcoll.synthesis.mcf.certified import alltoall_mcf_certified

    print("| topology | lower | upper | gap | converged | iterations | seconds | load (uptime) |")
    print("|---|---|---|---|---|---|---|---|")
    for spec in specs:
        def show(it, lo, up, g, spec=spec):
            print(f"{spec}: iteration {it}, {lo:.6g} <= F <= {up:.6g}, gap {g:.3%}", file=sys.stderr, flush=True)

        b = alltoall_mcf_certified(spec, rel_gap=gap, time_limit=time_limit, progress=show)
        load = os.getloadavg()[0]
        print(f"| {spec} | {b.lower:.6g} | {b.upper:.6g} | {b.gap:.2%} | {b.converged} | {b.iterations} | "
              f"{b.seconds:.0f} | {load:.1f} |", flush=True)


def main() -> None:
    ap = benchcli.parser(__doc__, ESTIMATE)
    ap.add_argument("--table", action="store_true", help="F, bounds and method for a list of topologies")
    ap.add_argument("--timing", action="store_true", help="link vs decomposed vs symmetric solve times")
    ap.add_argument("--solvers", action="store_true", help="link-LP seconds by HiGHS solver (not run by default)")
    ap.add_argument("--specs", default="genkautz:4:20,torus:8x8,genkautz:4:100",
                    help="topologies for --timing and --solvers")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="child-LP processes (default: cores)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per timing; the best is reported")
    ap.add_argument("--scaling", default="", help="N list: decomposed MCF and the bracket on genkautz:4:N")
    ap.add_argument("--certified", default="", help="specs: certified MCF bounds (e.g. jellyfish:1000:4)")
    ap.add_argument("--gap", type=float, default=0.01, help="--certified: target relative gap (default 0.01)")
    ap.add_argument("--time-limit", type=float, default=600.0, help="--certified: seconds per topology (default 600)")
    args = ap.parse_args()
    benchcli.begin(args, ESTIMATE, "bench_mcf")
    both = not (args.table or args.timing or args.solvers or args.scaling or args.certified)
    print(f"# {time.strftime('%Y-%m-%d')} {platform.machine()}, {os.cpu_count()} cores, "
          f"python {platform.python_version()}\n")
    if args.table or both:
        table()
        print()
    if args.timing or both:
        timing(args.specs.split(","), args.workers, args.repeat)
        print()
    if args.solvers:
        solvers(args.specs.split(","), args.repeat)
    if args.scaling:
        scaling([int(n) for n in args.scaling.split(",")], args.workers)
    if args.certified:
        certified(args.certified.split(","), args.gap, args.time_limit)


if __name__ == "__main__":
    main()
