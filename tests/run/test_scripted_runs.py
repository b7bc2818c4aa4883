"""What end-to-end runs of the shipped specs showed in passing, at the lowest layer.

A scripted run has no cassette, so nothing to recall; the CLI asks the gateway with a HEAD
request; `atom run` names the attempt when another may come; a report does not judge the
files of a replay that diverged, and a trace's `writes_files` compares the workspace with
the fixture it started from. Each is tested here over real values or a recorded result
(tests/sandbox_helpers.py's confined run) without starting Claude Code.
"""

from __future__ import annotations

import dataclasses
import io
import shutil
from pathlib import Path

import httpx
import pytest
from rich.console import Console

from atom_cli.progress import Progress
from pytest_atom.gateway import Gateway, scripted
from pytest_atom.replay.recall import Recall, SessionInput
from pytest_atom.reports.trace import build_trace
from pytest_atom.results import harness_events as hev
from pytest_atom.results.drift import ReplayDivergence
from pytest_atom.results.record import IterationRecord
from pytest_atom.spec.types import ClaudeOptions
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import write
from tests.sandbox_helpers import Confined


def test_a_scripted_run_has_nothing_to_recall_or_write_down(tmp_path: Path) -> None:
    recall = Recall()  # no tape: a scripted run
    session = SessionInput("Judge the attempt.", ClaudeOptions(), None)
    key = recall.key("reflector:1", "reflector", session, tmp_path)
    assert key is None
    recall.remember(key, IterationRecord.__new__(IterationRecord))
    assert recall.remembered == {}


def test_the_gateway_answers_a_head_request_with_headers_alone() -> None:
    """The CLI's reachability probe: headers alone, as a body would corrupt the keep-alive
    stream; the connection then serves the next request."""
    with Gateway(scripted([{"text": "EXIT_LOOP_NOW"}])) as gateway:
        with httpx.Client(base_url=gateway.url) as client:
            head = client.head("/")
            assert head.status_code == 200 and head.content == b""
            assert head.headers["content-length"] == "0"
            again = client.head("/v1/messages")
    assert again.status_code == 200 and again.content == b""


def test_atom_run_names_the_attempt_when_another_may_come(tmp_path: Path) -> None:
    shown = {}
    for name, text in (
        ("judged", "prompt: p\ncriteria: [Done.]\nattempts: 3\n"),
        ("once", "prompt: p\ncriteria: [Done.]\nattempts: 1\n"),
        ("unjudged", "prompt: p\nattempts: 3\n"),
    ):
        out = io.StringIO()
        progress = Progress(
            Console(file=out, width=200), load_spec(write(tmp_path / f"{name}.atom.yaml", text))
        )
        progress(hev.AttemptStarted(2, 3))
        shown[name] = out.getvalue().strip()
    assert shown == {"judged": "attempt 2/3", "once": "", "unjudged": ""}


@pytest.mark.slow
def test_a_replay_that_diverged_judges_no_files(confined_run: Confined) -> None:
    """Over the recorded confined run: the agent's divergence leaves its checks unjudged,
    a reflector's does not (it comes after the agent's work, which replayed whole)."""
    assert len(confined_run.result("recorded").attempts) == 1
    result = confined_run.result("recorded")
    assert "checks: 2/2 passed" in result.report()
    agent = dataclasses.replace(result, divergences=[ReplayDivergence("turn 3 differs")])
    assert "checks: not judged: the replay diverged (2 checks)" in agent.report()
    judge = ReplayDivergence("the verdict differs", kind="reflector")
    assert "checks: 2/2 passed" in dataclasses.replace(result, divergences=[judge]).report()
    # A spec without checks: no checks line at all.
    final = dataclasses.replace(result.final, checks=[])
    assert "checks:" not in dataclasses.replace(result, attempts=[final]).report()


@pytest.mark.slow
def test_writes_files_compares_the_workspace_with_its_fixture(
    confined_run: Confined, tmp_path: Path
) -> None:
    result = confined_run.result("recorded")
    fixture = tmp_path / "fixture"
    shutil.copytree(result.final.path, fixture, symlinks=True)
    same = dataclasses.replace(result, spec=dataclasses.replace(result.spec, workspace=fixture))
    assert build_trace(same)["effects_observed"]["writes_files"] is False
    (fixture / "inside.txt").write_text("before\n")
    assert build_trace(same)["effects_observed"]["writes_files"] is True
    assert build_trace(result)["effects_observed"]["writes_files"] is True
