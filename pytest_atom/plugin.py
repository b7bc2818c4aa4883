"""The pytest plugin's entry point: options, ini settings, the marker and the fixtures.

It is loaded into every pytest run of every project that installs pytest-atom, so it
imports no part of the harness. With ``--atom``, `pytest_configure` registers
`pytest_atom.pytest.session.AtomSession`, which collects specs and runs them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_atom.paths import SPEC_SUFFIX, display_path
from pytest_atom.settings.options import BY_NAME, INI_SETTINGS, OPTIONS, PER_TEST, Option
from pytest_atom.spec import workspaces

if TYPE_CHECKING:
    from pytest_atom.pytest.fixture import AtomFixture


def _setting(option: Option) -> Any:
    """An option's type: the setting's own parser, so a value means the same on the
    command line, in the ini file and in the config."""

    def parse(text: str) -> Any:
        try:
            return option.parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"{exc}, not {text!r}") from None

    return parse


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_atom import hooks

    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--atom`` and, from the option table (`pytest_atom.settings.options`), every setting's
    ``--atom-*`` option and ``atom_*`` ini key, each None when unset
    (`pytest_atom.settings.resolved` decides what wins)."""
    group = parser.getgroup("atom", "pytest-atom: Claude Code agent task specs")
    group.addoption(
        "--atom",
        action="store_true",
        dest="atom",
        default=False,
        help="collect *.atom.yaml specs and run each through the real Claude Code CLI.",
    )
    group.addoption(
        "--atom-config",
        dest="atom_config",
        default=None,
        metavar="PATH",
        help="project config (default: .atom/config.yaml here or above).",
    )
    for option in OPTIONS:
        if option.command_line:
            group.addoption(option.pytest_flag, **_argparse_options(option))
        if option.in_ini:
            _addini(parser, option)


def _argparse_options(option: Option) -> dict[str, Any]:
    """An option's argparse keywords; a path stays text until `settings.from_here` takes it
    from the invocation folder."""
    kw: dict[str, Any] = {
        "dest": option.ini_name,
        "default": None,
        "help": option.help.replace("%", "%%"),  # argparse formats help with %
    }
    if option.kind == "flag":
        kw["action"] = "store_true"
    elif option.choices:
        kw["choices"] = option.choices
    elif option.kind != "path":
        kw["type"] = _setting(option)
    if option.metavar:
        kw["metavar"] = option.metavar
    return kw


def _addini(parser: pytest.Parser, option: Option) -> None:
    if option.kind == "paths":
        parser.addini(option.ini_name, option.ini_help, type="paths", default=[])
    else:
        parser.addini(option.ini_name, option.ini_help, default="")


def pytest_configure(config: pytest.Config) -> None:
    workspaces.forget()
    if hasattr(config, "workerinput"):  # an xdist worker: the CLIs it starts end with the run
        from pytest_atom.processes import end_with_parent

        end_with_parent()
    config.addinivalue_line(
        "markers",
        f"atom(**settings): pytest-atom settings for this test ({', '.join(PER_TEST)}); "
        "a spec item carries it bare.",
    )
    if not config.option.atom:
        return
    from pytest_atom.pytest.session import AtomSession

    session = AtomSession(config)
    _default_paths(config, session.harness.settings.spec_paths(session.harness.root))
    config.pluginmanager.register(session, "atom-session")


def _default_paths(config: pytest.Config, configured: list[Path]) -> None:
    """No path named: the configured `paths:` (`settings.project.default_paths`), added to
    pytest's own `testpaths` where those apply."""
    source = config.args_source
    if source == pytest.Config.ArgsSource.TESTPATHS:
        config.args += [str(p) for p in configured]
    elif source == pytest.Config.ArgsSource.INVOCATION_DIR:
        from pytest_atom.settings.project import default_paths

        config.args[:] = [str(p) for p in default_paths(config.invocation_params.dir, configured)]


@pytest.fixture
def atom_settings() -> dict[str, Any]:
    """pytest-atom settings (`pytest_atom.RunSettings`' keys) for the tests and specs below
    this conftest: override it. The command line and ``@pytest.mark.atom(...)`` win over it;
    it wins over the ini file and ``.atom/config.yaml``."""
    return {}


@pytest.fixture
def atom(request: pytest.FixtureRequest, atom_settings: dict[str, Any]) -> AtomFixture:
    """Run atom specs from a Python test: `atom.run("x.atom.yaml")` or `atom.run(prompt=...)`."""
    from pytest_atom.pytest.fixture import AtomFixture

    return AtomFixture(request, atom_settings)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Never collect a spec's workspace, with or without ``--atom``: its tests are fixture
    data, often failing on purpose, and a copy of the project's tests would abort plain
    pytest with "import file mismatch"."""
    if collection_path.name.endswith((".py", SPEC_SUFFIX)) or not collection_path.is_dir():
        return None
    if workspaces.is_spec_workspace(collection_path, config.rootpath):
        return True
    return None


_SPECS_SEEN = pytest.StashKey[list[Path]]()
_HINTED = pytest.StashKey[bool]()


def pytest_report_header(config: pytest.Config) -> str | None:
    """How to move pytest-atom keys out of pytest's own ini file: a line, not a warning,
    which ``filterwarnings = error`` would turn into an abort."""
    from pytest_atom.settings.resolved import ini_note

    if config.inipath is None:
        return None
    keys = [BY_NAME[name].ini_name for name in INI_SETTINGS]
    return ini_note([k for k in keys if config.getini(k)], display_path(config.inipath))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> None:
    """Without ``--atom`` a spec is no test, and pytest says only "not found": add a hint
    (`_hint`), for a spec named on the command line (or, in `pytest_collection_finish`,
    specs met while nothing else was collected)."""
    config = parent.config
    if config.option.atom or not file_path.name.endswith(SPEC_SUFFIX):
        return
    file_path = file_path.resolve()
    config.stash.setdefault(_SPECS_SEEN, []).append(file_path)
    if config.args_source == pytest.Config.ArgsSource.ARGS and file_path in _named_files(config):
        _hint(config, file_path, f"{file_path.name} is a pytest-atom spec")


def pytest_collection_finish(session: pytest.Session) -> None:
    seen = session.config.stash.get(_SPECS_SEEN, [])
    if seen and not session.items and session.config.args_source == pytest.Config.ArgsSource.ARGS:
        named = _named_files(session.config)
        # Only specs inside a named folder, not those on pytest's way to a named file.
        unnamed = [p for p in seen if p not in named and any(n in p.parents for n in named)]
        if unnamed:
            _hint(session.config, unnamed[0], f"{len(unnamed)} pytest-atom spec file(s) were found")


def _named_files(config: pytest.Config) -> set[Path]:
    base = config.invocation_params.dir
    return {(base / arg.split("::")[0]).resolve() for arg in config.args}


def _hint(config: pytest.Config, location: Path, what: str) -> None:
    """One line, once a session, on the terminal (stderr without pytest's terminal); never a
    warning, which ``filterwarnings = error`` would make a traceback."""
    if config.stash.get(_HINTED, False):
        return
    config.stash[_HINTED] = True
    line = f"hint: {what}, but specs run only with --atom: pytest --atom {display_path(location)}"
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.ensure_newline()
        reporter.write_line(line, yellow=True, bold=True)
    else:
        sys.stderr.write(line + "\n")
