"""Case files: one reader per suffix (`READERS`), each giving the file's rows with the line
each starts on, so an error names the row a person would open the file at.

A CSV's header names the variables and each row is one case (every value a string); a
JSONL file holds one JSON object a line; a YAML or JSON file holds a list of mappings (or
``{cases: [...]}``). A new format is one function here and its suffix in `READERS`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from pytest_atom import yamldoc
from pytest_atom.datasets.cases import Case, Origin, make_case
from pytest_atom.errors import SpecError, YamlDocError

Reader = Callable[[Path, str], list[Case]]


def read_cases(path: Path) -> list[Case]:
    """The cases of the file `path` (its suffix picks the reader)."""
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise SpecError(
            f"cases file {path.name!r} has no known format: use .csv, .jsonl, .yaml or .json",
            path,
        )
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise SpecError("cases file not found: create it, or fix 'cases:'", path) from None
    except UnicodeDecodeError as exc:
        raise SpecError(
            f"cases file is not UTF-8 text ({exc.reason} at byte {exc.start}): save it as UTF-8",
            path,
        ) from None
    except OSError as exc:
        raise SpecError(f"cannot read cases file ({exc.strerror})", path) from None
    cases = reader(path, text)
    if not cases:
        raise SpecError("cases file holds no cases: add at least one row", path)
    return cases


def _csv(path: Path, text: str) -> list[Case]:
    """A header row, then one case a row; a row whose cells the header does not match is refused."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            return []
        names = [h.strip() for h in header]
        if len(set(names)) != len(names):
            twice = next(n for n in names if names.count(n) > 1)
            raise SpecError(f"the header names column {twice!r} twice: rename one", path, 1)
        cases: list[Case] = []
        start = reader.line_num + 1
        for row in reader:
            origin = Origin(path, start, f"row {start}")
            start = reader.line_num + 1
            if not row or all(not cell.strip() for cell in row):
                continue  # a blank line
            if len(row) != len(names):
                raise origin.error(
                    f"unreadable row: {len(row)} cells where the header has {len(names)} "
                    f'({", ".join(names)}); quote a value that holds a comma: "a, b"'
                )
            cases.append(
                make_case(dict(zip(names, row, strict=True)), origin, len(cases), text=True)
            )
        return cases
    except csv.Error as exc:
        raise SpecError(
            f"unreadable CSV ({exc}): quote values holding commas, quotes or line breaks",
            path,
            reader.line_num,
        ) from None


def _jsonl(path: Path, text: str) -> list[Case]:
    cases: list[Case] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        origin = Origin(path, number, f"line {number}")
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise origin.error(
                f"unreadable line: {exc.msg} (column {exc.colno}); each line must be one "
                'JSON object, such as {"id": "a", "name": "x"}'
            ) from None
        cases.append(_mapping_case(row, origin, len(cases)))
    return cases


def _document(path: Path, text: str) -> list[Case]:
    """A YAML or JSON file (JSON is read as YAML, which keeps each entry's line)."""
    try:
        root, data = yamldoc.load(text)
    except YamlDocError as exc:
        raise SpecError(
            f"unreadable cases file: {exc.message}", path, exc.line, exc.column
        ) from None
    entries = root
    if isinstance(data, dict) and set(data) == {"cases"} and isinstance(root, yaml.MappingNode):
        data, entries = data["cases"], root.value[0][1]
    if not isinstance(data, list) or not isinstance(entries, yaml.SequenceNode):
        raise SpecError(
            "a cases file holds a list of mappings (or 'cases:' with one), one per case",
            path,
            1,
        )
    cases: list[Case] = []
    for i, (row, node) in enumerate(zip(data, entries.value, strict=True)):
        line = node.start_mark.line + 1
        cases.append(_mapping_case(row, Origin(path, line, f"case {i + 1}"), i))
    return cases


def _mapping_case(row: Any, origin: Origin, index: int) -> Case:
    if not isinstance(row, dict):
        raise origin.error(f"unreadable case: a case is a mapping of variables, got {row!r}")
    return make_case(row, origin, index, text=False)


READERS: dict[str, Reader] = {
    ".csv": _csv,
    ".jsonl": _jsonl,
    ".yaml": _document,
    ".yml": _document,
    ".json": _document,
}
