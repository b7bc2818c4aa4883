"""`atom run`'s live progress (`atom_cli.progress.Progress`) shows the agent's words and its
tool calls' arguments scrubbed, then cut to a line: a secret the spec passes the agent
(`pass_env:`) never reaches the terminal, whole or in part."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from atom_cli.progress import LINE, Progress
from pytest_atom import events
from pytest_atom.spec_loader.load import load_spec

#: A token as the spec's `pass_env:` hands it to the agent.
SECRET = "tok-" + "9f3a7c1e5b" * 4


def watched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Progress, io.StringIO]:
    """A progress over a spec that passes the token to its agent; what it printed."""
    monkeypatch.setenv("DEPLOY_TOKEN", SECRET)
    spec_file = tmp_path / "deploy.atom.yaml"
    spec_file.write_text(
        "name: deploy\nprompt: Deploy.\npass_env: [DEPLOY_TOKEN]\n"
        "accept: [{file_exists: out.txt}]\n"
    )
    out = io.StringIO()
    console = Console(file=out, width=400, highlight=False, soft_wrap=True)
    return Progress(console, load_spec(spec_file)), out


def test_a_tool_call_cut_through_a_secret_shows_none_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The token straddles the line's end: cut first, its head would show, and the
    scrubber, which knows it only whole, would let that through."""
    progress, out = watched(tmp_path, monkeypatch)
    progress(events.SessionStarted(session_id="s", model="m", agent_version="2"))
    padding = "x" * (LINE - 55)  # the token starts ten characters before the cut
    command = f"{padding} curl -H 'Authorization: Bearer {SECRET}' https://deploy.example"
    progress(events.ToolCall(id="t1", name="Bash", input={"command": command}, message_id="m"))
    progress(events.AssistantText(text=f"I used {SECRET} to deploy.", message_id="m"))
    shown = out.getvalue()
    assert "→ Bash" in shown and padding in shown
    assert SECRET[:8] not in shown  # no part of it, cut or whole
    assert shown.count("<SECRET:DEPLOY_TOKEN>") == 1  # the agent's words; the call's cut before
    assert "I used <SECRET:DEPLOY_TOKEN> to deploy." in shown
    [call] = [line for line in shown.splitlines() if "→ Bash" in line]
    assert len(call.split("→ Bash ", 1)[1]) == LINE and call.endswith("…")
