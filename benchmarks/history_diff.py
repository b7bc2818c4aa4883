"""`atom diff` and the HTML report's history over a large store.

Run by hand; everything is written into a temp folder and removed:

    python benchmarks/history_diff.py [--runs 10000] [--specs 100] [--per-run 100] [--rounds 3]

It fills a SQLite store as benchmarks/history_query.py does (--runs runs of --per-run items,
spec i of --specs round robin, one in seven failing), then times, best of --rounds:

- `diff_runs` of the newest two runs, reading their items from the store, against reading
  the same two runs' items alone (the baseline: what any comparison must read);
- `history_view` of a new session of every spec (the comparison with the newest earlier
  run of the same selection and a 20-run trend per spec, as the HTML report shows them),
  against the same baseline;
- the ``atom diff`` command in a process of its own (the newest run against the newest
  earlier run of its selection), against ``atom --help`` (the process's own start-up).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # run as a script: its sibling's store filler

from history_query import best, command, fill

from pytest_atom.history.diff import diff_runs
from pytest_atom.history.records import new_run_id
from pytest_atom.history.store import open_store
from pytest_atom.history.view import history_view


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--specs", type=int, default=100)
    parser.add_argument("--per-run", type=int, default=100, help="items each run records")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="atom-diff-bench-") as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n")
        path = root / ".atom" / "history.db"
        fill(path, args.runs, args.specs, args.per_run)
        store = open_store(path)
        after, before = store.runs(limit=2)
        items = store.items(after.id)
        session = replace(after, id=new_run_id(after.started + timedelta(minutes=1)))
        session = replace(session, started=after.started + timedelta(minutes=1))
        own = [replace(i, run_id=session.id) for i in items]
        print(
            f"store: {args.runs} runs x {args.per_run} items ({args.specs} specs); "
            f"best of {args.rounds}"
        )
        read = best(lambda: (store.items(before.id), store.items(after.id)), args.rounds)
        compared = best(
            lambda: diff_runs(before, store.items(before.id), after, store.items(after.id)),
            args.rounds,
        )
        viewed = best(lambda: history_view(str(path), root, session, own), args.rounds)
        store.close()
        started = best(command(["--help"], root), args.rounds)
        cli = best(command(["diff"], root), args.rounds)
        rows = [
            ("read two runs' items (baseline)", read, read),
            ("diff_runs of the newest two", compared, read),
            (f"history_view ({len(own)} items, 20-run trends)", viewed, read),
            ("atom --help (process start, baseline)", started, started),
            ("atom diff", cli, started),
        ]
        for name, seconds, base in rows:
            print(f"{name:<48} {seconds * 1000:9.1f} ms  {seconds / base:6.1f}x baseline")
        print(f"atom diff: {cli:.3f} s as a user runs it")


if __name__ == "__main__":
    main()
