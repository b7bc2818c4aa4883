"""Record and replay end to end: the real CLI, a scripted upstream, pytester sessions."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from vcr.serialize import deserialize
from vcr.serializers import yamlserializer

from pytest_atom.agents.claude_code.cli import CLAUDE_CODE_VERSION
from pytest_atom.cassettes.cassette import Cassette
from tests.helpers import REPO, bash, drop_step_fixtures
from tests.recording_helpers import CASSETTE, TURNS, greet_spec, record

pytestmark = pytest.mark.usefixtures("claude_for_pytester")


def run_dirs(pytester: pytest.Pytester) -> list[Path]:
    return sorted((pytester.path / ".atom" / "runs").iterdir(), key=lambda p: p.stat().st_mtime)


@pytest.mark.slow
def test_record_then_replay_with_the_upstream_gone(
    pytester: pytest.Pytester, gateway_for: Any
) -> None:
    greet_spec(pytester)
    upstream = gateway_for(TURNS)
    record(pytester, upstream).assert_outcomes(passed=1)
    upstream.stop()
    cassette = pytester.path / CASSETTE
    assert cassette.exists()

    pytester.runpytest("--atom").assert_outcomes(passed=1)  # default mode none: replay only
    assert (run_dirs(pytester)[-1] / "committed" / "greeting.txt").read_text() == "hello\n"

    text = cassette.read_text()
    requests, responses, metadata = deserialize(text, yamlserializer)  # vcrpy reads it
    assert metadata["claude_code_version"] == CLAUDE_CODE_VERSION
    assert metadata["spec"] == "greet.atom.yaml::greet"
    assert metadata["spec_hash"].startswith("sha256:") and metadata["recorded_at"]
    assert metadata["upstream"] == upstream.url
    assert any(r.method == "POST" and r.path == "/v1/messages" for r in requests)
    assert any(b"event: message_start" in r["body"]["string"] for r in responses)
    assert "working directory: <RUN_DIR>/attempts/a01" in text
    assert "<DATE>" in text and "<METADATA>" in text
    assert str(pytester.path) not in text  # no machine paths


@pytest.mark.slow
def test_changed_prompt_fails_with_a_readable_diff(
    pytester: pytest.Pytester, gateway_for: Any
) -> None:
    greet_spec(pytester)
    record(pytester, gateway_for(TURNS)).assert_outcomes(passed=1)
    greet_spec(pytester, prompt="Create greeting.txt saying goodbye.")
    result = pytester.runpytest("--atom")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*replay diverged from the cassette (1 distinct request matched nothing recorded); "
            "likely cause: spec changed since recording: re-record it with: pytest --atom "
            "'greet.atom.yaml::greet' --atom-record-mode=all",
            "*POST /v1/messages (turn): no recorded interaction matches; the closest recorded "
            "conversation differs at:",
            "*- messages[[]0] (user).content[[]0] (text).text: text changed in 1 place:",
            "*    at line *, character *:",
            "*      recorded *Create greeting.txt saying [[]hello[]].*",
            "*      live     *Create greeting.txt saying [[]goodbye[]].*",
        ]
    )


@pytest.mark.slow
def test_changed_tool_result_diverges_unless_structural(
    pytester: pytest.Pytester, gateway_for: Any
) -> None:
    greet_spec(pytester)
    record(
        pytester,
        gateway_for([bash("date +%s%N; echo hello > greeting.txt"), {"text": "EXIT_LOOP_NOW"}]),
    ).assert_outcomes(passed=1)
    for mode in ("conversation", "strict"):
        diverged = pytester.runpytest("--atom", f"--atom-match={mode}")
        diverged.assert_outcomes(failed=1)
        diverged.stdout.fnmatch_lines(
            ["*messages[[]*] (user).content[[]0] (tool_result).content: recorded *, live *"]
        )
    # The tolerated drift is said in the summary, as a line, not as a warning.
    structural = pytester.runpytest("--atom", "--atom-match=structural")
    structural.assert_outcomes(passed=1)
    structural.stdout.fnmatch_lines(
        [
            "drift: greet.atom.yaml::greet: recorded and replayed with Claude Code *: tool "
            "results differ in 1 request (structural match); * requests: * identical, 1 matched "
            "on the conversation"
        ]
    )


@pytest.mark.slow
def test_secrets_never_reach_the_cassette(
    pytester: pytest.Pytester, gateway_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    api_key = f"sk-ant-canary-{uuid.uuid4().hex}"
    token = f"canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("ANTHROPIC_API_KEY", api_key)
    monkeypatch.setenv("ATOM_CANARY_TOKEN", token)
    pytester.makefile(".atom.yaml", greet="name: greet\nprompt: show secrets\nworkspace: ws\n")
    (pytester.path / "ws").mkdir()
    (pytester.path / "ws" / "secret.txt").write_text(f"token={token}\n")
    upstream = gateway_for(
        [
            bash("cat secret.txt; env | grep -E 'CANARY|ANTHROPIC_API_KEY'"),
            {"text": "EXIT_LOOP_NOW"},
        ]
    )
    record(pytester, upstream).assert_outcomes(passed=1)
    # The agent really saw both values...
    [result] = [e.request.json for e in upstream.exchanges if e.request.kind == "turn"][-1:]
    assert token in str(result) and api_key in str(result)
    assert any(e.request.headers.get("x-api-key") == api_key for e in upstream.exchanges)
    # ...and the cassette has neither, only named placeholders.
    text = (pytester.path / CASSETTE).read_text()
    assert token not in text and api_key not in text
    assert "<SECRET:ATOM_CANARY_TOKEN>" in text and "<SECRET:ANTHROPIC_API_KEY>" in text
    stored = {
        k.lower() for i in yaml.safe_load(text)["interactions"] for k in i["request"]["headers"]
    }
    assert not stored & {"x-api-key", "authorization"}  # auth headers are never stored
    # The scrubbed cassette replays; the printed environment differs offline (a placeholder
    # key), which structural matching accepts as drift in a tool result.
    pytester.runpytest("--atom", "--atom-match=structural").assert_outcomes(passed=1)


@pytest.mark.slow
def test_timed_out_recording_keeps_the_cassette_and_the_partial(
    pytester: pytest.Pytester, gateway_for: Any
) -> None:
    greet_spec(pytester)
    record(pytester, gateway_for(TURNS)).assert_outcomes(passed=1)
    cassette = pytester.path / CASSETTE
    before = cassette.read_bytes()
    greet_spec(pytester, timeout=6)
    slow = gateway_for([bash("echo started; sleep 120")])
    result = pytester.runpytest("--atom", "--atom-record-mode=all", f"--atom-upstream={slow.url}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*agent: timed out after 6s"])
    assert cassette.read_bytes() == before
    partial = cassette.with_name("greet.partial.yaml")
    assert "sleep 120" in partial.read_text()


@pytest.mark.slow
def test_ctrl_c_during_recording_leaves_the_cassette_byte_identical(
    pytester: pytest.Pytester, gateway_for: Any
) -> None:
    greet_spec(pytester)
    record(pytester, gateway_for(TURNS)).assert_outcomes(passed=1)
    cassette = pytester.path / CASSETTE
    before = cassette.read_bytes()
    slow = gateway_for([bash("touch started; sleep 120")])
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "--atom",
            "--atom-record-mode=all",
            f"--atom-upstream={slow.url}",
            "-p",
            "no:cacheprovider",
        ],
        cwd=pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    deadline = time.monotonic() + 60
    while not list((pytester.path / ".atom" / "runs").glob("*/attempts/a01/started")):
        assert time.monotonic() < deadline and proc.poll() is None, "the agent never started"
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=60)
    assert "KeyboardInterrupt" in output
    assert cassette.read_bytes() == before
    assert cassette.with_name("greet.partial.yaml").exists()
    assert not list(cassette.parent.glob(".*.tmp"))


def test_missing_cassette_with_record_mode_none_never_reaches_the_upstream(
    pytester: pytest.Pytester, gateway_for: Any
) -> None:
    greet_spec(pytester)
    upstream = gateway_for(TURNS)
    result = pytester.runpytest("--atom", f"--atom-upstream={upstream.url}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*record it with: pytest --atom 'greet.atom.yaml::greet' --atom-record-mode=once"]
    )
    assert upstream.exchanges == []


@pytest.mark.slow
def test_new_episodes_appends_what_does_not_match(
    pytester: pytest.Pytester, gateway_for: Any
) -> None:
    greet_spec(pytester)
    record(pytester, gateway_for(TURNS)).assert_outcomes(passed=1)
    recorded = len(Cassette.load(pytester.path / CASSETTE).interactions)
    greet_spec(pytester, prompt="Create greeting.txt saying hello, please.")
    again = gateway_for(TURNS)
    pytester.runpytest(
        "--atom", "--atom-record-mode=new_episodes", f"--atom-upstream={again.url}"
    ).assert_outcomes(passed=1)
    grown = [json.dumps(i.body) for i in Cassette.load(pytester.path / CASSETTE).interactions]
    assert len(grown) > recorded
    assert any("please" in body for body in grown)
    assert any("please" not in body and "saying hello" in body for body in grown)


@pytest.mark.slow
def test_another_cli_version_sending_the_same_requests_is_no_drift_strict_version_fails(
    pytester: pytest.Pytester, gateway_for: Any
) -> None:
    greet_spec(pytester)
    record(pytester, gateway_for(TURNS)).assert_outcomes(passed=1)
    cassette = pytester.path / CASSETTE
    cassette.write_text(
        cassette.read_text().replace(
            f"claude_code_version: {CLAUDE_CODE_VERSION}", "claude_code_version: 0.0.1"
        )
    )
    drifted = pytester.runpytest("--atom")
    drifted.assert_outcomes(passed=1)  # under the suite's filterwarnings = error
    # The other version sent the very same requests: nothing Claude Code owns changed.
    assert "drift:" not in drifted.stdout.str()
    strict = pytester.runpytest("--atom", "--atom-strict-version")
    strict.assert_outcomes(failed=1)
    strict.stdout.fnmatch_lines(
        ["*could not run spec 'greet'*recorded with Claude Code 0.0.1*--atom-record-mode=refresh"]
    )


# Record mode none (a replay) under xdist: the shared replay of the shipped fixtures
# (tests/test_plugin.py::test_shipped_fixtures_pass_with_the_xfail_reported).
@pytest.mark.slow
@pytest.mark.parametrize("mode", ["once", "new_episodes", "all"])
def test_xdist_in_every_record_mode(pytester: pytest.Pytester, mode: str) -> None:
    specs = pytester.path / "specs"
    shutil.copytree(REPO / "fixtures" / "specs", specs)
    (specs / "fix_failing_test.atom.yaml").unlink()  # its pytest runs add time, not coverage
    drop_step_fixtures(specs)
    shutil.rmtree(specs / "workspaces" / "calc")
    shutil.rmtree(specs / "cassettes" / "fix_failing_test")
    if mode == "once":
        shutil.rmtree(specs / "cassettes")  # once records what is missing
    result = pytester.runpytest("-n", "2", "--atom", f"--atom-record-mode={mode}", "specs")
    result.assert_outcomes(passed=1, xfailed=1)
    after = {p: p.read_bytes() for p in specs.glob("cassettes/*/*.yaml")}
    assert len(after) == 2
    assert not list(specs.glob("cassettes/*/*.partial.yaml"))
