"""The tests' own layout: test modules share code through helper modules only.

A test module that imports another runs that module's top level (and, under pytest's
rootdir imports, may load it a second time under another name); one that imports
`tests.conftest` loads the conftest twice, hooks and all. Helpers belong in tests/helpers.py
or a focused helper module beside it.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def imported_modules(source: str) -> set[str]:
    """Every module a source imports, at any depth (function-local imports included)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def forbidden(names: set[str]) -> list[str]:
    """The imports of a test module, a test file's module name or the conftest, sorted."""
    found = []
    for name in names:
        last = name.removeprefix("tests.")
        if name.startswith("tests.") and (last.startswith("test_") or last == "conftest"):
            found.append(name)
        elif name.startswith("test_") or name == "conftest":
            found.append(name)
    return sorted(found)


def test_no_test_module_imports_another_or_the_conftest() -> None:
    offenders = {
        path.name: bad
        for path in sorted(TESTS.rglob("*.py"))
        if (bad := forbidden(imported_modules(path.read_text(encoding="utf-8"))))
    }
    assert offenders == {}, "move what they share into tests/helpers.py (or a helper module)"


def test_the_check_sees_each_way_of_importing_a_test_module() -> None:
    source = (
        "from tests.test_cassette import post\n"
        "from tests import test_faults\n"
        "import tests.conftest\n"
        "def f():\n    from conftest import REPO\n"
        "from tests.helpers import bash\n"
        "import pytest\n"
    )
    assert forbidden(imported_modules(source)) == [
        "conftest",
        "tests.conftest",
        "tests.test_cassette",
        "tests.test_cassette.post",
        "tests.test_faults",
    ]
