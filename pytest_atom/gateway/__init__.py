"""The model gateway: what the Claude Code CLI talks to instead of the Anthropic API.

`server` is the HTTP server and the `Responder` protocol a mode implements; `scripted` is the
mode that plays a spec's script; `messages` builds Messages API answers and streams. What a
request is and whose it is: `pytest_atom.wire`. A new gateway mode is a `Responder` (the
cassette-backed ones are in `pytest_atom.replay`).

Public: the names in `__all__`, which load on first use (a module that only needs
`messages` does not import the server); every module here is private.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_atom.lazy import exports

_EXPORTS = {
    "Gateway": "server",
    "Reply": "server",
    "Responder": "server",
    "Script": "scripted",
    "ScriptedResponder": "scripted",
    "draw_key": "scripted",
    "scripted": "scripted",
}
__all__ = sorted(_EXPORTS)


__getattr__ = exports(__name__, _EXPORTS, globals())


if TYPE_CHECKING:  # the same names, for type checkers (pyproject: implicit_reexport)
    from pytest_atom.gateway.scripted import Script, ScriptedResponder, draw_key, scripted
    from pytest_atom.gateway.server import Gateway, Reply, Responder
