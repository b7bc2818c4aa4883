"""Claude Agent SDK apps as the agent under test (`agent: {sdk: ...}`), and the shipped
example: replayed offline from its cassette, diverging when the app's system prompt changes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from claude_agent_sdk import ClaudeAgentOptions

from pytest_atom.agents.sdk_host import HarnessOptions
from pytest_atom.errors import SpecError
from pytest_atom.run.spec_run import run_spec
from pytest_atom.spec_loader.load import load_spec

EXAMPLE = Path(__file__).parents[2] / "examples" / "sdk_agent"


def harness() -> HarnessOptions:
    return HarnessOptions(
        cli_path="/pinned/claude",
        options={
            "cwd": "/run/attempts/a01",
            "permission_mode": "acceptEdits",
            "allowed_tools": ["Bash", "Write(//run/attempts/a01/**)"],
            "model": None,
            "session_id": "1b4e28ba-2fa1-11d2-883f-0016d3cca427",
        },
        cli_args=["--settings", "/run/claude-settings.json", "--strict-mcp-config"],
        file_tool_scopes={"Write": ["Write(//run/attempts/a01/**)"]},
    )


def test_an_app_that_builds_its_own_options_still_gets_the_harness_parts() -> None:
    """Whatever the app passes, the pinned CLI, the folder, the session and the sandbox's
    settings are the harness's; its own system prompt, tools and model stay its own."""
    options = ClaudeAgentOptions(
        cli_path="/the/bundled/claude",
        cwd="/elsewhere",
        system_prompt="Count words.",
        allowed_tools=["Write", "mcp__words__word_count"],
        sandbox={"enabled": False},
        model="claude-haiku-4-5",
    )
    harness().apply(options)
    assert options.cli_path == "/pinned/claude" and options.cwd == "/run/attempts/a01"
    assert options.settings == "/run/claude-settings.json" and options.sandbox is None
    assert options.extra_args == {"strict-mcp-config": None}
    assert options.session_id == "1b4e28ba-2fa1-11d2-883f-0016d3cca427" and options.resume is None
    # A blanket Write is narrowed to the attempt folder, as for the CLI agent.
    assert options.allowed_tools == ["Write(//run/attempts/a01/**)", "mcp__words__word_count"]
    assert options.system_prompt == "Count words." and options.model == "claude-haiku-4-5"
    assert options.permission_mode == "acceptEdits"


def test_an_app_without_tools_of_its_own_gets_the_spec_s() -> None:
    options = ClaudeAgentOptions()
    harness().apply(options)
    assert options.allowed_tools == ["Bash", "Write(//run/attempts/a01/**)"]


def test_a_bad_app_name_is_a_spec_error_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "x.atom.yaml"
    path.write_text("name: x\nprompt: p\nagent: {sdk: word_counter}\n")
    with pytest.raises(
        SpecError,
        match=r"'agent\.sdk' must be .*package\.module:function.*'word_counter'.*x\.atom\.yaml:3",
    ):
        load_spec(path)


@pytest.mark.parametrize(
    "body", ["steps:\n  - {id: one, prompt: p}\n", "request: build a greeter\n"]
)
def test_an_app_with_steps_or_a_request_is_a_spec_error(tmp_path: Path, body: str) -> None:
    """An SDK app runs its own loop once; steps and plans continue a CLI session."""
    path = tmp_path / "x.atom.yaml"
    path.write_text(f"name: x\n{body}agent: {{sdk: 'app:main'}}\n")
    with pytest.raises(SpecError, match=r"runs one task with 'prompt:'.*x\.atom\.yaml:\d"):
        load_spec(path)


def test_an_app_that_cannot_be_imported_says_where_it_was_looked_for(
    claude_bin: Path, tmp_path: Path
) -> None:
    spec_path = tmp_path / "x.atom.yaml"
    spec_path.write_text(
        "name: x\nprompt: p\nagent: {sdk: 'no_such_app:run'}\nattempts: 1\nscript: s.yaml\n"
    )
    (tmp_path / "s.yaml").write_text("turns: [{text: done}]\n")
    result = run_spec(load_spec(spec_path), runs_dir=tmp_path / "runs", claude_bin=claude_bin)
    outcome = result.attempts[0].outcome
    assert not result.passed and outcome.reason == "error"
    assert "cannot import 'no_such_app'" in (outcome.error or "")
    assert str(tmp_path) in (outcome.error or "")  # where it was looked for


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_the_example_replays_offline_and_diverges_on_a_new_system_prompt(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    shutil.copytree(EXAMPLE, pytester.path / "sdk_agent")
    replay = pytester.runpytest("--atom", "sdk_agent", "-p", "no:cacheprovider")
    replay.assert_outcomes(passed=1)
    replay.stdout.fnmatch_lines(["*counts-words-with-its-tool*passed*0.95*"])

    app = pytester.path / "sdk_agent" / "word_counter.py"
    app.write_text(app.read_text().replace("You count words for the user.", "You count words."))
    changed = pytester.runpytest("--atom", "sdk_agent", "-p", "no:cacheprovider")
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(
        [
            "*replay diverged*likely cause: the SDK app's system prompt changed since recording "
            "(word_counter:count sets it*re-record it with: pytest --atom*--atom-record-mode=all",
            "*system: text changed*",
        ]
    )
