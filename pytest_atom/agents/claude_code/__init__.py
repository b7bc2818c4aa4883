"""Claude Code as an agent: the pinned CLI, its runner, configuration and sandbox."""
