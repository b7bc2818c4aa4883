"""`atom calibrate` through the real CLI: the shipped example offline (figures, --json,
--arms), staleness (--check), and a calibration recorded and replayed like a run.

The shipped example's judge is recalled from its cassette (`replay.recall`): it starts no
Claude Code process, so those tests are fast; the deploy project's record and replay does."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest
import yaml

from pytest_atom.gateway import Gateway
from pytest_atom.gateway.scripted import Script, ScriptedResponder
from tests.calibration_helpers import (
    CRITERION,
    SPEC,
    TOKEN,
    atom,
    build_deploy_project,
    copy_example,
    run_folder,
)
from tests.helpers import once_per_session

EXAMPLE_SPEC = "specs/summary.atom.yaml"
FOLDER = Path("specs/calibration/summary-for-a-manager")


@pytest.fixture
def example(tmp_path: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    folder = copy_example(tmp_path)
    monkeypatch.chdir(folder)
    return folder


def test_the_shipped_example_calibrates_offline_from_its_cassette(example: Path) -> None:
    cassette = (FOLDER / "cassette.yaml").read_bytes()
    stored = (FOLDER / "calibration.json").read_text()
    result = atom("calibrate", EXAMPLE_SPEC)
    assert result.exit_code == 0, result.output
    assert "(judge: replay)" in result.output
    assert "samples 24, agreement 88 %, kappa 0.75 (95 % CI 0.43 to 1.00)" in result.output
    assert "human pass            10           1" in result.output
    assert "disagreement 12-overclaims.yaml: human fail, judge pass" in result.output
    assert "human: 'can never happen again' is not in the notes" in result.output
    assert (FOLDER / "cassette.yaml").read_bytes() == cassette  # a replay writes nothing
    assert (FOLDER / "calibration.json").read_text() == stored  # the same figures, kept


def test_json_gives_every_figure_of_each_criterion(example: Path) -> None:
    result = atom("calibrate", EXAMPLE_SPEC, "--json")
    assert result.exit_code == 0, result.output
    (spec,) = json.loads(result.output)
    (criterion,) = spec["criteria"]
    assert criterion["samples"] == 24 and criterion["agreement"] == 0.875
    assert criterion["kappa"] == pytest.approx(0.75, abs=0.005)
    assert criterion["kappa_low"] < criterion["kappa"] < criterion["kappa_high"]
    assert criterion["confusion"]["human_fail_judge_pass"] == 2
    assert criterion["identity"]["claude_version"] and criterion["identity"]["model"] == "default"
    assert len(criterion["disagreements"]) == 3 and spec["arms"] == []


def test_arms_compares_the_judges_paired_and_says_the_difference_is_within_noise(
    example: Path,
) -> None:
    result = atom("calibrate", EXAMPLE_SPEC, "--arms", "--json")
    assert result.exit_code == 0, result.output
    (arm,) = json.loads(result.output)[0]["arms"]
    assert arm["arm"] == "reworded" and arm["better"] == "reworded"
    assert (arm["only_arm_right"], arm["only_current_right"]) == (2, 0)
    assert arm["mcnemar_p"] == 0.5 and arm["beyond_noise"] is False
    text = atom("calibrate", EXAMPLE_SPEC, "--arms").output
    assert "reworded agrees better, within noise (McNemar exact p = 0.5" in text


def test_check_says_the_calibration_holds_until_the_judge_changes_and_names_what_changed(
    example: Path,
) -> None:
    fresh = atom("calibrate", EXAMPLE_SPEC, "--check")
    assert fresh.exit_code == 0 and "calibrated, and the judge is the same" in fresh.output
    spec = Path(EXAMPLE_SPEC)
    spec.write_text(spec.read_text().replace("at most two sentences", "at most 2 sentences"))
    reworded = atom("calibrate", EXAMPLE_SPEC, "--check")
    assert reworded.exit_code == 1
    assert "the criterion's text changed ('SUMMARY.md is at most two sentences" in reworded.output
    spec.write_text(spec.read_text() + "reflector: {model: claude-haiku-4-5}\n")
    prompts = example / ".atom" / "prompts"
    prompts.mkdir(parents=True)
    (prompts / "REFLECTOR.md").write_text("Judge harshly.\n{criteria}\n")
    changed = json.loads(atom("calibrate", EXAMPLE_SPEC, "--check", "--json").output)
    (why,) = changed[f"{EXAMPLE_SPEC}::summary-for-a-manager"].values()
    assert "the judge's model changed ('default' -> 'claude-haiku-4-5')" in why
    assert "the reflector prompt changed" in why


@pytest.fixture
def deploy(
    tmp_path_factory: pytest.TempPathFactory,
    tmp_path: Path,
    claude_bin: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Path:
    """The deploy project with one labelled sample, in the test's own folder."""
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    shared = once_per_session(tmp_path_factory, "calibration-deploy", build_deploy_project)
    copy = tmp_path / "project"
    shutil.copytree(shared, copy, ignore=shutil.ignore_patterns(".lock", ".built"))
    monkeypatch.chdir(copy)
    assert atom("label", run_folder(shared), SPEC, "--pass").exit_code == 0
    return copy


@pytest.mark.slow
def test_a_calibration_records_its_judge_and_then_replays_it_offline(deploy: Path) -> None:
    folder = Path("specs/calibration/deploy-script")
    scripted = atom("calibrate", SPEC)  # no cassette: the spec's script judges, nothing kept
    assert "(judge: scripted)" in scripted.output and not (folder / "cassette.yaml").exists()
    recorded = atom("calibrate", SPEC, "--record-mode=once")
    assert recorded.exit_code == 0, recorded.output
    assert "(judge: record)" in recorded.output and "recorded: " in recorded.output
    cassette = (folder / "cassette.yaml").read_text()
    assert TOKEN not in cassette and "reflector" in cassette
    replayed = atom("calibrate", SPEC, "--json")
    assert json.loads(replayed.output)[0]["source"] == "replay"
    assert (folder / "cassette.yaml").read_text() == cassette


@pytest.mark.slow
def test_calibrating_a_changed_judge_says_what_was_stale_and_stores_the_new_one(
    deploy: Path,
) -> None:
    assert atom("calibrate", SPEC).exit_code == 0
    spec = Path(SPEC)
    spec.write_text(spec.read_text() + "reflector: {model: claude-haiku-4-5}\n")
    assert atom("calibrate", SPEC, "--check").exit_code == 1
    again = atom("calibrate", SPEC)
    assert again.exit_code == 0, again.output
    assert "was stale: the judge's model changed ('default' -> 'claude-haiku-4-5')" in again.output
    stored = json.loads(Path("specs/calibration/deploy-script/calibration.json").read_text())
    assert stored["criteria"][0]["identity"]["model"] == "claude-haiku-4-5"
    assert atom("calibrate", SPEC, "--check").exit_code == 0


@pytest.mark.slow
def test_a_spec_without_samples_is_named_with_how_to_label_it(deploy: Path) -> None:
    shutil.rmtree("specs/calibration")
    result = atom("calibrate", SPEC)
    assert result.exit_code == 0
    assert (
        "no samples in specs/calibration/deploy-script/samples (label some with `atom label`)"
        in result.output
    )


@pytest.mark.slow
def test_the_record_hint_of_a_missing_calibration_cassette_records_it(
    deploy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a script or a cassette the judge has nothing to answer it: the error names
    the command that records the calibration's cassette, and running that command (its
    upstream a scripted one, as a person's would be the API) makes the error go away."""
    spec = Path(SPEC)
    spec.write_text(spec.read_text().replace("script: scripts/deploy.yaml\n", ""))
    missing = atom("calibrate", SPEC)
    assert missing.exit_code != 0
    hint = missing.output.partition("record it with: ")[2].strip()
    assert hint.startswith("atom calibrate "), missing.output
    script = yaml.safe_load(Path("specs/scripts/deploy.yaml").read_text())
    with Gateway(ScriptedResponder(Script.from_data(script))) as upstream:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", upstream.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
        recorded = atom(*shlex.split(hint)[1:])
    assert recorded.exit_code == 0, recorded.output
    monkeypatch.delenv("ANTHROPIC_BASE_URL")
    replayed = atom("calibrate", SPEC)
    assert replayed.exit_code == 0, replayed.output
    assert "(judge: replay)" in replayed.output


@pytest.mark.slow
def test_a_sample_the_judge_gives_no_verdict_on_is_named_not_counted_as_a_fail(
    deploy: Path,
) -> None:
    """The judge leaves the criterion out, and again when asked once more: a judge error,
    not its "fail". The sample is named and left out of the figures; nothing is stored."""
    silent = {"score": 0.9, "decision": "proceed", "criteria": [], "feedback": ""}
    folder = Path("specs/calibration/deploy-script")
    (folder / "script.yaml").write_text(
        yaml.safe_dump({"turns": [{"text": "unused"}], "reflector": [{"verdict": silent}] * 2})
    )
    result = atom("calibrate", SPEC, "--json")
    assert result.exit_code == 0, result.output
    (spec,) = json.loads(result.output)
    assert spec["criteria"] == [] and spec["unlabelled"] == []
    (sample,) = (folder / "samples").iterdir()
    assert spec["no_verdict"] == {CRITERION: [sample.name]}
    text = atom("calibrate", SPEC).output
    assert "the judge gave no verdict on 1 sample (not counted), even when asked again" in text
    assert not (folder / "calibration.json").exists()
