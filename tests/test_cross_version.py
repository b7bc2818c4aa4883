"""Cassettes across Claude Code releases: the real CLIs (the pin, the release before it and
2.1.197), pytester runs.

Matching follows ownership: the conversation decides, what Claude Code wraps it in is
drift. These tests replay in both directions, refresh, and prove that what the user owns
(the prompt, ATOM.md, the tools a recording calls) still decides.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.agents.claude_code.cli import CLAUDE_CODE_VERSION, cached_claude
from tests.helpers import OLD_CLI, REPO, ShippedRun

pytestmark = [pytest.mark.usefixtures("claude_for_pytester"), pytest.mark.slow]

OLD = REPO / "tests" / "data" / "cli_2_1_197"
CASSETTE = Path("cassettes/create_file/create-file.yaml")
STRICT_INI = "[pytest]\nfilterwarnings = error\n"


@pytest.fixture
def old_project(pytester: pytest.Pytester) -> Path:
    """A copy of the 2.1.197 cassette and its spec, as a user of release 0.1 has them."""
    for item in OLD.iterdir():
        if item.is_dir():
            shutil.copytree(item, pytester.path / item.name)
        else:
            shutil.copy(item, pytester.path / item.name)
    pytester.makefile(".ini", pytest=STRICT_INI)
    return pytester.path


def test_old_cassette_replays_on_the_pinned_cli_with_one_drift_line(
    pytester: pytest.Pytester, old_project: Path
) -> None:
    result = pytester.runpytest("--atom", "--junitxml=junit.xml", "--atom-report=traces")
    result.assert_outcomes(passed=1)  # under filterwarnings = error: drift is no warning
    result.stdout.fnmatch_lines(
        [
            f"drift: create_file.atom.yaml::create-file: recorded with Claude Code {OLD_CLI}, "
            f"replayed with {CLAUDE_CODE_VERSION}: model claude-opus-4-8 → *, tools *"
            "; 4 requests: 0 identical, 4 matched on the conversation"
        ]
    )
    assert result.stdout.str().count("drift: ") == 1
    junit = (old_project / "junit.xml").read_text()
    assert f'name="atom_drift" value="recorded with Claude Code {OLD_CLI}' in junit
    trace = old_project / "traces" / "create_file" / "create-file.json"
    drift = json.loads(trace.read_text())["atom"]["drift"]
    assert drift.startswith(f"recorded with Claude Code {OLD_CLI}, replayed with ")


#: The release before the pin: the other end of an ordinary upgrade.
PREVIOUS_CLI = "2.1.331"
#: Every shipped spec and how its replay ends, whichever Claude Code replays it.
SHIPPED = {
    "specs/configured.atom.yaml::configured": "passed",
    "specs/create_file.atom.yaml::create-file": "passed",
    "specs/fix_failing_test.atom.yaml::fix-failing-test": "passed",
    "specs/misses_goal.atom.yaml::misses-goal": "xfailed",
    "specs/planned.atom.yaml::planned": "passed",
    "specs/replanned.atom.yaml::replanned": "passed",
    "specs/rollback_steps.atom.yaml::rollback-steps": "passed",
    "specs/two_steps.atom.yaml::two-steps": "passed",
    "examples/code_reviewer/specs/review.atom.yaml::review-finds-sql-injection": "passed",
    "examples/sdk_agent/count_words.atom.yaml::counts-words-with-its-tool": "passed",
}


@pytest.fixture(scope="session")
def other_clis(old_claude_bin: Path) -> dict[str, Path]:
    """The release before the pin and 2.1.197, found before pytester moves HOME."""
    previous = cached_claude(PREVIOUS_CLI)
    if not previous.exists():
        pytest.fail(
            f"Claude Code {PREVIOUS_CLI} is not installed; run: atom setup --version {PREVIOUS_CLI}"
        )
    return {PREVIOUS_CLI: previous, OLD_CLI: old_claude_bin}


def test_the_shipped_cassettes_are_the_pinned_clis(shipped_run: ShippedRun) -> None:
    """The shipped fixtures replay with the pin as they were refreshed: no drift line."""
    for spec, outcome in SHIPPED.items():
        if spec.startswith("specs/"):
            assert re.search(rf"^{re.escape(spec)} +{outcome} ", shipped_run.output, re.M), spec
    assert "drift:" not in shipped_run.output


@pytest.mark.parametrize("version", [PREVIOUS_CLI, OLD_CLI])
def test_every_shipped_spec_replays_with_another_release(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    other_clis: dict[str, Path],
    version: str,
) -> None:
    """Every shipped spec (the fixtures and the examples; `configured` with its skill, hook
    and MCP server among them), in one run with the release before the pin and with 2.1.197,
    in the default match mode: the same outcomes, and one honest drift line each at most."""
    shutil.copytree(REPO / "fixtures" / "specs", pytester.path / "specs")
    shutil.copytree(REPO / "examples", pytester.path / "examples")
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(other_clis[version]))
    result = pytester.runpytest("--atom", "specs", "examples", "-n", "2", "-p", "no:cacheprovider")
    out = result.stdout.str()
    outcomes = list(SHIPPED.values())
    result.assert_outcomes(passed=outcomes.count("passed"), xfailed=outcomes.count("xfailed"))
    for spec, outcome in SHIPPED.items():
        assert re.search(rf"^{re.escape(spec)} +{outcome} ", out, re.M), spec
        drift = re.findall(rf"^drift: {re.escape(spec)}: (.*)$", out, re.M)
        assert len(drift) <= 1, drift
        for line in drift:  # what changed is Claude Code's: said once, with both versions
            assert line.startswith(
                f"recorded with Claude Code {CLAUDE_CODE_VERSION}, replayed with {version}: "
            ), line
    assert "diverged" not in out and "does not offer" not in out


def test_changed_prompt_still_diverges_and_says_why(
    pytester: pytest.Pytester, old_project: Path
) -> None:
    spec = old_project / "create_file.atom.yaml"
    spec.write_text(spec.read_text().replace("hello, world\n", "hello, moon\n", 1))
    result = pytester.runpytest("--atom")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*replay diverged from the cassette (* matched nothing recorded); likely "
            "cause: spec changed since recording: re-record it with: pytest --atom "
            "'create_file.atom.yaml::create-file' --atom-record-mode=all",
            "*the closest recorded conversation differs at:",
            "*      recorded *\\nhello, [[]world[]]",
            "*      live     *\\nhello, [[]moon[]]",
        ]
    )
    # The conversation itself differs: the other Claude Code version is not to blame.
    assert "another Claude Code version" not in result.stdout.str()


def test_changed_atom_prompt_diverges(pytester: pytest.Pytester, old_project: Path) -> None:
    """ATOM.md is the user's: a project override of it is a new conversation."""
    prompts = old_project / ".atom" / "prompts"
    prompts.mkdir(parents=True)
    shipped = (REPO / "prompts" / "ATOM.md").read_text()
    (prompts / "ATOM.md").write_text(shipped.replace("You are an autonomous", "You are a careful"))
    result = pytester.runpytest("--atom")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*likely cause: the conversation differs from the recording (below)",
            "*      recorded *You are [[]an autonomous[]] software*",
            "*      live     *You are [[]a careful[]] software*",
        ]
    )
    assert "another Claude Code version" not in result.stdout.str()


def test_refresh_then_strict_replay(pytester: pytest.Pytester, old_project: Path) -> None:
    before = (old_project / CASSETTE).read_bytes()
    diverged = pytester.runpytest("--atom", "--atom-match=strict")
    assert diverged.ret == 1
    diverged.stdout.fnmatch_lines(
        [
            f"*likely cause: recorded with another Claude Code version ({OLD_CLI}; this run "
            f"{CLAUDE_CODE_VERSION}), and strict matching compares Claude Code's own parts of "
            "the request too; refresh the cassette for this CLI with: pytest --atom "
            "'create_file.atom.yaml::create-file' --atom-record-mode=refresh"
        ]
    )
    refreshed = CliRunner().invoke(main, ["cassette", "refresh", "create_file.atom.yaml"])
    assert refreshed.exit_code == 0, refreshed.output
    assert "create-file: refreshed cassettes/create_file/create-file.yaml" in refreshed.output
    after = (old_project / CASSETTE).read_text()
    assert after.encode() != before
    metadata = yaml.safe_load(after)["metadata"]
    assert metadata["claude_code_version"] == CLAUDE_CODE_VERSION
    assert metadata["refreshed_from"] == OLD_CLI and metadata["refreshed_at"]
    strict = pytester.runpytest("--atom", "--atom-match=strict")
    strict.assert_outcomes(passed=1)
    assert "drift:" not in strict.stdout.str()


def test_refresh_refuses_a_diverging_conversation(
    pytester: pytest.Pytester, old_project: Path
) -> None:
    before = (old_project / CASSETTE).read_bytes()
    spec = old_project / "create_file.atom.yaml"
    spec.write_text(spec.read_text().replace("hello, world\n", "hello, moon\n", 1))
    refreshed = CliRunner().invoke(main, ["cassette", "refresh", "create_file.atom.yaml"])
    assert refreshed.exit_code == 1
    assert "create-file: not refreshed: the replay diverged" in refreshed.output
    assert "likely cause: spec changed since recording" in refreshed.output
    assert (old_project / CASSETTE).read_bytes() == before
