"""`pytest --atom --atom-html PATH`: the HTML report of a pytest session.

Each spec's view (``html.spec_view``) is built where the spec ran and rides on its test
report as the attribute ``atom_view``: pytest serialises every attribute of a report
(``_report_to_json``), so it crosses from an xdist worker to the controller with the
report itself, and never lands in JUnit XML as a user property would. The controller
collects the views and writes the page once, at session end. With ``--atom-report DIR``
it also writes the shard results file (`shards.write_shard`), views included, so ``atom
results combine`` can render the shards of a CI matrix as one page.
"""

from __future__ import annotations

from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.baseline.measure import measured_lines
from pytest_atom.pytest.stash import SUITE_RUN
from pytest_atom.reports.html import spec_view, write_html
from pytest_atom.results.rows import SummaryRow
from pytest_atom.results.spec_result import SpecResult
from pytest_atom.suite.shards import page_rows, write_shard

__all__ = ["HtmlReport"]


class HtmlReport:
    """Registered as a plugin when ``--atom-html`` or ``--atom-report`` is given (on workers
    and controller): `path` is the page's, `results` the shard results file's."""

    def __init__(
        self, config: pytest.Config, path: Path | None, runs_dir: Path, results: Path | None = None
    ) -> None:
        self.config = config
        self.path = path
        self.runs_dir = runs_dir
        self.results = results
        self.views: dict[str, dict[str, Any] | None] = {}
        self.failures: dict[str, str] = {}  # reports of specs the harness could not run

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "call" and hasattr(item, "spec"):  # a spec item (plugin.AtomItem)
            result = getattr(item, "result", None)
            view = None
            if isinstance(result, SpecResult):
                view = spec_view(result, repeat=getattr(item, "repeat", None))
            report.atom_view = view  # type: ignore[attr-defined]
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if not hasattr(report, "atom_view"):
            return
        if report.atom_view is not None:
            self.views[report.nodeid] = report.atom_view
        else:  # the harness could not run the spec: its failure report says why
            self.failures[report.nodeid] = report.longreprtext

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if hasattr(self.config, "workerinput"):
            return  # the controller writes the page, once, with every worker's views
        suite = self.config.stash[SUITE_RUN]
        results: list[SummaryRow] = suite.rows
        if self.results is not None:
            # The specs the harness could not run count among the session's other failures.
            others = max(0, suite.other_failures - len(self.failures))
            write_shard(
                self.results,
                results,
                self.views,
                failures=self.failures,
                other_failures=others,
                history=suite.history_document(),
            )
        if self.path is None:
            return
        gate = suite.baseline
        if gate is not None:
            suite.compare()  # once, whichever session-finish hook comes first
        deltas = gate.deltas() if gate is not None else {}
        write_html(
            page_rows(results, self.views, self.failures, deltas),
            self.path,
            runs_dir=self.runs_dir,
            measured=measured_lines(results),
        )

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.path is not None:
            terminalreporter.write_line(f"pytest-atom: HTML report written to {self.path}")
