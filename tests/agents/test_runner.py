"""ClaudeRunner against the real Claude Code CLI and a scripted gateway.

One conversation (two runs of one session) is run once and read by the tests of the stream
it gives, the session it continues, the prompt on stdin and the user's settings left out."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.agents.claude_code.cli import CLAUDE_CODE_VERSION, find_claude
from pytest_atom.agents.claude_code.runner import ClaudeRunner, claude_env
from pytest_atom.errors import ClaudeNotFoundError
from pytest_atom.events import Result, SessionStarted
from pytest_atom.gateway import Gateway, scripted
from pytest_atom.processes import kill_process_tree
from pytest_atom.results.harness_events import AnyEvent
from pytest_atom.results.record import IterationRecord
from tests.helpers import bash, once_per_session, wait_gone

SESSION = "5a1d0000-0000-4000-8000-000000000001"


PROMPT = "--version is not a flag here"
TURNS = [
    bash("echo made > out.txt; echo listed", "Making it."),
    {"text": "All done.\n\nEXIT_LOOP_NOW"},
    {"text": "second answer"},
]


@dataclass
class Conversation:
    """Two runs of one session: the records, the first run's callback events, the session
    arguments before and after the first run, and the turn requests the gateway received."""

    first: IterationRecord
    second: IterationRecord
    events: list[AnyEvent]
    args_before: list[str]
    args_after: list[str]
    requests: list[Any]
    work: Path
    config: Path


def converse(folder: Path, claude_bin: Path) -> None:
    """Run a prompt that looks like an option, with the user's own Claude settings in the
    environment, then continue the same session; pickled into `folder`."""
    work, config = folder / "work", folder / "claude-config"
    work.mkdir()
    gateway = Gateway(scripted(TURNS)).start()
    events: list[AnyEvent] = []
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("ANTHROPIC_BASE_URL", "http://192.0.2.1:9")  # would hang if used
            patch.setenv("CLAUDE_CODE_USE_BEDROCK", "1")
            env = claude_env(gateway.url, config)
            runner = ClaudeRunner(env=env, claude_bin=claude_bin, on_event=events.append)
            before = runner.session.session_args(SESSION, True)
            first = runner.run(PROMPT, work, session_id=SESSION, timeout=60)
            first_events = list(events)
            after = runner.session.session_args(SESSION, True)
            second = runner.run("two", work, session_id=SESSION, timeout=60)
        requests = [e.request.json for e in gateway.exchanges if e.request.kind == "turn"]
    finally:
        gateway.stop()
    talk = Conversation(first, second, first_events, before, after, requests, work, config)
    (folder / "conversation.pickle").write_bytes(pickle.dumps(talk))


@pytest.fixture
def conversation(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Conversation:
    """`converse`'s two runs, once per session."""
    build = partial(converse, claude_bin=claude_bin)
    folder = once_per_session(tmp_path_factory, "runner-conversation", build)
    talk: Conversation = pickle.loads((folder / "conversation.pickle").read_bytes())
    return talk


@pytest.mark.slow
def test_stream_json_becomes_an_iteration_record(conversation: Conversation) -> None:
    record, events = conversation.first, conversation.events
    assert record.returncode == 0 and not record.is_error
    assert (conversation.work / "out.txt").read_text() == "made\n"  # the tool really ran
    assert record.output == "All done.\n\nEXIT_LOOP_NOW"
    assert record.texts == ["Making it.", "All done.\n\nEXIT_LOOP_NOW"]
    [call] = record.tool_calls
    assert call.name == "Bash" and call.input["command"].startswith("echo made")
    assert call.result == "listed" and not call.is_error
    assert record.session_id == SESSION
    assert record.cli_version == CLAUDE_CODE_VERSION
    assert record.num_turns == 2 and record.tokens > 0 and record.cost_usd > 0
    assert isinstance(events[0], SessionStarted) and isinstance(events[-1], Result)
    assert events == list(record.events)  # the callback saw what the record holds, typed


@pytest.mark.slow
def test_second_run_continues_the_same_conversation(conversation: Conversation) -> None:
    assert "--session-id" in conversation.args_before
    assert conversation.args_after == ["--resume", SESSION]
    assert conversation.second.output == "second answer"
    history = json.dumps(conversation.requests[-1]["messages"])
    assert "All done." in history and "two" in history


@pytest.mark.slow
def test_prompt_goes_on_stdin_even_when_it_looks_like_an_option(
    conversation: Conversation,
) -> None:
    assert PROMPT in json.dumps(conversation.requests[0]["messages"])


@pytest.mark.slow
def test_user_claude_settings_do_not_leak_into_the_run(conversation: Conversation) -> None:
    """ANTHROPIC_BASE_URL and CLAUDE_CODE_USE_BEDROCK were set: the run used the gateway."""
    assert conversation.first.returncode == 0 and conversation.first.output.endswith(
        "EXIT_LOOP_NOW"
    )
    # the transcript stayed in the run's own config folder
    assert list(conversation.config.glob(f"projects/*/{SESSION}.jsonl"))


@pytest.mark.slow
def test_timeout_kills_the_whole_process_group(
    gateway_for: Any, runner_for: Any, tmp_path: Path
) -> None:
    gateway = gateway_for([bash("echo $$ > shell.pid; sleep 120")])
    started = time.monotonic()
    # Long enough for a loaded machine to reach the Bash call, far short of the sleep.
    record = runner_for(gateway).run("wait", tmp_path, session_id=SESSION, timeout=12)
    assert time.monotonic() - started < 60
    assert record.timed_out and record.is_error
    assert "timed out after 12s" in record.stderr
    shell = int((tmp_path / "shell.pid").read_text())
    assert wait_gone(shell), f"the agent's shell {shell} outlived the timeout"


def test_missing_binary_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("ATOM_CLAUDE_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with pytest.raises(ClaudeNotFoundError) as err:
        find_claude()
    assert f"@anthropic-ai/claude-code@{CLAUDE_CODE_VERSION}" in str(err.value)
    assert "npm install" in str(err.value)


def test_explicit_binary_that_does_not_exist(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(tmp_path / "nope"))
    with pytest.raises(ClaudeNotFoundError, match=r"ATOM_CLAUDE_BIN=.*nope does not exist"):
        find_claude()


def test_cli_version_from_the_npm_package_and_from_the_binary(
    claude_bin: Path, tmp_path: Path
) -> None:
    from pytest_atom.agents.claude_code.cli import claude_version

    assert claude_version(claude_bin) == CLAUDE_CODE_VERSION  # read from its package.json
    other = tmp_path / "bin" / "claude"
    other.parent.mkdir()
    other.write_text("#!/bin/sh\necho '9.9.9 (Claude Code)'\n")
    other.chmod(0o755)
    assert claude_version(other) == "9.9.9"  # no package.json beside it: asks the binary


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc to see zombies")
def test_kill_process_tree_reaches_a_child_in_its_own_session(tmp_path: Path) -> None:
    """As the CLI's Bash does: a grandchild in a session of its own, out of the group's reach."""
    pid_file = tmp_path / "escaped.pid"
    proc = subprocess.Popen(
        ["bash", "-c", f"setsid sleep 60 & echo $! > {pid_file}; sleep 60"],
        start_new_session=True,
    )
    deadline = time.monotonic() + 10
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.02)
    escaped = int(pid_file.read_text())
    # `$!` is known before the child has called setsid(): wait for it to leave the session.
    while os.getsid(escaped) == os.getsid(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    try:
        assert os.getsid(escaped) != os.getsid(proc.pid)  # a killpg of the CLI's group misses it
    finally:
        kill_process_tree(proc)
    assert proc.returncode is not None
    assert wait_gone(escaped)
