"""`atom validate`: schema errors, oracles in workspace copies, scripts through the real CLI."""

from __future__ import annotations

import json
import shutil
import time
import uuid
from pathlib import Path

import psutil
import pytest
from click.testing import CliRunner, Result

from atom_cli.validate_cmd import validate
from pytest_atom.errors import SpecError
from pytest_atom.replay.staleness import workspace_config
from pytest_atom.run.oracle import cassette_notes
from pytest_atom.spec_loader.load import load_specs
from tests.helpers import write

REPO = Path(__file__).resolve().parents[2]
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

#: Turns that go wrong: an edit that misses and a mistyped tool name.
WRONG_TURNS = """  - tool_use:
      - {name: Read, input: {file_path: hello.txt}}
  - tool_use:
      - {name: Edit, input: {file_path: hello.txt, old_string: no such text, new_string: new}}
  - tool_use:
      - {name: Bsh, input: {command: ls}}
"""


@pytest.mark.slow
def test_script_is_played_even_when_a_cassette_exists(tmp_path: Path) -> None:
    """A cassette that replays a different session must not be used: the script is. The
    script's edit misses and a tool name is mistyped: the same lines as pytest's failure
    report, so the cause is not hidden behind a mere failed check. (A run that passes and
    --expect-fail's verdicts are the oracle tests' below: a script's run is judged alike.)"""
    shutil.copy2(FIXTURES / "create_file.atom.yaml", tmp_path)
    script = (FIXTURES / "scripts" / "create_file.yaml").read_text(encoding="utf-8")
    script = script.replace("hello, world", "goodbye")
    last = script.index("  - text: |\n      hello.txt contains")
    write(tmp_path / "scripts" / "create_file.yaml", script[:last] + WRONG_TURNS + script[last:])
    # The shipped cassette writes "hello, world": replaying it would pass the spec.
    shutil.copytree(FIXTURES / "cassettes", tmp_path / "cassettes")
    result = invoke("create_file.atom.yaml")
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[:2] == ["create_file.atom.yaml::create-file", "  script: failed"]
    assert "    PASS file_exists hello.txt (line 13): hello.txt exists" in lines
    assert "    FAIL file_contains hello.txt /^hello, world$/ (line 14): " in result.output
    assert "      | goodbye" in result.output
    assert "    tool calls that failed or were refused: 2" in result.output
    assert "      Edit hello.txt: String to replace not found in file." in result.output
    assert "      Bsh `ls`: Error: No such tool available: Bsh" in result.output
    assert "    note: pytest --atom will refuse the stale cassette cassettes/create_file/" in (
        result.output
    )
    assert (
        "    verdict: fail, score 0.95 (passes above 0.8) after 1 attempt (forced: a "
        "deterministic check failed)"
    ) in lines
    assert "  FAILED: script: FAIL file_contains hello.txt /^hello, world$/" in lines
    assert result.output.endswith("1 spec: 0 ok, 1 failed\n")


def test_notes_say_what_pytest_will_do_with_the_cassette(tmp_path: Path) -> None:
    """A spec's run is noted only when pytest --atom would replay its cassette otherwise
    than the script just played (the stale case is the test above): the shipped cassette
    matches its spec, and a spec without a cassette plays its script in pytest too."""
    [shipped] = load_specs(FIXTURES / "create_file.atom.yaml")
    assert cassette_notes(shipped) == []
    assert workspace_config(shipped) is None  # no workspace: no configuration of its own
    shutil.copytree(FIXTURES / "scripts", tmp_path / "scripts")
    [alone] = load_specs(shutil.copy2(FIXTURES / "create_file.atom.yaml", tmp_path))
    assert cassette_notes(alone) == []


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


def test_validate_names_what_the_outcome_cache_takes_on_trust_and_what_keeps_it_out(
    tmp_path: Path,
) -> None:
    write(
        tmp_path / "trusting.atom.yaml",
        "prompt: Fetch.\nsandbox: {network: [pypi.org]}\ncache: {trust: [network]}\n",
    )
    write(tmp_path / "networked.atom.yaml", "prompt: Fetch.\nsandbox: false\n")
    result = invoke("trusting.atom.yaml", "networked.atom.yaml", "--json")
    assert [spec["cache_trust"] for spec in json.loads(result.output)] == [["network"], []]
    lines = invoke("trusting.atom.yaml", "networked.atom.yaml").output.splitlines()
    assert lines[:5] == [
        "trusting.atom.yaml::trusting",
        "  cache: trusts network: the sandbox lets its commands reach the network (sandbox: network:)",
        "  schema ok; no oracle or script to run",
        "networked.atom.yaml::networked",
        "  cache: never reported from the store: a command runs outside the sandbox "
        "(sandbox: false, unsandboxed: true); `cache: {trust: [unsandboxed]}` takes it on trust",
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
    # The oracle runs in the sandbox (its own PID namespace, no writes outside its
    # workspace): its background child is found by the name it runs under.
    marker = f"atom-oracle-child-{uuid.uuid4().hex[:8]}"
    calc_spec(tmp_path, f"echo working\n(exec -a {marker} sleep 60) &\nsleep 60\n", timeout=2)
    started = time.monotonic()
    result = invoke("calc.atom.yaml")
    assert time.monotonic() - started < 20
    assert result.exit_code == 1, result.output
    assert "    the oracle timed out after 2s\n    oracle output:\n      | working\n" in (
        result.output
    )
    assert "  FAILED: oracle: the oracle timed out after 2s\n" in result.output
    assert "PASS" not in result.output and "FAIL command" not in result.output
    deadline = time.monotonic() + 5
    while _running(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _running(marker), "the oracle's background child outlived it"


def _running(marker: str) -> bool:
    """Whether a process runs under the name `marker` (``exec -a``)."""
    return any((p.info["cmdline"] or [""])[0] == marker for p in psutil.process_iter(["cmdline"]))


def test_oracle_without_workspace_runs_in_an_empty_folder(tmp_path: Path) -> None:
    write(
        tmp_path / "solve.sh",
        # `ls`, not `ls -A`: while a sandboxed command runs, srt's mount points shield the
        # files it protects (.bashrc, .mcp.json, ...) in its working folder.
        'n=$(ls | wc -l)\necho $n > count.txt\necho "cwd=$PWD" >&2\nexit 3\n',
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


LOW_SCORE_SCRIPT = """\
turns:
  - tool_use:
      - {name: Bash, input: {command: "echo hi > hello.txt"}}
  - text: "Wrote it.\\n\\nEXIT_LOOP_NOW"
reflector:
  - verdict:
      score: 0.3
      decision: refine
      criteria:
        - {criterion: "hello.txt greets the reader warmly.", met: false, evidence: "It says hi."}
      feedback: "Greet warmly."
"""


@pytest.mark.slow
def test_a_low_score_is_named_as_the_cause_not_the_agents_signal(tmp_path: Path) -> None:
    """The agent signalled completion and every check passed; the judge's score failed it.
    The conclusion names that score, as the run's outcome does, not the agent's signal."""
    write(tmp_path / "scripts" / "hello.yaml", LOW_SCORE_SCRIPT)
    write(
        tmp_path / "hello.atom.yaml",
        "name: hello\nprompt: Write hello.txt.\nscript: scripts/hello.yaml\ntimeout: 120\n"
        "attempts: 1\ncriteria:\n  - hello.txt greets the reader warmly.\n"
        "accept:\n  - file_exists: hello.txt\n",
    )
    result = invoke("hello.atom.yaml")
    assert result.exit_code == 1, result.output
    (conclusion,) = [line for line in result.output.splitlines() if "FAILED" in line]
    assert conclusion == "  FAILED: script: fail, score 0.3 (passes above 0.8)", result.output
