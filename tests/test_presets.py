"""System presets, workloads, parse_sizes and parse_bandwidth against the packaged, sourced data."""

import dataclasses

import pytest

from directcoll.catalog.presets import (
    SystemPreset,
    get_parameter_preset,
    get_preset,
    has_network_parameters,
    list_presets,
    load_systems,
    load_workloads,
    preset_names,
    preset_topology,
    workload_names,
    workload_sizes,
)
from directcoll.errors import DirectcollError
from directcoll.simulate.params import network_params, resolve_network
from directcoll.topology import parse
from directcoll.units import parse_bandwidth, parse_size, parse_sizes

# --- packaged data -----------------------------------------------------------------------------------------------


def test_load_systems_and_workloads():
    systems, workloads = load_systems(), load_workloads()
    assert "swing_sst" in systems and "_about" in systems
    assert "swing_sweep" in workloads and "_about" in workloads
    systems["swing_sst"]["link_bandwidth_bps"] = 0  # callers get a copy: the cache is not mutated
    assert load_systems()["swing_sst"]["link_bandwidth_bps"] == 400e9


def test_every_entry_and_added_number_names_its_source():
    """Every system entry names its publication (``source``); every ``parameter_sources`` key is a field of its
    entry, with a source text of a sentence, not a placeholder (catalog/data/README.md)."""
    named = 0
    for key, entry in load_systems().items():
        if key.startswith("_"):
            continue
        assert isinstance(entry.get("source", ""), str) and entry.get("source", "").strip(), key
        sources = entry.get("parameter_sources", {})
        assert isinstance(sources, dict), key
        for field, text in sources.items():
            assert field in entry and field != "parameter_sources", (key, field)
            assert isinstance(text, str) and len(text.strip()) > 20, (key, field)
            named += 1
    assert named  # the Fugaku, TPU and trn1 entries add sourced numbers


# --- presets -----------------------------------------------------------------------------------------------------


def test_swing_sst():
    p = get_preset("swing-sst")
    assert isinstance(p, SystemPreset)
    assert p.name == "swing-sst" and p.key == "swing_sst"
    assert p.link_bandwidth == pytest.approx(5e10)  # 400 Gb/s
    assert p.link_latency == pytest.approx(100e-9)
    assert p.per_hop_latency == pytest.approx(300e-9)
    assert p.topologies[0] == "torus:64x64" and "torus:8x8" in p.topologies
    assert "Swing" in p.source


def test_kolmakov_cluster():
    p = get_preset("kolmakov-cluster")
    assert (p.alpha, p.beta, p.gamma) == (pytest.approx(3e-5), pytest.approx(1e-8), pytest.approx(2e-10))
    assert p.topologies == () and preset_topology("kolmakov-cluster") is None


def test_frontera_converts_bits_to_bytes():
    p = get_preset("frontera")
    assert p.key == "frontera_rockport"
    assert p.link_bandwidth == pytest.approx(25e9 / 8)
    assert p.host_injection == pytest.approx(100e9 / 8)
    assert preset_topology("frontera") == "torus:3x3x3" == preset_topology("frontera-rockport")


def test_zhao_model_derives_link_bandwidth():
    p = get_preset("zhao-model")
    assert p.alpha == pytest.approx(1e-5)
    assert p.host_injection == pytest.approx(100e9 / 8)
    assert p.link_bandwidth == pytest.approx(100e9 / 8 / 4)
    assert "derived" in p.notes


def test_aliases():
    trn1 = get_preset("trn1")
    assert trn1.key == "aws_trainium_trn1" and trn1.topologies == ("torus:4x4",)
    assert "Trainium" in trn1.source and "AWS Neuron" in trn1.source_of("topologies")
    assert preset_topology("trn1") == "torus:4x4"
    assert get_preset("trn1n").key == "aws_trainium_trn1n" and preset_topology("trn1n") == "torus:4x4"
    assert get_preset("tpu-v4-cube").topologies == ("torus:4x4x4",)
    assert preset_topology("tpu-v4-cube") == "torus:4x4x4"
    assert preset_topology("tpu-v4") == "torus:16x16x16"
    assert preset_topology("google-tpu-v4") == "torus:4x4x4"
    assert get_preset("google-tpu-v4").topologies == ("torus:4x4x4", "torus:16x16x16")
    full = get_preset("fugaku-tofu-d")
    assert full.topologies[0] == "torus:24x23x24x2x3x2"  # the full machine's shape comes first
    assert preset_topology("fugaku") == "torus:24x23x24x2x3x2:simple"  # Tofu D's 10 ports
    assert preset_topology("fugaku-unit") == "torus:2x3x2:simple"
    assert preset_topology("fugaku-8-units") == "torus:2x2x2x2x3x2:simple"
    assert preset_topology("fugaku-4x4x4") == "torus:4x4x4"
    for alias in ("fugaku", "fugaku-unit", "fugaku-8-units", "fugaku-4x4x4"):
        p = get_preset(alias)
        assert p.key == "fugaku_tofu_d" and p.topology in full.topologies
        assert (p.link_bandwidth, p.host_injection, p.alpha) == (full.link_bandwidth, full.host_injection, full.alpha)
    ipu = get_preset("ipu-pod64")
    assert ipu.key == "graphcore_ipu_pod64" and ipu.topologies == () and ipu.topology is None
    assert "no topology" in ipu.notes
    assert preset_topology("ipu-pod64") is None


def test_names_case_and_separator_insensitive():
    assert get_preset("SWING_SST") == get_preset("swing-sst") == get_preset(" Swing-Sst ")
    assert get_preset("aws_trainium_trn1").name == "aws-trainium-trn1"
    assert get_preset("TPU_V4_CUBE").name == "tpu-v4-cube"


def test_every_json_key_is_a_preset():
    keys = [k for k in load_systems() if not k.startswith("_")]
    names = preset_names()
    for key in keys:
        assert key.replace("_", "-") in names
        assert get_preset(key).key == key
    for alias in ("trn1", "trn1n", "tpu-v4-cube", "tpu-v4", "fugaku", "fugaku-unit", "fugaku-8-units",
                  "fugaku-4x4x4", "ipu-pod64", "frontera"):
        assert alias in names


def test_list_presets_all_sourced_and_consistent():
    presets = list_presets()
    assert [p.name for p in presets] == preset_names()
    assert len({p.name for p in presets}) == len(presets)
    for p in presets:
        assert p.source.strip(), p.name
        assert isinstance(p.topologies, tuple)
        assert p.topology == (p.topologies[0] if p.topologies else None)
        for field in ("link_bandwidth", "beta", "host_injection"):
            value = getattr(p, field)
            assert value is None or value > 0, (p.name, field)
        for field in ("link_latency", "per_hop_latency", "alpha", "gamma"):  # a latency may be 0 (Fugaku's links)
            value = getattr(p, field)
            assert value is None or value >= 0, (p.name, field)
    with pytest.raises(dataclasses.FrozenInstanceError):
        presets[0].alpha = 1.0


# --- real systems: Fugaku (Tofu D), TPU v4, AWS trn1 ---------------------------------------------------------


def test_fugaku_tofu_d_parameters_in_si_units():
    raw = load_systems()["fugaku_tofu_d"]
    assert raw["link_bandwidth_bps"] == 6.8e9 * 8 and raw["rdma_engines"] == 6
    p = get_preset("fugaku-tofu-d")
    assert p.link_bandwidth == pytest.approx(6.8e9)  # 28 Gb/s x 2 lanes per link per direction
    assert p.host_injection == pytest.approx(40.8e9) == pytest.approx(6 * p.link_bandwidth)  # 6 RDMA engines
    assert p.alpha == pytest.approx(0.49e-6)  # one-way 8-byte Put (Ajima et al., CLUSTER'18)
    assert p.link_latency == 0.0 and p.per_hop_latency is None
    assert "rdma_engines=6" in p.notes and "host_injection" in p.notes
    assert "Ajima" in p.source_of("alpha_s") and "A64FX" in p.source_of("link_bandwidth_bps")
    assert "TNI" in p.source_of("rdma_engines")


def test_tpu_v4_and_trn1_parameters_in_si_units():
    for name in ("tpu-v4-cube", "tpu-v4", "google-tpu-v4"):
        p = get_preset(name)
        assert p.link_bandwidth == pytest.approx(45e9)  # ICI: 4.5e10 bytes/s per link one way
        assert p.link_latency is None and p.host_injection is None and p.alpha is None
    assert get_preset("trn1").link_bandwidth == pytest.approx(384e9 / 4)  # NeuronLink-v2, 4 neighbours
    assert get_preset("trn1n").link_bandwidth == pytest.approx(768e9 / 4)


def test_every_preset_topology_parses():
    for p in list_presets():
        for spec in p.topologies:
            topology = parse(spec)
            assert topology.num_compute >= 2, (p.name, spec)
    assert parse(preset_topology("fugaku")).num_compute == 24 * 23 * 24 * 2 * 3 * 2 == 158_976
    assert parse(preset_topology("fugaku")).num_links == 158_976 * 10  # Tofu D: 10 ports per node
    assert parse(preset_topology("fugaku-unit")).num_compute == 12
    assert parse(preset_topology("fugaku-8-units")).num_compute == 96
    assert parse(preset_topology("trn1")).num_compute == 16


def test_every_preset_with_parameters_names_their_sources():
    keys_with_added = {k for k, e in load_systems().items() if not k.startswith("_") and "parameter_sources" in e}
    assert {"fugaku_tofu_d", "google_tpu_v4", "aws_trainium_trn1", "aws_trainium_trn1n"} <= keys_with_added
    for p in list_presets():
        if not has_network_parameters(p):
            continue
        assert p.source.strip(), p.name
        if p.key in keys_with_added:
            fields = dict(p.parameter_sources)
            assert fields and all(text.strip() for text in fields.values()), p.name
            assert any(f.endswith(("_bps", "_s")) for f in fields), p.name


def test_presets_use_their_own_parameters():
    for name, bandwidth in (("fugaku-unit", 6.8e9), ("fugaku-4x4x4", 6.8e9), ("tpu-v4-cube", 45e9),
                            ("trn1", 96e9), ("trn1n", 192e9)):
        topology, params, notes = resolve_network(name)
        assert params.name == name and params.link_bandwidth == pytest.approx(bandwidth)
        assert topology.spec == preset_topology(name)
        assert any(n.startswith(f"parameters {name}:") for n in notes)
    _, params, _ = resolve_network("fugaku-unit")
    assert params.host_injection == pytest.approx(40.8e9) and params.alpha == pytest.approx(0.49e-6)
    assert params.link_latency == 0.0 and "Ajima" in params.source
    _, params, _ = resolve_network("trn1", "swing-sst")  # an explicit --params still wins
    assert params.name == "swing-sst"
    assert network_params("tpu-v4").link_bandwidth == pytest.approx(45e9)


def test_presets_without_parameters_are_still_refused_as_params():
    for name in ("ipu-pod64", "graphcore-ipu-pod64", "google-tpu-v5p"):
        with pytest.raises(DirectcollError, match="no network parameters"):
            get_parameter_preset(name)
    assert get_parameter_preset("trn1").name == "trn1"


def test_unknown_preset_lists_names():
    with pytest.raises(DirectcollError, match="nope") as exc:
        get_preset("nope")
    assert "swing-sst" in str(exc.value) and "trn1" in str(exc.value)
    with pytest.raises(DirectcollError):
        preset_topology("nope")


# --- workloads and parse_sizes -----------------------------------------------------------------------------------


def test_sweep_range_equals_swing_sweep():
    sizes = parse_sizes("32B..512MiB")
    assert len(sizes) == 25
    assert sizes[0] == 32 and sizes[-1] == 512 * 2**20
    assert sizes == load_workloads()["swing_sweep"]["sizes_bytes"]
    assert parse_sizes("swing_sweep") == sizes == parse_sizes("Swing-Sweep")


def test_range_steps_by_two_from_low():
    assert parse_sizes("3..100") == [3, 6, 12, 24, 48, 96]
    assert parse_sizes("1KiB..1KiB") == [1024]
    assert parse_sizes(" 1KiB .. 4KiB ") == [1024, 2048, 4096]


def test_lists_and_single_sizes():
    assert parse_sizes("1KiB,1MiB,64MiB") == [1024, 2**20, 64 * 2**20]
    assert parse_sizes("1KiB, 1MB") == [1024, 10**6]
    assert parse_sizes("4096") == [4096]
    assert parse_sizes("64KiB") == [65536]
    assert parse_sizes(425) == [425]
    assert parse_sizes(["1KiB", 8]) == [1024, 8]
    assert parse_sizes("1KiB,hpc_mean_allreduce,4B..8B") == [1024, 425, 4, 8]


def test_workloads():
    assert "swing_sweep" in workload_names() and "_about" not in workload_names()
    assert parse_sizes("kolmakov-experiments") == [425, 9216]
    assert parse_sizes("pytorch_ddp_bucket") == [25 * 2**20]
    assert parse_sizes("zhao_testbed") == [1000, 10**6, 10**9]
    assert workload_sizes("no_such_workload") is None
    for name in workload_names():
        sizes = parse_sizes(name)
        assert sizes and all(isinstance(s, int) and s > 0 for s in sizes)


def test_tensor_workload_gives_one_size_per_tensor():
    entry = load_workloads()["gpt2_small_fp32_gradients"]
    sizes = parse_sizes("gpt2-small-fp32-gradients")
    assert len(sizes) == len(entry["tensors"]) == 148
    assert sizes[0] == 38597376 * 4  # wte.weight, fp32
    assert sum(sizes) == 124_439_808 * 4  # every parameter once


@pytest.mark.parametrize("bad", ["", "foo", "1KiB,", ",", "512MiB..32B", "0", "0..8", "1..x", "1KiB..", "-4",
                                 "_about", True, 0])
def test_bad_sizes(bad):
    with pytest.raises(DirectcollError) as exc:
        parse_sizes(bad)
    message = str(exc.value)
    assert repr(bad) in message
    assert "32B..512MiB" in message and "swing_sweep" in message


def test_parse_size_unchanged():
    assert parse_size("512MiB") == 512 * 2**20
    assert parse_size("1MB") == 10**6


# --- parse_bandwidth ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ("400Gbps", 5e10),
    ("400Gb/s", 5e10),
    ("400 Gbit/s", 5e10),
    ("400gbps", 5e10),
    ("50GB/s", 5e10),
    ("50GBps", 5e10),
    ("100Mbps", 12.5e6),
    ("25Gbps", 3.125e9),
    ("3.2Tbps", 4e11),
    ("1GiB/s", 2**30),
    (5e10, 5e10),
    (1000, 1000.0),
])
def test_parse_bandwidth(text, expected):
    assert parse_bandwidth(text) == pytest.approx(expected)


@pytest.mark.parametrize("bad", ["", "fast", "400G", "Gbps", "400Gbs", "400 Xb/s", "0", "-5Gbps", "0Gbps", 0, -1.0,
                                 "inf", "1000", "5e10"])  # text without a unit: bits or bytes? refused
def test_bad_bandwidth(bad):
    with pytest.raises(DirectcollError, match="bandwidth"):
        parse_bandwidth(bad)
