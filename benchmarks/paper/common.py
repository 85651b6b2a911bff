"""What the figure scripts of benchmarks/paper/ share: where their outputs go and the claim table they write.

Every script reproduces one figure (or a group) of a seed paper: it computes the figure's data with directcoll,
draws it to ``OUT/<figure>.png`` and writes ``RESULTS/<figure>.md``, a table of the figure's claims: what the paper
states, what we measured with the command that ran, and whether the claim holds. ``--out OUT`` and ``--results
RESULTS`` default to ``benchmarks/out/paper/`` (ignored by git; never docs/); the files docs/paper.md shows are
regenerated with ``--out docs/img/paper --results benchmarks/paper/results``, and ``run_all.py --docs`` runs every
script that way and gathers the tables into ``docs/paper.md``. Every script prints an estimate of its run time
before it starts; ``--help`` runs nothing.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import benchcli  # noqa: E402  (benchmarks/benchcli.py: --out, the estimate)

ROOT = Path(__file__).resolve().parents[2]
#: the committed claim tables and measured rows (JSON) that docs/paper.md is gathered from; scripts read cached rows
#: here, and write here only when told (--results benchmarks/paper/results)
RESULTS = Path(__file__).resolve().parent / "results"
#: where docs/paper.md's figures live (--out docs/img/paper)
DOCS_IMAGES = ROOT / "docs" / "img" / "paper"
#: the default of --out and --results
DEFAULT_OUT = benchcli.DEFAULT_OUT / "paper"
_where = {"images": DEFAULT_OUT, "claims": DEFAULT_OUT}


def parser(doc: str | None, estimate: str) -> argparse.ArgumentParser:
    """The script's parser: its docstring, the estimate, ``--out DIR`` (figures) and ``--results DIR`` (claim
    tables). ``--help`` exits before anything runs."""
    ap = benchcli.parser(doc, estimate, out_help="the figure; docs/paper.md's figures: --out docs/img/paper",
                          default=DEFAULT_OUT)
    ap.add_argument("--results", type=Path, metavar="DIR",
                    help="directory for the claim table (default: --out's; docs/paper.md's tables: --results "
                         "benchmarks/paper/results)")
    return ap


def begin(args: argparse.Namespace, estimate: str, figure: str) -> None:
    """Print the estimate, create the output directories and send image_path and write_claims there."""
    _where["images"] = Path(args.out)
    _where["claims"] = Path(args.results or args.out)
    _where["claims"].mkdir(parents=True, exist_ok=True)
    benchcli.begin(args, estimate, figure, keep_stdout=False)


@dataclass(frozen=True)
class Claim:
    """One claim of a figure: the paper's value against ours.

    ``holds`` is True or False where the two can be compared, None where they cannot (say why in ``ours``).
    """

    claim: str
    paper: str
    ours: str
    holds: bool | None


def _where_args() -> str:
    """`` --out DIR --results DIR`` as given (relative to the checkout where inside it), empty for the defaults."""
    def rel(path: Path) -> str:
        path = path.resolve()
        return str(path.relative_to(ROOT)) if ROOT in path.parents else str(path)

    images, claims = _where["images"], _where["claims"]
    if images.resolve() == DEFAULT_OUT.resolve() and claims.resolve() == images.resolve():
        return ""
    return f" --out {rel(images)}" + ("" if claims.resolve() == images.resolve() else f" --results {rel(claims)}")


def image_path(figure: str) -> Path:
    """Where figure ``figure`` (for example ``swing_fig6``) is drawn: <--out>/<figure>.png."""
    _where["images"].mkdir(parents=True, exist_ok=True)
    return _where["images"] / f"{figure}.png"


def _image_link(png: Path, claims: Path) -> str:
    """The figure's link in the claim table: relative to docs/ when it is there (docs/paper.md embeds the tables),
    else to the table's directory (run_all.py gathers OUT/paper.md there)."""
    png = png.resolve()
    docs = ROOT / "docs"
    base = docs if docs in png.parents else claims.resolve()
    return os.path.relpath(png, base)


def write_claims(figure: str, title: str, claims: list[Claim], *, method: str, notes: str = "",
                 measured: str | None = None) -> Path:
    """Write <--results>/<figure>.md: a heading, how the numbers were made, the claim table, notes; print it too.

    Args:
        figure: the file stem, e.g. ``swing_fig6`` (also the PNG's name).
        title: the section heading, e.g. "Swing Fig. 6: allreduce on torus:64x64".
        claims: the rows.
        method: one paragraph: topology, parameters, model(s), sizes, and the command that reproduces it.
        notes: anything a reader must know to trust the table (scale reductions, readings of the paper).
        measured: the date of the newest measurement behind the table (ISO); default today, for scripts that
            measure everything they report. A script that reuses stored rows passes their newest date.
    """
    claims_dir = _where["claims"]
    claims_dir.mkdir(parents=True, exist_ok=True)
    claims = [Claim(c.claim, c.paper, c.ours, None if c.holds is None else bool(c.holds)) for c in claims]  # np.bool_
    marks = {True: "yes", False: "**no**", None: "n/a"}
    method = method.replace(f"`python3 benchmarks/paper/{figure}.py", f"`python3 benchmarks/paper/{figure}.py"
                            + _where_args())  # the command that ran: with the --out / --results it was given
    lines = [f"## {title}", "", method.strip(), ""]
    png = image_path(figure)
    if png.exists():
        lines += [f"![{title}]({_image_link(png, claims_dir)})", ""]
    lines += ["| claim | paper | ours | holds |", "|---|---|---|---|"]
    lines += [f"| {c.claim} | {c.paper} | {c.ours} | {marks[c.holds]} |" for c in claims]
    if notes:
        lines += ["", notes.strip()]
    held = sum(c.holds is True for c in claims)
    judged = sum(c.holds is not None for c in claims)
    when = measured or datetime.date.today().isoformat()
    lines += ["", f"*{held} of {judged} comparable claims hold; measured {when}.*", ""]
    out = claims_dir / f"{figure}.md"
    out.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))
    print(f"wrote {out} and {png}", file=sys.stderr)
    return out
