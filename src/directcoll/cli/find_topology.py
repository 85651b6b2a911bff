"""``directcoll find-topology``: the Pareto frontier of direct-connect topologies for N nodes of degree d.

Source: Zhao et al. (NSDI'25) Sec. 5.4 (topology finder), Table 4 (alpha = 10 us, B = 100 Gb/s, M = 1 MiB) and
Theorems 7-13 (the predicted costs).

>>> from directcoll.cli.main import main
>>> main(["find-topology", "--nodes", "8", "--degree", "0"])  # a usage error
Traceback (most recent call last):
...
SystemExit: 2
"""

from __future__ import annotations

from directcoll.cli.options import (
    SIZES_FORMS,
    add_deprecated_size,
    add_output_options,
    bandwidth,
    check_output,
    count,
    duration,
    read_sizes,
)
from directcoll.cli.output import Heartbeat, ProgressBar, print_json, table_console


def register(sub) -> None:
    """Register ``directcoll find-topology`` on the subparsers ``sub``. Raises: nothing (builds
    parsers). Source: docs/architecture.md, "Command line"."""
    fnd = sub.add_parser("find-topology", help="Pareto frontier of direct-connect topologies for N nodes, degree d",
                         description="Search base topologies x expansions (line graph, degree, Cartesian power and "
                                     "product, bidirectional) with the theorems' predicted T_L and T_B (Zhao et al. "
                                     "Sec. 5.4), keep the Pareto frontier and name the best one for the workload.")
    fnd.add_argument("--nodes", type=count(2), required=True, help="number of nodes N, 2 to 2^20")
    fnd.add_argument("--degree", type=count(1), required=True, help="links out of every node, d >= 1")
    fnd.add_argument("--alpha", type=duration, default="10us", help="per-step latency α, a time such as 10us or "
                                                                    "400ns (default 10us, the paper's Table 4)")
    fnd.add_argument("--bandwidth", type=bandwidth, default="100Gbps",
                     help="node bandwidth B = d x link bandwidth, e.g. 100Gbps or 12.5GB/s (default 100Gbps)")
    fnd.add_argument("--sizes", default="1MiB",
                     help=f"allreduce sizes M, {SIZES_FORMS} (default 1MiB, as Table 4); the best topology minimises "
                          "the summed time")
    add_deprecated_size(fnd)
    fnd.add_argument("--bidirectional", action="store_true", help="only topologies whose links come in pairs")
    fnd.add_argument("--alltoall", action="store_true", help="also the all-to-all MCF value of every frontier "
                                                             "entry (LP (3), reduced by the automorphism group; "
                                                             "certified bounds within 1%% where still too large)")
    fnd.add_argument("--collective", default="allreduce", choices=["allreduce", "reduce_scatter", "allgather"],
                     help="collective of the schedule written by -o (default allreduce)")
    fnd.add_argument("-o", "--output", help="write the best topology's schedule to this file (.json or .npz)")
    add_output_options(fnd)
    fnd.set_defaults(func=cmd_find_topology)


def cmd_find_topology(args) -> int:
    """``directcoll find-topology --nodes N --degree d``: the Pareto frontier of (T_L, T_B) over base topologies and
    their expansions (:func:`directcoll.synthesis.finder.find_topology`) and the best one for the allreduce
    time 2 (alpha T_L + T_B M/B) summed over ``--sizes``; ``--alltoall`` adds each frontier entry's MCF value
    (exact while the LP after the symmetry reductions is small, else certified bounds ``alltoall_mcf`` (lower) and
    ``alltoall_mcf_upper`` within 1 %: :func:`directcoll.synthesis.mcf.certified.auto_method`);
    ``-o`` writes the best topology's schedule.

    Output: a table with the theoretical bound, or with ``--json`` {nodes, degree, alpha_s, bandwidth_Bps, sizes,
    frontier (each with time_s), best, bound {t_l_steps, t_b_m_over_b}, bases, candidates, skipped_bases (bases too
    large for their LPs), ties (frontier spec -> equal (T_L, T_B) specs it was chosen over), schedule}.

    Returns:
        0.

    Raises:
        DirectcollError: bad ``--sizes`` or an unwritable ``-o`` (a bad ``--alpha`` or ``--bandwidth`` is a usage
            error of the parser).
        ResourceError: a search or MCF over the budget. SolverError: a BFB or MCF LP failed.
        UnsupportedShapeError, TopologyError: building the best topology's schedule.

    Source: Zhao et al. (NSDI'25) Sec. 5.4, Tables 4 and 7; Def. 9 (Moore bound) and Theorem 4 ((N-1)/N).

    >>> from directcoll.cli.main import main
    >>> main(["find-topology", "--nodes", "8", "--degree", "2", "--json"])  # doctest: +ELLIPSIS
    {
      "nodes": 8,
    ...
      "best": "circulant:8:1,3:uni",
    ...
    0
    """
    from directcoll.synthesis.finder import MAX_BASE_NODES, find_topology, theoretical_bound

    check_output(args.output, "-o")
    alpha, bandwidth = args.alpha, args.bandwidth  # s and bytes/s, read by the parser
    sizes = read_sizes(args.sizes)
    with ProgressBar(1, "bases and expansions", enabled=not args.json) as bar:
        result = find_topology(args.nodes, args.degree, alpha=alpha, m_over_b=[m / bandwidth for m in sizes],
                               bidirectional_only=args.bidirectional,
                               progress=bar)
    mcf, mcf_upper = {}, {}
    if args.alltoall:
        import sys

        from directcoll.synthesis.mcf.certified import alltoall_mcf_certified, auto_method
        from directcoll.synthesis.mcf.link import alltoall_mcf
        from directcoll.topology.spec import parse

        for c in result.frontier:
            topo = parse(c.spec)
            method, _ = auto_method(topo)
            with Heartbeat(f"all-to-all MCF of {c.spec} ({method})") as beat:
                if method == "certified":  # too large for the exact LP: certified bounds within 1 %
                    b = alltoall_mcf_certified(topo, progress=lambda it, lo, up, gap: beat(f"gap {gap:.2%}"))
                    mcf[c.spec], mcf_upper[c.spec] = b.lower, b.upper
                    if not b.converged:
                        print(f"directcoll: warning: {c.spec}: all-to-all bounds gap {b.gap:.2%}", file=sys.stderr)
                else:
                    mcf[c.spec] = float(alltoall_mcf(topo, method=method).value)
    bound_t_l, bound_t_b = theoretical_bound(args.nodes, args.degree)
    schedule_file = None
    if args.output:
        from directcoll.schedule.io import save
        from directcoll.synthesis.expansions import expanded_schedule

        schedule_file = args.output
        save(expanded_schedule(result.best.spec, args.collective), schedule_file)
    frontier = [{**c.to_dict(), "time_s": result.times[c.spec], **({"alltoall_mcf": mcf[c.spec]} if mcf else {}),
                 **({"alltoall_mcf_upper": mcf_upper[c.spec]} if c.spec in mcf_upper else {})}
                for c in result.frontier]
    if args.json:
        print_json({"nodes": args.nodes, "degree": args.degree, "alpha_s": alpha, "bandwidth_Bps": bandwidth,
                    "sizes": sizes, "frontier": frontier, "best": result.best.spec,
                    "bound": {"t_l_steps": bound_t_l, "t_b_m_over_b": bound_t_b},
                    "bases": result.bases, "candidates": result.candidates, "skipped_bases": result.skipped,
                    "ties": result.ties, "schedule": schedule_file})
        return 0
    from rich.table import Table

    table = Table(title=f"Pareto frontier, N = {args.nodes}, d = {args.degree}: allreduce 2(α T_L + T_B M/B) with "
                        f"α = {alpha * 1e6:g} µs, B = {bandwidth * 8 / 1e9:g} Gb/s, M = {sizes.text}",
                  title_justify="left")
    for col in ("topology", "T_L", "T_B (M/B)", "allreduce", "construction", *(["all-to-all f"] if mcf else [])):
        table.add_column(col, justify="left" if col in ("topology", "construction") else "right")
    for row in frontier:
        mark = " ◀ best" if row["spec"] == result.best.spec else ""
        table.add_row(row["spec"] + mark, f"{row['t_l_steps']}α", f"{row['t_b_m_over_b']:.4f}",
                      f"{row['time_s'] * 1e6:.1f} µs", row["construction"],
                      *([f"{row['alltoall_mcf']:.3e}" + (f"..{row['alltoall_mcf_upper']:.3e}"
                                                         if "alltoall_mcf_upper" in row else "")] if mcf else []))
    table.add_row("theoretical bound", f"{bound_t_l}α", f"{bound_t_b:.4f}", "", "Moore bound, (N-1)/N")
    console = table_console(table)
    console.print(table)
    console.print(f"{result.bases} base topologies, {result.candidates} candidates considered"
                  + (f"; best schedule written to {schedule_file}" if schedule_file else ""))
    if result.skipped:
        console.print(f"not evaluated (non-Cayley bases over {MAX_BASE_NODES:,} nodes, no BFB LPs): "
                      + ", ".join(result.skipped))
    return 0
