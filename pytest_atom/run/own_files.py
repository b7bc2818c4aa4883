"""pytest-atom's own files in a workspace: what a copy for the agent leaves out.

A workspace may be the project itself (`workspace: .`), which holds the specs. Copied as
it is, it would hand the agent its answer key (the checks and criteria, the scripted
answers, the recorded sessions), and every spec added would change what any other spec's
`ls` or Grep returns, so their replays would diverge.

What is left out is found by what pytest-atom knows, not by names alone:

- every spec file (``*.atom.yaml``) in the copied tree;
- what each names beside it: its `script:`, `oracle:`, `cases:` file, `cassette:` (and
  its ``.partial.yaml``), its default ``cassettes/<spec file stem>/``, its fixture
  workspaces (`workspace:` folders that are not the project itself, and ``workspaces/``),
  and its ``calibration/<spec name>/`` (named as the loader names the spec); the spec
  being run adds its own files wherever its file is;
- every ``.atom/`` folder: the project's config, tools, prompts, runs and results.

Specs are read as plain YAML, not validated: a spec with an error still names its files.
A spec's `include:` globs bring matching paths back. Another tool's ``cassettes/`` folder
is left alone: only the folders of the spec files found are pytest-atom's.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from pytest_atom.errors import YamlDocError
from pytest_atom.paths import SPEC_SUFFIX, default_spec_name
from pytest_atom.spec.workspaces import WORKSPACES_DIR

ATOM_DIR = ".atom"
PARTIAL_SUFFIX = ".partial.yaml"  # what a failed recording keeps beside the cassette
#: `pytest_atom.judge.calibration.FOLDER` (a test holds them equal: not imported, so a run
#: loads no calibration module).
CALIBRATION_DIR = "calibration"
_SPEC_SIDE = ("script", "oracle", "cassette", "cases")  # spec keys naming a path beside it


def own_files(base: Path, rels: Iterable[str], extra: Iterable[Path] = ()) -> list[str]:
    """The paths among `rels` (posix, relative to `base`) that are pytest-atom's own, or
    lie in a folder that is. `extra`: absolute paths known otherwise (the running spec's)."""
    listed = list(rels)
    owned: set[str] = set()  # files, and folders whose whole content goes
    for rel in listed:
        parts = rel.split("/")
        if ATOM_DIR in parts:
            owned.add("/".join(parts[: parts.index(ATOM_DIR) + 1]))
        if parts[-1].endswith(SPEC_SUFFIX):
            owned.add(rel)
            owned.update(_named_by(base, rel))
    owned.update(r for r in (_inside(base, p) for p in extra) if r is not None)
    return [rel for rel in listed if _under(rel, owned)]


def matches(rel: str, globs: Sequence[str]) -> bool:
    """Whether `rel` (a posix path) or one of the folders it is in matches a glob."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return any(fnmatch.fnmatchcase(p, g.rstrip("/")) for p in prefixes for g in globs)


def _under(rel: str, owned: set[str]) -> bool:
    parts = rel.split("/")
    return any("/".join(parts[: i + 1]) in owned for i in range(len(parts)))


def _inside(base: Path, path: Path) -> str | None:
    rel = os.path.relpath(os.path.normpath(path), os.path.normpath(base))
    if rel == "." or rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
        return None
    return Path(rel).as_posix()


def _named_by(base: Path, spec_rel: str) -> set[str]:
    folder = posixpath.dirname(spec_rel)
    stem = posixpath.basename(spec_rel).removesuffix(SPEC_SUFFIX)
    named = {posixpath.join(folder, "cassettes", stem), posixpath.join(folder, WORKSPACES_DIR)}
    spec_dir = base / folder
    for key, value in _spec_values(base / spec_rel):
        path = Path(os.path.normpath(spec_dir / value))
        holds_spec = path == spec_dir or _inside(path, spec_dir) is not None
        if key == "workspace" and holds_spec:
            continue  # a workspace holding its spec is the project itself, not a fixture
        rel = _inside(base, path)
        if rel is None:  # outside the copy
            continue
        named.add(rel)
        if rel.endswith(".yaml"):
            named.add(rel.removesuffix(".yaml") + PARTIAL_SUFFIX)
    return named


def _spec_values(spec_file: Path) -> list[tuple[str, str]]:
    from pytest_atom import yamldoc  # only where specs are

    try:
        data = yamldoc.safe_load(spec_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, YamlDocError):
        return []
    entries = data.get("specs") if isinstance(data, dict) and "specs" in data else [data]
    found: list[tuple[str, str]] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        # As `spec_loader.load` names it; its cases and arms share that name's calibration folder.
        name = entry.get("name", default_spec_name(spec_file))
        if isinstance(name, str) and name and "/" not in name and name not in (".", ".."):
            found.append(("calibration", posixpath.join(CALIBRATION_DIR, name)))
        arms = entry.get("arms")
        for mapping in [entry, *(arms.values() if isinstance(arms, dict) else [])]:
            found += _values(mapping)
    return found


def _values(mapping: Any) -> list[tuple[str, str]]:
    if not isinstance(mapping, dict):
        return []
    values = [(key, mapping.get(key)) for key in _SPEC_SIDE]
    workspace = mapping.get("workspace")
    values.append(
        ("workspace", workspace.get("path") if isinstance(workspace, dict) else workspace)
    )
    return [(k, v) for k, v in values if isinstance(v, str) and v and not os.path.isabs(v)]
