"""The JUnit properties format: a spec run's figures as the properties of its JUnit test case.

pytest writes an item's ``user_properties`` into its ``<testcase>`` in ``--junitxml``, and
the summary, a baseline and `atom results` read them back from there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_atom.paths import display_path
from pytest_atom.reports.format import ReportFormat
from pytest_atom.reports.properties import result_properties

if TYPE_CHECKING:
    from pytest_atom.results.spec_result import SpecResult


class JUnitProperties(ReportFormat[list[tuple[str, object]]]):
    """(name, value) pairs, as pytest's ``record_property`` takes them."""

    name = "junit-properties"

    def render(self, result: SpecResult, *, repeat: int | None = None) -> list[tuple[str, object]]:
        """``atom_trace`` (where its JSON trace is) first, then its figures."""
        trace = [("atom_trace", display_path(result.trace))] if result.trace is not None else []
        return [*trace, *result_properties(result).items()]

    def properties(self, result: SpecResult) -> list[tuple[str, object]]:
        return self.render(result)


#: The JUnit properties format, as the ``pytest_atom.report_formats`` entry point names it.
JUNIT_PROPERTIES = JUnitProperties()
