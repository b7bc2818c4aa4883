"""The Claude Code configuration under test (`claude:`): parsed and refused as spec errors,
installed into the run's own files, hashed into the cassette, and, with the real CLI, a
skill invoked, CLAUDE.md reaching the model, a settings rule and a hook refusing commands
(the hook in the run's srt sandbox, as checks are), and a changed skill making the cassette stale by name."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from atom_cli.cassette_cmd import cassette as cassette_group
from pytest_atom.agents.claude_code.configuration import (
    config_hashes,
    installed_paths,
    mcp_server_entry,
)
from pytest_atom.agents.claude_code.sandbox import HOOK_LOCK, SETTINGS_FILE, Confinement
from pytest_atom.agents.claude_code.srt import process_sandbox
from pytest_atom.diffs import workspace_diff
from pytest_atom.errors import RecordingError, SpecError
from pytest_atom.replay.cassette import Cassette
from pytest_atom.replay.recording import cassette_path, open_model_source
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.replay.staleness import config_staleness, staleness, stamp_hashes
from pytest_atom.reports.html import render_html, report_row, spec_view
from pytest_atom.reports.text import tool_problem
from pytest_atom.run.spec_run import run_spec
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec.types import SandboxOptions
from pytest_atom.spec_loader.load import load_spec
from tests.helpers import once_per_session

SKILL_MD = "---\nname: release-notes\ndescription: Writes release notes.\n---\nWrite NOTES.md.\n"
HOOK = (
    "touch ../../../outside-marker; touch inside-marker; "
    "if grep -q curl; then echo 'curl is not allowed here' >&2; exit 2; fi"
)


def project(tmp_path: Path, claude: str, *, extra: str = "", workspace: bool = True) -> Path:
    """A project (pyproject.toml marks its root) with a skill, a subagent and a plugin at
    its top and a spec in `specs/` whose `claude:` block is `claude`."""
    (tmp_path / "pyproject.toml").write_text("", encoding="utf-8")
    skill = tmp_path / ".claude" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL_MD, encoding="utf-8")
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir()
    (agents / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews.\n---\nYou are REVIEWER-7.\n", encoding="utf-8"
    )
    plugin = tmp_path / "my-plugin" / ".claude-plugin"
    plugin.mkdir(parents=True)
    (plugin / "plugin.json").write_text('{"name": "my-plugin"}\n', encoding="utf-8")
    specs = tmp_path / "specs"
    (specs / "prompts").mkdir(parents=True)
    (specs / "prompts" / "house-rules.md").write_text("Be brief.\n", encoding="utf-8")
    if workspace:
        (specs / "ws").mkdir()
    spec = specs / "cfg.atom.yaml"
    spec.write_text(
        f"prompt: p\n{'workspace: ws' if workspace else ''}\nclaude:\n{claude}{extra}",
        encoding="utf-8",
    )
    return spec


FULL = """\
  claude_md: prompts/house-rules.md
  skills: [../.claude/skills/release-notes]
  agents: [../.claude/agents/reviewer.md]
  settings: {permissions: {deny: ["Bash(rm -rf:*)"]}}
  hooks: {PreToolUse: [{matcher: Bash, hooks: [{type: command, command: ./deny.sh}]}]}
  mcp_servers: {tickets: {command: python, args: [tools/tickets_mcp.py]}}
  plugins: [../my-plugin]
"""


def test_every_key_is_parsed_its_paths_resolved_from_the_spec_file(tmp_path: Path) -> None:
    claude = load_spec(project(tmp_path, FULL)).claude
    assert claude.claude_md == "Be brief.\n"
    assert claude.claude_md_file == tmp_path / "specs" / "prompts" / "house-rules.md"
    assert claude.skills == (tmp_path / ".claude" / "skills" / "release-notes",)
    assert claude.agents == (tmp_path / ".claude" / "agents" / "reviewer.md",)
    assert claude.plugins == (tmp_path / "my-plugin",)
    assert claude.settings == {"permissions": {"deny": ["Bash(rm -rf:*)"]}}
    assert claude.hooks is not None and list(claude.hooks) == ["PreToolUse"]
    assert claude.mcp_servers == {
        "tickets": {"command": "python", "args": ["tools/tickets_mcp.py"]}
    }


def test_claude_md_is_text_unless_one_line_naming_a_md_file(tmp_path: Path) -> None:
    spec = project(tmp_path, "  claude_md: |\n    Use tabs.\n    Never push.\n")
    assert load_spec(spec).claude.claude_md == "Use tabs.\nNever push.\n"
    spec.write_text("prompt: p\nclaude: {claude_md: Always answer in French.}\n")
    options = load_spec(spec).claude
    assert (options.claude_md, options.claude_md_file) == ("Always answer in French.", None)
    assert not options.skills


def error(spec: Path) -> str:
    with pytest.raises(SpecError) as caught:
        load_spec(spec)
    return str(caught.value)


@pytest.mark.parametrize(
    ("claude", "message"),
    [
        (
            "  skills: [../.claude/skills/missing]\n",
            "'claude.skills[0]' skill '../.claude/skills/missing' does not "
            "exist (looked for {root}/.claude/skills/missing): create it, or fix the path "
            "(relative to the spec file)",
        ),
        (
            "  skills: [prompts]\n",
            "'claude.skills[0]' skill folder 'prompts' has no SKILL.md "
            "(looked for {root}/specs/prompts/SKILL.md): a skill is a folder with a SKILL.md, "
            "name the folder",
        ),
        (
            "  claude_md: prompts/missing.md\n",
            "'claude.claude_md' file 'prompts/missing.md' does not exist "
            "(looked for {root}/specs/prompts/missing.md): create it, or fix the path "
            "(relative to the spec file)",
        ),
        (
            "  agents: [../../elsewhere.md]\n",
            "'claude.agents[0]' must be a path relative to the spec file "
            "that stays inside its project ({root}), got '../../elsewhere.md'",
        ),
        (
            "  agents: [/etc/passwd]\n",
            "'claude.agents[0]' must be a path relative to the spec file that stays inside",
        ),
        (
            "  skills: [../.claude/skills/release-notes, ../.claude/skills/release-notes]\n",
            "'claude.skills[1]' is a second skill named 'release-notes' (the first is "
            "claude.skills[0]): each is installed under its name, so rename one",
        ),
        (
            "  settings: {sandbox: {enabled: false}}\n",
            "'claude.settings.sandbox' is set by pytest-atom for every run",
        ),
        (
            "  settings: {hooks: {}}\n  hooks: {PreToolUse: []}\n",
            "'claude.settings.hooks' and 'claude.hooks' both set hooks: keep them in one place",
        ),
    ],
)
def test_spec_errors_name_file_line_and_fix(tmp_path: Path, claude: str, message: str) -> None:
    text = error(project(tmp_path, claude))
    assert message.format(root=tmp_path) in text, text
    assert re.search(rf" at {tmp_path}/specs/cfg\.atom\.yaml:[45]:\d+$", text), text


def test_installing_over_the_workspaces_own_file_is_a_spec_error(tmp_path: Path) -> None:
    spec = project(tmp_path, "  claude_md: Be brief.\n")
    (spec.parent / "ws" / "CLAUDE.md").write_text("mine\n")
    assert "'claude.claude_md' would replace the workspace's own CLAUDE.md" in error(spec)


@pytest.mark.parametrize(
    "line",
    [
        "claude_md: Be brief.",
        "skills: [../.claude/skills/release-notes]",
        "agents: [../.claude/agents/reviewer.md]",
        "hooks: {PreToolUse: []}",
        "mcp_servers: {t: {command: x}}",
        "plugins: [../my-plugin]",
    ],
)
def test_bare_refuses_every_configuration_key_naming_it(tmp_path: Path, line: str) -> None:
    key = line.split(":")[0]
    text = error(project(tmp_path, f"  bare: true\n  {line}\n"))
    assert f"'claude.{key}' configures what `bare: true` does not load" in text
    assert f"remove {key} or drop `bare: true`" in text


def test_bare_allows_settings(tmp_path: Path) -> None:
    spec = project(tmp_path, "  bare: true\n  settings: {permissions: {deny: [Bash(rm:*)]}}\n")
    assert load_spec(spec).claude.settings == {"permissions": {"deny": ["Bash(rm:*)"]}}


@pytest.mark.parametrize(("kind", "tool"), [("skill_invoked", "Skill"), ("subagent_used", "Agent")])
def test_bare_refuses_checks_that_need_skill_or_agent(tmp_path: Path, kind: str, tool: str) -> None:
    spec = project(tmp_path, "  bare: true\n", extra=f"accept:\n  - {kind}: x\n")
    assert re.search(
        rf"^{kind} needs the {tool} tool, which `bare: true` does not offer .*: remove the "
        r"check or drop `bare: true` at .*cfg\.atom\.yaml:6:\d+$",
        error(spec),
    )
    steps = f"steps:\n  - id: one\n    prompt: p\n    accept: [{{{kind}: x}}]\n"
    spec.write_text("claude: {bare: true}\n" + steps, encoding="utf-8")
    assert re.search(rf"^{kind} needs the {tool} tool.* at .*cfg\.atom\.yaml:5:\d+$", error(spec))


def test_prepare_installs_into_the_attempt_and_the_run_folder_only(tmp_path: Path) -> None:
    options = load_spec(project(tmp_path, FULL)).claude
    run, cwd = tmp_path / "run", tmp_path / "run" / "attempts" / "a01"
    cwd.mkdir(parents=True)
    (cwd / ".mcp.json").write_text('{"mcpServers": {"own": {"command": "own-server"}}}')
    args = Confinement(run, SandboxOptions(), servers=process_sandbox).prepare(
        cwd, ("Bash",), options
    )

    assert (cwd / "CLAUDE.md").read_text() == "Be brief.\n"
    assert (cwd / ".claude" / "skills" / "release-notes" / "SKILL.md").read_text() == SKILL_MD
    assert (cwd / ".claude" / "agents" / "reviewer.md").is_file()
    settings = json.loads((run / SETTINGS_FILE).read_text())
    # The spec's rules, beside the read guard's (tests/agents/test_read_guard.py).
    assert settings["permissions"] == {
        "deny": ["Bash(rm -rf:*)"],
        "blockReadsOutsideWorkingDirectories": True,
    }
    assert settings["sandbox"]["enabled"] and settings["claudeMdExcludes"]
    [group] = settings["hooks"]["PreToolUse"]
    # The hook runs in the run's srt sandbox (agents.claude_code.srt), as checks do, after
    # the lock the run's hooks take in turn.
    command = shlex.split(group["hooks"][0]["command"])
    lock, hook = command[:2], command[2:]
    assert lock == [shutil.which("flock"), str(run / HOOK_LOCK)]
    assert hook[0].endswith("srt") and hook[1] == "--settings"
    assert Path(hook[2]).parent == run / "srt" and hook[-3:] == ["/bin/sh", "-c", "./deny.sh"]
    assert args[:3] == ["--settings", str(run / SETTINGS_FILE), "--strict-mcp-config"]
    assert args[3:] == [
        "--mcp-config",
        str(run / "claude-mcp.json"),
        "--plugin-dir",
        str(run / "claude-plugins" / "my-plugin"),
    ]
    servers = json.loads((run / "claude-mcp.json").read_text())["mcpServers"]
    assert servers == {
        "own": {"command": "own-server"},
        "tickets": {"command": "python", "args": ["tools/tickets_mcp.py"]},
    }
    assert (run / "claude-plugins" / "my-plugin" / ".claude-plugin" / "plugin.json").is_file()

    # The agent edits its skill: the next call is made with the spec's again.
    (cwd / ".claude" / "skills" / "release-notes" / "SKILL.md").write_text("hacked")
    Confinement(run, SandboxOptions(), servers=process_sandbox).prepare(cwd, ("Bash",), options)
    assert (cwd / ".claude" / "skills" / "release-notes" / "SKILL.md").read_text() == SKILL_MD

    # Unsandboxed, the hooks run as written.
    Confinement(run, None).prepare(cwd, ("Bash",), options)
    hooks = json.loads((run / SETTINGS_FILE).read_text())["hooks"]
    assert hooks["PreToolUse"][0]["hooks"][0]["command"] == "./deny.sh"


def test_an_mcp_server_entry_is_built_in_one_place_as_configured() -> None:
    entry = {"command": "python", "args": ["s.py"], "env": {"A": "1"}}
    built = mcp_server_entry("tickets", entry)
    assert built == entry and built is not entry and built["args"] is not entry["args"]


def test_each_piece_has_its_own_hash(tmp_path: Path) -> None:
    spec = project(tmp_path, FULL)
    hashes = config_hashes(load_spec(spec).claude)
    assert sorted(hashes) == [
        "agent reviewer",
        "claude_md",
        "hooks",
        "mcp server tickets",
        "plugin my-plugin",
        "settings",
        "skill release-notes",
    ]
    (tmp_path / ".claude" / "skills" / "release-notes" / "SKILL.md").write_text("other")
    changed = config_hashes(load_spec(spec).claude)
    assert [k for k in hashes if hashes[k] != changed[k]] == ["skill release-notes"]
    (tmp_path / "bare").mkdir()
    assert config_hashes(load_spec(project(tmp_path / "bare", "  bare: true\n")).claude) == {}


def test_staleness_names_each_changed_added_or_removed_piece(tmp_path: Path) -> None:
    spec_file = project(tmp_path, FULL)
    spec = load_spec(spec_file)
    cassette = Cassette(tmp_path / "c.yaml", [], {})
    cassette.metadata.update(stamp_hashes(spec, cassette))
    assert cassette.metadata["config_hashes"] == config_hashes(spec.claude)
    assert staleness(spec, cassette) == []

    (tmp_path / ".claude" / "skills" / "release-notes" / "SKILL.md").write_text("other")
    text = spec_file.read_text().replace("  plugins: [../my-plugin]\n", "")
    spec_file.write_text(text.replace("mcp_servers: {tickets", "mcp_servers: {tix"))
    assert config_staleness(load_spec(spec_file), cassette) == [
        "mcp server tickets removed since recording",
        "mcp server tix added since recording",
        "plugin my-plugin removed since recording",
        "skill release-notes changed since recording",
    ]
    # Recorded before any hash was stored: nothing to compare.
    assert config_staleness(load_spec(spec_file), Cassette(tmp_path / "o.yaml", [], {})) == []


def test_a_stale_configuration_refuses_the_replay_naming_the_piece_and_command(
    tmp_path: Path, claude_bin: Path
) -> None:
    spec_file = project(tmp_path, FULL)
    spec = load_spec(spec_file)
    cassette = Cassette(cassette_path(spec), [], {})
    cassette.metadata.update(stamp_hashes(spec, cassette))
    cassette.save()
    (tmp_path / ".claude" / "agents" / "reviewer.md").write_text("changed\n")
    with pytest.raises(RecordingError) as caught:
        open_model_source(load_spec(spec_file), RunSettings(), paths={}, claude_bin=claude_bin)
    assert "is stale: agent reviewer changed since recording" in str(caught.value)
    assert "re-record it with: pytest --atom" in str(caught.value)
    assert "--atom-record-mode=all" in str(caught.value)


def test_a_hooks_refusal_names_the_hook_without_its_command() -> None:
    result = "PreToolUse:Bash hook error: [bwrap --ro-bind / / -- sh -c 'x']: no curl here"
    line = tool_problem("Bash", {"command": "curl x"}, result, True, "hook")
    assert line == "Bash `curl x` refused by a hook: PreToolUse:Bash hook error: no curl here"
    line = tool_problem("Bash", {"command": "rm -rf x"}, "Permission denied.", True, "rule")
    assert line == "Bash `rm -rf x` refused by a permission rule: Permission denied."


# ----------------------------------------------------------------------- the real CLI


#: A stdio MCP server in a few lines of JSON-RPC (no SDK needed): one tool, `create`.
TICKETS_SERVER = """\
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue  # a notification
    method, result = msg["method"], {}
    if method == "initialize":
        result = {"protocolVersion": msg["params"]["protocolVersion"], "capabilities":
                  {"tools": {}}, "serverInfo": {"name": "tickets", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "create", "description": "Files a ticket.",
                             "inputSchema": {"type": "object", "properties":
                                             {"title": {"type": "string"}}}}]}
    elif method == "tools/call":
        title = msg["params"]["arguments"]["title"]
        result = {"content": [{"type": "text", "text": "filed T-1: " + title}]}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


AGENT = {"description": "review", "prompt": "Review the work.", "subagent_type": "reviewer"}
TURNS: list[dict[str, Any]] = [
    {
        "text": "Using the skill.",
        "tool_use": [{"name": "Skill", "input": {"skill": "release-notes"}}],
    },
    {"tool_use": [{"name": "Bash", "input": {"command": "rm -rf junk"}}]},
    {"tool_use": [{"name": "Bash", "input": {"command": "curl http://example.com"}}]},
    {"tool_use": [{"name": "Bash", "input": {"command": "echo notes > NOTES.md"}}]},
    {"tool_use": [{"name": "Skill", "input": {"skill": "my-plugin:hello"}}]},
    {"tool_use": [{"name": "Agent", "input": {**AGENT, "run_in_background": False}}]},
    {"text": "Reviewed: fine."},  # the subagent's answer
    {"tool_use": [{"name": "mcp__tickets__create", "input": {"title": "flaky test"}}]},
    {"text": "Done.\n\nEXIT_LOOP_NOW"},
]
SCRIPTED = """\
  allowed_tools: [Bash, Read, Write, Skill, Agent, mcp__tickets__create]
  claude_md: "House rule: say PINEAPPLE-42 first."
  skills: [../.claude/skills/release-notes]
  agents: [../.claude/agents/reviewer.md]
  plugins: [../my-plugin]
  mcp_servers: {tickets: {command: %(python)s, args: [%(server)s]}}
  settings: {permissions: {deny: ["Bash(rm -rf:*)"]}}
  hooks:
    PreToolUse:
      - matcher: Bash
        hooks: [{type: command, command: %(hook)s}]
script: script.yaml
timeout: 120
attempts: 1
max_iterations: 2
accept:
  - skill_invoked: release-notes
  - permission_denied: {name: Bash, input: rm -rf}
  - permission_denied: {name: Bash, input: curl}
  - file_exists: NOTES.md
  - skill_invoked: 'my-plugin:hello'
  - subagent_used: reviewer
  - mcp_called: {server: tickets, tool: create}
  - tool_order: [Skill, Bash, Agent, mcp__tickets__create]
  - tool_used: {name: Bash, input: '^echo ', max: 1}
  - final_message: Done
"""


def scripted(root: Path) -> Path:
    """The project with every piece of configuration in use: a skill, a plugin's skill, a
    subagent, an MCP server, a permission rule and a hook; the spec's path."""
    server = root / "specs" / "tickets_mcp.py"
    values = {"python": sys.executable, "server": server, "hook": json.dumps(HOOK)}
    spec = project(root, SCRIPTED % values)
    server.write_text(TICKETS_SERVER, encoding="utf-8")
    skill = root / "my-plugin" / "skills" / "hello" / "SKILL.md"
    skill.parent.mkdir(parents=True)
    skill.write_text("---\nname: hello\ndescription: Says hello.\n---\nSay hello.\n")
    (spec.parent / "script.yaml").write_text(yaml.safe_dump({"turns": TURNS}))
    return spec


def configured_run(folder: Path, claude_bin: Path) -> None:
    """Record the configured spec, note what its result, reports and cassette say, then
    change the skill and note how the replay is refused: facts.json, for the tests."""
    spec = load_spec(scripted(folder))
    runs = folder / "specs" / "runs"
    settings = RunSettings(record_mode="all")
    result = run_spec(spec, runs_dir=runs, claude_bin=claude_bin, settings=settings)
    facts: dict[str, Any] = {"error": result.harness_error, "passed": result.passed}
    facts["checks"] = {
        c.check.describe(): [c.passed, c.summary, c.evidence] for c in result.final.checks
    }
    facts["calls"] = [
        [call.name, call.result, call.is_error]
        for record in result.final.records
        for call in record.tool_calls
    ]
    attempt = result.final.path
    facts["inside"] = (attempt / "inside-marker").is_file()
    facts["outside"] = (attempt.parent.parent.parent / "outside-marker").exists()
    facts["plugin_copy"] = (
        result.run_dir / "claude-plugins" / "my-plugin" / "skills" / "hello"
    ).is_dir()
    facts["report"] = result.report()
    row = report_row("specs/cfg.atom.yaml::cfg", "passed", spec_view(result))
    facts["page"] = render_html([row])
    shown = CliRunner().invoke(cassette_group, ["show", str(cassette_path(spec))])
    facts["shown"] = [shown.exit_code, shown.stdout]
    recorded = Cassette.load(cassette_path(spec))
    facts["bodies"] = json.dumps([i.body for i in recorded.interactions])
    facts["hashes"] = recorded.metadata["config_hashes"]
    facts["staleness"] = staleness(spec, recorded)
    skill = folder / ".claude" / "skills" / "release-notes" / "SKILL.md"
    skill.write_text(SKILL_MD.replace("Write NOTES.md.", "Write CHANGES.md."))
    try:
        run_spec(load_spec(spec.path), runs_dir=runs, claude_bin=claude_bin)
    except RecordingError as exc:
        facts["refused"] = str(exc)
    (folder / "facts.json").write_text(json.dumps(facts), encoding="utf-8")


@pytest.fixture
def configured(tmp_path_factory: pytest.TempPathFactory, claude_bin: Path) -> dict[str, Any]:
    """What `configured_run` noted, run once per session."""
    build = partial(configured_run, claude_bin=claude_bin)
    folder = once_per_session(tmp_path_factory, "configured-run", build)
    facts: dict[str, Any] = json.loads((folder / "facts.json").read_text())
    assert facts["error"] is None, facts["report"]
    return facts


@pytest.mark.slow
def test_a_configured_run_uses_its_skill_claude_md_rule_and_confined_hook(
    configured: dict[str, Any],
) -> None:
    checks = configured["checks"]
    assert checks["skill_invoked release-notes"] == [
        True,
        "skill release-notes invoked once",
        "iteration 1 turn 1: Skill release-notes",
    ]
    assert checks["permission_denied Bash /rm -rf/"][0::2] == [
        True,
        "iteration 1 turn 2: Bash rm -rf junk (refused: rule): Permission to use Bash "
        "with command rm -rf junk has been denied.",
    ]
    curl = checks["permission_denied Bash /curl/"]
    assert curl[0] and "(refused: hook): PreToolUse:Bash hook error:" in curl[2]
    assert checks["file_exists NOTES.md"][0::2] == [True, "6 bytes\nnotes"]
    assert configured["passed"]

    # The hook ran in the attempt folder and could write there, and nowhere else.
    assert configured["inside"] and not configured["outside"]

    # Who refused what, in the failure report and the HTML report.
    report = configured["report"].splitlines()
    # (Its touch above the run folder landed in the sandbox's empty view of the project,
    # never on disk: the assertion on "outside" above.)
    assert (
        "    Bash `curl http://example.com` refused by a hook: PreToolUse:Bash hook error: "
        "curl is not allowed here"
    ) in report
    assert (
        "    Bash `rm -rf junk` refused by a permission rule: Permission to use Bash with "
        "command rm -rf junk has been denied."
    ) in report
    page = configured["page"]
    assert page.count("refused by a hook") == 1 and page.count("refused by a permission rule") == 1
    assert '<span class="call-mark mark-skill">skill release-notes</span>' in page

    # The recording, as `atom cassette show` prints it, marks the same calls.
    code, shown = configured["shown"]
    assert code == 0, shown
    assert "      tool_use Skill [skill release-notes] " in shown
    assert re.search(r"tool_result \S+ \(error\) \[refused by a permission rule\]:", shown)
    assert re.search(r"tool_result \S+ \(error\) \[refused by a hook\]:", shown)
    assert shown.rstrip().endswith("; 2 skills · 1 subagent · 1 MCP call · 2 refused")

    # CLAUDE.md's text reached the model, and the skill's text the recorded conversation.
    assert "House rule: say PINEAPPLE-42 first." in configured["bodies"]
    assert "Write NOTES.md." in configured["bodies"]
    assert "skill release-notes" in configured["hashes"]
    assert configured["staleness"] == []

    # The skill's text changes: the replay is refused, naming the skill and the command.
    assert re.search(
        r"cassette .*cfg\.yaml is stale: skill release-notes changed since recording "
        r"\(.*cfg\.atom\.yaml, claude:\): re-record it with: pytest --atom '.*cfg\.atom\.yaml::cfg' "
        r"--atom-record-mode=all",
        configured["refused"],
    ), configured["refused"]


def test_the_diff_of_the_agents_work_leaves_out_what_was_installed(tmp_path: Path) -> None:
    options = load_spec(project(tmp_path, FULL)).claude
    workspace, cwd = tmp_path / "specs" / "ws", tmp_path / "run" / "a01"
    cwd.mkdir(parents=True)
    Confinement(tmp_path / "run", SandboxOptions(), servers=process_sandbox).prepare(
        cwd, ("Bash",), options
    )
    (cwd / "notes.txt").write_text("agent's\n")
    installed = installed_paths(options)
    assert installed == [
        "CLAUDE.md",
        ".claude/skills/release-notes",
        ".claude/agents/reviewer.md",
    ]
    diff = workspace_diff(workspace, cwd, installed=installed, scrub=Scrubber().scrub)
    assert "b/notes.txt" in diff and "CLAUDE.md" not in diff and ".claude/" not in diff
    assert "CLAUDE.md" in workspace_diff(workspace, cwd, scrub=Scrubber().scrub)


@pytest.mark.slow
def test_a_plugins_skill_is_loaded_from_the_runs_copy(configured: dict[str, Any]) -> None:
    check = configured["checks"]["skill_invoked my-plugin:hello"]
    assert check[0::2] == [True, "iteration 1 turn 5: Skill my-plugin:hello"]
    assert ["Skill", "Launching skill: my-plugin:hello", False] in configured["calls"]
    assert configured["plugin_copy"]


@pytest.mark.slow
def test_a_subagent_from_claude_agents_is_the_one_delegated_to(configured: dict[str, Any]) -> None:
    check = configured["checks"]["subagent_used reviewer"]
    assert check[0::2] == [True, 'iteration 1 turn 6: Agent reviewer "review"']
    # The subagent's system prompt is the definition file's body.
    assert "You are REVIEWER-7." in configured["bodies"]


@pytest.mark.slow
def test_an_mcp_server_from_the_spec_runs_and_answers(configured: dict[str, Any]) -> None:
    assert configured["checks"]["mcp_called tickets/create"][0]
    assert ["mcp__tickets__create", "filed T-1: flaky test", False] in configured["calls"]


@pytest.mark.slow
def test_trajectory_checks_pass_on_a_real_runs_calls(configured: dict[str, Any]) -> None:
    """tool_order, tool_used with a maximum and final_message, on what the real CLI did
    (tests/checks/test_trajectory.py checks each kind, failing too, on captures of it)."""
    checks = configured["checks"]
    assert checks["tool_order Skill → Bash → Agent → mcp__tickets__create"][0]
    assert checks["tool_used Bash /^echo / exactly once"][:2] == [
        True,
        "Bash /^echo / was called once",
    ]
    assert checks["final_message /Done/"][0]
