"""The `atom` command: a person's entry point to the same specs and runtime as the plugin."""

from __future__ import annotations

import difflib
import importlib
import shlex
import subprocess
from pathlib import Path

import click

from pytest_atom.agents.claude_code.cli import (
    CLAUDE_CODE_VERSION,
    cache_dir,
    cached_claude,
    claude_version,
    find_claude,
    install_command,
    npm_version,
)
from pytest_atom.errors import ClaudeNotFoundError

#: Subcommands: name, module:attribute (in atom_cli), and the one-line help the group lists.
#: They are imported only when run, so `atom --help` stays fast.
_COMMANDS = """\
run        run_cmd:run                Run specs with live progress (as pytest --atom does).
loop       loop_cmd:loop              The classic atom loop; also `atom "task text"`.
validate   validate_cmd:validate      Check specs; run their scripts and oracles offline.
import     import_cmd:import_         Turn a Claude Code session (transcript or stream-json log) into a spec.
init       project_cmd:init           Scaffold a project with a scripted example spec.
doctor     project_cmd:doctor         Check the Claude Code CLI, credentials and gateway.
cassette   cassette_cmd:cassette      Show cassettes as transcripts; check them for secrets; refresh them.
baseline   baseline_cmd:baseline      Save a run's results as the baseline --atom-baseline compares with.
results    results_cmd:results        Combine the results of a CI matrix's shards into one report and gate.
bisect     bisect_cmd:bisect_         First Claude Code release changing a replay.
cache      cache_cmd:cache            List and prune the set-up cache (what specs' setup: made).
tools      tools_cmd:tools            List the project's tools.
trials     trials_cmd:trials          How many repeats detect a drop in pass rate (p to q).
view       view_cmd:view              Open the HTML report of the last run.
history    history_cmd:history        The run history: pass rates, trends, flaky items; import CI results.
diff       diff_cmd:diff              Compare two runs of the history store, item by item.
rescore    rescore_cmd:rescore        Judge a stored run's attempts again with today's criteria.
tool       tools_cmd:tool             Run a project tool with its timeout.
label      label_cmd:label_           Label a run's attempt as a sample for calibrating a judge.
calibrate  calibrate_cmd:calibrate    How far each criterion's judge agrees with the labelled samples (kappa).
"""
LAZY_COMMANDS = {
    name: (f"atom_cli.{module}", attribute, about.strip())
    for name, target, about in (line.split(maxsplit=2) for line in _COMMANDS.splitlines())
    for module, attribute in [target.split(":")]
}
#: A group's subcommands kept in modules of their own, added when the group loads: commands
#: never import each other (an import-linter contract holds it).
SUBCOMMANDS = {"history": [("atom_cli.history_why_cmd", "why")]}


class AtomGroup(click.Group):
    """Subcommands, plus the classic forms: `atom "task"`, bare `atom`, `atom x.atom.yaml`.

    The classic loop starts an agent that writes USER_PROMPT.md into this folder, so it runs
    only for what is clearly a prompt: quoted text (one argument holding a space), or loop
    options first (`atom --max-iterations 3 "task"`). A subcommand name or a spec path is
    never task text, and bare words (`atom valdiate`, `atom bench 0.9 0.5`) are refused
    with the commands and a "did you mean": a typo must never start a paid session.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *LAZY_COMMANDS})  # a loaded one is in both

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in LAZY_COMMANDS and name not in self.commands:
            module, attribute, _ = LAZY_COMMANDS[name]
            command = getattr(importlib.import_module(module), attribute)
            for sub_module, sub_attribute in SUBCOMMANDS.get(name, []):
                command.add_command(getattr(importlib.import_module(sub_module), sub_attribute))
            self.add_command(command, name)
        return self.commands.get(name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, LAZY_COMMANDS[name][2]) for name in sorted(LAZY_COMMANDS)]
        rows += [
            (name, cmd.get_short_help_str(70))
            for name, cmd in sorted(self.commands.items())
            if name not in LAZY_COMMANDS
        ]
        with formatter.section("Commands"):
            formatter.write_dl(sorted(rows))

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        from pytest_atom.paths import SPEC_SUFFIX

        if not args:
            args = ["loop"]
        elif args[0] in self.list_commands(ctx) or args[0] in ("--help", "-h", "--version"):
            pass
        elif args[0].endswith(SPEC_SUFFIX) or Path(args[0]).is_dir():
            args = ["run", *args]
        elif is_prompt(args[0]):
            args = ["loop", *args]
        else:
            raise click.UsageError(not_a_command(args, self.list_commands(ctx)), ctx)
        return super().parse_args(ctx, args)


def is_prompt(first: str) -> bool:
    """Task text for the classic loop: quoted words (a space inside one argument) or loop
    options first; a bare word is taken for a mistyped command, never for a task."""
    return first.startswith("-") or len(first.split()) > 1


def not_a_command(args: list[str], commands: list[str]) -> str:
    """Why bare words were refused, the command they were likely meant to be, and how to
    give the classic loop a task after all."""
    close = difflib.get_close_matches(args[0], commands, n=1)
    lines = [f"No such command {args[0]!r}." + (f" Did you mean {close[0]!r}?" if close else "")]
    lines.append(f"Commands: {', '.join(commands)}.")
    task = " ".join(args)
    lines.append(
        f"To give the classic loop this task, quote it: atom {shlex.quote(task)}"
        if len(args) > 1
        else f"To give the classic loop this one-word task: atom loop {shlex.quote(task)}"
    )
    return "\n".join(lines)


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
@click.option(
    "--version",
    "other",
    metavar="VERSION",
    help="install this Claude Code version beside the pinned one (to replay or refresh "
    "cassettes with it through ATOM_CLAUDE_BIN).",
)
def setup(other: str | None) -> None:
    """Install the pinned Claude Code CLI and sandbox runtime into a per-user cache, unless
    they are already found.

    The runner looks in $ATOM_CLAUDE_BIN, then this cache, then PATH; the sandbox runtime
    (`srt`, which confines set-up, checks, oracles and MCP servers) in $ATOM_SRT_BIN, then
    this cache, then PATH.
    """
    if other:
        if not cached_claude(other).exists():
            _npm_install(other)
        click.echo(f"Claude Code {other} at {cached_claude(other)}")
        return
    try:
        found = find_claude()
        version = claude_version(found)
    except ClaudeNotFoundError:
        found, version = None, None
    if found and version == CLAUDE_CODE_VERSION:
        click.echo(f"Claude Code {version} found at {found}")
    else:
        if found:
            click.echo(
                f"Found Claude Code {version} at {found}; installing the pinned "
                f"{CLAUDE_CODE_VERSION}."
            )
        _npm_install(CLAUDE_CODE_VERSION)
        binary = find_claude()
        click.echo(f"Claude Code {claude_version(binary)} installed at {binary}")
    _setup_srt()
    _sandbox_note()


def _setup_srt() -> None:
    """The pinned sandbox runtime, installed unless the one found is that version."""
    from pytest_atom.agents.claude_code import srt
    from pytest_atom.errors import SandboxUnavailableError

    try:
        found: Path | None = srt.find_srt()
    except SandboxUnavailableError:
        found = None
    if found is not None and npm_version(found, srt.NPM_PACKAGE) == srt.SRT_VERSION:
        click.echo(f"Sandbox runtime (srt) {srt.SRT_VERSION} found at {found}")
    else:
        what = f"the sandbox runtime (srt) {srt.SRT_VERSION}"
        _run_npm(srt.install_command(), f"Installing {what} into {srt.cache_dir()} ...")
        found = srt.cached_srt()
        click.echo(f"Sandbox runtime (srt) {srt.SRT_VERSION} installed at {found}")
    if found.parent == srt.cached_srt().parent:  # the install atom setup owns
        # srt needs ripgrep on Linux: the pinned Claude Code's binary is one (as `rg`).
        srt.link_ripgrep(found, cached_claude() if cached_claude().exists() else find_claude())


def _npm_install(version: str) -> None:
    _run_npm(
        install_command(version), f"Installing Claude Code {version} into {cache_dir(version)} ..."
    )


def _run_npm(command: list[str], note: str) -> None:
    click.echo(note)
    try:
        subprocess.run(command, check=True)
    except FileNotFoundError:
        raise click.ClickException("npm was not found: install Node.js (with npm) first.") from None
    except subprocess.CalledProcessError as exc:
        raise click.ClickException(f"npm failed with exit code {exc.returncode}.") from None


def _sandbox_note() -> None:
    """Say what Claude Code's sandbox (on by default for specs) still needs; never fail setup."""
    from pytest_atom.agents.claude_code.sandbox import require_tools
    from pytest_atom.errors import SandboxUnavailableError

    try:
        require_tools()
    except SandboxUnavailableError as exc:
        click.echo(f"warning: {exc}".replace("in the spec", "in each spec"), err=True)
