"""The suite's own slow marks are checked against what each test does (tests/cli_starts.py).

An inner pytest session loads the counting plugin with a stand-in `claude` (a shell script:
what is under test is the counting, not Claude Code, and the outer test must start none).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.helpers import REPO

TESTS = """
import os, subprocess, pytest
from tests.cli_starts import note_shared_read

@pytest.fixture(scope="module")
def scenario():
    note_shared_read("scenario")  # as once_per_session does; built by another test, maybe

@pytest.mark.slow
def test_marked_reads_shared(scenario):
    pass

@pytest.mark.slow
def test_marked_reads_shared_too(scenario):
    pass  # the fixture is cached: this test asked no scenario itself

def start():
    subprocess.run([os.environ["ATOM_CLAUDE_BIN"], "-p", "hello"], check=True)

def test_unmarked_starts():
    start()

@pytest.mark.slow
def test_marked_starts():
    start()
    subprocess.run([os.environ["ATOM_CLAUDE_BIN"], "--version"], check=True)

@pytest.mark.slow
def test_marked_idle():
    pass

def test_unmarked_idle():
    pass
"""


def test_an_unmarked_test_that_starts_a_cli_fails_and_every_start_is_counted(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    fake = tmp_path / "bin" / "claude"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho stand-in\n", encoding="utf-8")
    fake.chmod(0o755)
    monkeypatch.setenv("ATOM_SUITE_REAL_CLAUDE_BIN", str(fake))
    path = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    monkeypatch.setenv("PYTHONPATH", path)
    pytester.makeini("[pytest]\nmarkers =\n    slow: starts Claude Code\n")
    pytester.makepyfile(test_starts=TESTS)
    result = pytester.runpytest_subprocess(
        "-p", "tests.cli_starts", "-p", "no:cacheprovider", "--cli-starts-json", "starts.json"
    )
    result.assert_outcomes(passed=6, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at teardown of test_unmarked_starts*",
            "*test_starts.py::test_unmarked_starts started 1 Claude Code process(es) but is not "
            "marked slow: add @pytest.mark.slow*",
            "*ERROR at teardown of test_marked_idle*",
            "*test_starts.py::test_marked_idle is marked slow but started no Claude Code "
            "process and read no shared scenario*: remove @pytest.mark.slow.",
            "3 CLI processes (2 `claude -p` sessions) from 2 tests",
        ]
    )
    assert "test_marked_reads_shared" not in result.stdout.str()
    rows = {
        r["nodeid"].split("::")[1]: r
        for r in json.loads((pytester.path / "starts.json").read_text())
    }
    assert {name: (r["slow"], r["cli_starts"], r["cli_sessions"]) for name, r in rows.items()} == {
        "test_unmarked_starts": (False, 1, 1),
        "test_marked_starts": (True, 2, 1),
        "test_marked_idle": (True, 0, 0),
        "test_marked_reads_shared": (True, 0, 0),
        "test_marked_reads_shared_too": (True, 0, 0),
        "test_unmarked_idle": (False, 0, 0),
    }
