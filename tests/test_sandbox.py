"""The agent under test is the real Claude Code (not --bare), isolated from the folders
above its run folder and confined by Claude Code's own sandbox.

Every test runs the real CLI through `run_spec` (the code path of `pytest --atom`) against
a scripted gateway; the tool calls really run, so what they could reach is checked on disk
and on a TCP listener of the test.
"""

from __future__ import annotations

import json
import shutil
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from atom_cli.main import main
from atom_cli.project_cmd import _check_sandbox
from pytest_atom.agents.claude_code.cli import CLAUDE_CODE_VERSION, NPM_PACKAGE
from pytest_atom.model.result import SpecResult
from pytest_atom.model.settings import RunSettings
from pytest_atom.model.spec import load_spec
from pytest_atom.reports.text import tool_problems
from pytest_atom.run.spec_run import run_spec
from tests.helpers import bash

CANARY = "CANARY-7f3a-above-the-run-folder"


class Listener:
    """A TCP server on 127.0.0.1 that records every connection it accepts."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.connections: list[tuple[str, int]] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, peer = self.server.accept()
            except OSError:
                return
            self.connections.append(peer)
            conn.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.server.close()


def write_spec(folder: Path, turns: list[dict[str, Any]], extra: str = "") -> Path:
    """A scripted spec in `folder`; its workspace is `folder/ws` when that exists."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "script.yaml").write_text(yaml.safe_dump({"turns": turns}), encoding="utf-8")
    workspace = "workspace: ws\n" if (folder / "ws").is_dir() else ""
    path = folder / "task.atom.yaml"
    path.write_text(
        f"name: task\nprompt: Do the task.\nscript: script.yaml\n{workspace}timeout: 120\n{extra}",
        encoding="utf-8",
    )
    return path


def run(spec_file: Path, runs: Path, claude_bin: Path, **kwargs: Any) -> SpecResult:
    return run_spec(load_spec(spec_file), runs_dir=runs, claude_bin=claude_bin, **kwargs)


@pytest.mark.slow
def test_the_session_sees_its_workspace_and_nothing_above_the_run_folder(
    tmp_path: Path, claude_bin: Path
) -> None:
    # The user's repository around .atom/runs, with its own Claude Code configuration.
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "CLAUDE.md").write_text(f"Always answer in French. {CANARY}-memory\n")
    (repo / "CLAUDE.local.md").write_text(f"{CANARY}-local-memory\n")
    (repo / ".claude" / "rules").mkdir(parents=True)
    (repo / ".claude" / "rules" / "style.md").write_text(f"{CANARY}-rule\n")
    (repo / ".claude" / "skills" / "leak").mkdir(parents=True)
    (repo / ".claude" / "skills" / "leak" / "SKILL.md").write_text(
        f"---\nname: leak\ndescription: {CANARY}-skill\n---\nLeak.\n"
    )
    (repo / ".claude" / "settings.json").write_text(json.dumps({"env": {"LEAK": CANARY}}))
    (repo / ".claude" / "settings.local.json").write_text(
        json.dumps({"env": {"LEAK_LOCAL": CANARY}})
    )
    started = tmp_path / "mcp-server-started"
    server = {"command": sys.executable, "args": ["-c", f"open({str(started)!r}, 'w')"]}
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"leak": server}}))
    # The fixture: what the session must see, and all it may see.
    specs = repo / "specs"
    (specs / "ws" / ".claude").mkdir(parents=True)
    (specs / "ws" / "CLAUDE.md").write_text("WORKSPACE RULE: keep answers short.\n")
    (specs / "ws" / ".claude" / "settings.json").write_text(
        json.dumps({"env": {"WS_SETTING": "applied"}})
    )
    turns = [bash("echo leak=$LEAK$LEAK_LOCAL ws=$WS_SETTING"), {"text": "Done.\n\nEXIT_LOOP_NOW"}]
    spec_file = write_spec(specs, turns, "criteria: [The agent printed the settings.]\n")
    verdict = {"score": 0.9, "decision": "proceed", "criteria": [], "feedback": ""}
    script = yaml.safe_load((specs / "script.yaml").read_text())
    (specs / "script.yaml").write_text(
        yaml.safe_dump({**script, "reflector": [{"verdict": verdict}]})
    )
    result = run(spec_file, repo / ".atom" / "runs", claude_bin)

    assert result.passed, result.report()
    requests = [e.request.json for e in result.exchanges if e.request.body]
    judge = [r for r in requests if "StructuredOutput" in {t["name"] for t in r.get("tools", [])}]
    agent = [r for r in requests if r not in judge]
    assert "WORKSPACE RULE: keep answers short." in json.dumps(agent)  # its CLAUDE.md applies
    assert CANARY not in json.dumps(requests)  # nothing above the run folder reached a request
    # The judge is the real Claude Code too, with Read, Grep and Glob, but takes no
    # instructions from the attempt folder, which the agent could have written.
    assert judge and "WORKSPACE RULE" not in json.dumps(judge)
    assert {"Read", "Grep", "Glob"} <= {t["name"] for t in judge[0]["tools"]}
    [call] = result.final.records[0].tool_calls
    assert call.result == "leak= ws=applied"  # its settings.json applies, the repo's do not
    assert not started.exists()  # the repository's MCP server never started


@pytest.mark.slow
def test_the_users_home_is_neither_read_nor_written(
    tmp_path: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI's HOME is the run's own `home/`: the user's shell startup file does not run
    (it printed into tool output and rewrote pyenv's shims), and the CLI's logs and caches
    stay in the run folder."""
    user = tmp_path / "user"
    user.mkdir()
    (user / ".bashrc").write_text(
        f'echo "{CANARY}-rc"; touch "{user}/rc-ran"; atom_user_fn() {{ :; }}\n'
    )
    monkeypatch.setenv("HOME", str(user))
    turns = [bash("echo home=$HOME; type atom_user_fn 2>&1 | head -1"), {"text": "EXIT_LOOP_NOW"}]
    result = run(write_spec(tmp_path / "specs", turns), tmp_path / "runs", claude_bin)

    assert result.passed, result.report()
    [call] = result.final.records[0].tool_calls
    assert call.result is not None and CANARY not in call.result
    assert f"home={result.run_dir / 'home'}" in call.result and "not found" in call.result
    assert sorted(p.name for p in user.iterdir()) == [".bashrc"]  # nothing ran, nothing written
    assert list((result.run_dir / "home" / ".npm" / "_logs").glob("*.log"))  # the CLI's logs


@pytest.mark.slow
def test_write_grep_and_glob_work_by_default(tmp_path: Path, claude_bin: Path) -> None:
    turns: list[dict[str, Any]] = [
        {
            "tool_use": [
                {"name": "Write", "input": {"file_path": "notes/todo.txt", "content": "buy milk\n"}}
            ]
        },
        {"tool_use": [{"name": "Grep", "input": {"pattern": "milk"}}]},
        {"tool_use": [{"name": "Glob", "input": {"pattern": "**/*.txt"}}]},
        {"text": "Noted.\n\nEXIT_LOOP_NOW"},
    ]
    accept = "accept:\n  - file_contains: {path: notes/todo.txt, pattern: '^buy milk$'}\n"
    result = run(write_spec(tmp_path / "specs", turns, accept), tmp_path / "runs", claude_bin)

    assert result.passed, result.report()
    write, grep, glob = result.final.records[0].tool_calls
    assert write.name == "Write" and "notes/todo.txt" in (write.result or "")
    assert tool_problems(result) == []
    assert "notes/todo.txt" in (grep.result or "") and "notes/todo.txt" in (glob.result or "")


@pytest.mark.slow
def test_the_sandbox_keeps_writes_in_the_attempt_folder_and_the_network_out(
    tmp_path: Path, claude_bin: Path, listener: Listener
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("original\n")
    connect = f"import socket; socket.create_connection(('127.0.0.1', {listener.port}), 5)"
    turns = [
        bash(f"touch {outside}/bash-was-here"),
        bash(f'{sys.executable} -c "{connect}"'),
        {
            "tool_use": [
                {
                    "name": "Write",
                    "input": {"file_path": f"{outside}/written.txt", "content": "x\n"},
                }
            ]
        },
        {"tool_use": [{"name": "Read", "input": {"file_path": f"{outside}/keep.txt"}}]},
        {
            "tool_use": [
                {
                    "name": "Edit",
                    "input": {
                        "file_path": f"{outside}/keep.txt",
                        "old_string": "original",
                        "new_string": "changed",
                    },
                }
            ]
        },
        bash("echo inside > inside.txt"),
        {"text": "Done.\n\nEXIT_LOOP_NOW"},
    ]
    accept = "accept:\n  - file_contains: {path: inside.txt, pattern: '^inside$'}\n"
    result = run(write_spec(tmp_path / "specs", turns, accept), tmp_path / "runs", claude_bin)

    assert result.passed, result.report()  # writes inside the attempt folder work
    assert sorted(p.name for p in outside.iterdir()) == ["keep.txt"]
    assert (outside / "keep.txt").read_text() == "original\n"
    assert listener.connections == []
    report = result.report()
    for denied in (
        f"Bash `touch {outside}/bash-was-here`: touch: cannot touch",
        f"Bash `{sys.executable} -c",
        # File tools are refused at the attempt folder's edge, and the report says by whom.
        f"Write {outside}/written.txt refused by the attempt folder's boundary: Claude "
        "requested permissions",
        f"Edit {outside}/keep.txt",
    ):
        assert denied in report
    # Outside the run folder the read guard hides the folder itself (tests/test_read_guard.py).
    assert "No such file or directory" in report or "Read-only file system" in report
    # The Read of keep.txt too: the file tools read only the attempt folder.
    assert f"Read {outside}/keep.txt" in report
    assert "tool calls that failed or were refused: 5" in report


@pytest.mark.slow
def test_a_spec_allows_a_domain_and_an_extra_folder(
    tmp_path: Path, claude_bin: Path, listener: Listener
) -> None:
    # Through the sandbox's proxy (a direct connection never leaves the sandbox's network).
    fetch = (
        f'no_proxy= NO_PROXY= {sys.executable} -c "import urllib.request; '
        f"urllib.request.urlopen('http://localhost:{listener.port}/', timeout=5)\""
    )
    turns = [bash(fetch), bash("echo kept > ../shared/out.txt"), {"text": "EXIT_LOOP_NOW"}]
    extra = "sandbox: {network: [localhost], write: [../shared]}\n"
    result = run(write_spec(tmp_path / "specs", turns, extra), tmp_path / "runs", claude_bin)

    assert result.passed, result.report()
    assert listener.connections  # the allowed domain was reached
    [shared] = (tmp_path / "runs").glob("*/attempts/shared/out.txt")
    assert shared.read_text() == "kept\n"
    assert "Bash `echo kept" not in result.report()


@pytest.mark.slow
def test_a_replayed_cassette_cannot_touch_home_or_reach_a_port(
    tmp_path: Path, claude_bin: Path, listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    # curl -s: its error line names the milliseconds it took, which differ between runs.
    attack = f"touch $HOME/pwned; curl -s http://127.0.0.1:{listener.port}"
    spec_file = write_spec(tmp_path / "specs", [bash(attack), {"text": "Done.\n\nEXIT_LOOP_NOW"}])
    recorded = run(
        spec_file, tmp_path / "runs", claude_bin, settings=RunSettings(record_mode="all")
    )
    assert recorded.cassette is not None and attack in recorded.cassette.read_text()

    replayed = run(spec_file, tmp_path / "runs", claude_bin)

    assert replayed.source == "replay" and not replayed.divergences, replayed.report()
    [call] = replayed.final.records[0].tool_calls
    assert call.input["command"] == attack  # the cassette's call really ran, in the sandbox
    assert not (home / "pwned").exists() and listener.connections == []
    # The run's own HOME is hidden by the read guard (an empty, throwaway folder), so the
    # touch lands nowhere on disk; curl's refused connection is the call's failure.
    assert f"Bash `{attack}`: " in replayed.report()
    assert not list((tmp_path / "runs").glob("*/home/pwned"))


@pytest.mark.slow
def test_atom_run_shows_a_refused_tool_call_and_warns_without_the_sandbox(
    tmp_path: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The README's old trap: --bare offers no Write, so the call fails and nothing says why.
    turns: list[dict[str, Any]] = [
        {"tool_use": [{"name": "Write", "input": {"file_path": "hello.txt", "content": "hi\n"}}]},
        {"text": "Done.\n\nEXIT_LOOP_NOW"},
    ]
    extra = "claude: {bare: true}\nsandbox: false\naccept:\n  - file_exists: hello.txt\n"
    spec_file = write_spec(tmp_path, turns, extra)
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    monkeypatch.chdir(tmp_path)

    result = CliRunner().invoke(main, ["run", str(spec_file)])

    assert result.exit_code == 1, result.output
    out = " ".join(result.output.split())  # rich wraps long lines on a narrow terminal
    assert "✗ Write hello.txt: Error: No such tool available: Write." in out  # as it happens
    assert "tool calls that failed or were refused: 1" in out  # and in the failure report
    assert (
        "warning: 1 spec ran its agent without Claude Code's sandbox (`sandbox: false`)" in out
        and "task.atom.yaml::task" in out.split("warning:")[1]
    )


@pytest.mark.slow
def test_pytest_summary_warns_about_a_spec_without_the_sandbox(
    pytester: pytest.Pytester, claude_for_pytester: None
) -> None:
    write_spec(pytester.path, [{"text": "EXIT_LOOP_NOW"}], "claude: {bare: true}\nsandbox: false\n")
    result = pytester.runpytest("--atom", "--junitxml=out.xml")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*task.atom.yaml::task*passed*",
            "warning: 1 spec ran its agent without Claude Code's sandbox (`sandbox: false`)*",
        ]
    )
    assert '<property name="atom_sandbox" value="off"' in (pytester.path / "out.xml").read_text()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux's sandbox")
def test_a_missing_sandbox_tool_is_a_harness_error_that_says_how_to_install(
    pytester: pytest.Pytester, claude_for_pytester: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_spec(pytester.path, [{"text": "EXIT_LOOP_NOW"}])
    monkeypatch.setenv("PATH", str(pytester.path / "empty-bin"))
    result = pytester.runpytest("--atom")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*pytest-atom could not run spec 'task': Claude Code's sandbox needs bubblewrap and "
            "socat on Linux, and bubblewrap (bwrap) and socat (socat) are not on PATH: install "
            "them (`apt-get install bubblewrap socat` on Debian and Ubuntu), or set "
            "`sandbox: false` in the spec to run its agent unsandboxed"
        ]
    )
    assert not (pytester.path / ".atom" / "runs").exists()  # refused before anything ran


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="bubblewrap is Linux's sandbox")
def test_setup_and_doctor_say_how_to_install_the_sandbox_tools(
    tmp_path: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "socat").symlink_to(shutil.which("socat") or "/usr/bin/socat")
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # socat, but no bwrap
    # An installed pinned CLI, as setup finds it (its version is read from package.json).
    package = tmp_path / "claude-code"
    (package / "bin").mkdir(parents=True)
    (package / "bin" / "claude").write_text("")
    manifest = {"name": NPM_PACKAGE, "version": CLAUDE_CODE_VERSION}
    (package / "package.json").write_text(json.dumps(manifest))
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(package / "bin" / "claude"))
    hint = (
        "Claude Code's sandbox needs bubblewrap and socat on Linux, and bubblewrap (bwrap) is "
        "not on PATH: install them (`apt-get install bubblewrap socat` on Debian and Ubuntu), "
        "or set `sandbox: false` in each spec to run its agent unsandboxed"
    )
    setup = CliRunner().invoke(main, ["setup"])
    assert setup.exit_code == 0 and f"warning: {hint}" in setup.output  # setup's job is done

    reported: list[tuple[str, str, str]] = []
    _check_sandbox(lambda *line: reported.append(line), claude_bin)
    assert reported == [("fail", "sandbox", hint)]  # doctor fails, without starting claude
