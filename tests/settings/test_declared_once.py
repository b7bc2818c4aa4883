"""A setting's name appears in one table: the fields of `RunSettings` (settings/options.py).

The modules that turn settings into options, ini keys, config keys and per-test settings
read the rows; none spells a setting's name, its ``--atom-NAME`` / ``--NAME`` flag or its
``atom_NAME`` ini key itself, so adding a setting is one field, and no copy can drift."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path
from typing import get_args

import pytest
from _pytest.config.argparsing import Parser

from pytest_atom import plugin
from pytest_atom.settings.config import _KNOWN_KEYS
from pytest_atom.settings.options import (
    CONFIG_SETTINGS,
    OPTIONS,
    PER_TEST,
    Kind,
    RunSettings,
)

REPO = Path(__file__).resolve().parents[2]

#: The plumbing of settings: each reads the rows and must name no setting itself.
PLUMBING = [
    "pytest_atom/plugin.py",
    "pytest_atom/pytest/settings.py",
    "pytest_atom/settings/resolved.py",
    "pytest_atom/settings/config.py",
    "pytest_atom/settings/output_paths.py",
]
#: `atom run`'s modules: its option declarations only (the command's body is the suite's).
RUN_DECLARATIONS = ("setting_options", "click_type", "SettingType")


def spellings() -> dict[str, str]:
    """Every way a setting is spelled (name, both flags, ini key), to its name; a kind of
    value that shares a setting's name (``paths``) is a kind, not the setting."""
    found = {}
    for option in OPTIONS:
        for spelling in (option.name, option.pytest_flag, option.run_flag, option.ini_name):
            found[spelling] = option.name
    for kind in get_args(Kind):
        found.pop(kind, None)
    return found


def named(tree: ast.AST, names: dict[str, str]) -> list[tuple[int, str]]:
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in names
    ]


def run_declarations() -> ast.Module:
    """atom_cli/run_cmd.py and the option plumbing it takes from atom_cli/common.py, without
    the bodies of their functions, save the option plumbing's; decorators (the `run`
    command's options) are kept."""
    tree = ast.Module(
        body=[
            node
            for name in ("run_cmd.py", "common.py")
            for node in ast.parse((REPO / "atom_cli" / name).read_text(encoding="utf-8")).body
        ],
        type_ignores=[],
    )
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name not in RUN_DECLARATIONS:
            node.body = [ast.Pass()]
    return tree


@pytest.mark.parametrize("module", PLUMBING)
def test_the_plumbing_names_no_setting(module: str) -> None:
    tree = ast.parse((REPO / module).read_text(encoding="utf-8"))
    assert named(tree, spellings()) == []


def test_atom_runs_options_name_no_setting() -> None:
    assert named(run_declarations(), spellings()) == []


def test_the_check_finds_a_setting_spelled_out() -> None:
    """The check itself: each spelling is found, in a call, a tuple and an f-string's
    neighbour alike, and a kind of value is not taken for a setting."""
    source = (
        "PER = ('record_mode', 'match')\n"
        "group.addoption('--atom-max-cost-usd')\n"
        "click.option('--max-cost-usd')\n"
        "config.getini('atom_keep_runs')\n"
        "if option.kind == 'paths': pass\n"
    )
    found = [value for _, value in named(ast.parse(source), spellings())]
    assert found == [
        "record_mode",
        "match",
        "--atom-max-cost-usd",
        "--max-cost-usd",
        "atom_keep_runs",
    ]


def test_each_field_is_one_row() -> None:
    """The table is `RunSettings` itself: every field has its row, named for it."""
    fields = dataclasses.fields(RunSettings)
    assert [o.name for o in OPTIONS] == [f.name for f in fields]
    assert all(o.name and (o.parser or o.choices) for o in OPTIONS)


def test_per_test_settings_are_the_rows_scoped_to_a_test() -> None:
    assert PER_TEST == tuple(o.name for o in OPTIONS if o.scope == "test")
    assert "record_mode" in PER_TEST and "runs_dir" not in PER_TEST


def test_the_marker_lists_the_per_test_settings(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfigure()
    line = next(m for m in config.getini("markers") if m.startswith("atom("))
    assert f"({', '.join(PER_TEST)})" in line


def test_the_config_file_takes_the_rows_a_config_may_set() -> None:
    own = {"version", "tools_dirs", "prompt_paths", "timeout", "model", "limits", "pass_env"}
    assert set(_KNOWN_KEYS) == own | set(CONFIG_SETTINGS)
    assert set(CONFIG_SETTINGS) == {o.name for o in OPTIONS if o.in_config}


def test_the_ini_file_takes_the_rows_an_ini_may_set() -> None:
    parser = Parser(_ispytest=True)
    plugin.pytest_addoption(parser)
    assert {n for n in parser._inidict if n.startswith("atom_")} == {
        o.ini_name for o in OPTIONS if o.in_ini
    }
