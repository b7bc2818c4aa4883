"""What a report format is (`ReportFormat`), and the installed ones (`report_formats`).

Formats are found through the ``pytest_atom.report_formats`` entry-point group, where
pyproject.toml declares the built-ins exactly as another distribution declares its own, and
loaded when a run first needs them, never at import (``atom --help`` loads none). A format
renders from the typed `SpecResult`, never from another format's output.

Every front end makes the same four calls, each one loop over `report_formats()` naming no
format (docs/where-to-add.md): `publish` every finished run, `properties` a pytest item's
JUnit properties, `view` what of a run the session's end needs (built where the spec ran,
it crosses processes), `finish` the session's end (`SessionEnd`). Subclass `ReportFormat`
to inherit the calls a format has nothing to do in.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar, runtime_checkable

from pytest_atom.extensions import builtin_names, load
from pytest_atom.results.rows import SummaryRow
from pytest_atom.results.thresholds import RepeatGates

if TYPE_CHECKING:
    from pytest_atom.reports.history_view import HistoryView
    from pytest_atom.results.spec_result import SpecResult
    from pytest_atom.settings.options import RunSettings

__all__ = [
    "GROUP",
    "ReportFormat",
    "SessionEnd",
    "Written",
    "builtin_formats",
    "report_formats",
]

#: The report-format entry-point group (`pytest_atom.extensions`).
GROUP = "pytest_atom.report_formats"

#: What one format renders a run as: a str, a list of pairs, a JSON-able mapping.
Rendered_co = TypeVar("Rendered_co", covariant=True)


class Written(NamedTuple):
    """A file a format wrote at the session's end: ``HTML report``, and where."""

    what: str
    path: Path


@dataclass(frozen=True)
class SessionEnd:
    """A finished session as `ReportFormat.finish` reads it: pytest's, or combined shards'."""

    settings: RunSettings
    root: Path
    rows: Sequence[SummaryRow]
    #: Each run's `ReportFormat.view`, by format name, then by node id.
    views: Mapping[str, Mapping[str, Any]]
    #: The specs the harness could not run at all: why, by node id.
    failures: Mapping[str, str]
    gates: RepeatGates
    #: The baseline's change of each spec's figures (the gate compared once, when asked).
    deltas: Callable[[], Mapping[str, Any]] = dict
    #: The history store's comparison and trends, when the session keeps one.
    history: Callable[[], HistoryView | None] = lambda: None
    #: Where a copy of the newest page goes (`atom view`); None: nowhere.
    runs_dir: Path | None = field(default=None)


@runtime_checkable  # `extensions.load` checks each entry point against it
class ReportFormat(Protocol[Rendered_co]):
    """A report format: its `name`, `render` and the four calls every front end makes of it."""

    @property
    def name(self) -> str:
        """The format's name: ``text``, ``junit-properties``, ``html``, ..."""
        ...

    def render(self, result: SpecResult, *, repeat: int | None = None) -> Rendered_co:
        """`result` in this format; `repeat`: which repeat it was (None: the spec ran once)."""
        ...

    def publish(self, result: SpecResult, *, repeat: int | None, report_dir: Path | None) -> None:
        """Every finished run; `report_dir`: the ``--atom-report`` folder (None without it)."""
        return None

    def properties(self, result: SpecResult) -> list[tuple[str, object]]:
        """The run's JUnit properties (``record_property`` pairs), if any."""
        return []

    def view(self, result: SpecResult, *, repeat: int | None, settings: RunSettings) -> Any:
        """What of this run `finish` will need (JSON-able); None: nothing."""
        return None

    def finish(self, end: SessionEnd) -> list[Written]:
        """The session's end, once, where every run's view met: the files written."""
        return []


@cache
def report_formats() -> tuple[ReportFormat[object], ...]:
    """Every installed format, each once: pytest-atom's own, then other distributions'."""
    return tuple(load(GROUP, ReportFormat).values())


def builtin_formats() -> tuple[ReportFormat[object], ...]:
    own = builtin_names(GROUP)
    return tuple(f for f in report_formats() if f.name in own)
