"""A one-spec project (greet) that records through pytester: what the recording tests share."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.helpers import bash

GREET = """\
name: greet
prompt: Create greeting.txt saying hello.
timeout: {timeout}
accept:
  - file_contains: {{path: greeting.txt, pattern: "^hello$"}}
"""


CASSETTE = Path("cassettes/greet/greet.yaml")


TURNS = [bash("echo hello > greeting.txt", "Writing it."), {"text": "Done.\nEXIT_LOOP_NOW"}]


def greet_spec(pytester: pytest.Pytester, timeout: int = 120, prompt: str | None = None) -> Path:
    text = GREET.format(timeout=timeout)
    if prompt:
        text = text.replace("Create greeting.txt saying hello.", prompt)
    return pytester.makefile(".atom.yaml", greet=text)


def record(pytester: pytest.Pytester, upstream: Any, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "--atom", "--atom-record-mode=once", f"--atom-upstream={upstream.url}", *args
    )
