"""The comparison figure: goodput versus vector size for every algorithm family, the reference family's gain
(Swing on grids, BFB on direct-connect topologies, MCF for all-to-all; :attr:`Comparison.gain_family`) and the
runtime of small vectors.

The figure is drawn for one column of a paper (:data:`COLUMN_WIDTH`, 3.5 in) and checked by looking at it
(docs/architecture.md, "Command line": figures a reader would put in a paper):

* the goodput axis is scaled to the curves, not to the peak: the peak goodput is drawn as a line when it is near
  the curves, else named in the legend ("above the axis"); it is logarithmic when the families' best goodputs
  span more than a decade (:func:`goodput_axis`);
* every mark is in the legend: each family's line and letter, and the hollow circle where a family's best variant
  changes (Swing: latency- to bandwidth-optimal); families whose curves coincide say so;
* the runtime of small vectors (µs) is its own panel below, where it covers no curve (the Swing paper's inset);
* the gain panel labels each bar with the letter of the best other family; when the gain is 0 at every size
  the panel says so instead of showing no bars.

Source: Swing (De Sensi et al., NSDI'24) Fig. 6 (goodput per size, the switch from latency- to
bandwidth-optimal marked, small-vector runtimes, the gain over the best-known algorithm with its one-letter
label).

>>> letter("swing"), letter("recursive-doubling"), letter("bfb"), letter("direct", "alltoall")
('S', 'D', 'F', 'P')
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import numpy as np

from directcoll.reports.compare import Comparison
from directcoll.reports.contenders import grouped_skips
from directcoll.reports.draw import figure_format
from directcoll.units import format_size

#: the figure's width, inches: one column of a two-column paper
COLUMN_WIDTH = 3.5
#: families' best goodputs spanning more than this ratio get a logarithmic goodput axis
LOG_SPAN = 10.0
#: the peak goodput is drawn as a line when at most this times the highest curve, else named in the legend
PEAK_SHOWN_UP_TO = 1.3
#: the small-vector panel shows sizes up to this many bytes
SMALL_VECTORS = 32 * 1024

_STYLE = {  # family -> (colour, marker, one-letter label as in the paper's figures)
    "swing": ("#d62728", "o", "S"),
    "recursive-doubling": ("#1f77b4", "s", "D"),
    "ring": ("#2ca02c", "^", "R"),
    "bucket": ("#9467bd", "D", "B"),
    "mirrored-recursive-doubling": ("#17becf", "v", "M"),
    "bfb": ("#ff7f0e", "*", "F"),
    "shifted-ring": ("#8c564b", "<", "H"),
    "double-binary-tree": ("#e377c2", ">", "T"),
    "generalized": ("#7f7f7f", "P", "G"),
    # broadcast and reduce (docs/algorithms.md "Broadcast and reduce"): Swing and BFB keep their colours
    "swing-tree": ("#d62728", "o", "S"),
    "bfb-tree": ("#ff7f0e", "*", "F"),
    "binomial": ("#bcbd22", "d", "N"),
    "chain": ("#2ca02c", "^", "C"),
    "rabenseifner-3-2": ("#bcbd22", "X", "E"),
    "swing-libswing": ("#ff9896", "h", "L"),
}
#: all-to-all families: (colour, marker, letter); direct and dor would both be "D" by their first letter
_ALLTOALL_STYLE = {
    "direct": ("#1f77b4", "s", "P"),
    "dor": ("#d62728", "o", "O"),
    "ewsp": ("#ff7f0e", "*", "E"),
    "sssp": ("#2ca02c", "^", "S"),
    "ilp-disjoint": ("#8c564b", "<", "I"),
    "mcf": ("#9467bd", "D", "M"),
}
#: the one-letter labels of the all-to-all families (the compare table uses the same)
ALLTOALL_LETTERS = {family: style[2] for family, style in _ALLTOALL_STYLE.items()}


def letter(family: str, collective: str | None = None) -> str:
    """The one-letter label of an algorithm family (the Swing paper's S, D, R, B; F for BFB, H for the shifted
    ring, T for the double binary tree, G for the generalized allreduce; for broadcast and reduce S and F again,
    N for the binomial tree, C for the chain; for all-to-all P direct, O DOR, E EwSP, S SSSP, I ILP-disjoint,
    M MCF).

    Args:
        family: the family's name; collective: ``alltoall`` selects the all-to-all letters.

    Returns:
        One character; the family's first letter, upper-cased, for an unknown family.

    Raises:
        Nothing: a table lookup with a fallback.

    Source: Swing (De Sensi et al., NSDI'24) Fig. 6 (one-letter labels).

    >>> letter("ring"), letter("mystery"), letter("dor", "alltoall")
    ('R', 'M', 'O')
    """
    return _style(family, 0, collective)[2]


def _style(family: str, i: int, collective: str | None = None):
    table = _ALLTOALL_STYLE if collective == "alltoall" else _STYLE
    fallback = (f"C{i % 10}", "x", family[:1].upper())
    return table.get(family, fallback)


def goodput_axis(curves: list[np.ndarray], peak: float) -> dict:
    """How to scale a goodput axis to its curves: ``scale`` (``linear``, or ``log`` when the curves' values span
    more than :data:`LOG_SPAN`: a size sweep's small vectors reach a thousandth of the peak, which a linear axis
    flattens into its bottom line), ``bottom`` and ``top``, and whether the ``peak`` fits (``peak_shown``: drawn as
    a line; otherwise the caller names it elsewhere).

    Args:
        curves: goodput arrays (any positive unit), one per family; peak: the peak goodput in the same unit.

    Returns:
        {"scale", "bottom", "top", "peak_shown"}.

    Raises:
        Nothing: arithmetic (non-positive values are ignored on a log axis).

    Source: docs/architecture.md, "Command line" ("y-axes scaled to the data, log where the data spans decades"); Swing
    (NSDI'24) Fig. 6.

    >>> import numpy as np
    >>> goodput_axis([np.array([1.0, 700.0]), np.array([1.0, 800.0])], 25_000.0)["peak_shown"]
    False
    >>> goodput_axis([np.array([1.0, 25_000.0]), np.array([1.0, 800.0])], 25_400.0)["scale"]
    'log'
    >>> goodput_axis([np.array([600.0, 700.0]), np.array([500.0, 800.0])], 900.0)["scale"]
    'linear'
    """
    tops = np.array([float(np.nanmax(c)) for c in curves if len(c)])
    high = float(tops.max()) if len(tops) else 1.0
    positive = np.concatenate([c[c > 0] for c in curves]) if curves else np.array([])
    if len(positive) and high / positive.min() > LOG_SPAN:
        shown = bool(peak) and peak <= 3 * high
        top = (max(high, peak) if shown else high) * 2.0
        return {"scale": "log", "bottom": float(positive.min()) / 2.0, "top": top, "peak_shown": shown}
    shown = bool(peak) and peak <= PEAK_SHOWN_UP_TO * high
    return {"scale": "linear", "bottom": 0.0, "top": (peak * 1.06 if shown else high * 1.08),
            "peak_shown": shown}


def _coinciding(curves: dict[str, np.ndarray]) -> dict[str, str]:
    """family -> an earlier family whose curve it covers exactly (drawn under it, named in the legend)."""
    out: dict[str, str] = {}
    names = list(curves)
    for i, fam in enumerate(names):
        for other in names[:i]:
            if other not in out and np.allclose(curves[fam], curves[other], rtol=1e-9, atol=0):
                out[fam] = other
                break
    return out


def _size_ticks(ax, sizes: np.ndarray, most: int = 7) -> None:
    ticks = sizes[:: max(1, -(-len(sizes) // most))]
    ax.set_xticks(ticks)
    ax.set_xticklabels([format_size(s) for s in ticks], rotation=45, ha="right", rotation_mode="anchor")
    ax.minorticks_off()


def plot_comparison(cmp: Comparison, path, title: str | None = None, fmt: str | None = None) -> Path:
    """Write the comparison figure, one column wide: goodput (Gb/s) of each family's best variant versus size,
    with the peak and the points where a family switches variant; the reference family's goodput gain over the
    best other algorithm, each bar labelled with that algorithm's letter; and the runtime of small vectors (µs).

    Args:
        cmp: the :class:`~directcoll.reports.compare.Comparison`; path: the file to write; title: optional.
        fmt: ``png``, ``pdf`` or ``svg`` (default: ``path``'s suffix, else png).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        DirectcollError: an unknown format, or one that contradicts ``path``'s suffix (:func:`figure_format`).
        Nothing else of ours: matplotlib's ImportError when it is not installed, OSError when ``path`` is
            unwritable.

    Source: Swing (De Sensi et al., NSDI'24) Fig. 6 and Sec. 5.1.1.

    >>> import os, tempfile
    >>> from directcoll.reports.compare import compare
    >>> from directcoll.topology import parse
    >>> c = compare(parse("torus:4x4"), sizes=[32, 2**20])
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     open(plot_comparison(c, os.path.join(tmp, "c.svg")), encoding="utf-8").read(5)
    '<?xml'
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker
    from matplotlib.lines import Line2D

    path = Path(path)
    fmt = figure_format(path, fmt, "--plot") if fmt is not None or path.suffix else "png"
    coll = cmp.collective
    fams = cmp.families()
    reference = cmp.gain_family
    gain = cmp.gain(reference) if reference else None
    sizes = cmp.sizes
    small = sizes <= SMALL_VECTORS
    show_small = bool(small.sum() >= 2)
    heights = [2.5] + ([1.0] if gain is not None else []) + ([1.25] if show_small else [])
    with plt.rc_context({"font.size": 7, "axes.titlesize": 7, "axes.labelsize": 7, "xtick.labelsize": 6,
                         "ytick.labelsize": 6, "legend.fontsize": 6}):
        fig = plt.figure(figsize=(COLUMN_WIDTH, 1.4 + sum(heights)), layout="constrained")
        grid = fig.add_gridspec(len(heights), 1, height_ratios=heights)
        ax = fig.add_subplot(grid[0])
        axg = fig.add_subplot(grid[1], sharex=ax) if gain is not None else None
        axs = fig.add_subplot(grid[len(heights) - 1]) if show_small else None
        curves = {fam: sizes / times * 8 / 1e9 for fam, (times, _) in fams.items()}
        same = _coinciding(curves)
        handles = []
        for i, (fam, (_, variants)) in enumerate(fams.items()):
            colour, marker, tag = _style(fam, i, coll)
            gp = curves[fam]
            label = f"{fam} ({tag})" + (f" = {same[fam]}" if fam in same else "")
            (line,) = ax.plot(sizes, gp, marker=marker, color=colour, ms=3, lw=1.1, label=label,
                              zorder=2 if fam in same else 3)
            handles.append(line)
            switches = [j for j in range(1, len(variants)) if variants[j] != variants[j - 1]]
            ax.plot(sizes[switches], gp[switches], "o", color=colour, ms=7, mfc="none", mew=1.2, zorder=4)
        if any(len({*variants}) > 1 for _, variants in fams.values()):
            handles.append(Line2D([], [], ls="none", marker="o", ms=7, mfc="none", mew=1.2, color="0.3",
                                  label="switches variant (e.g. latency-\nto bandwidth-optimal)"))
        peak = cmp.peak_goodput * 8 / 1e9
        axis = goodput_axis(list(curves.values()), peak)
        ax.set_yscale(axis["scale"])
        ax.set_ylim(axis["bottom"], axis["top"])
        if axis["peak_shown"]:
            handles.append(ax.axhline(peak, color="0.4", ls="--", lw=0.8, label=f"peak {peak:,.0f} Gb/s"))
        if cmp.bound_times is not None:
            bound = sizes / cmp.bound_times * 8 / 1e9
            if bound.max() <= axis["top"]:
                handles.append(ax.plot(sizes, bound, color="k", ls=":", lw=1, label="MCF bound (ideal schedule)")[0])
        if not axis["peak_shown"]:  # a legend entry without a mark: it covers no curve
            handles.append(Line2D([], [], ls="none", label=f"peak {peak:,.0f} Gb/s: above the axis"))
        ax.set_ylabel("goodput (Gb/s)" + (", log scale" if axis["scale"] == "log" else ""))
        ax.set_xscale("log", base=2)
        _size_ticks(ax, sizes)
        xlabel = "vector size" if coll != "alltoall" else "send buffer per rank"
        if axg is None:
            ax.set_xlabel(xlabel)
        else:
            ax.tick_params(labelbottom=False)
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.01), ncol=2, frameon=False,
                  handlelength=1.8, columnspacing=1.0, borderaxespad=0.0)
        fig.suptitle(title or f"{coll} on {cmp.topology}", fontsize=8)
        fig.supxlabel(caption(cmp), fontsize=5, ha="left", x=0.02, color="0.25")
        if axg is not None:
            _gain_panel(axg, cmp, gain, reference, sizes)
            axg.set_xlabel(xlabel)
        if axs is not None:
            for i, (fam, (times, _)) in enumerate(fams.items()):
                colour, marker, _ = _style(fam, i, coll)
                axs.plot(sizes[small], times[small] * 1e6, marker=marker, color=colour, ms=2.5, lw=1)
            axs.set_xscale("log", base=2)
            axs.set_yscale("log")
            span = max(t[small].max() for t, _ in fams.values()) / min(t[small].min() for t, _ in fams.values())
            axs.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0) if span < 100 else (1.0,)))
            axs.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            axs.yaxis.set_minor_formatter(ticker.NullFormatter())
            axs.set_ylabel("time (µs), log scale")
            axs.set_xlabel(f"{xlabel}, small vectors")
            _size_ticks(axs, sizes[small], 6)
            axs.grid(True, which="major", alpha=0.3)
        fig.savefig(path, format=fmt, dpi=300)
        plt.close(fig)
    return path


def _parameters(params) -> str:
    """The network parameters in a few words: link rate and latency, per-hop latency, α, γ."""
    from directcoll.units import format_bandwidth, format_time

    parts = []
    if params.link_bandwidth:
        parts.append(f"links {format_bandwidth(params.link_bandwidth)}")
    if params.link_latency is not None:
        parts.append(f"{format_time(params.link_latency)} per link")
    parts.append(f"{format_time(params.per_hop_latency)} per hop" if params.per_hop_latency else "no hop latency")
    parts.append(f"α {format_time(params.alpha)}" if params.alpha else "α 0")
    if params.gamma:
        parts.append(f"γ {params.gamma * 1e9:.3g} ns/B")
    return ", ".join(parts)


def caption(cmp: Comparison, width: int = 96) -> str:
    """The figure's caption: the tie tolerance, the sizes where the winner ties, and every contender that did not
    run with its kind (wrapped to ``width`` characters).

    Returns:
        The text (lines joined by newlines).

    Raises:
        Nothing: formatting.

    Source: docs/compare.md, "Ties" and "Contenders: a visible policy".

    >>> from directcoll.reports.compare import compare
    >>> from directcoll.topology import parse
    >>> print(caption(compare(parse("torus:4x4"), sizes=[32], contenders=["swing", "bfb-tree"])))
    ... # doctest: +NORMALIZE_WHITESPACE
    Step model, adaptive routing, parameters swing-sst (links 400 Gb/s, 100 ns per link, 300 ns per hop, α 0).
    Ties: times within 0.5 % of the fastest; none at these sizes. Not run: bfb-tree (shape).
    """
    ties = [(s, t) for s, t in zip(cmp.sizes, cmp.ties(), strict=True) if len(t) > 1]
    tol = f"{cmp.tie_tolerance * 100:.2g} %"
    conditions = cmp.conditions()
    model = (f"{conditions[0].upper()}{conditions[1:]}, parameters {cmp.params.name} "
             f"({_parameters(cmp.params)}). ")
    if ties:
        where = "; ".join(f"{format_size(s)}: {' = '.join(t)}" for s, t in ties[:4])
        more = f" and {len(ties) - 4} more sizes" if len(ties) > 4 else ""
        text = f"{model}Ties: times within {tol} of the fastest; {where}{more}."
    else:
        text = f"{model}Ties: times within {tol} of the fastest; none at these sizes."
    if cmp.skipped:
        names: dict[str, list[str]] = {}
        for name, kind, _reason in grouped_skips(cmp.skipped):
            names.setdefault(kind, []).append(name)
        text += " Not run: " + "; ".join(f"{', '.join(v)} ({kind})" for kind, v in names.items()) + "."
    return "\n".join(textwrap.wrap(text, width))


def _gain_panel(axg, cmp: Comparison, gain: np.ndarray, reference: str, sizes: np.ndarray) -> None:
    """The reference family's gain per size, bars labelled with the best other family's letter; a sentence
    instead of bars when the gain is 0 at every size."""
    name = {"swing": "Swing", "mcf": "MCF", "bfb": "BFB", "ewsp": "EwSP"}.get(reference, reference)
    others = cmp.best_other(reference)
    pct = np.nan_to_num(gain * 100)  # NaN: every family ties at that size, drawn as 0 and labelled "="
    axg.axhline(0, color="0.3", lw=0.6)
    if np.all(np.abs(pct) < 0.05):
        tied = ", ".join(dict.fromkeys(f"{letter(o, cmp.collective)} {o}" for o in others if o is not None))
        axg.text(0.5, 0.5, textwrap.fill(f"gain 0 % at every size: {name} is as fast as the best other "
                                         f"({tied})", 56), transform=axg.transAxes, ha="center", va="center",
                 fontsize=6, bbox={"facecolor": "white", "edgecolor": "none"})
        axg.set_ylim(-1, 1)
        axg.set_yticks([0])
        axg.set_ylabel(f"{name} gain (%)")
        return
    axg.set_ylabel(f"{name} gain (%)\nover best other\noutside its tie")
    colour = np.where(pct >= 0, _style(reference, 0, cmp.collective)[0], "0.55")
    axg.bar(sizes, pct, width=sizes * 0.5, color=colour, align="center")
    lo, hi = min(pct.min(), 0), max(pct.max(), 0)
    pad = 0.04 * max(hi - lo, 10)
    for s, g, other in zip(sizes, pct, others, strict=True):
        axg.text(s, g + (pad if g >= 0 else -pad), "=" if other is None else letter(other, cmp.collective),
                 ha="center",
                 va="bottom" if g >= 0 else "top", fontsize=5)
    axg.set_ylim(lo - 5 * pad, hi + 6 * pad)
    axg.grid(True, axis="y", alpha=0.3)
