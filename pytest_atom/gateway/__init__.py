"""The model gateway: what the Claude Code CLI talks to instead of the Anthropic API."""

from pytest_atom.gateway.scripted import Script, ScriptedResponder, ScriptError, scripted
from pytest_atom.gateway.server import Exchange, Gateway, GatewayRequest, Reply, Responder

__all__ = [
    "Exchange",
    "Gateway",
    "GatewayRequest",
    "Reply",
    "Responder",
    "Script",
    "ScriptError",
    "ScriptedResponder",
    "scripted",
]
