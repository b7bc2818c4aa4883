"""A project's own tools (seed 004): discovery and the conversational output protocol."""
