"""Writing files so that nothing is ever half-written, the caches a copy leaves out, and
records of finished folders that cost no second copy (`link_tree`).

Cassettes, traces, reports and scrubbed transcripts are all replaced the same way: a
temporary file beside the target, flushed to disk, then renamed over it, so a crash or
Ctrl-C leaves the previous file byte-identical and a reader sees the old file or the new
one, whole.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

#: Caches that running a fixture's own tests leaves behind: never copied into a run,
#: never part of an agent's work.
CACHE_DIRS = ("__pycache__", ".pytest_cache", ".mypy_cache")
copy_ignore = shutil.ignore_patterns(*CACHE_DIRS)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Path, data: str | bytes) -> Path:
    """Replace `path` with `data` atomically (text is UTF-8).

    The file keeps an existing file's mode; a new one gets what the umask gives a new
    file (mkstemp's 0600 would hide a cassette from the team and a report from CI).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data.encode("utf-8") if isinstance(data, str) else data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def link_tree(source: Path, dest: Path, ignore: Any = None) -> Path:
    """`dest` as a record of the finished folder `source` that costs no second copy: its
    files hard-linked (copied where the file system cannot link), folders made anew,
    symlinks kept as links. Meant for a folder nothing writes to any more (a passing
    attempt promoted to ``committed/``): a file written in place would change in both."""

    def link(src: str, dst: str) -> None:
        try:
            os.link(src, dst, follow_symlinks=False)
        except OSError:
            shutil.copy2(src, dst)

    return Path(shutil.copytree(source, dest, symlinks=True, ignore=ignore, copy_function=link))


#: Folders a copy from outside git leaves out: caches, virtualenvs, other tools' state.
SKIPPED_DIRS = frozenset(
    {*CACHE_DIRS, ".git", ".hg", ".svn", ".venv", "venv", "node_modules", ".tox", ".nox"}
    | {".ruff_cache"}
)
