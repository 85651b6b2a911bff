"""BFB schedule generation time (Zhao et al. Sec. 8.5 reports 52.7 s for hypercube:10 and 61.1 s for torus:50x50).

Builds the BFB allgather (and, with --all, reduce-scatter) of each topology, times it (best of --repeat), and
prints steps, distinct LPs solved, pieces, the common denominator and T_B against the BW-optimal (N-1)/N.

Run: python3 benchmarks/bench_bfb.py [SPEC ...] [--repeat 3] [--verify]
"""

from __future__ import annotations

import time

import benchcli

from directcoll.cost.analytic import analyze
from directcoll.synthesis.bfb import bfb_allgather
from directcoll.topology.spec import parse
from directcoll.verify import verify

ESTIMATE = "a few minutes (five BFB allgathers up to 4,096 nodes, --repeat 3 each; longer with --verify)"

DEFAULT = ["hypercube:10", "torus:50x50", "torus:8x8x8", "genkautz:4:1024", "torus:64x64"]


def main() -> None:
    ap = benchcli.parser(__doc__, ESTIMATE)
    ap.add_argument("specs", nargs="*", default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--verify", action="store_true", help="also run the exact verifier (slow at 4096 nodes)")
    args = ap.parse_args()
    benchcli.begin(args, ESTIMATE, "bench_bfb")
    print("| topology | N | steps | distinct LPs | pieces | denominator | T_B (M/B) | (N-1)/N | build s |"
          + (" verified |" if args.verify else ""))
    print("|---|---|---|---|---|---|---|---|---|" + ("---|" if args.verify else ""))
    for spec in args.specs:
        topo = parse(spec)
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            schedule = bfb_allgather(topo)
            best = min(best, time.perf_counter() - t0)
        n = topo.num_compute
        t_b = analyze(schedule, topo).t_b_m_over_b
        row = (f"| {spec} | {n} | {schedule.num_steps} | {schedule.meta['bfb_lps']} | {schedule.num_pieces:,} | "
               f"{schedule.denominator} | {t_b:.4f} | {(n - 1) / n:.4f} | {best:.2f} |")
        if args.verify:
            row += f" {verify(schedule).ok} |"
        print(row, flush=True)


if __name__ == "__main__":
    main()
