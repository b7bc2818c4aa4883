"""The agents the harness drives, behind one protocol (`protocol.Agent`).

`claude_code` runs the Claude Code CLI (its pinned release, runner, configuration, sandbox
and the `srt` sandbox runtime for what runs outside it); `sdk` runs a Claude Agent SDK app in
a child process (`sdk_host`); `claude_code.session` is what both run a session with (an SDK
app runs the pinned CLI too). A run's agents are
built in one place, `pytest_atom.run.factory`.

Where to add: an agent kind is one module implementing `protocol.Agent`, built by
`pytest_atom.run.factory`.
"""
