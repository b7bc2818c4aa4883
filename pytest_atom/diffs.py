"""What an agent changed in its workspace: git's diff against the snapshot commit, else a
file-by-file comparison that follows no link and opens no special file (a link the agent
made to the caller's home shows as the link, never as what it leads to).

`git` is how every git command of pytest-atom runs (`project_git` on the user's own project).
"""

from __future__ import annotations

import difflib
import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pytest_atom.digest import tree
from pytest_atom.environment import passed
from pytest_atom.errors import WorkspaceError
from pytest_atom.files import SKIPPED_DIRS, shown_content
from pytest_atom.words import Scrubbed

#: The ref of the snapshot commit: what `changes` compares with, whatever the agent commits.
SNAPSHOT_REF = "refs/atom/snapshot"


def changes(folder: Path, exclude: Sequence[str] = ()) -> str | None:
    """The diff of `folder` against its snapshot commit (new files too, ignored files and
    `exclude` not), through a throwaway index so the agent's own is untouched; None when
    `folder` holds no snapshot repository."""
    git_dir = folder / ".git"
    if git_dir.is_symlink() or not git_dir.is_dir():
        return None  # a `.git` the agent linked elsewhere is no snapshot of this folder
    index = folder / ".git" / "atom-diff-index"
    try:
        git(folder, "rev-parse", "--verify", "--quiet", SNAPSHOT_REF, snapshot=True)
        env = {"GIT_INDEX_FILE": str(index)}
        git(folder, "read-tree", SNAPSHOT_REF, env=env, snapshot=True)
        git(folder, "add", "--all", env=env, snapshot=True)
        return git(
            folder,
            "-c",
            "core.quotepath=off",
            "diff",
            "--cached",
            "--no-color",
            "--no-ext-diff",
            SNAPSHOT_REF,
            "--",
            ".",
            *(f":(exclude){path}" for path in exclude),
            env=env,
            snapshot=True,
        )
    except WorkspaceError:
        return None
    finally:
        index.unlink(missing_ok=True)


def git(
    cwd: Path,
    *args: str,
    env: Mapping[str, str] | None = None,
    snapshot: bool = False,
    timeout: float | None = None,
) -> str:
    """`git args` in `cwd`: what it printed; WorkspaceError when git is missing, fails or
    outlasts `timeout`. Its environment is built from parts, as every process of a run's
    (environment.py): `environment.passed`, then `SNAPSHOT_ENV` and `SNAPSHOT_FLAGS` with
    `snapshot` (an attempt's snapshot repository, made and read alike on every machine),
    then `env`; the caller's git settings (GIT_DIR, GIT_INDEX_FILE, ...) never reach it."""
    full = {**passed(), **(SNAPSHOT_ENV if snapshot else {}), **(env or {})}
    flags = SNAPSHOT_FLAGS if snapshot else ()
    try:
        done = subprocess.run(
            ["git", *flags, *args],
            cwd=cwd,
            env=full,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise WorkspaceError(
            "git is not installed, and the workspace is in a git work tree"
        ) from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WorkspaceError(f"`git {' '.join(args)}` could not run in {cwd}: {exc}") from None
    if done.returncode != 0:
        problem = done.stderr.decode("utf-8", "replace").strip()
        raise WorkspaceError(f"`git {' '.join(args)}` failed in {cwd}: {problem}")
    return done.stdout.decode("utf-8", "surrogateescape")


def project_git(root: Path, *args: str) -> str | None:
    """`git args` on the user's own project (its commit, its state, its log), stripped;
    None when git is missing, fails or takes over 30 s. The caller's HOME passes, so the
    user's git configuration (``safe.directory``, say) applies."""
    home = {"HOME": os.environ["HOME"]} if "HOME" in os.environ else None
    try:
        return git(root, *args, env=home, timeout=30).strip()
    except WorkspaceError:
        return None


#: What an attempt folder holds that is not the agent's work: its prompt, the harness's folder.
HARNESS_FILES = {"USER_PROMPT.md", ".atom", *SKIPPED_DIRS}


_DIFF_LIMIT = 12_000


def workspace_diff(
    before: Path | None,
    after: Path,
    limit: int = _DIFF_LIMIT,
    installed: Sequence[str] = (),
    *,
    scrub: Callable[[str], Scrubbed],
) -> Scrubbed:
    """What the agent changed, as unified diffs of text files: git's against the snapshot commit
    (the project's ignore rules apply), else file by file, without what the harness `installed`;
    cut at `limit` characters after `scrub` has passed it whole, so the cut splits no secret."""
    from_git = changes(after, exclude=installed)
    if from_git is not None:
        return _clipped(scrub(from_git.rstrip("\n") or "(no changes)"), limit)
    old, new = agent_files(before, installed), agent_files(after, installed)
    return _clipped(scrub("\n".join(_file_diffs(old, new)) or "(no changes)"), limit)


def _clipped(text: Scrubbed, limit: int) -> Scrubbed:
    if len(text) <= limit:
        return text
    return Scrubbed(text[:limit] + f"\n... ({len(text) - limit} more characters)")


def agent_files(root: Path | None, installed: Sequence[str] = ()) -> dict[str, Path]:
    """What `root` holds, without the harness's own and `installed`: no link followed or opened."""
    if root is None or not root.is_dir():
        return {}
    found = {
        e.rel: e.path
        for e in tree(root, HARNESS_FILES)  # never into a linked folder
        if e.kind != "dir" and e.path.name not in HARNESS_FILES and not _installed(e.rel, installed)
    }
    return dict(sorted(found.items()))


def _installed(rel: str, installed: Sequence[str]) -> bool:
    return any(rel == i or rel.startswith(i + "/") for i in installed)


def _file_diffs(old: Mapping[str, Path], new: Mapping[str, Path]) -> list[str]:
    """Unified diffs of the text files that differ; a line for each binary one that does."""
    parts: list[str] = []
    for name in sorted(old.keys() | new.keys()):
        a = shown_content(old[name]) if name in old else ""
        b = shown_content(new[name]) if name in new else ""
        if a == b:
            continue
        if isinstance(a, bytes) or isinstance(b, bytes):
            parts.append(f"binary file {name} changed")
            continue
        parts.extend(
            difflib.unified_diff(
                (a or "").splitlines(),
                (b or "").splitlines(),
                f"a/{name}" if name in old else "/dev/null",
                f"b/{name}" if name in new else "/dev/null",
                lineterm="",
            )
        )
    return parts


#: What the snapshot commit is made with: nothing of the machine or the moment.
SNAPSHOT_ENV = {
    "GIT_AUTHOR_NAME": "pytest-atom",
    "GIT_AUTHOR_EMAIL": "pytest-atom@localhost",
    "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
    "GIT_COMMITTER_NAME": "pytest-atom",
    "GIT_COMMITTER_EMAIL": "pytest-atom@localhost",
    "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}
#: ... and no line-ending conversion, signing or housekeeping of the machine's.
SNAPSHOT_FLAGS = ("-c", "core.autocrlf=false", "-c", "commit.gpgsign=false", "-c", "gc.auto=0")
