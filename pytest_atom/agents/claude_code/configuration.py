"""The Claude Code configuration a spec tests (`claude:`), installed into one run's own files.

Everything goes where the CLI looks for a project's configuration, never the user's
(``~/.claude`` is the run's own ``CLAUDE_CONFIG_DIR``, see pytest_atom.agents.claude_code.sandbox):

- ``claude_md`` → the attempt folder's ``CLAUDE.md``;
- ``skills`` → ``.claude/skills/<folder name>/`` and ``agents`` → ``.claude/agents/<file>``
  in the attempt folder;
- ``settings`` and ``hooks`` → the run's ``--settings`` file (beside the sandbox's settings,
  in the run folder, where the agent cannot edit them); each command hook runs in the run's
  sandbox (`confined_hooks`);
- ``mcp_servers`` → the run's ``--mcp-config`` file (with the workspace's own .mcp.json
  servers), used with ``--strict-mcp-config``; recorded or replayed like the model traffic
  (`mcp_server_entry`);
- ``plugins`` → copies under the run folder's ``claude-plugins/``, each passed with
  ``--plugin-dir`` (the CLI's way to load a local plugin for one session); their hooks run
  in the run's sandbox too (`confine_plugin_hooks`).

The files are installed again before every CLI call, so an agent that edits its own skill
or CLAUDE.md is tested against the spec's configuration on its next call, as a user's is.
`config_hashes` fingerprints each piece, so a recording knows which one changed.
"""

from __future__ import annotations

import copy
import json
import shlex
import shutil
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from pytest_atom import digest
from pytest_atom.files import CACHE_DIRS, copy_ignore, copy_regular, copy_tree
from pytest_atom.spec.confinement import project_root
from pytest_atom.spec.types import ClaudeOptions

MCP_CONFIG_FILE = "claude-mcp.json"


class McpTape(Protocol):
    """Where a run's MCP traffic is recorded or replayed (`pytest_atom.replay.mcp_tape`)."""

    @property
    def mode(self) -> str: ...

    def argv(self, server: str, command: str, args: Sequence[str]) -> list[str]: ...


#: A server's command line put into the run's sandbox (agents.claude_code.srt).
Wrap = Callable[[list[str]], list[str]]
PLUGINS_DIR = "claude-plugins"
#: What a plugin folder may hold that is pytest-atom's, not the plugin's (an eval suite's).
NOT_THE_PLUGINS = (*CACHE_DIRS, ".atom")


def eval_dir_name(plugin: Path) -> str:
    """The plugin's eval suite folder: its manifest's ``experimental.evals``, else ``evals``."""
    for manifest in (plugin / ".claude-plugin" / "plugin.json", plugin / "plugin.json"):
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        named = (data.get("experimental") or {}).get("evals") if isinstance(data, dict) else None
        if isinstance(named, str) and named.strip("/"):
            return named.strip("/")
    return "evals"


def _plugin_ignore(plugin: Path) -> Any:
    """What a plugin's copy leaves out: caches, `.atom/`, and its eval suite (which the agent
    under test must not read)."""
    suite = plugin / eval_dir_name(plugin)

    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = {n for n in names if n in NOT_THE_PLUGINS}
        return skipped | {n for n in names if Path(folder, n) == suite}

    return ignore


def install(options: ClaudeOptions, cwd: Path) -> None:
    """Write the spec's CLAUDE.md, skills and subagents into the attempt folder `cwd`."""
    if options.claude_md is not None:
        (cwd / "CLAUDE.md").write_text(options.claude_md, encoding="utf-8")
    for key, folder in (("skills", "skills"), ("agents", "agents")):
        for source in getattr(options, key):
            target = cwd / ".claude" / folder / source.name
            if target.is_dir():
                shutil.rmtree(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            # Links out of the project refused, no device, FIFO or socket opened (copy_tree).
            if source.is_dir():
                copy_tree(source, target, copy_ignore, follow_within=project_root(source))
            else:
                target.unlink(missing_ok=True)  # the workspace's own, or an earlier attempt's
                copy_regular(source, target)


def installed_paths(options: ClaudeOptions) -> list[str]:
    """What `install` writes into an attempt folder, relative to it: the harness's files,
    which a diff of the agent's work leaves out."""
    paths = ["CLAUDE.md"] if options.claude_md is not None else []
    paths += [f".claude/skills/{p.name}" for p in options.skills]
    return paths + [f".claude/agents/{p.name}" for p in options.agents]


def settings(options: ClaudeOptions, wrap: Wrap | None = None) -> dict[str, Any]:
    """The spec's settings with its hooks: what the run's ``--settings`` file adds.

    Claude Code runs a hook outside its Bash sandbox, in the caller's process namespace, and
    a hook may run a script the agent wrote. With `wrap` (the run's sandbox) each command
    hook runs inside it; one marked ``unsandboxed: true`` (with its ``reason:``) runs as
    written. Both keys are pytest-atom's and never reach the CLI."""
    data: dict[str, Any] = copy.deepcopy(dict(options.settings or {}))
    if options.hooks:
        data["hooks"] = confined_hooks(options.hooks, wrap)
    return data


def confined_hooks(hooks: Mapping[str, Any], wrap: Wrap | None) -> dict[str, Any]:
    """`hooks` (Claude Code's ``hooks`` setting) with each command hook put through `wrap`:
    a shell command becomes ``sh -c COMMAND`` inside it, an exec-form one (``command`` and
    ``args``) its argv inside it. Without `wrap`, or for an ``unsandboxed`` hook, as written."""
    built = copy.deepcopy(dict(hooks))
    for groups in built.values():
        for group in groups if isinstance(groups, list) else []:
            for hook in group.get("hooks") or [] if isinstance(group, dict) else []:
                if not isinstance(hook, dict):
                    continue
                free = bool(hook.pop("unsandboxed", False))
                hook.pop("reason", None)
                if wrap is None or free or not isinstance(hook.get("command"), str):
                    continue
                if "args" in hook:
                    argv = wrap([hook["command"], *(str(a) for a in hook["args"] or [])])
                    hook["command"], hook["args"] = argv[0], argv[1:]
                else:
                    hook["command"] = shlex.join(wrap(["/bin/sh", "-c", hook["command"]]))
    return built


def mcp_server_entry(
    name: str, entry: Mapping[str, Any], tape: McpTape | None = None, wrap: Wrap | None = None
) -> dict[str, Any]:
    """The entry the CLI gets for one of the spec's MCP servers: the one place one is built.

    Without a `tape` (a scripted run) the server runs as configured; recording, behind the
    recording proxy; replaying, a stand-in answering from the cassette takes its place. A
    server that is not stdio has no command to wrap. `wrap` puts a server that runs for
    real in the run's sandbox: inside the recording proxy, which writes the tape outside it."""
    built = copy.deepcopy(dict(entry))
    if built.get("type", "stdio") != "stdio" or "command" not in built:
        return built
    if tape is None and wrap is None:
        return built
    argv = [str(built["command"]), *(str(a) for a in built.get("args") or [])]
    if wrap is not None and (tape is None or tape.mode == "record"):
        argv = wrap(argv)
    if tape is not None:
        argv = tape.argv(name, argv[0], argv[1:])
    built["command"], built["args"] = argv[0], argv[1:]
    return built


def mcp_config(
    options: ClaudeOptions,
    cwd: Path,
    tape: McpTape | None = None,
    wrap: Wrap | None = None,
    workspace_wrap: Wrap | None = None,
) -> dict[str, Any] | None:
    """The ``--mcp-config`` servers: the workspace's .mcp.json (in the sandbox, through
    `workspace_wrap`: the agent may have written it, so the paths it names open nothing),
    then the spec's (which win, recorded or replayed through `tape`, in the sandbox through
    `wrap`); None when there are none. Raises ValueError for a .mcp.json that is not JSON."""
    servers: dict[str, Any] = {}
    workspace = cwd / ".mcp.json"
    if workspace.is_file():
        data = json.loads(workspace.read_text(encoding="utf-8"))
        found = (data or {}).get("mcpServers") or {}
        servers.update(
            {name: mcp_server_entry(name, e, None, workspace_wrap) for name, e in found.items()}
        )
    for name, entry in (options.mcp_servers or {}).items():
        servers[name] = mcp_server_entry(name, entry, tape, wrap)
    return {"mcpServers": servers} if servers else None


def plugin_dirs(options: ClaudeOptions, boundary: Path, wrap: Wrap | None = None) -> list[Path]:
    """The spec's plugins, copied under the run folder (`boundary`), so nothing the session
    does reaches the user's plugin folder; with `wrap`, each copy's hooks run in it."""
    dirs = []
    for source in options.plugins:
        target = boundary / PLUGINS_DIR / source.name
        if not target.is_dir():
            copy_tree(source, target, _plugin_ignore(source), follow_within=project_root(source))
        if wrap is not None:
            confine_plugin_hooks(source, target, wrap)
        dirs.append(target)
    return dirs


def confine_plugin_hooks(source: Path, target: Path, wrap: Wrap) -> None:
    """Rewrite the hooks of the plugin copy `target` from its `source` through `wrap`:
    ``hooks/hooks.json``, and the manifest's ``hooks`` (inline, or the files it names),
    afresh each call, as each attempt has its own sandbox."""
    files = ["hooks/hooks.json"]
    for manifest in (".claude-plugin/plugin.json", "plugin.json"):
        try:
            data = json.loads((source / manifest).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        named = data.get("hooks") if isinstance(data, dict) else None
        if isinstance(named, dict):  # inline: the events, or hooks.json's shape
            inner = named.get("hooks")
            data["hooks"] = (
                {**named, "hooks": confined_hooks(inner, wrap)}
                if isinstance(inner, dict)
                else confined_hooks(named, wrap)
            )
            (target / manifest).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        else:
            files += [
                n for n in (named if isinstance(named, list) else [named]) if isinstance(n, str)
            ]
    for rel in dict.fromkeys(files):
        try:
            data = json.loads((source / rel).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("hooks"), dict):
            data["hooks"] = confined_hooks(data["hooks"], wrap)
            (target / rel).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


def cli_args(
    options: ClaudeOptions,
    cwd: Path,
    boundary: Path,
    tape: McpTape | None = None,
    wrap: Wrap | None = None,
    workspace_wrap: Wrap | None = None,
    hook_wrap: Wrap | None = None,
) -> list[str]:
    """``--mcp-config`` and ``--plugin-dir`` arguments; writes the MCP config file into the
    run folder (`boundary`). `hook_wrap`: the sandbox the plugins' hooks run in."""
    args: list[str] = []
    servers = mcp_config(options, cwd, tape, wrap, workspace_wrap)
    if servers is not None:
        path = boundary / MCP_CONFIG_FILE
        path.write_text(json.dumps(servers, indent=2) + "\n", encoding="utf-8")
        args += ["--mcp-config", str(path)]
    for folder in plugin_dirs(options, boundary, hook_wrap):
        args += ["--plugin-dir", str(folder)]
    return args


def config_hashes(options: ClaudeOptions) -> dict[str, str]:
    """One hash per piece of the configuration, named as a staleness reason names it:
    ``claude_md``, ``skill release-notes``, ``agent reviewer``, ``settings``, ``hooks``,
    ``mcp server tickets``, ``plugin my-plugin``. Empty when the spec configures nothing."""
    found: dict[str, str] = {}
    if options.claude_md is not None:
        found["claude_md"] = digest.of_text(options.claude_md)
    for label, paths in (("skill", options.skills), ("agent", options.agents)):
        for path in paths:
            name = path.stem if label == "agent" else path.name
            found[f"{label} {name}"] = digest.files_hash(path, CACHE_DIRS)
    for path in options.plugins:
        # Its eval suite aside: editing a grader must not make every case's cassette stale.
        found[f"plugin {path.name}"] = digest.files_hash(path, NOT_THE_PLUGINS, eval_dir_name(path))
    for key in ("settings", "hooks"):
        value = getattr(options, key)
        if value:
            found[key] = digest.of_value(value, compact=True)
    for name, entry in (options.mcp_servers or {}).items():
        found[f"mcp server {name}"] = digest.of_value(entry, compact=True)
    return found


#: The workspace's own Claude Code configuration, besides what the spec's `claude:` installs.
WORKSPACE_CONFIG = (".claude", "CLAUDE.md", ".mcp.json")


def workspace_config_hashes(workspace: Path) -> dict[str, str]:
    """One hash per file of the workspace's own configuration (`WORKSPACE_CONFIG`), by its
    workspace-relative path: stored in a cassette, so a replay can name a drift the
    workspace caused instead of blaming Claude Code."""
    found: dict[str, str] = {}
    for name in WORKSPACE_CONFIG:
        top = workspace / name
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for file in files:
            rel = file.relative_to(workspace).as_posix()
            if not set(rel.split("/")) & set(CACHE_DIRS):
                found[rel] = digest.short(file.read_bytes().replace(b"\r\n", b"\n"))
    return found
