"""Tables read well anywhere: piped, or at 60 columns, no cell of ``directcoll compare`` is wrapped or truncated,
and its letters are unambiguous (issue #18, "Tables that read well anywhere")."""

import os
import re
import subprocess
import sys

import pytest

SIZE = re.compile(r"^\s*\d+(\.\d+)?[KMG]?i?B\s")


def _compare(columns: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns:
        env["COLUMNS"] = columns
    out = subprocess.run([sys.executable, "-m", "directcoll.cli.main", "compare", "torus:8x8"], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("columns", [None, "60"])
def test_a_piped_compare_table_has_every_row_whole(columns):
    text = _compare(columns)
    assert "…" not in text
    rows = [line for line in text.splitlines() if SIZE.match(line)]
    assert len(rows) == 25  # 32B .. 512MiB
    header = next(line for line in text.splitlines() if line.strip().startswith("size"))
    columns_named = len(re.findall(r"\(\w\)", header))          # one per family: "swing (S)", ...
    for row in rows:
        # size, one goodput + variant mark per family, best, time + unit, gain + letter
        assert len(row.split()) == 1 + 2 * columns_named + 1 + 2 + 2, row
    # every line of the table is whole: no continuation line holds only a variant mark
    assert not [line for line in text.splitlines() if re.fullmatch(r"\s*(lat|bw|ham|bi|uni)(\s+\w+)*\s*", line)]


def test_letters_of_families_and_variants_are_distinct():
    text = _compare(None)
    legend = text[text.index("Each cell"):]
    families = dict(re.findall(r"\b([A-Z]) ([a-z][a-z-]+)", legend.split("Families:")[1].split(".")[0]))
    assert len(families) == len(set(families.values())) >= 4
    marks = re.findall(r"\b(lat|bw|ham|bi|uni|ts)\b", text.split("Each cell")[0])
    assert marks and not set(marks) & set(families)   # variant marks are never a family's letter
