"""Cassettes across Claude Code releases: the real CLIs (the pin, the release before it and
2.1.197), pytester runs and shared replays (tests/versions_helpers.py).

Matching follows ownership: the conversation decides, what Claude Code wraps it in is
drift. These tests replay in both directions, refresh, and prove that what the user owns
(the prompt, ATOM.md, the tools a recording calls) still decides. What a divergence is
blamed on is shown on the real cassettes at the gateway (no CLI) too.
"""

from __future__ import annotations

import json
import re
import shutil
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from pytest_atom.agents.claude_code.cli import CLAUDE_CODE_VERSION, cached_claude
from pytest_atom.gateway import Gateway
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.matchers import matcher_for
from pytest_atom.replay.normalize import Normalizer
from pytest_atom.replay.recording import ModelSource, divergence_report
from pytest_atom.replay.responder import CassetteResponder
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.settings.modes import MatchMode
from pytest_atom.spec_loader.load import load_specs
from tests.cli_starts import wrapped
from tests.helpers import OLD_CLI, REPO, ShippedRun, once_per_session
from tests.versions_helpers import (
    CASSETTE,
    STRICT_INI,
    TICKETS_SERVER,
    copy_old_project,
    refresh_old_project,
)

SHIPPED_CREATE_FILE = REPO / "fixtures" / "specs" / "cassettes" / "create_file" / "create-file.yaml"


@pytest.fixture(scope="session")
def old_refreshed(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Path:
    """`atom cassette refresh` of the 2.1.197 cassette with the pinned CLI, once per session:
    its output.txt and exit_code, the cassette before.yaml and the project/ after."""
    build = partial(refresh_old_project, claude_bin=claude_bin)
    return once_per_session(tmp_path_factory, "old-project-refreshed", build)


@pytest.mark.slow
def test_old_cassette_replays_on_the_pinned_cli_with_one_drift_line(old_refreshed: Path) -> None:
    """The pin replays the 2.1.197 cassette matched on the conversation (a refresh is that
    replay, then rewrites the requests) and says its drift once, naming both versions. How
    pytest --atom reports a drift (terminal, JUnit, trace, no warning): the replays with
    another release below."""
    out = (old_refreshed / "output.txt").read_text(encoding="utf-8")
    assert (old_refreshed / "exit_code").read_text() == "0", out
    assert out.startswith(f"create-file: refreshed {CASSETTE}\n"), out
    pattern = (
        f"^  recorded with Claude Code {OLD_CLI}, replayed with {CLAUDE_CODE_VERSION}: "
        "model claude-opus-4-8 → .*, tools .*"
        "; 4 requests: 0 identical, 4 matched on the conversation$"
    )
    assert re.search(pattern, out, re.M), out
    assert out.count("recorded with Claude Code") == 1 and "note:" not in out


#: The shipped trigger suite's prompts (examples/skill_triggers/specs/prompts.csv).
TRIGGER_PROMPTS = [
    row.split(",", 1)[0]
    for row in (REPO / "examples/skill_triggers/specs/prompts.csv").read_text().splitlines()[1:]
]
#: The release before the pin: the other end of an ordinary upgrade.
PREVIOUS_CLI = "2.1.332"
#: Every shipped spec and how its replay ends, whichever Claude Code replays it.
SHIPPED = {
    "specs/configured.atom.yaml::configured": "passed",
    "specs/create_file.atom.yaml::create-file": "passed",
    "specs/fix_failing_test.atom.yaml::fix-failing-test": "passed",
    **{
        f"specs/greetings.atom.yaml::greetings[{case}]": "passed"
        for case in ("english", "french", "german", "spanish", "italian")
    },
    "specs/misses_goal.atom.yaml::misses-goal": "xfailed",
    "specs/planned.atom.yaml::planned": "passed",
    "specs/replanned.atom.yaml::replanned": "passed",
    "specs/rollback_steps.atom.yaml::rollback-steps": "passed",
    "specs/two_steps.atom.yaml::two-steps": "passed",
    "examples/code_reviewer/specs/review.atom.yaml::review-finds-sql-injection": "passed",
    "examples/sdk_agent/count_words.atom.yaml::counts-words-with-its-tool": "passed",
    # Scripted (its calibration replays its own cassette: `atom calibrate`).
    "examples/calibration/specs/summary.atom.yaml::summary-for-a-manager": "passed",
    # A trigger suite: its three misfired prompts fail their items, its gate passes.
    **{
        f"examples/skill_triggers/specs/release_notes.atom.yaml::release-notes-triggers[{case}]": (
            "failed" if case in ("hotfix-notes", "notes-for-users", "bump-deps") else "passed"
        )
        for case in TRIGGER_PROMPTS
    },
    # A conversation, one task and three personas: each user ends satisfied.
    **{
        f"examples/conversation/specs/colour.atom.yaml::colour[{persona}]": "passed"
        for persona in ("terse", "confused", "adversarial")
    },
}
#: The shipped spec whose replay meets what differs between releases: a skill, a hook, an
#: MCP server (2.1.332 and 2.1.337 speak its 2026-07-28 protocol, 2.1.197 the `initialize`
#: era before it) and its tool deferred behind ToolSearch (reworded by 2.1.332).
CONFIGURED = "specs/configured.atom.yaml::configured"


@pytest.fixture(scope="session")
def other_clis(old_claude_bin: Path) -> dict[str, Path]:
    """The release before the pin and 2.1.197 (both counted as the pin is), found before
    pytester moves HOME."""
    previous = cached_claude(PREVIOUS_CLI)
    if not previous.exists():
        pytest.fail(
            f"Claude Code {PREVIOUS_CLI} is not installed; run: atom setup --version {PREVIOUS_CLI}"
        )
    return {PREVIOUS_CLI: wrapped(previous), OLD_CLI: old_claude_bin}


@pytest.mark.slow
def test_the_shipped_cassettes_are_the_pinned_clis(shipped_run: ShippedRun) -> None:
    """The shipped fixtures replay with the pin as they were refreshed: no drift line."""
    for spec, outcome in SHIPPED.items():
        if spec.startswith("specs/"):
            assert re.search(rf"^{re.escape(spec)} +{outcome} ", shipped_run.output, re.M), spec
    assert "drift:" not in shipped_run.output


def assert_replayed_with(out: str, specs: dict[str, str], version: str) -> None:
    """Each of `specs` ended as given, with one honest drift line at most, and no
    divergence: what changed between the releases is Claude Code's, said once."""
    for spec, outcome in specs.items():
        assert re.search(rf"^{re.escape(spec)} +{outcome} ", out, re.M), (spec, out[-4000:])
        drift = re.findall(rf"^drift: {re.escape(spec)}: (.*)$", out, re.M)
        assert len(drift) <= 1, drift
        for line in drift:
            assert line.startswith(
                f"recorded with Claude Code {CLAUDE_CODE_VERSION}, replayed with {version}: "
            ), line
    assert "diverged" not in out and "does not offer" not in out


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
@pytest.mark.parametrize("version", [PREVIOUS_CLI, OLD_CLI])
def test_the_configuration_replays_with_another_release(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    other_clis: dict[str, Path],
    version: str,
) -> None:
    """`configured` with the release before the pin and with 2.1.197, its MCP server's file
    gone, in the default match mode: it passes with its skill fired, its deferred MCP tool
    answered by the stand-in in that release's protocol, and its hook's refusal."""
    specs = pytester.path / "specs"
    shutil.copytree(REPO / "fixtures" / "specs", specs)
    (specs / TICKETS_SERVER).unlink()
    pytester.makefile(".ini", pytest=STRICT_INI)  # under filterwarnings = error
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(other_clis[version]))
    result = pytester.runpytest(
        "--atom",
        "specs/configured.atom.yaml",
        "--junitxml=junit.xml",
        "--atom-report=traces",
        "-p",
        "no:cacheprovider",
    )
    result.assert_outcomes(passed=1)  # drift is no warning
    out = result.stdout.str()
    assert_replayed_with(out, {CONFIGURED: "passed"}, version)
    assert out.count("drift: ") == 1  # the releases differ: said once, in each report
    junit = (pytester.path / "junit.xml").read_text(encoding="utf-8")
    drift = f"recorded with Claude Code {CLAUDE_CODE_VERSION}, replayed with {version}"
    assert f'name="atom_drift" value="{drift}' in junit
    trace = json.loads((pytester.path / "traces/configured/configured.json").read_text())
    assert trace["atom"]["drift"].startswith(drift)
    checks = {c["kind"]: c for c in trace["children"][-1]["checks"]}
    assert all(c["passed"] for c in checks.values()), checks
    assert "mcp__tickets__create" in checks["mcp_called"]["evidence"]
    assert "rm -rf is not allowed here" in checks["permission_denied"]["evidence"]


@pytest.mark.slow
@pytest.mark.sweep
@pytest.mark.usefixtures("claude_for_pytester")
@pytest.mark.parametrize("version", [PREVIOUS_CLI, OLD_CLI])
def test_every_shipped_spec_replays_with_another_release(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    other_clis: dict[str, Path],
    version: str,
) -> None:
    """Every shipped spec (the fixtures and the examples), in one run with the release
    before the pin and with 2.1.197, in the default match mode: the same outcomes, and one
    honest drift line each at most. A sweep (CI: -m sweep): the suite replays `configured`
    with each release above."""
    shutil.copytree(REPO / "fixtures" / "specs", pytester.path / "specs")
    shutil.copytree(REPO / "examples", pytester.path / "examples")
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(other_clis[version]))
    result = pytester.runpytest("--atom", "specs", "examples", "-n", "2", "-p", "no:cacheprovider")
    outcomes = list(SHIPPED.values())
    result.assert_outcomes(
        passed=outcomes.count("passed"),
        failed=outcomes.count("failed"),
        xfailed=outcomes.count("xfailed"),
    )
    assert_replayed_with(result.stdout.str(), SHIPPED, version)


@pytest.fixture(scope="session")
def diverging_refresh(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Path:
    """`atom cassette refresh` of the 2.1.197 cassette after its prompt was edited (hello,
    moon): one replay that diverges, read by the tests of what a changed prompt does."""
    build = partial(refresh_old_project, claude_bin=claude_bin, edit=True)
    return once_per_session(tmp_path_factory, "old-project-moon", build)


@pytest.mark.slow
def test_changed_prompt_still_diverges_and_says_why(diverging_refresh: Path) -> None:
    """Refreshing (as replaying) the 2.1.197 cassette with its prompt edited diverges, and
    the report blames the spec, not the other Claude Code that recorded it."""
    out = (diverging_refresh / "output.txt").read_text(encoding="utf-8")
    pytest.LineMatcher(out.splitlines()).fnmatch_lines(
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
    assert "another Claude Code version" not in out


def test_changed_atom_prompt_diverges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ATOM.md is the user's: the pin sends it as the conversation's first message, so a
    project override of it (.atom/prompts/ATOM.md, which tests/test_prompts.py shows is
    loaded) is a new conversation, whichever Claude Code recorded the cassette."""
    monkeypatch.chdir(copy_old_project(tmp_path))
    (spec,) = load_specs(tmp_path / "create_file.atom.yaml")
    shipped = (REPO / "prompts" / "ATOM.md").read_text(encoding="utf-8")
    first = Cassette.load(SHIPPED_CREATE_FILE).interactions[0].body
    opening = shipped.split("{", 1)[0].strip()  # what precedes the first template field
    assert first["messages"][0]["content"].startswith(opening)
    live = json.loads(json.dumps(first).replace("You are an autonomous", "You are a careful", 1))
    responder = old_responder("conversation")
    with Gateway(responder) as gateway:
        answer = httpx.post(gateway.url + "/v1/messages?beta=true", json=live, timeout=30)
    assert answer.status_code == 409, answer.text
    (report, *_) = divergence_report(spec, ModelSource("replay", responder), CLAUDE_CODE_VERSION)
    pytest.LineMatcher(report.splitlines()).fnmatch_lines(
        [
            "likely cause: the conversation differs from the recording (below)",
            "*      recorded *You are [[]an autonomous[]] software*",
            "*      live     *You are [[]a careful[]] software*",
        ]
    )
    assert "another Claude Code version" not in report


def old_responder(match: MatchMode) -> CassetteResponder:
    """The 2.1.197 cassette served as a replay would serve it, in match mode `match`."""
    old = Cassette.load(REPO / "tests" / "data" / "cli_2_1_197" / CASSETTE)
    return CassetteResponder(old, Normalizer({}), Scrubber(env={}), matcher=matcher_for(match))


def test_strict_blames_the_old_release_for_the_same_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pin's request for create_file (its shipped cassette) against the 2.1.197 one:
    the same conversation, so strict matching blames the version and names the refresh,
    and the default match serves it with the drift counted."""
    monkeypatch.chdir(copy_old_project(tmp_path))
    (spec,) = load_specs(tmp_path / "create_file.atom.yaml")
    first = Cassette.load(SHIPPED_CREATE_FILE).interactions[0].body
    strict, conversation = old_responder("strict"), old_responder("conversation")
    for responder in (strict, conversation):
        with Gateway(responder) as gateway:
            answer = httpx.post(gateway.url + "/v1/messages?beta=true", json=first, timeout=30)
        assert answer.status_code == (409 if responder is strict else 200), answer.text
    assert strict.divergences[0].where() == ("cli", [])
    (report, *_) = divergence_report(spec, ModelSource("replay", strict), CLAUDE_CODE_VERSION)
    assert report.splitlines()[0] == (
        f"likely cause: recorded with another Claude Code version ({OLD_CLI}; this run "
        f"{CLAUDE_CODE_VERSION}), and strict matching compares Claude Code's own parts of "
        "the request too; refresh the cassette for this CLI with: pytest --atom "
        "'create_file.atom.yaml::create-file' --atom-record-mode=refresh"
    )
    assert conversation.divergences == [] and conversation.drift.loose == 1


def agent_turns(path: Path) -> list[dict[str, Any]]:
    """The request bodies of a create_file cassette's agent turns (not the reflector's)."""
    bodies = [i.body for i in Cassette.load(path).interactions if isinstance(i.body, dict)]
    return [b for b in bodies if "# Autonomous" in json.dumps(b["messages"][0])[:200]]


@pytest.mark.slow
def test_refresh_then_strict_replay(old_refreshed: Path) -> None:
    """The refreshed cassette holds the pin's requests (the conversation's answers as
    recorded): a strict replay serves the pin's requests of create_file (its shipped
    cassette holds them) one by one, with no drift. The pin's strict replay of a refreshed
    cassette through the CLI: tests/replay/test_offered_tools.py."""
    before = (old_refreshed / "before.yaml").read_text(encoding="utf-8")
    refreshed = old_refreshed / "project" / CASSETTE
    after = refreshed.read_text(encoding="utf-8")
    assert after != before
    metadata = yaml.safe_load(after)["metadata"]
    assert metadata["claude_code_version"] == CLAUDE_CODE_VERSION
    assert metadata["refreshed_from"] == OLD_CLI and metadata["refreshed_at"]
    pins = agent_turns(SHIPPED_CREATE_FILE)
    assert [matcher_for("strict").key("turn", b) for b in agent_turns(refreshed)] == [
        matcher_for("strict").key("turn", b) for b in pins
    ]
    responder = CassetteResponder(
        Cassette.load(refreshed), Normalizer({}), Scrubber(env={}), matcher=matcher_for("strict")
    )
    with Gateway(responder) as gateway:
        for body in pins:
            answer = httpx.post(gateway.url + "/v1/messages?beta=true", json=body, timeout=30)
            assert answer.status_code == 200, answer.text
    assert responder.divergences == [] and not responder.drift.changes()


@pytest.mark.slow
def test_refresh_refuses_a_diverging_conversation(diverging_refresh: Path) -> None:
    out = (diverging_refresh / "output.txt").read_text(encoding="utf-8")
    assert (diverging_refresh / "exit_code").read_text() == "1", out
    assert "create-file: not refreshed: the replay diverged" in out
    assert "likely cause: spec changed since recording" in out
    after = (diverging_refresh / "project" / CASSETTE).read_bytes()
    assert after == (diverging_refresh / "before.yaml").read_bytes()
