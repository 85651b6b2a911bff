"""The schedule language (docs/language.md): the four worked examples compile, verify, simulate and export; the ring
and Swing examples equal the registry's ring allreduce and Swing reduce-scatter step for step and link for link;
each mistake a designer can make is one line naming the step, the rank and the chunk."""

from __future__ import annotations

import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from directcoll.errors import ProgramError, ScheduleError, UnsupportedShapeError
from directcoll.export.msccl import export_msccl, import_msccl
from directcoll.lang import XML, Buffer, Check, Program, algorithm, chunk
from directcoll.plugins import algorithms_in_file
from directcoll.registry import build
from directcoll.schedule.pattern import pattern_of
from directcoll.simulate import SWING_SST, simulate
from directcoll.topology import link_loads, parse
from directcoll.verify import verify

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "docs" / "examples"
DOCS = ROOT / "docs" / "language.md"


def example(name: str):
    """The one algorithm docs/examples/NAME.py defines (not registered: this process's registry stays as built)."""
    (alg,) = algorithms_in_file(EXAMPLES / f"{name}.py")
    return alg


#: (example file, its registry name, collective, networks, build options)
EXAMPLE_CASES = [
    ("ring_allreduce", "lang-ring", "allreduce", ["torus:8", "ring:5"], {}),
    ("swing_reduce_scatter", "lang-swing", "reduce_scatter", ["torus:8", "torus:16"], {}),
    ("tree_broadcast", "lang-tree", "broadcast", ["torus:8", "torus:3x5"], {"root": 3}),
    ("hierarchical_allreduce", "lang-hierarchical", "allreduce", ["hammingmesh:2x2:2x2"], {}),
]


@pytest.mark.parametrize("name, registry_name, collective, specs, options", EXAMPLE_CASES,
                         ids=[c[0] for c in EXAMPLE_CASES])
def test_the_examples_compile_verify_simulate_and_export(name, registry_name, collective, specs, options):
    alg = example(name)
    assert alg.name == registry_name and alg.collectives == (collective,)
    for spec in specs:
        topology = parse(spec)
        schedule = alg.build(topology, collective, **options)
        assert schedule.algorithm == registry_name and schedule.meta["language"] == "directcoll.lang"
        assert schedule.collective.value == collective and schedule.nranks == topology.num_compute
        assert verify(schedule).ok
        times = simulate(schedule, topology, SWING_SST).time([1024, 1 << 20])
        assert all(math.isfinite(t) and t > 0 for t in times) and times[1] > times[0]
        xml = export_msccl(schedule)
        assert f'ngpus="{topology.num_compute}"' in xml
        assert verify(import_msccl(xml)).ok  # the XML is the same collective, read back


def _module(name: str):
    """docs/examples/NAME.py imported as a module of its own."""
    spec = importlib.util.spec_from_file_location(f"docs_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_docs_show_exactly_the_example_files():
    text = DOCS.read_text(encoding="utf-8")
    names = sorted(p.stem for p in EXAMPLES.glob("*.py"))
    assert names == sorted([c[0] for c in EXAMPLE_CASES] + ["mistakes", "mscclang_ring"])
    for name in names:
        source = (EXAMPLES / f"{name}.py").read_text(encoding="utf-8")
        assert f"```python\n{source.strip()}\n```" in text, f"docs/language.md does not show docs/examples/{name}.py"


def test_the_docs_show_what_the_mistakes_print():
    done = subprocess.run([sys.executable, str(EXAMPLES / "mistakes.py")], capture_output=True, text=True,
                          timeout=120, check=True)
    assert len(done.stdout.splitlines()) == 3
    assert f"$ python3 docs/examples/mistakes.py\n{done.stdout}```" in DOCS.read_text(encoding="utf-8")


def test_an_mscclang_program_reads_the_same(capsys, monkeypatch):
    compiled = []
    compile_ = Program.compile
    monkeypatch.setattr(Program, "compile", lambda self, **kw: compiled.append(compile_(self, **kw)) or compiled[-1])
    _module("mscclang_ring").allreduce_ring(4, 1)
    xml = capsys.readouterr().out
    assert 'name="allreduce_ring_inplace"' in xml and 'ngpus="4"' in xml
    assert compiled[-1].num_steps == 6 and compiled[-1].num_transfers == 24  # the ring: 2 (N - 1) steps
    _same_steps_and_link_loads(compiled[-1], build("ring", "complete:4", variant="unidirectional"), parse("complete:4"))
    assert verify(import_msccl(xml)).ok
    mistakes = _module("mistakes")
    for make in (mistakes.early, mistakes.twice, mistakes.short):
        with pytest.raises(ProgramError):
            make().compile()


def _same_steps_and_link_loads(ours, theirs, topology):
    """Same number of steps, the same transfers per step (up to order and block identity), and in every step the
    same bytes on every directed link (the step model's routing of a 1 MiB vector)."""
    assert ours.num_steps == theirs.num_steps
    assert pattern_of(ours).equivalent(pattern_of(theirs))
    for t in range(ours.num_steps):
        loads = []
        for s in (ours, theirs):
            sl = slice(s.step_bounds[t], s.step_bounds[t + 1])
            loads.append(link_loads(topology, s.src[sl], s.dst[sl], s.transfer_size[sl] * 2**20))
        np.testing.assert_allclose(loads[0], loads[1], rtol=0, atol=1e-6)


@pytest.mark.parametrize("spec", ["torus:8", "torus:16", "ring:5"])
@pytest.mark.parametrize("variant", [None, "unidirectional"])
def test_the_ring_example_is_the_registrys_ring_allreduce(spec, variant):
    """On 1D networks (on grids the registry's ring follows a snake order, the example ranks 0..N-1)."""
    topology = parse(spec)
    ours = example("ring_allreduce").build(topology, "allreduce", variant=variant)
    theirs = build("ring", topology, "allreduce", variant=variant)
    assert theirs.meta["variant"] == (variant or "bidirectional")
    _same_steps_and_link_loads(ours, theirs, topology)


@pytest.mark.parametrize("spec", ["torus:2", "torus:4", "torus:8", "torus:16", "torus:32"])
def test_the_swing_example_is_the_registrys_swing_reduce_scatter(spec):
    topology = parse(spec)
    ours = example("swing_reduce_scatter").build(topology, "reduce_scatter")
    theirs = build("swing", topology, "reduce_scatter")
    assert theirs.meta["ports"] == 2  # plain and mirrored: the example's two channels
    _same_steps_and_link_loads(ours, theirs, topology)


def test_the_tree_example_at_root_0_is_the_registrys_binomial_broadcast():
    for spec in ("ring:5", "torus:8", "torus:3x5"):
        topology = parse(spec)
        ours, theirs = example("tree_broadcast").build(topology, "broadcast"), build("binomial", topology, "broadcast")
        _same_steps_and_link_loads(ours, theirs, topology)


def test_the_examples_refuse_what_they_do_not_serve():
    with pytest.raises(UnsupportedShapeError, match="2\\^k ranks"):
        example("swing_reduce_scatter").build(parse("torus:6"), "reduce_scatter")
    with pytest.raises(UnsupportedShapeError, match="hammingmesh"):
        example("hierarchical_allreduce").build(parse("torus:4x4"), "allreduce")


# -- the three mistakes of docs/language.md, "Errors" ----------------------------------------------------------------

def _one_line(exc: ProgramError) -> str:
    text = str(exc)
    assert "\n" not in text
    assert exc.step is not None and exc.rank is not None and exc.chunk is not None
    assert text.startswith(f"{exc.program}: step {exc.step}, rank {exc.rank}, chunk {exc.chunk}: ")
    return text


def _ring_reduce_scatter(prog, n):
    _module("mistakes").ring_reduce_scatter(prog, n)  # the docs' helper, so the tests make the docs' mistakes


def test_a_chunk_sent_before_it_is_held_names_step_rank_and_chunk():
    prog = Program("ring:4", "allgather", name="early")
    for step in range(3):  # one step too early: rank r forwards chunk r - step - 1, which it has not received yet
        for r in range(4):
            prog.chunk(r, Buffer.output, (r - step - 1) % 4).copy((r + 1) % 4, step=step)
    with pytest.raises(ProgramError) as info:
        prog.compile()
    text = _one_line(info.value)
    assert (info.value.step, info.value.rank, info.value.chunk) == (0, 0, "output[3]")
    assert "sends it to rank 1 but does not hold it" in text
    late = Program("ring:3", "allgather", name="late")  # right chunk, but sent in the step it arrives
    late.chunk(0, Buffer.output, 0).copy(1, step=0)
    late.chunk(1, Buffer.output, 0).copy(2, step=0)
    with pytest.raises(ProgramError) as info:
        late.compile()
    assert (info.value.step, info.value.rank, info.value.chunk) == (0, 1, "output[0]")
    assert "send it in step 1 or later" in _one_line(info.value)


def test_a_contribution_reduced_twice_names_step_rank_and_chunk():
    prog = Program("ring:4", "allreduce", chunk_factor=4, name="twice")
    _ring_reduce_scatter(prog, 4)
    prog.chunk(1, Buffer.input, 0).reduce(prog.chunk(0, Buffer.input, 0))  # rank 0's share of chunk 0, again
    with pytest.raises(ProgramError) as info:
        prog.compile()
    text = _one_line(info.value)
    assert (info.value.step, info.value.rank, info.value.chunk) == (1, 1, "input[0]")
    assert "counts rank 0's contribution twice" in text


def test_a_rank_left_short_names_step_rank_and_chunk():
    prog = Program("ring:4", "allreduce", chunk_factor=4, name="short")
    _ring_reduce_scatter(prog, 4)
    for step in range(2):  # the allgather stops one step early
        for i in range(4):
            rank = (i + step - 1) % 4
            prog.chunk(rank, Buffer.input, i).copy((rank + 1) % 4)
    with pytest.raises(ProgramError) as info:
        prog.compile()
    text = _one_line(info.value)
    assert (info.value.step, info.value.rank, info.value.chunk) == (1, 0, "input[2]")
    assert "leaves rank 0 short" in text and "lacks the contributions of rank 1" in text
    nothing = Program("ring:2", "allgather", name="nothing")
    nothing.chunk(0, Buffer.input, 0).copy(1)
    with pytest.raises(ProgramError) as info:
        nothing.compile()
    assert (info.value.rank, info.value.chunk) == (0, "output[1]") and "never receives" in _one_line(info.value)


def test_other_mistakes_are_one_line_too():
    clash = Program("ring:3", "allgather", name="clash")
    clash.chunk(0, Buffer.input, 0).copy(2, step=0)
    clash.chunk(0, Buffer.input, 0).copy(2, step=0, ch=1)  # the same chunk again, on another channel
    with pytest.raises(ProgramError, match="two copies write it in one step"):
        clash.compile()
    with pytest.raises(ProgramError, match="moves data and never adds it"):
        Program("ring:2", "allgather").chunk(0, "input", 0).send(1, reduce=True)
    mixed = Program("ring:2", "allreduce", chunk_factor=2)
    mixed.chunk(1, "input", 1).reduce(mixed.chunk(0, "input", 0))
    with pytest.raises(ProgramError, match="different chunks"):
        mixed.compile()
    empty = Program("ring:2", "allreduce")
    empty.chunk(1, "scratch", 0).reduce(empty.chunk(0, "input", 0))
    with pytest.raises(ProgramError, match="holds nothing yet"):
        empty.compile()
    prog = Program("ring:4", "reduce_scatter")
    for bad in [lambda: prog.chunk(4, "input", 0), lambda: prog.chunk(0, "input", 4), lambda: prog.chunk(0, "in", 0),
                lambda: prog.chunk(0, "output", 0, 2), lambda: prog.chunk(0, "input", 0).copy(1, step=-1),
                lambda: chunk(0, "input", 0), lambda: Program("ring:4", "allreduce", root=1),
                lambda: Program("ring:4", "broadcast", root=4), lambda: Program("ring:4", chunk_factor=0)]:
        with pytest.raises(ProgramError) as info:
            bad()
        assert "\n" not in str(info.value)


# -- the language itself -------------------------------------------------------------------------------------------

def test_steps_are_inferred_from_the_data_unless_given():
    prog = Program("ring:4", "broadcast")
    prog.chunk(0, "input", 0).copy(1).copy(2)       # a chain: each copy waits for the one before
    prog.chunk(0, "input", 0).copy(3)               # independent: step 0 as well
    assert [op.step for op in prog.ops] == [0, 1, 0]
    prog.chunk(1, "input", 0).copy(3, step=5)       # given: kept (3 already holds it; a copy overwrites)
    assert prog.compile().num_steps == 6
    swap = Program("ring:2", "allreduce")           # reductions of one step see what the step before left
    for r in (0, 1):
        swap.chunk(r, "input", 0).send(1 - r, reduce=True, step=0)
    assert swap.compile().num_steps == 1


def test_buffers_alias_as_in_mscclang():
    rs = Program("ring:4", "reduce_scatter", chunk_factor=2)
    assert rs.cells(rs.chunk(2, "output", 0, 2)) == rs.cells(rs.chunk(2, "input", 4, 2)) == (4, 5)
    ag = Program("ring:4", "allgather")
    assert ag.same_place(3, ag.chunk(1, "input", 0)).name == "output[1]"
    a2a = Program("ring:3", "alltoall")
    assert a2a.cells(a2a.chunk(0, "input", 2)) == a2a.cells(a2a.chunk(2, "output", 0))
    with pytest.raises(ProgramError, match="no chunk at the place"):
        a2a.chunk(0, "input", 2).copy(1)  # a relay needs a place of its own on rank 1: a scratch chunk


def test_an_alltoall_through_scratch_relays_and_a_local_copy():
    with Program("ring:3", "alltoall", name="relay") as prog:
        for i in range(3):
            for j in range(3):
                if i == j:
                    chunk(i, "input", j).copy(i, "output", i)      # onto itself: nothing to do, as in MSCCLang
                elif (j - i) % 3 == 1:
                    chunk(i, "input", j).copy(j, "output", i)
                else:                                              # two hops, through the scratch of i + 1
                    mid = (i + 1) % 3
                    chunk(i, "input", j).copy(mid, "scratch", 0).copy(j, "output", i)
        assert Check()
    schedule = prog.compile()
    assert schedule.nscratch == 1 and schedule.num_steps == 2 and verify(schedule).ok
    assert verify(import_msccl(prog.xml())).ok
    local = Program("ring:2", "allreduce", chunk_factor=2)
    local.chunk(0, "input", 0).copy(0, "scratch", 0)               # a local copy: a displaced piece
    local.chunk(1, "input", 0).send(0, "scratch", 0, reduce=True)
    local.chunk(0, "scratch", 0).copy(0, "input", 0)
    local.chunk(0, "input", 0).copy(1)
    for i in (1,):
        local.chunk(0, "input", i).reduce(local.chunk(1, "input", i), step=0)
        local.chunk(1, "input", i).reduce(local.chunk(0, "input", i), step=0)
    s = local.compile()
    assert verify(s).ok and s.piece_shift is not None and s.is_local.any()


def test_operations_of_a_step_merge_into_one_transfer_per_channel():
    prog = Program("ring:2", "allgather", chunk_factor=4)
    for i in range(4):
        prog.chunk(0, "input", i).copy(1, ch=i % 2)
        prog.chunk(1, "input", i).copy(0, ch=0)
    s = prog.compile()
    assert s.num_steps == 1 and s.num_transfers == 3  # rank 0 on channels 0 and 1, rank 1 on channel 0
    assert sorted(np.diff(s.piece_offsets).tolist()) == [1, 2, 2]  # runs of consecutive chunks are one piece


def test_split_group_and_the_mscclang_functions(capsys):
    with Program("ring:2", "allgather", chunk_factor=2, name="split"):
        first, second = chunk(0, "input", 0, 2).split(2)
        first.group(second).copy(1)
        chunk(1, "input", 0, 2).copy(0)
        XML()
        assert Check()
    out = capsys.readouterr().out
    assert 'name="split"' in out and 'coll="allgather"' in out


def test_the_algorithm_decorator_passes_what_the_function_takes():
    @algorithm("swap-test", collectives=["allreduce", "reduce_scatter"], variants=["a", "b"])
    def swap(topology, collective, *, variant):
        """Two ranks, every chunk exchanged and added in one step."""
        prog = Program(topology, collective, chunk_factor=1 if variant == "a" else 2)
        size = prog.sizes[Buffer.input]
        for r in (0, 1):
            prog.chunk(r, "input", 0, size).send(1 - r, reduce=True, step=0)
        return prog

    assert swap.summary == "Two ranks, every chunk exchanged and added in one step."
    s = swap.build(parse("ring:2"), "allreduce")
    assert (s.meta["variant"], s.nblocks) == ("a", 1)
    assert swap.build(parse("ring:2"), "allreduce", variant="b").nblocks == 2
    with pytest.raises(UnsupportedShapeError, match="takes no ports"):
        swap.build(parse("ring:2"), "allreduce", ports=2)
    assert verify(swap.build(parse("ring:2"), "reduce_scatter")).ok
    with pytest.raises(ScheduleError, match="must take `collective`"):
        algorithm("two", collectives=["allreduce", "allgather"])(lambda topology: None)

    @algorithm("wrong-test")
    def wrong(topology):
        return Program(topology, "allgather")

    with pytest.raises(ScheduleError, match="asked for allreduce"):
        wrong.build(parse("ring:2"), "allreduce")
