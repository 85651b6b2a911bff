"""Schedules you can see: steps of a schedule drawn on its network, one small panel per step ("step k").

Nodes sit at their grid positions on tori, meshes, HyperX and HammingMesh (1D tori and rings on a line, as in the
Swing paper's Fig. 1) and on a circle on every other topology (circulants, Kautz graphs, ...), see
:mod:`directcoll.reports.layout`. Every pair of ranks that talk in the step gets one arrow, with a head at the
peer of each transfer (two heads: they exchange); it runs straight, along the middle of its cable where there is
one, and bends where it would cross another node. Every cable carries one lane per direction, on the right-hand
side of that direction, coloured by the bytes the directed link carries in the step, on one colour scale for all
panels; the step's busiest link is outlined in black (when at most three links tie for it; the caption says how
many tie). Wrap-around links and transfers of tori leave one edge of the grid and come back at the opposite one;
the paper's figures leave them out.

On a graph drawn on a circle whose ranks have four or more neighbours (circulants of degree >= 4, Kautz graphs,
expansions), cables and lanes would merge into one band; there each step is drawn as its link-load matrix instead
(``view="matrix"``, the default ``"auto"`` chooses): row u, column v coloured by the bytes of the directed link
u -> v, a dot where rank u sends to v, the busiest link outlined.

Source: Swing (De Sensi et al., NSDI'24) Fig. 1 (steps on a 1D torus, arcs between communicating nodes) and Fig.
4 (the first step on a 4x4 torus); docs/architecture.md, "Cost and simulation" (a step's bytes on every directed link).

>>> import os, tempfile
>>> from directcoll.algorithms.ring import build_ring
>>> from directcoll.topology import parse
>>> t = parse("torus:2x3")
>>> with tempfile.TemporaryDirectory() as tmp:
...     os.path.getsize(draw_steps(build_ring(t), t, os.path.join(tmp, "ring.png"), steps=[0, 1])) > 0
True
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np

from directcoll.errors import DirectcollError
from directcoll.reports.layout import NODE_RADIUS, Layout, arrow_pieces, layout, link_pieces
from directcoll.reports.steps import check_ranks, link_label, step_view
from directcoll.schedule.ir import Schedule
from directcoll.topology.model import Topology
from directcoll.units import format_size

#: the most panels (steps) one picture holds
MAX_PANELS = 64
#: a panel draws at most this many arrows (pairs of ranks); above it the link loads alone are drawn
MAX_ARROWS = 2048
#: output formats :func:`draw_steps` writes
FORMATS = ("png", "pdf", "svg")

_ARROW = "#1d3557"
_CMAP = ("YlOrRd", 0.28, 0.9)  # colour map and the part used (light yellow is invisible on white, dark red on black)


def figure_format(path, fmt: str | None = None, flag: str = "-o") -> str:
    """The format a figure is written in: ``fmt`` when given, else ``path``'s suffix; one of :data:`FORMATS`.

    Args:
        path: the file; fmt: ``png``, ``pdf``, ``svg`` or None; flag: the option naming ``path``, for messages.

    Returns:
        ``png``, ``pdf`` or ``svg``.

    Raises:
        DirectcollError: a format or suffix not in :data:`FORMATS` (no ``fmt`` and a path without a suffix
            included), or a ``fmt`` that contradicts the suffix (``fig.png`` with ``pdf``).

    Source: docs/architecture.md, "Command line" ("--format pdf|svg|png"); matplotlib's ``savefig`` formats.

    >>> figure_format("fig.PDF"), figure_format("fig", "svg")
    ('pdf', 'svg')
    >>> figure_format("fig.png", "pdf")
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: -o 'fig.png' ends in .png but --format says pdf; give one format (png, pdf, svg)
    """
    suffix = Path(path).suffix.lstrip(".").lower()
    if fmt is not None and fmt not in FORMATS:
        raise DirectcollError(f"--format {fmt!r}: accepted: {', '.join(FORMATS)}")
    if fmt is not None and suffix and suffix != fmt:
        raise DirectcollError(f"{flag} {str(path)!r} ends in .{suffix} but --format says {fmt}; give one format "
                              f"({', '.join(FORMATS)})")
    chosen = fmt or suffix
    if chosen not in FORMATS:
        raise DirectcollError(f"{flag} {str(path)!r}: cannot tell the format from the suffix; end it in .png, .pdf or "
                              ".svg, or give --format")
    return chosen


def _columns(panels: int, style: str) -> int:
    if style == "line":
        return 1
    return panels if panels <= 3 else 2 if panels == 4 else 3 if panels in (5, 6, 9) else 4


def draw_steps(schedule: Schedule, topology: Topology, path, *, steps=None, size: float = 2**20,
               routing: str = "adaptive", fmt: str | None = None, columns: int | None = None,
               title: str | None = None, view: str = "auto") -> Path:
    """Draw steps of ``schedule`` on ``topology``, one panel per step ("step k"), and write the picture.

    Args:
        schedule: the schedule; its ranks must be the topology's compute nodes.
        topology: the network (at most :data:`MAX_NODES` compute nodes).
        path: the file to write.
        steps: the step indices to draw (default all; at most :data:`MAX_PANELS`).
        size: the vector size in bytes the link loads are coloured for (default 1 MiB).
        routing: ``adaptive`` or ``dor``, for transfers without an explicit route.
        fmt: ``png``, ``pdf`` or ``svg`` (default: ``path``'s suffix, else png).
        columns: panels per row (default: 1 to 4 by the number of panels).
        title: the figure's title (default: algorithm, collective, topology and size).
        view: ``network`` (the network's drawing), ``matrix`` (each step's link-load matrix) or ``auto``:
            matrix on circle layouts whose ranks have four or more neighbours (:func:`dense`), network otherwise.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        DirectcollError: too many nodes or panels, a step out of range, no step, an unknown view, an unknown format
            or one that contradicts ``path``'s suffix (:func:`figure_format`).
        TopologyError, ResourceError: as :func:`directcoll.reports.steps.step_view` (ranks that are not the
            topology's compute nodes, a routing the topology cannot do).

    Source: Swing (De Sensi et al., NSDI'24) Figs. 1 and 4 (a schedule's steps drawn on the network);
    docs/architecture.md, "Cost and simulation" (a step's bytes on every directed link).
    """
    if view not in VIEWS:
        raise DirectcollError(f"unknown view {view!r}; accepted: {', '.join(VIEWS)}")
    check_ranks(schedule, topology)
    lay = layout(topology)
    matrix = view == "matrix" or (view == "auto" and dense(topology, lay))
    nsteps = schedule.num_steps
    steps = list(range(nsteps)) if steps is None else [int(k) for k in steps]
    if not steps:
        raise DirectcollError("no step to draw: the schedule has no transfers" if not nsteps else
                              "no step to draw; give --steps 0,1,... or all")
    bad = [k for k in steps if not 0 <= k < nsteps]
    if bad:
        raise DirectcollError(f"step {bad[0]} is out of range: the schedule has {nsteps} steps (0..{nsteps - 1})")
    if len(steps) > MAX_PANELS:
        raise DirectcollError(f"{len(steps)} steps would make {len(steps)} panels; a picture holds at most "
                              f"{MAX_PANELS} (choose some with --steps, e.g. 0,1,2,3)")
    path = Path(path)
    fmt = figure_format(path, fmt) if fmt is not None or path.suffix else "png"
    views = [step_view(schedule, topology, k, size, routing) for k in steps]
    ncol = columns or _columns(len(steps), "grid" if matrix else lay.style)
    fig = (_matrix_figure(schedule, topology, views, size, ncol, title) if matrix else
           _figure(schedule, topology, lay, views, size, ncol, title))
    import matplotlib.pyplot as plt

    fig.savefig(path, format=fmt, dpi=200)
    plt.close(fig)
    return path


#: the views of :func:`draw_steps`
VIEWS = ("auto", "network", "matrix")


def dense(topology: Topology, lay: Layout) -> bool:
    """Whether :func:`draw_steps` draws ``topology`` as matrices by default: laid on a circle (no grid) with a rank
    of four or more distinct neighbours, where lanes and arrows would merge into one band.

    Raises:
        Nothing: reads the topology.

    Source: docs/schedule.md, "Seeing a schedule".

    >>> from directcoll.topology import parse
    >>> t = parse("circulant:16:3,4")
    >>> dense(t, layout(t)), dense(parse("torus:4x4"), layout(parse("torus:4x4")))
    (True, False)
    """
    if lay.style != "circle":
        return False
    n = topology.num_compute
    inside = (topology.link_src < n) & (topology.link_dst < n) & (topology.link_src != topology.link_dst)
    pairs = np.unique(topology.link_src[inside] * n + topology.link_dst[inside])
    return bool(len(pairs) and np.bincount(pairs // n, minlength=n).max() >= 4)


def _matrix_figure(schedule: Schedule, topology: Topology, views: list, size: float, ncol: int,
                   title: str | None):
    """One link-load matrix per step: rows send, columns receive; dots for transfers; the busiest outlined."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LinearSegmentedColormap, Normalize
    from matplotlib.patches import Rectangle

    n = topology.num_compute
    nrow = math.ceil(len(views) / ncol)
    pw = 2.1 if ncol > 1 else 3.0
    fw = max(ncol * (pw + 0.35) + 0.3, 3.4)
    chars = int(fw * 72 / 4.0)
    heading = textwrap.fill(title or _title(schedule, topology, [v.step for v in views], size), int(chars * 0.75))
    notes = textwrap.fill("Row u, column v: the bytes the directed link u -> v carries in the step (white: none); "
                          "a dot where rank u sends to rank v (a transfer over more hops puts its bytes on the "
                          "links of its route).", int(chars * 1.12))
    top_h = 0.16 + 0.17 * (heading.count("\n") + 1)
    row_h = 0.25 + pw + 0.6                                      # title, matrix, tick labels + axis label + caption
    foot_h = 0.78 + 0.11 * (notes.count("\n") + 1)
    fh = top_h + nrow * row_h + foot_h
    fig = plt.figure(figsize=(fw, fh))
    base = plt.get_cmap(_CMAP[0])
    cmap = LinearSegmentedColormap.from_list("load", base(np.linspace(_CMAP[1], _CMAP[2], 256))).with_extremes(
        bad="white")
    norm = Normalize(0.0, max(float(v.loads.max(initial=0.0)) for v in views) or 1.0)
    inside = (topology.link_src < n) & (topology.link_dst < n)
    ticks = np.arange(0, n, max(1, math.ceil(n / 8)))
    left = (fw - ncol * (pw + 0.35)) / 2 + 0.3
    for i, view in enumerate(views):
        r, c = divmod(i, ncol)
        bottom = fh - top_h - (r + 1) * row_h + 0.6
        ax = fig.add_axes([(left + c * (pw + 0.35)) / fw, bottom / fh, pw / fw, pw / fh])
        grid = np.zeros((n, n))
        np.add.at(grid, (topology.link_src[inside], topology.link_dst[inside]), view.loads[inside])
        ax.imshow(np.ma.masked_equal(grid, 0.0), cmap=cmap, norm=norm, interpolation="nearest")
        talk = view.src != view.dst
        ax.plot(view.dst[talk], view.src[talk], ".", color=_ARROW, ms=max(1.0, 40.0 / n), zorder=3)
        marked = _marked(view)
        for k in marked if len(marked) <= 8 else ():  # more ties than that: the caption counts them
            if topology.link_src[k] < n and topology.link_dst[k] < n:
                ax.add_patch(Rectangle((topology.link_dst[k] - 0.5, topology.link_src[k] - 0.5), 1, 1, fill=False,
                                       edgecolor="black", lw=1.0, zorder=4))
        ax.set_xticks(ticks)
        ax.set_yticks(ticks)
        ax.tick_params(labelsize=5.5, length=2, pad=1)
        ax.set_xlabel("to rank", fontsize=6, labelpad=1)
        ax.set_ylabel("from rank", fontsize=6, labelpad=1)
        ax.set_title(f"step {view.step}", fontsize=8, pad=2)
        ax.text(0.5, -0.4 / pw, _caption(topology, view), transform=ax.transAxes, ha="center", va="top", fontsize=6)
    fig.suptitle(heading, fontsize=9, y=1 - 0.08 / fh, va="top")
    _footer(fig, fw, fh, cmap, norm, notes, any(0 < len(_marked(v)) <= 8 for v in views), matrix=True)
    return fig


def _marked(view) -> np.ndarray:
    """The busiest links to outline: all that tie for the most bytes, unless every loaded link does (a balanced
    step has no busiest link to point at)."""
    top = view.busiest_links
    return top if len(top) < int((view.loads > 0).sum()) else top[:0]


def _caption(topology: Topology, view) -> str:
    top = view.busiest
    if top < 0:
        return "no link carries data"
    ties = len(view.busiest_links)
    load = format_size(view.loads[top])
    if not len(_marked(view)):
        return f"all {ties} loaded links carry {load}" if ties > 1 else f"one link carries {load}"
    if ties > 1:
        return f"busiest: {ties} links, {load} each"
    return f"busiest {link_label(topology, top)}: {load}"


def _title(schedule: Schedule, topology: Topology, steps: list[int], size: float) -> str:
    meta = schedule.meta
    how = [str(meta["variant"])] if meta.get("variant") else []
    if meta.get("ports"):
        how.append(f"{meta['ports']} port{'s' if meta['ports'] != 1 else ''}")
    n = schedule.num_steps
    which = "" if steps == list(range(n)) else (
        f", steps {steps[0]}-{steps[-1]} of {n}" if steps == list(range(steps[0], steps[-1] + 1)) and len(steps) > 1
        else f", {len(steps)} of {n} steps")
    return (f"{schedule.algorithm}{' (' + ', '.join(how) + ')' if how else ''} {schedule.collective.value} on "
            f"{topology.spec}, {format_size(size)} vector{which}")


def _notes(topology: Topology, lay: Layout) -> str:
    notes = ["Arrows point from rank to peer (two heads: both ways). A cable has one lane per direction, on the "
             "right of that direction."]
    if lay.wrap is not None:
        notes.append("Wrap-around links and transfers leave one edge and re-enter at the opposite one.")
    if lay.stub:
        notes.append("Stubs are links to the row (west, east) and column (north, south) switches.")
    if lay.style == "circle":
        notes.append("Ranks run clockwise from the top" + (", switches on the inner circle." if topology.num_nodes
                                                           > topology.num_compute else "."))
    return " ".join(notes)


def _figure(schedule: Schedule, topology: Topology, lay: Layout, views: list, size: float, ncol: int,
            title: str | None):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LinearSegmentedColormap, Normalize

    span = max((lay.span(int(a), int(b)) for v in views for a, b in zip(v.src, v.dst, strict=True) if a != b),
               default=0.0) if lay.style == "line" else 0.0
    x0, x1, y0, y1 = lay.extent(span)
    ex, ey = x1 - x0, y1 - y0
    nrow = math.ceil(len(views) / ncol)
    if lay.style == "line":
        pw = min(7.0, max(3.4, 0.42 * topology.num_compute))
    else:
        pw = 1.75 if ncol > 1 else 2.6
    ph = pw * ey / ex
    fw = max(ncol * pw + 0.2, 3.4)
    chars = int(fw * 72 / 4.0)                                   # ~4 pt per character at 6-9 pt
    heading = textwrap.fill(title or _title(schedule, topology, [v.step for v in views], size), int(chars * 0.75))
    notes = textwrap.fill(_notes(topology, lay), int(chars * 1.12))
    top_h = 0.16 + 0.17 * (heading.count("\n") + 1)
    row_h = 0.2 + ph + 0.2                                       # title, panel, caption
    foot_h = 0.78 + 0.11 * (notes.count("\n") + 1)               # colour bar, legend, notes
    fh = top_h + nrow * row_h + foot_h
    fig = plt.figure(figsize=(fw, fh))
    base = plt.get_cmap(_CMAP[0])
    cmap = LinearSegmentedColormap.from_list("load", base(np.linspace(_CMAP[1], _CMAP[2], 256)))
    norm = Normalize(0.0, max(float(v.loads.max(initial=0.0)) for v in views) or 1.0)
    ppu = pw * 72 / ex                                           # points per grid unit
    geometry = _geometry(topology, lay)
    left = (fw - ncol * pw) / 2
    for i, view in enumerate(views):
        r, c = divmod(i, ncol)
        bottom = fh - top_h - (r + 1) * row_h + 0.2
        ax = fig.add_axes([(left + c * pw) / fw, bottom / fh, pw / fw, ph / fh])
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
        ax.set_aspect("equal")
        ax.axis("off")
        _panel(ax, topology, lay, view, geometry, cmap, norm, ppu)
        ax.set_title(f"step {view.step}", fontsize=8, pad=2)
    fig.suptitle(heading, fontsize=9, y=1 - 0.08 / fh, va="top")
    _footer(fig, fw, fh, cmap, norm, notes, any(len(_marked(v)) for v in views))
    return fig


def _geometry(topology: Topology, lay: Layout) -> tuple[dict, list, set]:
    """Lanes per drawn link, the cables' centre lines, and the pairs of nodes joined by a cable."""
    stubbed = np.zeros(topology.num_links, bool)
    stubbed[list(lay.stub)] = True
    drawn = (lay.shown[topology.link_src] & lay.shown[topology.link_dst]) | stubbed
    lanes = {int(k): link_pieces(lay, topology, int(k)) for k in np.flatnonzero(drawn)}
    cables, pairs = [], set()
    for k in lanes:
        pair = tuple(sorted((int(topology.link_src[k]), int(topology.link_dst[k]))))
        if pair not in pairs:
            pairs.add(pair)
            cables += link_pieces(lay, topology, k, 0.0)
    return lanes, cables, pairs


def _panel(ax, topology: Topology, lay: Layout, view, geometry, cmap, norm, ppu: float) -> None:
    from matplotlib.collections import LineCollection, PatchCollection
    from matplotlib.patches import ArrowStyle, Circle, FancyArrowPatch, Rectangle
    from matplotlib.path import Path as MPath

    lanes, cables, cabled = geometry
    n, r = topology.num_compute, NODE_RADIUS
    lane_w = 0.085 * ppu
    ax.add_collection(LineCollection(cables, colors="#cfcfcf", linewidths=0.03 * ppu, zorder=1))
    loaded = [k for k in lanes if view.loads[k] > 0]
    marked = [int(k) for k in _marked(view) if int(k) in lanes]
    if marked:
        ax.add_collection(LineCollection([line for k in marked for line in lanes[k]], colors="black",
                                         linewidths=lane_w + 1.6, zorder=2, capstyle="butt"))
    ax.add_collection(LineCollection([line for k in loaded for line in lanes[k]], zorder=3, capstyle="butt",
                                     colors=[cmap(norm(view.loads[k])) for k in loaded for _ in lanes[k]],
                                     linewidths=lane_w))
    ways = {(int(s), int(d)) for s, d in zip(view.src.tolist(), view.dst.tolist(), strict=True) if s != d}
    pairs = sorted({(min(w), max(w)) for w in ways})
    head = {"head_length": 0.13 * ppu, "head_width": 0.055 * ppu}
    if len(pairs) <= MAX_ARROWS:
        for a, b in pairs:
            for ctrl, style in arrow_pieces(lay, a, b, (a, b) in ways, (b, a) in ways, (a, b) in cabled):
                ax.add_patch(FancyArrowPatch(path=MPath(ctrl, [MPath.MOVETO, MPath.CURVE3, MPath.CURVE3]),
                                             arrowstyle=ArrowStyle(style, **head) if style != "-" else "-",
                                             mutation_scale=1, lw=0.028 * ppu, color=_ARROW, zorder=5))
    shown = np.flatnonzero(lay.shown)
    shapes = [Circle(lay.pos[u], r) if u < n else Rectangle(lay.pos[u] - 0.8 * r, 1.6 * r, 1.6 * r) for u in shown]
    ax.add_collection(PatchCollection(shapes, facecolor="white", edgecolor="#333333", linewidths=0.025 * ppu,
                                      zorder=6))
    font = min(7.0, r * ppu * (0.95 if n <= 100 else 0.75))
    if font >= 3.0:
        for u in shown[shown < n]:
            ax.text(*lay.pos[u], str(u), ha="center", va="center", fontsize=font, zorder=7)
    caption = _caption(topology, view)
    if len(pairs) > MAX_ARROWS:
        caption += f"; {len(pairs)} pairs talk, arrows left out"
    ax.text(0.5, -0.01, caption, transform=ax.transAxes, ha="center", va="top", fontsize=6)


def _footer(fig, fw: float, fh: float, cmap, norm, notes: str, busiest: bool, matrix: bool = False) -> None:
    import matplotlib.pyplot as plt
    from matplotlib import patheffects
    from matplotlib.legend_handler import HandlerPatch
    from matplotlib.lines import Line2D
    from matplotlib.patches import FancyArrowPatch

    nlines = notes.count("\n") + 1
    base = 0.06 + 0.11 * nlines
    cbar_w = min(fw * 0.7, 3.0)
    cax = fig.add_axes([(fw - cbar_w) / 2 / fw, (base + 0.52) / fh, cbar_w / fw, 0.09 / fh])
    bar = fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), cax=cax, orientation="horizontal")
    vmax = norm.vmax
    unit, name = next((u, nm) for u, nm in ((2**30, "GiB"), (2**20, "MiB"), (2**10, "KiB"), (1, "B"))
                      if vmax >= u or u == 1)
    step = 2.0 ** math.ceil(math.log2(vmax / unit / 5))      # binary sizes: ticks at 32KiB, 64KiB, ...
    ticks = np.arange(0.0, vmax / unit * (1 + 1e-9), step)
    bar.set_ticks(ticks * unit, labels=[f"{t:g}{name}" if t else "0" for t in ticks])
    bar.ax.tick_params(labelsize=6, length=2, pad=1)
    bar.set_label("bytes a directed link carries in the step", fontsize=6.5, labelpad=2)
    bar.outline.set_linewidth(0.5)

    def arrow(legend, orig_handle, xdescent, ydescent, width, height, fontsize):
        y = height / 2 - ydescent
        return FancyArrowPatch((-xdescent, y), (width - xdescent, y), arrowstyle="-|>", mutation_scale=7, lw=0.9,
                               color=_ARROW)

    colour = cmap(0.55)
    if matrix:
        from matplotlib.patches import Rectangle

        handles = [Line2D([], [], ls="none", marker=".", color=_ARROW, ms=6),
                   Rectangle((0, 0), 1, 1, facecolor=colour), Rectangle((0, 0), 1, 1, fill=False, edgecolor="k")]
        fig.legend(handles[:3 if busiest else 2], ["transfer", "link load", "busiest link"][:3 if busiest else 2],
                   loc="lower center", bbox_to_anchor=(0.5, base / fh), ncol=3, fontsize=6.5, frameon=False,
                   borderaxespad=0)
        fig.text(0.5, 0.05 / fh, notes, ha="center", va="bottom", fontsize=6, color="0.3", linespacing=1.25)
        return
    outlined = Line2D([], [], color=colour, lw=3, path_effects=[patheffects.Stroke(linewidth=4.6, foreground="k"),
                                                                  patheffects.Normal()])
    handles = [FancyArrowPatch((0, 0), (1, 0)), Line2D([], [], color=colour, lw=3), outlined][:3 if busiest else 2]
    fig.legend(handles, ["transfer", "link load (lane per direction)", "busiest link"][:len(handles)],
               handler_map={FancyArrowPatch: HandlerPatch(patch_func=arrow)}, loc="lower center",
               bbox_to_anchor=(0.5, base / fh), ncol=3, fontsize=6.5, frameon=False, handlelength=2.2,
               columnspacing=1.4, borderaxespad=0, handletextpad=0.7)
    fig.text(0.5, 0.05 / fh, notes, ha="center", va="bottom", fontsize=6, color="0.3", linespacing=1.25)
