"""The public API: `pytest_atom.__all__` is exactly what the Python API page documents (the
page is generated from it, by docs/hooks.py), the seed-era names are `pytest_atom.legacy`'s,
and a plugin author writes a check kind from the package's own names alone."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

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


def _documented() -> tuple[dict[str, str], dict[str, str]]:
    """(public, legacy): each name the page's tables list, with what the page says of it."""
    page = _docs_hooks().python_api_page()
    public, legacy = page.split("\n## Legacy\n")
    row = re.compile(r"^\| `(\w+)` \| (.*) \|$", re.M)
    return dict(row.findall(public)), dict(row.findall(legacy))


def test_all_is_exactly_the_names_the_python_api_page_documents() -> None:
    public, legacy = _documented()
    assert sorted(public) == pytest_atom.__all__
    assert sorted(legacy) == sorted(pytest_atom.legacy.__all__)
    assert not set(public) & set(legacy)


def test_the_page_says_what_each_public_name_is() -> None:
    public, legacy = _documented()
    assert [name for name, what in {**public, **legacy}.items() if not what.strip()] == []


def test_the_page_is_generated_not_committed() -> None:
    assert not (REPO / "docs" / "reference" / "python-api.md").exists()
    assert "reference/python-api.md" in _docs_hooks().GENERATED


def test_every_public_name_imports_from_the_package() -> None:
    for name in pytest_atom.__all__:
        assert getattr(pytest_atom, name) is not None, name
    assert pytest_atom.hooks.pytest_atom_register_checks.__name__ == "pytest_atom_register_checks"


def test_a_plugin_writes_a_trajectory_check_with_the_public_names_alone(tmp_path: Path) -> None:
    from pytest_atom import Call, Check, CheckError, CheckRegistry, CheckResult, Trajectory

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
