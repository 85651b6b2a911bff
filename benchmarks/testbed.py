"""The emulated testbed's experiments (docs/testbed.md, "Experiments"), each on `directcoll run --engine testbed`:

(a) Zhao et al. Fig. 13 at emulated scale: BFB against recursive halving & doubling (rabenseifner), recursive
    doubling, ring and the MPI library's own allreduce on hypercube:3, the twisted hypercube of their figure and the
    lower-diameter N = 8, d = 3 topology the finder names (genkautz:3:8, directed); times normalised by recursive
    halving & doubling on hypercube:3, as the figure.
(b) Their App. A.2 regression: the small-size times against the schedules' step counts x (T_L = alpha x + eps),
    the large-size times against their bandwidth factors y in M/B, B the node bandwidth (T_B = (M/B) y), over
    every schedule and topology run; R^2, fitted values, mean and largest relative error.
(c) Swing against recursive doubling, ring and bucket on the 8-node torus torus:2x4.
(d) The model against the testbed: per topology, `calibrate` (alpha, link bandwidth, per-hop latency, gamma) on
    ring and recursive doubling, then every other schedule predicted by the step, flow and packet engines; median
    and largest relative error and the winner per size (a tie when the testbed's times of the two picks are within
    TIE of each other).

Run-to-run spread: the coefficient of variation of a row's repetitions (run --json's times_s), and whether the
cores were the bottleneck while timing (cpu_busy above 90 %). Needs root (namespaces) and MPICH's mpiexec.

Run: sudo python3 benchmarks/testbed.py [--out DIR] [--reuse] [--parts a,b,c,d] [--routing single|adaptive]
"""

from __future__ import annotations

import functools
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import benchcli  # noqa: E402

from directcoll.runtime.launch import CPU_BOUND  # noqa: E402

ESTIMATE = "about 7 minutes on 2 cores (4 topologies x 4 sizes x 4 to 6 schedules, 5 repetitions, 10 Mb/s)"
#: the emulated links: 8 nodes of degree 3 or 4 on 2 cores stay link-bound at this rate (docs/testbed.md)
RATE = "10Mbps"
RATE_BPS = 10e6 / 8
SIZES = [1024, 16 * 1024, 256 * 1024, 1024 * 1024]
REPEAT = 5
FIG13 = ["bfb", "rabenseifner", "recursive-doubling:latency", "ring"]
RUNS = {"hypercube:3": FIG13, "twistedhypercube:3": FIG13, "genkautz:3:8": FIG13,
        "torus:2x4": ["swing:latency", "swing:bandwidth", "recursive-doubling:latency",
                      "recursive-doubling:bandwidth", "ring", "bucket"]}
#: (d): the schedules calibrate sees; every other one is predicted
FITTED = ("ring", "recursive-doubling:latency")
#: (d): what calibrate fits: its default, the network's alpha, link bandwidth, per-hop latency and gamma
FIT = ("alpha", "link_bandwidth", "per_hop_latency", "gamma")
#: (d): two picks whose testbed times are within this fraction are a tie
TIE = 0.05


def run(spec: str, algorithms: list[str], routing: str) -> dict:
    """`directcoll run SPEC --engine testbed --routing ROUTING --json` of ``algorithms`` at :data:`SIZES`."""
    cmd = [sys.executable, "-m", "directcoll", "run", spec, "--engine", "testbed", "--link-rate", RATE,
           "--routing", routing, *(["--queue", QUEUE] if QUEUE else []),
           "--algorithms", ",".join(algorithms), "--sizes", ",".join(map(str, SIZES)), "--repeat", str(REPEAT),
           "--timeout", "120", "--json"]
    t0 = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[2:])} failed: {done.stderr.strip()[-2000:]}")
    print(f"  {spec}: {time.monotonic() - t0:.0f} s", file=sys.stderr, flush=True)
    return json.loads(done.stdout)


def label(row: dict) -> str:
    """The row's schedule as the experiments name it: NAME:VARIANT where they give a variant, else NAME (the run
    records every variant, the default one too)."""
    full = row["algorithm"] + (f":{row['variant']}" if row.get("variant") else "")
    named = {n for names in RUNS.values() for n in names}
    return full if full in named or row["algorithm"] not in named else row["algorithm"]


def split(name: str) -> tuple[str, str | None]:
    """NAME[:VARIANT] -> (algorithm, variant or None)."""
    algorithm, _, variant = name.partition(":")
    return algorithm, variant or None


def rows_of(data: dict) -> list[dict]:
    return [r for r in data["results"] if "skipped" not in r]


@functools.cache
def cost_terms(spec: str, name: str) -> tuple[int, float]:
    """(steps x, bandwidth factor y in M/B with B the node bandwidth) of a schedule, from the cost model."""
    from directcoll.cost import analyze
    from directcoll.registry import build
    from directcoll.topology import parse

    algorithm, variant = split(name)
    t = parse(spec)
    report = analyze(build(algorithm, t, "allreduce", variant=variant), t)
    return int(report.to_dict()["t_l_steps"]), float(report.to_dict()["t_b_m_over_b"])


@functools.cache
def node_degree(spec: str) -> float:
    from directcoll.topology import parse

    t = parse(spec)
    return float(np.mean(np.bincount(t.link_src, minlength=t.num_nodes)[: t.num_compute]))


def spread(times: list[float]) -> float:
    return statistics.pstdev(times) / statistics.fmean(times) if len(times) > 1 else 0.0


def part_a(data: dict) -> None:
    print("\n### (a) BFB against switch solutions (Zhao et al. Fig. 13), times / rabenseifner on hypercube:3\n")
    base = {r["size"]: r["time_s"] for r in rows_of(data["hypercube:3"]) if label(r) == "rabenseifner"}
    specs = ["hypercube:3", "twistedhypercube:3", "genkautz:3:8"]
    print("| topology | size | " + " | ".join(FIG13) + " | MPI |")
    print("|---|---|" + "---|" * (len(FIG13) + 1))
    for spec in specs:
        rows = rows_of(data[spec])
        for size in SIZES:
            at = {label(r): r for r in rows if r["size"] == size}
            native = next(iter(at.values()))["native_time_s"]
            cells = [f"{at[a]['time_s'] / base[size]:.2f}" if a in at else "-" for a in FIG13]
            print(f"| {spec} | {size // 1024} KiB | " + " | ".join(cells) + f" | {native / base[size]:.2f} |")


def part_b(data: dict) -> dict:
    print("\n### (b) The alpha-beta model by linear regression (Zhao et al. App. A.2)\n")
    small, large = [], []
    for spec, payload in data.items():
        degree = node_degree(spec)
        for r in rows_of(payload):
            x, y = cost_terms(spec, label(r))
            if r["size"] == SIZES[0]:
                small.append((spec, label(r), x, r["time_s"]))
            if r["size"] == SIZES[-1]:
                large.append((spec, label(r), y * r["bytes"] / (degree * RATE_BPS), r["time_s"]))
    xs, ts = np.array([s[2] for s in small], float), np.array([s[3] for s in small])
    alpha, eps = np.polyfit(xs, ts, 1)
    fit_l = alpha * xs + eps
    zs, tb = np.array([s[2] for s in large]), np.array([s[3] for s in large])
    slope = float(zs @ tb / (zs @ zs))  # T_B = slope * (M/B) y, through the origin as the paper's
    fit_b = slope * zs
    out = {}
    for name, t, f in (("T_L", ts, fit_l), ("T_B", tb, fit_b)):
        rel = np.abs(f / t - 1)
        r2 = 1 - float(np.sum((t - f) ** 2) / np.sum((t - t.mean()) ** 2))
        out[name] = {"r2": r2, "mean_rel_error": float(rel.mean()), "max_rel_error": float(rel.max()),
                     "points": len(t)}
    print(f"- T_L at {SIZES[0]} B over {len(small)} schedules: alpha = {alpha * 1e6:.1f} us per step, eps = "
          f"{eps * 1e6:.1f} us; R^2 = {out['T_L']['r2']:.3f}; relative error mean {out['T_L']['mean_rel_error']:.1%},"
          f" max {out['T_L']['max_rel_error']:.1%}")
    print(f"- T_B at {SIZES[-1] // 1024} KiB over {len(large)} schedules: measured / ((M/B) y) = {slope:.3f} "
          f"(B the node bandwidth at {RATE}: effective B = {1 / slope:.1%} of it); R^2 = {out['T_B']['r2']:.3f}; "
          f"relative error mean {out['T_B']['mean_rel_error']:.1%}, max {out['T_B']['max_rel_error']:.1%}")
    print("\n| topology | schedule | steps x | time at 1 KiB | y (M/B) | time at 1 MiB |")
    print("|---|---|---|---|---|---|")
    for (spec, name, x, t), (_, _, z, t2) in zip(small, large, strict=True):
        print(f"| {spec} | {name} | {x} | {t * 1e3:.2f} ms | {z / (SIZES[-1] / (node_degree(spec) * RATE_BPS)):.3f} "
              f"| {t2 * 1e3:.0f} ms |")
    return out


def part_c(data: dict) -> None:
    print("\n### (c) Swing against its baselines on torus:2x4\n")
    rows = rows_of(data["torus:2x4"])
    names = list(dict.fromkeys(label(r) for r in rows))
    print("| size | " + " | ".join(names) + " | MPI | fastest |")
    print("|---|" + "---|" * (len(names) + 2))
    for size in SIZES:
        at = {label(r): r["time_s"] for r in rows if r["size"] == size}
        native = next(r["native_time_s"] for r in rows if r["size"] == size)
        print(f"| {size // 1024} KiB | " + " | ".join(f"{at[n] * 1e3:.2f} ms" for n in names)
              + f" | {native * 1e3:.2f} ms | {min(at, key=at.get)} |")


def part_d(data: dict, routing: str) -> dict:
    from directcoll.registry import build
    from directcoll.simulate.calibrate import calibrate
    from directcoll.simulate.measurements import Measurement
    from directcoll.topology import parse

    print(f"\n### (d) The model against the testbed: calibrated on {' and '.join(FITTED)}, the rest predicted\n")
    summary, fits, per_size = {}, {}, {}
    print("| topology | engine | median error | max error | same winner (tie within 5 %) |")
    print("|---|---|---|---|---|")
    for spec, payload in data.items():
        rows = rows_of(payload)
        t = parse(spec)
        meas = [Measurement(*split(label(r)), "allreduce", payload["ranks"], float(r["bytes"]), r["time_s"])
                for r in rows if label(r) in FITTED]
        cal = calibrate(meas, t, fit=FIT, routing=routing, cross_validate=False)
        params = cal.params
        schedules = {n: build(split(n)[0], t, "allreduce", variant=split(n)[1])
                     for n in dict.fromkeys(label(r) for r in rows)}
        for engine in ("step", "flow", "packet"):
            try:
                pred = {(label(r), r["size"]): _predict(engine, schedules[label(r)], t, float(r["bytes"]), params,
                                                        routing) for r in rows}
            except Exception as exc:  # the packet engine without ns-3: say so, keep the others
                print(f"| {spec} | {engine} | not run: {str(exc).splitlines()[0][:60]} | | |")
                continue
            errors = [abs(pred[(label(r), r["size"])] / r["time_s"] - 1) for r in rows if label(r) not in FITTED]
            for r in rows:
                if label(r) not in FITTED and engine == "step":
                    per_size.setdefault(r["size"], []).append(abs(pred[(label(r), r["size"])] / r["time_s"] - 1))
            same = 0
            for size in SIZES:
                at = {label(r): r["time_s"] for r in rows if r["size"] == size}
                best = min(at, key=at.get)
                pick = min(at, key=lambda n, size=size: pred[(n, size)])
                same += at[pick] <= at[best] * (1 + TIE)
            summary[(spec, engine)] = {"median": float(np.median(errors)), "max": float(np.max(errors)),
                                       "same_winner": same / len(SIZES)}
            print(f"| {spec} | {engine} | {np.median(errors):.1%} | {np.max(errors):.1%} | {same}/{len(SIZES)} |")
        fits[spec] = cal.fitted
    print("\nStep model, every topology, by size: " + "; ".join(
        f"{size // 1024} KiB median {np.median(e):.1%}, {sum(x > 0.2 for x in e)} of {len(e)} above 20 %"
        for size, e in sorted(per_size.items())))
    print()
    for spec, fitted in fits.items():
        print(f"- {spec} fitted: " + ", ".join(_value(k, v) for k, v in fitted.items()))
    return {f"{k[0]} {k[1]}": v for k, v in summary.items()}


def _value(key: str, value: float) -> str:
    """A fitted value with its unit."""
    name = key.split("@")[0]
    if name == "link_bandwidth":
        return f"{key} {value * 8 / 1e6:.2f} Mb/s"
    if name == "gamma":
        return f"{key} {value * 1e9:.3g} ns/B"
    return f"{key} {value * 1e6:.3g} us"


def _predict(engine: str, schedule, topology, size: float, params, routing: str) -> float:
    from directcoll.simulate import simulate
    from directcoll.simulate.flow import simulate_flow
    from directcoll.simulate.packet import simulate_packet

    if engine == "step":
        return float(simulate(schedule, topology, params, routing).time(size))
    if engine == "flow":
        return float(simulate_flow(schedule, topology, size, params, routing).time_s)
    return float(simulate_packet(schedule, topology, size, params, routing).time_s)


def part_spread(data: dict) -> None:
    cvs = [(spec, label(r), r["size"], spread(r["times_s"]), r.get("cpu_busy")) for spec, p in data.items()
           for r in rows_of(p)]
    big = [c for c in cvs if c[2] >= 256 * 1024]
    print(f"\n### Run-to-run spread\n\n- coefficient of variation of the {REPEAT} repetitions, rows at 256 KiB and "
          f"more: median {np.median([c[3] for c in big]):.1%}, max {max(c[3] for c in big):.1%} "
          f"({sum(c[3] <= 0.10 for c in big)} of {len(big)} rows within 10 %); all rows: median "
          f"{np.median([c[3] for c in cvs]):.1%}")
    busy = [c for c in cvs if c[4] is not None and c[4] > CPU_BOUND]
    print(f"- rows timed with the cores more than {CPU_BOUND:.0%} busy: {len(busy)} of {len(cvs)}"
          + (": " + ", ".join(f"{s} {n} {z // 1024} KiB" for s, n, z, _, _ in busy) if busy else ""))


#: --queue of the runs (a-d); None: the testbed's default
QUEUE = None
#: the queue sweep: schedules whose flows converge on links (recursive doubling's partners two hops apart) and
#: two that keep to neighbours, at the largest size
QUEUES = ["64KiB", "256KiB", "1MiB", "4MiB"]
QUEUE_SPEC = "torus:2x4"
QUEUE_ALGORITHMS = ["recursive-doubling:latency", "rabenseifner", "ring", "swing:bandwidth"]


def run_queues(routing: str) -> dict:
    """`directcoll run torus:2x4 --engine testbed --queue Q` at 1 MiB for every queue of :data:`QUEUES`."""
    out = {}
    for q in QUEUES:
        cmd = [sys.executable, "-m", "directcoll", "run", QUEUE_SPEC, "--engine", "testbed", "--link-rate", RATE,
               "--routing", routing, "--queue", q, "--algorithms", ",".join(QUEUE_ALGORITHMS), "--sizes", "1MiB",
               "--repeat", str(REPEAT), "--timeout", "120", "--no-compare-native", "--json"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(cmd[2:])} failed: {done.stderr.strip()[-2000:]}")
        out[q] = json.loads(done.stdout)
        print(f"  queue {q}: done", file=sys.stderr, flush=True)
    return out


def part_q(queues: dict) -> None:
    print(f"\n### Queues: {QUEUE_SPEC} at 1 MiB, mean time and spread (coefficient of variation) per queue\n")
    print("| queue | " + " | ".join(QUEUE_ALGORITHMS) + " |")
    print("|---|" + "---|" * len(QUEUE_ALGORITHMS))
    for q, payload in queues.items():
        at = {label(r): r for r in rows_of(payload)}
        print(f"| {q} | " + " | ".join(f"{at[a]['time_s'] * 1e3:.0f} ms ({spread(at[a]['times_s']):.1%})"
                                       if a in at else "-" for a in QUEUE_ALGORITHMS) + " |")


def main() -> None:
    ap = benchcli.parser(__doc__, ESTIMATE)
    ap.add_argument("--reuse", action="store_true", help="analyse the runs saved in --out instead of running")
    ap.add_argument("--parts", default="a,b,c,d", help="comma list of a, b, c, d and q (the queue sweep: its own "
                                                       "runs, about 4 minutes)")
    ap.add_argument("--routing", default="single", choices=["single", "adaptive"],
                    help="the testbed's routes and the models' routing in (d): single (default, one minimal path "
                         "per destination on both) or adaptive (ECMP per flow on the testbed, an even split over "
                         "every minimal path in the models)")
    ap.add_argument("--queue", help="--queue of the runs of (a)-(d), e.g. 64KiB (default: the testbed's)")
    args = ap.parse_args()
    global QUEUE
    QUEUE = args.queue
    out = benchcli.begin(args, ESTIMATE, "testbed")
    saved = out / f"testbed_runs_{args.routing}{'_' + args.queue if args.queue else ''}.json"
    parts = set(args.parts.split(","))
    if args.reuse:
        data = json.loads(saved.read_text())
    else:
        data = {spec: run(spec, algorithms, args.routing) for spec, algorithms in RUNS.items()} if parts - {"q"} \
            else json.loads(saved.read_text()) if saved.exists() else {}
        if "q" in parts:
            data["queues"] = run_queues(args.routing)
        saved.write_text(json.dumps(data))
    queues = data.pop("queues", None)
    print(f"## Testbed experiments, {time.strftime('%Y-%m-%d')} (links at {RATE}, {args.routing} routing, queues "
          f"{args.queue or 'the default'}, {REPEAT} repetitions)")
    result = {}
    if "a" in parts:
        part_a(data)
    if "b" in parts:
        result["regression"] = part_b(data)
    if "c" in parts:
        part_c(data)
    if "d" in parts:
        result["model"] = part_d(data, args.routing)
    if "q" in parts and queues:
        part_q(queues)
    if data:
        part_spread(data)
    (out / f"testbed_summary_{args.routing}.json").write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
