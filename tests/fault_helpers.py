"""The greet project the upstream-fault tests record in pytester, and how they read its run."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_atom.gateway import Gateway, scripted
from pytest_atom.model.settings import RunSettings
from pytest_atom.model.spec import load_specs
from pytest_atom.run.spec_run import run_spec
from tests.helpers import bash

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


def record_good(folder: Path, claude_bin: Path) -> bytes:
    """A good greet cassette, recorded in `folder` from a scripted upstream: what a fault
    while re-recording must never cost."""
    (folder / "greet.atom.yaml").write_text(GREET.format(prompt=PROMPT, timeout=60))
    [spec] = load_specs(folder / "greet.atom.yaml")
    with Gateway(scripted(TURNS)) as upstream:
        result = run_spec(
            spec,
            runs_dir=folder / "runs",
            settings=RunSettings(record_mode="all", upstream=upstream.url),
            claude_bin=claude_bin,
        )
    assert result.passed, result.report()
    return (folder / CASSETTE).read_bytes()
