"""The one shape of a user-facing error about a file: what is wrong, where, and the fix."""

from __future__ import annotations

from pathlib import Path

from pytest_atom.paths import display_path


class FileError(Exception):
    """A file that cannot be used; str() is the full message: ``what at file:line:col``
    and, where a likely fix is known, ``— did you mean '…'?``."""

    def __init__(
        self,
        message: str,
        path: Path,
        line: int | None = None,
        column: int | None = None,
        suggestion: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message, self.path, self.line, self.column = message, path, line, column
        self.suggestion = suggestion

    def __str__(self) -> str:
        where = display_path(self.path)
        if self.line is not None:
            where += f":{self.line}" + (f":{self.column}" if self.column is not None else "")
        hint = f" — did you mean {self.suggestion!r}?" if self.suggestion else ""
        return f"{self.message} at {where}{hint}"
