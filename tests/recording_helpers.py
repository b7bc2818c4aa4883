"""What the recording, interrupt and steps tests share: a one-spec project (greet), the
greet story, a way to send recorded requests to a gateway, and a hook that keeps results.

The greet story is the one recording the recording and interrupt tests read: greet recorded
once from a scripted upstream, with a secret in its workspace and its environment, a Ctrl-C
in a re-recording of it, and a replay with the upstream gone. It runs once per test session
(`once_per_session`); a test that needs a recorded greet project starts from a copy of it
(`with_recorded`) instead of recording its own.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.agents.claude_code.cli import CLAUDE_CODE_VERSION
from pytest_atom.gateway import Gateway, scripted
from tests.helpers import REPO, bash

GREET = """\
name: greet
prompt: Create greeting.txt saying hello.
timeout: {timeout}
accept:
  - file_contains: {{path: greeting.txt, pattern: "^hello$"}}
"""


CASSETTE = Path("cassettes/greet/greet.yaml")
PARTIAL = CASSETTE.with_name("greet.partial.yaml")


TURNS = [bash("echo hello > greeting.txt", "Writing it."), {"text": "Done.\nEXIT_LOOP_NOW"}]

#: The story's greet: it reads a secret from its workspace, then greets.
STORY_SPEC = GREET.format(timeout=120) + "workspace: ws\n"
STORY_TURNS = [bash("cat secret.txt; echo hello > greeting.txt", "Writing it."), TURNS[1]]

#: What the agent does in a recording that is interrupted: starts, then waits.
SLOW = [bash("touch started; sleep 120")]

#: The Claude Code version the story's replay finds in the cassette: another one's.
OTHER_VERSION = "0.0.1"


def greet_spec(pytester: pytest.Pytester) -> Path:
    return pytester.makefile(".atom.yaml", greet=GREET.format(timeout=120))


def interrupt(cwd: Path, command: list[str], env: dict[str, str] | None = None) -> tuple[int, str]:
    """Start `command`, wait until the agent's slow command has started, send SIGINT: its
    exit status and what it printed."""
    proc = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    deadline = time.monotonic() + 120
    while not list((cwd / ".atom" / "runs").glob("*/attempts/a01/started")):
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            output, _ = proc.communicate(timeout=60)
            raise AssertionError(f"the agent never started:\n{output}")
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    output, _ = proc.communicate(timeout=120)
    return proc.returncode, output


@dataclass(frozen=True)
class GreetStory:
    """What the greet story left: the project, the cassette as recorded, each step's output."""

    folder: Path

    @property
    def project(self) -> Path:
        return self.folder / "project"

    @property
    def recorded(self) -> Path:
        """The cassette as the first recording wrote it (before the story edits it)."""
        return self.folder / "recorded.yaml"

    def text(self, name: str) -> str:
        return (self.folder / name).read_text(encoding="utf-8")


def with_recorded(pytester: pytest.Pytester, story: GreetStory) -> Path:
    """The story's greet project (spec, workspace, cassette as it is now) in `pytester`."""
    for name in ("greet.atom.yaml", "ws", "cassettes"):
        source = story.project / name
        copy = shutil.copytree if source.is_dir() else shutil.copy2
        copy(source, pytester.path / name)
    return pytester.path / CASSETTE


def build_greet_story(folder: Path, claude_bin: Path) -> None:
    """Record greet (record mode once), interrupt a re-recording (record mode all) with
    Ctrl-C while the agent waits, then mark the cassette as another Claude Code version's
    and replay it with every upstream gone. Each step's output and the run folders it made
    are written beside the project."""
    project = folder / "project"
    (project / "ws").mkdir(parents=True)
    (project / "greet.atom.yaml").write_text(STORY_SPEC, encoding="utf-8")
    secrets: dict[str, Any] = {"token": f"canary-{uuid.uuid4().hex}"}
    secrets["api_key"] = f"sk-ant-{uuid.uuid4().hex}"
    (project / "ws" / "secret.txt").write_text(f"token={secrets['token']}\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
        env.pop(name, None)
    env["ATOM_CANARY_TOKEN"] = secrets["token"]  # a secret by its name: scrubbed by value
    env["ATOM_CLAUDE_BIN"] = str(claude_bin)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    pytest_command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--atom"]
    runs = project / ".atom" / "runs"

    def step(name: str, command: list[str], *, ctrl_c: bool = False, **extra: str) -> None:
        before = set(runs.iterdir()) if runs.is_dir() else set()
        if ctrl_c:
            status, output = interrupt(project, command, env)
        else:
            done = subprocess.run(
                command,
                cwd=project,
                env=env | extra,
                capture_output=True,
                text=True,
                timeout=600,
            )
            status, output = done.returncode, done.stdout + done.stderr
        [run] = [p for p in set(runs.iterdir()) - before if p.is_dir()]
        (folder / f"{name}.txt").write_text(output, encoding="utf-8")
        (folder / f"{name}.status").write_text(str(status), encoding="utf-8")
        (folder / f"{name}.run").write_text(str(run.relative_to(project)), encoding="utf-8")

    with Gateway(scripted(STORY_TURNS)) as upstream:
        (folder / "upstream.url").write_text(upstream.url, encoding="utf-8")
        record = [*pytest_command, "--atom-record-mode=once", f"--atom-upstream={upstream.url}"]
        step("record", record, ANTHROPIC_API_KEY=secrets["api_key"])  # passed on, never kept
        turns = [e.request.json for e in upstream.exchanges if e.request.kind == "turn"]
        secrets["token_seen"] = secrets["token"] in json.dumps(turns[-1:])
        sent = {e.request.headers.get("x-api-key") for e in upstream.exchanges}
        secrets["key_sent"] = secrets["api_key"] in sent
    (folder / "secrets.json").write_text(json.dumps(secrets), encoding="utf-8")
    cassette = project / CASSETTE
    shutil.copyfile(cassette, folder / "recorded.yaml")
    with Gateway(scripted(SLOW)) as slow:
        rerecord = [*pytest_command, "--atom-record-mode=all", f"--atom-upstream={slow.url}"]
        step("interrupted", rerecord, ctrl_c=True)
    shutil.copyfile(cassette, folder / "after-interrupt.yaml")
    cassette.write_text(
        cassette.read_text(encoding="utf-8").replace(
            f"claude_code_version: {CLAUDE_CODE_VERSION}", f"claude_code_version: {OTHER_VERSION}"
        ),
        encoding="utf-8",
    )
    step("replay", pytest_command)  # record mode none: nothing may leave the machine


#: The results of the specs an in-process pytester run ran, kept by the conftest below: a
#: test reads the typed result its pytest run produced (the list is this module's, which
#: the inner run imports from the outer one's modules).
RESULTS: list[Any] = []

KEEP_RESULTS = """
from tests.recording_helpers import RESULTS

def pytest_atom_verdict(spec, verdict, result):
    RESULTS.append(result)
"""


def create_file_spec(folder: Path, *, cassette: bool = True) -> Path:
    """The shipped create_file spec (its script, and its cassette unless not) in `folder`."""
    specs = REPO / "fixtures" / "specs"
    shutil.copy2(specs / "create_file.atom.yaml", folder)
    shutil.copytree(specs / "scripts", folder / "scripts")
    if cassette:
        shutil.copytree(specs / "cassettes" / "create_file", folder / "cassettes" / "create_file")
    return folder / "create_file.atom.yaml"


def send(gateway: Gateway, interaction: Any, body: Any = None) -> int:
    """Send a recorded request (its body, or `body` in its place) to `gateway`, as the CLI
    would: the status the gateway answered."""
    import httpx

    headers = {
        k: v
        for k, v in (interaction.request_headers or {}).items()
        if k.lower() not in ("content-length", "host")
    }
    reply = httpx.post(
        gateway.url + interaction.endpoint + "?beta=true",
        json=interaction.body if body is None else body,
        headers=headers,
        timeout=60,
    )
    return reply.status_code
