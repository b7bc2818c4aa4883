"""Which folders are spec workspaces, which no pytest run collects: a cheap test per folder.

A workspace's tests are fixture data, often failing on purpose, and a copy of a project's
tests beside the project makes plain pytest abort with "import file mismatch". The plugin
imports this into every pytest run, so it imports nothing heavy and reads YAML only where
specs are.

A folder is a workspace when it is ``workspaces/`` beside a spec file, or a folder named as
`workspace:` by a spec in one of its parent folders, unless it holds that spec (the project).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from pytest_atom.errors import YamlDocError
from pytest_atom.paths import SPEC_SUFFIX

#: The conventional folder of fixture workspaces beside the specs.
WORKSPACES_DIR = "workspaces"


@functools.lru_cache(maxsize=1024)
def _spec_files(directory: Path) -> tuple[Path, ...]:
    try:
        with os.scandir(directory) as entries:
            return tuple(
                directory / e.name for e in entries if e.name.endswith(SPEC_SUFFIX) and e.is_file()
            )
    except OSError:
        return ()


@functools.lru_cache(maxsize=256)
def declared_workspaces(directory: Path) -> frozenset[Path]:
    """The `workspace:` folders named by the spec files in `directory`, except those that
    hold `directory`; read without validating, so a spec with an error still declares it."""
    found: set[Path] = set()
    files = _spec_files(directory)
    if not files:
        return frozenset()
    from pytest_atom import yamldoc  # only where specs are

    for spec_file in files:
        try:
            data = yamldoc.safe_load(spec_file.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, YamlDocError):
            continue
        entries = data.get("specs") if isinstance(data, dict) and "specs" in data else [data]
        for entry in entries if isinstance(entries, list) else []:
            arms = entry.get("arms") if isinstance(entry, dict) else None
            overlays = list(arms.values()) if isinstance(arms, dict) else []
            for path in map(_workspace_path, [entry, *overlays]):  # an arm may name its own
                if path is not None:
                    found.add((directory / path).resolve())
    return frozenset(p for p in found if p != directory and p not in directory.parents)


def _workspace_path(entry: Any) -> str | None:
    value = entry.get("workspace") if isinstance(entry, dict) else None
    if isinstance(value, dict):
        value = value.get("path")
    return value if isinstance(value, str) else None


def is_spec_workspace(directory: Path, root: Path) -> bool:
    """Whether `directory` (absolute) is a spec's fixture workspace, as declared by the
    specs of its parent folders up to `root` (pytest's rootdir)."""
    parent = directory.parent
    folders = [parent]
    if root in parent.parents:
        folders += [p for p in parent.parents if p == root or root in p.parents]
    with_specs = [folder for folder in folders if _spec_files(folder)]
    if not with_specs:
        return False
    if directory.name == WORKSPACES_DIR and with_specs[0] == parent:
        return True
    resolved = directory.resolve()
    return any(resolved in declared_workspaces(folder.resolve()) for folder in with_specs)


def forget() -> None:
    """Drop what was read: a new session reads the spec files as they are now."""
    _spec_files.cache_clear()
    declared_workspaces.cache_clear()
