"""Planted secrets end to end: a real recording with the real CLI leaves none on disk.

Four canaries, each a fresh random value: a token in the environment, the API key the
recording uses, an auth token the CLI sends as a header, and a secret line in a workspace
file the agent reads (and then repeats, bare, in its last message). After recording (mode
`all`, a scripted upstream on 127.0.0.1) a failing spec with a report folder and JUnit XML,
every file under the project (cassette, run folders with the CLI's own transcripts,
report, XML with the failure report) is read as bytes and searched for every canary, as
written and JSON-escaped.
"""

from __future__ import annotations

import json
import secrets
import string
from typing import Any

import pytest

from pytest_atom.environment import CREDENTIAL_PLACEHOLDERS
from tests.helpers import bash

pytestmark = pytest.mark.usefixtures("claude_for_pytester")

SPEC = """\
name: leak
prompt: Show me the deployment settings.
workspace: ws
timeout: 120
pass_env: [MY_SERVICE_TOKEN]
accept:
  - file_exists: deployed.txt
"""


def _random(alphabet: str, length: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(length))


def _forms(value: str) -> set[bytes]:
    once = json.dumps(value)[1:-1]
    return {value.encode(), once.encode(), json.dumps(once)[1:-1].encode()}


@pytest.mark.slow
def test_planted_canaries_appear_in_no_file_the_run_leaves(
    pytester: pytest.Pytester, gateway_for: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    alnum = string.ascii_letters + string.digits
    canaries = {
        "env token": "svc" + _random(alnum, 29),
        "API key": "sk-ant-api03-" + _random(alnum, 40),
        "auth token": "atk" + _random(alnum, 37),
        "workspace secret": _random(alnum, 20) + "/" + _random(alnum, 19),
    }
    monkeypatch.setenv("MY_SERVICE_TOKEN", canaries["env token"])
    monkeypatch.setenv("ANTHROPIC_API_KEY", canaries["API key"])
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", canaries["auth token"])
    pytester.makefile(".atom.yaml", leak=SPEC)
    fixture = pytester.path / "ws" / "secrets.env"
    fixture.parent.mkdir()
    fixture.write_text(
        f"AWS_ACCESS_KEY_ID=AKIA{_random(string.ascii_uppercase, 16)}\n"
        f"AWS_SECRET_ACCESS_KEY={canaries['workspace secret']}\n"
    )
    upstream = gateway_for(
        [
            bash("cat secrets.env; echo service=$MY_SERVICE_TOKEN; env | grep ^ANTHROPIC_"),
            # A model may repeat what it read without the name that gave it away.
            {"text": f"The key is {canaries['workspace secret']}.\nEXIT_LOOP_NOW"},
        ]
    )
    report, junit = pytester.path / "report", pytester.path / "junit.xml"

    result = pytester.runpytest(
        "--atom",
        "--atom-record-mode=all",
        f"--atom-upstream={upstream.url}",
        f"--atom-report={report}",
        f"--junitxml={junit}",
    )

    # The spec fails (no deployed.txt): its failure report, quoting the agent, is in the XML.
    result.assert_outcomes(failed=1)
    assert "agent's last message" in junit.read_text()
    # The agent really saw the env token and the workspace secret; of the credentials, only
    # the placeholders: the gateway put the real key and token on the requests.
    seen = json.dumps([e.request.json for e in upstream.exchanges])
    assert canaries["env token"] in seen and canaries["workspace secret"] in seen
    assert f"ANTHROPIC_API_KEY={CREDENTIAL_PLACEHOLDERS['ANTHROPIC_API_KEY']}" in seen
    assert canaries["API key"] not in seen and canaries["auth token"] not in seen
    headers = [e.request.headers for e in upstream.exchanges]
    assert any(h.get("x-api-key") == canaries["API key"] for h in headers)
    assert any(h.get("authorization") == f"Bearer {canaries['auth token']}" for h in headers)

    files = [p for p in pytester.path.rglob("*") if p.is_file() and not p.is_symlink()]
    runs = pytester.path / ".atom" / "runs"
    assert report.is_dir() and junit.is_file()
    assert list(runs.glob("*/claude-config/projects/*/*.jsonl"))  # the CLI's transcripts
    assert list(pytester.path.glob("cassettes/leak/leak.yaml"))
    assert len(files) > 10
    # The fixture is the user's file: it and the agent's copy of it (the attempt's workspace,
    # left as the agent left it) are the only places its secret may be.
    copies = {p for p in files if p.name == "secrets.env"}
    assert all(p.read_bytes() == fixture.read_bytes() for p in copies)
    assert copies == {fixture, *runs.glob("*/attempts/a01/secrets.env")}
    leaks = [
        f"{name} in {path.relative_to(pytester.path)}"
        for path in files
        for name, value in canaries.items()
        if not (name == "workspace secret" and path in copies)
        and any(form in path.read_bytes() for form in _forms(value))
    ]
    assert leaks == []
