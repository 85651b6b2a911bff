"""The package's shape (docs/architecture.md): imports point down the layers, no import cycle between modules, no
module imports another's private names, and every algorithm family is one package or one module. Built from the
source's syntax trees, so imports inside functions count too. Modules are sized by what they hold, not by a count of
lines (docs/architecture.md)."""

import ast
from pathlib import Path

import rustworkx as rx

SRC = Path(__file__).resolve().parents[1] / "src" / "directcoll"
#: the layers, bottom first: a module may import its own layer and those before it (docs/architecture.md)
LAYERS = (("errors", "__init__", "children"), "catalog", "units", "resources", "inputs", "lp", "topology", "schedule",
          ("cost", "verify"), "algorithms", "synthesis", "registry", ("simulate", "export"), ("lang", "plugins"),
          "runtime", "testbed", "reports", "api", "sweep", ("cli", "__main__"))


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


# -- algorithm families ------------------------------------------------------------------------------------------
#: the layers whose modules are algorithm families (docs/architecture.md, "Modules by concept")
FAMILY_LAYERS = ("directcoll.algorithms", "directcoll.synthesis")


def _unit(module: str) -> str | None:
    """The module or package directly below algorithms/ or synthesis/ that holds ``module`` (None elsewhere)."""
    parts = module.split(".")
    return ".".join(parts[:3]) if len(parts) >= 3 and ".".join(parts[:2]) in FAMILY_LAYERS else None


def _family_modules() -> dict[str, set[str]]:
    """Registry name -> the modules of its builder, pattern builder and pattern memory estimate."""
    from directcoll.registry import ALGORITHMS

    return {name: {f.__module__ for f in (alg.build, alg.pattern, alg.pattern_bytes) if f is not None}
            for name, alg in ALGORITHMS.items()}


def test_each_algorithm_family_is_one_package_or_one_module():
    """A registry entry's builder, pattern builder and pattern-memory estimate live in one module or one package
    below algorithms/ or synthesis/ (the family's), and an entry named after a family (``swing-tree``) lives in
    that family's package."""
    families = _family_modules()
    units = {name: {_unit(m) for m in modules} for name, modules in families.items()}
    split = {name: sorted(map(str, u)) for name, u in units.items() if len(u) != 1 or None in u}
    assert not split, f"families whose builders are not in one package or module of algorithms/ or synthesis/: {split}"
    by_name = {unit.rsplit(".", 1)[1]: unit for (unit,) in units.values()}
    strays = [f"{name} (in {unit}) belongs in {by_name[name.split('-')[0]]}" for name, (unit,) in units.items()
              if "-" in name and name.split("-")[0] in by_name and unit != by_name[name.split("-")[0]]]
    assert not strays, strays


def test_no_family_is_spread_over_sibling_modules():
    """Every module the families' builders reach below algorithms/ or synthesis/ is in a family's package or module,
    or is machinery shared by two families or more (imported from two units); and no module sits beside a family
    named as its part (``swing_pattern.py`` beside ``swing/``): a family's modules go in its package."""
    families = {u for modules in _family_modules().values() for u in map(_unit, modules)}
    reached, todo = set(), [m for modules in _family_modules().values() for m in modules]
    while todo:
        m = todo.pop()
        if m in reached or _unit(m) is None:
            continue
        reached.add(m)
        todo += [t for t, _ in IMPORTS.get(m, ()) if t in MODULES]
    lonely = []
    for m in sorted(reached):
        if _unit(m) in families:
            continue
        users = {_unit(i) or i for i, imports in IMPORTS.items() for t, _ in imports if t == m and _unit(i) != _unit(m)}
        if len(users) < 2:
            lonely.append(f"{m} is used by {sorted(users)} only: move it into that family's package")
    assert not lonely, lonely
    units = {_unit(m) for m in MODULES} - {None}
    parts = [f"{u} (beside {f})" for u in sorted(units) for f in sorted(families)
             if u.rsplit(".", 1)[0] == f.rsplit(".", 1)[0]
             and u.rsplit(".", 1)[1].startswith(f.rsplit(".", 1)[1] + "_")]
    assert not parts, f"modules named as parts of a family, outside its package: {parts}"


def test_the_family_checks_see_the_families():
    units = {_unit(m) for modules in _family_modules().values() for m in modules}
    assert {"directcoll.algorithms.swing", "directcoll.synthesis.bfb", "directcoll.algorithms.ring"} <= units
    assert _unit("directcoll.algorithms.swing.pattern") == "directcoll.algorithms.swing"
    assert _unit("directcoll.registry") is None and _unit("directcoll.algorithms") is None


#: the CLI modules that are not a command group: the shared helpers, the assembly and the console script
CLI_SHARED = {"directcoll.cli.options", "directcoll.cli.output"}
CLI_FRAME = {"directcoll.cli", "directcoll.cli.main", "directcoll.cli.entry"}


def _cli_command_modules() -> set[str]:
    return {m for m in MODULES if m.startswith("directcoll.cli.")} - CLI_SHARED - CLI_FRAME


def test_the_cli_is_one_module_per_command_group():
    """Every module of cli/ but the shared helpers (options, output) and the frame (main, entry) is a command group:
    it defines ``register(sub)``, main.COMMANDS lists it, and it adds at least one command; main.py defines no
    command of its own; and no two groups add the same command."""
    import argparse

    from directcoll.cli import main

    listed = {m.__name__ for m in main.COMMANDS}
    assert listed == _cli_command_modules(), (f"cli modules not in main.COMMANDS: {_cli_command_modules() - listed}; "
                                              f"listed but not command modules: {listed - _cli_command_modules()}")
    tree = ast.parse(MODULES["directcoll.cli.main"].read_text())
    own = [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("cmd_")]
    assert not own, f"cli/main.py only assembles the commands; it defines {own}"
    seen: dict[str, str] = {}
    for group in main.COMMANDS:
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        group.register(sub)
        assert sub.choices, f"{group.__name__}.register adds no command"
        for name in sub.choices:
            assert name not in seen, f"`directcoll {name}` is added by {seen[name]} and {group.__name__}"
            seen[name] = group.__name__


def test_cli_commands_share_helpers_only_through_options_and_output():
    """A command group imports, of cli/, only options and output: never another command group or main."""
    crossing = [f"{m} imports {t}" for m in sorted(_cli_command_modules()) for t, _ in IMPORTS[m]
                if t.startswith("directcoll.cli") and t not in CLI_SHARED]
    assert not crossing, crossing
