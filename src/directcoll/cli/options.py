"""What the commands share (docs/architecture.md, "Command line": commands share helpers through this module and
:mod:`directcoll.cli.output`, never through each other): argument types and checks (counts with a minimum, times
with units, writable outputs), the option groups several commands take (network parameters, build options, the
testbed's links, the global memory budget and solver log) with their defaults and meaning, and the grammar of
every command: ``--json`` / ``--csv`` mutually exclusive (:func:`add_output_options`), one ``--sizes`` list syntax
(:func:`read_sizes`), old spellings kept one release with a note on stderr (:class:`Deprecated`).

Every bad value ends in one line: argparse types raise :class:`argparse.ArgumentTypeError` (reported by
:class:`Parser` as ``directcoll COMMAND: error: argument --ports: ...``), the checks run inside a command raise
:class:`~directcoll.errors.DirectcollError`.

Source: docs/architecture.md, "Quality bar" (one clear error naming the input and what is accepted).

>>> count(1)("4"), positive_size("64KiB", "--size")
(4, 65536)
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from directcoll.errors import DirectcollError
from directcoll.simulate.packet import MAX_VIRTUAL_CHANNELS, SCHEME_CHANNELS, VC_SCHEMES
from directcoll.topology.routing import ROUTINGS
from directcoll.units import parse_bandwidth, parse_duration, parse_size, parse_sizes


class Parser(argparse.ArgumentParser):
    """An argparse parser whose usage errors are one line on stderr (no usage block), exit status 2.

    Raises:
        SystemExit: status 2 on a usage error (see :meth:`error`).

    Source: docs/architecture.md, "Quality bar"; Python's argparse.

    >>> Parser(prog="demo").parse_args([])
    Namespace()
    """

    def error(self, message: str):
        """Print ``PROG: error: MESSAGE (see PROG --help)`` on stderr and exit.

        Raises:
            SystemExit: always, with status 2.

        Source: docs/architecture.md, "Quality bar".

        >>> Parser(prog="demo").error("bad")
        Traceback (most recent call last):
        ...
        SystemExit: 2
        """
        if "not allowed with argument" in message:  # a mutually exclusive group: --json with --csv
            message += "; they each print the whole result, give one of them"
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def fraction(text: str) -> float:
    """An argparse type: a finite fraction >= 0, as a number (``0.005``) or a percentage (``0.5%``).

    Returns:
        The fraction (0.5% -> 0.005).

    Raises:
        argparse.ArgumentTypeError: anything else (argparse reports it as a usage error, status 2).

    Source: docs/compare.md, "Ties" (the tie tolerance).

    >>> fraction("0.5%"), fraction("0.01")
    (0.005, 0.01)
    """
    import math

    body, scale = (text[:-1], 100.0) if text.strip().endswith("%") else (text, 1.0)
    try:
        value = float(body) / scale
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"must be a fraction >= 0 such as 0.005 or 0.5%, got {text!r}")
    return value


def count(minimum: int, maximum: int | None = None):
    """An argparse type: an integer >= ``minimum`` (and <= ``maximum`` when given).

    Returns:
        A function str -> int for ``add_argument(type=...)``.

    Raises:
        Nothing itself; the returned function raises argparse.ArgumentTypeError on a non-integer or a value out of
        range (argparse reports it as a usage error, status 2).

    Source: docs/architecture.md, "Quality bar".

    >>> count(1, 16)("8")
    8
    >>> count(1)("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be an integer >= 1, got '0'
    """

    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum or (maximum is not None and value > maximum):
            accepted = f"from {minimum} to {maximum}" if maximum is not None else f">= {minimum}"
            raise argparse.ArgumentTypeError(f"must be an integer {accepted}, got {text!r}")
        return value

    parse.__name__ = "count"
    return parse


def _from_library(function, *args):
    def parse(text: str):
        try:
            return function(text, *args)
        except DirectcollError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = getattr(function, "__name__", "value")
    return parse


#: argparse type: a time >= 0 (``1us``, ``400ns``, ``2ms``; a bare number is seconds)
duration = _from_library(parse_duration, "time")
#: argparse type: seconds per byte >= 0 (``0.2ns`` or ``0.2ns/B``; a bare number is seconds per byte)
per_byte = _from_library(parse_duration, "time per byte", "B")
#: argparse type: a bandwidth with its unit (``400Gbps``, ``50GB/s``)
bandwidth = _from_library(parse_bandwidth)


def positive_size(text: str, option: str) -> int:
    """Bytes of ``text`` (``64MiB``), which must be at least one byte.

    Returns:
        The size in bytes, an int >= 1.

    Raises:
        DirectcollError: not a size, or zero bytes, naming ``option``.

    Source: :func:`directcoll.units.parse_size`; docs/architecture.md, "Quality bar".

    >>> positive_size("0", "--size")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: --size '0' must be at least 1 byte; ...
    """
    try:
        value = parse_size(text)
    except DirectcollError as exc:
        raise DirectcollError(f"{option}: {exc}") from None
    if value < 1:
        raise DirectcollError(f"{option} {text!r} must be at least 1 byte; use e.g. 1024, 64KiB or 1MiB")
    return value


def size_option(option: str):
    """An argparse type: a size of at least one byte (:func:`positive_size`).

    Returns:
        A function str -> int (bytes) raising argparse.ArgumentTypeError on bad input.

    Raises:
        Nothing itself; the returned function raises argparse.ArgumentTypeError.

    Source: :func:`directcoll.units.parse_size`; the CLI's ``--memory-budget``.

    >>> size_option("--memory-budget")("8GiB")
    8589934592
    """
    return _from_library(lambda text: positive_size(text, option))


def check_output(path: str | os.PathLike | None, option: str) -> None:
    """Refuse an output file that cannot be written, before any work starts: its folder must exist and be
    writable, and the path must not be a folder or an existing read-only file.

    Returns:
        None (also for ``path`` None: no output asked for).

    Raises:
        DirectcollError: naming the option, the path and why.

    Source: docs/architecture.md, "Quality bar" (refuse early, name the input).

    >>> check_output(None, "-o")
    >>> check_output("no/such/folder/out.json", "-o")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: -o 'no/such/folder/out.json': cannot write there, folder ... does not exist; ...
    """
    if path is None:
        return
    if str(path) == "":
        raise DirectcollError(f"{option}: empty file name; give a file to write")
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        why = "is not a folder" if parent.exists() else "does not exist"
        raise DirectcollError(f"{option} {str(path)!r}: cannot write there, folder {str(parent)!r} {why}; "
                              "create it first or choose another file")
    if p.is_dir():
        raise DirectcollError(f"{option} {str(path)!r} is a folder; give a file name")
    if p.exists() and not os.access(p, os.W_OK):
        raise DirectcollError(f"{option} {str(path)!r}: the file exists and is not writable")
    if not os.access(parent, os.W_OK | os.X_OK) or _pseudo_filesystem(parent):
        raise DirectcollError(f"{option} {str(path)!r}: folder {str(parent)!r} is not writable")


def _pseudo_filesystem(folder: Path) -> bool:
    """/proc and /sys accept no new files even for root (os.access says yes there)."""
    if not sys.platform.startswith("linux"):
        return False
    resolved = folder.resolve()
    return any(resolved == Path(root) or Path(root) in resolved.parents for root in ("/proc", "/sys"))


class Sizes(list):
    """Sizes in bytes (a list of ints) that remember the text they were read from (``.text``), for titles and for
    passing on to the MPI ranks.

    Raises:
        Nothing: a list with one more attribute.

    Source: docs/architecture.md, "Command line" ("one size flag with one list syntax");
    :func:`directcoll.units.parse_sizes`.

    >>> s = read_sizes("1KiB,1MiB"); s, s.text
    ([1024, 1048576], '1KiB,1MiB')
    """

    text: str = ""


#: the help of ``--sizes`` wherever it takes a list (commands that take one size say so in theirs)
#: the help of --implementation, wherever network parameters are taken
IMPLEMENTATION_HELP = ("the implementation whose software costs to add, one of the --params file's "
                       "'implementations' (default: its 'default_implementation', else libdirectcoll, this "
                       "project's runtime); see docs/simulation.md, Hosts and implementations")
SIZES_FORMS = "a size (4096, 32B, 64KiB, 1MB), a range 32B..512MiB (powers of two), a list 1KiB,1MiB or a workload name"


def read_sizes(text: str, option: str = "--sizes") -> Sizes:
    """The sizes of ``--sizes`` in every command: one size, a list or a range, or a workload name, as
    :func:`directcoll.units.parse_sizes` reads them (``4096``, ``32B``, ``64KiB``, ``1MB``, ``32B..512MiB``,
    ``1KiB,1MiB``, ``swing_sweep``). Read by the command, not the parser, so that a bad value is an error of the
    command (``directcoll: error: --sizes: ...``, status 2, also from :func:`directcoll.cli.main.main`).

    Returns:
        A :class:`Sizes` list of positive sizes in bytes, with ``.text`` the text given.

    Raises:
        DirectcollError: anything parse_sizes refuses, the message starting with ``option``.
        ResourceError: more sizes than :data:`directcoll.units.MAX_SIZES`.

    Source: docs/architecture.md, "Command line" ("one size flag with one list syntax");
    :func:`directcoll.units.parse_sizes`.

    >>> read_sizes("32B..128B")
    [32, 64, 128]
    """
    from directcoll.errors import ResourceError

    try:
        out = Sizes(parse_sizes(text))
    except ResourceError as exc:
        raise ResourceError(f"{option}: {exc}") from None
    except DirectcollError as exc:
        raise DirectcollError(f"{option}: {exc}") from None
    out.text = str(text)
    return out


def one_size(text: str, command: str, option: str = "--sizes") -> int:
    """The one size of ``text`` (``--sizes`` of a command that times or counts one vector size).

    Returns:
        The size in bytes, an int >= 1.

    Raises:
        DirectcollError: sizes :func:`read_sizes` refuses, or more than one size, naming the command and what to
            do instead.

    Source: docs/architecture.md, "Command line" ("one size flag with one list syntax": commands that take one size
    refuse a list with one clear line).

    >>> one_size("64KiB", "simulate")
    65536
    >>> one_size("1KiB,1MiB", "simulate")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: --sizes '1KiB,1MiB' gives 2 sizes; simulate takes one size, ...
    """
    values = read_sizes(text, option)
    if len(values) != 1:
        raise DirectcollError(f"{option} {text!r} gives {len(values)} sizes; {command} takes one size, such as "
                              "64MiB (run it once per size, or use `directcoll compare` for a sweep)")
    return int(values[0])


def add_output_options(p: argparse.ArgumentParser, csv: str | None = None,
                       json: str = "machine-readable output") -> None:
    """Add ``--json`` (and ``--csv`` when ``csv`` gives its help) to the parser ``p`` as a mutually exclusive
    group: each prints the whole result as one document on stdout, so asking for both is a usage error.

    Returns:
        None.

    Raises:
        Nothing: adds arguments (parsing ``--json --csv`` exits with status 2 and one line).

    Source: docs/architecture.md, "Command line" ("--variant, -o, --json, --csv wherever they make sense, mutually
    exclusive where they conflict"; machine-readable output is a contract).

    Also adds ``--wide``: tables as wide as they need instead of fitted to the terminal.

    >>> p = Parser(prog="demo"); add_output_options(p, csv="CSV rows")
    >>> p.parse_args(["--csv"])
    Namespace(json=False, csv=True, wide=False)
    """
    group = p.add_mutually_exclusive_group()
    group.add_argument("--json", action="store_true", help=json)
    if csv is not None:
        group.add_argument("--csv", action="store_true", help=csv)
    p.add_argument("--wide", action="store_true", help="print tables as wide as they need (default: fitted to the "
                                                       "terminal, 80 columns when piped; cells fold, none is cut)")


#: the note an old spelling prints on stderr, with ``{option}`` and what to use instead
DEPRECATION_NOTE = "directcoll: note: {option} is deprecated, {use}; it will be removed in the next release"


class Deprecated(argparse.Action):
    """An argparse action for an old spelling kept for one release: stores the value like ``store`` and adds
    :data:`DEPRECATION_NOTE` to the namespace's ``deprecation_notes``, which :func:`print_notes` writes on stderr
    once the command has run (never stdout: ``--json`` and ``--csv`` stay one document; and an error stays one
    line). Give ``use=`` (what to write instead) to ``add_argument``.

    Raises:
        Nothing: stores the value and the note.

    Source: docs/architecture.md, "Command line" ("Old spellings keep working with a deprecation note for one release").

    >>> p = Parser(prog="demo"); _ = p.add_argument("--size", dest="sizes", action=Deprecated, use="use --sizes")
    >>> args = p.parse_args(["--size", "1KiB"]); args.sizes, args.deprecation_notes[0][:29]
    ('1KiB', 'directcoll: note: --size is d')
    """

    def __init__(self, option_strings, dest, use: str = "", **kwargs):
        self.use = use
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        note = DEPRECATION_NOTE.format(option=option_string, use=self.use)
        notes = getattr(namespace, "deprecation_notes", None) or []
        if note not in notes:
            notes.append(note)
        namespace.deprecation_notes = notes
        setattr(namespace, self.dest, values)


def print_notes(args) -> None:
    """Write the deprecation notes of the parsed ``args`` (:class:`Deprecated`) on stderr, one line each.

    Returns:
        None.

    Raises:
        Nothing: writes to stderr.

    Source: docs/architecture.md, "Command line" (old spellings keep working with a deprecation note).

    >>> print_notes(argparse.Namespace())  # no old spelling used: nothing
    """
    for note in getattr(args, "deprecation_notes", None) or []:
        print(note, file=sys.stderr)


#: what the deprecated ``--topology`` of commands that take the network as a positional says to do instead
USE_SPEC = "give the network as the positional SPEC"
#: the one meaning of ``--topology`` where it remains: the override of the network a schedule FILE records
TOPOLOGY_OVERRIDE_HELP = ("the network SPEC, overriding the one recorded in the schedule file (a topology spec, "
                          "file:PATH or a system preset; see `directcoll help specs`)")


def add_deprecated_size(p: argparse.ArgumentParser) -> None:
    """Add the old ``--size`` spelling of ``--sizes`` to ``p`` (hidden from ``--help``; same type and dest, a
    deprecation note on stderr).

    Returns:
        None.

    Raises:
        Nothing: adds an argument.

    Source: docs/architecture.md, "Command line" ("one size flag"; old spellings keep working for one release).
    """
    p.add_argument("--size", dest="sizes", action=Deprecated, use="use --sizes", help=argparse.SUPPRESS)


def preset_spec(spec: str | None) -> str | None:
    """The topology spec of ``spec``: itself, or for the name of a system preset its first published topology,
    so that a preset goes wherever a spec does (as :func:`directcoll.simulate.resolve_network` reads it for
    ``compare`` and ``simulate``).

    Returns:
        A spec string (None for None).

    Raises:
        DirectcollError: a preset whose source gives no topology.

    Source: docs/architecture.md, "Command line" ("the same spec or file everywhere");
    :mod:`directcoll.catalog.presets`.

    >>> preset_spec("trn1"), preset_spec("torus:4x4")
    ('torus:4x4', 'torus:4x4')
    """
    from directcoll.catalog.presets import get_preset, preset_names

    if spec is None or str(spec).strip().lower().replace("_", "-") not in preset_names():
        return spec
    preset = get_preset(spec)
    if not preset.topologies:
        raise DirectcollError(f"preset {preset.name!r} has no topology in its source data ({preset.source}); give a "
                              "topology spec instead")
    return preset.topologies[0]


def network_spec(args, default: str | None = None) -> str | None:
    """The network of a command that takes it as the positional SPEC, or from the deprecated ``--topology``.

    Returns:
        The spec text, or ``default`` when neither is given.

    Raises:
        DirectcollError: both given and different.

    Source: docs/architecture.md, "Command line" ("the network is positional and the same spec or file everywhere").

    >>> network_spec(argparse.Namespace(spec=None, topology="ring:4"))
    'ring:4'
    """
    spec, old = getattr(args, "spec", None), getattr(args, "topology", None)
    if spec is not None and old is not None and spec != old:
        raise DirectcollError(f"the network is given twice, as SPEC {spec!r} and --topology {old!r}; give it once, "
                              "as SPEC")
    return spec if spec is not None else old if old is not None else default


def algorithm_list(text: str, collective: str, example: str = "swing,ring") -> list[tuple[str, str | None]]:
    """``--algorithms`` of ``run`` (every engine): a comma list of NAME or NAME:VARIANT (or ``file:PATH``, the
    algorithms a file defines), each implementing ``collective``; a shape an algorithm cannot serve is reported as
    skipped by the ranks, not here.

    Returns:
        (registry name, variant or None) per item, in order.

    Raises:
        DirectcollError: an empty list or item (the message shows ``example``), an unknown variant, an algorithm
            that does not implement ``collective``, or a ``file:`` that cannot be loaded. UnsupportedShapeError: an
            unknown algorithm.

    Source: docs/runtime.md ("directcoll run"); the registry's variants and collectives.

    >>> algorithm_list("swing:bandwidth,ring", "allreduce")
    [('swing', 'bandwidth'), ('ring', None)]
    """
    from directcoll.plugins import expand
    from directcoll.registry import get

    items = [item.strip() for item in text.split(",")]
    if not text.strip() or not all(items):
        raise DirectcollError(f"--algorithms {text!r}: give a comma list of NAME or NAME:VARIANT, e.g. {example}")
    items = expand(items)  # file:PATH items: the algorithms the file defines (docs/language.md)
    out = []
    for item in items:
        name, _, variant = item.partition(":")
        alg = get(name)
        if variant and variant not in alg.variants:
            raise DirectcollError(f"--algorithms: {alg.name} has no variant {variant!r}; accepted: "
                                  f"{', '.join(alg.variants) or 'none'}")
        if collective not in alg.collectives:
            raise DirectcollError(f"--algorithms: {alg.name} does not implement {collective}; it implements "
                                  f"{', '.join(alg.collectives)}")
        out.append((alg.name, variant or None))
    return out

#: the network of commands that take one and were given none
DEFAULT_TOPOLOGY = "torus:8x8"
#: the algorithm ``cost`` builds when given no file and no --algorithm
DEFAULT_ALGORITHM = "swing"
#: the collectives a command can build, time or run
COLLECTIVES = ["allreduce", "reduce_scatter", "allgather", "alltoall", "broadcast", "reduce"]
#: the one meaning of --routing in every command
ROUTING_HELP = ("adaptive: split over all minimal paths (default); dor: dimension order; single: one minimal path "
                "per destination (the lowest-numbered link), as IP routes")
#: the one meaning of --link-bandwidth in every command
LINK_BANDWIDTH_HELP = "override: link bandwidth with its unit, e.g. 400Gbps or 50GB/s (a bare number is refused)"
#: the one meaning of --variant in every command
VARIANT_HELP = "algorithm variant, e.g. latency or bandwidth (see `directcoll algorithms`)"
#: the one meaning of the positional network of commands that take one
SPEC_HELP = ("the network: a topology spec such as torus:8x8, file:PATH, or a system preset such as trn1 (see "
             "`directcoll help specs`)")


def add_build_options(p: argparse.ArgumentParser) -> None:
    """Add the options that shape a schedule to ``p``: ``--collective``, ``--root``, ``--chunks``, ``--variant``
    and ``--ports`` (``schedule`` and ``cost``; :func:`build_options` checks them against the algorithm).

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's parser.

    Raises:
        Nothing: adds arguments.

    Source: docs/algorithms.md (each algorithm's options); MPI 4.1 standard, Ch. 6 (the collectives).
    """
    p.add_argument("--collective", default="allreduce",
                   choices=COLLECTIVES,
                   help="collective to build (default: allreduce)")
    p.add_argument("--root", type=count(0), help="broadcast and reduce: the root rank, >= 0 (default 0)")
    p.add_argument("--chunks", type=count(1), help="pipelined algorithms (chain, double-binary-tree): chunks, >= 1 "
                                                   "(default: the algorithm's); bfb: cut every shard into P equal "
                                                   "chunks, loads rounded to whole chunks (Zhao et al. App. E.2), "
                                                   "T_B reported")
    p.add_argument("--variant", help=VARIANT_HELP)
    p.add_argument("--ports", type=count(1), help="concurrent collectives / ports to use, >= 1 (default: the "
                                                  "algorithm's)")


def add_network_options(p: argparse.ArgumentParser) -> None:
    """Add the network's parameter options to ``p``: ``--params`` (a preset or a calibrated file),
    ``--implementation``, ``--routing`` and the overrides ``--alpha`` (s), ``--per-hop-latency`` (s),
    ``--link-bandwidth`` (with its unit), ``--link-latency`` (s), ``--gamma`` (s/B), ``--forwarding``,
    ``--packet-size`` (B) and ``--packet-header`` (B); :func:`resolve_network` reads them.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's parser (``compare``, ``simulate``, ``calibrate``).

    Raises:
        Nothing: adds arguments.

    Source: docs/simulation.md (the parameters and their sources); docs/architecture.md, "Command line".
    """
    p.add_argument("--params", help="system preset for link and latency parameters (default swing-sst; "
                                    "see directcoll.catalog.presets), or a FILE.json written by `directcoll "
                                    "calibrate -o`")
    p.add_argument("--implementation", help=IMPLEMENTATION_HELP)
    p.add_argument("--routing", default="adaptive", choices=ROUTINGS, help=ROUTING_HELP)
    p.add_argument("--alpha", type=duration, help="override: per-message overhead, a time >= 0 such as 1us or "
                                                  "400ns (a bare number is seconds)")
    p.add_argument("--per-hop-latency", type=duration, help="override: per-hop latency, e.g. 300ns (a bare number "
                                                            "is seconds)")
    p.add_argument("--link-bandwidth", type=bandwidth, help=LINK_BANDWIDTH_HELP)
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


def resolve_network(spec: str | None, params_name: str | None, args):
    """The topology, network parameters and notes of a command's network options
    (:func:`directcoll.simulate.resolve_network` with the overrides of :func:`add_network_options`, then
    ``--implementation``).

    Parameters
    ----------
    spec : str or None
        The network (a spec, ``file:PATH`` or a preset); None: :data:`DEFAULT_TOPOLOGY`.
    params_name : str or None
        ``--params``: a preset name or a calibrated FILE.json; None: the network's own or swing-sst.
    args : argparse.Namespace
        The parsed options (the overrides in seconds, bytes/s and bytes).

    Returns:
        (Topology, NetworkParams, notes): notes are lines for the report's footer.

    Raises:
        SpecError, TopologyError: a bad network. DirectcollError: a bad preset, file or implementation name.

    Source: docs/simulation.md, "Hosts and implementations"; docs/architecture.md, "Command line".
    """
    from directcoll.simulate import resolve_network as resolve

    topology, params, notes = resolve(
        spec or DEFAULT_TOPOLOGY, params_name, alpha=args.alpha, per_hop_latency=args.per_hop_latency,
        link_bandwidth=args.link_bandwidth, link_latency=args.link_latency, gamma=args.gamma,
        forwarding=args.forwarding, packet_size=args.packet_size, packet_header=args.packet_header)
    params = params.use(getattr(args, "implementation", None))
    if not params.implementation.neutral:
        notes.append(f"implementation {params.implementation.name}: {_terms(params.implementation)}")
    return topology, params, notes


def _terms(impl) -> str:
    """An implementation's non-neutral terms, for a report's footer."""
    from directcoll.units import format_time

    out = [f"{k.replace('_', ' ')} {format_time(getattr(impl, k))}"
           for k in ("call_overhead", "port_overhead", "thread_overhead", "mirror_overhead", "message_overhead")
           if getattr(impl, k)]
    if impl.reduction_overhead:
        out.append(f"reduction overhead {format_time(impl.reduction_overhead)} above {impl.reduction_threshold:g} B "
                   "on one thread")
    if impl.copy_overhead:
        out.append(f"copies {impl.copy_overhead * 1e9:.3g} ns/B")
    if impl.paths:
        out.append(f"code paths {', '.join(sel for sel, _ in impl.paths)}")
    if impl.eager_threshold is not None:
        out.append(f"eager up to {impl.eager_threshold:g} B")
    if impl.bandwidth_efficiency != 1.0:
        out.append(f"bandwidth efficiency {impl.bandwidth_efficiency:.3g}")
    if impl.gamma is not None:
        out.append(f"gamma {impl.gamma * 1e9:.3g} ns/B")
    out.append("one thread per port" if impl.threads is None else f"{impl.threads} thread(s)")
    return ", ".join(out)


def rooted_option(collective: str, root: int | None) -> int | None:
    """``--root`` checked against ``--collective``: the root for broadcast and reduce (None: the default, 0).

    Raises:
        DirectcollError: ``--root`` with another collective.

    Source: MPI 4.1 standard, Ch. 6 (the root of MPI_Bcast and MPI_Reduce).

    >>> rooted_option("broadcast", 2), rooted_option("allreduce", None)
    (2, None)
    """
    if root is not None and collective not in ("broadcast", "reduce"):
        raise DirectcollError(f"--root {root}: only broadcast and reduce have a root; --collective is {collective}")
    return root


def build_options(args) -> dict:
    """``--root``, ``--chunks``, ``--host-bandwidth`` (mcf) and ``--time-limit`` (ilp-disjoint) as build options of
    ``args.algorithm`` (those it takes; absent ones left out).

    Raises:
        DirectcollError: ``--root`` with a collective other than broadcast and reduce, ``--chunks`` for an
            algorithm that does not pipeline (naming those that do), ``--host-bandwidth`` or ``--time-limit`` for
            another algorithm than mcf or ilp-disjoint.
        UnsupportedShapeError: an unknown algorithm.

    Source: docs/algorithms.md (each algorithm's options).
    """
    import inspect

    from directcoll.registry import ALGORITHMS, get

    options = {}
    root = rooted_option(args.collective, getattr(args, "root", None))
    if root is not None:
        options["root"] = root
    if getattr(args, "chunks", None) is not None:
        takes = [a.name for a in ALGORITHMS.values() if "chunks" in inspect.signature(a.build).parameters]
        if get(args.algorithm or DEFAULT_ALGORITHM).name not in takes:
            raise DirectcollError(f"--chunks applies to {', '.join(takes)}; not to {args.algorithm}")
        options["chunks"] = args.chunks
    for flag, key, algorithm in (("--host-bandwidth", "host_bandwidth", "mcf"),
                                 ("--time-limit", "time_limit", "ilp-disjoint")):
        if getattr(args, key, None) is not None:
            if get(args.algorithm or DEFAULT_ALGORITHM).name != algorithm:
                raise DirectcollError(f"{flag} applies to {algorithm} only; not to {args.algorithm}")
            options[key] = getattr(args, key)
    return options


def bfb_options(args, spec: str, command: str) -> tuple:
    """(the network to build on, bfb options): the one size of ``--sizes`` as bfb's ``size`` (Zhao et al. App.
    E.3; ``--chunks``, App. E.2, is a build option of :func:`build_options`); a note on stderr when links differ in
    latency and no size is given. Other algorithms get the spec unchanged and no options.

    Raises:
        DirectcollError: more than one size in ``--sizes``. SpecError, UnsupportedShapeError: a bad spec or
            algorithm.

    Source: Zhao et al. (NSDI'25) App. E.3 (LP (14) weighs every link's latency at the size M).
    """
    from directcoll.registry import get

    if get(args.algorithm or DEFAULT_ALGORITHM).name != "bfb":
        return spec, {}
    import numpy as np

    from directcoll.topology import parse

    topology = parse(spec)
    options = {}
    if args.sizes is not None:
        options["size"] = one_size(args.sizes, f"{command} bfb --sizes")
    elif topology.num_links and np.ptp(topology.link_latency) > 0:
        print(f"directcoll: note: the links of {topology.spec} differ in latency; without --sizes M, BFB balances "
              "bandwidth only (LP (14) of Zhao et al. App. E.3 needs the size M)", file=sys.stderr)
    return topology, options


MEMORY_BUDGET_HELP = ("memory a request may plan to use, e.g. 8GiB (default: $DIRECTCOLL_MEMORY_BUDGET, else half "
                      "the available memory); requests estimated above it are refused before they start. Goes "
                      "before or after the command")


def add_memory_budget(p: argparse.ArgumentParser) -> None:
    """Add ``--memory-budget SIZE`` (bytes, with a unit) to ``p``, absent from the namespace unless given, so that
    it can go before or after the command.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The top-level parser or a command's.

    Raises:
        Nothing: adds an argument.

    Source: docs/architecture.md, "Engines, runtimes and scale" (resources: estimates refused over the budget).
    """
    p.add_argument("--memory-budget", metavar="SIZE", type=size_option("--memory-budget"), default=argparse.SUPPRESS,
                   help=MEMORY_BUDGET_HELP)


SOLVER_LOG_HELP = ("show HiGHS's own log on standard error for LP solves longer than 2 s: auto (default: when "
                   "standard error is a terminal; $DIRECTCOLL_SOLVER_LOG), on or off. Goes before or after the "
                   "command")


def add_solver_log(p: argparse.ArgumentParser) -> None:
    """Add ``--solver-log {auto,on,off}`` to ``p``, absent from the namespace unless given.

    Parameters
    ----------
    p : argparse.ArgumentParser
        The top-level parser or a command's.

    Raises:
        Nothing: adds an argument.

    Source: docs/architecture.md, "Command line" (progress on stderr); HiGHS's log.
    """
    p.add_argument("--solver-log", choices=["auto", "on", "off"], default=argparse.SUPPRESS, help=SOLVER_LOG_HELP)


def add_testbed_options(p: argparse.ArgumentParser, scope: str = "") -> None:
    """Add the emulated links' options to ``p``: ``--link-rate`` (the fastest link's rate, with its unit; bytes/s
    once parsed), ``--link-delay`` (seconds added per link), ``--queue`` (bytes per link end) and ``--routing``
    (adaptive or single).

    Parameters
    ----------
    p : argparse.ArgumentParser
        The command's parser (``testbed up``, ``testbed exec``, ``run``).
    scope : str
        Prefix of every help text (e.g. "--engine testbed: ").

    Raises:
        Nothing: adds arguments.

    Source: docs/testbed.md, "Choosing rates"; tc-tbf(8), tc-netem(8).
    """
    p.add_argument("--link-rate", type=bandwidth, help=f"{scope}rate of the fastest link with its unit, e.g. "
                                                       "50Mbps (default 20Mbps; other links keep their ratio to it)")
    p.add_argument("--link-delay", type=duration, help=f"{scope}delay added on every link, e.g. 50us (default none; "
                                                       "needs the kernel's sch_netem)")
    p.add_argument("--queue", type=size_option("--queue"), help=f"{scope}queue of every link end, e.g. 64KiB "
                                                                 "(default 256KiB, at least 3000 B)")
    p.add_argument("--routing", choices=["adaptive", "single"],
                   help=f"{scope}adaptive (default): ECMP over every minimal path, one path per flow by hash; "
                        "single: one minimal path per destination, the models' --routing single")


def testbed_plan(args, topology):
    """The testbed of ``topology`` with the options of :func:`add_testbed_options` (unset ones: the testbed's
    defaults), under a fresh run name.

    Returns:
        A :class:`~directcoll.testbed.plan.Plan`.

    Raises:
        DirectcollError: as :func:`directcoll.testbed.plan.plan`.

    Source: docs/testbed.md, "What it builds".
    """
    from directcoll.testbed.plan import plan, run_name

    return plan(topology, link_rate=args.link_rate, link_delay=args.link_delay, queue=args.queue,
                routing=args.routing, prefix=run_name())


def refuse_testbed_options(args) -> None:
    """Refuse the options of :func:`add_testbed_options` on a run that is not on the testbed.

    Raises:
        DirectcollError: one of them given.

    Source: docs/testbed.md; docs/architecture.md, "Quality bar" (nothing silently ignored).
    """
    given = _given(args, ("link_rate", "link_delay", "queue", "routing"))
    if given:
        one = len(given) == 1
        raise DirectcollError(f"{', '.join(given)} {'shapes' if one else 'shape'} the emulated network of --engine "
                              f"testbed; add it or drop {'it' if one else 'them'}")


def _given(args, dests) -> list[str]:
    """The options among argparse ``dests`` that ``args`` sets, as ``--name``."""
    return [f"--{k.replace('_', '-')}" for k in dests if getattr(args, k, None) is not None]


#: the options of :func:`add_flow_control_options`, as argparse dests
FLOW_CONTROL_OPTIONS = ("buffer", "virtual_channels", "vc_scheme", "credit_delay")


def add_flow_control_options(p) -> None:
    """The packet model's flow control (:class:`~directcoll.simulate.packet.FlowControl`) on parser ``p``.

    Parameters
    ----------
    p : argparse.ArgumentParser
        A command with ``--model`` (simulate, compare).

    Raises:
        Nothing: adds arguments.

    Source: docs/simulation.md, "Packet engine" (flow control).
    """
    g = p.add_argument_group("flow control (--model packet)")
    g.add_argument("--buffer", type=size_option("--buffer"),
                   help="input buffer per link and virtual channel, e.g. 32KiB: credit-based flow control "
                        "(default: unbounded queues, no flow control)")
    g.add_argument("--virtual-channels", type=count(1, MAX_VIRTUAL_CHANNELS),
                   help="virtual channels per link (default: the fewest the scheme needs: 1 for none, 2 for "
                        "dateline, 3 for duato, the longest route's hops for hops)")
    g.add_argument("--vc-scheme", choices=VC_SCHEMES,
                   help="a hop's virtual channel: auto (default: the deadlock-free scheme for each schedule's "
                        "routes: dateline or duato on tori, hops elsewhere and for explicit routes), none (one "
                        "channel: multi-hop traffic on a torus can deadlock, which is reported), hops (the hop's "
                        "index: deadlock-free with as many channels as the longest route), dateline (tori with "
                        "--routing dor), duato (tori with adaptive routing: 2 escape channels, the rest adaptive)")
    g.add_argument("--credit-delay", type=duration, help="a credit's trip back beyond the link latency, e.g. "
                                                         "50ns (default 0)")


def add_orderings_option(p) -> None:
    """``--orderings N`` on parser ``p`` (simulate, compare): the packet model times every schedule in N orders
    of each step's transfers (:meth:`~directcoll.schedule.pattern.StepPattern.reordered`).

    Parameters
    ----------
    p : argparse.ArgumentParser
        A command with ``--model``.

    Raises:
        Nothing: adds an argument.

    Source: docs/fidelity.md, "Ties" (the packet engine's spread over the orders of the transfers).
    """
    p.add_argument("--orderings", type=count(1), default=1,
                   help="--model packet: time in N orders of each step's transfers (as built, then seeded shuffles; "
                        "a NIC serves ready transfers in the order they were posted) and report the fastest and "
                        "slowest (compare: two families whose ranges meet within the tie tolerance tie) (default 1)")


def orderings(args) -> int:
    """``--orderings`` of :func:`add_orderings_option`, refused in one line above 1 with a model other than packet.

    Returns:
        The count, >= 1.

    Raises:
        DirectcollError: ``--orderings`` above 1 without ``--model packet``.

    Source: docs/fidelity.md, "Ties".
    """
    if args.orderings > 1 and getattr(args, "model", None) != "packet":
        raise DirectcollError(f"--orderings {args.orderings}: the packet model's option (the step and flow models do "
                              "not depend on the order of a step's transfers); add --model packet or drop it")
    return args.orderings


def flow_control(args):
    """The :class:`~directcoll.simulate.packet.FlowControl` of :func:`add_flow_control_options`, or None when
    none of them is given; refused in one line with a model other than packet.

    Returns:
        A FlowControl or None; without ``--vc-scheme`` its scheme is "auto", which the packet engine resolves per
        schedule (:func:`~directcoll.simulate.packet.resolved`) to the fewest deadlock-free channels.

    Raises:
        DirectcollError: an option given without ``--model packet``, or without ``--buffer``; or as FlowControl.

    Source: docs/simulation.md, "Packet engine" (flow control).
    """
    given = _given(args, FLOW_CONTROL_OPTIONS)
    if not given:
        return None
    if getattr(args, "model", None) != "packet":
        raise DirectcollError(f"{', '.join(given)}: flow control is simulated by the packet model; add --model "
                              "packet or drop them")
    if args.buffer is None:
        raise DirectcollError(f"{', '.join(given)} {'needs' if len(given) == 1 else 'need'} --buffer: without a "
                              "buffer size there is no flow control")
    from directcoll.simulate.packet import FlowControl

    # "auto" is resolved per schedule (packet.resolved): its fewest deadlock-free channels; one channel asked for
    # without a scheme is taken at its word
    scheme = args.vc_scheme or ("none" if args.virtual_channels == 1 else "auto")
    channels = args.virtual_channels or SCHEME_CHANNELS.get(scheme, 1)
    return FlowControl(buffer_bytes=int(args.buffer), virtual_channels=channels, scheme=scheme,
                       credit_delay=args.credit_delay or 0.0)
