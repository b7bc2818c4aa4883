"""The README's quick start runs as written: its commands, verbatim, offline.

The commands are read from the README's "Quick start" code block, so the test and the
README cannot drift apart. They start Claude Code against pytest-atom's local gateway (the
example spec is scripted): no network, no API key.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.helpers import user_shell_env

REPO = Path(__file__).resolve().parents[2]


def quick_start_commands(readme: str) -> str:
    """The first ```bash block under the README's "## Quick start" heading."""
    section = readme.split("\n## Quick start\n", 1)
    assert len(section) == 2, "README.md has no '## Quick start' section"
    block = re.search(r"```bash\n(.*?)```", section[1].split("\n## ", 1)[0], re.DOTALL)
    assert block, "the quick start has no ```bash block"
    return block.group(1)


def test_the_quick_start_block_is_found() -> None:
    commands = quick_start_commands((REPO / "README.md").read_text(encoding="utf-8"))
    assert commands.startswith("atom init ")
    assert "--atom-record-mode" in commands


@pytest.mark.slow
def test_the_quick_start_runs_as_written(tmp_path: Path, claude_bin: Path) -> None:
    commands = quick_start_commands((REPO / "README.md").read_text(encoding="utf-8"))
    env = user_shell_env(claude_bin)  # `atom` and `pytest`: the checkout under test
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", commands],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    project = tmp_path / "demo"
    cassette = project / "specs" / "cassettes" / "hello" / "hello.yaml"
    assert cassette.is_file(), output
    assert "scripted://hello.yaml" in cassette.read_text(encoding="utf-8")
    assert output.count("1 passed") >= 3, output
