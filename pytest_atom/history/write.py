"""A session's results as history records, in one place, and the one write per session.

`item_record` maps a typed `SpecResult` to an `ItemRecord` (the only place that does);
`item_of_properties` makes one from a report's figures where no typed result is at hand
(an item the harness could not run, a results file brought in by `atom history import`).
`run_record` says when and on what the session ran: its git commit and dirty flag, the
pytest-atom and Claude Code versions, and the settings that can change an outcome.
`write_run` is the one write: a store that cannot be written gives back a warning line
naming the store and the fix, never an exception, so a run's own results and exit status
stand.

Secrets: a check's detail and a criterion's reasons go through the scrubber
(`replay.scrub.Scrubber`); records hold no transcript, only the executor's tool names.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_atom import __version__
from pytest_atom.errors import HistoryError
from pytest_atom.history.records import (
    CheckRow,
    CriterionRow,
    ItemRecord,
    RunRecord,
    new_run_id,
)
from pytest_atom.history.store import open_store
from pytest_atom.history.urls import OFF, display_url, store_url
from pytest_atom.settings.options import OPTIONS

if TYPE_CHECKING:
    from pytest_atom.replay.scrub import Scrubber
    from pytest_atom.results.spec_result import SpecResult
    from pytest_atom.settings.options import RunSettings
    from pytest_atom.spec.types import Spec

__all__ = [
    "claude_version_of",
    "first_version",
    "git_state",
    "identity",
    "item_of_properties",
    "item_of_spec",
    "item_record",
    "outcome_word",
    "run_record",
    "settings_snapshot",
    "write_run",
]

#: Settings that never change an outcome: where files go, how many stay, where the store is.
_HOUSEKEEPING = frozenset({"keep_runs", "history", "upstream"})
_HOUSEKEEPING_KINDS = frozenset({"path", "paths", "size"})
_SUFFIX = re.compile(r"\[([^\[\]]*)\]$")
_REPEAT = re.compile(r"\[r(\d+)\]$")


def outcome_word(label: str) -> str:
    """An outcome label as the store keeps it (``upstream error`` is an ``error``)."""
    return "error" if label.endswith("error") else label


def identity(spec: Spec) -> tuple[str, str | None, str | None]:
    """(spec base name, case, arm): `Spec.name` is ``base[case][arm]``."""
    name = spec.name
    for part in (spec.arm, spec.case):
        if part is not None:
            name = name.removesuffix(f"[{part}]")
    return name, spec.case, spec.arm


def _scrubbed(scrubber: Scrubber | None, text: str) -> str:
    return text if scrubber is None or not text else scrubber.scrub(text)


def item_record(
    result: SpecResult,
    repeat: int | None,
    *,
    outcome: str | None = None,
    scrubber: Scrubber | None = None,
    run_id: str = "",
) -> ItemRecord:
    """The item `result` ran (`repeat`: which of its repeats); `outcome` as pytest finally
    reported it, when that differs from the result's own (a snapshot mismatch fails a
    passed run)."""
    spec, case, arm = identity(result.spec)
    verdict = result.verdict
    criteria = tuple(
        CriterionRow(
            c.criterion,
            sum(c.votes) / len(c.votes) if c.votes else float(c.met),
            c.met,
            _scrubbed(scrubber, c.evidence),
        )
        for c in (verdict.criteria if verdict is not None else ())
    )
    checks = tuple(
        CheckRow(c.check.describe(), c.passed, _scrubbed(scrubber, c.summary))
        for c in result.checks
    )
    roles = {
        role: used for role, used in result.usage_by_role().items() if used.tokens or used.cost_usd
    }
    executor = [r for a in result.all_attempts for r in a.records]
    cached = result.cached_from
    if cached is not None:  # the stored item's account of the agent's work stands
        checks = tuple(CheckRow(c.name, c.passed, c.detail) for c in cached.checks)
        criteria = tuple(
            CriterionRow(c.text, c.score, c.passed, c.reasons) for c in cached.criteria
        )
    return ItemRecord(
        run_id=run_id,
        spec=spec,
        spec_path=str(result.spec.path),
        case=case,
        arm=arm,
        repeat=repeat,
        outcome=outcome_word(outcome or result.outcome.label),
        checks=checks,
        criteria=criteria,
        tokens={role: used.tokens for role, used in roles.items()},
        cost_usd={role: round(used.cost_usd, 6) for role, used in roles.items()},
        spent_usd=round(result.dollars().spent, 6),
        wall_seconds=round(result.duration, 3),
        tool_calls=cached.tool_calls
        if cached is not None
        else tuple(call.name for r in executor for call in r.tool_calls),
        kind="cached" if cached is not None else "trial",
        digest=result.digest,
        digest_parts=dict(result.digest_parts),
        run_folder=None if cached is not None else str(result.run_dir),
        why=cached.why if cached is not None else _scrubbed(scrubber, result.outcome.why),
        score=result.score,
    )


def item_of_spec(spec: Spec, repeat: int | None, outcome: str, why: str = "") -> ItemRecord:
    """An item with no result: the harness could not run it (``error``) or it was not
    started (``skipped``, at the spending limit)."""
    name, case, arm = identity(spec)
    return ItemRecord(
        run_id="",
        spec=name,
        spec_path=str(spec.path),
        case=case,
        arm=arm,
        repeat=repeat,
        outcome=outcome_word(outcome),
        spent_usd=0.0,
        why=why,
    )


def claude_version_of(result: SpecResult) -> str | None:
    """The Claude Code version the result's sessions reported, if any did."""
    return next((r.cli_version for r in result.records if r.cli_version), None)


def _split_nodeid(nodeid: str) -> tuple[str, str, int | None]:
    """(spec file, spec name, repeat) of ``specs/x.atom.yaml::name[arm][r2]``."""
    path, _, name = nodeid.partition("::")
    repeat = _REPEAT.search(name)
    if repeat:
        name = name[: repeat.start()]
    return path, name, int(repeat[1]) if repeat else None


def item_of_properties(
    nodeid: str,
    outcome: str,
    props: Mapping[str, Any],
    *,
    case: str | None = None,
    arm: str | None = None,
) -> ItemRecord:
    """An item from a report's figures (`reports.properties`): its outcome, tokens and
    cost by role, wall time. Its checks, criteria and tool calls are not among them."""
    path, name, repeat = _split_nodeid(nodeid)
    arm = arm if arm is not None else (str(props["atom_arm"]) if props.get("atom_arm") else None)
    spec = name
    for part in (arm, case):
        if part is not None:
            spec = spec.removesuffix(f"[{part}]")
    tokens: dict[str, int] = {}
    cost: dict[str, float] = {}
    for key, value in props.items():
        role = re.fullmatch(r"atom_([a-z]+)_(tokens|cost_usd)", key)
        if role and role[1] not in ("agent", "billed", "cli", "recorded") and value:
            if role[2] == "tokens":
                tokens[role[1]] = int(value)
            else:
                cost[role[1]] = float(value)
    score = props.get("atom_score")
    spent = props.get("atom_cost_usd")
    return ItemRecord(
        run_id="",
        spec=spec,
        spec_path=path,
        case=case,
        arm=arm,
        repeat=repeat,
        outcome=outcome_word(outcome),
        kind="cached" if props.get("atom_cached") else "trial",
        tokens=tokens,
        cost_usd=cost,
        spent_usd=float(spent) if isinstance(spent, (int, float)) else None,
        wall_seconds=float(props.get("atom_duration_s") or 0.0),
        why=str(props.get("atom_why") or ""),
        score=float(score) if isinstance(score, (int, float)) else None,
    )


def git_state(root: Path) -> tuple[str | None, bool]:
    """The project's commit and whether its tree differs from it (None, False: no git)."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=False
            )
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None, False
    status = git("status", "--porcelain", "--untracked-files=no")
    return commit.strip(), bool(status and status.strip())


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (tuple, list, frozenset, set)):
        return [_jsonable(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return value


def settings_snapshot(settings: RunSettings) -> dict[str, Any]:
    """The settings that can change an outcome (not where files go or how many stay)."""
    return {
        o.name: _jsonable(getattr(settings, o.name))
        for o in OPTIONS
        if o.kind not in _HOUSEKEEPING_KINDS and o.name not in _HOUSEKEEPING
    }


def run_record(
    kind: str,
    settings: RunSettings,
    root: Path,
    claude_version: str | None,
    *,
    started: datetime | None = None,
    rescore_of: str | None = None,
) -> RunRecord:
    """The session's record: `started` (default: now), the project's git state."""
    when = (started or datetime.now(UTC)).astimezone(UTC)
    commit, dirty = git_state(root)
    return RunRecord(
        id=new_run_id(when),
        started=when,
        kind=kind,
        rescore_of=rescore_of,
        commit=commit,
        dirty=dirty,
        atom_version=__version__,
        claude_version=claude_version,
        settings=settings_snapshot(settings),
    )


def first_version(versions: Iterable[str | None]) -> str | None:
    """The first known version among `versions`."""
    return next((v for v in versions if v), None)


def write_run(where: str, root: Path, run: RunRecord, items: Sequence[ItemRecord]) -> str | None:
    """Record `run` in the store `where` names; None when it is written (or the store is
    off), else the warning line to show: the store, what went wrong and the fix."""
    url = store_url(where, root)
    if url == OFF:
        return None
    try:
        store = open_store(url, root)
        try:
            store.add_run(run, items)
        finally:
            store.close()
    except HistoryError as error:
        return f"history: run {run.id} was not recorded: {error}"
    except OSError as error:  # a folder that cannot be made, a full disk
        return (
            f"history: run {run.id} was not recorded in {display_url(url)}: {error} "
            "(make it writable, or pass --atom-history to another store or none)"
        )
    return None
