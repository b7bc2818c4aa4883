"""The classic atom loop (`pytest_atom.loop`): `atom "task"` or bare `atom` in a folder."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path

import click

from pytest_atom.agents.claude_code.cli import find_claude
from pytest_atom.agents.claude_code.session import AgentSession
from pytest_atom.errors import AtomError
from pytest_atom.loop import AtomRuntime
from pytest_atom.prompts import PromptLoader
from pytest_atom.replay.recording import AUTH_VARIABLES
from pytest_atom.run.factory import claude_code_agent
from pytest_atom.spec.types import ClaudeOptions


@click.command("loop")
@click.argument("task", nargs=-1)
@click.option("--toolname", help="prompt composition: atom_foo = ATOM.md + FOO.md, foo = FOO.md.")
@click.option("--max-iterations", type=click.IntRange(min=1), default=25, show_default=True)
def loop(task: tuple[str, ...], toolname: str | None, max_iterations: int) -> None:
    """Iterate Claude Code on USER_PROMPT.md in this folder until it prints EXIT_LOOP_NOW.

    `atom "task text"` writes USER_PROMPT.md first; bare `atom` uses the existing one.
    Running `atom` again in the same folder continues the same conversation.
    """
    prompt_file = Path("USER_PROMPT.md")
    if task:
        prompt_file.write_text(" ".join(task), encoding="utf-8")
        click.echo("📝 Created USER_PROMPT.md with provided prompt\n")
    if not prompt_file.exists():
        click.echo("❌ USER_PROMPT.md not found in current directory")
        click.echo("Usage: atom [prompt text]")
        click.echo("   or: create USER_PROMPT.md manually and run: atom")
        sys.exit(1)
    cwd = Path.cwd()
    click.echo(f"🔬 Atom: {cwd.name}\n")
    try:
        system_prompt = PromptLoader().load(toolname)
        # The user's own environment and auth; tools by allow-list (the CLI refuses to skip
        # permissions as root).
        runner = claude_code_agent(
            "executor", AgentSession(find_claude(), options=ClaudeOptions(bare=False))
        )
    except AtomError as exc:  # no prompt, no `claude`
        raise click.ClickException(str(exc)) from None
    runtime = AtomRuntime(
        system_prompt,
        cwd,
        max_iterations=max_iterations,
        verbose=True,
        runner=runner,
        # One conversation per folder, as `claude -c` gives.
        session_id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"pytest-atom:loop:{cwd.resolve()}")),
    )
    result = runtime.run(prompt_file.read_text(encoding="utf-8"))
    if runtime.records and runtime.records[-1].needs_login:
        raise click.ClickException(
            f"Claude Code could not authenticate ({runtime.records[-1].output.strip()}): "
            "log in once by running `claude` and typing /login, or set one of "
            f"{', '.join(AUTH_VARIABLES)}; then run atom again"
        )
    if result["success"]:
        click.echo(f"\n✅ Complete after {result['iterations']} iterations")
        return
    click.echo(f"\n⚠️  {result['reason']}")
    if result.get("error"):
        click.echo(result["error"], err=True)
    sys.exit(1)
