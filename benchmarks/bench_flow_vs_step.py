"""Flow model vs step model: completion times and wall time on tori with the Swing paper's SST parameters.

Run: python3 benchmarks/bench_flow_vs_step.py [--topologies torus:8x8,torus:16x16] [--algorithms swing:bandwidth,ring]

For every topology and algorithm (allreduce), prints step time, flow time and flow/step per vector size
(32 B .. 512 MiB, every 4x), the wall seconds each model took over all sizes (step: routing + closed-form sweep;
flow: routing + one event simulation per size), the flow model's events and water-filling rounds per size, and
the largest |flow/step - 1| over sizes >= 1 MiB. The step model runs first and pays for routing; route patterns
are cached per process, so the flow model's wall time counts only translating them to its own flow x link
arrays. Asymmetric cases (where the models differ) run with e.g. ``--topologies torus:6x6,mesh:8x8``.
"""

from __future__ import annotations

import platform
import time

import benchcli
import numpy as np

from directcoll.registry import build_pattern
from directcoll.simulate import SWING_SST, simulate
from directcoll.simulate.flow import _prepare, _simulate_prepared
from directcoll.topology import parse
from directcoll.units import format_size, parse_sizes

ESTIMATE = "a few minutes (the flow model on torus:32x32 dominates)"

TOPOLOGIES = "torus:8x8,torus:16x16,torus:32x32"
ALGORITHMS = "swing:bandwidth,swing:latency,recursive-doubling:latency,recursive-doubling:bandwidth,ring,bucket"


def sizes() -> np.ndarray:
    return np.array(parse_sizes("32B..512MiB")[::2], dtype=float)    # 32 B, 128 B, ..., 512 MiB: every 4x


def run_case(spec: str, name: str, variant: str | None, sizes_: np.ndarray) -> dict:
    topo = parse(spec)
    t0 = time.perf_counter()
    pat = build_pattern(name, topo, variant=variant)
    t_build = time.perf_counter() - t0

    t0 = time.perf_counter()
    step = simulate(pat, topo, SWING_SST).time(sizes_)
    t_step = time.perf_counter() - t0

    t0 = time.perf_counter()
    prep = _prepare(pat, topo, SWING_SST, "adaptive")
    results = [_simulate_prepared(prep, s) for s in sizes_]
    t_flow = time.perf_counter() - t0
    flow = np.array([r.time_s for r in results])
    return {"steps": pat.num_steps, "step": step, "flow": flow, "events": [r.events for r in results],
            "rounds": [r.rounds for r in results], "t_build": t_build, "t_step": t_step, "t_flow": t_flow}


def main() -> None:
    ap = benchcli.parser(__doc__, ESTIMATE)
    ap.add_argument("--topologies", default=TOPOLOGIES)
    ap.add_argument("--algorithms", default=ALGORITHMS, help="name[:variant],...")
    args = ap.parse_args()
    benchcli.begin(args, ESTIMATE, "bench_flow_vs_step")
    machine = platform.processor() or platform.machine()
    print(f"# {time.strftime('%Y-%m-%d')} {machine}, python {platform.python_version()}; params {SWING_SST.name}, "
          "adaptive routing, allreduce")
    sz = sizes()
    summary = []
    for spec in args.topologies.split(","):
        for item in args.algorithms.split(","):
            name, _, variant = item.partition(":")
            r = run_case(spec, name, variant or None, sz)
            label = f"{name}{':' + variant if variant else ''}"
            print(f"\n## {spec} {label}: {r['steps']} steps; wall: build {r['t_build']:.2f} s, step model "
                  f"{r['t_step']:.2f} s, flow model {r['t_flow']:.2f} s ({len(sz)} sizes)")
            print(f"{'size':>8} {'step s':>12} {'flow s':>12} {'flow/step':>10} {'events':>7} {'rounds':>7}")
            for i, s in enumerate(sz):
                print(f"{format_size(s):>8} {r['step'][i]:12.5e} {r['flow'][i]:12.5e} "
                      f"{r['flow'][i] / r['step'][i]:10.6f} {r['events'][i]:7d} {r['rounds'][i]:7d}")
            big = sz >= 2**20
            dev = float(np.max(np.abs(r["flow"][big] / r["step"][big] - 1)))
            small = float(np.max(r["flow"] / r["step"] - 1))
            summary.append((spec, label, dev, small, r["t_step"], r["t_flow"]))
    print("\n## summary: max |flow/step - 1| over sizes >= 1 MiB, max (flow/step - 1) over all sizes, wall s")
    print(f"{'topology':>12} {'algorithm':>30} {'max|r-1|>=1MiB':>15} {'max(r-1)':>10} {'step s':>8} {'flow s':>8}")
    for spec, label, dev, small, ts, tf in summary:
        print(f"{spec:>12} {label:>30} {dev:15.3e} {small:10.3e} {ts:8.2f} {tf:8.2f}")


if __name__ == "__main__":
    main()
