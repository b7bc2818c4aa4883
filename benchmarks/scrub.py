"""Scrubbing cost: the shipped fixture cassettes' text through the Scrubber, as a run does.

Run by hand; nothing is written:

    python benchmarks/scrub.py [--rounds 5]

Every cassette under fixtures/specs/cassettes and examples/*/specs/cassettes is scrubbed
three ways: its whole file text with ``scrub`` (as a transcript or report is), each
interaction's request body with ``scrub_obj`` (as the recorder keeps a request) and each
response text with ``scrub`` (as ``_keep`` does). "first" is the first pass in this process
(detect-secrets is imported on first use); "fresh" clears the detector's caches
before each round (what one new run pays); "cached" keeps it (what later requests of the
same conversation pay). "baseline" runs the same strings through only the passes that need
no detector (known values, token shapes): the Scrubber as it was before detect-secrets.
Prints the best of --rounds in ms (the machine is shared: the least disturbed round).

To compare with an older Scrubber, put that version's package first on PYTHONPATH: the
script measures whatever ``pytest_atom.replay.scrub`` imports, and says which file that was.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from pytest_atom.replay import scrub

REPO = Path(__file__).resolve().parent.parent


def cassettes() -> list[Path]:
    return sorted(
        [
            *REPO.glob("fixtures/specs/cassettes/**/*.yaml"),
            *REPO.glob("examples/*/specs/cassettes/**/*.yaml"),
        ]
    )


def workload() -> tuple[list[str], list[object], list[str]]:
    """File texts, request bodies (parsed JSON where they are JSON) and response texts."""
    texts, bodies, responses = [], [], []
    for path in cassettes():
        text = path.read_text(encoding="utf-8")
        texts.append(text)
        for interaction in yaml.safe_load(text)["interactions"]:
            body = interaction["request"]["body"] or ""
            try:
                bodies.append(json.loads(body))
            except ValueError:
                bodies.append(body)
            responses.append(interaction["response"]["body"]["string"] or "")
    return texts, bodies, responses


def clear_caches() -> None:
    try:
        from pytest_atom.replay import detector
    except ImportError:  # an older Scrubber without a detector
        return
    detector._window_values.cache_clear()
    detector._find_cached.cache_clear()


def measure(fn: Callable[[], object], rounds: int, fresh: bool) -> float:
    times = []
    for _ in range(rounds):
        if fresh:
            clear_caches()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    texts, bodies, responses = workload()
    size = sum(map(len, texts))
    scrubber = scrub.Scrubber(env={})
    known = getattr(scrubber, "_known", None)  # the passes without detect-secrets
    print(f"scrub module: {scrub.__file__}")
    print(f"{len(texts)} cassettes, {size:,} characters, {len(bodies)} interactions")

    def each(items: list[Any], fn: Callable[[Any], object]) -> Callable[[], None]:
        def run() -> None:
            for item in items:
                fn(item)

        return run

    start = time.perf_counter()
    each(texts, scrubber.scrub)()
    print(f"first use, file texts: {(time.perf_counter() - start) * 1000:.1f} ms")
    print(f"{'ms, best of ' + str(args.rounds):24s} {'baseline':>9s} {'fresh':>9s} {'cached':>9s}")
    for label, items, fn in (
        ("file texts (scrub)", texts, scrubber.scrub),
        ("request bodies (obj)", bodies, scrubber.scrub_obj),
        ("responses (scrub)", responses, scrubber.scrub),
    ):
        base = (
            measure(each(items, lambda x: _known_obj(known, x)), args.rounds, fresh=False)
            if known
            else float("nan")
        )
        fresh = measure(each(items, fn), args.rounds, fresh=True)
        cached = measure(each(items, fn), args.rounds, fresh=False)
        print(f"{label:24s} {base:9.1f} {fresh:9.1f} {cached:9.1f}")
    print("baseline: the same strings through the passes that need no detector (known values,")
    print("token shapes), i.e. the Scrubber before detect-secrets")


def _known_obj(known: Callable[[str, list[str]], str], item: Any) -> Any:
    if isinstance(item, str):
        return known(item, [])
    if isinstance(item, dict):
        return {_known_obj(known, k): _known_obj(known, v) for k, v in item.items()}
    if isinstance(item, list):
        return [_known_obj(known, x) for x in item]
    return item


if __name__ == "__main__":
    main()
