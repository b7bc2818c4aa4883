"""A built-in check kind is one module: the registry, the spec schema and the loader take
every kind from `pytest_atom.checks.kinds`, and nothing else names one."""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

import pytest_atom.checks.kinds as kinds_package
from pytest_atom.checks.builtin import default_registry, needs_sandbox
from pytest_atom.checks.kinds import BUILTIN_KINDS, KINDS
from pytest_atom.checks.schema import SCHEMA_FILE, schema_text
from pytest_atom.spec.types import Check
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import write

KIND_MODULES = sorted(m.name for m in pkgutil.iter_modules(kinds_package.__path__))
PACKAGE = Path(kinds_package.__file__).parents[2]
#: Where a kind was once dispatched on by name: the spec's loader and types, the checks and
#: the results. (Elsewhere "command" also names a tool's input field.)
READERS = ("spec", "checks", "results")
SOURCES = {
    path: ast.parse(path.read_text(encoding="utf-8"))
    for folder in READERS
    for path in sorted((PACKAGE / folder).rglob("*.py"))
}


def test_every_module_of_the_kinds_folder_is_one_registered_kind() -> None:
    assert KIND_MODULES == sorted(kind.name for kind in BUILTIN_KINDS)
    registry = default_registry()
    assert registry.kinds() == KIND_MODULES
    for name in KIND_MODULES:
        module = importlib.import_module(f"pytest_atom.checks.kinds.{name}")
        assert module.KIND.name == name
        assert registry.get(name) is module.KIND is KINDS[name]


def test_the_shipped_spec_schema_lists_exactly_the_kinds_fragments() -> None:
    """Written by `python -m pytest_atom.checks.schema`, never by hand."""
    text = SCHEMA_FILE.read_text(encoding="utf-8")
    shipped = json.loads(text)
    assert shipped == json.loads(schema_text(text))
    check = shipped["$defs"]["check"]["properties"]
    assert list(check) == [kind.name for kind in BUILTIN_KINDS]
    for kind in BUILTIN_KINDS:
        Draft202012Validator.check_schema(dict(kind.schema))


def test_writing_the_schema_rewrites_the_check_kinds_alone() -> None:
    text = SCHEMA_FILE.read_text(encoding="utf-8")
    assert schema_text(text) == text  # the file is exactly what the kinds write
    stale = text.replace('"file_absent": {', '"file_gone": {', 1)
    assert stale != text and schema_text(stale) == text
    rest = text.split('"check": {')[0]
    assert schema_text(stale).startswith(rest)


@pytest.mark.parametrize("name", KIND_MODULES)
def test_no_file_outside_its_module_names_a_built_in_kind_in_code(name: str) -> None:
    """A kind's name as a string literal appears in its own module only (and in the
    schema the kinds write): no dispatch on it is left in the loader, `Check` or reports.
    Docstrings and messages that mention a kind are prose, not dispatch, so only
    comparisons, dict keys and subscripts count."""
    offenders = []
    for path, tree in SOURCES.items():
        if path.parent.name == "kinds" and path.stem == name:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                values = [node.left, *node.comparators]
            elif isinstance(node, ast.Dict):
                values = list(filter(None, node.keys))
            else:
                continue
            if any(isinstance(v, ast.Constant) and v.value == name for v in values):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert offenders == []


def test_a_loaded_check_is_built_and_labelled_by_its_kind(tmp_path: Path) -> None:
    path = write(
        tmp_path / "s.atom.yaml",
        "prompt: p\naccept:\n  - command: {run: make, unsandboxed: true, reason: host db}\n"
        "  - tool_used: {name: Bash, max: 0}\n",
    )
    command, tool_used = load_spec(path).accept
    assert command.params == {
        "run": "make",
        "exit_code": 0,
        "output": None,
        "timeout": 120.0,
        "unsandboxed": True,
        "reason": "host db",
    }
    assert command.describe() == "command `make` exits 0 (unsandboxed)"
    assert tool_used.describe() == "tool_used Bash never"
    # The label is how the check reads, not what it is: a hand-made check equals it.
    assert tool_used == Check("tool_used", dict(tool_used.params), tool_used.line)


def test_whether_checks_need_the_sandbox_is_asked_of_each_kind() -> None:
    sandboxed = Check("command", {"run": "make"}, 1)
    outside = Check("command", {"run": "make", "unsandboxed": True, "reason": "db"}, 1)
    files = Check("file_exists", {"path": "a"}, 1)
    plugin = Check("word_count", {"value": 3}, 1)
    assert needs_sandbox([files, sandboxed])
    assert not needs_sandbox([files, outside])
    assert needs_sandbox([plugin])  # a plugin's kind may call run_shell
    assert not needs_sandbox([])
