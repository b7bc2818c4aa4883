"""A small project for `atom label` and `atom calibrate`: a scripted spec whose agent writes
a deploy script holding a token, run once per session through the real CLI."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from atom_cli.main import main
from tests.helpers import REPO

#: A GitHub token's shape: what the scrubber must keep out of every sample and cassette.
TOKEN = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
CRITERION = "deploy.sh exports GITHUB_TOKEN and runs make deploy."
SPEC = "specs/deploy.atom.yaml"
EXAMPLE = REPO / "examples" / "calibration"

_SPEC = f"""\
name: deploy-script
prompt: Write deploy.sh that exports the token and runs make deploy.
workspace: workspace
script: scripts/deploy.yaml
timeout: 120
criteria:
  - {CRITERION}
accept:
  - file_exists: deploy.sh
  - file_contains: {{path: deploy.sh, pattern: "make deploy"}}
"""
_SCRIPT = f"""\
turns:
  - text: Writing deploy.sh.
    tool_use:
      - name: Bash
        input:
          command: "printf 'export GITHUB_TOKEN={TOKEN}\\\\nmake deploy\\\\n' > deploy.sh"
  - text: "deploy.sh is written.\\n\\nEXIT_LOOP_NOW"
reflector:
  - verdict:
      score: 0.9
      decision: proceed
      criteria:
        - {{criterion: "{CRITERION}", met: true, evidence: "deploy.sh has both lines."}}
      feedback: ""
"""


def atom(*args: str | Path) -> Result:
    """`atom ARGS` in the working folder, as a person types it (click's runner, in process)."""
    return CliRunner().invoke(main, [str(a) for a in args])


def build_deploy_project(folder: Path) -> None:
    """The project, and one `atom run` of its spec (the executor and the judge scripted)."""
    (folder / ".atom").mkdir()
    (folder / ".atom" / "config.yaml").write_text("keep_runs: 0\n")
    (folder / "specs" / "workspace").mkdir(parents=True)
    (folder / "specs" / "workspace" / "README.md").write_text("Deploys with make.\n")
    (folder / "specs" / "scripts").mkdir()
    (folder / "specs" / "scripts" / "deploy.yaml").write_text(_SCRIPT)
    (folder / SPEC).write_text(_SPEC)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        result = atom("run", SPEC)
    assert result.exit_code == 0, result.output


def run_folder(project: Path) -> Path:
    """The one run's folder (beside it, the session's results file, `last-run.json`)."""
    (found,) = (p for p in (project / ".atom" / "runs").iterdir() if p.is_dir())
    return found


def copy_example(tmp_path: Path) -> Path:
    """The shipped calibration example, in a folder of the test's own."""
    target = tmp_path / "calibration"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns(".atom", "make_samples.py"))
    return target
