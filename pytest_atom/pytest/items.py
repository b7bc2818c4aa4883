"""Spec files as pytest collectors and specs as test items.

Each spec becomes an `AtomItem`, a `pytest.Function` subclass, so fixtures, marks and
plugins that expect test functions (syrupy's `snapshot` among them) work on spec items.
Every item runs through the session's one `Harness` (`settings.suite_run`); a spec's
failure is the item's exception, and its report is the failure report."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.errors import AtomError, SpecError, SpendingLimitReached, UpstreamUnreachable
from pytest_atom.files import shown_text
from pytest_atom.inert import inert, is_inert
from pytest_atom.paths import SPEC_SUFFIX, display_path
from pytest_atom.pytest.settings import settings_for, suite_run
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.reports.format import report_formats
from pytest_atom.reports.phrases import step_line
from pytest_atom.results.outcome import Outcome
from pytest_atom.results.spec_result import SpecResult
from pytest_atom.spec.types import Mark, Spec
from pytest_atom.spec_loader.load import load_specs


class _RunFailed(AtomError):
    """A spec run's failure as its item's exception; carries the result for the report."""

    what = " failed"

    def __init__(self, result: SpecResult) -> None:
        super().__init__(f"atom spec '{result.spec.name}'{self.what}")
        self.result = result


class ReplayError(_RunFailed):
    """The replay diverged from its cassette: the harness's failure, never the agent's."""

    what = ": replay diverged from its cassette"


class UpstreamFailed(_RunFailed):
    """A recording failed on its upstream (the API): never the agent's failure."""

    what = ": the recording's upstream failed"


class SpecFailed(_RunFailed):
    """The agent ran but the spec failed: the only failure an xfail spec expects."""


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class SnapshotMismatch(AtomError):
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


class SpecFile(pytest.File):
    def load(self) -> list[Spec]:
        return load_specs(self.path, check_kinds=self.registry.kinds())

    def repeated(self, spec: Spec) -> Spec:
        """`spec` with how often it runs: its own `repeats:`, else ``--atom-repeat``."""
        return suite_run(self.config).repeated(spec)

    def collect(self) -> Iterator[pytest.Item]:
        suite = suite_run(self.config)
        self.registry = suite.harness.registry(self.ihook)
        try:
            specs = self.load()
        except SpecError as err:
            # An item that errors at setup, not a collection error: pytest would stop the
            # whole run for one, and the other specs must still run.
            yield BrokenSpec.from_parent(self, name=inert(self.path.name), error=err)
            return
        specs = suite.collected(specs)  # its arms seen, the selected ones kept
        missing = _missing_syrupy(specs)
        if missing:
            yield BrokenSpec.from_parent(self, name=inert(self.path.name), error=missing)
            return
        repeated = [self.repeated(spec) for spec in specs]
        for spec, run in ((s, r) for s in repeated for r in range(1, (s.repeats or 1) + 1)):
            repeat = spec.repeats or 1
            name = spec.name if repeat == 1 else f"{spec.name}[r{run}]"
            item = AtomItem.from_parent(
                self,
                name=inert(name),  # a name from the file's: printed, and in JUnit XML
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
    """A `claude plugin eval` case (pytest_atom.evalsuite.suites): its arms as specs, run
    `runs` times unless ``--atom-repeat`` says otherwise."""

    def load(self) -> list[Spec]:
        from pytest_atom.evalsuite.graders import register_checks
        from pytest_atom.evalsuite.specs import case_specs
        from pytest_atom.evalsuite.suites import load_case

        self.case = load_case(self.path)
        register_checks(self.registry)
        return case_specs(self.case, self.registry.kinds())

    def repeated(self, spec: Spec) -> Spec:
        if self.config.option.atom_repeat is not None:
            return super().repeated(spec)
        return suite_run(self.config).repeated(spec, self.case.runs)


def pytest_mark(mark: Mark) -> pytest.MarkDecorator:
    """A `marks:` entry as pytest's own mark: skip and skipif (a condition string, as pytest
    evaluates it), or a custom mark by name (so ``-m NAME`` selects the spec)."""
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
        pytest.fail(inert(str(self.error)), pytrace=False)

    def runtest(self) -> None:  # never reached: setup fails
        raise AssertionError(str(self.error))

    def reportinfo(self) -> tuple[Path, int, str]:
        return _shown_path(self.path), 0, inert(f"atom spec file {self.path.name}")


def _shown_path(path: Path) -> Path:
    """The spec file's path as a report's location gives it (JUnit's ``file``, written
    unescaped): inert, as its node id is."""
    return path if is_inert(str(path)) else Path(inert(str(path)))


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
    """Failures of the harness itself, and a ValueError; read when a spec runs, as collecting
    loads none of the machinery that raises them."""
    from pytest_atom.run.execution import HARNESS_ERRORS

    return (*HARNESS_ERRORS, ValueError)


class AtomItem(pytest.Function):
    """One spec as a test function; its body runs the spec and raises on failure."""

    def __init__(self, *, spec: Spec, repeat: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.repeat = repeat  # which of the spec's repeats this run is, or None
        self.result: SpecResult | None = None

    def run_spec(
        self, request: pytest.FixtureRequest, atom_settings: dict[str, Any], snapshot: Any
    ) -> None:
        suite = suite_run(self.config)
        harness = suite.harness
        spec_file = self.parent
        assert isinstance(spec_file, SpecFile)
        watcher = suite.watcher  # `atom run`'s live progress, when it launched the session
        on_event = watcher.started(self.spec, self.name) if watcher is not None else None
        try:
            settings = settings_for(harness, self, atom_settings)
            result = harness.run(
                self.spec,
                registry=spec_file.registry,
                repeat=self.repeat,
                settings=settings,
                on_event=on_event,
            )
        except SpendingLimitReached as exc:
            if watcher is not None:
                watcher.not_run(str(exc))
            pytest.skip(str(exc))
        except _run_errors() as exc:
            problem = str(exc)  # reported outside the except block: no chained traceback
            if isinstance(exc, UpstreamUnreachable):  # no later spec could record either
                self.session.shouldstop = f"pytest-atom: {exc.headline}"
        else:
            problem = ""
        if problem:
            if watcher is not None:
                watcher.could_not_run(problem)
            # The harness's message may quote what a set-up or the agent printed: inert.
            pytest.fail(
                inert(f"pytest-atom could not run spec '{self.spec.name}': {problem}"),
                pytrace=False,
            )
        self.result = result
        if watcher is not None:
            watcher.finished(result, self.repeat)
        outcome = result.outcome
        record_result(self, result)
        baseline = suite.baseline
        if baseline is not None:
            self.user_properties += baseline.item_properties(
                self.nodeid, dict(self.user_properties), own=self.spec.baseline_tolerance
            )
        _report_steps(request, result)
        self._conclude(outcome, result, snapshot)

    def _conclude(self, outcome: Outcome, result: SpecResult, snapshot: Any) -> None:
        """The run's outcome as pytest's: a failure is the item's exception."""
        if outcome.error == "replay":
            raise ReplayError(result)  # never the expected failure of an xfail spec
        if outcome.error == "upstream":
            raise UpstreamFailed(result)  # its failure report says what the API answered
        if outcome.error is not None:
            # Never the expected failure of an xfail spec, never a pass: the harness broke.
            pytest.fail(
                inert(
                    f"pytest-atom {outcome.error} error in spec '{self.spec.name}': "
                    f"{result.harness_error or outcome.why}\n"
                    f"run dir: {display_path(result.run_dir)}"
                ),
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
            data = snapshot_value(result.workspace, name)
            if not snapshot(name=name) == data:
                diff = snapshot.get_assert_diff()
                if not self.config.get_terminal_writer().hasmarkup or not is_inert(data):
                    # A file with control characters: shown escaped, without syrupy's colours.
                    diff = [inert(_ANSI.sub("", line)) for line in diff]
                mismatches.append((name, diff))
        if mismatches:
            raise SnapshotMismatch(mismatches)

    def reportinfo(self) -> tuple[Path, int, str]:
        return _shown_path(self.path), self.spec.line - 1, inert(f"atom spec {self.spec.name}")

    # Same signature as pytest.Function's, which itself narrows Node.repr_failure.
    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:  # type: ignore[override]
        if isinstance(excinfo.value, _RunFailed):
            # It quotes the agent and lands in JUnit XML: scrubbed, with the run's transcripts
            # as context, so a secret assigned there is redacted where the report repeats it.
            result = excinfo.value.result
            if result.cached_from is not None:  # the store's words, scrubbed when recorded
                return result.report()
            return Scrubber().scrub_obj([result.report(), *(r.stdout for r in result.records)])[0]
        if isinstance(excinfo.value, SnapshotMismatch):
            return excinfo.value.report()
        return super().repr_failure(excinfo)


def snapshot_value(workspace: Path, name: str) -> str:
    """What a `snapshot:` file is compared as: its text, links not followed (a link shows
    its target's text, never what it leads to; a device, FIFO or socket its kind)."""
    text = shown_text(workspace, name)
    return f"<{name} is missing>" if text is None else text


def _report_steps(request: pytest.FixtureRequest, result: SpecResult) -> None:
    """Each step of a multi-step spec as a pytest subtest, where pytest has them (9.0 on)."""
    if not result.steps or result.outcome.error is not None or result.spec.xfail:
        # The machinery failed, not a step (the item says so); an xfail is the whole spec's.
        return
    try:
        subtests = request.getfixturevalue("subtests")
    except pytest.FixtureLookupError:
        return  # an older pytest: the failure report's per-step lines stand in
    for step in result.steps:
        with subtests.test(msg=step.id):
            if not step.passed:
                pytest.fail(inert(step_line(step)), pytrace=False)


def record_result(item: pytest.Item, result: SpecResult) -> None:
    """Every installed format's JUnit properties of the run as the item's."""
    for report_format in report_formats():
        item.user_properties += report_format.properties(result)
