"""Network parameters for the simulators, and presets from published systems.

:class:`NetworkParams` holds what the simulation engines need besides the topology (alpha, per-hop latency,
gamma, host injection, forwarding, link overrides; seconds, bytes/s); :func:`network_params` reads a named preset
of the packaged systems.json, :func:`resolve_network` turns a topology spec or a preset name into (topology,
parameters). Source: docs/simulation.md, "Step model" (network parameters); Swing (De Sensi et al., NSDI'24)
Sec. 2.2 (the alpha-beta(-gamma) model) and Sec. 5 (the SST setup, :data:`SWING_SST`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

from directcoll.errors import DirectcollError
from directcoll.inputs import read_text
from directcoll.simulate.implementation import DEFAULT_IMPLEMENTATION, Implementation, implementation_from_dict
from directcoll.units import check_quantity

FORWARDING = ("cut-through", "store-and-forward")
#: the physical quantity of each numeric field (its range: :data:`directcoll.units.QUANTITIES`)
_KINDS = {"alpha": "time", "per_hop_latency": "time", "link_latency": "time", "gamma": "time per byte",
          "host_injection": "bandwidth", "link_bandwidth": "bandwidth"}


@dataclass(frozen=True)
class NetworkParams:
    """What the simulators need besides the topology.

    Attributes:
        alpha: per-message software overhead, s (paid once per transfer, before its first byte leaves).
        per_hop_latency: router processing per hop, s (added to every link's own latency).
        gamma: reduction cost, s per byte reduced at the receiver.
        host_injection: bytes/s a rank can send (and receive) in total, or None for no limit beyond links.
        forwarding: how a router passes on a packet. "cut-through" (default): as soon as its header has
            arrived, so a message pays its bandwidth term once and each further hop only the header's
            serialisation, ``packet_header / bandwidth``. "store-and-forward": once the whole packet has
            arrived, so each further hop adds one packet's serialisation, ``(min(B, packet_size) +
            packet_header) / bandwidth`` for a message of B bytes: the message pipelines over its hops packet
            by packet (docs/simulation.md, "Packets in the models").
        link_bandwidth, link_latency: override every link of the topology (bytes/s, s); None keeps its own.
        packet_size: payload bytes per packet (default 4096: InfiniBand's largest MTU; the Swing paper does not
            state the packet size of its SST runs).
        packet_header: bytes each packet carries besides its payload (headers, CRC), default 0; a message of B
            bytes puts ``B + packet_header * max(1, B / packet_size)`` bytes on the wire (exact to one header).
            The packet engine needs at least 2 (ns-3's PPP header).
        name, source: where the values come from.

    Raises:
        DirectcollError: an unknown ``forwarding``, or a time, time per byte or bandwidth that is not a finite
            number in its physical range (:data:`directcoll.units.QUANTITIES`: ``alpha``, ``per_hop_latency``,
            ``link_latency`` in [0, 1 h], ``gamma`` in [0, 8] s/B, ``host_injection`` and ``link_bandwidth`` in
            1 bit/s to 1 Eb/s); the message names the parameter, its value and the range.

    Source: docs/simulation.md, "Step model" (NetworkParams); Swing (De Sensi et al., NSDI'24) Sec. 2.2 (alpha,
    beta = 1 / bandwidth, the gamma term of reductions); Basu et al. (HPDC'24) Sec. 2.2, Table 1 (cut-through
    versus store-and-forward fabrics).

    >>> p = NetworkParams(alpha=1e-6, link_bandwidth=50e9)
    >>> p.forwarding, p.host_injection, p.name
    ('cut-through', None, 'custom')
    """

    alpha: float = 0.0
    per_hop_latency: float = 0.0
    gamma: float = 0.0
    host_injection: float | None = None
    forwarding: str = "cut-through"
    link_bandwidth: float | None = None
    link_latency: float | None = None
    packet_size: int = 4096
    packet_header: int = 0
    #: the software terms of the library that runs the schedule (docs/simulation.md, "Hosts and implementations")
    implementation: Implementation = field(default_factory=Implementation)
    #: every implementation the parameters' source describes (a parameters file's ``implementations``)
    implementations: tuple[Implementation, ...] = ()
    name: str = "custom"
    source: str = ""

    def __post_init__(self) -> None:
        if self.forwarding not in FORWARDING:
            raise DirectcollError(f"unknown forwarding {self.forwarding!r}; accepted: {', '.join(FORWARDING)}")
        for key, kind in _KINDS.items():
            if getattr(self, key) is not None:
                check_quantity(getattr(self, key), kind, f"network parameter {key}")
        if not isinstance(self.packet_size, int) or self.packet_size < 1:
            raise DirectcollError(f"network parameter packet_size must be a whole number of bytes >= 1, "
                                  f"got {self.packet_size!r}")
        if not isinstance(self.packet_header, int) or self.packet_header < 0:
            raise DirectcollError(f"network parameter packet_header must be a whole number of bytes >= 0, "
                                  f"got {self.packet_header!r}")

    def with_(self, **changes) -> NetworkParams:
        """These parameters with some values overridden (None leaves a value); the name records overrides.

        Args:
            **changes: field names of :class:`NetworkParams` (s, bytes/s as there) and their new values; a
                ``name`` keyword replaces the name instead of the generated "NAME (key=value, ...)".

        Returns:
            a new NetworkParams (``self`` when nothing changes and no name is given).

        Raises:
            DirectcollError: an overridden value that :class:`NetworkParams` refuses (see there).
            AttributeError: a keyword that is not a field (with a value other than None).

        Source: docs/simulation.md, "Step model" (network parameters and overrides).

        >>> NetworkParams(name="base").with_(alpha=1e-6, gamma=None).name
        'base (alpha=1e-06)'
        """
        name = changes.pop("name", None)
        changes = {k: v for k, v in changes.items() if v is not None and v != getattr(self, k)}
        if not changes:
            return self if name is None else replace(self, name=name)
        label = ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in changes.items())
        return replace(self, **changes, name=name or f"{self.name} ({label})")

    def to_dict(self) -> dict:
        """Every field by name (a plain dict, s and bytes/s as stored; implementations as dicts). Raises: Nothing.
        Source: docs/simulation.md."""
        out = asdict(self)
        out["implementation"] = self.implementation.to_dict()
        out["implementations"] = [i.to_dict() for i in self.implementations]
        return out

    def file_dict(self) -> dict:
        """What a parameters file holds (``--params FILE``, :func:`params_from_file`): the fields of
        :meth:`to_dict`, the implementations as a table by name (the active one included) and the active one's
        name as ``default_implementation``. Raises: Nothing. Source: docs/simulation.md, "Calibration" (the
        parameters file).

        >>> d = NetworkParams(alpha=1e-6).file_dict()
        >>> d["alpha"], d["default_implementation"], sorted(d["implementations"])
        (1e-06, 'libdirectcoll', ['libdirectcoll'])
        """
        params = self.to_dict()
        impls, active = params.pop("implementations"), params.pop("implementation")
        table = {i["name"]: {k: v for k, v in i.items() if k != "name"} for i in [*impls, active]}
        return {**params, "implementations": table, "default_implementation": active["name"]}

    def use(self, name: str | None) -> NetworkParams:
        """These parameters with the implementation ``name`` of :attr:`implementations` active (None: keep the
        active one); ``libdirectcoll`` (the project's own runtime) is always available, neutral unless described.

        Returns:
            NetworkParams.

        Raises:
            DirectcollError: an implementation the parameters do not describe, listing those they do.

        Source: docs/simulation.md, "Hosts and implementations".

        >>> NetworkParams().use("libdirectcoll").implementation.name
        'libdirectcoll'
        """
        if name is None or name == self.implementation.name:
            return self
        found = [i for i in self.implementations if i.name == name]
        if found:
            return replace(self, implementation=found[0])
        if name == DEFAULT_IMPLEMENTATION:
            return replace(self, implementation=Implementation())
        known = ", ".join(dict.fromkeys([i.name for i in self.implementations] + [DEFAULT_IMPLEMENTATION]))
        raise DirectcollError(f"--implementation {name!r}: the parameters {self.name!r} describe {known}")


def network_params(name: str | None = "swing-sst") -> NetworkParams:
    """Parameters of a named system preset from the packaged systems.json (``swing-sst``,
    ``kolmakov-cluster``, ``zhao-model``, ...): link bandwidth and latency, per-hop latency, alpha, gamma and
    host injection where the source gives them, zero or the topology's own values where it does not. A name
    ending in ``.json`` is a parameters file instead (:func:`params_from_file`, what ``directcoll calibrate -o``
    writes), so ``--params net.json`` works wherever ``--params`` is accepted.

    Raises:
        DirectcollError: an unknown name, or a preset that gives no network parameters (``ipu-pod64`` has only a
            chip count), listing the presets that do and the closest matches; a ``.json`` file that is missing or
            malformed (:func:`params_from_file`).

    Returns:
        NetworkParams named after the preset, its ``source`` the publication the values come from: the entry's
        ``source``, then the source of each value that publication does not give (``parameter_sources``); its
        ``implementations`` the libraries the entry describes (the active one stays the project's own). A beta
        in s/byte per process becomes ``host_injection`` and ``link_bandwidth`` of
        1 / beta bytes/s.

    Source: the packaged systems.json (:mod:`directcoll.catalog.presets`; docs/simulation.md, "Step model");
    ``swing-sst`` is Swing (De Sensi et al., NSDI'24) Sec. 5: 400 Gb/s links, 100 ns latency, 300 ns per hop.

    >>> p = network_params("swing-sst")
    >>> p.link_bandwidth, p.link_latency, p.per_hop_latency, p.alpha
    (50000000000.0, 1e-07, 3e-07, 0.0)
    >>> f = network_params("fugaku-unit")  # Tofu D (Ajima et al., CLUSTER'18): 6 RDMA engines x 6.8 GB/s links
    >>> f.link_bandwidth, f.host_injection, f.alpha, f.link_latency
    (6800000000.0, 40800000000.0, 4.9e-07, 0.0)
    >>> f.use("libswing-utofu").implementation.threads is None  # the libraries measured there: a thread per port
    True
    """
    from directcoll.catalog.presets import get_parameter_preset

    if name is not None and name.lower().endswith(".json"):
        return params_from_file(name)
    p = get_parameter_preset("swing-sst" if name is None else name)
    # a beta (s/byte per process) describes a switched cluster: one message stream in and out of each process
    per_process = 1.0 / p.beta if p.beta else None
    values = {"alpha": p.alpha or 0.0, "per_hop_latency": p.per_hop_latency or 0.0, "gamma": p.gamma or 0.0,
              "host_injection": p.host_injection or per_process, "link_latency": p.link_latency,
              "link_bandwidth": p.link_bandwidth or per_process}
    added = [f"{field}: {text}" for field, text in p.parameter_sources if field != "topologies"]
    impls = tuple(implementation_from_dict(n, terms, f"preset {p.name}") for n, terms in p.implementations)
    return NetworkParams(**values, name=p.name, source="; ".join([p.source, *added]), implementations=impls)


#: the value types of every NetworkParams field in a parameters file (None allowed where the field allows it)
_FILE_TYPES = {"alpha": (float,), "per_hop_latency": (float,), "gamma": (float,), "host_injection": (float, None),
               "forwarding": (str,), "link_bandwidth": (float, None), "link_latency": (float, None),
               "packet_size": (int,), "packet_header": (int,), "name": (str,), "source": (str,)}
#: keys of a parameters file besides the fields: accepted and not read (``directcoll calibrate`` writes its fit there)
FILE_EXTRA_KEYS = ("calibration", "implementations", "default_implementation")
#: peak bytes of parsing a parameters file per byte of JSON (Python objects; the schedule reader's figure)
PARAMS_BYTES_PER_CHAR = 12


def params_from_file(path) -> NetworkParams:
    """NetworkParams from a JSON file: one object whose keys are those of :meth:`NetworkParams.to_dict` (any
    subset; missing ones keep their defaults) plus an optional ``calibration`` object, which is not read.

    Args:
        path: the file (str or path-like), e.g. what ``directcoll calibrate -o net.json`` wrote.

    Returns:
        the :class:`NetworkParams` of the file (s, bytes/s as in :class:`NetworkParams`); an empty ``source`` is
        replaced by the file's name.

    Raises:
        DirectcollError: the file is missing or unreadable, not JSON, not an object, has an unknown key or a value
            of the wrong type, or a value :class:`NetworkParams` refuses; the message names the file.

    Source: docs/simulation.md, "Calibration" (the parameters file); the fields of :class:`NetworkParams`.

    >>> import json, os, tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = os.path.join(tmp, "net.json")
    ...     with open(path, "w") as f:
    ...         json.dump({"alpha": 1e-6, "link_bandwidth": 25e9, "calibration": {"rms": 0.01}}, f)
    ...     p = params_from_file(path)
    >>> p.alpha, p.link_bandwidth, p.gamma
    (1e-06, 25000000000.0, 0.0)
    """
    import json
    import os

    where = f"--params file {os.fspath(path)!r}"
    if not os.path.exists(path):
        raise DirectcollError(f"{where} does not exist; give a JSON file written by `directcoll calibrate -o` or "
                              "a preset name such as swing-sst")
    text = read_text(path, where, bytes_per_byte=PARAMS_BYTES_PER_CHAR)
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        why = f"line {exc.lineno}: {exc.msg}" if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        raise DirectcollError(f"{where} is not JSON ({why}); it must hold one object with the keys "
                              f"{', '.join(_FILE_TYPES)}") from None
    if not isinstance(data, dict):
        raise DirectcollError(f"{where} must hold one JSON object with the keys {', '.join(_FILE_TYPES)}")
    unknown = sorted(k for k in data if k not in _FILE_TYPES and k not in FILE_EXTRA_KEYS)
    if unknown:
        raise DirectcollError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; accepted: "
                              f"{', '.join((*_FILE_TYPES, *FILE_EXTRA_KEYS))}")
    values = {}
    for key, types in _FILE_TYPES.items():
        if key not in data:
            continue
        v = data[key]
        if v is None and None in types:
            values[key] = None
        elif float in types and isinstance(v, int | float) and not isinstance(v, bool):
            if v != v or v in (float("inf"), float("-inf")):
                raise DirectcollError(f"{where}: {key} must be a finite number, got {v!r}")
            values[key] = float(v)
        elif int in types and isinstance(v, int) and not isinstance(v, bool):
            values[key] = v
        elif str in types and isinstance(v, str):
            values[key] = v
        else:
            kind = {float: "a number", int: "a whole number", str: "a string"}[types[0]]
            raise DirectcollError(f"{where}: {key} must be {kind}{' or null' if None in types else ''}, "
                                  f"got {v!r}")
    try:
        params = NetworkParams(**values)
    except DirectcollError as exc:
        raise DirectcollError(f"{where}: {exc}") from None
    params = replace(params, **_implementations(data, where))
    return params if params.source else replace(params, source=f"parameters file {os.fspath(path)}")


def _implementations(data: dict, where: str) -> dict:
    """The ``implementations`` and ``default_implementation`` of a parameters file, as NetworkParams fields."""
    table = data.get("implementations", {})
    if not isinstance(table, dict):
        raise DirectcollError(f"{where}: implementations must be an object of name: {{terms}}")
    impls = tuple(implementation_from_dict(str(name), terms, where) for name, terms in table.items())
    default = data.get("default_implementation")
    if default is None:
        return {"implementations": impls}
    chosen = [i for i in impls if i.name == default]
    if not isinstance(default, str) or not (chosen or default == DEFAULT_IMPLEMENTATION):
        raise DirectcollError(f"{where}: default_implementation {default!r} is not one of implementations "
                              f"({', '.join(i.name for i in impls) or 'none'})")
    return {"implementations": impls, "implementation": chosen[0] if chosen else Implementation()}


def default_params(topology, name: str | None = None) -> NetworkParams:
    """The parameters a comparison uses on ``topology`` when none are given: the preset ``name`` (default
    ``swing-sst``, :func:`network_params`) with a network file's own per-link bandwidths and latencies kept (the
    preset's value applies only where the file gives none). The library's ``compare`` and ``directcoll compare``
    both start here, so they time the same spec alike.

    Returns:
        NetworkParams.

    Raises:
        DirectcollError: an unknown preset name.

    Source: Swing (De Sensi et al., NSDI'24) Sec. 5 (the SST setup); docs/simulation.md, "Step model".

    >>> from directcoll.topology import parse
    >>> default_params(parse("torus:4x4")).name
    'swing-sst'
    """
    params = network_params(name)
    per_link = topology.params.get("per_link", ())  # a network file's own per-link values win over a preset's
    if per_link:
        params = replace(params, **{f"link_{key}": None for key in per_link})
    return params


def resolve_network(spec: str, params_name: str | None = None, **overrides):
    """The topology and network parameters of ``spec``, a topology spec or a system preset name (whose first
    published topology is used, and whose parameters are the default when it gives them), with ``overrides``
    (:meth:`NetworkParams.with_` keywords; None leaves a value). A network file's per-link bandwidths and
    latencies (``file:PATH``, :mod:`directcoll.topology.files`) are kept: the preset's link bandwidth (latency)
    applies only where the file gives no link one, and the ``link_bandwidth`` / ``link_latency`` overrides
    replace them.

    Returns:
        (Topology, NetworkParams, notes): notes are one line per source used, for a report's footer (a network
        file adds its description: where its link values come from).

    Raises:
        SpecError: ``spec`` is neither a topology spec nor a preset (the message lists the presets).
        DirectcollError: a preset without a topology, or an unknown ``params_name`` (:func:`network_params`), or
            an override :class:`NetworkParams` refuses.
        ResourceError, TopologyError: building the topology is over the memory budget, or an operator of the
            spec refuses its input (:func:`directcoll.topology.parse`).

    Source: docs/simulation.md, "Step model" (network parameters, presets); the packaged systems.json
    (:mod:`directcoll.catalog.presets`).

    >>> topology, params, notes = resolve_network("torus:4x4", "swing-sst", alpha=1e-6)
    >>> topology.num_compute, params.alpha
    (16, 1e-06)
    >>> topology, params, notes = resolve_network("trn1")  # a preset brings its own published parameters
    >>> topology.spec, params.name, params.link_bandwidth
    ('torus:4x4', 'trn1', 96000000000.0)
    """
    from directcoll.catalog.presets import get_preset, preset_names
    from directcoll.errors import SpecError
    from directcoll.topology import parse
    from directcoll.topology.files import is_file_spec

    notes = []
    try:
        topology = parse(spec)
    except SpecError as exc:
        if is_file_spec(spec):  # a network file's error is about the file, not a preset name
            raise
        try:
            preset = get_preset(spec)
        except DirectcollError:
            raise SpecError(f"{exc}; or a system preset: {', '.join(preset_names())}") from None
        if not preset.topologies:
            raise DirectcollError(f"preset {preset.name!r} has no topology in its source data "
                                  f"({preset.source}); give a topology spec instead") from None
        topology = parse(preset.topologies[0])
        notes.append(f"{preset.name}: {topology.spec} -- {preset.source_of('topologies')}")
        if params_name is None and preset.link_bandwidth is not None:
            params_name = preset.name
    params = default_params(topology, params_name)
    notes.append(f"parameters {params.name}: {params.source}")
    if topology.params.get("description"):
        notes.append(topology.params["description"])
    return topology, params.with_(**overrides), notes


#: The Swing paper's SST setup (Sec. 5): 400 Gb/s links, 100 ns link latency, 300 ns per hop. The paper gives
#: no per-message software overhead, so alpha is 0.
SWING_SST = network_params("swing-sst")
