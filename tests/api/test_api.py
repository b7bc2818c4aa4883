"""The public API is exactly `pytest_atom.__all__` and each public module's `__all__`, and
importing it stays cheap."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import pytest_atom


def test_every_public_name_imports() -> None:
    assert set(pytest_atom.__all__) == set(pytest_atom._EXPORTS)
    for name in pytest_atom.__all__:
        assert getattr(pytest_atom, name) is not None, name
    for module_name in pytest_atom.PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            assert getattr(module, name) is not None, f"{module_name}.{name}"


def _type_checking_imports(module_name: str) -> dict[str, str]:
    """Each name the module imports under ``if TYPE_CHECKING:``, with its module."""
    module = importlib.import_module(module_name)
    assert module.__file__ is not None
    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    block = next(
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    )
    found = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module is not None
        for alias in node.names:
            found[alias.name] = f"{node.module}.{alias.name}"
    return found


@pytest.mark.parametrize(
    "module_name",
    [
        "pytest_atom",
        *(
            name
            for name in pytest_atom.PUBLIC_MODULES
            if hasattr(importlib.import_module(name), "_EXPORTS")
        ),
    ],
)
def test_the_names_a_package_loads_on_first_use_are_the_names_type_checkers_see(
    module_name: str,
) -> None:
    """`_EXPORTS` (what `__getattr__` loads) and the TYPE_CHECKING imports name the same
    things from the same modules: the one list a package keeps twice cannot drift."""
    module = importlib.import_module(module_name)
    seen = _type_checking_imports(module_name)
    legacy = getattr(module, "_LEGACY", {})
    eager = {name for name in module.__all__ if name in vars(module) and name not in seen}
    lazy = {**module._EXPORTS, **legacy}
    top = module_name == "pytest_atom"  # where a name is its module (`hooks`), the module
    expected = {
        name: f"{module_name}.{where}"
        if top and where == name
        else f"{where}.{name}"
        if where.startswith("pytest_atom.")
        else f"{module_name}.{where}.{name}"
        for name, where in lazy.items()
        if name not in eager
    }
    assert seen == expected


def test_the_loop_names_are_legacy_and_still_import_from_the_package() -> None:
    import pytest_atom.legacy

    loop = ("AtomRuntime", "RetryManager", "IterationHistory", "ClaudeRunner")
    assert set(pytest_atom.legacy.__all__) == set(loop)
    for name in loop:
        assert name not in pytest_atom.__all__
        assert getattr(pytest_atom, name) is getattr(pytest_atom.legacy, name)  # no warning
    assert "PromptLoader" in pytest_atom.__all__  # the prompts are not the loop's alone


def test_a_name_that_moved_still_imports_from_the_top_level_with_a_warning() -> None:
    from pytest_atom import errors, gateway

    with pytest.warns(DeprecationWarning, match=r"from pytest_atom\.errors import SpecError"):
        assert pytest_atom.SpecError is errors.SpecError
    with pytest.warns(DeprecationWarning, match=r"pytest_atom\.gateway"):
        assert pytest_atom.Gateway is gateway.Gateway
    for name in pytest_atom._MOVED:
        assert name not in pytest_atom.__all__
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        pytest_atom.Nothing  # noqa: B018


def test_importing_a_tool_helper_does_not_load_the_harness() -> None:
    code = "import sys, pytest_atom.conversation; print(sorted(m for m in sys.modules if m in ('httpx', 'jsonschema', 'pytest_atom.run.execution')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_importing_a_public_module_loads_none_of_its_names() -> None:
    """A public package's names load on first use: importing one of its modules (as the
    harness does at collection) does not load its other modules."""
    code = (
        "import sys, pytest_atom.history, pytest_atom.replay, pytest_atom.calibration, "
        "pytest_atom.datasets, pytest_atom.cost\n"
        "print(sorted(m for m in sys.modules if m.count('.') > 1 and m.startswith('pytest_atom')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
