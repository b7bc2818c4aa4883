"""A spec's workspace, copied into an attempt folder: what git holds, or the folder minus caches.

A workspace may be the user's own project (`workspace: .`), with the run folder, `.env`,
`node_modules/` and virtualenvs inside it. So the copy never takes what the project does
not own as source:

- inside a git work tree: tracked files plus untracked ones not ignored (``git ls-files
  --cached --others --exclude-standard``), or a commit's tree (``ref:``, through ``git
  archive``); never the project's ``.git``;
- outside git: the folder minus `SKIPPED_DIRS` (caches, virtualenvs, ``.git``);
- never the runs folder nor the destination, never the spec's `exclude:` globs, and never
  pytest-atom's own files (`own_files`) unless `include:` names them; those left out are
  reported (`Copied.left_out`);
- a symlink is copied as a link, never followed; a path in a folder that a link leads out
  of the workspace, and a device, FIFO or socket, is refused before anything is copied.

The project itself (a workspace that holds its spec) or a commit of it gets a fresh
repository holding one commit of that state (the agent's `git diff` shows its own work
only). A fixture folder beside the specs gets none: the repository would make its attempt
folder Claude Code's project root instead of the run folder, and so change the sessions
its cassettes recorded. A copy that fails leaves nothing behind.

pytest-atom's own files: copied as it is, the project would hand the agent its answer key
(the checks and criteria, the scripted answers, the recorded sessions), and every spec
added would change what any other spec's `ls` or Grep returns, so their replays would
diverge. What is left out is found by what pytest-atom knows, not by names alone:

- every spec file (``*.atom.yaml``) in the copied tree;
- what each names beside it: its `script:`, `oracle:`, `cases:` file, `cassette:` (and
  its ``.partial.yaml``), its default ``cassettes/<spec file stem>/``, its fixture
  workspaces (`workspace:` folders that are not the project itself, and ``workspaces/``),
  and its ``calibration/<spec name>/`` (named as the loader names the spec); the spec
  being run adds its own files wherever its file is;
- every ``.atom/`` folder: the project's config, tools, prompts, runs and results.

Specs are read as plain YAML, not validated: a spec with an error still names its files.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import shutil
import stat
import tarfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_atom.diffs import SNAPSHOT_REF, git
from pytest_atom.errors import WorkspaceError, YamlDocError
from pytest_atom.files import (
    SKIPPED_DIRS,
    contained,
    copy_regular,
    copy_tree,
    special_error,
    special_kind,
)
from pytest_atom.paths import SPEC_SUFFIX, default_spec_name
from pytest_atom.spec.workspaces import WORKSPACES_DIR

if TYPE_CHECKING:
    from pytest_atom.spec.types import Spec

SNAPSHOT_MESSAGE = "workspace as the spec's agent received it"
#: Not the agent's work, kept out of `git status`: the task file, the CLI's own folder,
#: and the files Claude Code's sandbox mounts over in the working folder.
SNAPSHOT_EXCLUDES = (
    "/USER_PROMPT.md",
    "/.claude/.cc-writes/",
    *"/.bash_profile /.bashrc /.profile /.zprofile /.zshrc /.gitconfig /.gitmodules".split(),
    *"/.ripgreprc /.mcp.json /.idea /.vscode".split(),
)


@dataclass(frozen=True)
class WorkspaceSource:
    """What to copy: `path`, at commit `ref` (git only), minus `exclude` globs and `skip`
    folders (the runs folder), plus the `include` globs of pytest-atom's own files."""

    path: Path
    ref: str | None = None
    exclude: tuple[str, ...] = ()
    skip: tuple[Path, ...] = ()
    repository: bool = True  # a copy from git gets a fresh repository (the module's doc)
    include: tuple[str, ...] = ()
    own: tuple[Path, ...] = ()  # the running spec's own files, absolute


@dataclass(frozen=True)
class Copied:
    """What `copy_workspace` made: whether `dest` holds a fresh repository, and which of
    pytest-atom's own files (workspace-relative, sorted) it left out."""

    repository: bool
    left_out: tuple[str, ...] = ()


def fixture_source(spec: Spec, runs_dir: Path) -> WorkspaceSource:
    assert spec.workspace is not None
    project = spec.workspace == spec.root or spec.workspace in spec.root.parents
    calibration = spec.root / CALIBRATION_DIR / spec.base_name  # as judge.calibration finds it
    own = (spec.path, spec.script, spec.oracle, spec.cassette, calibration)
    return WorkspaceSource(
        spec.workspace,
        spec.workspace_ref,
        spec.workspace_exclude,
        skip=(runs_dir,),
        repository=project or spec.workspace_ref is not None,
        include=spec.include,
        own=tuple(p for p in own if p is not None),
    )


def copy_workspace(source: WorkspaceSource, dest: Path) -> Copied:
    """Copy `source` into the new folder `dest`; on any failure `dest` is removed."""
    top = git_toplevel(source.path)
    ref = _ref_tree(source, top) if source.ref is not None else None
    skip = tuple(p.resolve() for p in (*source.skip, dest))
    base = source.path.resolve()
    try:
        dest.mkdir(parents=True)
        if top is None:
            left_out = _copy_some(source, base, dest, _tree_files(base, source.exclude, skip))
            return Copied(False, left_out)
        if ref is not None:
            _extract(top, ref[0], dest, source.exclude)
            left_out = _drop_own(source, dest)
        else:
            files = _git_files(source.path, source.exclude, skip)
            left_out = _copy_some(source, base, dest, files)
        if source.repository:
            snapshot_repo(dest)
        return Copied(source.repository, left_out)
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        raise


def git_toplevel(folder: Path) -> Path | None:
    """The top of the git work tree holding `folder`, or None (not in git, or no git)."""
    for parent in (folder, *folder.parents):
        if (parent / ".git").exists():
            break
    else:
        return None  # no .git above: no need to start git
    try:
        out = git(folder, "rev-parse", "--show-toplevel", snapshot=True)
    except WorkspaceError:
        return None
    return Path(out.strip()).resolve()


def snapshot_repo(folder: Path, *, amend: bool = False) -> None:
    """A fresh repository in `folder` with one commit of all it holds, by a fixed author
    at a fixed date (a replay sees the same hash). `amend`: that commit redone with the
    changes set-up made to its files (what it created is ignored: `ignore_new_files`)."""
    if not amend:
        git(folder, "init", "--quiet", "--initial-branch=main", snapshot=True)
        exclude = folder / ".git" / "info" / "exclude"
        exclude.parent.mkdir(parents=True, exist_ok=True)
        exclude.write_text("\n".join(SNAPSHOT_EXCLUDES) + "\n", encoding="utf-8")
        # The agent's HOME has no git identity: without one its `git commit` would fail.
        git(folder, "config", "user.name", "pytest-atom agent", snapshot=True)
        git(folder, "config", "user.email", "agent@pytest-atom.localhost", snapshot=True)
    if amend:
        ignore_new_files(folder)
    # The first commit takes every file copied (a tracked one may match an ignore rule);
    # after set-up, only the changes it made to those files.
    git(folder, "add", "--all", *([] if amend else ["--force"]), snapshot=True)
    commit = ["commit", "--quiet", "--no-verify", "--allow-empty", "-m", SNAPSHOT_MESSAGE]
    git(folder, *commit, *(["--amend"] if amend else []), snapshot=True)
    git(folder, "update-ref", SNAPSHOT_REF, "HEAD", snapshot=True)


#: The heading of the lines `ignore_new_files` adds to the snapshot's ``info/exclude``.
SETUP_EXCLUDES = "# made by the spec's setup: (never committed, like ignored build output)"


def ignore_new_files(folder: Path) -> list[str]:
    """Keep what `setup:` made out of the attempt's git (``.git/info/exclude``), which would
    store a second copy and list a virtualenv in the agent's `git status`; the paths added."""
    listing = git(
        folder, "ls-files", "-z", "--others", "--exclude-standard", "--directory", snapshot=True
    )
    new = sorted(p for p in listing.split("\0") if p)
    if new:
        exclude = folder / ".git" / "info" / "exclude"
        lines = [SETUP_EXCLUDES, *("/" + _escape_glob(p) for p in new)]
        with exclude.open("a", encoding="utf-8") as out:
            out.write("\n".join(lines) + "\n")
    return new


def _escape_glob(path: str) -> str:
    """A path as a gitignore line that matches it alone."""
    return "".join("\\" + c if c in "*?[\\!# " else c for c in path)


def _git_files(folder: Path, exclude: Sequence[str], skip: Sequence[Path]) -> Iterator[str]:
    listing = git(
        folder, "ls-files", "-z", "--cached", "--others", "--exclude-standard", snapshot=True
    )
    base = folder.resolve()
    for rel in dict.fromkeys(listing.split("\0")):  # a conflicted file is listed per stage
        if not rel or matches(rel, exclude):
            continue
        path = base / rel
        if any(path == s or s in path.parents for s in skip):
            continue
        yield rel


def _copy_files(source: Path, dest: Path, files: Iterable[str]) -> None:
    """Copy the listed files (posix paths under `source`), symlinks as links; a file git
    lists but the disk lacks is left out. All are checked before the first is copied."""
    listed = [(rel, _mode(source / rel)) for rel in files]
    inside: dict[str, bool] = {}  # per folder: whether it resolves inside `source`
    for rel, mode in listed:
        kind = None if mode is None else special_kind(mode)
        if kind is not None:
            raise special_error(source / rel, rel, kind)
        folder = posixpath.dirname(rel)
        if folder not in inside:
            inside[folder] = contained(source, folder or ".") is not None
        if not inside[folder]:
            raise WorkspaceError(
                f"{rel!r} lies in {folder!r}, a link that leads outside the workspace "
                f"{source}: pytest-atom follows no link out of a workspace; replace the "
                "link with the folder, or leave it out with the spec's `workspace: exclude:`"
            )
    made: set[Path] = {dest}
    for rel, mode in listed:
        src, target = source / rel, dest / rel
        if mode is None:
            continue
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        if stat.S_ISLNK(mode):
            os.symlink(os.readlink(src), target)
        elif stat.S_ISDIR(mode):  # a submodule: its files, not its .git
            copy_tree(src, target, ignore=shutil.ignore_patterns(".git"))
        else:
            copy_regular(src, target)


def _mode(path: Path) -> int | None:
    try:
        return path.lstat().st_mode
    except FileNotFoundError:
        return None


def _tree_files(base: Path, exclude: Sequence[str], skip: Sequence[Path]) -> Iterator[str]:
    """The files of a folder outside git, minus `SKIPPED_DIRS`, `skip` and `exclude`."""
    for dirpath, dirnames, filenames in os.walk(base):
        here = Path(dirpath)
        rel_dir = here.relative_to(base).as_posix()
        prefix = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = [
            d
            for d in dirnames
            if d not in SKIPPED_DIRS
            and (here / d) not in skip
            and not matches(prefix + d, exclude)
            and not (here / d).is_symlink()
        ]
        links = [d for d in os.listdir(here) if (here / d).is_symlink() and (here / d).is_dir()]
        for name in (*filenames, *links):
            if not matches(prefix + name, exclude):
                yield prefix + name


def _copy_some(
    source: WorkspaceSource, base: Path, dest: Path, files: Iterable[str]
) -> tuple[str, ...]:
    """Copy `files` but pytest-atom's own; returns those left out."""
    taken, own = _without_own(source, base, files)
    _copy_files(base, dest, taken)
    return own


def _without_own(
    source: WorkspaceSource, base: Path, files: Iterable[str]
) -> tuple[list[str], tuple[str, ...]]:
    listed = list(files)
    own = [r for r in own_files(base, listed, source.own) if not matches(r, source.include)]
    dropped = set(own)
    return [r for r in listed if r not in dropped], tuple(own)


@dataclass(frozen=True)
class Listing:
    """What `copy_workspace` would take, found without copying: a `ref:` commit's tree
    (git's id, which names its content), or the working folder's files."""

    base: Path
    tree: str | None = None
    files: tuple[str, ...] = ()


def list_workspace(source: WorkspaceSource) -> Listing:
    """What a copy of `source` takes, by the copy's own rules: the outcome cache hashes
    this, so an ignored file or a cache never changes a digest. WorkspaceError as
    `copy_workspace` raises it."""
    top = git_toplevel(source.path)
    base = source.path.resolve()
    skip = tuple(p.resolve() for p in source.skip)
    if source.ref is not None:
        return Listing(base, tree=_ref_tree(source, top)[1])
    listed = (
        _tree_files(base, source.exclude, skip)
        if top is None
        else _git_files(source.path, source.exclude, skip)
    )
    return Listing(base, files=tuple(_without_own(source, base, listed)[0]))


def _drop_own(source: WorkspaceSource, dest: Path) -> tuple[str, ...]:
    """Remove pytest-atom's own files from an extracted commit; returns them."""
    listed = sorted(_tree_files(dest, (), ()))
    base = source.path.resolve()
    own_here = tuple(dest / p.relative_to(base) for p in source.own if p.is_relative_to(base))
    own = [r for r in own_files(dest, listed, own_here) if not matches(r, source.include)]
    for rel in own:
        (dest / rel).unlink(missing_ok=True)
    return tuple(own)


def _ref_tree(source: WorkspaceSource, top: Path | None) -> tuple[str, str]:
    """`source`'s tree at its `ref:`: as `git archive` names it, and git's id of it."""
    ref = source.ref
    if top is None:
        raise WorkspaceError(
            f"workspace {source.path} has `ref: {ref}` but is not in a git work tree: "
            "drop `ref`, or name a folder of a git repository"
        )
    rel = source.path.resolve().relative_to(top).as_posix()
    # `REF:path^{tree}` would read `^{tree}` as part of the path: a subfolder's tree is
    # named `REF:path`, the commit's own `REF^{tree}`.
    named = f"{ref}^{{tree}}" if rel == "." else f"{ref}:{rel}"
    try:
        found = git(top, "rev-parse", "--verify", "--quiet", named, snapshot=True).strip()
    except WorkspaceError:
        raise WorkspaceError(
            f"workspace ref {ref!r} is not a commit of {top} that holds {rel}: "
            f"name a commit, tag or branch (`git -C {top} log --oneline` lists them)"
        ) from None
    return (str(ref) if rel == "." else named), found


def _extract(top: Path, tree: str, dest: Path, exclude: Sequence[str]) -> None:
    archive = dest / ".atom-archive.tar"
    git(top, "archive", "--format=tar", f"--output={archive.absolute()}", tree, snapshot=True)
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if not matches(m.name, exclude)]
        tar.extractall(dest, members=members, filter="tar")
    archive.unlink()


ATOM_DIR = ".atom"
PARTIAL_SUFFIX = ".partial.yaml"  # what a failed recording keeps beside the cassette
#: `pytest_atom.judge.calibration.FOLDER`, not imported (a test holds them equal).
CALIBRATION_DIR = "calibration"
_SPEC_SIDE = ("script", "oracle", "cassette", "cases")  # spec keys naming a path beside it


def own_files(base: Path, rels: Iterable[str], extra: Iterable[Path] = ()) -> list[str]:
    """The paths among `rels` (posix, relative to `base`) that are pytest-atom's own, or
    lie in a folder that is. `extra`: absolute paths known otherwise (the running spec's)."""
    listed = list(rels)
    owned: set[str] = set()  # files, and folders whose whole content goes
    for rel in listed:
        parts = rel.split("/")
        if ATOM_DIR in parts:
            owned.add("/".join(parts[: parts.index(ATOM_DIR) + 1]))
        if parts[-1].endswith(SPEC_SUFFIX):
            owned.add(rel)
            owned.update(_named_by(base, rel))
    owned.update(r for r in (_inside(base, p) for p in extra) if r is not None)
    return [rel for rel in listed if _under(rel, owned)]


def matches(rel: str, globs: Sequence[str]) -> bool:
    """Whether `rel` (a posix path) or one of the folders it is in matches a glob."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return any(fnmatch.fnmatchcase(p, g.rstrip("/")) for p in prefixes for g in globs)


def _under(rel: str, owned: set[str]) -> bool:
    parts = rel.split("/")
    return any("/".join(parts[: i + 1]) in owned for i in range(len(parts)))


def _inside(base: Path, path: Path) -> str | None:
    rel = os.path.relpath(os.path.normpath(path), os.path.normpath(base))
    if rel == "." or rel == ".." or rel.startswith(".." + os.sep) or os.path.isabs(rel):
        return None
    return Path(rel).as_posix()


def _named_by(base: Path, spec_rel: str) -> set[str]:
    folder = posixpath.dirname(spec_rel)
    stem = posixpath.basename(spec_rel).removesuffix(SPEC_SUFFIX)
    named = {posixpath.join(folder, "cassettes", stem), posixpath.join(folder, WORKSPACES_DIR)}
    spec_dir = base / folder
    for key, value in _spec_values(base / spec_rel):
        path = Path(os.path.normpath(spec_dir / value))
        holds_spec = path == spec_dir or _inside(path, spec_dir) is not None
        if key == "workspace" and holds_spec:
            continue  # a workspace holding its spec is the project itself, not a fixture
        rel = _inside(base, path)
        if rel is None:  # outside the copy
            continue
        named.add(rel)
        if rel.endswith(".yaml"):
            named.add(rel.removesuffix(".yaml") + PARTIAL_SUFFIX)
    return named


def _spec_values(spec_file: Path) -> list[tuple[str, str]]:
    from pytest_atom import yamldoc  # only where specs are

    try:
        data = yamldoc.safe_load(spec_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, YamlDocError):
        return []
    entries = data.get("specs") if isinstance(data, dict) and "specs" in data else [data]
    found: list[tuple[str, str]] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        # As `spec_loader.load` names it; its cases and arms share that name's calibration folder.
        name = entry.get("name", default_spec_name(spec_file))
        if isinstance(name, str) and name and "/" not in name and name not in (".", ".."):
            found.append(("calibration", posixpath.join(CALIBRATION_DIR, name)))
        arms = entry.get("arms")
        for mapping in [entry, *(arms.values() if isinstance(arms, dict) else [])]:
            found += _values(mapping)
    return found


def _values(mapping: Any) -> list[tuple[str, str]]:
    if not isinstance(mapping, dict):
        return []
    values = [(key, mapping.get(key)) for key in _SPEC_SIDE]
    workspace = mapping.get("workspace")
    values.append(
        ("workspace", workspace.get("path") if isinstance(workspace, dict) else workspace)
    )
    return [(k, v) for k, v in values if isinstance(v, str) and v and not os.path.isabs(v)]
