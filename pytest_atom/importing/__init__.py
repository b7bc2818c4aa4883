"""`atom import`: a finished Claude Code session (its transcript or stream-json log) as a spec.

`reader` reads either record into one `Session` (`session` reads stream-json, `transcript` the
CLI's own transcript format), and `writer` writes the spec, its script and the session's tool
results, which the ``tool_results`` check (`pytest_atom.checks.kinds.tool_results`) compares a run with.

Public: the names in `__all__`; every module here is private.
"""

from __future__ import annotations

from pytest_atom.errors import SessionError
from pytest_atom.importing.reader import read_session
from pytest_atom.importing.session import Session
from pytest_atom.importing.writer import Imported, write_spec

__all__ = ["Imported", "Session", "SessionError", "read_session", "write_spec"]
