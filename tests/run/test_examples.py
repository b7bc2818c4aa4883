"""The embedding example: a tool built on AtomRuntime.create_ephemeral, and its spec."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_atom.agents.claude_code.runner import ClaudeRunner, claude_env
from pytest_atom.gateway import Gateway, Script, ScriptedResponder
from tests.helpers import REPO

EXAMPLE = REPO / "examples" / "code_reviewer"


def load_reviewer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("reviewer", EXAMPLE / "reviewer.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_tool_embeds_an_ephemeral_atom(claude_bin: Path, tmp_path: Path) -> None:
    script = Script.load(EXAMPLE / "specs" / "scripts" / "review.yaml")
    with Gateway(ScriptedResponder(script)) as gateway:
        runner = ClaudeRunner(
            env=claude_env(gateway.url, tmp_path / "config"), claude_bin=claude_bin
        )
        result: dict[str, Any] = load_reviewer().review(
            EXAMPLE / "specs" / "workspaces" / "login" / "auth.py", runner=runner
        )
        turns = [e.request.json for e in gateway.exchanges if e.request.kind == "turn"]
    assert result["success"] and result["iterations"] == 1
    assert result["review"].startswith("## critical: SQL injection in login()")
    assert "# Code reviewer" in str(turns[0]["messages"])  # the tool's own embedded prompt
    source = EXAMPLE / "specs" / "workspaces" / "login" / "auth.py"
    assert 'f"SELECT 1 FROM users' in source.read_text()  # the reviewed file is never changed


@pytest.mark.slow
def test_the_example_spec_replays_its_cassette(
    pytester: pytest.Pytester, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    shutil.copytree(EXAMPLE, pytester.path / "code_reviewer")
    result = pytester.runpytest("--atom", "code_reviewer/specs")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*review-finds-sql-injection  passed    0.92*"])


@pytest.mark.slow
def test_the_conversation_example_replays_its_three_personas_offline(
    pytester: pytest.Pytester, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    shutil.copytree(REPO / "examples" / "conversation", pytester.path / "conversation")
    result = pytester.runpytest("--atom", "conversation/specs", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "*colour over 3 cases: 3/3 passed*",
            "conversations (the user's messages to success, the prompt included):",
            "*colour.atom.yaml::colour: 3/3 succeeded, median 3 turns (3: 3)",
        ]
    )
