"""Task ids numbered by the conversation, not by timing.

Claude Code returns the results of concurrent `Agent` calls in the order the subagents
finished, and writes each subagent's random `agentId` into its result. The normalizer
numbers those ids by the call each result answers, so a replay whose subagents finish the
other way round sees the same `<TASK_ID:n>`; cassettes numbered by arrival are renumbered
when they load. The end-to-end replay is tests/replay/test_upstream_cli.py's session with two subagents; the
20-replay sweep on a busy machine is benchmarks/subagents.py.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_atom.replay.cassette import Cassette, Interaction
from pytest_atom.replay.normalize import Normalizer, renumber_task_ids
from pytest_atom.replay.responder import CassetteResponder
from pytest_atom.replay.scrub import Scrubber

NORTH, SOUTH = "a1b2c3d4e5f6a7b8c", "a9f8e7d6c5b4a3f2e"


def handed_back(agent: str, side: str) -> str:
    """A foreground `Agent` result as 2.1.331 writes it (tests/replay/test_normalize.py)."""
    return (
        f"Wrote {side}.txt.\nagentId: {agent} (use SendMessage with to: '{agent}', summary: "
        "'<5-10 word recap>' to continue this agent)\n"
        "<usage>subagent_tokens: 12084\ntool_uses: 1\nduration_ms: 436</usage>"
    )


def two_agents(first_done: str, north: str = NORTH, south: str = SOUTH) -> dict[str, Any]:
    """The main agent's request after two `Agent` calls (north, then south), their results
    in the order the subagents finished: `first_done` is "north" or "south"."""
    results = {
        "north": {
            "type": "tool_result",
            "tool_use_id": "toolu_north",
            "content": [{"type": "text", "text": handed_back(north, "north")}],
        },
        "south": {
            "type": "tool_result",
            "tool_use_id": "toolu_south",
            "content": [{"type": "text", "text": handed_back(south, "south")}],
        },
    }
    calls = [
        {"type": "tool_use", "id": f"toolu_{side}", "name": "Agent", "input": {"side": side}}
        for side in ("north", "south")
    ]
    second = "south" if first_done == "north" else "north"
    return {
        "messages": [
            {"role": "user", "content": "Survey the project with two helper agents."},
            {"role": "assistant", "content": [{"type": "text", "text": "Launching."}, *calls]},
            {"role": "user", "content": [results[first_done], results[second]]},
        ]
    }


def numbered(body: dict[str, Any]) -> dict[str, str]:
    """tool_use_id placeholder -> the task placeholder its result names."""
    out = {}
    for block in body["messages"][-1]["content"]:
        text = block["content"][0]["text"]
        out[block["tool_use_id"]] = text.split("agentId: ")[1].split(" ")[0]
    return out


def test_the_same_calls_get_the_same_numbers_whichever_subagent_finishes_first() -> None:
    in_order = Normalizer({}).body(two_agents("north"))
    reversed_ = Normalizer({}).body(two_agents("south"))
    # North was called first: it is task 1 whichever result came back first.
    assert (
        numbered(in_order)
        == numbered(reversed_)
        == {
            "<TOOL_ID:1>": "<TASK_ID:1>",
            "<TOOL_ID:2>": "<TASK_ID:2>",
        }
    )
    assert in_order == reversed_  # results in call order too: the bodies match exactly


def test_a_replay_with_other_ids_and_the_other_finishing_order_matches_the_recording() -> None:
    recording, replay = Normalizer({}), Normalizer({})
    recorded = recording.body(two_agents("north"))
    live = replay.body(two_agents("south", north="a0000000000000001", south="a0000000000000002"))
    assert live == recorded
    # A recorded answer that continues the north agent reaches the live north agent.
    answer = recording.paths_out(f'{{"to": "{NORTH}"}}')
    assert answer == '{"to": "<TASK_ID:1>"}'
    assert replay.paths_in(answer) == '{"to": "a0000000000000001"}'


def arrival_numbered(first_done: str) -> tuple[dict[str, Any], str]:
    """A body and an answer as a recording made before this change kept them: task ids
    numbered in the order the results arrived (south first here: south is task 1)."""
    body = Normalizer({}).body(two_agents("north"))
    text = json.dumps(body)
    if first_done == "south":
        swap = {"<TASK_ID:1>": "<TASK_ID:2>", "<TASK_ID:2>": "<TASK_ID:1>"}
        text = text.replace("<TASK_ID:1>", "\0").replace("<TASK_ID:2>", "<TASK_ID:1>")
        text = text.replace("\0", swap["<TASK_ID:1>"])
    answer = '{"to": "<TASK_ID:2>"}' if first_done == "south" else '{"to": "<TASK_ID:1>"}'
    return json.loads(text), answer  # the answer continues north in both


def test_an_arrival_numbered_recording_is_renumbered_on_load() -> None:
    old_body, old_answer = arrival_numbered("south")
    assert numbered(old_body) == {"<TOOL_ID:1>": "<TASK_ID:2>", "<TOOL_ID:2>": "<TASK_ID:1>"}
    [body], [answer] = renumber_task_ids([old_body], [old_answer])
    assert body == Normalizer({}).body(two_agents("south"))
    assert answer == '{"to": "<TASK_ID:1>"}'  # still north, under north's new number


def test_a_call_order_numbered_recording_loads_unchanged() -> None:
    body, answer = arrival_numbered("north")
    assert renumber_task_ids([body], [answer]) == ([body], [answer])


def test_the_responder_renumbers_an_old_cassette_and_serves_the_live_order(
    tmp_path: Any,
) -> None:
    old_body, old_answer = arrival_numbered("south")
    cassette = Cassette(
        tmp_path / "c.yaml",
        [Interaction("POST", "scripted://x/v1/messages?beta=true", old_body, 200, old_answer)],
    )
    responder = CassetteResponder(cassette, Normalizer({}), Scrubber())
    [loaded] = cassette.interactions
    assert loaded.body == Normalizer({}).body(two_agents("north", north="x" * 17))
    assert loaded.response == '{"to": "<TASK_ID:1>"}'
    assert responder.original_count == 1
