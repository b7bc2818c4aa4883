"""Stale cassettes are named: a changed script is refused with the command that re-records,
a changed prompt is a reason the divergence report can give, old cassettes are not checked."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from atom_cli.cassette_cmd import cassette
from atom_cli.validate_cmd import validate
from pytest_atom.cassettes.cassette import Cassette
from pytest_atom.cassettes.recording import (
    ModelSource,
    RecordingError,
    cassette_path,
    open_model_source,
)
from pytest_atom.cassettes.staleness import (
    PROMPT_CHANGED,
    SCRIPT_CHANGED,
    prompt_hash,
    script_hash,
    staleness,
)
from pytest_atom.model.modes import RecordMode
from pytest_atom.model.settings import RunSettings
from pytest_atom.model.spec import load_specs
from pytest_atom.model.spec_types import Spec
from tests.helpers import scripted_spec

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "specs"
CASSETTE = Path("cassettes/create_file/create-file.yaml")
COMMAND = "pytest --atom 'create_file.atom.yaml::create-file' --atom-record-mode=all"
SECOND_TURN = "I'll check the file's content."


def copy_create_file(folder: Path, *, criteria: bool = True, cassette: bool = False) -> Path:
    """The create_file fixture in `folder`; without criteria, no reflector session runs."""
    text = (FIXTURES / "create_file.atom.yaml").read_text(encoding="utf-8")
    if not criteria:
        text = text.replace('criteria:\n  - hello.txt holds the greeting "hello, world" and', "")
        text = text.replace(" nothing else.\n", "", 1)
        assert "criteria" not in text
    (folder / "create_file.atom.yaml").write_text(text, encoding="utf-8")
    shutil.copytree(FIXTURES / "scripts", folder / "scripts")
    if cassette:
        shutil.copytree(FIXTURES / "cassettes" / "create_file", folder / CASSETTE.parent)
    return folder / "create_file.atom.yaml"


def unstamp(path: Path) -> None:
    """The cassette as a release before the hashes wrote it."""
    data = Cassette.load(path)
    assert data.metadata.pop("prompt_hash") and data.metadata.pop("script_hash")
    data.save()


def edit_script(folder: Path) -> None:
    script = folder / "scripts" / "create_file.yaml"
    text = script.read_text(encoding="utf-8")
    assert SECOND_TURN in text
    script.write_text(text.replace(SECOND_TURN, "Let me look at it."), encoding="utf-8")


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_stale_script_is_refused_naming_the_command_and_validate_says_why(
    pytester: pytest.Pytester,
) -> None:
    spec_file = copy_create_file(pytester.path, criteria=False)
    pytester.runpytest("--atom", "--atom-record-mode=all").assert_outcomes(passed=1)
    cassette = pytester.path / CASSETTE
    spec = load_specs(spec_file)[0]
    metadata = Cassette.load(cassette).metadata
    assert metadata["script_hash"] == script_hash(spec) and metadata["script_hash"]
    assert metadata["prompt_hash"] == prompt_hash(spec)

    edit_script(pytester.path)
    before = cassette.read_bytes()
    result = pytester.runpytest("--atom")
    result.assert_outcomes(failed=1)  # a harness error, reported as such
    result.stdout.fnmatch_lines(
        [
            "*pytest-atom could not run spec 'create-file': cassette "
            f"{CASSETTE} is stale: {SCRIPT_CHANGED} (scripts/create_file.yaml)*"
            f"Re-record it with: {COMMAND}"
        ]
    )
    assert "SpecFailed" not in result.stdout.str()
    assert cassette.read_bytes() == before

    # `atom validate` plays the new script, which passes, and says why pytest --atom refuses.
    validated = CliRunner().invoke(validate, ["create_file.atom.yaml"], catch_exceptions=False)
    assert validated.exit_code == 0, validated.output
    assert (
        f"    note: pytest --atom will refuse the stale cassette {CASSETTE} ({SCRIPT_CHANGED}: "
        "scripts/create_file.yaml is not the script the cassette was recorded from); "
        f"re-record it with: {COMMAND}"
    ) in validated.output.splitlines()

    # The command it names re-records from the new script: the cassette fits again.
    rerecord = COMMAND.removeprefix("pytest ").replace("'", "").split()
    pytester.runpytest(*rerecord).assert_outcomes(passed=1)
    assert Cassette.load(cassette).metadata["script_hash"] == script_hash(spec)
    assert staleness(spec, Cassette.load(cassette)) == []


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_old_cassette_without_hashes_replays_after_a_script_edit(
    pytester: pytest.Pytester,
) -> None:
    """The previous release stored no hashes: nothing to compare, no error (and `atom
    cassette check` notes that such a cassette cannot tell when it is stale)."""
    copy_create_file(pytester.path, cassette=True)
    unstamp(pytester.path / CASSETTE)
    edit_script(pytester.path)
    pytester.runpytest("--atom").assert_outcomes(passed=1)


# --- without a Claude Code session --------------------------------------------------------


def recorded_for(spec: Spec, **metadata: str | None) -> Path:
    """An (empty) cassette whose metadata holds the given hashes."""
    return Cassette(cassette_path(spec), [], {"spec": "s.atom.yaml::s", **metadata}).save()


def open_source(spec: Spec, claude_bin: Path, mode: RecordMode = "none") -> ModelSource:
    return open_model_source(spec, RunSettings(record_mode=mode), paths={}, claude_bin=claude_bin)


@pytest.mark.parametrize("mode", ["none", "once", "new_episodes"])
def test_a_changed_script_refuses_the_cassette_in_every_mode_that_replays_it(
    tmp_path: Path, claude_bin: Path, mode: RecordMode
) -> None:
    spec = scripted_spec(tmp_path)
    recorded_for(spec, prompt_hash=prompt_hash(spec), script_hash="sha256:0123456789abcdef")
    (reason,) = staleness(spec, Cassette.load(cassette_path(spec)))
    assert reason.startswith(SCRIPT_CHANGED)
    with pytest.raises(RecordingError) as info:
        open_source(spec, claude_bin, mode)
    assert "is stale: script changed since recording" in str(info.value)
    assert str(info.value).endswith("--atom-record-mode=all")


def test_a_comment_or_line_endings_do_not_change_the_script(tmp_path: Path) -> None:
    spec = scripted_spec(tmp_path)
    recorded = script_hash(spec)
    assert recorded is not None and recorded.startswith("sha256:")
    script = tmp_path / "turns.yaml"
    text = script.read_text(encoding="utf-8")
    script.write_bytes(("# the only turn\n" + text).replace("\n", "\r\n").encode())
    assert script_hash(spec) == recorded
    script.write_text(text.replace("Done.", "Finished."), encoding="utf-8")
    assert script_hash(spec) != recorded


def test_a_changed_prompt_is_a_reason_not_a_refusal(tmp_path: Path, claude_bin: Path) -> None:
    recorded = scripted_spec(tmp_path, "Create hello.txt.")
    recorded_for(recorded, prompt_hash=prompt_hash(recorded), script_hash=script_hash(recorded))
    assert staleness(recorded, Cassette.load(cassette_path(recorded))) == []
    spec = scripted_spec(tmp_path, "Create goodbye.txt.")
    source = open_source(spec, claude_bin)
    (reason,) = source.stale_reasons
    assert reason.startswith(PROMPT_CHANGED)


def test_hashes_are_not_compared_when_absent(tmp_path: Path, claude_bin: Path) -> None:
    spec = scripted_spec(tmp_path)
    recorded_for(spec)  # as the previous release wrote it
    assert open_source(spec, claude_bin).stale_reasons == []
    recorded_for(spec, prompt_hash="sha256:0123456789abcdef")  # recorded from an upstream
    (reason,) = open_source(spec, claude_bin).stale_reasons
    assert reason.startswith(PROMPT_CHANGED)


def test_a_spec_without_its_script_now_is_not_refused(tmp_path: Path, claude_bin: Path) -> None:
    """Recorded from a script since removed: the cassette is all there is, and it replays."""
    spec = scripted_spec(tmp_path)
    recorded_for(spec, script_hash="sha256:0123456789abcdef")
    (tmp_path / "s.atom.yaml").write_text("name: s\nprompt: Create hello.txt.\n")
    unscripted = load_specs(tmp_path / "s.atom.yaml")[0]
    assert open_source(unscripted, claude_bin).stale_reasons == []


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.atom.yaml")), ids=lambda p: p.stem)
def test_every_shipped_cassette_fits_its_spec(path: Path) -> None:
    """An edited fixture spec or script needs its cassette recorded again: this says which."""
    for spec in load_specs(path):
        assert staleness(spec, Cassette.load(cassette_path(spec))) == [], spec.name


# --- every shipped spec ---------------------------------------------------------------------

SHIPPED = sorted(FIXTURES.glob("*.atom.yaml"))
#: A spec with a `prompt:`, one with steps, one with a planner `request:`.
E2E_PROMPTS = ("create_file.atom.yaml", "two_steps.atom.yaml", "planned.atom.yaml")


def shipped_copy(folder: Path) -> Path:
    shutil.copytree(FIXTURES, folder / "specs")
    return folder / "specs"


def edit_prompt(spec_file: Path) -> None:
    """One more sentence in the prompt the user wrote (`prompt:`, a step's, or `request:`)."""
    text = spec_file.read_text(encoding="utf-8")
    edited, count = re.subn(
        r"^(\s*(?:- id: \w+\n\s*)?(?:prompt|request): )(\|\n(\s+))?",
        lambda m: m.group(0) + ("Be brief.\n" + m.group(3) if m.group(2) else "Be brief. "),
        text,
        count=1,
        flags=re.MULTILINE,
    )
    assert count == 1, spec_file
    spec_file.write_text(edited, encoding="utf-8")


@pytest.mark.usefixtures("claude_for_pytester")
def test_editing_any_shipped_script_is_refused_with_the_command_that_re_records(
    pytester: pytest.Pytester,
) -> None:
    specs = shipped_copy(pytester.path)
    for spec_file in SHIPPED:
        (spec,) = load_specs(specs / spec_file.name)
        assert spec.script is not None
        assert Cassette.load(cassette_path(spec)).metadata["script_hash"] == script_hash(spec)
        script = spec.script.read_text(encoding="utf-8")
        spec.script.write_text(script.replace("text: ", "text: Edited. ", 1), encoding="utf-8")
        assert script_hash(spec) != Cassette.load(cassette_path(spec)).metadata["script_hash"]
    # Through the CLI, one spec of each kind of prompt (`prompt:`, a step's, the planner's
    # `request:`); staleness() above answered for every one, and the report is the same code.
    run = [f"specs/{name}" for name in E2E_PROMPTS]
    result = pytester.runpytest("--atom", *run, "-p", "no:cacheprovider")
    result.assert_outcomes(failed=len(run))
    out = result.stdout.str()
    for spec_file in (FIXTURES / f for f in E2E_PROMPTS):
        (spec,) = load_specs(spec_file)
        command = f"pytest --atom 'specs/{spec_file.name}::{spec.name}' --atom-record-mode=all"
        assert (
            f"cassette specs/cassettes/{spec_file.name.removesuffix('.atom.yaml')}/{spec.name}"
            f".yaml is stale: {SCRIPT_CHANGED} (specs/scripts/"
        ) in out, spec.name
        assert f"Re-record it with: {command}" in out, spec.name


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_editing_any_shipped_prompt_diverges_naming_the_command_that_re_records(
    pytester: pytest.Pytester,
) -> None:
    specs = shipped_copy(pytester.path)
    for spec_file in SHIPPED:
        edit_prompt(specs / spec_file.name)
        (spec,) = load_specs(specs / spec_file.name)
        assert staleness(spec, Cassette.load(cassette_path(spec))) == [
            f"{PROMPT_CHANGED}: its prompt is not the one the cassette was recorded with"
        ], spec.name
    # Through the CLI, one spec of each kind of prompt (`prompt:`, a step's, the planner's
    # `request:`); staleness() above answered for every one, and the report is the same code.
    run = [f"specs/{name}" for name in E2E_PROMPTS]
    result = pytester.runpytest("--atom", *run, "-p", "no:cacheprovider")
    result.assert_outcomes(failed=len(run))
    out = result.stdout.str()
    for spec_file in (FIXTURES / f for f in E2E_PROMPTS):
        (spec,) = load_specs(spec_file)
        assert (
            f"likely cause: {PROMPT_CHANGED}: re-record it with: pytest --atom "
            f"'specs/{spec_file.name}::{spec.name}' --atom-record-mode=all"
        ) in out, spec.name


# --- atom cassette stamp ----------------------------------------------------------------------


def stamp(*args: str) -> Result:
    return CliRunner().invoke(cassette, ["stamp", *args], catch_exceptions=False)


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_stamp_writes_the_hashes_of_a_cassette_that_fits_and_nothing_else(
    pytester: pytest.Pytester,
) -> None:
    spec_file = copy_create_file(pytester.path, cassette=True)
    path = pytester.path / CASSETTE
    shipped = path.read_text(encoding="utf-8")
    unstamp(path)
    before = path.read_text(encoding="utf-8")
    result = stamp("create_file.atom.yaml")
    assert result.exit_code == 0, result.output
    spec = load_specs(spec_file)[0]
    assert result.output == (
        f"create-file: stamped {CASSETTE} (prompt_hash {prompt_hash(spec)}, "
        f"script_hash {script_hash(spec)})\n"
    )
    after = path.read_text(encoding="utf-8")
    assert after == shipped  # the shipped cassette was stamped by this very command
    removed = set(before.splitlines()) - set(after.splitlines())
    added = set(after.splitlines()) - set(before.splitlines())
    assert removed == set()
    assert added == {f"  prompt_hash: {prompt_hash(spec)}", f"  script_hash: {script_hash(spec)}"}
    assert stamp("create_file.atom.yaml").output == f"create-file: already stamped {CASSETTE}\n"
    # Now an edited script is refused, where the unstamped cassette replayed it green.
    edit_script(pytester.path)
    pytester.runpytest("--atom").assert_outcomes(failed=1)


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_stamp_refuses_a_cassette_whose_script_or_prompt_changed(
    pytester: pytest.Pytester,
) -> None:
    spec_file = copy_create_file(pytester.path, cassette=True)
    path = pytester.path / CASSETTE
    unstamp(path)
    before = path.read_bytes()
    rerecord = f"  re-record it with: {COMMAND}"

    edit_script(pytester.path)  # a replay would pass: only the script comparison tells
    result = stamp("create_file.atom.yaml")
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "create-file: not stamped, the cassette does not fit the spec: interaction 2 (agent "
        "answer 2) is not what scripts/create_file.yaml line 7 answers now",
        rerecord,
    ]
    assert path.read_bytes() == before

    shutil.copy(FIXTURES / "scripts" / "create_file.yaml", pytester.path / "scripts")
    spec_file.write_text(spec_file.read_text().replace("hello, world\n", "hello, moon\n", 1))
    result = stamp("create_file.atom.yaml")
    assert result.exit_code == 1
    assert result.output.startswith(
        "create-file: not stamped, the cassette does not fit the spec: the replay diverged"
    )
    assert "likely cause: spec changed since recording" in result.output
    assert result.output.endswith(rerecord + "\n")
    assert path.read_bytes() == before
