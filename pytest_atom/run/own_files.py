"""pytest-atom's own files in a workspace: what a copy for the agent leaves out.

A workspace may be the project itself (`workspace: .` or `..`), which holds the specs.
Copied as it is, it would hand the agent its own answer key (the spec's checks and
criteria, the scripted answers, the recorded sessions), and every spec added to the
project would change what any other spec's `ls`, Glob or Grep returns, so their replays
would diverge.

What is left out is found by what pytest-atom knows, not by names alone:

- every spec file (``*.atom.yaml``) in the copied tree;
- what each of those specs names beside it: its `script:`, `oracle:`, `cases:` file (a
  dataset's rows may hold each task's answer), `cassette:` (with
  the ``.partial.yaml`` a failed recording keeps), its default cassette folder
  ``cassettes/<spec file stem>/``, and the fixture workspaces it names (`workspace:`
  folders that are not the project itself, and ``workspaces/`` beside it), and its
  calibration folder ``calibration/<spec name>/`` (labelled samples: human verdicts on
  attempts, and the judge's cassette), named as the loader names the spec: its `name:`, else
  its file's name, once for all its cases and arms; the spec being run adds its own files,
  calibration folder included, wherever its file is;
- every ``.atom/`` folder: the project's config, tools, prompts, runs and results.

MCP tapes need no rule of their own: a run's tape folder is in its run folder (never
copied) and what it recorded is in the cassette. Specs are read as plain YAML, not
validated: a spec with an error still names its files.
A spec's `include:` globs (relative to the workspace, like `exclude:`) bring matching
paths back. A ``cassettes/`` folder of another tool (pytest-recording's, beside test
modules) is left alone: only the folders of the spec files found are pytest-atom's.
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

#: The project's own pytest-atom folder: config, tools, prompts, run folders, results.
ATOM_DIR = ".atom"
#: What a failed recording keeps beside the cassette it did not replace.
PARTIAL_SUFFIX = ".partial.yaml"
#: A spec's labelled samples and its judge's cassette, beside it: ``calibration/<spec name>/``
#: (`pytest_atom.judge.calibration.FOLDER`, which a test holds equal: not imported, so a
#: run loads no calibration module).
CALIBRATION_DIR = "calibration"
#: Spec keys naming a file or folder beside the spec file.
_SPEC_SIDE = ("script", "oracle", "cassette", "cases")


def own_files(base: Path, rels: Iterable[str], extra: Iterable[Path] = ()) -> list[str]:
    """The paths among `rels` (posix paths relative to `base`, the folder copied) that are
    pytest-atom's own, or lie in a folder that is: sorted, each once. `extra` adds
    absolute paths known otherwise (the running spec's own files)."""
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
    """Whether `rel` (a posix path) or one of the folders it is in matches a glob: a spec's
    `exclude:` leaves it out of a copy, its `include:` brings it back."""
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
    """What the spec file `spec_rel` names in `base`: its files and folders, relative."""
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
    """The spec-side paths a spec file names, read without validating it."""
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
