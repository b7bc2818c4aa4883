"""A spec whose script runs out of turns is the spec's error, named by the script's own
message: never "the Claude Code CLI failed", never an xfail that passes."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from atom_cli.validate_cmd import validate
from pytest_atom.results.outcome import Outcome, RunFacts, decide
from tests.helpers import REPO, write

#: One turn, a tool call: the agent asks for a second turn in the same CLI call.
SHORT = "turns:\n  - tool_use: [{name: Bash, input: {command: 'true'}}]\n"
CAUSE = "short.yaml has 1 turn but the agent asked for turn 2"


def test_a_broken_script_is_a_spec_error_even_for_an_xfail_spec() -> None:
    outcome = decide(
        RunFacts(
            attempts=1,
            decision="fail",
            score=None,
            threshold=0.8,
            completed=False,
            reason="error",
            checks_failed=0,
            checks=0,
            xfail="expected to miss the goal",
            script_error=f"{CAUSE}. Add a turn",
        )
    )
    assert (outcome.status, outcome.error, outcome.label) == ("error", "spec", "error")
    assert not outcome.ok and outcome.exit_status == 2
    assert outcome.why == f"the spec's script is broken: {CAUSE}. Add a turn"
    assert Outcome.from_properties(outcome.properties()) == outcome  # across xdist too


def test_one_failed_check_of_one_is_said_in_the_singular() -> None:
    common: dict[str, Any] = {"attempts": 1, "decision": "fail", "score": None}
    common |= {"threshold": 0.8, "completed": True, "reason": None}
    one = decide(RunFacts(**common, checks_failed=1, checks=1))
    assert one.why == "1 of 1 check failed"
    assert decide(RunFacts(**common, checks_failed=1, checks=2)).why == "1 of 2 checks failed"


@pytest.mark.slow
def test_atom_validate_prints_the_scripts_own_error(
    claude_bin: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "short.yaml", SHORT)
    write(tmp_path / "s.atom.yaml", "prompt: p\nscript: short.yaml\nmax_iterations: 3\n")
    # --expect-fail: a spec expected to fail, whose script is broken, is never "failed as
    # expected"; without the flag the same error is printed the same way (one run shows it).
    result = CliRunner().invoke(validate, ["--expect-fail", "s.atom.yaml"], catch_exceptions=False)
    assert result.exit_code == 1, result.output
    assert CAUSE in result.output
    assert "the Claude Code CLI failed" not in result.output
    assert "ok: failed as expected" not in result.output  # a broken spec never is


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_pytest_fails_an_xfail_spec_whose_script_is_broken(pytester: pytest.Pytester) -> None:
    specs = pytester.path / "specs"
    specs.mkdir()
    shutil.copy2(REPO / "fixtures" / "specs" / "create_file.atom.yaml", specs)
    spec = specs / "create_file.atom.yaml"
    spec.write_text(
        spec.read_text().replace("scripts/create_file.yaml", "short.yaml")
        + "xfail: the agent is expected to miss\n"
    )
    write(specs / "short.yaml", SHORT)
    result = pytester.runpytest("--atom", "specs")
    result.assert_outcomes(failed=1)  # not xfailed
    result.stdout.fnmatch_lines([f"*pytest-atom spec error in spec 'create-file'*{CAUSE}*"])
