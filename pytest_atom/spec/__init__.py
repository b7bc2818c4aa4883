"""spec: TODO docstring."""
