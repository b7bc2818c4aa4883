#!/usr/bin/env python3
"""code_reviewer: a tool that embeds an atom (the atom loop, `pytest_atom.legacy`).

The person runs one command; behind it an ephemeral atom iterates until the review is
written. The review's system prompt is `.atom/prompts/CODE_REVIEWER.md` beside this file,
the same prompt `specs/review.atom.yaml` tests with pytest-atom:

    python reviewer.py path/to/file.py            # writes REVIEW.md next to nothing: prints it
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from pytest_atom import PromptLoader
from pytest_atom.legacy import AtomRuntime

HERE = Path(__file__).resolve().parent


def review(source: Path, *, max_iterations: int = 5, runner: Any = None) -> dict[str, Any]:
    """Review one file; returns the runtime's result plus the review text (or None)."""
    prompt = PromptLoader(HERE).load("code_reviewer", max_iterations=max_iterations)
    runtime = AtomRuntime.create_ephemeral(
        prompt, max_iterations=max_iterations, verbose=False, cleanup=False, runner=runner
    )
    shutil.copy2(source, runtime.conversation_dir / source.name)
    try:
        result = runtime.run(f"Review {source.name} and write REVIEW.md.")
        review_file = runtime.conversation_dir / "REVIEW.md"
        result["review"] = review_file.read_text() if review_file.exists() else None
        return result
    finally:
        shutil.rmtree(runtime.conversation_dir, ignore_errors=True)


def main() -> int:
    if len(sys.argv) != 2:
        print("Usage: python reviewer.py FILE")
        return 2
    result = review(Path(sys.argv[1]))
    if result["success"] and result["review"]:
        print(result["review"])
        return 0
    print(f"Review failed: {result.get('reason')} {result.get('error') or ''}".strip())
    return 1


if __name__ == "__main__":
    sys.exit(main())
