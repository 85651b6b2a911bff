"""The public API (docs/api.md): ``import directcoll as dc`` gives the functions and types of :mod:`directcoll.api`,
loaded on first use; the subpackages that share an API function's name are callable; the API page is the one
docs/gen_api.py writes from the docstrings."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

import directcoll as dc

ROOT = Path(__file__).resolve().parents[1]


def _gen_api():
    spec = importlib.util.spec_from_file_location("gen_api", ROOT / "docs" / "gen_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_api_page_is_generated_from_the_docstrings():
    page = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    assert page == _gen_api().render(), "docs/api.md is not current: run python3 docs/gen_api.py"


def test_import_directcoll_loads_nothing_of_the_api():
    code = ("import sys, directcoll; loaded = [m for m in sys.modules if m.startswith('directcoll.')]; "
            "print(sorted(loaded))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "['directcoll.errors']"


def test_every_api_name_resolves_and_is_in_all():
    from directcoll import api

    assert set(api.__all__) == set(dc.API) <= set(dc.__all__)
    for name in dc.API:
        value = getattr(dc, name)
        assert callable(value), name
    assert set(dc.API) <= set(dir(dc))


@pytest.mark.parametrize("name", ["topology", "verify", "simulate", "algorithms"])
def test_subpackages_of_an_api_name_are_callable_whatever_was_imported_first(name):
    code = (f"import directcoll.{name}, directcoll as dc, types; pkg = dc.{name}; "
            f"assert isinstance(pkg, types.ModuleType) and pkg.__name__ == 'directcoll.{name}'; "
            f"assert callable(pkg); import directcoll.api as api; assert api.{name}.__doc__")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_the_quick_tour_works():
    t = dc.topology("torus:4x4")
    s = dc.build("swing", t)
    assert isinstance(t, dc.Topology) and isinstance(s, dc.Schedule)
    assert dc.verify(s).ok
    assert dc.simulate(s).time(2**20) == dc.simulate(s, t, params="swing-sst").time(2**20) > 0
    assert dc.pattern("swing", t).equivalent(dc.simulate(s, t).pattern)
    assert "swing" in dc.algorithms("allreduce") and "mcf" not in dc.algorithms("allreduce")


def test_compare_takes_sizes_with_units_and_prints_a_table():
    c = dc.compare(dc.topology("torus:8x8"), sizes=["1MiB"])
    assert isinstance(c, dc.Comparison) and c.sizes.tolist() == [2.0**20]
    text = str(c)
    assert text.splitlines()[0].startswith("allreduce on torus:8x8") and "1MiB" in text


def test_api_errors_name_the_input():
    with pytest.raises(dc.SpecError, match="nosuch"):
        dc.topology("nosuch:4")
    with pytest.raises(dc.UnsupportedShapeError, match="unknown algorithm 'nosuch'"):
        dc.build("nosuch", "ring:4")
    with pytest.raises(dc.DirectcollError, match="give the topology"):
        dc.simulate(_schedule_without_topology())
    with pytest.raises(dc.DirectcollError, match="size"):
        dc.compare("ring:4", sizes=["lots"])


def _schedule_without_topology():
    from directcoll.algorithms.ring import ring_reduce_scatter

    return ring_reduce_scatter(range(4))
