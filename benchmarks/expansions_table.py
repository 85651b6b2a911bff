"""Measured vs predicted T_L and T_B of expanded schedules (docs/expansions.md).

For every spec: build the schedule with ``expanded_schedule`` (allgather and allreduce), verify it exactly,
measure T_L (steps) and T_B (``analyze(...).t_b_m_over_b``, units of M/B) and compare with ``predict`` (the
theorems applied to the measured BFB costs of the bases). The second table rebuilds rows of Zhao et al.'s
Table 4 and Table 7 (N up to 1024, d = 4) next to the paper's values.

    python3 benchmarks/expansions_table.py            # both tables, as markdown (about a minute)
    python3 benchmarks/expansions_table.py --quick    # the first table only
"""

from __future__ import annotations

import time

import benchcli

from directcoll.cost.analytic import analyze
from directcoll.synthesis.expansion_predictions import predict
from directcoll.synthesis.expansions import expanded_schedule
from directcoll.topology import operators as tex
from directcoll.topology import parse
from directcoll.verify import verify

ESTIMATE = "about 20 s (--quick: a few seconds)"

SMALL = [
    "line(complete:4)", "line^2(complete:4)", "line(bipartite:3)", "line(hamming:2:3)", "line(kautz:2:2)",
    "line^2(circulant:16:3,4)",
    "degree(ring:4:uni,2)", "degree(complete:4,2)", "degree(bipartite:3,3)", "degree(kautz:2:2,2)",
    "power(ring:4:uni,2)", "power(complete:3,3)", "power(bipartite:2,2)", "power(kautz:2:2,2)",
    "product(ring:4:uni,complete:3)", "bidir(ring:5:uni)", "bidir(circulant:7:1,2:uni)",
    "line(degree(ring:3:uni,2))", "power(line(complete:3),2)", "line(bidir(ring:4:uni))",
]

#: (spec, the paper's name, paper T_L, paper T_B) from Table 4 (N = 1024) and Table 7 (N = 32..512), d = 4
PAPER = [
    ("line(bipartite:4)", "L(K_{4,4})", 3, 1.000),
    ("line^2(bipartite:4)", "L^2(K_{4,4})", 4, 1.031),
    ("product(ring:8,ring:4:uni,ring:4:uni)", "BiRing(2,8) □ UniRing(1,4)^□2", 10, 0.992),
    ("line^3(bipartite:4)", "L^3(K_{4,4})", 5, 1.039),
    ("line^3(circulant:16:3,4)", "L^3(C(16,{3,4}))", 6, 1.020),
    ("power(product(ring:4:uni,ring:8:uni),2)", "(UniRing(1,4) □ UniRing(1,8))^□2", 20, 0.999),
]


def measure(spec: str, collective: str) -> tuple[int, float, bool, float]:
    topo = parse(spec)
    start = time.perf_counter()
    schedule = expanded_schedule(spec, collective)
    seconds = time.perf_counter() - start
    return schedule.num_steps, analyze(schedule, topo).t_b_m_over_b, verify(schedule).ok, seconds


def _same(a, b) -> str:
    return "=" if b is not None and abs(a - b) <= 1e-9 * max(1.0, abs(b)) else "≠"


def small_table() -> list[str]:
    rows = ["| spec | N | d | AG T_L meas. / pred. | AG T_B meas. / pred. | AR T_L meas. / pred. "
            "| AR T_B meas. / pred. | verified |",
            "|---|---|---|---|---|---|---|---|"]
    for spec in SMALL:
        topo = parse(spec)
        cells = [f"`{spec}`", str(topo.num_compute), str(tex.regular_degree(topo))]
        ok_all = True
        for coll in ("allgather", "allreduce"):
            t_l, t_b, ok, _ = measure(spec, coll)
            p = predict(spec, coll)
            ok_all &= ok
            cells += [f"{t_l} {_same(t_l, p.t_l)} {p.t_l}", f"{t_b:.6f} {_same(t_b, float(p.t_b))} {float(p.t_b):.6f}"]
        cells.append("yes" if ok_all else "NO")
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def paper_table() -> list[str]:
    rows = ["| spec | paper's name | N | paper T_L / T_B | predicted T_L / T_B | measured T_L / T_B (verified) |",
            "|---|---|---|---|---|---|"]
    for spec, name, t_l, t_b in PAPER:
        p = predict(spec)
        m_l, m_b, ok, _ = measure(spec, "allgather")
        rows.append(f"| `{spec}` | {name} | {p.nodes} | {t_l} / {t_b:.3f} | {p.t_l} / {float(p.t_b):.3f} "
                    f"| {m_l} / {m_b:.3f} ({'yes' if ok else 'NO'}) |")
    return rows


def main() -> None:
    ap = benchcli.parser(__doc__, ESTIMATE)
    ap.add_argument("--quick", action="store_true", help="only the table of small expansions")
    args = ap.parse_args()
    benchcli.begin(args, ESTIMATE, "expansions_table")
    print("\n".join(small_table()))
    if not args.quick:
        print()
        print("\n".join(paper_table()))


if __name__ == "__main__":
    main()
