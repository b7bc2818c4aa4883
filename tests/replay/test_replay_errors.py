"""What a replay owes its user when the cassette no longer fits: the real CLI, pytester runs.

A divergence is the harness's failure, never the agent's: it is not the failure an
`xfail` spec expects. A changed check re-judges without re-recording the agent.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.staleness import interaction_kind
from tests.helpers import REPO

pytestmark = [pytest.mark.usefixtures("claude_for_pytester"), pytest.mark.slow]

CASSETTE = Path("specs/cassettes/create_file/create-file.yaml")


@pytest.fixture
def fixtures_copy(pytester: pytest.Pytester) -> Path:
    specs = pytester.path / "specs"
    shutil.copytree(REPO / "fixtures" / "specs", specs)
    return specs


def test_xfail_spec_with_a_changed_prompt_is_an_error_not_xfailed(
    pytester: pytest.Pytester, fixtures_copy: Path
) -> None:
    spec = fixtures_copy / "misses_goal.atom.yaml"
    spec.write_text(spec.read_text().replace("Read notes.txt", "Read notes.txt carefully"))
    result = pytester.runpytest("--atom", str(spec))
    result.assert_outcomes(failed=1)  # not xfailed: the expected failure is the agent's
    result.stdout.fnmatch_lines(
        [
            "*replay diverged from the cassette*likely cause: spec changed since recording*",
            "specs/misses_goal.atom.yaml::misses-goal  error *",
        ]
    )


def test_added_check_is_rejudged_without_rerecording_the_agent(
    pytester: pytest.Pytester, fixtures_copy: Path
) -> None:
    """The shipped cassette, a check added to its spec: the replay names the cause and the
    command; the re-judge records the reflector's sessions anew and nothing else."""
    spec = fixtures_copy / "create_file.atom.yaml"
    cassette = pytester.path / CASSETTE
    agent_before = [
        i for i in Cassette.load(cassette).interactions if interaction_kind(i) != "reflector"
    ]
    spec.write_text(spec.read_text() + "  - file_absent: goodbye.txt\n")

    diverged = pytester.runpytest("--atom", str(spec))
    diverged.assert_outcomes(failed=1)
    diverged.stdout.fnmatch_lines(
        [
            "*likely cause: the reflector's input changed (checks or criteria): the agent's "
            "sessions replayed, re-judge them with: pytest --atom "
            "'specs/create_file.atom.yaml::create-file' --atom-rejudge*",
            "*POST /v1/messages (reflector): no recorded interaction matches*",
        ]
    )

    pytester.runpytest("--atom", "--atom-rejudge", str(spec)).assert_outcomes(passed=1)
    after = Cassette.load(cassette)
    agent_after = [i for i in after.interactions if interaction_kind(i) != "reflector"]
    judged = [i for i in after.interactions if interaction_kind(i) == "reflector"]
    assert agent_after == agent_before  # the agent's sessions are untouched
    assert len(judged) == 1 and "file_absent goodbye.txt" in str(judged[0].body)
    assert yaml.safe_load(cassette.read_text())["metadata"]["rejudged_at"]
    pytester.runpytest("--atom", "--atom-match=strict", str(spec)).assert_outcomes(passed=1)
