"""What the figure scripts of benchmarks/paper/ share: where their outputs go and the claim table they write.

Every script reproduces one figure (or a group) of a seed paper: it computes the figure's data with directcoll,
draws it to ``docs/img/paper/<figure>.png`` and writes ``benchmarks/paper/results/<figure>.md``, a table of the
figure's claims: what the paper states, what we measured with the command that ran, and whether the claim holds.
``run_all.py`` runs every script and gathers the tables into ``docs/paper.md``.
"""

from __future__ import annotations

import datetime
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results"
IMAGES = ROOT / "docs" / "img" / "paper"


@dataclass(frozen=True)
class Claim:
    """One claim of a figure: the paper's value against ours.

    ``holds`` is True or False where the two can be compared, None where they cannot (say why in ``ours``).
    """

    claim: str
    paper: str
    ours: str
    holds: bool | None


def image_path(figure: str) -> Path:
    """Where figure ``figure`` (for example ``swing_fig6``) is drawn: docs/img/paper/<figure>.png."""
    IMAGES.mkdir(parents=True, exist_ok=True)
    return IMAGES / f"{figure}.png"


def write_claims(figure: str, title: str, claims: list[Claim], *, method: str, notes: str = "") -> Path:
    """Write results/<figure>.md: a heading, how the numbers were made, the claim table, notes; print it too.

    Args:
        figure: the file stem, e.g. ``swing_fig6`` (also the PNG's name).
        title: the section heading, e.g. "Swing Fig. 6: allreduce on torus:64x64".
        claims: the rows.
        method: one paragraph: topology, parameters, model(s), sizes, and the command that reproduces it.
        notes: anything a reader must know to trust the table (scale reductions, readings of the paper).
    """
    RESULTS.mkdir(parents=True, exist_ok=True)
    claims = [Claim(c.claim, c.paper, c.ours, None if c.holds is None else bool(c.holds)) for c in claims]  # np.bool_
    marks = {True: "yes", False: "**no**", None: "n/a"}
    lines = [f"## {title}", "", method.strip(), ""]
    png = image_path(figure)
    if png.exists():
        lines += [f"![{title}](img/paper/{figure}.png)", ""]
    lines += ["| claim | paper | ours | holds |", "|---|---|---|---|"]
    lines += [f"| {c.claim} | {c.paper} | {c.ours} | {marks[c.holds]} |" for c in claims]
    if notes:
        lines += ["", notes.strip()]
    held = sum(c.holds is True for c in claims)
    judged = sum(c.holds is not None for c in claims)
    lines += ["", f"*{held} of {judged} comparable claims hold; measured {datetime.date.today().isoformat()}.*", ""]
    out = RESULTS / f"{figure}.md"
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    print(f"wrote {out} and {png}", file=sys.stderr)
    return out
