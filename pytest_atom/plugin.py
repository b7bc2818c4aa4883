"""The pytest plugin: `pytest --atom` turns every `*.atom.yaml` spec into a test item.

Without ``--atom`` nothing here changes pytest's behaviour. Each spec becomes an
`AtomItem`, a `pytest.Function` subclass rather than a bare `pytest.Item`: fixtures,
marks and plugins that expect test functions (syrupy's `snapshot` among them) keep
working on spec items.
"""

from __future__ import annotations

import argparse
import functools
import re
import warnings
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.checks import default_registry
from pytest_atom.execution import HARNESS_ERRORS, SpecResult, run_spec
from pytest_atom.fixture import (
    atom,
    project_config,
    runs_dir_from,
    settings_from,
    threshold_from,
)
from pytest_atom.modes import MATCH_MODES, RECORD_MODES
from pytest_atom.paths import display_path
from pytest_atom.report import (
    failure_report,
    pass_rate_lines,
    pass_rates,
    result_properties,
    sandbox_warning_lines,
    summary_table,
)
from pytest_atom.retention import DEFAULT_KEEP_RUNS, prune_runs
from pytest_atom.scrub import Scrubber
from pytest_atom.spec import SPEC_SUFFIX, Spec, SpecError, declared_workspaces, load_specs
from pytest_atom.trace import write_report


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}")
    return int(text)


def _keep_runs(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(
            f"expected a whole number >= 0 (0 keeps every run), got {text!r}"
        )
    return int(text)


def keep_runs_from(config: pytest.Config) -> int:
    """--atom-keep-runs, else the ini option `atom_keep_runs` (checked), else 10."""
    if config.option.atom_keep_runs is not None:
        return int(config.option.atom_keep_runs)
    text = str(config.getini("atom_keep_runs"))
    try:
        return _keep_runs(text)
    except argparse.ArgumentTypeError:
        raise pytest.UsageError(
            f"atom_keep_runs = {text!r} in the ini file; use a whole number such as "
            f"{DEFAULT_KEEP_RUNS}, or 0 to keep every run folder"
        ) from None


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a pass rate between 0 and 1, got {text!r}")
    return value


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    from pytest_atom import hooks

    pluginmanager.add_hookspecs(hooks)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("atom", "pytest-atom: Claude Code agent task specs")
    group.addoption(
        "--atom",
        action="store_true",
        dest="atom",
        default=False,
        help="collect *.atom.yaml specs and run each through the real Claude Code CLI.",
    )
    group.addoption(
        "--atom-runs-dir",
        dest="atom_runs_dir",
        default=None,
        metavar="DIR",
        help="where each spec run gets its isolated folder (default: .atom/runs under rootdir).",
    )
    group.addoption(
        "--atom-record-mode",
        dest="atom_record_mode",
        default=None,
        choices=RECORD_MODES,
        help="none (default): replay cassettes, never reach the network; once: record specs "
        "with no cassette; new_episodes: record what does not match; all: record everything anew; "
        "refresh: replay with this Claude Code and rewrite the cassette's requests (no tokens).",
    )
    group.addoption(
        "--atom-upstream",
        dest="atom_upstream",
        default=None,
        metavar="URL",
        help="where recording forwards to (default: a scripted spec's own script, else "
        "$ANTHROPIC_BASE_URL, else the Anthropic API).",
    )
    group.addoption(
        "--atom-match",
        dest="atom_match",
        default=None,
        choices=MATCH_MODES,
        help="conversation (default): a recorded request matches when the conversation is the "
        "same, whatever Claude Code wraps it in; structural: tool-result text aside too; strict: "
        "the whole request body.",
    )
    group.addoption(
        "--atom-rejudge",
        dest="atom_rejudge",
        action="store_true",
        default=False,
        help="replay the agent's sessions and record the reflector's anew (after changing "
        "accept: or criteria:), replacing only the reflector's part of each cassette.",
    )
    group.addoption(
        "--atom-strict-version",
        dest="atom_strict_version",
        action="store_true",
        default=False,
        help="fail a replay whose cassette was recorded with another Claude Code version.",
    )
    group.addoption(
        "--atom-report",
        dest="atom_report",
        default=None,
        metavar="DIR",
        help="write one JSON trace per spec run (seed 003's invocation-trace shape) and the "
        "transcript of every Claude session into DIR, secrets scrubbed.",
    )
    group.addoption(
        "--atom-html",
        dest="atom_html",
        default=None,
        metavar="PATH",
        help="write one self-contained HTML report of the run to PATH (transcripts, checks, "
        "verdicts, diffs; secrets scrubbed); `atom view` opens the last one.",
    )
    group.addoption(
        "--atom-repeat",
        dest="atom_repeat",
        type=_positive_int,
        default=1,
        metavar="N",
        help="run each spec N times and report its pass rate, pass@N and pass^N.",
    )
    group.addoption(
        "--atom-min-pass-rate",
        dest="atom_min_pass_rate",
        type=_rate,
        default=None,
        metavar="R",
        help="gate on pass rates: the run fails when a spec passes less than R (0..1) of its "
        "repeats, and succeeds otherwise even if some repeats failed.",
    )
    group.addoption(
        "--atom-keep-runs",
        dest="atom_keep_runs",
        type=_keep_runs,
        default=None,
        metavar="N",
        help=f"after the session, keep the newest N run folders of each spec, and every "
        f"failed run of this session (default {DEFAULT_KEEP_RUNS}; 0 keeps all).",
    )
    parser.addini("atom_record_mode", "default for --atom-record-mode.", default="")
    parser.addini("atom_match", "default for --atom-match.", default="")
    parser.addini(
        "atom_keep_runs",
        "default for --atom-keep-runs.",
        default=str(DEFAULT_KEEP_RUNS),
    )
    parser.addini(
        "atom_threshold",
        "reflector score a spec must exceed to pass (default 0.8; a spec's own `reflector: "
        "{threshold: …}` wins).",
        default="0.8",
    )
    parser.addini(
        "atom_paths",
        "spec paths collected by `pytest --atom` when none are given.",
        type="paths",
        default=[],
    )
    parser.addini("atom_runs_dir", "default for --atom-runs-dir.", default=None)


#: Failures of the harness itself; a ValueError (a value the harness could not use) too.
_RUN_ERRORS: tuple[type[Exception], ...] = (*HARNESS_ERRORS, ValueError)


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
        self.runs_dir = runs_dir_from(config)
        self.spec_collect_errors = 0
        self.atom_config = project_config(config)
        self.threshold = threshold_from(config)
        self.results: list[tuple[str, str, dict[str, Any]]] = []
        self.other_failures = 0  # failed reports that are not spec runs: never gated away
        self.settings = settings_from(config, self.atom_config)
        self.keep_runs = keep_runs_from(config)
        self.started = datetime.now()

    @pytest.hookimpl(tryfirst=True)
    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed and report.nodeid.endswith(SPEC_SUFFIX):
            self.spec_collect_errors += 1

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Iterator[None]:
        """A malformed spec is reported, but it must not stop the other specs from running.

        pytest aborts the run on any collection error; errors that came only from spec
        files are hidden from that check for the duration of the loop and put back after,
        so the exit status still reports them.
        """
        hidden = min(self.spec_collect_errors, session.testsfailed)
        session.testsfailed -= hidden
        try:
            return (yield)
        finally:
            session.testsfailed += hidden

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Collect each spec's figures from its report (they cross xdist's process border)."""
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
        if not hasattr(self.config, "workerinput"):
            prune_runs(self.runs_dir, self.keep_runs, session_start=self.started)
        gate = self.config.option.atom_min_pass_rate
        if gate is None or not self.results:
            return
        rates = pass_rates(self.results)
        if any(r.rate < gate for r in rates):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        elif exitstatus == pytest.ExitCode.TESTS_FAILED and not self.other_failures:
            session.exitstatus = pytest.ExitCode.OK

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.results:
            return
        terminalreporter.write_sep("=", "pytest-atom")
        for line in summary_table(self.results):
            terminalreporter.write_line(line)
        # Lines, not Python warnings: `filterwarnings = error` must not turn them into crashes.
        for nodeid, _, props in self.results:
            for key in ("atom_drift", "atom_warnings"):
                if props.get(key):
                    label = key.removeprefix("atom_").removesuffix("s")
                    terminalreporter.write_line(f"{label}: {nodeid}: {props[key]}")
        for line in sandbox_warning_lines(self.results):
            terminalreporter.write_line(line, yellow=True)
        if self.config.option.atom_repeat > 1 or self.config.option.atom_min_pass_rate is not None:
            terminalreporter.write_line("")
            for line in pass_rate_lines(
                pass_rates(self.results), self.config.option.atom_min_pass_rate
            ):
                terminalreporter.write_line(line)

    def pytest_ignore_collect(self, collection_path: Path) -> bool | None:
        """Never collect a spec's workspace: its tests are fixture data, often failing on purpose."""
        if collection_path.is_dir() and _is_workspace(collection_path.resolve()):
            return True
        return None

    def pytest_collect_file(
        self, file_path: Path, parent: pytest.Collector
    ) -> pytest.Collector | None:
        if file_path.name.endswith(SPEC_SUFFIX):
            return SpecFile.from_parent(parent, path=file_path)
        return None


def pytest_configure(config: pytest.Config) -> None:
    if not config.option.atom:
        return
    config.addinivalue_line("markers", "atom: a Claude Code agent task spec (pytest-atom)")
    if config.args_source != pytest.Config.ArgsSource.ARGS:
        config.args += [str(p) for p in config.getini("atom_paths")]
    session = AtomSession(config)
    config.pluginmanager.register(session, "atom-session")
    if config.option.atom_html:
        from pytest_atom.reports.html_plugin import HtmlReport  # Jinja2 only when asked for

        html = Path(config.option.atom_html)
        path = html if html.is_absolute() else config.invocation_params.dir / html
        config.pluginmanager.register(HtmlReport(config, path, session.runs_dir), "atom-html")


class AtomHint(pytest.PytestWarning):
    """Spec files were named or found while ``--atom`` is off: say how to run them."""


_SPECS_SEEN = pytest.StashKey[list[Path]]()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> None:
    """Without ``--atom`` a spec is no test, and pytest says only "not found": add a hint.

    Only for a spec named on the command line (or, in `pytest_collection_finish`, for
    specs met while nothing else was collected): a project whose plain `pytest` run passes
    specs by on purpose gets no warning.
    """
    config = parent.config
    if config.option.atom or not file_path.name.endswith(SPEC_SUFFIX):
        return
    file_path = file_path.resolve()
    config.stash.setdefault(_SPECS_SEEN, []).append(file_path)
    if config.args_source == pytest.Config.ArgsSource.ARGS and file_path in _named_files(config):
        _hint(file_path, f"{file_path.name} is a pytest-atom spec")


def pytest_collection_finish(session: pytest.Session) -> None:
    seen = session.config.stash.get(_SPECS_SEEN, [])
    if seen and not session.items and session.config.args_source == pytest.Config.ArgsSource.ARGS:
        named = _named_files(session.config)
        unnamed = [path for path in seen if path not in named]
        if unnamed:
            try:
                _hint(unnamed[0], f"{len(unnamed)} pytest-atom spec file(s) were found")
            except AtomHint as exc:  # filterwarnings=error; past collection: no INTERNALERROR
                raise pytest.UsageError(str(exc)) from None


def _named_files(config: pytest.Config) -> set[Path]:
    base = config.invocation_params.dir
    return {(base / arg.split("::")[0]).resolve() for arg in config.args}


def _hint(location: Path, what: str) -> None:
    warnings.warn_explicit(
        AtomHint(f"{what}, but specs run only with --atom: pytest --atom {display_path(location)}"),
        AtomHint,
        str(location),
        1,
    )


#: Spec files are read again for every folder collected below them; once is enough.
_workspaces_declared_in = functools.lru_cache(maxsize=256)(declared_workspaces)


def _is_workspace(directory: Path) -> bool:
    # Spec paths cannot escape the spec's folder, so a workspace lies below its spec.
    return any(directory in _workspaces_declared_in(parent) for parent in directory.parents)


class SpecFile(pytest.File):
    def collect(self) -> Iterator[AtomItem]:
        registry = default_registry()
        self.ihook.pytest_atom_register_checks(registry=registry)
        self.registry = registry
        try:
            specs = load_specs(self.path, check_kinds=registry.kinds())
        except SpecError as err:
            raise self.CollectError(str(err)) from None
        repeat = self.config.option.atom_repeat
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
            if spec.xfail:
                # Only a failed spec counts as the expected failure, never a harness error.
                item.add_marker(pytest.mark.xfail(reason=spec.xfail, raises=SpecFailed))
            yield item


def _test_function(spec: Spec) -> Any:
    # Only specs with `snapshot:` request syrupy's fixture, so -p no:syrupy keeps working.
    if spec.snapshot:

        def run_atom_spec(request: pytest.FixtureRequest, snapshot: Any) -> None:
            item = request.node
            assert isinstance(item, AtomItem)
            item.run_spec(snapshot)

    else:

        def run_atom_spec(request: pytest.FixtureRequest) -> None:  # type: ignore[misc]
            item = request.node
            assert isinstance(item, AtomItem)
            item.run_spec(None)

    run_atom_spec.__name__ = spec.name
    run_atom_spec.__module__ = spec.path.name.removesuffix(SPEC_SUFFIX)
    return run_atom_spec


class AtomItem(pytest.Function):
    """One spec as a test function; its body runs the spec and raises on failure."""

    def __init__(self, *, spec: Spec, repeat: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec = spec
        self.repeat = repeat  # which of --atom-repeat's runs, or None
        self.result: SpecResult | None = None

    def run_spec(self, snapshot: Any) -> None:
        session: AtomSession = self.config.pluginmanager.getplugin("atom-session")
        spec_file = self.parent
        assert isinstance(spec_file, SpecFile)
        try:
            result = run_spec(
                self.spec,
                runs_dir=session.runs_dir,
                project_dir=self.config.rootpath,
                settings=session.settings,
                threshold=session.threshold,
                registry=spec_file.registry,
                config=session.atom_config,
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
        report_dir = self.config.option.atom_report
        if report_dir:
            trace = write_report(result, Path(report_dir), repeat=self.repeat)
            self.user_properties.append(("atom_trace", display_path(trace)))
        self.user_properties += list(result_properties(result).items())
        self.ihook.pytest_atom_verdict(spec=self.spec, verdict=result.verdict, result=result)
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


__all__ = ["atom"]  # the fixture, registered with the plugin
