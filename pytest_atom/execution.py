"""Run one spec end to end: attempts in isolated folders, gateway, runtime, checks, verdict.

This is the single code path behind `pytest --atom`, the `atom` command and the Python
API, so a spec means the same thing wherever it runs. A run follows seed 002's
staging-commit lifecycle::

    .atom/runs/<spec>-<time>-<id>/
        attempts/a01/    the executor works here (a copy of the fixture)
        attempts/a02/    a refine attempt: a copy of a01, same conversation, with feedback
        committed/       the passing attempt, promoted
        claude-config/   the CLI's own state (CLAUDE_CONFIG_DIR), secrets scrubbed after the run

An interrupted run leaves its partial work isolated in its attempt folder.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from pytest_atom.cassette import CassetteError
from pytest_atom.checks import CheckRegistry, CheckResult, run_checks
from pytest_atom.claude_code import find_claude
from pytest_atom.config import AtomConfig, load_config
from pytest_atom.gateway import Exchange, Gateway, ScriptError
from pytest_atom.limits import Budget, Limits, Usage
from pytest_atom.prompts import PromptLoader
from pytest_atom.recording import (
    ModelSource,
    RecordingError,
    RecordSettings,
    divergence_report,
    open_model_source,
)
from pytest_atom.reflector import ReflectorError, Verdict, judge, run_reflector
from pytest_atom.runner import ClaudeRunner, IterationRecord, claude_env, clean_env
from pytest_atom.runtime import AtomRuntime
from pytest_atom.sandbox import Confinement, require_tools
from pytest_atom.scrub import Scrubber
from pytest_atom.spec import Spec
from pytest_atom.tools import discover_tools, tool_env

#: Folders never copied into a run: caches from running the fixture's own tests.
_COPY_IGNORE = shutil.ignore_patterns("__pycache__", ".pytest_cache", ".mypy_cache")


class HarnessError(Exception):
    """The harness could not run the spec at all (as opposed to the agent failing it)."""


#: What `run_spec` raises when it cannot run a spec at all: a missing cassette or script,
#: a broken cassette, a missing `claude` or prompt (both OSErrors). Callers report these
#: as the harness's failure, never as the agent's.
HARNESS_ERRORS: tuple[type[Exception], ...] = (
    HarnessError,
    RecordingError,
    CassetteError,
    ScriptError,
    OSError,
)


@dataclass
class Attempt:
    """One attempt: the executor's iterations, the checks, the reflector's verdict."""

    number: int
    path: Path
    outcome: dict[str, Any]  # AtomRuntime.run's result
    records: list[IterationRecord]
    checks: list[CheckResult] = field(default_factory=list)
    verdict: Verdict | None = None
    reflector: IterationRecord | None = None
    decision: str = "fail"  # proceed, refine or fail

    @property
    def completed(self) -> bool:
        return bool(self.outcome.get("success"))

    @property
    def iterations(self) -> int:
        return int(self.outcome.get("iterations") or 0)

    @property
    def all_records(self) -> list[IterationRecord]:
        return self.records + ([self.reflector] if self.reflector else [])


@dataclass
class SpecResult:
    """Everything a report needs about one spec run."""

    spec: Spec
    run_dir: Path
    attempts: list[Attempt]
    duration: float
    threshold: float
    exchanges: list[Exchange] = field(default_factory=list)
    source: str = "scripted"  # what answered the CLI: scripted, replay or record
    divergences: list[str] = field(default_factory=list)  # replay requests that matched nothing
    warnings: list[str] = field(default_factory=list)
    #: What Claude Code changed around a replayed conversation, one line (None: nothing).
    drift: str | None = None
    cassette: Path | None = None  # the cassette written by this run, if any
    harness_error: str | None = None  # e.g. a malformed verdict: never a pass
    upstream_faults: list[str] = field(default_factory=list)  # recording: faults not got past
    #: Whose sessions ("executor", "reflector") a paid upstream answered, and whose a
    #: cassette: the CLI prices every session from the usage in its answers, even
    #: scripted or replayed ones, so its figure is spent only for the paid ones.
    paid: frozenset[str] = frozenset()
    replayed: frozenset[str] = frozenset()
    #: The limits the agent ran under (the spec's over the project's), what it used of
    #: them over every attempt, and the first one it crossed ("exceeded max_turns: 3 > 2").
    limits: Limits = field(default_factory=Limits)
    usage: Usage = field(default_factory=Usage)
    limit_exceeded: str | None = None

    def report(self) -> str:
        """The failure report a person reads (also handy as an assertion message)."""
        from pytest_atom.report import failure_report

        return failure_report(self)

    @property
    def final(self) -> Attempt:
        return self.attempts[-1]

    @property
    def passed(self) -> bool:
        return (
            self.harness_error is None
            and not self.divergences
            and bool(self.attempts)
            and self.final.decision == "proceed"
        )

    @property
    def decision(self) -> str:
        return self.final.decision if self.attempts else "fail"

    @property
    def verdict(self) -> Verdict | None:
        return self.final.verdict if self.attempts else None

    @property
    def score(self) -> float | None:
        return self.verdict.score if self.verdict else None

    @property
    def workspace(self) -> Path:
        """Where the outcome can be inspected: committed/ after a pass, else the last attempt."""
        committed = self.run_dir / "committed"
        return committed if self.passed and committed.is_dir() else self.final.path

    @property
    def completed(self) -> bool:
        return bool(self.attempts) and self.final.completed

    @property
    def reason(self) -> str | None:
        return self.final.outcome.get("reason") if self.attempts else "error"

    @property
    def error(self) -> str | None:
        return self.final.outcome.get("error") if self.attempts else None

    @property
    def checks(self) -> list[CheckResult]:
        return self.final.checks if self.attempts else []

    @property
    def iterations(self) -> int:
        return sum(a.iterations for a in self.attempts)

    @property
    def records(self) -> list[IterationRecord]:
        """Every CLI session of the run: executor iterations and reflector sessions."""
        return [r for a in self.attempts for r in a.all_records]

    @property
    def claude_seconds(self) -> float:
        """Time spent inside `claude` processes: the rest is the harness's overhead."""
        return sum(r.duration for r in self.records)

    @property
    def tokens(self) -> int:
        return sum(r.tokens for r in self.records)

    @property
    def cost_usd(self) -> float:
        """Dollars spent: 0 for scripted and replayed runs, which call no API."""
        return self.costs()[0]

    @property
    def recorded_cost_usd(self) -> float:
        """What the replayed answers cost when they were recorded (not spent again)."""
        return self.costs()[1]

    def costs(self, attempts: list[Attempt] | None = None) -> tuple[float, float]:
        """Dollars (spent, recorded) of `attempts` (default: every attempt)."""
        spent = recorded = 0.0
        for attempt in self.attempts if attempts is None else attempts:
            reflector = [attempt.reflector] if attempt.reflector else []
            for role, records in (("executor", attempt.records), ("reflector", reflector)):
                usd = sum(r.cost_usd for r in records)
                spent += usd if role in self.paid else 0.0
                recorded += usd if role in self.replayed else 0.0
        return spent, recorded

    @property
    def last_message(self) -> str:
        for record in reversed(self.final.records if self.attempts else []):
            if record.output or record.texts:
                return record.output or record.texts[-1]
        return ""


def session_id_for(spec: Spec, role: str = "executor") -> str:
    """A session id derived from the spec, so reruns send the same conversation id."""
    suffix = "" if role == "executor" else f":{role}"
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"pytest-atom:{spec.path.name}:{spec.name}{suffix}"))


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
    threshold: float | None = None,
    registry: CheckRegistry | None = None,
    claude_bin: Path | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    config: AtomConfig | None = None,
) -> SpecResult:
    """Run `spec` in a fresh folder under `runs_dir`: attempts until a verdict is final.

    `threshold` is the project's default (ini `atom_threshold`); a spec's own wins.
    `on_event` receives the executor's stream-json events as they arrive, and the
    harness's own as ``{"type": "atom", "subtype": "attempt" | "checks" | "decision"}``.
    `config` (`.atom/config.yaml`) adds prompt folders, a default model and the tools
    a spec's `tools:` may name.
    """
    started = time.perf_counter()
    spec = with_limits(spec, config)
    claude_bin = claude_bin or find_claude()
    if spec.sandbox is not None:
        require_tools()  # before anything starts: a missing bwrap says how to install it
    if threshold is None or spec.reflector.threshold_set:
        threshold = spec.reflector.threshold
    prompts = PromptLoader(prompt_project(spec, project_dir))
    if config is not None and config.prompt_dirs:
        first, *rest = prompts.search_paths
        prompts = PromptLoader(search_paths=[first, *config.prompt_dirs, *rest])
    run = _Run(
        spec,
        new_run_dir(runs_dir, spec),
        prompts,
        threshold,
        registry,
        claude_bin,
        on_event,
        model=spec.model or (config.model if config else None),
        tools=_spec_tools(spec, config),
    )
    source = open_model_source(
        spec,
        settings or RecordSettings(),
        paths=_volatile_paths(run.run_dir, spec.attempts),
        claude_bin=claude_bin,
    )
    failed = True  # until the run says otherwise: Ctrl-C or a crash keeps the cassette
    try:
        with Gateway(source.responder) as gateway:
            run.attempt_all(source, gateway.url)
            exchanges = gateway.exchanges
        # A timeout, or a CLI that gave up (an upstream error, say), is a failed recording;
        # an agent that finished and failed its checks is a faithful one.
        failed = run.harness_error is not None or (
            bool(run.attempts) and run.attempts[-1].outcome.get("reason") in ("timeout", "error")
        )
    finally:
        cli_version = next((r.cli_version for r in run.records() if r.cli_version), None)
        written = source.finish(spec, failed=failed, cli_version=cli_version)
        # The CLI's own transcripts hold every prompt and tool output: scrubbed in place.
        Scrubber(extra=source.auth).scrub_tree(run.run_dir / "claude-config")
    tape = source.tape
    result = SpecResult(
        spec=spec,
        run_dir=run.run_dir,
        attempts=run.attempts,
        duration=time.perf_counter() - started,
        threshold=threshold,
        exchanges=exchanges,
        source=source.kind,
        divergences=divergence_report(spec, source, cli_version),
        warnings=source.warnings,
        drift=tape.drift.line() if tape and source.kind != "record" else None,
        cassette=written,
        harness_error=run.harness_error or source.refused,
        limits=spec.limits,
        usage=run.budget.usage,
        limit_exceeded=run.budget.exceeded,
        upstream_faults=[f.description for f in tape.unrecovered_faults()] if tape else [],
        **_billing(source),
    )
    if result.passed:
        shutil.copytree(result.final.path, run.run_dir / "committed", symlinks=True)
    return result


@dataclass
class _Run:
    spec: Spec
    run_dir: Path
    prompts: PromptLoader
    threshold: float
    registry: CheckRegistry | None
    claude_bin: Path
    on_event: Callable[[dict[str, Any]], None] | None
    model: str | None = None
    tools: dict[str, Path] = field(default_factory=dict)  # the spec's `tools:`, by name
    attempts: list[Attempt] = field(default_factory=list)
    harness_error: str | None = None
    budget: Budget = field(init=False)

    def __post_init__(self) -> None:
        self.budget = Budget(self.spec.limits)  # one for every attempt: limits sum over them

    def records(self) -> list[IterationRecord]:
        return [r for a in self.attempts for r in a.all_records]

    def emit(self, subtype: str, **data: Any) -> None:
        """Harness progress through the same callback as the CLI's stream-json events."""
        if self.on_event:
            self.on_event({"type": "atom", "subtype": subtype, **data})

    def attempt_all(self, source: ModelSource, gateway_url: str) -> None:
        spec = self.spec
        env = claude_env(gateway_url, self.run_dir / "claude-config", source.auth)
        if self.tools:
            env = tool_env(env)
            env["PATH"] = (
                f"{_tool_shims(self.run_dir / 'bin', self.tools)}{os.pathsep}{env['PATH']}"
            )
        executor = ClaudeRunner(
            env=env,
            options=spec.claude,
            model=self.model,
            claude_bin=self.claude_bin,
            on_event=self.on_event,
            confinement=Confinement(self.run_dir, spec.sandbox),
            budget=self.budget,
        )
        system_prompt = self.prompts.load(spec.toolname)
        session = session_id_for(spec)
        message: str | None = None
        for number in range(1, spec.attempts + 1):
            path = self.run_dir / "attempts" / f"a{number:02d}"
            if self.attempts:  # refine: a copy of the last attempt, the same conversation
                shutil.copytree(self.attempts[-1].path, path, symlinks=True, ignore=_COPY_IGNORE)
                executor.move_session(session, path)
            elif spec.workspace is not None:
                shutil.copytree(spec.workspace, path, symlinks=True, ignore=_COPY_IGNORE)
            else:
                path.mkdir(parents=True)
            runtime = AtomRuntime(
                system_prompt,
                path,
                max_iterations=spec.max_iterations,
                verbose=False,
                runner=executor,
                session_id=session,
                # A scripted or replayed answer is the same on every retry: retrying only waits.
                max_retries=2 if source.kind == "record" else 0,
                timeout=spec.timeout,
            )
            # runtime.records fills as iterations end, so an interrupted attempt keeps them.
            attempt = Attempt(number, path, {}, runtime.records)
            self.attempts.append(attempt)
            self.emit("attempt", attempt=number, attempts=spec.attempts)
            attempt.outcome = runtime.run(spec.prompt, message=message)
            if attempt.outcome.get("reason") in ("timeout", "limit"):
                return  # the agent was stopped: its work is judged as failed, not checked
            attempt.checks = run_checks(spec.accept, path, env=clean_env(), registry=self.registry)
            self.emit("checks", checks=attempt.checks)
            if spec.criteria and attempt.completed:
                try:
                    attempt.verdict, attempt.reflector = run_reflector(
                        spec,
                        path,
                        attempt.checks,
                        attempt.outcome.get("output") or "",
                        env=env,
                        claude_bin=self.claude_bin,
                        session_id=session_id_for(spec, f"reflector:{number}"),
                        threshold=self.threshold,
                        prompts=self.prompts,
                        confinement=Confinement(self.run_dir, sandbox=None),  # runs no commands
                    )
                except ReflectorError as exc:
                    # A replay whose reflector request diverged failed on the divergence,
                    # which the report shows; anything else is the harness's own failure.
                    if not (source.tape and source.tape.divergences):
                        self.harness_error = str(exc)
                    return
            attempt.decision = judge(
                attempt.completed, attempt.checks, attempt.verdict, self.threshold
            )
            self.emit("decision", decision=attempt.decision, verdict=attempt.verdict)
            if attempt.decision != "refine":
                return
            message = refine_message(attempt, spec.attempts, self.threshold)


def with_limits(spec: Spec, config: AtomConfig | None) -> Spec:
    """`spec` with its effective limits: its own over the project's defaults, per key.

    The timeout is the spec's (``limits.timeout``, else its top-level ``timeout``), else the
    project's ``limits.timeout``, else the default 600 s; `Spec.timeout` carries it too, so
    every report names the timeout that applied.
    """
    limits = spec.limits.over(config.limits if config is not None else Limits())
    timeout = limits.timeout if limits.timeout is not None else spec.timeout
    return replace(spec, limits=replace(limits, timeout=timeout), timeout=timeout)


def _billing(source: ModelSource) -> dict[str, frozenset[str]]:
    """Which roles' sessions were paid for, and which replayed (SpecResult.paid/replayed).

    Recording from the spec's own script (`upstream_gateway`) pays nothing; re-judging
    replays the agent and pays for the reflector.
    """
    both, none = frozenset({"executor", "reflector"}), frozenset[str]()
    paid = source.upstream_gateway is None
    if source.kind == "record":
        return {"paid": both if paid else none, "replayed": none}
    if source.kind == "rejudge":
        return {
            "paid": frozenset({"reflector"}) if paid else none,
            "replayed": frozenset({"executor"}),
        }
    if source.kind in ("replay", "refresh"):
        return {"paid": none, "replayed": both}
    return {"paid": none, "replayed": none}  # scripted


def _spec_tools(spec: Spec, config: AtomConfig | None) -> dict[str, Path]:
    """The entry points of the project tools a spec names; an unknown name is a harness error."""
    if not spec.tools:
        return {}
    config = config or load_config(cwd=spec.root)
    found = discover_tools(config)
    missing = [name for name in spec.tools if name not in found]
    if missing:
        dirs = ", ".join(str(d) for d in config.tools_paths)
        raise HarnessError(
            f"spec '{spec.name}' lists tools {missing} that are not in the project's tools "
            f"folders ({dirs}); a tool is a folder with cli.py, main.py or tool.py"
        )
    return {name: found[name] for name in spec.tools}


def _tool_shims(folder: Path, tools: dict[str, Path]) -> Path:
    """One executable per tool, so the agent runs `greeter ARGS` like any command."""
    folder.mkdir(exist_ok=True)
    for name, entry in tools.items():
        shim = folder / name
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{entry}" "$@"\n', encoding="utf-8")
        shim.chmod(0o755)
    return folder


def prompt_project(spec: Spec, project_dir: Path | None) -> Path | None:
    """The project whose `.atom/prompts/` a spec uses: the nearest one above the spec.

    Specs that ship their own prompts (an example folder, a sub-project) find them
    wherever pytest's rootdir is; otherwise `project_dir` (the rootdir, or cwd).
    """
    for folder in (spec.root, *spec.root.parents):
        if (folder / ".atom" / "prompts").is_dir():
            return folder
        if project_dir is not None and folder == project_dir:
            break
    return project_dir


def refine_message(attempt: Attempt, attempts: int, threshold: float) -> str:
    """What the executor hears at the start of the next attempt: the reviewer's feedback."""
    verdict = attempt.verdict
    assert verdict is not None
    unmet = "\n".join(f"- {c.criterion}: {c.evidence}" for c in verdict.unmet) or "- (none listed)"
    return (
        f"A reviewer checked your work and asks for another attempt "
        f"({attempt.number + 1} of {attempts}). Score {verdict.score:g}; passing needs more "
        f"than {threshold:g}.\n\nUnmet criteria:\n{unmet}\n\nFeedback: {verdict.feedback}\n\n"
        "This folder is a copy of your previous attempt. Continue the task in USER_PROMPT.md "
        "from here; when it is complete and verified, end your final message with EXIT_LOOP_NOW."
    )


def _volatile_paths(run_dir: Path, attempts: int = 1) -> dict[str, str]:
    """Paths that differ on every run and machine, with the placeholders that stand for them."""
    paths = {}
    for path, placeholder in ((run_dir, "<RUN_DIR>"), (Path.home(), "<HOME>")):
        paths[str(path)] = placeholder
        paths[str(path.resolve())] = placeholder
    # The CLI names per-folder state after the folder with every other character as `-`,
    # in its system prompt: the auto-memory folder of the project (the run folder, see its
    # `.git` marker in sandbox.py) and the sandbox's task folder of each attempt.
    slug = re.sub(r"[^A-Za-z0-9]", "-", str(run_dir.resolve()))
    paths[slug] = "<RUN_DIR_SLUG>"
    for number in range(1, attempts + 1):
        paths[f"{slug}-attempts-a{number:02d}"] = f"<RUN_DIR_SLUG>-attempts-a{number:02d}"
    # The sandbox's own folders, named after the user id (2.1.330 lists them in its prompt).
    if hasattr(os, "getuid"):
        for name in ("claude", "cc-daemon", "claude-host"):
            paths[f"{tempfile.gettempdir()}/{name}-{os.getuid()}"] = f"<TMP>/{name}-<UID>"
    return paths
