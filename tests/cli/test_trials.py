"""`atom trials`: the repeats that tell a drop in pass rate from noise."""

from __future__ import annotations

from click.testing import CliRunner

from atom_cli.main import main


def test_trials_answers_for_one_spec_and_a_suite() -> None:
    result = CliRunner().invoke(main, ["trials", "--p", "0.9", "--q", "0.5", "--specs", "10"])
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "a drop in pass rate from 0.9 to 0.5, alpha 0.05, power 0.8 (repeats on each side: "
        "the baseline's and the run's)",
        "one spec: 19 repeats (Fisher's exact test, one-sided; exact power 0.814)",
        "a suite of 10 specs: 3 repeats per spec (Cochran-Mantel-Haenszel test stratified by "
        "spec, one-sided, at alpha / 2 as the gate tests a suite's total; normal approximation)",
    ]


def test_trials_takes_alpha_and_power() -> None:
    result = CliRunner().invoke(
        main, ["trials", "--p", "0.9", "--q", "0.8", "--alpha", "0.1", "--power", "0.9"]
    )
    assert result.exit_code == 0, result.output
    assert "alpha 0.1, power 0.9" in result.output
    assert "one spec: 183 repeats" in result.output


def test_trials_refuses_a_rise() -> None:
    result = CliRunner().invoke(main, ["trials", "--p", "0.5", "--q", "0.6"])
    assert result.exit_code == 2
    assert "--q (0.6) must be below --p (0.5): it is the drop to detect" in result.output
