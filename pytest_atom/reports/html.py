"""The HTML report format: one self-contained page per run, to *see* what each agent did.

Two steps, so the page is assembled where the results meet (the xdist controller) from
data built where each spec ran (a worker): ``spec_view(result)`` (`render`), a JSON-able,
scrubbed view of one run; ``render_html(rows)`` / ``write_html(rows, path)`` (`finish`),
the page from the Jinja2 templates in ``templates/`` with autoescaping on, CSS and script
inlined, so the file opens from disk or a CI artifact with no server and no network.

Each view is scrubbed when it is built, and the whole page's data once more, so a secret
assigned in one spec's transcript is redacted where another spec repeats it.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from markupsafe import Markup, escape

from pytest_atom.baseline.measure import measured_lines
from pytest_atom.files import write_atomic
from pytest_atom.judge.reflector import attempt_diff
from pytest_atom.paths import display_path
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.replay.transcript import call_marks, stream_turns, tool_label, trajectory_summary
from pytest_atom.reports.clipping import TEXTS_FOLDER, clip_long_texts
from pytest_atom.reports.format import ReportFormat, SessionEnd, Written
from pytest_atom.reports.history_view import HistoryView, trend_svg
from pytest_atom.reports.phrases import drift_summary
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.trace import build_trace
from pytest_atom.results.rows import SummaryRow, spec_key
from pytest_atom.results.spec_result import SpecResult

if TYPE_CHECKING:
    import jinja2

    from pytest_atom.settings.options import RunSettings

#: The copy of the newest report kept in the runs folder, for `atom view`.
LAST_REPORT = "last-report.html"
#: Lines and characters of a text shown before the rest is folded away.
FOLD_LINES = 30
FOLD_CHARS = 4000
#: Outcomes in the order the filter lists them; others (a plugin's own) come after.
OUTCOMES = ("passed", "failed", "error", "upstream error", "xfailed", "xpassed", "skipped")

_TEMPLATES = Path(__file__).with_name("templates")


def spec_view(result: SpecResult, *, repeat: int | None = None) -> dict[str, Any]:
    """Everything the page shows about one spec run, JSON-able, scrubbed and clipped
    (`clip_long_texts`), built while its run folder still holds the attempt to diff."""
    trace = build_trace(result, repeat=repeat)
    attempts = _attempt_children(trace, result)
    for child, attempt in zip(attempts, result.all_attempts, strict=True):
        for session, record in zip(child["sessions"], attempt.all_records, strict=True):
            turns = stream_turns(record.events)
            session["turns"] = [asdict(turn) for turn in turns]
            session["marks"] = trajectory_summary(turns)
            # Scrubbed before its tail is cut: the cut must not split a secret.
            stderr = Scrubber().scrub(record.stderr.strip()) if record.is_error else ""
            session["stderr"] = stderr[-FOLD_CHARS:]
    final = result.final if result.attempts else None
    view = {
        "trace": trace,
        "attempts": attempts,
        "prompt": result.spec.prompt,
        "spec_path": display_path(result.spec.path),
        "run_dir": display_path(result.run_dir),
        # A link that works from the report and from its copy in the runs folder alike.
        "run_uri": result.run_dir.resolve().as_uri(),
        "properties": result_properties(result),
        "diff": attempt_diff(result.spec, final.path) if final else "",
        "divergences": list(result.divergences),
        "harness_error": result.harness_error,
        "drift_summary": drift_summary(result.drift) if result.drift else None,
        "upstream_faults": [fault.description for fault in result.upstream_faults],
        "last_message": result.last_message,
    }
    # One scrub with the raw transcripts as context, as write_report does: a secret the
    # agent read in one session is redacted where a later turn only repeats it.
    scrubbed = Scrubber().scrub_obj([view, *(r.stdout for r in result.records)])[0]
    # A 5 MB final message would be copied into the page and results.json several times.
    clipped: dict[str, Any] = clip_long_texts(scrubbed, result.run_dir / TEXTS_FOLDER)[0]
    return clipped


def _attempt_children(trace: dict[str, Any], result: SpecResult) -> list[dict[str, Any]]:
    """The trace's attempt children, each labelled (a multi-step spec's: ``implement a02``)."""
    if not result.steps:
        children: list[dict[str, Any]] = trace["children"]
        for number, child in enumerate(children, 1):
            child["label"] = f"attempt {number}"
        return children
    found = []
    for step in trace["children"]:
        for child in step["children"]:
            if "sessions" in child:  # an attempt, not a rollback
                child["label"] = f"{step['step_id']} a{child['atom_ref'].rsplit('-', 1)[1]:0>2}"
                found.append(child)
    return found


def report_row(
    nodeid: str,
    outcome: str,
    view: Mapping[str, Any] | None,
    *,
    longrepr: str = "",
    deltas: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """One spec run on the page; `view` None: the harness could not run it (`longrepr`
    says why); `deltas`: the baseline's change of each figure."""
    return {
        "nodeid": nodeid,
        "outcome": outcome,
        "view": dict(view) if view is not None else None,
        "longrepr": longrepr,
        "deltas": dict(deltas or {}),
    }


def fold(text: str, lines: int = FOLD_LINES, chars: int = FOLD_CHARS) -> dict[str, Any]:
    """A long text as ``head`` (shown) and ``rest`` (folded), and how many lines are hidden."""
    text = text.rstrip("\n")
    split = text.split("\n")
    head = "\n".join(split[:lines])
    if len(head) > chars:
        head = head[:chars]
    rest = text[len(head) :].removeprefix("\n")
    return {"head": head, "rest": rest, "hidden": rest.count("\n") + 1 if rest else 0}


def wrap_path(text: str) -> Markup:
    """A path or node id that breaks only after a `/` or `::`, never inside a name."""
    escaped = str(escape(text))
    return Markup(escaped.replace("/", "/<wbr>").replace("::", "::<wbr>"))


def tool_error(text: str | None) -> str:
    """A failed call's error as the CLI worded it, without its `<tool_use_error>` tags."""
    return re.sub(r"</?tool_use_error>", "", text or "").strip() or "(no output)"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    props = [r["view"]["properties"] for r in rows if r["view"]]
    counts = Counter(r["outcome"] for r in rows)
    known = [o for o in OUTCOMES if o in counts]
    return {
        "counts": [(o, counts[o]) for o in known + sorted(set(counts) - set(known))],
        "tokens": sum(int(p.get("atom_tokens") or 0) for p in props),
        "cost": sum(float(p.get("atom_cost_usd") or 0) for p in props),
        "list_price": sum(float(p.get("atom_list_price_usd") or 0) for p in props),
        # CLI calls that failed and were retried: in the figures above, shown apart
        "failed_tries": sum(int(p.get("atom_failed_tries") or 0) for p in props),
        "failed_tries_tokens": sum(int(p.get("atom_failed_tries_tokens") or 0) for p in props),
        "failed_tries_cost": sum(float(p.get("atom_failed_tries_cost_usd") or 0) for p in props),
        "seconds": sum(float(p.get("atom_duration_s") or 0) for p in props),
        "has_deltas": any(r["deltas"] for r in rows),
    }


def _environment() -> jinja2.Environment:
    import jinja2  # only when a page is written: every run publishes through this format

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_TEMPLATES),
        autoescape=True,  # every value is escaped: agents write HTML and script tags too
        undefined=jinja2.StrictUndefined,  # a misspelt field fails the tests, not the reader
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fold"] = fold
    env.filters["tool_label"] = tool_label
    env.filters["call_marks"] = call_marks
    env.filters["number"] = _number
    env.filters["pretty"] = lambda value: json.dumps(value, indent=2, ensure_ascii=False)
    env.filters["wrap_path"] = wrap_path
    env.filters["tool_error"] = tool_error
    env.filters["slug"] = lambda text: "".join(c if c.isalnum() else "-" for c in str(text))
    env.filters["trend_svg"] = trend_svg
    return env


def render_html(
    rows: Sequence[Mapping[str, Any]],
    *,
    title: str = "pytest-atom report",
    generated: datetime | None = None,
    measured: Sequence[str] = (),
    history: HistoryView | None = None,
) -> str:
    """The whole page; `rows` from `report_row`, `measured` the lines of
    `baseline.measure`, `history` the comparison with the previous run and the trends."""
    data = Scrubber().scrub_obj([dict(r) for r in rows])
    template = _environment().get_template("report.html.j2")
    return template.render(
        title=title,
        rows=data,
        measured=list(measured),
        history=history,
        summary=_summary(data),
        generated=(generated or datetime.now()).strftime("%Y-%m-%d %H:%M:%S"),
    )


def write_html(
    rows: Sequence[Mapping[str, Any]],
    path: Path,
    *,
    runs_dir: Path | None = None,
    measured: Sequence[str] = (),
    history: HistoryView | None = None,
) -> Path:
    """Write the page to `path` atomically; with `runs_dir`, keep a copy there for `atom view`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    page = render_html(rows, measured=measured, history=history)
    write_atomic(path, page)
    if runs_dir is not None and (runs_dir / LAST_REPORT).resolve() != path.resolve():
        runs_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(runs_dir / LAST_REPORT, page)
    return path


class HtmlReport(ReportFormat[dict[str, Any]]):
    """`render`: one run's part of the page (`spec_view`), its `view` with ``--atom-html``
    or ``--atom-report`` (a shard's results file keeps it); `finish` writes the page."""

    name = "html"

    def render(self, result: SpecResult, *, repeat: int | None = None) -> dict[str, Any]:
        return spec_view(result, repeat=repeat)

    def view(
        self, result: SpecResult, *, repeat: int | None, settings: RunSettings
    ) -> dict[str, Any] | None:
        if settings.html is None and settings.report is None:
            return None
        return self.render(result, repeat=repeat)

    def finish(self, end: SessionEnd) -> list[Written]:
        path = end.settings.output("html", end.root)
        if path is None:
            return []
        rows = page_rows(end.rows, end.views.get(self.name, {}), end.failures, end.deltas())
        measured = measured_lines(end.rows, end.gates)
        write_html(rows, path, runs_dir=end.runs_dir, measured=measured, history=end.history())
        return [Written("HTML report", path)]


def page_rows(
    rows: Iterable[SummaryRow],
    views: Mapping[str, Mapping[str, Any] | None],
    failures: Mapping[str, str],
    deltas: Mapping[str, Any],
) -> list[dict[str, Any]]:
    """The page's rows: every spec run by node id, then the specs that could not run."""
    page = [
        report_row(
            row.nodeid,
            row.outcome.label,
            views.get(row.nodeid),
            deltas=deltas.get(spec_key(row.nodeid)),
        )
        for row in sorted(rows, key=lambda r: r.nodeid)
    ]
    page += [report_row(n, "error", None, longrepr=t) for n, t in sorted(failures.items())]
    return page


#: The HTML format, as the ``pytest_atom.report_formats`` entry point names it.
HTML = HtmlReport()
