"""Commands that say what exists without triggering an error: ``directcoll presets`` (every system preset) and
``directcoll help specs`` (the grammar of network specs: families, aliases, operators, ``file:PATH``, presets).

Both print from the library's own tables (:func:`directcoll.topology.table.families`,
:mod:`directcoll.topology.grammar`, :func:`directcoll.catalog.presets.list_presets`), never from a copy.

Source: docs/architecture.md, "Command line" (``directcoll topology families``, ``directcoll presets`` and
``directcoll help specs``: what exists can be discovered without an error).

>>> from directcoll.cli.main import main
>>> main(["help", "specs"])  # doctest: +ELLIPSIS
A network is given as SPEC ...
0
"""

from __future__ import annotations

import re
import shutil

from directcoll.cli.options import add_output_options
from directcoll.cli.output import echo, gbps, print_json

#: SystemPreset fields shown by ``directcoll presets``, with their JSON names (SI units)
PRESET_FIELDS = {"link_bandwidth": "link_bandwidth_Bps", "link_latency": "link_latency_s",
                 "per_hop_latency": "per_hop_latency_s", "alpha": "alpha_s", "beta": "beta_s_per_byte",
                 "gamma": "gamma_s_per_byte", "host_injection": "host_injection_Bps"}


def register(sub) -> None:
    """Register ``presets`` and ``help specs`` on the subcommand parsers ``sub`` of
    :func:`directcoll.cli.main.build_parser`.

    Returns:
        None.

    Raises:
        Nothing: adds parsers.

    Source: docs/architecture.md, "Command line" (discovery commands).

    >>> from directcoll.cli.main import build_parser
    >>> build_parser().parse_args(["help", "specs"]).func.__name__
    'cmd_help_specs'
    """
    pre = sub.add_parser("presets", help="list every system preset: topology, network parameters and source",
                         description="A preset names a published system: give it as SPEC (its first topology and "
                                     "its parameters) or as --params NAME (its parameters only).")
    add_output_options(pre)
    pre.set_defaults(func=cmd_presets)
    hlp = sub.add_parser("help", help="reference pages: `directcoll help specs` (the network spec grammar)")
    topics = hlp.add_subparsers(dest="help_topic", required=True, metavar="TOPIC")
    specs = topics.add_parser("specs", help="the grammar of network specs: families, operators, file:PATH, presets")
    add_output_options(specs)
    specs.set_defaults(func=cmd_help_specs)


def preset_rows() -> list[dict]:
    """One dict per system preset: ``name``, ``key``, ``topologies``, the network parameters in SI units
    (``link_bandwidth_Bps``, ``link_latency_s``, ``per_hop_latency_s``, ``alpha_s``, ``beta_s_per_byte``,
    ``gamma_s_per_byte``, ``host_injection_Bps``; None where the source gives none), ``source``, ``notes`` and
    ``parameter_sources``.

    Returns:
        A list of dicts, in :func:`directcoll.catalog.presets.list_presets` order.

    Raises:
        Nothing: reads the packaged data.

    Source: ``catalog/data/systems.json`` (:mod:`directcoll.catalog.presets`).

    >>> [r for r in preset_rows() if r["name"] == "swing-sst"][0]["link_bandwidth_Bps"]
    50000000000.0
    """
    from directcoll.catalog.presets import list_presets

    return [{"name": p.name, "key": p.key, "topologies": list(p.topologies),
             **{json_name: getattr(p, field) for field, json_name in PRESET_FIELDS.items()},
             "source": p.source, "notes": p.notes, "parameter_sources": dict(p.parameter_sources)}
            for p in list_presets()]


def cmd_presets(args) -> int:
    """``directcoll presets``: every system preset with its topologies, network parameters and source.

    Output: one block per preset (name, topologies, parameters as ``400 Gb/s``, ``100 ns``, source); ``--json``:
    the list of :func:`preset_rows`.

    Returns:
        0.

    Raises:
        Nothing: lists the packaged data.

    Source: ``catalog/data/systems.json``; docs/architecture.md, "Command line" (discovery).

    >>> from directcoll.cli.main import main
    >>> main(["presets"])  # doctest: +ELLIPSIS
    swing-sst: torus:...
    ...
    0
    """
    from directcoll.units import format_time

    rows = preset_rows()
    if args.json:
        print_json(rows)
        return 0
    for r in rows:
        values = []
        for field, json_name in PRESET_FIELDS.items():
            v = r[json_name]
            if v is None:
                continue
            text = (f"{gbps(v)} Gb/s" if json_name.endswith("Bps") else
                    f"{format_time(v)}/B" if json_name.endswith("per_byte") else format_time(v))
            values.append(f"{field} {text}")
        echo(f"{r['name']}: {', '.join(r['topologies']) or 'no topology'}")
        echo(f"{'; '.join(values) or 'no network parameters'}", indent=4)
        echo(f"source: {r['source']}", indent=4)
    return 0


def spec_grammar() -> str:
    """The grammar of spec strings as :mod:`directcoll.topology.grammar` documents it (its ``::`` block).

    Returns:
        The grammar lines, dedented, as one str ("" when Python runs without docstrings, ``-OO``).

    Raises:
        Nothing: reads a docstring.

    Source: :mod:`directcoll.topology.grammar`.

    >>> spec_grammar().splitlines()[0].split()[:2]
    ['spec', ':=']
    """
    import textwrap

    from directcoll.topology import grammar

    doc = grammar.__doc__ or ""
    _, sep, rest = doc.partition("::\n")
    if not sep:
        return ""
    block = []
    for line in rest.splitlines()[1:]:  # the block: indented lines after one blank line, up to the next blank
        if not line.strip():
            break
        block.append(line)
    return textwrap.dedent("\n".join(block))


def cmd_help_specs(args) -> int:
    """``directcoll help specs``: how a network is written wherever a command takes SPEC (or ``--topology``): the
    grammar, every family and alias with its forms, the operators, ``file:PATH`` and the system presets.

    Output: the reference as text; ``--json``: {grammar, families (:func:`directcoll.topology.table.families`),
    file {prefix, formats, suffixes}, presets (name, default topology, whether it gives
    network parameters)}.

    Returns:
        0.

    Raises:
        Nothing: lists the grammar.

    Source: :mod:`directcoll.topology.grammar`, :mod:`directcoll.topology.table`, :mod:`directcoll.topology.files`
    and :mod:`directcoll.catalog.presets`; docs/architecture.md, "Command line" (discovery).
    """
    from directcoll.catalog.presets import has_network_parameters, list_presets
    from directcoll.topology.files import FILE_PREFIX, FORMATS, SUFFIXES
    from directcoll.topology.table import families

    rows = families()
    presets = [{"name": p.name, "topology": p.topology, "parameters": has_network_parameters(p)}
               for p in list_presets()]
    suffixes = {fmt: [s for s, f in SUFFIXES.items() if f == fmt] for fmt in FORMATS}
    if args.json:
        print_json({"grammar": spec_grammar(), "families": rows,
                    "file": {"prefix": FILE_PREFIX, "formats": list(FORMATS), "suffixes": suffixes},
                    "presets": presets})
        return 0
    echo("A network is given as SPEC (compare, schedule, run, calibrate, topology describe/export) or as "
         "--topology SPEC (the override of commands that read a schedule file): a topology family, operators "
         "around specs, a network file or a system preset.", hang=0)
    print("\nGrammar:")
    width = shutil.get_terminal_size((80, 24)).columns
    grammar = spec_grammar().splitlines()
    if max(len(line) for line in grammar) + 4 <= width:
        for line in grammar:
            print(f"    {line}")
    else:  # each production on its line, its comment wrapped below it
        entries: list[list[str]] = []
        for line in grammar:
            if len(line) - len(line.lstrip()) >= 30 and entries:  # a comment's continuation
                entries[-1][1] += " " + line.strip()
                continue
            gap = next((m for m in re.finditer(r"\s{3,}(?=\S)", line) if m.end() >= 40), None)  # the comment
            production, comment = (line[:gap.start()], line[gap.end():]) if gap else (line.rstrip(), "")
            entries.append([production, comment.strip()])
        for production, comment in entries:
            print(f"    {production}")
            if comment:
                echo(comment, indent=18, hang=18)
    for kind, title in (("family", "Families"), ("alias", "Aliases"), ("operator", "Operators")):
        chosen = [r for r in rows if r["type"] == kind]
        width = max(len(r["name"]) for r in chosen)
        print(f"\n{title}:")
        for r in chosen:
            echo(f"{r['name']:<{width}}  {r['form']}  ({r['description']})", indent=4, hang=width + 6)
    forms = "; ".join(f"{fmt} ({', '.join(s)})" for fmt, s in suffixes.items())
    print()
    echo(f"Network files: {FILE_PREFIX}PATH, a {forms} file by its suffix; `directcoll topology export SPEC -o "
         "FILE` writes one.", hang=0)
    width = max(len(p["name"]) for p in presets)
    print()
    echo("System presets (the first published topology and the parameters; `directcoll presets` for the values):",
         hang=0)
    for p in presets:
        none = "(no topology: --params NAME only)" if p["parameters"] else "(no topology or parameters)"
        echo(f"{p['name']:<{width}}  {p['topology'] or none}", indent=4, hang=width + 6)
    return 0
