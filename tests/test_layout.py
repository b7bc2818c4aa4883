"""The package's shape: no import cycle among its modules, data that imports no machinery,
and packages that import each other only downwards (type-only imports included), in the
order pyproject.toml declares.

Read from the source, not by importing it: an import inside a function or under
``TYPE_CHECKING`` runs late or never, so only the imports a module runs when it loads can
close a cycle. A cycle makes the load order matter, and a module half-loaded when the
other one reads it is the bug that follows.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import tomlkit

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_atom"


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _loaded_imports(tree: ast.Module) -> Iterator[str]:
    """The modules a module imports when it loads: top level, not under TYPE_CHECKING."""
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for inner in (
            ast.walk(node) if not isinstance(node, (ast.FunctionDef, ast.ClassDef)) else ()
        ):
            if isinstance(inner, ast.Import):
                yield from (alias.name for alias in inner.names)
            elif isinstance(inner, ast.ImportFrom) and inner.module and not inner.level:
                yield inner.module
                yield from (f"{inner.module}.{alias.name}" for alias in inner.names)


def import_graph() -> dict[str, set[str]]:
    modules = {_module(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[name] = {
            target
            for target in _loaded_imports(tree)
            if target in modules and target != name and not name.startswith(f"{target}.")
        }
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected group of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_itself_back_through_others() -> None:
    assert cycles(import_graph()) == []


def test_the_checker_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


#: The concepts that are data and rules, no machinery: what a spec, its settings, its cost,
#: an agent's events and a run's results are.
DATA = ("spec", "settings", "cost", "events", "results")
#: What runs things: agents, the gateway's server, replay, judging, checks, running, reports.
MACHINERY = (
    "agents",
    "gateway.server",
    "gateway.scripted",
    "replay",
    "run",
    "pytest",
    "judge",
    "checks",
    "reports",
    "suite",
)


#: The spec's loader, which sits above the checks in the layers (pyproject.toml).
LOADER = ("pytest_atom.spec.load", "pytest_atom.spec.build")


def test_results_and_specs_import_no_machinery() -> None:
    """Specs, settings, cost, events and results read no agent, gateway server, replay, run,
    judge or report machinery when they load: a report, a script or another process reads
    them without starting any of it."""
    graph = import_graph()
    reached = {
        (module, target)
        for module in graph
        if module.removeprefix("pytest_atom.").startswith(DATA)
        for target in graph[module]
        if target.removeprefix("pytest_atom.").startswith(MACHINERY)
        # The spec's loader hosts the check kinds (it builds each check through its kind),
        # as a plugin host loads its plugins: it may load them, and nothing else that runs.
        and not (module in LOADER and target.startswith("pytest_atom.checks."))
    }
    assert reached == set()


# --- layers: packages, every import a module runs sooner or later --------------------------

ROOTS = (PACKAGE, PACKAGE.parent / "atom_cli")


def _node(module: str) -> str | None:
    """The layer node a module belongs to: ``atom_cli``, a subpackage of `pytest_atom`
    (``pytest_atom.run``) or one of its top-level modules (``pytest_atom.paths``); in a
    package whose modules the layers name one by one (``pytest_atom.spec.load``), that
    module, and none for the package's own ``__init__``."""
    parts = module.split(".")
    if parts[0] == "atom_cli":
        return "atom_cli"
    if parts[0] != "pytest_atom":
        return None
    node = ".".join(parts[:3])
    if node in _split_packages():
        return None  # the package's __init__: a docstring, in no layer
    if len(parts) > 2 and ".".join(parts[:2]) in _split_packages():
        return node
    return ".".join(parts[:2]) if len(parts) > 1 else "pytest_atom"


@functools.cache
def importlinter() -> dict[str, Any]:
    """pyproject.toml's ``[tool.importlinter]``, read once."""
    text = (PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8")
    settings: dict[str, Any] = tomlkit.parse(text).unwrap()["tool"]["importlinter"]
    return settings


def _layer_lines() -> list[str]:
    """The layers contract's lines, top first, as written."""
    contracts: list[dict[str, Any]] = importlinter()["contracts"]
    (layers,) = (c["layers"] for c in contracts if c["type"] == "layers")
    return [str(layer) for layer in layers]


def _open() -> set[str]:
    """The layers' siblings that may import each other (declared with ":")."""
    return {name.strip() for line in _layer_lines() if ":" in line for name in line.split(":")}


@functools.cache
def _split_packages() -> frozenset[str]:
    """The packages whose modules sit in different layers (the spec's loader above the
    checks, its values below)."""
    return frozenset(
        name.rpartition(".")[0]
        for layer in declared_layers()
        for name in layer
        if name.count(".") > 1
    )


def _every_import(tree: ast.Module, module: str, is_package: bool) -> Iterator[str]:
    """Every module a module may import, at load, later in a function, or for a type checker
    only (under ``TYPE_CHECKING``): a name the types read is a dependency of the design too,
    as `lint-imports` counts it (``exclude_type_checking_imports = false``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = module.split(".")[: None if is_package else -1]
            if node.level:
                base = base[: len(base) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            yield target
            yield from (f"{target}.{alias.name}" for alias in node.names)


def every_import_graph() -> dict[str, set[str]]:
    """Each module and the modules it imports, in functions and under TYPE_CHECKING too."""
    modules: dict[str, Path] = {}
    for root in ROOTS:
        for path in root.rglob("*.py"):
            parts = path.relative_to(root.parent).with_suffix("").parts
            modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        targets = graph.setdefault(module, set())
        for name in _every_import(tree, module, path.name == "__init__.py"):
            while name and name not in modules:  # `from pkg.mod import name`: pkg.mod
                name = name.rpartition(".")[0]
            if name and name != module and not module.startswith(f"{name}."):
                targets.add(name)
    return graph


def package_graph() -> dict[str, set[str]]:
    """Modules collapsed into their layer nodes; an edge for each import between two."""
    graph: dict[str, set[str]] = {}
    for module, targets in every_import_graph().items():
        source = _node(module)
        if source is None:  # a split package's own __init__ (it imports nothing)
            assert not targets, module
            continue
        graph.setdefault(source, set()).update(
            node for node in map(_node, targets) if node is not None and node != source
        )
    return graph


def declared_layers() -> list[set[str]]:
    """The layers pyproject.toml's import-linter contract declares, top first."""
    # "a | b": independent siblings; "a : b": siblings that may import each other.
    return [{name.strip() for name in re.split(r"[|:]", line)} for line in _layer_lines()]


def test_the_packages_import_each_other_in_no_cycle() -> None:
    """Lazy imports count: a cycle closed in a function is still a cycle of concerns."""
    assert cycles(package_graph()) == []


def test_no_module_imports_itself_back_even_in_a_function() -> None:
    """`checks.builtin` and `checks.trajectory` once did, through a lazy import."""
    assert cycles(every_import_graph()) == []


def test_every_package_and_top_level_module_has_a_layer() -> None:
    declared = set().union(*declared_layers())
    assert set(package_graph()) - {"pytest_atom"} == declared


def test_each_layer_imports_only_the_layers_below_it() -> None:
    """What `lint-imports` checks, read from the source here too: the order holds even where
    import-linter is not installed."""
    rank = {name: n for n, layer in enumerate(declared_layers()) for name in layer}
    open_ = _open()
    graph = package_graph()
    upward = sorted(
        (source, target)
        for source, targets in graph.items()
        for target in targets
        if source in rank
        and target in rank
        and (rank[target] < rank[source] or (rank[target] == rank[source] and source not in open_))
    )
    assert upward == []


def test_the_package_graph_checker_sees_lazy_and_type_only_imports() -> None:
    tree = ast.parse("def f():\n    from pytest_atom.run import harness\n")
    assert "pytest_atom.run.harness" in set(_every_import(tree, "pytest_atom.spec.x", False))
    typed = ast.parse("if TYPE_CHECKING:\n    from pytest_atom.run import harness\n")
    assert "pytest_atom.run.harness" in set(_every_import(typed, "pytest_atom.spec.x", False))


def test_import_linter_counts_type_only_imports() -> None:
    """The contract the issue asked for: no import hides from the layers under TYPE_CHECKING."""
    assert importlinter()["exclude_type_checking_imports"] is False


# --- sizes: no module over 600 lines, no function over 60 ------------------------------------

MODULE_LINES = 600
FUNCTION_LINES = 60

#: Modules and functions allowed over the limits, each with why. Only declarative tables
#: qualify (a table of options, a schema): their length is their content, and a split
#: would scatter one declaration over files. Keys: a module's path from the repository's
#: root, or ``path::function``.
DECLARATIVE_TABLES: dict[str, str] = {
    "pytest_atom/settings/options.py": "the option table: one row per setting, each with its "
    "help text (history, cache, calibration and thresholds added seven)",
}


def sizes(root: Path, base: Path = PACKAGE.parent) -> Iterator[tuple[str, int, int]]:
    """Each module (``path``) and function (``path::name``, methods and nested functions
    too) under `root`, named from `base`, with its line count: a function's from its ``def`` (decorators not
    counted) to its last line, docstring included; a module's, every line of the file."""
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        where = path.relative_to(base).as_posix()
        yield where, len(text.splitlines()), MODULE_LINES
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                assert node.end_lineno is not None
                count = node.end_lineno - node.lineno + 1
                yield f"{where}::{node.name}", count, FUNCTION_LINES


def test_no_module_over_600_lines_and_no_function_over_60() -> None:
    """Split a large one along its concerns (what it reads, checks, builds, renders), not
    at a line count; a declarative table alone may go in `DECLARATIVE_TABLES`."""
    over = [
        f"{name}: {count} lines (limit {limit})"
        for root in ROOTS
        for name, count, limit in sizes(root)
        if count > limit and name not in DECLARATIVE_TABLES
    ]
    assert over == []


def test_every_size_exception_is_still_over_its_limit() -> None:
    """An entry that fits again is stale: removed, it lets no other growth through."""
    measured = {name: (count, limit) for root in ROOTS for name, count, limit in sizes(root)}
    stale = [
        name
        for name in DECLARATIVE_TABLES
        if name not in measured or measured[name][0] <= measured[name][1]
    ]
    assert stale == []


def test_the_size_checker_counts_a_function_from_def_to_its_last_line(tmp_path: Path) -> None:
    package = tmp_path / "pytest_atom"
    package.mkdir()
    body = "".join(f"    x{n} = {n}\n" for n in range(FUNCTION_LINES))
    (package / "long.py").write_text(f"@decorated\ndef f():\n{body}\n", encoding="utf-8")
    found = {name: count for name, count, _ in sizes(package, tmp_path)}
    # The decorator is not the function's; the blank line after it is the module's.
    assert found == {"pytest_atom/long.py": 63, "pytest_atom/long.py::f": FUNCTION_LINES + 1}


# --- parameters: no function takes more than 8 --------------------------------------------

PARAMETERS = 8

#: Functions allowed more parameters, each with why. Keys: ``path::Qualified.name``.
MANY_PARAMETERS: dict[str, str] = {
    # Seed 001's public signature (`pytest_atom.legacy.AtomRuntime`): kept as users call it.
    "pytest_atom/loop/runtime.py::AtomRuntime.__init__": "the seed-era public API",
}


def _functions(
    tree: ast.AST, prefix: str = ""
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function under `tree` with its qualified name (``Class.method``, ``f.inner``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield f"{prefix}{node.name}", node
            yield from _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")


def parameter_counts(root: Path, base: Path = PACKAGE.parent) -> Iterator[tuple[str, int]]:
    """Each function under `root` (``path::Qualified.name``) with its parameters: every
    one but ``self`` and ``cls``, keyword-only ones too; ``*args`` and ``**kwargs`` count
    one each."""
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(base).as_posix()
        for name, node in _functions(ast.parse(path.read_text(encoding="utf-8"))):
            args = node.args
            named = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
            count = sum(1 for a in named if a not in ("self", "cls"))
            yield f"{where}::{name}", count + (args.vararg is not None) + (args.kwarg is not None)


def test_no_function_takes_more_than_8_parameters() -> None:
    """More than that is a concept without a name: pass a value object (`AgentSession`,
    `RunScope`) that the callers build once."""
    over = [
        f"{name}: {count} parameters (limit {PARAMETERS})"
        for root in ROOTS
        for name, count in parameter_counts(root)
        if count > PARAMETERS and name not in MANY_PARAMETERS
    ]
    assert over == []


def test_every_parameter_exception_is_still_over_the_limit() -> None:
    measured = dict(pair for root in ROOTS for pair in parameter_counts(root))
    stale = [n for n in MANY_PARAMETERS if measured.get(n, 0) <= PARAMETERS]
    assert stale == []


def test_the_parameter_checker_counts_keywords_and_star_arguments_but_not_self(
    tmp_path: Path,
) -> None:
    package = tmp_path / "pytest_atom"
    package.mkdir()
    (package / "wide.py").write_text(
        "def f(a, /, b, *args, c, **kwargs):\n"
        "    def inner(x): ...\n"
        "class C:\n"
        "    def m(self, a, *, b): ...\n"
        "    @classmethod\n"
        "    def k(cls): ...\n",
        encoding="utf-8",
    )
    found = dict(parameter_counts(package, tmp_path))
    assert found == {
        "pytest_atom/wide.py::f": 5,
        "pytest_atom/wide.py::f.inner": 1,
        "pytest_atom/wide.py::C.m": 2,
        "pytest_atom/wide.py::C.k": 0,
    }
