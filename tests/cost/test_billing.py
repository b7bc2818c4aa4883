"""The one fold of a stream's usage (pytest_atom.cost.billing) and its prices: no CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from pytest_atom.cost.billing import Billed, Iteration, Tokens, billed, merge_usage
from pytest_atom.cost.prices import PRICES, cost_usd, price_of
from pytest_atom.gateway.messages import fold_sse
from pytest_atom.gateway.server import Meter
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.trace import TRACE_SCHEMA, build_trace
from pytest_atom.results.record import IterationRecord, RunOutcome
from pytest_atom.results.rows import SummaryRow
from pytest_atom.results.spec_result import Attempt, SpecResult
from pytest_atom.spec.types import Spec
from tests import streams
from tests.upstream import RealisticUpstream, sse_events


def test_a_zero_in_message_delta_keeps_the_count_message_start_gave() -> None:
    merged = merge_usage(
        [
            {"input_tokens": 3, "cache_read_input_tokens": 55096, "output_tokens": 1},
            {"cache_read_input_tokens": 0, "output_tokens": 200},
        ]
    )
    assert merged == {"input_tokens": 3, "cache_read_input_tokens": 55096, "output_tokens": 200}


def test_message_delta_counts_replace_the_start_where_given_and_a_zero_stays_a_zero() -> None:
    merged = merge_usage(
        [
            {"input_tokens": 10, "cache_creation_input_tokens": 0, "service_tier": "standard"},
            {"input_tokens": 12, "cache_creation_input_tokens": 0, "output_tokens": 7},
            None,
        ]
    )
    assert merged["input_tokens"] == 12 and merged["output_tokens"] == 7
    assert merged["cache_creation_input_tokens"] == 0 and merged["service_tier"] == "standard"


def test_nested_counts_and_iterations_follow_the_same_rule() -> None:
    merged = merge_usage(
        [
            {"server_tool_use": {"web_search_requests": 2}, "iterations": [{"type": "message"}]},
            {
                "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 1},
                "iterations": [],
            },
        ]
    )
    assert merged["server_tool_use"] == {"web_search_requests": 2, "web_fetch_requests": 1}
    assert merged["iterations"] == []  # the latest list, whole


def test_compaction_stream_bills_the_cached_tokens_and_the_compaction_step() -> None:
    used = billed(fold_sse(streams.COMPACTION)["usage"])
    assert used.message == Tokens(3, 200, 55096, 16914)
    assert used.message.total == streams.COMPACTION_CLI_TOKENS  # Claude Code's figure
    assert used.iterations == (Iteration("compaction", None, Tokens(150, 33)),)
    assert used.tokens == streams.COMPACTION_BILLED
    assert used.by_kind() == {"message": 72213, "compaction": 183}
    # the fold the transcript had before: each later count replaced the earlier one
    old: dict[str, int] = {}
    for name, data in sse_events(streams.COMPACTION):
        if name in ("message_start", "message_delta"):
            found = data["message"] if name == "message_start" else data
            old.update({k: v for k, v in found["usage"].items() if isinstance(v, int)})
    assert Tokens.of(old).total == streams.COMPACTION_OLD_FOLD


def test_a_real_compaction_stream_bills_the_sum_of_its_iterations() -> None:
    """The real API's compaction stream (tests/data/real_api): `message_start` reports the
    compaction step's cache read, the end's top-level counts are the answer step's alone.
    The fold counts every iteration once: 100 + 83 + 55,096 (compaction), 181 + 8 (answer)."""
    from tests.real_streams import RecordedStream

    body = RecordedStream.load("test_anthropic_compaction_usage_with_cache_streaming").body
    used = billed(fold_sse(body)["usage"])
    assert used.tokens == 100 + 83 + 55096 + 181 + 8
    assert used.by_kind()["compaction"] == 100 + 83  # its cache read is in the top level


def test_advisor_stream_bills_the_advisor_model_apart() -> None:
    used = billed(fold_sse(streams.ADVISOR_STREAM)["usage"])
    assert used.message.total == streams.ADVISOR_MESSAGE_TOKENS
    assert used.tokens == streams.ADVISOR_BILLED
    assert used.by_kind() == {"message": 19496, "advisor": 2561}
    assert used.iterations[0].model == streams.ADVISOR


def test_server_tool_use_is_counted() -> None:
    used = billed(fold_sse(streams.SEARCH_STREAM)["usage"])
    assert used.tokens == streams.SEARCH_BILLED
    assert used.server_tool_use == {"web_search_requests": 1, "web_fetch_requests": 1}
    assert used.web_search_requests == 1


def test_the_fold_keeps_model_citations_and_compaction_summaries() -> None:
    folded = fold_sse(streams.SEARCH_STREAM)
    assert folded["model"] == streams.MODEL
    text = folded["content"][-1]
    assert text["text"] == "Declare the fixture as an argument."
    assert text["citations"][0]["title"] == "How to use fixtures"
    assert folded["content"][0]["input"] == {"query": "pytest fixtures"}
    summary = fold_sse(streams.COMPACTION)["content"][0]
    assert summary == {
        "type": "compaction",
        "content": "Summary: the user asked for a parser; tests in tests/test_parse.py pass.",
    }


def test_the_fold_gives_what_the_realistic_upstream_sent() -> None:
    """Every answer of the tests' upstream, whose usage is known: first turn (a 1-hour cache
    write), a later turn (cache reads) and a helper call."""
    upstream = RealisticUpstream({"KEY": [{"text": "a"}, {"tool_calls": [{"name": "Bash"}]}]})
    try:
        first = {"tools": [{"name": "Bash"}], "messages": [{"role": "user", "content": "KEY go"}]}
        later = {
            **first,
            "messages": [
                *first["messages"],
                {"role": "assistant", "content": [{"type": "text", "text": "a"}]},
                {"role": "user", "content": "more " * 400},
            ],
        }
        helper = {"messages": [{"role": "user", "content": "title please"}]}
        for body in (first, later, helper):
            answer = upstream.answer(body)
            stream = b"".join(upstream.events(answer)).decode()
            used = billed(fold_sse(stream)["usage"])
            sent = answer.usage
            assert used.message == Tokens(
                sent.input_tokens,
                sent.output_tokens,
                sent.cache_read_input_tokens,
                sent.cache_creation_input_tokens,
                sent.cache_creation_input_tokens if answer.cache_1h else 0,
            )
            assert used.tokens == sent.total
    finally:
        upstream.stop()


def test_a_json_message_and_anything_else() -> None:
    message = {"usage": {"input_tokens": 4, "output_tokens": 2, "inference_geo": "us"}}
    assert billed(json.loads(json.dumps(message))["usage"]).inference_geo == "us"
    assert billed(None) == Billed() and billed("x").tokens == 0
    assert (
        Tokens.of(
            {"cache_creation_input_tokens": 5, "cache_creation": {"ephemeral_1h_input_tokens": 9}}
        ).cache_write_1h
        == 5
    )


@pytest.mark.parametrize(
    ("model", "key"),
    [
        ("claude-opus-5-5", "claude-opus-5-5"),
        ("claude-opus-5-5[1m]", "claude-opus-5-5"),
        ("claude-opus-5-20260101", "claude-opus-5"),
        ("claude-opus-4-1-20250805", "claude-opus-4-1"),
        ("claude-opus-4-8", "claude-opus-4"),
        ("claude-sonnet-4-6", "claude-sonnet-4"),
        ("claude-haiku-4-5-20251001", "claude-haiku-4-5"),
    ],
)
def test_prices_by_model_id_prefix(model: str, key: str) -> None:
    assert price_of(model) is PRICES[key]


def test_an_unknown_model_is_priced_as_the_cli_prices_one() -> None:
    assert price_of("some-gateway-model").input == 5 and price_of(None).output == 25


def test_cost_prices_each_step_at_its_own_model_and_searches_per_request() -> None:
    opus, fable = price_of(streams.MODEL), price_of(streams.ADVISOR)
    used = billed(fold_sse(streams.ADVISOR_STREAM)["usage"])
    message = (
        5 * opus.input + 291 * opus.output + 18000 * opus.cache_read + 1200 * opus.cache_write_5m
    ) / 1e6
    advisor = (2100 * fable.input + 461 * fable.output) / 1e6
    assert cost_usd(used, streams.MODEL) == pytest.approx(message + advisor)
    search = billed(fold_sse(streams.SEARCH_STREAM)["usage"])
    tokens = (10682 * opus.input + 510 * opus.output) / 1e6
    assert cost_usd(search, streams.MODEL) == pytest.approx(tokens + 0.01)
    us = Billed(Tokens(1_000_000), inference_geo="us")
    assert cost_usd(us, streams.MODEL) == pytest.approx(opus.input * 1.1)


def test_one_hour_cache_writes_are_priced_at_their_own_rate() -> None:
    price = price_of("claude-opus-5-5")
    assert price.of(Tokens(cache_write=3_000_000, cache_write_1h=1_000_000)) == pytest.approx(
        2 * price.cache_write_5m + price.cache_write_1h
    )


# ------------------------------------------------------------------ roles in a spec's result


def _result(
    tmp_path: Path, usage: dict[str, int], model_usage: dict[str, Any], used: Billed
) -> SpecResult:
    """A recorded spec run: one executor call with Claude Code's figures, and what the
    gateway's meter folded from the same answer's stream."""
    call = IterationRecord(
        0, usage=usage, model_usage=model_usage, cost_usd=0.5, model=streams.MODEL
    )
    attempt = Attempt(1, tmp_path / "a01", RunOutcome(True, 1), [call])
    spec = Spec(name="s", path=tmp_path / "s.atom.yaml", line=1, prompt="p")
    result = SpecResult(
        spec, tmp_path, [attempt], 1.0, 0.8, paid=frozenset({"executor", "reflector"})
    )
    meter = Meter(frozenset({"executor"}))
    meter.add("executor", used, cost_usd(used, streams.MODEL), streams.MODEL)
    result.billed, result.billed_usd = dict(meter.bills.by_role), dict(meter.bills.usd_by_role)
    result.billed_steps = {role: dict(kinds) for role, kinds in meter.bills.steps.items()}
    return result


def _model_usage(tokens: Tokens) -> dict[str, int]:
    return {
        "inputTokens": tokens.input,
        "outputTokens": tokens.output,
        "cacheReadInputTokens": tokens.cache_read,
        "cacheCreationInputTokens": tokens.cache_write,
    }


def test_compaction_gets_a_role_and_counts_in_the_totals(tmp_path: Path) -> None:
    """Claude Code counts the answer's top-level usage (72,213); the API billed 72,396."""
    used = billed(fold_sse(streams.COMPACTION)["usage"])
    top = {
        "input_tokens": 3,
        "output_tokens": 200,
        "cache_read_input_tokens": 55096,
        "cache_creation_input_tokens": 16914,
    }
    result = _result(tmp_path, top, {streams.MODEL: _model_usage(used.message)}, used)
    assert result.cli_tokens == streams.COMPACTION_CLI_TOKENS
    assert result.tokens == result.billed_tokens == streams.COMPACTION_BILLED
    roles = result.usage_by_role()
    assert roles["compaction"].tokens == 183 and roles["subagents"].tokens == 0
    assert sum(u.tokens for u in roles.values()) == result.tokens
    compaction_usd = price_of(streams.MODEL).of(Tokens(150, 33))
    assert roles["compaction"].cost_usd == pytest.approx(compaction_usd)
    assert result.cost_usd == pytest.approx(0.5 + compaction_usd)
    props = result_properties(result)
    assert props["atom_tokens"] == props["atom_billed_tokens"] == 72396
    assert props["atom_cli_tokens"] == 72213 and props["atom_compaction_tokens"] == 183
    assert props["atom_billing_note"] == (
        "the API billed 72396 tokens, Claude Code counted 72213 (+183): "
        "Claude Code leaves compaction's 183 tokens out of its totals"
    )
    trace = build_trace(result)
    Draft202012Validator(TRACE_SCHEMA).validate(trace)
    row = SummaryRow.of("s.atom.yaml::s", props)
    assert ("billing", props["atom_billing_note"]) in row.notes()  # under the summary table
    cost = trace["cost"]
    assert (cost["tokens"], cost["billed_tokens"], cost["cli_tokens"]) == (72396, 72396, 72213)
    assert cost["billing_note"] == props["atom_billing_note"]
    assert sum(r["tokens"] for r in cost["by_role"].values()) == cost["tokens"]


def test_the_advisor_gets_a_role_and_is_no_subagent(tmp_path: Path) -> None:
    """Claude Code files the advisor's tokens under its model in modelUsage."""
    used = billed(fold_sse(streams.ADVISOR_STREAM)["usage"])
    top = {
        "input_tokens": 5,
        "output_tokens": 291,
        "cache_read_input_tokens": 18000,
        "cache_creation_input_tokens": 1200,
    }
    advisor = _model_usage(Tokens(2100, 461))
    result = _result(
        tmp_path, top, {streams.MODEL: _model_usage(used.message), streams.ADVISOR: advisor}, used
    )
    assert result.tokens == result.cli_tokens == streams.ADVISOR_BILLED
    roles = result.usage_by_role()
    assert (roles["executor"].tokens, roles["subagents"].tokens, roles["advisor"].tokens) == (
        19496,
        0,
        2561,
    )
    assert sum(u.tokens for u in roles.values()) == result.tokens
    assert "atom_billing_note" not in result_properties(result)  # the streams agree
