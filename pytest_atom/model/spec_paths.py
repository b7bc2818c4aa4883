"""Where a spec's paths may point: the project's root, the workspace, the spec's folder."""

from __future__ import annotations

import os
from pathlib import Path

from pytest_atom.model.options import INI_NAMES
from pytest_atom.model.spec_document import Document
from pytest_atom.model.spec_types import Loc
from pytest_atom.model.spec_validation import label

#: What marks a project's root after a repository: pytest's ini files (the one list).
_ROOT_FILES = INI_NAMES


def project_root(folder: Path) -> Path:
    """The project a spec in `folder` belongs to, which its workspace must stay inside:
    the top of its git work tree, else the nearest folder with a pytest ini file
    (pytest's rootdir), else `folder` itself."""
    folder = folder.resolve()
    chain = (folder, *folder.parents)
    top = next((p for p in chain if (p / ".git").exists()), None)
    if top is not None:
        return top
    return next((p for p in chain if any((p / f).is_file() for f in _ROOT_FILES)), folder)


def root_marker(root: Path) -> str:
    if (root / ".git").exists():
        return "git repository"
    found = next((f for f in _ROOT_FILES if (root / f).is_file()), None)
    return found or "spec file"


def inside_folder(doc: Document, loc: Loc, value: str, base: str) -> str:
    """Judged on the text as written, so the rule holds before any file exists."""
    norm = os.path.normpath(value)
    if os.path.isabs(value) or norm == ".." or norm.startswith(".." + os.sep):
        raise doc.error(
            f"{label(loc)!r} must be a path relative to {base} that stays inside "
            f"it (not absolute, no '..' leading out), got {value!r}",
            loc,
        )
    return value


def spec_side(doc: Document, loc: Loc, value: str, want: str | None) -> Path:
    inside_folder(doc, loc, value, "the spec file's folder")
    path = (doc.path.parent / value).resolve()
    found = {"folder": path.is_dir, "file": path.is_file}.get(want or "", lambda: True)()
    if not found:
        state = f"is not a {want}" if path.exists() else "does not exist"
        raise doc.error(f"{label(loc)!r} {want} {value!r} {state} (looked for {path})", loc)
    return path
