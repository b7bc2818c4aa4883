"""A mod's own tests: its ``*.test.ts`` and ``*.test.tsx`` files, each run by the pinned
CLI's ``claude plugin test``, confined (docs/how-to/plugin-test.md).

``claude plugin test DIR`` runs every test file under a folder, with no option to pick one
and no machine-readable reporter. So each file runs in a copy of its mod that holds no
other test file, and each test's result, failure and duration are read from what the CLI
prints (`parse`). The copy keeps the user's mod untouched, and the CLI runs in the sandbox
every process of a run is confined by, with an environment built from parts: no network,
no credentials. The pytest items that collect the files are `pytest_atom.pytest.mod_tests`.
Where to add: a new fact read from the CLI's output, in `parse`.
"""

from __future__ import annotations

import re
import shlex
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from pytest_atom.agents.claude_code.cli import find_claude
from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.agents.claude_code.srt import process_sandbox
from pytest_atom.checks.shell import run_shell_split
from pytest_atom.environment import build_env, release_tmpdirs
from pytest_atom.inert import inert
from pytest_atom.run_folders import run_name
from pytest_atom.spec.types import SandboxOptions

#: The file names ``claude plugin test`` runs (it skips ``node_modules`` and dot-folders).
TEST_FILE = re.compile(r"\.test\.tsx?$")
#: What makes a folder a mod: the CLI loads its hooks module through ``hooks/hooks.json``.
HOOKS_MANIFEST = Path("hooks") / "hooks.json"
#: How long one file's run may take: the CLI gives each file's child two minutes itself.
TIMEOUT_SECONDS = 300.0
#: A test's line: ``(pass) TITLE [1.23ms]``; a failure's message follows, indented by two.
_RESULT = re.compile(r"^\((?P<word>pass|fail)\) (?P<title>.*) \[(?P<ms>\d+(?:\.\d+)?)ms\]$")
_LOAD_FAILED = "(fail) the file did not load"


@dataclass
class ModTest:
    """One test's result as the CLI printed it (title and message inert)."""

    title: str
    passed: bool
    ms: float
    message: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class FileRun:
    """One test file's run: its tests, and the CLI's exit code and output."""

    tests: list[ModTest]
    exit_code: int | None  # None: it ran out of time
    output: str
    seconds: float

    @property
    def passed(self) -> bool:
        return self.exit_code == 0 and all(t.passed for t in self.tests)


def mod_root(test_file: Path) -> Path | None:
    """The nearest folder above a test file with a ``hooks/hooks.json``, or None."""
    for folder in test_file.parents:
        if (folder / HOOKS_MANIFEST).is_file():
            return folder
    return None


def run_file(test_file: Path, mod: Path, runs_dir: Path) -> FileRun:
    """Run `test_file` of the mod at `mod` with the pinned CLI, in a new run folder under
    `runs_dir` (SandboxUnavailableError, ClaudeNotFoundError say how to install them)."""
    binary = find_claude()
    run_dir = runs_dir / run_name(f"mod-test-{test_file.name}")
    copy = run_dir / "mod"
    _copy_mod(mod, copy, keep=test_file.relative_to(mod), runs_dir=runs_dir)
    env = build_env(run_dir / "home")
    # The CLI's package (its binary, behind npm's link), which the read guard keeps closed.
    package = [binary, binary.resolve().parent.parent]
    sandbox = process_sandbox(Confinement(run_dir, SandboxOptions()), copy, env, package)
    command = shlex.join([str(binary), "plugin", "test", "."])
    started = time.monotonic()
    try:
        code, out, err = run_shell_split(command, copy, env, TIMEOUT_SECONDS, sandbox=sandbox)
    finally:
        release_tmpdirs(run_dir)
    output = inert(out + err)
    return FileRun(parse(out), code, output, time.monotonic() - started)


def _copy_mod(mod: Path, copy: Path, keep: Path, runs_dir: Path) -> None:
    """The mod at `copy`, with `keep` its only test file; ``.git``, ``.atom``, runs left out."""

    def ignored(folder: str, names: list[str]) -> set[str]:
        here = Path(folder).relative_to(mod)
        return {
            name
            for name in names
            if name in (".git", ".atom")
            or Path(folder, name) == runs_dir
            or (TEST_FILE.search(name) and here / name != keep and not Path(folder, name).is_dir())
        }

    shutil.copytree(mod, copy, symlinks=True, ignore=ignored)


def parse(output: str) -> list[ModTest]:
    """Each test's result from ``claude plugin test``'s output, in order; a file that did
    not load is one failed test of that name."""
    tests: list[ModTest] = []
    current: ModTest | None = None
    for line in output.splitlines():
        found = _RESULT.match(line)
        if found:
            current = ModTest(inert(found["title"]), found["word"] == "pass", float(found["ms"]))
            tests.append(current)
        elif line == _LOAD_FAILED:
            current = ModTest("the file did not load", False, 0.0)
            tests.append(current)
        elif current is not None and line.startswith("  "):
            current.message.append(inert(line[2:]))
        else:  # a file's name, the blank line between files, the summary
            current = None
    for test in tests:
        while test.message and not test.message[-1].strip():
            test.message.pop()
    return tests
