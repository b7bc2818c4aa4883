"""The set-up cache: a scripted spec whose set-up makes a virtualenv, against the same spec
without `setup:`.

Run by hand; nothing is written to the repo or the user's cache (it needs the pinned Claude
Code CLI, which it runs offline against a scripted gateway):

    python benchmarks/setup_cache.py [--runs 3]

Builds a fixture workspace holding a wheel built here and a ``requirements.txt`` naming it,
and two specs with the same script and one command check each:

- ``plain``: no `setup:`; its check runs ``python3 -c 'print(1)'``: the baseline;
- ``venv``: ``setup: [python3 -m venv .venv, .venv/bin/pip install --no-index -r
  requirements.txt]``; its check imports the package with ``.venv/bin/python``.

Each round runs `run_spec` (the code path of `pytest --atom`) on ``plain``, on ``venv``
with the cache off (set-up runs: before), and on ``venv`` with a warm cache (after; a cold
run fills it first, untimed). Prints the median wall seconds of each, and the ratios to
``plain`` measured in the same run. The goal: ``warm / plain`` at most 1.5. Exit 2 when a
run fails, or when the warm run did not restore its set-up from the cache.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import yaml

from pytest_atom.agents.claude_code.cli import find_claude
from pytest_atom.run.setup_cache import ROOT_VARIABLE
from pytest_atom.run.spec_run import run_spec
from pytest_atom.settings.options import RunSettings
from pytest_atom.spec.load import load_spec
from tests.helpers import tiny_wheel

GOAL = 1.5
SETUP = [
    "python3 -m venv .venv",
    ".venv/bin/pip install --no-index --disable-pip-version-check -q -r requirements.txt",
]


def build(root: Path) -> tuple[Path, Path]:
    """The project: its fixture workspace, its script, and the two spec files."""
    specs = root / "specs"
    ws = specs / "ws"
    ws.mkdir(parents=True)
    (ws / "requirements.txt").write_text(f"./{tiny_wheel(ws).name}\n")
    turns = [
        {"tool_use": [{"name": "Bash", "input": {"command": "ls"}}]},
        {"text": "Looked.\n\nEXIT_LOOP_NOW"},
    ]
    (specs / "script.yaml").write_text(yaml.safe_dump({"turns": turns}))
    common = {"prompt": "Look around.", "script": "script.yaml", "workspace": "ws", "timeout": 300}
    plain = {**common, "name": "plain", "accept": [{"command": "python3 -c 'print(1)'"}]}
    venv = {
        **common,
        "name": "venv",
        "setup": SETUP,
        "env": {"PIP_DISABLE_PIP_VERSION_CHECK": "1"},
        "accept": [{"command": ".venv/bin/python -c 'import tinypkg'"}],
    }
    paths = []
    for doc in (plain, venv):
        path = specs / f"{doc['name']}.atom.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        paths.append(path)
    return paths[0], paths[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="rounds of the three arms")
    args = parser.parse_args()
    claude = find_claude()
    with tempfile.TemporaryDirectory(prefix="atom-setup-cache-") as tmp:
        root = Path(tmp) / "project"
        os.environ[ROOT_VARIABLE] = str(Path(tmp) / "cache")  # not the user's cache
        plain_file, venv_file = build(root)
        plain, venv = load_spec(plain_file), load_spec(venv_file)
        runs_dir = root / ".atom" / "runs"
        on, off = RunSettings(), replace(RunSettings(), setup_cache="off")

        def timed(spec_file: object, settings: RunSettings, want: str | None) -> float:
            spec = plain if spec_file is plain else venv
            started = time.perf_counter()
            result = run_spec(spec, runs_dir=runs_dir, claude_bin=claude, settings=settings)
            took = time.perf_counter() - started
            if not result.passed:
                print(result.report())
                raise SystemExit(2)
            if want is not None and not (result.setup_cache or "").startswith(want):
                print(f"the {spec.name} run's set-up cache says {result.setup_cache!r}, not {want}")
                raise SystemExit(2)
            return took

        cold = timed(venv, on, "stored")  # fills the cache
        times: dict[str, list[float]] = {"plain": [], "off": [], "warm": []}
        for _ in range(args.runs):
            times["plain"].append(timed(plain, on, None))
            times["off"].append(timed(venv, off, None))
            times["warm"].append(timed(venv, on, "restored"))
        medians = {name: statistics.median(values) for name, values in times.items()}
        base = medians["plain"]
        print(f"spec without setup: (plain)        {base:7.2f} s")
        print(
            f"venv set-up, cache off (before)     {medians['off']:7.2f} s  {medians['off'] / base:5.2f} x plain"
        )
        print(f"venv set-up, cold cache (stores)    {cold:7.2f} s  {cold / base:5.2f} x plain")
        ratio = medians["warm"] / base
        print(f"venv set-up, warm cache (after)     {medians['warm']:7.2f} s  {ratio:5.2f} x plain")
        print(
            f"warm / plain {ratio:.2f} (goal {GOAL}); before / after {medians['off'] / medians['warm']:.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
