"""Shared test fixtures: ``timings`` records measured durations that the run prints at its end.

Speed targets are benchmarks, not assertions: a test that measures something calls
``timings(label, seconds)`` and the figure appears in the terminal summary of every run (CI included).
"""

import os

import pytest

_TIMINGS: list[tuple[str, float]] = []


@pytest.fixture
def timings():
    def record(label: str, seconds: float) -> None:
        _TIMINGS.append((label, seconds))
    return record


def pytest_sessionfinish(session):
    if hasattr(session.config, "workeroutput"):  # a pytest-xdist worker: hand the figures to the controller
        session.config.workeroutput["timings"] = list(_TIMINGS)


def pytest_configure(config):
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_CollectTimings())


class _CollectTimings:
    """pytest-xdist's controller gathers each worker's timings when the worker ends."""

    def pytest_testnodedown(self, node, error):
        _TIMINGS.extend(getattr(node, "workeroutput", {}).get("timings", []))


def pytest_terminal_summary(terminalreporter):
    if _TIMINGS:
        terminalreporter.section("measured times (benchmarks, not assertions)")
        for label, seconds in _TIMINGS:
            terminalreporter.write_line(f"{label}: {seconds:.2f} s")


# Scripts that mpiexec runs (they read sys.argv when imported): not test modules, nor doctest modules.
collect_ignore_glob = ["mpi_scripts/*"]

# CI runs property tests on hypothesis's fixed example sequence: a submission lands or fails on what the tests
# check, not on the draw (locally the draws stay random, to keep finding new cases).
if os.environ.get("CI"):
    from hypothesis import settings

    settings.register_profile("ci", derandomize=True, database=None)
    settings.load_profile("ci")
