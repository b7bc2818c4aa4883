"""The Markdown format: a session's summary where a team reads CI, and Markdown made of run text.

`MARKDOWN` writes, at the session's end, the outcome table (regressions first), the
figures, criteria trust and the summary's notes to ``--atom-markdown PATH`` and, when
``$GITHUB_STEP_SUMMARY`` is set, appended to that file (docs/how-to/pull-requests.md).

Run text (node ids, a cause quoting the agent or a check, a note) is never read as
Markdown: it is scrubbed, then shown in a code span (`code`) or a fenced block (`block`)
whose fence is longer than any run of backticks in it, so no emphasis, link, raw HTML,
mention or autolink can form, and a table's pipes are escaped. A document stays within a
limit (`fitted`: GitHub refuses a step summary over 1 MiB, a comment over 65,536
characters). The pull request's comment (`history.diff.RunDiff.markdown`) uses them too.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_atom.baseline.measure import measured_lines
from pytest_atom.files import write_atomic
from pytest_atom.inert import inert
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.reports.format import ReportFormat, SessionEnd, Written
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.summary import (
    cached_lines,
    criteria_trust_lines,
    environment_lines,
    failed_tries_lines,
    sandbox_warning_lines,
    summary_cells,
)
from pytest_atom.results.rows import SummaryRow, spec_key
from pytest_atom.results.thresholds import RepeatGates
from pytest_atom.words import Scrubbed, shorten

if TYPE_CHECKING:
    from pytest_atom.results.outcome import Outcome
    from pytest_atom.results.spec_result import SpecResult
    from pytest_atom.settings.options import RunSettings

#: GitHub's job summary: the file a step appends to, and the most it takes (1 MiB a step;
#: over it, GitHub drops the step's whole summary).
STEP_SUMMARY = "GITHUB_STEP_SUMMARY"
SUMMARY_LIMIT = 1024 * 1024
#: GitHub's most characters in a pull request's comment; counted here in UTF-8 bytes,
#: which are never fewer.
COMMENT_LIMIT = 65_536
#: The most characters of run text one table cell shows.
CELL_CHARS = 300
#: The most lines of notes under the table: each is in the terminal summary too.
NOTE_LINES = 200
#: The HTML report's address, when CI publishes it somewhere the summary can link.
HTML_URL = "ATOM_HTML_URL"
#: Outcomes in the order the heading counts them: what needs a look first.
_ORDER = ("failed", "error", "upstream error", "xpassed", "passed", "xfailed", "skipped")
_URL = re.compile(r"https?://[^\s<>()\[\]`'\"]+")
_ESCAPED_PIPE = "\\|"


# --- Markdown made of run text --------------------------------------------------------------


def code(text: Scrubbed, limit: int = CELL_CHARS) -> str:
    """Scrubbed run text as one table cell's code span: on one line, at most `limit`
    characters, its pipes escaped (GitHub's tables split on a bare one, even in a span)."""
    flat = shorten(Scrubbed(" ".join(inert(text).split())), limit)
    if not flat:
        return ""
    fence = "`" * (max(map(len, re.findall("`+", flat)), default=0) + 1)
    pad = " " if flat[0] == "`" or flat[-1] == "`" else ""
    return f"{fence}{pad}{flat.replace('|', _ESCAPED_PIPE)}{pad}{fence}"


def block(lines: Sequence[Scrubbed]) -> list[str]:
    """Scrubbed lines as a fenced block: shown as they are, nothing in them read."""
    text = [inert(line) for line in lines]
    longest = max((len(run) for line in text for run in re.findall("`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [f"{fence}text", *text, fence]


def table(
    header: Sequence[str], rows: Sequence[Sequence[str]], right: Collection[int] = ()
) -> list[str]:
    """A GitHub table of cells already made (`code`); the columns in `right` aligned right."""
    align = ["---:" if i in right else "---" for i in range(len(header))]
    return [table_row(header), table_row(align), *(table_row(cells) for cells in rows)]


def table_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


@dataclass(frozen=True)
class Cut:
    """Lines a document may leave out from the end to fit its limit, `more` saying how
    many it left out; `after` (a closing fence) stays whatever is cut."""

    lines: Sequence[str]
    more: Callable[[int], str]
    after: Sequence[str] = field(default_factory=tuple)


def _size(lines: Sequence[str]) -> int:
    return sum(len(line.encode("utf-8")) + 1 for line in lines)


def fitted(parts: Sequence[Sequence[str] | Cut], limit: int) -> str:
    """The parts as one document of at most `limit` bytes: the fixed parts whole, then as
    many lines of each `Cut` as still fit, the earlier cuts first, each cut one closed
    with its line of how many it left out. "" when not even the fixed parts fit."""
    room = limit - sum(
        _size([p.more(len(p.lines)), *p.after]) if isinstance(p, Cut) else _size(p) for p in parts
    )
    if room < 0:
        return ""
    out: list[str] = []
    for part in parts:
        if not isinstance(part, Cut):
            out += part
            continue
        kept = 0
        for line in part.lines:
            room -= _size([line])
            if room < 0:
                break
            kept += 1
        room = max(room, 0)
        out += part.lines[:kept]
        out += [part.more(len(part.lines) - kept)] if kept < len(part.lines) else []
        out += part.after
    return "\n".join(out) + "\n"


def html_link(html: Path | None, env: Mapping[str, str]) -> str | None:
    """The line that links the HTML report: ``$ATOM_HTML_URL``, else, when the session wrote
    one on GitHub Actions, the run's page (which lists its artifacts); None without either.
    An address that is no plain http(s) URL is not shown."""
    url = env.get(HTML_URL, "")
    if url:
        return f"[The HTML report]({url})" if _URL.fullmatch(url) else None
    parts = [env.get(name, "") for name in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY")]
    run_id = env.get("GITHUB_RUN_ID", "")
    page = f"{parts[0]}/{parts[1]}/actions/runs/{run_id}"
    if html is None or not all(parts) or not run_id or not _URL.fullmatch(page):
        return None
    name = code(Scrubbed(html.name))
    return f"The HTML report ({name}) is written by this job: [its run's page]({page}) lists the artifacts."


# --- the session's summary ------------------------------------------------------------------


def first_cause(result: SpecResult) -> Scrubbed:
    """What stopped a run, in one line, scrubbed: its outcome's why, and when checks failed,
    the first of them and what it found."""
    why = result.outcome.why
    failed = next((c for c in result.checks if not c.passed), None)
    if failed is not None and re.search(r"\bchecks? failed$", why):
        why = f"{why}: {failed.check.describe()}: {failed.summary}"
    return Scrubber().scrub(why)


def _has_cause(outcome: Outcome) -> bool:
    return not outcome.ok or outcome.xfail is not None


def _trust(row: SummaryRow) -> str:
    """``2 gated, 1 advisory``: the run's criteria by their trust."""
    props = row.properties
    if "atom_criteria_gated" not in props:
        return ""
    gated, advisory = (
        int(props["atom_criteria_gated"] or 0),
        int(props["atom_criteria_advisory"] or 0),
    )
    return ", ".join(
        [f"{gated} gated"] * bool(gated) + [f"**{advisory} advisory**"] * bool(advisory)
    )


def _heading(rows: Sequence[SummaryRow], failures: Mapping[str, str]) -> str:
    counts = Counter([row.outcome.label for row in rows] + ["error"] * len(failures))
    known = [o for o in _ORDER if o in counts] + sorted(set(counts) - set(_ORDER))
    return "### pytest-atom: " + ", ".join(f"{counts[o]} {o}" for o in known)


def _figures(rows: Sequence[SummaryRow], cache: bool) -> str:
    tokens = sum(row.tokens or 0 for row in rows)
    spent = sum(row.cost_usd for row in rows)
    listed = sum(row.list_price_usd for row in rows)
    seconds = sum(row.duration_s for row in rows)
    runs = len(rows)
    said = [
        f"{runs} spec run{'s' * (runs != 1)}",
        f"{tokens:,} tokens",
        f"${spent:.4f} spent (${listed:.4f} at Claude Code's list price)",
        f"{seconds:.1f} s",
    ]
    if cache:
        said.append(f"{sum(bool(row.cached) for row in rows)} of {runs} from the outcome cache")
    return "**" + "** · **".join(said) + "**"


def _notes(
    rows: Sequence[SummaryRow], failures: Mapping[str, str], gates: RepeatGates
) -> list[str]:
    notes = [f"{row.nodeid}: {row.plan}" for row in rows if row.plan]
    notes += [f"{label}: {row.nodeid}: {text}" for row in rows for label, text in row.notes()]
    notes += failed_tries_lines(rows) + environment_lines(rows) + cached_lines(rows)
    notes += sandbox_warning_lines(rows) + criteria_trust_lines(rows)
    return notes + measured_lines(rows, gates)


@dataclass(frozen=True)
class Beside:
    """What a summary shows beside its rows, each by node id."""

    #: The specs the harness could not run: why.
    failures: Mapping[str, str] = field(default_factory=dict)
    #: Each run's first cause (`first_cause`); its outcome's why where none is given.
    causes: Mapping[str, str] = field(default_factory=dict)
    #: Each run's change since the run `compared` names: ``regressed``, ``improved``, ...
    changes: Mapping[str, str] = field(default_factory=dict)
    compared: str = ""
    #: The line that links the HTML report (`html_link`).
    link: str | None = None
    gates: RepeatGates = field(default_factory=RepeatGates)
    #: The outcome cache was on (``--atom-cache``): say how many runs it stood in for.
    cache: bool = False


def summary_markdown(
    rows: Sequence[SummaryRow], beside: Beside | None = None, limit: int = SUMMARY_LIMIT
) -> str:
    beside = beside or Beside()
    top = [_heading(rows, beside.failures), ""]
    top += [beside.link, ""] if beside.link else []
    top += [_figures(rows, beside.cache), ""]
    top += [f"Compared with {beside.compared}.", ""] if beside.compared else []
    head, ordered, figures = _table(rows, beside)
    runs = len(ordered)
    parts: list[Sequence[str] | Cut] = [
        top,
        table(head, [], right=figures),
        Cut([table_row(cells) for cells in ordered], lambda n: _more(n, runs)),
    ]
    scrub = Scrubber().scrub
    notes = [scrub(line) for line in _notes(rows, beside.failures, beside.gates)]
    if notes:
        parts += [["", "Notes:", ""], *_block_cut(notes)]
    return fitted(parts, limit)


def _table(rows: Sequence[SummaryRow], beside: Beside) -> tuple[list[str], list[list[str]], range]:
    """The table's header, its rows (regressions first, then the other runs that did not
    pass, then the rest, each group by node id) and which columns are figures."""
    scrub = Scrubber().scrub
    header, *cells = summary_cells(rows) if rows else [("spec", "outcome")]
    trusted = any("atom_criteria_gated" in row.properties for row in rows)
    changed = bool(beside.compared or beside.changes)
    head = ["spec", "outcome", *["change"] * changed, "first cause", *header[2:]]
    head += ["criteria"] * trusted
    lines: list[tuple[int, str, list[str]]] = []
    for row, cell in zip(rows, cells, strict=True):
        change = beside.changes.get(row.nodeid, "")
        why = beside.causes.get(row.nodeid, row.outcome.why)
        shown = [
            code(scrub(row.nodeid)),
            cell[1],
            *[f"**{change}**" if change == "regressed" else change] * changed,
            code(scrub(why)) if _has_cause(row.outcome) else "",
            *cell[2:],
            *[_trust(row)] * trusted,
        ]
        rank = 0 if change == "regressed" else 1 if not row.outcome.ok else 2
        lines.append((rank, row.nodeid, shown))
    for nodeid, why in beside.failures.items():
        first = next((line for line in why.splitlines() if line.strip()), "could not run")
        shown = [code(scrub(nodeid)), "error", *[""] * changed, code(scrub(first))]
        lines.append((1, nodeid, shown + [""] * (len(head) - len(shown))))
    ordered = [shown for *_, shown in sorted(lines, key=lambda line: line[:2])]
    return head, ordered, range(len(head) - len(header) + 2 - trusted, len(head) - trusted)


def _more(left: int, runs: int) -> str:
    return (
        f"\n… and {left} more spec run{'s' * (left != 1)} of {runs} (each is in the "
        "terminal summary and the HTML report)"
    )


def _block_cut(notes: Sequence[Scrubbed]) -> list[Sequence[str] | Cut]:
    """The notes as a fenced block, at most `NOTE_LINES` of them, cut from the end to fit."""
    fence, *lines, end = block(notes[:NOTE_LINES])
    left = len(notes) - len(lines)
    return [[fence], Cut(lines, lambda n: f"… and {n + left} more", after=[end])]


class MarkdownSummary(ReportFormat[str]):
    """`render`: one run's summary; `view`: the first cause of a run that did not pass, when
    the session writes a summary; `finish`: the session's summary, written."""

    name = "markdown"

    def render(self, result: SpecResult, *, repeat: int | None = None) -> str:
        row = SummaryRow.of(result.spec.name, result_properties(result), result.outcome)
        return summary_markdown([row], Beside(causes={row.nodeid: first_cause(result)}))

    def view(self, result: SpecResult, *, repeat: int | None, settings: RunSettings) -> str | None:
        writes = settings.markdown is not None or bool(os.environ.get(STEP_SUMMARY))
        return first_cause(result) if writes and _has_cause(result.outcome) else None

    def finish(self, end: SessionEnd) -> list[Written]:
        path = end.settings.output("markdown", end.root)
        step = os.environ.get(STEP_SUMMARY)
        if (path is None and not step) or not (end.rows or end.failures):
            return []

        beside = Beside(
            end.failures,
            end.views.get(self.name, {}),
            *_changes(end),
            link=html_link(end.settings.output("html", end.root), os.environ),
            gates=end.gates,
            cache=end.settings.cache,
        )
        written = []
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, summary_markdown(end.rows, beside))
            written.append(Written("Markdown summary", path))
        if step:
            file = Path(step)
            used = file.stat().st_size if file.is_file() else 0
            with file.open("a", encoding="utf-8") as summary:  # GitHub's steps append
                said = summary_markdown(end.rows, beside, SUMMARY_LIMIT - used - 1)
                summary.write(("\n" if used else "") + said)
            written.append(Written("job summary", file))
        return written


def _changes(end: SessionEnd) -> tuple[dict[str, str], str]:
    """Each run's change by node id (since the history store's like run, else against the
    baseline), and which run it was compared with."""
    view = end.history()
    by_label = {row.label: row.direction for row in view.rows} if view else {}
    deltas = end.deltas()
    words = {"regression": "regressed", "improved": "improved"}
    changes = {}
    for row in end.rows:
        key = spec_key(row.nodeid)
        said = by_label.get(key.rsplit("::", 1)[-1])
        said = said or words.get(str(deltas.get(key, {}).get("baseline")), "")
        if said:
            changes[row.nodeid] = said
    compared = f"run {view.previous}" if view is not None and view.previous else ""
    return changes, compared


#: The Markdown format, as the ``pytest_atom.report_formats`` entry point names it.
MARKDOWN = MarkdownSummary()
