"""Fuzzed input through the library and the CLI: every case is accepted or refused with the project's own error,
never another exception, a cast, a hang or more memory than the budget (cases: tests/fuzzing.py; the 10,000-case
run is benchmarks/fuzz.py, its counts in docs/benchmarks.md)."""


import pytest
from fuzzing import deadline, judge, make_case, make_context
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from directcoll.resources import memory_budget_override

#: seconds a single case may take before it counts as a hang
CASE_SECONDS = 20
EXAMPLES = {"spec": 150, "json": 80, "npz": 80, "msccl": 80, "network": 80, "cli": 60}


@pytest.fixture(scope="module")
def context(tmp_path_factory):
    return make_context(tmp_path_factory.mktemp("fuzz"))


def _check(kind, r, context):
    case = make_case(kind, r, context)
    try:
        with deadline(CASE_SECONDS), memory_budget_override("256MiB"):
            outcome = judge(kind, case, context)
    except TimeoutError:
        outcome = "hang"
    assert outcome in ("ok", "refused"), f"{kind} case {case!r}: {outcome}"


def _fuzz(kind):
    @settings(max_examples=EXAMPLES[kind], deadline=None, database=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
    @given(r=st.randoms(use_true_random=False))
    def test(context, r):
        _check(kind, r, context)

    return test


test_fuzz_spec_strings = _fuzz("spec")
test_fuzz_schedule_json = _fuzz("json")
test_fuzz_schedule_npz = _fuzz("npz")
test_fuzz_msccl_xml = _fuzz("msccl")
test_fuzz_network_files = _fuzz("network")
test_fuzz_cli_arguments = pytest.mark.slow(_fuzz("cli"))  # a subprocess per case
