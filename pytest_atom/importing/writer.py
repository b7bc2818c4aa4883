"""A read `Session` written out as a scripted spec: spec, script, the session's tool results.

What `atom import` writes under its ``--out`` folder:

- ``<name>.atom.yaml``: the session's first prompt; the workspace (the session's folder at the
  ``--ref`` given, else at the session's starting commit when git can tell it, else the
  folder's files as they are, else none); starter checks for the user to edit: the files the
  session wrote exist, the last test command it ran exits as it did, and every tool call gives
  the result the session saw (``tool_results``);
- ``scripts/<name>.yaml``: the main agent's turns with their tool calls, so the spec records
  and replays like any scripted spec. A text-only turn ends a ``claude -p`` call, as it did in
  the session; the last turn says ``EXIT_LOOP_NOW`` and ``max_iterations`` counts the calls;
- ``sessions/<name>.results.yaml``: the results the session's calls gave, which the
  ``tool_results`` check compares a run with.

Paths of the session's folder in tool inputs become relative ones, so a replay works in its
own workspace and never touches the folder the session ran in.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_atom import yamldoc
from pytest_atom.checks.kinds.tool_results import WRITE_TOOLS, normal_result
from pytest_atom.diffs import project_git
from pytest_atom.errors import SessionError
from pytest_atom.importing.own_runs import not_the_agent, own_run, refusal
from pytest_atom.importing.stream_json import Session, SessionCall
from pytest_atom.paths import SPEC_SUFFIX
from pytest_atom.replay.transcript import tool_label
from pytest_atom.spec.confinement import project_root
from pytest_atom.words import plural

EXIT_SIGNAL = "EXIT_LOOP_NOW"
#: A Bash command that runs a test suite: its last run becomes a starter `command:` check.
TEST_COMMAND = re.compile(
    r"\b(?:pytest|py\.test|unittest|tox|nox|(?:npm|yarn|pnpm|bun)(?: run)? test|cargo test|"
    r"go test|make (?:test|check)|jest|vitest|mocha|rspec|phpunit|ctest|mvn test|"
    r"gradlew? test|just test|dotnet test|mix test)\b"
)
_EXIT_CODE = re.compile(r"\AExit code (\d+)")
_NAME = re.compile(r"[^a-z0-9]+")


@dataclass
class Imported:
    """What `write_spec` wrote, and what a person should know about it."""

    spec: Path
    script: Path
    results: Path
    name: str
    turns: int
    calls: int
    notes: list[str] = field(default_factory=list)


def write_spec(
    session: Session,
    out: Path,
    *,
    name: str | None = None,
    ref: str | None = None,
    prompt: str | None = None,
    workspace: Path | None = None,
) -> Imported:
    """Write `session` as a scripted spec under `out`, overwriting nothing; `workspace`
    replaces the session's folder as the spec's workspace."""
    out = out.resolve()
    name = _spec_name(name or default_name(session))
    spec_path, script_path, results_path = _new_paths(out, name)
    notes: list[str] = list(session.notes)
    cwd = session.cwd.rstrip("/") if session.cwd else None
    turns = _script_turns(session, cwd, notes)
    folder = _folder(session, cwd, out, workspace)
    text = _prompt(session, prompt, notes)
    accept = _checks(session, cwd, results_path.relative_to(out).as_posix())
    iterations = sum(1 for t in turns if not t.get("tool_use"))
    source = _source(session)
    spec: dict[str, Any] = {
        "name": name,
        "description": f"Imported from {source}.",
        "prompt": text,
        "workspace": _workspace(session, cwd, folder, out, ref, notes, given=bool(workspace)),
        "script": script_path.relative_to(out).as_posix(),
        "max_iterations": max(iterations, 1),
        "accept": accept,
    }
    header = [
        f"# Imported by `atom import` from {source}.",
        "# The checks under accept: are a start: edit them to say what the task must achieve.",
        *(f"# Note: {n}" for n in notes),
    ]
    script_header = [
        f"# The main agent's turns of {session.path.name}, as `atom import` read them.",
        "# A text-only turn ends a `claude -p` call; the last one says EXIT_LOOP_NOW.",
    ]
    results, results_header = _results(session, cwd)
    for path, data, head in (
        (spec_path, spec, header),
        (script_path, {"turns": turns}, script_header),
        (results_path, results, results_header),
    ):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(head) + "\n" + yamldoc.dump(data, block=_block), encoding="utf-8")
    return Imported(
        spec_path,
        script_path,
        results_path,
        name,
        len(turns),
        len(session.calls),
        notes,
    )


def _spec_name(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", name):
        raise SessionError(
            f"--name {name!r} is no spec name: use letters, digits, '_', '.' and '-', "
            "starting with a letter or digit"
        )
    return name


def _prompt(session: Session, prompt: str | None, notes: list[str]) -> str:
    """The spec's prompt (``--prompt``, else the session's); `notes` say what it leaves out."""
    text = prompt or session.prompt
    if text is None:
        text = "TODO: the prompt that started this session (a stream-json log does not carry it)"
        notes.append(
            "the prompt is a placeholder: a stream-json log does not carry it (pass --prompt)"
        )
    if session.thinking:
        notes.append(f"{session.thinking} thinking blocks left out: a script has no thinking")
    later = session.later_messages
    if session.wrapper is not None:  # one of pytest-atom's own runs
        wrapper = session.wrapper.strip()
        again = sum(1 for _, message in later if message == wrapper)
        later = [(line, message) for line, message in later if message != wrapper]
        notes.append(
            "the harness's prompt wrapper (its system prompt, ATOM.md) left out: the prompt "
            "is the spec's own task"
            + (f"; {plural(again, 'later iteration')} heard the wrapper alone" if again else "")
        )
    for line, message in later:
        first = message.strip().splitlines()[0][:100]
        notes.append(
            f"line {line}: a later user message is not replayed (the runtime continues the "
            f"session itself): {first!r}"
        )
    return text


def _source(session: Session) -> str:
    """``session.jsonl (transcript, Claude Code 2.1.331, session 1234)``."""
    source = f"{session.path.name} ({session.format}"
    source += f", Claude Code {session.agent_version}" if session.agent_version else ""
    return source + (f", session {session.session_id})" if session.session_id else ")")


def _new_paths(out: Path, name: str) -> tuple[Path, Path, Path]:
    """Where the spec, its script and the session's tool results go: none may exist yet."""
    paths = (
        out / f"{name}{SPEC_SUFFIX}",
        out / "scripts" / f"{name}.yaml",
        out / "sessions" / f"{name}.results.yaml",
    )
    for path in paths:
        if path.exists():
            raise SessionError(f"{path} already exists: pass another --name, or remove it first")
    return paths


def default_name(session: Session) -> str:
    """``fix-the-failing-test`` from the prompt's first words, else ``session-<id>``."""
    words = _NAME.sub("-", (session.prompt or "").lower()).strip("-").split("-")
    name = "-".join(w for w in words[:5] if w)
    return name or f"session-{(session.session_id or 'imported')[:8]}"


def relative(value: Any, cwd: str | None) -> Any:
    """`value` with the session's folder `cwd` as ``./``-relative paths, through any nesting."""
    if cwd is None:
        return value
    if isinstance(value, str):
        return "." if value == cwd else value.replace(cwd + "/", "./").replace(cwd, ".")
    if isinstance(value, list):
        return [relative(v, cwd) for v in value]
    if isinstance(value, dict):
        return {k: relative(v, cwd) for k, v in value.items()}
    return value


def _script_turns(session: Session, cwd: str | None, notes: list[str]) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for turn in session.turns:
        entry: dict[str, Any] = {}
        if turn.text:
            entry["text"] = turn.text
        if turn.calls:
            entry["tool_use"] = [
                {"name": c.name, "input": relative(c.input, cwd)} for c in turn.calls
            ]
        if entry:
            turns.append(entry)
    if not turns:
        raise SessionError(
            f"{session.path}: the session has no assistant turn with text or a tool call: "
            "nothing to script"
        )
    last = turns[-1]
    if last.get("tool_use"):
        notes.append("the session ended on a tool call: a closing turn says EXIT_LOOP_NOW")
        turns.append({"text": f"The imported session ended here.\n\n{EXIT_SIGNAL}"})
    elif EXIT_SIGNAL not in last.get("text", ""):
        last["text"] = f"{last.get('text', '').rstrip()}\n\n{EXIT_SIGNAL}"
    return turns


def _result_entry(number: int, call: SessionCall, cwd: str | None) -> dict[str, Any]:
    folders = [cwd] if cwd else []
    return {
        "call": number,
        "tool": call.name,
        "input": tool_label(call.name, relative(call.input, cwd)),
        "result": None if call.result is None else normal_result(call.result, folders),
        "is_error": call.is_error,
    }


def _checks(session: Session, cwd: str | None, results: str) -> list[dict[str, Any]]:
    accept: list[dict[str, Any]] = []
    written: list[str] = []
    for call in session.calls:
        path = call.input.get("file_path") or call.input.get("notebook_path")
        if call.name not in WRITE_TOOLS or call.is_error or not isinstance(path, str):
            continue
        rel = os.path.normpath(relative(path, cwd))
        inside = not os.path.isabs(rel) and not rel.startswith("..") and rel != "."
        if inside and rel not in written:
            written.append(rel)
    accept += [{"file_exists": p} for p in written]
    tests = [
        c
        for c in session.calls
        if c.name == "Bash"
        and c.result is not None
        and TEST_COMMAND.search(str(c.input.get("command") or ""))
    ]
    if tests:
        last = tests[-1]
        found = _EXIT_CODE.match(last.result or "")
        code = int(found.group(1)) if found else (1 if last.is_error else 0)
        accept.append(
            {"command": {"run": relative(str(last.input["command"]), cwd), "exit_code": code}}
        )
    accept.append({"tool_results": results})
    return accept


def _folder(session: Session, cwd: str | None, out: Path, given: Path | None) -> Path | None:
    """The workspace folder: `given` (``--workspace``), else the session's, if not a run folder."""
    run = own_run(cwd)
    if run is not None and session.wrapper is None:
        raise not_the_agent(session, run)
    if given is not None:
        if not given.is_dir():
            raise SessionError(f"--workspace {given} is not a folder: give the workspace's folder")
        return given.resolve()
    if cwd is not None and run is not None:
        raise refusal(run, cwd, out)
    return Path(cwd) if cwd else None


def _workspace(
    session: Session,
    cwd: str | None,
    folder: Path | None,
    out: Path,
    ref: str | None,
    notes: list[str],
    *,
    given: bool,
) -> Any:
    """`workspace:`: `folder` from `out`, at --ref, else its starting commit, else as is."""
    if folder is None or not folder.is_dir():
        where = f"the session's folder {cwd}" if cwd else "the session's folder (not recorded)"
        if ref is not None:
            raise SessionError(
                f"--ref {ref} names a commit of {where}, which is not on this machine: run "
                "atom import where the session's project is"
            )
        notes.append(
            f"{where} is not on this machine: the workspace is empty. Put the project's files "
            "in a folder beside the spec and name it in `workspace:` (with `ref:` for a commit)"
        )
        return None
    folder = folder.resolve()
    root = project_root(out)
    if folder != root and root not in folder.parents:
        what = f"--workspace {folder} is" if given else f"the session ran in {folder},"
        raise SessionError(
            f"{what} outside the project of --out {out} ({root}): a workspace must lie "
            f"inside the spec's project, so give an --out inside {folder} (for example "
            f"{folder / 'specs'})"
        )
    path = Path(os.path.relpath(folder, out)).as_posix()
    top = project_git(folder, "rev-parse", "--show-toplevel")
    if ref is not None:
        if (
            top is None
            or project_git(folder, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}") is None
        ):
            raise SessionError(
                f"--ref {ref} is not a commit of {folder}"
                + ("" if top else " (the folder is not in a git repository)")
                + ": give a commit, branch or tag of the session's project"
            )
        notes.append(f"workspace: {folder.name} at --ref {ref}")
        return {"path": path, "ref": ref}
    if given:  # the folder as it is: a spec's workspace, say, which runs copy as it is
        notes.append(f"workspace: {folder.name} (--workspace) as its files are")
    else:
        commit = _starting_commit(session, folder, notes) if top is not None else None
        if commit:
            return {"path": path, "ref": commit}
        notes.append(
            f"workspace: no starting commit found, so {folder.name} as its files are now, "
            "which may hold the session's own changes: pass --ref to start from a commit"
        )
    inside = out == folder or folder in out.parents
    if inside:
        return {"path": path, "exclude": [Path(os.path.relpath(out, folder)).as_posix()]}
    return path


def _starting_commit(session: Session, folder: Path, notes: list[str]) -> str | None:
    """The last commit on the session's branch before it began, noted in `notes`."""
    if not session.started:
        return None
    branch = session.git_branch if session.git_branch not in (None, "", "HEAD") else "HEAD"
    commit = project_git(folder, "rev-list", "-1", f"--before={session.started}", str(branch), "--")
    if commit:
        notes.append(
            f"workspace: the session's starting commit, the last on {branch} before "
            f"{session.started} ({commit[:12]}); pass --ref to choose another"
        )
    return commit


def _block(value: str) -> bool:
    """Multi-line text as a ``|`` block unless a line ends in a space a block would lose."""
    return "\n" in value and not re.search(r"[ \t]\n|[^\S\n]$", value)


def _results(session: Session, cwd: str | None) -> tuple[dict[str, Any], list[str]]:
    """What each tool call gave, in order, for the spec's ``tool_results`` check."""
    results = {
        "session": session.path.name,
        "calls": [_result_entry(n, c, cwd) for n, c in enumerate(session.calls, start=1)],
    }
    header = [
        f"# What each tool call of {session.path.name} gave, in order (the spec's tool_results",
        "# check compares a run with it). Paths of the session's folder are relative.",
    ]
    return results, header
