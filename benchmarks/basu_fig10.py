"""Regenerate Basu et al.'s Fig. 10: all-to-all throughput F of degree-4 topologies relative to Theorem 1's bound
(eq. 25, the best any d-regular digraph of N nodes can do), for generalized Kautz Pi(4, N), Jellyfish (random
4-regular graph, seed 0), Xpander (random lift of K_5, seed 0) and the most nearly square 2D torus.

F is exact where the LP is affordable: always on the torus (a Cayley graph: the symmetric LP) and on
generalized Kautz (the LP reduced by its automorphism group, 10x smaller where 5 divides N), and on the random
graphs up to --exact-max nodes (the link LP). Above that the random graphs get the certified bracket
lower <= F <= upper of :func:`directcoll.synthesis.mcf.bracket.alltoall_mcf_bracket`, drawn as a band. The
capacity bound |E| / sum of distances (an upper bound on F of the graph itself) is printed too.

Run: python3 benchmarks/basu_fig10.py [--nodes 100,200,...] [--families genkautz,...] [--exact-max 100]
         [--iterations 400] [--out docs/img/basu_fig10.png] [--json FILE] [--from-json FILE]
Prints a Markdown table of F / bound per family and N (docs/alltoall.md records it).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import time

from rich.progress import Progress

from directcoll.cost.bounds import capacity_bound, theorem1_bound
from directcoll.synthesis.mcf.bracket import alltoall_mcf_bracket
from directcoll.synthesis.mcf.link import alltoall_mcf

DEGREE = 4
FAMILIES = ("genkautz", "jellyfish", "xpander", "torus")
LABELS = {"genkautz": "GenKautz", "jellyfish": "Jellyfish (random regular)", "xpander": "Xpander",
          "torus": "2D torus"}


def spec_for(family: str, n: int) -> str | None:
    """The family's degree-4 member with N nodes, or None where there is none."""
    if family == "genkautz":
        return f"genkautz:{DEGREE}:{n}"
    if family == "jellyfish":
        return f"jellyfish:{n}:{DEGREE}:0"
    if family == "xpander":
        return f"xpander:{n}:{DEGREE}:0" if n % (DEGREE + 1) == 0 else None
    a = math.isqrt(n)
    while n % a:
        a -= 1
    return f"torus:{a}x{n // a}" if a >= 3 else None


def measure(spec: str, n: int, exact_max: int, iterations: int) -> dict:
    t0 = time.perf_counter()
    bound = theorem1_bound(n, DEGREE)
    row = {"spec": spec, "N": n, "theorem1": bound, "capacity_bound": capacity_bound(spec)}
    if spec.startswith(("torus", "genkautz")) or n <= exact_max:
        r = alltoall_mcf(spec)
        row.update(lower=r.value, upper=r.value, how=f"exact ({r.method})")
    else:
        b = alltoall_mcf_bracket(spec, max_iterations=iterations)
        row.update(lower=b.lower, upper=b.upper, how=f"bracket ({b.iterations} iterations)")
    row["seconds"] = time.perf_counter() - t0
    return row


def plot(rows: list[dict], out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    styles = {"genkautz": ("C0", "o"), "jellyfish": ("C1", "s"), "xpander": ("C2", "^"), "torus": ("C3", "D")}
    for family in FAMILIES:
        pts = sorted((r for r in rows if r["family"] == family), key=lambda r: r["N"])
        if not pts:
            continue
        n = [r["N"] for r in pts]
        lo = [r["lower"] / r["theorem1"] for r in pts]
        hi = [r["upper"] / r["theorem1"] for r in pts]
        color, marker = styles[family]
        axes = (left, right) if family == "genkautz" else (right,)
        for ax in axes:
            ax.fill_between(n, lo, hi, color=color, alpha=0.25, linewidth=0)
            ax.plot(n, hi, color=color, marker=marker, markersize=4, label=LABELS[family])
            ax.plot(n, lo, color=color, linewidth=0.8)
        if family == "genkautz":
            cap = [r["capacity_bound"] / r["theorem1"] for r in pts]
            left.plot(n, cap, color="0.4", linestyle="--", label="capacity bound |E| / Σ distances")
    left.axhline(0.94, color="0.6", linestyle=":", linewidth=1)
    left.text(left.get_xlim()[1], 0.937, "6 % below the bound  ", fontsize=8, color="0.4", va="top", ha="right")
    left.set_title("GenKautz Π(4, N) against Theorem 1's bound")
    right.set_title("degree-4 topologies (band: lower ≤ F ≤ upper)")
    left.set_ylabel("all-to-all throughput F / Theorem 1 bound")
    left.set_ylim(0.8, 1.005)
    right.set_ylim(0, 1.05)
    for ax in (left, right):
        ax.set_xlabel("nodes N")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8, loc="lower left")
    fig.tight_layout()
    fig.savefig(out, dpi=150)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nodes", default="100,200,300,400,500,600,800,900,1000")
    ap.add_argument("--exact-max", type=int, default=100, help="exact link LP up to this many nodes (default 100)")
    ap.add_argument("--iterations", type=int, default=400, help="bracket iterations above --exact-max")
    ap.add_argument("--out", default="docs/img/basu_fig10.png")
    ap.add_argument("--json", default="", help="also write the rows to this JSON file")
    ap.add_argument("--families", default=",".join(FAMILIES), help=f"subset of {','.join(FAMILIES)}")
    ap.add_argument("--from-json", default="", help="rows an earlier --json run wrote: measure only what they lack, "
                                                     "then print and plot them all")
    args = ap.parse_args()
    sizes = [int(x) for x in args.nodes.split(",")]
    families = [f for f in args.families.split(",") if f]
    if set(families) - set(FAMILIES):
        ap.error(f"unknown family in --families {args.families!r}; accepted: {', '.join(FAMILIES)}")
    rows = []
    if args.from_json:
        with open(args.from_json) as fh:
            rows = json.load(fh)
    done = {r["spec"] for r in rows}
    work = [(f, n, s) for n in sizes for f in families if (s := spec_for(f, n)) is not None and s not in done]
    sizes = sorted({n for n in sizes} | {r["N"] for r in rows})
    with Progress() as bar:
        task = bar.add_task("Fig. 10", total=len(work))
        for family, n, spec in work:
            bar.update(task, description=spec)
            rows.append(r := {"family": family, **measure(spec, n, args.exact_max, args.iterations)})
            bar.console.print(f"{spec}: F / bound in [{r['lower'] / r['theorem1']:.4f}, "
                              f"{r['upper'] / r['theorem1']:.4f}], {r['how']}, {r['seconds']:.1f} s")
            bar.advance(task)
            if args.json:  # after every row, so a long run that is stopped keeps what it measured
                with open(args.json, "w") as fh:
                    json.dump(rows, fh, indent=1)
    rows.sort(key=lambda r: (r["N"], FAMILIES.index(r["family"])))
    print(f"# {time.strftime('%Y-%m-%d')} {platform.machine()}, {os.cpu_count()} cores\n")
    print("| N | topology | F / bound (lower) | F / bound (upper) | capacity bound / bound | how | seconds |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['N']} | `{r['spec']}` | {r['lower'] / r['theorem1']:.4f} | {r['upper'] / r['theorem1']:.4f} | "
              f"{r['capacity_bound'] / r['theorem1']:.4f} | {r['how']} | {r['seconds']:.1f} |")
    for n in sizes:
        at = {r["family"]: r for r in rows if r["N"] == n}
        if "genkautz" in at and "torus" in at:
            gk, torus = at["genkautz"], at["torus"]
            print(f"\nN = {n}: GenKautz / torus throughput in [{gk['lower'] / torus['upper']:.3f}, "
                  f"{gk['upper'] / torus['lower']:.3f}]", end="")
            for other in ("jellyfish", "xpander"):
                if other in at:
                    print(f", / {other} in [{gk['lower'] / at[other]['upper']:.3f}, "
                          f"{gk['upper'] / at[other]['lower']:.3f}]", end="")
    print()
    plot(rows, args.out)


if __name__ == "__main__":
    main()
