"""The option table (`pytest_atom.settings.options`) and the two front ends generated from it:
pytest's ``--atom-*`` options and ini keys, and ``atom run``'s click options, must say the
same thing, and a path on either command line is taken from where the command ran."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import Any

import click
import pytest
from _pytest.config.argparsing import Parser

from atom_cli.common import SettingType
from atom_cli.run_cmd import run
from pytest_atom import plugin
from pytest_atom.pytest.settings import pytest_harness
from pytest_atom.settings.options import (
    BY_NAME,
    CONFIG_SETTINGS,
    INI_NAMES,
    INI_SETTINGS,
    OPTIONS,
    Option,
    RunSettings,
    options_markdown,
)
from pytest_atom.settings.resolved import from_here
from tests.sandbox_helpers import allowed

COMMAND_LINE = [o for o in OPTIONS if o.command_line]


def _pytest_parser() -> Parser:
    parser = Parser(_ispytest=True)
    plugin.pytest_addoption(parser)
    return parser


def _pytest_options() -> dict[str, Any]:
    """pytest's ``--atom-*`` options by name (``--atom`` and ``--atom-config``, the file
    the settings are read from, are no settings)."""
    group = _pytest_parser().getgroup("atom")
    return {
        o.names()[0]: o for o in group.options if o.names()[0] not in ("--atom", "--atom-config")
    }


def _run_options() -> dict[str, click.Option]:
    return {p.opts[0]: p for p in run.params if isinstance(p, click.Option)}


def test_every_setting_has_one_row() -> None:
    names = [o.name for o in OPTIONS]
    assert len(names) == len(set(names))
    assert names == [f.name for f in dataclasses.fields(RunSettings)]
    assert INI_SETTINGS == tuple(o.name for o in OPTIONS if o.in_ini)
    assert CONFIG_SETTINGS == tuple(o.name for o in OPTIONS if o.in_config)


@pytest.mark.parametrize("option", COMMAND_LINE, ids=lambda o: o.name)
def test_pytest_option_is_its_row(option: Option) -> None:
    made = _pytest_options()[option.pytest_flag]
    attrs = made.attrs()
    assert made.dest == f"atom_{option.name}" and attrs["default"] is None
    assert attrs["help"].replace("%%", "%") == option.help
    assert attrs.get("metavar") == option.metavar
    assert tuple(attrs.get("choices") or ()) == option.choices
    # pytest 8.0 gives the option's own keywords, later ones argparse's action's attributes.
    flag = attrs.get("action") == "store_true" or (attrs.get("nargs"), attrs.get("const")) == (
        0,
        True,
    )
    assert flag == (option.kind == "flag")
    # A value that is no choice, no flag and no path is checked by its setting's parser.
    typed = not (option.choices or option.kind in ("flag", "path"))
    assert (attrs.get("type") is not None) == typed


@pytest.mark.parametrize("option", COMMAND_LINE, ids=lambda o: o.name)
def test_atom_run_option_is_its_row(option: Option) -> None:
    made = _run_options()[option.run_flag]
    assert made.opts == [option.run_flag] and made.name == option.name
    assert made.help == option.help
    assert made.is_flag == (option.kind == "flag")
    if option.choices:
        assert isinstance(made.type, click.Choice) and tuple(made.type.choices) == option.choices
    elif option.path:
        assert isinstance(made.type, click.Path)
        assert (made.type.file_okay, made.type.dir_okay) == (
            option.path == "file",
            option.path == "dir",
        )
        assert made.type.exists == option.exists
        assert made.metavar is None  # click's own: DIRECTORY or FILE
    elif option.kind != "flag":
        assert isinstance(made.type, SettingType) and made.type.option is option
        assert made.metavar == option.metavar


def test_both_command_lines_offer_the_same_settings() -> None:
    pytest_names = {flag.removeprefix("--atom-") for flag in _pytest_options()}
    run_names = {flag.removeprefix("--") for flag in _run_options()}
    assert pytest_names == {o.run_flag.removeprefix("--") for o in COMMAND_LINE}
    assert run_names - pytest_names == {"json", "config", "case"}  # atom run's own


def test_ini_keys_are_the_rows_that_files_may_set() -> None:
    inis = _pytest_parser()._inidict
    atom_keys = {name for name in inis if name.startswith("atom_")}
    assert atom_keys == {o.ini_name for o in OPTIONS if o.in_ini}
    for option in OPTIONS:
        if option.in_ini:
            help_text, kind, default = inis[option.ini_name][:3]
            assert help_text == option.ini_help
            # pytest before 8.3 keeps an untyped ini key's type as None: a string all the same.
            kind = kind or "string"
            assert (kind, default) == (("paths", []) if option.kind == "paths" else ("string", ""))
    assert BY_NAME["threshold"].ini_help.startswith("default for --atom-threshold (")


@pytest.mark.parametrize(
    ("name", "value"), [("threshold", "1.5"), ("keep_runs_size", "lots"), ("repeat", "0")]
)
def test_a_bad_value_gets_the_same_fix_on_both_command_lines(name: str, value: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as under_pytest:
        plugin._setting(BY_NAME[name])(value)
    with pytest.raises(click.BadParameter) as under_run:
        SettingType(BY_NAME[name]).convert(value, None, None)
    assert str(under_pytest.value) == under_run.value.message
    assert str(under_pytest.value).endswith(f", not {value!r}")


def test_command_line_paths_are_taken_from_here(tmp_path: Path) -> None:
    given = {"runs_dir": "out", "report": Path("r"), "html": None, "threshold": 0.5}
    out = from_here(given, tmp_path / "sub")
    assert out == {
        "runs_dir": tmp_path / "sub" / "out",
        "report": tmp_path / "sub" / "r",
        "html": None,
        "threshold": 0.5,
    }
    assert from_here({"runs_dir": tmp_path / "abs"}, tmp_path / "sub")["runs_dir"] == (
        tmp_path / "abs"
    )


def test_pytest_takes_command_line_paths_from_the_invocation_folder(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Not from the rootdir: ``--atom-runs-dir out`` from ``sub`` means ``sub/out``."""
    pytester.makeini("[pytest]\natom_report = reports\n")
    sub = pytester.mkdir("sub")
    (sub / "old-run").mkdir()
    monkeypatch.chdir(sub)
    config = pytester.parseconfig(
        "--atom-runs-dir", "out", "--atom-html", "r.html", "--atom-resume", "old-run"
    )
    assert config.rootpath == pytester.path
    harness = pytest_harness(config)
    assert harness.runs_dir == sub / "out"
    assert harness.settings.output("html", harness.root) == sub / "r.html"
    assert harness.settings.resume == sub / "old-run"
    assert harness.report_dir == pytester.path / "reports"  # a file's path: the root's


def test_the_ini_file_names_are_pytests_own() -> None:
    """The one list that decides a project's root, in pytest's order of preference."""
    from pytest_atom.settings import project
    from pytest_atom.spec import confinement as spec_paths

    assert INI_NAMES[:5] == (
        "pytest.toml",
        ".pytest.toml",
        "pytest.ini",
        ".pytest.ini",
        "pyproject.toml",
    )
    assert vars(project)["INI_NAMES"] is INI_NAMES and spec_paths._ROOT_FILES is INI_NAMES


def test_a_subfolder_with_a_pytest_toml_is_a_project_root(tmp_path: Path) -> None:
    """A spec's project root and pytest's rootdir now agree on `pytest.toml` (the spec
    loader's list used to lack it, so a workspace could reach outside such a project)."""
    from pytest_atom.settings.project import pytest_rootdir
    from pytest_atom.spec.confinement import project_root

    (tmp_path / "setup.cfg").write_text("[metadata]\n")
    (tmp_path / "app" / "specs").mkdir(parents=True)
    (tmp_path / "app" / "pytest.toml").write_text("[pytest]\n")
    folder = tmp_path / "app" / "specs"
    assert project_root(folder) == pytest_rootdir(folder) == tmp_path / "app"


def test_the_markdown_table_has_a_row_per_setting() -> None:
    table = options_markdown().splitlines()
    assert table[0].startswith("| pytest option | ini file")
    assert len(table) == 2 + len(OPTIONS)
    runs_dir = next(line for line in table if "`--atom-runs-dir`" in line)
    assert "`atom_runs_dir` / `runs_dir:`" in runs_dir and "`--runs-dir`" in runs_dir
    paths = next(line for line in table if "`atom_paths`" in line)
    assert paths.startswith("| - |")  # files only
    record = next(line for line in table if "`--atom-record-mode`" in line)
    assert "none \\| once" in record  # choices, the pipe escaped for Markdown


@pytest.mark.slow
def test_runs_dir_from_a_subfolder_under_atom_run(
    tmp_path_factory: pytest.TempPathFactory, claude_bin: Path
) -> None:
    """`atom run --runs-dir out` from `sub` runs the spec into `sub/out`: the shared `atom
    run` of tests/sandbox_helpers.py. pytest's own: `test_pytest_takes_command_line_paths_
    from_the_invocation_folder`, above."""
    run = allowed(tmp_path_factory, claude_bin)
    assert "run dir: out/task-" in run.output, run.output  # shown from where it ran
    assert any((run.folder / "sub" / "out").iterdir())
    assert not (run.folder / "out").exists()
