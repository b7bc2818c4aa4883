"""The messages name the bad value and the fix.

A script's verdict that the reflector's schema refuses is named where it is written; a
set-up the sandbox's proxy refused says which allowance is missing. Each is tested at the
function that says it: the script's loader, the set-up runner (under the real `srt`, no
Claude Code).
"""

from __future__ import annotations

import http.server
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.agents.claude_code.cli import CLAUDE_CODE_VERSION
from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.environment import EnvironmentClue, environment_clue, network_hint
from pytest_atom.errors import ScriptError
from pytest_atom.gateway.scripted import Script
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.recording import cassette_path, open_model_source
from pytest_atom.reports.phrases import drift_line
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.summary import environment_lines
from pytest_atom.reports.text import failure_report
from pytest_atom.results.check_result import CheckResult
from pytest_atom.results.outcome import judge
from pytest_atom.results.record import RunOutcome
from pytest_atom.results.spec_result import Attempt, SpecResult
from pytest_atom.run.setup_commands import run_setup
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec.types import SandboxOptions, Spec
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import built_check, summary_row
from tests.recording_helpers import create_file_spec

VERDICT = {"score": 0.2, "decision": "refine", "criteria": [], "feedback": "more"}


def _script(path: Path, verdict: str) -> Path:
    path.write_text(f"turns:\n  - text: Done. EXIT_LOOP_NOW\nreflector:\n  - verdict: {verdict}\n")
    return path


def test_a_verdict_decision_the_schema_refuses_is_named_with_the_allowed_ones(
    tmp_path: Path,
) -> None:
    """`decision: fail` once made the CLI ask the reflector for a second turn, and the
    script said only that it had one; now its loader names the value and the choices."""
    script = _script(
        tmp_path / "x.yaml", "{score: 0.2, decision: fail, criteria: [], feedback: wrong}"
    )
    with pytest.raises(ScriptError) as caught:
        Script.load(script)
    assert str(caught.value) == (
        "the reflector's verdict: decision 'fail' is not one of proceed, refine, rollback "
        f"at {script}:4"
    )
    # written as a block, the line is the decision's own
    script.write_text(
        "turns:\n  - text: Done.\nreflector:\n  - verdict:\n      score: 0.2\n"
        "      decision: fail\n      criteria: []\n      feedback: wrong\n"
    )
    with pytest.raises(ScriptError, match=rf"decision 'fail' is not one of .* at {script}:6$"):
        Script.load(script)


@pytest.mark.parametrize(
    ("verdict", "said"),
    [
        ({**VERDICT, "score": 2}, "score 2 is outside 0 to 1"),
        ({**VERDICT, "score": "high"}, "score 'high' is not a number"),
        (
            {k: v for k, v in VERDICT.items() if k != "feedback"},
            "lacks 'feedback' (a verdict has score, decision, criteria, feedback)",
        ),
        ({**VERDICT, "why": "x"}, "has unknown key 'why' (allowed: score, decision,"),
        (
            {**VERDICT, "criteria": [{"criterion": "c", "met": "yes", "evidence": "e"}]},
            "criteria.0.met 'yes' is not true or false",
        ),
    ],
)
def test_each_way_a_scripted_verdict_breaks_the_schema_is_said(
    verdict: dict[str, object], said: str
) -> None:
    with pytest.raises(ScriptError, match="the reflector's verdict: ") as caught:
        Script.from_data({"turns": [{"text": "hi"}], "reflector": [{"verdict": verdict}]})
    assert said in str(caught.value)


def test_a_verdict_inside_a_choice_is_checked_too() -> None:
    bad = {**VERDICT, "decision": "pass"}
    choice = {"choices": [{"weight": 1, "turns": [{"verdict": bad}]}]}
    with pytest.raises(ScriptError, match="decision 'pass' is not one of"):
        Script.from_data({"turns": [{"text": "hi"}], "reflector": [choice]})


@pytest.fixture
def loopback() -> Iterator[int]:
    """A server on 127.0.0.1 outside the sandbox, in no spec's `sandbox.network`."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def test_a_setup_the_sandbox_kept_off_the_network_names_the_host_and_the_allowance(
    tmp_path: Path, loopback: int
) -> None:
    """pip through the sandbox's proxy to a host the spec does not allow: the issue's
    ``ProxyError('Cannot connect to proxy.')``, now with the key that lets it through."""
    run = tmp_path / "run"
    attempt = run / "attempts" / "a01"
    attempt.mkdir(parents=True)
    host = f"127.0.0.1:{loopback}"
    # The sandbox's NO_PROXY lets loopback bypass the proxy (and then fail to connect):
    # cleared, pip asks the proxy as it does for any other host.
    pip = (
        f"NO_PROXY= no_proxy= {sys.executable} -m pip download --no-deps --retries 1 "
        f"--timeout 5 -d dl --index-url https://{host}/simple requests"
    )
    outcome = run_setup(
        [pip],
        attempt,
        run_dir=run,
        confinement=Confinement(run, SandboxOptions()),
        env={},
        timeout=120,
    )
    assert not outcome.ok and outcome.failed == pip
    # As the issue saw it; pip 23 wraps the refusal in "ProxyError('Cannot connect to
    # proxy.', …)", newer pips print it bare.
    assert "Tunnel connection failed: 403 host is not on the allow list" in outcome.output
    headline, hint = outcome.problem().splitlines()[:2]
    assert headline == f"set-up command `{pip}` exited 1 (the agent did not start):"
    assert hint == (
        f"the sandbox refused its network access to {host}: the set-up reaches only the "
        f"hosts the spec allows; add `sandbox: {{network: [{host}]}}` to the spec"
    )


def test_a_package_manager_whose_output_names_no_host_gets_its_registry_named() -> None:
    pip = (
        "$ pip install -r requirements.txt\nWARNING: Retrying (Retry(total=4)) after connection "
        "broken by 'ProxyError('Cannot connect to proxy.', OSError('Tunnel connection failed: "
        "403 host is not on the allow list'))': /simple/attrs/\n"
    )
    hint = network_hint(pip, "pip install -r requirements.txt")
    assert hint is not None and "`sandbox: {network: [pypi.org, files.pythonhosted.org]}`" in hint
    npm = "npm error 403 403 host is not on the allow list - GET https://registry.npmjs.org/x\n"
    hint = network_hint(npm, "npm ci")
    assert hint is not None and "[registry.npmjs.org]" in hint
    # a failure that is not the proxy's says nothing of the network
    assert (
        network_hint("ERROR: No matching distribution found for nope\n", "pip install nope") is None
    )


def test_a_rejudged_cassette_names_the_claude_code_it_was_recorded_and_replayed_with(
    tmp_path: Path, claude_bin: Path
) -> None:
    """`--atom-rejudge` replays the agent's side: its drift line said "Claude Code
    (unknown)", though the cassette records its version."""
    spec = load_spec(create_file_spec(tmp_path))
    recorded = Cassette.load(cassette_path(spec)).metadata["claude_code_version"]
    source = open_model_source(spec, RunSettings(rejudge=True), paths={}, claude_bin=claude_bin)
    try:
        tape = source.tape
        assert source.kind == "rejudge" and tape is not None
        assert (tape.drift.recorded_version, tape.drift.live_version) == (
            recorded,
            CLAUDE_CODE_VERSION,
        )
        tape.drift.system_changed = True  # a drift to report
        line = drift_line(tape.drift) or ""
        assert "(unknown)" not in line and "an unknown version" not in line
        if recorded == CLAUDE_CODE_VERSION:
            assert line.startswith(f"recorded and replayed with Claude Code {recorded}: ")
        else:
            assert line.startswith(f"recorded with Claude Code {recorded}, replayed with ")
    finally:
        source.finish(spec, failed=True, cli_version=None)  # stops its script's gateway


#: A caller variable no `pass_env:` names: the run leaves it out.
LEFT_OUT = "ATOM_TEST_DATABASE_URL"


def _failed_check(tmp_path: Path, name: str, evidence: str, **spec: Any) -> SpecResult:
    """A spec whose one command check failed with `evidence` (typed, no CLI)."""
    made = Spec(name=name, path=tmp_path / f"{name}.atom.yaml", line=1, prompt="p", **spec)
    check = built_check("command", {"run": "make test", "exit_code": 0}, 4)
    code = "127" if "not found" in evidence else "1"
    failed = CheckResult(check, False, f"`make test` exited {code}, expected 0", evidence)
    attempt = Attempt(
        1,
        tmp_path / "a01",
        RunOutcome(True, 1),
        [],
        [failed],
        decision=judge(True, [failed], None, 0.8),
    )
    return SpecResult(made, tmp_path, [attempt], 1.0, 0.8)


@pytest.fixture
def caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """The caller has a variable the runs leave out."""
    monkeypatch.setenv(LEFT_OUT, "postgres://localhost/app")


@pytest.mark.usefixtures("caller")
def test_a_failure_the_environment_had_no_part_in_lists_no_caller_variables(
    tmp_path: Path,
) -> None:
    result = _failed_check(
        tmp_path, "math", "$ make test\nAssertionError: assert 2 == 3\n[exit code 1]"
    )
    report = failure_report(result)
    assert "environment:" not in report and "caller variable" not in report
    assert "atom_environment" not in result_properties(result)
    assert (
        environment_lines(
            [summary_row("math.atom.yaml::math", "failed", result_properties(result))]
        )
        == []
    )


@pytest.mark.usefixtures("caller")
def test_a_left_out_variable_the_output_names_is_said_with_its_pass_env(tmp_path: Path) -> None:
    result = _failed_check(
        tmp_path, "db", f"Traceback (most recent call last):\nKeyError: '{LEFT_OUT}'\n"
    )
    report = failure_report(result)
    assert (
        f"  environment: `KeyError: '{LEFT_OUT}'`: {LEFT_OUT} is a caller variable left out of "
        f"the run's environment; pass it with `pass_env: [{LEFT_OUT}]` in the spec or "
        ".atom/config.yaml"
    ) in report.splitlines()
    # passed, it is no clue
    assert "environment:" not in failure_report(
        _failed_check(tmp_path, "db", f"KeyError: '{LEFT_OUT}'\n", pass_env=(LEFT_OUT,))
    )


@pytest.mark.usefixtures("caller")
def test_commands_not_found_list_the_left_out_variables_once_a_session(tmp_path: Path) -> None:
    """Two specs whose tool was not found: each report quotes its own line, and the
    caller variables left out are listed once, under the summary, not under each."""
    results = [
        _failed_check(tmp_path, "a", "$ make test\nbash: line 1: mytool: command not found\n"),
        _failed_check(tmp_path, "b", "$ make test\n/bin/sh: 1: othertool: not found\n"),
    ]
    for result, said in zip(
        results, ("mytool: command not found", "othertool: not found"), strict=True
    ):
        [line] = [x for x in failure_report(result).splitlines() if "environment:" in x]
        assert f"{said}`" in line and "listed once, under the session's summary" in line
        assert LEFT_OUT not in line
    rows = [
        summary_row(f"{r.spec.name}.atom.yaml::{r.spec.name}", "failed", result_properties(r))
        for r in results
    ]
    [line] = environment_lines(rows)
    assert line.startswith(
        "environment: 2 specs failed on what may be the run's environment: a.atom.yaml::a "
        "(`bash: line 1: mytool: command not found`); b.atom.yaml::b ("
    )
    assert line.count(LEFT_OUT) == 1 and "Pass one with `pass_env: [NAME]`" in line


@pytest.mark.parametrize(
    ("output", "clue"),
    [
        (
            "bash: line 1: mytool: command not found",
            EnvironmentClue("bash: line 1: mytool: command not found", command="mytool"),
        ),
        (
            "env: 'node': No such file or directory",
            EnvironmentClue("env: 'node': No such file or directory", command="node"),
        ),
        ("Error: spawn npx ENOENT", EnvironmentClue("Error: spawn npx ENOENT", command="npx")),
        (
            "./run.sh: line 3: API_TOKEN: unbound variable",
            EnvironmentClue("./run.sh: line 3: API_TOKEN: unbound variable", unset=("API_TOKEN",)),
        ),
        ("`x` exited 127, expected 0", EnvironmentClue("exit code 127 (command not found)")),
        ("cat: missing.txt: No such file or directory", None),  # a file, not a tool
        ("KeyError: 'name'", None),  # a dictionary's key
        ("AssertionError: assert 2 == 3", None),
    ],
)
def test_what_points_at_the_environment(output: str, clue: EnvironmentClue | None) -> None:
    assert environment_clue(output, [LEFT_OUT]) == clue


def test_a_command_check_the_sandbox_kept_off_the_network_names_the_allowance(
    tmp_path: Path,
) -> None:
    evidence = (
        "$ curl -sS https://example.org/data.json\ncurl: (56) CONNECT tunnel failed, "
        "response 403\n[exit code 56]"
    )
    report = failure_report(_failed_check(tmp_path, "fetch", evidence))
    assert (
        "  network: the sandbox refused its network access to example.org: the check reaches "
        "only the hosts the spec allows; add `sandbox: {network: [example.org]}` to the spec"
    ) in report.splitlines()
