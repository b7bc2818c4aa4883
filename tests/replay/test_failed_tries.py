"""Every try is paid for: a recording whose CLI call failed twice and was retried reports the
cost of all three tries, the same in JUnit, the summary, the trace and the HTML report."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from pytest_atom.legacy import AtomRuntime
from pytest_atom.reports.html import render_html, report_row, spec_view
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.summary import failed_tries_lines, summary_table
from pytest_atom.reports.trace import TRACE_SCHEMA, build_trace
from pytest_atom.results.record import IterationRecord
from pytest_atom.results.rows import SummaryRow
from pytest_atom.spec_loader.load import load_specs
from tests.helpers import record_through_upstream

KEY = "TRIES-TASK"


def _bash(command: str, **extra: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "Bash", "input": {"command": command}}], **extra}


#: Each ``rejected`` turn is refused (a 400 the CLI does not retry) the first time it is
#: asked: the first call fails after one billed answer, the retried call (``--resume``)
#: gets that turn, then fails on the next one, and the third call finishes (with a tool
#: call of its own, which the HTML report's transcript shows).
CONVERSATIONS: dict[str, list[dict[str, Any]]] = {
    KEY: [
        _bash("echo one > one.txt"),
        _bash("echo two > two.txt", fault="rejected"),
        _bash("echo three > three.txt", fault="rejected"),
        {"text": "The files are written.\nEXIT_LOOP_NOW"},
    ],
}
SPEC = f"""\
name: tries
prompt: "{KEY}: write one.txt, two.txt and three.txt."
timeout: 180
claude:
  allowed_tools: [Bash]
accept:
  - file_exists: one.txt
  - file_exists: two.txt
  - file_exists: three.txt
"""


class _Tries:
    """Answers each call with the next record: the runtime's retry loop, without a CLI."""

    def __init__(self, *records: IterationRecord) -> None:
        self.records = list(records)

    def run(self, prompt: str, conversation_dir: Path, **_: Any) -> IterationRecord:
        return self.records.pop(0)


def _try(code: int, tokens: int, usd: float, text: str = "network error") -> IterationRecord:
    usage = {"input_tokens": tokens}
    return IterationRecord(code, output=text, usage=usage, cost_usd=usd)


def test_the_record_of_a_retried_call_carries_its_failed_tries(tmp_path: Path) -> None:
    first, second, last = _try(1, 100, 0.1), _try(1, 200, 0.2), _try(0, 300, 0.3, "EXIT_LOOP_NOW")
    runtime = AtomRuntime(
        "{max_iterations}",
        tmp_path,
        runner=_Tries(first, second, last),
        max_retries=2,
        sleep=lambda seconds: None,
        verbose=False,
    )
    assert runtime.execute("task").success
    [record] = runtime.records
    assert record is last and record.failed_tries == [first, second]
    assert (record.tries_tokens, record.paid_tokens) == (300, 600)
    assert record.paid_cost_usd == pytest.approx(0.6)
    digest = record.summary()["failed_tries"]
    assert [(t["returncode"], t["tokens"], t["error"]) for t in digest] == [
        (1, 100, "network error"),
        (1, 200, "network error"),
    ]


@pytest.mark.slow
def test_a_recording_reports_the_cost_of_its_failed_tries(tmp_path: Path, claude_bin: Path) -> None:
    (tmp_path / "tries.atom.yaml").write_text(SPEC, encoding="utf-8")
    [spec] = load_specs(tmp_path / "tries.atom.yaml")
    result, upstream = record_through_upstream(spec, CONVERSATIONS, claude_bin)
    # The recording itself is refused (an upstream error no retry of the CLI's got past:
    # the cassette is kept as it was); what it cost is what this test is about.
    assert result.final.outcome.success, _debug(result)

    [record] = result.final.records
    assert [t.returncode for t in record.failed_tries] == [1, 1]
    tries = record.failed_tries
    assert all(t.tokens > 0 and t.cost_usd > 0 for t in tries), "each failed try was billed"
    executor_tokens = record.tokens + sum(t.tokens for t in tries)
    executor_usd = record.cost_usd + sum(t.cost_usd for t in tries)
    # what the upstream streamed for the agent's conversation, every try's
    assert executor_tokens == upstream.tokens_sent(KEY)

    props = result_properties(result)
    assert not result.final.reflectors  # no criteria: the agent's calls are all it cost
    assert props["atom_tokens"] == executor_tokens
    assert props["atom_failed_tries"] == 2
    assert props["atom_failed_tries_tokens"] == sum(t.tokens for t in tries)
    assert props["atom_failed_tries_cost_usd"] == pytest.approx(
        sum(t.cost_usd for t in tries), abs=1e-6
    )
    assert props["atom_cost_usd"] == pytest.approx(executor_usd, abs=1e-6)
    assert props["atom_executor_tokens"] + props["atom_subagents_tokens"] == executor_tokens

    # the summary's tokens column: the agent's own, every try's
    row = SummaryRow.of("tries.atom.yaml::tries", props)
    _, line = summary_table([row])
    assert f" {executor_tokens} " in line
    [note] = failed_tries_lines([row])
    assert (
        f"2 CLI calls failed and were retried (tries.atom.yaml::tries): {props['atom_failed_tries_tokens']} tokens"
        in note
    )

    # the trace: the attempt's cost, and each iteration's failed tries
    trace = build_trace(result)
    Draft202012Validator(TRACE_SCHEMA).validate(trace)
    [attempt] = trace["children"]
    assert attempt["cost"]["tokens"] == props["atom_tokens"]
    assert attempt["cost"]["failed_tries"]["count"] == 2
    assert attempt["cost"]["failed_tries"]["tokens"] == props["atom_failed_tries_tokens"]
    assert trace["cost"]["usd"] == pytest.approx(props["atom_cost_usd"], abs=1e-6)

    # the HTML report's header and row
    page = render_html([report_row("tries.atom.yaml::tries", "error", spec_view(result))])
    assert f"{props['atom_tokens']:,} tokens" in page
    assert "on 2 failed tries" in page
    tokens = f"{props['atom_failed_tries_tokens']:,}"
    assert f"2 CLI calls failed and were retried: {tokens} tokens" in page


def _debug(result: Any) -> str:
    lines = [
        f"decision={result.decision} outcome={result.outcome} faults={result.upstream_faults} herr={result.harness_error}"
    ]
    for r in result.final.records:
        for t in [*r.failed_tries, r]:
            lines.append(
                f"rc={t.returncode} tokens={t.tokens} usd={t.cost_usd} out={t.output[:200]!r}"
            )
    lines.append(str([c.summary for c in result.final.checks]))
    return "\n".join(lines)
