"""`atom tools` lists a project's tools; `atom tool NAME [ARGS]...` runs one."""

from __future__ import annotations

import difflib
from pathlib import Path

import click

from atom_cli.common import config_option
from pytest_atom.errors import ConfigError
from pytest_atom.run.tools import describe, discover_tools, run_tool
from pytest_atom.settings.config import AtomConfig, load_config


def _load(config_path: Path | None) -> AtomConfig:
    try:
        return load_config(config_path)
    except ConfigError as exc:
        raise click.ClickException(str(exc)) from None


def _where(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


def _searched(config: AtomConfig) -> str:
    return ", ".join(_where(d, config.root) for d in config.tools_paths) or "(no tools_dirs)"


@click.command()
@config_option
def tools(config_path: Path | None) -> None:
    """List the tools found in the configured tools dirs."""
    config = _load(config_path)
    found = discover_tools(config)
    if not found:
        click.echo(f"no tools found in: {_searched(config)}")
        return
    rows = [(name, _where(entry, config.root), describe(entry)) for name, entry in found.items()]
    name_width = max(len(r[0]) for r in rows)
    path_width = max(len(r[1]) for r in rows)
    for name, where, about in rows:
        click.echo(f"{name:<{name_width}}  {where:<{path_width}}  {about}".rstrip())


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@config_option
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Kill the tool after this many seconds (default: the config's timeout, 120).",
)
@click.argument("name")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.pass_context
def tool(
    ctx: click.Context,
    config_path: Path | None,
    timeout: float | None,
    name: str,
    args: tuple[str, ...],
) -> None:
    """Run the tool NAME with ARGS and exit with its exit code (124: timed out).

    Everything after NAME goes to the tool, options and --help included.
    """
    config = _load(config_path)
    found = discover_tools(config)
    entry = found.get(name)
    if entry is None:
        if not found:
            raise click.ClickException(
                f"unknown tool {name!r}: no tools found in: {_searched(config)}"
            )
        close = difflib.get_close_matches(name, list(found), n=1, cutoff=0.5)
        hint = f" — did you mean {close[0]!r}?" if close else ""
        raise click.ClickException(f"unknown tool {name!r}{hint} (available: {', '.join(found)})")
    code = run_tool(entry, args, timeout=config.timeout if timeout is None else timeout)
    ctx.exit(code)
