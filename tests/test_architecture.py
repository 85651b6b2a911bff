"""The package's shape (docs/architecture.md): imports point down the layers, no import cycle between modules, no
module imports another's private names. Built from the source's syntax trees, so imports inside functions count
too. Modules are sized by what they hold, not by a count of lines (docs/architecture.md)."""

import ast
from pathlib import Path

import rustworkx as rx

SRC = Path(__file__).resolve().parents[1] / "src" / "directcoll"
#: the layers, bottom first: a module may import its own layer and those before it (docs/architecture.md)
LAYERS = (("errors", "__init__", "children"), "catalog", "units", "resources", "inputs", "lp", "topology", "schedule",
          ("cost", "verify"), "algorithms", "synthesis", "registry", ("simulate", "export"), ("lang", "plugins"),
          "runtime", "reports", "sweep", ("cli", "__main__"))


def _modules() -> dict[str, Path]:
    out = {}
    for path in SRC.rglob("*.py"):
        parts = ("directcoll", *path.relative_to(SRC).with_suffix("").parts)
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(name: str, path: Path, modules) -> list[tuple[str, str]]:
    """(imported module, imported name or "") of every ``directcoll`` import in the module."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            if base.split(".")[0] == "directcoll":
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    out.append((sub, "") if sub in modules else (base, alias.name))
        elif isinstance(node, ast.Import):
            out += [(alias.name, "") for alias in node.names if alias.name.split(".")[0] == "directcoll"]
    return out


def _layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else "__init__"
    for i, layer in enumerate(LAYERS):
        if top in (layer if isinstance(layer, tuple) else (layer,)):
            return i
    raise AssertionError(f"{module}: its folder {top!r} is in no layer of LAYERS (add it, and to the docs)")


MODULES = _modules()
IMPORTS = {name: _imports(name, path, MODULES) for name, path in MODULES.items()}


def test_imports_point_down_the_layers():
    upward = [f"{m} imports {t}" for m, imports in IMPORTS.items() for t, _ in imports
              if t in MODULES and _layer(t) > _layer(m)]
    assert not upward, upward


def test_no_import_cycle_between_modules():
    graph = rx.PyDiGraph()
    index = {m: graph.add_node(m) for m in MODULES}
    for m, imports in IMPORTS.items():
        for t, _ in imports:
            if t in index and t != m:
                graph.add_edge(index[m], index[t], None)
    cycles = [sorted(graph[i] for i in c) for c in rx.strongly_connected_components(graph) if len(c) > 1]
    assert not cycles, cycles


def test_no_module_imports_a_private_name_of_another():
    private = [f"{m} imports {t}.{n}" for m, imports in IMPORTS.items() for t, n in imports
               if n.startswith("_") and not n.startswith("__")]
    assert not private, private


def test_the_checks_see_the_package():
    # the checks above are vacuous if the walk found nothing: the registry imports both algorithm layers
    assert {"directcoll.registry", "directcoll.cli.main", "directcoll.schedule.ir"} <= set(MODULES)
    assert any(t.startswith("directcoll.synthesis") for t, _ in IMPORTS["directcoll.registry"])
