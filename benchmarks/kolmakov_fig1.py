"""Regenerate Kolmakov & Zhang's Fig. 1: the time estimate of the generalized allreduce (eq. 25, 36, 44, with r
chosen per size) divided by the best of ring, recursive halving and recursive doubling (each with its standard
non-power-of-two handling), for the network parameters of their Table 2 (preset kolmakov-cluster).

Run: python3 benchmarks/kolmakov_fig1.py [--out docs/img/kolmakov_fig1.png]
"""

from __future__ import annotations

import argparse

import numpy as np

from directcoll.catalog.presets import get_preset
from directcoll.cost.kolmakov import fig1_ratio
from directcoll.units import format_size


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="docs/img/kolmakov_fig1.png")
    ap.add_argument("--processes", type=int, nargs="*", default=[5, 23, 127, 1000])
    args = ap.parse_args()
    preset = get_preset("kolmakov-cluster")
    a, b, g = preset.alpha, preset.beta, preset.gamma
    sizes = np.logspace(0, 9, 181)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.2), constrained_layout=True)
    print(f"alpha={a} beta={b} gamma={g} ({preset.source})")
    print("| P | smallest ratio (size) | largest ratio | ratio at 425 B | eq. 37 vs exact r, worst |")
    print("|---|---|---|---|---|")
    for i, p in enumerate(args.processes):
        ratio, _ = fig1_ratio(p, sizes, a, b, g, "exact")
        ratio37, _ = fig1_ratio(p, sizes, a, b, g, "eq37")
        colour = f"C{i}"
        ax.plot(sizes, ratio, color=colour, lw=1.6, label=f"P = {p}")
        ax.plot(sizes, ratio37, color=colour, lw=1, ls="--")
        j = int(np.argmin(ratio))
        at425 = fig1_ratio(p, [425], a, b, g)[0][0]
        print(f"| {p} | {ratio[j]:.3f} ({format_size(sizes[j])}) | {ratio.max():.4f} | {at425:.3f} | "
              f"{(ratio37 / ratio).max():.3f} |")
    ax.axhline(1, color="0.4", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("vector size m (bytes)")
    ax.set_ylabel("tau_generalized / min(tau_RD, tau_RH, tau_ring)")
    ax.set_title("Generalized allreduce vs best of recursive doubling, recursive halving, ring\n"
                 "(alpha-beta-gamma estimates, Kolmakov & Zhang Table 2; solid: best r, dashed: r from eq. 37)",
                 fontsize=9)
    ax.set_ylim(0.4, 1.05)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, frameon=False, loc="lower left")
    fig.savefig(args.out, dpi=150)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
