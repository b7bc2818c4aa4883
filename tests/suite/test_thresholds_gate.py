"""A spec passes when enough of its repeats pass: the suite's exit status
(`pytest_atom.suite.ending.decide`) counts each spec's passes against its threshold (its
own `pass_at_least:`, else ``--atom-pass-at-least`` and ``--atom-min-pass-rate``), so one
failed repeat no longer fails a spec that met it, and a spec below it fails the run."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.results.rows import SummaryRow
from pytest_atom.run.harness import host_harness
from pytest_atom.spec_loader.load import load_spec
from pytest_atom.suite.ending import EXIT_FAILED, EXIT_OK, Ending, decide
from pytest_atom.suite.suite_run import SuiteRun
from tests.helpers import summary_row
from tests.html_helpers import result_for, row_of


def runs(spec: str, outcomes: str, **props: Any) -> list[SummaryRow]:
    """One row per repeat of `spec`: ``"pfp"`` is passed, failed, passed."""
    labels = {"p": "passed", "f": "failed", "x": "xfailed"}
    return [
        summary_row(f"{spec}[r{n}]", labels[o], {f"atom_{k}": v for k, v in props.items()})
        for n, o in enumerate(outcomes, 1)
    ]


def status(rows: list[SummaryRow], base: int | None = None, **gates: Any) -> int:
    """The suite's exit status, `base` defaulting to pytest's own (1 when a run failed)."""
    own = int(any(not row.outcome.ok for row in rows)) if base is None else base
    return decide(Ending(base=own, rows=rows, **gates))


def test_a_spec_meeting_its_own_count_passes_though_a_repeat_failed() -> None:
    assert status(runs("x.atom.yaml::x", "pfp", repeats=3, pass_at_least=2)) == EXIT_OK
    assert status(runs("x.atom.yaml::x", "ffp", repeats=3, pass_at_least=2)) == EXIT_FAILED
    # an expected failure passes, as in pytest's exit status
    assert status(runs("x.atom.yaml::x", "xfp", repeats=3, pass_at_least=2)) == EXIT_OK


def test_without_a_count_every_repeat_must_pass_as_before() -> None:
    """The default keeps each repeat its own test: pytest's own status decides."""
    assert status(runs("x.atom.yaml::x", "pfp", repeats=3)) == EXIT_FAILED
    assert status(runs("x.atom.yaml::x", "ppp", repeats=3)) == EXIT_OK


def test_a_failed_spec_no_threshold_covers_still_fails_the_run() -> None:
    met = runs("x.atom.yaml::x", "pfp", repeats=3, pass_at_least=2)
    plain = [summary_row("y.atom.yaml::y", "failed", {})]
    assert status(met + plain) == EXIT_FAILED
    assert status(met + [summary_row("y.atom.yaml::y", "passed", {})]) == EXIT_OK


def test_a_failure_outside_the_spec_runs_is_never_counted_away() -> None:
    rows = runs("x.atom.yaml::x", "pf", repeats=2, pass_at_least=1)
    assert decide(Ending(base=1, rows=rows, other_failures=1)) == EXIT_FAILED
    assert decide(Ending(base=1, rows=rows)) == EXIT_OK


def test_the_run_s_count_holds_specs_without_their_own_and_asks_all_of_a_short_one() -> None:
    five = runs("x.atom.yaml::x", "ppppf", repeats=5)
    assert status(five, pass_at_least=4) == EXIT_OK
    assert status(five, pass_at_least=5) == EXIT_FAILED
    two = runs("y.atom.yaml::y", "pf", repeats=2)
    assert status(two, pass_at_least=4) == EXIT_FAILED  # 4 of 2: every repeat
    assert status(runs("y.atom.yaml::y", "pp", repeats=2), pass_at_least=4) == EXIT_OK


def test_a_spec_s_own_count_wins_over_the_run_s_gates() -> None:
    """The author's statement decides its spec: the run's minimum rate and count apply to
    the specs that state none."""
    own = runs("x.atom.yaml::x", "pff", repeats=3, pass_at_least=1)
    assert status(own, min_pass_rate=0.9, pass_at_least=3) == EXIT_OK
    plain = runs("y.atom.yaml::y", "ppf", repeats=3)
    assert status(own + plain, min_pass_rate=0.9) == EXIT_FAILED  # y: 0.67 < 0.9
    assert status(own + plain, min_pass_rate=0.5) == EXIT_OK


def test_the_run_s_count_and_minimum_rate_both_hold_a_spec_without_its_own() -> None:
    rows = runs("x.atom.yaml::x", "pppf", repeats=4)
    assert status(rows, pass_at_least=3, min_pass_rate=0.5) == EXIT_OK
    assert status(rows, pass_at_least=3, min_pass_rate=0.9) == EXIT_FAILED
    assert status(rows, pass_at_least=4, min_pass_rate=0.5) == EXIT_FAILED


def test_a_shard_fails_only_once_its_spec_can_no_longer_pass() -> None:
    """A CI shard ran 2 of the spec's 5 repeats: with 4 needed, one failure leaves it able
    to pass (the combined run decides), two make it fail here already."""
    one = runs("x.atom.yaml::x", "pf", repeats=5, pass_at_least=4)
    assert status(one) == EXIT_OK
    two = runs("x.atom.yaml::x", "ff", repeats=5, pass_at_least=4)
    assert status(two) == EXIT_FAILED


def test_each_arm_is_held_to_its_own_count() -> None:
    careful = runs("a.atom.yaml::t[careful]", "ppf", repeats=3, pass_at_least=2)
    quick = runs("a.atom.yaml::t[quick]", "pff", repeats=3, pass_at_least=2)
    assert status(careful) == EXIT_OK
    assert status(careful + quick) == EXIT_FAILED


def test_the_machinery_s_failures_come_before_any_threshold() -> None:
    met = runs("x.atom.yaml::x", "pf", repeats=2, pass_at_least=1)
    assert decide(Ending(base=1, rows=met, machinery_failed=True)) == 2
    assert decide(Ending(base=0, rows=met, regressed=True)) == EXIT_FAILED
    assert decide(Ending(base=0, rows=met, spending_limit=True)) == 2


# --- the suite run, as `pytest --atom`'s session plugin drives it ----------------------------


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project of its own (its pytest.ini is the rootdir node ids are relative to)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    return tmp_path


def suite_of(**options: Any) -> SuiteRun:
    return SuiteRun(host_harness(options))


def test_a_spec_s_repeats_count_against_its_own_threshold(project: Path) -> None:
    """Real finished runs of a spec whose file says `repeats: 3, pass_at_least: 2`: the
    rows carry its counts, the summary says k of n with the threshold, and the status
    follows it."""
    first = result_for(project / "a")
    spec_path = first.spec.path
    spec_path.write_text(spec_path.read_text() + "repeats: 3\npass_at_least: 2\n")
    spec = load_spec(spec_path)
    for fails, verdict, code in ((1, "ok", 0), (2, "BELOW", 1)):
        suite = suite_of()
        for n in range(1, 4):
            done = result_for(project / f"{fails}-{n}", check_passed=n > fails)
            suite.rows.append(row_of(replace(done, spec=spec), n))
        suite.finish()
        assert [(row.repeats, row.pass_at_least) for row in suite.rows] == [(3, 2)] * 3
        assert suite.exit_status(1) == code  # pytest's status: a repeat failed
        rates = suite.summary(None).rates
        assert rates is not None
        [line] = [line for line in rates if line.startswith("a/demo.atom.yaml::demo:")]
        assert line.startswith(f"a/demo.atom.yaml::demo: {3 - fails}/3 passed, pass rate")
        assert line.endswith(f"({verdict}, at least 2 of 3 must pass)")


def test_pytest_s_status_of_a_failed_repeat_becomes_0_when_the_count_is_met(
    project: Path,
) -> None:
    for outcomes, code in (("pfp", 0), ("pff", 1)):
        suite = suite_of()
        for row in runs("x.atom.yaml::x", outcomes, repeats=3, pass_at_least=2):
            suite.rows.append(row)
        assert suite.exit_status(1) == code


def test_the_run_s_pass_at_least_is_a_setting_with_its_errors(project: Path) -> None:
    suite = suite_of(pass_at_least="2", repeat="3")
    for row in runs("x.atom.yaml::x", "pfp", repeats=3):
        suite.rows.append(row)
    assert suite.exit_status(1) == 0
    said = suite.summary(None).rates
    assert said is not None and said[1].endswith("(ok, at least 2 of 3 must pass)")
    from pytest_atom.errors import SettingsError

    with pytest.raises(
        SettingsError, match=r"--pass-at-least in the command line = '0': use a whole number >= 1"
    ):
        host_harness({"pass_at_least": "0"})
    (project / ".atom").mkdir()
    (project / ".atom" / "config.yaml").write_text("pass_at_least: 3\n")
    assert host_harness({}).settings.pass_at_least == 3


def test_a_spec_s_own_repeats_decide_its_items_over_the_run_s(project: Path) -> None:
    spec_path = result_for(project / "a").spec.path
    plain = load_spec(spec_path)
    spec_path.write_text(spec_path.read_text() + "repeats: 4\n")
    own = load_spec(spec_path)
    suite = suite_of(repeat="2")
    assert suite.repeated(own).repeats == 4
    assert suite.repeated(plain).repeats == 2
    assert suite.repeated(plain, 3).repeats == 3  # an eval case's own `runs:`
