"""The key a set-up result is filed under: what decides it (the package's docstring).

The whole workspace tree is the default because a set-up may read any file of it (a build
compiles the sources, not only the lock files): a key that hashes less restores an old build
after a source changed. Hashing it costs a read of the workspace the copy has just made (in
the page cache), and a `stat` of each tool.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import stat
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_atom.environment import RUN_FOLDERS
from pytest_atom.replay.placeholders import RUN_DIR

FORMAT = 2  # of an entry and what its key hashes: another one is a miss

#: Interpreters and package managers set-up commands run through scripts they name
#: (`npm ci` runs node, `make` runs the compiler): their identity is part of the key.
TOOLS = tuple(
    "python3 python pip pip3 uv poetry node npm npx yarn pnpm bun cargo rustc go ruby bundle"
    " java mvn gradle make cc gcc".split()
)
#: Text that separates commands in a shell line: the word after each is a command too.
_SEPARATORS = re.compile(r"&&|\|\||[;|&()\n]")


@dataclass(frozen=True)
class SetupKey:
    """The digest an entry is filed under, and what went into it as `atom cache list` shows
    it (the variables by name only: a value may be a token)."""

    digest: str
    commands: tuple[str, ...]
    inputs: tuple[str, ...]
    tools: tuple[str, ...]
    env_names: tuple[str, ...]

    @property
    def short(self) -> str:
        return self.digest[:12]


def setup_key(
    commands: Sequence[str],
    attempt: Path,
    env: Mapping[str, str],
    *,
    run_dir: Path,
    inputs: Sequence[str] = (),
) -> SetupKey:
    """The key of running `commands` in the fresh attempt folder `attempt` with `env`."""
    tree: object
    if inputs:
        files = input_files(attempt, inputs)
        tree = {rel: file_digest(attempt / rel) for rel in files}
        shown = tuple(files)
    else:
        tree, count = tree_digest(attempt)
        shown = (f"the whole workspace ({count} paths, by content)",)
    tools = toolchain(commands, env.get("PATH", ""))
    values = key_env(env, run_dir)
    layout = attempt.relative_to(run_dir).as_posix() if attempt.is_relative_to(run_dir) else "?"
    data = {
        "format": FORMAT,
        "platform": [sys.platform, platform.machine()],
        "commands": list(commands),
        "workspace": tree,
        "input_globs": list(inputs),
        "tools": tools,
        "env": values,
        "layout": layout,
    }
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    return SetupKey(digest, tuple(commands), shown, tuple(sorted(tools)), tuple(values))


def input_files(attempt: Path, inputs: Sequence[str]) -> list[str]:
    found = {p for glob in inputs for p in attempt.glob(glob) if p.is_file()}
    return sorted(p.relative_to(attempt).as_posix() for p in found)


def tree_digest(folder: Path) -> tuple[str, int]:
    """The digest of every path of `folder` but its ``.git`` (its one commit is a function
    of the files) by kind and content: a file's bytes and whether it is executable, a
    link's target (never followed), a folder's name; and how many paths it holds."""
    hashed = hashlib.sha256()
    paths = sorted(walk(folder, git=False))
    for rel, st in paths:
        mode = st.st_mode
        if stat.S_ISDIR(mode):
            hashed.update(f"dir {rel}\n".encode())
        elif stat.S_ISLNK(mode):
            target = os.readlink(folder / rel).encode()
            hashed.update(f"link {rel} {len(target)}\n".encode() + target)
        elif stat.S_ISREG(mode):
            kind = "exec" if mode & stat.S_IXUSR else "file"
            hashed.update(f"{kind} {rel} {st.st_size}\n".encode())
            with open(folder / rel, "rb") as f:
                hashed.update(hashlib.file_digest(f, "sha256").digest())
        else:
            hashed.update(f"special {rel}\n".encode())
    return hashed.hexdigest(), len(paths)


def walk(folder: Path, *, git: bool = True) -> Iterator[tuple[str, os.stat_result]]:
    """Each path under `folder` (posix, relative) and its `lstat`; the top ``.git`` if `git`."""
    stack = [(str(folder), "")]
    while stack:
        here, prefix = stack.pop()
        with os.scandir(here) as found:
            for entry in found:
                rel = prefix + entry.name
                if rel == ".git" and not git:
                    continue
                st = entry.stat(follow_symlinks=False)
                yield rel, st
                if stat.S_ISDIR(st.st_mode):
                    stack.append((entry.path, rel + "/"))


def toolchain(commands: Sequence[str], path: str) -> dict[str, str]:
    """Each tool the commands name, or `TOOLS` holds, as PATH resolves it: real path, size
    and mtime (hashing it would cost more than set-up saves on a small one)."""
    names = set(TOOLS)
    for command in commands:
        for part in _SEPARATORS.split(command):
            try:
                words = shlex.split(part)
            except ValueError:
                words = part.split()
            words = [w for w in words if "=" not in w.split("/")[0]]  # VAR=value cmd
            if words and "/" not in words[0]:
                names.add(words[0])
    out = {}
    for name in sorted(names):
        found = shutil.which(name, path=path)
        if found is None:
            continue
        real = os.path.realpath(found)
        try:
            st = os.stat(real)
        except OSError:
            continue
        out[name] = f"{real}:{st.st_size}:{st.st_mtime_ns}"
    return out


def key_env(env: Mapping[str, str], run_dir: Path) -> dict[str, str]:
    """The environment but the run's own folders, the run folder's path as ``<RUN_DIR>``."""
    forms = sorted({str(run_dir), str(run_dir.resolve())}, key=len, reverse=True)
    out = {}
    for name, value in sorted(env.items()):
        if name in RUN_FOLDERS:
            continue
        for form in forms:
            value = value.replace(form, RUN_DIR)
        out[name] = value
    return out


def file_digest(path: Path) -> str | None:
    """A file's sha256; None when it is no regular file."""
    try:
        if not stat.S_ISREG(path.lstat().st_mode):
            return None
        with path.open("rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None
