"""`pytest --atom` as a user runs it: pytester sessions driving the real CLI.

The failure reports, an xfail spec that passes and a file of several specs come from one
project run once (`play_project`); the JUnit properties from the shipped fixtures' run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import REPO, Scenario, ShippedRun, pytester_once

pytestmark = pytest.mark.usefixtures("claude_for_pytester")


@pytest.fixture
def specs(pytester: pytest.Pytester) -> Path:
    """A copy of the shipped fixture specs inside the pytester project."""
    target = pytester.path / "specs"
    shutil.copytree(REPO / "fixtures" / "specs", target)
    return target


def only(specs: Path, *keep: str) -> None:
    """Keep only the named specs (and drop the calc workspace, whose tests fail on purpose)."""
    for spec in specs.glob("*.atom.yaml"):
        if spec.name not in keep:
            spec.unlink()
    if "fix_failing_test.atom.yaml" not in keep:
        shutil.rmtree(specs / "workspaces" / "calc")


@pytest.mark.slow
def test_shipped_fixtures_pass_with_the_xfail_reported(shipped_run: ShippedRun) -> None:
    assert "12 passed, 1 xfailed" in shipped_run.output  # greetings: five cases
    assert "XFAIL specs/misses_goal.atom.yaml::misses-goal" in shipped_run.output
    assert "forgets word_count" in shipped_run.output
    specs = shipped_run.specs  # the copy the run used is as it was: runs work on copies
    assert not (specs / "hello.txt").exists()
    assert not (specs / "workspaces" / "calc" / "calc" / "__pycache__").exists()
    assert "return a - b" in (specs / "workspaces" / "calc" / "calc" / "__init__.py").read_text()
    # A replay under xdist (record mode none, the default) leaves every cassette as it was
    # and writes no partial one (test_recording's xdist test covers the recording modes).
    shipped = REPO / "fixtures" / "specs" / "cassettes"
    for cassette in shipped.glob("**/*.yaml"):
        copy = specs / "cassettes" / cassette.relative_to(shipped)
        assert copy.read_bytes() == cassette.read_bytes(), cassette.name
    assert not list(specs.glob("cassettes/**/*.partial.yaml"))


def test_node_ids_and_workspace_tests_not_collected(pytester: pytest.Pytester, specs: Path) -> None:
    result = pytester.runpytest("--atom", "specs", "--collect-only", "-q")
    result.stdout.fnmatch_lines(
        [
            "specs/create_file.atom.yaml::create-file",
            "specs/fix_failing_test.atom.yaml::fix-failing-test",
            "specs/misses_goal.atom.yaml::misses-goal",
            "specs/planned.atom.yaml::planned",
            "specs/replanned.atom.yaml::replanned",
            "specs/rollback_steps.atom.yaml::rollback-steps",
            "specs/two_steps.atom.yaml::two-steps",
        ]
    )
    assert "test_calc" not in result.stdout.str()  # the calc workspace is fixture data


def test_without_the_flag_nothing_changes(pytester: pytest.Pytester, specs: Path) -> None:
    only(specs, "create_file.atom.yaml")
    result = pytester.runpytest("specs")
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    assert not (pytester.path / ".atom").exists()


def test_a_spec_named_without_the_flag_gets_a_hint(pytester: pytest.Pytester) -> None:
    pytester.makefile(".atom.yaml", x="prompt: p\n")
    named = pytester.runpytest("x.atom.yaml")
    assert named.ret == pytest.ExitCode.USAGE_ERROR  # pytest's own "not found" stays
    named.stdout.fnmatch_lines(
        [
            "hint: x.atom.yaml is a pytest-atom spec, but specs run only with --atom: "
            "pytest --atom x.atom.yaml"
        ]
    )
    folder = pytester.runpytest(".")
    assert folder.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    folder.stdout.fnmatch_lines(["hint: 1 pytest-atom spec file(s) were found, but specs*"])
    # A run that collects other tests, or takes its paths from the ini, passes specs by.
    pytester.makepyfile(test_ok="def test_ok(): pass")
    assert "hint:" not in pytester.runpytest(".").stdout.str()
    pytester.makeini("[pytest]\ntestpaths = .\n")
    assert "hint:" not in pytester.runpytest().stdout.str()
    with_flag = pytester.runpytest("--atom", "x.atom.yaml", "--collect-only")
    assert "hint:" not in with_flag.stdout.str() and with_flag.ret == pytest.ExitCode.OK


def test_a_named_spec_gets_a_hint_about_that_file_only(pytester: pytest.Pytester) -> None:
    """pytest walks the named file's folder on its way: its other specs were not asked for."""
    pytester.makefile(".atom.yaml", x="prompt: p\n", y="prompt: p\n")
    named = pytester.runpytest("x.atom.yaml")
    named.stdout.fnmatch_lines(["hint: x.atom.yaml is a pytest-atom spec, but specs*"])
    assert "y.atom.yaml" not in named.stdout.str()
    assert "spec file(s) were found" not in named.stdout.str()
    pytester.makepyfile(test_broken="import no_such_module_here")  # nothing collected
    broken = pytester.runpytest("test_broken.py")
    assert "hint:" not in broken.stdout.str()


#: Two specs in one file: the first has neither script nor cassette (it fails before any
#: CLI starts); the second's agent never says it is done.
PAIR = """\
specs:
  - {name: first, prompt: make it}
  - {name: second, prompt: make it, script: scripts/nearly.yaml, max_iterations: 1,
     accept: [file_exists: hello.txt]}
"""


def play_project(pytester: pytest.Pytester) -> dict[str, pytest.RunResult]:
    """`pytest --atom` with its paths from the ini file over a project of three specs (the
    shipped create-file one with its check changed, and `PAIR`'s two), under a minimum
    pass rate."""
    specs = pytester.path / "specs"
    shutil.copytree(REPO / "fixtures" / "specs", specs)
    only(specs, "create_file.atom.yaml")
    spec = specs / "create_file.atom.yaml"
    spec.write_text(spec.read_text().replace('"^hello, world$"', '"^goodbye$"'))
    (specs / "scripts" / "nearly.yaml").write_text("turns:\n  - text: nearly\n")
    (specs / "pair.atom.yaml").write_text(PAIR)
    pytester.makeini("[pytest]\natom_paths = specs\n")
    return {"run": pytester.runpytest("--atom", "-v", "-rxX", "--atom-min-pass-rate", "0.5")}


@pytest.fixture
def project(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    return pytester_once(pytester, tmp_path_factory, "plugin-project", play_project)


@pytest.mark.slow
def test_failed_check_gives_an_actionable_report(project: Scenario) -> None:
    project.runs["run"].lines.fnmatch_lines(
        [
            "*atom spec 'create-file' failed (specs/create_file.atom.yaml:2)",
            # The reflector's evidence changed with the check, so its recorded answer cannot
            # be replayed: the report leads with that, the command to re-judge, and the diff.
            "*replay diverged from the cassette (1 distinct request matched nothing recorded); "
            "likely cause: the reflector's input changed (checks or criteria): the agent's "
            "sessions replayed, re-judge them with: pytest --atom "
            "'specs/create_file.atom.yaml::create-file' --atom-rejudge*",
            "*POST /v1/messages (reflector): no recorded interaction matches; the closest "
            "recorded conversation differs at:",
            "*text changed in 1 place:",
            "*recorded *- [[]PASS file_contains hello.txt /^hello, world$/*",
            "*live *- [[]FAIL file_contains hello.txt /^goodbye$/: /^goodbye$/ not found*",
            "*agent: signalled EXIT_LOOP_NOW after 1 iteration",
            "*checks: 1/2 passed",
            "*PASS file_exists hello.txt (line 13): hello.txt exists",
            "*FAIL file_contains hello.txt /^goodbye$/ (line 14): *not found in hello.txt",
            "*| hello, world",
            "*agent's last message:",
            "*EXIT_LOOP_NOW",
            "*run dir: .atom/runs/create-file-*",
        ]
    )
    assert "Traceback" not in project.runs["run"].output
    [run_dir] = (project.project / ".atom" / "runs").glob("create-file-*")
    assert (run_dir / "attempts" / "a01" / "hello.txt").read_text() == "hello, world\n"
    assert not (run_dir / "committed").exists()  # only a passing attempt is promoted


@pytest.mark.slow
def test_agent_that_never_finishes_is_reported(project: Scenario) -> None:
    project.runs["run"].lines.fnmatch_lines(
        [
            "*agent: did not signal EXIT_LOOP_NOW within 1 iteration*",
            "*FAIL file_exists hello.txt*",
            "*agent's last message:",
            "*| nearly",
        ]
    )


@pytest.mark.slow
def test_xfail_spec_that_passes_is_xpassed(snapshots: Scenario) -> None:
    update = snapshots.runs["update"]
    update.assert_outcomes(xpassed=1)
    update.lines.fnmatch_lines(["XPASS create_file.atom.yaml::create-file*"])


@pytest.mark.slow
def test_atom_paths_ini_and_several_specs_per_file(project: Scenario) -> None:
    run = project.runs["run"]  # `pytest --atom` named no path: the ini file's atom_paths
    run.lines.fnmatch_lines(
        ["*specs/pair.atom.yaml::first FAILED*", "*specs/pair.atom.yaml::second FAILED*"]
    )
    run.lines.fnmatch_lines(["*could not run spec 'first': no cassette*"])
    run.assert_outcomes(failed=3)


@pytest.mark.slow
def test_a_pass_rate_below_the_minimum_fails_the_run(project: Scenario) -> None:
    run = project.runs["run"]  # (its specs fail anyway; the gate says so too)
    run.lines.fnmatch_lines(["specs/pair.atom.yaml::second: 0/1 passed, *(BELOW the minimum 0.5)"])
    assert run.ret == pytest.ExitCode.TESTS_FAILED


def test_typo_is_a_setup_error_and_other_specs_still_run(pytester: pytest.Pytester) -> None:
    """The other spec runs (and fails: it has no cassette, so no CLI starts)."""
    pytester.makefile(
        ".atom.yaml", other="name: other\nprompt: do it\n", bad="name: bad\npromt: x\n"
    )
    result = pytester.runpytest("--atom", ".")
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of atom spec file bad.atom.yaml*",
            "unknown key 'promt' at bad.atom.yaml:2:1 — did you mean 'prompt'?",
        ]
    )
    result.stdout.fnmatch_lines(["*could not run spec 'other': no cassette*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "Interrupted" not in result.stdout.str()


def test_typo_does_not_stop_other_specs_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makefile(
        ".atom.yaml", other="name: other\nprompt: do it\n", bad="name: bad\npromt: x\n"
    )
    result = pytester.runpytest("--atom", ".", "-n", "1")  # one worker: xdist, no more
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["unknown key 'promt' at bad.atom.yaml:2:1 — did you mean 'prompt'?"]
    )
    result.stdout.fnmatch_lines(["*could not run spec 'other': no cassette*"])


def test_python_collection_errors_still_interrupt(pytester: pytest.Pytester, specs: Path) -> None:
    only(specs, "create_file.atom.yaml")
    pytester.makepyfile(test_broken="import not_a_module_anywhere\n")
    result = pytester.runpytest("--atom", "specs", "test_broken.py")
    result.stdout.fnmatch_lines(["*Interrupted: 1 error during collection*"])


def test_missing_cassette_names_the_record_command_even_when_xfail(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".atom.yaml", unscripted="name: unscripted\nprompt: do it\nxfail: expected\n")
    result = pytester.runpytest("--atom", "unscripted.atom.yaml")
    result.assert_outcomes(failed=1)  # a harness error is never the expected failure
    result.stdout.fnmatch_lines(
        [
            "pytest-atom could not run spec 'unscripted': no cassette for spec 'unscripted' "
            "(expected cassettes/unscripted/unscripted.yaml); record it with: "
            "pytest --atom 'unscripted.atom.yaml::unscripted' --atom-record-mode=once",
        ]
    )
    assert not (pytester.path / "cassettes").exists()


@pytest.mark.slow
def test_junit_xml_carries_timings(shipped_run: ShippedRun) -> None:
    xml = shipped_run.junit.read_text()
    assert 'name="atom_iterations" value="1"' in xml
    assert 'name="atom_claude_s"' in xml


def test_help_lists_the_options(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        [
            "pytest-atom: Claude Code agent task specs:",
            "*--atom *collect [*].atom.yaml specs and run each through the real",
            "*--atom-runs-dir=DIR*",
            "*atom_paths (paths):*",
        ]
    )
