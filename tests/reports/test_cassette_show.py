"""`atom cassette show` shows everything a stream carries and counts what it billed: no CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_atom.gateway.messages import message, sse_stream
from pytest_atom.replay.cassette import Cassette, Interaction
from pytest_atom.replay.estimate import estimate
from pytest_atom.reports.cassette_transcript import cassette_lines
from tests import streams

URI = "https://api.anthropic.com/v1/messages"
TOOLS = [{"name": "Bash", "input_schema": {"type": "object"}}]


def _turn(messages: list[dict[str, Any]], response: str, model: str = streams.MODEL) -> Interaction:
    body = {"model": model, "tools": TOOLS, "messages": messages}
    return Interaction("POST", URI, body, 200, response)


def _show(*interactions: Interaction, max_lines: int = 15) -> str:
    cassette = Cassette(Path("c.yaml"), list(interactions))
    return "\n".join(map(str, cassette_lines(Path("c.yaml"), cassette, max_lines)))


def test_server_tool_calls_and_their_results_are_shown_with_their_content() -> None:
    text = _show(_turn([{"role": "user", "content": "Find it."}], streams.SEARCH_STREAM))
    assert '      server_tool_use web_search {"query": "pytest fixtures"}' in text
    assert "      web_search_tool_result srvtoolu_s:" in text
    assert (
        "        - How to use fixtures <https://docs.pytest.org/en/stable/how-to/fixtures.html>"
        " (April 30, 2025)" in text
    )
    assert "        (web_search_result: encrypted)" in text
    assert "      web_fetch_tool_result srvtoolu_f:\n        - <https://example.com/a>" in text
    assert "        - Example A\n        Fetched page text." in text
    assert (
        "      bash_code_execution_tool_result srvtoolu_c:\n        return_code: 0\n        stdout: 42"
        in text
    )
    assert "3 server tool calls" in text and "0 tool calls" in text


def test_citations_are_shown_under_the_text_that_cites() -> None:
    text = _show(_turn([{"role": "user", "content": "Find it."}], streams.SEARCH_STREAM))
    assert (
        "      Declare the fixture as an argument.\n"
        "        [cites] How to use fixtures <https://docs.pytest.org/en/stable/how-to/fixtures.html>: "
        '"Fixtures are requested by test functions by declaring them as arguments."' in text
    )


def test_the_advisor_and_its_advice_and_its_own_tokens() -> None:
    text = _show(_turn([{"role": "user", "content": "Plan it."}], streams.ADVISOR_STREAM))
    assert "      server_tool_use advisor {}" in text
    assert "      advisor_tool_result srvtoolu_01:\n        Write the failing test first." in text
    assert (
        "    assistant (5 in, 291 out, 18000 cache read, 1200 cache write tokens; "
        f"+ advisor {streams.ADVISOR}: 2100 in, 461 out tokens):" in text
    )
    # Claude Code files the advisor's under its model: it counts what the API billed.
    assert "billed 22,057 tokens: message 19,496, advisor 2,561, $" in text


def test_a_compaction_summary_is_shown_and_its_tokens_billed() -> None:
    """The issue's stream: a message_delta's cache_read_input_tokens 0 no longer wipes the
    55,096 of message_start (17,117 shown before), and the compaction step is billed."""
    text = _show(_turn([{"role": "user", "content": "Go on."}], streams.COMPACTION))
    assert (
        "      (compaction summary)\n"
        "        Summary: the user asked for a parser; tests in tests/test_parse.py pass." in text
    )
    assert "3 input / 200 output tokens (55096 cache read, 16914 cache write)" in text
    assert (
        f"billed {streams.COMPACTION_BILLED:,} tokens (Claude Code counted 72,213): "
        "message 72,213, compaction 183, $" in text
    )


def test_web_searches_are_counted_and_priced_in_the_totals() -> None:
    text = _show(_turn([{"role": "user", "content": "Find it."}], streams.SEARCH_STREAM))
    assert (
        f"billed {streams.SEARCH_BILLED:,} tokens: 1 web search request, 1 web fetch request"
        in text
    )
    # 10,682 in and 510 out at Opus 5.5's $4 / $20, and one search at $0.01
    assert "$0.0629 at today's prices" in text


def test_one_session_when_a_later_call_merges_the_system_entries_into_the_first_message() -> None:
    """The first ``claude -p`` call sends Claude Code's ``role: system`` entry apart; the
    next call of the same session (``--resume``) merges it into the first user message. The
    request carries the earlier answers back: it is the same conversation."""
    task = {"role": "user", "content": [{"type": "text", "text": "Do the task."}]}
    system = {"role": "system", "content": "Environment: Linux"}
    merged = {
        "role": "user",
        "content": [
            {"type": "text", "text": "Environment: Linux"},
            {"type": "text", "text": "Do the task."},
        ],
    }
    call = [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}]
    first = message("m1", streams.MODEL, call, input_tokens=10, output_tokens=5)
    done = message(
        "m2", streams.MODEL, [{"type": "text", "text": "Made."}], input_tokens=10, output_tokens=2
    )
    again = message(
        "m3",
        streams.MODEL,
        [{"type": "text", "text": "EXIT_LOOP_NOW"}],
        input_tokens=10,
        output_tokens=2,
    )
    answer1 = {"role": "assistant", "content": call}
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}],
    }
    answer2 = {"role": "assistant", "content": [{"type": "text", "text": "Made."}]}
    text = _show(
        _turn([task, system], sse_stream(first).decode()),
        _turn([task, system, answer1, result], sse_stream(done).decode()),
        _turn(
            [merged, answer1, result, answer2, {"role": "user", "content": "Continue."}],
            sse_stream(again).decode(),
        ),
    )
    assert text.count("Session ") == 1 and "Session 1: 3 turns" in text
    assert "Totals: 1 session, 3 turns" in text
    turn3 = text[text.index("  Turn 3") :]
    assert "      Continue." in turn3 and "Do the task." not in turn3 and "tool_result" not in turn3


def test_show_and_the_estimate_price_an_answer_as_its_request_asked() -> None:
    """Claude Code prices usage by the model it asked for; an upstream may name another."""
    answer = message(
        "m", streams.MODEL, [{"type": "text", "text": "t"}], input_tokens=1000, output_tokens=100
    )
    turn = _turn(
        [{"role": "user", "content": "Title?"}], sse_stream(answer).decode(), "claude-haiku-4-5"
    )
    guess = estimate(Cassette(Path("c.yaml"), [turn]))
    assert guess.usd == pytest.approx((1000 * 1 + 100 * 5) / 1e6)  # Haiku 4.5: $1 / $5
    assert f"billed 1,100 tokens, ${guess.usd:.4f} at today's prices" in _show(turn)


def test_cassette_cost_estimates_a_folder_and_names_specs_without_a_cassette(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from atom_cli.main import main

    answer = message(
        "m", streams.MODEL, [{"type": "text", "text": "t"}], input_tokens=1000, output_tokens=100
    )
    (tmp_path / "specs" / "cassettes" / "a").mkdir(parents=True)
    for name in ("a", "b"):
        (tmp_path / "specs" / f"{name}.atom.yaml").write_text(
            f"name: {name}\nprompt: go\n", encoding="utf-8"
        )
    Cassette(
        tmp_path / "specs" / "cassettes" / "a" / "a.yaml",
        [_turn([{"role": "user", "content": "go"}], sse_stream(answer).decode())],
    ).save()
    monkeypatch.chdir(tmp_path)
    shown = CliRunner().invoke(main, ["cassette", "cost", "specs"])
    assert shown.exit_code == 0, shown.output
    price = (1000 * 4 + 100 * 20) / 1e6  # Opus 5.5: $4 / $20
    assert f"specs/a.atom.yaml::a  1 answer, 1100 tokens, ${price:.4f}" in shown.output
    assert "specs/b.atom.yaml::b: no cassette, no estimate (record it: " in shown.output
    assert shown.output.rstrip().endswith(
        f"Estimate: 1 cassette, 1100 tokens, ${price:.4f} at today's prices"
    )
