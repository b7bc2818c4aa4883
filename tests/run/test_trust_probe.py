"""What each kind of process a run starts can reach, probed, and the trust model's page held
to it.

One probe script (`PROBE`) runs as every kind of process a sandboxed run starts: the agent's
Bash, a ``setup:`` command, an ``accept: command:`` check, the spec's hook, its plugin's hook and its MCP
server, the workspace's ``.mcp.json`` server, and an ``oracle:`` (as `atom validate` runs it). One
scripted run through the real Claude Code CLI drives all but the oracle, which `run_oracle`
drives with no CLI. Each probe records: how many processes it sees; whether it read another
process's ``/proc/<pid>/environ`` (the caller's, holding a canary) or wrote through its
``/proc/<pid>/root``; whether it read a file in the caller's home or in the project above the
run; whether a write outside the attempt reached the disk; whether it connected to a
listener on 127.0.0.1, or to a non-routable address beyond. A hook in the workspace's own
settings is refused before the CLI starts (tests/agents/test_hook_rules.py), which the
table says too.

The table (`table`) is the trust model page's, between its ``probe-table`` markers: the
page is held to what the probe found.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_atom.run.oracle import run_oracle
from pytest_atom.run.spec_run import run_spec
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import bash, once_per_session
from tests.sandbox_helpers import Listener

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "explanation" / "trust-model.md"
CANARY_NAME = "ATOM_PROBE_CALLER_CANARY"

PROBE = """\
import json, os, socket, sys

KIND = sys.argv[1]
if len(sys.argv) > 2:  # the paths on its command line, as an agent would write them
    CANARY, SECRET, HOME_FILE, PROJECT_FILE, OUTSIDE, PORT = sys.argv[2:8]
else:
    with open("probe-args.json", encoding="utf-8") as f:
        CANARY, SECRET, HOME_FILE, PROJECT_FILE, OUTSIDE, PORT = json.load(f)
found = {}
pids = [p for p in os.listdir("/proc") if p.isdigit()]
found["pids"] = len(pids)
found["environ"] = found["proc_root"] = False
for pid in pids:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError:
        continue
    if CANARY.encode() in data:
        found["environ"] = True
        try:
            with open(f"/proc/{pid}/root{OUTSIDE}/via-proc-{KIND}", "w") as f:
                f.write("x")
        except OSError:
            pass


def read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return SECRET in f.read()
    except OSError:
        return False


found["home"] = read(HOME_FILE)
found["project"] = read(PROJECT_FILE)
try:
    with open(f"{OUTSIDE}/direct-{KIND}", "w") as f:
        f.write("x")
except OSError:
    pass


def connect(host, port, timeout):
    try:
        socket.create_connection((host, int(port)), timeout).close()
        return True
    except OSError:
        return False


found["localhost"] = connect("127.0.0.1", PORT, 3)
found["beyond"] = connect("10.255.255.1", 80, 1)
with open(f"probe-{KIND}.json", "w") as f:
    json.dump(found, f)
"""

#: The kinds, in the table's order, with how each is named on the page.
KINDS = {
    "bash": "the agent's Bash",
    "setup": "`setup:`",
    "check": "`accept: command:` check",
    "oracle": "`oracle:` (`atom validate`)",
    "hook-spec": "the spec's hook",
    "hook-plugin": "a hook of the spec's plugin",
    "mcp-spec": "the spec's MCP server",
    "mcp-workspace": "the workspace's `.mcp.json` server",
}
COLUMNS = (
    "visible PIDs",
    "another's environ",
    "write via /proc/<pid>/root",
    "`$HOME` file",
    "project above",
    "write outside",
    "localhost",
    "beyond",
)


def _play(folder: Path, claude_bin: Path) -> None:
    """Every kind runs the probe once, in one scripted run and one oracle; what each found,
    and what reached the disk outside, into facts.json."""
    project, user, outside = folder / "project", folder / "user", folder / "outside"
    workspace = project / "specs" / "ws"
    workspace.mkdir(parents=True)
    user.mkdir()
    outside.mkdir()
    (project / "pyproject.toml").write_text("", encoding="utf-8")
    secret = uuid.uuid4().hex
    (project / "above.txt").write_text(secret, encoding="utf-8")
    (user / "home.txt").write_text(secret, encoding="utf-8")
    listener = Listener()
    # The canary's name: the probe looks for it in other processes' environ.
    args = [CANARY_NAME, secret, str(user / "home.txt"), str(project / "above.txt")]
    args += [str(outside), str(listener.port)]
    (workspace / "probe.py").write_text(PROBE, encoding="utf-8")
    (workspace / "probe-args.json").write_text(json.dumps(args), encoding="utf-8")
    python = "/usr/bin/python3"

    def line(kind: str) -> list[str]:
        return [python, "probe.py", kind]

    # A .mcp.json the agent could have written names the files it wants on the command line.
    ws_server = {"command": python, "args": [*line("mcp-workspace")[1:], *args]}
    servers = {"mcpServers": {"ws-probe": ws_server}}
    (workspace / ".mcp.json").write_text(json.dumps(servers), encoding="utf-8")
    (project / "specs" / "oracle.sh").write_text(" ".join(line("oracle")) + "\n", encoding="utf-8")
    (project / "specs" / "script.yaml").write_text(
        yaml.safe_dump({"turns": [bash(" ".join(line("bash"))), {"text": "Done. EXIT_LOOP_NOW"}]}),
        encoding="utf-8",
    )
    plugin = project / "probe-plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name": "probe-plugin"}')
    (plugin / "hooks").mkdir()
    plugin_hook = {"type": "command", "command": " ".join(line("hook-plugin"))}
    plugin_hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [plugin_hook]}]}
    (plugin / "hooks" / "hooks.json").write_text(json.dumps({"hooks": plugin_hooks}))
    spec_data = {
        "name": "probe",
        "prompt": "Probe.",
        "workspace": "ws",
        "script": "script.yaml",
        "oracle": "oracle.sh",
        "timeout": 120,
        "attempts": 1,
        "max_iterations": 1,
        "setup": [" ".join(line("setup"))],
        "accept": [{"command": " ".join(line("check"))}],
        "claude": {
            "hooks": {
                "PreToolUse": [
                    {
                        "matcher": "Bash",
                        "hooks": [{"type": "command", "command": " ".join(line("hook-spec"))}],
                    }
                ]
            },
            "mcp_servers": {"probe": {"command": python, "args": line("mcp-spec")[1:]}},
            "plugins": ["../probe-plugin"],
        },
    }
    spec_file = project / "specs" / "probe.atom.yaml"
    spec_file.write_text(yaml.safe_dump(spec_data, sort_keys=False), encoding="utf-8")
    # Another process of the caller's, its environment holding the canary.
    caller = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        env={"PATH": "/usr/bin:/bin", CANARY_NAME: f"CALLER-{secret}"},
    )
    facts: dict[str, Any] = {}
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("HOME", str(user))
            spec = load_spec(spec_file)
            result = run_spec(
                spec, runs_dir=project / "runs", claude_bin=claude_bin, settings=RunSettings()
            )
            run_oracle(spec, folder / "oracle-run")
    finally:
        caller.kill()
        caller.wait()
    places = {kind: result.final.path for kind in KINDS}
    places["oracle"] = folder / "oracle-run" / "attempts" / "a01"
    for kind, place in places.items():
        path = place / f"probe-{kind}.json"
        found: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        if found:
            found["proc_root"] = (outside / f"via-proc-{kind}").exists()
            found["outside"] = (outside / f"direct-{kind}").exists()
        facts[kind] = found
    facts["report"] = result.report()
    facts["connections"] = len(listener.connections)
    (folder / "facts.json").write_text(json.dumps(facts), encoding="utf-8")


def cells(found: dict[str, Any]) -> list[str]:
    """One row of the table: what a kind reached (`no` is what the trust model promises)."""
    if not found:
        return ["did not run"] + [""] * (len(COLUMNS) - 1)

    def said(value: bool) -> str:
        return "**yes**" if value else "no"

    pids = "its own (< 20)" if found["pids"] < 20 else f"the host's ({found['pids']})"
    keys = ("environ", "proc_root", "home", "project", "outside", "localhost", "beyond")
    return [pids, *(said(bool(found[key])) for key in keys)]


def table(facts: dict[str, Any]) -> str:
    """The probe's table, as the trust model page shows it."""
    rows = ["| process | " + " | ".join(COLUMNS) + " |", "|---" * (len(COLUMNS) + 1) + "|"]
    for kind, name in KINDS.items():
        rows.append(f"| {name} | " + " | ".join(cells(facts[kind])) + " |")
    refused = "refused before the CLI starts"
    rows.append(
        "| a hook in the workspace's `.claude/settings*.json` | "
        + " | ".join([refused] + ["-"] * (len(COLUMNS) - 1))
        + " |"
    )
    return "\n".join(rows)


@pytest.fixture(scope="module")
def probed(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> dict[str, Any]:
    folder = once_per_session(
        tmp_path_factory, "trust-probe", partial(_play, claude_bin=claude_bin)
    )
    facts: dict[str, Any] = json.loads((folder / "facts.json").read_text(encoding="utf-8"))
    return facts


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(KINDS))
def test_each_kind_of_process_reaches_nothing_outside_its_run(
    probed: dict[str, Any], kind: str
) -> None:
    found = probed[kind]
    assert found, f"{kind} did not run the probe:\n{probed['report']}"
    assert cells(found) == ["its own (< 20)"] + ["no"] * (len(COLUMNS) - 1), found


@pytest.mark.slow
def test_the_trust_model_page_shows_the_probes_table(probed: dict[str, Any]) -> None:
    page = PAGE.read_text(encoding="utf-8")
    shown = re.search(r"<!-- probe-table -->\n(.*?)\n<!-- /probe-table -->", page, re.S)
    assert shown is not None, f"{PAGE} has no probe-table markers"
    assert shown.group(1) == table(probed), table(probed)
