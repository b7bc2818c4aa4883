"""A spending limit and an estimate, against the tests' realistic upstream, whose usage is
known: `atom cassette cost` says what re-recording costs, within 5 % of what recording spent;
`--max-cost-usd` stops a recording session at its limit and exits 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.cost.billing import Tokens
from pytest_atom.cost.limits import Budget, Limits
from pytest_atom.cost.prices import price_of
from pytest_atom.cost.spend import SpendLimit
from pytest_atom.errors import SettingsError
from pytest_atom.gateway import Gateway, Reply
from pytest_atom.gateway.messages import message, sse_stream
from pytest_atom.gateway.server import Meter
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.estimate import estimate
from pytest_atom.reports.properties import result_properties
from pytest_atom.settings.options import RunSettings
from pytest_atom.settings.resolved import parse_setting
from pytest_atom.spec_loader.load import load_specs
from pytest_atom.wire.request import GatewayRequest
from tests.helpers import record_through_upstream
from tests.upstream import MODEL, RealisticUpstream

KEY_A, KEY_B = "SPEND-TASK-A", "SPEND-TASK-B"
JUDGE_KEY = "You are a clinical auditor"  # the reflector's prompt (prompts/REFLECTOR.md)


def _bash(command: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "Bash", "input": {"command": command}}]}


def _task(name: str) -> list[dict[str, Any]]:
    return [_bash(f"echo {name} > {name}.txt"), {"text": f"{name}.txt written.\nEXIT_LOOP_NOW"}]


VERDICT = {
    "name": "StructuredOutput",
    "input": {
        "score": 0.95,
        "decision": "proceed",
        "criteria": [{"criterion": "The file exists.", "met": True, "evidence": "ok"}],
        "feedback": "",
        "flaky": [],
    },
}
CONVERSATIONS: dict[str, list[dict[str, Any]]] = {
    KEY_A: _task("alpha"),
    KEY_B: _task("beta"),
    JUDGE_KEY: [{"tool_calls": [VERDICT]}, {"text": "Judged."}],
}


def _spec(folder: Path, key: str, name: str, *, criteria: bool = True) -> Path:
    path = folder / f"{name}.atom.yaml"
    path.write_text(
        f'name: {name}\nprompt: "{key}: write {name}.txt."\ntimeout: 180\n'
        "claude:\n  allowed_tools: [Bash]\n"
        f"accept:\n  - file_exists: {name}.txt\n"
        + ("criteria: [The file exists.]\n" if criteria else ""),
        encoding="utf-8",
    )
    return path


# ------------------------------------------------------------------ no CLI


def test_the_limit_is_a_setting_in_dollars() -> None:
    assert parse_setting("max_cost_usd", "2.50", "x") == 2.5
    for bad in ("0", "-1", "lots", True):
        with pytest.raises(SettingsError, match="US dollars > 0"):
            parse_setting("max_cost_usd", bad, "--atom-max-cost-usd")
    assert RunSettings().max_cost_usd is None


def test_a_reached_limit_crosses_every_budget_and_names_itself() -> None:
    spend = SpendLimit(0.01)
    budget = Budget(Limits(), spend)
    assert budget.crossed() is None
    spend.add(0.004)
    spend.add(0.007)
    assert spend.reached
    assert budget.crossed() == (
        "reached the session's spending limit: $0.0110 spent of the $0.0100 limit "
        "(--atom-max-cost-usd)"
    )
    error = spend.refuse("second")
    assert "not run: the session's spending limit is reached" in str(error)
    assert spend.summary() == (
        "spending limit reached: $0.0110 spent of the $0.0100 limit (--atom-max-cost-usd); "
        "1 spec not run; exit status 2"
    )


class _Answers:
    """A responder that answers every request with the same streamed message."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.asked = 0

    def respond(self, request: GatewayRequest) -> Reply:
        self.asked += 1
        return Reply(200, {"content-type": "text/event-stream"}, iter([self.answer]))


def test_the_gateway_meters_paid_answers_and_refuses_past_the_limit() -> None:
    import httpx

    answer = message(
        "m", MODEL, [{"type": "text", "text": "hi"}], input_tokens=100_000, output_tokens=1_000
    )
    responder = _Answers(sse_stream(answer))
    spend = SpendLimit(0.5)
    price = price_of(MODEL).of(Tokens(100_000, 1_000))  # $0.42 at Opus 5.5's prices
    body = {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "stream": True}
    with Gateway(responder, Meter(frozenset({"executor"}), spend)) as gateway:
        first = httpx.post(f"{gateway.url}/v1/messages", json=body)
        assert first.status_code == 200 and not spend.reached
        assert spend.spent_usd == pytest.approx(price)
        httpx.post(f"{gateway.url}/v1/messages", json=body)
        assert spend.reached  # 0.84 > 0.5: the next request goes nowhere
        refused = httpx.post(f"{gateway.url}/v1/messages", json=body)
        assert refused.status_code == 409 and refused.headers["x-should-retry"] == "false"
        assert "reached the session's spending limit" in refused.text
        assert responder.asked == 2
        assert gateway.meter.bills.by_role["executor"].tokens == 2 * 101_000


def test_replayed_answers_are_metered_but_not_spent() -> None:
    import httpx

    answer = message("m", MODEL, [{"type": "text", "text": "hi"}], input_tokens=10, output_tokens=1)
    spend = SpendLimit(0.5)
    body = {"model": MODEL, "messages": [{"role": "user", "content": "x"}], "stream": True}
    with Gateway(_Answers(sse_stream(answer)), Meter(frozenset(), spend)) as gateway:
        httpx.post(f"{gateway.url}/v1/messages", json=body)
        assert gateway.meter.bills.by_role["executor"].tokens == 11 and spend.spent_usd == 0


# ------------------------------------------------------------------ the real CLI


@pytest.mark.slow
def test_the_estimate_is_within_5_percent_of_what_recording_spent(
    tmp_path: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One session, the agent's: a reflector's is priced the same way (its stream's usage
    at its model's prices), and would only add a second CLI process."""
    [spec] = load_specs(_spec(tmp_path, KEY_A, "alpha", criteria=False))
    result, upstream = record_through_upstream(spec, CONVERSATIONS, claude_bin)
    assert result.passed, result.report()
    assert result.cassette is not None
    spent = result.cost_usd  # Claude Code's price of every session it ran
    guess = estimate(Cassette.load(result.cassette))
    assert guess.usd == pytest.approx(spent, rel=0.05), (guess.usd, spent)
    # the streams' tokens, folded, are what the upstream sent
    assert guess.tokens == upstream.tokens_sent()
    assert result.billed_tokens == upstream.tokens_sent()
    monkeypatch.chdir(tmp_path)
    shown = CliRunner().invoke(main, ["cassette", "cost", "alpha.atom.yaml"])
    assert shown.exit_code == 0, shown.output
    assert f"{guess.tokens} tokens, ${guess.usd:.4f}" in shown.output
    assert shown.output.rstrip().endswith(f"${guess.usd:.4f} at today's prices")
    # the transcript's totals, JUnit's tokens and cost: the same figures
    props = result_properties(result)
    assert props["atom_tokens"] == props["atom_billed_tokens"] == guess.tokens
    assert props["atom_cost_usd"] == pytest.approx(guess.usd, abs=1e-6)
    transcript = CliRunner().invoke(main, ["cassette", "show", "alpha.atom.yaml"])
    assert (
        f"billed {guess.tokens:,} tokens, ${guess.usd:.4f} at today's prices" in transcript.output
    )


@pytest.mark.slow
def test_the_spending_limit_stops_a_recording_session(
    tmp_path: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first answer alone crosses the limit: the running call is stopped there, the
    first spec ends on the limit, the second never starts, and the command exits 2."""
    first, second = _spec(tmp_path, KEY_A, "alpha"), _spec(tmp_path, KEY_B, "beta")
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    monkeypatch.chdir(tmp_path)
    limit = 0.01
    with RealisticUpstream(CONVERSATIONS) as upstream:
        ran = CliRunner().invoke(
            main,
            [
                "run",
                str(first),
                str(second),
                "--record-mode=all",
                f"--upstream={upstream.url}",
                f"--max-cost-usd={limit}",
            ],
        )
    out = ran.output
    assert ran.exit_code == 2, out
    assert "reached the session's spending limit" in out  # the first spec's report
    assert "not run: the session's spending limit is reached" in out  # the second's
    assert "spending limit reached: $" in out and "1 spec not run; exit status 2" in out
    asked = [turn for turn in upstream.turns() if turn[0] is not None]
    assert all(key == KEY_A for key, _, _ in asked), asked  # nothing of the second spec
    assert [n for _, n, _ in asked] == [0], asked  # no turn after the one that crossed it


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_pytest_stops_at_the_limit_skips_the_rest_and_exits_2(pytester: pytest.Pytester) -> None:
    """The same limit through pytest's front end: the first spec fails on it, the second
    is skipped without starting, and the session exits 2."""
    _spec(pytester.path, KEY_A, "alpha")
    _spec(pytester.path, KEY_B, "beta")
    with RealisticUpstream(CONVERSATIONS) as upstream:
        result = pytester.runpytest(
            "--atom",
            "alpha.atom.yaml",
            "beta.atom.yaml",
            "--atom-record-mode=all",
            f"--atom-upstream={upstream.url}",
            "--atom-max-cost-usd=0.01",
            "-rs",
        )
    assert result.ret == 2, result.stdout.str()
    result.assert_outcomes(failed=1, skipped=1)
    result.stdout.fnmatch_lines(
        [
            "alpha.atom.yaml::alpha  failed: reached the session's spending limit *",
            "spending limit reached: $* spent of the $0.0100 limit (--atom-max-cost-usd); "
            "1 spec not run; exit status 2",
            "*SKIPPED*not run: the session's spending limit is reached*",
        ]
    )
    # the stopped call never printed Claude Code's price: the spend is the streams'
    [row] = [line for line in result.stdout.lines if line.startswith("alpha.atom.yaml::alpha ")]
    assert " 0.0000 " not in row, row
    assert {key for key, _, _ in upstream.turns()} <= {KEY_A, None}
