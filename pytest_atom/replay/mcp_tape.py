"""A spec's stdio MCP servers, recorded and replayed: the process the CLI starts in their place.

The CLI speaks newline-delimited JSON-RPC to a stdio MCP server (MCP's stdio transport).
`agents.claude_code.configuration.mcp_server_entry` makes the CLI start this module instead::

    python -m pytest_atom.replay.mcp_tape --server NAME --tape FOLDER -- COMMAND ARGS...
    python -m pytest_atom.replay.mcp_tape --server NAME --tape FOLDER --replay

- Recording, the real server runs as the spec configured it, and every line is relayed both
  ways unchanged, as it arrives. Each request is kept with its response (and the
  notifications sent meanwhile), scrubbed (this process has the server's credentials too),
  and appended to ``FOLDER/NAME.jsonl`` at once: nothing unscrubbed reaches the disk, and a
  killed run keeps what was said. `ModelSource` stores them in ``metadata.mcp``.
- Replaying, no server runs (nor its dependencies, nor its credentials). A stand-in answers
  from ``FOLDER/tape.json`` (the cassette's exchanges, the run's own paths put back),
  matching a request on its method and params (never its id, which it echoes), in any order;
  a request the server left unanswered (a subscription) stays unanswered. A request the
  recording never saw gets a JSON-RPC error and a line in ``FOLDER/misses.jsonl``, which the
  harness reports as a divergence naming the server and the tool.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO, TYPE_CHECKING, Any, Literal

from pytest_atom import digest as digest_module
from pytest_atom.processes import spawn

if TYPE_CHECKING:
    from pytest_atom.replay.scrub import Scrubber

Mode = Literal["record", "replay"]
MODULE = "pytest_atom.replay.mcp_tape"
TAPE_FILE = "tape.json"
MISSES_FILE = "misses.jsonl"
SERVED_SUFFIX = ".served"
#: The JSON-RPC error a stand-in answers an unrecorded request with.
NOT_RECORDED = -32001


@dataclass(frozen=True)
class McpTape:
    """Where one run's MCP traffic goes (record) or comes from (replay): `folder`."""

    mode: Mode
    folder: Path

    def argv(self, server: str, command: str, args: Sequence[str]) -> list[str]:
        """The command line for server `server`: the recording proxy around it, or the stand-in."""
        argv = [sys.executable, "-m", MODULE, "--server", server, "--tape", str(self.folder)]
        if self.mode == "replay":
            return [*argv, "--replay"]
        return [*argv, "--", command, *args]

    def recorded(self, paths_out: Callable[[str], str]) -> dict[str, list[dict[str, Any]]]:
        """Every server's exchanges, run paths turned into placeholders; by server name."""
        found: dict[str, list[dict[str, Any]]] = {}
        for log in sorted(self.folder.glob("*.jsonl")) if self.folder.is_dir() else []:
            if log.name == MISSES_FILE:
                continue
            exchanges = [json.loads(paths_out(line)) for line in _lines(log)]
            if exchanges:
                found[log.stem] = exchanges
        return found

    def write_tape(self, servers: Any, paths_in: Callable[[str], str]) -> None:
        """The cassette's exchanges for the stand-ins, with live paths; what an earlier run in
        this folder (one resumed) missed and served is forgotten."""
        self.folder.mkdir(parents=True, exist_ok=True)
        for old in [self.folder / MISSES_FILE, *self.folder.glob(f"*{SERVED_SUFFIX}")]:
            old.unlink(missing_ok=True)
        text = json.dumps(servers if isinstance(servers, dict) else {}, ensure_ascii=False)
        (self.folder / TAPE_FILE).write_text(paths_in(text), encoding="utf-8")

    def misses(self) -> list[dict[str, Any]]:
        """What the stand-ins were asked and could not answer, in the order asked."""
        path = self.folder / MISSES_FILE
        return [json.loads(line) for line in _lines(path)] if path.is_file() else []


def _lines(path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def describe_miss(miss: Mapping[str, Any]) -> str:
    """``MCP server 'tickets': tools/call 'create' with {"title": "x"} was never recorded``."""
    method, params = str(miss.get("method")), miss.get("params")
    what = method
    if isinstance(params, dict) and method == "tools/call":
        arguments = json.dumps(params.get("arguments") or {}, ensure_ascii=False)
        what += f" '{params.get('name')}' with {arguments}"
    elif params:
        what += f" with {json.dumps(params, ensure_ascii=False)}"
    return f"MCP server '{miss.get('server')}': {what} was never recorded"


def request_key(message: Mapping[str, Any]) -> str:
    """What a replayed request is matched on: its method and params, never its id; neither
    the ``_meta`` of params nor any of ``initialize``'s (the client's own)."""
    stored = _stored(message)
    params = None if stored.get("method") == "initialize" else stored.get("params")
    return json.dumps([stored.get("method"), params], sort_keys=True, ensure_ascii=False)


def _stored(request: Mapping[str, Any]) -> dict[str, Any]:
    """A request as the tape keeps it: without its id and its params' ``_meta`` (the
    client's version, the tool-use id, a progress token: volatile, never matched on)."""
    stored = _without(request, "id", "jsonrpc")
    if isinstance(stored.get("params"), dict):
        stored["params"] = _without(stored["params"], "_meta")
        if not stored["params"]:
            del stored["params"]
    return stored


def _without(message: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k not in keys}


def _parse(line: str) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except ValueError:
        return None
    return message if isinstance(message, dict) else None


def _scrubber() -> Scrubber:
    from pytest_atom.replay.scrub import Scrubber  # the replay of a clean tape never needs it

    return Scrubber()


# --- recording -------------------------------------------------------------------------------


def record(folder: Path, server: str, command: list[str]) -> int:
    """Run `command` as the server, relay both ways, log each finished exchange."""
    scrubber = _scrubber()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        child = spawn(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    except OSError as exc:
        print(
            f"pytest-atom: cannot start MCP server '{server}' ({command[0]}): {exc}",
            file=sys.stderr,
        )
        return 1

    def stop(signum: int, frame: FrameType | None) -> None:
        child.terminate()  # the CLI ending the session ends the server too
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    assert child.stdin is not None and child.stdout is not None
    child_in, child_out = child.stdin, child.stdout
    pending: dict[str, dict[str, Any]] = {}  # the request's id, as JSON -> the exchange so far
    lock = threading.Lock()

    def upstream() -> None:  # the CLI -> the server
        for line in sys.stdin.buffer:
            message = _parse(line.decode("utf-8", "replace"))
            if message is not None and "method" in message and "id" in message:
                request = scrubber.scrub_obj(_stored(message))
                with lock:
                    pending[json.dumps(message["id"])] = {"request": request}
            try:
                child_in.write(line)
                child_in.flush()
            except (BrokenPipeError, ValueError):
                break
        try:
            child_in.close()
        except (BrokenPipeError, ValueError):
            pass

    threading.Thread(target=upstream, daemon=True).start()
    with (folder / f"{server}.jsonl").open("a", encoding="utf-8") as log:
        try:
            for line in child_out:  # the server -> the CLI
                sys.stdout.buffer.write(line)
                sys.stdout.buffer.flush()
                message = _parse(line.decode("utf-8", "replace"))
                if message is not None:
                    _keep(message, pending, lock, scrubber, log)
        finally:
            # Still open when the session ended (`subscriptions/listen`): kept unanswered.
            with lock:
                for exchange in pending.values():
                    log.write(json.dumps(exchange, ensure_ascii=False) + "\n")
                pending.clear()
    return child.wait()


def _keep(
    message: dict[str, Any],
    pending: dict[str, dict[str, Any]],
    lock: threading.Lock,
    scrubber: Scrubber,
    log: IO[str],
) -> None:
    """File one message from the server: a response closes its exchange, which is written;
    a notification joins the exchange still open (the last one asked)."""
    with lock:
        if "method" not in message and "id" in message:
            exchange = pending.pop(json.dumps(message["id"]), None)
            if exchange is None:
                return  # the answer to nothing the CLI asked: not ours to keep
            exchange["response"] = scrubber.scrub_obj(_without(message, "id", "jsonrpc"))
        elif "id" not in message and pending:
            exchange = list(pending.values())[-1]
            note = scrubber.scrub_obj(_without(message, "jsonrpc"))
            exchange.setdefault("notifications", []).append(note)
            return
        else:
            return  # a request from the server (roots, sampling): relayed, not recorded
    log.write(json.dumps(exchange, ensure_ascii=False) + "\n")
    log.flush()


# --- replaying -------------------------------------------------------------------------------


def replay(folder: Path, server: str) -> int:
    """Answer from the tape, until the CLI hangs up; log what it does not hold. The same
    request asked again takes the next recorded answer (then the last one again), counted
    across the run's sessions in ``FOLDER/NAME.served``, as a stateful server answers."""
    tape_file = folder / TAPE_FILE
    tape = json.loads(tape_file.read_text(encoding="utf-8")) if tape_file.is_file() else {}
    by_key: dict[str, list[dict[str, Any]]] = {}
    for exchange in tape.get(server) or []:
        by_key.setdefault(request_key(exchange["request"]), []).append(exchange)
    served_file = folder / f"{server}{SERVED_SUFFIX}"
    served: dict[str, int] = {}  # a request key's digest -> answers given so far
    for line in _lines(served_file) if served_file.is_file() else []:
        served[line] = served.get(line, 0) + 1
    scrubber: Scrubber | None = None
    era = Era(tape.get(server) or [])
    for line in sys.stdin:
        message = _parse(line)
        if message is None or "method" not in message or "id" not in message:
            continue  # a notification or an answer: a stand-in has nothing to say back
        translated = era.answer(message)
        if translated is not None:
            _answer({"jsonrpc": "2.0", "id": message["id"], **translated})
            continue
        key = request_key(message)
        if key not in by_key:  # a recorded request was scrubbed: match it scrubbed
            scrubber = scrubber or _scrubber()
            key = request_key(scrubber.scrub_obj(message))
        candidates = by_key.get(key)
        if not candidates:
            scrubber = scrubber or _scrubber()
            miss = scrubber.scrub_obj({"server": server, **_stored(message)})
            with (folder / MISSES_FILE).open("a", encoding="utf-8") as misses:
                misses.write(json.dumps(miss, ensure_ascii=False) + "\n")
            error = {"code": NOT_RECORDED, "message": f"{describe_miss(miss)} (pytest-atom replay)"}
            _answer({"jsonrpc": "2.0", "id": message["id"], "error": error})
            continue
        digest = digest_module.hex_of(key.encode())[:16]
        index = min(served.get(digest, 0), len(candidates) - 1)
        served[digest] = index + 1
        with served_file.open("a", encoding="utf-8") as log:
            log.write(digest + "\n")
        exchange = candidates[index]
        for note in exchange.get("notifications") or []:
            _answer({"jsonrpc": "2.0", **note})
        if "response" in exchange:  # else the server never answered it while recorded
            _answer({"jsonrpc": "2.0", "id": message["id"], **era.response(exchange["response"])})
    return 0


#: The first request a 2026-07-28 ("modern") MCP client sends; an older client opens with
#: ``initialize``. An MCP server serves each connection in the era its first request chose.
DISCOVER = "server/discover"
#: What a modern server adds to every result, which a handshake-era server never sends.
_MODERN_RESULT_KEYS = ("cacheScope", "resultType", "ttlMs")
_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
_METHOD_NOT_FOUND = -32601


def _without_notifications(capabilities: Any) -> dict[str, Any]:
    """A modern server's capabilities as its handshake states them: no list-changed or
    subscription flags, which the stand-in never serves on a handshake-era connection."""
    if not isinstance(capabilities, dict):
        return {}
    return {
        name: {k: False if isinstance(v, bool) else v for k, v in flags.items()}
        if isinstance(flags, dict)
        else flags
        for name, flags in capabilities.items()
    }


class Era:
    """The stand-in's connection answers in the era of the CLI that talks to it, whichever
    era the tape was recorded in: the tape is the server's behaviour, the era its wire form.

    Claude Code 2.1.331 opens with the 2026-07-28 protocol's ``server/discover``, 2.1.197
    with ``initialize``. So, as the recorded server would on a fresh connection, an older
    client's ``initialize`` on a modern tape gets the handshake built from the recorded
    ``server/discover`` (and later results lose the modern-only fields); a modern client's
    ``server/discover`` on a handshake-era tape gets "method not found", and falls back."""

    def __init__(self, exchanges: list[dict[str, Any]]) -> None:
        methods = [str(e.get("request", {}).get("method")) for e in exchanges]
        discovered = [
            e.get("response", {}).get("result")
            for e in exchanges
            if e.get("request", {}).get("method") == DISCOVER
        ]
        self.discover: dict[str, Any] | None = next(
            (r for r in discovered if isinstance(r, dict)), None
        )
        self.recorded_modern = self.discover is not None
        self.recorded_any = bool(methods)
        self.modern: bool | None = None  # this connection's era, set by its first request

    def answer(self, message: Mapping[str, Any]) -> dict[str, Any] | None:
        """The answer that bridges the eras, or None when the tape answers as recorded."""
        method = message.get("method")
        if self.modern is None and method in (DISCOVER, "initialize"):
            self.modern = method == DISCOVER
        if method == DISCOVER and not self.recorded_modern and self.recorded_any:
            return {"error": {"code": _METHOD_NOT_FOUND, "message": "Method not found"}}
        if method == "initialize" and self.modern is False and self.discover is not None:
            params = message.get("params")
            requested = params.get("protocolVersion") if isinstance(params, dict) else None
            meta = self.discover.get("_meta")
            info = meta.get(_SERVER_INFO) if isinstance(meta, dict) else None
            result = {
                "protocolVersion": requested,
                "capabilities": _without_notifications(self.discover.get("capabilities")),
                "serverInfo": info or {"name": "", "version": ""},
            }
            return {"result": result}
        return None

    def response(self, response: Mapping[str, Any]) -> dict[str, Any]:
        """A recorded response in this connection's era."""
        result = response.get("result")
        if not (self.recorded_modern and self.modern is False and isinstance(result, dict)):
            return dict(response)
        legacy = {k: v for k, v in result.items() if k not in _MODERN_RESULT_KEYS}
        meta = legacy.get("_meta")
        if isinstance(meta, dict):
            meta = {k: v for k, v in meta.items() if k != _SERVER_INFO}
            if meta:
                legacy["_meta"] = meta
            else:
                del legacy["_meta"]
        return {**response, "result": legacy}


def _answer(message: Mapping[str, Any]) -> None:
    sys.stdout.write(json.dumps(message, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def main(argv: Iterable[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog=f"python -m {MODULE}",
        description="Record a stdio MCP server's traffic, or answer from a recording.",
    )
    parser.add_argument("--server", required=True, help="the server's name in the spec")
    parser.add_argument("--tape", required=True, type=Path, help="the run's MCP folder")
    parser.add_argument("--replay", action="store_true", help="answer from FOLDER/tape.json")
    parser.add_argument("command", nargs="*", help="-- COMMAND ARGS: the server to record")
    args = parser.parse_args(list(sys.argv[1:] if argv is None else argv))
    if args.replay:
        return replay(args.tape, args.server)
    if not args.command:
        parser.error("recording needs the server's command after --")
    return record(args.tape, args.server, args.command)


if __name__ == "__main__":
    sys.exit(main())
