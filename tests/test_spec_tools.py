"""Project tools on the agent's PATH (`tools:` in a spec) and `.atom/config.yaml` in pytest."""

from __future__ import annotations

import pytest

GREETER = """\
import sys
from pytest_atom.conversation import status
status("Complete", f"greeted {sys.argv[1]}")
"""


pytestmark = pytest.mark.usefixtures("claude_for_pytester")


def project(pytester: pytest.Pytester, tools: str = "[greeter]") -> None:
    (pytester.path / "tools" / "greeter").mkdir(parents=True)
    (pytester.path / "tools" / "greeter" / "cli.py").write_text(GREETER)
    pytester.makefile(
        ".atom.yaml",
        task=f"name: task\nprompt: greet\nscript: s.yaml\ntools: {tools}\n"
        "accept:\n  - file_contains: {path: out.txt, pattern: '## Status: Complete'}\n",
    )
    (pytester.path / "s.yaml").write_text(
        "turns:\n  - tool_use: [{name: Bash, input: {command: 'greeter world > out.txt'}}]\n"
        "  - text: EXIT_LOOP_NOW\n"
    )


@pytest.mark.slow
def test_spec_tools_are_commands_for_the_agent(pytester: pytest.Pytester) -> None:
    project(pytester)
    pytester.runpytest("--atom").assert_outcomes(passed=1)
    [run] = (pytester.path / ".atom" / "runs").iterdir()
    assert "greeted world" in (run / "attempts" / "a01" / "out.txt").read_text()


def test_unknown_tool_names_the_tools_folders(pytester: pytest.Pytester) -> None:
    project(pytester, tools="[greeter, missing]")
    result = pytester.runpytest("--atom")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*spec 'task' lists tools [[]'missing'] that are not in the project's tools folders*"]
    )


@pytest.mark.slow
def test_config_record_mode_is_the_default_and_errors_are_usage_errors(
    pytester: pytest.Pytester,
) -> None:
    project(pytester)
    (pytester.path / ".atom").mkdir()
    (pytester.path / ".atom" / "config.yaml").write_text("record_mode: all\n")
    pytester.runpytest("--atom").assert_outcomes(passed=1)
    assert (pytester.path / "cassettes" / "task" / "task.yaml").exists()  # recorded from its script
    (pytester.path / ".atom" / "config.yaml").write_text("record_mod: all\n")
    result = pytester.runpytest("--atom")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown key 'record_mod'*did you mean 'record_mode'?*"])
