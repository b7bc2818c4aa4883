"""Which tools a recorded turn may call in a replay.

A replayed answer that calls a tool is refused ("the recording calls tool X, which this
Claude Code does not offer") only when the recording CLI offered X and the live one does
not. Deferred tools (MCP tools behind ToolSearch, listed by name in a system message) are
offered though they are not in the request's `tools` array; a call to a tool neither CLI
offered (a model's invention, answered "No such tool available") is conversation, and
replays and refreshes with any release that answers it the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.agents.claude_code.cli import CLAUDE_CODE_VERSION, cached_claude
from pytest_atom.gateway.messages import message
from pytest_atom.replay.matching import offered_tools
from tests.cassette_helpers import post, recorded, replayer, serve, turn_body
from tests.cli_starts import wrapped

#: How 2.1.331 to 2.1.337 list deferred tools, in a `role: system` message.
DEFERRED = (
    "You are powered by the model named Opus 5.5.\n\nThe following deferred tools are now "
    "available via ToolSearch. Their schemas are NOT loaded — calling them directly will fail "
    'with InputValidationError. Use ToolSearch with query "select:<name>[,<name>...]" to load '
    "tool schemas before calling them:\nCronCreate\nWebFetch\nmcp__tickets__create\n\n"
    "Available agent types for the Agent tool:\n- claude: Catch-all"
)
INVENTED = "str_replace_based_edit_tool"


def with_deferred(body: dict[str, Any]) -> dict[str, Any]:
    return {**body, "messages": [*body["messages"], {"role": "system", "content": DEFERRED}]}


def calling(name: str) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}
    return message("m", "x", [block], input_tokens=10, output_tokens=5)


def test_deferred_tools_are_offered() -> None:
    assert offered_tools(with_deferred(turn_body())) == {
        "Bash",
        "CronCreate",
        "WebFetch",
        "mcp__tickets__create",
    }
    tagged = {
        "role": "user",
        "content": "<available-deferred-tools>\nmcp__a__b\n</available-deferred-tools>",
    }
    assert "mcp__a__b" in offered_tools({**turn_body(), "messages": [tagged]})
    assert offered_tools(turn_body()) == {"Bash"}


def test_a_recorded_call_of_a_deferred_tool_is_served(tmp_path: Path) -> None:
    """2.1.332 words its request otherwise than 2.1.331 (so no exact match): the MCP tool the
    recording calls is deferred in both, and the answer is served."""
    recorded_body = with_deferred({**turn_body(), "max_tokens": 64000})
    responder = replayer([recorded(recorded_body, calling("mcp__tickets__create"))], tmp_path)
    with serve(responder) as gateway:
        reply = post(gateway, with_deferred(turn_body()))
    assert reply.status_code == 200, responder.divergences[0].describe()
    assert responder.divergences == [] and responder.drift.loose == 1


def test_a_deferred_tool_the_live_cli_no_longer_lists_still_diverges(tmp_path: Path) -> None:
    recorded_body = with_deferred({**turn_body(), "max_tokens": 64000})
    responder = replayer([recorded(recorded_body, calling("mcp__tickets__create"))], tmp_path)
    with serve(responder) as gateway:
        assert post(gateway, turn_body()).status_code == 409
    [divergence] = responder.divergences
    assert "calls tool mcp__tickets__create, which this Claude Code does not offer" in (
        divergence.describe()
    )


def test_a_call_to_a_tool_the_recording_cli_did_not_offer_either_is_served(
    tmp_path: Path,
) -> None:
    responder = replayer(
        [recorded({**turn_body(), "max_tokens": 64000}, calling(INVENTED))], tmp_path
    )
    with serve(responder) as gateway:
        reply = post(gateway, turn_body())
    assert reply.status_code == 200 and responder.divergences == []
    assert reply.json()["content"][0]["name"] == INVENTED


# --- end to end: a hallucinated call recorded with one release, replayed with another --------

SPEC = """\
name: invented-tool
prompt: Create hello.txt holding the word hello.
script: script.yaml
max_iterations: 1
timeout: 120
accept:
  - file_contains: {path: hello.txt, pattern: "^hello$"}
"""
SCRIPT = f"""\
turns:
  - text: I'll write it with my editor.
    tool_use:
      - name: {INVENTED}
        input: {{command: create, path: hello.txt, file_text: "hello\\n"}}
  - text: That tool is not here; Bash then.
    tool_use:
      - name: Bash
        input: {{command: "echo hello > hello.txt", description: Write hello.txt}}
  - text: |
      Done.

      EXIT_LOOP_NOW
"""
#: The release before the pin: the pair a user upgrades between.
PREVIOUS_CLI = "2.1.332"


@pytest.fixture(scope="session")
def clis() -> dict[str, Path]:
    """The pinned Claude Code and the release before it, found before pytester moves HOME."""
    found = {}
    for version in (PREVIOUS_CLI, CLAUDE_CODE_VERSION):
        binary = cached_claude(version)
        if not binary.exists():
            pytest.fail(
                f"Claude Code {version} is not installed; run: atom setup --version {version}"
            )
        found[version] = wrapped(binary)  # counted like every CLI the suite starts
    return found


@pytest.mark.slow
@pytest.mark.parametrize(
    ("recorder", "replayer_version"),
    [
        pytest.param(PREVIOUS_CLI, CLAUDE_CODE_VERSION, id="upgrade"),
        # The same check the other way round: once, in CI's sweeps.
        pytest.param(CLAUDE_CODE_VERSION, PREVIOUS_CLI, id="downgrade", marks=pytest.mark.sweep),
    ],
)
def test_a_hallucinated_call_replays_and_refreshes_with_another_release(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    claude_for_pytester: None,
    clis: dict[str, Path],
    recorder: str,
    replayer_version: str,
) -> None:
    pytester.makefile(".ini", pytest="[pytest]\nfilterwarnings = error\n")
    (pytester.path / "invented.atom.yaml").write_text(SPEC, encoding="utf-8")
    (pytester.path / "script.yaml").write_text(SCRIPT, encoding="utf-8")
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(clis[recorder]))
    pytester.runpytest("--atom", "--atom-record-mode=all").assert_outcomes(passed=1)
    cassette = pytester.path / "cassettes" / "invented" / "invented-tool.yaml"
    text = cassette.read_text(encoding="utf-8")
    # The recording CLI offered no such tool and answered the call as one it does not know.
    assert f"No such tool available: {INVENTED}" in text
    assert yaml.safe_load(text)["metadata"]["claude_code_version"] == recorder

    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(clis[replayer_version]))
    replayed = pytester.runpytest("--atom")
    replayed.assert_outcomes(passed=1)
    assert "does not offer" not in replayed.stdout.str()
    replayed.stdout.fnmatch_lines([f"drift: *recorded with Claude Code {recorder}, replayed*"])

    refreshed = CliRunner().invoke(main, ["cassette", "refresh", "invented.atom.yaml"])
    assert refreshed.exit_code == 0, refreshed.output
    metadata = yaml.safe_load(cassette.read_text(encoding="utf-8"))["metadata"]
    assert metadata["claude_code_version"] == replayer_version
    strict = pytester.runpytest("--atom", "--atom-match=strict")
    strict.assert_outcomes(passed=1)
    assert "drift:" not in strict.stdout.str()
