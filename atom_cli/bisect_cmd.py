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

from atom_cli.common import ContentError, config_option
from atom_cli.progress import shown
from pytest_atom.agents.claude_code.bisect import (
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
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import load_specs

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
@config_option
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
    for line in found.lines():
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
