"""The caller's credentials stay in the gateway: the CLI and everything it
starts get a placeholder under each credential's name, and the recording gateway puts the
real one on the requests it forwards upstream, so an agent that prints its key (reversed, to
pass any scrubber) prints the placeholder.

The lowest layers first (the environment a run's CLI gets; the gateway in front of the
realistic upstream, driven by an HTTP client), then one recording through the real CLI,
which also shows a spec's `env:` secret scrubbed from the reflector's request and
a fresh recording of an agent that runs `env` passing `atom cassette check`.
"""

from __future__ import annotations

import json
import pickle
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner

from atom_cli.cassette_cmd import cassette
from pytest_atom.agents.claude_code.runner import claude_env
from pytest_atom.environment import CREDENTIAL_PLACEHOLDERS
from pytest_atom.gateway import Gateway
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.normalize import Normalizer
from pytest_atom.replay.recording import AUTH_VARIABLES
from pytest_atom.replay.responder import CassetteResponder
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.reports.html import spec_view
from pytest_atom.reports.json_trace import write_report
from pytest_atom.spec_loader.load import load_specs
from tests.helpers import once_per_session, record_through_upstream
from tests.upstream import RealisticUpstream, Turn

KEY = CREDENTIAL_PLACEHOLDERS["ANTHROPIC_API_KEY"]
OAUTH = CREDENTIAL_PLACEHOLDERS["CLAUDE_CODE_OAUTH_TOKEN"]
TASK = "Say hi."


def test_every_credential_claude_code_reads_has_a_placeholder() -> None:
    assert set(CREDENTIAL_PLACEHOLDERS) == set(AUTH_VARIABLES)


@pytest.mark.parametrize("name", AUTH_VARIABLES)
def test_a_recordings_cli_gets_a_placeholder_under_the_credentials_name(
    name: str, tmp_path: Path
) -> None:
    real = f"real-{uuid.uuid4().hex}"
    env = claude_env("http://127.0.0.1:1", tmp_path / "claude-config", {name: real}, base={})
    assert env[name] == CREDENTIAL_PLACEHOLDERS[name]
    assert real not in json.dumps(env)
    others = [n for n in AUTH_VARIABLES if n != name]
    assert not [n for n in others if n in env]  # the CLI authenticates as the caller would


def test_a_replays_cli_gets_the_api_key_placeholder(tmp_path: Path) -> None:
    env = claude_env("http://127.0.0.1:1", tmp_path / "claude-config", base={})
    assert env["ANTHROPIC_API_KEY"] == KEY


@pytest.fixture
def upstream() -> Iterator[RealisticUpstream]:
    with RealisticUpstream({TASK: [{"text": "Hi."}]}, delay=0) as server:
        yield server


@pytest.mark.parametrize(
    ("name", "header", "sent"),
    [
        ("ANTHROPIC_API_KEY", "x-api-key", KEY),
        ("CLAUDE_CODE_OAUTH_TOKEN", "authorization", f"Bearer {OAUTH}"),
    ],
)
def test_the_recording_gateway_puts_the_real_credential_on_what_it_forwards(
    name: str, header: str, sent: str, upstream: RealisticUpstream, tmp_path: Path
) -> None:
    real = f"sk-ant-{uuid.uuid4().hex}"
    tape = CassetteResponder(
        Cassette(tmp_path / "recorded.yaml"),
        Normalizer({}),
        Scrubber(env={}, extra={name: real}),
        replay=False,
        upstream=upstream.url,
        credentials={name: real},
    )
    body = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": TASK}]}
    with Gateway(tape) as gateway:
        reply = httpx.post(f"{gateway.url}/v1/messages", json=body, headers={header: sent})
    assert reply.status_code == 200, reply.text
    received = dict(zip(("x-api-key", "authorization"), upstream.credentials[-1], strict=True))
    assert received[header] == sent.replace(CREDENTIAL_PLACEHOLDERS[name], real)
    tape.cassette.interactions = tape.finished_interactions()
    saved = tape.cassette.save().read_text(encoding="utf-8")
    assert real not in saved and real not in repr(tape)


# ------------------------------------------------------------------- one real recording

PROMPT = "Show the key you hold."  # shorter than AUDITOR, which quotes it
AUDITOR = "You are a clinical auditor. An autonomous agent worked on the task below"
CRITERION = "out.txt holds the service token."
#: The run folder's own folders the harness writes (the attempts are the agent's).
FOLDERS = ("claude-config", "home")
LOOK = (
    "printenv ANTHROPIC_API_KEY; printenv ANTHROPIC_API_KEY | rev; "
    'printf "%s\\n" "$SERVICE_TOKEN" > out.txt; env | sort'
)


def _conversations() -> dict[str, list[Turn]]:
    verdict = {
        "score": 0.95,
        "decision": "proceed",
        "criteria": [{"criterion": CRITERION, "met": True, "evidence": "out.txt"}],
        "feedback": "",
        "flaky": [],
    }
    return {
        PROMPT: [
            {"tool_calls": [{"name": "Bash", "input": {"command": LOOK, "description": "Look"}}]},
            {"text": "Done.\nEXIT_LOOP_NOW"},
        ],
        AUDITOR: [
            {"tool_calls": [{"name": "StructuredOutput", "input": verdict}]},
            {"text": "Judged."},
        ],
    }


@dataclass(frozen=True)
class Recorded:
    """What the recording left: the caller's key and the spec's secret, the upstream's log,
    the cassette and the run folder."""

    key: str
    literal: str
    passed: bool
    report: str
    bodies: list[Any]
    credentials: list[tuple[str | None, str | None]]
    cassette: Path
    run_dir: Path


def _record(folder: Path, claude_bin: Path) -> None:
    key, literal = f"sk-ant-api03-{uuid.uuid4().hex}", f"spec-literal-{uuid.uuid4().hex[:12]}"
    (folder / "keys.atom.yaml").write_text(
        f"name: keys\nprompt: {PROMPT}\ntimeout: 300\n"
        f'env:\n  SERVICE_TOKEN: {literal}\n  DEBUG: "1"\n'
        f"accept:\n  - file_exists: out.txt\ncriteria: [{CRITERION}]\n",
        encoding="utf-8",
    )
    [spec] = load_specs(folder / "keys.atom.yaml")
    with pytest.MonkeyPatch.context() as patch:
        for name in AUTH_VARIABLES:
            patch.delenv(name, raising=False)
        patch.setenv("ANTHROPIC_API_KEY", key)  # the caller's: the gateway's alone
        result, upstream = record_through_upstream(spec, _conversations(), claude_bin)
    write_report(result, folder / "report")  # the trace and the transcripts
    view = json.dumps(spec_view(result))  # what the HTML report and results.json show
    (folder / "report" / "view.json").write_text(view, encoding="utf-8")
    bodies = [r.body for r in upstream.requests]
    kept = (key, literal, result.passed, result.report(), bodies, upstream.credentials)
    (folder / "recorded.pickle").write_bytes(pickle.dumps((*kept, str(result.run_dir))))


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Recorded:
    folder = once_per_session(
        tmp_path_factory, "credentials", partial(_record, claude_bin=claude_bin)
    )
    key, literal, passed, report, bodies, credentials, run_dir = pickle.loads(
        (folder / "recorded.pickle").read_bytes()
    )
    cassette = folder / "cassettes" / "keys" / "keys.yaml"
    return Recorded(key, literal, passed, report, bodies, credentials, cassette, Path(run_dir))


@pytest.mark.slow
def test_the_agent_sees_the_placeholder_and_the_upstream_the_real_key(
    recorded: Recorded,
) -> None:
    assert recorded.passed, recorded.report
    assert recorded.credentials and all(
        api_key == recorded.key for api_key, _ in recorded.credentials
    )
    # What the agent printed reached the upstream as it printed it: the placeholder.
    sent = json.dumps(recorded.bodies)
    assert f"{KEY}\\n{KEY[::-1]}\\n" in sent
    assert recorded.key not in sent and recorded.key[::-1] not in sent


@pytest.mark.slow
def test_the_specs_secret_is_in_no_request_of_the_cassette_the_reflectors_included(
    recorded: Recorded,
) -> None:
    data = Cassette.load(recorded.cassette)
    reflector = [i for i in data.interactions if i.role == "reflector"]
    assert reflector and "out.txt" in json.dumps(reflector[0].body)
    text = recorded.cassette.read_text(encoding="utf-8")
    assert recorded.literal not in text and recorded.key not in text
    assert "<SECRET:SERVICE_TOKEN>" in json.dumps(reflector[0].body)
    assert "DEBUG=1" in text  # a common value is no secret
    # Nor in the CLI's own transcripts and logs (scrubbed in place), the trace, the
    # report's transcripts, the HTML view or the failure report.
    written = [recorded.cassette.parents[2] / "report", *(recorded.run_dir / f for f in FOLDERS)]
    files = [p for f in written for p in f.rglob("*") if p.is_file() and not p.is_symlink()]
    assert any(p.name == "view.json" for p in files) and any(p.suffix == ".jsonl" for p in files)
    for path in files:
        assert recorded.literal not in path.read_text(errors="replace"), path
    assert recorded.literal not in recorded.report


@pytest.mark.slow
def test_a_fresh_recording_of_an_agent_that_runs_env_has_no_secret_finding(
    recorded: Recorded,
) -> None:
    result = CliRunner().invoke(cassette, ["check", str(recorded.cassette)])
    assert "GIT_CONFIG_KEY_0=safe.directory" in recorded.cassette.read_text(encoding="utf-8")
    assert "1 cassette checked" in result.output
    # Secrets only: the raw /tmp/atom-<hash> path of a long run folder is another test's
    # (tests/replay/test_machine_free_cli.py).
    assert [line for line in result.output.splitlines() if "secret" in line] == []
