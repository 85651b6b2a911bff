"""`directcoll run` and `tune --measure` warn when the ranks outnumber the cores, and mark the ratios they print."""

from __future__ import annotations

import json
import os

import pytest

from directcoll.cli.main import main
from directcoll.cli.output import oversubscription

pytestmark = pytest.mark.mpi


def test_the_note_names_ranks_and_cores(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    assert oversubscription(2) is None
    note = oversubscription(8)
    assert note.startswith("8 ranks on 2 cores are oversubscribed")


def test_run_warns_and_marks_its_ratios(monkeypatch, capsys):
    pytest.importorskip("mpi4py")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})  # 2 ranks on one core
    assert main(["run", "ring:2", "--engine", "python", "--algorithms", "ring", "--sizes", "1KiB",
                 "--repeat", "1"]) == 0
    out, err = capsys.readouterr()
    assert "warning: 2 ranks on 1 core are oversubscribed" in err
    assert "x*" in out and "* ours/native: 2 ranks on 1 core" in out
    assert main(["run", "ring:2", "--engine", "python", "--algorithms", "ring", "--sizes", "1KiB",
                 "--repeat", "1", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["oversubscribed"].startswith("2 ranks on 1 core")
