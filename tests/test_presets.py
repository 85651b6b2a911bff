"""System presets, workloads, parse_sizes and parse_bandwidth against the packaged, sourced data."""

import dataclasses
import json
from pathlib import Path

import pytest

from directcoll.catalog.presets import (
    SystemPreset,
    get_preset,
    list_presets,
    load_systems,
    load_workloads,
    preset_names,
    preset_topology,
    workload_names,
    workload_sizes,
)
from directcoll.errors import DirectcollError
from directcoll.units import parse_bandwidth, parse_size, parse_sizes

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


# --- packaged data -----------------------------------------------------------------------------------------------


def test_load_systems_and_workloads():
    systems, workloads = load_systems(), load_workloads()
    assert "swing_sst" in systems and "_about" in systems
    assert "swing_sweep" in workloads and "_about" in workloads
    systems["swing_sst"]["link_bandwidth_bps"] = 0  # callers get a copy: the cache is not mutated
    assert load_systems()["swing_sst"]["link_bandwidth_bps"] == 400e9


@pytest.mark.parametrize("filename", ["systems.json", "workloads.json"])
def test_packaged_json_matches_shared(filename):
    shared = SHARED_DATA / filename
    if not shared.exists():
        pytest.skip(f"{shared} not present (installed without the project's shared/ directory)")
    packaged = load_systems() if filename == "systems.json" else load_workloads()
    assert packaged == json.loads(shared.read_text(encoding="utf-8"))


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
    assert "Trainium" in trn1.source
    assert preset_topology("trn1") == "torus:4x4"
    assert get_preset("tpu-v4-cube").topologies == ("torus:4x4x4",)
    assert preset_topology("tpu-v4-cube") == "torus:4x4x4"
    assert preset_topology("tpu-v4") == "torus:16x16x16"
    assert preset_topology("google-tpu-v4") == "torus:4x4x4"
    assert get_preset("google-tpu-v4").topologies == ("torus:4x4x4", "torus:16x16x16")
    assert preset_topology("fugaku") == "torus:24x23x24x2x3x2"
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
    for alias in ("trn1", "tpu-v4-cube", "tpu-v4", "fugaku", "ipu-pod64", "frontera"):
        assert alias in names


def test_list_presets_all_sourced_and_consistent():
    presets = list_presets()
    assert [p.name for p in presets] == preset_names()
    assert len({p.name for p in presets}) == len(presets)
    for p in presets:
        assert p.source.strip(), p.name
        assert isinstance(p.topologies, tuple)
        assert p.topology == (p.topologies[0] if p.topologies else None)
        for field in ("link_bandwidth", "link_latency", "per_hop_latency", "alpha", "beta", "gamma",
                      "host_injection"):
            value = getattr(p, field)
            assert value is None or value > 0, (p.name, field)
    with pytest.raises(dataclasses.FrozenInstanceError):
        presets[0].alpha = 1.0


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
