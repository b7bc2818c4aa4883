"""A spec's MCP servers recorded and replayed: the server entry wrapped in one place,
the proxy relaying a real FastMCP server and keeping its traffic scrubbed, the stand-in
answering from that traffic, and, with the real CLI, a spec recorded, replayed with its
server gone; a call the recording never saw is the divergence named (at the report)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_atom.agents.claude_code.cli import CLAUDE_CODE_VERSION
from pytest_atom.agents.claude_code.configuration import mcp_server_entry
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.mcp_tape import MODULE, McpTape, describe_miss, request_key
from pytest_atom.replay.recording import ModelSource, cassette_path, divergence_report
from pytest_atom.replay.staleness import prompt_hash, script_hash, staleness
from pytest_atom.reports.text import failure_report, tool_problem
from pytest_atom.results.spec_result import SpecResult
from pytest_atom.run.spec_run import run_spec
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec_loader.load import load_spec
from tests.cassette_helpers import replayer
from tests.helpers import once_per_session, talk
from tests.versions_helpers import MACHINES, TICKETS_SERVER, MachineReplay, replay_on_machine

SERVER = Path(__file__).parents[1] / "tickets_mcp.py"
#: What the tickets server answers `get` with, as a careless server might: never on disk.
API_KEY = "tk-live-9f8e7d6c5b4a3210"


def test_the_entry_runs_the_server_behind_the_proxy_or_not_at_all(tmp_path: Path) -> None:
    entry = {"command": "python", "args": ["tools/tickets.py"], "env": {"A": "1"}}
    recording = mcp_server_entry("tickets", entry, McpTape("record", tmp_path))
    head = [sys.executable, "-m", MODULE, "--server", "tickets", "--tape", str(tmp_path)]
    assert [recording["command"], *recording["args"]] == [
        *head,
        "--",
        "python",
        "tools/tickets.py",
    ]
    assert recording["env"] == {"A": "1"}
    replaying = mcp_server_entry("tickets", entry, McpTape("replay", tmp_path))
    assert [replaying["command"], *replaying["args"]] == [*head, "--replay"]
    assert mcp_server_entry("tickets", entry) == entry  # scripted: the server runs as is
    http = {"type": "http", "url": "http://127.0.0.1:1/mcp"}
    assert mcp_server_entry("web", http, McpTape("replay", tmp_path)) == http


def test_a_request_is_matched_on_method_and_params_never_its_id() -> None:
    call: dict[str, Any] = {
        "method": "tools/call",
        "params": {"name": "get", "arguments": {"ticket": "T-1"}},
    }
    assert request_key({"jsonrpc": "2.0", "id": 7, **call}) == request_key(call)
    progress = {**call, "params": {**call["params"], "_meta": {"progressToken": 3}}}
    assert request_key(progress) == request_key(call)
    other = {**call, "params": {"name": "get", "arguments": {"ticket": "T-2"}}}
    assert request_key(other) != request_key(call)
    # The client's own params (its version, capabilities) never decide a match.
    assert request_key({"method": "initialize", "params": {"clientInfo": {"version": "9"}}}) == (
        request_key({"method": "initialize", "params": {}})
    )
    miss = {"server": "tickets", **other}
    assert describe_miss(miss) == (
        """MCP server 'tickets': tools/call 'get' with {"ticket": "T-2"} was never recorded"""
    )


INIT: dict[str, Any] = {
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


def _call(number: int, tool: str, **arguments: str) -> dict[str, Any]:
    return {"id": number, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}


def test_the_proxy_relays_a_fastmcp_server_and_its_stand_in_answers_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TICKETS_API_KEY", API_KEY)
    folder = tmp_path / "mcp"
    conversation: list[dict[str, Any]] = [
        {"id": 1, **INIT},
        {"method": "notifications/initialized"},
        _call(2, "create", title="flaky test"),
        _call(3, "get", ticket="T-1"),
    ]
    proxy = McpTape("record", folder).argv("tickets", sys.executable, [str(SERVER)])
    live = talk(proxy, conversation, tmp_path)
    # Relayed unchanged: the CLI sees the server's own answers, the secret too.
    assert [a["id"] for a in live] == [1, 2, 3]
    assert live[2]["result"]["content"][0]["text"] == f"T-1: flaky test (api token {API_KEY})"
    assert API_KEY not in (folder / "tickets.jsonl").read_text()

    recorded = McpTape("record", folder).recorded(lambda text: text)
    assert [e["request"]["method"] for e in recorded["tickets"]] == [
        "initialize",
        "tools/call",
        "tools/call",
    ]
    stand_in = McpTape("replay", folder)
    stand_in.write_tape(recorded, lambda text: text)
    (folder / "tickets.jsonl").unlink()
    # Asked in another order, with other ids: answered from the tape, ids echoed.
    replayed = talk(
        stand_in.argv("tickets", "gone", []),
        [
            {"id": 10, **INIT},
            _call(12, "get", ticket="T-1"),
            _call(11, "create", title="flaky test"),
        ],
        tmp_path,
    )
    assert [a["id"] for a in replayed] == [10, 12, 11]
    assert replayed[1]["result"]["content"][0]["text"] == (
        "T-1: flaky test (api token <SECRET:TICKETS_API_KEY>)"
    )
    assert replayed[2]["result"] == live[1]["result"]
    [unknown] = talk(
        stand_in.argv("tickets", "gone", []), [_call(5, "get", ticket="T-9")], tmp_path
    )
    assert unknown["id"] == 5
    assert "MCP server 'tickets': tools/call 'get'" in unknown["error"]["message"]
    assert stand_in.misses() == [
        {
            "server": "tickets",
            "method": "tools/call",
            "params": {"name": "get", "arguments": {"ticket": "T-9"}},
        }
    ]


def test_a_stand_in_answers_a_repeated_request_in_recorded_order_across_sessions(
    tmp_path: Path,
) -> None:
    """A stateful server answered the same request twice, differently: each CLI call starts
    its own stand-in, and the second call still gets the second answer. A request the
    server left open (2.1.331's `subscriptions/listen`) stays unanswered."""
    listen = {"method": "subscriptions/listen", "params": {"notifications": {}}}
    ask = {"method": "tools/call", "params": {"name": "next", "arguments": {}}}
    tape = McpTape("replay", tmp_path)
    answers = [{"result": {"n": n}} for n in (1, 2)]
    exchanges = [{"request": ask, "response": answer} for answer in answers]
    tape.write_tape({"counter": [*exchanges, {"request": listen}]}, lambda text: text)

    def session(*requests: dict[str, Any]) -> list[Any]:
        lines = "".join(json.dumps({"jsonrpc": "2.0", **r}) + "\n" for r in requests)
        argv = tape.argv("counter", "gone", [])
        done = subprocess.run(argv, input=lines, capture_output=True, text=True, timeout=30)
        return [json.loads(line) for line in done.stdout.splitlines()]

    assert session({"id": 1, **listen}, {"id": 2, **ask}) == [
        {"jsonrpc": "2.0", "id": 2, "result": {"n": 1}}
    ]
    assert [a["result"] for a in session({"id": 1, **ask}, {"id": 2, **ask})] == [{"n": 2}] * 2
    assert tape.misses() == []


def _spec(tmp_path: Path) -> Path:
    """A scripted spec whose agent files a ticket and reads it back through the MCP server."""
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    specs = tmp_path / "specs"
    (specs / "ws").mkdir(parents=True)
    shutil.copyfile(SERVER, specs / "tickets_mcp.py")
    spec = {
        "prompt": "File a ticket for the flaky test, then read it back.",
        "workspace": "ws",
        "script": "script.yaml",
        "timeout": 120,
        "attempts": 1,
        "max_iterations": 1,
        "pass_env": ["TICKETS_API_KEY"],  # the server's key, from the caller (never by default)
        "claude": {
            "allowed_tools": [
                "Bash",
                "Read",
                "mcp__tickets__create",
                "mcp__tickets__get",
                "mcp__tickets__where",
            ],
            "mcp_servers": {
                "tickets": {"command": sys.executable, "args": [str(specs / "tickets_mcp.py")]}
            },
        },
        "accept": [{"mcp_called": {"server": "tickets", "tool": "get"}}],
    }
    (specs / "tickets.atom.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    create = {"name": "mcp__tickets__create", "input": {"title": "flaky test"}}
    get = {"name": "mcp__tickets__get", "input": {"ticket": "T-1"}}
    where = {"name": "mcp__tickets__where", "input": {}}
    turns: list[dict[str, Any]] = [{"tool_use": [create]}, {"tool_use": [get]}]
    turns.append({"tool_use": [where]})
    turns.append({"text": "Filed T-1.\n\nEXIT_LOOP_NOW"})
    (specs / "script.yaml").write_text(yaml.safe_dump({"turns": turns}), encoding="utf-8")
    return specs / "tickets.atom.yaml"


def _results(result: Any) -> list[tuple[str, str]]:
    return [(c.name, c.result) for r in result.final.records for c in r.tool_calls]


@pytest.mark.slow
def test_a_spec_records_its_mcp_server_and_replays_without_it(
    tmp_path: Path, claude_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TICKETS_API_KEY", API_KEY)
    spec_file = _spec(tmp_path)
    spec = load_spec(spec_file)
    runs = tmp_path / "runs"
    recorded = run_spec(
        spec, runs_dir=runs, settings=RunSettings(record_mode="all"), claude_bin=claude_bin
    )
    assert recorded.passed, recorded.report()
    # The agent saw the server's own answers (its key too); the cassette holds neither.
    got = f'{{"result":"T-1: flaky test (api token {API_KEY})"}}'
    folder = recorded.final.path
    assert _results(recorded) == [
        ("mcp__tickets__create", '{"result":"filed T-1: flaky test"}'),
        ("mcp__tickets__get", got),
        ("mcp__tickets__where", f'{{"result":"{folder}"}}'),
    ]
    path = cassette_path(spec)
    assert API_KEY not in path.read_text(encoding="utf-8")
    # A recording stores the hashes of the prompt and script it was made from: it fits.
    metadata = Cassette.load(path).metadata
    assert metadata["prompt_hash"] == prompt_hash(spec)
    assert metadata["script_hash"] == script_hash(spec) and metadata["script_hash"]
    assert staleness(spec, Cassette.load(path)) == []
    exchanges = Cassette.load(path).metadata["mcp"]["tickets"]
    # 2.1.331 speaks MCP 2026-07-28: `server/discover`, no `initialize`; the client's
    # `_meta` (its version, the tool-use id) is left out.
    calls = [e["request"] for e in exchanges if e["request"]["method"] == "tools/call"]
    assert calls == [
        {
            "method": "tools/call",
            "params": {"name": "create", "arguments": {"title": "flaky test"}},
        },
        {"method": "tools/call", "params": {"name": "get", "arguments": {"ticket": "T-1"}}},
        {"method": "tools/call", "params": {"name": "where", "arguments": {}}},
    ]
    assert "tools/list" in [e["request"]["method"] for e in exchanges]
    # The run's own paths are stored as placeholders, and put back for the next run.
    assert str(runs) not in json.dumps(exchanges)
    [answer] = [e["response"] for e in exchanges if e["request"] == calls[-1]]
    assert answer["result"]["content"][0]["text"] == "<RUN_DIR>/attempts/a01"

    # Replayed with the server's command gone: the stand-in answers, the spec passes.
    (spec_file.parent / "tickets_mcp.py").unlink()
    monkeypatch.delenv("TICKETS_API_KEY")
    replayed = run_spec(spec, runs_dir=runs, claude_bin=claude_bin)
    assert (replayed.source, replayed.passed) == ("replay", True), replayed.report()
    scrubbed = got.replace(API_KEY, "<SECRET:TICKETS_API_KEY>")
    assert _results(replayed) == [
        _results(recorded)[0],
        ("mcp__tickets__get", scrubbed),
        ("mcp__tickets__where", f'{{"result":"{replayed.final.path}"}}'),
    ]
    assert replayed.final.path != folder


def test_a_call_the_recording_never_saw_is_the_divergence_named_first(tmp_path: Path) -> None:
    """The agent asks for another ticket than was recorded: the stand-in answers with an
    error, and the replay's report leads with the MCP miss, naming the call and the fix."""
    spec = load_spec(_spec(tmp_path))
    tape = McpTape("replay", tmp_path / "mcp")
    recorded = {"request": _call(0, "get", ticket="T-1"), "response": {"result": {}}}
    del recorded["request"]["id"]
    tape.write_tape({"tickets": [recorded]}, lambda text: text)
    asked = [_call(5, "get", ticket="T-2"), _call(6, "get", ticket="T-3")]
    answers = talk(tape.argv("tickets", "gone", []), asked, tmp_path)
    assert all("was never recorded" in a["error"]["message"] for a in answers)
    source = ModelSource("replay", replayer([], tmp_path), mcp=tape)
    first, second = divergence_report(spec, source, CLAUDE_CODE_VERSION)
    assert first.startswith("likely cause: an MCP server was asked what the recording never saw")
    assert (
        """MCP server 'tickets': tools/call 'get' with {"ticket": "T-2"} was never recorded"""
        in first
    )
    assert "--atom-record-mode=all" in first
    # The failure report leads with the first in full and lists the next.
    report = failure_report(SpecResult(spec, tmp_path, [], 1.0, 0.8, divergences=[first, second]))
    assert "replay diverged from the cassette (2 distinct requests matched nothing" in report
    assert """tools/call 'get' with {"ticket": "T-3"} was never recorded""" in report
    assert "  agent: did not run" in report.splitlines()
    # The agent's failed call, as the report lists it: an MCP call names no command or file.
    error = answers[0]["error"]["message"]
    assert tool_problem("mcp__tickets__get", {"ticket": "T-2"}, error, True) == (
        f"mcp__tickets__get : {error}"
    )


@pytest.fixture(scope="session")
def machine_replay(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> MachineReplay:
    """The pinned CLI's strict replay of `configured` with its MCP server's file removed, on
    a generated machine (tests/replay/test_machines.py's shared run)."""
    machine = MACHINES[0]
    build = partial(replay_on_machine, machine=machine, claude_bin=claude_bin)
    return MachineReplay(once_per_session(tmp_path_factory, f"machine-{machine.name}", build))


@pytest.mark.slow
def test_the_shipped_configuration_fixture_replays_without_its_server(
    machine_replay: MachineReplay,
) -> None:
    """fixtures/specs/configured.atom.yaml: its skill fires, its MCP tool is called from the
    cassette with the server's file gone, and its hook refuses `rm -rf`."""
    assert not (machine_replay.specs / TICKETS_SERVER).exists()
    assert machine_replay.returncode == 0, machine_replay.output[-6000:]
    trace = machine_replay.specs / "traces" / "configured" / "configured.json"
    data = json.loads(trace.read_text(encoding="utf-8"))
    assert data["atom"]["source"] == "replay" and data["atom"]["passed"]
    checks = {c["kind"]: c for c in data["children"][-1]["checks"]}
    assert checks["mcp_called"]["evidence"] == (
        'iteration 1 turn 2: mcp__tickets__create {"title": "test_parse_dates is flaky"}'
    )
    assert checks["skill_invoked"]["passed"] and checks["permission_denied"]["passed"]
    assert checks["permission_denied"]["evidence"].endswith(
        "(refused: hook): PreToolUse:Bash hook error: rm -rf is not allowed here"
    )
