"""``directcoll testbed up | exec | list | down``: an emulated direct-connect network on this machine (a network
namespace per node, a shaped veth pair per link, routes along minimal paths) and MPI programs run on it.

Errors are raised as :class:`~directcoll.errors.DirectcollError` for :func:`directcoll.cli.main.main` to print as
one line (status 2).

Source: docs/testbed.md; docs/architecture.md, "Command line".

>>> from directcoll.cli.main import main
>>> main(["testbed", "exec", "ring:4", "--"])  # no command: refused before anything is built
2
"""

from __future__ import annotations

import argparse
import sys
import time

from directcoll.cli.options import SPEC_HELP, add_testbed_options, network_spec, preset_spec, testbed_plan
from directcoll.cli.output import print_json
from directcoll.errors import DirectcollError


def register(sub) -> None:
    """Register ``directcoll testbed`` and its subcommands up, exec, list and down on the subparsers ``sub``. Raises:
    nothing (builds parsers). Source: docs/architecture.md, "Command line"."""
    tb = sub.add_parser("testbed", help="an emulated network on this machine: namespaces, veth links, tc; MPI on it",
                        description="Build SPEC on this machine as one network namespace per node and a veth pair "
                                    "per link, shaped by tc, with routes along every minimal path, and run MPI ranks "
                                    "in it over TCP (needs root; docs/testbed.md).")
    tb_sub = tb.add_subparsers(dest="testbed_command", required=True, metavar="SUBCOMMAND")
    up = tb_sub.add_parser("up", help="build a testbed and leave it up (until `testbed down`)")
    up.add_argument("spec", help=SPEC_HELP)
    add_testbed_options(up)
    up.add_argument("--json", action="store_true", help="machine-readable output")
    up.set_defaults(func=cmd_testbed_up)
    ex = tb_sub.add_parser("exec", help="build a testbed, run CMD with one MPI rank per node, remove it",
                           description="Run CMD ... under MPICH's mpiexec with one rank in the namespace of every "
                                       "compute node of SPEC (rank r on node r), MPI over TCP through the emulated "
                                       "links; the testbed is removed when CMD ends, on Ctrl-C and on SIGTERM.")
    ex.add_argument("spec", help=SPEC_HELP)
    add_testbed_options(ex)
    ex.add_argument("--mpiexec", help="MPICH's mpiexec to use (default: mpiexec on PATH)")
    ex.add_argument("--json", action="store_true", help="machine-readable output: CMD's standard output kept in "
                                                        "one document with its exit status and duration")
    ex.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- CMD ...", help="the program and its arguments")
    ex.set_defaults(func=cmd_testbed_exec)
    ls = tb_sub.add_parser("list", help="list the testbeds of this machine (stale: their owner is gone)")
    ls.add_argument("--json", action="store_true", help="machine-readable output")
    ls.set_defaults(func=cmd_testbed_list)
    dn = tb_sub.add_parser("down", help="remove testbeds: by name, --stale (whose owner is gone) or --all")
    dn.add_argument("names", nargs="*", help="testbed names (see `directcoll testbed list`)")
    dn.add_argument("--stale", action="store_true", help="remove the testbeds whose owner process is gone (a "
                                                         "launcher killed with SIGKILL)")
    dn.add_argument("--all", action="store_true", help="remove every testbed of this machine")
    dn.add_argument("--json", action="store_true", help="machine-readable output")
    dn.set_defaults(func=cmd_testbed_down)


def cmd_testbed_up(args) -> int:
    """``directcoll testbed up SPEC``: build SPEC's testbed and leave it up; its name is printed
    (:class:`directcoll.testbed.netns.Testbed` with no owner: ``down --stale`` leaves it alone).

    Output: ``testbed NAME: N namespaces, L links ...``; ``--json``: {name, spec, namespaces, addresses, links,
    link_rate_Bps, queue_bytes}.

    Returns:
        0.

    Raises:
        MissingDependencyError: not root and no CAP_NET_ADMIN, or no iproute2.
        DirectcollError: a bad rate, delay or queue, too many nodes, an ip or tc command that failed.
        SpecError, TopologyError: a bad SPEC.

    Source: docs/testbed.md, "What it builds".
    """
    from directcoll.testbed.netns import Testbed
    from directcoll.topology import parse

    layout = testbed_plan(args, parse(preset_spec(network_spec(args))))
    Testbed(layout, owner=None).up()
    info = {"name": layout.prefix, "spec": layout.spec, "namespaces": layout.namespaces,
            "addresses": layout.addresses, "links": len(layout.pairs),
            "link_rate_Bps": layout.link_rate, "queue_bytes": layout.queue}
    if args.json:
        print_json(info)
    else:
        print(f"testbed {layout.prefix}: {len(layout.namespaces)} namespaces, {len(layout.pairs)} veth pairs, "
              f"ranks in {layout.namespaces[0]}..{layout.namespaces[layout.num_compute - 1]} "
              f"(`ip netns exec NAME CMD`); remove it with `directcoll testbed down {layout.prefix}`")
    return 0


def cmd_testbed_exec(args) -> int:
    """``directcoll testbed exec SPEC -- CMD ...``: build SPEC's testbed, run CMD as one MPI rank per compute node
    (:meth:`Testbed.mpiexec <directcoll.testbed.netns.Testbed.mpiexec>`), remove the testbed.

    Output: CMD's own output; ``--json``: {name, spec, ranks, command, returncode, seconds, output} with CMD's
    standard output in ``output`` (its standard error passes through).

    Returns:
        CMD's exit status (mpiexec's), or 130 after Ctrl-C.

    Raises:
        MissingDependencyError: no privileges, or a launcher that is not MPICH's Hydra.
        DirectcollError: no CMD, or as :func:`cmd_testbed_up`.

    Source: docs/testbed.md, "Running MPI programs".
    """
    import shutil
    import subprocess

    from directcoll.testbed.netns import Testbed, require_hydra, require_privileges
    from directcoll.topology import parse

    # argparse keeps everything after SPEC: options, then `--`, then the command (a leading `--` it drops itself)
    cut = args.argv.index("--") if "--" in args.argv else 0
    if cut == 0 and args.argv[:1] and args.argv[0].startswith("-"):
        raise DirectcollError("testbed exec needs `--` between its options and the command, e.g. `directcoll "
                              "testbed exec ring:4 --link-rate 50Mbps -- ./osu_allreduce`")
    _options_after_spec(args, args.argv[:cut])
    argv = args.argv[cut + 1:] if "--" in args.argv else args.argv
    if not argv:
        raise DirectcollError("testbed exec needs a command after --, e.g. `directcoll testbed exec ring:4 -- "
                              "./osu_allreduce`")
    require_privileges()
    launcher = args.mpiexec.split() if args.mpiexec else [shutil.which("mpiexec") or "mpiexec"]
    require_hydra(launcher)
    with Testbed(testbed_plan(args, parse(preset_spec(network_spec(args))))) as bed:
        print(f"directcoll: testbed {bed.plan.prefix} up: {bed.plan.num_compute} ranks on {bed.plan.spec}",
              file=sys.stderr)
        t0 = time.monotonic()
        done = subprocess.run(bed.mpiexec(launcher, argv), stdout=subprocess.PIPE if args.json else None, text=True)
    if args.json:
        print_json({"name": bed.plan.prefix, "spec": bed.plan.spec, "ranks": bed.plan.num_compute,
                    "command": argv, "returncode": done.returncode, "seconds": time.monotonic() - t0,
                    "output": done.stdout})
    return done.returncode


def _options_after_spec(args, head: list[str]) -> None:
    """Options given between SPEC and ``--`` (argparse's remainder keeps them): parse them as ``testbed exec``'s
    own options into ``args``."""
    from directcoll.cli.options import Parser

    late = Parser(prog="directcoll testbed exec", add_help=False)
    add_testbed_options(late)
    late.add_argument("--mpiexec")
    late.add_argument("--json", action="store_true", default=None)
    for key, value in vars(late.parse_args(head)).items():
        if value is not None:
            setattr(args, key, value)


def cmd_testbed_list(args) -> int:
    """``directcoll testbed list``: every testbed of this machine with its spec, owner and whether it is stale.

    Output: one line per testbed; ``--json``: the states (:func:`directcoll.testbed.netns.states`).

    Returns:
        0.

    Raises:
        Nothing: reads the state files.

    Source: docs/testbed.md, "Removal".
    """
    from directcoll.testbed.netns import states

    found = states()
    if args.json:
        print_json(found)
        return 0
    for s in found:
        owner = "left up" if s.get("pid") is None else f"owner pid {s['pid']}"
        print(f"{s['name']}: {s.get('spec', '?')}, {len(s.get('namespaces', []))} namespaces, {owner}"
              + (", stale" if s["stale"] else ""))
    if not found:
        print("no testbed on this machine")
    return 0


def cmd_testbed_down(args) -> int:
    """``directcoll testbed down [NAME ...] [--stale] [--all]``: remove testbeds (their ranks killed, their
    namespaces and links deleted) and nothing else.

    Output: ``removed NAME (N namespaces)`` per testbed; ``--json``: {removed: {name: [namespaces]}}.

    Returns:
        0.

    Raises:
        MissingDependencyError: no privileges.
        DirectcollError: no NAME, --stale or --all; a NAME that is not a testbed of this machine.

    Source: docs/testbed.md, "Removal".
    """
    from directcoll.testbed.netns import down, require_privileges, states

    if not (args.names or args.stale or args.all):
        raise DirectcollError("testbed down needs NAME ..., --stale or --all (see `directcoll testbed list`)")
    found = {s["name"]: s for s in states()}
    unknown = [n for n in args.names if n not in found]
    if unknown:
        raise DirectcollError(f"no testbed named {', '.join(unknown)} on this machine; "
                              f"known: {', '.join(found) or 'none'}")
    chosen = [s for s in found.values() if args.all or s["name"] in args.names or args.stale and s["stale"]]
    if chosen:
        require_privileges()
    removed = {s["name"]: down(s["file"]) for s in chosen}
    if args.json:
        print_json({"removed": removed})
    else:
        for name, namespaces in removed.items():
            print(f"removed {name} ({len(namespaces)} namespaces)")
        if not removed:
            print("nothing to remove")
    return 0
