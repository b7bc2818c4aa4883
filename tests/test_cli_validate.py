"""`atom validate`: schema errors, oracles in workspace copies, scripts through the real CLI."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from atom_cli.validate_cmd import validate
from pytest_atom.model.spec import load_specs
from pytest_atom.model.spec_types import SpecError
from tests.helpers import wait_gone, write

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures" / "specs"
PYTEST_RUN = "python3 -m pytest -rf"  # the calc workspace sets -q and --tb=no itself
FIX_CALC = "sed -i 's/return a - b/return a + b/' calc/__init__.py\n"


@pytest.fixture(autouse=True)
def cli_env(monkeypatch: pytest.MonkeyPatch, claude_bin: Path, tmp_path: Path) -> None:
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    monkeypatch.chdir(tmp_path)


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(validate, [str(a) for a in args], catch_exceptions=False)


def calc_spec(folder: Path, oracle: str, timeout: float = 60, name: str = "calc") -> Path:
    """A spec on a copy of the calc fixture whose oracle is `oracle` (a bash script)."""
    if not (folder / "workspaces" / "calc").exists():
        shutil.copytree(FIXTURES / "workspaces" / "calc", folder / "workspaces" / "calc")
    write(folder / f"{name}.sh", oracle)
    return write(
        folder / f"{name}.atom.yaml",
        f"prompt: Fix calc.\nworkspace: workspaces/calc\noracle: {name}.sh\n"
        f"timeout: {timeout}\naccept:\n  - command: {{run: {PYTEST_RUN}, exit_code: 0}}\n",
    )


# --- scripts, through the real harness ----------------------------------------------------


@pytest.mark.slow
def test_shipped_create_file_spec_validates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    result = invoke("fixtures/specs/create_file.atom.yaml")
    lines = result.output.splitlines()
    assert result.exit_code == 0, result.output
    assert lines[0] == "fixtures/specs/create_file.atom.yaml::create-file"
    assert lines[1] == "  script: passed"
    assert "    PASS file_exists hello.txt (line 13): hello.txt exists" in lines
    assert "    verdict: proceed, score 0.95 (passes above 0.8) after 1 attempt" in lines
    assert lines[-2:] == ["  ok", "1 spec: 1 ok, 0 failed"]


@pytest.mark.slow
def test_script_is_played_even_when_a_cassette_exists(tmp_path: Path) -> None:
    """A cassette that replays a different session must not be used: the script is."""
    shutil.copy2(FIXTURES / "create_file.atom.yaml", tmp_path)
    script = (FIXTURES / "scripts" / "create_file.yaml").read_text(encoding="utf-8")
    write(tmp_path / "scripts" / "create_file.yaml", script.replace("hello, world", "goodbye"))
    # The shipped cassette writes "hello, world": replaying it would pass the spec.
    shutil.copytree(FIXTURES / "cassettes", tmp_path / "cassettes")
    result = invoke("create_file.atom.yaml")
    assert result.exit_code == 1, result.output
    assert "    FAIL file_contains hello.txt /^hello, world$/ (line 14): " in result.output
    assert "      | goodbye" in result.output
    assert result.output.endswith("1 spec: 0 ok, 1 failed\n")


@pytest.mark.slow
def test_failed_tool_calls_are_shown_as_pytest_shows_them(tmp_path: Path) -> None:
    """A script whose edit misses and whose tool name is mistyped: the same lines as the
    failure report, so the cause is not hidden behind a mere failed check."""
    write(tmp_path / "workspaces" / "notes" / "notes.txt", "old line\n")
    write(
        tmp_path / "scripts" / "edit.yaml",
        "turns:\n"
        "  - tool_use:\n"
        "      - {name: Read, input: {file_path: notes.txt}}\n"
        "  - tool_use:\n"
        "      - {name: Edit, input: {file_path: notes.txt, old_string: no such text,"
        " new_string: new}}\n"
        "  - tool_use:\n"
        "      - {name: Bsh, input: {command: ls}}\n"
        "  - text: EXIT_LOOP_NOW\n",
    )
    write(
        tmp_path / "edit.atom.yaml",
        "name: edit\nprompt: Edit notes.txt.\nworkspace: workspaces/notes\nscript: scripts/edit.yaml\n"
        "max_iterations: 1\naccept:\n  - file_contains: {path: notes.txt, pattern: new}\n",
    )
    result = invoke("edit.atom.yaml")
    assert result.exit_code == 1, result.output
    assert "    tool calls that failed or were refused: 2" in result.output
    assert "      Edit notes.txt: String to replace not found in file." in result.output
    assert "      Bsh `ls`: Error: No such tool available: Bsh" in result.output


@pytest.mark.slow
def test_misses_goal_fails_and_passes_with_expect_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    spec = "fixtures/specs/misses_goal.atom.yaml"
    failing = "FAIL json_schema summary.json matches inline schema"
    result = invoke(spec)
    assert result.exit_code == 1, result.output
    assert "  script: failed" in result.output
    assert f"    {failing} (line 16): summary.json does not match the schema" in result.output
    assert "      | $: 'word_count' is a required property" in result.output
    assert "    verdict: fail, score 0.3 (passes above 0.8) after 1 attempt" in result.output
    assert f"  FAILED: script: {failing}\n1 spec: 0 ok, 1 failed\n" in result.output

    result = invoke("--expect-fail", spec)
    assert result.exit_code == 0, result.output
    assert f"  ok: failed as expected ({failing})\n1 spec: 1 ok, 0 failed\n" in result.output


def test_missing_claude_is_a_harness_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATOM_CLAUDE_BIN", "/nonexistent/claude")
    result = invoke(FIXTURES / "create_file.atom.yaml")
    assert result.exit_code == 2
    assert "Error: ATOM_CLAUDE_BIN=/nonexistent/claude does not exist." in result.stderr
    assert "atom setup" in result.stderr


def test_malformed_script_fails_the_spec_even_with_expect_fail(tmp_path: Path) -> None:
    write(tmp_path / "turns.yaml", "turns: nope\n")
    write(tmp_path / "s.atom.yaml", "prompt: p\nscript: turns.yaml\n")
    problem = "a script needs a non-empty 'turns:' list at "
    for flags, verdict in (
        ([], f"  FAILED: script: {problem}"),
        (["--expect-fail"], "  FAILED (expected to fail): the script could not run\n"),
    ):
        result = invoke(*flags, "s.atom.yaml")
        assert result.exit_code == 1, result.output
        assert f"  script: error\n    {problem}" in result.output
        assert verdict in result.output
        assert result.output.endswith("1 spec: 0 ok, 1 failed\n")


# --- schema ---------------------------------------------------------------------------------


def test_typo_prints_the_collection_error_and_fails(tmp_path: Path) -> None:
    path = write(tmp_path / "typo.atom.yaml", "name: typo\npromt: Say hello.\n")
    write(tmp_path / "fine.atom.yaml", "prompt: Say hello.\n")
    result = invoke(path, "fine.atom.yaml")
    expected = "unknown key 'promt' at typo.atom.yaml:2:1 — did you mean 'prompt'?"
    with pytest.raises(SpecError) as info:
        load_specs(path)
    assert str(info.value) == expected  # the very message pytest's collection error shows
    assert result.exit_code == 1
    assert result.output.splitlines() == [
        expected,
        "fine.atom.yaml::fine",
        "  schema ok; no oracle or script to run",
        "2 specs: 1 ok, 1 failed",
    ]


def test_missing_path_is_a_usage_error() -> None:
    result = invoke("nothing-here.atom.yaml")
    assert result.exit_code == 2
    assert "does not exist" in result.output


# --- oracles --------------------------------------------------------------------------------


def test_good_oracle_passes_in_a_copy_of_the_workspace(tmp_path: Path) -> None:
    calc_spec(tmp_path, FIX_CALC)
    result = invoke("calc.atom.yaml")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == [
        "calc.atom.yaml::calc",
        "  oracle: passed",
        f"    PASS command `{PYTEST_RUN}` exits 0 (line 6): `{PYTEST_RUN}` exited 0",
        "  ok",
        "1 spec: 1 ok, 0 failed",
    ]
    fixture = (tmp_path / "workspaces" / "calc" / "calc" / "__init__.py").read_text()
    assert "return a - b" in fixture  # the oracle ran in a copy


def test_do_nothing_oracle_fails_showing_the_command_output(tmp_path: Path) -> None:
    calc_spec(tmp_path, "true\n")
    result = invoke("calc.atom.yaml")
    assert result.exit_code == 1, result.output
    assert "  oracle: failed" in result.output
    assert f"    FAIL command `{PYTEST_RUN}` exits 0 (line 6): " in result.output
    assert f"`{PYTEST_RUN}` exited 1, expected 0" in result.output
    assert "      | FAILED tests/test_calc.py::test_add - assert -1 == 5" in result.output
    assert f"  FAILED: oracle: FAIL command `{PYTEST_RUN}` exits 0\n" in result.output
    assert result.output.endswith("1 spec: 0 ok, 1 failed\n")


def test_expect_fail_turns_the_verdicts_around(tmp_path: Path) -> None:
    calc_spec(tmp_path, "true\n", name="bad")
    calc_spec(tmp_path, FIX_CALC, name="good")
    result = invoke("--expect-fail", "bad.atom.yaml")
    assert result.exit_code == 0, result.output
    assert f"  ok: failed as expected (FAIL command `{PYTEST_RUN}` exits 0)" in result.output
    result = invoke("--expect-fail", "bad.atom.yaml", "good.atom.yaml")
    assert result.exit_code == 1, result.output
    assert "  FAILED (expected to fail): the oracle passed every check" in result.output
    assert result.output.endswith("2 specs: 1 ok, 1 failed\n")


def test_oracle_that_outlives_the_timeout_is_killed(tmp_path: Path) -> None:
    pid_file = tmp_path / "background.pid"
    calc_spec(tmp_path, f"echo working\nsleep 60 &\necho $! > {pid_file}\nsleep 60\n", timeout=2)
    started = time.monotonic()
    result = invoke("calc.atom.yaml")
    assert time.monotonic() - started < 20
    assert result.exit_code == 1, result.output
    assert "    the oracle timed out after 2s\n    oracle output:\n      | working\n" in (
        result.output
    )
    assert "  FAILED: oracle: the oracle timed out after 2s\n" in result.output
    assert "PASS" not in result.output and "FAIL command" not in result.output
    pid = int(pid_file.read_text())
    assert wait_gone(pid), "the oracle's background child outlived it"


def test_oracle_without_workspace_runs_in_an_empty_folder(tmp_path: Path) -> None:
    write(
        tmp_path / "solve.sh",
        'n=$(ls -A | wc -l)\necho $n > count.txt\necho "cwd=$PWD" >&2\nexit 3\n',
    )
    write(
        tmp_path / "e.atom.yaml",
        "prompt: p\noracle: solve.sh\naccept:\n"
        "  - file_contains: {path: count.txt, pattern: '^0$'}\n  - file_absent: solve.sh\n",
    )
    result = invoke("e.atom.yaml")
    assert result.exit_code == 0, result.output
    assert "    PASS file_contains count.txt /^0$/ (line 4)" in result.output
    assert "    the oracle exited 3\n" in result.output  # noted; the checks decide


# --- output and discovery -------------------------------------------------------------------


def test_json_output(tmp_path: Path) -> None:
    calc_spec(tmp_path, "true\n")
    write(tmp_path / "plain.atom.yaml", "prompt: p\n")
    write(tmp_path / "typo.atom.yaml", "promt: p\n")
    result = invoke("--json", tmp_path)
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert [(d["spec"], d["file"], d["schema_ok"], d["ok"]) for d in data] == [
        ("calc", "calc.atom.yaml", True, False),
        ("plain", "plain.atom.yaml", True, True),
        (None, "typo.atom.yaml", False, False),
    ]
    calc, plain, typo = data
    assert calc["error"] is None and plain["runs"] == []
    assert typo["error"] == "unknown key 'promt' at typo.atom.yaml:1:1 — did you mean 'prompt'?"
    (run,) = calc["runs"]
    assert (run["kind"], run["passed"], run["error"]) == ("oracle", False, None)
    (check,) = run["checks"]
    assert check["describe"] == f"command `{PYTEST_RUN}` exits 0"
    assert check["passed"] is False
    assert check["summary"] == f"`{PYTEST_RUN}` exited 1, expected 0"
    assert "assert -1 == 5" in check["evidence"]


def test_folder_argument_finds_nested_specs(tmp_path: Path) -> None:
    write(tmp_path / "suite" / "top.atom.yaml", "prompt: p\nworkspace: ws\n")
    write(tmp_path / "suite" / "a" / "b" / "deep.atom.yaml", "prompt: p\n")
    # Fixture data, never specs of the suite: a spec's workspace and hidden folders.
    write(tmp_path / "suite" / "ws" / "broken.atom.yaml", "promt: p\n")
    write(tmp_path / "suite" / ".atom" / "runs" / "old.atom.yaml", "promt: p\n")
    write(tmp_path / "suite" / "a" / "notes.yaml", "promt: p\n")
    result = invoke("suite", "suite/a/b/deep.atom.yaml")  # named twice: validated once
    assert result.exit_code == 0, result.output
    headers = [line for line in result.output.splitlines() if not line.startswith(" ")]
    assert headers == [
        "suite/top.atom.yaml::top",
        "suite/a/b/deep.atom.yaml::deep",
        "2 specs: 2 ok, 0 failed",
    ]


def test_without_paths_the_ini_atom_paths_are_validated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path / "specs" / "one.atom.yaml", "prompt: p\n")
    write(tmp_path / "more" / "two.atom.yaml", "prompt: p\n")
    write(tmp_path / "ignored" / "three.atom.yaml", "prompt: p\n")
    write(
        tmp_path / "pyproject.toml",
        '[project]\nname = "x"\n\n[tool.pytest.ini_options]\natom_paths = ["specs", "more"]\n',
    )
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")  # relative to the ini file, as pytest resolves them
    result = invoke()
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == f"atom_paths from {tmp_path / 'pyproject.toml'}: " + " ".join(
        str(tmp_path / d) for d in ("specs", "more")
    )
    assert [line for line in lines if "::" in line] == [
        f"{tmp_path / 'specs' / 'one.atom.yaml'}::one",
        f"{tmp_path / 'more' / 'two.atom.yaml'}::two",
    ]


def test_without_paths_or_atom_paths_says_so(tmp_path: Path) -> None:
    result = CliRunner().invoke(validate, [])
    assert result.exit_code == 2
    assert "no PATHS given, and no pytest settings found" in result.output
    write(tmp_path / "tox.ini", "[pytest]\naddopts = -q\n")
    result = CliRunner().invoke(validate, [])
    assert result.exit_code == 2
    assert "no PATHS given, and tox.ini sets no atom_paths: name spec files" in result.output
    write(tmp_path / "tox.ini", "[pytest]\natom_paths = specs\n")
    result = CliRunner().invoke(validate, [])
    assert result.exit_code == 2
    assert "atom_paths in tox.ini names specs, which does not exist" in result.output
