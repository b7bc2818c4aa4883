"""Helpers the test modules share: paths, scripted turns, files, processes, shipped runs.

They live here, not in conftest.py (which keeps fixtures and hooks), so a test module imports
plain code and never another test module or the conftest: pytest loads conftest.py under its
own module name, and importing it again as `tests.conftest` would load it twice.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from pytest_atom.checks.builtin import default_registry
from pytest_atom.checks.kinds import KINDS
from pytest_atom.evalsuite.graders import register_checks
from pytest_atom.replay.cassette import Cassette
from pytest_atom.reports.trace import TRACE_SCHEMA
from pytest_atom.spec.types import Check, Spec
from pytest_atom.spec_loader.load import load_specs
from tests.cli_starts import note_shared_read

REPO = Path(__file__).resolve().parent.parent


#: The multi-step fixtures (tests/run/test_steps.py runs them): slow to replay, so tests of
#: something else over a copy of fixtures/specs leave them out.
STEP_FIXTURES = ("two_steps", "rollback_steps", "planned", "replanned")


#: The fixture of a Claude Code configuration (tests/replay/test_mcp_tape.py replays it): as slow
#: (the full tool set), and left out with them.
CONFIG_FIXTURES = ("configured",)


#: The dataset fixture (five cases of one spec, tests/datasets/ and the shipped run replay it):
#: five replays more, left out with them.
DATASET_FIXTURES = ("greetings",)


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
    """A summary row (`results.rows.SummaryRow`) with the outcome `label` and figures `props`."""
    from pytest_atom.results.outcome import Outcome
    from pytest_atom.results.rows import SummaryRow

    return SummaryRow.of(nodeid, props, Outcome.of_label(label))


def drop_step_fixtures(specs: Path) -> None:
    """Remove the multi-step fixtures, the configuration one and the dataset (spec, script,
    cases, cassettes) from a copy of fixtures/specs."""
    import shutil

    for name in (*STEP_FIXTURES, *CONFIG_FIXTURES, *DATASET_FIXTURES):
        (specs / f"{name}.atom.yaml").unlink()
        (specs / "scripts" / f"{name}.yaml").unlink()
        (specs / f"{name}.csv").unlink(missing_ok=True)
        shutil.rmtree(specs / "cassettes" / name, ignore_errors=True)


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


#: What xdist tells its workers; an inner pytest run that inherited them would act as one.
XDIST_VARIABLES = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID")
#: Whether this process is an xdist worker, read once at import: fixtures such as
#: `claude_for_pytester` drop the variable for the inner runs they set up.
_XDIST_WORKER = bool(os.environ.get("PYTEST_XDIST_WORKER"))


def once_per_session(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]
) -> Path:
    """The folder `build` filled, built once per test session however many xdist workers
    ask for it: a scenario that starts Claude Code is run once and read by many tests.

    Workers share the parent of their base temp folders; a lock serialises them; `build`
    runs without xdist's variables (its inner pytest runs are sessions of their own); a
    `build` that failed is recorded so that every test sharing it fails with its error
    instead of running it again.
    """
    note_shared_read(name)
    basetemp = tmp_path_factory.getbasetemp()
    shared = basetemp.parent if _XDIST_WORKER else basetemp
    folder = shared / f"shared-{name}"
    folder.mkdir(exist_ok=True)
    done, failed = folder / ".built", folder / ".failed"
    with open(folder / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            if failed.is_file():
                pytest.fail(f"the shared scenario {name!r} failed:\n{failed.read_text()}")
            if not done.is_file():
                try:
                    with pytest.MonkeyPatch.context() as patch:  # inner runs are whole sessions
                        for variable in XDIST_VARIABLES:
                            patch.delenv(variable, raising=False)
                        build(folder)
                except BaseException as exc:  # a timeout too: never left half-done unsaid
                    failed.write_text(f"{type(exc).__name__}: {exc}", encoding="utf-8")
                    raise
                done.touch()
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return folder


def counting_claude(folder: Path, claude_bin: Path) -> tuple[Path, Path]:
    """A `claude` that notes each `-p` session in the log returned, then runs `claude_bin`.

    It is laid out as an npm install (its package.json beside `bin/`), as `claude_bin`
    is, so that reading the CLI's version starts no process of its own."""
    log = folder / "sessions.log"
    wrapper = folder / "bin" / "claude"
    wrapper.parent.mkdir(parents=True)
    manifest = claude_bin.resolve().parent.parent / "package.json"
    if not manifest.is_file():
        manifest = claude_bin.parent.parent / "package.json"
    if manifest.is_file():
        shutil.copyfile(manifest, folder / "package.json")
    wrapper.write_text(
        "#!/bin/sh\n"
        f'case " $* " in *" -p "*) echo "$*" | cut -c1-60 >> "{log}";; esac\n'
        f'exec "{claude_bin}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return wrapper, log


@dataclass(frozen=True)
class InnerRun:
    """What one in-process pytest run of a shared pytester scenario printed."""

    output: str
    ret: int
    outcomes: dict[str, int]

    @property
    def lines(self) -> pytest.LineMatcher:
        return pytest.LineMatcher(self.output.splitlines())

    def assert_outcomes(self, **expected: int) -> None:
        """As `RunResult.assert_outcomes`: every outcome not named is zero."""
        kinds = ("passed", "failed", "errors", "skipped", "xpassed", "xfailed")
        seen = {kind: self.outcomes.get(kind, 0) for kind in kinds}
        assert seen == {kind: expected.get(kind, 0) for kind in kinds}, self.output


@dataclass(frozen=True)
class Scenario:
    """A shared pytester scenario: the project as its runs left it, the folder they ran in
    (which the output names), and the runs by name."""

    project: Path
    root: Path
    runs: Mapping[str, InnerRun]


def pytester_once(
    pytester: pytest.Pytester,
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    play: Callable[[pytest.Pytester], Mapping[str, pytest.RunResult]],
) -> Scenario:
    """`play`'s runs, played once per session in the pytester of the test that comes first;
    the project it left is copied into the shared folder for every test to read."""

    def build(folder: Path) -> None:
        runs = play(pytester)
        saved: dict[str, object] = {}
        for key, result in runs.items():
            try:
                outcomes = result.parseoutcomes()
            except ValueError:  # no summary line (a usage error)
                outcomes = {}
            output = "\n".join([*result.outlines, *result.errlines])
            saved[key] = {"output": output, "ret": int(result.ret), "outcomes": outcomes}
        both = {"root": str(pytester.path), "runs": saved}
        (folder / "runs.json").write_text(json.dumps(both), encoding="utf-8")
        shutil.copytree(pytester.path, folder / "project", symlinks=True)

    folder = once_per_session(tmp_path_factory, name, build)
    saved = json.loads((folder / "runs.json").read_text(encoding="utf-8"))
    runs = {key: InnerRun(**run) for key, run in saved["runs"].items()}
    return Scenario(folder / "project", Path(saved["root"]), runs)


#: The Claude Code that release 0.1 pinned and recorded its cassettes with.
OLD_CLI = "2.1.197"


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
    from pytest_atom.run.spec_run import run_spec
    from pytest_atom.settings.options import RunSettings
    from tests.upstream import RealisticUpstream

    with RealisticUpstream(conversations) as upstream:
        result = run_spec(
            spec,
            runs_dir=spec.path.parent / "runs",
            settings=RunSettings(record_mode="all", upstream=upstream.url),
            claude_bin=claude_bin,
        )
    return result, upstream


#: Release 0.1's cassette (format 1, Claude Code 2.1.197): what show and check are tested on,
#: since users' cassettes from that release must stay readable.
CREATE_FILE = (
    REPO / "tests" / "data" / "cli_2_1_197" / "cassettes" / "create_file" / "create-file.yaml"
)


def old_cassette() -> Cassette:
    """Release 0.1's cassette with the hashes `atom cassette stamp` adds: the findings tests
    see no note about hashes it lacks (which `test_check_notes_...` cover)."""
    data = Cassette.load(CREATE_FILE)
    data.metadata.update(prompt_hash="sha256:0123456789abcdef", script_hash="sha256:0123")
    return data


#: The invocation trace's JSON Schema, ready to validate a trace a run wrote.
VALIDATOR = Draft202012Validator(TRACE_SCHEMA)


def kinds() -> list[str]:
    """The check kinds a plugin's eval suite may use: the built-in ones and its graders."""
    return register_checks(default_registry()).kinds()


def scripted_spec(folder: Path, prompt: str = "Create hello.txt.") -> Spec:
    """A one-turn scripted spec `s` in `folder`: enough to hash, record for and replay."""
    (folder / "turns.yaml").write_text("turns:\n  - text: Done. EXIT_LOOP_NOW\n", encoding="utf-8")
    path = folder / "s.atom.yaml"
    path.write_text(f"name: s\nprompt: {prompt}\nscript: turns.yaml\n", encoding="utf-8")
    return load_specs(path)[0]


def talk(argv: list[str], messages: list[dict[str, Any]], cwd: Path, env: Any = None) -> list[Any]:
    """Send `messages` to a stdio server one at a time, each answer awaited."""
    process = subprocess.Popen(
        argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdin is not None and process.stdout is not None
    answers = []
    for message in messages:
        process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        process.stdin.flush()
        if "id" in message:
            answers.append(json.loads(process.stdout.readline()))
    process.stdin.close()
    assert process.wait(timeout=30) == 0
    process.stdout.close()
    return answers


def tiny_wheel(folder: Path, version: str = "1.0") -> Path:
    """A pure-Python wheel of `tinypkg`, written by hand: pip installs it with no index."""
    name = f"tinypkg-{version}-py3-none-any.whl"
    info = f"tinypkg-{version}.dist-info"
    files = {
        "tinypkg/__init__.py": f"VERSION = {version!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: tinypkg\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    wheel = folder / name
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return wheel


def user_shell_env(claude_bin: Path) -> dict[str, str]:
    """A user's shell: this checkout's `atom` and `pytest`, the CLI under test, none of the
    suite's own pytest or API variables."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "ANTHROPIC_"))}
    env["ATOM_CLAUDE_BIN"] = str(claude_bin)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def built_check(kind: str, params: Mapping[str, Any], line: int = 1) -> Check:
    """A built-in kind's check made by hand, labelled by its kind as the loader labels the
    checks it builds (a `Check` alone describes itself as a plugin's kind would)."""
    return Check(kind, params, line, label=KINDS[kind].describe(params))
