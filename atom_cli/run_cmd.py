"""`atom run`: specs outside pytest, with live progress: the click front end over the suite
run (`pytest_atom.suite.SuiteRun`), which loads, runs, summarises and decides the exit status.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from atom_cli.progress import ConsoleWatcher, shown
from pytest_atom.datasets.select import select_cases
from pytest_atom.errors import BaselineError, SettingsError, SpecError
from pytest_atom.inert import inert
from pytest_atom.paths import SPEC_SUFFIX, display_path
from pytest_atom.reports.summary import summary_width
from pytest_atom.reports.trace import build_trace
from pytest_atom.run.harness import Harness, host_harness
from pytest_atom.run.interrupted import InterruptedRun
from pytest_atom.settings.options import OPTIONS, Option
from pytest_atom.settings.output_paths import output_path_errors
from pytest_atom.settings.project import default_paths, find_ini
from pytest_atom.settings.resolved import from_here, ini_note
from pytest_atom.spec.load import spec_files
from pytest_atom.spec.types import Spec
from pytest_atom.suite.ending import EXIT_INTERRUPTED
from pytest_atom.suite.suite_run import ATOM_RUN, SuiteRun, load_files

if TYPE_CHECKING:
    from pytest_atom.checks.registry import CheckRegistry
    from pytest_atom.suite.summary import Summary


class ContentError(click.ClickException):
    """A spec or config file that cannot be used: exit 2 like a usage error, but without
    the usage banner, since the command line itself was right."""

    exit_code = 2


def collect_specs(files: list[Path], registry: CheckRegistry | None = None) -> list[Spec]:
    """The specs in `files` (with the project's check kinds); a malformed one is a
    ContentError, and finding none a usage error."""
    try:
        specs = load_files(files, registry.kinds() if registry else ())
    except SpecError as err:
        raise ContentError(inert(str(err))) from None
    if not specs:
        raise click.UsageError(f"no *{SPEC_SUFFIX} specs in {', '.join(map(str, files))}")
    return specs


if TYPE_CHECKING:
    _ParamType = click.ParamType[Any]
else:  # generic only from click 8.2; pyproject allows 8.1
    _ParamType = click.ParamType


class SettingType(_ParamType):
    """A setting's own parser (its row's, `pytest_atom.settings.options`) as a click type, as
    pytest's ``--atom-*`` options use it: a value is checked the same on both command
    lines, in the ini file and in `.atom/config.yaml`."""

    def __init__(self, option: Option) -> None:
        self.option = option
        self.name = option.kind

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            return self.option.parse(value)
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
@click.argument("specs", nargs=-1, type=click.Path(exists=True, path_type=Path))
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
@click.option(
    "--case",
    "cases",
    multiple=True,
    metavar="ID",
    help="run only this case of a spec with `cases:` (repeat for more).",
)
def run(
    specs: tuple[Path, ...],
    as_json: bool,
    config_path: Path | None,
    cases: tuple[str, ...],
    **given: Any,
) -> None:
    """Run specs outside pytest: the same specs, cassettes and verdicts as `pytest --atom`.

    Without SPECS, what `pytest --atom` collects from this folder: `paths:` of
    `.atom/config.yaml` (from a folder inside one of them, that folder's specs).

    Exit status: 0 when every spec passed (an xfail spec's expected failure passes; a spec
    with `pass_at_least:`, --pass-at-least or --min-pass-rate: when enough of its repeats
    passed), 1 when any failed (or regressed against --baseline), 2 for usage
    or harness errors, for recordings that failed on their upstream and when --max-cost-usd
    stopped the run (as `claude plugin eval --max-cost-usd`), 130 when interrupted (Ctrl-C).
    """
    console = Console(stderr=as_json, highlight=False, soft_wrap=True)
    if not specs:  # what `pytest --atom` would collect from here
        from atom_cli.validate_cmd import atom_paths

        specs = tuple(default_paths(Path.cwd(), atom_paths(quiet=True, argument="SPECS")))
    files = spec_files(specs)
    if not files:
        raise click.UsageError(f"no *{SPEC_SUFFIX} specs in {', '.join(map(display_path, specs))}")
    # An unset flag is unset (None), not false: a file may set it. Paths are taken from
    # here, as pytest takes its --atom-* paths from where it ran.
    options = from_here({k: None if v is False else v for k, v in given.items()}, Path.cwd())
    suite = _suite(_harness(options, config_path, files), options)
    harness = suite.harness
    console.print(f"[dim]seed {harness.settings.seed} (reproduce: --seed)[/]")
    ini = find_ini(harness.root)
    note = ini and ini_note(ini.values, display_path(ini.path))
    if note:
        console.print(f"[dim]{shown(note)}[/]")
    _run_selected(suite, files, console, cases)
    if suite.aborted:  # the harness failed: the run stopped there
        console.print(f"[red]Error:[/] {shown(suite.aborted)}")
        sys.exit(suite.exit_status())
    suite.finish()
    suite.compare()
    said = _print_summary(console, suite)
    if as_json:
        traces = [build_trace(r, repeat=n) for r, n in suite.results]
        click.echo(json.dumps(traces, indent=2, default=str))
    for line in said.result_notes:  # last, after the summary, where they are not scrolled away
        console.print(shown(line))
    if said.spending:  # whatever the specs did: the run was cut short
        console.print(f"[red]{shown(said.spending)}[/]")
    sys.exit(suite.exit_status())


def _suite(harness: Harness, options: dict[str, Any]) -> SuiteRun:
    """The suite run, once its output paths are known to be writable (before any spec
    runs, not a traceback once all of them have) and its baseline readable."""
    errors = output_path_errors(
        harness.settings,
        harness.root,
        flag=lambda option: option.run_flag,
        given=lambda option: options.get(option.name) is not None,
    )
    if errors:
        raise click.UsageError("\n".join(errors))
    try:
        return SuiteRun(harness, ATOM_RUN)
    except BaselineError as err:
        raise ContentError(str(err)) from None


def _run_selected(
    suite: SuiteRun, files: list[Path], console: Console, cases: tuple[str, ...] = ()
) -> None:
    """The specs of `files` in the selected arms (and cases), run; Ctrl-C ends the command
    with 130."""
    try:
        loaded, problem = select_cases(collect_specs(files, suite.harness.registry()), cases)
        if problem:
            raise click.UsageError(problem)
        loaded = suite.collected(loaded)
        problem = suite.arms_problem()
        if problem:
            raise click.UsageError(problem)
        loaded, _, note = suite.last_failed(loaded, lambda spec: spec)
        if note:
            console.print(shown(note))
        suite.run_specs(loaded, ConsoleWatcher(console))
    except KeyboardInterrupt as stop:
        _interrupted(console, stop, suite.harness)
        sys.exit(EXIT_INTERRUPTED)


def _print_summary(console: Console, suite: SuiteRun) -> Summary:
    """The summary table, the HTML report, failed tries, sandbox warnings, the baseline's
    comparison and the pass rates, in pytest's order; the summary, for what follows."""
    said = suite.summary(summary_width(console.is_terminal, console.width))
    for line in said.table:
        console.print(shown(line))
    page = suite.write_html()
    if page is not None:
        console.print(f"HTML report: {shown(display_path(page))}")
    for line in said.tries + said.criteria:
        console.print(shown(line))
    for line in said.sandbox:
        console.print(f"[yellow]{shown(line)}[/]")
    if said.history_error:
        console.print(f"[red]{shown(said.history_error)}[/]")
    for line, red in said.baseline or []:
        style = "red" if red else "default"
        console.print(f"[{style}]{shown(line)}[/]")
    for line in (said.rates or []) + said.arms + said.cases:
        console.print(shown(line))
    return said


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
        console.print(f"[yellow]{shown(line)}[/]")


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
