"""A finished run of a small spec, built from stream-json lines: what the HTML report tests
(static and in a browser) render."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_atom.events import parse
from pytest_atom.paths import node_id
from pytest_atom.reports.properties import result_properties
from pytest_atom.results.check_result import CheckResult
from pytest_atom.results.record import IterationRecord, RunOutcome
from pytest_atom.results.rows import SummaryRow
from pytest_atom.results.spec_result import Attempt, SpecResult
from pytest_atom.results.verdict import Verdict
from pytest_atom.settings.project import pytest_rootdir
from pytest_atom.spec_loader.load import load_spec

SPEC = """\
name: demo
description: A <b>bold</b> claim.
prompt: Write hello.txt.
workspace: ws
criteria:
  - hello.txt exists.
accept:
  - file_exists: hello.txt
"""


def assistant(message_id: str, *blocks: dict[str, Any], parent: str | None = None) -> str:
    message = {"id": message_id, "role": "assistant", "content": list(blocks)}
    return json.dumps({"type": "assistant", "message": message, "parent_tool_use_id": parent})


def tool_result(tool_id: str, content: Any, is_error: bool = False) -> str:
    block = {"type": "tool_result", "tool_use_id": tool_id, "content": content}
    return json.dumps(
        {"type": "user", "message": {"role": "user", "content": [{**block, "is_error": is_error}]}}
    )


def record(*lines: str) -> IterationRecord:
    rec = IterationRecord(returncode=0, stdout="\n".join(lines) + "\n")
    for event in parse(lines):
        rec.apply(event)
    return rec


def result_for(tmp_path: Path, *lines: str, check_passed: bool = True) -> SpecResult:
    """A finished one-attempt run of SPEC whose executor printed `lines`."""
    (tmp_path / "ws").mkdir(parents=True)
    (tmp_path / "ws" / "old.txt").write_text("before\n")
    (tmp_path / "demo.atom.yaml").write_text(SPEC)
    spec = load_spec(tmp_path / "demo.atom.yaml")
    attempt_dir = tmp_path / "run" / "attempts" / "a01"
    attempt_dir.mkdir(parents=True)
    (attempt_dir / "old.txt").write_text("after\n")
    (attempt_dir / "hello.txt").write_text("hello <world>\n")
    check = CheckResult(spec.accept[0], check_passed, "hello.txt exists", "hello <world>")
    verdict = Verdict.parse(
        {
            "score": 0.9,
            "decision": "proceed",
            "criteria": [
                {"criterion": "hello.txt exists.", "met": True, "evidence": "<i>seen</i>"}
            ],
            "feedback": "",
            "flaky": [],
        }
    )
    attempt = Attempt(1, attempt_dir, RunOutcome(True, 1), [record(*lines)], [check], verdict)
    attempt.decision = "proceed" if check_passed else "fail"
    return SpecResult(spec, tmp_path / "run", [attempt], duration=1.5, threshold=0.8)


#: Chromium's flags for a headless page from disk with no network.
CHROMIUM_FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--window-size=1280,1800",
)


def chromium_driver(profile: Path) -> Any:
    """A headless Chromium through Selenium (the caller quits it); a skip (a failure in
    CI) that says how to install Chromium and its driver when they are missing."""
    import os
    import shutil

    import pytest
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not (chromium and driver):
        reason = "Chromium and chromedriver are needed: apt-get install chromium chromium-driver"
        if os.environ.get("CI"):
            pytest.fail(f"{reason} (CI never skips the browser tests)")
        pytest.skip(reason)
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(executable_path=driver), options=options)


def row_of(result: SpecResult, repeat: int | None = None) -> SummaryRow:
    """A finished run's summary row as the session plugin makes it from its item's report
    (`pytest_atom.pytest.session`): pytest's node id from its rootdir, ``[rN]`` for a
    repeat, and the properties the item records."""
    nodeid = node_id(result.spec.path, result.spec.name, pytest_rootdir())
    nodeid += f"[r{repeat}]" if repeat else ""
    return SummaryRow.of(nodeid, result_properties(result), result.outcome)
