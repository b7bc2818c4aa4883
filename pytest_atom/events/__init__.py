"""events: TODO docstring."""
