"""One `pytest --atom` run of a small project that several test modules read.

The project has a spec with two arms, a project tool on the agent's PATH (`tools:`), a
`.atom/config.yaml` that makes recording the default, and an arm run without Claude Code's
sandbox. Its run records both arms' cassettes and writes JUnit, the HTML page and the report
folder: tests/spec/test_arms.py, tests/run/test_spec_tools.py and tests/agents/test_sandbox.py read it, so
the two agent sessions run once for all of them.

The run is pytester's, in the process of the test that builds it first (so it counts
towards coverage); what it left is copied into a folder shared by the whole session
(`tests.helpers.pytester_once`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import Scenario, pytester_once, write

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


def armed_run(tmp_path_factory: pytest.TempPathFactory, pytester: pytest.Pytester) -> Scenario:
    """The project as its run left it (outputs, run folders, cassettes) and the run
    (`runs["run"]`); run once per session, under `claude_for_pytester`."""

    def play(inner: pytest.Pytester) -> dict[str, pytest.RunResult]:
        armed_project(inner.path)
        return {"run": inner.runpytest(*RUN_ARGS)}

    return pytester_once(pytester, tmp_path_factory, "armed-project", play)
