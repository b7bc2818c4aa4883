"""After a replay diverged, the checks judge nothing: the report says so in one line instead
of dumping the evidence of files the agent wrote from answers nobody recorded."""

from __future__ import annotations

from pathlib import Path

from pytest_atom.reports.text import failure_report
from pytest_atom.results.check_result import CheckResult
from pytest_atom.results.drift import ReplayDivergence
from pytest_atom.results.record import RunOutcome
from pytest_atom.results.spec_result import Attempt, SpecResult
from pytest_atom.spec.types import Spec
from tests.helpers import built_check

DUMP = "\n".join(f"line {n} of an unchanged file" for n in range(20))


def _result(tmp_path: Path, divergences: list[ReplayDivergence]) -> SpecResult:
    spec = Spec(name="s", path=tmp_path / "s.atom.yaml", line=1, prompt="p")
    check = built_check("file_contains", {"path": "a.txt", "pattern": "x"}, 7)
    failed = CheckResult(check, False, "a.txt does not match /x/", DUMP)
    attempt = Attempt(1, tmp_path / "a01", RunOutcome(False, 1, reason="error"), [], [failed])
    return SpecResult(spec, tmp_path, [attempt], 1.0, 0.8, divergences=divergences)


TURN = "POST /v1/messages (turn): no recorded interaction matches"
AGENT = ReplayDivergence(TURN, "turn", "cause unknown")
REFLECTOR = ReplayDivergence(
    "POST /v1/messages (reflector): no recorded interaction matches", "reflector", "likely cause: …"
)
MCP = ReplayDivergence("MCP server 'tickets': tools/call 'get' was never recorded", "mcp")


def test_checks_after_the_agents_session_diverged_are_not_judged(tmp_path: Path) -> None:
    for divergences in ([AGENT], [REFLECTOR, ReplayDivergence(TURN)], [MCP]):
        report = failure_report(_result(tmp_path, divergences))
        assert "  checks: not judged: the replay diverged (1 check)" in report
        assert "line 0 of an unchanged file" not in report
        assert "FAIL file_contains" not in report


def test_checks_show_their_evidence_when_only_the_reflector_diverged(tmp_path: Path) -> None:
    """The agent's sessions replayed whole: its files are what the checks judge."""
    for divergences in ([], [REFLECTOR]):
        report = failure_report(_result(tmp_path, divergences))
        assert "    FAIL file_contains a.txt /x/ (line 7): a.txt does not match /x/" in report
        assert "line 19 of an unchanged file" in report


def test_a_divergence_is_its_text_with_its_kind_and_cause_as_values() -> None:
    """The trace and JUnit take the text; the reports read the values, never parse it."""
    assert AGENT == f"cause unknown\n{TURN}" and AGENT.detail == TURN
    assert (AGENT.kind, AGENT.cause, AGENT.headline) == ("turn", "cause unknown", "cause unknown")
    assert ReplayDivergence(TURN).headline == TURN.partition("\n")[0]
    assert AGENT.agents and MCP.agents and not REFLECTOR.agents
