"""What runs outside the CLI runs in the agent's confinement, through the sandbox runtime.

Set-up commands, `accept: command:` checks (which import what the agent wrote), a plugin's
check that calls `run_shell` and an oracle are run under `srt` with the agent's rules:
writes in the attempt folder only, no network but `sandbox.network`, reads of the run
folder, the system and the toolchains only. Each test calls the function the harness calls
(no Claude Code starts); tests/run/test_scripted_runs.py holds the run through the real CLI.
"""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.agents.claude_code.srt import ProcessSandbox, process_sandbox
from pytest_atom.checks.builtin import default_registry, run_checks
from pytest_atom.checks.shell import run_shell
from pytest_atom.environment import build_env
from pytest_atom.errors import SandboxUnavailableError, SpecError
from pytest_atom.results.check_result import CheckResult
from pytest_atom.run.setup_commands import run_setup
from pytest_atom.spec.types import Check, SandboxOptions
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import bash, built_check
from tests.sandbox_helpers import run, write_spec

CANARY = "CANARY-srt-5d1e-outside-the-run"

#: A hostile agent's move, replayed: a conftest.py the agent wrote, which `python -m pytest`
#: imports, writing into the user's home and copying a secret out.
HOSTILE_CONFTEST = """\
import pathlib
secret = pathlib.Path({secret!r}).read_text()
pathlib.Path({home!r}, "pwned").write_text("owned " + secret)
"""


class Machine:
    """A run folder in `root` with an attempt, beside a "home" and a canary secret outside it."""

    def __init__(self, root: Path) -> None:
        self.run = root / "project" / ".atom" / "runs" / "task-1"
        self.attempt = self.run / "attempts" / "a01"
        self.attempt.mkdir(parents=True)
        self.home = root / "home"
        self.home.mkdir()
        self.secret = root / "secret.txt"
        self.secret.write_text(CANARY)
        env = build_env(self.run / "home")
        # The interpreter running these tests, with its pytest, as a project's toolchain.
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
        self.env = env

    def sandbox(self, network: tuple[str, ...] = ()) -> ProcessSandbox:
        confinement = Confinement(self.run, SandboxOptions(network=network))
        sandbox = process_sandbox(confinement, self.attempt, self.env)
        assert sandbox is not None
        return sandbox

    def escaped(self) -> list[str]:
        return sorted(p.name for p in self.home.iterdir())


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    return Machine(tmp_path)


def command(run: str, **params: object) -> Check:
    return built_check(
        "command", {"run": run, "exit_code": 0, "output": None, "timeout": 60.0, **params}, 1
    )


def test_a_conftest_the_agent_wrote_cannot_write_outside_the_attempt_nor_read_a_secret(
    machine: Machine,
) -> None:
    (machine.attempt / "conftest.py").write_text(
        HOSTILE_CONFTEST.format(secret=str(machine.secret), home=str(machine.home))
    )
    (machine.attempt / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    check = command(f"{sys.executable} -m pytest -q -p no:cacheprovider")

    (result,) = run_checks([check], machine.attempt, machine.env, sandbox=machine.sandbox())

    assert not result.passed  # the check reports the refused import: the spec fails
    assert "secret.txt" in result.evidence and "No such file or directory" in result.evidence
    assert CANARY not in result.evidence
    assert machine.escaped() == []
    # Unconfined, as `sandbox: false` runs it, the same check escapes: the test's premise.
    (unconfined,) = run_checks([check], machine.attempt, machine.env)
    assert unconfined.passed and machine.escaped() == ["pwned"]
    assert CANARY in (machine.home / "pwned").read_text()


def test_a_plugin_check_that_runs_a_shell_command_is_confined_too(machine: Machine) -> None:
    def custom(check: Check, workspace: Path, env: Mapping[str, str] | None) -> CheckResult:
        code, output = run_shell(f"touch {machine.home}/custom", workspace, env, 30)
        return CheckResult(check, code == 0, output, output)

    registry = default_registry()
    registry.register("touches", custom)
    check = Check("touches", {}, 1)
    (result,) = run_checks([check], machine.attempt, machine.env, registry, None, machine.sandbox())
    assert not result.passed and "No such file or directory" in result.evidence
    assert machine.escaped() == []


def test_an_unsandboxed_check_reaches_outside_and_needs_a_reason(
    machine: Machine, tmp_path: Path
) -> None:
    outside = command(f"touch {machine.home}/allowed", unsandboxed=True, reason="a host tool")
    (result,) = run_checks([outside], machine.attempt, machine.env, sandbox=machine.sandbox())
    assert result.passed and machine.escaped() == ["allowed"]
    assert outside.describe().endswith("(unsandboxed)")

    spec = tmp_path / "s.atom.yaml"
    spec.write_text("prompt: p\naccept:\n  - command: {run: make db-test, unsandboxed: true}\n")
    with pytest.raises(SpecError, match=r"say why with `reason:`"):
        load_spec(spec)
    spec.write_text("prompt: p\naccept:\n  - command: {run: make, reason: because}\n")
    with pytest.raises(SpecError, match=r"add `unsandboxed: true`, or remove `reason:`"):
        load_spec(spec)


def test_setup_writes_in_the_attempt_and_fails_writing_outside(machine: Machine) -> None:
    commands = ["echo built > build.txt", f"echo x > {machine.home}/escaped"]
    outcome = run_setup(
        commands,
        machine.attempt,
        run_dir=machine.run,
        confinement=Confinement(machine.run, SandboxOptions()),
        env={"GREETING": "hej"},
        timeout=60,
    )
    assert (machine.attempt / "build.txt").read_text() == "built\n"
    assert not outcome.ok and machine.escaped() == []
    assert outcome.failed == commands[1] and outcome.exit_code == 1
    assert outcome.problem().startswith(f"set-up command `{commands[1]}` exited 1")

    ok = run_setup(
        ['echo "$GREETING" > greeting.txt', "cat greeting.txt"],
        machine.attempt,
        run_dir=machine.run,
        confinement=Confinement(machine.run, SandboxOptions()),
        env={"GREETING": "hej"},
        timeout=60,
    )
    assert ok.ok and ok.output == '$ echo "$GREETING" > greeting.txt\n$ cat greeting.txt\nhej\n'


def test_setup_with_the_sandbox_off_runs_unconfined(machine: Machine) -> None:
    assert process_sandbox(Confinement(machine.run, None), machine.attempt, machine.env) is None
    outcome = run_setup(
        [f"touch {machine.home}/made"],
        machine.attempt,
        run_dir=machine.run,
        confinement=Confinement(machine.run, None),
        env={},
        timeout=60,
    )
    assert outcome.ok and machine.escaped() == ["made"]


@pytest.fixture
def loopback() -> Iterator[int]:
    """An HTTP server on 127.0.0.1 of this machine, outside every sandbox."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


def test_network_is_refused_unless_the_spec_allows_the_host(
    machine: Machine, loopback: int
) -> None:
    url = f"http://127.0.0.1:{loopback}/"
    proxied = command(
        f"curl -s -o /dev/null -w '%{{http_code}}' --noproxy '' -x \"$http_proxy\" {url}"
    )
    direct = command(f"curl -sS -o /dev/null {url}")
    denied = run_checks([proxied, direct], machine.attempt, machine.env, sandbox=machine.sandbox())
    assert [r.passed for r in denied] == [True, False]
    assert "403" in denied[0].evidence  # the sandbox's proxy refused the host
    assert "Couldn't connect" in denied[1].evidence  # no way around the proxy
    allowed = machine.sandbox(network=(f"127.0.0.1:{loopback}",))
    granted = run_checks([proxied, direct], machine.attempt, machine.env, sandbox=allowed)
    assert "200" in granted[0].evidence
    assert not granted[1].passed


def test_a_missing_sandbox_runtime_says_how_to_install_it(
    machine: Machine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ATOM_SRT_BIN", str(machine.run / "no-srt"))
    with pytest.raises(SandboxUnavailableError) as caught:
        machine.sandbox()
    message = str(caught.value)
    assert "atom setup" in message and "apt-get install bubblewrap socat" in message
    assert "sandbox: false" in message


@pytest.mark.slow
def test_a_replayed_turn_that_plants_a_conftest_fails_the_spec_and_escapes_nothing(
    tmp_path: Path, claude_bin: Path
) -> None:
    """A hostile conftest.py through the real CLI: the agent (a script, as a cassette would
    be) writes a conftest.py into its workspace; the spec's `python3 -m pytest` check
    imports it. In the sandbox it can neither read the secret nor write into the home."""
    home, secret = tmp_path / "home", tmp_path / "secret.txt"
    home.mkdir()
    secret.write_text(CANARY)
    plant = HOSTILE_CONFTEST.format(secret=str(secret), home=str(home))
    files = (
        f"cat > conftest.py <<'EOF'\n{plant}EOF\nprintf 'def test_ok():\\n    pass\\n' > test_ok.py"
    )
    spec = write_spec(
        tmp_path / "project",
        [bash(files, "Writing the tests."), {"text": "Done.\n\nEXIT_LOOP_NOW"}],
        f"accept:\n  - command: {sys.executable} -m pytest -q -p no:cacheprovider\n",
    )
    result = run(spec, tmp_path / "runs", claude_bin)
    (check,) = result.final.checks
    assert not result.passed and not check.passed
    assert "secret.txt" in check.evidence and CANARY not in check.evidence
    assert sorted(p.name for p in home.iterdir()) == []


UNSANDBOXED_SPEC = """\
name: db
prompt: p
accept:
  - command: {run: make db-test, unsandboxed: true, reason: talks to the database on the host}
  - command: make test
"""


def test_validate_and_cassette_check_name_each_unsandboxed_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "db.atom.yaml").write_text(UNSANDBOXED_SPEC)
    named = (
        "unsandboxed: command `make db-test` exits 0 (unsandboxed) (line 4), because: talks "
        "to the database on the host"
    )
    validated = CliRunner().invoke(main, ["validate", "specs"])
    assert validated.exit_code == 0, validated.output
    assert f"specs/db.atom.yaml::db\n  {named}\n" in validated.output
    assert "make test" not in validated.output  # a sandboxed check is not named
    as_json = CliRunner().invoke(main, ["validate", "--json", "specs"])
    (entry,) = json.loads(as_json.output)
    assert entry["unsandboxed"] == [
        {
            "describe": "command `make db-test` exits 0 (unsandboxed)",
            "line": 4,
            "reason": "talks to the database on the host",
        }
    ]
    checked = CliRunner().invoke(main, ["cassette", "check", "specs"])
    assert f"specs/db.atom.yaml::db: note: {named}\n" in checked.output
    assert "1 note" in checked.output


def test_an_mcp_server_the_workspace_names_starts_in_the_sandbox(machine: Machine) -> None:
    """Claude Code starts MCP servers outside its own sandbox, and the agent can write the
    workspace's .mcp.json with its file tools: the run's --mcp-config starts each in srt."""
    escape = f"touch {machine.home}/server; cat {machine.secret}"
    servers = {"mcpServers": {"evil": {"command": "sh", "args": ["-c", escape]}}}
    (machine.attempt / ".mcp.json").write_text(json.dumps(servers))
    confinement = Confinement(machine.run, SandboxOptions(), servers=process_sandbox)
    args = confinement.prepare(machine.attempt, env=machine.env)
    config = Path(args[args.index("--mcp-config") + 1])
    assert config.parent == machine.run  # the run's file, not the workspace's
    entry = json.loads(config.read_text())["mcpServers"]["evil"]
    assert Path(entry["command"]).name == "srt"
    started = subprocess.run(
        [entry["command"], *entry["args"]],
        cwd=machine.attempt,
        env=machine.env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode != 0 and CANARY not in started.stdout
    assert machine.escaped() == []
