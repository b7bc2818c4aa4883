"""The GitHub Action (action.yml): its metadata against its scripts, and the scripts run as
plain shell steps on the shipped fixtures, as .ci/run runs them (docs/how-to/ci.md)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_atom import CLAUDE_CODE_VERSION
from tests.helpers import REPO

ACTION = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
STEPS: list[dict[str, Any]] = ACTION["runs"]["steps"]
RUN_STEPS = [step for step in STEPS if "run" in step]
SCRIPT = re.compile(r'^bash "\$GITHUB_ACTION_PATH/(action/[a-z]+\.sh)"$')


def _script(step: dict[str, Any]) -> Path:
    found = SCRIPT.match(step["run"])
    assert found, f"a run step calls one script of action/: {step['run']!r}"
    return REPO / found[1]


def test_each_run_step_calls_a_script_that_exists() -> None:
    assert ACTION["runs"]["using"] == "composite"
    assert len(RUN_STEPS) == 5
    for step in RUN_STEPS:
        assert _script(step).is_file()
        assert step["shell"] == "bash"


def test_the_inputs_referenced_are_declared_and_each_declared_one_used() -> None:
    text = (REPO / "action.yml").read_text(encoding="utf-8")
    used = set(re.findall(r"inputs\.([a-z-]+)", text))
    assert used == set(ACTION["inputs"])


def test_the_steps_referenced_exist() -> None:
    text = (REPO / "action.yml").read_text(encoding="utf-8")
    ids = {step["id"] for step in STEPS if "id" in step}
    assert set(re.findall(r"steps\.([a-z-]+)\.", text)) <= ids


def test_each_script_gets_the_variables_it_reads() -> None:
    for step in RUN_STEPS:
        script = _script(step).read_text(encoding="utf-8")
        read = set(re.findall(r"\$\{?(ATOM_[A-Z_]+)", script))
        assert read <= set(step.get("env", {})), _script(step).name


def test_the_summary_step_appends_the_summary_and_the_report_link(tmp_path: Path) -> None:
    (tmp_path / "summary.md").write_text("| spec | outcome |\n", encoding="utf-8")
    target = tmp_path / "step-summary.md"
    target.write_text("earlier step\n", encoding="utf-8")
    env = os.environ | {
        "GITHUB_STEP_SUMMARY": str(target),
        "ATOM_OUT": str(tmp_path),
        "ATOM_ARTIFACT_URL": "https://example.invalid/artifacts/1",
    }
    subprocess.run(["bash", REPO / "action" / "summary.sh"], env=env, check=True)
    assert target.read_text(encoding="utf-8") == (
        "earlier step\n| spec | outcome |\n\n"
        "[HTML report, traces and run folders](https://example.invalid/artifacts/1)\n"
    )
    (tmp_path / "summary.md").unlink()
    subprocess.run(["bash", REPO / "action" / "summary.sh"], env=env, check=True)
    assert "pytest-atom wrote no summary" in target.read_text(encoding="utf-8")


def _step(name: str, folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", REPO / "action" / f"{name}.sh"],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


@pytest.mark.slow
def test_the_steps_on_the_shipped_fixtures(tmp_path: Path, claude_bin: Path) -> None:
    """Install, set up, run, summary and comment, as the action runs them, offline, on one
    shipped spec (.ci/run runs them on all of them).

    Needs the Markdown summary: `pytest --atom-markdown PATH` (the run step) and
    `atom diff --markdown` (the comment step)."""
    shutil.copytree(REPO / "fixtures" / "specs", tmp_path / "specs")
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "GITHUB_"))}
    env |= {
        "ATOM_CLAUDE_BIN": str(claude_bin),
        "GITHUB_OUTPUT": str(tmp_path / "github-output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "step-summary.md"),
        "ATOM_PACKAGE": "pytest-atom",  # installed: pip finds it satisfied, offline
        "ATOM_OUT": str(out),
        "ATOM_HISTORY": ".atom/history.db",
        "ATOM_SPECS": "specs/create_file.atom.yaml",
        "ATOM_PYTEST_ARGS": "-p no:cacheprovider",
    }
    for name in ("install", "setup", "run"):
        done = _step(name, tmp_path, env)
        assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "github-output").read_text() == f"claude-code={CLAUDE_CODE_VERSION}\n"
    assert (tmp_path / ".atom" / "history.db").is_file()
    assert (out / "report.html").is_file()
    assert any((out / "traces").iterdir())
    assert any((out / "runs").iterdir())
    summary = (out / "summary.md").read_text(encoding="utf-8")
    assert summary

    one_run = _step("comment", tmp_path, env)
    assert (one_run.returncode, one_run.stdout[:35]) == (0, "::notice title=pytest-atom::no comp")

    done = _step("run", tmp_path, env)
    assert done.returncode == 0, done.stdout + done.stderr
    done = _step("summary", tmp_path, env | {"ATOM_ARTIFACT_URL": ""})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "step-summary.md").read_text(encoding="utf-8") == (
        out / "summary.md"
    ).read_text(encoding="utf-8")
    done = _step("comment", tmp_path, env)
    assert (done.returncode, done.stdout) == (
        0,
        f"not a pull request: the comparison is in {out / 'comment.md'}, not posted\n",
    )
    assert (out / "comment.md").read_text(encoding="utf-8").strip()
