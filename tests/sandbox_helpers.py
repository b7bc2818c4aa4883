"""The sandbox scenarios tests/agents/test_sandbox.py, tests/settings/test_options.py and
tests/run/test_scripted_runs.py read.

One spec (`confined`) makes every call the default sandbox must answer: its settings, the
user's HOME, the file tools inside the attempt folder, writes and reads outside it, a
connection out, and a call a cassette could carry to attack the machine. It is recorded once
(the agent and its judge) and replayed once, in a user's repository with its own Claude Code
configuration above the run folder: each test asserts one behaviour over those two runs.
"""

from __future__ import annotations

import json
import pickle
import socket
import sys
import threading
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_atom.results.spec_result import SpecResult
from pytest_atom.run.spec_run import run_spec
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import bash, once_per_session

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


def user_repository(repo: Path, started: Path) -> None:
    """The user's repository around .atom/runs, with its own Claude Code configuration,
    each piece marked with the canary; its MCP server would make `started`."""
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
    server = {"command": sys.executable, "args": ["-c", f"open({str(started)!r}, 'w')"]}
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"leak": server}}))


def confined_turns(outside: Path, port: int) -> list[dict[str, Any]]:
    """The agent's calls, in order (tests/agents/test_sandbox.py reads them by these indexes)."""
    connect = f"import socket; socket.create_connection(('127.0.0.1', {port}), 5)"

    def tool(name: str, **tool_input: Any) -> dict[str, Any]:
        return {"tool_use": [{"name": name, "input": tool_input}]}

    return [
        bash("echo leak=$LEAK$LEAK_LOCAL ws=$WS_SETTING"),  # 0: whose settings apply
        bash("echo home=$HOME; type atom_user_fn 2>&1 | head -1"),  # 1: whose HOME
        tool("Write", file_path="notes/todo.txt", content="buy milk\n"),  # 2-4: file tools
        tool("Grep", pattern="milk"),
        tool("Glob", pattern="**/*.txt"),
        bash(f"touch {outside}/bash-was-here"),  # 5-9: outside the attempt folder
        bash(f'{sys.executable} -c "{connect}"'),
        tool("Write", file_path=f"{outside}/written.txt", content="x\n"),
        tool("Read", file_path=f"{outside}/keep.txt"),
        tool("Edit", file_path=f"{outside}/keep.txt", old_string="original", new_string="changed"),
        # 10: what a cassette could carry; curl -s: its error line names the milliseconds
        # it took, which differ between runs.
        bash(attack(port)),
        bash("echo inside > inside.txt"),  # 11: inside it
        {"text": "Done.\n\nEXIT_LOOP_NOW"},
    ]


def attack(port: int) -> str:
    return f"touch $HOME/pwned; curl -s http://127.0.0.1:{port}"


ACCEPT = """\
criteria: [The agent printed the settings.]
accept:
  - file_contains: {path: notes/todo.txt, pattern: '^buy milk$'}
  - file_contains: {path: inside.txt, pattern: '^inside$'}
"""


def _confine(folder: Path, claude_bin: Path) -> None:
    """Record the confined spec, then replay it; both results pickled, with the port's
    connections during each."""
    user, outside = folder / "user", folder / "outside"
    user.mkdir()
    (user / ".bashrc").write_text(
        f'echo "{CANARY}-rc"; touch "{user}/rc-ran"; atom_user_fn() {{ :; }}\n'
    )
    outside.mkdir()
    (outside / "keep.txt").write_text("original\n")
    repo = folder / "repo"
    user_repository(repo, folder / "mcp-server-started")
    # The fixture: what the session must see, and all it may see.
    specs = repo / "specs"
    (specs / "ws" / ".claude").mkdir(parents=True)
    (specs / "ws" / "CLAUDE.md").write_text("WORKSPACE RULE: keep answers short.\n")
    (specs / "ws" / ".claude" / "settings.json").write_text(
        json.dumps({"env": {"WS_SETTING": "applied"}})
    )
    listener = Listener()
    spec_file = write_spec(specs, confined_turns(outside, listener.port), ACCEPT)
    met = {"criterion": "The agent printed the settings.", "met": True, "evidence": "it did"}
    verdict = {"score": 0.9, "decision": "proceed", "criteria": [met], "feedback": ""}
    script = yaml.safe_load((specs / "script.yaml").read_text())
    (specs / "script.yaml").write_text(
        yaml.safe_dump({**script, "reflector": [{"verdict": verdict}]})
    )
    runs = repo / ".atom" / "runs"
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("HOME", str(user))  # the user's, with a shell startup file
            recorded = run(spec_file, runs, claude_bin, settings=RunSettings(record_mode="all"))
            reached = list(listener.connections)
            replayed = run(spec_file, runs, claude_bin)
    finally:
        listener.server.close()
    (folder / "port").write_text(str(listener.port))
    (folder / "connections.json").write_text(json.dumps([reached, listener.connections]))
    for name, result in (("recorded", recorded), ("replayed", replayed)):
        (folder / f"{name}.pickle").write_bytes(pickle.dumps(result))


@dataclass(frozen=True)
class Confined:
    """What `_confine` left: the two runs, and where the agent must not have reached."""

    folder: Path

    def result(self, name: str) -> SpecResult:
        """The `recorded` or the `replayed` run's result."""
        loaded: SpecResult = pickle.loads((self.folder / f"{name}.pickle").read_bytes())
        return loaded

    @property
    def port(self) -> int:
        return int((self.folder / "port").read_text())

    def connections(self, name: str) -> list[Any]:
        """The connections the listener accepted during the `recorded` or `replayed` run."""
        recorded, replayed = json.loads((self.folder / "connections.json").read_text())
        return list(recorded if name == "recorded" else replayed)

    @property
    def user(self) -> Path:
        return self.folder / "user"

    @property
    def outside(self) -> Path:
        return self.folder / "outside"

    @property
    def runs(self) -> Path:
        return self.folder / "repo" / ".atom" / "runs"


def confined(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Confined:
    """The confined spec's two runs, made once per session."""
    return Confined(
        once_per_session(
            tmp_path_factory, "sandbox-confined", partial(_confine, claude_bin=claude_bin)
        )
    )


def _allow(folder: Path, claude_bin: Path) -> None:
    """`atom run` from a subfolder (`--runs-dir out`) of a spec whose sandbox allows a
    domain and a folder beside the attempt's, and refuses a write outside both."""
    from click.testing import CliRunner

    from atom_cli.main import main

    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / "sub").mkdir()
    (folder / "outside").mkdir()
    listener = Listener()
    # Through the sandbox's proxy (a direct connection never leaves the sandbox's network).
    fetch = (
        f'no_proxy= NO_PROXY= {sys.executable} -c "import urllib.request; '
        f"urllib.request.urlopen('http://localhost:{listener.port}/', timeout=5)\""
    )
    turns = [
        bash(fetch),
        bash("echo kept > ../shared/out.txt"),
        bash(f"touch {folder / 'outside'}/refused"),
        {"text": "EXIT_LOOP_NOW"},
    ]
    # Its one check fails, for `atom run` to show a failed check and the failure's report.
    extra = (
        "sandbox: {network: [localhost], write: [../shared]}\naccept:\n  - file_exists: hello.txt\n"
    )
    write_spec(folder / "specs", turns, extra)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
            patch.chdir(folder / "sub")
            done = CliRunner().invoke(main, ["run", "../specs/task.atom.yaml", "--runs-dir", "out"])
    finally:
        listener.server.close()
    (folder / "output.txt").write_text(done.output, encoding="utf-8")
    (folder / "outcome.json").write_text(
        json.dumps({"exit_code": done.exit_code, "connections": listener.connections})
    )


@dataclass(frozen=True)
class Allowed:
    """What `_allow` left: `atom run`'s output and exit code, the run folders under sub/out."""

    folder: Path

    @property
    def output(self) -> str:
        """The output, its lines joined (rich wraps long lines on a narrow terminal)."""
        return " ".join((self.folder / "output.txt").read_text(encoding="utf-8").split())

    @property
    def outcome(self) -> dict[str, Any]:
        return dict(json.loads((self.folder / "outcome.json").read_text()))


def allowed(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Allowed:
    """The allowing spec's `atom run`, made once per session."""
    return Allowed(
        once_per_session(
            tmp_path_factory, "sandbox-allowed", partial(_allow, claude_bin=claude_bin)
        )
    )
