"""The `atom` command: `atom run`, the classic loop, routing of arguments."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.agents.claude_code.cli import CLAUDE_CODE_VERSION
from pytest_atom.baseline.measure import repeat_lines
from pytest_atom.history.store import open_store
from pytest_atom.replay.recording import AUTH_VARIABLES
from pytest_atom.reports.trace import TRACE_SCHEMA
from pytest_atom.suite.ending import Ending, decide, worst
from tests.frontends_helpers import FAILS, ORDER, OUTCOMES, SLOW, XFAIL, FrontEnds, summary
from tests.helpers import bash, summary_row


@pytest.fixture
def cli(claude_bin: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> CliRunner:
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    monkeypatch.chdir(tmp_path)
    return CliRunner()


def test_help_lists_the_commands(cli: CliRunner) -> None:
    result = cli.invoke(main, ["--help"])
    assert result.exit_code == 0
    for command in ("run", "loop", "setup"):
        assert f"  {command} " in result.output
    assert 'atom "task text"' in result.output


@pytest.mark.slow
def test_run_passes_and_fails_with_exit_codes(front_ends: FrontEnds) -> None:
    """The shared project's `atom run`: tool calls stream, checks and decisions print,
    each spec is named by its node id with pytest's outcome, and a failed spec exits 1
    (a run without it exits 0: test_outcome's front-end test, on the same rows)."""
    output = front_ends.output("atom")
    assert front_ends.status("atom") == 1
    assert "iteration 1/10" in output and "attempt 1/3" in output  # misses-goal's criteria
    assert "→ Bash" in output and "sleep 4; echo slow > out.txt" in output  # tool calls stream
    assert "PASS file_exists out.txt" in output and "decision: proceed" in output
    # a failure, expected (xfail) or not, gets the same report as pytest's
    assert "verdict: fail after 1 attempt (judged by checks; no criteria)" in output
    assert "verdict: fail, score 0.3" in output
    assert summary(output) == OUTCOMES


@pytest.mark.slow
def test_run_from_a_subfolder_uses_the_project_root_and_reports_costs_apart(
    front_ends: FrontEnds,
) -> None:
    """`atom run` ran from the project's specs/ folder (a subfolder of its pytest.ini):
    runs go where pytest --atom puts them and the specs are named from the project root;
    nothing was spent now; misses-goal's cassette was recorded (from the API, its metadata
    says), the scripted specs never were."""
    specs = front_ends.project / "specs"
    assert not (specs / ".atom").exists()  # runs go where pytest --atom puts them
    traces = json.loads((front_ends.folder / "atom.json").read_text())
    assert {Path(t["atom"]["run_dir"]).parent for t in traces} == {front_ends.runs}
    [header, *table] = [
        re.split(r"\s{2,}", line.strip())
        for line in front_ends.output("atom").splitlines()
        if line.startswith(("spec ", "specs/"))
    ]
    assert header[-4:] == ["cost $", "list $", "time s", "vs baseline"]
    rows = {row[0]: dict(zip(header, row, strict=False)) for row in table}
    assert list(rows) == ORDER
    for nodeid in (SLOW, FAILS, XFAIL):  # scripted, or replayed: nothing spent now
        assert rows[nodeid]["cost $"] == "0.0000" and float(rows[nodeid]["list $"]) > 0
    # The history store keeps the same two figures: spent, and Claude Code's list price.
    store = open_store(front_ends.project / ".atom" / "history.db")
    (run,) = store.runs(kind="atom run")
    stored = {i.spec: i for i in store.items(run.id)}
    store.close()
    for nodeid in (SLOW, FAILS, XFAIL):
        kept = stored[nodeid.rpartition("::")[2]]
        assert kept.spent_usd == 0.0 and kept.kind == "trial"
        assert kept.total_cost == pytest.approx(float(rows[nodeid]["list $"]), abs=5e-5)


@pytest.mark.slow
def test_spec_path_alone_runs_it(front_ends: FrontEnds) -> None:
    """The shared `atom run` was `atom a.atom.yaml misses_goal.atom.yaml ...`: no `run`."""
    assert list(summary(front_ends.output("atom"))) == ORDER
    for folder in (front_ends.project, front_ends.project / "specs"):
        assert not (folder / "USER_PROMPT.md").exists()  # never mistaken for task text


@pytest.mark.slow
def test_run_json_and_report(front_ends: FrontEnds) -> None:
    import jsonschema

    traces = json.loads((front_ends.folder / "atom.json").read_text())
    for trace in traces:
        jsonschema.validate(trace, TRACE_SCHEMA)
    assert [t["atom"]["spec"]["name"] for t in traces] == ["a-slow", "a-fails", "misses-goal"]
    assert [t["atom"]["outcome"]["label"] for t in traces] == ["passed", "failed", "xfailed"]
    assert traces[0]["state"] == "succeeded" and traces[0]["atom"]["decision"] == "proceed"
    assert (front_ends.project / "traces" / "a" / "a-slow.json").exists()
    assert (front_ends.project / "traces" / "misses_goal" / "misses-goal.json").exists()


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
    listed = re.search(r"^Commands: (.*)\.$", result.output, re.M)
    assert listed is not None, result.output
    commands = listed[1].split(", ")  # every command, in order: new ones join the list
    assert commands == sorted(commands)
    assert {"baseline", "cache", "cassette", "doctor", "run", "setup", "validate"} <= set(commands)
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
    gateway = gateway_for([{"text": "working"}])
    Path("USER_PROMPT.md").write_text("Work.")
    env = {
        "ANTHROPIC_BASE_URL": gateway.url,
        "ANTHROPIC_API_KEY": "placeholder-for-tests",
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude-config"),
    }
    result = cli.invoke(main, ["--max-iterations", "1"], env=env)
    assert result.exit_code == 1
    assert "Iteration 1/1" in result.output and "⚠️  max_iterations" in result.output


def test_setup_finds_the_pinned_cli(cli: CliRunner) -> None:
    result = cli.invoke(main, ["setup"])
    assert result.exit_code == 0
    assert f"Claude Code {CLAUDE_CODE_VERSION} found" in result.output


@pytest.mark.slow
def test_run_compares_with_a_baseline_and_fails_on_a_regression(
    front_ends: FrontEnds, tmp_path: Path
) -> None:
    """``atom run --baseline``, as ``pytest --atom --atom-baseline``: the deltas in the
    summary and the HTML report, and a regression fails the run."""
    output = front_ends.output("atom")
    assert front_ends.status("atom") == 1
    assert f"baseline regression: {SLOW}: tokens rose from 1 to" in output
    assert "vs baseline" in output and "regression turns +1 tokens +" in output
    page = (front_ends.project / "atom.html").read_text()
    assert "vs baseline" in page and '<span class="delta">tokens +' in page

    # The ini's tolerance, through the one resolver atom run and `atom results combine`
    # share (host_harness): with it, a-slow's shard no longer regresses.
    shutil.copytree(front_ends.project / "shard1", tmp_path / "shard1")
    (tmp_path / "pytest.ini").write_text(
        "[pytest]\natom_baseline_tolerance = tokens=none, turns=none\n"
    )
    baseline = front_ends.project / "baseline.json"
    same = _in(tmp_path, ["results", "combine", "shard1", "--baseline", str(baseline)])
    assert same.exit_code == 0, same.output
    assert "baseline regression" not in same.output


def test_run_refuses_a_missing_baseline_before_it_starts(cli: CliRunner, tmp_path: Path) -> None:
    (tmp_path / "x.atom.yaml").write_text("name: x\nprompt: do it\nscript: s.yaml\n")
    missing = cli.invoke(main, ["run", "x.atom.yaml", "--baseline", str(tmp_path / "none.json")])
    assert missing.exit_code == 2 and "write one with: atom baseline save" in missing.output


def test_run_notes_pytest_atom_keys_in_pytests_ini_and_checks_its_options(
    cli: CliRunner, tmp_path: Path
) -> None:
    """An `atom_*` key in pytest.ini would make a pytest without pytest-atom warn: the note
    comes first (here before a spec that cannot run stops the command, no CLI started);
    an option is parsed as pytest's `--atom-*` one is."""
    (tmp_path / "pytest.ini").write_text("[pytest]\natom_baseline_tolerance = tokens=none\n")
    (tmp_path / "x.atom.yaml").write_text("name: x\nprompt: do it\n")
    result = cli.invoke(main, ["run", "x.atom.yaml", "--min-pass-rate", "0.5"])
    assert result.exit_code == 2, result.output
    assert "pytest-atom: atom_baseline_tolerance in pytest.ini would make a pytest" in (
        result.output
    )
    bad = cli.invoke(main, ["run", "x.atom.yaml", "--min-pass-rate", "lots"])
    assert bad.exit_code == 2 and "Invalid value for '--min-pass-rate'" in bad.output


def _in(folder: Path, args: list[str]) -> Any:
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        return CliRunner().invoke(main, args)


@pytest.mark.slow
def test_run_prints_the_pass_rate_against_its_minimum(cli: CliRunner, tmp_path: Path) -> None:
    """`atom run --min-pass-rate`, end to end (one run; the rates over repeats and the exit
    status they decide are the next test's, on rows as a repeated run makes them)."""
    (tmp_path / "once.atom.yaml").write_text(
        "name: once\nprompt: p\nscript: s.yaml\naccept:\n  - command: {run: 'mkdir flag'}\n"
    )
    (tmp_path / "s.yaml").write_text("turns:\n  - text: EXIT_LOOP_NOW\n")
    ok = cli.invoke(main, ["run", "once.atom.yaml", "--min-pass-rate", "0.9"])
    assert ok.exit_code == 0, ok.output
    assert "once.atom.yaml::once: 1/1 passed, pass rate 1.00 [" in ok.output
    assert "(ok the minimum 0.9)" in ok.output


def test_the_minimum_pass_rate_gates_the_run() -> None:
    """`--min-pass-rate`: the rates over repeats decide, not a single failed repeat."""
    rows = [
        summary_row("once.atom.yaml::once[r1]", "passed", {}),
        summary_row("once.atom.yaml::once[r2]", "failed", {}),
    ]
    rate = "1/2 passed, pass rate 0.50 [0.09, 0.91], pass@2 1.00, pass^2 0.00"
    assert any(
        rate in line and "(BELOW the minimum 0.9)" in line for line in repeat_lines(rows, 0.9)
    )
    assert decide(Ending(worst(rows), rows, min_pass_rate=0.9)) == 1
    assert any("(ok the minimum 0.5)" in line for line in repeat_lines(rows, 0.5))
    assert (
        decide(Ending(worst(rows), rows, min_pass_rate=0.5)) == 0
    )  # the gate, not the failed repeat
    assert decide(Ending(worst(rows), rows)) == 1
