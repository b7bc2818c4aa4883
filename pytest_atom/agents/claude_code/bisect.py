"""`atom bisect`: the first Claude Code release that changes how a spec's cassette replays.

A cassette pins the model's side of a session, so what a new Claude Code release changes
shows when the cassette is replayed with it. npm's list of releases names the candidates
between a good release and a bad one; a binary search replays with as few as it can,
installing each as `atom setup --version` does. Running a replay is the caller's.

As with `git bisect`, the answer is a pair of neighbours: the last release that replays as
the good one does and the first that does not. Replays never record and accept a cassette
recorded with another release: the release is what is being varied.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pytest_atom.agents.claude_code.cli import NPM_PACKAGE, cached_claude, install_command
from pytest_atom.errors import BisectError, HarnessError
from pytest_atom.paths import display_path
from pytest_atom.results.spec_result import SpecResult
from pytest_atom.spec.types import Spec

#: Replays one spec with the `claude` at a path (never recording, any release's cassette).
ReplaySpec = Callable[[Spec, Path], SpecResult]
#: The npm command that lists every published release of Claude Code, oldest first.
VERSIONS_COMMAND = ("npm", "view", NPM_PACKAGE, "versions", "--json")
#: A release version: ``2.1.332`` (pre-releases such as ``2.2.0-beta.1`` are left out).
_RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")


@dataclass(frozen=True)
class ItemReplay:
    """One spec item replayed with one release: what bisect compares (`behaviour`) and why."""

    name: str
    outcome: str  # passed, failed, error, upstream error, xfailed or xpassed
    why: str
    tool_calls: tuple[str, ...]
    run_dir: str
    #: The first request the replay could not match (None: all matched).
    divergence: str | None = None

    @property
    def behaviour(self) -> tuple[str, tuple[str, ...]]:
        return self.outcome, self.tool_calls


@dataclass(frozen=True)
class Replay:
    """The spec file's items replayed with one release; `installed`: by this bisect."""

    version: str
    installed: bool
    items: tuple[ItemReplay, ...]

    def behaves_as(self, other: Replay) -> bool:
        return [i.behaviour for i in self.items] == [i.behaviour for i in other.items]


@dataclass(frozen=True)
class ItemChange:
    """How an item replayed with the first changing release differs from the good one."""

    name: str
    outcome_before: str
    outcome_after: str
    why_after: str
    calls_before: tuple[str, ...]
    calls_after: tuple[str, ...]
    divergence_after: str | None = None

    @property
    def first_call_difference(self) -> int | None:
        """The index of the first tool call that differs; None when both call the same tools."""
        if self.calls_before == self.calls_after:
            return None
        pairs = zip(self.calls_before, self.calls_after, strict=False)
        same = next((n for n, (a, b) in enumerate(pairs) if a != b), None)
        return same if same is not None else min(len(self.calls_before), len(self.calls_after))

    def lines(self) -> list[str]:
        lines = []
        if self.outcome_before != self.outcome_after:
            lines.append(
                f"{self.name}: {self.outcome_before} → {self.outcome_after}: {self.why_after}"
            )
        said = self.divergence_after or ""  # it lists every tool offered: --json has it whole
        if said:
            lines.append(f"{self.name}: {said if len(said) <= 160 else said[:159] + '…'}")
        index = self.first_call_difference
        if index is not None:
            before, after = self.calls_before, self.calls_after
            lines.append(
                f"{self.name}: tool call {index + 1} was "
                f"{before[index] if index < len(before) else 'nothing'}, is "
                f"{after[index] if index < len(after) else 'nothing'} "
                f"(before: {', '.join(before) or 'none'}; after: {', '.join(after) or 'none'})"
            )
        return lines


@dataclass(frozen=True)
class Bisection:
    """A bisection's answer: `first_change` and `last_same` are None when the bad release
    replays as the good one does."""

    spec_file: str
    good: str
    bad: str
    releases: tuple[str, ...]
    replays: tuple[Replay, ...]
    first_change: str | None
    last_same: str | None
    changes: tuple[ItemChange, ...]

    @property
    def installed(self) -> tuple[str, ...]:
        return tuple(r.version for r in self.replays if r.installed)

    def lines(self) -> list[str]:
        """The answer `atom bisect` prints after its progress."""
        if self.first_change is None:
            lines = [
                f"No release changes {self.spec_file}: {self.bad} replays it as {self.good} does."
            ]
        else:
            lines = [
                f"First release that changes {self.spec_file}: Claude Code {self.first_change} "
                f"({self.last_same} replays it as {self.good} does).",
                *(f"  {line}" for change in self.changes for line in change.lines()),
            ]
        installed = ", ".join(self.installed) or "none"
        lines.append(
            f"{len(self.replays)} replays of {len(self.releases)} releases "
            f"(at most {max_replays(len(self.releases))}); installed: {installed}."
        )
        return lines

    def to_dict(self) -> dict[str, Any]:
        """The JSON `atom bisect --json` prints."""
        return {
            "spec_file": self.spec_file,
            "good": self.good,
            "bad": self.bad,
            "releases": list(self.releases),
            "max_replays": max_replays(len(self.releases)),
            "replays": [_replay_dict(r, self.replays[0]) for r in self.replays],
            "installed": list(self.installed),
            "first_change": self.first_change,
            "last_same": self.last_same,
            "changes": [
                {
                    "name": c.name,
                    "outcome": [c.outcome_before, c.outcome_after],
                    "why": c.why_after,
                    "tool_calls": [list(c.calls_before), list(c.calls_after)],
                    "first_call_difference": c.first_call_difference,
                    "divergence": c.divergence_after,
                }
                for c in self.changes
            ],
        }


def _replay_dict(replay: Replay, good: Replay) -> dict[str, Any]:
    return {
        "version": replay.version,
        "installed": replay.installed,
        "same_as_good": replay.behaves_as(good),
        "items": [
            {
                "name": i.name,
                "outcome": i.outcome,
                "why": i.why,
                "tool_calls": list(i.tool_calls),
                "divergence": i.divergence,
                "run_dir": i.run_dir,
            }
            for i in replay.items
        ],
    }


class Watcher(Protocol):
    """What a front end shows as a bisection goes (`atom bisect`'s progress lines)."""

    def started(self, releases: Sequence[str]) -> None: ...

    def installing(self, version: str, folder: Path) -> None: ...

    def replayed(self, replay: Replay, good: Replay) -> None:
        """`replay` is done (`good`: the good release's, itself for the first)."""


def max_replays(releases: int) -> int:
    """How many replays a bisection of `releases` (both ends included) takes at most."""
    return 2 + math.ceil(math.log2(releases - 1)) if releases > 2 else releases


def release_key(version: str) -> tuple[int, int, int]:
    """``2.1.332`` as numbers, for ordering (npm's list is by publication, not by number)."""
    found = _RELEASE.match(version)
    if found is None:
        raise BisectError(f"{version!r} is not a Claude Code release version (such as 2.1.332)")
    return int(found[1]), int(found[2]), int(found[3])


def npm_versions() -> list[str]:
    """Every published Claude Code version, from npm (`VERSIONS_COMMAND`)."""
    done = _npm(VERSIONS_COMMAND, "lists and installs", "atom setup", timeout=300)
    if done.returncode != 0:
        raise BisectError(
            f"`{' '.join(VERSIONS_COMMAND)}` failed (exit {done.returncode}):\n"
            f"{_tail(done.stderr or done.stdout)}\nCheck npm's registry and network settings."
        )
    try:
        versions = json.loads(done.stdout)
    except ValueError:
        versions = None
    if isinstance(versions, str):  # npm prints one version as a bare string
        versions = [versions]
    if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
        raise BisectError(
            f"`{' '.join(VERSIONS_COMMAND)}` did not print a JSON list of versions:\n"
            f"{_tail(done.stdout)}"
        )
    return versions


def releases_between(versions: Sequence[str], good: str, bad: str) -> tuple[str, ...]:
    """The releases from `good` to `bad`, both included, in version order; pre-releases
    between them are left out. Each end must be a published release, good the older."""
    published = {v for v in versions if _RELEASE.match(v)}
    for flag, version in (("--good", good), ("--bad", bad)):
        release_key(version)
        if version not in published:
            raise BisectError(
                f"{flag} {version}: npm lists no such Claude Code release "
                f"({_known(sorted(published, key=release_key))}); give a listed version."
            )
    low, high = release_key(good), release_key(bad)
    if low >= high:
        raise BisectError(
            f"--good {good} is not older than --bad {bad}: give the release that replays "
            "as expected as --good and the later one that does not as --bad."
        )
    return tuple(sorted((v for v in published if low <= release_key(v) <= high), key=release_key))


def search(
    releases: Sequence[str], replay: Callable[[str], Replay]
) -> tuple[tuple[Replay, ...], int | None]:
    """Binary search over `releases` (good first, bad last): the replays made, in order,
    and the index of the first release that does not replay as the good one (None when
    the bad one does)."""
    good, bad = replay(releases[0]), replay(releases[-1])
    made = [good, bad]
    if bad.behaves_as(good):
        return tuple(made), None
    same, changed = 0, len(releases) - 1
    while changed - same > 1:
        middle = (same + changed) // 2
        probe = replay(releases[middle])
        made.append(probe)
        if probe.behaves_as(good):
            same = middle
        else:
            changed = middle
    return tuple(made), changed


def changes_between(good: Replay, other: Replay) -> tuple[ItemChange, ...]:
    """The items of `other` that end otherwise or call other tools than in `good`."""
    before = {item.name: item for item in good.items}
    changes = []
    for item in other.items:
        was = before.get(item.name)
        if was is None or was.behaviour == item.behaviour:
            continue
        changes.append(
            ItemChange(
                item.name,
                was.outcome,
                item.outcome,
                item.why,
                was.tool_calls,
                item.tool_calls,
                item.divergence,
            )
        )
    return tuple(changes)


def release_binary(version: str, watcher: Watcher | None = None) -> tuple[Path, bool]:
    """The `claude` of release `version` (installed into the cache if missing), and whether
    it was installed now."""
    binary = cached_claude(version)
    if binary.exists():
        return binary, False
    folder = binary.parents[2]
    if watcher is not None:
        watcher.installing(version, folder)
    done = _npm(install_command(version), "installs", "atom setup --version")
    if done.returncode != 0 or not binary.exists():
        raise BisectError(
            f"npm could not install Claude Code {version} into {display_path(folder)} "
            f"(exit {done.returncode}):\n{_tail(done.stderr or done.stdout)}\n"
            f"Try `atom setup --version {version}` to see npm's whole output."
        )
    return binary, True


def tool_calls(result: SpecResult) -> tuple[str, ...]:
    """The executor's tool calls in order, over every attempt (and step)."""
    return tuple(call.name for a in result.all_attempts for r in a.records for call in r.tool_calls)


def replay_with(
    specs: Sequence[Spec], replay: ReplaySpec, version: str, watcher: Watcher | None = None
) -> Replay:
    """`specs` replayed with release `version` (installed first if need be)."""
    binary, installed = release_binary(version, watcher)
    items = []
    for spec in specs:
        try:
            result = replay(spec, binary)
        except (HarnessError, OSError) as exc:
            raise BisectError(
                f"{spec.name} could not be replayed with Claude Code {version}: {exc}"
            ) from exc
        outcome, diverged = result.outcome, result.divergences
        items.append(
            ItemReplay(
                spec.name,
                outcome.label,
                outcome.why,
                tool_calls(result),
                str(result.run_dir),
                diverged[0].detail.partition("\n")[0] if diverged else None,
            )
        )
    return Replay(version, installed, tuple(items))


def bisect(
    spec_file: Path,
    specs: Sequence[Spec],
    good: str,
    bad: str,
    replay: ReplaySpec,
    *,
    versions: Sequence[str] | None = None,
    watcher: Watcher | None = None,
) -> Bisection:
    """The first release after `good`, up to `bad`, whose replay of `specs` ends otherwise
    or calls other tools than `good`'s (`versions`: the published ones, default npm's)."""
    releases = releases_between(npm_versions() if versions is None else versions, good, bad)
    if watcher is not None:
        watcher.started(releases)
    good_replay: list[Replay] = []

    def replay_release(version: str) -> Replay:
        done = replay_with(specs, replay, version, watcher)
        good_replay[:] = good_replay or [done]
        if watcher is not None:
            watcher.replayed(done, good_replay[0])
        return done

    made, first = search(releases, replay_release)
    by_version: Mapping[str, Replay] = {r.version: r for r in made}
    changed = by_version[releases[first]] if first is not None else None
    return Bisection(
        spec_file=display_path(spec_file),
        good=good,
        bad=bad,
        releases=releases,
        replays=made,
        first_change=releases[first] if first is not None else None,
        last_same=releases[first - 1] if first is not None else None,
        changes=changes_between(made[0], changed) if changed is not None else (),
    )


def _npm(
    command: Sequence[str], does: str, like: str, timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise BisectError(
            f"npm was not found: install Node.js (with npm); bisect {does} Claude Code "
            f"releases with it, as `{like}` does."
        ) from None


def _known(published: Sequence[str]) -> str:
    if not published:
        return "it lists none"
    return f"{len(published)} listed, {published[0]} to {published[-1]}"


def _tail(text: str, lines: int = 12) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])
