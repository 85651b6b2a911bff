"""Swing Fig. 6: allreduce goodput on a 64x64 torus (4,096 nodes), the gain of Swing over the best-known algorithm
and the runtime of small vectors; the packet engine's verdict on a 16x16 torus. Also the helpers the other
``swing_fig*.py`` scripts import (sweep, gains, crossovers, the goodput and gain panels, the packet verdict).

Run: python3 benchmarks/paper/swing_fig6.py        (about 30 s on 2 busy cores: the step-model sweeps ~5 s, the
                                                    packet verdict on torus:16x16 the rest)

Model: what ``directcoll compare`` uses by default: the step model (every step routed once over all minimal paths,
adaptive routing, the bandwidth of a transfer set by its most loaded link, sizes swept in closed form) with the
``swing-sst`` parameters (``directcoll.simulate.SWING_SST``: the paper's SST setup, 400 Gb/s links, 100 ns link
latency, 300 ns per hop, no per-message overhead, 4 KiB packets, cut-through), untouched. The paper's families:
Swing, recursive doubling, ring (Hamiltonian where Sec. 2.3.1's condition holds), bucket, each shown by its best
variant per size; Fig. 6 also shows the mirrored recursive doubling (Sec. 5.1), which the gain leaves out as the
paper does. The packet engine (ns-3, ``directcoll.simulate.packet``) runs the same parameters with its 2-byte
header.
"""

from __future__ import annotations

import time
from contextlib import nullcontext
from dataclasses import dataclass

import numpy as np
from common import Claim, begin, image_path, parser, write_claims

from directcoll.errors import DirectcollError, ResourceError
from directcoll.registry import build_pattern
from directcoll.reports.compare import Comparison, compare
from directcoll.reports.contenders import DEFAULT_CONTENDERS, Contender
from directcoll.resources import memory_budget_override
from directcoll.simulate import SWING_SST, simulate
from directcoll.simulate.packet import simulate_packet
from directcoll.topology import parse
from directcoll.units import format_size, parse_sizes

ESTIMATE = "about 30 s (its last run on the 2-core machine, benchmarks/paper/results/timings.json)"

#: the paper's sweep (Sec. 5: 32 B .. 512 MiB; Figs. 10 and 11 run to 2 GiB)
SIZES = parse_sizes("32B..512MiB")
#: gains within +-0.5 % count as a tie: Swing "outperforms" where its gain is above -TIE
TIE = 0.005
#: "up to Nx" claims hold when our goodput ratio is within this fraction of the paper's
FACTOR_TOL = 0.2
#: the packet verdict simulates, per size, every variant whose step-model time is within this factor of the
#: step model's best (and always its best Swing and best other variant): the others cannot win, the engines
#: differ by far less (benchmarks/fidelity.py)
WITHIN = 1.5
#: packet-hops one packet simulation may take (about 10 s of ns-3 on this machine)
MAX_PACKET_HOPS = 2e6
MIRRORED = [("mirrored-recursive-doubling", "mirrored-recursive-doubling", "latency"),
            ("mirrored-recursive-doubling", "mirrored-recursive-doubling", "bandwidth")]
NAMES = {"swing": "Swing", "recursive-doubling": "rec. doubling", "ring": "ring", "bucket": "bucket",
         "mirrored-recursive-doubling": "mirrored rec. doubling"}
LETTERS = {"swing": "S", "recursive-doubling": "D", "ring": "R", "bucket": "B", "mirrored-recursive-doubling": "M"}
STYLE = {"swing": ("#d62728", "o", "-"), "recursive-doubling": ("#1f77b4", "s", "-"), "ring": ("#2ca02c", "^", "-"),
         "bucket": ("#9467bd", "D", "-"), "mirrored-recursive-doubling": ("#17becf", "v", "--")}


@dataclass
class Sweep:
    """One topology swept with the step model: each family's best time per size and Swing's gain.

    ``fams`` holds the families the gain is taken over (the paper's), ``shown`` also those only drawn (mirrored
    recursive doubling in Fig. 6).
    """

    spec: str
    cmp: Comparison
    fams: dict[str, np.ndarray]
    variants: dict[str, list[str]]
    shown: dict[str, np.ndarray]
    gain: np.ndarray
    best_other: list[str]
    seconds: float
    nodes: int

    @property
    def sizes(self) -> np.ndarray:
        return self.cmp.sizes

    @property
    def peak(self) -> float:
        """Peak goodput, bytes/s (half the injection bandwidth)."""
        return self.cmp.peak_goodput

    def at(self, size: float) -> int:
        return int(np.flatnonzero(self.sizes == size)[0])

    def goodput(self, family: str) -> np.ndarray:
        return self.sizes / self.shown[family]

    def entry(self, family: str, variant: str) -> np.ndarray:
        return next(e.times for e in self.cmp.entries if e.family == family and e.variant == variant)


def sweep(spec: str, sizes=SIZES, params=SWING_SST, drop=(), extra=()) -> Sweep:
    """``compare`` on ``spec`` with the paper's contenders less the families in ``drop``; ``extra`` contenders are
    timed and drawn but left out of the gain (as the paper leaves out mirrored recursive doubling)."""
    topo = parse(spec)
    contenders = [c for c in DEFAULT_CONTENDERS if c.family not in drop] + [Contender.of(c) for c in extra]
    # compare's memory check counts the ring's 2(N-1) steps as if every transfer were built (64 GiB on
    # torus:128x128) although its pattern is built in closed form (measured peak: 0.4 GB); see docs/paper.md
    budget = memory_budget_override("64GiB") if topo.num_compute > 4096 else nullcontext()
    t0 = time.perf_counter()
    with budget:
        cmp = compare(topo, "allreduce", np.asarray(sizes, dtype=float), params, contenders=contenders)
    seconds = time.perf_counter() - t0
    every = cmp.families()
    extra_fams = {Contender.of(c).family for c in extra}
    fams = {f: t for f, (t, _) in every.items() if f not in extra_fams}
    others = [f for f in fams if f != "swing"]
    stack = np.array([fams[f] for f in others])
    gain = stack.min(axis=0) / fams["swing"] - 1.0
    best_other = [others[i] for i in stack.argmin(axis=0)]
    return Sweep(spec, cmp, fams, {f: v for f, (_, v) in every.items()}, {f: t for f, (t, _) in every.items()},
                 gain, best_other, seconds, topo.num_compute)


# --- reading a sweep --------------------------------------------------------------------------------------------

def swing_best_until(sw: Sweep) -> float | None:
    """The largest size up to which Swing is best (ties within TIE included) at every size; None if not at 32 B."""
    ok = sw.gain >= -TIE
    if not ok[0]:
        return None
    bad = np.flatnonzero(~ok)
    return float(sw.sizes[bad[0] - 1]) if len(bad) else float(sw.sizes[-1])


def swing_loses_at(sw: Sweep) -> list[float]:
    """Sizes where another family beats Swing by more than TIE."""
    return [float(s) for s, g in zip(sw.sizes, sw.gain, strict=True) if g < -TIE]


def overtaken_from(sw: Sweep) -> tuple[float, str] | None:
    """(size, family): from this size to the largest, Swing loses (by more than TIE); None if it wins the last."""
    lose = sw.gain < -TIE
    if not lose[-1]:
        return None
    j = len(lose) - 1
    while j > 0 and lose[j - 1]:
        j -= 1
    return float(sw.sizes[j]), sw.best_other[j]


def max_gain(sw: Sweep, upto: float | None = None) -> tuple[float, float, str]:
    """(gain, size, best other family) where Swing's gain is largest (sizes <= upto)."""
    mask = sw.sizes <= (upto if upto is not None else np.inf)
    j = int(np.flatnonzero(mask)[np.argmax(sw.gain[mask])])
    return float(sw.gain[j]), float(sw.sizes[j]), sw.best_other[j]


def median_gain(sw: Sweep, upto: float = 512 * 2**20) -> float:
    return float(np.median(sw.gain[sw.sizes <= upto]))


def peak_fraction(sw: Sweep, family: str = "swing", variant: str | None = "bandwidth", size=None) -> float:
    """Goodput of ``family`` (its ``variant``; its best when None) at ``size`` (default the largest) over peak."""
    j = sw.at(size) if size is not None else len(sw.sizes) - 1
    t = sw.entry(family, variant)[j] if variant else sw.shown[family][j]
    return float(sw.sizes[j] / t / sw.peak)


def within_factor(ours: float, paper: float, tol: float = FACTOR_TOL) -> bool:
    """Whether goodput ratio ``ours`` is within ``tol`` (relative) of ``paper``."""
    return abs(ours / paper - 1.0) <= tol


def within_2x(ours: float | None, paper: float) -> bool:
    return ours is not None and paper / 2 <= ours <= paper * 2


def fs(size: float | None) -> str:
    """``32 B``, ``64 KiB``, ``512 MiB``; ``never`` for None."""
    if size is None:
        return "never"
    text = format_size(size)
    return text[:-3] + " " + text[-3:] if text.endswith("iB") else text[:-1] + " B"


def us(seconds: float) -> str:
    """A time in µs: ``8.37 µs``, ``1,638 µs``."""
    v = seconds * 1e6
    return f"{v:,.0f} µs" if v >= 100 else f"{v:.3g} µs"


def pct(g: float) -> str:
    return f"{g * 100:+.0f} %"


def ratio(g: float) -> str:
    return f"{1 + g:.2f}x"


def name(family: str, variant: str | None = None) -> str:
    """``Swing-B``, ``rec. doubling-L``, ``bucket``: a family and, where it has two, its variant."""
    tag = {"latency": "-L", "bandwidth": "-B"} if family in ("swing", "recursive-doubling",
                                                             "mirrored-recursive-doubling") else {}
    return NAMES.get(family, family) + tag.get(variant or "", "")


def gain_text(sw: Sweep, upto: float | None = None) -> str:
    g, s, other = max_gain(sw, upto)
    return f"{pct(g)} ({ratio(g)}) at {fs(s)} over {NAMES[other]}"


# --- drawing ----------------------------------------------------------------------------------------------------

def plt_setup():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 9, "axes.titlesize": 10, "legend.fontsize": 8, "axes.spines.top": False,
                         "axes.spines.right": False})
    return plt


def size_axis(ax, sizes, every: int = 3, labels: bool = True) -> None:
    ax.set_xscale("log", base=2)
    ticks = sizes[::every]
    ax.set_xticks(ticks)
    ax.set_xticklabels([fs(s) for s in ticks] if labels else [], rotation=45 if labels else 0, ha="right")
    ax.minorticks_off()
    ax.set_xlim(sizes[0] / 1.4, sizes[-1] * 1.4)


def draw_goodput(ax, sw: Sweep, *, legend: bool = True, inset: bool = False, labels: bool = False,
                 every: int = 3, peak: float | None = None, peak_label: str = "peak goodput") -> None:
    """Goodput (Gb/s) per family's best variant; a ring marks where a family switches variant (Swing: from
    latency- to bandwidth-optimal), a dotted line the peak goodput (``peak``, bytes/s: default the network's)."""
    sizes = sw.sizes
    for fam, times in sw.shown.items():
        colour, marker, ls = STYLE.get(fam, ("0.5", "x", ":"))
        gp = sizes / times * 8 / 1e9
        ax.plot(sizes, gp, ls, marker=marker, color=colour, ms=3.5, lw=1.5,
                label=f"{NAMES.get(fam, fam)} ({LETTERS.get(fam, '?')})")
        var = sw.variants[fam]
        for j in range(1, len(var)):
            if var[j] != var[j - 1]:
                ax.plot(sizes[j], gp[j], "o", color=colour, ms=9, mfc="none", mew=1.6)
    peak = (peak or sw.peak) * 8 / 1e9
    ax.axhline(peak, color="0.35", ls=":", lw=1)
    ax.text(sizes[0], peak, f" {peak_label}", va="bottom", ha="left", fontsize=7, color="0.3")
    ax.set_ylim(0, peak * 1.12)
    ax.set_ylabel("goodput (Gb/s)")
    ax.grid(True, alpha=0.3)
    size_axis(ax, sizes, every, labels)
    if legend:
        ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(sw.shown), frameon=False,
                  handlelength=1.8, columnspacing=1.2)
    if inset:
        small = sizes <= 32 * 1024
        box = ax.inset_axes([0.08, 0.33, 0.36, 0.46])
        placed: list[float] = []
        for fam, times in sw.shown.items():
            if fam == "ring":
                continue
            colour, marker, ls = STYLE.get(fam, ("0.5", "x", ":"))
            box.plot(sizes[small], times[small] * 1e6, ls, marker=marker, color=colour, ms=2.5, lw=1)
            shift = 7 * sum(1 for y in placed if abs(y / times[0] - 1) < 0.04)  # letters of equal runtimes side by side
            placed.append(times[0])
            box.annotate(LETTERS.get(fam, "?"), (sizes[0], times[0] * 1e6), xytext=(-6 - shift, 0),
                         textcoords="offset points", fontsize=6, color=colour, va="center", ha="right")
        box.set_xscale("log", base=2)
        ticks = sizes[small][::5]
        box.set_xticks(ticks)
        box.set_xticklabels([fs(s) for s in ticks], fontsize=6)
        box.minorticks_off()
        box.tick_params(labelsize=6)
        box.set_ylim(bottom=0)
        box.set_xlim(sizes[0] / 3, sizes[small][-1] * 1.3)
        box.set_ylabel("runtime (µs)", fontsize=7)
        box.grid(True, alpha=0.3)
        if "ring" in sw.shown:
            box.set_title(f"small vectors (ring off scale: {sw.shown['ring'][0] * 1e6:,.0f} µs at 32 B)",
                          fontsize=7)
        else:
            box.set_title("small vectors", fontsize=7)


def draw_gain(ax, sw: Sweep, *, labels: bool = True, every: int = 3, letters: bool = True) -> None:
    """Swing's goodput gain over the best other family (bars, %), each labelled with that family's letter."""
    pct_ = sw.gain * 100
    colours = np.where(pct_ >= 0, STYLE["swing"][0], "0.55")
    ax.bar(sw.sizes, pct_, width=sw.sizes * 0.45, color=colours)
    ax.axhline(0, color="0.3", lw=0.8)
    lo, hi = min(pct_.min(), 0), max(pct_.max(), 0)
    pad = 0.05 * max(hi - lo, 20)
    if letters:
        for s, g, other in zip(sw.sizes, pct_, sw.best_other, strict=True):
            ax.text(s, g + (pad * 0.3 if g >= 0 else -pad * 0.3), LETTERS[other], ha="center",
                    va="bottom" if g >= 0 else "top", fontsize=6)
    ax.set_ylim(lo - 3 * pad, hi + 3 * pad)
    ax.set_ylabel("Swing gain (%)")
    ax.grid(True, axis="y", alpha=0.3)
    size_axis(ax, sw.sizes, every, labels)
    if labels:
        ax.set_xlabel("allreduce size")


# --- the packet engine's verdict --------------------------------------------------------------------------------

def packet_verdict(spec: str, sizes, params=SWING_SST, drop=(), within: float = WITHIN,
                   max_hops: float = MAX_PACKET_HOPS) -> tuple[list[dict], float]:
    """At each size, which family wins by the step model and by the packet engine (ns-3), with the same
    parameters (``params`` with the engine's 2-byte header). Simulated per size: every variant within ``within``
    of the step model's best, and the step model's best Swing and best other variant (so that Swing's packet-level
    gain is defined). Returns (rows, seconds)."""
    t0 = time.perf_counter()
    topo = parse(spec)
    params = params.with_(packet_header=max(2, params.packet_header))
    built = []
    for family, algorithm, variant in [(c.family, c.algorithm, c.variant) for c in DEFAULT_CONTENDERS
                                       if c.family not in drop]:
        try:
            pattern = build_pattern(algorithm, topo, "allreduce", variant=variant)
        except DirectcollError:
            continue
        label = pattern.meta.get("variant") or variant or ""
        built.append((family, label, pattern, simulate(pattern, topo, params).time(np.asarray(sizes, float))))
    rows = []
    for j, size in enumerate(sizes):
        step = {(f, v): float(t[j]) for f, v, _, t in built}
        best = min(step.values())
        swing_best = min((k for k in step if k[0] == "swing"), key=step.get)
        other_best = min((k for k in step if k[0] != "swing"), key=step.get)
        pick = {k for k, t in step.items() if t <= within * best} | {swing_best, other_best}
        packet, skipped = {}, []
        for f, v, pattern, _ in built:
            if (f, v) not in pick:
                continue
            try:
                packet[(f, v)] = simulate_packet(pattern, topo, size, params, max_packet_hops=max_hops).time_s
            except ResourceError:
                skipped.append(name(f, v))
        model_win = min(step, key=step.get)
        step_other = min(t for (f, _v), t in step.items() if f != "swing")
        row = {"size": size, "model": model_win, "model_s": step[model_win], "skipped": skipped,
               "step_gain": step_other / min(t for (f, _v), t in step.items() if f == "swing") - 1}
        if packet:
            pk_win = min(packet, key=packet.get)
            row.update(packet=pk_win, packet_s=packet[pk_win])
            # the same family wins, or the model's pick is within TIE of the packet engine's best
            row["agree"] = pk_win[0] == model_win[0] or (
                model_win in packet and packet[model_win] <= packet[pk_win] * (1 + TIE))
            fam_pk = {}
            for (f, _v), t in packet.items():
                fam_pk[f] = min(t, fam_pk.get(f, np.inf))
            other = min((t for f, t in fam_pk.items() if f != "swing"), default=None)
            row["packet_gain"] = other / fam_pk["swing"] - 1 if other and "swing" in fam_pk else None
        rows.append(row)
    return rows, time.perf_counter() - t0


def verdict_table(rows: list[dict], spec: str, seconds: float) -> str:
    """The verdict as a markdown paragraph and table for a claim table's notes."""
    agree = sum(1 for r in rows if r.get("agree"))
    done = sum(1 for r in rows if "packet" in r)
    lines = [f"**Packet engine's verdict** on {spec} (ns-3, the same parameters with a 2-byte header; simulated per "
             f"size: every variant within {WITHIN}x of the step model's best, and its best Swing and best other; "
             f"{seconds:.0f} s): the step model's winner is the packet engine's at {agree} of the {done} sizes "
             "simulated" + (f" ({len(rows) - done} over the packet-hop cap)" if done < len(rows) else "") + ".",
             "", "| size | step model: winner | packet engine: winner | agree | Swing gain, step / packet |",
             "|---|---|---|---|---|"]
    for r in rows:
        model = f"{name(*r['model'])} ({us(r['model_s'])})"
        if "packet" in r:
            pk = f"{name(*r['packet'])} ({us(r['packet_s'])})"
            gains = f"{pct(r['step_gain'])} / {pct(r['packet_gain']) if r['packet_gain'] is not None else 'n/a'}"
            agree_ = "yes" if r["agree"] else "**no**"
        else:
            pk, gains, agree_ = "not simulated", f"{pct(r['step_gain'])} / n/a", "n/a"
        if r["skipped"]:
            pk += f"; over {MAX_PACKET_HOPS:.0e} packet-hops: {', '.join(r['skipped'])}"
        lines.append(f"| {fs(r['size'])} | {model} | {pk} | {agree_} | {gains} |")
    return "\n".join(lines)


# --- Fig. 6 -----------------------------------------------------------------------------------------------------

def figure(sw: Sweep) -> None:
    plt = plt_setup()
    fig, (ax, axg) = plt.subplots(2, 1, figsize=(7.5, 6.6), sharex=False, gridspec_kw={"height_ratios": [3, 1.3]},
                                  constrained_layout=True)
    draw_goodput(ax, sw, inset=True, labels=False)
    fig.suptitle("Allreduce on a 64x64 torus (4,096 nodes): step model, swing-sst parameters", fontsize=10)
    draw_gain(axg, sw)
    axg.set_title("Swing's goodput gain over the best other algorithm (letter: that algorithm)", fontsize=9)
    fig.savefig(image_path("swing_fig6"), dpi=150)
    plt.close(fig)


def main() -> None:
    begin(parser(__doc__, ESTIMATE).parse_args(), ESTIMATE, "swing_fig6")
    sw = sweep("torus:64x64", extra=MIRRORED)
    figure(sw)

    mib = 2**20
    until = swing_best_until(sw)
    over = overtaken_from(sw)
    frac = peak_fraction(sw)
    j2 = sw.at(2 * mib)
    vs_rd = sw.fams["recursive-doubling"][j2] / sw.fams["swing"][j2]
    small = sw.sizes <= 32 * 1024
    rd_l = sw.entry("recursive-doubling", "latency")
    small_gain = rd_l[small] / sw.fams["swing"][small] - 1
    js = int(np.argmax(small_gain))
    g_max, s_max, other_max = max_gain(sw)
    mirrored = sw.shown["mirrored-recursive-doubling"] / sw.fams["swing"] - 1
    ring32 = sw.fams["ring"][0] / min(t[0] for f, t in sw.fams.items() if f != "ring")
    ring_wins = [s for s, o, g in zip(sw.sizes, sw.best_other, sw.gain, strict=True) if o == "ring" and g < 0]
    claims = [
        Claim("Swing is the best algorithm from 32 B to 32 MiB (holds: best or tied within 0.5 % at every size up "
              "to an end within 2x of 32 MiB)", "32 B – 32 MiB (Sec. 5.1)",
              f"32 B – {fs(until)}" if until else f"not at 32 B ({pct(sw.gain[0])})", within_2x(until, 32 * mib)),
        Claim("bucket outperforms Swing from 128 MiB on (crossover within 2x)", "from 128 MiB",
              f"{name(over[1])} from {fs(over[0])}" if over else "Swing wins at 512 MiB",
              bool(over) and over[1] == "bucket" and within_2x(over[0], 128 * mib)),
        Claim("ring never beats Swing (its latency deficiency is higher than bucket's)", "ring not best anywhere",
              "ring never best" if not ring_wins else f"ring best at {', '.join(fs(s) for s in ring_wins)}",
              not ring_wins),
        Claim("Swing reaches about 77 % of the peak goodput at 512 MiB (within 5 points)", "≈ 77 %",
              f"{frac * 100:.1f} % (Swing-B)", abs(frac - 0.77) <= 0.05),
        Claim("Swing-B's congestion deficiency on a 2D torus is Ξ ≈ 1.19 (Table 2; ours: peak / goodput at 512 MiB, "
              "within 0.05)", "Ξ = 1.19 (\"at most 81 % of peak\")",
              f"{1 / frac:.3f} ({frac * 100:.1f} % of peak; 1 / 1.19 = 84.0 %)", abs(1 / frac - 1.19) <= 0.05),
        Claim("Swing is more than 2x faster than recursive doubling at 2 MiB", "> 2x", f"{vs_rd:.2f}x", vs_rd > 2),
        Claim("up to 50 % gain over latency-optimal recursive doubling for small vectors, ≤ 32 KiB (goodput ratio "
              "within 20 %)", "up to +50 %",
              f"{pct(small_gain[js])} at {fs(sw.sizes[small][js])} ({pct(small_gain[0])} at 32 B)",
              within_factor(1 + small_gain[js], 1.5)),
        Claim("the largest Swing gain is about +120 % (goodput ratio within 20 %)", "≈ +120 %",
              f"{pct(g_max)} ({ratio(g_max)}) over {NAMES[other_max]}", within_factor(1 + g_max, 2.2)),
        Claim("the largest Swing gain is at 2 MiB (within 2x)", "2 MiB", f"{fs(s_max)} ({pct(sw.gain[j2])} at 2 MiB)",
              within_2x(s_max, 2 * mib)),
        Claim("Swing outperforms mirrored recursive doubling at every size", "at every size",
              f"at {int((mirrored > TIE).sum())} of {len(mirrored)} sizes (smallest gain {pct(mirrored.min())})",
              bool((mirrored > TIE).all())),
        Claim("the ring's small-vector runtime is orders of magnitude above the others' (≥ 10x at 32 B)",
              "out of scale in the inset", f"{sw.fams['ring'][0] * 1e6:.0f} µs at 32 B, {ring32:.0f}x the fastest "
              "other family", ring32 >= 10),
    ]
    alpha = sweep("torus:64x64", params=SWING_SST.with_(alpha=5e-7))
    a_over, (a_gain, a_size, a_other) = overtaken_from(alpha), max_gain(alpha)
    sensitivity = (f"Swing is best up to {fs(swing_best_until(alpha))}, "
                   + (f"{name(a_over[1])} wins from {fs(a_over[0])}" if a_over else "and wins at 512 MiB")
                   + f", and the largest gain is {pct(a_gain)} at {fs(a_size)} over {NAMES[a_other]}")
    rows, secs = packet_verdict("torus:16x16", [32, 32 * 1024, mib, 4 * mib, 8 * mib])
    method = (f"`python3 benchmarks/paper/swing_fig6.py`: `compare(torus:64x64, allreduce, 32B..512MiB, "
              f"SWING_SST)` (step model, adaptive routing, swing-sst parameters as they are: 400 Gb/s, 100 ns "
              f"links, 300 ns per hop, α = 0) over the paper's families (Swing, recursive doubling, ring, bucket; "
              f"each its best variant per size) plus mirrored recursive doubling, drawn but left out of the gain as "
              f"in the paper; {sw.seconds:.1f} s.")
    notes = (
        "Readings: \"best\" counts ties within 0.5 %; Swing is drawn as its best of Swing-L and Swing-B (the ring "
        "marks the switch, at "
        f"{fs(sw.sizes[sw.variants['swing'].index('bandwidth')])}). The paper's \"at most 81 % of peak\" does "
        f"not follow from its Ξ = 1.19 (1 / 1.19 = 84 %); our {frac * 100:.1f} % is what Ξ = 1.19 allows. Where the "
        "model and the paper part (the crossover to bucket, the place of the largest gain, the small-vector gain "
        "over latency-optimal recursive doubling) the swing-sst parameters "
        "have no per-message overhead (α = 0): bucket's 252 steps and recursive doubling's congested large "
        "messages cost less than in SST, which charges message injection and packetization per message. We do "
        "not fit α; as a sensitivity check only (not used in the table), with α = 0.5 µs per message "
        f"{sensitivity}.\n\n"
        "The packet engine cannot run the 64x64 torus within this script's budget (one simulation of bucket at "
        "32 B takes 30-60 s there), so its verdict is on a 16x16 torus, up to its crossover to bucket:\n\n"
        + verdict_table(rows, "torus:16x16", secs))
    write_claims("swing_fig6", "Swing Fig. 6: allreduce on a 64x64 torus", claims, method=method, notes=notes)


if __name__ == "__main__":
    main()
