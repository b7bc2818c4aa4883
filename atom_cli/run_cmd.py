"""`atom run`: specs outside pytest, with live progress, through the plugin's own harness."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape

from pytest_atom.agents import events
from pytest_atom.judge.checks import CheckRegistry
from pytest_atom.model.arms import select_arms, unknown_arms
from pytest_atom.model.config import ConfigError
from pytest_atom.model.modes import (
    JUDGE_MODES,
    MATCH_MODES,
    RECORD_MODES,
    JudgeMode,
    MatchMode,
    RecordMode,
)
from pytest_atom.model.result import SpecResult
from pytest_atom.model.settings import DEFAULT_KEEP_RUNS, SettingsError, ini_note
from pytest_atom.model.spec import load_specs, spec_files
from pytest_atom.model.spec_types import Spec, SpecError
from pytest_atom.model.spend import EXIT_SPENDING_LIMIT, SpendingLimitReached
from pytest_atom.paths import SPEC_SUFFIX, display_path, node_id
from pytest_atom.pytest.pytest_ini import find_ini, pytest_rootdir
from pytest_atom.reports.baseline import BaselineError, BaselineGate
from pytest_atom.reports.html import report_row, spec_view, write_html
from pytest_atom.reports.measure import arm_lines, measured_lines, repeat_lines
from pytest_atom.reports.rows import SummaryRow, spec_key
from pytest_atom.reports.text import (
    failed_tries_lines,
    pass_rates,
    result_properties,
    sandbox_warning_lines,
    summary_table,
    tool_problem,
)
from pytest_atom.reports.trace import build_trace
from pytest_atom.run.execution import HARNESS_ERRORS
from pytest_atom.run.harness import Harness, host_harness
from pytest_atom.run.interrupted import InterruptedRun


class ContentError(click.ClickException):
    """A spec or config file that cannot be used: exit 2 like a usage error, but without
    the usage banner, since the command line itself was right."""

    exit_code = 2


def collect_specs(files: list[Path], registry: CheckRegistry | None = None) -> list[Spec]:
    """The specs in `files` (with the project's check kinds); a malformed one is a
    ContentError, and finding none a usage error."""
    specs: list[Spec] = []
    for file in files:
        try:
            specs += load_specs(file, check_kinds=registry.kinds() if registry else ())
        except SpecError as err:
            raise ContentError(str(err)) from None
    if not specs:
        raise click.UsageError(f"no *{SPEC_SUFFIX} specs in {', '.join(map(str, files))}")
    return specs


def _run_all(
    harness: Harness, specs: list[Spec], console: Console, views: list[dict[str, Any]] | None
) -> list[tuple[SpecResult, int | None]]:
    """Each spec (`repeat` times) with live progress; a harness error ends the command.

    `views` collects each run's HTML view, made while its run folder still exists."""
    results: list[tuple[SpecResult, int | None]] = []
    repeat = harness.settings.repeat
    for spec in specs:
        for number in range(1, repeat + 1):
            label = spec.name if repeat == 1 else f"{spec.name}[r{number}]"
            console.print(f"[bold]{escape(label)}[/] ({escape(str(spec.path.name))})")
            try:
                result = harness.run(
                    spec, on_event=Progress(console, spec), repeat=number if repeat > 1 else None
                )
            except SpendingLimitReached as exc:
                console.print(f"  [yellow]{escape(str(exc))}[/]")
                continue
            except HARNESS_ERRORS as exc:
                console.print(f"[red]Error:[/] {escape(str(exc))}")
                sys.exit(2)
            results.append((result, number if repeat > 1 else None))
            if views is not None:
                views.append(spec_view(result, repeat=number if repeat > 1 else None))
            if not result.passed:
                console.print(escape(result.report()))
    return results


class Progress:
    """Prints a spec run as it happens: attempts, iterations, tool calls, checks, verdict."""

    def __init__(self, console: Console, spec: Spec) -> None:
        self.console = console
        self.spec = spec
        self.iteration = 0
        self.calls: dict[str, tuple[str, Any]] = {}  # tool_use id -> (name, input)

    def __call__(self, event: dict[str, Any]) -> None:
        kind, sub = event.get("type"), event.get("subtype")
        say = self.console.print
        if kind == "atom" and sub == "attempt":
            self.iteration = 0
            if self.spec.criteria and self.spec.attempts > 1:  # else no second attempt can come
                say(f"  [bold]attempt {event['attempt']}/{event['attempts']}[/]")
        elif kind != "atom":
            for agent_event in events.parse_event(event):
                self._agent(agent_event)
        elif kind == "atom" and sub == "checks":
            for check in event["checks"]:
                mark = "[green]PASS[/]" if check.passed else "[red]FAIL[/]"
                say(f"    {mark} {escape(check.check.describe())}: {escape(check.summary)}")
        elif kind == "atom" and sub == "step":
            say(f"  [bold]step {escape(event['step'])}[/] ({event['number']}/{event['steps']})")
        elif kind == "atom" and sub == "planned":
            say(f"  [bold]{escape(event['plan'])}[/]")  # planner mode: the plan's steps
        elif kind == "atom" and sub == "commit":
            say(f"  [green]committed[/] step {escape(event['step'])} (a{event['attempt']:02d})")
        elif kind == "atom" and sub == "rollback":
            say(f"  [yellow]rollback[/] from {escape(event['step'])} to {escape(event['target'])}")
        elif kind == "atom" and sub == "decision":
            verdict = event.get("verdict")
            score = f", score {verdict.score:g}" if verdict else ""
            say(f"    decision: [bold]{event['decision']}[/]{score}")

    def _agent(self, event: events.Event) -> None:
        """What the agent does: each iteration's start, its calls, its prose, the calls the
        agent answered with an error or a refusal, as they happen."""
        say = self.console.print
        if isinstance(event, events.SessionStarted):
            self.iteration += 1
            say(f"    iteration {self.iteration}/{self.spec.max_iterations}")
        elif isinstance(event, events.ToolCall) and not event.server:
            self.calls[event.id] = (event.name, event.input)
            args = json.dumps(event.input or {}, ensure_ascii=False)
            say(f"      [cyan]→ {escape(event.name)}[/] {escape(args[:120])}")
        elif isinstance(event, events.AssistantText) and not event.thinking:
            if event.text.strip():
                say(f"      [dim]{escape(event.text.strip().splitlines()[0][:120])}[/]")
        elif isinstance(event, events.ToolResult):
            name, tool_input = self.calls.get(event.tool_use_id, ("?", None))
            line = tool_problem(name, tool_input, event.text, event.is_error)
            if line:
                say(f"      [red]✗ {escape(line)}[/]")


@click.command("run")
@click.argument("specs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--record-mode",
    type=click.Choice(RECORD_MODES),
    default=None,
    help="none (the default, unless .atom/config.yaml says otherwise) replays cassettes and "
    "never reaches the network; once, new_episodes and all record; refresh rewrites a "
    "cassette's requests for this Claude Code (see the README).",
)
@click.option(
    "--match",
    "match",
    type=click.Choice(MATCH_MODES),
    default=None,
    help="conversation (the default, unless .atom/config.yaml says otherwise) matches the "
    "conversation whatever Claude Code wraps it in; structural also tolerates changed tool "
    "results; strict needs the whole request body.",
)
@click.option(
    "--rejudge",
    is_flag=True,
    help="replay the agent's sessions and record the reflector's verdicts anew.",
)
@click.option(
    "--judge",
    type=click.Choice(JUDGE_MODES),
    default=None,
    help="recall (the default) takes a replay's recorded verdict and plan without starting "
    "the reflector or planner when its whole input is unchanged; rerun starts it anyway.",
)
@click.option(
    "--strict-version",
    is_flag=True,
    help="fail a replay whose cassette was recorded with another Claude Code version.",
)
@click.option("--upstream", metavar="URL", help="where recording forwards to.")
@click.option(
    "--report",
    "report_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="write JSON traces and transcripts here.",
)
@click.option(
    "--html",
    "html",
    type=click.Path(dir_okay=False, path_type=Path),
    help="write one self-contained HTML report here (`atom view` opens the last one).",
)
@click.option(
    "--baseline",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="compare the run with a baseline (atom baseline save): a regression in outcome, "
    "score, turns, tokens or cost beyond its tolerance fails the run (exit 1).",
)
@click.option(
    "--min-pass-rate",
    type=click.FloatRange(0, 1),
    default=None,
    metavar="R",
    help="gate on pass rates: the run fails when a spec passes less than R (0..1) of its "
    "repeats, and succeeds otherwise even if some repeats failed.",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=None,
    help="run each spec N times (default 1).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=None,
    help="draw stochastic scripts' choices from this seed (default: a fresh one, printed).",
)
@click.option(
    "--arms",
    default=None,
    metavar="NAME,...",
    help="run only these arms of specs with `arms:` (as --atom-arms; default: every arm).",
)
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=None,
    help="reflector score to pass, unless a spec sets its own (default 0.8, or the ini's "
    "atom_threshold, or .atom/config.yaml's threshold).",
)
@click.option(
    "--max-cost-usd",
    type=click.FloatRange(0, min_open=True),
    default=None,
    metavar="USD",
    help="what a recording may spend in all (at Claude Code's prices, as the answers "
    "arrive): once reached, no new Claude Code call starts, the running one is stopped, the "
    "rest of the specs are not run, and the command exits 2. Estimate first with "
    "`atom cassette cost`.",
)
@click.option(
    "--runs-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="where run folders go (default: .atom/runs in the project's root: the folder "
    "holding .atom/config.yaml, else pytest's rootdir, as pytest --atom uses).",
)
@click.option(
    "--resume",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="continue a multi-step spec's interrupted run folder from its latest committed step.",
)
@click.option(
    "--keep-runs",
    type=click.IntRange(min=0),
    default=None,
    help=f"(default {DEFAULT_KEEP_RUNS}) afterwards, keep the newest N run folders of each spec and this run's failed "
    "ones; 0 keeps all.",
)
@click.option(
    "--keep-runs-size",
    metavar="SIZE",
    default=None,
    help="afterwards, also delete the oldest run folders until all fit in SIZE (such as "
    "500MB); the newest of each spec and this run's failed ones stay.",
)
@click.option(
    "--json", "as_json", is_flag=True, help="print the results as JSON traces, for scripts."
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="project config (default: .atom/config.yaml here or above).",
)
def run(
    specs: tuple[Path, ...],
    record_mode: RecordMode | None,
    match: MatchMode | None,
    rejudge: bool,
    judge: JudgeMode | None,
    strict_version: bool,
    upstream: str | None,
    report_dir: Path | None,
    html: Path | None,
    baseline: Path | None,
    min_pass_rate: float | None,
    repeat: int | None,
    seed: int | None,
    arms: str | None,
    threshold: float | None,
    max_cost_usd: float | None,
    runs_dir: Path | None,
    resume: Path | None,
    keep_runs: int | None,
    keep_runs_size: str | None,
    as_json: bool,
    config_path: Path | None,
) -> None:
    """Run specs outside pytest: the same specs, cassettes and verdicts as `pytest --atom`.

    Exit status: 0 when every spec passed (an xfail spec's expected failure passes), 1 when
    any failed (or regressed against --baseline, or fell below --min-pass-rate), 2 for usage
    or harness errors, for recordings that failed on their upstream and when --max-cost-usd
    stopped the run (as `claude plugin eval --max-cost-usd`), 130 when interrupted (Ctrl-C).
    """
    console = Console(stderr=as_json, highlight=False, soft_wrap=True)
    files = spec_files(specs)
    options: dict[str, Any] = {
        "record_mode": record_mode,
        "match": match,
        "rejudge": rejudge or None,
        "judge": judge,
        "strict_version": strict_version or None,
        "upstream": upstream,
        "threshold": threshold,
        "runs_dir": runs_dir.resolve() if runs_dir else None,
        "keep_runs": keep_runs,
        "keep_runs_size": keep_runs_size,
        "repeat": repeat,
        "seed": seed,
        "arms": arms,
        "resume": resume.resolve() if resume else None,
        # From here, as pytest's --atom-report, --atom-html and --atom-baseline are.
        "report": report_dir.resolve() if report_dir else None,
        "html": html.resolve() if html else None,
        "baseline": baseline.resolve() if baseline else None,
        "min_pass_rate": min_pass_rate,
        "max_cost_usd": max_cost_usd,
    }
    harness = _harness(options, config_path, files)
    try:
        gate = harness.baseline_gate()
    except BaselineError as err:
        raise ContentError(str(err)) from None
    html = harness.html
    console.print(f"[dim]seed {harness.settings.seed} (reproduce: --seed)[/]")
    ini = find_ini(harness.root)
    note = ini and ini_note(ini.values, display_path(ini.path))
    if note:
        console.print(f"[dim]{escape(note)}[/]")
    views: list[dict[str, Any]] | None = [] if html else None  # built while run folders exist
    try:
        loaded = collect_specs(files, harness.registry())
        problem = unknown_arms(harness.settings.arms, (s.arm for s in loaded), "--arms")
        if problem:
            raise click.UsageError(problem)
        loaded = select_arms(loaded, harness.settings.arms)
        results = _run_all(harness, loaded, console, views)
    except KeyboardInterrupt as stop:
        _interrupted(console, stop, harness)
        sys.exit(130)  # as a shell reports SIGINT: never 1, which means a spec failed
    harness.finish()
    rows = _summary_rows(results, gate)
    regressed = gate is not None and gate.finish(rows)
    for line in summary_table(rows):
        console.print(escape(line))
    if html and views is not None:
        deltas = gate.deltas() if gate is not None else {}
        write_html(
            [
                report_row(
                    row.nodeid, row.outcome.label, view, deltas=deltas.get(spec_key(row.nodeid))
                )
                for row, view in zip(rows, views, strict=True)
            ],
            html,
            runs_dir=harness.runs_dir,
            measured=measured_lines(rows),
        )
        console.print(f"HTML report: {escape(display_path(html))}")
    for line in failed_tries_lines(rows):
        console.print(escape(line))
    for line in sandbox_warning_lines(rows):
        console.print(f"[yellow]{escape(line)}[/]")
    if gate is not None:
        for line in gate.lines():
            red = line.startswith("baseline regression") or "REGRESSION" in line
            style = "red" if red else "default"
            console.print(f"[{style}]{escape(line)}[/]")
    min_rate = harness.settings.min_pass_rate
    repeats = harness.settings.repeat > 1 or min_rate is not None
    for line in (repeat_lines(rows, min_rate) if repeats else []) + arm_lines(rows):
        console.print(escape(line))
    if as_json:
        click.echo(
            json.dumps([build_trace(r, repeat=n) for r, n in results], indent=2, default=str)
        )
    _print_notes(console, results)
    spend = harness.spend
    if spend is not None and spend.reached:  # whatever the specs did: the run was cut short
        console.print(f"[red]{escape(spend.summary() or '')}[/]")
        sys.exit(EXIT_SPENDING_LIMIT)
    sys.exit(exit_status(rows, min_pass_rate=min_rate, regressed=regressed))


def _interrupted(console: Console, stop: KeyboardInterrupt, harness: Harness) -> None:
    """Ctrl-C: where the interrupted spec's work is, and the command that goes on."""
    run = InterruptedRun.of(stop)
    if run is None:
        console.print("[yellow]interrupted[/] (between specs: nothing was left half done)")
        return
    command = f"atom run {shlex.quote(display_path(run.spec.path))}"
    mode = harness.settings.record_mode
    command += f" --record-mode={mode}" if mode != "none" else ""
    resume = f"{command} --resume {shlex.quote(display_path(run.run_dir))}"
    for line in run.lines(command, resume):
        console.print(f"[yellow]{escape(line)}[/]")


def _harness(options: dict[str, Any], config_path: Path | None, files: list[Path]) -> Harness:
    """The harness for these options, unset ones resolved like pytest's (ini, config file);
    a config or setting that cannot be used is the file's fault, not the command line's.
    """
    try:
        return host_harness(
            options,
            config_path=config_path,
            spec_dirs={file.parent for file in files},
        )
    except (ConfigError, SettingsError) as err:
        raise ContentError(str(err)) from None


def _summary_rows(
    results: list[tuple[SpecResult, int | None]], gate: BaselineGate | None
) -> list[SummaryRow]:
    """The rows pytest's summary would show, with pytest's node ids (from its rootdir); a
    repeated run is told apart by `[rN]`. With a baseline, each run's deltas join its
    figures, as they join a pytest item's properties."""
    rootdir = pytest_rootdir()
    rows = []
    for r, n in results:
        nodeid = node_id(r.spec.path, r.spec.name, rootdir) + (f"[r{n}]" if n else "")
        props = result_properties(r)
        if gate is not None:
            props.update(gate.item_properties(nodeid, props, own=r.spec.baseline_tolerance))
        rows.append(SummaryRow.of(nodeid, props, r.outcome))
    return rows


def _print_notes(console: Console, results: list[tuple[SpecResult, int | None]]) -> None:
    """Drift and warnings last, after the summary, where they are not scrolled away."""
    for r, _ in results:
        for label, text in (("drift", r.drift), *(("warning", w) for w in r.warnings)):
            if text:
                console.print(escape(f"{label}: {r.spec.name}: {text}"))


def exit_status(
    rows: list[SummaryRow], *, min_pass_rate: float | None = None, regressed: bool = False
) -> int:
    """Each run's `Outcome.exit_status`, worst first: 2 when the machinery failed (harness,
    replay, or an upstream that never answered), so CI tells a broken setup from a failing
    spec; else 1 if any spec failed, else 0. A baseline regression fails the run; with a
    minimum pass rate the rates decide over single failed runs, as in a pytest session.
    """
    status = max((row.outcome.exit_status for row in rows), default=0)
    if status == 2:
        return 2
    if regressed:
        return 1
    if min_pass_rate is not None:
        return 1 if any(r.rate < min_pass_rate for r in pass_rates(rows)) else 0
    return status
