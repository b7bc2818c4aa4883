"""Project tools on the agent's PATH (`tools:` in a spec) and `.atom/config.yaml` in pytest.

The agent's run is the shared one of tests/project_run_helpers.py: its spec lists the
project's `greeter` tool, and its `.atom/config.yaml` says `record_mode: all`.
"""

from __future__ import annotations

import pytest

from tests.helpers import Scenario
from tests.project_run_helpers import armed_project


@pytest.mark.slow
def test_spec_tools_are_commands_for_the_agent(armed: Scenario) -> None:
    """The sandboxed arm's agent ran `greeter world`, and its check read what it printed."""
    assert armed.runs["run"].outcomes["passed"] == 1
    [run] = (armed.project / ".atom" / "runs").glob("greet-with-skill-*")
    assert "greeted world" in (run / "attempts" / "a01" / "out.txt").read_text()


@pytest.mark.usefixtures("claude_for_pytester")
def test_unknown_tool_names_the_tools_folders(pytester: pytest.Pytester) -> None:
    spec = armed_project(pytester.path)
    spec.write_text(spec.read_text().replace("tools: [greeter]", "tools: [greeter, missing]"))
    result = pytester.runpytest("--atom")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        ["*spec 'greet[[]with-skill]' lists tools [[]'missing'] that are not in the project's *"]
    )


@pytest.mark.slow
def test_config_record_mode_is_the_default(armed: Scenario) -> None:
    """No --atom-record-mode: the config file's `all` recorded each arm from its script."""
    assert (armed.project / ".atom" / "config.yaml").read_text() == "record_mode: all\n"
    assert sorted(p.name for p in (armed.project / "cassettes" / "a").iterdir()) == [
        "greet@with-skill.yaml",
        "greet@without-skill.yaml",
    ]


@pytest.mark.usefixtures("claude_for_pytester")
def test_config_errors_are_usage_errors(pytester: pytest.Pytester) -> None:
    armed_project(pytester.path, config="record_mod: all\n")
    result = pytester.runpytest("--atom")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unknown key 'record_mod'*did you mean 'record_mode'?*"])
