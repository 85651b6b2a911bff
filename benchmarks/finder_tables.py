"""The topology finder's Pareto frontiers at d = 4 for N = 32 .. 1024 (Zhao et al. Table 7; N = 1024 is Table 4),
as Markdown rows: topology, T_L, T_B, diameter-free allreduce time 2(α T_L + T_B M/B) at α = 10 µs,
M = 1 MiB, B = 100 Gb/s (the paper's setting), and the search time.

Run: python3 benchmarks/finder_tables.py [--nodes 32,64,128,256,512,1024] [--degree 4]
"""

from __future__ import annotations

import time

import benchcli

from directcoll.synthesis.finder import find_topology, theoretical_bound

ESTIMATE = "a few minutes (the finder at N up to 1,024)"

M_OVER_B = 2**20 * 8 / 100e9


def main() -> None:
    ap = benchcli.parser(__doc__, ESTIMATE)
    ap.add_argument("--nodes", default="32,64,128,256,512,1024")
    ap.add_argument("--degree", type=int, default=4)
    args = ap.parse_args()
    benchcli.begin(args, ESTIMATE, "finder_tables")
    for n in (int(x) for x in args.nodes.split(",")):
        t0 = time.perf_counter()
        result = find_topology(n, args.degree, alpha=10e-6, m_over_b=[M_OVER_B])
        took = time.perf_counter() - t0
        print(f"\nN = {n}, d = {args.degree} ({result.bases} bases, {result.candidates} candidates, {took:.1f} s)\n")
        print("| topology | T_L | T_B (M/B) | 2(T_L + T_B) |")
        print("|---|---|---|---|")
        for c in result.frontier:
            best = " (best)" if c is result.best else ""
            print(f"| `{c.spec}`{best} | {c.t_l_steps}α | {c.t_b_m_over_b:.4f} | {result.times[c.spec] * 1e6:.1f} µs |")
        t_l, t_b = theoretical_bound(n, args.degree)
        print(f"| theoretical bound | {t_l}α | {t_b:.4f} | {2 * (t_l * 10e-6 + t_b * M_OVER_B) * 1e6:.1f} µs |")


if __name__ == "__main__":
    main()
