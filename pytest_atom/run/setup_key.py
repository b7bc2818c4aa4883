"""The key a spec's set-up result is cached under (run.setup_cache): what decides it.

The commands; the files they read (the spec's `setup: {inputs: [...]}` globs, else the
lock files found in the workspace); the toolchain PATH resolves; the environment set-up
gets, built from parts, without the run's own folders; the attempt folder's place in the
run; the platform and the cache's format. Cheap to compute: a walk of the workspace's
folders (not `SKIPPED_DIRS`), a hash of a few files, a `stat` of each tool.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import stat
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_atom.environment import RUN_FOLDERS
from pytest_atom.files import SKIPPED_DIRS
from pytest_atom.replay.placeholders import RUN_DIR

#: The layout of an entry; another one is a miss.
FORMAT = 1

#: Files whose content decides what a package manager installs, found anywhere in the
#: workspace (outside `SKIPPED_DIRS`) when the spec names no `inputs:`.
LOCK_FILES = (
    "requirements*.txt",
    "constraints*.txt",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "poetry.lock",
    "uv.lock",
    "pdm.lock",
    "Pipfile",
    "Pipfile.lock",
    "environment.yml",
    "package.json",
    "package-lock.json",
    "npm-shrinkwrap.json",
    "yarn.lock",
    "pnpm-lock.yaml",
    "bun.lockb",
    "Cargo.toml",
    "Cargo.lock",
    "go.mod",
    "go.sum",
    "Gemfile",
    "Gemfile.lock",
    "composer.json",
    "composer.lock",
    "Makefile",
)
#: Interpreters and package managers set-up commands run through scripts they name
#: (`npm ci` runs node, `make` runs the compiler): their identity is part of the key.
TOOLS = (
    "python3",
    "python",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "node",
    "npm",
    "npx",
    "yarn",
    "pnpm",
    "bun",
    "cargo",
    "rustc",
    "go",
    "ruby",
    "bundle",
    "java",
    "mvn",
    "gradle",
    "make",
    "cc",
    "gcc",
)
#: Text that separates commands in a shell line: the word after each is a command too.
_SEPARATORS = re.compile(r"&&|\|\||[;|&()\n]")


@dataclass(frozen=True)
class SetupKey:
    """The digest an entry is filed under, and what went into it (shown by `atom cache
    list`: the commands, the input files by path, the tools by name, the variables by name
    only: a value may be a token)."""

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
    files = input_files(attempt, inputs)
    tools = toolchain(commands, env.get("PATH", ""))
    values = key_env(env, run_dir)
    layout = attempt.relative_to(run_dir).as_posix() if attempt.is_relative_to(run_dir) else "?"
    data = {
        "format": FORMAT,
        "platform": [sys.platform, platform.machine()],
        "commands": list(commands),
        "inputs": {rel: file_digest(attempt / rel) for rel in files},
        "input_globs": list(inputs),
        "tools": tools,
        "env": values,
        "layout": layout,
    }
    digest = hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()
    return SetupKey(digest, tuple(commands), tuple(files), tuple(sorted(tools)), tuple(values))


def input_files(attempt: Path, inputs: Sequence[str] = ()) -> list[str]:
    """The workspace files set-up reads (workspace-relative, sorted): those the spec's
    `inputs:` globs match, else the lock files found (`LOCK_FILES`)."""
    if inputs:
        found = {p for glob in inputs for p in attempt.glob(glob) if p.is_file()}
        return sorted(p.relative_to(attempt).as_posix() for p in found)
    out = []
    for dirpath, dirnames, filenames in os.walk(attempt):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
        for name in filenames:
            if any(fnmatch.fnmatchcase(name, pattern) for pattern in LOCK_FILES):
                out.append(Path(dirpath, name).relative_to(attempt).as_posix())
    return sorted(out)


def toolchain(commands: Sequence[str], path: str) -> dict[str, str]:
    """Each tool the commands name, or `TOOLS` holds, as PATH resolves it: real path, size
    and mtime (a new interpreter is a new key; hashing it would cost more than set-up
    saves on a small one)."""
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
    """The environment's values but the run's own folders, the run folder's path as
    ``<RUN_DIR>``: another run with the same parts has the same ones."""
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
    """A file's content digest; None when it is no regular file."""
    try:
        if not stat.S_ISREG(path.lstat().st_mode):
            return None
        with path.open("rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None
