"""Sign of life: work over two seconds says so on standard error, never on standard output."""

import time

import pytest

from directcoll.cli.output import Heartbeat


def test_a_slow_block_prints_its_label_and_detail_on_stderr(capsys):
    with Heartbeat("solving something", after=0.05, every=0.05) as beat:
        beat("iteration 3/10, gap 1.00%")
        time.sleep(0.3)
    out, err = capsys.readouterr()
    assert out == ""
    assert "directcoll: solving something ... 0 s (iteration 3/10, gap 1.00%)" in err


def test_a_quick_block_prints_nothing(capsys):
    with Heartbeat("quick", after=5):
        pass
    assert capsys.readouterr() == ("", "")


@pytest.mark.slow
def test_a_piped_compare_prints_progress_lines_with_an_estimate():
    # stderr is a pipe here: no bar, but a line after two seconds and every ten, naming how far and the time left
    import re
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "directcoll", "compare", "torus:128x128"], capture_output=True,
                         text=True, timeout=600)  # 7 contenders, several seconds
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stderr.splitlines() if line.startswith("directcoll: simulating ...")]
    assert lines and all("\r" not in line for line in lines)
    assert all("/7 " in line for line in lines), out.stderr
    # once a contender is done, the line estimates the time left
    assert all("s left" in line for line in lines if not re.search(r"\(0/7 ", line)), out.stderr
    assert "directcoll:" not in out.stdout
