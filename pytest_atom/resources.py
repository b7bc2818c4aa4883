"""Locate the data folders (`prompts/`, `fixtures/`) that ship with the package.

A wheel carries them under ``pytest_atom/_data/``; a source checkout (editable install,
or running from the repository) has them at the repository root. Both must work, so
the lookup tries the wheel location first and falls back to the checkout.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the shipped folder `name` (``"prompts"`` or ``"fixtures"``)."""
    installed = _PACKAGE_DIR / "_data" / name
    if installed.is_dir():
        return installed
    return _PACKAGE_DIR.parent / name
