"""Run one spec end to end: its run folder, its model source behind one gateway, its
attempts (or steps), its cassette and its result: the one code path behind `pytest
--atom`, the `atom` command and the Python API.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

from pytest_atom.agents.claude_code.cli import find_claude
from pytest_atom.agents.claude_code.sandbox import require_tools
from pytest_atom.agents.claude_code.srt import require_srt
from pytest_atom.checks.builtin import needs_sandbox
from pytest_atom.checks.registry import CheckRegistry
from pytest_atom.cost.spend import SpendLimit
from pytest_atom.environment import release_tmpdirs
from pytest_atom.errors import HarnessError, WorkspaceError
from pytest_atom.files import link_tree
from pytest_atom.gateway import Gateway
from pytest_atom.gateway.server import Meter
from pytest_atom.prompts import PromptLoader
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.reachable import UpstreamCheck
from pytest_atom.replay.recording import (
    ModelSource,
    Prove,
    cassette_path,
    divergence_report,
    open_run_source,
)
from pytest_atom.replay.scrub import Scrubber, remember_spec_secrets
from pytest_atom.reports.text import TEXT
from pytest_atom.results.harness_events import OnEvent
from pytest_atom.results.spec_result import SpecResult
from pytest_atom.run.execution import AttemptLoop
from pytest_atom.run.interrupted import InterruptedRun, stale_partial_warning
from pytest_atom.run.steps import StepsRun, resumed_run_dir
from pytest_atom.run.tools import discover_tools
from pytest_atom.run_folders import run_name
from pytest_atom.settings.config import AtomConfig, load_config
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec.types import Spec
from pytest_atom.wire.request import Exchange
from pytest_atom.words import shorten


@dataclass(frozen=True)
class RunScope:
    """What a spec run takes from the project and the session around it. `project_dir`:
    the project's root (its prompts; an SDK app imports from it); `config`: its
    `.atom/config.yaml` (prompt folders, a default model, tools); `upstreams`: the
    upstreams it records from, each checked once a session (None: never)."""

    project_dir: Path | None = None
    config: AtomConfig | None = None
    registry: CheckRegistry | None = None
    spend: SpendLimit | None = None
    upstreams: UpstreamCheck | None = None


def run_spec(
    spec: Spec,
    *,
    runs_dir: Path,
    settings: RunSettings | None = None,
    claude_bin: Path | None = None,
    on_event: OnEvent | None = None,
    repeat: int | None = None,
    scope: RunScope | None = None,
) -> SpecResult:
    """Run `spec` in a fresh folder under `runs_dir`: attempts until a verdict is final.

    `on_event` receives the executor's events and the harness's own as they arrive;
    `repeat` and `settings.seed` draw a stochastic script's choices. Once `scope.spend` is
    reached the spec does not start (SpendingLimitReached), and a run under way is stopped."""
    scope = scope or RunScope()
    spend, project_dir = scope.spend, scope.project_dir
    if spend is not None and spend.reached:
        raise spend.refuse(spec.name)
    started, wall = time.perf_counter(), time.time()
    settings = settings or RunSettings()
    spec = spec.with_limits(scope.config)
    # The spec's and the env files' secrets: every Scrubber of this run is made after this.
    remember_spec_secrets(spec, project_dir)
    claude_bin = claude_bin or find_claude()
    _require_sandbox(spec)
    run = new_run(spec, runs_dir, settings, scope, claude_bin, on_event)
    source = open_run_source(
        spec, settings, run.run_dir, claude_bin=claude_bin, repeat=repeat, upstreams=scope.upstreams
    )
    billing = _billing(source)  # (paid, replayed): read once
    meter = Meter(billing[0], spend)
    prove = _prover(spec, settings, scope, claude_bin)
    exchanges, written = _drive(spec, run, source, meter, settings, prove)
    result = _result(run, source, exchanges, written, time.perf_counter() - started, billing)
    bills = meter.bills  # read once: its sums are plain fields
    result.billed, result.billed_usd = dict(bills.by_role), dict(bills.usd_by_role)
    result.billed_steps = {role: dict(kinds) for role, kinds in bills.steps.items()}
    stale = stale_partial_warning(
        Cassette(source.cassette_file or cassette_path(spec)).partial_path, wall
    )
    if stale:
        result.warnings.append(stale)
    run.complete(result)
    if result.passed:
        # A record of the passing attempt, hard-linked: not a second copy of its files.
        link_tree(result.final.path, run.run_dir / "committed")
    return result


def new_run_dir(runs_dir: Path, spec: Spec) -> Path:
    run_dir = runs_dir / run_name(spec.name)
    run_dir.mkdir(parents=True)
    return run_dir


def prompt_project(spec: Spec, project_dir: Path | None) -> Path | None:
    """The project whose `.atom/prompts/` a spec uses: the nearest one above the spec
    (up to `project_dir`), else `project_dir`."""
    for folder in (spec.root, *spec.root.parents):
        if (folder / ".atom" / "prompts").is_dir():
            return folder
        if project_dir is not None and folder == project_dir:
            break
    return project_dir


def _require_sandbox(spec: Spec) -> None:
    """Before anything starts, a missing bwrap, or `srt` where set-up or command checks
    need it, says how to install it (a real MCP server asks for `srt` when it starts)."""
    if spec.sandbox is None:
        return
    require_tools()
    checks = [*spec.accept, *(c for step in spec.steps for c in step.accept)]
    if spec.setup or needs_sandbox(checks):
        require_srt()


def new_run(
    spec: Spec,
    runs_dir: Path,
    settings: RunSettings,
    scope: RunScope,
    claude_bin: Path,
    on_event: OnEvent | None = None,
) -> AttemptLoop:
    """The run of `spec` (steps or attempts) in a new run folder, or the one
    `settings.resume` names; nothing started yet (`pytest_atom.rescore` uses it too)."""
    run_type = StepsRun if spec.steps or spec.request is not None else AttemptLoop
    run_dir = None
    if settings.resume is not None:
        run_dir = resumed_run_dir(settings.resume, spec)
    return run_type(
        spec,
        run_dir or new_run_dir(runs_dir, spec),
        prompt_loader(spec, scope.project_dir, scope.config),
        spec.reflector.threshold_or(settings.threshold),
        scope.registry,
        claude_bin,
        on_event,
        model=spec.model or (scope.config.model if scope.config else None),
        tools=_spec_tools(spec, scope.config),
        project_dir=scope.project_dir,
        spend=scope.spend,
        setup_mode=settings.setup_cache,
        require_calibration=settings.require_calibration,
    )


def _drive(
    spec: Spec,
    run: AttemptLoop,
    source: ModelSource,
    meter: Meter,
    settings: RunSettings,
    prove: Prove | None = None,
) -> tuple[list[Exchange], Path | None]:
    """Every attempt behind one gateway; then the cassette is written, or kept as it was.
    Until the run says otherwise it counts as failed (Ctrl-C or a crash keeps the cassette);
    an agent that failed its checks is a faithful recording, a timeout is not."""
    failed = True
    exchanges: list[Exchange] = []
    try:
        try:
            with Gateway(source.responder, meter) as gateway:
                run.attempt_all(source, gateway.url)
                exchanges = gateway.exchanges
            failed = _unfinished(run)
        finally:
            written = source.finish(
                run.spec,  # a planned run's: its steps are the plan's
                failed=failed,
                cli_version=run.cli_version(),
                passed=_passed(run),
                prove=None if failed else prove,
            )
            # The CLI's own transcripts and logs hold every prompt and tool output: scrubbed.
            auth = source.auth
            Scrubber(extra=auth).scrub_tree(run.run_dir / "claude-config", run.run_dir / "home")
            release_tmpdirs(run.run_dir)  # the short links to its temp folders, if any
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
    return exchanges, written


def _prover(spec: Spec, settings: RunSettings, scope: RunScope, claude_bin: Path) -> Prove | None:
    """How a recording that met an upstream fault is proven before it replaces the
    cassette: the spec replayed offline from the candidate. None: nothing is recorded."""
    if settings.record_mode == "none" or settings.rejudge:
        return None
    offline = replace(settings, record_mode="none", upstream=None, resume=None, repeat=1)

    def prove(candidate: Path) -> str | None:
        with tempfile.TemporaryDirectory(prefix="atom-proof-runs-") as runs:
            replayed = run_spec(
                replace(spec, cassette=candidate),
                runs_dir=Path(runs),
                settings=offline,
                claude_bin=claude_bin,
                scope=replace(scope, spend=None),
            )
            return None if replayed.passed else _why_not(replayed)

    return prove


def _why_not(replayed: SpecResult) -> str:
    """Why a proving replay failed, in one line: its outcome, and its first divergence."""
    why = replayed.outcome.why
    if replayed.divergences:
        detail = replayed.divergences[0].detail.strip().splitlines()
        why += f": {detail[0]}" if detail else ""
    elif replayed.attempts and replayed.final.records and replayed.final.records[-1].returncode:
        output = replayed.final.records[-1].output.strip().splitlines()
        why += f": {shorten(Scrubber().scrub(output[-1]), 300)}" if output else ""
    return why


def _passed(run: AttemptLoop) -> bool:
    steps = getattr(run, "results", None) or []
    return (
        bool(run.attempts)
        and run.attempts[-1].decision == "proceed"
        and all(step.passed for step in steps)
    )


def _unfinished(run: AttemptLoop) -> bool:
    """A run the harness or the CLI gave up on: a timeout, an error, a crash."""
    return run.harness_error is not None or (
        bool(run.attempts) and run.attempts[-1].outcome.reason in ("timeout", "error")
    )


def _result(
    run: AttemptLoop,
    source: ModelSource,
    exchanges: list[Exchange],
    written: Path | None,
    took: float,
    billing: tuple[frozenset[str], frozenset[str]],
) -> SpecResult:
    tape = source.tape
    paid, replayed = billing
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
        drift=tape.drift if tape and source.kind != "record" and tape.drift.changes() else None,
        cassette=written,
        harness_error=run.harness_error or source.refused or source.failure,
        script_error=source.script_error,
        setup_output=run.setup_output,
        setup_cache=run.setup_cache,
        left_out=run.left_out,
        limits=run.spec.limits,
        usage=run.budget.usage,
        limit_exceeded=run.budget.exceeded,
        # A recording a fault disturbed and whose spec then failed names that fault too.
        upstream_faults=tape.faults_to_report(_unfinished(run)) + source.disturbed if tape else [],
        paid=paid,
        replayed=replayed,
        renderer=TEXT.render,  # `SpecResult.report()`: the text format's failure report
    )


def prompt_loader(spec: Spec, project_dir: Path | None, config: AtomConfig | None) -> PromptLoader:
    """The spec's project prompts, then the config's prompt folders, then the rest (the
    outcome cache's digest reads them from here too)."""
    prompts = PromptLoader(prompt_project(spec, project_dir))
    if config is not None and config.prompt_dirs:
        first, *rest = prompts.search_paths
        prompts = PromptLoader(search_paths=[first, *config.prompt_dirs, *rest])
    return prompts


def _billing(source: ModelSource) -> tuple[frozenset[str], frozenset[str]]:
    """Which roles' sessions were paid for, and which replayed a paid recording
    (SpecResult.paid/replayed). Recording from a script (`upstream_gateway`) pays nothing,
    nor does its cassette's replay; re-judging pays for the reflector only."""
    both = ("executor", "reflector")
    pays = {"record": both, "rejudge": ("reflector",)}.get(source.kind, ())
    replays = {"rejudge": ("executor",), "replay": both, "refresh": both}.get(source.kind, ())
    tape = source.tape
    # The label recording gives a scripted upstream (recording.py): no API answered.
    upstream = str(tape.cassette.metadata.get("upstream") or "") if tape else ""
    was_paid = not upstream.startswith("scripted://")
    paid = source.upstream_gateway is None
    return frozenset(pays if paid else ()), frozenset(replays if was_paid else ())


def _spec_tools(spec: Spec, config: AtomConfig | None) -> dict[str, Path]:
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
