"""pytest-atom: test autonomous Claude Code agents like software."""

__version__ = "0.1.0"
