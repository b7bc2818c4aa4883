"""The outcome cache's test project: a spec with a workspace, a script, a cassette file, a
command check and a project `.atom/` folder, so every part of an input digest has a file
(or a variable) a test can change. tests/history/test_input_digest.py,
test_outcome_cache.py and test_cache_cli.py build on it."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from pytest_atom.history.digest import InputDigest, input_digest
from pytest_atom.settings.config import AtomConfig, load_config
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec.load import load_specs
from pytest_atom.spec.types import Spec

__all__ = ["CacheProject", "SPEC", "TURNS", "fake_claude", "write_project"]

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
        self, settings: RunSettings | None = None, spec: Spec | None = None, repeat: int | None = None
    ) -> InputDigest:
        return input_digest(
            spec or self.spec(),
            settings or RunSettings(),
            config=self.config(),
            runs_dir=self.root / ".atom" / "runs",
            repeat=repeat,
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
