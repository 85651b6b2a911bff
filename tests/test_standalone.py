"""The project stands alone: it cites only its own pages, papers and standards, carries its licence, and its links
and its README's layout match the tree.

- No file of the product (README.md, docs/, src/, tests/, benchmarks/) cites a design file that is not in the
  repository or an issue number of a tracker that is not public.
- LICENSE exists and is the MIT licence that pyproject.toml declares.
- Every relative markdown link of README.md and docs/*.md points to an existing file, and every ``#anchor`` to a
  heading of its target page under GitHub's anchor rule.
- The README's "Layout" block lists exactly the top-level entries of src/directcoll.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "directcoll"
SCANNED = ("README.md", "docs", "src", "tests", "benchmarks")
#: build outputs and caches, not part of the product
SKIPPED_DIRS = {"__pycache__", ".pytest_cache", ".ruff_cache", ".hypothesis", "out"}

# The forbidden strings are built from pieces, so this file does not match them itself.
EXTERNAL_DESIGN = "DESIGN" + ".md"
ISSUE_NUMBER = re.compile(rb"issue" + rb"\s+#[0-9]")


def _product_files() -> list[Path]:
    out = []
    for name in SCANNED:
        top = ROOT / name
        if top.is_file():
            out.append(top)
            continue
        for path in sorted(top.rglob("*")):
            rel = path.relative_to(ROOT).parts
            if not path.is_file() or any(p in SKIPPED_DIRS or p.endswith(".egg-info") for p in rel):
                continue
            out.append(path)
    return out


def test_no_external_design_file_or_issue_numbers_are_cited():
    found = []
    for path in _product_files():
        data = path.read_bytes()
        if EXTERNAL_DESIGN.encode() in data:
            found.append(f"{path.relative_to(ROOT)}: cites {EXTERNAL_DESIGN}, which is not in the repository")
        for m in ISSUE_NUMBER.finditer(data):
            line = data.count(b"\n", 0, m.start()) + 1
            found.append(f"{path.relative_to(ROOT)}:{line}: cites an issue number ({m.group().decode()!r})")
    assert not found, ("cite the project's own pages (docs/architecture.md and the subsystem pages) instead:\n"
                       + "\n".join(found))


def test_the_scan_sees_the_product():
    files = {p.relative_to(ROOT).as_posix() for p in _product_files()}
    assert {"README.md", "docs/architecture.md", "src/directcoll/registry.py", "tests/test_standalone.py"} <= files
    assert ISSUE_NUMBER.search(b"see issue\n#12") and not ISSUE_NUMBER.search(b"the issue's list, #1")


def test_license_is_mit():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License")
    assert "Permission is hereby granted, free of charge" in text
    assert re.search(r"^Copyright \(c\) \d{4} ", text, re.M)
    assert 'license = { text = "MIT" }' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


# -- links and anchors ------------------------------------------------------------------------------------------

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")


def _outside_fences(text: str):
    """(line number, line) of every line outside fenced code blocks."""
    fence = None
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if fence is None:
            yield n, line


def github_slug(heading: str) -> str:
    """GitHub's anchor of a heading's text: markup reduced to its text, lowercase, punctuation other than hyphens
    and spaces dropped, spaces turned into hyphens.

    >>> github_slug("Double binary tree and shifted ring (Zhao et al. Sec. 8.2 baselines)")
    'double-binary-tree-and-shifted-ring-zhao-et-al-sec-82-baselines'
    """
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = re.sub(r"<[^>]+>", "", text).strip().lower()  # inline HTML
    text = "".join(ch for ch in text if ch.isalnum() or ch in "-_ ")
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every anchor of a markdown page: one per heading outside fenced code, duplicates numbered -1, -2, ..."""
    seen: dict[str, int] = {}
    out = set()
    for _, line in _outside_fences(text):
        m = HEADING.match(line)
        if not m:
            continue
        slug = github_slug(m.group(2))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_anchor_rule():
    page = "# A\n\n## Same\n\n```\n## Not a heading\n```\n\n## Same\n\n## `code` and [link](x.md), too: α-β!\n"
    assert anchors(page) == {"a", "same", "same-1", "code-and-link-too-α-β"}


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _links(path: Path):
    """(line number, target) of every link of a page outside code."""
    for n, line in _outside_fences(path.read_text(encoding="utf-8")):
        line = CODE_SPAN.sub("", line)
        for m in INLINE_LINK.finditer(line):
            yield n, m.group(1)
        m = REFERENCE.match(line)
        if m:
            yield n, m.group(1)


@pytest.mark.parametrize("page", _pages(), ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_and_anchors_resolve(page):
    broken = []
    for n, target in _links(page):
        if not target or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):  # empty, or a URL (https:, mailto: ...)
            continue
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        where = f"{page.relative_to(ROOT)}:{n}: {target}"
        if not dest.exists():
            broken.append(f"{where}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text(encoding="utf-8")):
            broken.append(f"{where}: no heading of {dest.name} has the anchor #{anchor}")
    assert not broken, "broken links:\n" + "\n".join(broken)


# -- the README's layout --------------------------------------------------------------------------------------------

def _layout_block() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"^## Layout\s*\n.*?^```[^\n]*\n(.*?)^```", text, re.M | re.S)
    assert m, "README.md has no '## Layout' section with a code block"
    return m.group(1).splitlines()


def test_readme_layout_lists_the_package_as_it_is():
    lines = _layout_block()
    listed = []
    for line in lines:
        if not line.strip():
            continue
        if line[0] != " ":  # src/directcoll/ and the other top-level folders: they exist
            for word in line.split():
                assert (ROOT / word).exists(), f"README layout names {word}, which does not exist"
            continue
        m = re.match(r"^\s+([A-Za-z_]\w*(?:/|\.py))(?:\s|$)", line)
        assert m, f"README layout line does not start with name/ or name.py: {line!r}"
        listed.append(m.group(1))
    assert len(listed) == len(set(listed)), f"README layout lists an entry twice: {sorted(listed)}"
    existing = {p.name + "/" for p in PACKAGE.iterdir() if p.is_dir() and p.name not in SKIPPED_DIRS}
    existing |= {p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py")}
    required = {p.name + "/" for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
    required |= {p.name for p in PACKAGE.glob("*.py") if p.name not in ("__init__.py", "__main__.py")}
    extra, missing = sorted(set(listed) - existing), sorted(required - set(listed))
    assert not extra, f"README layout lists what src/directcoll lacks: {extra}"
    assert not missing, f"README layout misses: {missing}"
