"""`atom run`: specs outside pytest, with live progress, through the plugin's own harness."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.markup import escape

from pytest_atom.baseline.compare import BaselineGate
from pytest_atom.baseline.measure import arm_lines, measured_lines, repeat_lines
from pytest_atom.checks.registry import CheckRegistry
from pytest_atom.cost.spend import EXIT_SPENDING_LIMIT
from pytest_atom.errors import (
    BaselineError,
    SettingsError,
    SpecError,
    SpendingLimitReached,
)
from pytest_atom.events import agent as events
from pytest_atom.inert import inert
from pytest_atom.paths import SPEC_SUFFIX, display_path, node_id
from pytest_atom.reports.html import report_row, spec_view, write_html
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.summary import (
    environment_lines,
    failed_tries_lines,
    pass_rates,
    sandbox_warning_lines,
    summary_table,
    summary_width,
)
from pytest_atom.reports.text import drift_line, tool_problem
from pytest_atom.reports.trace import build_trace
from pytest_atom.results import harness_events as hev
from pytest_atom.results.harness_events import AnyEvent
from pytest_atom.results.rows import SummaryRow, spec_key
from pytest_atom.results.spec_result import SpecResult
from pytest_atom.run.execution import HARNESS_ERRORS
from pytest_atom.run.harness import Harness, host_harness
from pytest_atom.run.interrupted import InterruptedRun
from pytest_atom.settings.options import OPTIONS, Option
from pytest_atom.settings.output_paths import output_path_errors
from pytest_atom.settings.project import find_ini, pytest_rootdir
from pytest_atom.settings.resolved import PARSERS, from_here, ini_note
from pytest_atom.spec.arms import select_arms, unknown_arms
from pytest_atom.spec.load import load_specs, spec_files
from pytest_atom.spec.types import Spec


def _shown(text: str) -> str:
    """Run text as `console.print` must get it: inert (`pytest_atom.inert`: the agent's
    words, tool output, a spec file's name may hold terminal control sequences, which rich
    passes through) and with rich's markup escaped, so ``[red]`` in it is text too."""
    return escape(inert(text))


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
            raise ContentError(inert(str(err))) from None
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
            console.print(f"[bold]{_shown(label)}[/] ({_shown(str(spec.path.name))})")
            try:
                result = harness.run(
                    spec, on_event=Progress(console, spec), repeat=number if repeat > 1 else None
                )
            except SpendingLimitReached as exc:
                console.print(f"  [yellow]{_shown(str(exc))}[/]")
                continue
            except HARNESS_ERRORS as exc:
                console.print(f"[red]Error:[/] {_shown(str(exc))}")
                sys.exit(2)
            results.append((result, number if repeat > 1 else None))
            if views is not None:
                views.append(spec_view(result, repeat=number if repeat > 1 else None))
            if not result.passed:
                console.print(_shown(result.report()))
    return results


class Progress:
    """Prints a spec run as it happens: attempts, iterations, tool calls, checks, verdict."""

    def __init__(self, console: Console, spec: Spec) -> None:
        self.console = console
        self.spec = spec
        self.iteration = 0
        self.calls: dict[str, tuple[str, Any]] = {}  # tool_use id -> (name, input)

    def __call__(self, event: AnyEvent) -> None:
        say = self.console.print
        if isinstance(event, hev.AttemptStarted):
            self.iteration = 0
            if self.spec.criteria and self.spec.attempts > 1:  # else no second attempt can come
                say(f"  [bold]attempt {event.attempt}/{event.attempts}[/]")
        elif isinstance(event, hev.ChecksRan):
            for check in event.checks:
                mark = "[green]PASS[/]" if check.passed else "[red]FAIL[/]"
                say(f"    {mark} {_shown(check.check.describe())}: {_shown(check.summary)}")
        elif isinstance(event, hev.StepStarted):
            say(f"  [bold]step {_shown(event.step)}[/] ({event.number}/{event.steps})")
        elif isinstance(event, hev.Planned):
            say(f"  [bold]{_shown(event.plan)}[/]")  # planner mode: the plan's steps
        elif isinstance(event, hev.StepCommitted):
            say(f"  [green]committed[/] step {_shown(event.step)} (a{event.attempt:02d})")
        elif isinstance(event, hev.RolledBack):
            say(f"  [yellow]rollback[/] from {_shown(event.step)} to {_shown(event.target)}")
        elif isinstance(event, hev.Decided):
            score = f", score {event.verdict.score:g}" if event.verdict else ""
            say(f"    decision: [bold]{event.decision}[/]{score}")
        elif not isinstance(event, (hev.SetupStarted, hev.PlanStarted)):
            self._agent(event)

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
            say(f"      [cyan]→ {_shown(event.name)}[/] {_shown(args[:120])}")
        elif isinstance(event, events.AssistantText) and not event.thinking:
            if event.text.strip():
                say(f"      [dim]{_shown(event.text.strip().splitlines()[0][:120])}[/]")
        elif isinstance(event, events.ToolResult):
            name, tool_input = self.calls.get(event.tool_use_id, ("?", None))
            line = tool_problem(name, tool_input, event.text, event.is_error)
            if line:
                say(f"      [red]✗ {_shown(line)}[/]")


if TYPE_CHECKING:
    _ParamType = click.ParamType[Any]
else:  # generic only from click 8.2; pyproject allows 8.1
    _ParamType = click.ParamType


class SettingType(_ParamType):
    """A setting's own parser (`pytest_atom.settings.resolved.PARSERS`) as a click type, as
    pytest's ``--atom-*`` options use it: a value is checked the same on both command
    lines, in the ini file and in `.atom/config.yaml`."""

    def __init__(self, option: Option) -> None:
        self.option = option
        self.name = option.kind

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return PARSERS[self.option.name](value)
        except ValueError as exc:
            self.fail(f"{exc}, not {value!r}", param, ctx)


def click_type(option: Option) -> _ParamType:
    """The click type of an option of the table: its choices, a path, or its parser."""
    if option.choices:
        return click.Choice(option.choices)
    if option.path:
        return click.Path(
            exists=option.exists,
            file_okay=option.path == "file",
            dir_okay=option.path == "dir",
            path_type=Path,
        )
    return SettingType(option)


def setting_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`atom run`'s options for every setting of the option table (`--NAME`, as pytest's
    `--atom-NAME`), with the same help."""
    for option in reversed([o for o in OPTIONS if o.command_line]):
        if option.kind == "flag":
            decorate = click.option(option.run_flag, option.name, is_flag=True, help=option.help)
        else:
            decorate = click.option(
                option.run_flag,
                option.name,
                type=click_type(option),
                default=None,
                # click names a path's kind (DIRECTORY, FILE) itself, as `atom run` always did
                metavar=None if option.path else option.metavar,
                help=option.help,
            )
        command = decorate(command)
    return command


@click.command("run")
@click.argument("specs", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@setting_options
@click.option(
    "--json", "as_json", is_flag=True, help="print the results as JSON traces, for scripts."
)
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="project config (default: .atom/config.yaml here or above).",
)
def run(specs: tuple[Path, ...], as_json: bool, config_path: Path | None, **given: Any) -> None:
    """Run specs outside pytest: the same specs, cassettes and verdicts as `pytest --atom`.

    Exit status: 0 when every spec passed (an xfail spec's expected failure passes), 1 when
    any failed (or regressed against --baseline, or fell below --min-pass-rate), 2 for usage
    or harness errors, for recordings that failed on their upstream and when --max-cost-usd
    stopped the run (as `claude plugin eval --max-cost-usd`), 130 when interrupted (Ctrl-C).
    """
    console = Console(stderr=as_json, highlight=False, soft_wrap=True)
    files = spec_files(specs)
    # An unset flag is unset (None), not false: a file may set it. Paths are taken from
    # here, as pytest takes its --atom-* paths from where it ran.
    options = from_here({k: None if v is False else v for k, v in given.items()}, Path.cwd())
    harness = _harness(options, config_path, files)
    errors = output_path_errors(
        harness.settings,
        harness.root,
        flag=lambda option: option.run_flag,
        given=lambda option: options.get(option.name) is not None,
    )
    if errors:  # before any spec runs, not a traceback once all of them have
        raise click.UsageError("\n".join(errors))
    try:
        gate = harness.baseline_gate()
    except BaselineError as err:
        raise ContentError(str(err)) from None
    html = harness.html
    console.print(f"[dim]seed {harness.settings.seed} (reproduce: --seed)[/]")
    ini = find_ini(harness.root)
    note = ini and ini_note(ini.values, display_path(ini.path))
    if note:
        console.print(f"[dim]{_shown(note)}[/]")
    views: list[dict[str, Any]] | None = [] if html else None  # built while run folders exist
    results = _run_selected(harness, files, console, views)
    harness.finish()
    rows = _summary_rows(results, gate)
    regressed = gate is not None and gate.finish(rows)
    _print_summary(console, harness, rows, gate, views)
    if as_json:
        click.echo(
            json.dumps([build_trace(r, repeat=n) for r, n in results], indent=2, default=str)
        )
    _print_notes(console, results)
    spend = harness.spend
    if spend is not None and spend.reached:  # whatever the specs did: the run was cut short
        console.print(f"[red]{_shown(spend.summary() or '')}[/]")
        sys.exit(EXIT_SPENDING_LIMIT)
    min_rate = harness.settings.min_pass_rate
    sys.exit(exit_status(rows, min_pass_rate=min_rate, regressed=regressed))


def _run_selected(
    harness: Harness, files: list[Path], console: Console, views: list[dict[str, Any]] | None
) -> list[tuple[SpecResult, int | None]]:
    """The specs of `files` in the selected arms, run; Ctrl-C ends the command with 130."""
    try:
        loaded = collect_specs(files, harness.registry())
        problem = unknown_arms(harness.settings.arms, (s.arm for s in loaded), "--arms")
        if problem:
            raise click.UsageError(problem)
        loaded = select_arms(loaded, harness.settings.arms)
        return _run_all(harness, loaded, console, views)
    except KeyboardInterrupt as stop:
        _interrupted(console, stop, harness)
        sys.exit(130)  # as a shell reports SIGINT: never 1, which means a spec failed


def _print_summary(
    console: Console,
    harness: Harness,
    rows: list[SummaryRow],
    gate: BaselineGate | None,
    views: list[dict[str, Any]] | None,
) -> None:
    """The summary table, the HTML report, failed tries, sandbox warnings, the baseline's
    comparison and the pass rates, in pytest's order."""
    for line in summary_table(rows, summary_width(console.is_terminal, console.width)):
        console.print(_shown(line))
    html = harness.html
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
        console.print(f"HTML report: {_shown(display_path(html))}")
    for line in failed_tries_lines(rows) + environment_lines(rows):
        console.print(_shown(line))
    for line in sandbox_warning_lines(rows):
        console.print(f"[yellow]{_shown(line)}[/]")
    if gate is not None:
        for line, red in gate.flagged_lines():
            style = "red" if red else "default"
            console.print(f"[{style}]{_shown(line)}[/]")
    min_rate = harness.settings.min_pass_rate
    repeats = harness.settings.repeat > 1 or min_rate is not None
    for line in (repeat_lines(rows, min_rate) if repeats else []) + arm_lines(rows):
        console.print(_shown(line))


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
        console.print(f"[yellow]{_shown(line)}[/]")


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
    except SettingsError as err:  # a ConfigError too
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
        drift = drift_line(r.drift)
        for label, text in (("drift", drift), *(("warning", w) for w in r.warnings)):
            if text:
                console.print(_shown(f"{label}: {r.spec.name}: {text}"))


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
