"""Spec strings are strict (ASCII numbers in stated ranges) and every topology is sized from its spec before it is
built: too large, malformed or hostile specs are refused in milliseconds with one line, through the library and
through the CLI under a hard address-space limit."""

import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from fuzzing import deadline
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from directcoll.errors import DirectcollError, ResourceError, SpecError
from directcoll.resources import memory_budget_override
from directcoll.topology import describe, parse
from directcoll.topology import families as fam
from directcoll.topology.grammar import OPERATORS
from directcoll.topology.metrics import distance_stats, intersection_array
from directcoll.topology.paths import bfs_distances, hop_distance
from directcoll.topology.sizes import MAX_NODES
from directcoll.topology.spec import check_spec, estimate, size_of
from directcoll.topology.table import ALIASES, FAMILIES, families

SRC = str(Path(__file__).resolve().parents[1] / "src")
CLI = [sys.executable, "-m", "directcoll.cli.main"]

#: Specs reported by fuzzing and by a new user.
REPORTED = [
    "complete:20000", "genkautz:4:100000000", "torus:100000x100000", "hypercube:40", "kautz:3:100000000",
    "jellyfish:100000000:5", "jellyfish:9223372036854775808:2", "bipartite:①", "ring:" + "9" * 5000,
    "ring:123456789012345678901234567890",
]

#: Similar specs across every family, alias and operator: too large, out of range, Unicode digits, hostile.
SIMILAR = [
    # families: too many nodes or links, or a field out of its range
    "torus:65536x65536", "torus:" + "x".join(["2"] * 40), "torus:3x3x2:simple:" + "9" * 30, "mesh:100000x100000",
    "ring:10000000000", "ring:10000000000:uni", "hyperx:100000x100000", "hyperx:4096x4096",
    "hammingmesh:1000x1000:1000x1000", "hammingmesh:2x2:100000x100000", "complete:1000000000",
    "bipartite:100000000", "bipartite_minus_matching:100000000", "hamming:30:30", "hamming:2:100000000",
    "hamming:31:2", "circulant:100000000000:1,2", "circulant:1000000:" + ",".join(["1"] * 2000),
    "circulant:100000000:opt4", "genkautz:2:99999999999999999999", "genkautz:100000:1000000", "kautz:100000:5",
    "kautz:2:31", "debruijn:2:30", "debruijn:1000:10", "debruijn:2:99999999999999999999", "twistedhypercube:31",
    "twistedhypercube:29", "twistedtorus:100000x100000", "twistedtorus:4x8:99999999999999999999", "odd:13",
    "odd:100000000", "jellyfish:1000000000:4", "jellyfish:100:4:18446744073709551616", "jellyfish:200000:199999",
    "jellyfish:200:190", "jellyfish:5000:2500", "jellyfish:1000000:2", "xpander:999999:2",
    "xpander:1000000000:4", "xpander:100000:99999", "dbt:10000000000",
    # aliases
    "uniring:10000000000", "shiftedring:10000000000", "shiftedring:16:99999999999999999999", "distreg:q40",
    "distreg:odd99", "distreg:complete:100000", "distreg:hamming:40:2", "twisted-hypercube:40",
    "twisted-torus:100000x100000",
    # Unicode digits, signs and other numerals
    "torus:８x８", "ring:٣", "hypercube:²", "circulant:16:1,٣", "kautz:2:Ⅲ", "line^²(ring:4)", "degree(ring:4,٣)",
    "punctured(ring:8,links=①)", "ring:-4", "ring:+4", "ring:4.0", "ring:1e3", "ring:0x10",
    # operators: sizes multiply, exponents and counts out of range, nesting and length
    "line^30(torus:64x64)", "line^65(ring:4:uni)", "line^1000000000(ring:4:uni)", "line^3(complete:1000)",
    "line(line(line(line(line(hyperx:32x32)))))", "degree(torus:64x64,100000)", "degree(complete:1000,1000)",
    "degree(ring:4,99999999999999999999)", "power(ring:4,64)", "power(ring:4,65)", "power(torus:1024x1024,2)",
    "power(ring:4,1000000000000)", "power(power(power(ring:8,8),8),8)", "product(complete:1000,complete:1000)",
    "product(" + ",".join(["ring:4"] * 40) + ")", "product(" + ",".join(["ring:4"] * 1400) + ")",
    "bidir(genkautz:4:100000000)", "bidir(line^3(complete:200))",
    "punctured(complete:20000,links=1)", "punctured(torus:4x4,links=99999999999999999999)",
    "punctured(ring:8,links=1,seed=18446744073709551616)", "punctured(torus:4x4,links=-1)",
    "line(" * 40 + "ring:4" + ")" * 40, "ring:4" + "0" * 20000, "x" * 20000,
    # unknown names
    "tor:8", "toruss:8x8", "hypercub:10", "lines(ring:4)", "ɡenkautz:2:10",
]


def _one_line(message: str) -> None:
    assert "\n" not in message and 0 < len(message) < 400, message


@pytest.mark.parametrize("spec", REPORTED + SIMILAR)
def test_refused_through_the_library(spec):
    with memory_budget_override("2GiB"), pytest.raises(DirectcollError) as info:
        parse(spec)
    _one_line(str(info.value))


@pytest.mark.parametrize("spec, words", [
    ("bipartite:①", ["bipartite:①", "n", "ASCII digits"]),
    ("hypercube:40", ["hypercube:40", "k", "at most 30"]),
    ("kautz:3:100000000", ["kautz:3:100000000", "D", "at most 30"]),
    ("odd:13", ["odd:13", "k", "at most 12"]),
    ("jellyfish:9223372036854775808:2", ["jellyfish", "N", "at most 9,223,372,036,854,775,807"]),
    ("jellyfish:100:4:18446744073709551616", ["jellyfish", "SEED", "at most"]),
    ("torus:100000x100000", ["torus:100000x100000", "10,000,000,000 nodes", f"at most {MAX_NODES:,} nodes"]),
    ("power(ring:4,65)", ["power(ring:4,65)", "1..64"]),
    ("line^65(ring:4:uni)", ["line^65", "1..64"]),
    ("line^²(ring:4)", ["line^²", "exponent"]),
    ("ring:" + "9" * 5000, ["ring", "N", "5000 digits"]),
])
def test_refusals_name_the_spec_the_field_and_the_range(spec, words):
    with pytest.raises(SpecError) as info:
        parse(spec)
    for word in words:
        assert word in str(info.value), (word, str(info.value))


@pytest.mark.parametrize("spec", ["complete:20000", "genkautz:4:100000000", "jellyfish:100000000:5",
                                  "line(complete:1000)", "degree(torus:64x64,100)"])
def test_too_large_for_the_budget_is_a_resource_error_naming_nodes_and_links(spec):
    nodes, links = estimate(spec)
    with memory_budget_override("2GiB"), pytest.raises(ResourceError) as info:
        parse(spec)
    assert f"{nodes:,} nodes" in str(info.value) and f"{links:,} links" in str(info.value)
    assert "memory budget" in str(info.value)


def test_unknown_family_is_short_with_close_matches_and_the_listing_command():
    for spec, match in [("tor:8", "torus"), ("hypercub:10", "hypercube"), ("genkauts:2:10", "genkautz"),
                        ("line(toruss:4x4)", "torus")]:
        with pytest.raises(SpecError) as info:
            parse(spec)
        message = str(info.value)
        assert len(message) < 200 and match in message and "directcoll topology families" in message, message
    with pytest.raises(SpecError) as info:
        parse("qwertyuiop:3")
    assert "did you mean" not in str(info.value) and len(str(info.value)) < 200


@pytest.mark.parametrize("spec", [None, 123, b"torus:4x4", ["torus:4x4"]])
def test_a_spec_that_is_not_a_string_is_refused_not_converted(spec):
    with pytest.raises(SpecError, match=f"string such as 'torus:8x8', got {type(spec).__name__}"):
        parse(spec)


@pytest.mark.parametrize("spec, named", [("line(ring:1)", "'ring:1'"), ("hypercube:0", "'hypercube:0'"),
                                         ("distreg:q0", "'distreg:q0'"), ("dbt:1", "'dbt:1'"),
                                         ("circulant:4:0", "circulant:4:")])
def test_generator_refusals_name_the_family_spec(spec, named):
    with pytest.raises(SpecError) as info:
        parse(spec)
    assert named in str(info.value), str(info.value)


# -- estimates ------------------------------------------------------------------------------------------------
VALID = ["torus:4x4", "torus:3x3x2:simple", "torus:2x2", "mesh:3x5", "ring:7", "ring:6:uni", "hypercube:4",
         "hyperx:3x4", "hammingmesh:2x2:2x3", "hammingmesh:1x1:3x2", "complete:6", "bipartite:3",
         "bipartite_minus_matching:4", "hamming:2:3", "circulant:16:3,4", "circulant:9:2:uni", "circulant:20:opt4",
         "genkautz:2:10", "genkautz:3:12", "kautz:2:3", "debruijn:2:3", "twistedhypercube:3", "twistedtorus:4x8",
         "twistedtorus:4x4x8:4,4", "odd:4", "petersen", "linegraph_petersen", "jellyfish:20:4:3", "xpander:15:4",
         "dbt:11", "uniring:5", "shiftedring:16", "distreg:octahedron", "distreg:q3", "twisted-torus:4x8:4",
         "line(ring:4)", "line^2(circulant:8:1,3)", "degree(ring:4:uni,3)", "power(ring:3,3)",
         "product(ring:3,complete:3,genkautz:2:5)", "bidir(genkautz:2:10)", "bidir(ring:5:uni)",
         "line(bidir(genkautz:2:6))", "punctured(torus:4x4,links=2,seed=1)", "punctured(torus:4x4,nodes=2)",
         "line(degree(circulant:5:1,2,2))"]


@pytest.mark.parametrize("spec", VALID)
def test_estimate_bounds_what_is_built(spec):
    topo = parse(spec)
    size = size_of(spec)
    nodes, links = estimate(spec)
    assert (nodes, links) == (size.nodes, size.links)
    assert topo.num_links <= links and topo.num_nodes <= nodes
    out = np.bincount(topo.link_src, minlength=topo.num_nodes)
    inn = np.bincount(topo.link_dst, minlength=topo.num_nodes)
    assert out.max() <= size.max_out and inn.max() <= size.max_in
    if not any(w in spec for w in ("punctured", "kautz", "debruijn")):  # no removed links or dropped self-loops
        assert (topo.num_nodes, topo.num_links) == (nodes, links)
    assert size.nbytes > 32 * topo.num_links  # at least the four link arrays


@pytest.mark.parametrize("example", [form.strip() for row in families() if row["type"] != "operator"
                                     for form in row["form"].split("|")])
def test_every_documented_family_form_is_sized(example):
    nodes, links = estimate(example)
    topo = parse(example)
    assert topo.num_nodes <= nodes and topo.num_links <= links


def test_estimate_is_exact_for_a_large_spec_without_building_it():
    assert estimate("power(torus:64x64,2)") == (64**4, 8 * 64**4)
    assert estimate("line^3(circulant:1000:1,2)") == (4**3 * 1000, 4**4 * 1000)
    assert estimate("degree(hammingmesh:2x2:4x4,1)")[0] == 64 + 8 + 8


def test_check_spec_sizes_with_the_budget():
    assert check_spec("torus:8x8").nodes == 64
    with memory_budget_override("1MiB"), pytest.raises(ResourceError, match="torus:256x256"):
        check_spec("torus:256x256")
    with memory_budget_override("1MiB"), pytest.raises(ResourceError):
        parse("torus:256x256")


# -- describe and routing ---------------------------------------------------------------------------------------
def test_all_pairs_distances_of_a_large_non_cayley_topology_are_refused_before_the_sweep():
    topo = parse("genkautz:4:200000")
    with pytest.raises(ResourceError, match="genkautz:4:200000.*link visits"):
        distance_stats(topo)
    with pytest.raises(ResourceError, match="link visits"):
        describe(topo)
    with pytest.raises(ResourceError, match="link visits"):
        hop_distance(topo, np.arange(200000), np.zeros(200000, dtype=np.int64))
    # Cayley topologies of the same size need one BFS and are described
    assert describe(parse("circulant:200000:1,2")).nodes == 200000


def test_distance_rows_and_dense_matrices_are_checked_against_the_budget():
    topo = parse("circulant:2000:1,3")
    with memory_budget_override("1MiB"):
        with pytest.raises(ResourceError, match="hop distances from 2,000 sources"):
            bfs_distances(topo, np.arange(2000))
        with pytest.raises(ResourceError, match="intersection array"):
            intersection_array(topo)
        assert bfs_distances(topo, [0]).shape == (1, 2000)
    # describe sweeps non-Cayley topologies in chunks that fit: the result does not depend on the chunk
    line = parse("line(circulant:50:1,3)")
    with memory_budget_override("2MiB"):
        assert distance_stats(line) == distance_stats(parse("line(circulant:50:1,3)"))


# -- the CLI, in a subprocess under a hard memory limit -----------------------------------------------------------
def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))


def _cli(*args, budget="2GiB"):
    env = {**os.environ, "PYTHONPATH": SRC, "DIRECTCOLL_MEMORY_BUDGET": budget}
    start = time.perf_counter()
    out = subprocess.run(CLI + list(args), capture_output=True, text=True, timeout=60, env=env,
                         preexec_fn=_limit_memory)
    return out, time.perf_counter() - start


CLI_SPECS = REPORTED + ["hyperx:4096x4096", "twistedhypercube:29", "odd:13", "xpander:100000:99999",
                        "line^3(complete:1000)", "power(torus:1024x1024,2)", "punctured(complete:20000,links=1)",
                        "degree(ring:4,٣)", "line(" * 40 + "ring:4" + ")" * 40, "tor:8", "genkautz:4:200000"]


@pytest.mark.parametrize("spec", CLI_SPECS)
def test_cli_refuses_with_one_line_and_exit_2_under_a_memory_limit(spec):
    out, seconds = _cli("topology", "describe", spec)
    assert out.returncode == 2, (spec, out.returncode, out.stderr[-2000:])
    lines = _errors(out.stderr)
    assert len(lines) == 1 and lines[0].startswith("directcoll: error: "), out.stderr[-2000:]
    assert "Traceback" not in out.stderr and out.stdout == ""


def test_cli_lists_the_families():
    import json

    out, _ = _cli("topology", "families", "--json")
    rows = json.loads(out.stdout)
    assert {r["name"] for r in rows} == set(FAMILIES) | set(ALIASES) | set(OPERATORS)
    assert rows == families()
    text, _ = _cli("topology", "families")
    entries = []  # one entry per family: its first line starts at column 0, its wrapped lines are indented
    for line in text.stdout.rstrip().splitlines():
        if line[:1].strip():
            entries.append(line)
        else:
            entries[-1] += " " + line.strip()
    assert len(entries) == len(rows) and all(entry.split()[0] == r["name"] and r["form"] in entry
                                             for r, entry in zip(rows, entries, strict=True))


# -- property: any spec from the grammar builds or is refused with the project's own error ----------------------
NUMBERS = st.one_of(
    st.integers(0, 9).map(str), st.integers(10, 200).map(str),
    st.sampled_from(["0", "00", "-1", "-4", "+4", "4.0", "1e3", "0x10", "", "①", "٣", "１６", "²", "Ⅲ",
                     "9223372036854775807", "9223372036854775808", "18446744073709551616", "1" + "0" * 30,
                     "9" * 5000, "100000000", "65536", "1048576"]),
)
_SHAPE_FAMILIES = ["torus", "mesh", "hyperx", "twistedtorus", "twisted-torus"]


@st.composite
def _family(draw):
    kind = draw(st.sampled_from(sorted(FAMILIES) + sorted(ALIASES) + ["torrus", "TORUS", "", "q", "ｔorus"]))
    fields = []
    for _ in range(draw(st.integers(0, 3))):
        sep = "x" if kind in _SHAPE_FAMILIES and draw(st.booleans()) else ","
        field = sep.join(draw(st.lists(NUMBERS, min_size=1, max_size=3)))
        fields.append(draw(st.sampled_from([field] * 6 + ["uni", "simple", "opt4", "petersen", "q3", "odd4"])))
    return ":".join([kind] + fields)


def _operator(children):
    def make(args):
        op, inner, other, n, keys = args
        if op == "line^":
            return f"line^{n}({inner})"
        if op in ("degree", "power"):
            return f"{op}({inner},{n})"
        if op == "product":
            return f"product({inner},{other})"
        if op == "punctured":
            return f"punctured({inner}{''.join(f',{k}={v}' for k, v in keys)})"
        return f"{op}({inner})"

    return st.tuples(st.sampled_from(["line", "line^", "degree", "power", "product", "bidir", "punctured"]),
                     children, children, NUMBERS,
                     st.lists(st.tuples(st.sampled_from(["links", "nodes", "seed", "edges"]), NUMBERS),
                              max_size=3)).map(make)


SPECS = st.recursive(_family(), _operator, max_leaves=4)


@settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=SPECS)
def test_any_spec_builds_or_is_refused_with_a_directcoll_error(spec):
    with deadline(20), memory_budget_override("256MiB"):
        try:
            topo = parse(spec)
        except DirectcollError as exc:
            _one_line(str(exc))
        else:
            nodes, links = estimate(spec)
            assert topo.num_nodes <= nodes and topo.num_links <= links


# -- the all-to-all flow LP of `topology describe --alltoall` -----------------------------------------------------
def test_the_flow_lp_is_sized_before_its_arrays_are_built():
    from directcoll.synthesis.mcf.link import alltoall_mcf

    with memory_budget_override("256MiB"):
        with pytest.raises(ResourceError, match=r"flow LP on jellyfish:2000:8:0 \(2,000 commodities x 16,000 links"):
            alltoall_mcf("jellyfish:2000:8", method="link")
        with pytest.raises(ResourceError, match="3,998,000 commodities"):
            alltoall_mcf("jellyfish:2000:8", method="link", commodities="pair")
    assert alltoall_mcf("jellyfish:20:4:3", method="link").value > 0  # small ones are solved as before


def test_cli_alltoall_flow_lp_refused_under_a_memory_limit():
    out, seconds = _cli("topology", "describe", "complete:2000", "--alltoall", "--method", "link")
    assert out.returncode == 2 and "flow LP on complete:2000" in out.stderr, out.stderr[-2000:]
    assert len(_errors(out.stderr)) == 1 and out.stdout == ""


# -- direct calls of the generators are sized like spec strings ---------------------------------------------------
@pytest.mark.parametrize("call, words", [
    (lambda: fam.torus((100000, 100000)), ["torus((100000, 100000))", "10,000,000,000 nodes", "at most"]),
    (lambda: fam.torus(np.array([100000, 100000])), ["torus((100000, 100000))", "at most"]),
    (lambda: fam.hypercube(40), ["hypercube(40)", "at most"]),
    (lambda: fam.kautz(3, 100000000), ["kautz(3, 100000000)", "at most"]),
    (lambda: fam.odd_graph(10**40), ["odd_graph(about 2^132)", "at most"]),
    (lambda: fam.circulant(10**12, list(range(1, 50))), ["(49 values)", "at most"]),
    (lambda: fam.jellyfish(20, 4, 2**64), ["jellyfish", "seed", "18446744073709551616"]),
    (lambda: fam.jellyfish(20, 4, 10**5000), ["jellyfish", "seed", "about 2^"]),
])
def test_direct_generator_calls_are_refused_before_building(call, words):
    with pytest.raises(SpecError) as info:
        call()
    _one_line(str(info.value))
    for word in words:
        assert word in str(info.value), (word, str(info.value))


def test_direct_generator_calls_check_the_memory_budget_and_build_as_before():
    with memory_budget_override("64MiB"):
        for call in (lambda: fam.complete(2000), lambda: fam.jellyfish(1000000, 4), lambda: fam.xpander(200000, 4)):
            with pytest.raises(ResourceError, match="memory budget"):
                call()
    assert fam.torus((4, 4)).spec == parse("torus:4x4").spec
    assert np.array_equal(fam.circulant(16, [3, 4]).link_dst, parse("circulant:16:3,4").link_dst)


def test_bfb_distance_matrix_is_sized_before_rustworkx_allocates_it(tmp_path):
    out, seconds = _cli("schedule", "bfb", "genkautz:4:100000", "--collective", "allgather",
                        "-o", str(tmp_path / "s.json"))
    # BFB plans every node here (no translation): its per-pair estimate refuses first, and the distance matrix
    # is sized on its own before rustworkx would allocate it
    assert out.returncode == 2 and "bfb allgather on genkautz:4:100000" in out.stderr, out.stderr[-2000:]
    assert len(_errors(out.stderr)) == 1 and out.stdout == ""
    from directcoll.errors import ResourceError
    from directcoll.resources import memory_budget_override
    from directcoll.topology import bfs_distances, parse

    with memory_budget_override("2GiB"), pytest.raises(ResourceError, match="distance matrix of genkautz:4:100000"):
        bfs_distances(parse("genkautz:4:100000"))


def test_a_ring_pattern_is_sized_by_its_distinct_steps_not_its_2n_steps():
    # compare builds ring and bucket as step patterns (a few distinct steps): torus:128x128 was refused for the
    # 64 GiB a materialised 2(N - 1)-step ring would need
    from directcoll.errors import ResourceError
    from directcoll.registry import check_build_memory
    from directcoll.resources import memory_budget_override
    from directcoll.topology import parse

    topo = parse("torus:128x128")
    with memory_budget_override("1GiB"):
        check_build_memory("ring", topo, pattern=True)
        with pytest.raises(ResourceError, match="ring"):
            check_build_memory("ring", topo)


def _errors(stderr: str) -> list[str]:
    """stderr's lines less the progress lines a loaded machine may print before the error (Heartbeat's)."""
    return [line for line in stderr.strip().splitlines() if not re.match(r"directcoll: .+ \.\.\. \d+ s", line)]
