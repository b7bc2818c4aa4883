"""`atom run`'s live progress: each spec run as it happens (attempts, iterations, tool
calls, checks, verdict), printed with rich. `ConsoleWatcher` is the suite run's `Watcher`
(`pytest_atom.suite.suite_run`); `Progress` follows one run's events."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape

from pytest_atom.events import agent as events
from pytest_atom.inert import inert
from pytest_atom.reports.text import tool_problem
from pytest_atom.results import harness_events as hev
from pytest_atom.results.harness_events import AnyEvent
from pytest_atom.results.spec_result import SpecResult
from pytest_atom.spec.types import Spec

__all__ = ["ConsoleWatcher", "Progress", "shown"]


def shown(text: str) -> str:
    """Run text as `console.print` must get it: inert (`pytest_atom.inert`: the agent's
    words, tool output, a spec file's name may hold terminal control sequences, which rich
    passes through) and with rich's markup escaped, so ``[red]`` in it is text too."""
    return escape(inert(text))


class ConsoleWatcher:
    """`atom run`'s view of the suite's runs: a line as each starts, its `Progress`, why
    one did not start, and a failed run's report."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def started(self, spec: Spec, label: str) -> Callable[[AnyEvent], None]:
        self.console.print(f"[bold]{shown(label)}[/] ({shown(str(spec.path.name))})")
        return Progress(self.console, spec)

    def not_run(self, reason: str) -> None:
        self.console.print(f"  [yellow]{shown(reason)}[/]")

    def finished(self, result: SpecResult) -> None:
        if not result.passed:
            self.console.print(shown(result.report()))


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
            say(f"      [cyan]→ {shown(event.name)}[/] {shown(args[:120])}")
        elif isinstance(event, events.AssistantText) and not event.thinking:
            if event.text.strip():
                say(f"      [dim]{shown(event.text.strip().splitlines()[0][:120])}[/]")
        elif isinstance(event, events.ToolResult):
            name, tool_input = self.calls.get(event.tool_use_id, ("?", None))
            line = tool_problem(name, tool_input, event.text, event.is_error)
            if line:
                say(f"      [red]✗ {shown(line)}[/]")
