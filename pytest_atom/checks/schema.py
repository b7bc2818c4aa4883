"""The spec schema with the built-in kinds' fragments as its ``check`` definition.

``spec_schema.json`` ships complete (editors and the docs read it), and its ``check`` part is
written from the kinds, never by hand: ``python -m pytest_atom.checks.schema`` rewrites it,
and a test (tests/checks/test_kinds.py) fails while the file and the kinds differ.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from pytest_atom.checks.kinds import BUILTIN_KINDS
from pytest_atom.spec.types import SPEC_SCHEMA

SCHEMA_FILE = Path(__file__).parents[1] / "spec" / "spec_schema.json"


def spec_schema() -> dict[str, Any]:
    """The spec schema as it should be: the file's, its check kinds the built-in ones."""
    schema = copy.deepcopy(SPEC_SCHEMA)
    schema["$defs"]["check"]["properties"] = {k.name: dict(k.schema) for k in BUILTIN_KINDS}
    return schema


def schema_text() -> str:
    """`spec_schema()` as the file holds it: one top-level key per line, as written by hand
    before, with the ``check`` kinds indented for reading."""
    return json.dumps(spec_schema(), indent=2, ensure_ascii=False) + "\n"


def main() -> None:
    SCHEMA_FILE.write_text(schema_text(), encoding="utf-8")


if __name__ == "__main__":
    main()
