"""Write docs/api.md, the API page, from the docstrings of :mod:`directcoll.api` (``import directcoll as dc``).

Usage: ``python3 docs/gen_api.py`` writes the page; ``python3 docs/gen_api.py --check`` exits 1 when the page
differs from what the docstrings give (tests/test_api.py runs the same comparison).

Each function's numpydoc sections (Parameters, Returns, Raises, Examples) become Markdown lists and a code block;
each type gets its docstring's first paragraph and where it is defined.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
import textwrap
from pathlib import Path

PAGE = Path(__file__).resolve().parent / "api.md"
#: the functions in reading order (the types follow, alphabetically)
ORDER = ("topology", "build", "pattern", "verify", "simulate", "compare", "algorithms")
ROLE = re.compile(r":(?:func|class|meth|mod|data|attr|exc):`~?([\w.]+)`")
DOC_PAGE = re.compile(r"\bdocs/([\w-]+\.md)\b")
SECTION = re.compile(r"^(Parameters|Returns|Raises|Examples|See Also|Notes)\n-{3,}\n", re.MULTILINE)

HEADER = """# API

`import directcoll as dc` gives the functions and types below (`directcoll.api`, loaded on first use, so `import
directcoll` stays fast). Units are SI: sizes in bytes, bandwidths in bytes/s, times in seconds; a spec or a size
given as text carries its own unit (`"400Gbps"`, `"1MiB"`). Errors are the kinds of `directcoll.errors`, each
naming the input and what would be accepted; the command line turns one into a line on standard error and exit
status 2 ([architecture.md](architecture.md), "Quality bar").

This page is generated from the docstrings by `python3 docs/gen_api.py` (tests/test_api.py checks that it is
current); edit the docstrings, not the page.

```python
import directcoll as dc

t = dc.topology("torus:8x8")                        # 64 ranks, 400 Gb/s links
s = dc.build("swing", t)                            # a Schedule
assert dc.verify(s).ok                              # the exact verifier
print(dc.simulate(s, t).time(2**20))                # seconds for a 1 MiB allreduce
print(dc.compare(t, sizes=["1MiB", "64MiB"]))       # every algorithm, the winner per size
```
"""


def _inline(text: str) -> str:
    """reST inline markup as Markdown: ``code`` -> `code`, :func:`~a.b` -> `b` (`dc.b` for the API's own), and
    docs/PAGE.md -> a link to the page."""
    def role(m: re.Match) -> str:
        name = m.group(0).split("`")[1]
        short = name.lstrip("~").rsplit(".", 1)[-1] if name.startswith("~") or "." not in name else name
        return f"`dc.{short}`" if short in ORDER else f"`{short}`"

    text = ROLE.sub(role, text).replace("``", "`")
    return DOC_PAGE.sub(lambda m: f"[{m.group(1)}]({m.group(1)})" if (PAGE.parent / m.group(1)).exists()
                        else m.group(0), text)


def _entries(body: str) -> list[tuple[str, str]]:
    """(head, description) of every entry of a numpydoc list section."""
    out: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            out.append((line.strip(), []))
        elif out:
            out[-1][1].append(line.strip())
    return [(head, _inline(" ".join(desc))) for head, desc in out]


def _head(head: str, returns: bool) -> str:
    name, _, kind = head.partition(" : ")
    if returns and not kind:  # numpydoc's Returns may give the type alone
        return f"*{name}*"
    return f"`{name}` (*{kind}*)" if kind else f"`{name}`"


def _markdown(doc: str) -> str:
    """A numpydoc docstring as Markdown."""
    doc = inspect.cleandoc(doc)
    parts = SECTION.split(doc)
    lines = [_inline(" ".join(parts[0].split())), ""]
    for title, body in zip(parts[1::2], parts[2::2], strict=True):
        body = body.rstrip()
        tail = ""
        if title != "Examples":  # a Source: line (or any paragraph) after the list's last entry
            paragraphs = re.split(r"\n\s*\n", body, maxsplit=1)
            body, tail = paragraphs[0], (paragraphs[1].strip() if len(paragraphs) > 1 else "")
        lines.append(f"**{title}**")
        lines.append("")
        if title == "Examples":
            lines += ["```pycon", textwrap.dedent(body).strip(), "```"]
        else:
            lines += [f"- {_head(head, title == 'Returns')}: {desc}" for head, desc in _entries(body)]
        lines.append("")
        if tail:
            lines += [_inline(" ".join(tail.split())), ""]
    return "\n".join(lines).rstrip() + "\n"


def _signature(name: str, func) -> str:
    sig = str(inspect.signature(func, eval_str=True))
    sig = re.sub(r" -> .*$", "", sig)
    sig = re.sub(r"\bdirectcoll(?:\.\w+)+\.(\w+)", r"\1", sig)  # directcoll.schedule.ir.Schedule -> Schedule
    return f"dc.{name}{sig}"


def render() -> str:
    """The page's text from the current docstrings."""
    sys.path.insert(0, str(PAGE.parents[1] / "src"))
    import directcoll.api as api

    functions = [n for n in ORDER if n in api.__all__] + sorted(
        n for n in api.__all__ if inspect.isfunction(getattr(api, n)) and n not in ORDER)
    types = [n for n in api.__all__ if inspect.isclass(getattr(api, n))]
    out = [HEADER, "## Functions", ""]
    out += [f"- [`dc.{n}`](#dc{n})" for n in functions]
    out.append("")
    for name in functions:
        func = getattr(api, name)
        out += [f"### dc.{name}", "", "```python", _signature(name, func), "```", "", _markdown(func.__doc__)]
    out += ["## Types", "", "Each type's full reference is its docstring (`help(dc.Topology)`).", ""]
    for name in types:
        cls = getattr(api, name)
        first = inspect.cleandoc(cls.__doc__ or "").split("\n\n")[0]
        out += [f"### dc.{name}", "", _inline(" ".join(first.split())), "", f"Defined in `{cls.__module__}`.", ""]
    out += ["## Errors", "",
            "`dc.DirectcollError` and its kinds, importable from `directcoll` itself (no lazy load): "
            + ", ".join(f"`dc.{n}`" for n in _errors()) + ".", ""]
    return "\n".join(out).rstrip() + "\n"


def _errors() -> list[str]:
    import directcoll

    return [n for n in directcoll.__all__ if n.endswith("Error") and n != "DirectcollError"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when docs/api.md is not current")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = PAGE.read_text(encoding="utf-8") if PAGE.exists() else ""
        if current != text:
            print(f"{PAGE} is not current: run python3 docs/gen_api.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
