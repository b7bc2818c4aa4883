"""The spec schema with the built-in kinds' fragments as its ``check`` definition.

``spec_schema.json`` ships complete (editors and the docs read it), and its check kinds
(``$defs.check.properties``) are written from the kinds, never by hand:
``python -m pytest_atom.checks.schema`` rewrites that part alone; a test fails while the file
and the kinds differ.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pytest_atom.checks.kinds import BUILTIN_KINDS

SCHEMA_FILE = Path(__file__).parents[1] / "spec" / "spec_schema.json"
#: Where the check kinds start in the file: the ``check`` definition's ``properties``.
_CHECK_KINDS = re.compile(r'\n    "check": \{\n(?:.*\n)*?      "properties": ', re.MULTILINE)


def check_kinds() -> dict[str, Any]:
    """Each built-in kind's name and the JSON schema of its value, in registry order."""
    return {kind.name: dict(kind.schema) for kind in BUILTIN_KINDS}


def schema_text(text: str) -> str:
    """The file's `text` with its check kinds written from the kinds; the rest unchanged."""
    found = _CHECK_KINDS.search(text)
    if found is None:
        raise ValueError("spec_schema.json has no $defs.check.properties")
    start = found.end()
    _, length = json.JSONDecoder().raw_decode(text[start:])
    kinds = json.dumps(check_kinds(), indent=2, ensure_ascii=False).replace("\n", "\n      ")
    return text[:start] + kinds + text[start + length :]


def main() -> None:
    text = SCHEMA_FILE.read_text(encoding="utf-8")
    SCHEMA_FILE.write_text(schema_text(text), encoding="utf-8")


if __name__ == "__main__":
    main()
