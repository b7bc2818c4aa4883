"""Claude Code as an agent: the pinned CLI, its runner, configuration and sandbox, and the
`session` both it and an Agent SDK app (`pytest_atom.agents.sdk`) run a session with."""
