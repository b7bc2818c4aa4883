"""The `atom` command: a person's entry point to the same specs and runtime as the plugin."""

from __future__ import annotations

import subprocess

import click

from pytest_atom.claude_code import (
    CLAUDE_CODE_VERSION,
    ClaudeNotFoundError,
    cache_dir,
    claude_version,
    find_claude,
    install_command,
)


@click.group()
@click.version_option(package_name="pytest-atom")
def main() -> None:
    """Run Claude Code atoms and test them with specs (see `pytest --atom`)."""


@main.command()
def setup() -> None:
    """Install the pinned Claude Code CLI into a per-user cache, unless it is already found.

    The runner looks in $ATOM_CLAUDE_BIN, then this cache, then PATH.
    """
    try:
        found = find_claude()
        version = claude_version(found)
    except ClaudeNotFoundError:
        found, version = None, None
    if found and version == CLAUDE_CODE_VERSION:
        click.echo(f"Claude Code {version} found at {found}")
        return
    if found:
        click.echo(
            f"Found Claude Code {version} at {found}; installing the pinned {CLAUDE_CODE_VERSION}."
        )
    click.echo(f"Installing Claude Code {CLAUDE_CODE_VERSION} into {cache_dir()} ...")
    try:
        subprocess.run(install_command(), check=True)
    except FileNotFoundError:
        raise click.ClickException("npm was not found: install Node.js (with npm) first.") from None
    except subprocess.CalledProcessError as exc:
        raise click.ClickException(f"npm failed with exit code {exc.returncode}.") from None
    binary = find_claude()
    click.echo(f"Claude Code {claude_version(binary)} installed at {binary}")
