"""Where the group T_P and the placement h of Kolmakov & Zhang's generalized allreduce change steps, bytes or
congestion on a torus (docs/generalized.md, "Groups and placement").

For every torus, group (cyclic factors of P) and placement (identity, aligned) it builds the schedule for every
r, verifies it exactly, and prints one markdown row: steps (2 ceil(log2 P) - r, the same for every group), units u
= m/P sent per rank for r = 0 .. ceil(log2 P), and for r = 0 and r = ceil(log2 P) the congestion deficiency Ξ
(Swing Sec. 4) and the congestion-aware bandwidth time T_B in units of m / b (directcoll.cost.analyze, shortest
paths of the torus). A group without a fold order, or an aligned placement the group does not allow, is one row
saying so.

Run: python3 benchmarks/generalized_groups.py [--tori torus:4x3,torus:3x4,torus:4x4]
"""

from __future__ import annotations

import math
import sys
import time

import benchcli

from directcoll.algorithms.generalized import num_steps
from directcoll.cost.analytic import analyze
from directcoll.errors import UnsupportedShapeError
from directcoll.registry import build
from directcoll.topology import parse
from directcoll.verify import verify

#: measured 2026-11-26: 6 s at load 14 on the shared 2-core VM
ESTIMATE = "about 10 s"
GROUPS = {12: ("12", "4x3", "3x4", "2x6", "2x2x3"), 16: ("16", "4x4", "2x8", "2x2x4", "2x2x2x2")}


def row(spec: str, group: str, placement: str) -> str:
    topo = parse(spec)
    p = topo.num_compute
    top = num_steps(p)
    units, cong = [], {}
    try:
        for r in range(top + 1):
            s = build("generalized", topo, r=r, group=group, placement=placement)
            result = verify(s)
            if not result.ok:
                raise SystemExit(f"FAILED {spec} {group} {placement} r={r}: {result.summary()}")
            assert s.num_steps == 2 * top - r
            rep = analyze(s, topo)
            units.append(rep.bytes_per_rank * p)
            if r in (0, top):
                cong[r] = (rep.congestion_deficiency, rep.t_b_m_over_b)
    except UnsupportedShapeError as exc:
        why = str(exc).removeprefix("generalized: ").split(";")[0].split(" maps grid")[0]
        if "not isomorphic" in str(exc):
            why = f"refused: group {group} is not isomorphic to the torus' group"
        return f"| {spec} | {group} | {placement} | {why} | | | | |"
    u = " / ".join(f"{x:g}" for x in units)
    (x0, t0), (x1, t1) = cong[0], cong[top]
    return f"| {spec} | {group} | {placement} | {u} | {x0:.3f} | {t0:.3f} | {x1:.3f} | {t1:.3f} |"


def main() -> None:
    ap = benchcli.parser(__doc__, ESTIMATE)
    ap.add_argument("--tori", default="torus:4x3,torus:3x4,torus:4x4", help="comma list of torus specs")
    args = ap.parse_args()
    benchcli.begin(args, ESTIMATE, "generalized_groups")
    t0 = time.perf_counter()
    print("| torus | group | placement | u sent per rank, r = 0 .. L | Ξ, r = 0 | T_B (m/b), r = 0 | Ξ, r = L "
          "| T_B (m/b), r = L |")
    print("|---|---|---|---|---|---|---|---|")
    for spec in args.tori.split(","):
        p = math.prod(parse(spec).shape)
        for group in GROUPS.get(p, (str(p),)):
            for placement in ("identity", "aligned"):
                print(row(spec, group, placement), flush=True)
        print(f"{spec}: done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
