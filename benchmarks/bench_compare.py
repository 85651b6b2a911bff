"""Wall time of `directcoll compare` (all default algorithms, the paper's 25 sizes, swing-sst parameters).

Run: python3 benchmarks/bench_compare.py [SPEC ...] [--out DIR]   (default: torus:64x64 torus:128x128)
Targets (issue #3): torus:64x64 under 30 s, torus:128x128 under 3 minutes on the 2-core machine.
"""

from __future__ import annotations

import platform
import time

import benchcli

from directcoll.reports.compare import compare
from directcoll.simulate import SWING_SST
from directcoll.topology import parse
from directcoll.units import parse_sizes

ESTIMATE = "about 3 minutes for the defaults (targets: torus:64x64 under 30 s, torus:128x128 under 3 minutes)"


def main(specs: list[str]) -> None:
    print(f"# {time.strftime('%Y-%m-%d')} {platform.machine()}, python {platform.python_version()}")
    sizes = parse_sizes("32B..512MiB")
    for spec in specs:
        t0 = time.perf_counter()
        topo = parse(spec)
        cmp = compare(topo, "allreduce", sizes, SWING_SST)
        wall = time.perf_counter() - t0
        print(f"{spec}: {len(cmp.entries)} algorithm variants x {len(sizes)} sizes in {wall:.1f} s")


if __name__ == "__main__":
    ap = benchcli.parser(__doc__, ESTIMATE)
    ap.add_argument("specs", nargs="*", default=["torus:64x64", "torus:128x128"], help="networks to compare")
    args = ap.parse_args()
    benchcli.begin(args, ESTIMATE, "bench_compare")
    main(args.specs)
