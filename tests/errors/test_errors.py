"""One exception tree: every class pytest-atom raises derives from `AtomError`, the tree at the
top of `pytest_atom.errors` is the one the classes form, and front ends catch by class.

The classes are found by importing every module of the package, so an exception class a
new module adds cannot escape the tree unnoticed. Nothing here starts Claude Code.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import atom_cli
import pytest_atom
from pytest_atom import errors
from pytest_atom.errors import (
    AtomError,
    CassetteError,
    ClaudeNotFoundError,
    ConfigError,
    FileError,
    HarnessError,
    PromptNotFoundError,
    RecordingError,
    SandboxUnavailableError,
    ScriptError,
    SettingsError,
    SpecError,
    WorkspaceError,
)


def _exception_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined in pytest_atom and atom_cli, by qualified name."""
    found: dict[str, type[BaseException]] = {}
    for package in (pytest_atom, atom_cli):
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            module = importlib.import_module(info.name)
            for name, value in vars(module).items():
                if (
                    inspect.isclass(value)
                    and issubclass(value, BaseException)
                    and value.__module__ == module.__name__
                ):
                    found[f"{module.__name__}.{name}"] = value
    return found


def test_every_exception_class_in_the_package_derives_from_atom_error() -> None:
    found = _exception_classes()
    # the walk reaches the tree, the signals kept beside their raisers, and the CLI
    assert {
        "pytest_atom.errors.SpecError",
        "pytest_atom.gateway.server.AbortReply",
        "pytest_atom.run.execution.SetupFailed",
        "pytest_atom.pytest.items.SpecFailed",
        "atom_cli.common.ContentError",
    } <= set(found)
    # atom_cli's own are click's exits (exit status and "Error: …"), not errors to catch
    escaped = [
        name
        for name, cls in found.items()
        if not issubclass(cls, AtomError) and not issubclass(cls, click.ClickException)
    ]
    assert escaped == []


def test_every_error_is_public_from_the_errors_module() -> None:
    defined = set(errors.__all__)
    assert "pytest_atom.errors" in pytest_atom.PUBLIC_MODULES  # all of them public, there
    assert {n for n in pytest_atom.__all__ if n in defined} == {"AtomError"}  # the root alone


def _drawing() -> dict[str, str | None]:
    """Each class the tree at the top of `pytest_atom.errors` draws, with its drawn parent."""
    doc = errors.__doc__ or ""
    parents: dict[str, str | None] = {}
    stack: list[tuple[int, str]] = []  # (column of the name, name) of the open branches
    for line in doc.splitlines():
        match = re.match(r"^    ([\s│]*[├└]── )?(\w+)", line)
        if match is None or not match.group(2)[0].isupper():
            continue
        column = match.start(2)
        while stack and stack[-1][0] >= column:
            stack.pop()
        parents[match.group(2)] = stack[-1][1] if stack else None
        stack.append((column, match.group(2)))
    return parents


def test_the_drawn_tree_is_the_tree_the_classes_form() -> None:
    drawn = _drawing()
    assert set(drawn) == set(errors.__all__)  # every class drawn once, none left out
    assert drawn["AtomError"] is None
    for name, parent in drawn.items():
        if parent is not None:
            assert getattr(errors, parent) in getattr(errors, name).__bases__, name


@pytest.mark.parametrize(
    ("cls", "base"),
    [
        (SettingsError, ValueError),  # parse_setting's callers catch ValueError
        (ConfigError, FileError),
        (ConfigError, SettingsError),  # the settings cannot be used, whichever file said so
        (ClaudeNotFoundError, FileNotFoundError),
        (SandboxUnavailableError, FileNotFoundError),
        (PromptNotFoundError, FileNotFoundError),
        (WorkspaceError, OSError),
        (errors.EnvError, ValueError),
        (errors.SessionError, ValueError),
        (errors.SpecialFileError, OSError),
        (errors.LinkOutsideError, OSError),
    ],
)
def test_an_error_keeps_the_standard_base_its_callers_catch(
    cls: type[Exception], base: type[Exception]
) -> None:
    assert issubclass(cls, base) and issubclass(cls, AtomError)


def test_the_harness_errors_are_one_class_and_oserror() -> None:
    from pytest_atom.run.execution import HARNESS_ERRORS

    assert HARNESS_ERRORS == (HarnessError, OSError)
    # what the tuple named one by one before is still caught
    for cls in (CassetteError, RecordingError, ScriptError, ClaudeNotFoundError):
        assert issubclass(cls, HARNESS_ERRORS)


def test_messages_are_the_ones_the_classes_gave_before(tmp_path: Path) -> None:
    spec = tmp_path / "a.atom.yaml"
    one = SpecError("unknown key 'promt'", spec, line=2, column=1, suggestion="prompt")
    one.more = (SpecError("bad value", spec, line=5),)
    assert str(one) == (
        f"unknown key 'promt' at {spec}:2:1 — did you mean 'prompt'?\nbad value at {spec}:5"
    )
    config = ConfigError("'x' must be a number", tmp_path / "c.yaml", key="x", line=3)
    assert (str(config), config.key) == (f"'x' must be a number at {tmp_path / 'c.yaml'}:3", "x")
    missing = PromptNotFoundError("X.md", [tmp_path])
    assert str(missing) == f"Prompt X.md not found; searched:\n  - {tmp_path}"
    assert (missing.prompt_name, missing.searched) == ("X.md", [tmp_path])


def test_a_front_end_catches_a_broken_config_file_by_its_settings_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`atom run` catches `SettingsError`: a broken `.atom/config.yaml` (a `ConfigError`) is
    the file's fault, told in one line, never a traceback."""
    from atom_cli.main import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / ".atom").mkdir()
    (tmp_path / ".atom" / "config.yaml").write_text('version: "1"\nkeep_runs: many\n')
    (tmp_path / "x.atom.yaml").write_text("name: x\nprompt: p\nscript: s.yaml\n")
    result = CliRunner().invoke(main, ["run", "x.atom.yaml"])
    assert isinstance(result.exception, SystemExit) and result.exit_code == 2
    assert result.output.startswith("Error: 'keep_runs' = 'many': use a whole number")
    assert result.output.rstrip().endswith(f"at {Path('.atom/config.yaml')}:2")


def test_catching_atom_error_catches_every_concept_and_nothing_else() -> None:
    def raising(exc: Exception) -> str:
        try:
            raise exc
        except AtomError as caught:
            return type(caught).__name__

    assert raising(ScriptError("s")) == "ScriptError"
    assert raising(SettingsError("v")) == "SettingsError"
    with pytest.raises(ValueError, match="plain"):
        raising(ValueError("plain"))  # a plain ValueError is not ours
