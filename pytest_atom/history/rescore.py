"""`atom rescore RUN [SPEC…]`: a stored run's attempts judged again, recorded as a new run.

Each item of the run (those of the SPECs named, else all) is judged by today's spec (its
criteria, threshold and reflector) on the attempt its run folder kept (`run.rescore`),
with the item's stored check results as evidence; the executor is never started. The new
run is recorded in the store as ``kind="rescore"``, ``rescore_of`` the old run's id, so
`atom diff OLD NEW` shows what today's criteria change. An item that cannot be judged
again (its run folder pruned, its spec gone) is recorded as an ``error`` saying why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_atom.errors import HarnessError, SpecError
from pytest_atom.history.diff import series_label
from pytest_atom.history.recording import (
    claude_version_of,
    first_version,
    identity,
    item_record,
    run_record,
    write_run,
)
from pytest_atom.history.records import ItemRecord, RunRecord
from pytest_atom.history.store import Store

if TYPE_CHECKING:
    from pytest_atom.run.harness import Harness
    from pytest_atom.spec.types import Spec

__all__ = ["Rescored", "rescore_run"]


@dataclass(frozen=True)
class Rescored:
    """The rescore's run, each item before and after, and the store's warning if any."""

    run: RunRecord
    pairs: tuple[tuple[ItemRecord, ItemRecord], ...]
    warning: str | None

    def lines(self) -> list[str]:
        out = []
        for old, new in self.pairs:
            label = series_label(old.series) + (f"[r{old.repeat}]" if old.repeat else "")
            scores = f" (score {_score(old)} -> {_score(new)})" if old.score or new.score else ""
            why = f": {new.why}" if new.outcome != "passed" and new.why else ""
            out.append(f"{label}: {old.outcome} -> {new.outcome}{scores}{why}")
        out.append(f"recorded as run {self.run.id}, a rescore of {self.run.rescore_of}")
        return out + ([self.warning] if self.warning else [])


def _score(item: ItemRecord) -> str:
    return "-" if item.score is None else f"{item.score:.2f}"


def _wanted(item: ItemRecord, specs: Sequence[str]) -> bool:
    return not specs or item.spec in specs or series_label(item.series) in specs


def _spec_of(item: ItemRecord, harness: Harness) -> Spec:
    """Today's spec of `item`, from its file; HarnessError when it is gone."""
    from pytest_atom.spec_loader.load import load_specs

    path = Path(item.spec_path)
    path = path if path.is_absolute() else harness.root / path
    try:
        specs = load_specs(path, check_kinds=harness.registry().kinds())
    except (SpecError, OSError) as exc:
        raise HarnessError(f"the spec file {path} cannot be read today: {exc}") from None
    for spec in specs:
        if identity(spec) == item.series:
            return spec
    raise HarnessError(f"{path} no longer holds spec {series_label(item.series)!r}")


def _rescore_item(item: ItemRecord, harness: Harness) -> tuple[ItemRecord, str | None]:
    """The item judged again, with the Claude Code version its reflector reported."""
    from pytest_atom.agents.claude_code.cli import find_claude
    from pytest_atom.replay.scrub import Scrubber
    from pytest_atom.run.rescore import rescore_spec, stored_attempt
    from pytest_atom.run.spec_run import RunScope

    try:
        spec = _spec_of(item, harness)
        if item.run_folder is None:
            raise HarnessError("no run folder was recorded for it (the harness could not run it)")
        attempt = stored_attempt(Path(item.run_folder), spec)
        result = rescore_spec(
            spec,
            attempt,
            [(c.name, c.passed, c.detail) for c in item.checks],
            runs_dir=harness.runs_dir,
            settings=harness.settings.with_seed(),
            scope=RunScope(harness.root, harness.config, harness.registry(), harness.spend),
            claude_bin=find_claude(),
            repeat=item.repeat,
        )
    except HarnessError as exc:
        why = f"not judged again: {exc}"
        nothing: dict[str, float] = {}  # no judge ran: nothing used, nothing spent
        judged = replace(item, run_id="", kind="rescore", outcome="error", why=why)
        return replace(judged, tokens={}, cost_usd=nothing, spent_usd=0.0, wall_seconds=0.0), None
    new = item_record(result, item.repeat, scrubber=Scrubber())
    # The attempt is the stored one: its tool calls are the executor's, as they were. A
    # judgement of it, not a trial: it stays out of the spec's pass rate and means.
    new = replace(new, kind="rescore", tool_calls=item.tool_calls)
    return new, claude_version_of(result)


def rescore_run(store: Store, run_id: str, specs: Sequence[str], harness: Harness) -> Rescored:
    """Judge `run_id`'s items (of `specs`, else all) again and record the rescore run in
    the session's store (`harness.settings.history`); HistoryError for an unknown run,
    ValueError when no item is of `specs`."""
    old = store.run(run_id)
    items = [i for i in store.items(old.id) if _wanted(i, specs) and i.outcome != "skipped"]
    if not items:
        named = ", ".join(specs) if specs else "any spec"
        raise ValueError(f"run {old.id} has no judged item of {named}")
    pairs, versions = [], []
    for item in items:
        new, version = _rescore_item(item, harness)
        pairs.append((item, new))
        versions.append(version)
    run = run_record(
        "rescore", harness.settings, harness.root, first_version(versions), rescore_of=old.id
    )
    warning = write_run(harness.settings.history, harness.root, run, [n for _, n in pairs])
    return Rescored(run, tuple(pairs), warning)
