"""Replay benchmarks: what replaying a cassette costs against not having a harness at all.

Run by hand (needs the pinned `claude`, see `atom setup`); nothing is written to the repo:

    /tmp/venv/bin/python benchmarks/replay.py [--runs 5] [--rounds 500]

One table; each figure is set against a baseline measured in the same run ("ok": target met).
(a) pytest item time of `pytest --atom fixtures/specs/create_file.atom.yaml` (the testcase
    `time` in its JUnit XML: what a user sees), median of --runs, divided by the median wall
    time of the same `claude -p` sessions run bare against a static server answering the
    recorded response bytes. The sessions (executor, and reflector when the harness runs
    one) are captured from a first, untimed pytest run through a logging ATOM_CLAUDE_BIN
    wrapper: same arguments and prompt, claude_env(static url, fresh config dir), one
    fresh folder, so only the harness differs.
(b) per-request latency, client side (httpx, one keep-alive connection), of a replaying
    `Gateway(CassetteResponder)` and of the static server over --rounds passes of the
    cassette's requests: p50/p99 of each and of the paired difference (= what the gateway
    adds). "one send": the static server writes headers and body at once, as a minimal
    server should; "two sends": apart, as the gateway's handler does, so that difference is
    the responder's own work. ~40 ms between them is Nagle's algorithm meeting delayed ACKs.
(c) a 1,000-interaction cassette (the fixture's interactions repeated): `Cassette.load`
    against `yaml.load(text, CSafeLoader)` of the same text, and vcrpy's `deserialize`.
Below the table, where the time goes: harness steps timed in-process, one at a time.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from statistics import median, quantiles
from urllib.parse import urlsplit

import httpx
import yaml

from pytest_atom.core.claude_code import claude_version, find_claude
from pytest_atom.core.prompts import PromptLoader
from pytest_atom.core.runner import ClaudeRunner, claude_env, clean_env
from pytest_atom.execution import session_id_for
from pytest_atom.judge.checks import run_checks
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.gateway import Gateway, GatewayRequest
from pytest_atom.replay.gateway.normalize import Normalizer, run_dates
from pytest_atom.replay.gateway.replay import CassetteResponder
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.spec import load_specs

REPO = Path(__file__).resolve().parent.parent
SPEC = Path("fixtures/specs/create_file.atom.yaml")  # relative: the node id a user sees
CASSETTE = REPO / "fixtures/specs/cassettes/create_file/create-file.yaml"


class StaticServer:
    """Recorded response bytes: turns (requests with tools) in order, other POSTs the side ones."""

    def __init__(self, cassette: Cassette, one_send: bool = True) -> None:
        def answers(turn: bool) -> Iterator[tuple[int, str | None, bytes]]:
            posts = [i for i in cassette.interactions if i.method == "POST"]
            found = [(i.status, i.response_headers.get("content-type"), i.response.encode())
                     for i in posts if is_turn(i.body) == turn]  # fmt: skip
            return itertools.cycle(found or [(200, None, b"{}")])

        turns, sides, lock = answers(True), answers(False), threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            wbufsize = 1 << 20 if one_send else 0  # buffered: one send, flushed per request

            def log_message(self, *args: object) -> None: ...

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    turn = self.path.startswith("/v1/messages") and is_turn(json.loads(body))
                except ValueError:
                    turn = False
                with lock:
                    status, ctype, data = next(turns if turn else sides)
                self.send_response(status)
                self.send_header("content-type", ctype or "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def is_turn(body: object) -> bool:
    return isinstance(body, dict) and bool(body.get("tools"))


def p99(values: list[float]) -> float:
    return quantiles(values, n=100, method="inclusive")[98]


def timed(fn, times: int = 5) -> float:
    """Median seconds of `times` calls of fn()."""
    seconds = []
    for _ in range(times):
        started = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - started)
    return median(seconds)


def pytest_item(tmp: Path, extra_env: dict[str, str] | None = None) -> dict[str, float]:
    """One `pytest --atom` of the spec: the item's JUnit time and its atom_* properties."""
    xml = tmp / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", "--atom", str(SPEC), "-p", "no:cacheprovider", "-q"]
    cmd += ["--junitxml", str(xml), "--atom-runs-dir", str(tmp / "runs")]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(extra_env or {})}  # no __pycache__
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - started
    case = ET.parse(xml).find(".//testcase") if xml.exists() else None
    if proc.returncode or case is None:  # a failed or errored item exits non-zero
        sys.exit(f"pytest run failed:\n{proc.stdout}\n{proc.stderr}")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    run_spec, claude = float(props["atom_duration_s"]), float(props["atom_claude_s"])
    return {
        "item": float(case.get("time")),
        "process": wall,
        "run_spec": run_spec,
        "claude": claude,
    }


WRAPPER = """#!{python}
import json, os, subprocess, sys
real, args = {real!r}, sys.argv[1:]
if "--version" in args:  # the harness's version check: not a session
    os.execv(real, [real, *args])
prompt = sys.stdin.read()
with open({log!r}, "a", encoding="utf-8") as log:
    log.write(json.dumps({{"argv": args, "stdin": prompt}}) + "\\n")
sys.exit(subprocess.run([real, *args], input=prompt, text=True).returncode)
"""


def capture_sessions(tmp: Path, claude_bin: Path) -> list[dict[str, object]]:
    """Every `claude` session one pytest run starts (argv, stdin), via a logging wrapper."""
    wrapper, log = tmp / "claude", tmp / "sessions.jsonl"
    wrapper.write_text(WRAPPER.format(python=sys.executable, real=str(claude_bin), log=str(log)))
    wrapper.chmod(0o755)
    pytest_item(tmp, {"ATOM_CLAUDE_BIN": str(wrapper)})
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def bare_claude(tmp: Path, cassette: Cassette, claude_bin: Path, sessions: list) -> list[float]:
    """Wall seconds of each captured session run bare, in order, against the static server."""
    spec = load_specs(REPO / SPEC)[0]
    workspace, seconds = tmp / "workspace", []
    workspace.mkdir()
    (workspace / "USER_PROMPT.md").write_text(spec.prompt, encoding="utf-8")
    server = StaticServer(cassette)
    env = claude_env(server.url, tmp / "claude-config")
    try:
        for session in sessions:
            started = time.perf_counter()
            cmd, prompt = [str(claude_bin), *session["argv"]], session["stdin"]
            run = dict(cwd=workspace, env=env, capture_output=True, text=True, timeout=300)
            proc = subprocess.run(cmd, input=prompt, **run)
            seconds.append(time.perf_counter() - started)
            if proc.returncode:
                sys.exit(f"bare claude failed:\n{proc.stdout[-2000:]}\n{proc.stderr}")
    finally:
        server.close()
    if not (workspace / "hello.txt").exists():
        sys.exit("bare claude sessions did not create hello.txt: the static answers are off")
    return seconds


def responder(tmp: Path, cassette: Cassette) -> CassetteResponder:
    """A replaying responder as run_spec builds one. The stored bodies hold the placeholders
    already, so they normalize to themselves and match as they are sent."""
    run = tmp / "run"
    paths = {
        str(run / "workspace"): "<WORKSPACE>",
        str(run): "<RUN_DIR>",
        str(Path.home()): "<HOME>",
    }
    return CassetteResponder(cassette, Normalizer(paths, run_dates()), Scrubber(), replay=True)


def recorded_requests(cassette: Cassette) -> list[tuple[str, str, dict[str, str], bytes]]:
    requests = []
    for i in cassette.interactions:
        path = urlsplit(i.uri)._replace(scheme="", netloc="").geturl()
        body = b"" if i.method == "HEAD" else json.dumps(i.body).encode()
        requests.append((i.method, path, i.request_headers, body))
    return requests


def latencies(tmp: Path, cassette: Cassette, rounds: int) -> dict[str, list[float]]:
    """Per-request seconds, in the same order for each server so they pair up."""
    gateway, requests = Gateway(responder(tmp, cassette)).start(), recorded_requests(cassette)
    one, two = StaticServer(cassette), StaticServer(cassette, one_send=False)
    servers = {"replay": gateway.url, "one send": one.url, "two sends": two.url}
    seconds: dict[str, list[float]] = {name: [] for name in servers}
    try:
        with httpx.Client(timeout=30) as client:
            for r in range(rounds + 5):  # 5 warm-up rounds, not counted
                gateway.responder = responder(tmp, cassette)  # each interaction plays once a round
                for name, base in servers.items():
                    for method, path, headers, body in requests:
                        started = time.perf_counter()
                        resp = client.request(method, base + path, headers=headers, content=body)
                        took = time.perf_counter() - started  # request() reads the whole body
                        if resp.status_code != 200:
                            sys.exit(f"{name}: {method} {path} -> {resp.status_code}: {resp.text}")
                        if r >= 5:
                            seconds[name].append(took)
    finally:
        gateway.stop()
        one.close()
        two.close()
    return seconds


def load_times(tmp: Path, cassette: Cassette) -> dict[str, object]:
    items = cassette.interactions
    big = Cassette(
        tmp / "big.yaml", [items[i % len(items)] for i in range(1000)], cassette.metadata
    )
    path = big.save()
    text = path.read_text(encoding="utf-8")
    loader = getattr(yaml, "CSafeLoader", None)
    out: dict[str, object] = {
        "mb": path.stat().st_size / 1e6,
        "load": timed(lambda: Cassette.load(path)),
        "loader": "CSafeLoader" if loader else "SafeLoader (CSafeLoader missing!)",
        "yaml": timed(lambda: yaml.load(text, Loader=loader or yaml.SafeLoader)),
    }
    try:
        from vcr.serialize import deserialize
        from vcr.serializers import yamlserializer

        loaded = deserialize(text, yamlserializer)[0]  # (requests, responses[, metadata])
        out["vcr"] = timed(lambda: deserialize(text, yamlserializer))
        out["vcr_note"] = f"vcrpy loads all {len(loaded)}"
    except Exception as exc:  # noqa: BLE001 - a cassette vcrpy cannot read is a finding
        out["vcr"], out["vcr_note"] = None, f"vcrpy fails: {exc!r}"[:80]
    return out


def harness_parts(cassette: Cassette, claude_bin: Path) -> dict[str, float]:
    """The steps run_spec adds around claude in a replay, timed one at a time."""
    spec = load_specs(REPO / SPEC)[0]
    with tempfile.TemporaryDirectory(prefix="atom-bench-") as tmp:
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        (workspace / "hello.txt").write_text("hello, world\n")
        turn = next(i for i, r in enumerate(cassette.interactions) if is_turn(r.body))
        method, path, headers, body = recorded_requests(cassette)[turn]
        request = GatewayRequest(method, path, {k.lower(): v for k, v in headers.items()}, body)
        pool = iter([responder(Path(tmp), cassette) for _ in range(60)])
        return {
            "`claude --version` check": timed(lambda: claude_version(claude_bin)),
            "cassette load (fixture)": timed(lambda: Cassette.load(CASSETTE)),
            "system prompt load": timed(lambda: PromptLoader(REPO).load(spec.toolname)),
            "gateway start + stop": timed(lambda: Gateway(next(pool)).start().stop()),
            "accept checks": timed(lambda: run_checks(spec.accept, workspace, env=clean_env())),
            "respond() to a turn, no HTTP": timed(lambda: next(pool).respond(request), 50),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="pytest and bare-claude runs for (a)")
    parser.add_argument("--rounds", type=int, default=500, help="passes over the requests for (b)")
    args = parser.parse_args()
    claude_bin, cassette, spec = find_claude(), Cassette.load(CASSETTE), load_specs(REPO / SPEC)[0]
    print(
        f"claude {claude_version(claude_bin)} at {claude_bin}; python {sys.version.split()[0]}; "
        f"{len(cassette.interactions)} recorded requests; --runs {args.runs} --rounds {args.rounds}"
    )
    items, bare = [], []
    with tempfile.TemporaryDirectory(prefix="atom-bench-") as root:
        sessions = capture_sessions(Path(tempfile.mkdtemp(dir=root)), claude_bin)  # also warms up
        for _ in range(args.runs):  # interleaved, so drift in machine load hits both alike
            items.append(pytest_item(Path(tempfile.mkdtemp(dir=root))))
            bare.append(
                bare_claude(Path(tempfile.mkdtemp(dir=root)), cassette, claude_bin, sessions)
            )
        lat = latencies(Path(root), cassette, args.rounds)
        load = load_times(Path(root), cassette)
    item, bare_s = median([i["item"] for i in items]), median([sum(b) for b in bare])
    ms = lambda s: f"{s * 1000:.2f} ms"  # noqa: E731
    yes = lambda ok: "yes" if ok else "NO"  # noqa: E731
    table = [("measurement", "figure", "baseline", "result", "target", "ok")]
    baseline = f"bare claude, {len(sessions)} sessions {bare_s:.3f} s"
    ratio = item / bare_s
    table.append(("(a) create-file pytest item (JUnit time)", f"{item:.3f} s", baseline,
                  f"{ratio:.3f}x", "<= 1.10", yes(ratio <= 1.10)))  # fmt: skip
    for static in ("one send", "two sends"):
        replay, other = lat["replay"], lat[static]
        added = [a - b for a, b in zip(replay, other, strict=True)]
        for name, stat, target in (("p50", median, "<= 2 ms"), ("p99", p99, "")):
            ok = yes(stat(added) <= 0.002) if target else ""
            table.append((f"(b) {name} replay vs static ({static})", ms(stat(replay)),
                          ms(stat(other)), f"+{ms(stat(added))} added", target, ok))  # fmt: skip
    baseline = f"yaml.load {load['loader']} {load['yaml']:.3f} s"
    table.append((f"(c) load 1,000 interactions ({load['mb']:.1f} MB)", f"{load['load']:.3f} s",
                  baseline, f"{load['load'] / load['yaml']:.2f}x", "", ""))  # fmt: skip
    vcr = load["vcr"]
    table.append(("(c) vcr.serialize.deserialize, same file", f"{vcr:.3f} s" if vcr else "-",
                  load["vcr_note"], f"{vcr / load['yaml']:.2f}x" if vcr else "-", "", ""))  # fmt: skip
    widths = [max(len(str(r[c])) for r in table) for c in range(6)]
    for r in table:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
    run_spec_s, claude_s = (
        median([i["run_spec"] for i in items]),
        median([i["claude"] for i in items]),
    )
    print(f"\nwhere the (a) item time goes (JUnit atom_* properties, median of {args.runs}):")
    executor = ClaudeRunner(options=spec.claude, model=spec.model, claude_bin=claude_bin)
    same = sessions[0]["argv"] == executor.command(["--session-id", session_id_for(spec)])[1:]
    per_session = " + ".join(f"{median([b[i] for b in bare]):.3f}" for i in range(len(sessions)))
    print(
        f"  claude processes in the harness {claude_s:.3f} s (bare: {per_session} s, "
        f"{claude_s - bare_s:+.3f} s); 1st session's argv == ClaudeRunner.command: {same}"
    )
    print(f"  run_spec outside claude         {run_spec_s - claude_s:.3f} s; its steps in-process:")
    for name, seconds in harness_parts(cassette, claude_bin).items():
        print(f"    {name:<29} {seconds * 1000:7.1f} ms")
    print(f"  pytest item outside run_spec    {item - run_spec_s:.3f} s")
    process = median([i["process"] for i in items])
    print(
        f"  (whole pytest process {process:.3f} s: interpreter, plugins, collection, not in item)"
    )


if __name__ == "__main__":
    main()
