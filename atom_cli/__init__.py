"""The `atom` command: one module per command (`<name>_cmd`, loaded by `main` when it runs),
what commands share in `common`, the live view of a run in `progress`. A command renders
what the library (`pytest_atom`) returns.

Where to add: a command is a new `<name>_cmd` module, its line in `main.LAZY_COMMANDS`, and
its line in the independence contract (pyproject.toml); what two commands share goes in
`common` or the library.
"""
