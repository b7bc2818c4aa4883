"""Writing files so that nothing is ever half-written, and reading and copying folders an
agent wrote without following a link or opening a special file.

Every file pytest-atom writes is replaced the same way: a temporary file beside the target,
flushed to disk, then renamed over it, so a crash or Ctrl-C leaves the previous file whole.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_atom.errors import LinkOutsideError, SpecialFileError

#: Caches that running a fixture's own tests leaves behind: never copied into a run,
#: never part of an agent's work.
CACHE_DIRS = ("__pycache__", ".pytest_cache", ".mypy_cache")
copy_ignore = shutil.ignore_patterns(*CACHE_DIRS)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: Path, data: str | bytes) -> Path:
    """Replace `path` with `data` atomically (text is UTF-8), keeping an existing file's
    mode; a new one gets the umask's (mkstemp's 0600 would hide a cassette from the team)."""
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
    """`dest` as `copy_tree` with files hard-linked where the file system can. Only for a
    folder nothing writes to any more: a file written in place would change in both."""
    return copy_tree(source, dest, ignore, link=True)


#: Folders a copy from outside git leaves out: caches, virtualenvs, other tools' state.
SKIPPED_DIRS = frozenset(
    {*CACHE_DIRS, ".git", ".hg", ".svn", ".venv", "venv", "node_modules", ".tox", ".nox"}
    | {".ruff_cache"}
)


# --- what a path in a folder the agent wrote is, read without following links ----------------
#
# Whatever the harness shows or copies of an attempt the agent may have made: a symlink to the
# caller's home, a FIFO that blocks a reader forever, a device that never ends. So nothing
# here follows a link or opens anything but a regular file.


_SPECIAL_KINDS = (
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


#: How a file an agent may have made is opened: never through a link, never waiting on a
#: FIFO, never making a terminal the controlling one.
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def special_kind(mode: int) -> str | None:
    """A device, FIFO or socket in words ("a FIFO (named pipe)"); None for anything else."""
    return next((words for test, words in _SPECIAL_KINDS if test(mode)), None)


def special_error(path: Path, shown: str, kind: str) -> SpecialFileError:
    """The error for a special file at `path` (shown as `shown`), saying how to leave it out."""
    return SpecialFileError(
        f"{shown!r} is {kind} ({path}): pytest-atom copies no devices, FIFOs or sockets "
        "into a run; remove it, or leave it out with the spec's `workspace: exclude:`"
    )


def link_text(target: str) -> str:
    """How a symlink is shown wherever its content would be: its target's text."""
    return f"symbolic link -> {target}"


def read_regular(path: Path) -> bytes | None:
    """The bytes of `path` when it is a regular file itself; None for anything else. Opened with
    ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat`` before any read, so a file swapped for
    a link or a FIFO in between is still never followed nor waited on."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return handle.read()


def shown_content(path: Path) -> str | bytes | None:
    """What a file of a folder the agent wrote shows as: a regular file's text (bytes when not
    UTF-8), a link as `link_text`, a special file as its kind; None: missing or a folder."""
    try:
        st = path.lstat()
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return link_text(os.readlink(path))
    kind = special_kind(st.st_mode)
    if kind is not None:
        return f"{kind}, not read"
    if not stat.S_ISREG(st.st_mode):
        return None
    data = read_regular(path)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def shown_text(root: Path, rel: str) -> str | None:
    """`shown_content` of `rel` under `root` as text; None when missing or linked outside `root`."""
    if contained(root, Path(rel).parent) is None:
        return f"<{rel} lies in a folder linked outside {root.name or root}, not read>"
    content = shown_content(root / rel)
    return content.decode("utf-8", "replace") if isinstance(content, bytes) else content


def contained(root: Path, rel: str | Path) -> Path | None:
    """`root / rel` with every link resolved, or None when that leads outside `root`."""
    base = root.resolve()
    target = (base / rel).resolve()
    return target if target.is_relative_to(base) else None


def copy_regular(src: Path, dst: Path) -> None:
    """Copy the regular file `src` to the new file `dst` with its mode and times; a link is
    never followed and a special file never opened (`SpecialFileError`), even one swapped in
    after the caller looked: the checks are made on the open descriptor."""
    fd = os.open(src, _READ_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise special_error(src, src.name, special_kind(st.st_mode) or "not a regular file")
        out = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            _copy_bytes(fd, out)
            os.fchmod(out, stat.S_IMODE(st.st_mode))
            os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))
        finally:
            os.close(out)
    finally:
        os.close(fd)


def _copy_bytes(src: int, dst: int) -> None:
    """All of `src` into `dst`, in the kernel where it can (as shutil.copyfile does)."""
    try:
        while os.sendfile(dst, src, None, 1 << 30):
            pass
    except OSError:  # no sendfile between these two: read and write
        os.lseek(src, 0, os.SEEK_SET)
        os.lseek(dst, 0, os.SEEK_SET)
        os.ftruncate(dst, 0)
        while chunk := os.read(src, 1 << 20):
            os.write(dst, chunk)


@dataclass(frozen=True)
class _CopyRules:
    dest: Path  # the copy's top, which names what is refused
    ignore: Any
    link: bool
    within: Path | None  # follow links that stay inside this folder; None: keep links


def copy_tree(
    source: Path,
    dest: Path,
    ignore: Any = None,
    *,
    link: bool = False,
    follow_within: Path | None = None,
) -> Path:
    """Copy the folder `source` to the new folder `dest`: links kept as links, regular files copied
    (`link`: hard-linked where it can), a device, FIFO or socket refused (`SpecialFileError`)
    before it is opened and `dest` removed. `follow_within` (a project's root) copies a link as
    what it names when that resolves inside it, and refuses one leading out (`LinkOutsideError`)."""
    rules = _CopyRules(dest, ignore, link, follow_within and follow_within.resolve())
    dest.mkdir(parents=True)
    try:
        _copy_into(source, dest, rules, frozenset({source.resolve()}))
        shutil.copystat(source, dest)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)  # a copy that fails leaves nothing behind
        raise
    return dest


def _copy_into(folder: Path, dest: Path, rules: _CopyRules, seen: frozenset[Path]) -> None:
    with os.scandir(folder) as scan:
        entries = sorted(scan, key=lambda e: e.name)
    skipped = rules.ignore(os.fspath(folder), [e.name for e in entries]) if rules.ignore else ()
    for entry in entries:
        if entry.name in skipped:
            continue
        src, dst = Path(entry.path), dest / entry.name
        mode = entry.stat(follow_symlinks=False).st_mode
        if stat.S_ISLNK(mode) and rules.within is not None:
            src, mode = _followed(src, dst, rules)
        if stat.S_ISLNK(mode):
            os.symlink(os.readlink(src), dst)
        elif stat.S_ISDIR(mode):
            inner = seen
            if rules.within is not None:  # links followed: a link to a folder above, once
                if src.resolve() in seen:
                    raise LinkOutsideError(f"{_shown(dst, rules)!r} links to a folder it is in")
                inner = seen | {src.resolve()}
            dst.mkdir()
            _copy_into(src, dst, rules, inner)
            shutil.copystat(src, dst)
        elif stat.S_ISREG(mode):
            _place(src, dst, rules.link)
        else:
            kind = special_kind(mode) or "not a regular file"
            raise special_error(src, _shown(dst, rules), kind)


def _followed(src: Path, dst: Path, rules: _CopyRules) -> tuple[Path, int]:
    """What the link `src` names, and its mode, when it stays inside `rules.within`."""
    assert rules.within is not None
    target = src.resolve()
    if not target.is_relative_to(rules.within) or not target.exists():
        raise LinkOutsideError(
            f"{_shown(dst, rules)!r} ({src}) is a link to {target}, outside the project "
            f"{rules.within} or missing: pytest-atom copies nothing from outside the project "
            "into a run; replace the link with the file, or point it inside the project"
        )
    return target, target.stat().st_mode


def _shown(dst: Path, rules: _CopyRules) -> str:
    return dst.relative_to(rules.dest).as_posix()


def _place(src: Path, dst: Path, link: bool) -> None:
    if link:
        try:
            os.link(src, dst, follow_symlinks=False)
            return
        except OSError:
            pass
    copy_regular(src, dst)
