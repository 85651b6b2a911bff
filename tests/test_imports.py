"""Every entry point imports on its own in a fresh interpreter (no import cycle hidden by test order)."""

import subprocess
import sys

import pytest

ENTRY_POINTS = ["directcoll", "directcoll.synthesis", "directcoll.synthesis.bfb", "directcoll.synthesis.mcf.link",
                "directcoll.synthesis.expansions", "directcoll.synthesis.finder", "directcoll.algorithms",
                "directcoll.registry", "directcoll.cli.main", "directcoll.runtime.mpi",
                "directcoll.verify", "directcoll.reports.compare", "directcoll.lang", "directcoll.lang.execute",
                "directcoll.plugins", "directcoll.api", "directcoll.algorithms.swing",
                "directcoll.algorithms.generalized", "directcoll.schedule.phases"]


@pytest.mark.parametrize("module", ENTRY_POINTS)
def test_imports_alone(module):
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
