"""The package's shape, where no linter states it.

The imports are `lint-imports`' ([tool.importlinter] in pyproject.toml: the five floors, no
cycle between siblings, what collecting specs and ``atom --help`` may load); the size of a
function is ruff's (``C901``, ``PLR0912``, ``PLR0913``, ``PLR0915`` in [tool.ruff.lint]).
What is left here: each concept's folder says what lives there, and the import contracts
count every import.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import tomlkit

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (ROOT / "pytest_atom", ROOT / "atom_cli")


def _importlinter() -> dict[str, Any]:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    settings: dict[str, Any] = tomlkit.parse(text).unwrap()["tool"]["importlinter"]
    return settings


def test_every_folder_says_what_lives_there() -> None:
    """One folder per concept, its ``__init__`` docstring saying what lives there and where
    to add things (docs/development.md)."""
    silent = sorted(
        init.parent.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for init in package.rglob("__init__.py")
        if not ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
    )
    assert silent == []


def test_the_import_contracts_count_type_only_and_lazy_imports() -> None:
    """A name a type checker reads is a dependency of the design too; import-linter counts
    imports inside functions always."""
    assert _importlinter()["exclude_type_checking_imports"] is False
