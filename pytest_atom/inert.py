"""Run text made inert before it reaches a terminal, a report or a file name.

What a run shows comes from places nobody vouches for (the agent's text, its tools' output,
a cassette from a pull request, a spec file's name), and any may carry terminal control
sequences: an OSC that writes the clipboard (``ESC ] 52``), a CSI that hides text, a lone
carriage return that overwrites the line before it. `inert` shows every such character as
its ``\\xNN`` escape, so the terminal acts on none of it: the one place that decides this.
"""

from __future__ import annotations

import re

#: C0 controls but tab and newline, DEL, and C1 (U+0080..U+009F, which some terminals read
#: as ESC + a letter: U+009B is a CSI). A carriage return before a newline is a line end;
#: alone, it moves the cursor back over the line already shown.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]|\r(?!\n)")


def _escaped(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def inert(text: str) -> str:
    r"""`text` with every control character shown as its escape: ``ESC ] 0;t BEL`` reads
    ``\x1b]0;t\x07``. Tabs, newlines and CRLF line ends stay as they are; so does all other
    text, any language's letters included."""
    return _CONTROL.sub(_escaped, text)


def is_inert(text: str) -> bool:
    return _CONTROL.search(text) is None
