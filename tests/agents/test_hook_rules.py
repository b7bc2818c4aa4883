"""Where a hook runs: each of the spec's command hooks in the run's srt sandbox, one marked
``unsandboxed: true`` (with its reason, named by `atom validate` and `atom cassette check`)
as written, and a hook in the workspace's own settings refused before the CLI starts, as
Claude Code would run it outside every sandbox. No Claude Code starts here; the runs through
the real CLI are tests/agents/test_hook_chains.py and tests/agents/test_configuration.py."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from atom_cli.main import main
from pytest_atom.agents.claude_code.sandbox import HOOK_LOCK, SETTINGS_FILE, Confinement
from pytest_atom.agents.claude_code.srt import process_sandbox
from pytest_atom.errors import SandboxUnavailableError, SpecError, WorkspaceError
from pytest_atom.spec.types import ClaudeOptions, SandboxOptions
from pytest_atom.spec_loader.load import load_spec

HOOKS_SPEC = """\
name: lint
prompt: p
claude:
  hooks:
    PreToolUse:
      - matcher: Bash
        hooks:
          - {type: command, command: ./no_curl.sh}
          - {type: command, command: ./lint-server.sh, unsandboxed: true, reason: talks to the team's lint server}
          - {type: command, command: node, args: [guard.js]}
"""


def written_hooks(tmp_path: Path, spec_text: str = HOOKS_SPEC) -> list[dict[str, object]]:
    """The spec's PreToolUse hooks as the run's --settings file gives them to the CLI."""
    spec = tmp_path / "lint.atom.yaml"
    spec.write_text(spec_text, encoding="utf-8")
    run, cwd = tmp_path / "run", tmp_path / "run" / "attempts" / "a01"
    cwd.mkdir(parents=True)
    confinement = Confinement(run, SandboxOptions(), servers=process_sandbox)
    confinement.prepare(cwd, ("Bash",), load_spec(spec).claude)
    settings = json.loads((run / SETTINGS_FILE).read_text(encoding="utf-8"))
    hooks: list[dict[str, object]] = settings["hooks"]["PreToolUse"][0]["hooks"]
    return hooks


def in_turn(argv: list[str], run: Path) -> list[str]:
    """`argv` after the lock a run's hooks take in turn (their srt's share mount points)."""
    assert Path(argv[0]).name == "flock" and argv[1] == str(run / HOOK_LOCK)
    return argv[2:]


def test_each_command_hook_runs_in_srt_and_an_unsandboxed_one_as_written(
    tmp_path: Path,
) -> None:
    shell, free, exec_form = written_hooks(tmp_path)
    argv = in_turn(shlex.split(str(shell["command"])), tmp_path / "run")
    assert Path(argv[0]).name == "srt" and argv[1] == "--settings"
    assert Path(argv[2]).parent == tmp_path / "run" / "srt"
    assert argv[-3:] == ["/bin/sh", "-c", "./no_curl.sh"]
    # pytest-atom's own keys never reach the CLI, which refuses settings it does not know.
    assert free == {"type": "command", "command": "./lint-server.sh"}
    # An exec-form hook (command and args) is its argv inside srt.
    args = exec_form["args"]
    assert isinstance(args, list) and args[-2:] == ["node", "guard.js"]
    assert Path(in_turn([str(exec_form["command"]), *args], tmp_path / "run")[0]).name == "srt"


def test_a_hook_in_a_session_without_a_process_sandbox_is_refused(tmp_path: Path) -> None:
    """A confinement with the sandbox on but no process sandbox named would start the hook
    as the CLI does, outside it: refused rather than run so by omission."""
    run, cwd = tmp_path / "run", tmp_path / "run" / "attempts" / "a01"
    cwd.mkdir(parents=True)
    hooks = {"Stop": [{"hooks": [{"type": "command", "command": "./x.sh"}]}]}
    with pytest.raises(SandboxUnavailableError, match="names no process sandbox"):
        Confinement(run, SandboxOptions()).prepare(cwd, ("Bash",), ClaudeOptions(hooks=hooks))
    Confinement(run, None).prepare(cwd, ("Bash",), ClaudeOptions(hooks=hooks))  # sandbox: false
    settings = json.loads((run / SETTINGS_FILE).read_text(encoding="utf-8"))
    assert settings["hooks"] == hooks


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "{type: command, command: ./x.sh, unsandboxed: true}",
            r"'claude\.hooks\.PreToolUse\[0\]\.hooks\[0\]\.unsandboxed' runs the hook outside "
            r"the run's sandbox, .*add `reason:` saying why .*, or remove `unsandboxed: true` "
            r"at .*lint\.atom\.yaml:8:",
        ),
        (
            "{type: command, command: ./x.sh, reason: fast}",
            r"'claude\.hooks\.PreToolUse\[0\]\.hooks\[0\]\.reason' gives a reason for leaving "
            r"the sandbox but the hook asks for none: add `unsandboxed: true`, or remove "
            r"`reason:` at .*lint\.atom\.yaml:8:",
        ),
        (
            "{type: command, command: ./x.sh, unsandboxed: yes please, reason: r}",
            r"'claude\.hooks\.PreToolUse\[0\]\.hooks\[0\]\.unsandboxed' must be true or false, "
            r"got 'yes please' at .*lint\.atom\.yaml:8:",
        ),
    ],
)
def test_a_hooks_way_out_needs_its_reason(tmp_path: Path, entry: str, message: str) -> None:
    spec = tmp_path / "lint.atom.yaml"
    spec.write_text(
        "name: lint\nprompt: p\nclaude:\n  hooks:\n    PreToolUse:\n      - matcher: Bash\n"
        f"        hooks:\n          - {entry}\n",
        encoding="utf-8",
    )
    with pytest.raises(SpecError, match=message):
        load_spec(spec)


def test_validate_and_cassette_check_name_each_unsandboxed_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "lint.atom.yaml").write_text(HOOKS_SPEC, encoding="utf-8")
    named = (
        "unsandboxed: hook claude.hooks.PreToolUse[0].hooks[1] `./lint-server.sh`, because: "
        "talks to the team's lint server"
    )
    validated = CliRunner().invoke(main, ["validate", "specs"])
    assert validated.exit_code == 0, validated.output
    assert f"specs/lint.atom.yaml::lint\n  {named}\n" in validated.output
    assert "no_curl" not in validated.output  # a confined hook is not named
    as_json = CliRunner().invoke(main, ["validate", "--json", "specs"])
    (entry,) = json.loads(as_json.output)
    assert entry["unsandboxed"] == [
        {
            "describe": "hook claude.hooks.PreToolUse[0].hooks[1] `./lint-server.sh`",
            "line": None,
            "reason": "talks to the team's lint server",
        }
    ]
    checked = CliRunner().invoke(main, ["cassette", "check", "specs"])
    assert f"specs/lint.atom.yaml::lint: note: {named}\n" in checked.output


@pytest.mark.parametrize("name", ["settings.json", "settings.local.json"])
def test_a_hook_in_the_workspaces_own_settings_is_refused(tmp_path: Path, name: str) -> None:
    """Claude Code reads the workspace's settings itself and runs their hooks outside every
    sandbox; whatever put one there (the fixture, a set-up, an earlier step), the next CLI
    call is refused before it starts, naming the file, the line and where hooks go."""
    run, cwd = tmp_path / "run", tmp_path / "run" / "attempts" / "a01"
    (cwd / ".claude").mkdir(parents=True)
    hooks = {"Stop": [{"hooks": [{"type": "command", "command": "./x.sh"}]}]}
    (cwd / ".claude" / name).write_text(
        json.dumps({"env": {"A": "1"}, "hooks": hooks}, indent=2), encoding="utf-8"
    )
    confinement = Confinement(run, SandboxOptions(), servers=process_sandbox)
    with pytest.raises(WorkspaceError) as caught:
        confinement.prepare(cwd, ("Bash",))
    assert str(caught.value).startswith(
        f".claude/{name}:5 in the workspace declares hooks, which Claude Code would run "
        "outside the run's sandbox"
    )
    assert "move them to the spec's `claude: hooks:`" in str(caught.value)
    # Its other settings are welcome; with `sandbox: false` its hooks run as Claude Code runs them.
    (cwd / ".claude" / name).write_text(json.dumps({"env": {"A": "1"}}), encoding="utf-8")
    assert confinement.prepare(cwd, ("Bash",))[0] == "--settings"
    (cwd / ".claude" / name).write_text(json.dumps({"hooks": hooks}), encoding="utf-8")
    assert Confinement(run, None).prepare(cwd, ("Bash",))[0] == "--settings"


def test_a_plugins_hooks_run_in_srt_for_the_attempt_at_hand(tmp_path: Path) -> None:
    """A plugin's hooks (``hooks/hooks.json``, or inline in its manifest) are Claude Code's
    children as the spec's are: its copy in the run folder names them inside srt, rewritten
    for each attempt's own sandbox; the plugin's own folder is left as it is."""
    plugin = tmp_path / "guard"
    (plugin / ".claude-plugin").mkdir(parents=True)
    inline = {"Stop": [{"hooks": [{"type": "command", "command": "./stop.sh"}]}]}
    (plugin / ".claude-plugin" / "plugin.json").write_text(
        json.dumps({"name": "guard", "hooks": inline}), encoding="utf-8"
    )
    (plugin / "hooks").mkdir()
    hooks = {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./g"}]}]}
    (plugin / "hooks" / "hooks.json").write_text(json.dumps({"hooks": hooks}), encoding="utf-8")
    run = tmp_path / "run"
    confinement = Confinement(run, SandboxOptions(), servers=process_sandbox)
    copy = run / "claude-plugins" / "guard"
    settings_files = []
    for number in (1, 2):
        cwd = run / "attempts" / f"a0{number}"
        cwd.mkdir(parents=True)
        confinement.prepare(cwd, ("Bash",), ClaudeOptions(plugins=(plugin,)))
        written = json.loads((copy / "hooks" / "hooks.json").read_text(encoding="utf-8"))
        argv = in_turn(shlex.split(written["hooks"]["PreToolUse"][0]["hooks"][0]["command"]), run)
        assert Path(argv[0]).name == "srt" and argv[-3:] == ["/bin/sh", "-c", "./g"]
        srt_settings = json.loads(Path(argv[2]).read_text(encoding="utf-8"))
        assert str(cwd) in srt_settings["filesystem"]["allowWrite"]
        settings_files.append(argv[2])
        manifest = json.loads((copy / ".claude-plugin" / "plugin.json").read_text())
        stop = in_turn(shlex.split(manifest["hooks"]["Stop"][0]["hooks"][0]["command"]), run)
        assert Path(stop[0]).name == "srt" and stop[-1] == "./stop.sh"
    assert settings_files[0] != settings_files[1]
    assert json.loads((plugin / "hooks" / "hooks.json").read_text())["hooks"] == hooks


SKILL_WITH_HOOKS = """\
---
name: x
description: x
hooks:
  PreToolUse:
    - matcher: Bash
      hooks: [{type: command, command: ./x.sh}]
---
Run it.
"""


@pytest.mark.parametrize(
    ("rel", "where"),
    [
        (".claude/skills/x/SKILL.md", ".claude/skills/x/SKILL.md in the workspace"),
        (".claude/agents/x.md", ".claude/agents/x.md in the workspace"),
        ("plugin:skills/x/SKILL.md", "skills/x/SKILL.md in plugin guard"),
    ],
)
def test_a_hook_in_a_skills_or_subagents_frontmatter_is_refused(
    tmp_path: Path, rel: str, where: str
) -> None:
    """Skills and subagents declare hooks in their frontmatter, which Claude Code runs as it
    runs the workspace's settings hooks: outside the sandbox. Refused the same way."""
    run, cwd = tmp_path / "run", tmp_path / "run" / "attempts" / "a01"
    cwd.mkdir(parents=True)
    plugin = tmp_path / "guard"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name": "guard"}')
    path = plugin / rel.removeprefix("plugin:") if rel.startswith("plugin:") else cwd / rel
    path.parent.mkdir(parents=True)
    path.write_text(SKILL_WITH_HOOKS, encoding="utf-8")
    confinement = Confinement(run, SandboxOptions(), servers=process_sandbox)
    with pytest.raises(WorkspaceError, match=f"^{re.escape(where)} declares hooks in its front"):
        confinement.prepare(cwd, ("Bash",), ClaudeOptions(plugins=(plugin,)))
    path.write_text(SKILL_WITH_HOOKS.replace("hooks:", "tags:"), encoding="utf-8")
    confinement.prepare(cwd, ("Bash",), ClaudeOptions(plugins=(plugin,)))
