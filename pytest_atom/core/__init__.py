"""The seed's atom_core API: the runtime loop, the Claude Code runner and what they need."""
