"""Conversations (a spec's `user:`), through the real CLI and scripted gateways.

One project, run once per session: `chat` (a simulated user whose model answers come from
the script's `user:` turns: four user messages, one AskUserQuestion answered) recorded
from its script, then replayed offline, then replayed with the agent's second turn changed
in the cassette; `talk` (a scripted user and scripted `answers:`) and `unasked` (a question
nobody answers) run scripted.
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.errors import ScriptError, SpecError
from pytest_atom.gateway.scripted import Script
from pytest_atom.run.spec_run import run_spec
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import Scenario, bash, pytester_once, record_through_upstream, write

ARGS = ("--atom", "-v", "-p", "no:cacheprovider")
QUESTION = "Which colour should colour.txt say?"
ASK = {
    "text": "Which colour?",
    "tool_use": [
        {
            "name": "AskUserQuestion",
            "input": {
                "questions": [
                    {
                        "question": QUESTION,
                        "header": "Colour",
                        "multiSelect": False,
                        "options": [
                            {"label": "red", "description": "Red"},
                            {"label": "blue", "description": "Blue"},
                        ],
                    }
                ]
            },
        }
    ],
}
#: The agent's turns: asked, it writes the colour; then capitals; then a second file.
TURNS = [
    ASK,
    bash("printf 'blue\\n' > colour.txt", "Writing it."),
    {"text": "Wrote blue to colour.txt."},
    bash("printf 'BLUE\\n' > colour.txt", "Upper-casing."),
    {"text": "It says BLUE now."},
    bash("printf 'dark\\n' > shade.txt", "Adding shade.txt."),
    {"text": "shade.txt says dark."},
]
CHAT = """\
name: chat
prompt: Write a colour into colour.txt.
script: chat.yaml
timeout: 120
attempts: 1
user:
  persona: A terse developer.
  goal: colour.txt says BLUE in capitals and shade.txt says dark.
  max_turns: 5
accept:
  - file_contains: {path: colour.txt, pattern: "^BLUE$"}
  - file_contains: {path: shade.txt, pattern: "^dark$"}
  - asked_user: {min: 1, max: 1, pattern: colour}
  - user_turns: {max: 3}
"""
#: The simulated user's model answers: the question, then two messages, then done.
USER = [
    {"reply": {"message": "blue"}},
    {"reply": {"message": "Capitals please."}},
    {"reply": {"message": "Also write dark into shade.txt."}},
    {"reply": {"message": "Thanks.", "done": True}},
]
TALK = """\
name: talk
prompt: Write a colour into colour.txt.
script: talk.yaml
timeout: 120
attempts: 1
user:
  script: [Capitals please., Also write dark into shade.txt.]
  answers: [blue]
accept:
  - file_contains: {path: colour.txt, pattern: "^BLUE$"}
  - asked_user: true
  - user_turns: {max: 3}
"""
UNASKED = TALK.replace("name: talk", "name: unasked").replace("  answers: [blue]\n", "")


def _project(root: Path) -> None:
    write(root / "specs" / "chat.atom.yaml", CHAT)
    write(root / "specs" / "chat.yaml", json.dumps({"turns": TURNS, "user": USER}))
    write(root / "specs" / "talk.atom.yaml", TALK)
    write(root / "specs" / "unasked.atom.yaml", UNASKED)
    write(root / "specs" / "talk.yaml", json.dumps({"turns": [*TURNS, {"text": "Bye."}]}))


def _change_second_turn(cassette: Path) -> None:
    """The agent's second turn says red where it said blue: only the recorded answer."""
    lines = cassette.read_text(encoding="utf-8").splitlines(keepends=True)
    changed = [
        line.replace("Wrote blue to", "Wrote red to") if "text_delta" in line else line
        for line in lines
    ]
    assert changed != lines
    cassette.write_text("".join(changed), encoding="utf-8")


@pytest.fixture
def talked(
    tmp_path_factory: pytest.TempPathFactory, pytester: pytest.Pytester, claude_for_pytester: None
) -> Scenario:
    def play(inner: pytest.Pytester) -> dict[str, pytest.RunResult]:
        _project(inner.path)
        chat = "specs/chat.atom.yaml"
        runs = {
            "record": inner.runpytest(chat, *ARGS, "--atom-record-mode=once"),
            "replay": inner.runpytest(chat, *ARGS, "--junitxml=replay.xml"),
        }
        cassette = inner.path / "specs" / "cassettes" / "chat" / "chat.yaml"
        shutil.copy2(cassette, inner.path / "recorded.yaml")
        _change_second_turn(cassette)
        runs["diverged"] = inner.runpytest(chat, *ARGS)
        runs["scripted"] = inner.runpytest(
            "specs/talk.atom.yaml", "specs/unasked.atom.yaml", *ARGS,
            "--junitxml=scripted.xml",
        )  # fmt: skip
        return runs

    return pytester_once(pytester, tmp_path_factory, "conversation", play)


def _junit(scenario: Scenario, name: str) -> dict[str, dict[str, str]]:
    tree = ET.parse(scenario.project / name)
    return {
        str(case.get("name")): {
            str(p.get("name")): str(p.get("value")) for p in case.iter("property")
        }
        for case in tree.iter("testcase")
    }


def _roles(cassette: Path) -> list[str]:
    """The role of each recorded request, in order."""
    return re.findall(r"x-atom-role:\n\s*- (\w+)", cassette.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_a_simulated_user_talks_over_three_turns_and_the_recording_replays_offline(
    talked: Scenario,
) -> None:
    for run in ("record", "replay"):
        talked.runs[run].assert_outcomes(passed=1)
    props = _junit(talked, "replay.xml")["chat"]
    assert (props["atom_user_turns"], props["atom_user_done"]) == ("3", "True")
    assert props["atom_source"] == "replay"
    roles = _roles(talked.project / "recorded.yaml")
    assert roles.count("user") == 4  # the question's answer and three replies, in the cassette
    assert roles.count("executor") >= 3


@pytest.mark.slow
def test_the_agents_question_is_answered_by_the_simulated_user(talked: Scenario) -> None:
    """The replay passed its checks: `asked_user` (one question about the colour) and the
    colour the answer chose."""
    recorded = (talked.project / "recorded.yaml").read_text(encoding="utf-8")
    assert f'Your questions have been answered: \\"{QUESTION}\\"=\\"blue\\"' in recorded
    assert _junit(talked, "replay.xml")["chat"]["atom_outcome"] == "passed"


@pytest.mark.slow
def test_a_changed_agent_turn_makes_the_users_recorded_turn_diverge(talked: Scenario) -> None:
    run = talked.runs["diverged"]
    run.assert_outcomes(failed=1)
    run.lines.fnmatch_lines(
        [
            "*replay diverged from the cassette*",
            "*POST /v1/messages (user): no recorded interaction matches*",
            "*recorded *Wrote [[]blue[]] to colour.txt*",
            "*live *Wrote [[]red[]] to colour.txt*",
        ]
    )


@pytest.mark.slow
def test_a_scripted_user_and_scripted_answers_need_no_model(talked: Scenario) -> None:
    props = _junit(talked, "scripted.xml")
    assert props["talk"]["atom_outcome"] == "passed", props["talk"]
    assert props["talk"]["atom_user_turns"] == "3"


@pytest.mark.slow
def test_a_question_nobody_answers_fails_the_attempt_saying_so(talked: Scenario) -> None:
    props = _junit(talked, "scripted.xml")["unasked"]
    assert props["atom_outcome"] == "failed"
    talked.runs["scripted"].lines.fnmatch_lines(
        [f"*the agent asked the user ({QUESTION}) and nobody answers*"]
    )


# --- the spec's `user:` and the script's `user:` turns, loaded ---------------------------


def _spec_error(tmp_path: Path, user: str, extra: str = "") -> SpecError:
    path = write(tmp_path / "u.atom.yaml", f"name: u\nprompt: p\n{extra}user:\n{user}")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    return info.value


def test_a_simulated_user_needs_a_goal(tmp_path: Path) -> None:
    err = _spec_error(tmp_path, "  persona: terse\n")
    assert "a simulated user needs a 'goal:'" in err.message and err.line == 3


def test_a_scripted_user_has_no_persona(tmp_path: Path) -> None:
    err = _spec_error(tmp_path, "  script: [go on]\n  persona: terse\n")
    assert "'persona' is for a user a model plays" in err.message and err.line == 5


def test_a_conversation_has_no_steps(tmp_path: Path) -> None:
    path = write(
        tmp_path / "u.atom.yaml",
        "name: u\nsteps:\n  - {id: a, prompt: p}\nuser:\n  goal: g\n",
    )
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert "'user:' makes the prompt a conversation" in info.value.message
    assert info.value.line == 4


def test_an_unknown_user_key_is_refused_at_its_line(tmp_path: Path) -> None:
    err = _spec_error(tmp_path, "  goal: g\n  mood: grumpy\n")
    assert "mood" in err.message and err.line == 5


def test_the_user_defaults_to_a_small_model_and_five_turns(tmp_path: Path) -> None:
    path = write(tmp_path / "u.atom.yaml", "name: u\nprompt: p\nuser: {goal: g}\n")
    user = load_spec(path).user
    assert user is not None and (user.model, user.max_turns, user.simulated) == ("haiku", 5, True)
    path.write_text("name: u\nprompt: p\nuser: {script: [a, b]}\n", encoding="utf-8")
    user = load_spec(path).user
    assert user is not None and (user.max_turns, user.simulated) == (3, False)


def test_a_scripts_user_turns_are_structured_replies() -> None:
    script = Script.from_data({"turns": [{"text": "hi"}], "user": USER})
    first = script.user[0].tool_use[0]
    assert (first.name, dict(first.input)) == (
        "StructuredOutput",
        {"done": False, "message": "blue"},
    )
    with pytest.raises(ScriptError, match="'reply' is a mapping"):
        Script.from_data({"turns": [{"text": "hi"}], "user": [{"reply": "yes"}]})


# --- the realistic upstream: a conversation recorded from streams shaped as the API's ----


def _structured(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """A structured session's turns: its answer, then its last words."""
    return [{"tool_calls": [{"name": "StructuredOutput", "input": answer}]}, {"text": "Sent."}]


def _realistic() -> dict[str, list[dict[str, Any]]]:
    """The agent's conversation, keyed by its prompt, and each simulated user's session,
    keyed by what only its own first message holds (the upstream takes the longest key)."""
    agent = [{"text": t.get("text", ""), "tool_calls": t.get("tool_use", [])} for t in TURNS]
    nxt = "\n\nWrite your next message"
    return {
        "Write a colour into colour.txt.": agent,
        "The agent now asks you: Which colour": _structured({"message": "blue", "done": False}),
        f"Wrote blue to colour.txt.{nxt}": _structured(
            {"message": "Capitals please.", "done": False}
        ),
        f"It says BLUE now.{nxt}": _structured(
            {"message": "Also write dark into shade.txt.", "done": False}
        ),
        f"shade.txt says dark.{nxt}": _structured({"message": "Thanks.", "done": True}),
    }


@pytest.mark.slow
def test_a_conversation_recorded_from_the_realistic_upstream_replays_offline(
    tmp_path: Path, claude_bin: Path
) -> None:
    path = write(tmp_path / "chat.atom.yaml", CHAT.replace("script: chat.yaml\n", ""))
    spec = load_spec(path)
    recorded, _ = record_through_upstream(spec, _realistic(), claude_bin)
    assert recorded.passed, recorded.report()
    assert (recorded.user_turns, recorded.user_done) == (3, True)
    replayed = run_spec(spec, runs_dir=tmp_path / "runs", claude_bin=claude_bin)
    assert replayed.passed and replayed.source == "replay", replayed.report()
    assert replayed.user_turns == 3
