"""One figure everywhere: the roles add up to ``atom_tokens`` and to the
dollars spent in every report, and ``atom cassette show`` totals what the API billed, with
Claude Code's own count beside it where that differs.

The lowest layers first: a spec's result made of Claude Code's figures and the gateway's
meter (no CLI), then each public recording of the real API (tests/data/real_api) through
the real gateway and ``atom cassette show``; through Claude Code, once, every recording
recorded and replayed, its roles held to the figure the reports show.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from atom_cli.cassette_cmd import cassette as cassette_group
from pytest_atom.cost.billing import Billed, Iteration, Tokens
from pytest_atom.cost.prices import cost_usd
from pytest_atom.cost.usage import ROLES
from pytest_atom.gateway import Gateway
from pytest_atom.gateway.server import Meter
from pytest_atom.replay.cassette import Cassette
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.summary import summary_table
from pytest_atom.reports.trace import build_trace
from pytest_atom.results.record import IterationRecord, Recalled, RunOutcome
from pytest_atom.results.rows import SummaryRow
from pytest_atom.results.spec_result import Attempt, SpecResult
from pytest_atom.spec.types import Spec
from tests.real_streams import (
    PAUSED,
    REAL_API,
    RecordedStream,
    record,
    recording_billed,
    replay,
)
from tests.stream_helpers import CLI_VERSION, Answering, claude_requests, recording, send

MODEL = "claude-opus-4-8"
ADVISOR = "claude-opus-4-8-advisor"
EVERYONE = frozenset({"executor", "reflector"})
#: Every public recording of the real API (tests/data/real_api), by file name.
RECORDINGS = sorted(p.stem for p in REAL_API.glob("*.yaml"))


def _spec(tmp_path: Path) -> Spec:
    return Spec(name="s", path=tmp_path / "s.atom.yaml", line=1, prompt="p")


def _result(tmp_path: Path, attempt: Attempt, paid: frozenset[str] = EVERYONE) -> SpecResult:
    return SpecResult(_spec(tmp_path), tmp_path, [attempt], 1.0, 0.8, paid=paid)


def _meter(result: SpecResult, role: str, used: Billed, usd: float) -> None:
    """What the gateway's meter folded from the answers' streams, kept as a run keeps it."""
    meter = Meter(frozenset({role}))
    meter.add(role, used, usd, MODEL)
    result.billed, result.billed_usd = dict(meter.bills.by_role), dict(meter.bills.usd_by_role)
    result.billed_steps = {r: dict(kinds) for r, kinds in meter.bills.steps.items()}


def _adds_up(result: SpecResult, spent: str = "usd") -> dict[str, Any]:
    """The roles, held to the run's figures in JUnit's properties, the trace and the
    summary table: their tokens to ``atom_tokens``, their dollars to the dollars spent
    (`spent` ``recorded_usd``: what a replay's answers cost when recorded)."""
    props = result_properties(result)
    # Every role, the simulated user's only for a conversation (a spec with `user:`).
    shown = [role for role in ROLES if role != "user" or result.user_turns is not None]
    roles = {role: props[f"atom_{role}_tokens"] for role in shown}
    assert sum(roles.values()) == props["atom_tokens"] == result.tokens, roles
    usd = sum(props[f"atom_{role}_cost_usd"] for role in shown)
    key = "atom_cost_usd" if spent == "usd" else "atom_recorded_cost_usd"
    assert usd == pytest.approx(props[key], abs=5e-6), (props[key], roles)
    cost = build_trace(result)["cost"]
    assert sum(r["tokens"] for r in cost["by_role"].values()) == cost["tokens"]
    by_role_usd = sum(r["cost_usd"] for r in cost["by_role"].values())
    assert by_role_usd == pytest.approx(cost[spent], abs=5e-6)  # each role rounded to 1e-6
    row = SummaryRow.of("s.atom.yaml::s", props)
    assert sum(f.tokens for f in row.roles.values()) == row.tokens
    return props


def test_a_reflectors_failed_try_counts_in_its_role_so_the_roles_add_up(tmp_path: Path) -> None:
    """A reflector call that failed and was retried was paid for: `atom_tokens` and the
    dollars count it, and so must the reflector's role (it was left out: 400 tokens short)."""
    broken = IterationRecord(1, usage={"input_tokens": 400}, cost_usd=0.004)
    judge = IterationRecord(0, usage={"input_tokens": 700}, cost_usd=0.002, failed_tries=[broken])
    call = IterationRecord(0, usage={"input_tokens": 1000, "output_tokens": 50}, cost_usd=0.01)
    attempt = Attempt(1, tmp_path / "a01", RunOutcome(True, 1), [call], reflectors=[judge])
    props = _adds_up(_result(tmp_path, attempt))
    assert props["atom_reflector_tokens"] == 1100 and props["atom_tokens"] == 2150
    assert props["atom_reflector_cost_usd"] == pytest.approx(0.006)
    assert props["atom_other_tokens"] == 0 and props["atom_failed_tries_tokens"] == 400


def test_a_recalled_verdict_counts_in_its_attempts_tokens_as_in_its_role(tmp_path: Path) -> None:
    """A replay that recalls the recorded verdict runs no reflector: the verdict's tokens,
    as recorded, are in the run's figure and the reflector's role, so in the attempt's own
    figure in the trace too (it left them out: its roles summed 900 more)."""
    call = IterationRecord(0, usage={"input_tokens": 1000}, cost_usd=0.01, model=MODEL)
    again = Recalled("reflector", {"score": 1.0}, tokens=900, cost_usd=0.003)
    attempt = Attempt(1, tmp_path / "a01", RunOutcome(True, 1), [call], recalled=[again])
    result = _result(tmp_path, attempt, paid=frozenset())
    result.replayed = EVERYONE
    props = _adds_up(result, "recorded_usd")
    assert props["atom_tokens"] == 1900 and props["atom_reflector_tokens"] == 900
    [child] = build_trace(result)["children"]
    assert child["cost"]["tokens"] == 1900
    assert sum(r["tokens"] for r in child["cost"]["by_role"].values()) == 1900


def test_the_simulated_users_sessions_count_in_a_role_of_their_own(tmp_path: Path) -> None:
    """A conversation's simulated user (a spec's `user:`) runs sessions of its own: their
    tokens and dollars are the `user` role's, not `other`'s, and add up to the run's figures;
    a spec with no user shows no such role."""
    call = IterationRecord(0, usage={"input_tokens": 1000, "output_tokens": 50}, cost_usd=0.01)
    broken = IterationRecord(1, usage={"input_tokens": 100}, cost_usd=0.001)
    said = IterationRecord(0, usage={"input_tokens": 300}, cost_usd=0.003, failed_tries=[broken])
    talk = Attempt(1, tmp_path / "a01", RunOutcome(True, 1), [call], users=[said], user_turns=2)
    props = _adds_up(_result(tmp_path, talk))
    assert (props["atom_user_tokens"], props["atom_other_tokens"]) == (400, 0)
    assert props["atom_user_cost_usd"] == pytest.approx(0.004)
    assert props["atom_cost_usd"] == pytest.approx(0.014)
    assert SummaryRow.of("s.atom.yaml::s", props).roles["user"].tokens == 400
    alone = Attempt(1, tmp_path / "a01", RunOutcome(True, 1), [call])
    assert "atom_user_tokens" not in _adds_up(_result(tmp_path, alone))


def test_an_advisor_step_claude_code_filed_nowhere_is_counted_on_top(tmp_path: Path) -> None:
    """A Claude Code that leaves the advisor's step out of its totals (no advisor model in
    `modelUsage`): the streams' figure counts it, as compaction's, and the advisor's role
    is not taken out of a session that never held it (the roles summed 2,561 too many)."""
    top = {"input_tokens": 2411, "output_tokens": 145}
    step = Iteration("advisor", ADVISOR, Tokens(2543, 18))
    used = Billed(Tokens(2411, 145), (step,))
    call = IterationRecord(
        0,
        usage=top,
        model_usage={MODEL: {"inputTokens": 2411, "outputTokens": 145, "costUSD": 0.01}},
        cost_usd=0.01,
        model=MODEL,
    )
    result = _result(tmp_path, Attempt(1, tmp_path / "a01", RunOutcome(True, 1), [call]))
    _meter(result, "executor", used, 0.01 + cost_usd(Billed(iterations=(step,)), MODEL))
    props = _adds_up(result)
    assert props["atom_tokens"] == props["atom_billed_tokens"] == 2556 + 2561
    assert (props["atom_executor_tokens"], props["atom_advisor_tokens"]) == (2556, 2561)
    assert props["atom_subagents_tokens"] == props["atom_other_tokens"] == 0
    assert props["atom_billing_note"] == (
        "the API billed 5117 tokens, Claude Code counted 2556 (+2561): "
        "Claude Code leaves advisor's 2561 tokens out of its totals"
    )


def test_what_claude_code_never_priced_is_the_other_role(tmp_path: Path) -> None:
    """A call stopped before Claude Code priced it was paid all the same: the streams'
    price is the floor of what was spent, and `other` holds what no role does."""
    call = IterationRecord(0, usage={"input_tokens": 1000}, cost_usd=0.001, model=MODEL)
    result = _result(tmp_path, Attempt(1, tmp_path / "a01", RunOutcome(True, 1), [call]))
    _meter(result, "executor", Billed(Tokens(1000)), 0.01)
    props = _adds_up(result)
    assert props["atom_cost_usd"] == pytest.approx(0.01)
    assert props["atom_other_cost_usd"] == pytest.approx(0.009)
    assert props["atom_other_tokens"] == 0
    lines = summary_table([SummaryRow.of("s.atom.yaml::s", props)])
    assert "other" not in lines[0]  # no tokens in it: no column


def test_a_scripted_run_has_no_other_role(tmp_path: Path) -> None:
    """Claude Code prices a scripted answer in its role, yet nothing was spent: the roles'
    dollars are its price, not a gap to fill."""
    call = IterationRecord(0, usage={"input_tokens": 1000}, cost_usd=0.005, model=MODEL)
    attempt = Attempt(1, tmp_path / "a01", RunOutcome(True, 1), [call])
    props = result_properties(_result(tmp_path, attempt, paid=frozenset()))
    assert props["atom_cost_usd"] == 0 and props["atom_executor_cost_usd"] == 0.005
    assert props["atom_other_tokens"] == 0 and props["atom_other_cost_usd"] == 0


def _show(path: Path) -> str:
    shown = CliRunner().invoke(cassette_group, ["show", str(path)])
    assert shown.exit_code == 0, shown.output
    return shown.stdout


@pytest.mark.parametrize("name", RECORDINGS)
def test_cassette_show_totals_what_the_api_billed_for_every_public_recording(
    name: str, tmp_path: Path
) -> None:
    stream = RecordedStream.load(name)
    [turn, *_] = claude_requests()
    (tmp_path / "s.atom.yaml").touch()
    spec, meter = _spec(tmp_path), Meter()
    with Gateway(Answering(stream)) as api, recording(spec, api.url, meter=meter) as (source, gw):
        assert send(gw.url, turn).status_code == 200
    written = source.finish(spec, failed=False, cli_version=CLI_VERSION)
    assert written is not None
    used = meter.bills.by_role["executor"]
    assert used.tokens == stream.billed_tokens()
    totals = _show(written).splitlines()[-1]
    compaction = used.by_kind().get("compaction", 0)
    words = f"billed {stream.billed_tokens():,} tokens"
    if compaction:  # Claude Code leaves it out: its own count beside the billed one
        words += f" (Claude Code counted {stream.billed_tokens() - compaction:,})"
    assert f"; {words}" in totals, totals
    assert used.cli_counted == stream.billed_tokens() - compaction


def test_cassette_show_counts_what_a_broken_stream_billed_that_the_cassette_left_out(
    tmp_path: Path,
) -> None:
    """A broken stream the CLI's retry made good is not in the cassette; its notes keep
    what it billed, and the totals count it."""
    stream = RecordedStream.load("test_anthropic_model_thinking_part_redacted_stream")
    [turn, *_] = claude_requests()
    (tmp_path / "s.atom.yaml").touch()
    spec = _spec(tmp_path)
    with Gateway(Answering(stream)) as api, recording(spec, api.url) as (source, gw):
        send(gw.url, turn)
    written = source.finish(spec, failed=False, cli_version=CLI_VERSION)
    assert written is not None
    tape = Cassette.load(written)
    tape.metadata["upstream_faults"] = [
        {"request": "POST /v1/messages", "what": "cut off", "in_cassette": False, "tokens": 500},
        {"request": "POST /v1/messages", "what": "529", "in_cassette": False},
    ]
    tape.save(written)
    billed = stream.billed_tokens()
    assert (
        f"; billed {billed + 500:,} tokens (Claude Code counted {billed:,}): "
        f"message {billed:,}, broken streams left out 500, $"
    ) in _show(written)


@pytest.mark.slow
def test_every_public_recording_through_claude_code_has_roles_that_add_up(
    tmp_path: Path, claude_bin: Path
) -> None:
    """Each public recording as the agent's answer, recorded through Claude Code and
    replayed: the roles add up to `atom_tokens`, which is what the API billed, and to the
    dollars spent (recording) or recorded (replay). The paused turn Claude Code rejects
    is recorded only: its figures add up all the same."""
    for name in RECORDINGS:
        folder = tmp_path / name
        folder.mkdir()
        paused = name == PAUSED
        recorded = record(folder, RecordedStream.load(name), claude_bin, turns=99 if paused else 1)
        props = _adds_up(recorded)
        assert recorded.cassette is not None, name
        assert props["atom_tokens"] == recording_billed(recorded.cassette), name
        if paused:
            continue
        assert recorded.passed, recorded.report()
        replayed = replay(folder, claude_bin)
        assert replayed.passed, replayed.report()
        again = _adds_up(replayed, "recorded_usd")
        assert again["atom_tokens"] == props["atom_tokens"], name
