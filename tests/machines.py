"""Generated machines: another caller's HOME, XDG folders, temp folder, time zone, locale,
user, working folder and kernel, for replaying the shipped fixtures as a stranger would.

A `Machine` is a caller environment plus the cassettes as that machine would have recorded
them before pytest-atom masked its details (another kernel release, login shell, user id,
count of the sandbox's paths and XDG cache folder: what pytest-atom masks on load). `replay` runs
``pytest --atom --atom-match=strict`` in a subprocess from a copy of fixtures/specs at the
machine's depth, with nothing of this process's environment but PATH, the CLI to use and
the import path of this checkout. `tree` snapshots a folder (names, sizes, mtimes), so a
test can show the caller's folders are left as they were.

Shared by tests/replay/test_machines.py (a few machines and specs in the suite) and
benchmarks/machines.py (the full sweep).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "specs"
#: The XDG base folders a caller may set (each machine sets some, leaves the rest unset).
XDG = ("XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")
#: Locales every Debian and Ubuntu has (an uninstalled one makes bash warn in tool output,
#: which is the machine's setup failing, not pytest-atom's masking).
LOCALES = ("C.UTF-8", "C.utf8", "POSIX", "C")
ZONES = ("Pacific/Kiritimati", "America/Los_Angeles", "Asia/Kolkata", "Etc/GMT+12", "UTC")
USERS = ("alice", "bob", "ci-runner", "build", "mallory")
KERNELS = ("5.15.0-1071-azure", "6.8.0-48-generic", "4.19.0-27-cloud-amd64", "6.1.0-9-arm64")


@dataclass(frozen=True)
class Machine:
    """One generated caller: its environment's values, its folders' layout, its kernel."""

    name: str
    user: str
    zone: str
    lang: str
    lc_all: str | None
    xdg: tuple[str, ...]  # the XDG variables this caller sets (to folders of its own)
    tmp_depth: int  # how many folders deep its TMPDIR is (a long path for a large one)
    work_depth: int  # how many folders deep its copy of the fixtures is
    kernel: str
    uid: int

    @classmethod
    def generate(cls, seed: int) -> Machine:
        rng = random.Random(seed)
        return cls(
            name=f"machine{seed}",
            user=rng.choice(USERS),
            zone=rng.choice(ZONES),
            lang=rng.choice(LOCALES),
            lc_all=rng.choice((None, *LOCALES)),
            xdg=tuple(x for x in XDG if rng.random() < 0.6),
            tmp_depth=rng.choice((0, 3, 12)),
            work_depth=rng.choice((0, 2, 5)),
            kernel=rng.choice(KERNELS),
            uid=rng.choice((1000, 1001, 501, 65534)),
        )

    def folders(self, root: Path) -> dict[str, Path]:
        """The caller's HOME, set XDG folders and TMPDIR under `root` (not yet created)."""
        home = root / "home" / self.user
        out = {"HOME": home}
        for name in self.xdg:
            out[name] = root / "xdg" / name.lower()
        deep = "/".join(f"tmp-level-{i}" for i in range(self.tmp_depth))
        out["TMPDIR"] = root / "tmp" / deep if deep else root / "tmp"
        return out

    def environ(self, root: Path, claude_bin: Path) -> dict[str, str]:
        """The caller's whole environment: its folders and details, our PATH, the CLI."""
        env = {name: str(path) for name, path in self.folders(root).items()}
        env.update(
            PATH=os.environ["PATH"],
            TZ=self.zone,
            LANG=self.lang,
            USER=self.user,
            LOGNAME=self.user,
            SHELL="/bin/zsh",  # not this machine's, and no run's business
            ATOM_CLAUDE_BIN=str(claude_bin),  # its own CLI cache is elsewhere
            ATOM_SRT_BIN=os.environ.get("ATOM_SRT_BIN", ""),  # and so is its sandbox runtime
            # What a caller's environment typically also holds, none of which may reach a run.
            GITHUB_TOKEN="ghp_" + "x" * 36,
            AWS_SECRET_ACCESS_KEY="generated/machine/secret",
            PYTHONDONTWRITEBYTECODE="1",
        )
        if self.lc_all:
            env["LC_ALL"] = self.lc_all
        if os.environ.get("PYTHONPATH"):  # a source checkout: import this one
            env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        return env

    def rewrite(self, text: str) -> str:
        """A cassette's text as this machine would have recorded it, unmasked."""
        for pattern, value in (
            (r"OS Version: [^\\\n\"]+", f"OS Version: Linux {self.kernel}"),
            (r" - Shell: [^\\\n\"]+", " - Shell: bash (login shell: zsh)"),
            (r"<TMP>/(claude|cc-daemon|claude-host)-<UID>", rf"/tmp/\1-{self.uid}"),
            (r"\.\.\. and (?:<N>|\d+) more \(truncated", "... and 173 more (truncated"),
            # A caller whose XDG_CACHE_HOME reached the CLI, as it did before runs had their own.
            (
                r"<HOME>/\.cache/claude-cli-nodejs",
                f"/home/{self.user}/.xdg-cache/claude-cli-nodejs",
            ),
        ):
            text = re.sub(pattern, value, text)
        return text


def prepare(machine: Machine, root: Path, specs: tuple[str, ...]) -> Path:
    """The caller's folders (with a few files in each) and its copy of fixtures/specs, the
    cassettes of `specs` rewritten as the machine recorded them; returns the copy."""
    for name, folder in machine.folders(root).items():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name.lower()}.txt").write_text(f"{machine.name}'s {name}\n")
        (folder / "sub").mkdir(exist_ok=True)
        (folder / "sub" / "kept.bin").write_bytes(b"\0" * 1000)
    work = root / "work"
    for i in range(machine.work_depth):
        work = work / f"level{i}"
    copy = work / "specs"
    shutil.copytree(FIXTURES, copy)
    for spec in specs:
        for cassette in (copy / "cassettes" / spec).glob("*.yaml"):
            text = cassette.read_text(encoding="utf-8")
            rewritten = machine.rewrite(text)
            assert rewritten != text, cassette
            cassette.write_text(rewritten, encoding="utf-8")
    return copy


def replay(
    machine: Machine,
    root: Path,
    copy: Path,
    specs: tuple[str, ...],
    claude_bin: Path,
    timeout: float = 900,
) -> subprocess.CompletedProcess[str]:
    """``pytest --atom --atom-match=strict`` over `specs` in `copy` (see `prepare`), as the
    machine's caller runs it."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--atom",
            "--atom-match=strict",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            # pytest's own fd capture puts its files in the caller's TMPDIR (as it does
            # without pytest-atom): sys capture keeps the comparison to pytest-atom's doing.
            "--capture=sys",
            *(f"{spec}.atom.yaml" for spec in specs),
        ],
        cwd=copy,
        env=machine.environ(root, claude_bin),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


Tree = dict[str, tuple[str, int, int]]


def tree(folder: Path, skip: tuple[str, ...] = ()) -> Tree:
    """Every entry under `folder` (itself included): kind, size and mtime in ns, by path.
    Paths under a `skip` prefix (pytest-atom's own folder) are left out."""
    out: Tree = {}
    for base, dirs, files in os.walk(folder):
        for name in ["", *dirs, *files]:
            path = Path(base) / name
            rel = str(path.relative_to(folder))
            if any(rel == s or rel.startswith(s + "/") for s in skip):
                continue
            st = path.lstat()
            kind = "dir" if path.is_dir() and not path.is_symlink() else "file"
            out[rel] = (kind, st.st_size if kind == "file" else 0, st.st_mtime_ns)
    return out


def caller_trees(machine: Machine, root: Path) -> dict[str, Tree]:
    """The trees of the caller's HOME, XDG folders and TMPDIR, but pytest-atom's own folder
    (its Claude Code installs: ``$XDG_CACHE_HOME/pytest-atom``, ``~/.cache/pytest-atom``)."""
    out = {}
    for name, folder in machine.folders(root).items():
        skip = ("pytest-atom",) if name == "XDG_CACHE_HOME" else ()
        skip = (".cache/pytest-atom",) if name == "HOME" else skip
        out[name] = tree(folder, skip)
    return out
