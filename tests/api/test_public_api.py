"""The public API: `pytest_atom.__all__` and each public module's `__all__` are exactly what
the Python API page documents (the page is generated from them, by docs/hooks.py), the atom
loop's names are `pytest_atom.legacy`'s, every import the docs and examples show is of public
names, and a plugin author writes a check kind from the package's own names alone."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import pytest

import pytest_atom
import pytest_atom.legacy

REPO = Path(__file__).resolve().parents[2]


def _docs_hooks() -> ModuleType:
    """docs/hooks.py, loaded as mkdocs loads it (docs/ is no package)."""
    spec = importlib.util.spec_from_file_location("atom_docs_hooks", REPO / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("atom_docs_hooks", module)
    spec.loader.exec_module(module)
    return module


def _documented() -> dict[str, dict[str, str]]:
    """Each name the page's tables list, with what the page says of it, by where it imports
    from: "pytest_atom", each public module, and "legacy"."""
    page = _docs_hooks().python_api_page()
    top, rest = page.split("\n## Public modules\n")
    modules, legacy = rest.split("\n## Legacy\n")
    row = re.compile(r"^\| `(\w+)` \| (.*) \|$", re.M)
    found = {"pytest_atom": dict(row.findall(top)), "legacy": dict(row.findall(legacy))}
    for section in re.split(r"^### ", modules, flags=re.M)[1:]:
        name = section.split("`")[1]
        found[name] = dict(row.findall(section))
    return found


def test_all_is_exactly_the_names_the_python_api_page_documents() -> None:
    documented = _documented()
    assert sorted(documented.pop("pytest_atom")) == pytest_atom.__all__
    assert sorted(documented.pop("legacy")) == sorted(pytest_atom.legacy.__all__)
    shown = [
        m
        for m in pytest_atom.PUBLIC_MODULES
        if m not in ("pytest_atom.hooks", "pytest_atom.legacy")
    ]
    assert list(documented) == shown
    for name, names in documented.items():
        assert sorted(names) == sorted(importlib.import_module(name).__all__), name


def test_the_page_says_what_each_public_name_is() -> None:
    empty = [
        f"{where}.{name}"
        for where, names in _documented().items()
        for name, what in names.items()
        if not what.strip()
    ]
    assert empty == []


def test_the_page_is_generated_not_committed() -> None:
    assert not (REPO / "docs" / "reference" / "python-api.md").exists()
    assert "reference/python-api.md" in _docs_hooks().GENERATED


def test_every_public_name_imports_from_the_package() -> None:
    for name in pytest_atom.__all__:
        assert getattr(pytest_atom, name) is not None, name
    assert pytest_atom.hooks.pytest_atom_register_checks.__name__ == "pytest_atom_register_checks"


def test_a_plugin_writes_a_trajectory_check_with_the_public_names_alone(tmp_path: Path) -> None:
    from pytest_atom import Call, Check, CheckRegistry, CheckResult, Trajectory
    from pytest_atom.errors import CheckError

    def no_rm(check: Check, trajectory: Trajectory) -> CheckResult:
        if not trajectory.calls:
            raise CheckError("the agent made no calls")
        bad = [c.line() for c in trajectory.named("Bash") if "rm " in str(c.input)]
        return CheckResult(check, not bad, "no rm" if not bad else "rm called", "\n".join(bad))

    registry = CheckRegistry()
    registry.register_trajectory("no_rm", no_rm)
    check = Check("no_rm", {}, line=1)
    calls = (Call("Bash", {"command": "rm -f x"}, iteration=1, turn=1),)
    failed = registry.run(check, tmp_path, trajectory=Trajectory(calls, None))
    assert (failed.passed, failed.evidence) == (False, "iteration 1 turn 1: Bash rm -f x")
    empty = registry.run(check, tmp_path, trajectory=Trajectory((), None))
    assert (empty.passed, empty.evidence) == (False, "the agent made no calls")  # CheckError


# --- what the docs and examples import -------------------------------------------------------

_FENCE = re.compile(r"^( *)```(?:python|py)\n(.*?)^\1```", re.M | re.S)


def _shown_python() -> list[tuple[str, str]]:
    """Every Python text a reader copies: each ```python block of the docs' pages (and the
    README), and each module under examples/, with where it is."""
    found = []
    for page in sorted([REPO / "README.md", *(REPO / "docs").rglob("*.md")]):
        text = page.read_text(encoding="utf-8")
        for match in _FENCE.finditer(text):
            code = "\n".join(line[len(match.group(1)) :] for line in match.group(2).splitlines())
            line = text[: match.start()].count("\n") + 1
            found.append((f"{page.relative_to(REPO)}:{line}", code))
    for module in sorted((REPO / "examples").rglob("*.py")):
        found.append((str(module.relative_to(REPO)), module.read_text(encoding="utf-8")))
    found.append(
        (
            "docs/hooks.py:_LEGACY_EXAMPLE",
            _docs_hooks()._LEGACY_EXAMPLE.split("\n", 1)[1].rsplit("```", 1)[0],
        )
    )
    return found


def _public(module: str, name: str | None) -> bool:
    """Whether ``from module import name`` (``import module`` when name is None) is public."""
    if module == "pytest_atom":
        return name is None or name in pytest_atom.__all__
    if module not in pytest_atom.PUBLIC_MODULES:
        return False
    return name is None or name in importlib.import_module(module).__all__


def _private_imports(code: str) -> list[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:  # a sketch with `...` in it: read its import lines alone
        lines = [line for line in code.splitlines() if re.match(r"\s*(from|import) ", line)]
        tree = ast.parse("\n".join(line.strip() for line in lines))
    bad = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "pytest_atom":
            assert node.module is not None
            for alias in node.names:
                if f"{node.module}.{alias.name}" in pytest_atom.PUBLIC_MODULES:
                    continue  # `from pytest_atom import errors`: the public module itself
                if not _public(node.module, alias.name):
                    bad.append(f"from {node.module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "pytest_atom" and not _public(alias.name, None):
                    bad.append(f"import {alias.name}")
    return bad


def test_the_docs_and_examples_import_public_names_only() -> None:
    shown = _shown_python()
    assert any(where.startswith("examples/") for where, _ in shown)
    bad = [f"{where}: {line}" for where, code in shown for line in _private_imports(code)]
    assert bad == []


@pytest.mark.parametrize(
    ("code", "bad"),
    [
        ("from pytest_atom import run_spec, Spec", []),
        ("from pytest_atom.errors import SpecError", []),
        ("from pytest_atom import errors", []),
        ("import pytest_atom.history", []),
        (
            "from pytest_atom.gateway.scripted import draw_key",
            ["from pytest_atom.gateway.scripted import draw_key"],
        ),
        ("from pytest_atom import SpecError", ["from pytest_atom import SpecError"]),
        ("import pytest_atom.cost.spend", ["import pytest_atom.cost.spend"]),
        (
            "def f():\n    from pytest_atom.replay.cassette import Cassette\n    ...",
            ["from pytest_atom.replay.cassette import Cassette"],
        ),
    ],
)
def test_an_import_of_a_private_name_is_found(code: str, bad: list[str]) -> None:
    assert _private_imports(code) == bad
