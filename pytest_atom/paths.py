"""Paths: as a person reads them in messages and reports, and where pytest-atom keeps its
files (the user's cache, the data folders that ship with the package)."""

from __future__ import annotations

import os
import re
from pathlib import Path

#: What a spec file's name ends with.
SPEC_SUFFIX = ".atom.yaml"


def default_spec_name(file: Path | str) -> str:
    """The name of a spec that writes no `name:`: its file's name without `SPEC_SUFFIX` (a
    file of another suffix, its stem)."""
    name = Path(file).name
    return name[: -len(SPEC_SUFFIX)] if name.endswith(SPEC_SUFFIX) else Path(name).stem


def user_cache() -> Path:
    """pytest-atom's per-user cache: ``$XDG_CACHE_HOME/pytest-atom`` (``~/.cache`` without it)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-atom"


def npm_install_command(prefix: Path, package: str, version: str) -> list[str]:
    """The npm command that installs `package`@`version` into its own `prefix` folder."""
    return [
        "npm",
        "install",
        "--no-audit",
        "--no-fund",
        "--prefix",
        str(prefix),
        f"{package}@{version}",
    ]


def data_dir(name: str) -> Path:
    """The shipped folder `name` (``"prompts"`` or ``"fixtures"``): a wheel carries it under
    ``pytest_atom/_data/``, a source checkout (editable install) at the repository root."""
    package = Path(__file__).resolve().parent
    installed = package / "_data" / name
    return installed if installed.is_dir() else package.parent / name


def display_path(path: Path) -> str:
    """Relative to the current folder when inside it: shorter, and clickable in terminals."""
    try:
        return str(path.relative_to(Path.cwd()))
    except (ValueError, OSError):
        return str(path)


def cli_slug(path: Path | str) -> str:
    """A path as Claude Code names the state it keeps for it (its ``projects/`` folder,
    the sandbox's task folder): every character but a letter or a digit becomes ``-``."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(path))


def node_id(path: Path, name: str, rootdir: Path) -> str:
    """A spec's pytest node id (`specs/x.atom.yaml::name`), so `atom run` names it alike,
    inert as `pytest --atom` makes it."""
    from pytest_atom.inert import inert

    return inert(f"{Path(os.path.relpath(path.resolve(), rootdir.resolve())).as_posix()}::{name}")
