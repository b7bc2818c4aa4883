"""The `atom` command: a person's entry point to the same specs and runtime as the plugin."""

from __future__ import annotations

import subprocess
from pathlib import Path

import click

from atom_cli.cassette_cmd import cassette
from atom_cli.loop_cmd import loop
from atom_cli.project_cmd import doctor, init
from atom_cli.run_cmd import run
from atom_cli.tools_cmd import tool, tools
from pytest_atom.claude_code import (
    CLAUDE_CODE_VERSION,
    ClaudeNotFoundError,
    cache_dir,
    claude_version,
    find_claude,
    install_command,
)
from pytest_atom.spec import SPEC_SUFFIX


class AtomGroup(click.Group):
    """Subcommands, plus the seed's classic forms: `atom "task"`, bare `atom`, `atom x.atom.yaml`.

    A subcommand name or a spec path is never taken as task text: only arguments that are
    neither go to the classic loop.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args:
            args = ["loop"]
        elif args[0] in self.commands or args[0] in ("--help", "-h", "--version"):
            pass
        elif args[0].endswith(SPEC_SUFFIX) or Path(args[0]).is_dir():
            args = ["run", *args]
        else:
            args = ["loop", *args]
        return super().parse_args(ctx, args)


@click.group(cls=AtomGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="pytest-atom")
def main() -> None:
    """Run Claude Code atoms and test them with specs.

    \b
    atom "task text"        the classic atom loop in this folder (writes USER_PROMPT.md)
    atom                    the classic loop on an existing USER_PROMPT.md
    atom run SPEC...        run specs with live progress (same code path as pytest --atom)
    """


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


main.add_command(cassette)
main.add_command(doctor)
main.add_command(init)
main.add_command(loop)
main.add_command(run)
main.add_command(tool)
main.add_command(tools)
