"""A stored attempt judged again: today's criteria and reflector, and no executor.

`rescore_spec` copies the final attempt of an earlier run folder into a new run folder,
then runs only the reflector on it, through the same gateway and model source as a run
(its scripted `reflector:` turns, a recording's verdict, or a live session when the record
mode records), and decides the outcome as a run does (`results.outcome.judge`). The
executor's CLI is never started: its work is the attempt folder, its last message the
one its transcript kept.

Today's checks of the files run again on the attempt (in the agent's confinement, as in a
run), so the reflector reads the same evidence as the run did and a replay recalls its
recorded verdict when nothing changed; a check of the agent's calls (a trajectory check)
keeps its stored result, since the calls are not kept. Nothing is written to the spec's
cassette.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from pytest_atom.checks.builtin import default_registry, run_checks
from pytest_atom.environment import release_tmpdirs
from pytest_atom.errors import HarnessError
from pytest_atom.files import copy_tree
from pytest_atom.gateway import Gateway
from pytest_atom.gateway.server import Meter
from pytest_atom.judge.reflector import judge
from pytest_atom.replay.recording import open_run_source
from pytest_atom.replay.scrub import Scrubber, remember_spec_secrets
from pytest_atom.results.check_result import CheckResult
from pytest_atom.results.record import RunOutcome
from pytest_atom.results.spec_result import Attempt, SpecResult
from pytest_atom.run.execution import AttemptLoop, session_id_for
from pytest_atom.run.spec_run import RunScope, new_run
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec.types import Spec

__all__ = ["StoredAttempt", "final_message", "rescore_spec", "stored_attempt"]


@dataclass(frozen=True)
class StoredAttempt:
    """What an earlier run folder kept of its final attempt."""

    folder: Path  # attempts/aNN, the executor's work
    number: int
    final_message: str


def stored_attempt(run_folder: Path, spec: Spec) -> StoredAttempt:
    """The last attempt of `run_folder` and the executor's last message; HarnessError
    naming the folder when it holds none (removed by ``keep_runs``, or a multi-step run)."""
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
    """The executor's last text, from the transcript Claude Code kept of its session
    (``claude-config/projects/*/<session>.jsonl``, scrubbed after the run); "" if none."""
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


def _checks(
    run: AttemptLoop, path: Path, stored: Sequence[tuple[str, bool, str]]
) -> list[CheckResult]:
    """Today's checks of the spec on the attempt in `path`, in the spec's order: a check of
    the files runs again (in the agent's confinement, as in a run); one that reads the
    agent's calls (a trajectory check) has no calls to read, so its stored result stands
    (found by its label; a new one fails, saying so)."""
    spec, registry = run.spec, run.registry or default_registry()
    by_label = {label: (passed, detail) for label, passed, detail in stored}
    files = [c for c in spec.accept if not registry.reads_run(c.kind)]
    ran = iter(
        run_checks(
            files, path, env=run.check_env, registry=registry, sandbox=run.check_sandbox(path)
        )
        if files
        else []
    )
    results = []
    for check in spec.accept:
        if not registry.reads_run(check.kind):
            results.append(next(ran))
            continue
        passed, detail = by_label.get(
            check.describe(), (False, "new since the run: the agent's calls were not kept")
        )
        results.append(CheckResult(check, passed, detail, ""))
    return results


def rescore_spec(
    spec: Spec,
    attempt: StoredAttempt,
    checks: Sequence[tuple[str, bool, str]],
    *,
    runs_dir: Path,
    settings: RunSettings,
    scope: RunScope,
    claude_bin: Path,
    repeat: int | None = None,
) -> SpecResult:
    """`attempt` judged by today's `spec` in a new run folder under `runs_dir`: the
    reflector's verdict (when the spec has criteria) and the decision it comes to."""
    started = time.perf_counter()
    spec = spec.with_limits(scope.config)
    remember_spec_secrets(spec, scope.project_dir)  # before any Scrubber of this run
    settings = replace(settings, rejudge=False, resume=None)
    run = new_run(spec, runs_dir, settings, scope, claude_bin)
    path = run.run_dir / "attempts" / attempt.folder.name  # its number: a replay recalls by it
    copy_tree(attempt.folder, path)
    outcome = RunOutcome(True, 1, attempt.final_message)
    judged = Attempt(attempt.number, path, outcome, [], _checks(run, path, checks))
    run.attempts.append(judged)
    source = open_run_source(spec, settings, run.run_dir, claude_bin=claude_bin, repeat=repeat)
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
