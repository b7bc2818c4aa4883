"""results: TODO docstring."""
