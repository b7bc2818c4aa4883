"""The greet project the upstream-fault tests record (in pytester, or at the gateway), and
how they read its run."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from pytest_atom.gateway import Gateway, scripted
from pytest_atom.replay.cassette import Interaction
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import load_specs
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


@dataclass(frozen=True)
class Received:
    """What a client read of an answer: its status, its body as far as it came, and whether
    the connection was cut before the body ended."""

    status: int
    text: str
    cut: bool


def receive(url: str, interaction: Interaction, timeout: float = 60, **changes: Any) -> Received:
    """Send a recorded request again (as `send` does) and read its answer chunk by chunk, so
    an answer whose connection is cut mid-body is read as far as it came."""
    body = interaction.body
    if isinstance(body, Mapping):
        body = {**body, **changes}
    where = urlsplit(interaction.uri)
    path = where.path + (f"?{where.query}" if where.query else "")
    chunks: list[bytes] = []
    with httpx.stream(
        interaction.method,
        url.rstrip("/") + path,
        json=body,
        headers=interaction.request_headers,
        timeout=timeout,
    ) as reply:
        try:
            for chunk in reply.iter_raw():
                chunks.append(chunk)
        except httpx.RemoteProtocolError:
            return Received(reply.status_code, b"".join(chunks).decode(), cut=True)
    return Received(reply.status_code, b"".join(chunks).decode(), cut=False)
