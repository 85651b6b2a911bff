"""Named system presets and message-size workloads from the packaged, sourced data files.

The data lives in ``directcoll/catalog/data/systems.json`` and ``workloads.json``. Every system entry names its
publication (``source``); a number that publication does not give is covered by the entry's
``parameter_sources`` (``{field: source text}``), so every number names its publication
(``catalog/data/README.md``). Keys starting with ``_`` are metadata.

Units: the JSON gives bandwidths in bits/s as published; :class:`SystemPreset` holds bytes/s (divided by 8),
seconds, and seconds per byte.

User-facing names are the JSON keys with ``_`` replaced by ``-`` (``swing-sst``, ``kolmakov-cluster``, ...) plus
the short aliases in :data:`_ALIASES`. Lookups are case-insensitive and accept ``_`` or ``-``.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, replace
from functools import cache
from importlib.resources import files

from directcoll.errors import DirectcollError

__all__ = [
    "SystemPreset",
    "get_parameter_preset",
    "get_preset",
    "has_network_parameters",
    "list_presets",
    "load_systems",
    "load_workloads",
    "parameter_preset_names",
    "preset_names",
    "preset_topology",
    "workload_names",
    "workload_sizes",
]


@cache
def _load_json(filename: str) -> dict:
    return json.loads((files("directcoll.catalog") / "data" / filename).read_text(encoding="utf-8"))


def load_systems() -> dict:
    """The packaged ``systems.json`` as a dict (a fresh copy of the cached parse; ``_about`` included).

    Returns:
        ``{key: entry}`` exactly as in the file (bandwidths in bits/s as published).

    Raises:
        Nothing: the file ships with the package (a missing or corrupt install raises the OS / JSON error).

    Source: ``catalog/data/README.md``; each entry names its publication in ``source``.

    >>> "swing_sst" in load_systems()
    True
    """
    return copy.deepcopy(_load_json("systems.json"))


def load_workloads() -> dict:
    """The packaged ``workloads.json`` as a dict (a fresh copy of the cached parse; ``_about`` included).

    Returns:
        ``{key: entry}`` exactly as in the file (sizes in bytes).

    Raises:
        Nothing: the file ships with the package (a missing or corrupt install raises the OS / JSON error).

    Source: ``catalog/data/README.md``; each entry names its publication in ``source``.

    >>> "swing_sweep" in load_workloads()
    True
    """
    return copy.deepcopy(_load_json("workloads.json"))


@dataclass(frozen=True)
class SystemPreset:
    """One named system: published network parameters in SI base units (None where the source gives none).

    Attributes:
        name: the user-facing name (``swing-sst``, ``trn1``, ...).
        key: the entry's key in systems.json (``swing_sst``, ``aws_trainium_trn1``, ...).
        source: the publication the facts come from.
        topologies: topology spec strings, default first; empty when the source gives no exact shape.
        link_bandwidth: bytes/s per link.
        link_latency: seconds per link.
        per_hop_latency: seconds per hop (switch/router traversal).
        alpha: seconds of latency per message.
        beta: seconds per byte transferred.
        gamma: seconds per byte reduced.
        host_injection: bytes/s a host can inject into the network (for Fugaku: its 6 RDMA engines as ports, 6 x
            the link bandwidth).
        notes: everything else the entry says, plus how this preset was derived from it.
        parameter_sources: ``(field, source text)`` pairs, one per JSON field whose value the entry's ``source``
            does not give (``link_bandwidth_bps``, ``alpha_s``, ``rdma_engines``, ...); empty when the entry's
            ``source`` covers every value.
        implementations: ``(name, terms)`` pairs: the collective libraries measured on the system, each an
            object of :class:`~directcoll.simulate.implementation.Implementation` fields (for Fugaku, how many
            threads each runs; software terms only where published).

    Raises:
        Nothing: a frozen record; presets are built from the packaged data by :func:`get_preset`.

    Source: the entry's ``source`` field, e.g. Swing (De Sensi et al., NSDI'24) Sec. 5 for ``swing-sst``.

    >>> p = get_preset("swing-sst")
    >>> p.link_bandwidth, p.link_latency, p.per_hop_latency  # 400 Gb/s, 100 ns, 300 ns
    (50000000000.0, 1e-07, 3e-07)
    >>> f = get_preset("fugaku-unit")  # Tofu D: 6.8 GB/s links, 6 RDMA engines x 6.8 GB/s, 0.49 us Put
    >>> f.topology, f.link_bandwidth, f.host_injection, f.alpha
    ('torus:2x3x2:simple', 6800000000.0, 40800000000.0, 4.9e-07)
    """

    name: str
    key: str
    source: str
    topologies: tuple[str, ...] = ()
    link_bandwidth: float | None = None
    link_latency: float | None = None
    per_hop_latency: float | None = None
    alpha: float | None = None
    beta: float | None = None
    gamma: float | None = None
    host_injection: float | None = None
    notes: str = ""
    parameter_sources: tuple[tuple[str, str], ...] = ()
    implementations: tuple[tuple[str, dict], ...] = ()

    @property
    def topology(self) -> str | None:
        """The default topology spec (first of :attr:`topologies`), or None. Raises: Nothing. Source: systems.json."""
        return self.topologies[0] if self.topologies else None

    def source_of(self, field: str) -> str:
        """Where the value of JSON field ``field`` comes from.

        Returns:
            The entry's ``parameter_sources`` text for ``field`` where it has one, else the entry's ``source``.

        Raises:
            Nothing: a lookup in this record.

        Source: ``catalog/data/README.md`` (the rule for added fields).

        >>> get_preset("trn1").source_of("link_bandwidth_bps")[:14]
        'AWS Neuron doc'
        >>> get_preset("swing-sst").source_of("link_bandwidth_bps")[:5]
        'Swing'
        """
        return dict(self.parameter_sources).get(field, self.source)


# Short aliases: user-facing name -> (systems.json key, topologies override or None to keep the entry's, note).
_ALIASES: dict[str, tuple[str, tuple[str, ...] | None, str]] = {
    # AWS trn1.32xlarge: 16 Trainium chips on a 2D torus (torus:4x4), NeuronLink-v2 at 384 GB/s per chip.
    "trn1": ("aws_trainium_trn1", None, "alias of aws-trainium-trn1"),
    # AWS trn1n.32xlarge: the same 4x4 torus at 768 GB/s per chip.
    "trn1n": ("aws_trainium_trn1n", None, "alias of aws-trainium-trn1n"),
    # One TPU v4 building block: the 4x4x4 cube (first topology of google_tpu_v4).
    "tpu-v4-cube": ("google_tpu_v4", ("torus:4x4x4",), "alias of google-tpu-v4 restricted to one 4x4x4 cube"),
    # The full 4096-chip TPU v4 pod as a 16x16x16 torus (second topology of google_tpu_v4).
    "tpu-v4": ("google_tpu_v4", ("torus:16x16x16",), "alias of google-tpu-v4 restricted to the 16x16x16 pod"),
    # Fugaku's whole Tofu-D 6D torus, 24x23x24x2x3x2 with one cable in each size-2 dimension (10 ports per node).
    "fugaku": ("fugaku_tofu_d", ("torus:24x23x24x2x3x2:simple",),
               "alias of fugaku-tofu-d: the whole machine, 158,976 nodes, 10 ports each"),
    # One Tofu unit: the a x b x c = 2x3x2 part of the shape, 12 nodes.
    "fugaku-unit": ("fugaku_tofu_d", ("torus:2x3x2:simple",), "alias of fugaku-tofu-d restricted to one Tofu unit "
                    "(2x3x2, 12 nodes)"),
    # A job of 2x2x2 Tofu units (96 nodes): exact as a 6D torus, every size-2 dimension having one cable.
    "fugaku-8-units": ("fugaku_tofu_d", ("torus:2x2x2x2x3x2:simple",), "alias of fugaku-tofu-d restricted to a job of "
                       "2x2x2 Tofu units (96 nodes)"),
    # The 64-node 3D job shape node=4x4x4:torus of De Sensi et al.'s Fugaku runs, as the torus the job sees.
    "fugaku-4x4x4": ("fugaku_tofu_d", ("torus:4x4x4",), "alias of fugaku-tofu-d restricted to the 64-node job "
                     "shape node=4x4x4:torus"),
    # Graphcore IPU-POD64: the source says 64 chips on a 2D torus but gives no shape, so topologies=().
    "ipu-pod64": ("graphcore_ipu_pod64", None, "alias of graphcore-ipu-pod64"),
    # Frontera's Rockport 6D torus partition; default topology is the first subtorus used (torus:3x3x3).
    "frontera": ("frontera_rockport", None, "alias of frontera-rockport"),
}

# JSON fields mapped onto SystemPreset attributes, with the factor to SI base units (bits/s -> bytes/s: /8).
_FIELDS = {
    "link_bandwidth_bps": ("link_bandwidth", 1 / 8),
    "link_latency_s": ("link_latency", 1.0),
    "per_hop_latency_s": ("per_hop_latency", 1.0),
    "alpha_s": ("alpha", 1.0),
    "beta_s_per_byte": ("beta", 1.0),
    "gamma_s_per_byte": ("gamma", 1.0),
    "host_injection_bps": ("host_injection", 1 / 8),
}


def _normalize(name: str) -> str:
    return str(name).strip().lower().replace("_", "-")


def _from_entry(name: str, key: str, entry: dict) -> SystemPreset:
    values: dict[str, float] = {}
    notes: list[str] = []
    if entry.get("notes"):
        notes.append(str(entry["notes"]))
    topologies: tuple[str, ...] = tuple(entry.get("topologies", ()))
    if not topologies and entry.get("subtori_used"):
        topologies = tuple(entry["subtori_used"])
        notes.append("topologies are the subtori used in the source's experiments")
    for field, value in entry.items():
        if field in _FIELDS:
            attr, factor = _FIELDS[field]
            values[attr] = float(value) * factor
        elif field not in ("source", "notes", "topologies", "subtori_used", "parameter_sources", "implementations"):
            notes.append(f"{field}={value}")
    if "node_bandwidth_bps" in entry:
        # Zhao et al.'s model: a node's bandwidth B is split evenly over its d links (b = B/d).
        values["host_injection"] = float(entry["node_bandwidth_bps"]) / 8
        if entry.get("degree") and "link_bandwidth" not in values:
            values["link_bandwidth"] = float(entry["node_bandwidth_bps"]) / 8 / int(entry["degree"])
            notes.append("host_injection = node bandwidth B; link_bandwidth = B/degree (derived)")
    if not topologies:
        notes.append("no topology shape in the source data: topologies=()")
    sources = tuple((str(k), str(v)) for k, v in entry.get("parameter_sources", {}).items())
    impls = tuple((str(k), dict(v)) for k, v in entry.get("implementations", {}).items())
    return SystemPreset(name=name, key=key, source=str(entry["source"]), topologies=topologies,
                        notes="; ".join(notes), parameter_sources=sources, implementations=impls, **values)


@cache
def _presets() -> dict[str, SystemPreset]:
    systems = _load_json("systems.json")
    out: dict[str, SystemPreset] = {}
    for key, entry in systems.items():
        if key.startswith("_"):
            continue
        name = _normalize(key)
        out[name] = _from_entry(name, key, entry)
    for alias, (key, topologies, note) in _ALIASES.items():
        base = _from_entry(alias, key, systems[key])
        if topologies is not None:
            missing = [t for t in topologies if t not in base.topologies]
            assert not missing, f"alias {alias}: {missing} not in {key} topologies"
        else:
            topologies = base.topologies
        notes = "; ".join(s for s in (note, base.notes) if s)
        out[alias] = replace(base, topologies=topologies, notes=notes)
    return out


def preset_names() -> list[str]:
    """Every accepted preset name: the JSON-derived names, then the aliases.

    Returns:
        A list of str (``_`` of the JSON keys written ``-``).

    Raises:
        Nothing: reads the packaged data.

    Source: ``catalog/data/systems.json`` and this module's aliases.

    >>> preset_names()[:2]
    ['swing-sst', 'zhao-model']
    """
    return list(_presets())


def list_presets() -> list[SystemPreset]:
    """Every preset, JSON-derived names first (in file order), then the aliases.

    Returns:
        A list of :class:`SystemPreset`, one per name of :func:`preset_names`.

    Raises:
        Nothing: reads the packaged data.

    Source: ``catalog/data/systems.json`` and this module's aliases.

    >>> len(list_presets()) == len(preset_names())
    True
    """
    return list(_presets().values())


def get_preset(name: str) -> SystemPreset:
    """The preset called ``name`` (case-insensitive; ``_`` or ``-``).

    Returns:
        A :class:`SystemPreset` (bandwidths in bytes/s, times in s).

    Raises:
        DirectcollError: unknown name, listing the available names (and the closest ones).

    Source: ``catalog/data/systems.json`` (each entry's ``source`` names its paper and section).

    >>> get_preset("TRN1").topology
    'torus:4x4'
    >>> get_preset("swing-ss")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    directcoll.errors.DirectcollError: unknown system preset 'swing-ss' (did you mean swing-sst?); available: ...
    """
    preset = _presets().get(_normalize(name))
    if preset is None:
        raise DirectcollError(f"unknown system preset {name!r}{_did_you_mean(name, preset_names())}; available: "
                              f"{', '.join(preset_names())}")
    return preset


def _did_you_mean(name, names) -> str:
    """`` (did you mean X or Y?)`` for the names closest to ``name`` (difflib), or ``""``."""
    import difflib

    close = difflib.get_close_matches(_normalize(name), names, n=3, cutoff=0.6)
    return f" (did you mean {' or '.join(close)}?)" if close else ""


#: the SystemPreset fields that describe the network (a preset with none of them has at most a topology)
NETWORK_FIELDS = ("link_bandwidth", "link_latency", "per_hop_latency", "alpha", "beta", "gamma", "host_injection")


def has_network_parameters(preset: SystemPreset) -> bool:
    """Whether ``preset`` gives any network parameter (bandwidth, latency, alpha, beta, gamma, injection).

    Returns:
        A bool: any of :data:`NETWORK_FIELDS` is not None.

    Raises:
        Nothing: reads attributes.

    Source: ``catalog/data/systems.json``.

    >>> has_network_parameters(get_preset("ipu-pod64")), has_network_parameters(get_preset("trn1"))
    (False, True)
    """
    return any(getattr(preset, f) is not None for f in NETWORK_FIELDS)


def parameter_preset_names() -> list[str]:
    """The presets usable as network parameters (:func:`has_network_parameters`).

    Returns:
        A list of preset names, in :func:`preset_names` order.

    Raises:
        Nothing: reads the packaged data.

    Source: ``catalog/data/systems.json``.

    >>> "trn1" in parameter_preset_names(), "ipu-pod64" in parameter_preset_names()
    (True, False)
    """
    return [p.name for p in _presets().values() if has_network_parameters(p)]


def get_parameter_preset(name: str) -> SystemPreset:
    """The preset called ``name``, which must give network parameters (``--params``).

    Returns:
        A :class:`SystemPreset` with at least one of :data:`NETWORK_FIELDS` set.

    Raises:
        DirectcollError: unknown name, or a preset whose source gives no network parameter (such as
            ``ipu-pod64``, which has only a chip count), listing the presets that have parameters and the closest
            matches.

    Source: ``catalog/data/systems.json``.

    >>> get_parameter_preset("kolmakov-cluster").name
    'kolmakov-cluster'
    """
    usable = parameter_preset_names()
    if _normalize(name) not in _presets():
        raise DirectcollError(f"unknown system preset {name!r}{_did_you_mean(name, usable)}; presets with "
                              f"network parameters: {', '.join(usable)}")
    preset = get_preset(name)
    if not has_network_parameters(preset):
        raise DirectcollError(f"preset {name!r} gives no network parameters in its source data ({preset.source}), "
                              f"only {'a topology' if preset.topologies else 'a size'}; presets with network "
                              f"parameters: {', '.join(usable)}")
    return preset


def preset_topology(name: str) -> str | None:
    """The default topology spec of preset ``name`` (first of its topologies), or None when it has none.

    Returns:
        A topology spec string such as ``'torus:4x4x4'``, or None.

    Raises:
        DirectcollError: unknown name (from :func:`get_preset`).

    Source: ``catalog/data/systems.json`` (e.g. Google TPU v4's 4x4x4 cube for ``tpu-v4-cube``).

    >>> preset_topology("tpu-v4-cube")
    'torus:4x4x4'
    """
    return get_preset(name).topology


def workload_names() -> list[str]:
    """The workload keys of workloads.json (``swing_sweep``, ...), metadata excluded.

    Returns:
        A list of str, in file order.

    Raises:
        Nothing: reads the packaged data.

    Source: ``catalog/data/workloads.json``.

    >>> workload_names()[0]
    'swing_sweep'
    """
    return [k for k in _load_json("workloads.json") if not k.startswith("_")]


def workload_sizes(name: str) -> list[int] | None:
    """Message sizes in bytes of workload ``name`` (case-insensitive, ``_`` or ``-``), or None if no such workload.

    Entries with ``sizes_bytes`` give those sizes. Entries with ``tensors`` (one gradient tensor per parameter
    tensor, e.g. ``gpt2_small_fp32_gradients``) give one message per tensor, in file order, duplicates kept:
    ``elements * dtype_bytes`` bytes each (one allreduce per tensor, no bucketing).

    Returns:
        A list of sizes in bytes (ints), or None for an unknown name.

    Raises:
        DirectcollError: the entry has neither ``sizes_bytes`` nor ``tensors`` (a corrupt data file).

    Source: ``catalog/data/workloads.json``; ``swing_sweep`` is Swing (NSDI'24) Sec. 5's 32 B to 512 MiB.

    >>> workload_sizes("swing-sweep")[:4], workload_sizes("no-such-workload")
    ([32, 64, 128, 256], None)
    """
    workloads = _load_json("workloads.json")
    key = str(name).strip().lower().replace("-", "_")
    entry = workloads.get(key) if not key.startswith("_") else None
    if entry is None:
        return None
    if "sizes_bytes" in entry:
        return [int(s) for s in entry["sizes_bytes"]]
    if "tensors" in entry:
        dtype_bytes = int(entry.get("dtype_bytes", 1))
        return [int(t["elements"]) * dtype_bytes for t in entry["tensors"]]
    raise DirectcollError(f"workload {name!r} has neither sizes_bytes nor tensors")
