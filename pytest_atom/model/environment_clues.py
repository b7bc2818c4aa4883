"""Whether a failure could be the environment's doing, read from what the failure printed.

A run's processes get an environment built from parts (model.environment), so a caller
variable a check or set-up relied on is not there, and a tool the caller's shell found may
not be on the run's PATH. Saying so under every failure buried the reports in a list of
twenty names that had nothing to do with most failures; so the reports say it only when the
output points at the environment:

- a command that was not found (``mytool: command not found``, ``sh: 1: mytool: not found``,
  ``env: 'mytool': No such file or directory``, an exit code of 127);
- a variable that was not set (``FOO: unbound variable``, ``KeyError: 'FOO'``,
  ``os.environ['FOO']``, ``process.env.FOO``, ``FOO is not set``).

A leaf of the model: plain text in, a typed clue out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

#: A command the shell could not find, with its name.
_NOT_FOUND = (
    re.compile(r"(?m)(?:^|: )([\w.+/-]+): (?:command )?not found\s*$"),
    re.compile(
        r"(?m)^(?:env|nohup|xargs|exec|timeout): '?([\w.+/-]+)'?: No such file or directory"
    ),
    re.compile(
        r"(?m)^(?:/usr)?(?:/bin/)?(?:ba|da|z)?sh: (?:line \d+: )?([\w.+/-]+): No such file or directory"
    ),
    re.compile(r"executable file not found in \$PATH.*?\"?([\w.+/-]+)\"?"),
    re.compile(r"spawn ([\w.+/-]+) ENOENT"),
)
#: A variable a process found unset, with its name.
_UNSET = (
    re.compile(
        r"\b([A-Za-z_]\w*): (?:unbound variable|parameter not set|parameter null or not set)"
    ),
    re.compile(r"KeyError: ['\"]([A-Za-z_]\w*)['\"]"),
    re.compile(r"environ(?:\.get)?[\[(]\s*['\"]([A-Za-z_]\w*)['\"]"),
    re.compile(r"getenv\(\s*['\"]([A-Za-z_]\w*)['\"]"),
    re.compile(r"process\.env(?:\.([A-Za-z_]\w*)|\[['\"]([A-Za-z_]\w*)['\"]\])"),
    re.compile(r"\b([A-Z][A-Z0-9_]{2,}) (?:is not set|is unset|not set|must be set|is required)"),
)
_EXIT_127 = re.compile(r"\bexit(?:ed| code|status)?:? 127\b")


@dataclass(frozen=True)
class EnvironmentClue:
    """What in a failure's output points at the run's environment."""

    #: The line that says so, quoted in the report (``mytool: command not found``).
    quote: str
    #: Caller variables the run left out that the output names: `pass_env:` brings them.
    left_out: tuple[str, ...] = ()
    #: Variables the output found unset that the caller has not either: `env:` sets them.
    unset: tuple[str, ...] = ()
    #: A command that was not found (on the run's PATH, which is built from parts).
    command: str | None = None


def environment_clue(
    text: str, left_out: Iterable[str], present: Iterable[str] = ()
) -> EnvironmentClue | None:
    """The clue in `text` (a failed check's or set-up's output) that the run's environment
    caused the failure, `left_out` being the caller variables the run did not get and
    `present` the names it did (a variable it had is no clue); None when the output points
    elsewhere."""
    dropped, given = set(left_out), set(present) - set(left_out)
    first: dict[str, str] = {}  # each variable named unset: the line that names it
    for pattern in _UNSET:
        for match in pattern.finditer(text):
            name = next(g for g in match.groups() if g)
            first.setdefault(name, _line_of(text, match.start()))
    passing = tuple(n for n in first if n in dropped)
    unset = tuple(n for n in first if n not in dropped | given and n.isupper())
    quote = first[(passing or unset)[0]] if passing or unset else ""
    command = None
    found = next((m for m in (p.search(text) for p in _NOT_FOUND) if m), None)
    if found is not None:
        command = found.group(1)
        quote = quote or _line_of(text, found.start(1))
    if command is None and _EXIT_127.search(text):
        command = ""
        quote = quote or "exit code 127 (command not found)"
    if not (passing or unset or command is not None):
        return None
    return EnvironmentClue(quote, passing, unset, command or None)


def _line_of(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    return text[start : end if end >= 0 else len(text)].strip()[:200]
