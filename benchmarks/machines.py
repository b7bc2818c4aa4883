"""The full sweep of tests/replay/test_machines.py: every shipped spec on generated machines.

Run by hand (needs the pinned `claude`, see `atom setup`):

    PYTHONPATH=. python benchmarks/machines.py [--machines 3] [--seed 1] [--specs a,b]

Each machine (tests/machines.py: its HOME, XDG folders set or not, a temp folder up to 12
folders deep, time zone, locale, user, working folder depth, and cassettes as its kernel,
login shell and user id recorded them) replays fixtures/specs in ``--atom-match=strict``.
One line per machine: passed or not, any drift line, and whether the caller's HOME, XDG
folders and TMPDIR were left as they were. Exits 1 when any machine fails.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pytest_atom.agents.claude_code.cli import find_claude
from tests.machines import FIXTURES, Machine, caller_trees, prepare, replay


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--machines", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    every = sorted(p.name.removesuffix(".atom.yaml") for p in FIXTURES.glob("*.atom.yaml"))
    parser.add_argument("--specs", default=",".join(every))
    args = parser.parse_args()
    specs = tuple(args.specs.split(","))
    claude = find_claude()
    failed = 0
    for seed in range(args.seed, args.seed + args.machines):
        machine = Machine.generate(seed)
        with tempfile.TemporaryDirectory(prefix="atom-machine-") as tmp:
            root = Path(tmp)
            copy = prepare(machine, root, specs)
            before = caller_trees(machine, root)
            done = replay(machine, root, copy, specs, claude, timeout=3600)
            unchanged = caller_trees(machine, root) == before
        out = done.stdout + done.stderr
        drift = [line.strip() for line in out.splitlines() if "drift:" in line]
        ok = done.returncode == 0 and not drift and unchanged
        failed += not ok
        tail = out.strip().splitlines()[-1] if out.strip() else ""
        print(f"{'ok  ' if ok else 'FAIL'} {machine}")
        print(f"     {tail}; drift lines: {len(drift)}; caller folders unchanged: {unchanged}")
        if not ok:
            print(out[-4000:])
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
