"""One small project run through every front end that reads or writes the history store:
`atom diff`, `atom rescore`, ``--atom-last-failed`` and the HTML report's history all read
what it left (tests/history/test_history_cli.py), so its sessions run once per test session.

Two scripted specs (no cassette: the scripts answer): `greet` passes; `wrong` writes
"goodbye" where its check wants "hello", and fails. The steps, each a real command:

1. ``atom run specs``: run 1 (greet passed, wrong failed);
2. `wrong` is fixed (its script now writes the greeting, with one more call), and
   ``pytest --atom --atom-last-failed --atom-html report.html`` runs only it: run 2;
3. `greet`'s criterion is changed and its script's reflector now finds it unmet, and
   ``atom rescore RUN1 greet`` judges run 1's attempt again, behind a counting `claude`;
4. ``atom diff`` (run 1 against run 2), and ``atom diff RUN1 RESCORE --json``;
5. ``atom run specs --last-failed``: the rescore's failure (greet) runs again, alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import REPO, counting_claude

__all__ = ["build_history_project"]

GREET = """\
name: greet
prompt: |
  Create a file named hello.txt in the current folder containing exactly one line:
  hello, world
script: scripts/greet.yaml
max_iterations: 3
timeout: 120
criteria:
  - {criterion}
accept:
  - file_exists: hello.txt
  - file_contains: {{path: hello.txt, pattern: "^hello, world$"}}
"""

WRONG_SCRIPT = """\
turns:
  - text: Writing it.
    tool_use:
      - name: Bash
        input: {command: "printf 'goodbye, world\\\\n' > hello.txt", description: Write}
  - text: "Done.\\n\\nEXIT_LOOP_NOW"
reflector:
  - verdict:
      score: 0.2
      decision: proceed
      criteria:
        - criterion: hello.txt greets.
          met: false
          evidence: It says goodbye.
      feedback: ""
      flaky: []
"""

UNMET = """\
reflector:
  - verdict:
      score: 0.3
      decision: refine
      criteria:
        - criterion: hello.txt is written in French.
          met: false
          evidence: It says "hello, world", in English.
      feedback: Write it in French.
      flaky: []
"""


def _atom() -> str:
    return str(Path(sys.executable).parent / "atom")


def _run(command: list[str], project: Path, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        command, cwd=project, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    return {"command": command, "code": done.returncode, "out": done.stdout + done.stderr}


def _latest(project: Path) -> list[str]:
    from pytest_atom.history.store import open_store

    store = open_store(project / ".atom" / "history.db")
    try:
        return [r.id for r in store.runs(limit=None)]
    finally:
        store.close()


def build_history_project(folder: Path, claude_bin: Path) -> None:
    """Play the steps of the module docstring in `folder`/project; write steps.json."""
    project = folder / "project"
    specs = project / "specs"
    (specs / "scripts").mkdir(parents=True)
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / ".atom").mkdir()
    script = (REPO / "fixtures" / "specs" / "scripts" / "create_file.yaml").read_text()
    (specs / "scripts" / "greet.yaml").write_text(script)
    (specs / "scripts" / "wrong.yaml").write_text(WRONG_SCRIPT)
    (specs / "greet.atom.yaml").write_text(
        GREET.format(criterion='hello.txt holds the greeting "hello, world" and nothing else.')
    )
    wrong = GREET.replace("name: greet", "name: wrong").replace("greet.yaml", "wrong.yaml")
    (specs / "wrong.atom.yaml").write_text(wrong.format(criterion="hello.txt greets."))
    env = {**os.environ, "ATOM_CLAUDE_BIN": str(claude_bin)}
    env.pop("PYTEST_ADDOPTS", None)
    steps: dict[str, Any] = {"first": _run([_atom(), "run", "specs"], project, env)}
    (run1,) = _latest(project)
    # wrong, fixed: the greeting, written and then shown (a second call)
    (specs / "scripts" / "wrong.yaml").write_text(script)
    steps["last_failed"] = _run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--atom",
            "specs",
            "--atom-last-failed",
            "-p",
            "no:cacheprovider",
            "--atom-html",
            "report.html",
            "-rA",
        ],
        project,
        env,
    )
    run2 = _latest(project)[0]
    (specs / "greet.atom.yaml").write_text(
        GREET.format(criterion="hello.txt is written in French.")
    )
    (specs / "scripts" / "greet.yaml").write_text(script.split("reflector:")[0] + UNMET)
    counted, log = counting_claude(folder / "counted", claude_bin)
    steps["rescore"] = _run(
        [_atom(), "rescore", run1, "greet"], project, {**env, "ATOM_CLAUDE_BIN": str(counted)}
    )
    steps["rescore_sessions"] = log.read_text().splitlines() if log.exists() else []
    rescored = _latest(project)[0]
    steps["diff"] = _run([_atom(), "diff"], project, env)
    steps["diff_named"] = _run([_atom(), "diff", run1, run2], project, env)
    steps["diff_rescore"] = _run([_atom(), "diff", run1, rescored, "--json"], project, env)
    # the rescore is now the last run: greet failed in it, so only greet runs again
    steps["atom_run_last_failed"] = _run([_atom(), "run", "specs", "--last-failed"], project, env)
    steps["ids"] = {"run1": run1, "run2": run2, "rescore": rescored}
    (folder / "steps.json").write_text(json.dumps(steps, indent=2))
    shutil.copy(project / "report.html", folder / "report.html")
