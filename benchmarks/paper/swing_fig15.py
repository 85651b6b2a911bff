"""Swing Fig. 15: the distribution of Swing's goodput gain over the best other algorithm, across the allreduce
sizes 32 B..512 MiB, in every scenario of Sec. 5 (square tori, rectangular tori, link bandwidths, dimensions,
torus-like topologies); the claims of Sec. 5.5 and the abstract's.

Run: python3 benchmarks/paper/swing_fig15.py           (about 1.5 min on 2 busy cores, mostly the two 1,024-node
                                                        HammingMeshes)
     python3 benchmarks/paper/swing_fig15.py --full    (the paper's 4,096-node HammingMeshes: over 20 min)

Model: the step model with the swing-sst parameters as ``directcoll compare`` uses them (see swing_fig6.py); the
scenarios are those of swing_fig7.py (square), swing_fig10.py (rectangular), swing_fig8.py (bandwidth),
swing_fig11.py (dimensions; no ring in 3D and 4D) and swing_fig12_14.py (HammingMesh at 1,024 nodes by default,
see its notes; HyperX 64x64), all at sizes up to 512 MiB as the paper's Fig. 15. No packet simulation here: the
figure scripts carry the packet engine's verdicts.
"""

from __future__ import annotations

import numpy as np
from common import Claim, begin, image_path, parser, write_claims
from swing_fig6 import (
    NAMES,
    TIE,
    fs,
    max_gain,
    median_gain,
    pct,
    plt_setup,
    ratio,
    sweep,
    swing_best_until,
    swing_loses_at,
    within_factor,
)

from directcoll.simulate import SWING_SST

ESTIMATE = "about 86 s (its last run on the 2-core machine, benchmarks/paper/results/timings.json)"

MIB = 2**20
GBPS = [100, 200, 400, 800, 1600, 3200]


def bw(gbps: int) -> str:
    return f"{gbps / 1000:g} Tb/s" if gbps >= 1000 else f"{gbps} Gb/s"


def scenarios(full: bool) -> dict[str, list[tuple[str, str, dict]]]:
    """group -> [(label, spec, sweep options)]"""
    hx2, hx4 = ("hammingmesh:2x2:32x32", "hammingmesh:4x4:16x16") if full else ("hammingmesh:2x2:16x16",
                                                                                 "hammingmesh:4x4:8x8")
    return {
        "square torus": [(s, f"torus:{s}", {}) for s in ("8x8", "16x16", "32x32", "64x64", "128x128")],
        "rectangular torus": [(s, f"torus:{s}", {}) for s in ("64x16", "128x8", "256x4")],
        "bandwidth (8x8)": [(bw(g), "torus:8x8", {"params": SWING_SST.with_(link_bandwidth=g * 1e9 / 8)})
                            for g in GBPS],
        "dimensions": [("8x8", "torus:8x8", {}), ("8x8x8", "torus:8x8x8", {"drop": ("ring",)}),
                       ("8x8x8x8", "torus:8x8x8x8", {"drop": ("ring",)})],
        "torus-like": [(f"Hx2Mesh {hx2.split(':', 1)[1]}", hx2, {}), (f"Hx4Mesh {hx4.split(':', 1)[1]}", hx4, {}),
                       ("HyperX 64x64", "hyperx:64x64", {})],
    }


def figure(results) -> None:
    plt = plt_setup()
    fig, ax = plt.subplots(figsize=(7.5, 8.2), constrained_layout=True)
    y, ticks, labels, bands = 0.0, [], [], []
    for group, items in results.items():
        start = y
        for label, sw in items:
            g = sw.gain[sw.sizes <= 512 * MIB] * 100
            ax.boxplot(g, positions=[y], orientation="horizontal", widths=0.6, whis=1.5, showmeans=False,
                       patch_artist=True,
                       boxprops={"facecolor": "#f4c7c3", "edgecolor": "#d62728"},
                       medianprops={"color": "none"}, whiskerprops={"color": "#d62728"},
                       capprops={"color": "#d62728"},
                       flierprops={"marker": "o", "mfc": "none", "mec": "0.4", "ms": 4})
            ax.plot(np.median(g), y, marker="^", color="#d62728", ms=6)
            ticks.append(y)
            labels.append(label)
            y -= 1
        bands.append((group, start, y + 1))
        y -= 0.8
    for i, (group, top, bottom) in enumerate(bands):
        if i % 2 == 0:
            ax.axhspan(bottom - 0.5, top + 0.5, color="0.95", zorder=0)
        ax.text(1.01, (top + bottom) / 2, group, transform=ax.get_yaxis_transform(), rotation=270, va="center",
                ha="left", fontsize=8, color="0.3")
    ax.axvline(0, color="0.3", lw=0.8)
    ax.set_yticks(ticks)
    ax.set_yticklabels(labels)
    ax.set_ylim(y + 0.3, 0.8)
    ax.set_xlabel("Swing goodput gain over the best other algorithm (%), across sizes 32 B..512 MiB")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_title("Swing's gain in every scenario of Sec. 5 (step model, swing-sst parameters);\n"
                 "box: quartiles, triangle: median, whiskers: 1.5 IQR, circles: outliers", fontsize=9)
    fig.savefig(image_path("swing_fig15"), dpi=150)
    plt.close(fig)


def main() -> None:
    ap = parser(__doc__, ESTIMATE)
    ap.add_argument("--full", action="store_true", help="the paper's 4,096-node HammingMeshes (over 20 min)")
    args = ap.parse_args()
    begin(args, ESTIMATE, "swing_fig15")
    cache: dict[tuple, object] = {}

    def get(spec: str, opts: dict):
        key = (spec, opts.get("params", SWING_SST).link_bandwidth, opts.get("drop", ()))
        if key not in cache:
            cache[key] = sweep(spec, **opts)
        return cache[key]

    results = {group: [(label, get(spec, opts)) for label, spec, opts in items]
               for group, items in scenarios(args.full).items()}
    figure(results)
    seconds = sum(sw.seconds for sw in cache.values())

    def col(group: str, f) -> list:
        return [f(sw) for _, sw in results[group]]

    def each(group: str, values) -> str:
        return ", ".join(f"{label}: {v}" for (label, _), v in zip(results[group], values, strict=True))

    def rises(values, tie=0.02) -> bool:
        return all(b > a - tie for a, b in zip(values, values[1:], strict=False)) and values[-1] > values[0] + tie

    def first_loss(sw) -> float | None:
        lose = swing_loses_at(sw)
        return lose[0] if lose else None

    sq_med, sq_max = col("square torus", median_gain), col("square torus", lambda s: max_gain(s)[0])
    sq_min = col("square torus", lambda s: float(s.gain.min()))
    sq_loss = col("square torus", first_loss)
    re_med, re_max = col("rectangular torus", median_gain), col("rectangular torus", lambda s: max_gain(s)[0])
    r256 = results["rectangular torus"][2][1]
    bw_max, bw_med = col("bandwidth (8x8)", lambda s: max_gain(s)[0]), col("bandwidth (8x8)", median_gain)
    top = results["bandwidth (8x8)"][-1][1]
    di_med, di_max = col("dimensions", median_gain), col("dimensions", lambda s: max_gain(s)[0])
    di_best = col("dimensions", swing_best_until)
    like = dict(results["torus-like"])
    hx2, hx4, hyperx = like[next(k for k in like if k.startswith("Hx2"))], \
        like[next(k for k in like if k.startswith("Hx4"))], like["HyperX 64x64"]
    torus_n = "torus:64x64" if args.full else "torus:32x32"
    same = get(torus_n, {})
    everything = [(group, label, sw) for group, items in results.items() for label, sw in items]
    medians = [median_gain(sw) for _, _, sw in everything]
    best_max = max(((max_gain(sw), label) for _, label, sw in everything), key=lambda t: t[0][0])
    distinct: dict[int, tuple[str, object]] = {}  # one entry per sweep: 8x8 at 400 Gb/s appears in three groups
    for group, label, sw in everything:
        distinct.setdefault(id(sw), (f"8x8 at {label}" if group.startswith("bandwidth") else label, sw))
    upto128 = [(label, sw) for label, sw in distinct.values()
               if any(sw.gain[j] < -TIE for j in range(len(sw.sizes)) if sw.sizes[j] <= 128 * MIB)]
    claims = [
        Claim("square tori: Swing's median and maximum gain increase with the network size, 8x8 → 128x128 (ties "
              "within 2 points; the last above the first)", "increase (Sec. 5.5)",
              "median " + each("square torus", [pct(m) for m in sq_med]) + "; max "
              + each("square torus", [pct(m) for m in sq_max]), rises(sq_med) and rises(sq_max)),
        Claim("square tori: the largest negative gain grows with the network size", "grows",
              each("square torus", [pct(m) for m in sq_min]), rises([-m for m in sq_min], tie=0.005)),
        Claim("square tori: ... but is at most about 20 % (within 5 points)", "≈ −20 % at most",
              f"lowest {pct(min(sq_min))}", min(sq_min) >= -0.25),
        Claim("square tori: ... and only for large vectors, ≥ 128 MiB (holds: Swing's first loss at ≥ 64 MiB, "
              "within 2x)", "≥ 128 MiB", "first loss at " + each("square torus", [fs(s) for s in sq_loss]),
              all(s is None or s >= 64 * MIB for s in sq_loss)),
        Claim("rectangular tori: median and maximum gain increase with d_max / d_min, 64x16 → 256x4 (ties within 2 "
              "points)", "increase",
              "median " + each("rectangular torus", [pct(m) for m in re_med]) + "; max "
              + each("rectangular torus", [pct(m) for m in re_max]), rises(re_med) and rises(re_max)),
        Claim("rectangular tori: up to 3x on 128x8 (goodput ratio within 20 %)", "3x", ratio(re_max[1]),
              within_factor(1 + re_max[1], 3.0)),
        Claim("256x4: Swing about 60 % worse than the ring at 512 MiB (gain −60 %, the paper's metric, within 10 "
              "points)", "≈ −60 %",
              f"{pct(r256.gain[-1])} vs {NAMES[r256.best_other[-1]]} (the ring {1 / (1 + r256.gain[-1]):.2f}x "
              "faster)", abs(r256.gain[-1] + 0.6) <= 0.1),
        Claim("bandwidth: the maximum gain decreases as the bandwidth grows", "decreases",
              each("bandwidth (8x8)", [pct(m) for m in bw_max]),
              all(b <= a + 0.02 for a, b in zip(bw_max, bw_max[1:], strict=False)) and bw_max[-1] < bw_max[0] - 0.02),
        Claim("bandwidth: at higher bandwidths Swing outperforms all other algorithms at any size (3.2 Tb/s; ties "
              "within 0.5 %)", "every size",
              f"3.2 Tb/s: best up to {fs(swing_best_until(top))}, beaten from "
              f"{fs(swing_loses_at(top)[0]) if swing_loses_at(top) else 'nowhere'}", not swing_loses_at(top)),
        Claim("bandwidth: the median gain stands around 25 % regardless of the bandwidth (within 10 points each)",
              "≈ 25 %", each("bandwidth (8x8)", [pct(m) for m in bw_med]),
              all(abs(m - 0.25) <= 0.10 for m in bw_med)),
        Claim("dimensions: the gain increases with the number of dimensions, 8x8 → 8x8x8x8 (median and maximum)",
              "increases", "median " + each("dimensions", [pct(m) for m in di_med]) + "; max "
              + each("dimensions", [pct(m) for m in di_max]), rises(di_med) and rises(di_max)),
        Claim("dimensions: the maximum gain reaches 2x (8x8x8x8; goodput ratio within 20 %)", "2x",
              ratio(di_max[-1]), within_factor(1 + di_max[-1], 2.0)),
        Claim("dimensions: on 3D and 4D tori Swing outperforms all other algorithms at any size (ties within 0.5 %)",
              "every size", "best up to " + ", ".join(
                  f"{label}: {fs(b)}" for (label, _), b in list(zip(results["dimensions"], di_best,
                                                                      strict=True))[1:]),
              all(b == 512 * MIB for b in di_best[1:])),
        Claim(f"HammingMesh has higher gains than a torus of as many nodes ({torus_n.split(':')[1]}; median and "
              "maximum, both HammingMeshes)", "higher",
              f"median {pct(median_gain(hx2))}, {pct(median_gain(hx4))} vs {pct(median_gain(same))}; max "
              f"{pct(max_gain(hx2)[0])}, {pct(max_gain(hx4)[0])} vs {pct(max_gain(same)[0])}",
              min(median_gain(hx2), median_gain(hx4)) > median_gain(same)
              and min(max_gain(hx2)[0], max_gain(hx4)[0]) > max_gain(same)[0]),
        Claim("on Hx2Mesh and HyperX Swing outperforms the other algorithms regardless of the size (ties within "
              "0.5 %)", "every size",
              f"Hx2Mesh beaten at {len(swing_loses_at(hx2))} of {len(hx2.sizes)} sizes, HyperX at "
              f"{len(swing_loses_at(hyperx))}", not swing_loses_at(hx2) and not swing_loses_at(hyperx)),
        Claim("overall, the median gain ranges between 20 % and 50 % (holds: every scenario's median within 5 points "
              "of that range)", "20 % – 50 %", f"{pct(min(medians))} – {pct(max(medians))}",
              all(0.15 <= m <= 0.55 for m in medians)),
        Claim("overall, the maximum gain is 3x (goodput ratio within 20 %)", "3x",
              f"{ratio(best_max[0][0])} ({best_max[1]}, {fs(best_max[0][1])})",
              within_factor(1 + best_max[0][0], 3.0)),
        Claim("Swing outperforms the existing algorithms from 32 B to 128 MiB on every torus and torus-like "
              "topology, regardless of shape and size (abstract, Sec. 1; ties within 0.5 %)", "every scenario",
              f"{len(distinct) - len(upto128)} of {len(distinct)} distinct scenarios; beaten somewhere ≤ 128 MiB on "
              + ", ".join(label for label, _ in upto128), not upto128),
    ]
    table = ["| group | scenario | median gain | max gain | lowest gain | Swing best (ties within 0.5 %) |",
             "|---|---|---|---|---|---|"]
    for group, label, sw in everything:
        g, s, _ = max_gain(sw)
        lose = swing_loses_at(sw)
        table.append(f"| {group} | {label} | {pct(median_gain(sw))} | {pct(g)} at {fs(s)} | {pct(sw.gain.min())} | "
                     + ("every size" if not lose else f"beaten at {len(lose)} of {len(sw.sizes)} sizes, from "
                        f"{fs(lose[0])}") + " |")
    method = (f"`python3 benchmarks/paper/swing_fig15.py{' --full' if args.full else ''}`: Swing's gain over the "
              "best other of the paper's families at each size 32 B..512 MiB, from `compare(..., SWING_SST)` with "
              "the step model in each scenario of Figs. 7, 8, 10, 11 and 12-14 (swing-sst parameters as they are; "
              f"only the link bandwidth changed in the bandwidth group); {seconds:.0f} s.")
    notes = (("HammingMeshes at 1,024 nodes, not the paper's 4,096 (swing_fig12_14.py's notes say why); `--full` "
              "runs the paper's size. " if not args.full else "")
             + "Every scenario:\n\n" + "\n".join(table))
    write_claims("swing_fig15", "Swing Fig. 15: Swing's gain in every scenario (summary)", claims, method=method,
                 notes=notes)


if __name__ == "__main__":
    main()
