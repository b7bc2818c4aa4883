"""The JSON trace format: one trace file per spec run, its sessions' transcripts beside it.

::

    <report_dir>/<spec file stem>/<spec name>[.r<repeat>].json
    <report_dir>/<spec file stem>/<spec name>[.r<repeat>].transcripts/a01-executor-1.jsonl
    <report_dir>/<spec file stem>/<spec name>[.r<repeat>].texts/evidence-<hash>.txt

The document is `reports.trace.build_trace`'s; a text in it longer than `REPORT_TEXT_LIMIT`
is clipped, and kept whole in ``.texts/``, which the clipped text names. A multi-step spec's
transcripts are named ``<step>-a01-executor-1.jsonl``. Everything ``write_report`` writes
is scrubbed first, and written atomically.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_atom.files import write_atomic
from pytest_atom.paths import SPEC_SUFFIX
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.reports.clipping import clip_long_texts
from pytest_atom.reports.format import ReportFormat
from pytest_atom.reports.trace import build_trace, trace_sessions, trace_stem

if TYPE_CHECKING:
    from pytest_atom.results.spec_result import SpecResult


def trace_path(result: SpecResult, report_dir: Path, *, repeat: int | None = None) -> Path:
    folder = report_dir / result.spec.path.name.removesuffix(SPEC_SUFFIX)
    return folder / f"{trace_stem(result, repeat)}.json"


def write_report(result: SpecResult, report_dir: Path, *, repeat: int | None = None) -> Path:
    """Write the scrubbed trace and every session's scrubbed transcript; returns the trace
    path. Transcripts go first, so a trace never names a missing file; stale ones go."""
    path = trace_path(result, Path(report_dir), repeat=repeat)
    path.parent.mkdir(parents=True, exist_ok=True)
    sessions = [s for s in trace_sessions(result, repeat) if s.transcript is not None]
    # One scrub over everything written: a secret found in one transcript (the line that
    # assigns it) is redacted in all of them and in the trace (where it is only repeated).
    trace, *stdouts = Scrubber().scrub_obj(
        [build_trace(result, repeat=repeat), *(s.record.stdout for s in sessions)]
    )
    written: set[Path] = set()
    for session, stdout in zip(sessions, stdouts, strict=True):
        assert session.transcript is not None
        target = path.parent / session.transcript
        target.parent.mkdir(exist_ok=True)
        write_atomic(target, stdout)
        written.add(target)
    for stale in set((path.parent / f"{path.stem}.transcripts").glob("*.jsonl")) - written:
        stale.unlink()
    texts = path.parent / f"{path.stem}.texts"
    trace, kept = clip_long_texts(trace, texts)
    for stale in set(texts.glob("*.txt")) - kept:
        stale.unlink()
    text = json.dumps(trace, indent=2, ensure_ascii=False) + "\n"
    write_atomic(path, text)
    return path


class JsonTrace(ReportFormat[dict[str, Any]]):
    """`render`: the document, unscrubbed; `publish`: `write_report`, under ``--atom-report``."""

    name = "json-trace"

    def render(self, result: SpecResult, *, repeat: int | None = None) -> dict[str, Any]:
        return build_trace(result, repeat=repeat)

    def publish(self, result: SpecResult, *, repeat: int | None, report_dir: Path | None) -> None:
        if report_dir is not None:
            result.trace = write_report(result, report_dir, repeat=repeat)


#: The JSON trace format, as the ``pytest_atom.report_formats`` entry point names it.
JSON_TRACE = JsonTrace()
