"""Multi-step specs (docs/how-to/multi-step.md): steps, each staged, judged and committed in turn.

A spec with ``steps:`` runs them in order, behind the one gateway of its run. Each step
is an ordinary attempt loop (`execution.AttemptLoop`) whose folders live under its own root::

    .atom/runs/<spec>-<time>-<id>/
        steps/<id>/attempts/a01/   the step's attempts; step N's a01 starts from step N-1's
        steps/<id>/committed/      the passing attempt, promoted
        committed/                 the last step's committed work (the spec's outcome)

A later step's reflector may answer ``decision: rollback, target: <step id>``: the
committed work from the target on is wiped, and the run goes on from the target, which
hears the failure report: at most once per target and `max_rollbacks` times in all.
Attempt folders are kept as evidence (a re-run continues their numbering).

Resumed (`--atom-resume RUN_DIR`), a run goes on from the first step not committed, in a
new attempt folder; the interrupted attempt's conversation is set aside.

Planner mode (`request:` instead of `steps:`): a planner session writes the steps first
(`pytest_atom.run.planner`); a plan that is not valid steps, or fails `plan_accept:`, fails
the spec before any step runs.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from pytest_atom.errors import HarnessError, PlannerError
from pytest_atom.files import copy_ignore, link_tree
from pytest_atom.paths import cli_slug, display_path
from pytest_atom.replay.placeholders import volatile_paths
from pytest_atom.replay.recording import ModelSource
from pytest_atom.results.harness_events import (
    Planned,
    PlanStarted,
    RolledBack,
    StepCommitted,
    StepStarted,
)
from pytest_atom.results.record import Recalled
from pytest_atom.results.spec_result import Attempt, Plan, Rollback, SpecResult, StepResult
from pytest_atom.run.execution import AttemptLoop, session_id_for
from pytest_atom.run.planner import (
    PLAN_SCHEMA,
    check_plan,
    planner_folder,
    planner_input,
    replan_feedback,
    run_planner,
)
from pytest_atom.run_folders import folder_spec_name, parse_run_name
from pytest_atom.spec.types import Spec, Step, steps_prompt


def resumed_run_dir(folder: Path, spec: Spec) -> Path | None:
    """`folder` when it is a run of `spec`; None when it is another spec's (run afresh)."""
    folder = folder.resolve()
    parsed = parse_run_name(folder.name)
    if parsed is None or parsed[0] != folder_spec_name(spec.name):
        return None
    if spec.request is not None:
        raise HarnessError(
            f"cannot resume {folder}: spec '{spec.name}' is in planner mode (request:), "
            "whose steps come from a plan made anew each run: run it without --atom-resume"
        )
    if not spec.steps:
        raise HarnessError(
            f"cannot resume {folder}: spec '{spec.name}' has no steps; only a multi-step "
            "spec continues from its latest committed step"
        )
    if not (folder / "steps").is_dir():
        raise HarnessError(f"cannot resume {folder}: it holds no steps/ folder of a run")
    return folder


def step_root(run_dir: Path, step_id: str) -> Path:
    return run_dir / "steps" / step_id


def committed_dir(run_dir: Path, step_id: str) -> Path:
    return step_root(run_dir, step_id) / "committed"


@dataclass
class StepsRun(AttemptLoop):
    """A multi-step spec's run: one `AttemptLoop` per step run, rollbacks between them."""

    results: list[StepResult] = field(default_factory=list)
    rollbacks: list[Rollback] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # warnings for the report
    #: Steps already committed by an earlier run of this folder (`--atom-resume`).
    resumed: int = 0
    plan: Plan | None = None  # planner mode: the first plan (every rollback asks anew)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.results = [StepResult(step.id) for step in self.spec.steps]
        for result in self.results:  # a resumed run: the steps committed before
            if not committed_dir(self.run_dir, result.id).is_dir():
                break
            result.committed = committed_dir(self.run_dir, result.id)
            self.resumed += 1

    def attempt_all(
        self, source: ModelSource, gateway_url: str, message: str | None = None
    ) -> None:
        """Every step in order from the first uncommitted one; a rollback goes back."""
        if self.spec.request is not None and not self.spec.steps:
            if not self._plan(source, gateway_url):
                return
        feedback: dict[str, str] = {}  # step id -> the failure report its re-run hears
        index = self.resumed
        if index and source.kind == "scripted":
            self.harness_error = (
                "a scripted run cannot resume: its script plays from the first turn; resume "
                "a run that replays or records a cassette"
            )
            return
        if index and source.kind == "record":
            self.notes.append(
                "this recording resumed an interrupted run: its cassette holds the resumed "
                "steps only; record the whole spec again before replaying it"
            )
        self._set_aside_interrupted()
        while index < len(self.spec.steps):  # a re-plan changes the steps as they run
            step, result = self.spec.steps[index], self.results[index]
            self.emit(StepStarted(step.id, index + 1, len(self.spec.steps)))
            report = feedback.pop(step.id, None)  # a rollback's failure report, if any
            run = self._step_run(step, index, result, report)
            before = self._outside(step) if self.spec.sandbox is None else None
            run.attempt_all(source, gateway_url, self._first_message(index, report))
            if before is not None:
                self._check_confined(step, before, run)
            result.attempts += run.attempts
            self.attempts += run.attempts  # every attempt, in the order they ran
            self.setup_output = run.setup_output or self.setup_output  # the first step's
            self.setup_cache = run.setup_cache or self.setup_cache
            self.left_out = run.left_out or self.left_out
            self._add_usage(run)
            if run.harness_error is not None:
                self.harness_error = run.harness_error
                return
            if run.attempts and run.attempts[-1].decision == "proceed":
                self._commit(result, run.attempts[-1])
                index += 1
                continue
            target = self._rollback_target(index, run.attempts)
            if target is None:
                return  # the step failed, and with it the spec
            index = self._roll_back(index, target, run.attempts[-1], feedback)
            if self.plan is not None and not self._replan(source, gateway_url, target, feedback):
                return

    def _plan(self, source: ModelSource, gateway_url: str) -> bool:
        """Planner mode: the planner's steps become the spec's; False: nothing to run."""
        self.plan = self._ask_planner(source, gateway_url)
        if self.plan is None or not self.plan.passed:
            return False
        self._adopt(self.plan)
        self._normalize_steps(source)
        return True

    def _replan(
        self, source: ModelSource, gateway_url: str, target: int, feedback: dict[str, str]
    ) -> bool:
        """Rollback recovery: the planner hears the failure report and plans the steps
        from the target on anew (whose executor hears the report too); False: the new plan
        cannot run, so the spec fails."""
        rollback = self.rollbacks[-1]
        report = feedback.pop(self.spec.steps[target].id)
        plan = self._ask_planner(
            source,
            gateway_url,
            number=len(self.rollbacks) + 1,
            target=target,
            feedback=replan_feedback(self.spec.steps, target, report),
        )
        rollback.replan = plan
        if plan is None or not plan.passed:
            return False
        self._adopt(plan, target)
        self._normalize_steps(source)
        feedback[plan.steps[target].id] = report
        return True

    def _ask_planner(
        self,
        source: ModelSource,
        gateway_url: str,
        *,
        number: int = 1,
        target: int = 0,
        feedback: str = "",
    ) -> Plan | None:
        """One planner session, its answer checked; None: it gave none (a harness error,
        unless the replay diverged, which then says why)."""
        self.emit(PlanStarted(number))
        kept = self.spec.steps[:target]
        role = "planner" if number == 1 else f"planner:{number}"
        folder = planner_folder(self.spec, self.run_dir, self._start_folder(target), number)
        session = planner_input(self.spec, self.prompts, feedback, self.model)
        try:
            got = source.recall.answer(
                role,
                "planner",
                session,
                folder,
                lambda: run_planner(
                    session,
                    folder,
                    agent=self.agents(gateway_url, source).planner(PLAN_SCHEMA),
                    session_id=session_id_for(self.spec, role),
                    timeout=self.spec.timeout,
                ),
            )
        except PlannerError as exc:
            if not (source.tape and source.tape.divergences):
                self.harness_error = str(exc)
            return None
        # A recalled plan is the one recorded: the same request over the same folder.
        recalled = got if isinstance(got, Recalled) else None
        answer, record = (got.answer, None) if isinstance(got, Recalled) else got
        kinds = self.registry.kinds() if self.registry is not None else ()
        plan = check_plan(self.spec, answer, self.run_dir, kinds, number=number, kept=kept)
        plan.record, plan.recalled = record, recalled
        self.emit(Planned(plan.summary() if number == 1 else f"re-{plan.summary()}"))
        return plan

    def _adopt(self, plan: Plan, target: int = 0) -> None:
        """The plan's steps become the spec's from `target` on. A planned step whose id
        ran before (even in a dropped plan) keeps its result; the replaced steps the plan
        no longer has are the last rollback's `dropped` ones, kept as evidence."""
        replaced, self.results = self.results[target:], self.results[:target]
        new_ids = {s.id for s in plan.steps}
        for rollback in self.rollbacks:
            replaced += [r for r in rollback.dropped if r.id in new_ids]
            rollback.dropped = [r for r in rollback.dropped if r.id not in new_ids]
        if self.rollbacks:
            self.rollbacks[-1].dropped += [r for r in replaced if r.id not in new_ids]
        reuse = {r.id: r for r in replaced}
        self.results += [reuse.get(s.id) or StepResult(s.id) for s in plan.steps[target:]]
        self.spec = replace(self.spec, steps=plan.steps, prompt=steps_prompt(plan.steps))

    def _normalize_steps(self, source: ModelSource) -> None:
        """The planned steps' attempt folders become placeholders in the cassette."""
        if source.tape is not None:
            source.tape.normalizer.add_paths(volatile_paths(self.run_dir, self.spec))

    def _step_run(
        self, step: Step, index: int, result: StepResult, report: str | None
    ) -> AttemptLoop:
        """The attempt loop of one run of `step`, from the previous step's work. A fresh
        session's task holds a rollback's `report`; a continued one hears it first."""
        result.runs += 1
        result.committed = None
        fresh = self.spec.session == "fresh"
        start = self._start_folder(index)
        spec = step_spec(self.spec, step, index, start, report if fresh else None, bool(self.plan))
        root = step_root(self.run_dir, step.id)
        return AttemptLoop(
            spec,
            **{name: getattr(self, name) for name in _RUN_WIDE},
            root=root,
            start=_attempt_count(root) + 1,
            session=session_id_for(
                self.spec, f"executor:{step.id}:{result.runs}" if fresh else "executor"
            ),
            label=f"{step.id}:",
            earlier_steps=tuple(s.id for s in self.spec.steps[:index]),
        )

    def _set_aside_interrupted(self) -> None:
        """Conversations of attempts of uncommitted steps (a resumed run's interrupted
        work) are renamed, so the session resumes from the last committed step's."""
        projects = self.run_dir / "claude-config" / "projects"
        for step in self.spec.steps[self.resumed :]:
            for folder in sorted((step_root(self.run_dir, step.id) / "attempts").glob("a*")):
                slug = cli_slug(folder.resolve())
                for transcript in (projects / slug).glob("*.jsonl"):
                    transcript.rename(transcript.with_name(transcript.name + ".interrupted"))

    def _start_folder(self, index: int) -> Path | None:
        if index == 0:
            return self.spec.workspace
        return committed_dir(self.run_dir, self.spec.steps[index - 1].id)

    def _first_message(self, index: int, report: str | None) -> str | None:
        """What a step's first iteration says when the conversation goes on from before
        (None: the prompt and task, as a fresh session and a run's first step hear)."""
        step = self.spec.steps[index]
        if self.spec.session == "fresh" or (index == 0 and report is None):
            return None
        replanned = report is not None and self.plan is not None
        task = step_task(step, index, len(self.spec.steps), report, replanned)
        if replanned:
            before = "The work from here on was rolled back, and the planner planned it anew."
        elif report is not None:
            before = "The work of this step and every later one was rolled back."
        else:
            before = f"Step `{self.spec.steps[index - 1].id}` is committed."
        return (
            f"{before} This folder holds the committed work of the steps before it.\n\n"
            f"{task}\n\nWhen this step is complete and verified, end your final message "
            "with EXIT_LOOP_NOW."
        )

    def _outside(self, step: Step) -> dict[str, tuple[int, int]]:
        """What a step's agent must leave alone: the other steps' folders, its own committed
        work and the fixture workspace, by size and modification time."""
        own = step_root(self.run_dir, step.id) / "attempts"
        folders = [self.run_dir / "steps", *([self.spec.workspace] if self.spec.workspace else [])]
        prints: dict[str, tuple[int, int]] = {}
        runs = self.run_dir.parent  # inside a project workspace: the runs, never the work
        for folder in folders:
            skipped = runs if folder != folders[0] else None  # the steps are in this run
            for path in folder.rglob("*") if folder.is_dir() else ():
                if skipped is not None and skipped in path.parents:
                    continue
                if path != own and own not in path.parents and not path.is_dir():
                    stat = path.lstat()
                    prints[str(path)] = (stat.st_size, stat.st_mtime_ns)
        return prints

    def _check_confined(
        self, step: Step, before: dict[str, tuple[int, int]], run: AttemptLoop
    ) -> None:
        """With `sandbox: false`, a write outside the step's attempt folder fails the step."""
        after = self._outside(step)
        changed = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
        if not changed or not run.attempts:
            return
        shown = ", ".join(display_path(Path(p)) for p in changed[:5])
        more = f" (+{len(changed) - 5} more)" if len(changed) > 5 else ""
        attempt = run.attempts[-1]
        attempt.decision = "fail"
        attempt.outcome.error = (
            f"step '{step.id}' wrote outside its attempt folder (checked after the run: the "
            f"spec has sandbox: false): {shown}{more}"
        )

    def _commit(self, result: StepResult, attempt: Attempt) -> None:
        target = committed_dir(self.run_dir, result.id)
        shutil.rmtree(target, ignore_errors=True)
        link_tree(attempt.path, target, ignore=copy_ignore)  # hard links: no second copy
        result.committed = target
        self.emit(StepCommitted(result.id, attempt.number))

    def _rollback_target(self, index: int, attempts: list[Attempt]) -> int | None:
        """The earlier step a failed step's verdict goes back to, if the rules allow it."""
        verdict = attempts[-1].verdict if attempts else None
        if verdict is None or verdict.decision != "rollback" or verdict.target is None:
            return None
        ids = [s.id for s in self.spec.steps]
        step = ids[index]
        if verdict.target not in ids[:index]:
            self.notes.append(
                f"step {step!r} asked for a rollback to {verdict.target!r}, which is not an "
                f"earlier step ({', '.join(ids[:index]) or 'none'}): the step failed instead"
            )
            return None
        if any(r.target == verdict.target for r in self.rollbacks):
            self.notes.append(
                f"step {step!r} asked for a second rollback to {verdict.target!r}; one per "
                "target is allowed: the step failed instead"
            )
            return None
        if len(self.rollbacks) >= self.spec.max_rollbacks:
            self.notes.append(
                f"step {step!r} asked for a rollback to {verdict.target!r}, but the spec's "
                f"max_rollbacks ({self.spec.max_rollbacks}) were used: the step failed instead"
            )
            return None
        return ids.index(verdict.target)

    def _roll_back(
        self, index: int, target: int, attempt: Attempt, feedback: dict[str, str]
    ) -> int:
        """Wipe the committed work from `target` on; the target hears the failure report."""
        steps = self.spec.steps
        report = rollback_report(steps[index].id, attempt)
        for later in steps[target:]:
            shutil.rmtree(committed_dir(self.run_dir, later.id), ignore_errors=True)
        for result in self.results[target:]:
            result.committed = None
        self.rollbacks.append(Rollback(steps[index].id, attempt.number, steps[target].id, report))
        feedback[steps[target].id] = report
        self.emit(RolledBack(steps[index].id, steps[target].id))
        return target

    def _add_usage(self, run: AttemptLoop) -> None:
        """The spec's usage sums its steps' (each has its own budget)."""
        total, used = self.budget.usage, run.budget.usage
        total.turns += used.turns
        total.tool_calls += used.tool_calls
        total.tokens += used.tokens
        total.cost_usd += used.cost_usd
        if run.budget.exceeded and not self.budget.exceeded:
            self.budget.exceeded = run.budget.exceeded.within(run.label.rstrip(":"))

    def complete(self, result: SpecResult) -> None:
        result.steps = self.results
        result.rollbacks = list(self.rollbacks)
        result.plan = self.plan
        result.warnings = [*result.warnings, *self.notes]


#: What each step's attempt loop shares with the whole run's.
_RUN_WIDE = tuple(
    "run_dir prompts threshold registry claude_bin on_event model tools project_dir spend"
    " setup_mode require_calibration".split()
)


def _attempt_count(root: Path) -> int:
    return len([p for p in (root / "attempts").glob("a[0-9]*") if p.is_dir()])


def step_spec(
    spec: Spec,
    step: Step,
    index: int,
    workspace: Path | None,
    report: str | None = None,
    replanned: bool = False,
) -> Spec:
    """The spec one step runs as: its task, checks, criteria, attempts and limits."""
    return replace(
        spec,
        prompt=step_task(step, index, len(spec.steps), report, replanned),
        workspace=workspace,
        accept=step.accept,
        criteria=step.criteria,
        criteria_floors=step.criteria_floors,
        attempts=step.attempts or spec.attempts,
        limits=step.limits.over(spec.limits) if step.limits is not None else spec.limits,
        steps=(),
    )


def step_task(
    step: Step, index: int, count: int, report: str | None = None, replanned: bool = False
) -> str:
    """A step's task as the executor sees it: its id, its prompt, a rollback's report."""
    heading = "Why the plan changed" if replanned else "Redo this step"
    redo = f"\n\n## {heading}\n\n{report}" if report else ""
    return (
        f"# Step `{step.id}` ({index + 1} of {count})\n\n"
        f"Your step id is `{step.id}`: work on this step only, and never invent other step "
        f"names.\n\n{step.prompt.strip()}{redo}"
    )


def rollback_report(step_id: str, attempt: Attempt) -> str:
    """The failure report a rolled-back step's re-run is given: the later step's verdict."""
    verdict = attempt.verdict
    assert verdict is not None
    unmet = "\n".join(f"- {c.criterion}: {c.evidence}" for c in verdict.unmet) or "- (none listed)"
    failed = "\n".join(
        f"- {c.check.describe()}: {c.summary}" for c in attempt.checks if not c.passed
    )
    return (
        f"Step `{step_id}` (attempt {attempt.number}) found this step's committed work wrong.\n\n"
        f"Unmet criteria:\n{unmet}\n\nFailed checks:\n{failed or '- (none)'}\n\n"
        f"Feedback: {verdict.feedback}"
    )
