"""Replay benchmarks: what replaying a cassette costs against not having a harness at all.

Run by hand (needs the pinned `claude`, see `atom setup`); nothing is written to the repo:

    /tmp/venv/bin/python benchmarks/replay.py [--runs 5] [--rounds 500]

One table; each figure is set against a baseline measured in the same run ("ok": target met).
(a) pytest item time of `pytest --atom fixtures/specs/create_file.atom.yaml` (the testcase
    `time` in its JUnit XML: what a user sees), median of --runs, divided by the median wall
    time of the same `claude -p` sessions run without the harness against a static server
    answering the recorded response bytes. The sessions (the executor; the reflector only
    with --atom-judge=rerun, as a replay recalls its verdict) are captured from a first,
    untimed pytest run through a logging ATOM_CLAUDE_BIN wrapper. Each runs with the
    harness's own argv (ClaudeRunner.command: not bare, sandboxed, its settings file and git
    marker made by its Confinement) in a run folder laid out as the harness lays one out,
    checked equal to the captured argv but for the run folder's path, so only the harness
    differs. Row (a) is measured with the default --atom-judge=recall and again with rerun.
(b) per-request latency, client side (httpx, one keep-alive connection), of a replaying
    `Gateway(CassetteResponder)` and of the static server over --rounds passes of the
    cassette's requests: p50/p99 of each and of the paired difference (= what the gateway
    adds). "one send": the static server writes headers and body at once, as a minimal
    server should; "two sends": apart, as the gateway's handler does, so that difference is
    the responder's own work. ~40 ms between them is Nagle's algorithm meeting delayed ACKs.
(c) a 1,000-interaction cassette (the fixture's interactions repeated): `Cassette.load`
    against `yaml.load(text, CSafeLoader)` of the same text, and vcrpy's `deserialize`.
(d) per replayed spec of fixtures/specs (--recall-specs), `claude -p` processes (a counting
    ATOM_CLAUDE_BIN wrapper that execs the real CLI) and CPU seconds of the whole pytest
    process and its children (getrusage RUSAGE_CHILDREN), --atom-judge=rerun (before recall)
    against the default recall (after), median of --recall-runs.
Below the table, where the time goes: the (a) recall item split into the claude processes,
run_spec outside them and the pytest item outside run_spec (JUnit's atom_* properties), the
item outside claude (the harness's share, target <= 0.150 s), the pytest process's own CPU
seconds (its threads, no child), then harness steps timed in-process, one at a time.
pytest runs with PYTHONDONTWRITEBYTECODE=1 (nothing written to the repo), so every run
compiles pytest-atom's modules from source: the session loads them before its first spec
(`Harness.load_machinery`), so that cost is the process's, not the item's. On a loaded
machine, wall figures drift: compare CPU seconds, or interleaved runs (--runs 5 or more).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import resource
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
from typing import Any
from urllib.parse import urlsplit

import httpx
import yaml

from pytest_atom.agents.claude_code.cli import claude_version, find_claude
from pytest_atom.agents.claude_code.runner import ClaudeRunner, claude_env
from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.checks.builtin import run_checks
from pytest_atom.environment import build_env
from pytest_atom.gateway import Gateway
from pytest_atom.judge.reflector import VERDICT_SCHEMA, read_only_options
from pytest_atom.prompts import PromptLoader
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.normalize import Normalizer, run_dates
from pytest_atom.replay.responder import CassetteResponder
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.run.execution import session_id_for
from pytest_atom.spec_loader.load import load_specs
from pytest_atom.wire.request import GatewayRequest
from pytest_atom.wire.roles import ROLE_HEADER

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


def pytest_item(
    tmp: Path,
    extra_env: dict[str, str] | None = None,
    *args: str,
    spec: Path = SPEC,
) -> dict[str, float]:
    """One `pytest --atom` of `spec`: the item's JUnit time, its atom_* properties, and the
    CPU seconds of the pytest process and every process it waited for (the CLI's)."""
    xml = tmp / "junit.xml"
    cmd = [sys.executable, "-c", SELF_CPU, "--atom", str(spec), "-p", "no:cacheprovider", "-q"]
    cmd += ["--junitxml", str(xml), "--atom-runs-dir", str(tmp / "runs"), *args]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(extra_env or {})}  # no __pycache__
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    case = ET.parse(xml).find(".//testcase") if xml.exists() else None
    # A failed or errored item exits non-zero; an expected failure (xfail) is a pass here.
    if proc.returncode or case is None or case.find("error") is not None:
        sys.exit(f"pytest run failed:\n{proc.stdout}\n{proc.stderr}")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    own = float(proc.stderr.rsplit(SELF_CPU_MARK, 1)[1].split()[0])
    run_spec, claude = float(props["atom_duration_s"]), float(props["atom_claude_s"])
    return {
        "item": float(case.get("time") or 0),
        "process": wall,
        "cpu": cpu,
        "run_spec": run_spec,
        "claude": claude,
        "own_cpu": own,
    }


SELF_CPU_MARK = "ATOM_BENCH_OWN_CPU"
#: `python -m pytest`, then the pytest process's own CPU seconds (all its threads, the
#: gateway's included; none of its children's: the CLI's are not the harness's).
SELF_CPU = f"""
import resource, sys, pytest
code = pytest.main(sys.argv[1:])
own = resource.getrusage(resource.RUSAGE_SELF)
print("{SELF_CPU_MARK}", own.ru_utime + own.ru_stime, file=sys.stderr)
sys.exit(int(code))
"""


WRAPPER = """#!{python}
import json, os, subprocess, sys
real, args = {real!r}, sys.argv[1:]
if "--version" in args:  # the harness's version check: not a session
    os.execv(real, [real, *args])
prompt = sys.stdin.read()
with open({log!r}, "a", encoding="utf-8") as log:
    log.write(json.dumps({{"argv": args, "stdin": prompt, "cwd": os.getcwd()}}) + "\\n")
sys.exit(subprocess.run([real, *args], input=prompt, text=True).returncode)
"""


def capture_sessions(tmp: Path, claude_bin: Path, *args: str) -> list[dict[str, object]]:
    """Every `claude` session one pytest run starts (argv, stdin, cwd), via a logging wrapper."""
    wrapper, log = tmp / "claude", tmp / "sessions.jsonl"
    wrapper.write_text(WRAPPER.format(python=sys.executable, real=str(claude_bin), log=str(log)))
    wrapper.chmod(0o755)
    pytest_item(tmp, {"ATOM_CLAUDE_BIN": str(wrapper)}, *args)
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


def harness_argv(spec: Any, run: Path, cwd: Path, claude_bin: Path, reflector: bool) -> list[str]:
    """The argv the harness gives a session in `cwd` of run folder `run` (after `claude`):
    ClaudeRunner.command with the harness's options and Confinement, which also writes the
    run's settings file and git marker, as run_spec's executor and reflector do."""
    if reflector:
        runner = ClaudeRunner(
            options=read_only_options(VERDICT_SCHEMA),
            model=spec.reflector.model or spec.model,
            claude_bin=claude_bin,
            confinement=Confinement(run, sandbox=None),
        )
        role = "reflector:1"
    else:
        runner = ClaudeRunner(
            options=spec.claude,
            model=spec.model,
            claude_bin=claude_bin,
            confinement=Confinement(run, spec.sandbox),
        )
        role = "executor"
    session = ["--session-id", session_id_for(spec, role)]
    return runner.command(session, cwd)[1:]


def without_harness(tmp: Path, cassette: Cassette, claude_bin: Path, sessions: list) -> list[float]:
    """Wall seconds of each captured session, in order, against the static server, with the
    harness's argv in a run folder laid out as the harness's (attempts/a01 of a fresh run)."""
    spec = load_specs(REPO / SPEC)[0]
    run, seconds = tmp / "run", []
    attempt = run / "attempts" / "a01"
    attempt.mkdir(parents=True)
    (attempt / "USER_PROMPT.md").write_text(spec.prompt, encoding="utf-8")
    server = StaticServer(cassette)
    env = claude_env(server.url, run / "claude-config")
    try:
        for session in sessions:
            reflector = "--json-schema" in session["argv"]
            argv = harness_argv(spec, run, attempt, claude_bin, reflector)
            captured_run = Path(str(session["cwd"])).parent.parent
            captured = [a.replace(str(captured_run), str(run)) for a in session["argv"]]
            if argv != captured:
                sys.exit(f"the baseline's argv is not the harness's:\n{argv}\n{captured}")
            started = time.perf_counter()
            run_args = dict(cwd=attempt, env=env, capture_output=True, text=True, timeout=300)
            proc = subprocess.run([str(claude_bin), *argv], input=session["stdin"], **run_args)
            seconds.append(time.perf_counter() - started)
            if proc.returncode:
                sys.exit(
                    f"claude without the harness failed:\n{proc.stdout[-2000:]}\n{proc.stderr}"
                )
    finally:
        server.close()
    if not (attempt / "hello.txt").exists():
        sys.exit("claude without the harness did not create hello.txt: the static answers are off")
    return seconds


COUNTER = """#!/bin/sh
case " $* " in *" -p "*) echo >> "{log}";; esac
exec "{real}" "$@"
"""


def recall_costs(
    specs: list[Path], claude_bin: Path, runs: int, root: Path
) -> list[tuple[str, list[int], list[float]]]:
    """Per spec: `claude -p` processes and CPU seconds of rerun (before) and recall (after)."""
    rows = []
    for spec in specs:
        counts: dict[str, list[int]] = {"rerun": [], "recall": []}
        cpu: dict[str, list[float]] = {"rerun": [], "recall": []}
        for _ in range(runs):
            for mode in ("rerun", "recall"):  # interleaved: machine drift hits both alike
                tmp = Path(tempfile.mkdtemp(dir=root))
                log, wrapper = tmp / "count.log", tmp / "claude"
                wrapper.write_text(COUNTER.format(log=log, real=claude_bin))
                wrapper.chmod(0o755)
                item = pytest_item(
                    tmp, {"ATOM_CLAUDE_BIN": str(wrapper)}, f"--atom-judge={mode}", spec=spec
                )
                counts[mode].append(len(log.read_text().splitlines()) if log.exists() else 0)
                cpu[mode].append(item["cpu"])
        rows.append(
            (
                spec.name.removesuffix(".atom.yaml"),
                [int(median(counts["rerun"])), int(median(counts["recall"]))],
                [median(cpu["rerun"]), median(cpu["recall"])],
            )
        )
    return rows


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
    """The cassette's requests as the CLI sent them, each with the role marker its session's
    CLI adds (wire.roles): the gateway matches a reflector's request only as the reflector's."""
    requests = []
    for i in cassette.interactions:
        path = urlsplit(i.uri)._replace(scheme="", netloc="").geturl()
        body = b"" if i.method == "HEAD" else json.dumps(i.body).encode()
        headers = {**i.request_headers, **({ROLE_HEADER: i.role} if i.role else {})}
        requests.append((i.method, path, headers, body))
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


def load_times(tmp: Path, cassette: Cassette, times: int = 5) -> dict[str, object]:
    items = cassette.interactions
    big = Cassette(
        tmp / "big.yaml", [items[i % len(items)] for i in range(1000)], cassette.metadata
    )
    path = big.save()
    text = path.read_text(encoding="utf-8")
    loader = getattr(yaml, "CSafeLoader", None)
    out: dict[str, object] = {
        "mb": path.stat().st_size / 1e6,
        "load": timed(lambda: Cassette.load(path), times),
        "loader": "CSafeLoader" if loader else "SafeLoader (CSafeLoader missing!)",
        "yaml": timed(lambda: yaml.load(text, Loader=loader or yaml.SafeLoader), times),
    }
    try:
        from vcr.serialize import deserialize
        from vcr.serializers import yamlserializer

        loaded = deserialize(text, yamlserializer)[0]  # (requests, responses[, metadata])
        out["vcr"] = timed(lambda: deserialize(text, yamlserializer), times)
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
            "accept checks": timed(
                lambda: run_checks(spec.accept, workspace, env=build_env(Path(tmp) / "home"))
            ),
            "respond() to a turn, no HTTP": timed(lambda: next(pool).respond(request), 50),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs",
        type=int,
        default=5,
        help="pytest and claude runs for (a) (0: no (a), and no claude without (d))",
    )
    parser.add_argument("--rounds", type=int, default=500, help="passes over the requests for (b)")
    parser.add_argument(
        "--recall-specs",
        nargs="*",
        type=Path,
        default=sorted((REPO / "fixtures/specs").glob("*.atom.yaml")),
        help="the specs of (d) (default: every shipped fixture; none: skip (d))",
    )
    parser.add_argument("--recall-runs", type=int, default=1, help="runs of each spec for (d)")
    parser.add_argument(
        "--loads", type=int, default=5, help="timed loads of (c); the median counts"
    )
    args = parser.parse_args()
    # (b) and (c) measure the gateway and the cassette alone: `--runs 0` without (d) starts
    # no claude at all (tests/test_benchmarks.py runs it so, in the fast suite).
    needs_claude = bool(args.runs or args.recall_specs)
    claude_bin, cassette = find_claude() if needs_claude else None, Cassette.load(CASSETTE)
    claude = f"claude {claude_version(claude_bin)} at {claude_bin}" if claude_bin else "no claude"
    print(
        f"{claude}; python {sys.version.split()[0]}; "
        f"{len(cassette.interactions)} recorded requests; --runs {args.runs} --rounds {args.rounds}"
    )
    modes = ("recall", "rerun") if args.runs else ()
    items: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    base: dict[str, list[list[float]]] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory(prefix="atom-bench-") as root:
        sessions = {  # also warms up
            m: capture_sessions(Path(tempfile.mkdtemp(dir=root)), claude_bin, f"--atom-judge={m}")
            for m in modes
            if claude_bin is not None
        }
        for _ in range(args.runs):  # interleaved, so drift in machine load hits all alike
            for m in modes:
                items[m].append(
                    pytest_item(Path(tempfile.mkdtemp(dir=root)), None, f"--atom-judge={m}")
                )
                assert claude_bin is not None
                base[m].append(
                    without_harness(
                        Path(tempfile.mkdtemp(dir=root)), cassette, claude_bin, sessions[m]
                    )
                )
        lat = latencies(Path(root), cassette, args.rounds)
        load = load_times(Path(root), cassette, args.loads)
        costs = (
            recall_costs(args.recall_specs, claude_bin, args.recall_runs, Path(root))
            if claude_bin is not None
            else []
        )
    ms = lambda s: f"{s * 1000:.2f} ms"  # noqa: E731
    yes = lambda ok: "yes" if ok else "NO"  # noqa: E731
    table = [("measurement", "figure", "baseline", "result", "target", "ok")]
    for m in modes:
        item, base_s = median([i["item"] for i in items[m]]), median([sum(b) for b in base[m]])
        baseline = f"claude alone, {len(sessions[m])} session(s) {base_s:.3f} s"
        ratio = item / base_s
        table.append((f"(a) create-file item, --atom-judge={m}", f"{item:.3f} s", baseline,
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
    print_table(table)
    if costs:
        print(f"\n(d) per replayed spec, median of {args.recall_runs}: before (--atom-judge=rerun) "
              "-> after (recall)")  # fmt: skip
        rows = [("spec", "claude -p", "CPU s (pytest + children)", "CPU saved")]
        for name, (n0, n1), (c0, c1) in costs:
            rows.append((name, f"{n0} -> {n1}", f"{c0:.2f} -> {c1:.2f}", f"{1 - c1 / c0:.0%}"))
        n0, n1 = sum(c[1][0] for c in costs), sum(c[1][1] for c in costs)
        c0, c1 = sum(c[2][0] for c in costs), sum(c[2][1] for c in costs)
        rows.append(("all", f"{n0} -> {n1}", f"{c0:.2f} -> {c1:.2f}", f"{1 - c1 / c0:.0%}"))
        print_table(rows)
    if claude_bin is not None and args.runs:
        where_the_time_goes(items["recall"], base["recall"], len(sessions["recall"]), args.runs)
        for name, seconds in harness_parts(cassette, claude_bin).items():
            print(f"    {name:<29} {seconds * 1000:7.1f} ms")
        item = median([i["item"] for i in items["recall"]])
        run_spec_s = median([i["run_spec"] for i in items["recall"]])
        print(f"  pytest item outside run_spec    {item - run_spec_s:.3f} s")
        outside = median([i["item"] - i["claude"] for i in items["recall"]])
        print(f"  item outside claude (harness)   {outside:.3f} s (target <= 0.150 s)")
        own = median([i["own_cpu"] for i in items["recall"]])
        print(
            f"  pytest process's own CPU        {own:.3f} s (start-up, collection, items; no child)"
        )
        process = median([i["process"] for i in items["recall"]])
        print(
            f"  (whole pytest process {process:.3f} s: interpreter, plugins, collection, not in item)"
        )


def where_the_time_goes(
    recall: list[dict[str, float]], base: list[list[float]], sessions: int, runs: int
) -> None:
    """The (a) recall item's time: the claude processes in the harness against alone, and
    run_spec's own time outside claude (its steps, in-process, follow)."""
    run_spec_s, claude_s = (
        median([i["run_spec"] for i in recall]),
        median([i["claude"] for i in recall]),
    )
    base_s = median([sum(b) for b in base])
    print(f"\nwhere the (a) recall item time goes (JUnit atom_* properties, median of {runs}):")
    per_session = " + ".join(f"{median([b[i] for b in base]):.3f}" for i in range(sessions))
    print(
        f"  claude processes in the harness {claude_s:.3f} s (alone: {per_session} s, "
        f"{claude_s - base_s:+.3f} s); argv checked equal to the harness's"
    )
    print(f"  run_spec outside claude         {run_spec_s - claude_s:.3f} s; its steps in-process:")


def print_table(table: list[tuple[str, ...]]) -> None:
    widths = [max(len(str(r[c])) for r in table) for c in range(len(table[0]))]
    for r in table:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


if __name__ == "__main__":
    main()
