"""`atom rescore RUN [SPEC…]`: a stored run's attempts judged again, recorded as a new run.

Each item of the run (of the SPECs named, else all) is judged by today's spec on the final
attempt its run folder kept, copied into a new run folder: only the reflector runs, through
the same gateway and model source as a run, and nothing is written to the spec's cassette.
Today's checks of the files run again, so the reflector reads the evidence the run read and
a replay recalls its verdict when nothing changed.

The new run is recorded as ``kind="rescore"``, ``rescore_of`` the old run's id, so `atom
diff OLD NEW` shows what today's criteria change; its items are judgements, not trials. An
item that cannot be judged again (its run folder pruned, its spec gone) is recorded as an
``error`` saying why.

`find_run` and `run_case` find a stored attempt for the human judge (`atom label`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_atom.agents.claude_code.cli import find_claude
from pytest_atom.calibration.samples import CheckSeen
from pytest_atom.calibration.taking import RunFound, checks_again
from pytest_atom.environment import release_tmpdirs
from pytest_atom.errors import CalibrationError, HarnessError, HistoryError, SpecError
from pytest_atom.files import copy_tree
from pytest_atom.gateway import Gateway
from pytest_atom.gateway.server import Meter
from pytest_atom.history.records import ItemRecord, RunRecord, series_label
from pytest_atom.history.store import Store
from pytest_atom.history.write import (
    claude_version_of,
    first_version,
    identity,
    item_record,
    run_record,
    write_run,
)
from pytest_atom.judge.calibration import base_name
from pytest_atom.judge.reflector import judge
from pytest_atom.replay.recording import open_run_source
from pytest_atom.replay.scrub import Scrubber, remember_spec_secrets
from pytest_atom.results.record import RunOutcome
from pytest_atom.results.spec_result import Attempt, SpecResult
from pytest_atom.run.execution import session_id_for
from pytest_atom.run.spec_run import RunScope, new_run
from pytest_atom.run_folders import folder_spec_name, parse_run_name
from pytest_atom.spec_loader.load import load_specs

if TYPE_CHECKING:
    from pytest_atom.run.harness import Harness
    from pytest_atom.spec.types import Spec


@dataclass(frozen=True)
class Rescored:
    """The rescore's run, each item before and after, and the store's warning if any."""

    run: RunRecord
    pairs: tuple[tuple[ItemRecord, ItemRecord], ...]
    warning: str | None

    def lines(self) -> list[str]:
        out = []
        for old, new in self.pairs:
            label = series_label(old.series, old.repeat)
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
    try:
        spec = _spec_of(item, harness)
        if item.run_folder is None:
            raise HarnessError("no run folder was recorded for it (the harness could not run it)")
        result = judge_again(spec, Path(item.run_folder), item, harness)
    except HarnessError as exc:
        why = f"not judged again: {exc}"
        nothing: dict[str, float] = {}  # no judge ran: nothing used, nothing spent
        judged = replace(item, run_id="", kind="rescore", outcome="error", why=why)
        return replace(judged, tokens={}, cost_usd=nothing, spent_usd=0.0, wall_seconds=0.0), None
    new = item_record(result, item.repeat, scrubber=Scrubber())
    # A judgement of the stored attempt, not a trial: out of the spec's pass rate and means.
    new = replace(new, kind="rescore", tool_calls=item.tool_calls)
    return new, claude_version_of(result)


def rescore_run(store: Store, run_id: str, specs: Sequence[str], harness: Harness) -> Rescored:
    """Judge `run_id`'s items (of `specs`, else all) again and record the rescore run in
    the session's store; HistoryError for an unknown run, ValueError when no item is of `specs`."""
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


@dataclass(frozen=True)
class StoredAttempt:
    """What an earlier run folder kept of its final attempt."""

    folder: Path  # attempts/aNN, the executor's work
    number: int
    final_message: str


def stored_attempt(run_folder: Path, spec: Spec) -> StoredAttempt:
    """The last attempt of `run_folder` and the executor's last message; HarnessError if none."""
    if not run_folder.is_dir():
        raise HarnessError(
            f"run folder {run_folder} is gone (old run folders are pruned: --atom-keep-runs 0 "
            "keeps them all), so its attempt cannot be judged again"
        )
    if (run_folder / "steps").is_dir():
        raise HarnessError(
            f"{run_folder} is a multi-step run: atom rescore judges single-prompt attempts only"
        )
    attempts = sorted((run_folder / "attempts").glob("a[0-9][0-9]"))
    if not attempts:
        raise HarnessError(f"{run_folder} holds no attempt (attempts/aNN): nothing to judge")
    last = attempts[-1]
    return StoredAttempt(last, int(last.name[1:]), final_message(run_folder, spec))


def final_message(run_folder: Path, spec: Spec) -> str:
    """The executor's last text, from the transcript Claude Code kept; "" if none."""
    session = session_id_for(spec)
    last = ""
    for transcript in sorted(
        (run_folder / "claude-config" / "projects").glob(f"*/{session}.jsonl")
    ):
        for line in transcript.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            message = entry.get("message") if isinstance(entry, dict) else None
            if entry.get("type") != "assistant" or not isinstance(message, dict):
                continue
            content = message.get("content")
            texts = [
                block.get("text", "")
                for block in (content if isinstance(content, list) else [])
                if isinstance(block, dict) and block.get("type") == "text"
            ]
            if any(texts):
                last = "\n".join(t for t in texts if t)
    return last


def judge_again(spec: Spec, run_folder: Path, item: ItemRecord, harness: Harness) -> SpecResult:
    """The final attempt of `run_folder` judged by today's `spec` in a new run folder."""
    attempt = stored_attempt(run_folder, spec)
    scope = RunScope(harness.root, harness.config, harness.registry(), harness.spend)
    claude_bin = find_claude()
    started = time.perf_counter()
    spec = spec.with_limits(scope.config)
    remember_spec_secrets(spec, scope.project_dir)  # before any Scrubber of this run
    settings = replace(harness.settings.with_seed(), rejudge=False, resume=None)
    run = new_run(spec, harness.runs_dir, settings, scope, claude_bin)
    path = run.run_dir / "attempts" / attempt.folder.name  # its number: a replay recalls by it
    copy_tree(attempt.folder, path)
    outcome = RunOutcome(True, 1, attempt.final_message)
    stored = {c.name: (c.passed, c.detail) for c in item.checks}
    new = "new since the run: the agent's calls were not kept"
    checks = checks_again(spec, path, run.run_dir, run.check_env, stored, new, run.registry)
    judged = Attempt(attempt.number, path, outcome, [], checks)
    run.attempts.append(judged)
    source = open_run_source(spec, settings, run.run_dir, claude_bin=claude_bin, repeat=item.repeat)
    meter = Meter(frozenset({"reflector"}) if source.kind == "record" else frozenset(), scope.spend)
    try:
        with Gateway(source.responder, meter) as gateway:
            if run.reflect(judged, run.agents(gateway.url, source), source):
                judged.decision = judge(
                    True, judged.checks, judged.verdict, run.threshold, spec.reflector.gate
                )
            exchanges = gateway.exchanges
    finally:  # the reflector's transcripts and logs, scrubbed in place as after a run
        Scrubber(extra=source.auth).scrub_tree(run.run_dir / "claude-config", run.run_dir / "home")
        release_tmpdirs(run.run_dir)
    result = SpecResult(
        spec=spec,
        run_dir=run.run_dir,
        attempts=run.attempts,
        duration=time.perf_counter() - started,
        threshold=run.threshold,
        exchanges=exchanges,
        source=source.kind,
        harness_error=run.harness_error or source.refused or source.failure,
        script_error=source.script_error,
    )
    result.billed, result.billed_usd = dict(meter.bills.by_role), dict(meter.bills.usd_by_role)
    return result


def run_case(spec: Spec, found: RunFound, cases: dict[str, Spec]) -> Spec:
    """The case of `spec` that the run ran: the store's record of it, else the run folder's
    name (``<spec>[<case>]-<stamp>-…``). Its rendered criteria are what the human labels."""
    if not cases:
        return spec
    if found.case is not None and found.case in cases:
        return cases[found.case]
    named = parse_run_name(found.folder.name)
    for case in cases.values():
        if named is not None and named[0] == folder_spec_name(case.name):
            return case
    raise CalibrationError(
        f"cannot tell which case of spec {base_name(spec)!r} the run ran (its cases: "
        f"{', '.join(cases)}): give a run of the history store, or the case's run folder",
        found.folder,
    )


def find_run(run: str, spec: Spec, store: Store | None, case: str | None = None) -> RunFound:
    """RUN as a run folder, else as a run of the store; CalibrationError says which it tried."""
    folder = Path(run)
    if folder.is_dir():
        item = _item_for_folder(folder, spec, store)
        return _found(folder.resolve(), item)
    if store is None:
        raise CalibrationError(
            "no such run folder, and no history store to look the run up in "
            "(give a run folder from .atom/runs, or turn --history on)",
            folder,
        )
    try:
        record = store.run(run)
    except HistoryError as exc:
        raise CalibrationError(
            f"neither a run folder nor a run of the store: {exc}", folder
        ) from None
    items = [
        i
        for i in store.items(record.id)
        if i.spec == base_name(spec) and (case is None or i.case == case)
    ]
    ran = sorted({i.case for i in items if i.case is not None})
    if len(ran) > 1:
        raise CalibrationError(
            f"run {record.id} ran {len(ran)} cases of spec {base_name(spec)!r} "
            f"({', '.join(ran)}): name one as FILE::{base_name(spec)}[CASE]",
            folder,
        )
    item = items[0] if items else None
    if item is None or not item.run_folder:
        raise CalibrationError(
            f"run {record.id} has no item of spec {base_name(spec)!r} with a run folder "
            "(`atom history` lists the runs of a spec)",
            folder,
        )
    if not Path(item.run_folder).is_dir():
        raise CalibrationError(
            f"run {record.id}'s folder is gone (pruned by --keep-runs?): {item.run_folder}",
            Path(item.run_folder),
        )
    return _found(Path(item.run_folder), item)


def _found(folder: Path, item: ItemRecord | None) -> RunFound:
    if item is None:
        return RunFound(folder)
    checks = tuple(CheckSeen(c.name, c.passed, c.detail) for c in item.checks)
    return RunFound(folder, item.run_id, checks, item.case)


def _item_for_folder(folder: Path, spec: Spec, store: Store | None) -> ItemRecord | None:
    """The store's item whose run folder is `folder` (None: not recorded)."""
    if store is None:
        return None
    wanted = str(folder.resolve())
    for record in store.runs(limit=50, spec=base_name(spec)):
        for item in store.items(record.id):
            if item.run_folder and str(Path(item.run_folder).resolve()) == wanted:
                return item
    return None
