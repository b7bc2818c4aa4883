"""The OpenTelemetry format (`--atom-otel URL`): a session sent to a collector as one trace.

A real OTLP/HTTP receiver on 127.0.0.1 takes what the exporter posts and decodes it with the
OTLP protobuf messages (`opentelemetry-proto`). One session under xdist replays the shipped
create_file fixture and runs a scripted spec whose agent prints a `pass_env:` secret; the
receiver sees one trace: the session, each spec, its attempt, its Claude Code sessions and
their model and tool calls, with the GenAI conventions' tokens as the run's transcripts give
them, and no byte of the secret.
"""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

# The exporter's own protobuf modules, loaded here once: pytester's in-process runs drop the
# modules first imported inside them, and protobuf refuses to load a message type twice.
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter  # noqa: F401
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from pytest_atom.reports.format import SessionEnd
from pytest_atom.reports.otel import OTEL, spec_spans
from pytest_atom.results.thresholds import RepeatGates
from pytest_atom.settings.options import BY_NAME, RunSettings
from pytest_atom.settings.parsers import OTEL_MODULES
from tests.helpers import REPO, bash
from tests.html_helpers import assistant, result_for, tool_result

NAME = "ATOM_T_OTEL_TOKEN"
SECRET = "Otl9-Sekr1t-w3Q8z2Y6k4R1n7M5b0X"
LEAKY = f"""\
name: leaky
prompt: Save the token in token.txt.
script: scripts/leaky.yaml
attempts: 1
timeout: 120
pass_env: [{NAME}]
accept:
  - file_exists: token.txt
"""


@dataclass
class Receiver:
    """An OTLP/HTTP collector's traces endpoint: every request it took, decoded."""

    url: str
    #: The HTTP status it answers with.
    status: int = 200
    paths: list[str] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)

    def spans(self) -> list[Span]:
        found = []
        for body in self.bodies:
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    found.extend(scope.spans)
        return found


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    taken = Receiver("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            taken.paths.append(self.path)
            taken.bodies.append(body)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(taken.status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    taken.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield taken
    server.shutdown()
    server.server_close()


def _project(root: Path) -> Path:
    """The shipped create_file fixture (replayed from its cassette) and the leaky spec."""
    specs = root / "specs"
    (specs / "scripts").mkdir(parents=True)
    (specs / "cassettes").mkdir()
    fixtures = REPO / "fixtures" / "specs"
    shutil.copy(fixtures / "create_file.atom.yaml", specs)
    shutil.copy(fixtures / "scripts" / "create_file.yaml", specs / "scripts")
    shutil.copytree(fixtures / "cassettes" / "create_file", specs / "cassettes" / "create_file")
    turns = [
        bash(f"printf '%s\\n' ${NAME} > token.txt; echo {SECRET}", f"The token is {SECRET}."),
        {"text": f"Saved {SECRET}.\n\nEXIT_LOOP_NOW"},
    ]
    (specs / "scripts" / "leaky.yaml").write_text(yaml.safe_dump({"turns": turns}))
    (specs / "leaky.atom.yaml").write_text(LEAKY)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


def _attributes(span: Span) -> dict[str, Any]:
    return {a.key: _value(a.value) for a in span.attributes}


def _children(spans: list[Span], parent: Span) -> list[Span]:
    return [s for s in spans if s.parent_span_id == parent.span_id]


def _transcript_usage(reports: Path, spec: str) -> list[dict[str, Any]]:
    """The usage each session's result event reported, from the transcripts the JSON trace
    format wrote (the run's own stream-json, scrubbed), in the order the sessions ran."""
    found = []
    for path in sorted((reports / spec).glob("*.transcripts/a01-executor-*.jsonl")):
        lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        found.append(next(line for line in lines if line.get("type") == "result")["usage"])
    return found


@pytest.mark.slow
@pytest.mark.usefixtures("claude_for_pytester")
def test_a_session_under_xdist_is_one_trace_of_specs_attempts_sessions_and_calls(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, receiver: Receiver
) -> None:
    monkeypatch.setenv(NAME, SECRET)
    project = _project(pytester.path / "project")
    monkeypatch.chdir(project)

    result = pytester.runpytest(
        "--atom",
        "specs",
        "-p",
        "no:cacheprovider",
        "-n",
        "2",
        "--atom-runs-dir=runs",
        "--atom-report=reports",
        f"--atom-otel={receiver.url}",
    )
    result.assert_outcomes(passed=2)

    assert set(receiver.paths) == {"/v1/traces"}  # the standard path, added to a bare URL
    assert not any(SECRET[:8] in body.decode("latin-1") for body in receiver.bodies)
    spans = receiver.spans()
    assert len({s.trace_id for s in spans}) == 1  # one trace: the session
    (root,) = [s for s in spans if not s.parent_span_id]
    assert root.name == "pytest-atom session"
    assert _attributes(root)["atom.specs"] == 2
    assert _attributes(root)["atom.outcome.passed"] == 2
    specs = {_attributes(s)["atom.spec"]: s for s in _children(spans, root)}
    assert sorted(specs) == ["create-file", "leaky"]

    create = specs["create-file"]
    facts = _attributes(create)
    assert create.name == "spec create-file" and facts["atom.outcome"] == "passed"
    assert facts["atom.node_id"].endswith("create_file.atom.yaml::create-file")
    assert facts["atom.source"] == "replay"
    assert create.status.code != Status.STATUS_CODE_ERROR
    (attempt,) = _children(spans, create)
    assert attempt.name == "attempt 1"
    assert _attributes(attempt)["atom.decision"] == "proceed"
    sessions = _children(spans, attempt)
    assert [s.name for s in sessions] == ["invoke_agent executor", "invoke_agent reflector"]
    # Every span lies within its parent's time, and siblings follow one another.
    for parent in (root, create, attempt, *sessions):
        kids = _children(spans, parent)
        for kid in kids:
            assert parent.start_time_unix_nano <= kid.start_time_unix_nano
            assert kid.end_time_unix_nano <= parent.end_time_unix_nano
    assert sessions[0].end_time_unix_nano <= sessions[1].start_time_unix_nano
    # The replay took the reflector's recorded verdict: no session ran, its figures recorded.
    recalled = _attributes(sessions[1])
    assert recalled["atom.recalled"] is True and recalled["atom.tokens"] > 0
    assert sessions[1].start_time_unix_nano == sessions[1].end_time_unix_nano

    executor = sessions[0]
    agent = _attributes(executor)
    assert agent["gen_ai.operation.name"] == "invoke_agent"
    assert agent["gen_ai.provider.name"] == "anthropic"
    assert agent["gen_ai.agent.name"] == "executor"
    (usage,) = _transcript_usage(project / "reports", "create_file")
    cached = usage.get("cache_read_input_tokens", 0) + usage.get("cache_creation_input_tokens", 0)
    assert agent["gen_ai.usage.input_tokens"] == usage["input_tokens"] + cached
    assert agent["gen_ai.usage.output_tokens"] == usage["output_tokens"]
    assert (
        agent["gen_ai.request.model"]
        == _attributes(_children(spans, executor)[0])["gen_ai.request.model"]
    )

    calls = _children(spans, executor)
    # The script's three answers, its two Bash calls between them.
    assert [c.name.split(" ")[0] for c in calls] == [
        "chat",
        "execute_tool",
        "chat",
        "execute_tool",
        "chat",
    ]
    chats = [_attributes(c) for c in calls if c.name.startswith("chat")]
    assert all(c["gen_ai.operation.name"] == "chat" for c in chats)
    assert all(c["gen_ai.response.id"] for c in chats)
    # Each answer's input tokens, as it started: together the session's.
    assert sum(c["gen_ai.usage.input_tokens"] for c in chats) == agent["gen_ai.usage.input_tokens"]
    tool = _attributes(calls[1])
    assert calls[1].name == "execute_tool Bash"
    assert tool["gen_ai.tool.name"] == "Bash" and tool["gen_ai.tool.call.id"]
    assert "hello.txt" in tool["gen_ai.tool.call.arguments"]

    # The leaky spec's secret is in its tool call, its output and the agent's text: each
    # attribute shows the placeholder instead.
    (leaky_attempt,) = _children(spans, specs["leaky"])
    (leaky_session,) = _children(spans, leaky_attempt)
    leaked_call = _attributes(_children(spans, leaky_session)[1])
    assert f"<SECRET:{NAME}>" in leaked_call["gen_ai.tool.call.arguments"]
    assert f"<SECRET:{NAME}>" in leaked_call["gen_ai.tool.call.result"]


def test_the_option_sends_to_the_standard_traces_path_of_a_bare_collector_url() -> None:
    option = BY_NAME["otel"]
    assert option.parse("http://localhost:4318") == "http://localhost:4318/v1/traces"
    assert option.parse("https://otel.example/") == "https://otel.example/v1/traces"
    assert option.parse("http://c:4318/custom/traces") == "http://c:4318/custom/traces"
    with pytest.raises(ValueError, match=r"OTLP/HTTP collector's URL"):
        option.parse("localhost:4318")


def test_without_the_extra_the_option_names_the_install_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A module set to None in `sys.modules` is one Python's import system will not load:
    the machine as it is without the ``otel`` extra."""
    for module in OTEL_MODULES:
        monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(ValueError, match=r"pip install 'pytest-atom\[otel\]'"):
        BY_NAME["otel"].parse("http://localhost:4318")


def test_a_session_without_the_option_loads_no_opentelemetry_sdk(tmp_path: Path) -> None:
    """The format does nothing without ``--atom-otel``: a session that runs no spec with it
    imports none of the SDK."""
    code = (
        "import sys\n"
        "from pytest_atom.reports.format import report_formats\n"
        "from pytest_atom.settings.options import RunSettings\n"
        "[otel] = [f for f in report_formats() if f.name == 'otel']\n"
        "assert otel.view(None, repeat=None, settings=RunSettings()) is None\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry.sdk')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert done.stdout.strip() == "[]"


SPAN = {"name": "spec s", "start": 0.0, "end": 1.0, "attributes": {}, "error": None, "children": []}


def _end(url: str, views: dict[str, Any] | None = None) -> SessionEnd:
    settings = RunSettings(otel=BY_NAME["otel"].parse(url))
    return SessionEnd(settings, Path.cwd(), [], views or {}, {}, RepeatGates(None, None))


def test_the_session_end_joins_each_run_under_one_root_at_its_own_time(
    receiver: Receiver, tmp_path: Path
) -> None:
    result = result_for(tmp_path, assistant("m1", {"type": "text", "text": "EXIT_LOOP_NOW"}))
    ended = 1_700_000_000.0
    views = {"otel": {"specs/demo.atom.yaml::demo": {"ended": ended, "spans": spec_spans(result)}}}
    assert OTEL.finish(_end(receiver.url, views)) == []
    spans = receiver.spans()
    (root,) = [s for s in spans if not s.parent_span_id]
    (spec,) = _children(spans, root)
    assert root.name == "pytest-atom session" and spec.name == "spec demo"
    assert _attributes(spec)["atom.node_id"] == "specs/demo.atom.yaml::demo"
    assert spec.end_time_unix_nano == root.end_time_unix_nano == round(ended * 1e9)
    assert {s.trace_id for s in spans} == {root.trace_id}


def test_a_session_whose_runs_carry_no_spans_sends_nothing(receiver: Receiver) -> None:
    """`atom results combine`: a shard's results file carries no spans."""
    assert OTEL.finish(_end(receiver.url)) == []
    assert receiver.bodies == []


def test_a_collector_that_refuses_the_trace_is_a_line_not_a_failed_run(
    receiver: Receiver, capsys: pytest.CaptureFixture[str]
) -> None:
    receiver.status = 400  # not retried: the exporter gives up at once
    assert OTEL.finish(_end(receiver.url, {"otel": {"n": {"ended": 1.0, "spans": SPAN}}})) == []
    assert receiver.paths == ["/v1/traces"]
    assert f"collector at {receiver.url}/v1/traces did not take" in capsys.readouterr().err


def test_a_failed_tool_call_and_a_failed_check_are_errors_where_they_happened(
    tmp_path: Path,
) -> None:
    """A run built from stream-json lines shaped like the CLI's: a subagent's answer, a Bash
    call that failed, a failed check. A secret the call's input assigned is scrubbed from
    every span, and a long result is clipped only after."""
    key = "sk-ant-api03-" + "aB3dE5fG7h" * 9
    long_output = "x" * 6000 + f"\nthe key: {key}"
    result = result_for(
        tmp_path,
        assistant(
            "m1",
            {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": f"K={key} ls"}},
        ),
        tool_result("t1", long_output, is_error=True),
        assistant("m2", {"type": "text", "text": "Asking a helper."}, parent="a1"),
        assistant("m3", {"type": "text", "text": "Done. EXIT_LOOP_NOW"}),
        check_passed=False,
    )
    spec = spec_spans(result)
    assert spec["error"] and spec["attributes"]["atom.outcome"] == "failed"
    (attempt,) = spec["children"]
    assert attempt["error"] == "file_exists hello.txt"
    (session,) = attempt["children"]
    names = [call["name"] for call in session["children"]]
    assert names == ["chat", "execute_tool Bash", "chat", "chat"]
    tool = session["children"][1]
    assert tool["error"] is not None and "[... " in tool["error"]  # clipped
    assert "[... " in tool["attributes"]["gen_ai.tool.call.result"]
    assert session["children"][2]["attributes"]["atom.subagent"] == "a1"
    assert key[:20] not in json.dumps(spec)
    assert "<SECRET:" in tool["attributes"]["gen_ai.tool.call.arguments"]
