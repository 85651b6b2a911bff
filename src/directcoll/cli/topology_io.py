"""``directcoll topology export``: write a topology to a network file that ``file:PATH`` reads back.

Errors are raised as :class:`~directcoll.errors.DirectcollError` for :func:`directcoll.cli.main.main` to print as
one line (status 2).

Source: docs/topology.md, "Your own network".
"""

from __future__ import annotations

from directcoll.cli.options import check_output, preset_spec
from directcoll.cli.output import print_json


def cmd_topology_export(args) -> int:
    """``directcoll topology export SPEC -o FILE [--format graphml|edges|json|simgrid]``: write the topology of a
    spec (or a preset's, or another file's) with every directed link's bandwidth (bit/s) and latency (s) and the
    switches marked, as a directed graph in link order (:func:`directcoll.topology.files.write_network`), so
    ``file:FILE`` gives the same links, values and node count. The format comes from the suffix unless
    ``--format``. ``--format simgrid`` writes a SimGrid platform instead (hosts, links, our routes:
    :mod:`directcoll.topology.simgrid`), which ``file:`` does not read back.

    Output: one line ``wrote FILE: SPEC, N nodes, S switches, L directed links (FORMAT)``; ``--json``: an object
    with ``file``, ``format``, ``spec``, ``nodes``, ``switches`` and ``links``.

    Returns:
        0.

    Raises:
        DirectcollError: an unwritable output file.
        SpecError: an unparseable spec, or an unknown format or suffix.
        TopologyError, ResourceError: as :func:`directcoll.topology.parse`.

    Source: docs/topology.md, "Your own network".

    >>> import os, tempfile
    >>> from directcoll.cli.main import main
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     main(["topology", "export", "ring:4", "-o", os.path.join(tmp, "ring.graphml")])  # doctest: +ELLIPSIS
    wrote .../ring.graphml: ring:4, 4 nodes, 0 switches, 8 directed links (graphml)
    0
    """
    from directcoll.topology import parse
    from directcoll.topology.files import file_format, write_network

    if args.format == "simgrid":
        return _export_simgrid(args)
    fmt = file_format(args.output, args.format)
    check_output(args.output, "-o")
    topology = parse(preset_spec(args.spec))
    write_network(topology, args.output, fmt)
    info = {"file": args.output, "format": fmt, "spec": topology.spec, "nodes": topology.num_compute,
            "switches": topology.num_nodes - topology.num_compute, "links": topology.num_links}
    if args.json:
        print_json(info)
    else:
        print(f"wrote {args.output}: {topology.spec}, {info['nodes']} nodes, {info['switches']} switches, "
              f"{info['links']} directed links ({fmt})")
    return 0


def _export_simgrid(args) -> int:
    """``topology export SPEC --format simgrid -o platform.xml``: the SimGrid platform of SPEC with its own link
    values (:func:`directcoll.topology.simgrid.write_platform`); the same output contract as the other formats,
    plus ``routes`` and ``routing``."""
    from directcoll.topology import parse
    from directcoll.topology.simgrid import write_platform

    check_output(args.output, "-o")
    topology = parse(preset_spec(args.spec))
    written = write_platform(topology, args.output)
    info = {"file": args.output, "format": "simgrid", "spec": topology.spec, "nodes": topology.num_compute,
            "switches": topology.num_nodes - topology.num_compute, "links": topology.num_links,
            "routes": written["routes"], "routing": written["routing"]}
    if args.json:
        print_json(info)
    else:
        print(f"wrote {args.output}: {topology.spec}, {info['nodes']} hosts, {info['links']} directed links, "
              f"{info['routes']:,} {info['routing']} routes (SimGrid platform)")
    return 0
