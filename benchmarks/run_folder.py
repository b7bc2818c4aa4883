"""Run folder size: a spec whose set-up writes a large file, against the attempt it ran in.

Run by hand; nothing is written to the repo (it needs the pinned Claude Code CLI, which
it runs offline against a scripted gateway):

    python benchmarks/run_folder.py [--mb 20] [--fixture]

Builds a git project whose spec (`workspace: ..`, the project itself) has
``setup: head -c <MB>000000 /dev/urandom > blob``, runs it once through `run_spec` (the
code path of `pytest --atom`), and prints, as ``du`` counts them (each hard-linked file
once): the run folder, its first attempt, what `committed/` adds on top of the attempt,
the attempt's `.git`, the other parts of the run folder, and the ratio run folder /
attempt. ``--fixture`` uses a fixture folder beside the spec (no git) instead. Exit 1 when
the ratio is above 1.3.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml

from pytest_atom.agents.claude_code.cli import find_claude
from pytest_atom.run.spec_run import run_spec
from pytest_atom.run_folders import folder_size
from pytest_atom.spec_loader.load import load_spec

LIMIT = 1.3


def build(root: Path, mb: int, fixture: bool) -> Path:
    """The project, and its spec file."""
    specs = root / "specs"
    (specs / "ws").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('app')\n")
    (specs / "ws" / "README.md").write_text("fixture\n")
    turns = [
        {"tool_use": [{"name": "Bash", "input": {"command": "ls -la blob"}}]},
        {"text": "The blob is there.\n\nEXIT_LOOP_NOW"},
    ]
    (specs / "script.yaml").write_text(yaml.safe_dump({"turns": turns}))
    spec = specs / "big.atom.yaml"
    spec.write_text(
        "name: big\nprompt: Look at the blob.\nscript: script.yaml\ntimeout: 300\n"
        f"workspace: {'ws' if fixture else '..'}\n"
        f"setup: ['head -c {mb}000000 /dev/urandom > blob']\n"
        "accept: [{file_exists: blob}]\n"
    )
    if not fixture:
        subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return spec


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=20, help="what the set-up writes, in MB")
    parser.add_argument("--fixture", action="store_true", help="a fixture folder, no git")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="atom-run-folder-") as tmp:
        root = Path(tmp) / "project"
        spec_file = build(root, args.mb, args.fixture)
        result = run_spec(
            load_spec(spec_file), runs_dir=root / ".atom" / "runs", claude_bin=find_claude()
        )
        if not result.passed:
            print(result.report())
            return 2
        run_dir = result.run_dir
        attempt = run_dir / "attempts" / "a01"
        seen: set[tuple[int, int]] = set()
        attempt_size = folder_size(attempt, seen)
        committed_extra = folder_size(run_dir / "committed", seen)  # past the attempt's inodes
        whole = folder_size(run_dir)
        git = folder_size(attempt / ".git") if (attempt / ".git").is_dir() else 0
        rows = [
            ("run folder", whole),
            ("attempts/a01", attempt_size),
            ("  of it .git", git),
            ("committed/ beyond a01", committed_extra),
            ("the rest (CLI state, home, setup, mcp)", whole - attempt_size - committed_extra),
        ]
        for name, size in rows:
            print(f"{name:<40} {size / 1e6:9.2f} MB")
        ratio = whole / attempt_size
        print(f"{'run folder / attempt':<40} {ratio:9.2f}  (limit {LIMIT})")
        return 0 if ratio <= LIMIT else 1


if __name__ == "__main__":
    raise SystemExit(main())
