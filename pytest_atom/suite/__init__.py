"""suite: TODO docstring."""
