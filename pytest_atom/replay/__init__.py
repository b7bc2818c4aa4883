"""replay: TODO docstring."""
