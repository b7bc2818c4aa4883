"""Network-sandboxed specs record, pass the check and replay strict at once, through the real
CLI, as a new user runs them.

The project is the quick start's (`atom init demo`), with its `hello` spec renamed
`greeting-file-with-a-long-name-net` and allowed a domain, plus a spec whose agent runs
`env`, also allowed a domain. Both are recorded from their scripts in a folder deep enough
that their runs' temp folders are short ones in /tmp, then replayed in
``--atom-match=strict`` in that folder, and from a copy of the project in a shallow folder,
where the `env` spec's run keeps its own temp folder. One run, shared by both tests.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from pytest_atom.environment import tmpdir_for
from tests.helpers import once_per_session, user_shell_env, write

pytestmark = pytest.mark.slow

LONG = "greeting-file-with-a-long-name-net"
ENV_SPEC = """\
name: env
prompt: Print the environment.
workspace: workspaces/hello
script: scripts/env.yaml
criteria:
  - The environment was printed.
sandbox: {network: [pypi.org]}
"""
ENV_SCRIPT = """\
turns:
  - tool_use: [{name: Bash, input: {command: "env | sort", description: Print the environment}}]
  - text: EXIT_LOOP_NOW
reflector:
  - verdict:
      score: 0.9
      decision: proceed
      criteria: [{criterion: The environment was printed., met: true, evidence: env ran.}]
      feedback: ""
      flaky: []
"""


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    return {"returncode": done.returncode, "output": done.stdout + done.stderr}


def short_temp(project: Path, spec: str) -> bool:
    """Whether the run of `spec` in `project` had its temp folder in /tmp (a deep run)."""
    (folder,) = (project / ".atom" / "runs").glob(f"{spec}-*")
    return tmpdir_for(folder / "tmp") != folder / "tmp"


def build(folder: Path, claude_bin: Path) -> None:
    """Record in `folder`'s project, check, replay strict there and in a shallow copy."""
    env = user_shell_env(claude_bin)
    pytest_atom = ["pytest", "--atom", "specs", "-p", "no:cacheprovider", "-p", "no:randomly"]
    steps: dict[str, Any] = {"init": run(["atom", "init", "demo"], folder, env)}
    project = folder / "demo"
    specs = project / "specs"
    hello = specs / "hello.atom.yaml"
    text = hello.read_text(encoding="utf-8").replace("name: hello", f"name: {LONG}")
    write(specs / f"{LONG}.atom.yaml", text + "sandbox: {network: [pypi.org]}\n")
    hello.unlink()
    write(specs / "env.atom.yaml", ENV_SPEC)
    write(specs / "scripts" / "env.yaml", ENV_SCRIPT)
    steps["record"] = run([*pytest_atom, "--atom-record-mode=once"], project, env)
    steps["deep"] = {spec: short_temp(project, spec) for spec in (LONG, "env")}
    # Both fresh recordings, the env listing's too (the harness's own variables in it
    # are no secrets, and redacting one never eats its neighbour).
    steps["check"] = run(["atom", "cassette", "check", "specs/cassettes"], project, env)
    shutil.rmtree(project / ".atom" / "runs")
    steps["strict"] = run([*pytest_atom, "--atom-match=strict"], project, env)
    # Another folder, shallow: /tmp/mfXXXXXXXX/p leaves room for the env run's sockets.
    shallow = Path(tempfile.mkdtemp(prefix="mf", dir="/tmp"))
    try:
        copy = shallow / "p"
        shutil.copytree(project, copy, ignore=shutil.ignore_patterns("runs"))
        steps["elsewhere"] = run([*pytest_atom, "--atom-match=strict"], copy, env)
        steps["elsewhere_deep"] = short_temp(copy, "env")
    finally:
        shutil.rmtree(shallow)
    write(folder / "steps.json", json.dumps(steps, indent=2))


@pytest.fixture(scope="session")
def scenario(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> Path:
    return once_per_session(tmp_path_factory, "machine-free", partial(build, claude_bin=claude_bin))


def steps(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "steps.json").read_text(encoding="utf-8"))
    return data


def cassette(folder: Path, spec: str) -> str:
    return (folder / "demo" / "specs" / "cassettes" / spec / f"{spec}.yaml").read_text("utf-8")


def test_a_network_sandboxed_spec_in_a_deep_run_folder_passes_the_check_and_replays_strict(
    scenario: Path,
) -> None:
    """The read guard's short temp folder is `<RUN_DIR>/tmp` in the recording,
    so `atom cassette check` passes it and a strict replay right after passes, no drift."""
    done = steps(scenario)
    assert done["init"]["returncode"] == 0, done["init"]["output"]
    assert done["record"]["returncode"] == 0, done["record"]["output"][-4000:]
    assert done["deep"] == {LONG: True, "env": True}  # both runs had a short temp folder
    recorded = cassette(scenario, LONG)
    assert "/tmp/atom-" not in recorded
    assert '\\"<RUN_DIR>/tmp\\",\\"<RUN_DIR>\\"' in recorded
    check = done["check"]
    assert check["returncode"] == 0, check["output"]
    assert "2 cassettes checked, 0 findings" in check["output"], check["output"]
    strict = done["strict"]["output"]
    assert done["strict"]["returncode"] == 0 and "2 passed" in strict, strict[-4000:]
    assert "drift:" not in strict and "another machine" not in strict


def test_an_agent_that_prints_its_environment_replays_strict_from_another_folder(
    scenario: Path,
) -> None:
    """The sandbox's per-process values are placeholders in the recording, and
    the copy's run (a shallow one, with its own temp folder) replays it strict."""
    done = steps(scenario)
    recorded = cassette(scenario, "env")
    for masked in (
        "CLAUDE_PID=<PID>",
        "CLAUDE_CODE_HOST_SOCKS_PROXY_PORT=<PORT>",
        "CLAUDE_CODE_MESSAGING_SOCKET=<RUN_DIR>/tmp/cc-socks/<PID>.sock",
        "http_proxy=http://srt.<PROXY_USER>:",
        "ANTHROPIC_BASE_URL=http://127.0.0.1:<PORT>",
        "TMP=<RUN_DIR>/tmp",
    ):
        assert masked in recorded, masked
    assert done["elsewhere_deep"] is False
    elsewhere = done["elsewhere"]["output"]
    assert done["elsewhere"]["returncode"] == 0 and "2 passed" in elsewhere, elsewhere[-4000:]
    assert "drift:" not in elsewhere
