"""A trigger suite (`triggers:`) as the loader expands it: one spec per prompt, whose check
sees the component fire (or stay silent), with one attempt of one iteration, a cassette
per prompt, arms over prompts, and errors that name the prompt's row."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_atom.errors import SpecError
from pytest_atom.spec_loader.load import load_specs
from tests.helpers import write

PROMPTS = """\
id,prompt,trigger
notes,Write the release notes.,yes
fix,Fix the failing test.,no
"""


def suite(tmp_path: Path, triggers: str, more: str = "") -> Path:
    write(tmp_path / "prompts.csv", PROMPTS)
    return write(tmp_path / "t.atom.yaml", f"name: notes\ntriggers:\n{triggers}{more}")


def test_each_prompt_is_a_spec_whose_check_sees_the_skill_fire_or_not(tmp_path: Path) -> None:
    path = suite(tmp_path, "  skill: release-notes\n  prompts: prompts.csv\n  min_recall: 0.8\n")
    notes, fix = load_specs(path)
    assert (notes.name, notes.case, notes.prompt) == (
        "notes[notes]",
        "notes",
        "Write the release notes.",
    )
    assert (fix.name, fix.prompt) == ("notes[fix]", "Fix the failing test.")
    assert [c.describe() for c in notes.accept] == ["skill_invoked release-notes"]
    assert [c.describe() for c in fix.accept] == ["not skill_invoked release-notes"]
    assert fix.accept[0].params == {"name": "release-notes", "negated": True}
    assert notes.trigger is not None and fix.trigger is not None
    assert (notes.trigger.should, fix.trigger.should) == (True, False)
    assert (notes.trigger.label, notes.trigger.min_recall, notes.trigger.min_precision) == (
        "skill release-notes",
        0.8,
        None,
    )
    assert (notes.attempts, notes.max_iterations) == (1, 1)  # a trial is the first answer


def test_a_subagent_and_a_plugin_command_have_their_kinds(tmp_path: Path) -> None:
    subagent = load_specs(suite(tmp_path, "  subagent: reviewer\n  prompts: prompts.csv\n"))
    assert [s.accept[0].kind for s in subagent] == ["subagent_used", "subagent_used"]
    command = load_specs(suite(tmp_path, "  command: tools:release\n  prompts: prompts.csv\n"))
    assert command[0].accept[0].kind == "skill_invoked"  # the Skill tool invokes commands
    assert command[0].trigger is not None and command[0].trigger.label == "command tools:release"


def test_the_label_renders_as_a_template_and_arms_run_every_prompt(tmp_path: Path) -> None:
    write(tmp_path / "scripts" / "yes.yaml", "turns: [{text: x}]\n")
    write(tmp_path / "scripts" / "no.yaml", "turns: [{text: x}]\n")
    arms = (
        'script: "scripts/{{ trigger }}.yaml"\nattempts: 2\n'
        "arms:\n  short: {}\n  long: {max_iterations: 2}\n"
    )
    specs = load_specs(suite(tmp_path, "  skill: notes\n  prompts: prompts.csv\n", arms))
    assert [s.name for s in specs] == [
        "notes[notes][short]",
        "notes[notes][long]",
        "notes[fix][short]",
        "notes[fix][long]",
    ]
    assert [s.script.name if s.script else None for s in specs] == ["yes.yaml"] * 2 + [
        "no.yaml"
    ] * 2
    assert [(s.attempts, s.max_iterations) for s in specs] == [(2, 1), (2, 2), (2, 1), (2, 2)]
    assert [s.accept[0].describe() for s in specs][1:3] == [
        "skill_invoked notes",
        "not skill_invoked notes",
    ]


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        (
            "id,prompt,trigger\na,Write notes.,maybe\nb,Fix it.,no\n",
            "row 2: prompt 'a' needs 'trigger': true if it should fire the skill, false if it "
            "should not (yes or no in a CSV), got 'maybe'",
        ),
        (
            "id,prompt,trigger\na,Write notes.,yes\nb,Write more notes.,true\n",
            "the prompts hold none that should not fire the skill: precision and recall need "
            "prompts of both kinds (trigger: true and trigger: false)",
        ),
        (
            "id,text,trigger\na,Write notes.,yes\nb,Fix it.,no\n",
            "row 2: prompt 'a' needs a 'prompt': the task text",
        ),
    ],
)
def test_a_prompt_without_a_usable_label_names_its_row(
    tmp_path: Path, rows: str, message: str
) -> None:
    path = suite(tmp_path, "  skill: notes\n  prompts: prompts.csv\n")
    write(tmp_path / "prompts.csv", rows)
    with pytest.raises(SpecError) as caught:
        load_specs(path)
    assert str(caught.value).startswith(message)


def test_a_trigger_suite_takes_no_prompt_and_no_cases(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="'cases:'"):
        load_specs(suite(tmp_path, "  skill: n\n  prompts: prompts.csv\n", "cases: prompts.csv\n"))
    with pytest.raises(SpecError):
        load_specs(suite(tmp_path, "  skill: n\n  prompts: prompts.csv\n", "prompt: hi\n"))
    with pytest.raises(SpecError):
        load_specs(suite(tmp_path, "  skill: n\n  subagent: r\n  prompts: prompts.csv\n"))
