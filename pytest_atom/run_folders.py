"""Run folders: what each spec run leaves on disk, how it is named, and when it goes.

Every run of a spec gets a folder of its own under the runs folder::

    .atom/runs/<spec>-<YYYYmmdd-HHMMSS>-<id>/
        attempts/a01/    the executor works here (a copy of the workspace, set-up run in it)
        attempts/a02/    a refine attempt: a copy of a01, same conversation, with feedback
        committed/       the passing attempt, promoted: hard links, not a second copy
        claude-config/   the CLI's own state (CLAUDE_CONFIG_DIR), secrets scrubbed after the run
        home/            the CLI's HOME (its logs and caches), scrubbed too
        setup/           the `setup:` commands' HOME and temp folder, and its output.log

(a multi-step spec's attempts are under ``steps/<id>/``: `pytest_atom.run.steps`). The
name is spelled by `run_name` alone (resuming a run reads it with `parse_run_name`).

Run folders live under the project (``.atom/runs``, or ``--atom-runs-dir``) by default.
That is safe because the agent cannot read upwards from its run folder: the read guard
(agents.claude_code.readguard) keeps the project above the workspace (its ``.env``, the
specs, their cassettes, other runs) out of reach.

Retention, after a session: the newest ``keep`` folders of each spec stay, and so does
every failed run of that session (no ``committed/``): a failure is what someone will want
to open. ``keep = 0`` keeps every folder. A size bound (``keep_runs_size``) then deletes
the oldest of the folders left, across specs, until all fit in it, never the newest folder
of a spec nor a failed run of the session (a bound smaller than those is exceeded). A file
hard-linked in several places counts once. Only direct children of the runs folder whose
names have that shape are ever touched; a symlink is never followed nor deleted.

Where to add: a new rule for which folders go, here; what a run puts in its folder, in
`pytest_atom.run`.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pytest_atom.inert import inert

_STAMP = "%Y%m%d-%H%M%S"
_RUN_NAME = re.compile(r"^(?P<spec>.+)-(?P<stamp>\d{8}-\d{6})-(?P<id>[0-9a-f]{6})$")


def folder_spec_name(spec: str) -> str:
    """A spec's name as run folder names spell it: without the shell's glob characters
    ``[`` and ``]``, and inert (`ls` would send a name's control characters to the terminal)."""
    return inert(spec).replace("[", "-").replace("]", "")


def run_name(spec: str, started: datetime | None = None) -> str:
    """A new run folder's name: the spec's, when it started (local time), a random id."""
    stamp = (started or datetime.now()).strftime(_STAMP)
    return f"{folder_spec_name(spec)}-{stamp}-{uuid.uuid4().hex[:6]}"


def parse_run_name(name: str) -> tuple[str, datetime] | None:
    """(spec, started) of a name `run_name` gives; None for any other name."""
    match = _RUN_NAME.match(name)
    if match is None:
        return None
    try:
        return match["spec"], datetime.strptime(match["stamp"], _STAMP)
    except ValueError:  # 20261399-…: not a name run_name gives
        return None


@dataclass(frozen=True)
class RunFolder:
    path: Path
    spec: str
    started: datetime  # to the second, local time: what the name says

    @property
    def failed(self) -> bool:
        """No ``committed/``: the run failed, was interrupted, or the harness broke."""
        return not (self.path / "committed").is_dir()

    def failed_since(self, session_start: datetime | None) -> bool:
        """A failed run of the session that started at `session_start`: always kept."""
        since = session_start.replace(microsecond=0) if session_start else None
        return since is not None and self.started >= since and self.failed


def run_folders(runs_dir: Path) -> list[RunFolder]:
    """The run folders directly in ``runs_dir``, oldest first."""
    if not runs_dir.is_dir():
        return []
    found = []
    for path in runs_dir.iterdir():
        parsed = parse_run_name(path.name)
        if parsed is None or path.is_symlink() or not path.is_dir():
            continue
        found.append(RunFolder(path, *parsed))
    return sorted(found, key=lambda r: (r.started, r.path.name))


def runs_to_delete(
    runs_dir: Path, keep: int, *, session_start: datetime | None = None
) -> list[RunFolder]:
    """The folders beyond the newest ``keep`` of their spec, except failed runs that started
    at or after ``session_start`` (the session that just ended). ``keep = 0``: none."""
    if keep < 0:
        raise ValueError(f"keep must be 0 (keep every run) or more, got {keep}")
    if keep == 0:
        return []
    by_spec: dict[str, list[RunFolder]] = defaultdict(list)
    for run in run_folders(runs_dir):
        by_spec[run.spec].append(run)
    doomed = [
        r for runs in by_spec.values() for r in runs[:-keep] if not r.failed_since(session_start)
    ]
    return sorted(doomed, key=lambda r: (r.started, r.path.name))


def folder_size(folder: Path, seen: set[tuple[int, int]] | None = None) -> int:
    """The bytes `folder` holds on disk, as ``du`` counts them (each hard-linked file once:
    `seen` carries the inodes counted across folders; symlinks not followed)."""
    seen = set() if seen is None else seen
    total = 0
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in (*dirnames, *filenames):
            try:
                st = os.lstat(os.path.join(dirpath, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            total += st.st_blocks * 512
    return total


def runs_over_size(
    runs_dir: Path, max_bytes: int, *, session_start: datetime | None = None
) -> list[RunFolder]:
    """The oldest folders to delete so the rest fit in `max_bytes` (0: no bound), never
    the newest folder of a spec nor a failed run of the session."""
    if max_bytes <= 0:
        return []
    runs = run_folders(runs_dir)
    newest = {run.spec: run for run in runs}  # oldest first: the last one of a spec stays
    sizes = {run.path: folder_size(run.path) for run in runs}
    total = sum(sizes.values())
    doomed = []
    for run in runs:
        if total <= max_bytes:
            break
        if newest[run.spec] is run or run.failed_since(session_start):
            continue
        doomed.append(run)
        total -= sizes[run.path]
    return doomed


def prune_runs(
    runs_dir: Path,
    keep: int,
    *,
    session_start: datetime | None = None,
    max_bytes: int | None = None,
) -> list[Path]:
    """Delete what ``runs_to_delete``, then ``runs_over_size`` name; the deleted folders.
    One that cannot be removed is left; one that resolves outside ``runs_dir`` too."""
    root = runs_dir.resolve()
    deleted = _delete(root, runs_to_delete(runs_dir, keep, session_start=session_start))
    if max_bytes:
        deleted += _delete(root, runs_over_size(runs_dir, max_bytes, session_start=session_start))
    return deleted


def _delete(root: Path, runs: list[RunFolder]) -> list[Path]:
    deleted = []
    for run in runs:
        if run.path.is_symlink() or run.path.resolve().parent != root:
            continue
        try:
            shutil.rmtree(run.path)
        except OSError:
            continue
        deleted.append(run.path)
    return deleted
