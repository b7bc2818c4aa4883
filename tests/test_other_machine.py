"""A cassette recorded on one machine replays byte for byte on another (real CLI, pytester).

The shipped cassettes are rewritten as another machine would have recorded them before
pytest-atom masked its details: another kernel release and login shell, the sandbox's
folders under another user id, another count of the sandbox's paths. The live run has its
temp folder elsewhere too. `--atom-match=strict` must still pass, with no drift line.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.helpers import REPO

pytestmark = [pytest.mark.usefixtures("claude_for_pytester"), pytest.mark.slow]

#: (how this repository's cassettes hold a detail, masked or not; how the other machine did)
OTHER_MACHINE = (
    (r"OS Version: [^\\]+", "OS Version: Linux 5.15.0-1071-azure"),
    (r" - Shell: [^\\]+", " - Shell: bash (login shell: zsh)"),
    (r"(?:<TMP>|/tmp)/cc-daemon-(?:<UID>|\d+)", "/tmp/cc-daemon-1001"),
    (r"\.\.\. and (?:<N>|\d+) more \(truncated", "... and 212 more (truncated"),
)
SPECS = ("create_file", "two_steps")


@pytest.fixture
def other_machines_specs(pytester: pytest.Pytester) -> Path:
    """fixtures/specs with the cassettes of SPECS as the other machine recorded them."""
    specs = pytester.path / "specs"
    shutil.copytree(REPO / "fixtures" / "specs", specs)
    for name in SPECS:
        (cassette,) = (specs / "cassettes" / name).glob("*.yaml")
        text = cassette.read_text(encoding="utf-8")
        for ours, theirs in OTHER_MACHINE:
            text, count = re.subn(ours, theirs, text)
            assert count, (cassette, ours)
        cassette.write_text(text, encoding="utf-8")
    return specs


def test_a_cassette_from_another_machine_replays_strict(
    pytester: pytest.Pytester,
    other_machines_specs: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    # Short: the sandbox's unix sockets live there, and a socket path has ~100 characters.
    tmp = tempfile.mkdtemp(prefix="atom-tmp-", dir="/tmp")
    request.addfinalizer(lambda: shutil.rmtree(tmp, ignore_errors=True))
    monkeypatch.setenv("TMPDIR", tmp)
    monkeypatch.setenv("SHELL", "/bin/bash")
    paths = [f"specs/{name}.atom.yaml" for name in SPECS]
    result = pytester.runpytest("--atom", *paths, "--atom-match=strict", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(SPECS))
    assert "drift: " not in result.stdout.str()


def test_a_machine_detail_left_unmasked_is_named_as_the_cause(
    pytester: pytest.Pytester, other_machines_specs: Path
) -> None:
    """A detail pytest-atom does not mask yet (here the environment block's git line, as a
    machine without git would have it) is the only difference left: the report says so."""
    cassette = other_machines_specs / "cassettes" / "create_file" / "create-file.yaml"
    text = cassette.read_text(encoding="utf-8")
    assert " - Is a git repository: true" in text
    cassette.write_text(text.replace("git repository: true", "git repository: false"))
    result = pytester.runpytest("--atom", "specs/create_file.atom.yaml", "--atom-match=strict")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*likely cause: a machine detail differs ('Is a git repository'): the cassette was "
            "recorded on another machine, and pytest-atom does not mask this detail yet; the "
            "default --atom-match=conversation ignores it",
            "*      recorded *Is a git repository: [[]false[]]*",
            "*      live     *Is a git repository: [[]true[]]*",
        ]
    )
    pytester.runpytest("--atom", "specs/create_file.atom.yaml").assert_outcomes(passed=1)
