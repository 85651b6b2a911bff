"""The table of ``directcoll compare``: goodput per family and size, the winner, its time, the gain, and with
``--why`` the winner's steps, congestion deficiency Ξ and busiest link; a legend generated from the same marks.

Source: Swing (De Sensi et al., NSDI'24) Sec. 5 and Fig. 6 (goodput per size, one letter per algorithm, the gain
over the best other); docs/architecture.md, "Command line" ("tables that read well anywhere": distinct letters and
marks, no wrapped cells).
"""

from __future__ import annotations

from directcoll.cli.output import SHORT_FAMILY, gbps, table_console, wide_tables
from directcoll.reports.contenders import grouped_skips
from directcoll.units import signed_percent

#: the marks of variants in the compare table (lower case: the families' letters are capitals), and their names
VARIANT_MARKS = {"latency": "lat", "bandwidth": "bw", "hamiltonian": "ham", "bidirectional": "bi",
                 "unidirectional": "uni", "r=0": "bw", "timestepped": "ts", "libswing": "lib"}
VARIANT_NAMES = {"latency": "latency-optimal", "bandwidth": "bandwidth-optimal", "hamiltonian": "Hamiltonian rings",
                 "bidirectional": "bidirectional ring", "unidirectional": "unidirectional ring",
                 "r=0": "bandwidth-optimal generalized allreduce", "timestepped": "time-stepped MCF",
                 "libswing": "the Swing authors' library construction"}

def print_comparison(cmp, notes, why: bool = False, wide: bool = False) -> None:
    """Print the comparison table of ``directcoll compare`` on stdout, then its legend, the notes and the skipped
    contenders; with ``why`` (the entries carry their :class:`~directcoll.reports.why.Why`: ``compare(...,
    why=True)``) four more columns per size: the winner's steps, Ξ, busiest link (``u->v``) and that link's bytes.

    Args:
        cmp: a :class:`~directcoll.reports.compare.Comparison`; notes: lines printed dim after the legend.

    Args (more):
        wide: the table as wide as it needs (:func:`directcoll.cli.output.table_console`); else it is fitted to the
            terminal's width (``$COLUMNS``, 80 when piped) by naming families by their letters, then leaving the
            variant marks out, and rich folds what is still too wide.

    Raises:
        Nothing: formatting.

    Source: Swing (De Sensi et al., NSDI'24) Fig. 6 (letters, the gain over the best other) and Sec. 2.2, Eq. 1
    (steps, Ξ); docs/architecture.md, "Command line" ("an optional --why that adds, per winner, steps, Ξ and the busiest
    link's load").

    >>> from directcoll.reports.compare import compare
    >>> from directcoll.topology import parse
    >>> cmp = compare(parse("ring:4"), sizes=[1024], contenders=[("ring", "ring", None)], why=True)
    >>> print_comparison(cmp, [], why=True)  # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
    allreduce on ring:4, ...
    size   ring (R)   best     time   steps     Ξ   busiest link   its bytes
    ...
    1KiB    3.39 bi    R     2.42 µs       6   1.00           0->1        128B
    ...
    """
    from rich.markup import escape
    from rich.table import Table

    from directcoll.reports.plot import letter as plot_letter
    from directcoll.units import format_size, format_time

    alltoall = cmp.collective == "alltoall"

    def letter(family: str) -> str:
        return plot_letter(family, cmp.collective)

    fams = cmp.families()
    winners = cmp.winners()
    ties = cmp.ties()
    reference = cmp.gain_family
    gain = cmp.gain(reference) if reference else None
    others = cmp.best_other(reference) if gain is not None else None
    names = SHORT_FAMILY
    from rich import box
    from rich.console import Console
    from rich.measure import Measurement

    def build(detail: int) -> Table:
        """detail 2: named headings and variant marks; 1: letters as headings; 0: no variant marks either; -1:
        and one space between columns; -2: and no time column (the winner's goodput is in its cell)."""
        short = VARIANT_MARKS
        table = Table(title=f"{cmp.collective} on {cmp.topology}, goodput in Gb/s ({cmp.model} model, "
                            f"{cmp.routing} routing)", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
                      collapse_padding=detail < 0)
        table.add_column("size", justify="right")
        for fam in fams:
            table.add_column(f"{names.get(fam, fam[:9])} ({letter(fam)})" if detail == 2 else letter(fam),
                             justify="right")
        table.add_column("best", justify="center")
        if detail > -2:
            table.add_column("time", justify="right")
        bound = cmp.bound_times if alltoall else None
        if bound is not None:
            table.add_column("MCF bound", justify="right")
            table.add_column("best/bound", justify="right")
        if gain is not None:
            table.add_column(f"{reference} gain" if detail == 2 else "gain", justify="right")
        if why:
            for heading in ("steps", "Ξ", "busiest link", "its bytes"):
                table.add_column(heading, justify="right")
        several = {fam: sum(e.family == fam for e in cmp.entries) > 1 for fam in fams}
        for j, size in enumerate(cmp.sizes):
            row = [format_size(size)]
            for fam, (times, variants) in fams.items():
                shown = "" if (alltoall and not several[fam]) or detail <= 0 else short.get(variants[j],
                                                                                           variants[j])
                cell = f"{gbps(size / times[j])} {shown}".rstrip()
                row.append(f"[bold]{cell}[/bold]" if fam == winners[j][0] else cell)
            row += ["≈".join(letter(f) for f in ties[j]), *([format_time(winners[j][2])] if detail > -2 else [])]
            if bound is not None:
                row += [format_time(bound[j]), f"{winners[j][2] / bound[j]:.2f}x"]
            if gain is not None:
                row.append("tie" if others[j] is None else f"{signed_percent(gain[j])} {letter(others[j])}")
            if why:
                best = cmp.entry(*winners[j][:2]).why.at(size)
                row += [str(best["steps"]), f"{best['congestion_deficiency']:.2f}", best["max_link_name"],
                        format_size(best["bytes_max_link"])]
            table.add_row(*row)
        return table

    width = Console().width  # the terminal's, $COLUMNS, or 80 when piped
    probe = Console(width=10_000)
    for detail in ((2,) if wide else (2, 1, 0, -1, -2)):
        table = build(detail)
        if Measurement.get(probe, probe.options, table).maximum <= width:
            break
    with wide_tables(wide):  # --wide: as wide as the table; else table_console folds what is still too wide
        console = table_console(table)
    console.print(table)
    tie = f"{cmp.tie_tolerance * 100:.2g} %"
    gain_note = (f" {reference} gain = {reference}'s goodput over the best other outside its tie (letter) - 1."
                 if gain is not None else "")
    gain_note = (f" A≈B: a tie, times within {tie} of the fastest (the model's resolution; --tie-tolerance)."
                 + gain_note)
    peak = f" Peak goodput {cmp.peak_goodput * 8 / 1e9:.4g} Gb/s."
    if why:
        peak += (" Of the best: steps = its number of steps; Ξ = its congestion deficiency (bytes x hops over bytes, "
                 "per step's largest transfer: 1.00 when every byte travels one hop; Swing Sec. 4.1); busiest link = "
                 "the directed link carrying the most bytes in any one step, and those bytes.")
    if alltoall:
        console.print(_alltoall_note(cmp, letter) + gain_note + peak)
    else:
        families = ", ".join(f"{letter(f)} {f}" for f in fams)
        shown = sorted({v for _, variants in fams.values() for v in variants if v in VARIANT_MARKS})
        legend: dict[str, str] = {}
        for v in shown:  # one meaning per mark (r=0 is the generalized allreduce's bandwidth-optimal variant)
            legend.setdefault(VARIANT_MARKS[v], VARIANT_NAMES[v])
        marks = "; ".join(f"{m} {name}" for m, name in legend.items())
        variants = (f" ({marks}; r=k generalized allreduce with k distribution steps removed; P=k: k chunks per "
                    f"half of the double binary tree, or the chain's k pipeline chunks)" if detail > 0 else
                    f" (its variant is left out to fit {width} columns: --wide, --json or --csv show it)")
        console.print(f"Each cell: goodput of the family's best variant{variants}. Families: {families}. best = "
                      f"the fastest." + gain_note + peak)
    for note in notes:
        console.print(f"[dim]{note}[/dim]")
    for name, kind, reason in grouped_skips(cmp.skipped):
        console.print(f"[dim]skipped {escape(name)} ({kind}): {escape(reason)}[/dim]", highlight=False)



def _alltoall_note(cmp, letter) -> str:
    from fractions import Fraction

    names = ", ".join(f"{letter(f)} {f}" for f in cmp.families())
    text = (f"Each cell: all-to-all goodput = bytes each rank sends / time, size being each rank's send buffer "
            f"(N blocks of size/N, its own included, as MPI_Alltoall's sendcount x N); best variant per family "
            f"({names}). best = the fastest, time = its all-to-all time.")
    if cmp.bound is not None:
        f = cmp.bound["F"]
        exact = Fraction(f).limit_denominator(10**6)
        frac = f" = {exact}" if abs(float(exact) - f) <= 1e-12 * f else ""
        b = cmp.bound["reference_bandwidth_Bps"] * 8 / 1e9
        text += (f" MCF bound = time of an ideal schedule, m / (F b) with m = size/N per pair, F = {f:.6g}{frac} "
                 f"(max concurrent flow, Basu et al. Sec. 3.1), b = {b:.4g} Gb/s; bandwidth only (no latency), so "
                 "every schedule's time is above it.")
    return text
