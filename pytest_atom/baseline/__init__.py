"""baseline: TODO docstring."""
