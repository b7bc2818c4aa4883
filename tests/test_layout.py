"""The package's shape: no import cycle among its modules, and data that imports no machinery.

Read from the source, not by importing it: an import inside a function or under
``TYPE_CHECKING`` runs late or never, so only the imports a module runs when it loads can
close a cycle. A cycle makes the load order matter, and a module half-loaded when the
other one reads it is the bug that follows.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

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


def test_results_and_specs_import_no_machinery() -> None:
    """`model/` is data: it reads no agent, gateway, cassette, run or report machinery."""
    graph = import_graph()
    machinery = ("agents.claude_code", "gateway", "cassettes", "run", "pytest", "judge")
    reached = {
        (module, target)
        for module in graph
        if module.startswith("pytest_atom.model.") and module != "pytest_atom.model.evalsuite"
        for target in graph[module]
        if target.removeprefix("pytest_atom.").startswith(machinery)
    }
    assert reached == set()
