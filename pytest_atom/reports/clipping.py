"""Long texts in reports: clipped in the report, kept whole in a file the report names.

An agent may end with a 5 MB message, which a report would copy wherever it shows it. Every
string of a report's data longer than `REPORT_TEXT_LIMIT` is cut to its head and tail around
a note naming the file that holds it whole (one file per distinct text). Each such text is
scrubbed here before it is cut: a cut through a secret leaves a part the scrubber cannot know.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pytest_atom.digest import hex_of
from pytest_atom.files import write_atomic
from pytest_atom.paths import display_path
from pytest_atom.replay.scrub import Scrubber
from pytest_atom.words import clip

#: The most characters of one text a report carries: more than anyone reads on a page,
#: while a run's data stays well under a megabyte whatever the agent printed.
REPORT_TEXT_LIMIT = 20_000
#: The run folder's folder of whole texts that its HTML and results views clipped.
TEXTS_FOLDER = "texts"
_UNSAFE = re.compile(r"[^\w-]+")


def clip_long_texts(data: Any, folder: Path) -> tuple[Any, set[Path]]:
    """`data` (JSON-able) with each string over `REPORT_TEXT_LIMIT` clipped, and the files
    of `folder` that hold those strings whole (`<key>-<hash>.txt`: the key the text sat
    under first, and its content's hash, so a text repeated in several places is one file)."""
    files: dict[str, Path] = {}  # content hash -> the file that holds it
    scrubber = Scrubber()

    def walk(value: Any, key: str) -> Any:
        if isinstance(value, str):
            return value if len(value) <= REPORT_TEXT_LIMIT else _clipped(value, key)
        if isinstance(value, dict):
            return {k: walk(v, str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, key) for v in value]
        return value

    def _clipped(raw: str, key: str) -> str:
        text = scrubber.scrub(raw)
        data = text.encode("utf-8", "replace")
        digest = hex_of(data)[:12]
        file = files.get(digest)
        if file is None:
            name = _UNSAFE.sub("_", key).strip("_")[:40] or "text"
            file = files[digest] = folder / f"{name}-{digest}.txt"
            if not file.exists():
                write_atomic(file, data)
        return clip(text, REPORT_TEXT_LIMIT, f"the whole text is in {display_path(file)}")

    return walk(data, "text"), set(files.values())
