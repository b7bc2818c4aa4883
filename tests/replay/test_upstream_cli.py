"""The real Claude Code CLI through the project's gateway in front of the realistic upstream.

One session (tests/upstream_helpers.py) holds every shape: parallel tool calls with
thinking, an overload at the start of a stream and one mid-stream, two concurrent
subagents and a judged verdict. It is recorded once per test session, and replayed
offline once per test session by `pytest --atom --atom-match=strict` (every request in its
recorded order); each test reads the part it names. The gateway's own handling of the
overloads is tests/replay/test_upstream.py's (an HTTP client, no CLI). The sweep (`-m sweep`)
adds the subagents in the background, replays in both match modes (`--replays N` times,
at least 3) and a replay under pytest-xdist."""

from __future__ import annotations

import json
import re
from functools import partial
from pathlib import Path

import pytest

from pytest_atom.events import SubagentEnded
from pytest_atom.replay.cassette import FAULT_HEADER, Cassette
from pytest_atom.replay.transcript import stream_turns
from pytest_atom.reports.cassette_transcript import cassette_lines
from tests.helpers import once_per_session
from tests.upstream import sse_events
from tests.upstream_helpers import (
    AUDITOR,
    FAULTS,
    FINAL,
    LAUNCH,
    PARALLEL,
    PROMPT,
    SCORE,
    SIDES,
    THINKING,
    Recorded,
    Replayed,
    record_session,
    recorded_session,
    replay_with_pytest,
    replayed_with_pytest,
    tool_results,
)

SUBS = [f"Write the word {side}" for side in SIDES]


@pytest.fixture(
    scope="module", params=["foreground", pytest.param("background", marks=pytest.mark.sweep)]
)
def session(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, claude_bin: Path
) -> Recorded:
    """The session recorded once per test session, its subagents in the foreground (the
    background is the sweep's)."""
    shape = str(request.param)
    build = partial(record_session, claude_bin=claude_bin, shape=shape)
    return recorded_session(once_per_session(tmp_path_factory, f"upstream-{shape}", build), shape)


@pytest.fixture
def strict(
    session: Recorded,
    pytester: pytest.Pytester,
    claude_bin: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Replayed:
    """The session replayed offline once per test session by `pytest --atom
    --atom-match=strict`: by the first test that asks, with its pytester, in this process
    (the plugin and the replay alike: their lines count as covered)."""
    assert session.result.passed, session.result.report()
    build = partial(
        replay_with_pytest, recorded=session, pytester=pytester, claude_bin=claude_bin, workers=0
    )
    name = f"upstream-{session.shape}-strict"
    return replayed_with_pytest(once_per_session(tmp_path_factory, name, build))


def passed(replayed: Replayed) -> bool:
    trace = replayed.trace
    return replayed.outcomes == {"passed": 1} and trace["state"] == "succeeded" and trace["passed"]


@pytest.mark.slow
def test_the_session_replays_offline_in_strict_mode(session: Recorded, strict: Replayed) -> None:
    assert session.cassette.is_file()
    assert passed(strict), strict.output
    assert strict.trace["source"] == "replay" and not strict.trace["drift"], strict.trace


@pytest.mark.slow
def test_parallel_tool_calls_with_thinking_record_and_replay_offline(
    session: Recorded, strict: Replayed
) -> None:
    served = [a for c, t, a in session.upstream.turns() if c == PROMPT and t == PARALLEL]
    assert served == ["overloaded_at_start", "ok"]
    # Claude Code sent back the thinking with its signature and both calls, by their ids.
    next_turn = session.first_body(PARALLEL + 1)
    thinking, _text, *calls = next_turn["messages"][-2]["content"]
    first = session.answer(PARALLEL)
    assert thinking == first["content"][0] and thinking["thinking"] == THINKING
    assert [c["id"] for c in calls] == [b["id"] for b in first["content"][2:]]
    assert len(calls) == 2
    results = next_turn["messages"][-1]["content"]
    assert {r["tool_use_id"] for r in results} == {c["id"] for c in calls}
    # The cassette holds the streams as sent: pings, the signature, both calls.
    streams = [
        sse_events(i.response)
        for i in Cassette.load(session.cassette).interactions
        if "event-stream" in i.response_headers.get("content-type", "")
    ]
    events = [event for stream in streams for event in stream]
    assert ("ping", {"type": "ping"}) in events
    deltas = [data["delta"] for name, data in events if name == "content_block_delta"]
    assert {"type": "signature_delta", "signature": thinking["signature"]} in deltas
    started = [data["content_block"] for name, data in events if name == "content_block_start"]
    ids = [c["id"] for c in calls]
    assert [b["id"] for b in started if b["type"] == "tool_use" and b["id"] in ids] == ids
    assert passed(strict), strict.output


@pytest.mark.slow
@pytest.mark.parametrize("fault", list(FAULTS))
def test_claude_code_gets_past_an_overload_from_the_upstream(
    session: Recorded, strict: Replayed, fault: str
) -> None:
    """The upstream serves a fault once, and tells the CLI's way past it from a new turn: a
    resend of the same request (at start), or its own "cut off mid-stream" continuation."""
    turn = FAULTS[fault]
    served = [r for r in session.main_requests() if r.turn == turn]
    assert [r.answer for r in served] == [fault, "ok"]
    faulted, resent = served
    kept = [
        i.response_headers.get(FAULT_HEADER) for i in Cassette.load(session.cassette).interactions
    ]
    # The identical resend made the overload at start good: no need to replay that fault.
    # Claude Code continued past the cut one: the broken stream is kept as it saw it, so a
    # replay breaks the same way and the continuation matches what was recorded.
    assert [k for k in kept if k] == ["sent an error event mid-stream"]
    if fault == "overloaded_at_start":
        assert resent.body == faulted.body and not resent.continuation
    else:
        assert resent.continuation and not faulted.continuation
    assert session.result.passed, session.result.report()
    assert passed(strict), strict.output


@pytest.mark.slow
def test_two_subagents_record_through_the_upstream(session: Recorded) -> None:
    upstream = session.upstream
    for key in SUBS:  # each subagent is a conversation of its own, turn by turn
        assert [(c, t) for c, t, _ in upstream.turns() if c == key] == [(key, 0), (key, 1)]
    main = [t or 0 for c, t, _ in upstream.turns() if c == PROMPT]  # a turn has a number
    assert main == sorted(main) and set(main) == set(range(max(main) + 1))
    assert max(main) >= FINAL
    # Every session's tokens are in the upstream's sum, subagents and the reflector included.
    per = upstream.tokens_by_conversation()
    assert set(per) >= {PROMPT, AUDITOR, *SUBS}
    assert all(per[key].cache_read_input_tokens for key in (PROMPT, *SUBS))
    assert upstream.tokens_sent() == sum(u.total for u in per.values())
    # What Claude Code writes into the Agent results: ids and times that change every run.
    calls = session.answer(LAUNCH)["content"][2:]
    results = tool_results(session.first_body(LAUNCH + 1)["messages"][-1:])
    assert set(results) == {call["id"] for call in calls}
    for text in results.values():
        assert re.search(r"agentId: a[0-9a-f]{16} ", text), text
    later = json.dumps(session.main_bodies()[-1])  # the whole history, notifications too
    if "Async agent launched successfully" in next(iter(results.values())):
        assert all("output_file: " in text for text in results.values())
        for call in calls:  # each completion is notified, naming its tool_use_id
            assert f"<tool-use-id>{call['id']}</tool-use-id>" in later
        assert later.count("<status>completed</status>") == 2
        assert re.search(r"<duration_ms>\d+</duration_ms>", later)
    else:
        for text in results.values():
            assert re.search(
                r"<usage>subagent_tokens: \d+\ntool_uses: 1\nduration_ms: \d+</usage>", text
            )


@pytest.mark.slow
def test_a_subagent_is_shown_under_the_agent_call_that_started_it(session: Recorded) -> None:
    # atom cassette show: each subagent's session right under its Agent call
    lines = [
        str(line) for line in cassette_lines(session.cassette, Cassette.load(session.cassette))
    ]
    for side in SIDES:
        call = next(n for n, line in enumerate(lines) if f'"description": "Survey {side}"' in line)
        assert lines[call + 1].strip() == f"subagent: Survey {side} (2 turns)", lines[
            call : call + 3
        ]
        command = next(n for n, line in enumerate(lines) if f"echo {side} > {side}.txt" in line)
        assert call < command and lines[command].startswith(" " * 16)  # nested, indented
    # No session of their own (the main agent's, its continuation's and the reflector's
    # are): each subagent's prompt is shown only nested under its Agent call.
    prompts = [line for line in lines if line.strip().startswith("Write the word ")]
    assert len(prompts) == len(SIDES) and all(p.startswith(" " * 14) for p in prompts), prompts
    # the HTML report's conversation (stream_turns): the same nesting from the CLI's events
    agents = [
        agent
        for turn in stream_turns(session.result.records[0].events)
        for agent in turn.tool_uses
        if agent.name == "Agent"
    ]
    assert len(agents) == len(SIDES)
    for agent in agents:
        side = agent.input["description"].split()[-1]
        commands = [c.input["command"] for t in agent.subagent for c in t.tool_uses]
        assert [c.endswith(f"echo {side} > {side}.txt") for c in commands] == [True], commands


@pytest.mark.slow
def test_two_subagents_replay_offline(strict: Replayed) -> None:
    """In the strict mode, both subagents' requests in their recorded order. That their
    finishing order does not matter is tests/events/test_task_ids.py's, and 20 replays on a busy
    machine are benchmarks/subagents.py's."""
    assert passed(strict), strict.output
    ended = [e for e in strict.events if isinstance(e, SubagentEnded)]
    assert len(ended) == len(SIDES) and {e.status for e in ended} == {"completed"}, ended


@pytest.mark.slow
def test_a_judged_spec_records_and_replays_offline(session: Recorded, strict: Replayed) -> None:
    assert session.result.passed, session.result.report()
    assert session.result.score == SCORE
    assert {c for c, _, _ in session.upstream.turns()} == {PROMPT, AUDITOR, *SUBS}
    # The reflector's session ends with its StructuredOutput call: one turn.
    assert [t for c, t, _ in session.upstream.turns() if c == AUDITOR] == [0]
    assert passed(strict) and strict.trace["score"] == SCORE, strict.output


@pytest.mark.slow
@pytest.mark.sweep
@pytest.mark.parametrize("match", ["conversation", "strict"])
def test_the_session_replays_the_same_every_time(
    session: Recorded, claude_bin: Path, replays: int, match: str
) -> None:
    """The determinism sweep: `--replays N` replays (at least 3) in each match mode."""
    for attempt in range(max(replays, 3)):
        replayed = session.replay(claude_bin, "strict" if match == "strict" else "conversation")
        assert replayed.passed and replayed.score == SCORE, (
            f"{match} replay {attempt + 1}:\n{replayed.report()}"
        )


@pytest.mark.slow
@pytest.mark.sweep
def test_the_session_replays_strict_under_xdist(
    session: Recorded, pytester: pytest.Pytester, claude_bin: Path, tmp_path: Path
) -> None:
    """The same replay by `pytest --atom -n 2` (the suite's is in one process: its lines
    count as covered; replays under xdist are also conftest's `shipped_run`)."""
    replay_with_pytest(tmp_path, session, pytester, claude_bin, workers=2)
    replayed = replayed_with_pytest(tmp_path)
    assert passed(replayed), replayed.output
