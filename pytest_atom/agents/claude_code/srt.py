"""Anthropic's sandbox runtime (`srt`): the agent's confinement for what runs outside the CLI.

Claude Code confines its own Bash commands; a spec run also executes code the CLI never sees:
`setup:` commands, `accept: command:` checks (which import what the agent wrote), an
``oracle:`` script, MCP servers. They run under ``@anthropic-ai/sandbox-runtime``, the
library Claude Code's sandbox is built on, with the rules the agent has
(`Confinement.settings`): writes only in the attempt folder, the spec's ``sandbox.write``
paths and the run's temp folder; network only to ``sandbox.network``; reads only where the
read guard allows; the run's environment, built from parts.

Found like the CLI (`cli.find_pinned`). On Linux srt needs bubblewrap, socat and ripgrep;
where ``rg`` is not on PATH the pinned Claude Code serves as one (its binary is ripgrep when
called as ``rg``).
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_atom import digest
from pytest_atom.agents.claude_code import readguard
from pytest_atom.agents.claude_code.cli import cached_claude, find_pinned
from pytest_atom.agents.claude_code.sandbox import INSTALL_HINT, Confinement, require_tools
from pytest_atom.errors import SandboxUnavailableError
from pytest_atom.paths import npm_install_command, user_cache

SRT_VERSION = "0.0.83"
NPM_PACKAGE = "@anthropic-ai/sandbox-runtime"
#: Where a run's srt settings files go, inside its run folder (out of every workspace).
SETTINGS_DIR = "srt"
#: The ripgrep `atom setup` links beside `srt` (Claude Code's binary, which is one as ``rg``).
RG_LINK = "rg-claude"
_NOT_FOUND = (
    "The sandbox runtime `srt`, which confines a spec's set-up, checks, oracle and MCP "
    "servers, was not found"
)


def cache_dir(version: str = SRT_VERSION) -> Path:
    return user_cache() / "sandbox-runtime" / version


def cached_srt(version: str = SRT_VERSION) -> Path:
    """Where `atom setup` puts `srt` (it may not be there yet)."""
    return cache_dir(version) / "node_modules" / ".bin" / "srt"


def install_command(version: str = SRT_VERSION) -> list[str]:
    return npm_install_command(cache_dir(version), NPM_PACKAGE, version)


def how_to_install() -> str:
    return (
        f"install the pinned sandbox runtime {SRT_VERSION} with `atom setup` (into "
        f"{cache_dir()}), or `npm install -g {NPM_PACKAGE}@{SRT_VERSION}`, or point "
        f"ATOM_SRT_BIN at an `srt`; on Linux it needs bubblewrap and socat (`{INSTALL_HINT}` "
        "on Debian and Ubuntu). Or set `sandbox: false` in the spec to run it unsandboxed"
    )


def find_srt() -> Path:
    """Locate `srt`: ``$ATOM_SRT_BIN``, then the pinned per-user install, then ``PATH``."""
    return find_pinned(
        "ATOM_SRT_BIN",
        cached_srt(),
        "srt",
        lambda why: SandboxUnavailableError(f"{why or _NOT_FOUND}: {how_to_install()}"),
    )


def require_srt() -> Path:
    """`srt` and the programs it needs, or SandboxUnavailableError saying how to get them."""
    binary = find_srt()
    require_tools()
    return binary


@dataclass(frozen=True)
class ProcessSandbox:
    """One settings file and the `srt` that applies it: wraps a command line."""

    binary: Path
    settings: Path
    #: What srt itself replaces in the command's environment, put back (its TMPDIR).
    restore: Mapping[str, str]

    def wrap(self, argv: Sequence[str]) -> list[str]:
        keep = [f"{name}={value}" for name, value in self.restore.items()]
        return [
            str(self.binary),
            "--settings",
            str(self.settings),
            "--",
            "/usr/bin/env",
            *keep,
            *argv,
        ]


def process_sandbox(
    confinement: Confinement, cwd: Path, env: Mapping[str, str], readable: Sequence[Path] = ()
) -> ProcessSandbox | None:
    """The sandbox for a process of the run in `cwd` with environment `env`; None when the
    spec turned the sandbox off. `readable`: more paths it may read (an MCP server's
    script, which the spec names). SandboxUnavailableError when srt cannot run here."""
    if confinement.sandbox is None:
        return None
    binary = require_srt()
    data = settings(confinement, cwd, env, binary, readable)
    folder = confinement.boundary / SETTINGS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(data, indent=2) + "\n"
    path = folder / f"{digest.hex_of(text.encode())[:16]}.json"
    if not path.exists():
        path.write_text(text, encoding="utf-8")
    restore = {name: env[name] for name in ("TMPDIR", "TMP", "TEMP") if env.get(name)}
    return ProcessSandbox(binary, path, restore)


def settings(
    confinement: Confinement,
    cwd: Path,
    env: Mapping[str, str],
    binary: Path,
    readable: Sequence[Path] = (),
) -> dict[str, Any]:
    """srt's settings from the agent's (`Confinement.settings`): the same network domains and
    read guard; writes in `cwd`, the spec's extra paths and the run's temp folder."""
    agent = confinement.settings(cwd, env=env)["sandbox"]
    fs = agent["filesystem"]
    tmp = env.get("TMPDIR")
    writable = list(dict.fromkeys([str(cwd), *fs["allowWrite"], *([tmp] if tmp else [])]))
    opened = [*fs.get("allowRead", []), *_own_files(binary), *(str(p) for p in readable)]
    if "denyRead" in fs:
        opened = _readable(opened, writable)
    filesystem: dict[str, Any] = {
        "denyRead": fs.get("denyRead", []),
        "allowRead": opened,
        "allowWrite": writable,
        "denyWrite": [],
    }
    data: dict[str, Any] = {
        "network": {"allowedDomains": agent["network"]["allowedDomains"], "deniedDomains": []},
        "filesystem": filesystem,
    }
    ripgrep = _ripgrep(env, binary)
    if ripgrep is not None:
        data["ripgrep"] = ripgrep
    return data


def _readable(readable: Sequence[str], writable: Sequence[str]) -> list[str]:
    """`readable` with each folder that holds a writable path (but the system's) replaced by
    its other entries, as they are now.

    srt 0.0.83 binds a folder re-opened inside a denied one read-only after the writable
    folders in it, so the attempt folder would end up read-only ("bwrap: Can't create file
    at …/.gitconfig"); a writable path is readable anyway."""
    system = set(readguard.SYSTEM_FOLDERS)
    targets = [Path(w) for w in writable]
    out: list[str] = []

    def add(folder: Path) -> None:
        if folder in targets:
            return  # writable, so readable
        if not any(folder in t.parents for t in targets):
            out.append(str(folder))
            return
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            return
        for entry in entries:
            add(entry)

    for entry in dict.fromkeys(readable):
        if entry in system:
            out.append(entry)
        else:
            add(Path(entry))
    return list(dict.fromkeys(out))


def _own_files(binary: Path) -> list[str]:
    """What srt runs inside the sandbox from its own package (its seccomp helper, the JVM
    proxy agent): readable, or every command fails before it starts."""
    vendor = binary.resolve().parent.parent / "vendor"
    return [str(vendor)] if vendor.is_dir() else []


def _ripgrep(env: Mapping[str, str], binary: Path) -> dict[str, str] | None:
    """srt's ripgrep: None for the ``rg`` on PATH; else Claude Code's binary called as
    ``rg``: the link `atom setup` puts beside `srt`, or the pinned install."""
    if not sys.platform.startswith("linux"):
        return None  # Seatbelt takes patterns: srt runs no ripgrep on macOS
    if shutil.which("rg", path=env.get("PATH")) or shutil.which("rg"):
        return None
    for candidate in (binary.parent / RG_LINK, cached_claude()):
        if candidate.exists():
            return {"command": str(candidate.resolve()), "argv0": "rg"}
    raise SandboxUnavailableError(
        "The sandbox runtime needs ripgrep (`rg`) on Linux, and neither `rg` nor Claude Code "
        "(whose binary serves as one) was found: `apt-get install ripgrep`, or `atom setup`"
    )


def link_ripgrep(binary: Path, claude: Path) -> Path:
    """Point the ``rg`` beside `binary` (srt) at the Claude Code binary `claude` (`_ripgrep`)."""
    link = binary.parent / RG_LINK
    link.unlink(missing_ok=True)
    link.symlink_to(claude.resolve())
    return link
