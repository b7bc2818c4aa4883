"""The one way pytest-atom puts the caller's environment into text: ``.atom/config.yaml``'s
values and a spec's ``env:`` both expand through `expand`, so the same text means the
same in either file.

The rules are the POSIX shell's for braced references, with ``$$`` as a literal ``$`` as in
Compose files and Makefiles:

- ``${NAME}`` is NAME's value (``""`` when it is set but empty); an error when it is unset;
- ``${NAME:-default}`` is NAME's value when it is set and not empty, else `default` (the
  text up to the first ``}``, taken as written);
- ``$$`` is one literal ``$``, so ``$${NAME}`` is the text ``${NAME}``;
- any other ``$`` stays as written: ``$HOME`` is not a reference, only braces are;
- a ``${`` that is none of the above is an error, found when the file is loaded
  (`malformed`), never a silent literal.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pytest_atom.errors import ExpansionError

#: ``$$``, a reference ``${NAME}`` / ``${NAME:-default}``, or a malformed ``${`` (no name).
_TOKEN = re.compile(r"\$\$|\$\{(?:(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\})?")

#: How to write each form, for the messages that refuse one.
SYNTAX = "write ${NAME} or ${NAME:-default}, and $$ for a literal $"


class UnsetVariable(ExpansionError):
    """``${NAME}`` without a default, and NAME is not set."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name} is not set")
        self.name = name


class MalformedReference(ExpansionError):
    """A ``${`` that is neither ``${NAME}`` nor ``${NAME:-default}``."""


def malformed(text: str) -> str | None:
    """The first malformed ``${...`` in `text` (from the ``${`` on); None: none."""
    for match in _TOKEN.finditer(text):
        if match[0] == "${":
            return text[match.start() :]
    return None


def expand(text: str, environ: Mapping[str, str]) -> str:
    """`text` with references from `environ`, ``$$`` as ``$``; UnsetVariable, MalformedReference."""

    def substitute(match: re.Match[str]) -> str:
        if match[0] == "$$":
            return "$"
        name, default = match["name"], match["default"]
        if name is None:
            raise MalformedReference(f"{text[match.start() :]!r}: {SYNTAX}")
        value = environ.get(name)
        if default is not None:
            return value if value else default
        if value is None:
            raise UnsetVariable(name)
        return value

    return _TOKEN.sub(substitute, text)
