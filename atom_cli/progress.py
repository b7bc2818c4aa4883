"""`atom run`'s view of the pytest session it launches (`atom_cli.run_cmd`): the live progress
of each spec run (attempts, iterations, tool calls, checks, verdict), then the suite's
summary, printed with rich.

`RunView` is a pytest plugin: it silences pytest's own terminal output, watches the suite
run (`pytest_atom.suite.SuiteRun.watcher`, which the spec items feed each run's events),
selects `--case`, and lays out the suite's `Summary` at the session's end. It decides no
gate and no exit status: the session's (`SuiteRun.exit_status`) is the one `atom run`
maps to its own codes. `Progress` follows one run's events.
"""

from __future__ import annotations

import io
import json
import re
import shlex
from collections.abc import Callable, Generator, Sequence
from typing import Any

import click
import pytest
from _pytest._io import TerminalWriter
from rich.console import Console
from rich.markup import escape

from pytest_atom import events
from pytest_atom.datasets.select import select_cases
from pytest_atom.inert import inert
from pytest_atom.paths import display_path
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.reports.phrases import drift_line
from pytest_atom.reports.summary import summary_width
from pytest_atom.reports.text import tool_problem
from pytest_atom.reports.trace import build_trace
from pytest_atom.results import harness_events as hev
from pytest_atom.results.outcome import Outcome
from pytest_atom.results.spec_result import SpecResult
from pytest_atom.run.interrupted import InterruptedRun
from pytest_atom.settings.options import OPTIONS
from pytest_atom.settings.project import find_ini
from pytest_atom.settings.resolved import ini_note
from pytest_atom.spec.types import Spec
from pytest_atom.suite.suite_run import SuiteRun
from pytest_atom.words import Scrubbed, shorten

#: How much of a tool call's arguments or of the agent's words a progress line shows.
LINE = 120


def shown(text: str) -> str:
    """Run text as `console.print` must get it: inert (`pytest_atom.inert`: the agent's
    words, tool output, a spec file's name may hold terminal control sequences, which rich
    passes through) and with rich's markup escaped, so ``[red]`` in it is text too."""
    return escape(inert(text))


class RunView:
    """`atom run`'s plugin over the pytest session it launched (the module's docstring).

    `machinery`: a run the harness could not make (a spec file that does not load, a replay
    that diverged, an upstream that failed), which `atom run` ends with 2, not 1.
    """

    def __init__(self, console: Console, *, cases: Sequence[str] = (), as_json: bool = False):
        self.console = console
        self.cases = tuple(cases)
        self.as_json = as_json
        self.results: list[tuple[SpecResult, int | None]] = []
        self.machinery = False
        self.interrupted = False  # Ctrl-C stopped the session
        self.stopped: InterruptedRun | None = None  # the spec run it stopped, if one
        self.suite: SuiteRun | None = None

    # --- the session starts ----------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_cmdline_main(self, config: pytest.Config) -> Generator[None, Any, Any]:
        """The session; a usage error (a config file, an output path, an arm no spec has)
        said as `atom run`'s others are, in its option names (`own_words`)."""
        try:
            return (yield)
        except pytest.UsageError as err:
            click.echo(f"Error: {inert(own_words(str(err)))}", err=True)
            return pytest.ExitCode.USAGE_ERROR

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        """After pytest-atom's own configure: its suite run is there to watch. pytest's
        terminal output goes nowhere: what the user sees is this plugin's."""
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter._tw = TerminalWriter(io.StringIO())
        # By the session plugin's name, not its stash key or class: a host that re-imports
        # pytest-atom (pytester, after each in-process run) has new ones.
        atom = config.pluginmanager.get_plugin("atom-session")
        suite: SuiteRun | None = getattr(atom, "suite", None)
        if suite is None:
            return
        self.suite = suite
        suite.watcher = self
        suite.history_kind = "atom run"
        say = self.console.print
        say(f"[dim]seed {suite.harness.settings.seed} (reproduce: --seed)[/]")
        ini = find_ini(suite.harness.root)
        note = ini and ini_note(ini.values, display_path(ini.path))
        if note:
            say(f"[dim]{shown(note)}[/]")

    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """``--case ID``: only that case's spec items, through pytest's deselect hook; an id
        no collected spec has is a usage error, so a typo never quietly runs nothing."""
        if not self.cases:
            return
        specs: list[Spec] = [item.spec for item in items if hasattr(item, "spec")]  # AtomItem
        _, problem = select_cases(specs, self.cases)
        if problem:
            raise pytest.UsageError(problem)
        kept: list[pytest.Item] = []
        dropped: list[pytest.Item] = []
        for item in items:
            spec = getattr(item, "spec", None)
            (kept if spec is None or spec.case in self.cases else dropped).append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """What ``--last-failed`` selected, as pytest's collection report says it."""
        atom = session.config.pluginmanager.get_plugin("atom-session")
        note = getattr(atom, "last_failed_note", "")
        if note:
            self.console.print(shown(note))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.machinery = True
            self.console.print(f"[red]Error:[/] {shown(report.longreprtext.strip())}")

    # --- each spec run (`pytest_atom.suite.suite_run.Watcher`) ------------------------------

    def started(self, spec: Spec, label: str) -> Callable[[hev.AnyEvent], None]:
        self.console.print(f"[bold]{shown(label)}[/] ({shown(str(spec.path.name))})")
        return Progress(self.console, spec)

    def not_run(self, reason: str) -> None:
        self.console.print(f"  [yellow]{shown(own_words(reason))}[/]")

    def could_not_run(self, problem: str) -> None:
        self.machinery = True
        self.console.print(f"[red]Error:[/] {shown(problem)}")

    def finished(self, result: SpecResult, repeat: int | None) -> None:
        self.results.append((result, repeat))
        if not result.passed:
            self.console.print(shown(result.report()))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """A spec file that does not load fails its item at set-up: its report says why. A
        run whose outcome is the machinery's (a replay that diverged, an upstream that
        failed) ends `atom run` with 2."""
        if not report.failed:
            return
        outcome = Outcome.from_properties(dict(report.user_properties))
        if report.when == "setup":
            self.machinery = True
            self.console.print(f"[red]Error:[/] {shown(report.longreprtext.strip())}")
        elif outcome is None or outcome.exit_status > 1:
            self.machinery = True

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        """Ctrl-C; not the session stopping itself (an upstream no spec can record from),
        which pytest reports by the same hook."""
        if isinstance(excinfo.value, (pytest.Session.Interrupted, pytest.Session.Failed)):
            return
        self.interrupted = True
        self.stopped = InterruptedRun.of(excinfo.value)

    # --- the session ends ------------------------------------------------------------------

    @pytest.hookimpl(wrapper=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> Generator[None, None, None]:
        """After every other session-finish hook (the suite finished, the HTML page and the
        history written): the summary, the traces with ``--json``, then the notes."""
        yield
        suite = self.suite
        if suite is None:
            return
        if self.interrupted:
            self._interrupted(suite)
            return
        if not suite.rows:
            if suite.history_error:
                self.console.print(f"[red]{shown(suite.history_error)}[/]")
            return
        self.print_summary(suite)

    def print_summary(self, suite: SuiteRun) -> None:
        """The summary table, the HTML report, failed tries, sandbox warnings, the
        baseline's comparison and the pass rates, in pytest's order; the traces and each
        run's drift and warnings last, where they are not scrolled away."""
        say = self.console.print
        said = suite.summary(summary_width(self.console.is_terminal, self.console.width))
        for line in said.table:
            say(shown(line))
        for what, path in suite.written:
            say(f"{what}: {shown(display_path(path))}")
        for line in said.tries + said.criteria:
            say(shown(line))
        for line in said.sandbox:
            say(f"[yellow]{shown(line)}[/]")
        for line in [said.results_error, said.history_error]:
            if line:
                say(f"[red]{shown(line)}[/]")
        for line, red in said.baseline or []:
            say(f"[{'red' if red else 'default'}]{shown(line)}[/]")
        for line in (said.rates or []) + said.arms + said.cases + said.triggers:
            say(shown(line))
        if self.as_json:
            traces = [build_trace(r, repeat=n) for r, n in self.results]
            click.echo(json.dumps(traces, indent=2, default=str))
        for line in result_notes(self.results):
            say(shown(line))
        if said.spending:  # whatever the specs did: the run was cut short
            say(f"[red]{shown(own_words(said.spending))}[/]")

    def _interrupted(self, suite: SuiteRun) -> None:
        """Ctrl-C: where the interrupted spec's work is, and the command that goes on."""
        run = self.stopped
        if run is None:
            self.console.print("[yellow]interrupted[/] (between specs: nothing was left half done)")
            return
        command = f"atom run {shlex.quote(display_path(run.spec.path))}"
        mode = suite.harness.settings.record_mode
        command += f" --record-mode={mode}" if mode != "none" else ""
        resume = f"{command} --resume {shlex.quote(display_path(run.run_dir))}"
        for line in run.lines(command, resume):
            self.console.print(f"[yellow]{shown(line)}[/]")


#: pytest's spelling of each setting's option, and `atom run`'s.
_RUN_FLAGS = {o.pytest_flag: o.run_flag for o in OPTIONS}
#: Longest first: none is cut short by another.
_PYTEST_FLAGS = re.compile(
    "|".join(re.escape(f) + r"(?![\w-])" for f in sorted(_RUN_FLAGS, key=len, reverse=True))
)


def own_words(text: str) -> str:
    """`text` with each setting's pytest option (``--atom-html``) named as `atom run` spells
    it (``--html``): the session's messages are pytest's, the user typed `atom run`'s."""
    return _PYTEST_FLAGS.sub(lambda found: _RUN_FLAGS[found.group(0)], text)


def result_notes(results: Sequence[tuple[SpecResult, int | None]]) -> list[str]:
    """Each run's drift and warnings, by spec name."""
    lines = []
    for result, _ in results:
        drift = drift_line(result.drift)
        for label, text in (("drift", drift), *(("warning", w) for w in result.warnings)):
            if text:
                lines.append(f"{label}: {result.spec.name}: {text}")
    return lines


class Progress:
    """Prints a spec run as it happens: attempts, iterations, tool calls, checks, verdict.

    The agent's words and its tool calls' arguments are scrubbed before they are cut to a
    line: they may quote a secret the spec passes (`pass_env:`, `env:`), which a cut made
    first could split past the scrubber. The scrubber is made at each iteration's start,
    once the run has told this process its secrets (`replay.scrub.remember_spec_secrets`).
    """

    def __init__(self, console: Console, spec: Spec) -> None:
        self.console = console
        self.spec = spec
        self.iteration = 0
        self.calls: dict[str, tuple[str, Any]] = {}  # tool_use id -> (name, input)
        self.scrubber: Scrubber | None = None

    def __call__(self, event: hev.AnyEvent) -> None:
        say = self.console.print
        if isinstance(event, hev.AttemptStarted):
            self.iteration = 0
            if self.spec.criteria and self.spec.attempts > 1:  # else no second attempt can come
                say(f"  [bold]attempt {event.attempt}/{event.attempts}[/]")
        elif isinstance(event, hev.ChecksRan):
            for check in event.checks:
                mark = "[green]PASS[/]" if check.passed else "[red]FAIL[/]"
                say(f"    {mark} {shown(check.check.describe())}: {shown(check.summary)}")
        elif isinstance(event, hev.StepStarted):
            say(f"  [bold]step {shown(event.step)}[/] ({event.number}/{event.steps})")
        elif isinstance(event, hev.Planned):
            say(f"  [bold]{shown(event.plan)}[/]")  # planner mode: the plan's steps
        elif isinstance(event, hev.StepCommitted):
            say(f"  [green]committed[/] step {shown(event.step)} (a{event.attempt:02d})")
        elif isinstance(event, hev.RolledBack):
            say(f"  [yellow]rollback[/] from {shown(event.step)} to {shown(event.target)}")
        elif isinstance(event, hev.Decided):
            score = f", score {event.verdict.score:g}" if event.verdict else ""
            advisory = len(event.verdict.advisory) if event.verdict else 0
            # criteria whose judge is not calibrated: their verdicts decided nothing
            noun = "criterion" if advisory == 1 else "criteria"
            score += f" ({advisory} advisory {noun}, not gating)" if advisory else ""
            say(f"    decision: [bold]{event.decision}[/]{score}")
        elif not isinstance(event, (hev.SetupStarted, hev.PlanStarted)):
            self._agent(event)

    def scrubbed(self, text: str) -> Scrubbed:
        if self.scrubber is None:
            self.scrubber = Scrubber()
        return self.scrubber.scrub(text)

    def line(self, text: str) -> str:
        """`text` scrubbed, then cut to one progress line."""
        return shorten(self.scrubbed(text), LINE)

    def _agent(self, event: events.Event) -> None:
        say = self.console.print
        if isinstance(event, events.SessionStarted):
            self.iteration += 1
            self.scrubber = Scrubber()
            user = self.spec.user  # a conversation: each agent turn answers a user message
            if user is not None:
                say(f"    turn {self.iteration}/{user.max_turns}")
            else:
                say(f"    iteration {self.iteration}/{self.spec.max_iterations}")
        elif isinstance(event, events.ToolCall) and not event.server:
            self.calls[event.id] = (event.name, event.input)
            args = json.dumps(event.input or {}, ensure_ascii=False)
            say(f"      [cyan]→ {shown(event.name)}[/] {shown(self.line(args))}")
        elif isinstance(event, events.AssistantText) and not event.thinking:
            if event.text.strip():
                first = event.text.strip().splitlines()[0]
                say(f"      [dim]{shown(self.line(first))}[/]")
        elif isinstance(event, events.ToolResult):
            name, tool_input = self.calls.get(event.tool_use_id, ("?", None))
            problem = tool_problem(name, tool_input, event.text, event.is_error)
            if problem:
                say(f"      [red]✗ {shown(self.scrubbed(problem))}[/]")
