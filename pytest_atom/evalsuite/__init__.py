"""evalsuite: TODO docstring."""
