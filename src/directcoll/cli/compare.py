"""``directcoll compare [SPEC]``: which algorithm wins on a network at each size (the main job), and its table.

The table gives goodput per family and size, the winner, its time, the gain, and with ``--why`` the winner's steps,
congestion deficiency Ξ and busiest link; a legend generated from the same marks. Errors are raised as
:class:`~directcoll.errors.DirectcollError` for :func:`directcoll.cli.main.main` to print as one line (status 2).

Source: Swing (De Sensi et al., NSDI'24) Sec. 5 and Fig. 6 (goodput per size, one letter per algorithm, the gain
over the best other); docs/compare.md; docs/architecture.md, "Command line" ("tables that read well anywhere":
distinct letters and marks, no wrapped cells).

>>> from directcoll.cli.main import main
>>> main(["compare", "ring:4", "--sizes", "-1"])  # the error goes to stderr
2
"""

from __future__ import annotations

import argparse
import sys

from directcoll.cli.options import (
    COLLECTIVES,
    DEFAULT_TOPOLOGY,
    SIZES_FORMS,
    SPEC_HELP,
    VARIANT_HELP,
    add_flow_control_options,
    add_network_options,
    add_orderings_option,
    add_output_options,
    check_output,
    count,
    flow_control,
    fraction,
    orderings,
    read_sizes,
    resolve_network,
    rooted_option,
)
from directcoll.cli.output import SHORT_FAMILY, ProgressBar, gbps, noop, print_json, table_console, wide_tables
from directcoll.errors import DirectcollError
from directcoll.reports.contenders import TIE_TOLERANCE, grouped_skips
from directcoll.units import signed_percent

DEFAULT_SIZES = "32B..512MiB"
#: the packet model simulates every packet: its default sweep stops where one size takes seconds on torus:4x4
DEFAULT_PACKET_SIZES = "32B..4MiB"


def register(sub) -> None:
    """Register ``directcoll compare`` on the subparsers ``sub``. Raises: nothing (builds
    parsers). Source: docs/architecture.md, "Command line"."""
    cmp = sub.add_parser("compare", help="which algorithm wins on a network at each size (the main job)",
                         description="Simulate every algorithm that serves the network at every size and report "
                                     "goodput, the winner and the gain of Swing (on tori), BFB (on direct-connect "
                                     "topologies) or MCF schedules (all-to-all, with the MCF bound) over the best "
                                     "other algorithm. Default: allreduce on "
                                     f"{DEFAULT_TOPOLOGY}, {DEFAULT_SIZES}, swing-sst parameters.")
    cmp.add_argument("spec", nargs="?", help=f"{SPEC_HELP}; default {DEFAULT_TOPOLOGY}")
    cmp.add_argument("--collective", default="allreduce",
                     choices=COLLECTIVES,
                     help="collective to compare (default: allreduce)")
    cmp.add_argument("--root", type=count(0), help="broadcast and reduce: the root rank, >= 0 (default 0)")
    cmp.add_argument("--sizes", help=f"{SIZES_FORMS} (default {DEFAULT_SIZES}; {DEFAULT_PACKET_SIZES} with --model "
                                     "packet)")
    cmp.add_argument("--algorithms", help="comma list of algorithm families, registry names (plugins included) or "
                                          "file:PATH.py (the algorithms a file defines, docs/language.md) (default "
                                          "on tori: swing, recursive-doubling, ring, bucket, bfb, generalized; on "
                                          "direct-connect topologies: bfb, ring, shifted-ring, "
                                          "double-binary-tree, recursive-doubling, generalized)")
    cmp.add_argument("--ports", type=count(1), help="build every contender with this many ports (concurrent "
                                                    "collectives per rank, >= 1); those that refuse it or take no "
                                                    "port count are listed as skipped (default: each algorithm's "
                                                    "own)")
    cmp.add_argument("--cutoffs", action=argparse.BooleanOptionalAction, default=True,
                     help="apply the default contender list's size cutoffs, which are listed as skipped "
                          "(--no-cutoffs runs those contenders too)")
    cmp.add_argument("--tie-tolerance", type=fraction, default=TIE_TOLERANCE,
                     help=f"times within this fraction of the fastest are a tie, e.g. 0.005 or 0.5%% (default "
                          f"{TIE_TOLERANCE:g}: the step model's resolution in docs/fidelity.md)")
    cmp.add_argument("--variant", help=VARIANT_HELP + "; keeps only that variant of each family that has it")
    add_network_options(cmp)
    cmp.add_argument("--model", default="step", choices=["step", "flow", "packet"],
                     help="step: congestion-aware step model (default); flow: max-min fair flows, slower; packet: "
                          "ns-3 packet-level engine, slowest (needs libns3-dev)")
    add_flow_control_options(cmp)
    add_orderings_option(cmp)
    cmp.add_argument("--plot", help="write the goodput / gain figure to this file (.png, .pdf or .svg)")
    cmp.add_argument("--format", choices=["png", "pdf", "svg"], help="format of --plot (default: from its suffix; "
                                                                     "a suffix naming another format is refused)")
    cmp.add_argument("--why", action="store_true", help="also give, per size, the winner's steps, congestion "
                                                        "deficiency Xi and busiest link with its bytes (table "
                                                        "columns, --json fields, --csv columns)")
    cmp.add_argument("-o", "--output", help="also write the results to this file: .json the --json document, .csv "
                                            "the --csv rows (stdout keeps the table)")
    add_output_options(cmp, csv="CSV rows (algorithm, variant, size, time, goodput)")
    cmp.set_defaults(func=cmd_compare)


def cmd_compare(args) -> int:
    """``directcoll compare [SPEC|PRESET]``: time every algorithm that serves the network at every size
    (:func:`directcoll.reports.compare.compare`) and report goodput, the winner per size and the reference family's
    gain (Swing on tori, BFB on direct-connect topologies, MCF schedules for all-to-all, with the MCF bound).

    Output: a table with notes and skipped contenders; ``--json``: :meth:`Comparison.to_dict
    <directcoll.reports.compare.Comparison.to_dict>` plus ``notes``; ``--csv``: one row per algorithm, variant and
    size (time in s, goodput in bytes/s); ``--why`` adds per size the winner's steps, congestion deficiency Ξ and
    busiest link with its bytes (table columns; fields of the JSON rows; CSV columns, for every entry); ``--plot
    FILE`` also writes the figure (png, pdf or svg: ``--format`` or the suffix); ``-o FILE.json`` / ``-o
    FILE.csv`` also writes the JSON document or the CSV rows to FILE (the format from the suffix). ``--variant
    NAME`` keeps, of every family that has variant NAME, only that variant (the others are timed as they are).

    Returns:
        0.

    Raises:
        DirectcollError: bad sizes, an ``--algorithms`` list naming nothing, a ``--variant`` no contender has (the
            message lists the accepted ones), an unwritable ``--plot`` or ``-o`` or one with another suffix than
            .json or .csv, a ``--plot`` suffix that is not a figure format or contradicts ``--format``, no algorithm
            serving the network, or bad network options.
        UnsupportedShapeError: an unknown algorithm in ``--algorithms``.
        SpecError, TopologyError, ResourceError, SolverError: from the network or a contender.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 5 and Fig. 6; Zhao et al. (NSDI'25) Sec. 8.2-8.3; Basu et al.
    (HPDC'24) Sec. 5.2.

    >>> from directcoll.cli.main import main
    >>> main(["compare", "ring:4", "--sizes", "1KiB", "--algorithms", "ring", "--csv"])
    ... # doctest: +ELLIPSIS, +NORMALIZE_WHITESPACE
    algorithm,variant,ports,family,size_bytes,time_s,goodput_Bps,skipped
    ring,bidirectional,2,ring,1024,...
    0
    """
    from directcoll.reports.compare import compare
    from directcoll.reports.contenders import default_policy, select, with_root

    check_output(args.plot, "--plot")
    plot_format = _plot_format(args.plot, args.format)
    output_format = _output_format(args.output)
    flow = flow_control(args)
    ordered = orderings(args)
    topology, params, notes = resolve_network(args.spec, args.params, args)
    sizes = read_sizes(args.sizes or (DEFAULT_PACKET_SIZES if args.model == "packet" else DEFAULT_SIZES))
    contenders, skipped = default_policy(topology, args.collective, cutoffs=args.cutoffs)
    if args.algorithms:
        wanted = [a.strip() for a in args.algorithms.split(",") if a.strip()]
        if not wanted:
            raise DirectcollError(f"--algorithms {args.algorithms!r} names no algorithm; see `directcoll algorithms`")
        contenders = select(contenders + [k.contender for k in skipped], wanted, topology, args.collective)
        skipped = []  # asked for by name: no cutoff applies
    if args.variant:
        contenders = _only_variant(contenders, args.variant)
    contenders = with_root(contenders, rooted_option(args.collective, args.root))
    quiet = args.json or args.csv
    with ProgressBar(len(contenders), "simulating", enabled=not quiet) as tick:
        cmp = compare(topology, args.collective, sizes, params, args.routing, args.model, contenders,
                      progress=tick or noop, why=args.why,
                      ports=args.ports, tie_tolerance=args.tie_tolerance, flow=flow, orderings=ordered)
    cmp.skipped[:0] = skipped  # the policy's cutoffs first, then what refused to run
    if args.plot:
        from directcoll.reports.plot import plot_comparison

        plot_comparison(cmp, args.plot, fmt=plot_format)
    if args.output:
        with open(args.output, "w", encoding="utf-8", newline="") as f:
            if output_format == "json":
                print_json({**cmp.to_dict(), "notes": notes}, file=f)
            else:
                f.write(cmp.to_csv())
    if args.json:
        print_json({**cmp.to_dict(), "notes": notes})
        return 0
    if args.csv:
        for line in cmp.caveats():  # the CSV holds the times only: what they cannot settle goes to stderr
            print(f"directcoll: note: {line}", file=sys.stderr)
        sys.stdout.write(cmp.to_csv())
        return 0
    print_comparison(cmp, notes, why=args.why, wide=args.wide)
    if args.plot:
        print(f"plot written to {args.plot}")
    if args.output:
        print(f"results written to {args.output} ({output_format.upper()})")
    return 0


def _plot_format(path: str | None, fmt: str | None) -> str | None:
    """png, pdf or svg, the format of ``compare --plot`` (None: no plot); refuses a mismatch before any work."""
    if path is None:
        if fmt is not None:
            raise DirectcollError(f"--format {fmt} is the format of --plot FILE; give --plot too")
        return None
    from directcoll.reports.draw import figure_format

    return figure_format(path, fmt, "--plot")


def _output_format(path: str | None) -> str | None:
    """json or csv, the format of ``compare -o`` from its suffix (None: no -o); refuses others before any work."""
    if path is None:
        return None
    check_output(path, "-o")
    fmt = path.rsplit(".", 1)[-1].lower() if "." in path else ""
    if fmt not in ("json", "csv"):
        raise DirectcollError(f"-o {path!r}: cannot tell the format from the suffix; give a file ending in .json "
                              "(the --json document) or .csv (the --csv rows)")
    return fmt


def _only_variant(contenders: list, variant: str) -> list:
    """Of every family with variant ``variant``, keep only that variant (families without it stay as they are)."""
    offered = sorted({str(c.variant) for c in contenders if c.variant is not None})
    if variant not in offered:
        raise DirectcollError(f"--variant {variant!r}: no contender has that variant; accepted: "
                              f"{', '.join(offered) or 'none (these algorithms have no variants)'}")
    having = {c.family for c in contenders if c.variant == variant}
    return [c for c in contenders if c.family not in having or c.variant == variant]


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
        table = Table(title=f"{cmp.collective} on {cmp.topology}, goodput in Gb/s ({cmp.conditions()})",
                      title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False,
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
    within = (f"times within {tie} of the fastest (the model's resolution; --tie-tolerance)" if cmp.orderings == 1
              else f"B's time in its fastest of {cmp.orderings} orders of the transfers within {tie} of A's in its "
                   "slowest (--orderings, --tie-tolerance)")
    gain_note = f" A≈B: a tie, {within}." + gain_note
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
    for note in [*notes, *cmp.caveats()]:
        console.print(f"[dim]{escape(note)}[/dim]")
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
