"""The greet project the upstream-fault tests record (in pytester, or at the gateway), and
how they read its run."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_atom.cassettes.cassette import Interaction
from pytest_atom.gateway import Gateway, scripted
from pytest_atom.model.spec import load_specs
from pytest_atom.model.spec_types import Spec
from tests.helpers import bash
from tests.stream_helpers import CLI_VERSION, claude_requests, recording, send

GREET = """\
name: greet
prompt: {prompt}
timeout: {timeout}
accept:
  - file_contains: {{path: greeting.txt, pattern: "^hello$"}}
"""


PROMPT = "Create greeting.txt saying hello."


TURNS = [bash("echo hello > greeting.txt", "Writing it."), {"text": "Done.\nEXIT_LOOP_NOW"}]


CASSETTE = Path("cassettes/greet/greet.yaml")


PARTIAL = CASSETTE.with_name("greet.partial.yaml")


def project(
    pytester: pytest.Pytester, cassette: bytes | None, timeout: int, prompt: str = PROMPT
) -> Path:
    pytester.makefile(".atom.yaml", greet=GREET.format(prompt=prompt, timeout=timeout))
    path = pytester.path / CASSETTE
    if cassette is not None:
        path.parent.mkdir(parents=True)
        path.write_bytes(cassette)
    return path


def record(pytester: pytest.Pytester, url: str, mode: str) -> pytest.RunResult:
    # -s: nothing a gateway thread prints can hide in a captured section
    return pytester.runpytest(
        "--atom", f"--atom-record-mode={mode}", f"--atom-upstream={url}", "-s"
    )


def output(result: pytest.RunResult) -> str:
    return "\n".join(result.outlines + result.errlines)


def record_good(folder: Path) -> bytes:
    """A good greet cassette, recorded at the real gateway in `folder` from a scripted
    upstream, with Claude Code's own requests (a shipped cassette's two executor turns):
    what a fault while re-recording must never cost."""
    (folder / "greet.atom.yaml").write_text(GREET.format(prompt=PROMPT, timeout=60))
    with Gateway(scripted(TURNS)) as upstream:
        with recording(greet(folder), upstream.url) as (source, gateway):
            for turn in executor_turns():
                assert send(gateway.url, turn).status_code == 200
    written = source.finish(greet(folder), failed=False, cli_version=CLI_VERSION)
    assert written == folder / CASSETTE
    return written.read_bytes()


def greet(folder: Path) -> Spec:
    [spec] = load_specs(folder / "greet.atom.yaml")
    return spec


def executor_turns() -> list[Interaction]:
    """The executor's turns Claude Code sent when a shipped cassette was recorded: as
    many as TURNS answers."""
    turns = [i for i in claude_requests() if i.role == "executor" and i.method == "POST"]
    return turns[: len(TURNS)]
