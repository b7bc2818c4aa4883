"""cost: TODO docstring."""
