"""A spec without criteria: its checks decide, and no reflector's verdict is kept or recalled.

The realistic session that tests/replay/test_upstream_cli.py records has criteria; the specs it
replaced (a parallel call, subagents, an overload, each without criteria) ran these paths
through the CLI. Here they are shown on typed values, with no CLI.
"""

from __future__ import annotations

from pathlib import Path

from pytest_atom.replay.cassette import RECALL
from pytest_atom.replay.recall import Recall
from pytest_atom.results.check_result import CheckResult
from pytest_atom.results.outcome import judge
from pytest_atom.results.record import RunOutcome
from pytest_atom.results.spec_result import Attempt, SpecResult
from pytest_atom.spec.types import Spec
from tests.helpers import built_check


def result(tmp_path: Path, passed: bool) -> SpecResult:
    spec = Spec(name="s", path=tmp_path / "s.atom.yaml", line=1, prompt="p")
    check = built_check("file_exists", {"path": "count.txt"}, 4)
    done = CheckResult(check, passed, "count.txt exists" if passed else "no count.txt", "")
    decision = judge(True, [done], None, 0.8)
    attempt = Attempt(1, tmp_path / "a01", RunOutcome(True, 1), [], [done], decision=decision)
    return SpecResult(spec, tmp_path, [attempt], 1.0, 0.8)


def test_without_criteria_the_checks_decide_and_no_verdict_is_named(tmp_path: Path) -> None:
    good, bad = result(tmp_path, True), result(tmp_path, False)
    assert good.final.decision == "proceed" and bad.final.decision == "fail"
    assert good.verdict is None and good.score is None and good.unmet == []
    assert good.passed and good.outcome.why == "checks passed"
    assert not bad.passed and "score" not in bad.outcome.why


def test_a_recording_without_a_reflector_drops_the_recall_hashes_of_an_earlier_one() -> None:
    """Every session of a recording ran: what an earlier recording remembered (a
    reflector's inputs, when the spec had criteria) must not be recalled from this one."""
    metadata = {RECALL: {"reflector:1": {"inputs": "sha256:old"}}, "prompt_hash": "x"}
    Recall().stamp(metadata)
    assert metadata == {"prompt_hash": "x"}
