"""``directcoll algorithms``: every algorithm with the collectives and topologies it serves.

Source: :data:`directcoll.registry.ALGORITHMS`; docs/architecture.md, "Command line".
"""

from __future__ import annotations

from directcoll.cli.output import echo, print_json


def register(sub) -> None:
    """Register ``directcoll algorithms`` on the subparsers ``sub``. Raises: nothing (builds
    parsers). Source: docs/architecture.md, "Command line"."""
    algs = sub.add_parser("algorithms", help="list every algorithm with the collectives and topologies it serves")
    algs.add_argument("--json", action="store_true", help="machine-readable output")
    algs.set_defaults(func=cmd_algorithms)


def cmd_algorithms(args) -> int:
    """``directcoll algorithms``: every registered algorithm with its summary (paper and section), collectives,
    variants and the topologies it serves.

    Output: three lines per algorithm (a fourth, ``from:``, for plugins: docs/language.md, "Plugins"), or with
    ``--json`` a list of :meth:`Algorithm.to_dict <directcoll.registry.Algorithm.to_dict>` (plugins with their
    ``origin``).

    Returns:
        0.

    Raises:
        Nothing: lists the registry (a plugin that fails to load is a warning line on stderr).

    Source: :data:`directcoll.registry.ALGORITHMS` (each summary cites its paper).

    >>> from directcoll.cli.main import main
    >>> main(["algorithms"])  # doctest: +ELLIPSIS
    ring: ring reduce-scatter + allgather, 1, 2 or 4 concurrent rings (Swing paper
    ...
    0
    """
    from directcoll.plugins import load_installed, origin
    from directcoll.registry import ALGORITHMS

    load_installed()
    entries = [{**alg.to_dict(), **({} if origin(alg.name) == "built-in" else {"origin": origin(alg.name)})}
               for alg in ALGORITHMS.values()]
    if args.json:
        print_json(entries)
        return 0
    for e in entries:
        echo(f"{e['name']}: {e['summary']}")
        echo(f"collectives: {', '.join(e['collectives'])}; variants: {', '.join(e['variants'])}", indent=4)
        echo(f"serves: {e['topologies']}", indent=4)
        if "origin" in e:
            echo(f"from: {e['origin']}", indent=4)
    return 0
