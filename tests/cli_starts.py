"""Which test starts a Claude Code process: the `slow` mark checked against what a test does.

Each pytest process (the controller, each xdist worker) points ``ATOM_CLAUDE_BIN`` at a
counting wrapper of its own: a shell script that appends one line to a log file, whose path
is written into the script, and then execs the real CLI. A log path baked into the script
reaches every CLI, however the harness builds the CLI's environment (it passes only the
variables it lists), whether the CLI starts from this process, an inner pytest run in a
subprocess, pytester or an SDK app. Tests run one at a time in a process, so the lines a
test's setup, call and teardown add to the log are that test's.

- A test without the `slow` mark that starts a CLI fails at teardown, naming the fix.
- A test with the mark whose call passed, that started none and read no shared scenario
  (tests/helpers.py's `once_per_session`, directly or through a fixture that asked for
  one: another test may have built it first) fails too: `slow` is exactly the tests that
  start Claude Code.
- The terminal summary counts the CLI processes.
- ``--cli-starts-json PATH`` writes, per test, the CLI processes it started (all, and
  ``claude -p`` sessions), its wall seconds and its CPU seconds (this process and the
  children it waited for); ``benchmarks/suite.py`` reads it.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shlex
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.agents.claude_code.cli import find_claude
from pytest_atom.agents.claude_code.srt import find_srt
from pytest_atom.errors import ClaudeNotFoundError, SandboxUnavailableError

#: The real CLI the wrappers exec, for processes below one that already made its wrapper
#: (xdist workers inherit the controller's ATOM_CLAUDE_BIN, which is its wrapper).
_REAL = "ATOM_SUITE_REAL_CLAUDE_BIN"

_starts_key = pytest.StashKey[tuple[int, float, float, int]]()

#: The shared scenarios this process has handed out (`note_shared_read`), in order, and
#: the fixtures whose set-up asked for one (a module- or session-scoped fixture is set up
#: once; the tests after the first read its value without asking again).
_SHARED_READS: list[str] = []
_SHARED_FIXTURES: set[str] = set()
_call_passed = pytest.StashKey[bool]()


def note_shared_read(name: str) -> None:
    """Say that the running test reads shared scenario `name` (tests/helpers.py's
    `once_per_session`): a slow test that started no CLI itself is then one that reads a
    scenario another test happened to build first."""
    _SHARED_READS.append(name)


class CliStarts:
    """The counting wrappers of this process and the log they append to."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.log = folder / "starts.log"
        self.log.touch()
        self.rows: list[dict[str, Any]] = []

    def wrap(self, real: Path) -> Path:
        """A counting wrapper of `real`, laid out as an npm install (`<pkg>/bin/claude`, the
        package.json beside `bin/`) so that `claude_version` still reads the version from the
        file and does not start a `claude --version` of its own."""
        package = self.folder / f"pkg-{abs(hash(str(real))):x}"
        script = package / "bin" / "claude"
        if script.is_file():
            return script
        script.parent.mkdir(parents=True)
        manifest = real.resolve().parent.parent / "package.json"
        if manifest.is_file():
            shutil.copyfile(manifest, package / "package.json")
        log, target = shlex.quote(str(self.log)), shlex.quote(str(real))
        script.write_text(
            "#!/bin/sh\n"
            "# Counts Claude Code processes for the suite (tests/cli_starts.py).\n"
            "kind=other\n"
            'for arg in "$@"; do case "$arg" in -p|--print) kind=print; break;; esac; done\n'
            f'echo "$kind" >> {log}\n'
            f'exec {target} "$@"\n',
            encoding="utf-8",
        )
        script.chmod(0o755)
        return script

    def offset(self) -> int:
        return self.log.stat().st_size

    def since(self, offset: int) -> list[str]:
        with open(self.log, "rb") as log:
            log.seek(offset)
            return log.read().decode().split()


_STATE: dict[str, CliStarts] = {}
_REAL_BIN: list[Path] = []


def wrapped(binary: Path) -> Path:
    """`binary` behind this process's counting wrapper (as is, when nothing counts)."""
    counter = _STATE.get("starts")
    return counter.wrap(binary) if counter else binary


def counted_claude() -> Path:
    """The pinned CLI, behind the counting wrapper when counting (`find_claude` otherwise)."""
    return wrapped(_REAL_BIN[0]) if _REAL_BIN else find_claude()


def add_cli_starts_option(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cli-starts-json",
        metavar="PATH",
        help="write each test's Claude Code processes, wall and CPU seconds (benchmarks/suite.py)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_SharedFixtures(), "atom-suite-shared-fixtures")
    with contextlib.suppress(SandboxUnavailableError):
        # Named, as the CLI is: pytester moves HOME, where the per-user install lives.
        os.environ.setdefault("ATOM_SRT_BIN", str(find_srt()))
    try:
        real = Path(os.environ.get(_REAL) or find_claude())
    except ClaudeNotFoundError:
        return  # tests that need the CLI fail on their own, with the install command
    counter = CliStarts(Path(tempfile.mkdtemp(prefix="atom-cli-starts-")))
    _STATE["starts"] = counter
    _REAL_BIN[:] = [real]
    os.environ[_REAL] = str(real)
    os.environ["ATOM_CLAUDE_BIN"] = str(counter.wrap(real))


def pytest_unconfigure(config: pytest.Config) -> None:
    counter = _STATE.pop("starts", None)
    if counter is not None:
        shutil.rmtree(counter.folder, ignore_errors=True)
    path = config.getoption("--cli-starts-json", None)
    if path and _ROWS:
        Path(path).write_text(json.dumps(_ROWS, indent=1), encoding="utf-8")


def count_confined_start() -> None:
    """Count a CLI started inside the sandbox runtime (``claude plugin test`` runs there),
    where its wrapper could not append to the log, which the sandbox keeps read-only: the
    test that started it says so."""
    counter = _STATE.get("starts")
    if counter is not None:
        with open(counter.log, "a", encoding="utf-8") as log:
            log.write("other\n")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    counter = _STATE.get("starts")
    if counter is not None:
        item.stash[_starts_key] = (counter.offset(), _cpu(), time.monotonic(), len(_SHARED_READS))
    return (yield)


class _SharedFixtures:
    """Notes the fixtures whose set-up asked for a shared scenario. A plugin of its own,
    not a conftest hook: pytest calls a conftest's hooks for the fixtures of its folder
    only, and a session-scoped fixture is set up for the session, above it."""

    @pytest.hookimpl(wrapper=True)
    def pytest_fixture_setup(self, fixturedef: pytest.FixtureDef[Any]) -> Any:
        reads = len(_SHARED_READS)
        try:
            return (yield)
        finally:
            if len(_SHARED_READS) > reads:
                _SHARED_FIXTURES.add(fixturedef.argname)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report: pytest.TestReport = yield
    if report.when == "call":
        item.stash[_call_passed] = report.passed
    counter = _STATE.get("starts")
    if report.when != "teardown" or counter is None or _starts_key not in item.stash:
        return report
    offset, cpu, wall, reads = item.stash[_starts_key]
    kinds = counter.since(offset)
    fixtures = getattr(item, "fixturenames", ())
    shared = len(_SHARED_READS) > reads or not _SHARED_FIXTURES.isdisjoint(fixtures)
    report.reads_shared = shared  # type: ignore[attr-defined]
    report.cli_starts = len(kinds)  # type: ignore[attr-defined]
    report.cli_sessions = kinds.count("print")  # type: ignore[attr-defined]
    report.cpu_seconds = _cpu() - cpu  # type: ignore[attr-defined]
    report.wall_seconds = time.monotonic() - wall  # type: ignore[attr-defined]
    slow = item.get_closest_marker("slow") is not None
    if report.outcome == "passed" and kinds and not slow:
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} started {len(kinds)} Claude Code process(es) but is not marked "
            "slow: add @pytest.mark.slow (a test that starts a CLI is slow, and "
            '`pytest -m "not slow"` must start none), or test this at a lower layer.'
        )
    elif (
        report.passed and slow and not kinds and not shared and item.stash.get(_call_passed, False)
    ):
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} is marked slow but started no Claude Code process and read no "
            "shared scenario (tests/helpers.py's once_per_session): remove @pytest.mark.slow."
        )
    return report


def _cpu() -> float:
    own, children = (
        resource.getrusage(r) for r in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


_ROWS: list[dict[str, Any]] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Collect the counts (under xdist the controller receives them from the workers)."""
    if report.when != "teardown" or not hasattr(report, "cli_starts"):
        return
    _ROWS.append(
        {
            "nodeid": report.nodeid,
            "slow": "slow" in report.keywords,
            "cli_starts": report.cli_starts,
            "cli_sessions": report.cli_sessions,
            "reads_shared": report.reads_shared,
            "cpu_seconds": round(report.cpu_seconds, 3),
            "wall_seconds": round(report.wall_seconds, 3),
        }
    )


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _ROWS:
        return
    starts = sum(row["cli_starts"] for row in _ROWS)
    sessions = sum(row["cli_sessions"] for row in _ROWS)
    starting = sum(1 for row in _ROWS if row["cli_starts"])
    terminalreporter.write_sep("-", "Claude Code processes (tests/cli_starts.py)")
    terminalreporter.write_line(
        f"{starts} CLI processes ({sessions} `claude -p` sessions) from {starting} tests"
    )


def pytest_addoption(parser: pytest.Parser) -> None:
    """As a plugin of its own (`-p tests.cli_starts`); the suite's conftest adds the option
    itself, beside its own."""
    add_cli_starts_option(parser)
