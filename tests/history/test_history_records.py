"""A typed result as the store's item, in the one place that maps it (`item_record`): every
field it keeps, votes as a criterion's score, and no secret in what it keeps."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from pytest_atom.history.records import item_from_dict, item_to_dict
from pytest_atom.history.write import identity, item_record
from pytest_atom.judge.reflector import combine_votes
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.results.check_result import CheckResult
from pytest_atom.results.outcome import judge
from pytest_atom.results.record import IterationRecord, RunOutcome, ToolCall
from pytest_atom.results.spec_result import Attempt, SpecResult
from pytest_atom.results.verdict import Verdict
from pytest_atom.spec.types import Check
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import write
from tests.history_helpers import item
from tests.judge_helpers import VOTES_SPEC, ballot

SECRET = "sk-ant-api03-" + "Zq7Xw2" * 8


def _result(tmp_path: Path) -> SpecResult:
    """A run of VOTES_SPEC: two tool calls, a check whose summary quotes a secret, three
    votes of which one finds the second criterion met."""
    (tmp_path / "script.yaml").write_text("turns:\n  - text: Done. EXIT_LOOP_NOW\n")
    spec = load_spec(write(tmp_path / "task.atom.yaml", VOTES_SPEC))
    votes = [Verdict.parse(ballot(0.9, w)["verdict"]) for w in (False, True, False)]
    combined = combine_votes(votes)
    record = IterationRecord(
        returncode=0,
        output="Done.",
        tool_calls=[ToolCall("1", "Read", {}), ToolCall("2", "Write", {"file_path": "done.txt"})],
        usage={"input_tokens": 40, "output_tokens": 2},
        cost_usd=0.25,
    )
    check = CheckResult(
        Check("file_exists", {"path": "done.txt"}, 1, label="file_exists done.txt"),
        True,
        f"found, key {SECRET}",
        "",
    )
    attempt = Attempt(1, tmp_path, RunOutcome(True, 1, output="Done."), [record], [check], combined)
    attempt.decision = judge(True, [check], combined, 0.8, spec.reflector.gate)
    return SpecResult(spec, tmp_path / "run", [attempt], 2.5, 0.8)


def test_an_item_keeps_its_checks_criteria_figures_and_tool_names(tmp_path: Path) -> None:
    result = _result(tmp_path)
    item = item_record(result, 2, scrubber=Scrubber(env={}))
    assert item.key == ("task", None, None, 2) and item.spec_path == str(
        tmp_path / "task.atom.yaml"
    )
    assert item.outcome == result.outcome.label == "failed"  # the criteria gate: one vote of three
    assert [(c.name, c.passed) for c in item.checks] == [("file_exists done.txt", True)]
    assert [(c.text, round(c.score, 2), c.passed) for c in item.criteria] == [
        ("done.txt exists.", 1.0, True),
        ("done.txt says done, warmly.", 0.33, False),
    ]
    assert item.tool_calls == ("Read", "Write")
    assert item.tokens["executor"] == result.usage_by_role()["executor"].tokens > 0
    assert (
        item.cost_usd["executor"] == 0.25 and "planner" not in item.tokens
    )  # unused roles left out
    assert (item.wall_seconds, item.run_folder, item.score) == (
        2.5,
        str(tmp_path / "run"),
        result.score,
    )
    assert item.digest is None and item.digest_parts == {} and not item.cached


def test_a_conversation_keeps_its_turns_to_success_and_its_users_tokens(tmp_path: Path) -> None:
    result = _result(tmp_path)
    assert item_record(result, None).user_turns is None  # no conversation
    said = IterationRecord(returncode=0, usage={"input_tokens": 30}, cost_usd=0.01)
    attempt = replace(result.final, users=[said], user_turns=3)
    item = item_record(replace(result, attempts=[replace(attempt, user_done=True)]), None)
    assert (item.user_turns, item.tokens["user"]) == (3, 30)
    gave_up = item_record(replace(result, attempts=[attempt]), None)
    assert gave_up.user_turns is None  # the user never said it was done


def test_no_secret_reaches_the_item(tmp_path: Path) -> None:
    item = item_record(_result(tmp_path), None, scrubber=Scrubber(env={"PROVIDER_API_KEY": SECRET}))
    assert SECRET not in repr(item)
    assert "PROVIDER_API_KEY" in item.checks[0].detail


def test_a_spec_name_splits_into_base_case_and_arm(tmp_path: Path) -> None:
    from dataclasses import replace

    spec = load_spec(write(tmp_path / "x.atom.yaml", "name: base\nprompt: p\n"))
    both = replace(spec, name="base[big][with-skill]", case="big", arm="with-skill")
    assert identity(both) == ("base", "big", "with-skill")
    assert identity(replace(spec, name="base[big]", case="big")) == ("base", "big", None)


def test_digest_parts_named_like_secrets_survive_a_scrubbed_results_file() -> None:
    """A results file is scrubbed as text: a part named for a module or distribution whose
    name says "secret" keeps its hash (a part's value is never a value of the run)."""
    record = replace(
        item("greet", digest="d"),
        digest_parts={"code dist:detect-secrets": "sha256:545547006e1ea9aa", "spec": "s1"},
    )
    text = Scrubber().scrub(json.dumps(item_to_dict(record), indent=2))
    assert item_from_dict(json.loads(text)) == record
