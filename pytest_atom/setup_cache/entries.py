"""The cache's entries: what set-up changed in an attempt folder (`scan`, `changes`), filed
under its key (`store`), checked (`stale`, `intact`), restored with the new folder's paths
(`restore`), listed and pruned. The package's docstring says why each rule is there.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import sys
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_atom.paths import user_cache
from pytest_atom.setup_cache.key import FORMAT, SetupKey, file_digest, walk

_MANIFEST = "manifest.json"
_TREE = "tree"
#: A folder in its place (a CI cache step's): XDG_CACHE_HOME holds Claude Code's releases too.
ROOT_VARIABLE = "ATOM_SETUP_CACHE"


def cache_root() -> Path:
    """``$ATOM_SETUP_CACHE``, else ``$XDG_CACHE_HOME/pytest-atom/setup``."""
    explicit = os.environ.get(ROOT_VARIABLE)
    if explicit:
        return Path(explicit).expanduser()
    return user_cache() / "setup"


# --- what set-up changed ---------------------------------------------------------------------

#: Per path (posix, folder-relative): kind, size, mtime (ns), permission bits.
Listing = dict[str, tuple[str, int, int, int]]


def scan(folder: Path) -> Listing:
    """Every path under `folder` without following links, `.git/` included."""
    out: Listing = {}
    for rel, st in walk(folder):
        kind = _kind(st.st_mode)
        out[rel] = (kind, st.st_size if kind != "dir" else 0, st.st_mtime_ns, st.st_mode)
    return out


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "dir"
    if stat.S_ISLNK(mode):
        return "link"
    return "file" if stat.S_ISREG(mode) else "special"


@dataclass(frozen=True)
class Changes:
    """What set-up made, changed and deleted, and why it cannot be kept (None: it can)."""

    made: tuple[str, ...]
    changed: tuple[str, ...]
    deleted: tuple[str, ...]
    unkept: str | None = None


def changes(before: Listing, after: Listing) -> Changes:
    made = tuple(sorted(p for p in after if p not in before))
    changed = tuple(
        sorted(
            p
            for p, (kind, size, mtime, mode) in after.items()
            if p in before and kind != "dir" and before[p] != (kind, size, mtime, mode)
        )
    )
    deleted = tuple(sorted(p for p in before if p not in after))
    unkept = None
    if any(p == ".git" or p.startswith(".git/") for p in (*made, *changed, *deleted)):
        unkept = "set-up wrote into the attempt's .git"
    elif any(after[p][0] == "special" for p in made):
        unkept = "set-up made a FIFO, socket or device"
    return Changes(made, changed, deleted, unkept)


# --- entries -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    path: Path
    manifest: dict[str, Any]

    @property
    def size(self) -> int:
        return int(self.manifest.get("size", 0))

    @property
    def last_used(self) -> float:
        try:
            return (self.path / _MANIFEST).stat().st_mtime
        except OSError:
            return 0.0

    @classmethod
    def read(cls, folder: Path) -> Entry:
        """A missing or broken manifest reads as no format (pruned as such)."""
        try:
            manifest = json.loads((folder / _MANIFEST).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            manifest = {"format": None}
        return cls(folder, manifest)


def load_entry(root: Path, key: SetupKey) -> Entry | None:
    entry = Entry.read(root / key.digest)
    return entry if entry.manifest.get("format") == FORMAT else None


def store(
    root: Path,
    key: SetupKey,
    attempt: Path,
    found: Changes,
    *,
    run_dir: Path,
    source: Path | None,
    output: str,
) -> Entry:
    """File what set-up made in `attempt` under `key` in `root`, atomically (a new folder
    renamed into place). What the files set-up changed or deleted held before is read
    from `source`, the workspace the attempt was copied from."""
    root.mkdir(parents=True, exist_ok=True)
    temp = root / f".new-{uuid.uuid4().hex}"
    tree = temp / _TREE
    tree.mkdir(parents=True)
    try:
        forms = _path_forms(attempt, run_dir)
        olds = sorted(set(forms.values()), key=len, reverse=True)
        files: list[dict[str, Any]] = []
        size = 0
        for rel in (*found.made, *found.changed):
            item = _keep(attempt / rel, tree / rel, rel, olds)
            files.append(item)
            size += item.get("size", 0)
        before = {
            rel: file_digest(source / rel) if source is not None else None
            for rel in (*found.changed, *found.deleted)
        }
        manifest = {
            "format": FORMAT,
            "key": key.digest,
            "commands": list(key.commands),
            "inputs": list(key.inputs),
            "tools": list(key.tools),
            "env_names": list(key.env_names),
            "paths": forms,
            "files": files,
            "before": before,
            "deleted": list(found.deleted),
            "output": output,
            "size": size,
            "stored": time.time(),
        }
        (temp / _MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")
        final = root / key.digest
        shutil.rmtree(final, ignore_errors=True)
        try:
            os.rename(temp, final)
        except OSError:  # another worker stored the same key meanwhile: theirs stays
            shutil.rmtree(temp, ignore_errors=True)
        return Entry(final, manifest)
    except BaseException:
        shutil.rmtree(temp, ignore_errors=True)
        raise


def _path_forms(attempt: Path, run_dir: Path) -> dict[str, str]:
    return {
        "attempt": str(attempt),
        "attempt_real": str(attempt.resolve()),
        "run": str(run_dir),
        "run_real": str(run_dir.resolve()),
    }


def _keep(src: Path, dest: Path, rel: str, olds: Sequence[str]) -> dict[str, Any]:
    """Copy one path set-up made into the entry's tree; its manifest item."""
    st = src.lstat()
    kind = _kind(st.st_mode)
    item: dict[str, Any] = {"rel": rel, "kind": kind, "mode": stat.S_IMODE(st.st_mode)}
    dest.parent.mkdir(parents=True, exist_ok=True)
    if kind == "dir":
        dest.mkdir(exist_ok=True)
    elif kind == "link":
        target = os.readlink(src)
        item["target"] = target
        item["rewrite"] = any(target.startswith(old) for old in olds)
    else:
        data = src.read_bytes()  # in full: set-up cost more
        dest.write_bytes(data)
        os.utime(dest, ns=(st.st_mtime_ns, st.st_mtime_ns))
        item.update(
            size=st.st_size,
            mtime=st.st_mtime_ns,
            rewrite=_names_path(data, olds),
            sha256=hashlib.sha256(data).hexdigest(),
        )
    return item


def _names_path(data: bytes, olds: Sequence[str]) -> bool:
    """Whether a text file's `data` names one of the folders `olds` (a binary one, with a
    NUL in it, never: its strings are length-prefixed)."""
    return b"\0" not in data and any(old.encode() in data for old in olds)


# --- restoring -------------------------------------------------------------------------------


def stale(entry: Entry, attempt: Path) -> str | None:
    """Why `entry` cannot be restored into the fresh attempt folder `attempt` (None: it can):
    a file set-up changed holds other content now, a path it made exists already, or a
    folder the restore would write in is a link now (the write would land outside)."""
    real = os.path.realpath(attempt)
    made = {item["rel"] for item in entry.manifest["files"]}
    outer = [
        item["rel"]
        for item in entry.manifest["files"]
        if item["rel"].rpartition("/")[0] not in made
        and item["rel"] not in entry.manifest["before"]
    ]
    for rel in (*entry.manifest["before"], *entry.manifest["deleted"], *outer):
        parent = rel.rpartition("/")[0]
        if parent and os.path.realpath(os.path.join(attempt, parent)) != os.path.join(real, parent):
            return f"a folder above {rel} is a link now"
    for rel, digest in entry.manifest["before"].items():
        if file_digest(attempt / rel) != digest:
            return f"{rel} differs from the one set-up ran on"
    for rel in outer:
        if os.path.lexists(attempt / rel):
            return f"{rel} exists in the workspace now"
    return None


def intact(entry: Entry) -> bool:
    """Whether every file of `entry` is still a regular file holding the content it was
    stored with (its sha256: a write in place may keep size and mtime)."""
    tree = entry.path / _TREE
    files = [item for item in entry.manifest["files"] if item["kind"] == "file"]
    return all(file_digest(tree / item["rel"]) == item.get("sha256", "") for item in files)


def restore(entry: Entry, attempt: Path, *, run_dir: Path) -> None:
    """Make in `attempt` what set-up made when `entry` was stored, its old paths rewritten
    (plain string paths: a virtualenv is thousands of files)."""
    swap = _swapper(entry.manifest["paths"], _path_forms(attempt, run_dir))
    for rel in entry.manifest["deleted"]:
        target = attempt / rel
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target, ignore_errors=True)
        else:
            target.unlink(missing_ok=True)
    tree, into = os.path.join(entry.path, _TREE), str(attempt)
    folders = []
    for item in entry.manifest["files"]:
        rel, kind = item["rel"], item["kind"]
        dest = os.path.join(into, rel)
        if kind == "dir":
            os.makedirs(dest, exist_ok=True)
            folders.append((dest, item["mode"]))
            continue
        if kind == "link":
            target = item["target"]
            _replace(dest)
            os.symlink(swap(target.encode()).decode() if item["rewrite"] else target, dest)
            continue
        src = os.path.join(tree, rel)
        if item["rewrite"]:
            _replace(dest)
            with open(src, "rb") as f, open(dest, "wb") as out:
                out.write(swap(f.read()))
        else:
            _place(src, dest)
        os.utime(dest, ns=(item["mtime"], item["mtime"]))
        if item["mode"] != 0o644:
            os.chmod(dest, item["mode"])
    for folder, bits in reversed(folders):  # a read-only folder once its files are in
        os.chmod(folder, bits)
    os.utime(entry.path / _MANIFEST)  # last used: `atom cache prune` goes by it


def _replace(path: str) -> None:
    if os.path.lexists(path) and not os.path.isdir(path):
        os.unlink(path)


def _swapper(olds: Mapping[str, str], news: Mapping[str, str]) -> Callable[[bytes], bytes]:
    """The stored attempt's and run folder's paths replaced by this run's, longest first."""
    mapping = {olds[name].encode(): news[name].encode() for name in olds if name in news}
    pattern = re.compile(b"|".join(re.escape(o) for o in sorted(mapping, key=len, reverse=True)))

    def swap(data: bytes) -> bytes:
        return pattern.sub(lambda m: mapping[m.group(0)], data)

    return swap


#: Linux's FICLONE ioctl: the destination shares the source's blocks (btrfs, XFS).
_FICLONE = 0x40049409


def _place(src: str, dest: str) -> None:
    """`dest` as `src`, a file of its own: a clone (copy-on-write), else a copy."""
    _replace(dest)
    if not (sys.platform.startswith("linux") and _clone(src, dest)):
        shutil.copyfile(src, dest)


_CLONE_WORKS: dict[int, bool] = {}


def _clone(src: str, dest: str) -> bool:
    """A reflink of `src` at `dest`; False where the file system cannot (per device)."""
    device = os.stat(os.path.dirname(src)).st_dev
    if _CLONE_WORKS.get(device) is False:
        return False
    with open(src, "rb") as fin, open(dest, "wb") as fout:
        try:
            fcntl.ioctl(fout.fileno(), _FICLONE, fin.fileno())
        except OSError as exc:
            if exc.errno in (errno.EOPNOTSUPP, errno.EXDEV, errno.EINVAL, errno.ENOTTY):
                _CLONE_WORKS[device] = False
                fout.close()
                os.unlink(dest)
                return False
            raise
    _CLONE_WORKS[device] = True
    return True


# --- listing and pruning ----------------------------------------------------------------------


def entries(root: Path) -> list[Entry]:
    """Least recently used first."""
    if not root.is_dir():
        return []
    found = [
        Entry.read(folder)
        for folder in root.iterdir()
        if not folder.name.startswith(".") and folder.is_dir()
    ]
    return sorted(found, key=lambda e: (e.last_used, e.path.name))


def to_prune(
    root: Path,
    *,
    max_bytes: int | None = None,
    older_than_days: float | None = None,
    everything: bool = False,
    now: float | None = None,
) -> list[Entry]:
    """The entries to delete: all; those unused for `older_than_days`; broken ones or of
    another format; then the least recently used until the rest fit in `max_bytes`."""
    found = entries(root)
    if everything:
        return found
    now = time.time() if now is None else now
    doomed = [e for e in found if e.manifest.get("format") != FORMAT]
    if older_than_days is not None:
        cutoff = now - older_than_days * 86400
        doomed += [e for e in found if e not in doomed and e.last_used < cutoff]
    if max_bytes:
        left = [e for e in found if e not in doomed]
        total = sum(e.size for e in left)
        for e in left:
            if total <= max_bytes:
                break
            doomed.append(e)
            total -= e.size
    return doomed


def prune(doomed: Iterable[Entry]) -> list[Path]:
    """Delete the entries; their folders (one that cannot be removed stays)."""
    deleted = []
    for e in doomed:
        for path in e.path.rglob("*"):  # a read-only file or folder (set-up's, or older)
            if not path.is_symlink():
                path.chmod(stat.S_IMODE(path.lstat().st_mode) | stat.S_IWUSR)
        shutil.rmtree(e.path, ignore_errors=True)
        if not e.path.exists():
            deleted.append(e.path)
    return deleted
