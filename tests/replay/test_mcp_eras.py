"""The MCP stand-in answers the CLI that replays in that CLI's protocol.

Claude Code 2.1.331 opens an MCP connection with `server/discover` (protocol 2026-07-28);
2.1.197 with `initialize`. A server serves each connection in the era its first request
chose, so a tape recorded by one speaks the wrong era to the other. The reference is the
real server (the shipped fixture's FastMCP tickets server): on a fresh connection it
answers an older client's handshake, tools/list and tools/call just as the stand-in does
from the shipped, 2026-07-28 tape.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.mcp_tape import McpTape
from tests.helpers import REPO, talk

FIXTURES = REPO / "fixtures" / "specs"
TICKETS = FIXTURES / "workspaces" / "tickets" / "tools" / "tickets_mcp.py"
#: What Claude Code 2.1.197 sends a stdio MCP server, in its order.
HANDSHAKE_ERA: list[dict[str, Any]] = [
    {
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"roots": {}},
            "clientInfo": {"name": "claude-code", "version": "2.1.197"},
        },
    },
    {"method": "notifications/initialized"},
    {"id": 1, "method": "tools/list", "params": {}},
    {
        "id": 2,
        "method": "tools/call",
        "params": {"name": "create", "arguments": {"title": "test_parse_dates is flaky"}},
    },
]


def shipped_tape(tmp_path: Path) -> McpTape:
    cassette = Cassette.load(FIXTURES / "cassettes" / "configured" / "configured.yaml")
    servers = cassette.metadata["mcp"]
    assert any(e["request"]["method"] == "server/discover" for e in servers["tickets"])
    tape = McpTape("replay", tmp_path / "mcp")
    tape.write_tape(servers, lambda text: text)
    return tape


def test_an_older_clients_handshake_is_answered_as_the_real_server_answers_it(
    tmp_path: Path,
) -> None:
    real = talk([sys.executable, str(TICKETS)], HANDSHAKE_ERA, tmp_path)
    tape = shipped_tape(tmp_path)
    stand_in = talk(tape.argv("tickets", "gone", []), HANDSHAKE_ERA, tmp_path)
    assert stand_in == real
    assert real[0]["result"]["protocolVersion"] == "2025-11-25"
    assert real[2]["result"]["content"][0]["text"] == "filed T-1: test_parse_dates is flaky"
    assert tape.misses() == []


def test_a_newer_clients_discover_on_an_older_tape_is_a_method_it_does_not_know(
    tmp_path: Path,
) -> None:
    """A tape of the handshake era: the stand-in answers `server/discover` as a server that
    predates it (the client then falls back to `initialize`), and logs no miss."""
    real = talk([sys.executable, str(TICKETS)], HANDSHAKE_ERA, tmp_path)
    exchanges = [
        {"request": {k: v for k, v in m.items() if k != "id"}, "response": answer}
        for m, answer in zip(
            [m for m in HANDSHAKE_ERA if "id" in m],
            [{"result": a["result"]} for a in real],
            strict=True,
        )
    ]
    tape = McpTape("replay", tmp_path / "mcp")
    tape.write_tape({"tickets": exchanges}, lambda text: text)
    discover = {"id": 7, "method": "server/discover", "params": {}}
    [answer, *rest] = talk(tape.argv("tickets", "gone", []), [discover, *HANDSHAKE_ERA], tmp_path)
    assert answer["error"]["code"] == -32601 and "id" in answer
    assert rest == real
    assert tape.misses() == []
