"""Foundation benchmarks: build + verify + cost of large schedules, and routing at 16,384 nodes.

Run: python3 benchmarks/bench_foundation.py [--quick]
Prints one line per case (seconds); docs/benchmarks.md records the figures with the date and machine.
"""

from __future__ import annotations

import platform
import time

import benchcli
import numpy as np

from directcoll.cost import analyze
from directcoll.registry import build
from directcoll.topology import link_loads, parse
from directcoll.verify import verify

ESTIMATE = "about a minute (build, verify and cost of 64x64 schedules; --quick skips the largest)"


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def main() -> None:
    ap = benchcli.parser(__doc__, ESTIMATE)
    ap.add_argument("--quick", action="store_true", help="skip the 8x8x8x8 and 128x128 cases")
    args = ap.parse_args()
    benchcli.begin(args, ESTIMATE, "bench_foundation")
    machine = platform.processor() or platform.machine()
    print(f"# {time.strftime('%Y-%m-%d')} {machine}, python {platform.python_version()}")
    cases = [("swing", "torus:64x64", None), ("swing", "torus:64x64", "latency"), ("bucket", "torus:64x64", None),
             ("rabenseifner", "torus:64x64", None), ("swing", "torus:60x60", None)]
    if not args.quick:
        cases += [("swing", "torus:8x8x8x8", None)]
    for name, spec, variant in cases:
        topo = parse(spec)
        s, t_build = timed(build, name, topo, "allreduce", variant=variant)
        r, t_verify = timed(verify, s)
        c, t_cost = timed(analyze, s, topo)
        assert r.ok, r.summary()
        print(f"{name:>13} {variant or '':>8} {spec:>14}: {s.num_transfers:>9} transfers  build {t_build:6.2f} s  "
              f"verify {t_verify:6.2f} s  cost {t_cost:6.2f} s  (Xi = {c.congestion_deficiency:.4f})")
    if not args.quick:
        topo = parse("torus:128x128")
        src = np.repeat(np.arange(topo.num_compute), 4)
        dst = topo.translate(src, np.tile([1, 128, 21, 21 * 128], topo.num_compute))
        _, t = timed(link_loads, topo, src, dst, 1.0)
        print(f"routing 65,536 transfers on torus:128x128: {t:.2f} s")


if __name__ == "__main__":
    main()
