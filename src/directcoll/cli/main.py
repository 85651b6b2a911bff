"""The ``directcoll`` command line: a thin layer over the library (every command is a library call first).

The commands live in :mod:`directcoll.cli.build`, :mod:`directcoll.cli.network` and :mod:`directcoll.cli.find`;
this module builds the parser. Exit status: 0 done, 1 a check that failed (``verify``, ``run``), 2 a bad input
or request (one line on stderr, ``directcoll: error: ...``; usage errors ``directcoll COMMAND: error: ...``).

Source: docs/architecture.md, "Command line" (machine-readable output is a contract tested in
subprocesses) and "Quality bar" (one clear error naming the input).

>>> main(["verify", "no/such/file.json"])  # the error goes to stderr
2
"""

from __future__ import annotations

import argparse
import sys

from directcoll import __version__
from directcoll.cli.build import (
    DEFAULT_ALGORITHM,
    DEFAULT_TOPOLOGY,
    add_alltoall_options,
    cmd_algorithms,
    cmd_cost,
    cmd_schedule,
    cmd_table2,
    cmd_topology_describe,
    cmd_topology_families,
    cmd_verify,
)
from directcoll.cli.calibrate import cmd_calibrate
from directcoll.cli.discover import add_discovery_commands
from directcoll.cli.find import cmd_find_topology
from directcoll.cli.native import add_native_parser
from directcoll.cli.network import (
    DEFAULT_PACKET_SIZES,
    DEFAULT_RUN_ALGORITHMS,
    DEFAULT_RUN_TOPOLOGY,
    DEFAULT_SIZES,
    cmd_compare,
    cmd_export,
    cmd_import,
    cmd_run,
    cmd_simulate,
)
from directcoll.cli.options import (
    IMPLEMENTATION_HELP,
    SIZES_FORMS,
    TOPOLOGY_OVERRIDE_HELP,
    USE_SPEC,
    Deprecated,
    Parser,
    add_deprecated_size,
    add_output_options,
    bandwidth,
    count,
    duration,
    fraction,
    per_byte,
    print_notes,
    size_option,
)
from directcoll.cli.show import add_show_commands
from directcoll.cli.sweep import add_sweep_parser
from directcoll.cli.topology_io import cmd_topology_export
from directcoll.cli.tune import add_tune_parsers
from directcoll.errors import DirectcollError
from directcoll.reports.contenders import TIE_TOLERANCE

#: table2 builds side^4 tori: 16^4 = 65,536 ranks is the largest it measures
TABLE2_MAX_SIDE = 16


#: the one meaning of --variant in every command
VARIANT_HELP = "algorithm variant, e.g. latency or bandwidth (see `directcoll algorithms`)"
#: the one meaning of the positional network of commands that take one
SPEC_HELP = ("the network: a topology spec such as torus:8x8, file:PATH, or a system preset such as trn1 (see "
             "`directcoll help specs`)")


def _add_build_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--collective", default="allreduce",
                   choices=["allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast", "reduce"],
                   help="collective to build (default: allreduce)")
    p.add_argument("--root", type=count(0), help="broadcast and reduce: the root rank, >= 0 (default 0)")
    p.add_argument("--chunks", type=count(1), help="pipelined algorithms (chain, double-binary-tree): chunks, >= 1 "
                                                   "(default: the algorithm's); bfb: cut every shard into P equal "
                                                   "chunks, loads rounded to whole chunks (Zhao et al. App. E.2), "
                                                   "T_B reported")
    p.add_argument("--variant", help=VARIANT_HELP)
    p.add_argument("--ports", type=count(1), help="concurrent collectives / ports to use, >= 1 (default: the "
                                                  "algorithm's)")



def _add_network_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", help="system preset for link and latency parameters (default swing-sst; "
                                    "see directcoll.catalog.presets), or a FILE.json written by `directcoll "
                                    "calibrate -o`")
    p.add_argument("--implementation", help=IMPLEMENTATION_HELP)
    p.add_argument("--routing", default="adaptive", choices=["adaptive", "dor"],
                   help="adaptive: split over all minimal paths (default); dor: dimension order")
    p.add_argument("--alpha", type=duration, help="override: per-message overhead, a time >= 0 such as 1us or "
                                                  "400ns (a bare number is seconds)")
    p.add_argument("--per-hop-latency", type=duration, help="override: per-hop latency, e.g. 300ns (a bare number "
                                                            "is seconds)")
    p.add_argument("--link-bandwidth", type=bandwidth, help="override: link bandwidth with its unit, e.g. 400Gbps "
                                                            "or 50GB/s (a bare number is refused)")
    p.add_argument("--link-latency", type=duration, help="override: link latency, e.g. 100ns (a bare number is "
                                                         "seconds)")
    p.add_argument("--gamma", type=per_byte, help="override: reduction cost per byte, e.g. 0.2ns or 0.2ns/B (a "
                                                  "bare number is seconds per byte)")
    p.add_argument("--forwarding", choices=["cut-through", "store-and-forward"],
                   help="a router passes a packet on once its header (cut-through, default) or all of it "
                        "(store-and-forward) has arrived")
    p.add_argument("--packet-size", type=size_option("--packet-size"),
                   help="override: payload bytes per packet, e.g. 4KiB (default 4096)")
    p.add_argument("--packet-header", type=count(0), help="override: header bytes per packet (default 0; the "
                                                          "packet model carries at least ns-3's 2)")



def build_parser() -> argparse.ArgumentParser:
    """The argparse parser of every command and subcommand, each with ``--json`` where it has output and
    ``--memory-budget`` before or after the command.

    Returns:
        A :class:`~directcoll.cli.options.Parser`; ``parse_args`` leaves the command's function in ``args.func``.

    Raises:
        Nothing: builds the parser (parsing bad arguments exits with status 2).

    Source: docs/architecture.md, "Command line" (the CLI is a thin layer over the library).

    >>> build_parser().parse_args(["verify", "s.json"]).func.__name__
    'cmd_verify'
    """
    parser = Parser(
        prog="directcoll", description="Collective algorithms, schedules, verification and cost models for "
                                       "torus and direct-connect networks.")
    parser.add_argument("--version", action="version", version=f"directcoll {__version__}")
    _add_memory_budget(parser, argparse.SUPPRESS)
    _add_solver_log(parser)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    topo = sub.add_parser("topology", help="inspect topologies")
    topo_sub = topo.add_subparsers(dest="topology_command", required=True, metavar="SUBCOMMAND")
    desc = topo_sub.add_parser("describe", help="N, degree, diameter, average distance, links, bisection")
    desc.add_argument("spec", help="topology spec, e.g. torus:8x8, hammingmesh:2x2:32x32, hyperx:8x8")
    desc.add_argument("--json", action="store_true", help="machine-readable output")
    add_alltoall_options(desc)
    desc.set_defaults(func=cmd_topology_describe)
    fams = topo_sub.add_parser("families", help="list the topology families, aliases and operators of spec strings")
    fams.add_argument("--json", action="store_true", help="machine-readable output")
    fams.set_defaults(func=cmd_topology_families)
    tex = topo_sub.add_parser("export", help="write a topology to a network file (GraphML, edge list, JSON) that "
                                             "file:PATH reads back")
    tex.add_argument("spec", help="topology spec, e.g. torus:8x8, or file:PATH")
    tex.add_argument("-o", "--output", required=True, help="file to write: .graphml, .edges or .json")
    tex.add_argument("--format", choices=["graphml", "edges", "json", "simgrid"],
                     help="format (default: from the suffix); simgrid: a SimGrid/SMPI platform with our routes")
    tex.add_argument("--json", action="store_true", help="machine-readable output")
    tex.set_defaults(func=cmd_topology_export)

    sched = sub.add_parser("schedule", help="build a schedule file")
    sched.add_argument("algorithm", help="algorithm name (see `directcoll algorithms`), or file:PATH.py of a file "
                                         "that defines one (docs/language.md)")
    sched.add_argument("spec", help="topology spec, e.g. torus:8x8")
    _add_build_options(sched)
    sched.add_argument("--steps", help="generalized only: number of steps (ceil(log2 P) .. 2 ceil(log2 P)) or "
                                       "'auto' (the fastest at --sizes with --params, default kolmakov-cluster)")
    sched.add_argument("--group", help="generalized only: the abelian group T_P as cyclic factors whose product is "
                                       "P, e.g. 12, 4x3, 2x2x3 (aliases: cyclic = P, xor = 2x2x...x2; default cyclic)")
    sched.add_argument("--placement", help="generalized only: the permutation h (Sec. 5.2), rank b's part at group "
                                           "element h(b): identity (default), aligned (group translations = torus "
                                           "translations) or comma-separated elements, one per rank")
    sched.add_argument("--sizes", help="vector size for --steps auto, one size (default 1MiB); bfb: the size M "
                                       "at which LP (14) weighs every link's latency (Zhao et al. App. E.3)")
    add_deprecated_size(sched)
    sched.add_argument("--params", help="system preset for --steps auto (default kolmakov-cluster)")
    sched.add_argument("--method", choices=["timestepped", "path", "extp"],
                       help="mcf only (--collective alltoall): tsMCF steps, pMCF paths or MCF-extP widest paths")
    sched.add_argument("--host-bandwidth", type=bandwidth,
                       help="mcf only: host <-> NIC bandwidth, e.g. 100Gbps (Basu et al. Fig. 2): the host forwards "
                            "in timestepped schedules, the NIC in path and extp ones")
    sched.add_argument("--time-limit", type=float,
                       help="ilp-disjoint only: seconds for the MIP, > 0 (default 30 up to 16 ranks; required above); "
                            "the best solution, its bound and gap are reported")
    sched.add_argument("-o", "--output", required=True, help="output file (.json, or .npz for large schedules)")
    add_output_options(sched)
    sched.set_defaults(func=cmd_schedule)

    ver = sub.add_parser("verify", help="execute a schedule exactly and check its collective")
    ver.add_argument("file", help="schedule file (.json or .npz)")
    ver.add_argument("--seed", type=count(0), default=0, help="seed of the random 64-bit words, >= 0 (default 0)")
    ver.add_argument("--json", action="store_true", help="machine-readable output")
    ver.add_argument("--order", action="store_true",
                     help="also check the reductions run in rank order 0..N-1 (non-commutative operators); "
                          "exit 1 when they do not")
    ver.set_defaults(func=cmd_verify)

    cost = sub.add_parser("cost", help="steps, bytes, deficiencies, T_L / T_B and an alpha-beta-gamma time",
                          description="Analyze a schedule file, or build one with --algorithm/--topology "
                                      f"(default: {DEFAULT_ALGORITHM} allreduce on {DEFAULT_TOPOLOGY}).")
    cost.add_argument("file", nargs="?", help="schedule file; omit to build one")
    cost.add_argument("--algorithm", help=f"algorithm to build when no file is given (default {DEFAULT_ALGORITHM})")
    cost.add_argument("--topology", help=f"{TOPOLOGY_OVERRIDE_HELP}; without a file, the network to build on "
                                         f"(default {DEFAULT_TOPOLOGY})")
    _add_build_options(cost)
    cost.add_argument("--sizes", help="vector size for the time estimate, one size such as 64MiB (bfb: also the "
                                      "size M of LP (14))")
    add_deprecated_size(cost)
    cost.add_argument("--alpha", type=duration, default=400e-9, help="time per step, e.g. 400ns or 1us; a bare "
                                                                     "number is seconds (default 400ns: one hop of "
                                                                     "the Swing SST setup)")
    cost.add_argument("--gamma", type=per_byte, default=0.0, help="time per byte reduced, e.g. 0.2ns or 0.2ns/B; a "
                                                                  "bare number is seconds per byte (default 0)")
    add_output_options(cost)
    cost.set_defaults(func=cmd_cost)

    cmp = sub.add_parser("compare", help="which algorithm wins on a network at each size (the main job)",
                         description="Simulate every algorithm that serves the network at every size and report "
                                     "goodput, the winner and the gain of Swing (on tori), BFB (on direct-connect "
                                     "topologies) or MCF schedules (all-to-all, with the MCF bound) over the best "
                                     "other algorithm. Default: allreduce on "
                                     f"{DEFAULT_TOPOLOGY}, {DEFAULT_SIZES}, swing-sst parameters.")
    cmp.add_argument("spec", nargs="?", help=f"{SPEC_HELP}; default {DEFAULT_TOPOLOGY}")
    cmp.add_argument("--collective", default="allreduce",
                     choices=["allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast", "reduce"],
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
    _add_network_options(cmp)
    cmp.add_argument("--model", default="step", choices=["step", "flow", "packet"],
                     help="step: congestion-aware step model (default); flow: max-min fair flows, slower; packet: "
                          "ns-3 packet-level engine, slowest (needs libns3-dev)")
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

    sim = sub.add_parser("simulate", help="time one schedule file with a per-step breakdown")
    sim.add_argument("file", help="schedule file (.json or .npz)")
    sim.add_argument("--sizes", help="vector size, one size such as 64MiB (required)")
    add_deprecated_size(sim)
    sim.add_argument("--topology", help=TOPOLOGY_OVERRIDE_HELP)
    _add_network_options(sim)
    sim.add_argument("--model", default="step", choices=["step", "flow", "packet"],
                     help="simulation model: step (default), flow, or packet (ns-3; needs libns3-dev)")
    add_output_options(sim, csv="CSV rows, one per step (the step model's busiest link, or the flow and packet "
                                "models' step end times)")
    sim.set_defaults(func=cmd_simulate)

    rn = sub.add_parser("run", help="run schedules on real MPI ranks and compare with the MPI library",
                        description="Launch ranks through mpiexec on this machine (or --hostfile / --mpiexec for an "
                                    "allocation), time our schedules and the MPI library's own collective, and "
                                    "check that the results agree.")
    rn.add_argument("spec", nargs="?", help=f"{SPEC_HELP}: the network the schedules are built for (default "
                                             f"{DEFAULT_RUN_TOPOLOGY})")
    rn.add_argument("--topology", action=Deprecated, use=USE_SPEC, help=argparse.SUPPRESS)
    rn.add_argument("--ranks", type=int, help="number of ranks (default: the topology's nodes)")
    rn.add_argument("--algorithm", "--algorithms", dest="algorithms", default=DEFAULT_RUN_ALGORITHMS,
                    help=f"comma list of NAME or NAME:VARIANT, or file:PATH.py (default {DEFAULT_RUN_ALGORITHMS})")
    rn.add_argument("--collective", default="allreduce",
                    choices=["allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast", "reduce"],
                    help="collective to run (default allreduce); alltoall runs --algorithm direct unless given one, "
                         "and its sizes are each rank's send buffer")
    rn.add_argument("--root", type=count(0), help="broadcast and reduce: the root rank, >= 0 (default 0)")
    rn.add_argument("--sizes", default="8B,64KiB,1MiB",
                    help=f"{SIZES_FORMS} (default 8B,64KiB,1MiB); each runs as float64 elements, a multiple of the "
                         "ranks (at least one per rank), and the table shows the bytes run where they differ")
    add_deprecated_size(rn)
    rn.add_argument("--repeat", type=int, default=3, help="timed repetitions per size, at least 1 (after one warm-up)")
    rn.add_argument("--timeout", type=float, default=30.0,
                    help="seconds a rank waits for any step or collective before failing (default 30); the job is "
                         "killed when no rank made progress for this long plus 2 s")
    rn.add_argument("--compare-native", action=argparse.BooleanOptionalAction, default=True,
                    help="also time the MPI library's own collective (default on)")
    rn.add_argument("--engine", choices=["python", "c", "smpi"], default=None,
                    help="what runs our schedules: c (libdirectcoll on the real ranks, built on first use), python "
                         "(numpy on the real ranks), or smpi (libdirectcoll inside SimGrid SMPI on a simulated SPEC: "
                         "simulated times; needs libsimgrid-dev); default c when the library builds, else python "
                         "with a note")
    rn.add_argument("--hostfile", help="MPICH hostfile for mpiexec -f")
    rn.add_argument("--mpiexec", help="launcher command to use instead of mpiexec")
    rn.add_argument("--params", help="--engine smpi: network parameters, a preset or FILE.json (default swing-sst)")
    add_output_options(rn)
    rn.set_defaults(func=cmd_run)

    ex = sub.add_parser("export", help="export a schedule to a runtime format (MSCCL XML)")
    ex.add_argument("file", help="schedule file (.json or .npz)")
    ex.add_argument("--format", default="msccl", choices=["msccl"], help="output format (default msccl)")
    ex.add_argument("-o", "--output", required=True, help="output file, e.g. algo.xml")
    ex.add_argument("--max-chunks", type=count(1), default=1024,
                    help="cap on chunks per buffer for fractional schedules, >= 1 (default 1024)")
    ex.add_argument("--json", action="store_true", help="machine-readable output")
    ex.set_defaults(func=cmd_export)

    im = sub.add_parser("import", help="read an MSCCL XML file into a schedule file (then verify, cost, simulate)")
    im.add_argument("file", help="MSCCL XML file")
    im.add_argument("-o", "--output", required=True, help="schedule file to write (.json or .npz)")
    im.add_argument("--json", action="store_true", help="machine-readable output")
    im.set_defaults(func=cmd_import)

    cal = sub.add_parser("calibrate", help="fit network parameters to measured collective timings (CSV or OSU)",
                         description="Fit the step model's alpha, link bandwidth, per-hop latency and gamma (or the "
                                     "--fit subset, which may add each implementation's software terms) by least "
                                     "squares on relative residuals to measured times, and leave each algorithm out "
                                     "once to predict it: a CSV of algorithm,ranks,bytes,seconds (+ collective, "
                                     "variant, ports, segment, implementation) or the output of an "
                                     "OSU benchmark (osu_allreduce, osu_allgather, osu_reduce_scatter, "
                                     "osu_alltoall). All measurements must be on the topology's ranks: pass one "
                                     "file per topology. -o writes a file for --params FILE.json.")
    cal.add_argument("measurements", help="CSV or OSU output file")
    cal.add_argument("spec", nargs="?", help=f"{SPEC_HELP}: the network the measurements ran on (required)")
    cal.add_argument("--topology", action=Deprecated, use=USE_SPEC, help=argparse.SUPPRESS)
    cal.add_argument("--fit", help="comma list of parameters to fit: alpha, link_bandwidth, per_hop_latency, gamma "
                                   "(the network's; default all four) and call_overhead, port_overhead, "
                                   "message_overhead, bandwidth_efficiency (each implementation's)")
    cal.add_argument("--format", choices=["csv", "osu"], help="input format (default: detected, OSU output starts "
                                                              "with '#')")
    cal.add_argument("--ranks", type=count(1), help="OSU only (required there): the number of ranks it ran on")
    cal.add_argument("--algorithm", help="OSU only: NAME[:VARIANT] of ours standing for the MPI library's "
                                         "algorithm (default rabenseifner)")
    _add_network_options(cal)
    cal.add_argument("-o", "--output", help="write the fitted parameters to this JSON file (for --params FILE)")
    add_output_options(cal)
    cal.set_defaults(func=cmd_calibrate)

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

    t2 = sub.add_parser("table2", help="regenerate Table 2 of the Swing paper (deficiencies, paper vs measured)")
    t2.add_argument("--side", type=count(2, TABLE2_MAX_SIDE), default=8,
                    help=f"torus side for the 2D/3D/4D measurements, 2 to {TABLE2_MAX_SIDE} (default 8; the 4D torus "
                         "has side^4 ranks)")
    t2.add_argument("--json", action="store_true", help="machine-readable output (default: a Markdown table)")
    t2.set_defaults(func=cmd_table2)

    algs = sub.add_parser("algorithms", help="list every algorithm with the collectives and topologies it serves")
    algs.add_argument("--json", action="store_true", help="machine-readable output")
    algs.set_defaults(func=cmd_algorithms)
    add_show_commands(sub)
    add_discovery_commands(sub)
    add_native_parser(sub, lambda p: _add_memory_budget(p, argparse.SUPPRESS))
    add_tune_parsers(sub, SPEC_HELP)
    add_sweep_parser(sub)
    for command in (*sub.choices.values(), *topo_sub.choices.values()):
        if command is not topo:
            _add_memory_budget(command, argparse.SUPPRESS)
            _add_solver_log(command)
    return parser


MEMORY_BUDGET_HELP = ("memory a request may plan to use, e.g. 8GiB (default: $DIRECTCOLL_MEMORY_BUDGET, else half "
                      "the available memory); requests estimated above it are refused before they start. Goes "
                      "before or after the command")


def _add_memory_budget(p: argparse.ArgumentParser, default) -> None:
    p.add_argument("--memory-budget", metavar="SIZE", type=size_option("--memory-budget"), default=default,
                   help=MEMORY_BUDGET_HELP)



SOLVER_LOG_HELP = ("show HiGHS's own log on standard error for LP solves longer than 2 s: auto (default: when "
                   "standard error is a terminal; $DIRECTCOLL_SOLVER_LOG), on or off. Goes before or after the "
                   "command")


def _add_solver_log(p: argparse.ArgumentParser) -> None:
    p.add_argument("--solver-log", choices=["auto", "on", "off"], default=argparse.SUPPRESS, help=SOLVER_LOG_HELP)


def main(argv: list[str] | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``) and return the exit status: 0 done, 1 a check
    that failed (verify, run), 2 a bad input or request (one line on stderr: ``directcoll: error: ...``).

    Output contract: the result on stdout (``--json``: one JSON document, ``--csv``: CSV rows), everything else
    (progress bars, warnings, errors, and after the run the deprecation notes of old spellings) on stderr.

    Returns:
        The exit status, an int in {0, 1, 2}, or 130 after Ctrl-C (one line on stderr, no traceback).

    Raises:
        SystemExit: a usage error (status 2, one line on stderr), ``--help`` or ``--version`` (status 0), as
            argparse does; every :class:`~directcoll.errors.DirectcollError` and OSError of a command is turned
            into status 2 and is not raised.

    Source: docs/architecture.md, "Command line" and "Quality bar".

    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "ring.json")
    ...     main(["schedule", "ring", "ring:4", "-o", path])  # doctest: +ELLIPSIS
    ...     main(["verify", path])
    wrote .../ring.json: ring allreduce on ring:4, 4 ranks, 6 steps, 48 transfers
    0
    OK: ring allreduce on 4 ranks, 6 steps, 48 transfers
    0
    """
    from contextlib import nullcontext

    from directcoll.cli.output import wide_tables
    from directcoll.lp.highs import solver_log
    from directcoll.resources import memory_budget_override

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        budget = getattr(args, "memory_budget", None)
        with (memory_budget_override(budget) if budget is not None else nullcontext(),
              solver_log(getattr(args, "solver_log", None)), wide_tables(getattr(args, "wide", False))):
            status = args.func(args)
        print_notes(args)  # after the run: an error stays one line on stderr
        return status
    except DirectcollError as exc:
        print(f"directcoll: error: {_one_line(str(exc)) if args.func is not cmd_run else exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:  # Ctrl-C: one line, 128 + SIGINT (directcoll.cli.entry guards the imports too)
        print("directcoll: interrupted", file=sys.stderr)
        return 130
    except OSError as exc:  # a file that went away or filled the disk while writing: the checks before are best-effort
        where = f" {exc.filename!r}" if exc.filename else ""
        print(f"directcoll: error: cannot access{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2


def _one_line(text: str) -> str:
    return " ".join(text.split())


if __name__ == "__main__":
    sys.exit(main())
