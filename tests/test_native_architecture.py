"""The C sources' architecture (docs/architecture.md, "Runtime"; docs/runtime.md, "The native runtime"): calls between
the files of ``src/directcoll/native`` form no cycle. A file calls another when a function defined in it names a
function with external linkage defined in the other (a call or its address); the graph of those calls must be
acyclic, as the Python modules' imports are (tests/test_architecture.py), so that each file can be read, tested
and changed on top of the ones below it.

The parser reads C's function definitions from the source text, after stripping comments, string and character
literals and preprocessor lines: a definition is a parenthesized parameter list followed by a body at file scope,
``static`` or not. Calls made only inside macros are not seen (the library's macros call the C library only).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

NATIVE = Path(__file__).resolve().parents[1] / "src" / "directcoll" / "native"
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "do", "else", "case", "goto", "defined",
            "_Alignas", "_Alignof", "_Static_assert", "_Generic", "alignof", "offsetof"}


def _strip(text: str) -> str:
    """C source without comments, string and character literals (each replaced by a space or an empty literal) and
    preprocessor lines (continuations included), newlines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j) or " ")
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    lines, keep, continued = "".join(out).split("\n"), [], False
    for line in lines:
        directive = continued or line.lstrip().startswith("#")
        continued = directive and line.rstrip().endswith("\\")
        keep.append("" if directive else line)
    return "\n".join(keep)


def _matching(text: str, at: int, opening: str, closing: str, step: int) -> int:
    """The index of the bracket matching the one at ``at`` (scanning forward with step 1, backward with -1)."""
    depth = 0
    i = at
    while 0 <= i < len(text):
        if text[i] == opening:
            depth += 1
        elif text[i] == closing:
            depth -= 1
            if depth == 0:
                return i
        i += step
    raise ValueError(f"unbalanced {opening}{closing} at {at}")


def definitions(source: str) -> list[tuple[str, bool, str]]:
    """The functions defined in a C source: (name, has external linkage, body), in order."""
    text = _strip(source)
    found, start, i = [], 0, 0  # start: where the current file-scope declaration begins
    while i < len(text):
        if text[i] == "{":  # at file scope: a function's body, or a struct, enum or initializer
            head = text[start:i].rstrip()
            end = _matching(text, i, "{", "}", 1)
            if head.endswith(")"):
                opening = _matching(text, start + len(head) - 1, ")", "(", -1)
                name = re.search(r"([A-Za-z_]\w*)\s*$", text[start:opening])
                if name and name.group(1) not in KEYWORDS:
                    found.append((name.group(1), not re.search(r"\bstatic\b", text[start:opening]),
                                  text[i + 1:end]))
            i = start = end + 1
            continue
        if text[i] == ";":
            start = i + 1
        i += 1
    return found


def call_graph(sources: dict[str, str]) -> dict[str, dict[str, set[tuple[str, str]]]]:
    """File -> {file it calls: {(calling function, function called), ...}} for calls between files."""
    defs = {name: definitions(text) for name, text in sources.items()}
    external = {}
    for file, functions in defs.items():
        for function, extern, _ in functions:
            if extern:
                external.setdefault(function, file)
    graph: dict[str, dict[str, set[tuple[str, str]]]] = {file: {} for file in sources}
    for file, functions in defs.items():
        own = {function for function, _, _ in functions}  # a name defined here resolves here
        for caller, _, body in functions:
            for used in set(re.findall(r"\b[A-Za-z_]\w*\b", body)) - own - KEYWORDS:
                target = external.get(used)
                if target and target != file:
                    graph[file].setdefault(target, set()).add((caller, used))
    return graph


def find_cycle(graph: dict[str, dict]) -> list[str] | None:
    """A cycle of the graph as the list of its nodes (the first one repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, {})):
            if state.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def _sources() -> dict[str, str]:
    return {path.name: path.read_text() for path in sorted(NATIVE.glob("*.c"))}


def test_calls_between_the_c_files_form_no_cycle():
    graph = call_graph(_sources())
    cycle = find_cycle(graph)
    if cycle:
        edges = [f"{a} -> {b} ({', '.join(f'{f} calls {g}' for f, g in sorted(graph[a][b]))})"
                 for a, b in zip(cycle, cycle[1:], strict=False)]
        pytest.fail("the C files call each other around a cycle: " + "; ".join(edges))


def test_the_parser_sees_the_library_s_functions_and_calls():
    """Not vacuous: the definitions and the calls the library is known to make between its files are found."""
    sources = _sources()
    defs = {name: {f: extern for f, extern, _ in definitions(text)} for name, text in sources.items()}
    assert defs["dc_program.c"]["dc_plan_build"] and not defs["dc_program.c"]["check_rank"]
    assert defs["directcoll.c"]["MPI_Allreduce"] and defs["dc_exec.c"]["dc_execute"]
    assert not defs["dc_exec.c"]["mpi_step"] and defs["dc_coord.c"]["dc_element"]
    graph = call_graph(sources)
    assert ("dc_cache_plan", "dc_plan_build") in graph["dc_plans.c"]["dc_program.c"]
    assert ("choose", "dc_cache_plan") in graph["directcoll.c"]["dc_plans.c"]
    assert ("directcoll_run", "dc_execute") in graph["dc_entry.c"]["dc_exec.c"]
    assert ("dc_plan_build", "dc_a2a_layout") in graph["dc_program.c"]["dc_alltoall.c"]
    assert set(graph["dc_alltoall.c"]) == {"dc_coord.c", "dc_alloc.c"}  # the old circle: it called dc_program.c
    assert ("MPI_Allreduce", "dc_execute") not in graph["directcoll.c"].get("dc_exec.c", set())  # via execute()


@pytest.mark.parametrize(("sources", "cycle"), [
    ({"a.c": "int f(void) { return g(); }", "b.c": "/* f( */ int g(void) { return f(); }"}, ["a.c", "b.c", "a.c"]),
    ({"a.c": "int f(void) { return g(); }", "b.c": "int g(void) { return h(1); }",
      "c.c": "#define X f()\nint h(int x) { return x; }"}, None),
    ({"a.c": "static int g(void) { return 1; }\nint f(void) { return g(); }", "b.c": "int g(void) { return f(); }"},
     None),  # a.c's own static g is what f calls
    ({"a.c": 'int f(int (*cb)(void)) { const char *s = "g("; return cb(); }', "b.c": "int g(void) { return f(g); }"},
     None),  # a name in a string is no call; a callback is b.c's, passed by b.c
])
def test_the_cycle_check_itself(sources, cycle):
    assert find_cycle(call_graph(sources)) == cycle
