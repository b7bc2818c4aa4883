"""`atom bisect SPEC --good V1 --bad V2`: the first Claude Code release that changes how a
spec's cassette replays (`pytest_atom.agents.claude_code.bisect` searches; this module runs
its replays with the project's harness and shows it)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import click
from rich.console import Console

from atom_cli.common import ContentError
from atom_cli.progress import shown
from pytest_atom.agents.claude_code.bisect import (
    Bisection,
    ItemChange,
    Replay,
    ReplaySpec,
    bisect,
    max_replays,
)
from pytest_atom.errors import BisectError, SettingsError, SpecError
from pytest_atom.inert import inert
from pytest_atom.paths import display_path
from pytest_atom.replay.recording import cassette_path
from pytest_atom.run.harness import Harness, host_harness
from pytest_atom.spec.load import load_specs
from pytest_atom.spec.types import Spec

#: The exit status when the bad release replays as the good one: nothing to name.
NO_CHANGE = 1


@click.command("bisect")
@click.argument("spec", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--good",
    required=True,
    metavar="VERSION",
    help="a Claude Code release that replays the spec as expected (such as 2.1.197).",
)
@click.option(
    "--bad",
    required=True,
    metavar="VERSION",
    help="a later release that replays it otherwise (such as 2.1.332).",
)
@click.option("--json", "as_json", is_flag=True, help="print the answer as JSON, for scripts.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="project config (default: .atom/config.yaml here or above).",
)
def bisect_(spec: Path, good: str, bad: str, as_json: bool, config_path: Path | None) -> None:
    """Name the first Claude Code release after --good, up to --bad, that changes the
    outcome or the tool-call sequence of SPEC's cassette replay.

    The releases come from npm (`npm view @anthropic-ai/claude-code versions`, with your
    npm configuration); a binary search replays the spec with the few it needs, installing
    each that is not in the per-user cache as `atom setup --version` does. Replays never
    record and cost no tokens.

    Exit status: 0 when a release is named, 1 when --bad replays as --good does, 2 when
    the releases or the spec cannot be used.
    """
    console = Console(stderr=as_json, highlight=False, soft_wrap=True)
    try:
        harness = host_harness({}, config_path=config_path, spec_dirs={spec.parent})
        specs = replayable(spec, harness)
        found = bisect(spec, specs, good, bad, replayer(harness), watcher=_Progress(console))
    except (BisectError, SpecError, SettingsError) as err:
        raise ContentError(inert(str(err))) from None
    harness.finish()
    for line in answer_lines(found):
        console.print(shown(line))
    if as_json:
        click.echo(json.dumps(found.to_dict(), indent=2))
    sys.exit(0 if found.first_change else NO_CHANGE)


def replayable(spec_file: Path, harness: Harness) -> list[Spec]:
    """The specs of `spec_file`, each with a cassette (or a script) to replay; a spec with
    neither is a BisectError naming the cassette it lacks and how to record it."""
    specs = load_specs(spec_file, check_kinds=harness.registry().kinds())
    if not specs:
        raise BisectError(f"{display_path(spec_file)} holds no spec to bisect.")
    for spec in specs:
        cassette = cassette_path(spec)
        if spec.script is None and not cassette.is_file():
            raise BisectError(
                f"{display_path(spec_file)}: spec {spec.name!r} has no cassette "
                f"({display_path(cassette)}) to replay. Record one first: "
                f"atom run {display_path(spec_file)} --record-mode=once"
            )
    return specs


def replayer(harness: Harness) -> ReplaySpec:
    """A spec replayed with a given `claude` in the project's harness: never recording
    (`record_mode` none), and accepting a cassette another release recorded
    (`strict_version` off): the release is what is being varied."""
    from pytest_atom.run.spec_run import RunScope, run_spec

    settings = replace(harness.settings, record_mode="none", strict_version=False)
    scope = RunScope(harness.root, harness.config, harness.registry(), harness.spend)
    return lambda spec, binary: run_spec(
        spec, runs_dir=harness.runs_dir, settings=settings, claude_bin=binary, scope=scope
    )


class _Progress:
    """Each replay as it ends (and each install as it starts), one line per spec item."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def started(self, releases: Sequence[str]) -> None:
        self.console.print(
            f"Bisecting {len(releases)} Claude Code releases from {releases[0]} to "
            f"{releases[-1]}: at most {max_replays(len(releases))} replays"
        )

    def installing(self, version: str, folder: Path) -> None:
        self.console.print(f"  installing Claude Code {version} into {display_path(folder)}")

    def replayed(self, replay: Replay, good: Replay) -> None:
        said = "good" if replay is good else "same" if replay.behaves_as(good) else "changed"
        for n, item in enumerate(replay.items):
            head = f"{replay.version:<10} {said:<8}" if n == 0 else " " * 19
            calls = ", ".join(item.tool_calls) or "no tool calls"
            self.console.print(shown(f"  {head} {item.name}: {item.outcome} ({calls})"))


def answer_lines(found: Bisection) -> list[str]:
    """The answer, after the progress lines: the release named (or none), what changed in
    each item, and how many replays it took."""
    lines = []
    if found.first_change is None:
        lines.append(
            f"No release changes {found.spec_file}: {found.bad} replays it as {found.good} does."
        )
    else:
        lines.append(
            f"First release that changes {found.spec_file}: Claude Code {found.first_change} "
            f"({found.last_same} replays it as {found.good} does)."
        )
        lines += [f"  {line}" for change in found.changes for line in change_lines(change)]
    installed = ", ".join(found.installed) or "none"
    lines.append(
        f"{len(found.replays)} replays of {len(found.releases)} releases "
        f"(at most {max_replays(len(found.releases))}); installed: {installed}."
    )
    return lines


def change_lines(change: ItemChange) -> list[str]:
    """What changed in one item: its outcome (and why), its first differing tool call."""
    lines = []
    if change.outcome_before != change.outcome_after:
        lines.append(
            f"{change.name}: {change.outcome_before} → {change.outcome_after}: {change.why_after}"
        )
    if change.divergence_after:
        lines.append(f"{change.name}: {clipped(change.divergence_after)}")
    index = change.first_call_difference
    if index is not None:
        before = change.calls_before[index] if index < len(change.calls_before) else "nothing"
        after = change.calls_after[index] if index < len(change.calls_after) else "nothing"
        lines.append(
            f"{change.name}: tool call {index + 1} was {before}, is {after} "
            f"(before: {', '.join(change.calls_before) or 'none'}; "
            f"after: {', '.join(change.calls_after) or 'none'})"
        )
    return lines


def clipped(line: str, width: int = 160) -> str:
    """A long line (a divergence lists every tool offered) cut to `width`; --json has it whole."""
    return line if len(line) <= width else line[: width - 1] + "…"
