"""`atom import`: a finished Claude Code session (its transcript or stream-json log) as a spec.

`read_session` reads either record into one `Session` (`stream_json` reads stream-json,
`cli_transcript` the CLI's own transcript format), and `writer` writes the spec, its script
and the session's tool results, which the ``tool_results`` check compares a run with.

Public: the names in `__all__`; every module here is private.
"""

from __future__ import annotations

from pathlib import Path

from pytest_atom.errors import SessionError
from pytest_atom.importing.cli_transcript import read_transcript
from pytest_atom.importing.stream_json import Session, decode_lines, read_stream_json, sniff
from pytest_atom.importing.writer import Imported, write_spec

__all__ = ["Imported", "Session", "SessionError", "read_session", "write_spec"]


def read_session(path: str | Path) -> Session:
    """The session in `path`, a transcript or a stream-json log (told apart by their keys)."""
    path = Path(path)
    lines = decode_lines(path)
    if sniff(path, lines) == "transcript":
        return read_transcript(path, lines)
    return read_stream_json(path, lines)
