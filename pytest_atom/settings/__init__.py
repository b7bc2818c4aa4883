"""settings: TODO docstring."""
