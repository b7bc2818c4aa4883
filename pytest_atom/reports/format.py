"""What a report format is: a name, and how it renders one spec run.

Each format is one module of `pytest_atom.reports` holding one object that satisfies
`ReportFormat` (as each of syrupy's extensions is one module behind one base class):

- `text.TEXT`: the failure report a person reads (str);
- `junit.JUNIT_PROPERTIES`: the JUnit test case's properties ((name, value) pairs);
- `json_trace.JSON_TRACE`: the invocation trace (a JSON document);
- `html.HTML`: one run's part of the HTML page (a JSON-able view).

They are found through the ``pytest_atom.report_formats`` entry-point group
(`builtin.report_formats`), where another distribution adds its own. A format renders from the typed
`SpecResult`, never from another format's output: no format module imports another
(pyproject.toml's independence contract). What several formats say or show the same way
lives beside them in modules that are not formats: `phrases` (the words for a drift, a
step, an environment clue), `properties` (a run's figures by name), `trace` (the trace
document), `clipping` (long texts kept out of reports).

`render` turns one run into the format's value; `publish` is what the format does with
every finished run, called by the harness in one loop over the installed formats (the JSON
trace writes its file; the HTML page is assembled at the session's end; a plugin's format
may write its own file).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from pathlib import Path

    from pytest_atom.results.spec_result import SpecResult

__all__ = ["ReportFormat"]

#: What one format renders a run as: a str, a list of pairs, a JSON-able mapping.
Rendered_co = TypeVar("Rendered_co", covariant=True)


@runtime_checkable  # `extensions.load` checks each entry point against it
class ReportFormat(Protocol[Rendered_co]):
    """A report format: its `name`, and `render`, which turns one spec run into the
    format's value. It reads the result only; what it writes to disk, if anything, is its
    own module's business (`json_trace.write_report`, `html.write_html`)."""

    @property
    def name(self) -> str:
        """The format's name: ``text``, ``junit-properties``, ``json-trace``, ``html``."""
        ...

    def render(self, result: SpecResult, *, repeat: int | None = None) -> Rendered_co:
        """`result` in this format; `repeat` is which of the spec's repeats it was (None:
        the spec ran once), for the formats that name files after it."""
        ...

    def publish(self, result: SpecResult, *, repeat: int | None, report_dir: Path | None) -> None:
        """Called once for every finished run, in every session: `report_dir` is the
        ``--atom-report`` folder (None without it), where a format that writes files puts
        them. A format with nothing to do per run does nothing."""
        ...
