"""Regenerate the comparison summary of docs/compare.md: for each topology of the Swing paper's Sec. 5, the
sizes where Swing wins, its largest gain, and the figures the paper quotes.

Run: python3 benchmarks/paper_findings.py [--alpha A ...] [--plots DIR]
"""

from __future__ import annotations

import argparse

import numpy as np

from directcoll.reports.compare import compare
from directcoll.reports.contenders import DEFAULT_CONTENDERS
from directcoll.reports.plot import plot_comparison
from directcoll.simulate import SWING_SST
from directcoll.topology import parse
from directcoll.units import format_size, parse_sizes

TOPOLOGIES = ["torus:8x8", "torus:64x64", "torus:128x128", "torus:64x16", "torus:256x4", "torus:8x8x8",
              "torus:8x8x8x8", "hyperx:64x64", "hammingmesh:2x2:8x8", "hammingmesh:4x4:4x4"]


def summarize(spec: str, alpha: float, plots: str | None) -> str:
    params = SWING_SST.with_(alpha=alpha)
    sizes = parse_sizes("32B..512MiB")
    cmp = compare(parse(spec), "allreduce", sizes, params, contenders=DEFAULT_CONTENDERS)  # the paper's families
    winners = [w[0] for w in cmp.winners()]
    wins = [s for s, w in zip(sizes, winners, strict=True) if w == "swing"]
    gain = cmp.gain()
    fams = cmp.families()
    swing_b = next(e for e in cmp.entries if e.family == "swing" and e.variant == "bandwidth")
    peak = swing_b.times[-1] and sizes[-1] / swing_b.times[-1] / cmp.peak_goodput
    j2 = list(sizes).index(2 << 20)
    vs_rd = fams["recursive-doubling"][0][j2] / fams["swing"][0][j2]
    others = sorted({w for w in winners if w != "swing"})
    if plots:
        plot_comparison(cmp, f"{plots}/compare_{spec.replace(':', '_')}.png")
    span = f"{format_size(min(wins))}..{format_size(max(wins))}" if wins else "never"
    return (f"| {spec} | {span} ({len(wins)}/{len(sizes)}) | {', '.join(others) or '-'} | "
            f"{np.max(gain) * 100:+.0f}% at {format_size(sizes[int(np.argmax(gain))])} | "
            f"{gain[-1] * 100:+.0f}% | {peak * 100:.1f}% | {vs_rd:.2f}x |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--alpha", type=float, nargs="*", default=[0.0], help="per-message overheads to sweep (s)")
    ap.add_argument("--plots", help="also write every comparison figure into this folder")
    ap.add_argument("--topologies", nargs="*", default=TOPOLOGIES)
    args = ap.parse_args()
    for alpha in args.alpha:
        print(f"\nswing-sst parameters, alpha = {alpha * 1e6:g} us\n")
        print("| topology | Swing best at | other winners | largest Swing gain | gain at 512MiB | Swing-B at "
              "512MiB, % of peak | Swing / rec.doub. at 2MiB |")
        print("|---|---|---|---|---|---|---|")
        for spec in args.topologies:
            print(summarize(spec, alpha, args.plots))


if __name__ == "__main__":
    main()
