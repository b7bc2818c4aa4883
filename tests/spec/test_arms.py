"""Arms: a spec's variants, each its own item with its own cassette, selected and compared."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_atom.errors import SettingsError, SpecError
from pytest_atom.replay.recording import cassette_path
from pytest_atom.settings.resolved import Layer, resolve
from pytest_atom.spec.arms import select_arms, unknown_arms
from pytest_atom.spec_loader.load import load_specs, merge_overlay
from tests.helpers import VALIDATOR, Scenario, summary_row, write
from tests.project_run_helpers import armed_project

ARMED = """\
name: greet
prompt: p
model: claude-opus-5-5
max_iterations: 4
claude:
  allowed_tools: [Bash, Read]
arms:
  with-tools: {}
  fewer-tools:
    claude: {allowed_tools: [Read]}
  haiku:
    model: claude-haiku-5-5
    reference: true
"""


def test_each_arm_is_a_spec_with_its_overlay_merged(tmp_path: Path) -> None:
    specs = load_specs(write(tmp_path / "x.atom.yaml", ARMED))
    assert [s.name for s in specs] == ["greet[with-tools]", "greet[fewer-tools]", "greet[haiku]"]
    assert [s.base_name for s in specs] == ["greet"] * 3
    assert [s.arm_reference for s in specs] == [False, False, True]
    assert [s.claude.allowed_tools for s in specs] == [
        ("Bash", "Read"),
        ("Read",),
        ("Bash", "Read"),
    ]
    assert [s.model for s in specs] == ["claude-opus-5-5", "claude-opus-5-5", "claude-haiku-5-5"]
    assert {s.max_iterations for s in specs} == {4}
    assert [s.line for s in specs] == [8, 9, 11]  # each arm's own line, for its item
    # The hash of what the arm runs: another arm's overlay changing stales no cassette.
    assert all("arms" not in s.raw for s in specs)
    assert len({str(sorted(s.raw.items())) for s in specs}) == 3


def test_each_arm_has_its_own_cassette(tmp_path: Path) -> None:
    specs = load_specs(write(tmp_path / "x.atom.yaml", ARMED))
    assert [cassette_path(s) for s in specs] == [
        tmp_path / "cassettes" / "x" / f"greet@{arm}.yaml"
        for arm in ("with-tools", "fewer-tools", "haiku")
    ]
    (tmp_path / "rec").mkdir()
    own = ARMED.replace("max_iterations: 4\n", "max_iterations: 4\ncassette: rec/g.yaml\n")
    own = own.replace("reference: true\n", "reference: true\n    cassette: rec/h.yaml\n")
    named = load_specs(write(tmp_path / "x.atom.yaml", own))
    assert [cassette_path(s).relative_to(tmp_path).as_posix() for s in named] == [
        "rec/g@with-tools.yaml",
        "rec/g@fewer-tools.yaml",
        "rec/h.yaml",  # the arm's own cassette: wins
    ]


def test_the_first_arm_is_the_reference_unless_one_is_named(tmp_path: Path) -> None:
    first = load_specs(write(tmp_path / "x.atom.yaml", ARMED.replace("    reference: true\n", "")))
    assert [s.arm_reference for s in first] == [True, False, False]
    named = ARMED.replace("    reference: true\n", "").replace(
        "arms:", "reference_arm: fewer-tools\narms:"
    )
    assert [s.arm_reference for s in load_specs(write(tmp_path / "x.atom.yaml", named))] == [
        False,
        True,
        False,
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # An arm's own mistake names the arm's line and column.
        (
            ("model: claude-haiku-5-5", "max_iterations: zero"),
            "*'max_iterations' must be an integer >= 1, got 'zero' at *x.atom.yaml:12:21",
        ),
        (
            ("model: claude-haiku-5-5", "name: other"),
            "an arm cannot set 'name': it belongs to the spec at *x.atom.yaml:12:5",
        ),
        (
            ("arms:", "reference_arm: haiku2\narms:"),
            "'reference_arm' 'haiku2' is not one of the arms (with-tools, fewer-tools, haiku)*did you mean 'haiku'*",
        ),
        (
            ("arms:", "reference_arm: with-tools\narms:"),
            "more than one reference arm (haiku, with-tools)*at *x.atom.yaml:14:5",
        ),
        (
            ("with-tools: {}", "with tools: {}"),
            "arm name 'with tools' must start with*x.atom.yaml:8:3",
        ),
    ],
)
def test_arm_errors_name_the_arm_line(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    path = write(tmp_path / "x.atom.yaml", ARMED.replace(*change))
    with pytest.raises(SpecError) as info:
        load_specs(path)
    import fnmatch

    assert fnmatch.fnmatch(str(info.value), message), str(info.value)


def test_arms_must_name_an_arm(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"'arms' names no arm.*x.atom.yaml:2:7"):
        load_specs(write(tmp_path / "x.atom.yaml", "prompt: p\narms: {}\n"))


def test_merge_overlay_is_json_merge_patch() -> None:
    base = {"a": {"b": 1, "c": [1, 2]}, "d": 1}
    assert merge_overlay(base, {"a": {"c": []}, "d": None, "e": 2}) == {
        "a": {"b": 1, "c": []},
        "e": 2,
    }
    assert base == {"a": {"b": 1, "c": [1, 2]}, "d": 1}  # the spec's own keys stay


def test_arms_are_selected_and_a_typo_is_refused(tmp_path: Path) -> None:
    specs = load_specs(write(tmp_path / "x.atom.yaml", ARMED)) + load_specs(
        write(tmp_path / "plain.atom.yaml", "prompt: q\n")
    )
    chosen = select_arms(specs, ("haiku",))
    assert [s.name for s in chosen] == ["greet[haiku]", "plain"]  # specs without arms always run
    assert select_arms(specs, ()) == specs
    assert unknown_arms(("haiku",), [s.arm for s in specs], "--atom-arms") is None
    assert unknown_arms(("haiku", "sonnet"), [s.arm for s in specs], "--atom-arms") == (
        "--atom-arms names sonnet, which no spec has (arms here: fewer-tools, haiku, with-tools)"
    )


def test_the_arms_setting_is_parsed_in_one_place() -> None:
    assert resolve([Layer("cli", {"arms": "a, b,a"})]).arms == ("a", "b")
    assert resolve([]).arms == ()
    with pytest.raises(SettingsError, match="'a b' is no arm name"):
        resolve([Layer("the command line", {"arms": "a b"})])


@pytest.mark.slow
def test_each_arm_runs_as_its_own_item(armed: Scenario) -> None:
    armed.runs["run"].assert_outcomes(passed=1, failed=1)
    # The same figures reach JUnit (test-suite properties), the report folder and the page.
    junit = (armed.project / "j.xml").read_text()
    assert '<property name="atom_arm a.atom.yaml::greet[without-skill]" value="0/1 passed' in junit
    assert "vs reference: pass_rate -1.00" in junit
    [trace] = (armed.project / "traces" / "a").glob("greet[[]without-skill].json")
    document = json.loads(trace.read_text())
    VALIDATOR.validate(document)  # the trace's own schema knows the arm
    assert document["atom"]["spec"]["arm"] == "without-skill"
    figures = json.loads((armed.project / "traces" / "measured.json").read_text())
    [ref, other] = figures["arms"]
    assert (ref["arm"], ref["reference"], ref["passed"]) == ("with-skill", True, 1)
    # Recorded runs are not deterministic: the change in pass rate is Newcombe's interval.
    rate = other["vs_reference"]["pass_rate"]
    assert (other["arm"], rate["estimate"], rate["method"]) == ("without-skill", -1.0, "Newcombe")
    page = (armed.project / "r.html").read_text()
    assert "Repeats and arms" in page and "greet[without-skill]: 0/1 passed" in page
    stdout = armed.runs["run"].lines
    stdout.fnmatch_lines(
        [
            "a.atom.yaml::greet[[]with-skill] PASSED*",
            "a.atom.yaml::greet[[]without-skill] FAILED*",
            "*run dir: .atom/runs/greet-without-skill-*",
        ]
    )
    stdout.fnmatch_lines(
        [
            "arms (change vs the reference arm, 95 % intervals: *",
            "a.atom.yaml::greet[[]with-skill] (reference): 1/1 passed, pass rate 1.00 "
            "[[]0.21, 1.00], score -, turns 2.0, tokens *, cost $*",
            "a.atom.yaml::greet[[]without-skill]: 0/1 passed, pass rate 0.00 [[]0.00, 0.79], *",
            "    vs reference: pass_rate -1.00 [[]-1.00, +0.12], turns +0.0, tokens *",
        ]
    )


@pytest.mark.usefixtures("claude_for_pytester")
def test_arms_are_selected_on_the_command_line(pytester: pytest.Pytester) -> None:
    """Selecting and refusing arms happens at collection: no agent runs."""
    armed_project(pytester.path)
    only = pytester.runpytest("--atom", "--atom-arms", "without-skill", "--collect-only", "-q")
    only.stdout.fnmatch_lines(["a.atom.yaml::greet[[]without-skill]", "1 test collected*"])
    typo = pytester.runpytest("--atom", "--atom-arms", "with_skill")
    assert typo.ret == pytest.ExitCode.USAGE_ERROR
    typo.stderr.fnmatch_lines(
        [
            "ERROR: --atom-arms names with_skill, which no spec has (arms here: with-skill, without-skill)"
        ]
    )


@pytest.mark.slow
def test_each_arm_records_its_own_cassette(armed: Scenario) -> None:
    """Each arm's replay of its own cassette: tests/evalsuite/test_evalsuite.py, whose cases' arms
    replay `cassette@with-plugin.yaml` and `cassette@without-plugin.yaml`."""
    folder = armed.project / "cassettes" / "a"
    assert sorted(p.name for p in folder.iterdir()) == [
        "greet@with-skill.yaml",
        "greet@without-skill.yaml",
    ]


def test_junit_properties_without_arms_hold_the_repeats_alone() -> None:
    from pytest_atom.baseline.measure import junit_properties

    rows = [
        summary_row("a.atom.yaml::x[r1]", "passed", {}),
        summary_row("a.atom.yaml::x[r2]", "failed", {}),
    ]
    assert junit_properties(rows) == [
        (
            "atom_repeats a.atom.yaml::x",
            "1/2 passed, pass rate 0.50 [0.09, 0.91], pass@2 1.00, pass^2 0.00",
        )
    ]


def test_atom_run_refuses_an_unknown_arm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from atom_cli.main import main

    monkeypatch.chdir(tmp_path)
    write(tmp_path / "x.atom.yaml", ARMED)
    result = CliRunner().invoke(main, ["run", "x.atom.yaml", "--arms", "sonnet"])
    assert result.exit_code == 2  # before any agent runs
    assert "--arms names sonnet, which no spec has (arms here: fewer-tools, haiku, with-tools)" in (
        result.output
    )
