"""The outcome cache's test project: a spec with a workspace, a script, a cassette file, a
command check and a project `.atom/` folder, so every part of an input digest has a file
(or a variable) a test can change. tests/outcome_cache/test_input_digest.py,
test_outcome_cache.py and test_cache_cli.py build on it."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_atom.outcome_cache.input_digest import InputDigest, input_digest
from pytest_atom.outcome_cache.inputs import Reads
from pytest_atom.settings.config import AtomConfig, load_config
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import load_specs

__all__ = [
    "CHANGES",
    "SPEC",
    "TURNS",
    "CacheProject",
    "fake_claude",
    "isolated_project",
    "write_project",
]

#: One turn that writes hello.txt, then the end: a real CLI run of it takes seconds.
TURNS = """turns:
  - text: I'll create hello.txt.
    tool_use:
      - name: Bash
        input: {command: "printf 'hello\\\\n' > hello.txt", description: Create hello.txt}
  - text: Done. EXIT_LOOP_NOW
"""
SPEC = """name: greet
prompt: Create hello.txt holding the line hello.
workspace: ws
script: turns.yaml
max_iterations: 3
accept:
  - file_contains: {path: hello.txt, pattern: "^hello$"}
  - command: "python3 -c pass"
"""


@dataclass(frozen=True)
class CacheProject:
    """The project's root and the files a test changes."""

    root: Path

    @property
    def spec_file(self) -> Path:
        return self.root / "specs" / "greet.atom.yaml"

    @property
    def workspace(self) -> Path:
        return self.root / "specs" / "ws"

    @property
    def script(self) -> Path:
        return self.root / "specs" / "turns.yaml"

    @property
    def cassette(self) -> Path:
        return self.root / "specs" / "cassettes" / "greet" / "greet.yaml"

    def spec(self) -> Spec:
        return load_specs(self.spec_file)[0]

    def config(self) -> AtomConfig:
        return load_config(cwd=self.root)

    def digest(
        self,
        settings: RunSettings | None = None,
        spec: Spec | None = None,
        repeat: int | None = None,
        reads: Reads | None = None,
    ) -> InputDigest:
        """The digest now; a fresh `reads` (a new session's) unless one is given."""
        return input_digest(
            spec or self.spec(),
            settings or RunSettings(),
            config=self.config(),
            runs_dir=self.root / ".atom" / "runs",
            repeat=repeat,
            reads=reads,
        )


def write_project(root: Path, *, cassette: bool = True) -> CacheProject:
    """The project under `root`: ``specs/greet.atom.yaml`` and its files, `.atom/config.yaml`."""
    specs = root / "specs"
    (specs / "ws").mkdir(parents=True)
    (specs / "ws" / "notes.txt").write_text("notes\n", encoding="utf-8")
    (specs / "greet.atom.yaml").write_text(SPEC, encoding="utf-8")
    (specs / "turns.yaml").write_text(TURNS, encoding="utf-8")
    if cassette:
        (specs / "cassettes" / "greet").mkdir(parents=True)
        (specs / "cassettes" / "greet" / "greet.yaml").write_text("interactions: []\n")
    (root / ".atom").mkdir()
    (root / ".atom" / "config.yaml").write_text("version: '1'\n", encoding="utf-8")
    return CacheProject(root)


def fake_claude(folder: Path, version: str) -> Path:
    """A `claude` laid out as an npm install of `version` (its package.json beside `bin/`):
    what `claude_version` reads without starting it. Never started: it exits 1."""
    binary = folder / "bin" / "claude"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    os.chmod(binary, 0o755)
    manifest = {"name": "@anthropic-ai/claude-code", "version": version}
    (folder / "package.json").write_text(json.dumps(manifest), encoding="utf-8")
    return binary


def isolated_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CacheProject:
    """The project, with a tool folder first on PATH (its `python3` is the command check's)
    and a stand-in Claude Code install of the pinned version."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "python3").write_text('#!/bin/sh\nexec /usr/bin/env python3 "$@"\n')
    os.chmod(tools / "python3", 0o755)
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(fake_claude(tmp_path / "claude", "2.1.332")))
    return write_project(tmp_path / "proj")


# --- one change per digest part: what each both-directions test changes ---------------------

#: A change to the project (or the process) that changes one part; it may return the
#: settings to digest with.
Change = Callable[[CacheProject, pytest.MonkeyPatch], RunSettings | None]


def _spec(p: CacheProject, m: pytest.MonkeyPatch) -> None:
    text = p.spec_file.read_text().replace("holding the line hello", "holding hello")
    p.spec_file.write_text(text)


def _workspace(p: CacheProject, m: pytest.MonkeyPatch) -> None:
    (p.workspace / "notes.txt").write_text("other notes\n")


def _cassette(p: CacheProject, m: pytest.MonkeyPatch) -> None:
    p.cassette.write_text("interactions: [] # re-recorded\n")


def _script(p: CacheProject, m: pytest.MonkeyPatch) -> None:
    p.script.write_text(p.script.read_text().replace("Done.", "Finished."))


def _claude_code(p: CacheProject, m: pytest.MonkeyPatch) -> None:
    m.setenv("ATOM_CLAUDE_BIN", str(fake_claude(p.root.parent / "claude-new", "2.1.999")))


def _environment(p: CacheProject, m: pytest.MonkeyPatch) -> None:
    m.setenv("LANG", "xx_XX.UTF-8")  # a default-passed variable: the run's processes get it


def _toolchain(p: CacheProject, m: pytest.MonkeyPatch) -> None:
    tool = p.root.parent / "tools" / "python3"
    tool.write_text(tool.read_text() + "# a new interpreter\n")


def _settings(p: CacheProject, m: pytest.MonkeyPatch) -> None:
    config = p.root / ".atom" / "config.yaml"
    config.write_text(config.read_text() + "# the project's configuration, edited\n")


CHANGES: dict[str, Change] = {
    "spec": _spec,
    "workspace": _workspace,
    "cassette": _cassette,
    "script": _script,
    "claude_code": _claude_code,
    "environment": _environment,
    "tools": _toolchain,
    "settings": _settings,
}
