"""The report formats installed: the ``pytest_atom.report_formats`` entry-point group.

As pytest finds its plugins through ``pytest11``, pytest-atom finds its report formats
through one entry-point group: pyproject.toml declares the built-in ones (text, JUnit
properties, JSON trace, HTML) exactly as another distribution declares its own, and
`report_formats` loads them when a run first needs them (never at import: collecting specs
and ``atom --help`` load no format). The harness publishes every finished run through each
(`ReportFormat.publish`), in one loop.

Where to add a format: a module with one object satisfying `format.ReportFormat`, and its
line in the group (here: pyproject.toml, and the "Report formats are independent" contract;
elsewhere: the other distribution's own pyproject), with its test in tests/reports/.
"""

from __future__ import annotations

from functools import cache

from pytest_atom.extensions import builtin_names, load
from pytest_atom.reports.format import ReportFormat

__all__ = ["GROUP", "builtin_formats", "report_formats"]

#: The report-format entry-point group (`pytest_atom.extensions`).
GROUP = "pytest_atom.report_formats"


@cache
def report_formats() -> tuple[ReportFormat[object], ...]:
    """Every installed format, each once: pytest-atom's own, then other distributions'."""
    return tuple(load(GROUP, ReportFormat).values())


def builtin_formats() -> tuple[ReportFormat[object], ...]:
    """pytest-atom's own formats, by name."""
    own = builtin_names(GROUP)
    return tuple(f for f in report_formats() if f.name in own)
