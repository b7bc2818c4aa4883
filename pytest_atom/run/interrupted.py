"""Ctrl-C during a spec run: where its work was left, and how to go on from there.

A run stopped by Ctrl-C leaves its attempt folders and, when recording, its
``<cassette>.partial.yaml``; `InterruptedRun` carries that to the front end.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pytest_atom.paths import display_path
from pytest_atom.spec.types import Spec

_ATTRIBUTE = "atom_interrupted_run"


@dataclass(frozen=True)
class InterruptedRun:
    """The spec run a Ctrl-C stopped, riding on the KeyboardInterrupt itself (`attach`)."""

    spec: Spec
    run_dir: Path
    partial: Path | None  # what was recorded so far, when recording

    def attach(self, stop: BaseException) -> None:
        setattr(stop, _ATTRIBUTE, self)

    @staticmethod
    def of(stop: BaseException) -> InterruptedRun | None:
        found = getattr(stop, _ATTRIBUTE, None)
        return found if isinstance(found, InterruptedRun) else None

    @property
    def resumable(self) -> bool:
        """Only a multi-step spec with written steps goes on from its last committed step."""
        return bool(self.spec.steps) and self.spec.request is None

    def lines(self, again: str, resume: str) -> list[str]:
        """What to tell the person: `again` reruns the spec, `resume` continues the run."""
        lines = [
            f"interrupted: spec '{self.spec.name}' ({display_path(self.spec.path)})",
            f"  run folder: {display_path(self.run_dir)} (its attempt folders hold the work so far)",
        ]
        if self.partial is not None:
            lines.append(
                f"  recorded so far: {display_path(self.partial)} (the cassette was left as it was)"
            )
        if self.resumable:
            lines.append(f"  resume with: {resume}")
        else:
            lines.append(f"  run it again with: {again} (a spec without steps starts afresh)")
        return lines


def stale_partial_warning(partial: Path, before: float) -> str | None:
    """The warning for a `.partial.yaml` an earlier recording left (older than `before`)."""
    try:
        mtime = partial.stat().st_mtime
    except OSError:
        return None
    if mtime >= before:
        return None  # this run's own: its failure report names it
    when = datetime.fromtimestamp(mtime).strftime("%Y-%m-%d %H:%M")
    ago = int((time.time() - mtime) // 3600)
    age = f", {ago} h ago" if ago else ""
    return (
        f"an interrupted or failed recording of this spec is still kept in "
        f"{display_path(partial)} (from {when}{age}); a recording that succeeds removes it, "
        "or delete it"
    )
