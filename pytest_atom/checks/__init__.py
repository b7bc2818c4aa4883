"""checks: deterministic acceptance checks, the ``accept:`` entries of a spec.

What lives here:

- ``kinds/``: the built-in check kinds, one module each, found through the
  ``pytest_atom.check_kinds`` entry-point group (`KINDS`).
- ``kind.py``: the `CheckKind` protocol those modules implement and what they share;
  ``params.py``: a kind's parameters declared once, as a dataclass.
- shared support, never a kind itself: ``evidence.py`` (reading the workspace safely),
  ``shell.py`` (running a command confined), ``trajectory.py`` (the agent's calls).
- ``registry.py``: `CheckRegistry`; ``builtin.py``: `register_checks`, `default_registry`,
  `run_checks`.
- ``schema.py``: the spec schema with the kinds' fragments; it writes ``spec_schema.json``.

The spec's values (`Spec`, `Check`) sit below the checks; the loader hosts the kinds as a
plugin host does its plugins: `pytest_atom.spec_loader` imports this package (never the other
way round) and builds each ``accept:`` entry through its kind (`CheckKind.build`), validated
against the schema made of the kinds' fragments. A plugin's kind is known to the loader by
name only: its value becomes its params as is. No check kind imports another.

Add a check kind (docs/where-to-add.md): its module in ``kinds/`` ending ``KIND =
<Name>()``, its line in the ``pytest_atom.check_kinds`` group of ``pyproject.toml`` (then
reinstall), ``python -m pytest_atom.checks.schema`` to write its fragment, and
``tests/checks/test_<name>.py``. Nothing else names a kind. A kind that is only a function
is registered from a ``pytest_atom_register_checks`` hook (`CheckRegistry.register`).
"""
