"""Zhao et al., Fig. 15 (App. A.3): the minimum allreduce runtime at each N for d = 4, alpha = 10 us and
M/B = 1 MB / 100 Gb/s and 100 MB / 100 Gb/s, with the construction of the topology that achieves it, and the best
bidirectional topology.

Run: python3 benchmarks/paper/zhao_fig15.py [--count 24] [--full]   (0.5-4 minutes on 2 shared cores)

For every N the topology finder (``directcoll.synthesis.finder.find_topology``, Sec. 5.4) builds the Pareto frontier
of (T_L, T_B) over bases and expansions; the best topology for a size M minimises the allreduce time
2 (alpha T_L + T_B M/B) (Table 4's column). The frontier does not depend on M, so one search serves both sizes; the
best bidirectional topology needs a second search (``bidirectional_only=True``). The construction labels follow the
paper's: L line graph, P Cartesian power, C Cartesian product, D degree expansion, B the uni- to bidirectional
conversion (App. A.6), letters from the outermost operator in; bases without expansion are GenKautz (generalized
Kautz and Kautz graphs), Circulant (circulants and rings) or DistReg (complete, bipartite, Hamming, Petersen, Odd).

The finder evaluates no base above ``MAX_BASE_NODES`` nodes: there it would miss generalized Kautz and Theorem 22's
circulant, which exist for every N, and find nothing at a prime N. For N above that limit we add ``genkautz:4:N`` and
``circulant:N:opt4`` to its frontier ourselves, costed by their BFB LPs like any base. (The limit was 1024 when this
script was written, and ``find_topology(1109, 4)`` raised; it is 4096 now, so N <= 2000 no longer needs this.)

Scale: one search takes 0.5-7 s here, so the default run samples N: --count sizes drawn uniformly from 8..2000
(seed 0), plus 1024 (Table 4's N). ``--full`` runs every N from 8 to 2000 (hours). Shares of "most popular" are
over the sampled N.
"""

from __future__ import annotations

import functools
import re
import time
from collections import Counter

import numpy as np
from common import Claim, begin, image_path, parser, write_claims

import directcoll.synthesis.finder as finder
from directcoll.errors import DirectcollError
from directcoll.synthesis.bfb import bfb_cost
from directcoll.synthesis.finder import MAX_BASE_NODES, Candidate, find_topology, theoretical_bound
from directcoll.topology import parse

ESTIMATE = "about 31 s (its last run on the 2-core machine, benchmarks/paper/results/timings.json)"

FIGURE = "zhao_fig15"
DEGREE = 4
ALPHA = 10e-6  # s
B = 100e9 / 8  # node bandwidth, bytes/s (100 Gb/s)
SIZES = {"1MB": 1e6, "100MB": 100e6}
N_MIN, N_MAX = 8, 2000
BASES = {"genkautz": "GenKautz", "kautz": "GenKautz", "circulant": "Circulant", "ring": "Circulant"}
OPS = {"line": "L", "power": "P", "product": "C", "degree": "D", "bidir": "B"}


def label(spec: str) -> str:
    """The paper's construction label of a finder spec: operator letters outermost first, else the base family."""
    ops = [OPS[w] for w in re.findall(r"([a-z_]+)(?:\^\d+)?\(", spec)]
    letters = "".join(x for i, x in enumerate(ops) if i == 0 or x != ops[i - 1])
    if letters:
        return letters
    return BASES.get(spec.split(":")[0], "DistReg")


def sample(count: int, full: bool) -> list[int]:
    if full:
        return list(range(N_MIN, N_MAX + 1))
    rng = np.random.default_rng(0)
    return sorted(set(rng.choice(np.arange(N_MIN, N_MAX + 1), size=count, replace=False).tolist()) | {1024})


@functools.cache
def any_n_bases(n: int) -> tuple[Candidate, ...]:
    """genkautz:4:N and circulant:N:opt4 as finder candidates, costed by their BFB LPs (``bfb_cost``).

    The finder only evaluates bases up to MAX_BASE_NODES nodes, so above that it misses these two families, which
    exist for every N, and finds nothing at all for a prime N; we add them there ourselves.
    """
    out = []
    for spec, bidirectional in ((f"genkautz:{DEGREE}:{n}", False), (f"circulant:{n}:opt4", True)):
        topo = parse(spec)
        t_l, t_b = bfb_cost(topo)
        out.append(Candidate(topo.spec, n, DEGREE, int(t_l), float(t_b), False, bidirectional, bidirectional))
    return tuple(out)


def frontier(n: int, bidirectional_only: bool) -> list[Candidate]:
    try:
        found = find_topology(n, DEGREE, alpha=ALPHA, m_over_b=[SIZES["1MB"] / B],
                              bidirectional_only=bidirectional_only).frontier
    except DirectcollError:  # nothing reaches N: a prime above MAX_BASE_NODES
        found = []
    if n > MAX_BASE_NODES:
        found += [c for c in any_n_bases(n) if c.bidirectional or not bidirectional_only]
    return found


def measure(ns: list[int]) -> list[dict]:
    rows = []
    t0 = time.perf_counter()
    for n in ns:
        res, bi = frontier(n, False), frontier(n, True)
        row = {"N": n}
        for key, m in SIZES.items():
            best = min(res, key=lambda c, m=m: c.allreduce_time(ALPHA, m / B))
            best_bi = min(bi, key=lambda c, m=m: c.allreduce_time(ALPHA, m / B))
            t_l, t_b = theoretical_bound(n, DEGREE)
            row[key] = {"spec": best.spec, "label": label(best.spec), "time": best.allreduce_time(ALPHA, m / B),
                        "t_l": best.t_l_steps, "t_b": best.t_b_m_over_b,
                        "bi_spec": best_bi.spec, "bi_time": best_bi.allreduce_time(ALPHA, m / B),
                        "bound": 2 * (ALPHA * t_l + t_b * m / B)}
        rows.append(row)
        print(f"N = {n}: {row['1MB']['spec']} / {row['100MB']['spec']} ({time.perf_counter() - t0:.0f} s)",
              flush=True)
    return rows


def draw(rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = sorted({r[k]["label"] for r in rows for k in SIZES}, key=lambda x: (len(x) > 3, x))
    markers = dict(zip(labels, "os^Dv<>ph*XP", strict=False))
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.6), constrained_layout=True)
    n = [r["N"] for r in rows]
    for ax, (key, m) in zip(axes, SIZES.items(), strict=True):
        scale = 1e6 if m < 1e7 else 1e3
        unit = "µs" if scale == 1e6 else "ms"
        ax.plot(n, [r[key]["bound"] * scale for r in rows], color="0.55", lw=1, ls=":",
                label="theoretical bound (Moore, (N-1)/N)")
        ax.plot(n, [r[key]["bi_time"] * scale for r in rows], color="0.35", lw=0.9, ls="--", marker=".", ms=4,
                label="best bidirectional topology")
        for i, lab in enumerate(labels):
            pts = [(r["N"], r[key]["time"] * scale) for r in rows if r[key]["label"] == lab]
            if pts:
                x, y = zip(*pts, strict=True)
                ax.scatter(x, y, s=22, marker=markers[lab], color=f"C{i}", label=f"{lab} ({len(pts)})", zorder=3)
        ax.set_xscale("log")
        ax.set_xlabel("nodes N")
        ax.set_ylabel(f"minimum allreduce time ({unit})")
        ax.set_title(f"d = 4, α = 10 µs, M = {key}, B = 100 Gb/s", fontsize=10)
        ax.grid(True, alpha=0.3, which="both")
        ax.legend(fontsize=7.5, frameon=False, loc="upper left")
    fig.suptitle("Zhao et al. Fig. 15: best topology from the finder at each sampled N (marker: its construction)",
                 fontsize=11)
    fig.savefig(image_path(FIGURE), dpi=150)
    plt.close(fig)


def main() -> None:
    ap = parser(__doc__, ESTIMATE)
    ap.add_argument("--count", type=int, default=24, help="sampled N besides 1024 (default 24)")
    ap.add_argument("--full", action="store_true", help=f"every N from {N_MIN} to {N_MAX} (hours)")
    args = ap.parse_args()
    begin(args, ESTIMATE, "zhao_fig15")
    # The two searches per N (every topology, bidirectional only) evaluate the same bases, each a pure function of
    # its spec (its BFB LPs); memoising that step halves the run. Nothing else of the finder changes.
    finder._evaluate_base = functools.cache(finder._evaluate_base)
    rows = measure(sample(args.count, args.full))
    draw(rows)
    claims = []
    shares = {}
    for key in SIZES:
        c = Counter(r[key]["label"] for r in rows)
        shares[key] = c
        top, k = c.most_common(1)[0]
        want = "GenKautz" if key == "1MB" else "Circulant"
        claims.append(Claim(f"M = {key}: {want} is the most popular best topology", f"{want} most popular",
                            f"{top} best at {k} of {len(rows)} N; " + ", ".join(f"{lab} {v}" for lab, v in
                                                                             c.most_common()), top == want))
    line = {key: sum(v for lab, v in shares[key].items() if "L" in lab) for key in SIZES}
    claims.append(Claim("line graphs are also popular in both settings", "popular",
                        ", ".join(f"{key}: L-constructions best at {v} of {len(rows)} N" for key, v in line.items())
                        + " (tolerance: at least 10 % of the sampled N in both)",
                        all(v >= 0.1 * len(rows) for v in line.values())))
    l_ns = sorted({r["N"] for r in rows for key in SIZES if "L" in r[key]["label"]})
    claims.append(Claim("line graph expansion needs N divisible by a power of d", "4 divides N where L wins",
                        f"{len(l_ns)} N where an L-construction wins, all divisible by 4: "
                        f"{'yes' if all(n % DEGREE == 0 for n in l_ns) else 'no'}",
                        all(n % DEGREE == 0 for n in l_ns)))
    degree = sum(v for key in SIZES for lab, v in shares[key].items() if "D" in lab)
    claims.append(Claim("degree expansion does not show up (d = 4 is small)", "never best",
                        f"best at {degree} (N, M) points", degree == 0))
    at1024 = next(r for r in rows if r["N"] == 1024)["1MB"]
    mib = 2 * (ALPHA * at1024["t_l"] + at1024["t_b"] * 2**20 / B)  # Table 4's M is 1 MiB (its 291.0 µs says so)
    claims.append(Claim("N = 1024 (Table 4, M = 1 MiB): the best is L^3(C(16,{3,4})), 2(T_L + T_B) = 291.0 µs",
                        "L³(C(16,{3,4})), 291.0 µs", f"`{at1024['spec']}`, {mib * 1e6:.1f} µs (tolerance 0.1 µs; "
                        f"{at1024['time'] * 1e6:.1f} µs with M = 10^6 B)", at1024["spec"] == "line^3(circulant:16:3,4)"
                        and abs(mib * 1e6 - 291.0) <= 0.1))
    method = ("Topology finder (`find_topology(N, 4)`, bases' BFB LPs and the expansion theorems), best per size by "
              "2 (α T_L + T_B M/B) with α = 10 µs, B = 100 Gb/s, M = 1 MB and 100 MB (10^6 and 10^8 bytes); the best "
              "bidirectional topology from a second search with `bidirectional_only=True`. "
              f"{'Every N from 8 to 2000' if args.full else f'{len(rows)} sampled N'}. "
              f"`python3 benchmarks/paper/zhao_fig15.py{' --full' if args.full else ''}`.")
    notes = ("" if args.full else f"N sampled uniformly from {N_MIN}..{N_MAX} (seed 0) plus 1024; the paper's "
             "shares are over its own N, which the text does not list. ") + \
        (f"Above {MAX_BASE_NODES} nodes (the finder's largest base) `genkautz:4:N` and `circulant:N:opt4` are "
         "added to its frontier, costed by `bfb_cost`; " + ("no sampled N is that large. " if all(
             r["N"] <= MAX_BASE_NODES for r in rows) else "some sampled N are. ")) + \
        ("Labels: L line graph, P Cartesian power, C Cartesian product, B bidirectional conversion, outermost "
         "first; bases without expansion by family. Per-N results: " +
         "; ".join(f"{r['N']}: {r['1MB']['spec']} / {r['100MB']['spec']}" for r in rows) + ".")
    write_claims(FIGURE, "Zhao et al. Fig. 15: minimum allreduce time per N, d = 4", claims, method=method, notes=notes)


if __name__ == "__main__":
    main()
