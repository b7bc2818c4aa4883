"""Run one spec end to end: isolated workspace, gateway, atom runtime, checks.

This is the single code path behind `pytest --atom`, the `atom` command and the Python
API, so a spec means the same thing wherever it runs.
"""

from __future__ import annotations

import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pytest_atom.checks import CheckResult, run_checks
from pytest_atom.claude_code import find_claude
from pytest_atom.gateway import Exchange, Gateway
from pytest_atom.prompts import PromptLoader
from pytest_atom.recording import ModelSource, RecordSettings, open_model_source
from pytest_atom.runner import ClaudeRunner, IterationRecord, claude_env, clean_env
from pytest_atom.runtime import AtomRuntime
from pytest_atom.spec import Spec

#: Folders never copied into a run: caches from running the fixture's own tests.
_COPY_IGNORE = shutil.ignore_patterns("__pycache__", ".pytest_cache", ".mypy_cache")


class HarnessError(Exception):
    """The harness could not run the spec at all (as opposed to the agent failing it)."""


@dataclass
class SpecResult:
    """Everything a report needs about one spec run."""

    spec: Spec
    run_dir: Path
    workspace: Path
    completed: bool  # the agent printed the exit signal
    reason: str | None
    error: str | None
    iterations: int
    checks: list[CheckResult]
    records: list[IterationRecord]
    duration: float
    exchanges: list[Exchange] = field(default_factory=list)
    source: str = "scripted"  # what answered the CLI: scripted, replay or record
    divergences: list[str] = field(default_factory=list)  # replay requests that matched nothing
    warnings: list[str] = field(default_factory=list)  # version mismatch, structural drift
    cassette: Path | None = None  # the cassette written by this run, if any

    @property
    def passed(self) -> bool:
        return self.completed and not self.divergences and all(c.passed for c in self.checks)

    @property
    def claude_seconds(self) -> float:
        """Time spent inside `claude` processes: the rest is the harness's overhead."""
        return sum(r.duration for r in self.records)

    @property
    def tokens(self) -> int:
        return sum(r.tokens for r in self.records)

    @property
    def cost_usd(self) -> float:
        return sum(r.cost_usd for r in self.records)

    @property
    def last_message(self) -> str:
        for record in reversed(self.records):
            if record.output or record.texts:
                return record.output or record.texts[-1]
        return ""


def session_id_for(spec: Spec) -> str:
    """A session id derived from the spec, so reruns send the same conversation id."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"pytest-atom:{spec.path.name}:{spec.name}"))


def new_run_dir(runs_dir: Path, spec: Spec) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = runs_dir / f"{spec.name}-{stamp}-{uuid.uuid4().hex[:6]}"
    run_dir.mkdir(parents=True)
    return run_dir


def run_spec(
    spec: Spec,
    *,
    runs_dir: Path,
    project_dir: Path | None = None,
    settings: RecordSettings | None = None,
    claude_bin: Path | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
) -> SpecResult:
    """Run `spec` once in a fresh folder under `runs_dir` and judge it with its checks."""
    started = time.perf_counter()
    claude_bin = claude_bin or find_claude()
    system_prompt = PromptLoader(project_dir).load(spec.toolname)
    run_dir = new_run_dir(runs_dir, spec)
    workspace = run_dir / "workspace"
    if spec.workspace is not None:
        shutil.copytree(spec.workspace, workspace, symlinks=True, ignore=_COPY_IGNORE)
    else:
        workspace.mkdir()
    source = open_model_source(
        spec, settings or RecordSettings(), paths=_volatile_paths(run_dir), claude_bin=claude_bin
    )
    records: list[IterationRecord] = []  # filled as iterations end, so a crash keeps them
    interrupted = True
    try:
        outcome, exchanges = _run_agent(
            spec, source, run_dir, system_prompt, claude_bin, on_event, records
        )
        interrupted = outcome["reason"] == "timeout"
    finally:
        cli_version = next((r.cli_version for r in records if r.cli_version), None)
        written = source.finish(spec, interrupted=interrupted, cli_version=cli_version)
    checks = run_checks(spec.accept, workspace, env=clean_env())
    tape = source.tape
    return SpecResult(
        spec=spec,
        run_dir=run_dir,
        workspace=workspace,
        completed=bool(outcome["success"]),
        reason=outcome.get("reason"),
        error=outcome.get("error"),
        iterations=int(outcome["iterations"]),
        checks=checks,
        records=records,
        duration=time.perf_counter() - started,
        exchanges=exchanges,
        source=source.kind,
        divergences=[d.describe() for d in tape.divergences] if tape else [],
        warnings=source.warnings
        + [
            f"structural match despite drift:\n{d.difference}"
            for d in (tape.drifts if tape else [])
        ],
        cassette=written,
    )


def _volatile_paths(run_dir: Path) -> dict[str, str]:
    """Paths that differ on every run and machine, with the placeholders that stand for them."""
    paths = {}
    for path, placeholder in (
        (run_dir / "workspace", "<WORKSPACE>"),
        (run_dir, "<RUN_DIR>"),
        (Path.home(), "<HOME>"),
    ):
        paths[str(path)] = placeholder
        paths[str(path.resolve())] = placeholder
    return paths


def _run_agent(
    spec: Spec,
    source: ModelSource,
    run_dir: Path,
    system_prompt: str,
    claude_bin: Path,
    on_event: Callable[[dict[str, Any]], None] | None,
    records: list[IterationRecord],
) -> tuple[dict[str, Any], list[Exchange]]:
    workspace = run_dir / "workspace"
    with Gateway(source.responder) as gateway:
        runner = ClaudeRunner(
            env=claude_env(gateway.url, run_dir / "claude-config", source.auth),
            options=spec.claude,
            model=spec.model,
            claude_bin=claude_bin,
            on_event=on_event,
        )
        runtime = AtomRuntime(
            system_prompt,
            workspace,
            max_iterations=spec.max_iterations,
            verbose=False,
            runner=runner,
            session_id=session_id_for(spec),
            # A scripted or replayed answer is the same on every retry: retrying only waits.
            max_retries=2 if source.kind == "record" else 0,
            timeout=spec.timeout,
            on_iteration=lambda _, record: records.append(record),
        )
        return runtime.run(spec.prompt), gateway.exchanges
