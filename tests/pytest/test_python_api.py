"""Snapshots of spec outputs, repeats with pass-rate gating, and the `atom` fixture.

Each scenario that starts Claude Code runs once per session and is read by several tests:
the snapshots' update and comparison, a repeated spec under a minimum pass rate, and the
`atom` fixture's project (tests/api_helpers.py's `words`, shared with tests/run/test_harness.py).
The pass-rate lines themselves are rendered from typed rows, without a CLI.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_atom.baseline.measure import repeat_lines
from tests.helpers import Scenario, pytester_once, summary_row

pytestmark = pytest.mark.usefixtures("claude_for_pytester")


@pytest.mark.slow
def test_snapshot_update_then_match_then_mismatch(snapshots: Scenario) -> None:
    snapshots.runs["update"].assert_outcomes(xpassed=1)  # it passed (marked xfail)
    written = (snapshots.project / "updated.ambr").read_text()
    assert "# name: create-file[hello.txt]" in written and "hello, world" in written
    assert "<gone.txt is missing>" in written  # a file the run did not make is said so
    compare = snapshots.runs["compare"]
    compare.assert_outcomes(failed=1)
    compare.lines.fnmatch_lines(
        [
            "snapshot of hello.txt does not match (accept it with --snapshot-update):",
            "*- hello, there",
            "*+ hello, world",
        ]
    )
    compare.lines.fnmatch_lines(["1 snapshot failed. 1 snapshot passed. 1 snapshot unused."])
    # USER_PROMPT.md still matches: its file is not reported


@pytest.mark.slow
def test_unused_snapshots_are_detected(snapshots: Scenario) -> None:
    compare = snapshots.runs["compare"]
    compare.lines.fnmatch_lines(["*1 snapshot unused.", "Re-run pytest with --snapshot-update*"])
    compare.lines.no_fnmatch_line("snapshot of USER_PROMPT.md*")


def play_gate(pytester: pytest.Pytester) -> dict[str, pytest.RunResult]:
    """A spec whose check passes once: the first repeat makes the folder, the second finds
    it; repeated twice under a minimum pass rate of 0.5."""
    flag = pytester.path / "flag"
    pytester.makefile(
        ".atom.yaml",
        once=f"name: once\nprompt: p\nscript: s.yaml\n"
        f"accept:\n  - command: {{run: 'mkdir {flag}', unsandboxed: true, reason: 'a flag kept across repeats'}}\n",
    )
    (pytester.path / "s.yaml").write_text("turns:\n  - text: EXIT_LOOP_NOW\n")
    args = ["--atom", "--atom-repeat", "2", "--atom-min-pass-rate", "0.5", "-v"]
    args.append("--junitxml=out.xml")
    return {"gated": pytester.runpytest(*args)}


@pytest.fixture
def gate(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    return pytester_once(pytester, tmp_path_factory, "api-gate", play_gate)


@pytest.mark.slow
def test_repeats_report_pass_rates_and_say_replays_are_not_measurements(gate: Scenario) -> None:
    run = gate.runs["gated"]
    run.lines.fnmatch_lines(
        [
            "*once.atom.yaml::once[[]r1] PASSED*",
            "*once.atom.yaml::once[[]r2] FAILED*",
            "once.atom.yaml::once: 1/2 passed, pass rate 0.50 [[]0.09, 0.91], pass@2 1.00, "
            "pass^2 0.00; turns 1.0 [[]1.0, 1.0] (ok the minimum 0.5)",
        ]
    )
    assert "identical by design" not in run.output  # its repeats differ: a measurement
    junit = (gate.project / "out.xml").read_text()  # and the line is a test-suite property
    assert 'name="atom_repeats once.atom.yaml::once" value="1/2 passed, pass rate 0.50' in junit


@pytest.mark.slow
def test_min_pass_rate_gates_the_exit_status(gate: Scenario) -> None:
    run = gate.runs["gated"]
    run.assert_outcomes(passed=1, failed=1)
    assert run.ret == pytest.ExitCode.OK  # the gate, not the single failed repeat, decides


def replayed_rows(passed: int) -> list[Any]:
    """Two repeats of one spec replayed from its cassette, `passed` of them passing."""
    labels = ["passed"] * passed + ["failed"] * (2 - passed)
    props = {"atom_source": "replay", "atom_turns": 3, "atom_score": 0.95}
    return [summary_row(f"s.atom.yaml::s[r{i}]", label, props) for i, label in enumerate(labels)]


def test_repeated_replays_are_said_not_to_be_measurements() -> None:
    [_, line] = repeat_lines(replayed_rows(2), None)
    assert line == (
        "s.atom.yaml::s: 2/2 passed, pass rate 1.00 [0.34, 1.00], pass@2 1.00, pass^2 1.00; "
        "score 0.95 [0.95, 0.95]; turns 3.0 [3.0, 3.0] [every repeat alike from one script "
        "or cassette: identical by design, not a measurement]"
    )


def test_a_pass_rate_below_the_minimum_is_flagged() -> None:
    [_, line] = repeat_lines(replayed_rows(1), 0.9)
    assert line.startswith("s.atom.yaml::s: 1/2 passed, pass rate 0.50 [0.09, 0.91]")
    assert line.endswith("(BELOW the minimum 0.9)")


@pytest.mark.slow
def test_the_atom_fixture_runs_a_spec_file_and_an_inline_spec(words: Scenario) -> None:
    """No --atom needed: a spec file and an inline spec (its script a mapping of turns) run,
    the inline one's failed check in its report; syrupy's `snapshot` works beside it."""
    run = words.runs["run"]
    run.lines.fnmatch_lines(
        [
            "agent_tests/test_agent.py::test_spec_file PASSED*",
            "agent_tests/test_agent.py::test_inline PASSED*",
        ]
    )
    assert list((words.project / "agent_tests" / "__snapshots__").glob("test_agent.ambr"))


@pytest.mark.slow
def test_the_atom_fixture_reads_spec_paths_from_the_rootdir(words: Scenario) -> None:
    """A test file in a subfolder names the spec as a node id would; a missing one is a
    one-line failure that says where it looked, not a SpecError traceback."""
    run = words.runs["run"]
    run.lines.fnmatch_lines(
        [
            "agent_tests/test_agent.py::test_spec_file PASSED*",
            "agent_tests/test_agent.py::test_missing FAILED*",
        ]
    )
    run.lines.fnmatch_lines(
        [
            "*atom.run: spec file not found at specs/nope.atom.yaml (atom.run reads a relative "
            f"path from the rootdir, {words.root})"
        ]
    )
    run.lines.no_fnmatch_line("*SpecError*")
    run.lines.no_fnmatch_line("*Traceback*")
