"""Built-in checks on real files and processes, and the registry plugins extend."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.checks.builtin import default_registry, run_checks
from pytest_atom.checks.registry import CheckRegistry
from pytest_atom.results.check_result import CheckResult
from pytest_atom.spec.types import Check
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import wait_gone, write


def check(kind: str, **params: Any) -> Check:
    return Check(kind=kind, params=params, line=1)


def run(c: Check, workspace: Path, env: Mapping[str, str] | None = None) -> CheckResult:
    return default_registry().run(c, workspace, env)


def command(run_: str, **params: Any) -> Check:
    return check(
        "command", **{"run": run_, "exit_code": 0, "output": None, "timeout": 20.0, **params}
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


def test_file_exists(ws: Path) -> None:
    (ws / "sub").mkdir()
    (ws / "sub" / "hello.txt").write_text("hi\n")
    found = run(check("file_exists", path="sub/hello.txt"), ws)
    assert (found.passed, found.summary) == (True, "sub/hello.txt exists")
    assert "hi" in found.evidence
    missing = run(check("file_exists", path="hello.txt"), ws)
    assert (missing.passed, missing.summary) == (False, "hello.txt is missing")
    assert "sub/hello.txt" in missing.evidence.splitlines()  # shows where the file went instead


def test_file_absent(ws: Path) -> None:
    assert run(check("file_absent", path="tmp.log"), ws).passed
    (ws / "tmp.log").write_text("leftover debug output\n")
    present = run(check("file_absent", path="tmp.log"), ws)
    assert (present.passed, present.summary) == (False, "tmp.log exists but should not")
    assert "leftover debug output" in present.evidence


def test_file_contains(ws: Path) -> None:
    (ws / "hello.txt").write_bytes(b"first\nhello, world\n\xff binary junk\n")
    found = run(check("file_contains", path="hello.txt", pattern="^hello, world$"), ws)
    assert (found.passed, found.summary) == (True, "hello.txt matches /^hello, world$/ at line 2")
    not_found = run(check("file_contains", path="hello.txt", pattern="^goodbye"), ws)
    assert (not_found.passed, not_found.summary) == (False, "/^goodbye/ not found in hello.txt")
    assert "hello, world\n\ufffd binary junk" in not_found.evidence  # bad bytes replaced
    missing = run(check("file_contains", path="nope.txt", pattern="x"), ws)
    assert (missing.passed, missing.summary) == (False, "nope.txt is missing")
    assert "hello.txt" in missing.evidence


def test_file_excerpt_is_capped(ws: Path) -> None:
    (ws / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    result = run(check("file_contains", path="long.txt", pattern="^absent$"), ws)
    lines = result.evidence.splitlines()
    assert lines[0] == "line 1" and lines[39] == "line 40"
    assert lines[40:] == ["… (60 more lines)"]


def test_command_exit_code_and_output(ws: Path) -> None:
    (ws / "marker").write_text("")
    ok = run(command("ls && echo all good >&2", output=r"^all good$"), ws)
    assert (ok.passed, ok.summary) == (True, "`ls && echo all good >&2` exited 0")
    assert "marker" in ok.evidence  # ran in the workspace, stdout and stderr both captured
    wrong_code = run(command("echo failing test; exit 3"), ws)
    assert not wrong_code.passed
    assert wrong_code.summary == "`echo failing test; exit 3` exited 3, expected 0"
    assert "failing test" in wrong_code.evidence and "[exit code 3]" in wrong_code.evidence
    assert run(command("exit 3", exit_code=3), ws).passed
    no_match = run(command("echo 1 failed", output="passed"), ws)
    assert not no_match.passed
    assert no_match.summary == "`echo 1 failed` exited 0 but its output does not match /passed/"


def test_command_output_is_an_unanchored_search_over_stdout_and_stderr(ws: Path) -> None:
    # "1 2 ... 100" holds "14 15", which /1..15/ matches: the regex is searched, not anchored.
    assert run(command("seq -s ' ' 1 100", output="1..15"), ws).passed
    assert not run(command("seq -s ' ' 1 100", stdout="1..15"), ws).passed
    assert run(command("echo warning >&2", output="^warning$"), ws).passed


def test_command_stdout_is_exact_and_shows_a_diff(ws: Path) -> None:
    assert run(command("seq 1 3", stdout="1\n2\n3"), ws).passed  # trailing newline ignored
    assert run(command("seq 1 3; echo noise >&2", stdout="1\n2\n3\n\n"), ws).passed
    result = run(command("seq 1 100", stdout="".join(f"{i}\n" for i in range(1, 16))), ws)
    assert not result.passed  # the regex form passes this; the exact form does not
    assert result.summary == (
        "`seq 1 100` exited 0 but its stdout differs from the expected one from line 16 "
        "(15 lines expected, 100 printed)"
    )
    lines = result.evidence.splitlines()
    assert lines[:4] == [
        "$ seq 1 100",
        "--- expected stdout",
        "+++ actual stdout",
        "@@ -13,3 +13,88 @@",
    ]
    assert lines[4:8] == [" 13", " 14", " 15", "+16"]
    assert lines[-2:] == ["… (77 more diff lines)", "[exit code 0]"]
    assert len(lines) <= 20  # a report shows an evidence's last 20 lines: all of it


def test_command_stdout_diff_names_changed_lines_and_keeps_stderr_apart(ws: Path) -> None:
    result = run(command("printf 'a\\nB\\nc\\n'; echo oops >&2", stdout="a\nb\nc\n"), ws)
    assert not result.passed
    assert "from line 2 (3 lines expected, 3 printed)" in result.summary
    assert "-b\n+B\n" in result.evidence
    assert result.evidence.endswith("[stderr]\noops\n[exit code 0]")


def test_command_env_and_stdin(ws: Path) -> None:
    env = {"PATH": os.environ["PATH"], "ATOM_GREETING": "hej"}
    result = run(command('echo "$ATOM_GREETING"; cat', output="^hej$"), ws, env)
    assert result.passed  # `cat` got EOF from /dev/null instead of waiting for input
    assert not run(command('test -n "$ATOM_GREETING"'), ws, {"PATH": os.environ["PATH"]}).passed


def test_command_output_tail_is_capped(ws: Path) -> None:
    result = run(command("seq 1 100"), ws)
    lines = result.evidence.splitlines()
    assert lines[:2] == ["$ seq 1 100", "… (60 earlier lines)"]
    assert lines[2] == "61" and lines[-2:] == ["100", "[exit code 0]"]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_command_timeout_kills_the_process_group(ws: Path) -> None:
    start = time.monotonic()
    result = run(command("sleep 30 & echo $! > bg.pid; sleep 30", timeout=1), ws)
    elapsed = time.monotonic() - start
    assert elapsed < 10
    assert not result.passed
    assert result.summary == "`sleep 30 & echo $! > bg.pid; sleep 30` timed out after 1s"
    background = int((ws / "bg.pid").read_text())
    assert wait_gone(background)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc")
def test_command_does_not_wait_for_background_children(ws: Path) -> None:
    start = time.monotonic()
    result = run(command("sleep 30 & echo $! > bg.pid; echo started"), ws)
    assert result.passed and time.monotonic() - start < 10
    assert "started" in result.evidence
    background = int((ws / "bg.pid").read_text())
    assert wait_gone(background)  # no stray process outlives the check


SCHEMA = {
    "type": "object",
    "required": ["title", "word_count"],
    "properties": {"word_count": {"type": "integer"}},
}


def test_json_schema(ws: Path) -> None:
    (ws / "good.json").write_text('{"title": "t", "word_count": 3}')
    good = run(check("json_schema", path="good.json", schema=SCHEMA), ws)
    assert (good.passed, good.summary) == (True, "good.json matches the schema")
    (ws / "bad.json").write_text('{"word_count": "three"}')
    bad = run(check("json_schema", path="bad.json", schema=SCHEMA), ws)
    assert (bad.passed, bad.summary) == (False, "bad.json does not match the schema (2 errors)")
    assert "$: 'title' is a required property" in bad.evidence
    assert "$.word_count: 'three' is not of type 'integer'" in bad.evidence
    (ws / "broken.json").write_text("{oops")
    broken = run(check("json_schema", path="broken.json", schema=SCHEMA), ws)
    assert not broken.passed and broken.summary.startswith("broken.json is not valid JSON: ")
    assert "{oops" in broken.evidence
    missing = run(check("json_schema", path="none.json", schema=SCHEMA), ws)
    assert (missing.passed, missing.summary) == (False, "none.json is missing")


def test_checks_from_a_loaded_spec(tmp_path: Path, ws: Path) -> None:
    (tmp_path / "summary.schema.json").write_text('{"type": "object", "required": ["title"]}')
    spec = load_spec(
        write(
            tmp_path / "s.atom.yaml",
            """\
prompt: p
accept:
  - json_schema: {path: out.json, schema: summary.schema.json}
  - command: "test -f out.json"
  - file_absent: out.json
""",
        )
    )
    (ws / "out.json").write_text('{"title": "x"}')
    results = run_checks(spec.accept, ws)
    assert [r.check for r in results] == list(spec.accept)
    assert [r.passed for r in results] == [True, True, False]


@pytest.mark.parametrize("kind", ["file_exists", "file_absent", "file_contains", "json_schema"])
def test_paths_outside_the_workspace_are_refused(tmp_path: Path, ws: Path, kind: str) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    (ws / "link.txt").symlink_to(secret)
    for path in ("../secret.txt", str(secret), "link.txt"):
        result = run(check(kind, path=path, pattern="SECRET", schema={}), ws)
        assert not result.passed
        assert "outside the workspace" in result.evidence
        assert "TOP SECRET" not in result.evidence


def test_custom_kind_in_a_registry(ws: Path) -> None:
    def word_count(c: Check, workspace: Path, env: Mapping[str, str] | None) -> CheckResult:
        words = len((workspace / c.params["path"]).read_text().split())
        return CheckResult(c, words == c.params["words"], f"{words} words", "")

    registry = default_registry()
    registry.register("word_count", word_count)
    assert "word_count" in registry and "word_count" not in default_registry()
    assert registry.kinds() == sorted(
        [
            *("command", "file_absent", "file_contains", "file_exists", "json_schema"),
            *(
                "tool_used",
                "tool_order",
                "skill_invoked",
                "subagent_used",
                "mcp_called",
                "final_message",
                "permission_denied",
                "tool_results",
                "asked_user",
                "user_turns",
            ),
            "word_count",
        ]
    )
    (ws / "notes.txt").write_text("one two three")
    results = run_checks(
        [check("word_count", path="notes.txt", words=3), check("file_exists", path="notes.txt")],
        ws,
        registry=registry,
    )
    assert [(r.passed, r.summary) for r in results] == [
        (True, "3 words"),
        (True, "notes.txt exists"),
    ]
    with pytest.raises(ValueError, match="'word_count' is already registered"):
        registry.register("word_count", word_count)


def test_custom_kind_from_a_spec_runs_in_the_registry_that_named_it(
    tmp_path: Path, ws: Path
) -> None:
    def max_words(c: Check, workspace: Path, env: Mapping[str, str] | None) -> CheckResult:
        words = len((workspace / "notes.txt").read_text().split())
        return CheckResult(c, words <= c.params["value"], f"{words} words", "")

    def no_todo(c: Check, workspace: Path, env: Mapping[str, str] | None) -> CheckResult:
        text = (workspace / c.params["path"]).read_text()
        return CheckResult(c, c.params["marker"] not in text, "scanned", "")

    registry = default_registry()
    registry.register("max_words", max_words)
    registry.register("no_todo", no_todo)
    spec = load_spec(
        write(
            tmp_path / "s.atom.yaml",
            """\
prompt: p
accept:
  - max_words: 3
  - no_todo: {path: notes.txt, marker: TODO}
  - file_exists: notes.txt
""",
        ),
        check_kinds=registry.kinds(),  # includes the built-ins, which keep their own rules
    )
    (ws / "notes.txt").write_text("one two TODO")
    results = run_checks(spec.accept, ws, registry=registry)
    assert [(r.check.describe(), r.passed) for r in results] == [
        ('max_words {"value":3}', True),
        ('no_todo {"path":"notes.txt","marker":"TODO"}', False),
        ("file_exists notes.txt", True),
    ]


def test_unknown_or_crashing_checks_fail_without_raising(ws: Path) -> None:
    def crashes(c: Check, workspace: Path, env: Mapping[str, str] | None) -> CheckResult:
        raise KeyError("boom")

    registry = CheckRegistry()
    registry.register("crashes", crashes)
    crashed = registry.run(check("crashes", value=7), ws)
    assert not crashed.passed and "KeyError: 'boom'" in crashed.evidence
    assert crashed.summary == 'crashes {"value":7}: the check itself crashed'
    unknown = registry.run(check("nope"), ws)
    assert (unknown.passed, unknown.summary) == (False, "unknown check kind 'nope'")
    assert unknown.evidence == "registered kinds: crashes"
