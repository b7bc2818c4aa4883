"""Snapshots of spec outputs, repeats with pass-rate gating, and the `atom` fixture."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import REPO

# Every test here starts Claude Code.
pytestmark = [pytest.mark.usefixtures("claude_for_pytester"), pytest.mark.slow]


@pytest.fixture
def create_file(pytester: pytest.Pytester) -> Path:
    """The shipped create-file spec with its script and cassette, alone in a project."""
    specs = REPO / "fixtures" / "specs"
    shutil.copy2(specs / "create_file.atom.yaml", pytester.path)
    shutil.copytree(specs / "scripts", pytester.path / "scripts")
    shutil.copytree(
        specs / "cassettes" / "create_file", pytester.path / "cassettes" / "create_file"
    )
    return pytester.path / "create_file.atom.yaml"


def test_snapshot_update_then_match_then_mismatch(
    pytester: pytest.Pytester, create_file: Path
) -> None:
    create_file.write_text(create_file.read_text() + "snapshot: [hello.txt]\n")
    pytester.runpytest("--atom", "--snapshot-update").assert_outcomes(passed=1)
    [ambr] = (pytester.path / "__snapshots__").glob("*.ambr")
    assert "# name: create-file[hello.txt]" in ambr.read_text()
    assert "hello, world" in ambr.read_text()

    pytester.runpytest("--atom").assert_outcomes(passed=1)

    ambr.write_text(ambr.read_text().replace("hello, world", "hello, there"))
    result = pytester.runpytest("--atom")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "snapshot of hello.txt does not match (accept it with --snapshot-update):",
            "*- hello, there",
            "*+ hello, world",
        ]
    )


def test_unused_snapshots_are_detected(pytester: pytest.Pytester, create_file: Path) -> None:
    create_file.write_text(create_file.read_text() + "snapshot: [hello.txt, USER_PROMPT.md]\n")
    pytester.runpytest("--atom", "--snapshot-update").assert_outcomes(passed=1)
    create_file.write_text(create_file.read_text().replace(", USER_PROMPT.md]", "]"))
    result = pytester.runpytest("--atom")
    result.stdout.fnmatch_lines(["*1 snapshot unused*"])
    pytester.runpytest("--atom", "--snapshot-update").stdout.fnmatch_lines(
        ["*1 unused snapshot deleted*"]
    )


def test_repeats_report_pass_rates_and_say_replays_are_not_measurements(
    pytester: pytest.Pytester, create_file: Path
) -> None:
    result = pytester.runpytest("--atom", "--atom-repeat", "2", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*create_file.atom.yaml::create-file[[]r1] PASSED*",
            "*create_file.atom.yaml::create-file[[]r2] PASSED*",
            "create_file.atom.yaml::create-file: 2/2 passed, pass rate 1.00 [[]0.34, 1.00], "
            "pass@2 1.00, pass^2 1.00; score 0.95 [[]0.95, 0.95]; turns 3.0 [[]3.0, 3.0] "
            "[[]every repeat alike from one script or cassette: identical by design, "
            "not a measurement]",
        ]
    )


def test_min_pass_rate_gates_the_exit_status(pytester: pytest.Pytester) -> None:
    # A check that passes once: the first repeat makes the folder, the second finds it.
    flag = pytester.path / "flag"
    pytester.makefile(
        ".atom.yaml",
        once=f"name: once\nprompt: p\nscript: s.yaml\n"
        f"accept:\n  - command: {{run: 'mkdir {flag}'}}\n",
    )
    (pytester.path / "s.yaml").write_text("turns:\n  - text: EXIT_LOOP_NOW\n")
    low = pytester.runpytest("--atom", "--atom-repeat", "2", "--atom-min-pass-rate", "0.9")
    low.assert_outcomes(passed=1, failed=1)
    assert low.ret == pytest.ExitCode.TESTS_FAILED
    low.stdout.fnmatch_lines(
        [
            "once.atom.yaml::once: 1/2 passed, pass rate 0.50 [[]0.09, 0.91], pass@2 1.00, "
            "pass^2 0.00; turns 1.0 [[]1.0, 1.0] (BELOW the minimum 0.9)"
        ]
    )
    flag.rmdir()
    ok = pytester.runpytest("--atom", "--atom-repeat", "2", "--atom-min-pass-rate", "0.5")
    ok.assert_outcomes(passed=1, failed=1)
    assert ok.ret == pytest.ExitCode.OK  # the gate, not the single failed repeat, decides
    ok.stdout.fnmatch_lines(["*1/2 passed, pass rate 0.50 [[]0.09, 0.91]*(ok the minimum 0.5)"])


def test_the_atom_fixture_runs_a_spec_file_and_an_inline_spec(
    pytester: pytest.Pytester, create_file: Path
) -> None:
    pytester.makepyfile(
        test_agent="""
        def test_spec_file(atom, snapshot):
            result = atom.run("create_file.atom.yaml")
            assert result.passed, result.report()
            assert result.score == 0.95
            assert snapshot == (result.workspace / "hello.txt").read_text()

        def test_inline(atom):
            result = atom.run(
                prompt="Create done.txt",
                script={"turns": [
                    {"tool_use": [{"name": "Bash", "input": {"command": "echo ok > done.txt"}}]},
                    {"text": "EXIT_LOOP_NOW"},
                ]},
                accept=[{"file_contains": {"path": "done.txt", "pattern": "^ok$"}}],
            )
            assert result.passed, result.report()
            assert result.source == "scripted"

        def test_inline_failure_report(atom):
            result = atom.run(
                prompt="Create done.txt",
                script={"turns": [{"text": "EXIT_LOOP_NOW"}]},
                accept=[{"file_exists": "done.txt"}],
            )
            assert not result.passed
            assert "FAIL file_exists done.txt" in result.report()
        """
    )
    result = pytester.runpytest("test_agent.py", "--snapshot-update")  # no --atom needed
    result.assert_outcomes(passed=3)
    assert list((pytester.path / "__snapshots__").glob("test_agent.ambr"))


def test_the_atom_fixture_reads_spec_paths_from_the_rootdir(
    pytester: pytest.Pytester, create_file: Path
) -> None:
    """A test file in a subfolder names the spec as a node id would; a missing one is a
    one-line failure that says where it looked, not a SpecError traceback."""
    pytester.makeini("[pytest]\n")
    tests = pytester.mkdir("agent_tests")
    (tests / "test_agent.py").write_text(
        "def test_spec_file(atom):\n"
        "    assert atom.run('create_file.atom.yaml').passed\n\n"
        "def test_missing(atom):\n"
        "    atom.run('specs/nope.atom.yaml')\n"
    )
    result = pytester.runpytest("agent_tests/test_agent.py")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*atom.run: spec file not found at specs/nope.atom.yaml (atom.run reads a relative "
            f"path from the rootdir, {pytester.path})"
        ]
    )
    result.stdout.no_fnmatch_line("*SpecError*")
    result.stdout.no_fnmatch_line("*Traceback*")
