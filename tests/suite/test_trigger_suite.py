"""Trigger suites through `pytest --atom` and the real CLI: the shipped example
(examples/skill_triggers: 10 prompts that should fire the release-notes skill, 10 that
should not, recorded from a scripted stand-in) replayed offline, its figures in the
summary, JUnit, measured.json and the HTML report; the gate failing below min_recall; and
two skill descriptions compared as arms, paired by prompt."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.helpers import REPO, Scenario, pytester_once, write

EXAMPLE = REPO / "examples" / "skill_triggers"
SPEC = "skill_triggers/specs/release_notes.atom.yaml::release-notes-triggers"

#: Two descriptions of one skill as arms: with the short one the scripted model misses the
#: prompt that should fire it, with the long one it fires; neither fires on the other prompt.
ARMS_SPEC = """\
name: notes
triggers:
  skill: notes
  prompts:
    - {id: wants-notes, prompt: Write the release notes., trigger: true}
    - {id: wants-fix, prompt: Fix the failing test., trigger: false}
claude:
  allowed_tools: [Bash, Read, Skill]
script: "scripts/{{ trigger }}-short.yaml"
timeout: 120
arms:
  short: {claude: {skills: [short/notes]}}
  long: {claude: {skills: [long/notes]}, script: "scripts/{{ trigger }}-long.yaml"}
"""
SILENT = 'turns:\n  - text: "Answered directly.\\n\\nEXIT_LOOP_NOW"\n'
FIRES = (
    "turns:\n  - tool_use: [{name: Skill, input: {skill: notes}}]\n"
    '  - text: "Done.\\n\\nEXIT_LOOP_NOW"\n'
)


def skill(description: str) -> str:
    return f"---\nname: notes\ndescription: {description}\n---\n\nWrite the notes.\n"


def play(pytester: pytest.Pytester) -> dict[str, pytest.RunResult]:
    shutil.copytree(EXAMPLE, pytester.path / "skill_triggers")
    reports = ("--junitxml=junit.xml", "--atom-report=report", "--atom-html=report.html")
    arms = pytester.path / "arms"
    write(arms / "notes.atom.yaml", ARMS_SPEC)
    write(arms / "short" / "notes" / "SKILL.md", skill("Release notes."))
    write(arms / "long" / "notes" / "SKILL.md", skill("Write release notes or a changelog."))
    for label, short, long in (("yes", SILENT, FIRES), ("no", SILENT, SILENT)):
        write(arms / "scripts" / f"{label}-short.yaml", short)
        write(arms / "scripts" / f"{label}-long.yaml", long)
    plain = ("-p", "no:cacheprovider", "--atom-history=none")
    return {
        "example": pytester.runpytest(
            "--atom", "skill_triggers/specs", "-n", "2", *plain, *reports
        ),
        # the prompt that fires and one the stand-in missed: recall 1 of 2, below 0.7
        "below": pytester.runpytest(
            "--atom", "skill_triggers/specs", "-k", "notes-v2 or hotfix-notes", *plain
        ),
        "arms": pytester.runpytest("--atom", "arms", *plain),
    }


@pytest.fixture
def triggered(
    pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory, claude_for_pytester: None
) -> Scenario:
    return pytester_once(pytester, tmp_path_factory, "trigger-suite", play)


FIGURES = (
    "skill release-notes over 20 prompts, 20 trials: precision 0.89 [0.57, 0.98] (8 of 9 "
    "firings should have), recall 0.80 [0.49, 0.94] (8 of 10 should-fire trials); ok, "
    "min_precision 0.7, min_recall 0.7"
)
MISFIRED = [
    "    misfired: hotfix-notes (should fire, fired 0/1): We're shipping hotfix 3.0.1 today; "
    "write its changelog section.",
    "    misfired: notes-for-users (should fire, fired 0/1): Turn the commit log since the "
    "last tag into notes our users can read.",
    "    misfired: bump-deps (should not fire, fired 1/1): Bump the requests dependency to "
    "its latest version.",
]


@pytest.mark.slow
def test_the_shipped_example_replays_offline_and_meets_its_gate(triggered: Scenario) -> None:
    run = triggered.runs["example"]
    run.assert_outcomes(passed=17, failed=3)  # each misfire is its item's failure...
    assert run.ret == 0, run.output  # ...and the gate, met, decides the suite
    lines = run.output.splitlines()
    at = lines.index(f"{SPEC}: {FIGURES}")
    assert lines[at + 1 : at + 4] == MISFIRED
    assert "replay diverged" not in run.output and "drift:" not in run.output


@pytest.mark.slow
def test_the_example_figures_reach_junit_measured_json_and_html(triggered: Scenario) -> None:
    project = triggered.project
    junit = (project / "junit.xml").read_text(encoding="utf-8")
    assert f'name="atom_triggers {SPEC}" value="{FIGURES}"' in junit
    assert f'name="atom_triggers_misfired {SPEC}" value="hotfix-notes (should fire' in junit
    assert junit.count('name="atom_trigger_fired" value="yes"') == 9
    (figures,) = json.loads((project / "report" / "measured.json").read_text())["triggers"]
    assert (figures["true_positives"], figures["false_positives"], figures["false_negatives"]) == (
        8,
        1,
        2,
    )
    assert figures["met"] and figures["trials"] == 20
    html = (project / "report.html").read_text(encoding="utf-8")
    assert "misfired: bump-deps (should not fire, fired 1/1)" in html


@pytest.mark.slow
def test_the_gate_fails_the_suite_below_min_recall(triggered: Scenario) -> None:
    run = triggered.runs["below"]
    run.assert_outcomes(passed=1, failed=1)
    assert run.ret == 1
    run.lines.fnmatch_lines(
        [
            f"{SPEC}: skill release-notes over 2 prompts, 2 trials: precision 1.00 [0.21, 1.00] "
            "(1 of 1 firings should have), recall 0.50 [0.09, 0.91] (1 of 2 should-fire "
            "trials); BELOW min_recall 0.7",
            "    misfired: hotfix-notes (should fire, fired 0/1): *",
        ]
    )


@pytest.mark.slow
def test_two_descriptions_compared_as_arms_paired_by_prompt(triggered: Scenario) -> None:
    run = triggered.runs["arms"]
    run.assert_outcomes(passed=3, failed=1)  # the short description's miss
    assert run.ret == 1  # no gate: each misfire fails, as any failed run
    run.lines.fnmatch_lines(
        [
            "arms/notes.atom.yaml::notes[short]: skill notes over 2 prompts, 2 trials: precision "
            "- (nothing fired) (0 of 0 firings should have), recall 0.00 [0.00, 0.79] (0 of 1 "
            "should-fire trials)",
            "    misfired: wants-notes (should fire, fired 0/1): Write the release notes.",
            "arms/notes.atom.yaml::notes[long]: skill notes over 2 prompts, 2 trials: precision "
            "1.00 [0.21, 1.00] (1 of 1 firings should have), recall 1.00 [0.21, 1.00] (1 of 1 "
            "should-fire trials)",
            "    vs reference over 2 prompts: precision -, recall +1.00 [[]*] (paired bootstrap "
            "by prompt (seed 0))",
        ]
    )
