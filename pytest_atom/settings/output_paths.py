"""Output paths checked before any spec runs: the runs folder, ``--atom-report`` and
``--atom-html``.

A wrong output path (a ``--atom-report`` that names a file, an ``--atom-html`` that names a
folder, a parent that cannot be created or written, a read-only ``.atom/``) must not surface
after every spec has run and spent. Both front ends call `output_path_errors` where they read their options, and turn what it says
into a usage error that names the option, the path and the fix.

Writability is tried, not inferred from permission bits: root writes through any mode
bits, and a read-only file system refuses even root. The try creates an unnamed temporary
file in the nearest folder that exists, and leaves nothing behind.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pytest_atom.inert import inert
from pytest_atom.paths import display_path
from pytest_atom.settings.options import OPTIONS, Option

if TYPE_CHECKING:
    from pytest_atom.settings.options import RunSettings


def output_path_errors(
    settings: RunSettings,
    root: Path,
    flag: Callable[[Option], str],
    given: Callable[[Option], bool],
) -> list[str]:
    """What is wrong with each output path `settings` name (relative ones under `root`),
    one message each; empty when all can be written. A message leads with the option as
    the front end spells it (`flag`) when its command line `given` it, else with where the
    value came from."""
    errors = []
    for option in OPTIONS:
        if not option.output or option.path is None:
            continue
        path = settings.output(option.name, root)
        problem = None if path is None else output_problem(path, option.path)
        if path is not None and problem:
            shown = display_path(path)
            if given(option):
                errors.append(inert(f"{flag(option)} {shown}: {problem}"))
            else:
                where = _where(option, flag(option), settings)
                errors.append(inert(f"{option.name} {shown} ({where}): {problem}"))
    return errors


def _where(option: Option, flag: str, settings: RunSettings) -> str:
    """Where a value the command line did not give came from, and how to change it."""
    if getattr(settings, option.name) is not None:
        return f"from {option.ini_name} in the ini file or {option.name}: in .atom/config.yaml; {flag} overrides it"
    return f"the default; {flag} changes it"


def output_problem(path: Path, kind: Literal["dir", "file"]) -> str | None:
    """Why `path` cannot be written as a `kind` (a folder the run fills, or one file), or
    None when it can: it exists as the other kind, a parent is a file, or the nearest
    folder that exists refuses a new file."""
    if kind == "dir" and path.exists() and not path.is_dir():
        return "is a file, not a folder: name a folder (it is created if missing)"
    if kind == "file" and path.is_dir():
        return "is a folder, not a file: name the file to write, such as report.html"
    folder = path if kind == "dir" else path.parent
    existing = _nearest_existing(folder)
    if not existing.is_dir():
        return f"cannot be created: {display_path(existing)} is a file, not a folder"
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        return f"cannot be written: {display_path(existing)} refuses new files ({exc.strerror})"
    return None


def _nearest_existing(path: Path) -> Path:
    """`path`, or its nearest ancestor that exists (a link is taken as what it names)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
