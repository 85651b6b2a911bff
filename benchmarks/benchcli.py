"""What every benchmark script shares: ``--help`` that runs nothing, an ``--out`` directory outside ``docs/`` and an
estimate of the run time printed before it starts (docs/architecture.md, "Command line").

Every script builds its parser with :func:`parser` and calls :func:`begin` once its arguments are read. Outputs go
under ``--out DIR`` (default :data:`DEFAULT_OUT`, ``benchmarks/out/``, ignored by git); a copy of what a script
prints on standard output is kept there too (``DIR/<script>.txt``). The docs that show a script's output name the
``--out docs/...`` form that regenerates it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: where benchmark outputs go unless --out says otherwise (ignored by git; never docs/)
DEFAULT_OUT = ROOT / "benchmarks" / "out"


def parser(doc: str | None, estimate: str, *, out_help: str = "", default: Path = DEFAULT_OUT
           ) -> argparse.ArgumentParser:
    """An argparse parser whose description is the script's docstring and whose epilog is ``estimate``, with
    ``--out DIR`` (default ``default``). ``--help`` prints them and exits before anything runs."""
    ap = argparse.ArgumentParser(description=doc, epilog=f"Estimated run time: {estimate}",
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=default, metavar="DIR",
                    help=f"directory for the outputs (default {default.relative_to(ROOT)}/, ignored by git)"
                         + (f"; {out_help}" if out_help else ""))
    return ap


class _Tee:
    """Standard output that also goes to a file."""

    def __init__(self, stream, path: Path) -> None:
        self.stream, self.file = stream, open(path, "w", encoding="utf-8")  # noqa: SIM115 (open for the run)

    def write(self, text: str) -> int:
        self.file.write(text)
        return self.stream.write(text)

    def flush(self) -> None:
        self.file.flush()
        self.stream.flush()

    def __getattr__(self, name):
        return getattr(self.stream, name)


def begin(args: argparse.Namespace, estimate: str, script: str, *, keep_stdout: bool = True) -> Path:
    """Create ``args.out``, print the estimate and where the outputs go on standard error, and (``keep_stdout``)
    copy standard output to ``args.out/<script>.txt``. Returns the directory."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    print(f"{script}: estimated run time {estimate}; outputs in {out}/", file=sys.stderr, flush=True)
    if keep_stdout:
        sys.stdout = _Tee(sys.stdout, out / f"{script}.txt")
    return out
