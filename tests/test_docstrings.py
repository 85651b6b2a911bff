"""Public docstrings follow the project's docstring convention; the package's doctests run with the tests.

The convention (docs/architecture.md, "Quality bar"). Every public function, method and class -- a name
not starting with ``_``, defined at the top of a module or in a public class, in a module whose name does not
start with ``_`` (``__init__.py`` included; dunder methods and functions nested in functions excluded) -- has a
docstring that:

1. says what it returns, with shapes (``(N,)``, ``(T, 2)``) and units (bytes, s, bytes/s, steps) wherever it
   takes or returns numbers or arrays;
2. has a ``Raises:`` section (or numpydoc's underlined ``Raises``) naming each exception of ours it can raise and
   when (following the calls: an unknown spec raises SpecError, and so on), or ``Raises:`` followed by ``Nothing:
   <why>`` (e.g. "Nothing: the schedule was validated when built"); built-in errors that signal a caller's bug may
   be named too;
3. names its source: the paper, section and equation / theorem / definition / algorithm it implements
   ("Swing (De Sensi et al., NSDI'24) Sec. 3.1.1, Eq. (2)", "Zhao et al. (NSDI'25) Theorem 11", "Basu et al.
   (HPDC'24) Sec. 5.2", "Kolmakov & Zhang Sec. 8, eq. (36)"), or for the project's own machinery a ``Source:``
   line citing the paper, the standard or the project's doc page (``docs/...``) it follows (``Source:
   docs/verification.md``, ``Source: docs/architecture.md, "Schedule IR"``, ``Source: MPI 4.1 standard, Ch. 6
   (MPI_Reduce_scatter_block)``, ``Source: the MSCCL executor's XML format``); a cited doc page must exist. Where
   a paper's formula is garbled in its text, the docstring says how it was read;
4. where cheap (well under a second, no MPI, no heavy solve) has a ``>>>`` example, which runs as a doctest
   (``[tool.pytest.ini_options]`` collects ``--doctest-modules`` from all of ``src/directcoll``). CLI commands
   (``cmd_*``) say what the command does, its output contract, exit status and errors, with examples through
   ``main([...])`` where quick and clean on stdout.

Trivial accessors (properties, ``to_dict``) may be one line, e.g. ``T, the number of transfers. Raises: Nothing.
Source: docs/architecture.md, "Schedule IR".``

The checks below cover rules 2 and 3 (and that the docstring exists, and that every doc page a docstring cites
exists) for the whole package, one test per module. Modules whose docstrings are still being finished are listed
in :data:`OUTSTANDING` and expected to fail (strict): when one passes, the run fails until it is removed from the
list, so the list only shrinks.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "directcoll"

#: rule 2: a Raises section, ``Raises:`` or numpydoc's underlined ``Raises`` (or a trivial accessor's one line)
RAISES = re.compile(r"\bRaises:|^\s*Raises\s*\n\s*-{3,}\s*$", re.MULTILINE)
#: rule 3: a paper reference or a Source line (a paper, a standard or a project doc page)
SOURCE = re.compile(r"Sec\.|Section|Eq\.|eq\. ?\(?\d|Theorem|Corollary|Def\.|Definition \d|App\.|Algorithm \d|"
                    r"Lemma|Table \d|Fig\. ?\d|Source:")
#: rule 3: a project doc page cited by a docstring (``docs/architecture.md``, ``docs/runtime.md``, ...)
DOC_PAGE = re.compile(r"\bdocs/[\w./-]+?\.md\b")

#: modules (paths under src/directcoll) whose public docstrings do not follow the convention yet:
#: each is an expected failure; remove a module from here once its docstrings are done.
OUTSTANDING: set[str] = set()


def _modules() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if any(part.startswith("_") and part != "__init__.py" for part in rel.parts):
            continue
        out.append(rel.as_posix())
    return out


def public_items(tree: ast.AST, prefix: str = ""):
    """(qualified name, node) of every public function, method and class defined in ``tree``'s body."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not node.name.startswith("_"):
            yield prefix + node.name, node
            if isinstance(node, ast.ClassDef):
                yield from public_items(node, prefix + node.name + ".")


def violations(module: str) -> list[str]:
    """What the public docstrings of ``module`` lack, one line per item."""
    tree = ast.parse((PACKAGE / module).read_text(encoding="utf-8"))
    out = []
    for name, node in public_items(tree):
        doc = ast.get_docstring(node)
        where = f"{module}:{node.lineno} {name}"
        if not doc:
            out.append(f"{where}: no docstring")
            continue
        missing = [what for what, pattern in (("a Raises: section", RAISES), ("a source (paper section, "
                   "equation, theorem, or a Source: line)", SOURCE)) if not pattern.search(doc)]
        if missing:
            out.append(f"{where}: no {' and no '.join(missing)}")
        for page in sorted(set(DOC_PAGE.findall(doc))):
            if not (ROOT / page).is_file():
                out.append(f"{where}: cites {page}, which does not exist")
    return out


def _param(module: str):
    if module in OUTSTANDING:
        return pytest.param(module, marks=pytest.mark.xfail(strict=True, reason=f"{module}'s docstrings "
                                                            "are not finished; remove it from OUTSTANDING when done"))
    return module


@pytest.mark.parametrize("module", [_param(m) for m in _modules()])
def test_public_docstrings(module):
    found = violations(module)
    assert not found, (f"{len(found)} public item(s) of {module} break the docstring convention "
                       "(tests/test_docstrings.py):\n" + "\n".join(found))


def test_outstanding_modules_exist():
    missing = sorted(set(OUTSTANDING) - set(_modules()))
    assert not missing, f"OUTSTANDING names modules that do not exist (moved or renamed?): {missing}"


def test_doctests_of_the_whole_package_run_with_the_tests():
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    assert "src/directcoll" in options["testpaths"]
    assert "--doctest-modules" in options["addopts"].split()


def test_the_checker_sees_public_items_only():
    tree = ast.parse("def f():\n    def inner(): pass\nclass C:\n    def m(self): pass\n    def _p(self): pass\n"
                     "    def __init__(self): pass\nclass _Hidden:\n    def m(self): pass\n")
    assert [name for name, _ in public_items(tree)] == ["f", "C", "C.m"]


def report() -> dict[str, int]:
    """Violations per module of the whole package (``python tests/test_docstrings.py`` prints them)."""
    return {m: len(v) for m in _modules() if (v := violations(m))}


if __name__ == "__main__":
    counts = report()
    for module, n in counts.items():
        print(f"{n:4d}  {module}")
    print(f"{sum(counts.values())} violations in {len(counts)} modules")
