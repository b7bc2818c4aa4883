"""One verdict: a spec run's outcome is decided once, and every front end reads it."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_atom.cost.spend import Crossing
from pytest_atom.results.outcome import Outcome, RunFacts, decide
from pytest_atom.results.rows import SummaryRow
from pytest_atom.suite import ending
from pytest_atom.suite.shards import read_shard
from tests.frontends_helpers import FAILS, OUTCOMES, FrontEnds, junit, summary


def run(**over: Any) -> Outcome:
    """The outcome of a run that, unless `over` says otherwise, passed on a 0.9."""
    figures: dict[str, Any] = {
        "attempts": 1,
        "decision": "proceed",
        "score": 0.9,
        "threshold": 0.8,
        "completed": True,
        "reason": "completed",
        "checks_failed": 0,
        "checks": 2,
    }
    return decide(RunFacts(**{**figures, **over}))


@pytest.mark.parametrize(
    ("over", "label", "exit_status", "why"),
    [
        ({}, "passed", 0, "score 0.9 (passes above 0.8)"),
        ({"score": None}, "passed", 0, "checks passed"),
        ({"decision": "fail", "checks_failed": 1}, "failed", 1, "1 of 2 checks failed"),
        ({"decision": "refine", "score": 0.6}, "failed", 1, "refine, score 0.6"),
        ({"completed": False, "decision": "fail", "reason": "max_iterations"}, "failed", 1, ""),
        ({"xfail": "known gap", "decision": "fail"}, "xfailed", 0, ""),
        ({"xfail": "known gap"}, "xpassed", 0, ""),
        ({"divergence": "POST /v1/messages: no match"}, "error", 2, "replay diverged"),
        ({"harness_error": "bad verdict\nmore"}, "error", 2, "bad verdict"),
        ({"decision": "fail", "upstream": "API 500"}, "upstream error", 2, "API 500"),
        # The machinery failing is never the expected failure of an xfail spec.
        ({"xfail": "known gap", "harness_error": "broke"}, "error", 2, "broke"),
    ],
)
def test_a_run_comes_to_one_outcome(
    over: dict[str, Any], label: str, exit_status: int, why: str
) -> None:
    outcome = run(**over)
    assert (outcome.label, outcome.exit_status) == (label, exit_status)
    assert why in outcome.why
    assert outcome.ok == (exit_status == 0)


def test_what_stopped_a_failed_run_joins_its_label() -> None:
    crossed = Crossing("exceeded max_turns: 3 > 2", "exceeded max_turns")
    limit = run(decision="fail", limit_exceeded=crossed)
    assert limit.summary_label == "failed: exceeded max_turns"
    assert run(plan_failed=True, attempts=0).summary_label == "failed: plan"
    steps = run(steps="steps 1/3", steps_passed=False, xfail="hard")
    assert steps.summary_label == "xfailed: steps 1/3"
    assert run().summary_label == "passed"  # only a failure says what stopped it


def test_a_run_stopped_at_a_limit_is_failed_by_it_though_a_stream_broke() -> None:
    """Stopping the CLI at a limit cuts the streams in flight: which one is timing."""
    crossed = Crossing("exceeded max_tokens: 60000 > 50000", "exceeded max_tokens")
    stopped = run(decision="fail", limit_exceeded=crossed, upstream="a stream the CLI stopped")
    assert stopped.summary_label == "failed: exceeded max_tokens"
    assert run(decision="fail", upstream="API 529").label == "upstream error"


@pytest.mark.parametrize(
    "outcome",
    [
        run(),
        run(xfail="known", decision="fail", steps="steps 0/2", steps_passed=False),
        run(harness_error="broke"),
        run(decision="fail", upstream="API 529"),
    ],
)
def test_the_outcome_crosses_xdist_in_its_properties(outcome: Outcome) -> None:
    """A worker's item carries it as JUnit properties; the controller's summary reads them."""
    assert Outcome.from_properties(outcome.properties()) == outcome
    row = SummaryRow.of("s.atom.yaml::s", {**outcome.properties(), "atom_score": 0.9})
    assert row.outcome == outcome and row.score == 0.9


# --- every front end agrees ----------------------------------------------------------------


@pytest.mark.slow
def test_pytest_and_atom_run_give_every_spec_the_same_outcome_and_exit_status(
    front_ends: FrontEnds,
) -> None:
    """A spec that passes, one whose failure is expected (xfail) and one that fails, run by
    `pytest --atom` (two pytest-split shards), `pytest --atom -n 2` and `atom run`."""
    serial = {**summary(front_ends.output("shard1")), **summary(front_ends.output("shard2"))}
    assert serial == OUTCOMES
    assert summary(front_ends.output("xdist")) == OUTCOMES
    assert summary(front_ends.output("atom")) == OUTCOMES
    cases = junit(front_ends.project / "shard2.xml")
    assert cases["a-fails"]["atom_outcome"] == "failed" and cases["a-fails"]["atom_why"]
    xfail = cases["misses-goal"]["atom_xfail"]
    assert xfail is not None and xfail.startswith("The scripted agent forgets")
    assert front_ends.status("shard2") == front_ends.status("xdist") == 1
    assert front_ends.status("atom") == 1

    # Without the failing spec (and the baseline) the rest pass: an expected failure fails
    # neither (pytest's side is the shared replay of the shipped fixtures, which exits 0
    # with misses_goal xfailed: tests/pytest/test_plugin.py::test_shipped_fixtures_pass_...).
    rows = list(read_shard(front_ends.project / "whole").rows)
    assert ending.decide(ending.Ending(ending.worst(rows), rows)) == 1
    passing = [row for row in rows if row.nodeid != FAILS]
    assert ending.decide(ending.Ending(ending.worst(passing), passing)) == 0


def test_results_are_data_that_import_no_machinery() -> None:
    """`result` and `outcome` load nothing that runs (runner, judge, gateway, recording):
    a report, a script or another process reads results without starting any of it."""
    import subprocess
    import sys

    code = (
        "import sys, pytest_atom.results.spec_result, pytest_atom.results.rows\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('pytest_atom'))))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.split()
    assert set(loaded) == {
        "pytest_atom",
        "pytest_atom.events",  # the agents' event types: data, importing nothing
        "pytest_atom.cost",
        "pytest_atom.settings",
        "pytest_atom.results",
        "pytest_atom.cost.billing",  # what an answer billed: data
        "pytest_atom.cost.limits",
        "pytest_atom.cost.spend",  # the session's spending limit: a counter
        "pytest_atom.settings.modes",
        "pytest_atom.results.outcome",
        "pytest_atom.results.rows",
        "pytest_atom.results.spec_result",
        "pytest_atom.cost.usage",
        "pytest_atom.errors",  # the exception tree (SpendingLimitReached): classes only
        "pytest_atom.paths",  # how the tree's file errors show a path
        "pytest_atom.lazy",  # a public package's names, loaded on first use
        "pytest_atom.extensions",  # the match modes' names, from installed metadata only
    }
