"""Algorithms from outside the package (docs/language.md, "Plugins"): a plugin package installed into a throwaway
environment and a ``file:`` algorithm appear in ``compare`` beside the built-ins, and in ``algorithms``,
``schedule`` and ``tune``; under ``directcoll run`` and libdirectcoll in the mpi/native tiers. A plugin that does
not load is one warning line, never a traceback; a name that is taken is refused."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import importlib.util
import json
import os
import shutil
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from directcoll import plugins, registry
from directcoll.errors import DirectcollError, UnsupportedShapeError
from directcoll.lang import Program, algorithm

ROOT = Path(__file__).resolve().parents[1]
RING_EXAMPLE = ROOT / "docs" / "examples" / "ring_allreduce.py"

#: a plugin module: a ring allreduce written in the language, as a plugin package would ship it
PLUGIN = '''
from directcoll.lang import Program, algorithm


@algorithm("myalg", collectives=["allreduce"], summary="a ring allreduce from a plugin package")
def myalg(topology):
    n = topology.num_compute
    prog = Program(topology, "allreduce", chunk_factor=n, name="myalg")
    for step in range(n - 1):
        for i in range(n):
            rank = (i + step) % n
            prog.chunk((rank + 1) % n, "input", i).reduce(prog.chunk(rank, "input", i))
    for step in range(n - 1):
        for i in range(n):
            rank = (i + step - 1) % n
            prog.chunk(rank, "input", i).copy((rank + 1) % n)
    return prog
'''

#: a PEP 517 backend of a few lines, so that the package builds without setuptools' wheel support or a network:
#: a wheel of src/ whose entry points are the [project.entry-points] tables of pyproject.toml
BACKEND = '''
import base64, hashlib, tomllib, zipfile
from pathlib import Path


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = tomllib.loads(Path("pyproject.toml").read_text())["project"]
    dist, version = project["name"].replace("-", "_"), project["version"]
    info = f"{dist}-{version}.dist-info"
    files = {str(f.relative_to("src")): f.read_bytes() for f in Path("src").rglob("*.py")}
    files[f"{info}/METADATA"] = f"Metadata-Version: 2.1\\nName: {project['name']}\\nVersion: {version}\\n".encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
    files[f"{info}/entry_points.txt"] = "".join(
        f"[{group}]\\n" + "".join(f"{k} = {v}\\n" for k, v in eps.items())
        for group, eps in project.get("entry-points", {}).items()).encode()
    digest = lambda d: base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode()
    record = [f"{n},sha256={digest(d)},{len(d)}" for n, d in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\\n".join(record) + "\\n").encode()
    name = f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(Path(wheel_directory) / name, "w") as z:
        for n, d in files.items():
            z.writestr(n, d)
    return name
'''

PYPROJECT = '''
[build-system]
requires = []
build-backend = "backend"
backend-path = ["."]

[project]
name = "throwaway-plugin"
version = "0.1"

[project.entry-points."directcoll.algorithms"]
myalg = "throwaway_plugin:myalg"
'''


@pytest.fixture
def registry_as_built():
    """Leave this process's registry as it was: names, origins, loaded files and loaders."""
    saved = (dict(registry.ALGORITHMS), dict(plugins.ORIGINS), dict(plugins.FILES), list(registry.LOADERS),
             dict(plugins._STATE))
    yield
    for table, old in zip((registry.ALGORITHMS, plugins.ORIGINS, plugins.FILES, plugins._STATE),
                          (saved[0], saved[1], saved[2], saved[4]), strict=True):
        table.clear()
        table.update(old)
    registry.LOADERS[:] = saved[3]


def _cli(*args, env_path: Path | None = None, python: str = sys.executable, cwd: Path = ROOT):
    env = dict(os.environ)
    if env_path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(env_path), env.get("PYTHONPATH", "")]))
    return subprocess.run([python, "-m", "directcoll", *args], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=300)


def _fake_site(tmp_path: Path, entry_points: str) -> Path:
    """A directory that importlib.metadata reads as an installed distribution ``myplug`` with ``entry_points``."""
    site = tmp_path / "site"
    (site / "myplug").mkdir(parents=True)
    (site / "myplug" / "__init__.py").write_text(PLUGIN + textwrap.dedent('''
        import dataclasses
        from directcoll.registry import ALGORITHMS
        ring = dataclasses.replace(ALGORITHMS["ring"], summary="a ring of my own")
        def nothing():
            return 42
        def raises():
            raise RuntimeError("the plugin's own bug")
        '''))
    info = site / "myplug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: myplug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[{plugins.GROUP}]\n{entry_points}")
    return site


def _rows(stdout: str) -> list[str]:
    return [row["algorithm"] for row in json.loads(stdout)["results"]]


# -- installed plugins -----------------------------------------------------------------------------------------------

def test_a_plugin_package_installed_in_a_fresh_environment_is_compared(tmp_path):
    """The real thing: a package whose pyproject.toml declares the entry point, pip-installed into a virtual
    environment that sees this one's packages (directcoll, pip: a .pth file adds this environment's site
    directories, whether this one is a virtual environment or not), then `python -m directcoll compare` there."""
    if importlib.util.find_spec("pip") is None:
        pytest.skip("pip is not installed here: it installs the package into the throwaway environment")
    pkg = tmp_path / "pkg"
    (pkg / "src" / "throwaway_plugin").mkdir(parents=True)
    (pkg / "src" / "throwaway_plugin" / "__init__.py").write_text(PLUGIN)
    (pkg / "backend.py").write_text(BACKEND)
    (pkg / "pyproject.toml").write_text(PYPROJECT)
    env = tmp_path / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True, timeout=120)
    python = str(env / ("Scripts" if os.name == "nt" else "bin") / "python")
    own = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                         capture_output=True, text=True, check=True).stdout.strip()
    outer = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    Path(own, "outer-environment.pth").write_text("".join(f"import site; site.addsitedir({d!r})\n" for d in outer))
    done = subprocess.run([python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "-q",
                           str(pkg)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    run = _cli("compare", "ring:8", "--algorithms", "ring,myalg", "--sizes", "1KiB", "--json", python=python)
    assert run.returncode == 0, run.stderr[-3000:]
    assert _rows(run.stdout) == ["ring", "myalg"]
    here = _cli("compare", "ring:8", "--algorithms", "myalg", "--sizes", "1KiB", "--json")  # not installed here
    assert here.returncode == 2 and "unknown algorithm 'myalg'" in here.stderr


def test_plugins_appear_in_algorithms_schedule_and_compare_and_broken_ones_warn(tmp_path):
    site = _fake_site(tmp_path, "myalg = myplug:myalg\nbroken = myplug_missing:thing\nclash = myplug:ring\n"
                                "nothing = myplug:nothing\nraises = myplug:raises\n")
    listed = _cli("algorithms", "--json", env_path=site)
    assert listed.returncode == 0, listed.stderr
    mine = [e for e in json.loads(listed.stdout) if e["name"] == "myalg"]
    assert mine and mine[0]["origin"] == "plugin 'myalg' (myplug:myalg, from myplug 0.1)"
    warnings = listed.stderr.splitlines()
    assert "Traceback" not in listed.stderr and len(warnings) == 4, listed.stderr
    assert all(line.startswith("directcoll: warning: ") and line.endswith("not loaded") or "not loaded:" in line
               for line in warnings)
    assert any("'broken'" in w and "ModuleNotFoundError" in w for w in warnings)
    assert any("taken by ring (built-in)" in w for w in warnings)
    assert any("'raises'" in w and "RuntimeError: the plugin's own bug" in w for w in warnings)
    out = tmp_path / "myalg.json"
    made = _cli("schedule", "myalg", "ring:4", "-o", str(out), env_path=site)
    assert made.returncode == 0 and "myalg allreduce on ring:4" in made.stdout, made.stderr
    compared = _cli("compare", "torus:8", "--algorithms", "ring,myalg", "--sizes", "1KiB,1MiB", "--json",
                    env_path=site)
    assert compared.returncode == 0, compared.stderr
    assert _rows(compared.stdout) == ["ring", "ring", "myalg", "myalg"]
    assert "Traceback" not in compared.stderr


def test_load_installed_registers_and_warns_in_one_line(registry_as_built, capsys):
    ep = importlib.metadata.EntryPoint
    good = ep("ring-example", f"{__name__}:EXAMPLE_ALGORITHM", plugins.GROUP)
    names = plugins.load_installed([good, ep("bad", "no_such_module:x", plugins.GROUP),
                                    ep("taken", f"{__name__}:TAKEN", plugins.GROUP)])
    assert names == ["test-example"]
    assert registry.get("test-example") is EXAMPLE_ALGORITHM
    assert plugins.origin("test-example").startswith("plugin 'ring-example'")
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and all(line.startswith("directcoll: warning: ") for line in err)
    assert "'bad'" in err[0] and "No module named 'no_such_module'" in err[0]
    assert "taken" in err[1] and "(built-in)" in err[1]


def test_the_registry_loads_plugins_on_the_first_name_it_does_not_know(registry_as_built, monkeypatch):
    calls = []

    def loader():
        calls.append(1)
        plugins.register(EXAMPLE_ALGORITHM)

    registry.LOADERS[:] = [loader]
    assert registry.get("test-example") is EXAMPLE_ALGORITHM and registry.get("test-example") and calls == [1]
    with pytest.raises(UnsupportedShapeError, match="unknown algorithm 'nope'.*test-example"):
        registry.get("nope")
    assert registry.build("test-example", "ring:3").algorithm == "test-example"


def test_register_refuses_bad_and_taken_names(registry_as_built):
    plugins.register(EXAMPLE_ALGORITHM)
    plugins.register(EXAMPLE_ALGORITHM)  # the same entry again: nothing to do
    with pytest.raises(UnsupportedShapeError, match="taken by test-example"):
        plugins.register(algorithm("other", aliases=["test-example"])(lambda topology: Program(topology)))
    for bad in ("My_Alg", "a,b", "ring:2", "-x", ""):
        with pytest.raises(UnsupportedShapeError, match="lowercase"):
            plugins.register(algorithm(bad)(lambda topology: Program(topology)))
    with pytest.raises(UnsupportedShapeError, match="expected a directcoll.registry.Algorithm"):
        plugins.register("ring")
    with pytest.raises(UnsupportedShapeError, match="holds no algorithm"):
        plugins.algorithms_of(lambda: 42, "plugin 'x'")
    assert [a.name for a in plugins.algorithms_of({"x": EXAMPLE_ALGORITHM}, "a dict")] == ["test-example"]


# -- single files ---------------------------------------------------------------------------------------------------

def test_a_file_algorithm_is_compared_beside_the_builtins_and_scheduled(tmp_path):
    compared = _cli("compare", "torus:8", "--algorithms", f"ring,file:{RING_EXAMPLE}", "--sizes", "1KiB,1MiB",
                    "--json")
    assert compared.returncode == 0, compared.stderr
    assert _rows(compared.stdout) == ["ring"] * 2 + ["lang-ring"] * 4  # its two variants, two sizes each
    results = json.loads(compared.stdout)["results"]
    times = {(r["algorithm"], r["variant"], r["size"]): r["time_s"] for r in results}
    assert all(times[("ring", "bidirectional", s)] == pytest.approx(times[("lang-ring", "bidirectional", s)])
               for s in (1024, 1 << 20))
    out = tmp_path / "lang-ring.json"
    made = _cli("schedule", "file:docs/examples/ring_allreduce.py", "torus:8", "-o", str(out), "--json")
    assert made.returncode == 0, made.stderr
    assert json.loads(made.stdout)["algorithm"] == "lang-ring"
    table = tmp_path / "tuning.json"
    tuned = _cli("tune", "ring:4", "--algorithms", f"file:{RING_EXAMPLE}", "--sizes", "8B,1MiB", "-o", str(table),
                 "--json")
    assert tuned.returncode == 0, tuned.stderr
    assert {e["algorithm"] for e in json.loads(tuned.stdout)["entries"]} == {"lang-ring"}


def test_file_errors_are_one_line(tmp_path, registry_as_built):
    broken = tmp_path / "broken.py"
    broken.write_text("x = 1\ndef f(:\n")
    raising = tmp_path / "raising.py"
    raising.write_text("import math\n\nraise ValueError('no good')\n")
    empty = tmp_path / "empty.py"
    empty.write_text("X = 1\n")
    for path, match in ((tmp_path / "missing.py", "no such file"), (broken, r"SyntaxError.*\(line 2\)"),
                        (raising, r"ValueError: no good \(line 3\)"), (empty, "holds no algorithm")):
        with pytest.raises(DirectcollError, match=match) as info:
            plugins.expand([f"file:{path}"])
        assert "\n" not in str(info.value)
    run = _cli("compare", "ring:4", "--algorithms", f"file:{raising}", "--sizes", "1KiB")
    assert run.returncode == 2 and run.stderr.count("\n") == 1 and "no good (line 3)" in run.stderr


def test_expand_loads_a_file_once_and_keeps_other_items(registry_as_built):
    assert plugins.expand(["ring", f"file:{RING_EXAMPLE}", "swing:latency"]) == ["ring", "lang-ring", "swing:latency"]
    assert plugins.expand([f"file:{RING_EXAMPLE}"]) == ["lang-ring"]
    assert plugins.expand([f"file:{RING_EXAMPLE}"], absolute=True) == [f"file:{RING_EXAMPLE.resolve()}"]
    assert plugins.origin("lang-ring") == f"file {RING_EXAMPLE.resolve()}"
    assert plugins.one_algorithm(f"file:{RING_EXAMPLE}") == "lang-ring"


# -- the runtimes ---------------------------------------------------------------------------------------------------

@pytest.mark.mpi
@pytest.mark.native
def test_plugin_and_file_algorithms_run_on_mpi_ranks_and_in_libdirectcoll(tmp_path):
    """`directcoll run` builds them on every rank and runs them in libdirectcoll (the C engine) and in Python;
    `tune --algorithms` compiles them into program files that an unmodified MPI program runs under LD_PRELOAD."""
    if shutil.which("mpiexec") is None:
        pytest.skip("no mpiexec")
    site = _fake_site(tmp_path, "myalg = myplug:myalg\n")
    for engine in ("c", "python"):
        run = _cli("run", "ring:4", "--algorithms", f"myalg,file:{RING_EXAMPLE}", "--sizes", "1KiB,64KiB",
                   "--engine", engine, "--json", env_path=site)
        assert run.returncode == 0, run.stderr[-3000:]
        rows = json.loads(run.stdout)["results"]
        assert {r["algorithm"] for r in rows} == {"myalg", "lang-ring"} and all(r["correct"] for r in rows)
        assert {r["engine"] for r in rows} == {engine}
    from test_native import native_workdir

    from directcoll.runtime import native

    workdir = native_workdir(tmp_path / "native", native.find_mpicc())
    root, lib, checker = next(workdir)
    try:
        table = tmp_path / "tuned" / "tuning.json"
        table.parent.mkdir()
        tuned = _cli("tune", "ring:4", "--algorithms", f"myalg,file:{RING_EXAMPLE}", "--sizes", "8B,1MiB", "-o",
                     str(table), env_path=site)
        assert tuned.returncode == 0, tuned.stderr
        programs = {e["algorithm"] for e in json.loads(table.read_text())["entries"]}
        assert programs <= {"myalg", "lang-ring"} and programs
        env = {**os.environ, "LD_PRELOAD": str(lib), "DIRECTCOLL_DEBUG": "1", "DIRECTCOLL_SCHEDULES": str(table)}
        done = subprocess.run([shutil.which("mpiexec"), "-n", "4", str(checker), "allreduce", "quick", "7", "30000"],
                              capture_output=True, text=True, env=env, timeout=240)
        assert done.returncode == 0 and "0 failures" in done.stdout, done.stderr[-3000:]
        served = [line for line in done.stderr.splitlines() if ": served by " in line]
        assert served and all(("myalg" in line or "lang-ring" in line) for line in served)
        assert "fell through" not in done.stderr
    finally:
        workdir.close()


@algorithm("test-example", collectives=["allreduce"], summary="three ranks, all to all, added in one step")
def EXAMPLE_ALGORITHM(topology):  # noqa: N802 -- an entry point's target, named as such
    prog = Program(topology, "allreduce", name="test-example")
    n = topology.num_compute
    for r in range(n):
        for q in range(n):
            if q != r:
                prog.chunk(r, "input", 0).send(q, reduce=True, step=0)
    return prog


#: an entry point's target whose name belongs to a built-in algorithm
TAKEN = dataclasses.replace(registry.ALGORITHMS["ring"], summary="a ring of my own")
