"""Stale cassettes are named: a changed script is refused with the command that re-records,
a changed prompt is a reason the divergence report can give, old cassettes are not checked."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result

from atom_cli.cassette_cmd import cassette
from pytest_atom.agents.claude_code.cli import CLAUDE_CODE_VERSION
from pytest_atom.errors import RecordingError
from pytest_atom.gateway import Gateway
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.recording import (
    ModelSource,
    cassette_path,
    divergence_report,
    open_model_source,
)
from pytest_atom.replay.staleness import (
    PROMPT_CHANGED,
    SCRIPT_CHANGED,
    prompt_hash,
    script_hash,
    staleness,
)
from pytest_atom.run.oracle import cassette_notes
from pytest_atom.settings.modes import RecordMode
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import load_specs
from tests.helpers import scripted_spec

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "specs"
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


@pytest.mark.usefixtures("claude_for_pytester")
def test_stale_script_is_refused_naming_the_command_and_validate_says_why(
    pytester: pytest.Pytester,
) -> None:
    """The shipped cassette holds the hashes of the prompt and script it was recorded from
    (tests/replay/test_mcp_tape.py shows a recording writes them); once the script is edited,
    `pytest --atom` refuses it before any Claude Code starts, naming the command that
    re-records, and `atom validate` (which plays the new script) notes why."""
    spec_file = copy_create_file(pytester.path, criteria=False, cassette=True)
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

    # What `atom validate` adds to its run of the new script, and why pytest --atom refuses.
    assert cassette_notes(load_specs(spec_file)[0]) == [
        f"note: pytest --atom will refuse the stale cassette {CASSETTE} ({SCRIPT_CHANGED}: "
        "scripts/create_file.yaml is not the script the cassette was recorded from); "
        f"re-record it with: {COMMAND}"
    ]


def test_old_cassette_without_hashes_replays_after_a_script_edit(
    tmp_path: Path, claude_bin: Path
) -> None:
    """The previous release stored no hashes: nothing to compare, no error (and `atom
    cassette check` notes that such a cassette cannot tell when it is stale). The replay
    serves the recorded answers to the pin's own requests, whatever the script says now."""
    spec_file = copy_create_file(tmp_path, cassette=True)
    unstamp(tmp_path / CASSETTE)
    edit_script(tmp_path)
    source = open_source(load_specs(spec_file)[0], claude_bin)
    assert (source.kind, source.stale_reasons) == ("replay", [])
    first = Cassette.load(FIXTURES / "cassettes" / "create_file" / "create-file.yaml")
    with Gateway(source.responder) as gateway:
        answers = [
            httpx.post(gateway.url + "/v1/messages?beta=true", json=i.body, timeout=30)
            for i in first.interactions[:2]
        ]
    assert [a.status_code for a in answers] == [200, 200]
    assert SECOND_TURN in answers[1].text and "Let me look at it." not in answers[1].text


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
        each = load_specs(specs / spec_file.name)  # a spec's cases share its script
        for spec in each:
            assert spec.script is not None
            assert Cassette.load(cassette_path(spec)).metadata["script_hash"] == script_hash(spec)
        script_file = each[0].script
        assert script_file is not None
        script = script_file.read_text(encoding="utf-8")
        script_file.write_text(script.replace("text: ", "text: Edited. ", 1), encoding="utf-8")
        for spec in each:
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


def first_request_with(cassette: Path, text: str) -> dict[str, Any]:
    """The body of the first request in `cassette` whose messages hold `text`."""
    for interaction in Cassette.load(cassette).interactions:
        body = interaction.body
        if isinstance(body, dict) and text in json.dumps(body.get("messages")):
            return body
    raise AssertionError(f"no request of {cassette} holds {text!r}")


def test_editing_any_shipped_prompt_diverges_naming_the_command_that_re_records(
    tmp_path: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every shipped spec's edited prompt is a reason, not a refusal; for one spec of each
    kind of prompt (`prompt:`, a step's, the planner's `request:`) the replay of the pin's
    request carrying it diverges at the gateway, and the report names the re-record. The
    same through the CLI: test_editing_a_shipped_prompt_diverges_through_the_cli (a sweep)
    and tests/replay/test_recording.py's test_changed_prompt_fails_with_a_readable_diff."""
    specs = shipped_copy(tmp_path)
    monkeypatch.chdir(tmp_path)
    for spec_file in SHIPPED:
        recorded, *_ = load_specs(specs / spec_file.name)
        edit_prompt(specs / spec_file.name)
        spec, *cases = load_specs(specs / spec_file.name)  # a dataset: every case's prompt
        for each in (spec, *cases):
            assert staleness(each, Cassette.load(cassette_path(each))) == [
                f"{PROMPT_CHANGED}: its prompt is not the one the cassette was recorded with"
            ], each.name
        if spec_file.name not in E2E_PROMPTS:
            continue
        source = open_source(spec, claude_bin)
        prompt = recorded.steps[0].prompt if recorded.steps else recorded.prompt
        line = json.dumps(prompt.splitlines()[0])[1:-1]
        body = json.loads(
            json.dumps(first_request_with(cassette_path(spec), line)).replace(
                line, f"Be brief. {line}", 1
            )
        )
        with Gateway(source.responder) as gateway:
            answer = httpx.post(gateway.url + "/v1/messages?beta=true", json=body, timeout=30)
        assert answer.status_code == 409, spec.name
        (report, *_) = divergence_report(spec, source, CLAUDE_CODE_VERSION)
        assert report.startswith(
            f"likely cause: {PROMPT_CHANGED}: re-record it with: pytest --atom "
            f"'specs/{spec_file.name}::{spec.name}' --atom-record-mode=all"
        ), (spec.name, report)


@pytest.mark.slow
@pytest.mark.sweep
@pytest.mark.usefixtures("claude_for_pytester")
def test_editing_a_shipped_prompt_diverges_through_the_cli(pytester: pytest.Pytester) -> None:
    """One spec of each kind of prompt, edited, replayed by the CLI: the divergence report
    names the re-record (a sweep, CI: -m sweep; the suite shows it at the gateway)."""
    specs = shipped_copy(pytester.path)
    for name in E2E_PROMPTS:
        edit_prompt(specs / name)
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
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A changed script is told by comparing the script with the cassette's answers (a
    replay would pass); a changed prompt by the hash where the cassette has one, and
    otherwise by a replay, which diverges. Nothing is written either way."""
    monkeypatch.chdir(tmp_path)
    spec_file = copy_create_file(tmp_path, cassette=True)
    path = tmp_path / CASSETTE
    stamped = path.read_bytes()
    unstamp(path)
    before = path.read_bytes()
    rerecord = f"  re-record it with: {COMMAND}"

    edit_script(tmp_path)  # a replay would pass: only the script comparison tells
    result = stamp("create_file.atom.yaml")
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        "create-file: not stamped, the cassette does not fit the spec: interaction 2 (agent "
        "answer 2) is not what scripts/create_file.yaml line 7 answers now",
        rerecord,
    ]
    assert path.read_bytes() == before

    shutil.copy(FIXTURES / "scripts" / "create_file.yaml", tmp_path / "scripts")
    spec_file.write_text(spec_file.read_text().replace("hello, world\n", "hello, moon\n", 1))
    path.write_bytes(stamped)  # its prompt hash tells, before any replay
    result = stamp("create_file.atom.yaml")
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        f"create-file: not stamped, the cassette does not fit the spec: {PROMPT_CHANGED}: its "
        "prompt is not the one the cassette was recorded with",
        rerecord,
    ]
    assert path.read_bytes() == stamped

    # No hash (a planner `request:` edited here): only a replay can tell, and it diverges
    # at the planner's session, before any step runs.
    specs = shipped_copy(tmp_path / "planned")
    monkeypatch.chdir(specs)
    unstamp(specs / "cassettes" / "planned" / "planned.yaml")
    planned = (specs / "cassettes" / "planned" / "planned.yaml").read_bytes()
    edit_prompt(specs / "planned.atom.yaml")
    result = stamp("planned.atom.yaml")
    assert result.exit_code == 1
    assert result.output.startswith(
        "planned: not stamped, the cassette does not fit the spec: the replay diverged"
    )
    assert "likely cause: spec changed since recording" in result.output
    assert "  agent: did not run" in result.output.splitlines()
    assert result.output.endswith(
        "  re-record it with: pytest --atom 'planned.atom.yaml::planned' --atom-record-mode=all\n"
    )
    assert (specs / "cassettes" / "planned" / "planned.yaml").read_bytes() == planned
