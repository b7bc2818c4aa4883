"""A project's root, and pytest's ini settings and rootdir as the `atom` command needs them.

A project's root is the folder holding `.atom/config.yaml`, found from the current folder
upwards as git finds `.git` (`find_project`): `pytest --atom` and `atom run` ask the same
function, so from any folder of a project both use the root's `.atom/`.

Starting a whole pytest configuration (every plugin, every conftest) for one setting would
be slow and would run a project's code; this module reads pytest's ini files (`INI_NAMES`)
in pytest's own order instead.
"""

from __future__ import annotations

import configparser
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import tomlkit

from pytest_atom.settings.config import AtomConfig, find_config, load_config
from pytest_atom.settings.options import INI_NAMES  # the one list of pytest's ini files


@dataclass(frozen=True)
class PytestIni:
    """The pytest settings of a project: the file they came from and their raw values."""

    path: Path
    values: dict[str, Any] = field(default_factory=dict)


def find_ini(start: Path | None = None) -> PytestIni | None:
    """The pytest settings that apply in `start` (default: the current folder), or None."""
    folder = (start or Path.cwd()).resolve()
    for base in (folder, *folder.parents):
        for name in INI_NAMES:
            candidate = base / name
            if candidate.is_file():
                values = _read(candidate)
                if values is not None:
                    return PytestIni(candidate, values)
    return None


@dataclass(frozen=True)
class Project:
    """A project: its root, where `.atom/` belongs, and its `.atom/config.yaml` settings."""

    root: Path
    config: AtomConfig


def find_project(
    start: Path | None = None, *, config_path: Path | None = None, rootdir: Path | None = None
) -> Project:
    """The project `start` (default: the current folder) belongs to, for every front end:
    `config_path`'s (``atom run --config``), else `project_root`'s."""
    here = (start or Path.cwd()).resolve()
    if config_path is not None:
        config = load_config(config_path, cwd=here)
        return Project(config.root, config)
    root = project_root(here, rootdir=rootdir)
    config = load_config(cwd=root)
    return Project(root, config if config.path else replace(config, root=root))


def project_root(start: Path | None = None, *, rootdir: Path | None = None) -> Path:
    """Where `.atom/` belongs: the folder holding `.atom/config.yaml`, from `start` (default:
    the current folder) upwards, then from `rootdir` (pytest's, for a run started outside
    the project); else `rootdir`, else pytest's rootdir from `start`."""
    folder = (start or Path.cwd()).resolve()
    for base in (folder, rootdir) if rootdir is not None else (folder,):
        config = find_config(base)
        if config is not None:
            return config.parent.parent
    return rootdir.resolve() if rootdir is not None else pytest_rootdir(folder)


def default_paths(here: Path, configured: Sequence[Path]) -> list[Path]:
    """What `pytest --atom` and `atom run` take when no path is named, from the folder
    `here`, as git's commands act on the folder they run in: the `configured` paths inside
    `here`; in a folder inside one of them, `here`; elsewhere, `here` and all of them."""
    here = here.resolve()
    inside = [p for p in configured if p == here or p.is_relative_to(here)]
    if inside:
        return inside
    if any(here.is_relative_to(p) for p in configured):
        return [here]
    return [here, *configured]


def pytest_rootdir(start: Path | None = None) -> Path:
    """pytest's rootdir for a run from `start`: the folder of its ini file, else the
    nearest folder with one of the files pytest looks for, else `start`."""
    folder = (start or Path.cwd()).resolve()
    ini = find_ini(folder)
    if ini is not None:
        return ini.path.parent
    for base in (folder, *folder.parents):
        if any((base / name).is_file() for name in INI_NAMES):
            return base
    return folder


def _read(path: Path) -> dict[str, Any] | None:
    """The pytest settings in one file; None when the file holds none."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if path.suffix == ".toml":
        try:
            data = tomlkit.parse(text).unwrap()
        except tomlkit.exceptions.ParseError:
            return None
        if path.name != "pyproject.toml":  # pytest.toml: a [pytest] table
            table = data.get("pytest")
            return dict(table) if isinstance(table, dict) else {}
        tool = data.get("tool", {}).get("pytest")
        if not isinstance(tool, dict):
            return None
        options = tool.get("ini_options")
        return dict(options) if isinstance(options, dict) else tool
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text, source=str(path))
    except configparser.Error:
        return None
    section = "tool:pytest" if path.name == "setup.cfg" else "pytest"
    if parser.has_section(section):
        return dict(parser.items(section))
    return {} if path.name in ("pytest.ini", ".pytest.ini") else None
