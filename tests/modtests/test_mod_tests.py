"""A mod's own ``*.test.ts`` files under ``pytest --atom``, run by the pinned CLI's
``claude plugin test`` (docs/how-to/plugin-test.md)."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_atom.agents.claude_code.cli import cached_claude
from pytest_atom.modtests import parse
from tests.cli_starts import count_confined_start
from tests.helpers import REPO

MOD = REPO / "fixtures" / "plugins" / "env-guard"
ALLOWS = "env-guard/tests/allows.test.ts::plugin-test"
EXAMPLE = "env-guard/tests/example.test.ts::plugin-test"


@pytest.fixture
def pinned_cli(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The pinned CLI itself, not the suite's counting wrapper (tests/cli_starts.py): the
    sandbox the CLI runs in opens the CLI's own package only, and keeps the wrapper's log
    read-only; the start is counted here instead."""
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(cached_claude()))
    yield
    count_confined_start()


def _mod(pytester: pytest.Pytester) -> Path:
    copy = pytester.path / "env-guard"
    shutil.copytree(MOD, copy)
    return copy


def _files(folder: Path) -> dict[str, bytes]:
    return {
        p.relative_to(folder).as_posix(): p.read_bytes() for p in folder.rglob("*") if p.is_file()
    }


def test_a_mods_test_files_are_items_with_atom_only(pytester: pytest.Pytester) -> None:
    """Each test file of a mod is one item; a ``*.test.ts`` outside a mod, or in a run
    folder, is none; without ``--atom``, none is."""
    _mod(pytester)
    pytester.path.joinpath("loose.test.ts").write_text("test('x', () => {})\n")
    with_atom = pytester.runpytest("--atom", "--collect-only", "-q", "-p", "no:cacheprovider")
    assert with_atom.stdout.lines[:2] == [ALLOWS, EXAMPLE]
    assert "2 tests collected" in with_atom.stdout.str()
    assert "loose.test.ts" not in with_atom.stdout.str()
    plain = pytester.runpytest("--collect-only", "-q", "-p", "no:cacheprovider")
    assert "test.ts" not in plain.stdout.str()
    # A run folder inside the mod holds a copy of it: no test of the mod.
    shutil.copytree(MOD, pytester.path / "env-guard" / "runs" / "mod-test-x" / "mod")
    runs = ("--atom-runs-dir", "env-guard/runs")
    inside = pytester.runpytest("--atom", *runs, "--collect-only", "-q", "-p", "no:cacheprovider")
    assert "2 tests collected" in inside.stdout.str()


@pytest.mark.slow
@pytest.mark.usefixtures("pinned_cli")
def test_items_pass_and_fail_as_the_mods_tests_do(pytester: pytest.Pytester) -> None:
    """The shipped example: its passing test's item passes, its failing test's item fails
    with the test's title, duration and message; JUnit holds each test's line; the mod is
    left as it was, the CLI having run on a copy in a run folder."""
    mod = _mod(pytester)
    before = _files(mod)
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest(
        "--atom", "-p", "no:cacheprovider", "-rA", f"--junitxml={junit}", str(mod)
    )
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "claude plugin test: 1 failed, 0 passed",
            "(fail) an edit of .env.example goes on to the engine [[]*ms]",
            "  Expected: { result: { edited: true } }",
            '  Received: { deny: "env-guard: .env.example is protected here." }',
        ]
    )
    result.stdout.fnmatch_lines(
        ["(pass) an edit of an ordinary file goes on to the engine [[]*ms]"]
    )
    cases = {c.get("classname"): c for c in ET.parse(junit).getroot().iter("testcase")}
    allows = cases["env-guard.tests.allows.test.ts"]
    example = cases["env-guard.tests.example.test.ts"]
    assert allows.find("failure") is None and example.find("failure") is not None
    (line,) = [p.get("value") for p in example.iter("property") if p.get("name") == "mod_test"]
    assert (
        line is not None
        and line.startswith("fail [")
        and line.endswith("ms] an edit of .env.example goes on to the engine")
    )
    assert _files(mod) == before
    runs = sorted(p.name for p in (pytester.path / ".atom" / "runs").iterdir())
    assert [r.split("-2", 1)[0] for r in runs] == [
        "mod-test-allows.test.ts",
        "mod-test-example.test.ts",
    ]


@pytest.mark.slow
@pytest.mark.usefixtures("pinned_cli")
def test_a_failure_is_inert_and_a_file_that_does_not_load_fails(pytester: pytest.Pytester) -> None:
    """A test's message reaches the report with its control characters escaped (the CLI
    escapes them itself, and the report makes its text inert again); a file the CLI cannot
    load is a failed item that says so."""
    mod = _mod(pytester)
    (mod / "tests" / "example.test.ts").write_text(
        "import { test } from 'claude-code/testing'\n"
        "test('clears the screen', () => { throw new Error('\\u001b[2Jboom') })\n"
    )
    (mod / "tests" / "allows.test.ts").write_text(
        "import { test } from 'claude-code/testing'\ntest(\n"
    )
    result = pytester.runpytest("--atom", "-p", "no:cacheprovider", str(mod))
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    assert "\x1b" not in out and "Error: \\u001b[2Jboom" in out
    result.stdout.fnmatch_lines(["(fail) the file did not load*"])


def test_parse_reads_each_test_its_duration_and_message() -> None:
    output = (
        "Testing the mod in /m\n\ntests/a.test.ts:\n(pass) adds [2.12ms]\n"
        "(fail) fails [12.99ms]\n  AssertionError: expect(received).toBe()\n  \n"
        "  Expected: 3\n  Received: 2\n\n 1 pass\n 1 fail\nRan 2 tests across 1 file. [0.71s]\n"
    )
    adds, fails = parse(output)
    assert (adds.title, adds.passed, adds.ms, adds.message) == ("adds", True, 2.12, [])
    assert (fails.title, fails.passed, fails.ms) == ("fails", False, 12.99)
    assert fails.message == [
        "AssertionError: expect(received).toBe()",
        "",
        "Expected: 3",
        "Received: 2",
    ]
