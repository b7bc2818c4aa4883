"""`pytest --atom`: the session plugin, spec files as collectors and specs as test items.

Registered by `pytest_atom.plugin` only when ``--atom`` is given. Each spec becomes an
`AtomItem`, a `pytest.Function` subclass rather than a bare `pytest.Item`: fixtures,
marks and plugins that expect test functions (syrupy's `snapshot` among them) keep
working on spec items. Every item runs through the session's one `Harness`.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.config import ConfigError, load_config
from pytest_atom.execution import HARNESS_ERRORS
from pytest_atom.harness import Harness, build_harness, file_layers
from pytest_atom.interrupted import InterruptedRun
from pytest_atom.paths import SPEC_SUFFIX, display_path, node_id
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.reports.baseline import RESULTS_NAME, BaselineGate, summary_lines, write_results
from pytest_atom.reports.text import (
    failure_report,
    pass_rate_lines,
    pass_rates,
    result_properties,
    sandbox_warning_lines,
    step_line,
    summary_table,
)
from pytest_atom.result import SpecResult
from pytest_atom.settings import (
    FILE_SETTINGS,
    PARSERS,
    Layer,
    RunSettings,
    SettingsError,
    resolve,
)
from pytest_atom.spec import Mark, Spec, SpecError, load_specs

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
        return build_harness(
            [command_line(config), *file_layers(_ini(config), atom_config)],
            root=config.rootpath,
            config=atom_config,
            hook=config.hook,
            report_dir=Path(config.option.atom_report) if config.option.atom_report else None,
        )
    except SettingsError as err:
        raise pytest.UsageError(str(err)) from None


def command_line(config: pytest.Config) -> Layer:
    values = {name: getattr(config.option, f"atom_{name}", None) for name in PARSERS}
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


class AtomSession:
    """Per-session state of the plugin (registered as a plugin, not module globals)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.harness = pytest_harness(config)
        self.results: list[tuple[str, str, dict[str, Any]]] = []
        self.other_failures = 0  # failed reports that are not spec runs: never gated away
        self.baseline = BaselineGate.from_config(config)
        self.order: dict[str, int] = {}  # node ids in collection order, for the summary
        self.interrupted: InterruptedRun | None = None  # Ctrl-C stopped this spec's run

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.order = {item.nodeid: n for n, item in enumerate(session.items)}

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Under xdist the controller collects nothing itself: a worker's list is the order."""
        self.order = self.order or {nodeid: n for n, nodeid in enumerate(ids)}

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
        if report.when == "call" and "atom_decision" in props:
            outcome: str = report.outcome
            if hasattr(report, "wasxfail"):
                outcome = "xfailed" if report.skipped else "xpassed"
            elif props.get("atom_error"):
                # the harness, the replay or the upstream failed, not the agent
                outcome = "upstream error" if props["atom_error"] == "upstream" else "error"
            self.results.append((report.nodeid, outcome, props))
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
        if controller and self.baseline is not None and self.baseline.finish(self.results):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED  # a regression, even if all passed
            return
        gate = self.config.option.atom_min_pass_rate
        if gate is None or not self.results:
            return
        rates = pass_rates(self.results)
        if any(r.rate < gate for r in rates):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif exitstatus == pytest.ExitCode.TESTS_FAILED and not self.other_failures:
            session.exitstatus = pytest.ExitCode.OK

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
        self.results.sort(key=lambda row: self.order.get(row[0], len(self.order)))
        terminalreporter.write_sep("=", "pytest-atom")
        for line in summary_table(self.results):
            terminalreporter.write_line(line)
        # Lines, not Python warnings: `filterwarnings = error` must not turn them into crashes.
        for nodeid, _, props in self.results:
            for key in ("atom_drift", "atom_warnings", "atom_limit_exceeded"):
                if props.get(key):
                    label = key.removeprefix("atom_").removesuffix("s")
                    terminalreporter.write_line(f"{label}: {nodeid}: {props[key]}")
        for line in sandbox_warning_lines(self.results):
            terminalreporter.write_line(line, yellow=True)
        if self.baseline is not None:
            terminalreporter.write_line("")
            for line in summary_lines(self.baseline.comparisons):
                terminalreporter.write_line(line, red=line.startswith("baseline regression"))
        gate = self.config.option.atom_min_pass_rate
        if self.repeat > 1 or gate is not None:
            terminalreporter.write_line("")
            for line in pass_rate_lines(pass_rates(self.results), gate):
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
        return None


def _session(config: pytest.Config) -> AtomSession:
    session = config.pluginmanager.getplugin("atom-session")
    assert isinstance(session, AtomSession)
    return session


class SpecFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        harness = _session(self.config).harness
        self.registry = harness.registry(self.ihook)
        try:
            specs = load_specs(self.path, check_kinds=self.registry.kinds())
        except SpecError as err:
            # An item that errors at setup, not a collection error: pytest would stop the
            # whole run for one, and the other specs must still run.
            yield BrokenSpec.from_parent(self, name=self.path.name, error=err)
            return
        missing = _missing_syrupy(specs)
        if missing:
            yield BrokenSpec.from_parent(self, name=self.path.name, error=missing)
            return
        repeat = harness.settings.repeat
        for spec, run in ((s, r) for s in specs for r in range(1, repeat + 1)):
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


#: Failures of the harness itself; a ValueError (a value the harness could not use) too.
_RUN_ERRORS: tuple[type[Exception], ...] = (*HARNESS_ERRORS, ValueError)


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
        except _RUN_ERRORS as exc:
            problem = str(exc)  # reported outside the except block: no chained traceback
        else:
            problem = ""
        if problem:
            pytest.fail(
                f"pytest-atom could not run spec '{self.spec.name}': {problem}", pytrace=False
            )
        self.result = result
        record_result(self, result)
        baseline = _session(self.config).baseline
        if baseline is not None:
            self.user_properties += baseline.item_properties(
                self.nodeid,
                dict(self.user_properties),
                passed=result.passed,
                xfail=bool(self.spec.xfail),
                own=self.spec.baseline_tolerance,
            )
        _report_steps(request, result)
        self._judge(result, snapshot)

    def _judge(self, result: SpecResult, snapshot: Any) -> None:
        if result.harness_error:
            # Never the expected failure of an xfail spec, never a pass: the harness broke.
            pytest.fail(
                f"pytest-atom harness error in spec '{self.spec.name}': {result.harness_error}\n"
                + "".join(f"replay diverged: {d}\n" for d in result.divergences)
                + f"run dir: {display_path(result.run_dir)}",
                pytrace=False,
            )
        if result.divergences:
            raise ReplayError(result)  # never the expected failure of an xfail spec
        if not result.passed:
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
        if isinstance(excinfo.value, (SpecFailed, ReplayError)):
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
    if not result.steps or result.divergences or result.harness_error or result.spec.xfail:
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
