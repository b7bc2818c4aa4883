"""Run one spec end to end: attempts in isolated folders, gateway, runtime, checks, verdict.

This is the single code path behind `pytest --atom`, the `atom` command and the Python
API, so a spec means the same thing wherever it runs. A run follows seed 002's
staging-commit lifecycle::

    .atom/runs/<spec>-<time>-<id>/
        attempts/a01/    the executor works here (a copy of the workspace, set-up run in it)
        attempts/a02/    a refine attempt: a copy of a01, same conversation, with feedback
        committed/       the passing attempt, promoted
        claude-config/   the CLI's own state (CLAUDE_CONFIG_DIR), secrets scrubbed after the run
        home/            the CLI's HOME (its logs and caches), scrubbed too
        setup/           the `setup:` session's own state, and its output.log

An interrupted run leaves its partial work isolated in its attempt folder.
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from pytest_atom.config import AtomConfig, load_config
from pytest_atom.core.claude_code import find_claude
from pytest_atom.core.prompts import PromptLoader
from pytest_atom.core.runner import ClaudeRunner, IterationRecord, claude_env, clean_env
from pytest_atom.core.runtime import AtomRuntime, RunOutcome
from pytest_atom.core.sandbox import Confinement, require_tools
from pytest_atom.core.tools import discover_tools, tool_env
from pytest_atom.files import copy_ignore
from pytest_atom.interrupted import InterruptedRun, stale_partial_warning
from pytest_atom.judge.checks import CheckRegistry, run_checks
from pytest_atom.judge.reflector import (
    ReflectorError,
    Verdict,
    judge,
    reflector_input,
    run_reflector,
)
from pytest_atom.limits import Budget, Limits
from pytest_atom.paths import cli_slug
from pytest_atom.replay.cassette import Cassette, CassetteError
from pytest_atom.replay.gateway import Exchange, Gateway, ScriptError
from pytest_atom.replay.recording import (
    ModelSource,
    RecordingError,
    cassette_path,
    divergence_report,
    open_model_source,
)
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.result import Attempt, SpecResult
from pytest_atom.settings import RunSettings
from pytest_atom.setup_commands import run_setup
from pytest_atom.spec import EnvError, Spec, expand_env
from pytest_atom.workspace import WorkspaceError, copy_workspace, fixture_source, snapshot_repo


class HarnessError(Exception):
    """The harness could not run the spec at all (as opposed to the agent failing it)."""


class SetupFailed(Exception):
    """A `setup:` command failed: the spec's run ends as a harness error, with its output."""


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
    settings: RunSettings | None = None,
    registry: CheckRegistry | None = None,
    claude_bin: Path | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
    config: AtomConfig | None = None,
) -> SpecResult:
    """Run `spec` in a fresh folder under `runs_dir`: attempts until a verdict is final.

    `settings.threshold` is the project's default; a spec's own wins. `on_event` receives
    the executor's stream-json events as they arrive, and the harness's own as
    ``{"type": "atom", "subtype": "setup" | "attempt" | "checks" | "decision"}`` (multi-step specs
    add "step", "commit" and "rollback"). `config`
    (`.atom/config.yaml`) adds prompt folders, a default model and the tools a spec's
    `tools:` may name.
    """
    started, wall = time.perf_counter(), time.time()
    settings = settings or RunSettings()
    spec = with_limits(spec, config)
    claude_bin = claude_bin or find_claude()
    if spec.sandbox is not None:
        require_tools()  # before anything starts: a missing bwrap says how to install it
    run_type: type[_Run] = _Run
    if spec.steps or spec.request is not None:
        from pytest_atom.steps import StepsRun  # steps.py builds on this module

        run_type = StepsRun
    run_dir = None
    if settings.resume is not None:
        from pytest_atom.steps import resumed_run_dir

        run_dir = resumed_run_dir(settings.resume, spec)
    run = run_type(
        spec,
        run_dir or new_run_dir(runs_dir, spec),
        _prompt_loader(spec, project_dir, config),
        spec.reflector.threshold if spec.reflector.threshold_set else settings.threshold,
        registry,
        claude_bin,
        on_event,
        model=spec.model or (config.model if config else None),
        tools=_spec_tools(spec, config),
    )
    source = open_model_source(
        spec, settings, paths=_volatile_paths(run.run_dir, spec), claude_bin=claude_bin
    )
    try:
        exchanges, written = _drive(run, source)
    except KeyboardInterrupt as stop:
        tape = source.tape
        partial = tape.cassette.partial_path if tape and source.kind == "record" else None
        kept = partial if partial is not None and partial.exists() else None
        InterruptedRun(spec, run.run_dir, kept).attach(stop)
        raise
    except WorkspaceError:
        if settings.resume is None:  # nothing ran: a half-made run folder is no evidence
            shutil.rmtree(run.run_dir, ignore_errors=True)
        raise
    result = _result(run, source, exchanges, written, time.perf_counter() - started)
    stale = stale_partial_warning(Cassette(cassette_path(spec)).partial_path, wall)
    if stale:
        result.warnings.append(stale)
    run.complete(result)
    if result.passed:
        shutil.copytree(result.final.path, run.run_dir / "committed", symlinks=True)
    return result


def _drive(run: _Run, source: ModelSource) -> tuple[list[Exchange], Path | None]:
    """Every attempt behind one gateway; then the cassette is written, or kept as it was.

    Until the run says otherwise it counts as failed: Ctrl-C or a crash keeps the
    cassette. A timeout, or a CLI that gave up (an upstream error, say), is a failed
    recording; an agent that finished and failed its checks is a faithful one.
    """
    failed = True
    exchanges: list[Exchange] = []
    try:
        with Gateway(source.responder) as gateway:
            run.attempt_all(source, gateway.url)
            exchanges = gateway.exchanges
        failed = _unfinished(run)
    finally:
        written = source.finish(run.spec, failed=failed, cli_version=run.cli_version())
        # The CLI's own transcripts hold every prompt and tool output, and its HOME its
        # logs: scrubbed in place.
        Scrubber(extra=source.auth).scrub_tree(run.run_dir / "claude-config", run.run_dir / "home")
    return exchanges, written


def _unfinished(run: _Run) -> bool:
    """A run the harness or the CLI gave up on: a timeout, an error, a crash."""
    return run.harness_error is not None or (
        bool(run.attempts) and run.attempts[-1].outcome.reason in ("timeout", "error")
    )


def _result(
    run: _Run, source: ModelSource, exchanges: list[Exchange], written: Path | None, took: float
) -> SpecResult:
    tape = source.tape
    paid, replayed = _billing(source)
    return SpecResult(
        spec=run.spec,
        run_dir=run.run_dir,
        attempts=run.attempts,
        duration=took,
        threshold=run.threshold,
        exchanges=exchanges,
        source=source.kind,
        divergences=divergence_report(run.spec, source, run.cli_version()),
        warnings=source.warnings,
        drift=tape.drift.line() if tape and source.kind != "record" else None,
        cassette=written,
        harness_error=run.harness_error or source.refused or source.failure,
        setup_output=run.setup_output,
        limits=run.spec.limits,
        usage=run.budget.usage,
        limit_exceeded=run.budget.exceeded,
        upstream_faults=[f.description for f in tape.faults_to_report(_unfinished(run))]
        if tape
        else [],
        paid=paid,
        replayed=replayed,
    )


def _prompt_loader(spec: Spec, project_dir: Path | None, config: AtomConfig | None) -> PromptLoader:
    """The spec's project prompts first, then the config's prompt folders, then the rest."""
    prompts = PromptLoader(prompt_project(spec, project_dir))
    if config is not None and config.prompt_dirs:
        first, *rest = prompts.search_paths
        prompts = PromptLoader(search_paths=[first, *config.prompt_dirs, *rest])
    return prompts


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
    setup_output: str | None = None  # what the spec's `setup:` commands printed
    budget: Budget = field(init=False)
    #: Where the attempt folders go (a step's `steps/<id>/`; default: the run folder), the
    #: first attempt's number (a step re-run after a rollback continues its numbering),
    #: the executor's session (default: the spec's own) and what tells reflector sessions
    #: of different steps apart.
    root: Path | None = None
    start: int = 1
    session: str | None = None
    label: str = ""
    #: The earlier steps a verdict may name as a rollback `target`; with any, a verdict
    #: asking for a rollback ends the attempts (the steps runner acts on it).
    earlier_steps: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.budget = Budget(self.spec.limits)  # one for every attempt: limits sum over them

    def records(self) -> list[IterationRecord]:
        return [r for a in self.attempts for r in a.all_records]

    def cli_version(self) -> str | None:
        return next((r.cli_version for r in self.records() if r.cli_version), None)

    def emit(self, subtype: str, **data: Any) -> None:
        """Harness progress through the same callback as the CLI's stream-json events."""
        if self.on_event:
            self.on_event({"type": "atom", "subtype": subtype, **data})

    def complete(self, result: SpecResult) -> None:
        """Add what only this kind of run knows to its result (a steps run: its steps)."""

    def attempt_all(
        self, source: ModelSource, gateway_url: str, message: str | None = None
    ) -> None:
        """Attempts until one is final: proceed or fail; refine goes round again.

        `message` is what the first attempt's first iteration says instead of the prompt
        and the task (a step that continues the conversation, or re-runs after a rollback).
        """
        env = self.agent_env(gateway_url, source)
        executor = ClaudeRunner(
            env=env,
            options=self.spec.claude,
            model=self.model,
            claude_bin=self.claude_bin,
            on_event=self.on_event,
            confinement=Confinement(self.run_dir, self.spec.sandbox),
            budget=self.budget,
        )
        last = self.start + self.spec.attempts - 1
        for number in range(self.start, last + 1):
            try:
                attempt = self.execute(number, executor, source, message)
            except SetupFailed as exc:
                self.harness_error = str(exc)  # the harness's failure, never the agent's
                return
            if attempt.outcome.reason == "timeout":
                return  # the agent was stopped: its work is judged as failed, not checked
            attempt.checks = run_checks(
                self.spec.accept,
                attempt.path,
                env={**clean_env(), **self.spec_env},
                registry=self.registry,
                records=attempt.records,
            )
            self.emit("checks", checks=attempt.checks)
            if attempt.outcome.reason == "limit":
                return  # failed whatever the checks say; they show how far it got
            if not self.reflect(attempt, env, source):
                return
            attempt.decision = judge(
                attempt.completed, attempt.checks, attempt.verdict, self.threshold
            )
            self.emit("decision", decision=attempt.decision, verdict=attempt.verdict)
            if attempt.decision != "refine" or self.rolls_back(attempt):
                return
            message = refine_message(attempt, last, self.threshold)

    def rolls_back(self, attempt: Attempt) -> bool:
        """The verdict names an earlier step to roll back to: no refine of this one."""
        verdict = attempt.verdict
        return bool(
            verdict and verdict.decision == "rollback" and verdict.target in self.earlier_steps
        )

    def agent_env(self, gateway_url: str, source: ModelSource) -> dict[str, str]:
        """The CLI's environment: the gateway, its own config folder, the spec's tools."""
        env = claude_env(gateway_url, self.run_dir / "claude-config", source.auth)
        env.update(self.spec_env)  # its names never the harness's own: spec.py refuses them
        if self.tools:
            env = tool_env(env)
            shims = _tool_shims(self.run_dir / "bin", self.tools)
            env["PATH"] = f"{shims}{os.pathsep}{env['PATH']}"
        return env

    def execute(
        self, number: int, executor: ClaudeRunner, source: ModelSource, message: str | None
    ) -> Attempt:
        """One attempt's executor run, in its own folder: a02 on is a copy of the last one."""
        path = (self.root or self.run_dir) / "attempts" / f"a{number:02d}"
        session = self.session or session_id_for(self.spec)
        if self.attempts:  # refine: a copy of the last attempt, the same conversation
            shutil.copytree(self.attempts[-1].path, path, symlinks=True, ignore=copy_ignore)
        else:
            self.prepare(path)
        executor.move_session(session, path)  # a no-op until the conversation exists
        runtime = AtomRuntime(
            self.prompts.load(self.spec.toolname),
            path,
            max_iterations=self.spec.max_iterations,
            verbose=False,
            runner=executor,
            session_id=session,
            # A scripted or replayed answer is the same on every retry: retrying only waits.
            max_retries=2 if source.kind == "record" else 0,
            timeout=self.spec.timeout,
        )
        # runtime.records fills as iterations end, so an interrupted attempt keeps them.
        attempt = Attempt(number, path, RunOutcome(False, 0), runtime.records)
        self.attempts.append(attempt)
        self.emit("attempt", attempt=number, attempts=self.spec.attempts)
        attempt.outcome = runtime.execute(self.spec.prompt, message=message)
        return attempt

    @functools.cached_property
    def spec_env(self) -> dict[str, str]:
        """The spec's `env:`, expanded from the caller's environment."""
        try:
            return expand_env(self.spec)
        except EnvError as exc:
            raise HarnessError(str(exc)) from None

    def prepare(self, path: Path) -> None:
        """The first attempt's folder: the workspace copied, then the spec's set-up run in it.

        A step that starts from an earlier step's committed work (inside the run folder)
        copies that as it is; only the spec's own workspace is copied afresh, with set-up.
        """
        workspace = self.spec.workspace
        if workspace is not None and workspace.is_relative_to(self.run_dir):
            shutil.copytree(workspace, path, symlinks=True, ignore=copy_ignore)
            return
        from_git = False
        if workspace is None:
            path.mkdir(parents=True)
        else:
            from_git = copy_workspace(fixture_source(self.spec, self.run_dir.parent), path)
        if not self.spec.setup:
            return
        self.emit("setup", commands=list(self.spec.setup))
        outcome = run_setup(
            self.spec.setup,
            path,
            run_dir=self.run_dir,
            confinement=Confinement(self.run_dir, self.spec.sandbox),
            env=self.spec_env,
            claude_bin=self.claude_bin,
            timeout=self.spec.timeout,
        )
        (self.run_dir / "setup").mkdir(exist_ok=True)
        (self.run_dir / "setup" / "output.log").write_text(outcome.output, encoding="utf-8")
        self.setup_output = outcome.output
        if not outcome.ok:
            raise SetupFailed(outcome.problem())
        if from_git:  # the set-up's work is part of the state the agent starts from
            snapshot_repo(path, amend=True)

    def reflect(self, attempt: Attempt, env: dict[str, str], source: ModelSource) -> bool:
        """The reflector's verdict on a finished attempt with criteria; False: stop here.

        A replay whose reflector request diverged failed on the divergence, which the
        report shows; any other reflector failure is the harness's own. A replay whose
        reflector would get the recorded input takes the recorded verdict (`source.recall`).
        """
        if not (self.spec.criteria and attempt.completed):
            return True
        role = f"reflector:{self.label}{attempt.number}"
        try:
            session = reflector_input(
                self.spec,
                attempt.path,
                attempt.checks,
                attempt.outcome.output,
                self.threshold,
                self.prompts,
                self.earlier_steps,
            )
            key = source.recall.key(role, "reflector", session, attempt.path)
            recalled = source.recall.recall(key)
            if recalled is not None:
                attempt.verdict, attempt.recalled = Verdict.parse(recalled.answer), recalled
                return True
            attempt.verdict, attempt.reflector = run_reflector(
                self.spec,
                attempt.path,
                attempt.checks,
                attempt.outcome.output,
                env=env,
                claude_bin=self.claude_bin,
                session_id=session_id_for(self.spec, role),
                threshold=self.threshold,
                prompts=self.prompts,
                earlier_steps=self.earlier_steps,
                confinement=Confinement(self.run_dir, sandbox=None),  # runs no commands
                session=session,
            )
            source.recall.remember(key, attempt.reflector)
        except ReflectorError as exc:
            if not (source.tape and source.tape.divergences):
                self.harness_error = str(exc)
            return False
        return True


def with_limits(spec: Spec, config: AtomConfig | None) -> Spec:
    """`spec` with its effective limits: its own over the project's defaults, per key.

    The timeout is the spec's (``limits.timeout``, else its top-level ``timeout``), else the
    project's ``limits.timeout``, else the default 600 s; `Spec.timeout` carries it too, so
    every report names the timeout that applied.
    """
    limits = spec.limits.over(config.limits if config is not None else Limits())
    timeout = limits.timeout if limits.timeout is not None else spec.timeout
    return replace(spec, limits=replace(limits, timeout=timeout), timeout=timeout)


def _billing(source: ModelSource) -> tuple[frozenset[str], frozenset[str]]:
    """Which roles' sessions were paid for, and which replayed a paid recording
    (SpecResult.paid/replayed).

    Recording from the spec's own script (`upstream_gateway`) pays nothing, and so a
    cassette recorded that way cost nothing either when it replays; re-judging replays the
    agent and pays for the reflector.
    """
    both, none = frozenset({"executor", "reflector"}), frozenset[str]()
    paid = source.upstream_gateway is None
    tape = source.tape
    # The label recording gives a scripted upstream (recording.py): no API answered.
    upstream = str(tape.cassette.metadata.get("upstream") or "") if tape else ""
    was_paid = not upstream.startswith("scripted://")
    if source.kind == "record":
        return (both if paid else none), none
    if source.kind == "rejudge":
        reflector, executor = frozenset({"reflector"}), frozenset({"executor"})
        return (reflector if paid else none), (executor if was_paid else none)
    if source.kind in ("replay", "refresh"):
        return none, (both if was_paid else none)
    return none, none  # scripted


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


def _volatile_paths(run_dir: Path, spec: Spec) -> dict[str, str]:
    """Paths that differ on every run and machine, with the placeholders that stand for them."""
    paths = {}
    homes = ((Path.home(), "<HOME>"), (run_dir / "home", "<HOME>"))
    for path, placeholder in ((run_dir, "<RUN_DIR>"), *homes):
        paths[str(path)] = placeholder
        paths[str(path.resolve())] = placeholder
    # The CLI names per-folder state after the folder with every other character as `-`,
    # in its system prompt: the auto-memory folder of the project (the run folder, see its
    # `.git` marker in sandbox.py) and the sandbox's task folder of each attempt.
    # A slug is one path component, so each attempt folder's is named in full: a step's
    # attempts are numbered on after a rollback or a resume, hence the generous bound.
    slug = cli_slug(run_dir.resolve())
    paths[slug] = "<RUN_DIR_SLUG>"
    folders = [cli_slug(f"steps-{step.id}-attempts") for step in spec.steps] or ["attempts"]
    attempts = max([spec.attempts, *(step.attempts or 0 for step in spec.steps)])
    for folder in folders:
        for number in range(1, 2 * attempts + 3):
            name = f"{folder}-a{number:02d}"
            paths[f"{slug}-{name}"] = f"<RUN_DIR_SLUG>-{name}"
    # The sandbox's own folders, named after the user id (2.1.330 lists them in its prompt),
    # in the CLI's temp folder; those in /tmp whatever $TMPDIR says are machine details
    # (normalize.MACHINE_DETAILS).
    if hasattr(os, "getuid"):
        for name in ("claude", "cc-daemon", "claude-host"):
            for tmp in {_cli_tmpdir(), str(Path(_cli_tmpdir()).resolve())}:
                paths[f"{tmp}/{name}-{os.getuid()}"] = f"<TMP>/{name}-<UID>"
    return paths


def _cli_tmpdir() -> str:
    """The CLI's temp folder as Node's `os.tmpdir()` finds it, read now: Python's
    `tempfile.gettempdir()` keeps the first answer, though `$TMPDIR` may have changed since."""
    for name in ("TMPDIR", "TMP", "TEMP"):
        value = os.environ.get(name)
        if value:
            return value.rstrip("/") or "/"
    return "/tmp"
