"""Sign of life: work over two seconds says so on standard error, never on standard output."""

import time

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
