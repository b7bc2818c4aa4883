"""The settings of a pytest run and of each test in it: the ``--atom-*`` command line, the ini
file and `.atom/config.yaml` for the run's harness; a test's marks and its `atom_settings`
fixture on top, for the settings a test may set for itself (`PER_TEST`).

The session's suite run is reached from items, fixtures and report plugins by a typed key
on ``config.stash`` (`SUITE_RUN`), set by the session plugin when ``--atom`` is given."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from pytest_atom.errors import ConfigError, SettingsError
from pytest_atom.run.harness import Harness, build_harness, file_layers
from pytest_atom.settings.options import (
    BY_NAME,
    COMMAND_LINE_SETTINGS,
    INI_SETTINGS,
    PER_TEST,
    RunSettings,
)
from pytest_atom.settings.project import find_project
from pytest_atom.settings.resolved import Layer, from_here, resolve

if TYPE_CHECKING:
    from pytest_atom.suite.suite_run import SuiteRun

#: The `SuiteRun` of a ``pytest --atom`` session.
SUITE_RUN = pytest.StashKey["SuiteRun"]()


def suite_run(config: pytest.Config) -> SuiteRun:
    """The session's suite run; only items of a ``--atom`` session ask, and it has one."""
    return config.stash[SUITE_RUN]


def pytest_harness(config: pytest.Config) -> Harness:
    """The harness of a pytest run: its command line, ini file and `.atom/config.yaml`; its
    root is the project's, found as `atom run` finds it, not pytest's rootdir."""
    try:
        given = config.option.atom_config  # ``--atom-config``: from where pytest ran
        config_path = None if given is None else config.invocation_params.dir / given
        project = find_project(
            config.invocation_params.dir, config_path=config_path, rootdir=config.rootpath
        )
    except ConfigError as err:
        raise pytest.UsageError(str(err)) from None
    try:
        return build_harness(
            [command_line(config), *file_layers(_ini(config), project.config)],
            root=project.root,
            config=project.config,
            hook=config.hook,
            # each xdist worker holds its share of the session's spending limit
            workers=int(getattr(config, "workerinput", {}).get("workercount") or 1),
        )
    except SettingsError as err:
        raise pytest.UsageError(str(err)) from None


def command_line(config: pytest.Config) -> Layer:
    """The ``--atom-*`` options; their paths are taken from where pytest ran."""
    values = {
        name: getattr(config.option, BY_NAME[name].ini_name, None) for name in COMMAND_LINE_SETTINGS
    }
    values = from_here(values, config.invocation_params.dir)
    return Layer("the command line", values, key=lambda name: BY_NAME[name].pytest_flag)


def settings_for(harness: Harness, node: pytest.Item, fixture: dict[str, Any]) -> RunSettings:
    """A test's settings: the command line, then its marks, then `atom_settings`, then files."""
    marks: dict[str, Any] = {}
    for mark in node.iter_markers("atom"):  # closest first: a test's mark beats its module's
        marks = {**mark.kwargs, **marks}
    layers = [Layer("@pytest.mark.atom", marks), Layer("the atom_settings fixture", fixture)]
    for layer in layers:
        unknown = sorted(set(layer.values) - set(PER_TEST))
        if unknown:
            raise SettingsError(
                f"{', '.join(unknown)} cannot be set per test in {layer.source}: it belongs "
                f"to the whole run (the command line, the ini file or .atom/config.yaml); "
                f"per test: {', '.join(PER_TEST)}"
            )
    files = file_layers(_ini(node.config), harness.config)
    return resolve([command_line(node.config), *layers, *files])


def _ini(config: pytest.Config) -> dict[str, Any]:
    keys = (BY_NAME[name].ini_name for name in INI_SETTINGS)
    return {key: config.getini(key) for key in keys}
