"""Invocation traces of real spec runs: the real CLI, scripted executor and reflector.

The passing and the refine runs are shared scenarios (tests/judge_helpers.py), run once
per session and read by test_reflector.py too.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from pytest_atom.replay.staleness import spec_hash
from pytest_atom.reports.json_trace import write_report
from pytest_atom.reports.trace import TRACE_SCHEMA, build_trace
from pytest_atom.results.spec_result import SpecResult
from tests.helpers import VALIDATOR, verdict
from tests.judge_helpers import (
    CANARY,
    CRITERION,
    REFINE_VERDICTS,
    WRITE,
    kept,
    run,
)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def sessions(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for child in trace["children"] for s in child["sessions"]]


@pytest.fixture
def passing(passing_run: Path) -> SpecResult:
    return kept(passing_run, "passing")[0]


def test_the_schema_is_a_valid_draft_2020_12_schema() -> None:
    Draft202012Validator.check_schema(TRACE_SCHEMA)
    assert TRACE_SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert TRACE_SCHEMA["additionalProperties"] is False


@pytest.mark.slow
def test_a_passing_run_with_criteria(passing: SpecResult, passing_run: Path) -> None:
    trace = build_trace(passing)
    VALIDATOR.validate(trace)
    spec = passing.spec
    assert trace["atom_ref"] == f"spec:task.atom.yaml::task@{spec_hash(spec)}"
    assert trace["invocation_id"] == str(uuid.UUID(trace["invocation_id"]))
    assert build_trace(passing)["invocation_id"] == trace["invocation_id"]  # stable per run
    assert trace["implementation_kind"] == "claude_code"
    assert trace["state"] == "succeeded" and trace["errors"] == []
    assert trace["atom"]["outcome"] == {"label": "passed", "why": "score 0.9 (passes above 0.8)"}
    assert trace["output_shape"] == {"valid": True, "schema_ref": "reflector.verdict", "errors": []}
    assert trace["effective_limits"] == {
        "max_iterations": 3,
        "attempts": 3,
        "timeout_s": 120,
        "threshold": 0.8,
        "permission_mode": "acceptEdits",
        "allowed_tools": ["Bash", "Edit", "Read", "Write", "Grep", "Glob"],
        "max_turns": None,  # no limits: neither the spec nor the project set any
        "max_tool_calls": None,
        "max_tokens": None,
        "max_cost_usd": None,
        "timeout": 120,  # the spec's top-level timeout, folded into its limits
    }
    effects = trace["effects_observed"]
    usage = effects.pop("usage")
    assert effects == {
        "writes_files": True,
        "tool_calls": {"Bash": 2},  # the reflector's StructuredOutput is no effect
        "dispatches_runs": 2,
        "violations": [],
        "limit_exceeded": None,
    }
    # The agent's own usage: three assistant messages, two calls; the reflector's aside.
    executor = passing.final.records
    assert usage["turns"] == 3 and usage["tool_calls"] == 2
    assert usage["tokens"] == sum(r.tokens for r in executor) < passing.tokens
    cost = trace["cost"]
    assert cost["dispatched_runs"] == 2 and cost["tokens"] == passing.tokens > 0
    # Scripted: the CLI prices the usage, but no API was paid and nothing was recorded.
    assert sum(s["cost_usd"] for s in sessions(trace)) > 0
    assert cost["usd"] == passing.cost_usd == 0 and cost["recorded_usd"] == 0
    assert cost["wall_time_ms"] >= cost["claude_time_ms"] > 0

    [child] = trace["children"]
    assert child["atom_ref"] == trace["atom_ref"] + "#attempt-1"
    assert child["invocation_id"] != trace["invocation_id"]
    assert child["state"] == "succeeded" and child["decision"] == "proceed"
    assert child["iterations"] == 1 and child["completed"] and child["children"] == []
    canary = (passing_run / "canary.txt").read_text()
    assert child["verdict"] == _labelled(
        verdict(0.9, evidence=f"the agent printed {canary}")["verdict"]
    )
    assert child["checks"] == [
        {
            "kind": "file_exists",
            "describe": "file_exists done.txt",
            "passed": True,
            "summary": "done.txt exists",
            "evidence": passing.checks[0].evidence,
        }
    ]
    assert [s["role"] for s in child["sessions"]] == ["executor", "reflector"]
    assert child["sessions"][0]["session_id"] == passing.final.records[0].session_id
    assert child["cost"]["dispatched_runs"] == 2

    atom = trace["atom"]
    assert atom["passed"] and atom["decision"] == "proceed" and atom["score"] == 0.9
    assert atom["source"] == "scripted" and atom["run_dir"] == str(passing.run_dir)
    assert atom["spec"]["name"] == "task" and atom["spec"]["criteria"] == [CRITERION]
    assert atom["repeat"] is None and atom["claude_code_version"]


@pytest.mark.slow
def test_write_report_writes_the_trace_and_every_transcript(
    passing: SpecResult, tmp_path: Path
) -> None:
    path = write_report(passing, tmp_path / "reports")
    assert path == tmp_path / "reports" / "task" / "task.json"
    trace = json.loads(path.read_text())
    VALIDATOR.validate(trace)
    assert trace["state"] == "succeeded"
    for session in sessions(trace):
        transcript = path.parent / session["transcript"]
        events = lines(transcript)
        assert events[0]["type"] == "system" and events[-1]["type"] == "result"
        assert events[-1]["session_id"] == session["session_id"]
    assert sorted(p.name for p in (path.parent / "task.transcripts").iterdir()) == [
        "a01-executor-1.jsonl",
        "a01-reflector-1.jsonl",
    ]
    assert not list(path.parent.rglob("*.tmp"))  # atomic writes leave no temporary files


@pytest.mark.slow
def test_a_repeat_gets_its_own_files_and_stale_transcripts_go(
    passing: SpecResult, tmp_path: Path
) -> None:
    stale = tmp_path / "task" / "task.r3.transcripts" / "a02-executor-1.jsonl"
    stale.parent.mkdir(parents=True)
    stale.write_text("{}\n")
    path = write_report(passing, tmp_path, repeat=3)
    assert path == tmp_path / "task" / "task.r3.json"
    trace = json.loads(path.read_text())
    assert trace["atom"]["repeat"] == 3
    assert [s["transcript"] for s in sessions(trace)] == [
        "task.r3.transcripts/a01-executor-1.jsonl",
        "task.r3.transcripts/a01-reflector-1.jsonl",
    ]
    assert all((path.parent / s["transcript"]).is_file() for s in sessions(trace))
    assert not stale.exists()
    assert not (tmp_path / "task" / "task.json").exists()


@pytest.mark.slow
def test_a_refine_run_has_one_child_per_attempt(tmp_path: Path, refine_run: Path) -> None:
    result, started = kept(refine_run, "refine")
    assert started == 4  # an executor and a reflector session per attempt
    trace = json.loads(write_report(result, tmp_path / "reports").read_text())
    VALIDATOR.validate(trace)
    assert trace["state"] == "succeeded" and trace["atom"]["score"] == 0.9
    first, second = trace["children"]
    assert (first["state"], first["decision"]) == ("refined", "refine")
    assert (second["state"], second["decision"]) == ("succeeded", "proceed")
    assert first["verdict"] == _labelled(REFINE_VERDICTS[0]["verdict"])
    assert second["verdict"]["score"] == 0.9
    assert [c["atom_ref"].rsplit("#", 1)[1] for c in trace["children"]] == [
        "attempt-1",
        "attempt-2",
    ]
    assert len({trace["invocation_id"], first["invocation_id"], second["invocation_id"]}) == 3
    assert [s["transcript"].split("/")[1] for s in sessions(trace)] == [
        "a01-executor-1.jsonl",
        "a01-reflector-1.jsonl",
        "a02-executor-1.jsonl",
        "a02-reflector-1.jsonl",
    ]
    assert trace["effects_observed"]["tool_calls"] == {"Bash": 2}
    assert trace["effects_observed"]["dispatches_runs"] == trace["cost"]["dispatched_runs"] == 4
    assert trace["cost"]["tokens"] == first["cost"]["tokens"] + second["cost"]["tokens"]


@pytest.mark.slow
def test_a_failing_run_without_criteria(tmp_path: Path, claude_bin: Path) -> None:
    # Bash is not allowed, so the CLI refuses the write: a violation, no file, a failed check.
    spec = (
        "name: task\nprompt: Create done.txt saying done.\nscript: script.yaml\n"
        "max_iterations: 1\nclaude: {permission_mode: default, allowed_tools: [Read]}\n"
        "accept:\n  - file_exists: done.txt\n"
    )
    result = run(tmp_path, claude_bin, [WRITE, {"text": "Done. EXIT_LOOP_NOW"}], [], spec=spec)
    trace = json.loads(write_report(result, tmp_path / "reports").read_text())
    VALIDATOR.validate(trace)
    assert trace["state"] == "failed" and trace["errors"] == []
    assert trace["output_shape"] == {"valid": True, "schema_ref": None, "errors": []}
    [child] = trace["children"]
    assert child["state"] == "failed" and child["verdict"] is None
    assert [s["role"] for s in child["sessions"]] == ["executor"]
    assert [(c["passed"], c["summary"]) for c in child["checks"]] == [
        (False, "done.txt is missing")
    ]
    effects = trace["effects_observed"]
    assert effects["writes_files"] is False and effects["tool_calls"] == {"Bash": 1}
    [violation] = effects["violations"]
    assert "permission denied for Bash" in violation and "echo done > done.txt" in violation
    assert trace["atom"]["passed"] is False and trace["atom"]["score"] is None


@pytest.mark.slow
def test_secrets_never_reach_the_disk(
    passing_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The passing scenario's agent printed a variable it was passed, and the reflector
    quoted it: written out, the trace and transcripts hold its name, never its value."""
    result, _ = kept(passing_run, "passing")
    canary = (passing_run / "canary.txt").read_text()
    monkeypatch.setenv(CANARY, canary)  # the writer's environment, as in the run
    assert result.passed
    # Both routes really carry the canary before scrubbing.
    assert canary in result.final.records[0].stdout
    assert canary in json.dumps(build_trace(result))

    path = write_report(result, tmp_path / "reports")
    written = [p for p in (tmp_path / "reports").rglob("*") if p.is_file()]
    assert len(written) == 3  # the trace, the executor's and the reflector's transcripts
    for file in written:
        assert canary not in file.read_text(), f"{file.name} holds the secret"
    trace = json.loads(path.read_text())
    VALIDATOR.validate(trace)
    assert "the agent printed <SECRET:ATOM_CANARY_TOKEN>" in json.dumps(trace)
    executor = path.parent / sessions(trace)[0]["transcript"]
    assert "<SECRET:ATOM_CANARY_TOKEN>" in executor.read_text()
    lines(executor)  # still JSON lines after scrubbing


def _labelled(scripted: dict[str, Any]) -> dict[str, Any]:
    """A scripted verdict as the trace holds it: each criterion with its trust label (no
    calibration floor applies: it gates)."""
    unfloored = {"trust": "gated", "reason": "unfloored", "detail": ""}
    return {**scripted, "criteria": [{**c, "trust": unfloored} for c in scripted["criteria"]]}
