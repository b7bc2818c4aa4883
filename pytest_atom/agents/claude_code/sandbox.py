"""What a spec's agent session sees and what it may touch.

**Isolation.** A non-bare Claude Code gathers context by walking up from its working folder:
CLAUDE.md, CLAUDE.local.md, .claude/CLAUDE.md and .claude/rules in every folder up to ``/``;
.mcp.json servers likewise; skills, agents and commands up to the git root it finds (by
looking for ``.git`` itself, whatever ``GIT_CEILING_DIRECTORIES`` says); and, since 2.1.330,
.claude/settings.local.json at that git root. Run folders live in the user's repository
(``.atom/runs``), so all of it would leak into the session. Three settings stop the walk at
the run folder, measured on 2.1.197 and 2.1.330:

- ``claudeMdExcludes`` names the memory files of every folder above the working folder;
- an empty ``.git`` folder in the run folder makes it the git root the CLI stops at (git
  itself never looks there: the run folder is its ceiling);
- ``--strict-mcp-config``, with the workspace's own .mcp.json passed as ``--mcp-config``.

The workspace's own CLAUDE.md, .claude/settings.json, skills and .mcp.json apply; the
user's ``~/.claude`` is replaced by the run's ``CLAUDE_CONFIG_DIR``.

**Confinement.** Claude Code's own sandbox (``sandbox.enabled``, bubblewrap on Linux,
Seatbelt on macOS) runs every Bash command so that it writes only in the working folder
(and the sandbox's own ``$TMPDIR``) and reaches no network but the spec's domains, through
the sandbox's proxy. ``allowUnsandboxedCommands: false`` takes away the model's way out,
and ``failIfUnavailable`` makes a broken sandbox an error instead of a silent fallback. The
file tools are not sandboxed; they follow the permission rules, so blanket Edit and Write
grants are narrowed to the attempt folder: a write elsewhere would need a permission that
``claude -p`` refuses. Replayed cassettes run their tool calls through the same sandbox.

What a run executes outside the CLI's own sandbox (set-up, checks, oracles, and the MCP
servers and hooks the CLI starts) gets the same rules, applied by the sandbox runtime
(`srt`), with a process namespace and ``/proc`` of its own. A hook in the workspace's own
settings would run outside it, so a run refuses one (`refuse_workspace_hooks`).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import yaml

from pytest_atom.agents.claude_code import configuration, readguard
from pytest_atom.environment import tmpdir_for
from pytest_atom.errors import SandboxUnavailableError, WorkspaceError
from pytest_atom.spec.types import ClaudeOptions, SandboxOptions

if TYPE_CHECKING:
    from pytest_atom.agents.claude_code.configuration import McpTape

#: The Linux programs Claude Code's sandbox needs (macOS has Seatbelt built in).
LINUX_TOOLS = {"bwrap": "bubblewrap", "socat": "socat"}
INSTALL_HINT = "apt-get install bubblewrap socat"
#: Tools whose permission rules take paths: their blanket grants are narrowed to the workspace.
FILE_EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit"})
#: Memory files the CLI loads from every folder above its working folder.
_MEMORY_FILES = ("CLAUDE.md", "CLAUDE.local.md", ".claude/CLAUDE.md", ".claude/rules/**")
SETTINGS_FILE = "claude-settings.json"
_GLOB_CHARS = set("*?[]{}()!+@")


def require_tools() -> None:
    """Raise SandboxUnavailableError unless Claude Code's sandbox can start on this machine."""
    if sys.platform == "darwin":
        return
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailableError(
            f"Claude Code's sandbox runs on Linux and macOS, not on {sys.platform}: "
            "set `sandbox: false` in the spec to run its agent unsandboxed"
        )
    missing = [tool for tool in LINUX_TOOLS if shutil.which(tool) is None]
    if missing:
        names = " and ".join(f"{LINUX_TOOLS[t]} ({t})" for t in missing)
        raise SandboxUnavailableError(
            f"Claude Code's sandbox needs bubblewrap and socat on Linux, and {names} "
            f"{'is' if len(missing) == 1 else 'are'} not on PATH: install them "
            f"(`{INSTALL_HINT}` on Debian and Ubuntu), or set `sandbox: false` in the spec "
            "to run its agent unsandboxed"
        )


class Wraps(Protocol):
    """A command line's way into a sandbox (agents.claude_code.srt.ProcessSandbox)."""

    def wrap(self, argv: Sequence[str]) -> list[str]: ...


#: The sandbox for a process of the run (`srt.process_sandbox`); None where turned off.
ProcessSandboxes = Callable[["Confinement", Path, Mapping[str, str], Sequence[Path]], Wraps | None]


@dataclass(frozen=True)
class Confinement:
    """Isolation at `boundary` (the run folder) and, unless `sandbox` is None, the sandbox."""

    boundary: Path
    sandbox: SandboxOptions | None  # None: isolation only, no sandbox
    #: Where the spec's MCP servers are recorded or replayed from; None: they run as configured.
    mcp: McpTape | None = None
    #: The sandbox MCP servers the CLI starts run in: Claude Code runs them outside its own
    #: sandbox, and the agent may have written them; None: they run as configured.
    servers: ProcessSandboxes | None = None
    #: Without a sandbox, still keep the file tools in the session's folder: the reflector
    #: and the planner read an attempt the agent wrote, where a link may lead anywhere.
    file_tools_inside: bool = False

    def prepare(
        self,
        cwd: Path,
        allowed: Sequence[str] = ("Bash",),
        config: ClaudeOptions | None = None,
        *,
        env: Mapping[str, str] | None = None,
        cli_version: str | None = None,
    ) -> list[str]:
        """CLI arguments for a session in `cwd`; writes the settings file and the git marker,
        and installs the spec's Claude Code configuration (`config`). The settings go to a
        file, not inline: the CLI names it in its system prompt, and a run path is normalized
        where an inline JSON's name is its hash."""
        config = config or ClaudeOptions()
        self.boundary.mkdir(parents=True, exist_ok=True)
        (self.boundary / ".git").mkdir(exist_ok=True)
        entries = self.sandbox.write if self.sandbox else ()
        for entry, path in zip(entries, self.write_paths(cwd), strict=True):
            if not Path(entry).expanduser().is_absolute():
                # The sandbox can only open existing paths; a relative one is the run's own.
                path.mkdir(parents=True, exist_ok=True)
        configuration.install(config, cwd)
        settings = self.boundary / SETTINGS_FILE
        if self.sandbox is not None:
            refuse_workspace_hooks(cwd, config.plugins)
        hooked = bool(config.hooks or config.plugins)
        hook_wrap = self._process_wrap(cwd, env, always=True) if hooked else None
        hook_wrap = hook_wrap and _one_at_a_time(hook_wrap, self.boundary / HOOK_LOCK)
        spec_settings = configuration.settings(config, hook_wrap)
        own = self.settings(cwd, allowed, env=env, cli_version=cli_version)
        data = {**spec_settings, **own}
        if "permissions" in spec_settings and "permissions" in own:  # the spec's rules stay
            data["permissions"] = {**spec_settings["permissions"], **own["permissions"]}
        settings.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        args = ["--settings", str(settings), "--strict-mcp-config"]
        servers = bool(config.mcp_servers) or (cwd / ".mcp.json").is_file()
        wrap = self._process_wrap(cwd, env) if servers else None
        if config.mcp_servers or config.plugins or (wrap and (cwd / ".mcp.json").is_file()):
            agents = self._process_wrap(cwd, env, named=False) if servers else None
            return args + configuration.cli_args(
                config, cwd, self.boundary, self.mcp, wrap, agents, hook_wrap
            )
        if (cwd / ".mcp.json").is_file():
            args += ["--mcp-config", str(cwd / ".mcp.json")]
        return args

    def _process_wrap(
        self,
        cwd: Path,
        env: Mapping[str, str] | None,
        *,
        always: bool = False,
        named: bool = True,
    ) -> Callable[[list[str]], list[str]] | None:
        """How a process the CLI starts in `cwd` (an MCP server, a hook) enters the run's
        sandbox; None without one. `always`: with the sandbox on, even with no environment
        (ours then); SandboxUnavailableError where the confinement names no `servers`.
        `named`: the absolute paths a command line names outside the run folder are
        readable to it (the spec's; never where the agent may have written the line)."""
        if self.sandbox is None:
            return None
        servers = self.servers
        if always and servers is None:
            # A hook never runs outside the sandbox by omission (the run's factory names srt).
            raise SandboxUnavailableError(
                "this session's confinement names no process sandbox (`servers`) to run "
                "the spec's hooks in: build it with agents.claude_code.srt.process_sandbox"
            )
        if servers is None or (env is None and not always):
            return None
        boundary, environment = (
            self.boundary.resolve(),
            dict(env if env is not None else os.environ),
        )

        def wrap(argv: list[str]) -> list[str]:
            # The files the spec names for its server outside the run folder (a script beside
            # the spec) are the spec's, which the agent cannot write: readable by the server.
            paths = [Path(a) for a in argv if named and os.path.isabs(a) and os.path.exists(a)]
            outside = [p for p in paths if not p.resolve().is_relative_to(boundary)]
            sandbox = servers(self, cwd, environment, outside)
            return argv if sandbox is None else sandbox.wrap(argv)

        return wrap

    def settings(
        self,
        cwd: Path,
        allowed: Sequence[str] = ("Bash",),
        *,
        env: Mapping[str, str] | None = None,
        cli_version: str | None = None,
    ) -> dict[str, Any]:
        """The ``--settings`` JSON: memory files above `cwd` excluded, the sandbox if any.
        Sandboxed commands run without asking only when the spec allows Bash; the agent
        reads only what `readguard` allows (`env`'s toolchains stay readable)."""
        data: dict[str, Any] = {"claudeMdExcludes": _memory_excludes(cwd)}
        if self.file_tools_inside and readguard.guards_reads(cli_version):
            data["permissions"] = {"blockReadsOutsideWorkingDirectories": True}
        if self.sandbox is not None:
            writable = self.write_paths(cwd)
            data["sandbox"] = {
                "enabled": True,
                "failIfUnavailable": True,
                "autoAllowBashIfSandboxed": "Bash" in allowed,
                "allowUnsandboxedCommands": False,
                "network": {"allowedDomains": list(self.sandbox.network)},
                "filesystem": {"allowWrite": [str(p) for p in writable]},
            }
            if readguard.guards_reads(cli_version):
                # The run folder last: the normalizer drops the toolchains after it.
                run = self.boundary.resolve()
                readable = [p for p in writable if not p.is_relative_to(run)]
                tmp = Path((env if env is not None else os.environ).get("TMPDIR") or "/tmp")
                if self.sandbox.network:
                    # The sandbox's proxy is reached through sockets in the CLI's temp
                    # folder, named afresh each session: readable when a domain is allowed.
                    readable += list(dict.fromkeys([tmp, tmp.resolve()]))
                # A deep run's short temp folder in /tmp, after the run folder (machine detail).
                short = tmpdir_for(self.boundary / "tmp")
                own = [short] if tmp == short != self.boundary / "tmp" else []
                guard = readguard.read_settings(
                    [*readable, run, *own], env, home=Path.home(), protected=[run]
                )
                data["permissions"] = guard["permissions"]
                data["sandbox"]["filesystem"].update(guard["sandbox"]["filesystem"])
        return data

    def write_paths(self, cwd: Path) -> list[Path]:
        """The spec's extra writable paths, absolute (relative ones are under `cwd`, made by
        `prepare`; others must exist, as the sandbox cannot open a missing path)."""
        if self.sandbox is None:
            return []
        return [
            Path(os.path.normpath(cwd / Path(entry).expanduser())) for entry in self.sandbox.write
        ]

    def allowed_tools(self, allowed: Sequence[str], cwd: Path) -> list[str]:
        """`allowed` with blanket file-edit grants narrowed to `cwd` and the extra paths:
        ``Write`` grants writes anywhere, ``Write(//<cwd>/**)`` only in the attempt folder."""
        if self.sandbox is None:
            return list(allowed)
        scopes = [f"/{cwd}/**"] + [
            form for p in self.write_paths(cwd) for form in (f"/{p}", f"/{p}/**")
        ]
        narrowed: list[str] = []
        for rule in allowed:
            narrowed += [f"{rule}({s})" for s in scopes] if rule in FILE_EDIT_TOOLS else [rule]
        return narrowed


#: The lock a run's hooks take in turn, in its run folder (Linux). Each hook's srt makes
#: empty mount points for protected names (``.gitconfig``, ...) in its writable folders and
#: deletes them as it ends; Claude Code runs a tool call's matching hooks at once, and a
#: second srt binds the first's and fails once they go ("bwrap: Can't get type of source").
HOOK_LOCK = "hooks.lock"


def _one_at_a_time(
    wrap: Callable[[list[str]], list[str]], lock: Path
) -> Callable[[list[str]], list[str]]:
    """`wrap`, its command run under `flock` on `lock` where there is one (util-linux)."""
    flock = shutil.which("flock") if sys.platform.startswith("linux") else None
    if flock is None:
        return wrap
    return lambda argv: [flock, str(lock), *wrap(argv)]


#: The workspace's own settings files, whose hooks Claude Code would run itself.
WORKSPACE_SETTINGS = (".claude/settings.json", ".claude/settings.local.json")


def refuse_workspace_hooks(cwd: Path, plugins: Sequence[Path] = ()) -> None:
    """Raise WorkspaceError for a hook Claude Code would take from the workspace's own files:
    its settings (`WORKSPACE_SETTINGS`), or the frontmatter of a skill or subagent in its
    ``.claude/`` or in one of `plugins`.

    Claude Code runs those hooks itself, outside the run's sandbox, and reads them afresh at
    each start: nothing the harness passes can confine them. The spec's ``claude: hooks:``
    runs each hook confined, so that is where they go."""
    for rel in WORKSPACE_SETTINGS:
        path = cwd / rel
        try:
            text = path.read_text(encoding="utf-8")
            data = json.loads(text)
        except (OSError, ValueError):
            continue  # no such file; one the CLI cannot read applies no hook either
        if isinstance(data, dict) and data.get("hooks"):
            line = next((n for n, row in enumerate(text.splitlines(), 1) if '"hooks"' in row), 1)
            _refuse(f"{rel}:{line} in the workspace declares hooks")
    folders = [(cwd / ".claude", cwd, "the workspace")]
    folders += [(plugin, plugin, f"plugin {plugin.name}") for plugin in plugins]
    for folder, base, owner in folders:
        definitions = [*folder.glob("skills/*/SKILL.md"), *folder.glob("agents/*.md")]
        for path in sorted(definitions):
            if _frontmatter_hooks(path):
                where = path.relative_to(base).as_posix()
                _refuse(f"{where} in {owner} declares hooks in its frontmatter")


def _refuse(what: str) -> None:
    raise WorkspaceError(
        f"{what}, which Claude Code would run outside the run's sandbox (with the caller's "
        "processes and files in reach): move them to the spec's `claude: hooks:`, where each "
        "runs confined (`unsandboxed: true` with a `reason:` for one that must not be)"
    )


def _frontmatter_hooks(path: Path) -> bool:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError):
        return False
    if not text.startswith("---"):
        return False
    head = text[3:].split("\n---", 1)[0]
    try:
        data = yaml.safe_load(head)
    except yaml.YAMLError:
        return False  # the CLI cannot read it either
    return isinstance(data, dict) and bool(data.get("hooks"))


def _memory_excludes(cwd: Path) -> list[str]:
    """claudeMdExcludes patterns for the memory files of every folder above `cwd`. The CLI
    matches them with picomatch, where a glob character cannot be escaped: it becomes ``?``."""
    folders: list[Path] = []
    for start in dict.fromkeys((cwd, cwd.resolve())):
        folders += [p for p in start.parents if p != Path(p.anchor)]
    patterns = []
    for folder in dict.fromkeys(folders):
        base = "".join("?" if c in _GLOB_CHARS else c for c in folder.as_posix())
        patterns += [f"{base}/{name}" for name in _MEMORY_FILES]
    return patterns
