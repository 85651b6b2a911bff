"""``directcoll tune`` and ``directcoll bench``: tuning tables for libdirectcoll and the OSU-style benchmark
(docs/runtime.md, "Tuning and benchmarks").

``tune SPEC -o tuning.json`` writes the step model's winner per size (``--measure``: the fastest measured on this
machine's ranks, the MPI library's own collective included) with its programs next to the table; ``bench`` times
the MPI library's collective and ours in the same run and prints the OSU micro-benchmarks' format, which
``directcoll calibrate FILE SPEC --format osu --ranks N`` reads. The benchmark is a subcommand rather than a
separate ``directcoll-bench`` script so that it shares the one grammar (the network positional, ``--sizes``,
``--json``, ``--memory-budget``) that tests/test_cli_grammar.py checks on every command.

Source: docs/runtime.md, "Tuning and benchmarks".

>>> from directcoll.cli.main import main
>>> main(["tune", "ring:4", "--ranks", "3", "-o", "t.json"])  # the error goes to stderr
2
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from directcoll.cli.options import (
    IMPLEMENTATION_HELP,
    SIZES_FORMS,
    SPEC_HELP,
    add_output_options,
    add_testbed_options,
    check_output,
    count,
    read_sizes,
    refuse_testbed_options,
    testbed_plan,
)
from directcoll.cli.output import oversubscription, print_json

#: the sizes ``tune`` and ``bench`` use by default: 8 B to 128 MiB, every factor of 8
DEFAULT_TUNE_SIZES = "8B,64B,512B,4KiB,32KiB,256KiB,2MiB,16MiB,128MiB"
SERVED = ["allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast", "reduce"]


def register(sub) -> None:
    """Register ``directcoll tune`` and ``directcoll bench`` on the subparsers ``sub``.

    Returns:
        None.

    Raises:
        Nothing: builds parsers.

    Source: docs/runtime.md, "Tuning and benchmarks".

    >>> from directcoll.cli.main import build_parser
    >>> build_parser().parse_args(["tune", "ring:2", "-o", "t.json"]).func.__name__
    'cmd_tune'
    """
    tune = sub.add_parser("tune", help="write a tuning table (DIRECTCOLL_SCHEDULES) and its programs: the model's "
                                       "winners per size, or --measure the fastest on this machine",
                          description="Write the tuning table libdirectcoll reads (DIRECTCOLL_SCHEDULES) with each "
                                      "winner compiled as a program file next to it. A winner at a size covers the "
                                      "bytes from the geometric midpoint with the size below to the one with the "
                                      "size above (docs/runtime.md, \"Tuning and benchmarks\").")
    tune.add_argument("spec", help=SPEC_HELP + "; its compute nodes are the ranks")
    tune.add_argument("--ranks", type=count(1), help="the number of ranks, checked against the network's")
    tune.add_argument("--collective", default="allreduce", choices=SERVED, help="collective (default allreduce)")
    tune.add_argument("--root", type=count(0), help="broadcast and reduce: the root rank the programs are compiled "
                                                    "for, >= 0 (default 0; a call from another root falls through)")
    tune.add_argument("--sizes", help=f"{SIZES_FORMS} (default {DEFAULT_TUNE_SIZES})")
    tune.add_argument("--params", help="system preset or FILE.json of `directcoll calibrate -o` for the model "
                                       "(default swing-sst)")
    tune.add_argument("--implementation", help=IMPLEMENTATION_HELP)
    tune.add_argument("--algorithms", help="comma list of the candidates, as compare --algorithms takes them "
                                           "(families, registry names, plugins, file:PATH; default: compare's "
                                           "default contenders)")
    tune.add_argument("--measure", action="store_true",
                      help="instead of the model: run every candidate through libdirectcoll on the network's ranks "
                           "of this machine (mpiexec -n N) against the MPI library's own collective, keep the "
                           "fastest per size, and leave sizes the MPI library wins to it (no entry)")
    tune.add_argument("--round-seconds", type=float, default=0.2,
                      help="--measure: seconds per timed round, 5 rounds per size and side (default 0.2)")
    tune.add_argument("-o", "--output", required=True, help="the table to write, e.g. tuning.json (programs go "
                                                            "next to it)")
    add_output_options(tune)
    tune.set_defaults(func=cmd_tune)

    bench = sub.add_parser("bench", help="OSU-style latency test: the MPI library's collective and ours, same ranks, "
                                         "same run (output in the OSU micro-benchmarks' format)",
                           description="Time the MPI library's own collective (PMPI) and libdirectcoll's (the "
                                       "tuning table --table, else the model's table for SPEC) on --ranks ranks of "
                                       "this machine in the same run. Prints OSU output: `directcoll calibrate "
                                       "FILE SPEC --format osu --ranks N` reads its Avg Latency column (the MPI "
                                       "library's; with --impl ours, ours).")
    bench.add_argument("spec", nargs="?", help=SPEC_HELP + "; without --table, its model table is benchmarked")
    bench.add_argument("--ranks", type=count(1), help="ranks to run (default: the network's)")
    bench.add_argument("--collective", default="allreduce", choices=SERVED, help="collective (default allreduce)")
    bench.add_argument("--root", type=count(0), help="broadcast and reduce: the root rank, >= 0 (default 0)")
    bench.add_argument("--sizes", help=f"{SIZES_FORMS}; OSU's sizes: the vector, one rank's block for allgather "
                                       "(default 8B,1MiB,64MiB)")
    bench.add_argument("--table", help="the tuning table to run ours from (default: `tune SPEC`'s, in a temporary "
                                       "folder)")
    bench.add_argument("--engine", choices=["local", "testbed"], default="local",
                       help="local (default): the ranks on this machine, sharing its memory; testbed: one rank per "
                            "node of SPEC in an emulated network on this machine, MPI over TCP through shaped links "
                            "(needs root, docs/testbed.md)")
    add_testbed_options(bench, "--engine testbed: ")
    bench.add_argument("--impl", default="both", choices=["both", "native", "ours"],
                       help="both (default): the MPI library's and ours, alternating; native or ours alone")
    bench.add_argument("--round-seconds", type=float, default=0.2, help="seconds per timed round (default 0.2)")
    bench.add_argument("-o", "--output", help="also write the OSU output to this file")
    add_output_options(bench)
    bench.set_defaults(func=cmd_bench)


def _network(spec: str, params: str | None = None, implementation: str | None = None):
    from directcoll.simulate import resolve_network

    topology, net_params, _notes = resolve_network(spec, params)
    return topology, net_params.use(implementation)


def cmd_tune(args) -> int:
    """``directcoll tune SPEC -o tuning.json``: :func:`directcoll.reports.tuning.model_table`, or with ``--measure``
    :func:`~directcoll.reports.tuning.measured_table`, choosing among ``--algorithms`` (as compare's; plugins and
    ``file:PATH`` included) or the default contenders.

    Output: one line per table entry (bytes, program); ``--json``: the table written.

    Returns:
        0.

    Raises:
        DirectcollError: a bad network, sizes, ``--ranks`` other than the network's, ``--root`` with a collective
            other than broadcast and reduce or outside the ranks, an unwritable ``-o``, an ``--algorithms`` naming
            nothing or a ``file:`` that cannot be loaded, no MPI or a failed run (``--measure``). The CLI turns them
            into exit status 2.

    Source: docs/runtime.md, "Tuning and benchmarks".
    """
    from directcoll.errors import DirectcollError
    from directcoll.reports.tuning import measured_table, model_table

    check_output(args.output, "-o")
    if args.round_seconds <= 0:
        raise DirectcollError(f"--round-seconds must be > 0, got {args.round_seconds}")
    topology, params = _network(args.spec, args.params, args.implementation)
    sizes = read_sizes(args.sizes or DEFAULT_TUNE_SIZES)
    if args.measure:
        note = oversubscription(topology.num_compute)
        if note:
            print(f"directcoll: warning: {note}", file=sys.stderr)
        table = measured_table(topology, args.output, collective=args.collective, sizes=sizes, ranks=args.ranks,
                               round_seconds=args.round_seconds, root=args.root, algorithms=args.algorithms)
    else:
        table = model_table(topology, args.output, collective=args.collective, sizes=sizes, params=params,
                            ranks=args.ranks, root=args.root, algorithms=args.algorithms)
    if args.json:
        print_json(table)
        return 0
    root = f" from root {table['root']}" if "root" in table else ""
    print(f"wrote {args.output}: {table['collective']}{root} on {table['ranks']} ranks of {table['network']}, "
          f"{len(table['entries'])} entries from the {'measurements' if args.measure else 'step model'}")
    for e in table["entries"]:
        top = "..." if e["max_bytes"] is None else f"{e['max_bytes']}"
        print(f"  {e['min_bytes']:>12} .. {top:<12} {e['program']}")
    if not table["entries"]:
        print("  (no entries: the MPI library's own collective won at every size; every call falls through)")
    return 0


def cmd_bench(args) -> int:
    """``directcoll bench [SPEC] --ranks N``: :func:`directcoll.reports.tuning.run_bench` with the table ``--table``
    (or ``SPEC``'s model table).

    Output: the OSU-format text (also to ``-o``); ``--json``: {collective, ranks, table, (root: broadcast and
    reduce), rows: [{bytes, mpi_s, directcoll_s, ratio}]}, ratio = time(MPI library) / time(ours).

    Returns:
        0.

    Raises:
        DirectcollError: no ranks, no schedules for ``--impl`` both/ours (neither SPEC nor ``--table``), a
            ``--root`` the collective has not or a table without a program for it, no MPI, a failed run. The CLI
            turns them into exit status 2.

    Source: docs/runtime.md, "Tuning and benchmarks".
    """
    from directcoll.errors import DirectcollError
    from directcoll.reports.tuning import model_table, parse_bench, run_bench

    check_output(args.output, "-o")
    if args.round_seconds <= 0:
        raise DirectcollError(f"--round-seconds must be > 0, got {args.round_seconds}")
    sizes = read_sizes(args.sizes or "8B,1MiB,64MiB")
    topology = _network(args.spec)[0] if args.spec else None
    ranks = args.ranks or (topology.num_compute if topology else None)
    if ranks is None:
        raise DirectcollError("bench needs --ranks N or a network SPEC")
    if args.impl != "native" and not args.table and topology is None:
        raise DirectcollError(f"--impl {args.impl} runs our schedules: give a network SPEC or --table FILE")
    with tempfile.TemporaryDirectory(prefix="directcoll-bench-") as tmp:
        table = args.table
        if table is None and topology is not None and args.impl != "native":
            table = str(Path(tmp) / "tuning.json")
            model_table(topology, table, collective=args.collective, sizes=sizes, ranks=ranks, root=args.root)
        if args.engine == "testbed":
            text = _bench_on_testbed(args, topology, ranks, sizes, table)
        else:
            refuse_testbed_options(args)
            text = run_bench(ranks, sizes, collective=args.collective, impl=args.impl, table=table, root=args.root,
                             round_seconds=args.round_seconds)
    if args.output:
        Path(args.output).write_text(text)
    if args.json:
        rows = []
        for size, (first, second) in sorted(parse_bench(text).items()):
            mpi, ours = (first, second) if args.impl == "both" else (first, None) if args.impl == "native" else \
                (None, first)
            rows.append({"bytes": size, "mpi_s": mpi, "directcoll_s": ours,
                         "ratio": mpi / ours if mpi and ours else None})
        print_json({"collective": args.collective, "ranks": ranks, "impl": args.impl, "table": args.table,
                    **({"root": args.root or 0} if args.collective in ("broadcast", "reduce") else {}), "rows": rows})
    else:
        sys.stdout.write(text)
    return 0


def _bench_on_testbed(args, topology, ranks: int, sizes, table) -> str:
    """``bench --engine testbed``: the same run, one rank per compute node of SPEC's emulated testbed."""
    from directcoll.errors import DirectcollError
    from directcoll.reports.tuning import run_bench
    from directcoll.runtime.native import find_mpicc, find_mpiexec
    from directcoll.testbed.netns import Testbed, require_hydra, require_privileges

    if topology is None or ranks != topology.num_compute:
        raise DirectcollError("--engine testbed runs one rank per compute node of SPEC: give SPEC and no other "
                              "--ranks")
    require_privileges()
    require_hydra([find_mpiexec(find_mpicc())])
    with Testbed(testbed_plan(args, topology)) as bed:
        return run_bench(ranks, sizes, collective=args.collective, impl=args.impl, table=table, root=args.root,
                         round_seconds=args.round_seconds, launch=bed.mpiexec)
