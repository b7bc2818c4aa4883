"""Baselines: saving a run's results, comparing a run with them, failing on regressions."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from atom_cli.baseline_cmd import baseline
from pytest_atom.baseline.compare import (
    BASELINE_FORMAT,
    BaselineGate,
    build_baseline,
    compare,
    dump_baseline,
    gate_run,
    load_baseline,
    read_results,
    summary_cell,
    write_results,
)
from pytest_atom.errors import BaselineError
from pytest_atom.reports.summary import summary_table
from pytest_atom.settings.parsers import parse_tolerance
from tests.frontends_helpers import FAILS, SLOW, XFAIL, FrontEnds
from tests.helpers import summary_row as row


def props(**over: Any) -> dict[str, Any]:
    base = {
        "atom_score": 0.9,
        "atom_turns": 4,
        "atom_tool_calls": 3,
        "atom_agent_tokens": 1000,
        "atom_agent_cost_usd": 0.02,
        "atom_duration_s": 3.0,
    }
    return {**base, **over}


SPEC = "specs/x.atom.yaml::x"


def entry(**over: Any) -> dict[str, Any]:
    built: dict[str, Any] = build_baseline(
        [row(SPEC, over.pop("outcome", "passed"), props(**over))]
    )
    return dict(built["specs"][SPEC])


def test_an_unchanged_run_is_the_same() -> None:
    comparison = compare(SPEC, entry(), entry())
    assert comparison.status == "same" and comparison.messages == ()


@pytest.mark.parametrize(
    ("after", "message"),
    [
        ({"outcome": "failed"}, "x: outcome went from passed to failed"),
        ({"atom_score": 0.8}, "x: score dropped from 0.9 to 0.8 (tolerance 0.05)"),
        ({"atom_turns": 6}, "x: turns rose from 4 to 6 (tolerance 25%)"),
        ({"atom_agent_tokens": 1200}, "x: tokens rose from 1000 to 1200 (tolerance 10%)"),
        ({"atom_agent_cost_usd": 0.03}, "x: cost_usd rose from $0.0200 to $0.0300 (tolerance 10%)"),
    ],
)
def test_regressions_name_the_spec_the_metric_and_both_values(
    after: dict[str, Any], message: str
) -> None:
    comparison = compare(SPEC, entry(), entry(**after))
    assert comparison.status == "regression"
    assert comparison.messages == (f"specs/x.atom.yaml::{message}",)


def test_within_tolerance_and_time_are_not_regressions() -> None:
    # 5 turns is +25 %: at the tolerance, not beyond it; time is never gated by default.
    comparison = compare(SPEC, entry(), entry(atom_turns=5, atom_duration_s=60.0))
    assert comparison.status == "same"
    deltas = comparison.to_dict()["deltas"]
    assert deltas["turns"]["status"] == "changed" and deltas["turns"]["change"] == 1
    assert deltas["duration_s"] == {
        "metric": "duration_s",
        "before": 3.0,
        "after": 60.0,
        "change": 57.0,
        "status": "changed",
        "tolerance": None,
    }


def _gate(path: Path, *before: Any) -> BaselineGate:
    """The ``--atom-baseline`` gate of a baseline saved from the runs `before`."""
    return BaselineGate(dump_baseline(build_baseline(before), path))


def test_improvements_are_reported_never_failed(tmp_path: Path) -> None:
    comparison = compare(SPEC, entry(outcome="failed", atom_score=0.3), entry(atom_turns=2))
    assert comparison.status == "improved" and comparison.messages == ()
    gate = _gate(tmp_path / "b.json", row(SPEC, "failed", props(atom_score=0.3)))
    assert not gate.finish([row(SPEC, "passed", props(atom_turns=2))])
    [line] = gate.lines()
    assert line == (
        "baseline: specs/x.atom.yaml::x: improved: pass_rate 0 -> 1, score 0.3 -> 0.9, turns 4 -> 2"
    )


def test_a_spec_missing_from_the_baseline_is_new(tmp_path: Path) -> None:
    gate = _gate(tmp_path / "b.json")
    gate.finish([row(SPEC, "passed", props())])
    [comparison] = gate.comparisons
    assert comparison.status == "new"
    assert gate.lines() == [f"baseline: {SPEC}: new (not in the baseline)"]


def test_tolerances_spec_over_ini_over_defaults() -> None:
    before = {SPEC: entry()}
    rows = [row(SPEC, "passed", props(atom_turns=8, atom_duration_s=9.0))]
    # The ini allows +100 % turns but gates time at +50 %: time now regresses.
    [ini] = gate_run(before, rows, parse_tolerance("turns=1, duration_s=0.5"))[0]
    assert [d.metric for d in ini.deltas if d.status == "regression"] == ["duration_s"]
    # The spec's own tolerance (a property of its runs) wins over the ini's.
    own = [
        row(SPEC, "passed", {**rows[0].properties, "atom_baseline_tolerance": "duration_s=none"})
    ]
    [spec] = gate_run(before, own, parse_tolerance("turns=1 duration_s=0.5"))[0]
    assert spec.status == "same"


def test_repeats_become_one_entry_with_a_pass_rate() -> None:
    rows = [
        row(f"{SPEC}[r1]", "passed", props(atom_turns=4)),
        row(f"{SPEC}[r2]", "failed", props(atom_turns=6, atom_score=0.3)),
    ]
    document = build_baseline(rows)
    assert document["format"] == BASELINE_FORMAT
    assert document["specs"][SPEC] == {
        "outcome": "mixed",
        "runs": 2,
        "pass_rate": 0.5,
        "score": 0.6,
        "turns": 5,
        "tool_calls": 3,
        "tokens": 1000,
        "cost_usd": 0.02,
        "duration_s": 3.0,
        # Each run's own, for the statistical gate; its runs differ: a sample.
        "repeats": [
            {"outcome": "passed", "score": 0.9, "turns": 4, "tokens": 1000, "cost_usd": 0.02},
            {"outcome": "failed", "score": 0.3, "turns": 6, "tokens": 1000, "cost_usd": 0.02},
        ],
        "deterministic": False,
    }
    # One pass in two against one in one is no evidence of a drop: inconclusive, not failed.
    [comparison] = gate_run({SPEC: entry()}, rows)[0]
    assert comparison.status == "inconclusive" and comparison.messages == ()


def test_bad_tolerances_and_files_say_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="metric one of pass_rate, score"):
        parse_tolerance("speed=1")
    with pytest.raises(ValueError, match="must be a number >= 0"):
        parse_tolerance("turns=-1")
    with pytest.raises(BaselineError, match="write one with: atom baseline save"):
        load_baseline(tmp_path / "missing.json")
    (tmp_path / "other.json").write_text('{"format": "something else"}')
    with pytest.raises(BaselineError, match="not a pytest-atom baseline"):
        load_baseline(tmp_path / "other.json")


def test_summary_cell_lists_what_moved() -> None:
    cell = summary_cell({"atom_baseline": "regression", "atom_baseline_turns": 2.0})
    assert cell == "regression turns +2"


@pytest.mark.parametrize(
    ("props", "cell"),
    [
        ({"atom_baseline_tokens": 16522.0}, "regression tokens +16,522"),
        ({"atom_baseline_tokens": -1200}, "regression tokens -1,200"),
        ({"atom_baseline_cost_usd": 0.01234}, "regression cost_usd +$0.0123"),
        ({"atom_baseline_score": -0.1}, "regression score -0.1"),
        ({"atom_baseline_tokens": 12.5}, "regression tokens +12.5"),  # a mean over repeats
    ],
)
def test_the_baseline_column_formats_numbers_for_people(props: dict[str, Any], cell: str) -> None:
    assert summary_cell({"atom_baseline": "regression", **props}) == cell


def test_save_after_a_partial_run_keeps_the_specs_that_did_not_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--lf` or `-k` runs some specs: their entries change, the others' stay; --replace
    writes the run's alone."""
    monkeypatch.chdir(tmp_path)
    other = "specs/y.atom.yaml::y"
    write_results(
        [row(SPEC, "passed", props()), row(other, "passed", props())],
        tmp_path / ".atom" / "runs" / "last-run.json",
    )
    assert CliRunner().invoke(baseline, ["save"]).exit_code == 0
    write_results(
        [row(SPEC, "failed", props(atom_turns=9))], tmp_path / ".atom" / "runs" / "last-run.json"
    )
    partial = CliRunner().invoke(baseline, ["save"], catch_exceptions=False)
    assert partial.exit_code == 0, partial.output
    assert "baseline of 1 spec(s)" in partial.output
    assert "kept 1 that did not run (--replace drops them)" in partial.output
    specs = load_baseline(tmp_path / ".atom" / "baseline.json")
    assert list(specs) == [SPEC, other]
    assert specs[SPEC]["turns"] == 9 and specs[SPEC]["outcome"] == "failed"
    assert specs[other]["turns"] == 4
    replaced = CliRunner().invoke(baseline, ["save", "--replace"], catch_exceptions=False)
    assert replaced.exit_code == 0 and "kept" not in replaced.output
    assert list(load_baseline(tmp_path / ".atom" / "baseline.json")) == [SPEC]


def test_the_summary_table_shows_the_tokens_the_baseline_saves() -> None:
    """The table's tokens are every session's, as HTML, JUnit and the trace say;
    its role columns show the agent's own (executor, subagents), which the baseline saves."""
    figures = props(
        atom_tokens=1800,
        atom_agent_tokens=1000,
        atom_executor_tokens=1000,
        atom_reflector_tokens=800,
        atom_attempts=1,
        atom_iterations=2,
    )
    passed = row(SPEC, "passed", figures)
    [header, line] = summary_table([passed])
    cells = dict(zip(header.split()[:8], line.split()[:8], strict=True))
    assert (cells["tokens"], cells["executor"], cells["reflector"]) == ("1800", "1000", "800")
    assert build_baseline([passed])["specs"][SPEC]["tokens"] == 1000


def test_save_writes_a_stable_baseline_from_the_last_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pytest.ini").write_text("[pytest]\natom_runs_dir = out/runs\n")
    last = tmp_path / "out" / "runs" / "last-run.json"  # in the runs folder, not beside it
    results = write_results([row(SPEC, "passed", props())], last)
    assert read_results(results) == [row(SPEC, "passed", props())]
    first = CliRunner().invoke(baseline, ["save"], catch_exceptions=False)
    assert first.exit_code == 0, first.output
    assert "written to .atom/baseline.json" in first.output
    saved = (tmp_path / ".atom" / "baseline.json").read_text()
    assert CliRunner().invoke(baseline, ["save"]).exit_code == 0
    assert (tmp_path / ".atom" / "baseline.json").read_text() == saved  # no dates: no diff
    assert list(json.loads(saved)["specs"]) == [SPEC]
    missing = CliRunner().invoke(baseline, ["save", "b.json", "--from", "nope.json"])
    assert missing.exit_code == 1 and "run pytest --atom first" in missing.output


@pytest.mark.slow
def test_a_session_fails_on_a_regression_though_every_item_passed(front_ends: FrontEnds) -> None:
    """The shared project's first shard (a-slow alone, which passes) against a baseline
    with fewer turns and tokens: the summary, JUnit and the HTML report show the deltas,
    the spec's own tolerance lets its turns rise, and its tokens' regression fails the
    session."""
    shard = front_ends.output("shard1")
    assert "1 passed" in shard and front_ends.status("shard1") == 1
    assert re.search(rf"(?m)^{re.escape(SLOW)} +passed .*regression .*tokens \+", shard)
    assert f"baseline regression: {SLOW}: tokens rose from 1 to " in shard
    assert "turns rose" not in shard  # within a-slow's own tolerance (turns: null)
    assert 'name="atom_baseline_turns" value="1' in (front_ends.project / "shard1.xml").read_text()
    page = (front_ends.project / "whole.html").read_text()  # the HTML report's column fills in
    assert '<span class="delta">baseline regression</span>' in page
    assert '<span class="delta">tokens +' in page


@pytest.mark.slow
def test_save_then_compare_over_a_real_run(front_ends: FrontEnds, tmp_path: Path) -> None:
    """Save a baseline of the shared project's last pytest run (`pytest -n 2`): the run
    is the same as it; against a copy with fewer tokens and a higher score it regresses,
    naming each spec, metric and values."""
    last = front_ends.project / ".atom" / "runs" / "last-run.json"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        saved = CliRunner().invoke(baseline, ["save", "--from", str(last)], catch_exceptions=False)
    assert saved.exit_code == 0, saved.output
    path = tmp_path / ".atom" / "baseline.json"
    rows = read_results(last)
    assert [c.status for c in gate_run(load_baseline(path), rows)[0]] == ["same"] * 3

    lower = json.loads(path.read_text())
    tokens = lower["specs"][SLOW]["tokens"]
    lower["specs"][SLOW]["tokens"] = tokens // 2
    lower["specs"][XFAIL]["score"] = 0.5
    dump_baseline(lower, tmp_path / "lower.json")
    compared = {c.spec: c for c in gate_run(load_baseline(tmp_path / "lower.json"), rows)[0]}
    assert compared[SLOW].messages == (
        f"{SLOW}: tokens rose from {tokens // 2} to {tokens} (tolerance 10%)",
    )
    assert compared[XFAIL].messages == (f"{XFAIL}: score dropped from 0.5 to 0.3 (tolerance 0.05)",)
    assert compared[FAILS].status == "same"
