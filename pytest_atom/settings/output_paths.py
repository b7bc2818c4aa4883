"""Output paths (`Option.output`) checked before any spec runs: a wrong one must not
surface after every spec has run and spent. Both front ends turn what `output_path_errors`
says into a usage error naming the option, the path and the fix.

Writability is tried, not inferred from permission bits: root writes through any mode
bits, and a read-only file system refuses even root.
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
    one message each, led by the option as spelled (`flag`) when the command line `given`
    it, else by where the value came from."""
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
    """Why `path` cannot be written as a `kind` (a folder, or one file); None when it can."""
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
    while not path.exists() and path != path.parent:
        path = path.parent
    return path
