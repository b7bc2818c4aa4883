"""`atom import`: a finished Claude Code session (its transcript or stream-json log) as a spec.

`session` reads either record into one `Session` (`transcript` reads the CLI's own transcript
format), `writer` writes the spec, its script and the session's tool results, and `results` is
the ``tool_results`` check that names a call whose result differs from the session's.
"""

from __future__ import annotations

from pytest_atom.importing.session import Session, SessionError, read_session
from pytest_atom.importing.writer import Imported, write_spec

__all__ = ["Imported", "Session", "SessionError", "read_session", "write_spec"]
