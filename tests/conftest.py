"""Shared fixtures: the real Claude Code CLI and scripted gateways."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

# pytester's in-process runs drop and re-import the modules a run loads, and numpy's C
# extension (under scipy, which repeats and arms use) cannot load twice in one process:
# loaded once here, it stays.
try:
    import scipy.stats  # noqa: F401
except ImportError:  # the `stats` extra is not installed: tests that need it skip
    pass

from pytest_atom.agents.claude_code.cli import cached_claude
from pytest_atom.agents.claude_code.runner import ClaudeRunner, claude_env
from pytest_atom.gateway import Gateway, scripted
from tests.cli_starts import (  # noqa: F401 (hooks: each test's CLI processes, checked)
    add_cli_starts_option,
    counted_claude,
    pytest_configure,
    pytest_runtest_logreport,
    pytest_runtest_makereport,
    pytest_runtest_protocol,
    pytest_terminal_summary,
    pytest_unconfigure,
    wrapped,
)

REPO = Path(__file__).resolve().parent.parent
#: The multi-step fixtures (tests/test_steps.py runs them): slow to replay, so tests of
#: something else over a copy of fixtures/specs leave them out.
STEP_FIXTURES = ("two_steps", "rollback_steps", "planned", "replanned")
#: The fixture of a Claude Code configuration (tests/test_mcp_tape.py replays it): as slow
#: (the full tool set), and left out with them.
CONFIG_FIXTURES = ("configured",)


#: A conftest with a check kind (`word_count`) and a verdict hook that logs each verdict to
#: verdicts.log: what a project's own plugin code looks like to pytest-atom.
HOOKS_CONFTEST = """
from pytest_atom import CheckResult

def pytest_atom_register_checks(registry):
    def word_count(check, workspace, env):
        words = len((workspace / check.params["path"]).read_text().split())
        return CheckResult(check, words == check.params["words"], f"{words} words", "")
    registry.register("word_count", word_count)

def pytest_atom_verdict(spec, verdict, result):
    with open("verdicts.log", "a") as log:
        log.write(f"{spec.name} {result.decision} {verdict.score if verdict else None}\\n")
"""


def summary_row(nodeid: str, label: str, props: Mapping[str, Any]) -> Any:
    """A summary row (`reports.rows.SummaryRow`) with the outcome `label` and figures `props`."""
    from pytest_atom.model.outcome import Outcome
    from pytest_atom.reports.rows import SummaryRow

    return SummaryRow.of(nodeid, props, Outcome.of_label(label))


def drop_step_fixtures(specs: Path) -> None:
    """Remove the multi-step fixtures and the configuration one (spec, script, cassettes)
    from a copy of fixtures/specs."""
    import shutil

    for name in (*STEP_FIXTURES, *CONFIG_FIXTURES):
        (specs / f"{name}.atom.yaml").unlink()
        (specs / "scripts" / f"{name}.yaml").unlink()
        shutil.rmtree(specs / "cassettes" / name, ignore_errors=True)


# httpx imports its transport (httpcore) on first use. Pytester's in-process runs drop the
# modules first imported inside them, and an httpcore imported anew raises exceptions that
# the httpx loaded before no longer maps to httpx's own: load it once, up front.
httpx.Client().close()


def pytest_addoption(parser: pytest.Parser) -> None:
    add_cli_starts_option(parser)
    parser.addoption(
        "--replays",
        type=int,
        default=1,
        help="replays per match mode of each recorded shape in tests/test_upstream.py "
        "(default 1; a determinism sweep by hand: --replays 5)",
    )


@pytest.fixture(scope="session")
def replays(pytestconfig: pytest.Config) -> int:
    """How many times a determinism test replays each recording per match mode: once in
    the suite (one replay shows the behaviour), more by hand (`--replays 5`)."""
    return int(pytestconfig.getoption("--replays"))


@dataclass(frozen=True)
class ShippedRun:
    """What one `pytest --atom specs` replay of a copy of fixtures/specs left behind."""

    folder: Path
    output: str

    @property
    def specs(self) -> Path:
        return self.folder / "specs"

    @property
    def runs(self) -> Path:
        return self.folder / "runs"

    @property
    def report(self) -> Path:
        return self.folder / "report.html"

    @property
    def junit(self) -> Path:
        return self.folder / "junit.xml"

    @property
    def traces(self) -> Path:
        return self.folder / "traces"

    @property
    def durations(self) -> Path:
        return self.folder / "durations.json"


@pytest.fixture(scope="session")
def shipped_run(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> ShippedRun:
    """One replay of the shipped fixtures, under xdist, for every test that reads what such a
    run leaves (the HTML report, JUnit, traces, pytest-split's durations, run folders).

    It runs once per test session even when those tests land on several xdist workers: a
    lock and the run's output file in the session's shared temp folder.
    """
    basetemp = tmp_path_factory.getbasetemp()
    # Under xdist each worker's basetemp is a folder of the session's own: share its parent.
    shared = basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp
    folder = shared / "shipped-run"
    folder.mkdir(exist_ok=True)
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            failed = folder / "failed.txt"  # one failed replay fails every test that shares it
            if failed.is_file():
                pytest.fail(
                    f"the shared replay of the shipped fixtures failed:\n{failed.read_text()}"
                )
            if not (folder / "output.txt").is_file():
                try:
                    _replay_shipped(folder, claude_bin)
                except Exception as exc:  # a timeout too: never left half-done unsaid
                    failed.write_text(str(exc), encoding="utf-8")
                    raise
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return ShippedRun(folder, (folder / "output.txt").read_text(encoding="utf-8"))


def _replay_shipped(folder: Path, claude_bin: Path) -> None:
    shutil.copytree(REPO / "fixtures" / "specs", folder / "specs")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["ATOM_CLAUDE_BIN"] = str(claude_bin)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    command = [sys.executable, "-m", "pytest", "--atom", "specs", "-n", "2", "-q", "-rxX"]
    command += ["-p", "no:cacheprovider", "--atom-runs-dir", "runs", "--atom-keep-runs", "0"]
    command += ["--atom-html", "report.html", "--junitxml", "junit.xml", "--atom-report"]
    command += ["traces", "--store-durations", "--durations-path", "durations.json"]
    done = subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    output = done.stdout + done.stderr
    if done.returncode != 0:
        raise RuntimeError(output)
    (folder / "output.txt").write_text(output, encoding="utf-8")


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The real CLI (behind tests/cli_starts.py's counting wrapper); a missing one errors with
    the install command (never a silent skip)."""
    return counted_claude()


#: The Claude Code that release 0.1 pinned and recorded its cassettes with.
OLD_CLI = "2.1.197"


@pytest.fixture(scope="session")
def old_claude_bin() -> Path:
    """Claude Code 2.1.197, installed beside the pinned one (by .ci/run): never skipped."""
    binary = cached_claude(OLD_CLI)
    if not binary.exists():
        pytest.fail(f"Claude Code {OLD_CLI} is not installed; run: atom setup --version {OLD_CLI}")
    return wrapped(binary)


@pytest.fixture
def claude_for_pytester(claude_bin: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Set up inner pytest runs (pytester) to find the CLI and run as a whole session.

    Pytester moves HOME, where the per-user CLI cache lives, so the binary is named. Under
    xdist, an in-process inner run would inherit the worker's variables, and plugins such
    as syrupy would leave their report to a controller that does not exist.
    """
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(claude_bin))
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def gateway_for() -> Iterator[Any]:
    """Start a scripted gateway from inline turns; stopped at teardown."""
    started: list[Gateway] = []

    def start(turns: Sequence[Mapping[str, Any]]) -> Gateway:
        gateway = Gateway(scripted(turns)).start()
        started.append(gateway)
        return gateway

    yield start
    for gateway in started:
        gateway.stop()


@pytest.fixture
def runner_for(claude_bin: Path, tmp_path: Path) -> Any:
    """A ClaudeRunner talking to a given gateway, with its own config dir."""

    def make(gateway: Gateway, **kwargs: Any) -> ClaudeRunner:
        env = claude_env(gateway.url, tmp_path / "claude-config")
        return ClaudeRunner(env=env, claude_bin=claude_bin, **kwargs)

    return make


def capture(name: str) -> str:
    """What the real CLI printed (stream-json), as captured in tests/data/stream_json."""
    return (REPO / "tests" / "data" / "stream_json" / name).read_text(encoding="utf-8")


def write(path: Path, text: str) -> Path:
    """Write a test's file, its folders made as needed; the path, to hand on."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def alive(pid: int) -> bool:
    """Still running: neither gone nor a zombie waiting for a parent that may never reap it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, seconds: float = 5) -> bool:
    """Whether the process ends (or is left a zombie) within `seconds`."""
    deadline = time.monotonic() + seconds
    while alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def verdict(
    score: float,
    met: bool = True,
    *,
    criterion: str = "done.txt exists and says done.",
    evidence: str | None = None,
    feedback: str = "",
    decision: str | None = None,
) -> dict[str, Any]:
    """A scripted reflector turn: its verdict on one criterion, ``proceed`` when met and
    ``refine`` when not, unless `decision` says otherwise."""
    if evidence is None:
        evidence = "done.txt reads 'done'" if met else "done.txt is empty"
    return {
        "verdict": {
            "score": score,
            "decision": decision or ("proceed" if met else "refine"),
            "criteria": [{"criterion": criterion, "met": met, "evidence": evidence}],
            "feedback": feedback,
            "flaky": [],
        }
    }


def bash(command: str, text: str | None = None) -> dict[str, Any]:
    """A scripted turn that runs one Bash command."""
    turn: dict[str, Any] = {"tool_use": [{"name": "Bash", "input": {"command": command}}]}
    if text:
        turn["text"] = text
    return turn


def record_through_upstream(
    spec: Any, conversations: Mapping[str, Sequence[Mapping[str, Any]]], claude_bin: Path
) -> tuple[Any, Any]:
    """Record `spec` (record mode `all`) from a realistic upstream playing `conversations`
    (tests/upstream.py); the result, and the upstream, stopped, to ask what it sent."""
    from pytest_atom.model.settings import RunSettings
    from pytest_atom.run.spec_run import run_spec
    from tests.upstream import RealisticUpstream

    with RealisticUpstream(conversations) as upstream:
        result = run_spec(
            spec,
            runs_dir=spec.path.parent / "runs",
            settings=RunSettings(record_mode="all", upstream=upstream.url),
            claude_bin=claude_bin,
        )
    return result, upstream
