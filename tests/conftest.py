"""Shared fixtures and hooks: the real Claude Code CLI and scripted gateways.

Plain helpers (paths, scripted turns, files) are in tests/helpers.py, which test modules
import; nothing imports this module.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest

from pytest_atom.agents.claude_code.cli import cached_claude
from pytest_atom.agents.claude_code.runner import ClaudeRunner, claude_env
from pytest_atom.gateway import Gateway, scripted
from tests.api_helpers import play_snapshots, play_words
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
from tests.frontends_helpers import FrontEnds
from tests.frontends_helpers import build as build_front_ends
from tests.helpers import (
    OLD_CLI,
    REPO,
    XDIST_VARIABLES,
    Scenario,
    ShippedRun,
    counting_claude,
    once_per_session,
    pytester_once,
)
from tests.history_helpers import PostgresServer
from tests.judge_helpers import build_passing, build_refine, build_votes
from tests.project_run_helpers import armed_run
from tests.recording_helpers import GreetStory, build_greet_story
from tests.sandbox_helpers import Confined, confined

# httpx imports its transport (httpcore) on first use. Pytester's in-process runs drop the
# modules first imported inside them, and an httpcore imported anew raises exceptions that
# the httpx loaded before no longer maps to httpx's own: load it once, up front.
httpx.Client().close()


# A CI job's summary and HTML address are the job's: the suite's inner sessions (pytester
# runs, subprocesses) must not append to it; the tests that need one set their own.
for _variable in ("GITHUB_STEP_SUMMARY", "ATOM_HTML_URL"):
    os.environ.pop(_variable, None)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_cli_starts_option(parser)
    parser.addoption(
        "--replays",
        type=int,
        default=1,
        help="replays per match mode of the realistic session in tests/replay/test_upstream_cli.py's "
        "determinism sweep (-m sweep; at least 3)",
    )


@pytest.fixture(scope="session", autouse=True)
def own_setup_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The suite's set-up cache (pytest_atom.setup_cache), never the user's: a test
    neither fills it nor finds a set-up an earlier session kept there."""
    from pytest_atom.setup_cache.entries import ROOT_VARIABLE

    before = os.environ.get(ROOT_VARIABLE)
    folder = tmp_path_factory.mktemp("setup-cache")
    os.environ[ROOT_VARIABLE] = str(folder)
    yield folder
    if before is None:
        os.environ.pop(ROOT_VARIABLE, None)
    else:
        os.environ[ROOT_VARIABLE] = before


@pytest.fixture(scope="session")
def replays(pytestconfig: pytest.Config) -> int:
    """How many times the determinism sweep replays the realistic session per match mode
    (`pytest -m sweep --replays 5`); the suite itself replays it once."""
    return int(pytestconfig.getoption("--replays"))


@pytest.fixture(scope="session")
def shipped_run(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> ShippedRun:
    """One replay of the shipped fixtures, under xdist, for every test that reads what such a
    run leaves (the HTML report, JUnit, traces, pytest-split's durations, run folders).

    It runs once per test session even when those tests land on several xdist workers.
    """
    folder = once_per_session(
        tmp_path_factory, "shipped-run", partial(_replay_shipped, claude_bin=claude_bin)
    )
    return ShippedRun(folder, (folder / "output.txt").read_text(encoding="utf-8"))


def _replay_shipped(folder: Path, claude_bin: Path) -> None:
    shutil.copytree(REPO / "fixtures" / "specs", folder / "specs")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env["ATOM_CLAUDE_BIN"] = str(claude_bin)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    # A job summary an earlier step of the job wrote to: the session appends to it.
    env["GITHUB_STEP_SUMMARY"] = str(folder / "step-summary.md")
    (folder / "step-summary.md").write_text("an earlier step's summary\n", encoding="utf-8")
    command = [sys.executable, "-m", "pytest", "--atom", "specs", "-n", "2", "-q", "-rxX"]
    command += ["-p", "no:cacheprovider", "--atom-runs-dir", "runs", "--atom-keep-runs", "0"]
    command += ["--atom-html", "report.html", "--junitxml", "junit.xml", "--atom-report"]
    command += ["traces", "--store-durations", "--durations-path", "durations.json"]
    command += ["--atom-markdown", "summary.md"]
    done = subprocess.run(
        command, cwd=folder, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    output = done.stdout + done.stderr
    if done.returncode != 0:
        raise RuntimeError(output)
    (folder / "output.txt").write_text(output, encoding="utf-8")


@pytest.fixture
def front_ends(
    tmp_path_factory: pytest.TempPathFactory, pytester: pytest.Pytester, claude_bin: Path
) -> FrontEnds:
    """One run of tests/frontends_helpers.py's project by each front end (`pytest --atom` as
    two pytest-split shards, `pytest --atom -n 2`, `atom run`), for every test that compares
    them or reads what they left (summaries, JUnit, shard results, HTML, baseline deltas).

    Built once per session, by the first test that asks, in its pytester (function-scoped,
    so this fixture is too): the inner runs are in-process and count for coverage.
    """
    build = partial(build_front_ends, pytester=pytester, claude_bin=claude_bin)
    return FrontEnds(once_per_session(tmp_path_factory, "front-ends", build))


# --- scenarios more than one module reads: each built once per session -----------------------


@pytest.fixture(scope="module")
def story(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> GreetStory:
    """The greet story (tests/recording_helpers.py): recorded, interrupted by Ctrl-C in
    `pytest --atom --atom-record-mode=all`, replayed with the upstream gone (three CLI
    processes); tests/replay/test_recording.py and tests/run/test_interrupt.py read it."""
    build = partial(build_greet_story, claude_bin=claude_bin)
    return GreetStory(once_per_session(tmp_path_factory, "greet-story", build))


@pytest.fixture(scope="session")
def passing_run(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Path:
    """The passing scenario's folder (judge_helpers.build_passing), run once per session."""
    build = partial(build_passing, claude_bin=claude_bin)
    return once_per_session(tmp_path_factory, "judge-passing", build)


@pytest.fixture(scope="session")
def refine_run(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Path:
    """The refine scenario's folder (judge_helpers.build_refine), run once per session."""
    build = partial(build_refine, claude_bin=claude_bin)
    return once_per_session(tmp_path_factory, "judge-refine", build)


@pytest.fixture(scope="session")
def votes_run(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Path:
    """The votes scenario's folder (judge_helpers.build_votes), run once per session."""
    build = partial(build_votes, claude_bin=claude_bin)
    return once_per_session(tmp_path_factory, "judge-votes", build)


@pytest.fixture(scope="module")
def confined_run(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Confined:
    """The confined spec (tests/sandbox_helpers.py), recorded and replayed once."""
    return confined(tmp_path_factory, claude_bin)


@pytest.fixture
def armed(
    tmp_path_factory: pytest.TempPathFactory, pytester: pytest.Pytester, claude_for_pytester: None
) -> Scenario:
    """The shared run of tests/project_run_helpers.py: a two-arm spec, recorded."""
    return armed_run(tmp_path_factory, pytester)


@pytest.fixture
def snapshots(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    """The snapshot scenario (tests/api_helpers.py), whose first run is of an xfail spec."""
    return pytester_once(pytester, tmp_path_factory, "api-snapshots", play_snapshots)


@pytest.fixture
def words(pytester: pytest.Pytester, tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    """The `words` tests that use the `atom` fixture (tests/api_helpers.py), run once."""
    return pytester_once(pytester, tmp_path_factory, "api-words", play_words)


@pytest.fixture(scope="session")
def claude_bin() -> Path:
    """The real CLI (behind tests/cli_starts.py's counting wrapper); a missing one errors with
    the install command (never a silent skip)."""
    return counted_claude()


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
    for name in XDIST_VARIABLES:
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


@pytest.fixture
def counted(
    claude_bin: Path, claude_for_pytester: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """A `claude` that notes each `-p` session in the file returned, then runs the real one."""
    wrapper, log = counting_claude(tmp_path / "counted", claude_bin)
    monkeypatch.setenv("ATOM_CLAUDE_BIN", str(wrapper))
    return log


# --- the history store: SQLite and a real PostgreSQL server, the same tests on both ----------


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server of this test session's own (tests/history_helpers.py)."""
    server = PostgresServer.start()
    yield server
    server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A new, empty history store's URL: a SQLite file, then a PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / ".atom" / "history.db")
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.database()
