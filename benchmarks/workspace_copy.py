"""Workspace copy speed: a 10,000-file project copied the way a spec run copies it.

Run by hand; nothing is written to the repo:

    python benchmarks/workspace_copy.py [--files 10000] [--runs 3]

Builds a git repository of `--files` small files in 100 folders (all committed), plus an
ignored `node_modules/` of 2,000 files the copy must leave out, then times, interleaved
and `--runs` times each (median in seconds): pytest-atom's copy of the project as a
workspace (git ls-files, the copy, the fresh repository's commit), the same copy without
the repository (a fixture folder's), `shutil.copytree` and `cp -r` of the tracked files
alone (a folder without node_modules/ and .git), and the ratio of each to `cp -r`.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_atom.run.workspace import WorkspaceSource, copy_workspace


def build(root: Path, files: int) -> tuple[Path, Path]:
    project, plain = root / "project", root / "plain"
    for base in (project, plain):
        for i in range(files):
            path = base / f"pkg{i % 100:03d}" / f"mod{i:05d}.py"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"VALUE = {i}\n" * 20)
    for i in range(2000):
        path = project / "node_modules" / f"dep{i % 20}" / f"f{i}.js"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x\n")
    (project / ".gitignore").write_text("node_modules/\n")
    git = ["git", "-c", "user.name=b", "-c", "user.email=b@b"]
    subprocess.run([*git, "init", "-q"], cwd=project, check=True)
    subprocess.run([*git, "add", "-A"], cwd=project, check=True)
    subprocess.run([*git, "commit", "-qm", "tree"], cwd=project, check=True)
    return project, plain


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        project, plain = build(root, args.files)
        ways: dict[str, Callable[[Path], object]] = {
            "pytest-atom, project (+ git repo)": lambda d: copy_workspace(
                WorkspaceSource(project), d
            ),
            "pytest-atom, fixture (no repo)": lambda d: copy_workspace(
                WorkspaceSource(project, repository=False), d
            ),
            "shutil.copytree (tracked only)": lambda d: shutil.copytree(plain, d, symlinks=True),
            "cp -r (tracked only)": lambda d: subprocess.run(["cp", "-r", str(plain), str(d)]),
        }
        times: dict[str, list[float]] = {name: [] for name in ways}
        for run in range(args.runs):
            for name, copy in ways.items():
                dest = root / f"dest-{run}-{len(times[name])}-{abs(hash(name))}"
                started = time.perf_counter()
                copy(dest)
                times[name].append(time.perf_counter() - started)
                shutil.rmtree(dest)
        base = statistics.median(times["cp -r (tracked only)"])
        print(f"{args.files} files (+2000 ignored), median of {args.runs}:")
        for name, values in times.items():
            median = statistics.median(values)
            print(f"  {name:36} {median:6.2f} s   {median / base:5.2f}x cp -r")


if __name__ == "__main__":
    main()
