"""`pytest --atom`: the session plugin, which holds the run's one `Harness`, collects spec
files (`pytest_atom.pytest.items`), gathers each run's figures from its report, and ends the
session with the summary, the gates and the exit status.

Registered by `pytest_atom.plugin` only when ``--atom`` is given.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.baseline.compare import results_file, write_results
from pytest_atom.baseline.measure import arm_lines, junit_properties, measured, repeat_lines
from pytest_atom.cost.spend import EXIT_SPENDING_LIMIT, SPEND_WORDS
from pytest_atom.errors import BaselineError, StatsUnavailable
from pytest_atom.inert import inert, is_inert
from pytest_atom.paths import SPEC_SUFFIX, display_path, node_id
from pytest_atom.pytest.items import AtomItem, EvalCaseFile, SpecFile
from pytest_atom.pytest.settings import pytest_harness
from pytest_atom.reports.summary import (
    environment_lines,
    failed_tries_lines,
    pass_rates,
    sandbox_warning_lines,
    summary_table,
    summary_width,
)
from pytest_atom.results.outcome import Outcome
from pytest_atom.results.rows import SummaryRow
from pytest_atom.run.interrupted import InterruptedRun
from pytest_atom.settings.output_paths import output_path_errors
from pytest_atom.spec.arms import unknown_arms


class Measured:
    """What repeats and arms measured, into JUnit XML's test-suite properties and the
    ``--atom-report`` folder (``measured.json``): before junitxml writes its file, so
    first among the session-finish hooks, unlike `AtomSession`'s, which runs last."""

    def __init__(self, session: AtomSession) -> None:
        self.session = session

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        rows = self.session.results
        if hasattr(session.config, "workerinput") or not rows:
            return
        from _pytest.junitxml import xml_key  # record_testsuite_property's own way in

        xml = session.config.stash.get(xml_key, None)
        if xml is not None:
            for name, value in junit_properties(rows):
                xml.add_global_property(name, value)
        report_dir = self.session.harness.report_dir
        figures = measured(rows)
        if report_dir is not None and (figures["repeats"] or figures["arms"]):
            report_dir.mkdir(parents=True, exist_ok=True)
            text = json.dumps(figures, indent=2, ensure_ascii=False) + "\n"
            (report_dir / "measured.json").write_text(text, encoding="utf-8")


class AtomSession:
    """Per-session state of the plugin (registered as a plugin, not module globals)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        worker = getattr(config, "workerinput", {})
        if "atom_seed" in worker:  # an xdist worker draws from its controller's seed
            config.option.atom_seed = worker["atom_seed"]
        self.harness = pytest_harness(config)
        if not worker and not config.option.collectonly:  # once, before any spec runs
            _check_output_paths(config, self.harness)
        # A fresh seed goes on the command line, so per-test settings resolve to it too.
        config.option.atom_seed = self.harness.settings.seed
        self.results: list[SummaryRow] = []
        self.other_failures = 0  # failed reports that are not spec runs: never gated away
        self.spending_limit = False  # a spec was stopped, or not run, at --atom-max-cost-usd
        try:
            self.baseline = self.harness.baseline_gate()
        except BaselineError as exc:
            raise pytest.UsageError(f"--atom-baseline: {exc}") from None
        self.compared = self.regressed = False  # the whole run against the baseline, once
        self.order: dict[str, int] = {}  # node ids in collection order, for the summary
        self.interrupted: InterruptedRun | None = None  # Ctrl-C stopped this spec's run
        self.stats_error = ""  # the baseline gate needed scipy, which is not installed
        self.results_error = ""  # last-run.json could not be written
        self.arms_seen: set[str | None] = set()  # every arm of the collected specs, for --atom-arms
        config.pluginmanager.register(Measured(self), "atom-measured")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.order = {item.nodeid: n for n, item in enumerate(session.items)}
        problem = unknown_arms(self.harness.settings.arms, self.arms_seen, "--atom-arms")
        if problem:
            raise pytest.UsageError(problem)
        if not self.config.option.collectonly and any(
            isinstance(item, AtomItem) for item in session.items
        ):
            # Specs will run: the session's imports now, not inside the first spec's item.
            self.harness.load_machinery()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Under xdist the controller collects nothing itself: a worker's list is the order."""
        self.order = self.order or {nodeid: n for n, nodeid in enumerate(ids)}

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist's workers parse the command line anew: hand them this run's seed."""
        node.workerinput["atom_seed"] = self.harness.settings.seed

    @property
    def repeat(self) -> int:
        return self.harness.settings.repeat

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect each spec's figures from its report (they cross xdist's process border).

        A step's subtest report repeats its item's properties: only the item's own counts.
        """
        if type(report).__name__ == "SubtestReport":
            return
        props = dict(report.user_properties)
        if SPEND_WORDS in str(report.longrepr or "") or SPEND_WORDS in str(
            props.get("atom_limit_exceeded", "")
        ):
            self.spending_limit = True  # a spec stopped, or not started, at the limit
        outcome = Outcome.from_properties(props) if report.when == "call" else None
        if outcome is not None:
            self.results.append(SummaryRow.of(report.nodeid, props, _as_reported(outcome, report)))
        elif report.failed:
            self.other_failures += 1

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """With --atom-min-pass-rate, the pass rates decide the exit status, not single runs.

        Old run folders go here too: once, on the controller (an xdist worker has
        `workerinput`), when every worker's runs are done.
        """
        controller = not hasattr(self.config, "workerinput")
        if controller:
            self.harness.finish()
            if self.results:  # what `atom baseline save` reads
                self._write_results()
        try:
            regressed = controller and self.compare()
        except StatsUnavailable as exc:  # sampled runs to gate, and no scipy to gate them
            self.stats_error = str(exc)
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
            return
        if self.spending_limit:  # as `claude plugin eval --max-cost-usd`: 2, whatever else
            session.exitstatus = pytest.ExitCode(EXIT_SPENDING_LIMIT)
            return
        if regressed:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a regression, even if all passed
            return
        gate = self.harness.settings.min_pass_rate
        if gate is None or not self.results:
            return
        rates = pass_rates(self.results)
        if any(r.rate < gate for r in rates):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif exitstatus == pytest.ExitCode.TESTS_FAILED and not self.other_failures:
            session.exitstatus = pytest.ExitCode.OK

    def _write_results(self) -> None:
        """`last-run.json`; a folder that became unwritable during the run (checked before
        it) or a full disk is a line under the summary, not a traceback over it."""
        path = results_file(self.harness.runs_dir)
        try:
            write_results(self.results, path)
        except OSError as exc:
            self.results_error = f"could not write {display_path(path)}: {exc.strerror or exc}"

    def pytest_report_header(self) -> str:
        return f"pytest-atom: seed {self.harness.settings.seed} (reproduce: --atom-seed)"

    def compare(self) -> bool:
        """The whole run against the baseline, once (the HTML report reads it too); True
        when something regressed."""
        if self.baseline is None:
            return False
        if not self.compared:
            self.regressed = self.baseline.finish(self.results)
            self.compared = True
        return self.regressed

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        self.interrupted = InterruptedRun.of(excinfo.value)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.interrupted is not None:
            terminalreporter.write_sep("=", "pytest-atom: interrupted")
            for line in self._interrupted_lines(self.interrupted):
                _write(terminalreporter, line, yellow=True)
        if not self.results:
            return
        # Collection order, as without -n: xdist reports runs in the order they finish.
        self.results.sort(key=lambda row: self.order.get(row.nodeid, len(self.order)))
        terminalreporter.write_sep("=", "pytest-atom")
        columns = shutil.get_terminal_size().columns
        width = summary_width(bool(terminalreporter.isatty), columns)
        for line in summary_table(self.results, width):
            _write(terminalreporter, line)
        _write(terminalreporter, f"seed {self.harness.settings.seed}: --atom-seed reproduces it")
        # Lines, not Python warnings: `filterwarnings = error` must not turn them into crashes.
        for row in self.results:
            for label, text in row.notes():
                _write(terminalreporter, f"{label}: {row.nodeid}: {text}")
        for line in failed_tries_lines(self.results) + environment_lines(self.results):
            _write(terminalreporter, line)
        if self.spending_limit:
            spend = self.harness.spend
            said = spend.summary() if spend is not None else None
            _write(
                terminalreporter,
                said or f"spending limit reached ({self.harness.spend_option}); exit status 2",
                red=True,
            )
        for line in sandbox_warning_lines(self.results):
            _write(terminalreporter, line, yellow=True)
        if self.results_error:
            _write(terminalreporter, self.results_error, red=True)
        if self.stats_error:
            _write(terminalreporter, f"baseline gate: error: {self.stats_error}", red=True)
        elif self.baseline is not None:
            terminalreporter.write_line("")
            for line, red in self.baseline.flagged_lines():
                _write(terminalreporter, line, red=red)
        gate = self.harness.settings.min_pass_rate
        if self.repeat > 1 or gate is not None:
            terminalreporter.write_line("")
            for line in repeat_lines(self.results, gate):
                _write(terminalreporter, line)
        arms = arm_lines(self.results)
        if arms:
            terminalreporter.write_line("")
            for line in arms:
                _write(terminalreporter, line)

    def _interrupted_lines(self, stop: InterruptedRun) -> list[str]:
        command = f"pytest --atom '{node_id(stop.spec.path, stop.spec.name, self.config.rootpath)}'"
        mode = self.harness.settings.record_mode
        command += f" --atom-record-mode={mode}" if mode != "none" else ""
        return stop.lines(command, f"{command} --atom-resume {display_path(stop.run_dir)}")

    def pytest_collect_file(
        self, file_path: Path, parent: pytest.Collector
    ) -> pytest.Collector | None:
        if file_path.name.endswith(SPEC_SUFFIX):
            return SpecFile.from_parent(parent, path=file_path, **_inert_nodeid(parent, file_path))
        if file_path.name in ("case.yaml", "prompt.md"):
            from pytest_atom.evalsuite.cases import is_case_file

            if is_case_file(file_path):
                return EvalCaseFile.from_parent(
                    parent, path=file_path, **_inert_nodeid(parent, file_path)
                )
        return None


def _inert_nodeid(parent: pytest.Collector, file_path: Path) -> dict[str, Any]:
    """A spec file's node id, inert when its path holds control characters: pytest prints
    the node id (the progress line, the short summary) and writes it into JUnit XML's
    ``classname`` unescaped, where an ESC makes the file no longer parse. Empty (pytest's
    own node id) for every other path, and for one outside the rootdir."""
    try:
        relative = file_path.relative_to(parent.config.rootpath).as_posix()
    except ValueError:
        relative = file_path.as_posix()
    return {} if is_inert(relative) else {"nodeid": inert(relative)}


def _check_output_paths(config: pytest.Config, harness: Any) -> None:
    """A runs folder, ``--atom-report`` or ``--atom-html`` that cannot be written is a usage
    error now, naming the option and the path, not a traceback once every spec has run."""
    errors = output_path_errors(
        harness.settings,
        harness.root,
        flag=lambda option: option.pytest_flag,
        given=lambda option: getattr(config.option, option.ini_name, None) is not None,
    )
    if errors:
        raise pytest.UsageError("\n".join(errors))


def _write(terminalreporter: Any, line: str, **markup: bool) -> None:
    """A summary line, inert (`pytest_atom.inert`): notes quote run text, and node ids the
    spec file's name."""
    terminalreporter.write_line(inert(line), **markup)


def _as_reported(outcome: Outcome, report: pytest.TestReport) -> Outcome:
    """The spec's outcome as pytest reported its item: pytest has the last word where it
    adds to the run (a syrupy snapshot, an xfail mark from outside the spec)."""
    if report.failed and outcome.ok:
        first = report.longreprtext.strip().splitlines()
        return outcome.failed_by_pytest(first[0] if first else "failed in pytest")
    if hasattr(report, "wasxfail") and outcome.xfail is None and outcome.status != "error":
        return replace(outcome, xfail=str(report.wasxfail))
    return outcome
