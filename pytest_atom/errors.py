"""Every error pytest-atom raises, as one tree: catch a concept by its class, all of them by
`AtomError`. A public module: each class in `__all__` imports from here
(``from pytest_atom.errors import SpecError``); the top level re-exports `AtomError` alone.

    AtomError                              anything pytest-atom raises on purpose
    ├── FileError                          a hand-written file: what, file:line:col, the fix
    │   ├── SpecError                      a spec (*.atom.yaml)                      spec/
    │   ├── CalibrationError               a labelled sample, calibration.json       calibration/
    │   └── ConfigError (+ SettingsError)  .atom/config.yaml                         settings/
    ├── SettingsError (ValueError)         a setting's value, wherever it was set    settings/
    ├── EnvError (ValueError)              a spec's `env:` names an unset variable   spec/
    ├── ExpansionError (ValueError)        a ``${...}`` that cannot be expanded      settings/
    ├── YamlDocError                       invalid YAML, before it is a file kind's  yamldoc
    ├── SessionError (ValueError)          a file `atom import` cannot import        importing/
    ├── BisectError                        releases `atom bisect` cannot list or use history/
    ├── CheckError                         a check that cannot be evaluated          checks/
    ├── SpendingLimitReached               the session's spending limit is reached   cost/
    ├── BaselineError                      a baseline or results file                baseline/
    ├── HistoryError                       a history store that cannot be used       history/
    ├── PromptNotFoundError (FileNotFoundError)                                      prompts
    │                                      a prompt in none of the searched folders
    ├── SpecialFileError (OSError)         a device, FIFO or socket where files are copied
    ├── LinkOutsideError (OSError)         a link out of the project being copied
    └── HarnessError                       the harness could not run a spec at all:
        │                                  never the agent's failure                 run/
        ├── CassetteError                  a cassette that cannot be read            replay/
        ├── RecordingError                 a spec that cannot run in the record mode replay/
        │   └── UpstreamUnreachable        the recording's upstream cannot be reached replay/
        ├── ScriptError                    a gateway script that cannot be played    gateway/
        ├── WorkspaceError (OSError)       the workspace could not be copied         diffs
        ├── PlannerError                   the planner gave no answer                run/
        ├── ReflectorError                 the reflector gave no usable verdict      judge/
        ├── StructuredSessionError         a structured session gave no answer       agents/
        └── AgentUnavailableError (FileNotFoundError)                            agents/
            │                          the agent cannot start on this machine
            ├── ClaudeNotFoundError        no usable `claude` binary
            └── SandboxUnavailableError    Claude Code's sandbox cannot run here

Signals that never leave their one raiser (`gateway.server.AbortReply`, ...) derive from
`AtomError` too, but live beside it.

Where to add: a new concept's error goes here, under `AtomError` (or `HarnessError`), with
its place in the drawing above; a class keeps the standard base callers catch it by. str()
of each is the whole user-facing message.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pytest_atom.paths import display_path


class AtomError(Exception):
    """The root: ``except AtomError`` catches every error pytest-atom raises on purpose,
    and nothing else (a bug's TypeError, a KeyboardInterrupt)."""


# --- files a person wrote ------------------------------------------------------------------


class FileError(AtomError):
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


class SpecError(FileError):
    """A spec file that cannot be used. A file with several schema errors raises one for
    the first, whose `more` holds the others: str() names each on its own line."""

    more: tuple[SpecError, ...] = ()

    def __str__(self) -> str:
        return "\n".join([super().__str__(), *(FileError.__str__(e) for e in self.more)])


class SettingsError(AtomError, ValueError):
    """A setting with a value that cannot be used; str() names where it came from."""


class ConfigError(FileError, SettingsError):
    """A config file that cannot be used; a `SettingsError` too, so a front end catches
    "the settings cannot be used" as one class, wherever they were set."""

    def __init__(
        self,
        message: str,
        path: Path,
        key: str | None = None,
        line: int | None = None,
        suggestion: str | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(message, path, line=line, column=column, suggestion=suggestion)
        self.key = key


class EnvError(AtomError, ValueError):
    """An `env:` value names a variable the caller's environment does not have."""


class ExpansionError(AtomError, ValueError):
    """Text whose ``${...}`` cannot be expanded; the caller names the file and key."""


class YamlDocError(AtomError):
    """A YAML file that cannot be used; `message` says why, `line`/`column` (1-based) where."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


class SessionError(AtomError, ValueError):
    """A file `atom import` cannot read or will not import."""


# --- a run's own refusals --------------------------------------------------------------------


class BisectError(AtomError):
    """`atom bisect` cannot go on; the message says the fix."""


class CheckError(AtomError):
    """Raised inside a check that cannot be evaluated; becomes a failed result."""


class SpendingLimitReached(AtomError):
    """A spec was not started: the session's spending limit is reached."""


class BaselineError(AtomError):
    """A baseline or results file that cannot be used; the message says what to do."""


class CalibrationError(FileError):
    """A labelled sample, a stored calibration or a run a sample cannot be taken from."""


class HistoryError(AtomError):
    """A history store that cannot be used, or a run it does not hold."""


class PromptNotFoundError(AtomError, FileNotFoundError):
    """A prompt file is in none of the searched folders."""

    def __init__(self, name: str, searched: Sequence[Path]) -> None:
        folders = "\n".join(f"  - {folder}" for folder in searched) or "  (none)"
        super().__init__(f"Prompt {name} not found; searched:\n{folders}")
        self.prompt_name = name
        self.searched = list(searched)


class SpecialFileError(AtomError, OSError):
    """A device, FIFO or socket where the harness copies files: never opened (/dev/zero
    would be read forever)."""


class LinkOutsideError(AtomError, OSError):
    """A link out of the project being copied into a run, where the agent could read it."""


# --- the harness could not run the spec --------------------------------------------------------


class HarnessError(AtomError):
    """The harness could not run the spec at all: front ends catch ``(HarnessError,
    OSError)`` and report the harness's failure, never the agent's."""


class CassetteError(HarnessError):
    """A cassette that cannot be read."""


class RecordingError(HarnessError):
    """A spec cannot run in the requested record mode."""


class UpstreamUnreachable(RecordingError):
    """The recording's upstream cannot be reached: the front end stops the session (`headline`)."""

    def __init__(self, message: str, headline: str) -> None:
        super().__init__(message)
        self.headline = headline


class ScriptError(HarnessError):
    """A script file that cannot be played."""


class WorkspaceError(HarnessError, OSError):
    """The workspace could not be copied (git failed, a ref is unknown) or run (hooks the
    sandbox cannot hold)."""


class PlannerError(HarnessError):
    """The planner session gave no answer at all (not a bad plan)."""


class ReflectorError(HarnessError):
    """The reflector did not give a usable verdict."""


class StructuredSessionError(HarnessError):
    """A structured session (the reflector's, the planner's) gave no answer."""


class AgentUnavailableError(HarnessError, FileNotFoundError):
    """The agent cannot start on this machine; the message says how to make it start."""


class ClaudeNotFoundError(AgentUnavailableError):
    """No usable `claude` binary."""


class SandboxUnavailableError(AgentUnavailableError):
    """The sandbox cannot run here."""


#: Every class here is public: the drawing above names each (tests/errors holds the two equal).
__all__ = sorted(
    name
    for name, value in dict(globals()).items()
    if isinstance(value, type) and issubclass(value, AtomError)
)
