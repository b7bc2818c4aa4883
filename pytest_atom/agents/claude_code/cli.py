"""The Claude Code CLI this release supports: its pinned version and where to find it.

This module is the one place the version is pinned. Cassettes record the CLI version
they were made with, because a new CLI changes its system prompt and tool definitions.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from pytest_atom.errors import ClaudeNotFoundError
from pytest_atom.paths import npm_install_command, user_cache

CLAUDE_CODE_VERSION = "2.1.337"
NPM_PACKAGE = "@anthropic-ai/claude-code"
#: The Node.js major version the pinned CLI's package asks for (node >=22.0.0). npm only
#: warns below it, and the CLI runs on Node 20 too, so `atom doctor` warns, never fails.
NODE_MAJOR_NEEDED = 22


def cache_dir(version: str = CLAUDE_CODE_VERSION) -> Path:
    """The per-user npm prefix a CLI version is installed into (by `atom setup`)."""
    return user_cache() / "claude-code" / version


def cached_claude(version: str = CLAUDE_CODE_VERSION) -> Path:
    """Where `atom setup` puts the `claude` of `version` (it may not be there yet)."""
    return cache_dir(version) / "node_modules" / ".bin" / "claude"


def install_command(version: str = CLAUDE_CODE_VERSION) -> list[str]:
    return npm_install_command(cache_dir(version), NPM_PACKAGE, version)


def find_claude() -> Path:
    """Locate `claude`: ``$ATOM_CLAUDE_BIN``, then the pinned per-user install (so a newer
    global CLI does not silently change a cassette's requests), then ``PATH``."""
    return find_pinned(
        "ATOM_CLAUDE_BIN",
        cached_claude(),
        "claude",
        lambda why: ClaudeNotFoundError(
            f"{why or 'The Claude Code CLI `claude` was not found'}. {_how_to_install()}"
        ),
    )


def find_pinned(
    variable: str, cached: Path, program: str, missing: Callable[[str], Exception]
) -> Path:
    """``$variable``, then the pinned per-user install `cached`, then `program` on ``PATH``;
    raises `missing` of why not (empty: found nowhere)."""
    explicit = os.environ.get(variable)
    if explicit:
        if Path(explicit).is_file():
            return Path(explicit)
        raise missing(f"{variable}={explicit} does not exist")
    if cached.exists():
        return cached
    on_path = shutil.which(program)
    if on_path:
        return Path(on_path)
    raise missing("")


def npm_version(binary: Path, package: str) -> str | None:
    """The version in the package.json beside an npm install's `binary` of `package`."""
    manifest = Path(binary).resolve().parent.parent / "package.json"
    try:
        data = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    version = (
        data.get("version") if isinstance(data, dict) and data.get("name") == package else None
    )
    return version if isinstance(version, str) else None


def claude_version(binary: Path) -> str:
    """The version of `binary` (``2.1.197``), offline: an npm install's package.json, else
    ``--version`` (a process start, ~0.2 s)."""
    found = npm_version(binary, NPM_PACKAGE)
    if found is not None:
        return found
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    return out.stdout.split()[0] if out.stdout.split() else "unknown"


def _how_to_install() -> str:
    return (
        f"Install the pinned version {CLAUDE_CODE_VERSION} with "
        f"`atom setup` (into {cache_dir()}), or `npm install -g {NPM_PACKAGE}@{CLAUDE_CODE_VERSION}`, "
        "or point ATOM_CLAUDE_BIN at a `claude` binary."
    )
