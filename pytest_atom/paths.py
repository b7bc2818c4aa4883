"""Paths as a person reads them in messages and reports."""

from __future__ import annotations

from pathlib import Path

#: What a spec file's name ends with.
SPEC_SUFFIX = ".atom.yaml"


def display_path(path: Path) -> str:
    """Relative to the current folder when inside it: shorter, and clickable in terminals."""
    try:
        return str(path.relative_to(Path.cwd()))
    except (ValueError, OSError):
        return str(path)
