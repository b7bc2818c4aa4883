"""Sessions of pytest-atom's own runs, as `atom import` meets them.

A run keeps Claude Code's transcripts in its run folder, and the agent's session ran in the
run's copy of the spec's workspace (``…/attempts/a01``). Two things there must not reach an
imported spec:

- the harness's wrapper around the prompt: the reader keeps the spec's task alone
  (`Session.wrapper`);
- the run's folder as the workspace: retention deletes it, and it holds where the session
  ended, not where it started (a copy would start a replay with the work done). `refusal`
  names the spec's workspace instead, which ``atom import --workspace`` takes.

The reflector's and the planner's sessions of a run sit beside the agent's, in the same
folder: their first prompt carries no task, and `not_the_agent` names the agent's file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pytest_atom.errors import SessionError, SpecError
from pytest_atom.importing.stream_json import Session
from pytest_atom.paths import SPEC_SUFFIX, display_path
from pytest_atom.prompts import first_message
from pytest_atom.run_folders import folder_spec_name, parse_run_name
from pytest_atom.spec.confinement import project_root
from pytest_atom.spec.types import Spec
from pytest_atom.spec_loader.load import load_specs, spec_files

#: The separator `first_message` puts between the system prompt and the task, as a
#: transcript's JSON spells it.
_TASK_IN_JSON = json.dumps(first_message("", ""))[1:-1]


@dataclass(frozen=True)
class OwnRun:
    """A pytest-atom run folder a session ran in."""

    folder: Path
    spec_name: str  # as the folder's name spells it (`folder_spec_name`)

    @property
    def under_atom(self) -> bool:
        """In a project's ``.atom/runs/`` (not a ``--atom-runs-dir`` elsewhere)."""
        return self.folder.parent.parts[-2:] == (".atom", "runs")


def own_run(cwd: str | None) -> OwnRun | None:
    """The outermost folder on `cwd`'s path named as a run folder, in ``.atom/runs/`` or holding
    ``attempts/`` (told by its path alone); None for any other folder."""
    if not cwd:
        return None
    path = Path(cwd)
    for folder in (*reversed(path.parents), path):
        parsed = parse_run_name(folder.name)
        if parsed is None:
            continue
        run = OwnRun(folder, parsed[0])
        if run.under_atom or (folder / "attempts").is_dir():
            return run
    return None


def not_the_agent(session: Session, run: OwnRun) -> SessionError:
    """A session of `run` whose first prompt carries no task: the reflector's or planner's."""
    agents = [
        p
        for p in sorted(session.path.parent.glob("*.jsonl"))
        if p != session.path and _carries_task(p)
    ]
    which = (
        f"import the agent's: {', '.join(display_path(p) for p in agents)}"
        if agents
        else "import the agent's transcript, whose first prompt ends with the task"
    )
    return SessionError(
        f"{session.path}: not the agent's session of the pytest-atom run {run.folder.name}: "
        f"its first prompt carries no spec's task under '# USER_PROMPT.md' (the reflector's "
        f"or the planner's session); {which}"
    )


def _carries_task(path: Path) -> bool:
    try:
        return _TASK_IN_JSON in path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False


def refusal(run: OwnRun, cwd: str, out: Path) -> SessionError:
    """Why the session's folder cannot be the spec's workspace, and the spec's workspace instead."""
    where = (
        f"the session ran in {cwd}, a folder of the pytest-atom run {run.folder}: retention "
        "deletes run folders (keep_runs, keep_runs_size), and it holds where the session "
        "ended (the work done, USER_PROMPT.md), not where it started, so it cannot be the "
        "spec's workspace. "
    )
    root = project_root(out)
    spec = _origin(run, root, out)
    if spec is None:
        return SessionError(
            f"{where}No spec named {run.spec_name!r} (the run folder's name) was found under "
            f"{root}: pass --workspace with the folder its spec's workspace is (and --ref "
            "with its commit, if it names one)"
        )
    hint = f"the spec {spec.name!r} in {display_path(spec.path)}"
    if spec.workspace is None:
        return SessionError(
            f"{where}It is a run of {hint}, which has no workspace (an empty folder): pass "
            "--workspace with an empty folder of the project"
        )
    flags = f"--workspace {display_path(spec.workspace)}"
    flags += f" --ref {spec.workspace_ref}" if spec.workspace_ref else ""
    return SessionError(
        f"{where}It is a run of {hint}, whose workspace is {display_path(spec.workspace)}: "
        f"import again with {flags} (what the session started from)"
    )


def _origin(run: OwnRun, root: Path, out: Path) -> Spec | None:
    """The spec named as `run`'s folder is, among the spec files of `root` outside the runs."""
    runs = run.folder.parent
    paths = [out] if out.is_dir() else []
    for child in sorted(root.iterdir()) if root.is_dir() else ():
        if child.is_dir() and not child.name.startswith(".") and child != runs:
            paths.append(child)
        elif child.name.endswith(SPEC_SUFFIX):
            paths.append(child)
    for file in spec_files(paths):
        if runs in file.parents:
            continue
        try:
            specs = load_specs(file)
        except (SpecError, OSError):
            continue  # another spec's problem is not this import's
        for spec in specs:
            if folder_spec_name(spec.name) == run.spec_name:
                return spec
    return None
