"""Where a spec's paths may point: the project's root, the workspace, the spec's folder.

Every path a spec names on its own side, and the cassette it records to by default, is
resolved, every link followed, and must stay inside the project (`outside_project`, the one
test): a link to the caller's home or ``/etc`` is refused by its name before anything is
read or written through it, and the error never shows what the target holds.
"""

from __future__ import annotations

import os
from pathlib import Path

from pytest_atom.paths import display_path
from pytest_atom.settings.config import CONFIG_DIR, CONFIG_NAME
from pytest_atom.settings.options import INI_NAMES
from pytest_atom.spec.document import Document
from pytest_atom.spec.types import Loc
from pytest_atom.spec.validation import label

#: What marks a project's root after a repository: pytest's ini files, or `.atom/`'s config.
_ROOT_FILES = INI_NAMES
_MARKS = (*_ROOT_FILES, f"{CONFIG_DIR}/{CONFIG_NAME}")


def project_root(folder: Path) -> Path:
    """The project a spec in `folder` belongs to, which every file it names must stay
    inside: the top of its git work tree, else the nearest folder with one of `_MARKS`,
    else `folder` itself."""
    folder = folder.resolve()
    chain = (folder, *folder.parents)
    top = next((p for p in chain if (p / ".git").exists()), None)
    if top is not None:
        return top
    return next((p for p in chain if any((p / f).is_file() for f in _MARKS)), folder)


def root_marker(root: Path) -> str:
    if (root / ".git").exists():
        return "git repository"
    return next((f for f in _MARKS if (root / f).is_file()), "spec file")


def inside_folder(doc: Document, loc: Loc, value: str, base: str) -> str:
    """`value`, a path relative to `base` that stays inside it: judged on the text as
    written, so the rule holds before any file exists."""
    norm = os.path.normpath(value)
    if os.path.isabs(value) or norm == ".." or norm.startswith(".." + os.sep):
        raise doc.error(
            f"{label(loc)!r} must be a path relative to {base} that stays inside "
            f"it (not absolute, no '..' leading out), got {value!r}",
            loc,
        )
    return value


def outside_project(path: Path, folder: Path) -> Path | None:
    """The root of the project a spec in `folder` belongs to (`project_root`) when `path`,
    every link on the way resolved, leads outside it; None when it stays inside."""
    root = project_root(folder)
    resolved = path.resolve()
    return None if resolved == root or resolved.is_relative_to(root) else root


def outside_message(what: str, path: Path, root: Path) -> str:
    """Why `what` at `path` is refused: where it leads and the fix, never its contents."""
    return (
        f"{what} leads outside the project ({display_path(root)}, the folder of its "
        f"{root_marker(root)}): it resolves to {path.resolve()}; pytest-atom reads and "
        "writes a spec's files only inside its project, so move the file or folder into "
        "it (a link that leads out of the project is refused)"
    )


def spec_side(doc: Document, loc: Loc, value: str, want: str | None) -> Path:
    """A path beside the spec: relative to its folder, inside the project once every link
    is resolved, and existing as a `want` ("file", "folder"; None: may be missing)."""
    inside_folder(doc, loc, value, "the spec file's folder")
    given = doc.path.parent / value
    root = outside_project(given, doc.path.parent)
    if root is not None:
        raise doc.error(outside_message(f"{label(loc)!r} {value!r}", given, root), loc)
    path = given.resolve()
    found = {"folder": path.is_dir, "file": path.is_file}.get(want or "", lambda: True)()
    if not found:
        state = f"is not a {want}" if path.exists() else "does not exist"
        raise doc.error(f"{label(loc)!r} {want} {value!r} {state} (looked for {path})", loc)
    return path
