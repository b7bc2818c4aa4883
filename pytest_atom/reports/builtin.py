"""The built-in report formats, registered in one place.

As pytest lists its own plugins in one tuple (``default_plugins``) and syrupy names its
default extension once, pytest-atom's formats are the tuple `BUILT_IN_FORMATS`: nothing
fills a registry as a side effect of importing a module. A caller that wants one format
imports that format's object from its module (`text.TEXT`); what wants every format (the
tests that render a real run through each) reads this tuple.

Where to add a format: a new module in this package with one object satisfying
`format.ReportFormat`, appended here and to the "Report formats are independent" contract
in pyproject.toml, with its test in tests/reports/.
"""

from __future__ import annotations

from pytest_atom.reports.format import ReportFormat
from pytest_atom.reports.html import HTML
from pytest_atom.reports.json_trace import JSON_TRACE
from pytest_atom.reports.junit import JUNIT_PROPERTIES
from pytest_atom.reports.text import TEXT

__all__ = ["BUILT_IN_FORMATS"]

#: Every built-in format, each once, in the order a failed run is usually read: the text,
#: the JUnit properties, the trace, the page.
BUILT_IN_FORMATS: tuple[ReportFormat[object], ...] = (TEXT, JUNIT_PROPERTIES, JSON_TRACE, HTML)
