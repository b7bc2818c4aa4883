"""Cassette size and load-time benchmark: format 2 (shared blocks) against format 1 (inline).

Run by hand (needs a `claude`, see `atom setup`; ATOM_CLAUDE_BIN picks another one); nothing
is written to the repo:

    python benchmarks/cassette.py [--interactions 1000] [--turns 20]

(a) One real non-bare request is captured: `claude -p` (without --bare) against a scripted
    gateway on 127.0.0.1, as recording would see it, normalized. From it a cassette of
    --interactions requests is made: sessions of --turns agent turns, each request carrying
    the captured system prompt, tools and first messages, then the growing conversation
    (assistant tool calls, tool results of 0.1-3 kB, the CLI's moving cache_control on the
    newest message), each answered by an SSE stream. It is written in both formats and
    `Cassette.load` of each is timed (median of --repeat), with `yaml.load(CSafeLoader)` and
    vcrpy's deserializer of the new file for comparison: `Cassette.load` builds the YAML
    from libyaml's events (pytest_atom.replay.fastyaml), since PyYAML's cost is per node.
(b) The shipped cassettes (format 1) before and after `Cassette.load` + `save` (format 2),
    in a temporary folder.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median
from typing import Any

import yaml

from pytest_atom.agents.claude_code.cli import claude_version, find_claude
from pytest_atom.agents.claude_code.runner import claude_env
from pytest_atom.gateway import Gateway, scripted
from pytest_atom.gateway.messages import message, sse_stream
from pytest_atom.replay.cassette import Cassette, Interaction
from pytest_atom.replay.normalize import Normalizer, run_dates

REPO = Path(__file__).resolve().parent.parent
URI = "scripted://benchmark/v1/messages?beta=true"
HEADERS = {"anthropic-version": "2023-06-01", "content-type": "application/json"}
SSE = "text/event-stream"


def timed(fn: Callable[[], object], times: int) -> tuple[float, float]:
    """Median wall and CPU seconds of `times` calls of fn(): CPU time is steadier on a
    shared machine, wall time is what a user waits."""
    wall, cpu = [], []
    for _ in range(times):
        started, cpu_started = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
    return median(wall), median(cpu)


def events(text: str) -> None:
    """Only libyaml's events, as PyYAML hands them over: the floor of any PyYAML loader."""
    loader = yaml.CSafeLoader(text)
    try:
        while not isinstance(loader.get_event(), yaml.StreamEndEvent):
            pass
    finally:
        loader.dispose()


def ms(times: tuple[float, float]) -> str:
    return f"{times[0] * 1000:5.0f} ms (cpu {times[1] * 1000:4.0f} ms)"


def capture(claude_bin: Path, tmp: Path) -> dict[str, Any]:
    """The first agent request a non-bare `claude -p` sends, normalized as recording does."""
    workspace = tmp / "workspace"
    workspace.mkdir(parents=True)
    responder = scripted([{"text": "Done.\n\nEXIT_LOOP_NOW"}])
    cmd = [str(claude_bin), "-p", "--output-format", "stream-json", "--verbose"]
    cmd += ["--permission-mode", "acceptEdits", "--allowedTools", "Bash,Edit,Read,Write"]
    with Gateway(responder) as gateway:
        env = claude_env(gateway.url, tmp / "claude-config")
        run = dict(cwd=workspace, env=env, capture_output=True, text=True, timeout=300)
        proc = subprocess.run(cmd, input="Create hello.txt saying hello.", **run)
        requests = [e.request.json for e in gateway.exchanges]
    turns = [r for r in requests if isinstance(r, dict) and r.get("tools")]
    if proc.returncode or not turns:
        sys.exit(f"claude failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr}")
    paths = {str(workspace): "<WORKSPACE>", str(tmp): "<RUN_DIR>", str(Path.home()): "<HOME>"}
    body: dict[str, Any] = Normalizer(paths, run_dates()).body(turns[0])
    return body


def output(rng: random.Random) -> str:
    """A tool result of 0.1-3 kB: lines of plausible command output."""
    lines, size = [], rng.randint(100, 3000)
    while sum(len(line) + 1 for line in lines) < size:
        lines.append(f"src/module_{rng.randint(1, 99)}.py:{rng.randint(1, 400)}: " + "x" * 40)
    return "\n".join(lines)


def synthetic(real: dict[str, Any], count: int, turns: int) -> list[Interaction]:
    """`count` requests in sessions of `turns`, each conversation growing turn by turn."""
    rng, interactions = random.Random(7), []
    first = real["messages"]
    for session in range(-(-count // turns)):
        base = copy.deepcopy(first)
        prompt = base[-1]
        if isinstance(prompt.get("content"), str):
            prompt["content"] = f"Task {session}: {prompt['content']}"
        else:
            prompt["content"].append({"type": "text", "text": f"Task {session}."})
        history: list[dict[str, Any]] = []
        for turn in range(turns):
            if len(interactions) == count:
                return interactions
            messages = json.loads(json.dumps(base + history))  # fresh objects, as recorded
            block = messages[-1]["content"]
            if isinstance(block, list) and block:
                block[-1]["cache_control"] = {"type": "ephemeral"}  # the CLI's moving breakpoint
            body = {**json.loads(json.dumps(real)), "messages": messages}
            tool_id = f"<TOOL_ID:{turn + 1}>"
            command = f"grep -rn pattern_{rng.randint(1, 999)} src/"
            reply = [
                {"type": "text", "text": f"Step {turn + 1}: I'll look at the next part."},
                {
                    "type": "tool_use",
                    "id": tool_id,
                    "name": "Bash",
                    "input": {"command": command, "description": "Search the sources"},
                },
            ]
            msg = message(
                f"msg_{len(interactions):05d}",
                str(body.get("model")),
                reply,
                input_tokens=60000 + 500 * turn,
                output_tokens=80,
            )
            sse = sse_stream(msg).decode()
            interactions.append(
                Interaction("POST", URI, body, 200, sse, HEADERS, {"content-type": SSE})
            )
            result = {"type": "tool_result", "tool_use_id": tool_id, "content": output(rng)}
            history += [
                {"role": "assistant", "content": reply},
                {"role": "user", "content": [{**result, "is_error": False}]},
            ]
    return interactions


def fixtures(tmp: Path) -> list[tuple[str, int, int]]:
    """(name, bytes before, bytes after re-saving) of each shipped cassette."""
    found = sorted(REPO.glob("fixtures/specs/cassettes/*/*.yaml"))
    found += sorted(REPO.glob("examples/*/specs/cassettes/*/*.yaml"))
    rows = []
    for path in found:
        saved = Cassette.load(path).save(tmp / path.name)
        assert [i.body for i in Cassette.load(saved).interactions] == [
            i.body for i in Cassette.load(path).interactions
        ]
        rows.append((str(path.relative_to(REPO)), path.stat().st_size, saved.stat().st_size))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interactions", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=20, help="agent turns per session")
    parser.add_argument("--repeat", type=int, default=5, help="loads timed; the median counts")
    args = parser.parse_args()
    claude_bin = find_claude()
    with tempfile.TemporaryDirectory(prefix="atom-bench-") as root:
        tmp = Path(root)
        real = capture(claude_bin, tmp / "capture")
        shared = {k: len(json.dumps(real.get(k))) for k in ("system", "tools", "messages")}
        interactions = synthetic(real, args.interactions, args.turns)
        cassette = Cassette(tmp / "new.yaml", interactions, {"claude_code_version": "bench"})
        new = cassette.save()
        old = tmp / "old.yaml"
        old.write_text(cassette.dumps(format=1), encoding="utf-8")
        text = new.read_text(encoding="utf-8")
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        old_s = timed(lambda: Cassette.load(old), args.repeat)
        new_s = timed(lambda: Cassette.load(new), args.repeat)
        yaml_s = timed(lambda: yaml.load(text, Loader=loader), args.repeat)
        events_s = timed(lambda: events(text), args.repeat)
        assert [i.body for i in Cassette.load(new).interactions] == [i.body for i in interactions]
        try:
            from vcr.serialize import deserialize
            from vcr.serializers import yamlserializer

            vcr = ms(timed(lambda: deserialize(text, yamlserializer), args.repeat)).strip()
        except Exception as exc:  # noqa: BLE001 - a cassette vcrpy cannot read is a finding
            vcr = f"fails: {exc!r}"[:80]
        sizes = fixtures(tmp)
        old_mb, new_mb = old.stat().st_size / 1e6, new.stat().st_size / 1e6
    print(
        f"claude {claude_version(claude_bin)} non-bare request: system {shared['system']} B, "
        f"tools {shared['tools']} B, first messages {shared['messages']} B (JSON); "
        f"python {sys.version.split()[0]}, {loader.__name__}"
    )
    n = len(interactions)
    print(f"(a) {n} interactions, sessions of {args.turns} turns, median of {args.repeat} loads")
    print(f"    format 1 (inline)  {old_mb:6.1f} MB  Cassette.load {ms(old_s)}")
    print(f"    format 2 (shared)  {new_mb:6.1f} MB  Cassette.load {ms(new_s)}"
          f"  {old_s[0] / new_s[0]:.1f}x faster; target <= 100 ms: "
          f"{'ok' if new_s[0] <= 0.1 else 'NO'}")  # fmt: skip
    print(f"    the format 2 text: yaml.load {ms(yaml_s)}, vcrpy deserialize {vcr},")
    print(f"      libyaml's events alone {ms(events_s)}; load average {os.getloadavg()[0]:.1f}")
    print("(b) shipped cassettes, bytes: format 1 as shipped -> re-saved as format 2")
    for name, before, after in sizes:
        print(f"    {name:<72} {before:>7} -> {after:>7} ({after / before:.0%})")
    before, after = sum(s[1] for s in sizes), sum(s[2] for s in sizes)
    print(f"    {'total':<72} {before:>7} -> {after:>7} ({after / before:.0%})")


if __name__ == "__main__":
    main()
