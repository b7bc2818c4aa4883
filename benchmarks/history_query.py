"""`atom history` over a large store: 10,000 runs of 100 specs must answer in under 1 s.

Run by hand; everything is written into a temp folder and removed:

    python benchmarks/history_query.py [--runs 10000] [--specs 100] [--per-run 100] [--rounds 3]

It fills a SQLite store (the embedded default, WAL) with --runs runs, each recording
--per-run items (spec i of --specs, round robin; one in seven fails; a digest per spec),
then times, best of --rounds (the machine is shared: the least disturbed round):

- in process: `summarize` (the listing: every series' last 20 runs, Wilson intervals,
  trends), `flaky` and `spec_runs` (one spec), against two baselines measured on the same
  store in the same run: a full scan of the items table (``SELECT count(*), sum(...)``: what
  reading every item once costs) and the same listing over a store of --small runs (how the
  listing grows with the store);
- as a user runs it: the ``atom history`` command in a process of its own, against
  ``atom --help`` (the process's own start-up, which no query can save).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from pytest_atom.history import sql
from pytest_atom.history.query import flaky, spec_runs, summarize
from pytest_atom.history.records import (
    TIME,
    ItemRecord,
    RunRecord,
    new_run_id,
)
from pytest_atom.history.sql import SqlStore
from pytest_atom.history.store import open_store
from pytest_atom.results.spec_result import CheckRow, CriterionRow


def fill(path: Path, runs: int, specs: int, per_run: int) -> None:
    """The store at `path`: `runs` runs of `per_run` items each. The rows are the store's
    own (`sql._run_row`, `sql._item_row`), made once per kind of item and copied with each
    run's id and time, and written 100 runs a transaction: a million items in a minute."""
    from datetime import UTC, datetime, timedelta

    store = open_store(path)
    assert isinstance(store, SqlStore)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    template = run_record(start)
    rows = {
        (n, outcome): sql._item_row(template, 0, _item(f"spec-{n:03d}", outcome, n))
        for n in range(specs)
        for outcome in ("passed", "failed")
    }
    cursor = store.connection.cursor()
    item_sql = f"INSERT INTO atom_items ({sql._ITEM_COLUMNS}) VALUES ({', '.join('?' * len(sql._ITEM_COLUMNS.split(',')))})"
    run_sql = (
        f"INSERT INTO atom_runs ({sql._RUN_COLUMNS}) VALUES ({', '.join('?' * len(sql._RUN))})"
    )
    # Where a copied row takes its run: the run's id among the fields, then the item's
    # number and the run's start, the first two columns after them (`sql._item_row`).
    at_run = [name for name, _ in sql._ITEM].index("run_id")
    at_number = len(sql._ITEM)
    spec = 0
    for first in range(0, runs, 100):
        cursor.execute("BEGIN")
        for n in range(first, min(runs, first + 100)):
            run = run_record(start + timedelta(minutes=n))
            cursor.execute(run_sql, sql._run_row(run))
            items = []
            for number in range(per_run):
                outcome = "failed" if (n + spec) % 7 == 0 else "passed"
                row = list(rows[(spec % specs, outcome)])
                row[at_run] = run.id
                row[at_number : at_number + 2] = [number, TIME.write(run.started)]
                items.append(tuple(row))
                spec += 1
            cursor.executemany(item_sql, items)
        cursor.execute("COMMIT")
    cursor.executemany(
        "INSERT INTO atom_series (spec, spec_case, arm) VALUES (?, '', '') ON CONFLICT DO NOTHING",
        [(f"spec-{n:03d}",) for n in range(specs)],
    )
    cursor.close()
    store.close()


def run_record(when: datetime) -> RunRecord:
    return RunRecord(
        new_run_id(when), when, "pytest", None, "c0ffee", False, "0.1.0", "2.1.332", {"repeat": 1}
    )


def _item(name: str, outcome: str, n: int) -> ItemRecord:
    return ItemRecord(
        run_id="", spec=name, spec_path=f"specs/{name}.atom.yaml", case=None, arm=None,
        repeat=None, outcome=outcome,
        checks=(CheckRow("file_exists out.txt", outcome == "passed", ""),),
        criteria=(CriterionRow("It works", 1.0, True, "ok"),),
        tokens={"executor": 5000 + n, "reflector": 900}, cost_usd={"executor": 0.02, "reflector": 0.004},
        wall_seconds=3.5, tool_calls=("Read", "Edit", "Bash"), digest=f"{n:064x}", run_folder=None,
    )  # fmt: skip


def best(fn: Callable[[], object], rounds: int) -> float:
    """The best of `rounds` timings of `fn`, in seconds."""
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def command(args: list[str], cwd: Path) -> Callable[[], object]:
    atom = str(Path(sys.executable).parent / "atom")
    env = {**os.environ, "COLUMNS": "200"}

    def run() -> object:
        done = subprocess.run(
            [atom, *args], cwd=cwd, env=env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise SystemExit(f"atom {' '.join(args)} failed: {done.stderr or done.stdout}")
        return done

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--specs", type=int, default=100)
    parser.add_argument("--per-run", type=int, default=100, help="items each run records")
    parser.add_argument("--small", type=int, default=100, help="runs in the baseline store")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="atom-history-bench-") as tmp:
        root = Path(tmp)
        (root / "pytest.ini").write_text("[pytest]\n")
        big, small = root / ".atom" / "history.db", root / "small.db"
        started = time.perf_counter()
        fill(big, args.runs, args.specs, args.per_run)
        filled = time.perf_counter() - started
        fill(small, args.small, args.specs, args.per_run)
        items = args.runs * args.per_run
        size = sum(p.stat().st_size for p in big.parent.glob("history.db*")) / 1e6
        print(
            f"store: {args.runs} runs x {args.per_run} items ({items} items, {args.specs} specs), {size:.0f} MB, filled in {filled:.1f} s"
        )
        store, little = open_store(big), open_store(small)
        assert isinstance(store, SqlStore)

        def scan() -> object:
            return store._fetch(
                "SELECT count(*), sum(tokens_total), sum(cost_total) FROM atom_items"
            )

        rows = {
            "full scan of the items (baseline)": best(scan, args.rounds),
            f"summarize over {args.small} runs (baseline)": best(
                lambda: summarize(little), args.rounds
            ),
            "summarize (atom history)": best(lambda: summarize(store), args.rounds),
            "flaky (atom history --flaky)": best(lambda: flaky(store), args.rounds),
            "spec_runs (atom history SPEC)": best(
                lambda: spec_runs(store, "spec-007"), args.rounds
            ),
        }
        base = rows["full scan of the items (baseline)"]
        print(f"\n{'in process, best of ' + str(args.rounds):<44} {'ms':>9} {'/ scan':>8}")
        for name, seconds in rows.items():
            print(f"{name:<44} {seconds * 1000:>9.1f} {seconds / base:>8.2f}")
        small_base = rows[f"summarize over {args.small} runs (baseline)"]
        print(
            f"summarize: {args.runs} runs / {args.small} runs = {rows['summarize (atom history)'] / small_base:.2f}"
        )
        store.close()
        little.close()
        help_s = best(command(["--help"], root), args.rounds)
        history_s = best(command(["history"], root), args.rounds)
        flaky_s = best(command(["history", "--flaky"], root), args.rounds)
        print(f"\n{'as a command, best of ' + str(args.rounds):<44} {'s':>9} {'/ --help':>8}")
        for name, seconds in (
            ("atom --help (baseline: start-up)", help_s),
            ("atom history", history_s),
            ("atom history --flaky", flaky_s),
        ):
            print(f"{name:<44} {seconds:>9.3f} {seconds / help_s:>8.2f}")
        verdict = "under" if history_s < 1.0 else "OVER"
        print(f"atom history: {history_s:.3f} s, {verdict} the 1 s goal")


if __name__ == "__main__":
    main()
