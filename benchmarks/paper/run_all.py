"""Run every figure script of benchmarks/paper/ and gather their claim tables into docs/paper.md.

Run: python3 benchmarks/paper/run_all.py [--only swing_fig6 ...] [--no-run] [--out DIR] [--results DIR] [--docs]

Each script is a separate process (its own imports and memory), run with the same --out (figures) and --results
(claim tables), both defaulting to benchmarks/out/paper/; the tables are gathered into RESULTS/paper.md.
``--docs`` regenerates what docs/paper.md shows: --out docs/img/paper --results benchmarks/paper/results, gathered
into docs/paper.md. ``--no-run`` only gathers the tables already there. The order: Swing, Kolmakov & Zhang, Zhao
et al., Basu et al.
"""

from __future__ import annotations

import datetime
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

from common import DEFAULT_OUT, DOCS_IMAGES, RESULTS, ROOT, benchcli

HERE = Path(__file__).resolve().parent
PAPERS = ("swing", "kolmakov", "zhao", "basu")


def scripts() -> list[Path]:
    found = [p for p in HERE.glob("*.py") if p.stem.split("_")[0] in PAPERS]
    return sorted(found, key=lambda p: (PAPERS.index(p.stem.split("_")[0]), _natural(p.stem)))


def _natural(stem: str) -> tuple:
    """swing_fig12_14 sorts as figure 12: the first number after "fig"."""
    import re

    first = re.match(r"\d+", stem.split("fig")[-1])
    return (int(first.group()) if first else 0, stem)


def gather(out: Path, timings: dict[str, float], results: Path = RESULTS) -> None:
    parts = ["# The seed papers' figures, reproduced", "",
             "Each section is written by one script of `benchmarks/paper/` (run them all with "
             "`python3 benchmarks/paper/run_all.py --docs`, about the times listed; each script alone with `--out "
             "docs/img/paper --results benchmarks/paper/results`, which is what `--docs` passes). A claim "
             "\"holds\" when our number "
             "agrees with the paper's within the tolerance the row states; the tables say where it does not, and "
             "why where we know. "
             f"Generated {datetime.date.today().isoformat()} on {platform.machine()}, "
             f"Python {platform.python_version()}.", ""]
    for script in scripts():
        table = results / f"{script.stem}.md"
        if not table.exists():
            parts += [f"## {script.stem}", "", "*(no table: the script has not run)*", ""]
            continue
        parts.append(table.read_text(encoding="utf-8").rstrip())
        if script.stem in timings:
            parts.append(f"\n*`python3 benchmarks/paper/{script.name} --out docs/img/paper --results "
                         f"benchmarks/paper/results` took {timings[script.stem]:.0f} s.*")
        parts.append("")
    out.write_text("\n".join(parts) + "\n", encoding="utf-8")
    print(f"wrote {out}", file=sys.stderr)


def main() -> None:
    total = sum(json.loads((RESULTS / "timings.json").read_text()).values())
    estimate = f"about {total / 60:.0f} minutes for every script (the sum of their last runs), seconds with --no-run"
    ap = benchcli.parser(__doc__, estimate, out_help="the figures", default=DEFAULT_OUT)
    ap.add_argument("--results", type=Path, metavar="DIR", help="the claim tables and paper.md (default: --out's)")
    ap.add_argument("--docs", action="store_true", help="what docs/paper.md shows: --out docs/img/paper --results "
                                                        "benchmarks/paper/results, gathered into docs/paper.md")
    ap.add_argument("--only", nargs="*", help="script stems to run (default: all)")
    ap.add_argument("--no-run", action="store_true", help="only gather the existing tables")
    args = ap.parse_args()
    if args.docs:
        args.out, args.results = DOCS_IMAGES, RESULTS
    results = Path(args.results or args.out)
    benchcli.begin(args, estimate, "run_all", keep_stdout=False)
    results.mkdir(parents=True, exist_ok=True)
    timing_file = results / "timings.json"
    timings = json.loads(timing_file.read_text()) if timing_file.exists() else {}
    failed = []
    if not args.no_run:
        for script in scripts():
            if args.only and script.stem not in args.only:
                continue
            print(f"running {script.name} ...", file=sys.stderr, flush=True)
            t0 = time.perf_counter()
            rc = subprocess.run([sys.executable, str(script), "--out", str(args.out), "--results", str(results)],
                                cwd=ROOT, stdout=subprocess.DEVNULL).returncode
            timings[script.stem] = time.perf_counter() - t0
            if rc:
                failed.append(script.name)
                print(f"  {script.name} failed (exit {rc})", file=sys.stderr)
    timing_file.write_text(json.dumps(timings, indent=1, sort_keys=True) + "\n")
    gather(ROOT / "docs" / "paper.md" if args.docs else results / "paper.md", timings, results)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
