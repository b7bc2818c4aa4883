"""One `pytest --atom` run of a small project that several test modules read.

The project has a spec with two arms, a project tool on the agent's PATH (`tools:`), a
`.atom/config.yaml` that makes recording the default, and an arm run without Claude Code's
sandbox. Its run records both arms' cassettes and writes JUnit, the HTML page and the report
folder: tests/test_arms.py, tests/test_spec_tools.py and tests/test_sandbox.py read it, so
the two agent sessions run once for all of them.

The run is pytester's, in the process of the test that builds it first (so it counts
towards coverage); what it left is copied into a folder shared by the whole session.
"""

from __future__ import annotations

import json
import shutil
from functools import partial
from pathlib import Path

import pytest

from tests.helpers import once_per_session, write

GREETER = """\
import sys
from pytest_atom.conversation import status
status("Complete", f"greeted {sys.argv[1]}")
"""

#: A scripted spec whose second arm fails its check and runs without the sandbox: the
#: arms differ for certain. Each arm's agent runs the project's `greeter` tool.
TWO_ARMS = """\
name: greet
prompt: p
script: s.yaml
tools: [greeter]
accept:
  - command: {run: "true"}
  - file_contains: {path: out.txt, pattern: '## Status: Complete'}
arms:
  with-skill: {}
  without-skill:
    accept: [{command: {run: "false"}}]
    sandbox: false
"""

SCRIPT = (
    "turns:\n  - tool_use: [{name: Bash, input: {command: 'greeter world > out.txt'}}]\n"
    "  - text: EXIT_LOOP_NOW\n"
)

#: What the run was given on its command line.
RUN_ARGS = (
    "--atom", "-v", "-p", "no:cacheprovider", "--junitxml=j.xml", "--atom-html=r.html",
    "--atom-report=traces",
)  # fmt: skip


def armed_project(root: Path, config: str = "record_mode: all\n") -> Path:
    """The project's files in `root`; the spec's path."""
    write(root / "tools" / "greeter" / "cli.py", GREETER)
    write(root / ".atom" / "config.yaml", config)
    write(root / "s.yaml", SCRIPT)
    return write(root / "a.atom.yaml", TWO_ARMS)


def _run_armed_project(folder: Path, pytester: pytest.Pytester, claude_bin: Path) -> None:
    armed_project(pytester.path)
    with pytest.MonkeyPatch.context() as patch:  # as `claude_for_pytester` does, for the run
        patch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
        result = pytester.runpytest(*RUN_ARGS)
    (pytester.path / "stdout.txt").write_text(result.stdout.str(), encoding="utf-8")
    (pytester.path / "outcomes.json").write_text(json.dumps(result.parseoutcomes()))
    shutil.copytree(pytester.path, folder, symlinks=True, dirs_exist_ok=True)


def armed_run(
    tmp_path_factory: pytest.TempPathFactory, pytester: pytest.Pytester, claude_bin: Path
) -> Path:
    """The folder the project ran in (its outputs, run folders and cassettes), with the
    run's stdout (stdout.txt) and outcomes (outcomes.json); run once per session.

    Not under `claude_for_pytester`: it drops xdist's variables, by which `once_per_session`
    knows that workers share the scenario; the run drops them itself.
    """
    build = partial(_run_armed_project, pytester=pytester, claude_bin=claude_bin)
    return once_per_session(tmp_path_factory, "armed-project", build)


def stdout_of(folder: Path) -> pytest.LineMatcher:
    """The run's stdout, to match lines against."""
    return pytest.LineMatcher((folder / "stdout.txt").read_text(encoding="utf-8").splitlines())


def outcomes_of(folder: Path) -> dict[str, int]:
    return dict(json.loads((folder / "outcomes.json").read_text(encoding="utf-8")))
