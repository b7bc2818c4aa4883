"""Replay benchmarks: what replaying a cassette costs compared with not having a harness.

Run by hand, from anywhere (needs the pinned `claude`, see `atom setup`):

    python benchmarks/replay.py [--runs 5] [--rounds 500]

It prints one table; every figure is set against a baseline measured in the same run:

(a) overhead  pytest item time of `pytest --atom fixtures/specs/create_file.atom.yaml`
              (the testcase `time` of its JUnit XML: what a user sees), median of --runs,
              divided by the median wall time of a bare `claude -p` of the same session
              (same command line, environment and prompt) against a *static* server that
              answers from the cassette's recorded response bytes, no matching at all.
(b) latency   per-request client-side latency of a replaying `Gateway(CassetteResponder)`
              against the static server, over --rounds passes of the cassette's requests
              (sent with httpx on one keep-alive connection): p50/p99 of each, and p50/p99
              of the paired difference (replay - static) = what the gateway adds.
(c) load      a 1,000-interaction cassette (the fixture's interactions repeated):
              `Cassette.load` against a bare `yaml.load(text, CSafeLoader)` of the same
              text, plus whether vcrpy's own `deserialize` reads it and how long it takes.

"ok" says whether the target is met. Below the table, a breakdown of where the item time
goes (claude process, harness inside run_spec, pytest around it) reads the (a) figure.
Everything runs on 127.0.0.1 in temp folders that are removed at the end.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import yaml

from pytest_atom.cassette import Cassette
from pytest_atom.claude_code import claude_version, find_claude
from pytest_atom.execution import session_id_for
from pytest_atom.gateway import Gateway
from pytest_atom.gateway.normalize import Normalizer, run_dates
from pytest_atom.gateway.replay import CassetteResponder
from pytest_atom.prompts import PromptLoader, render_prompt
from pytest_atom.runner import ClaudeRunner, claude_env
from pytest_atom.scrub import Scrubber
from pytest_atom.spec import load_specs

REPO = Path(__file__).resolve().parent.parent
SPEC = Path("fixtures/specs/create_file.atom.yaml")
CASSETTE = REPO / "fixtures/specs/cassettes/create_file/create-file.yaml"


def is_turn(interaction) -> bool:
    return isinstance(interaction.body, dict) and bool(interaction.body.get("tools"))


class StaticServer:
    """Answers from precomputed bytes: turns in recorded order, other POSTs with side replies."""

    def __init__(self, cassette: Cassette) -> None:
        def entry(i):
            return i.status, i.response_headers.get("content-type", "application/json"), i.response.encode()
        posts = [i for i in cassette.interactions if i.method == "POST"]
        turns = [entry(i) for i in posts if is_turn(i)]
        sides = [entry(i) for i in posts if not is_turn(i)] or [(200, "application/json", b"{}")]
        self.turns, self.sides = itertools.cycle(turns), itertools.cycle(sides)
        lock, owner = threading.Lock(), self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None: ...

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    turn = self.path.startswith("/v1/messages") and bool(json.loads(body).get("tools"))
                except (ValueError, AttributeError):
                    turn = False
                with lock:
                    status, ctype, data = next(owner.turns if turn else owner.sides)
                self.send_response(status)
                self.send_header("content-type", ctype)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                         daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def med(values: list[float]) -> float:
    return statistics.median(values)


def p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98]


def pytest_item(tmp: Path) -> dict[str, float]:
    """One `pytest --atom` of the spec; the item's JUnit time and its atom_* properties."""
    xml = tmp / "junit.xml"
    cmd = [sys.executable, "-m", "pytest", "--atom", str(SPEC), "-p", "no:cacheprovider", "-q",
           "--junitxml", str(xml), "--atom-runs-dir", str(tmp / "runs")]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # nothing written into the repository
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - started
    case = ET.parse(xml).find(".//testcase")
    if proc.returncode != 0 or case is None or len(case.findall("failure") + case.findall("error")):
        sys.exit(f"pytest run failed:\n{proc.stdout}\n{proc.stderr}")
    props = {p.get("name"): float(p.get("value")) for p in case.iter("property")}
    return {"item": float(case.get("time")), "process": wall, "run_spec": props["atom_duration_s"],
            "claude": props["atom_claude_s"]}


def bare_claude(tmp: Path, cassette: Cassette, claude_bin: Path) -> float:
    """Wall time of `claude -p` alone, same command line as the runner, static answers."""
    spec = load_specs(REPO / SPEC)[0]
    prompt = render_prompt(PromptLoader(REPO).load(spec.toolname), spec.max_iterations)
    prompt = f"{prompt}\n\n# USER_PROMPT.md\n\n{spec.prompt}"
    workspace, config = tmp / "workspace", tmp / "claude-config"
    workspace.mkdir()
    (workspace / "USER_PROMPT.md").write_text(spec.prompt, encoding="utf-8")
    server = StaticServer(cassette)
    try:
        runner = ClaudeRunner(env=claude_env(server.url, config), options=spec.claude,
                              model=spec.model, claude_bin=claude_bin)
        cmd = runner.command(["--session-id", session_id_for(spec)])
        started = time.perf_counter()
        proc = subprocess.run(cmd, input=prompt, cwd=workspace, env=runner.env,
                              capture_output=True, text=True, timeout=300)
        seconds = time.perf_counter() - started
    finally:
        server.close()
    hello = workspace / "hello.txt"
    if proc.returncode != 0 or "EXIT_LOOP_NOW" not in proc.stdout or not hello.exists():
        sys.exit(f"bare claude run failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr}")
    return seconds


def latencies(tmp: Path, cassette: Cassette, rounds: int) -> tuple[list[float], list[float]]:
    """Per-request seconds against the replaying gateway and the static server, paired."""
    run_dir = tmp / "run"
    paths = {str(run_dir / "workspace"): "<WORKSPACE>", str(run_dir): "<RUN_DIR>",
             str(Path.home()): "<HOME>"}
    # Stored bodies already hold the placeholders, so they normalize to themselves and match.
    def fresh() -> CassetteResponder:
        return CassetteResponder(cassette, Normalizer(paths, run_dates()), Scrubber(), replay=True)
    requests = [(i.method, urlsplit(i.uri)._replace(scheme="", netloc="").geturl(), i.request_headers,
                 b"" if i.method == "HEAD" else json.dumps(i.body).encode()) for i in cassette.interactions]
    static, gateway = StaticServer(cassette), Gateway(fresh()).start()
    replay_s, static_s = [], []
    try:
        with httpx.Client(timeout=30) as client:
            for r in range(rounds + 5):  # 5 warm-up rounds, not counted
                gateway.responder = fresh()
                for base, out in ((gateway.url, replay_s), (static.url, static_s)):
                    for method, path, headers, body in requests:
                        started = time.perf_counter()
                        resp = client.request(method, base + path, headers=headers, content=body)
                        resp.read()
                        took = time.perf_counter() - started
                        if resp.status_code != 200:
                            sys.exit(f"{method} {path} -> {resp.status_code}: {resp.text[:500]}")
                        if r >= 5:
                            out.append(took)
    finally:
        gateway.stop()
        static.close()
    return replay_s, static_s


def load_times(tmp: Path, cassette: Cassette) -> dict[str, object]:
    big = Cassette(tmp / "big.yaml", [cassette.interactions[i % len(cassette.interactions)]
                                      for i in range(1000)], dict(cassette.metadata))
    path = big.save()
    text = path.read_text(encoding="utf-8")

    def timed(fn) -> float:
        times = []
        for _ in range(5):
            started = time.perf_counter()
            fn()
            times.append(time.perf_counter() - started)
        return med(times)

    out: dict[str, object] = {"mb": path.stat().st_size / 1e6, "load": timed(lambda: Cassette.load(path))}
    loader = getattr(yaml, "CSafeLoader", None)
    out["loader"] = "CSafeLoader" if loader else "SafeLoader (CSafeLoader missing)"
    out["yaml"] = timed(lambda: yaml.load(text, Loader=loader or yaml.SafeLoader))
    try:
        from vcr.serialize import deserialize
        from vcr.serializers import yamlserializer
        requests, _ = deserialize(text, yamlserializer)
        out["vcr"] = timed(lambda: deserialize(text, yamlserializer))
        out["vcr_note"] = f"loads {len(requests)} interactions"
    except Exception as exc:  # report, do not hide, a cassette vcrpy cannot read
        out["vcr"], out["vcr_note"] = None, f"fails: {exc!r}"[:80]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="pytest and bare-claude runs for (a)")
    parser.add_argument("--rounds", type=int, default=500, help="passes over the requests for (b)")
    args = parser.parse_args()
    claude_bin = find_claude()
    cassette = Cassette.load(CASSETTE)
    print(f"claude {claude_version(claude_bin)} ({claude_bin}); python {sys.version.split()[0]}; "
          f"{len(cassette.interactions)} recorded requests; {args.runs} runs, {args.rounds} rounds")
    items, bare = [], []
    with tempfile.TemporaryDirectory(prefix="atom-bench-") as root:
        root_path = Path(root)
        for n in range(args.runs):  # interleaved, so drift in machine load hits both alike
            items.append(pytest_item(Path(tempfile.mkdtemp(dir=root_path))))
            bare.append(bare_claude(Path(tempfile.mkdtemp(dir=root_path)), cassette, claude_bin))
        replay_s, static_s = latencies(root_path, cassette, args.rounds)
        load = load_times(root_path, cassette)
    added = [a - b for a, b in zip(replay_s, static_s)]
    item = med([i["item"] for i in items])
    ms = lambda s: f"{s * 1000:.2f} ms"  # noqa: E731
    rows = [
        ("(a) create-file pytest item (JUnit time)", f"{item:.3f} s",
         f"bare claude -p {med(bare):.3f} s", f"{item / med(bare):.3f}x", "<= 1.10",
         item / med(bare) <= 1.10),
        ("(b) latency p50 replay / static", ms(med(replay_s)), ms(med(static_s)),
         f"+{ms(med(added))} (paired)", "<= 2 ms", med(added) <= 0.002),
        ("(b) latency p99 replay / static", ms(p99(replay_s)), ms(p99(static_s)),
         f"+{ms(p99(added))} (paired)", "", None),
        (f"(c) load 1,000 interactions ({load['mb']:.1f} MB)", f"{load['load']:.3f} s",
         f"yaml {load['loader']} {load['yaml']:.3f} s", f"{load['load'] / load['yaml']:.2f}x", "", None),
        ("(c) vcrpy deserialize, same file",
         f"{load['vcr']:.3f} s" if load["vcr"] else "-", str(load["vcr_note"]),
         f"{load['vcr'] / load['yaml']:.2f}x yaml" if load["vcr"] else "-", "", None),
    ]
    head = ("measurement", "figure", "baseline", "result", "target", "ok")
    table = [head] + [(*r[:5], "" if r[5] is None else ("yes" if r[5] else "NO")) for r in rows]
    widths = [max(len(str(r[c])) for r in table) for c in range(6)]
    for r in table:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip())
    run_spec_s, claude_s = med([i["run_spec"] for i in items]), med([i["claude"] for i in items])
    print(f"\nwhere the (a) item time goes (medians over {args.runs} runs):")
    print(f"  claude process in the harness {claude_s:.3f} s (bare: {med(bare):.3f} s, "
          f"difference {claude_s - med(bare):+.3f} s)")
    print(f"  run_spec outside claude       {run_spec_s - claude_s:.3f} s "
          f"(workspace copy, cassette load, `claude --version` check, gateway, checks)")
    print(f"  pytest item outside run_spec  {item - run_spec_s:.3f} s")
    print(f"  whole pytest process          {med([i['process'] for i in items]):.3f} s "
          f"(interpreter, plugin and collection included; not in the ratio)")
    started = time.perf_counter()
    claude_version(claude_bin)
    print(f"  of which `claude --version`   {time.perf_counter() - started:.3f} s (one call, timed here)")


if __name__ == "__main__":
    main()
