"""Tables fit: piped (80 columns) or at $COLUMNS, no line of ``directcoll compare`` is wider than the terminal and
no cell is cut; where the table fits, every row is whole on one line; ``--wide`` prints it as wide as it needs;
and its letters are unambiguous."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SIZE = re.compile(r"^\s*\d+(\.\d+)?[KMG]?i?B\s")


def _compare(columns: str | None, *extra: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns:
        env["COLUMNS"] = columns
    out = subprocess.run([sys.executable, "-m", "directcoll.cli.main", "compare", "torus:8x8", *extra], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("columns", [None, "100"])
def test_a_piped_compare_table_fits_and_has_every_row_whole(columns):
    text = _compare(columns)
    width = int(columns or 80)
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= width
    rows = [line for line in text.splitlines() if SIZE.match(line)]
    assert len(rows) == 25  # 32B .. 512MiB
    for row in rows:  # size, a goodput per family (five families), the winner, then time and gain or the gain
        numbers = re.findall(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])", row.split(maxsplit=1)[1])
        assert len(numbers) >= 5 and re.search(r"[+-]\d+% [A-Z]|tie|0% [A-Z]", row), row


def test_a_narrow_terminal_folds_cells_but_cuts_none():
    text = _compare("60")
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 60
    assert len([line for line in text.splitlines() if SIZE.match(line)]) == 25


def test_wide_prints_the_whole_table():
    text = _compare("60", "--wide")
    header = next(line for line in text.splitlines() if line.strip().startswith("size"))
    assert "swing (S)" in header and "bfb (F)" in header and len(header) > 60
    rows = [line for line in text.splitlines() if SIZE.match(line)]
    assert len(rows) == 25 and all(re.search(r"\b(lat|bw|ham)\b", row) for row in rows)


def test_letters_of_families_and_variants_are_distinct():
    text = _compare(None, "--wide")
    legend = text[text.index("Each cell"):]
    families = dict(re.findall(r"\b([A-Z]) ([a-z][a-z-]+)", legend.split("Families:")[1].split(".")[0]))
    assert len(families) == len(set(families.values())) >= 4
    marks = re.findall(r"\b(lat|bw|ham|bi|uni|ts)\b", text.split("Each cell")[0])
    assert marks and not set(marks) & set(families)   # variant marks are never a family's letter


@pytest.mark.parametrize("argv", [["topology", "families"], ["presets"], ["help", "specs"], ["algorithms"],
                                  ["topology", "describe", "torus:4x4"], ["cost", "--sizes", "1MiB"]])
def test_listings_fit_80_columns(argv):
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    out = subprocess.run([sys.executable, "-m", "directcoll.cli.main", *argv], env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    # a line may pass 80 only when it is one word that cannot be broken (a spec form, a URL)
    wide = [line for line in out.stdout.splitlines() if len(line) > 80 and len(line.split()) > 1]
    assert not wide, wide


def test_describe_and_cost_show_units_not_raw_numbers():
    out = subprocess.run([sys.executable, "-m", "directcoll.cli.main", "cost", "--sizes", "1MiB"],
                         capture_output=True, text=True, timeout=120).stdout
    assert "400 Gb/s" in out and "1.97MiB" in out and "Gb/s" in out and "GB/s" not in out
    assert "e+" not in out and "None" not in out and "bytes_per_rank" not in out and "t_l_steps" not in out
    out = subprocess.run([sys.executable, "-m", "directcoll.cli.main", "topology", "describe", "torus:4x4"],
                         capture_output=True, text=True, timeout=120).stdout
    assert "link bandwidth" in out and "400 Gb/s" in out and "4 x 4" in out and "e+" not in out


def test_every_table_fits_the_terminal_unless_wide(tmp_path):
    # calibrate's table of residuals is wide: at 60 columns its cells fold (nothing cut), --wide keeps its lines
    env = {**{k: v for k, v in os.environ.items() if k != "COLUMNS"}, "COLUMNS": "60"}
    data = Path(__file__).parent / "data" / "osu"
    osu = sorted(data.glob("*.txt"))[0]
    argv = [sys.executable, "-m", "directcoll.cli.main", "calibrate", str(osu), "ring:4", "--ranks", "4",
            "--algorithm", "ring"]
    narrow = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert narrow.returncode == 0, narrow.stderr
    assert "…" not in narrow.stdout and max(map(len, narrow.stdout.splitlines())) <= 60
    wide = subprocess.run([*argv, "--wide"], env=env, capture_output=True, text=True, timeout=300)
    assert wide.returncode == 0 and "…" not in wide.stdout
