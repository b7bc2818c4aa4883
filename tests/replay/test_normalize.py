"""Normalization makes a request from one run equal to the same request from another run:
each test builds real Claude Code-shaped bodies and pins one placeholder or one boundary."""

from __future__ import annotations

import copy
import json
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any

import pytest

from pytest_atom.replay.normalize import (
    MACHINE_DETAILS,
    Normalizer,
    mask_machine,
    mask_machine_text,
    results_in_call_order,
    run_dates,
    unmasked_machine_details,
)

WS = "/tmp/x/run/workspace"
DAY = datetime(2026, 11, 22, 12, 0)
SESSION = "6f1c2a4e-9b7d-4c1e-8a2f-0d3b5e7c9a11"


def cc_body(
    workspace: str = WS,
    day: str = "2026-11-22",
    session: str = SESSION,
    device: str = "abc",
    tool_id: str = "toolu_01ABC",
    duration: str = "1.41s",
    prompt: str = "Fix the failing test in a.py.",
) -> dict[str, Any]:
    """A request body as the Claude Code CLI sends it mid-conversation."""
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 32000,
        "metadata": {"user_id": json.dumps({"device_id": device, "session_id": session})},
        "system": [
            {
                "type": "text",
                "text": "x-anthropic-billing-header: cc_version=2.1.197.f66; "
                "cc_entrypoint=sdk-cli; cch=12345;",
            },
            {"type": "text", "text": f"CWD: {workspace}\nDate: {day}"},
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": f"Today's date is {day}."},
                    {"type": "text", "text": prompt},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Running the tests."},
                    {
                        "type": "tool_use",
                        "id": tool_id,
                        "name": "Bash",
                        "input": {"command": f"cd {workspace} && pytest -q"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": tool_id,
                        "content": f"{workspace}/a.py ..\n2 passed in {duration}",
                    },
                ],
            },
        ],
        "tools": [
            {"name": "Bash", "description": "run a command", "input_schema": {"type": "object"}}
        ],
        "stream": True,
    }


def normalizer(workspace: str = WS, now: datetime = DAY) -> Normalizer:
    return Normalizer({workspace: "<WORKSPACE>"}, run_dates(now))


def test_realistic_body_gets_every_placeholder() -> None:
    out = normalizer().body(cc_body())
    assert out["metadata"] == "<METADATA>"
    assert out["system"][0]["text"] == (
        "x-anthropic-billing-header: cc_version=<CC_VERSION>; cc_entrypoint=sdk-cli; cch=<CCH>;"
    )
    assert out["system"][1]["text"] == "CWD: <WORKSPACE>\nDate: <DATE>"
    first, assistant, result = out["messages"]
    assert first["content"][0]["text"] == "Today's date is <DATE>."
    assert assistant["content"][1]["id"] == "<TOOL_ID:1>"
    assert assistant["content"][1]["input"] == {"command": "cd <WORKSPACE> && pytest -q"}
    assert result["content"][0]["tool_use_id"] == "<TOOL_ID:1>"
    assert result["content"][0]["content"] == "<WORKSPACE>/a.py ..\n2 passed in <DURATION>"
    # What does not vary between runs is left alone.
    assert out["model"] == "claude-sonnet-4-5" and out["max_tokens"] == 32000
    assert out["tools"] == cc_body()["tools"] and out["stream"] is True
    assert first["content"][1]["text"] == "Fix the failing test in a.py."


def test_tool_ids_are_numbered_in_order_of_appearance() -> None:
    body = cc_body()
    body["messages"][1]["content"].append(
        {"type": "tool_use", "id": "toolu_02DEF", "name": "Read", "input": {}}
    )
    body["messages"][2]["content"].insert(
        0, {"type": "tool_result", "tool_use_id": "toolu_02DEF", "content": "ok"}
    )
    out = normalizer().body(body)
    assert [b["id"] for b in out["messages"][1]["content"][1:]] == ["<TOOL_ID:1>", "<TOOL_ID:2>"]
    # the results follow their calls' order, not the order they were sent in
    assert [b["tool_use_id"] for b in out["messages"][2]["content"]] == [
        "<TOOL_ID:1>",
        "<TOOL_ID:2>",
    ]


def test_same_request_from_another_run_normalizes_equal() -> None:
    here = normalizer(WS, DAY).body(cc_body())
    other_ws = "/tmp/pytest-of-ci/pytest-7/test_other0/run/workspace"
    other = normalizer(other_ws, datetime(2027, 3, 9, 8, 30)).body(
        cc_body(
            workspace=other_ws,
            day="2027-03-09",
            session="0a0b0c0d-1111-2222-3333-444455556666",
            device="zzz",
            tool_id="toolu_01XYZ",
            duration="13.07s",
        )
    )
    assert other == here
    changed = normalizer(other_ws, datetime(2027, 3, 9, 8, 30)).body(
        cc_body(workspace=other_ws, day="2027-03-09", prompt="Fix the failing test in b.py.")
    )
    assert changed != here


def test_other_run_date_is_not_a_placeholder_without_its_run_dates() -> None:
    # A date the run could not have written is content, and a changed one must not match.
    out = normalizer(WS, DAY).body(cc_body(day="2026-10-01"))
    assert out["system"][1]["text"] == "CWD: <WORKSPACE>\nDate: 2026-10-01"


def test_durations_only_replaced_inside_tool_results() -> None:
    body = cc_body(prompt="Make the suite finish in 1.5s, it takes 12.30 seconds now.")
    body["messages"][1]["content"][0]["text"] = "It ran 0.35 sec last time."
    out = normalizer().body(body)
    assert out["messages"][0]["content"][1]["text"] == (
        "Make the suite finish in 1.5s, it takes 12.30 seconds now."
    )
    assert out["messages"][1]["content"][0]["text"] == "It ran 0.35 sec last time."
    assert out["messages"][2]["content"][0]["content"].endswith("2 passed in <DURATION>")


def test_durations_in_nested_tool_result_blocks_and_units() -> None:
    body = cc_body()
    body["messages"][2]["content"][0]["content"] = [
        {"type": "text", "text": "Finished in 0.35 sec; 12.5 ms; 3.0 seconds; took 2s; v1.2.3"}
    ]
    out = normalizer().body(body)
    assert out["messages"][2]["content"][0]["content"][0]["text"] == (
        "Finished in <DURATION>; <DURATION>; <DURATION>; took 2s; v1.2.3"
    )


def test_longest_path_wins() -> None:
    norm = Normalizer({"/tmp/x/run": "<RUN_DIR>", WS: "<WORKSPACE>"})
    assert norm.paths_out(f"cd {WS}/src; cat /tmp/x/run/log.txt") == (
        "cd <WORKSPACE>/src; cat <RUN_DIR>/log.txt"
    )
    out = norm.body(cc_body())
    assert out["system"][1]["text"].startswith("CWD: <WORKSPACE>\n")
    assert "<RUN_DIR>" not in json.dumps(out)


def test_paths_in_reverses_paths_out() -> None:
    norm = Normalizer({"/tmp/x/run": "<RUN_DIR>", WS: "<WORKSPACE>"})
    text = f"I'll edit {WS}/calc.py and write the log to /tmp/x/run/out.log."
    out = norm.paths_out(text)
    assert out == "I'll edit <WORKSPACE>/calc.py and write the log to <RUN_DIR>/out.log."
    assert norm.paths_in(out) == text
    live = Normalizer({"/tmp/y/run": "<RUN_DIR>", "/tmp/y/run/workspace": "<WORKSPACE>"})
    assert live.paths_in(out) == (
        "I'll edit /tmp/y/run/workspace/calc.py and write the log to /tmp/y/run/out.log."
    )


def test_empty_path_mapping_is_ignored() -> None:
    norm = Normalizer({"": "<EMPTY>"})
    assert norm.paths_out("a/b") == "a/b" and norm.paths_in("<EMPTY>") == "<EMPTY>"


def test_body_does_not_mutate_its_input() -> None:
    body = cc_body()
    before = copy.deepcopy(body)
    out = normalizer().body(body)
    assert body == before
    assert out != body
    out["messages"][0]["content"].clear()
    assert body == before  # no shared nested objects either


def test_run_dates_cover_local_utc_and_the_day_before() -> None:
    west = datetime(2026, 11, 22, 23, 30, tzinfo=timezone(timedelta(hours=-5)))  # UTC: the 23rd
    assert run_dates(west) == ["2026-11-21", "2026-11-22", "2026-11-23"]
    east = datetime(2026, 11, 22, 3, 0, tzinfo=timezone(timedelta(hours=9)))  # UTC: the 21st
    assert run_dates(east) == ["2026-11-20", "2026-11-21", "2026-11-22"]
    assert run_dates(datetime(2026, 3, 1, 12, 0, tzinfo=UTC)) == [
        "2026-02-28",
        "2026-03-01",
    ]
    local = run_dates(DAY)
    assert {"2026-11-21", "2026-11-22"} <= set(local) and local == sorted(local)
    today = run_dates()
    assert date.today().isoformat() in today
    assert (date.today() - timedelta(days=1)).isoformat() in today


def test_the_sandboxs_count_of_denied_paths_is_masked_on_both_sides() -> None:
    """The CLI cuts its list of denied paths off with a count of the rest, which depends on
    the machine's folders: a live request and an older recording must still match exactly."""
    live = {
        "messages": [
            {"role": "user", "content": '["/x", "... and 168 more (truncated for prompt size)"]'}
        ]
    }
    recorded = {
        "messages": [
            {"role": "user", "content": '["/x", "... and 155 more (truncated for prompt size)"]'}
        ]
    }
    normalized = Normalizer({}).body(live)
    assert normalized["messages"][0]["content"].endswith(
        '"... and <N> more (truncated for prompt size)"]'
    )
    assert mask_machine(recorded) == normalized
    assert mask_machine(normalized) == normalized  # idempotent: safe on new cassettes


def _parallel_turn(results_order: list[str]) -> dict[str, Any]:
    """Two concurrent Bash calls, their results in the order given (completion order)."""
    calls = {"toolu_A": "sleep 1; echo first", "toolu_B": "echo second"}
    return {
        "messages": [
            {"role": "user", "content": "Run both."},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": i, "name": "Bash", "input": {"command": c}}
                    for i, c in calls.items()
                ],
            },
            {
                "role": "user",
                "content": [
                    *(
                        {"type": "tool_result", "tool_use_id": i, "content": i[-1]}
                        for i in results_order
                    ),
                    {"type": "text", "text": "<system-reminder>x</system-reminder>"},
                ],
            },
        ]
    }


def test_concurrent_tool_results_come_in_call_order_whatever_order_they_completed_in() -> None:
    normalizer = Normalizer({})
    in_order = normalizer.body(_parallel_turn(["toolu_A", "toolu_B"]))
    completed = normalizer.body(_parallel_turn(["toolu_B", "toolu_A"]))
    assert completed == in_order
    content = in_order["messages"][2]["content"]
    assert [(b.get("tool_use_id"), b.get("content")) for b in content] == [
        ("<TOOL_ID:1>", "A"),
        ("<TOOL_ID:2>", "B"),
        (None, None),  # the text block keeps its place after the results
    ]


def test_results_are_put_in_call_order_in_bodies_normalized_before_that_existed() -> None:
    normalizer = Normalizer({})
    body = normalizer.body(_parallel_turn(["toolu_A", "toolu_B"]))
    old = copy.deepcopy(body)  # as an older cassette stored it, in completion order
    old["messages"][2]["content"][:2] = old["messages"][2]["content"][1::-1]
    assert old != body
    frozen = copy.deepcopy(old)
    assert results_in_call_order(old) == body
    assert old == frozen  # pure: a loaded cassette's shared blocks are never changed


#: Texts Claude Code 2.1.330 writes into requests about the background tasks it started,
#: as captured from real runs (ids and times as they came).
LAUNCHED = (
    "Async agent launched successfully.\nagentId: a6882563bb062b50a (internal ID - do not "
    "mention to user. Use SendMessage with to: 'a6882563bb062b50a', summary: '<5-10 word "
    "recap>' to continue this agent.)\noutput_file: /tmp/claude-0/tasks/a6882563bb062b50a.output"
)
HANDED_BACK = (
    "  Wrote south.txt.\nagentId: a9fade3e89f2feca3 (use SendMessage with to: "
    "'a9fade3e89f2feca3', summary: '<5-10 word recap>' to continue this agent)\n"
    "<usage>subagent_tokens: 12084\ntool_uses: 1\nduration_ms: 436</usage>"
)
NOTIFIED = (
    "<system-reminder>\n<task-notification>\n<task-id>a71727ae116879977</task-id>\n"
    "<status>completed</status>\n<usage><subagent_tokens>10937</subagent_tokens>"
    "<tool_uses>1</tool_uses><duration_ms>591</duration_ms></usage>\n"
    "</task-notification>\n</system-reminder>"
)
BACKGROUNDED = (
    "Command was moved to the background (ID: bq7x2k9d) after running for 12s. Output is "
    "being written to: /tmp/claude-0/tasks/bq7x2k9d.output"
)


def _user(*texts: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": [{"type": "text", "text": t} for t in texts]}]}


def _texts(body: dict[str, Any]) -> list[str]:
    return [b["text"] for b in body["messages"][0]["content"]]


def test_a_subagents_id_is_a_placeholder_wherever_it_recurs() -> None:
    [launched] = _texts(Normalizer({}).body(_user(LAUNCHED)))
    assert "a6882563bb062b50a" not in launched
    assert launched.count("<TASK_ID:1>") == 3  # agentId, SendMessage to, the output file


def test_a_background_agents_notification_names_its_id_and_time_as_placeholders() -> None:
    normalizer = Normalizer({})
    _, notified = _texts(normalizer.body(_user(LAUNCHED, NOTIFIED)))
    assert "<task-id><TASK_ID:2></task-id>" in notified  # another agent: the next number
    assert "<duration_ms><MS></duration_ms>" in notified
    assert "<subagent_tokens>10937</subagent_tokens>" in notified  # replays the same: kept


def test_a_foreground_agents_hand_back_masks_its_id_and_wall_clock_time() -> None:
    [handed] = _texts(Normalizer({}).body(_user(HANDED_BACK)))
    assert "agentId: <TASK_ID:1> (use SendMessage with to: '<TASK_ID:1>'" in handed
    assert "duration_ms: <MS></usage>" in handed and "subagent_tokens: 12084" in handed


def test_a_backgrounded_commands_id_and_running_time_are_placeholders() -> None:
    [text] = _texts(Normalizer({}).body(_user(BACKGROUNDED)))
    assert text == (
        "Command was moved to the background (ID: <TASK_ID:1>) after running for <N>s. "
        "Output is being written to: <TMP>/claude-<UID>/tasks/<TASK_ID:1>.output"
    )


def test_task_ids_are_numbered_per_run_and_replayed_answers_get_the_live_ids() -> None:
    """Two runs start their agents under other random ids: the bodies normalize equal, and
    a recorded answer naming the first agent reaches the live run's first agent."""
    recording, replay = Normalizer({}), Normalizer({})
    recorded = recording.body(_user(LAUNCHED))
    live = replay.body(_user(LAUNCHED.replace("a6882563bb062b50a", "adab0ec73237051f8")))
    assert live == recorded
    answer = recording.paths_out('{"to": "a6882563bb062b50a", "message": "go on"}')
    assert answer == '{"to": "<TASK_ID:1>", "message": "go on"}'
    assert replay.paths_in(answer) == '{"to": "adab0ec73237051f8", "message": "go on"}'


# --- machine details -------------------------------------------------------------------------

ENVIRONMENT = (
    "# Environment\n - Primary working directory: {ws}\n - Is a git repository: true\n"
    " - Platform: {platform}\n - Shell: {shell}\n - OS Version: {os}\n - Downloaded files ..."
)


def environment(
    os: str = "Linux 6.18.44-fc-v782", shell: str = "bash", platform: str = "linux"
) -> dict[str, Any]:
    """A request whose role-system entry carries the environment block, as 2.1.330 sends it."""
    text = ENVIRONMENT.format(ws=WS, platform=platform, shell=shell, os=os)
    return {"messages": [{"role": "system", "content": [{"type": "text", "text": text}]}]}


@pytest.mark.parametrize(
    ("field", "one", "other"),
    [
        ("os", "Linux 6.18.44-fc-v782", "Linux 6.18.44-fc-v657"),
        ("os", "Linux 6.18.44-fc-v782", "Darwin 24.1.0"),
        ("shell", "bash", "bash (login shell: zsh)"),
        ("platform", "linux", "darwin"),
    ],
)
def test_each_environment_line_is_masked_on_both_sides(field: str, one: str, other: str) -> None:
    """Two machines' requests normalize equal, and a recording made before the mask existed
    matches the live request once loaded (mask_machine), and stays so (idempotent)."""
    live = Normalizer({WS: "<WORKSPACE>"}).body(environment(**{field: other}))
    recorded = environment(**{field: one})
    recorded["messages"][0]["content"][0]["text"] = recorded["messages"][0]["content"][0][
        "text"
    ].replace(WS, "<WORKSPACE>")
    assert mask_machine(recorded) == live
    assert mask_machine(live) == live
    text = live["messages"][0]["content"][0]["text"]
    assert other not in text and one not in text
    assert unmasked_machine_details(text) == []


def test_each_machine_detail_masks_its_example_and_only_it() -> None:
    for detail in MACHINE_DETAILS:
        line = f"before\n{detail.example}\nafter"
        masked = mask_machine_text(line)
        assert masked.startswith("before\n") and masked.endswith("\nafter"), detail.name
        assert masked != line and mask_machine_text(masked) == masked, detail.name
        assert unmasked_machine_details(line)[0][0] == detail.name
        assert unmasked_machine_details(masked) == [], detail.name


def test_environment_values_end_at_an_escaped_newline_in_a_json_text_body() -> None:
    """A body the gateway could not parse is normalized as text: JSON escapes stay intact."""
    text = json.dumps(environment(os="Linux 6.18.44-fc-v657", shell="zsh"))
    masked = Normalizer({}).text(text)
    assert json.loads(masked) == mask_machine(environment(os="x", shell="y"))
    assert "- OS Version: <OS_VERSION>\\n - Downloaded" in masked


def test_the_sandboxs_folders_named_after_the_user_id_are_masked() -> None:
    """`cc-daemon` stays in /tmp when $TMPDIR points elsewhere, under any user id."""
    recorded = '["<TMP>/cc-daemon-<UID>","<TMP>/claude-<UID>/bash-edit-diff","/tmp/claude"]'
    other_user = '["/tmp/cc-daemon-1000","/tmp/claude-1000/bash-edit-diff","/tmp/claude"]'
    assert Normalizer({}).text(other_user) == recorded
    assert mask_machine(recorded) == recorded
    assert mask_machine_text("/tmp/cc-daemon-1000x /tmp/claude-12/") == (
        "/tmp/cc-daemon-1000x <TMP>/claude-<UID>/"
    )
    assert unmasked_machine_details(other_user) == [
        ("user id", "/tmp/cc-daemon-1000"),
        ("user id", "/tmp/claude-1000"),
    ]


def test_a_command_output_naming_the_kernel_elsewhere_is_left_alone() -> None:
    """Only the environment block's own lines are masked, not every mention of a kernel."""
    text = "uname -r says 6.18.44-fc-v782; OS Version: 6.18"
    assert mask_machine_text(text) == text
