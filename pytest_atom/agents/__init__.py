"""The agents the harness drives, behind one protocol (`protocol.Agent`).

`claude_code` runs the Claude Code CLI; `sdk` runs a Claude Agent SDK app. `factory` is the
one place either is built, and `roles` is what the gateway learns about whose request it
is. This package imports nothing on its own, so the gateway can read `roles` cheaply.
"""
