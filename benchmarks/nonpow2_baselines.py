"""The non-power-of-two baselines of the Swing paper: the tables of docs/algorithms.md.

Table 1: Swing's Fig. 3 construction (``swing --variant bandwidth``) against the Swing authors' library
construction (``--variant libswing``: Eq. 2's peers modulo d, ceil(log2 d) steps per dimension): steps, the most
bytes one rank sends (fraction of the vector), Psi, Xi, pieces, and whether the exact verifier accepts it.

Table 2: Rabenseifner's allreduce with the standard fold (``rabenseifner``) against 3-2 elimination
(``rabenseifner-elimination``, flattened ranks) and the closed form of
:func:`directcoll.cost.analytic.elimination_allreduce_cost`: steps, beta and gamma coefficients (fractions of the
vector on the critical path), bytes per rank, Xi.

Run: python3 benchmarks/nonpow2_baselines.py [SPEC ...]
"""

from __future__ import annotations

import benchcli

from directcoll.cost.analytic import analyze, elimination_allreduce_cost
from directcoll.errors import UnsupportedShapeError
from directcoll.registry import build
from directcoll.topology.spec import parse
from directcoll.verify import verify

#: measured 2026-11-26: about 4 s at load 11 on the shared 2-core VM
ESTIMATE = "about 5 s"
SHAPES = ["ring:6", "ring:7", "ring:12", "torus:4x4", "torus:6x6", "torus:10x6", "torus:5x6", "torus:3x5",
          "torus:7x4", "torus:3x3x3"]


def _row(spec: str, name: str, variant: str | None) -> str:
    topo = parse(spec)
    try:
        s = build(name, topo, "allreduce", variant=variant)
    except UnsupportedShapeError as exc:
        return f"| {spec} | {variant or name} | refused ({type(exc).__name__}) | | | | | | | |"
    r = analyze(s, topo)
    ok = "yes" if verify(s).ok else "NO"
    return (f"| {spec} | {variant or name} | {r.steps} | {r.bytes_per_rank:.4f} | {float(r.port_time.sum()):.4f} | "
            f"{float(r.reduce_time.sum()):.4f} | {r.bandwidth_deficiency:.3f} | {r.congestion_deficiency:.3f} | "
            f"{s.num_pieces:,} | {ok} |")


def main() -> None:
    ap = benchcli.parser(__doc__, ESTIMATE)
    ap.add_argument("specs", nargs="*", default=SHAPES, help="topology specs (default: the docs' shapes)")
    args = ap.parse_args()
    benchcli.begin(args, ESTIMATE, "nonpow2_baselines")
    head = ("| topology | construction | steps | bytes/rank | β coeff. | γ coeff. | Ψ | Ξ | pieces | verified |\n"
            "|---|---|---|---|---|---|---|---|---|---|")
    print("Table 1: Swing allreduce, Fig. 3 (bandwidth) vs the authors' library (libswing)\n")
    print(head)
    for spec in args.specs:
        for variant in ("bandwidth", "libswing"):
            print(_row(spec, "swing", variant))
    print("\nTable 2: Rabenseifner allreduce, fold (rabenseifner) vs 3-2 elimination, with the closed form\n")
    print(head.replace("| verified |", "| verified | model (steps, β, γ) |") + "---|")
    for spec in args.specs:
        n = parse(spec).num_compute
        print(_row(spec, "rabenseifner", None) + " |")
        steps, beta, gamma = elimination_allreduce_cost(n)
        print(_row(spec, "rabenseifner-elimination", None) + f" ({steps}, {beta:.4f}, {gamma:.4f}) |")


if __name__ == "__main__":
    main()
