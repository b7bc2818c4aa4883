"""The `atom` command: `atom run`, the classic loop, routing of arguments."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.agents.claude_code.cli import CLAUDE_CODE_VERSION
from pytest_atom.cassettes.recording import AUTH_VARIABLES
from pytest_atom.reports.trace import TRACE_SCHEMA
from tests.helpers import REPO, bash


@pytest.fixture
def cli(claude_bin: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> CliRunner:
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    monkeypatch.chdir(tmp_path)
    return CliRunner()


@pytest.fixture
def specs(tmp_path: Path) -> Path:
    target = tmp_path / "specs"
    shutil.copytree(REPO / "fixtures" / "specs", target)
    return target


def test_help_lists_the_commands(cli: CliRunner) -> None:
    result = cli.invoke(main, ["--help"])
    assert result.exit_code == 0
    for command in ("run", "loop", "setup"):
        assert f"  {command} " in result.output
    assert 'atom "task text"' in result.output


@pytest.mark.slow
def test_run_passes_and_fails_with_exit_codes(cli: CliRunner, specs: Path) -> None:
    ok = cli.invoke(main, ["run", str(specs / "create_file.atom.yaml")])
    assert ok.exit_code == 0, ok.output
    assert "attempt 1/3" in ok.output and "iteration 1/3" in ok.output
    assert "→ Bash" in ok.output and "printf 'hello, world" in ok.output  # tool calls stream
    assert (
        "PASS file_contains hello.txt" in ok.output and "decision: proceed, score 0.95" in ok.output
    )
    assert "specs/create_file.atom.yaml::create-file  passed" in ok.output  # a node id

    spec = specs / "misses_goal.atom.yaml"
    expected = cli.invoke(main, ["run", str(spec)])  # an xfail spec: its failure is expected
    assert expected.exit_code == 0, expected.output
    assert "verdict: fail, score 0.3" in expected.output  # the same report as pytest's
    assert "misses_goal.atom.yaml::misses-goal  xfailed" in expected.output

    spec.write_text("\n".join(ln for ln in spec.read_text().splitlines() if "xfail" not in ln))
    failed = cli.invoke(main, ["run", str(spec)])
    assert failed.exit_code == 1
    assert "misses_goal.atom.yaml::misses-goal  failed" in failed.output


@pytest.mark.slow
def test_run_from_a_subfolder_uses_the_project_root_and_reports_costs_apart(
    cli: CliRunner, specs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.pytest.ini_options]\naddopts = "-q"\n')
    (specs / "plain.atom.yaml").write_text(  # no criteria: a second attempt can never come
        "name: plain\nprompt: Create hello.txt.\nscript: scripts/create_file.yaml\n"
        "accept:\n  - file_exists: hello.txt\n"
    )
    monkeypatch.chdir(specs)
    result = cli.invoke(main, ["run", "create_file.atom.yaml", "plain.atom.yaml"])
    assert result.exit_code == 0, result.output
    assert not (specs / ".atom").exists()  # runs go where pytest --atom puts them
    assert len(list((tmp_path / ".atom" / "runs").iterdir())) == 2
    replayed, plain = result.output.split("plain (plain.atom.yaml)")
    assert "attempt 1/3" in replayed and "attempt 1/" not in plain
    table = [
        line.split() for line in result.output.splitlines() if line.startswith(("spec ", "specs/"))
    ]
    assert table[0][-6:] == ["cost", "$", "rec", "$", "time", "s"]
    rows = {row[0]: row for row in table[1:]}
    replay_row, plain_row = (
        rows["specs/create_file.atom.yaml::create-file"],
        rows["specs/plain.atom.yaml::plain"],
    )
    # The shipped cassette was recorded from its script: nobody ever paid for its answers.
    assert replay_row[-3:-1] == ["0.0000", "-"]
    assert plain_row[-3:-1] == ["0.0000", "-"]  # scripted: no API called, nothing recorded

    cassette = specs / "cassettes" / "create_file" / "create-file.yaml"
    text = cassette.read_text().replace(
        "upstream: scripted://create_file.yaml", "upstream: https://api.anthropic.com"
    )
    cassette.write_text(text)  # as if recorded from the API: its cost was spent once
    again = cli.invoke(main, ["run", "create_file.atom.yaml"])
    [row] = [line.split() for line in again.output.splitlines() if line.startswith("specs/")]
    assert row[-3] == "0.0000" and float(row[-2]) > 0  # spent nothing now; recorded


@pytest.mark.slow
def test_spec_path_alone_runs_it(cli: CliRunner, specs: Path) -> None:
    result = cli.invoke(main, [str(specs / "create_file.atom.yaml")])
    assert result.exit_code == 0, result.output
    assert not Path("USER_PROMPT.md").exists()  # never mistaken for task text


@pytest.mark.slow
def test_run_json_and_report(cli: CliRunner, specs: Path, tmp_path: Path) -> None:
    import jsonschema

    result = cli.invoke(
        main, ["run", "--json", "--report", "out", str(specs / "create_file.atom.yaml")]
    )
    assert result.exit_code == 0
    [trace] = json.loads(result.stdout)
    jsonschema.validate(trace, TRACE_SCHEMA)
    assert trace["state"] == "succeeded" and trace["atom"]["score"] == 0.95
    assert (tmp_path / "out" / "create_file" / "create-file.json").exists()


def test_malformed_spec_is_an_error_without_the_usage_banner(
    cli: CliRunner, tmp_path: Path
) -> None:
    (tmp_path / "bad.atom.yaml").write_text("name: bad\npromt: x\n")
    result = cli.invoke(main, ["run", "bad.atom.yaml"])
    assert result.exit_code == 2
    assert "Error: unknown key 'promt' at bad.atom.yaml:2:1 — did you mean 'prompt'?" in (
        result.output
    )
    assert "Usage:" not in result.output  # the command line was right; the file is not
    (tmp_path / "quote.atom.yaml").write_text('name: q\nprompt: "open\n\n\n')
    result = cli.invoke(main, ["run", "quote.atom.yaml"])
    assert result.exit_code == 2 and "Usage:" not in result.output
    assert "while scanning a quoted scalar (line 2, column 9) at quote.atom.yaml:2:9" in (
        result.output
    )


def test_missing_cassette_is_a_harness_error(cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "x.atom.yaml").write_text("name: x\nprompt: do it\n")
    result = cli.invoke(main, ["run", "x.atom.yaml"])
    assert result.exit_code == 2
    assert "record it with: pytest --atom 'x.atom.yaml::x' --atom-record-mode=once" in result.output


@pytest.mark.slow
def test_classic_loop_writes_the_prompt_and_iterates(
    cli: CliRunner, gateway_for: Any, tmp_path: Path
) -> None:
    gateway = gateway_for(
        [bash("echo hi > hi.txt"), {"text": "Not done yet."}, {"text": "Done.\nEXIT_LOOP_NOW"}]
    )
    env = {
        "ANTHROPIC_BASE_URL": gateway.url,
        "ANTHROPIC_API_KEY": "placeholder-for-tests",
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"),
    }
    result = cli.invoke(main, ["Create hi.txt"], env=env)
    assert result.exit_code == 0, result.output
    assert Path("USER_PROMPT.md").read_text() == "Create hi.txt"
    assert Path("hi.txt").read_text() == "hi\n"
    assert "📝 Created USER_PROMPT.md with provided prompt" in result.output
    assert f"🔬 Atom: {tmp_path.name}" in result.output
    assert f"{'=' * 60}\nIteration 2/25\n{'=' * 60}" in result.output
    assert "✅ Complete after 2 iterations" in result.output


@pytest.mark.parametrize(
    ("args", "hint"),
    [
        (["valdiate"], "Did you mean 'validate'?"),
        (["casette", "show"], "Did you mean 'cassette'?"),
        (["bench", "0.9", "0.5"], "quote it: atom 'bench 0.9 0.5'"),
        (["refactor"], "one-word task: atom loop refactor"),
    ],
)
def test_bare_words_are_refused_and_never_start_an_agent(
    cli: CliRunner, tmp_path: Path, args: list[str], hint: str
) -> None:
    """Only quoted text reaches the classic loop: a typo must not write USER_PROMPT.md and
    start a paid session (no gateway here: an agent that started would fail differently)."""
    result = cli.invoke(main, args)
    assert result.exit_code == 2, result.output
    assert f"No such command '{args[0]}'." in result.output
    assert hint in result.output
    assert "Commands: baseline, cassette, doctor" in result.output
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_classic_loop_without_credentials_says_so_at_once(cli: CliRunner, tmp_path: Path) -> None:
    """The CLI answers "Not logged in" at once; the loop must not retry that for minutes."""
    home = tmp_path / "home"
    home.mkdir()
    env: dict[str, str | None] = {"HOME": str(home), "CLAUDE_CONFIG_DIR": None}
    env.update({name: None for name in (*AUTH_VARIABLES, "ANTHROPIC_BASE_URL")})
    started = time.monotonic()
    result = cli.invoke(main, ["Create hi.txt"], env=env)
    assert result.exit_code == 1, result.output
    assert "Claude Code could not authenticate (Not logged in" in result.output
    assert "typing /login, or set one of ANTHROPIC_API_KEY" in result.output
    assert "Error (code 1)" not in result.output  # no retry
    assert time.monotonic() - started < 30


def test_bare_atom_needs_a_user_prompt(cli: CliRunner) -> None:
    result = cli.invoke(main, [])
    assert result.exit_code == 1
    assert "❌ USER_PROMPT.md not found in current directory" in result.output
    assert "Usage: atom [prompt text]" in result.output


@pytest.mark.slow
def test_classic_loop_that_runs_out_of_iterations(
    cli: CliRunner, gateway_for: Any, tmp_path: Path
) -> None:
    gateway = gateway_for([{"text": "working"}, {"text": "still working"}])
    Path("USER_PROMPT.md").write_text("Work.")
    env = {
        "ANTHROPIC_BASE_URL": gateway.url,
        "ANTHROPIC_API_KEY": "placeholder-for-tests",
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"),
    }
    result = cli.invoke(main, ["--max-iterations", "2"], env=env)
    assert result.exit_code == 1
    assert "⚠️  max_iterations" in result.output


def test_setup_finds_the_pinned_cli(cli: CliRunner) -> None:
    result = cli.invoke(main, ["setup"])
    assert result.exit_code == 0
    assert f"Claude Code {CLAUDE_CODE_VERSION} found" in result.output


@pytest.mark.slow
def test_run_compares_with_a_baseline_and_fails_on_a_regression(
    cli: CliRunner, specs: Path, tmp_path: Path
) -> None:
    """``atom run --baseline``, as ``pytest --atom --atom-baseline``: the deltas in the
    summary and the HTML report, and a regression fails the run."""
    spec = specs / "create_file.atom.yaml"
    key = "specs/create_file.atom.yaml::create-file"
    entry = {"outcome": "passed", "runs": 1, "pass_rate": 1.0, "score": 0.95, "tokens": 1}
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"format": "pytest-atom/baseline@1", "specs": {key: entry}}))
    html = tmp_path / "report.html"
    worse = cli.invoke(main, ["run", str(spec), "--baseline", str(baseline), "--html", str(html)])
    assert worse.exit_code == 1, worse.output  # the spec passed; its tokens regressed
    assert f"baseline regression: {key}: tokens rose from 1 to" in worse.output
    assert "vs baseline" in worse.output and "regression tokens +" in worse.output
    page = html.read_text()
    assert "vs baseline" in page and '<span class="delta">tokens +' in page

    (tmp_path / "pytest.ini").write_text("[pytest]\natom_baseline_tolerance = tokens=none\n")
    same = cli.invoke(main, ["run", str(spec), "--baseline", str(baseline)])
    assert same.exit_code == 0, same.output  # the ini's tolerance, through the one resolver

    missing = cli.invoke(main, ["run", str(spec), "--baseline", str(tmp_path / "none.json")])
    assert missing.exit_code == 2 and "write one with: atom baseline save" in missing.output


@pytest.mark.slow
def test_run_gates_on_the_minimum_pass_rate(cli: CliRunner, tmp_path: Path) -> None:
    flag = tmp_path / "flag"  # the first repeat makes it, so the second one's check fails
    (tmp_path / "once.atom.yaml").write_text(
        f"name: once\nprompt: p\nscript: s.yaml\naccept:\n  - command: {{run: 'mkdir {flag}'}}\n"
    )
    (tmp_path / "s.yaml").write_text("turns:\n  - text: EXIT_LOOP_NOW\n")
    args = ["run", "once.atom.yaml", "--repeat", "2", "--min-pass-rate"]
    low = cli.invoke(main, [*args, "0.9"])
    assert low.exit_code == 1, low.output
    assert "1/2 passed, pass rate 0.50 [0.09, 0.91], pass@2 1.00, pass^2 0.00" in low.output
    assert "(BELOW the minimum 0.9)" in low.output
    flag.rmdir()
    ok = cli.invoke(main, [*args, "0.5"])
    assert ok.exit_code == 0, ok.output  # the gate, not the single failed repeat, decides
    assert "(ok the minimum 0.5)" in ok.output
