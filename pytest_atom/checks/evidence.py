"""What a workspace check shows as evidence: a file's head, a command's tail, a listing of
what is there instead; and reading the workspace safely (no link leads out, no FIFO blocks).

A head or a tail is cut from the text as scrubbed: a secret the cut went through would
otherwise reach every report past a scrubber that knows it only whole.
"""

from __future__ import annotations

import os
from pathlib import Path

from pytest_atom.errors import CheckError
from pytest_atom.files import contained, read_regular, special_kind
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.words import Scrubbed

HEAD_LINES, TAIL_LINES, EXCERPT_BYTES = 40, 40, 4096
_LISTING_LIMIT = 50
_SKIP_DIRS = {".git", "__pycache__", "node_modules", ".venv", ".pytest_cache"}


def resolve(workspace: Path, rel: str) -> Path:
    """Resolve symlinks before the containment test, so a link cannot lead a check outside."""
    target = contained(workspace, rel)
    if target is None:
        root = workspace.resolve()
        raise CheckError(
            f"refused: {rel!r} resolves to {(root / rel).resolve()}, outside the workspace {root}"
        )
    return target


def read_text(path: Path) -> str:
    """A regular file's text; a device, FIFO or socket is never opened (it could block forever)."""
    data = read_regular(path)
    if data is None:
        raise CheckError(f"cannot read {path}: not a readable regular file")
    return data.decode("utf-8", errors="replace")


def describe_file(path: Path) -> str:
    if path.is_dir():
        return f"{path.name}/ is a folder:\n{listing(path)}"
    kind = special_kind(path.lstat().st_mode)
    if kind is not None:
        return f"{path.name} is {kind}, not read"
    return f"{path.stat().st_size} bytes\n{head(read_text(path))}"


def head(text: str) -> Scrubbed:
    """The first `HEAD_LINES` lines of `text` scrubbed, at most `EXCERPT_BYTES` characters."""
    lines = Scrubber().scrub(text).splitlines()
    shown = "\n".join(lines[:HEAD_LINES])[:EXCERPT_BYTES]
    more = len(lines) - shown.count("\n") - 1
    return Scrubbed(shown + (f"\n… ({more} more lines)" if more > 0 else ""))


def tail(text: str, limit: int = TAIL_LINES) -> Scrubbed:
    """The last `limit` lines of `text` scrubbed, at most `EXCERPT_BYTES` characters."""
    lines = Scrubber().scrub(text).splitlines()
    shown = "\n".join(lines[-limit:])[-EXCERPT_BYTES:]
    cut = len(lines) - shown.count("\n") - 1
    return Scrubbed((f"… ({cut} earlier lines)\n" if cut > 0 else "") + shown)


def listing(folder: Path) -> str:
    """What is there instead, to show e.g. a file written under the wrong name or folder."""
    entries: list[str] = []
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        rel = Path(dirpath).relative_to(folder)
        entries += [f"{(rel / d).as_posix()}/" for d in dirnames]
        entries += [(rel / f).as_posix() for f in sorted(filenames)]
        if len(entries) > _LISTING_LIMIT:
            break
    if not entries:
        return f"{folder} is empty"
    more = "\n… and more" if len(entries) > _LISTING_LIMIT else ""
    return f"contents of {folder}:\n" + "\n".join(sorted(entries)[:_LISTING_LIMIT]) + more
