"""`pytest --atom`: the session plugin, spec files as collectors and specs as test items.

Registered by `pytest_atom.plugin` only when ``--atom`` is given. Each spec becomes an
`AtomItem`, a `pytest.Function` subclass rather than a bare `pytest.Item`: fixtures,
marks and plugins that expect test functions (syrupy's `snapshot` among them) keep
working on spec items. Every item runs through the session's one `Harness`.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.cassettes.scrub import Scrubber
from pytest_atom.model.arms import select_arms, unknown_arms
from pytest_atom.model.config import ConfigError, load_config
from pytest_atom.model.outcome import Outcome
from pytest_atom.model.result import SpecResult
from pytest_atom.model.settings import (
    COMMAND_LINE_SETTINGS,
    FILE_SETTINGS,
    Layer,
    RunSettings,
    SettingsError,
    from_here,
    resolve,
)
from pytest_atom.model.spec import load_specs
from pytest_atom.model.spec_types import Mark, Spec, SpecError
from pytest_atom.model.spend import EXIT_SPENDING_LIMIT, SPEND_WORDS, SpendingLimitReached
from pytest_atom.model.stats import StatsUnavailable
from pytest_atom.paths import SPEC_SUFFIX, display_path, node_id
from pytest_atom.reports.baseline import RESULTS_NAME, BaselineError, write_results
from pytest_atom.reports.measure import arm_lines, junit_properties, measured, repeat_lines
from pytest_atom.reports.properties import result_properties
from pytest_atom.reports.rows import SummaryRow
from pytest_atom.reports.summary import (
    failed_tries_lines,
    pass_rates,
    sandbox_warning_lines,
    summary_table,
    summary_width,
)
from pytest_atom.reports.text import failure_report, step_line
from pytest_atom.run.harness import Harness, build_harness, file_layers
from pytest_atom.run.interrupted import InterruptedRun

#: Settings a test may set for itself (a mark, the `atom_settings` fixture); the rest
#: (where runs go, how many stay, how often each spec runs) belong to the whole session.
PER_TEST = (
    "record_mode",
    "match",
    "upstream",
    "strict_version",
    "rejudge",
    "judge",
    "threshold",
)


def pytest_harness(config: pytest.Config) -> Harness:
    """The harness of a pytest run: its command line, ini file and `.atom/config.yaml`."""
    try:
        atom_config = load_config(cwd=config.rootpath)
    except ConfigError as err:
        raise pytest.UsageError(str(err)) from None
    try:
        harness = build_harness(
            [command_line(config), *file_layers(_ini(config), atom_config)],
            root=config.rootpath,
            config=atom_config,
            hook=config.hook,
            # each xdist worker holds its share of the session's spending limit
            workers=int(getattr(config, "workerinput", {}).get("workercount") or 1),
        )
        return harness
    except SettingsError as err:
        raise pytest.UsageError(str(err)) from None


def command_line(config: pytest.Config) -> Layer:
    """The ``--atom-*`` options; their paths are taken from where pytest ran
    (``invocation_params.dir``), as ``atom run`` takes them from its current folder."""
    values = {name: getattr(config.option, f"atom_{name}", None) for name in COMMAND_LINE_SETTINGS}
    values = from_here(values, config.invocation_params.dir)
    return Layer("the command line", values, key=lambda name: "--atom-" + name.replace("_", "-"))


def settings_for(harness: Harness, node: pytest.Item, fixture: dict[str, Any]) -> RunSettings:
    """A test's settings: the command line, then its marks, then `atom_settings`, then files.

    The command line wins over the marks: it is the person's intent for this very run,
    such as CI forcing ``--atom-record-mode=none``.
    """
    marks: dict[str, Any] = {}
    for mark in node.iter_markers("atom"):  # closest first: a test's mark beats its module's
        marks = {**mark.kwargs, **marks}
    layers = [Layer("@pytest.mark.atom", marks), Layer("the atom_settings fixture", fixture)]
    for layer in layers:
        unknown = sorted(set(layer.values) - set(PER_TEST))
        if unknown:
            raise SettingsError(
                f"{', '.join(unknown)} cannot be set per test in {layer.source}: it belongs "
                f"to the whole run (the command line, the ini file or .atom/config.yaml); "
                f"per test: {', '.join(PER_TEST)}"
            )
    files = file_layers(_ini(node.config), harness.config)
    return resolve([command_line(node.config), *layers, *files])


def _ini(config: pytest.Config) -> dict[str, Any]:
    return {f"atom_{name}": config.getini(f"atom_{name}") for name in FILE_SETTINGS}


class ReplayError(Exception):
    """The replay diverged from its cassette: the harness's failure, never the agent's."""

    def __init__(self, result: SpecResult) -> None:
        super().__init__(f"atom spec '{result.spec.name}': replay diverged from its cassette")
        self.result = result


class UpstreamFailed(Exception):
    """A recording failed on its upstream (the API): never the agent's failure."""

    def __init__(self, result: SpecResult) -> None:
        super().__init__(f"atom spec '{result.spec.name}': the recording's upstream failed")
        self.result = result


class SpecFailed(Exception):
    """The agent ran but the spec failed; carries the result for the report."""

    def __init__(self, result: SpecResult) -> None:
        super().__init__(f"atom spec '{result.spec.name}' failed")
        self.result = result


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class SnapshotMismatch(Exception):
    """Workspace files that differ from their snapshots; carries syrupy's diffs."""

    def __init__(self, mismatches: list[tuple[str, list[str]]]) -> None:
        super().__init__(", ".join(name for name, _ in mismatches))
        self.mismatches = mismatches

    def report(self) -> str:
        lines = []
        for name, diff in self.mismatches:
            lines.append(f"snapshot of {name} does not match (accept it with --snapshot-update):")
            lines += ["    " + line for line in diff]
        return "\n".join(lines)


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
        self.arms_seen: set[str | None] = set()  # every arm of the collected specs, for --atom-arms
        config.pluginmanager.register(Measured(self), "atom-measured")

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.order = {item.nodeid: n for n, item in enumerate(session.items)}
        problem = unknown_arms(self.harness.settings.arms, self.arms_seen, "--atom-arms")
        if problem:
            raise pytest.UsageError(problem)

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
                write_results(self.results, self.harness.runs_dir.parent / RESULTS_NAME)
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
                terminalreporter.write_line(line, yellow=True)
        if not self.results:
            return
        # Collection order, as without -n: xdist reports runs in the order they finish.
        self.results.sort(key=lambda row: self.order.get(row.nodeid, len(self.order)))
        terminalreporter.write_sep("=", "pytest-atom")
        columns = shutil.get_terminal_size().columns
        width = summary_width(bool(terminalreporter.isatty), columns)
        for line in summary_table(self.results, width):
            terminalreporter.write_line(line)
        terminalreporter.write_line(f"seed {self.harness.settings.seed}: --atom-seed reproduces it")
        # Lines, not Python warnings: `filterwarnings = error` must not turn them into crashes.
        for row in self.results:
            for label, text in row.notes():
                terminalreporter.write_line(f"{label}: {row.nodeid}: {text}")
        for line in failed_tries_lines(self.results):
            terminalreporter.write_line(line)
        if self.spending_limit:
            spend = self.harness.spend
            said = spend.summary() if spend is not None else None
            terminalreporter.write_line(
                said or f"spending limit reached ({self.harness.spend_option}); exit status 2",
                red=True,
            )
        for line in sandbox_warning_lines(self.results):
            terminalreporter.write_line(line, yellow=True)
        if self.stats_error:
            terminalreporter.write_line(f"baseline gate: error: {self.stats_error}", red=True)
        elif self.baseline is not None:
            terminalreporter.write_line("")
            for line, red in self.baseline.flagged_lines():
                terminalreporter.write_line(line, red=red)
        gate = self.harness.settings.min_pass_rate
        if self.repeat > 1 or gate is not None:
            terminalreporter.write_line("")
            for line in repeat_lines(self.results, gate):
                terminalreporter.write_line(line)
        arms = arm_lines(self.results)
        if arms:
            terminalreporter.write_line("")
            for line in arms:
                terminalreporter.write_line(line)

    def _interrupted_lines(self, stop: InterruptedRun) -> list[str]:
        command = f"pytest --atom '{node_id(stop.spec.path, stop.spec.name, self.config.rootpath)}'"
        mode = self.harness.settings.record_mode
        command += f" --atom-record-mode={mode}" if mode != "none" else ""
        return stop.lines(command, f"{command} --atom-resume {display_path(stop.run_dir)}")

    def pytest_collect_file(
        self, file_path: Path, parent: pytest.Collector
    ) -> pytest.Collector | None:
        if file_path.name.endswith(SPEC_SUFFIX):
            return SpecFile.from_parent(parent, path=file_path)
        if file_path.name in ("case.yaml", "prompt.md"):
            from pytest_atom.model.evalsuite import is_case_file

            if is_case_file(file_path):
                return EvalCaseFile.from_parent(parent, path=file_path)
        return None


def _as_reported(outcome: Outcome, report: pytest.TestReport) -> Outcome:
    """The spec's outcome as pytest reported its item: pytest has the last word where it
    adds to the run (a syrupy snapshot, an xfail mark from outside the spec)."""
    if report.failed and outcome.ok:
        first = report.longreprtext.strip().splitlines()
        return outcome.failed_by_pytest(first[0] if first else "failed in pytest")
    if hasattr(report, "wasxfail") and outcome.xfail is None and outcome.status != "error":
        return replace(outcome, xfail=str(report.wasxfail))
    return outcome


def _session(config: pytest.Config) -> AtomSession:
    session = config.pluginmanager.getplugin("atom-session")
    assert isinstance(session, AtomSession)
    return session


class SpecFile(pytest.File):
    def load(self) -> list[Spec]:
        """The file's specs (its check kinds are in `self.registry`)."""
        return load_specs(self.path, check_kinds=self.registry.kinds())

    def repeats(self, spec: Spec) -> int:
        """How often each spec runs: ``--atom-repeat``."""
        return _session(self.config).harness.settings.repeat

    def collect(self) -> Iterator[pytest.Item]:
        harness = _session(self.config).harness
        self.registry = harness.registry(self.ihook)
        try:
            specs = self.load()
        except SpecError as err:
            # An item that errors at setup, not a collection error: pytest would stop the
            # whole run for one, and the other specs must still run.
            yield BrokenSpec.from_parent(self, name=self.path.name, error=err)
            return
        session = _session(self.config)
        session.arms_seen.update(s.arm for s in specs if s.arm is not None)
        specs = select_arms(specs, harness.settings.arms)
        missing = _missing_syrupy(specs)
        if missing:
            yield BrokenSpec.from_parent(self, name=self.path.name, error=missing)
            return
        for spec, run in ((s, r) for s in specs for r in range(1, self.repeats(s) + 1)):
            repeat = self.repeats(spec)
            name = spec.name if repeat == 1 else f"{spec.name}[r{run}]"
            item = AtomItem.from_parent(
                self,
                name=name,
                spec=spec,
                callobj=_test_function(spec),
                repeat=run if repeat > 1 else None,
            )
            item.add_marker(pytest.mark.atom)
            if spec.xfail:  # `xfail:`, or an xfail in `marks:`
                # Only a failed spec counts as the expected failure, never a harness error.
                item.add_marker(pytest.mark.xfail(reason=spec.xfail, raises=SpecFailed))
            for mark in spec.marks:
                item.add_marker(pytest_mark(mark))
            yield item


class EvalCaseFile(SpecFile):
    """A `claude plugin eval` case (pytest_atom.model.evalsuite): its arms as specs, run `runs`
    times unless ``--atom-repeat`` says otherwise."""

    def load(self) -> list[Spec]:
        from pytest_atom.judge.eval_graders import register_checks
        from pytest_atom.model.evalsuite import load_case
        from pytest_atom.model.evalsuite_specs import case_specs

        self.case = load_case(self.path)
        register_checks(self.registry)
        return case_specs(self.case, self.registry.kinds())

    def repeats(self, spec: Spec) -> int:
        if self.config.option.atom_repeat is not None:
            return super().repeats(spec)
        return self.case.runs


def pytest_mark(mark: Mark) -> pytest.MarkDecorator:
    """A `marks:` entry as pytest's own mark: skip and skipif as pytest evaluates them
    (a skipif condition is a string, evaluated with `os`, `sys`, `platform` and `config`),
    a custom mark by name (so ``-m NAME`` selects the spec)."""
    if mark.name == "skip":
        return pytest.mark.skip(reason=mark.reason or "")
    if mark.name == "skipif":
        return pytest.mark.skipif(mark.condition or "False", reason=mark.reason or "")
    custom: pytest.MarkDecorator = getattr(pytest.mark, mark.name)
    return custom


def _missing_syrupy(specs: list[Spec]) -> SpecError | None:
    """A spec with `snapshot:` needs syrupy, an optional extra: say how to get it."""
    using = next((s for s in specs if s.snapshot), None)
    if using is None or importlib.util.find_spec("syrupy") is not None:
        return None
    return SpecError(
        f"spec '{using.name}' compares `snapshot:` files, which needs syrupy: "
        "pip install 'pytest-atom[snapshot]'",
        using.path,
        line=using.line,
    )


class BrokenSpec(pytest.Item):
    """A spec file that cannot be loaded: its setup fails with the file, line and fix."""

    def __init__(self, *, error: SpecError, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.error = error

    def setup(self) -> None:
        pytest.fail(str(self.error), pytrace=False)

    def runtest(self) -> None:  # never reached: setup fails
        raise AssertionError(str(self.error))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"atom spec file {self.path.name}"


def _test_function(spec: Spec) -> Any:
    # Only specs with `snapshot:` request syrupy's fixture, so -p no:syrupy keeps working.
    if spec.snapshot:

        def run_atom_spec(
            request: pytest.FixtureRequest, atom_settings: dict[str, Any], snapshot: Any
        ) -> None:
            item = request.node
            assert isinstance(item, AtomItem)
            item.run_spec(request, atom_settings, snapshot)

    else:

        def run_atom_spec(  # type: ignore[misc]
            request: pytest.FixtureRequest, atom_settings: dict[str, Any]
        ) -> None:
            item = request.node
            assert isinstance(item, AtomItem)
            item.run_spec(request, atom_settings, None)

    run_atom_spec.__name__ = spec.name
    run_atom_spec.__module__ = spec.path.name.removesuffix(SPEC_SUFFIX)
    return run_atom_spec


def _run_errors() -> tuple[type[Exception], ...]:
    """Failures of the harness itself; a ValueError (a value the harness could not use) too.

    Read when a spec runs: collecting specs loads none of the machinery that raises them
    (the gateway, the agents, httpx)."""
    from pytest_atom.run.execution import HARNESS_ERRORS

    return (*HARNESS_ERRORS, ValueError)


class AtomItem(pytest.Function):
    """One spec as a test function; its body runs the spec and raises on failure."""

    def __init__(self, *, spec: Spec, repeat: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.repeat = repeat  # which of --atom-repeat's runs, or None
        self.result: SpecResult | None = None

    def run_spec(
        self, request: pytest.FixtureRequest, atom_settings: dict[str, Any], snapshot: Any
    ) -> None:
        harness = _session(self.config).harness
        spec_file = self.parent
        assert isinstance(spec_file, SpecFile)
        try:
            settings = settings_for(harness, self, atom_settings)
            result = harness.run(
                self.spec, registry=spec_file.registry, repeat=self.repeat, settings=settings
            )
        except SpendingLimitReached as exc:
            pytest.skip(str(exc))
        except _run_errors() as exc:
            problem = str(exc)  # reported outside the except block: no chained traceback
        else:
            problem = ""
        if problem:
            pytest.fail(
                f"pytest-atom could not run spec '{self.spec.name}': {problem}", pytrace=False
            )
        self.result = result
        outcome = result.outcome
        record_result(self, result)
        baseline = _session(self.config).baseline
        if baseline is not None:
            self.user_properties += baseline.item_properties(
                self.nodeid, dict(self.user_properties), own=self.spec.baseline_tolerance
            )
        _report_steps(request, result)
        self._conclude(outcome, result, snapshot)

    def _conclude(self, outcome: Outcome, result: SpecResult, snapshot: Any) -> None:
        """The run's outcome as pytest's: a failure is the item's exception (pytest's xfail
        mark, on `SpecFailed` only, turns an expected one into xfailed)."""
        if outcome.error == "replay":
            raise ReplayError(result)  # never the expected failure of an xfail spec
        if outcome.error == "upstream":
            raise UpstreamFailed(result)  # its failure report says what the API answered
        if outcome.error is not None:
            # Never the expected failure of an xfail spec, never a pass: the harness broke.
            pytest.fail(
                f"pytest-atom {outcome.error} error in spec '{self.spec.name}': "
                f"{result.harness_error or outcome.why}\n"
                f"run dir: {display_path(result.run_dir)}",
                pytrace=False,
            )
        if outcome.status == "failed":
            raise SpecFailed(result)
        if snapshot is not None:
            self._check_snapshots(snapshot, result)

    def _check_snapshots(self, snapshot: Any, result: SpecResult) -> None:
        """Compare the listed workspace files with their syrupy snapshots, after a pass."""
        mismatches = []
        for name in self.spec.snapshot:
            path = result.workspace / name
            data = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
            if not snapshot(name=name) == (data if data is not None else f"<{name} is missing>"):
                diff = snapshot.get_assert_diff()
                if not self.config.get_terminal_writer().hasmarkup:
                    diff = [_ANSI.sub("", line) for line in diff]
                mismatches.append((name, diff))
        if mismatches:
            raise SnapshotMismatch(mismatches)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.spec.line - 1, f"atom spec {self.spec.name}"

    # Same signature as pytest.Function's, which itself narrows Node.repr_failure.
    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, (SpecFailed, ReplayError, UpstreamFailed)):
            # It quotes the agent and lands in JUnit XML: scrubbed, with the run's transcripts
            # as context, so a secret assigned there is redacted where the report repeats it.
            result = excinfo.value.result
            return Scrubber().scrub_obj(
                [failure_report(result), *(r.stdout for r in result.records)]
            )[0]
        if isinstance(excinfo.value, SnapshotMismatch):
            return excinfo.value.report()
        return super().repr_failure(excinfo)


def _report_steps(request: pytest.FixtureRequest, result: SpecResult) -> None:
    """Each step of a multi-step spec as a pytest subtest, where pytest has them (9.0 on):
    which step failed shows at a glance; the failure report still tells the whole story."""
    if not result.steps or result.outcome.error is not None or result.spec.xfail:
        # The machinery failed, not a step, and the item's own failure says so; an xfail
        # spec's expected failure is the whole spec's, not a step's.
        return
    try:
        subtests = request.getfixturevalue("subtests")
    except pytest.FixtureLookupError:
        return  # an older pytest: the failure report's per-step lines stand in
    for step in result.steps:
        with subtests.test(msg=step.id):
            if not step.passed:
                pytest.fail(step_line(step), pytrace=False)


def record_result(item: pytest.Item, result: SpecResult) -> None:
    """A result's figures as the item's JUnit properties; the session's summary reads them."""
    if result.trace is not None:
        item.user_properties.append(("atom_trace", display_path(result.trace)))
    item.user_properties += list(result_properties(result).items())
