"""The comparison figure: goodput versus vector size for every algorithm family, and the reference family's
gain (Swing on grids, BFB on direct-connect topologies; :attr:`Comparison.gain_family`).

Source: Swing (De Sensi et al., NSDI'24) Fig. 6 (goodput per size, the switch from latency- to
bandwidth-optimal marked, an inset of small-vector runtimes, the gain over the best-known algorithm with its
one-letter label).

>>> letter("swing"), letter("recursive-doubling"), letter("bfb")
('S', 'D', 'F')
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from directcoll.reports.compare import Comparison
from directcoll.units import format_size

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
    "rabenseifner-3-2": ("#bcbd22", "X", "E"),
    "swing-libswing": ("#ff9896", "h", "L"),
}


def letter(family: str) -> str:
    """The one-letter label of an algorithm family (the Swing paper's S, D, R, B; F for BFB, H for the shifted
    ring, T for the double binary tree, G for the generalized allreduce).

    Returns:
        One character; the family's first letter, upper-cased, for an unknown family.

    Raises:
        Nothing: a table lookup with a fallback.

    Source: Swing (De Sensi et al., NSDI'24) Fig. 6 (one-letter labels).

    >>> letter("ring"), letter("mystery")
    ('R', 'M')
    """
    return _style(family, 0)[2]


def _style(family: str, i: int):
    fallback = (f"C{i % 10}", "x", family[:1].upper())
    return _STYLE.get(family, fallback)


def plot_comparison(cmp: Comparison, path, title: str | None = None) -> Path:
    """Write a two-panel PNG: goodput (Gb/s) per family's best variant versus size, with the peak and the
    points where a family switches variant (Swing: latency- to bandwidth-optimal); below it, the reference
    family's goodput gain over the best other algorithm (Swing on grids, BFB on direct-connect topologies),
    each point labelled with that algorithm's letter.

    Args:
        cmp: the :class:`~directcoll.reports.compare.Comparison`; path: the PNG to write; title: optional.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        Nothing of ours: matplotlib's ImportError when it is not installed, OSError when ``path`` is unwritable.

    Source: Swing (De Sensi et al., NSDI'24) Fig. 6 and Sec. 5.1.1.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker

    fams = cmp.families()
    reference = cmp.gain_family
    gain = cmp.gain(reference) if reference else None
    sizes = cmp.sizes
    fig, (ax, axg) = plt.subplots(2, 1, figsize=(8, 7), sharex=True, gridspec_kw={"height_ratios": [3, 1.3]},
                                  constrained_layout=True)
    for i, (fam, (times, variants)) in enumerate(fams.items()):
        colour, marker, tag = _style(fam, i)
        gp = sizes / times * 8 / 1e9
        ax.plot(sizes, gp, marker=marker, color=colour, ms=4, lw=1.6, label=f"{fam} ({tag})")
        switches = [j for j in range(1, len(variants)) if variants[j] != variants[j - 1]]
        for j in switches:
            ax.plot(sizes[j], gp[j], "o", color=colour, ms=10, mfc="none", mew=2)
    ax.axhline(cmp.peak_goodput * 8 / 1e9, color="0.4", ls="--", lw=1)
    ax.text(sizes[-1], cmp.peak_goodput * 8 / 1e9, "peak goodput ", va="bottom", ha="right", fontsize=8,
            color="0.3")
    ax.set_ylabel("goodput (Gb/s)")
    ax.set_xscale("log", base=2)
    ax.set_ylim(bottom=0)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=min(len(fams), 4), fontsize=9, frameon=False)
    small = sizes <= 32 * 1024
    if small.any():  # the inset of small-vector runtimes, when the sweep has any
        inset = ax.inset_axes([0.08, 0.5, 0.34, 0.42])
        for i, (fam, (times, _)) in enumerate(fams.items()):
            colour, marker, _ = _style(fam, i)
            inset.plot(sizes[small], times[small] * 1e6, marker=marker, color=colour, ms=3, lw=1.2)
        inset.set_xscale("log", base=2)
        inset.set_yscale("log")
        inset.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        inset.yaxis.set_minor_formatter(ticker.NullFormatter())
        inset.set_title("runtime of small vectors (us)", fontsize=8)
        inset.tick_params(labelsize=7)
        small_ticks = sizes[small][:: max(1, int(small.sum()) // 4)]
        inset.set_xticks(small_ticks)
        inset.set_xticklabels([format_size(v) for v in small_ticks])
        inset.grid(True, which="major", alpha=0.3)
    fig.suptitle(title or f"{cmp.collective} on {cmp.topology} ({cmp.params.name} parameters, {cmp.routing} "
                          f"routing, {cmp.model} model)", fontsize=10)
    if gain is not None:
        others = cmp.best_other(reference)
        pct = gain * 100
        axg.axhline(0, color="0.3", lw=0.8)
        colour = np.where(pct >= 0, _style(reference, 0)[0], "0.55")
        axg.bar(sizes, pct, width=sizes * 0.5, color=colour, align="center")
        lo, hi = min(pct.min(), 0), max(pct.max(), 0)
        pad = 0.04 * max(hi - lo, 10)  # labels stay inside the axes, also when every gain is 0
        for s, g, other in zip(sizes, pct, others, strict=True):
            axg.text(s, g + (pad if g >= 0 else -pad), letter(other), ha="center",
                     va="bottom" if g >= 0 else "top", fontsize=7)
        axg.set_ylim(lo - 5 * pad, hi + 6 * pad)
        axg.set_ylabel(f"{'Swing' if reference == 'swing' else reference.upper()} gain (%)\nvs best other")
    axg.set_xscale("log", base=2)
    ticks = sizes[:: max(1, len(sizes) // 9)]
    axg.set_xticks(ticks)
    axg.set_xticklabels([format_size(s) for s in ticks], rotation=30, fontsize=8)
    axg.set_xlabel("vector size")
    axg.grid(True, axis="y", alpha=0.3)
    path = Path(path)
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path
