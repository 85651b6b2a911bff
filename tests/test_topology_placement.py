"""placed(LOGICAL,PHYSICAL,order=...): algorithms build on the job's grid, the engines route over the physical
links, and bad placements are refused in one line."""

import json

import numpy as np
import pytest

from directcoll.cli.main import main
from directcoll.errors import SpecError, TopologyError
from directcoll.registry import build, build_pattern
from directcoll.simulate.params import NetworkParams
from directcoll.simulate.step import simulate
from directcoll.topology import parse
from directcoll.topology.placement import gray_words
from directcoll.verify import verify


@pytest.mark.parametrize("shape", [(2, 3), (4, 4), (2, 2, 2, 2), (3, 2, 5)])
def test_consecutive_gray_words_are_one_step_apart_and_cover_the_grid(shape):
    words = gray_words(shape)
    assert len({tuple(w) for w in words}) == int(np.prod(shape))
    assert (np.abs(np.diff(words, axis=0)).sum(axis=1) == 1).all()


def test_a_ring_placed_along_a_gray_code_of_a_hypercube_keeps_its_grid_and_takes_the_hypercube_links():
    t = parse("placed(torus:16, hypercube:4, order=Gray)")
    assert t.spec == "placed(torus:16,hypercube:4,order=gray)" and parse(t.spec).spec == t.spec
    assert t.shape == (16,) and t.wraps and t.kind == "placed" and not t.is_cayley
    # rank r runs on hypercube node r ^ (r >> 1): consecutive ranks (and 15, 0) are one link apart, and so are
    # r and r ^ 3 for even r (two Gray words differing in their two lowest bits)
    assert t.params["nodes"] == tuple(r ^ (r >> 1) for r in range(16))
    pairs = set(zip(t.link_src.tolist(), t.link_dst.tolist(), strict=True))
    assert all((r, (r + 1) % 16) in pairs for r in range(16)) and len(pairs) == 64
    assert (0, 3) in pairs and (0, 8) not in pairs and (0, 15) in pairs


def test_algorithms_build_on_the_logical_grid_and_the_links_decide_the_time():
    placed, ring = parse("placed(torus:16,hypercube:4,order=gray)"), parse("torus:16")
    schedule = build("swing", placed, "allreduce", variant="bandwidth", ports=2)
    assert verify(schedule).ok
    # the same schedule as on the ring (peers from rank numbers), cheaper on the hypercube's extra links: recursive
    # doubling's partners at distance 8 are 1 to 4 hops away instead of 8
    bound = NetworkParams(link_bandwidth=1e9, link_latency=0.0, alpha=0.0, per_hop_latency=0.0, gamma=0.0)
    on = {t.spec: simulate(build_pattern("recursive-doubling", t, "allreduce", variant="bandwidth"), t, bound)
          .time([1 << 20])[0] for t in (placed, ring)}
    assert on[placed.spec] < 0.6 * on[ring.spec]
    # a placement on the logical network itself in rank order changes nothing
    same = parse("placed(torus:16,torus:16)")
    pattern = build_pattern("recursive-doubling", same, "allreduce", variant="bandwidth")
    assert simulate(pattern, same, bound).time([1 << 20])[0] == pytest.approx(on[ring.spec], rel=1e-12)


@pytest.mark.parametrize("spec, error, says", [
    ("placed(torus:16,ring:8)", TopologyError, "the job has 16 ranks but ring:8 has 8 compute nodes"),
    ("placed(torus:16)", SpecError, "the physical network of placed"),
    ("placed(torus:16,hypercube:4,order=snake)", SpecError, "an order of placed"),
    ("placed(ring:10,petersen,order=gray)", SpecError, "order=gray needs a physical network with a grid shape"),
])
def test_a_bad_placement_is_refused_in_one_line(spec, error, says):
    with pytest.raises(error, match=says) as info:
        parse(spec)
    assert "\n" not in str(info.value)


def test_dimension_order_routing_refuses_a_placed_job():
    t = parse("placed(torus:4x4,torus:4x4)")
    with pytest.raises(TopologyError, match="a placed job's grid is not its links"):
        simulate(build_pattern("ring", t, "allreduce"), t, NetworkParams(), routing="dor")


def test_link_selectors_by_grid_refuse_a_placed_job_and_the_physical_network_takes_them():
    with pytest.raises(SpecError, match="a placed job's grid is not its links"):
        parse("links(placed(torus:4x4,torus:4x4),dim=0,bandwidth=0.5x)")
    inside = parse("placed(torus:16,links(hypercube:4,dim=0,bandwidth=0.5x),order=gray)")
    assert sorted(set(inside.link_bandwidth.tolist())) == [25e9, 50e9]
    by_pair = parse("links(placed(torus:16,hypercube:4,order=gray),cable=0-1,bandwidth=0.5x)")
    assert (by_pair.link_bandwidth < 50e9).sum() == 2


def test_compare_ranks_the_contenders_on_a_placed_job(capsys):
    # the expansion contender takes a placed job as a whole (a leaf), as it does a punctured one
    assert main(["compare", "placed(torus:16,hypercube:4,order=gray)", "--sizes", "64KiB", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {"swing", "recursive-doubling", "bfb"} <= {r["family"] for r in doc["results"]}
    assert all(r["time_s"] > 0 for r in doc["results"])
    # a torus job is compared as one, even where its grid does not embed in the machine's links
    assert main(["compare", "placed(torus:4x4,torus:4x4,order=gray)", "--sizes", "64KiB", "--json"]) == 0
    assert {"swing", "bucket", "ring"} <= {r["family"] for r in json.loads(capsys.readouterr().out)["results"]}
