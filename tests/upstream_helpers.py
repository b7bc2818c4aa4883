"""One realistic Claude Code session, recorded once through tests/upstream.py, for many tests.

The session holds every shape tests/replay/test_upstream_cli.py asserts on, so that one recording
(the agent and its reflector: two CLI processes) and one strict replay by `pytest --atom`
(one more) serve them all:

- turn 0: thinking, text and a Bash call, cut by an overload mid-stream (Claude Code
  continues it with its own "cut off mid-stream" message);
- turn 1: thinking with its signature and two parallel Bash calls; the upstream first
  answers it with an overload at the start of the stream (Claude Code resends it);
- turn 2: two `Agent` subagents launched at once (in the foreground; in the background
  for the sweep), each a conversation of its own running one Bash command;
- then the final answer; the spec has criteria, so a reflector judges it with a JSON
  schema (its `StructuredOutput` call), a session of its own through the same upstream.

`once_per_session` builds each folder once however many xdist workers ask; what tests read
of the recording (the result, what the upstream was sent and answered) is pickled there.
"""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.events import Event, parse
from pytest_atom.results.spec_result import SpecResult
from pytest_atom.run.spec_run import run_spec
from pytest_atom.settings.modes import MatchMode
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import load_specs
from tests.helpers import record_through_upstream
from tests.upstream import RealisticUpstream, Received, Turn

#: The main agent's prompt: shorter than AUDITOR, which quotes it (the longest key wins).
PROMPT = "Count the files, then survey the project with two helper agents."
THINKING = "Listing and checking are independent: run both at once."
#: The reflector's prompt (prompts/REFLECTOR.md), which quotes the task.
AUDITOR = "You are a clinical auditor. An autonomous agent worked on the task below"
SIDES = ("north", "south")
SCORE = 0.93
#: The main agent's turns by what they show. The cut comes first: the realistic upstream
#: tells a continuation from a new turn only before any tool result (tests/upstream.py's
#: turn_of reads a continuation added to a tool result message as the turn before asked
#: again).
CUT, PARALLEL, LAUNCH, FINAL = 0, 1, 2, 3
#: Each fault, and the main agent's turn that gets it.
FAULTS = {"overloaded_mid_stream": CUT, "overloaded_at_start": PARALLEL}
#: What the pickle in a built folder holds: the result, the upstream's log.
LOG = "recorded.pickle"


def bash_call(command: str, description: str) -> dict[str, Any]:
    return {"name": "Bash", "input": {"command": command, "description": description}}


def file_is(path: str, word: str) -> str:
    return f'  - file_contains: {{path: {path}, pattern: "^{word}$"}}\n'


def agent_call(side: str, background: bool) -> dict[str, Any]:
    call: dict[str, Any] = {
        "description": f"Survey {side}",
        "prompt": f"Write the word {side} into {side}.txt, then report.",
        "subagent_type": "general-purpose",
    }
    if not background:
        call["run_in_background"] = False
    return {"name": "Agent", "input": call}


def session_script(background: bool) -> dict[str, list[Turn]]:
    """Every conversation of the session, keyed by how each opens (see the module's doc)."""
    final: Turn = {"text": "Both agents finished.\nEXIT_LOOP_NOW"}
    main: list[Turn] = [
        {
            "thinking": "The count is two; write it, then list the folder beside it.",
            "text": "I'll write the count file now, with the number two in it, then list.",
            "tool_calls": [bash_call("echo 2 > count.txt", "Count")],
            "fault": "overloaded_mid_stream",
        },
        {
            "thinking": THINKING,
            "text": "I'll run both.",
            "tool_calls": [
                bash_call("ls > listing.txt", "List"),
                bash_call("cat count.txt", "Check"),
            ],
            "fault": "overloaded_at_start",
        },
        {
            "thinking": "Two independent surveys: one agent each.",
            "text": "Launching two agents.",
            "tool_calls": [agent_call(side, background) for side in SIDES],
        },
    ]
    # In the background the main agent speaks again before the agents finish, and once
    # per completion notification (how many depends on timing): spare final turns.
    main += [{"text": "Waiting for the agents."}, final, final, final] if background else [final]
    script: dict[str, list[Turn]] = {PROMPT: main, AUDITOR: judge_turns()}
    for side in SIDES:
        sleep = "sleep 1; " if side == "north" else ""  # they finish in the other order
        script[f"Write the word {side}"] = [
            {
                "thinking": f"Just write {side}.",
                "tool_calls": [bash_call(f"{sleep}echo {side} > {side}.txt", f"Write {side}")],
            },
            {"text": f"Wrote {side}.txt."},
        ]
    return script


def judge_turns() -> list[Turn]:
    """The reflector's session: its verdict through the schema's `StructuredOutput` tool."""
    verdict = {
        "score": SCORE,
        "decision": "proceed",
        "criteria": [{"criterion": "count.txt says 2.", "met": True, "evidence": "cat"}],
        "feedback": "",
        "flaky": [],
    }
    return [
        {
            "thinking": "The files are there.",
            "tool_calls": [{"name": "StructuredOutput", "input": verdict}],
        },
        {"text": "Judged."},
    ]


@dataclass(frozen=True)
class Recorded:
    """The session recorded through a realistic upstream, which is stopped by now."""

    shape: str  # foreground or background (the subagents)
    spec: Spec
    result: SpecResult
    upstream: RealisticUpstream
    cassette: Path

    def replay(self, claude_bin: Path, match: MatchMode = "conversation") -> SpecResult:
        runs = self.cassette.parents[2] / "runs"
        return run_spec(
            self.spec, runs_dir=runs, settings=RunSettings(match=match), claude_bin=claude_bin
        )

    def main_requests(self) -> list[Received]:
        return [r for r in self.upstream.requests if r.conversation == PROMPT]

    def main_bodies(self) -> list[Any]:
        return [r.body for r in self.main_requests()]

    def first_body(self, turn: int) -> Any:
        """The main agent's first request for `turn` (a fault's resend comes after it)."""
        return next(r.body for r in self.main_requests() if r.turn == turn)

    def answer(self, turn: int) -> dict[str, Any]:
        """The whole message the upstream answers the main agent's `turn` with."""
        return self.upstream.message(self.upstream.answer(self.first_body(turn)))


def record_session(folder: Path, claude_bin: Path, shape: str) -> None:
    """`once_per_session`'s build: record the session in `folder`, pickle what it left."""
    accept = file_is("count.txt", "2") + "  - file_exists: listing.txt\n"
    accept += "".join(file_is(f"{side}.txt", side) for side in SIDES)
    accept += "criteria: [count.txt says 2.]\n"
    (folder / "probe.atom.yaml").write_text(
        f"name: probe\nprompt: {PROMPT}\ntimeout: 900\naccept:\n{accept}", encoding="utf-8"
    )
    [spec] = load_specs(folder / "probe.atom.yaml")
    script = session_script(shape == "background")
    result, upstream = record_through_upstream(spec, script, claude_bin)
    (folder / LOG).write_bytes(pickle.dumps((result, upstream.requests, upstream.usage_sent)))


def recorded_session(folder: Path, shape: str) -> Recorded:
    """The session `record_session` recorded in `folder`, with an upstream (never started)
    that holds what the real one was sent, to ask it what it answered."""
    result, requests, usage_sent = pickle.loads((folder / LOG).read_bytes())
    upstream = RealisticUpstream(session_script(shape == "background"))
    upstream.stop()  # frees the port it took; its answers are computed, not served
    upstream.requests, upstream.usage_sent = requests, usage_sent
    [spec] = load_specs(folder / "probe.atom.yaml")
    return Recorded(shape, spec, result, upstream, folder / "cassettes" / "probe" / "probe.yaml")


@dataclass(frozen=True)
class Replayed:
    """What a `pytest --atom` replay of the session left: its outcome counts and output,
    the spec's trace (`--atom-report`: its ``atom`` part and ``state``) and the events of
    the agent's session."""

    outcomes: dict[str, int]
    output: str
    trace: dict[str, Any]
    events: list[Event]


#: What an xdist worker is told by; an inner run that inherited them would think itself one.
XDIST_VARIABLES = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")


def replay_with_pytest(
    folder: Path, recorded: Recorded, pytester: pytest.Pytester, claude_bin: Path, workers: int
) -> None:
    """`once_per_session`'s build: the session replayed offline by `pytest --atom -n
    <workers> --atom-match=strict` (pytester, in this process: with `-n 0` the replay too,
    so the lines it runs count as covered), in a folder of its own; what the run reported
    is kept in `folder`.

    The inner run is set up as conftest's `claude_for_pytester` sets one up, but only for
    the build: that fixture, set up before, would hide from `once_per_session` that this
    is an xdist worker, and each worker would replay the session once.
    """
    cassette = pytester.path / recorded.cassette.relative_to(recorded.spec.path.parent)
    cassette.parent.mkdir(parents=True)
    shutil.copy(recorded.spec.path, pytester.path / recorded.spec.path.name)
    shutil.copy(recorded.cassette, cassette)
    report = folder / "report"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
        for name in XDIST_VARIABLES:
            patch.delenv(name, raising=False)
        run = pytester.runpytest(
            "--atom", "-n", str(workers), "--atom-match=strict", "--atom-report", report
        )
    (folder / "outcomes.json").write_text(json.dumps(run.parseoutcomes()), encoding="utf-8")
    (folder / "output.txt").write_text(str(run.stdout), encoding="utf-8")


def replayed_with_pytest(folder: Path) -> Replayed:
    """The replay `replay_with_pytest` made in `folder`."""
    outcomes = json.loads((folder / "outcomes.json").read_text(encoding="utf-8"))
    output = (folder / "output.txt").read_text(encoding="utf-8")
    trace_file = folder / "report" / "probe" / "probe.json"
    document = json.loads(trace_file.read_text(encoding="utf-8")) if trace_file.is_file() else {}
    trace = {"state": document.get("state"), **document.get("atom", {})}
    transcript = folder / "report" / "probe" / "probe.transcripts" / "a01-executor-1.jsonl"
    events = list(parse(transcript.read_text(encoding="utf-8"))) if transcript.is_file() else []
    return Replayed(outcomes, output, trace, events)


def tool_results(messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """tool_use_id -> result text of every tool result in `messages`."""
    found = {}
    for message in messages:
        for block in message["content"] if isinstance(message["content"], list) else []:
            if block.get("type") == "tool_result":
                content = block["content"]
                text = (
                    content
                    if isinstance(content, str)
                    else "".join(part.get("text", "") for part in content)
                )
                found[block["tool_use_id"]] = text
    return found
