"""Swing Fig. 7: Swing's goodput gain over the best-known algorithm on square 2D tori from 64 to 16,384 nodes
(8x8, 16x16, 32x32, 64x64, 128x128); the packet engine's verdict on the 8x8 torus.

Run: python3 benchmarks/paper/swing_fig7.py        (about 10 s on 2 busy cores, up to 1 min under heavy load: the
                                                    five step-model sweeps and the packet verdict on torus:8x8)

Model: the step model with the swing-sst parameters as ``directcoll compare`` uses them (see swing_fig6.py).
"""

from __future__ import annotations

import numpy as np
from common import Claim, begin, image_path, parser, write_claims
from swing_fig6 import (
    TIE,
    fs,
    max_gain,
    overtaken_from,
    packet_verdict,
    pct,
    peak_fraction,
    plt_setup,
    ratio,
    size_axis,
    sweep,
    swing_best_until,
    verdict_table,
    within_factor,
)

ESTIMATE = "about 10 s (its last run on the 2-core machine, benchmarks/paper/results/timings.json)"

TORI = ["torus:8x8", "torus:16x16", "torus:32x32", "torus:64x64", "torus:128x128"]
MIB = 2**20


def label(spec: str) -> str:
    a, b = spec.split(":")[1].split("x")
    return f"{a}x{b} ({int(a) * int(b):,} nodes)"


def figure(sweeps) -> None:
    plt = plt_setup()
    fig, ax = plt.subplots(figsize=(7.5, 4.2), constrained_layout=True)
    colours = plt.cm.viridis(np.linspace(0.0, 0.85, len(sweeps)))
    for sw, colour, marker in zip(sweeps, colours, "osD^v", strict=True):
        ax.plot(sw.sizes, sw.gain * 100, marker=marker, ms=3.5, lw=1.5, color=colour, label=label(sw.spec))
    ax.axhline(0, color="0.3", lw=0.8)
    ax.set_ylabel("Swing goodput gain over the\nbest other algorithm (%)")
    ax.set_xlabel("allreduce size")
    size_axis(ax, sweeps[0].sizes, 2)
    ax.grid(True, alpha=0.3)
    ax.legend(title="square torus", frameon=False, loc="upper right")
    ax.set_title("Swing's gain on square tori (step model, swing-sst parameters)")
    fig.savefig(image_path("swing_fig7"), dpi=150)
    plt.close(fig)


def main() -> None:
    begin(parser(__doc__, ESTIMATE).parse_args(), ESTIMATE, "swing_fig7")
    sweeps = [sweep(spec) for spec in TORI]
    figure(sweeps)
    short = [sw.spec.split(":")[1] for sw in sweeps]
    until = [swing_best_until(sw) for sw in sweeps]
    maxes = [max_gain(sw) for sw in sweeps]
    overs = [overtaken_from(sw) for sw in sweeps]
    mins = [float(sw.gain.min()) for sw in sweeps]
    fracs = [peak_fraction(sw) for sw in sweeps]
    big = [m for sw, m in zip(sweeps, maxes, strict=True) if sw.cmp.topology in ("torus:64x64", "torus:128x128")]

    def each(values) -> str:
        return ", ".join(f"{s}: {v}" for s, v in zip(short, values, strict=True))

    increasing = all(b[0] > a[0] - 0.02 for a, b in zip(maxes, maxes[1:], strict=False))
    claims = [
        Claim("Swing outperforms the state of the art regardless of the network size up to 32 MiB (holds: Swing "
              "best, ties within 0.5 % included, at every size up to at least 16 MiB on every torus)",
              "up to 32 MiB on every size (Sec. 5.1.1)", "best up to " + each([fs(u) for u in until]),
              all(u is not None and u >= 16 * MIB for u in until)),
        Claim("the maximum Swing gain increases with the network size (holds: each larger torus's maximum is "
              "higher, ties within 2 points allowed)", "increases",
              each([f"{pct(g)} at {fs(s)}" for g, s, _ in maxes]), increasing),
        Claim("bucket outperforms Swing for large vectors, ≥ 128 MiB (holds: bucket wins from a size within 2x "
              "of 128 MiB to 512 MiB on every torus)", "≥ 128 MiB",
              "bucket from " + each([fs(o[0]) if o and o[1] == "bucket" else "never" for o in overs]),
              all(o is not None and o[1] == "bucket" and 64 * MIB <= o[0] <= 256 * MIB for o in overs)),
        Claim("the negative gain is at most about 20 % regardless of the network size (within 5 points)",
              "≥ −20 % (peak ≈ 80 %)", "lowest gain " + each([pct(m) for m in mins]),
              all(m >= -0.25 for m in mins)),
        Claim("Swing's congestion deficiency grows with the network size (Swing-B's share of peak at 512 MiB "
              "falls)", "grows", each([f"{f * 100:.1f} %" for f in fracs]),
              all(b < a + TIE for a, b in zip(fracs, fracs[1:], strict=False))),
        Claim("Swing beats the best-known algorithm by up to 2.2x on square tori of 4,096 to 16,384 nodes (Sec. 1; "
              "goodput ratio within 20 %)", "up to 2.2x",
              ", ".join(f"{sw.spec.split(':')[1]}: {ratio(g)} at {fs(s)}" for sw, (g, s, _) in
                        zip([s for s in sweeps if s.cmp.topology in ("torus:64x64", "torus:128x128")], big,
                            strict=True)),
              all(within_factor(1 + g, 2.2) for g, _, _ in big)),
    ]
    sizes = [32, 32 * 1024, 256 * 1024, MIB, 2 * MIB, 4 * MIB]
    rows, secs = packet_verdict("torus:8x8", sizes)
    method = ("`python3 benchmarks/paper/swing_fig7.py`: `compare(torus:NxN, allreduce, 32B..512MiB, SWING_SST)` "
              "for N = 8, 16, 32, 64, 128 (step model, adaptive routing, swing-sst parameters as they are), the "
              "paper's families each at its best variant per size; Swing's gain is its goodput over the best other "
              f"family's, minus 1; {sum(sw.seconds for sw in sweeps):.0f} s for the five sweeps.")
    where = sorted({fs(s) for _, s, _ in maxes})
    notes = (f"Ours: the largest gains sit at {' / '.join(where)}, where Swing-L's short first steps beat "
             "recursive doubling's and bucket's latency (the paper's largest gains are at 2 MiB, Fig. 6); the gain "
             "at medium sizes does grow with the torus (at 1 MiB: "
             + each([pct(sw.gain[sw.at(MIB)]) for sw in sweeps])
             + "), as the paper explains by bucket's and ring's growing latency deficiency. The crossover to bucket "
             "moves up with the network size but comes earlier than the paper's 128 MiB: with no per-message "
             "overhead (α = 0 in swing-sst) bucket's many steps are cheap (see Fig. 6's notes). torus:128x128 needs "
             "the memory check raised: compare's estimate counts the ring as materialised (64 GiB) though its "
             "pattern is built in closed form (0.4 GB peak).\n\n"
             + verdict_table(rows, "torus:8x8", secs))
    write_claims("swing_fig7", "Swing Fig. 7: Swing's gain on square tori, 64 to 16,384 nodes", claims,
                 method=method, notes=notes)


if __name__ == "__main__":
    main()
