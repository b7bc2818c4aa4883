"""The OpenTelemetry format: each pytest session sent to a collector as one OTLP trace.

With ``--atom-otel URL`` (the ``otel`` extra: ``opentelemetry-sdk`` and its OTLP/HTTP
exporter) the session's end sends one trace; without it this format does nothing. Its tree::

    pytest-atom session                      one per session, every spec run below it
      spec <name>                            atom.spec, atom.outcome, atom.cost_usd, ...
        [step <id>]                          a multi-step spec's steps
          attempt <n>                        atom.attempt, atom.decision, atom.score
            invoke_agent <role>              one Claude Code session: executor, reflector,
                                             planner; its exact tokens and cost (a
                                             session a replay recalled: atom.recalled)
              chat <model>                   each model answer, in the order they came
              execute_tool <tool>            each tool call, with its arguments and result

Model and agent spans carry the OpenTelemetry GenAI conventions' attributes (input tokens
with the cache's counted in, as the conventions ask of Anthropic), pytest-atom's own
figures ``atom.*``. Claude Code's stream gives an answer's output tokens only in the
session's total: a ``chat`` span carries input tokens, its ``invoke_agent`` span the
session's exact tokens and cost.

Times: results say how long each session took, not when each call happened: sessions follow
one another up to when the view was built, and a session's calls share its time equally.

Two steps, as the HTML page's: `spec_spans` builds one run's tree where the spec ran
(`view`); `finish` joins every run's tree under the session's root, so under xdist the
session is still one trace.
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from importlib import metadata
from typing import TYPE_CHECKING, Any

from pytest_atom.cost.billing import Tokens
from pytest_atom.events import MessageUsage, ToolCall, ToolResult
from pytest_atom.paths import display_path
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.reports.format import ReportFormat, SessionEnd, Written
from pytest_atom.results.record import IterationRecord, Recalled
from pytest_atom.results.spec_result import Attempt, SpecResult, StepResult
from pytest_atom.words import Scrubbed, clip

if TYPE_CHECKING:
    from pytest_atom.settings.options import RunSettings

#: A span as data: name, start and end (seconds), attributes, error (None: ok), children.
Span = dict[str, Any]

#: A text attribute longer than this is clipped to its head and tail.
TEXT_LIMIT = 4000
PROVIDER = "anthropic"
SERVICE = "pytest-atom"


def spec_spans(result: SpecResult, *, repeat: int | None = None) -> Span:
    """The run's span tree, its times in seconds from the spec's start; its texts scrubbed
    (the run's transcripts as context), then clipped (`TEXT_LIMIT`)."""
    clock = _Clock()
    children = [_session(clock, "planner", 1, p.record) for p in result.plans if p.record]
    children += [_recalled(clock, p.recalled) for p in result.plans if p.recalled]
    if result.steps:
        children += [_step(clock, step) for step in result.all_steps]
    else:
        children += [_attempt(clock, attempt, None) for attempt in result.attempts]
    spec = result.spec
    attributes = {
        "atom.spec": spec.name,
        "atom.spec.path": display_path(spec.path),
        "atom.run_dir": display_path(result.run_dir),
        "atom.outcome": result.outcome.label,
        "atom.repeat": repeat,
        "atom.source": result.source,
        "atom.score": result.score,
        "atom.attempts": len(result.all_attempts),
        "atom.tokens": result.tokens,
        "atom.cost_usd": result.cost_usd,
        "atom.duration_s": result.duration,
    }
    for role, used in result.usage_by_role().items():
        if used.tokens:
            attributes[f"atom.usage.{role}.tokens"] = used.tokens
            attributes[f"atom.usage.{role}.cost_usd"] = round(used.cost_usd, 6)
    tree = _span(
        f"spec {spec.name}",
        0.0,
        max(result.duration, clock.now),
        attributes,
        None if result.outcome.ok else result.reason or result.outcome.label,
        children,
    )
    scrubbed: Span = Scrubber().scrub_obj([tree, *(r.stdout for r in result.records)])[0]
    return _clipped(scrubbed, f"the run folder {display_path(result.run_dir)} holds it whole")


class _Clock:
    """Where the next session starts, in seconds from the spec's start."""

    def __init__(self) -> None:
        self.now = 0.0

    def take(self, seconds: float) -> tuple[float, float]:
        start, self.now = self.now, self.now + max(seconds, 0.0)
        return start, self.now


def _step(clock: _Clock, step: StepResult) -> Span:
    start = clock.now
    children = [_attempt(clock, attempt, step.id) for attempt in step.attempts]
    return _span(
        f"step {step.id}",
        start,
        clock.now,
        {"atom.step": step.id, "atom.step.runs": step.runs},
        None if step.passed else "the step did not pass",
        children,
    )


def _attempt(clock: _Clock, attempt: Attempt, step: str | None) -> Span:
    start = clock.now
    roles = [("executor", n, r) for n, r in enumerate(attempt.records, 1)]
    roles += [("reflector", n, r) for n, r in enumerate(attempt.reflectors, 1)]
    children = [_session(clock, role, n, record) for role, n, record in roles]
    children += [_recalled(clock, recalled) for recalled in attempt.recalled]
    failed_checks = [c.check.describe() for c in attempt.checks if not c.passed]
    attributes = {
        "atom.attempt": attempt.number,
        "atom.step": step,
        "atom.decision": attempt.decision,
        "atom.score": attempt.verdict.score if attempt.verdict else None,
        "atom.checks": len(attempt.checks),
        "atom.checks.failed": len(failed_checks),
        "atom.recalled": len(attempt.recalled),
    }
    error = None
    if attempt.decision == "fail":
        error = "; ".join(failed_checks) or "the attempt failed"
    name = f"attempt {attempt.number}"
    return _span(name, start, clock.now, attributes, error, children)


def _session(clock: _Clock, role: str, number: int, record: IterationRecord) -> Span:
    start, end = clock.take(record.duration)
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": PROVIDER,
        "gen_ai.agent.name": role,
        "gen_ai.request.model": record.model,
        "gen_ai.conversation.id": record.session_id,
        **_usage(record.usage, output=True),
        "gen_ai.response.finish_reasons": [record.stop_reason] if record.stop_reason else None,
        "atom.role": role,
        "atom.iteration": number,
        "atom.turns": record.num_turns,
        "atom.tokens": record.paid_tokens,
        "atom.subagent_tokens": record.subagent_tokens,
        "atom.cost_usd": record.paid_cost_usd,
        "atom.agent_version": record.cli_version,
    }
    # Whole: cut only once scrubbed (`_clipped`), so no cut splits a secret.
    said = (record.output or record.stderr).strip() or f"exit code {record.returncode}"
    error = said if record.is_error else None
    calls = list(_calls(record))
    slice_ = (end - start) / len(calls) if calls else 0.0
    children = [
        _span(name, start + n * slice_, start + (n + 1) * slice_, attrs, err, [])
        for n, (name, attrs, err) in enumerate(calls)
    ]
    return _span(f"invoke_agent {role}", start, end, attributes, error, children)


def _recalled(clock: _Clock, recalled: Recalled) -> Span:
    """A session a replay recalled: no time, its recorded tokens and cost."""
    role, _, vote = recalled.role.partition(":")  # ``reflector:2``: the second vote's
    attributes = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": PROVIDER,
        "gen_ai.agent.name": role,
        "atom.role": role,
        "atom.iteration": int(vote) if vote.isdigit() else None,
        "atom.recalled": True,
        "atom.tokens": recalled.tokens,
        "atom.cost_usd": recalled.cost_usd,
    }
    return _span(f"invoke_agent {role}", clock.now, clock.now, attributes, None, [])


def _calls(record: IterationRecord) -> Iterator[tuple[str, dict[str, Any], str | None]]:
    answered = {e.tool_use_id: e for e in record.events if isinstance(e, ToolResult)}
    seen: set[str] = set()
    for event in record.events:
        if isinstance(event, MessageUsage) and event.message_id not in seen:
            seen.add(event.message_id)
            # The session's model is what was asked for; the answer names what answered.
            model = record.model or event.model
            yield (
                f"chat {model}" if model else "chat",
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": PROVIDER,
                    "gen_ai.request.model": model,
                    "gen_ai.response.model": event.model,
                    "gen_ai.response.id": event.message_id,
                    **_usage(event.usage, output=False),
                    "atom.subagent": event.subagent,
                },
                None,
            )
        elif isinstance(event, ToolCall):
            result = answered.get(event.id)
            failed = result is not None and result.is_error
            yield (
                f"execute_tool {event.name}",
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": event.name,
                    "gen_ai.tool.call.id": event.id,
                    "gen_ai.tool.call.arguments": json.dumps(event.input, ensure_ascii=False),
                    "gen_ai.tool.call.result": result.text if result else None,
                    "atom.subagent": event.subagent,
                    "atom.server_tool": event.server or None,
                },
                (result.text or "the tool failed") if failed and result else None,
            )


def _usage(usage: Mapping[str, Any], *, output: bool) -> dict[str, int]:
    tokens = Tokens.of(usage)
    counts = {
        "gen_ai.usage.input_tokens": tokens.input + tokens.cache_read + tokens.cache_write,
        "gen_ai.usage.cache_read.input_tokens": tokens.cache_read,
        "gen_ai.usage.cache_creation.input_tokens": tokens.cache_write,
    }
    if output:
        counts["gen_ai.usage.output_tokens"] = tokens.output
    return counts


def _span(
    name: str,
    start: float,
    end: float,
    attributes: Mapping[str, Any],
    error: str | None,
    children: list[Span],
) -> Span:
    return {
        "name": name,
        "start": start,
        "end": end,
        "attributes": {k: v for k, v in attributes.items() if v is not None},
        "error": error or None,
        "children": children,
    }


def _clipped(span: Span, whole: str) -> Span:

    def cut(value: Any) -> Any:
        return clip(Scrubbed(value), TEXT_LIMIT, whole) if isinstance(value, str) else value

    return {
        **span,
        "attributes": {k: cut(v) for k, v in span["attributes"].items()},
        "error": cut(span["error"]),
        "children": [_clipped(child, whole) for child in span["children"]],
    }


def session_spans(end: SessionEnd, runs: Mapping[str, Mapping[str, Any]]) -> Span:
    """The session's root span over every run's tree; times in seconds since the epoch."""
    children = []
    for nodeid, run in runs.items():
        spec: Span = run["spans"]
        named = {**spec, "attributes": {**spec["attributes"], "atom.node_id": nodeid}}
        children.append(_shifted(named, run["ended"] - spec["end"]))
    outcomes = Counter(row.outcome.label for row in end.rows)
    attributes = {
        "atom.specs": len(end.rows),
        "atom.tokens": sum(row.tokens or 0 for row in end.rows),
        "atom.cost_usd": round(sum(row.cost_usd for row in end.rows), 6),
        "atom.seed": end.settings.seed,
        **{f"atom.outcome.{label}": count for label, count in sorted(outcomes.items())},
        "atom.harness_failures": len(end.failures) or None,
    }
    now = time.time()
    start = min((c["start"] for c in children), default=now)
    stop = max((c["end"] for c in children), default=now)
    failed = [row.nodeid for row in end.rows if not row.outcome.ok] + list(end.failures)
    error = f"{len(failed)} spec run(s) failed" if failed else None
    root = _span("pytest-atom session", start, stop, attributes, error, children)
    scrubbed: Span = Scrubber().scrub_obj(root)
    return scrubbed


def _shifted(span: Span, offset: float) -> Span:
    return {
        **span,
        "start": span["start"] + offset,
        "end": span["end"] + offset,
        "children": [_shifted(child, offset) for child in span["children"]],
    }


def export(root: Span, url: str) -> bool:
    """Send the tree `root` (times in seconds since the epoch) to the collector at `url`
    as one trace; False when the collector refused it or could not be reached."""
    from opentelemetry import trace
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    version = metadata.version("pytest-atom")
    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": SERVICE, "service.version": version})
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("pytest_atom", version)

    def emit(span: Span, parent: Any) -> None:
        made = tracer.start_span(
            span["name"],
            context=parent,
            attributes=span["attributes"],
            start_time=_ns(span["start"]),
        )
        if span["error"]:
            made.set_status(trace.Status(trace.StatusCode.ERROR, span["error"]))
        for child in span["children"]:
            emit(child, trace.set_span_in_context(made))
        made.end(end_time=_ns(span["end"]))

    emit(root, None)
    spans = memory.get_finished_spans()
    exporter = OTLPSpanExporter(endpoint=url)
    try:
        sent = exporter.export(spans)
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]  # the SDK leaves it untyped
        provider.shutdown()
    return sent is SpanExportResult.SUCCESS


def _ns(seconds: float) -> int:
    return round(seconds * 1e9)


class OtelExport(ReportFormat[Span]):
    """`render`: a run's span tree; `view`: it and when it ended; `finish`: sends the trace."""

    name = "otel"

    def render(self, result: SpecResult, *, repeat: int | None = None) -> Span:
        return spec_spans(result, repeat=repeat)

    def view(self, result: SpecResult, *, repeat: int | None, settings: RunSettings) -> Any:
        if settings.otel is None:
            return None
        return {"ended": time.time(), "spans": spec_spans(result, repeat=repeat)}

    def finish(self, end: SessionEnd) -> list[Written]:
        url, runs = end.settings.otel, end.views.get(self.name)
        if url is None or not runs:  # `atom results combine`'s shards carry no spans
            return []
        if not export(session_spans(end, runs), url):
            # A line, not a failed run: a telemetry collector down fails no test.
            print(
                f"\npytest-atom: the OpenTelemetry collector at {url} did not take the "
                "session's trace (it refused it, or could not be reached)",
                file=sys.stderr,
            )
        return []


#: The OpenTelemetry format, as the ``pytest_atom.report_formats`` entry point names it.
OTEL = OtelExport()
