"""Every input hash pytest-atom stores, and the one walk of a folder they share.

A cassette remembers what it was recorded from as short hashes (``sha256:`` and 16 hex
digits): the spec, its prompt and script (``spec_hash``, ``prompt_hash``,
``script_hash``), each piece of the Claude Code configuration (``config_hashes``) and,
for recall, the inputs and workspace of each judging session (``metadata.recall``).
Comparing a stored hash with today's is how staleness and recall work, so the bytes each
one hashes are a stored format: changing them would make every shipped cassette stale.

This module is the only place that hashes inputs. There is one walk of a folder
(`tree`), and two record formats over it, each the format of values already stored:

* `files_hash` -- a configuration folder (a skill, an agent, a plugin) as its author
  wrote it: each file's relative path and text, line endings and caches aside, so a
  checkout on another system hashes alike.
* `session_hash` -- a workspace as a judging session sees it: every entry's kind (file,
  executable, link, folder), path and bytes, with run paths made placeholders, so a
  ``chmod +x`` or a new empty folder is a change the judge could have seen.

And two for the outcome cache's input digest: `content` (a file's bytes) and `stat_tree`
(a toolchain folder by each entry's stat).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

PREFIX = "sha256:"


def short(data: bytes) -> str:
    """The stored form of a hash: ``sha256:`` and the first 16 hex digits."""
    return PREFIX + hashlib.sha256(data).hexdigest()[:16]


def hex_of(data: bytes) -> str:
    """The whole SHA-256 in hex: content names (a cassette's shared values) and keys."""
    return hashlib.sha256(data).hexdigest()


def of_text(text: str) -> str:
    return short(text.encode())


def canonical(value: Any, *, compact: bool = False) -> bytes:
    """`value` as JSON with sorted keys; `compact` drops the spaces after separators. Both
    forms are stored (the spec's hash spaced, the configuration's compact), so both stay."""
    separators = (",", ":") if compact else None
    return json.dumps(value, sort_keys=True, separators=separators, default=str).encode()


def of_value(value: Any, *, compact: bool = False) -> str:
    return short(canonical(value, compact=compact))


Kind = Literal["file", "exec", "link", "dir", "other"]


@dataclass(frozen=True)
class Entry:
    """One entry of a folder: its path, its path relative to the folder, and its kind."""

    path: Path
    rel: str
    kind: Kind


def tree(folder: Path, skip: Collection[str], skip_top: str | None = None) -> Iterator[Entry]:
    """Every entry under `folder`, folders first in each folder, each group sorted; the
    folders named in `skip` (anywhere) and `skip_top` (at the top) are not entered. Links
    are entries, never followed into: a link to a folder outside cannot pull it in."""
    for root, dirs, files in os.walk(folder):
        base = Path(root)
        dirs[:] = sorted(
            d for d in dirs if d not in skip and not (base == folder and d == skip_top)
        )
        for name in [*(d + "/" for d in dirs), *sorted(files)]:
            path = base / name.rstrip("/")
            yield Entry(path, path.relative_to(folder).as_posix(), _kind(path, name))


def _kind(path: Path, name: str) -> Kind:
    if path.is_symlink():
        return "link"
    if name.endswith("/"):
        return "dir"
    if path.is_file():
        return "exec" if os.access(path, os.X_OK) else "file"
    return "other"  # a socket or fifo


def files_hash(path: Path, skip: Collection[str], skip_top: str | None = None) -> str:
    """A configuration file's text, or every file of a configuration folder with its
    relative path (line endings and the `skip` names aside; `skip_top` is a top-level
    folder left out too). Links to files count as the file they name."""
    digest = hashlib.sha256()
    if path.is_file():
        files = [(path.name, path)]
    else:
        found = [e for e in tree(path, skip, skip_top) if e.kind != "dir" and e.path.is_file()]
        files = [(e.rel, e.path) for e in sorted(found, key=lambda e: e.path.parts)]
    for rel, file in files:
        if file != path and (rel.split("/")[-1] in skip or rel == skip_top):
            continue
        digest.update(rel.encode() + b"\0")
        digest.update(file.read_bytes().replace(b"\r\n", b"\n") + b"\0")
    return PREFIX + digest.hexdigest()[:16]


def session_hash(folder: Path, skip: Collection[str], paths_out: Callable[[str], str]) -> str:
    """`folder` as a session sees it: each entry's kind, relative path and bytes (a
    link's target), text with run paths as placeholders (`paths_out`). An unreadable
    file is named as one, so it cannot pass for a readable one."""
    digest = hashlib.sha256()
    for entry in tree(folder, skip):
        kind: str = entry.kind
        data = b""
        if kind == "link":
            data = os.readlink(entry.path).encode()
        elif kind in ("file", "exec"):
            try:
                data = entry.path.read_bytes()
            except OSError as exc:
                kind, data = "unreadable", str(exc.strerror).encode()
        try:
            data = paths_out(data.decode("utf-8")).encode("utf-8")
        except UnicodeDecodeError:
            pass  # binary: its bytes as they are
        digest.update(f"{kind} {entry.rel} {len(data)}\n".encode())
        digest.update(data)
    return PREFIX + digest.hexdigest()[:16]


#: `content`'s memo: a file's hash by what its stat says of it.
_CONTENT: dict[tuple[str, int, int, int], str] = {}


def content(path: Path) -> str:
    """A file's bytes as a short hash, read once per process while its path, size, mtime
    (in nanoseconds) and inode stay the same; ``absent`` when it cannot be read."""
    try:
        st = path.stat()
    except OSError:
        return "absent"
    key = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
    found = _CONTENT.get(key)
    if found is None:
        try:
            found = _CONTENT[key] = short(path.read_bytes())
        except OSError:
            return "absent"
    return found


def stat_tree(folder: Path) -> str:
    """A folder as a toolchain: every entry's relative path, mode, size and mtime (a link's
    target instead): no file is read, so a large toolchain costs one stat an entry.
    ``absent`` for a folder that is not there."""
    if not folder.is_dir():
        return "absent"
    hashed = hashlib.sha256()
    _stat_entries(str(folder), "", hashed)
    return PREFIX + hashed.hexdigest()[:16]


def _stat_entries(path: str, rel: str, hashed: Any) -> None:
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        name = rel + entry.name
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        link = os.readlink(entry.path) if entry.is_symlink() else ""
        hashed.update(f"{name}\0{st.st_mode}\0{st.st_size}\0{st.st_mtime_ns}\0{link}\n".encode())
        if entry.is_dir(follow_symlinks=False):
            _stat_entries(entry.path, name + "/", hashed)
