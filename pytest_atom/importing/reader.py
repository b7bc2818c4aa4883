"""`read_session`: a session file, told apart by its keys, read by the module for its record.

Apart from both readers (`session` for stream-json, `transcript` for the CLI's transcript),
which it picks between, so that neither imports the other."""

from __future__ import annotations

from pathlib import Path

from pytest_atom.importing.session import Session, decode_lines, read_stream_json, sniff
from pytest_atom.importing.transcript import read_transcript


def read_session(path: str | Path) -> Session:
    """The session in `path`, a transcript or a stream-json log (told apart by their keys)."""
    path = Path(path)
    lines = decode_lines(path)
    if sniff(path, lines) == "transcript":
        return read_transcript(path, lines)
    return read_stream_json(path, lines)
