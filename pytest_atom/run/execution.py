"""The attempt loop: attempts in isolated folders, runtime, checks, reflector, decision.

`spec_run.run_spec` drives it (or, for a multi-step spec, `steps.StepsRun`, one loop per
step) behind the run's gateway, in the run's folder (`pytest_atom.run_folders` draws it):
each attempt works in ``attempts/aNN``, a refine attempt in a copy of the one before, and
the passing one is promoted to ``committed/``.
"""

from __future__ import annotations

import functools
import os
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from pytest_atom.agents.claude_code.runner import claude_env
from pytest_atom.agents.claude_code.sandbox import Confinement
from pytest_atom.agents.claude_code.srt import ProcessSandbox, process_sandbox
from pytest_atom.agents.protocol import Agent
from pytest_atom.checks.builtin import needs_sandbox, run_checks
from pytest_atom.checks.registry import CheckRegistry
from pytest_atom.cost.limits import Budget
from pytest_atom.cost.spend import SpendLimit
from pytest_atom.environment import build_env
from pytest_atom.errors import (
    AtomError,
    CalibrationError,
    EnvError,
    HarnessError,
    ReflectorError,
)
from pytest_atom.files import copy_ignore, copy_tree
from pytest_atom.judge.reflector import (
    again_role,
    combine_votes,
    judge,
    reflector_input,
    run_reflector,
    verdict_schema,
    vote_role,
)
from pytest_atom.judge.trust import criteria_trust
from pytest_atom.loop import AtomRuntime
from pytest_atom.prompts import PromptLoader
from pytest_atom.replay.recall import SessionInput
from pytest_atom.replay.recording import ModelSource
from pytest_atom.results.harness_events import (
    AttemptStarted,
    ChecksRan,
    Decided,
    HarnessEvent,
    OnEvent,
    SetupStarted,
)
from pytest_atom.results.record import IterationRecord, Recalled, RunOutcome
from pytest_atom.results.spec_result import Attempt, SpecResult
from pytest_atom.results.verdict import Verdict
from pytest_atom.run.factory import AgentFactory
from pytest_atom.run.setup_commands import SetupCache, run_setup
from pytest_atom.run.simulated_user import REPLY_SCHEMA, Conversation, UserSessions
from pytest_atom.run.tools import tool_env
from pytest_atom.run.workspace import copy_workspace, fixture_source, snapshot_repo
from pytest_atom.settings.modes import SetupCacheMode
from pytest_atom.setup_cache.entries import cache_root
from pytest_atom.spec.confinement import project_root
from pytest_atom.spec.env import expand_env
from pytest_atom.spec.types import Spec


class SetupFailed(AtomError):
    """A `setup:` command failed: the spec's run ends as a harness error, with its output."""


#: What `run_spec` raises when it cannot run a spec at all (a missing cassette or `claude`,
#: a full disk): callers report these as the harness's failure, never the agent's.
HARNESS_ERRORS: tuple[type[Exception], ...] = (HarnessError, OSError)
#: Claude Code's retries of a failed API request (its default of 10 takes minutes).
API_RETRIES = 3


def session_id_for(spec: Spec, role: str = "executor") -> str:
    """A session id derived from the spec, so reruns send the same conversation id."""
    suffix = "" if role == "executor" else f":{role}"
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"pytest-atom:{spec.path.name}:{spec.name}{suffix}"))


@dataclass
class AttemptLoop:
    """The attempts of one prompt until a verdict is final (a step's run is one too)."""

    spec: Spec
    run_dir: Path
    prompts: PromptLoader
    threshold: float
    registry: CheckRegistry | None
    claude_bin: Path
    on_event: OnEvent | None
    model: str | None = None
    tools: dict[str, Path] = field(default_factory=dict)  # the spec's `tools:`, by name
    project_dir: Path | None = None  # the project's root: an SDK app may import from it
    attempts: list[Attempt] = field(default_factory=list)
    harness_error: str | None = None
    setup_output: str | None = None  # what the spec's `setup:` commands printed
    #: How set-up results are cached (`--atom-setup-cache`), and what the cache did.
    setup_mode: SetupCacheMode = "copy"
    setup_cache: str | None = None
    #: pytest-atom's own files the workspace copy left out (workspace-relative).
    left_out: tuple[str, ...] = ()
    budget: Budget = field(init=False)
    #: A step's: where its attempt folders go, its first attempt's number, its executor
    #: session and its reflector sessions' label.
    root: Path | None = None
    start: int = 1
    session: str | None = None
    label: str = ""
    #: The earlier steps a rollback verdict may name: such a verdict ends the attempts.
    earlier_steps: tuple[str, ...] = ()
    spend: SpendLimit | None = None  # the session's spending limit
    require_calibration: float | None = None  # every criterion's κ floor (its own wins)
    executor: Agent | None = None  # the agent under test when not the spec's (run.oracle)

    def __post_init__(self) -> None:
        self.budget = Budget(self.spec.limits, self.spend)  # one for all attempts

    def records(self) -> list[IterationRecord]:
        return [r for a in self.attempts for r in a.all_records]

    def cli_version(self) -> str | None:
        return next((r.cli_version for r in self.records() if r.cli_version), None)

    def emit(self, event: HarnessEvent) -> None:
        if self.on_event:
            self.on_event(event)

    def complete(self, result: SpecResult) -> None:
        """Add what only this kind of run knows to its result (a steps run: its steps)."""

    def attempt_all(
        self, source: ModelSource, gateway_url: str, message: str | None = None
    ) -> None:
        """Attempts until one is final: proceed or fail; refine goes round again.
        `message` replaces the first iteration's prompt and task (a continued step's)."""
        agents = self.agents(gateway_url, source)
        talk = self.conversation(agents)
        executor = self.executor or agents.executor(talk.answer if talk else None)
        last = self.start + self.spec.attempts - 1
        for number in range(self.start, last + 1):
            if self.attempts and self._spent(self.attempts[-1]):
                return  # no new Claude Code call past the session's spending limit
            try:
                attempt = self.execute(number, executor, source, message, talk)
            except SetupFailed as exc:
                self.harness_error = str(exc)  # the harness's failure, never the agent's
                return
            if attempt.outcome.reason == "timeout":
                return  # the agent was stopped: its work is judged as failed, not checked
            attempt.checks = run_checks(
                self.spec.accept,
                attempt.path,
                env=self.check_env,
                registry=self.registry,
                records=attempt.records,
                sandbox=self.check_sandbox(attempt.path),
            )
            self.emit(ChecksRan(tuple(attempt.checks)))
            if attempt.outcome.reason == "limit" or self._spent(attempt):
                return  # failed whatever the checks say; they show how far it got
            if not self.reflect(attempt, agents, source):
                return
            attempt.decision = judge(
                attempt.completed,
                attempt.checks,
                attempt.verdict,
                self.threshold,
                self.spec.reflector.gate,
            )
            self.emit(Decided(attempt.decision, attempt.verdict))
            if attempt.decision != "refine" or self.rolls_back(attempt):
                return
            message = refine_message(attempt, last, self.threshold)

    def _spent(self, attempt: Attempt) -> bool:
        """The session's spending limit is reached: `attempt` ends on it, as on a limit of
        its own, and no Claude Code call (a reflector, a refine attempt) starts after it."""
        crossing = self.spend.crossing() if self.spend is not None else None
        if crossing is None:
            return False
        self.budget.exceeded = self.budget.exceeded or crossing
        if attempt.outcome.reason != "limit":
            attempt.outcome.success, attempt.outcome.reason = False, "limit"
            attempt.outcome.error = crossing
        return True

    def rolls_back(self, attempt: Attempt) -> bool:
        """The verdict names an earlier step to roll back to: no refine of this one."""
        verdict = attempt.verdict
        return bool(
            verdict and verdict.decision == "rollback" and verdict.target in self.earlier_steps
        )

    def agents(self, gateway_url: str, source: ModelSource) -> AgentFactory:
        return AgentFactory(
            self.spec,
            self.run_dir,
            self.agent_env(gateway_url, source),
            self.claude_bin,
            model=self.model,
            on_event=self.on_event,
            budget=self.budget,
            project_dir=self.project_dir,
            mcp=source.mcp,
        )

    def agent_env(self, gateway_url: str, source: ModelSource) -> dict[str, str]:
        """The CLI's environment: the gateway, its own config folder, the spec's tools."""
        env = claude_env(
            gateway_url,
            self.run_dir / "claude-config",
            source.auth,
            pass_env=self.spec.pass_env,
        )
        # In every mode: the agent's shell sees it, so a replay gives what recording gave.
        env["CLAUDE_CODE_MAX_RETRIES"] = str(API_RETRIES)
        env.update(self.spec_env)  # its names never the harness's own: spec.py refuses them
        if self.tools:
            env = tool_env(env)
            shims = _tool_shims(self.run_dir / "bin", self.tools)
            env["PATH"] = f"{shims}{os.pathsep}{env['PATH']}"
        return env

    def conversation(self, agents: AgentFactory) -> Conversation | None:
        """The spec's conversation (`user:`), its simulated user's sessions through `agents`."""
        user = self.spec.user
        if user is None:
            return None
        sessions = None
        if user.simulated:
            sessions = UserSessions(
                functools.partial(agents.user, REPLY_SCHEMA, user.model),
                (self.root or self.run_dir) / "user",
                lambda label: session_id_for(self.spec, label),
                self.spec.timeout,
            )
        return Conversation(user, self.spec.prompt, sessions)

    def execute(
        self,
        number: int,
        executor: Agent,
        source: ModelSource,
        message: str | None,
        talk: Conversation | None = None,
    ) -> Attempt:
        """One attempt's executor run in its own folder (a02 on: a copy of the last one)."""
        path = (self.root or self.run_dir) / "attempts" / f"a{number:02d}"
        session = self.session or session_id_for(self.spec)
        if self.attempts:  # refine: a copy of the last attempt, the same conversation
            copy_tree(self.attempts[-1].path, path, ignore=copy_ignore)
        else:
            self.prepare(path)
        executor.continue_session(session, path)  # a no-op until the conversation exists
        # An SDK app, or a conversation's agent, runs once per message: no exit signal.
        loops = executor.loops and talk is None
        turns = talk.user.max_turns if talk else 1
        runtime = AtomRuntime(
            self.prompts.load(self.spec.toolname) if loops else "",
            path,
            max_iterations=self.spec.max_iterations if loops else turns,
            exit_signal="EXIT_LOOP_NOW" if loops else "",
            reply=talk.reply if talk else None,
            verbose=False,
            runner=executor,
            session_id=session,
            # A scripted or replayed answer is the same on every retry, unless the
            # recording ran a failed call again after an upstream fault.
            max_retries=2 if source.kind == "record" or source.reenacts_retries else 0,
            sleep=time.sleep if source.kind == "record" else lambda _: None,
            timeout=self.spec.timeout,
        )
        # runtime.records fills as iterations end, so an interrupted attempt keeps them.
        attempt = Attempt(number, path, RunOutcome(False, 0), runtime.records)
        self.attempts.append(attempt)
        self.emit(AttemptStarted(number, self.spec.attempts))
        first = message if loops else message or self.spec.prompt
        if talk is not None:
            talk.begin(number, first or self.spec.prompt)
            users = len(talk.records)
        attempt.outcome = runtime.execute(self.spec.prompt, message=first)
        if talk is not None:  # each agent turn answered one message of the user's
            attempt.user_turns, attempt.user_done = len(attempt.records), talk.done
            attempt.users = talk.records[users:]
            attempt.conversation = (
                "(a conversation: the user's messages and the agent's turns, in order)\n\n"
                + talk.render()
            )
        return attempt

    @functools.cached_property
    def check_env(self) -> dict[str, str]:
        """The checks' environment: built from parts as the agent's, with the spec's `env:`."""
        return {**build_env(self.run_dir / "home", self.spec.pass_env), **self.spec_env}

    def check_sandbox(self, path: Path) -> ProcessSandbox | None:
        """The agent's confinement for the checks' commands; None without a sandbox or code."""
        if not needs_sandbox(self.spec.accept):
            return None
        return process_sandbox(Confinement(self.run_dir, self.spec.sandbox), path, self.check_env)

    @functools.cached_property
    def spec_env(self) -> dict[str, str]:
        try:
            return expand_env(self.spec)
        except EnvError as exc:
            raise HarnessError(str(exc)) from None

    def prepare(self, path: Path) -> None:
        """The first attempt's folder: the workspace copied, then the spec's set-up run in
        it. An earlier step's committed work is copied as it is, without set-up."""
        workspace = self.spec.workspace
        if workspace is not None and workspace.is_relative_to(self.run_dir):
            copy_tree(workspace, path, ignore=copy_ignore)
            return
        from_git = False
        if workspace is None:
            path.mkdir(parents=True)
        else:
            copied = copy_workspace(fixture_source(self.spec, self.run_dir.parent), path)
            from_git, self.left_out = copied.repository, copied.left_out
        if not self.spec.setup:
            return
        self.emit(SetupStarted(tuple(self.spec.setup)))
        outcome = run_setup(
            self.spec.setup,
            path,
            run_dir=self.run_dir,
            confinement=Confinement(self.run_dir, self.spec.sandbox),
            env=self.spec_env,
            pass_env=self.spec.pass_env,
            timeout=self.spec.timeout,
            cache=self.cache_for(workspace),
        )
        (self.run_dir / "setup").mkdir(exist_ok=True)
        (self.run_dir / "setup" / "output.log").write_text(outcome.output, encoding="utf-8")
        self.setup_output, self.setup_cache = outcome.output, outcome.cache
        if not outcome.ok:
            raise SetupFailed(outcome.problem())
        if from_git:  # the set-up's work is part of the state the agent starts from
            snapshot_repo(path, amend=True)

    def cache_for(self, workspace: Path | None) -> SetupCache | None:
        if self.setup_mode == "off" or not self.spec.setup_cache:
            return None
        return SetupCache(cache_root(), self.setup_mode, self.spec.setup_inputs, workspace)

    def reflect(self, attempt: Attempt, agents: AgentFactory, source: ModelSource) -> bool:
        """The reflector's verdict on a finished attempt with criteria; False: stop here.
        A replay whose reflector request diverged failed on the divergence; any other
        reflector failure is the harness's own. `reflector: {votes: N}` runs N in turn."""
        if not (self.spec.criteria and attempt.completed):
            return True
        votes = []
        try:
            session = reflector_input(
                self.spec,
                attempt.path,
                attempt.checks,
                attempt.conversation or attempt.outcome.output,
                self.threshold,
                self.prompts,
                self.earlier_steps,
            )
            for vote in range(1, self.spec.reflector.votes + 1):
                role = vote_role(f"reflector:{self.label}{attempt.number}", vote)
                verdict = self.ask(role, session, attempt, agents, source)
                if verdict.omits(self.spec.criteria):  # a judge error: asked once more
                    verdict = self.ask(again_role(role), session, attempt, agents, source)
                votes.append(verdict.completed(self.spec.criteria))
        except ReflectorError as exc:
            if not (source.tape and source.tape.divergences):
                self.harness_error = str(exc)
            return False
        return self.trust(attempt, combine_votes(votes))

    def ask(
        self,
        role: str,
        session: SessionInput,
        attempt: Attempt,
        agents: AgentFactory,
        source: ModelSource,
    ) -> Verdict:
        """One reflector session's verdict in `role`: recalled when a replay may, else run."""
        got = source.recall.answer(
            role,
            "reflector",
            session,
            attempt.path,
            lambda: run_reflector(
                session,
                attempt.path,
                agent=agents.reflector(verdict_schema(self.earlier_steps)),
                session_id=session_id_for(self.spec, role),
                timeout=self.spec.timeout,
            ),
        )
        if isinstance(got, Recalled):
            attempt.recalled.append(got)
            return Verdict.parse(got.answer)
        attempt.reflectors.append(got[1])
        return got[0]

    def trust(self, attempt: Attempt, verdict: Verdict) -> bool:
        """`attempt`'s verdict, each criterion gated or advisory (judge.trust). False: the
        spec's calibration.json cannot be read (a missing one makes its criteria advisory)."""
        # The release the reflector ran in (a recalled verdict's: this run's CLI).
        version = next((r.cli_version for r in attempt.reflectors if r.cli_version), None)
        try:
            trusts = criteria_trust(
                self.spec, self.require_calibration, version or self.cli_version(), self.prompts
            )
        except CalibrationError as exc:
            self.harness_error = str(exc)
            return False
        attempt.verdict = verdict.with_trust(trusts)
        return True


def _tool_shims(folder: Path, tools: dict[str, Path]) -> Path:
    """One executable per tool, so the agent runs `greeter ARGS` like any command; each
    tool's folder is copied into the run, as the read guard opens only the run folder."""
    folder.mkdir(exist_ok=True)
    for name, entry in tools.items():
        copy = folder.parent / "tools" / name
        if not copy.exists():
            root = project_root(entry.parent)  # links inside the project only, no FIFO
            copy_tree(entry.parent, copy, ignore=copy_ignore, follow_within=root)
        shim = folder / name
        shim.write_text(
            f'#!/bin/sh\nexec "{sys.executable}" "{copy / entry.name}" "$@"\n', encoding="utf-8"
        )
        shim.chmod(0o755)
    return folder


def refine_message(attempt: Attempt, attempts: int, threshold: float) -> str:
    """What the executor hears at the start of the next attempt: the reviewer's feedback."""
    verdict = attempt.verdict
    assert verdict is not None
    # Only the gated criteria are listed: an advisory one asks for nothing (judge.trust).
    unmet = (
        "\n".join(f"- {c.criterion}: {c.evidence}" for c in verdict.gating_unmet)
        or "- (none listed)"
    )
    needs = (
        "passing needs every criterion below met"
        if verdict.advisory
        else f"passing needs more than {threshold:g}"
    )
    return (
        f"A reviewer checked your work and asks for another attempt "
        f"({attempt.number + 1} of {attempts}). Score {verdict.score:g}; {needs}"
        f".\n\nUnmet criteria:\n{unmet}\n\nFeedback: {verdict.feedback}\n\n"
        "This folder is a copy of your previous attempt. Continue the task in USER_PROMPT.md "
        "from here; when it is complete and verified, end your final message with EXIT_LOOP_NOW."
    )
