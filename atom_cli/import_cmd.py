"""`atom import SESSION.jsonl`: a Claude Code session that already ran, as a scripted spec."""

from __future__ import annotations

import shlex
from pathlib import Path

import click


@click.command("import")
@click.argument("session", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--ref",
    default=None,
    help="A git commit, branch or tag of the session's project: the workspace starts there "
    "(default: the session's starting commit, when git can tell it).",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("specs"),
    show_default=True,
    help="Folder the spec is written to (its script and the session's results beside it).",
)
@click.option(
    "--workspace",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="The folder the spec's workspace is (default: the folder the session ran in). A "
    "session of pytest-atom's own run needs it: its folder is the run's, which retention "
    "deletes; the error names the run's spec and its workspace.",
)
@click.option("--name", default=None, help="The spec's name (default: the prompt's first words).")
@click.option(
    "--prompt",
    default=None,
    help="The prompt, where the file does not carry it (a stream-json log) or to replace it.",
)
def import_(
    session: Path,
    ref: str | None,
    out: Path,
    workspace: Path | None,
    name: str | None,
    prompt: str | None,
) -> None:
    """Turn a session into a spec: a transcript (~/.claude/projects/<project>/<id>.jsonl, or
    under $CLAUDE_CONFIG_DIR/projects/) or a stream-json log (claude -p --output-format
    stream-json --verbose).

    \b
    The spec gets the session's first prompt, its workspace at --ref (or the session's
    starting commit), a script of the main agent's turns and tool calls, and starter checks
    to edit: the files the session wrote exist, its last test command exits as it did, and
    every tool call gives the result the session saw (tool_results, which names a divergent
    call). Subagents and server tools are refused.

    \b
    A transcript of one of pytest-atom's own runs (.atom/runs/<run>/claude-config/projects/)
    gives the spec's own task, without the harness's wrapper (ATOM.md). Its workspace, the
    run's folder, is refused: retention deletes it, and it holds the session's end state.
    The error names the spec the run came from and its workspace, for --workspace.
    """
    from pytest_atom.errors import SessionError
    from pytest_atom.importing import read_session, write_spec
    from pytest_atom.paths import display_path
    from pytest_atom.words import plural

    try:
        read = read_session(session)
        done = write_spec(read, out, name=name, ref=ref, prompt=prompt, workspace=workspace)
    except SessionError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(
        f"Imported {session.name} ({read.format}): {plural(done.turns, 'turn')}, "
        f"{plural(done.calls, 'tool call')}"
    )
    for path in (done.spec, done.script, done.results):
        click.echo(f"  wrote {display_path(path)}")
    for note in done.notes:
        click.echo(f"  note: {note}")
    spec = shlex.quote(display_path(done.spec))
    click.echo(f"Run it (scripted, offline): pytest --atom {spec}")
    click.echo(f"Record its cassette:        pytest --atom {spec} --atom-record-mode=once")
