"""A `pass_env:` secret at every edge a run's cuts have, through a real run's outputs.

One scripted spec run through pytest (the real CLI and gateway), its agent's turn, its tool
call, the file it writes and its two failing checks each holding the secret at the start,
the end, and across the cut that shows it (a check's 4,096-character excerpt, a transcript
turn's and a file's middle clip, a tool call's 300-character line); then `atom label` takes a
sample of the run, a file meant to be committed. The terminal, JUnit, HTML, the traces, the
results, the cassette and the sample must hold no piece of the secret.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from pytest_atom.calibration.taking import FILE_LIMIT, TURN_LIMIT
from pytest_atom.checks.evidence import EXCERPT_BYTES
from tests.calibration_helpers import atom
from tests.edge_secret_helpers import BEFORE_CUT, NAME, SECRET, at_edges, pieces_in
from tests.helpers import bash

CRITERION = "big.txt is a copy of big.src."
SPEC = f"""\
name: edges
prompt: Copy big.src to big.txt.
workspace: workspace
script: scripts/edges.yaml
attempts: 1
timeout: 300
pass_env: [{NAME}]
criteria:
  - {CRITERION}
accept:
  - command: {{run: "cat tailed.txt; exit 1"}}
  - file_contains: {{path: big.txt, pattern: never-there}}
"""
TAILED = EXCERPT_BYTES + 1500
BIG = FILE_LIMIT + 6000


def _command() -> str:
    """The agent's copy command, with the secret across the 300th character of its input
    as a tool call's line shows it (its JSON)."""
    start = "cp big.src big.txt # "
    opening = len(json.dumps({"command": start}, ensure_ascii=False)) - 2  # no `"}`
    return start + "." * (300 - BEFORE_CUT - opening) + SECRET


def _project(root: Path) -> Path:
    workspace = root / "specs" / "workspace"
    workspace.mkdir(parents=True)
    (workspace / "tailed.txt").write_text(at_edges(TAILED, [TAILED - EXCERPT_BYTES]) + "\n")
    keep = FILE_LIMIT // 2
    (workspace / "big.src").write_text(at_edges(BIG, [EXCERPT_BYTES, keep, BIG - keep]))
    turn_keep = TURN_LIMIT // 2
    turn = at_edges(TURN_LIMIT + 1000, [turn_keep, TURN_LIMIT + 1000 - turn_keep])
    command = _command()
    assert json.dumps({"command": command})[300 - BEFORE_CUT :].startswith(SECRET)
    turns = [{**bash(command), "text": turn}, {"text": "Copied.\n\nEXIT_LOOP_NOW"}]
    (root / "specs" / "scripts").mkdir()
    verdict = {
        "score": 0.2,
        "decision": "proceed",
        "criteria": [{"criterion": CRITERION, "met": False, "evidence": "the checks fail"}],
        "feedback": "",
    }
    script = {"turns": turns, "reflector": [{"verdict": verdict}]}
    (root / "specs" / "scripts" / "edges.yaml").write_text(yaml.safe_dump(script))
    (root / "specs" / "edges.atom.yaml").write_text(SPEC)
    (root / ".atom").mkdir()
    (root / ".atom" / "config.yaml").write_text("keep_runs: 0\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_no_piece_of_a_secret_at_a_cut_reaches_any_output(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(NAME, SECRET)
    project = _project(pytester.path / "project")
    monkeypatch.chdir(project)

    result = pytester.runpytest(
        "--atom",
        "specs",
        "-p",
        "no:cacheprovider",
        "--atom-record-mode=all",
        "--junitxml=junit.xml",
        "--atom-report=reports",
        "--atom-html=report.html",
    )
    result.assert_outcomes(failed=1)
    terminal = result.stdout.str() + result.stderr.str()
    assert "never-there" in terminal and "<SECRET:" in terminal  # the evidence is shown

    (run,) = (project / ".atom" / "runs").glob("edges-*")
    labelled = atom("label", run, "specs/edges.atom.yaml", "--fail")
    assert labelled.exit_code == 0, labelled.output
    (sample,) = (project / "specs" / "calibration" / "edges" / "samples").glob("*.yaml")
    seen = yaml.safe_load(sample.read_text())["attempt"]
    assert "big.txt" in seen["files"] and "clipped here" in seen["files"]["big.txt"]
    assert "clipped here" in seen["transcript"][0]["text"]
    assert seen["transcript"][0]["tools"][0].endswith("…")

    # Every file the run and the label wrote; not the inputs (the workspace and the script
    # hold the secret on purpose) nor the attempt, which is the agent's own copy.
    inputs = [project / "specs" / "workspace", project / "specs" / "scripts"]
    written = [
        p
        for p in project.rglob("*")
        if p.is_file()
        and not p.is_symlink()
        and ".git" not in p.relative_to(project).parts
        and "attempts" not in p.relative_to(project).parts
        and not any(p.is_relative_to(i) for i in inputs)
    ]
    for expected in (project / "junit.xml", project / "report.html", sample):
        assert expected in written, expected
    assert any(p.parent == project / "reports" and p.suffix == ".json" for p in written)
    texts = {"terminal": terminal, "atom label's output": labelled.output}
    texts |= {
        str(p.relative_to(project)): p.read_bytes().decode("utf-8", "replace") for p in written
    }
    leaks = {where: len(found) for where, text in texts.items() if (found := pieces_in(text))}
    assert leaks == {}
