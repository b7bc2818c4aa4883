"""`pytest --atom`: the session plugin, which holds the run's `SuiteRun` (`pytest_atom.suite`)
and calls into it from pytest's hooks: it collects spec files (`pytest_atom.pytest.items`),
turns each run's report into a summary row, and ends the session with the suite's summary
and exit status. Registered by `pytest_atom.plugin` only when ``--atom`` is given.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Generator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.baseline.measure import junit_properties, measured
from pytest_atom.cost.spend import SPEND_WORDS
from pytest_atom.errors import BaselineError
from pytest_atom.history.records import item_to_dict
from pytest_atom.history.write import (
    claude_version_of,
    item_of_spec,
    item_record,
    outcome_word,
)
from pytest_atom.inert import inert, is_inert
from pytest_atom.paths import SPEC_SUFFIX, display_path, node_id
from pytest_atom.pytest.items import AtomItem, BrokenSpec, EvalCaseFile, SpecFile
from pytest_atom.pytest.mod_tests import ModTestItem, collect_mod_test
from pytest_atom.pytest.settings import SUITE_RUN, pytest_harness, suite_run
from pytest_atom.reports.format import report_formats
from pytest_atom.reports.summary import summary_width
from pytest_atom.results.outcome import Outcome
from pytest_atom.results.rows import SummaryRow
from pytest_atom.run.harness import Harness
from pytest_atom.run.interrupted import InterruptedRun
from pytest_atom.settings.output_paths import output_path_errors
from pytest_atom.suite.suite_run import SuiteRun, Summary


class Measured:
    """What repeats and arms measured, into JUnit XML's test-suite properties and the
    ``--atom-report`` folder (``measured.json``): first among the session-finish hooks,
    before junitxml writes its file."""

    def __init__(self, suite: SuiteRun) -> None:
        self.suite = suite

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        rows = self.suite.rows
        if hasattr(session.config, "workerinput") or not rows:
            return
        from _pytest.junitxml import xml_key  # record_testsuite_property's own way in

        xml = session.config.stash.get(xml_key, None)
        gates = self.suite.gates
        if xml is not None:
            for name, value in junit_properties(rows, gates):
                xml.add_global_property(name, value)
        report_dir = self.suite.harness.report_dir
        figures = measured(rows, gates)
        if report_dir is not None and (
            figures["repeats"] or figures["arms"] or figures["triggers"]
        ):
            report_dir.mkdir(parents=True, exist_ok=True)
            text = json.dumps(figures, indent=2, ensure_ascii=False) + "\n"
            (report_dir / "measured.json").write_text(text, encoding="utf-8")


class AtomSession:
    """The plugin's per-session hooks over its `SuiteRun`."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        worker = getattr(config, "workerinput", {})
        if "atom_seed" in worker:  # an xdist worker draws from its controller's seed
            config.option.atom_seed = worker["atom_seed"]
        harness = pytest_harness(config)
        if not worker and not config.option.collectonly:  # once, before any spec runs
            _check_output_paths(config, harness)
        # A fresh seed goes on the command line, so per-test settings resolve to it too.
        config.option.atom_seed = harness.settings.seed
        try:
            self.suite = SuiteRun(harness)
        except BaselineError as exc:
            raise pytest.UsageError(f"--atom-baseline: {exc}") from None
        config.stash[SUITE_RUN] = self.suite
        self.interrupted: InterruptedRun | None = None  # Ctrl-C stopped this spec's run
        self.last_failed_note = ""  # what --atom-last-failed selected, shown after collection
        #: Each spec run's report-format views (`ReportFormat.view`), by format, by node id.
        self.views: dict[str, dict[str, Any]] = {}
        self.failures: dict[str, str] = {}  # specs the harness could not run: their reports
        config.pluginmanager.register(Measured(self.suite), "atom-measured")

    @property
    def harness(self) -> Harness:
        return self.suite.harness

    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """``--atom-last-failed``: deselect the spec items whose line passed in the store's
        last run, through pytest's deselect hook so the counts read right (as ``--lf``)."""
        kept, dropped, self.last_failed_note = self.suite.last_failed(
            items, lambda item: item.spec if isinstance(item, AtomItem) else None
        )
        if dropped:
            config.hook.pytest_deselected(items=dropped)
            items[:] = kept

    def pytest_report_collectionfinish(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> list[str]:
        others = self._others_note(config, items)
        return [line for line in (self.last_failed_note, others) if line]

    def _others_note(self, config: pytest.Config, items: list[pytest.Item]) -> str:
        """With no path named, pytest's own tests collected beside the specs run too: said
        once, with how to run only the specs."""
        if config.args_source == pytest.Config.ArgsSource.ARGS:
            return ""  # the paths named are the ones meant
        # A mod's test file is no spec, but --atom collects it: not pytest's own.
        others = sum(
            1 for item in items if not isinstance(item, (AtomItem, BrokenSpec, ModTestItem))
        )
        if not others:
            return ""
        where = (
            f"testpaths: {' '.join(config.getini('testpaths'))}"
            if config.args_source == pytest.Config.ArgsSource.TESTPATHS
            else "this folder's"
        )
        paths = self.harness.settings.spec_paths(self.harness.root)
        only = " ".join(display_path(p) for p in paths) if paths else "SPEC_FOLDER"
        return (
            f"pytest-atom: {others} of {len(items)} items are pytest's own tests ({where}), "
            f"not specs, and run too; only the specs: pytest --atom {only}"
        )

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.suite.collection_order(item.nodeid for item in session.items)
        problem = self.suite.arms_problem()
        if problem:
            raise pytest.UsageError(problem)
        if (
            not self.config.option.collectonly
            and not self.harness.settings.cache  # most may come from the store: when one runs
            and any(isinstance(item, AtomItem) for item in session.items)
        ):
            # Specs will run: the session's imports now, not inside the first spec's item.
            self.harness.load_machinery()

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Under xdist the controller collects nothing itself: a worker's list is the order."""
        if not self.suite.order:
            self.suite.collection_order(ids)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist's workers parse the command line anew: hand them this run's seed."""
        node.workerinput["atom_seed"] = self.harness.settings.seed

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        """A spec item's history record (`atom_history`) and its run's views for each report
        format (`atom_views`; None: the harness could not run it) ride on its report, which
        xdist carries to the controller whole; none lands in JUnit XML."""
        report = yield
        if call.when == "call" and isinstance(item, AtomItem):
            report.atom_history = _history_payload(item, report)  # type: ignore[attr-defined]
            report.atom_views = _views(item)  # type: ignore[attr-defined]
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect each spec's figures from its report (they cross xdist's process border);
        a step's subtest report repeats its item's properties, so only the item's counts."""
        if type(report).__name__ == "SubtestReport":
            return
        props = dict(report.user_properties)
        if SPEND_WORDS in str(report.longrepr or "") or SPEND_WORDS in str(
            props.get("atom_limit_exceeded", "")
        ):
            self.suite.spending_limit = True  # a spec stopped, or not started, at the limit
        outcome = Outcome.from_properties(props) if report.when == "call" else None
        if outcome is not None:
            outcome = _as_reported(outcome, report)
            self.suite.rows.append(SummaryRow.of(report.nodeid, props, outcome))
        elif report.failed:
            self.suite.other_failures += 1
        if hasattr(report, "atom_views"):
            if report.atom_views is None:  # its failure report says why
                self.failures[report.nodeid] = report.longreprtext
            for name, view in report.atom_views.items() if report.atom_views else ():
                self.views.setdefault(name, {})[report.nodeid] = view
        history = getattr(report, "atom_history", None)
        if isinstance(history, dict) and report.when == "call":
            if outcome is not None:  # as pytest finally reported it
                history["item"]["outcome"] = outcome_word(outcome.label)
            self.suite.history_item(report.nodeid, history)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """The suite's exit status (`SuiteRun.exit_status`) over pytest's own; once, on the
        controller, every report format's session end (not for a session that only
        collected), then old run folders go."""
        controller = not hasattr(self.config, "workerinput")
        if controller:
            if not self.config.option.collectonly:
                self.suite.finish_reports(self.views, self.failures)
            self.suite.finish()
            if self.suite.rows:  # what `atom baseline save` reads
                self.suite.write_results()
        status = self.suite.exit_status(int(exitstatus), compare=controller)
        if status != exitstatus:
            session.exitstatus = pytest.ExitCode(status)

    def pytest_report_header(self) -> str:
        return f"pytest-atom: seed {self.harness.settings.seed} (reproduce: --atom-seed)"

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        self.interrupted = InterruptedRun.of(excinfo.value)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for what, path in self.suite.written:
            terminalreporter.write_line(f"pytest-atom: {what} written to {path}")
        if self.interrupted is not None:
            terminalreporter.write_sep("=", "pytest-atom: interrupted")
            for line in self._interrupted_lines(self.interrupted):
                _write(terminalreporter, line, yellow=True)
        if self.suite.history_error:  # loud, whatever else the summary shows
            _write(terminalreporter, self.suite.history_error, red=True)
        if not self.suite.rows:
            return
        terminalreporter.write_sep("=", "pytest-atom")
        columns = shutil.get_terminal_size().columns
        said = self.suite.summary(summary_width(bool(terminalreporter.isatty), columns))
        for line in said.table:
            _write(terminalreporter, line)
        _write(terminalreporter, f"seed {self.harness.settings.seed}: --atom-seed reproduces it")
        _write_notes(terminalreporter, said)

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
        if file_path.name.endswith((".test.ts", ".test.tsx")):
            return collect_mod_test(file_path, parent, **_inert_nodeid(parent, file_path))
        if file_path.name in ("case.yaml", "prompt.md"):
            from pytest_atom.evalsuite.suites import is_case_file

            if is_case_file(file_path):
                return EvalCaseFile.from_parent(
                    parent, path=file_path, **_inert_nodeid(parent, file_path)
                )
        return None


def _write_notes(terminalreporter: Any, said: Summary) -> None:
    # Lines, not Python warnings: `filterwarnings = error` must not turn them into crashes.
    for line in said.notes + said.tries + said.criteria:
        _write(terminalreporter, line)
    if said.spending:
        _write(terminalreporter, said.spending, red=True)
    for line in said.sandbox:
        _write(terminalreporter, line, yellow=True)
    if said.results_error:
        _write(terminalreporter, said.results_error, red=True)
    if said.baseline is not None:
        terminalreporter.write_line("")
        for line, red in said.baseline:
            _write(terminalreporter, line, red=red)
    for lines in (said.rates, said.arms or None, said.cases or None, said.triggers or None):
        if lines is not None:
            terminalreporter.write_line("")
            for line in lines:
                _write(terminalreporter, line)


def _inert_nodeid(parent: pytest.Collector, file_path: Path) -> dict[str, Any]:
    """A spec file's node id, inert when its path holds control characters (pytest writes it
    into JUnit XML's ``classname`` unescaped, where an ESC breaks the file); empty (pytest's
    own) for every other path."""
    try:
        relative = file_path.relative_to(parent.config.rootpath).as_posix()
    except ValueError:
        relative = file_path.as_posix()
    return {} if is_inert(relative) else {"nodeid": inert(relative)}


def _check_output_paths(config: pytest.Config, harness: Any) -> None:
    """A runs folder, ``--atom-report`` or ``--atom-html`` that cannot be written is a usage
    error now, not a traceback once every spec has run."""
    errors = output_path_errors(
        harness.settings,
        harness.root,
        flag=lambda option: option.pytest_flag,
        given=lambda option: getattr(config.option, option.ini_name, None) is not None,
    )
    if errors:
        raise pytest.UsageError("\n".join(errors))


def _write(terminalreporter: Any, line: str, **markup: bool) -> None:
    """A summary line, inert (`pytest_atom.inert`): notes quote run text."""
    terminalreporter.write_line(inert(line), **markup)


def _views(item: AtomItem) -> dict[str, Any] | None:
    """Each installed format's view of the item's run (`ReportFormat.view`), by name."""
    if item.result is None:
        return None
    settings = suite_run(item.config).harness.settings
    found = (
        (f.name, f.view(item.result, repeat=item.repeat, settings=settings))
        for f in report_formats()
    )
    return {name: view for name, view in found if view is not None}


def _history_payload(item: AtomItem, report: pytest.TestReport) -> dict[str, Any]:
    """The item's history record as JSON values, with the Claude Code version it ran (from
    its spec and report when the harness could not run it)."""
    from pytest_atom.replay.scrub import Scrubber  # specs ran: the machinery is loaded

    result, scrubber = item.result, Scrubber()
    if result is None:
        outcome = "skipped" if report.skipped else "error" if report.failed else report.outcome
        why = report.longreprtext.strip().splitlines()[:1]
        why_line = scrubber.scrub(why[0]) if why else ""
        record = item_of_spec(item.spec, item.repeat, outcome, why_line)
        return {"item": item_to_dict(record), "claude": None}
    record = item_record(result, item.repeat, scrubber=scrubber)
    return {"item": item_to_dict(record), "claude": claude_version_of(result)}


def _as_reported(outcome: Outcome, report: pytest.TestReport) -> Outcome:
    """The spec's outcome as pytest reported its item: pytest has the last word where it
    adds to the run (a snapshot, an xfail mark from outside the spec)."""
    if report.failed and outcome.ok:
        first = report.longreprtext.strip().splitlines()
        return outcome.failed_by_pytest(first[0] if first else "failed in pytest")
    if hasattr(report, "wasxfail") and outcome.xfail is None and outcome.status != "error":
        return replace(outcome, xfail=str(report.wasxfail))
    return outcome
