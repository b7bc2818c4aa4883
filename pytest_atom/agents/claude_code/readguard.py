"""What the agent may read: its run folder, the system's folders and the toolchains it is given.

Claude Code's sandbox lets a command read the whole file system by default, and its file
tools read any path: from a run folder inside the user's project, the agent could read the
project's ``.env``, the home's credentials or the spec's answer key. Two of Claude Code's
own controls close that, measured on 2.1.331 and 2.1.332 (tests/agents/test_read_guard.py):

- ``sandbox.filesystem.denyRead: ["/"]`` with ``allowRead`` re-opening the system's folders
  (`SYSTEM_FOLDERS`), the run folder, the spec's extra writable paths and the toolchains the
  agent's environment names (`toolchains`): every sandboxed command reads nothing else.
  Denying everything keeps the request free of this machine's paths but the toolchains,
  which the normalizer drops (normalize.MACHINE_DETAILS);
- ``permissions.blockReadsOutsideWorkingDirectories``: the file tools (Read, Glob, Grep, by
  absolute or relative path) read only the attempt folder. They then cannot read the
  system's folders either; the agent's shell can.

``Read(...)`` deny rules are not used: one that covers the project or the home would also
cover the run folder inside them.

Claude Code 2.1.197's bubblewrap mounts the denied folders over the attempt folder's own
mounts, and every command fails ("bwrap: Can't mkdir …/.claude: Read-only file system"):
a CLI older than `GUARDED_SINCE` gets neither setting.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_atom.environment import TOOLCHAIN_ROOTS

#: The first Claude Code measured to re-open folders inside a denied one (2.1.197 is not).
GUARDED_SINCE = (2, 1, 331)
#: Folders of the system, readable by every sandboxed command: a fixed list, so the request
#: reads the same on every machine; /tmp, /home, /root and the rest stay closed.
SYSTEM_FOLDERS: tuple[str, ...] = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/var",
    "/run",
    "/dev",
    "/proc",
    "/sys",
    "/nix",
    "/snap",
    # macOS
    "/System",
    "/Library",
    "/Applications",
    "/private/etc",
    "/private/var/db",
)
_SYSTEM_PATHS = tuple(Path(folder) for folder in SYSTEM_FOLDERS)
#: PATH entries that are a toolchain's program folder: its root is the folder above.
_PROGRAM_FOLDERS = frozenset({"bin", "sbin", "shims"})


def guards_reads(cli_version: str | None) -> bool:
    """Whether the CLI of `cli_version` takes the read guard (an unknown version does)."""
    parts = re.findall(r"\d+", cli_version or "")[:3]
    if len(parts) < 3:
        return True
    return tuple(int(p) for p in parts) >= GUARDED_SINCE


def _within(path: Path, folder: Path) -> bool:
    """`path` is `folder` or below it: as text for absolute paths (``folder in path.parents``
    builds every parent, thousands of paths a run), as parts otherwise."""
    if path == folder:
        return True
    if path.is_absolute() and folder.is_absolute():
        above = str(folder)
        return str(path).startswith(above if above.endswith("/") else above + "/")
    return folder in path.parents


def toolchains(env: Mapping[str, str], *, home: Path, protected: Sequence[Path] = ()) -> list[Path]:
    """The toolchain folders `env` names outside the system's folders, made readable.

    Each PATH entry counts with its toolchain's root: the folder above a ``bin`` or
    ``shims``, and for one inside the caller's `home` the folder just below it (``~/.pyenv``
    for ``~/.pyenv/shims``, whose shims run ``~/.pyenv/versions``); so does a virtualenv's
    base interpreter (`_venv_base`). `TOOLCHAIN_ROOTS` and PYTHONPATH count as they are, and
    so do the folders a Python environment among them imports from (`_installed_elsewhere`;
    of one that holds the run folder, only its packages). A candidate that would re-open the
    home or a folder holding one of `protected` falls back to the entry alone, or is left
    out when even that would."""
    readable = _Readable(Path(os.path.normpath(home)), protected)
    add = readable.add
    roots = [add(e, True) for e in env.get("PATH", "").split(os.pathsep) if e]
    roots += [add(str(base), True) for root in roots if (base := _venv_base(root))]
    roots += [add(env[name], False) for name in TOOLCHAIN_ROOTS if env.get(name)]
    for entry in env.get("PYTHONPATH", "").split(os.pathsep):
        if entry:
            add(entry, False)
    for root in roots:
        for folder in _installed_elsewhere(root) if root is not None else ():
            if any(_within(c, folder) for c in readable.closed):
                # A flat-layout editable install of the project that holds the run folder:
                # its packages, not the project, as a src layout's `src/` would be.
                for package in _packages(folder):
                    add(str(package), False)
            else:
                add(str(folder), False)
    return list(readable.found)


class _Readable:
    """The folders `toolchains` makes readable: none holds the home or a `protected` one."""

    def __init__(self, home: Path, protected: Sequence[Path]) -> None:
        self.home = home
        self.protected = protected
        self.closed = [home, *(Path(os.path.normpath(p)) for p in protected)]
        self.found: dict[Path, None] = {}

    def add(self, entry: str, rooted: bool) -> Path | None:
        """`entry` or, `rooted`, its toolchain's root: the first that holds nothing closed."""
        path = Path(os.path.normpath(entry))
        if not path.is_absolute() or any(_within(path, s) for s in _SYSTEM_PATHS):
            return None
        if any(_within(path, p) for p in self.protected):
            return None  # the run's own folders (its tool shims) are readable anyway
        candidates = [path]
        if rooted and path.name in _PROGRAM_FOLDERS:
            candidates.insert(0, path.parent)
        if rooted and _within(path, self.home) and path != self.home:
            candidates.insert(0, self.home / path.relative_to(self.home).parts[0])
        for candidate in candidates:
            if not any(_within(c, candidate) for c in self.closed):
                self.found.setdefault(candidate, None)
                return candidate
        return None


def _venv_base(root: Path | None) -> Path | None:
    """The folder of the interpreter a virtualenv at `root` was made from (``home =`` in
    its ``pyvenv.cfg``), which its ``python`` links to."""
    try:
        lines = (root / "pyvenv.cfg").read_text(encoding="utf-8").splitlines() if root else []
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip().startswith("/"):
            return Path(value.strip())
    return None


def _packages(folder: Path) -> list[Path]:
    """The top-level packages and modules an import path entry `folder` provides."""
    try:
        entries = sorted(folder.iterdir())
    except OSError:
        return []
    return [
        entry
        for entry in entries
        if not entry.name.startswith(".")
        and ((entry / "__init__.py").is_file() or (entry.suffix == ".py" and entry.is_file()))
    ]


def _installed_elsewhere(root: Path) -> list[Path]:
    """The folders a Python environment under `root` imports from outside it: the paths its
    site-packages' ``.pth`` files list (an editable install's source)."""
    folders: list[Path] = []
    patterns = ("lib/python*/site-packages/*.pth", "versions/*/lib/python*/site-packages/*.pth")
    for pattern in patterns:
        for pth in sorted(root.glob(pattern)):
            try:
                lines = pth.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            for line in lines:
                line = line.strip()
                if line.startswith("/") and Path(line).is_dir():
                    folders.append(Path(line))
    return folders


def read_settings(
    readable: Iterable[Path],
    env: Mapping[str, str] | None,
    *,
    home: Path,
    protected: Sequence[Path],
) -> dict[str, Any]:
    """The settings that confine the agent's reads: `readable` (the run folder and the
    spec's extra writable paths), then the toolchains of `env` (None: this process's), last,
    as the normalizer drops what follows the run folder in the request's list."""
    allowed = [*SYSTEM_FOLDERS, *(str(p) for p in readable)]
    tools = toolchains(os.environ if env is None else env, home=home, protected=protected)
    allowed += [str(p) for p in tools if str(p) not in allowed]
    return {
        "permissions": {"blockReadsOutsideWorkingDirectories": True},
        "sandbox": {"filesystem": {"denyRead": ["/"], "allowRead": allowed}},
    }
