"""checks: TODO docstring."""
